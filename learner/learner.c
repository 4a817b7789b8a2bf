/* learner.c - the learner's loop. See learner.h; the protocol is in
 * docs/protocol.md.
 *
 * State machine of one iteration (phase):
 *   SELFPLAY  items handed to actors; when all are in -> job TRAIN_V
 *   TRAIN_V   thread pool: train V, find distinct positions -> SEARCH
 *   SEARCH    items handed to searchers; a share of each result's
 *             positions is searched again by the learner (the spot check,
 *             a second pool job running beside the search) and a searcher
 *             whose results disagree is quarantined, its items re-queued;
 *             when all are in and checked -> job TRAIN_Q
 *   TRAIN_Q   thread pool: train Q, checkpoint -> next SELFPLAY or DONE
 * Self-play items live in their own queue (spq), search items in wq. With
 * train.pipeline (and train.max_staleness >= 1), the next iteration's
 * self-play items are handed out as soon as this iteration's episodes are
 * in: actors play with the Q version they have while V trains, the
 * searchers search and Q trains; an episode is taken when its Q version
 * lags the version being trained by at most train.max_staleness.
 * While a job runs, the learner object's networks belong to the job; the
 * loop thread touches only the weights buffers it serves, which the job
 * hands over in its completion callback. */
#include "learner.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#include <zmq.h>

#include "ckpt.h"
#include "curve.h"
#include "episodes.h"
#include "elotable.h"
#include "http.h"
#include "json.h"
#include "learn.h"
#include "msg.h"
#include "rng.h"
#include "rundir.h"
#include "spotcheck.h"
#include "util.h"
#include "web.h"
#include "workq.h"

enum { PH_SELFPLAY = 1, PH_TRAIN_V, PH_SEARCH, PH_TRAIN_Q, PH_DONE };

static const char *phase_name(int p) {
  switch (p) {
  case PH_SELFPLAY: return "selfplay";
  case PH_TRAIN_V: return "train_v";
  case PH_SEARCH: return "search";
  case PH_TRAIN_Q: return "train_q";
  case PH_DONE: return "done";
  }
  return "?";
}

static int announce_phase(int p) {
  switch (p) {
  case PH_SELFPLAY: return PB_PHASE_SELFPLAY;
  case PH_TRAIN_V: return PB_PHASE_TRAIN_V;
  case PH_SEARCH: return PB_PHASE_SEARCH;
  case PH_TRAIN_Q: return PB_PHASE_TRAIN_Q;
  }
  return PB_PHASE_STOPPING;
}

#define RID_MAX 256

typedef struct {
  int used;
  uint8_t rid[RID_MAX];
  size_t rid_len;
  char sender[PB_MSG_ID_MAX + 1];
  char host[PB_MSG_HOST_MAX + 1];
  char key[PB_CURVE_Z85 + 1]; /* its CURVE public key, "" without CURVE */
  char addr[64];              /* its IP address as ZeroMQ saw it */
  int role;
  double first_seen, last_seen;
  uint64_t items, positions;
  uint32_t serial;       /* tells a reused slot from the peer that left */
  int quarantined;       /* its results disagreed with the spot check */
  uint64_t spot_version; /* the iteration spot_tally counts for */
  pb_spot_tally_t spot_tally;
} peer_t;

/* Who delivered a search item (by peer slot and serial). */
typedef struct {
  uint32_t slot, serial;
} owner_t;

/* Positions waiting for the spot check or being checked: the state, the
 * targets its searcher claimed, and who claimed them. */
typedef struct {
  pb_state_t *states;
  float *claimed; /* n * num_actions */
  owner_t *who;
  uint32_t *item;
  size_t n, cap;
} spotq_t;

/* Senders and keys refused for the rest of the run. */
#define BANNED_MAX 64

/* A weights buffer as served to workers. */
typedef struct {
  uint8_t *buf;
  size_t len;
  uint64_t version;
} wbuf_t;

struct pb_learner {
  pb_config_t cfg;
  const pb_game_t *g;
  pb_log_t *log;
  int lock_fd; /* RUN_DIR/learner.lock, held while the learner lives */
  pb_zap_t *zap; /* CURVE's ZAP handler, or NULL */
  pb_metrics_t *metrics;
  char run_id[PB_MSG_ID_MAX + 1];
  char sender[PB_MSG_ID_MAX + 1];

  uv_loop_t loop;
  uv_poll_t zpoll;
  uv_idle_t zidle;
  uv_timer_t tick;
  uv_signal_t sigint, sigterm;
  pb_http_t *http;
  pb_web_t *web; /* the page and its API (/, /api/...) */
  int handles_open;
  int loop_inited;

  void *zctx, *router, *pub;
  pb_msg_buf_t obuf;

  pb_learn_t *learn;
  pb_workq_t *wq;  /* search items */
  pb_workq_t *spq; /* self-play items of iteration sp_iter */
  uint64_t sp_iter; /* the iteration spq's episodes are for; 0 = none */
  uint64_t staleness_max; /* of the episodes of the current iteration */
  int phase;
  int stopping; /* a signal asked us to stop */
  int fatal;
  pb_err_t fatal_err;
  double done_at;

  /* self-play of the current iteration */
  pb_episodes_t *item_eps; /* one store per self-play item */
  size_t n_sp_items, max_items;
  pb_episodes_t eps;
  /* search of the current iteration */
  const pb_state_t *uniq;
  size_t n_uniq, n_bs_items;
  float *qt;
  size_t qt_cap;

  wbuf_t vw, qw;          /* served now */
  wbuf_t vw_new, qw_new;  /* made by a job, swapped in on completion */

  /* the running job */
  uv_work_t job;
  int job_kind; /* PH_TRAIN_V or PH_TRAIN_Q, 0 = none */
  int job_rc;
  pb_err_t job_err;
  pb_learn_stats_t vst, qst;
  double job_ckpt_s;

  peer_t *peers;
  int max_peers;
  uint32_t peer_serial;

  /* the spot check of search results (train/spotcheck.h) */
  pb_spot_t *spot;
  pb_rng_t spot_rng;
  uint32_t *spot_idx; /* the positions drawn from one item */
  spotq_t spot_wait, spot_run; /* arrived; in the running check job */
  float *spot_mine;            /* the learner's targets for spot_run */
  size_t spot_mine_cap;
  uv_work_t spot_job;
  int spot_running, spot_rc;
  pb_err_t spot_err;
  owner_t *item_owner; /* per search item of this iteration */
  size_t item_owner_cap;
  uint64_t spot_checked, spot_disagree, quarantined;
  char banned[BANNED_MAX][PB_MSG_ID_MAX + 1]; /* sender ids and keys */
  int n_banned;

  /* timings of the current iteration */
  double t_iter, t_phase, t_selfplay, t_search, t_train_v, t_train_q;
  double t_start, last_progress;
  size_t dropped_episodes;

  /* counters */
  uint64_t msgs_in, bytes_in, msgs_bad, msgs_mismatch, sends_failed;
  uint64_t positions_in, results_dup, results_bad, leases_expired;
  double last_v_loss, last_q_loss, last_iter_s;
  int log_budget; /* warnings left in this second, against floods */
  double log_budget_t;
};

/* ---- small helpers -------------------------------------------------- */

static double now(pb_learner_t *l) {
  (void)l;
  return pb_now();
}

/* Warnings caused by peers are rate limited: a flood must not fill the
 * disk. */
static int may_warn(pb_learner_t *l) {
  double t = now(l);
  if (t - l->log_budget_t > 1.0) {
    l->log_budget_t = t;
    l->log_budget = 20;
  }
  return l->log_budget-- > 0;
}

static void rid_text(const uint8_t *rid, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 3 < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%02x", rid[i]);
  out[k < cap ? k : cap - 1] = '\0';
}

static peer_t *peer_find(pb_learner_t *l, const uint8_t *rid, size_t n,
                         int create) {
  int free_slot = -1, oldest = -1;
  for (int i = 0; i < l->max_peers; i++) {
    peer_t *p = &l->peers[i];
    if (!p->used) {
      if (free_slot < 0) free_slot = i;
      continue;
    }
    if (p->rid_len == n && !memcmp(p->rid, rid, n)) return p;
    if (oldest < 0 || p->last_seen < l->peers[oldest].last_seen) oldest = i;
  }
  if (!create) return NULL;
  int k = free_slot >= 0 ? free_slot : oldest; /* full: forget the stalest */
  peer_t *p = &l->peers[k];
  memset(p, 0, sizeof *p);
  p->used = 1;
  p->serial = ++l->peer_serial;
  memcpy(p->rid, rid, n);
  p->rid_len = n;
  p->first_seen = p->last_seen = now(l);
  return p;
}

static int workers_alive(pb_learner_t *l, int role) {
  double t = now(l), horizon = 3.0 * l->cfg.net.heartbeat_ms / 1000.0;
  if (horizon < 5.0) horizon = 5.0;
  int n = 0;
  for (int i = 0; i < l->max_peers; i++) {
    peer_t *p = &l->peers[i];
    if (p->used && t - p->last_seen < horizon && (role == 0 || p->role == role))
      n++;
  }
  return n;
}

