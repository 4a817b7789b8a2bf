/* test_supervise.c - common/launch/supervise with real processes (/bin/sh -c
 * scripts): restarts after crashes, the main child ending the run, signals
 * to the supervisor, SIGKILL after the grace period, giving up, following
 * a file, log redirection. Times are kept short (backoff 20-50 ms). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "supervise.h"

typedef struct {
  char dir[64];
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/pb_test_supervise_XXXXXX");
  if (mkdtemp(f->dir) == NULL) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  int rc = system(cmd);
  free(f);
  return rc == 0 ? 0 : -1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pb_supervise_opts_t fast_opts(void) {
  pb_supervise_opts_t o;
  pb_supervise_opts_default(&o);
  o.backoff_min_s = 0.02;
  o.backoff_max_s = 0.1;
  o.grace_s = 2.0;
  o.no_signals = 1;
  return o;
}

/* Adds `/bin/sh -c script` as child `name`. */
static void add_sh(pb_supervise_t *s, const char *name, const char *script,
                   const char *log_path, int flags) {
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  pb_err_t err;
  pb_err_clear(&err);
  int rc = pb_supervise_add(s, name, argv, NULL, log_path, flags, &err);
  if (rc != 0) fail_msg("add %s: %s", name, err.msg);
}

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (fp == NULL) return strdup("");
  char *buf = calloc(1, 65536);
  assert_non_null(buf);
  size_t n = fread(buf, 1, 65535, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

/* A child that crashes twice (exit 1, then SIGKILL on itself) is started
 * again each time; the third run exits 0 and the main child, which waits
 * for that, ends the run. */
static void test_crash_restarted(void **state) {
  fixture_t *f = *state;
  char script[1024], mscript[1024], counter[128], pid[128];
  snprintf(counter, sizeof counter, "%s/count", f->dir);
  snprintf(pid, sizeof pid, "%s/pid", f->dir);
  snprintf(script, sizeof script,
           "n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $$ > %s; "
           "echo $n > %s; "
           "if [ $n -eq 1 ]; then exit 1; fi; "
           "if [ $n -eq 2 ]; then kill -9 $$; fi; exit 0",
           counter, pid, counter);
  /* the crasher writes 3 just before it exits: main waits until that run
   * is gone (reaped by the supervisor), however slow the machine */
  snprintf(mscript, sizeof mscript,
           "i=0; while [ \"$(cat %s 2>/dev/null)\" != 3 ]; do "
           "sleep 0.02; i=$((i+1)); [ $i -gt 3000 ] && exit 7; done; "
           "p=$(cat %s); while kill -0 $p 2>/dev/null; do sleep 0.02; "
           "i=$((i+1)); [ $i -gt 3000 ] && exit 7; done; exit 0",
           counter, pid);
  pb_supervise_opts_t o = fast_opts();
  pb_err_t err;
  pb_err_clear(&err);
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "crasher", script, NULL, 0);
  add_sh(s, "main", mscript, NULL, PB_SUPERVISE_MAIN);
  assert_int_equal(pb_supervise_run(s, &err), 0);
  pb_supervise_child_t ci;
  assert_int_equal(pb_supervise_child_info(s, "crasher", &ci), 0);
  assert_int_equal(ci.restarts, 2);
  assert_int_equal(ci.done, 1);
  assert_int_equal(ci.gave_up, 0);
  assert_int_equal(ci.last_status, 0);
  assert_int_equal(pb_supervise_child_info(s, "main", &ci), 0);
  assert_int_equal(ci.restarts, 0);
  assert_int_equal(ci.last_status, 0);
  assert_int_equal(pb_supervise_signal(s), 0);
  assert_int_equal(pb_supervise_child_info(s, "nobody", &ci), PB_ENOTFOUND);
  /* run is one-shot */
  assert_int_equal(pb_supervise_run(s, &err), PB_EINVAL);
  pb_supervise_destroy(&s);
  assert_null(s);
}

/* The main child's exit 0 stops the others with SIGTERM (well before the
 * grace period) and the run returns 0. */
