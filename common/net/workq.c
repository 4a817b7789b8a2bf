#include "workq.h"
#include "invariant.h"

#include <stdlib.h>

typedef struct {
  uint8_t state;
  uint8_t has_avoid; /* avoid is set: the item came back from that worker */
  uint8_t came_back; /* it expired or was refused: held for the trusted
                        until avoid_until */
  uint8_t has_copy;  /* a backup copy is leased too (to `copy`) */
  uint8_t copied;    /* it had a copy since it was last handed out */
  uint32_t worker;   /* the holder (the last one once it comes back) */
  uint32_t avoid;
  uint32_t copy;     /* the holder of the backup copy */
  uint32_t done_by;  /* whose result was taken */
  double deadline;
  double leased_at;
  double avoid_until;
  double copy_deadline, copy_at;
} item_t;

struct pb_workq {
  item_t *it;
  size_t max, n;
  size_t lowest_pending; /* no pending item below this index */
  size_t pending, leased, done;
  uint64_t base; /* id of item 0 in this phase */
  uint64_t phase;
  uint64_t nonce;
  uint64_t expired, duplicates, unknown, not_holder;
  uint64_t copies, copies_won, copies_dropped;
  double done_time_sum; /* this phase: lease-to-result times of its items */
  size_t done_timed;
  double max_lease_s; /* 0: heartbeats renew without limit */
  double avoid_s;     /* how long an item is kept from its last holder */
};

#define INDEX_BITS 24

pb_workq_t *pb_workq_new(size_t max_items, uint64_t nonce, pb_err_t *err) {
  if (max_items == 0 || max_items >= (1u << INDEX_BITS)) {
    pb_err_set(err, PB_EINVAL, "workq: max_items %zu out of range", max_items);
    return NULL;
  }
  pb_workq_t *q = calloc(1, sizeof *q);
  if (q) q->it = calloc(max_items, sizeof *q->it);
  if (q == NULL || q->it == NULL) {
    pb_workq_destroy(&q);
    pb_err_set(err, PB_ENOMEM, "workq: out of memory");
    return NULL;
  }
  q->max = max_items;
  q->nonce = nonce & 0xFFFF;
  return q;
}

void pb_workq_destroy(pb_workq_t **q) {
  if (q == NULL || *q == NULL) return;
  free((*q)->it);
  free(*q);
  *q = NULL;
}

int pb_workq_reset(pb_workq_t *q, size_t n, pb_err_t *err) {
  if (n > q->max)
    return pb_err_set(err, PB_ERANGE, "workq: %zu items, at most %zu", n,
                      q->max);
  q->phase++;
  q->base = (q->nonce << 48) | ((q->phase & 0xFFFFFF) << INDEX_BITS);
  q->n = n;
  for (size_t i = 0; i < n; i++)
    q->it[i] = (item_t){.state = PB_WORKQ_PENDING};
  q->pending = n;
  q->leased = q->done = 0;
  q->done_time_sum = 0;
  q->done_timed = 0;
  q->lowest_pending = 0;
  return 0;
}

long pb_workq_index(const pb_workq_t *q, uint64_t id) {
  if (id < q->base || id - q->base >= q->n) return -1;
  return (long)(id - q->base);
}

size_t pb_workq_held(const pb_workq_t *q, uint32_t worker) {
  size_t k = 0, seen = 0;
  /* Up to the last leased item: asked at every lease, this must not cost
   * a scan of a whole phase's items (bench_ingest: 250,000). */
  for (size_t i = 0; i < q->n && seen < q->leased; i++) {
    if (q->it[i].state != PB_WORKQ_LEASED) continue;
    seen++;
    k += q->it[i].worker == worker ||
         (q->it[i].has_copy && q->it[i].copy == worker);
  }
  return k;
}

void pb_workq_set_avoid(pb_workq_t *q, double avoid_s) {
  q->avoid_s = avoid_s > 0 ? avoid_s : 0;
}

