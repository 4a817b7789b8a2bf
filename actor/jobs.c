/* jobs.c - 4. work and 5. result (state.h): self-play items and search
 * items, played and searched by the run's algorithm (common/algo/algo.h:
 * its player and its searcher), with the heartbeat and the stop flag
 * between network batches; then the SelfplayResult or SearchResult.
 *
 * Tuned for: items of tens of episodes or hundreds of positions that take
 * seconds. The engines, the episode store and the output buffers are
 * reused from item to item. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "batcher.h"
#include "episodes.h"
#include "msg.h"
#include "neteval.h"
#include "util.h"
#include "state.h"

/* ---- 4. work: the heartbeat between network batches ------------------- */

/* Runs between network batches: stop flag, heartbeat, announcements. */
static int tick(void *ctx, pb_err_t *err) {
  pb_worker_t *w = ctx;
  if (pb__worker_stop_requested(w))
    return pb_err_set(err, PB_EINTR, "stop requested");
  if (pb__worker_heartbeat_due(w, pb_now()) <= 0) {
    pb_err_t e;
    pb_err_clear(&e);
    if (pb__worker_drain_announcements(w, NULL, &e) < 0)
      pb__worker_warn(w, "%s", e.msg);
    if (pb__worker_stop_requested(w))
      return pb_err_set(err, PB_EINTR, "stop requested");
    pb__worker_heartbeat(w);
  }
  return 0;
}

/* What a failed engine run means: a stop, a bad item (drop it), or a
 * failure of this process (the network backend, memory). */
static int engine_failed(pb_worker_t *w, int rc, uint64_t item_id,
                         const pb_err_t *e, pb_err_t *err) {
  if (rc == PB_EINTR) {
    pb_log_info(w->log, "abandoning item %" PRIu64 " to stop", item_id);
    w->st.dropped++;
    return W_STOP;
  }
  if (rc == PB_ENN || rc == PB_ENOMEM)
    return pb_err_set(err, rc, "item %" PRIu64 ": %s", item_id, e->msg);
  pb__worker_warn(w, "item %" PRIu64 " failed: %s: %s; dropping it", item_id,
              pb_err_name(rc), e->msg);
  return W_DROP;
}

void pb__worker_begin_item(pb_worker_t *w, const pb_msg_work_item_t *it) {
  w->busy = 1;
  w->item_id = it->item_id;
  /* Renew the lease well within its length even if our heartbeat setting
   * is longer than what the learner granted. */
  double hb = w->cfg.net.heartbeat_ms / 1000.0;
  double lease_half = it->lease_ms / 2000.0;
  w->item_hb_s = hb < lease_half ? hb : lease_half;
  w->last_item_hb = pb_now();
}

/* What the algorithm plays or searches with: the run's config (run),
 * this process's games at once and threads, the networks held, the evaluator, the heartbeat. */
static int make_env(pb_worker_t *w, const pb_config_t *run, int parallel,
                    pb_algo_env_t *env, pb_err_t *err) {
  if (w->threads > 1 && w->batcher == NULL) {
    if ((w->batcher = pb_batcher_new(w->g, w->threads, err)) == NULL)
      return err && err->code ? err->code : PB_ENOMEM;
    /* On a GPU the threads overlap their tree work with the network's
     * batches; on the CPU, where the network is most of the time and runs
     * on one thread anyway, they gather the largest batches in lock step
     * (common/search/batcher.h). */
    pb_batcher_set_mode(w->batcher, strcmp(w->device, "cuda") == 0
                                        ? PB_BATCHER_OVERLAP
                                        : PB_BATCHER_GATHER);
  }
  *env = (pb_algo_env_t){.g = w->g,
                         .run = run,
                         .parallel = parallel,
                         .threads = w->threads,
                         .batcher = w->batcher,
                         .v = w->v.have ? w->v.nn : NULL,
                         .q = w->q.have ? w->q.nn : NULL,
                         .ne = w->ne,
                         .tick = tick,
                         .tick_ctx = w};
  return 0;
}

static int send_episodes(pb_worker_t *w, const pb_msg_work_item_t *it,
                         double dt, pb_err_t *err);

int pb__worker_do_selfplay(pb_worker_t *w, const pb_msg_work_item_t *it,
                           pb_err_t *err) {
  const pb_algo_t *a = w->algo;
  pb_algo_env_t env;
  int rc = make_env(w, &w->run, w->cfg.train.selfplay_parallel, &env, err);
  if (rc != 0) return rc;
  pb_err_t e;
  pb_err_clear(&e);
  if (w->player == NULL && (w->player = a->player_new(&env, &e)) == NULL)
    return pb_err_set(err, e.code ? e.code : PB_ENOMEM,
                      "the learner's %s self-play settings are refused: %s",
                      a->data->name, e.msg);
  /* The networks the algorithm plays with, of the item's version. */
  const int need_v = (a->play_nets & PB_ALGO_NET_V) != 0;
  rc = pb__worker_ensure_weights(w, need_v, it->q_version, it->q_version, err);
  if (rc != 0) return rc;
  if ((rc = make_env(w, &w->run, w->cfg.train.selfplay_parallel, &env, err)) !=
      0)
    return rc;
  pb_algo_item_t item = {(int)it->episodes, it->seed, it->q_version,
                         it->td_epsilon};
  pb_episodes_clear(&w->eps);
  double t0 = pb_now();
  rc = a->play(w->player, &env, &item, &w->eps, &e);
  if (rc != 0) return engine_failed(w, rc, it->item_id, &e, err);
  return send_episodes(w, it, pb_now() - t0, err);
}

