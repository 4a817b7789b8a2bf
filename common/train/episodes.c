#include "episodes.h"
#include "invariant.h"

#include <stdlib.h>
#include <string.h>

void pb_episodes_init(pb_episodes_t *e) { memset(e, 0, sizeof *e); }

void pb_episodes_free(pb_episodes_t *e) {
  free(e->states);
  free(e->start);
  free(e->len);
  free(e->reward);
  free(e->version);
  free(e->policy);
  pb_episodes_init(e);
}

void pb_episodes_clear(pb_episodes_t *e) {
  e->n_states = 0;
  e->n_eps = 0;
  e->policy_width = 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * elem);
  if (q == NULL) return -1;
  *p = q;
  *cap = n;
  return 0;
}

static int add(pb_episodes_t *e, const pb_state_t *states, uint32_t n,
               int reward, uint64_t version, const float *policy, int width,
               pb_err_t *err) {
  if (reward < -1 || reward > 1)
    return pb_err_set(err, PB_EINVAL, "episodes: reward %d not in -1..1",
                      reward);
  if (e->n_eps > 0 && width != e->policy_width)
    return pb_err_set(err, PB_EINVAL,
                      "episodes: an episode %s policy targets added to a "
                      "store %s them",
                      width ? "with" : "without", width ? "without" : "with");
  if (width > 0) {
    size_t cp = e->cap_policy;
    if (grow((void **)&e->policy, &cp, (e->n_states + n) * (size_t)width,
             sizeof *e->policy))
      return pb_err_set(err, PB_ENOMEM, "episodes: out of memory");
    e->cap_policy = cp;
    memcpy(&e->policy[e->n_states * (size_t)width], policy,
           (size_t)n * width * sizeof *policy);
  }
  e->policy_width = width;
  size_t cs = e->cap_states;
  if (grow((void **)&e->states, &cs, e->n_states + n, sizeof *e->states))
    return pb_err_set(err, PB_ENOMEM, "episodes: out of memory");
  e->cap_states = cs;
  if (e->n_eps + 1 > e->cap_eps) {
    size_t c = e->cap_eps ? e->cap_eps * 2 : 64;
    uint32_t *st = realloc(e->start, c * sizeof *st);
    if (st) e->start = st;
    uint32_t *ln = realloc(e->len, c * sizeof *ln);
    if (ln) e->len = ln;
    int8_t *rw = realloc(e->reward, c * sizeof *rw);
    if (rw) e->reward = rw;
    uint64_t *vs = realloc(e->version, c * sizeof *vs);
    if (vs) e->version = vs;
    if (!st || !ln || !rw || !vs)
      return pb_err_set(err, PB_ENOMEM, "episodes: out of memory");
    e->cap_eps = c;
  }
  memcpy(&e->states[e->n_states], states, (size_t)n * sizeof *states);
  e->start[e->n_eps] = (uint32_t)e->n_states;
  e->len[e->n_eps] = n;
  e->reward[e->n_eps] = (int8_t)reward;
  e->version[e->n_eps] = version;
  e->n_eps++;
  e->n_states += n;
  return 0;
}

int pb_episodes_add(pb_episodes_t *e, const pb_state_t *states, uint32_t n,
                    int reward, uint64_t version, pb_err_t *err) {
  return add(e, states, n, reward, version, NULL, 0, err);
}

int pb_episodes_add_policy(pb_episodes_t *e, const pb_state_t *states,
                           uint32_t n, int reward, uint64_t version,
                           const float *policy, int width, pb_err_t *err) {
  if (width < 1 || policy == NULL)
    return pb_err_set(err, PB_EINVAL, "episodes: policy width %d", width);
  return add(e, states, n, reward, version, policy, width, err);
}

const float *pb_episodes_policy(const pb_episodes_t *e, size_t k, uint32_t t) {
  if (e->policy_width == 0) return NULL;
  return &e->policy[(e->start[k] + (size_t)t) * e->policy_width];
}

int pb_episodes_append(pb_episodes_t *e, const pb_episodes_t *src,
                       pb_err_t *err) {
  for (size_t k = 0; k < src->n_eps; k++) {
    int rc = add(e, &src->states[src->start[k]], src->len[k], src->reward[k],
                 src->version[k], pb_episodes_policy(src, k, 0),
                 src->policy_width, err);
    if (rc != 0) return rc;
  }
  return 0;
}

int pb_episodes_append_order(pb_episodes_t *e, const pb_episodes_t *src,
                             const uint32_t *at, pb_err_t *err) {
  for (size_t d = 0; d < src->n_eps; d++) {
    uint32_t k = at[d];
    pb_assert(k < src->n_eps); /* at is a permutation of the episodes */
    int rc = add(e, &src->states[src->start[k]], src->len[k], src->reward[k],
                 src->version[k], pb_episodes_policy(src, k, 0),
                 src->policy_width, err);
    if (rc != 0) return rc;
  }
  return 0;
}

float pb_episodes_target(const pb_episodes_t *e, size_t k, uint32_t t) {
  pb_assert(k < e->n_eps && t < e->len[k]);
  uint32_t from_end = e->len[k] - 1 - t;
  float r = (float)e->reward[k];
  return (from_end % 2 == 0) ? r : -r;
}

void pb_episodes_targets(const pb_episodes_t *e, float *target) {
  for (size_t k = 0; k < e->n_eps; k++)
    for (uint32_t t = 0; t < e->len[k]; t++)
      target[e->start[k] + t] = pb_episodes_target(e, k, t);
}

size_t pb_episodes_keep_newest(pb_episodes_t *eps, size_t cap) {
  size_t drop = 0, kept = 0;
  if (eps->n_states <= cap) return 0;
  /* Keep the newest whole episodes that fit. */
  size_t k = eps->n_eps;
  while (k > 0 && kept + eps->len[k - 1] <= cap) kept += eps->len[--k];
  drop = k;
  if (drop == 0) return 0;
  size_t from = eps->start[drop];
  memmove(eps->states, eps->states + from, kept * sizeof *eps->states);
  if (eps->policy_width > 0) {
    const size_t w = (size_t)eps->policy_width;
    memmove(eps->policy, eps->policy + from * w,
            kept * w * sizeof *eps->policy);
  }
  for (size_t j = drop; j < eps->n_eps; j++) {
    size_t d = j - drop;
    eps->start[d] = eps->start[j] - (uint32_t)from;
    eps->len[d] = eps->len[j];
    eps->reward[d] = eps->reward[j];
    eps->version[d] = eps->version[j];
  }
  eps->n_eps -= drop;
  eps->n_states = kept;
  return drop;
}
