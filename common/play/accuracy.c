/* accuracy.c - share of optimal moves on solved test sets, and making the
 * sets (accuracy.h).
 *
 * Workload: an evaluation is ~1000 positions per agent (a batched network
 * agent answers them in a few calls); making a set solves ~3000 candidate
 * positions, seconds each early in Connect Four, so the solving runs on
 * every core with one solver (and table) per thread. */
#include "accuracy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "rng.h"
#include "solver.h"
#include "util.h"

static int online_cpus(int threads) {
  if (threads > 0) return threads;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* ---- accuracy of an agent -------------------------------------------------- */

typedef struct {
  const pb_testset_t *ts;
  const char *spec;
  uint64_t seed;
  int tid, nthreads;
  int *moves;
  volatile sig_atomic_t *stop;
  int rc;
  pb_err_t err;
  atomic_size_t *done; /* positions played by every thread */
  pb_accuracy_progress_fn progress; /* thread 0 reports, or NULL */
  void *ctx;
} acc_job_t;

static int stopped(volatile sig_atomic_t *stop, pb_err_t *err) {
  if (stop == NULL || !*stop) return 0;
  return pb_err_set(err, PB_EINTR, "accuracy: stopped");
}

static void *acc_thread(void *p) {
  acc_job_t *j = p;
  const pb_game_t *g = pb_testset_game(j->ts);
  pb_agent_t *a = pb_agent_new(g, j->spec, j->seed, &j->err);
  if (a == NULL) {
    j->rc = j->err.code ? j->err.code : PB_EINVAL;
    return NULL;
  }
  size_t n = pb_testset_count(j->ts);
  for (size_t i = (size_t)j->tid; i < n && j->rc == 0; i += (size_t)j->nthreads) {
    if (stopped(j->stop, &j->err)) {
      j->rc = PB_EINTR;
      break;
    }
    int rc = pb_agent_act_many(a, pb_testset_state(j->ts, i), 1,
                               j->seed + i, &j->moves[i], &j->err);
    if (rc < 0) j->rc = rc;
    size_t d = atomic_fetch_add(j->done, 1) + 1;
    if (j->tid == 0 && j->progress != NULL) j->progress(j->ctx, d, n);
  }
  pb_agent_destroy(&a);
  return NULL;
}

int pb_accuracy_of_agent(const pb_testset_t *ts, const char *spec,
                         uint64_t seed, int threads, pb_accuracy_t *out,
                         pb_err_t *err) {
  return pb_accuracy_moves(ts, spec, seed, threads, NULL, out, NULL, err);
}

int pb_accuracy_until(const pb_testset_t *ts, const char *spec, uint64_t seed,
                      int threads, volatile sig_atomic_t *stop,
                      pb_accuracy_t *out, pb_err_t *err) {
  return pb_accuracy_moves(ts, spec, seed, threads, stop, out, NULL, err);
}

/* Positions per batched call between two looks at the stop flag: a
 * multiple of the network agents' own chunk (agent_net.c), so the batches,
 * and the figure, are the same as in one call. */
enum { ACC_CHUNK = 256 };

int pb_accuracy_moves(const pb_testset_t *ts, const char *spec, uint64_t seed,
                      int threads, volatile sig_atomic_t *stop,
                      pb_accuracy_t *out, int *moves_out, pb_err_t *err) {
  return pb_accuracy_run(ts, spec, seed, threads, stop, NULL, NULL, out,
                         moves_out, err);
}

int pb_accuracy_run(const pb_testset_t *ts, const char *spec, uint64_t seed,
                    int threads, volatile sig_atomic_t *stop,
                    pb_accuracy_progress_fn progress, void *ctx,
                    pb_accuracy_t *out, int *moves_out, pb_err_t *err) {
  const pb_game_t *g = pb_testset_game(ts);
  const size_t n = pb_testset_count(ts);
  double t0 = pb_now();
  pb_agent_t *a = pb_agent_new(g, spec, seed, err);
  if (a == NULL) return err && err->code ? err->code : PB_EINVAL;
  int *moves = calloc(n ? n : 1, sizeof *moves);
  if (moves == NULL) {
    pb_agent_destroy(&a);
    return pb_err_set(err, PB_ENOMEM, "accuracy: out of memory");
  }
  int rc = 0;
  double epm = 0.0;
  atomic_size_t done = 0;
  if (progress != NULL) progress(ctx, 0, n);
  if (pb_agent_batched(a)) {
    /* A network agent: every position in batches, on this thread. The
     * states of a test set are contiguous. */
    for (size_t i = 0; i < n && rc == 0; i += ACC_CHUNK) {
      size_t m = n - i < ACC_CHUNK ? n - i : ACC_CHUNK;
      rc = stopped(stop, err);
      if (rc == 0)
        rc = pb_agent_act_many(a, pb_testset_state(ts, i), (int)m, seed + i,
                               moves + i, err);
      if (rc == 0 && progress != NULL) progress(ctx, i + m, n);
    }
    epm = n ? (double)pb_agent_evaluations(a) / (double)n : 0.0;
  } else {
    int nt = online_cpus(threads);
    if ((size_t)nt > n) nt = n ? (int)n : 1;
    acc_job_t *jobs = calloc((size_t)nt, sizeof *jobs);
    pthread_t *tids = calloc((size_t)nt, sizeof *tids);
    if (jobs == NULL || tids == NULL)
      rc = pb_err_set(err, PB_ENOMEM, "accuracy: out of memory");
    int started = 0;
    for (int t = 0; rc == 0 && t < nt; t++) {
      jobs[t] = (acc_job_t){ts,   spec, seed,     t,   nt, moves, stop, 0,
                            {0, ""}, &done, progress, ctx};
      if (pthread_create(&tids[t], NULL, acc_thread, &jobs[t]) != 0) {
        rc = pb_err_set(err, PB_EIO, "accuracy: cannot start a thread");
        break;
      }
      started++;
    }
    for (int t = 0; t < started; t++) {
      pthread_join(tids[t], NULL);
      if (rc == 0 && jobs[t].rc != 0) {
        rc = jobs[t].rc;
        if (err) *err = jobs[t].err;
      }
    }
    free(jobs);
    free(tids);
  }
  pb_agent_destroy(&a);
  if (rc == 0) {
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) ok += (size_t)pb_testset_optimal(ts, i, moves[i]);
    out->optimal = ok;
    out->positions = n;
    out->share = n ? (double)ok / (double)n : 0.0;
    out->seconds = pb_now() - t0;
    out->evals_per_move = epm;
    if (moves_out != NULL) memcpy(moves_out, moves, n * sizeof *moves);
  }
  free(moves);
  return rc;
}

