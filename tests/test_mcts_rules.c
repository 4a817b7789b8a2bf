/* test_mcts_rules.c - the root rules of common/search/mcts_rules.h against hand
 * computations and a literal reference: sequential halving's schedule is
 * mctx's get_sequence_of_considered_visits (built list by list, as mctx
 * does) for every m <= 20 and n <= 300, and a hand-written case; sigma of
 * the completed Q and the improved policy on a three-child node worked by
 * hand; the forced visit count; policy target pruning on a case where PUCT
 * stops the subtraction and one where a child is left with 1 visit and is
 * dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "mcts_rules.h"

/* mctx's get_sequence_of_considered_visits, literally: out[0..n). */
static void reference_sequence(int m, int n, int *out) {
  if (m <= 1) {
    for (int k = 0; k < n; k++) out[k] = k;
    return;
  }
  int log2max = (int)ceil(log2((double)m));
  int *visits = calloc((size_t)m, sizeof *visits), len = 0, c = m;
  while (len < n) {
    int x = (int)((double)n / (log2max * c));
    if (x < 1) x = 1;
    for (int r = 0; r < x; r++) {
      for (int i = 0; i < c; i++)
        if (len < n) out[len++] = visits[i];
      for (int i = 0; i < c; i++) visits[i]++;
    }
    c = c / 2 > 2 ? c / 2 : 2;
  }
  free(visits);
}

static void test_halving_schedule(void **state) {
  (void)state;
  /* By hand: m = 4, n = 8: log2max = 2; 4 actions get floor(8 / 8) = 1
   * visit each (0 0 0 0), then 2 get floor(8 / 4) = 2 (1 1 2 2). */
  const int want[8] = {0, 0, 0, 0, 1, 1, 2, 2};
  for (int k = 0; k < 8; k++)
    assert_int_equal(pb_mcts_halving_visit(4, 8, k), want[k]);
  /* m = 16, n = 4: the first 4 of the 16 visits at 0. */
  for (int k = 0; k < 4; k++)
    assert_int_equal(pb_mcts_halving_visit(16, 4, k), 0);
  static int ref[300];
  for (int m = 1; m <= 20; m++)
    for (int n = 1; n <= 300; n++) {
      reference_sequence(m, n, ref);
      for (int k = 0; k < n; k++)
        if (pb_mcts_halving_visit(m, n, k) != ref[k])
          fail_msg("m %d n %d k %d: %d, mctx %d", m, n, k,
                   pb_mcts_halving_visit(m, n, k), ref[k]);
    }
}

/* Three children, priors 0.5, 0.3, 0.2, visits 2, 1, 0, Q 0.5 and -0.5
 * (the third unvisited), the node's network value 0.1:
 *   v_mix = (0.1 + 3 * (0.5 * 0.5 + 0.3 * -0.5) / 0.8) / 4 = 0.11875,
 *   completed Q = (0.5, -0.5, 0.11875), in [0, 1]: (0.75, 0.25, 0.559375),
 *   sigma = (c_visit + 2) * c_scale * that = 2 * that with c_visit 2,
 *   c_scale 0.5: (1.5, 0.5, 1.11875);
 *   improved policy ~ p * e^sigma = (0.5 e^1.5, 0.3 e^0.5, 0.2 e^1.11875)
 *   = (2.240845, 0.494616, 0.612205) / 3.347666. */
