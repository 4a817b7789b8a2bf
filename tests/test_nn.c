/* test_nn.c - the libtorch shim: specs, forward, training (plain and
 * masked), weights/state buffers and their validation, export for Python;
 * residual blocks and layer norms (against a plain reference forward pass
 * in double), format 2 buffers, gradient clipping (against a reference
 * Adam step in double), and the policy + value head (forward against a
 * linear network of the same weights, loss against a hand computation,
 * masks, fitting, buffers).
 *
 * When a Python with torch is found (PB_PYTHON, python3, /usr/bin/python3),
 * the export tests also check our forward pass and our Adam against
 * PyTorch's own functional ops and torch.optim.Adam (for a PV network on
 * the cross-entropy + MSE loss written in torch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "err.h"
#include "nn.h"
#include "rng.h"

static pb_nn_spec_t spec_of(int planes, int h, int w, int outputs, int head,
                            int conv_layers, int conv_channels,
                            int dense_layers, int dense_units) {
  pb_nn_spec_t s = {
      planes,       h,          w, outputs, head, conv_layers, conv_channels,
      dense_layers, dense_units, 0, PB_NN_NORM_NONE};
  return s;
}

/* The paper's two Connect Four sizes (docs/nn.md). */
static pb_nn_spec_t c4_small(int outputs, int head) {
  return spec_of(2, 6, 7, outputs, head, 2, 16, 1, 12);
}
static pb_nn_spec_t c4_large(int outputs, int head) {
  return spec_of(2, 6, 7, outputs, head, 3, 32, 1, 64);
}

static void fill_uniform(pb_rng_t *r, float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++)
    x[i] = lo + (hi - lo) * (float)pb_rng_uniform(r);
}

static pb_nn_t *make(const pb_nn_spec_t *s, float lr, uint64_t seed) {
  pb_nn_opt_t o = {lr, 0.0f, 0.0f};
  pb_err_t err = {0, ""};
  pb_nn_t *nn = pb_nn_new(s, &o, "cpu", seed, &err);
  if (nn == NULL) fail_msg("pb_nn_new: %s", err.msg);
  return nn;
}

/* Weights (state 0) or the whole training state (weights, moments, step
 * count: state 1) as bytes, for bit-exact comparisons. Caller frees. */
static uint8_t *bytes_of(const pb_nn_t *nn, int state, size_t *len) {
  uint8_t *buf = NULL;
  pb_err_t err = {0, ""};
  int rc = state ? pb_nn_state_save(nn, &buf, len, &err)
                 : pb_nn_weights_save(nn, 0, &buf, len, &err);
  if (rc != 0) fail_msg("%s_save: %s", state ? "state" : "weights", err.msg);
  return buf;
}

static uint8_t *weights_of(const pb_nn_t *nn, size_t *len) {
  return bytes_of(nn, 0, len);
}

static int same_bytes(const pb_nn_t *a, const pb_nn_t *b, int state) {
  size_t la, lb;
  uint8_t *wa = bytes_of(a, state, &la), *wb = bytes_of(b, state, &lb);
  int same = la == lb && memcmp(wa, wb, la) == 0;
  free(wa);
  free(wb);
  return same;
}

static int same_weights(const pb_nn_t *a, const pb_nn_t *b) {
  return same_bytes(a, b, 0);
}

/* ------------------------------------------------------------------ */

static void test_spec_check(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t good = c4_small(7, PB_NN_HEAD_LINEAR);
  assert_int_equal(pb_nn_spec_check(&good, &err), 0);

  struct {
    pb_nn_spec_t s;
    const char *field;
  } bad[] = {
      {spec_of(0, 6, 7, 7, 2, 2, 16, 1, 12), "planes"},
      {spec_of(2, -1, 7, 7, 2, 2, 16, 1, 12), "height"},
      {spec_of(2, 6, 0, 7, 2, 2, 16, 1, 12), "width"},
      {spec_of(2, 6, 7, 0, 2, 2, 16, 1, 12), "outputs"},
      {spec_of(2, 6, 7, 7, 4, 2, 16, 1, 12), "head"},
      {spec_of(2, 6, 7, 7, 0, 2, 16, 1, 12), "head"},
      {spec_of(2, 6, 7, 7, 2, -1, 16, 1, 12), "conv_layers"},
      {spec_of(2, 6, 7, 7, 2, 2, 0, 1, 12), "conv_channels"},
      {spec_of(2, 6, 7, 7, 2, 2, 16, -3, 12), "dense_layers"},
      {spec_of(2, 6, 7, 7, 2, 2, 16, 1, 0), "dense_units"},
      {spec_of(2, 6, 7, 7, 2, 65, 16, 1, 12), "conv_layers"},
      /* in range field by field, but ~4e12 parameters in all */
      {spec_of(64, 64, 64, 1 << 20, 2, 0, 0, 1, 1 << 20), "parameters"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_int_equal(pb_nn_spec_check(&bad[i].s, &err), PB_EINVAL);
    if (strstr(err.msg, bad[i].field) == NULL)
      fail_msg("case %zu: message \"%s\" does not name %s", i, err.msg,
               bad[i].field);
    assert_int_equal(pb_nn_spec_param_count(&bad[i].s), -1);
    /* pb_nn_new refuses it the same way and returns NULL */
    pb_err_clear(&err);
    assert_null(pb_nn_new(&bad[i].s, NULL, "cpu", 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
  /* layers with no convolutions / no dense layers are fine */
  pb_nn_spec_t linear = spec_of(1, 1, 3, 2, PB_NN_HEAD_LINEAR, 0, 0, 0, 0);
  assert_int_equal(pb_nn_spec_check(&linear, &err), 0);
  assert_int_equal(pb_nn_spec_param_count(&linear), 3 * 2 + 2);
  assert_int_equal(pb_nn_spec_check(NULL, &err), PB_EINVAL);
}

static void test_new_bad_args(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(1, PB_NN_HEAD_TANH);

  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, NULL, "tpu", 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "tpu"));

  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, NULL, NULL, 1, &err));
  assert_int_equal(err.code, PB_EINVAL);

  pb_nn_opt_t bad_lr = {0.0f, 0.0f, 0.0f}, bad_wd = {1e-3f, -1.0f, 0.0f},
              nan_lr = {NAN, 0.0f, 0.0f};
  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, &bad_lr, "cpu", 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "lr"));
  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, &bad_wd, "cpu", 1, &err));
  assert_non_null(strstr(err.msg, "weight_decay"));
  assert_null(pb_nn_new(&s, &nan_lr, "cpu", 1, NULL));

  /* "cuda" either works (a GPU build on a GPU) or says why not */
  pb_err_clear(&err);
  pb_nn_t *cuda = pb_nn_new(&s, NULL, "cuda", 1, &err);
  if (cuda == NULL) {
    assert_int_equal(err.code, PB_EUNSUPP);
    assert_non_null(strstr(err.msg, "CUDA"));
  } else {
    assert_string_equal(pb_nn_device(cuda), "cuda");
  }
  pb_nn_destroy(&cuda);

  pb_nn_t *nn = pb_nn_new(&s, NULL, "auto", 1, &err);
  assert_non_null(nn);
  assert_true(strcmp(pb_nn_device(nn), "cpu") == 0 ||
              strcmp(pb_nn_device(nn), "cuda") == 0);
  assert_int_equal(pb_nn_set_opt(nn, &bad_lr, &err), PB_EINVAL);
  pb_nn_opt_t ok = {3e-3f, 1e-4f, 0.0f};
  assert_int_equal(pb_nn_set_opt(nn, &ok, &err), 0);
  pb_nn_destroy(&nn);
  assert_null(nn);
  pb_nn_destroy(&nn); /* NULL is fine */
  pb_nn_destroy(NULL);
}

static void test_param_counts(void **state) {
  (void)state;
  /* By hand, small: conv 2->16: 9*2*16+16 = 304; conv 16->16: 2320;
   * dense 16*42 -> 12: 672*12+12 = 8076; head 12 -> 7: 91 (V: 13). */
  pb_nn_spec_t sq = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_spec_t sv = c4_small(1, PB_NN_HEAD_TANH);
  assert_int_equal(pb_nn_spec_param_count(&sq), 304 + 2320 + 8076 + 91);
  assert_int_equal(pb_nn_spec_param_count(&sv), 304 + 2320 + 8076 + 13);
  /* large: 608 + 9248 + 9248 + (1344*64+64 = 86080) + 455 (V: 65) */
  pb_nn_spec_t lq = c4_large(7, PB_NN_HEAD_LINEAR);
  pb_nn_spec_t lv = c4_large(1, PB_NN_HEAD_TANH);
  assert_int_equal(pb_nn_spec_param_count(&lq), 608 + 9248 * 2 + 86080 + 455);
  assert_int_equal(pb_nn_spec_param_count(&lv), 608 + 9248 * 2 + 86080 + 65);
  /* the paper: ~10K and ~100K */
  assert_in_range(pb_nn_spec_param_count(&sq), 9000, 11500);
  assert_in_range(pb_nn_spec_param_count(&lq), 90000, 110000);

  pb_nn_t *nn = make(&lq, 1e-3f, 1);
  assert_int_equal(pb_nn_param_count(nn), pb_nn_spec_param_count(&lq));
  assert_memory_equal(pb_nn_spec(nn), &lq, sizeof lq);
  pb_nn_destroy(&nn);
}

static void test_init_deterministic(void **state) {
  (void)state;
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *a = make(&s, 1e-3f, 42), *b = make(&s, 1e-3f, 42),
          *c = make(&s, 1e-3f, 43);
  assert_true(same_weights(a, b));
  assert_false(same_weights(a, c));
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
}

static void test_forward(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(1, PB_NN_HEAD_TANH);
  pb_nn_t *nn = make(&s, 1e-3f, 5);
  enum { B = 9 };
  float in[B * 84], out[B], one[1];
  pb_rng_t r;
  pb_rng_seed(&r, 1, 0);
  fill_uniform(&r, in, sizeof in / sizeof in[0], -3.0f, 3.0f);

  /* batch 0 reads and writes nothing, even with NULL buffers */
  assert_int_equal(pb_nn_forward(nn, NULL, 0, NULL, &err), 0);
  assert_int_equal(pb_nn_forward(nn, in, -1, out, &err), PB_EINVAL);
  assert_int_equal(pb_nn_forward(nn, NULL, 3, out, &err), PB_EINVAL);

  assert_int_equal(pb_nn_forward(nn, in, B, out, &err), 0);
  int distinct = 0;
  for (int i = 0; i < B; i++) {
    assert_true(out[i] > -1.0f && out[i] < 1.0f);
    distinct += i > 0 && out[i] != out[0];
    assert_int_equal(pb_nn_forward(nn, in + i * 84, 1, one, &err), 0);
    assert_float_equal(one[0], out[i], 1e-5);
  }
  assert_true(distinct > 0);

  /* the forward pass does not touch its input and is repeatable */
  float in2[B * 84], out2[B];
  memcpy(in2, in, sizeof in);
  assert_int_equal(pb_nn_forward(nn, in, B, out2, &err), 0);
  assert_memory_equal(in, in2, sizeof in);
  assert_memory_equal(out, out2, sizeof out);
  pb_nn_destroy(&nn);
}

/* V learns the sign of the sum of its inputs. */
static void test_learns_sign_of_sum(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(2, 4, 4, 1, PB_NN_HEAD_TANH, 1, 8, 1, 32);
  pb_nn_t *nn = make(&s, 3e-3f, 11);
  pb_nn_set_threads(1);
  enum { NIN = 32, B = 64, EVAL = 256 };
  static float x[EVAL * NIN], t[EVAL], y[EVAL];
  pb_rng_t r;
  pb_rng_seed(&r, 2, 0);

  /* a fixed evaluation set */
  fill_uniform(&r, x, EVAL * NIN, -1.0f, 1.0f);
  for (int i = 0; i < EVAL; i++) {
    float sum = 0;
    for (int k = 0; k < NIN; k++) sum += x[i * NIN + k];
    t[i] = sum >= 0 ? 1.0f : -1.0f;
  }
  float evalx[EVAL * NIN], evalt[EVAL];
  memcpy(evalx, x, sizeof evalx);
  memcpy(evalt, t, sizeof evalt);
#define EVAL_LOSS(dst)                                            \
  do {                                                            \
    assert_int_equal(pb_nn_forward(nn, evalx, EVAL, y, &err), 0); \
    double l_ = 0;                                                \
    for (int i = 0; i < EVAL; i++)                                \
      l_ += (y[i] - evalt[i]) * (y[i] - evalt[i]) / EVAL;         \
    (dst) = l_;                                                   \
  } while (0)

  double before, after;
  EVAL_LOSS(before);
  float last = 0;
  for (int step = 0; step < 1000; step++) {
    fill_uniform(&r, x, B * NIN, -1.0f, 1.0f);
    for (int i = 0; i < B; i++) {
      float sum = 0;
      for (int k = 0; k < NIN; k++) sum += x[i * NIN + k];
      t[i] = sum >= 0 ? 1.0f : -1.0f;
    }
    assert_int_equal(pb_nn_train_step(nn, x, t, NULL, B, &last, &err), 0);
  }
  EVAL_LOSS(after);
#undef EVAL_LOSS
  print_message(
      "sign-of-sum: eval MSE %.4f -> %.4f (last batch %.4f), %lld "
      "steps\n",
      before, after, (double)last, (long long)pb_nn_train_steps(nn));
  assert_true(before > 0.5);
  assert_true(after < 0.1);
  assert_true(after < before / 10);
  assert_int_equal(pb_nn_train_steps(nn), 1000);
  pb_nn_destroy(&nn);
}

