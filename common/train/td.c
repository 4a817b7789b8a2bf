/* td.c - TD(0) updates and the schedules of algorithm td (see td.h).
 *
 * Workload: every position of an iteration's games once, in order; the
 * targets' look-ahead (n - 1 plies) costs more than the updates. */
#include "td.h"

#include <math.h>
#include <string.h>

#include "ckpt.h"

void pb_td_opts_from_config(const pb_config_t *c, pb_td_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->ply = c->td.ply;
  o->alpha = c->td.alpha;
  o->alpha_decay = c->td.alpha_decay;
  o->epsilon = c->td.epsilon;
  o->epsilon_decay = c->td.epsilon_decay;
  o->decay_every = c->td.decay_every_games;
}

static double decayed(double x0, double factor, int every, uint64_t game) {
  uint64_t k = game / (uint64_t)(every > 0 ? every : 1);
  return x0 * pow(factor, (double)k);
}

double pb_td_alpha(const pb_td_opts_t *o, uint64_t game) {
  return decayed(o->alpha, o->alpha_decay, o->decay_every, game);
}

double pb_td_epsilon(const pb_td_opts_t *o, uint64_t game) {
  return decayed(o->epsilon, o->epsilon_decay, o->decay_every, game);
}

double pb_td_update(pb_linear_t *lin, const pb_state_t *s, double target,
                    double alpha) {
  float x[PB_LINEAR_MAX_FEATURES];
  pb_linear_features(lin, s, x);
  double f = lin->bias;
  for (int i = 0; i < lin->n_features; i++) f += (double)lin->w[i] * x[i];
  const double v = tanh(f), delta = target - v;
  const double step = alpha * delta * (1.0 - v * v);
  for (int i = 0; i < lin->n_features; i++)
    lin->w[i] = (float)(lin->w[i] + step * x[i]);
  lin->bias = (float)(lin->bias + step);
  return delta;
}

uint32_t pb_td_weights_crc(const pb_linear_t *lin) {
  uint32_t crc = pb_crc32(0, &lin->bias, sizeof lin->bias);
  return pb_crc32(crc, lin->w, sizeof lin->w[0] * (size_t)lin->n_features);
}

void pb_td_learn(pb_linear_t *lin, const pb_td_opts_t *o,
                 const pb_episodes_t *eps, uint64_t first_game,
                 pb_td_stats_t *st) {
  pb_td_stats_t local;
  if (st == NULL) st = &local;
  memset(st, 0, sizeof *st);
  double sum = 0;
  for (size_t k = 0; k < eps->n_eps; k++) {
    const double alpha = pb_td_alpha(o, first_game + k);
    if (k == 0) st->alpha_first = alpha;
    st->alpha_last = alpha;
    const pb_state_t *s = eps->states + eps->start[k];
    const uint32_t n = eps->len[k];
    for (uint32_t t = 0; t < n; t++) {
      double target =
          t + 1 < n ? -pb_nply_value(lin, &s[t + 1], o->ply - 1, &st->search)
                    : (double)eps->reward[k];
      sum += fabs(pb_td_update(lin, &s[t], target, alpha));
      st->updates++;
    }
  }
  st->abs_delta_mean = st->updates ? sum / (double)st->updates : 0.0;
}
