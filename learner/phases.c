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
  if (pb_iter_open_selfplay(l->iter, iter, &err) != 0 ||
      pb_workq_reset(l->spq, pb_iter_selfplay_items(l->iter), &err) != 0) {
    pb__set_fatal(l, &err);
    return err.code;
  }
  return 0;
}

void pb__start_selfplay(pb_learner_t *l) {
  const pb_config_t *c = &l->cfg;
  const uint64_t iter = pb_learn_version(l->learn) + 1;
  /* Pipelined, the items may be out (or in) already. */
  int early = pb_iter_selfplay_iter(l->iter) == iter;
  if (!early && open_selfplay(l, iter) != 0) return;
  l->phase = PH_SELFPLAY;
  l->t_iter = l->t_phase = now(l);
  pb_workq_counts_t cn;
  pb_workq_counts(l->spq, &cn);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": self-play of %d episodes in %zu items "
              "with Q version %" PRIu64 "%s",
              iter, c->train.episodes_per_iter,
              pb_iter_selfplay_items(l->iter), pb_learn_version(l->learn),
              early ? " (pipelined: started with the previous version)" : "");
  if (early)
    pb_log_info(l->log,
                "iteration %" PRIu64 ": %zu of %zu self-play items already "
                "done, %zu leased",
                iter, cn.done, cn.total, cn.leased);
  pb__announce(l);
  if (pb_workq_finished(l->spq)) pb__selfplay_done(l);
}

void pb__selfplay_done(pb_learner_t *l) {
  pb_err_t err;
  const uint64_t next = pb_iter_selfplay_iter(l->iter) + 1;
  pb__rdrop_selfplay(l); /* who played the episodes, for the window */
  if (pb_iter_selfplay_done(l->iter, &err) != 0) {
    pb__set_fatal(l, &err);
    return;
  }
  if (pb__pipelined(l) && next <= (uint64_t)l->cfg.train.iterations &&
      !l->stopping && open_selfplay(l, next) != 0)
    return;
  l->t_selfplay = now(l) - l->t_phase;
  const pb_episodes_t *e = pb_iter_episodes(l->iter);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": self-play done: %zu episodes, %zu "
              "positions in %.2fs (%.0f positions/s), Q staleness up to %"
              PRIu64 "; training",
              pb_learn_version(l->learn) + 1, e->n_eps, e->n_states,
              l->t_selfplay, e->n_states / (l->t_selfplay + 1e-9),
              pb_iter_staleness(l->iter));
  /* Without a search (AlphaZero, td) the whole training is one job. */
  l->t_search = 0;
  start_job(l, pb_iter_searches(l->iter) ? PH_PREPARE_SEARCH : PH_TRAIN);
}