/* Targets under a zero mask do not matter: same loss, same new weights. */
static void test_masked_loss(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(2, 3, 3, 5, PB_NN_HEAD_LINEAR, 1, 4, 1, 8);
  enum { B = 6, O = 5, NIN = 18 };
  float x[B * NIN], t1[B * O], t2[B * O], mask[B * O], y[B * O];
  pb_rng_t r;
  pb_rng_seed(&r, 3, 0);
  fill_uniform(&r, x, B * NIN, -1, 1);
  fill_uniform(&r, t1, B * O, -1, 1);
  int on = 0;
  for (int i = 0; i < B * O; i++) {
    mask[i] = (i % 3 == 1) ? 0.0f : 1.0f;
    on += mask[i] != 0;
    t2[i] = mask[i] != 0 ? t1[i] : (i % 2 ? 1e30f : NAN);
  }

  pb_nn_t *a = make(&s, 1e-2f, 9), *b = make(&s, 1e-2f, 9);
  assert_int_equal(pb_nn_forward(a, x, B, y, &err), 0);
  double want = 0;
  for (int i = 0; i < B * O; i++)
    want += mask[i] * (y[i] - t1[i]) * (y[i] - t1[i]);
  want /= on;

  float la, lb;
  for (int step = 0; step < 3; step++) {
    assert_int_equal(pb_nn_train_step(a, x, t1, mask, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t2, mask, B, &lb, &err), 0);
    assert_true(la == lb);
    if (step == 0) assert_float_equal(la, want, 1e-5);
  }
  assert_true(same_weights(a, b));

  /* positive control: a target under a 1 mask does change things */
  pb_nn_t *c = make(&s, 1e-2f, 9), *d = make(&s, 1e-2f, 9);
  t2[0] = t1[0] + 0.5f; /* mask[0] == 1 */
  for (int i = 1; i < B * O; i++) t2[i] = t1[i];
  assert_int_equal(pb_nn_train_step(c, x, t1, mask, B, &la, &err), 0);
  assert_int_equal(pb_nn_train_step(d, x, t2, mask, B, &lb, &err), 0);
  assert_true(la != lb);
  assert_false(same_weights(c, d));

  /* an all-zero mask: loss 0, and Adam moves nothing (zero gradient) */
  float zero[B * O] = {0};
  pb_nn_t *e = make(&s, 1e-2f, 9), *f = make(&s, 1e-2f, 9);
  assert_int_equal(pb_nn_train_step(e, x, t1, zero, B, &la, &err), 0);
  assert_true(la == 0.0f);
  assert_true(same_weights(e, f));

  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
  pb_nn_destroy(&d);
  pb_nn_destroy(&e);
  pb_nn_destroy(&f);
}

static void test_train_bad_input(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(1, 2, 2, 2, PB_NN_HEAD_LINEAR, 1, 2, 0, 0);
  pb_nn_t *nn = make(&s, 1e-2f, 1), *ref = make(&s, 1e-2f, 1);
  float x[8] = {0, 1, 2, 3, 4, 5, 6, NAN}, t[4] = {0}, loss = -1;

  assert_int_equal(pb_nn_train_step(nn, x, t, NULL, 0, &loss, &err), 0);
  assert_true(loss == 0.0f);
  assert_int_equal(pb_nn_train_steps(nn), 0);
  assert_int_equal(pb_nn_train_step(nn, x, NULL, NULL, 2, &loss, &err),
                   PB_EINVAL);
  assert_int_equal(pb_nn_train_step(nn, x, t, NULL, -2, &loss, &err),
                   PB_EINVAL);
  /* a NaN input gives a NaN loss: refused, weights untouched */
  pb_err_clear(&err);
  assert_int_equal(pb_nn_train_step(nn, x, t, NULL, 2, &loss, &err), PB_ERANGE);
  assert_non_null(strstr(err.msg, "loss"));
  assert_int_equal(pb_nn_train_steps(nn), 0);
  assert_true(same_weights(nn, ref));
  pb_nn_destroy(&nn);
  pb_nn_destroy(&ref);
}

static void test_weights_roundtrip(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *a = make(&s, 1e-3f, 1), *b = make(&s, 1e-3f, 2);
  enum { B = 16 };
  float x[B * 84], ya[B * 7], yb[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 4, 0);
  fill_uniform(&r, x, B * 84, 0, 1);

  uint8_t *buf;
  size_t len;
  assert_int_equal(pb_nn_weights_save(a, 12345, &buf, &len, &err), 0);
  assert_int_equal(len, 64 + 4 * (size_t)pb_nn_param_count(a) + 4);
  assert_memory_equal(buf, "PBNN", 4);

  pb_nn_spec_t got;
  uint64_t ver = 0;
  assert_int_equal(pb_nn_weights_peek(buf, len, &got, &ver, &err), 0);
  assert_memory_equal(&got, &s, sizeof s);
  assert_int_equal(ver, 12345);

  assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_not_equal(ya, yb, sizeof ya);
  ver = 0;
  assert_int_equal(pb_nn_weights_load(b, buf, len, &ver, &err), 0);
  assert_int_equal(ver, 12345);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  free(buf);

  /* copy_weights does the same without bytes */
  pb_nn_t *c = make(&s, 1e-3f, 3);
  assert_int_equal(pb_nn_copy_weights(c, a, &err), 0);
  assert_int_equal(pb_nn_forward(c, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  pb_nn_spec_t other = c4_small(1, PB_NN_HEAD_TANH);
  pb_nn_t *d = make(&other, 1e-3f, 3);
  pb_err_clear(&err);
  assert_int_equal(pb_nn_copy_weights(d, a, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "outputs"));
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
  pb_nn_destroy(&d);
}

/* Train, save state, restore into another network: both continue the same,
 * bit for bit (weights, moments and step count travel). */
static void test_state_roundtrip(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(2, 6, 7, 7, PB_NN_HEAD_LINEAR, 2, 8, 1, 16);
  pb_nn_opt_t o = {3e-3f, 1e-4f, 0.0f};
  pb_nn_t *a = pb_nn_new(&s, &o, "cpu", 7, &err);
  pb_nn_t *b = pb_nn_new(&s, &o, "cpu", 8, &err);
  assert_non_null(a);
  assert_non_null(b);
  enum { B = 32 };
  float x[B * 84], t[B * 7], m[B * 7], loss;
  pb_rng_t r;
  pb_rng_seed(&r, 5, 0);
  for (int step = 0; step < 5; step++) {
    fill_uniform(&r, x, B * 84, 0, 1);
    fill_uniform(&r, t, B * 7, -1, 1);
    for (int i = 0; i < B * 7; i++) m[i] = pb_rng_uniform(&r) < 0.7;
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, &loss, &err), 0);
  }
  uint8_t *st;
  size_t len;
  assert_int_equal(pb_nn_state_save(a, &st, &len, &err), 0);
  assert_int_equal(len, 64 + 12 * (size_t)pb_nn_param_count(a) + 4);
  pb_nn_spec_t got;
  assert_int_equal(pb_nn_state_peek(st, len, &got, &err), 0);
  assert_memory_equal(&got, &s, sizeof s);
  /* a state buffer is not a weights buffer, and vice versa */
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(b, st, len, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "training-state"));

  assert_int_equal(pb_nn_state_load(b, st, len, &err), 0);
  assert_int_equal(pb_nn_train_steps(b), 5);
  assert_true(same_weights(a, b));
  free(st);

  for (int step = 0; step < 4; step++) {
    fill_uniform(&r, x, B * 84, 0, 1);
    fill_uniform(&r, t, B * 7, -1, 1);
    float la, lb;
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t, m, B, &lb, &err), 0);
    assert_true(la == lb);
  }
  assert_true(same_weights(a, b));
  uint8_t *sa, *sb;
  size_t na, nb;
  assert_int_equal(pb_nn_state_save(a, &sa, &na, &err), 0);
  assert_int_equal(pb_nn_state_save(b, &sb, &nb, &err), 0);
  assert_int_equal(na, nb);
  assert_memory_equal(sa, sb, na);

  /* negative control: weights alone (fresh moments) diverge */
  uint8_t *w;
  size_t wl;
  pb_nn_t *c = pb_nn_new(&s, &o, "cpu", 9, &err);
  assert_int_equal(pb_nn_weights_save(a, 0, &w, &wl, &err), 0);
  assert_int_equal(pb_nn_weights_load(c, w, wl, NULL, &err), 0);
  assert_int_equal(pb_nn_train_step(a, x, t, m, B, &loss, &err), 0);
  assert_int_equal(pb_nn_train_step(c, x, t, m, B, &loss, &err), 0);
  assert_false(same_weights(a, c));
  free(w);
  free(sa);
  free(sb);
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
}

/* Every single-byte corruption and every truncation is refused with a
 * message, and the network is left as it was. */
static void test_corrupt_refused(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(2, 3, 3, 3, PB_NN_HEAD_LINEAR, 1, 2, 1, 4);
  pb_nn_t *src = make(&s, 1e-3f, 1), *dst = make(&s, 1e-3f, 2),
          *ref = make(&s, 1e-3f, 2);
  for (int kind = 0; kind < 2; kind++) {
    uint8_t *buf;
    size_t len;
    if (kind == 0)
      assert_int_equal(pb_nn_weights_save(src, 7, &buf, &len, &err), 0);
    else
      assert_int_equal(pb_nn_state_save(src, &buf, &len, &err), 0);
    for (size_t i = 0; i < len; i++) {
      buf[i] ^= 0x5A;
      pb_err_clear(&err);
      int rc = kind == 0 ? pb_nn_weights_load(dst, buf, len, NULL, &err)
                         : pb_nn_state_load(dst, buf, len, &err);
      if (rc != PB_ECORRUPT)
        fail_msg("kind %d byte %zu: rc %d (%s)", kind, i, rc, err.msg);
      assert_true(strstr(err.msg, "checksum") || strstr(err.msg, "magic") ||
                  strstr(err.msg, "truncated or corrupt"));
      buf[i] ^= 0x5A;
    }
    for (size_t cut = 0; cut < len; cut += (cut < 80 ? 1 : 37)) {
      pb_err_clear(&err);
      int rc = kind == 0 ? pb_nn_weights_load(dst, buf, cut, NULL, &err)
                         : pb_nn_state_load(dst, buf, cut, &err);
      if (rc != PB_ECORRUPT) fail_msg("cut at %zu: rc %d", cut, rc);
      assert_true(strstr(err.msg, "truncated") != NULL);
      if (kind == 0) {
        rc = pb_nn_weights_peek(buf, cut, NULL, NULL, &err);
        assert_int_equal(rc, PB_ECORRUPT);
      }
    }
    /* an intact buffer of another format version is unsupported, not
     * corrupt (the buffer CRC is zlib's, as pb_crc32) */
    uint8_t *v2 = malloc(len);
    memcpy(v2, buf, len);
    v2[4] = 3;
    uint32_t crc = pb_crc32(0, v2, len - 4);
    for (int k = 0; k < 4; k++) v2[len - 4 + k] = (uint8_t)(crc >> (8 * k));
    pb_err_clear(&err);
    int rc2 = kind == 0 ? pb_nn_weights_load(dst, v2, len, NULL, &err)
                        : pb_nn_state_load(dst, v2, len, &err);
    assert_int_equal(rc2, PB_EUNSUPP);
    assert_non_null(strstr(err.msg, "format version 3"));
    /* format 2 (residual blocks / norms) with a plain spec is corrupt */
    memcpy(v2, buf, len);
    v2[4] = 2;
    crc = pb_crc32(0, v2, len - 4);
    for (int k = 0; k < 4; k++) v2[len - 4 + k] = (uint8_t)(crc >> (8 * k));
    pb_err_clear(&err);
    rc2 = kind == 0 ? pb_nn_weights_load(dst, v2, len, NULL, &err)
                    : pb_nn_state_load(dst, v2, len, &err);
    assert_int_equal(rc2, PB_ECORRUPT);
    assert_non_null(strstr(err.msg, "extension"));
    free(v2);
    /* a longer buffer is refused too */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = 0;
    int rc = kind == 0 ? pb_nn_weights_load(dst, longer, len + 1, NULL, &err)
                       : pb_nn_state_load(dst, longer, len + 1, &err);
    assert_int_equal(rc, PB_ECORRUPT);
    free(longer);
    /* nothing was half-loaded */
    assert_true(same_weights(dst, ref));
    assert_int_equal(pb_nn_train_steps(dst), 0);
    /* and the intact buffer still loads */
    rc = kind == 0 ? pb_nn_weights_load(dst, buf, len, NULL, &err)
                   : pb_nn_state_load(dst, buf, len, &err);
    assert_int_equal(rc, 0);
    assert_true(same_weights(dst, src));
    assert_int_equal(pb_nn_copy_weights(dst, ref, &err), 0);
    free(buf);
  }
  assert_int_equal(pb_nn_weights_load(dst, NULL, 0, NULL, &err), PB_EINVAL);
  pb_nn_destroy(&src);
  pb_nn_destroy(&dst);
  pb_nn_destroy(&ref);
}

