/* record_file.c - the record files of record.h: appended to, never
 * truncated, a record a line in one write(2); and the reading of one
 * line in either format (a JSON record, record.c, or a GGF game,
 * record_ggf.c).
 *
 * Workload: a line per game, written as games finish; a file opened for
 * appending is checked once, from its start and its last line. */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pb_record_parse(pb_jsonr_t *jr, const char *line, size_t len,
                    uint8_t *moves, int cap, pb_record_t *r, pb_err_t *err) {
  return pb_record_parse_full(jr, line, len, moves, NULL, NULL, cap, r, err);
}

int pb_record_parse_full(pb_jsonr_t *jr, const char *line, size_t len,
                         uint8_t *moves, int32_t *ms, float *evals, int cap,
                         pb_record_t *r, pb_err_t *err) {
  if (jr == NULL || line == NULL || moves == NULL || r == NULL)
    return pb_err_set(err, PB_EINVAL, "record: NULL argument");
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  if (len - i >= 2 && line[i] == '(' && line[i + 1] == ';')
    return pb_record_ggf_parse_full(line, len, moves, ms, evals, cap, r,
                                    err);
  return pb_record_json_parse(jr, line, len, moves, ms, evals, cap, r, err);
}

/* ---- files ------------------------------------------------------------- */

struct pb_record_file {
  int fd;
  int kind;
  int need_nl; /* the file's last line lacks its newline */
  int64_t last_round; /* pb_record_file_last_round */
  pb_json_t j;
  char path[4096];
};

/* Whether the text t[0..n) that starts a file not empty starts with a
 * record of `kind`: 0, or PB_ECORRUPT naming path. */
static int check_start(const char *path, int kind, const char *t, size_t n,
                       int whole, pb_err_t *err) {
  size_t i = 0;
  while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n'))
    i++;
  if (i == n && whole) return 0; /* blank: as good as empty */
  if (kind == PB_RECORD_GGF) {
    static const char head[] = "(;GM[Othello]";
    if (n - i >= sizeof head - 1 && !memcmp(t + i, head, sizeof head - 1))
      return 0;
    return pb_err_set(err, PB_ECORRUPT,
                      "%s is not a GGF file of Othello games (it does not "
                      "start with \"(;GM[Othello]\"); refusing to append to it",
                      path);
  }
  if (n - i >= 2 && t[i] == '(' && t[i + 1] == ';')
    return pb_err_set(err, PB_ECORRUPT,
                      "%s holds GGF games (--record-ggf's); refusing to "
                      "append JSON records to it",
                      path);
  const char *nl = memchr(t + i, '\n', n - i);
  if (nl == NULL && !whole)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: its first line is longer than %zu bytes: not a "
                      "record file; refusing to append to it",
                      path, n);
  size_t len = nl != NULL ? (size_t)(nl - (t + i)) : n - i;
  uint8_t *moves = malloc(PB_RECORD_MOVES_MAX);
  pb_record_t *r = malloc(sizeof *r);
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  pb_err_t e;
  pb_err_clear(&e);
  int rc =
      moves == NULL || r == NULL || jr == NULL
          ? pb_err_set(err, PB_ENOMEM, "record: out of memory")
          : pb_record_parse(jr, t + i, len, moves, PB_RECORD_MOVES_MAX, r, &e);
  if (rc != 0 && rc != PB_ENOMEM)
    rc = pb_err_set(err, PB_ECORRUPT,
                    "%s is not a file of game records (line 1: %s); "
                    "refusing to append to it",
                    path, e.msg);
  pb_jsonr_destroy(&jr);
  free(r);
  free(moves);
  return rc;
}

#define PB__RECORD_HEAD (1u << 20) /* bytes read to check a file's start */
#define PB__RECORD_TAIL (64u << 10) /* bytes read for the last round */

/* The round of the JSON file's last record (the last line that reads as
 * a record within the file's last PB__RECORD_TAIL bytes; a line cut
 * short by a crash is passed over): its "round", or when it has none (or
 * no line reads), the number of records in the file. */
static int64_t last_round(pb_record_file_t *f, off_t size) {
  size_t n = size < (off_t)PB__RECORD_TAIL ? (size_t)size : PB__RECORD_TAIL;
  char *t = malloc(n + 1);
  uint8_t *moves = malloc(PB_RECORD_MOVES_MAX);
  pb_record_t *r = malloc(sizeof *r);
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  int64_t round = -1;
  if (t != NULL && moves != NULL && r != NULL && jr != NULL &&
      pread(f->fd, t, n, size - (off_t)n) == (ssize_t)n) {
    size_t end = n;
    while (end > 0 && round < 0) {
      size_t b = end;
      while (b > 0 && t[b - 1] != '\n') b--;
      /* a whole line: it starts the file or follows a newline */
      if ((b > 0 || (off_t)n == size) && end > b) {
        pb_err_t e;
        pb_err_clear(&e);
        if (pb_record_parse(jr, t + b, end - b, moves, PB_RECORD_MOVES_MAX, r,
                            &e) == 0) {
          round = r->round > 0 ? r->round : -2; /* -2: count them */
          break;
        }
      }
      if (b == 0) break;
      end = b - 1;
    }
  }
  if (round < 0) { /* no round in the tail: count the records */
    round = 0;
    char buf[1 << 16];
    off_t off = 0;
    int blank = 1;
    ssize_t got;
    while ((got = pread(f->fd, buf, sizeof buf, off)) > 0) {
      for (ssize_t k = 0; k < got; k++) {
        if (buf[k] == '\n') {
          round += !blank;
          blank = 1;
        } else if (buf[k] != ' ' && buf[k] != '\t' && buf[k] != '\r') {
          blank = 0;
        }
      }
      off += got;
    }
    round += !blank;
  }
  pb_jsonr_destroy(&jr);
  free(r);
  free(moves);
  free(t);
  return round;
}

