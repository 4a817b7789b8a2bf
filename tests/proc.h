/* proc.h - helpers for process-level tests: start real probs binaries,
 * wait for them, read their logs. Header-only (static functions) so each
 * test program that needs them includes it. */
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
 * appended to logfile. Returns the pid, or -1. */
static inline pid_t tp_spawn(char *const argv[], const char *logfile) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logfile,
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclose(&fa, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

/* Waits up to timeout_s for pid to exit. Returns its wait status, or -1 on
 * timeout (the process is then killed with SIGKILL and reaped). */
static inline int tp_wait(pid_t pid, double timeout_s) {
  double end = tp_now() + timeout_s;
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0) return -2;
    if (tp_now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    tp_sleep(0.02);
  }
}

static inline int tp_alive(pid_t pid) {
  int st;
  return waitpid(pid, &st, WNOHANG) == 0;
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

/* A base port unlikely to collide with parallel tests. */
static inline int tp_port_base(int slot) {
  return 20000 + (int)((getpid() * 37 + slot * 101) % 20000);
}

#endif
