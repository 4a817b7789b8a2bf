/* nply.c - fixed-depth negamax with alpha-beta over a linear evaluation
 * (see nply.h). Fail-soft: a node that fails low returns an upper bound at
 * most alpha, one that fails high a lower bound at least beta, and a
 * value strictly inside the window is exact, whatever order the children
 * are searched in; so ordering the nodes below the root changes neither a
 * value nor the root's move (the root keeps action order for its ties). */
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
  pb_state_t kids[PB_MAX_ACTIONS];
  float rew[PB_MAX_ACTIONS];
  int done[PB_MAX_ACTIONS];
  for (int i = 0; i < n; i++) {
    kids[i] = *s;
    done[i] = 0;
    rew[i] = g->step(&kids[i], acts[i], &done[i]);
  }
  /* Below the root's children the order decides only how much is cut:
   * 2 or more plies from the horizon the children are searched best first
   * by the evaluation one ply down (ties in action order). */
  int ord[PB_MAX_ACTIONS];
  for (int i = 0; i < n; i++) ord[i] = i;
  if (depth >= 2 && n > 1) {
    double key[PB_MAX_ACTIONS];
    for (int i = 0; i < n; i++) {
      if (done[i]) {
        key[i] = rew[i];
        continue;
      }
      st->evals++;
      key[i] = -pb_linear_value(lin, &kids[i]);
    }
    for (int i = 1; i < n; i++) { /* insertion sort: stable, n is small */
      int k = ord[i], j = i;
      for (; j > 0 && key[ord[j - 1]] < key[k]; j--) ord[j] = ord[j - 1];
      ord[j] = k;
    }
  }
  double best = -INFINITY;
  for (int i = 0; i < n; i++) {
    int k = ord[i];
    double v = done[k] ? (double)rew[k]
                       : -search(lin, &kids[k], depth - 1, -beta, -alpha, st);
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
