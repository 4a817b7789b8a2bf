/* match.c - many games between two agents, spread over threads.
 *
 * Workload: hundreds to thousands of short games between cheap agents.
 * Threads take game indices from a shared counter; each thread owns one
 * pair of agents and reseeds them per game, so the outcome of game i
 * depends on (seed, i) only and the totals do not depend on the schedule. */
#include "match.h"
#include "bounds.h"

#include "gtp_clock.h"
#include "gtp_timed.h"
#include "solver.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
  return pb_match_game_from(g, NULL, first, second, rng, opening_random_moves,
                            max_turns, outcome, plies, capped, err);
}

int pb_match_game_from(const pb_game_t *g, const pb_state_t *start,
                       pb_agent_t *first, pb_agent_t *second, pb_rng_t *rng,
                       int opening_random_moves, int max_turns, int *outcome,
                       int *plies, int *capped, pb_err_t *err) {
  return pb_match_game_moves(g, start, first, second, rng,
                             opening_random_moves, max_turns, outcome, plies,
                             capped, NULL, 0, NULL, err);
}

/* ---- time control -------------------------------------------------------- */

int64_t pb_match_tc_budget_ms(const pb_game_t *g, int ply, double left_s,
                              double inc_s) {
  if (!(left_s > 0)) return 1;
  double share = left_s / pb_gtp_clock_moves_left(g, ply) + inc_s;
  double ms = 1000.0 * PB_MATCH_TC_USE * share;
  if (ms > 1000.0 * PB_MATCH_TC_MAX_SHARE * left_s)
    ms = 1000.0 * PB_MATCH_TC_MAX_SHARE * left_s;
  ms -= PB_MATCH_TC_RESERVE_MS;
  return ms < 1 ? 1 : (int64_t)ms;
}

/* A game's clocks under a time control. */
typedef struct {
  pb_gtp_timed_t *timed[2]; /* the first player's agent, the second's */
  double base_s, inc_s;
  double left_s[2];
  int moved[2];
  int flagged; /* -1, or the side (0 first) whose time ran out */
} game_clock_t;

#define FLAGGED 1000 /* clocked_act: the mover's time ran out */

/* The mover's move under its clock: the action, FLAGGED, or an error. */
static int clocked_act(const pb_game_t *g, game_clock_t *c,
                       const pb_state_t *s, int ply, pb_err_t *err) {
  const int k = ply % 2;
  pb_agent_clock_t ac = {.base_s = c->base_s,
                         .inc_s = c->inc_s,
                         .left_s = c->left_s[k],
                         .color = k,
                         .new_game = c->moved[k] == 0};
  int rc = pb_agent_clock(pb_gtp_timed_agent(c->timed[k]), &ac, err);
  if (rc < 0 && rc != PB_EUNSUPP) return rc;
  int64_t budget = pb_match_tc_budget_ms(g, ply, c->left_s[k], c->inc_s);
  double t0 = pb_now();
  int a = pb_gtp_timed_act(c->timed[k], s, budget, err);
  double dt = pb_now() - t0;
  if (a < 0) return a;
  c->moved[k]++;
  c->left_s[k] -= dt;
  if (c->left_s[k] < 0) {
    c->flagged = k;
    return FLAGGED;
  }
  c->left_s[k] += c->inc_s;
  return a;
}

static int cancelled(const atomic_int *cancel) {
  return cancel != NULL && atomic_load(cancel) != 0;
}

/* What a match adds to a game (none for pb_match_game_moves). */
typedef struct {
  const atomic_int *cancel; /* stop with PB_EINTR before a ply once set */
  game_clock_t *clk;        /* the clocks, or NULL */
  pb_solver_t *solver;      /* adjudicates from ply adj_ply on, or NULL */
  int adj_ply;
  int mat_margin, mat_plies; /* material adjudication, 0: none */
  int adjudicated; /* out: the solver or the material scored the game */
  int resigned;    /* out: the side to move resigned */
  int32_t *ms;     /* out, with moves: each ply's milliseconds, or NULL */
  float *evals;    /* out, with moves: each ply's mover's value, or NULL */
} game_ctl_t;

/* The value the mover gave the position before its move (NaN: none). */
static float mover_eval(pb_agent_t *mover) {
  pb_agent_info_t in;
  pb_agent_info(mover, 0, &in);
  return in.valued ? in.value : NAN;
}

