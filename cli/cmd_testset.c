/* probs testset - makes a solved test set (common/play/accuracy.h); the shipped
 * ones come from scripts/make-testsets.sh. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accuracy.h"
#include "args.h"
#include "bounds.h"
#include "cmds.h"
#include "entry.h"
#include "game.h"
#include "log.h"
#include "opts.h"
#include "solver.h"
#include "testset.h"
#include "util.h"

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs testset --game G --out FILE [--count N] [--min-ply A]\n"
          "                     [--max-ply B] [--seed S] [--players LIST]\n"
          "                     [--threads T] [--tt-log2 K]\n"
          "  Plays games between mixed-strength players, samples positions at\n"
          "  plies A..B (equal shares per ply) where the choice of move\n"
          "  matters, labels every move with the solver and writes the set.\n"
          "  Games with a solver: connect4 (defaults --count 1000 --min-ply 6\n"
          "  --max-ply 36) and tictactoe (--count 120 --min-ply 2 --max-ply\n"
          "  7); --seed 1. Fewer positions than --count (a ply that cannot\n"
          "  be filled): the set is written, and the exit status is 1.\n");
}

/* The shipped sets' settings (scripts/make-testsets.sh) as the defaults. */
typedef struct {
  const char *game, *count, *min_ply, *max_ply;
} defaults_t;

static const defaults_t *defaults_of(const pb_game_t *g) {
  static const defaults_t rows[] = {{"connect4", "1000", "6", "36"},
                                    {"tictactoe", "120", "2", "7"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (strcmp(rows[i].game, g->name) == 0) return &rows[i];
  return NULL;
}

/* Writes the set into FILE.tmp.PID, then renames it to FILE: a stopped or
 * failed run leaves what was there before. Returns the exit status. */
static int make_set(const pb_testgen_opts_t *o, const char *out) {
  pb_err_t err;
  pb_err_clear(&err);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", out, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (f == NULL) {
    fprintf(stderr, "probs testset: cannot create %s\n", tmp);
    return PB_EXIT_FAILED;
  }
  int rc = pb_testgen_run(o, f, &err);
  if (fclose(f) != 0 && rc == 0)
    rc = pb_err_set(&err, PB_EIO, "cannot write %s", tmp);
  if (rc == 0 && rename(tmp, out) != 0)
    rc = pb_err_set(&err, PB_EIO, "cannot rename %s to %s", tmp, out);
  if (rc != 0) {
    remove(tmp);
    fprintf(stderr, "probs testset: %s\n", err.msg);
    return rc == PB_EINVAL || rc == PB_EUNSUPP ? PB_EXIT_USAGE
                                               : PB_EXIT_FAILED;
  }
  pb_testset_t *ts = pb_testset_load(out, o->g, &err);
  size_t n = ts != NULL ? pb_testset_count(ts) : 0;
  pb_testset_destroy(&ts);
  if (n < (size_t)o->count) {
    fprintf(stderr,
            "probs testset: wrote only %zu of %d positions to %s: plies "
            "%d-%d of %s do not hold that many where the choice matters "
            "(a smaller --count or more plies)\n",
            n, o->count, out, o->min_ply, o->max_ply, o->g->name);
    return PB_EXIT_FAILED;
  }
  return PB_EXIT_OK;
}

int pb_cmd_testset(int argc, char **argv) {
  enum { O_GAME, O_OUT, O_COUNT, O_MIN, O_MAX, O_SEED, O_PLAYERS, O_THREADS,
         O_TT, O_N };
  const char *val[O_N] = {"connect4", NULL, NULL, NULL, NULL,
                          "1",        NULL, "0",  "22"};
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
  if (val[O_OUT] == NULL) return pb_opts_fail(&cl, "need --out FILE");
  const pb_game_t *g = pb_game_by_name(val[O_GAME]);
  if (g == NULL) {
    fprintf(stderr, "probs testset: unknown game '%s' (known: %s)\n",
            val[O_GAME], pb_game_names());
    return PB_EXIT_USAGE;
  }
  const defaults_t *d = defaults_of(g);
  if (d == NULL || !pb_solver_supports(g)) {
    fprintf(stderr,
            "probs testset: %s has no solver to label a test set (connect4 "
            "and tictactoe have)\n",
            g->name);
    return PB_EXIT_USAGE;
  }
  if (val[O_COUNT] == NULL) val[O_COUNT] = d->count;
  if (val[O_MIN] == NULL) val[O_MIN] = d->min_ply;
  if (val[O_MAX] == NULL) val[O_MAX] = d->max_ply;
  /* A position at the last ply has one move at most: no choice. */
  const long last = g->max_turns - 2;
  long count, lo, hi, seed, threads, tt;
  int bad = -1; /* the option that is wrong */
  const char *want = NULL;
  char range[64];
  snprintf(range, sizeof range, "0..%ld in %s", last, g->name);
  if (pb_cli_long(val[O_COUNT], 1, 1000000, &count))
    bad = O_COUNT, want = "1..1000000";
  else if (pb_cli_long(val[O_MIN], 0, last, &lo))
    bad = O_MIN, want = range;
  else if (pb_cli_long(val[O_MAX], 0, last, &hi))
    bad = O_MAX, want = range;
  else if (hi < lo)
    bad = O_MAX, want = "at least --min-ply";
  else if (pb_cli_long(val[O_SEED], 0, 0x7fffffffL, &seed))
    bad = O_SEED, want = "0..2147483647";
  else if (pb_cli_long(val[O_THREADS], 0, PB_MAX_THREADS, &threads))
    bad = O_THREADS, want = "0.." PB_BOUND_STR(PB_MAX_THREADS);
  else if (pb_cli_long(val[O_TT], 10, 30, &tt))
    bad = O_TT, want = "10..30";
  if (bad >= 0) {
    fprintf(stderr, "probs testset: bad --%s '%s' (expected %s)\n",
            rows[bad].name, val[bad], want);
    return PB_EXIT_USAGE;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_log_t *log = pb_log_new("testset", NULL, PB_LOG_INFO, &err);
  pb_entry_signals(on_signal);
  pb_testgen_opts_t o = {g, (int)count, (int)lo, (int)hi, (uint64_t)seed,
                         (int)threads, val[O_PLAYERS], (int)tt, 0,
                         &stop_flag, log};
  int rc = make_set(&o, val[O_OUT]);
  pb_log_destroy(&log);
  return rc;
}
