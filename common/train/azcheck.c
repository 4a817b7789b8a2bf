/* azcheck.c - the check of AlphaZero self-play (azcheck.h). */
#include "azcheck.h"
#include "bounds.h"
#include "playcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int all_zero(const float *row, int A) {
  for (int a = 0; a < A; a++)
    if (row[a] != 0.0f) return 0;
  return 1;
}

/* The most visited action of a row: its argmax, ties to the lowest (as
 * azplay.c's choose); -1 for a row without mass. */
static int argmax(const float *row, int A) {
  int best = -1;
  for (int a = 0; a < A; a++)
    if (row[a] > 0 && (best < 0 || row[a] > row[best])) best = a;
  return best;
}

/* What is seen of move a from s: 0 the game went on (to *next), 1 + k for
 * an end with the mover's reward k - 1 (k = 0, 1, 2). */
static int outcome(const pb_game_t *g, const pb_state_t *s, int a,
                   pb_state_t *next) {
  *next = *s;
  int over = 0;
  const float r = g->step(next, a, &over);
  if (!over) return 0;
  const long k = lrintf(r);
  return 1 + (k < 0 ? 0 : k > 0 ? 2 : 1);
}

/* One position i of an episode of n; `next` the position after it (NULL
 * at the last). Adds to t; 1 for an impossible move (why filled), -1 when
 * no legal move gives next. */
static int check_one(const pb_game_t *g, const pb_azplay_opts_t *o,
                     const pb_state_t *s, const pb_state_t *next, uint32_t i,
                     uint32_t n, int final_reward, const float *row,
                     pb_az_tally_t *t, char *why, size_t cap) {
  const int A = g->num_actions;
  const int cap_on = o->small_simulations > 0 && o->full_fraction < 1.0;
  const int T = o->max_turns < g->max_turns ? o->max_turns : g->max_turns;
  const int cut = next == NULL && n >= (uint32_t)T; /* azplay's bound */
  const int fin = 1 + (final_reward < 0 ? 0 : final_reward > 0 ? 2 : 1);
  uint8_t acts[PB_MAX_ACTIONS];
  const int na = g->legal(s, acts);
  int seen = -1, ends[PB_MAX_ACTIONS];
  pb_state_t c;
  for (int j = 0; j < na; j++) {
    ends[j] = outcome(g, s, acts[j], &c);
    if (next != NULL && seen < 0 && ends[j] == 0 &&
        memcmp(&c, next, sizeof c) == 0)
      seen = j;
  }
  if (next != NULL && seen < 0) return -1;
  t->rows++;
  if (all_zero(row, A)) {
    t->zero_rows++;
    if (cap_on) return 0; /* a fast search: its move is not shown */
    if (why)
      snprintf(why, cap,
               "ply %u has a policy row of zeros (a fast search), but this "
               "run has no playout cap",
               i);
    t->impossible++;
    return 1;
  }
  if (o->root.rule == PB_MCTS_GUMBEL) return 0; /* the pick is not shown */
  /* Whether move j is what was seen. */
#define SEEN(j)                                                               \
  (next != NULL ? (j) == seen                                                 \
                : ends[j] == fin || (cut && fin == 2 && ends[j] == 0))
  if ((int)i >= o->temp_moves) {
    const int best = argmax(row, A);
    int j = 0;
    while (j < na && acts[j] != best) j++;
    if (j < na && SEEN(j)) return 0;
    if (why)
      snprintf(why, cap,
               "ply %u, past temp_moves %d, did not play action %d, the "
               "most visited of its own policy row (%.3f)",
               i, o->temp_moves, best, best >= 0 ? (double)row[best] : 0.0);
    t->impossible++;
    return 1;
  }
  /* Drawn from the row: its classes (each move that goes on, the ends by
   * reward; at a cut, what goes on and a draw look alike). */
  double sum = 0.0;
  for (int j = 0; j < na; j++) sum += row[acts[j]];
  double cls[PB_MAX_ACTIONS + 3], endp[3] = {0, 0, 0}, px = 0.0;
  int nc = 0;
  for (int j = 0; j < na; j++) {
    const double p = row[acts[j]] / sum;
    if (SEEN(j)) px += p;
    if (ends[j] == 0 && !cut) {
      cls[nc++] = p;
    } else {
      endp[ends[j] == 0 ? 1 : ends[j] - 1] += p;
    }
  }
#undef SEEN
  for (int k = 0; k < 3; k++)
    if (endp[k] > 0.0) cls[nc++] = endp[k];
  if (!(px > 0.0)) {
    if (why)
      snprintf(why, cap,
               "ply %u, within temp_moves %d, played a move its own policy "
               "row gives no mass",
               i, o->temp_moves);
    t->impossible++;
    return 1;
  }
  double mean, var;
  pb_play_moments(cls, nc, &mean, &var);
  if (var > 0.0) {
    t->moves++;
    t->m_excess += pb_play_nlog(px) - mean;
    t->m_var += var;
  }
  return 0;
}