static void test_main_exit_stops_others(void **state) {
  (void)state;
  pb_supervise_opts_t o = fast_opts();
  o.grace_s = 5.0;
  pb_err_t err;
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "worker-0", "exec sleep 30", NULL, 0);
  add_sh(s, "worker-1", "exec sleep 30", NULL, 0);
  add_sh(s, "main", "sleep 0.3; exit 0", NULL, PB_SUPERVISE_MAIN);
  double t0 = now_s();
  assert_int_equal(pb_supervise_run(s, &err), 0);
  double dt = now_s() - t0;
  assert_true(dt >= 0.25 && dt < 20.0); /* stopped, not waited for */
  pb_supervise_child_t ci;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(
        pb_supervise_child_info(s, i ? "worker-1" : "worker-0", &ci), 0);
    assert_int_equal(ci.running, 0);
    assert_int_equal(ci.last_signal, SIGTERM);
    assert_int_equal(ci.killed, 0);
    assert_int_equal(ci.restarts, 0);
  }
  pb_supervise_destroy(&s);
}

/* SIGTERM (then SIGINT) sent to the supervising process by one of the
 * children stops everything; the run returns 0 and reports the signal. */
static void signal_stops(int sig) {
  pb_supervise_opts_t o = fast_opts();
  o.no_signals = 0;
  pb_err_t err;
  pb_err_clear(&err);
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  char script[128];
  snprintf(script, sizeof script, "sleep 0.3; kill -%s $PPID; exit 0",
           sig == SIGINT   ? "INT"
           : sig == SIGHUP ? "HUP"
                           : "TERM");
  add_sh(s, "main", "exec sleep 30", NULL, PB_SUPERVISE_MAIN);
  add_sh(s, "worker", "exec sleep 30", NULL, 0);
  add_sh(s, "signaller", script, NULL, 0);
  double t0 = now_s();
  assert_int_equal(pb_supervise_run(s, &err), 0);
  double dt = now_s() - t0;
  assert_true(dt >= 0.25 && dt < 20.0); /* stopped, not waited for */
  assert_int_equal(pb_supervise_signal(s), sig);
  pb_supervise_child_t ci;
  assert_int_equal(pb_supervise_child_info(s, "main", &ci), 0);
  assert_int_equal(ci.running, 0);
  assert_int_equal(ci.last_signal, SIGTERM);
  assert_int_equal(pb_supervise_child_info(s, "worker", &ci), 0);
  assert_int_equal(ci.last_signal, SIGTERM);
  pb_supervise_destroy(&s);
  /* the handlers are gone again: the default disposition is back */
  struct sigaction sa;
  sigaction(sig, NULL, &sa);
  assert_true(sa.sa_handler == SIG_DFL);
}

static void test_signal_stops_all(void **state) {
  (void)state;
  signal_stops(SIGTERM);
  signal_stops(SIGINT);
  signal_stops(SIGHUP);
}

/* A child that ignores SIGTERM is SIGKILLed once the grace period ends. */
static void test_stubborn_child_killed(void **state) {
  fixture_t *f = *state;
  char ready[128], script[512], mscript[512];
  snprintf(ready, sizeof ready, "%s/ready", f->dir);
  snprintf(script, sizeof script,
           "trap '' TERM; touch %s; while :; do sleep 0.05; done", ready);
  /* the main child waits until the trap is in place */
  snprintf(mscript, sizeof mscript,
           "i=0; while [ ! -e %s ]; do sleep 0.02; i=$((i+1)); "
           "[ $i -gt 3000 ] && exit 7; done; exit 0",
           ready);
  pb_supervise_opts_t o = fast_opts();
  o.grace_s = 0.5;
  pb_err_t err;
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "stubborn", script, NULL, 0);
  add_sh(s, "main", mscript, NULL, PB_SUPERVISE_MAIN);
  double t0 = now_s();
  assert_int_equal(pb_supervise_run(s, &err), 0);
  double dt = now_s() - t0;
  assert_true(dt >= 0.5 && dt < 20.0); /* killed, not waited for */
  pb_supervise_child_t ci;
  assert_int_equal(pb_supervise_child_info(s, "stubborn", &ci), 0);
  assert_int_equal(ci.killed, 1);
  assert_int_equal(ci.last_signal, SIGKILL);
  assert_int_equal(pb_supervise_child_info(s, "main", &ci), 0);
  assert_int_equal(ci.killed, 0);
  assert_int_equal(ci.last_status, 0);
  pb_supervise_destroy(&s);
}

/* A required child that keeps crashing is given up: the run stops and
 * fails, naming it; an optional one is left down and the run goes on. */
