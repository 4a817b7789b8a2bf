#include "neteval.h"

#include <stdlib.h>
#include <string.h>

#include "evalcache.h"
#include "invariant.h"
#include "util.h"

/* One side (V or Q): its network, cache and scratch buffers. */
typedef struct {
  pb_nn_t *nn;
  pb_evalcache_t *cache;
  int outputs;
  uint64_t asked, computed, calls;
} side_t;

struct pb_neteval {
  const pb_game_t *g;
  int max_batch;
  int in_size;       /* floats per encoded position */
  float *in;         /* [max_batch][in_size] */
  float *out;        /* [max_batch][max outputs] */
  pb_state_t *miss;  /* positions of the current chunk */
  uint64_t *miss_hash;
  int *slot;         /* scratch: requester -> chunk row, or -1 */
  side_t v, q;
  double deadline; /* pb_now() after which calls fail; 0: none */
  const atomic_int *stop; /* calls fail while it is nonzero; NULL: none */
};

pb_neteval_t *pb_neteval_new(const pb_game_t *g, int max_batch,
                             uint32_t cache_entries, pb_err_t *err) {
  if (g == NULL || max_batch < 1 || max_batch > (1 << 20)) {
    pb_err_set(err, PB_EINVAL, "neteval: max_batch %d out of range", max_batch);
    return NULL;
  }
  pb_neteval_t *ne = calloc(1, sizeof *ne);
  if (ne == NULL) goto nomem;
  ne->g = g;
  ne->max_batch = max_batch;
  ne->in_size = g->planes * g->height * g->width;
  ne->v.outputs = 1;
  ne->q.outputs = g->num_actions;
  ne->in = malloc((size_t)max_batch * ne->in_size * sizeof(float));
  ne->out = malloc((size_t)max_batch * g->num_actions * sizeof(float));
  ne->miss = malloc((size_t)max_batch * sizeof *ne->miss);
  ne->miss_hash = malloc((size_t)max_batch * sizeof *ne->miss_hash);
  ne->slot = malloc((size_t)max_batch * sizeof *ne->slot);
  if (!ne->in || !ne->out || !ne->miss || !ne->miss_hash || !ne->slot)
    goto nomem;
  if (cache_entries > 0) {
    ne->v.cache = pb_evalcache_new(cache_entries, 1, err);
    if (ne->v.cache == NULL) goto fail;
    ne->q.cache = pb_evalcache_new(cache_entries, g->num_actions, err);
    if (ne->q.cache == NULL) goto fail;
  }
  return ne;
nomem:
  pb_err_set(err, PB_ENOMEM, "neteval: out of memory");
fail:
  pb_neteval_destroy(&ne);
  return NULL;
}

void pb_neteval_destroy(pb_neteval_t **pne) {
  if (pne == NULL || *pne == NULL) return;
  pb_neteval_t *ne = *pne;
  pb_evalcache_destroy(&ne->v.cache);
  pb_evalcache_destroy(&ne->q.cache);
  free(ne->in);
  free(ne->out);
  free(ne->miss);
  free(ne->miss_hash);
  free(ne->slot);
  free(ne);
  *pne = NULL;
}

void pb_neteval_bind(pb_neteval_t *ne, pb_nn_t *v, pb_nn_t *q) {
  ne->v.nn = v;
  ne->q.nn = q;
  if (ne->v.cache) pb_evalcache_clear(ne->v.cache);
  if (ne->q.cache) pb_evalcache_clear(ne->q.cache);
}

/* Runs the rows [0, nmiss) of ne->in through the side's network into
 * ne->out and stores them in the cache. */
static int flush(pb_neteval_t *ne, side_t *sd, int nmiss, pb_err_t *err) {
  pb_assert(nmiss >= 0 && nmiss <= ne->max_batch);
  if (nmiss == 0) return 0;
  int rc = pb_nn_forward(sd->nn, ne->in, nmiss, ne->out, err);
  if (rc != 0) return rc;
  sd->calls++;
  sd->computed += (uint64_t)nmiss;
  if (sd->cache)
    for (int j = 0; j < nmiss; j++)
      pb_evalcache_put(sd->cache, &ne->miss[j], ne->miss_hash[j],
                       &ne->out[(size_t)j * sd->outputs]);
  return 0;
}

