/* test_sprt.c - the GSPRT of `probs match --sprt`: its pieces checked by
 * hand (bounds, the constrained maximum-likelihood trinomial, the normal
 * approximation of the LLR), and its stopping checked against simulated
 * matches between players of known strength: with A truly elo1 stronger
 * it accepts H1 about 1 - beta of the time, with A truly elo0 stronger it
 * accepts H0 about 1 - alpha of the time, and it never runs forever. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "elo.h"
#include "err.h"
#include "rng.h"
#include "sprt.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) < (tol))

static void test_init_bounds(void **state) {
  (void)state;
  pb_sprt_t t;
  pb_err_t err;
  assert_int_equal(pb_sprt_init(&t, 0, 10, 0.05, 0.05, &err), 0);
  NEAR(t.lower, log(0.05 / 0.95), 1e-12);
  NEAR(t.upper, log(0.95 / 0.05), 1e-12);
  NEAR(t.s0, 0.5, 1e-12);
  NEAR(t.s1, pb_elo_expected(10), 1e-12);
  assert_int_equal(pb_sprt_decide(&t, 0.0), PB_SPRT_CONTINUE);
  assert_int_equal(pb_sprt_decide(&t, t.upper), PB_SPRT_H1);
  assert_int_equal(pb_sprt_decide(&t, t.lower - 1e-9), PB_SPRT_H0);
  /* Refused: reversed or equal hypotheses, out-of-range numbers, NaN. */
  assert_int_equal(pb_sprt_init(&t, 10, 0, 0.05, 0.05, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "below"));
  assert_int_equal(pb_sprt_init(&t, 5, 5, 0.05, 0.05, &err), PB_EINVAL);
  assert_int_equal(pb_sprt_init(&t, 0, 5000, 0.05, 0.05, &err), PB_EINVAL);
  assert_int_equal(pb_sprt_init(&t, 0, NAN, 0.05, 0.05, &err), PB_EINVAL);
  assert_int_equal(pb_sprt_init(&t, 0, 5, 0.0, 0.05, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "alpha"));
  assert_int_equal(pb_sprt_init(&t, 0, 5, 0.05, 0.7, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "beta"));
}

static void test_parse(void **state) {
  (void)state;
  pb_sprt_t t;
  pb_err_t err;
  assert_int_equal(pb_sprt_parse(&t, "0,10", &err), 0);
  NEAR(t.elo0, 0, 1e-12);
  NEAR(t.elo1, 10, 1e-12);
  NEAR(t.alpha, 0.05, 1e-15);
  NEAR(t.beta, 0.05, 1e-15);
  assert_int_equal(pb_sprt_parse(&t, "-5,5.5,0.1,0.2", &err), 0);
  NEAR(t.elo0, -5, 1e-12);
  NEAR(t.elo1, 5.5, 1e-12);
  NEAR(t.alpha, 0.1, 1e-15);
  NEAR(t.beta, 0.2, 1e-15);
  static const char *const bad[] = {
      "",    "10",    "0,10,0.05", "0,x",  "0,10,",       "0,10,0.05,0.05,1",
      ",10", "0,10 ", "0,1e999",   "10,0", "0,10,1,0.05", "0,10,0.05,nan"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    if (pb_sprt_parse(&t, bad[i], &err) != PB_EINVAL)
      fail_msg("'%s' was accepted", bad[i]);
    assert_true(err.msg[0] != '\0');
  }
  /* The message names the part that is wrong. */
  pb_sprt_parse(&t, "0,abc", &err);
  assert_non_null(strstr(err.msg, "elo1"));
  assert_non_null(strstr(err.msg, "abc"));
}

/* The constrained MLE has the asked-for mean, sums to 1, and with the
 * observed mean already equal to s it is the observed frequencies. */
