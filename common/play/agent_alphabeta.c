/* agent_alphabeta.c - the alphabeta:D agent of agent.h: alpha-beta
 * negamax to depth D with a heuristic at the horizon for each game it
 * knows (Connect Four and Tic-Tac-Toe: windows; Othello: a weighted piece
 * counter; Toguz Kumalak: the kazna difference).
 *
 * Workload: a baseline opponent in matches and evaluation. The search
 * recurses on stack copies of the position; nothing is allocated once the
 * agent exists. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_impl.h"

enum { AB_MAX_WINDOWS = 80, AB_WIN = 1000000, AB_INF = 2000000 };

/* The horizon heuristic, by game. */
enum { AB_HEUR_WINDOWS = 0, AB_HEUR_WPC = 1, AB_HEUR_MATERIAL = 2 };

typedef struct {
  pb__agent_base_t base;
  int heur;                     /* AB_HEUR_* */
  int nwin;                     /* number of windows */
  int wlen;                     /* stones in a window (4 or 3) */
  int weight[5];                /* score of a window by its stone count */
  uint64_t win[AB_MAX_WINDOWS]; /* the windows, as bit masks */
  const int *wpc;               /* AB_HEUR_WPC: weight of each square */
  int norder;
  uint8_t order[PB_MAX_ACTIONS]; /* actions, most promising first */
  int proven; /* the last act's search: +1 a win, -1 a loss, 0 neither */
} ab_t;

/* Othello's weighted piece counter: the heuristic player of Lucas and
 * Runarsson's TD-learning study (../shared/papers/004, Fig. 3), weights
 * times 100; corners 1.00, the squares next to them -0.25. Symmetric, so
 * the square order (a1 first, row by row) does not matter. */
static const int ab_othello_wpc[64] = {
    100, -25, 10, 5, 5, 10, -25, 100, /* row 1 */
    -25, -25, 1,  1, 1, 1,  -25, -25, /* row 2 */
    10,  1,   5,  2, 2, 5,  1,   10,  /* row 3 */
    5,   1,   2,  1, 1, 2,  1,   5,   /* row 4 */
    5,   1,   2,  1, 1, 2,  1,   5,   /* row 5 */
    10,  1,   5,  2, 2, 5,  1,   10,  /* row 6 */
    -25, -25, 1,  1, 1, 1,  -25, -25, /* row 7 */
    100, -25, 10, 5, 5, 10, -25, 100, /* row 8 */
};

/* Heuristic from the side to move. Windows (Connect Four, Tic-Tac-Toe):
 * windows that only one side occupies score for that side, more for
 * fuller ones. WPC (Othello: w[0] the mover's discs, w[1] the
 * opponent's): the sum of the weights of the mover's squares minus the
 * opponent's. Material (Toguz Kumalak): the kazna difference. */
static int ab_eval(const ab_t *ab, const pb_state_t *s) {
  if (ab->heur == AB_HEUR_MATERIAL) return ab->base.g->material(s);
  if (ab->heur == AB_HEUR_WPC) {
    int score = 0;
    for (uint64_t m = s->w[0]; m; m &= m - 1)
      score += ab->wpc[__builtin_ctzll(m)];
    for (uint64_t m = s->w[1]; m; m &= m - 1)
      score -= ab->wpc[__builtin_ctzll(m)];
    return score;
  }
  uint64_t me = s->w[0], opp = s->w[0] ^ s->w[1];
  int score = 0;
  for (int i = 0; i < ab->nwin; i++) {
    uint64_t m = ab->win[i];
    int a = __builtin_popcountll(me & m), o = __builtin_popcountll(opp & m);
    if (o == 0)
      score += ab->weight[a];
    else if (a == 0)
      score -= ab->weight[o];
  }
  return score;
}

/* The value of a move that ended the game with the mover's reward r,
 * `depth` plies before the horizon: a win sooner (more depth left) is
 * worth more, a loss later less bad. */
static int ab_end_value(float r, int depth) {
  return r > 0.0f ? AB_WIN + depth : r < 0.0f ? -AB_WIN - depth : 0;
}

/* Marks the legal actions in ok[0..num_actions). */
static void ab_mark(const ab_t *ab, const uint8_t *legal, int n,
                    uint8_t *ok) {
  memset(ok, 0, (size_t)ab->base.g->num_actions);
  for (int i = 0; i < n; i++) ok[legal[i]] = 1;
}

/* Fail-soft alpha-beta from the non-terminal position s. */
static int ab_negamax(const ab_t *ab, const pb_state_t *s, int depth, int alpha,
                      int beta) {
  const pb_game_t *g = ab->base.g;
  if (depth == 0) return ab_eval(ab, s);
  uint8_t legal[PB_MAX_ACTIONS], ok[PB_MAX_ACTIONS];
  int n = g->legal(s, legal);
  ab_mark(ab, legal, n, ok);
  int best = -AB_INF;
  for (int i = 0; i < ab->norder; i++) {
    int a = ab->order[i];
    if (!ok[a]) continue;
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, a, &done);
    int v = done ? ab_end_value(r, depth)
                 : -ab_negamax(ab, &c, depth - 1, -beta,
                               -(alpha > best ? alpha : best));
    if (v > best) {
      best = v;
      if (best >= beta) break;
    }
  }
  return best;
}

