/* linear.c - the linear evaluation of linear.h: each game's features, the
 * value, and the plane weights of the equivalent network layer.
 *
 * Workload: the leaves of n-ply searches, tens of thousands a move; one
 * encode and one dot product of at most 320 terms each, no allocation. */
#include "linear.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

const char *pb_linear_games(void) {
  return "othello, connect4, toguz";
}

static int inputs(const pb_game_t *g) {
  return g->planes * g->height * g->width;
}

int pb_linear_init(pb_linear_t *lin, const pb_game_t *g, pb_err_t *err) {
  memset(lin, 0, sizeof *lin);
  lin->g = g;
  const int n = inputs(g);
  if (g->id == PB_GAME_OTHELLO && g->planes >= 2) {
    lin->kind = PB_LINEAR_WPC;
    lin->n_features = g->height * g->width;
    return 0;
  }
  if ((g->id == PB_GAME_CONNECT4 || g->id == PB_GAME_TOGUZ) &&
      n <= PB_LINEAR_MAX_FEATURES) {
    lin->kind = PB_LINEAR_PLANES;
    lin->n_features = n;
    return 0;
  }
  lin->g = NULL;
  return pb_err_set(err, PB_EUNSUPP,
                    "algorithm td has no features for game '%s' (games with "
                    "features: %s)",
                    g->name, pb_linear_games());
}

void pb_linear_features(const pb_linear_t *lin, const pb_state_t *s, float *x) {
  float in[PB_LINEAR_MAX_INPUTS];
  lin->g->encode(s, in);
  if (lin->kind == PB_LINEAR_WPC) {
    const int n = lin->n_features;
    for (int i = 0; i < n; i++) x[i] = in[i] - in[n + i];
  } else {
    memcpy(x, in, (size_t)lin->n_features * sizeof *x);
  }
}

double pb_linear_raw(const pb_linear_t *lin, const pb_state_t *s) {
  if (lin->kind == PB_LINEAR_WPC && lin->n_features == 64) {
    /* Othello's state: w[0] the mover's discs, w[1] the opponent's
     * (common/games/othello.c). The squares in increasing order, as the loop
     * below adds them, so both give the same double. */
    const uint64_t me = s->w[0], opp = s->w[1];
    double f = lin->bias;
    for (uint64_t m = me | opp; m; m &= m - 1) {
      int i = __builtin_ctzll(m);
      f += (me >> i) & 1 ? (double)lin->w[i] : -(double)lin->w[i];
    }
    return f;
  }
  float x[PB_LINEAR_MAX_FEATURES];
  pb_linear_features(lin, s, x);
  double f = lin->bias;
  for (int i = 0; i < lin->n_features; i++) f += (double)lin->w[i] * x[i];
  return f;
}

double pb_linear_value(const pb_linear_t *lin, const pb_state_t *s) {
  return tanh(pb_linear_raw(lin, s));
}

void pb_linear_to_planes(const pb_linear_t *lin, float *W, float *b) {
  const int n = inputs(lin->g);
  memset(W, 0, (size_t)n * sizeof *W);
  if (lin->kind == PB_LINEAR_WPC) {
    const int c = lin->n_features;
    for (int i = 0; i < c; i++) {
      W[i] = lin->w[i];
      W[c + i] = -lin->w[i];
    }
  } else {
    memcpy(W, lin->w, (size_t)lin->n_features * sizeof *W);
  }
  *b = lin->bias;
}

void pb_linear_from_planes(pb_linear_t *lin, const float *W, float b) {
  if (lin->kind == PB_LINEAR_WPC) {
    const int c = lin->n_features;
    for (int i = 0; i < c; i++) lin->w[i] = (W[i] - W[c + i]) / 2;
  } else {
    memcpy(lin->w, W, (size_t)lin->n_features * sizeof *W);
  }
  lin->bias = b;
}
