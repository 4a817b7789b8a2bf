/* evalrun.c - rating one checkpoint: the options from the config and the
 * anchors, the matches against the opponents on threads, and the Elo fit.
 * The Elo chart is in evalrun_chart.c, the run directory in evalrun_dir.c.
 *
 * Workload: a few hundred games per checkpoint, one checkpoint every few
 * seconds to minutes; the games dominate. Threads take (opponent, game)
 * tasks from one counter, each thread with its own copy of the checkpoint
 * agent and one agent per opponent, made once per checkpoint. */
#include "evalrun.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "bounds.h"
#include "elo.h"
#include "elotable.h"
#include "match.h"
#include "model.h"
#include "record.h"
#include "rng.h"
#include "solver.h"
#include "util.h"

/* --------------------------------------------------------------- opts */

void pb_evalrun_search_spec(const pb_evalrun_opts_t *o, const char *ckpt,
                            char *buf, size_t n, char *name, size_t nn) {
  if (o->nets == PB_NETS_PV) {
    if (buf)
      snprintf(buf, n, "mcts:%s,N=%d,precision=%s", ckpt, o->mcts_simulations,
               o->precision);
    if (name) snprintf(name, nn, "mcts N=%d", o->mcts_simulations);
  } else if (o->search_beam) {
    if (buf)
      snprintf(buf, n, "beam:%s,E=%d,M=%d,precision=%s", ckpt,
               o->search_expansions, o->search_depth, o->precision);
    if (name)
      snprintf(name, nn, "E=%d,M=%d", o->search_expansions, o->search_depth);
  } else {
    if (buf)
      snprintf(buf, n, "abnet:%s,nodes=%d,precision=%s", ckpt,
               o->search_nodes, o->precision);
    if (name) snprintf(name, nn, "abnet nodes=%d", o->search_nodes);
  }
}

int pb_evalrun_opts_from_config(pb_evalrun_opts_t *o, const pb_config_t *cfg,
                                pb_err_t *err) {
  if (o == NULL || cfg == NULL)
    return pb_err_set(err, PB_EINVAL, "evalrun: NULL options or config");
  memset(o, 0, sizeof *o);
  /* The config's keys are checked in one place: pb_config_check (game,
   * eval.opponents, eval.anchors and the rest). */
  int rc = pb_config_check(cfg, err);
  if (rc != 0) return rc;
  o->g = pb_game_by_name(cfg->game);
  o->games = cfg->eval.games_per_opponent;
  o->opening_random_moves = cfg->eval.opening_random_moves;
  o->threads = cfg->eval.threads;
  o->seed = (uint64_t)cfg->seed;
  o->accuracy = cfg->eval.accuracy && pb_solver_supports(o->g);
  snprintf(o->testset, sizeof o->testset, "%s", cfg->eval.testset);
  o->search_beam = !strcmp(cfg->eval.search, "beam");
  o->search_nodes = cfg->eval.search_nodes;
  o->search_expansions = cfg->eval.search_expansions;
  o->search_depth = cfg->eval.search_depth;
  o->nets = pb_algos_of(cfg)->nets;
  o->mcts_simulations =
      o->nets == PB_NETS_PV ? cfg->eval.mcts_simulations : 0;
  int prec = PB_NN_FP32;
  if (pb_model_precision(cfg, PB_DEVICE_OTHER, "cpu", &prec, NULL, 0, NULL) !=
      0)
    prec = PB_NN_FP32;
  snprintf(o->precision, sizeof o->precision, "%s",
           prec == PB_NN_BF16 ? "bf16" : "fp32");
  o->n_opponents = pb_config_opponents(cfg, o->opponents);
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
    snprintf(item, sizeof item, "%.*s", (int)len, a);
    pb_evalrun_set_anchor(o, item, NULL);
    a = comma ? comma + 1 : a + len;
  }
  return 0;
}

