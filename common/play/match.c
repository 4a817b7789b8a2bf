/* match.c - many games between two agents, spread over threads.
 *
 * Workload: hundreds to thousands of short games between cheap agents.
 * Threads take game indices from a shared counter; each thread owns one
 * pair of agents and reseeds them per game, so the outcome of game i
 * depends on (seed, i) only and the totals do not depend on the schedule. */
#include "match.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PB__MATCH_MAX_THREADS 256

void pb_match_opts_default(pb_match_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->games = 100;
  o->seed = 1;
}

uint64_t pb_match_seed(uint64_t seed, int game, int which) {
  return pb_mix64(pb_mix64(seed) ^
                  ((uint64_t)(uint32_t)game << 2 | (uint64_t)(which & 3)));
}

int pb_match_game(const pb_game_t *g, pb_agent_t *first, pb_agent_t *second,
                  pb_rng_t *rng, int opening_random_moves, int max_turns,
                  int *outcome, int *plies, int *capped, pb_err_t *err) {
  if (g == NULL || first == NULL || second == NULL)
    return pb_err_set(err, PB_EINVAL, "match: NULL game or agent");
  if (opening_random_moves > 0 && rng == NULL)
    return pb_err_set(err, PB_EINVAL, "match: a random opening needs an rng");
  pb_state_t s;
  g->reset(&s);
  int ply = 0, result = 0, cap = 0;
  for (;;) {
    if (ply >= (max_turns > 0 ? max_turns : g->max_turns)) {
      cap = 1;
      break;
    }
    int a;
    if (ply < opening_random_moves) {
      uint8_t legal[PB_MAX_ACTIONS];
      int n = g->legal(&s, legal);
      if (n <= 0) break; /* cannot happen: step reports every end */
      a = legal[pb_rng_below(rng, (uint32_t)n)];
    } else {
      a = pb_agent_act(ply % 2 == 0 ? first : second, &s, err);
      if (a < 0) return a;
    }
    int done = 0;
    float r = g->step(&s, a, &done);
    ply++;
    if (done) {
      int mover_result = (r > 0.0f) - (r < 0.0f);
      result = (ply % 2 == 1) ? mover_result : -mover_result;
      break;
    }
  }
  if (outcome != NULL) *outcome = result;
  if (plies != NULL) *plies = ply;
  if (capped != NULL) *capped = cap;
  return 0;
}

typedef struct {
  int8_t outcome; /* for A */
  uint8_t capped;
  int16_t plies;
} game_rec_t;

typedef struct {
  const pb_game_t *g;
  const pb_match_opts_t *o;
  game_rec_t *recs;
  atomic_int next;
  atomic_int stop;
  pthread_mutex_t mu;
  int err_code;
  int err_game; /* the lowest failing game index, for a stable report */
  pb_err_t err;
} shared_t;

typedef struct {
  shared_t *sh;
  pb_agent_t *a, *b; /* owned by the worker */
} worker_t;

static void record_error(shared_t *sh, int game, int code, const pb_err_t *e) {
  pthread_mutex_lock(&sh->mu);
  if (sh->err_code == 0 || game < sh->err_game) {
    sh->err_code = code;
    sh->err_game = game;
    sh->err = *e;
  }
  pthread_mutex_unlock(&sh->mu);
  atomic_store(&sh->stop, 1);
}

static void *worker_run(void *arg) {
  worker_t *w = arg;
  shared_t *sh = w->sh;
  const pb_match_opts_t *o = sh->o;
  pb_err_t e;
  pb_err_clear(&e);
  for (;;) {
    if (atomic_load(&sh->stop)) break;
    int i = atomic_fetch_add(&sh->next, 1);
    if (i >= o->games) break;
    pb_agent_reseed(w->a, pb_match_seed(o->seed, i, 0));
    pb_agent_reseed(w->b, pb_match_seed(o->seed, i, 1));
    pb_rng_t rng;
    pb_rng_seed(&rng, pb_match_seed(o->seed, i, 2), 0);
    int a_first = i % 2 == 0, outcome = 0, plies = 0, capped = 0;
    int rc = pb_match_game(sh->g, a_first ? w->a : w->b, a_first ? w->b : w->a,
                           &rng, o->opening_random_moves, o->max_turns,
                           &outcome, &plies, &capped, &e);
    if (rc < 0) {
      record_error(sh, i, rc, &e);
      break;
    }
    sh->recs[i].outcome = (int8_t)(a_first ? outcome : -outcome);
    sh->recs[i].capped = (uint8_t)capped;
    sh->recs[i].plies = (int16_t)(plies > 32767 ? 32767 : plies);
  }
  return NULL;
}

