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
 * the work queue, storing the episodes.
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
#include "rng.h"

#include "bench_util.h"

extern char **environ;

enum { POOL = 4096, MAX_CLIENTS = 1024, MAX_SAMPLES = 700 };

#define TARGET_POS_S 100000.0 /* the target, 64 clients, loopback */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- the pool of games ------------------------------------------------ */

typedef struct {
  pb_state_t *states; /* all positions, game after game */
  pb_msg_episode_t ep[POOL];
} pool_t;

static int pool_make(pool_t *p, uint64_t seed) {
  const pb_game_t *g = &pb_game_connect4;
  p->states = malloc((size_t)POOL * g->max_turns * sizeof *p->states);
  if (p->states == NULL) return -1;
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  size_t at = 0;
  for (int k = 0; k < POOL; k++) {
    pb_state_t s;
    g->reset(&s);
    uint32_t n = 0;
    int done = 0;
    float rew = 0;
    pb_state_t *st = &p->states[at];
    while (!done) {
      st[n++] = s;
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&s, acts);
      rew = g->step(&s, acts[pb_rng_below(&rng, (uint32_t)na)], &done);
    }
    p->ep[k] = (pb_msg_episode_t){st, n, (int)rew, 0, NULL};
    at += n;
  }
  return 0;
}

/* ---- the clients -------------------------------------------------------- */

typedef struct {
  _Atomic uint64_t results, positions, bytes_out, msgs_out, msgs_in;
  _Atomic uint64_t no_work, other, errors;
} counters_t;

/* What the main thread tells the clients: stop, and the offered load. */
typedef struct {
  atomic_int stop;
  atomic_int gen;        /* bumped whenever rate changes */
  _Atomic double rate;   /* positions/s per client; 0 = as fast as possible */
} control_t;

typedef struct {
  int id;
  void *zctx;
  const char *endpoint;
  const pool_t *pool;
  control_t *ctl;
  counters_t *cnt;
  const pb_curve_keys_t *keys; /* -K: the worker's CURVE keys, else NULL */
  const char *learner_key;     /* -K: the learner's public key */
  int joined;
  char why[256]; /* the first error, for the report */
} client_t;

/* Receives and decodes one message, waiting until the socket's receive
 * timeout. Returns 0, 1 on timeout, -1 on a decode error. */
static int recv_msg(void *sock, const pb_msg_expect_t *ex, pb_msg_t *out,
                    pb_err_t *err) {
  zmq_msg_t z;
  zmq_msg_init(&z);
  if (zmq_msg_recv(&z, sock, 0) < 0) {
    zmq_msg_close(&z);
    return 1;
  }
  int rc = pb_msg_decode(zmq_msg_data(&z), zmq_msg_size(&z), ex, out, err);
  zmq_msg_close(&z);
  return rc == 0 ? 0 : -1;
}

