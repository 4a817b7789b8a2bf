/* inproc.c - every phase of the iteration (iteration.h) in turn, in one
 * process: the items the learner would hand out, played and searched here
 * with the algorithm's own table (algo.h), in item order. */
#include "inproc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "ckpt.h"
#include "iteration.h"
#include "json.h"
#include "learn.h"
#include "neteval.h"
#include "rundir.h"
#include "util.h"

/* Everything one run holds. */
typedef struct {
  const pb_config_t *cfg;
  const pb_game_t *g;
  const pb_algo_t *algo;
  pb_log_t *log;
  pb_learn_t *learn;
  pb_iter_t *it;
  pb_neteval_t *ne;
  pb_algo_env_t env;
  void *player, *searcher;
  pb_metrics_t *metrics;
  pb_neteval_stats_t ns_last;
  double last_progress; /* the last "progress" line of metrics.jsonl */
} run_t;

static void run_free(run_t *r) {
  if (r->algo != NULL) {
    if (r->player) r->algo->player_destroy(&r->player);
    if (r->searcher) r->algo->searcher_destroy(&r->searcher);
  }
  pb_iter_destroy(&r->it);
  pb_learn_destroy(&r->learn);
  pb_neteval_destroy(&r->ne);
  pb_metrics_destroy(&r->metrics);
}

static int stopping(const pb_inproc_opts_t *o) {
  return o && o->stop && *o->stop;
}

/* The iteration's metrics line: what the learner writes too, and the
 * evaluator's counts of this process. */
static void write_metrics(run_t *r, const pb_iter_times_t *t) {
  pb_json_t j;
  pb_json_init(&j);
  pb_iter_report(r->it, "inproc", t, &j);
  if (r->algo->data->searches) {
    pb_neteval_stats_t ns;
    pb_neteval_stats(r->ne, &ns);
    pb_json_kuint(&j, "v_evals_asked", ns.v_asked - r->ns_last.v_asked);
    pb_json_kuint(&j, "v_evals_computed",
                  ns.v_computed - r->ns_last.v_computed);
    pb_json_kuint(&j, "q_evals_asked", ns.q_asked - r->ns_last.q_asked);
    pb_json_kuint(&j, "q_evals_computed",
                  ns.q_computed - r->ns_last.q_computed);
    r->ns_last = ns;
  }
  pb_json_obj_end(&j);
  if (r->metrics) pb_metrics_write(r->metrics, pb_json_cstr(&j));
  pb_json_free(&j);
}

/* Item `done` of `total` of a phase (the units done of all_units so
 * far): to the caller's on_progress, and every 5 s to metrics.jsonl as
 * the learner's "progress" event (cli/progress.h, the dashboard). */
static void progress(run_t *r, const pb_inproc_opts_t *opts,
                     const pb_inproc_progress_t *p) {
  if (opts != NULL && opts->on_progress != NULL) opts->on_progress(opts->ctx, p);
  double now = pb_now();
  if (p->done == 0) r->last_progress = now;
  if (r->metrics == NULL || p->done == 0 || now - r->last_progress < 5.0)
    return;
  r->last_progress = now;
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "event", "progress");
  pb_json_kuint(&j, "iteration", p->iteration);
  pb_json_kstr(&j, "phase", p->phase);
  pb_json_kuint(&j, "done", p->done);
  pb_json_kuint(&j, "total", p->total);
  pb_json_kuint(&j, "units", p->units);
  pb_json_kstr(&j, "unit", p->unit);
  pb_json_kdouble(&j, "seconds", p->seconds);
  if (p->done <= p->total)
    pb_json_kdouble(&j, "eta_s", p->seconds * (double)(p->total - p->done) /
                                     (double)p->done);
  pb_json_obj_end(&j);
  if (pb_json_cstr(&j)) pb_metrics_write(r->metrics, pb_json_cstr(&j));
  pb_json_free(&j);
}

/* 1. The iteration's self-play items with the networks of the version
 * trained last, in item order. */
static int selfplay(run_t *r, const pb_inproc_opts_t *opts, pb_err_t *err) {
  const uint64_t version = pb_learn_version(r->learn);
  int rc = pb_iter_open_selfplay(r->it, version + 1, err);
  if (rc != 0) return rc;
  r->env.v = pb_learn_v(r->learn);
  r->env.q = pb_learn_q(r->learn);
  r->env.parallel = r->cfg->train.selfplay_parallel;
  /* Each iteration starts with a cold cache, as an actor does with new
   * weights. */
  pb_neteval_bind(r->ne, NULL, r->env.q);
  const size_t items = pb_iter_selfplay_items(r->it);
  const size_t eps = (size_t)r->cfg->train.episodes_per_iter;
  pb_inproc_progress_t p = {version + 1, "self-play", 0, items, 0, eps,
                            "episodes", 0};
  const double t0 = pb_now();
  progress(r, opts, &p);
  for (size_t i = 0; i < items; i++) {
    if (stopping(opts)) return PB_EINTR;
    pb_algo_item_t item;
    pb_iter_selfplay_item(r->it, i, &item);
    rc = r->algo->play(r->player, &r->env, &item, pb_iter_item_store(r->it, i),
                       err);
    if (rc != 0) return rc;
    p.done = i + 1;
    p.units = p.done * (size_t)r->cfg->net.item_episodes;
    if (p.units > eps) p.units = eps;
    p.seconds = pb_now() - t0;
    progress(r, opts, &p);
  }
  return pb_iter_selfplay_done(r->it, err);
}