static void test_give_up(void **state) {
  fixture_t *f = *state;
  pb_supervise_opts_t o = fast_opts();
  o.max_restarts = 3;
  o.window_s = 10.0;
  pb_err_t err;
  pb_err_clear(&err);
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "main", "exec sleep 30", NULL, PB_SUPERVISE_MAIN);
  add_sh(s, "broken", "exit 3", NULL, 0);
  double t0 = now_s();
  assert_int_equal(pb_supervise_run(s, &err), PB_EIO);
  assert_true(now_s() - t0 < 20.0); /* long before main's 30 s */
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "broken"));
  assert_non_null(strstr(err.msg, "exit status 3"));
  pb_supervise_child_t ci;
  assert_int_equal(pb_supervise_child_info(s, "broken", &ci), 0);
  assert_int_equal(ci.restarts, 3);
  assert_int_equal(ci.gave_up, 1);
  assert_int_equal(pb_supervise_child_info(s, "main", &ci), 0);
  assert_int_equal(ci.last_signal, SIGTERM);
  pb_supervise_destroy(&s);

  s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  /* main ends the run once the evaluator's fourth run (the one it gives
   * up on) is gone, whatever the machine's speed: each run writes its pid,
   * and a pid is gone once the supervisor has reaped it (and given up) */
  char pids[128], mscript[1024], escript[256];
  snprintf(pids, sizeof pids, "%s/evaluator-pids", f->dir);
  snprintf(escript, sizeof escript, "echo $$ >> %s; kill -USR1 $$", pids);
  snprintf(mscript, sizeof mscript,
           "i=0; while [ \"$(cat %s 2>/dev/null | wc -l)\" -lt 4 ]; do "
           "sleep 0.02; i=$((i+1)); [ $i -gt 3000 ] && exit 7; done; "
           "p=$(sed -n 4p %s); "
           "while kill -0 $p 2>/dev/null; do sleep 0.02; "
           "i=$((i+1)); [ $i -gt 3000 ] && exit 7; done; exit 0",
           pids, pids);
  add_sh(s, "main", mscript, NULL, PB_SUPERVISE_MAIN);
  add_sh(s, "evaluator", escript, NULL, PB_SUPERVISE_OPTIONAL);
  assert_int_equal(pb_supervise_run(s, &err), 0);
  assert_int_equal(pb_supervise_child_info(s, "evaluator", &ci), 0);
  assert_int_equal(ci.gave_up, 1);
  assert_int_equal(ci.restarts, 3);
  assert_int_equal(ci.last_signal, SIGUSR1);
  assert_int_equal(pb_supervise_child_info(s, "main", &ci), 0);
  assert_int_equal(ci.last_status, 0);
  pb_supervise_destroy(&s);
}

/* A child that exits with PB_SUPERVISE_EXIT_FATAL is not restarted: the
 * run stops at once with the child's own ERROR line; an optional one is
 * only left down. */
static void test_fatal_start_up_error(void **state) {
  fixture_t *f = *state;
  pb_supervise_opts_t o = fast_opts();
  pb_err_t err;
  pb_err_clear(&err);
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  char log[128], script[256];
  snprintf(log, sizeof log, "%s/learner.log", f->dir);
  snprintf(script, sizeof script,
           "echo 'INFO starting'; echo 'ERROR checkpoint is for game "
           "connect4, not tictactoe' >&2; echo 'INFO bye'; exit %d",
           PB_SUPERVISE_EXIT_FATAL);
  add_sh(s, "learner", script, log, PB_SUPERVISE_MAIN);
  add_sh(s, "worker", "exec sleep 30", NULL, 0);
  double t0 = now_s();
  assert_int_equal(pb_supervise_run(s, &err), PB_ECONFIG);
  assert_true(now_s() - t0 < 20.0); /* not after the worker's 30 s */
  assert_non_null(strstr(err.msg, "learner failed at start-up"));
  assert_non_null(strstr(err.msg, "not tictactoe"));
  pb_supervise_child_t ci;
  assert_int_equal(pb_supervise_child_info(s, "learner", &ci), 0);
  assert_int_equal(ci.restarts, 0);
  assert_int_equal(ci.last_status, PB_SUPERVISE_EXIT_FATAL);
  assert_int_equal(pb_supervise_child_info(s, "worker", &ci), 0);
  assert_int_equal(ci.last_signal, SIGTERM);
  pb_supervise_destroy(&s);

  /* Optional: left down, the run goes on to its end. */
  s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "main", "sleep 0.5; exit 0", NULL, PB_SUPERVISE_MAIN);
  snprintf(script, sizeof script, "exit %d", PB_SUPERVISE_EXIT_FATAL);
  add_sh(s, "evaluator", script, NULL, PB_SUPERVISE_OPTIONAL);
  assert_int_equal(pb_supervise_run(s, &err), 0);
  assert_int_equal(pb_supervise_child_info(s, "evaluator", &ci), 0);
  assert_int_equal(ci.restarts, 0);
  assert_int_equal(ci.gave_up, 1);
  pb_supervise_destroy(&s);
}

