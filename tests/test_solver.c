/* test_solver.c - the exact solvers (common/solver/solver.c, common/solver/connect4_solver.c)
 * against slow references: the Connect Four solver against plain negamax
 * (pb_c4solver_solve_ref) and against a distance-to-mate negamax written
 * here on the game interface, on hundreds of late positions; Tic-Tac-Toe
 * against a brute-force minimax on every reachable position; positions
 * with known answers (cross-checked against Pascal Pons' solver); the
 * mirror symmetry; and the errors.
 *
 * Tables are small (2^16..2^18 entries) and positions late, so that the
 * whole program runs in seconds under the sanitizers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect4_solver.h"
#include "game.h"
#include "rng.h"
#include "solver.h"

static const pb_game_t *C4 = &pb_game_connect4;
static const pb_game_t *T3 = &pb_game_tictactoe;

static pb_state_t pos(const pb_game_t *g, const char *moves) {
  pb_state_t s;
  pb_err_t err;
  if (g->parse(&s, moves, &err) != 0) fail_msg("parse %s: %s", moves, err.msg);
  return s;
}

static int sign(int x) {
  return (x > 0) - (x < 0);
}

/* Plays `plies` random moves from the start into *s; 0 if the game ended
 * on the way (no position). */
static int random_game(const pb_game_t *g, pb_rng_t *rng, int plies,
                       pb_state_t *s) {
  g->reset(s);
  int done = 0;
  for (int p = 0; p < plies; p++) {
    uint8_t acts[PB_MAX_ACTIONS];
    int n = g->legal(s, acts);
    if (n == 0) return 0;
    g->step(s, acts[pb_rng_below(rng, (uint32_t)n)], &done);
    if (done) return 0;
  }
  return 1;
}

/* An upper bound on the number of move sequences that fill the board from
 * mask: (empty cells)! / prod over columns (empty cells of the column)!. */
static double c4_sequences(uint64_t mask) {
  int empty = 0;
  double r = 1;
  for (int c = 0; c < 7; c++) {
    int e = 6 - __builtin_popcountll(mask & (0x3FULL << (7 * c)));
    for (int k = 1; k <= e; k++) r = r * (empty + k) / k;
    empty += e;
  }
  return r;
}

/* ---- a distance-to-mate negamax on the game interface ------------------ */

/* Value of a non-terminal position as a single integer: a win in d plies
 * is 100 - d, a loss in d plies d - 100, a draw 0. Written independently of
 * solver.c (which uses the same idea for Tic-Tac-Toe only). */
enum { DTM_WIN = 100 };

static int dtm_negamax(const pb_game_t *g, const pb_state_t *s);

static int dtm_move(const pb_game_t *g, const pb_state_t *s, int a) {
  pb_state_t c = *s;
  int done = 0;
  float r = g->step(&c, a, &done);
  if (done) return r > 0 ? DTM_WIN - 1 : r < 0 ? 1 - DTM_WIN : 0;
  int v = -dtm_negamax(g, &c);
  if (v > 0) return v - 1;
  if (v < 0) return v + 1;
  return 0;
}

static int dtm_negamax(const pb_game_t *g, const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts), best = -1000;
  for (int i = 0; i < n; i++) {
    int v = dtm_move(g, s, acts[i]);
    if (v > best) best = v;
  }
  return best;
}

static pb_solve_value_t dtm_value(int v) {
  pb_solve_value_t out = {0, 0};
  if (v > 0) out = (pb_solve_value_t){1, DTM_WIN - v};
  if (v < 0) out = (pb_solve_value_t){-1, DTM_WIN + v};
  return out;
}

/* A weak value agrees with the strong one: the same result, plies unknown
 * (-1) or exact. */
static void check_weak(pb_solve_value_t weak, pb_solve_value_t strong,
                       const char *what) {
  if (weak.result != strong.result ||
      (weak.plies != -1 && weak.plies != strong.plies))
    fail_msg("%s: weak {%d, %d}, strong {%d, %d}", what, weak.result,
             weak.plies, strong.result, strong.plies);
}

/* ---- Connect Four against the references ------------------------------- */

