/* azplay.c - see azplay.h. */
#include "azplay.h"
#include "bounds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "slots.h"

typedef struct {
  pb_slot_t s;      /* the scheduler's part (common/train/slots.h) */
  pb_state_t *hist; /* [max_turns] */
  float *pi;        /* [max_turns][A] */
} slot_t;

struct pb_azplay {
  const pb_game_t *g;
  pb_azplay_opts_t o;
  pb_mcts_t *mcts;
  slot_t *slot;
  pb_state_t *hist_pool;
  float *pi_pool;
  pb_state_t *roots; /* [parallel] */
  pb_rng_t **rngs;   /* [parallel] */
  int *rslot;        /* root -> slot */
  float *visits;     /* [parallel][A] */
  float *target;     /* [parallel][A]: the searches' policy targets */
  int *action;       /* [parallel]: the searches' moves */
  int *sims;         /* [parallel]: the searches' budgets */
  uint8_t *fast;     /* [parallel]: 1 = a fast search (playout cap) */
  pb_episodes_t done; /* a run's episodes in the order they finished */
  uint64_t positions;
};

pb_azplay_t *pb_azplay_new(const pb_game_t *g, const pb_azplay_opts_t *o,
                           pb_err_t *err) {
  if (g == NULL || o == NULL || o->parallel < 1 ||
      o->parallel > PB_SELFPLAY_MAX_PARALLEL || o->max_turns < 1 ||
      o->max_turns > PB_MAX_TURNS || o->temp_moves < 0) {
    pb_err_set(err, PB_EINVAL,
               "azplay: need parallel 1..%d, max_turns 1..%d, "
               "temp_moves >= 0",
               PB_SELFPLAY_MAX_PARALLEL, PB_MAX_TURNS);
    return NULL;
  }
  if (o->small_simulations != 0 &&
      (o->small_simulations < 1 || o->small_simulations > o->simulations ||
       !(o->full_fraction >= 0.0 && o->full_fraction <= 1.0))) {
    pb_err_set(err, PB_EINVAL,
               "azplay: playout cap with small_simulations %d (need "
               "1..simulations = %d, or 0: off) and full_fraction %g (need "
               "[0, 1])",
               o->small_simulations, o->simulations, o->full_fraction);
    return NULL;
  }
  pb_mcts_opts_t mo = {o->simulations, o->c_puct, o->eps, o->alpha,
                       o->parallel, o->discount};
  pb_mcts_t *m = pb_mcts_new_ex(g, &mo, &o->root, err);
  if (m == NULL) return NULL;
  pb_azplay_t *p = calloc(1, sizeof *p);
  if (p == NULL) {
    pb_mcts_destroy(&m);
    pb_err_set(err, PB_ENOMEM, "azplay: out of memory");
    return NULL;
  }
  p->g = g;
  p->o = *o;
  /* No game is longer than its max_turns (selfplay.c): nor its buffers. */
  if (p->o.max_turns > g->max_turns) p->o.max_turns = g->max_turns;
  p->mcts = m;
  const size_t P = (size_t)o->parallel, T = (size_t)p->o.max_turns,
               A = (size_t)g->num_actions;
  p->slot = calloc(P, sizeof *p->slot);
  p->hist_pool = malloc(P * T * sizeof *p->hist_pool);
  p->pi_pool = malloc(P * T * A * sizeof *p->pi_pool);
  p->roots = malloc(P * sizeof *p->roots);
  p->rngs = malloc(P * sizeof *p->rngs);
  p->rslot = malloc(P * sizeof *p->rslot);
  p->visits = malloc(P * A * sizeof *p->visits);
  p->target = malloc(P * A * sizeof *p->target);
  p->action = malloc(P * sizeof *p->action);
  p->sims = malloc(P * sizeof *p->sims);
  p->fast = malloc(P);
  if (!p->slot || !p->hist_pool || !p->pi_pool || !p->roots || !p->rngs ||
      !p->rslot || !p->visits || !p->target || !p->action || !p->sims ||
      !p->fast) {
    pb_azplay_destroy(&p);
    pb_err_set(err, PB_ENOMEM, "azplay: out of memory");
    return NULL;
  }
  for (size_t i = 0; i < P; i++) {
    p->slot[i].hist = p->hist_pool + i * T;
    p->slot[i].pi = p->pi_pool + i * T * A;
  }
  return p;
}

void pb_azplay_config_opts(const pb_config_t *cfg, pb_azplay_opts_t *o) {
  const int gumbel = !strcmp(cfg->mcts.root, "gumbel"),
            cap = cfg->mcts.full_fraction < 1.0;
  *o = (pb_azplay_opts_t){
      .parallel = cfg->train.selfplay_parallel,
      .max_turns = cfg->train.max_turns,
      .simulations = cfg->mcts.simulations,
      .c_puct = cfg->mcts.c_puct,
      .eps = cfg->train.eps,
      .alpha = cfg->train.alpha,
      .temp_moves = cfg->mcts.temp_moves,
      .discount = cfg->mcts.discount,
      .root = {.rule = gumbel ? PB_MCTS_GUMBEL : PB_MCTS_PUCT,
               .considered = gumbel ? cfg->mcts.gumbel_considered : 0,
               .c_visit = gumbel ? cfg->mcts.gumbel_c_visit : 0.0,
               .c_scale = gumbel ? cfg->mcts.gumbel_c_scale : 0.0,
               .forced = cfg->mcts.forced_playouts ? 1 : 0},
      .full_fraction = cap ? cfg->mcts.full_fraction : 1.0,
      .small_simulations = cap ? cfg->mcts.small_simulations : 0};
}

