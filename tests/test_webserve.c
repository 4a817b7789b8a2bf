/* test_webserve.c - common/web/webserve (probs serve): what it refuses to open
 * (no directory, not a run directory, a bad config.yaml, a bad port, a
 * missing checkpoint to pin, a port in use), the /status it makes from a
 * run directory's files (phase done / running / stopped from the
 * learner's lock and the records' times, version from records and
 * checkpoints, run-id, config.yaml re-read when it changes), its routes,
 * the evaluator's baselines for the Elo chart (/api/history's last_elo),
 * the iteration in progress (/status's progress),
 * and a real HTTP round trip that refuses POST and leaves the run
 * directory as it was. The real program in a browser: test_serve.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "json.h"
#include "learn.h"
#include "rundir.h"
#include "util.h"
#include "webserve.h"
#include "rundir_fixtures.h"

typedef struct {
  char dir[64];
  pb_config_t cfg;
  uv_loop_t loop;
} fx_t;

static void write_file(const char *dir, const char *name, const char *text) {
  char path[PB_RUNDIR_PATH_MAX];
  assert_int_equal(pb_rundir_path(dir, name, path, sizeof path), 0);
  assert_int_equal(pb_write_file(path, text, strlen(text), NULL), 0);
}

/* config.yaml of the fixture's config with train.iterations = iters. */
static void write_config(fx_t *f, int iters) {
  pb_config_t c = f->cfg;
  c.train.iterations = iters;
  char *yaml = NULL;
  pb_err_t err;
  assert_int_equal(pb_config_to_yaml(&c, &yaml, &err), 0);
  write_file(f->dir, PB_RUNDIR_CONFIG, yaml);
  free(yaml);
}

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  if (f == NULL || rundir_fixture_open(f->dir, sizeof f->dir, "webserve",
                                       "connect4-smoke.yaml", 0, &f->cfg) != 0)
    return -1;
  /* Trained elsewhere: run.dir of config.yaml is not where it is now. */
  snprintf(f->cfg.run.dir, sizeof f->cfg.run.dir, "/elsewhere/run");
  if (uv_loop_init(&f->loop) != 0) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  uv_run(&f->loop, UV_RUN_DEFAULT); /* the servers' close callbacks */
  int rc = uv_loop_close(&f->loop);
  if (rundir_fixture_remove(f->dir) != 0) rc = -1;
  free(f);
  return rc;
}

static pb_webserve_t *open_ok(fx_t *f, long long ckpt) {
  pb_webserve_opts_t o = {f->dir, NULL, 0, ckpt};
  pb_err_t err;
  pb_err_clear(&err);
  pb_webserve_t *s = pb_webserve_new(&f->loop, &o, &err);
  if (s == NULL) fail_msg("pb_webserve_new: %s", err.msg);
  assert_true(pb_webserve_port(s) > 0);
  return s;
}

static void refused(fx_t *f, const char *dir, int port, long long ckpt,
                    int code, const char *needle) {
  pb_webserve_opts_t o = {dir, NULL, port, ckpt};
  pb_err_t err;
  pb_err_clear(&err);
  assert_null(pb_webserve_new(&f->loop, &o, &err));
  if (err.code != code || strstr(err.msg, needle) == NULL)
    fail_msg("%s: got %d \"%s\", want %d with \"%s\"", dir ? dir : "NULL",
             err.code, err.msg, code, needle);
}

/* An iteration record of version v written `ago` seconds ago. */
static void rec(char *buf, size_t n, int v, double ago) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  snprintf(buf, n,
           "{\"time\":\"x\",\"unix_time\":%.3f,\"event\":\"iteration\","
           "\"mode\":\"inproc\",\"version\":%d,\"positions\":400,"
           "\"iteration_s\":2,\"selfplay_s\":0.5,\"v_loss\":0.5,"
           "\"q_loss\":0.25,\"selfplay_positions_per_s\":800}\n",
           (double)tv.tv_sec - ago, v);
}

