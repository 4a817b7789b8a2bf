/* evalrun.h - rating checkpoints against the baselines: the evaluator's
 * logic, kept out of evaluator/main.c so that tests can drive it.
 *
 * Three layers:
 *   pb_evalrun_opts_t / pb_evalrun_play
 *       plays one checkpoint greedily against each opponent (games split
 *       evenly between colours, a random opening, many threads) and fits its
 *       Elo against the opponents' anchor ratings (elo.h);
 *   pb_evalrun_chart
 *       the Elo chart of a run's elo.csv (common/rating/elotable.h: the table, read
 *       back strictly and saved atomically) as SVG;
 *   pb_evalrun_t
 *       a run directory: which checkpoint versions exist, which are rated,
 *       rating the next ones and writing elo.csv, elo.svg (and elo.png when
 *       a converter exists), a line in learner.log and one in
 *       metrics.jsonl per result. For games with a solver each rated
 *       checkpoint also gets its accuracy (common/play/accuracy.h) on the
 *       solved test set: greedy Q (the paper's agent), V one ply deep, and
 *       a search over V and Q: alpha-beta (abnet:, eval.search_nodes) by
 *       default, or beam search at eval.search_expansions /
 *       eval.search_depth (eval.search: beam).
 * The process around it (evaluator/) only adds sockets and signals.
 * The layers live in evalrun.c (one checkpoint), evalrun_chart.c (the
 * chart) and evalrun_dir.c (a run directory); evalrun_impl.h holds what
 * they share.
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

#include "algos.h"
#include "config.h"
#include "elotable.h"
#include "err.h"
#include "game.h"
#include "log.h"

/* ---- one checkpoint (evalrun.c) ---------------------------------------- */

typedef struct pb_evalrun_opts {
  const pb_game_t *g;
  int n_opponents;
  char opponents[PB_ELOTABLE_MAX_OPPONENTS][PB_ELOTABLE_SPEC_MAX];
  double anchor[PB_ELOTABLE_MAX_OPPONENTS]; /* NAN: no anchor, not fitted */
  int games;                   /* per opponent, >= 1 (odd: one more as first) */
  int opening_random_moves;    /* random plies opening each game */
  int threads;                 /* 0: every online CPU */
  uint64_t seed;               /* the run seed */
  volatile sig_atomic_t *stop; /* checked between games and between chunks
                                * of an accuracy pass; may be NULL */
  /* Accuracy on a solved test set (pb_evalrun_t only): */
  int accuracy;                       /* measure it (games with a solver) */
  char testset[PB_CONFIG_PATH_MAX];   /* "" = the shipped set */
  int search_beam;  /* the search agent: 0 = abnet (alpha-beta over V
                     * and Q, eval.search: abnet, the default), 1 =
                     * beam search (eval.search: beam) */
  int search_nodes; /* the abnet agent's evaluations per move */
  int search_expansions, search_depth; /* the beam agent's E and M */
  /* The family of the run's networks (pb_nets_t, common/run/algos.h: its
   * algorithm's row). PB_NETS_PV: the search agent is MCTS with
   * mcts_simulations (eval.mcts_simulations; 0 otherwise), and the three
   * accuracies are those of the greedy policy, the value head one ply deep
   * and MCTS instead of greedy Q, V one ply and the search agent (the
   * columns keep their names). */
  int nets;
  int mcts_simulations;
  /* The precision the checkpoint's networks play in: the evaluator's own
   * model.precision resolved on this machine ("fp32" or "bf16"; a bf16
   * it lacks rates in fp32), whatever the checkpoint's run used, so that
   * runs of either precision are rated alike. */
  char precision[8];
} pb_evalrun_opts_t;

/* The third accuracy's agent over the checkpoint at `ckpt` into buf (n
 * bytes, truncated; may be NULL): "mcts:CKPT,N=n" (alphazero),
 * "abnet:CKPT,nodes=N" or "beam:CKPT,E=e,M=m"; and its short name (as
 * metrics.jsonl's "beam_agent" and the charts give it) into name (size
 * nn, may be NULL): "mcts N=n", "abnet nodes=N" or "E=e,M=m". */
void pb_evalrun_search_spec(const pb_evalrun_opts_t *o, const char *ckpt,
                            char *buf, size_t n, char *name, size_t nn);