static void send_msg(pb_learner_t *l, const peer_t *p, pb_msg_t *m) {
  pb_err_t err;
  if (pb_msg_encode_buf(m, &l->obuf, &err) != 0) {
    pb_log_error(l->log, "cannot encode %s: %s", pb_msg_type_name(m->type),
                 err.msg);
    return;
  }
  if (zmq_send(l->router, p->rid, p->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
      zmq_send(l->router, l->obuf.data, l->obuf.len, ZMQ_DONTWAIT) < 0) {
    l->sends_failed++;
    if (may_warn(l))
      pb_log_warn(l->log, "cannot send %s to %s: %s", pb_msg_type_name(m->type),
                  p->sender[0] ? p->sender : "peer", zmq_strerror(errno));
  }
}

static void init_msg(pb_learner_t *l, pb_msg_t *m, int type) {
  pb_msg_init(m, type, l->run_id, l->g->id, l->sender);
}

static void announce(pb_learner_t *l) {
  pb_msg_t m;
  pb_err_t err;
  init_msg(l, &m, PB_MSG_ANNOUNCE);
  m.announce.version = pb_learn_version(l->learn);
  m.announce.iteration = (uint32_t)(pb_learn_version(l->learn) +
                                    (l->phase == PH_DONE ? 0 : 1));
  m.announce.phase = announce_phase(l->phase);
  if (pb_msg_encode_buf(&m, &l->obuf, &err) == 0)
    zmq_send(l->pub, l->obuf.data, l->obuf.len, ZMQ_DONTWAIT);
}

static void set_fatal(pb_learner_t *l, const pb_err_t *err) {
  if (!l->fatal) {
    l->fatal = 1;
    l->fatal_err = *err;
    pb_log_error(l->log, "fatal: %s", err->msg);
  }
  uv_stop(&l->loop);
}

/* ---- phases ----------------------------------------------------------- */

static void start_job(pb_learner_t *l, int kind);
static void spot_kick(pb_learner_t *l);

/* Opens the self-play items of iteration `iter`. */
static int open_selfplay(pb_learner_t *l, uint64_t iter) {
  pb_err_t err;
  const pb_config_t *c = &l->cfg;
  l->n_sp_items = (size_t)(c->train.episodes_per_iter + c->net.item_episodes - 1) /
                  (size_t)c->net.item_episodes;
  for (size_t i = 0; i < l->n_sp_items; i++) pb_episodes_clear(&l->item_eps[i]);
  if (pb_workq_reset(l->spq, l->n_sp_items, &err) != 0) {
    set_fatal(l, &err);
    return err.code;
  }
  l->sp_iter = iter;
  return 0;
}

static int pipelined(const pb_learner_t *l) {
  return l->cfg.train.pipeline && l->cfg.train.max_staleness >= 1;
}

static void selfplay_done(pb_learner_t *l);

static void start_selfplay(pb_learner_t *l) {
  const pb_config_t *c = &l->cfg;
  const uint64_t iter = pb_learn_version(l->learn) + 1;
  /* Pipelined, the items may be out (or in) already. */
  int early = l->sp_iter == iter;
  if (!early && open_selfplay(l, iter) != 0) return;
  l->phase = PH_SELFPLAY;
  l->t_iter = l->t_phase = now(l);
  pb_workq_counts_t cn;
  pb_workq_counts(l->spq, &cn);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": self-play of %d episodes in %zu items "
              "with Q version %" PRIu64 "%s",
              iter, c->train.episodes_per_iter, l->n_sp_items,
              pb_learn_version(l->learn),
              early ? " (pipelined: started with the previous version)" : "");
  if (early)
    pb_log_info(l->log,
                "iteration %" PRIu64 ": %zu of %zu self-play items already "
                "done, %zu leased",
                iter, cn.done, cn.total, cn.leased);
  announce(l);
  if (pb_workq_finished(l->spq)) selfplay_done(l);
}

static void selfplay_done(pb_learner_t *l) {
  pb_err_t err;
  pb_episodes_clear(&l->eps);
  for (size_t i = 0; i < l->n_sp_items; i++)
    if (pb_episodes_append(&l->eps, &l->item_eps[i], &err) != 0) {
      set_fatal(l, &err);
      return;
    }
  /* How far the episodes' Q lags the version V and Q now train from. */
  l->staleness_max = 0;
  for (size_t k = 0; k < l->eps.n_eps; k++) {
    uint64_t lag = pb_learn_version(l->learn) - l->eps.version[k];
    if (l->eps.version[k] <= pb_learn_version(l->learn) && lag > l->staleness_max)
      l->staleness_max = lag;
  }
  const uint64_t next = l->sp_iter + 1;
  l->sp_iter = 0;
  if (pipelined(l) && next <= (uint64_t)l->cfg.train.iterations && !l->stopping &&
      open_selfplay(l, next) != 0)
    return;
  l->dropped_episodes = pb_learn_cap_replay(l->learn, &l->eps);
  l->t_selfplay = now(l) - l->t_phase;
  pb_log_info(l->log,
              "iteration %" PRIu64 ": self-play done: %zu episodes, %zu "
              "positions in %.2fs (%.0f positions/s), Q staleness up to %"
              PRIu64 "; training %s",
              pb_learn_version(l->learn) + 1, l->eps.n_eps, l->eps.n_states,
              l->t_selfplay, l->eps.n_states / (l->t_selfplay + 1e-9),
              l->staleness_max,
              pb_learn_alphazero(l->learn) ? "the policy+value network" : "V");
  /* AlphaZero: no V and no search; the network trains on the episodes'
   * visit counts and outcomes at once. */
  if (pb_learn_alphazero(l->learn)) {
    memset(&l->vst, 0, sizeof l->vst);
    l->t_search = 0;
    start_job(l, PH_TRAIN_Q);
    return;
  }
  start_job(l, PH_TRAIN_V);
}

static void start_search(pb_learner_t *l) {
  pb_err_t err;
  l->n_bs_items = (l->n_uniq + (size_t)l->cfg.net.item_states - 1) /
                  (size_t)l->cfg.net.item_states;
  if (pb_workq_reset(l->wq, l->n_bs_items, &err) != 0) {
    set_fatal(l, &err);
    return;
  }
  if (l->n_bs_items > l->item_owner_cap) {
    owner_t *o = realloc(l->item_owner, l->n_bs_items * sizeof *o);
    if (o == NULL) {
      pb_err_set(&err, PB_ENOMEM, "learner: out of memory");
      set_fatal(l, &err);
      return;
    }
    l->item_owner = o;
    l->item_owner_cap = l->n_bs_items;
  }
  for (size_t i = 0; i < l->n_bs_items; i++)
    l->item_owner[i] = (owner_t){UINT32_MAX, 0};
  l->spot_wait.n = 0;
  l->phase = PH_SEARCH;
  l->t_phase = now(l);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": beam search of %zu distinct positions "
              "in %zu items (E=%d, M=%d)",
              pb_learn_version(l->learn) + 1, l->n_uniq, l->n_bs_items,
              l->cfg.search.expansions, l->cfg.search.max_depth);
  announce(l);
}

static void write_iteration_metrics(pb_learner_t *l) {
  const uint64_t v = pb_learn_version(l->learn);
  double total = now(l) - l->t_iter;
  l->last_iter_s = total;
  l->last_v_loss = l->vst.loss_mean;
  l->last_q_loss = l->qst.loss_mean;
  if (pb_learn_alphazero(l->learn))
    pb_log_info(l->log,
                "iteration %" PRIu64 " done: %zu episodes, %zu positions | "
                "selfplay %.2fs, train %.2fs (loss %.4f: policy %.4f, value "
                "%.4f), checkpoint %.2fs | total %.2fs | workers %d",
                v, l->eps.n_eps, l->eps.n_states, l->t_selfplay,
                l->qst.seconds, l->qst.loss_mean, l->qst.policy_loss_mean,
                l->qst.value_loss_mean, l->job_ckpt_s, total,
                workers_alive(l, 0));
  else
  pb_log_info(l->log,
              "iteration %" PRIu64 " done: %zu episodes, %zu positions, %zu "
              "distinct | selfplay %.2fs, train V %.2fs (loss %.4f), search "
              "%.2fs (%.0f states/s), train Q %.2fs (loss %.4f), checkpoint "
              "%.2fs | total %.2fs | workers %d",
              v, l->eps.n_eps, l->eps.n_states, l->n_uniq, l->t_selfplay,
              l->vst.seconds, l->vst.loss_mean, l->t_search,
              l->n_uniq / (l->t_search + 1e-9), l->qst.seconds,
              l->qst.loss_mean, l->job_ckpt_s, total, workers_alive(l, 0));
  pb_json_t j;
  pb_json_init(&j);
  const float *targets = pb_learn_alphazero(l->learn) ? l->eps.policy : l->qt;
  pb_learn_report_t rep = {.mode = "distributed", .version = v,
                           .eps = &l->eps, .n_distinct = l->n_uniq,
                           .qtargets = targets, .selfplay_s = l->t_selfplay,
                           .search_s = l->t_search,
                           .checkpoint_s = l->job_ckpt_s,
                           .iteration_s = total, .v = &l->vst, .q = &l->qst};
  pb_learn_report_json(l->learn, &rep, &j);
  pb_json_kint(&j, "actors", workers_alive(l, PB_ROLE_ACTOR));
  pb_json_kint(&j, "searchers", workers_alive(l, PB_ROLE_SEARCHER));
  pb_json_kuint(&j, "leases_expired", l->leases_expired);
  pb_json_kuint(&j, "results_duplicate", l->results_dup);
  pb_json_kuint(&j, "messages_dropped", l->msgs_bad + l->msgs_mismatch);
  pb_json_kbool(&j, "pipeline", pipelined(l) != 0);
  pb_json_kuint(&j, "staleness_max", l->staleness_max);
  pb_json_kuint(&j, "spot_checked", l->spot_checked);
  pb_json_kuint(&j, "spot_disagree", l->spot_disagree);
  pb_json_kuint(&j, "searchers_quarantined", l->quarantined);
  pb_json_obj_end(&j);
  if (pb_json_cstr(&j)) pb_metrics_write(l->metrics, pb_json_cstr(&j));
  pb_json_free(&j);
}

/* ---- jobs on the thread pool ------------------------------------------ */

