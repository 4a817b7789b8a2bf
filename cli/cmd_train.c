/* probs train - trains with PROBS.
 *
 *   probs train CONFIG [--actors N] [--searchers M] [--run-dir DIR]
 *               [--resume | --restart] [--no-eval] [--set KEY=VALUE]...
 *   probs train CONFIG --inproc [--run-dir DIR] [--resume]
 *               [--set KEY=VALUE]...
 *
 * The default (distributed) mode starts, as child processes of this one,
 * the programs that sit next to this `probs` binary:
 *
 *   learner       probs-learner CONFIG --run-dir DIR [--resume] [--set ..]
 *                 --run-id ID
 *   actor-<i>     probs-actor CONFIG --role selfplay --id actor-<i> [--set ..]
 *                 --run-id ID
 *   searcher-<i>  probs-actor CONFIG --role search --id searcher-<i> [--set ..]
 *                 --run-id ID
 *   evaluator     probs-evaluator CONFIG --run-dir DIR [--set ..]
 *                 (when eval.enabled, without --no-eval, if the binary is
 *                 there)
 *
 * and supervises them (common/launch/supervise.h): crashed children are started
 * again (the learner with --resume), the learner's exit 0 ends the run,
 * Ctrl-C stops everything. Every --set goes unchanged to every child, so
 * the config file plus the overrides are the whole configuration. ID is the
 * run id of this start (common/run/rundir.h), made here: the workers join only a
 * learner of this start, never the learner of another start of the same
 * config that happens to hold the ports, and a restarted learner keeps it.
 * Without --resume or --restart, a run dir that holds a run already is
 * refused before anything is started or written (both modes). Each
 * child's output goes to RUN_DIR/logs/<name>.log; the supervisor's own
 * lines go to stderr and RUN_DIR/logs/train.log; stdout gets one short
 * progress line per "iteration" (learner) or "elo" (evaluator) event
 * appended to RUN_DIR/metrics.jsonl (cli/progress.h).
 *
 * --inproc runs Algorithm 2 in this one process (common/train/inproc.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "algo.h"
#include "ckpt.h"
#include "cmds.h"
#include "config.h"
#include "entry.h"
#include "inproc.h"
#include "json.h"
#include "log.h"
#include "nn.h"
#include "plan.h"
#include "progress.h"
#include "rundir.h"
#include "supervise.h"
#include "util.h"

#define MAX_SETS PB_ENTRY_MAX_SETS
#define MAX_WORKERS 1024

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs train CONFIG [options]\n"
          "       probs train --resume RUN_DIR [options]   (the run's own\n"
          "                     RUN_DIR/config.yaml)\n"
          "  --actors N         self-play actors to start (default: the "
          "number of online CPUs)\n"
          "  --searchers M      beam-search workers to start (default: "
          "the same\n"
          "                     on the CPU, CPUs - 2 when they run on CUDA;"
          "\n"
          "                     0 with algorithm: alphazero or td; the rule:"
          "\n"
          "                     common/run/plan.h, logged in train.log)\n"
          "  --no-eval          do not start the evaluator\n"
          "  --inproc           run everything in this process (no sockets)\n"
          "  --run-dir DIR      run directory (overrides run.dir)\n"
          "  --resume           continue from the newest intact checkpoint\n"
          "  --restart          the same, but a run dir whose checkpoints are\n"
          "                     gone starts over (its history moved aside);\n"
          "                     without either, a run dir that holds a run is\n"
          "                     refused (exit status 78), nothing changed;\n"
          "                     so is a run dir in use by a learner, and a\n"
          "                     --resume whose config has another game,\n"
          "                     algorithm or network than the run's\n"
          "  --iterations N     stop once N (>= 1) iterations are done\n"
          "  --set KEY=VALUE    override any config key (repeatable)\n"
          "  --keys             list every config key with its default\n"
          "Without --inproc, probs-learner, probs-actor and probs-evaluator\n"
          "are run from the directory of this program; their logs are in\n"
          "RUN_DIR/logs/. Ctrl-C stops them all.\n");
}

/* Parses a whole decimal integer in [lo, hi]; -1 if it is anything else. */
static int parse_count(const char *s, int lo, int hi) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return -1;
  return (int)v;
}

