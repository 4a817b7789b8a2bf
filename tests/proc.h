/* proc.h - helpers for process-level tests: start real probs binaries,
 * wait for them, read their logs and the endpoints a learner bound.
 * Header-only (static functions) so each test program that needs them
 * includes it.
 *
 * Nothing a test starts outlives it. Every child of tp_spawn runs in a
 * process group of its own (its pid), which is killed (SIGKILL) when:
 *   - tp_wait sees the child exit or gives up on it (what it left in its
 *     group goes with it);
 *   - tp_teardown runs: give it to each test as its cmocka teardown
 *     (cmocka_unit_test_teardown), which cmocka runs after a failed
 *     assertion too (the test itself longjmps away);
 *   - the test program exits (atexit) or gets SIGTERM, SIGINT or SIGHUP
 *     (a handler kills the groups, then the signal takes its course);
 *   - the test program dies by SIGKILL: each child gets PROBS_PARENT_PID,
 *     so the probs programs ask the kernel for SIGTERM when it dies
 *     (PR_SET_PDEATHSIG, common/base/util.h), and workers started with
 *     net.give_up_s give up on a learner that is gone.
 * The table of children is the one piece of mutable state at file scope:
 * the atexit and signal handlers have no other way to find them. */
#ifndef PB_TEST_PROC_H
#define PB_TEST_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- the children, and killing them ------------------------------------ */

#define TP_MAX_CHILDREN 512
static volatile pid_t tp__kids[TP_MAX_CHILDREN]; /* 0: a free slot */
static int tp__hooked;                            /* atexit and signals */

static inline void tp__remember(pid_t pid) {
  for (int i = 0; i < TP_MAX_CHILDREN; i++)
    if (tp__kids[i] == 0) {
      tp__kids[i] = pid;
      return;
    }
}

static inline void tp__forget(pid_t pid) {
  for (int i = 0; i < TP_MAX_CHILDREN; i++)
    if (tp__kids[i] == pid) tp__kids[i] = 0;
}

/* SIGKILL to the group of every child not yet reaped (a child that has
 * exited but is not reaped still holds its group's id, so this never hits
 * a stranger). Async-signal-safe. */
static inline void tp__kill_groups(void) {
  for (int i = 0; i < TP_MAX_CHILDREN; i++)
    if (tp__kids[i] > 0) kill(-tp__kids[i], SIGKILL);
}

/* Kills every child's group and reaps the children. */
static inline void tp_kill_all(void) {
  for (int i = 0; i < TP_MAX_CHILDREN; i++) {
    pid_t pid = tp__kids[i];
    if (pid <= 0) continue;
    kill(-pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    tp__kids[i] = 0;
  }
}

/* A cmocka teardown: kills what the test started and did not wait for. */
static inline int tp_teardown(void **state) {
  (void)state;
  tp_kill_all();
  return 0;
}

static inline void tp__on_signal(int sig) {
  tp__kill_groups();
  signal(sig, SIG_DFL);
  raise(sig);
}

static inline void tp__hook(void) {
  if (tp__hooked) return;
  tp__hooked = 1;
  atexit(tp_kill_all);
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction old;
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
      continue; /* the test handles it itself */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tp__on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

static inline double tp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void tp_sleep(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Starts argv (NULL-terminated; argv[0] a path) with stdout and stderr
 * appended to logfile, in a process group of its own, with
 * PROBS_PARENT_PID set to this process (see the top of this file).
 * Returns the pid, or -1. */
static inline pid_t tp_spawn(char *const argv[], const char *logfile) {
  tp__hook();
  size_t n = 0;
  while (environ[n] != NULL) n++;
  char **env = malloc((n + 2) * sizeof *env);
  if (env == NULL) return -1;
  char parent[64];
  snprintf(parent, sizeof parent, "PROBS_PARENT_PID=%ld", (long)getpid());
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "PROBS_PARENT_PID=", 17) != 0)
      env[k++] = environ[i];
  env[k++] = parent;
  env[k] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logfile,
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclose(&fa, 0);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0); /* a group of its own */
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, env);
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  if (rc != 0) return -1;
  tp__remember(pid);
  return pid;
}