static void job_work(uv_work_t *req) {
  pb_learner_t *l = req->data;
  pb_err_clear(&l->job_err);
  /* OpenMP's thread count is per calling thread: a pool thread starts with
   * the machine's, which would both oversubscribe the cores and change the
   * order of float sums against the in-process trainer. */
  pb_nn_set_threads(l->cfg.model.threads);
  if (l->job_kind == PH_TRAIN_V) {
    double t = pb_now();
    memset(&l->vst, 0, sizeof l->vst);
    /* With train.v_search_mix > 0, V trains after the search (TRAIN_Q). */
    if (pb_learn_v_first(l->learn))
      l->job_rc = pb_learn_train_v(l->learn, &l->eps, NULL, &l->vst,
                                   &l->job_err);
    if (l->job_rc == 0)
      l->job_rc = pb_learn_distinct(l->learn, &l->eps, &l->n_uniq, &l->job_err);
    if (l->job_rc == 0) {
      size_t need = l->n_uniq * (size_t)l->g->num_actions;
      if (need > l->qt_cap) {
        free(l->qt);
        l->qt = malloc(need * sizeof *l->qt);
        l->qt_cap = l->qt ? need : 0;
        if (l->qt == NULL)
          l->job_rc = pb_err_set(&l->job_err, PB_ENOMEM, "out of memory");
      }
    }
    /* V_k is served as version k while Q is still Q_{k-1}. */
    if (l->job_rc == 0)
      l->job_rc = pb_nn_weights_save(pb_learn_v(l->learn),
                                     pb_learn_version(l->learn) + 1,
                                     &l->vw_new.buf, &l->vw_new.len,
                                     &l->job_err);
    l->vw_new.version = pb_learn_version(l->learn) + 1;
    l->t_train_v = pb_now() - t;
  } else if (pb_learn_alphazero(l->learn)) {
    l->job_rc = pb_learn_train_pv(l->learn, &l->eps, &l->qst, &l->job_err);
    l->n_uniq = l->eps.n_states;
    if (l->job_rc == 0)
      l->job_rc = pb_learn_end_iteration(l->learn, &l->eps, l->eps.policy,
                                         &l->job_err);
  } else {
    l->job_rc = pb_learn_train_after_search(l->learn, &l->eps, l->qt,
                                            &l->vst, &l->qst, &l->job_err);
    if (l->job_rc == 0)
      l->job_rc = pb_learn_end_iteration(l->learn, &l->eps, l->qt, &l->job_err);
  }
  if (l->job_kind == PH_TRAIN_Q) {
    if (l->job_rc == 0) {
      char path[4200];
      pb_rundir_ckpt_path(l->cfg.run.dir,
                          (unsigned long long)pb_learn_version(l->learn), path,
                          sizeof path);
      double t = pb_now();
      l->job_rc = pb_learn_save(l->learn, path, NULL, 0, &l->job_err);
      /* Retention (run.keep_last / run.keep_every): housekeeping, so a
       * failure is only logged. */
      pb_err_t pe;
      pb_err_clear(&pe);
      if (l->job_rc == 0 &&
          pb_rundir_prune(&l->cfg, pb_learn_version(l->learn), l->log, &pe) < 0)
        pb_log_warn(l->log, "checkpoint retention: %s", pe.msg);
      l->job_ckpt_s = pb_now() - t;
    }
    if (l->job_rc == 0)
      l->job_rc = pb_nn_weights_save(pb_learn_q(l->learn),
                                     pb_learn_version(l->learn), &l->qw_new.buf,
                                     &l->qw_new.len, &l->job_err);
    l->qw_new.version = pb_learn_version(l->learn);
  }
}

static void swap_weights(wbuf_t *cur, wbuf_t *nw) {
  free(cur->buf);
  *cur = *nw;
  memset(nw, 0, sizeof *nw);
}

static void shutdown_loop(pb_learner_t *l);

static void job_done(uv_work_t *req, int status) {
  pb_learner_t *l = req->data;
  int kind = l->job_kind;
  l->job_kind = 0;
  if (status != 0 || l->job_rc != 0) {
    if (status != 0)
      pb_err_set(&l->job_err, PB_EIO, "job cancelled: %s", uv_strerror(status));
    set_fatal(l, &l->job_err);
    return;
  }
  if (kind == PH_TRAIN_V) {
    swap_weights(&l->vw, &l->vw_new);
    l->uniq = pb_learn_distinct_states(l->learn);
    if (pb_learn_v_first(l->learn))
      pb_log_info(l->log,
                  "iteration %" PRIu64 ": V trained in %.2fs on %zu samples "
                  "(loss %.4f -> %.4f)",
                  pb_learn_version(l->learn) + 1, l->vst.seconds,
                  l->vst.samples, l->vst.loss_first, l->vst.loss_last);
    if (l->stopping) {
      shutdown_loop(l);
      return;
    }
    start_search(l);
  } else {
    swap_weights(&l->qw, &l->qw_new);
    write_iteration_metrics(l);
    if (l->stopping) {
      shutdown_loop(l);
      return;
    }
    if (pb_learn_version(l->learn) >= (uint64_t)l->cfg.train.iterations) {
      l->phase = PH_DONE;
      l->done_at = now(l);
      pb_log_info(l->log, "all %d iterations done; telling workers to stop",
                  l->cfg.train.iterations);
      announce(l);
    } else {
      start_selfplay(l);
    }
  }
}

static void start_job(pb_learner_t *l, int kind) {
  l->phase = kind;
  l->job_kind = kind;
  l->job.data = l;
  announce(l);
  int rc = uv_queue_work(&l->loop, &l->job, job_work, job_done);
  if (rc != 0) {
    pb_err_t err;
    pb_err_set(&err, PB_EIO, "cannot start a job: %s", uv_strerror(rc));
    l->job_kind = 0;
    set_fatal(l, &err);
  }
}

/* ---- message handlers ------------------------------------------------- */

static void on_hello(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  p->role = m->hello.role;
  snprintf(p->sender, sizeof p->sender, "%s", m->header.sender_id);
  snprintf(p->host, sizeof p->host, "%s", m->hello.hostname);
  pb_log_info(l->log, "%s %s joined (host %s, pid %u, %u threads); %d workers",
              pb_msg_role_name(p->role), p->sender, p->host, m->hello.pid,
              m->hello.threads, workers_alive(l, 0));
  pb_msg_t r;
  init_msg(l, &r, PB_MSG_HELLO_REPLY);
  r.hello_reply.accepted = 1;
  snprintf(r.hello_reply.message, sizeof r.hello_reply.message, "welcome to %s",
           l->run_id);
  r.hello_reply.version = pb_learn_version(l->learn);
  r.hello_reply.expansions = (uint32_t)l->cfg.search.expansions;
  r.hello_reply.max_depth = (uint32_t)l->cfg.search.max_depth;
  r.hello_reply.max_turns = (uint32_t)l->cfg.train.max_turns;
  r.hello_reply.eps = l->cfg.train.eps;
  r.hello_reply.alpha = l->cfg.train.alpha;
  r.hello_reply.temperature = l->cfg.train.selfplay_temperature;
  r.hello_reply.seed = (uint64_t)l->cfg.seed;
  if (pb_learn_alphazero(l->learn)) {
    r.hello_reply.algorithm = PB_ALGO_ALPHAZERO;
    r.hello_reply.simulations = (uint32_t)l->cfg.mcts.simulations;
    r.hello_reply.c_puct = l->cfg.mcts.c_puct;
    r.hello_reply.temp_moves = (uint32_t)l->cfg.mcts.temp_moves;
  }
  send_msg(l, p, &r);
}

static void on_work_request(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  const pb_config_t *c = &l->cfg;
  int role = m->work_request.role;
  if (p->role == 0) p->role = role;
  if (p->sender[0] == '\0')
    snprintf(p->sender, sizeof p->sender, "%s", m->header.sender_id);
  pb_msg_t r;
  size_t idx;
  uint64_t id;
  const double lease = c->net.lease_ms / 1000.0;
  const uint32_t who = (uint32_t)(p - l->peers);
  if (role == PB_ROLE_ACTOR && !l->stopping && l->sp_iter != 0 &&
      (l->phase == PH_SELFPLAY || pipelined(l)) &&
      pb_workq_lease(l->spq, now(l), lease, who, &idx, &id) == 0) {
    size_t first = idx * (size_t)c->net.item_episodes;
    size_t cnt = (size_t)c->train.episodes_per_iter - first;
    if (cnt > (size_t)c->net.item_episodes) cnt = (size_t)c->net.item_episodes;
    init_msg(l, &r, PB_MSG_WORK_ITEM);
    r.work_item.item_id = id;
    r.work_item.lease_ms = (uint32_t)c->net.lease_ms;
    r.work_item.kind = PB_WORK_SELFPLAY;
    /* The newest Q served (a job may be making the next one). */
    r.work_item.q_version = l->qw.version;
    r.work_item.episodes = (uint32_t)cnt;
    r.work_item.seed = pb_learn_item_seed(c, l->sp_iter - 1, (uint64_t)first);
    send_msg(l, p, &r);
    pb_log_debug(l->log, "self-play item %zu (%zu episodes) -> %s", idx, cnt,
                 p->sender);
    return;
  }
  if (l->phase == PH_SEARCH && role == PB_ROLE_SEARCHER && !l->stopping &&
      pb_workq_lease(l->wq, now(l), lease, who, &idx, &id) == 0) {
    size_t first = idx * (size_t)c->net.item_states;
    size_t cnt = l->n_uniq - first;
    if (cnt > (size_t)c->net.item_states) cnt = (size_t)c->net.item_states;
    init_msg(l, &r, PB_MSG_WORK_ITEM);
    r.work_item.item_id = id;
    r.work_item.lease_ms = (uint32_t)c->net.lease_ms;
    r.work_item.kind = PB_WORK_SEARCH;
    r.work_item.states = l->uniq + first;
    r.work_item.n_states = (uint32_t)cnt;
    r.work_item.v_version = l->vw.version;
    r.work_item.q_version = l->qw.version;
    r.work_item.expansions = (uint32_t)c->search.expansions;
    r.work_item.max_depth = (uint32_t)c->search.max_depth;
    send_msg(l, p, &r);
    pb_log_debug(l->log, "search item %zu (%zu states) -> %s", idx, cnt,
                 p->sender);
    return;
  }
  init_msg(l, &r, PB_MSG_NO_WORK);
  r.no_work.retry_ms = (uint32_t)c->net.heartbeat_ms;
  send_msg(l, p, &r);
}

