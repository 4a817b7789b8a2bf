/* workq.h - the learner's work items of one phase, with leases.
 *
 * A phase (self-play or search of one iteration) is cut into n items,
 * numbered 0..n-1. Items are handed out lowest number first (so a single
 * worker does them in order, as the in-process trainer does). A handed-out
 * item is leased until a deadline; heartbeats renew it; an expired lease
 * puts the item back for the next worker. The first result for an item is
 * taken, any later one (a slow worker whose lease expired, a resend) is a
 * duplicate and must be dropped by the caller. Item ids are unique for the
 * life of the queue (a phase counter and a per-process nonce are folded in),
 * so a result from an earlier phase or an earlier learner never matches.
 *
 * No allocation after pb_workq_new; all operations are O(n) at worst with
 * n in the hundreds. */
#ifndef PB_WORKQ_H
#define PB_WORKQ_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct pb_workq pb_workq_t;

enum { PB_WORKQ_PENDING = 0, PB_WORKQ_LEASED = 1, PB_WORKQ_DONE = 2 };

/* Results of pb_workq_complete. */
enum { PB_WORKQ_ACCEPTED = 0, PB_WORKQ_DUPLICATE = 1, PB_WORKQ_UNKNOWN = 2 };

/* A queue able to hold phases of up to max_items items; nonce makes ids
 * differ between learner processes. */
pb_workq_t *pb_workq_new(size_t max_items, uint64_t nonce, pb_err_t *err);

/* Frees the queue; accepts NULL and sets *q to NULL. */
void pb_workq_destroy(pb_workq_t **q);

/* Starts a new phase of n items, all pending; earlier ids become unknown.
 * Returns PB_ERANGE if n exceeds max_items. */
int pb_workq_reset(pb_workq_t *q, size_t n, pb_err_t *err);

/* Leases the lowest-numbered pending item to `worker` until now + lease_s.
 * Returns 0 and sets *index and *id, or PB_EAGAIN when none is pending. */
int pb_workq_lease(pb_workq_t *q, double now, double lease_s, uint32_t worker,
                   size_t *index, uint64_t *id);

/* Extends the lease of item `id` to now + lease_s if it is leased, but
 * never past the cap (pb_workq_set_max_lease) after it was leased.
 * Returns 0, or PB_ENOTFOUND if it is not leased in this phase. */
int pb_workq_renew(pb_workq_t *q, uint64_t id, double now, double lease_s);

/* Caps every lease at max_s seconds from when it was handed out, whatever
 * the heartbeats say: a peer that holds an item longer (stuck, or stalling
 * the run on purpose) loses it to the next worker. 0 (the default): no
 * cap. A late result of a capped lease still counts if the item is not
 * done by then (the first result wins). */
void pb_workq_set_max_lease(pb_workq_t *q, double max_s);

/* Records a result for item `id`: PB_WORKQ_ACCEPTED (first result; *index
 * set, the item is done), PB_WORKQ_DUPLICATE (already done) or
 * PB_WORKQ_UNKNOWN (not an item of this phase). */
int pb_workq_complete(pb_workq_t *q, uint64_t id, size_t *index);

/* Puts item `index` back to pending (a result that failed validation). */
void pb_workq_requeue(pb_workq_t *q, size_t index);

/* Returns leased items whose deadline is before now to pending. Calls
 * fn(ctx, index, worker) for each (for logging; fn may be NULL). Returns
 * how many expired. */
size_t pb_workq_expire(pb_workq_t *q, double now,
                       void (*fn)(void *ctx, size_t index, uint32_t worker),
                       void *ctx);

/* Returns every item leased to `worker` to pending (it said Bye).
 * Returns how many. */
size_t pb_workq_release(pb_workq_t *q, uint32_t worker);

/* The item index of id in this phase, or -1. */
long pb_workq_index(const pb_workq_t *q, uint64_t id);

typedef struct pb_workq_counts {
  size_t total, pending, leased, done;
  uint64_t expired, duplicates, unknown; /* since creation */
} pb_workq_counts_t;

void pb_workq_counts(const pb_workq_t *q, pb_workq_counts_t *c);

/* 1 when every item of the phase is done (a phase of 0 items is done). */
int pb_workq_finished(const pb_workq_t *q);

#endif