static void test_spec_mismatch(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *a = make(&s, 1e-3f, 1);
  uint8_t *w, *st;
  size_t wl, sl;
  assert_int_equal(pb_nn_weights_save(a, 3, &w, &wl, &err), 0);
  assert_int_equal(pb_nn_state_save(a, &st, &sl, &err), 0);

  const char *fields[] = {"conv_channels", "head", "dense_units",
                          "conv_layers"};
  pb_nn_spec_t others[4] = {s, s, s, s};
  others[0].conv_channels = 8;
  others[1].head = PB_NN_HEAD_TANH;
  others[2].dense_units = 13;
  others[3].conv_layers = 3;
  for (int i = 0; i < 4; i++) {
    pb_nn_t *b = make(&others[i], 1e-3f, 1), *ref = make(&others[i], 1e-3f, 1);
    pb_err_clear(&err);
    assert_int_equal(pb_nn_weights_load(b, w, wl, NULL, &err), PB_EMISMATCH);
    if (strstr(err.msg, fields[i]) == NULL)
      fail_msg("mismatch message \"%s\" does not name %s", err.msg, fields[i]);
    pb_err_clear(&err);
    assert_int_equal(pb_nn_state_load(b, st, sl, &err), PB_EMISMATCH);
    assert_non_null(strstr(err.msg, fields[i]));
    assert_true(same_weights(b, ref));
    pb_nn_destroy(&b);
    pb_nn_destroy(&ref);
  }
  free(w);
  free(st);
  pb_nn_destroy(&a);
}

/* ------------------------------------------------ export + PyTorch check */

static const char *find_python(void) {
  const char *cands[] = {getenv("PB_PYTHON"), "python3", "/usr/bin/python3"};
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
    if (cands[i] == NULL || cands[i][0] == '\0') continue;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", cands[i]);
    if (system(cmd) == 0) return cands[i];
  }
  return NULL;
}

