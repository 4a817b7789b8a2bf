/* test_elo.c - Elo differences and their intervals; maximum-likelihood fits
 * checked on synthetic results drawn from known ratings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "elo.h"
#include "err.h"
#include "rng.h"

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
  /* The open side is open (issue 48: the estimate was its own hi). */
  assert_true(isinf(hi) && hi > 0);
  assert_true(lo < e - 50);
  assert_true(isfinite(lo));
  /* s = 799/800, se = sqrt(s (1 - s) / 400). */
  double s = 799.0 / 800, se = sqrt(s * (1 - s) / 400);
  NEAR(lo, pb_elo_from_score(s - 1.96 * se), 1e-9);
  assert_int_equal(pb_elo_diff(0, 0, 7, &e, &lo, &hi), 0);
  assert_true(e < -400 && isfinite(e));
  assert_true(isinf(lo) && lo < 0);
  assert_true(hi > e && isfinite(hi));
  assert_int_equal(pb_elo_diff(1, 0, 0, &e, &lo, &hi), 0);
  assert_true(isfinite(e) && lo < e && e < hi);
  /* W=2 D=0 L=0 (issue 48: +191 [-191, +191]): s = 3/4, se =
   * sqrt(3/16 / 2), lo = the Elo of 3/4 - 1.96 se = -301.5, hi open. */
  assert_int_equal(pb_elo_diff(2, 0, 0, &e, &lo, &hi), 0);
  NEAR(e, 400 * log10(3.0), 1e-9);
  NEAR(lo, pb_elo_from_score(0.75 - 1.96 * sqrt(0.1875 / 2)), 1e-9);
  assert_true(lo < -300 && lo > -302);
  assert_true(isinf(hi) && hi > 0);
  /* W=2 D=1 L=0: the clamped score 5/6 is the raw one; hi open too. */
  assert_int_equal(pb_elo_diff(2, 1, 0, &e, &lo, &hi), 0);
  assert_true(lo < e && e < hi);
  char buf[16];
  assert_string_equal(pb_elo_format(buf, sizeof buf, hi, 0, 1), "+inf");
  assert_string_equal(pb_elo_format(buf, sizeof buf, -hi, 0, 1), "-inf");
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

/* The paper's anchors: random, lookahead:1..3. */
static const double ANCHORS[4] = {1000, 1183, 1501, 1603};

/* One game between ratings ra and rb: +1 / 0 / -1 for a. With draw_rate
 * > 0 some games are drawn, keeping a's expected score at the model's p
 * (a draw replaces half a win and half a loss). */
static int play(pb_rng_t *rng, double ra, double rb, double draw_rate) {
  double p = pb_elo_expected(ra - rb);
  double d = draw_rate * 2.0 * (p < 1 - p ? p : 1 - p);
  double u = pb_rng_uniform(rng);
  if (u < p - d / 2) return 1;
  if (u < p + d / 2) return 0;
  return -1;
}

static void synth(pb_rng_t *rng, double truth, int games, double draw_rate,
                  pb_elo_record_t *recs) {
  for (int j = 0; j < 4; j++) {
    recs[j].opp_rating = ANCHORS[j];
    recs[j].wins = recs[j].draws = recs[j].losses = 0;
    for (int k = 0; k < games; k++) {
      int o = play(rng, truth, ANCHORS[j], draw_rate);
      if (o > 0)
        recs[j].wins++;
      else if (o == 0)
        recs[j].draws++;
      else
        recs[j].losses++;
    }
  }
}

/* The fit solves the score equation and its interval ends lie where the
 * log-likelihood has dropped by half the chi-square quantile. */
