/* test_inproc.c - Algorithm 2 end to end in one process (common/train/inproc.c,
 * common/train/learn.c): a short seeded training run must make losses fall and
 * the greedy agent beat random clearly more often than before training; a
 * run stopped and resumed trains on exactly the same data as one that ran
 * straight through; a corrupt checkpoint is refused on resume; checkpoint
 * retention (run.keep_last / run.keep_every) leaves exactly the expected
 * files, resumes, and spares what a live evaluator has not rated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "evalrun.h"
#include "game.h"
#include "inproc.h"
#include "match.h"
#include "nn.h"
#include "proc.h"
#include "rundir.h"

#define CONFIG PB_SOURCE_DIR "/configs/connect4-smoke.yaml"

static void load(pb_config_t *c, const char *dir, const char *const *sets) {
  pb_err_t err;
  pb_config_defaults(c);
  assert_int_equal(pb_config_load_file(c, CONFIG, &err), 0);
  assert_int_equal(pb_config_set(c, "run.dir", dir, &err), 0);
  for (int i = 0; sets && sets[i]; i++)
    assert_int_equal(pb_config_apply_override(c, sets[i], &err), 0);
}

static int run(const pb_config_t *c, int resume, int iterations) {
  pb_err_t err;
  pb_err_clear(&err);
  pb_inproc_opts_t o = {.resume = resume, .iterations_override = iterations};
  int rc = pb_inproc_run(c, NULL, &o, &err);
  if (rc != 0) print_error("inproc: %s\n", err.msg);
  return rc;
}

static int metric(const char *dir, const char *key, double *out, int max) {
  char path[512];
  snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
  char *b = tp_slurp(path);
  if (!b) return 0;
  int n = 0;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  /* The iteration lines alone (a phase past 5 s adds progress lines). */
  for (char *line = strtok(b, "\n"); line != NULL && n < max;
       line = strtok(NULL, "\n")) {
    char *p = strstr(line, pat);
    if (p != NULL && strstr(line, "\"event\":\"iteration\"") != NULL)
      out[n++] = strtod(p + strlen(pat), NULL);
  }
  free(b);
  return n;
}

static double score_vs_random(const char *dir, int version) {
  char spec[600];
  snprintf(spec, sizeof spec, "checkpoint:%s/checkpoints/ckpt-%06d.pbck", dir,
           version);
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = spec;
  o.b_spec = "random";
  o.games = 200;
  o.seed = 3;
  o.threads = 1;
  o.opening_random_moves = 2;
  pb_match_result_t r;
  pb_err_t err;
  assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), 0);
  return (r.wins + 0.5 * r.draws) / r.games;
}

/* Ten iterations of 200 games with the ~10K-parameter networks. */
static void test_training_improves_play(void **state) {
  (void)state;
  char dir[256];
  tp_tmpdir(dir, sizeof dir, "learn");
  static const char *const sets[] = {
      "train.iterations=10", "train.episodes_per_iter=200",
      "train.selfplay_parallel=64", "model.v.conv_layers=2",
      "model.v.conv_channels=16", "model.v.dense_units=12",
      "model.q.conv_layers=2", "model.q.conv_channels=16",
      "model.q.dense_units=12", NULL};
  pb_config_t c;
  load(&c, dir, sets);
  assert_int_equal(run(&c, 0, 0), 0);
  double v[16], q[16];
  assert_int_equal(metric(dir, "v_loss", v, 16), 10);
  assert_int_equal(metric(dir, "q_loss", q, 16), 10);
  double v_end = (v[7] + v[8] + v[9]) / 3, q_end = (q[7] + q[8] + q[9]) / 3;
  print_message("V loss %.3f -> %.3f, Q loss %.3f -> %.3f\n", v[0], v_end, q[0],
                q_end);
  assert_true(v_end < v[0]);
  assert_true(q_end < 0.8 * q[0]);
  double before = score_vs_random(dir, 0), after = score_vs_random(dir, 10);
  print_message("score against random: %.3f before, %.3f after\n", before,
                after);
  /* 200 games each: the standard error of a difference is about 0.04. */
  assert_true(after >= before + 0.1);
  assert_true(after >= 0.85);
}

/* 2 iterations, stop, resume to 4 == 4 straight: same targets, same
 * losses (networks, optimizer moments and RNG streams all restored). */
