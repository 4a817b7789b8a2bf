/* test_uct.c - plain UCT (common/search/uct.h), checked against the exact values
 * of the Tic-Tac-Toe solver (solver.h): it plays the winning move and the
 * only block in hand-picked positions, its root value approaches the exact
 * value as the simulations grow, a playout stops at max_turns as a draw,
 * the discounting heuristic prefers a win in 1 to a win in 3, a search is
 * a function of the rng's state, visits sum to the simulations on every
 * game, and bad options are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_fixtures.h"
#include "game.h"
#include "rng.h"
#include "solver.h"
#include "uct.h"

static pb_uct_t *uct(const pb_game_t *g, int sims, int discount) {
  pb_uct_opts_t o = {sims, PB_UCT_DEFAULT_C, discount, 0};
  pb_err_t err;
  pb_uct_t *u = pb_uct_new(g, &o, &err);
  if (u == NULL) fail_msg("pb_uct_new: %s", err.msg);
  return u;
}

/* The solver's value of each legal move of s; the best result in *best. */
static void solve_moves(const pb_state_t *s, pb_solve_value_t *mv, int *best) {
  pb_err_t err;
  pb_solver_t *sv = pb_solver_new(T3, 0, &err);
  assert_non_null(sv);
  assert_int_equal(pb_solver_moves(sv, s, 0, mv, &err), 0);
  *best = -2;
  for (int a = 0; a < 9; a++)
    if (mv[a].result != PB_SOLVE_ILLEGAL && mv[a].result > *best)
      *best = mv[a].result;
  pb_solver_destroy(&sv);
}

/* Win in one, and the only move that does not lose at once: the move
 * played is one the solver rates best, over several seeds. */
static void test_finds_win_and_block(void **state) {
  (void)state;
  /* "7185": X 7, 8 and O 1, 5: only 9 (action 8) wins; "9385": mirrored,
   * only 7; "152": O must block at 3 (action 2), every other move loses;
   * "1529": X 1, 2, O 5, 9: 3 (action 2) wins at once, 4 and 7 (actions 3
   * and 6) in 3 plies, so without discounting any of the three is right.
   * (tests/test_mcts.c's positions.) */
  const struct {
    const char *moves;
    int only; /* the one right move, or -1 */
  } cases[] = {{"7185", 8}, {"9385", 6}, {"152", 2}, {"1529", -1}};
  const int nc = sizeof cases / sizeof cases[0];
  pb_uct_t *u = uct(T3, 2000, 0);
  for (int i = 0; i < nc; i++) {
    pb_state_t s = pos(T3, cases[i].moves);
    pb_solve_value_t mv[9];
    int best, nbest = 0;
    solve_moves(&s, mv, &best);
    for (int a = 0; a < 9; a++) nbest += mv[a].result == best;
    assert_int_equal(nbest == 1, cases[i].only >= 0);
    if (cases[i].only >= 0) assert_int_equal(mv[cases[i].only].result, best);
    for (uint64_t seed = 1; seed <= 5; seed++) {
      pb_rng_t rng;
      pb_rng_seed(&rng, seed, 0);
      float visits[9], values[9], rv;
      pb_err_t err;
      int a = pb_uct_search(u, &s, &rng, visits, values, &rv, &err);
      assert_true(a >= 0 && a < 9);
      if (mv[a].result != best)
        fail_msg("%s seed %d: played %d (value %d), the best is %d",
                 cases[i].moves, (int)seed, a, mv[a].result, best);
      double sum = 0;
      for (int k = 0; k < 9; k++) sum += visits[k];
      assert_true(sum == 2000);
    }
  }
  assert_true(pb_uct_simulations(u) == 2000u * 5u * (unsigned)nc);
  pb_uct_destroy(&u);
  pb_uct_destroy(&u);
  assert_null(u);
}

/* The root's mean value approaches the solver's value as N grows: the mean
 * error over positions with exact values of every kind falls from 100 to
 * 1000 to 20000 simulations, and ends small. */