static void reject(pb_learner_t *l, peer_t *p, int code, const char *msg) {
  pb_msg_t r;
  init_msg(l, &r, PB_MSG_REJECT);
  r.reject.code = code;
  snprintf(r.reject.message, sizeof r.reject.message, "%s", msg);
  send_msg(l, p, &r);
}

static void bad_result(pb_learner_t *l, pb_workq_t *q, peer_t *p, size_t idx,
                       const char *why) {
  l->results_bad++;
  pb_workq_requeue(q, idx);
  if (may_warn(l))
    pb_log_warn(l->log, "result for item %zu from %s refused (%s); re-queued",
                idx, p->sender, why);
}

/* The first result for a leased item of the current phase is taken (the
 * item is then done, *idx set); anything else is a duplicate or stale
 * result and is dropped. */
static int take_result(pb_learner_t *l, const peer_t *p, int phase,
                       uint64_t item_id, size_t *idx) {
  int st = phase == PH_SELFPLAY
               ? (l->sp_iter != 0 ? pb_workq_complete(l->spq, item_id, idx)
                                  : PB_WORKQ_UNKNOWN)
           : l->phase == phase ? pb_workq_complete(l->wq, item_id, idx)
                               : PB_WORKQ_UNKNOWN;
  if (st == PB_WORKQ_ACCEPTED) return 1;
  l->results_dup++;
  pb_log_debug(l->log, "dropped %s %s result from %s",
               st == PB_WORKQ_DUPLICATE ? "duplicate" : "stale",
               phase_name(phase), p->sender);
  return 0;
}

static void on_selfplay_result(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  const pb_msg_selfplay_result_t *r = &m->selfplay_result;
  size_t idx;
  if (!take_result(l, p, PH_SELFPLAY, r->item_id, &idx)) return;
  const pb_config_t *c = &l->cfg;
  size_t first = idx * (size_t)c->net.item_episodes;
  size_t want = (size_t)c->train.episodes_per_iter - first;
  if (want > (size_t)c->net.item_episodes) want = (size_t)c->net.item_episodes;
  if (r->n_episodes != want) {
    bad_result(l, l->spq, p, idx, "wrong number of episodes");
    return;
  }
  pb_episodes_t *e = &l->item_eps[idx];
  pb_episodes_clear(e);
  size_t npos = 0;
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    pb_state_t s0;
    l->g->reset(&s0);
    /* Trained from version sp_iter - 1: the episode's Q may lag it by
     * train.max_staleness when pipelined, not at all otherwise. */
    const uint64_t base = l->sp_iter - 1;
    const uint64_t bound = pipelined(l) ? (uint64_t)c->train.max_staleness : 0;
    if (ep->q_version > base || base - ep->q_version > bound ||
        memcmp(&ep->states[0], &s0, sizeof s0) != 0 ||
        ep->n_states > (uint32_t)c->train.max_turns) {
      pb_episodes_clear(e);
      bad_result(l, l->spq, p, idx,
                 "episode of a Q version too old or unknown, not from the "
                 "start, or too long");
      return;
    }
    const int az = pb_learn_alphazero(l->learn);
    if ((ep->policy != NULL) != az) {
      pb_episodes_clear(e);
      bad_result(l, l->spq, p, idx,
                 az ? "episode without the visit counts an alphazero run "
                      "trains on"
                    : "episode with visit counts, but this is a probs run");
      return;
    }
    pb_err_t err;
    if ((az ? pb_episodes_add_policy(e, ep->states, ep->n_states,
                                     ep->final_reward, ep->q_version,
                                     ep->policy, l->g->num_actions, &err)
            : pb_episodes_add(e, ep->states, ep->n_states, ep->final_reward,
                              ep->q_version, &err)) != 0) {
      set_fatal(l, &err);
      return;
    }
    npos += ep->n_states;
  }
  l->positions_in += npos;
  p->items++;
  p->positions += npos;
  if (l->phase == PH_SELFPLAY && pb_workq_finished(l->spq)) selfplay_done(l);
}

/* ---- the spot check of search results --------------------------------- */

static void spotq_free(spotq_t *q) {
  free(q->states);
  free(q->claimed);
  free(q->who);
  free(q->item);
  memset(q, 0, sizeof *q);
}

static int spotq_push(spotq_t *q, int A, const pb_state_t *st,
                      const float *claimed, owner_t who, uint32_t item) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 256;
    pb_state_t *s = realloc(q->states, cap * sizeof *s);
    if (s) q->states = s;
    float *c = realloc(q->claimed, cap * (size_t)A * sizeof *c);
    if (c) q->claimed = c;
    owner_t *w = realloc(q->who, cap * sizeof *w);
    if (w) q->who = w;
    uint32_t *it = realloc(q->item, cap * sizeof *it);
    if (it) q->item = it;
    if (!s || !c || !w || !it) return PB_ENOMEM;
    q->cap = cap;
  }
  q->states[q->n] = *st;
  memcpy(q->claimed + q->n * (size_t)A, claimed, (size_t)A * sizeof *claimed);
  q->who[q->n] = who;
  q->item[q->n] = item;
  q->n++;
  return 0;
}

static int same_owner(owner_t a, owner_t b) {
  return a.slot == b.slot && a.serial == b.serial;
}

/* Draws the positions of an accepted item that the learner searches
 * again. The draw is not reproducible from the run's seed (which workers
 * know): a searcher cannot tell which of its answers will be checked. */
static void spot_sample(pb_learner_t *l, const peer_t *p, size_t idx,
                        size_t first, size_t n) {
  if (l->spot == NULL) return;
  const int A = l->g->num_actions;
  owner_t who = {(uint32_t)(p - l->peers), p->serial};
  size_t m = pb_spot_sample(&l->spot_rng, n, l->cfg.net.spot_check,
                            l->spot_idx, (size_t)l->cfg.net.item_states);
  for (size_t i = 0; i < m; i++) {
    size_t k = first + l->spot_idx[i];
    if (spotq_push(&l->spot_wait, A, &l->uniq[k], l->qt + k * A, who,
                   (uint32_t)idx) != 0) {
      pb_err_t err;
      pb_err_set(&err, PB_ENOMEM, "learner: out of memory (spot check)");
      set_fatal(l, &err);
      return;
    }
  }
}

static int is_banned(const pb_learner_t *l, const char *id) {
  if (id == NULL || id[0] == '\0') return 0;
  for (int i = 0; i < l->n_banned; i++)
    if (!strcmp(l->banned[i], id)) return 1;
  return 0;
}

static void ban(pb_learner_t *l, const char *id) {
  if (id[0] == '\0' || is_banned(l, id)) return;
  int k = l->n_banned < BANNED_MAX ? l->n_banned++ : BANNED_MAX - 1;
  snprintf(l->banned[k], sizeof l->banned[k], "%s", id);
}

/* A searcher whose results disagree: everything it delivered in this
 * iteration is re-queued, the checks of its results still waiting are
 * dropped, and it (its sender id, and its CURVE key when there is one) is
 * refused for the rest of the learner's life. */
static void quarantine(pb_learner_t *l, peer_t *p) {
  const uint32_t slot = (uint32_t)(p - l->peers);
  const owner_t who = {slot, p->serial};
  p->quarantined = 1;
  l->quarantined++;
  ban(l, p->sender);
  ban(l, p->key);
  size_t k = 0;
  for (size_t i = 0; i < l->n_bs_items; i++)
    if (same_owner(l->item_owner[i], who)) {
      pb_workq_requeue(l->wq, i);
      l->item_owner[i] = (owner_t){UINT32_MAX, 0};
      k++;
    }
  if (p->used) k += pb_workq_release(l->wq, slot);
  spotq_t *q = &l->spot_wait;
  const int A = l->g->num_actions;
  size_t n = 0;
  for (size_t i = 0; i < q->n; i++) {
    if (same_owner(q->who[i], who)) continue;
    q->states[n] = q->states[i];
    memmove(q->claimed + n * A, q->claimed + i * A, (size_t)A * sizeof(float));
    q->who[n] = q->who[i];
    q->item[n++] = q->item[i];
  }
  q->n = n;
  const pb_spot_tally_t *t = &p->spot_tally;
  char msg[PB_MSG_TEXT_MAX];
  snprintf(msg, sizeof msg,
           "quarantined: %" PRIu64 " of %" PRIu64 " search results the "
           "learner searched again disagree with its own (largest "
           "difference %.3g, tolerance %g)",
           t->disagree, t->checked, (double)t->max_diff,
           l->cfg.net.spot_check_tolerance);
  pb_log_warn(l->log,
              "searcher %s (address %s, host %s%s%s) %s; its %zu items of "
              "this iteration are re-queued and it is refused from now on",
              p->sender[0] ? p->sender : "?", p->addr[0] ? p->addr : "?",
              p->host[0] ? p->host : "?", p->key[0] ? ", key " : "", p->key,
              msg, k);
  if (p->used) reject(l, p, PB_EDENIED, msg);
}

static void search_maybe_done(pb_learner_t *l) {
  if (l->phase != PH_SEARCH || !pb_workq_finished(l->wq) || l->spot_running ||
      l->spot_wait.n > 0 || l->fatal)
    return;
  l->t_search = now(l) - l->t_phase;
  pb_log_info(l->log,
              "iteration %" PRIu64 ": search done in %.2fs (%.0f states/s); "
              "training Q",
              pb_learn_version(l->learn) + 1, l->t_search,
              l->n_uniq / (l->t_search + 1e-9));
  start_job(l, PH_TRAIN_Q);
}

/* On a pool thread: the networks are not trained while the search phase
 * lasts, so the check job may use them. */
static void spot_work(uv_work_t *req) {
  pb_learner_t *l = req->data;
  pb_err_clear(&l->spot_err);
  pb_nn_set_threads(l->cfg.model.threads);
  l->spot_rc = pb_spot_search(l->spot, pb_learn_v(l->learn),
                              pb_learn_q(l->learn), l->spot_run.states,
                              (int)l->spot_run.n, l->spot_mine, &l->spot_err);
}

