/* evalrun.c - rating checkpoints: matches, the Elo fit, elo.csv, elo.svg.
 *
 * Workload: a few hundred games per checkpoint, one checkpoint every few
 * seconds to minutes; the games dominate. Threads take (opponent, game)
 * tasks from one counter, each thread with its own copy of the checkpoint
 * agent and one agent per opponent, made once per checkpoint. */
#include "evalrun.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "accuracy.h"
#include "agent.h"
#include "ckpt.h"
#include "elo.h"
#include "elotable.h"
#include "json.h"
#include "match.h"
#include "rundir.h"
#include "rng.h"
#include "solver.h"
#include "svgplot.h"
#include "testset.h"
#include "util.h"

extern char **environ;

#define PB__EVAL_MAX_THREADS 256
#define PB__EVAL_CSV_MAX (64u << 20)
#define PB__PATH 4200
#define PB__DIR_MAX 4000 /* leaves room for the file names */

/* --------------------------------------------------------------- opts */

int pb_evalrun_opts_from_config(pb_evalrun_opts_t *o, const pb_config_t *cfg,
                                pb_err_t *err) {
  if (o == NULL || cfg == NULL)
    return pb_err_set(err, PB_EINVAL, "evalrun: NULL options or config");
  memset(o, 0, sizeof *o);
  o->g = pb_game_by_name(cfg->game);
  if (o->g == NULL)
    return pb_err_set(err, PB_ECONFIG, "game: unknown game '%s' (known: %s)",
                      cfg->game, pb_game_names());
  o->games = cfg->eval.games_per_opponent;
  o->opening_random_moves = cfg->eval.opening_random_moves;
  o->threads = cfg->eval.threads;
  o->seed = (uint64_t)cfg->seed;
  o->accuracy = cfg->eval.accuracy && pb_solver_supports(o->g);
  snprintf(o->testset, sizeof o->testset, "%s", cfg->eval.testset);
  o->search_expansions = cfg->eval.search_expansions;
  o->search_depth = cfg->eval.search_depth;
  o->mcts_simulations =
      pb_config_alphazero(cfg) ? cfg->eval.mcts_simulations : 0;
  int rc = pb_elotable_opponents(cfg->eval.opponents, o->opponents,
                                 &o->n_opponents, err);
  if (rc != 0) return rc;
  for (int j = 0; j < o->n_opponents; j++) {
    /* The paper's lookahead ladder was measured in Connect Four; in the
     * other games only random keeps its 1000 unless eval.anchors says. */
    double r = NAN;
    if (o->g->id == PB_GAME_CONNECT4 || o->g->id == PB_GAME_TICTACTOE ||
        !strcmp(o->opponents[j], "random"))
      pb_elo_default_anchor(o->opponents[j], &r);
    o->anchor[j] = r;
  }
  /* eval.anchors: "SPEC=R,SPEC=R" over the defaults. */
  char item[PB_ELOTABLE_SPEC_MAX + 32];
  for (const char *a = cfg->eval.anchors; *a != '\0';) {
    const char *comma = strchr(a, ',');
    size_t len = comma ? (size_t)(comma - a) : strlen(a);
    if (len == 0 || len >= sizeof item)
      return pb_err_set(err, PB_ECONFIG,
                        "eval.anchors: empty or too long item in '%s'",
                        cfg->eval.anchors);
    memcpy(item, a, len);
    item[len] = '\0';
    pb_err_t e;
    pb_err_clear(&e);
    if (pb_evalrun_set_anchor(o, item, &e) != 0)
      return pb_err_set(err, PB_ECONFIG, "eval.anchors: %s", e.msg);
    a = comma ? comma + 1 : a + len;
  }
  return 0;
}

int pb_evalrun_set_anchor(pb_evalrun_opts_t *o, const char *arg,
                          pb_err_t *err) {
  if (o == NULL || arg == NULL)
    return pb_err_set(err, PB_EINVAL, "evalrun: NULL anchor");
  const char *eq = strrchr(arg, '=');
  if (eq == NULL || eq == arg || eq[1] == '\0')
    return pb_err_set(err, PB_EINVAL,
                      "anchor '%s': expected SPEC=RATING (e.g. "
                      "lookahead:2=1450, or SPEC=none)",
                      arg);
  double r = NAN;
  if (strcmp(eq + 1, "none") != 0) {
    char *end = NULL;
    errno = 0;
    r = strtod(eq + 1, &end);
    if (errno != 0 || *end != '\0' || !isfinite(r) || fabs(r) > 1e6)
      return pb_err_set(err, PB_EINVAL,
                        "anchor '%s': rating '%s' is not a number within "
                        "+-1e6",
                        arg, eq + 1);
  }
  size_t len = (size_t)(eq - arg);
  for (int j = 0; j < o->n_opponents; j++)
    if (strlen(o->opponents[j]) == len && !strncmp(o->opponents[j], arg, len)) {
      o->anchor[j] = r;
      return 0;
    }
  return pb_err_set(err, PB_ENOTFOUND,
                    "anchor '%s': '%.*s' is not one of the opponents "
                    "(eval.opponents)",
                    arg, (int)len, arg);
}

