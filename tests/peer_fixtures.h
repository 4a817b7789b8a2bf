/* peer_fixtures.h - a hand-made peer of the learner for the process tests
 * that play hostile or odd workers (test_garbage.c, test_poison.c,
 * test_curve.c): a DEALER socket, with CURVE keys or without, and messages
 * sent and received with the wire codec. Include after cmocka.h. */
#ifndef PB_TEST_PEER_FIXTURES_H
#define PB_TEST_PEER_FIXTURES_H

#include <stdint.h>
#include <stdlib.h>
#include <zmq.h>

#include "curve.h"
#include "msg.h"
#include "proc.h"

/* A DEALER connected to ep; with mine, a CURVE client of the server key
 * server_pub. linger_ms: how long what it sent last may still go out after
 * zmq_close. */
static inline void *tp_peer(void *ctx, const char *ep,
                            const pb_curve_keys_t *mine,
                            const char *server_pub, int linger_ms) {
  void *d = zmq_socket(ctx, ZMQ_DEALER);
  assert_non_null(d);
  zmq_setsockopt(d, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
  pb_err_t err;
  if (mine != NULL)
    assert_int_equal(pb_curve_client(d, mine, server_pub, &err), 0);
  assert_int_equal(zmq_connect(d, ep), 0);
  return d;
}

/* Encodes m and sends it (blocking). */
static inline void tp_peer_send(void *sock, const pb_msg_t *m) {
  uint8_t *buf;
  size_t len;
  pb_err_t err;
  if (pb_msg_encode(m, &buf, &len, &err) != 0)
    fail_msg("pb_msg_encode: %s", err.msg);
  int rc;
  while ((rc = zmq_send(sock, buf, len, 0)) < 0 && zmq_errno() == EINTR) {
  }
  if (rc != (int)len) fail_msg("zmq_send: %s", zmq_strerror(zmq_errno()));
  free(buf);
}

/* The first message that decodes (any run, any game) within timeout_ms,
 * in *out (the caller frees it); its type, or -1. */
static inline int tp_peer_recv(void *sock, int timeout_ms, pb_msg_t *out) {
  zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
  double end = tp_now() + timeout_ms / 1000.0;
  while (tp_now() < end) {
    if (zmq_poll(&it, 1, 50) <= 0) continue;
    zmq_msg_t m;
    zmq_msg_init(&m);
    int n = zmq_msg_recv(&m, sock, 0);
    int type = -1;
    pb_err_t err;
    if (n >= 0 && pb_msg_decode(zmq_msg_data(&m), zmq_msg_size(&m), NULL, out,
                                &err) == 0)
      type = out->type;
    zmq_msg_close(&m);
    if (type >= 0) return type;
  }
  return -1;
}

/* A real learner on run dir `dir` with `config` and the `--set` of each
 * of sets (NULL-terminated); its output goes to DIR/learner.out. */
static inline pid_t tp_learner(const char *dir, const char *config,
                               const char *const *sets) {
  char path[512], out[512];
  snprintf(path, sizeof path, "%s/probs-learner", PB_BIN_DIR);
  snprintf(out, sizeof out, "%s/learner.out", dir);
  char *argv[64] = {path, (char *)config, (char *)"--run-dir", (char *)dir};
  int n = 4;
  for (int i = 0; sets[i] != NULL && n < 60; i++) {
    argv[n++] = (char *)"--set";
    argv[n++] = (char *)sets[i];
  }
  argv[n] = NULL;
  pid_t l = tp_spawn(argv, out);
  assert_true(l > 0);
  return l;
}

/* Waits for the learner l on dir to bind its sockets, then fills work and
 * pub with the --set values for its workers and ep with the bare work
 * endpoint (each 320 bytes). */
static inline void tp_learner_bound(const char *dir, pid_t l, char *work,
                                    char *pub, char *ep) {
  tp_endpoints_t e;
  if (!tp_endpoints(dir, l, 120, &e)) {
    char out[512];
    snprintf(out, sizeof out, "%s/learner.out", dir);
    char *o = tp_slurp(out);
    fail_msg("the learner wrote no RUN_DIR/endpoints: %s", o ? o : "");
  }
  /* The callers' buffers hold 320 bytes (the return values checked, so
   * that an optimizing build's -Wformat-truncation has nothing to say). */
  assert_true(snprintf(work, 320, "%s", e.work) < 320);
  assert_true(snprintf(pub, 320, "%s", e.pub) < 320);
  assert_true(snprintf(ep, 320, "%s", e.work + strlen("net.work_endpoint=")) <
              320);
}

#endif