static void test_mle(void **state) {
  (void)state;
  const double f[3] = {0.3, 0.25, 0.45};
  const double ss[] = {0.2, 0.5, 0.5143, 0.6, 0.8};
  for (size_t k = 0; k < sizeof ss / sizeof ss[0]; k++) {
    double p[3];
    pb_sprt_mle(f, ss[k], p);
    NEAR(p[0] + p[1] + p[2], 1.0, 1e-9);
    NEAR(0.5 * p[1] + p[2], ss[k], 1e-9);
    for (int j = 0; j < 3; j++) assert_true(p[j] > 0);
  }
  double p[3];
  pb_sprt_mle(f, 0.25 * 0.5 + 0.45, p);
  for (int j = 0; j < 3; j++) NEAR(p[j], f[j], 1e-9);
}

/* For many games the LLR approaches the normal approximation
 * n (s1 - s0)(2m - s0 - s1) / (2 var); no games give 0. */
static void test_llr_normal_approx(void **state) {
  (void)state;
  pb_sprt_t t;
  assert_int_equal(pb_sprt_init(&t, 0, 5, 0.05, 0.05, NULL), 0);
  int w = 4100, d = 2000, l = 3900;
  double n = w + d + l, m = (w + 0.5 * d) / n;
  double var =
      (w * (1 - m) * (1 - m) + d * (0.5 - m) * (0.5 - m) + l * m * m) / n;
  double approx = n * (t.s1 - t.s0) * (2 * m - t.s0 - t.s1) / (2 * var);
  double llr = pb_sprt_llr(&t, w, d, l);
  NEAR(llr, approx, 0.02 * fabs(approx) + 0.01);
  assert_true(pb_sprt_llr(&t, 0, 0, 0) == 0.0);
  assert_true(pb_sprt_llr(&t, -1, 3, 3) == 0.0);
  /* More wins: a larger ratio; the mirror result favours H0. */
  assert_true(pb_sprt_llr(&t, 60, 20, 20) > pb_sprt_llr(&t, 50, 20, 30));
  assert_true(pb_sprt_llr(&t, 20, 20, 60) < 0);
  /* One game is finite, whatever its result. */
  assert_true(isfinite(pb_sprt_llr(&t, 1, 0, 0)));
  assert_true(isfinite(pb_sprt_llr(&t, 0, 0, 1)));
}

/* One simulated match: A scores each game win / draw / loss with the
 * probabilities of an Elo difference `elo` and draw rate `pd`, the test is
 * checked after every game, as `probs match --sprt` does. Returns the
 * decision (PB_SPRT_CONTINUE if max_games ran out) and the games played. */
static int simulate(const pb_sprt_t *t, double elo, double pd, pb_rng_t *rng,
                    int max_games, int *games) {
  double s = pb_elo_expected(elo);
  double pw = s - 0.5 * pd, pl = 1.0 - s - 0.5 * pd;
  assert_true(pw > 0 && pl > 0);
  int w = 0, d = 0, l = 0;
  for (int g = 1; g <= max_games; g++) {
    double u = pb_rng_uniform(rng);
    if (u < pw)
      w++;
    else if (u < pw + pl)
      l++;
    else
      d++;
    int dec = pb_sprt_check(t, w, d, l, NULL);
    if (dec != PB_SPRT_CONTINUE) {
      *games = g;
      return dec;
    }
  }
  *games = max_games;
  return PB_SPRT_CONTINUE;
}

/* Runs `runs` simulated matches with A truly `elo` stronger and returns the
 * share that accepted H1 (every match must decide); *mean_games: the
 * average length. */
static double h1_rate(const pb_sprt_t *t, double elo, double pd, int runs,
                      uint64_t seed, double *mean_games) {
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  int h1 = 0;
  double total = 0;
  for (int r = 0; r < runs; r++) {
    int games = 0;
    int dec = simulate(t, elo, pd, &rng, 200000, &games);
    if (dec == PB_SPRT_CONTINUE)
      fail_msg("run %d undecided after %d", r, games);
    h1 += dec == PB_SPRT_H1;
    total += games;
  }
  *mean_games = total / runs;
  return (double)h1 / runs;
}