/* ---- making test sets ---------------------------------------------------- */

const char *pb_testgen_default_players(const pb_game_t *g) {
  (void)g;
  return "random,lookahead:1,lookahead:2,lookahead:3,alphabeta:2,"
         "alphabeta:4,alphabeta:6,alphabeta:8";
}

enum { GEN_MAX_PLAYERS = 16, GEN_BATCH = 64 };

typedef struct {
  int ok;     /* a position at the target ply where the choice matters */
  int ply;
  uint8_t moves[128];
  pb_state_t s;
  int8_t labels[PB_MAX_ACTIONS];
} gen_cand_t;

typedef struct gen_shared gen_shared_t;

typedef struct {
  gen_shared_t *sh;
  pb_agent_t *players[GEN_MAX_PLAYERS];
  pb_solver_t *solver;
  int rc;
  pb_err_t err;
} gen_worker_t;

struct gen_shared {
  const pb_testgen_opts_t *o;
  int nplayers;
  char specs[GEN_MAX_PLAYERS][64];
  /* the batch being made */
  long first;           /* number of candidate 0 of the batch */
  int want[256];        /* plies that still need positions (snapshot) */
  int nwant;
  gen_cand_t cand[GEN_BATCH];
  int next;             /* next slot to take */
  pthread_mutex_t mu;
};

