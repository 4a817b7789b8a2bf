/* abtargets.c - see abtargets.h. */
#include "abtargets.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "abnet.h"
#include "batcher.h"

struct pb_abtargets {
  const pb_game_t *g;
  int max_depth;
  uint64_t nodes;
  int parallel;
  pb_batcher_t *batcher; /* NULL when parallel is 1 */
  pb_abnet_t *ab[PB_ABTARGETS_MAX_PARALLEL];
  pb_abtargets_stats_t st[PB_ABTARGETS_MAX_PARALLEL]; /* one per member */
  /* the run in progress */
  const pb_state_t *states;
  int n;
  float *out;
  atomic_int next; /* the next position to hand out */
};

void pb_abtargets_destroy(pb_abtargets_t **pt) {
  if (pt == NULL || *pt == NULL) return;
  pb_abtargets_t *t = *pt;
  for (int m = 0; m < PB_ABTARGETS_MAX_PARALLEL; m++)
    pb_abnet_destroy(&t->ab[m]);
  pb_batcher_destroy(&t->batcher);
  free(t);
  *pt = NULL;
}

pb_abtargets_t *pb_abtargets_new(const pb_game_t *g, int max_depth,
                                 uint64_t nodes, int parallel, pb_err_t *err) {
  if (g == NULL) {
    pb_err_set(err, PB_EINVAL, "abnet targets: NULL game");
    return NULL;
  }
  if (max_depth < 2 || max_depth > PB_ABNET_MAX_HORIZON) {
    pb_err_set(err, PB_EINVAL,
               "abnet targets: max_depth %d out of range (2..%d: the "
               "horizon's plies below the position)",
               max_depth, PB_ABNET_MAX_HORIZON);
    return NULL;
  }
  if (nodes < 1 || nodes > PB_ABNET_MAX_NODES || parallel < 1) {
    pb_err_set(err, PB_EINVAL,
               "abnet targets: nodes %llu (1..%llu evaluations per move) or "
               "parallel %d (>= 1) out of range",
               (unsigned long long)nodes,
               (unsigned long long)PB_ABNET_MAX_NODES, parallel);
    return NULL;
  }
  pb_abtargets_t *t = calloc(1, sizeof *t);
  if (t == NULL) {
    pb_err_set(err, PB_ENOMEM, "abnet targets: out of memory");
    return NULL;
  }
  t->g = g;
  t->max_depth = max_depth;
  t->nodes = nodes;
  t->parallel = parallel < PB_ABTARGETS_MAX_PARALLEL
                    ? parallel
                    : PB_ABTARGETS_MAX_PARALLEL;
  pb_abnet_opts_t o;
  pb_abnet_defaults(&o);
  o.nodes = nodes;
  o.max_depth = max_depth - 1;
  for (int m = 0; m < t->parallel; m++)
    if ((t->ab[m] = pb_abnet_new(g, &o, err)) == NULL) goto fail;
  if (t->parallel > 1 &&
      (t->batcher = pb_batcher_new(g, t->parallel, err)) == NULL)
    goto fail;
  return t;
fail:
  pb_abtargets_destroy(&t);
  return NULL;
}

static float clamp1(float x) {
  return !(x >= -1.0f) ? -1.0f : x > 1.0f ? 1.0f : x;
}

/* The targets of one position, by member m's searcher. */
static int one(pb_abtargets_t *t, int m, const pb_state_t *s,
               const pb_evalfn_t *ev, float *out, pb_err_t *err) {
  const pb_game_t *g = t->g;
  pb_abtargets_stats_t *st = &t->st[m];
  uint8_t legal[PB_MAX_ACTIONS];
  int nl = g->legal(s, legal);
  memset(out, 0, (size_t)g->num_actions * sizeof *out);
  st->positions++;
  for (int k = 0; k < nl; k++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, legal[k], &done);
    st->moves++;
    if (done) {
      out[legal[k]] = r;
      continue;
    }
    pb_abnet_result_t res;
    int rc = pb_abnet_search(t->ab[m], &c, ev, &res, err);
    if (rc != 0) return rc;
    out[legal[k]] = -clamp1(res.value);
    st->searches++;
    st->depth_sum += (uint64_t)res.depth;
    st->solved += (uint64_t)res.solved;
    st->v_evals += res.v_evals;
    st->q_evals += res.q_evals;
  }
  return 0;
}

static int member(void *ctx, int m, const pb_evalfn_t *ev, pb_err_t *err) {
  pb_abtargets_t *t = ctx;
  const int A = t->g->num_actions;
  for (;;) {
    int i = atomic_fetch_add(&t->next, 1);
    if (i >= t->n) return 0;
    int rc = one(t, m, &t->states[i], ev, t->out + (size_t)i * A, err);
    if (rc != 0) {
      atomic_store(&t->next, t->n); /* the others stop at their next one */
      return rc;
    }
  }
}

int pb_abtargets_run(pb_abtargets_t *t, const pb_state_t *states, int n,
                     const pb_evalfn_t *ev, float *out, pb_err_t *err) {
  if (t == NULL || (n > 0 && (states == NULL || out == NULL)) || ev == NULL ||
      n < 0)
    return pb_err_set(err, PB_EINVAL, "abnet targets: NULL argument");
  for (int i = 0; i < n; i++) {
    float r;
    if (t->g->terminal(&states[i], &r))
      return pb_err_set(err, PB_EINVAL,
                        "abnet targets: the game is over in position %d "
                        "(nothing to search)",
                        i);
  }
  if (n == 0) return 0;
  t->states = states;
  t->n = n;
  t->out = out;
  atomic_store(&t->next, 0);
  int members = n < t->parallel ? n : t->parallel;
  int rc = members == 1
               ? member(t, 0, ev, err)
               : pb_batcher_run(t->batcher, members, ev, member, t, err);
  t->states = NULL;
  t->out = NULL;
  return rc;
}

void pb_abtargets_stats(const pb_abtargets_t *t, pb_abtargets_stats_t *st) {
  memset(st, 0, sizeof *st);
  if (t == NULL) return;
  for (int m = 0; m < t->parallel; m++) {
    const pb_abtargets_stats_t *s = &t->st[m];
    st->positions += s->positions;
    st->moves += s->moves;
    st->searches += s->searches;
    st->depth_sum += s->depth_sum;
    st->solved += s->solved;
    st->v_evals += s->v_evals;
    st->q_evals += s->q_evals;
  }
}

int pb_abtargets_max_depth(const pb_abtargets_t *t) {
  return t->max_depth;
}

uint64_t pb_abtargets_nodes(const pb_abtargets_t *t) {
  return t->nodes;
}