static void write_floats(const char *dir, const char *name, const float *x,
                         size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(x, sizeof *x, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Reads our export with torch.load (weights_only=True, the default from
 * PyTorch 2.6), recomputes our forward pass with torch's functional ops,
 * and replays our training steps with torch.optim.Adam. */
static const char *PY_CHECK =
    "import sys, torch, torch.nn.functional as F\n"
    "d = sys.argv[1]\n"
    "B, LR, WD, STEPS = int(sys.argv[2]), float(sys.argv[3]), "
    "float(sys.argv[4]), int(sys.argv[5])\n"
    "def arr(name, shape):\n"
    "    b = open(d + '/' + name, 'rb').read()\n"
    "    return torch.frombuffer(bytearray(b), dtype=torch.float32)"
    ".reshape(shape)\n"
    "def run(w, p, x, tanh):\n"
    "    h, k = x, 0\n"
    "    while p + '.conv%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.conv2d(h, w[p + '.conv%d.weight' % k], "
    "w[p + '.conv%d.bias' % k], padding=1), 0.01); k += 1\n"
    "    h, k = h.flatten(1), 0\n"
    "    while p + '.dense%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.linear(h, w[p + '.dense%d.weight' % k], "
    "w[p + '.dense%d.bias' % k]), 0.01); k += 1\n"
    "    h = F.linear(h, w[p + '.head.weight'], w[p + '.head.bias'])\n"
    "    return torch.tanh(h) if tanh else h\n"
    "def load(path):\n"
    "    try:\n"
    "        return torch.load(path, weights_only=True)\n"
    "    except TypeError:  # a torch older than 1.13\n"
    "        return torch.load(path)\n"
    "w = load(d + '/before.pt')\n"
    "assert isinstance(w, dict), type(w)\n"
    "assert w['q.conv0.weight'].shape == (16, 2, 3, 3), "
    "w['q.conv0.weight'].shape\n"
    "assert w['v.head.weight'].shape == (1, 12)\n"
    "x = arr('x.bin', (B, 2, 6, 7))\n"
    "for p, o, tanh in (('q', 7, False), ('v', 1, True)):\n"
    "    err = (run(w, p, x, tanh) - arr(p + '_out.bin', (B, o)))"
    ".abs().max().item()\n"
    "    assert err < 1e-5, (p, 'forward differs by', err)\n"
    "names = [k for k in w if k.startswith('q.')]\n"
    "params = [w[k].clone().requires_grad_() for k in names]\n"
    "opt = torch.optim.Adam(params, lr=LR, weight_decay=WD)\n"
    "t, m = arr('t.bin', (B, 7)), arr('m.bin', (B, 7))\n"
    "for s in range(STEPS):\n"
    "    opt.zero_grad()\n"
    "    q = run(dict(zip(names, params)), 'q', x, False)\n"
    "    loss = (((q - t) ** 2) * m).sum() / m.sum().clamp(min=1)\n"
    "    loss.backward(); opt.step()\n"
    "a = load(d + '/after.pt')\n"
    "assert list(a) == names, (list(a), names)\n"
    "err = max((a[k] - p.detach()).abs().max().item() "
    "for k, p in zip(names, params))\n"
    "assert err < 2e-6, ('adam differs by', err)\n"
    "print('python check ok: forward and Adam agree with torch', "
    "torch.__version__, 'max diff', err)\n";

static void test_export_torch(void **state) {
  (void)state;
  pb_err_t err;
  char dir[] = "/tmp/pb_test_nn_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], after[512], script[512];
  snprintf(path, sizeof path, "%s/before.pt", dir);
  snprintf(after, sizeof after, "%s/after.pt", dir);
  snprintf(script, sizeof script, "%s/check.py", dir);

  pb_nn_spec_t sq = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_spec_t sv = c4_small(1, PB_NN_HEAD_TANH);
  const float LR = 0.01f, WD = 0.05f;
  pb_nn_opt_t o = {LR, WD, 0.0f};
  pb_nn_t *q = pb_nn_new(&sq, &o, "cpu", 21, &err);
  pb_nn_t *v = pb_nn_new(&sv, &o, "cpu", 22, &err);
  assert_non_null(q);
  assert_non_null(v);

  pb_nn_t *nets[2] = {q, v};
  const char *prefixes[2] = {"q", "v"};
  const char *dup[2] = {"q", "q"};
  const char *empty[2] = {"q", ""};
  pb_err_clear(&err);
  assert_int_equal(pb_nn_export_torch(nets, dup, 2, path, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "duplicate"));
  assert_int_equal(pb_nn_export_torch(nets, empty, 2, path, &err), PB_EINVAL);
  assert_int_equal(pb_nn_export_torch(nets, prefixes, 0, path, &err),
                   PB_EINVAL);
  pb_err_clear(&err);
  assert_int_equal(
      pb_nn_export_torch(nets, prefixes, 2, "/nonexistent-dir/x.pt", &err),
      PB_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent-dir/x.pt"));

  assert_int_equal(pb_nn_export_torch(nets, prefixes, 2, path, &err), 0);

  enum { B = 12, STEPS = 3 };
  float x[B * 84], yq[B * 7], yv[B], t[B * 7], m[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 6, 0);
  fill_uniform(&r, x, B * 84, -1, 1);
  fill_uniform(&r, t, B * 7, -1, 1);
  for (int i = 0; i < B * 7; i++) m[i] = (i % 4) != 3;
  assert_int_equal(pb_nn_forward(q, x, B, yq, &err), 0);
  assert_int_equal(pb_nn_forward(v, x, B, yv, &err), 0);
  for (int s = 0; s < STEPS; s++)
    assert_int_equal(pb_nn_train_step(q, x, t, m, B, NULL, &err), 0);
  pb_nn_t *qa[1] = {q};
  assert_int_equal(pb_nn_export_torch(qa, prefixes, 1, after, &err), 0);
  write_floats(dir, "x.bin", x, B * 84);
  write_floats(dir, "q_out.bin", yq, B * 7);
  write_floats(dir, "v_out.bin", yv, B);
  write_floats(dir, "t.bin", t, B * 7);
  write_floats(dir, "m.bin", m, B * 7);

  /* the file is a zip archive (torch.save's format) */
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char head[2];
  assert_int_equal(fread(head, 1, 2, f), 2);
  fclose(f);
  assert_memory_equal(head, "PK", 2);

  const char *py = find_python();
  if (py == NULL) {
    print_message("SKIP python check: no python with torch (set PB_PYTHON)\n");
  } else {
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_CHECK, f);
    assert_int_equal(fclose(f), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s %d %.9g %.9g %d", py, script, dir, B,
             (double)LR, (double)WD, STEPS);
    int rc = system(cmd);
    assert_int_equal(rc, 0);
  }
  const char *files[] = {"before.pt", "after.pt",  "check.py", "x.bin",
                         "q_out.bin", "v_out.bin", "t.bin",    "m.bin"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  assert_int_equal(rmdir(dir), 0);
  pb_nn_destroy(&q);
  pb_nn_destroy(&v);
}

/* ------------------------------------ residual blocks, norms, clipping */

/* The small spec of the brief: 2x6x7 input, one 8-channel convolution,
 * two residual blocks, layer norm, one dense layer of 16, 7 outputs. */
static pb_nn_spec_t res_spec(int res_blocks, int norm) {
  pb_nn_spec_t s = spec_of(2, 6, 7, 7, PB_NN_HEAD_LINEAR, 1, 8, 1, 16);
  s.res_blocks = res_blocks;
  s.norm = norm;
  return s;
}

static void test_res_norm_spec(void **state) {
  (void)state;
  pb_err_t err;
  /* By hand: conv0 2->8: 9*2*8+8 = 152, its norm 8+8 = 16; one residual
   * block: two convs 8->8 (9*8*8+8 = 584 each) and two norms (16 each) =
   * 1200; dense 8*42 = 336 -> 16: 336*16+16 = 5392; head 16*7+7 = 119. */
  pb_nn_spec_t full = res_spec(2, PB_NN_NORM_LAYER);
  assert_int_equal(pb_nn_spec_check(&full, &err), 0);
  assert_int_equal(pb_nn_spec_param_count(&full),
                   152 + 16 + 2 * 1200 + 5392 + 119);
  assert_int_equal(pb_nn_spec_param_count(&full), 8079);
  pb_nn_spec_t res_only = res_spec(2, PB_NN_NORM_NONE);
  assert_int_equal(pb_nn_spec_param_count(&res_only),
                   152 + 2 * 2 * 584 + 5392 + 119);
  pb_nn_spec_t norm_only = res_spec(0, PB_NN_NORM_LAYER);
  assert_int_equal(pb_nn_spec_param_count(&norm_only), 152 + 16 + 5392 + 119);
  pb_nn_spec_t plain = res_spec(0, PB_NN_NORM_NONE);
  assert_int_equal(pb_nn_spec_param_count(&plain), 152 + 5392 + 119);
  /* two convolutions with norms: each conv gets its own (conv1 8->8 too) */
  pb_nn_spec_t two = full;
  two.conv_layers = 2;
  assert_int_equal(pb_nn_spec_param_count(&two), 8079 + 584 + 16);

  const pb_nn_spec_t *specs[] = {&full, &res_only, &norm_only, &plain, &two};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    pb_nn_t *nn = make(specs[i], 1e-3f, 1);
    assert_int_equal(pb_nn_param_count(nn), pb_nn_spec_param_count(specs[i]));
    assert_memory_equal(pb_nn_spec(nn), specs[i], sizeof *specs[i]);
    size_t len;
    uint8_t *w = weights_of(nn, &len);
    assert_int_equal(len, 64 + 4 * (size_t)pb_nn_param_count(nn) + 4);
    free(w);
    pb_nn_destroy(&nn);
  }

  /* the new fields' checks */
  struct {
    pb_nn_spec_t s;
    const char *field;
  } bad[] = {
      {res_spec(1, PB_NN_NORM_NONE), "res_blocks"},
      {res_spec(-1, PB_NN_NORM_NONE), "res_blocks"},
      {res_spec(65, PB_NN_NORM_NONE), "res_blocks"},
      {res_spec(0, 2), "norm"},
      {res_spec(0, -1), "norm"},
  };
  bad[0].s.conv_layers = 0; /* residual blocks need a convolution */
  bad[0].s.conv_channels = 0;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_int_equal(pb_nn_spec_check(&bad[i].s, &err), PB_EINVAL);
    if (strstr(err.msg, bad[i].field) == NULL)
      fail_msg("case %zu: message \"%s\" does not name %s", i, err.msg,
               bad[i].field);
    assert_int_equal(pb_nn_spec_param_count(&bad[i].s), -1);
    pb_err_clear(&err);
    assert_null(pb_nn_new(&bad[i].s, NULL, "cpu", 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
  /* conv_layers 0 with channels set is still refused with residual blocks */
  pb_nn_spec_t nc = res_spec(1, PB_NN_NORM_LAYER);
  nc.conv_layers = 0;
  assert_int_equal(pb_nn_spec_check(&nc, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "res_blocks"));
  /* a norm without convolutions is allowed (it has nothing to normalise) */
  pb_nn_spec_t dense_norm = spec_of(2, 6, 7, 7, PB_NN_HEAD_LINEAR, 0, 0, 1, 16);
  dense_norm.norm = PB_NN_NORM_LAYER;
  assert_int_equal(pb_nn_spec_check(&dense_norm, &err), 0);
  dense_norm.norm = PB_NN_NORM_NONE;
  long plain_dense = pb_nn_spec_param_count(&dense_norm);
  dense_norm.norm = PB_NN_NORM_LAYER;
  assert_int_equal(pb_nn_spec_param_count(&dense_norm), plain_dense);
}

/* Overwrites every parameter of nn with vals (through a weights buffer
 * with a fresh checksum). */
static void set_params(pb_nn_t *nn, const float *vals) {
  size_t len;
  uint8_t *w = weights_of(nn, &len);
  size_t n = (size_t)pb_nn_param_count(nn);
  memcpy(w + 64, vals, 4 * n); /* little-endian host, as the buffer */
  uint32_t crc = pb_crc32(0, w, len - 4);
  for (int k = 0; k < 4; k++) w[len - 4 + k] = (uint8_t)(crc >> (8 * k));
  pb_err_t err;
  if (pb_nn_weights_load(nn, w, len, NULL, &err) != 0)
    fail_msg("set_params: %s", err.msg);
  free(w);
}

/* The parameters as floats (malloc'd). */
static float *params_of(const pb_nn_t *nn) {
  size_t len;
  uint8_t *w = weights_of(nn, &len);
  size_t n = (size_t)pb_nn_param_count(nn);
  float *p = malloc(4 * n);
  memcpy(p, w + 64, 4 * n);
  free(w);
  return p;
}

/* ---- a plain reference forward pass, in double, one position at a time */

static double ref_act(double x) { return x >= 0 ? x : 0.01 * x; }

/* 3x3 same convolution of x [cin][H][W] into y [cout][H][W]; consumes the
 * weight and bias from *p. */
static void ref_conv(const float **p, const double *x, int cin, int cout,
                     int H, int W, double *y) {
  const float *w = *p, *b = w + (size_t)cout * cin * 9;
  for (int co = 0; co < cout; co++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++) {
        double acc = b[co];
        for (int ci = 0; ci < cin; ci++)
          for (int di = 0; di < 3; di++)
            for (int dj = 0; dj < 3; dj++) {
              int r = i + di - 1, c = j + dj - 1;
              if (r < 0 || r >= H || c < 0 || c >= W) continue;
              acc += (double)w[((co * cin + ci) * 3 + di) * 3 + dj] *
                     x[(ci * H + r) * W + c];
            }
        y[(co * H + i) * W + j] = acc;
      }
  *p = b + cout;
}

/* Layer norm over the whole [C][H][W] (GroupNorm, one group, eps 1e-5),
 * then per-channel scale and shift from *p. */
static void ref_norm(const float **p, double *y, int C, int H, int W) {
  const float *g = *p, *b = g + C;
  size_t n = (size_t)C * H * W;
  double mean = 0, var = 0;
  for (size_t k = 0; k < n; k++) mean += y[k];
  mean /= (double)n;
  for (size_t k = 0; k < n; k++) var += (y[k] - mean) * (y[k] - mean);
  var /= (double)n;
  double inv = 1.0 / sqrt(var + 1e-5);
  for (int c = 0; c < C; c++)
    for (int k = 0; k < H * W; k++) {
      double *v = &y[(size_t)c * H * W + k];
      *v = (*v - mean) * inv * g[c] + b[c];
    }
  *p = b + C;
}

static void ref_forward(const pb_nn_spec_t *s, const float *params,
                        const float *in, double *out) {
  const int H = s->height, W = s->width, C = s->conv_channels;
  const int cells = H * W;
  int maxc = s->planes > C ? s->planes : C;
  size_t big = (size_t)maxc * cells;
  if ((size_t)s->dense_units > big) big = (size_t)s->dense_units;
  double *h = calloc(big, sizeof *h), *y = calloc(big, sizeof *y),
         *z = calloc(big, sizeof *z);
  const float *p = params;
  int c = s->planes;
  for (int k = 0; k < c * cells; k++) h[k] = in[k];
  for (int i = 0; i < s->conv_layers; i++) {
    ref_conv(&p, h, c, C, H, W, y);
    if (s->norm) ref_norm(&p, y, C, H, W);
    for (int k = 0; k < C * cells; k++) h[k] = ref_act(y[k]);
    c = C;
  }
  for (int b = 0; b < s->res_blocks; b++) {
    ref_conv(&p, h, C, C, H, W, y);
    if (s->norm) ref_norm(&p, y, C, H, W);
    for (int k = 0; k < C * cells; k++) y[k] = ref_act(y[k]);
    ref_conv(&p, y, C, C, H, W, z);
    if (s->norm) ref_norm(&p, z, C, H, W);
    for (int k = 0; k < C * cells; k++) h[k] = ref_act(z[k] + h[k]);
  }
  int f = c * cells;
  for (int i = 0; i < s->dense_layers; i++) {
    const float *w = p, *bias = p + (size_t)s->dense_units * f;
    for (int u = 0; u < s->dense_units; u++) {
      double acc = bias[u];
      for (int k = 0; k < f; k++) acc += (double)w[(size_t)u * f + k] * h[k];
      y[u] = ref_act(acc);
    }
    p = bias + s->dense_units;
    f = s->dense_units;
    for (int u = 0; u < f; u++) h[u] = y[u];
  }
  const float *w = p, *bias = p + (size_t)s->outputs * f;
  for (int o = 0; o < s->outputs; o++) {
    double acc = bias[o];
    for (int k = 0; k < f; k++) acc += (double)w[(size_t)o * f + k] * h[k];
    int squash = s->head == PB_NN_HEAD_TANH ||
                 (s->head == PB_NN_HEAD_PV && o == s->outputs - 1);
    out[o] = squash ? tanh(acc) : acc;
  }
  free(h);
  free(y);
  free(z);
}

/* Our forward pass with residual blocks and layer norms equals the plain
 * reference above (random parameters everywhere, norm scales and shifts
 * included); same seed, same outputs; a batch gives the rows' outputs one
 * at a time, and a row's output does not depend on the other rows (no batch
 * statistics). */
static void test_res_norm_forward(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 6, NIN = 84 };
  float x[B * NIN], y[B * 7], y2[B * 7], one[7];
  pb_rng_t r;
  pb_rng_seed(&r, 77, 0);
  fill_uniform(&r, x, B * NIN, -1.0f, 1.0f);

  const pb_nn_spec_t specs[] = {res_spec(2, PB_NN_NORM_LAYER),
                                res_spec(2, PB_NN_NORM_NONE),
                                res_spec(0, PB_NN_NORM_LAYER)};
  for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
    const pb_nn_spec_t *s = &specs[si];
    pb_nn_t *a = make(s, 1e-3f, 31), *b = make(s, 1e-3f, 31),
            *c = make(s, 1e-3f, 32);
    assert_true(same_weights(a, b));
    assert_false(same_weights(a, c));
    /* fresh norms: scale 1, shift 0 */
    if (s->norm) {
      float *p = params_of(a);
      /* conv0.norm follows conv0's 144 weights and 8 biases */
      for (int k = 0; k < 8; k++) {
        assert_true(p[152 + k] == 1.0f);
        assert_true(p[160 + k] == 0.0f);
      }
      free(p);
    }
    assert_int_equal(pb_nn_forward(a, x, B, y, &err), 0);
    assert_int_equal(pb_nn_forward(b, x, B, y2, &err), 0);
    assert_memory_equal(y, y2, sizeof y);
    assert_int_equal(pb_nn_forward(c, x, B, y2, &err), 0);
    assert_memory_not_equal(y, y2, sizeof y);

    /* random parameters, norm scales around 1 and shifts around 0 */
    size_t n = (size_t)pb_nn_param_count(a);
    float *p = params_of(a);
    for (size_t k = 0; k < n; k++)
      p[k] = p[k] == 1.0f   ? 0.5f + (float)pb_rng_uniform(&r)
             : p[k] == 0.0f ? (float)pb_rng_uniform(&r) - 0.5f
                            : p[k] * 1.5f;
    set_params(a, p);
    assert_int_equal(pb_nn_forward(a, x, B, y, &err), 0);
    double want[7], maxdiff = 0;
    int spread = 0;
    for (int i = 0; i < B; i++) {
      ref_forward(s, p, &x[i * NIN], want);
      for (int o = 0; o < 7; o++) {
        double d = fabs(want[o] - y[i * 7 + o]);
        if (d > maxdiff) maxdiff = d;
        spread += fabs(want[o]) > 0.05;
      }
      /* one row at a time */
      assert_int_equal(pb_nn_forward(a, &x[i * NIN], 1, one, &err), 0);
      for (int o = 0; o < 7; o++)
        assert_float_equal(one[o], y[i * 7 + o], 1e-5);
    }
    print_message("res %d norm %d: max |ours - reference| = %.2g\n",
                  s->res_blocks, s->norm, maxdiff);
    assert_true(maxdiff < 1e-4);
    assert_true(spread > 0); /* not a trivially-zero comparison */

    /* row 0 does not see the others: rescale and shift rows 1.. */
    float xs[B * NIN];
    memcpy(xs, x, sizeof xs);
    for (int k = NIN; k < B * NIN; k++) xs[k] = xs[k] * 7.0f + 3.0f;
    assert_int_equal(pb_nn_forward(a, xs, B, y2, &err), 0);
    for (int o = 0; o < 7; o++) assert_float_equal(y2[o], y[o], 1e-5);
    assert_true(memcmp(&y2[7], &y[7], sizeof y - 7 * sizeof y[0]) != 0);

    /* a training step with norms moves the norm parameters too */
    float t[B * 7];
    fill_uniform(&r, t, B * 7, -1, 1);
    assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);
    float *after = params_of(a);
    if (s->norm) {
      int moved = 0;
      for (int k = 152; k < 168; k++) moved += after[k] != p[k];
      assert_int_equal(moved, 16);
    }
    free(after);
    free(p);
    pb_nn_destroy(&a);
    pb_nn_destroy(&b);
    pb_nn_destroy(&c);
  }
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Buffers of networks with residual blocks or norms: format 2, the
 * extension word at byte 44, round trips; refused by plain networks with
 * the field named. */
static void test_res_norm_buffers(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 5 };
  float x[B * 84], ya[B * 7], yb[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 9, 0);
  fill_uniform(&r, x, B * 84, 0, 1);

  struct {
    pb_nn_spec_t s;
    uint32_t fmt, ext;
  } cases[] = {
      {res_spec(0, PB_NN_NORM_NONE), 1, 0},
      {res_spec(2, PB_NN_NORM_LAYER), 2, 2 | 1u << 16},
      {res_spec(3, PB_NN_NORM_NONE), 2, 3},
      {res_spec(0, PB_NN_NORM_LAYER), 2, 1u << 16},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const pb_nn_spec_t *s = &cases[i].s;
    pb_nn_opt_t o = {1e-2f, 0.0f, 0.0f};
    pb_nn_t *a = pb_nn_new(s, &o, "cpu", 40 + i, &err);
    assert_non_null(a);
    /* train a little so that the norms are not at their initial values */
    float t[B * 7];
    fill_uniform(&r, t, B * 7, -1, 1);
    for (int k = 0; k < 3; k++)
      assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);

    for (int kind = 0; kind < 2; kind++) {
      uint8_t *buf;
      size_t len;
      if (kind == 0)
        assert_int_equal(pb_nn_weights_save(a, 99, &buf, &len, &err), 0);
      else
        assert_int_equal(pb_nn_state_save(a, &buf, &len, &err), 0);
      assert_int_equal(len, 64 + (kind ? 12 : 4) *
                                     (size_t)pb_nn_param_count(a) + 4);
      assert_int_equal(le32(buf + 4), cases[i].fmt);
      assert_int_equal(le32(buf + 44), cases[i].ext);
      /* the nine base fields stay where they were */
      assert_int_equal((int)le32(buf + 8 + 4 * 5), s->conv_layers);
      assert_int_equal((int)le32(buf + 8 + 4 * 8), s->dense_units);
      pb_nn_spec_t got;
      memset(&got, 0xEE, sizeof got);
      if (kind == 0)
        assert_int_equal(pb_nn_weights_peek(buf, len, &got, NULL, &err), 0);
      else
        assert_int_equal(pb_nn_state_peek(buf, len, &got, &err), 0);
      assert_memory_equal(&got, s, sizeof got);

      /* into a fresh network (another seed): same outputs */
      pb_nn_t *b = pb_nn_new(s, &o, "cpu", 1000 + i, &err);
      assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
      assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
      assert_memory_not_equal(ya, yb, sizeof ya);
      if (kind == 0) {
        uint64_t ver = 0;
        assert_int_equal(pb_nn_weights_load(b, buf, len, &ver, &err), 0);
        assert_int_equal(ver, 99);
      } else {
        assert_int_equal(pb_nn_state_load(b, buf, len, &err), 0);
        assert_int_equal(pb_nn_train_steps(b), 3);
      }
      assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
      assert_memory_equal(ya, yb, sizeof ya);
      assert_true(same_weights(a, b));
      if (kind == 1) { /* the moments came along: the next steps agree */
        assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);
        assert_int_equal(pb_nn_train_step(b, x, t, NULL, B, NULL, &err), 0);
        assert_true(same_weights(a, b));
      }
      pb_nn_destroy(&b);

      /* a network that differs only in res_blocks / norm refuses it */
      if (cases[i].fmt == 2) {
        pb_nn_spec_t other = *s;
        const char *field;
        if (s->res_blocks) {
          other.res_blocks = 0;
          field = "res_blocks";
        } else {
          other.norm = PB_NN_NORM_NONE;
          field = "norm";
        }
        pb_nn_t *p = make(&other, 1e-3f, 5), *ref = make(&other, 1e-3f, 5);
        pb_err_clear(&err);
        int rc = kind == 0 ? pb_nn_weights_load(p, buf, len, NULL, &err)
                           : pb_nn_state_load(p, buf, len, &err);
        assert_int_equal(rc, PB_EMISMATCH);
        if (strstr(err.msg, field) == NULL)
          fail_msg("mismatch message \"%s\" does not name %s", err.msg, field);
        assert_true(same_weights(p, ref));
        assert_int_equal(pb_nn_train_steps(p), 0);
        /* and copy_weights says the same */
        pb_err_clear(&err);
        assert_int_equal(pb_nn_copy_weights(p, a, &err), PB_EMISMATCH);
        assert_non_null(strstr(err.msg, field));
        /* the other way round: a plain buffer into the res/norm network */
        uint8_t *pw;
        size_t pl;
        assert_int_equal(pb_nn_weights_save(p, 0, &pw, &pl, &err), 0);
        assert_int_equal(le32(pw + 4),
                         other.res_blocks || other.norm ? 2 : 1);
        pb_err_clear(&err);
        assert_int_equal(pb_nn_weights_load(a, pw, pl, NULL, &err),
                         PB_EMISMATCH);
        assert_non_null(strstr(err.msg, field));
        free(pw);
        pb_nn_destroy(&p);
        pb_nn_destroy(&ref);
      }
      free(buf);
    }
    pb_nn_destroy(&a);
  }

  /* format 1 with a non-zero extension word is corrupt, not a spec */
  pb_nn_spec_t s = res_spec(2, PB_NN_NORM_LAYER);
  pb_nn_t *a = make(&s, 1e-3f, 1);
  size_t len;
  uint8_t *buf = weights_of(a, &len);
  buf[4] = 1;
  uint32_t crc = pb_crc32(0, buf, len - 4);
  for (int k = 0; k < 4; k++) buf[len - 4 + k] = (uint8_t)(crc >> (8 * k));
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(a, buf, len, NULL, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "extension"));
  free(buf);
  pb_nn_destroy(&a);
}

