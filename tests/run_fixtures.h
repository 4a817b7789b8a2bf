/* run_fixtures.h - a learner run of connect4-smoke for the process-level
 * tests of hostile workers (test_poison.c, test_selfcheck.c, test_trust.c,
 * test_backup.c, test_liars.c), written once: the learner on ports the
 * kernel picks, real workers beside it, their exit statuses, the run's
 * metrics.jsonl and /status, the clean in-process run of the same seed and
 * what the run trained beside it, a network fetched as workers fetch it,
 * and a withholder (a hand-made peer that takes items, heartbeats for them
 * and never answers). Include after cmocka.h; defines RUN, CONFIG and
 * BIN. */
#ifndef PB_TEST_RUN_FIXTURES_H
#define PB_TEST_RUN_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "game.h"
#include "http_fixtures.h"
#include "msg.h"
#include "nn.h"
#include "peer_fixtures.h"
#include "proc.h"

#define BIN PB_BIN_DIR
/* Another run: define CONFIG, RUN and RUN_GAME before including. */
#ifndef CONFIG
#define CONFIG PB_SOURCE_DIR "/configs/connect4-smoke.yaml"
#endif
#ifndef RUN
#define RUN "c4-smoke"
#endif
#ifndef RUN_GAME
#define RUN_GAME PB_GAME_CONNECT4
#endif

typedef struct {
  char dir[256];
  char ep[320];            /* the learner's work endpoint, once bound */
  char work[320], pub[320]; /* --set values for both endpoints */
  int http;                 /* its HTTP port, once bound (0: off) */
  const char *extra[16];    /* more --set values, NULL-terminated */
} run_t;

static inline void run_init(run_t *r, const char *tag) {
  memset(r, 0, sizeof *r);
  tp_tmpdir(r->dir, sizeof r->dir, tag);
  assert_true(r->dir[0] != '\0');
  snprintf(r->work, sizeof r->work, "net.work_endpoint=tcp://127.0.0.1:*");
  snprintf(r->pub, sizeof r->pub, "net.pub_endpoint=tcp://127.0.0.1:*");
}

/* Appends "--set VALUE" to argv[n..] for each of r->extra, and the NULL
 * that ends argv, while fewer than max entries are used; the new n. */
static inline int run_sets(const run_t *r, char **argv, int n, int max) {
  for (int i = 0; r->extra[i] != NULL && n + 2 < max; i++) {
    argv[n++] = (char *)"--set";
    argv[n++] = (char *)r->extra[i];
  }
  argv[n] = NULL;
  return n;
}

static inline pid_t run_start(run_t *r, const char *prog, const char *const *args,
                   const char *logname) {
  char *argv[80];
  int n = 0;
  char path[512], log[512];
  snprintf(path, sizeof path, "%s/%s", BIN, prog);
  snprintf(log, sizeof log, "%s/%s.out", r->dir, logname);
  argv[n++] = path;
  argv[n++] = (char *)CONFIG;
  for (int i = 0; args[i] != NULL; i++) argv[n++] = (char *)args[i];
  argv[n++] = (char *)"--set";
  argv[n++] = r->work;
  argv[n++] = (char *)"--set";
  argv[n++] = r->pub;
  run_sets(r, argv, n, 80);
  pid_t pid = tp_spawn(argv, log);
  assert_true(pid > 0);
  return pid;
}

/* Starts the learner on ports the kernel picks and waits until it has
 * bound them: r->ep, r->work, r->pub and r->http say where. */
static inline pid_t start_learner(run_t *r) {
  const char *a[] = {"--run-dir", r->dir, NULL};
  pid_t l = run_start(r, "probs-learner", a, "learner");
  tp_endpoints_t e;
  if (!tp_endpoints(r->dir, l, 240, &e)) {
    char path[512];
    snprintf(path, sizeof path, "%s/learner.out", r->dir);
    char *out = tp_slurp(path);
    fail_msg("the learner wrote no RUN_DIR/endpoints: %s", out ? out : "");
  }
  assert_true(snprintf(r->work, sizeof r->work, "%s", e.work) <
              (int)sizeof r->work);
  assert_true(snprintf(r->pub, sizeof r->pub, "%s", e.pub) <
              (int)sizeof r->pub);
  assert_true(snprintf(r->ep, sizeof r->ep, "%s",
                       e.work + strlen("net.work_endpoint=")) <
              (int)sizeof r->ep);
  r->http = e.http;
  return l;
}

