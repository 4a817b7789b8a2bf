/* test_matchstats.c - the statistics `probs match` prints (Elo and its
 * interval, LOS, draw ratio, nElo) from W/D/L and from pentanomial pair
 * counts, against values worked out by hand from the definitions in
 * common/rating/matchstats.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "elo.h"
#include "matchstats.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) < (tol))

static const double Z = 1.96; /* as pb_elo_diff */
#define C_NELO (800.0 / log(10.0))

/* Phi(x), the standard normal distribution function. */
static double phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

static void test_wdl(void **state) {
  (void)state;
  pb_matchstats_t st;
  /* W=60 D=30 L=10: m = 0.75, v = (60 (1/4)^2 + 30 (1/4)^2 + 10 (3/4)^2)
   * / 100 = 0.1125, se = sqrt(0.1125 / 100). */
  assert_int_equal(pb_matchstats_wdl(60, 30, 10, &st), 0);
  double se = sqrt(0.1125 / 100);
  assert_int_equal(st.n, 100);
  assert_int_equal(st.games, 100);
  NEAR(st.score, 0.75, 1e-12);
  NEAR(st.var, 0.1125, 1e-12);
  NEAR(st.elo, 400 * log10(3.0), 1e-9); /* 190.85 */
  NEAR(st.lo, pb_elo_from_score(0.75 - Z * se), 1e-9);
  NEAR(st.hi, pb_elo_from_score(0.75 + Z * se), 1e-9);
  NEAR(st.los, phi(0.25 / se), 1e-12);
  NEAR(st.draws, 0.3, 1e-12);
  NEAR(st.nelo, 0.25 / sqrt(0.1125) * C_NELO, 1e-9); /* 258.96 */
  NEAR(st.nelo_hi - st.nelo, Z * C_NELO / 10, 1e-9);
  /* An even score: LOS 1/2, nElo 0. */
  assert_int_equal(pb_matchstats_wdl(20, 10, 20, &st), 0);
  NEAR(st.los, 0.5, 1e-12);
  NEAR(st.nelo, 0, 1e-12);
  NEAR(st.lo, -st.hi, 1e-9);
  /* W=2 D=0 L=0 (issue 48): the estimate inside its interval, hi open;
   * the variance of the clamped score 3/4, 3/16. */
  assert_int_equal(pb_matchstats_wdl(2, 0, 0, &st), 0);
  NEAR(st.elo, 400 * log10(3.0), 1e-9);
  NEAR(st.var, 0.1875, 1e-12);
  assert_true(st.lo < st.elo && st.elo < st.hi);
  assert_true(isinf(st.hi));
  NEAR(st.los, phi(0.5 / sqrt(0.1875 / 2)), 1e-12);
  /* Bad input. */
  assert_int_equal(pb_matchstats_wdl(0, 0, 0, &st), -1);
  assert_int_equal(pb_matchstats_wdl(-1, 2, 2, &st), -1);
  assert_int_equal(st.n, 0);
}

static void test_penta(void **state) {
  (void)state;
  pb_matchstats_t st;
  /* 20 pairs [0, 2, 5, 8, 5]: m = (2/4 + 5/2 + 8 3/4 + 5) / 20 = 0.7;
   * v = (2 0.45^2 + 5 0.2^2 + 8 0.05^2 + 5 0.3^2) / 20 = 1.075 / 20. */
  const int p[5] = {0, 2, 5, 8, 5};
  assert_int_equal(pb_matchstats_penta(p, &st), 0);
  double v = 1.075 / 20, se = sqrt(v / 20);
  assert_int_equal(st.n, 20);
  assert_int_equal(st.games, 40);
  NEAR(st.score, 0.7, 1e-12);
  NEAR(st.var, v, 1e-12);
  NEAR(st.elo, 400 * log10(7.0 / 3), 1e-9); /* 147.19 */
  NEAR(st.lo, pb_elo_from_score(0.7 - Z * se), 1e-9);
  NEAR(st.hi, pb_elo_from_score(0.7 + Z * se), 1e-9);
  NEAR(st.los, phi(0.2 / se), 1e-12); /* 0.99994 */
  NEAR(st.draws, 5.0 / 20, 1e-12);
  NEAR(st.nelo, 0.2 / sqrt(2 * v) * C_NELO, 1e-9); /* 211.93 */
  NEAR(st.nelo - st.nelo_lo, Z * C_NELO / sqrt(40), 1e-9);
  /* Pairs that split 1-1 every time: m = 1/2, v = 0, replaced by the
   * binomial variance of a pair, 1/4 / 2. */
  const int even[5] = {0, 0, 10, 0, 0};
  assert_int_equal(pb_matchstats_penta(even, &st), 0);
  NEAR(st.elo, 0, 1e-12);
  NEAR(st.var, 0.125, 1e-12);
  NEAR(st.los, 0.5, 1e-12);
  NEAR(st.draws, 1.0, 1e-12);
  /* Two pairs won twice: clamped to 1 - 1/8, hi open. */
  const int ww[5] = {0, 0, 0, 0, 2};
  assert_int_equal(pb_matchstats_penta(ww, &st), 0);
  NEAR(st.elo, pb_elo_from_score(7.0 / 8), 1e-9);
  assert_true(st.lo < st.elo && isinf(st.hi));
  const int none[5] = {0, 0, 0, 0, 0}, neg[5] = {0, -1, 2, 0, 0};
  assert_int_equal(pb_matchstats_penta(none, &st), -1);
  assert_int_equal(pb_matchstats_penta(neg, &st), -1);
  assert_int_equal(pb_matchstats_penta(NULL, &st), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wdl),
      cmocka_unit_test(test_penta),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