/* Positions reached by random play to plies 30..36, skipping finished ones
 * and those with too many continuations for the reference. For each: the
 * strong score equals plain negamax, the weak result is its sign, every
 * column's score equals -ref(child) (or the immediate win), and
 * pb_solver_* reports the same results with the plies that a
 * distance-to-mate negamax finds. */
static void test_c4_against_reference(void **state) {
  (void)state;
  pb_err_t err;
  pb_c4solver_t *strong = pb_c4solver_new(18, &err);
  pb_c4solver_t *weak = pb_c4solver_new(16, &err);
  pb_solver_t *sv = pb_solver_new(C4, 16, &err);
  assert_non_null(strong);
  assert_non_null(weak);
  assert_non_null(sv);
  pb_rng_t rng;
  pb_rng_seed(&rng, 2024, 0);
  int npos = 0, wins = 0, losses = 0, draws = 0, full_cols = 0, dtm_checked = 0;
  int hist[43] = {0}; /* scores + 21 */
  while (npos < 220) {
    pb_state_t s;
    int plies = 30 + (int)pb_rng_below(&rng, 7);
    if (!random_game(C4, &rng, plies, &s)) continue;
    uint64_t me = s.w[0], mask = s.w[1];
    if (c4_sequences(mask) > 3e5) continue;
    npos++;
    const int n = plies;
    int ref = pb_c4solver_solve_ref(me, mask);
    int sc = pb_c4solver_solve(strong, me, mask, 0);
    if (sc != ref)
      fail_msg("position %d: strong %d, reference %d", npos, sc, ref);
    int ws = pb_c4solver_solve(weak, me, mask, 1);
    assert_int_equal(sign(ws), sign(sc));
    assert_true(sc >= -(42 - n) / 2 && sc <= (43 - n) / 2);
    hist[sc + 21]++;
    wins += sc > 0, losses += sc < 0, draws += sc == 0;

    /* Every column. */
    int cols[7], wcols[7];
    pb_c4solver_moves(strong, me, mask, 0, cols);
    pb_c4solver_moves(weak, me, mask, 1, wcols);
    int best = -100;
    for (int c = 0; c < 7; c++) {
      int full = (mask >> (7 * c + 5)) & 1;
      if (full) {
        full_cols++;
        assert_int_equal(cols[c], PB_C4SOLVER_FULL);
        assert_int_equal(wcols[c], PB_C4SOLVER_FULL);
        continue;
      }
      pb_state_t ch = s;
      int done = 0;
      float r = C4->step(&ch, c, &done);
      int want = done ? (r > 0 ? (43 - n) / 2 : 0)
                      : -pb_c4solver_solve_ref(ch.w[0], ch.w[1]);
      if (cols[c] != want)
        fail_msg("position %d column %d: %d, reference %d", npos, c + 1,
                 cols[c], want);
      assert_int_equal(sign(wcols[c]), sign(want));
      if (want > best) best = want;
    }
    assert_int_equal(best, sc); /* the score is the best column's */

    /* The generic interface: results and plies. */
    pb_solve_value_t v, vw, mv[7], mw[7];
    assert_int_equal(pb_solver_solve(sv, &s, 0, &v, &err), 0);
    assert_int_equal(pb_solver_moves(sv, &s, 0, mv, &err), 0);
    assert_int_equal(pb_solver_solve(sv, &s, 1, &vw, &err), 0);
    assert_int_equal(pb_solver_moves(sv, &s, 1, mw, &err), 0);
    assert_int_equal(v.result, sign(sc));
    assert_int_equal(v.plies, pb_c4solver_plies(sc, n));
    check_weak(vw, v, "solve");
    for (int c = 0; c < 7; c++) {
      if (cols[c] == PB_C4SOLVER_FULL) {
        assert_int_equal(mv[c].result, PB_SOLVE_ILLEGAL);
        assert_int_equal(mw[c].result, PB_SOLVE_ILLEGAL);
        continue;
      }
      assert_int_equal(mv[c].result, sign(cols[c]));
      assert_int_equal(mv[c].plies, pb_c4solver_plies(cols[c], n));
      check_weak(mw[c], mv[c], "moves");
    }
    /* Distance to mate found the slow way, on the smaller positions. */
    if (c4_sequences(mask) <= 2e4) {
      dtm_checked++;
      pb_solve_value_t d = dtm_value(dtm_negamax(C4, &s));
      if (d.result != v.result || d.plies != v.plies)
        fail_msg("position %d: solver {%d, %d}, negamax {%d, %d}", npos,
                 v.result, v.plies, d.result, d.plies);
      for (int c = 0; c < 7; c++) {
        if (cols[c] == PB_C4SOLVER_FULL) continue;
        pb_solve_value_t dm = dtm_value(dtm_move(C4, &s, c));
        if (dm.result != mv[c].result || dm.plies != mv[c].plies)
          fail_msg("position %d column %d: solver {%d, %d}, negamax {%d, %d}",
                   npos, c + 1, mv[c].result, mv[c].plies, dm.result, dm.plies);
      }
    }
  }
  /* The sample is varied enough to test something. */
  assert_true(wins > 20 && losses > 20 && draws > 5);
  assert_true(full_cols > 50);
  assert_true(dtm_checked > 100);
  int distinct = 0;
  for (int i = 0; i < 43; i++) distinct += hist[i] > 0;
  assert_true(distinct >= 8);
  assert_true(pb_c4solver_nodes(strong) > 0);
  assert_true(pb_solver_nodes(sv) > 0);
  pb_c4solver_destroy(&strong);
  pb_c4solver_destroy(&weak);
  pb_solver_destroy(&sv);
  assert_null(strong);
  assert_null(sv);
}