static void spot_done(uv_work_t *req, int status) {
  pb_learner_t *l = req->data;
  spotq_t *q = &l->spot_run;
  const size_t n = q->n;
  l->spot_running = 0;
  q->n = 0;
  if (status != 0 || l->spot_rc != 0) {
    if (status != 0)
      pb_err_set(&l->spot_err, PB_EIO, "spot check cancelled: %s",
                 uv_strerror(status));
    set_fatal(l, &l->spot_err);
    return;
  }
  if (l->stopping || !l->handles_open || l->phase != PH_SEARCH) return;
  const int A = l->g->num_actions;
  const uint64_t ver = pb_learn_version(l->learn) + 1;
  const double tol = l->cfg.net.spot_check_tolerance;
  for (size_t i = 0; i < n; i++) {
    float d = pb_spot_diff(l->g, &q->states[i], l->spot_mine + i * A,
                           q->claimed + i * A);
    owner_t w = q->who[i];
    peer_t *p = &l->peers[w.slot];
    l->spot_checked++;
    if ((double)d > tol) l->spot_disagree++;
    if (p->serial != w.serial) {
      /* Its slot went to another peer: judge the item alone. */
      if ((double)d > tol && same_owner(l->item_owner[q->item[i]], w)) {
        pb_workq_requeue(l->wq, q->item[i]);
        l->item_owner[q->item[i]] = (owner_t){UINT32_MAX, 0};
      }
      continue;
    }
    if (p->quarantined) continue;
    if (p->spot_version != ver) {
      p->spot_version = ver;
      memset(&p->spot_tally, 0, sizeof p->spot_tally);
    }
    pb_spot_count(&p->spot_tally, d, tol);
    if (pb_spot_failed(&p->spot_tally, l->cfg.net.spot_check_max_disagree))
      quarantine(l, p);
  }
  spot_kick(l);
  search_maybe_done(l);
}

static void spot_kick(pb_learner_t *l) {
  if (l->spot == NULL || l->spot_running || l->spot_wait.n == 0 ||
      l->phase != PH_SEARCH || l->stopping || !l->handles_open || l->fatal)
    return;
  spotq_t t = l->spot_run;
  l->spot_run = l->spot_wait;
  l->spot_wait = t;
  l->spot_wait.n = 0;
  size_t need = l->spot_run.n * (size_t)l->g->num_actions;
  if (need > l->spot_mine_cap) {
    free(l->spot_mine);
    l->spot_mine = malloc(need * sizeof *l->spot_mine);
    l->spot_mine_cap = l->spot_mine ? need : 0;
  }
  pb_err_t err;
  int rc = l->spot_mine == NULL ? UV_ENOMEM : 0;
  if (rc == 0) {
    l->spot_running = 1;
    l->spot_job.data = l;
    rc = uv_queue_work(&l->loop, &l->spot_job, spot_work, spot_done);
  }
  if (rc != 0) {
    l->spot_running = 0;
    pb_err_set(&err, PB_EIO, "cannot start the spot check: %s",
               uv_strerror(rc));
    set_fatal(l, &err);
  }
}

static void on_search_result(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  const pb_msg_search_result_t *r = &m->search_result;
  size_t idx;
  if (!take_result(l, p, PH_SEARCH, r->item_id, &idx)) return;
  const int A = l->g->num_actions;
  size_t first = idx * (size_t)l->cfg.net.item_states;
  size_t want = l->n_uniq - first;
  if (want > (size_t)l->cfg.net.item_states) want = (size_t)l->cfg.net.item_states;
  if (r->n_states != want || r->n_actions != (uint32_t)A) {
    bad_result(l, l->wq, p, idx, "wrong number of states or actions");
    return;
  }
  for (size_t i = 0; i < want; i++) {
    uint8_t acts[PB_MAX_ACTIONS], legal[PB_MAX_ACTIONS] = {0};
    int na = l->g->legal(&l->uniq[first + i], acts);
    for (int k = 0; k < na; k++) legal[acts[k]] = 1;
    for (int a = 0; a < A; a++) {
      float v = r->qvalues[i * A + a];
      if ((!legal[a] && v != 0.0f) || !(v >= -1.0f && v <= 1.0f)) {
        bad_result(l, l->wq, p, idx,
                   "values outside [-1, 1] or on illegal actions");
        return;
      }
    }
  }
  memcpy(l->qt + first * A, r->qvalues, want * A * sizeof(float));
  l->positions_in += want;
  p->items++;
  p->positions += want;
  l->item_owner[idx] = (owner_t){(uint32_t)(p - l->peers), p->serial};
  spot_sample(l, p, idx, first, want);
  spot_kick(l);
  search_maybe_done(l);
}

static void on_weights_request(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  const pb_msg_weights_request_t *w = &m->weights_request;
  pb_msg_t r;
  init_msg(l, &r, PB_MSG_WEIGHTS);
  r.weights.version = w->version;
  if ((w->which & PB_WHICH_V) && w->version == l->vw.version && l->vw.buf) {
    r.weights.v_weights = l->vw.buf;
    r.weights.v_len = l->vw.len;
  }
  if ((w->which & PB_WHICH_Q) && w->version == l->qw.version && l->qw.buf) {
    r.weights.q_weights = l->qw.buf;
    r.weights.q_len = l->qw.len;
  }
  int want_v = (w->which & PB_WHICH_V) != 0, want_q = (w->which & PB_WHICH_Q) != 0;
  if ((want_v && r.weights.v_weights == NULL) ||
      (want_q && r.weights.q_weights == NULL)) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "weights version %" PRIu64 " not served (V is %" PRIu64
             ", Q is %" PRIu64 ")",
             w->version, l->vw.version, l->qw.version);
    reject(l, p, PB_ENOTFOUND, msg);
    return;
  }
  send_msg(l, p, &r);
}

static void on_heartbeat(pb_learner_t *l, const pb_msg_t *m) {
  const double lease = l->cfg.net.lease_ms / 1000.0;
  for (uint32_t i = 0; i < m->heartbeat.n_item_ids; i++)
    if (pb_workq_renew(l->wq, m->heartbeat.item_ids[i], now(l), lease) != 0)
      pb_workq_renew(l->spq, m->heartbeat.item_ids[i], now(l), lease);
}

static void on_bye(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  size_t k = pb_workq_release(l->wq, (uint32_t)(p - l->peers)) +
             pb_workq_release(l->spq, (uint32_t)(p - l->peers));
  pb_log_info(l->log, "%s %s left (%s)%s", pb_msg_role_name(p->role),
              p->sender[0] ? p->sender : "worker", m->bye.reason,
              k ? "; its items are re-queued" : "");
  p->used = 0;
}

/* A quarantined peer, or a new connection with the sender id or CURVE key
 * of one, gets only refusals (rate limited: a refusal answers its requests
 * and results, nothing else). Returns 1 when the message is dropped. */
static int refused(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  if (!p->quarantined && !is_banned(l, m->header.sender_id) &&
      !is_banned(l, p->key))
    return 0;
  if (!p->quarantined) {
    p->quarantined = 1;
    pb_log_warn(l->log, "refused %s from quarantined %s (address %s)%s%s",
                pb_msg_type_name(m->type), m->header.sender_id,
                p->addr[0] ? p->addr : "?", p->key[0] ? " with key " : "",
                p->key);
  }
  l->msgs_bad++;
  if (m->type == PB_MSG_HELLO || m->type == PB_MSG_WORK_REQUEST ||
      m->type == PB_MSG_SEARCH_RESULT || m->type == PB_MSG_SELFPLAY_RESULT) {
    if (m->type == PB_MSG_SEARCH_RESULT || m->type == PB_MSG_SELFPLAY_RESULT)
      l->results_dup++;
    reject(l, p, PB_EDENIED,
           "quarantined: this worker's search results disagreed with the "
           "learner's spot check; see the learner's log");
  }
  return 1;
}

static void handle(pb_learner_t *l, const uint8_t *rid, size_t rid_len,
                   const char *key, const char *addr, const uint8_t *buf,
                   size_t len) {
  pb_msg_t m;
  pb_err_t err;
  pb_err_clear(&err);
  pb_msg_expect_t ex = {l->run_id, l->g->id};
  l->msgs_in++;
  l->bytes_in += len;
  int rc = pb_msg_decode(buf, len, &ex, &m, &err);
  if (rc != 0) {
    char who[2 * RID_MAX + 1];
    rid_text(rid, rid_len, who, sizeof who);
    if (rc == PB_EMISMATCH) l->msgs_mismatch++;
    else l->msgs_bad++;
    if (may_warn(l))
      pb_log_warn(l->log, "dropped a message from peer %s (sender '%s'): %s",
                  who, m.header.sender_id, err.msg);
    if (rc == PB_EMISMATCH) {
      peer_t *p = peer_find(l, rid, rid_len, 1);
      reject(l, p, PB_EMISMATCH, err.msg);
    }
    pb_msg_free(&m);
    return;
  }
  peer_t *p = peer_find(l, rid, rid_len, 1);
  p->last_seen = now(l);
  if (key != NULL && p->key[0] == '\0')
    snprintf(p->key, sizeof p->key, "%s", key);
  if (addr != NULL && p->addr[0] == '\0')
    snprintf(p->addr, sizeof p->addr, "%s", addr);
  if (refused(l, p, &m)) {
    pb_msg_free(&m);
    return;
  }
  switch (m.type) {
  case PB_MSG_HELLO: on_hello(l, p, &m); break;
  case PB_MSG_WORK_REQUEST: on_work_request(l, p, &m); break;
  case PB_MSG_SELFPLAY_RESULT: on_selfplay_result(l, p, &m); break;
  case PB_MSG_SEARCH_RESULT: on_search_result(l, p, &m); break;
  case PB_MSG_WEIGHTS_REQUEST: on_weights_request(l, p, &m); break;
  case PB_MSG_HEARTBEAT: on_heartbeat(l, &m); break;
  case PB_MSG_BYE: on_bye(l, p, &m); break;
  default:
    l->msgs_bad++;
    if (may_warn(l))
      pb_log_warn(l->log, "unexpected %s from %s: dropped",
                  pb_msg_type_name(m.type), m.header.sender_id);
  }
  pb_msg_free(&m);
}

