/* phases.c - the phases of one iteration (the state machine in learner.c's
 * top comment): self-play opened and done, job PREPARE_SEARCH (PROBS:
 * train V; find the distinct positions), the search, job TRAIN (PROBS:
 * train Q; checkpoint, retention), then the next iteration or DONE: the sequence of
 * common/algo/iteration.h, with the phases that need workers handed out
 * and the training on libuv's thread pool. The jobs run on libuv's
 * thread pool; while one runs, the learner's networks belong to it, and
 * job_done, back on the loop thread, swaps in the weights buffers it made.
 * The results that fill a phase come in through peers.c. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

/* ---- phases ----------------------------------------------------------- */

static void start_job(pb_learner_t *l, int kind);

/* Opens the self-play items of iteration `iter` (iteration.h). */
static int open_selfplay(pb_learner_t *l, uint64_t iter) {
  pb_err_t err;
  if (pb_iter_open_selfplay(l->it.iter, iter, &err) != 0 ||
      pb_workq_reset(l->it.spq, pb_iter_selfplay_items(l->it.iter), &err) != 0) {
    pb__set_fatal(l, &err);
    return err.code;
  }
  return 0;
}

void pb__start_selfplay(pb_learner_t *l) {
  const pb_config_t *c = &l->cfg;
  const uint64_t iter = pb_learn_version(l->learn) + 1;
  /* Pipelined, the items may be out (or in) already. */
  int early = pb_iter_selfplay_iter(l->it.iter) == iter;
  if (!early && open_selfplay(l, iter) != 0) return;
  l->it.phase = PH_SELFPLAY;
  l->it.t_iter = l->it.t_phase = now(l);
  pb_workq_counts_t cn;
  pb_workq_counts(l->it.spq, &cn);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": self-play of %d episodes in %zu items "
              "with Q version %" PRIu64 "%s",
              iter, c->train.episodes_per_iter,
              pb_iter_selfplay_items(l->it.iter), pb_learn_version(l->learn),
              early ? " (pipelined: started with the previous version)" : "");
  if (early)
    pb_log_info(l->log,
                "iteration %" PRIu64 ": %zu of %zu self-play items already "
                "done, %zu leased",
                iter, cn.done, cn.total, cn.leased);
  pb__announce(l);
  if (pb_workq_finished(l->it.spq)) pb__selfplay_done(l);
}

void pb__selfplay_done(pb_learner_t *l) {
  pb_err_t err;
  /* The learner's reference games of this phase judge its results first
   * (selfref.c): the job's end calls this again. */
  if (l->ref.running) return;
  const uint64_t next = pb_iter_selfplay_iter(l->it.iter) + 1;
  pb__rdrop_selfplay(l); /* who played the episodes, for the window */
  if (pb_iter_selfplay_done(l->it.iter, &err) != 0) {
    pb__set_fatal(l, &err);
    return;
  }
  if (pb__pipelined(l) && next <= (uint64_t)l->cfg.train.iterations &&
      !l->stopping && open_selfplay(l, next) != 0)
    return;
  l->it.t_selfplay = now(l) - l->it.t_phase;
  const pb_episodes_t *e = pb_iter_episodes(l->it.iter);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": self-play done: %zu episodes, %zu "
              "positions in %.2fs (%.0f positions/s), Q staleness up to %"
              PRIu64 "; training",
              pb_learn_version(l->learn) + 1, e->n_eps, e->n_states,
              l->it.t_selfplay, e->n_states / (l->it.t_selfplay + 1e-9),
              pb_iter_staleness(l->it.iter));
  /* Without a search (AlphaZero, td) the whole training is one job. */
  l->it.t_search = 0;
  start_job(l, pb_iter_searches(l->it.iter) ? PH_PREPARE_SEARCH : PH_TRAIN);
}

static void start_search(pb_learner_t *l) {
  pb_err_t err;
  l->it.n_bs_items = pb_iter_search_items(l->it.iter);
  if (pb_workq_reset(l->it.wq, l->it.n_bs_items, &err) != 0) {
    pb__set_fatal(l, &err);
    return;
  }
  if (pb__owners_search_phase(l, l->it.n_bs_items, &err) != 0) {
    pb__set_fatal(l, &err);
    return;
  }
  l->it.phase = PH_SEARCH;
  l->it.t_phase = now(l);
  char desc[160];
  pb_iter_algo(l->it.iter)->settings(&l->cfg, desc, sizeof desc);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": %s of %zu distinct positions in %zu "
              "items",
              pb_learn_version(l->learn) + 1, desc,
              pb_iter_search_positions(l->it.iter), l->it.n_bs_items);
  pb__announce(l);
}

/* ---- jobs on the thread pool ------------------------------------------ */

/* The weights of net, as version `version`, into *w. */
static int weights(pb_nn_t *net, uint64_t version, wbuf_t *w, pb_err_t *err) {
  w->version = version;
  return pb_nn_weights_save(net, version, &w->buf, &w->len, err);
}

