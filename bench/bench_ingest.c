/* bench_ingest - how fast the real learner takes in self-play results.
 *
 *   bench_ingest [-c CLIENTS] [-r RATE] [-w WARMUP] [-d SECONDS]
 *                [-f SECONDS] [-C CONFIG] [-L PROBS-LEARNER]
 *                [-e ITEM_EPISODES] [-E EPISODES_PER_ITER] [-K] [-k] [-v] [-p]
 *
 * Starts probs-learner (default: the one next to this program) as a child
 * process on CONFIG (default configs/connect4-smoke.yaml, relative to the
 * current directory) with its own run directory under /tmp, free loopback
 * ports, net.item_episodes ITEM_EPISODES (16) and a self-play phase too
 * long to end during the measurement (train.episodes_per_iter
 * EPISODES_PER_ITER, default 4000000). Then CLIENTS threads (default 64),
 * each with its own ZeroMQ DEALER, act as actors that answer at once:
 * Hello, then WorkRequest -> WorkItem -> a SelfplayResult with that
 * item's number of episodes, taken from a pool of pre-generated random
 * Connect Four games (uniform random moves from the initial position to
 * the end, final_reward of the last move) -> WorkRequest again. Nothing is
 * computed per item but the encoding, so what is measured is the
 * learner's receive path: ZeroMQ, decoding and validating every position,
 * the work queue, storing the episodes. The random games are not the
 * policy's, so the checks of self-play beyond the rules are off
 * (net.selfplay_check 0, net.selfplay_reference 0: they would refuse
 * them; bench_playcheck and bench_outcome measure those checks).
 *
 * Two windows, the learner sampled every second (GET /status and
 * /metrics for its counters, /proc/PID/stat for its CPU time,
 * /proc/PID/status VmRSS for its memory):
 *   1. paced: the clients together offer RATE positions/s (default the
 *      issue's target, 100000) for SECONDS (10) after WARMUP (2): the
 *      learner must keep up, and its RSS must stay flat but for the
 *      episodes it stores;
 *   2. flat out: no pacing, 1 s warm-up, then -f SECONDS (3): capacity.
 * The learner keeps every accepted episode until the iteration ends, so
 * its RSS grows by the positions it stored (32 bytes each, plus the
 * allocator's slack and per-episode bookkeeping) and should grow by
 * nothing else: "RSS growth per stored position" checks that.
 *
 * -K runs the learner and the clients with CURVE keys (net.curve_dir;
 * bench/run compares it with a run without). -v prints the paced RSS
 * samples; -k keeps the run directory. Rows:
 * figure, value, unit, ratio, baseline (-p: tab-separated); detail lines
 * start with '#'. Exit status 1 if the learner could not be measured or
 * the self-play phase ran out of items (NoWork) during a window. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "curve.h"
#include "game.h"
#include "msg.h"
#include "util.h"

#include "bench_util.h"
#include "ingest_clients.h"
#include "../tests/http_fixtures.h"

extern char **environ;

enum { MAX_CLIENTS = 1024, MAX_SAMPLES = 700 };

#define TARGET_POS_S 100000.0 /* the target, 64 clients, loopback */

/* ---- the learner: process, HTTP, /proc --------------------------------- */

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* The body of GET path from 127.0.0.1:port (status 200) into buf,
 * NUL-terminated. Returns its length, or -1. */
static int get_body(int port, const char *path, char *buf, size_t cap) {
  char *answer = http_get(port, path);
  const char *body = http_body_200(answer);
  int n = -1;
  if (body != NULL) {
    snprintf(buf, cap, "%s", body);
    n = (int)strlen(buf);
  }
  free(answer);
  return n;
}

typedef struct {
  double t;
  double positions, messages, bytes; /* learner counters */
  double cpu_s;                      /* learner user + system */
  long rss_kb;
} sample_t;

/* /proc/PID/NAME, whole (malloc'd), or NULL. */
static char *proc_file(pid_t pid, const char *name) {
  char path[64], *text = NULL;
  snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, name);
  pb_err_t err;
  pb_err_clear(&err);
  return pb_read_file(path, 1 << 16, &text, NULL, &err) == 0 ? text : NULL;
}