/* pb_match_game_moves under ctl (NULL: none of it). */
static int game_moves(const pb_game_t *g, const pb_state_t *start,
                      pb_agent_t *first, pb_agent_t *second, pb_rng_t *rng,
                      int opening_random_moves, int max_turns, int *outcome,
                      int *plies, int *capped, uint8_t *moves, int moves_cap,
                      int *n_moves, game_ctl_t *ctl, pb_err_t *err) {
  const atomic_int *cancel = ctl != NULL ? ctl->cancel : NULL;
  game_clock_t *clk = ctl != NULL ? ctl->clk : NULL;
  if (n_moves != NULL) *n_moves = 0;
  if (g == NULL || first == NULL || second == NULL)
    return pb_err_set(err, PB_EINVAL, "match: NULL game or agent");
  if (opening_random_moves > 0 && rng == NULL)
    return pb_err_set(err, PB_EINVAL, "match: a random opening needs an rng");
  pb_state_t s;
  if (start != NULL) {
    float r;
    if (g->terminal(start, &r))
      return pb_err_set(err, PB_EINVAL, "match: the opening is finished");
    s = *start;
  } else {
    g->reset(&s);
  }
  const int ply0 = g->ply(&s);
  int ply = ply0, result = 0, cap = 0;
  int lead = 0, run = 0; /* material: the leader (+1 first), plies so */
  for (;;) {
    if (ply >= (max_turns > 0 ? max_turns : g->max_turns)) {
      cap = 1;
      break;
    }
    if (cancelled(cancel))
      return pb_err_set(err, PB_EINTR, "match: interrupted");
    /* Adjudication: the solver's result, once the players have the
     * position (past the random plies) and it is late enough. */
    if (ctl != NULL && ctl->solver != NULL && ply >= ctl->adj_ply &&
        ply - ply0 >= opening_random_moves) {
      pb_solve_value_t v;
      int rc = pb_solver_solve(ctl->solver, &s, 1, &v, err);
      if (rc < 0) return rc;
      result = ply % 2 == 0 ? v.result : -v.result;
      ctl->adjudicated = 1;
      break;
    }
    int a;
    const double t_move = pb_now();
    if (ply - ply0 < opening_random_moves) {
      uint8_t legal[PB_MAX_ACTIONS];
      int n = g->legal(&s, legal);
      if (n <= 0) break; /* cannot happen: step reports every end */
      a = legal[pb_rng_below(rng, (uint32_t)n)];
    } else if (clk != NULL) {
      a = clocked_act(g, clk, &s, ply, err);
      if (a == FLAGGED) { /* the mover loses on time */
        result = ply % 2 == 0 ? -1 : 1;
        break;
      }
    } else {
      a = pb_agent_act(ply % 2 == 0 ? first : second, &s, err);
    }
    if (a == PB_AGENT_RESIGN && ctl != NULL) { /* the mover resigns */
      result = ply % 2 == 0 ? -1 : 1;
      ctl->resigned = 1;
      break;
    }
    if (a < 0) return a;
    if (moves != NULL) {
      if (ply - ply0 >= moves_cap)
        return pb_err_set(err, PB_ERANGE, "match: a game longer than %d plies",
                          moves_cap);
      moves[ply - ply0] = (uint8_t)a;
      if (ctl != NULL && ctl->ms != NULL) {
        double t = (pb_now() - t_move) * 1000.0;
        ctl->ms[ply - ply0] = ply - ply0 < opening_random_moves ? -1
                              : t > 2e9 ? 2000000000
                                        : (int32_t)(t + 0.5);
      }
      if (ctl != NULL && ctl->evals != NULL)
        ctl->evals[ply - ply0] =
            ply - ply0 < opening_random_moves ? NAN
            : mover_eval(clk != NULL ? pb_gtp_timed_last_agent(
                                           clk->timed[ply % 2])
                         : ply % 2 == 0 ? first
                                        : second);
      if (n_moves != NULL) *n_moves = ply - ply0 + 1; /* kept if stopped */
    }
    int done = 0;
    float r = g->step(&s, a, &done);
    ply++;
    if (done) {
      int mover_result = (r > 0.0f) - (r < 0.0f);
      result = (ply % 2 == 1) ? mover_result : -mover_result;
      break;
    }
    /* Material adjudication: one side ahead by the margin for mat_plies
     * plies in a row (the players' plies) wins. */
    if (ctl != NULL && ctl->mat_margin > 0 &&
        ply - ply0 > opening_random_moves) {
      int m = g->material(&s); /* the side to move's */
      int now = m >= ctl->mat_margin    ? (ply % 2 == 0 ? 1 : -1)
                : m <= -ctl->mat_margin ? (ply % 2 == 0 ? -1 : 1)
                                        : 0;
      run = now != 0 && now == lead ? run + 1 : now != 0;
      lead = now;
      if (run >= ctl->mat_plies) {
        result = lead;
        ctl->adjudicated = 1;
        break;
      }
    }
  }
  if (outcome != NULL) *outcome = result;
  if (plies != NULL) *plies = ply;
  if (capped != NULL) *capped = cap;
  if (n_moves != NULL) *n_moves = ply - ply0;
  return 0;
}

