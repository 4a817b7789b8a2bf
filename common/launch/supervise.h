/* supervise.h - runs a set of named child processes until the work is done.
 *
 * Written for `probs train`: one learner (the "main" child), N actors, M
 * search workers and an evaluator on one machine. A handful of children
 * that live for hours; nothing here is on a hot path.
 *
 * Rules, in the order they are applied when a child exits:
 *   - During a stop (below), exits are only counted.
 *   - The main child exiting with status 0 means the run is finished: the
 *     others are stopped and pb_supervise_run returns 0.
 *   - Any other child exiting with status 0 is done and stays down.
 *   - A non-zero status or death by a signal is a crash: the child is
 *     started again after a backoff (backoff_min_s, doubling up to
 *     backoff_max_s; back to backoff_min_s once a child has stayed up for
 *     window_s). A child that would need more than max_restarts restarts
 *     within window_s is given up: an optional child
 *     (PB_SUPERVISE_OPTIONAL) is just left down, anything else stops the run
 *     and pb_supervise_run returns PB_EIO naming the child and how it last
 *     died. A child that cannot be started (pb_supervise_run's first
 *     spawn) stops the run the same way.
 *   - A child that exits with status PB_SUPERVISE_EXIT_FATAL failed in a
 *     way that restarting cannot fix (a configuration or start-up error):
 *     it is not restarted, and the run stops (an optional child is only
 *     left down) with PB_ECONFIG and the child's own message: the last line
 *     of its log that says ERROR, or else its last line.
 *   - When every child is done the run ends with 0 as well.
 * A stop sends SIGTERM to every running child, waits up to grace_s, then
 * sends SIGKILL to those still running, and returns once all have exited.
 * SIGINT, SIGTERM or SIGHUP delivered to the supervising process starts a
 * stop (the run then returns 0 and pb_supervise_signal tells which
 * signal); a second such signal sends SIGKILL at once.
 *
 * Progress: if follow_path is set, a timer reads the complete lines
 * appended to that file since pb_supervise_run started (it is
 * RUN_DIR/metrics.jsonl in practice; earlier content is skipped) and calls
 * on_line for each, and once more after the children are gone so a last
 * line is never missed. A file that shrinks is read again from its start.
 * Lines longer than PB_SUPERVISE_LINE_MAX bytes are skipped.
 *
 * Everything runs on a private libuv loop inside pb_supervise_run, on the
 * calling thread. Each child runs in a session of its own (setsid), so a
 * Ctrl-C in a terminal reaches only the supervisor, which then stops the
 * children in order: every child sees one SIGTERM, not the terminal's
 * SIGINT followed by ours. The flip side: children are not killed if the
 * supervisor itself is SIGKILLed.
 */
#ifndef PB_SUPERVISE_H
#define PB_SUPERVISE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "log.h"

#define PB_SUPERVISE_NAME_MAX 64    /* child names, incl. NUL */
#define PB_SUPERVISE_EXIT_FATAL 78  /* a child's "do not restart me" (as
                                       sysexits.h's EX_CONFIG) */
#define PB_SUPERVISE_LINE_MAX 65536 /* longest followed line, bytes */

enum {
  PB_SUPERVISE_MAIN = 1 << 0,     /* its exit with status 0 ends the run */
  PB_SUPERVISE_OPTIONAL = 1 << 1, /* giving up on it does not end the run */
  PB_SUPERVISE_LINGER = 1 << 2,   /* when the main child finishes, it may
                                     take up to linger_s to exit by itself
                                     (the others get SIGTERM at once) */
};

typedef struct pb_supervise pb_supervise_t;

/* Called with one line of the followed file, without its line end
 * (a trailing CR is removed too) and NUL-terminated; `line` is valid only
 * during the call. */
typedef void pb_supervise_line_fn(void *ctx, const char *line, size_t len);

