/* workq.h - the learner's work items of one phase, with leases.
 *
 * A phase (self-play or search of one iteration) is cut into n items,
 * numbered 0..n-1. Items are handed out lowest number first (so a single
 * worker does them in order, as the in-process trainer does). A handed-out
 * item is leased until a deadline; heartbeats renew it; an expired lease
 * puts the item back for the next worker. The first result for an item is
 * taken, and only from the worker that holds the item's lease: a result
 * of a worker whose lease expired, or for an item it never held, is
 * refused (PB_WORKQ_NOT_HOLDER), a second result is a duplicate; the
 * caller drops both. An item that comes back (its lease expired, its
 * result was refused) is not handed to the worker it came from again
 * before pb_workq_set_avoid's time has passed, and no worker holds more
 * than the share the caller allows it. Item ids are unique for the
 * life of the queue (a phase counter and a per-process nonce are folded in),
 * so a result from an earlier phase or an earlier learner never matches.
 *
 * Backup copies (issue 46; MapReduce's backup tasks for stragglers): when
 * nothing is pending, an idle worker may be leased a copy of an item that
 * another holds and has held long (pb_workq_lease_copy). The item has two
 * holders then, each with its own lease; the first result of either is
 * taken, the other's is dropped and counted (copies_dropped). When one of
 * the two leases ends (expired, released) the other goes on alone.
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
enum {
  PB_WORKQ_ACCEPTED = 0,
  PB_WORKQ_DUPLICATE = 1,
  PB_WORKQ_UNKNOWN = 2,
  PB_WORKQ_NOT_HOLDER = 3
};

/* A queue able to hold phases of up to max_items items; nonce makes ids
 * differ between learner processes. */
pb_workq_t *pb_workq_new(size_t max_items, uint64_t nonce, pb_err_t *err);

/* Frees the queue; accepts NULL and sets *q to NULL. */
void pb_workq_destroy(pb_workq_t **q);

/* Starts a new phase of n items, all pending; earlier ids become unknown.
 * Returns PB_ERANGE if n exceeds max_items. */
int pb_workq_reset(pb_workq_t *q, size_t n, pb_err_t *err);

/* Leases the lowest-numbered pending item to `worker` until now + lease_s,
 * skipping the items that came back from `worker` less than the avoid
 * time ago (pb_workq_set_avoid). Returns 0 and sets *index and *id, or
 * PB_EAGAIN when no item is pending for it, or when it holds max_held
 * items already (0: no limit). */
int pb_workq_lease(pb_workq_t *q, double now, double lease_s, uint32_t worker,
                   size_t max_held, size_t *index, uint64_t *id);

/* As pb_workq_lease, for a worker without a good record (none of its
 * results taken yet, or leases of its that expired): an item that came
 * back (its lease expired, its result was refused) is kept for workers
 * with a good record for the avoid time after it came back; only then
 * may anybody take it. */
int pb_workq_lease_untrusted(pb_workq_t *q, double now, double lease_s,
                             uint32_t worker, size_t max_held, size_t *index,
                             uint64_t *id);

/* How long an item that came back from a worker (its lease expired, its
 * result refused) is kept from that worker: others take it first; after
 * avoid_s, it may go back (it may be the only worker). Default 0. */
void pb_workq_set_avoid(pb_workq_t *q, double avoid_s);

/* How many items `worker` holds now. */
size_t pb_workq_held(const pb_workq_t *q, uint32_t worker);

/* Leases `worker` a backup copy of the item held longest (by another
 * worker, without a copy yet, not one that came back from `worker` within
 * the avoid time) whose lease began min_age_s or more ago, until now +
 * lease_s (capped as any lease). Returns 0 and sets *index, *id (the
 * item's: a result of either holder completes it), *holder (the other
 * holder) and *age (how long it has held it), or PB_EAGAIN when no item
 * qualifies. The caller decides who is idle and trusted enough. */
int pb_workq_lease_copy(pb_workq_t *q, double now, double lease_s,
                        uint32_t worker, double min_age_s, size_t *index,
                        uint64_t *id, uint32_t *holder, double *age);

