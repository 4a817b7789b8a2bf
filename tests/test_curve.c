/* test_curve.c - ZeroMQ CURVE on a run: key files, and a real learner that
 * lets in only the workers of its authorized_keys. A peer without CURVE,
 * with an unlisted key, or pinned to another learner's key gets no answer;
 * the authorized actor and searcher finish the run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zmq.h>

#include "curve.h"
#include "msg.h"
#include "peer_fixtures.h"
#include "proc.h"

#define BIN PB_BIN_DIR
#define CONFIG PB_SOURCE_DIR "/configs/connect4-smoke.yaml"

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_key_files(void **state) {
  (void)state;
  char dir[256], path[512];
  tp_tmpdir(dir, sizeof dir, "keys");
  pb_err_t err;
  assert_int_equal(pb_curve_make_dir(dir, 0, &err), 0);
  pb_curve_keys_t k, p;
  snprintf(path, sizeof path, "%s/learner.key", dir);
  assert_int_equal(pb_curve_load(path, 1, &k, &err), 0);
  snprintf(path, sizeof path, "%s/learner.pub", dir);
  assert_int_equal(pb_curve_load(path, 0, &p, &err), 0);
  assert_string_equal(k.pub, p.pub);
  assert_string_equal(p.sec, "");
  assert_int_equal(pb_curve_load(path, 1, &p, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "secret-key"));
  /* Never overwritten. */
  assert_int_equal(pb_curve_make_dir(dir, 0, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "exists"));
  /* Not key files. */
  snprintf(path, sizeof path, "%s/bad", dir);
  write_file(path, "public-key tooshort\n");
  assert_int_equal(pb_curve_load(path, 0, &p, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "line 1"));
  write_file(path, "# nothing\n");
  assert_int_equal(pb_curve_load(path, 0, &p, &err), PB_ECONFIG);
  snprintf(path, sizeof path, "%s/missing", dir);
  assert_int_equal(pb_curve_load(path, 0, &p, &err), PB_EIO);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* A key per worker: worker-1..N, each listed under its name; one more
 * added later; bad names and a directory without a learner refused. */
static void test_worker_keys(void **state) {
  (void)state;
  char dir[256], path[512];
  tp_tmpdir(dir, sizeof dir, "wkeys");
  pb_err_t err;
  assert_int_equal(pb_curve_make_dir(dir, 3, &err), 0);
  pb_curve_keys_t k[4];
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/worker-%d.key", dir, i + 1);
    assert_int_equal(pb_curve_load(path, 1, &k[i], &err), 0);
  }
  snprintf(path, sizeof path, "%s/worker.key", dir);
  assert_int_equal(pb_curve_load(path, 1, &k[3], &err), PB_EIO);
  snprintf(path, sizeof path, "%s/authorized_keys", dir);
  char *a = tp_slurp(path);
  assert_non_null(a);
  assert_non_null(strstr(a, "# worker-2\n"));
  for (int i = 0; i < 3; i++) assert_non_null(strstr(a, k[i].pub));
  free(a);
  assert_int_equal(pb_curve_add_worker(dir, "node-7", &err), 0);
  snprintf(path, sizeof path, "%s/node-7.key", dir);
  assert_int_equal(pb_curve_load(path, 1, &k[3], &err), 0);
  snprintf(path, sizeof path, "%s/authorized_keys", dir);
  a = tp_slurp(path);
  assert_non_null(strstr(a, "# node-7\n"));
  assert_non_null(strstr(a, k[3].pub));
  assert_non_null(strstr(a, k[0].pub)); /* the others stay */
  free(a);
  assert_int_equal(pb_curve_add_worker(dir, "node-7", &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "exists"));
  static const char *const bad[] = {"learner", "", "a/b", "-x", "a b"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(pb_curve_add_worker(dir, bad[i], &err), PB_EINVAL);
  assert_int_equal(pb_curve_make_dir(dir, PB_CURVE_MAX_WORKERS + 1, &err),
                   PB_EINVAL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  tp_tmpdir(dir, sizeof dir, "wkeys-none");
  assert_int_equal(pb_curve_add_worker(dir, "w", &err), PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "probs keys"));
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* Sends a WorkRequest from sock; 1 if any answer arrives within ms. */
static int answered(void *sock, int ms) {
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_WORK_REQUEST, "c4-smoke", PB_GAME_CONNECT4, "peer");
  m.work_request.role = PB_ROLE_SEARCHER;
  uint8_t *buf;
  size_t len;
  pb_err_t err;
  assert_int_equal(pb_msg_encode(&m, &buf, &len, &err), 0);
  zmq_send(sock, buf, len, ZMQ_DONTWAIT);
  free(buf);
  zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
  return zmq_poll(&it, 1, ms) > 0;
}


