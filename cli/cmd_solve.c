/* probs solve - the exact value of a position and of each of its moves. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "game.h"
#include "opts.h"
#include "progress.h"
#include "solver.h"
#include "util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs solve --game GAME --position MOVES [--weak] "
          "[--tt-log2 N]\n"
          "  Prints the exact value of the position for the side to move and\n"
          "  of each legal move: win / draw / loss with perfect play and the\n"
          "  number of plies to the end (the winner as fast as it can, the\n"
          "  loser as slowly). MOVES are in the game's notation (Connect Four:\n"
          "  columns 1-7, \"4453\"; Tic-Tac-Toe: cells 1-9); \"\" or - is the\n"
          "  start. --weak finds win/draw/loss only (much faster early in\n"
          "  Connect Four). --tt-log2 sizes the table: 2^N entries of 8 bytes\n"
          "  (default 24: 128 MiB). Games with a solver: connect4, tictactoe.\n");
}

static const char *outcome(int result) {
  return result > 0 ? "win" : result < 0 ? "loss" : "draw";
}

static void print_value(const pb_solve_value_t *v) {
  if (v->result == 0)
    printf("draw");
  else if (v->plies < 0)
    printf("%s", outcome(v->result));
  else
    printf("%s in %d %s", outcome(v->result), v->plies,
           v->plies == 1 ? "ply" : "plies");
}

/* What a move's value says beside the best one's (issue 48: a losing move
 * tagged "(optimal)" next to "value: loss in 36 plies" said not why). */
static const char *move_tag(const pb_solve_value_t *v,
                            const pb_solve_value_t *best) {
  if (v->result != best->result) return "";
  if (v->result > 0)
    return v->plies < 0 || v->plies == best->plies ? "  (optimal: wins)"
                                                     : "  (wins, not fastest)";
  if (v->result == 0) return "  (optimal: draws)";
  if (v->plies < 0) return "  (every move loses)";
  return v->plies == best->plies
             ? "  (optimal: every move loses, this one holds out longest)"
             : "  (every move loses, this one sooner)";
}

static void solve_progress(void *ctx, uint64_t nodes) {
  pb_meter_update(ctx, (double)nodes, pb_now(), NULL);
}

int pb_cmd_solve(int argc, char **argv) {
  const char *val[] = {"connect4", NULL, "24"};
  int weak = 0;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("game", 0, &val[0]), PB_OPTS_VALUE("position", 0, &val[1]),
      PB_OPTS_VALUE("tt-log2", 0, &val[2]), PB_OPTS_FLAG("weak", 0, &weak)};
  const pb_opts_t cl = {.prog = "probs solve",
                        .usage = usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int rc = pb_opts_parse(&cl, argc, argv);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  const pb_game_t *g = pb_game_by_name(val[0]);
  if (g == NULL) {
    fprintf(stderr, "probs solve: unknown game '%s' (known: %s)\n", val[0],
            pb_game_names());
    return 2;
  }
  if (!pb_solver_supports(g)) {
    fprintf(stderr,
            "probs solve: there is no solver for %s (games with one: "
            "connect4, tictactoe)\n",
            g->name);
    return 2;
  }
  if (val[1] == NULL) {
    fprintf(stderr, "probs solve: --position MOVES is required (- for the "
                    "start)\n");
    usage(stderr);
    return 2;
  }
  char *end = NULL;
  errno = 0;
  long tt = strtol(val[2], &end, 10);
  if (errno || *end || tt < 10 || tt > 30) {
    fprintf(stderr, "probs solve: --tt-log2 must be in 10..30, not '%s'\n",
            val[2]);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_state_t s;
  const char *moves = strcmp(val[1], "-") == 0 ? "" : val[1];
  if (g->parse(&s, moves, &err) != 0) {
    fprintf(stderr, "probs solve: illegal position: %s\n", err.msg);
    return 2;
  }
  float r;
  if (g->terminal(&s, &r)) {
    fprintf(stderr,
            "probs solve: the game is over in \"%s\" (%s): there is "
            "nothing to solve\n",
            val[1], r < 0 ? "the last move won" : "a draw");
    return 2;
  }
  pb_solver_t *sv = pb_solver_new(g, (int)tt, &err);
  if (sv == NULL) {
    fprintf(stderr, "probs solve: %s\n", err.msg);
    return 1;
  }
  double t0 = pb_now();
  pb_solve_value_t mv[PB_MAX_ACTIONS];
  /* Progress (progress.h): the nodes searched, every few seconds. */
  pb_meter_t meter;
  pb_meter_stderr(&meter, "solve", "nodes", 0, t0);
  pb_solver_set_progress(sv, solve_progress, &meter);
  rc = pb_solver_moves(sv, &s, weak, mv, &err);
  pb_meter_end(&meter, (double)pb_solver_nodes(sv), pb_now(), NULL, 0);
  if (rc != 0) {
    fprintf(stderr, "probs solve: %s\n", err.msg);
    pb_solver_destroy(&sv);
    return 1;
  }
  /* The position's value is its best move's (results first; among wins the
   * quickest, among losses the slowest). */
  int best = -1;
  for (int a = 0; a < g->num_actions; a++) {
    if (mv[a].result == PB_SOLVE_ILLEGAL) continue;
    if (best < 0 || mv[a].result > mv[best].result ||
        (mv[a].result == mv[best].result && mv[a].result > 0 &&
         mv[a].plies < mv[best].plies) ||
        (mv[a].result == mv[best].result && mv[a].result < 0 &&
         mv[a].plies > mv[best].plies))
      best = a;
  }
  char board[1024];
  g->render(&s, board, sizeof board);
  int ply = g->ply(&s);
  printf("%s\nposition \"%s\", ply %d, %s to move\nvalue: ", board, moves,
         ply, ply % 2 == 0 ? "X" : "O");
  print_value(&mv[best]);
  printf("\nmove  value\n");
  for (int a = 0; a < g->num_actions; a++) {
    if (mv[a].result == PB_SOLVE_ILLEGAL) continue;
    char name[16];
    g->action_name(a, name, sizeof name);
    printf("%-5s ", name);
    print_value(&mv[a]);
    printf("%s\n", move_tag(&mv[a], &mv[best]));
  }
  printf("solved in %.3f s, %llu nodes%s\n", pb_now() - t0,
         (unsigned long long)pb_solver_nodes(sv), weak ? " (weak)" : "");
  pb_solver_destroy(&sv);
  return 0;
}