/* A program that cannot be started fails the run at once and stops the
 * children already started; restart_argv is used after a crash. */
static void test_spawn_failure_and_restart_argv(void **state) {
  fixture_t *f = *state;
  pb_supervise_opts_t o = fast_opts();
  pb_err_t err;
  pb_err_clear(&err);
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "first", "exec sleep 30", NULL, 0);
  const char *bad[] = {"/nonexistent/probs-nothing", NULL};
  assert_int_equal(pb_supervise_add(s, "ghost", bad, NULL, NULL, 0, &err), 0);
  add_sh(s, "never", "exec sleep 30", NULL, PB_SUPERVISE_MAIN);
  double t0 = now_s();
  assert_int_equal(pb_supervise_run(s, &err), PB_EIO);
  assert_true(now_s() - t0 < 20.0); /* long before main's 30 s */
  assert_non_null(strstr(err.msg, "ghost"));
  assert_non_null(strstr(err.msg, "/nonexistent/probs-nothing"));
  pb_supervise_child_t ci;
  assert_int_equal(pb_supervise_child_info(s, "first", &ci), 0);
  assert_int_equal(ci.last_signal, SIGTERM);
  assert_int_equal(pb_supervise_child_info(s, "never", &ci), 0);
  assert_int_equal(ci.last_status, -1); /* never started */
  pb_supervise_destroy(&s);

  /* first run: exit 1 with argv; restarts use restart_argv */
  char out[128], log[128];
  snprintf(out, sizeof out, "%s/args", f->dir);
  snprintf(log, sizeof log, "%s/main.log", f->dir);
  s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  const char *argv[] = {"/bin/sh", "-c", "echo \"$0 $1\" >> \"$2\"; exit $1",
                        "first",   "1",  out,
                        NULL};
  const char *rargv[] = {"/bin/sh", "-c", "echo \"$0 $1\" >> \"$2\"; exit $1",
                         "again",   "0",  out,
                         NULL};
  assert_int_equal(
      pb_supervise_add(s, "main", argv, rargv, log, PB_SUPERVISE_MAIN, &err),
      0);
  assert_int_equal(pb_supervise_run(s, &err), 0);
  char *text = slurp(out);
  assert_string_equal(text, "first 1\nagain 0\n");
  free(text);
  pb_supervise_destroy(&s);
}

typedef struct {
  int n;
  char lines[8][64];
} lines_t;

static void on_line(void *ctx, const char *line, size_t len) {
  lines_t *l = ctx;
  assert_int_equal(strlen(line), len);
  if (l->n < 8) snprintf(l->lines[l->n], sizeof l->lines[0], "%s", line);
  l->n++;
}

/* Complete lines appended to the followed file reach the callback once
 * each, a line written in two pieces arrives whole, and what the file held
 * before the run is skipped. */
static void test_follow_lines(void **state) {
  fixture_t *f = *state;
  char path[128], script[1024];
  snprintf(path, sizeof path, "%s/metrics.jsonl", f->dir);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs("{\"old\":1}\n", fp);
  fclose(fp);
  snprintf(script, sizeof script,
           "printf '{\"a\":1}\\n{\"a\":2}\\r\\n' >> %s; sleep 0.15; "
           "printf '{\"a\":' >> %s; sleep 0.15; printf '3}\\n' >> %s; "
           "sleep 0.1; printf 'last\\n' >> %s; exit 0",
           path, path, path, path);
  lines_t got;
  memset(&got, 0, sizeof got);
  pb_supervise_opts_t o = fast_opts();
  o.follow_path = path;
  o.follow_interval_s = 0.03;
  o.on_line = on_line;
  o.ctx = &got;
  pb_err_t err;
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "main", script, NULL, PB_SUPERVISE_MAIN);
  assert_int_equal(pb_supervise_run(s, &err), 0);
  assert_int_equal(got.n, 4);
  assert_string_equal(got.lines[0], "{\"a\":1}");
  assert_string_equal(got.lines[1], "{\"a\":2}");
  assert_string_equal(got.lines[2], "{\"a\":3}");
  assert_string_equal(got.lines[3], "last"); /* read by the final poll */
  pb_supervise_destroy(&s);
}

