/* rundir.h - the run directory: where each file of a run lives, and the
 * rules by which the processes that share it keep out of each other's way.
 *
 *   RUN_DIR/config.yaml                    the config as used (learner)
 *   RUN_DIR/checkpoints/ckpt-NNNNNN.pbck   version N, after N iterations
 *   RUN_DIR/learner.log, metrics.jsonl     the learner's log and metrics
 *   RUN_DIR/elo.csv, elo.svg, elo-time.svg the evaluator's ratings
 *   RUN_DIR/learner.lock, evaluator.lock   held (flock) while each runs
 *   RUN_DIR/run-id                         the learner's run id (below)
 *   RUN_DIR/endpoints                      what the learner bound, while it
 *                                          runs (net.* lines for --set)
 *   RUN_DIR/logs/CHILD.log                 `probs train`'s children
 *
 * A run directory holds one run: a start without --resume or --restart
 * takes only a directory that holds none yet (pb_rundir_check_new), so that
 * re-running a command never writes a second run over the first.
 *
 * Checkpoints are written by the learner (or the in-process trainer) and
 * read by everyone; the learner prunes old ones (pb_rundir_prune), sparing
 * every version a running evaluator has not rated yet. The two processes
 * share nothing but this directory, so the protocol is written down here:
 * the evaluator holds RUN_DIR/evaluator.lock while it lives
 * (pb_rundir_lock_evaluator) and in follow mode only ever picks versions
 * newer than the newest row of RUN_DIR/elo.csv; the learner asks
 * pb_rundir_protect_from before it deletes anything. */
#ifndef PB_RUNDIR_H
#define PB_RUNDIR_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "log.h"

/* The files of a run, relative to RUN_DIR. */
#define PB_RUNDIR_CONFIG "config.yaml"
#define PB_RUNDIR_CHECKPOINTS "checkpoints"
#define PB_RUNDIR_METRICS "metrics.jsonl"
#define PB_RUNDIR_LOG "learner.log"
#define PB_RUNDIR_ELO_CSV "elo.csv"
#define PB_RUNDIR_LEARNER_LOCK "learner.lock"
#define PB_RUNDIR_EVALUATOR_LOCK "evaluator.lock"
#define PB_RUNDIR_RUN_ID "run-id"
#define PB_RUNDIR_ENDPOINTS "endpoints"

/* Longest run directory path the functions below take (room is left for
 * the file names), and a buffer that holds any path they make. */
#define PB_RUNDIR_DIR_MAX 4000
#define PB_RUNDIR_PATH_MAX 4200

/* RUN_DIR/name into buf. Returns 0, or PB_ERANGE when it does not fit
 * (buf then holds a truncated path). */
int pb_rundir_path(const char *run_dir, const char *name, char *buf,
                   size_t n);

/* RUN_DIR/checkpoints/ckpt-NNNNNN.pbck of `version` into buf. */
void pb_rundir_ckpt_path(const char *run_dir, uint64_t version, char *buf,
                         size_t n);

/* The checkpoint versions in RUN_DIR/checkpoints (files named
 * ckpt-<digits>.pbck; not opened), in increasing order, into a malloc'd
 * array *versions (caller frees; NULL when *n is 0). A missing directory
 * gives none. Returns 0, PB_EIO or PB_ENOMEM. */
int pb_rundir_versions(const char *run_dir, uint64_t **versions, size_t *n,
                       pb_err_t *err);

/* Checkpoint retention after checkpoint `newest` was written: deletes the
 * checkpoints of cfg->run.dir that run.keep_last and run.keep_every let go
 * (pb_ckpt_prune: version 0 and the newest always stay, and nothing goes
 * unless the newest reads back intact), sparing every version a running
 * evaluator has not rated yet (pb_rundir_protect_from). Each deletion is
 * logged at info level with the file's name (log may be NULL). Used by the
 * in-process trainer and the distributed learner alike, so both keep the
 * same files. Returns the number deleted (>= 0) or pb_ckpt_prune's error;
 * when the evaluator's lock or its elo.csv cannot be read, that is logged
 * as a warning and nothing is deleted. */
int pb_rundir_prune(const pb_config_t *cfg, uint64_t newest, pb_log_t *log,
                    pb_err_t *err);

/* The oldest checkpoint version an evaluator of run_dir may still want:
 * while RUN_DIR/evaluator.lock is held, every version above the newest row
 * of RUN_DIR/elo.csv (*from = newest rated + 1, or 0 when elo.csv has no
 * row yet); when nobody holds it, none (*from = UINT64_MAX). The lock is
 * probed with a shared non-blocking flock that is released at once.
 * elo.csv is read for its version column only (any opponents). Returns 0;
 * on an error (elo.csv unreadable or not an elo.csv: PB_EIO, PB_ECORRUPT,
 * naming the file) *from is 0, the safe answer, so the caller can log the
 * error and still prune with full protection. */
int pb_rundir_protect_from(const char *run_dir, uint64_t *from,
                           pb_err_t *err);