int pb_az_check_episode(const pb_game_t *g, const pb_azplay_opts_t *o,
                        const pb_state_t *states, uint32_t n, int final_reward,
                        const float *policy, pb_az_tally_t *t, char *why,
                        size_t cap, pb_err_t *err) {
  const int A = g->num_actions;
  pb_az_tally_t e = {.episodes = 1};
  int bad = 0;
  for (uint32_t i = 0; i < n; i++) {
    const int rc = check_one(g, o, &states[i],
                             i + 1 < n ? &states[i + 1] : NULL, i, n,
                             final_reward, policy + (size_t)i * A, &e,
                             bad ? NULL : why, cap);
    if (rc < 0)
      return pb_err_set(err, PB_ECORRUPT,
                        "ply %u of an episode does not follow from ply %u",
                        i + 1, i);
    bad |= rc;
  }
  pb_az_add(t, &e);
  return 0;
}

double pb_az_rows_z(const pb_az_tally_t *t) {
  return t->positions > 0 && t->r_sq > 0.0 ? t->r_sum / sqrt(t->r_sq) : 0.0;
}

double pb_az_moves_z(const pb_az_tally_t *t) {
  return t->moves > 0 && t->m_var > 0.0 ? t->m_excess / sqrt(t->m_var) : 0.0;
}

double pb_az_zeros_z(const pb_az_tally_t *t, const pb_azplay_opts_t *o) {
  const double f = o->full_fraction;
  if (o->small_simulations <= 0 || !(f > 0.0 && f < 1.0) || t->rows == 0)
    return 0.0;
  const double n = (double)t->rows;
  return ((double)t->zero_rows - n * (1.0 - f)) / sqrt(n * f * (1.0 - f));
}

int pb_az_verdict(const pb_az_tally_t *t, const pb_azplay_opts_t *o) {
  if (t->impossible > 0) return PB_AZ_BAD_MOVE;
  if (t->positions >= PB_AZ_MIN_ROWS && pb_az_rows_z(t) >= PB_AZ_Z)
    return PB_AZ_BAD_ROWS;
  if (t->moves >= PB_AZ_MIN_MOVES && pb_az_moves_z(t) >= PB_AZ_Z)
    return PB_AZ_BAD_DRAWS;
  if (t->rows >= PB_AZ_MIN_MOVES && pb_az_zeros_z(t, o) >= PB_AZ_Z)
    return PB_AZ_BAD_ZEROS;
  return PB_AZ_OK;
}

void pb_az_add(pb_az_tally_t *a, const pb_az_tally_t *b) {
  a->episodes += b->episodes;
  a->impossible += b->impossible;
  a->rows += b->rows;
  a->zero_rows += b->zero_rows;
  a->moves += b->moves;
  a->m_excess += b->m_excess;
  a->m_var += b->m_var;
  a->positions += b->positions;
  a->r_sum += b->r_sum;
  a->r_sq += b->r_sq;
}

