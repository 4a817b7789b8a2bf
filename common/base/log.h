/* log.h - human-readable log lines and the metrics.jsonl writer.
 *
 * A pb_log_t is created once in main() and passed down. Each call writes
 * exactly one line,
 *
 *     2026-11-21T20:15:03.123Z learner INFO  text
 *
 * (UTC time, component, level padded to five characters) to stderr and, if
 * the logger was given a path, appends the same line to that file. Every
 * line goes out in a single write(2) on an O_APPEND descriptor: nothing is
 * buffered in the process (a crash loses nothing, `tail -f` sees each line
 * at once) and lines from several threads or processes never interleave.
 * Newlines inside a message are turned into spaces so that one call stays
 * one line. A pb_log_t may be used from any number of threads.
 *
 * Every pb_log_* call accepts a NULL logger: the line then goes to stderr
 * only, with component "probs" and level info.
 */
#ifndef PB_LOG_H
#define PB_LOG_H

#include <stdarg.h>
#include <stdint.h>

#include "err.h"

enum { PB_LOG_DEBUG = 0, PB_LOG_INFO = 1, PB_LOG_WARN = 2, PB_LOG_ERROR = 3 };

typedef struct pb_log pb_log_t;

/* Creates a logger for `component` ("learner", "actor-3"; copied, at most
 * 31 characters are kept) that drops lines below `level` (PB_LOG_*). If
 * `path` is not NULL the file is created if needed and appended to. Returns
 * NULL and fills err (PB_EIO naming the path, PB_EINVAL for a bad level) on
 * failure. */
pb_log_t *pb_log_new(const char *component, const char *path, int level,
                     pb_err_t *err);

/* Closes the file and frees the logger, after writing what its spool
 * holds (waiting at most 5 s for the disk); accepts NULL and sets *log to
 * NULL. No other thread may be using the logger. */
void pb_log_destroy(pb_log_t **log);

/* "debug", "info", "warn" (or "warning"), "error" -> PB_LOG_*; anything
 * else (or NULL) -> PB_EINVAL. */
int pb_log_level_parse(const char *s);

/* "DEBUG", "INFO", "WARN", "ERROR"; "?" for anything else. */
const char *pb_log_level_name(int level);

/* Changes the threshold (PB_LOG_*); ignores NULL and bad levels. */
void pb_log_set_level(pb_log_t *log, int level);

/* Whether a line at `level` would be written (to skip costly formatting). */
int pb_log_enabled(const pb_log_t *log, int level);

/* Turns the copy on stderr off (0) or on (1); the file copy is unaffected.
 * For processes whose stderr already goes to the same file. */
void pb_log_set_stderr(pb_log_t *log, int on);

/* From now on, lines go to a spool (common/base/spool.h): a thread of the
 * logger's writes them, so that a caller never waits for the disk; when
 * the disk stalls long enough to fill `capacity` bytes, lines are dropped
 * and, once there is room again, one line says how many. Call it before
 * the logger is shared between threads. 0, or the spool's error. */
int pb_log_set_async(pb_log_t *log, size_t capacity, pb_err_t *err);

/* How long the logger's spool has been waiting for the disk, in seconds
 * (0: not waiting, or not async), and the lines it dropped. */
double pb_log_stalled(const pb_log_t *log);
uint64_t pb_log_dropped(const pb_log_t *log);

/* Writes one line at `level`. */
void pb_log_write(pb_log_t *log, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pb_log_vwrite(pb_log_t *log, int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

void pb_log_debug(pb_log_t *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pb_log_info(pb_log_t *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pb_log_warn(pb_log_t *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pb_log_error(pb_log_t *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- metrics.jsonl --------------------------------------------------- */

typedef struct pb_metrics pb_metrics_t;

/* Opens (creating if needed) `path` for appending one JSON object per line.
 * Returns NULL and fills err (PB_EIO naming the path) on failure. */
pb_metrics_t *pb_metrics_new(const char *path, pb_err_t *err);

/* Appends `json_object_line` plus '\n' in one write(2), so a crash never
 * leaves half a line and readers can follow the file. The line written
 * starts with two members added here, when it was written:
 * "time" (UTC, "2026-11-21T20:15:03.123Z") and "unix_time" (seconds since
 * the epoch, 3 decimals); the caller's members follow (the caller must not
 * write those two keys itself). The text must be one well-formed JSON
 * object with no newline (build it with common/base/json.h); anything else is
 * refused with PB_EINVAL and nothing is written. Returns 0, PB_EINVAL, or
 * PB_EIO if the write failed. Thread-safe. */
int pb_metrics_write(pb_metrics_t *m, const char *json_object_line);

/* From now on, lines go to a spool as pb_log_set_async's do; a line that
 * does not fit is refused with PB_EAGAIN (nothing written). 0, or the
 * spool's error. */
int pb_metrics_set_async(pb_metrics_t *m, size_t capacity, pb_err_t *err);

/* How long the metrics' spool has been waiting for the disk (0: not),
 * and the lines it dropped. */
double pb_metrics_stalled(const pb_metrics_t *m);
uint64_t pb_metrics_dropped(const pb_metrics_t *m);

/* Closes and frees, after writing what the spool holds (waiting at most
 * 5 s for the disk); accepts NULL and sets *m to NULL. */
void pb_metrics_destroy(pb_metrics_t **m);

#endif
