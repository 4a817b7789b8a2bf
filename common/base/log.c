/* log.c - one line per call, one write(2) per line (see log.h).
 *
 * Lines are formatted into a stack buffer (a heap one only for very long
 * messages) and written with a single write on O_APPEND descriptors; the
 * mutex only keeps the stderr and file copies of concurrent lines in the
 * same order. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "spool.h"

#define PB__LOG_COMPONENT_MAX 32
#define PB__LOG_LINE 1024 /* lines up to this long never touch the heap */

struct pb_log {
  pthread_mutex_t mu;
  char component[PB__LOG_COMPONENT_MAX];
  int level;
  int to_stderr;
  int fd; /* -1 without a file */
  pb_spool_t *spool;     /* pb_log_set_async; NULL: lines written here */
  uint64_t dropped_said; /* the spool's drops already reported */
};

struct pb_metrics {
  pthread_mutex_t mu;
  int fd;
  pb_spool_t *spool; /* pb_metrics_set_async */
};

static const char *level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

int pb_log_level_parse(const char *s) {
  if (s == NULL) return PB_EINVAL;
  if (!strcmp(s, "debug")) return PB_LOG_DEBUG;
  if (!strcmp(s, "info")) return PB_LOG_INFO;
  if (!strcmp(s, "warn") || !strcmp(s, "warning")) return PB_LOG_WARN;
  if (!strcmp(s, "error")) return PB_LOG_ERROR;
  return PB_EINVAL;
}

const char *pb_log_level_name(int level) {
  if (level < PB_LOG_DEBUG || level > PB_LOG_ERROR) return "?";
  return level_names[level];
}