static void test_fit_one_exact(void **state) {
  (void)state;
  pb_elo_record_t r[2] = {{1000, 30, 10, 20}, {1500, 5, 10, 45}};
  pb_elo_fit_t f;
  pb_err_t err;
  assert_int_equal(pb_elo_fit_one(r, 2, &f, &err), 0);
  double e = 60 * pb_elo_expected(f.rating - 1000) +
             60 * pb_elo_expected(f.rating - 1500);
  NEAR(e, 35 + 10, 1e-6);
  assert_int_equal(f.games, 120);
  NEAR(f.score, 45, 1e-12);
  assert_int_equal(f.flags, 0);
  double top = pb_elo_loglik(r, 2, f.rating);
  NEAR(pb_elo_loglik(r, 2, f.lo), top - PB_ELO_HALF_CHI2_95, 1e-6);
  NEAR(pb_elo_loglik(r, 2, f.hi), top - PB_ELO_HALF_CHI2_95, 1e-6);
  assert_true(pb_elo_loglik(r, 2, f.rating + 1) < top);
  assert_true(pb_elo_loglik(r, 2, f.rating - 1) < top);
  assert_true(f.lo < f.rating && f.rating < f.hi);
  /* With this many games the likelihood is nearly quadratic: the profile
   * interval is close to the Wald one. */
  NEAR(f.hi - f.lo, 2 * PB_ELO_Z95 * f.se, 0.1 * (f.hi - f.lo));
  NEAR(f.se,
       1 / sqrt(60 * pb_elo_info(f.rating - 1000) +
                60 * pb_elo_info(f.rating - 1500)),
       1e-9);

  /* One opponent: the MLE is the pairwise difference. */
  pb_elo_record_t one = {1200, 60, 30, 10};
  assert_int_equal(pb_elo_fit_one(&one, 1, &f, &err), 0);
  NEAR(f.rating, 1200 + pb_elo_from_score(0.75), 1e-6);
  /* An even score against symmetric opponents sits in the middle. */
  pb_elo_record_t sym[2] = {{1000, 10, 0, 10}, {1400, 10, 0, 10}};
  assert_int_equal(pb_elo_fit_one(sym, 2, &f, &err), 0);
  NEAR(f.rating, 1200, 1e-6);
  NEAR(f.rating - f.lo, f.hi - f.rating, 1e-4);
  /* Records with no games are ignored. */
  pb_elo_record_t withzero[3] = {
      {1000, 10, 0, 10}, {0, 0, 0, 0}, {1400, 10, 0, 10}};
  pb_elo_fit_t f2;
  assert_int_equal(pb_elo_fit_one(withzero, 3, &f2, &err), 0);
  NEAR(f2.rating, f.rating, 1e-9);
}

/* Synthetic results from known ratings: the 95% interval holds the truth
 * in about 95% of trials (>= 85 of 100 required), with and without
 * draws, and the estimates are unbiased to within a few points. */
static void test_fit_one_recovers(void **state) {
  (void)state;
  const double truths[3] = {1100, 1350, 1700};
  for (int d = 0; d < 2; d++)
    for (int t = 0; t < 3; t++) {
      pb_rng_t rng;
      pb_rng_seed(&rng, 12345 + t, (uint64_t)d);
      int inside = 0, inside_wald = 0;
      double sum = 0;
      for (int trial = 0; trial < 100; trial++) {
        pb_elo_record_t r[4];
        synth(&rng, truths[t], 50, d ? 0.3 : 0.0, r);
        pb_elo_fit_t f;
        pb_err_t err;
        assert_int_equal(pb_elo_fit_one(r, 4, &f, &err), 0);
        assert_true(f.lo < f.rating && f.rating < f.hi);
        inside += f.lo <= truths[t] && truths[t] <= f.hi;
        inside_wald += fabs(f.rating - truths[t]) <= PB_ELO_Z95 * f.se;
        sum += f.rating;
      }
      if (inside < 85 || inside_wald < 85)
        fail_msg("truth %.0f draws %d: %d/100 profile, %d/100 Wald inside",
                 truths[t], d, inside, inside_wald);
      /* Mean of 100 estimates, each with se ~ 30-50: within 20 points. */
      NEAR(sum / 100, truths[t], 20);
    }
}

