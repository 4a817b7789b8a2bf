/* spool.c - records in a ring, written by a thread (spool.h).
 *
 * The ring holds records [fd1 i32][fd2 i32][len u32][len bytes], wrapped
 * around the end of the buffer byte by byte. The writer copies one record
 * out under the mutex and writes it without it, so that putting never
 * waits for a write. */
#include "spool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "invariant.h"

enum { HEAD = 12 };

struct pb_spool {
  pthread_mutex_t mu;
  pthread_cond_t more, done; /* records queued; a record written */
  pthread_t thread;
  uint8_t *ring;
  size_t cap, head, used; /* next byte to read, bytes queued */
  uint64_t put_seq, written_seq; /* records queued / written, ever */
  uint64_t dropped;
  int stop;
  uint8_t *scratch; /* the record being written, [cap] */
  double busy_since; /* monotonic seconds when the write began; 0: idle */
};

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Copies n bytes in or out of the ring at offset `at`, wrapping. */
static void ring_in(pb_spool_t *s, size_t at, const void *src, size_t n) {
  at %= s->cap;
  size_t first = n < s->cap - at ? n : s->cap - at;
  memcpy(s->ring + at, src, first);
  memcpy(s->ring, (const uint8_t *)src + first, n - first);
}

static void ring_out(const pb_spool_t *s, size_t at, void *dst, size_t n) {
  at %= s->cap;
  size_t first = n < s->cap - at ? n : s->cap - at;
  memcpy(dst, s->ring + at, first);
  memcpy((uint8_t *)dst + first, s->ring, n - first);
}

static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return; /* a failing descriptor loses its record, nothing else */
    }
    p += w;
    n -= (size_t)w;
  }
}

static void *writer(void *arg) {
  pb_spool_t *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->used == 0 && !s->stop) pthread_cond_wait(&s->more, &s->mu);
    if (s->used == 0) break; /* stopped and empty */
    uint8_t h[HEAD];
    ring_out(s, s->head, h, HEAD);
    int32_t fd1, fd2;
    uint32_t len;
    memcpy(&fd1, h, 4);
    memcpy(&fd2, h + 4, 4);
    memcpy(&len, h + 8, 4);
    pb_assert(HEAD + (size_t)len <= s->used);
    ring_out(s, s->head + HEAD, s->scratch, len);
    s->head = (s->head + HEAD + len) % s->cap;
    s->used -= HEAD + len;
    s->busy_since = mono();
    pthread_mutex_unlock(&s->mu);
    if (fd1 >= 0) write_all(fd1, s->scratch, len);
    if (fd2 >= 0) write_all(fd2, s->scratch, len);
    pthread_mutex_lock(&s->mu);
    s->busy_since = 0;
    s->written_seq++;
    pthread_cond_broadcast(&s->done);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

pb_spool_t *pb_spool_new(size_t capacity, pb_err_t *err) {
  if (capacity < 4096 || capacity > ((size_t)1 << 30)) {
    pb_err_set(err, PB_EINVAL, "spool: capacity %zu outside [4096, 1 GiB]",
               capacity);
    return NULL;
  }
  pb_spool_t *s = calloc(1, sizeof *s);
  if (s == NULL || (s->ring = malloc(capacity)) == NULL ||
      (s->scratch = malloc(capacity)) == NULL) {
    if (s) free(s->ring);
    free(s);
    pb_err_set(err, PB_ENOMEM, "spool: out of memory");
    return NULL;
  }
  s->cap = capacity;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->more, NULL);
  pthread_cond_init(&s->done, NULL);
  if (pthread_create(&s->thread, NULL, writer, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->more);
    pthread_cond_destroy(&s->done);
    free(s->ring);
    free(s->scratch);
    free(s);
    pb_err_set(err, PB_EIO, "spool: cannot start its thread");
    return NULL;
  }
  return s;
}

int pb_spool_put(pb_spool_t *s, int fd1, int fd2, const void *buf, size_t n) {
  if (s == NULL || buf == NULL || n == 0 || n + HEAD > s->cap)
    return PB_EINVAL;
  pthread_mutex_lock(&s->mu);
  if (s->used + HEAD + n > s->cap) {
    s->dropped++;
    pthread_mutex_unlock(&s->mu);
    return PB_EAGAIN;
  }
  uint8_t h[HEAD];
  int32_t a = fd1, b = fd2;
  uint32_t len = (uint32_t)n;
  memcpy(h, &a, 4);
  memcpy(h + 4, &b, 4);
  memcpy(h + 8, &len, 4);
  size_t tail = s->head + s->used;
  ring_in(s, tail, h, HEAD);
  ring_in(s, tail + HEAD, buf, n);
  s->used += HEAD + n;
  s->put_seq++;
  pthread_cond_signal(&s->more);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

double pb_spool_stalled(const pb_spool_t *s) {
  if (s == NULL) return 0;
  pthread_mutex_t *mu = (pthread_mutex_t *)&s->mu;
  pthread_mutex_lock(mu);
  double since = s->busy_since;
  pthread_mutex_unlock(mu);
  return since > 0 ? mono() - since : 0;
}

uint64_t pb_spool_dropped(const pb_spool_t *s) {
  if (s == NULL) return 0;
  pthread_mutex_t *mu = (pthread_mutex_t *)&s->mu;
  pthread_mutex_lock(mu);
  uint64_t d = s->dropped;
  pthread_mutex_unlock(mu);
  return d;
}

size_t pb_spool_pending(const pb_spool_t *s) {
  if (s == NULL) return 0;
  pthread_mutex_t *mu = (pthread_mutex_t *)&s->mu;
  pthread_mutex_lock(mu);
  size_t u = s->used;
  pthread_mutex_unlock(mu);
  return u;
}

int pb_spool_flush(pb_spool_t *s, double timeout_s) {
  if (s == NULL) return 0;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  double t = (double)dl.tv_sec + 1e-9 * (double)dl.tv_nsec + timeout_s;
  dl.tv_sec = (time_t)t;
  dl.tv_nsec = (long)((t - (double)dl.tv_sec) * 1e9);
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  const uint64_t want = s->put_seq;
  while (s->written_seq < want)
    if (pthread_cond_timedwait(&s->done, &s->mu, &dl) == ETIMEDOUT) {
      rc = PB_EAGAIN;
      break;
    }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

void pb_spool_destroy(pb_spool_t **ps) {
  if (ps == NULL || *ps == NULL) return;
  pb_spool_t *s = *ps;
  *ps = NULL;
  int drained = pb_spool_flush(s, 5.0) == 0;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_signal(&s->more);
  pthread_mutex_unlock(&s->mu);
  if (!drained) {
    /* The disk is stuck: the thread stays in write(2) with what it holds;
     * the process is ending, and freeing under it would be worse. */
    pthread_detach(s->thread);
    return;
  }
  pthread_join(s->thread, NULL);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->more);
  pthread_cond_destroy(&s->done);
  free(s->ring);
  free(s->scratch);
  free(s);
}