/* The header: a weak solve returns -1, 0 or +1 (not merely a score of the
 * right sign), for the position and for every column. */
static void test_c4_weak_is_a_sign(void **state) {
  (void)state;
  pb_err_t err;
  pb_c4solver_t *s = pb_c4solver_new(16, &err);
  assert_non_null(s);
  pb_rng_t rng;
  pb_rng_seed(&rng, 77, 0);
  char bad[200] = "";
  int nbad = 0;
  for (int npos = 0; npos < 300;) {
    pb_state_t p;
    if (!random_game(C4, &rng, 26 + (int)pb_rng_below(&rng, 11), &p)) continue;
    npos++;
    int v = pb_c4solver_solve(s, p.w[0], p.w[1], 1);
    if ((v < -1 || v > 1) && nbad++ == 0)
      snprintf(bad, sizeof bad,
               "position %d (%d stones): weak solve "
               "returned %d",
               npos, C4->ply(&p), v);
    int cols[7];
    pb_c4solver_moves(s, p.w[0], p.w[1], 1, cols);
    for (int c = 0; c < 7; c++)
      if (cols[c] != PB_C4SOLVER_FULL && (cols[c] < -1 || cols[c] > 1) &&
          nbad++ == 0)
        snprintf(bad, sizeof bad, "position %d column %d: weak score %d", npos,
                 c + 1, cols[c]);
  }
  pb_c4solver_destroy(&s);
  if (nbad > 0) fail_msg("%d weak scores outside -1..1; first: %s", nbad, bad);
}

/* A table of the smallest size (2^10 entries, overwritten all the time)
 * still gives exact scores. */
static void test_c4_tiny_table(void **state) {
  (void)state;
  pb_err_t err;
  pb_c4solver_t *s = pb_c4solver_new(10, &err);
  assert_non_null(s);
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  for (int npos = 0; npos < 60;) {
    pb_state_t p;
    if (!random_game(C4, &rng, 30 + (int)pb_rng_below(&rng, 5), &p)) continue;
    if (c4_sequences(p.w[1]) > 3e5) continue;
    npos++;
    assert_int_equal(pb_c4solver_solve(s, p.w[0], p.w[1], 0),
                     pb_c4solver_solve_ref(p.w[0], p.w[1]));
  }
  pb_c4solver_destroy(&s);
}

/* Known answers through pb_solver_*. */
static void check_moves(pb_solver_t *sv, const char *moves, int weak,
                        const pb_solve_value_t *want) {
  pb_state_t s = pos(C4, moves);
  pb_solve_value_t got[7];
  pb_err_t err;
  if (pb_solver_moves(sv, &s, weak, got, &err) != 0)
    fail_msg("%s: %s", moves, err.msg);
  for (int c = 0; c < 7; c++)
    if (got[c].result != want[c].result || got[c].plies != want[c].plies)
      fail_msg("%s%s column %d: {%d, %d}, expected {%d, %d}", moves,
               weak ? " (weak)" : "", c + 1, got[c].result, got[c].plies,
               want[c].result, want[c].plies);
}

