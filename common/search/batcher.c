/* batcher.c - see batcher.h.
 *
 * One lock guards the requests. A member's call queues its request
 * (PENDING) and waits on its own condition. Whoever finds a batch ready
 * (batcher.h: gathering, every running member waits; overlapping, the
 * inner evalfn is idle) becomes the runner: it takes every queued request
 * (TAKEN), lets go of the lock, makes the inner calls, and under the lock
 * again marks them DONE, wakes their members, and (overlapping) wakes one
 * member whose request was queued meanwhile to run the next batch. At most
 * one inner call runs at a time.
 *
 * Overlapping, a member that finds a batch running spins for up to SPIN_NS
 * before it sleeps: with a cheap evaluator (a GPU for small batches, the
 * free one of bench_search) the batch is over in microseconds, sooner than
 * a sleep and a wake-up, which cost more than the tree work between two
 * calls. The fields the spin reads (busy, each state) are written with
 * atomic stores under the lock and read with atomic loads outside it. */
#include "batcher.h"

#include "invariant.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a member spins on a running batch before it sleeps. */
#define SPIN_NS 50000

enum { K_NONE = 0, K_V = 1, K_Q = 2 };
enum { R_FREE = 0, R_PENDING, R_TAKEN, R_DONE };

typedef struct {
  int kind;
  const pb_state_t *states;
  int n;
  float *out;
  int state; /* R_* */
  int rc;
  pb_err_t err;
} req_t;

typedef struct {
  pb_batcher_t *b;
  int idx;
  pthread_t th;
  int started;
  int rc;
  pb_err_t err;
} member_t;

struct pb_batcher {
  const pb_game_t *g;
  int threads;
  pthread_mutex_t mu;
  pthread_cond_t cv[PB_BATCHER_MAX_THREADS]; /* one per member */
  int ncv;                                   /* conditions created */
  const pb_evalfn_t *inner;
  pb_batcher_work_fn work;
  void *ctx;
  int mode;    /* PB_BATCHER_GATHER or PB_BATCHER_OVERLAP */
  int active;  /* members still running */
  int busy;    /* a runner is in the inner evalfn */
  int pending; /* requests PENDING */
  int failed;  /* the inner evalfn failed: every call fails now */
  int fail_rc;
  pb_err_t fail_err;
  /* The runner's batch (used by one runner at a time, outside the lock). */
  int taken[PB_BATCHER_MAX_THREADS];
  int ntaken;
  pb_state_t *sbuf;
  size_t scap;
  float *obuf;
  size_t ocap; /* floats */
  pb_batcher_stats_t st;
  req_t req[PB_BATCHER_MAX_THREADS];
  member_t m[PB_BATCHER_MAX_THREADS];
};

void pb_batcher_destroy(pb_batcher_t **pb) {
  if (pb == NULL || *pb == NULL) return;
  pb_batcher_t *b = *pb;
  for (int i = 0; i < b->ncv; i++) pthread_cond_destroy(&b->cv[i]);
  pthread_mutex_destroy(&b->mu);
  free(b->sbuf);
  free(b->obuf);
  free(b);
  *pb = NULL;
}

pb_batcher_t *pb_batcher_new(const pb_game_t *g, int threads, pb_err_t *err) {
  if (g == NULL || threads < 1 || threads > PB_BATCHER_MAX_THREADS) {
    pb_err_set(err, PB_EINVAL, "batcher: threads %d outside 1..%d", threads,
               PB_BATCHER_MAX_THREADS);
    return NULL;
  }
  pb_batcher_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    pb_err_set(err, PB_ENOMEM, "batcher: out of memory");
    return NULL;
  }
  b->g = g;
  b->threads = threads;
  b->mode = PB_BATCHER_GATHER;
  /* An adaptive mutex (glibc) spins a little before it sleeps: the lock is
   * held for microseconds, far less than a sleep and a wake-up. */
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  int mrc = pthread_mutex_init(&b->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  if (mrc != 0) {
    free(b);
    pb_err_set(err, PB_ENOMEM, "batcher: cannot create a mutex");
    return NULL;
  }
  for (; b->ncv < threads; b->ncv++)
    if (pthread_cond_init(&b->cv[b->ncv], NULL) != 0) {
      pb_batcher_destroy(&b);
      pb_err_set(err, PB_ENOMEM, "batcher: cannot create a condition");
      return NULL;
    }
  return b;
}

void pb_batcher_set_mode(pb_batcher_t *b, int mode) {
  pb_assert(mode == PB_BATCHER_GATHER || mode == PB_BATCHER_OVERLAP);
  b->mode = mode;
}

static int grow(pb_batcher_t *b, size_t states, size_t floats) {
  if (states > b->scap) {
    pb_state_t *s = realloc(b->sbuf, states * sizeof *s);
    if (s == NULL) return PB_ENOMEM;
    b->sbuf = s;
    b->scap = states;
  }
  if (floats > b->ocap) {
    float *o = realloc(b->obuf, floats * sizeof *o);
    if (o == NULL) return PB_ENOMEM;
    b->obuf = o;
    b->ocap = floats;
  }
  return 0;
}

