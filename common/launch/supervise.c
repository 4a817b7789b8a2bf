/* supervise.c - child processes on a private libuv loop.
 *
 * One turn of the loop handles whichever of these happened:
 *   - a child exited (on_child_exit): finish, done, crash -> restart timer
 *     or give up, or just counted while stopping;
 *   - a restart timer fired (on_restart): spawn again with restart_argv;
 *   - SIGINT/SIGTERM (on_signal): begin the stop, or SIGKILL on a second;
 *   - the grace timer fired (on_grace): SIGKILL whoever is still up;
 *   - the follow timer fired (on_follow): new lines of the followed file.
 * Once stopping and no child is left, every handle is closed and uv_run
 * returns. */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "lines.h"
#include "util.h"

typedef struct child {
  pb_supervise_t *s;
  char name[PB_SUPERVISE_NAME_MAX];
  char **argv;  /* owned, NULL-terminated */
  char **rargv; /* owned, or NULL: argv */
  int log_fd;   /* -1: the supervisor's stdout/stderr */
  char *log_path; /* owned, or NULL */
  int flags;
  uv_process_t proc;
  uv_timer_t restart_timer;
  int proc_open; /* proc initialised and not yet through its close cb */
  int running;
  int done;
  int gave_up;
  int killed;
  int restarts;
  int64_t last_status;
  int last_signal;
  double started_at;
  double backoff; /* next restart delay */
  double *recent; /* times of recent restarts, max_restarts of them */
  int n_recent;
} child_t;

struct pb_supervise {
  pb_supervise_opts_t o;
  char *follow_path;
  pb_log_t *log;
  child_t **kids;
  int n, cap;
  uv_loop_t loop;
  uv_signal_t sig_int, sig_term, sig_hup;
  uv_timer_t grace_timer, follow_timer;
  int ran;
  int stopping;
  int main_done; /* the main child finished; others may linger */
  int handles_closed;
  int stop_signal;
  int result;
  pb_err_t result_err;
  /* following */
  char *fbuf;  /* PB_SUPERVISE_LINE_MAX + 1 bytes */
  size_t flen; /* bytes of an unfinished line held in fbuf */
  int fskip;   /* inside an over-long line: drop up to its end */
  off_t foff;  /* file offset read up to */
  ino_t fino;
  int fino_known;
};

void pb_supervise_opts_default(pb_supervise_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->backoff_min_s = 0.5;
  o->backoff_max_s = 10.0;
  o->max_restarts = 5;
  o->window_s = 60.0;
  o->grace_s = 5.0;
  o->linger_s = 60.0;
  o->follow_interval_s = 0.5;
}

static uint64_t to_ms(double s) {
  return (uint64_t)(s * 1000.0 + 0.5);
}

static int time_ok(double t) {
  return isfinite(t) && t >= 0 && t <= 1e6;
}

pb_supervise_t *pb_supervise_new(const pb_supervise_opts_t *opts, pb_log_t *log,
                                 pb_err_t *err) {
  pb_supervise_opts_t o;
  if (opts != NULL)
    o = *opts;
  else
    pb_supervise_opts_default(&o);
  if (!time_ok(o.backoff_min_s) || !time_ok(o.backoff_max_s) ||
      o.backoff_min_s > o.backoff_max_s || !time_ok(o.window_s) ||
      !time_ok(o.grace_s) || o.max_restarts < 0 || o.max_restarts > 1000000) {
    pb_err_set(err, PB_EINVAL,
               "supervise: bad options (backoff %g..%g s, window %g s, "
               "grace %g s, max_restarts %d)",
               o.backoff_min_s, o.backoff_max_s, o.window_s, o.grace_s,
               o.max_restarts);
    return NULL;
  }
  if (o.follow_path != NULL &&
      (o.on_line == NULL || !time_ok(o.follow_interval_s) ||
       o.follow_interval_s <= 0)) {
    pb_err_set(err, PB_EINVAL,
               "supervise: following %s needs on_line and an interval > 0",
               o.follow_path);
    return NULL;
  }
  pb_supervise_t *s = calloc(1, sizeof *s);
  if (s == NULL) goto nomem;
  s->o = o;
  s->log = log;
  if (o.follow_path != NULL) {
    s->follow_path = strdup(o.follow_path);
    s->fbuf = malloc(PB_SUPERVISE_LINE_MAX + 1);
    if (s->follow_path == NULL || s->fbuf == NULL) goto nomem;
  }
  s->o.follow_path = s->follow_path;
  return s;
nomem:
  pb_supervise_destroy(&s);
  pb_err_set(err, PB_ENOMEM, "supervise: out of memory");
  return NULL;
}