static char *status(pb_webserve_t *s) {
  char *j = pb_webserve_status(s);
  assert_non_null(j);
  if (pb_json_validate(j) != 0) fail_msg("not JSON: %s", j);
  return j;
}

static void has(const char *text, const char *needle) {
  if (strstr(text, needle) == NULL) fail_msg("no %s in %s", needle, text);
}

static void test_refusals(void **state) {
  fx_t *f = *state;
  pb_err_t err;
  assert_null(pb_webserve_new(NULL, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  refused(f, NULL, 0, -1, PB_EINVAL, "NULL");
  refused(f, "/nonexistent/pb_run", 0, -1, PB_ENOTFOUND, "no such directory");
  write_file(f->dir, "plain", "x");
  char path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(f->dir, "plain", path, sizeof path);
  refused(f, path, 0, -1, PB_ECONFIG, "not a run directory");
  refused(f, f->dir, 0, -1, PB_ECONFIG, "no config.yaml");
  write_file(f->dir, PB_RUNDIR_CONFIG, "train:\n  iterations: banana\n");
  refused(f, f->dir, 0, -1, PB_ECONFIG, "not a run directory");
  refused(f, f->dir, 0, -1, PB_ECONFIG, "iterations");
  write_config(f, 3);
  refused(f, f->dir, 70000, -1, PB_EINVAL, "port");
  refused(f, f->dir, -2, -1, PB_EINVAL, "port");
  refused(f, f->dir, 0, 4, PB_ENOTFOUND, "ckpt-000004.pbck");
  /* A port in use: the one the first server holds. */
  pb_webserve_t *s = open_ok(f, -1);
  refused(f, f->dir, pb_webserve_port(s), -1, PB_EIO, "in use");
  pb_webserve_opts_t o = {f->dir, "not-an-address", 0, -1};
  assert_null(pb_webserve_new(&f->loop, &o, &err));
  assert_int_equal(err.code, PB_EINVAL);
  pb_webserve_destroy(&s);
  assert_null(s);
  pb_webserve_destroy(&s);
  pb_webserve_destroy(NULL);
}

static void test_status(void **state) {
  fx_t *f = *state;
  write_config(f, 3);
  pb_webserve_t *s = open_ok(f, -1);
  assert_string_equal(pb_webserve_run(s), "c4-smoke");
  assert_string_equal(pb_webserve_game(s), "connect4");
  /* Nothing yet: stopped at version 0. */
  char *j = status(s);
  has(j,
      "\"serve\":true,\"run\":\"c4-smoke\",\"run_id\":null,"
      "\"game\":\"connect4\",\"version\":0,\"iteration\":0,"
      "\"iterations\":3,\"phase\":\"stopped\"");
  has(j, "\"learner\":{\"running\":false,\"pid\":null}");
  has(j, "\"checkpoints\":{\"count\":0,\"newest\":null}");
  has(j, "\"last_iteration\":null");
  has(j,
      "\"evaluator\":{\"running\":false,\"rated\":0,\"rated_version\":null}");
  free(j);

  /* Two records, an hour old, a checkpoint, a run id: stopped at 2, its
   * elapsed time ends with the newest record, no ETA. */
  char r1[512], r2[512], all[1200];
  rec(r1, sizeof r1, 1, 3605);
  rec(r2, sizeof r2, 2, 3600);
  snprintf(all, sizeof all, "%s%s", r1, r2);
  write_file(f->dir, PB_RUNDIR_METRICS, all);
  write_file(f->dir, PB_RUNDIR_RUN_ID, "c4-smoke-0badcafe\n");
  char path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(f->dir, PB_RUNDIR_CHECKPOINTS, path, sizeof path);
  pb_err_t err;
  assert_int_equal(pb_mkdir_p(path, &err), 0);
  pb_rundir_ckpt_path(f->dir, 1, path, sizeof path);
  pb_learn_t *l = pb_learn_new(&f->cfg, &err);
  assert_non_null(l);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  j = status(s);
  has(j, "\"run_id\":\"c4-smoke-0badcafe\"");
  has(j,
      "\"version\":2,\"iteration\":2,\"iterations\":3,"
      "\"phase\":\"stopped\"");
  has(j, "\"checkpoints\":{\"count\":1,\"newest\":1}");
  has(j, "\"elapsed_s\":7,"); /* 2 s before the first record, + 5 s */
  has(j, "\"eta_s\":null");
  has(j, "\"last_iteration\":{\"time\":\"x\"");
  free(j);

  /* A learner holds its lock: running, the iteration in progress. */
  int fd = pb_rundir_lock_learner(f->dir, &err);
  assert_true(fd >= 0);
  j = status(s);
  has(j,
      "\"version\":2,\"iteration\":3,\"iterations\":3,"
      "\"phase\":\"running\"");
  char pid[64];
  snprintf(pid, sizeof pid, "\"learner\":{\"running\":true,\"pid\":%ld}",
           (long)getpid());
  has(j, pid);
  has(j, "\"eta_s\":2,"); /* 2 s x 1 left */
  free(j);
  close(fd);

  /* No lock, but a record of a moment ago (--inproc): running. */
  rec(r2, sizeof r2, 2, 1);
  snprintf(all, sizeof all, "%s%s", r1, r2);
  write_file(f->dir, PB_RUNDIR_METRICS, all);
  j = status(s);
  has(j, "\"phase\":\"running\"");
  has(j, "\"learner\":{\"running\":false,\"pid\":null}");
  free(j);

  /* A checkpoint newer than the records counts; at train.iterations the
   * run is done. */
  pb_rundir_ckpt_path(f->dir, 3, path, sizeof path);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  pb_learn_destroy(&l);
  j = status(s);
  has(j, "\"version\":3,\"iteration\":3,\"iterations\":3,\"phase\":\"done\"");
  has(j, "\"checkpoints\":{\"count\":2,\"newest\":3}");
  free(j);

  /* config.yaml changes (resumed for more): read again. One that no
   * longer loads is ignored. */
  write_config(f, 8);
  j = status(s);
  has(j, "\"iterations\":8,\"phase\":\"running\"");
  free(j);
  write_file(f->dir, PB_RUNDIR_CONFIG, "game: nonsense\n");
  j = status(s);
  has(j, "\"iterations\":8,");
  free(j);
  pb_webserve_destroy(&s);

  /* Pinned: the board plays version 1, said in /status. */
  write_config(f, 8);
  s = open_ok(f, 1);
  j = status(s);
  has(j, "\"play\":{\"version\":1,\"pinned\":true}");
  free(j);
  pb_webserve_destroy(&s);
}

static void route(pb_webserve_t *s, const char *path, const char *query,
                  int code, const char *needle) {
  pb_http_response_t res = {404, NULL, NULL, 0};
  pb_webserve_handle(s, "GET", path, query, &res);
  if (res.status != code || res.body == NULL ||
      strstr(res.body, needle) == NULL)
    fail_msg("%s: %d %s, want %d with %s", path, res.status,
             res.body ? res.body : "(null)", code, needle);
  assert_int_equal(res.body_len, strlen(res.body));
  free(res.body);
}

static void test_routes(void **state) {
  fx_t *f = *state;
  write_config(f, 3);
  pb_webserve_t *s = open_ok(f, -1);
  route(s, "/status", NULL, 200, "\"serve\":true");
  route(s, "/", NULL, 200, "<title>probs</title>");
  route(s, "/api/history", "", 200, "\"records\":[]");
  route(s, "/api/move", "moves=4&reply=0", 200, "\"moves\":\"4\"");
  route(s, "/api/move", "moves=4", 503, "no checkpoint");
  route(s, "/elo.svg", NULL, 404, "no chart yet");
  route(s, "/metrics", NULL, 404, "read-only");
  route(s, "/config.yaml", NULL, 404, "not found");
  pb_webserve_handle(NULL, "GET", "/", NULL, NULL); /* nothing happens */
  pb_webserve_destroy(&s);
}

/* The evaluator's baselines for the page's Elo chart: /api/history's
 * last_elo is the newest valid "event":"elo" line of metrics.jsonl as
 * written (its opponents' anchors, as elo.svg draws them), null before
 * the evaluator wrote one. */
static void test_history_anchors(void **state) {
  fx_t *f = *state;
  write_config(f, 3);
  char r1[512];
  rec(r1, sizeof r1, 1, 10);
  write_file(f->dir, PB_RUNDIR_METRICS, r1);
  pb_webserve_t *s = open_ok(f, -1);
  route(s, "/api/history", "", 200, "\"last_elo\":null}");
  char text[4096];
  snprintf(text, sizeof text,
           "%s"
           "{\"event\":\"elo\",\"version\":0,\"elo\":500,\"opponents\":"
           "{\"random\":{\"w\":1,\"d\":0,\"l\":3,\"anchor\":900}}}\n"
           "{\"event\":\"elo\",\"version\":1,\"elo\":1210.5,\"opponents\":"
           "{\"random\":{\"w\":4,\"d\":0,\"l\":0,\"anchor\":1000},"
           "\"lookahead:1\":{\"w\":2,\"d\":0,\"l\":2,\"anchor\":null}},"
           "\"accuracy\":{\"beam_agent\":\"abnet nodes=50\"}}\n"
           "{\"event\":\"elo\",\"version\":2,\"opponents\":{\"random\":\n",
           r1);
  write_file(f->dir, PB_RUNDIR_METRICS, text);
  pb_http_response_t res = {404, NULL, NULL, 0};
  pb_webserve_handle(s, "GET", "/api/history", "", &res);
  assert_int_equal(res.status, 200);
  assert_non_null(res.body);
  if (pb_json_validate(res.body) != 0) fail_msg("not JSON: %s", res.body);
  /* the newest whole line, not the older one nor the broken one */
  has(res.body, "\"last_elo\":{\"event\":\"elo\",\"version\":1,");
  has(res.body, "\"random\":{\"w\":4,\"d\":0,\"l\":0,\"anchor\":1000}");
  has(res.body, "\"anchor\":null}},\"accuracy\":{\"beam_agent\":");
  assert_null(strstr(res.body, "\"anchor\":900"));
  has(res.body, "\"count\":1,"); /* elo lines are no iteration records */
  free(res.body);
  /* The page draws them: it reads last_elo's anchors. */
  route(s, "/", NULL, 200, "h.last_elo");
  pb_webserve_destroy(&s);
}

/* Progress of the iteration in progress for the page's phase line: the
 * learner's newest "event":"progress" line after the newest record, as
 * written; null once a record follows it. */
static void test_status_progress(void **state) {
  fx_t *f = *state;
  write_config(f, 3);
  char r1[512], r2[512], text[2048];
  rec(r1, sizeof r1, 1, 5);
  const char *p1 =
      "{\"event\":\"progress\",\"iteration\":1,\"phase\":\"self-play\","
      "\"done\":1,\"total\":4}\n";
  const char *p2 =
      "{\"event\":\"progress\",\"iteration\":2,\"phase\":\"search\","
      "\"done\":54,\"total\":66,\"units\":540,\"unit\":\"states\"}\n";
  snprintf(text, sizeof text, "%s%s", p1, r1); /* progress, then its record */
  write_file(f->dir, PB_RUNDIR_METRICS, text);
  pb_webserve_t *s = open_ok(f, -1);
  char *j = status(s);
  has(j, "\"phase\":\"running\"");
  has(j, "\"progress\":null");
  free(j);
  snprintf(text, sizeof text, "%s%s%s", p1, r1, p2);
  write_file(f->dir, PB_RUNDIR_METRICS, text);
  j = status(s);
  has(j, "\"iteration\":2,");
  has(j,
      "\"progress\":{\"event\":\"progress\",\"iteration\":2,"
      "\"phase\":\"search\",\"done\":54,\"total\":66,");
  free(j);
  rec(r2, sizeof r2, 2, 1);
  snprintf(text, sizeof text, "%s%s%s%s", p1, r1, p2, r2);
  write_file(f->dir, PB_RUNDIR_METRICS, text);
  j = status(s);
  has(j, "\"progress\":null");
  has(j, "\"iteration\":3,");
  free(j);
  /* The page writes it as "running: search 54/66 items (82%)". */
  route(s, "/", NULL, 200, "s.progress");
  pb_webserve_destroy(&s);
}

/* ---- a real round trip: a client thread, the server on this loop ---- */

typedef struct {
  int port;
  uv_async_t done;
  pb_webserve_t *srv;
  char *answer[3];
} trip_t;

static char *ask(int port, const char *request) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return NULL;
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char *buf = NULL;
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      send(fd, request, strlen(request), MSG_NOSIGNAL) ==
          (ssize_t)strlen(request)) {
    size_t cap = 1 << 16, n = 0;
    buf = malloc(cap);
    ssize_t r;
    while (buf != NULL && n + 1 < cap &&
           (r = recv(fd, buf + n, cap - n - 1, 0)) > 0)
      n += (size_t)r;
    if (buf) buf[n] = '\0';
  }
  close(fd);
  return buf;
}

