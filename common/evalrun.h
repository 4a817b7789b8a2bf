/* evalrun.h - rating checkpoints against the baselines: the evaluator's
 * logic, kept out of evaluator/main.c so that tests can drive it.
 *
 * Three layers:
 *   pb_evalrun_opts_t / pb_evalrun_play
 *       plays one checkpoint greedily against each opponent (games split
 *       evenly between colours, a random opening, many threads) and fits its
 *       Elo against the opponents' anchor ratings (elo.h);
 *   pb_evalrun_table_t
 *       the elo.csv table: one row per version, read back strictly (a file
 *       we did not write is refused, never overwritten) and saved
 *       atomically;
 *   pb_evalrun_t
 *       a run directory: which checkpoint versions exist, which are rated,
 *       rating the next ones and writing elo.csv, elo.svg (and elo.png when
 *       a converter exists), a line in learner.log and one in
 *       metrics.jsonl per result. For games with a solver each rated
 *       checkpoint also gets its accuracy (common/accuracy.h) on the
 *       solved test set: greedy Q (the paper's agent), V one ply deep, and
 *       beam search with V and Q at eval.search_expansions /
 *       eval.search_depth.
 * The process around it (evaluator/) only adds sockets and signals.
 *
 * Determinism: game i against opponent j of version v is seeded from (run
 * seed, v, j, i) alone, so a rating does not depend on the thread count or
 * on when it was made.
 */
#ifndef PB_EVALRUN_H
#define PB_EVALRUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "game.h"
#include "log.h"

#define PB_EVALRUN_MAX_OPPONENTS 16
#define PB_EVALRUN_SPEC_MAX 64 /* an opponent spec, incl. NUL */

/* ---- anchors ----------------------------------------------------------- */

/* The paper's Elo ratings of its baselines (Connect Four), which our
 * random and lookahead:1..3 agents stand for: random 1000, lookahead:1
 * 1183, lookahead:2 1501, lookahead:3 1603. Returns 0 and sets *rating if
 * `spec` is one of them, else PB_ENOTFOUND. */
int pb_evalrun_default_anchor(const char *spec, double *rating);

/* ---- one checkpoint ---------------------------------------------------- */

typedef struct pb_evalrun_opts {
  const pb_game_t *g;
  int n_opponents;
  char opponents[PB_EVALRUN_MAX_OPPONENTS][PB_EVALRUN_SPEC_MAX];
  double anchor[PB_EVALRUN_MAX_OPPONENTS]; /* NAN: no anchor, not fitted */
  int games;                   /* per opponent, >= 1 (odd: one more as first) */
  int opening_random_moves;    /* random plies opening each game */
  int threads;                 /* 0: every online CPU */
  uint64_t seed;               /* the run seed */
  volatile sig_atomic_t *stop; /* checked between games; may be NULL */
  /* Accuracy on a solved test set (pb_evalrun_t only): */
  int accuracy;                       /* measure it (games with a solver) */
  char testset[PB_CONFIG_PATH_MAX];   /* "" = the shipped set */
  int search_expansions, search_depth; /* the beam agent's E and M */
  /* > 0: the run is alphazero, and the three accuracies are those of the
   * greedy policy, the value head one ply deep and MCTS with this many
   * simulations (eval.mcts_simulations) instead of greedy Q, V one ply
   * and beam search (the columns keep their names). */
  int mcts_simulations;
} pb_evalrun_opts_t;

/* Fills *o from the eval.* keys of cfg (opponents, games_per_opponent,
 * opening_random_moves, threads, accuracy, testset, search_expansions,
 * search_depth, anchors) and its game and seed. Each opponent's anchor is
 * its default (random 1000 in every game; the lookahead ladder in Connect
 * Four and Tic-Tac-Toe only; NAN otherwise), then eval.anchors
 * ("SPEC=R,SPEC=none,...") overrides; accuracy is on only for games with a
 * solver. Returns 0, or PB_ECONFIG for an unknown game, an empty or too
 * long opponent, more than PB_EVALRUN_MAX_OPPONENTS opponents, one listed
 * twice, or an eval.anchors item that is malformed or names no opponent
 * (the message names it). Opponent specs are checked when agents are
 * made (pb_evalrun_play). */
