/* spotcheck.c - see spotcheck.h. */
#include "spotcheck.h"

#include <math.h>
#include <stdlib.h>

#include "abtargets.h"
#include "beam_search.h"
#include "neteval.h"

struct pb_spot {
  const pb_game_t *g;
  int max_depth, parallel;
  pb_beam_t *beam;
  pb_abtargets_t *abt; /* set: search as abnet targets instead */
  pb_neteval_t *ne;
};

pb_spot_t *pb_spot_new(const pb_game_t *g, int expansions, int max_depth,
                       int parallel, int max_batch, uint32_t cache_entries,
                       pb_err_t *err) {
  pb_spot_t *s = calloc(1, sizeof *s);
  if (s == NULL) {
    pb_err_set(err, PB_ENOMEM, "spot check: out of memory");
    return NULL;
  }
  s->g = g;
  s->max_depth = max_depth;
  s->parallel = parallel;
  s->beam = pb_beam_new(g, expansions, max_depth, parallel, err);
  if (s->beam != NULL) s->ne = pb_neteval_new(g, max_batch, cache_entries, err);
  if (s->ne == NULL) pb_spot_destroy(&s);
  return s;
}

void pb_spot_destroy(pb_spot_t **s) {
  if (s == NULL || *s == NULL) return;
  pb_beam_destroy(&(*s)->beam);
  pb_abtargets_destroy(&(*s)->abt);
  pb_neteval_destroy(&(*s)->ne);
  free(*s);
  *s = NULL;
}

int pb_spot_set_abnet(pb_spot_t *s, uint64_t nodes, pb_err_t *err) {
  pb_err_t e;
  pb_err_clear(&e);
  pb_abtargets_t *t =
      pb_abtargets_new(s->g, s->max_depth, nodes, s->parallel, &e);
  if (t == NULL) return pb_err_set(err, e.code, "%s", e.msg);
  pb_abtargets_destroy(&s->abt);
  s->abt = t;
  return 0;
}

int pb_spot_search(pb_spot_t *s, pb_nn_t *v, pb_nn_t *q,
                   const pb_state_t *states, int n, float *out, pb_err_t *err) {
  pb_neteval_bind(s->ne, v, q);
  pb_evalfn_t ev = pb_neteval_fn(s->ne);
  int rc = n <= 0       ? 0
           : s->abt != NULL ? pb_abtargets_run(s->abt, states, n, &ev, out, err)
                           : pb_beam_run(s->beam, states, n, &ev, out, err);
  pb_neteval_bind(s->ne, NULL, NULL); /* it must not keep borrowed nets */
  return rc;
}

float pb_spot_diff(const pb_game_t *g, const pb_state_t *st,
                   const float *mine, const float *theirs) {
  uint8_t acts[PB_MAX_ACTIONS], legal[PB_MAX_ACTIONS] = {0};
  int na = g->legal(st, acts);
  for (int k = 0; k < na; k++) legal[acts[k]] = 1;
  float worst = 0.0f;
  for (int a = 0; a < g->num_actions; a++) {
    float d;
    if (!isfinite(theirs[a]) || (!legal[a] && theirs[a] != 0.0f))
      d = 2.0f;
    else if (!legal[a])
      d = 0.0f;
    else
      d = fabsf(mine[a] - theirs[a]);
    if (d > worst) worst = d;
  }
  return worst;
}

float pb_spot_bias(const pb_game_t *g, const pb_state_t *st, const float *mine,
                   const float *theirs) {
  uint8_t acts[PB_MAX_ACTIONS];
  const int n = g->legal(st, acts);
  if (n <= 0) return 0.0f;
  double sum = 0;
  for (int k = 0; k < n; k++) {
    const float t = theirs[acts[k]];
    if (!isfinite(t)) return 2.0f;
    sum += (double)t - (double)mine[acts[k]];
  }
  return (float)(sum / n);
}