/* Fills *o from the eval.* keys of cfg (opponents, games_per_opponent,
 * opening_random_moves, threads, accuracy, testset, search, search_nodes,
 * search_expansions, search_depth, anchors) and its game and seed. Each
 * opponent's anchor is its default (random 1000 in every game; the
 * lookahead ladder in Connect Four and Tic-Tac-Toe only; NAN otherwise),
 * then eval.anchors
 * ("SPEC=R,SPEC=none,...") overrides; accuracy is on only for games with a
 * solver. Returns 0, or PB_ECONFIG for an unknown game, an empty or too
 * long opponent, more than PB_ELOTABLE_MAX_OPPONENTS opponents, one listed
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

/* Plays the checkpoint at `ckpt_path` (version `version`) as
 * "checkpoint:PATH" against every opponent of o, o->games games each, and
 * fits its Elo against the anchored opponents (elo.h, pb_elo_fit_one:
 * maximum likelihood, profile-likelihood interval). Each thread loads the
 * checkpoint once. Fills *row. Returns 0, PB_EINTR if *o->stop was set
 * (nothing is reported), the agent's error (PB_EIO / PB_ECORRUPT /
 * PB_EMISMATCH for the checkpoint, PB_EINVAL for a bad opponent spec), or
 * PB_ENOMEM / PB_EIO (threads). */
int pb_evalrun_play(const pb_evalrun_opts_t *o, const char *ckpt_path,
                    uint64_t version, pb_elotable_row_t *row, pb_err_t *err);

/* pb_evalrun_play that also gives the games played, as a file of game
 * records (common/play/record.h: a JSON line per game, source "eval",
 * the checkpoint named by its file, "ckpt-000012", the opponent by its
 * spec; opponent by opponent, each in game order) in *jsonl, and for
 * Othello as GGF lines in *ggf (NULL for the other games); both malloc'd
 * (the caller frees), NULL on failure. */
int pb_evalrun_play_games(const pb_evalrun_opts_t *o, const char *ckpt_path,
                          uint64_t version, pb_elotable_row_t *row,
                          char **jsonl, char **ggf, pb_err_t *err);

/* ---- the Elo chart of the table (evalrun_chart.c) ---------------------- */
/* What the Elo chart's x axis shows. */
enum {
  PB_EVALRUN_X_ITERATION = 0, /* the iteration (elo.svg) */
  PB_EVALRUN_X_MINUTES = 1    /* wall-clock minutes of the run, rows
                                 without a time left out (elo-time.svg) */
};

/* The Elo chart of the table (svgplot.h): Elo against iteration or wall
 * time (x_axis, PB_EVALRUN_X_*) with the interval as a band, a dashed line
 * per anchored opponent, and the accuracies (right axis, 0..1) when the
 * table has any. The chart's title is `title` (NULL: "Elo") followed by
 * " by version" or " by wall time", so that the two charts of a run
 * (elo.svg, elo-time.svg) tell themselves apart. Caller frees *out. */
int pb_evalrun_chart(const pb_elotable_t *t,
                         const pb_evalrun_opts_t *o, const char *title,
                         int x_axis, char **out, size_t *len, pb_err_t *err);

/* ---- a run directory (evalrun_dir.c) ----------------------------------- */

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
 * a foreign one, see pb_elotable_load), opens the solved test set when
 * o->accuracy is on (PB_ECONFIG naming eval.testset when a named file
 * cannot be used; without a shipped set for the game, accuracy is only
 * logged as unavailable), creates run_dir if needed, takes
 * run_dir/evaluator.lock (PB_RUNDIR_EVALUATOR_LOCK, held until pb_evalrun_destroy:
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
const pb_elotable_t *pb_evalrun_table(const pb_evalrun_t *r);

/* Rates checkpoint `version`: plays it (pb_evalrun_play), measures its
 * accuracies (when on), puts the row in the table, rewrites elo.csv and
 * elo.svg (and elo.png), and writes the result to the log and to
 * metrics.jsonl as
 *   {"event":"elo","iteration":..,"version":..,"elo":..,"elo_lo":..,
 *    "elo_hi":..,"note":..,"games":..,"seconds":..,"minutes":..,
 *    "opponents":{"random":{"w":..,"d":..,"l":..,"anchor":1000},..},
 *    "acc_q":..,"acc_v":..,"acc_beam":..,
 *    "accuracy":{"beam_agent":"abnet nodes=500","positions":1000,
 *    "seconds":..}}
 * (the last four only when accuracy is on).
 * Returns 0 or the error of the step that failed (PB_EINTR when stopped:
 * nothing is written). */
int pb_evalrun_rate(pb_evalrun_t *r, uint64_t version, pb_err_t *err);

/* Rates, oldest first, every version in the directory that is not in the
 * table, whatever `every` says (it fills the gaps that following left,
 * eval.every's among them). *rated (may be
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

#endif
