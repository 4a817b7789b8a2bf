/* test_evaluator_proc.c - the probs-evaluator process on the fixture run
 * directory (evaluator_fixtures.h) in both modes (--all, and following a
 * learner's announcements until it stops), and the evaluator that
 * `probs train` starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "config.h"
#include "msg.h"
#include "util.h"

#include "evaluator_fixtures.h"

extern char **environ;

/* ------------------------------------------------------ the process */

static pid_t spawn(char *const *argv) {
  pid_t pid;
  if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
  return pid;
}

/* Waits up to timeout_s for pid; returns its exit status, or -1 (killed
 * after the timeout, or died by a signal). */
static int wait_exit(pid_t pid, double timeout_s) {
  double t0 = pb_now();
  for (;;) {
    int st = 0;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (pb_now() - t0 > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

static const char *EVAL_BIN = PB_BIN_DIR "/probs-evaluator";

static void test_process_all(void **state) {
  (void)state;
  clean_outputs();
  char *argv[] = {(char *)EVAL_BIN, "--run-dir",   FX->dir, "--all",
                  "--no-png",       "--no-stderr", NULL};
  assert_int_equal(wait_exit(spawn(argv), 300), 0);
  char path[256];
  fx_path(path, sizeof path, "elo.csv");
  char *csv = slurp(path);
  assert_non_null(csv);
  assert_int_equal(count_str(csv, "\n"), 4);
  fx_path(path, sizeof path, "elo.svg");
  char *svg = slurp(path);
  assert_null(xml_check(svg, "svg"));
  free(svg);
  /* Restarted: nothing is played again. */
  assert_int_equal(wait_exit(spawn(argv), 300), 0);
  fx_path(path, sizeof path, "learner.log");
  char *lg = slurp(path);
  assert_non_null(strstr(lg, "rated 3 version(s)"));
  assert_non_null(strstr(lg, "rated 0 version(s)"));
  assert_non_null(strstr(lg, "3 version(s) already in elo.csv"));
  free(lg);
  fx_path(path, sizeof path, "elo.csv");
  char *again = slurp(path);
  assert_string_equal(again, csv);
  free(again);
  /* A foreign elo.csv stops it, untouched. */
  spit(path, "my,own,table\n1,2,3\n");
  assert_int_equal(wait_exit(spawn(argv), 300), 1);
  again = slurp(path);
  assert_string_equal(again, "my,own,table\n1,2,3\n");
  free(again);
  free(csv);
  /* Usage errors. */
  char *bad1[] = {(char *)EVAL_BIN, "--run-dir", FX->dir,
                  "--all",          "--once",    NULL};
  assert_int_equal(wait_exit(spawn(bad1), 60), 2);
  char nodir[256];
  fx_path(nodir, sizeof nodir, "nowhere");
  char *bad2[] = {(char *)EVAL_BIN, FX->cfg_path, "--run-dir", nodir,
                  "--all",          NULL};
  assert_int_equal(wait_exit(spawn(bad2), 60), 2);
  char *bad3[] = {(char *)EVAL_BIN, "--run-dir",     FX->dir, "--all",
                  "--anchor",       "lookahead:7=5", NULL};
  assert_int_equal(wait_exit(spawn(bad3), 60), 2);
  unlink(path);
}

/* Waits (up to 120 s) until the log at path says the evaluator follows
 * the run: its signal handlers and subscription are in place. */
static void wait_following(const char *path) {
  double t0 = pb_now();
  for (;;) {
    char *text = slurp(path);
    int ready = text != NULL && strstr(text, "following ") != NULL;
    free(text);
    if (ready || pb_now() - t0 > 120) break;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* A "learner": a PUB socket bound to the fixture's announce endpoint. */
static void *bind_pub(void *ctx) {
  void *pub = zmq_socket(ctx, ZMQ_PUB);
  int linger = 0;
  zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
  assert_int_equal(zmq_bind(pub, FX->cfg.net.pub_endpoint), 0);
  return pub;
}

/* Publishes a STOPPING announce on pub (a PUB socket). */
static void announce_stop(void *pub) {
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_ANNOUNCE, "c4-smoke", PB_GAME_CONNECT4, "learner");
  m.announce.version = 2;
  m.announce.iteration = 2;
  m.announce.phase = PB_PHASE_STOPPING;
  uint8_t *buf = NULL;
  size_t len = 0;
  assert_int_equal(pb_msg_encode(&m, &buf, &len, NULL), 0);
  zmq_send(pub, buf, len, ZMQ_DONTWAIT);
  free(buf);
}

/* Following a "learner" (a PUB socket here): it rates the newest version,
 * skipping the others, and exits 0 once STOPPING is announced; a second
 * run with nothing to do exits 0 on SIGTERM. */
static void test_process_follow(void **state) {
  (void)state;
  clean_outputs();
  void *ctx = zmq_ctx_new();
  void *pub = bind_pub(ctx);
  char *argv[] = {(char *)EVAL_BIN, "--run-dir", FX->dir, "--no-png",
                  "--no-stderr",    "--nice",    "0",     NULL};
  pid_t pid = spawn(argv);
  assert_true(pid > 0);
  char path[256];
  fx_path(path, sizeof path, "elo.csv");
  /* Wait for the first rating, then announce the end (again and again:
   * a PUB message sent before the subscription is in place is lost). */
  double t0 = pb_now();
  int status = -2;
  while (status == -2 && pb_now() - t0 < 300) {
    if (access(path, F_OK) == 0) announce_stop(pub);
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid)
      status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (status == -2) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fail_msg("the evaluator did not exit after STOPPING");
  }
  assert_int_equal(status, 0);
  char *csv = slurp(path);
  assert_int_equal(count_str(csv, "\n"), 2);
  assert_non_null(strstr(csv, "\n2,2,"));
  free(csv);
  fx_path(path, sizeof path, "learner.log");
  char *lg = slurp(path);
  assert_non_null(strstr(lg, "skipping 2 versions"));
  assert_non_null(strstr(lg, "the learner is stopping"));
  free(lg);

  /* Nothing to do: it waits until SIGTERM, then exits 0. The signal is
   * sent once it has started following (its handlers are in place). */
  unlink(path);
  pid = spawn(argv);
  wait_following(path);
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* still following */
  kill(pid, SIGTERM);
  assert_int_equal(wait_exit(pid, 60), 0);

  /* --until: returns once that version is rated. */
  clean_outputs();
  char *until[] = {(char *)EVAL_BIN, "--run-dir", FX->dir, "--no-png",
                   "--no-stderr",    "--until",   "2",     NULL};
  assert_int_equal(wait_exit(spawn(until), 300), 0);
  fx_path(path, sizeof path, "elo.csv");
  csv = slurp(path);
  assert_int_equal(count_str(csv, "\n"), 2);
  free(csv);
  zmq_close(pub);
  zmq_ctx_term(ctx);
}

/* A learner restarts and then finishes while the evaluator is busy rating:
 * the new one announces STOPPING for about a second and goes away. The
 * evaluator still sees the announcement and exits 0. (A SUB socket sends
 * its subscription to a reconnected publisher only when its owner thread
 * touches it: an evaluator that left the socket alone during a long rating
 * was not subscribed to the restarted learner and missed the end.) */
static void test_process_stop_while_busy(void **state) {
  (void)state;
  clean_outputs();
  void *ctx = zmq_ctx_new();
  void *pub = bind_pub(ctx);
  /* A deep beam search for the accuracy: the first rating takes seconds
   * (about 7 s in a Release build, longer under the sanitizers). */
  char *argv[] = {(char *)EVAL_BIN, "--run-dir", FX->dir, "--no-png",
                  "--no-stderr", "--nice", "0", "--set",
                  "eval.search=beam", "--set",
                  "eval.search_expansions=1500", "--set",
                  "eval.search_depth=10", NULL};
  pid_t pid = spawn(argv);
  assert_true(pid > 0);
  char path[256];
  fx_path(path, sizeof path, "learner.log");
  wait_following(path);
  /* Connected (ipc, at once) and rating: the learner restarts, announces
   * for a second and leaves. */
  struct timespec ts = {0, 200 * 1000 * 1000};
  nanosleep(&ts, NULL);
  zmq_close(pub);
  nanosleep(&ts, NULL);
  pub = bind_pub(ctx);
  ts.tv_nsec = 500 * 1000 * 1000; /* time to reconnect (every 100 ms) */
  nanosleep(&ts, NULL);
  fx_path(path, sizeof path, "elo.csv");
  for (int i = 0; i < 20; i++) {
    announce_stop(pub);
    ts.tv_nsec = 50 * 1000 * 1000;
    nanosleep(&ts, NULL);
  }
  int busy = access(path, F_OK) != 0; /* the rating was not done yet */
  zmq_close(pub);
  zmq_ctx_term(ctx);
  int status = wait_exit(pid, 120);
  if (status != 0) fail_msg("the evaluator did not exit 0 (%d)", status);
  assert_true(busy);
  fx_path(path, sizeof path, "learner.log");
  char *lg = slurp(path);
  assert_non_null(strstr(lg, "the learner is stopping"));
  free(lg);
}

/* `probs train` (distributed: learner, one actor, one searcher, and the
 * evaluator it starts by default) leaves elo.csv and elo.svg in the run
 * directory; `--all` afterwards completes the table to every version. */
static void test_train_starts_evaluator(void **state) {
  (void)state;
  const char *need[] = {PB_BIN_DIR "/probs", PB_BIN_DIR "/probs-learner",
                        PB_BIN_DIR "/probs-actor"};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (access(need[i], X_OK) != 0) {
      fprintf(stderr, "%s not built: skipped\n", need[i]);
      skip();
    }
  char dir[256], work[300], pub[300], path[320];
  fx_path(dir, sizeof dir, "train");
  snprintf(work, sizeof work, "net.work_endpoint=ipc://%s/w", FX->dir);
  snprintf(pub, sizeof pub, "net.pub_endpoint=ipc://%s/p", FX->dir);
  char *argv[] = {(char *)PB_BIN_DIR "/probs",
                  "train",
                  (char *)PB_SOURCE_DIR "/configs/connect4-smoke.yaml",
                  "--run-dir",
                  dir,
                  "--actors",
                  "1",
                  "--searchers",
                  "1",
                  "--set",
                  work,
                  "--set",
                  pub,
                  NULL};
  assert_int_equal(wait_exit(spawn(argv), 600), 0);
  snprintf(path, sizeof path, "%s/elo.csv", dir);
  char *csv = slurp(path);
  if (csv == NULL) fail_msg("no %s", path);
  assert_true(count_str(csv, "\n") >= 2);
  assert_true(!strncmp(csv, "iteration,version,elo,", 22));
  free(csv);
  snprintf(path, sizeof path, "%s/elo.svg", dir);
  char *svg = slurp(path);
  assert_non_null(svg);
  assert_null(xml_check(svg, "svg"));
  free(svg);
  char *all[] = {(char *)EVAL_BIN, "--run-dir",   dir, "--all",
                 "--no-png",       "--no-stderr", NULL};
  assert_int_equal(wait_exit(spawn(all), 300), 0);
  snprintf(path, sizeof path, "%s/elo.csv", dir);
  csv = slurp(path);
  assert_int_equal(count_str(csv, "\n"), 4); /* versions 0, 1, 2 */
  assert_non_null(strstr(csv, "\n2,2,"));
  free(csv);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_process_all),
      cmocka_unit_test(test_process_follow),
      cmocka_unit_test(test_process_stop_while_busy),
      cmocka_unit_test(test_train_starts_evaluator),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