/* ---- the ZeroMQ side of the loop -------------------------------------- */

static void on_zidle(uv_idle_t *h);

/* ZMQ_FD is edge-triggered: read until ZMQ_EVENTS says nothing is left.
 * At most `budget` messages per call so the loop stays fair; if more
 * remain, the idle handle calls again on the next turn. */
static void drain(pb_learner_t *l) {
  int budget = 512;
  zmq_msg_t part[2];
  zmq_msg_init(&part[0]);
  zmq_msg_init(&part[1]);
  while (budget-- > 0 && l->router != NULL) {
    int ev = 0;
    size_t evl = sizeof ev;
    if (zmq_getsockopt(l->router, ZMQ_EVENTS, &ev, &evl) != 0 ||
        !(ev & ZMQ_POLLIN))
      break;
    if (zmq_msg_recv(&part[0], l->router, ZMQ_DONTWAIT) < 0) break;
    int more = zmq_msg_more(&part[0]);
    int nparts = 1;
    /* Expected: [routing id][payload]. Anything else is drained and dropped. */
    if (more && zmq_msg_recv(&part[1], l->router, ZMQ_DONTWAIT) >= 0) {
      nparts = 2;
      more = zmq_msg_more(&part[1]);
    }
    if (more) {
      zmq_msg_t extra;
      zmq_msg_init(&extra);
      while (zmq_msg_more(&extra) || more) {
        if (zmq_msg_recv(&extra, l->router, ZMQ_DONTWAIT) < 0) break;
        more = 0;
      }
      zmq_msg_close(&extra);
      l->msgs_bad++;
      if (may_warn(l)) pb_log_warn(l->log, "dropped a multi-part message");
      continue;
    }
    /* With CURVE, the ZAP handler made the worker's key its User-Id. */
    const char *key =
        nparts == 2 && l->zap ? zmq_msg_gets(&part[1], "User-Id") : NULL;
    const char *addr =
        nparts == 2 ? zmq_msg_gets(&part[1], "Peer-Address") : NULL;
    if (nparts == 2 && zmq_msg_size(&part[0]) <= RID_MAX)
      handle(l, zmq_msg_data(&part[0]), zmq_msg_size(&part[0]), key, addr,
             zmq_msg_data(&part[1]), zmq_msg_size(&part[1]));
    else
      l->msgs_bad++;
    if (l->fatal) break;
  }
  int ev = 0;
  size_t evl = sizeof ev;
  int more = l->router && !l->fatal &&
             zmq_getsockopt(l->router, ZMQ_EVENTS, &ev, &evl) == 0 &&
             (ev & ZMQ_POLLIN);
  if (more && !uv_is_active((uv_handle_t *)&l->zidle))
    uv_idle_start(&l->zidle, on_zidle);
  zmq_msg_close(&part[0]);
  zmq_msg_close(&part[1]);
}

static void on_zpoll(uv_poll_t *h, int status, int events) {
  (void)status;
  (void)events;
  drain(h->data);
}

static void on_zidle(uv_idle_t *h) {
  pb_learner_t *l = h->data;
  uv_idle_stop(h);
  drain(l);
}

static void expired(pb_learner_t *l, const char *what, size_t index,
                    uint32_t worker) {
  l->leases_expired++;
  const peer_t *p = worker < (uint32_t)l->max_peers ? &l->peers[worker] : NULL;
  pb_log_warn(l->log, "lease of %s item %zu (%s) expired; re-queued", what,
              index, p && p->used && p->sender[0] ? p->sender : "worker gone");
}

static void on_expire(void *ctx, size_t index, uint32_t worker) {
  expired(ctx, "search", index, worker);
}

static void on_expire_sp(void *ctx, size_t index, uint32_t worker) {
  expired(ctx, "selfplay", index, worker);
}

/* The queue of the phase the learner waits in. */
static pb_workq_t *phase_queue(const pb_learner_t *l) {
  return l->phase == PH_SELFPLAY ? l->spq : l->wq;
}

static void on_tick(uv_timer_t *h) {
  pb_learner_t *l = h->data;
  drain(l);
  double t = now(l);
  if (l->phase == PH_SEARCH) pb_workq_expire(l->wq, t, on_expire, l);
  if (l->sp_iter != 0) pb_workq_expire(l->spq, t, on_expire_sp, l);
  if (l->phase == PH_DONE) {
    /* Repeat the stop announcement for a second (PUB drops to peers that
     * are reconnecting), then leave. */
    announce(l);
    if (t - l->done_at > 1.0) shutdown_loop(l);
    return;
  }
  if (t - l->last_progress >= 5.0 &&
      (l->phase == PH_SELFPLAY || l->phase == PH_SEARCH)) {
    l->last_progress = t;
    pb_workq_counts_t c;
    pb_workq_counts(phase_queue(l), &c);
    pb_log_info(l->log,
                "iteration %" PRIu64 " %s: %zu/%zu items done, %zu leased; "
                "%d actors, %d searchers",
                pb_learn_version(l->learn) + 1, phase_name(l->phase), c.done,
                c.total, c.leased, workers_alive(l, PB_ROLE_ACTOR),
                workers_alive(l, PB_ROLE_SEARCHER));
  }
}

static void on_signal(uv_signal_t *h, int signum) {
  pb_learner_t *l = h->data;
  if (l->stopping) return;
  l->stopping = 1;
  pb_log_info(l->log, "%s: stopping (%s)", signum == SIGINT ? "SIGINT" : "SIGTERM",
              l->job_kind ? "finishing the running training step first"
                          : "the current phase is abandoned; --resume repeats it");
  if (l->job_kind == 0) shutdown_loop(l);
}

static void close_cb(uv_handle_t *h) { (void)h; }

static void shutdown_loop(pb_learner_t *l) {
  if (!l->handles_open) return;
  l->handles_open = 0;
  uv_poll_stop(&l->zpoll);
  uv_close((uv_handle_t *)&l->zpoll, close_cb);
  uv_close((uv_handle_t *)&l->zidle, close_cb);
  uv_close((uv_handle_t *)&l->tick, close_cb);
  uv_close((uv_handle_t *)&l->sigint, close_cb);
  uv_close((uv_handle_t *)&l->sigterm, close_cb);
  pb_http_destroy(&l->http);
}

/* ---- HTTP: /status and /metrics --------------------------------------- */

static long rss_kb(void) {
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static char *status_json(pb_learner_t *l) {
  pb_workq_counts_t c;
  pb_workq_counts(phase_queue(l), &c);
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "run", l->run_id);
  pb_json_kstr(&j, "game", l->g->name);
  pb_json_kuint(&j, "version", pb_learn_version(l->learn));
  pb_json_kuint(&j, "iteration", pb_learn_version(l->learn) +
                                     (l->phase == PH_DONE ? 0 : 1));
  pb_json_kint(&j, "iterations", l->cfg.train.iterations);
  pb_json_kstr(&j, "phase", phase_name(l->phase));
  pb_json_kbool(&j, "stopping", l->stopping != 0);
  pb_json_key(&j, "workers");
  pb_json_obj_begin(&j);
  pb_json_kint(&j, "actors", workers_alive(l, PB_ROLE_ACTOR));
  pb_json_kint(&j, "searchers", workers_alive(l, PB_ROLE_SEARCHER));
  pb_json_kint(&j, "evaluators", workers_alive(l, PB_ROLE_EVALUATOR));
  pb_json_obj_end(&j);
  pb_json_key(&j, "queue");
  pb_json_obj_begin(&j);
  pb_json_kuint(&j, "total", c.total);
  pb_json_kuint(&j, "pending", c.pending);
  pb_json_kuint(&j, "leased", c.leased);
  pb_json_kuint(&j, "done", c.done);
  pb_json_obj_end(&j);
  pb_json_kuint(&j, "positions_ingested", l->positions_in);
  pb_json_kuint(&j, "messages", l->msgs_in);
  pb_json_kuint(&j, "messages_dropped", l->msgs_bad + l->msgs_mismatch);
  pb_json_kuint(&j, "leases_expired", l->leases_expired);
  pb_json_key(&j, "spot_check");
  pb_json_obj_begin(&j);
  pb_json_kdouble(&j, "share", l->cfg.net.spot_check);
  pb_json_kuint(&j, "checked", l->spot_checked);
  pb_json_kuint(&j, "disagree", l->spot_disagree);
  pb_json_kuint(&j, "quarantined", l->quarantined);
  pb_json_obj_end(&j);
  pb_json_kdouble(&j, "uptime_s", now(l) - l->t_start);
  pb_json_kint(&j, "rss_kb", rss_kb());
  pb_json_kint(&j, "protocol_version", PB_PROTOCOL_VERSION);
  /* Where the networks run: the learner's own, and what the workers'
   * config asks for ("auto": each decides, cuda when it has one). */
  pb_json_key(&j, "devices");
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "learner", pb_nn_device(pb_learn_q(l->learn)));
  pb_json_kstr(&j, "actor", pb_config_device(&l->cfg, PB_DEVICE_ACTOR, NULL));
  pb_json_kstr(&j, "searcher",
               pb_config_device(&l->cfg, PB_DEVICE_SEARCHER, NULL));
  pb_json_obj_end(&j);
  if (l->web) pb_web_status(l->web, &j); /* elapsed, ETA, last iteration */
  pb_json_obj_end(&j);
  return pb_json_take(&j);
}

