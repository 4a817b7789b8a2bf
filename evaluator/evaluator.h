/* evaluator.h - the evaluator process: rates checkpoints as a run makes
 * them, beside the learner, and never in its way.
 *
 * Three modes (the third, "versions", rates a given list and returns):
 *   follow (default)  watches RUN_DIR/checkpoints (polled every poll_ms)
 *                     and the learner's Announce messages (ZeroMQ SUB on
 *                     net.pub_endpoint; any announce wakes it at once).
 *                     Rates the newest unrated version, skipping older ones
 *                     when it falls behind (eval.every honoured), until the
 *                     learner announces STOPPING (the final version is then
 *                     rated, whatever eval.every says), version `until` is
 *                     reached, or a stop is requested.
 *   all               rates every version in the directory that elo.csv
 *                     lacks (whatever eval.every says), then returns: for
 *                     a finished run, or to fill gaps.
 * Results go to RUN_DIR/elo.csv, elo.svg (elo.png when a converter exists),
 * learner.log and metrics.jsonl (evaluator/evalrun.h). Restarting resumes:
 * versions already in elo.csv are never played again. While it runs it
 * holds RUN_DIR/evaluator.lock, so the learner's checkpoint retention
 * (run.keep_last / run.keep_every) spares every version newer than
 * elo.csv's newest row; a checkpoint pruned anyway (an older one asked
 * for by `all` or `versions`) is logged and skipped.
 */
#ifndef PB_EVALUATOR_H
#define PB_EVALUATOR_H

#include <signal.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "log.h"

#define PB_EVALUATOR_MAX_ANCHORS 16
#define PB_EVALUATOR_MAX_VERSIONS 1024

typedef struct pb_evaluator_opts {
  pb_config_t cfg; /* the run's config, run.dir = the run directory */
  int all;         /* mode all (above) */
  int once;        /* follow mode: one pass, then return */
  int64_t until;   /* >= 0: return once this version is rated */
  int png;         /* also write elo.png when possible */
  int poll_ms;     /* directory polling period (1000) */
  int n_versions;  /* > 0: mode "versions": rate exactly these, then
                      return (those already rated are kept, missing
                      ones logged and skipped) */
  uint64_t versions[PB_EVALUATOR_MAX_VERSIONS];
  int n_anchors;   /* anchor overrides, "SPEC=RATING" or "SPEC=none" */
  const char *anchors[PB_EVALUATOR_MAX_ANCHORS];
  volatile sig_atomic_t *stop; /* set by a signal handler; may be NULL */
  pb_log_t *log;               /* borrowed; NULL: stderr */
} pb_evaluator_opts_t;

/* Fills *o with the defaults: follow mode, until -1, png on, poll 1000 ms,
 * cfg from pb_config_defaults. */
void pb_evaluator_opts_default(pb_evaluator_opts_t *o);

/* Runs the evaluator until its mode says it is done or *o->stop is set.
 * One turn of follow mode:
 *   1. step: rate the newest unrated version (pb_evalrun_follow_step);
 *   2. done? (`once`, `until` reached, STOPPING seen and final step made);
 *   3. wait up to poll_ms for an Announce (drained and decoded; a message
 *      that does not decode is logged at debug level and dropped).
 * Returns 0 when done or stopped, PB_ECONFIG for a bad config or anchor
 * override, PB_ECORRUPT / PB_EMISMATCH for an elo.csv it must not
 * overwrite, PB_EIO for sockets or files, PB_EINVAL for bad options. */
int pb_evaluator_run(const pb_evaluator_opts_t *o, pb_err_t *err);

#endif
