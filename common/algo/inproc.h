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

typedef struct pb_inproc_opts {
  int resume;                  /* continue from the newest checkpoint */
  volatile sig_atomic_t *stop; /* set by a signal handler; may be NULL */
  int iterations_override;     /* > 0: stop after this many in total */
} pb_inproc_opts_t;

/* Runs training as configured, writing into cfg->run.dir (created if
 * needed): config.yaml, checkpoints/ckpt-NNNNNN.pbck, metrics.jsonl.
 * Returns 0 when all iterations are done or a stop was requested (after
 * finishing or abandoning the current step cleanly), else an error. */
int pb_inproc_run(const pb_config_t *cfg, pb_log_t *log,
                  const pb_inproc_opts_t *opts, pb_err_t *err);

#endif