/* 3. The search items with (V_k, Q_{k-1}), or (V_{k-1}, Q_{k-1}) when V
 * trains after the search. */
static int search(run_t *r, const pb_inproc_opts_t *opts, pb_err_t *err) {
  const int A = r->g->num_actions;
  r->env.parallel = r->cfg->search.parallel;
  pb_neteval_bind(r->ne, pb_learn_v(r->learn), pb_learn_q(r->learn));
  const pb_state_t *states = pb_iter_search_states(r->it);
  float *out = pb_iter_targets(r->it);
  const size_t items = pb_iter_search_items(r->it);
  pb_inproc_progress_t p = {pb_learn_version(r->learn) + 1, "search", 0, items,
                            0, pb_iter_search_positions(r->it), "states", 0};
  const double t0 = pb_now();
  progress(r, opts, &p);
  for (size_t k = 0; k < items; k++) {
    if (stopping(opts)) return PB_EINTR;
    size_t first, n;
    pb_iter_search_item(r->it, k, &first, &n);
    int rc = r->algo->search(r->searcher, &r->env, states + first, (int)n,
                             out + first * (size_t)A, err);
    if (rc != 0) return rc;
    p.done = k + 1;
    p.units = first + n;
    p.seconds = pb_now() - t0;
    progress(r, opts, &p);
  }
  return 0;
}

static int one_iteration(run_t *r, const pb_inproc_opts_t *opts,
                         pb_err_t *err) {
  pb_iter_times_t t = {0};
  double t0 = pb_now();
  int rc = selfplay(r, opts, err);
  if (rc != 0) return rc;
  t.selfplay_s = pb_now() - t0;
  if (stopping(opts)) return PB_EINTR;
  if ((rc = pb_iter_train_before(r->it, err)) != 0) return rc;
  if (pb_iter_searches(r->it)) {
    double t1 = pb_now();
    if ((rc = search(r, opts, err)) != 0) return rc;
    t.search_s = pb_now() - t1;
  }
  if (stopping(opts)) return PB_EINTR;
  if ((rc = pb_iter_train_after(r->it, err)) != 0) return rc;
  double t2 = pb_now();
  if ((rc = pb_iter_save(r->it, r->log, err)) != 0) return rc;
  t.checkpoint_s = pb_now() - t2;
  t.iteration_s = pb_now() - t0;

  const pb_episodes_t *e = pb_iter_episodes(r->it);
  int wins, draws;
  pb_iter_outcomes(r->it, &wins, &draws);
  char what[512];
  pb_iter_describe(r->it, &t, what, sizeof what);
  pb_log_info(r->log,
              "iteration %" PRIu64
              ": selfplay %zu episodes %zu positions %.2fs (%.0f pos/s, "
              "first player %d wins %d draws)%s | %s | ckpt %.2fs | total "
              "%.2fs",
              pb_learn_version(r->learn), e->n_eps, e->n_states, t.selfplay_s,
              e->n_states / (t.selfplay_s > 0 ? t.selfplay_s : 1e-9), wins,
              draws, pb_iter_dropped(r->it) ? " (replay capped)" : "", what,
              t.checkpoint_s, t.iteration_s);
  write_metrics(r, &t);
  return 0;
}

/* The run's first log line: what trains, up to which version. */
static void log_start(const run_t *r, uint64_t last) {
  char settings[160];
  const pb_config_t *cfg = r->cfg;
  r->algo->settings(cfg, settings, sizeof settings);
  pb_nn_t *v = pb_learn_v(r->learn), *q = pb_learn_q(r->learn);
  pb_log_info(r->log,
              "inproc training (%s): game %s, up to version %" PRIu64
              " (now %" PRIu64
              ") x %d episodes, %s, %s of %ld + %ld params, device %s, "
              "precision %s, run dir %s",
              r->algo->data->name, cfg->game, last, pb_learn_version(r->learn),
              cfg->train.episodes_per_iter, settings, r->algo->data->model,
              v ? pb_nn_param_count(v) : 0L, pb_nn_param_count(q),
              pb_nn_device(q), pb_learn_precision(r->learn), cfg->run.dir);
  if (pb_learn_batch(r->learn)[0] != '\0')
    pb_log_info(r->log, "%s", pb_learn_batch(r->learn));
}

