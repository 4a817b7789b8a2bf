/* probs accuracy - the share of optimal moves of agents on a solved test
 * set (common/play/accuracy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accuracy.h"
#include "agent.h"
#include "args.h"
#include "bounds.h"
#include "cmds.h"
#include "game.h"
#include "model.h"
#include "opts.h"
#include "progress.h"
#include "testset.h"
#include "util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs accuracy [--model CKPT] [--agent SPEC]... [--game G]\n"
          "                      [--testset PATH] [--seed S] [--threads T]\n"
          "  Plays each agent once in every position of a solved test set\n"
          "  and prints the share of its moves that keep the position's best\n"
          "  outcome (win/draw/loss with perfect play).\n"
          "  --model CKPT     a checkpoint: its greedy Q (checkpoint:CKPT) is\n"
          "                   measured when no --agent is given, and the\n"
          "                   agent kinds checkpoint, value and beam may then\n"
          "                   leave out the path: --agent value,\n"
          "                   --agent beam,E=200,M=8\n"
          "  --agent SPEC     any agent (repeatable): random, lookahead:3,\n"
          "                   alphabeta:4, beam:CKPT,E=200,M=8, ...\n"
          "  --game G         the game when no checkpoint tells (default\n"
          "                   connect4)\n"
          "  --testset PATH   a test set file (default: the shipped one)\n"
          "  --seed S         seed of the random choices (default 1)\n"
          "  --threads T      threads for agents without batches (0 = all)\n"
          "  --by-ply N       also the share per ply range of N plies\n");
}

/* The game of the run: the checkpoint's when there is a --model (then
 * --game, if given, must agree), else --game (default connect4). Returns
 * it, or NULL after saying why. */
static const pb_game_t *find_game(const char *model, const char *game,
                                  pb_err_t *err) {
  const pb_game_t *g = NULL;
  if (model != NULL) {
    /* The checkpoint tells the game. */
    pb_config_t cfg;
    pb_model_t *l = pb_model_open(model, "cpu", &cfg, err);
    if (l == NULL) {
      fprintf(stderr, "probs accuracy: --model: %s\n", err->msg);
      return NULL;
    }
    g = pb_model_game(l);
    pb_model_destroy(&l);
    if (game != NULL && strcmp(game, g->name) != 0) {
      fprintf(stderr, "probs accuracy: --game %s, but %s is a %s checkpoint\n",
              game, model, g->name);
      return NULL;
    }
  } else {
    g = pb_game_by_name(game ? game : "connect4");
    if (g == NULL) {
      fprintf(stderr, "probs accuracy: unknown game '%s' (known: %s)\n", game,
              pb_game_names());
      return NULL;
    }
  }
  return g;
}

/* The share of optimal moves per range of by_ply plies, from the moves
 * the agent chose in each position of ts. */
static void print_by_ply(const pb_game_t *g, const pb_testset_t *ts,
                         const int *moves, long by_ply) {
  size_t n = pb_testset_count(ts);
  /* positions are grouped by ply range */
  int lo = 1 << 30, hi = -1;
  for (size_t i = 0; i < n; i++) {
    int p = g->ply(pb_testset_state(ts, i));
    if (p < lo) lo = p;
    if (p > hi) hi = p;
  }
  for (int b = lo; b <= hi; b += (int)by_ply) {
    size_t cnt = 0, okc = 0;
    for (size_t i = 0; i < n; i++) {
      int p = g->ply(pb_testset_state(ts, i));
      if (p < b || p >= b + by_ply) continue;
      cnt++;
      okc += (size_t)pb_testset_optimal(ts, i, moves[i]);
    }
    if (cnt > 0)
      printf("    plies %2d-%-2d %5zu/%-5zu %6.3f\n", b, b + (int)by_ply - 1,
             okc, cnt, (double)okc / (double)cnt);
  }
}

/* The meter of one agent's positions (progress.h). */
typedef struct {
  pb_meter_t m;
  const char *spec;
} acc_meter_t;

static void accuracy_progress(void *ctx, size_t done, size_t total) {
  (void)total;
  acc_meter_t *am = ctx;
  pb_meter_update(&am->m, (double)done, pb_now(), am->spec);
}