/* ---- progress lines from metrics.jsonl ----------------------------- */

/* One short line per iteration and per evaluation (cli/progress.h). */
static void on_metrics_line(void *ctx, const char *line, size_t len) {
  pb_progress_t *p = ctx;
  (void)len;
  char out[1024];
  if (pb_progress_line(p, line, out, sizeof out) == 1) {
    puts(out);
    fflush(stdout);
  }
}

/* ---- two runs on one machine ------------------------------------------ */

/* A TCP port on the loopback that something listens on already. */
static int port_busy(const char *host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0) return 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* as ZeroMQ */
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  int busy = inet_pton(AF_INET, host, &a.sin_addr) == 1 &&
             bind(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno == EADDRINUSE;
  close(fd);
  return busy;
}

/* A free port on host, reserved by *fd (kept open until the caller has
 * chosen all its ports, so that two picks differ); -1 if none. */
static int free_port(const char *host, int *fd) {
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  socklen_t n = sizeof a;
  if (*fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
      bind(*fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(*fd, (struct sockaddr *)&a, &n) != 0)
    return -1;
  return ntohs(a.sin_port);
}

/* A local run whose ports are taken (another run on this machine, whose
 * workers ours would otherwise join) moves to free ones: each busy
 * loopback endpoint and the HTTP port get a free port, said on stderr,
 * and an override for every child in sets. Endpoints of other hosts and
 * ipc:// ones are left alone. Returns 0, or 2 when no override fits. */
static int move_busy_ports(pb_config_t *cfg, const char **sets, int *nsets,
                           char bufs[3][PB_CONFIG_PATH_MAX + 32]) {
  static const char *const keys[2] = {"net.work_endpoint", "net.pub_endpoint"};
  const char *eps[2] = {cfg->net.work_endpoint, cfg->net.pub_endpoint};
  int fds[3] = {-1, -1, -1}, rc = 0;
  for (int i = 0; i < 3 && rc == 0; i++) {
    char host[64];
    int port = 0;
    if (i < 2) {
      char tail;
      if (sscanf(eps[i], "tcp://%63[^:]:%d%c", host, &port, &tail) != 2)
        continue;
      if (!strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
      if (strcmp(host, "127.0.0.1") != 0) continue;
    } else {
      port = cfg->net.http_port;
      snprintf(host, sizeof host, "%s", cfg->net.http_bind);
      if (port <= 0) continue;
    }
    if (!port_busy(host, port)) continue;
    int np = free_port(host, &fds[i]);
    if (np < 0 || *nsets >= MAX_SETS) {
      fprintf(stderr, "probs train: port %d is in use and no free one found\n",
              port);
      rc = 2;
      break;
    }
    if (i < 2)
      snprintf(bufs[i], sizeof bufs[i], "%s=tcp://%s:%d", keys[i], host, np);
    else
      snprintf(bufs[i], sizeof bufs[i], "net.http_port=%d", np);
    fprintf(stderr,
            "probs train: port %d (%s) is in use, by another run? This run "
            "uses %d instead.\n",
            port, i < 2 ? keys[i] : "net.http_port", np);
    pb_err_t err;
    if (pb_config_apply_override(cfg, bufs[i], &err) != 0) {
      fprintf(stderr, "probs train: %s\n", err.msg);
      rc = 2;
      break;
    }
    sets[(*nsets)++] = bufs[i];
  }
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0) close(fds[i]);
  return rc;
}

/* ---- the distributed mode ------------------------------------------- */

/* A growable argv for one child; pb_supervise_add copies it. */
typedef struct {
  const char *v[2 * MAX_SETS + 16];
  int n;
} argv_t;

static void arg(argv_t *a, const char *s) {
  a->v[a->n++] = s;
  a->v[a->n] = NULL;
}

static void add_sets(argv_t *a, const char *const *sets, int nsets) {
  for (int i = 0; i < nsets; i++) {
    arg(a, "--set");
    arg(a, sets[i]);
  }
}

static int executable(const char *path) {
  return access(path, X_OK) == 0;
}

typedef struct {
  const char *config_path;
  const char *const *sets;
  int nsets;
  int actors, searchers; /* < 0: the default (train_distributed) */
  int resume, no_eval;   /* resume: 0, 1 --resume, 2 --restart */
  const char *run_id;    /* this start's, for the learner and the workers */
  int planned;           /* bit 0: actors, bit 1: searchers by the rule */
  char plan_why[256];    /* the rule's line (common/run/plan.h) */
} dist_opts_t;

/* Whether the searchers' networks will run on CUDA: their device key says
 * cuda, or auto and there is a CUDA device. */
static int searchers_on_cuda(const pb_config_t *cfg) {
  const char *dev = pb_config_device(cfg, PB_DEVICE_SEARCHER, NULL);
  if (strcmp(dev, "cuda") == 0) return 1;
  return strcmp(dev, "auto") == 0 && pb_nn_cuda_capability(NULL, NULL) == 0;
}

/* The children's programs: probs-learner, probs-actor and
 * probs-evaluator from the directory of this program. */
typedef struct {
  char self[PATH_MAX];
  char learner[PATH_MAX + 32], actor[PATH_MAX + 32], evaluator[PATH_MAX + 32];
} programs_t;

/* Finds the programs next to this one. Returns 1 after saying why when
 * this program's directory is unknown or the learner (or, with actors or
 * searchers, the actor) is missing; else 0, with *with_eval cleared (and
 * said) when the evaluator is wanted but missing. */
static int find_programs(const pb_config_t *cfg, const dist_opts_t *o,
                         programs_t *p, int *with_eval) {
  char dir[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", p->self, sizeof p->self - 1);
  if (n <= 0) {
    fprintf(stderr,
            "probs train: cannot find this program's directory "
            "(/proc/self/exe)\n");
    return 1;
  }
  p->self[n] = '\0';
  snprintf(dir, sizeof dir, "%s", p->self);
  char *slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  snprintf(p->learner, sizeof p->learner, "%s/probs-learner", dir);
  snprintf(p->actor, sizeof p->actor, "%s/probs-actor", dir);
  snprintf(p->evaluator, sizeof p->evaluator, "%s/probs-evaluator", dir);
  if (!executable(p->learner) ||
      (o->actors + o->searchers > 0 && !executable(p->actor))) {
    fprintf(stderr,
            "probs train: %s not found next to %s (build it, or use "
            "--inproc)\n",
            executable(p->learner) ? "probs-actor" : "probs-learner", p->self);
    return 1;
  }
  *with_eval = cfg->eval.enabled && !o->no_eval;
  if (*with_eval && !executable(p->evaluator)) {
    fprintf(stderr,
            "probs train: %s not found: running without the "
            "evaluator\n",
            p->evaluator);
    *with_eval = 0;
  }
  return 0;
}

/* Adds the children to sup, each with its command line and its log in
 * `logs`: the learner, the actors, the searchers and (with_eval) the
 * evaluator. Returns 0 or the error of pb_supervise_add. */
static int add_children(pb_supervise_t *sup, const char *run_dir,
                        const char *logs, const programs_t *p,
                        const dist_opts_t *o, int with_eval, pb_err_t *err) {
  char path[PB_CONFIG_PATH_MAX + 64];
  /* learner: the main child; after a crash it resumes from its newest
   * checkpoint instead of starting over */
  argv_t a, ra;
  a.n = 0;
  arg(&a, p->learner);
  arg(&a, o->config_path);
  arg(&a, "--run-dir");
  arg(&a, run_dir);
  ra = a;
  if (o->resume == 1) arg(&a, "--resume");
  if (o->resume == 2) arg(&a, "--restart");
  arg(&ra, "--resume");
  add_sets(&a, o->sets, o->nsets);
  add_sets(&ra, o->sets, o->nsets);
  arg(&a, "--run-id");
  arg(&a, o->run_id);
  arg(&ra, "--run-id");
  arg(&ra, o->run_id);
  snprintf(path, sizeof path, "%s/learner.log", logs);
  int rc =
      pb_supervise_add(sup, "learner", a.v, ra.v, path, PB_SUPERVISE_MAIN, err);
  for (int role = 0; role < 2 && rc == 0; role++) {
    int count = role == 0 ? o->actors : o->searchers;
    for (int i = 0; i < count && rc == 0; i++) {
      char id[32];
      snprintf(id, sizeof id, "%s-%d", role == 0 ? "actor" : "searcher", i);
      a.n = 0;
      arg(&a, p->actor);
      arg(&a, o->config_path);
      arg(&a, "--role");
      arg(&a, role == 0 ? "selfplay" : "search");
      arg(&a, "--id");
      arg(&a, id);
      add_sets(&a, o->sets, o->nsets);
      arg(&a, "--run-id");
      arg(&a, o->run_id);
      snprintf(path, sizeof path, "%s/%s.log", logs, id);
      rc = pb_supervise_add(sup, id, a.v, NULL, path, 0, err);
    }
  }
  if (rc == 0 && with_eval) {
    a.n = 0;
    arg(&a, p->evaluator);
    arg(&a, o->config_path);
    arg(&a, "--run-dir");
    arg(&a, run_dir);
    add_sets(&a, o->sets, o->nsets);
    snprintf(path, sizeof path, "%s/evaluator.log", logs);
    /* the run goes on without it if it keeps failing */
    rc = pb_supervise_add(sup, "evaluator", a.v, NULL, path,
                          PB_SUPERVISE_OPTIONAL | PB_SUPERVISE_LINGER, err);
  }
  return rc;
}

/* How the supervised run ended, in the log: failed (rc != 0), stopped by
 * signal sig, or finished; and the malformed metrics lines skipped. */
static void log_outcome(pb_log_t *log, int rc, int sig, const pb_err_t *err,
                        const char *logs, const pb_progress_t *prog,
                        const char *metrics) {
  if (rc != 0)
    pb_log_error(log, "training failed: %s (see %s)", err->msg, logs);
  else if (sig != 0)
    pb_log_info(log, "stopped by %s; every child has exited",
                sig == SIGINT   ? "SIGINT"
                : sig == SIGHUP ? "SIGHUP"
                                : "SIGTERM");
  else
    pb_log_info(log, "training finished");
  if (prog->bad_lines > 0)
    pb_log_warn(log, "%d malformed line(s) in %s ignored", prog->bad_lines,
                metrics);
}

/* --resume: what goes on where it stopped, and what starts afresh. */
static void say_what_resumes(pb_log_t *log, const pb_config_t *cfg,
                             const char *run_dir, int with_eval) {
  char dir[PB_RUNDIR_PATH_MAX], path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(run_dir, PB_RUNDIR_CHECKPOINTS, dir, sizeof dir);
  uint64_t v = 0;
  pb_err_t e;
  if (pb_ckpt_newest(dir, "ckpt", path, sizeof path, &v, &e) != 0) {
    pb_log_info(log, "resume: no checkpoint yet, the run starts at "
                     "iteration 1");
    return;
  }
  pb_log_info(log,
              "resume: the learner continues from its newest intact "
              "checkpoint (version %" PRIu64 ", of %d iterations), with its "
              "replay buffer; actors and searchers start afresh (they keep "
              "no state)%s",
              v, cfg->train.iterations,
              with_eval ? "; the evaluator rates the checkpoints written from "
                          "now on (rate the ones elo.csv lacks with "
                          "probs-evaluator --run-dir DIR --all)"
                        : "");
}

static int run_distributed(const pb_config_t *cfg, dist_opts_t *o) {
  pb_err_t err;
  pb_err_clear(&err);
  char run_id[PB_RUNDIR_RUN_ID_MAX + 1];
  if (pb_rundir_new_run_id(cfg->run.name, run_id, sizeof run_id, &err) != 0) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return 1;
  }
  o->run_id = run_id;
  /* The children learn our pid from the environment and ask the kernel to
   * end them when we die, even by SIGKILL (pb_die_with_parent). */
  char ppid[32];
  snprintf(ppid, sizeof ppid, "%ld", (long)getpid());
  setenv(PB_PARENT_PID_ENV, ppid, 1);
  /* the programs next to this one */
  programs_t progs;
  int with_eval = 0;
  if (find_programs(cfg, o, &progs, &with_eval) != 0) return 1;

  /* the run directory */
  const char *run_dir = cfg->run.dir;
  char path[PB_CONFIG_PATH_MAX + 64], logs[PB_CONFIG_PATH_MAX + 16];
  snprintf(logs, sizeof logs, "%s/logs", run_dir);
  if (pb_mkdir_p(logs, &err) != 0) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return 1;
  }
  snprintf(path, sizeof path, "%s/train.log", logs);
  pb_log_t *log =
      pb_log_new("train", path, pb_log_level_parse(cfg->log.level), &err);
  if (log == NULL) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return 1;
  }

  pb_progress_t prog;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts); /* metrics.jsonl's clock */
  pb_progress_init(&prog, cfg->train.iterations,
                   (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
  char metrics[PB_CONFIG_PATH_MAX + 32];
  snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", run_dir);
  pb_supervise_opts_t so;
  pb_supervise_opts_default(&so);
  so.follow_path = metrics;
  so.on_line = on_metrics_line;
  /* After the last iteration the evaluator rates the final version
   * before it exits (PB_SUPERVISE_LINGER below). */
  so.linger_s = 300.0;
  so.ctx = &prog;
  pb_supervise_t *sup = pb_supervise_new(&so, log, &err);
  int rc = sup ? 0 : err.code;
  if (rc == 0)
    rc = add_children(sup, run_dir, logs, &progs, o, with_eval, &err);
  if (rc != 0) {
    pb_log_error(log, "%s", err.msg);
    pb_supervise_destroy(&sup);
    pb_log_destroy(&log);
    return 1;
  }

  /* With stdout piped into something that quits (`| head`), a progress
   * line must not kill the supervisor and orphan the children. libuv
   * resets every signal to its default in the children. */
  signal(SIGPIPE, SIG_IGN);
  pb_log_info(log,
              "run %s (run id %s) in %s: learner, %d actor(s), %d "
              "searcher(s)%s; logs in %s; Ctrl-C stops",
              cfg->run.name, o->run_id, run_dir, o->actors, o->searchers,
              with_eval ? ", evaluator" : "", logs);
  if (cfg->net.http_port > 0)
    pb_log_info(log, "learner status: http://127.0.0.1:%d/status",
                cfg->net.http_port);
  if (o->planned)
    pb_log_info(log, "workers by the default rule%s: %s",
                o->planned == 3   ? ""
                : o->planned == 1 ? " (actors; searchers as given)"
                                  : " (searchers; actors as given)",
                o->plan_why);
  if (o->resume) say_what_resumes(log, cfg, run_dir, with_eval);
  rc = pb_supervise_run(sup, &err);
  int sig = pb_supervise_signal(sup);
  log_outcome(log, rc, sig, &err, logs, &prog, metrics);
  pb_supervise_destroy(&sup);
  pb_log_destroy(&log);
  if (rc != 0) return PB_EXIT_FAILED;
  return sig != 0 ? PB_EXIT_SIGNAL_BASE + sig : PB_EXIT_OK;
}

/* The distributed mode from the command line: --iterations (when > 0)
 * becomes one more override in sets (which has room for MAX_SETS), so
 * that every child sees the same configuration; busy local ports move;
 * d->actors and d->searchers < 0 get their defaults; d->sets and
 * d->nsets are filled here. Returns the exit status. */
static int train_distributed(pb_config_t *cfg, const char **sets, int nsets,
                             int iterations, dist_opts_t *d) {
  pb_err_t err;
  pb_err_clear(&err);
  char iter_set[48];
  if (iterations > 0) {
    if (nsets == MAX_SETS) {
      fprintf(stderr, "probs train: too many --set\n");
      return 2;
    }
    snprintf(iter_set, sizeof iter_set, "train.iterations=%d", iterations);
    if (pb_config_apply_override(cfg, iter_set, &err) != 0 ||
        pb_config_check(cfg, &err) != 0) {
      fprintf(stderr, "probs train: --iterations: %s\n", err.msg);
      return 2;
    }
    sets[nsets++] = iter_set;
  }
  char port_sets[3][PB_CONFIG_PATH_MAX + 32];
  if (move_busy_ports(cfg, sets, &nsets, port_sets) != 0) return 2;
  if (cfg->net.http_port > 0)
    fprintf(stderr,
            "probs train: the run's dashboard: http://%s:%d/ (JSON: "
            "/status, /metrics)\n",
            strcmp(cfg->net.http_bind, "0.0.0.0") ? cfg->net.http_bind
                                                  : "127.0.0.1",
            cfg->net.http_port);
  /* The workers the user did not count: the rule of common/run/plan.h,
   * for this node's cores and the searchers' device. */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int cores = cpus >= 1 ? (cpus > MAX_WORKERS ? MAX_WORKERS : (int)cpus) : 1;
  pb_plan_t plan;
  pb_plan_workers(cores, searchers_on_cuda(cfg), pb_algos_of(cfg)->searches,
                  &plan, d->plan_why, sizeof d->plan_why);
  d->sets = sets;
  d->nsets = nsets;
  d->planned = (d->actors < 0) | (d->searchers < 0) << 1;
  if (d->actors < 0) d->actors = plan.actors;
  if (d->searchers < 0) d->searchers = plan.searchers;
  return run_distributed(cfg, d);
}

/* --inproc: the progress within an iteration (progress.h): a bar on a
 * terminal, a line every few seconds otherwise, a meter a phase. */
typedef struct {
  pb_meter_t m;
  int on;       /* a phase's meter is started */
  size_t units; /* its units done */
} inproc_meter_t;

static void inproc_progress(void *ctx, const pb_inproc_progress_t *p) {
  inproc_meter_t *im = ctx;
  const double now = pb_now();
  if (p->done == 0) { /* a phase starts: the last one's meter ends */
    if (im->on) pb_meter_end(&im->m, (double)im->units, now, NULL, 0);
    char label[64];
    snprintf(label, sizeof label, "iteration %llu %s",
             (unsigned long long)p->iteration, p->phase);
    pb_meter_stderr(&im->m, label, p->unit, (double)p->all_units, now);
    im->on = 1;
  }
  im->units = p->units;
  char extra[64];
  snprintf(extra, sizeof extra, "item %zu/%zu", p->done, p->total);
  if (p->done > 0 && p->done == p->total) { /* the phase is done */
    pb_meter_end(&im->m, (double)p->units, now, extra, 0);
    im->on = 0;
  } else {
    pb_meter_update(&im->m, (double)p->units, now, extra);
  }
}

/* --inproc: makes the run directory and opens its learner.log; NULL
 * after saying why. */
static pb_log_t *open_inproc_log(const pb_config_t *cfg) {
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_mkdir_p(cfg->run.dir, &err) != 0) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return NULL;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/learner.log", cfg->run.dir);
  pb_log_t *log =
      pb_log_new("learner", path, pb_log_level_parse(cfg->log.level), &err);
  if (log == NULL) fprintf(stderr, "probs train: %s\n", err.msg);
  return log;
}