static void free_argv(char **v) {
  if (v == NULL) return;
  for (char **p = v; *p; p++) free(*p);
  free(v);
}

static void child_free(child_t *c) {
  if (c == NULL) return;
  free_argv(c->argv);
  free_argv(c->rargv);
  if (c->log_fd >= 0) close(c->log_fd);
  free(c->log_path);
  free(c->recent);
  free(c);
}

void pb_supervise_destroy(pb_supervise_t **sp) {
  if (sp == NULL || *sp == NULL) return;
  pb_supervise_t *s = *sp;
  for (int i = 0; i < s->n; i++) child_free(s->kids[i]);
  free(s->kids);
  free(s->follow_path);
  free(s->fbuf);
  free(s);
  *sp = NULL;
}

static char **dup_argv(const char *const *v) {
  size_t n = 0;
  while (v[n] != NULL) n++;
  char **out = calloc(n + 1, sizeof *out);
  if (out == NULL) return NULL;
  for (size_t i = 0; i < n; i++)
    if ((out[i] = strdup(v[i])) == NULL) {
      free_argv(out);
      return NULL;
    }
  return out;
}

static child_t *find(const pb_supervise_t *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->kids[i]->name, name) == 0) return s->kids[i];
  return NULL;
}

static int name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n >= PB_SUPERVISE_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = name[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
      return 0;
  }
  return 1;
}

int pb_supervise_add(pb_supervise_t *s, const char *name,
                     const char *const *argv, const char *const *restart_argv,
                     const char *log_path, int flags, pb_err_t *err) {
  if (s == NULL || name == NULL || argv == NULL)
    return pb_err_set(err, PB_EINVAL, "supervise: NULL argument");
  if (s->ran)
    return pb_err_set(err, PB_EINVAL,
                      "supervise: cannot add '%s' after the run", name);
  if (!name_ok(name))
    return pb_err_set(err, PB_EINVAL,
                      "supervise: bad child name '%s' (1-%d of letters, "
                      "digits, '.', '_', '-')",
                      name, PB_SUPERVISE_NAME_MAX - 1);
  if (find(s, name) != NULL)
    return pb_err_set(err, PB_EINVAL, "supervise: two children named '%s'",
                      name);
  if (argv[0] == NULL || argv[0][0] == '\0' ||
      (restart_argv != NULL &&
       (restart_argv[0] == NULL || restart_argv[0][0] == '\0')))
    return pb_err_set(err, PB_EINVAL, "supervise: '%s' has an empty argv",
                      name);
  if (flags & ~(PB_SUPERVISE_MAIN | PB_SUPERVISE_OPTIONAL | PB_SUPERVISE_LINGER))
    return pb_err_set(err, PB_EINVAL, "supervise: bad flags %#x for '%s'",
                      (unsigned)flags, name);
  if (flags & PB_SUPERVISE_MAIN)
    for (int i = 0; i < s->n; i++)
      if (s->kids[i]->flags & PB_SUPERVISE_MAIN)
        return pb_err_set(err, PB_EINVAL,
                          "supervise: '%s' and '%s' cannot both be main",
                          s->kids[i]->name, name);
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    child_t **k = realloc(s->kids, (size_t)cap * sizeof *k);
    if (k == NULL) return pb_err_set(err, PB_ENOMEM, "supervise: no memory");
    s->kids = k;
    s->cap = cap;
  }
  child_t *c = calloc(1, sizeof *c);
  if (c == NULL) return pb_err_set(err, PB_ENOMEM, "supervise: no memory");
  c->s = s;
  c->log_fd = -1;
  c->flags = flags;
  c->last_status = -1;
  c->backoff = s->o.backoff_min_s;
  snprintf(c->name, sizeof c->name, "%s", name);
  c->argv = dup_argv(argv);
  c->rargv = restart_argv ? dup_argv(restart_argv) : NULL;
  c->recent = malloc(sizeof(double) *
                     (size_t)(s->o.max_restarts > 0 ? s->o.max_restarts : 1));
  if (c->argv == NULL || (restart_argv != NULL && c->rargv == NULL) ||
      c->recent == NULL) {
    child_free(c);
    return pb_err_set(err, PB_ENOMEM, "supervise: no memory");
  }
  if (log_path != NULL) {
    if ((c->log_path = strdup(log_path)) == NULL) {
      child_free(c);
      return pb_err_set(err, PB_ENOMEM, "supervise: no memory");
    }
    c->log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (c->log_fd < 0) {
      int e = errno;
      child_free(c);
      return pb_err_set(err, PB_EIO, "supervise: cannot open log %s for %s: %s",
                        log_path, name, strerror(e));
    }
  }
  s->kids[s->n++] = c;
  return 0;
}

