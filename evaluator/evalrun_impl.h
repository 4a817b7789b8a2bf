/* evalrun_impl.h - private to the evalrun module: what its files
 * evalrun_dir.c and evalrun_chart.c share (the state of a run directory
 * being rated, and the charts that evalrun_dir.c has evalrun_chart.c
 * draw). Not part of the API (evalrun.h is); include it from no other
 * file. */
#ifndef PB_EVALRUN_IMPL_H
#define PB_EVALRUN_IMPL_H

#include <stdint.h>

#include "evalrun.h"
#include "log.h"
#include "testset.h"

#define PB__PATH 4200
#define PB__DIR_MAX 4000 /* leaves room for the file names */

struct pb_evalrun {
  char dir[PB__DIR_MAX];
  pb_evalrun_opts_t o;
  pb_evalrun_dir_opts_t d;
  char title[256];
  pb_elotable_t *table;
  pb_metrics_t *metrics;
  pb_testset_t *testset; /* NULL: no accuracy */
  double acc_seconds;    /* the last accuracy measurement's time */
  int seen_any;          /* follow mode: seen_max is valid */
  uint64_t seen_max;     /* follow mode: newest version already considered */
  int png_tried, png_ok;
  int lock_fd; /* RUN_DIR/evaluator.lock held (-1: not held) */
};

/* Draws the charts of the table into the run directory: elo-time.svg,
 * then elo.svg (written last: it tells readers both are up to date), and
 * elo.png from it when r->d.png (a failure there is only logged). Returns
 * 0 or the error of drawing or writing an SVG file. */
int pb__evalrun_write_charts(pb_evalrun_t *r, pb_err_t *err);

#endif
