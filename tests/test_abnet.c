/* test_abnet.c - alpha-beta over V and Q (common/search/abnet.h) against a
 * brute-force depth-d negamax over the same V (bit for bit, whatever the
 * budget stopped at, with the table, PVS, batching and Q ordering in every
 * combination), against exact values (the solvers) when the budget covers
 * the whole tree, and with exact value functions at small budgets; its
 * principal variation replayed to the value it claims; errors, budgets and
 * determinism. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abnet.h"
#include "agent_fixtures.h"
#include "evalfn.h"
#include "fn_fixtures.h"
#include "game.h"
#include "rng.h"
#include "solver.h"

/* ---- the brute-force reference (fn_negamax in fn_fixtures.h) ------------- */

/* The reference value of move a in s at depth d. */
static float move_value(fn_t *f, const pb_state_t *s, int a, int d) {
  pb_state_t c = *s;
  int done = 0;
  float r = f->g->step(&c, a, &done);
  return done ? r : d == 1 ? -fn_clampv(fn_v(f, &c)) : -fn_negamax(f, &c, d - 1);
}

static pb_abnet_t *mk(const pb_game_t *g, uint64_t nodes, int max_depth,
                      int q_plies, int batch) {
  pb_abnet_opts_t o;
  pb_abnet_defaults(&o);
  o.nodes = nodes;
  o.max_depth = max_depth;
  o.q_plies = q_plies;
  o.batch = batch;
  pb_err_t err;
  pb_abnet_t *ab = pb_abnet_new(g, &o, &err);
  if (ab == NULL) fail_msg("%s", err.msg);
  return ab;
}

/* Positions of g after 0..max_plies random moves, at least min_plies. */
static pb_state_t some_position(const pb_game_t *g, pb_rng_t *rng,
                                int min_plies, int max_plies) {
  for (;;) {
    pb_state_t s = random_position(g, rng, max_plies);
    if (g->ply(&s) >= min_plies) return s;
  }
}

/* The principal variation of r from s: it starts with the move played,
 * every move is legal, and it runs r.depth moves (or to a move that ends
 * the game) to a position whose V (or result) is the root value. */
static void check_pv(fn_t *f, const pb_state_t *s, const pb_abnet_result_t *r) {
  const pb_game_t *g = f->g;
  assert_true(r->pv_len >= 1 && r->pv_len <= PB_ABNET_MAX_DEPTH);
  assert_int_equal(r->pv[0], r->move);
  if (r->depth == 0) {
    assert_int_equal(r->pv_len, 1);
    return;
  }
  pb_state_t c = *s;
  int done = 0;
  float end = 0.0f;
  for (int i = 0; i < r->pv_len; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int n = g->legal(&c, legal), ok = 0;
    for (int k = 0; k < n; k++) ok |= legal[k] == r->pv[i];
    if (!ok || done) fail_msg("pv move %d (%d) is not legal", i, r->pv[i]);
    float rew = g->step(&c, r->pv[i], &done);
    /* The end's worth for the side that made the last move. */
    if (done) end = rew;
  }
  if (!done) {
    if (r->pv_len != r->depth)
      fail_msg("pv of %d moves at depth %d", r->pv_len, r->depth);
    end = -fn_clampv(fn_v(f, &c));
  }
  /* The last move was the root side's when the line is odd. */
  float want = r->pv_len % 2 ? end : -end;
  if (want != r->value)
    fail_msg("pv of %d moves ends at %.6f for the root, value %.6f", r->pv_len,
             want, r->value);
}

/* ---- tests ---------------------------------------------------------------- */

/* A depth limit with an ample budget: the root value is the reference's,
 * bit for bit, and so is the value of the move played, in every
 * combination of batch and Q ordering, with noise V (ties or not). */
static void test_fixed_depth_equals_negamax(void **state) {
  (void)state;
  const pb_game_t *games[2] = {T3, C4};
  const int maxd[2] = {5, 4};
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = games[gi];
    for (int t = 0; t < 8; t++) {
      pb_state_t s = some_position(g, &rng, 0, gi == 0 ? 5 : 16);
      fn_t f = {g, t % 2, NULL, 0, 0, 0, 0};
      pb_evalfn_t ev = fn_evfn(&f);
      for (int d = 1; d <= maxd[gi]; d++) {
        float ref = fn_negamax(&f, &s, d);
        for (int combo = 0; combo < 4; combo++) {
          pb_abnet_t *ab = mk(g, 10000000, d, combo & 1 ? 1 : 64, combo >> 1);
          pb_abnet_result_t r;
          pb_err_t err;
          assert_int_equal(pb_abnet_search(ab, &s, &ev, &r, &err), 0);
          assert_true(r.depth >= 1 && r.depth <= d);
          if (r.depth < d) assert_true(r.solved);
          if (r.value != ref || move_value(&f, &s, r.move, d) != ref)
            fail_msg("%s t=%d d=%d combo=%d: value %.6f move %d (%.6f), "
                     "reference %.6f", g->name, t, d, combo, r.value, r.move,
                     move_value(&f, &s, r.move, d), ref);
          assert_true(r.v_evals == f.v_rows && r.q_evals == f.q_rows);
          check_pv(&f, &s, &r);
          f.v_rows = f.q_rows = 0;
          pb_abnet_destroy(&ab);
          assert_null(ab);
        }
      }
    }
  }
}

