/* test_nn_ops.c - the number of libtorch operators a training step runs
 * (pb_nn_count_ops_start/stop, nn.h): on CUDA each is about one kernel
 * launch or less, and a step of these small networks is bound by launches
 * and dispatch, not arithmetic (issue 45). Counted for the learner's two
 * networks of configs/connect4-strong.yaml (Q: masked, clipped; V: tanh,
 * no mask), the smaller Connect Four size and a policy + value network,
 * as one pb_nn_train_batches call of 16 minibatches (per step, as the
 * learner trains) and as one pb_nn_train_step.
 *
 * Under Debian's libtorch 1.13 a step of the large Q network was 425
 * operators (V 410, small Q 364) before the step was reworked (leaves
 * instead of views of theta, scalars without Scalar wrapping, sums
 * instead of means; docs/performance.md) and is about 197 (191, 175)
 * after. The counts depend on the libtorch version, so the bounds are
 * relative, measured here: a step at most 6 forward passes of the same
 * network and batch (1.13: 8.2-8.9 before, 3.8-4.3 after; a policy +
 * value network's loss is larger: at most 8.5, 11.2 before, 6.5 after),
 * and one more convolution layer at most 26 operators more per step (22
 * after; before, each parameter's view and its backward cost about 15
 * more: a parameter must not cost operators of its own beyond its
 * layer's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "nn.h"
#include "nn_fixtures.h"
#include "rng.h"

enum { B = 128, K = 16, I = 2 * 6 * 7 };

/* Operators per step of nn: *chunk for one pb_nn_train_batches call of K
 * minibatches of B rows (divided by K), *one for one pb_nn_train_step. */
static void count(pb_nn_t *nn, int masked, double *chunk, long *one) {
  const int O = pb_nn_spec(nn)->outputs;
  pb_rng_t r;
  pb_rng_seed(&r, 9, 0);
  float *x = malloc(sizeof(float) * K * B * I);
  float *t = malloc(sizeof(float) * K * B * O);
  float *m = malloc(sizeof(float) * K * B * O);
  assert_non_null(x);
  assert_non_null(t);
  assert_non_null(m);
  fill_uniform(&r, x, (size_t)K * B * I, -1, 1);
  fill_uniform(&r, t, (size_t)K * B * O, -1, 1);
  for (int i = 0; i < K * B * O; i++) m[i] = pb_rng_uniform(&r) < 0.7;
  pb_err_t err = {0, ""};
  const float *mask = masked ? m : NULL;
  /* a first call outside the count: anything made once per network */
  assert_int_equal(
      pb_nn_train_batches(nn, x, t, mask, K * B, B, NULL, NULL, NULL, NULL,
                          &err),
      0);
  assert_int_equal(pb_nn_count_ops_start(&err), 0);
  assert_int_equal(
      pb_nn_train_batches(nn, x, t, mask, K * B, B, NULL, NULL, NULL, NULL,
                          &err),
      0);
  long n = pb_nn_count_ops_stop();
  *chunk = (double)n / K;
  assert_int_equal(pb_nn_count_ops_start(&err), 0);
  assert_int_equal(pb_nn_train_step(nn, x, t, mask, B, NULL, &err), 0);
  *one = pb_nn_count_ops_stop();
  free(x);
  free(t);
  free(m);
}

/* Counting is per thread and off outside start..stop; stop without start
 * says so. */
static void test_count_api(void **state) {
  (void)state;
  pb_err_t err = {0, ""};
  assert_int_equal(pb_nn_count_ops_stop(), -1);
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *nn = make(&s, 1e-3f, 1);
  float x[I] = {0}, y[7];
  assert_int_equal(pb_nn_count_ops_start(&err), 0);
  assert_int_equal(pb_nn_forward(nn, x, 1, y, &err), 0);
  long a = pb_nn_count_ops_stop();
  assert_true(a > 0);
  assert_int_equal(pb_nn_count_ops_stop(), -1);
  /* the same call, the same count; restarting starts from 0 */
  assert_int_equal(pb_nn_count_ops_start(&err), 0);
  assert_int_equal(pb_nn_forward(nn, x, 1, y, &err), 0);
  assert_int_equal(pb_nn_count_ops_start(&err), 0);
  assert_int_equal(pb_nn_forward(nn, x, 1, y, &err), 0);
  assert_int_equal(pb_nn_count_ops_stop(), a);
  pb_nn_destroy(&nn);
}

/* Operators of one forward pass of B rows. */
static long forward_ops(pb_nn_t *nn) {
  static float x[B * I], y[B * 8];
  pb_err_t err = {0, ""};
  assert_int_equal(pb_nn_forward(nn, x, B, y, &err), 0);
  assert_int_equal(pb_nn_count_ops_start(&err), 0);
  assert_int_equal(pb_nn_forward(nn, x, B, y, &err), 0);
  return pb_nn_count_ops_stop();
}

static void test_train_ops(void **state) {
  (void)state;
  const struct {
    const char *name;
    pb_nn_spec_t spec;
    int masked;
    float clip;
    double most; /* forward passes a step may cost */
  } cases[] = {
      {"large Q", c4_large(7, PB_NN_HEAD_LINEAR), 1, 5.0f, 6.0},
      {"large V", c4_large(1, PB_NN_HEAD_TANH), 0, 5.0f, 6.0},
      {"small Q", c4_small(7, PB_NN_HEAD_LINEAR), 1, 5.0f, 6.0},
      {"large PV", c4_large(8, PB_NN_HEAD_PV), 1, 5.0f, 8.5},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    pb_err_t err = {0, ""};
    pb_nn_opt_t o = {3e-3f, 1e-4f, cases[c].clip};
    pb_nn_t *nn = pb_nn_new(&cases[c].spec, &o, "cpu", 1, &err);
    assert_non_null(nn);
    double chunk;
    long one;
    count(nn, cases[c].masked, &chunk, &one);
    long fwd = forward_ops(nn);
    print_message("%-8s: %.1f operators per step in a chunk of %d, %ld in "
                  "one pb_nn_train_step, %ld in a forward pass (%.2fx)\n",
                  cases[c].name, chunk, K, one, fwd, chunk / (double)fwd);
    assert_true(fwd > 0);
    const double most = cases[c].most * (double)fwd;
    if (chunk > most || (double)one > most + 30)
      fail_msg("%s: %.1f operators per step (%ld alone): more than %.1f "
               "forward passes of %ld",
               cases[c].name, chunk, one, cases[c].most, fwd);
    pb_nn_destroy(&nn);
  }
}

/* One more convolution layer (two more parameters) adds its layer's
 * operators to a step, and not a few more per parameter. */
static void test_ops_per_layer(void **state) {
  (void)state;
  double per[2];
  for (int c = 0; c < 2; c++) {
    pb_nn_spec_t s = c4_large(7, PB_NN_HEAD_LINEAR);
    s.conv_layers = 2 + c;
    pb_err_t err = {0, ""};
    pb_nn_opt_t o = {3e-3f, 1e-4f, 5.0f};
    pb_nn_t *nn = pb_nn_new(&s, &o, "cpu", 1, &err);
    assert_non_null(nn);
    long one;
    count(nn, 1, &per[c], &one);
    pb_nn_destroy(&nn);
  }
  print_message("a convolution layer: %.1f operators per step\n",
                per[1] - per[0]);
  assert_true(per[1] > per[0]);
  if (per[1] - per[0] > 26.0)
    fail_msg("a convolution layer costs %.1f operators per step (> 26)",
             per[1] - per[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count_api),
      cmocka_unit_test(test_train_ops),
      cmocka_unit_test(test_ops_per_layer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
