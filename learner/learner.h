/* learner.h - the probs learner process: owns the iteration loop (paper-exact
 * Algorithm 2), the replay, training of V and Q, checkpoints, and hands out
 * work to actors and beam-search workers over ZeroMQ (docs/protocol.md).
 *
 * One libuv loop in one thread handles every socket: the ZeroMQ ROUTER
 * (work) through its file descriptor, the PUB (announcements), the HTTP
 * server (/metrics, /status), timers (leases, progress) and signals.
 * Training steps and checkpoints run on libuv's thread pool so the loop
 * keeps answering workers (with NoWork) and HTTP while they run.
 *
 * Nothing on the loop waits for the disk: metrics.jsonl lines go to a
 * spool whose thread writes them (common/base/spool.h), and so do the log's
 * lines once main has made the log asynchronous (pb_log_set_async, with
 * PB_LEARNER_SPOOL_BYTES); a stalled disk fills the spool, then lines are
 * dropped and counted. /status reports the stall ("disk") and /metrics
 * (probs_disk_stalled_seconds). */
#ifndef PB_LEARNER_H
#define PB_LEARNER_H

#define PB_LEARNER_SPOOL_BYTES (4u << 20) /* per spool: log, metrics */

#include "config.h"
#include "err.h"
#include "log.h"

typedef struct pb_learner pb_learner_t;

/* How pb_learner_new starts. */
enum {
  PB_LEARNER_RESUME = 1 << 0,  /* from the newest intact checkpoint */
  PB_LEARNER_RESTART = 1 << 1, /* as RESUME, but a run dir whose
                                  checkpoints are gone starts over */
};

/* Creates the learner for cfg (copied): takes RUN_DIR/learner.lock
 * (cfg->run.dir must exist), binds the sockets and the HTTP port (before
 * it makes any other file of the run, so that a port in use fails the
 * start at once), opens RUN_DIR, removes the temporary files of checkpoint
 * writes cut short by a crash (each logged), and writes RUN_DIR/endpoints:
 * what it bound, one `net.KEY=VALUE` line each for net.work_endpoint,
 * net.pub_endpoint and net.http_port (a '*' port of an endpoint, or
 * net.http_port -1, resolved to the port the kernel gave; http 0 when
 * off), removed by pb_learner_destroy. A start that fails removes every
 * file and directory it made (never one that was there before). With
 * PB_LEARNER_RESUME it continues from the newest intact checkpoint; each
 * damaged one skipped is named in a warning. When there is none, a run
 * dir without history starts at version 0, and one with history
 * (metrics.jsonl or elo.csv) is an error (PB_ENOTFOUND, saying so) unless
 * PB_LEARNER_RESTART is set: then that history is moved aside and the run
 * starts at version 0. flags 0 starts at version 0 (main.c first refuses
 * a run dir that holds a run: pb_rundir_check_new). run_id is this start's
 * run id (common/run/rundir.h; NULL: a new one, pb_rundir_new_run_id), written to
 * RUN_DIR/run-id and logged: a Hello that names another run id is refused
 * (docs/protocol.md). log is borrowed. NULL with err filled on failure. */
pb_learner_t *pb_learner_new(const pb_config_t *cfg, int flags,
                             const char *run_id, pb_log_t *log, pb_err_t *err);

/* Runs until the configured number of iterations is done (returns 0), a
 * SIGINT/SIGTERM arrives (finishes the running training step, returns 0),
 * or a fatal error (returns it, err filled). One turn of the loop:
 *   1. drain the ROUTER: decode, check, dispatch each message
 *      (hello, work request, result, heartbeat, weights request, bye);
 *   2. on the 100 ms tick: expire leases, log progress every 5 s;
 *   3. when a phase's items are all done: start the next step
 *      (train V -> search; train Q -> checkpoint -> next iteration);
 *   4. answer HTTP requests.
 * A phase with no worker the learner accepts for net.no_workers_exit_s
 * ends the run with PB_EDENIED (workers came but all are refused as
 * quarantined) or PB_EAGAIN (none came): a restart would not help. */
int pb_learner_run(pb_learner_t *l, pb_err_t *err);

/* Frees everything; accepts NULL and sets *l to NULL. */
void pb_learner_destroy(pb_learner_t **l);

#endif