/* --------------------------------------------------------------- play */

/* The seed of the games of `version` against opponent j. */
static uint64_t games_seed(uint64_t seed, uint64_t version, int j) {
  return pb_mix64(pb_mix64(seed ^ 0x4556414cULL) ^
                  pb_mix64(version * 0x9E3779B97F4A7C15ULL + (uint64_t)j));
}

typedef struct {
  const pb_evalrun_opts_t *o;
  const char *spec; /* "checkpoint:PATH" */
  uint64_t version;
  uint64_t seeds[PB_ELOTABLE_MAX_OPPONENTS];
  int total;       /* n_opponents * games */
  int8_t *outcome; /* per task, for the checkpoint */
  atomic_int next;
  atomic_int stop;
  pthread_mutex_t mu;
  int err_code;
  int err_task; /* lowest failing task (-1: making agents), for a stable
                   report */
  pb_err_t err;
} play_t;

static void play_fail(play_t *sh, int task, int code, const pb_err_t *e) {
  pthread_mutex_lock(&sh->mu);
  if (sh->err_code == 0 || task < sh->err_task) {
    sh->err_code = code;
    sh->err_task = task;
    sh->err = *e;
    sh->err.code = code;
  }
  pthread_mutex_unlock(&sh->mu);
  atomic_store(&sh->stop, 1);
}

static void *play_worker(void *arg) {
  play_t *sh = arg;
  const pb_evalrun_opts_t *o = sh->o;
  pb_err_t e;
  pb_err_clear(&e);
  pb_agent_t *net = pb_agent_new(o->g, sh->spec, 0, &e);
  pb_agent_t *opp[PB_ELOTABLE_MAX_OPPONENTS] = {0};
  if (net == NULL) {
    play_fail(sh, -1, e.code < 0 ? e.code : PB_EINVAL, &e);
    return NULL;
  }
  for (int j = 0; j < o->n_opponents; j++)
    if ((opp[j] = pb_agent_new(o->g, o->opponents[j], 0, &e)) == NULL) {
      play_fail(sh, -1, e.code < 0 ? e.code : PB_EINVAL, &e);
      goto out;
    }
  for (;;) {
    if (atomic_load(&sh->stop)) break;
    if (o->stop != NULL && *o->stop) {
      pb_err_set(&e, PB_EINTR, "evaluation of version %llu stopped",
                 (unsigned long long)sh->version);
      play_fail(sh, sh->total, PB_EINTR, &e);
      break;
    }
    int t = atomic_fetch_add(&sh->next, 1);
    if (t >= sh->total) break;
    int j = t / o->games, i = t % o->games;
    pb_agent_reseed(net, pb_match_seed(sh->seeds[j], i, 0));
    pb_agent_reseed(opp[j], pb_match_seed(sh->seeds[j], i, 1));
    pb_rng_t rng;
    pb_rng_seed(&rng, pb_match_seed(sh->seeds[j], i, 2), 0);
    int net_first = i % 2 == 0, outcome = 0;
    int rc = pb_match_game(
        o->g, net_first ? net : opp[j], net_first ? opp[j] : net, &rng,
        o->opening_random_moves, 0, &outcome, NULL, NULL, &e);
    if (rc < 0) {
      play_fail(sh, t, rc, &e);
      break;
    }
    sh->outcome[t] = (int8_t)(net_first ? outcome : -outcome);
  }
out:
  for (int j = 0; j < o->n_opponents; j++) pb_agent_destroy(&opp[j]);
  pb_agent_destroy(&net);
  return NULL;
}

/* Fits the row's Elo against the anchored opponents. */
static int fit_row(const pb_evalrun_opts_t *o, pb_elotable_row_t *row,
                   pb_err_t *err) {
  pb_elo_record_t recs[PB_ELOTABLE_MAX_OPPONENTS];
  int n = 0;
  for (int j = 0; j < o->n_opponents; j++) {
    if (!isfinite(o->anchor[j])) continue;
    recs[n].opp_rating = o->anchor[j];
    recs[n].wins = row->wdl[j][0];
    recs[n].draws = row->wdl[j][1];
    recs[n].losses = row->wdl[j][2];
    n++;
  }
  row->elo = row->lo = row->hi = NAN;
  row->flags = 0;
  if (n == 0) {
    row->flags = PB_ELOTABLE_NO_ANCHOR;
    return 0;
  }
  pb_elo_fit_t f;
  int rc = pb_elo_fit_one(recs, n, &f, err);
  if (rc < 0) return rc;
  row->elo = f.rating;
  row->lo = f.lo;
  row->hi = f.hi;
  row->flags = f.flags;
  return 0;
}