int pb_evalrun_opts_from_config(pb_evalrun_opts_t *o, const pb_config_t *cfg,
                                pb_err_t *err);

/* Sets the anchor of the opponent `spec` (finite `rating`, or NAN for
 * none) from an override "SPEC=RATING" as typed on a command line.
 * Returns 0, PB_EINVAL for a malformed override or rating, or
 * PB_ENOTFOUND if spec is not one of the opponents. */
int pb_evalrun_set_anchor(pb_evalrun_opts_t *o, const char *spec_eq_rating,
                          pb_err_t *err);

/* What one checkpoint earned: one elo.csv row. */
typedef struct pb_evalrun_row {
  uint64_t version;   /* checkpoint version: iterations trained */
  uint64_t iteration; /* the iteration that produced it (= version) */
  double elo, lo, hi; /* fitted Elo and 95% interval; NAN without anchors */
  int flags;          /* PB_ELO_* of the fit, or PB_EVALRUN_NO_ANCHOR */
  int games;          /* all games played */
  double seconds;     /* time the games took */
  int n_opponents;
  int wdl[PB_EVALRUN_MAX_OPPONENTS][3]; /* the checkpoint's W, D, L */
  /* Share of optimal moves on the test set (NAN: not measured): greedy Q,
   * V one ply deep, beam search with V and Q. */
  double acc_q, acc_v, acc_beam;
  /* Wall-clock minutes from the run's start (the version-0 checkpoint's
   * modification time) to this checkpoint's (NAN: unknown). */
  double minutes;
} pb_evalrun_row_t;

/* Row flag: no opponent had an anchor, so there is no Elo. */
#define PB_EVALRUN_NO_ANCHOR 0x100

/* Plays the checkpoint at `ckpt_path` (version `version`) as
 * "checkpoint:PATH" against every opponent of o, o->games games each, and
 * fits its Elo against the anchored opponents (elo.h, pb_elo_fit_one:
 * maximum likelihood, profile-likelihood interval). Each thread loads the
 * checkpoint once. Fills *row. Returns 0, PB_EINTR if *o->stop was set
 * (nothing is reported), the agent's error (PB_EIO / PB_ECORRUPT /
 * PB_EMISMATCH for the checkpoint, PB_EINVAL for a bad opponent spec), or
 * PB_ENOMEM / PB_EIO (threads). */
int pb_evalrun_play(const pb_evalrun_opts_t *o, const char *ckpt_path,
                    uint64_t version, pb_evalrun_row_t *row, pb_err_t *err);

/* ---- the elo.csv table ------------------------------------------------- */

/* elo.csv, one header line and one row per version in increasing order:
 *   iteration,version,elo,elo_lo,elo_hi,note,games,seconds,
 *     <opp>_w,<opp>_d,<opp>_l, ... (one triple per opponent, in order),
 *     acc_q,acc_v,acc_beam,minutes
 * Elo values have one decimal ("" when there is no anchor); note is ""
 * or one of all_wins, all_losses, no_anchor; accuracies have three
 * decimals and minutes two ("" when not measured). Files written before
 * the last four columns existed are read too (their rows have none). */
typedef struct pb_evalrun_table pb_evalrun_table_t;

/* An empty table for these opponents (copied). NULL + err (PB_EINVAL:
 * n outside 1..PB_EVALRUN_MAX_OPPONENTS or a spec that is empty, too long
 * or holds a comma, quote or line break; PB_ENOMEM). */
pb_evalrun_table_t *pb_evalrun_table_new(
    const char (*opponents)[PB_EVALRUN_SPEC_MAX], int n, pb_err_t *err);

/* Reads `path` into a new table for these opponents. A missing file gives
 * an empty table. A file that is not an elo.csv (wrong header, a row with
 * the wrong number of fields, a bad number, versions out of order) is
 * refused with PB_ECORRUPT naming the line; one written for other
 * opponents with PB_EMISMATCH naming both lists; an unreadable one with
 * PB_EIO. Files over 64 MiB are refused (PB_ERANGE). */
pb_evalrun_table_t *pb_evalrun_table_load(
    const char *path, const char (*opponents)[PB_EVALRUN_SPEC_MAX], int n,
    pb_err_t *err);