static void *client_main(void *arg) {
  client_t *c = arg;
  counters_t *k = c->cnt;
  pb_err_t err;
  pb_msg_buf_t buf = {0};
  pb_msg_episode_t *eps = NULL;
  uint32_t eps_cap = 0;
  char sender[32], run_id[PB_MSG_ID_MAX + 1] = "";
  int game_id = 0;
  snprintf(sender, sizeof sender, "bench-%d", c->id);
  void *s = zmq_socket(c->zctx, ZMQ_DEALER);
  int linger = 0, tmo = 500;
  if (s == NULL || zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) ||
      zmq_setsockopt(s, ZMQ_RCVTIMEO, &tmo, sizeof tmo) ||
      (c->keys != NULL &&
       pb_curve_client(s, c->keys, c->learner_key, &err) != 0) ||
      zmq_connect(s, c->endpoint)) {
    snprintf(c->why, sizeof c->why, "socket: %.200s", zmq_strerror(zmq_errno()));
    goto out;
  }
  /* Hello until answered. */
  while (!atomic_load(&c->ctl->stop) && !c->joined) {
    pb_msg_t m, r;
    pb_msg_init(&m, PB_MSG_HELLO, "", 0, sender);
    m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, (uint32_t)getpid(), "bench"};
    if (pb_msg_encode_buf(&m, &buf, &err) != 0 ||
        zmq_send(s, buf.data, buf.len, 0) < 0) {
      snprintf(c->why, sizeof c->why, "hello: %.200s", err.msg);
      goto out;
    }
    int rc = recv_msg(s, NULL, &r, &err);
    if (rc == 0 && r.type == PB_MSG_HELLO_REPLY && r.hello_reply.accepted) {
      snprintf(run_id, sizeof run_id, "%s", r.header.run_id);
      game_id = r.header.game_id;
      c->joined = 1;
    }
    pb_msg_free(&r);
  }
  const pb_msg_expect_t ex = {run_id, game_id};
  uint32_t next = (uint32_t)c->id * 97u; /* where this client reads the pool */
  int need_request = 1, gen = -1;
  double due = 0; /* paced mode: when the next result may go */
  while (!atomic_load(&c->ctl->stop)) {
    int g = atomic_load(&c->ctl->gen);
    double rate = atomic_load(&c->ctl->rate);
    if (g != gen) {
      gen = g;
      due = now_s();
    }
    if (rate > 0 && due > now_s()) {
      sleep_s(due - now_s() < 0.05 ? due - now_s() : 0.05);
      continue;
    }
    pb_msg_t m, r;
    if (need_request) {
      pb_msg_init(&m, PB_MSG_WORK_REQUEST, run_id, game_id, sender);
      m.work_request = (pb_msg_work_request_t){PB_ROLE_ACTOR, 0};
      if (pb_msg_encode_buf(&m, &buf, &err) != 0 ||
          zmq_send(s, buf.data, buf.len, 0) < 0) {
        atomic_fetch_add(&k->errors, 1);
        continue;
      }
      atomic_fetch_add(&k->msgs_out, 1);
      atomic_fetch_add(&k->bytes_out, buf.len);
      need_request = 0;
    }
    int rc = recv_msg(s, &ex, &r, &err);
    if (rc == 1) { /* nothing within the timeout: ask again */
      need_request = 1;
      continue;
    }
    need_request = 1;
    if (rc < 0) {
      atomic_fetch_add(&k->errors, 1);
      if (c->why[0] == '\0')
        snprintf(c->why, sizeof c->why, "decode: %.200s", err.msg);
      continue;
    }
    atomic_fetch_add(&k->msgs_in, 1);
    if (r.type == PB_MSG_NO_WORK) {
      atomic_fetch_add(&k->no_work, 1);
      pb_msg_free(&r);
      sleep_s(0.01);
      continue;
    }
    if (r.type != PB_MSG_WORK_ITEM || r.work_item.kind != PB_WORK_SELFPLAY) {
      atomic_fetch_add(&k->other, 1);
      pb_msg_free(&r);
      continue;
    }
    uint32_t n = r.work_item.episodes;
    if (n > eps_cap) {
      pb_msg_episode_t *e = realloc(eps, n * sizeof *e);
      if (e == NULL) {
        pb_msg_free(&r);
        snprintf(c->why, sizeof c->why, "out of memory");
        goto out;
      }
      eps = e;
      eps_cap = n;
    }
    uint64_t npos = 0;
    for (uint32_t i = 0; i < n; i++) {
      eps[i] = c->pool->ep[next++ % POOL];
      eps[i].q_version = r.work_item.q_version;
      npos += eps[i].n_states;
    }
    pb_msg_init(&m, PB_MSG_SELFPLAY_RESULT, run_id, game_id, sender);
    m.selfplay_result = (pb_msg_selfplay_result_t){r.work_item.item_id, eps, n};
    pb_msg_free(&r);
    if (pb_msg_encode_buf(&m, &buf, &err) != 0 ||
        zmq_send(s, buf.data, buf.len, 0) < 0) {
      atomic_fetch_add(&k->errors, 1);
      if (c->why[0] == '\0')
        snprintf(c->why, sizeof c->why, "result: %.200s", err.msg);
      continue;
    }
    atomic_fetch_add(&k->msgs_out, 1);
    atomic_fetch_add(&k->bytes_out, buf.len);
    atomic_fetch_add(&k->results, 1);
    atomic_fetch_add(&k->positions, npos);
    if (rate > 0) due += (double)npos / rate;
  }