int pb_evalrun_set_anchor(pb_evalrun_opts_t *o, const char *arg,
                          pb_err_t *err) {
  if (o == NULL || arg == NULL)
    return pb_err_set(err, PB_EINVAL, "evalrun: NULL anchor");
  size_t len;
  double r;
  int rc = pb_config_anchor(arg, &len, &r, err);
  if (rc != 0) return rc;
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
  /* Per task, when the games are kept for the record (NULL: not): */
  uint8_t **moves; /* malloc'd plies from the start */
  int *n_moves;
  uint8_t *capped;
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
  const int mcap = o->g->max_turns;
  uint8_t *moves = sh->moves != NULL ? malloc((size_t)mcap) : NULL;
  if (sh->moves != NULL && moves == NULL) {
    pb_err_set(&e, PB_ENOMEM, "evalrun: out of memory");
    play_fail(sh, -1, PB_ENOMEM, &e);
    pb_agent_destroy(&net);
    return NULL;
  }
  if (net == NULL) {
    play_fail(sh, -1, e.code < 0 ? e.code : PB_EINVAL, &e);
    free(moves);
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
    int net_first = i % 2 == 0, outcome = 0, capped = 0, n = 0;
    int rc = pb_match_game_moves(
        o->g, NULL, net_first ? net : opp[j], net_first ? opp[j] : net, &rng,
        o->opening_random_moves, 0, &outcome, NULL, &capped, moves, mcap, &n,
        &e);
    if (rc == 0 && moves != NULL) {
      if ((sh->moves[t] = malloc((size_t)n + 1)) == NULL)
        rc = pb_err_set(&e, PB_ENOMEM, "evalrun: out of memory");
      else
        memcpy(sh->moves[t], moves, (size_t)n);
      sh->n_moves[t] = n;
      sh->capped[t] = (uint8_t)capped;
    }
    if (rc < 0) {
      play_fail(sh, t, rc, &e);
      break;
    }
    sh->outcome[t] = (int8_t)(net_first ? outcome : -outcome);
  }
out:
  free(moves);
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

/* The games of sh as record lines (and GGF lines for Othello, *ggf
 * NULL otherwise) into malloc'd texts. */
static int games_text(const play_t *sh, const char *ckpt_path, char **jsonl,
                      char **ggf, pb_err_t *err) {
  const pb_evalrun_opts_t *o = sh->o;
  /* The checkpoint's name: its file's, "ckpt-000012". */
  const char *base = strrchr(ckpt_path, '/');
  base = base != NULL ? base + 1 : ckpt_path;
  char name[PB_RECORD_NAME_MAX];
  snprintf(name, sizeof name, "%s", base);
  char *dot = strrchr(name, '.');
  if (dot != NULL && dot != name) *dot = '\0';
  char *text[2] = {NULL, NULL};
  size_t len[2] = {0, 0}, cap[2] = {0, 0};
  pb_json_t j;
  pb_json_init(&j);
  int rc = 0;
  for (int t = 0; t < sh->total && rc == 0; t++) {
    const int jo = t / o->games, i = t % o->games, net_first = i % 2 == 0;
    pb_record_t r;
    pb_record_init(&r, o->g);
    snprintf(r.source, sizeof r.source, "eval");
    r.version = (int64_t)sh->version;
    r.round = i + 1;
    snprintf(r.first, sizeof r.first, "%s",
             net_first ? name : o->opponents[jo]);
    snprintf(r.second, sizeof r.second, "%s",
             net_first ? o->opponents[jo] : name);
    r.result = net_first ? sh->outcome[t] : -sh->outcome[t];
    r.capped = sh->capped[t];
    r.n_moves = sh->n_moves[t];
    r.moves = sh->moves[t];
    r.opening_plies = r.n_moves < o->opening_random_moves
                          ? r.n_moves
                          : o->opening_random_moves;
    for (int k = 0; k < 2 && rc == 0; k++) {
      if (k == 1 && o->g->id != PB_GAME_OTHELLO) break;
      char *g = NULL;
      size_t gl = 0;
      rc = k == 0 ? pb_record_json(&r, &j, err)
                  : pb_record_ggf(&r, &g, &gl, err);
      const char *line = k == 0 ? pb_json_cstr(&j) : g;
      size_t ll = k == 0 ? pb_json_len(&j) : gl;
      if (rc == 0 && len[k] + ll + 2 > cap[k]) {
        size_t nc = (cap[k] ? 2 * cap[k] : 1 << 16) + ll + 2;
        char *nt = realloc(text[k], nc);
        if (nt == NULL)
          rc = pb_err_set(err, PB_ENOMEM, "evalrun: out of memory");
        else
          text[k] = nt, cap[k] = nc;
      }
      if (rc == 0) {
        memcpy(text[k] + len[k], line, ll);
        len[k] += ll;
        text[k][len[k]++] = '\n';
        text[k][len[k]] = '\0';
      }
      free(g);
    }
  }
  pb_json_free(&j);
  if (rc != 0) {
    free(text[0]);
    free(text[1]);
    return rc;
  }
  *jsonl = text[0];
  *ggf = text[1];
  return 0;
}

int pb_evalrun_play(const pb_evalrun_opts_t *o, const char *ckpt_path,
                    uint64_t version, pb_elotable_row_t *row, pb_err_t *err) {
  return pb_evalrun_play_games(o, ckpt_path, version, row, NULL, NULL, err);
}

int pb_evalrun_play_games(const pb_evalrun_opts_t *o, const char *ckpt_path,
                          uint64_t version, pb_elotable_row_t *row,
                          char **jsonl, char **ggf, pb_err_t *err) {
  if (jsonl != NULL) *jsonl = NULL;
  if (ggf != NULL) *ggf = NULL;
  if ((jsonl == NULL) != (ggf == NULL))
    return pb_err_set(err, PB_EINVAL, "evalrun: jsonl and ggf go together");
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
  size_t slen = strlen(ckpt_path) + sizeof "checkpoint:,precision=fp32";
  char *spec = malloc(slen);
  sh.outcome = calloc((size_t)sh.total, sizeof *sh.outcome);
  int rc = 0;
  if (jsonl != NULL) {
    sh.moves = calloc((size_t)sh.total, sizeof *sh.moves);
    sh.n_moves = calloc((size_t)sh.total, sizeof *sh.n_moves);
    sh.capped = calloc((size_t)sh.total, sizeof *sh.capped);
    if (sh.moves == NULL || sh.n_moves == NULL || sh.capped == NULL)
      rc = pb_err_set(err, PB_ENOMEM, "evalrun: out of memory");
  }
  int nt = o->threads;
  if (nt == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    nt = c < 1 ? 1 : c > PB_MAX_THREADS ? PB_MAX_THREADS : (int)c;
  }
  if (nt > PB_MAX_THREADS) nt = PB_MAX_THREADS;
  if (nt > sh.total) nt = sh.total;
  pthread_t *tids = calloc((size_t)nt, sizeof *tids);
  if (rc != 0) goto out;
  if (spec == NULL || sh.outcome == NULL || tids == NULL) {
    rc = pb_err_set(err, PB_ENOMEM, "evalrun: out of memory");
    goto out;
  }
  snprintf(spec, slen, "checkpoint:%s,precision=%s", ckpt_path,
           o->precision);
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
  if (rc == 0 && jsonl != NULL)
    rc = games_text(&sh, ckpt_path, jsonl, ggf, err);
out:
  if (rc != 0) memset(row, 0, sizeof *row);
  if (sh.moves != NULL)
    for (int t = 0; t < sh.total; t++) free(sh.moves[t]);
  free(sh.moves);
  free(sh.n_moves);
  free(sh.capped);
  free(spec);
  free(sh.outcome);
  free(tids);
  return rc;
}
