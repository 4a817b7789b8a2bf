#include "selfplay.h"
#include "bounds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "slots.h"

typedef struct {
  pb_slot_t s;         /* the scheduler's part (common/train/slots.h) */
  pb_state_t *hist;    /* [max_turns] */
} game_slot_t;

struct pb_selfplay {
  const pb_game_t *g;
  pb_selfplay_opts_t o;
  game_slot_t *slot;
  pb_state_t *hist_pool;
  pb_state_t *qin;     /* [parallel] */
  int *qslot;          /* qin row -> slot */
  float *qout;         /* [parallel][num_actions] */
  pb_episodes_t done;  /* a run's episodes in the order they finished */
  uint64_t positions;
};

void pb_selfplay_config_opts(const pb_config_t *cfg, pb_selfplay_opts_t *o) {
  *o = (pb_selfplay_opts_t){cfg->train.selfplay_parallel, cfg->train.max_turns,
                            cfg->train.eps, cfg->train.alpha,
                            cfg->train.selfplay_temperature};
}

pb_selfplay_t *pb_selfplay_new(const pb_game_t *g, const pb_selfplay_opts_t *o,
                               pb_err_t *err) {
  if (g == NULL || o == NULL || o->parallel < 1 ||
      o->parallel > PB_SELFPLAY_MAX_PARALLEL || o->max_turns < 1 ||
      o->max_turns > PB_MAX_TURNS || !(o->eps >= 0.0) || o->eps > 1.0 ||
      !(o->alpha > 0.0) || !(o->temperature >= 0.01) ||
      !(o->temperature <= 100.0)) {
    pb_err_set(err, PB_EINVAL,
               "selfplay: need parallel 1..%d, max_turns 1..%d, "
               "eps in [0,1], alpha > 0, temperature in [0.01, 100]",
               PB_SELFPLAY_MAX_PARALLEL, PB_MAX_TURNS);
    return NULL;
  }
  pb_selfplay_t *sp = calloc(1, sizeof *sp);
  if (sp == NULL) goto nomem;
  sp->g = g;
  sp->o = *o;
  /* No game is longer than its max_turns (a game that could go on is cut
   * there): the buffers, and the episodes the wire takes, stop there. */
  if (sp->o.max_turns > g->max_turns) sp->o.max_turns = g->max_turns;
  size_t P = (size_t)o->parallel, T = (size_t)sp->o.max_turns;
  sp->slot = calloc(P, sizeof *sp->slot);
  sp->hist_pool = malloc(P * T * sizeof *sp->hist_pool);
  sp->qin = malloc(P * sizeof *sp->qin);
  sp->qslot = malloc(P * sizeof *sp->qslot);
  sp->qout = malloc(P * g->num_actions * sizeof *sp->qout);
  if (!sp->slot || !sp->hist_pool || !sp->qin || !sp->qslot || !sp->qout)
    goto nomem;
  for (size_t i = 0; i < P; i++) sp->slot[i].hist = sp->hist_pool + i * T;
  return sp;
nomem:
  pb_selfplay_destroy(&sp);
  pb_err_set(err, PB_ENOMEM, "selfplay: out of memory");
  return NULL;
}

void pb_selfplay_destroy(pb_selfplay_t **psp) {
  if (psp == NULL || *psp == NULL) return;
  pb_selfplay_t *sp = *psp;
  free(sp->slot);
  free(sp->hist_pool);
  free(sp->qin);
  free(sp->qslot);
  free(sp->qout);
  pb_episodes_free(&sp->done);
  free(sp);
  *psp = NULL;
}

double pb_selfplay_weights(const float *q, const uint8_t *acts, int na,
                           double temperature, double *p) {
  double mx = -INFINITY;
  for (int j = 0; j < na; j++)
    if (q[acts[j]] > mx) mx = q[acts[j]];
  if (!isfinite(mx)) mx = 0.0; /* all NaN/inf: fall back to uniform-ish */
  double sum = 0.0;
  for (int j = 0; j < na; j++) {
    double x = q[acts[j]];
    /* T = 1 computes exp(x - mx) exactly as before temperatures existed. */
    p[j] = isfinite(x) ? exp(temperature == 1.0 ? x - mx : (x - mx) / temperature)
                       : 0.0;
    sum += p[j];
  }
  if (!(sum > 0.0))
    for (int j = 0; j < na; j++) p[j] = 1.0, sum = na;
  return sum;
}