/* The interval narrows like 1/sqrt(games). */
static void test_fit_one_more_games(void **state) {
  (void)state;
  pb_elo_record_t a[1] = {{1000, 30, 0, 10}}, b[1] = {{1000, 120, 0, 40}};
  pb_elo_fit_t fa, fb;
  assert_int_equal(pb_elo_fit_one(a, 1, &fa, NULL), 0);
  assert_int_equal(pb_elo_fit_one(b, 1, &fb, NULL), 0);
  NEAR(fa.rating, fb.rating, 1e-6);
  NEAR((fb.hi - fb.lo) / (fa.hi - fa.lo), 0.5, 0.05);
  NEAR(fb.se / fa.se, 0.5, 1e-6);
}

/* All wins or all losses: finite, flagged, on the right side. */
static void test_fit_one_perfect(void **state) {
  (void)state;
  pb_elo_fit_t f;
  pb_err_t err;
  pb_elo_record_t w[4] = {
      {1000, 50, 0, 0}, {1183, 50, 0, 0}, {1501, 50, 0, 0}, {1603, 50, 0, 0}};
  assert_int_equal(pb_elo_fit_one(w, 4, &f, &err), 0);
  assert_true(isfinite(f.rating) && isfinite(f.lo) && isfinite(f.hi));
  assert_int_equal(f.flags, PB_ELO_ALL_WINS | PB_ELO_ADJUSTED);
  assert_true(f.rating > 1603 && f.lo > 1400 && f.lo < f.rating &&
              f.rating < f.hi);
  NEAR(f.score, 200, 1e-12);
  pb_elo_record_t l[2] = {{1000, 0, 0, 7}, {1183, 0, 0, 3}};
  assert_int_equal(pb_elo_fit_one(l, 2, &f, &err), 0);
  assert_int_equal(f.flags, PB_ELO_ALL_LOSSES | PB_ELO_ADJUSTED);
  assert_true(isfinite(f.rating) && f.rating < 1000 && f.lo < f.rating &&
              f.hi > f.rating && f.hi < 1183);
  /* One win among many losses is not flagged. */
  pb_elo_record_t one[1] = {{1000, 1, 0, 99}};
  assert_int_equal(pb_elo_fit_one(one, 1, &f, &err), 0);
  assert_int_equal(f.flags, 0);
  NEAR(f.rating, 1000 + pb_elo_from_score(0.01), 1e-6);
  /* All draws is a perfectly ordinary result. */
  pb_elo_record_t dr[1] = {{1300, 0, 40, 0}};
  assert_int_equal(pb_elo_fit_one(dr, 1, &f, &err), 0);
  assert_int_equal(f.flags, 0);
  NEAR(f.rating, 1300, 1e-6);
}

static void test_fit_one_bad(void **state) {
  (void)state;
  pb_elo_fit_t f;
  pb_err_t err;
  pb_elo_record_t r[2] = {{1000, 1, 1, 1}, {1100, 1, 1, 1}};
  assert_int_equal(pb_elo_fit_one(NULL, 2, &f, &err), PB_EINVAL);
  assert_int_equal(pb_elo_fit_one(r, -1, &f, &err), PB_EINVAL);
  assert_int_equal(pb_elo_fit_one(r, 2, NULL, &err), PB_EINVAL);
  assert_int_equal(pb_elo_fit_one(r, 0, &f, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "no games"));
  pb_elo_record_t z[1] = {{1000, 0, 0, 0}};
  assert_int_equal(pb_elo_fit_one(z, 1, &f, &err), PB_EINVAL);
  r[1].draws = -1;
  assert_int_equal(pb_elo_fit_one(r, 2, &f, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "record 1"));
  r[1].draws = 1;
  r[0].opp_rating = NAN;
  assert_int_equal(pb_elo_fit_one(r, 2, &f, &err), PB_EINVAL);
  r[0].opp_rating = INFINITY;
  assert_int_equal(pb_elo_fit_one(r, 2, &f, &err), PB_EINVAL);
  NEAR(f.rating, 0, 1e-12);
}

/* Round robin among four players of known ratings, one fixed: every
 * rating is recovered within its interval in >= 85 of 100 trials. */
