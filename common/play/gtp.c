/* gtp.c - Go Text Protocol client over pipes, and the notation of moves
 * (see gtp.h). */
#include "gtp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { GTP_MAX_ARGS = 32 };

struct pb_gtp {
  char *command;
  pid_t pid;
  int to_fd, from_fd; /* the engine's stdin and stdout; -1 when closed */
  int timeout_ms;
  int dead;           /* an engine failure happened: refuse everything */
  char buf[PB_GTP_REPLY_MAX + 1];
  size_t len; /* bytes of buf read but not yet consumed */
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Resolves `prog` to an executable path in out; 0 or PB_ENOTFOUND. */
static int find_program(const char *prog, char *out, size_t n) {
  if (strchr(prog, '/') != NULL) {
    if (access(prog, X_OK) != 0) return PB_ENOTFOUND;
    snprintf(out, n, "%s", prog);
    return 0;
  }
  const char *path = getenv("PATH");
  char dirs[4096];
  snprintf(dirs, sizeof dirs, "%s:/usr/games",
           path != NULL ? path : "/usr/local/bin:/usr/bin:/bin");
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d != NULL;
       d = strtok_r(NULL, ":", &save)) {
    if ((size_t)snprintf(out, n, "%s/%s", d, prog) >= n) continue;
    if (access(out, X_OK) == 0) return 0;
  }
  return PB_ENOTFOUND;
}

/* Marks the client dead and fills err (PB_EPROTO). */
static int gtp_fail(pb_gtp_t *g, pb_err_t *err, const char *cmd,
                    const char *why) {
  g->dead = 1;
  return pb_err_set(err, PB_EPROTO, "gtp engine '%s': %s (command \"%s\")",
                    g->command, why, cmd);
}

