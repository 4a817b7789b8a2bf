/* evalrun_dir.c - rating a run directory: which checkpoint versions
 * exist and which are rated, rating the next ones (all of them, or
 * following a live run), writing elo.csv and the charts, the accuracy on
 * the solved test set, and the result lines in the log and metrics.jsonl.
 *
 * Workload: one checkpoint every few seconds to minutes; playing it
 * (evalrun.c) and measuring its accuracy dominate. */
#include "evalrun_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accuracy.h"
#include "agent.h"
#include "elotable.h"
#include "json.h"
#include "rundir.h"
#include "testset.h"
#include "util.h"

const pb_elotable_t *pb_evalrun_table(const pb_evalrun_t *r) {
  return r != NULL ? r->table : NULL;
}

pb_evalrun_t *pb_evalrun_new(const char *run_dir, const pb_evalrun_opts_t *o,
                             const pb_evalrun_dir_opts_t *d, pb_err_t *err) {
  if (run_dir == NULL || o == NULL || d == NULL || o->g == NULL ||
      d->every < 1) {
    pb_err_set(err, PB_EINVAL, "evalrun: NULL argument or every < 1");
    return NULL;
  }
  if (strlen(run_dir) >= PB__DIR_MAX) {
    pb_err_set(err, PB_EINVAL, "evalrun: run directory path too long");
    return NULL;
  }
  /* A bad opponent spec would fail every checkpoint: refuse it now. */
  for (int j = 0; j < o->n_opponents; j++) {
    pb_err_t e;
    pb_err_clear(&e);
    pb_agent_t *a = pb_agent_new(o->g, o->opponents[j], 0, &e);
    if (a == NULL) {
      pb_err_set(err, e.code < 0 ? e.code : PB_EINVAL, "eval.opponents: %s",
                 e.msg);
      return NULL;
    }
    pb_agent_destroy(&a);
  }
  pb_evalrun_t *r = calloc(1, sizeof *r);
  if (r == NULL) {
    pb_err_set(err, PB_ENOMEM, "evalrun: out of memory");
    return NULL;
  }
  r->lock_fd = -1;
  snprintf(r->dir, sizeof r->dir, "%s", run_dir);
  r->o = *o;
  r->d = *d;
  if (d->title != NULL)
    snprintf(r->title, sizeof r->title, "%s", d->title);
  else
    snprintf(r->title, sizeof r->title, "Elo (%s)", o->g->name);
  r->d.title = r->title;
  char path[PB__PATH];
  snprintf(path, sizeof path, "%s/elo.csv", r->dir);
  r->table = pb_elotable_load(
      path, (const char(*)[PB_ELOTABLE_SPEC_MAX])o->opponents, o->n_opponents,
      err);
  if (r->table == NULL) goto fail;
  if (o->accuracy) {
    pb_err_t e;
    pb_err_clear(&e);
    r->testset = pb_testset_open(o->testset, o->g, &e);
    if (r->testset == NULL && (o->testset[0] != '\0' || e.code != PB_ENOTFOUND)) {
      /* A test set the user named must work. */
      pb_err_set(err, PB_ECONFIG, "eval.testset: %s", e.msg);
      goto fail;
    }
    if (r->testset == NULL)
      pb_log_warn(d->log, "no accuracy figures: %s", e.msg);
  }
  if (pb_mkdir_p(r->dir, err) != 0) goto fail;
  r->lock_fd = pb_rundir_lock_evaluator(r->dir, d->log);
  snprintf(path, sizeof path, "%s/metrics.jsonl", r->dir);
  if ((r->metrics = pb_metrics_new(path, err)) == NULL) goto fail;
  if (pb_elotable_count(r->table) > 0) {
    r->seen_any = 1;
    r->seen_max = pb_elotable_row(r->table, pb_elotable_count(r->table) - 1)->version;
    /* Charts drawn by an older evaluator are drawn again now. */
    pb_err_t e;
    pb_err_clear(&e);
    if (pb__evalrun_write_charts(r, &e) != 0)
      pb_log_warn(d->log, "cannot redraw the charts: %s", e.msg);
  }
  return r;
fail:
  pb_evalrun_destroy(&r);
  return NULL;
}

void pb_evalrun_destroy(pb_evalrun_t **pr) {
  if (pr == NULL || *pr == NULL) return;
  if ((*pr)->lock_fd >= 0) close((*pr)->lock_fd);
  pb_elotable_destroy(&(*pr)->table);
  pb_metrics_destroy(&(*pr)->metrics);
  pb_testset_destroy(&(*pr)->testset);
  free(*pr);
  *pr = NULL;
}