int pb_match_game_moves(const pb_game_t *g, const pb_state_t *start,
                        pb_agent_t *first, pb_agent_t *second, pb_rng_t *rng,
                        int opening_random_moves, int max_turns, int *outcome,
                        int *plies, int *capped, uint8_t *moves,
                        int moves_cap, int *n_moves, pb_err_t *err) {
  return game_moves(g, start, first, second, rng, opening_random_moves,
                    max_turns, outcome, plies, capped, moves, moves_cap,
                    n_moves, NULL, err);
}

void pb_match_penta_add(int penta[PB_MATCH_PENTA], int *pair_wl,
                        int *pair_dd, int a, int b) {
  penta[a + b + 2]++; /* points 0, 1/2, ..., 2 in halves */
  if (a + b == 0) {
    if (a == 0) {
      if (pair_dd != NULL) (*pair_dd)++;
    } else if (pair_wl != NULL) {
      (*pair_wl)++;
    }
  }
}

/* ---- repeated games ---------------------------------------------------- */

/* A set of nonzero 64-bit keys (open addressing, at most half full). */
typedef struct {
  uint64_t *k;
  size_t cap, n;
} keyset_t;

/* 1: key was new (now in), 0: seen before, PB_ENOMEM. */
static int keyset_add(keyset_t *s, uint64_t key) {
  if (key == 0) key = 1;
  if (2 * (s->n + 1) > s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 256;
    uint64_t *nk = calloc(nc, sizeof *nk);
    if (nk == NULL) return PB_ENOMEM;
    for (size_t i = 0; i < s->cap; i++) {
      if (s->k[i] == 0) continue;
      size_t j = (size_t)(s->k[i] & (nc - 1));
      while (nk[j] != 0) j = (j + 1) & (nc - 1);
      nk[j] = s->k[i];
    }
    free(s->k);
    s->k = nk;
    s->cap = nc;
  }
  size_t j = (size_t)(key & (s->cap - 1));
  for (; s->k[j] != 0; j = (j + 1) & (s->cap - 1))
    if (s->k[j] == key) return 0;
  s->k[j] = key;
  s->n++;
  return 1;
}

/* The key of a game: its side for A, its opening and its plies. */
static uint64_t game_key(int a_first, int opening, const uint8_t *moves,
                         int n) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  const uint8_t head[5] = {(uint8_t)a_first, (uint8_t)opening,
                           (uint8_t)(opening >> 8), (uint8_t)(opening >> 16),
                           (uint8_t)(opening >> 24)};
  for (int i = 0; i < 5; i++) h = (h ^ head[i]) * 1099511628211ULL;
  for (int i = 0; i < n; i++) h = (h ^ moves[i]) * 1099511628211ULL;
  return pb_mix64(h ^ (uint64_t)n);
}

typedef struct {
  int8_t outcome; /* for A */
  uint8_t capped;
  uint8_t done;   /* played (under the mutex) */
  int16_t plies;
  uint8_t counted;          /* in the totals */
  int8_t flagged;           /* 0, 1 A lost on time, 2 B did */
  uint8_t adjudicated;      /* the solver scored it */
  int8_t resigned;          /* 0, 1 A resigned, 2 B did */
  uint8_t interrupted;      /* under way when cancelled (not done) */
  int n_moves, random_plies; /* with on_game: */
  uint8_t *moves;            /* malloc'd, freed once on_game saw them */
  int32_t *ms;               /* the same, each ply's milliseconds */
  float *evals;              /* the same, each ply's mover's value */
  double started;            /* UNIX time */
  uint64_t key;              /* game_key */
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
  /* Under mu: games 0..prefix-1 are done and in `sofar`; `cut` is where
   * on_games ended the match (o->games when it did not). */
  int prefix, cut;
  int halted; /* on_game failed: the prefix grows no more */
  pb_match_result_t sofar;
  keyset_t games_seen, pairs_seen; /* the keys of counted games, pairs */
} shared_t;