static uint64_t less(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

void pb_az_sub(pb_az_tally_t *a, const pb_az_tally_t *b) {
  a->episodes = less(a->episodes, b->episodes);
  a->impossible = less(a->impossible, b->impossible);
  a->rows = less(a->rows, b->rows);
  a->zero_rows = less(a->zero_rows, b->zero_rows);
  a->moves = less(a->moves, b->moves);
  a->m_excess -= b->m_excess;
  a->m_var = a->m_var > b->m_var ? a->m_var - b->m_var : 0.0;
  a->positions = less(a->positions, b->positions);
  a->r_sum -= b->r_sum;
  a->r_sq = a->r_sq > b->r_sq ? a->r_sq - b->r_sq : 0.0;
}

double pb_az_tv(const float *a, const float *b, int num_actions) {
  double d = 0.0;
  for (int k = 0; k < num_actions; k++) d += fabs((double)a[k] - b[k]);
  return 0.5 * d;
}

void pb_az_add_rows(pb_az_tally_t *t, const double *x, int n) {
  for (int i = 0; i < n; i++) {
    t->positions++;
    t->r_sum += x[i];
    t->r_sq += x[i] * x[i];
  }
}

/* ---- the re-run ---------------------------------------------------------- */

struct pb_azcheck {
  const pb_game_t *g;
  int max;
  pb_mcts_t *mcts;
  pb_state_t *roots; /* [2 max]: each position twice */
  pb_rng_t *rng;     /* [2 max] */
  pb_rng_t **rngs;   /* [2 max] */
  float *visits, *target; /* [2 max][A] */
};

pb_azcheck_t *pb_azcheck_new(const pb_game_t *g, const pb_azplay_opts_t *o,
                             int max_positions, pb_err_t *err) {
  if (g == NULL || o == NULL || max_positions < 1 ||
      max_positions > PB_SELFPLAY_MAX_PARALLEL) {
    pb_err_set(err, PB_EINVAL, "azcheck: need max_positions 1..%d",
               PB_SELFPLAY_MAX_PARALLEL);
    return NULL;
  }
  if (o->root.rule != PB_MCTS_GUMBEL && !(o->eps > 0.0)) {
    pb_err_set(err, PB_EINVAL,
               "azcheck: a PUCT search without root noise (eps 0) is "
               "deterministic: two searches cannot tell an honest actor's "
               "numerics from a forged row");
    return NULL;
  }
  const int P = 2 * max_positions;
  pb_mcts_opts_t mo = {o->simulations, o->c_puct, o->eps, o->alpha, P,
                       o->discount};
  pb_mcts_t *m = pb_mcts_new_ex(g, &mo, &o->root, err);
  if (m == NULL) return NULL;
  pb_azcheck_t *p = calloc(1, sizeof *p);
  if (p == NULL) {
    pb_mcts_destroy(&m);
    pb_err_set(err, PB_ENOMEM, "azcheck: out of memory");
    return NULL;
  }
  const size_t A = (size_t)g->num_actions;
  p->g = g;
  p->max = max_positions;
  p->mcts = m;
  p->roots = malloc((size_t)P * sizeof *p->roots);
  p->rng = malloc((size_t)P * sizeof *p->rng);
  p->rngs = malloc((size_t)P * sizeof *p->rngs);
  p->visits = malloc((size_t)P * A * sizeof *p->visits);
  p->target = malloc((size_t)P * A * sizeof *p->target);
  if (!p->roots || !p->rng || !p->rngs || !p->visits || !p->target) {
    pb_azcheck_destroy(&p);
    pb_err_set(err, PB_ENOMEM, "azcheck: out of memory");
    return NULL;
  }
  for (int i = 0; i < P; i++) p->rngs[i] = &p->rng[i];
  return p;
}

void pb_azcheck_destroy(pb_azcheck_t **pp) {
  if (pp == NULL || *pp == NULL) return;
  pb_azcheck_t *p = *pp;
  pb_mcts_destroy(&p->mcts);
  free(p->roots);
  free(p->rng);
  free(p->rngs);
  free(p->visits);
  free(p->target);
  free(p);
  *pp = NULL;
}

int pb_azcheck_run(pb_azcheck_t *p, const pb_state_t *states,
                   const float *claimed, int n, const pb_mcts_evalfn_t *ev,
                   pb_rng_t *rng, double *x, pb_err_t *err) {
  if (n < 0 || n > p->max)
    return pb_err_set(err, PB_EINVAL, "azcheck: %d positions (at most %d)",
                      n, p->max);
  if (n == 0) return 0;
  const int A = p->g->num_actions;
  for (int i = 0; i < 2 * n; i++) {
    p->roots[i] = states[i / 2];
    const uint64_t seed = pb_rng_next(rng), stream = pb_rng_next(rng);
    pb_rng_seed(&p->rng[i], seed, stream);
  }
  pb_mcts_io_t io = {NULL, NULL, p->visits, p->target, NULL, NULL};
  int rc = pb_mcts_search(p->mcts, p->roots, 2 * n, ev, p->rngs, &io, err);
  if (rc != 0) return rc;
  for (int i = 0; i < n; i++) {
    const float *c = claimed + (size_t)i * A;
    const float *pi1 = p->target + (size_t)(2 * i) * A;
    const float *pi2 = p->target + (size_t)(2 * i + 1) * A;
    x[i] = pb_az_tv(c, pi1, A) - pb_az_tv(pi2, pi1, A);
  }
  return 0;
}