static void test_fit_joint_recovers(void **state) {
  (void)state;
  const double truth[4] = {1000, 1183, 1501, 1603};
  pb_rng_t rng;
  pb_rng_seed(&rng, 777, 0);
  int inside[4] = {0};
  for (int trial = 0; trial < 100; trial++) {
    pb_elo_pair_t pr[6];
    int k = 0;
    for (int a = 0; a < 4; a++)
      for (int b = a + 1; b < 4; b++) {
        pb_elo_pair_t q = {a, b, 0, 0, 0};
        for (int g = 0; g < 100; g++) {
          int o = play(&rng, truth[a], truth[b], 0.2);
          if (o > 0)
            q.a_wins++;
          else if (o == 0)
            q.draws++;
          else
            q.a_losses++;
        }
        pr[k++] = q;
      }
    pb_elo_fit_t f[4];
    pb_err_t err;
    int rc = pb_elo_fit_joint(4, pr, 6, 0, 1000, f, &err);
    if (rc != 0) fail_msg("trial %d: %s", trial, err.msg);
    NEAR(f[0].rating, 1000, 1e-12);
    NEAR(f[0].se, 0, 1e-12);
    for (int i = 0; i < 4; i++) {
      assert_int_equal(f[i].games, 300);
      inside[i] += f[i].lo <= truth[i] && truth[i] <= f[i].hi;
    }
  }
  for (int i = 1; i < 4; i++)
    if (inside[i] < 85) fail_msg("player %d: %d/100 inside", i, inside[i]);
}

/* The joint fit with one free player is the one-player fit. */
static void test_fit_joint_matches_one(void **state) {
  (void)state;
  /* Players: 0 = fixed 1000, 1 = free; then a fit of player 1 against a
   * fixed 1000. */
  pb_elo_pair_t pr[2] = {{1, 0, 30, 10, 20}, {0, 1, 5, 5, 10}};
  pb_elo_fit_t f[2], g;
  assert_int_equal(pb_elo_fit_joint(2, pr, 2, 0, 1000, f, NULL), 0);
  pb_elo_record_t r = {1000, 40, 15, 25};
  assert_int_equal(pb_elo_fit_one(&r, 1, &g, NULL), 0);
  NEAR(f[1].rating, g.rating, 1e-5);
  NEAR(f[1].se, g.se, 1e-6);
  assert_int_equal(f[1].games, 80);
  NEAR(f[1].score, 47.5, 1e-12);
  /* Anchoring another player shifts everything by the same amount. */
  pb_elo_fit_t h[2];
  assert_int_equal(pb_elo_fit_joint(2, pr, 2, 1, 1500, h, NULL), 0);
  NEAR(h[1].rating - h[0].rating, f[1].rating - f[0].rating, 1e-5);
  NEAR(h[0].se, f[1].se, 1e-6);
}

/* A chain a < b < c where c beat b in every game: no finite maximum, so
 * the one-sided pair is adjusted and flagged. */
static void test_fit_joint_one_sided(void **state) {
  (void)state;
  pb_elo_pair_t pr[3] = {
      {0, 1, 20, 10, 20}, {1, 2, 0, 0, 30}, {0, 2, 0, 0, 10}};
  pb_elo_fit_t f[3];
  pb_err_t err;
  assert_int_equal(pb_elo_fit_joint(3, pr, 3, 0, 1000, f, &err), 0);
  assert_true(f[2].flags & PB_ELO_ALL_WINS);
  assert_true(f[2].flags & PB_ELO_ADJUSTED);
  assert_true(f[1].flags & PB_ELO_ADJUSTED);
  assert_false(f[1].flags & PB_ELO_ALL_WINS);
  for (int i = 0; i < 3; i++)
    assert_true(isfinite(f[i].rating) && isfinite(f[i].lo) &&
                isfinite(f[i].hi));
  assert_true(f[2].rating > f[1].rating + 300);
  NEAR(f[1].rating, 1000, 60);
}

