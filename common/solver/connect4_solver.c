/* connect4_solver.c - exact Connect Four scores (connect4_solver.h).
 *
 * Bitboards as common/games/connect4.c: bit (col * 7 + row), row 6 of each column
 * an always-empty sentinel. Everything below is plain integer work on two
 * words; the transposition table is the only memory.
 *
 * Search: negamax(alpha, beta) on a position whose mover cannot win at
 * once (the caller checks), so that
 *   - the moves are the "non-losing" ones: a forced block if the opponent
 *     threatens to win (two threats: lost), and never the cell under an
 *     opponent's winning cell;
 *   - the score lies in [-(40 - n) / 2, (41 - n) / 2], bounds that narrow
 *     the window before any move is tried;
 *   - the table keeps, per position, an upper bound (all moves failed low)
 *     or a lower bound (a move failed high), which narrow it further.
 * The root finds the exact score by null-window searches that halve the
 * interval of possible scores, biased towards 0 (most positions are close
 * to a draw), or only its sign when weak. */
#include "connect4_solver.h"

#include <stdlib.h>
#include <string.h>

#include "invariant.h"

enum { W = 7, H = 6, H1 = 7, CELLS = 42 };

#define BOTTOM 0x0040810204081ULL /* bit 0 of every column */
#define BOARD (BOTTOM * 0x3FULL)  /* the 42 playable cells */
#define COL(c) (0x3FULL << (H1 * (c)))

/* Columns in the order they are tried when nothing else tells them
 * apart: centre first. */
static const int centre_first[W] = {3, 2, 4, 1, 5, 0, 6};

enum { TT_UPPER = 0, TT_LOWER = 1 };

struct pb_c4solver {
  uint64_t *tt; /* key << 8 | kind << 7 | (score + 64); 0 = empty */
  int shift;    /* 64 - tt_log2 */
  uint64_t nodes;
  pb_c4solver_tick_fn tick; /* every PB_C4SOLVER_TICK nodes, or NULL */
  void *tick_ctx;
};

/* Empty cells where `p` (one side's stones) would have four in a row. */
static uint64_t winning_cells(uint64_t p, uint64_t mask) {
  uint64_t r = (p << 1) & (p << 2) & (p << 3); /* vertical: three below */
  static const int dirs[3] = {H1, H, H1 + 1};  /* -, \, / */
  for (int i = 0; i < 3; i++) {
    int d = dirs[i];
    uint64_t a = (p << d) & (p << 2 * d); /* the two cells on one side */
    r |= a & (p << 3 * d);
    r |= a & (p >> d);
    a = (p >> d) & (p >> 2 * d); /* on the other side */
    r |= a & (p << d);
    r |= a & (p >> 3 * d);
  }
  return r & (BOARD ^ mask);
}

static uint64_t playable(uint64_t mask) {
  return (mask + BOTTOM) & BOARD;
}

static int popcount(uint64_t x) {
  return __builtin_popcountll(x);
}

static int can_win_now(uint64_t mover, uint64_t mask) {
  return (winning_cells(mover, mask) & playable(mask)) != 0;
}

/* The moves that do not hand the opponent a win on its next move (a set
 * of cells, one per column at most). Requires that the mover cannot win
 * now. */
static uint64_t non_losing(uint64_t mover, uint64_t mask) {
  uint64_t moves = playable(mask);
  uint64_t threats = winning_cells(mover ^ mask, mask);
  uint64_t forced = moves & threats;
  if (forced) {
    if (forced & (forced - 1)) return 0; /* two threats: cannot block both */
    moves = forced;
  }
  return moves & ~(threats >> 1);
}

/* A unique key for the position: the mover's stones plus, per column, the
 * bit above the top stone (which gives the heights). Below 2^49. */
static uint64_t key_of(uint64_t mover, uint64_t mask) {
  return mover | (mask + BOTTOM);
}

pb_c4solver_t *pb_c4solver_new(int tt_log2, pb_err_t *err) {
  if (tt_log2 < 10 || tt_log2 > 30) {
    pb_err_set(err, PB_EINVAL,
               "connect4 solver: table size 2^%d is outside 2^10..2^30",
               tt_log2);
    return NULL;
  }
  pb_c4solver_t *s = calloc(1, sizeof *s);
  if (s != NULL) s->tt = calloc((size_t)1 << tt_log2, sizeof *s->tt);
  if (s == NULL || s->tt == NULL) {
    free(s);
    pb_err_set(err, PB_ENOMEM,
               "connect4 solver: cannot allocate a table of 2^%d entries",
               tt_log2);
    return NULL;
  }
  s->shift = 64 - tt_log2;
  return s;
}

void pb_c4solver_destroy(pb_c4solver_t **ps) {
  if (ps == NULL || *ps == NULL) return;
  free((*ps)->tt);
  free(*ps);
  *ps = NULL;
}

void pb_c4solver_set_tick(pb_c4solver_t *s, pb_c4solver_tick_fn fn,
                          void *ctx) {
  s->tick = fn;
  s->tick_ctx = ctx;
}

uint64_t pb_c4solver_nodes(const pb_c4solver_t *s) {
  return s->nodes;
}

static uint64_t *tt_slot(pb_c4solver_t *s, uint64_t key) {
  return &s->tt[(key * 0x9E3779B97F4A7C15ULL) >> s->shift];
}