out:
  if (s) zmq_close(s);
  pb_msg_buf_free(&buf);
  free(eps);
  return NULL;
}

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

/* GET path from 127.0.0.1:port into buf (the body, NUL-terminated).
 * Returns the body length or -1. */
static int http_get(int port, const char *path, char *buf, size_t cap) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char req[256];
  int rn = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
  size_t got = 0;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      write(fd, req, (size_t)rn) != rn) {
    close(fd);
    return -1;
  }
  /* Read until the body announced by Content-Length is complete. */
  long want = -1;
  char *body = NULL;
  while (got + 1 < cap) {
    ssize_t r = read(fd, buf + got, cap - 1 - got);
    if (r <= 0) break;
    got += (size_t)r;
    buf[got] = '\0';
    if (body == NULL && (body = strstr(buf, "\r\n\r\n")) != NULL) {
      body += 4;
      const char *cl = strstr(buf, "Content-Length:");
      if (cl) want = strtol(cl + 15, NULL, 10);
    }
    if (body && want >= 0 && (long)(buf + got - body) >= want) break;
  }
  close(fd);
  buf[got] = '\0';
  if (body == NULL || strncmp(buf, "HTTP/1.", 7) || strstr(buf, " 200 ") != buf + 8)
    return -1;
  size_t bl = (size_t)(buf + got - body);
  memmove(buf, body, bl + 1);
  return (int)bl;
}

/* A number after `key` in text (a JSON key "\"k\":" or a Prometheus
 * "name "), or -1. */
static double number_after(const char *text, const char *key) {
  const char *p = strstr(text, key);
  if (p == NULL) return -1;
  return strtod(p + strlen(key), NULL);
}

typedef struct {
  double t;
  double positions, messages, bytes; /* learner counters */
  double cpu_s;                      /* learner user + system */
  long rss_kb;
} sample_t;