/* The result line in the log and metrics.jsonl. */
static void report(pb_evalrun_t *r, const pb_elotable_row_t *row) {
  const pb_evalrun_opts_t *o = &r->o;
  char res[1400];
  size_t k = 0;
  res[0] = '\0';
  for (int j = 0; j < o->n_opponents && k < sizeof res; j++) {
    int w = snprintf(res + k, sizeof res - k, "%s%s %d/%d/%d", j ? ", " : "",
                     o->opponents[j], row->wdl[j][0], row->wdl[j][1],
                     row->wdl[j][2]);
    if (w < 0) break;
    k += (size_t)w;
  }
  const char *note = pb_elotable_note(row->flags);
  if (isfinite(row->acc_q) || isfinite(row->acc_beam)) {
    const int az = o->nets == PB_NETS_PV;
    char search[64];
    if (az)
      snprintf(search, sizeof search, "MCTS (N=%d)", o->mcts_simulations);
    else if (o->search_beam)
      snprintf(search, sizeof search, "beam search (E=%d, M=%d)",
               o->search_expansions, o->search_depth);
    else
      snprintf(search, sizeof search, "abnet (nodes=%d)", o->search_nodes);
    pb_log_info(r->d.log,
                "version %llu: share of optimal moves on %zu solved "
                "positions: %s %.3f, %s %.3f, %s %.3f",
                (unsigned long long)row->version,
                r->testset ? pb_testset_count(r->testset) : (size_t)0,
                az ? "greedy policy" : "greedy Q", row->acc_q,
                az ? "value one ply" : "V one ply", row->acc_v, search,
                row->acc_beam);
  }
  if (isfinite(row->elo))
    pb_log_info(r->d.log,
                "version %llu: Elo %.0f [%.0f, %.0f]%s%s from %d games "
                "(W/D/L: %s) in %.1f s",
                (unsigned long long)row->version, row->elo, row->lo, row->hi,
                *note ? " " : "", note, row->games, res, row->seconds);
  else
    pb_log_info(r->d.log,
                "version %llu: no Elo (no opponent has an anchor) from %d "
                "games (W/D/L: %s) in %.1f s",
                (unsigned long long)row->version, row->games, res,
                row->seconds);
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "event", "elo");
  pb_json_kuint(&j, "iteration", row->iteration);
  pb_json_kuint(&j, "version", row->version);
  pb_json_kdouble(&j, "elo", row->elo); /* null when not finite */
  pb_json_kdouble(&j, "elo_lo", row->lo);
  pb_json_kdouble(&j, "elo_hi", row->hi);
  pb_json_kstr(&j, "note", note);
  pb_json_kint(&j, "games", row->games);
  pb_json_kdouble(&j, "seconds", row->seconds);
  pb_json_kdouble(&j, "minutes", row->minutes);
  pb_json_key(&j, "opponents");
  pb_json_obj_begin(&j);
  for (int i = 0; i < o->n_opponents; i++) {
    pb_json_key(&j, o->opponents[i]);
    pb_json_obj_begin(&j);
    pb_json_kint(&j, "w", row->wdl[i][0]);
    pb_json_kint(&j, "d", row->wdl[i][1]);
    pb_json_kint(&j, "l", row->wdl[i][2]);
    pb_json_kdouble(&j, "anchor", o->anchor[i]);
    pb_json_obj_end(&j);
  }
  pb_json_obj_end(&j);
  if (r->testset != NULL) {
    char agent[64];
    pb_evalrun_search_spec(o, NULL, NULL, 0, agent, sizeof agent);
    pb_json_kdouble(&j, "acc_q", row->acc_q);
    pb_json_kdouble(&j, "acc_v", row->acc_v);
    pb_json_kdouble(&j, "acc_beam", row->acc_beam);
    pb_json_key(&j, "accuracy");
    pb_json_obj_begin(&j);
    pb_json_kstr(&j, "beam_agent", agent);
    pb_json_kuint(&j, "positions", pb_testset_count(r->testset));
    pb_json_kdouble(&j, "seconds", r->acc_seconds);
    pb_json_obj_end(&j);
  }
  pb_json_obj_end(&j);
  if (pb_json_cstr(&j) == NULL ||
      pb_metrics_write(r->metrics, pb_json_cstr(&j)) != 0)
    pb_log_warn(r->d.log, "could not append the result to metrics.jsonl");
  pb_json_free(&j);
}

/* The three accuracies of the checkpoint at ckpt into row. Network agents
 * answer in batches on this thread; the test set is the same for every
 * version, so the figures are comparable along a run. */
