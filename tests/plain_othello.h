/* plain_othello.h - a deliberately plain Othello engine: an 8x8 array
 * walked square by square and direction by direction, nothing clever.
 * tests/test_othello.c checks common/games/othello.c against it position by
 * position; bench/bench_games.c measures the bitboards against it. Same
 * conventions as the game: squares 0..63 (row * 8 + col, a1 = 0), 64 the
 * pass, which is legal only when the side to move has no move and its
 * opponent has one; no legal action once neither side can move. */
#ifndef PB_PLAIN_OTHELLO_H
#define PB_PLAIN_OTHELLO_H

#include <stdint.h>
#include <string.h>


/* board[r][c]: 0 empty, 1 Black, 2 White; r = 0 is row 1, c = 0 column a. */
typedef struct {
  int board[8][8];
  int to_move; /* 1 or 2 */
} pot_t;

static const int pot_dirs[8][2] = {{0, 1},  {0, -1}, {1, 0},  {-1, 0},
                                   {1, 1},  {1, -1}, {-1, 1}, {-1, -1}};

static inline void pot_reset(pot_t *r) {
  memset(r, 0, sizeof *r);
  r->board[3][3] = r->board[4][4] = 2; /* d4 e5 White */
  r->board[4][3] = r->board[3][4] = 1; /* d5 e4 Black */
  r->to_move = 1;
}

/* Discs of `who` turned over by `who` playing (row, col); 0 if none. */
static inline int pot_flips(const pot_t *r, int who, int row, int col, int apply,
                     pot_t *out) {
  if (r->board[row][col] != 0) return 0;
  int total = 0;
  for (int d = 0; d < 8; d++) {
    int k = 1, rr = row + pot_dirs[d][0], cc = col + pot_dirs[d][1];
    while (rr >= 0 && rr < 8 && cc >= 0 && cc < 8 &&
           r->board[rr][cc] == 3 - who) {
      rr += pot_dirs[d][0];
      cc += pot_dirs[d][1];
      k++;
    }
    if (k > 1 && rr >= 0 && rr < 8 && cc >= 0 && cc < 8 &&
        r->board[rr][cc] == who) {
      total += k - 1;
      if (apply)
        for (int j = 1; j < k; j++)
          out->board[row + j * pot_dirs[d][0]][col + j * pot_dirs[d][1]] = who;
    }
  }
  return total;
}

static inline int pot_moves(const pot_t *r, int who, uint8_t *acts) {
  int n = 0;
  for (int sq = 0; sq < 64; sq++)
    if (pot_flips(r, who, sq / 8, sq % 8, 0, NULL) > 0) acts[n++] = (uint8_t)sq;
  return n;
}

static inline int pot_count(const pot_t *r, int who) {
  int n = 0;
  for (int i = 0; i < 64; i++) n += r->board[i / 8][i % 8] == who;
  return n;
}

/* The reference's legal actions, with the same pass and end rules. */
static inline int pot_legal(const pot_t *r, uint8_t *acts) {
  int n = pot_moves(r, r->to_move, acts);
  if (n > 0) return n;
  uint8_t tmp[64];
  if (pot_moves(r, 3 - r->to_move, tmp) == 0) return 0;
  acts[0] = 64;
  return 1;
}

static inline void pot_play(pot_t *r, int a) {
  if (a != 64) {
    pot_flips(r, r->to_move, a / 8, a % 8, 1, r);
    r->board[a / 8][a % 8] = r->to_move;
  }
  r->to_move = 3 - r->to_move;
}

/* Perft with the conventions of pb_game_perft (a game that ends before
 * `depth` plies contributes nothing, one that ends on the last ply counts). */
static inline uint64_t pot_perft(const pot_t *r, int depth) {
  if (depth == 0) return 1;
  uint8_t acts[65];
  int n = pot_legal(r, acts);
  uint64_t sum = 0;
  for (int i = 0; i < n; i++) {
    pot_t c = *r;
    pot_play(&c, acts[i]);
    uint8_t tmp[65];
    if (pot_legal(&c, tmp) == 0)
      sum += depth == 1;
    else
      sum += pot_perft(&c, depth - 1);
  }
  return sum;
}

#endif