/* stdout and stderr of a child go to its log file; stdin is /dev/null;
 * the child leads a session of its own. */
static void test_log_redirect(void **state) {
  fixture_t *f = *state;
  char log[128];
  snprintf(log, sizeof log, "%s/child.log", f->dir);
  pb_supervise_opts_t o = fast_opts();
  pb_err_t err;
  pb_supervise_t *s = pb_supervise_new(&o, NULL, &err);
  assert_non_null(s);
  add_sh(s, "main",
         "echo to-stdout; echo to-stderr >&2; read x; "
         "echo \"stdin:[$x]\"; "
         "echo \"session:$(cut -d' ' -f6 /proc/$$/stat)\" | "
         "sed \"s/:$$\\$/:own/\"; exit 0",
         log, PB_SUPERVISE_MAIN);
  assert_int_equal(pb_supervise_run(s, &err), 0);
  char *text = slurp(log);
  assert_string_equal(text, "to-stdout\nto-stderr\nstdin:[]\nsession:own\n");
  free(text);
  pb_supervise_destroy(&s);
}

static void test_bad_arguments(void **state) {
  fixture_t *f = *state;
  pb_err_t err;
  pb_err_clear(&err);
  pb_supervise_opts_t o = fast_opts();
  o.backoff_min_s = 2;
  o.backoff_max_s = 1;
  assert_null(pb_supervise_new(&o, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  o = fast_opts();
  o.grace_s = -1;
  assert_null(pb_supervise_new(&o, NULL, &err));
  o = fast_opts();
  o.follow_path = "/tmp/x";
  assert_null(pb_supervise_new(&o, NULL, &err)); /* no on_line */
  assert_int_equal(err.code, PB_EINVAL);

  pb_supervise_t *s = pb_supervise_new(NULL, NULL, &err);
  assert_non_null(s);
  const char *argv[] = {"/bin/true", NULL};
  const char *empty[] = {NULL};
  assert_int_equal(pb_supervise_run(s, &err), PB_EINVAL); /* no children */
  pb_supervise_destroy(&s);
  s = pb_supervise_new(NULL, NULL, &err);
  assert_int_equal(pb_supervise_add(s, "", argv, NULL, NULL, 0, &err),
                   PB_EINVAL);
  assert_int_equal(pb_supervise_add(s, "a b", argv, NULL, NULL, 0, &err),
                   PB_EINVAL);
  assert_int_equal(pb_supervise_add(s, "x", empty, NULL, NULL, 0, &err),
                   PB_EINVAL);
  assert_int_equal(pb_supervise_add(s, "x", argv, empty, NULL, 0, &err),
                   PB_EINVAL);
  assert_int_equal(pb_supervise_add(s, "x", argv, NULL, NULL, 64, &err),
                   PB_EINVAL);
  assert_int_equal(
      pb_supervise_add(s, "x", argv, NULL, "/nonexistent/dir/x.log", 0, &err),
      PB_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent/dir/x.log"));
  assert_int_equal(
      pb_supervise_add(s, "m1", argv, NULL, NULL, PB_SUPERVISE_MAIN, &err), 0);
  assert_int_equal(
      pb_supervise_add(s, "m2", argv, NULL, NULL, PB_SUPERVISE_MAIN, &err),
      PB_EINVAL);
  assert_int_equal(pb_supervise_add(s, "m1", argv, NULL, NULL, 0, &err),
                   PB_EINVAL);
  char log[128];
  snprintf(log, sizeof log, "%s/ok.log", f->dir);
  assert_int_equal(pb_supervise_add(s, "w", argv, NULL, log, 0, &err), 0);
  pb_supervise_destroy(&s); /* never run: closes the log file, frees all */
  pb_supervise_destroy(&s);
  pb_supervise_destroy(NULL);
}

static void write_script(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
  assert_int_equal(chmod(path, 0755), 0);
}

/* `probs train` in its distributed mode, with shell scripts in place of
 * the learner and the workers next to a copy of the probs binary: the
 * children get the documented arguments (every --set passed through), the
 * learner's metrics lines come out as progress lines, and the run ends
 * with status 0 when the learner exits 0. Skipped if probs is not built. */
static void test_probs_train_with_fake_children(void **state) {
  fixture_t *f = *state;
  char cmd[2048], path[256];
  snprintf(path, sizeof path, "%s/probs", PB_BIN_DIR);
  if (access(path, X_OK) != 0) skip();
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/bin' && cp '%s' '%s/bin/probs'",
           f->dir, path, f->dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/bin/probs-learner", f->dir);
  write_script(path,
               "#!/bin/sh\n"
               "echo \"$*\" > \"$(dirname \"$0\")/../learner.args\"\n"
               "while [ $# -gt 0 ]; do [ \"$1\" = --run-dir ] && d=\"$2\"; "
               "shift; done\n"
               "sleep 0.3\n"
               "for i in 1 2; do echo \"{\\\"event\\\":\\\"iteration\\\","
               "\\\"iteration\\\":$i,\\\"episodes\\\":20,"
               "\\\"v_loss\\\":0.5,\\\"extra\\\":\\\"x\\\"}\" >> "
               "\"$d/metrics.jsonl\"; done\n"
               "sleep 0.1\n"
               "exit 0\n");
  snprintf(path, sizeof path, "%s/bin/probs-actor", f->dir);
  write_script(path,
               "#!/bin/sh\n"
               "while [ $# -gt 0 ]; do [ \"$1\" = --id ] && id=\"$2\"; "
               "all=\"$all $1\"; shift; done\n"
               "echo \"$all\" > \"$(dirname \"$0\")/../$id.args\"\n"
               "exec sleep 600\n");
  snprintf(cmd, sizeof cmd,
           "cd '%s' && ./bin/probs train '%s/configs/tictactoe-smoke.yaml' "
           "--run-dir run --actors 2 --searchers 1 --no-eval "
           "--set seed=9 --set search.expansions=7 >out.txt 2>err.txt",
           f->dir, PB_SOURCE_DIR);
  double t0 = now_s();
  int rc = system(cmd);
  /* it stopped the workers once the learner was done: long before their
   * 600 s, on any machine (not a measure of speed) */
  assert_true(now_s() - t0 < 300.0);
  snprintf(path, sizeof path, "%s/err.txt", f->dir);
  char *err = slurp(path);
  if (rc != 0) fail_msg("probs train failed (%d): %s", rc, err);
  free(err);
  snprintf(path, sizeof path, "%s/out.txt", f->dir);
  char *out = slurp(path);
  assert_string_equal(out,
                      "iteration 1/2 | loss V 0.5\n"
                      "iteration 2/2 | loss V 0.5\n");
  free(out);
  snprintf(path, sizeof path, "%s/learner.args", f->dir);
  char *args = slurp(path);
  assert_non_null(strstr(args,
                         "tictactoe-smoke.yaml --run-dir run --set "
                         "seed=9 --set search.expansions=7"));
  /* the run id made for this start: the learner's is the workers' */
  char run_id[80] = "";
  const char *at = strstr(args, "--run-id ttt-smoke-");
  assert_non_null(at);
  assert_int_equal(sscanf(at, "--run-id %70s", run_id), 1);
  assert_int_equal(strlen(run_id), strlen("ttt-smoke-") + 8);
  free(args);
  char want[128];
  snprintf(want, sizeof want, "--run-id %s", run_id);
  snprintf(path, sizeof path, "%s/actor-1.args", f->dir);
  args = slurp(path);
  assert_non_null(strstr(args,
                         "--role selfplay --id actor-1 --set seed=9 "
                         "--set search.expansions=7"));
  assert_non_null(strstr(args, want));
  free(args);
  snprintf(path, sizeof path, "%s/searcher-0.args", f->dir);
  args = slurp(path);
  assert_non_null(strstr(args, "--role search --id searcher-0 --set seed=9"));
  assert_non_null(strstr(args, want));
  free(args);
  snprintf(path, sizeof path, "%s/run/logs/train.log", f->dir);
  assert_int_equal(access(path, R_OK), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_crash_restarted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_main_exit_stops_others, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_signal_stops_all, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stubborn_child_killed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_give_up, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fatal_start_up_error, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_spawn_failure_and_restart_argv,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_follow_lines, setup, teardown),
      cmocka_unit_test_setup_teardown(test_log_redirect, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_probs_train_with_fake_children,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