static int avoids(const item_t *it, uint32_t worker, double now) {
  return it->has_avoid && it->avoid == worker && now < it->avoid_until;
}

/* Whether `worker` skips item it now: it came back from it, or it came
 * back at all and the worker is not trusted, less than the avoid time
 * ago. */
static int skips(const item_t *it, uint32_t worker, int untrusted, double now) {
  return avoids(it, worker, now) ||
         (untrusted && it->came_back && now < it->avoid_until);
}

static int lease(pb_workq_t *q, double now, double lease_s, uint32_t worker,
                 int untrusted, size_t max_held, size_t *index, uint64_t *id) {
  if (q->pending == 0) return PB_EAGAIN;
  if (max_held > 0 && pb_workq_held(q, worker) >= max_held) return PB_EAGAIN;
  size_t i = q->lowest_pending;
  while (i < q->n && q->it[i].state != PB_WORKQ_PENDING) i++;
  pb_assert(i < q->n); /* some item is pending */
  /* lowest_pending stays a lower bound: only an item taken from there
   * moves it. */
  if (skips(&q->it[i], worker, untrusted, now)) {
    while (i < q->n && (q->it[i].state != PB_WORKQ_PENDING ||
                        skips(&q->it[i], worker, untrusted, now)))
      i++;
    if (i == q->n) return PB_EAGAIN;
  } else {
    q->lowest_pending = i + 1;
  }
  q->it[i].state = PB_WORKQ_LEASED;
  q->it[i].worker = worker;
  q->it[i].deadline = now + lease_s;
  q->it[i].leased_at = now;
  q->it[i].has_copy = 0;
  q->it[i].copied = 0;
  if (q->max_lease_s > 0 && q->it[i].deadline > now + q->max_lease_s)
    q->it[i].deadline = now + q->max_lease_s;
  q->pending--;
  q->leased++;
  pb_assert(q->pending + q->leased + q->done == q->n);
  *index = i;
  *id = q->base + i;
  return 0;
}

int pb_workq_lease(pb_workq_t *q, double now, double lease_s, uint32_t worker,
                   size_t max_held, size_t *index, uint64_t *id) {
  return lease(q, now, lease_s, worker, 0, max_held, index, id);
}

int pb_workq_lease_untrusted(pb_workq_t *q, double now, double lease_s,
                             uint32_t worker, size_t max_held, size_t *index,
                             uint64_t *id) {
  return lease(q, now, lease_s, worker, 1, max_held, index, id);
}

int pb_workq_lease_copy(pb_workq_t *q, double now, double lease_s,
                        uint32_t worker, double min_age_s, size_t *index,
                        uint64_t *id, uint32_t *holder, double *age) {
  if (q->leased == 0) return PB_EAGAIN;
  size_t best = q->n;
  for (size_t i = 0; i < q->n; i++) {
    const item_t *it = &q->it[i];
    if (it->state != PB_WORKQ_LEASED || it->has_copy || it->worker == worker ||
        now - it->leased_at < min_age_s || avoids(it, worker, now))
      continue;
    if (best == q->n || it->leased_at < q->it[best].leased_at) best = i;
  }
  if (best == q->n) return PB_EAGAIN;
  item_t *it = &q->it[best];
  pb_assert(it->state == PB_WORKQ_LEASED && !it->has_copy);
  it->has_copy = 1;
  it->copied = 1;
  it->copy = worker;
  it->copy_at = now;
  it->copy_deadline = now + lease_s;
  if (q->max_lease_s > 0 && it->copy_deadline > now + q->max_lease_s)
    it->copy_deadline = now + q->max_lease_s;
  q->copies++;
  *index = best;
  *id = q->base + best;
  if (holder) *holder = it->worker;
  if (age) *age = now - it->leased_at;
  return 0;
}