static int alphabeta_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                         int n, pb_err_t *err) {
  (void)err;
  ab_t *ab = impl;
  const pb_game_t *g = ab->base.g;
  int depth = ab->base.depth;
  uint8_t ok[PB_MAX_ACTIONS];
  ab_mark(ab, legal, n, ok);
  pb__agent_ties_t t = {.n = 0, .best = -AB_INF};
  for (int i = 0; i < ab->norder; i++) {
    int a = ab->order[i];
    if (!ok[a]) continue;
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, a, &done);
    /* Window (best - 1, inf): exact values for moves that tie the best. */
    int v = done ? ab_end_value(r, depth)
                 : -ab_negamax(ab, &c, depth - 1, -AB_INF, -(t.best - 1));
    pb__agent_ties_add(&t, v, a);
  }
  ab->proven = t.best >= AB_WIN ? 1 : t.best <= -AB_WIN ? -1 : 0;
  return pb__agent_ties_pick(&t, &ab->base.rng);
}

/* A proven result is a value (+1, -1); the heuristic's scores are not. */
static int alphabeta_info(const void *impl, int i, pb_agent_info_t *out) {
  const ab_t *ab = impl;
  if (i == 0 && ab->proven != 0) {
    out->valued = 1;
    out->value = (float)ab->proven;
  }
  return 0;
}

static const pb_agent_vtable_t alphabeta_vt = {
    alphabeta_act, pb__agent_base_reseed, pb__agent_base_destroy, NULL,
    alphabeta_info};

/* Adds every window of `len` cells in a width x height grid; cell (c, r)
 * is bit c * stride + r (stride 7: Connect Four's columns) or, with stride
 * 0, bit r * width + c (reading order: Tic-Tac-Toe). */
static void ab_windows(ab_t *ab, int width, int height, int len, int stride) {
  static const int dirs[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};
  ab->nwin = 0;
  ab->wlen = len;
  for (int d = 0; d < 4; d++)
    for (int c0 = 0; c0 < width; c0++)
      for (int r0 = 0; r0 < height; r0++) {
        int c1 = c0 + dirs[d][0] * (len - 1), r1 = r0 + dirs[d][1] * (len - 1);
        if (c1 < 0 || c1 >= width || r1 < 0 || r1 >= height) continue;
        uint64_t m = 0;
        for (int k = 0; k < len; k++) {
          int c = c0 + dirs[d][0] * k, r = r0 + dirs[d][1] * k;
          m |= 1ULL << (stride ? c * stride + r : r * width + c);
        }
        if (ab->nwin < AB_MAX_WINDOWS) ab->win[ab->nwin++] = m;
      }
}

/* Orders actions by distance of their cell from the center of the board;
 * for column games (Connect Four) an action is a column. */
static void ab_order(ab_t *ab, int width, int height, int columns) {
  const pb_game_t *g = ab->base.g;
  ab->norder = g->num_actions;
  int key[PB_MAX_ACTIONS];
  for (int a = 0; a < g->num_actions; a++) {
    int c = columns ? a : a % width, r = columns ? 0 : a / width;
    int dc = 2 * c - (width - 1), dr = columns ? 0 : 2 * r - (height - 1);
    key[a] = dc * dc + dr * dr;
    ab->order[a] = (uint8_t)a;
  }
  for (int i = 1; i < ab->norder; i++) /* insertion sort, stable */
    for (int j = i; j > 0 && key[ab->order[j]] < key[ab->order[j - 1]]; j--) {
      uint8_t t = ab->order[j];
      ab->order[j] = ab->order[j - 1];
      ab->order[j - 1] = t;
    }
}

pb_agent_t *pb__agent_alphabeta_new(const pb_game_t *g, const char *arg,
                                    uint64_t seed, pb_err_t *err) {
  int depth = 0;
  if (pb__agent_parse_int_arg("alphabeta", arg, 1, 12, &depth, err) < 0)
    return NULL;
  if (g->id != PB_GAME_CONNECT4 && g->id != PB_GAME_TICTACTOE &&
      g->id != PB_GAME_OTHELLO && g->id != PB_GAME_TOGUZ) {
    pb_err_set(err, PB_EUNSUPP,
               "agent: alphabeta has no heuristic for %s "
               "(only connect4, tictactoe, othello and toguz)",
               g->name);
    return NULL;
  }
  ab_t *ab = calloc(1, sizeof *ab);
  if (ab == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  ab->base.g = g;
  ab->base.depth = depth;
  pb__agent_base_reseed(&ab->base, seed);
  if (g->id == PB_GAME_CONNECT4) {
    ab_windows(ab, 7, 6, 4, 7);
    ab_order(ab, 7, 6, 1);
    static const int w4[5] = {0, 1, 5, 50, 0};
    memcpy(ab->weight, w4, sizeof w4);
  } else if (g->id == PB_GAME_TICTACTOE) {
    ab_windows(ab, 3, 3, 3, 0);
    ab_order(ab, 3, 3, 0);
    static const int w3[5] = {0, 1, 8, 0, 0};
    memcpy(ab->weight, w3, sizeof w3);
  } else if (g->id == PB_GAME_TOGUZ) {
    ab->heur = AB_HEUR_MATERIAL;
    ab->norder = g->num_actions;
    for (int a = 0; a < g->num_actions; a++) ab->order[a] = (uint8_t)a;
  } else {
    /* Othello: squares by falling weight (corners first), the pass last. */
    ab->heur = AB_HEUR_WPC;
    ab->wpc = ab_othello_wpc;
    ab->norder = g->num_actions;
    for (int a = 0; a < g->num_actions; a++) ab->order[a] = (uint8_t)a;
    for (int i = 1; i < 64; i++) /* insertion sort, stable */
      for (int j = i; j > 0 && ab_othello_wpc[ab->order[j]] >
                                   ab_othello_wpc[ab->order[j - 1]];
           j--) {
        uint8_t t = ab->order[j];
        ab->order[j] = ab->order[j - 1];
        ab->order[j - 1] = t;
      }
  }
  char name[32];
  pb__agent_spec_name(name, sizeof name, "alphabeta", depth);
  return pb_agent_wrap(g, &alphabeta_vt, ab, name, err);
}