int pb_selfplay_pick(const float *q, const uint8_t *acts, int na, double eps,
                     double alpha, double temperature, pb_rng_t *rng) {
  double p[PB_MAX_ACTIONS], eta[PB_MAX_ACTIONS];
  if (na == 1) {
    /* Keep the RNG stream's use independent of the number of moves. */
    pb_rng_dirichlet(rng, alpha, 1, eta);
    (void)pb_rng_uniform(rng);
    return acts[0];
  }
  const double sum = pb_selfplay_weights(q, acts, na, temperature, p);
  pb_rng_dirichlet(rng, alpha, na, eta);
  double u = pb_rng_uniform(rng), acc = 0.0;
  for (int j = 0; j < na; j++) {
    acc += (1.0 - eps) * p[j] / sum + eps * eta[j];
    if (u < acc) return acts[j];
  }
  return acts[na - 1]; /* rounding left u above the total */
}

int pb_selfplay_run(pb_selfplay_t *sp, int n, uint64_t seed,
                    uint64_t first_index, const pb_evalfn_t *ev,
                    uint64_t version, pb_episodes_t *out, pb_err_t *err) {
  const pb_game_t *g = sp->g;
  const int P = sp->o.parallel, A = g->num_actions;
  const uint32_t T = (uint32_t)sp->o.max_turns;
  if (n <= 0) return 0;
  /* The episodes finish in an order fixed by the seed, the network and
   * `parallel`; the scheduler puts them in number order (slots.h). */
  pb_episodes_clear(&sp->done);
  pb_slots_t run;
  int rc = pb_slots_begin(&run, g, n, seed, first_index, err);
  if (rc != 0) return rc;
  for (int i = 0; i < P; i++) pb_slots_fill(&run, &sp->slot[i].s);
  while (pb_slots_running(&run) && rc == 0) {
    int nq = 0;
    for (int i = 0; i < P; i++)
      if (sp->slot[i].s.active) {
        sp->qin[nq] = sp->slot[i].s.cur;
        sp->qslot[nq++] = i;
      }
    rc = ev->qvalues(ev->ctx, sp->qin, nq, sp->qout, err);
    for (int r = 0; r < nq && rc == 0; r++) {
      game_slot_t *gs = &sp->slot[sp->qslot[r]];
      pb_slot_t *s = &gs->s;
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&s->cur, acts);
      gs->hist[s->n++] = s->cur;
      sp->positions++;
      int a = pb_selfplay_pick(&sp->qout[(size_t)r * A], acts, na, sp->o.eps,
                               sp->o.alpha, sp->o.temperature, &s->rng);
      int done = 0;
      float rew = g->step(&s->cur, a, &done);
      if (!done && s->n < T) continue;
      rc = pb_episodes_add(&sp->done, gs->hist, s->n,
                           done ? (int)lrintf(rew) : 0, version, err);
      if (rc != 0) break;
      pb_slots_finish(&run, s);
      pb_slots_fill(&run, s);
    }
  }
  return pb_slots_end(&run, &sp->done, out, rc, err);
}

uint64_t pb_selfplay_positions(const pb_selfplay_t *sp) {
  return sp->positions;
}

/* Whether some legal move of s leads to next. */
static int has_child(const pb_game_t *g, const pb_state_t *s,
                     const pb_state_t *next) {
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(s, acts);
  for (int k = 0; k < na; k++) {
    pb_state_t c = *s;
    int done = 0;
    g->step(&c, acts[k], &done);
    if (!done && memcmp(&c, next, sizeof c) == 0) return 1;
  }
  return 0;
}

/* Whether the last move of an episode from s can end as announced. */
static int can_end(const pb_game_t *g, const pb_state_t *s, int reward,
                   int cut) {
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(s, acts);
  for (int k = 0; k < na; k++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[k], &done);
    if (done ? (int)lrintf(r) == reward : cut && reward == 0) return 1;
  }
  return 0;
}

int pb_selfplay_check(const pb_game_t *g, const pb_state_t *states,
                      uint32_t n, int final_reward, uint32_t max_turns,
                      pb_err_t *err) {
  uint32_t T = max_turns;
  if (T == 0 || T > (uint32_t)g->max_turns) T = (uint32_t)g->max_turns;
  if (n == 0 || n > T)
    return pb_err_set(err, PB_ECORRUPT,
                      "an episode of %u moves (1 to %u in this run)", n, T);
  pb_state_t s0;
  g->reset(&s0);
  if (memcmp(&states[0], &s0, sizeof s0) != 0)
    return pb_err_set(err, PB_ECORRUPT,
                      "an episode that does not start at the initial position");
  for (uint32_t i = 0; i + 1 < n; i++) {
    if (!has_child(g, &states[i], &states[i + 1]))
      return pb_err_set(err, PB_ECORRUPT,
                        "ply %u of an episode does not follow from ply %u by "
                        "a legal move that leaves the game going",
                        i + 1, i);
  }
  if (!can_end(g, &states[n - 1], final_reward, n == T))
    return pb_err_set(err, PB_ECORRUPT,
                      "an episode of %u moves announced as %+d: no legal move "
                      "of its last position ends the game so (and it is not "
                      "cut at max_turns %u with a draw)",
                      n, final_reward, T);
  return 0;
}