int pb_evalrun_play(const pb_evalrun_opts_t *o, const char *ckpt_path,
                    uint64_t version, pb_elotable_row_t *row, pb_err_t *err) {
  if (o == NULL || o->g == NULL || ckpt_path == NULL || row == NULL)
    return pb_err_set(err, PB_EINVAL, "evalrun: NULL argument");
  memset(row, 0, sizeof *row);
  if (o->n_opponents < 1 || o->n_opponents > PB_ELOTABLE_MAX_OPPONENTS ||
      o->games < 1 || o->opening_random_moves < 0 || o->threads < 0)
    return pb_err_set(err, PB_EINVAL,
                      "evalrun: bad options (%d opponents, %d games, %d "
                      "random moves, %d threads)",
                      o->n_opponents, o->games, o->opening_random_moves,
                      o->threads);
  if ((long long)o->games * o->n_opponents > 1000000000LL)
    return pb_err_set(err, PB_EINVAL, "evalrun: more than 1e9 games");
  double t0 = pb_now();
  play_t sh;
  memset(&sh, 0, sizeof sh);
  sh.o = o;
  sh.version = version;
  sh.total = o->games * o->n_opponents;
  size_t slen = strlen(ckpt_path) + sizeof "checkpoint:";
  char *spec = malloc(slen);
  sh.outcome = calloc((size_t)sh.total, sizeof *sh.outcome);
  int nt = o->threads;
  if (nt == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    nt = c < 1 ? 1 : c > PB__EVAL_MAX_THREADS ? PB__EVAL_MAX_THREADS : (int)c;
  }
  if (nt > PB__EVAL_MAX_THREADS) nt = PB__EVAL_MAX_THREADS;
  if (nt > sh.total) nt = sh.total;
  pthread_t *tids = calloc((size_t)nt, sizeof *tids);
  int rc = 0;
  if (spec == NULL || sh.outcome == NULL || tids == NULL) {
    rc = pb_err_set(err, PB_ENOMEM, "evalrun: out of memory");
    goto out;
  }
  snprintf(spec, slen, "checkpoint:%s", ckpt_path);
  sh.spec = spec;
  for (int j = 0; j < o->n_opponents; j++)
    sh.seeds[j] = games_seed(o->seed, version, j);
  atomic_init(&sh.next, 0);
  atomic_init(&sh.stop, 0);
  pthread_mutex_init(&sh.mu, NULL);
  int started = 0;
  for (int t = 1; t < nt; t++) {
    if (pthread_create(&tids[t], NULL, play_worker, &sh) != 0) {
      atomic_store(&sh.stop, 1);
      rc = pb_err_set(err, PB_EIO, "evalrun: cannot start thread %d of %d", t,
                      nt);
      break;
    }
    started = t;
  }
  if (rc == 0) play_worker(&sh); /* the calling thread plays too */
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  pthread_mutex_destroy(&sh.mu);
  if (rc == 0 && sh.err_code != 0) {
    rc = sh.err_code;
    if (err != NULL) *err = sh.err;
  }
  if (rc != 0) goto out;
  row->version = version;
  row->iteration = version;
  row->n_opponents = o->n_opponents;
  row->games = sh.total;
  for (int t = 0; t < sh.total; t++) {
    int j = t / o->games, out = sh.outcome[t];
    row->wdl[j][out > 0 ? 0 : out == 0 ? 1 : 2]++;
  }
  row->seconds = pb_now() - t0;
  row->acc_q = row->acc_v = row->acc_beam = row->minutes = NAN;
  rc = fit_row(o, row, err);
out:
  if (rc != 0) memset(row, 0, sizeof *row);
  free(spec);
  free(sh.outcome);
  free(tids);
  return rc;
}

