/* nn_fixtures.h - helpers shared by the tests of the libtorch shim
 * (test_nn.c, test_nn_train.c, test_nn_io.c, test_nn_torch.c): specs,
 * networks, random inputs, weights as bytes, PV targets. */
#ifndef PB_NN_FIXTURES_H
#define PB_NN_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "nn.h"
#include "rng.h"

static inline pb_nn_spec_t spec_of(int planes, int h, int w, int outputs,
                                   int head, int conv_layers, int conv_channels,
                                   int dense_layers, int dense_units) {
  pb_nn_spec_t s = {
      planes,       h,          w, outputs, head, conv_layers, conv_channels,
      dense_layers, dense_units, 0, PB_NN_NORM_NONE};
  return s;
}

/* The paper's two Connect Four sizes (docs/nn.md). */
static inline pb_nn_spec_t c4_small(int outputs, int head) {
  return spec_of(2, 6, 7, outputs, head, 2, 16, 1, 12);
}
static inline pb_nn_spec_t c4_large(int outputs, int head) {
  return spec_of(2, 6, 7, outputs, head, 3, 32, 1, 64);
}

static inline void fill_uniform(pb_rng_t *r, float *x, size_t n, float lo,
                                float hi) {
  for (size_t i = 0; i < n; i++)
    x[i] = lo + (hi - lo) * (float)pb_rng_uniform(r);
}

static inline pb_nn_t *make(const pb_nn_spec_t *s, float lr, uint64_t seed) {
  pb_nn_opt_t o = {lr, 0.0f, 0.0f};
  pb_err_t err = {0, ""};
  pb_nn_t *nn = pb_nn_new(s, &o, "cpu", seed, &err);
  if (nn == NULL) fail_msg("pb_nn_new: %s", err.msg);
  return nn;
}

/* Weights (state 0) or the whole training state (weights, moments, step
 * count: state 1) as bytes, for bit-exact comparisons. Caller frees. */
static inline uint8_t *bytes_of(const pb_nn_t *nn, int state, size_t *len) {
  uint8_t *buf = NULL;
  pb_err_t err = {0, ""};
  int rc = state ? pb_nn_state_save(nn, &buf, len, &err)
                 : pb_nn_weights_save(nn, 0, &buf, len, &err);
  if (rc != 0) fail_msg("%s_save: %s", state ? "state" : "weights", err.msg);
  return buf;
}

static inline uint8_t *weights_of(const pb_nn_t *nn, size_t *len) {
  return bytes_of(nn, 0, len);
}

static inline int same_bytes(const pb_nn_t *a, const pb_nn_t *b, int state) {
  size_t la, lb;
  uint8_t *wa = bytes_of(a, state, &la), *wb = bytes_of(b, state, &lb);
  int same = la == lb && memcmp(wa, wb, la) == 0;
  free(wa);
  free(wb);
  return same;
}

static inline int same_weights(const pb_nn_t *a, const pb_nn_t *b) {
  return same_bytes(a, b, 0);
}

/* The small spec of the brief: 2x6x7 input, one 8-channel convolution,
 * two residual blocks, layer norm, one dense layer of 16, 7 outputs. */
static inline pb_nn_spec_t res_spec(int res_blocks, int norm) {
  pb_nn_spec_t s = spec_of(2, 6, 7, 7, PB_NN_HEAD_LINEAR, 1, 8, 1, 16);
  s.res_blocks = res_blocks;
  s.norm = norm;
  return s;
}

/* The parameters as floats (malloc'd). */
static inline float *params_of(const pb_nn_t *nn) {
  size_t len;
  uint8_t *w = weights_of(nn, &len);
  size_t n = (size_t)pb_nn_param_count(nn);
  float *p = malloc(4 * n);
  memcpy(p, w + 64, 4 * n);
  free(w);
  return p;
}

/* A PV spec: 2x6x7 input like Connect Four, A actions (outputs A + 1). */
static inline pb_nn_spec_t pv_spec(int actions) {
  return spec_of(2, 6, 7, actions + 1, PB_NN_HEAD_PV, 2, 8, 1, 16);
}

/* Random PV targets and masks: each row's legal actions at random (row
 * `empty` has none), pi a random distribution over them, z in [-1, 1], w 0
 * on every third row; NaN (or 1e30) under every zero mask. */
static inline void pv_targets(pb_rng_t *r, int B, int A, int empty, float *t,
                              float *m) {
  for (int i = 0; i < B; i++) {
    float *tr = t + (size_t)i * (A + 1), *mr = m + (size_t)i * (A + 1);
    double sum = 0;
    int legal = 0;
    for (int a = 0; a < A; a++) {
      mr[a] = i != empty && (pb_rng_uniform(r) < 0.6 || a == i % A);
      legal += mr[a] != 0;
      tr[a] = mr[a] != 0 ? (float)pb_rng_uniform(r) + 0.05f : NAN;
      if (mr[a] != 0) sum += tr[a];
    }
    for (int a = 0; a < A; a++)
      if (mr[a] != 0) tr[a] = (float)(tr[a] / sum);
    (void)legal;
    mr[A] = (i % 3 == 2) ? 0.0f : 1.0f;
    tr[A] = mr[A] != 0 ? 2.0f * (float)pb_rng_uniform(r) - 1.0f
                       : (i % 2 ? 1e30f : NAN);
  }
}

#endif