/* The fields a spinning member reads without the lock. */
static inline void set(int *field, int v) {
  __atomic_store_n(field, v, __ATOMIC_RELEASE);
}

static inline int get(const int *field) {
  return __atomic_load_n(field, __ATOMIC_ACQUIRE);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Without the lock: waits up to SPIN_NS for r's batch to be answered or
 * for the running batch to end. */
static void spin(const pb_batcher_t *b, const req_t *r) {
  const double until = now_ns() + SPIN_NS;
  for (int k = 1;; k++) {
    int st = get(&r->state);
    if (st == R_DONE || (st == R_PENDING && !get(&b->busy))) return;
    cpu_relax();
    if (k % 64 == 0 && now_ns() > until) return;
  }
}

/* One inner call for the taken requests of `kind`, by the runner without
 * the lock: the requests it reads belong to members waiting for them. A
 * lone request is passed through without copying. Sets each one's rc (and
 * err); returns the number of states (0: no call). */
static size_t run_kind(pb_batcher_t *b, int kind, int *rc_out, pb_err_t *e) {
  const size_t w = kind == K_Q ? (size_t)b->g->num_actions : 1;
  size_t total = 0;
  int lone = -1, nreq = 0;
  for (int t = 0; t < b->ntaken; t++) {
    const req_t *r = &b->req[b->taken[t]];
    /* Taken by this runner from a member that waits for it. */
    pb_assert(get(&r->state) == R_TAKEN && r->n >= 1);
    if (r->kind != kind) continue;
    total += (size_t)r->n;
    lone = b->taken[t];
    nreq++;
  }
  *rc_out = 0;
  if (total == 0) return 0;
  int rc;
  if (nreq == 1) {
    req_t *r = &b->req[lone];
    rc = kind == K_Q
             ? b->inner->qvalues(b->inner->ctx, r->states, r->n, r->out, e)
             : b->inner->value(b->inner->ctx, r->states, r->n, r->out, e);
  } else if ((rc = grow(b, total, total * w)) != 0) {
    pb_err_set(e, rc, "batcher: out of memory (%zu states)", total);
  } else {
    size_t k = 0;
    for (int t = 0; t < b->ntaken; t++) {
      const req_t *r = &b->req[b->taken[t]];
      if (r->kind != kind) continue;
      memcpy(b->sbuf + k, r->states, (size_t)r->n * sizeof *b->sbuf);
      k += (size_t)r->n;
    }
    rc = kind == K_Q
             ? b->inner->qvalues(b->inner->ctx, b->sbuf, (int)total, b->obuf, e)
             : b->inner->value(b->inner->ctx, b->sbuf, (int)total, b->obuf, e);
    k = 0;
    for (int t = 0; rc == 0 && t < b->ntaken; t++) {
      req_t *r = &b->req[b->taken[t]];
      if (r->kind != kind) continue;
      memcpy(r->out, b->obuf + k * w, (size_t)r->n * w * sizeof *r->out);
      k += (size_t)r->n;
    }
  }
  for (int t = 0; t < b->ntaken; t++) {
    req_t *r = &b->req[b->taken[t]];
    if (r->kind != kind) continue;
    r->rc = rc;
    if (rc != 0) r->err = *e;
  }
  *rc_out = rc;
  return total;
}

/* With b->mu held, the inner evalfn idle and requests pending: takes every
 * pending request, answers them without the lock, and with it again wakes
 * their members and hands the next batch to a member still waiting. */
static void run_batch(pb_batcher_t *b) {
  set(&b->busy, 1);
  b->ntaken = 0;
  for (int i = 0; i < b->threads; i++)
    if (b->req[i].state == R_PENDING) {
      set(&b->req[i].state, R_TAKEN);
      b->taken[b->ntaken++] = i;
    }
  b->pending = 0;
  pthread_mutex_unlock(&b->mu);

  pb_err_t e;
  pb_err_clear(&e);
  int rc_q, rc_v = 0;
  size_t q_rows = run_kind(b, K_Q, &rc_q, &e), v_rows = 0;
  if (rc_q == 0)
    v_rows = run_kind(b, K_V, &rc_v, &e);
  else
    for (int t = 0; t < b->ntaken; t++) {
      req_t *r = &b->req[b->taken[t]];
      r->rc = rc_q; /* the V requests of a failed batch fail with it */
      r->err = e;
    }
  int rc = rc_q != 0 ? rc_q : rc_v;

  pthread_mutex_lock(&b->mu);
  if (q_rows) {
    b->st.q_calls++;
    b->st.q_rows += q_rows;
  }
  if (v_rows) {
    b->st.v_calls++;
    b->st.v_rows += v_rows;
  }
  b->st.batches++;
  if ((uint64_t)b->ntaken > b->st.max_requests)
    b->st.max_requests = (uint64_t)b->ntaken;
  if (rc != 0 && !b->failed) {
    b->failed = 1;
    b->fail_rc = rc;
    b->fail_err = e;
  }
  for (int t = 0; t < b->ntaken; t++) {
    set(&b->req[b->taken[t]].state, R_DONE);
    pthread_cond_signal(&b->cv[b->taken[t]]);
  }
  set(&b->busy, 0);
  /* The next batch: one waiting member runs it; after a failure every
   * waiting member wakes to fail. */
  for (int i = 0; i < b->threads && b->pending > 0; i++)
    if (b->req[i].state == R_PENDING) {
      pthread_cond_signal(&b->cv[i]);
      if (!b->failed) break;
    }
}

/* Whether a batch may start now (with b->mu held and requests pending):
 * the inner evalfn is idle and, gathering, every running member waits. */
static int ready(const pb_batcher_t *b) {
  return !b->busy &&
         (b->mode == PB_BATCHER_OVERLAP || b->pending == b->active);
}

static int call(member_t *m, int kind, const pb_state_t *s, int n, float *out,
                pb_err_t *err) {
  if (n <= 0) return 0;
  pb_batcher_t *b = m->b;
  req_t *r = &b->req[m->idx];
  pthread_mutex_lock(&b->mu);
  b->st.requests++;
  *r = (req_t){kind, s, n, out, R_FREE, 0, {0, ""}};
  set(&r->state, R_PENDING);
  b->pending++;
  int rc, spun = 0;
  for (;;) {
    if (r->state == R_DONE) {
      rc = r->rc;
      if (rc != 0 && err) *err = r->err;
      break;
    }
    if (r->state == R_PENDING && b->failed) {
      b->pending--;
      rc = b->fail_rc;
      if (err) *err = b->fail_err;
      break;
    }
    if (r->state == R_PENDING && ready(b)) {
      run_batch(b); /* takes this request too */
    } else if (!spun && b->mode == PB_BATCHER_OVERLAP) {
      spun = 1;
      pthread_mutex_unlock(&b->mu);
      spin(b, r);
      pthread_mutex_lock(&b->mu);
    } else {
      pthread_cond_wait(&b->cv[m->idx], &b->mu);
    }
  }
  set(&r->state, R_FREE);
  pthread_mutex_unlock(&b->mu);
  return rc;
}

static int m_value(void *ctx, const pb_state_t *s, int n, float *out,
                   pb_err_t *err) {
  return call(ctx, K_V, s, n, out, err);
}

static int m_qvalues(void *ctx, const pb_state_t *s, int n, float *out,
                     pb_err_t *err) {
  return call(ctx, K_Q, s, n, out, err);
}

/* A member is done: gathering, the others no longer wait for it, and the
 * batch they wait for may be complete now (the leaving member runs it). */
static void leave(pb_batcher_t *b) {
  pthread_mutex_lock(&b->mu);
  b->active--;
  if (b->pending > 0 && !b->failed && ready(b)) run_batch(b);
  pthread_mutex_unlock(&b->mu);
}

static void run_member(member_t *m) {
  pb_batcher_t *b = m->b;
  pb_evalfn_t fn = {m_value, m_qvalues, m};
  pb_err_clear(&m->err);
  m->rc = b->work(b->ctx, m->idx, &fn, &m->err);
  leave(b);
}

static void *member_main(void *arg) {
  run_member(arg);
  return NULL;
}

int pb_batcher_run(pb_batcher_t *b, int members, const pb_evalfn_t *inner,
                   pb_batcher_work_fn work, void *ctx, pb_err_t *err) {
  if (b == NULL || inner == NULL || work == NULL || members < 1 ||
      members > b->threads)
    return pb_err_set(err, PB_EINVAL, "batcher: %d members (1..%d)", members,
                      b ? b->threads : 0);
  b->inner = inner;
  b->work = work;
  b->ctx = ctx;
  set(&b->busy, 0);
  b->active = members;
  b->pending = 0;
  b->failed = 0;
  for (int i = 0; i < members; i++) {
    b->m[i] = (member_t){.b = b, .idx = i};
    set(&b->req[i].state, R_FREE);
  }
  int start_rc = 0;
  pb_err_t start_err;
  pb_err_clear(&start_err);
  for (int i = 1; i < members; i++) {
    int e = pthread_create(&b->m[i].th, NULL, member_main, &b->m[i]);
    if (e == 0) {
      b->m[i].started = 1;
      continue;
    }
    /* The members that cannot start do no work. */
    start_rc = pb_err_set(&start_err, e == ENOMEM ? PB_ENOMEM : PB_EIO,
                          "batcher: cannot start a thread: %s", strerror(e));
    for (int k = i; k < members; k++) leave(b);
    break;
  }
  run_member(&b->m[0]);
  for (int i = 1; i < members; i++)
    if (b->m[i].started) pthread_join(b->m[i].th, NULL);
  for (int i = 0; i < members; i++)
    if (b->m[i].rc != 0) {
      if (err) *err = b->m[i].err;
      return b->m[i].rc;
    }
  if (start_rc != 0 && err) *err = start_err;
  return start_rc;
}

void pb_batcher_stats(const pb_batcher_t *b, pb_batcher_stats_t *st) {
  /* The lock is not part of the batcher's value: taking it is no change. */
  pthread_mutex_t *mu = (pthread_mutex_t *)&b->mu;
  pthread_mutex_lock(mu);
  *st = b->st;
  pthread_mutex_unlock(mu);
}