/* ---- the loop's work ------------------------------------------------ */

static void describe_exit(const child_t *c, char *buf, size_t n) {
  if (c->last_signal != 0)
    snprintf(buf, n, "killed by signal %d (%s)", c->last_signal,
             strsignal(c->last_signal));
  else
    snprintf(buf, n, "exit status %lld", (long long)c->last_status);
}

static void on_closed_nothing(uv_handle_t *h) {
  (void)h;
}
static void on_grace(uv_timer_t *t);
static void on_linger(uv_timer_t *t);
static void on_restart(uv_timer_t *t);

/* Closes every handle of ours once stopping and no child is left, which
 * lets uv_run return. */
static void maybe_finish(pb_supervise_t *s) {
  if (!s->stopping || s->handles_closed) return;
  for (int i = 0; i < s->n; i++)
    if (s->kids[i]->running) return;
  s->handles_closed = 1;
  if (!s->o.no_signals) {
    uv_close((uv_handle_t *)&s->sig_int, on_closed_nothing);
    uv_close((uv_handle_t *)&s->sig_term, on_closed_nothing);
    uv_close((uv_handle_t *)&s->sig_hup, on_closed_nothing);
  }
  uv_close((uv_handle_t *)&s->grace_timer, on_closed_nothing);
  uv_close((uv_handle_t *)&s->follow_timer, on_closed_nothing);
  for (int i = 0; i < s->n; i++)
    uv_close((uv_handle_t *)&s->kids[i]->restart_timer, on_closed_nothing);
}

static void kill_all(pb_supervise_t *s, int sig) {
  for (int i = 0; i < s->n; i++) {
    child_t *c = s->kids[i];
    /* never signal a handle without a live pid: kill(0, ...) would hit
     * our whole process group */
    if (!c->running) continue;
    if (sig == SIGKILL) {
      c->killed = 1;
      pb_log_warn(s->log, "%s (pid %d) still running: SIGKILL", c->name,
                  c->proc.pid);
    }
    uv_process_kill(&c->proc, sig);
  }
}

static void begin_stop(pb_supervise_t *s) {
  if (s->stopping) return;
  s->stopping = 1;
  int any = 0;
  for (int i = 0; i < s->n; i++) {
    uv_timer_stop(&s->kids[i]->restart_timer);
    any |= s->kids[i]->running;
  }
  if (any) {
    pb_log_info(s->log, "stopping children (SIGTERM, SIGKILL after %gs)",
                s->o.grace_s);
    kill_all(s, SIGTERM);
    uv_timer_start(&s->grace_timer, on_grace, to_ms(s->o.grace_s), 0);
  }
  maybe_finish(s);
}