/* One Adam step of torch.optim.Adam in double, on the flat parameters. */
typedef struct {
  double m[8], v[8];
  int t;
} ref_adam_t;

/* The linear network 1x1x3 -> 2 (head only: W [2][3] then b [2]): MSE
 * gradient in double, weight decay added, clipped to norm `clip` as
 * clip_grad_norm_ (scale clip / (norm + 1e-6) when norm > clip), then Adam.
 * Returns the norm before clipping. */
static double ref_linear_step(double *theta, ref_adam_t *a, const float *x,
                              const float *t, int B, double lr, double wd,
                              double clip) {
  double g[8] = {0};
  for (int b = 0; b < B; b++)
    for (int o = 0; o < 2; o++) {
      double y = theta[6 + o];
      for (int i = 0; i < 3; i++) y += theta[o * 3 + i] * x[b * 3 + i];
      double d = 2.0 * (y - t[b * 2 + o]) / (B * 2);
      for (int i = 0; i < 3; i++) g[o * 3 + i] += d * x[b * 3 + i];
      g[6 + o] += d;
    }
  double norm = 0;
  for (int k = 0; k < 8; k++) {
    g[k] += wd * theta[k];
    norm += g[k] * g[k];
  }
  norm = sqrt(norm);
  if (clip > 0 && norm > clip)
    for (int k = 0; k < 8; k++) g[k] *= clip / (norm + 1e-6);
  a->t++;
  double bc1 = 1 - pow(0.9, a->t), bc2 = 1 - pow(0.999, a->t);
  for (int k = 0; k < 8; k++) {
    a->m[k] = 0.9 * a->m[k] + 0.1 * g[k];
    a->v[k] = 0.999 * a->v[k] + 0.001 * g[k] * g[k];
    theta[k] -= lr / bc1 * a->m[k] / (sqrt(a->v[k]) / sqrt(bc2) + 1e-8);
  }
  return norm;
}

/* Gradient clipping against the reference above, over steps whose
 * gradients differ in size by orders of magnitude: the norm is reported
 * before clipping, and Adam sees the clipped gradient. */
static void test_grad_clip_reference(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(1, 1, 3, 2, PB_NN_HEAD_LINEAR, 0, 0, 0, 0);
  enum { B = 4, STEPS = 4 };
  const double LR = 0.05, WD = 0.01;
  const float clips[] = {0.0f, 0.2f, 30.0f};
  /* targets of very different sizes: the clipped run sees gradients of
   * one size, the unclipped one of wildly different sizes */
  const float scale[STEPS] = {1000.0f, 1.0f, 300.0f, 0.01f};
  pb_rng_t r;
  float final[3][8];
  for (int ci = 0; ci < 3; ci++) {
    pb_nn_opt_t o = {(float)LR, (float)WD, clips[ci]};
    pb_nn_t *nn = pb_nn_new(&s, &o, "cpu", 3, &err);
    assert_non_null(nn);
    assert_true(pb_nn_last_grad_norm(nn) == 0.0);
    float *p0 = params_of(nn);
    double theta[8];
    for (int k = 0; k < 8; k++) theta[k] = p0[k];
    free(p0);
    ref_adam_t adam;
    memset(&adam, 0, sizeof adam);
    pb_rng_seed(&r, 123, 0); /* the same data for every clip */
    int clipped = 0;
    for (int step = 0; step < STEPS; step++) {
      float x[B * 3], t[B * 2];
      fill_uniform(&r, x, B * 3, -1, 1);
      fill_uniform(&r, t, B * 2, -scale[step], scale[step]);
      double want_norm =
          ref_linear_step(theta, &adam, x, t, B, LR, WD, clips[ci]);
      assert_int_equal(pb_nn_train_step(nn, x, t, NULL, B, NULL, &err), 0);
      double got_norm = pb_nn_last_grad_norm(nn);
      if (fabs(got_norm - want_norm) > 1e-5 * want_norm + 1e-7)
        fail_msg("clip %g step %d: grad norm %.9g, reference %.9g",
                 (double)clips[ci], step, got_norm, want_norm);
      clipped += clips[ci] > 0 && want_norm > clips[ci];
      if (ci == 0) print_message("step %d: grad norm %.4g\n", step, got_norm);
      float *p = params_of(nn);
      for (int k = 0; k < 8; k++)
        if (fabs(p[k] - theta[k]) > 1e-5 * (1 + fabs(theta[k])))
          fail_msg("clip %g step %d param %d: %.9g, reference %.9g",
                   (double)clips[ci], step, k, (double)p[k], theta[k]);
      free(p);
    }
    /* the cases do what they are meant to: 0.2 clips every step, 30 the
     * two large ones only */
    if (clips[ci] == 0.2f) assert_int_equal(clipped, STEPS);
    if (clips[ci] == 30.0f) assert_int_equal(clipped, 2);
    float *p = params_of(nn);
    memcpy(final[ci], p, sizeof final[ci]);
    free(p);
    pb_nn_destroy(&nn);
  }
  /* and clipping changed where training went */
  assert_memory_not_equal(final[0], final[1], sizeof final[0]);
  assert_memory_not_equal(final[0], final[2], sizeof final[0]);
  assert_memory_not_equal(final[1], final[2], sizeof final[0]);
}

/* On a convolutional network: a clip above every gradient's norm is
 * bit-identical to no clip; a clip below them is not; set_opt turns it on
 * and off; bad values are refused. */
static void test_grad_clip(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = res_spec(1, PB_NN_NORM_LAYER);
  enum { B = 8, STEPS = 4 };
  float x[B * 84], t[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 17, 0);
  fill_uniform(&r, x, B * 84, -1, 1);
  fill_uniform(&r, t, B * 7, -50, 50); /* large errors: large gradients */
  pb_nn_opt_t off = {1e-2f, 1e-4f, 0.0f}, high = {1e-2f, 1e-4f, 1e9f},
              low = {1e-2f, 1e-4f, 0.1f};
  pb_nn_t *a = pb_nn_new(&s, &off, "cpu", 8, &err),
          *b = pb_nn_new(&s, &high, "cpu", 8, &err),
          *c = pb_nn_new(&s, &low, "cpu", 8, &err);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  double norms[STEPS];
  for (int step = 0; step < STEPS; step++) {
    float la, lb, lc;
    assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t, NULL, B, &lb, &err), 0);
    assert_int_equal(pb_nn_train_step(c, x, t, NULL, B, &lc, &err), 0);
    norms[step] = pb_nn_last_grad_norm(a);
    assert_true(la == lb);
    /* the norms are those before clipping: far above 0.1 */
    assert_true(norms[step] > 1.0);
    assert_true(pb_nn_last_grad_norm(b) == norms[step]);
    if (step == 0) {
      assert_true(la == lc); /* same start, same loss and gradient */
      assert_true(pb_nn_last_grad_norm(c) == norms[0]);
    }
    assert_true(pb_nn_last_grad_norm(c) > 1.0);
  }
  assert_true(same_weights(a, b));
  assert_false(same_weights(a, c));

  /* set_opt: clipping on for one network only from here */
  pb_nn_t *d = pb_nn_new(&s, &off, "cpu", 8, &err);
  pb_nn_t *e = pb_nn_new(&s, &off, "cpu", 8, &err);
  assert_int_equal(pb_nn_train_step(d, x, t, NULL, B, NULL, &err), 0);
  assert_int_equal(pb_nn_train_step(e, x, t, NULL, B, NULL, &err), 0);
  assert_int_equal(pb_nn_set_opt(e, &low, &err), 0);
  fill_uniform(&r, t, B * 7, -1, 1); /* a smaller error */
  assert_int_equal(pb_nn_train_step(d, x, t, NULL, B, NULL, &err), 0);
  assert_int_equal(pb_nn_train_step(e, x, t, NULL, B, NULL, &err), 0);
  assert_true(pb_nn_last_grad_norm(d) > 0.1); /* so e was clipped */
  assert_true(pb_nn_last_grad_norm(e) == pb_nn_last_grad_norm(d));
  assert_false(same_weights(d, e));

  /* bad values */
  const float bad[] = {-1.0f, -1e-9f, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_nn_opt_t o = {1e-3f, 0.0f, bad[i]};
    pb_err_clear(&err);
    assert_null(pb_nn_new(&s, &o, "cpu", 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
    assert_non_null(strstr(err.msg, "grad_clip"));
    pb_err_clear(&err);
    assert_int_equal(pb_nn_set_opt(a, &o, &err), PB_EINVAL);
    assert_non_null(strstr(err.msg, "grad_clip"));
  }
  /* a refused set_opt kept the old settings: a and b still agree */
  assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);
  assert_int_equal(pb_nn_train_step(b, x, t, NULL, B, NULL, &err), 0);
  assert_true(same_weights(a, b));
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
  pb_nn_destroy(&d);
  pb_nn_destroy(&e);
}

/* Checks a torch.save file of res/norm networks against our forward pass
 * with torch's functional ops (group_norm, residual sums). */