static void test_c4_known_positions(void **state) {
  (void)state;
  pb_err_t err;
  pb_solver_t *sv = pb_solver_new(C4, 18, &err);
  assert_non_null(sv);
  pb_solve_value_t v;

  /* X has three in column 1 and O three in column 2. Column 1 wins at
   * once; column 2 blocks O's three, O then blocks column 1 and X loses in
   * 32 plies; anything else lets O complete column 2 next move. */
  const pb_solve_value_t a121212[7] = {{1, 1},  {-1, 32}, {-1, 2}, {-1, 2},
                                       {-1, 2}, {-1, 2},  {-1, 2}};
  check_moves(sv, "121212", 0, a121212);
  pb_state_t s = pos(C4, "121212");
  pb_solve_value_t got[7];
  assert_int_equal(pb_solver_moves(sv, &s, 1, got, &err), 0);
  for (int c = 0; c < 7; c++) check_weak(got[c], a121212[c], "121212 weak");
  assert_int_equal(pb_solver_solve(sv, &s, 0, &v, &err), 0);
  assert_int_equal(v.result, 1);
  assert_int_equal(v.plies, 1);

  /* O has 3, 4 and 5 on the bottom row: columns 2 and 6 both complete
   * it, so every move loses in 2 plies. */
  const pb_solve_value_t l2[7] = {{-1, 2}, {-1, 2}, {-1, 2}, {-1, 2},
                                  {-1, 2}, {-1, 2}, {-1, 2}};
  check_moves(sv, "73747715", 0, l2);
  s = pos(C4, "73747715");
  assert_int_equal(pb_solver_solve(sv, &s, 0, &v, &err), 0);
  assert_int_equal(v.result, -1);
  assert_int_equal(v.plies, 2);
  assert_int_equal(pb_solver_solve(sv, &s, 1, &v, &err), 0);
  assert_int_equal(v.result, -1);

  /* "4453": Pascal Pons' solver scores the moves -5 -5 -2 -3 -4 -2 -2,
   * i.e. losses in 30, 30, 36, 34, 32, 36, 36 plies. Solving them all
   * takes about 40 s in this unoptimised sanitizer build (25 s unoptimised
   * without it), so the default run checks one child instead: after
   * column 2 the mover (O, 5 stones on the board) wins in 29 plies, about
   * 2.5 s here. PB_SLOW_TESTS=1 checks the whole position. */
  s = pos(C4, "44532");
  assert_int_equal(pb_solver_solve(sv, &s, 0, &v, &err), 0);
  assert_int_equal(v.result, 1);
  assert_int_equal(v.plies, 29);
  assert_int_equal(pb_c4solver_plies(5, 5), 29);
  if (getenv("PB_SLOW_TESTS") != NULL) {
    const pb_solve_value_t a4453[7] = {{-1, 30}, {-1, 30}, {-1, 36}, {-1, 34},
                                       {-1, 32}, {-1, 36}, {-1, 36}};
    check_moves(sv, "4453", 0, a4453);
    s = pos(C4, "4453");
    assert_int_equal(pb_solver_solve(sv, &s, 1, &v, &err), 0);
    assert_int_equal(v.result, -1);
  }
  pb_solver_destroy(&sv);
}

/* Scores to plies: an immediate win is 1 ply, the quickest loss 2, and
 * each point of score is two plies. */