/* The run r of test `tag` with the --set values of extra (NULL-terminated;
 * at most 15), and its learner started (start_learner); with ref (when not
 * NULL), the clean run to compare it with (run_clean): the same settings,
 * in a directory of its own. */
static inline pid_t run_begin(run_t *r, run_t *ref, const char *tag,
                              const char *const *extra) {
  char t[64];
  run_init(r, tag);
  if (ref != NULL) {
    snprintf(t, sizeof t, "%s-ref", tag);
    run_init(ref, t);
  }
  for (int i = 0; extra[i] != NULL && i < 15; i++) {
    r->extra[i] = extra[i];
    if (ref != NULL) ref->extra[i] = extra[i];
  }
  return start_learner(r);
}

/* A real worker; key (or NULL) is its net.curve_key. */
static inline pid_t start_worker(run_t *r, const char *role, const char *id,
                          const char *key) {
  char k[80];
  snprintf(k, sizeof k, "net.curve_key=%s", key ? key : "worker");
  const char *a[] = {"--role", role, "--id",  id,
                     "--set",  "net.give_up_s=60", /* no orphans */
                     "--set",  k,      NULL};
  if (key == NULL) a[6] = NULL;
  return run_start(r, "probs-actor", a, id);
}

/* Whether pid still runs; once it has exited, it is reaped (tp_wait) and
 * its wait status kept in *st. */
static inline int running(pid_t pid, int *st) {
  if (*st != -1) return 0;
  if (!tp_exited(pid)) return 1;
  *st = tp_wait(pid, 10);
  return 0;
}

/* The exit status of pid within timeout_s, given what running() kept. */
static inline int wait_kept(pid_t pid, int st, double timeout_s) {
  return st != -1 ? st : tp_wait(pid, timeout_s);
}

static inline void path_of(const run_t *r, const char *name, char *buf, size_t n) {
  snprintf(buf, n, "%s/%s", r->dir, name);
}

static inline int exit_status(int st) {
  return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Sum of "key":<number> over metrics.jsonl's iteration lines (or the
 * values, into out). Returns how many lines had it. */
static inline int metric(const run_t *r, const char *key, double *sum, double *out,
                  int max) {
  char path[512];
  path_of(r, "metrics.jsonl", path, sizeof path);
  char *b = tp_slurp(path);
  if (!b) return 0;
  int n = 0;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  *sum = 0;
  for (char *line = strtok(b, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strstr(line, "\"event\":\"iteration\"")) continue;
    char *p = strstr(line, pat);
    if (!p) continue;
    double v = strtod(p + strlen(pat), NULL);
    *sum += v;
    if (out && n < max) out[n] = v;
    n++;
  }
  free(b);
  return n;
}

/* Asks the learner on sock (a peer of RUN, sender `sender`) for network
 * `which` (PB_WHICH_V or PB_WHICH_Q) of `version` and loads it into nn.
 * 0, or -1 when the learner did not send it within 20 s. Include msg.h,
 * nn.h and peer_fixtures.h before this header. */
static inline int run_fetch_weights(void *sock, const char *sender, int which,
                                    uint64_t version, pb_nn_t *nn) {
  pb_msg_t m, r;
  pb_msg_init(&m, PB_MSG_WEIGHTS_REQUEST, RUN, RUN_GAME, sender);
  m.weights_request.version = version;
  m.weights_request.which = which;
  tp_peer_send(sock, &m);
  for (int tries = 0; tries < 20; tries++) {
    int t = tp_peer_recv(sock, 1000, &r);
    if (t < 0) continue;
    int ok = -1;
    if (t == PB_MSG_WEIGHTS && r.weights.version == version) {
      pb_err_t err;
      const uint8_t *b =
          which == PB_WHICH_V ? r.weights.v_weights : r.weights.q_weights;
      size_t len = which == PB_WHICH_V ? r.weights.v_len : r.weights.q_len;
      if (pb_nn_weights_load(nn, b, len, NULL, &err) != 0)
        fail_msg("%s", err.msg);
      ok = 0;
    }
    pb_msg_free(&r);
    if (ok == 0) return 0;
  }
  return -1;
}

