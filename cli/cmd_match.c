/* cmd_match.c - `probs match`: two agents play a series of games; prints
 * the score and the Elo difference of A over B. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "args.h"
#include "cmds.h"
#include "elo.h"
#include "game.h"
#include "match.h"
#include "opts.h"
#include "util.h"

static void match_usage(FILE *f) {
  char kinds[PB_AGENT_KINDS_MAX];
  pb_agent_kinds(kinds, sizeof kinds);
  fprintf(f,
          "usage: probs match [--game NAME] --a SPEC --b SPEC [--games N]\n"
          "                   [--seed S] [--threads T] [--opening-random K]\n"
          "                   [--max-turns M]\n"
          "  --game NAME          %s (default connect4)\n"
          "  --a SPEC, --b SPEC   agents: %s\n"
          "  --games N            games to play, A first in even games "
          "(default 100)\n"
          "  --seed S             the match's seed (default 1)\n"
          "  --threads T          0 = all CPUs (default 0); results do not "
          "depend on T\n"
          "  --opening-random K   first K plies uniformly random (default 0)\n"
          "  --max-turns M        stop unfinished games at M plies as draws "
          "(default 0 = the game's longest, 1000 in toguz)\n"
          "The last line reads: result: W=.. D=.. L=.. score=.. elo=+.. "
          "[lo, hi]\n",
          pb_game_names(), kinds);
}

int pb_cmd_match(int argc, char **argv) {
  enum { O_GAME, O_A, O_B, O_GAMES, O_SEED, O_THREADS, O_OPEN, O_MAXT, O_N };
  const char *val[O_N] = {"connect4", NULL, NULL, "100", "1", "0", "0", "0"};
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("game", 0, &val[O_GAME]),
      PB_OPTS_VALUE("a", 0, &val[O_A]),
      PB_OPTS_VALUE("b", 0, &val[O_B]),
      PB_OPTS_VALUE("games", 0, &val[O_GAMES]),
      PB_OPTS_VALUE("seed", 0, &val[O_SEED]),
      PB_OPTS_VALUE("threads", 0, &val[O_THREADS]),
      PB_OPTS_VALUE("opening-random", 0, &val[O_OPEN]),
      PB_OPTS_VALUE("max-turns", 0, &val[O_MAXT])};
  const pb_opts_t cl = {.prog = "probs match",
                        .usage = match_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);

  const pb_game_t *g = pb_game_by_name(val[O_GAME]);
  if (g == NULL) {
    fprintf(stderr, "probs match: unknown game '%s' (known: %s)\n", val[O_GAME],
            pb_game_names());
    return 2;
  }
  if (val[O_A] == NULL || val[O_B] == NULL) {
    fprintf(stderr, "probs match: --a and --b are required\n");
    match_usage(stderr);
    return 2;
  }
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = val[O_A];
  o.b_spec = val[O_B];
  long games, threads, open, maxt;
  if (pb_cli_long(val[O_GAMES], 1, 100000000, &games) < 0 ||
      pb_cli_long(val[O_THREADS], 0, 256, &threads) < 0 ||
      pb_cli_long(val[O_OPEN], 0, 1000, &open) < 0 ||
      pb_cli_long(val[O_MAXT], 0, 100000, &maxt) < 0) {
    fprintf(stderr,
            "probs match: bad number in --games (1..1e8), --threads "
            "(0..256), --opening-random (0..1000) or --max-turns "
            "(0..100000)\n");
    match_usage(stderr);
    return 2;
  }
  const char *ss = val[O_SEED];
  unsigned long long seed;
  if (pb_cli_seed(ss, &seed) != 0) {
    fprintf(stderr, "probs match: bad --seed '%s' (expected 0..2^64-1)\n", ss);
    match_usage(stderr);
    return 2;
  }
  o.games = (int)games;
  o.threads = (int)threads;
  o.opening_random_moves = (int)open;
  o.max_turns = (int)maxt;
  o.seed = (uint64_t)seed;

  /* A bad spec is a usage error, not a failed match. */
  pb_err_t err;
  pb_err_clear(&err);
  for (int k = O_A; k <= O_B; k++) {
    pb_agent_t *probe = pb_agent_new(g, val[k], 0, &err);
    if (probe == NULL) {
      fprintf(stderr, "probs match: --%s: %s\n", k == O_A ? "a" : "b", err.msg);
      return 2;
    }
    pb_agent_destroy(&probe);
  }

  printf("%s: A = %s, B = %s, %d games, seed %llu, opening-random %d\n",
         g->name, o.a_spec, o.b_spec, o.games, seed, o.opening_random_moves);
  fflush(stdout);
  pb_match_result_t r;
  double t0 = pb_now();
  int rc = pb_match_play(g, &o, &r, &err);
  double dt = pb_now() - t0;
  if (rc < 0) {
    fprintf(stderr, "probs match: %s (%s)\n", err.msg, pb_err_name(rc));
    return 1;
  }
  double elo = 0, lo = 0, hi = 0;
  pb_elo_diff(r.wins, r.draws, r.losses, &elo, &lo, &hi);
  double score = (r.wins + 0.5 * r.draws) / r.games;
  printf("A moving first : W=%d D=%d L=%d\n", r.first_wins, r.first_draws,
         r.first_losses);
  printf("A moving second: W=%d D=%d L=%d\n", r.second_wins, r.second_draws,
         r.second_losses);
  printf("%.1f plies/game, %d capped by --max-turns, %.2f s\n",
         (double)r.plies / r.games, r.capped, dt);
  printf("result: W=%d D=%d L=%d score=%.3f elo=%+.0f [%+.0f, %+.0f]\n", r.wins,
         r.draws, r.losses, score, elo, lo, hi);
  return 0;
}
