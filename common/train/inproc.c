#include "inproc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abtargets.h"
#include "azplay.h"
#include "beam_search.h"
#include "ckpt.h"
#include "episodes.h"
#include "json.h"
#include "learn.h"
#include "neteval.h"
#include "pveval.h"
#include "rng.h"
#include "rundir.h"
#include "selfplay.h"
#include "td.h"
#include "tdnet.h"
#include "tdplay.h"
#include "util.h"

/* Everything one run holds. */
typedef struct {
  const pb_config_t *cfg;
  const pb_game_t *g;
  pb_log_t *log;
  pb_learn_t *learn;
  pb_selfplay_t *sp;
  pb_beam_t *beam;
  pb_abtargets_t *abt; /* search.algorithm abnet: instead of the beam */
  pb_neteval_t *ne;
  pb_metrics_t *metrics;
  pb_episodes_t eps;
  float *qt;
  size_t qt_cap;
  pb_neteval_stats_t ns_last;
  pb_azplay_t *az;   /* algorithm alphazero */
  pb_pveval_t *pve;
  int td; /* algorithm td: the evaluation and its schedules */
  pb_linear_t lin;
  pb_td_opts_t tdo;
} run_t;

static void run_free(run_t *r) {
  pb_learn_destroy(&r->learn);
  pb_selfplay_destroy(&r->sp);
  pb_beam_destroy(&r->beam);
  pb_abtargets_destroy(&r->abt);
  pb_neteval_destroy(&r->ne);
  pb_metrics_destroy(&r->metrics);
  pb_episodes_free(&r->eps);
  free(r->qt);
  pb_azplay_destroy(&r->az);
  pb_pveval_destroy(&r->pve);
}

static int stopping(const pb_inproc_opts_t *o) {
  return o && o->stop && *o->stop;
}

/* Writes the iteration's metrics line (both algorithms). */
static void write_metrics(run_t *r, const pb_learn_report_t *rep, int wins,
                          int draws, const pb_neteval_stats_t *ns) {
  pb_json_t j;
  pb_json_init(&j);
  pb_learn_report_json(r->learn, rep, &j);
  pb_json_kint(&j, "first_player_wins", wins);
  pb_json_kint(&j, "draws", draws);
  if (ns != NULL) {
    pb_json_kuint(&j, "v_evals_asked", ns->v_asked - r->ns_last.v_asked);
    pb_json_kuint(&j, "v_evals_computed",
                  ns->v_computed - r->ns_last.v_computed);
    pb_json_kuint(&j, "q_evals_asked", ns->q_asked - r->ns_last.q_asked);
    pb_json_kuint(&j, "q_evals_computed",
                  ns->q_computed - r->ns_last.q_computed);
    r->ns_last = *ns;
  }
  pb_json_obj_end(&j);
  if (r->metrics) pb_metrics_write(r->metrics, pb_json_cstr(&j));
  pb_json_free(&j);
}

/* Wins of the first player and draws among the episodes. */
static void outcomes(const pb_episodes_t *e, int *wins, int *draws) {
  *wins = *draws = 0;
  for (size_t k = 0; k < e->n_eps; k++) {
    /* who won: the last mover (odd length = first player moved last) */
    if (e->reward[k] == 0) (*draws)++;
    else if ((e->reward[k] > 0) == (e->len[k] % 2 == 1)) (*wins)++;
  }
}

/* Saves version nv and applies the retention rule; returns 0 or the
 * save's error (retention failures are only logged). */
static int save_version(run_t *r, uint64_t nv, pb_err_t *err) {
  char path[4200];
  pb_rundir_ckpt_path(r->cfg->run.dir, (unsigned long long)nv, path,
                      sizeof path);
  int rc = pb_learn_save(r->learn, path, NULL, 0, err);
  if (rc != 0) return rc;
  pb_err_t pe;
  pb_err_clear(&pe);
  if (pb_rundir_prune(r->cfg, nv, r->log, &pe) < 0)
    pb_log_warn(r->log, "checkpoint retention: %s", pe.msg);
  return 0;
}

/* The iteration's self-play into r->eps with the networks of version
 * `version`, in the same work items (seeds, first episode 0) as the
 * distributed learner hands out: MCTS with the policy+value network in an
 * alphazero run, else moves drawn from Q. */