int pb_evalrun_chart(const pb_elotable_t *t,
                         const pb_evalrun_opts_t *o, const char *title,
                         int x_axis, char **out, size_t *len, pb_err_t *err) {
  if (t == NULL || o == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "elo chart: NULL argument");
  const int n = pb_elotable_count(t);
  pb_svgplot_point_t *pts = calloc((size_t)n + 1, sizeof *pts);
  if (pts == NULL) return pb_err_set(err, PB_ENOMEM, "elo chart: no memory");
  for (int i = 0; i < n; i++) {
    const pb_elotable_row_t *r = pb_elotable_row(t, i);
    pts[i].x = x_axis == PB_EVALRUN_X_MINUTES ? r->minutes
                                              : (double)r->iteration;
    pts[i].y = r->elo;
    pts[i].lo = r->lo;
    pts[i].hi = r->hi;
    pts[i].marked = (r->flags & (PB_ELO_ALL_WINS | PB_ELO_ALL_LOSSES)) != 0;
  }
  pb_svgplot_hline_t lines[PB_ELOTABLE_MAX_OPPONENTS];
  int nl = 0;
  for (int j = 0; j < o->n_opponents; j++) {
    if (!isfinite(o->anchor[j])) continue;
    lines[nl].y = o->anchor[j];
    snprintf(lines[nl].label, sizeof lines[nl].label, "%s (%.0f)",
             o->opponents[j], o->anchor[j]);
    nl++;
  }
  pb_svgplot_t p = {0};
  p.title = title;
  p.xlabel = x_axis == PB_EVALRUN_X_MINUTES
                 ? "minutes since the run started (wall time)"
                 : "iteration";
  p.ylabel = "Elo";
  p.series = "Elo (max. likelihood)";
  p.band = "95% interval";
  p.pts = pts;
  p.n = n;
  p.lines = lines;
  p.nlines = nl;
  /* Accuracies on the right axis, for the agents that have any. */
  pb_svgplot_point_t *acc = calloc(3 * ((size_t)n + 1), sizeof *acc);
  if (acc == NULL) {
    free(pts);
    return pb_err_set(err, PB_ENOMEM, "elo chart: no memory");
  }
  const int az = o->mcts_simulations > 0;
  static const char *const pnames[3] = {"accuracy: greedy Q",
                                        "accuracy: V one ply",
                                        "accuracy: beam search"};
  static const char *const anames[3] = {"accuracy: greedy policy",
                                        "accuracy: value one ply",
                                        "accuracy: MCTS"};
  const char *const *names = az ? anames : pnames;
  char beam_name[96];
  if (az)
    snprintf(beam_name, sizeof beam_name, "accuracy: MCTS N=%d",
             o->mcts_simulations);
  else
    snprintf(beam_name, sizeof beam_name, "accuracy: beam search E=%d M=%d",
             o->search_expansions, o->search_depth);
  pb_svgplot_series_t right[3];
  int nr = 0;
  for (int k = 0; k < 3; k++) {
    pb_svgplot_point_t *sp = acc + (size_t)k * ((size_t)n + 1);
    int any = 0;
    for (int i = 0; i < n; i++) {
      const pb_elotable_row_t *r = pb_elotable_row(t, i);
      double v = k == 0 ? r->acc_q : k == 1 ? r->acc_v : r->acc_beam;
      sp[i].x = pts[i].x;
      sp[i].y = v;
      sp[i].lo = sp[i].hi = NAN;
      any |= isfinite(v);
    }
    if (!any) continue;
    right[nr].name =
        k == 2 && (az || o->search_expansions > 0) ? beam_name : names[k];
    right[nr].pts = sp;
    right[nr].n = n;
    nr++;
  }
  if (nr > 0) {
    p.right = right;
    p.nright = nr;
    p.y2label = "share of optimal moves (solved test set)";
    p.y2min = 0.0;
    p.y2max = 1.0;
  }
  int rc = pb_svgplot_render(&p, out, len, err);
  free(acc);
  free(pts);
  return rc;
}

/* -------------------------------------------------------- a run dir */

struct pb_evalrun {
  char dir[PB__DIR_MAX];
  pb_evalrun_opts_t o;
  pb_evalrun_dir_opts_t d;
  char title[256];
  pb_elotable_t *table;
  pb_metrics_t *metrics;
  pb_testset_t *testset; /* NULL: no accuracy */
  double acc_seconds;    /* the last accuracy measurement's time */
  int seen_any;      /* follow mode: seen_max is valid */
  uint64_t seen_max; /* follow mode: newest version already considered */
  int png_tried, png_ok;
  int lock_fd; /* RUN_DIR/evaluator.lock held (-1: not held) */
};

const pb_elotable_t *pb_evalrun_table(const pb_evalrun_t *r) {
  return r != NULL ? r->table : NULL;
}

static int write_charts(pb_evalrun_t *r, pb_err_t *err);