static void test_only_authorized_workers(void **state) {
  (void)state;
  char dir[256], keys[300], log[512], out[512], path[512];
  tp_tmpdir(dir, sizeof dir, "curve");
  snprintf(keys, sizeof keys, "%s/keys", dir);
  pb_err_t err;
  assert_int_equal(pb_curve_make_dir(keys, 0, &err), 0);
  char curve[400], ep[320];
  snprintf(curve, sizeof curve, "net.curve_dir=%s", keys);
  snprintf(path, sizeof path, "%s/probs-learner", BIN);
  snprintf(out, sizeof out, "%s/learner.out", dir);
  /* Ports the kernel picks; the learner says which in RUN_DIR/endpoints. */
  char *argv[] = {path,
                  (char *)CONFIG,
                  (char *)"--run-dir",
                  dir,
                  (char *)"--set",
                  (char *)"net.work_endpoint=tcp://127.0.0.1:*",
                  (char *)"--set",
                  (char *)"net.pub_endpoint=tcp://127.0.0.1:*",
                  (char *)"--set",
                  curve,
                  (char *)"--set",
                  (char *)"train.iterations=1",
                  NULL};
  pid_t l = tp_spawn(argv, out);
  assert_true(l > 0);
  tp_endpoints_t e;
  assert_true(tp_endpoints(dir, l, 120, &e));
  assert_true(snprintf(ep, sizeof ep, "%s", e.work + strlen("net.work_endpoint=")) <
              (int)sizeof ep);
  snprintf(log, sizeof log, "%s/learner.log", dir);
  assert_true(tp_wait_for(log, "CURVE on", 1, 60));

  void *ctx = zmq_ctx_new();
  pb_curve_keys_t learner, stranger, other;
  snprintf(path, sizeof path, "%s/learner.pub", keys);
  assert_int_equal(pb_curve_load(path, 0, &learner, &err), 0);
  assert_int_equal(zmq_curve_keypair(stranger.pub, stranger.sec), 0);
  assert_int_equal(zmq_curve_keypair(other.pub, other.sec), 0);
  /* No CURVE at all. */
  void *d = tp_peer(ctx, ep, NULL, NULL, 0);
  assert_false(answered(d, 1500));
  zmq_close(d);
  /* A key the learner does not list: refused, and logged with the key. */
  d = tp_peer(ctx, ep, &stranger, learner.pub, 0);
  assert_false(answered(d, 1500));
  zmq_close(d);
  assert_true(tp_wait_for(log, "refused a peer", 1, 10));
  assert_true(tp_count(log, stranger.pub) >= 1);
  /* The worker's own key, but pinned to another learner. */
  pb_curve_keys_t worker;
  snprintf(path, sizeof path, "%s/worker.key", keys);
  assert_int_equal(pb_curve_load(path, 1, &worker, &err), 0);
  d = tp_peer(ctx, ep, &worker, other.pub, 0);
  assert_false(answered(d, 1500));
  zmq_close(d);
  /* The authorized key: answered. */
  d = tp_peer(ctx, ep, &worker, learner.pub, 0);
  assert_true(answered(d, 5000));
  zmq_close(d);
  /* A worker added while the learner runs: accepted at once, no restart. */
  assert_int_equal(pb_curve_add_worker(keys, "late-node", &err), 0);
  pb_curve_keys_t late;
  snprintf(path, sizeof path, "%s/late-node.key", keys);
  assert_int_equal(pb_curve_load(path, 1, &late, &err), 0);
  d = tp_peer(ctx, ep, &late, learner.pub, 0);
  assert_true(answered(d, 5000));
  zmq_close(d);
  zmq_ctx_term(ctx);

  /* Real workers with the run's keys finish the run. */
  pid_t w[2];
  const char *roles[2] = {"selfplay", "search"};
  for (int i = 0; i < 2; i++) {
    char wp[512], wo[512];
    snprintf(wp, sizeof wp, "%s/probs-actor", BIN);
    snprintf(wo, sizeof wo, "%s/worker-%d.out", dir, i);
    char *wa[] = {wp,
                  (char *)CONFIG,
                  (char *)"--role",
                  (char *)roles[i],
                  (char *)"--set",
                  e.work,
                  (char *)"--set",
                  e.pub,
                  (char *)"--set",
                  curve,
                  (char *)"--set",
                  (char *)"net.give_up_s=60", /* no orphans */
                  NULL};
    w[i] = tp_spawn(wa, wo);
    assert_true(w[i] > 0);
  }
  int st = tp_wait(l, 120);
  assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  for (int i = 0; i < 2; i++) {
    int ws = tp_wait(w[i], 30);
    assert_true(ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_files),
      cmocka_unit_test(test_worker_keys),
      cmocka_unit_test_teardown(test_only_authorized_workers, tp_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
