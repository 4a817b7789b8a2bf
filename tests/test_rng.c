/* test_rng.c - determinism and distribution checks for common/base/rng. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "err.h"
#include "rng.h"

static void test_same_seed_same_stream(void **state) {
  (void)state;
  pb_rng_t a, b, c;
  pb_rng_seed(&a, 42, 1);
  pb_rng_seed(&b, 42, 1);
  pb_rng_seed(&c, 42, 2);
  int differ = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = pb_rng_next(&a);
    assert_int_equal(x, pb_rng_next(&b));
    differ += x != pb_rng_next(&c);
  }
  assert_true(differ > 95);
}

static void test_below_uniform(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 7, 0);
  int counts[7] = {0};
  for (int i = 0; i < 70000; i++) {
    uint32_t x = pb_rng_below(&r, 7);
    assert_true(x < 7);
    counts[x]++;
  }
  for (int i = 0; i < 7; i++) assert_true(abs(counts[i] - 10000) < 500);
}

static void test_dirichlet_mean(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 3, 0);
  double mean[4] = {0}, out[4];
  const int n = 20000;
  for (int i = 0; i < n; i++) {
    pb_rng_dirichlet(&r, 0.5, 4, out);
    double s = 0;
    for (int k = 0; k < 4; k++) {
      assert_true(out[k] >= 0.0);
      s += out[k];
      mean[k] += out[k] / n;
    }
    assert_true(fabs(s - 1.0) < 1e-9);
  }
  for (int k = 0; k < 4; k++) assert_true(fabs(mean[k] - 0.25) < 0.01);
}

static void test_gamma_mean(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 5, 0);
  const double shapes[] = {0.3, 1.0, 2.5};
  for (int s = 0; s < 3; s++) {
    double m = 0;
    for (int i = 0; i < 40000; i++) m += pb_rng_gamma(&r, shapes[s]) / 40000;
    assert_true(fabs(m - shapes[s]) < 0.05 * shapes[s] + 0.01);
  }
}

static void test_err_names(void **state) {
  (void)state;
  pb_err_t e;
  assert_int_equal(pb_err_set(&e, PB_EINVAL, "bad %s", "key"), PB_EINVAL);
  assert_string_equal(e.msg, "bad key");
  assert_string_equal(pb_err_name(PB_ECORRUPT), "PB_ECORRUPT");
  assert_string_equal(pb_strerror(PB_ENOMEM), "out of memory");
  assert_int_equal(pb_err_set(NULL, PB_EIO, "x"), PB_EIO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_seed_same_stream),
      cmocka_unit_test(test_below_uniform),
      cmocka_unit_test(test_dirichlet_mean),
      cmocka_unit_test(test_gamma_mean),
      cmocka_unit_test(test_err_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
