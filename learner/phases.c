/* phases.c - the phases of one iteration (the state machine in learner.c's
 * top comment): self-play opened and done, job TRAIN_V (train V, find the
 * distinct positions), the search, job TRAIN_Q (train Q, checkpoint,
 * retention), then the next iteration or DONE. The jobs run on libuv's
 * thread pool; while one runs, the learner's networks belong to it, and
 * job_done, back on the loop thread, swaps in the weights buffers it made.
 * The results that fill a phase come in through peers.c. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "rundir.h"
#include "linear.h"
#include "tdnet.h"

/* ---- phases ----------------------------------------------------------- */

static void start_job(pb_learner_t *l, int kind);

/* Opens the self-play items of iteration `iter`. */
static int open_selfplay(pb_learner_t *l, uint64_t iter) {
  pb_err_t err;
  const pb_config_t *c = &l->cfg;
  l->n_sp_items = (size_t)(c->train.episodes_per_iter + c->net.item_episodes - 1) /
                  (size_t)c->net.item_episodes;
  for (size_t i = 0; i < l->n_sp_items; i++) pb_episodes_clear(&l->item_eps[i]);
  if (pb_workq_reset(l->spq, l->n_sp_items, &err) != 0) {
    pb__set_fatal(l, &err);
    return err.code;
  }
  l->sp_iter = iter;
  return 0;
}

void pb__start_selfplay(pb_learner_t *l) {
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
  pb__announce(l);
  if (pb_workq_finished(l->spq)) pb__selfplay_done(l);
}

void pb__selfplay_done(pb_learner_t *l) {
  pb_err_t err;
  pb_episodes_clear(&l->eps);
  for (size_t i = 0; i < l->n_sp_items; i++)
    if (pb_episodes_append(&l->eps, &l->item_eps[i], &err) != 0) {
      pb__set_fatal(l, &err);
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
  if (pb__pipelined(l) && next <= (uint64_t)l->cfg.train.iterations &&
      !l->stopping && open_selfplay(l, next) != 0)
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
   * visit counts and outcomes at once. td: the same path, TD(0) on V. */
  if (pb_learn_alphazero(l->learn) || pb_config_td(&l->cfg)) {
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
  char desc[96];
  pb_log_info(l->log,
              "iteration %" PRIu64 ": %s of %zu distinct positions in %zu "
              "items",
              pb_learn_version(l->learn) + 1,
              pb_config_search_desc(&l->cfg, desc, sizeof desc), l->n_uniq,
              l->n_bs_items);
  pb__announce(l);
}

/* ---- jobs on the thread pool ------------------------------------------ */

/* Algorithm td: TD(0) over the iteration's games in order (common/train/td.h),
 * from the weights of V, into V; then the new V's weights to serve. */
static int td_job(pb_learner_t *l) {
  double t = pb_now();
  pb_nn_t *v = pb_learn_v(l->learn);
  pb_linear_t lin;
  pb_td_opts_t o;
  pb_td_opts_from_config(&l->cfg, &o);
  int rc = pb_linear_init(&lin, l->g, &l->job_err);
  if (rc == 0) rc = pb_tdnet_get(v, &lin, &l->job_err);
  if (rc != 0) return rc;
  const uint64_t game0 =
      pb_learn_version(l->learn) * (uint64_t)l->cfg.train.episodes_per_iter;
  pb_td_learn(&lin, &o, &l->eps, game0, &l->tdst);
  l->td_wcrc = pb_td_weights_crc(&lin);
  l->n_uniq = 0;
  memset(&l->qst, 0, sizeof l->qst);
  if ((rc = pb_tdnet_set(v, &lin, &l->job_err)) != 0 ||
      (rc = pb_learn_end_iteration(l->learn, &l->eps, NULL, &l->job_err)) != 0)
    return rc;
  l->qst.seconds = pb_now() - t;
  l->vw_new.version = pb_learn_version(l->learn);
  return pb_nn_weights_save(v, l->vw_new.version, &l->vw_new.buf,
                            &l->vw_new.len, &l->job_err);
}

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
  } else if (pb_config_td(&l->cfg)) {
    l->job_rc = td_job(l);
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
      pb__shutdown_loop(l);
      return;
    }
    start_search(l);
  } else {
    swap_weights(&l->qw, &l->qw_new);
    if (pb_config_td(&l->cfg)) swap_weights(&l->vw, &l->vw_new);
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
  l->phase = kind;
  l->job_kind = kind;
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
              l->n_uniq / (l->t_search + 1e-9));
  start_job(l, PH_TRAIN_Q);
}