static long proc_rss_kb(pid_t pid) {
  char *text = proc_file(pid, "status");
  const char *v = text != NULL ? strstr(text, "\nVmRSS:") : NULL;
  long kb = v != NULL ? strtol(v + 7, NULL, 10) : -1;
  free(text);
  return kb;
}

static double proc_cpu_s(pid_t pid) {
  char *text = proc_file(pid, "stat");
  /* Fields after the command name (which may hold spaces): state is
   * field 3; utime and stime are fields 14 and 15. */
  char *p = text != NULL ? strrchr(text, ')') : NULL;
  unsigned long ut = 0, st = 0;
  int got = p != NULL ? sscanf(p + 2,
                               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                               "%lu %lu",
                               &ut, &st)
                      : 0;
  free(text);
  if (got != 2) return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int sample(pid_t pid, int port, sample_t *s) {
  static char buf[1 << 16];
  s->t = ingest_now();
  s->rss_kb = proc_rss_kb(pid);
  s->cpu_s = proc_cpu_s(pid);
  if (get_body(port, "/status", buf, sizeof buf) < 0) return -1;
  s->positions = number_after(buf, "\"positions_ingested\":");
  s->messages = number_after(buf, "\"messages\":");
  if (get_body(port, "/metrics", buf, sizeof buf) < 0) return -1;
  s->bytes = number_after(buf, "\nprobs_bytes_received_total ");
  return s->positions >= 0 && s->messages >= 0 && s->bytes >= 0 ? 0 : -1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* One measurement: wait `warmup` seconds with the clients running, then
 * sample the learner every second for `secs` seconds. */
typedef struct {
  sample_t s0, s1, series[MAX_SAMPLES];
  int ns;
  double pos, msgs, mb, cpu, results, stored, grow_b; /* learner side */
  double c_pos, c_cpu;                                  /* client side */
} window_t;

static int window(pid_t pid, int port, counters_t *cnt, double warmup,
                  double secs, window_t *w) {
  memset(w, 0, sizeof *w);
  ingest_sleep(warmup);
  uint64_t p0 = atomic_load(&cnt->positions), r0 = atomic_load(&cnt->results);
  double cpu0 = (double)clock() / CLOCKS_PER_SEC;
  if (sample(pid, port, &w->s0) != 0) {
    fprintf(stderr, "bench_ingest: cannot read the learner's /status\n");
    return -1;
  }
  w->series[w->ns++] = w->s0;
  w->s1 = w->s0;
  while (ingest_now() - w->s0.t < secs - 1e-3) {
    double left = secs - (ingest_now() - w->s0.t);
    ingest_sleep(left < 1.0 ? left : 1.0);
    sample_t s;
    if (sample(pid, port, &s) != 0) {
      fprintf(stderr, "bench_ingest: lost the learner's /status\n");
      return -1;
    }
    w->s1 = s;
    if (w->ns < MAX_SAMPLES) w->series[w->ns++] = s;
  }
  double dt = w->s1.t - w->s0.t;
  w->pos = (w->s1.positions - w->s0.positions) / dt;
  w->msgs = (w->s1.messages - w->s0.messages) / dt;
  w->mb = (w->s1.bytes - w->s0.bytes) / dt / 1e6;
  w->cpu = (w->s1.cpu_s - w->s0.cpu_s) / dt;
  w->stored = w->s1.positions - w->s0.positions;
  w->grow_b = w->stored > 0
                  ? (double)(w->s1.rss_kb - w->s0.rss_kb) * 1024 / w->stored
                  : 0;
  w->results = (double)(atomic_load(&cnt->results) - r0) / dt;
  w->c_pos = (double)(atomic_load(&cnt->positions) - p0) / dt;
  w->c_cpu = ((double)clock() / CLOCKS_PER_SEC - cpu0) / dt;
  return 0;
}

/* The command line. */
typedef struct {
  int clients, item_eps, per_iter, keep, verbose, curve;
  double secs, paced_warmup, flat_secs, paced;
  const char *config;
  char learner[4096];
} opts_t;

/* Parses the options into *o: PB_OPTS_OK, or what pb_opts_parse says
 * (after the usage). */
static int parse_opts(int argc, char **argv, opts_t *o) {
  static char text[512];
  snprintf(text, sizeof text,
           "usage: bench_ingest [-c clients 1..%d] [-r paced positions/s] "
           "[-w paced warm-up s] [-d paced s] [-f flat-out s] "
           "[-C config.yaml] [-L probs-learner] [-e item-episodes] "
           "[-E episodes-per-iter] [-K] [-k] [-v] [-p]\n",
           MAX_CLIENTS);
  bench_usage_text = text;
  const char *cs = NULL, *ds = NULL, *ws = NULL, *fs = NULL, *rs = NULL;
  const char *es = NULL, *Es = NULL, *learner = NULL;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 'c', &cs),         PB_OPTS_VALUE(NULL, 'd', &ds),
      PB_OPTS_VALUE(NULL, 'w', &ws),         PB_OPTS_VALUE(NULL, 'f', &fs),
      PB_OPTS_VALUE(NULL, 'r', &rs),         PB_OPTS_VALUE(NULL, 'E', &Es),
      PB_OPTS_VALUE(NULL, 'C', &o->config),  PB_OPTS_VALUE(NULL, 'L', &learner),
      PB_OPTS_VALUE(NULL, 'e', &es),         PB_OPTS_FLAG(NULL, 'k', &o->keep),
      PB_OPTS_FLAG(NULL, 'K', &o->curve),    PB_OPTS_FLAG(NULL, 'v', &o->verbose),
      PB_OPTS_FLAG(NULL, 'p', &parseable)};
  const pb_opts_t po = {"bench_ingest", bench_usage, rows, PB_OPTS_N(rows),
                        NULL, 0, NULL};
  int rc = pb_opts_parse(&po, argc, argv);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&po, "-c", cs, 1, MAX_CLIENTS, &o->clients);
  if (rc == PB_OPTS_OK) rc = bench_opt_double(&po, "-d", ds, 1, 600, &o->secs);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&po, "-w", ws, 0, 600, &o->paced_warmup);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&po, "-f", fs, 1, 600, &o->flat_secs);
  if (rc == PB_OPTS_OK) rc = bench_opt_double(&po, "-r", rs, 1, 1e9, &o->paced);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&po, "-E", Es, 1, 10000000, &o->per_iter);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&po, "-e", es, 1, PB_MSG_MAX_EPISODES, &o->item_eps);
  if (rc == PB_OPTS_OK && learner != NULL)
    snprintf(o->learner, sizeof o->learner, "%s", learner);
  return rc;
}