/* 1 when item `index` is done by its copy's holder while the item's own
 * holder still held it (*holder: that one, overtaken), else 0. */
int pb_workq_overtaken(const pb_workq_t *q, size_t index, uint32_t *holder);

/* The mean time from lease to taken result of this phase's items done so
 * far (0: none yet). */
double pb_workq_mean_time(const pb_workq_t *q);

/* Backup copies of stragglers' items: an item may be copied once it has
 * been held FACTOR times the mean time of the phase's items done so far
 * (before_s, e.g. the lease, while none is done), and never before MIN_S. */
#define PB_WORKQ_BACKUP_FACTOR 3.0
#define PB_WORKQ_BACKUP_MIN_S 1.0

/* How long an item of q may be held before an idle worker gets a backup
 * copy of it (pb_workq_lease_copy's `after`), by the rule above. */
double pb_workq_backup_after(const pb_workq_t *q, double before_s);

/* How long the item leased longest ago has been held (0: none leased),
 * with its index and holder when not NULL. */
double pb_workq_oldest(const pb_workq_t *q, double now, size_t *index,
                       uint32_t *holder);

/* Extends the lease of item `id` (or of its copy) to now + lease_s if it
 * is leased to `worker` (another's heartbeat cannot keep it alive), but
 * never past the cap (pb_workq_set_max_lease) after it was leased.
 * Returns 0, or PB_ENOTFOUND if worker holds no such lease. */
int pb_workq_renew(pb_workq_t *q, uint64_t id, uint32_t worker, double now,
                   double lease_s);

/* Caps every lease at max_s seconds from when it was handed out, whatever
 * the heartbeats say: a peer that holds an item longer (stuck, or stalling
 * the run on purpose) loses it to the next worker. 0 (the default): no
 * cap. A late result of a capped lease still counts if the item is not
 * done by then (the first result wins). */
void pb_workq_set_max_lease(pb_workq_t *q, double max_s);

/* Records `worker`'s result for item `id` at time now:
 * PB_WORKQ_ACCEPTED (the item or its copy was leased to worker; *index
 * set, the item is done), PB_WORKQ_DUPLICATE (already done: counted as
 * copies_dropped when it is the other holder's result), PB_WORKQ_NOT_HOLDER
 * (pending, or leased to others: the sender's lease expired, or it never
 * had one) or PB_WORKQ_UNKNOWN (not an item of this phase). */
int pb_workq_complete(pb_workq_t *q, uint64_t id, uint32_t worker,
                      double now, size_t *index);

/* Puts item `index` back to pending (a result that failed validation or
 * the spot check); the worker it was leased to is avoided from now on for
 * the avoid time. */
void pb_workq_requeue(pb_workq_t *q, size_t index, double now);

/* Returns leased items whose deadline is before now to pending (their
 * holders are avoided for the avoid time); an item whose copy is still
 * leased stays with the copy's holder, and a copy whose lease expired is
 * dropped. Calls fn(ctx, index, worker) for each lease that expired (for
 * logging; fn may be NULL). Returns how many expired. */
size_t pb_workq_expire(pb_workq_t *q, double now,
                       void (*fn)(void *ctx, size_t index, uint32_t worker),
                       void *ctx);

/* Returns every item leased to `worker` to pending (it said Bye); one with
 * a copy stays with the copy's holder, and copies `worker` held are
 * dropped. Returns how many leases ended. */
size_t pb_workq_release(pb_workq_t *q, uint32_t worker);

/* The item index of id in this phase, or -1. */
long pb_workq_index(const pb_workq_t *q, uint64_t id);

typedef struct pb_workq_counts {
  size_t total, pending, leased, done;
  uint64_t expired, duplicates, unknown, not_holder; /* since creation */
  uint64_t copies;         /* backup copies leased */
  uint64_t copies_won;     /* items whose copy's result was taken */
  uint64_t copies_dropped; /* results of the other holder, dropped */
} pb_workq_counts_t;

void pb_workq_counts(const pb_workq_t *q, pb_workq_counts_t *c);

/* 1 when every item of the phase is done (a phase of 0 items is done). */
int pb_workq_finished(const pb_workq_t *q);

#endif