static void job_work(uv_work_t *req) {
  pb_learner_t *l = req->data;
  pb_err_clear(&l->it.job_err);
  /* OpenMP's thread count is per calling thread: a pool thread starts with
   * the machine's, which would both oversubscribe the cores and change the
   * order of float sums against the in-process trainer. */
  pb_nn_set_threads(l->cfg.model.threads);
  pb_learn_t *learn = l->learn;
  if (l->it.job_kind == PH_PREPARE_SEARCH) {
    /* Before the search: V_k, served as version k while Q is still
     * Q_{k-1}, and the positions to search. */
    double t = pb_now();
    l->it.job_rc = pb_iter_train_before(l->it.iter, &l->it.job_err);
    if (l->it.job_rc == 0)
      l->it.job_rc = weights(pb_learn_v(learn), pb_learn_version(learn) + 1,
                          &l->it.vw_new, &l->it.job_err);
    l->it.t_train_v = pb_now() - t;
    return;
  }
  /* The rest of the iteration (all of it without a search), the
   * checkpoint and the weights to serve. */
  if (!pb_iter_searches(l->it.iter))
    l->it.job_rc = pb_iter_train_before(l->it.iter, &l->it.job_err);
  if (l->it.job_rc == 0) l->it.job_rc = pb_iter_train_after(l->it.iter, &l->it.job_err);
  if (l->it.job_rc == 0) {
    double t = pb_now();
    atomic_store(&l->it.ckpt_since, t);
    l->it.job_rc = pb_iter_save(l->it.iter, l->log, &l->it.job_err);
    atomic_store(&l->it.ckpt_since, 0.0);
    l->it.job_ckpt_s = pb_now() - t;
  }
  const uint64_t v = pb_learn_version(learn);
  if (l->it.job_rc == 0)
    l->it.job_rc = weights(pb_learn_q(learn), v, &l->it.qw_new, &l->it.job_err);
  if (l->it.job_rc == 0 && pb_iter_v_after(l->it.iter))
    l->it.job_rc = weights(pb_learn_v(learn), v, &l->it.vw_new, &l->it.job_err);
}

static void job_done(uv_work_t *req, int status) {
  pb_learner_t *l = req->data;
  int kind = l->it.job_kind;
  l->it.job_kind = 0;
  if (status != 0 || l->it.job_rc != 0) {
    if (status != 0)
      pb_err_set(&l->it.job_err, PB_EIO, "job cancelled: %s", uv_strerror(status));
    pb__set_fatal(l, &l->it.job_err);
    return;
  }
  pb__rdrop_job_done(l, kind); /* the window is the loop's again */
  if (kind == PH_PREPARE_SEARCH) {
    pb__weights_serve(l, PB_WHICH_V, &l->it.vw_new);
    const pb_learn_stats_t *vst = pb_iter_stats_v(l->it.iter);
    if (pb_learn_v_first(l->learn))
      pb_log_info(l->log,
                  "iteration %" PRIu64 ": V trained in %.2fs on %zu samples "
                  "(loss %.4f -> %.4f)",
                  pb_learn_version(l->learn) + 1, vst->seconds, vst->samples,
                  vst->loss_first, vst->loss_last);
    if (l->stopping) {
      pb__shutdown_loop(l);
      return;
    }
    start_search(l);
  } else {
    pb__weights_serve(l, PB_WHICH_Q, &l->it.qw_new);
    if (l->it.vw_new.buf != NULL) pb__weights_serve(l, PB_WHICH_V, &l->it.vw_new);
    pb__write_iteration_metrics(l);
    if (l->stopping) {
      pb__shutdown_loop(l);
      return;
    }
    if (pb_learn_version(l->learn) >= (uint64_t)l->cfg.train.iterations) {
      l->it.phase = PH_DONE;
      l->it.done_at = now(l);
      pb_log_info(l->log, "all %d iterations done; telling workers to stop",
                  l->cfg.train.iterations);
      pb__announce(l);
    } else {
      pb__start_selfplay(l);
    }
  }
}

static void start_job(pb_learner_t *l, int kind) {
  if (kind == PH_TRAIN) pb__rdrop_train(l); /* the window's tags */
  l->it.phase = kind;
  l->it.job_kind = kind;
  l->it.job_rc = 0;
  l->it.job.data = l;
  pb__announce(l);
  int rc = uv_queue_work(&l->loop, &l->it.job, job_work, job_done);
  if (rc != 0) {
    pb_err_t err;
    pb_err_set(&err, PB_EIO, "cannot start a job: %s", uv_strerror(rc));
    l->it.job_kind = 0;
    pb__set_fatal(l, &err);
  }
}