static void test_improved_policy_by_hand(void **state) {
  (void)state;
  const float prior[3] = {0.5f, 0.3f, 0.2f};
  const int visits[3] = {2, 1, 0};
  const double q[3] = {0.5, -0.5, 123.0 /* unvisited: not read */};
  double sigma[3], lg[3], pi[3];
  pb_mcts_gumbel_sigma(3, prior, visits, q, 0.1, 2.0, 0.5, sigma);
  assert_true(fabs(sigma[0] - 1.5) < 1e-9);
  assert_true(fabs(sigma[1] - 0.5) < 1e-9);
  assert_true(fabs(sigma[2] - 1.11875) < 1e-6);
  for (int c = 0; c < 3; c++) lg[c] = log((double)prior[c]);
  pb_mcts_improved_policy(3, lg, sigma, pi);
  const double w[3] = {0.5 * exp(1.5), 0.3 * exp(0.5), 0.2 * exp(1.11875)};
  const double sum = w[0] + w[1] + w[2];
  for (int c = 0; c < 3; c++) assert_true(fabs(pi[c] - w[c] / sum) < 1e-6);
  /* the same to 4 places: 0.6694, 0.1477, 0.1829 */
  assert_true(fabs(pi[0] - 0.6694) < 1e-4 && fabs(pi[1] - 0.1477) < 1e-4 &&
              fabs(pi[2] - 0.1829) < 1e-4);
  /* The paper's constants: scale (50 + 2) * 1. */
  pb_mcts_gumbel_sigma(3, prior, visits, q, 0.1, PB_MCTS_GUMBEL_C_VISIT,
                       PB_MCTS_GUMBEL_C_SCALE, sigma);
  assert_true(fabs(sigma[0] - 39.0) < 1e-9 && fabs(sigma[1] - 13.0) < 1e-9);
  assert_true(fabs(sigma[2] - 29.0875) < 1e-6);
  /* No visits: every completed Q is the node's value, sigma is the same
   * for all, and the improved policy is the prior. A tiny difference of Q
   * stays tiny (no stretching to the full scale). */
  const int none[3] = {0, 0, 0};
  pb_mcts_gumbel_sigma(3, prior, none, q, -0.4, 50, 1, sigma);
  for (int c = 0; c < 3; c++) assert_true(fabs(sigma[c] - 15.0) < 1e-9);
  pb_mcts_improved_policy(3, lg, sigma, pi);
  for (int c = 0; c < 3; c++) assert_true(fabs(pi[c] - prior[c]) < 1e-6);
  const int two[3] = {1, 1, 0};
  const double close[3] = {0.0, 1e-4, 0.0};
  pb_mcts_gumbel_sigma(3, prior, two, close, 0.0, 50, 1, sigma);
  assert_true(fabs(sigma[1] - sigma[0] - 51 * 0.5e-4) < 1e-9);
}

/* sqrt(2 * P * N): P 0.3 and 20 visits give sqrt(12). */
static void test_forced_count(void **state) {
  (void)state;
  assert_true(fabs(pb_mcts_forced_visits(0.3, 20) - sqrt(12.0)) < 1e-12);
  assert_true(pb_mcts_forced_visits(0.3, 0) == 0.0);
  assert_true(pb_mcts_forced_visits(0.0, 100) == 0.0);
}

/* Priors 0.55, 0.3, 0.15, visits 10, 6, 3 (T = 19, sqrt 4.358899), Q 0.2,
 * 0.1, -0.3, c_puct 1. c* = child 0: PUCT* = 0.2 + 0.55 * 4.358899 / 11 =
 * 0.417945.
 * Child 1: forced floor(sqrt(2 * 0.3 * 19) = 3.38) = 3; at 5 visits its
 * PUCT is 0.1 + 1.307670 / 6 = 0.317945, at 4 0.361534, at 3 0.426917 >=
 * 0.417945: it keeps 4 (2 taken off, not 3).
 * Child 2: forced floor(sqrt(5.7) = 2.39) = 2; at 2 visits -0.3 + 0.653835
 * / 3 = -0.082055, at 1 0.026917, both below: left with 1, dropped.
 * Target (10, 4, 0) / 14. */
static void test_prune_by_hand(void **state) {
  (void)state;
  const float prior[3] = {0.55f, 0.3f, 0.15f};
  const int visits[3] = {10, 6, 3};
  const double q[3] = {0.2, 0.1, -0.3};
  double out[3];
  pb_mcts_prune_forced(3, prior, visits, q, 1.0, out);
  assert_true(out[0] == 10.0 && out[1] == 4.0 && out[2] == 0.0);
  /* c_puct 3: PUCT* = 0.2 + 3 * 0.55 * 4.358899 / 11 = 0.853835; child 1
   * at 5 visits 0.1 + 3.923009 / 6 = 0.753835, at 4 0.884602 >= PUCT*: it
   * keeps 5. */
  pb_mcts_prune_forced(3, prior, visits, q, 3.0, out);
  assert_true(out[0] == 10.0 && out[1] == 5.0);
  /* Ties for the most visits: the lowest index is c* (PUCT* = 0.55 *
   * sqrt(14) / 8 = 0.257239); child 1 (forced floor(sqrt(8.4)) = 2) at 6
   * visits 0.3 * 3.741657 / 7 = 0.160357, at 5 0.187083: keeps 5; an
   * unvisited child stays 0. */
  const int tie[3] = {7, 7, 0};
  const double qt[3] = {0.0, 0.0, 0.0};
  pb_mcts_prune_forced(3, prior, tie, qt, 1.0, out);
  assert_true(out[0] == 7.0 && out[1] == 5.0 && out[2] == 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_halving_schedule),
      cmocka_unit_test(test_improved_policy_by_hand),
      cmocka_unit_test(test_forced_count),
      cmocka_unit_test(test_prune_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