/* ---- the run's iterations, its /status, its exit ---------------------- */

/* The values of `key` in the iteration lines of r's metrics.jsonl (at most
 * max into v); how many lines had it. */
static inline int run_values(const run_t *r, const char *key, double *v,
                             int max) {
  double sum;
  return metric(r, key, &sum, v, max);
}

/* Lines of r's metrics.jsonl that close an iteration. */
static inline int run_iterations(const run_t *r) {
  char path[512];
  path_of(r, "metrics.jsonl", path, sizeof path);
  return tp_count(path, "\"event\":\"iteration\"");
}

/* Waits until r's run has closed n iterations, the learner l exits (its
 * status kept in *lst, as running() keeps it) or timeout_s pass; whether
 * it closed them. */
static inline int run_wait_iterations(const run_t *r, pid_t l, int *lst, int n,
                                      double timeout_s) {
  const double end = tp_now() + timeout_s;
  while (run_iterations(r) < n && tp_now() < end && running(l, lst))
    tp_sleep(0.1);
  return run_iterations(r) >= n;
}

/* The number after "key": in the learner's /status, in its object
 * "section" (NULL: the first anywhere); -1 when it did not answer or has
 * no such number. r->http must be bound (net.http_port=-1 in r->extra). */
static inline double run_status(const run_t *r, const char *section,
                                const char *key) {
  char *s = http_get(r->http, "/status"), k[80], sec[80];
  snprintf(k, sizeof k, "\"%s\":", key);
  snprintf(sec, sizeof sec, "\"%s\":", section ? section : "");
  const char *from = s != NULL && section != NULL ? strstr(s, sec) : s;
  const double v = number_after(from, k);
  free(s);
  return v;
}

/* The learner l (its status kept in lst) exits 0 within timeout_s, and so
 * does each of the n workers w within worker_s after it; on a failure,
 * the learner's log is shown. */
static inline void run_finish_in(const run_t *r, pid_t l, int lst,
                                 double timeout_s, const pid_t *w, int n,
                                 double worker_s) {
  const int st = exit_status(wait_kept(l, lst, timeout_s));
  if (st != 0) {
    char log[512];
    path_of(r, "learner.log", log, sizeof log);
    char *o = tp_slurp(log);
    fail_msg("the learner exited %d (%d iterations): %.3000s", st,
             run_iterations(r), o ? o : "");
  }
  for (int i = 0; i < n; i++)
    assert_int_equal(exit_status(tp_wait(w[i], worker_s)), 0);
}

/* run_finish_in with 60 s for each worker. */
static inline void run_finish(const run_t *r, pid_t l, int lst,
                              double timeout_s, const pid_t *w, int n) {
  run_finish_in(r, l, lst, timeout_s, w, n, 60);
}

/* The learner's log of run r (the caller frees). */
static inline char *run_log(const run_t *r) {
  char log[512];
  path_of(r, "learner.log", log, sizeof log);
  char *text = tp_slurp(log);
  assert_non_null(text);
  return text;
}

/* ---- the clean run of the same seed ---------------------------------- */

/* The clean run of ref's config and extra settings, in process (probs
 * train --inproc): what a run of honest workers trains, the reference of
 * every test of hostile ones. */
static inline void run_clean(run_t *ref) {
  char path[512], log[512];
  snprintf(path, sizeof path, "%s/probs", BIN);
  snprintf(log, sizeof log, "%s/inproc.out", ref->dir);
  char *argv[48] = {path, (char *)"train", (char *)CONFIG, (char *)"--inproc",
                    (char *)"--run-dir", ref->dir};
  run_sets(ref, argv, 6, 48);
  pid_t p = tp_spawn(argv, log);
  assert_true(p > 0);
  assert_int_equal(exit_status(tp_wait(p, 300)), 0);
}

/* Each iteration's q_target_mean and targets_crc of r beside those of the
 * clean run ref (run_clean), printed; the means must agree within tol (a
 * negative tol: printed only). Returns the largest difference of the
 * means; *crc_same (when not NULL): the iterations whose targets_crc is
 * the clean run's. */