/* Frees the table; accepts NULL and sets *t to NULL. */
void pb_evalrun_table_destroy(pb_evalrun_table_t **t);

/* Inserts *row (copied) in version order, replacing a row of the same
 * version. PB_EINVAL if row->n_opponents differs from the table's. */
int pb_evalrun_table_put(pb_evalrun_table_t *t, const pb_evalrun_row_t *row,
                         pb_err_t *err);

/* Number of rows; row i (0 <= i < count, increasing version), borrowed. */
int pb_evalrun_table_count(const pb_evalrun_table_t *t);
const pb_evalrun_row_t *pb_evalrun_table_row(const pb_evalrun_table_t *t,
                                             int i);

/* The row of `version`, or NULL. */
const pb_evalrun_row_t *pb_evalrun_table_find(const pb_evalrun_table_t *t,
                                              uint64_t version);

/* The CSV text (malloc'd, NUL-terminated; caller frees). */
int pb_evalrun_table_csv(const pb_evalrun_table_t *t, char **out, size_t *len,
                         pb_err_t *err);

/* Writes the CSV to `path` atomically (temporary file, fsync, rename).
 * Returns 0 or PB_EIO naming the file. */
int pb_evalrun_table_save(const pb_evalrun_table_t *t, const char *path,
                          pb_err_t *err);

/* What the Elo chart's x axis shows. */
enum {
  PB_EVALRUN_X_ITERATION = 0, /* the iteration (elo.svg) */
  PB_EVALRUN_X_MINUTES = 1    /* wall-clock minutes of the run, rows
                                 without a time left out (elo-time.svg) */
};

/* The Elo chart of the table (svgplot.h): Elo against iteration or wall
 * time (x_axis, PB_EVALRUN_X_*) with the interval as a band, a dashed line
 * per anchored opponent, and the accuracies (right axis, 0..1) when the
 * table has any. `title` may be NULL. Caller frees *out. */
int pb_evalrun_table_svg(const pb_evalrun_table_t *t,
                         const pb_evalrun_opts_t *o, const char *title,
                         int x_axis, char **out, size_t *len, pb_err_t *err);

/* ---- a run directory --------------------------------------------------- */

typedef struct pb_evalrun pb_evalrun_t;

typedef struct pb_evalrun_dir_opts {
  int every;         /* rate versions that are multiples of this (>= 1) */
  int png;           /* also write elo.png if rsvg-convert or convert exists */
  pb_log_t *log;     /* borrowed; result lines go here (NULL: stderr) */
  const char *title; /* chart title (NULL: "Elo of RUN (GAME)") */
} pb_evalrun_dir_opts_t;

/* Opens the run directory `run_dir` for rating with *o and *d (copied;
 * o->stop and d->log are kept as pointers): makes one agent of each
 * opponent to check its spec (PB_EINVAL naming it, so that a typo fails
 * at once rather than at every checkpoint), reads run_dir/elo.csv (refusing
 * a foreign one, see pb_evalrun_table_load), opens the solved test set when
 * o->accuracy is on (PB_ECONFIG naming eval.testset when a named file
 * cannot be used; without a shipped set for the game, accuracy is only
 * logged as unavailable), creates run_dir if needed, takes
 * run_dir/evaluator.lock (PB_EVALRUN_LOCK, held until pb_evalrun_destroy:
 * it keeps the learner from pruning checkpoints newer than elo.csv's
 * newest row; if another evaluator holds it, this one logs a warning and
 * goes on without) and opens run_dir/metrics.jsonl for appending. When
 * elo.csv has rows, the charts (elo.svg, elo-time.svg, elo.png) are drawn
 * again from it, so that charts of an older evaluator follow (a failure
 * there is only logged). Returns
 * NULL and fills err on failure. */
pb_evalrun_t *pb_evalrun_new(const char *run_dir, const pb_evalrun_opts_t *o,
                             const pb_evalrun_dir_opts_t *d, pb_err_t *err);

/* Frees everything; accepts NULL and sets *r to NULL. */
void pb_evalrun_destroy(pb_evalrun_t **r);

/* The table as it stands (borrowed). */
const pb_evalrun_table_t *pb_evalrun_table(const pb_evalrun_t *r);