static void test_resume_is_exact(void **state) {
  (void)state;
  char a[256], b[256];
  tp_tmpdir(a, sizeof a, "straight");
  tp_tmpdir(b, sizeof b, "resumed");
  pb_config_t ca, cb;
  load(&ca, a, NULL);
  load(&cb, b, NULL);
  assert_int_equal(run(&ca, 0, 4), 0);
  assert_int_equal(run(&cb, 0, 2), 0);
  assert_int_equal(run(&cb, 1, 4), 0);
  const char *keys[] = {"targets_crc", "v_loss", "q_loss"};
  for (int k = 0; k < 3; k++) {
    double x[8], y[8];
    assert_int_equal(metric(a, keys[k], x, 8), 4);
    assert_int_equal(metric(b, keys[k], y, 8), 4);
    for (int i = 0; i < 4; i++) assert_true(x[i] == y[i]);
  }
}

/* The newest checkpoint is torn: resume takes the one before it. All
 * corrupt: resume refuses instead of starting over on top of them. */
static void test_resume_skips_corrupt(void **state) {
  (void)state;
  char d[256], p[600];
  tp_tmpdir(d, sizeof d, "corrupt");
  pb_config_t c;
  load(&c, d, NULL);
  assert_int_equal(run(&c, 0, 2), 0);
  snprintf(p, sizeof p, "%s/checkpoints/ckpt-000002.pbck", d);
  assert_int_equal(truncate(p, 100), 0);
  assert_int_equal(run(&c, 1, 3), 0);
  double it[8];
  int n = metric(d, "iteration", it, 8);
  assert_true(n == 4 && it[2] == 2.0 && it[3] == 3.0); /* redid 2, then 3 */
  for (int v = 0; v <= 3; v++) {
    snprintf(p, sizeof p, "%s/checkpoints/ckpt-%06d.pbck", d, v);
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, 40, SEEK_SET);
    fputc(0x5A, f);
    fclose(f);
  }
  pb_err_t err;
  pb_inproc_opts_t o = {.resume = 1, .iterations_override = 4};
  assert_true(pb_inproc_run(&c, NULL, &o, &err) != 0);
  assert_true(strlen(err.msg) > 0);
}

/* Which versions 0..n-1 have a checkpoint, as '1'/'0'; and that the
 * directory holds nothing else (no temporary files). */
static void ckpts(const char *dir, int n, char *out) {
  char p[600];
  int files = 0;
  for (int v = 0; v < n; v++) {
    snprintf(p, sizeof p, "%s/checkpoints/ckpt-%06d.pbck", dir, v);
    out[v] = access(p, F_OK) == 0 ? '1' : '0';
    files += out[v] == '1';
  }
  out[n] = '\0';
  snprintf(p, sizeof p, "ls %s/checkpoints | wc -l > %s/ls.txt", dir, dir);
  assert_int_equal(system(p), 0);
  snprintf(p, sizeof p, "%s/ls.txt", dir);
  char *b = tp_slurp(p);
  assert_non_null(b);
  if (atoi(b) != files)
    fail_msg("%s/checkpoints holds %d entries, %d checkpoints", dir, atoi(b),
             files);
  free(b);
}

/* Retention in a real run: keep the last 2 and every 3rd; resume goes on
 * from the newest; with an evaluator alive (its lock held) nothing newer
 * than its last rating is deleted, and once it is gone pruning resumes. */