pb_evalrun_t *pb_evalrun_new(const char *run_dir, const pb_evalrun_opts_t *o,
                             const pb_evalrun_dir_opts_t *d, pb_err_t *err) {
  if (run_dir == NULL || o == NULL || d == NULL || o->g == NULL ||
      d->every < 1) {
    pb_err_set(err, PB_EINVAL, "evalrun: NULL argument or every < 1");
    return NULL;
  }
  if (strlen(run_dir) >= PB__DIR_MAX) {
    pb_err_set(err, PB_EINVAL, "evalrun: run directory path too long");
    return NULL;
  }
  /* A bad opponent spec would fail every checkpoint: refuse it now. */
  for (int j = 0; j < o->n_opponents; j++) {
    pb_err_t e;
    pb_err_clear(&e);
    pb_agent_t *a = pb_agent_new(o->g, o->opponents[j], 0, &e);
    if (a == NULL) {
      pb_err_set(err, e.code < 0 ? e.code : PB_EINVAL, "eval.opponents: %s",
                 e.msg);
      return NULL;
    }
    pb_agent_destroy(&a);
  }
  pb_evalrun_t *r = calloc(1, sizeof *r);
  if (r == NULL) {
    pb_err_set(err, PB_ENOMEM, "evalrun: out of memory");
    return NULL;
  }
  r->lock_fd = -1;
  snprintf(r->dir, sizeof r->dir, "%s", run_dir);
  r->o = *o;
  r->d = *d;
  if (d->title != NULL)
    snprintf(r->title, sizeof r->title, "%s", d->title);
  else
    snprintf(r->title, sizeof r->title, "Elo (%s)", o->g->name);
  r->d.title = r->title;
  char path[PB__PATH];
  snprintf(path, sizeof path, "%s/elo.csv", r->dir);
  r->table = pb_elotable_load(
      path, (const char(*)[PB_ELOTABLE_SPEC_MAX])o->opponents, o->n_opponents,
      err);
  if (r->table == NULL) goto fail;
  if (o->accuracy) {
    pb_err_t e;
    pb_err_clear(&e);
    r->testset = pb_testset_open(o->testset, o->g, &e);
    if (r->testset == NULL && (o->testset[0] != '\0' || e.code != PB_ENOTFOUND)) {
      /* A test set the user named must work. */
      pb_err_set(err, PB_ECONFIG, "eval.testset: %s", e.msg);
      goto fail;
    }
    if (r->testset == NULL)
      pb_log_warn(d->log, "no accuracy figures: %s", e.msg);
  }
  if (pb_mkdir_p(r->dir, err) != 0) goto fail;
  r->lock_fd = pb_rundir_lock_evaluator(r->dir, d->log);
  snprintf(path, sizeof path, "%s/metrics.jsonl", r->dir);
  if ((r->metrics = pb_metrics_new(path, err)) == NULL) goto fail;
  if (pb_elotable_count(r->table) > 0) {
    r->seen_any = 1;
    r->seen_max = pb_elotable_row(r->table, pb_elotable_count(r->table) - 1)->version;
    /* Charts drawn by an older evaluator are drawn again now. */
    pb_err_t e;
    pb_err_clear(&e);
    if (write_charts(r, &e) != 0)
      pb_log_warn(d->log, "cannot redraw the charts: %s", e.msg);
  }
  return r;
fail:
  pb_evalrun_destroy(&r);
  return NULL;
}

void pb_evalrun_destroy(pb_evalrun_t **pr) {
  if (pr == NULL || *pr == NULL) return;
  if ((*pr)->lock_fd >= 0) close((*pr)->lock_fd);
  pb_elotable_destroy(&(*pr)->table);
  pb_metrics_destroy(&(*pr)->metrics);
  pb_testset_destroy(&(*pr)->testset);
  free(*pr);
  *pr = NULL;
}

/* The first executable called `name` in PATH into buf; 0 if found. */
static int find_in_path(const char *name, char *buf, size_t n) {
  const char *path = getenv("PATH");
  if (path == NULL) return -1;
  while (*path) {
    const char *c = strchr(path, ':');
    size_t len = c ? (size_t)(c - path) : strlen(path);
    if (len > 0 && len + strlen(name) + 2 <= n) {
      int w = snprintf(buf, n, "%.*s/%s", (int)len, path, name);
      if (w > 0 && (size_t)w < n && access(buf, X_OK) == 0) return 0;
    }
    if (c == NULL) break;
    path = c + 1;
  }
  return -1;
}

/* Runs argv with output discarded; kills it after timeout_s. Returns its
 * exit status, or -1. */