/* Game i's place among the repeats: whether it (and, for the second game
 * of a pair whose first is counted, its pair) is new, counted into *res.
 * Returns 0 or PB_ENOMEM. */
static int count_repeats(shared_t *sh, pb_match_result_t *res, int i,
                         const game_rec_t *r) {
  int fresh = keyset_add(&sh->games_seen, r->key);
  if (fresh < 0) return fresh;
  if (fresh) {
    res->last_new = i;
    if (r->outcome > 0)
      res->distinct_wins++;
    else if (r->outcome < 0)
      res->distinct_losses++;
    else
      res->distinct_draws++;
  } else {
    res->repeats++;
  }
  if (i % 2 == 1 && sh->recs[i - 1].counted) {
    const game_rec_t *p = &sh->recs[i - 1];
    int pfresh = keyset_add(&sh->pairs_seen, pb_mix64(p->key) ^ r->key);
    if (pfresh < 0) return pfresh;
    if (pfresh)
      pb_match_penta_add(res->distinct_penta, NULL, NULL, p->outcome,
                         r->outcome);
    else
      res->pair_repeats++;
  }
  return 0;
}

/* Adds game i's record to the totals *res. Returns 0 or PB_ENOMEM. */
static int count_game(shared_t *sh, pb_match_result_t *res, int i,
                      game_rec_t *r) {
  int rc = count_repeats(sh, res, i, r);
  if (rc < 0) return rc;
  if (i % 2 == 1 && sh->recs[i - 1].counted)
    pb_match_penta_add(res->penta, &res->pair_wl, &res->pair_dd,
                       sh->recs[i - 1].outcome, r->outcome);
  r->counted = 1;
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
  res->games++;
  res->a_time_losses += r->flagged == 1;
  res->adjudicated += r->adjudicated;
  res->a_resigned += r->resigned == 1;
  res->b_resigned += r->resigned == 2;
  res->b_time_losses += r->flagged == 2;
  res->capped += r->capped;
  res->plies += r->plies;
  return 0;
}

/* Records the match's error (the lowest game's) and stops the match. */
static void set_error(shared_t *sh, int game, int code, const pb_err_t *e) {
  if (sh->err_code == 0 || game < sh->err_game) {
    sh->err_code = code;
    sh->err_game = game;
    sh->err = *e;
  }
  atomic_store(&sh->stop, 1);
}

/* Shows game k (done, in the prefix) to on_game, under mu; its moves
 * are freed. A failure halts the match with its error. */
static int show_game(shared_t *sh, int k) {
  const pb_match_opts_t *o = sh->o;
  game_rec_t *r = &sh->recs[k];
  pb_match_game_t gm = {
      .index = k,
      .a_first = k % 2 == 0,
      .outcome = r->outcome,
      .capped = r->capped,
      .opening = o->n_openings > 0 ? (k / 2) % o->n_openings : -1,
      .random_plies = r->random_plies,
      .start = o->n_openings > 0 ? &o->openings[(k / 2) % o->n_openings]
                                 : NULL,
      .n_moves = r->n_moves,
      .moves = r->moves,
      .flagged = r->flagged,
      .adjudicated = r->adjudicated,
      .ms = r->ms,
      .evals = r->evals,
      .resigned = r->resigned != 0,
      .interrupted = r->interrupted,
      .started = r->started};
  pb_err_t e;
  pb_err_clear(&e);
  int rc = o->on_game(o->game_ctx, &gm, &e);
  free(r->moves);
  r->moves = NULL;
  free(r->ms);
  r->ms = NULL;
  free(r->evals);
  r->evals = NULL;
  if (rc >= 0) return 0;
  set_error(sh, k, rc, &e);
  sh->halted = 1;
  return rc;
}

/* Shows game k to on_game and counts it: 0, or the error that halted
 * the match. */
