/* inproc.h - Algorithm 2 in one process, no sockets: `probs train --inproc`.
 *
 * The reference the distributed system is measured against, and the fastest
 * way to test the algorithm. It cuts each iteration into the same work items
 * as the distributed learner (net.item_episodes episodes per self-play item,
 * net.item_states states per search item) and runs them in order, so that a
 * distributed run with one worker of each role computes the same targets.
 *
 * Per iteration: self-play with Q_{k-1} -> train V_k -> beam search of the
 * distinct positions with (V_k, Q_{k-1}) -> train Q_k -> checkpoint. Logs
 * phase times, losses and rates per iteration to the log and one JSON
 * object per iteration to RUN_DIR/metrics.jsonl. */
#ifndef PB_INPROC_H
#define PB_INPROC_H

#include <signal.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "log.h"

/* Where an iteration's self-play or search stands (on_progress). */
typedef struct pb_inproc_progress {
  uint64_t iteration;  /* the iteration under way (its version to be) */
  const char *phase;   /* "self-play" or "search" */
  size_t done, total;  /* its items */
  size_t units;        /* episodes or states done (whole items) */
  size_t all_units;    /* in the phase */
  const char *unit;    /* "episodes" or "states" */
  double seconds;      /* since the phase started */
} pb_inproc_progress_t;

typedef struct pb_inproc_opts {
  int resume;                  /* continue from the newest checkpoint */
  volatile sig_atomic_t *stop; /* set by a signal handler; may be NULL */
  int iterations_override;     /* > 0: stop after this many in total */
  /* Called on the training thread when a phase starts (done 0) and after
   * each of its items (may be NULL): a caller's progress meter. The same
   * is written to metrics.jsonl as the learner writes it
   * ({"event":"progress"}, at most every 5 s). */
  void (*on_progress)(void *ctx, const pb_inproc_progress_t *p);
  void *ctx;
} pb_inproc_opts_t;

/* Runs training as configured, writing into cfg->run.dir (created if
 * needed): config.yaml, checkpoints/ckpt-NNNNNN.pbck, metrics.jsonl.
 * Returns 0 when all iterations are done or a stop was requested (after
 * finishing or abandoning the current step cleanly), else an error. */
int pb_inproc_run(const pb_config_t *cfg, pb_log_t *log,
                  const pb_inproc_opts_t *opts, pb_err_t *err);

#endif
