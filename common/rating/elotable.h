/* elotable.h - elo.csv, the ratings of a run's versions: one row per
 * rated checkpoint, read back strictly (a file we did not write is
 * refused, never overwritten) and saved atomically.
 *
 * Written by the evaluator (evaluator/evalrun.h), read by the learner's
 * /metrics and the web page. The rows come from matches against fixed
 * opponents (elo.h fits the rating) and from accuracy on a solved test set
 * (accuracy.h). */
#ifndef PB_ELOTABLE_H
#define PB_ELOTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

/* The opponents of a table are those of eval.opponents (config.h). */
#define PB_ELOTABLE_MAX_OPPONENTS PB_CONFIG_MAX_OPPONENTS
#define PB_ELOTABLE_SPEC_MAX PB_CONFIG_OPPONENT_MAX /* incl. NUL */

/* What one checkpoint earned: one elo.csv row. */
typedef struct pb_elotable_row {
  uint64_t version;   /* checkpoint version: iterations trained */
  uint64_t iteration; /* the iteration that produced it (= version) */
  double elo, lo, hi; /* fitted Elo and 95% interval; NAN without anchors */
  int flags;          /* PB_ELO_* of the fit, or PB_ELOTABLE_NO_ANCHOR */
  int games;          /* all games played */
  double seconds;     /* time the games took */
  int n_opponents;
  int wdl[PB_ELOTABLE_MAX_OPPONENTS][3]; /* the checkpoint's W, D, L */
  /* Share of optimal moves on the test set (NAN: not measured): greedy Q,
   * V one ply deep, beam search with V and Q. */
  double acc_q, acc_v, acc_beam;
  /* Wall-clock minutes from the run's start (the version-0 checkpoint's
   * modification time) to this checkpoint's (NAN: unknown). */
  double minutes;
} pb_elotable_row_t;

/* Row flag: no opponent had an anchor, so there is no Elo. */
#define PB_ELOTABLE_NO_ANCHOR 0x100

/* The note column of a row's flags: "", "all_wins", "all_losses" or
 * "no_anchor". */
const char *pb_elotable_note(int flags);

/* elo.csv, one header line and one row per version in increasing order:
 *   iteration,version,elo,elo_lo,elo_hi,note,games,seconds,
 *     <opp>_w,<opp>_d,<opp>_l, ... (one triple per opponent, in order),
 *     acc_q,acc_v,acc_beam,minutes
 * Elo values have one decimal ("" when there is no anchor); note is ""
 * or one of all_wins, all_losses, no_anchor; accuracies have three
 * decimals and minutes two ("" when not measured). Files written before
 * the last four columns existed are read too (their rows have none). */
typedef struct pb_elotable pb_elotable_t;

/* An empty table for these opponents (copied). NULL + err (PB_EINVAL:
 * n outside 1..PB_ELOTABLE_MAX_OPPONENTS or a spec that is empty, too long
 * or holds a comma, quote or line break; PB_ENOMEM). */
pb_elotable_t *pb_elotable_new(
    const char (*opponents)[PB_ELOTABLE_SPEC_MAX], int n, pb_err_t *err);

/* Reads `path` into a new table for these opponents. A missing file gives
 * an empty table. A file that is not an elo.csv (wrong header, a row with
 * the wrong number of fields, a bad number, versions out of order) is
 * refused with PB_ECORRUPT naming the line; one written for other
 * opponents with PB_EMISMATCH naming both lists; an unreadable one with
 * PB_EIO. Files over 64 MiB are refused (PB_ERANGE). */
pb_elotable_t *pb_elotable_load(
    const char *path, const char (*opponents)[PB_ELOTABLE_SPEC_MAX], int n,
    pb_err_t *err);

/* Frees the table; accepts NULL and sets *t to NULL. */
void pb_elotable_destroy(pb_elotable_t **t);

/* Inserts *row (copied) in version order, replacing a row of the same
 * version. PB_EINVAL if row->n_opponents differs from the table's. */
int pb_elotable_put(pb_elotable_t *t, const pb_elotable_row_t *row,
                         pb_err_t *err);

/* Number of rows; row i (0 <= i < count, increasing version), borrowed. */
int pb_elotable_count(const pb_elotable_t *t);
const pb_elotable_row_t *pb_elotable_row(const pb_elotable_t *t,
                                             int i);

/* The row of `version`, or NULL. */
const pb_elotable_row_t *pb_elotable_find(const pb_elotable_t *t,
                                              uint64_t version);

/* The CSV text (malloc'd, NUL-terminated; caller frees). */
int pb_elotable_csv(const pb_elotable_t *t, char **out, size_t *len,
                         pb_err_t *err);

/* Writes the CSV to `path` atomically (temporary file, fsync, rename).
 * Returns 0 or PB_EIO naming the file. */
int pb_elotable_save(const pb_elotable_t *t, const char *path,
                          pb_err_t *err);

/* The newest row of RUN_DIR/elo.csv written for the opponents of cfg
 * (eval.opponents; a checked config), for the learner's /metrics. Returns
 * 0 and fills *row, PB_ENOTFOUND when there is no row yet, or the error of
 * pb_elotable_load. */
int pb_elotable_latest(const char *run_dir, const pb_config_t *cfg,
                       pb_elotable_row_t *row, pb_err_t *err);

#endif