typedef struct pb_supervise_opts {
  double backoff_min_s;          /* first restart delay (0.5) */
  double backoff_max_s;          /* longest restart delay (10) */
  int max_restarts;              /* restarts allowed within window_s (5) */
  double window_s;               /* the give-up window (60) */
  double grace_s;                /* SIGTERM to SIGKILL (5) */
  double linger_s;               /* for PB_SUPERVISE_LINGER children (60) */
  const char *follow_path;       /* file to follow, copied; NULL: none */
  double follow_interval_s;      /* how often it is read (0.5) */
  pb_supervise_line_fn *on_line; /* required with follow_path */
  void *ctx;                     /* for on_line */
  int no_signals;                /* 1: leave SIGINT/SIGTERM/SIGHUP alone */
} pb_supervise_opts_t;

/* Fills *o with the defaults shown above. */
void pb_supervise_opts_default(pb_supervise_opts_t *o);

/* What pb_supervise_child_info reports. */
typedef struct pb_supervise_child {
  int restarts;        /* times it was started again after a crash */
  int running;         /* 1 while its process is alive */
  int done;            /* exited 0 or was given up */
  int gave_up;         /* given up after too many crashes */
  int killed;          /* needed SIGKILL during a stop */
  int64_t last_status; /* exit status of its last process, -1 if none */
  int last_signal;     /* signal that ended its last process, 0 if none */
} pb_supervise_child_t;

/* Creates a supervisor with *opts (NULL: the defaults). `log` is borrowed
 * (NULL: stderr) and gets one line per start, exit, restart and stop.
 * Returns NULL and fills err with PB_EINVAL for an option out of range
 * (negative times, backoff_min_s > backoff_max_s, max_restarts < 0,
 * follow_path without on_line) or PB_ENOMEM. */
pb_supervise_t *pb_supervise_new(const pb_supervise_opts_t *opts, pb_log_t *log,
                                 pb_err_t *err);

/* Frees the supervisor and closes the children's log files. Must not be
 * called while pb_supervise_run is running. Accepts NULL; sets *s to NULL. */
void pb_supervise_destroy(pb_supervise_t **s);

/* Adds a child before pb_supervise_run. `name` (letters, digits, '.', '_',
 * '-'; unique) is used in log lines and by pb_supervise_child_info. `argv`
 * is a NULL-terminated vector, argv[0] the program (a path, or a name
 * searched in PATH); `restart_argv` (may be NULL: argv again) is used for
 * every start after a crash, e.g. with --resume added. Both are copied.
 * If `log_path` is not NULL, the child's stdout and stderr are appended to
 * that file (created, mode 0644, opened now); otherwise they are the
 * supervisor's. stdin is /dev/null. `flags`: PB_SUPERVISE_MAIN (at most one
 * child) and/or PB_SUPERVISE_OPTIONAL. Returns 0, PB_EINVAL (bad or
 * duplicate name, empty argv, second main, called after run), PB_EIO
 * naming a log file that cannot be opened, or PB_ENOMEM. */
int pb_supervise_add(pb_supervise_t *s, const char *name,
                     const char *const *argv, const char *const *restart_argv,
                     const char *log_path, int flags, pb_err_t *err);

/* Starts every child in the order added and supervises them by the rules
 * above until the run ends. Returns 0 (main child finished, every child
 * done, or stopped by a signal), PB_EIO (a child could not be started or
 * was given up; err names it and how it died), PB_EINVAL (no children, or
 * run called a second time) or PB_ENOMEM. In every case all children have
 * exited when it returns. */
int pb_supervise_run(pb_supervise_t *s, pb_err_t *err);

/* The signal (SIGINT, SIGTERM or SIGHUP) that stopped the run, or 0. */
int pb_supervise_signal(const pb_supervise_t *s);

/* Fills *out for the child called `name`. Returns 0 or PB_ENOTFOUND. */
int pb_supervise_child_info(const pb_supervise_t *s, const char *name,
                            pb_supervise_child_t *out);

#endif