static char *metrics_text(pb_learner_t *l) {
  pb_workq_counts_t c;
  pb_workq_counts(phase_queue(l), &c);
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (f == NULL) return NULL;
#define G(name, help, fmt, val)                                             \
  fprintf(f, "# HELP probs_" name " " help "\n# TYPE probs_" name           \
             " gauge\nprobs_" name " " fmt "\n", val)
#define C(name, help, val)                                                  \
  fprintf(f, "# HELP probs_" name " " help "\n# TYPE probs_" name           \
             " counter\nprobs_" name " %" PRIu64 "\n", (uint64_t)(val))
  G("version", "Model version (finished iterations).", "%" PRIu64,
    pb_learn_version(l->learn));
  G("phase", "Phase: 1 selfplay, 2 train_v, 3 search, 4 train_q, 5 done.",
    "%d", l->phase);
  fprintf(f, "# HELP probs_workers Workers seen recently, by role.\n"
             "# TYPE probs_workers gauge\n"
             "probs_workers{role=\"actor\"} %d\n"
             "probs_workers{role=\"searcher\"} %d\n",
          workers_alive(l, PB_ROLE_ACTOR), workers_alive(l, PB_ROLE_SEARCHER));
  fprintf(f, "# HELP probs_queue_items Work items of the current phase.\n"
             "# TYPE probs_queue_items gauge\n"
             "probs_queue_items{state=\"pending\"} %zu\n"
             "probs_queue_items{state=\"leased\"} %zu\n"
             "probs_queue_items{state=\"done\"} %zu\n",
          c.pending, c.leased, c.done);
  C("messages_received_total", "Messages received.", l->msgs_in);
  C("bytes_received_total", "Bytes received.", l->bytes_in);
  C("messages_dropped_total", "Messages refused by decoding.",
    l->msgs_bad + l->msgs_mismatch);
  C("positions_ingested_total", "Positions received in results.",
    l->positions_in);
  C("leases_expired_total", "Work leases that expired.", l->leases_expired);
  C("results_duplicate_total", "Duplicate or stale results dropped.",
    l->results_dup);
  C("spot_checked_total", "Search results the learner searched again.",
    l->spot_checked);
  C("spot_disagree_total", "Of which outside net.spot_check_tolerance.",
    l->spot_disagree);
  C("searchers_quarantined_total", "Searchers quarantined by the spot check.",
    l->quarantined);
  G("v_loss", "Mean V loss of the last iteration.", "%.6g", l->last_v_loss);
  G("q_loss", "Mean Q loss of the last iteration.", "%.6g", l->last_q_loss);
  G("iteration_seconds", "Wall time of the last iteration.", "%.3f",
    l->last_iter_s);
  G("rss_bytes", "Resident memory.", "%ld", rss_kb() * 1024);
  /* The evaluator's newest rating, read from its elo.csv in the run dir. */
  pb_elotable_row_t er;
  if (pb_elotable_latest(l->cfg.run.dir, l->cfg.eval.opponents, &er, NULL) == 0) {
    G("eval_version", "Newest version the evaluator rated.", "%" PRIu64,
      er.version);
    if (isfinite(er.elo))
      G("eval_elo", "Elo of the newest rated version.", "%.1f", er.elo);
    const double acc[3] = {er.acc_q, er.acc_v, er.acc_beam};
    static const char *const agent[3] = {"greedy_q", "v_one_ply", "beam"};
    int any = 0;
    for (int k = 0; k < 3; k++) {
      if (!isfinite(acc[k])) continue;
      if (!any++)
        fprintf(f, "# HELP probs_eval_accuracy Share of optimal moves of the "
                   "newest rated version on the solved test set.\n"
                   "# TYPE probs_eval_accuracy gauge\n");
      fprintf(f, "probs_eval_accuracy{agent=\"%s\"} %.4f\n", agent[k], acc[k]);
    }
  }
#undef G
#undef C
  fclose(f);
  return buf;
}

static void on_http(void *ctx, const char *method, const char *path,
                    pb_http_response_t *res) {
  pb_learner_t *l = ctx;
  (void)method;
  if (!strcmp(path, "/status")) {
    res->status = 200;
    res->content_type = "application/json";
    res->body = status_json(l);
  } else if (!strcmp(path, "/metrics")) {
    res->status = 200;
    res->content_type = "text/plain; version=0.0.4";
    res->body = metrics_text(l);
  } else if (pb_web_handle(l->web, path, pb_http_query(l->http), res)) {
    return; /* the page, /api/history, /api/move (web/web.h) */
  } else {
    res->status = 404;
    res->content_type = "text/plain";
    res->body = strdup("not found: try /, /status or /metrics\n");
  }
  if (res->body) res->body_len = strlen(res->body);
}

/* ---- lifecycle -------------------------------------------------------- */

/* From the ZAP thread: a refused peer is worth a warning. */
static void zap_note(void *ctx, int accepted, const char *address,
                     const char *key) {
  pb_learner_t *l = ctx;
  if (accepted)
    pb_log_info(l->log, "CURVE: worker key %s from %s accepted", key, address);
  else
    pb_log_warn(l->log,
                "CURVE: refused a peer from %s with key %s (not in "
                "authorized_keys)",
                address, key);
}

static void note_info(void *ctx, const char *msg) {
  pb_log_info((pb_log_t *)ctx, "%s", msg);
}

static void note_warn(void *ctx, const char *msg) {
  pb_log_warn((pb_log_t *)ctx, "%s", msg);
}

/* Size of run_dir/name, or -1 if it does not exist. */
static long long file_size(const char *run_dir, const char *name) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", run_dir, name);
  struct stat st;
  return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* A resume found no checkpoint. A run dir without history starts from
 * scratch; one with history (metrics.jsonl or elo.csv) lost its
 * checkpoints: an error, unless PB_LEARNER_RESTART says to start over, in
 * which case the history is moved aside (NAME.before-restart-UNIXTIME), not
 * deleted. */
static int start_over(const char *run_dir, int flags, pb_log_t *log,
                      pb_err_t *err) {
  static const char *const hist[] = {"metrics.jsonl", "elo.csv"};
  int has = 0;
  for (int i = 0; i < 2; i++) has |= file_size(run_dir, hist[i]) > 0;
  if (!has) {
    pb_log_info(log, "no checkpoint in %s/checkpoints yet: starting from "
                "scratch", run_dir);
    return 0;
  }
  if (!(flags & PB_LEARNER_RESTART))
    return pb_err_set(err, PB_ENOTFOUND,
                      "%s has the history of a run (metrics.jsonl, elo.csv) "
                      "but no readable checkpoint in checkpoints/: not "
                      "starting over on top of it (--restart starts over, "
                      "moving that history aside)",
                      run_dir);
  long now = (long)time(NULL);
  for (int i = 0; i < 2; i++) {
    if (file_size(run_dir, hist[i]) < 0) continue;
    char from[4200], to[4300];
    snprintf(from, sizeof from, "%s/%s", run_dir, hist[i]);
    snprintf(to, sizeof to, "%s.before-restart-%ld", from, now);
    if (rename(from, to) != 0)
      return pb_err_set(err, PB_EIO, "%s: cannot move aside: %s", from,
                        strerror(errno));
    pb_log_warn(log, "--restart: no readable checkpoint; %s moved to %s",
                from, to);
  }
  return 0;
}

