/* test_learner_disk.c - the learner's loop never waits for the disk
 * (learner/learner.h): a real probs-learner whose learner.log and
 * metrics.jsonl are FIFOs, full, that nobody reads (every write(2) to them
 * blocks, as on a frozen file system) starts, binds, answers /status and
 * /metrics and says how long the disk has stalled; once the FIFOs are read
 * again the stall ends, and SIGTERM still ends the learner cleanly with
 * its lines written. A learner that logged on its loop would hang at its
 * first line and never write RUN_DIR/endpoints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "http_fixtures.h"
#include "json.h"
#include "proc.h"
#include "run_fixtures.h"


/* A FIFO at dir/name, its read end held open (non-blocking, returned) and
 * its pipe filled to the brim, so that the next write(2) blocks. */
static int full_fifo(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(mkfifo(path, 0600), 0);
  int rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  assert_true(rd >= 0);
  int wr = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  assert_true(wr >= 0);
  static const char fill[64] = "filler\n";
  while (write(wr, fill, sizeof fill) > 0) {
  }
  assert_int_equal(errno, EAGAIN);
  close(wr); /* the bytes stay: the read end is open */
  return rd;
}

/* Reads what a FIFO holds; appends what follows the filler (the
 * learner's lines) to out. */
static void drain(int fd, char *out, size_t cap, size_t *len) {
  char buf[8192];
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < r; i++)
      if (buf[i] != '\0' && *len + 1 < cap) out[(*len)++] = buf[i];
  out[*len] = '\0';
}