static int measure_accuracy(pb_evalrun_t *r, const char *ckpt,
                            pb_elotable_row_t *row, pb_err_t *err) {
  const size_t slen = strlen(ckpt) + 64;
  char *spec = malloc(slen);
  if (spec == NULL) return pb_err_set(err, PB_ENOMEM, "evalrun: no memory");
  double *dst[3] = {&row->acc_q, &row->acc_v, &row->acc_beam};
  double t0 = pb_now();
  int rc = 0;
  for (int k = 0; k < 3 && rc == 0; k++) {
    if (r->o.stop != NULL && *r->o.stop) {
      rc = pb_err_set(err, PB_EINTR, "evaluation stopped");
      break;
    }
    if (k == 0)
      snprintf(spec, slen, "checkpoint:%s,precision=%s", ckpt,
               r->o.precision);
    else if (k == 1)
      snprintf(spec, slen, "value:%s,precision=%s", ckpt, r->o.precision);
    else
      pb_evalrun_search_spec(&r->o, ckpt, spec, slen, NULL, 0);
    pb_accuracy_t a;
    /* A stop (Ctrl-C on probs train) ends a long accuracy pass within
     * a chunk of positions, not after it. */
    rc = pb_accuracy_until(r->testset, spec, r->o.seed, 1, r->o.stop, &a, err);
    if (rc == 0) *dst[k] = a.share;
  }
  r->acc_seconds = pb_now() - t0;
  free(spec);
  return rc;
}

/* Minutes between the run's version-0 checkpoint and ckpt (their
 * modification times), or NAN. */
static double run_minutes(const pb_evalrun_t *r, const char *ckpt) {
  char first[PB__PATH];
  pb_rundir_ckpt_path(r->dir, 0, first, sizeof first);
  struct stat a, b;
  if (stat(first, &a) != 0 || stat(ckpt, &b) != 0) return NAN;
  double d = (double)(b.st_mtim.tv_sec - a.st_mtim.tv_sec) +
             1e-9 * (double)(b.st_mtim.tv_nsec - a.st_mtim.tv_nsec);
  return d >= 0 ? d / 60.0 : NAN;
}

/* The games of version's rating into RUN_DIR/games/eval-vNNNNNN.jsonl
 * (and .ggf), each file written whole (temporary file, rename): a rating
 * made again writes the same games again. A failure is only logged: the
 * rating is what matters. */
static void write_games(pb_evalrun_t *r, uint64_t version, const char *jsonl,
                        const char *ggf) {
  char path[PB__PATH];
  pb_err_t e;
  pb_err_clear(&e);
  snprintf(path, sizeof path, "%s/games", r->dir);
  int rc = pb_mkdir_p(path, &e);
  const char *text[2] = {jsonl, ggf};
  static const char *const ext[2] = {"jsonl", "ggf"};
  for (int k = 0; k < 2 && rc == 0; k++) {
    if (text[k] == NULL) continue;
    snprintf(path, sizeof path, "%s/games/eval-v%06llu.%s", r->dir,
             (unsigned long long)version, ext[k]);
    rc = pb_write_file(path, text[k], strlen(text[k]), &e);
  }
  if (rc != 0)
    pb_log_warn(r->d.log, "version %llu: its games were not recorded: %s",
                (unsigned long long)version, e.msg);
}

int pb_evalrun_rate(pb_evalrun_t *r, uint64_t version, pb_err_t *err) {
  if (r == NULL) return pb_err_set(err, PB_EINVAL, "evalrun: NULL run");
  char ckpt[PB__PATH], path[PB__PATH];
  pb_rundir_ckpt_path(r->dir, (unsigned long long)version, ckpt, sizeof ckpt);
  pb_elotable_row_t row;
  char *jsonl = NULL, *ggf = NULL;
  int rc = pb_evalrun_play_games(&r->o, ckpt, version, &row, &jsonl, &ggf,
                                 err);
  if (rc != 0) return rc;
  /* Before the row: a version in elo.csv has its games on disk. */
  write_games(r, version, jsonl, ggf);
  free(jsonl);
  free(ggf);
  if (r->testset != NULL && (rc = measure_accuracy(r, ckpt, &row, err)) != 0)
    return rc;
  row.minutes = run_minutes(r, ckpt);
  if ((rc = pb_elotable_put(r->table, &row, err)) != 0) return rc;
  snprintf(path, sizeof path, "%s/elo.csv", r->dir);
  if ((rc = pb_elotable_save(r->table, path, err)) != 0) return rc;
  if ((rc = pb__evalrun_write_charts(r, err)) != 0) return rc;
  report(r, &row);
  return 0;
}