void pb__search_maybe_done(pb_learner_t *l) {
  if (l->it.phase != PH_SEARCH || !pb_workq_finished(l->it.wq) || l->spot.running ||
      l->spot.wait.n > 0 || l->fatal)
    return;
  l->it.t_search = now(l) - l->it.t_phase;
  pb_log_info(l->log,
              "iteration %" PRIu64 ": search done in %.2fs (%.0f states/s); "
              "training Q",
              pb_learn_version(l->learn) + 1, l->it.t_search,
              pb_iter_search_positions(l->it.iter) / (l->it.t_search + 1e-9));
  start_job(l, PH_TRAIN);
}

/* ---- the iteration's state ------------------------------------------- */

int pb__iter_init(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *cfg = &l->cfg;
  if ((l->it.iter = pb_iter_new(cfg, l->learn, err)) == NULL) return err->code;
  l->it.max_items =
      (size_t)(cfg->train.replay_capacity > cfg->train.episodes_per_iter
                   ? cfg->train.replay_capacity
                   : cfg->train.episodes_per_iter) +
      1;
  /* Different nonces: an item id names one queue only. */
  if ((l->it.wq = pb_workq_new(l->it.max_items, pb_now() * 1e6, err)) == NULL ||
      (l->it.spq = pb_workq_new(l->it.max_items, pb_now() * 1e6 + 7919,
                                err)) == NULL)
    return err->code;
  pb_workq_set_max_lease(l->it.wq, cfg->net.lease_max_ms / 1000.0);
  pb_workq_set_max_lease(l->it.spq, cfg->net.lease_max_ms / 1000.0);
  /* An item that comes back goes to another worker first. */
  pb_workq_set_avoid(l->it.wq, cfg->net.lease_ms / 1000.0);
  pb_workq_set_avoid(l->it.spq, cfg->net.lease_ms / 1000.0);
  return 0;
}

void pb__iter_free(pb_learner_t *l) {
  pb_iter_destroy(&l->it.iter);
  pb_workq_destroy(&l->it.wq);
  pb_workq_destroy(&l->it.spq);
  free(l->it.vw_new.buf);
  free(l->it.qw_new.buf);
  l->it.vw_new.buf = l->it.qw_new.buf = NULL;
}

void pb__iterations_begin(pb_learner_t *l) {
  if (pb_learn_version(l->learn) >= (uint64_t)l->cfg.train.iterations) {
    l->it.phase = PH_DONE;
    l->it.done_at = now(l);
    pb_log_info(l->log, "nothing to do: version %" PRIu64 " is the last",
                pb_learn_version(l->learn));
    pb__announce(l);
  } else {
    pb__start_selfplay(l);
  }
}

/* Self-play or search waits for workers: with none the learner accepts
 * (all gone, or all refused) for net.no_workers_exit_s, the run stops
 * with an error saying so (PB_EDENIED when some were refused, PB_EAGAIN
 * when none came). */
void pb__check_starved(pb_learner_t *l, double t) {
  int role = 0;
  if (l->it.phase == PH_SELFPLAY && pb_iter_selfplay_iter(l->it.iter) != 0 &&
      !pb_workq_finished(l->it.spq))
    role = PB_ROLE_ACTOR;
  else if (l->it.phase == PH_SEARCH && !pb_workq_finished(l->it.wq))
    role = PB_ROLE_SEARCHER;
  if (role == 0 || l->stopping || pb__workers_usable(l, role) > 0) {
    if (l->it.starved_since > 0 && role != 0)
      pb_log_info(l->log, "%ss are back after %.0f s", pb_msg_role_name(role),
                  t - l->it.starved_since);
    l->it.starved_since = 0;
    return;
  }
  if (l->it.starved_since == 0) {
    l->it.starved_since = t;
    l->it.starved_warned = t;
  }
  const int limit = l->cfg.net.no_workers_exit_s;
  const int refused = pb__workers_alive(l, role);
  if (t - l->it.starved_warned >= 60.0) {
    l->it.starved_warned = t;
    pb_log_warn(l->log,
                "no %s the learner accepts for %.0f s (%d refused as "
                "quarantined)%s",
                pb_msg_role_name(role), t - l->it.starved_since, refused,
                limit > 0 ? "; the run stops at net.no_workers_exit_s" : "");
  }
  if (limit > 0 && t - l->it.starved_since >= limit) {
    pb_err_t err;
    pb_err_set(&err, refused > 0 || l->quar.quarantined > 0 ? PB_EDENIED : PB_EAGAIN,
               "no %s worked for this run for %d s (net.no_workers_exit_s): "
               "%d connected but refused as quarantined, %" PRIu64
               " quarantined in all; %s",
               pb_msg_role_name(role), limit, refused, l->quar.quarantined,
               l->quar.quarantined > 0
                   ? "see the quarantine lines above; give each worker its "
                     "own CURVE key so that one liar cannot lock the others "
                     "out, then --resume"
                   : "start workers, then --resume");
    pb__set_fatal(l, &err);
  }
}