int pb_workq_overtaken(const pb_workq_t *q, size_t index, uint32_t *holder) {
  if (index >= q->n) return 0;
  const item_t *it = &q->it[index];
  if (it->state != PB_WORKQ_DONE || !it->copied || it->done_by != it->copy ||
      it->worker == it->copy)
    return 0;
  if (holder) *holder = it->worker;
  return 1;
}

double pb_workq_mean_time(const pb_workq_t *q) {
  return q->done_timed > 0 ? q->done_time_sum / (double)q->done_timed : 0;
}

double pb_workq_backup_after(const pb_workq_t *q, double before_s) {
  const double mean = pb_workq_mean_time(q);
  const double t = mean > 0 ? PB_WORKQ_BACKUP_FACTOR * mean : before_s;
  return t > PB_WORKQ_BACKUP_MIN_S ? t : PB_WORKQ_BACKUP_MIN_S;
}

double pb_workq_oldest(const pb_workq_t *q, double now, size_t *index,
                       uint32_t *holder) {
  double age = 0;
  for (size_t i = 0; i < q->n && q->leased > 0; i++) {
    const item_t *it = &q->it[i];
    if (it->state != PB_WORKQ_LEASED || now - it->leased_at <= age) continue;
    age = now - it->leased_at;
    if (index) *index = i;
    if (holder) *holder = it->worker;
  }
  return age;
}

int pb_workq_renew(pb_workq_t *q, uint64_t id, uint32_t worker, double now,
                   double lease_s) {
  long i = pb_workq_index(q, id);
  if (i < 0 || q->it[i].state != PB_WORKQ_LEASED) return PB_ENOTFOUND;
  if (q->it[i].has_copy && q->it[i].copy == worker) {
    double d = now + lease_s;
    if (q->max_lease_s > 0 && d > q->it[i].copy_at + q->max_lease_s)
      d = q->it[i].copy_at + q->max_lease_s;
    if (d > q->it[i].copy_deadline) q->it[i].copy_deadline = d;
    return 0;
  }
  if (q->it[i].worker != worker) return PB_ENOTFOUND;
  double d = now + lease_s;
  if (q->max_lease_s > 0 && d > q->it[i].leased_at + q->max_lease_s)
    d = q->it[i].leased_at + q->max_lease_s;
  if (d > q->it[i].deadline) q->it[i].deadline = d;
  return 0;
}

void pb_workq_set_max_lease(pb_workq_t *q, double max_s) {
  q->max_lease_s = max_s > 0 ? max_s : 0;
}

int pb_workq_complete(pb_workq_t *q, uint64_t id, uint32_t worker,
                      double now, size_t *index) {
  long i = pb_workq_index(q, id);
  if (i < 0) {
    q->unknown++;
    return PB_WORKQ_UNKNOWN;
  }
  item_t *it = &q->it[i];
  pb_assert((size_t)i < q->n);
  if (it->state == PB_WORKQ_DONE) {
    /* The other copy's result, after the first was taken. */
    if (it->copied && worker != it->done_by &&
        (worker == it->worker || worker == it->copy))
      q->copies_dropped++;
    else
      q->duplicates++;
    return PB_WORKQ_DUPLICATE;
  }
  /* Only a holder of the lease (or of its copy): a result of an expired
   * lease, or for an item the sender never held, could be anybody's. */
  const int by_copy =
      it->state == PB_WORKQ_LEASED && it->has_copy && it->copy == worker;
  if (it->state != PB_WORKQ_LEASED || (it->worker != worker && !by_copy)) {
    q->not_holder++;
    return PB_WORKQ_NOT_HOLDER;
  }
  pb_assert(q->leased > 0);
  q->leased--;
  it->state = PB_WORKQ_DONE;
  it->done_by = worker;
  q->done++;
  pb_assert(q->pending + q->leased + q->done == q->n);
  if (by_copy) q->copies_won++;
  const double since = by_copy ? it->copy_at : it->leased_at;
  if (now >= since) {
    q->done_time_sum += now - since;
    q->done_timed++;
  }
  *index = (size_t)i;
  return PB_WORKQ_ACCEPTED;
}

