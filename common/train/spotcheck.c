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

int pb_spot_count(pb_spot_tally_t *t, float diff, double tolerance) {
  t->checked++;
  if (diff > t->max_diff) t->max_diff = diff;
  if ((double)diff > tolerance) {
    t->disagree++;
    return 1;
  }
  return 0;
}

int pb_spot_failed(const pb_spot_tally_t *t, double max_disagree) {
  return t->disagree >= PB_SPOT_MIN_DISAGREE &&
         (double)t->disagree > max_disagree * (double)t->checked;
}

size_t pb_spot_sample(pb_rng_t *rng, size_t n, double share, uint32_t *idx,
                      size_t cap) {
  if (n == 0 || !(share > 0.0) || cap == 0) return 0;
  size_t k = 0;
  for (size_t i = 0; i < n && k < cap; i++)
    if (pb_rng_uniform(rng) < share) idx[k++] = (uint32_t)i;
  if (k == 0) idx[k++] = pb_rng_below(rng, (uint32_t)n);
  return k;
}