static void test_status_while_the_disk_is_stalled(void **state) {
  (void)state;
  char dir[256];
  tp_tmpdir(dir, sizeof dir, "disk");
  assert_true(dir[0] != '\0');
  const int log_rd = full_fifo(dir, "learner.log");
  const int met_rd = full_fifo(dir, "metrics.jsonl");

  char prog[512], out[512];
  snprintf(prog, sizeof prog, "%s/probs-learner", BIN);
  snprintf(out, sizeof out, "%s/learner.out", dir);
  char *argv[] = {prog, (char *)CONFIG, (char *)"--run-dir", dir,
                  (char *)"--set", (char *)"net.work_endpoint=tcp://127.0.0.1:*",
                  (char *)"--set", (char *)"net.pub_endpoint=tcp://127.0.0.1:*",
                  (char *)"--set", (char *)"net.http_port=-1", NULL};
  pid_t pid = tp_spawn(argv, out);
  assert_true(pid > 0);
  tp_endpoints_t e;
  if (!tp_endpoints(dir, pid, 240, &e)) {
    char *o = tp_slurp(out);
    fail_msg("with its log stalled the learner wrote no endpoints: %s",
             o ? o : "");
  }
  assert_true(e.http > 0);

  /* /status answers, and says the disk has stalled, for longer and
   * longer. */
  char *st = NULL;
  double stalled = 0;
  for (int i = 0; i < 100 && stalled < 0.5; i++) {
    free(st);
    st = http_get(e.http, "/status");
    if (st == NULL)
      fail_msg("with its disk stalled the learner does not answer /status");
    stalled = number_after(st, "\"disk\":{\"stalled_s\":");
    if (stalled < 0.5) tp_sleep(0.1);
  }
  assert_non_null(strstr(st, "HTTP/1.1 200"));
  const char *body = strstr(st, "\r\n\r\n");
  assert_non_null(body);
  assert_int_equal(pb_json_validate(body + 4), 0);
  assert_non_null(strstr(body, "\"phase\":\"selfplay\""));
  assert_true(stalled >= 0.5);
  free(st);
  char *m = http_get(e.http, "/metrics");
  assert_non_null(m);
  assert_true(number_after(m, "\nprobs_disk_stalled_seconds ") >= 0.5);
  free(m);

  /* Somebody reads the FIFOs: the stall ends, the lines arrive. */
  static char logged[1 << 20], metrics[1 << 16];
  size_t nlog = 0, nmet = 0;
  logged[0] = '\0'; /* drained until the stall ends and its lines came */
  stalled = 1;
  for (int i = 0; i < 200 && (stalled != 0 || !strstr(logged, " learner "));
       i++) {
    drain(log_rd, logged, sizeof logged, &nlog);
    drain(met_rd, metrics, sizeof metrics, &nmet);
    tp_sleep(0.05);
    st = http_get(e.http, "/status");
    stalled = number_after(st, "\"disk\":{\"stalled_s\":");
    free(st);
  }
  assert_true(stalled == 0);
  assert_non_null(strstr(logged, " learner "));
  assert_non_null(strstr(logged, "run id"));

  /* SIGTERM: a clean exit, the last lines written (read as they come). */
  kill(pid, SIGTERM);
  for (int i = 0; i < 600 && !tp_exited(pid); i++) {
    drain(log_rd, logged, sizeof logged, &nlog);
    tp_sleep(0.05);
  }
  drain(log_rd, logged, sizeof logged, &nlog);
  const int status = tp_wait(pid, 1);
  assert_true(status >= 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_non_null(strstr(logged, "stopped"));
  close(log_rd);
  close(met_rd);
}

/* Issue 46: the disk freezes under the checkpoint write (the run's file
 * system frozen: the write blocks until it thaws). The learner's temporary
 * file of its first checkpoint is a FIFO nobody reads, so the job on the
 * thread pool blocks in its open(2) as in a write to a frozen disk; while
 * it blocks, /status answers and its disk.stalled_s (and
 * checkpoint_write_s, and /metrics' probs_disk_stalled_seconds) grow. A
 * learner that measured the write only once it returned said 0. */
static void test_checkpoint_write_stall_shows(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "diskckpt");
  r.extra[0] = "net.http_port=-1";
  pid_t l = start_learner(&r);
  assert_true(r.http > 0);
  char fifo[512];
  snprintf(fifo, sizeof fifo, "%s/checkpoints/ckpt-000001.pbck.tmp.%ld", r.dir,
           (long)l);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  start_worker(&r, "selfplay", "actor-1", NULL);
  start_worker(&r, "search", "searcher-1", NULL);
  double stalled = 0, writing = 0;
  char *st = NULL;
  for (int i = 0; i < 1800 && stalled < 1.0; i++) { /* 3 minutes at most */
    free(st);
    st = http_get(r.http, "/status");
    if (st == NULL) fail_msg("the learner does not answer /status");
    stalled = number_after(st, "\"disk\":{\"stalled_s\":");
    writing = number_after(st, "\"checkpoint_write_s\":");
    if (stalled < 1.0) tp_sleep(0.1);
  }
  if (stalled < 1.0) fail_msg("disk.stalled_s stayed %.3f: %s", stalled, st);
  assert_true(writing >= 1.0);
  assert_non_null(strstr(st, "HTTP/1.1 200"));
  free(st);
  char *m = http_get(r.http, "/metrics");
  assert_non_null(m);
  assert_true(number_after(m, "\nprobs_disk_stalled_seconds ") >= 1.0);
  free(m);
  /* The disk thaws: the write goes on (its fsync on a FIFO then fails, as
   * a write to a disk gone bad would; the test ends there). */
  int rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  assert_true(rd >= 0);
  for (int i = 0; i < 100; i++) {
    st = http_get(r.http, "/status");
    if (st == NULL) break; /* the learner stopped on the failed write */
    writing = number_after(st, "\"checkpoint_write_s\":");
    free(st);
    if (writing == 0) break;
    char buf[65536];
    while (read(rd, buf, sizeof buf) > 0) {
    }
    tp_sleep(0.05);
  }
  assert_true(writing == 0 || st == NULL);
  close(rd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_status_while_the_disk_is_stalled,
                                tp_teardown),
      cmocka_unit_test_teardown(test_checkpoint_write_stall_shows,
                                tp_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