static int all_done(const pb_supervise_t *s) {
  for (int i = 0; i < s->n; i++)
    if (!s->kids[i]->done) return 0;
  return 1;
}

static void on_child_exit(uv_process_t *p, int64_t status, int sig);
static void on_proc_closed(uv_handle_t *h) {
  child_t *c = h->data;
  c->proc_open = 0;
}

static int child_spawn(child_t *c, int restart, pb_err_t *err) {
  pb_supervise_t *s = c->s;
  char **argv = restart && c->rargv != NULL ? c->rargv : c->argv;
  uv_stdio_container_t io[3];
  memset(io, 0, sizeof io);
  io[0].flags = UV_IGNORE; /* libuv gives the child /dev/null */
  io[1].flags = UV_INHERIT_FD;
  io[1].data.fd = c->log_fd >= 0 ? c->log_fd : STDOUT_FILENO;
  io[2].flags = UV_INHERIT_FD;
  io[2].data.fd = c->log_fd >= 0 ? c->log_fd : STDERR_FILENO;
  uv_process_options_t o;
  memset(&o, 0, sizeof o);
  o.exit_cb = on_child_exit;
  o.file = argv[0];
  o.args = argv;
  o.stdio_count = 3;
  o.stdio = io;
  /* A session of its own: a Ctrl-C in the terminal reaches only us, and
   * each child gets exactly one SIGTERM, from us, rather than a SIGINT
   * from the terminal followed by our SIGTERM in the middle of its
   * shutdown. */
  o.flags = UV_PROCESS_DETACHED;
  c->proc.data = c;
  int rc = uv_spawn(&s->loop, &c->proc, &o);
  c->proc_open = 1; /* on Unix the handle is initialised even on failure */
  if (rc != 0) {
    uv_close((uv_handle_t *)&c->proc, on_proc_closed);
    return pb_err_set(err, PB_EIO, "cannot start %s (%s): %s", c->name, argv[0],
                      uv_strerror(rc));
  }
  c->running = 1;
  c->started_at = pb_now();
  pb_log_info(s->log, "started %s (pid %d)%s", c->name, c->proc.pid,
              restart ? " again" : "");
  return 0;
}

static void give_up(child_t *c, const char *why) {
  pb_supervise_t *s = c->s;
  c->gave_up = 1;
  c->done = 1;
  if (c->flags & PB_SUPERVISE_OPTIONAL) {
    pb_log_error(s->log, "giving up on %s (optional): %s", c->name, why);
    if (all_done(s)) begin_stop(s);
    return;
  }
  pb_log_error(s->log, "giving up on %s: %s; stopping the run", c->name, why);
  if (s->result == 0)
    s->result =
        pb_err_set(&s->result_err, PB_EIO, "gave up on %s: %s", c->name, why);
  begin_stop(s);
}

/* The child's own words on why it failed: the last line of its log that
 * says ERROR, else its last line (into buf, "" if there is no log). */
