/* test_nn_train.c - the libtorch shim's training: plain and masked
 * losses, bad input, gradient clipping (against a reference Adam step in
 * double), the policy + value loss (against a hand computation, masks,
 * fitting), several steps per call (pb_nn_train_batches against
 * pb_nn_train_step), and training on several threads. */
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
#include "nn_fixtures.h"
#include "rng.h"

/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------ gradient clipping */

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

/* ------------------------------------------------ policy + value head */

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

/* ---------------------------------------------- several steps per call */

/* n random rows of training data for s (malloc'd, the caller frees):
 * inputs in [-1, 1]; PV targets, or targets of errors of a few units
 * (norms of 3 to 7, around the clip level 5) with 70% of the mask set. */
static void training_rows(pb_rng_t *r, const pb_nn_spec_t *s, int n, float **x,
                          float **t, float **m) {
  const int O = s->outputs, I = s->planes * s->height * s->width;
  *x = malloc(sizeof(float) * (size_t)n * I);
  *t = malloc(sizeof(float) * (size_t)n * O);
  *m = malloc(sizeof(float) * (size_t)n * O);
  assert_non_null(*x);
  assert_non_null(*t);
  assert_non_null(*m);
  fill_uniform(r, *x, (size_t)n * I, -1, 1);
  if (s->head == PB_NN_HEAD_PV) {
    pv_targets(r, n, O - 1, 5, *t, *m);
  } else {
    fill_uniform(r, *t, (size_t)n * O, -3, 3);
    for (int i = 0; i < n * O; i++) (*m)[i] = pb_rng_uniform(r) < 0.7;
  }
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
    float *x, *t, *m;
    training_rows(&r, s, N, &x, &t, &m);
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


/* ------------------------------------------------------ training threads */

/* pb_nn_set_train_threads: 2 and 3 threads give the same bits run after
 * run, for a Q network (mask, clipping), V and PV; the same training as
 * one thread up to float rounding; 1 is the default; bad counts refused. */
static void test_train_threads(void **state) {
  (void)state;
  enum { N = 203, B = 50 };
  pb_err_t err = {0, ""};
  pb_rng_t r;
  pb_rng_seed(&r, 31, 0);
  const pb_nn_spec_t specs[] = {c4_small(7, PB_NN_HEAD_LINEAR),
                                c4_small(1, PB_NN_HEAD_TANH), pv_spec(7)};
  for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
    const pb_nn_spec_t *s = &specs[c];
    float *x, *t, *m;
    training_rows(&r, s, N, &x, &t, &m);
    const float *mask = s->head == PB_NN_HEAD_TANH ? NULL : m;
    pb_nn_opt_t o = {3e-3f, 1e-4f, 5.0f};
    pb_nn_t *nets[4];
    const int threads[4] = {1, 2, 2, 3};
    float loss[4][5];
    for (int i = 0; i < 4; i++) {
      nets[i] = pb_nn_new(s, &o, "cpu", 5, &err);
      assert_non_null(nets[i]);
      assert_int_equal(pb_nn_train_threads(nets[i]), 1);
      assert_int_equal(pb_nn_set_train_threads(nets[i], threads[i], &err), 0);
      assert_int_equal(pb_nn_train_threads(nets[i]), threads[i]);
      assert_int_equal(pb_nn_train_batches(nets[i], x, t, mask, N, B, NULL,
                                           loss[i], NULL, NULL, &err),
                       0);
      /* and a step alone, shorter than a minibatch */
      assert_int_equal(
          pb_nn_train_step(nets[i], x, t, mask, 7, &loss[i][4], &err), 0);
    }
    assert_true(same_bytes(nets[1], nets[2], 1));
    assert_memory_equal(loss[1], loss[2], sizeof loss[1]);
    for (int i = 1; i < 4; i++)
      for (int j = 0; j < 5; j++)
        if (fabsf(loss[i][j] - loss[0][j]) > 1e-4f * (1 + fabsf(loss[0][j])))
          fail_msg("spec %zu, %d threads, step %d: loss %.9g, 1 thread %.9g",
                   c, threads[i], j, (double)loss[i][j], (double)loss[0][j]);
    float *p1 = params_of(nets[0]), *p2 = params_of(nets[1]);
    for (long k = 0; k < pb_nn_param_count(nets[0]); k++)
      assert_true(fabsf(p1[k] - p2[k]) < 1e-4f);
    free(p1);
    free(p2);
    for (int i = 0; i < 4; i++) pb_nn_destroy(&nets[i]);
    free(x);
    free(t);
    free(m);
  }
  pb_nn_t *nn = make(&specs[0], 1e-3f, 1);
  assert_int_equal(pb_nn_set_train_threads(nn, 0, &err), PB_EINVAL);
  assert_int_equal(
      pb_nn_set_train_threads(nn, PB_NN_TRAIN_THREADS_MAX + 1, &err),
      PB_EINVAL);
  assert_int_equal(pb_nn_set_train_threads(NULL, 2, &err), PB_EINVAL);
  assert_int_equal(pb_nn_train_threads(nn), 1);
  assert_int_equal(pb_nn_train_threads(NULL), 1);
  pb_nn_destroy(&nn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_learns_sign_of_sum),
      cmocka_unit_test(test_masked_loss),
      cmocka_unit_test(test_train_bad_input),
      cmocka_unit_test(test_grad_clip_reference),
      cmocka_unit_test(test_grad_clip),
      cmocka_unit_test(test_pv_loss),
      cmocka_unit_test(test_pv_learns),
      cmocka_unit_test(test_train_batches),
      cmocka_unit_test(test_train_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