static int selfplay_items(run_t *r, const pb_inproc_opts_t *opts,
                          uint64_t version, pb_err_t *err) {
  const pb_config_t *cfg = r->cfg;
  pb_mcts_evalfn_t mfn = {0};
  pb_evalfn_t qfn = {0};
  if (r->az != NULL) {
    int rc = pb_pveval_bind(r->pve, pb_learn_q(r->learn), err);
    if (rc != 0) return rc;
    mfn = pb_pveval_fn(r->pve);
  } else {
    pb_neteval_bind(r->ne, NULL, pb_learn_q(r->learn));
    qfn = pb_neteval_fn(r->ne);
  }
  pb_episodes_clear(&r->eps);
  const int per = cfg->net.item_episodes, total = cfg->train.episodes_per_iter;
  for (int first = 0; first < total; first += per) {
    if (stopping(opts)) return PB_EINTR;
    int cnt = total - first < per ? total - first : per;
    uint64_t seed = pb_learn_item_seed(cfg, version, (uint64_t)first);
    int rc = r->az != NULL ? pb_azplay_run(r->az, cnt, seed, 0, &mfn, version,
                                           &r->eps, err)
                           : pb_selfplay_run(r->sp, cnt, seed, 0, &qfn,
                                             version, &r->eps, err);
    if (rc != 0) return rc;
  }
  return 0;
}

/* One AlphaZero iteration: MCTS self-play with the policy+value network of
 * the last version, in the same work items (seeds) as the distributed
 * learner hands out, then training on visit counts and outcomes. */
static int one_iteration_az(run_t *r, const pb_inproc_opts_t *opts,
                            pb_err_t *err) {
  const uint64_t version = pb_learn_version(r->learn);
  double t0 = pb_now();
  int rc = selfplay_items(r, opts, version, err);
  if (rc != 0) return rc;
  size_t dropped = pb_learn_cap_replay(r->learn, &r->eps);
  double t_sp = pb_now() - t0;
  int wins, draws;
  outcomes(&r->eps, &wins, &draws);
  if (stopping(opts)) return PB_EINTR;
  pb_learn_stats_t vst = {0}, st = {0};
  if ((rc = pb_learn_train_pv(r->learn, &r->eps, &st, err)) != 0) return rc;
  if ((rc = pb_learn_end_iteration(r->learn, &r->eps, r->eps.policy, err)) != 0)
    return rc;
  const uint64_t nv = pb_learn_version(r->learn);
  double t2 = pb_now();
  if ((rc = save_version(r, nv, err)) != 0) return rc;
  double t_ck = pb_now() - t2, t_all = pb_now() - t0;
  const size_t npos = r->eps.n_states;
  pb_log_info(r->log,
              "iteration %" PRIu64 ": selfplay %zu episodes %zu positions "
              "%.2fs (%.0f pos/s, first player %d wins %d draws)%s | "
              "policy+value loss %.4f -> %.4f (policy %.4f, value %.4f) "
              "%.2fs | ckpt %.2fs | total %.2fs",
              nv, r->eps.n_eps, npos, t_sp, npos / (t_sp > 0 ? t_sp : 1e-9),
              wins, draws, dropped ? " (replay capped)" : "", st.loss_first,
              st.loss_last, st.policy_loss_mean, st.value_loss_mean,
              st.seconds, t_ck, t_all);
  pb_learn_report_t rep = {.mode = "inproc", .version = nv, .eps = &r->eps,
                           .n_distinct = npos, .qtargets = r->eps.policy,
                           .selfplay_s = t_sp, .search_s = 0,
                           .checkpoint_s = t_ck, .iteration_s = t_all,
                           .v = &vst, .q = &st};
  write_metrics(r, &rep, wins, draws, NULL);
  return 0;
}

/* The metrics line of a td iteration. */
static void write_metrics_td(run_t *r, uint64_t nv, const pb_td_stats_t *ts,
                             const pb_tdplay_stats_t *ps, double epsilon,
                             int wins, int draws, double t_sp, double t_up,
                             double t_ck) {
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "event", "iteration");
  pb_json_kstr(&j, "mode", "inproc");
  pb_json_kstr(&j, "algorithm", "td");
  pb_json_kuint(&j, "version", nv);
  pb_json_kuint(&j, "episodes", r->eps.n_eps);
  pb_json_kuint(&j, "positions", r->eps.n_states);
  pb_json_kint(&j, "first_player_wins", wins);
  pb_json_kint(&j, "draws", draws);
  pb_json_kint(&j, "ply", r->tdo.ply);
  pb_json_kdouble(&j, "epsilon", epsilon);
  pb_json_kdouble(&j, "alpha", ts->alpha_first);
  pb_json_kdouble(&j, "td_abs_delta", ts->abs_delta_mean);
  pb_json_kuint(&j, "random_moves", ps->random_moves);
  pb_json_kuint(&j, "selfplay_evals", ps->search.evals);
  pb_json_kuint(&j, "target_evals", ts->search.evals);
  pb_json_kuint(&j, "targets_crc",
                pb_learn_targets_crc(r->learn, &r->eps, NULL, 0));
  pb_json_kuint(&j, "weights_crc", pb_td_weights_crc(&r->lin));
  pb_json_kdouble(&j, "selfplay_s", t_sp);
  pb_json_kdouble(&j, "train_v_s", t_up);
  pb_json_kdouble(&j, "checkpoint_s", t_ck);
  pb_json_obj_end(&j);
  if (r->metrics) pb_metrics_write(r->metrics, pb_json_cstr(&j));
  pb_json_free(&j);
}

