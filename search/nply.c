/* nply.c - fixed-depth negamax with alpha-beta over a linear evaluation
 * (see nply.h). Fail-soft: a node that fails low returns an upper bound at
 * most alpha, one that fails high a lower bound at least beta, and a
 * value strictly inside the window is exact. */
#include "nply.h"

#include <math.h>

static double search(const pb_linear_t *lin, const pb_state_t *s, int depth,
                     double alpha, double beta, pb_nply_stats_t *st) {
  const pb_game_t *g = lin->g;
  st->nodes++;
  if (depth == 0) {
    st->evals++;
    return pb_linear_value(lin, s);
  }
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  if (n == 0) {
    float r = 0.0f;
    g->terminal(s, &r);
    return r;
  }
  double best = -INFINITY;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[i], &done);
    double v =
        done ? (double)r : -search(lin, &c, depth - 1, -beta, -alpha, st);
    if (v > best) best = v;
    if (best > alpha) alpha = best;
    if (alpha >= beta) break;
  }
  return best;
}

double pb_nply_value(const pb_linear_t *lin, const pb_state_t *s, int depth,
                     pb_nply_stats_t *st) {
  pb_nply_stats_t local = {0, 0};
  if (st == NULL) st = &local;
  if (depth < 0) depth = 0;
  if (depth > PB_NPLY_MAX_DEPTH) depth = PB_NPLY_MAX_DEPTH;
  float r;
  if (lin->g->terminal(s, &r)) {
    st->nodes++;
    return r;
  }
  return search(lin, s, depth, -INFINITY, INFINITY, st);
}

int pb_nply_best(const pb_linear_t *lin, const pb_state_t *s, int depth,
                 double *value, pb_nply_stats_t *st) {
  const pb_game_t *g = lin->g;
  pb_nply_stats_t local = {0, 0};
  if (st == NULL) st = &local;
  if (depth < 1 || depth > PB_NPLY_MAX_DEPTH) return PB_EINVAL;
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  if (n == 0) return PB_EINVAL;
  st->nodes++;
  double best = -INFINITY;
  int move = acts[0];
  for (int i = 0; i < n && best < 1.0; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[i], &done);
    /* The window's lower edge is the best so far: a child no better
     * comes back as a bound at most `best`, and is not taken. */
    double v =
        done ? (double)r : -search(lin, &c, depth - 1, -INFINITY, -best, st);
    if (v > best) {
      best = v;
      move = acts[i];
    }
  }
  if (value != NULL) *value = best;
  return move;
}