/* Budgets of evaluations: never exceeded; the depth reached grows with the
 * budget; whatever depth completed, the value is the reference's at that
 * depth; the counters are the callbacks' rows. */
static void test_budgets(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 9, 0);
  const uint64_t budgets[] = {1, 5, 10, 30, 100, 300, 1000, 3000};
  for (int t = 0; t < 6; t++) {
    pb_state_t s = some_position(C4, &rng, 2, 12);
    fn_t f = {C4, 0, NULL, 0, 0, 0, 0};
    pb_evalfn_t ev = fn_evfn(&f);
    for (int batch = 0; batch <= 1; batch++) {
      int last = 0;
      for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
        pb_abnet_t *ab = mk(C4, budgets[b], PB_ABNET_MAX_DEPTH, 64, batch);
        pb_abnet_result_t r;
        pb_err_t err;
        f.v_rows = f.q_rows = 0;
        assert_int_equal(pb_abnet_search(ab, &s, &ev, &r, &err), 0);
        assert_true(r.v_evals + r.q_evals <= budgets[b]);
        assert_true(r.v_evals == f.v_rows && r.q_evals == f.q_rows);
        assert_true(r.depth >= last);
        last = r.depth;
        uint8_t legal[PB_MAX_ACTIONS];
        int n = C4->legal(&s, legal), ok = 0;
        for (int k = 0; k < n; k++) ok |= legal[k] == r.move;
        assert_true(ok);
        check_pv(&f, &s, &r);
        if (r.depth > 0) {
          float ref = fn_negamax(&f, &s, r.depth);
          assert_true(r.value == ref);
          assert_true(move_value(&f, &s, r.move, r.depth) == ref);
        }
        printf("%s%d:%d", b ? " " : batch ? "batch 1: " : "batch 0: ",
               (int)budgets[b], r.depth);
        printf("(%d/%d)", (int)r.v_evals, (int)r.q_evals);
        if (budgets[b] >= 1000) assert_true(r.depth >= 3 || r.solved);
        pb_abnet_destroy(&ab);
      }
      printf("\n");
    }
  }
}

/* A budget that covers the whole tree solves the position, whatever V
 * says: Tic-Tac-Toe from the empty board and from random positions, and
 * Connect Four positions with few empty cells; the value is the solver's
 * and the move keeps it. */
static void test_whole_tree_is_exact(void **state) {
  (void)state;
  pb_err_t err;
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  const pb_game_t *games[2] = {T3, C4};
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = games[gi];
    pb_solver_t *sol = pb_solver_new(g, 16, &err);
    assert_non_null(sol);
    for (int t = 0; t < 12; t++) {
      pb_state_t s;
      if (t == 0 && gi == 0)
        g->reset(&s);
      else
        s = some_position(g, &rng, gi == 0 ? 1 : 31, gi == 0 ? 6 : 34);
      fn_t f = {g, t % 2, NULL, 0, 0, 0, 0};
      pb_evalfn_t ev = fn_evfn(&f);
      pb_abnet_t *ab = mk(g, PB_ABNET_MAX_NODES, PB_ABNET_MAX_DEPTH, 64, t % 3 != 0);
      pb_abnet_result_t r;
      assert_int_equal(pb_abnet_search(ab, &s, &ev, &r, &err), 0);
      pb_solve_value_t sv, mv[PB_MAX_ACTIONS];
      assert_int_equal(pb_solver_solve(sol, &s, 1, &sv, &err), 0);
      assert_int_equal(pb_solver_moves(sol, &s, 1, mv, &err), 0);
      if (!r.solved || r.value != (float)sv.result ||
          mv[r.move].result != sv.result)
        fail_msg("%s t=%d: solved %d value %.3f move %d (%d), exact %d",
                 g->name, t, r.solved, r.value, r.move, mv[r.move].result,
                 sv.result);
      check_pv(&f, &s, &r);
      pb_abnet_destroy(&ab);
    }
    pb_solver_destroy(&sol);
  }
}

/* With exact V and Q, a small budget plays perfectly: depth 1 already
 * sees the exact value of every move. */