static void start_search(pb_learner_t *l) {
  pb_err_t err;
  l->n_bs_items = pb_iter_search_items(l->iter);
  if (pb_workq_reset(l->wq, l->n_bs_items, &err) != 0) {
    pb__set_fatal(l, &err);
    return;
  }
  if (l->n_bs_items > l->item_owner_cap) {
    owner_t *o = realloc(l->item_owner, l->n_bs_items * sizeof *o);
    if (o == NULL) {
      pb_err_set(&err, PB_ENOMEM, "learner: out of memory");
      pb__set_fatal(l, &err);
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
  char desc[160];
  pb_iter_algo(l->iter)->settings(&l->cfg, desc, sizeof desc);
  pb_log_info(l->log,
              "iteration %" PRIu64 ": %s of %zu distinct positions in %zu "
              "items",
              pb_learn_version(l->learn) + 1, desc,
              pb_iter_search_positions(l->iter), l->n_bs_items);
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
  pb_err_clear(&l->job_err);
  /* OpenMP's thread count is per calling thread: a pool thread starts with
   * the machine's, which would both oversubscribe the cores and change the
   * order of float sums against the in-process trainer. */
  pb_nn_set_threads(l->cfg.model.threads);
  pb_learn_t *learn = l->learn;
  if (l->job_kind == PH_PREPARE_SEARCH) {
    /* Before the search: V_k, served as version k while Q is still
     * Q_{k-1}, and the positions to search. */
    double t = pb_now();
    l->job_rc = pb_iter_train_before(l->iter, &l->job_err);
    if (l->job_rc == 0)
      l->job_rc = weights(pb_learn_v(learn), pb_learn_version(learn) + 1,
                          &l->vw_new, &l->job_err);
    l->t_train_v = pb_now() - t;
    return;
  }
  /* The rest of the iteration (all of it without a search), the
   * checkpoint and the weights to serve. */
  if (!pb_iter_searches(l->iter))
    l->job_rc = pb_iter_train_before(l->iter, &l->job_err);
  if (l->job_rc == 0) l->job_rc = pb_iter_train_after(l->iter, &l->job_err);
  if (l->job_rc == 0) {
    double t = pb_now();
    atomic_store(&l->ckpt_since, t);
    l->job_rc = pb_iter_save(l->iter, l->log, &l->job_err);
    atomic_store(&l->ckpt_since, 0.0);
    l->job_ckpt_s = pb_now() - t;
  }
  const uint64_t v = pb_learn_version(learn);
  if (l->job_rc == 0)
    l->job_rc = weights(pb_learn_q(learn), v, &l->qw_new, &l->job_err);
  if (l->job_rc == 0 && pb_iter_v_after(l->iter))
    l->job_rc = weights(pb_learn_v(learn), v, &l->vw_new, &l->job_err);
}

static void swap_weights(pb_learner_t *l, wbuf_t *cur, wbuf_t *nw) {
  pb__weights_drop(l); /* replies of the weights served until now */
  free(cur->buf);
  *cur = *nw;
  memset(nw, 0, sizeof *nw);
}

static void job_done(uv_work_t *req, int status) {
  pb_learner_t *l = req->data;
  int kind = l->job_kind;
  l->job_kind = 0;
  if (status != 0 || l->job_rc != 0) {
    if (status != 0)
      pb_err_set(&l->job_err, PB_EIO, "job cancelled: %s", uv_strerror(status));
    pb__set_fatal(l, &l->job_err);
    return;
  }
  pb__rdrop_job_done(l, kind); /* the window is the loop's again */
  if (kind == PH_PREPARE_SEARCH) {
    swap_weights(l, &l->vw, &l->vw_new);
    const pb_learn_stats_t *vst = pb_iter_stats_v(l->iter);
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
    swap_weights(l, &l->qw, &l->qw_new);
    if (l->vw_new.buf != NULL) swap_weights(l, &l->vw, &l->vw_new);
    pb__write_iteration_metrics(l);
    if (l->stopping) {
      pb__shutdown_loop(l);
      return;
    }
    if (pb_learn_version(l->learn) >= (uint64_t)l->cfg.train.iterations) {
      l->phase = PH_DONE;
      l->done_at = now(l);
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
  l->phase = kind;
  l->job_kind = kind;
  l->job_rc = 0;
  l->job.data = l;
  pb__announce(l);
  int rc = uv_queue_work(&l->loop, &l->job, job_work, job_done);
  if (rc != 0) {
    pb_err_t err;
    pb_err_set(&err, PB_EIO, "cannot start a job: %s", uv_strerror(rc));
    l->job_kind = 0;
    pb__set_fatal(l, &err);
  }
}

void pb__search_maybe_done(pb_learner_t *l) {
  if (l->phase != PH_SEARCH || !pb_workq_finished(l->wq) || l->spot_running ||
      l->spot_wait.n > 0 || l->fatal)
    return;
  l->t_search = now(l) - l->t_phase;
  pb_log_info(l->log,
              "iteration %" PRIu64 ": search done in %.2fs (%.0f states/s); "
              "training Q",
              pb_learn_version(l->learn) + 1, l->t_search,
              pb_iter_search_positions(l->iter) / (l->t_search + 1e-9));
  start_job(l, PH_TRAIN);
}