static void test_c4_plies(void **state) {
  (void)state;
  for (int n = 0; n < 42; n++) {
    int win_now = (43 - n) / 2, lose_next = -(42 - n) / 2;
    assert_int_equal(pb_c4solver_plies(win_now, n), 1);
    if (n <= 40) assert_int_equal(pb_c4solver_plies(lose_next, n), 2);
    assert_int_equal(pb_c4solver_plies(0, n), 0);
    for (int sc = 1; sc < win_now; sc++) {
      assert_int_equal(pb_c4solver_plies(sc, n) - pb_c4solver_plies(sc + 1, n),
                       2);
      assert_int_equal(pb_c4solver_plies(sc, n) % 2, 1);
    }
    for (int sc = -1; sc > lose_next; sc--) {
      assert_int_equal(pb_c4solver_plies(sc, n) - pb_c4solver_plies(sc - 1, n),
                       2);
      assert_int_equal(pb_c4solver_plies(sc, n) % 2, 0);
    }
  }
  /* From the empty board, the longest win (score 1): X's 21st stone, the
   * 41st ply. */
  assert_int_equal(pb_c4solver_plies(1, 0), 41);
  assert_int_equal(pb_c4solver_plies(-1, 1), 40);
}

/* A position and its mirror image have the same value, column for mirrored
 * column. */
static void test_c4_mirror(void **state) {
  (void)state;
  pb_err_t err;
  pb_solver_t *sv = pb_solver_new(C4, 18, &err);
  assert_non_null(sv);
  assert_non_null(C4->mirror);
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  int asym = 0, results[3] = {0, 0, 0};
  for (int npos = 0; npos < 16;) {
    pb_state_t s, m;
    if (!random_game(C4, &rng, 16 + (int)pb_rng_below(&rng, 9), &s)) continue;
    npos++;
    C4->mirror(&s, &m);
    asym += memcmp(&s, &m, sizeof s) != 0;
    pb_solve_value_t vs, vm, ms[7], mm[7];
    assert_int_equal(pb_solver_solve(sv, &s, 1, &vs, &err), 0);
    assert_int_equal(pb_solver_solve(sv, &m, 1, &vm, &err), 0);
    assert_int_equal(vs.result, vm.result);
    results[vs.result + 1]++;
    assert_int_equal(pb_solver_moves(sv, &s, 1, ms, &err), 0);
    assert_int_equal(pb_solver_moves(sv, &m, 1, mm, &err), 0);
    int best = -2;
    for (int a = 0; a < 7; a++) {
      int b = C4->mirror_action(a);
      assert_int_equal(ms[a].result, mm[b].result);
      if (ms[a].result != PB_SOLVE_ILLEGAL && ms[a].result > best)
        best = ms[a].result;
    }
    assert_int_equal(best, vs.result);
  }
  assert_true(asym >= 14);
  assert_true(results[0] > 0 && results[2] > 0);
  pb_solver_destroy(&sv);
}

/* ---- Tic-Tac-Toe --------------------------------------------------------- */

/* Brute-force minimax on 3x3 arrays, written from the rules: the result
 * for the side to move and the plies to the end (winner fast, loser
 * slow). cells: 0 empty, 1 or 2. */
typedef struct {
  int result, plies;
} t3v_t;

static int t3_line(const int *cell, int who) {
  static const int L[8][3] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6},
                              {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}};
  for (int i = 0; i < 8; i++)
    if (cell[L[i][0]] == who && cell[L[i][1]] == who && cell[L[i][2]] == who)
      return 1;
  return 0;
}

/* Better for the side choosing: a win beats a draw beats a loss; among
 * wins the quicker, among losses the slower. */
static int t3_better(t3v_t a, t3v_t b) {
  if (a.result != b.result) return a.result > b.result;
  if (a.result > 0) return a.plies < b.plies;
  if (a.result < 0) return a.plies > b.plies;
  return 0;
}

static t3v_t t3_brute(int *cell, int me);

/* The value of `me` playing cell i, for me. */
static t3v_t t3_brute_move(int *cell, int me, int i) {
  t3v_t v;
  cell[i] = me;
  int filled = 0;
  for (int k = 0; k < 9; k++) filled += cell[k] != 0;
  if (t3_line(cell, me)) {
    v = (t3v_t){1, 1};
  } else if (filled == 9) {
    v = (t3v_t){0, 0};
  } else {
    t3v_t o = t3_brute(cell, 3 - me);
    v = (t3v_t){-o.result, o.result ? o.plies + 1 : 0};
  }
  cell[i] = 0;
  return v;
}