/* One td iteration: epsilon-greedy n-ply self-play with the evaluation of
 * the last version, in the distributed learner's work items (seeds, one
 * epsilon per item), then TD(0) over the games in order (common/train/td.h). */
static int one_iteration_td(run_t *r, const pb_inproc_opts_t *opts,
                            pb_err_t *err) {
  const pb_config_t *cfg = r->cfg;
  const uint64_t version = pb_learn_version(r->learn);
  const int per = cfg->net.item_episodes, total = cfg->train.episodes_per_iter;
  const uint64_t game0 = version * (uint64_t)total;
  double t0 = pb_now();
  pb_episodes_clear(&r->eps);
  pb_tdplay_stats_t ps = {0};
  const double eps0 = pb_td_epsilon(&r->tdo, game0);
  for (int first = 0; first < total; first += per) {
    if (stopping(opts)) return PB_EINTR;
    int cnt = total - first < per ? total - first : per;
    pb_tdplay_opts_t po = {cfg->td.ply, cfg->train.max_turns,
                           pb_td_epsilon(&r->tdo, game0 + (uint64_t)first),
                           NULL, NULL};
    uint64_t seed = pb_learn_item_seed(cfg, version, (uint64_t)first);
    int rc =
        pb_tdplay_run(&r->lin, &po, cnt, seed, 0, version, &r->eps, &ps, err);
    if (rc != 0) return rc;
  }
  double t_sp = pb_now() - t0;
  int wins, draws;
  outcomes(&r->eps, &wins, &draws);
  if (stopping(opts)) return PB_EINTR;
  double t1 = pb_now();
  pb_td_stats_t ts;
  pb_td_learn(&r->lin, &r->tdo, &r->eps, game0, &ts);
  int rc = pb_tdnet_set(pb_learn_v(r->learn), &r->lin, err);
  if (rc == 0) rc = pb_learn_end_iteration(r->learn, &r->eps, NULL, err);
  if (rc != 0) return rc;
  double t_up = pb_now() - t1;
  const uint64_t nv = pb_learn_version(r->learn);
  double t2 = pb_now();
  if ((rc = save_version(r, nv, err)) != 0) return rc;
  double t_ck = pb_now() - t2;
  pb_log_info(r->log,
              "iteration %" PRIu64
              ": selfplay %zu episodes %zu positions "
              "%.2fs (first player %d wins %d draws, %" PRIu64
              " random moves, %" PRIu64
              " evaluations) | TD(0) %zu updates "
              "alpha %.4g epsilon %.3g mean |delta| %.4f %.2fs | ckpt %.2fs",
              nv, r->eps.n_eps, r->eps.n_states, t_sp, wins, draws,
              ps.random_moves, ps.search.evals, ts.updates, ts.alpha_first,
              eps0, ts.abs_delta_mean, t_up, t_ck);
  write_metrics_td(r, nv, &ts, &ps, eps0, wins, draws, t_sp, t_up, t_ck);
  return 0;
}