static void test_root_value_converges(void **state) {
  (void)state;
  /* Empty board (a draw), wins for the mover, losses, draws. */
  const char *moves[] = {"",     "5",    "1",   "15",  "12",   "159",
                         "1248", "1529", "152", "124", "7185", "13"};
  const int np = sizeof moves / sizeof moves[0];
  const int sims[3] = {100, 1000, 20000};
  double err_at[3];
  for (int k = 0; k < 3; k++) {
    pb_uct_t *u = uct(T3, sims[k], 0);
    double sum = 0;
    for (int i = 0; i < np; i++) {
      pb_state_t s = pos(T3, moves[i]);
      pb_solve_value_t mv[9];
      int exact;
      solve_moves(&s, mv, &exact);
      for (uint64_t seed = 1; seed <= 2; seed++) {
        pb_rng_t rng;
        pb_rng_seed(&rng, seed, 7);
        float rv;
        pb_err_t err;
        assert_true(pb_uct_search(u, &s, &rng, NULL, NULL, &rv, &err) >= 0);
        sum += fabs(rv - exact);
      }
    }
    err_at[k] = sum / (2 * np);
    pb_uct_destroy(&u);
  }
  printf("mean |root value - exact|: %.3f (100), %.3f (1000), %.3f (20000)\n",
         err_at[0], err_at[1], err_at[2]);
  assert_true(err_at[1] < err_at[0]);
  assert_true(err_at[2] < err_at[1]);
  assert_true(err_at[2] < 0.15);
}

/* A game at max_turns is a draw: with the limit one ply ahead, every move
 * that does not win at once scores 0, and the win scores 1. */
static void test_max_turns_draw(void **state) {
  (void)state;
  pb_state_t s = pos(T3, "1248"); /* ply 4; action 6 wins */
  pb_uct_opts_t o = {500, PB_UCT_DEFAULT_C, 0, 5};
  pb_err_t err;
  pb_uct_t *u = pb_uct_new(T3, &o, &err);
  assert_non_null(u);
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  float visits[9], values[9];
  assert_int_equal(pb_uct_search(u, &s, &rng, visits, values, NULL, &err), 6);
  for (int a = 0; a < 9; a++)
    if (visits[a] > 0) assert_true(values[a] == (a == 6 ? 1.0f : 0.0f));
  pb_uct_destroy(&u);
  /* Toguz Kumalak from the start, the limit 3 plies away: nothing ends
   * sooner, so every result is a draw. */
  const pb_game_t *tk = &pb_game_toguz;
  pb_state_t t;
  tk->reset(&t);
  pb_uct_opts_t o3 = {300, PB_UCT_DEFAULT_C, 0, 3};
  u = pb_uct_new(tk, &o3, &err);
  assert_non_null(u);
  float rv = 1;
  float tv[PB_MAX_ACTIONS];
  assert_true(pb_uct_search(u, &t, &rng, NULL, tv, &rv, &err) >= 0);
  assert_true(rv == 0.0f);
  for (int a = 0; a < tk->num_actions; a++) assert_true(tv[a] == 0.0f);
  pb_uct_destroy(&u);
}

/* Discounting: in "1248" X wins at once at 7 (action 6) and in 3 plies
 * after 5 (action 4). With discount the win in 1 is worth exactly 1 and
 * the win in 3 at most 1/3 in the root values; without, the win in 3
 * climbs toward 1. */
static void test_discount_prefers_quick_win(void **state) {
  (void)state;
  pb_state_t s = pos(T3, "1248");
  pb_solve_value_t mv[9];
  int best;
  solve_moves(&s, mv, &best);
  assert_true(mv[6].result == 1 && mv[6].plies == 1);
  assert_true(mv[4].result == 1 && mv[4].plies == 3);
  for (int discount = 0; discount <= 1; discount++) {
    pb_uct_t *u = uct(T3, 20000, discount);
    pb_rng_t rng;
    pb_rng_seed(&rng, 11, 0);
    float visits[9], values[9];
    pb_err_t err;
    int a = pb_uct_search(u, &s, &rng, visits, values, NULL, &err);
    /* Off, both wins are worth 1 and share the visits. */
    assert_true(discount ? a == 6 : (a == 6 || a == 4));
    printf("discount %d: win in 1 %.3f (%.0f visits), win in 3 %.3f (%.0f)\n",
           discount, values[6], visits[6], values[4], visits[4]);
    assert_true(values[6] == 1.0f);
    if (discount)
      assert_true(values[4] <= 1.0f / 3 + 1e-6f);
    else
      assert_true(values[4] > 0.6f);
    assert_true(values[6] > values[4]);
    pb_uct_destroy(&u);
  }
}