static int run_quiet(char *const *argv, double timeout_s) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  double t0 = pb_now();
  for (;;) {
    int st = 0;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (w < 0 && errno != EINTR) return -1;
    if (pb_now() - t0 > timeout_s) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* elo.png from elo.svg, if a converter exists; failures only logged. */
static void write_png(pb_evalrun_t *r, const char *svg) {
  if (r->png_tried && !r->png_ok) return;
  r->png_tried = 1;
  char exe[PB__PATH], png[PB__PATH], tmp[PB__PATH + 40], src[PB__PATH + 8];
  snprintf(png, sizeof png, "%s/elo.png", r->dir);
  int rsvg = find_in_path("rsvg-convert", exe, sizeof exe) == 0;
  if (!rsvg && find_in_path("convert", exe, sizeof exe) != 0) {
    pb_log_debug(r->d.log, "no rsvg-convert or convert in PATH: no elo.png");
    return;
  }
  int st;
  if (rsvg) {
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", png, (long)getpid());
    char *argv[] = {exe, "-o", tmp, (char *)svg, NULL};
    st = run_quiet(argv, 30.0);
  } else {
    /* ImageMagick picks the format from a prefix, not the temp name. */
    snprintf(tmp, sizeof tmp, "png:%s.tmp.%ld", png, (long)getpid());
    snprintf(src, sizeof src, "svg:%s", svg);
    char *argv[] = {exe, src, tmp, NULL};
    st = run_quiet(argv, 30.0);
  }
  const char *tmpfile = rsvg ? tmp : tmp + 4;
  if (st == 0 && rename(tmpfile, png) == 0) {
    r->png_ok = 1;
    return;
  }
  unlink(tmpfile);
  pb_log_info(r->d.log,
              "no elo.png: %s could not convert elo.svg (no more "
              "attempts in this process)",
              exe);
}

/* The result line in the log and metrics.jsonl. */
static void report(pb_evalrun_t *r, const pb_elotable_row_t *row) {
  const pb_evalrun_opts_t *o = &r->o;
  char res[1400];
  size_t k = 0;
  res[0] = '\0';
  for (int j = 0; j < o->n_opponents && k < sizeof res; j++) {
    int w = snprintf(res + k, sizeof res - k, "%s%s %d/%d/%d", j ? ", " : "",
                     o->opponents[j], row->wdl[j][0], row->wdl[j][1],
                     row->wdl[j][2]);
    if (w < 0) break;
    k += (size_t)w;
  }
  const char *note = pb_elotable_note(row->flags);
  if (isfinite(row->acc_q) || isfinite(row->acc_beam)) {
    const int az = o->mcts_simulations > 0;
    char search[64];
    if (az)
      snprintf(search, sizeof search, "MCTS (N=%d)", o->mcts_simulations);
    else
      snprintf(search, sizeof search, "beam search (E=%d, M=%d)",
               o->search_expansions, o->search_depth);
    pb_log_info(r->d.log,
                "version %llu: share of optimal moves on %zu solved "
                "positions: %s %.3f, %s %.3f, %s %.3f",
                (unsigned long long)row->version,
                r->testset ? pb_testset_count(r->testset) : (size_t)0,
                az ? "greedy policy" : "greedy Q", row->acc_q,
                az ? "value one ply" : "V one ply", row->acc_v, search,
                row->acc_beam);
  }
  if (isfinite(row->elo))
    pb_log_info(r->d.log,
                "version %llu: Elo %.0f [%.0f, %.0f]%s%s from %d games "
                "(W/D/L: %s) in %.1f s",
                (unsigned long long)row->version, row->elo, row->lo, row->hi,
                *note ? " " : "", note, row->games, res, row->seconds);
  else
    pb_log_info(r->d.log,
                "version %llu: no Elo (no opponent has an anchor) from %d "
                "games (W/D/L: %s) in %.1f s",
                (unsigned long long)row->version, row->games, res,
                row->seconds);
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "event", "elo");
  pb_json_kuint(&j, "iteration", row->iteration);
  pb_json_kuint(&j, "version", row->version);
  pb_json_kdouble(&j, "elo", row->elo); /* null when not finite */
  pb_json_kdouble(&j, "elo_lo", row->lo);
  pb_json_kdouble(&j, "elo_hi", row->hi);
  pb_json_kstr(&j, "note", note);
  pb_json_kint(&j, "games", row->games);
  pb_json_kdouble(&j, "seconds", row->seconds);
  pb_json_kdouble(&j, "minutes", row->minutes);
  pb_json_key(&j, "opponents");
  pb_json_obj_begin(&j);
  for (int i = 0; i < o->n_opponents; i++) {
    pb_json_key(&j, o->opponents[i]);
    pb_json_obj_begin(&j);
    pb_json_kint(&j, "w", row->wdl[i][0]);
    pb_json_kint(&j, "d", row->wdl[i][1]);
    pb_json_kint(&j, "l", row->wdl[i][2]);
    pb_json_kdouble(&j, "anchor", o->anchor[i]);
    pb_json_obj_end(&j);
  }
  pb_json_obj_end(&j);
  if (r->testset != NULL) {
    char agent[64];
    if (o->mcts_simulations > 0)
      snprintf(agent, sizeof agent, "mcts N=%d", o->mcts_simulations);
    else
      snprintf(agent, sizeof agent, "E=%d,M=%d", o->search_expansions,
               o->search_depth);
    pb_json_kdouble(&j, "acc_q", row->acc_q);
    pb_json_kdouble(&j, "acc_v", row->acc_v);
    pb_json_kdouble(&j, "acc_beam", row->acc_beam);
    pb_json_key(&j, "accuracy");
    pb_json_obj_begin(&j);
    pb_json_kstr(&j, "beam_agent", agent);
    pb_json_kuint(&j, "positions", pb_testset_count(r->testset));
    pb_json_kdouble(&j, "seconds", r->acc_seconds);
    pb_json_obj_end(&j);
  }
  pb_json_obj_end(&j);
  if (pb_json_cstr(&j) == NULL ||
      pb_metrics_write(r->metrics, pb_json_cstr(&j)) != 0)
    pb_log_warn(r->d.log, "could not append the result to metrics.jsonl");
  pb_json_free(&j);
}