/* The engines of the algorithm and the evaluator they play and search
 * through, as an actor and a searcher make them. */
static int make_engines(run_t *r, pb_err_t *err) {
  const pb_config_t *cfg = r->cfg;
  r->ne = pb_neteval_new(
      r->g,
      pb_learn_eval_batch(cfg->search.parallel, cfg->search.expansions,
                          r->g->num_actions, cfg->train.selfplay_parallel),
      (uint32_t)cfg->search.cache_entries, err);
  if (r->ne == NULL) return err && err->code ? err->code : PB_ENOMEM;
  r->env = (pb_algo_env_t){.g = r->g,
                           .run = cfg,
                           .parallel = cfg->train.selfplay_parallel,
                           .threads = 1,
                           .ne = r->ne};
  if ((r->player = r->algo->player_new(&r->env, err)) == NULL)
    return err && err->code ? err->code : PB_ENOMEM;
  if (r->algo->data->searches) {
    r->env.parallel = cfg->search.parallel;
    if ((r->searcher = r->algo->searcher_new(&r->env, err)) == NULL)
      return err && err->code ? err->code : PB_ENOMEM;
  }
  return 0;
}

int pb_inproc_run(const pb_config_t *cfg, pb_log_t *log,
                  const pb_inproc_opts_t *opts, pb_err_t *err) {
  run_t r;
  memset(&r, 0, sizeof r);
  r.cfg = cfg;
  r.log = log;
  int rc = pb_config_check(cfg, err);
  if (rc != 0) return rc;
  r.g = pb_game_by_name(cfg->game);
  r.algo = pb_algo_of(cfg);
  char path[4200];
  snprintf(path, sizeof path, "%s/checkpoints", cfg->run.dir);
  if ((rc = pb_mkdir_p(path, err)) != 0) return rc;

  if ((r.learn = pb_learn_new(cfg, err)) == NULL ||
      (r.it = pb_iter_new(cfg, r.learn, err)) == NULL) {
    rc = err && err->code ? err->code : PB_ENOMEM;
    goto done;
  }
  if ((rc = make_engines(&r, err)) != 0) goto done;
  snprintf(path, sizeof path, "%s/metrics.jsonl", cfg->run.dir);
  if ((r.metrics = pb_metrics_new(path, err)) == NULL) {
    rc = err && err->code ? err->code : PB_EIO;
    goto done;
  }

  if (opts && opts->resume) {
    char latest[4200];
    snprintf(path, sizeof path, "%s/checkpoints", cfg->run.dir);
    rc = pb_ckpt_find_latest(path, latest, sizeof latest, err);
    if (rc == 0) {
      if ((rc = pb_learn_load(r.learn, latest, NULL, NULL, err)) != 0)
        goto done;
      pb_log_info(log, "resumed from %s at version %" PRIu64, latest,
                  pb_learn_version(r.learn));
    } else if (rc == PB_ENOTFOUND) {
      pb_log_info(log, "no checkpoint in %s: starting from scratch", path);
      rc = 0;
    } else {
      goto done;
    }
  }
  if (pb_learn_version(r.learn) == 0) {
    /* Version 0 is saved too, so the evaluator can rate the start. */
    pb_rundir_ckpt_path(cfg->run.dir, 0, path, sizeof path);
    if ((rc = pb_learn_save(r.learn, path, NULL, 0, err)) != 0) goto done;
  }
  char *yaml = NULL;
  if ((rc = pb_config_to_yaml(cfg, &yaml, err)) != 0) goto done;
  snprintf(path, sizeof path, "%s/config.yaml", cfg->run.dir);
  rc = pb_write_file(path, yaml, strlen(yaml), err);
  free(yaml);
  if (rc != 0) goto done;

  uint64_t last = (uint64_t)cfg->train.iterations;
  if (opts && opts->iterations_override > 0)
    last = (uint64_t)opts->iterations_override;
  if (cfg->train.pipeline)
    pb_log_warn(log,
                "train.pipeline applies to distributed runs; --inproc "
                "runs the phases one after the other");
  log_start(&r, last);
  while (pb_learn_version(r.learn) < last) {
    rc = one_iteration(&r, opts, err);
    if (rc == PB_EINTR) {
      pb_log_info(log,
                  "stop requested: abandoning iteration %" PRIu64
                  " (the last checkpoint is version %" PRIu64 ")",
                  pb_learn_version(r.learn) + 1, pb_learn_version(r.learn));
      rc = 0;
      break;
    }
    if (rc != 0) goto done;
  }
  pb_log_info(log, "done at version %" PRIu64, pb_learn_version(r.learn));
done:
  run_free(&r);
  return rc;
}