/* Whether pid has exited (not reaped: tp_wait still gets its status). */
static inline int tp_exited(pid_t pid) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
    return 1; /* not our child (any more) */
  return si.si_pid == pid;
}

/* Reaps pid after killing its group. Returns its wait status. */
static inline int tp__reap(pid_t pid) {
  int st = 0;
  kill(-pid, SIGKILL); /* whatever it left in its group */
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  tp__forget(pid);
  return st;
}

/* Waits up to timeout_s for pid to exit. Returns its wait status, or -1 on
 * timeout (the process is then killed with SIGKILL and reaped); -2 when
 * pid is not a child. Either way its process group is killed. */
static inline int tp_wait(pid_t pid, double timeout_s) {
  double end = tp_now() + timeout_s;
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
      return -2;
    if (si.si_pid == pid) return tp__reap(pid);
    if (tp_now() > end) {
      tp__reap(pid);
      return -1;
    }
    tp_sleep(0.02);
  }
}

static inline int tp_alive(pid_t pid) {
  return !tp_exited(pid);
}

/* Reads a whole file (NUL-terminated, malloc'd) or returns NULL. */
static inline char *tp_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t r = fread(b, 1, (size_t)n, f);
  b[r] = '\0';
  fclose(f);
  return b;
}

static inline int tp_count(const char *path, const char *needle) {
  char *b = tp_slurp(path);
  if (!b) return 0;
  int n = 0;
  for (char *p = b; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  free(b);
  return n;
}

/* Waits until `needle` occurs at least `times` times in path. */
static inline int tp_wait_for(const char *path, const char *needle, int times,
                       double timeout_s) {
  double end = tp_now() + timeout_s;
  while (tp_now() < end) {
    if (tp_count(path, needle) >= times) return 1;
    tp_sleep(0.05);
  }
  return 0;
}

/* A fresh directory under /tmp for one test. */
static inline void tp_tmpdir(char *buf, size_t n, const char *tag) {
  snprintf(buf, n, "/tmp/probs-test-%s-%ld-XXXXXX", tag, (long)getpid());
  if (mkdtemp(buf) == NULL) buf[0] = '\0';
}

/* ---- the endpoints a learner bound ------------------------------------ */

/* RUN_DIR/endpoints, as a learner writes it once its sockets are bound
 * (learner/learner.h): each line a --set value. Tests start learners with
 * tcp://127.0.0.1:* (and net.http_port=-1), so the kernel gives the ports
 * and parallel tests never collide. */
typedef struct {
  char work[320]; /* "net.work_endpoint=tcp://127.0.0.1:PORT" */
  char pub[320];  /* "net.pub_endpoint=..." */
  int http;       /* the HTTP port, 0 when off */
} tp_endpoints_t;

/* Waits up to timeout_s for the learner pid to write RUN_DIR/endpoints and
 * reads it into *e. Returns 1, or 0 when the learner exited first or the
 * time ran out. */
static inline int tp_endpoints(const char *run_dir, pid_t pid, double timeout_s,
                               tp_endpoints_t *e) {
  char path[512];
  snprintf(path, sizeof path, "%s/endpoints", run_dir);
  memset(e, 0, sizeof *e);
  double end = tp_now() + timeout_s;
  while (tp_now() < end) {
    char *b = tp_slurp(path);
    if (b != NULL) {
      int got = 0;
      for (char *line = strtok(b, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "net.work_endpoint=", 18))
          got |= snprintf(e->work, sizeof e->work, "%s", line) > 0;
        else if (!strncmp(line, "net.pub_endpoint=", 17))
          got |= (snprintf(e->pub, sizeof e->pub, "%s", line) > 0) << 1;
        else if (!strncmp(line, "net.http_port=", 14))
          got |= (e->http = atoi(line + 14)) >= 0 ? 4 : 0;
      }
      free(b);
      if (got == 7) return 1;
    }
    if (pid > 0 && tp_exited(pid)) return 0;
    tp_sleep(0.05);
  }
  return 0;
}

#endif
