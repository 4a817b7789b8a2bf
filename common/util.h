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

/* Reads a whole file into a malloc'd, NUL-terminated buffer (caller frees).
 * Files larger than max_len are refused with PB_ERANGE. */
int pb_read_file(const char *path, size_t max_len, char **out, size_t *len,
                 pb_err_t *err);

#endif