pb_gtp_t *pb_gtp_new(const char *command, int timeout_ms, pb_err_t *err) {
  if (command == NULL || strspn(command, " \t") == strlen(command)) {
    pb_err_set(err, PB_EINVAL, "gtp: empty engine command");
    return NULL;
  }
  pb_gtp_t *g = calloc(1, sizeof *g);
  char *copy = strdup(command);
  if (g == NULL || copy == NULL) {
    free(g);
    free(copy);
    pb_err_set(err, PB_ENOMEM, "gtp: out of memory");
    return NULL;
  }
  g->command = strdup(command);
  g->to_fd = g->from_fd = -1;
  g->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
  char *argv[GTP_MAX_ARGS + 1];
  int argc = 0;
  for (char *save = NULL, *t = strtok_r(copy, " \t", &save);
       t != NULL && argc < GTP_MAX_ARGS; t = strtok_r(NULL, " \t", &save))
    argv[argc++] = t;
  argv[argc] = NULL;
  char prog[4096];
  if (g->command == NULL) {
    pb_err_set(err, PB_ENOMEM, "gtp: out of memory");
    goto fail;
  }
  if (find_program(argv[0], prog, sizeof prog) < 0) {
    const char *base = strrchr(argv[0], '/');
    if (strcmp(base != NULL ? base + 1 : argv[0], "gtp-rhino") == 0)
      pb_err_set(err, PB_ENOTFOUND,
                 "gtp: engine '%s' not found in PATH or /usr/games; "
                 "it comes with Debian's grhino and grhino-data packages "
                 "(apt-get install grhino grhino-data)",
                 argv[0]);
    else
      pb_err_set(err, PB_ENOTFOUND,
                 "gtp: engine '%s' not found in PATH or /usr/games", argv[0]);
    goto fail;
  }
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    pb_err_set(err, PB_EIO, "gtp: pipe: %s", strerror(errno));
    if (in[0] >= 0) {
      close(in[0]);
      close(in[1]);
    }
    goto fail;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  /* The engine starts with default signal handling, whatever ours is. */
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, dfl;
  sigemptyset(&none);
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGPIPE);
  sigaddset(&dfl, SIGINT);
  sigaddset(&dfl, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = posix_spawn(&g->pid, prog, &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  g->to_fd = in[1];
  g->from_fd = out[0];
  if (rc != 0) {
    g->pid = 0;
    pb_err_set(err, PB_EIO, "gtp: cannot start '%s': %s", prog, strerror(rc));
    goto fail;
  }
  free(copy);
  return g;
fail:
  free(copy);
  pb_gtp_destroy(&g);
  return NULL;
}

/* Writes all of s without ever raising SIGPIPE in this process: the
 * signal is blocked for this thread and a pending one is consumed. */
static int write_all(int fd, const char *s, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int rc = 0;
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      rc = -1;
      break;
    }
    s += w;
    n -= (size_t)w;
  }
  if (rc < 0) {
    struct timespec zero = {0, 0};
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) sigtimedwait(&pipe_set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* Offset just past the first empty line ("\n\n") in buf, or 0. */
static size_t answer_end(const char *buf, size_t len) {
  for (size_t i = 1; i < len; i++)
    if (buf[i] == '\n' && buf[i - 1] == '\n') return i + 1;
  return 0;
}

int pb_gtp_cmd(pb_gtp_t *g, const char *cmd, char *reply, size_t n,
               pb_err_t *err) {
  if (g == NULL || cmd == NULL)
    return pb_err_set(err, PB_EINVAL, "gtp: NULL client or command");
  if (g->dead)
    return pb_err_set(err, PB_EPROTO,
                      "gtp engine '%s' failed earlier; not sending \"%s\"",
                      g->command, cmd);
  char line[512];
  if ((size_t)snprintf(line, sizeof line, "%s\n", cmd) >= sizeof line)
    return pb_err_set(err, PB_EINVAL, "gtp: command too long");
  g->len = 0; /* anything the engine said before this command is dropped */
  if (write_all(g->to_fd, line, strlen(line)) < 0)
    return gtp_fail(g, err, cmd, "the engine is gone (cannot write to it)");
  double deadline = now_ms() + g->timeout_ms;
  size_t end;
  for (;;) {
    end = answer_end(g->buf, g->len);
    /* An answer starts after any empty lines. */
    size_t skip = 0;
    while (skip < g->len && g->buf[skip] == '\n') skip++;
    if (skip > 0) {
      memmove(g->buf, g->buf + skip, g->len - skip);
      g->len -= skip;
      end = answer_end(g->buf, g->len);
    }
    if (end > 0) break;
    if (g->len >= PB_GTP_REPLY_MAX)
      return gtp_fail(g, err, cmd, "answer longer than PB_GTP_REPLY_MAX");
    int left = (int)(deadline - now_ms());
    if (left <= 0) return gtp_fail(g, err, cmd, "no answer in time");
    struct pollfd p = {.fd = g->from_fd, .events = POLLIN};
    int pr = poll(&p, 1, left);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return gtp_fail(g, err, cmd, "poll failed");
    if (pr == 0) return gtp_fail(g, err, cmd, "no answer in time");
    ssize_t r = read(g->from_fd, g->buf + g->len, PB_GTP_REPLY_MAX - g->len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return gtp_fail(g, err, cmd, "the engine exited");
    /* Drop carriage returns as they come. */
    size_t k = g->len;
    for (size_t i = g->len; i < g->len + (size_t)r; i++)
      if (g->buf[i] != '\r') g->buf[k++] = g->buf[i];
    g->len = k;
  }
  char kind = g->buf[0];
  if (kind != '=' && kind != '?') {
    char shown[64];
    size_t m = end < sizeof shown - 1 ? end : sizeof shown - 1;
    for (size_t i = 0; i < m; i++)
      shown[i] = (g->buf[i] >= 32 && g->buf[i] < 127) ? g->buf[i] : ' ';
    shown[m] = '\0';
    char why[128];
    snprintf(why, sizeof why, "answered garbage \"%s\"", shown);
    return gtp_fail(g, err, cmd, why);
  }
  /* Text after the '=' or '?' (and an optional id), lines kept. */
  size_t i = 1;
  while (i < end && g->buf[i] >= '0' && g->buf[i] <= '9') i++;
  while (i < end && (g->buf[i] == ' ' || g->buf[i] == '\t')) i++;
  size_t j = end;
  while (j > i && (g->buf[j - 1] == '\n' || g->buf[j - 1] == ' ' ||
                   g->buf[j - 1] == '\t'))
    j--;
  char text[PB_GTP_REPLY_MAX + 1];
  size_t tl = j - i;
  memcpy(text, g->buf + i, tl);
  text[tl] = '\0';
  memmove(g->buf, g->buf + end, g->len - end);
  g->len -= end;
  if (kind == '?')
    return pb_err_set(err, PB_EPROTO,
                      "gtp engine '%s' refused \"%s\": %.200s", g->command,
                      cmd, text);
  if (reply != NULL && n > 0) snprintf(reply, n, "%s", text);
  return 0;
}

const char *pb_gtp_command(const pb_gtp_t *g) {
  return g != NULL ? g->command : NULL;
}

void pb_gtp_destroy(pb_gtp_t **gp) {
  if (gp == NULL || *gp == NULL) return;
  pb_gtp_t *g = *gp;
  if (g->to_fd >= 0) {
    if (!g->dead && g->pid > 0) write_all(g->to_fd, "quit\n", 5);
    close(g->to_fd);
  }
  if (g->from_fd >= 0) close(g->from_fd);
  if (g->pid > 0) {
    int status;
    pid_t r = 0;
    for (int i = 0; i < 100 && (r = waitpid(g->pid, &status, WNOHANG)) == 0;
         i++) {
      struct timespec ms10 = {0, 10 * 1000 * 1000};
      nanosleep(&ms10, NULL);
    }
    if (r == 0) {
      kill(g->pid, SIGKILL);
      waitpid(g->pid, &status, 0);
    }
  }
  free(g->command);
  free(g);
  *gp = NULL;
}

/* The network input's width is the size in every game (8, 7, 3, 9). */
int pb_gtp_board_size(const pb_game_t *g) {
  return g != NULL ? g->width : 0;
}

int pb_gtp_parse_move(const pb_game_t *g, const char *text) {
  if (g == NULL || text == NULL) return PB_EINVAL;
  char low[16];
  size_t len = strlen(text);
  if (len == 0 || len >= sizeof low) return PB_EINVAL;
  for (size_t i = 0; i <= len; i++)
    low[i] = (text[i] >= 'A' && text[i] <= 'Z') ? (char)(text[i] - 'A' + 'a')
                                                : text[i];
  for (int a = 0; a < g->num_actions; a++) {
    char name[16];
    if (g->action_name(a, name, sizeof name) > 0 && strcmp(name, low) == 0)
      return a;
  }
  return PB_EINVAL;
}