static t3v_t t3_brute(int *cell, int me) {
  t3v_t best = {-2, 0};
  for (int i = 0; i < 9; i++) {
    if (cell[i]) continue;
    t3v_t v = t3_brute_move(cell, me, i);
    if (best.result == -2 || t3_better(v, best)) best = v;
  }
  return best;
}

/* The cells of a position: X = 1 (first player), O = 2. */
static void t3_cells(const pb_state_t *s, int *cell, int *me) {
  int n = T3->ply(s);
  *me = 1 + (n & 1);
  for (int i = 0; i < 9; i++) {
    int occupied = (s->w[1] >> i) & 1, mine = (s->w[0] >> i) & 1;
    cell[i] = !occupied ? 0 : mine ? *me : 3 - *me;
  }
}

static uint8_t *t3_seen; /* [mask * 512 + mover] */
static int t3_checked;

static void t3_walk(pb_solver_t *sv, const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = T3->legal(s, acts);
  if (n == 0) return;
  size_t key = (size_t)s->w[1] * 512 + (size_t)s->w[0];
  if (t3_seen[key]) return;
  t3_seen[key] = 1;
  t3_checked++;
  int cell[9], me;
  t3_cells(s, cell, &me);
  pb_err_t err;
  pb_solve_value_t v, vw, mv[PB_MAX_ACTIONS], mw[PB_MAX_ACTIONS];
  assert_int_equal(pb_solver_solve(sv, s, 0, &v, &err), 0);
  assert_int_equal(pb_solver_solve(sv, s, 1, &vw, &err), 0);
  assert_int_equal(pb_solver_moves(sv, s, 0, mv, &err), 0);
  assert_int_equal(pb_solver_moves(sv, s, 1, mw, &err), 0);
  t3v_t b = t3_brute(cell, me);
  assert_int_equal(v.result, b.result);
  assert_int_equal(v.plies, b.plies);
  check_weak(vw, v, "tictactoe solve");
  for (int a = 0; a < 9; a++) {
    if (cell[a]) {
      assert_int_equal(mv[a].result, PB_SOLVE_ILLEGAL);
      assert_int_equal(mw[a].result, PB_SOLVE_ILLEGAL);
      continue;
    }
    t3v_t m = t3_brute_move(cell, me, a);
    if (mv[a].result != m.result || mv[a].plies != m.plies)
      fail_msg(
          "tictactoe ply %d cell %d: solver {%d, %d}, brute force "
          "{%d, %d}",
          T3->ply(s), a + 1, mv[a].result, mv[a].plies, m.result, m.plies);
    check_weak(mw[a], mv[a], "tictactoe moves");
  }
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    T3->step(&c, acts[i], &done);
    t3_walk(sv, &c);
  }
}

static void test_tictactoe(void **state) {
  (void)state;
  pb_err_t err;
  pb_solver_t *sv = pb_solver_new(T3, 0, &err);
  assert_non_null(sv);

  /* The empty board: a draw, and so is every first move. */
  pb_state_t s = pos(T3, "");
  pb_solve_value_t v, mv[PB_MAX_ACTIONS];
  assert_int_equal(pb_solver_solve(sv, &s, 0, &v, &err), 0);
  assert_int_equal(v.result, 0);
  assert_int_equal(v.plies, 0);
  assert_int_equal(pb_solver_moves(sv, &s, 0, mv, &err), 0);
  for (int a = 0; a < 9; a++) {
    assert_int_equal(mv[a].result, 0);
    assert_int_equal(mv[a].plies, 0);
  }
  assert_true(pb_solver_nodes(sv) > 500000); /* the whole tree, at least */

  /* X in the centre, O on an edge: X wins (e.g. 1, forcing 9, then a fork
   * with 7 or 3), in 5 plies at best against the longest defence. */
  s = pos(T3, "52");
  assert_int_equal(pb_solver_solve(sv, &s, 0, &v, &err), 0);
  assert_int_equal(v.result, 1);
  assert_int_equal(v.plies, 5);
  /* X (1, 2) against O (4, 5): X wins at once in cell 3. */
  s = pos(T3, "1425");
  assert_int_equal(pb_solver_moves(sv, &s, 0, mv, &err), 0);
  assert_int_equal(mv[2].result, 1);
  assert_int_equal(mv[2].plies, 1);
  assert_int_equal(mv[0].result, PB_SOLVE_ILLEGAL);
  assert_int_equal(mv[4].result, PB_SOLVE_ILLEGAL);
  for (int a = 5; a < 9; a++) assert_true(mv[a].result < 1);

  /* Every reachable position against the brute force. */
  t3_seen = calloc(512 * 512, 1);
  assert_non_null(t3_seen);
  t3_checked = 0;
  s = pos(T3, "");
  t3_walk(sv, &s);
  /* 5478 legal positions, of which 958 are over. */
  assert_int_equal(t3_checked, 5478 - 958);
  free(t3_seen);
  t3_seen = NULL;
  pb_solver_destroy(&sv);
}

