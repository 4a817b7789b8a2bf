/* test_spool.c - common/base/spool: order, both descriptors, a stalled
 * disk (a pipe nobody reads) never blocks the caller, drops are counted,
 * flush and destroy write what is queued; and the async logger and
 * metrics writer of common/base/log built on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "spool.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads what is in a non-blocking pipe into buf (NUL-terminated). */
static size_t drain(int fd, char *buf, size_t cap) {
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
    if (n + 1 >= cap) break;
  }
  buf[n] = '\0';
  return n;
}

static void test_bad_arguments(void **state) {
  (void)state;
  pb_err_t err = {0};
  assert_null(pb_spool_new(100, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "capacity"));
  pb_spool_t *s = pb_spool_new(4096, &err);
  assert_non_null(s);
  assert_int_equal(pb_spool_put(s, 1, -1, "x", 0), PB_EINVAL);
  assert_int_equal(pb_spool_put(NULL, 1, -1, "x", 1), PB_EINVAL);
  static char big[4096];
  assert_int_equal(pb_spool_put(s, 1, -1, big, sizeof big), PB_EINVAL);
  assert_int_equal(pb_spool_dropped(s), 0);
  pb_spool_destroy(&s);
  assert_null(s);
  pb_spool_destroy(&s);
  pb_spool_destroy(NULL);
}

/* Records come out in order, whole, on both descriptors, across the
 * ring's wrap-around. */