static int take_game(shared_t *sh, int k) {
  if (sh->o->on_game != NULL && show_game(sh, k) < 0) return -1;
  if (count_game(sh, &sh->sofar, k, &sh->recs[k]) < 0) {
    pb_err_t e;
    pb_err_clear(&e);
    set_error(sh, k, pb_err_set(&e, PB_ENOMEM, "match: out of memory"), &e);
    sh->halted = 1;
    return -1;
  }
  return 0;
}

/* Game i is done: extends the prefix of done games as far as it goes,
 * showing each game to on_game and each new prefix to on_games, which
 * may end the match. */
static void game_done(shared_t *sh, int i, const game_rec_t *rec) {
  pthread_mutex_lock(&sh->mu);
  sh->recs[i] = *rec;
  sh->recs[i].done = 1;
  while (!sh->halted && sh->prefix < sh->cut && sh->recs[sh->prefix].done) {
    if (take_game(sh, sh->prefix) < 0) break;
    sh->prefix++;
    if (sh->o->on_games != NULL && sh->o->on_games(sh->o->ctx, &sh->sofar)) {
      sh->cut = sh->prefix;
      atomic_store(&sh->stop, 1);
    }
  }
  pthread_mutex_unlock(&sh->mu);
}

typedef struct {
  shared_t *sh;
  pb_agent_t *a, *b;        /* owned by the worker, or borrowed from: */
  pb_gtp_timed_t *ta, *tb; /* under a time control, A's and B's */
  pb_solver_t *solver;     /* adjudication, or NULL */
} worker_t;

static void record_error(shared_t *sh, int game, int code, const pb_err_t *e) {
  pthread_mutex_lock(&sh->mu);
  set_error(sh, game, code, e);
  pthread_mutex_unlock(&sh->mu);
}