static const char *PY_RES_CHECK =
    "import sys, torch, torch.nn.functional as F\n"
    "d, B = sys.argv[1], int(sys.argv[2])\n"
    "def arr(name, shape):\n"
    "    b = open(d + '/' + name, 'rb').read()\n"
    "    return torch.frombuffer(bytearray(b), dtype=torch.float32)"
    ".reshape(shape)\n"
    "try:\n"
    "    w = torch.load(d + '/res.pt', weights_only=True)\n"
    "except TypeError:\n"
    "    w = torch.load(d + '/res.pt')\n"
    "assert w['q.conv0.norm.weight'].shape == (8,)\n"
    "assert w['q.res1.conv2.weight'].shape == (8, 8, 3, 3)\n"
    "def conv(h, p):\n"
    "    h = F.conv2d(h, w[p + '.weight'], w[p + '.bias'], padding=1)\n"
    "    return h\n"
    "def norm(h, p):\n"
    "    return F.group_norm(h, 1, w[p + '.weight'], w[p + '.bias'], 1e-5)\n"
    "a = lambda h: F.leaky_relu(h, 0.01)\n"
    "h = a(norm(conv(arr('x.bin', (B, 2, 6, 7)), 'q.conv0'), 'q.conv0.norm'))\n"
    "for b in range(2):\n"
    "    p = 'q.res%d' % b\n"
    "    y = a(norm(conv(h, p + '.conv1'), p + '.norm1'))\n"
    "    h = a(norm(conv(y, p + '.conv2'), p + '.norm2') + h)\n"
    "h = a(F.linear(h.flatten(1), w['q.dense0.weight'], w['q.dense0.bias']))\n"
    "q = F.linear(h, w['q.head.weight'], w['q.head.bias'])\n"
    "err = (q - arr('q_out.bin', (B, 7))).abs().max().item()\n"
    "assert err < 1e-5, ('res/norm forward differs by', err)\n"
    "print('python check ok: res/norm forward agrees with torch, max diff',"
    " err)\n";

/* Exporting a network with residual blocks and norms: every parameter is
 * in the file under its name (the names are stored in the zip). */
static void test_export_res_norm(void **state) {
  (void)state;
  pb_err_t err;
  char dir[] = "/tmp/pb_test_nn_res_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], script[512];
  snprintf(path, sizeof path, "%s/res.pt", dir);
  snprintf(script, sizeof script, "%s/check.py", dir);
  pb_nn_spec_t s = res_spec(2, PB_NN_NORM_LAYER);
  pb_nn_t *q = make(&s, 1e-2f, 4);
  enum { B = 5 };
  float x[B * 84], t[B * 7], y[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 8, 0);
  fill_uniform(&r, x, B * 84, -1, 1);
  fill_uniform(&r, t, B * 7, -1, 1);
  /* a few steps so that norm scales and shifts are not 1 and 0 */
  for (int k = 0; k < 3; k++)
    assert_int_equal(pb_nn_train_step(q, x, t, NULL, B, NULL, &err), 0);
  assert_int_equal(pb_nn_forward(q, x, B, y, &err), 0);
  pb_nn_t *nets[1] = {q};
  const char *prefix[1] = {"q"};
  assert_int_equal(pb_nn_export_torch(nets, prefix, 1, path, &err), 0);

  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static uint8_t file[1 << 20];
  size_t n = fread(file, 1, sizeof file, f);
  fclose(f);
  assert_true(n > 4 * 8079 && n < sizeof file);
  assert_memory_equal(file, "PK", 2);
  const char *names[] = {
      "q.conv0.weight",      "q.conv0.bias",       "q.conv0.norm.weight",
      "q.conv0.norm.bias",   "q.res0.conv1.weight", "q.res0.conv1.bias",
      "q.res0.norm1.weight", "q.res0.norm1.bias",  "q.res0.conv2.weight",
      "q.res0.norm2.bias",   "q.res1.conv1.weight", "q.res1.norm2.weight",
      "q.dense0.weight",     "q.head.bias"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (memmem(file, n, names[i], strlen(names[i])) == NULL)
      fail_msg("\"%s\" is not in the export", names[i]);
  /* 4 + 4 * 2 + 2 = 14 tensors of conv0 + blocks, then dense and head */
  assert_null(memmem(file, n, "q.res2.", 7));
  assert_null(memmem(file, n, "q.conv1.", 8));
  /* the stored values: conv0.norm.weight, 8 floats, follow 152 others */
  float *p = params_of(q);
  assert_non_null(memmem(file, n, &p[152], 8 * sizeof(float)));
  assert_non_null(memmem(file, n, &p[160], 8 * sizeof(float)));
  free(p);

  const char *py = find_python();
  if (py == NULL) {
    print_message("SKIP python check: no python with torch (set PB_PYTHON)\n");
  } else {
    write_floats(dir, "x.bin", x, B * 84);
    write_floats(dir, "q_out.bin", y, B * 7);
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_RES_CHECK, f);
    assert_int_equal(fclose(f), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s %d", py, script, dir, B);
    assert_int_equal(system(cmd), 0);
  }
  const char *files[] = {"res.pt", "check.py", "x.bin", "q_out.bin"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char fp[600];
    snprintf(fp, sizeof fp, "%s/%s", dir, files[i]);
    unlink(fp);
  }
  assert_int_equal(rmdir(dir), 0);
  pb_nn_destroy(&q);
}

/* ------------------------------------------------ policy + value head */

/* A PV spec: 2x6x7 input like Connect Four, A actions (outputs A + 1). */
static pb_nn_spec_t pv_spec(int actions) {
  return spec_of(2, 6, 7, actions + 1, PB_NN_HEAD_PV, 2, 8, 1, 16);
}

/* The PV loss of nn.h in double from forward outputs y [B][A+1]: policy
 * cross-entropy over the legal actions (mean over all B rows) and the
 * w-weighted value MSE. m NULL: every action legal, w = 1. Reads pi and z
 * only under a non-zero mask. */
static void pv_ref_loss(const float *y, const float *t, const float *m, int B,
                        int A, double *policy, double *value) {
  double pol = 0, num = 0, den = 0;
  for (int i = 0; i < B; i++) {
    const float *yr = y + (size_t)i * (A + 1), *tr = t + (size_t)i * (A + 1);
    const float *mr = m ? m + (size_t)i * (A + 1) : NULL;
    double mx = -INFINITY, sum = 0;
    for (int a = 0; a < A; a++)
      if (!mr || mr[a] != 0) mx = fmax(mx, yr[a]);
    for (int a = 0; a < A; a++)
      if (!mr || mr[a] != 0) sum += exp(yr[a] - mx);
    for (int a = 0; a < A; a++)
      if (!mr || mr[a] != 0) pol -= tr[a] * (yr[a] - mx - log(sum));
    double w = mr ? mr[A] : 1.0;
    if (w != 0) {
      double d = yr[A] - tr[A];
      num += w * d * d;
      den += w;
    }
  }
  *policy = pol / B;
  *value = num / (den > 1 ? den : 1);
}

/* Random PV targets and masks: each row's legal actions at random (row
 * `empty` has none), pi a random distribution over them, z in [-1, 1], w 0
 * on every third row; NaN (or 1e30) under every zero mask. */
static void pv_targets(pb_rng_t *r, int B, int A, int empty, float *t,
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

static void test_pv_spec(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = pv_spec(7);
  assert_int_equal(PB_NN_HEAD_PV, 3);
  assert_int_equal(pb_nn_spec_check(&s, &err), 0);
  /* the same parameters as a Q network with A + 1 outputs */
  pb_nn_spec_t lin = s;
  lin.head = PB_NN_HEAD_LINEAR;
  assert_int_equal(pb_nn_spec_param_count(&s), pb_nn_spec_param_count(&lin));
  pb_nn_spec_t two = pv_spec(2); /* 2 actions: the least */
  assert_int_equal(pb_nn_spec_check(&two, &err), 0);
  pb_nn_spec_t res = res_spec(2, PB_NN_NORM_LAYER);
  res.head = PB_NN_HEAD_PV;
  assert_int_equal(pb_nn_spec_check(&res, &err), 0);
  /* fewer than 2 actions, or an unknown head */
  for (int outputs = -1; outputs <= 2; outputs++) {
    pb_nn_spec_t b = s;
    b.outputs = outputs;
    pb_err_clear(&err);
    assert_int_equal(pb_nn_spec_check(&b, &err), PB_EINVAL);
    assert_non_null(strstr(err.msg, "outputs"));
    assert_int_equal(pb_nn_spec_param_count(&b), -1);
    pb_err_clear(&err);
    assert_null(pb_nn_new(&b, NULL, "cpu", 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
  /* outputs 1 and 2 are still fine for the other heads */
  pb_nn_spec_t q2 = s;
  q2.head = PB_NN_HEAD_LINEAR;
  q2.outputs = 2;
  assert_int_equal(pb_nn_spec_check(&q2, &err), 0);
  pb_nn_spec_t bad = s;
  bad.head = 4;
  pb_err_clear(&err);
  assert_int_equal(pb_nn_spec_check(&bad, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "head"));
  assert_non_null(strstr(err.msg, "PB_NN_HEAD_PV"));
}

/* A PV row is [linear, tanh(linear)]: the same seed gives a PV and a
 * LINEAR network of the same fields the same weights (same layout), the
 * logits equal the linear network's outputs bit for bit, and the value is
 * tanh of its last output; both agree with the reference in double, with
 * residual blocks and norms too, and a batch gives the rows one at a time. */
static void test_pv_forward(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 7, A = 7, O = A + 1, NIN = 84 };
  float x[B * NIN], y[B * O], yl[B * O], one[O];
  pb_rng_t r;
  pb_rng_seed(&r, 41, 0);
  fill_uniform(&r, x, B * NIN, -1.0f, 1.0f);
  pb_nn_spec_t specs[2] = {pv_spec(A), res_spec(2, PB_NN_NORM_LAYER)};
  specs[1].head = PB_NN_HEAD_PV;
  specs[1].outputs = O;
  for (int si = 0; si < 2; si++) {
    const pb_nn_spec_t *s = &specs[si];
    pb_nn_spec_t ls = *s;
    ls.head = PB_NN_HEAD_LINEAR;
    pb_nn_t *pv = make(s, 1e-3f, 31), *li = make(&ls, 1e-3f, 31);
    size_t n = (size_t)pb_nn_param_count(pv);
    assert_int_equal(n, (size_t)pb_nn_param_count(li));
    float *pp = params_of(pv), *lp = params_of(li);
    assert_memory_equal(pp, lp, 4 * n);
    free(lp);

    assert_int_equal(pb_nn_forward(pv, x, B, y, &err), 0);
    assert_int_equal(pb_nn_forward(li, x, B, yl, &err), 0);
    int distinct = 0;
    double maxdiff = 0;
    for (int i = 0; i < B; i++) {
      assert_memory_equal(&y[i * O], &yl[i * O], A * sizeof(float));
      float v = y[i * O + A];
      assert_true(v > -1.0f && v < 1.0f);
      assert_true(fabs(v - tanh((double)yl[i * O + A])) < 1e-6);
      assert_true(v != yl[i * O + A]);
      distinct += i > 0 && v != y[A];
      double want[O];
      ref_forward(s, pp, &x[i * NIN], want);
      for (int o = 0; o < O; o++)
        maxdiff = fmax(maxdiff, fabs(want[o] - y[i * O + o]));
      assert_int_equal(pb_nn_forward(pv, &x[i * NIN], 1, one, &err), 0);
      for (int o = 0; o < O; o++)
        assert_float_equal(one[o], y[i * O + o], 1e-5);
    }
    print_message("pv (res %d): max |ours - reference| = %.2g\n", s->res_blocks,
                  maxdiff);
    assert_true(maxdiff < 1e-4);
    assert_true(distinct > 0);
    free(pp);
    pb_nn_destroy(&pv);
    pb_nn_destroy(&li);
  }
}

/* The loss of a step is the cross-entropy over the legal actions plus the
 * masked value MSE computed here from the forward outputs; its parts are
 * pb_nn_last_loss_parts. NaN and 1e30 under zero masks change nothing
 * (same loss, same weights), a target under a 1 mask does; an action that
 * is illegal in every row gets no gradient (its head row stays put). */
static void test_pv_loss(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 9, A = 5, O = A + 1 };
  pb_nn_spec_t s = spec_of(2, 3, 3, O, PB_NN_HEAD_PV, 1, 4, 1, 8);
  enum { NIN = 18 };
  float x[B * NIN], t[B * O], m[B * O], t2[B * O], y[B * O], loss;
  pb_rng_t r;
  pb_rng_seed(&r, 43, 0);
  fill_uniform(&r, x, B * NIN, -1, 1);
  pv_targets(&r, B, A, 4, t, m);
  /* the same targets with 0 (not NaN) under zero masks */
  for (int i = 0; i < B * O; i++) t2[i] = m[i] != 0 ? t[i] : 0.0f;

  pb_nn_t *a = make(&s, 1e-2f, 5), *b = make(&s, 1e-2f, 5);
  double pol, val, gp = -1, gv = -1;
  assert_int_equal(pb_nn_last_loss_parts(a, &gp, &gv), 0);
  assert_true(gp == 0 && gv == 0);
  assert_int_equal(pb_nn_last_loss_parts(NULL, &gp, &gv), PB_EINVAL);
  assert_int_equal(pb_nn_last_loss_parts(a, NULL, NULL), 0);
  for (int step = 0; step < 3; step++) {
    assert_int_equal(pb_nn_forward(a, x, B, y, &err), 0);
    pv_ref_loss(y, t2, m, B, A, &pol, &val);
    float la, lb;
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t2, m, B, &lb, &err), 0);
    assert_true(la == lb);
    assert_true(isfinite(la));
    assert_int_equal(pb_nn_last_loss_parts(a, &gp, &gv), 0);
    if (step == 0)
      print_message("pv loss: %.6f = %.6f + %.6f (by hand %.6f + %.6f)\n",
                    (double)la, gp, gv, pol, val);
    assert_true(fabs(gp - pol) < 1e-5 * fmax(1, pol));
    assert_true(fabs(gv - val) < 1e-5);
    assert_true(fabs((double)la - (pol + val)) < 1e-5 * fmax(1, pol + val));
    assert_true(pol > 0.1 && val > 0.01); /* both parts are exercised */
  }
  assert_true(same_weights(a, b));

  /* mask NULL: every action legal, every value counts */
  float tf[B * O];
  for (int i = 0; i < B; i++) {
    for (int k = 0; k < O; k++) tf[i * O + k] = 1.0f / A;
    tf[i * O + A] = (float)(i % 3) - 1.0f;
  }
  assert_int_equal(pb_nn_forward(a, x, B, y, &err), 0);
  pv_ref_loss(y, tf, NULL, B, A, &pol, &val);
  assert_int_equal(pb_nn_train_step(a, x, tf, NULL, B, &loss, &err), 0);
  assert_int_equal(pb_nn_last_loss_parts(a, &gp, &gv), 0);
  assert_true(fabs(gp - pol) < 1e-5 && fabs(gv - val) < 1e-5);
  assert_true(fabs((double)loss - (pol + val)) < 1e-5);

  /* positive controls: pi of a legal action, z of a counted row */
  for (int which = 0; which < 2; which++) {
    int k = which == 0 ? 0 : A; /* row 0: action 0 is legal, w is 1 */
    assert_true(m[k] != 0);
    memcpy(t2, t, sizeof t2);
    t2[k] = which == 0 ? t[k] + 0.25f : -t[k];
    pb_nn_t *c = make(&s, 1e-2f, 5), *d = make(&s, 1e-2f, 5);
    float lc, ld;
    assert_int_equal(pb_nn_train_step(c, x, t, m, B, &lc, &err), 0);
    assert_int_equal(pb_nn_train_step(d, x, t2, m, B, &ld, &err), 0);
    assert_true(lc != ld);
    assert_false(same_weights(c, d));
    pb_nn_destroy(&c);
    pb_nn_destroy(&d);
  }

  /* action 2 illegal everywhere: its logit takes no part in any softmax,
   * so head.weight row 2 and head.bias[2] do not move (no weight decay) */
  for (int i = 0; i < B; i++) m[i * O + 2] = 0, t[i * O + 2] = NAN;
  pb_nn_t *e = make(&s, 1e-2f, 5);
  float *p0 = params_of(e);
  assert_int_equal(pb_nn_train_step(e, x, t, m, B, &loss, &err), 0);
  float *p1 = params_of(e);
  size_t n = (size_t)pb_nn_param_count(e);
  const int F = 8; /* head input: dense_units */
  size_t hw = n - (size_t)O * F - O, hb = n - O;
  for (int a2 = 0; a2 < O; a2++) {
    int moved = 0;
    for (int k = 0; k < F; k++)
      moved += p0[hw + a2 * F + k] != p1[hw + a2 * F + k];
    moved += p0[hb + a2] != p1[hb + a2];
    if (a2 == 2)
      assert_int_equal(moved, 0);
    else
      assert_true(moved > 0);
  }
  free(p0);
  free(p1);

  /* every mask 0: loss 0 (row 4 style everywhere), no movement */
  float zero[B * O] = {0};
  pb_nn_t *f = make(&s, 1e-2f, 5), *g = make(&s, 1e-2f, 5);
  assert_int_equal(pb_nn_train_step(f, x, t, zero, B, &loss, &err), 0);
  assert_true(loss == 0.0f);
  assert_true(same_weights(f, g));

  /* the other heads: policy 0, value = the loss */
  pb_nn_spec_t qs = spec_of(2, 3, 3, O, PB_NN_HEAD_LINEAR, 1, 4, 1, 8);
  pb_nn_t *q = make(&qs, 1e-2f, 5);
  assert_int_equal(pb_nn_train_step(q, x, tf, NULL, B, &loss, &err), 0);
  assert_int_equal(pb_nn_last_loss_parts(q, &gp, &gv), 0);
  assert_true(gp == 0.0 && gv == (double)loss && loss > 0);

  /* a refused step (NaN input) leaves the parts as they were */
  assert_int_equal(pb_nn_last_loss_parts(a, &pol, &val), 0);
  float xn[B * NIN];
  memcpy(xn, x, sizeof xn);
  xn[3] = NAN;
  assert_int_equal(pb_nn_train_step(a, xn, t, m, B, &loss, &err), PB_ERANGE);
  assert_int_equal(pb_nn_last_loss_parts(a, &gp, &gv), 0);
  assert_true(gp == pol && gv == val);

  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&e);
  pb_nn_destroy(&f);
  pb_nn_destroy(&g);
  pb_nn_destroy(&q);
}