/* Takes RUN_DIR/evaluator.lock for the calling evaluator and returns its
 * descriptor, to be kept open for as long as the evaluator lives (closing
 * it releases the lock). The learner's probe holds the lock for an
 * instant, hence a few tries; if another evaluator holds it, or it cannot
 * be taken, a warning goes to log and -1 is returned: the evaluator goes
 * on without, and a checkpoint pruned before it is rated is skipped. */
int pb_rundir_lock_evaluator(const char *run_dir, pb_log_t *log);

/* Takes RUN_DIR/learner.lock (one learner per run directory) and returns
 * its descriptor (>= 0, kept open while the learner lives), or PB_EAGAIN
 * ("this run dir is in use by another learner", naming its pid) or
 * PB_EIO. */
int pb_rundir_lock_learner(const char *run_dir, pb_err_t *err);

/* Whether a process holds the lock RUN_DIR/name (PB_RUNDIR_LEARNER_LOCK or
 * PB_RUNDIR_EVALUATOR_LOCK), looked up without touching the lock: the
 * kernel's table of locks (/proc/locks) is searched for a flock on that
 * file, so that looking never makes a starting learner fail to take it.
 * That table shows only holders in the caller's pid namespace; with
 * `probe` non-zero a lock not found there is also probed as
 * pb_rundir_protect_from does (a shared non-blocking flock, released at
 * once), which sees a holder in another container too. Probe only locks
 * whose takers retry (the evaluator's: pb_rundir_lock_evaluator), never
 * the learner's. Returns 1 (held; *pid, when not NULL, the holder's pid
 * as the kernel gives it, 0 when it is not known), 0 (not held, or no
 * such file), or PB_EINVAL (NULL argument, a path too long) / PB_EIO
 * (/proc/locks unreadable, or the probe failed). */
int pb_rundir_lock_held(const char *run_dir, const char *name, int probe,
                        long *pid, pb_err_t *err);

/* Whether a new run may start in run_dir (a start without --resume or
 * --restart): yes (0) when the directory does not exist or holds no run:
 * no checkpoint in RUN_DIR/checkpoints and no history (a non-empty
 * metrics.jsonl or elo.csv; logs and config.yaml alone do not count).
 * Otherwise PB_ECONFIG, with a message that names the directory and what
 * it holds, and says that --resume continues the run and --restart does
 * too (starting over only when its checkpoints are gone); PB_EIO when the
 * directory cannot be read. Reads only: nothing is created or changed. */
int pb_rundir_check_new(const char *run_dir, pb_err_t *err);

/* The run id of one start of a run: "NAME-XXXXXXXX", the run's name
 * (run.name, cut to its first 55 bytes) and 8 hex digits that are drawn
 * anew at every start from the kernel's random source (getrandom), never
 * from the run's seed, so that two starts of one config differ. It names
 * the start on the wire (Hello and HelloReply, docs/protocol.md), in the
 * learner's log and in RUN_DIR/run-id. At most PB_RUNDIR_RUN_ID_MAX bytes.
 * Returns 0, PB_EINVAL (name empty, buf too small) or PB_EIO. */
#define PB_RUNDIR_RUN_ID_MAX 64
int pb_rundir_new_run_id(const char *name, char *buf, size_t n, pb_err_t *err);

/* Checks a run id given on a command line (--run-id) for run `name`: it is
 * pb_rundir_new_run_id's "NAME-" (the same cut name) followed by 1 or more
 * printable ASCII characters without spaces, PB_RUNDIR_RUN_ID_MAX bytes at
 * most. Returns 0 or PB_EINVAL saying what is wrong. */
int pb_rundir_run_id_check(const char *name, const char *id, pb_err_t *err);
/* What a starting process made in a run directory, so that a start that
 * fails can take it back and leave nothing behind: the directories and
 * files it created, never one that was there before. Fixed size (no
 * allocation); paths beyond PB_RUNDIR_UNDO_MAX are not noted (and so kept). */
#define PB_RUNDIR_UNDO_MAX 16
typedef struct pb_rundir_undo {
  int n;
  int is_dir[PB_RUNDIR_UNDO_MAX];
  char path[PB_RUNDIR_UNDO_MAX][PB_RUNDIR_PATH_MAX];
} pb_rundir_undo_t;

/* Starts an empty list. */
void pb_rundir_undo_init(pb_rundir_undo_t *u);

/* mkdir -p dir, noting each directory it creates. 0, or PB_EINVAL /
 * PB_EIO naming the directory (what was made before the error stays
 * noted). */
int pb_rundir_undo_mkdir(pb_rundir_undo_t *u, const char *dir, pb_err_t *err);

/* To be called just before the caller creates the file `path`: notes it
 * when it does not exist yet. Returns 1 when noted, 0 when it exists (or
 * the list is full, or the path too long). */
int pb_rundir_undo_note(pb_rundir_undo_t *u, const char *path);

/* Takes back what was noted, newest first: files are unlinked (one
 * already gone is fine), directories removed when empty (one that is not
 * stays: something else lives there now). Each removal is logged at info
 * level (log may be NULL: nothing is logged). The list is then empty. */
void pb_rundir_undo_run(pb_rundir_undo_t *u, pb_log_t *log);

#endif