int pb_cmd_accuracy(int argc, char **argv) {
  const char *model = NULL, *game = NULL, *tspath = NULL;
  const char *agents[32], *seed_s = "1", *threads_s = "0", *by_ply_s = NULL;
  int nagents = 0;
  long seed = 1, threads = 0, by_ply = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("model", 0, &model),
                                PB_OPTS_LIST("agent", 0, agents, &nagents, 32),
                                PB_OPTS_VALUE("game", 0, &game),
                                PB_OPTS_VALUE("testset", 0, &tspath),
                                PB_OPTS_VALUE("seed", 0, &seed_s),
                                PB_OPTS_VALUE("threads", 0, &threads_s),
                                PB_OPTS_VALUE("by-ply", 0, &by_ply_s)};
  const pb_opts_t cl = {.prog = "probs accuracy",
                        .usage = usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  const struct {
    const char *name, *val;
    long lo, hi, *out;
  } nums[] = {{"--seed", seed_s, 0, 0x7fffffffL, &seed},
              {"--threads", threads_s, 0, PB_MAX_THREADS, &threads},
              {"--by-ply", by_ply_s, 1, 100, &by_ply}};
  for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++)
    if (nums[k].val != NULL &&
        pb_cli_long(nums[k].val, nums[k].lo, nums[k].hi, nums[k].out) != 0)
      return pb_opts_fail(&cl, "bad option '%s %s'", nums[k].name, nums[k].val);
  pb_err_t err;
  pb_err_clear(&err);
  const pb_game_t *g = find_game(model, game, &err);
  if (g == NULL) return 2;
  if (nagents == 0) {
    if (model == NULL) {
      fprintf(stderr, "probs accuracy: give --model CKPT or --agent SPEC\n");
      usage(stderr);
      return 2;
    }
    agents[nagents++] = "checkpoint";
  }
  pb_testset_t *ts = pb_testset_open(tspath, g, &err);
  if (ts == NULL) {
    fprintf(stderr, "probs accuracy: %s\n", err.msg);
    return 2;
  }
  printf("test set %s: %zu positions of %s\n", pb_testset_name(ts),
         pb_testset_count(ts), g->name);
  /* The agent column as wide as the longest spec, so that long specs
   * (paths, settings) keep the columns aligned (issue 48). */
  int width = 5;
  for (int k = 0; k < nagents; k++) {
    char spec[4400];
    pb_agent_spec_with_model(agents[k], model, spec, sizeof spec);
    if ((int)strlen(spec) > width) width = (int)strlen(spec);
  }
  printf("%-*s %11s %6s %7s %11s\n", width, "agent", "optimal", "share",
         "time", "evals/move");
  int rc = 0;
  for (int k = 0; k < nagents && rc == 0; k++) {
    char spec[4400];
    pb_agent_spec_with_model(agents[k], model, spec, sizeof spec);
    pb_accuracy_t acc;
    size_t n = pb_testset_count(ts);
    int *moves = malloc(n * sizeof *moves);
    if (moves == NULL) {
      fprintf(stderr, "probs accuracy: out of memory\n");
      rc = PB_ENOMEM;
      break;
    }
    acc_meter_t am = {.spec = spec};
    pb_meter_stderr(&am.m, "accuracy", "positions", (double)n, pb_now());
    rc = pb_accuracy_run(ts, spec, (uint64_t)seed, (int)threads, NULL,
                         accuracy_progress, &am, &acc, moves, &err);
    if (rc == 0)
      pb_meter_end(&am.m, (double)n, pb_now(), spec, 0);
    else if (am.m.shown)
      fputc('\n', stderr); /* the bar's line */
    if (rc != 0) {
      fprintf(stderr, "probs accuracy: %s\n", err.msg);
      free(moves);
      break;
    }
    printf("%-*s %5zu/%-5zu %6.3f %6.1fs %11.1f\n", width, spec,
           acc.optimal, acc.positions, acc.share, acc.seconds,
           acc.evals_per_move);
    if (by_ply > 0) print_by_ply(g, ts, moves, by_ply);
    free(moves);
    fflush(stdout);
  }
  pb_testset_destroy(&ts);
  return rc == 0 ? 0 : rc == PB_EINVAL || rc == PB_EMISMATCH ? 2 : 1;
}