static int one_iteration(run_t *r, const pb_inproc_opts_t *opts,
                         pb_err_t *err) {
  const pb_config_t *cfg = r->cfg;
  const pb_game_t *g = r->g;
  const uint64_t version = pb_learn_version(r->learn);
  const int A = g->num_actions;
  double t0 = pb_now();
  int rc;

  /* 1. self-play with Q_{k-1}, in work items */
  if ((rc = selfplay_items(r, opts, version, err)) != 0) return rc;
  size_t dropped = pb_learn_cap_replay(r->learn, &r->eps);
  double t_sp = pb_now() - t0;
  size_t npos = r->eps.n_states;
  int wins, draws;
  outcomes(&r->eps, &wins, &draws);

  /* 2. train V_k (the paper; with train.v_search_mix > 0 V trains after
   * the search instead, on targets that need its values) */
  pb_learn_stats_t vst = {0}, qst;
  const int v_first = pb_learn_v_first(r->learn);
  if (stopping(opts)) return PB_EINTR;
  if (v_first && (rc = pb_learn_train_v(r->learn, &r->eps, NULL, &vst, err)) != 0)
    return rc;

  /* 3. search of the distinct positions (beam or abnet) with (V_k, Q_{k-1}), or
   * (V_{k-1}, Q_{k-1}) when V trains after it */
  double t1 = pb_now();
  size_t nu;
  rc = pb_learn_distinct(r->learn, &r->eps, &nu, err);
  if (rc != 0) return rc;
  if (nu * A > r->qt_cap) {
    free(r->qt);
    r->qt_cap = nu * A;
    r->qt = malloc(r->qt_cap * sizeof *r->qt);
    if (r->qt == NULL) {
      r->qt_cap = 0;
      return pb_err_set(err, PB_ENOMEM, "inproc: out of memory");
    }
  }
  pb_neteval_bind(r->ne, pb_learn_v(r->learn), pb_learn_q(r->learn));
  pb_evalfn_t fn = pb_neteval_fn(r->ne);
  const pb_state_t *uniq = pb_learn_distinct_states(r->learn);
  const size_t per_s = (size_t)cfg->net.item_states;
  for (size_t first = 0; first < nu; first += per_s) {
    if (stopping(opts)) return PB_EINTR;
    size_t cnt = nu - first < per_s ? nu - first : per_s;
    rc = r->abt != NULL ? pb_abtargets_run(r->abt, uniq + first, (int)cnt,
                                           &fn, r->qt + first * A, err)
                        : pb_beam_run(r->beam, uniq + first, (int)cnt, &fn,
                                      r->qt + first * A, err);
    if (rc != 0) return rc;
  }
  double t_bs = pb_now() - t1;
  pb_neteval_stats_t ns;
  pb_neteval_stats(r->ne, &ns);

  /* 4. train Q_k (and V_k when it trains after the search) */
  if (stopping(opts)) return PB_EINTR;
  rc = pb_learn_train_after_search(r->learn, &r->eps, r->qt, &vst, &qst, err);
  if (rc != 0) return rc;

  /* 5. checkpoint version k */
  if ((rc = pb_learn_end_iteration(r->learn, &r->eps, r->qt, err)) != 0)
    return rc;
  const uint64_t nv = pb_learn_version(r->learn);
  double t2 = pb_now();
  if ((rc = save_version(r, nv, err)) != 0) return rc;
  double t_ck = pb_now() - t2, t_all = pb_now() - t0;

  pb_log_info(r->log,
              "iteration %" PRIu64 ": selfplay %zu episodes %zu positions "
              "%.2fs (%.0f pos/s, first player %d wins %d draws)%s | "
              "V loss %.4f -> %.4f %.2fs | search %zu states %.2fs "
              "(%.0f states/s) | Q loss %.4f -> %.4f %.2fs | ckpt %.2fs | "
              "total %.2fs",
              nv, r->eps.n_eps, npos, t_sp, npos / (t_sp > 0 ? t_sp : 1e-9),
              wins, draws, dropped ? " (replay capped)" : "", vst.loss_first,
              vst.loss_last, vst.seconds, nu, t_bs,
              nu / (t_bs > 0 ? t_bs : 1e-9), qst.loss_first, qst.loss_last,
              qst.seconds, t_ck, t_all);
  pb_learn_report_t rep = {.mode = "inproc", .version = nv, .eps = &r->eps,
                           .n_distinct = nu, .qtargets = r->qt,
                           .selfplay_s = t_sp, .search_s = t_bs,
                           .checkpoint_s = t_ck, .iteration_s = t_all,
                           .v = &vst, .q = &qst};
  write_metrics(r, &rep, wins, draws, &ns);
  return 0;
}