/* The three accuracies of the checkpoint at ckpt into row. Network agents
 * answer in batches on this thread; the test set is the same for every
 * version, so the figures are comparable along a run. */
static int measure_accuracy(pb_evalrun_t *r, const char *ckpt,
                            pb_elotable_row_t *row, pb_err_t *err) {
  const size_t slen = strlen(ckpt) + 64;
  char *spec = malloc(slen);
  if (spec == NULL) return pb_err_set(err, PB_ENOMEM, "evalrun: no memory");
  double *dst[3] = {&row->acc_q, &row->acc_v, &row->acc_beam};
  double t0 = pb_now();
  int rc = 0;
  for (int k = 0; k < 3 && rc == 0; k++) {
    if (r->o.stop != NULL && *r->o.stop) {
      rc = pb_err_set(err, PB_EINTR, "evaluation stopped");
      break;
    }
    if (k == 0)
      snprintf(spec, slen, "checkpoint:%s", ckpt);
    else if (k == 1)
      snprintf(spec, slen, "value:%s", ckpt);
    else if (r->o.mcts_simulations > 0)
      snprintf(spec, slen, "mcts:%s,N=%d", ckpt, r->o.mcts_simulations);
    else
      snprintf(spec, slen, "beam:%s,E=%d,M=%d", ckpt, r->o.search_expansions,
               r->o.search_depth);
    pb_accuracy_t a;
    rc = pb_accuracy_of_agent(r->testset, spec, r->o.seed, 1, &a, err);
    if (rc == 0) *dst[k] = a.share;
  }
  r->acc_seconds = pb_now() - t0;
  free(spec);
  return rc;
}

/* Minutes between the run's version-0 checkpoint and ckpt (their
 * modification times), or NAN. */
static double run_minutes(const pb_evalrun_t *r, const char *ckpt) {
  char first[PB__PATH];
  pb_rundir_ckpt_path(r->dir, 0, first, sizeof first);
  struct stat a, b;
  if (stat(first, &a) != 0 || stat(ckpt, &b) != 0) return NAN;
  double d = (double)(b.st_mtim.tv_sec - a.st_mtim.tv_sec) +
             1e-9 * (double)(b.st_mtim.tv_nsec - a.st_mtim.tv_nsec);
  return d >= 0 ? d / 60.0 : NAN;
}

int pb_evalrun_rate(pb_evalrun_t *r, uint64_t version, pb_err_t *err) {
  if (r == NULL) return pb_err_set(err, PB_EINVAL, "evalrun: NULL run");
  char ckpt[PB__PATH], path[PB__PATH];
  pb_rundir_ckpt_path(r->dir, (unsigned long long)version, ckpt, sizeof ckpt);
  pb_elotable_row_t row;
  int rc = pb_evalrun_play(&r->o, ckpt, version, &row, err);
  if (rc != 0) return rc;
  if (r->testset != NULL && (rc = measure_accuracy(r, ckpt, &row, err)) != 0)
    return rc;
  row.minutes = run_minutes(r, ckpt);
  if ((rc = pb_elotable_put(r->table, &row, err)) != 0) return rc;
  snprintf(path, sizeof path, "%s/elo.csv", r->dir);
  if ((rc = pb_elotable_save(r->table, path, err)) != 0) return rc;
  if ((rc = write_charts(r, err)) != 0) return rc;
  report(r, &row);
  return 0;
}

/* elo-time.svg, then elo.svg (written last: it tells readers both are up
 * to date) and elo.png, from the table. */
static int write_charts(pb_evalrun_t *r, pb_err_t *err) {
  static const char *const chart[2] = {"elo-time.svg", "elo.svg"};
  static const int axis[2] = {PB_EVALRUN_X_MINUTES, PB_EVALRUN_X_ITERATION};
  char path[PB__PATH];
  int rc = 0;
  for (int k = 0; k < 2 && rc == 0; k++) {
    char *svg = NULL;
    size_t len = 0;
    rc = pb_evalrun_chart(r->table, &r->o, r->title, axis[k], &svg, &len,
                              err);
    snprintf(path, sizeof path, "%s/%s", r->dir, chart[k]);
    if (rc == 0) rc = pb_write_file(path, svg, len, err);
    free(svg);
  }
  if (rc == 0 && r->d.png) write_png(r, path);
  return rc;
}