/* Lists the checkpoint versions in run_dir/checkpoints (files named
 * ckpt-<digits>.pbck; not opened) in increasing order into a malloc'd
 * array *versions (caller frees; NULL when *n is 0). A missing directory
 * gives none. Returns 0, PB_EIO, or PB_ENOMEM. */
int pb_evalrun_versions(const pb_evalrun_t *r, uint64_t **versions, size_t *n,
                        pb_err_t *err);

/* Rates checkpoint `version`: plays it (pb_evalrun_play), measures its
 * accuracies (when on), puts the row in the table, rewrites elo.csv and
 * elo.svg (and elo.png), and writes the result to the log and to
 * metrics.jsonl as
 *   {"event":"elo","iteration":..,"version":..,"elo":..,"elo_lo":..,
 *    "elo_hi":..,"note":..,"games":..,"seconds":..,"minutes":..,
 *    "opponents":{"random":{"w":..,"d":..,"l":..,"anchor":1000},..},
 *    "acc_q":..,"acc_v":..,"acc_beam":..,
 *    "accuracy":{"beam_agent":"E=100,M=10","positions":1000,"seconds":..}}
 * (the last four only when accuracy is on).
 * Returns 0 or the error of the step that failed (PB_EINTR when stopped:
 * nothing is written). */
int pb_evalrun_rate(pb_evalrun_t *r, uint64_t version, pb_err_t *err);

/* Rates, oldest first, every version in the directory that is not in the
 * table and is a multiple of `every`, plus the newest version whatever
 * its number (a run's final checkpoint is always rated). *rated (may be
 * NULL) receives how many were rated. A checkpoint that cannot be read is
 * logged and skipped (it does not stop the others): as a warning, or at
 * info level when the file is gone (pruned by the learner since the
 * listing). Returns 0, PB_EINTR,
 * or the first error that is not about one checkpoint. */
int pb_evalrun_all(pb_evalrun_t *r, int *rated, pb_err_t *err);

/* One step of following a live run. Not final: among the versions newer
 * than every version seen by earlier steps (or rated before this process
 * started), rates the newest that is a multiple of `every` and logs the
 * others as skipped; so a rater that falls behind jumps to the newest
 * checkpoint. Final (the learner is stopping): rates the newest version
 * in the directory if it is not in the table, whatever its number.
 * Returns 1 and sets *rated (may be NULL) to the version rated; 0 when
 * there was nothing to rate, or the candidate could not be read (logged,
 * then treated as seen); PB_EINTR when stopped; or an error that is not
 * about one checkpoint. */
int pb_evalrun_follow_step(pb_evalrun_t *r, int final, uint64_t *rated,
                           pb_err_t *err);

/* The newest row of run_dir/elo.csv for the opponents of cfg (for the
 * learner's /metrics). Returns 0 and fills *row, PB_ENOTFOUND when there
 * is no row yet, or the error of pb_evalrun_table_load. */
int pb_evalrun_latest(const char *run_dir, const pb_config_t *cfg,
                      pb_evalrun_row_t *row, pb_err_t *err);

/* ---- checkpoint retention ---------------------------------------------- */

/* The file, in the run directory, that an evaluator (pb_evalrun_new) holds
 * locked (flock, exclusive) for as long as it lives. */
#define PB_EVALRUN_LOCK "evaluator.lock"

/* For the learner's pruning (pb_ckpt_keep_t.protect_from): the oldest
 * checkpoint version an evaluator of run_dir may still want. Protocol:
 * an evaluator holds RUN_DIR/evaluator.lock while it runs and only ever
 * picks, in follow mode, versions newer than the newest row of
 * RUN_DIR/elo.csv; so while the lock is held, every version above that row
 * must stay (*from = newest rated + 1, or 0 when elo.csv has no row yet),
 * and when nobody holds it nothing is protected (*from = UINT64_MAX). The
 * lock is probed with a shared non-blocking flock that is released at
 * once. elo.csv is read for its version column only (any opponents).
 * Returns 0; on an error (elo.csv unreadable or not an elo.csv: PB_EIO,
 * PB_ECORRUPT, naming the file) *from is 0, the safe answer, so the
 * caller can log the error and still prune with full protection. */
int pb_evalrun_protect_from(const char *run_dir, uint64_t *from,
                            pb_err_t *err);

#endif