/* Item i back to pending; with avoid, its holder is kept from it until
 * now + avoid_s. */
static void to_pending(pb_workq_t *q, size_t i, int avoid, double now) {
  pb_assert(i < q->n && q->it[i].state != PB_WORKQ_PENDING);
  q->it[i].state = PB_WORKQ_PENDING;
  q->it[i].has_copy = 0;
  q->it[i].copied = 0;
  q->it[i].has_avoid = avoid && q->avoid_s > 0;
  q->it[i].came_back = q->it[i].has_avoid;
  q->it[i].avoid = q->it[i].worker;
  q->it[i].avoid_until = now + q->avoid_s;
  q->pending++;
  if (i < q->lowest_pending) q->lowest_pending = i;
  pb_assert(q->pending + q->leased + q->done == q->n);
}

void pb_workq_requeue(pb_workq_t *q, size_t i, double now) {
  if (i >= q->n || q->it[i].state == PB_WORKQ_PENDING) return;
  pb_assert(q->it[i].state == PB_WORKQ_LEASED ? q->leased > 0 : q->done > 0);
  if (q->it[i].state == PB_WORKQ_LEASED) q->leased--;
  else q->done--;
  to_pending(q, i, 1, now);
}

size_t pb_workq_expire(pb_workq_t *q, double now,
                       void (*fn)(void *ctx, size_t index, uint32_t worker),
                       void *ctx) {
  size_t k = 0;
  if (q->leased == 0) return 0;
  for (size_t i = 0; i < q->n; i++) {
    item_t *it = &q->it[i];
    if (it->state != PB_WORKQ_LEASED) continue;
    if (it->has_copy && it->copy_deadline < now) { /* the copy's lease */
      it->has_copy = 0;
      q->expired++;
      k++;
      if (fn) fn(ctx, i, it->copy);
    }
    if (it->deadline >= now) continue;
    const uint32_t was = it->worker;
    if (it->has_copy) { /* the copy goes on as the item's lease */
      it->worker = it->copy;
      it->deadline = it->copy_deadline;
      it->leased_at = it->copy_at;
      it->has_copy = 0;
    } else {
      pb_assert(q->leased > 0);
      q->leased--;
      to_pending(q, i, 1, now);
    }
    q->expired++;
    k++;
    if (fn) fn(ctx, i, was);
  }
  return k;
}

size_t pb_workq_release(pb_workq_t *q, uint32_t worker) {
  size_t k = 0;
  for (size_t i = 0; i < q->n; i++) {
    item_t *it = &q->it[i];
    if (it->state != PB_WORKQ_LEASED) continue;
    if (it->has_copy && it->copy == worker) {
      it->has_copy = 0;
      k++;
    } else if (it->worker == worker && it->has_copy) {
      it->worker = it->copy; /* the copy goes on */
      it->deadline = it->copy_deadline;
      it->leased_at = it->copy_at;
      it->has_copy = 0;
      k++;
    } else if (it->worker == worker) {
      q->leased--;
      to_pending(q, i, 0, 0.0); /* it left: nothing to avoid */
      k++;
    }
  }
  return k;
}

void pb_workq_counts(const pb_workq_t *q, pb_workq_counts_t *c) {
  c->total = q->n;
  c->pending = q->pending;
  c->leased = q->leased;
  c->done = q->done;
  c->expired = q->expired;
  c->duplicates = q->duplicates;
  c->unknown = q->unknown;
  c->not_holder = q->not_holder;
  c->copies = q->copies;
  c->copies_won = q->copies_won;
  c->copies_dropped = q->copies_dropped;
}

int pb_workq_finished(const pb_workq_t *q) { return q->done == q->n; }