/* The error rates hold against players of known strength. Wald's bounds
 * make the true rates at most about alpha and beta (overshoot of the bound
 * makes them a little smaller); 400 runs per case give a standard error of
 * about 0.011 at 5%, so the bands below are wide enough for any seed. */
static void test_stopping_against_simulation(void **state) {
  (void)state;
  pb_sprt_t t;
  assert_int_equal(pb_sprt_init(&t, 0, 40, 0.05, 0.05, NULL), 0);
  double len1, len0, lenmid, lenfar;
  double at1 = h1_rate(&t, 40, 0.3, 400, 1, &len1);
  double at0 = h1_rate(&t, 0, 0.3, 400, 2, &len0);
  printf(
      "sprt 0,40: H1 accepted %.3f at elo 40 (%.0f games), %.3f at elo 0 "
      "(%.0f games)\n",
      at1, len1, at0, len0);
  assert_true(at1 >= 0.91 && at1 <= 0.995); /* 1 - beta = 0.95 */
  assert_true(at0 >= 0.005 && at0 <= 0.09); /* alpha = 0.05 */
  /* Halfway between the hypotheses: either answer, about evenly, and the
   * longest tests; far beyond elo1: H1 at once, every time. */
  double mid = h1_rate(&t, 20, 0.3, 400, 3, &lenmid);
  assert_true(mid > 0.3 && mid < 0.7);
  assert_true(lenmid > len1 && lenmid > len0);
  double far = h1_rate(&t, 200, 0.3, 200, 4, &lenfar);
  assert_true(far == 1.0);
  assert_true(lenfar < len1 / 4);
  /* Looser error rates: more errors, shorter tests. */
  pb_sprt_t loose;
  assert_int_equal(pb_sprt_init(&loose, 0, 40, 0.2, 0.2, NULL), 0);
  double llen1, llen0;
  double l1 = h1_rate(&loose, 40, 0.3, 400, 5, &llen1);
  double l0 = h1_rate(&loose, 0, 0.3, 400, 6, &llen0);
  printf("sprt 0,40,0.2,0.2: H1 %.3f at 40, %.3f at 0\n", l1, l0);
  assert_true(l1 >= 0.72 && l1 <= 0.92);
  assert_true(l0 >= 0.08 && l0 <= 0.28);
  assert_true(llen1 < len1 && llen0 < len0);
  /* Unequal rates: alpha 0.01, beta 0.1. */
  pb_sprt_t skew;
  assert_int_equal(pb_sprt_init(&skew, 0, 40, 0.01, 0.1, NULL), 0);
  double slen;
  double s1 = h1_rate(&skew, 40, 0.3, 400, 7, &slen);
  double s0 = h1_rate(&skew, 0, 0.3, 400, 8, &slen);
  assert_true(s1 >= 0.84 && s1 <= 0.96); /* 1 - beta = 0.9 */
  assert_true(s0 <= 0.03);               /* alpha = 0.01 */
  /* Without draws (a different trinomial) the rates still hold. */
  double n1 = h1_rate(&t, 40, 0.0, 400, 9, &slen);
  double n0 = h1_rate(&t, 0, 0.0, 400, 10, &slen);
  assert_true(n1 >= 0.91 && n0 <= 0.09);
}

/* The pentanomial test: the five-outcome MLE keeps its constraints, the
 * three-outcome one is the trinomial's, and the LLRs match values
 * computed apart (a bisection in Python on the same equations, 300
 * halvings: 0.567197281506 for [0, 2, 5, 8, 5] and 0,10; 0.068877048289
 * for [3, 20, 50, 25, 2] and 0,5; 2.632006437373 for [30, 200, 500,
 * 250, 20] and -5,5; the trinomial 2.005543991302 for L=10 D=30 W=60
 * and 0,10). */
