/* test_nn.c - the libtorch shim: specs, forward, training (plain and
 * masked), weights/state buffers and their validation, export for Python.
 *
 * When a Python with torch is found (PB_PYTHON, python3, /usr/bin/python3),
 * the export test also checks our forward pass and our Adam against
 * PyTorch's own functional ops and torch.optim.Adam. */
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

/* Weights as bytes, for bit-exact comparisons. Caller frees. */
static uint8_t *weights_of(const pb_nn_t *nn, size_t *len) {
  uint8_t *buf = NULL;
  pb_err_t err = {0, ""};
  int rc = pb_nn_weights_save(nn, 0, &buf, len, &err);
  if (rc != 0) fail_msg("weights_save: %s", err.msg);
  return buf;
}

static int same_weights(const pb_nn_t *a, const pb_nn_t *b) {
  size_t la, lb;
  uint8_t *wa = weights_of(a, &la), *wb = weights_of(b, &lb);
  int same = la == lb && memcmp(wa, wb, la) == 0;
  free(wa);
  free(wb);
  return same;
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
      {spec_of(2, 6, 7, 7, 3, 2, 16, 1, 12), "head"},
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
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
