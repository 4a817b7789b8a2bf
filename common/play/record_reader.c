/* record_reader.c - reading files of game records back one game at a
 * time (JSON lines and GGF games), and "FILE:N" specs; see record.h.
 *
 * Workload: a replay or an analysis reads one file from the start to the
 * game it wants; memory stays bounded by the longest line allowed. */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pb_record_reader {
  FILE *f;
  char path[4096];
  long line;
  char *buf;
  size_t cap;
  uint8_t *moves;
  int32_t *ms;
  float *evals;
  pb_jsonr_t *jr;
};

pb_record_reader_t *pb_record_reader_open(const char *path, pb_err_t *err) {
  if (path == NULL) {
    pb_err_set(err, PB_EINVAL, "record: NULL path");
    return NULL;
  }
  pb_record_reader_t *rd = calloc(1, sizeof *rd);
  if (rd == NULL || (rd->moves = malloc(PB_RECORD_MOVES_MAX)) == NULL ||
      (rd->ms = malloc(PB_RECORD_MOVES_MAX * sizeof *rd->ms)) == NULL ||
      (rd->evals = malloc(PB_RECORD_MOVES_MAX * sizeof *rd->evals)) == NULL ||
      (rd->jr = pb_jsonr_new(err)) == NULL) {
    pb_err_set(err, PB_ENOMEM, "record: out of memory");
    pb_record_reader_destroy(&rd);
    return NULL;
  }
  snprintf(rd->path, sizeof rd->path, "%s", path);
  /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer;
   * only a regular file is read (a device such as /dev/zero, a FIFO, a
   * socket would never end), and reads block as usual after the check. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    pb_err_set(err, PB_EIO, "%s: cannot read: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    pb_record_reader_destroy(&rd);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    pb_err_set(err, PB_EIO, "%s: cannot read: %s, not a regular file", path,
               S_ISDIR(st.st_mode)    ? "a directory"
               : S_ISFIFO(st.st_mode) ? "a FIFO"
               : S_ISCHR(st.st_mode)  ? "a character device"
               : S_ISBLK(st.st_mode)  ? "a block device"
               : S_ISSOCK(st.st_mode) ? "a socket"
                                      : "something else");
    close(fd);
    pb_record_reader_destroy(&rd);
    return NULL;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
      (rd->f = fdopen(fd, "rb")) == NULL) {
    pb_err_set(err, PB_EIO, "%s: cannot read: %s", path, strerror(errno));
    close(fd);
    pb_record_reader_destroy(&rd);
    return NULL;
  }
  return rd;
}

/* Reads one line (its newline kept, if any) into rd->buf, NUL-terminated,
 * never holding more than PB_RECORD_LINE_MAX + 1 bytes of it: a longer
 * line is refused at that point, not read whole. Returns its length, 0 at
 * the end of the file, -1 on a read error (errno set), -2 for a line too
 * long. */
static ssize_t read_line(pb_record_reader_t *rd) {
  size_t n = 0;
  for (;;) {
    int c = getc(rd->f);
    if (c == EOF) break;
    if (n + 2 > rd->cap) {
      if (n > PB_RECORD_LINE_MAX) return -2;
      size_t cap = rd->cap < 4096 ? 4096 : rd->cap * 2;
      if (cap > PB_RECORD_LINE_MAX + 2) cap = PB_RECORD_LINE_MAX + 2;
      char *b = realloc(rd->buf, cap);
      if (b == NULL) {
        errno = ENOMEM;
        return -1;
      }
      rd->buf = b;
      rd->cap = cap;
    }
    rd->buf[n++] = (char)c;
    if (c == '\n') break;
  }
  if (n == 0) return ferror(rd->f) ? -1 : 0;
  rd->buf[n] = '\0';
  if (n - (rd->buf[n - 1] == '\n') > PB_RECORD_LINE_MAX) return -2;
  return (ssize_t)n;
}

int pb_record_reader_next(pb_record_reader_t *rd, pb_record_t *r,
                          pb_err_t *err) {
  if (rd == NULL || r == NULL)
    return pb_err_set(err, PB_EINVAL, "record: NULL reader");
  for (;;) {
    errno = 0;
    ssize_t n = read_line(rd);
    if (n == -2)
      return pb_err_set(err, PB_ERANGE,
                        "%s:%ld: a line longer than %u bytes (refused "
                        "without reading the rest)",
                        rd->path, rd->line + 1, PB_RECORD_LINE_MAX);
    if (n < 0)
      return pb_err_set(err, PB_EIO, "%s:%ld: cannot read: %s", rd->path,
                        rd->line + 1, strerror(errno));
    if (n == 0) return 0;
    rd->line++;
    while (n > 0 && (rd->buf[n - 1] == '\n' || rd->buf[n - 1] == '\r' ||
                     rd->buf[n - 1] == ' ' || rd->buf[n - 1] == '\t'))
      n--;
    ssize_t i = 0;
    while (i < n && (rd->buf[i] == ' ' || rd->buf[i] == '\t')) i++;
    if (i == n) continue;
    pb_err_t e;
    pb_err_clear(&e);
    int rc = pb_record_parse_full(rd->jr, rd->buf + i, (size_t)(n - i),
                                  rd->moves, rd->ms, rd->evals,
                                  PB_RECORD_MOVES_MAX, r, &e);
    if (rc != 0)
      return pb_err_set(err, rc, "%s:%ld: %s", rd->path, rd->line, e.msg);
    return 1;
  }
}

long pb_record_reader_line(const pb_record_reader_t *rd) {
  return rd != NULL ? rd->line : 0;
}

void pb_record_reader_destroy(pb_record_reader_t **prd) {
  if (prd == NULL || *prd == NULL) return;
  pb_record_reader_t *rd = *prd;
  if (rd->f != NULL) fclose(rd->f);
  pb_jsonr_destroy(&rd->jr);
  free(rd->buf);
  free(rd->moves);
  free(rd->ms);
  free(rd->evals);
  free(rd);
  *prd = NULL;
}

int pb_record_spec(const char *spec, char *path, size_t cap, long *n,
                   pb_err_t *err) {
  if (spec == NULL || path == NULL || n == NULL || cap == 0)
    return pb_err_set(err, PB_EINVAL, "record: NULL argument");
  size_t len = strlen(spec);
  const char *colon = strrchr(spec, ':');
  *n = 1;
  if (colon != NULL && colon[1] != '\0' &&
      strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
    if (strlen(colon + 1) > 9 || atol(colon + 1) < 1)
      return pb_err_set(err, PB_EINVAL,
                        "'%s': game %s of the file (expected 1 to 10^9 - 1)",
                        spec, colon + 1);
    *n = atol(colon + 1);
    len = (size_t)(colon - spec);
  }
  if (len == 0) return pb_err_set(err, PB_EINVAL, "'%s': no file", spec);
  if (len >= cap)
    return pb_err_set(err, PB_EINVAL, "'%.60s...': path too long", spec);
  memcpy(path, spec, len);
  path[len] = '\0';
  return 0;
}