/* Sends w->eps, the item's episodes, played in dt seconds. */
static int send_episodes(pb_worker_t *w, const pb_msg_work_item_t *it,
                         double dt, pb_err_t *err) {
  int rc;
  size_t n = w->eps.n_eps;
  if (n > w->mep_cap) {
    pb_msg_episode_t *p = realloc(w->mep, n * sizeof *p);
    if (p == NULL) return pb_err_set(err, PB_ENOMEM, "worker: out of memory");
    w->mep = p;
    w->mep_cap = n;
  }
  for (size_t k = 0; k < n; k++) {
    w->mep[k].states = w->eps.states + w->eps.start[k];
    w->mep[k].n_states = w->eps.len[k];
    w->mep[k].final_reward = w->eps.reward[k];
    w->mep[k].q_version = w->eps.version[k];
    w->mep[k].policy = pb_episodes_policy(&w->eps, k, 0);
  }
  pb_msg_t m;
  pb__worker_msg_init(w, &m, PB_MSG_SELFPLAY_RESULT);
  m.selfplay_result.item_id = it->item_id;
  m.selfplay_result.episodes = w->mep;
  m.selfplay_result.n_episodes = (uint32_t)n;
  if ((rc = pb__worker_encode_send(w, &m, &w->out, err)) != 0)
    return rc == PB_EIO ? rc : W_DROP;
  size_t pos = w->eps.n_states;
  w->st.items++;
  w->st.episodes += n;
  w->st.positions += pos;
  pb_log_info(w->log,
              "selfplay item %" PRIu64
              ": %zu episodes, %zu positions"
              " in %.2f s (%.0f positions/s), Q version %" PRIu64,
              it->item_id, n, pos, dt, pos / (dt > 0 ? dt : 1e-9),
              it->q_version);
  return 0;
}

int pb__worker_do_search(pb_worker_t *w, const pb_msg_work_item_t *it,
                         pb_err_t *err) {
  const pb_game_t *g = w->g;
  const pb_algo_t *a = w->algo;
  pb_err_t e;
  pb_err_clear(&e);
  if (!a->data->searches) {
    pb__worker_warn(w,
                "search item %" PRIu64
                " in a run of algorithm %s, which "
                "does not search; dropping it",
                it->item_id, a->data->name);
    return W_DROP;
  }
  /* How to search is the run's config (HelloReply); the item holds the
   * positions and the versions. */
  const pb_config_t *run = &w->run;
  int rc = pb__worker_ensure_weights(w, 1, it->v_version, it->q_version, err);
  if (rc != 0) return rc;
  pb_algo_env_t env;
  if ((rc = make_env(w, run, w->cfg.search.parallel, &env, err)) != 0)
    return rc;
  if (w->searcher == NULL && (w->searcher = a->searcher_new(&env, &e)) == NULL)
    return pb_err_set(err, e.code ? e.code : PB_ENOMEM, "searcher: %s", e.msg);
  size_t need = (size_t)it->n_states * g->num_actions;
  if (need > w->qout_cap) {
    float *p = realloc(w->qout, need * sizeof *p);
    if (p == NULL) return pb_err_set(err, PB_ENOMEM, "worker: out of memory");
    w->qout = p;
    w->qout_cap = need;
  }
  double t0 = pb_now();
  rc = a->search(w->searcher, &env, it->states, (int)it->n_states, w->qout, &e);
  if (rc != 0) return engine_failed(w, rc, it->item_id, &e, err);
  double dt = pb_now() - t0;
  pb_msg_t m;
  pb__worker_msg_init(w, &m, PB_MSG_SEARCH_RESULT);
  m.search_result.item_id = it->item_id;
  m.search_result.n_states = it->n_states;
  m.search_result.n_actions = (uint32_t)g->num_actions;
  m.search_result.qvalues = w->qout;
  if ((rc = pb__worker_encode_send(w, &m, &w->out, err)) != 0)
    return rc == PB_EIO ? rc : W_DROP;
  w->st.items++;
  w->st.states += it->n_states;
  char how[96];
  pb_config_search_desc(run, how, sizeof how);
  pb_log_info(
      w->log,
      "search item %" PRIu64
      ": %u states, %s, in "
      "%.2f s (%.0f states/s), V version %" PRIu64 ", Q version %" PRIu64,
      it->item_id, it->n_states, how, dt, it->n_states / (dt > 0 ? dt : 1e-9),
      it->v_version, it->q_version);
  return 0;
}
