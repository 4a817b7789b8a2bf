/* util.h - small helpers every process needs: clocks and directories. */
#ifndef PB_UTIL_H
#define PB_UTIL_H

#include <stddef.h>

#include "err.h"

/* Seconds on the monotonic clock (for measuring, never for dates). */
double pb_now(void);

/* Creates `path` and its missing parents (mode 0755). An existing
 * directory is fine. Returns 0 or PB_EIO naming the path. */
int pb_mkdir_p(const char *path, pb_err_t *err);

/* Writes len bytes to path atomically (temporary file, fsync, rename). */
int pb_write_file(const char *path, const void *data, size_t len,
                  pb_err_t *err);

/* Reads a whole file into a malloc'd, NUL-terminated buffer (caller frees):
 * the one whole-file reader; the text may be cut with lines.h.
 * Files larger than max_len are refused with PB_ERANGE. */
int pb_read_file(const char *path, size_t max_len, char **out, size_t *len,
                 pb_err_t *err);

/* The environment variable through which `probs train` tells the
 * processes it starts its pid. */
#define PB_PARENT_PID_ENV "PROBS_PARENT_PID"

/* For a process started by `probs train`: makes the kernel send it
 * SIGTERM when that parent dies (even by SIGKILL), so that no learner,
 * worker or evaluator outlives it. Does nothing (returns 0) when
 * PROBS_PARENT_PID is not set. Returns PB_EINTR when the parent is already
 * gone (the caller should exit), PB_EIO if the kernel refuses. */
int pb_die_with_parent(pb_err_t *err);

/* pb_die_with_parent for a main(): on failure prints "PROG: why" on
 * stderr and returns 1 (the process should exit), else 0. */
int pb_die_with_parent_or_say(const char *prog);

/* Takes an exclusive lock on `path` (created if needed) for as long as the
 * process lives, and writes its pid into the file. A holder may unlink the
 * file before it lets go (a failed start taking back what it made): a lock
 * won on a file no longer at `path` is taken again on the one there now.
 * Returns the open descriptor (>= 0, to be kept open), PB_EAGAIN naming
 * the pid that holds it when another process does, or PB_EIO. */
int pb_lock_file(const char *path, pb_err_t *err);

#endif