static void test_fit_joint_bad(void **state) {
  (void)state;
  pb_elo_fit_t f[3];
  pb_err_t err;
  pb_elo_pair_t ok[1] = {{0, 1, 1, 1, 1}};
  /* Player 2 never played. */
  assert_int_equal(pb_elo_fit_joint(3, ok, 1, 0, 1000, f, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "player 2"));
  pb_elo_pair_t self[1] = {{1, 1, 1, 1, 1}};
  assert_int_equal(pb_elo_fit_joint(2, self, 1, 0, 1000, f, &err), PB_EINVAL);
  pb_elo_pair_t out[1] = {{0, 5, 1, 1, 1}};
  assert_int_equal(pb_elo_fit_joint(2, out, 1, 0, 1000, f, &err), PB_EINVAL);
  pb_elo_pair_t neg[1] = {{0, 1, -1, 1, 1}};
  assert_int_equal(pb_elo_fit_joint(2, neg, 1, 0, 1000, f, &err), PB_EINVAL);
  assert_int_equal(pb_elo_fit_joint(2, ok, 1, 2, 1000, f, &err), PB_EINVAL);
  assert_int_equal(pb_elo_fit_joint(2, ok, 1, 0, NAN, f, &err), PB_EINVAL);
  assert_int_equal(pb_elo_fit_joint(0, ok, 1, 0, 1000, f, &err), PB_EINVAL);
  assert_int_equal(pb_elo_fit_joint(2, NULL, 1, 0, 1000, f, &err), PB_EINVAL);
  /* A single player is the anchor. */
  assert_int_equal(pb_elo_fit_joint(1, NULL, 0, 0, 1234, f, &err), 0);
  NEAR(f[0].rating, 1234, 1e-12);
}

/* No "-0": an even score is +0, and the format never prints a negative
 * zero (issue 39: "elo=-0 [-0, -0]" after one game, "-0" at every 50%). */
static void test_no_negative_zero(void **state) {
  (void)state;
  assert_false(signbit(pb_elo_from_score(0.5)));
  double e, lo, hi;
  assert_int_equal(pb_elo_diff(1, 0, 0, &e, &lo, &hi), 0); /* one game */
  assert_false(signbit(e));
  assert_true(isinf(lo) && isinf(hi)); /* one game rules nothing out */
  assert_int_equal(pb_elo_diff(20, 10, 20, &e, &lo, &hi), 0); /* 50% */
  assert_false(signbit(e));
  char buf[32];
  assert_string_equal(pb_elo_format(buf, sizeof buf, e, 0, 1), "+0");
  assert_string_equal(pb_elo_format(buf, sizeof buf, -0.0, 0, 1), "+0");
  assert_string_equal(pb_elo_format(buf, sizeof buf, -0.4, 0, 1), "+0");
  assert_string_equal(pb_elo_format(buf, sizeof buf, -0.04, 1, 0), "0.0");
  assert_string_equal(pb_elo_format(buf, sizeof buf, -0.6, 0, 1), "-1");
  assert_string_equal(pb_elo_format(buf, sizeof buf, 12.4, 0, 1), "+12");
  assert_string_equal(pb_elo_format(buf, sizeof buf, -3.25, 1, 0), "-3.2");
  assert_string_equal(pb_elo_format(buf, sizeof buf, 7.0, 0, 0), "7");
  /* Truncated to the buffer, still a string. */
  char small[3];
  assert_ptr_equal(pb_elo_format(small, sizeof small, -1234.0, 0, 1), small);
  assert_string_equal(small, "-1");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expected_and_inverse),
      cmocka_unit_test(test_diff_values),
      cmocka_unit_test(test_clamping),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_fit_one_exact),
      cmocka_unit_test(test_fit_one_recovers),
      cmocka_unit_test(test_fit_one_more_games),
      cmocka_unit_test(test_fit_one_perfect),
      cmocka_unit_test(test_fit_one_bad),
      cmocka_unit_test(test_fit_joint_recovers),
      cmocka_unit_test(test_fit_joint_matches_one),
      cmocka_unit_test(test_fit_joint_one_sided),
      cmocka_unit_test(test_fit_joint_bad),
      cmocka_unit_test(test_no_negative_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