/* Plays candidate number k: two players from the pool, until a ply drawn
 * from the plies still wanted; solves the position. */
static int gen_one(gen_worker_t *w, long k, gen_cand_t *c, pb_err_t *err) {
  gen_shared_t *sh = w->sh;
  const pb_game_t *g = sh->o->g;
  pb_rng_t rng;
  pb_rng_seed(&rng, sh->o->seed, 0x7e57000000ULL + (uint64_t)k);
  memset(c, 0, sizeof *c);
  int target = sh->want[pb_rng_below(&rng, (uint32_t)sh->nwant)];
  pb_agent_t *side[2];
  for (int p = 0; p < 2; p++) {
    side[p] = w->players[pb_rng_below(&rng, (uint32_t)sh->nplayers)];
    pb_agent_reseed(side[p], pb_rng_next(&rng));
  }
  pb_state_t s;
  g->reset(&s);
  int ply = 0;
  while (ply < target) {
    int a = pb_agent_act(side[ply & 1], &s, err);
    if (a < 0) return a;
    int done = 0;
    g->step(&s, a, &done);
    c->moves[ply++] = (uint8_t)a;
    if (done) return 0; /* ended before the target: no candidate */
  }
  pb_solve_value_t v[PB_MAX_ACTIONS];
  int rc = pb_solver_moves(w->solver, &s, 1, v, err);
  if (rc < 0) return rc;
  int best = -2, worst = 2;
  for (int a = 0; a < g->num_actions; a++) {
    if (v[a].result == PB_SOLVE_ILLEGAL) {
      c->labels[a] = PB_TS_ILLEGAL;
      continue;
    }
    c->labels[a] = (int8_t)v[a].result;
    if (v[a].result > best) best = v[a].result;
    if (v[a].result < worst) worst = v[a].result;
  }
  c->ok = best != worst;
  c->ply = ply;
  c->s = s;
  return 0;
}

static void *gen_thread(void *p) {
  gen_worker_t *w = p;
  gen_shared_t *sh = w->sh;
  for (;;) {
    pthread_mutex_lock(&sh->mu);
    int slot = sh->next < GEN_BATCH && w->rc == 0 ? sh->next++ : -1;
    pthread_mutex_unlock(&sh->mu);
    if (slot < 0) break;
    if (sh->o->stop && *sh->o->stop) {
      w->rc = pb_err_set(&w->err, PB_EINTR, "testset: stopped");
      break;
    }
    int rc = gen_one(w, sh->first + slot, &sh->cand[slot], &w->err);
    if (rc < 0) w->rc = rc;
  }
  return NULL;
}

static void gen_free_workers(gen_worker_t *ws, int n) {
  for (int t = 0; t < n; t++) {
    for (int i = 0; i < GEN_MAX_PLAYERS; i++) pb_agent_destroy(&ws[t].players[i]);
    pb_solver_destroy(&ws[t].solver);
  }
  free(ws);
}

/* An accepted position, kept for the output. */
typedef struct {
  int ply;
  long index;
  int nmoves;
  uint8_t moves[128];
  int8_t labels[PB_MAX_ACTIONS];
  pb_state_t s;
} gen_kept_t;