static inline double run_against_clean(const run_t *r, const run_t *ref,
                                       int iters, double tol, int *crc_same) {
  double x[64], y[64], cx[64], cy[64], most = 0;
  assert_true(iters <= 64);
  assert_int_equal(run_values(r, "q_target_mean", x, 64), iters);
  assert_int_equal(run_values(ref, "q_target_mean", y, 64), iters);
  assert_int_equal(run_values(r, "targets_crc", cx, 64), iters);
  assert_int_equal(run_values(ref, "targets_crc", cy, 64), iters);
  int same = 0;
  for (int i = 0; i < iters; i++) {
    print_message("iteration %d: mean Q-target %.6f, clean run %.6f; "
                  "targets_crc %.0f, clean run %.0f\n",
                  i + 1, x[i], y[i], cx[i], cy[i]);
    if (fabs(x[i] - y[i]) > most) most = fabs(x[i] - y[i]);
    same += cx[i] == cy[i];
  }
  if (tol >= 0) assert_true(most <= tol);
  if (crc_same != NULL) *crc_same = same;
  return most;
}

/* ---- a withholder ------------------------------------------------------ */

/* A hand-made worker that asks for work, keeps every item it is handed,
 * heartbeats for all of them and never answers (hung, or stalling the run
 * on purpose), on one connection. */
typedef struct {
  void *sock;
  char id[32];
  int role;       /* PB_ROLE_ACTOR or PB_ROLE_SEARCHER */
  uint64_t held[64];
  int n_held;
  int given;      /* work items it was handed */
} hold_t;

/* A DEALER to ep ("tcp://127.0.0.1:PORT") from source address `from`
 * (127.0.0.0/8: another host, as far as the learner can tell; NULL: the
 * kernel's choice, 127.0.0.1). */
static inline void *run_peer_from(void *ctx, const char *ep, const char *from,
                                  int linger_ms) {
  if (from == NULL) return tp_peer(ctx, ep, NULL, NULL, linger_ms);
  char e[1536];
  snprintf(e, sizeof e, "tcp://%s:0;%s", from, ep + strlen("tcp://"));
  return tp_peer(ctx, e, NULL, NULL, linger_ms);
}

/* Connects withholder h as sender `id` in `role`, from address `from`
 * (run_peer_from), and says Hello. */
static inline void hold_hello(hold_t *h, void *ctx, const char *ep,
                              const char *from, const char *id, int role) {
  memset(h, 0, sizeof *h);
  h->sock = run_peer_from(ctx, ep, from, 0);
  snprintf(h->id, sizeof h->id, "%s", id);
  h->role = role;
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_HELLO, RUN, PB_GAME_CONNECT4, h->id);
  m.hello.role = role;
  m.hello.threads = 1;
  m.hello.pid = 4242;
  tp_peer_send(h->sock, &m);
}

/* One round of a withholder: reads what came (keeps the items it was
 * given), asks for more, and heartbeats for what it holds. */
static inline void hold_round(hold_t *h) {
  pb_msg_t r, m;
  zmq_msg_t z;
  zmq_msg_init(&z);
  while (zmq_msg_recv(&z, h->sock, ZMQ_DONTWAIT) >= 0) {
    pb_err_t err;
    if (pb_msg_decode(zmq_msg_data(&z), zmq_msg_size(&z), NULL, &r, &err) ==
        0) {
      if (r.type == PB_MSG_WORK_ITEM) {
        h->given++;
        if (h->n_held < 64) h->held[h->n_held++] = r.work_item.item_id;
      }
      pb_msg_free(&r);
    }
  }
  zmq_msg_close(&z);
  pb_msg_init(&m, PB_MSG_WORK_REQUEST, RUN, PB_GAME_CONNECT4, h->id);
  m.work_request.role = h->role;
  tp_peer_send(h->sock, &m);
  if (h->n_held > 0) {
    pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, PB_GAME_CONNECT4, h->id);
    m.heartbeat.item_ids = h->held;
    m.heartbeat.n_item_ids = (uint32_t)h->n_held;
    tp_peer_send(h->sock, &m);
  }
}

/* How many items n withholders were handed, and the most one was. */
static inline int hold_given(const hold_t *h, int n, int *most) {
  int given = 0;
  *most = 0;
  for (int i = 0; i < n; i++) {
    given += h[i].given;
    if (h[i].given > *most) *most = h[i].given;
  }
  return given;
}

#endif