void pb_azplay_destroy(pb_azplay_t **pp) {
  if (pp == NULL || *pp == NULL) return;
  pb_azplay_t *p = *pp;
  pb_mcts_destroy(&p->mcts);
  free(p->slot);
  free(p->hist_pool);
  free(p->pi_pool);
  free(p->roots);
  free(p->rngs);
  free(p->rslot);
  free(p->visits);
  free(p->target);
  free(p->action);
  free(p->sims);
  free(p->fast);
  pb_episodes_free(&p->done);
  free(p);
  *pp = NULL;
}

/* The move after a search: drawn in proportion to the visits among the
 * first temp_moves moves, else the most visited (ties: the lowest). */
static int choose(const pb_azplay_t *p, pb_slot_t *s, const float *visits) {
  const int A = p->g->num_actions;
  if ((int)s->n < p->o.temp_moves) {
    double total = 0;
    for (int a = 0; a < A; a++) total += visits[a];
    double u = pb_rng_uniform(&s->rng) * total, acc = 0;
    int last = -1;
    for (int a = 0; a < A; a++) {
      if (visits[a] <= 0) continue;
      acc += visits[a];
      last = a;
      if (u < acc) return a;
    }
    return last; /* rounding left u at the total */
  }
  int best = -1;
  for (int a = 0; a < A; a++)
    if (visits[a] > 0 && (best < 0 || visits[a] > visits[best])) best = a;
  return best;
}

int pb_azplay_run(pb_azplay_t *p, int n, uint64_t seed, uint64_t first_index,
                  const pb_mcts_evalfn_t *ev, uint64_t version,
                  pb_episodes_t *out, pb_err_t *err) {
  const pb_game_t *g = p->g;
  const int P = p->o.parallel, A = g->num_actions;
  const uint32_t T = (uint32_t)p->o.max_turns;
  if (n <= 0) return 0;
  /* Episodes finish in an order set by their lengths; the scheduler puts
   * them in number order (slots.h). */
  pb_episodes_clear(&p->done);
  pb_slots_t run;
  int rc = pb_slots_begin(&run, g, n, seed, first_index, err);
  if (rc != 0) return rc;
  for (int i = 0; i < P; i++) pb_slots_fill(&run, &p->slot[i].s);
  while (pb_slots_running(&run) && rc == 0) {
    int nr = 0;
    for (int i = 0; i < P; i++)
      if (p->slot[i].s.active) {
        p->roots[nr] = p->slot[i].s.cur;
        p->rngs[nr] = &p->slot[i].s.rng;
        /* Playout cap randomization: full with probability full_fraction
         * (no draw without the cap: the stream stays as it was). */
        p->fast[nr] = p->o.small_simulations > 0 &&
                      !(pb_rng_uniform(&p->slot[i].s.rng) < p->o.full_fraction);
        p->sims[nr] = p->fast[nr] ? p->o.small_simulations : p->o.simulations;
        p->rslot[nr++] = i;
      }
    pb_mcts_io_t io = {p->sims, p->fast, p->visits, p->target, p->action, NULL};
    rc = pb_mcts_search(p->mcts, p->roots, nr, ev, p->rngs, &io, err);
    for (int r = 0; r < nr && rc == 0; r++) {
      slot_t *as = &p->slot[p->rslot[r]];
      pb_slot_t *s = &as->s;
      const float *vis = &p->visits[(size_t)r * A];
      const float *tgt = &p->target[(size_t)r * A];
      float *pi = &as->pi[(size_t)s->n * A];
      if (p->fast[r])
        memset(pi, 0, (size_t)A * sizeof *pi); /* not a policy target */
      else
        memcpy(pi, tgt, (size_t)A * sizeof *pi);
      int a = p->o.root.rule == PB_MCTS_GUMBEL
                  ? p->action[r]
                  : choose(p, s, p->o.root.forced && !p->fast[r] ? tgt : vis);
      as->hist[s->n++] = s->cur;
      p->positions++;
      int over = 0;
      float rew = g->step(&s->cur, a, &over);
      if (!over && s->n < T) continue;
      rc = pb_episodes_add_policy(&p->done, as->hist, s->n,
                                  over ? (int)lrintf(rew) : 0, version, as->pi,
                                  A, err);
      if (rc != 0) break;
      pb_slots_finish(&run, s);
      pb_slots_fill(&run, s);
    }
  }
  return pb_slots_end(&run, &p->done, out, rc, err);
}

uint64_t pb_azplay_positions(const pb_azplay_t *p) { return p->positions; }
uint64_t pb_azplay_evaluations(const pb_azplay_t *p) {
  return pb_mcts_evaluations(p->mcts);
}