static void *worker_run(void *arg) {
  worker_t *w = arg;
  shared_t *sh = w->sh;
  const pb_match_opts_t *o = sh->o;
  pb_err_t e;
  pb_err_clear(&e);
  /* Each game's plies (at most the turn cap), for its key and on_game. */
  const int mcap = o->max_turns > 0 ? o->max_turns : sh->g->max_turns;
  uint8_t *moves = malloc((size_t)mcap);
  int32_t *ms = malloc((size_t)mcap * sizeof *ms);
  float *evals = malloc((size_t)mcap * sizeof *evals);
  if (moves == NULL || ms == NULL || evals == NULL) {
    free(moves);
    free(ms);
    free(evals);
    pb_err_set(&e, PB_ENOMEM, "match: out of memory");
    record_error(sh, 0, PB_ENOMEM, &e);
    return NULL;
  }
  for (;;) {
    if (atomic_load(&sh->stop) || cancelled(o->cancel)) break;
    int i = atomic_fetch_add(&sh->next, 1);
    if (i >= o->games) break;
    pb_agent_reseed(w->a, pb_match_seed(o->seed, i, 0));
    pb_agent_reseed(w->b, pb_match_seed(o->seed, i, 1));
    pb_rng_t rng;
    pb_rng_seed(&rng, pb_match_seed(o->seed, i, 2), 0);
    int a_first = i % 2 == 0, outcome = 0, plies = 0, capped = 0;
    const pb_state_t *start =
        o->n_openings > 0 ? &o->openings[(i / 2) % o->n_openings] : NULL;
    int n_moves = 0;
    game_clock_t clk = {.timed = {a_first ? w->ta : w->tb,
                                  a_first ? w->tb : w->ta},
                        .base_s = o->tc_base_s,
                        .inc_s = o->tc_inc_s,
                        .left_s = {o->tc_base_s, o->tc_base_s},
                        .flagged = -1};
    game_ctl_t ctl = {.cancel = o->cancel,
                      .clk = w->ta != NULL ? &clk : NULL,
                      .solver = w->solver,
                      .adj_ply = o->adjudicate_ply,
                      .mat_margin = o->adjudicate_margin,
                      .mat_plies = o->adjudicate_plies,
                      .ms = ms,
                      .evals = evals};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const double started = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    int rc = game_moves(sh->g, start, a_first ? w->a : w->b,
                        a_first ? w->b : w->a, &rng, o->opening_random_moves,
                        o->max_turns, &outcome, &plies, &capped, moves, mcap,
                        &n_moves, &ctl, &e);
    int stopped = rc < 0 && cancelled(o->cancel); /* uncounted */
    if (stopped && !o->show_interrupted) break;
    game_rec_t rec = {.outcome = (int8_t)(a_first ? outcome : -outcome),
                      .capped = (uint8_t)capped,
                      .plies = (int16_t)(plies > 32767 ? 32767 : plies),
                      .n_moves = n_moves,
                      .adjudicated = (uint8_t)ctl.adjudicated,
                      .flagged = (int8_t)(clk.flagged < 0 ? 0
                                          : (clk.flagged == 0) == a_first
                                              ? 1
                                              : 2),
                      .resigned = (int8_t)(!ctl.resigned ? 0
                                           : (plies % 2 == 0) == a_first
                                               ? 1
                                               : 2),
                      .interrupted = (uint8_t)stopped,
                      .random_plies = n_moves < o->opening_random_moves
                                          ? n_moves
                                          : o->opening_random_moves,
                      .key = game_key(a_first,
                                      o->n_openings > 0
                                          ? (i / 2) % o->n_openings
                                          : -1,
                                      moves, n_moves)};
    rec.started = started;
    if ((rc == 0 || stopped) && o->on_game != NULL &&
        ((rec.moves = malloc((size_t)n_moves + 1)) == NULL ||
         (rec.ms = malloc(((size_t)n_moves + 1) * sizeof *ms)) == NULL ||
         (rec.evals = malloc(((size_t)n_moves + 1) * sizeof *evals)) ==
             NULL)) {
      free(rec.moves);
      free(rec.ms);
      rec.moves = NULL;
      rec.ms = NULL;
      rc = pb_err_set(&e, PB_ENOMEM, "match: out of memory");
      stopped = 0;
    }
    if (rc < 0 && !stopped) {
      record_error(sh, i, rc, &e);
      break;
    }
    if (rec.moves != NULL) {
      memcpy(rec.moves, moves, (size_t)n_moves);
      memcpy(rec.ms, ms, (size_t)n_moves * sizeof *ms);
      memcpy(rec.evals, evals, (size_t)n_moves * sizeof *evals);
    }
    if (stopped) { /* kept for on_game after the threads end, uncounted */
      pthread_mutex_lock(&sh->mu);
      sh->recs[i] = rec;
      pthread_mutex_unlock(&sh->mu);
      break;
    }
    game_done(sh, i, &rec);
  }
  free(moves);
  free(ms);
  free(evals);
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
  if (o->threads < 0 || o->threads > PB_MAX_THREADS)
    return pb_err_set(err, PB_EINVAL,
                      "match: threads must be in 0..%d "
                      "(got %d)",
                      PB_MAX_THREADS, o->threads);
  if (o->opening_random_moves < 0)
    return pb_err_set(err, PB_EINVAL,
                      "match: opening_random_moves must be "
                      ">= 0 (got %d)",
                      o->opening_random_moves);
  if (!(o->tc_base_s >= 0 && o->tc_base_s <= PB_MATCH_TC_MAX_S) ||
      !(o->tc_inc_s >= 0 && o->tc_inc_s <= PB_MATCH_TC_MAX_S) ||
      (o->tc_base_s == 0 && o->tc_inc_s > 0))
    return pb_err_set(err, PB_EINVAL,
                      "match: time control %g+%g: base in (0, %g] seconds, "
                      "increment in [0, %g]",
                      o->tc_base_s, o->tc_inc_s, PB_MATCH_TC_MAX_S,
                      PB_MATCH_TC_MAX_S);
  if (o->adjudicate_ply < 0 ||
      (o->adjudicate_ply > 0 && !pb_solver_supports(g)))
    return pb_err_set(err, PB_EINVAL,
                      "match: adjudication by a solver: %s has none "
                      "(connect4 and tictactoe have)",
                      g->name);
  if (o->adjudicate_margin < 0 || o->adjudicate_plies < 0 ||
      (o->adjudicate_margin > 0 &&
       (g->material == NULL || o->adjudicate_plies < 1)))
    return pb_err_set(err, PB_EINVAL,
                      "match: adjudication by material: %s has none, or "
                      "plies %d < 1 (othello and toguz have)",
                      g->name, o->adjudicate_plies);
  if (o->max_turns < 0)
    return pb_err_set(err, PB_EINVAL, "match: max_turns must be >= 0 (got %d)",
                      o->max_turns);
  const int longest = o->max_turns > 0 ? o->max_turns : g->max_turns;
  if (o->opening_random_moves >= longest)
    return pb_err_set(err, PB_EINVAL,
                      "match: %d random opening plies, but %s games last at "
                      "most %d plies",
                      o->opening_random_moves, g->name, longest);
  if (o->n_openings < 0 || (o->n_openings > 0 && o->openings == NULL))
    return pb_err_set(err, PB_EINVAL, "match: %d openings at %p",
                      o->n_openings, (const void *)o->openings);
  for (int k = 0; k < o->n_openings; k++) {
    float r;
    if (g->terminal(&o->openings[k], &r))
      return pb_err_set(err, PB_EINVAL, "match: opening %d is finished", k);
  }
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
    nt = c < 1 ? 1 : c > PB_MAX_THREADS ? PB_MAX_THREADS : (int)c;
  }
  if (nt > o->games) nt = o->games;

  shared_t sh;
  memset(&sh, 0, sizeof sh);
  sh.g = g;
  sh.o = o;
  atomic_init(&sh.next, 0);
  atomic_init(&sh.stop, 0);
  sh.cut = o->games;
  sh.sofar.last_new = -1;
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
    if (o->tc_base_s > 0) {
      ws[t].ta = pb_gtp_timed_new(g, o->a_spec, o->seed, &e);
      if (ws[t].ta != NULL)
        ws[t].tb = pb_gtp_timed_new(g, o->b_spec, o->seed, &e);
      ws[t].a = ws[t].ta != NULL ? pb_gtp_timed_agent(ws[t].ta) : NULL;
      ws[t].b = ws[t].tb != NULL ? pb_gtp_timed_agent(ws[t].tb) : NULL;
    } else {
      ws[t].a = pb_agent_new(g, o->a_spec, o->seed, &e);
      if (ws[t].a != NULL) ws[t].b = pb_agent_new(g, o->b_spec, o->seed, &e);
    }
    if (ws[t].b != NULL && o->adjudicate_ply > 0)
      ws[t].solver = pb_solver_new(g, PB_MATCH_ADJ_TT_LOG2, &e);
    if (ws[t].b == NULL || (o->adjudicate_ply > 0 && ws[t].solver == NULL)) {
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
  /* Interrupted: the games finished past the prefix count too, in order
   * (the threads are joined: no lock needed); an agent's error then is
   * taken for a consequence of the interruption (a signal that reached an
   * engine's process too). */
  if (rc == 0 && cancelled(o->cancel) && sh.prefix < sh.cut) {
    sh.sofar.interrupted = 1;
    if (!sh.halted) {
      sh.err_code = 0;
      for (int k = sh.prefix; k < sh.cut; k++)
        if ((sh.recs[k].done && take_game(&sh, k) < 0) ||
            (sh.recs[k].interrupted && o->on_game != NULL &&
             show_game(&sh, k) < 0))
          break;
    }
  }
  /* An error in a game past the cut (one already under way when the
   * match was decided) does not count: the match is the games before. */
  if (rc == 0 && sh.err_code != 0 && sh.err_game < sh.cut) {
    rc = sh.err_code;
    if (err != NULL) {
      *err = sh.err;
      err->code = rc;
    }
  }
  /* Every game up to the cut is done (the workers stop only past it, on
   * an error or when cancelled), so the prefix is the match. */
  if (rc == 0) *res = sh.sofar;
out:
  if (ws != NULL)
    for (int t = 0; t < nt; t++) {
      pb_solver_destroy(&ws[t].solver);
      if (ws[t].ta != NULL || ws[t].tb != NULL) {
        pb_gtp_timed_destroy(&ws[t].ta);
        pb_gtp_timed_destroy(&ws[t].tb);
      } else {
        pb_agent_destroy(&ws[t].a);
        pb_agent_destroy(&ws[t].b);
      }
    }
  free(ws);
  free(tids);
  if (sh.recs != NULL) /* the moves of games past the cut */
    for (int i = 0; i < o->games; i++) {
      free(sh.recs[i].moves);
      free(sh.recs[i].ms);
      free(sh.recs[i].evals);
    }
  free(sh.recs);
  free(sh.games_seen.k);
  free(sh.pairs_seen.k);
  return rc;
}