/* The command line of probs train, as given. */
typedef struct {
  const char *config, *run_dir, *iterations, *actors, *searchers;
  int inproc, resume, restart, no_eval;
} train_args_t;

/* The command line into *e and *a. -1 to go on, or the exit status. */
static int parse_train(int argc, char **argv, pb_entry_t *e, train_args_t *a) {
  int npos = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_FLAG("inproc", 0, &a->inproc),
                                PB_OPTS_VALUE("run-dir", 0, &a->run_dir),
                                PB_OPTS_FLAG("resume", 0, &a->resume),
                                PB_OPTS_FLAG("restart", 0, &a->restart),
                                PB_OPTS_VALUE("iterations", 0, &a->iterations),
                                PB_OPTS_VALUE("actors", 0, &a->actors),
                                PB_OPTS_VALUE("searchers", 0, &a->searchers),
                                PB_OPTS_FLAG("no-eval", 0, &a->no_eval),
                                PB_ENTRY_OPTS(e)};
  const pb_opts_t cl = {e->prog,    usage, rows, PB_OPTS_N(rows),
                        &a->config, 1,     &npos};
  int rc = pb_entry_check(e, pb_opts_parse(&cl, argc, argv));
  if (rc != PB_ENTRY_GO) return rc;
  if (npos != 1) return pb_opts_fail(&cl, "missing CONFIG");
  return -1;
}