/* Errors that concern one checkpoint file, not the whole evaluation. */
static int about_checkpoint(int rc) {
  return rc == PB_EIO || rc == PB_ECORRUPT || rc == PB_EMISMATCH ||
         rc == PB_ENOTFOUND || rc == PB_EUNSUPP || rc == PB_ENN ||
         rc == PB_ECONFIG;
}

/* Logs why `version` was not rated: at info level when its checkpoint is
 * gone (the learner pruned it: run.keep_last / run.keep_every), else as a
 * warning with the error. */
static void log_skip(const pb_evalrun_t *r, uint64_t version,
                     const pb_err_t *e) {
  char ckpt[PB__PATH];
  struct stat st;
  pb_rundir_ckpt_path(r->dir, (unsigned long long)version, ckpt, sizeof ckpt);
  if (stat(ckpt, &st) != 0 && errno == ENOENT)
    pb_log_info(r->d.log,
                "version %llu skipped: %s is gone (pruned by the learner, "
                "run.keep_last / run.keep_every) before it could be rated",
                (unsigned long long)version, ckpt);
  else
    pb_log_warn(r->d.log, "version %llu skipped: %s",
                (unsigned long long)version, e->msg);
}

int pb_evalrun_all(pb_evalrun_t *r, int *rated, pb_err_t *err) {
  if (rated != NULL) *rated = 0;
  uint64_t *v = NULL;
  size_t n = 0;
  int rc = pb_rundir_versions(r->dir, &v, &n, err);
  if (rc != 0) return rc;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (pb_elotable_find(r->table, v[i]) != NULL) continue;
    if (v[i] % (uint64_t)r->d.every != 0 && i + 1 != n) continue;
    pb_err_t e;
    pb_err_clear(&e);
    rc = pb_evalrun_rate(r, v[i], &e);
    if (rc == 0) {
      if (rated != NULL) (*rated)++;
    } else if (about_checkpoint(rc)) {
      log_skip(r, v[i], &e);
      rc = 0;
    } else if (err != NULL) {
      *err = e;
    }
  }
  if (n > 0 && (!r->seen_any || v[n - 1] > r->seen_max)) {
    r->seen_any = 1;
    r->seen_max = v[n - 1];
  }
  free(v);
  return rc;
}

int pb_evalrun_follow_step(pb_evalrun_t *r, int final, uint64_t *rated,
                           pb_err_t *err) {
  uint64_t *v = NULL;
  size_t n = 0;
  int rc = pb_rundir_versions(r->dir, &v, &n, err);
  if (rc != 0) return rc;
  if (n == 0) {
    free(v);
    return 0;
  }
  uint64_t newest = v[n - 1];
  int have = 0;
  uint64_t target = 0;
  if (final) {
    if (pb_elotable_find(r->table, newest) == NULL) {
      have = 1;
      target = newest;
    }
  } else {
    for (size_t i = n; i-- > 0;) {
      if (r->seen_any && v[i] <= r->seen_max) break;
      if (v[i] % (uint64_t)r->d.every == 0 &&
          pb_elotable_find(r->table, v[i]) == NULL) {
        have = 1;
        target = v[i];
        break;
      }
    }
  }
  /* Versions passed over: newer than what was seen, older than the one
   * rated now (the rest stay for --all). */
  if (have) {
    int skipped = 0;
    uint64_t first = 0, last = 0;
    for (size_t i = 0; i < n; i++) {
      if ((r->seen_any && v[i] <= r->seen_max) || v[i] >= target) continue;
      if (v[i] % (uint64_t)r->d.every != 0) continue;
      if (pb_elotable_find(r->table, v[i]) != NULL) continue;
      if (skipped++ == 0) first = v[i];
      last = v[i];
    }
    if (skipped > 0)
      pb_log_info(r->d.log,
                  "behind the learner: skipping %d version%s (%llu..%llu) "
                  "to rate the newest, %llu (rate them later with --all)",
                  skipped, skipped > 1 ? "s" : "", (unsigned long long)first,
                  (unsigned long long)last, (unsigned long long)target);
  }
  if (!r->seen_any || newest > r->seen_max) {
    r->seen_any = 1;
    r->seen_max = newest;
  }
  free(v);
  if (!have) return 0;
  pb_err_t e;
  pb_err_clear(&e);
  rc = pb_evalrun_rate(r, target, &e);
  if (rc == 0) {
    if (rated != NULL) *rated = target;
    return 1;
  }
  if (about_checkpoint(rc)) {
    log_skip(r, target, &e);
    return 0;
  }
  if (err != NULL) *err = e;
  return rc;
}