static void tt_put(pb_c4solver_t *s, uint64_t key, int kind, int score) {
  /* A score fits the entry's 7 bits (|score| <= 21 in Connect Four). */
  pb_assert((kind == TT_LOWER || kind == TT_UPPER) && score >= -64 &&
            score < 64);
  *tt_slot(s, key) = key << 8 | (uint64_t)kind << 7 | (uint64_t)(score + 64);
}

/* The score of a position whose mover cannot win at once, exact if it
 * lies in (alpha, beta); otherwise a bound on the same side of the window
 * (fail-hard at the bounds it was clamped to). */
static int negamax(pb_c4solver_t *s, uint64_t mover, uint64_t mask, int n,
                   int alpha, int beta) {
  /* The mover's stones are among the stones; n of them; a window. */
  pb_assert((mover & ~mask) == 0 && n >= 0 && n < CELLS && alpha < beta);
  if ((++s->nodes & (PB_C4SOLVER_TICK - 1)) == 0 && s->tick != NULL)
    s->tick(s->tick_ctx, s->nodes);
  uint64_t moves = non_losing(mover, mask);
  if (moves == 0) return -(CELLS - n) / 2; /* the opponent wins next */
  if (n >= CELLS - 2) return 0; /* two plies left and nobody can win */
  int lo = -(CELLS - 2 - n) / 2; /* the opponent cannot win next move */
  int hi = (CELLS - 1 - n) / 2;  /* we cannot win this move */
  uint64_t key = key_of(mover, mask);
  uint64_t e = *tt_slot(s, key);
  if (e != 0 && (e >> 8) == key) {
    int v = (int)(e & 0x7F) - 64;
    if ((e >> 7 & 1) == TT_LOWER) {
      if (v > lo) lo = v;
    } else if (v < hi) {
      hi = v;
    }
  }
  if (alpha < lo) {
    alpha = lo;
    if (alpha >= beta) return alpha;
  }
  if (beta > hi) {
    beta = hi;
    if (alpha >= beta) return beta;
  }
  /* Order: more winning cells after the move first; ties centre first
   * (insertion sort on at most 7 moves, stable). */
  uint64_t cand[W];
  int score[W], nc = 0;
  for (int i = 0; i < W; i++) {
    uint64_t m = moves & COL(centre_first[i]);
    if (!m) continue;
    int sc = popcount(winning_cells(mover | m, mask | m));
    int j = nc++;
    while (j > 0 && score[j - 1] < sc) {
      cand[j] = cand[j - 1];
      score[j] = score[j - 1];
      j--;
    }
    cand[j] = m;
    score[j] = sc;
  }
  for (int i = 0; i < nc; i++) {
    uint64_t m = cand[i];
    /* After the move the opponent moves: its stones are mover ^ mask. */
    int v = -negamax(s, mover ^ mask, mask | m, n + 1, -beta, -alpha);
    if (v >= beta) {
      tt_put(s, key, TT_LOWER, v);
      return v;
    }
    if (v > alpha) alpha = v;
  }
  tt_put(s, key, TT_UPPER, alpha);
  return alpha;
}

int pb_c4solver_solve(pb_c4solver_t *s, uint64_t mover, uint64_t mask,
                      int weak) {
  int n = popcount(mask);
  if (can_win_now(mover, mask)) {
    int v = (CELLS + 1 - n) / 2;
    return weak ? 1 : v;
  }
  int lo = -(CELLS - n) / 2, hi = (CELLS + 1 - n) / 2;
  if (weak) {
    lo = -1;
    hi = 1;
  }
  while (lo < hi) {
    int med = lo + (hi - lo) / 2;
    /* Probe nearer 0 first: most scores are small. */
    if (med <= 0 && lo / 2 < med)
      med = lo / 2;
    else if (med >= 0 && hi / 2 > med)
      med = hi / 2;
    int r = negamax(s, mover, mask, n, med, med + 1);
    if (r <= med)
      hi = r;
    else
      lo = r;
  }
  return weak ? (lo > 0) - (lo < 0) : lo;
}

void pb_c4solver_moves(pb_c4solver_t *s, uint64_t mover, uint64_t mask,
                       int weak, int scores[7]) {
  int n = popcount(mask);
  uint64_t wins = winning_cells(mover, mask);
  for (int c = 0; c < W; c++) {
    uint64_t m = playable(mask) & COL(c);
    if (!m) {
      scores[c] = PB_C4SOLVER_FULL;
    } else if (m & wins) {
      scores[c] = weak ? 1 : (CELLS + 1 - n) / 2;
    } else if (n + 1 == CELLS) {
      scores[c] = 0; /* the last cell, no four: a draw */
    } else {
      scores[c] = -pb_c4solver_solve(s, mover ^ mask, mask | m, weak);
    }
  }
}

int pb_c4solver_plies(int score, int n) {
  int mine = n / 2, theirs = n - n / 2; /* stones of mover and opponent */
  if (score > 0) return 2 * (22 - score - mine) - 1;
  if (score < 0) return 2 * (22 + score - theirs);
  return 0;
}

int pb_c4solver_solve_ref(uint64_t mover, uint64_t mask) {
  int n = popcount(mask);
  int best = -CELLS;
  for (int c = 0; c < W; c++) {
    uint64_t m = playable(mask) & COL(c);
    if (!m) continue;
    int v;
    if (winning_cells(mover, mask) & m)
      v = (CELLS + 1 - n) / 2;
    else if (n + 1 == CELLS)
      v = 0;
    else
      v = -pb_c4solver_solve_ref(mover ^ mask, mask | m);
    if (v > best) best = v;
  }
  return best;
}
