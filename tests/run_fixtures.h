/* run_fixtures.h - a learner run of connect4-smoke for the process-level
 * tests of hostile workers (test_poison.c, test_selfcheck.c): the
 * learner on ports the kernel picks, real workers beside it, their exit
 * statuses, the run's metrics.jsonl, and a network fetched as workers
 * fetch it. Include after cmocka.h; defines RUN, CONFIG and BIN. */
#ifndef PB_TEST_RUN_FIXTURES_H
#define PB_TEST_RUN_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  for (int i = 0; r->extra[i] != NULL && n < 76; i++) {
    argv[n++] = (char *)"--set";
    argv[n++] = (char *)r->extra[i];
  }
  argv[n] = NULL;
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

#endif
