/* test_elo.c - Elo differences and their intervals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "elo.h"
#include "err.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) < (tol))

static void test_expected_and_inverse(void **state) {
  (void)state;
  NEAR(pb_elo_expected(0), 0.5, 1e-12);
  NEAR(pb_elo_expected(400), 10.0 / 11.0, 1e-12);
  NEAR(pb_elo_expected(-400), 1.0 / 11.0, 1e-12);
  for (double d = -800; d <= 800; d += 37.5)
    NEAR(pb_elo_from_score(pb_elo_expected(d)), d, 1e-6);
  NEAR(pb_elo_from_score(0.75), 190.848501887865, 1e-9);
  /* Finite at the ends. */
  assert_true(isfinite(pb_elo_from_score(0.0)));
  assert_true(isfinite(pb_elo_from_score(1.0)));
  assert_true(pb_elo_from_score(1.0) > 3000);
}

static void test_diff_values(void **state) {
  (void)state;
  double e, lo, hi;
  assert_int_equal(pb_elo_diff(50, 0, 50, &e, &lo, &hi), 0);
  NEAR(e, 0, 1e-9);
  NEAR(lo, -hi, 1e-9);
  /* s = 0.5, se = 0.5 / 10: s +- 0.098. */
  NEAR(hi, pb_elo_from_score(0.5 + 1.96 * 0.05), 1e-9);

  assert_int_equal(pb_elo_diff(60, 30, 10, &e, &lo, &hi), 0);
  NEAR(e, pb_elo_from_score(0.75), 1e-9);
  assert_true(lo < e && e < hi);
  /* Mirror: B's view is the negation. */
  double e2, lo2, hi2;
  assert_int_equal(pb_elo_diff(10, 30, 60, &e2, &lo2, &hi2), 0);
  NEAR(e2, -e, 1e-9);
  NEAR(lo2, -hi, 1e-9);
  NEAR(hi2, -lo, 1e-9);
  /* Four times the games: about half the interval. */
  double e4, lo4, hi4;
  assert_int_equal(pb_elo_diff(240, 120, 40, &e4, &lo4, &hi4), 0);
  NEAR(e4, e, 1e-9);
  assert_true(hi4 - lo4 < 0.6 * (hi - lo));
  assert_true(hi4 - lo4 > 0.4 * (hi - lo));
  /* Draws count half: same score, less spread than wins and losses. */
  assert_int_equal(pb_elo_diff(0, 100, 0, &e, &lo, &hi), 0);
  NEAR(e, 0, 1e-9);
  assert_true(lo < 0 && hi > 0);
}

static void test_clamping(void **state) {
  (void)state;
  double e, lo, hi;
  assert_int_equal(pb_elo_diff(400, 0, 0, &e, &lo, &hi), 0);
  NEAR(e, 400 * log10(799.0), 1e-6); /* as if 399.5 of 400 */
  NEAR(hi, e, 1e-9);
  assert_true(lo < e - 50);
  assert_true(isfinite(lo));
  assert_int_equal(pb_elo_diff(0, 0, 7, &e, &lo, &hi), 0);
  assert_true(e < -400 && isfinite(e));
  NEAR(lo, e, 1e-9);
  assert_true(hi > e);
  assert_int_equal(pb_elo_diff(1, 0, 0, &e, &lo, &hi), 0);
  assert_true(isfinite(e) && lo <= e && e <= hi);
}

static void test_bad_input(void **state) {
  (void)state;
  double e = 5, lo = 5, hi = 5;
  assert_int_equal(pb_elo_diff(0, 0, 0, &e, &lo, &hi), PB_EINVAL);
  NEAR(e, 0, 1e-12);
  NEAR(lo, 0, 1e-12);
  NEAR(hi, 0, 1e-12);
  assert_int_equal(pb_elo_diff(-1, 3, 3, &e, &lo, &hi), PB_EINVAL);
  assert_int_equal(pb_elo_diff(3, 3, 3, NULL, NULL, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expected_and_inverse),
      cmocka_unit_test(test_diff_values),
      cmocka_unit_test(test_clamping),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
