/* test_web.c - common/web/web: the page and its JSON endpoints against a sample
 * run directory written here (metrics.jsonl lines as the learner and the
 * evaluator write them, an elo.csv, a checkpoint): /api/history picks the
 * iteration records, keeps bounds and summarises; /status gets its extra
 * members (the evaluator from its lock and elo.csv, the board's player);
 * a stopped run's elapsed time; the help text per game; the evaluator's
 * charts; /api/move answers legal, illegal, garbled and too long input,
 * from the newest checkpoint or a pinned one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "elotable.h"
#include "evalrun.h"
#include "json.h"
#include "learn.h"
#include "rundir.h"
#include "util.h"
#include "web.h"
#include "webplay.h"
#include "rundir_fixtures.h"

typedef struct {
  char dir[64];
  pb_config_t cfg;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  pb_err_t err;
  if (f == NULL || rundir_fixture_open(f->dir, sizeof f->dir, "web",
                                       "connect4-smoke.yaml", 1, &f->cfg) != 0)
    return -1;
  if (pb_config_set(&f->cfg, "train.iterations", "10", &err) != 0) {
    fprintf(stderr, "fixture: %s\n", err.msg);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  int rc = rundir_fixture_remove(f->dir);
  free(f);
  return rc;
}

static void write_file(const fx_t *f, const char *name, const char *text) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", f->dir, name);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
}

/* An iteration record as pb_iter_report writes it (shortened). */
static void rec(char *buf, size_t n, int v, double iter_s, double vl,
                double ql, double unix_time) {
  char ut[64] = "";
  if (unix_time > 0) snprintf(ut, sizeof ut, ",\"unix_time\":%.3f", unix_time);
  snprintf(buf, n,
           "{\"event\":\"iteration\",\"mode\":\"distributed\",\"iteration\":%d,"
           "\"version\":%d,\"episodes\":20,\"positions\":400,"
           "\"iteration_s\":%g,\"v_loss\":%g,\"q_loss\":%g%s}\n",
           v, v, iter_s, vl, ql, ut);
}

static char *history(pb_web_t *w) {
  pb_err_t err;
  char *b = NULL;
  size_t n = 0;
  if (pb_web_history(w, &b, &n, &err) != 0) fail_msg("%s", err.msg);
  assert_int_equal(n, strlen(b));
  assert_int_equal(pb_json_validate(b), 0);
  return b;
}

