/* neteval.h - V and Q served from the networks, batched and cached.
 *
 * Binds a V network and a Q network (borrowed, not owned) to the pb_evalfn_t
 * callbacks that beam search and self-play use. Each call encodes only the
 * positions the caches do not hold, runs them through the network in chunks
 * of at most max_batch, and stores the results. A position asked for twice
 * in one call is computed once. The caches must be cleared (pb_neteval_bind)
 * whenever the weights change. No allocation after pb_neteval_new. */
#ifndef PB_NETEVAL_H
#define PB_NETEVAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "evalfn.h"
#include "game.h"
#include "nn.h"

typedef struct pb_neteval pb_neteval_t;

/* A batched, cached evaluator for game g. cache_entries 0 disables the
 * caches. max_batch bounds one network call (and the encode buffer). */
pb_neteval_t *pb_neteval_new(const pb_game_t *g, int max_batch,
                             uint32_t cache_entries, pb_err_t *err);

/* Frees the evaluator (not the networks); accepts NULL, nulls *ne. */
void pb_neteval_destroy(pb_neteval_t **ne);

/* Uses networks v and q (either may be NULL when unused; borrowed) from now
 * on and forgets every cached value. Call again after weights change. */
void pb_neteval_bind(pb_neteval_t *ne, pb_nn_t *v, pb_nn_t *q);

/* Calls made after pb_now() passes `until` (seconds, common/base/util.h;
 * 0 = never) fail with PB_ERANGE: how a caller bounds the time of a
 * search that runs through the callbacks. */
void pb_neteval_set_deadline(pb_neteval_t *ne, double until);

/* Calls made while *stop is nonzero (stop may be NULL: never; borrowed,
 * read from this thread while another may set it) fail with PB_EINTR:
 * how another thread or a signal handler stops a search at once. */
void pb_neteval_set_stop(pb_neteval_t *ne, const atomic_int *stop);

/* The callbacks bound to this evaluator. */
pb_evalfn_t pb_neteval_fn(pb_neteval_t *ne);

typedef struct pb_neteval_stats {
  uint64_t v_asked, v_computed, q_asked, q_computed; /* positions */
  uint64_t v_calls, q_calls;                         /* network calls */
} pb_neteval_stats_t;

/* Counters since creation. */
void pb_neteval_stats(const pb_neteval_t *ne, pb_neteval_stats_t *st);

#endif