static void test_penta(void **state) {
  (void)state;
  static const double a5[5] = {0, 0.25, 0.5, 0.75, 1};
  const double f[5] = {0.1, 0.2, 0.3, 0.25, 0.15};
  double p[5], sum = 0, mean = 0;
  pb_sprt_mle_n(5, a5, f, 0.6, p);
  for (int j = 0; j < 5; j++) {
    assert_true(p[j] > 0);
    sum += p[j];
    mean += p[j] * a5[j];
  }
  NEAR(sum, 1, 1e-12);
  NEAR(mean, 0.6, 1e-12);
  static const double a3[3] = {0, 0.5, 1};
  const double f3[3] = {0.2, 0.3, 0.5};
  double q[3], r[3];
  pb_sprt_mle_n(3, a3, f3, 0.55, q);
  pb_sprt_mle(f3, 0.55, r);
  for (int j = 0; j < 3; j++) NEAR(q[j], r[j], 1e-15);

  pb_sprt_t t;
  pb_err_t err;
  assert_int_equal(pb_sprt_init(&t, 0, 10, 0.05, 0.05, &err), 0);
  const int p1[5] = {0, 2, 5, 8, 5};
  NEAR(pb_sprt_llr_penta(&t, p1), 0.567197281506, 1e-9);
  NEAR(pb_sprt_llr(&t, 60, 30, 10), 2.005543991302, 1e-9);
  assert_int_equal(pb_sprt_init(&t, 0, 5, 0.05, 0.05, &err), 0);
  const int p2[5] = {3, 20, 50, 25, 2};
  NEAR(pb_sprt_llr_penta(&t, p2), 0.068877048289, 1e-9);
  assert_int_equal(pb_sprt_init(&t, -5, 5, 0.05, 0.05, &err), 0);
  const int p3[5] = {30, 200, 500, 250, 20};
  double llr = 0;
  assert_int_equal(pb_sprt_check_penta(&t, p3, &llr), PB_SPRT_CONTINUE);
  NEAR(llr, 2.632006437373, 1e-9);
  /* Ten times the pairs: past the upper bound, H1. */
  const int p4[5] = {300, 2000, 5000, 2500, 200};
  assert_int_equal(pb_sprt_check_penta(&t, p4, &llr), PB_SPRT_H1);
  /* The normal approximation: N (s1 - s0)(2 m - s0 - s1) / (2 v), v the
   * variance of a pair's score per game. */
  double n = 10000, m = 0, v = 0;
  for (int j = 0; j < 5; j++) m += p4[j] * a5[j] / n;
  for (int j = 0; j < 5; j++) v += p4[j] * (a5[j] - m) * (a5[j] - m) / n;
  double approx = n * (t.s1 - t.s0) * (2 * m - t.s0 - t.s1) / (2 * v);
  assert_true(fabs(llr - approx) < 0.02 * fabs(approx));
  /* No pairs, a negative count: 0. */
  const int none[5] = {0, 0, 0, 0, 0}, neg[5] = {1, -1, 0, 0, 0};
  NEAR(pb_sprt_llr_penta(&t, none), 0, 1e-15);
  NEAR(pb_sprt_llr_penta(&t, neg), 0, 1e-15);
}

static void test_verdict(void **state) {
  (void)state;
  assert_string_equal(pb_sprt_verdict(PB_SPRT_H0), "H0 accepted");
  assert_string_equal(pb_sprt_verdict(PB_SPRT_H1), "H1 accepted");
  assert_string_equal(pb_sprt_verdict(PB_SPRT_CONTINUE), "undecided");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_bounds),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_mle),
      cmocka_unit_test(test_llr_normal_approx),
      cmocka_unit_test(test_stopping_against_simulation),
      cmocka_unit_test(test_penta),
      cmocka_unit_test(test_verdict),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