static void test_retention(void **state) {
  (void)state;
  char d[256], got[32];
  tp_tmpdir(d, sizeof d, "retain");
  static const char *const sets[] = {"run.keep_last=2", "run.keep_every=3",
                                     "eval.accuracy=false",
                                     "train.iterations=100", NULL};
  pb_config_t c;
  load(&c, d, sets);
  assert_int_equal(run(&c, 0, 5), 0);
  ckpts(d, 12, got);
  assert_string_equal(got, "100111000000"); /* 0, 3 (every 3), 4, 5 */
  assert_int_equal(run(&c, 1, 7), 0);
  ckpts(d, 12, got);
  assert_string_equal(got, "100100110000"); /* 0, 3, 6, 7 */
  double it[16];
  int n = metric(d, "iteration", it, 16);
  assert_true(n == 7 && it[5] == 6.0 && it[6] == 7.0); /* resumed at 6 */

  /* An evaluator starts: it holds the lock and has rated nothing yet, so
   * every checkpoint stays. */
  pb_err_t err;
  pb_evalrun_opts_t eo;
  assert_int_equal(pb_evalrun_opts_from_config(&eo, &c, &err), 0);
  char logpath[600];
  snprintf(logpath, sizeof logpath, "%s/eval.log", d);
  pb_log_t *elog = pb_log_new("evaluator", logpath, PB_LOG_INFO, &err);
  assert_non_null(elog);
  pb_evalrun_dir_opts_t dopt = {1, 0, elog, NULL};
  pb_evalrun_t *ev = pb_evalrun_new(d, &eo, &dopt, &err);
  assert_non_null(ev);
  uint64_t from = 1;
  assert_int_equal(pb_rundir_protect_from(d, &from, &err), 0);
  assert_true(from == 0);
  assert_int_equal(run(&c, 1, 9), 0);
  ckpts(d, 12, got);
  assert_string_equal(got, "100100111100"); /* 7 and 8 kept: unrated */
  /* It rates 7: versions from 8 on stay, 7 may go now. */
  assert_int_equal(pb_evalrun_rate(ev, 7, &err), 0);
  assert_int_equal(pb_rundir_protect_from(d, &from, &err), 0);
  assert_true(from == 8);
  assert_int_equal(run(&c, 1, 10), 0);
  ckpts(d, 12, got);
  assert_string_equal(got, "100100101110"); /* 0 3 6 9 10 and 8 */
  /* A checkpoint pruned before the evaluator got to it: skipped, no
   * failure (the follow step and --all go on). */
  pb_err_clear(&err);
  int rc = pb_evalrun_rate(ev, 7, &err); /* rated before, now gone */
  assert_true(rc != 0);
  assert_non_null(strstr(err.msg, "ckpt-000007.pbck"));
  assert_true(pb_evalrun_follow_step(ev, 0, NULL, &err) >= 0);
  /* One that vanishes between the listing and the rating (a dangling link
   * stands for it): skipped with an info line naming it, the rest rated. */
  char link[600];
  snprintf(link, sizeof link, "%s/checkpoints/ckpt-000050.pbck", d);
  assert_int_equal(symlink("/nonexistent/ckpt", link), 0);
  int rated = -1;
  assert_int_equal(pb_evalrun_all(ev, &rated, &err), 0);
  assert_int_equal(rated, 5); /* 0 3 6 8 9 (10 by the follow step) */
  assert_int_equal(unlink(link), 0);
  /* elo.csv unreadable while the evaluator runs: an error naming it, and
   * the safe answer (protect everything) */
  char csv[600], aside[600];
  snprintf(csv, sizeof csv, "%s/elo.csv", d);
  snprintf(aside, sizeof aside, "%s/elo.csv.aside", d);
  assert_int_equal(rename(csv, aside), 0);
  FILE *f = fopen(csv, "w");
  assert_non_null(f);
  fputs("not,an,elo,table\n", f);
  fclose(f);
  from = 5;
  pb_err_clear(&err);
  assert_int_equal(pb_rundir_protect_from(d, &from, &err), PB_ECORRUPT);
  assert_true(from == 0);
  assert_non_null(strstr(err.msg, "elo.csv"));
  assert_int_equal(rename(aside, csv), 0);
  assert_int_equal(pb_rundir_protect_from(d, &from, &err), 0);
  assert_true(from == 11); /* 10 is the newest rated */
  pb_evalrun_destroy(&ev);
  pb_log_destroy(&elog);
  assert_int_equal(tp_count(logpath, "version 50 skipped: "), 1);
  assert_int_equal(tp_count(logpath, "ckpt-000050.pbck is gone (pruned"), 1);
  assert_int_equal(tp_count(logpath, "WARN"), 0);
  /* The evaluator is gone: nothing protected any more. */
  assert_int_equal(pb_rundir_protect_from(d, &from, &err), 0);
  assert_true(from == UINT64_MAX);
  assert_int_equal(run(&c, 1, 11), 0);
  ckpts(d, 12, got);
  assert_string_equal(got, "100100100111"); /* 0 3 6 9 10 11 */
  /* keep_last 0 keeps everything from here on */
  assert_int_equal(pb_config_set(&c, "run.keep_last", "0", &err), 0);
  assert_int_equal(run(&c, 1, 12), 0);
  ckpts(d, 13, got);
  assert_string_equal(got, "1001001001111");
}

int main(void) {
  pb_nn_set_threads(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_training_improves_play),
      cmocka_unit_test(test_resume_is_exact),
      cmocka_unit_test(test_resume_skips_corrupt),
      cmocka_unit_test(test_retention),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