static void *client(void *arg) {
  trip_t *t = arg;
  t->answer[0] = ask(t->port, "GET /status HTTP/1.1\r\nHost: x\r\n\r\n");
  t->answer[1] = ask(t->port,
                     "POST /api/move?moves=4 HTTP/1.1\r\nHost: x\r\n"
                     "Content-Length: 0\r\n\r\n");
  t->answer[2] = ask(t->port, "DELETE /status HTTP/1.1\r\nHost: x\r\n\r\n");
  uv_async_send(&t->done);
  return NULL;
}

static void on_done(uv_async_t *a) {
  trip_t *t = a->data;
  pb_webserve_destroy(&t->srv);
  uv_close((uv_handle_t *)a, NULL);
}

/* The names in a directory, sorted and joined. */
static void listing(const char *dir, char *out, size_t n) {
  struct dirent **ents = NULL;
  int k = scandir(dir, &ents, NULL, alphasort);
  assert_true(k >= 0);
  out[0] = '\0';
  for (int i = 0; i < k; i++) {
    strncat(out, ents[i]->d_name, n - strlen(out) - 2);
    strcat(out, ",");
    free(ents[i]);
  }
  free(ents);
}

static void test_round_trip(void **state) {
  fx_t *f = *state;
  write_config(f, 3);
  char r1[512];
  rec(r1, sizeof r1, 1, 10);
  write_file(f->dir, PB_RUNDIR_METRICS, r1);
  char before[2048], after[2048];
  listing(f->dir, before, sizeof before);
  trip_t t;
  memset(&t, 0, sizeof t);
  t.srv = open_ok(f, -1);
  t.port = pb_webserve_port(t.srv);
  assert_int_equal(uv_async_init(&f->loop, &t.done, on_done), 0);
  t.done.data = &t;
  pthread_t thr;
  assert_int_equal(pthread_create(&thr, NULL, client, &t), 0);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(pthread_join(thr, NULL), 0);
  assert_null(t.srv);
  for (int i = 0; i < 3; i++) assert_non_null(t.answer[i]);
  has(t.answer[0], "HTTP/1.1 200 OK");
  has(t.answer[0], "\"version\":1");
  has(t.answer[1], "HTTP/1.1 405");
  has(t.answer[1], "Allow: GET, HEAD");
  has(t.answer[2], "HTTP/1.1 405");
  for (int i = 0; i < 3; i++) free(t.answer[i]);
  /* Read-only: the run directory holds what it held. */
  listing(f->dir, after, sizeof after);
  assert_string_equal(before, after);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_routes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_history_anchors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_status_progress, setup, teardown),
      cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