static int check_opts(const pb_game_t *g, const pb_match_opts_t *o,
                      pb_err_t *err) {
  if (g == NULL || o == NULL)
    return pb_err_set(err, PB_EINVAL, "match: NULL game or options");
  if (o->a_spec == NULL || o->b_spec == NULL)
    return pb_err_set(err, PB_EINVAL, "match: agent specs not set");
  if (o->games < 1)
    return pb_err_set(err, PB_EINVAL, "match: games must be >= 1 (got %d)",
                      o->games);
  if (o->threads < 0 || o->threads > PB__MATCH_MAX_THREADS)
    return pb_err_set(err, PB_EINVAL,
                      "match: threads must be in 0..%d "
                      "(got %d)",
                      PB__MATCH_MAX_THREADS, o->threads);
  if (o->opening_random_moves < 0)
    return pb_err_set(err, PB_EINVAL,
                      "match: opening_random_moves must be "
                      ">= 0 (got %d)",
                      o->opening_random_moves);
  if (o->max_turns < 0)
    return pb_err_set(err, PB_EINVAL, "match: max_turns must be >= 0 (got %d)",
                      o->max_turns);
  return 0;
}

int pb_match_play(const pb_game_t *g, const pb_match_opts_t *o,
                  pb_match_result_t *res, pb_err_t *err) {
  int rc = check_opts(g, o, err);
  if (rc < 0) return rc;
  if (res == NULL) return pb_err_set(err, PB_EINVAL, "match: NULL result");
  memset(res, 0, sizeof *res);

  int nt = o->threads;
  if (nt == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    nt = c < 1 ? 1 : c > PB__MATCH_MAX_THREADS ? PB__MATCH_MAX_THREADS : (int)c;
  }
  if (nt > o->games) nt = o->games;

  shared_t sh;
  memset(&sh, 0, sizeof sh);
  sh.g = g;
  sh.o = o;
  atomic_init(&sh.next, 0);
  atomic_init(&sh.stop, 0);
  sh.recs = calloc((size_t)o->games, sizeof *sh.recs);
  worker_t *ws = calloc((size_t)nt, sizeof *ws);
  pthread_t *tids = calloc((size_t)nt, sizeof *tids);
  if (sh.recs == NULL || ws == NULL || tids == NULL) {
    rc = pb_err_set(err, PB_ENOMEM, "match: out of memory for %d games",
                    o->games);
    goto out;
  }
  /* Every worker's agents exist before any game starts: a bad spec fails
   * the match up front with nothing played. */
  for (int t = 0; t < nt; t++) {
    pb_err_t e;
    pb_err_clear(&e);
    ws[t].sh = &sh;
    ws[t].a = pb_agent_new(g, o->a_spec, o->seed, &e);
    if (ws[t].a != NULL) ws[t].b = pb_agent_new(g, o->b_spec, o->seed, &e);
    if (ws[t].b == NULL) {
      rc = e.code < 0 ? e.code : PB_EINVAL;
      if (err != NULL) *err = e;
      goto out;
    }
  }
  pthread_mutex_init(&sh.mu, NULL);
  int started = 0;
  for (int t = 1; t < nt; t++) {
    if (pthread_create(&tids[t], NULL, worker_run, &ws[t]) != 0) {
      atomic_store(&sh.stop, 1);
      rc =
          pb_err_set(err, PB_EIO, "match: cannot start thread %d of %d", t, nt);
      break;
    }
    started = t;
  }
  if (rc == 0) worker_run(&ws[0]); /* the calling thread works too */
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  pthread_mutex_destroy(&sh.mu);
  if (rc == 0 && sh.err_code != 0) {
    rc = sh.err_code;
    if (err != NULL) {
      *err = sh.err;
      err->code = rc;
    }
  }
  if (rc == 0) {
    res->games = o->games;
    for (int i = 0; i < o->games; i++) {
      const game_rec_t *r = &sh.recs[i];
      int first = i % 2 == 0;
      int *w = first ? &res->first_wins : &res->second_wins;
      int *d = first ? &res->first_draws : &res->second_draws;
      int *l = first ? &res->first_losses : &res->second_losses;
      if (r->outcome > 0) {
        res->wins++;
        (*w)++;
      } else if (r->outcome < 0) {
        res->losses++;
        (*l)++;
      } else {
        res->draws++;
        (*d)++;
      }
      res->capped += r->capped;
      res->plies += r->plies;
    }
  }
out:
  if (ws != NULL)
    for (int t = 0; t < nt; t++) {
      pb_agent_destroy(&ws[t].a);
      pb_agent_destroy(&ws[t].b);
    }
  free(ws);
  free(tids);
  free(sh.recs);
  return rc;
}
