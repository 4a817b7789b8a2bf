/* cmd_perft.c - `probs perft`: count move sequences, the rules' regression
 * check (known answers are listed at pb_game_perft in common/games/game.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmds.h"
#include "game.h"
#include "opts.h"

static void perft_usage(FILE *f) {
  fprintf(f,
          "usage: probs perft [--game NAME] --depth N [--position MOVES]\n"
          "  --game NAME       %s (default connect4)\n"
          "  --depth N         plies to count, 1..42\n"
          "  --position MOVES  start after these moves (connect4: \"4453\")\n"
          "Prints the count for each depth 1..N; the last line is the count "
          "at depth N alone.\n",
          pb_game_names());
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int pb_cmd_perft(int argc, char **argv) {
  const char *game = "connect4", *position = "", *depth_s = NULL;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("game", 0, &game),
                                PB_OPTS_VALUE("depth", 0, &depth_s),
                                PB_OPTS_VALUE("position", 0, &position)};
  const pb_opts_t cl = {.prog = "probs perft",
                        .usage = perft_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  const pb_game_t *g = pb_game_by_name(game);
  if (g == NULL) {
    fprintf(stderr, "probs perft: unknown game '%s' (known: %s)\n", game,
            pb_game_names());
    return 2;
  }
  if (depth_s == NULL) {
    fprintf(stderr, "probs perft: --depth is required\n");
    perft_usage(stderr);
    return 2;
  }
  char *end = NULL;
  errno = 0;
  long depth = strtol(depth_s, &end, 10);
  if (errno != 0 || end == depth_s || *end != '\0' || depth < 1 || depth > 42) {
    fprintf(stderr, "probs perft: bad --depth '%s' (expected 1..42)\n",
            depth_s);
    return 2;
  }
  pb_state_t s;
  pb_err_t err;
  pb_err_clear(&err);
  if (g->parse(&s, position, &err) < 0) {
    fprintf(stderr, "probs perft: bad --position: %s\n", err.msg);
    return 2;
  }
  char board[256];
  g->render(&s, board, sizeof board);
  printf("%s after \"%s\" (ply %d):\n%s", g->name, position, g->ply(&s), board);
  uint64_t count = 0;
  for (int d = 1; d <= depth; d++) {
    double t0 = now_s();
    count = pb_game_perft(g, &s, d);
    double dt = now_s() - t0;
    printf("depth %2d: %14llu  %8.3f s  %8.1f M/s\n", d,
           (unsigned long long)count, dt,
           dt > 0 ? (double)count / dt * 1e-6 : 0.0);
    fflush(stdout);
  }
  printf("%llu\n", (unsigned long long)count);
  return 0;
}