/* A search depends only on the position, the options and the rng's state. */
static void test_deterministic(void **state) {
  (void)state;
  const pb_game_t *c4 = &pb_game_connect4;
  pb_state_t s = pos(c4, "4453");
  pb_uct_t *u = uct(c4, 300, 0), *w = uct(c4, 300, 0);
  float v1[7], v2[7], v3[7];
  pb_rng_t r1, r2, r3;
  pb_rng_seed(&r1, 5, 0);
  pb_rng_seed(&r2, 5, 0);
  pb_rng_seed(&r3, 6, 0);
  pb_err_t err;
  int a1 = pb_uct_search(u, &s, &r1, v1, NULL, NULL, &err);
  int a2 = pb_uct_search(w, &s, &r2, v2, NULL, NULL, &err);
  assert_int_equal(a1, a2);
  assert_memory_equal(v1, v2, sizeof v1);
  pb_uct_search(u, &s, &r3, v3, NULL, NULL, &err);
  assert_memory_not_equal(v1, v3, sizeof v1);
  pb_uct_destroy(&u);
  pb_uct_destroy(&w);
}

/* Every game: visits sum to the simulations, only legal actions get any,
 * and the move played is legal and among the most visited. */
static void test_every_game(void **state) {
  (void)state;
  const pb_game_t *games[] = {&pb_game_connect4, &pb_game_tictactoe,
                              &pb_game_othello, &pb_game_toguz};
  for (size_t gi = 0; gi < 4; gi++) {
    const pb_game_t *g = games[gi];
    pb_uct_t *u = uct(g, 64, (int)(gi & 1));
    pb_rng_t rng;
    pb_rng_seed(&rng, 21, gi);
    for (int p = 0; p < 6; p++) {
      pb_state_t s;
      g->reset(&s);
      int plies = (int)pb_rng_below(&rng, 12);
      for (int k = 0, done = 0; k < plies; k++) {
        uint8_t acts[PB_MAX_ACTIONS];
        pb_state_t t = s;
        g->step(&t, acts[pb_rng_below(&rng, (uint32_t)g->legal(&s, acts))],
                &done);
        if (done) break;
        s = t;
      }
      uint8_t acts[PB_MAX_ACTIONS], legal[PB_MAX_ACTIONS] = {0};
      int n = g->legal(&s, acts);
      for (int k = 0; k < n; k++) legal[acts[k]] = 1;
      float visits[PB_MAX_ACTIONS];
      pb_err_t err;
      int a = pb_uct_search(u, &s, &rng, visits, NULL, NULL, &err);
      if (a < 0) fail_msg("%s: %s", g->name, err.msg);
      assert_true(legal[a]);
      double sum = 0;
      for (int k = 0; k < g->num_actions; k++) {
        if (!legal[k]) assert_true(visits[k] == 0);
        assert_true(visits[k] <= visits[a]);
        sum += visits[k];
      }
      assert_true(sum == 64);
    }
    pb_uct_destroy(&u);
  }
}

/* Bad options and finished games are refused. */
static void test_errors(void **state) {
  (void)state;
  pb_err_t err;
  const pb_uct_opts_t bad[] = {
      {0, 1, 0, 0},    {PB_UCT_MAX_SIMULATIONS + 1, 1, 0, 0},
      {10, 0, 0, 0},   {10, -1, 0, 0},
      {10, NAN, 0, 0}, {10, INFINITY, 0, 0},
      {10, 1, 2, 0},   {10, 1, 0, -1}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_null(pb_uct_new(T3, &bad[i], &err));
    assert_int_equal(err.code, PB_EINVAL);
    assert_non_null(strstr(err.msg, "uct:"));
  }
  assert_null(pb_uct_new(NULL, &bad[0], &err));
  pb_uct_t *u = uct(T3, 10, 0);
  pb_state_t won = pos(T3, "14253");
  pb_rng_t rng;
  pb_rng_seed(&rng, 1, 0);
  assert_int_equal(pb_uct_search(u, &won, &rng, NULL, NULL, NULL, &err),
                   PB_EINVAL);
  assert_int_equal(pb_uct_search(u, &won, NULL, NULL, NULL, NULL, &err),
                   PB_EINVAL);
  pb_uct_destroy(&u);
  pb_uct_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_finds_win_and_block),
      cmocka_unit_test(test_root_value_converges),
      cmocka_unit_test(test_max_turns_draw),
      cmocka_unit_test(test_discount_prefers_quick_win),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_every_game),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
