/* jobs.c - 4. work and 5. result (state.h): self-play items (PROBS
 * self-play over the batcher's threads, or AlphaZero MCTS self-play on one
 * thread) and search items (beam searches), through evaluators that send
 * the heartbeats and watch the stop flag between network batches; then
 * the SelfplayResult or SearchResult.
 *
 * Tuned for: items of tens of episodes or hundreds of positions that take
 * seconds. The engines, the episode store and the output buffers are
 * reused from item to item. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "abtargets.h"
#include "azplay.h"
#include "batcher.h"
#include "beam_search.h"
#include "episodes.h"
#include "msg.h"
#include "neteval.h"
#include "pveval.h"
#include "selfplay.h"
#include "tdnet.h"
#include "tdplay.h"
#include "util.h"
#include "state.h"

/* ---- 4. work: the evaluator that heartbeats ---------------------------- */

/* Runs between network batches: stop flag, heartbeat, announcements. */
static int tick(pb_worker_t *w, pb_err_t *err) {
  if (pb__worker_stop_requested(w))
    return pb_err_set(err, PB_EINTR, "stop requested");
  if (pb__worker_heartbeat_due(w, pb_now()) <= 0) {
    pb_err_t e;
    pb_err_clear(&e);
    if (pb__worker_drain_announcements(w, NULL, &e) < 0)
      pb_log_warn(w->log, "%s", e.msg);
    if (pb__worker_stop_requested(w))
      return pb_err_set(err, PB_EINTR, "stop requested");
    pb__worker_heartbeat(w);
  }
  return 0;
}

static int ev_value(void *ctx, const pb_state_t *s, int n, float *out,
                    pb_err_t *err) {
  pb_worker_t *w = ctx;
  int rc = tick(w, err);
  if (rc != 0) return rc;
  pb_evalfn_t f = pb_neteval_fn(w->ne);
  return f.value(f.ctx, s, n, out, err);
}