/* Checks the start of the open file f (size bytes) and whether its last
 * byte is a newline. */
static int check_file(pb_record_file_t *f, off_t size, pb_err_t *err) {
  size_t n = size < (off_t)PB__RECORD_HEAD ? (size_t)size : PB__RECORD_HEAD;
  char *t = malloc(n + 1);
  if (t == NULL) return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  ssize_t got = pread(f->fd, t, n, 0);
  int rc = 0;
  if (got != (ssize_t)n)
    rc = pb_err_set(err, PB_EIO, "%s: cannot read: %s", f->path,
                    got < 0 ? strerror(errno) : "short read");
  else
    rc = check_start(f->path, f->kind, t, n, (off_t)n == size, err);
  char last = '\n';
  if (rc == 0 && pread(f->fd, &last, 1, size - 1) != 1)
    rc = pb_err_set(err, PB_EIO, "%s: cannot read: %s", f->path,
                    strerror(errno));
  f->need_nl = last != '\n';
  free(t);
  if (rc == 0 && f->kind == PB_RECORD_JSONL) f->last_round = last_round(f, size);
  return rc;
}

pb_record_file_t *pb_record_file_open(const char *path, int kind,
                                      pb_err_t *err) {
  if (path == NULL || path[0] == '\0' ||
      (kind != PB_RECORD_JSONL && kind != PB_RECORD_GGF)) {
    pb_err_set(err, PB_EINVAL, "record: no path, or a bad kind %d", kind);
    return NULL;
  }
  pb_record_file_t *f = calloc(1, sizeof *f);
  if (f == NULL) {
    pb_err_set(err, PB_ENOMEM, "record: out of memory");
    return NULL;
  }
  snprintf(f->path, sizeof f->path, "%s", path);
  f->kind = kind;
  pb_json_init(&f->j);
  /* O_APPEND, never O_TRUNC: what the file holds stays. O_NOFOLLOW: a
   * symbolic link is refused, never followed (a link planted where a
   * record goes would otherwise append to whatever it names). */
  f->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
               0644);
  if (f->fd < 0 && (errno == EACCES || errno == EISDIR))
    f->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW); /* a pipe */
  struct stat st;
  if (f->fd < 0 && errno == ELOOP) {
    pb_err_set(err, PB_EIO,
               "%s: a symbolic link; records are not written through links "
               "(give the file's own path)",
               path);
    goto fail;
  }
  if (f->fd < 0 || fstat(f->fd, &st) != 0) {
    pb_err_set(err, PB_EIO, "%s: cannot open for appending: %s", path,
               strerror(errno));
    goto fail;
  }
  if (S_ISDIR(st.st_mode)) {
    pb_err_set(err, PB_EIO, "%s: cannot open for appending: a directory", path);
    goto fail;
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0 &&
      check_file(f, st.st_size, err) != 0)
    goto fail;
  return f;
fail:
  pb_record_file_close(&f);
  return NULL;
}

int pb_record_file_write(pb_record_file_t *f, const pb_record_t *r,
                         pb_err_t *err) {
  if (f == NULL) return pb_err_set(err, PB_EINVAL, "record: NULL file");
  char *ggf = NULL;
  size_t len = 0;
  int rc;
  if (f->kind == PB_RECORD_GGF) {
    rc = pb_record_ggf(r, &ggf, &len, err);
  } else {
    rc = pb_record_json(r, &f->j, err);
    len = pb_json_len(&f->j);
  }
  if (rc != 0) return rc;
  const char *body = ggf != NULL ? ggf : pb_json_cstr(&f->j);
  char *line = malloc(len + 2);
  if (line == NULL) {
    free(ggf);
    return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  }
  size_t k = 0;
  if (f->need_nl) line[k++] = '\n';
  memcpy(line + k, body, len);
  k += len;
  line[k++] = '\n';
  free(ggf);
  size_t off = 0;
  while (off < k) {
    ssize_t w = write(f->fd, line + off, k - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      rc = pb_err_set(err, PB_EIO, "%s: cannot write: %s", f->path,
                      w < 0 ? strerror(errno) : "nothing written");
      break;
    }
    off += (size_t)w;
  }
  free(line);
  if (rc == 0) f->need_nl = 0;
  return rc;
}

int64_t pb_record_file_last_round(const pb_record_file_t *f) {
  return f != NULL ? f->last_round : 0;
}

void pb_record_file_close(pb_record_file_t **pf) {
  if (pf == NULL || *pf == NULL) return;
  if ((*pf)->fd >= 0) close((*pf)->fd);
  pb_json_free(&(*pf)->j);
  free(*pf);
  *pf = NULL;
}