/* Evaluates states in windows of max_batch requesters. Within a window,
 * repeated positions share one row: a later duplicate finds the earlier
 * row through a small linear scan of the window's misses by hash. Cached
 * positions are copied straight from the cache. */
static int evaluate(pb_neteval_t *ne, side_t *sd, const pb_state_t *states,
                    int n, float *out, pb_err_t *err) {
  if (sd->nn == NULL)
    return pb_err_set(err, PB_EINVAL, "neteval: no %s network bound",
                      sd == &ne->v ? "V" : "Q");
  if (ne->deadline > 0 && pb_now() > ne->deadline)
    return pb_err_set(err, PB_ERANGE, "neteval: past the search's deadline");
  if (ne->stop != NULL && atomic_load_explicit(ne->stop, memory_order_relaxed))
    return pb_err_set(err, PB_EINTR, "neteval: the search was stopped");
  const int k = sd->outputs;
  sd->asked += (uint64_t)(n > 0 ? n : 0);
  for (int base = 0; base < n; base += ne->max_batch) {
    int w = n - base < ne->max_batch ? n - base : ne->max_batch;
    pb_assert(w >= 1 && w <= ne->max_batch); /* the rows of ne->in, ne->slot */
    int nmiss = 0;
    for (int i = 0; i < w; i++) {
      const pb_state_t *s = &states[base + i];
      uint64_t h = ne->g->hash(s);
      const float *hit = sd->cache ? pb_evalcache_get(sd->cache, s, h) : NULL;
      if (hit != NULL) {
        memcpy(&out[(size_t)(base + i) * k], hit, (size_t)k * sizeof *hit);
        ne->slot[i] = -1;
        continue;
      }
      int row = -1;
      if (sd->cache) /* without a cache, duplicates are simply recomputed */
        for (int j = nmiss - 1; j >= 0 && j >= nmiss - 64; j--)
          if (ne->miss_hash[j] == h && !memcmp(&ne->miss[j], s, sizeof *s)) {
            row = j;
            break;
          }
      if (row < 0) {
        row = nmiss++;
        ne->miss[row] = *s;
        ne->miss_hash[row] = h;
        ne->g->encode(s, &ne->in[(size_t)row * ne->in_size]);
      }
      ne->slot[i] = row;
    }
    int rc = flush(ne, sd, nmiss, err);
    if (rc != 0) return rc;
    for (int i = 0; i < w; i++)
      if (pb_assert(ne->slot[i] < nmiss), ne->slot[i] >= 0)
        memcpy(&out[(size_t)(base + i) * k], &ne->out[(size_t)ne->slot[i] * k],
               (size_t)k * sizeof(float));
  }
  return 0;
}

static int fn_value(void *ctx, const pb_state_t *states, int n, float *out,
                    pb_err_t *err) {
  pb_neteval_t *ne = ctx;
  return evaluate(ne, &ne->v, states, n, out, err);
}

static int fn_qvalues(void *ctx, const pb_state_t *states, int n, float *out,
                      pb_err_t *err) {
  pb_neteval_t *ne = ctx;
  return evaluate(ne, &ne->q, states, n, out, err);
}

void pb_neteval_set_stop(pb_neteval_t *ne, const atomic_int *stop) {
  ne->stop = stop;
}

void pb_neteval_set_deadline(pb_neteval_t *ne, double until) {
  ne->deadline = until > 0 ? until : 0;
}

pb_evalfn_t pb_neteval_fn(pb_neteval_t *ne) {
  pb_evalfn_t fn = {fn_value, fn_qvalues, ne};
  return fn;
}

void pb_neteval_stats(const pb_neteval_t *ne, pb_neteval_stats_t *st) {
  st->v_asked = ne->v.asked;
  st->v_computed = ne->v.computed;
  st->v_calls = ne->v.calls;
  st->q_asked = ne->q.asked;
  st->q_computed = ne->q.computed;
  st->q_calls = ne->q.calls;
}
