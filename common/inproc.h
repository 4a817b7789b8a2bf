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
  int resume;                       /* continue from the newest checkpoint */
  volatile sig_atomic_t *stop;      /* set by a signal handler; may be NULL */
  int iterations_override;          /* > 0: stop after this many in total */
} pb_inproc_opts_t;

/* Runs training as configured, writing into cfg->run.dir (created if
 * needed): config.yaml, checkpoints/ckpt-NNNNNN.pbck, metrics.jsonl.
 * Returns 0 when all iterations are done or a stop was requested (after
 * finishing or abandoning the current step cleanly), else an error. */
int pb_inproc_run(const pb_config_t *cfg, pb_log_t *log,
                  const pb_inproc_opts_t *opts, pb_err_t *err);

/* Path of checkpoint `version` in run_dir into buf. */
void pb_inproc_ckpt_path(const char *run_dir, unsigned long long version,
                         char *buf, size_t n);

/* Checkpoint retention after checkpoint `newest` was written: deletes the
 * checkpoints of cfg->run.dir/checkpoints that run.keep_last and
 * run.keep_every let go (pb_ckpt_prune: version 0 and the newest always
 * stay, and nothing goes unless the newest reads back intact), sparing
 * every version a running evaluator has not rated yet
 * (pb_evalrun_protect_from). Each deletion is logged at info level with
 * the file's name (log may be NULL). Used by the in-process trainer and
 * the distributed learner alike, so both keep the same files. Returns the
 * number deleted (>= 0) or pb_ckpt_prune's error; when the evaluator's
 * lock or its elo.csv cannot be read, that is logged as a warning and
 * nothing is deleted. */
int pb_inproc_prune(const pb_config_t *cfg, uint64_t newest, pb_log_t *log,
                    pb_err_t *err);

#endif
