/* playcheck.c - the surprise of self-play moves (playcheck.h). */
#include "playcheck.h"

#include <math.h>
#include <string.h>

#include "selfplay.h"

/* The policy p over the legal moves acts[0..na): (1 - eps) softmax(Q / T)
 * + eps / na, as pb_selfplay_pick draws (over its noise). */
static void policy(const float *q, const uint8_t *acts, int na, double eps,
                   double temperature, double *p) {
  const double sum = pb_selfplay_weights(q, acts, na, temperature, p);
  for (int j = 0; j < na; j++) p[j] = (1.0 - eps) * p[j] / sum + eps / na;
}

double pb_play_nlog(double p) { return p > 0.0 ? -log(p) : 745.0; }

void pb_play_moments(const double *c, int n, double *mean, double *var) {
  double h = 0.0, h2 = 0.0;
  for (int j = 0; j < n; j++)
    if (c[j] > 0.0) {
      const double l = -log(c[j]);
      h += c[j] * l;
      h2 += c[j] * l * l;
    }
  *mean = h;
  *var = h2 > h * h ? h2 - h * h : 0.0;
}

double pb_play_surprise(const float *q, const uint8_t *acts, int na, int k,
                        double eps, double temperature, double *mean,
                        double *var) {
  *mean = *var = 0.0;
  if (na < 2 || k < 0 || k >= na) return 0.0;
  double p[PB_MAX_ACTIONS];
  policy(q, acts, na, eps, temperature, p);
  pb_play_moments(p, na, mean, var);
  return pb_play_nlog(p[k]);
}

/* One position of an episode: what is seen of its move is a class (a move
 * that leaves the game going: that move; a move that ends it: only its
 * reward, since the episode keeps no terminal position; at a cut at
 * max_turns, only that the game went on). Adds the surprise of the class
 * seen, minus its mean over the policy, to e. `next` is the position that
 * followed, or NULL at the last one, whose move ended the game with the
 * mover's reward `reward` (or went on, cut: no move ends it so). 0, or -1
 * when no legal move gives `next`. */
static int score_one(const pb_game_t *g, const pb_state_t *s,
                     const pb_state_t *next, int reward, const float *q,
                     double eps, double temperature, pb_play_tally_t *e) {
  uint8_t acts[PB_MAX_ACTIONS];
  const int na = g->legal(s, acts);
  double p[PB_MAX_ACTIONS], cls[PB_MAX_ACTIONS + 4];
  int ends[PB_MAX_ACTIONS]; /* 0: goes on; 1 + (reward + 1): ends */
  int seen = -1, nc = 0;
  double going = 0.0, end_p[3] = {0.0, 0.0, 0.0};
  policy(q, acts, na, eps, temperature, p);
  for (int j = 0; j < na; j++) {
    pb_state_t c = *s;
    int done = 0;
    const float r = g->step(&c, acts[j], &done);
    ends[j] = done ? 1 + ((int)lrintf(r) < 0 ? 0 : (int)lrintf(r) > 0 ? 2 : 1)
                   : 0;
    if (ends[j]) {
      end_p[ends[j] - 1] += p[j];
    } else {
      going += p[j];
      if (next != NULL && seen < 0 && memcmp(&c, next, sizeof c) == 0)
        seen = j;
    }
  }
  if (next != NULL && seen < 0) return -1;
  const int end_class = reward < 0 ? 0 : reward > 0 ? 2 : 1;
  const int cut = next == NULL && !(end_p[end_class] > 0.0);
  if (na < 2 || (cut && end_p[0] + end_p[1] + end_p[2] == 0.0))
    return 0; /* nothing to learn */
  double x;
  if (!cut) {
    for (int j = 0; j < na; j++)
      if (!ends[j]) cls[nc++] = p[j];
    x = next != NULL ? pb_play_nlog(p[seen])
                     : pb_play_nlog(end_p[end_class]);
  } else {
    cls[nc++] = going;
    x = pb_play_nlog(going);
  }
  for (int k = 0; k < 3; k++)
    if (end_p[k] > 0.0) cls[nc++] = end_p[k];
  double mean, var;
  pb_play_moments(cls, nc, &mean, &var);
  e->moves++;
  e->excess += x - mean;
  e->var += var;
  return 0;
}

int pb_play_score(const pb_game_t *g, const pb_state_t *states, uint32_t n,
                  int final_reward, const float *q, double eps,
                  double temperature, pb_play_tally_t *t, pb_err_t *err) {
  const int A = g->num_actions;
  pb_play_tally_t e = {.episodes = 1};
  for (uint32_t i = 0; i < n; i++)
    if (score_one(g, &states[i], i + 1 < n ? &states[i + 1] : NULL,
                  final_reward, q + (size_t)i * A, eps, temperature,
                  &e) != 0)
      return pb_err_set(err, PB_ECORRUPT,
                        "ply %u of an episode does not follow from ply %u",
                        i + 1, i);
  e.r_moves = (double)e.moves; /* one episode: no decay within it */
  e.r_excess = e.excess;
  e.r_var = e.var;
  pb_play_add(t, &e);
  return 0;
}

double pb_play_z(const pb_play_tally_t *t) {
  return t->moves > 0 && t->var > 0.0 ? t->excess / sqrt(t->var) : 0.0;
}

double pb_play_recent_z(const pb_play_tally_t *t) {
  return t->r_moves > 0 && t->r_var > 0.0 ? t->r_excess / sqrt(t->r_var)
                                           : 0.0;
}

int pb_play_impossible(const pb_play_tally_t *t) {
  return (t->moves >= PB_PLAY_MIN_MOVES && pb_play_z(t) >= PB_PLAY_Z) ||
         (t->r_moves >= PB_PLAY_MIN_MOVES && pb_play_recent_z(t) >= PB_PLAY_Z);
}

void pb_play_add(pb_play_tally_t *a, const pb_play_tally_t *b) {
  const double keep = pow(1.0 - 1.0 / PB_PLAY_RECENT, (double)b->moves);
  a->r_moves = a->r_moves * keep + b->r_moves;
  a->r_excess = a->r_excess * keep + b->r_excess;
  a->r_var = a->r_var * keep * keep + b->r_var;
  a->moves += b->moves;
  a->episodes += b->episodes;
  a->excess += b->excess;
  a->var += b->var;
}

void pb_play_sub(pb_play_tally_t *a, const pb_play_tally_t *b) {
  a->moves = a->moves > b->moves ? a->moves - b->moves : 0;
  a->episodes = a->episodes > b->episodes ? a->episodes - b->episodes : 0;
  a->excess -= b->excess;
  a->var = a->var > b->var ? a->var - b->var : 0.0;
  a->r_moves = a->r_moves > b->r_moves ? a->r_moves - b->r_moves : 0.0;
  a->r_excess -= b->r_excess;
  a->r_var = a->r_var > b->r_var ? a->r_var - b->r_var : 0.0;
}

int pb_outcome_part(uint64_t n, double sum, double sq, uint64_t rn,
                    double rsum, double rsq, double *excess, double *var) {
  *excess = *var = 0.0;
  if (n == 0 || rn == 0) return 0;
  const double N = (double)n, R = (double)rn, E = N + R;
  const double m = (sum + rsum) / E;
  double pool = (sq + rsq) / E - m * m;
  if (pool < 1e-6) pool = 1e-6;
  *excess = sum - N * rsum / R;
  *var = pool * N * (1.0 + N / R);
  return 1;
}