static int kept_cmp(const void *a, const void *b) {
  const gen_kept_t *x = a, *y = b;
  if (x->ply != y->ply) return x->ply < y->ply ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Fills sh->specs from the comma-separated player list. */
static int gen_parse_players(gen_shared_t *sh, const char *players,
                             pb_err_t *err) {
  int rc = 0;
  for (const char *p = players; *p && rc == 0;) {
    const char *q = strchr(p, ',');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    if (len == 0 || len >= sizeof sh->specs[0] ||
        sh->nplayers == GEN_MAX_PLAYERS)
      rc = pb_err_set(err, PB_EINVAL,
                      "testset: bad player list \"%s\" (1..%d specs)", players,
                      GEN_MAX_PLAYERS);
    else
      memcpy(sh->specs[sh->nplayers++], p, len);
    p = q ? q + 1 : p + len;
  }
  if (rc == 0 && sh->nplayers == 0) /* "": no player to draw from */
    rc = pb_err_set(err, PB_EINVAL,
                    "testset: bad player list \"%s\" (1..%d specs)", players,
                    GEN_MAX_PLAYERS);
  return rc;
}

/* Gives each of the nt workers its solver and its own agent of every
 * player. */
static int gen_make_workers(gen_shared_t *sh, gen_worker_t *ws, int nt,
                            pb_err_t *err) {
  const pb_testgen_opts_t *o = sh->o;
  int rc = 0;
  for (int t = 0; rc == 0 && t < nt; t++) {
    ws[t].sh = sh;
    if ((ws[t].solver = pb_solver_new(o->g, o->tt_log2, err)) == NULL)
      rc = err ? err->code : PB_ENOMEM;
    for (int i = 0; rc == 0 && i < sh->nplayers; i++)
      if ((ws[t].players[i] = pb_agent_new(o->g, sh->specs[i], 0, err)) == NULL)
        rc = err && err->code ? err->code : PB_EINVAL;
  }
  return rc;
}

/* Plays and solves one batch of candidates (sh->cand) on nt threads. */
static int gen_batch(gen_worker_t *ws, int nt, pb_err_t *err) {
  int rc = 0;
  pthread_t *tids = calloc((size_t)nt, sizeof *tids);
  int started = 0;
  if (tids == NULL) rc = pb_err_set(err, PB_ENOMEM, "testset: out of memory");
  for (int t = 0; rc == 0 && t < nt; t++) {
    if (pthread_create(&tids[t], NULL, gen_thread, &ws[t]) != 0) {
      rc = pb_err_set(err, PB_EIO, "testset: cannot start a thread");
      break;
    }
    started++;
  }
  for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
  free(tids);
  for (int t = 0; t < nt && rc == 0; t++)
    if (ws[t].rc != 0) {
      rc = ws[t].rc;
      if (err) *err = ws[t].err;
    }
  return rc;
}

/* Keeps, in candidate order, the batch's positions that matter, whose ply
 * still needs some (have[] against quota[], indexed from min_ply) and
 * that are not kept already. */
static void gen_accept(const gen_shared_t *sh, gen_kept_t *kept, int *nkept,
                       int *have, const int *quota) {
  const pb_testgen_opts_t *o = sh->o;
  for (int k = 0; k < GEN_BATCH && *nkept < o->count; k++) {
    const gen_cand_t *c = &sh->cand[k];
    if (!c->ok) continue;
    int b = c->ply - o->min_ply;
    if (have[b] >= quota[b]) continue;
    int dup = 0;
    for (int i = 0; i < *nkept && !dup; i++)
      dup = kept[i].ply == c->ply && !memcmp(&kept[i].s, &c->s, sizeof c->s);
    if (dup) continue;
    gen_kept_t *kp = &kept[(*nkept)++];
    kp->ply = c->ply;
    kp->index = sh->first + k;
    kp->nmoves = c->ply;
    memcpy(kp->moves, c->moves, (size_t)c->ply);
    memcpy(kp->labels, c->labels, sizeof kp->labels);
    kp->s = c->s;
    have[b]++;
  }
}

/* Warns about plies short of their quota, sorts the kept positions by ply
 * and writes the test set to out. */
static int gen_write(const pb_testgen_opts_t *o, FILE *out, const char *players,
                     gen_kept_t *kept, int nkept, const int *have,
                     const int *quota, long done, double t0, pb_err_t *err) {
  const pb_game_t *g = o->g;
  const int nply = o->max_ply - o->min_ply + 1;
  int rc = 0;
  if (nkept < o->count && o->log) {
    for (int i = 0; i < nply; i++)
      if (have[i] < quota[i])
        pb_log_warn(o->log,
                    "testset: ply %d has %d of %d positions after %ld "
                    "games",
                    o->min_ply + i, have[i], quota[i], done);
  }
  qsort(kept, (size_t)nkept, sizeof *kept, kept_cmp);
  fprintf(out,
          "# probs testset game=%s\n"
          "# %d positions at plies %d-%d where the choice matters, from "
          "games between %s\n"
          "# (seed %llu, %ld games); labels W/D/L/. per action: the "
          "outcome of the move with perfect play\n",
          g->name, nkept, o->min_ply, o->max_ply, players,
          (unsigned long long)o->seed, done);
  for (int i = 0; i < nkept && rc == 0; i++)
    rc = pb_testset_write_line(out, g, kept[i].moves, kept[i].nmoves,
                               kept[i].labels, err);
  if (rc == 0 && fflush(out) != 0)
    rc = pb_err_set(err, PB_EIO, "testset: write failed");
  if (o->log)
    pb_log_info(o->log, "testset: %d positions from %ld games in %.0f s", nkept,
                done, pb_now() - t0);
  return rc;
}

int pb_testgen_run(const pb_testgen_opts_t *o, FILE *out, pb_err_t *err) {
  const pb_game_t *g = o->g;
  if (g == NULL || o->count < 1 || o->min_ply < 0 || o->max_ply < o->min_ply ||
      o->max_ply - o->min_ply >= 256 || o->max_ply >= 128)
    return pb_err_set(err, PB_EINVAL,
                      "testset: need a game, count >= 1 and 0 <= min_ply <= "
                      "max_ply < 128 (at most 256 plies)");
  if (!pb_solver_supports(g))
    return pb_err_set(err, PB_EUNSUPP, "testset: there is no solver for %s",
                      g->name);
  gen_shared_t *sh = calloc(1, sizeof *sh);
  if (sh == NULL) return pb_err_set(err, PB_ENOMEM, "testset: out of memory");
  sh->o = o;
  pthread_mutex_init(&sh->mu, NULL);
  /* the player pool */
  const char *players = o->players ? o->players : pb_testgen_default_players(g);
  int rc = gen_parse_players(sh, players, err);
  int nt = online_cpus(o->threads);
  gen_worker_t *ws = rc == 0 ? calloc((size_t)nt, sizeof *ws) : NULL;
  if (rc == 0 && ws == NULL)
    rc = pb_err_set(err, PB_ENOMEM, "testset: out of memory");
  if (rc == 0) rc = gen_make_workers(sh, ws, nt, err);
  const int nply = o->max_ply - o->min_ply + 1;
  int quota[256], have[256];
  for (int i = 0; i < nply; i++) {
    quota[i] = o->count / nply + (i < o->count % nply);
    have[i] = 0;
  }
  gen_kept_t *kept = rc == 0 ? calloc((size_t)o->count, sizeof *kept) : NULL;
  if (rc == 0 && kept == NULL)
    rc = pb_err_set(err, PB_ENOMEM, "testset: out of memory");
  int nkept = 0;
  const long max_cand =
      o->max_candidates > 0 ? o->max_candidates : 200L * o->count;
  long done = 0;
  double t0 = pb_now(), last_log = t0;
  while (rc == 0 && nkept < o->count && done < max_cand) {
    sh->nwant = 0;
    for (int i = 0; i < nply; i++)
      if (have[i] < quota[i]) sh->want[sh->nwant++] = o->min_ply + i;
    sh->first = done;
    sh->next = 0;
    if ((rc = gen_batch(ws, nt, err)) != 0) break;
    gen_accept(sh, kept, &nkept, have, quota);
    done += GEN_BATCH;
    if (o->log && pb_now() - last_log > 10) {
      last_log = pb_now();
      pb_log_info(o->log,
                  "testset: %d of %d positions after %ld games (%.0f s)", nkept,
                  o->count, done, last_log - t0);
    }
  }
  if (rc == 0)
    rc = gen_write(o, out, players, kept, nkept, have, quota, done, t0, err);
  free(kept);
  if (ws) gen_free_workers(ws, nt);
  pthread_mutex_destroy(&sh->mu);
  free(sh);
  return rc;
}