/* The run's first log line: what trains, up to which version. */
static void log_start(const run_t *r, uint64_t last) {
  char desc[96];
  const pb_config_t *cfg = r->cfg;
  pb_log_t *log = r->log;
  if (r->td)
    pb_log_info(log,
                "inproc training (td): game %s, up to version %" PRIu64
                " (now %" PRIu64
                ") x %d episodes, %d-ply, linear evaluation "
                "of %d weights, run dir %s",
                cfg->game, last, pb_learn_version(r->learn),
                cfg->train.episodes_per_iter, cfg->td.ply, r->lin.n_features,
                cfg->run.dir);
  else if (r->az != NULL)
    pb_log_info(log,
                "inproc training (alphazero): game %s, up to version %" PRIu64
                " (now %" PRIu64
                ") x %d episodes, %d simulations per move, "
                "policy+value network %ld params, device %s, precision %s, "
                "run dir %s",
                cfg->game, last, pb_learn_version(r->learn),
                cfg->train.episodes_per_iter, cfg->mcts.simulations,
                pb_nn_param_count(pb_learn_q(r->learn)),
                pb_nn_device(pb_learn_q(r->learn)),
                pb_learn_precision(r->learn), cfg->run.dir);
  else
    pb_log_info(log,
                "inproc training: game %s, up to version %" PRIu64
                " (now %" PRIu64
                ") x %d episodes, %s, V %ld params, "
                "Q %ld params, device %s, precision %s, run dir %s",
                cfg->game, last, pb_learn_version(r->learn),
                cfg->train.episodes_per_iter,
                pb_config_search_desc(cfg, desc, sizeof desc),
                pb_nn_param_count(pb_learn_v(r->learn)),
                pb_nn_param_count(pb_learn_q(r->learn)),
                pb_nn_device(pb_learn_v(r->learn)),
                pb_learn_precision(r->learn), cfg->run.dir);
}

int pb_inproc_run(const pb_config_t *cfg, pb_log_t *log,
                  const pb_inproc_opts_t *opts, pb_err_t *err) {
  run_t r;
  memset(&r, 0, sizeof r);
  pb_episodes_init(&r.eps);
  r.cfg = cfg;
  r.log = log;
  int rc = pb_config_check(cfg, err);
  if (rc != 0) return rc;
  r.g = pb_game_by_name(cfg->game);
  char path[4200];
  snprintf(path, sizeof path, "%s/checkpoints", cfg->run.dir);
  if ((rc = pb_mkdir_p(path, err)) != 0) return rc;

  if ((r.learn = pb_learn_new(cfg, err)) == NULL) goto fail;
  if (pb_config_td(cfg)) {
    /* A linear evaluation, n-ply self-play; no Q, no beam search. The
     * weights start at zero (the paper). */
    r.td = 1;
    pb_td_opts_from_config(cfg, &r.tdo);
    if ((rc = pb_linear_init(&r.lin, r.g, err)) != 0) goto done;
  } else if (pb_config_alphazero(cfg)) {
    /* MCTS self-play and the policy+value network; no beam search. */
    pb_azplay_opts_t ao;
    pb_azplay_config_opts(cfg, &ao);
    if ((r.az = pb_azplay_new(r.g, &ao, err)) == NULL ||
        (r.pve = pb_pveval_new(r.g, cfg->train.selfplay_parallel, err)) == NULL)
      goto fail;
  } else {
    pb_selfplay_opts_t so;
    pb_selfplay_config_opts(cfg, &so);
    if ((r.sp = pb_selfplay_new(r.g, &so, err)) == NULL) goto fail;
    if (pb_config_abnet_targets(cfg)
            ? (r.abt = pb_abtargets_new(r.g, cfg->search.max_depth,
                                        (uint64_t)cfg->search.nodes,
                                        cfg->search.parallel, err)) == NULL
            : (r.beam = pb_beam_new(r.g, cfg->search.expansions,
                                    cfg->search.max_depth,
                                    cfg->search.parallel, err)) == NULL)
      goto fail;
    if ((r.ne = pb_neteval_new(r.g, pb_learn_eval_batch(cfg->search.parallel, cfg->search.expansions, r.g->num_actions, cfg->train.selfplay_parallel),
                               (uint32_t)cfg->search.cache_entries, err)) ==
        NULL)
      goto fail;
  }
  snprintf(path, sizeof path, "%s/metrics.jsonl", cfg->run.dir);
  if ((r.metrics = pb_metrics_new(path, err)) == NULL) goto fail;

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
  /* td: the evaluation of the version trained from (zero weights at 0) */
  if (r.td && (rc = pb_tdnet_get(pb_learn_v(r.learn), &r.lin, err)) != 0)
    goto done;
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
    pb_log_warn(log, "train.pipeline applies to distributed runs; --inproc "
                     "runs the phases one after the other");
  log_start(&r, last);
  while (pb_learn_version(r.learn) < last) {
    rc = r.td           ? one_iteration_td(&r, opts, err)
         : r.az != NULL ? one_iteration_az(&r, opts, err)
                        : one_iteration(&r, opts, err);
    if (rc == PB_EINTR) {
      pb_log_info(log, "stop requested: abandoning iteration %" PRIu64
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
fail:
  rc = err && err->code ? err->code : PB_ENOMEM;
  run_free(&r);
  return rc;
}