/* o->learner, by default the probs-learner next to this program; checks
 * that it and the config are there. 0, or 2 after saying why. */
static int find_learner(opts_t *o) {
  if (o->learner[0] == '\0') {
    char self[4000];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
      fprintf(stderr, "bench_ingest: cannot find myself; use -L\n");
      return 2;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(o->learner, sizeof o->learner, "%s/probs-learner", self);
  }
  if (access(o->learner, X_OK) != 0 || access(o->config, R_OK) != 0) {
    fprintf(stderr, "bench_ingest: need %s (-L) and %s (-C)\n", o->learner,
            o->config);
    return 2;
  }
  return 0;
}

/* The learner under test: its run directory, ports and process. */
typedef struct {
  char dir[sizeof "/tmp/probs-bench-ingest-XXXXXX"];
  int ph;                       /* its HTTP port */
  char work_ep[64];             /* its work endpoint */
  char out[4200];               /* its stdout and stderr */
  pb_curve_keys_t wkeys, lkeys; /* -K: the workers' and its own keys */
  pid_t pid;
} learner_t;

/* Makes the run directory, picks free ports, makes the CURVE keys (-K)
 * and starts the learner. 0, or 1 after saying why. */
static int start_learner(const opts_t *o, learner_t *lr) {
  snprintf(lr->dir, sizeof lr->dir, "/tmp/probs-bench-ingest-XXXXXX");
  if (mkdtemp(lr->dir) == NULL) {
    perror("bench_ingest: mkdtemp");
    return 1;
  }
  int pw = free_port(), pp = free_port(), ph = free_port();
  while (pp == pw) pp = free_port();
  while (ph == pw || ph == pp) ph = free_port();
  if (pw < 0 || pp < 0 || ph < 0) {
    fprintf(stderr, "bench_ingest: no free port\n");
    return 1;
  }
  lr->ph = ph;
  char set_work[96], set_pub[96], set_http[64], set_items[64], set_iter[64];
  snprintf(set_iter, sizeof set_iter, "train.episodes_per_iter=%d",
           o->per_iter);
  snprintf(lr->work_ep, sizeof lr->work_ep, "tcp://127.0.0.1:%d", pw);
  snprintf(set_work, sizeof set_work, "net.work_endpoint=%s", lr->work_ep);
  snprintf(set_pub, sizeof set_pub, "net.pub_endpoint=tcp://127.0.0.1:%d", pp);
  snprintf(set_http, sizeof set_http, "net.http_port=%d", ph);
  snprintf(set_items, sizeof set_items, "net.item_episodes=%d", o->item_eps);
  snprintf(lr->out, sizeof lr->out, "%s/learner.out", lr->dir);
  /* -K: the run with CURVE keys (learner and clients). */
  char set_curve[4300] = "net.curve_dir=", keydir[4200];
  if (o->curve) {
    pb_err_t kerr;
    char kp[4300];
    snprintf(keydir, sizeof keydir, "%s/keys", lr->dir);
    snprintf(kp, sizeof kp, "%s/worker.key", keydir);
    if (pb_curve_make_dir(keydir, 0, &kerr) != 0 ||
        pb_curve_load(kp, 1, &lr->wkeys, &kerr) != 0 ||
        (snprintf(kp, sizeof kp, "%s/learner.pub", keydir),
         pb_curve_load(kp, 0, &lr->lkeys, &kerr) != 0)) {
      fprintf(stderr, "bench_ingest: -K: %s\n", kerr.msg);
      return 1;
    }
    snprintf(set_curve, sizeof set_curve, "net.curve_dir=%s", keydir);
  }
  char *largv[] = {(char *)o->learner, (char *)o->config, "--run-dir", lr->dir,
                   "--set", set_iter,
                   "--set", set_items, "--set", set_work,
                   "--set", set_pub, "--set", set_http,
                   "--set", "run.name=bench-ingest",
                   /* The clients send random games, not the policy's: the
                    * checks of self-play (bench_playcheck measures them)
                    * would rightly refuse them. */
                   "--set", "net.selfplay_check=0",
                   "--set", "net.selfplay_reference=0",
                   "--set", "log.level=warn", "--set", set_curve, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, lr->out,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  int src = posix_spawn(&lr->pid, o->learner, &fa, NULL, largv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (src != 0) {
    fprintf(stderr, "bench_ingest: cannot start %s: %s\n", o->learner,
            strerror(src));
    return 1;
  }
  return 0;
}

/* Waits until the learner serves /status in its self-play phase; *startup
 * gets how long that took. Returns 0; 1 if the learner exited; 2 if it
 * did not get there within 120 s. */
static int wait_ready(const learner_t *lr, double *startup) {
  double t_start = ingest_now();
  char buf[1 << 14];
  for (;;) {
    int st;
    if (waitpid(lr->pid, &st, WNOHANG) == lr->pid) {
      fprintf(stderr, "bench_ingest: the learner exited; see %s\n", lr->out);
      return 1;
    }
    if (get_body(lr->ph, "/status", buf, sizeof buf) > 0 &&
        strstr(buf, "\"phase\":\"selfplay\""))
      break;
    if (ingest_now() - t_start > 120) {
      fprintf(stderr, "bench_ingest: the learner did not start; see %s\n",
              lr->out);
      return 2;
    }
    ingest_sleep(0.1);
  }
  *startup = ingest_now() - t_start;
  return 0;
}

/* The clients and the two windows measured with them. */
typedef struct {
  client_t cl[MAX_CLIENTS];
  pthread_t th[MAX_CLIENTS];
  counters_t cnt;
  control_t ctl;
  int started, joined;
  window_t wp, wf; /* paced, flat out */
} bench_t;

/* Starts the clients, measures the paced window and then the flat-out
 * one, stops the clients and prints the first client error. Returns 0,
 * or -1 when the learner could not be sampled. */
static int run_clients(const opts_t *o, learner_t *lr, const pool_t *pool,
                       bench_t *b) {
  void *zctx = zmq_ctx_new();
  atomic_store(&b->ctl.rate, o->paced / o->clients);
  b->started = 0;
  for (int i = 0; i < o->clients; i++) {
    b->cl[i] = (client_t){.id = i, .zctx = zctx, .endpoint = lr->work_ep,
                          .pool = pool, .ctl = &b->ctl, .cnt = &b->cnt,
                          .keys = o->curve ? &lr->wkeys : NULL,
                          .learner_key = lr->lkeys.pub};
    if (pthread_create(&b->th[i], NULL, client_main, &b->cl[i]) != 0) break;
    b->started++;
  }
  /* 1. paced: the target load, for the memory figures */
  int rc = window(lr->pid, lr->ph, &b->cnt, o->paced_warmup, o->secs, &b->wp);
  /* 2. flat out: capacity */
  if (rc == 0) {
    atomic_store(&b->ctl.rate, 0.0);
    atomic_fetch_add(&b->ctl.gen, 1);
    rc = window(lr->pid, lr->ph, &b->cnt, 1.0, o->flat_secs, &b->wf);
  }
  atomic_store(&b->ctl.stop, 1);
  for (int i = 0; i < b->started; i++) pthread_join(b->th[i], NULL);
  zmq_ctx_term(zctx);
  b->joined = 0;
  for (int i = 0; i < b->started; i++) b->joined += b->cl[i].joined;
  for (int i = 0; i < b->started; i++)
    if (b->cl[i].why[0]) {
      printf("# client %d: %s\n", i, b->cl[i].why);
      break;
    }
  return rc;
}

/* The rows and the detail lines. Returns 1 if the self-play phase ran out
 * of items (NoWork) during a window, else 0. */
static int report(const opts_t *o, bench_t *b, double startup, long rss_idle,
                  size_t pool_pos) {
  const window_t *wp = &b->wp, *wf = &b->wf;
  char fig[96];
  snprintf(fig, sizeof fig, "ingest: positions/s, %d clients", o->clients);
  bench_row(fig, wf->pos, "positions/s", wf->pos / TARGET_POS_S, "target 100000/s");
  bench_row("ingest: results/s (SelfplayResult)", wf->results, "messages/s", 0, "");
  bench_row("ingest: messages/s into the learner", wf->msgs, "messages/s", 0, "");
  bench_row("ingest: MB/s into the learner", wf->mb, "MB/s", 0, "");
  bench_row("ingest: learner CPU", 100 * wf->cpu, "% of a core", 0, "");
  bench_row("ingest: positions per learner CPU-s",
      wf->cpu > 0 ? wf->pos / wf->cpu : 0, "positions/s",
      wf->cpu > 0 ? wf->pos / wf->cpu / TARGET_POS_S : 0, "target 100000/s");
  bench_row("ingest: RSS growth per stored position", wf->grow_b, "bytes",
      wf->grow_b / sizeof(pb_state_t), "32 B (one pb_state_t)");
  snprintf(fig, sizeof fig, "ingest paced %.0f/s: positions/s", o->paced);
  bench_row(fig, wp->pos, "positions/s", wp->pos / o->paced, "offered load");
  bench_row("ingest paced: learner CPU", 100 * wp->cpu, "% of a core", 0, "");
  bench_row("ingest paced: RSS after warm-up", wp->s0.rss_kb / 1024.0, "MiB", 0, "");
  bench_row("ingest paced: RSS at the end", wp->s1.rss_kb / 1024.0, "MiB",
      wp->s0.rss_kb > 0 ? (double)wp->s1.rss_kb / wp->s0.rss_kb : 0,
      "after warm-up");
  bench_row("ingest paced: RSS growth per stored position", wp->grow_b, "bytes",
      wp->grow_b / sizeof(pb_state_t), "32 B (one pb_state_t)");
  printf(
      "# learner started in %.1fs (RSS %.1f MiB idle); %d/%d clients "
      "joined; paced: %.1fs warm-up + %.1fs, flat out: 1s + %.1fs\n",
      startup, rss_idle / 1024.0, b->joined, b->started, o->paced_warmup,
      wp->s1.t - wp->s0.t, wf->s1.t - wf->s0.t);
  printf(
      "# flat out, client side: %.0f positions/s sent, %.0f results/s; "
      "bench process CPU %.0f%% of a core (the clients share the cores "
      "with the learner)\n",
      wf->c_pos, wf->results, 100 * wf->c_cpu);
  printf(
      "# paced, client side: %.0f positions/s sent; bench process CPU "
      "%.0f%% of a core\n",
      wp->c_pos, 100 * wp->c_cpu);
  printf(
      "# %llu NoWork, %llu other replies, %llu errors (NoWork means the "
      "self-play phase ran out of items: raise -E)\n",
      (unsigned long long)atomic_load(&b->cnt.no_work),
      (unsigned long long)atomic_load(&b->cnt.other),
      (unsigned long long)atomic_load(&b->cnt.errors));
  printf(
      "# pool: %d random games, %.1f positions per game; stored: "
      "%.0f positions paced, %.0f flat out (%.1f MiB of states); RSS "
      "%.1f -> %.1f MiB flat out\n",
      POOL, (double)pool_pos / POOL, wp->stored, wf->stored,
      wf->stored * sizeof(pb_state_t) / 1048576.0, wf->s0.rss_kb / 1024.0,
      wf->s1.rss_kb / 1024.0);
  if (o->verbose)
    for (int i = 0; i < wp->ns; i++)
      printf("# paced t=%5.1fs RSS %.1f MiB, %.0f positions ingested\n",
             wp->series[i].t - wp->s0.t, wp->series[i].rss_kb / 1024.0,
             wp->series[i].positions);
  return atomic_load(&b->cnt.no_work) > 0 ? 1 : 0;
}

/* SIGTERM abandons the self-play phase; the learner must then exit 0
 * (under AddressSanitizer that includes the leak check). Returns 0, or 1
 * (and sets *keep) when it did not, or had to be killed. */
static int stop_learner(const learner_t *lr, int *keep) {
  pid_t pid = lr->pid;
  int rc = 0;
  kill(pid, SIGTERM);
  for (int i = 0; i < 200; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pid = 0;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("# the learner did not exit cleanly (wait status %d); see %s\n",
               st, lr->out);
        *keep = 1;
        rc = 1;
      }
      break;
    }
    ingest_sleep(0.05);
  }
  if (pid > 0) {
    printf("# the learner did not stop within 10 s of SIGTERM; killed\n");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    rc = 1;
  }
  return rc;
}

