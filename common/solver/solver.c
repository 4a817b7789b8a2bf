/* solver.c - the game-independent face of the solvers (solver.h):
 * Connect Four through connect4_solver.c, Tic-Tac-Toe by plain negamax. */
#include "solver.h"

#include <stdlib.h>
#include <string.h>

#include "connect4_solver.h"

struct pb_solver {
  const pb_game_t *g;
  pb_c4solver_t *c4; /* Connect Four only */
  uint64_t nodes;    /* the plain search's count */
  void (*progress)(void *ctx, uint64_t nodes); /* or NULL */
  void *progress_ctx;
};

int pb_solver_supports(const pb_game_t *g) {
  return g != NULL &&
         (g->id == PB_GAME_CONNECT4 || g->id == PB_GAME_TICTACTOE);
}

pb_solver_t *pb_solver_new(const pb_game_t *g, int tt_log2, pb_err_t *err) {
  if (g == NULL) {
    pb_err_set(err, PB_EINVAL, "solver: NULL game");
    return NULL;
  }
  if (!pb_solver_supports(g)) {
    pb_err_set(err, PB_EUNSUPP,
               "solver: there is no solver for %s (only connect4 and "
               "tictactoe)",
               g->name);
    return NULL;
  }
  pb_solver_t *s = calloc(1, sizeof *s);
  if (s == NULL) {
    pb_err_set(err, PB_ENOMEM, "solver: out of memory");
    return NULL;
  }
  s->g = g;
  if (g->id == PB_GAME_CONNECT4 &&
      (s->c4 = pb_c4solver_new(tt_log2 ? tt_log2 : 22, err)) == NULL) {
    free(s);
    return NULL;
  }
  return s;
}

void pb_solver_destroy(pb_solver_t **ps) {
  if (ps == NULL || *ps == NULL) return;
  pb_c4solver_destroy(&(*ps)->c4);
  free(*ps);
  *ps = NULL;
}

void pb_solver_set_progress(pb_solver_t *s,
                            void (*fn)(void *ctx, uint64_t nodes), void *ctx) {
  if (s == NULL) return;
  s->progress = fn;
  s->progress_ctx = ctx;
  if (s->c4 != NULL) pb_c4solver_set_tick(s->c4, fn, ctx);
}

uint64_t pb_solver_nodes(const pb_solver_t *s) {
  return s->c4 ? pb_c4solver_nodes(s->c4) : s->nodes;
}

/* ---- plain negamax (small games) -------------------------------------- */

/* Scores: a win in d plies is 1000 - d, a loss in d plies d - 1000, a draw
 * 0; so the maximum prefers quick wins and slow losses. */
enum { PLAIN_WIN = 1000 };

static int plain_negamax(pb_solver_t *s, const pb_state_t *st);

/* The score of playing action a in st, from the mover's side. */
static int plain_move(pb_solver_t *s, const pb_state_t *st, int a) {
  pb_state_t c = *st;
  int done = 0;
  float r = s->g->step(&c, a, &done);
  if (done) return r > 0 ? PLAIN_WIN - 1 : r < 0 ? 1 - PLAIN_WIN : 0;
  int v = -plain_negamax(s, &c);
  return v > 0 ? v - 1 : v < 0 ? v + 1 : 0; /* one ply further away */
}

static int plain_negamax(pb_solver_t *s, const pb_state_t *st) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = s->g->legal(st, acts), best = -2 * PLAIN_WIN;
  if ((++s->nodes & ((1u << 20) - 1)) == 0 && s->progress != NULL)
    s->progress(s->progress_ctx, s->nodes);
  for (int i = 0; i < n; i++) {
    int v = plain_move(s, st, acts[i]);
    if (v > best) best = v;
  }
  return best;
}

static pb_solve_value_t plain_value(int v) {
  pb_solve_value_t out = {0, 0};
  if (v > 0) out = (pb_solve_value_t){1, PLAIN_WIN - v};
  if (v < 0) out = (pb_solve_value_t){-1, PLAIN_WIN + v};
  return out;
}

/* ---- Connect Four --------------------------------------------------------- */

static pb_solve_value_t c4_value(int score, int n, int weak) {
  pb_solve_value_t out;
  out.result = (score > 0) - (score < 0);
  out.plies = out.result == 0 ? 0 : weak ? -1 : pb_c4solver_plies(score, n);
  return out;
}

/* ---- the interface -------------------------------------------------------- */

static int check_open(const pb_game_t *g, const pb_state_t *st,
                      pb_err_t *err) {
  float r;
  if (g->terminal(st, &r))
    return pb_err_set(err, PB_EINVAL,
                      "solver: the game is over in this position (%s); "
                      "there is nothing to solve",
                      r < 0 ? "the last move won" : "a draw");
  return 0;
}

int pb_solver_solve(pb_solver_t *s, const pb_state_t *st, int weak,
                    pb_solve_value_t *out, pb_err_t *err) {
  int rc = check_open(s->g, st, err);
  if (rc != 0) return rc;
  if (s->c4 != NULL) {
    int v = pb_c4solver_solve(s->c4, st->w[0], st->w[1], weak);
    *out = c4_value(v, s->g->ply(st), weak);
  } else {
    *out = plain_value(plain_negamax(s, st));
  }
  return 0;
}

int pb_solver_moves(pb_solver_t *s, const pb_state_t *st, int weak,
                    pb_solve_value_t *out, pb_err_t *err) {
  const pb_game_t *g = s->g;
  int rc = check_open(g, st, err);
  if (rc != 0) return rc;
  for (int a = 0; a < g->num_actions; a++)
    out[a] = (pb_solve_value_t){PB_SOLVE_ILLEGAL, -1};
  if (s->c4 != NULL) {
    int sc[7];
    pb_c4solver_moves(s->c4, st->w[0], st->w[1], weak, sc);
    int n = g->ply(st);
    for (int a = 0; a < 7; a++) {
      if (sc[a] == PB_C4SOLVER_FULL) continue;
      out[a] = c4_value(sc[a], n, weak);
      if (weak && out[a].result > 0) {
        /* A move that wins at once is known to win in 1 ply. */
        pb_state_t c = *st;
        int done = 0;
        if (g->step(&c, a, &done) > 0 && done) out[a].plies = 1;
      }
    }
    return 0;
  }
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(st, acts);
  for (int i = 0; i < n; i++)
    out[acts[i]] = plain_value(plain_move(s, st, acts[i]));
  return 0;
}