/* Writes all of buf, retrying after signals and short writes. */
static int write_all(int fd, const char *buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

static int open_append(const char *path) {
  int fd;
  do {
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

pb_log_t *pb_log_new(const char *component, const char *path, int level,
                     pb_err_t *err) {
  if (level < PB_LOG_DEBUG || level > PB_LOG_ERROR) {
    pb_err_set(err, PB_EINVAL, "log: bad level %d", level);
    return NULL;
  }
  pb_log_t *log = calloc(1, sizeof *log);
  if (log == NULL) {
    pb_err_set(err, PB_ENOMEM, "log: out of memory");
    return NULL;
  }
  snprintf(log->component, sizeof log->component, "%s",
           component && *component ? component : "probs");
  log->level = level;
  log->to_stderr = 1;
  log->fd = -1;
  if (path != NULL) {
    log->fd = open_append(path);
    if (log->fd < 0) {
      pb_err_set(err, PB_EIO, "log: cannot open '%s': %s", path,
                 strerror(errno));
      free(log);
      return NULL;
    }
  }
  if (pthread_mutex_init(&log->mu, NULL) != 0) {
    if (log->fd >= 0) close(log->fd);
    free(log);
    pb_err_set(err, PB_ENOMEM, "log: cannot create a mutex");
    return NULL;
  }
  return log;
}

void pb_log_destroy(pb_log_t **logp) {
  if (logp == NULL || *logp == NULL) return;
  pb_log_t *log = *logp;
  pb_spool_destroy(&log->spool);
  if (log->fd >= 0) close(log->fd);
  pthread_mutex_destroy(&log->mu);
  free(log);
  *logp = NULL;
}

void pb_log_set_level(pb_log_t *log, int level) {
  if (log == NULL || level < PB_LOG_DEBUG || level > PB_LOG_ERROR) return;
  __atomic_store_n(&log->level, level, __ATOMIC_RELAXED);
}

void pb_log_set_stderr(pb_log_t *log, int on) {
  if (log == NULL) return;
  pthread_mutex_lock(&log->mu);
  log->to_stderr = on != 0;
  pthread_mutex_unlock(&log->mu);
}

int pb_log_enabled(const pb_log_t *log, int level) {
  if (level < PB_LOG_DEBUG || level > PB_LOG_ERROR) return 0;
  if (log == NULL) return level >= PB_LOG_INFO;
  /* Relaxed: while the level changes, one line more or less is fine. */
  return level >= __atomic_load_n(&log->level, __ATOMIC_RELAXED);
}

/* "2026-11-21T20:15:03.123Z" for ts into buf (at least 25 bytes). */
static void timestamp_of(const struct timespec *ts, char *buf, size_t n) {
  struct tm tm;
  gmtime_r(&ts->tv_sec, &tm);
  size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + k, n - k, ".%03ldZ", ts->tv_nsec / 1000000L);
}

/* The same for now. */
static void timestamp(char *buf, size_t n) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  timestamp_of(&ts, buf, n);
}

/* Queues a line (under log->mu), after a line saying how many were
 * dropped since the last such line, when there is room for it. */
static void spool_line(pb_log_t *log, const char *line, size_t len) {
  const int e = log->to_stderr ? STDERR_FILENO : -1;
  uint64_t d = pb_spool_dropped(log->spool);
  if (d > log->dropped_said) {
    char note[160], ts[40];
    timestamp(ts, sizeof ts);
    int n = snprintf(note, sizeof note,
                     "%s %s WARN  %llu log line(s) dropped: the disk did not "
                     "keep up\n",
                     ts, log->component,
                     (unsigned long long)(d - log->dropped_said));
    if (n > 0 && pb_spool_put(log->spool, e, log->fd, note, (size_t)n) == 0)
      log->dropped_said = d;
  }
  if (len + 12 > 65536) len = 65535 - 12; /* the spool takes lines this long */
  (void)pb_spool_put(log->spool, e, log->fd, line, len);
}

int pb_log_set_async(pb_log_t *log, size_t capacity, pb_err_t *err) {
  if (log == NULL) return pb_err_set(err, PB_EINVAL, "log: NULL logger");
  if (log->spool != NULL) return 0;
  if (capacity < 65536) capacity = 65536;
  pb_spool_t *s = pb_spool_new(capacity, err);
  if (s == NULL) return err && err->code ? err->code : PB_ENOMEM;
  pthread_mutex_lock(&log->mu);
  log->spool = s;
  pthread_mutex_unlock(&log->mu);
  return 0;
}

double pb_log_stalled(const pb_log_t *log) {
  return log != NULL ? pb_spool_stalled(log->spool) : 0;
}

uint64_t pb_log_dropped(const pb_log_t *log) {
  return log != NULL ? pb_spool_dropped(log->spool) : 0;
}

void pb_log_vwrite(pb_log_t *log, int level, const char *fmt, va_list ap) {
  if (!pb_log_enabled(log, level)) return;
  char stack[PB__LOG_LINE];
  char ts[40];
  timestamp(ts, sizeof ts);
  const char *comp = log ? log->component : "probs";
  int head = snprintf(stack, sizeof stack, "%s %s %-5s ", ts, comp,
                      level_names[level]);
  if (head < 0) return;
  va_list ap2;
  va_copy(ap2, ap);
  int body = vsnprintf(stack + head, sizeof stack - (size_t)head, fmt, ap2);
  va_end(ap2);
  if (body < 0) body = 0;
  char *line = stack;
  size_t len = (size_t)head + (size_t)body;
  if (len + 2 > sizeof stack) {
    line = malloc(len + 2);
    if (line != NULL) {
      memcpy(line, stack, (size_t)head);
      vsnprintf(line + head, (size_t)body + 1, fmt, ap);
    } else { /* keep what fits */
      line = stack;
      len = sizeof stack - 2;
    }
  }
  /* One call, one line: a trailing newline is dropped, inner ones (and
   * other control characters that would break the line) become spaces. */
  while (len > (size_t)head && (line[len - 1] == '\n' || line[len - 1] == '\r'))
    len--;
  for (size_t i = (size_t)head; i < len; i++)
    if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
  line[len++] = '\n';
  line[len] = '\0';

  if (log == NULL) {
    (void)write_all(STDERR_FILENO, line, len);
  } else if (log->spool != NULL) {
    pthread_mutex_lock(&log->mu);
    spool_line(log, line, len);
    pthread_mutex_unlock(&log->mu);
  } else {
    pthread_mutex_lock(&log->mu);
    if (log->to_stderr) (void)write_all(STDERR_FILENO, line, len);
    if (log->fd >= 0) (void)write_all(log->fd, line, len);
    pthread_mutex_unlock(&log->mu);
  }
  if (line != stack) free(line);
}

void pb_log_write(pb_log_t *log, int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pb_log_vwrite(log, level, fmt, ap);
  va_end(ap);
}

#define PB__LOG_LEVEL_FN(fn, lvl)                \
  void fn(pb_log_t *log, const char *fmt, ...) { \
    va_list ap;                                  \
    va_start(ap, fmt);                           \
    pb_log_vwrite(log, lvl, fmt, ap);            \
    va_end(ap);                                  \
  }
PB__LOG_LEVEL_FN(pb_log_debug, PB_LOG_DEBUG)
PB__LOG_LEVEL_FN(pb_log_info, PB_LOG_INFO)
PB__LOG_LEVEL_FN(pb_log_warn, PB_LOG_WARN)
PB__LOG_LEVEL_FN(pb_log_error, PB_LOG_ERROR)
#undef PB__LOG_LEVEL_FN

/* ---- metrics --------------------------------------------------------- */

pb_metrics_t *pb_metrics_new(const char *path, pb_err_t *err) {
  if (path == NULL) {
    pb_err_set(err, PB_EINVAL, "metrics: NULL path");
    return NULL;
  }
  pb_metrics_t *m = calloc(1, sizeof *m);
  if (m == NULL) {
    pb_err_set(err, PB_ENOMEM, "metrics: out of memory");
    return NULL;
  }
  m->fd = open_append(path);
  if (m->fd < 0) {
    pb_err_set(err, PB_EIO, "metrics: cannot open '%s': %s", path,
               strerror(errno));
    free(m);
    return NULL;
  }
  if (pthread_mutex_init(&m->mu, NULL) != 0) {
    close(m->fd);
    free(m);
    pb_err_set(err, PB_ENOMEM, "metrics: cannot create a mutex");
    return NULL;
  }
  return m;
}

int pb_metrics_write(pb_metrics_t *m, const char *line) {
  if (m == NULL || line == NULL) return PB_EINVAL;
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  /* A JSON object on one line: the validator refuses raw control
   * characters inside strings, and whitespace newlines are checked here. */
  if (*p != '{' || strchr(line, '\n') != NULL || strchr(line, '\r') != NULL ||
      pb_json_validate(line) != 0)
    return PB_EINVAL;
  /* Every line starts with when it was written. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char stamp[40], head[96];
  timestamp_of(&ts, stamp, sizeof stamp);
  const char *rest = p + 1;
  const char *q = rest;
  while (*q == ' ' || *q == '\t') q++;
  int hn = snprintf(head, sizeof head, "{\"time\":\"%s\",\"unix_time\":%.3f%s",
                    stamp, (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec,
                    *q == '}' ? "" : ",");
  if (hn < 0 || (size_t)hn >= sizeof head) return PB_EINVAL;
  size_t n = strlen(rest);
  struct iovec iov[3] = {
      {head, (size_t)hn}, {(void *)rest, n}, {(void *)"\n", 1}};
  const size_t total = (size_t)hn + n + 1;
  int rc = 0;
  if (m->spool != NULL) {
    /* The whole line in one record; the spool writes it in one call. */
    char stackbuf[4096];
    char *b = total <= sizeof stackbuf ? stackbuf : malloc(total);
    if (b == NULL) return PB_ENOMEM;
    memcpy(b, head, (size_t)hn);
    memcpy(b + hn, rest, n);
    b[total - 1] = '\n';
    rc = pb_spool_put(m->spool, -1, m->fd, b, total);
    if (b != stackbuf) free(b);
    return rc;
  }
  pthread_mutex_lock(&m->mu);
  ssize_t w;
  do {
    w = writev(m->fd, iov, 3);
  } while (w < 0 && errno == EINTR);
  if (w < 0) {
    rc = PB_EIO;
  } else if ((size_t)w < total) { /* short write: finish the line */
    size_t done = (size_t)w;
    for (int i = 0; i < 3 && rc == 0; i++) {
      if (done >= iov[i].iov_len) {
        done -= iov[i].iov_len;
        continue;
      }
      if (write_all(m->fd, (const char *)iov[i].iov_base + done,
                    iov[i].iov_len - done))
        rc = PB_EIO;
      done = 0;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int pb_metrics_set_async(pb_metrics_t *m, size_t capacity, pb_err_t *err) {
  if (m == NULL) return pb_err_set(err, PB_EINVAL, "metrics: NULL");
  if (m->spool != NULL) return 0;
  if (capacity < 65536) capacity = 65536;
  m->spool = pb_spool_new(capacity, err);
  return m->spool != NULL ? 0 : err && err->code ? err->code : PB_ENOMEM;
}

double pb_metrics_stalled(const pb_metrics_t *m) {
  return m != NULL ? pb_spool_stalled(m->spool) : 0;
}

uint64_t pb_metrics_dropped(const pb_metrics_t *m) {
  return m != NULL ? pb_spool_dropped(m->spool) : 0;
}

void pb_metrics_destroy(pb_metrics_t **mp) {
  if (mp == NULL || *mp == NULL) return;
  pb_metrics_t *m = *mp;
  pb_spool_destroy(&m->spool);
  close(m->fd);
  pthread_mutex_destroy(&m->mu);
  free(m);
  *mp = NULL;
}
