/* probs testset - makes a solved test set (common/play/accuracy.h); the shipped
 * ones come from scripts/make-testsets.sh. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accuracy.h"
#include "args.h"
#include "cmds.h"
#include "entry.h"
#include "game.h"
#include "log.h"
#include "opts.h"
#include "util.h"

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs testset --game G --out FILE [--count N] [--min-ply A]\n"
          "                     [--max-ply B] [--seed S] [--players LIST]\n"
          "                     [--threads T] [--tt-log2 K]\n"
          "  Plays games between mixed-strength players, samples positions at\n"
          "  plies A..B (equal shares per ply) where the choice of move\n"
          "  matters, labels every move with the solver and writes the set\n"
          "  (defaults: --count 1000 --min-ply 6 --max-ply 36 --seed 1).\n");
}

int pb_cmd_testset(int argc, char **argv) {
  enum { O_GAME, O_OUT, O_COUNT, O_MIN, O_MAX, O_SEED, O_PLAYERS, O_THREADS,
         O_TT, O_N };
  const char *val[O_N] = {"connect4", NULL, "1000", "6", "36",
                          "1",        NULL, "0",    "22"};
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("game", 0, &val[O_GAME]),
                                PB_OPTS_VALUE("out", 0, &val[O_OUT]),
                                PB_OPTS_VALUE("count", 0, &val[O_COUNT]),
                                PB_OPTS_VALUE("min-ply", 0, &val[O_MIN]),
                                PB_OPTS_VALUE("max-ply", 0, &val[O_MAX]),
                                PB_OPTS_VALUE("seed", 0, &val[O_SEED]),
                                PB_OPTS_VALUE("players", 0, &val[O_PLAYERS]),
                                PB_OPTS_VALUE("threads", 0, &val[O_THREADS]),
                                PB_OPTS_VALUE("tt-log2", 0, &val[O_TT])};
  const pb_opts_t cl = {.prog = "probs testset",
                        .usage = usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  const pb_game_t *g = pb_game_by_name(val[O_GAME]);
  if (g == NULL) {
    fprintf(stderr, "probs testset: unknown game '%s' (known: %s)\n",
            val[O_GAME], pb_game_names());
    return 2;
  }
  long count, lo, hi, seed, threads, tt;
  if (val[O_OUT] == NULL || pb_cli_long(val[O_COUNT], 1, 1000000, &count) ||
      pb_cli_long(val[O_MIN], 0, 127, &lo) ||
      pb_cli_long(val[O_MAX], lo, 127, &hi) ||
      pb_cli_long(val[O_SEED], 0, 0x7fffffffL, &seed) ||
      pb_cli_long(val[O_THREADS], 0, 256, &threads) ||
      pb_cli_long(val[O_TT], 10, 30, &tt)) {
    fprintf(stderr,
            "probs testset: need --out FILE, --count 1..1e6, 0 <= --min-ply "
            "<= --max-ply <= 127, --threads 0..256, --tt-log2 10..30\n");
    usage(stderr);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_log_t *log = pb_log_new("testset", NULL, PB_LOG_INFO, &err);
  pb_entry_signals(on_signal);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", val[O_OUT], (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (f == NULL) {
    fprintf(stderr, "probs testset: cannot create %s\n", tmp);
    pb_log_destroy(&log);
    return 1;
  }
  pb_testgen_opts_t o = {g, (int)count, (int)lo, (int)hi, (uint64_t)seed,
                         (int)threads, val[O_PLAYERS], (int)tt, 0,
                         &stop_flag, log};
  int rc = pb_testgen_run(&o, f, &err);
  if (fclose(f) != 0 && rc == 0)
    rc = pb_err_set(&err, PB_EIO, "cannot write %s", tmp);
  if (rc == 0 && rename(tmp, val[O_OUT]) != 0)
    rc = pb_err_set(&err, PB_EIO, "cannot rename %s to %s", tmp, val[O_OUT]);
  if (rc != 0) {
    remove(tmp);
    fprintf(stderr, "probs testset: %s\n", err.msg);
  }
  pb_log_destroy(&log);
  return rc == 0 ? 0 : rc == PB_EINVAL || rc == PB_EUNSUPP ? 2 : 1;
}
