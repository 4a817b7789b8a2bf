#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "invariant.h"

double pb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int pb_mkdir_p(const char *path, pb_err_t *err) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf)
    return pb_err_set(err, PB_EINVAL, "bad directory path '%.200s'", path);
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char c = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return pb_err_set(err, PB_EIO, "cannot create directory '%s': %s", buf,
                        strerror(errno));
    buf[i] = c;
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return pb_err_set(err, PB_EIO, "'%s' is not a directory", path);
  return 0;
}

int pb_write_file(const char *path, const void *data, size_t len,
                  pb_err_t *err) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return pb_err_set(err, PB_EIO, "cannot write '%s': %s", tmp,
                      strerror(errno));
  const char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      unlink(tmp);
      return pb_err_set(err, PB_EIO, "cannot write '%s': %s", tmp,
                        strerror(e));
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return pb_err_set(err, PB_EIO, "cannot write '%s': %s", path, strerror(e));
  }
  return 0;
}

int pb_read_file(const char *path, size_t max_len, char **out, size_t *len,
                 pb_err_t *err) {
  pb_assert(path != NULL && out != NULL);
  *out = NULL;
  if (len) *len = 0;
  /* O_NONBLOCK: a FIFO is refused below, not waited on. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return pb_err_set(err, PB_EIO, "%s: cannot open: %s", path,
                      strerror(errno));
  struct stat st;
  const char *why = fstat(fd, &st) != 0 ? strerror(errno)
                    : S_ISDIR(st.st_mode) ? "a directory"
                    : !S_ISREG(st.st_mode) ? "not a regular file"
                                           : NULL;
  if (why != NULL) {
    close(fd);
    return pb_err_set(err, PB_EIO, "%s: cannot read: %s", path, why);
  }
  /* The size is known (the file may still grow or shrink while we read);
   * /proc files say 0: those grow the buffer. */
  if ((uint64_t)st.st_size > (uint64_t)max_len) {
    close(fd);
    return pb_err_set(err, PB_ERANGE, "%s: larger than %zu bytes", path,
                      max_len);
  }
  size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
  char *buf = malloc(cap);
  size_t n = 0;
  int rc = buf != NULL ? 0
                       : pb_err_set(err, PB_ENOMEM, "%s: out of memory",
                                    path);
  while (rc == 0) {
    if (n + 1 == cap) { /* full: one more byte than max_len is a refusal */
      size_t nc = cap > max_len / 2 ? max_len + 2 : cap * 2;
      char *nb = nc > cap ? realloc(buf, nc) : NULL;
      if (nb == NULL) {
        rc = nc > cap ? pb_err_set(err, PB_ENOMEM, "%s: out of memory",
                                   path)
                      : pb_err_set(err, PB_ERANGE, "%s: larger than %zu bytes",
                                   path, max_len);
        break;
      }
      buf = nb;
      cap = nc;
    }
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      rc = pb_err_set(err, PB_EIO, "%s: cannot read: %s", path,
                      strerror(errno));
    if (r <= 0) break;
    n += (size_t)r;
    if (n > max_len)
      rc = pb_err_set(err, PB_ERANGE, "%s: larger than %zu bytes", path,
                      max_len);
  }
  close(fd);
  if (rc != 0) {
    free(buf);
    return rc;
  }
  pb_assert(n < cap);
  buf[n] = '\0';
  *out = buf;
  if (len) *len = n;
  return 0;
}

int pb_die_with_parent(pb_err_t *err) {
  const char *v = getenv(PB_PARENT_PID_ENV);
  if (v == NULL || *v == '\0') return 0;
  char *end = NULL;
  long want = strtol(v, &end, 10);
  if (end == v || *end != '\0' || want <= 1) return 0;
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
    return pb_err_set(err, PB_EIO, "prctl(PR_SET_PDEATHSIG): %s",
                      strerror(errno));
  /* The parent may have died before the prctl: then we were adopted. */
  if ((long)getppid() != want)
    return pb_err_set(err, PB_EINTR,
                      "the process that started this one (pid %ld) is gone",
                      want);
  return 0;
}

int pb_die_with_parent_or_say(const char *prog) {
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_die_with_parent(&err) == 0) return 0;
  fprintf(stderr, "%s: %s\n", prog, err.msg);
  return 1;
}

int pb_lock_file(const char *path, pb_err_t *err) {
  int fd = -1, locked = -1;
  /* A holder may unlink the file before it lets go (a start that failed
   * takes back what it made): a lock won on a file no longer at `path`
   * locks nothing, so take it again on the file that is there now. */
  for (int tries = 0;; tries++) {
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return pb_err_set(err, PB_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
    locked = flock(fd, LOCK_EX | LOCK_NB);
    if (locked != 0) break; /* held by another: said below */
    struct stat held, now;
    if (tries >= 100 || (fstat(fd, &held) == 0 && stat(path, &now) == 0 &&
                         held.st_dev == now.st_dev &&
                         held.st_ino == now.st_ino))
      break;
    close(fd);
  }
  if (locked != 0) {
    int e = errno;
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    close(fd);
    if (e == EWOULDBLOCK)
      return pb_err_set(err, PB_EAGAIN, "%s is held by another process%s%s%s",
                        path, buf[0] ? " (pid " : "", buf, buf[0] ? ")" : "");
    return pb_err_set(err, PB_EIO, "%s: cannot lock: %s", path, strerror(e));
  }
  char pid[32];
  int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
    int e = errno;
    close(fd);
    return pb_err_set(err, PB_EIO, "%s: cannot write: %s", path, strerror(e));
  }
  return fd;
}