/* A few hundred steps on one fixed tiny batch fit it: the loss falls to
 * near its minimum, the targets' entropy (the policy part's floor; the
 * value part goes to near 0). */
static void test_pv_learns(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 8, A = 4, O = A + 1, NIN = 84, STEPS = 300 };
  pb_nn_spec_t s = spec_of(2, 6, 7, O, PB_NN_HEAD_PV, 1, 8, 1, 32);
  pb_nn_t *nn = make(&s, 3e-3f, 17);
  float x[B * NIN], t[B * O], m[B * O], first = 0, last = 0;
  pb_rng_t r;
  pb_rng_seed(&r, 47, 0);
  fill_uniform(&r, x, B * NIN, -1, 1);
  pv_targets(&r, B, A, -1, t, m);
  for (int i = 0; i < B; i++) m[i * O + A] = 1.0f; /* every value counts */
  for (int i = 0; i < B; i++) t[i * O + A] = i % 2 ? 0.8f : -0.6f;
  double entropy = 0;
  for (int i = 0; i < B * O; i++)
    if (i % O != A && m[i] != 0) entropy -= t[i] * log(t[i]) / B;
  for (int step = 0; step < STEPS; step++) {
    float l;
    assert_int_equal(pb_nn_train_step(nn, x, t, m, B, &l, &err), 0);
    if (step == 0) first = l;
    last = l;
  }
  double pol, val;
  assert_int_equal(pb_nn_last_loss_parts(nn, &pol, &val), 0);
  print_message(
      "pv fit: loss %.4f -> %.4f, policy %.4f (entropy %.4f), "
      "value %.5f, %d steps\n",
      (double)first, (double)last, pol, entropy, val, STEPS);
  assert_true(last < first);
  assert_true(last - entropy < (first - entropy) / 10);
  assert_true(pol - entropy < 0.05);
  assert_true(val < 0.01);
  pb_nn_destroy(&nn);
}

/* Buffers record the head in the spec (no format change: a plain PV
 * network is format 1): round trips of weights and state, and a PV buffer
 * is refused by a LINEAR network of the same other fields (and the other
 * way round) naming the head. */