static void test_order_and_both_fds(void **state) {
  (void)state;
  int a[2], b[2];
  assert_int_equal(pipe(a), 0);
  assert_int_equal(pipe(b), 0);
  fcntl(a[0], F_SETFL, O_NONBLOCK);
  fcntl(b[0], F_SETFL, O_NONBLOCK);
  pb_err_t err = {0};
  pb_spool_t *s = pb_spool_new(4096, &err);
  assert_non_null(s);
  char want[65536], got_a[65536], got_b[65536];
  size_t wn = 0, an = 0, bn = 0;
  for (int i = 0; i < 2000; i++) {
    char line[64];
    int n = snprintf(line, sizeof line, "record %d %.*s\n", i, i % 37,
                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJK");
    int rc;
    /* A full spool refuses; wait for the writer rather than drop. */
    while ((rc = pb_spool_put(s, a[1], b[1], line, (size_t)n)) == PB_EAGAIN)
      assert_int_equal(pb_spool_flush(s, 5.0), 0);
    assert_int_equal(rc, 0);
    memcpy(want + wn, line, (size_t)n);
    wn += (size_t)n;
    if (wn > 30000) {
      assert_int_equal(pb_spool_flush(s, 5.0), 0);
      an += drain(a[0], got_a + an, sizeof got_a - an);
      bn += drain(b[0], got_b + bn, sizeof got_b - bn);
      assert_int_equal(an, wn);
      assert_int_equal(bn, wn);
      assert_memory_equal(got_a, want, wn);
      assert_memory_equal(got_b, want, wn);
      wn = an = bn = 0;
    }
  }
  assert_int_equal(pb_spool_flush(s, 5.0), 0);
  assert_int_equal(pb_spool_pending(s), 0);
  an += drain(a[0], got_a + an, sizeof got_a - an);
  assert_int_equal(an, wn);
  assert_memory_equal(got_a, want, wn);
  /* Only the second descriptor. */
  assert_int_equal(pb_spool_put(s, -1, b[1], "only b\n", 7), 0);
  pb_spool_destroy(&s);
  bn += drain(b[0], got_b + bn, sizeof got_b - bn);
  assert_int_equal(bn, wn + 7);
  assert_memory_equal(got_b + wn, "only b\n", 7);
  assert_int_equal(drain(a[0], got_a, sizeof got_a), 0);
  for (int i = 0; i < 2; i++) {
    close(a[i]);
    close(b[i]);
  }
}

/* A pipe nobody reads: the writer blocks in write(2) once the pipe is
 * full, the caller never does; the spool fills, drops and counts, and
 * says how long it has been stalled. Reading the pipe frees it all. */
static void test_stalled_disk_never_blocks(void **state) {
  (void)state;
  int p[2];
  assert_int_equal(pipe(p), 0);
  /* Fill the pipe first: the writer's first write(2) blocks. */
  fcntl(p[1], F_SETFL, O_NONBLOCK);
  size_t prefill = 0;
  for (ssize_t w; (w = write(p[1], "................", 16)) > 0;)
    prefill += (size_t)w;
  fcntl(p[1], F_SETFL, 0);
  pb_err_t err = {0};
  pb_spool_t *s = pb_spool_new(65536, &err);
  assert_non_null(s);
  static char chunk[1000];
  memset(chunk, 'x', sizeof chunk);
  chunk[sizeof chunk - 1] = '\n';
  /* The writer's record + ring (64 KiB): ~65 records fit. */
  int accepted = 0, refused = 0;
  const double t0 = now();
  for (int i = 0; i < 1000; i++) {
    int rc = pb_spool_put(s, p[1], -1, chunk, sizeof chunk);
    if (rc == 0)
      accepted++;
    else {
      assert_int_equal(rc, PB_EAGAIN);
      refused++;
    }
  }
  /* 1000 puts against a stuck disk return at once. */
  assert_true(now() - t0 < 5.0);
  assert_true(refused > 0);
  assert_true(accepted > 0);
  assert_int_equal(pb_spool_dropped(s), (uint64_t)refused);
  /* The writer sits in write(2). */
  double stalled = 0;
  for (int i = 0; i < 100 && stalled < 0.2; i++) {
    usleep(10000);
    stalled = pb_spool_stalled(s);
  }
  assert_true(stalled >= 0.2);
  assert_int_equal(pb_spool_flush(s, 0.2), PB_EAGAIN);
  /* A reader comes: everything accepted arrives, in full records. */
  size_t total = 0;
  char buf[8192];
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  const double t1 = now();
  const size_t expect = prefill + (size_t)accepted * sizeof chunk;
  while (total < expect && now() - t1 < 10.0) {
    ssize_t r = read(p[0], buf, sizeof buf);
    if (r > 0)
      total += (size_t)r;
    else
      usleep(1000);
  }
  assert_int_equal(total, expect);
  assert_int_equal(pb_spool_flush(s, 5.0), 0);
  assert_true(pb_spool_stalled(s) == 0);
  pb_spool_destroy(&s);
  close(p[0]);
  close(p[1]);
}

typedef struct {
  pb_spool_t *s;
  int fd, id;
} putter_t;

static void *put_many(void *arg) {
  putter_t *p = arg;
  for (int i = 0; i < 500; i++) {
    char line[32];
    int n = snprintf(line, sizeof line, "t%d %04d\n", p->id, i);
    while (pb_spool_put(p->s, p->fd, -1, line, (size_t)n) == PB_EAGAIN)
      usleep(100);
  }
  return NULL;
}

/* Four threads put at once: every line arrives whole, each thread's in
 * its order. */
static void test_threads(void **state) {
  (void)state;
  char path[] = "/tmp/pb_test_spool_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  pb_err_t err = {0};
  pb_spool_t *s = pb_spool_new(4096, &err);
  assert_non_null(s);
  pthread_t th[4];
  putter_t pt[4];
  for (int i = 0; i < 4; i++) {
    pt[i] = (putter_t){s, fd, i};
    pthread_create(&th[i], NULL, put_many, &pt[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  pb_spool_destroy(&s);
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  int next[4] = {0};
  char line[64];
  int lines = 0;
  while (fgets(line, sizeof line, fp)) {
    int t, i;
    assert_int_equal(sscanf(line, "t%d %d", &t, &i), 2);
    assert_in_range(t, 0, 3);
    assert_int_equal(i, next[t]);
    next[t]++;
    lines++;
  }
  assert_int_equal(lines, 2000);
  fclose(fp);
  close(fd);
  unlink(path);
}

/* The async logger: lines reach the file by destroy; against a stuck
 * descriptor, logging returns at once, drops are counted, and once the
 * disk frees up a line says how many were dropped. */
static void test_async_log(void **state) {
  (void)state;
  char dir[] = "/tmp/pb_test_spool_log_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[96];
  snprintf(path, sizeof path, "%s/fifo", dir);
  assert_int_equal(mkfifo(path, 0600), 0);
  /* Hold the read end so that opening for writing does not wait. */
  int rd = open(path, O_RDONLY | O_NONBLOCK);
  assert_true(rd >= 0);
  pb_err_t err = {0};
  pb_log_t *log = pb_log_new("spooltest", path, PB_LOG_INFO, &err);
  assert_non_null(log);
  pb_log_set_stderr(log, 0);
  assert_int_equal(pb_log_set_async(log, 65536, &err), 0);
  const double t0 = now();
  for (int i = 0; i < 2000; i++)
    pb_log_write(log, PB_LOG_INFO, "line %d %0400d", i, 0);
  assert_true(now() - t0 < 5.0);
  double stalled = 0;
  for (int i = 0; i < 100 && stalled < 0.1; i++) {
    usleep(10000);
    stalled = pb_log_stalled(log);
  }
  assert_true(stalled >= 0.1);
  const uint64_t dropped = pb_log_dropped(log);
  assert_true(dropped > 0);
  /* Read everything as it comes; one more line reports the drops. */
  static char buf[1 << 20];
  size_t n = 0;
  const double t1 = now();
  int said = 0;
  while (now() - t1 < 10.0) {
    ssize_t r = read(rd, buf + n, sizeof buf - 1 - n);
    if (r > 0)
      n += (size_t)r;
    else
      usleep(1000);
    buf[n] = '\0';
    if (!said && pb_log_stalled(log) == 0 && now() - t1 > 0.3) {
      pb_log_write(log, PB_LOG_INFO, "after the stall");
      said = 1;
    }
    if (strstr(buf, "after the stall")) break;
  }
  buf[n] = '\0';
  assert_non_null(strstr(buf, "line 0 "));
  assert_non_null(strstr(buf, "log line(s) dropped: the disk did not keep up"));
  assert_non_null(strstr(buf, "after the stall"));
  assert_non_null(strstr(buf, "spooltest"));
  pb_log_destroy(&log);
  close(rd);
  unlink(path);
  rmdir(dir);
}

/* Async metrics: whole lines, in order, written by destroy. */
static void test_async_metrics(void **state) {
  (void)state;
  char dir[] = "/tmp/pb_test_spool_m_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[96];
  snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
  pb_err_t err = {0};
  pb_metrics_t *m = pb_metrics_new(path, &err);
  assert_non_null(m);
  assert_int_equal(pb_metrics_set_async(m, 65536, &err), 0);
  for (int i = 0; i < 100; i++) {
    char line[64];
    snprintf(line, sizeof line, "{\"i\":%d}", i);
    assert_int_equal(pb_metrics_write(m, line), 0);
  }
  assert_true(pb_metrics_stalled(m) < 1.0);
  pb_metrics_destroy(&m);
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  char line[256];
  int i = 0;
  while (fgets(line, sizeof line, fp)) {
    char want[32];
    snprintf(want, sizeof want, "\"i\":%d}", i);
    assert_non_null(strstr(line, want));
    assert_non_null(strchr(line, '\n'));
    i++;
  }
  assert_int_equal(i, 100);
  fclose(fp);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_order_and_both_fds),
      cmocka_unit_test(test_stalled_disk_never_blocks),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_async_log),
      cmocka_unit_test(test_async_metrics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