/* ---- errors -------------------------------------------------------------- */

static void test_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_solver_t *c4 = pb_solver_new(C4, 16, &err);
  pb_solver_t *t3 = pb_solver_new(T3, 0, &err);
  assert_non_null(c4);
  assert_non_null(t3);
  pb_solve_value_t v, mv[PB_MAX_ACTIONS];

  /* Finished positions: wins, and full boards that nobody won. */
  struct {
    pb_solver_t *sv;
    const pb_game_t *g;
    const char *moves;
  } over[] = {{c4, C4, "1212121"},
              {c4, C4, "4455667"},
              {c4, C4, "331421624516111533635625663444742527527777"},
              {t3, T3, "12437"},
              {t3, T3, "159287364"}};
  for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
    pb_state_t s = pos(over[i].g, over[i].moves);
    float r;
    assert_true(over[i].g->terminal(&s, &r));
    pb_err_clear(&err);
    assert_int_equal(pb_solver_solve(over[i].sv, &s, 0, &v, &err), PB_EINVAL);
    assert_int_equal(err.code, PB_EINVAL);
    assert_non_null(strstr(err.msg, "over"));
    pb_err_clear(&err);
    assert_int_equal(pb_solver_moves(over[i].sv, &s, 1, mv, &err), PB_EINVAL);
    assert_non_null(strstr(err.msg, "over"));
  }
  /* A game with no solver. */
  pb_game_t fake = pb_game_connect4;
  fake.id = 99;
  fake.name = "fakegame";
  assert_int_equal(pb_solver_supports(&fake), 0);
  assert_int_equal(pb_solver_supports(NULL), 0);
  assert_int_equal(pb_solver_supports(C4), 1);
  assert_int_equal(pb_solver_supports(T3), 1);
  pb_err_clear(&err);
  assert_null(pb_solver_new(&fake, 0, &err));
  assert_int_equal(err.code, PB_EUNSUPP);
  assert_non_null(strstr(err.msg, "fakegame"));
  pb_err_clear(&err);
  assert_null(pb_solver_new(NULL, 0, &err));
  assert_int_equal(err.code, PB_EINVAL);

  /* Table sizes outside 2^10..2^30. */
  int bad[] = {-1, 1, 9, 31, 64};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_null(pb_c4solver_new(bad[i], &err));
    assert_int_equal(err.code, PB_EINVAL);
    assert_true(err.msg[0] != '\0');
    pb_err_clear(&err);
    assert_null(pb_solver_new(C4, bad[i], &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
  /* Tic-Tac-Toe has no table: the size is ignored. */
  pb_solver_t *t = pb_solver_new(T3, 9, &err);
  assert_non_null(t);
  pb_solver_destroy(&t);

  pb_c4solver_destroy(NULL);
  pb_c4solver_t *none = NULL;
  pb_c4solver_destroy(&none);
  pb_solver_destroy(NULL);
  pb_solver_t *nosolver = NULL;
  pb_solver_destroy(&nosolver);
  pb_solver_destroy(&c4);
  pb_solver_destroy(&t3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c4_against_reference),
      cmocka_unit_test(test_c4_weak_is_a_sign),
      cmocka_unit_test(test_c4_tiny_table),
      cmocka_unit_test(test_c4_known_positions),
      cmocka_unit_test(test_c4_plies),
      cmocka_unit_test(test_c4_mirror),
      cmocka_unit_test(test_tictactoe),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