/* Before any process starts (issue 48: probs train used to start five
 * and exit 1): a run dir a learner holds, or a --resume whose config
 * plays another game, algorithm or network than the run's own
 * RUN_DIR/config.yaml, is refused with 78. 0, or 78 after the message. */
static int check_run_dir(const pb_config_t *cfg, int resume) {
  pb_err_t err;
  pb_err_clear(&err);
  long pid = 0;
  if (pb_rundir_lock_held(cfg->run.dir, PB_RUNDIR_LEARNER_LOCK, 0, &pid,
                          &err) == 1) {
    fprintf(stderr,
            "probs train: %s is in use: a learner (pid %ld) runs in it; stop "
            "that run first, or give another --run-dir\n",
            cfg->run.dir, pid);
    return PB_SUPERVISE_EXIT_FATAL;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/" PB_RUNDIR_CONFIG, cfg->run.dir);
  if (!resume || access(path, F_OK) != 0) return 0;
  pb_config_t run;
  pb_config_defaults(&run);
  if (pb_config_load_file(&run, path, &err) != 0) {
    fprintf(stderr, "probs train: --resume: the run's config: %s\n",
            err.msg);
    return PB_SUPERVISE_EXIT_FATAL;
  }
  const char *what = strcmp(run.game, cfg->game) != 0 ? "game"
                     : pb_algos_of(&run) != pb_algos_of(cfg)
                         ? "algorithm"
                     : memcmp(&run.model.v, &cfg->model.v,
                              sizeof run.model.v) != 0
                         ? "model.v (V's network)"
                     : memcmp(&run.model.q, &cfg->model.q,
                              sizeof run.model.q) != 0
                         ? "model.q (Q's network)"
                         : NULL;
  if (what == NULL) return 0;
  fprintf(stderr,
          "probs train: --resume: the run in %s has another %s than this "
          "config (run: game %s, algorithm %s; config: game %s, algorithm "
          "%s): its checkpoints cannot go on under it; resume with the "
          "run's own config: probs train --resume %s\n",
          cfg->run.dir, what, run.game, run.algorithm, cfg->game,
          cfg->algorithm, cfg->run.dir);
  return PB_SUPERVISE_EXIT_FATAL;
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int pb_cmd_train(int argc, char **argv) {
  pb_entry_t e;
  pb_entry_init(&e, "probs train", usage);
  train_args_t a = {0};
  int rc = parse_train(argc, argv, &e, &a);
  if (rc >= 0) return rc;
  int resume = a.restart ? 2 : a.resume ? 1 : 0, iterations = 0;
  int actors = -1, searchers = -1;
  if (a.iterations != NULL &&
      (iterations = parse_count(a.iterations, 1, INT_MAX)) < 0) {
    fprintf(stderr,
            "probs train: --iterations '%s': expected a count of at least 1 "
            "(leave it out to run the config's train.iterations)\n",
            a.iterations);
    return 2;
  }
  const char *const counts[2] = {a.actors, a.searchers};
  int *const dst[2] = {&actors, &searchers};
  for (int k = 0; k < 2; k++) {
    if (counts[k] == NULL) continue;
    if ((*dst[k] = parse_count(counts[k], 0, MAX_WORKERS)) < 0) {
      fprintf(stderr, "probs train: --%s '%s': expected 0..%d\n",
              k == 0 ? "actors" : "searchers", counts[k], MAX_WORKERS);
      return 2;
    }
  }
  if (a.inproc && (actors >= 0 || searchers >= 0 || a.no_eval)) {
    fprintf(stderr,
            "probs train: --actors, --searchers and --no-eval do "
            "not apply to --inproc\n");
    return 2;
  }
  /* probs train --resume RUN_DIR: the run's own config.yaml. */
  char cfg_path[4200];
  if (is_dir(a.config)) {
    snprintf(cfg_path, sizeof cfg_path, "%s/" PB_RUNDIR_CONFIG, a.config);
    if (a.run_dir == NULL) a.run_dir = a.config;
    if (access(cfg_path, R_OK) != 0) {
      fprintf(stderr,
              "probs train: %s is a directory without %s: not a run "
              "directory (give CONFIG, or the directory of a run)\n",
              a.config, PB_RUNDIR_CONFIG);
      return 2;
    }
    a.config = cfg_path;
  }
  pb_config_t cfg;
  if (pb_entry_config(&e, &cfg, a.config, a.run_dir) != 0) return 2;
  pb_err_t err;
  pb_err_clear(&err);
  if ((rc = check_run_dir(&cfg, resume)) != 0) return rc;
  /* A plain start never writes over a run: nothing is touched before. */
  if (resume == 0 && pb_rundir_check_new(cfg.run.dir, &err) != 0) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return PB_SUPERVISE_EXIT_FATAL;
  }
  if (!a.inproc) {
    /* Room for the overrides the distributed mode adds. */
    const char *sets[MAX_SETS + 1];
    int nsets = e.nsets;
    memcpy(sets, e.sets, (size_t)nsets * sizeof *sets);
    dist_opts_t d = {.config_path = a.config,
                     .actors = actors,
                     .searchers = searchers,
                     .resume = resume,
                     .no_eval = a.no_eval};
    return train_distributed(&cfg, sets, nsets, iterations, &d);
  }
  pb_log_t *log = open_inproc_log(&cfg);
  if (log == NULL) return 1;
  pb_entry_signals(on_signal);
  pb_nn_tune_malloc(NULL);
  pb_nn_set_threads(cfg.model.threads);
  inproc_meter_t im = {0};
  pb_inproc_opts_t o = {resume, &stop_flag, iterations, inproc_progress, &im};
  rc = pb_inproc_run(&cfg, log, &o, &err);
  if (im.on) pb_meter_end(&im.m, (double)im.units, pb_now(), NULL, 0);
  if (rc != 0) pb_log_error(log, "training failed: %s", err.msg);
  pb_log_destroy(&log);
  if (rc != 0 && rc != PB_EINTR) return PB_EXIT_FAILED;
  return stop_flag ? PB_EXIT_SIGNAL_BASE + stop_flag : PB_EXIT_OK;
}
