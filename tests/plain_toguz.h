/* plain_toguz.h - a deliberately plain Toguz Kumalak engine: absolute
 * sides, a hole at a time, the rules as common/games/toguz.c states them.
 * tests/test_toguz.c checks the game against it position by position;
 * bench/bench_games.c measures the game against it. */
#ifndef PB_PLAIN_TOGUZ_H
#define PB_PLAIN_TOGUZ_H

#include <stdint.h>
#include <string.h>


typedef struct {
  int holes[2][9]; /* [player][hole - 1]; player 0 = South, moves first */
  int kazna[2];
  int tuz[2];      /* tuz[p] = the hole number on 1 - p's side that p owns */
  int to_move;
  int over;
} ptk_t;

static inline void ptk_reset(ptk_t *r) {
  memset(r, 0, sizeof *r);
  for (int p = 0; p < 2; p++)
    for (int h = 0; h < 9; h++) r->holes[p][h] = 9;
}

static inline int ptk_sum(const ptk_t *r, int p) {
  int n = 0;
  for (int h = 0; h < 9; h++) n += r->holes[p][h];
  return n;
}

/* Drops one stone on (side, h): a tuzdyk sends it to its owner. */
static inline void ptk_drop(ptk_t *r, int side, int h) {
  for (int q = 0; q < 2; q++)
    if (side == 1 - q && r->tuz[q] == h + 1) {
      r->kazna[q]++;
      return;
    }
  r->holes[side][h]++;
}

static inline int ptk_is_tuz(const ptk_t *r, int side, int h) {
  return r->tuz[1 - side] == h + 1;
}

/* Plays hole `h` (0..8) for the side to move; returns that side's reward
 * if the game ended (else 0) and sets *done. */
static inline int ptk_play(ptk_t *r, int h, int *done) {
  int p = r->to_move, stones = r->holes[p][h];
  r->holes[p][h] = 0;
  int side = p, idx = h;
  if (stones == 1) {
    if (++idx == 9) {
      idx = 0;
      side = 1 - side;
    }
  }
  ptk_drop(r, side, idx);
  for (int k = 1; k < stones; k++) {
    if (++idx == 9) {
      idx = 0;
      side = 1 - side;
    }
    ptk_drop(r, side, idx);
  }
  if (side == 1 - p && !ptk_is_tuz(r, side, idx)) {
    int c = r->holes[side][idx];
    if (c % 2 == 0) {
      r->kazna[p] += c;
      r->holes[side][idx] = 0;
    } else if (c == 3 && r->tuz[p] == 0 && idx != 8 &&
               r->tuz[1 - p] != idx + 1) {
      r->tuz[p] = idx + 1;
      r->kazna[p] += 3;
      r->holes[side][idx] = 0;
    }
  }
  int reward = 0;
  *done = 0;
  if (r->kazna[p] >= 82 || r->kazna[1 - p] >= 82) {
    *done = 1;
    reward = r->kazna[p] >= 82 ? 1 : -1;
  } else if (ptk_sum(r, 1 - p) == 0) {
    r->kazna[p] += ptk_sum(r, p);
    for (int i = 0; i < 9; i++) r->holes[p][i] = 0;
    *done = 1;
    reward = r->kazna[p] >= 82 ? 1 : r->kazna[p] == 81 ? 0 : -1;
  }
  r->over = *done;
  r->to_move = 1 - p;
  return reward;
}

/* The holes the side to move may play, in increasing order; 0 once the
 * game is over. */
static inline int ptk_legal(const ptk_t *r, uint8_t *acts) {
  if (r->over) return 0;
  int n = 0;
  for (int h = 0; h < 9; h++)
    if (r->holes[r->to_move][h] > 0) acts[n++] = (uint8_t)h;
  return n;
}

/* Perft with the conventions of pb_game_perft. */
static inline uint64_t ptk_perft(const ptk_t *r, int depth) {
  if (depth == 0) return 1;
  uint8_t acts[9];
  int n = ptk_legal(r, acts);
  uint64_t sum = 0;
  for (int i = 0; i < n; i++) {
    ptk_t c = *r;
    int done = 0;
    ptk_play(&c, acts[i], &done);
    sum += done ? depth == 1 : ptk_perft(&c, depth - 1);
  }
  return sum;
}

#endif