static void last_error_line(const child_t *c, char *buf, size_t n) {
  buf[0] = '\0';
  if (c->log_path == NULL || n == 0) return;
  int fd = open(c->log_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char tail[8192];
  off_t end = lseek(fd, 0, SEEK_END);
  off_t from = end > (off_t)sizeof tail - 1 ? end - (off_t)sizeof tail + 1 : 0;
  ssize_t got = pread(fd, tail, sizeof tail - 1, from);
  close(fd);
  if (got <= 0) return;
  tail[got] = '\0';
  const char *best = NULL, *last = NULL;
  pb_lines_t it;
  pb_lines_init_w(&it, tail, (size_t)got);
  char *line = NULL;
  size_t len = 0;
  while (pb_lines_cut(&it, &line, &len) == 1) {
    if (strspn(line, " \t\r") == len) continue;
    last = line;
    if (strstr(line, "ERROR") != NULL) best = line;
  }
  const char *pick = best ? best : last;
  if (pick != NULL) snprintf(buf, n, "%s", pick);
}

/* A child that exited with PB_SUPERVISE_EXIT_FATAL: restarting cannot
 * help. Stops the run (an optional child is only left down) with its own
 * message. */
static void fatal_exit(child_t *c) {
  pb_supervise_t *s = c->s;
  char line[600];
  last_error_line(c, line, sizeof line);
  c->gave_up = 1;
  c->done = 1;
  if (c->flags & PB_SUPERVISE_OPTIONAL) {
    pb_log_error(s->log, "%s failed at start-up, not restarting it: %s",
                 c->name, line);
    if (all_done(s)) begin_stop(s);
    return;
  }
  pb_log_error(s->log, "%s failed at start-up; stopping the run: %s", c->name,
               line);
  if (s->result == 0)
    s->result = pb_err_set(&s->result_err, PB_ECONFIG,
                           "%s failed at start-up: %s", c->name, line);
  begin_stop(s);
}

/* After a crash (or a failed restart): a restart timer, or giving up. */
static void schedule_restart(child_t *c, double uptime) {
  pb_supervise_t *s = c->s;
  double now = pb_now();
  int k = 0;
  for (int i = 0; i < c->n_recent; i++)
    if (now - c->recent[i] <= s->o.window_s) c->recent[k++] = c->recent[i];
  c->n_recent = k;
  char how[160];
  describe_exit(c, how, sizeof how);
  if (c->n_recent >= s->o.max_restarts) {
    char why[320];
    snprintf(why, sizeof why, "%d restarts within %gs, last %s", c->n_recent,
             s->o.window_s, how);
    give_up(c, why);
    return;
  }
  if (uptime >= s->o.window_s) c->backoff = s->o.backoff_min_s;
  double delay = c->backoff;
  c->backoff = fmin(c->backoff * 2, s->o.backoff_max_s);
  if (c->backoff < s->o.backoff_min_s) c->backoff = s->o.backoff_min_s;
  c->recent[c->n_recent++] = now;
  pb_log_warn(s->log, "%s: %s after %.1fs; restarting in %gs", c->name, how,
              uptime, delay);
  uv_timer_start(&c->restart_timer, on_restart, to_ms(delay), 0);
}

static void on_restart(uv_timer_t *t) {
  child_t *c = t->data;
  pb_supervise_t *s = c->s;
  if (s->stopping) return;
  if (c->proc_open) { /* the old handle is still closing */
    uv_timer_start(&c->restart_timer, on_restart, 10, 0);
    return;
  }
  c->restarts++;
  pb_err_t e;
  pb_err_clear(&e);
  if (child_spawn(c, 1, &e) != 0) {
    pb_log_error(s->log, "%s", e.msg);
    c->last_status = -1;
    c->last_signal = 0;
    schedule_restart(c, 0);
  }
}

static void on_child_exit(uv_process_t *p, int64_t status, int sig) {
  child_t *c = p->data;
  pb_supervise_t *s = c->s;
  c->running = 0;
  c->last_status = status;
  c->last_signal = sig;
  uv_close((uv_handle_t *)p, on_proc_closed);
  double up = pb_now() - c->started_at;
  char how[160];
  describe_exit(c, how, sizeof how);
  if (s->stopping) {
    pb_log_info(s->log, "%s stopped (%s)", c->name, how);
    maybe_finish(s);
    return;
  }
  if (sig == 0 && status == PB_SUPERVISE_EXIT_FATAL) {
    fatal_exit(c);
    return;
  }
  if (sig == 0 && status == 0) {
    c->done = 1;
    if (c->flags & PB_SUPERVISE_MAIN) {
      pb_log_info(s->log, "%s finished after %.1fs: the run is done", c->name,
                  up);
      /* The others (workers told to stop, an evaluator rating the last
       * version) may finish by themselves first. */
      int linger = 0;
      for (int i = 0; i < s->n; i++) {
        child_t *k = s->kids[i];
        uv_timer_stop(&k->restart_timer);
        if (!k->running) k->done = 1;
        else if (k->flags & PB_SUPERVISE_LINGER) linger = 1;
        else uv_process_kill(&k->proc, SIGTERM);
      }
      if (linger && s->o.linger_s > 0) {
        s->main_done = 1;
        pb_log_info(s->log, "waiting up to %gs for the others to finish",
                    s->o.linger_s);
        uv_timer_start(&s->grace_timer, on_linger, to_ms(s->o.linger_s), 0);
      } else {
        begin_stop(s);
      }
    } else {
      pb_log_info(s->log, "%s exited normally after %.1fs", c->name, up);
      if (all_done(s)) begin_stop(s);
    }
    return;
  }
  if (s->main_done) { /* no restarts once the run is over */
    pb_log_warn(s->log, "%s: %s after the run ended", c->name, how);
    c->done = 1;
    if (all_done(s)) begin_stop(s);
    return;
  }
  schedule_restart(c, up);
}

static void on_linger(uv_timer_t *t) {
  pb_supervise_t *s = t->data;
  pb_log_info(s->log, "children still running %gs after the run ended",
              s->o.linger_s);
  begin_stop(s);
}

static void on_grace(uv_timer_t *t) {
  pb_supervise_t *s = t->data;
  kill_all(s, SIGKILL);
}

static void on_signal(uv_signal_t *h, int signum) {
  pb_supervise_t *s = h->data;
  /* Only a second signal escalates: a stop that began for another reason
   * (the main child finished) is not cut short by one Ctrl-C. */
  if (s->stop_signal == 0) {
    pb_log_info(s->log, "got %s: stopping", strsignal(signum));
    s->stop_signal = signum;
    begin_stop(s);
  } else {
    pb_log_warn(s->log, "got %s again: killing children now",
                strsignal(signum));
    kill_all(s, SIGKILL);
  }
}

/* ---- following a file ---------------------------------------------- */

/* Reads what was appended to the followed file since the last call and
 * hands each complete line to on_line. Plain blocking reads: the file is
 * local and small per tick, and this keeps the code obvious. */
static void follow_poll(pb_supervise_t *s) {
  int fd = open(s->follow_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return; /* not written yet */
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return;
  }
  if ((s->fino_known && st.st_ino != s->fino) || st.st_size < s->foff) {
    /* replaced or truncated: start over */
    s->foff = 0;
    s->flen = 0;
    s->fskip = 0;
  }
  s->fino = st.st_ino;
  s->fino_known = 1;
  for (;;) {
    size_t room = PB_SUPERVISE_LINE_MAX - s->flen;
    ssize_t r = pread(fd, s->fbuf + s->flen, room, s->foff);
    if (r <= 0) break;
    s->foff += r;
    size_t end = s->flen + (size_t)r;
    pb_lines_t it;
    pb_lines_init_w(&it, s->fbuf, end);
    it.partial = 1; /* the last line may be still being written */
    char *line = NULL;
    size_t len = 0;
    while (pb_lines_cut(&it, &line, &len) == 1) {
      if (!s->fskip) s->o.on_line(s->o.ctx, line, len);
      s->fskip = 0;
    }
    size_t start = it.pos;
    s->flen = end - start;
    if (start > 0 && s->flen > 0) memmove(s->fbuf, s->fbuf + start, s->flen);
    if (s->flen == PB_SUPERVISE_LINE_MAX) {
      if (!s->fskip)
        pb_log_warn(s->log, "%s: line longer than %d bytes skipped",
                    s->follow_path, PB_SUPERVISE_LINE_MAX);
      s->fskip = 1;
      s->flen = 0;
    }
  }
  close(fd);
}

static void on_follow(uv_timer_t *t) {
  follow_poll(t->data);
}

/* ---- run ------------------------------------------------------------ */

int pb_supervise_run(pb_supervise_t *s, pb_err_t *err) {
  if (s == NULL) return pb_err_set(err, PB_EINVAL, "supervise: NULL");
  if (s->ran) return pb_err_set(err, PB_EINVAL, "supervise: run called twice");
  if (s->n == 0)
    return pb_err_set(err, PB_EINVAL, "supervise: no children to run");
  s->ran = 1;
  int rc = uv_loop_init(&s->loop);
  if (rc != 0)
    return pb_err_set(err, PB_EIO, "supervise: uv_loop_init: %s",
                      uv_strerror(rc));
  uv_timer_init(&s->loop, &s->grace_timer);
  uv_timer_init(&s->loop, &s->follow_timer);
  s->grace_timer.data = s;
  s->follow_timer.data = s;
  for (int i = 0; i < s->n; i++) {
    uv_timer_init(&s->loop, &s->kids[i]->restart_timer);
    s->kids[i]->restart_timer.data = s->kids[i];
  }
  if (!s->o.no_signals) {
    uv_signal_init(&s->loop, &s->sig_int);
    uv_signal_init(&s->loop, &s->sig_term);
    uv_signal_init(&s->loop, &s->sig_hup);
    s->sig_int.data = s->sig_term.data = s->sig_hup.data = s;
    uv_signal_start(&s->sig_int, on_signal, SIGINT);
    uv_signal_start(&s->sig_term, on_signal, SIGTERM);
    /* the children are in their own sessions: a closed terminal must not
     * leave them running */
    uv_signal_start(&s->sig_hup, on_signal, SIGHUP);
  }
  if (s->follow_path != NULL) {
    struct stat st;
    if (stat(s->follow_path, &st) == 0) {
      s->foff = st.st_size; /* only what is appended from now on */
      s->fino = st.st_ino;
      s->fino_known = 1;
    }
    uint64_t ms = to_ms(s->o.follow_interval_s);
    if (ms == 0) ms = 1;
    uv_timer_start(&s->follow_timer, on_follow, ms, ms);
  }
  for (int i = 0; i < s->n && !s->stopping; i++) {
    pb_err_t e;
    pb_err_clear(&e);
    if (child_spawn(s->kids[i], 0, &e) != 0) {
      pb_log_error(s->log, "%s", e.msg);
      s->result = pb_err_set(&s->result_err, PB_EIO, "%s", e.msg);
      begin_stop(s);
    }
  }
  uv_run(&s->loop, UV_RUN_DEFAULT);
  if (!s->handles_closed) {
    /* Nothing kept the loop alive yet the run had not concluded; cannot
     * happen with a child running (its handle is active), so just end. */
    begin_stop(s);
    maybe_finish(s);
    uv_run(&s->loop, UV_RUN_DEFAULT);
  }
  if ((rc = uv_loop_close(&s->loop)) != 0)
    pb_log_error(s->log, "supervise: loop did not close: %s", uv_strerror(rc));
  if (s->follow_path != NULL) follow_poll(s); /* the last lines */
  if (s->result != 0) {
    if (err != NULL) *err = s->result_err;
    return s->result;
  }
  return 0;
}

int pb_supervise_signal(const pb_supervise_t *s) {
  return s ? s->stop_signal : 0;
}

int pb_supervise_child_info(const pb_supervise_t *s, const char *name,
                            pb_supervise_child_t *out) {
  const child_t *c = s && name ? find(s, name) : NULL;
  if (c == NULL) return PB_ENOTFOUND;
  out->restarts = c->restarts;
  out->running = c->running;
  out->done = c->done;
  out->gave_up = c->gave_up;
  out->killed = c->killed;
  out->last_status = c->last_status;
  out->last_signal = c->last_signal;
  return 0;
}