static void test_exact_values_small_budget(void **state) {
  (void)state;
  pb_err_t err;
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  const pb_game_t *games[2] = {T3, C4};
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = games[gi];
    fn_t f = {g, 2, pb_solver_new(g, 18, &err), 0, 0, 0, 0};
    assert_non_null(f.sol);
    pb_evalfn_t ev = fn_evfn(&f);
    pb_abnet_t *ab = mk(g, 30, PB_ABNET_MAX_DEPTH, 64, 1);
    for (int t = 0; t < 20; t++) {
      pb_state_t s = some_position(g, &rng, gi == 0 ? 0 : 22, gi == 0 ? 7 : 30);
      pb_abnet_result_t r;
      assert_int_equal(pb_abnet_search(ab, &s, &ev, &r, &err), 0);
      assert_true(r.depth >= 1);
      pb_solve_value_t sv, mv[PB_MAX_ACTIONS];
      assert_int_equal(pb_solver_solve(f.sol, &s, 1, &sv, &err), 0);
      assert_int_equal(pb_solver_moves(f.sol, &s, 1, mv, &err), 0);
      assert_int_equal(mv[r.move].result, sv.result);
      assert_true(r.value == (float)sv.result);
      check_pv(&f, &s, &r);
    }
    pb_abnet_destroy(&ab);
    pb_solver_destroy(&f.sol);
  }
}

/* A search does not depend on the ones before it; a time budget alone
 * gives a legal move; a win at once is played at once. */
static void test_determinism_time_win(void **state) {
  (void)state;
  pb_err_t err;
  fn_t f = {C4, 0, NULL, 0, 0, 0, 0};
  pb_evalfn_t ev = fn_evfn(&f);
  pb_abnet_t *ab = mk(C4, 500, PB_ABNET_MAX_DEPTH, 64, 1);
  pb_state_t a = pos(C4, "4453"), b = pos(C4, "3344");
  pb_abnet_result_t r1, r2, r3;
  assert_int_equal(pb_abnet_search(ab, &a, &ev, &r1, &err), 0);
  assert_int_equal(pb_abnet_search(ab, &b, &ev, &r2, &err), 0);
  assert_int_equal(pb_abnet_search(ab, &a, &ev, &r3, &err), 0);
  assert_int_equal(r1.move, r3.move);
  assert_true(r1.value == r3.value);
  assert_int_equal(r1.depth, r3.depth);
  assert_true(r1.v_evals == r3.v_evals && r1.q_evals == r3.q_evals);
  /* X (3, 4, 5) against O (3, 4, 5): X to move wins at 2 or 6. */
  pb_state_t w = pos(C4, "334455");
  assert_int_equal(pb_abnet_search(ab, &w, &ev, &r1, &err), 0);
  assert_true(r1.move == 1 || r1.move == 5);
  assert_true(r1.value == 1.0f);
  pb_abnet_destroy(&ab);

  pb_abnet_opts_t o;
  pb_abnet_defaults(&o);
  o.nodes = 0;
  o.time_ms = 30;
  ab = pb_abnet_new(C4, &o, &err);
  assert_non_null(ab);
  assert_int_equal(pb_abnet_search(ab, &a, &ev, &r1, &err), 0);
  assert_true(r1.move >= 0 && r1.move < 7);
  assert_true(r1.depth >= 0);
  assert_int_equal(pb_abnet_options(ab)->time_ms, 30);
  pb_abnet_destroy(&ab);
}

/* Bad options, a finished game, NULLs and the callbacks' errors. */
static void test_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_abnet_opts_t bad[7];
  for (int i = 0; i < 7; i++) pb_abnet_defaults(&bad[i]);
  bad[0].nodes = 0;
  bad[1].nodes = PB_ABNET_MAX_NODES + 1;
  bad[2].time_ms = -1;
  bad[3].max_depth = 0;
  bad[4].max_depth = PB_ABNET_MAX_DEPTH + 1;
  bad[5].q_plies = 0;
  bad[6].batch = 2;
  for (int i = 0; i < 7; i++) {
    pb_err_clear(&err);
    assert_null(pb_abnet_new(C4, &bad[i], &err));
    assert_int_equal(err.code, PB_EINVAL);
    assert_non_null(strstr(err.msg, "abnet"));
  }
  assert_null(pb_abnet_new(NULL, &bad[0], &err));
  pb_abnet_destroy(NULL);
  pb_abnet_t *ab = mk(C4, 200, PB_ABNET_MAX_DEPTH, 64, 1);
  fn_t f = {C4, 0, NULL, 0, 0, 0, 0};
  pb_evalfn_t ev = fn_evfn(&f);
  pb_abnet_result_t r;
  pb_state_t over = pos(C4, "1212121");
  assert_int_equal(pb_abnet_search(ab, &over, &ev, &r, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "over"));
  pb_state_t s = pos(C4, "44");
  assert_int_equal(pb_abnet_search(ab, NULL, &ev, &r, &err), PB_EINVAL);
  for (int at = 1; at <= 3; at++) {
    fn_t ff = {C4, 0, NULL, at, 0, 0, 0};
    pb_evalfn_t e2 = fn_evfn(&ff);
    pb_err_clear(&err);
    assert_int_equal(pb_abnet_search(ab, &s, &e2, &r, &err), PB_ENN);
    assert_non_null(strstr(err.msg, "fails"));
  }
  pb_abnet_destroy(&ab);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed_depth_equals_negamax),
      cmocka_unit_test(test_budgets),
      cmocka_unit_test(test_whole_tree_is_exact),
      cmocka_unit_test(test_exact_values_small_budget),
      cmocka_unit_test(test_determinism_time_win),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