static int ev_qvalues(void *ctx, const pb_state_t *s, int n, float *out,
                      pb_err_t *err) {
  pb_worker_t *w = ctx;
  int rc = tick(w, err);
  if (rc != 0) return rc;
  pb_evalfn_t f = pb_neteval_fn(w->ne);
  return f.qvalues(f.ctx, s, n, out, err);
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
  pb_log_warn(w->log, "item %" PRIu64 " failed: %s: %s; dropping it", item_id,
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

/* The batcher of a worker with several threads, made for the run's game. */
static int ensure_batcher(pb_worker_t *w, pb_err_t *err) {
  if (w->threads <= 1 || w->batcher != NULL) return 0;
  w->batcher = pb_batcher_new(w->g, w->threads, err);
  return w->batcher ? 0 : PB_ENOMEM;
}

/* Member m's share [lo, hi) of n things split over `members`. */
static void share_of(size_t n, int members, int m, size_t *lo, size_t *hi) {
  *lo = n * (size_t)m / (size_t)members;
  *hi = n * (size_t)(m + 1) / (size_t)members;
}

typedef struct {
  pb_worker_t *w;
  const pb_msg_work_item_t *it;
  int members;
} job_t;

/* One thread's episodes: numbered from its first one, so that the item
 * plays the same episodes whatever the thread count. */
static int selfplay_member(void *ctx, int m, const pb_evalfn_t *ev,
                           pb_err_t *err) {
  job_t *j = ctx;
  size_t lo, hi;
  share_of(j->it->episodes, j->members, m, &lo, &hi);
  pb_episodes_t *out = m == 0 ? &j->w->eps : &j->w->sp_eps[m];
  pb_episodes_clear(out);
  if (hi == lo) return 0;
  return pb_selfplay_run(j->w->sp[m], (int)(hi - lo), j->it->seed, lo, ev,
                         j->it->q_version, out, err);
}

/* The policy+value network for MCTS, with the heartbeat between calls. */
static int ev_pv(void *ctx, const pb_state_t *s, int n, float *policy,
                 float *value, pb_err_t *err) {
  pb_worker_t *w = ctx;
  int rc = tick(w, err);
  if (rc != 0) return rc;
  pb_mcts_evalfn_t f = pb_pveval_fn(w->pve);
  return f.eval(f.ctx, s, n, policy, value, err);
}

static int send_episodes(pb_worker_t *w, const pb_msg_work_item_t *it,
                         double dt, pb_err_t *err);

/* AlphaZero self-play: the item's episodes with MCTS on one thread (the
 * games of the item search together, one network call per round). */
static int do_azplay(pb_worker_t *w, const pb_msg_work_item_t *it,
                     pb_err_t *err) {
  const pb_game_t *g = w->g;
  if (w->az == NULL) {
    /* The learner's settings, as the learner builds them; the games at
     * once are this process's own. */
    pb_azplay_opts_t o;
    pb_azplay_config_opts(&w->run, &o);
    o.parallel = w->cfg.train.selfplay_parallel;
    pb_err_t e;
    pb_err_clear(&e);
    w->az = pb_azplay_new(g, &o, &e);
    if (w->az != NULL && w->pve == NULL)
      w->pve = pb_pveval_new(g, w->cfg.train.selfplay_parallel, &e);
    if (w->az == NULL || w->pve == NULL)
      return pb_err_set(err, e.code,
                        "the learner's alphazero settings are refused: %s",
                        e.msg);
    if (w->threads > 1)
      pb_log_info(w->log, "alphazero self-play runs on one thread (%d asked)",
                  w->threads);
  }
  int rc = pb__worker_ensure_weights(w, 0, 0, it->q_version, err);
  if (rc != 0) return rc;
  pb_err_t e;
  pb_err_clear(&e);
  if ((rc = pb_pveval_bind(w->pve, w->q.nn, &e)) != 0)
    return engine_failed(w, rc, it->item_id, &e, err);
  pb_episodes_clear(&w->eps);
  pb_mcts_evalfn_t fn = {ev_pv, w};
  double t0 = pb_now();
  rc = pb_azplay_run(w->az, (int)it->episodes, it->seed, 0, &fn,
                     it->q_version, &w->eps, &e);
  if (rc != 0) return engine_failed(w, rc, it->item_id, &e, err);
  return send_episodes(w, it, pb_now() - t0, err);
}

static int td_tick(void *ctx, pb_err_t *err) {
  return tick(ctx, err);
}

/* td self-play: the item's epsilon-greedy n-ply games with V of the
 * item's version as the linear evaluation, on one thread. */
static int do_tdplay(pb_worker_t *w, const pb_msg_work_item_t *it,
                     pb_err_t *err) {
  const pb_game_t *g = w->g;
  int rc = pb__worker_ensure_weights(w, 1, it->q_version, it->q_version, err);
  if (rc != 0) return rc;
  pb_err_t e;
  pb_err_clear(&e);
  if (!w->td_have || w->td_version != it->q_version) {
    w->td_have = 0;
    if ((rc = pb_linear_init(&w->td_lin, g, &e)) != 0 ||
        (rc = pb_tdnet_get(w->v.nn, &w->td_lin, &e)) != 0) {
      pb_log_warn(w->log,
                  "item %" PRIu64 ": V version %" PRIu64
                  " is no linear evaluation: %s; dropping it",
                  it->item_id, it->q_version, e.msg);
      return W_DROP;
    }
    w->td_version = it->q_version;
    w->td_have = 1;
  }
  pb_tdplay_opts_t o = {w->run.td.ply, w->run.train.max_turns, it->td_epsilon,
                        td_tick, w};
  pb_episodes_clear(&w->eps);
  double t0 = pb_now();
  rc = pb_tdplay_run(&w->td_lin, &o, (int)it->episodes, it->seed, 0,
                     it->q_version, &w->eps, NULL, &e);
  if (rc != 0) return engine_failed(w, rc, it->item_id, &e, err);
  return send_episodes(w, it, pb_now() - t0, err);
}

int pb__worker_do_selfplay(pb_worker_t *w, const pb_msg_work_item_t *it,
                           pb_err_t *err) {
  const pb_game_t *g = w->g;
  if (pb_config_alphazero(&w->run)) return do_azplay(w, it, err);
  if (pb_config_td(&w->run)) return do_tdplay(w, it, err);
  int members = w->threads < (int)it->episodes ? w->threads : (int)it->episodes;
  if (members < 1) members = 1;
  for (int t = 0; t < members; t++) {
    if (w->sp[t] != NULL) continue;
    /* The learner's settings, as the learner builds them; the games at
     * once are this process's own. */
    pb_selfplay_opts_t o;
    pb_selfplay_config_opts(&w->run, &o);
    o.parallel = w->cfg.train.selfplay_parallel;
    pb_err_t e;
    pb_err_clear(&e);
    w->sp[t] = pb_selfplay_new(g, &o, &e);
    if (w->sp[t] == NULL)
      return pb_err_set(err, e.code,
                        "the learner's self-play settings are refused: %s",
                        e.msg);
  }
  int rc = pb__worker_ensure_weights(w, 0, 0, it->q_version, err);
  if (rc != 0) return rc;

  pb_episodes_clear(&w->eps);
  pb_evalfn_t fn = {ev_value, ev_qvalues, w};
  pb_err_t e;
  pb_err_clear(&e);
  double t0 = pb_now();
  job_t job = {w, it, members};
  if (members == 1)
    rc = selfplay_member(&job, 0, &fn, &e);
  else if ((rc = ensure_batcher(w, err)) != 0)
    return rc;
  else
    rc = pb_batcher_run(w->batcher, members, &fn, selfplay_member, &job, &e);
  /* The threads' episodes after the first one's, in thread order. */
  for (int t = 1; rc == 0 && t < members; t++)
    rc = pb_episodes_append(&w->eps, &w->sp_eps[t], &e);
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

/* One thread's share of the item's positions. */
static int search_member(void *ctx, int m, const pb_evalfn_t *ev,
                         pb_err_t *err) {
  job_t *j = ctx;
  size_t lo, hi;
  share_of(j->it->n_states, j->members, m, &lo, &hi);
  if (hi == lo) return 0;
  return pb_beam_run(j->w->beam[m], j->it->states + lo, (int)(hi - lo), ev,
                     j->w->qout + lo * (size_t)j->w->g->num_actions, err);
}

/* The item's searcher: the beam of every member, or the abnet targets'
 * searcher (common/search/abtargets.h). 0, W_DROP (the item's options are
 * refused) or PB_ENOMEM. */
static int ensure_searcher(pb_worker_t *w, const pb_msg_work_item_t *it,
                           int members, pb_err_t *err) {
  const pb_game_t *g = w->g;
  pb_err_t e;
  pb_err_clear(&e);
  int E = (int)it->expansions, M = (int)it->max_depth;
  if (it->search_algorithm == PB_SEARCH_ABNET) {
    if (w->abt != NULL && (pb_abtargets_max_depth(w->abt) != M ||
                           pb_abtargets_nodes(w->abt) != it->nodes))
      pb_abtargets_destroy(&w->abt);
    if (w->abt == NULL &&
        (w->abt = pb_abtargets_new(g, M, it->nodes, w->cfg.search.parallel,
                                   &e)) == NULL)
      goto refused;
    return 0;
  }
  if (w->beam_E != E || w->beam_M != M)
    for (int t = 0; t < w->threads; t++) pb_beam_destroy(&w->beam[t]);
  for (int t = 0; t < members; t++) {
    if (w->beam[t] != NULL) continue;
    w->beam[t] = pb_beam_new(g, E, M, w->cfg.search.parallel, &e);
    if (w->beam[t] == NULL) goto refused;
    w->beam_E = E;
    w->beam_M = M;
  }
  return 0;
refused:
  if (e.code == PB_ENOMEM) return pb_err_set(err, e.code, "%s", e.msg);
  pb_log_warn(w->log, "search item %" PRIu64 " refused: %s; dropping it",
              it->item_id, e.msg);
  return W_DROP;
}

int pb__worker_do_search(pb_worker_t *w, const pb_msg_work_item_t *it,
                         pb_err_t *err) {
  const pb_game_t *g = w->g;
  pb_err_t e;
  pb_err_clear(&e);
  int E = (int)it->expansions, M = (int)it->max_depth;
  int abnet = it->search_algorithm == PB_SEARCH_ABNET;
  int members = w->threads < (int)it->n_states ? w->threads : (int)it->n_states;
  if (members < 1) members = 1;
  int rc = ensure_searcher(w, it, members, err);
  if (rc != 0) return rc;
  rc = pb__worker_ensure_weights(w, 1, it->v_version, it->q_version, err);
  if (rc != 0) return rc;

  size_t need = (size_t)it->n_states * g->num_actions;
  if (need > w->qout_cap) {
    float *p = realloc(w->qout, need * sizeof *p);
    if (p == NULL) return pb_err_set(err, PB_ENOMEM, "worker: out of memory");
    w->qout = p;
    w->qout_cap = need;
  }
  pb_evalfn_t fn = {ev_value, ev_qvalues, w};
  double t0 = pb_now();
  job_t job = {w, it, members};
  if (abnet)
    rc = pb_abtargets_run(w->abt, it->states, (int)it->n_states, &fn, w->qout,
                          &e);
  else if (members == 1)
    rc = search_member(&job, 0, &fn, &e);
  else if ((rc = ensure_batcher(w, err)) != 0)
    return rc;
  else
    rc = pb_batcher_run(w->batcher, members, &fn, search_member, &job, &e);
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
  char how[64];
  if (abnet)
    snprintf(how, sizeof how, "abnet nodes=%" PRIu64 " M=%d", it->nodes, M);
  else
    snprintf(how, sizeof how, "E=%d M=%d", E, M);
  pb_log_info(
      w->log,
      "search item %" PRIu64
      ": %u states, %s, in "
      "%.2f s (%.0f states/s), V version %" PRIu64 ", Q version %" PRIu64,
      it->item_id, it->n_states, how, dt, it->n_states / (dt > 0 ? dt : 1e-9),
      it->v_version, it->q_version);
  return 0;
}