pb_learner_t *pb_learner_new(const pb_config_t *cfg, int flags, pb_log_t *log,
                             pb_err_t *err) {
  pb_learner_t *l = calloc(1, sizeof *l);
  if (l == NULL) {
    pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    return NULL;
  }
  l->cfg = *cfg;
  l->log = log;
  l->lock_fd = -1;
  l->t_start = pb_now();
  pb_episodes_init(&l->eps);
  if (pb_config_check(cfg, err) != 0) goto fail;
  l->g = pb_game_by_name(cfg->game);
  snprintf(l->run_id, sizeof l->run_id, "%s", cfg->run.name);
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  snprintf(l->sender, sizeof l->sender, "learner-%.40s-%ld", host,
           (long)getpid());

  char path[4200], latest[4200] = "";
  snprintf(path, sizeof path, "%s/checkpoints", cfg->run.dir);
  if (pb_mkdir_p(path, err) != 0) goto fail;
  /* One learner per run dir. */
  if ((l->lock_fd = pb_rundir_lock_learner(cfg->run.dir, err)) < 0) {
    l->lock_fd = -1;
    goto fail;
  }
  snprintf(path, sizeof path, "%s/checkpoints", cfg->run.dir);
  /* Leftovers of a checkpoint write that a crash cut short. */
  if (pb_ckpt_clean_tmp(path, time(NULL), note_info, log, err) < 0)
    goto fail;
  if (flags & (PB_LEARNER_RESUME | PB_LEARNER_RESTART)) {
    int rc = pb_ckpt_scan(path, "ckpt", latest, sizeof latest, NULL,
                          note_warn, log, err);
    if (rc == PB_ENOTFOUND) {
      latest[0] = '\0';
      if (start_over(cfg->run.dir, flags, log, err) != 0) goto fail;
    } else if (rc != 0) {
      goto fail;
    }
  }
  snprintf(path, sizeof path, "%s/metrics.jsonl", cfg->run.dir);
  if ((l->metrics = pb_metrics_new(path, err)) == NULL) goto fail;
  if ((l->learn = pb_learn_new(cfg, err)) == NULL) goto fail;
  if (latest[0] != '\0') {
    if (pb_learn_load(l->learn, latest, NULL, NULL, err) != 0) goto fail;
    pb_log_info(log, "resumed from %s: version %" PRIu64, latest,
                pb_learn_version(l->learn));
  }
  if (pb_learn_version(l->learn) == 0) {
    pb_rundir_ckpt_path(cfg->run.dir, 0, path, sizeof path);
    if (pb_learn_save(l->learn, path, NULL, 0, err) != 0) goto fail;
  }
  {
    char *yaml = NULL;
    if (pb_config_to_yaml(cfg, &yaml, err) != 0) goto fail;
    snprintf(path, sizeof path, "%s/config.yaml", cfg->run.dir);
    int rc = pb_write_file(path, yaml, strlen(yaml), err);
    free(yaml);
    if (rc != 0) goto fail;
  }
  /* AlphaZero has no V: only the policy+value network is served, as Q. */
  if ((pb_learn_v(l->learn) != NULL &&
       pb_nn_weights_save(pb_learn_v(l->learn), pb_learn_version(l->learn),
                          &l->vw.buf, &l->vw.len, err) != 0) ||
      pb_nn_weights_save(pb_learn_q(l->learn), pb_learn_version(l->learn),
                         &l->qw.buf, &l->qw.len, err) != 0)
    goto fail;
  l->vw.version = l->qw.version = pb_learn_version(l->learn);

  l->max_items = (size_t)(cfg->train.replay_capacity > cfg->train.episodes_per_iter
                              ? cfg->train.replay_capacity
                              : cfg->train.episodes_per_iter) + 1;
  /* Different nonces: an item id names one queue only. */
  if ((l->wq = pb_workq_new(l->max_items, pb_now() * 1e6, err)) == NULL ||
      (l->spq = pb_workq_new(l->max_items, pb_now() * 1e6 + 7919, err)) == NULL)
    goto fail;
  pb_workq_set_max_lease(l->wq, cfg->net.lease_max_ms / 1000.0);
  pb_workq_set_max_lease(l->spq, cfg->net.lease_max_ms / 1000.0);
  size_t nsp = (size_t)(cfg->train.episodes_per_iter + cfg->net.item_episodes - 1) /
               (size_t)cfg->net.item_episodes;
  l->item_eps = calloc(nsp, sizeof *l->item_eps);
  l->max_peers = cfg->net.max_workers;
  l->peers = calloc((size_t)l->max_peers, sizeof *l->peers);
  if (l->item_eps == NULL || l->peers == NULL) {
    pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    goto fail;
  }
  for (size_t i = 0; i < nsp; i++) pb_episodes_init(&l->item_eps[i]);
  if (cfg->net.spot_check > 0) {
    l->spot = pb_spot_new(l->g, cfg->search.expansions, cfg->search.max_depth,
                          cfg->search.parallel, pb_learn_eval_batch(cfg->search.parallel, cfg->search.expansions, l->g->num_actions, cfg->train.selfplay_parallel),
                          (uint32_t)cfg->search.cache_entries, err);
    if (l->spot == NULL) goto fail;
    l->spot_idx = malloc((size_t)cfg->net.item_states * sizeof *l->spot_idx);
    if (l->spot_idx == NULL) {
      pb_err_set(err, PB_ENOMEM, "learner: out of memory");
      goto fail;
    }
    /* Not the run's seed: workers know that one. */
    pb_rng_seed(&l->spot_rng, pb_mix64((uint64_t)(pb_now() * 1e9)),
                (uint64_t)getpid());
  }

  /* Sockets. */
  l->zctx = zmq_ctx_new();
  l->router = zmq_socket(l->zctx, ZMQ_ROUTER);
  l->pub = zmq_socket(l->zctx, ZMQ_PUB);
  if (l->router == NULL || l->pub == NULL) {
    pb_err_set(err, PB_EIO, "cannot create ZeroMQ sockets: %s",
               zmq_strerror(errno));
    goto fail;
  }
  int hwm = cfg->net.hwm, linger = 0, mandatory = 1;
  /* Nothing larger than a worker's biggest honest message gets buffered. */
  int64_t maxsize = (int64_t)pb_msg_max_worker_bytes(
      l->g, cfg->net.item_episodes, cfg->train.max_turns, cfg->net.item_states);
  zmq_setsockopt(l->router, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(l->router, ZMQ_RCVHWM, &hwm, sizeof hwm);
  zmq_setsockopt(l->router, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(l->router, ZMQ_MAXMSGSIZE, &maxsize, sizeof maxsize);
  zmq_setsockopt(l->router, ZMQ_ROUTER_MANDATORY, &mandatory, sizeof mandatory);
  zmq_setsockopt(l->pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(l->pub, ZMQ_LINGER, &linger, sizeof linger);
  if (cfg->net.curve_dir[0] != '\0') {
    /* CURVE: only the workers of authorized_keys get in. */
    pb_curve_keys_t keys;
    snprintf(path, sizeof path, "%s/learner.key", cfg->net.curve_dir);
    if (pb_curve_load(path, 1, &keys, err) != 0) goto fail;
    snprintf(path, sizeof path, "%s/authorized_keys", cfg->net.curve_dir);
    if ((l->zap = pb_zap_start(l->zctx, path, zap_note, l, err)) == NULL ||
        pb_curve_server(l->router, &keys, err) != 0 ||
        pb_curve_server(l->pub, &keys, err) != 0)
      goto fail;
    pb_log_info(log, "CURVE on: learner key %s, %d authorized worker key(s)",
                keys.pub, pb_zap_count(l->zap));
    memset(&keys, 0, sizeof keys);
  }
  if (zmq_bind(l->router, cfg->net.work_endpoint) != 0) {
    pb_err_set(err, PB_EIO, "cannot bind net.work_endpoint %s: %s",
               cfg->net.work_endpoint, zmq_strerror(errno));
    goto fail;
  }
  if (zmq_bind(l->pub, cfg->net.pub_endpoint) != 0) {
    pb_err_set(err, PB_EIO, "cannot bind net.pub_endpoint %s: %s",
               cfg->net.pub_endpoint, zmq_strerror(errno));
    goto fail;
  }

  /* The loop. */
  if (uv_loop_init(&l->loop) != 0) {
    pb_err_set(err, PB_EIO, "cannot create the event loop");
    goto fail;
  }
  l->loop_inited = 1;
  int fd;
  size_t fdl = sizeof fd;
  zmq_getsockopt(l->router, ZMQ_FD, &fd, &fdl);
  uv_poll_init(&l->loop, &l->zpoll, fd);
  uv_idle_init(&l->loop, &l->zidle);
  uv_timer_init(&l->loop, &l->tick);
  uv_signal_init(&l->loop, &l->sigint);
  uv_signal_init(&l->loop, &l->sigterm);
  l->zpoll.data = l->zidle.data = l->tick.data = l;
  l->sigint.data = l->sigterm.data = l;
  l->handles_open = 1;
  if (cfg->net.http_port > 0) {
    l->http = pb_http_new(&l->loop, cfg->net.http_bind, cfg->net.http_port,
                          on_http, l, err);
    if (l->http == NULL) goto fail;
    if ((l->web = pb_web_new(cfg, err)) == NULL) goto fail;
  }
  return l;
fail:
  pb_learner_destroy(&l);
  return NULL;
}

int pb_learner_run(pb_learner_t *l, pb_err_t *err) {
  uv_poll_start(&l->zpoll, UV_READABLE, on_zpoll);
  uv_timer_start(&l->tick, on_tick, 100, 100);
  uv_signal_start(&l->sigint, on_signal, SIGINT);
  uv_signal_start(&l->sigterm, on_signal, SIGTERM);
  pb_log_info(l->log,
              "learner %s: run '%s', game %s, algorithm %s, version %" PRIu64
              " of %d, work %s, announcements %s, http %d, V %ld params, "
              "%s %ld params on %s",
              l->sender, l->run_id, l->g->name, l->cfg.algorithm,
              pb_learn_version(l->learn), l->cfg.train.iterations,
              l->cfg.net.work_endpoint, l->cfg.net.pub_endpoint,
              l->cfg.net.http_port,
              pb_learn_v(l->learn) ? pb_nn_param_count(pb_learn_v(l->learn))
                                   : 0L,
              pb_learn_alphazero(l->learn) ? "policy+value" : "Q",
              pb_nn_param_count(pb_learn_q(l->learn)),
              pb_nn_device(pb_learn_q(l->learn)));
  if (pb_learn_version(l->learn) >= (uint64_t)l->cfg.train.iterations) {
    l->phase = PH_DONE;
    l->done_at = now(l);
    pb_log_info(l->log, "nothing to do: version %" PRIu64 " is the last",
                pb_learn_version(l->learn));
    announce(l);
  } else {
    start_selfplay(l);
  }
  uv_run(&l->loop, UV_RUN_DEFAULT);
  if (l->fatal) {
    /* The loop was stopped with handles open: close them and let the
     * running job, if any, finish before freeing. */
    shutdown_loop(l);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    if (err) *err = l->fatal_err;
    return l->fatal_err.code ? l->fatal_err.code : PB_EIO;
  }
  pb_log_info(l->log, "learner stopped at version %" PRIu64,
              pb_learn_version(l->learn));
  return 0;
}

void pb_learner_destroy(pb_learner_t **pl) {
  if (pl == NULL || *pl == NULL) return;
  pb_learner_t *l = *pl;
  if (l->handles_open) {
    shutdown_loop(l);
    uv_run(&l->loop, UV_RUN_DEFAULT);
  }
  if (l->loop_inited) uv_loop_close(&l->loop);
  if (l->lock_fd >= 0) close(l->lock_fd);
  if (l->router) zmq_close(l->router);
  pb_zap_stop(&l->zap);
  if (l->pub) zmq_close(l->pub);
  if (l->zctx) zmq_ctx_term(l->zctx);
  pb_msg_buf_free(&l->obuf);
  pb_learn_destroy(&l->learn);
  pb_workq_destroy(&l->wq);
  pb_workq_destroy(&l->spq);
  if (l->item_eps) {
    size_t nsp = (size_t)(l->cfg.train.episodes_per_iter +
                          l->cfg.net.item_episodes - 1) /
                 (size_t)l->cfg.net.item_episodes;
    for (size_t i = 0; i < nsp; i++) pb_episodes_free(&l->item_eps[i]);
    free(l->item_eps);
  }
  pb_episodes_free(&l->eps);
  free(l->qt);
  free(l->vw.buf);
  free(l->qw.buf);
  free(l->vw_new.buf);
  free(l->qw_new.buf);
  free(l->peers);
  pb_spot_destroy(&l->spot);
  free(l->spot_idx);
  spotq_free(&l->spot_wait);
  spotq_free(&l->spot_run);
  free(l->spot_mine);
  free(l->item_owner);
  pb_metrics_destroy(&l->metrics);
  pb_web_destroy(&l->web);
  free(l);
  *pl = NULL;
}