int main(int argc, char **argv) {
  static opts_t o = {.clients = 64,
                     .item_eps = 16,
                     .per_iter = 4000000,
                     .secs = 10,
                     .paced_warmup = 2,
                     .flat_secs = 3,
                     .paced = TARGET_POS_S,
                     .config = "configs/connect4-smoke.yaml"};
  int rc = parse_opts(argc, argv, &o);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  if ((rc = find_learner(&o)) != 0) return rc;
  signal(SIGPIPE, SIG_IGN);

  static pool_t pool;
  if (pool_make(&pool, 99) != 0) return 1;
  size_t pool_pos = 0;
  for (int k = 0; k < POOL; k++) pool_pos += pool.ep[k].n_states;

  static learner_t lr;
  if (start_learner(&o, &lr) != 0) return 1;
  rc = 1;
  double startup = 0;
  int ready = wait_ready(&lr, &startup);
  if (ready == 0) {
    long rss_idle = proc_rss_kb(lr.pid);
    static bench_t b;
    rc = run_clients(&o, &lr, &pool, &b);
    if (rc == 0) rc = report(&o, &b, startup, rss_idle, pool_pos);
  } else {
    o.keep = 1;
  }
  /* An exited learner is not stopped again. */
  if (ready != 1 && stop_learner(&lr, &o.keep) != 0) rc = 1;
  free(pool.states);
  if (o.keep)
    printf("# run directory kept: %s\n", lr.dir);
  else
    nftw(lr.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
