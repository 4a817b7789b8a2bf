/* weights.c - 3. weights (state.h): the networks the worker holds,
 * fetched with a WeightsRequest for each version an item needs, built from
 * the spec inside the weights and bound to the evaluator. One fetch per new
 * version; the networks are reused while their spec stays the same. */
#include <inttypes.h>
#include <string.h>

#include "msg.h"
#include "neteval.h"
#include "nn.h"
#include "util.h"
#include "state.h"

static int have(const pb__worker_net_t *n, uint64_t version) {
  return n->have && n->version == version;
}

/* Loads one weights buffer into n (V when q == 0), building the network
 * from the spec inside when there is none or the spec changed. Returns 0,
 * W_DROP for weights we cannot use (logged; n keeps the version it held
 * unless it had to be rebuilt), or an error that retrying cannot cure (the
 * device, memory). */
static int load_net(pb_worker_t *w, pb__worker_net_t *n, int q,
                    uint64_t version, const uint8_t *buf, size_t len,
                    pb_err_t *err) {
  const char *name = q ? "Q" : "V";
  const pb_game_t *g = w->g;
  pb_nn_spec_t spec;
  pb_err_t e;
  pb_err_clear(&e);
  if (len == 0) {
    pb__worker_warn(w, "the learner sent no %s weights for version %" PRIu64,
                name, version);
    return W_DROP;
  }
  if (pb_nn_weights_peek(buf, len, &spec, NULL, &e) != 0) {
    pb__worker_warn(w, "%s weights version %" PRIu64 " are unusable: %s", name,
                version, e.msg);
    return W_DROP;
  }
  /* The evaluator trusts the shapes: a peer's spec must fit the game (and
   * in an alphazero run, Q is the policy+value network). */
  const int az = w->algo->data->nets == PB_NETS_PV; /* Q: policy+value */
  int outputs = q ? g->num_actions + (az ? 1 : 0) : 1;
  int head = q ? (az ? PB_NN_HEAD_PV : PB_NN_HEAD_LINEAR) : PB_NN_HEAD_TANH;
  if (spec.planes != g->planes || spec.height != g->height ||
      spec.width != g->width || spec.outputs != outputs || spec.head != head) {
    pb__worker_warn(w,
                "%s weights version %" PRIu64
                " do not fit %s: input "
                "%dx%dx%d, %d outputs, head %d (want %dx%dx%d, %d, %d)",
                name, version, g->name, spec.planes, spec.height, spec.width,
                spec.outputs, spec.head, g->planes, g->height, g->width,
                outputs, head);
    return W_DROP;
  }
  double t0 = pb_now();
  if (n->nn == NULL || memcmp(pb_nn_spec(n->nn), &spec, sizeof spec) != 0) {
    pb_neteval_bind(w->ne, NULL, NULL); /* it must not hold a freed net */
    n->have = 0;
    pb_nn_destroy(&n->nn);
    n->nn = pb_nn_new(&spec, NULL, w->device, 0, &e); /* probed at start */
    if (n->nn != NULL && pb_nn_set_precision(n->nn, w->precision, &e) != 0)
      pb_nn_destroy(&n->nn);
    if (n->nn == NULL) {
      if (e.code == PB_EINVAL) {
        pb__worker_warn(w, "%s weights version %" PRIu64 ": %s", name, version,
                    e.msg);
        return W_DROP;
      }
      return pb_err_set(err, e.code, "cannot create the %s network on '%s': %s",
                        name, w->device, e.msg);
    }
  }
  if (pb_nn_weights_load(n->nn, buf, len, NULL, &e) != 0) {
    if (e.code == PB_ENN || e.code == PB_ENOMEM)
      return pb_err_set(err, e.code, "loading %s weights: %s", name, e.msg);
    pb__worker_warn(w, "%s weights version %" PRIu64 " refused: %s", name,
                version, e.msg);
    return W_DROP;
  }
  n->version = version;
  n->have = 1;
  pb_log_info(w->log,
              "weights loaded: %s version %" PRIu64
              ", %ld parameters, "
              "%zu bytes, device %s, %.3f s",
              name, version, pb_nn_param_count(n->nn), len, pb_nn_device(n->nn),
              pb_now() - t0);
  return 0;
}

/* Fetches `which` (PB_WHICH_V or PB_WHICH_Q) of `version` and loads it. */
static int fetch(pb_worker_t *w, int which, uint64_t version, pb_err_t *err) {
  pb_msg_t m, r;
  pb__worker_msg_init(w, &m, PB_MSG_WEIGHTS_REQUEST);
  m.weights_request.version = version;
  m.weights_request.which = which;
  int rc = pb__worker_request(w, &m, BIT(PB_MSG_WEIGHTS) | BIT(PB_MSG_REJECT),
                              &r, err);
  /* A Weights reply to an earlier request of ours may come first. */
  while (rc == 0 && r.type == PB_MSG_WEIGHTS && r.weights.version != version) {
    pb_log_debug(w->log,
                 "ignored weights version %" PRIu64 " (want %" PRIu64 ")",
                 r.weights.version, version);
    pb_msg_free(&r);
    rc = pb__worker_wait_for(w, BIT(PB_MSG_WEIGHTS) | BIT(PB_MSG_REJECT), 0,
                             WAIT_RESEND, &r, err);
  }
  if (rc != 0) return rc;
  if (r.type == PB_MSG_REJECT) {
    rc = r.reject.code == PB_EMISMATCH ? W_REJOIN : W_DROP;
    pb__worker_warn(w,
                "the learner refused weights version %" PRIu64
                ": "
                "%s: %s; %s",
                version, pb_err_name(r.reject.code), r.reject.message,
                rc == W_REJOIN ? "joining again" : "dropping the item");
    pb_msg_free(&r);
    return rc;
  }
  if (which & PB_WHICH_V)
    rc = load_net(w, &w->v, 0, version, r.weights.v_weights, r.weights.v_len,
                  err);
  if (rc == 0 && (which & PB_WHICH_Q))
    rc = load_net(w, &w->q, 1, version, r.weights.q_weights, r.weights.q_len,
                  err);
  pb_msg_free(&r);
  return rc;
}

/* Makes sure V of v_version (if need_v) and Q of q_version are loaded and
 * bound to the evaluator. */
int pb__worker_ensure_weights(pb_worker_t *w, int need_v, uint64_t v_version,
                              uint64_t q_version, pb_err_t *err) {
  int miss_v = need_v && !have(&w->v, v_version);
  int miss_q = !have(&w->q, q_version);
  /* One request per network, as the protocol has it: V and Q of one item
   * are of different versions anyway (V_k searches with Q_{k-1}). */
  int rc = 0;
  if (miss_v) rc = fetch(w, PB_WHICH_V, v_version, err);
  if (rc == 0 && miss_q) rc = fetch(w, PB_WHICH_Q, q_version, err);
  /* Rebind whenever anything was loaded or dropped: it clears the caches
   * and never leaves the evaluator pointing at a network it should not use. */
  if (miss_v || miss_q)
    pb_neteval_bind(w->ne, w->v.have ? w->v.nn : NULL,
                    w->q.have ? w->q.nn : NULL);
  return rc;
}