static void test_pv_buffers(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 6, A = 7, O = A + 1, NIN = 84 };
  pb_nn_spec_t s = pv_spec(A), ls = s;
  ls.head = PB_NN_HEAD_LINEAR;
  pb_nn_opt_t o = {3e-3f, 1e-4f, 1.0f};
  pb_nn_t *a = pb_nn_new(&s, &o, "cpu", 3, &err),
          *b = pb_nn_new(&s, &o, "cpu", 4, &err);
  assert_non_null(a);
  assert_non_null(b);
  float x[B * NIN], t[B * O], m[B * O], ya[B * O], yb[B * O];
  pb_rng_t r;
  pb_rng_seed(&r, 53, 0);
  for (int step = 0; step < 4; step++) {
    fill_uniform(&r, x, B * NIN, -1, 1);
    pv_targets(&r, B, A, step, t, m);
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, NULL, &err), 0);
  }

  uint8_t *w, *st;
  size_t wl, sl;
  assert_int_equal(pb_nn_weights_save(a, 77, &w, &wl, &err), 0);
  assert_int_equal(pb_nn_state_save(a, &st, &sl, &err), 0);
  assert_int_equal(le32(w + 4), 1);  /* format 1 */
  assert_int_equal(le32(w + 24), 3); /* spec field "head" */
  assert_int_equal(le32(w + 20), O); /* "outputs" */
  pb_nn_spec_t got;
  uint64_t ver = 0;
  assert_int_equal(pb_nn_weights_peek(w, wl, &got, &ver, &err), 0);
  assert_memory_equal(&got, &s, sizeof s);
  assert_int_equal(ver, 77);
  assert_int_equal(pb_nn_state_peek(st, sl, &got, &err), 0);
  assert_int_equal(got.head, PB_NN_HEAD_PV);

  assert_int_equal(pb_nn_weights_load(b, w, wl, &ver, &err), 0);
  assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  assert_int_equal(pb_nn_state_load(b, st, sl, &err), 0);
  assert_int_equal(pb_nn_train_steps(b), 4);
  for (int step = 0; step < 3; step++) {
    fill_uniform(&r, x, B * NIN, -1, 1);
    pv_targets(&r, B, A, -1, t, m);
    float la, lb;
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t, m, B, &lb, &err), 0);
    assert_true(la == lb);
  }
  assert_true(same_weights(a, b));

  /* a LINEAR network of the same other fields refuses it, and vice versa */
  pb_nn_t *q = make(&ls, 1e-3f, 3), *qref = make(&ls, 1e-3f, 3);
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(q, w, wl, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head is 3 there but 2"));
  pb_err_clear(&err);
  assert_int_equal(pb_nn_state_load(q, st, sl, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head"));
  pb_err_clear(&err);
  assert_int_equal(pb_nn_copy_weights(q, a, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head"));
  assert_true(same_weights(q, qref));
  uint8_t *qw;
  size_t qwl;
  assert_int_equal(pb_nn_weights_save(q, 0, &qw, &qwl, &err), 0);
  assert_int_equal(qwl, wl);
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(b, qw, qwl, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head is 2 there but 3"));
  free(qw);
  free(w);
  free(st);
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&q);
  pb_nn_destroy(&qref);
}

/* PyTorch replays a PV network: its functional forward pass (logits raw,
 * tanh of the last column), and our Adam steps on the loss of nn.h written
 * with F.log_softmax (illegal logits -inf) and the masked MSE, weight
 * decay included. */
static const char *PY_PV_CHECK =
    "import sys, torch, torch.nn.functional as F\n"
    "d = sys.argv[1]\n"
    "B, A, LR, WD, STEPS = int(sys.argv[2]), int(sys.argv[3]), "
    "float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])\n"
    "def arr(name, shape):\n"
    "    b = open(d + '/' + name, 'rb').read()\n"
    "    return torch.frombuffer(bytearray(b), dtype=torch.float32)"
    ".reshape(shape)\n"
    "def run(w, x):\n"
    "    h, k = x, 0\n"
    "    while 'pv.conv%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.conv2d(h, w['pv.conv%d.weight' % k], "
    "w['pv.conv%d.bias' % k], padding=1), 0.01); k += 1\n"
    "    h, k = h.flatten(1), 0\n"
    "    while 'pv.dense%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.linear(h, w['pv.dense%d.weight' % k], "
    "w['pv.dense%d.bias' % k]), 0.01); k += 1\n"
    "    h = F.linear(h, w['pv.head.weight'], w['pv.head.bias'])\n"
    "    return torch.cat([h[:, :A], torch.tanh(h[:, A:])], 1)\n"
    "def load(path):\n"
    "    try:\n"
    "        return torch.load(path, weights_only=True)\n"
    "    except TypeError:  # a torch older than 1.13\n"
    "        return torch.load(path)\n"
    "w = load(d + '/before.pt')\n"
    "assert w['pv.head.weight'].shape[0] == A + 1\n"
    "x = arr('x.bin', (B, 2, 6, 7))\n"
    "err = (run(w, x) - arr('out.bin', (B, A + 1))).abs().max().item()\n"
    "assert err < 1e-5, ('forward differs by', err)\n"
    "t, m, L = arr('t.bin', (B, A + 1)), arr('m.bin', (B, A + 1)), "
    "arr('loss.bin', (STEPS,))\n"
    "legal, wv, zero = m[:, :A] != 0, m[:, A], torch.zeros(())\n"
    "pi = torch.where(legal, t[:, :A], zero)\n"
    "z = torch.where(wv != 0, t[:, A], zero)\n"
    "names = list(w)\n"
    "params = [w[k].clone().requires_grad_() for k in names]\n"
    "opt = torch.optim.Adam(params, lr=LR, weight_decay=WD)\n"
    "for s in range(STEPS):\n"
    "    opt.zero_grad()\n"
    "    y = run(dict(zip(names, params)), x)\n"
    "    lp = F.log_softmax(y[:, :A].masked_fill(~legal, float('-inf')), 1)\n"
    "    pol = -torch.where(legal, pi * lp, zero).sum(1).mean()\n"
    "    val = (wv * (y[:, A] - z) ** 2).sum() / wv.sum().clamp(min=1)\n"
    "    loss = pol + val\n"
    "    assert abs(loss.item() - L[s].item()) < 1e-5, (s, loss.item(), "
    "L[s].item())\n"
    "    loss.backward(); opt.step()\n"
    "a = load(d + '/after.pt')\n"
    "assert list(a) == names, (list(a), names)\n"
    "err = max((a[k] - p.detach()).abs().max().item() "
    "for k, p in zip(names, params))\n"
    "assert err < 2e-6, ('adam differs by', err)\n"
    "print('python pv check ok: forward, loss and Adam agree with torch', "
    "torch.__version__, 'max diff', err)\n";

static void test_pv_torch(void **state) {
  (void)state;
  pb_err_t err;
  const char *py = find_python();
  if (py == NULL) {
    print_message("SKIP python check: no python with torch (set PB_PYTHON)\n");
    return;
  }
  char dir[] = "/tmp/pb_test_nn_pv_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char before[512], after[512], script[512];
  snprintf(before, sizeof before, "%s/before.pt", dir);
  snprintf(after, sizeof after, "%s/after.pt", dir);
  snprintf(script, sizeof script, "%s/check.py", dir);
  enum { B = 10, A = 7, O = A + 1, STEPS = 4 };
  const float LR = 0.01f, WD = 0.05f;
  pb_nn_opt_t o = {LR, WD, 0.0f};
  pb_nn_spec_t s = pv_spec(A);
  s.dense_layers = 2;
  pb_nn_t *nn = pb_nn_new(&s, &o, "cpu", 61, &err);
  assert_non_null(nn);
  float x[B * 84], t[B * O], m[B * O], y[B * O], loss[STEPS];
  pb_rng_t r;
  pb_rng_seed(&r, 59, 0);
  fill_uniform(&r, x, B * 84, -1, 1);
  pv_targets(&r, B, A, -1, t, m); /* every row has a legal action */
  pb_nn_t *nets[1] = {nn};
  const char *prefix[1] = {"pv"};
  assert_int_equal(pb_nn_export_torch(nets, prefix, 1, before, &err), 0);
  assert_int_equal(pb_nn_forward(nn, x, B, y, &err), 0);
  for (int k = 0; k < STEPS; k++)
    assert_int_equal(pb_nn_train_step(nn, x, t, m, B, &loss[k], &err), 0);
  assert_int_equal(pb_nn_export_torch(nets, prefix, 1, after, &err), 0);
  write_floats(dir, "x.bin", x, B * 84);
  write_floats(dir, "out.bin", y, B * O);
  write_floats(dir, "t.bin", t, B * O);
  write_floats(dir, "m.bin", m, B * O);
  write_floats(dir, "loss.bin", loss, STEPS);
  FILE *f = fopen(script, "w");
  assert_non_null(f);
  fputs(PY_PV_CHECK, f);
  assert_int_equal(fclose(f), 0);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s %s %d %d %.9g %.9g %d", py, script, dir, B,
           A, (double)LR, (double)WD, STEPS);
  assert_int_equal(system(cmd), 0);
  const char *files[] = {"before.pt", "after.pt", "check.py", "x.bin",
                         "out.bin",   "t.bin",    "m.bin",    "loss.bin"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  assert_int_equal(rmdir(dir), 0);
  pb_nn_destroy(&nn);
}

/* pb_nn_train_batches against pb_nn_train_step, one call per minibatch
 * with the step's learning rate set first: the same losses, norms, loss
 * parts and state, bit for bit, for a Q network with masks and clipping
 * (some steps clipped, some not), a V network without a mask and a PV
 * network; 61 rows in minibatches of 8, so the last one is short. */
static void test_train_batches(void **state) {
  (void)state;
  enum { N = 61, B = 8, K = (N + B - 1) / B };
  pb_err_t err = {0, ""};
  pb_rng_t r;
  pb_rng_seed(&r, 23, 0);
  const pb_nn_spec_t specs[] = {res_spec(1, PB_NN_NORM_LAYER),
                                c4_small(1, PB_NN_HEAD_TANH), pv_spec(7)};
  for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
    const pb_nn_spec_t *s = &specs[c];
    const int O = s->outputs, I = s->planes * s->height * s->width;
    float *x = malloc(sizeof(float) * N * I), *t = malloc(sizeof(float) * N * O);
    float *m = malloc(sizeof(float) * N * O);
    assert_non_null(x);
    assert_non_null(t);
    assert_non_null(m);
    fill_uniform(&r, x, (size_t)N * I, -1, 1);
    if (s->head == PB_NN_HEAD_PV) {
      pv_targets(&r, N, O - 1, 5, t, m);
    } else {
      /* errors of a few units: norms of 3 to 7, around the clip level 5 */
      fill_uniform(&r, t, (size_t)N * O, -3, 3);
      for (int i = 0; i < N * O; i++) m[i] = pb_rng_uniform(&r) < 0.7;
    }
    const float *mask = s->head == PB_NN_HEAD_TANH ? NULL : m;
    pb_nn_opt_t o = {3e-3f, 1e-4f, s->head == PB_NN_HEAD_LINEAR ? 5.0f : 0.0f};
    pb_nn_t *a = pb_nn_new(s, &o, "cpu", 5, &err);
    pb_nn_t *b = pb_nn_new(s, &o, "cpu", 5, &err);
    assert_non_null(a);
    assert_non_null(b);
    float lrs[K], la[K], lb[K];
    double na[K], nb[K], pa[2 * K], pb[2 * K];
    int clipped = 0;
    for (int j = 0; j < K; j++) lrs[j] = 3e-3f * (float)(j + 1) / K;
    for (int j = 0; j < K; j++) {
      pb_nn_opt_t oj = o;
      oj.lr = lrs[j];
      assert_int_equal(pb_nn_set_opt(a, &oj, &err), 0);
      int rows = N - j * B < B ? N - j * B : B;
      assert_int_equal(pb_nn_train_step(a, x + (size_t)j * B * I,
                                        t + (size_t)j * B * O,
                                        mask ? mask + (size_t)j * B * O : NULL,
                                        rows, &la[j], &err),
                       0);
      na[j] = pb_nn_last_grad_norm(a);
      clipped += na[j] > 5.0;
      assert_int_equal(pb_nn_last_loss_parts(a, &pa[2 * j], &pa[2 * j + 1]), 0);
    }
    assert_int_equal(
        pb_nn_train_batches(b, x, t, mask, N, B, lrs, lb, nb, pb, &err), 0);
    for (int j = 0; j < K; j++) {
      assert_true(la[j] == lb[j]);
      assert_true(na[j] == nb[j]);
      assert_true(pa[2 * j] == pb[2 * j] && pa[2 * j + 1] == pb[2 * j + 1]);
    }
    if (s->head == PB_NN_HEAD_LINEAR) /* both branches of the clipping */
      assert_true(clipped > 0 && clipped < K);
    assert_true(same_bytes(a, b, 1));
    assert_int_equal(pb_nn_train_steps(b), K);
    assert_true(pb_nn_last_grad_norm(b) == na[K - 1]);
    double p0, p1;
    pb_nn_last_loss_parts(b, &p0, &p1);
    assert_true(p0 == pa[2 * K - 2] && p1 == pa[2 * K - 1]);

    /* lrs NULL: the optimizer's rate (now lrs[K-1] in both) for all */
    assert_int_equal(
        pb_nn_train_batches(b, x, t, mask, 2 * B, B, NULL, NULL, NULL, NULL,
                            &err),
        0);
    for (int j = 0; j < 2; j++)
      assert_int_equal(pb_nn_train_step(a, x + (size_t)j * B * I,
                                        t + (size_t)j * B * O,
                                        mask ? mask + (size_t)j * B * O : NULL,
                                        B, NULL, &err),
                       0);
    assert_true(same_bytes(a, b, 1));

    /* a non-finite loss at step 3 of 4: nothing changes, the step is named */
    size_t l0, l1;
    uint8_t *before = bytes_of(b, 1, &l0);
    double g0 = pb_nn_last_grad_norm(b);
    x[(size_t)(2 * B + 1) * I] = NAN;
    pb_err_clear(&err);
    assert_int_equal(
        pb_nn_train_batches(b, x, t, mask, 4 * B, B, NULL, lb, NULL, NULL, &err),
        PB_ERANGE);
    assert_non_null(strstr(err.msg, "step 3 of 4"));
    uint8_t *after = bytes_of(b, 1, &l1);
    assert_true(l0 == l1 && memcmp(before, after, l0) == 0);
    assert_int_equal(pb_nn_train_steps(b), K + 2);
    assert_true(pb_nn_last_grad_norm(b) == g0);
    /* and as one step */
    pb_err_clear(&err);
    assert_int_equal(pb_nn_train_batches(b, x + (size_t)2 * B * I,
                                         t + (size_t)2 * B * O,
                                         mask ? mask + (size_t)2 * B * O : NULL,
                                         B, B, NULL, NULL, NULL, NULL, &err),
                     PB_ERANGE);
    free(after);
    after = bytes_of(b, 1, &l1);
    assert_true(l0 == l1 && memcmp(before, after, l0) == 0);
    free(before);
    free(after);

    /* bad arguments */
    const float bad_lr[K] = {1e-3f, -1e-3f};
    pb_err_clear(&err);
    assert_int_equal(pb_nn_train_batches(b, x, t, mask, 2 * B, B, bad_lr, NULL,
                                         NULL, NULL, &err),
                     PB_EINVAL);
    assert_non_null(strstr(err.msg, "step 2"));
    assert_int_equal(pb_nn_train_batches(b, x, t, mask, N, 0, NULL, NULL, NULL,
                                         NULL, &err),
                     PB_EINVAL);
    assert_int_equal(pb_nn_train_batches(b, NULL, t, mask, N, B, NULL, NULL,
                                         NULL, NULL, &err),
                     PB_EINVAL);
    assert_int_equal(pb_nn_train_batches(b, NULL, NULL, NULL, 0, B, NULL, NULL,
                                         NULL, NULL, &err),
                     0);
    assert_int_equal(pb_nn_train_steps(b), K + 2);
    pb_nn_destroy(&a);
    pb_nn_destroy(&b);
    free(x);
    free(t);
    free(m);
  }
}

static void test_threads(void **state) {
  (void)state;
  pb_err_t err;
  /* 0 with glibc; ASan's allocator ignores mallopt, hence PB_EUNSUPP */
  int rc = pb_nn_tune_malloc(&err);
  assert_true(rc == 0 || rc == PB_EUNSUPP);
  pb_nn_set_threads(2);
  pb_nn_set_threads(0);
  pb_nn_set_threads(1);
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *nn = make(&s, 1e-3f, 1);
  float x[84] = {0}, y[7];
  assert_int_equal(pb_nn_forward(nn, x, 1, y, NULL), 0);
  pb_nn_destroy(&nn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec_check),
      cmocka_unit_test(test_new_bad_args),
      cmocka_unit_test(test_param_counts),
      cmocka_unit_test(test_init_deterministic),
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_learns_sign_of_sum),
      cmocka_unit_test(test_masked_loss),
      cmocka_unit_test(test_train_bad_input),
      cmocka_unit_test(test_weights_roundtrip),
      cmocka_unit_test(test_state_roundtrip),
      cmocka_unit_test(test_corrupt_refused),
      cmocka_unit_test(test_spec_mismatch),
      cmocka_unit_test(test_export_torch),
      cmocka_unit_test(test_res_norm_spec),
      cmocka_unit_test(test_res_norm_forward),
      cmocka_unit_test(test_res_norm_buffers),
      cmocka_unit_test(test_grad_clip_reference),
      cmocka_unit_test(test_grad_clip),
      cmocka_unit_test(test_export_res_norm),
      cmocka_unit_test(test_pv_spec),
      cmocka_unit_test(test_pv_forward),
      cmocka_unit_test(test_pv_loss),
      cmocka_unit_test(test_pv_learns),
      cmocka_unit_test(test_pv_buffers),
      cmocka_unit_test(test_pv_torch),
      cmocka_unit_test(test_train_batches),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