static void test_history(void **state) {
  fx_t *f = *state;
  pb_err_t err;
  pb_web_t *w = pb_web_new(&f->cfg, &err);
  assert_non_null(w);
  /* An empty run dir. */
  char *h = history(w);
  assert_non_null(strstr(h, "\"run\":\"c4-smoke\""));
  assert_non_null(strstr(h, "\"game\":\"connect4\""));
  assert_non_null(strstr(h, "\"iterations\":10"));
  assert_non_null(strstr(h, "\"records\":[]"));
  assert_non_null(strstr(h, "\"elo\":[]"));
  assert_non_null(strstr(h, "\"count\":0"));
  assert_non_null(strstr(h, "\"eta_s\":null"));
  free(h);

  /* Iteration records among other events, a garbled line, and a last
   * line still being written. */
  char r1[512], r2[512], r3[512], all[4096];
  rec(r1, sizeof r1, 1, 2.0, 0.5, 0.25, 0);
  rec(r2, sizeof r2, 2, 3.0, 0.4, 0.2, 0);
  rec(r3, sizeof r3, 3, 4.0, 0.3, 0.125, 0);
  snprintf(all, sizeof all,
           "{\"event\":\"start\",\"run\":\"c4-smoke\"}\n%s"
           "{\"event\":\"elo\",\"version\":1,\"elo\":1000}\n%s"
           "{\"event\":\"iteration\",\"version\":9, garbled\n%s"
           "{\"event\":\"iteration\",\"version\":4,",
           r1, r2, r3);
  write_file(f, "metrics.jsonl", all);
  /* elo.csv for the config's opponents. */
  pb_evalrun_opts_t o;
  assert_int_equal(pb_evalrun_opts_from_config(&o, &f->cfg, &err), 0);
  pb_elotable_t *t = pb_elotable_new(
      (const char(*)[PB_ELOTABLE_SPEC_MAX])o.opponents, o.n_opponents, &err);
  assert_non_null(t);
  for (int v = 0; v <= 2; v += 2) {
    pb_elotable_row_t r;
    memset(&r, 0, sizeof r);
    r.version = r.iteration = (uint64_t)v;
    r.elo = 1000 + 100 * v;
    r.lo = r.elo - 50;
    r.hi = r.elo + 50;
    r.n_opponents = o.n_opponents;
    r.games = 8;
    r.wdl[0][0] = 5; /* W, D, L against the first opponent */
    r.wdl[0][2] = 3;
    r.acc_q = 0.25 * v;
    r.acc_v = r.acc_beam = NAN;
    r.minutes = 0.5 * v;
    assert_int_equal(pb_elotable_put(t, &r, &err), 0);
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/elo.csv", f->dir);
  assert_int_equal(pb_elotable_save(t, path, &err), 0);
  pb_elotable_destroy(&t);

  h = history(w);
  assert_non_null(strstr(h, "\"count\":3"));
  assert_non_null(strstr(h, "\"version\":3,\"mean_iteration_s\":3,"));
  assert_non_null(strstr(h, "\"elapsed_s\":9,")); /* 2 + 3 + 4 */
  assert_non_null(strstr(h, "\"eta_s\":21}"));    /* 3 s x 7 left */
  assert_non_null(strstr(h, "\"truncated\":false"));
  assert_null(strstr(h, "garbled"));
  /* The evaluator's line is no record: it is last_elo, the last member. */
  const char *le = strstr(h, "\"event\":\"elo\"");
  assert_non_null(le);
  assert_null(strstr(le + 1, "\"event\":\"elo\""));
  assert_non_null(strstr(h,
                         ",\"last_elo\":{\"event\":\"elo\",\"version\":1,"
                         "\"elo\":1000}}"));
  assert_null(strstr(h, "\"event\":\"start\""));
  assert_null(strstr(h, "\"version\":4"));
  /* The records as written, in order. */
  r1[strlen(r1) - 1] = '\0';
  r3[strlen(r3) - 1] = '\0';
  const char *p1 = strstr(h, r1), *p3 = strstr(h, r3);
  assert_non_null(p1);
  assert_non_null(p3);
  assert_true(p1 < p3);
  assert_non_null(strstr(h, "\"elo\":[{\"iteration\":0,\"version\":0,"
                            "\"elo\":1000,\"elo_lo\":950,\"elo_hi\":1050,"
                            "\"acc_q\":0,\"acc_v\":null,\"acc_beam\":null,"
                            "\"minutes\":0,\"games\":8},{\"iteration\":2"));
  assert_non_null(strstr(h, "\"elo\":1200,"));
  free(h);

  /* /status's members. */
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kint(&j, "x", 1);
  assert_int_equal(pb_web_status(w, &j), 0);
  pb_json_obj_end(&j);
  assert_int_equal(pb_json_error(&j), 0);
  const char *s = pb_json_cstr(&j);
  assert_int_equal(pb_json_validate(s), 0);
  assert_non_null(strstr(s, "\"elapsed_s\":9,\"eta_s\":21,"));
  assert_non_null(strstr(s, "\"last_iteration\":{\"event\":\"iteration\","
                            "\"mode\":\"distributed\",\"iteration\":3,"));
  /* The evaluator, from its lock (nobody holds it) and elo.csv (versions
   * 0 and 2); the board's player (no move yet, not pinned). */
  assert_non_null(strstr(s, "\"evaluator\":{\"running\":false,\"rated\":2,"
                            "\"rated_version\":2}"));
  assert_non_null(strstr(s, "\"play\":{\"version\":null,\"pinned\":false}"));
  pb_json_free(&j);
  /* An evaluator holding its lock is seen running. */
  int lk = pb_rundir_lock_evaluator(f->dir, NULL);
  assert_true(lk >= 0);
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  assert_int_equal(pb_web_status(w, &j), 0);
  pb_json_obj_end(&j);
  assert_non_null(strstr(pb_json_cstr(&j), "\"evaluator\":{\"running\":true,"));
  pb_json_free(&j);
  close(lk);
  pb_web_summary_t sum;
  assert_int_equal(pb_web_summary(w, &sum), 0);
  assert_int_equal(sum.count, 3);
  assert_int_equal(sum.version, 3);
  assert_true(fabs(sum.mean_iteration_s - 3.0) < 1e-9);
  assert_true(isnan(sum.last_unix_time));

  /* unix_time, when present, gives the wall time since the start: the
   * first record's time less its iteration_s. */
  double now = (double)time(NULL);
  rec(r1, sizeof r1, 1, 2.0, 0.5, 0.25, now - 100);
  rec(r2, sizeof r2, 2, 3.0, 0.4, 0.2, now - 50);
  snprintf(all, sizeof all, "%s%s", r1, r2);
  write_file(f, "metrics.jsonl", all);
  h = history(w);
  const char *e = strstr(h, "\"elapsed_s\":");
  assert_non_null(e);
  double el = strtod(e + 12, NULL);
  assert_true(el >= 101.0 && el < 160.0);
  assert_non_null(strstr(h, "\"unix_time\":"));
  free(h);
  /* A run that has stopped ended with its newest record: 2 + 100 - 50 s,
   * and no ETA while iterations are left. */
  pb_web_set_live(w, 0);
  h = history(w);
  e = strstr(h, "\"elapsed_s\":");
  el = strtod(e + 12, NULL);
  assert_true(fabs(el - 52.0) < 0.01);
  assert_non_null(strstr(h, "\"eta_s\":null"));
  free(h);
  assert_int_equal(pb_web_summary(w, &sum), 0);
  assert_true(fabs(sum.last_unix_time - (now - 50)) < 0.01);
  pb_web_destroy(&w);
  assert_null(w);
  pb_web_destroy(&w);
  pb_web_destroy(NULL);
}

/* A long run: only the tail is read, the newest records kept. */
static void test_history_bounds(void **state) {
  fx_t *f = *state;
  char path[4200];
  snprintf(path, sizeof path, "%s/metrics.jsonl", f->dir);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  char r[512], pad[400];
  memset(pad, 'p', sizeof pad - 1);
  pad[sizeof pad - 1] = '\0';
  const int n = 12000; /* about 6 MB */
  for (int v = 1; v <= n; v++) {
    rec(r, sizeof r, v, 1.0, 0.5, 0.25, 0);
    r[strlen(r) - 2] = '\0'; /* drop "}\n" to add a padding member */
    fprintf(fp, "%s,\"pad\":\"%s\"}\n", r, pad);
  }
  fclose(fp);
  pb_err_t err;
  pb_web_t *w = pb_web_new(&f->cfg, &err);
  assert_non_null(w);
  char *h = history(w);
  assert_true(strlen(h) <= PB_WEB_TAIL_BYTES + 4096);
  assert_non_null(strstr(h, "\"truncated\":true"));
  assert_non_null(strstr(h, "\"count\":5000"));
  char want[64];
  snprintf(want, sizeof want, "\"version\":%d,\"mean_iteration_s\":1,", n);
  assert_non_null(strstr(h, want));
  snprintf(want, sizeof want, "\"iteration\":%d,", n - 4999);
  assert_non_null(strstr(h, want));
  snprintf(want, sizeof want, "\"iteration\":%d,", n - 5000);
  assert_null(strstr(h, want));
  assert_non_null(strstr(h, "\"eta_s\":0}")); /* past train.iterations */
  free(h);
  /* Unchanged files are not read again: the same answer. */
  char *h2 = history(w);
  assert_non_null(strstr(h2, "\"count\":5000"));
  free(h2);
  pb_web_destroy(&w);
}

static void route(pb_web_t *w, const char *path, const char *query,
                  int status, const char *needle) {
  pb_http_response_t res = {404, NULL, NULL, 0};
  assert_int_equal(pb_web_handle(w, path, query, &res), 1);
  if (res.status != status)
    fail_msg("%s?%s: status %d, want %d: %.*s", path, query ? query : "",
             res.status, status, (int)res.body_len, res.body ? res.body : "");
  assert_non_null(res.body);
  assert_int_equal(res.body_len, strlen(res.body));
  if (needle != NULL && strstr(res.body, needle) == NULL)
    fail_msg("%s?%s: no \"%s\" in %s", path, query ? query : "", needle,
             res.body);
  if (res.status == 200 && strstr(path, ".svg") != NULL) {
    assert_string_equal(res.content_type, "image/svg+xml");
  } else if (strcmp(path, "/") != 0 && strcmp(path, "/play") != 0) {
    assert_string_equal(res.content_type, "application/json");
    assert_int_equal(pb_json_validate(res.body), 0);
  }
  free(res.body);
}

static void test_routes(void **state) {
  fx_t *f = *state;
  pb_err_t err;
  pb_web_t *w = pb_web_new(&f->cfg, &err);
  assert_non_null(w);
  /* The page. */
  pb_http_response_t res = {404, NULL, NULL, 0};
  assert_int_equal(pb_web_handle(w, "/", NULL, &res), 1);
  assert_int_equal(res.status, 200);
  assert_string_equal(res.content_type, "text/html; charset=utf-8");
  assert_non_null(strstr(res.body, "<title>probs</title>"));
  /* Help text for each game, not one game's for all. */
  assert_non_null(strstr(res.body, "connect4: \"Click a column"));
  assert_non_null(strstr(res.body, "toguz: \"Press the number"));
  assert_null(strstr(res.body, "in Toguz Kumalak, a hole number"));
  assert_non_null(strstr(res.body, "/api/move?moves="));
  /* Nothing loaded from elsewhere. */
  assert_null(strstr(res.body, "<script src"));
  assert_null(strstr(res.body, "<link"));
  assert_null(strstr(res.body, "https://"));
  free(res.body);
  route(w, "/play", "", 200, "<svg");
  /* Not ours. */
  res = (pb_http_response_t){404, NULL, NULL, 0};
  assert_int_equal(pb_web_handle(w, "/status", NULL, &res), 0);
  assert_int_equal(pb_web_handle(w, "/api", NULL, &res), 0);
  assert_int_equal(pb_web_handle(w, "/api/move/", NULL, &res), 0);
  assert_int_equal(res.status, 404);
  assert_null(res.body);
  assert_int_equal(pb_web_handle(NULL, "/", NULL, &res), 0);

  route(w, "/api/history", NULL, 200, "\"records\":[]");
  /* The evaluator's charts: 404 before it wrote them, then as on disk. */
  route(w, "/elo.svg", NULL, 404, "no chart yet");
  route(w, "/elo-time.svg", NULL, 404, "no chart yet");
  write_file(f, "elo.svg", "<svg>by version</svg>");
  write_file(f, "elo-time.svg", "<svg>by wall time</svg>");
  route(w, "/elo.svg", NULL, 200, "<svg>by version</svg>");
  route(w, "/elo-time.svg", "x=1", 200, "<svg>by wall time</svg>");
  res = (pb_http_response_t){404, NULL, NULL, 0};
  assert_int_equal(pb_web_handle(w, "/elo.svg", NULL, &res), 1);
  assert_string_equal(res.content_type, "image/svg+xml");
  free(res.body);
  res = (pb_http_response_t){404, NULL, NULL, 0};
  assert_int_equal(pb_web_handle(w, "/learner.log", NULL, &res), 0);
  assert_int_equal(pb_web_handle(w, "/../elo.svg", NULL, &res), 0);
  /* Moves before there is a checkpoint. */
  route(w, "/api/move", "moves=4&reply=0", 200, "\"moves\":\"4\"");
  route(w, "/api/move", "moves=4", 503, "no checkpoint");
  /* A checkpoint: the model answers. */
  char path[4200];
  snprintf(path, sizeof path, "%s/checkpoints", f->dir);
  assert_int_equal(pb_mkdir_p(path, &err), 0);
  pb_rundir_ckpt_path(f->dir, 2, path, sizeof path);
  pb_learn_t *l = pb_learn_new(&f->cfg, &err);
  assert_non_null(l);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  pb_learn_destroy(&l);
  route(w, "/api/move", "moves=4", 200, "\"version\":2");
  /* Pinned to a version: it plays that one, newer ones or not; a missing
   * version is refused and changes nothing; unpinned, the newest again. */
  assert_int_equal(pb_web_pin(w, 5, &err), PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "ckpt-000005.pbck"));
  pb_rundir_ckpt_path(f->dir, 1, path, sizeof path);
  l = pb_learn_new(&f->cfg, &err);
  assert_non_null(l);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  pb_learn_destroy(&l);
  assert_int_equal(pb_web_pin(w, 1, &err), 0);
  route(w, "/api/move", "moves=4", 200, "\"version\":1");
  pb_json_t js;
  pb_json_init(&js);
  pb_json_obj_begin(&js);
  assert_int_equal(pb_web_status(w, &js), 0);
  pb_json_obj_end(&js);
  assert_non_null(
      strstr(pb_json_cstr(&js), "\"play\":{\"version\":1,\"pinned\":true}"));
  pb_json_free(&js);
  assert_int_equal(pb_web_pin(w, -1, &err), 0);
  route(w, "/api/move", "moves=4", 200, "\"version\":2");
  route(w, "/api/move", "moves=4&reply=1", 200, "\"ply\":2");
  route(w, "/api/move", "", 200, "\"ply\":1"); /* the model opens */
  route(w, "/api/move", NULL, 200, "\"ply\":1");
  route(w, "/api/move", "moves=4+4%2C5", 200, "\"ply\":4");
  route(w, "/api/move", "x=1&moves=%34", 200, "\"moves\":\"4");
  /* Refused, with a message. */
  route(w, "/api/move", "moves=8", 400, "bad character '8'");
  route(w, "/api/move", "moves=4444444", 400, "\"error\":");    /* full */
  route(w, "/api/move", "moves=4x", 400, "\"error\":");
  route(w, "/api/move", "moves=%zz", 400, "percent-encoding");
  route(w, "/api/move", "moves=4%00", 400, "percent-encoding");
  route(w, "/api/move", "moves=%", 400, "percent-encoding");
  route(w, "/api/move", "moves=%22%3Cscript%3E", 400, "\"error\":");
  route(w, "/api/move", "moves=4&reply=2", 400, "reply must be 0 or 1");
  route(w, "/api/move", "moves=4&reply=", 400, "reply must be 0 or 1");
  route(w, "/api/move", "moves=4&reply=%", 400, "reply must be 0 or 1");
  /* Connect Four after the game's end: X wins in column 1. */
  route(w, "/api/move", "moves=1212121", 200, "\"result\":\"X wins\"");
  route(w, "/api/move", "moves=12121212", 400, "after the end");
  /* Too long: one character over, and far over. */
  char *q = malloc(PB_WEBPLAY_MOVES_MAX + 64);
  strcpy(q, "moves=");
  memset(q + 6, '4', PB_WEBPLAY_MOVES_MAX + 1);
  q[6 + PB_WEBPLAY_MOVES_MAX + 1] = '\0';
  route(w, "/api/move", q, 400, "longer than");
  free(q);
  q = malloc(20000);
  strcpy(q, "moves=");
  for (int i = 0; i < 6000; i++) memcpy(q + 6 + 3 * i, "%34", 3);
  q[6 + 18000] = '\0';
  route(w, "/api/move", q, 400, "longer than");
  free(q);
  pb_web_destroy(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_history, setup, teardown),
      cmocka_unit_test_setup_teardown(test_history_bounds, setup, teardown),
      cmocka_unit_test_setup_teardown(test_routes, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