static long proc_rss_kb(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
  FILE *f = fopen(path, "r");
  long kb = -1;
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static double proc_cpu_s(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* Fields after the command name (which may hold spaces): state is
   * field 3; utime and stime are fields 14 and 15. */
  char *p = strrchr(buf, ')');
  if (p == NULL) return -1;
  unsigned long ut = 0, st = 0;
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
             &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int sample(pid_t pid, int port, sample_t *s) {
  static char buf[1 << 16];
  s->t = now_s();
  s->rss_kb = proc_rss_kb(pid);
  s->cpu_s = proc_cpu_s(pid);
  if (http_get(port, "/status", buf, sizeof buf) < 0) return -1;
  s->positions = number_after(buf, "\"positions_ingested\":");
  s->messages = number_after(buf, "\"messages\":");
  if (http_get(port, "/metrics", buf, sizeof buf) < 0) return -1;
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
  sleep_s(warmup);
  uint64_t p0 = atomic_load(&cnt->positions), r0 = atomic_load(&cnt->results);
  double cpu0 = (double)clock() / CLOCKS_PER_SEC;
  if (sample(pid, port, &w->s0) != 0) {
    fprintf(stderr, "bench_ingest: cannot read the learner's /status\n");
    return -1;
  }
  w->series[w->ns++] = w->s0;
  w->s1 = w->s0;
  while (now_s() - w->s0.t < secs - 1e-3) {
    double left = secs - (now_s() - w->s0.t);
    sleep_s(left < 1.0 ? left : 1.0);
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

static void usage(void) {
  fprintf(stderr,
          "usage: bench_ingest [-c clients 1..%d] [-r paced positions/s] "
          "[-w paced warm-up s] [-d paced s] [-f flat-out s] [-C config.yaml] "
          "[-L probs-learner] [-e item-episodes] [-E episodes-per-iter] [-K] "
          "[-k] [-v] [-p]\n",
          MAX_CLIENTS);
}

int main(int argc, char **argv) {
  int clients = 64, item_eps = 16, per_iter = 4000000, keep = 0, verbose = 0,
      curve = 0, opt;
  double secs = 10, paced_warmup = 2, flat_secs = 3, paced = TARGET_POS_S;
  const char *config = "configs/connect4-smoke.yaml";
  char learner[4096] = "";
  while ((opt = getopt(argc, argv, "c:d:w:f:r:C:L:e:E:Kkvp")) != -1) {
    int bad = 0;
    switch (opt) {
      case 'c': bad = parse_int(optarg, 1, MAX_CLIENTS, &clients); break;
      case 'd': bad = parse_double(optarg, 1, 600, &secs); break;
      case 'w': bad = parse_double(optarg, 0, 600, &paced_warmup); break;
      case 'f': bad = parse_double(optarg, 1, 600, &flat_secs); break;
      case 'r': bad = parse_double(optarg, 1, 1e9, &paced); break;
      case 'E': bad = parse_int(optarg, 1, 10000000, &per_iter); break;
      case 'C': config = optarg; break;
      case 'L': snprintf(learner, sizeof learner, "%s", optarg); break;
      case 'e': bad = parse_int(optarg, 1, PB_MSG_MAX_EPISODES, &item_eps); break;
      case 'k': keep = 1; break;
      case 'K': curve = 1; break;
      case 'v': verbose = 1; break;
      case 'p': parseable = 1; break;
      default: bad = 1;
    }
    if (bad) {
      usage();
      return 2;
    }
  }
  if (optind != argc) {
    usage();
    return 2;
  }
  if (learner[0] == '\0') {
    char self[4000];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
      fprintf(stderr, "bench_ingest: cannot find myself; use -L\n");
      return 2;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(learner, sizeof learner, "%s/probs-learner", self);
  }
  if (access(learner, X_OK) != 0 || access(config, R_OK) != 0) {
    fprintf(stderr, "bench_ingest: need %s (-L) and %s (-C)\n", learner, config);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);

  static pool_t pool;
  if (pool_make(&pool, 99) != 0) return 1;
  size_t pool_pos = 0;
  for (int k = 0; k < POOL; k++) pool_pos += pool.ep[k].n_states;

  char dir[] = "/tmp/probs-bench-ingest-XXXXXX";
  if (mkdtemp(dir) == NULL) {
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
  char set_work[96], set_pub[96], set_http[64], set_items[64], set_iter[64],
      out[4200], work_ep[64];
  snprintf(set_iter, sizeof set_iter, "train.episodes_per_iter=%d", per_iter);
  snprintf(work_ep, sizeof work_ep, "tcp://127.0.0.1:%d", pw);
  snprintf(set_work, sizeof set_work, "net.work_endpoint=%s", work_ep);
  snprintf(set_pub, sizeof set_pub, "net.pub_endpoint=tcp://127.0.0.1:%d", pp);
  snprintf(set_http, sizeof set_http, "net.http_port=%d", ph);
  snprintf(set_items, sizeof set_items, "net.item_episodes=%d", item_eps);
  snprintf(out, sizeof out, "%s/learner.out", dir);
  /* -K: the run with CURVE keys (learner and clients). */
  static pb_curve_keys_t wkeys, lkeys;
  char set_curve[4300] = "net.curve_dir=", keydir[4200];
  if (curve) {
    pb_err_t kerr;
    char kp[4300];
    snprintf(keydir, sizeof keydir, "%s/keys", dir);
    snprintf(kp, sizeof kp, "%s/worker.key", keydir);
    if (pb_curve_make_dir(keydir, &kerr) != 0 ||
        pb_curve_load(kp, 1, &wkeys, &kerr) != 0 ||
        (snprintf(kp, sizeof kp, "%s/learner.pub", keydir),
         pb_curve_load(kp, 0, &lkeys, &kerr) != 0)) {
      fprintf(stderr, "bench_ingest: -K: %s\n", kerr.msg);
      return 1;
    }
    snprintf(set_curve, sizeof set_curve, "net.curve_dir=%s", keydir);
  }
  char *largv[] = {learner, (char *)config, "--run-dir", dir,
                   "--set", set_iter,
                   "--set", set_items, "--set", set_work,
                   "--set", set_pub, "--set", set_http,
                   "--set", "run.name=bench-ingest",
                   "--set", "log.level=warn", "--set", set_curve, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int src = posix_spawn(&pid, learner, &fa, NULL, largv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (src != 0) {
    fprintf(stderr, "bench_ingest: cannot start %s: %s\n", learner,
            strerror(src));
    return 1;
  }
  int rc = 1;
  /* Wait until the learner serves /status in its self-play phase. */
  double t_start = now_s();
  char buf[1 << 14];
  for (;;) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      fprintf(stderr, "bench_ingest: the learner exited; see %s\n", out);
      keep = 1;
      goto done_nolearner;
    }
    if (http_get(ph, "/status", buf, sizeof buf) > 0 &&
        strstr(buf, "\"phase\":\"selfplay\""))
      break;
    if (now_s() - t_start > 120) {
      fprintf(stderr, "bench_ingest: the learner did not start; see %s\n", out);
      keep = 1;
      goto done;
    }
    sleep_s(0.1);
  }
  double startup = now_s() - t_start;
  long rss_idle = proc_rss_kb(pid);

  void *zctx = zmq_ctx_new();
  static client_t cl[MAX_CLIENTS];
  static pthread_t th[MAX_CLIENTS];
  static counters_t cnt;
  static control_t ctl;
  atomic_store(&ctl.rate, paced / clients);
  int started = 0;
  for (int i = 0; i < clients; i++) {
    cl[i] = (client_t){.id = i, .zctx = zctx, .endpoint = work_ep,
                       .pool = &pool, .ctl = &ctl, .cnt = &cnt,
                       .keys = curve ? &wkeys : NULL,
                       .learner_key = lkeys.pub};
    if (pthread_create(&th[i], NULL, client_main, &cl[i]) != 0) break;
    started++;
  }
  /* 1. paced: the target load, for the memory figures */
  window_t wp, wf;
  rc = window(pid, ph, &cnt, paced_warmup, secs, &wp);
  /* 2. flat out: capacity */
  if (rc == 0) {
    atomic_store(&ctl.rate, 0.0);
    atomic_fetch_add(&ctl.gen, 1);
    rc = window(pid, ph, &cnt, 1.0, flat_secs, &wf);
  }
  atomic_store(&ctl.stop, 1);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  zmq_ctx_term(zctx);
  int joined = 0;
  for (int i = 0; i < started; i++) joined += cl[i].joined;
  for (int i = 0; i < started; i++)
    if (cl[i].why[0]) {
      printf("# client %d: %s\n", i, cl[i].why);
      break;
    }
  if (rc == 0) {
    char fig[96];
    snprintf(fig, sizeof fig, "ingest: positions/s, %d clients", clients);
    row(fig, wf.pos, "positions/s", wf.pos / TARGET_POS_S, "target 100000/s");
    row("ingest: results/s (SelfplayResult)", wf.results, "messages/s", 0, "");
    row("ingest: messages/s into the learner", wf.msgs, "messages/s", 0, "");
    row("ingest: MB/s into the learner", wf.mb, "MB/s", 0, "");
    row("ingest: learner CPU", 100 * wf.cpu, "% of a core", 0, "");
    row("ingest: positions per learner CPU-s", wf.cpu > 0 ? wf.pos / wf.cpu : 0,
        "positions/s", wf.cpu > 0 ? wf.pos / wf.cpu / TARGET_POS_S : 0,
        "target 100000/s");
    row("ingest: RSS growth per stored position", wf.grow_b, "bytes",
        wf.grow_b / sizeof(pb_state_t), "32 B (one pb_state_t)");
    snprintf(fig, sizeof fig, "ingest paced %.0f/s: positions/s", paced);
    row(fig, wp.pos, "positions/s", wp.pos / paced, "offered load");
    row("ingest paced: learner CPU", 100 * wp.cpu, "% of a core", 0, "");
    row("ingest paced: RSS after warm-up", wp.s0.rss_kb / 1024.0, "MiB", 0, "");
    row("ingest paced: RSS at the end", wp.s1.rss_kb / 1024.0, "MiB",
        wp.s0.rss_kb > 0 ? (double)wp.s1.rss_kb / wp.s0.rss_kb : 0,
        "after warm-up");
    row("ingest paced: RSS growth per stored position", wp.grow_b, "bytes",
        wp.grow_b / sizeof(pb_state_t), "32 B (one pb_state_t)");
    printf("# learner started in %.1fs (RSS %.1f MiB idle); %d/%d clients "
           "joined; paced: %.1fs warm-up + %.1fs, flat out: 1s + %.1fs\n",
           startup, rss_idle / 1024.0, joined, started, paced_warmup,
           wp.s1.t - wp.s0.t, wf.s1.t - wf.s0.t);
    printf("# flat out, client side: %.0f positions/s sent, %.0f results/s; "
           "bench process CPU %.0f%% of a core (the clients share the cores "
           "with the learner)\n",
           wf.c_pos, wf.results, 100 * wf.c_cpu);
    printf("# paced, client side: %.0f positions/s sent; bench process CPU "
           "%.0f%% of a core\n", wp.c_pos, 100 * wp.c_cpu);
    printf("# %llu NoWork, %llu other replies, %llu errors (NoWork means the "
           "self-play phase ran out of items: raise -E)\n",
           (unsigned long long)atomic_load(&cnt.no_work),
           (unsigned long long)atomic_load(&cnt.other),
           (unsigned long long)atomic_load(&cnt.errors));
    printf("# pool: %d random games, %.1f positions per game; stored: "
           "%.0f positions paced, %.0f flat out (%.1f MiB of states); RSS "
           "%.1f -> %.1f MiB flat out\n",
           POOL, (double)pool_pos / POOL, wp.stored, wf.stored,
           wf.stored * sizeof(pb_state_t) / 1048576.0, wf.s0.rss_kb / 1024.0,
           wf.s1.rss_kb / 1024.0);
    if (verbose)
      for (int i = 0; i < wp.ns; i++)
        printf("# paced t=%5.1fs RSS %.1f MiB, %.0f positions ingested\n",
               wp.series[i].t - wp.s0.t, wp.series[i].rss_kb / 1024.0,
               wp.series[i].positions);
    if (atomic_load(&cnt.no_work) > 0) rc = 1;
  }
done:
  /* SIGTERM abandons the self-play phase; the learner must then exit 0
   * (under AddressSanitizer that includes the leak check). */
  kill(pid, SIGTERM);
  for (int i = 0; i < 200; i++) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pid = 0;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("# the learner did not exit cleanly (wait status %d); see %s\n",
               st, out);
        keep = 1;
        rc = 1;
      }
      break;
    }
    sleep_s(0.05);
  }
  if (pid > 0) {
    printf("# the learner did not stop within 10 s of SIGTERM; killed\n");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    rc = 1;
  }
done_nolearner:
  free(pool.states);
  if (keep)
    printf("# run directory kept: %s\n", dir);
  else
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