/* Errors that concern one checkpoint file, not the whole evaluation. */
static int about_checkpoint(int rc) {
  return rc == PB_EIO || rc == PB_ECORRUPT || rc == PB_EMISMATCH ||
         rc == PB_ENOTFOUND || rc == PB_EUNSUPP || rc == PB_ENN ||
         rc == PB_ECONFIG;
}

/* Logs why `version` was not rated: at info level when its checkpoint is
 * gone (the learner pruned it: run.keep_last / run.keep_every), else as a
 * warning with the error. */
static void log_skip(const pb_evalrun_t *r, uint64_t version,
                     const pb_err_t *e) {
  char ckpt[PB__PATH];
  struct stat st;
  pb_rundir_ckpt_path(r->dir, (unsigned long long)version, ckpt, sizeof ckpt);
  if (stat(ckpt, &st) != 0 && errno == ENOENT)
    pb_log_info(r->d.log,
                "version %llu skipped: %s is gone (pruned by the learner, "
                "run.keep_last / run.keep_every) before it could be rated",
                (unsigned long long)version, ckpt);
  else
    pb_log_warn(r->d.log, "version %llu skipped: %s",
                (unsigned long long)version, e->msg);
}

int pb_evalrun_all(pb_evalrun_t *r, int *rated, pb_err_t *err) {
  if (rated != NULL) *rated = 0;
  uint64_t *v = NULL;
  size_t n = 0;
  int rc = pb_rundir_versions(r->dir, &v, &n, err);
  if (rc != 0) return rc;
  for (size_t i = 0; i < n && rc == 0; i++) {
    /* Every version elo.csv lacks, whatever `every` says: --all fills
     * the gaps that following (and eval.every) left. */
    if (pb_elotable_find(r->table, v[i]) != NULL) continue;
    pb_err_t e;
    pb_err_clear(&e);
    rc = pb_evalrun_rate(r, v[i], &e);
    if (rc == 0) {
      if (rated != NULL) (*rated)++;
    } else if (about_checkpoint(rc)) {
      log_skip(r, v[i], &e);
      rc = 0;
    } else if (err != NULL) {
      *err = e;
    }
  }
  if (n > 0 && (!r->seen_any || v[n - 1] > r->seen_max)) {
    r->seen_any = 1;
    r->seen_max = v[n - 1];
  }
  free(v);
  return rc;
}

int pb_evalrun_follow_step(pb_evalrun_t *r, int final, uint64_t *rated,
                           pb_err_t *err) {
  uint64_t *v = NULL;
  size_t n = 0;
  int rc = pb_rundir_versions(r->dir, &v, &n, err);
  if (rc != 0) return rc;
  if (n == 0) {
    free(v);
    return 0;
  }
  uint64_t newest = v[n - 1];
  int have = 0;
  uint64_t target = 0;
  if (final) {
    if (pb_elotable_find(r->table, newest) == NULL) {
      have = 1;
      target = newest;
    }
  } else {
    for (size_t i = n; i-- > 0;) {
      if (r->seen_any && v[i] <= r->seen_max) break;
      if (v[i] % (uint64_t)r->d.every == 0 &&
          pb_elotable_find(r->table, v[i]) == NULL) {
        have = 1;
        target = v[i];
        break;
      }
    }
  }
  /* Versions passed over: newer than what was seen, older than the one
   * rated now (the rest stay for --all). */
  if (have) {
    int skipped = 0;
    uint64_t first = 0, last = 0;
    for (size_t i = 0; i < n; i++) {
      if ((r->seen_any && v[i] <= r->seen_max) || v[i] >= target) continue;
      if (v[i] % (uint64_t)r->d.every != 0) continue;
      if (pb_elotable_find(r->table, v[i]) != NULL) continue;
      if (skipped++ == 0) first = v[i];
      last = v[i];
    }
    if (skipped > 0)
      pb_log_info(r->d.log,
                  "behind the learner: skipping %d version%s (%llu..%llu) "
                  "to rate the newest, %llu (rate them later with --all)",
                  skipped, skipped > 1 ? "s" : "", (unsigned long long)first,
                  (unsigned long long)last, (unsigned long long)target);
  }
  if (!r->seen_any || newest > r->seen_max) {
    r->seen_any = 1;
    r->seen_max = newest;
  }
  free(v);
  if (!have) return 0;
  pb_err_t e;
  pb_err_clear(&e);
  rc = pb_evalrun_rate(r, target, &e);
  if (rc == 0) {
    if (rated != NULL) *rated = target;
    return 1;
  }
  if (about_checkpoint(rc)) {
    log_skip(r, target, &e);
    return 0;
  }
  if (err != NULL) *err = e;
  return rc;
}