int pb_spot_count(pb_spot_tally_t *t, float diff, float bias,
                  double tolerance) {
  const double keep = 1.0 - 1.0 / PB_SPOT_RECENT;
  const int bad = (double)diff > tolerance;
  t->checked++;
  t->bias_sum += bias;
  t->bias_sq += (double)bias * bias;
  t->r_checked = t->r_checked * keep + 1.0;
  t->r_disagree = t->r_disagree * keep + bad;
  t->r_bias_sum = t->r_bias_sum * keep + bias;
  t->r_bias_sq = t->r_bias_sq * keep + (double)bias * bias;
  if (diff > t->max_diff) t->max_diff = diff;
  if (bad) t->disagree++;
  return bad;
}

int pb_spot_failed(const pb_spot_tally_t *t, double max_disagree) {
  if (t->disagree < PB_SPOT_MIN_DISAGREE) return 0;
  return (double)t->disagree > max_disagree * (double)t->checked ||
         (t->r_disagree >= PB_SPOT_RECENT_MIN &&
          t->r_disagree > max_disagree * t->r_checked);
}

double pb_spot_mean_bias(const pb_spot_tally_t *t) {
  return t->checked > 0 ? t->bias_sum / (double)t->checked : 0.0;
}

double pb_spot_recent_bias(const pb_spot_tally_t *t) {
  return t->r_checked > 0 ? t->r_bias_sum / t->r_checked : 0.0;
}

/* The variance of the mean of n biases summing to sum, their squares to
 * sq (0 when too few). */
static double var_mean(double n, double sum, double sq) {
  if (n < 2) return 0.0;
  const double m = sum / n;
  double var = (sq - n * m * m) / (n - 1);
  return var > 0 ? var / n : 0.0;
}

/* The bias test of n biases (sum, sq) against the others' tally. */
static int leans(double n, double sum, double sq,
                 const pb_spot_tally_t *others, double min_effect) {
  if (n < PB_SPOT_BIAS_MIN) return 0;
  const double mean = sum / n;
  if (!(fabs(mean) >= min_effect)) return 0;
  const double d = mean - pb_spot_mean_bias(others);
  if (!(fabs(d) >= min_effect)) return 0;
  /* Honest biases are 0 to the last bits: a floor on the error keeps the
   * test's ratio finite, and min_effect decides there. */
  double se = sqrt(var_mean(n, sum, sq) +
                   var_mean((double)others->checked, others->bias_sum,
                            others->bias_sq));
  if (se < 1e-9) se = 1e-9;
  return fabs(d) / se >= PB_SPOT_BIAS_Z;
}

int pb_spot_biased(const pb_spot_tally_t *t, const pb_spot_tally_t *others,
                   double min_effect) {
  if (t->checked < PB_SPOT_BIAS_MIN) return 0;
  return leans((double)t->checked, t->bias_sum, t->bias_sq, others,
               min_effect) ||
         leans(t->r_checked + 1e-9, t->r_bias_sum, t->r_bias_sq, others,
               min_effect);
}

size_t pb_spot_sample(pb_rng_t *rng, size_t n, const uint32_t *counts,
                      uint64_t total, size_t distinct, double share,
                      uint32_t *idx, size_t cap) {
  if (n == 0 || !(share > 0.0) || cap == 0) return 0;
  if (total == 0) total = 1;
  /* A position seen once is never "frequent", however small the
   * iteration. */
  double always = PB_SPOT_ALWAYS * (double)total;
  if (always < 2.0) always = 2.0;
  const double per = share * (double)distinct / (double)total;
  size_t k = 0;
  for (size_t i = 0; i < n && k < cap; i++) {
    const double c = counts != NULL ? counts[i] : 1.0;
    const double p = per * c > share ? per * c : share;
    if (c >= always || pb_rng_uniform(rng) < p) idx[k++] = (uint32_t)i;
  }
  if (k == 0) idx[k++] = pb_rng_below(rng, (uint32_t)n);
  return k;
}
