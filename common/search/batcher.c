/* batcher.c - see batcher.h. */
#include "batcher.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { K_NONE = 0, K_V = 1, K_Q = 2 };

typedef struct {
  int kind;
  const pb_state_t *states;
  int n;
  float *out;
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
  pthread_cond_t cv;
  const pb_evalfn_t *inner;
  pb_batcher_work_fn work;
  void *ctx;
  int active;   /* members still running */
  int waiting;  /* members with a request queued */
  uint64_t gen; /* batches answered */
  int failed;   /* the inner evalfn failed: every call fails now */
  int fail_rc;
  pb_err_t fail_err;
  pb_state_t *sbuf;
  size_t scap;
  float *obuf;
  size_t ocap; /* floats */
  pb_batcher_stats_t st;
  req_t req[PB_BATCHER_MAX_THREADS];
  member_t m[PB_BATCHER_MAX_THREADS];
};

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
  if (pthread_mutex_init(&b->mu, NULL) != 0) {
    free(b);
    pb_err_set(err, PB_ENOMEM, "batcher: cannot create a mutex");
    return NULL;
  }
  if (pthread_cond_init(&b->cv, NULL) != 0) {
    pthread_mutex_destroy(&b->mu);
    free(b);
    pb_err_set(err, PB_ENOMEM, "batcher: cannot create a condition");
    return NULL;
  }
  return b;
}

void pb_batcher_destroy(pb_batcher_t **pb) {
  if (pb == NULL || *pb == NULL) return;
  pb_batcher_t *b = *pb;
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  free(b->sbuf);
  free(b->obuf);
  free(b);
  *pb = NULL;
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

/* One inner call for every queued request of `kind`; with b->mu held. */
static void run_kind(pb_batcher_t *b, int kind) {
  const size_t w = kind == K_Q ? (size_t)b->g->num_actions : 1;
  size_t total = 0;
  for (int i = 0; i < b->threads; i++)
    if (b->req[i].kind == kind) total += (size_t)b->req[i].n;
  if (total == 0) return;
  pb_err_t e;
  pb_err_clear(&e);
  int rc = grow(b, total, total * w);
  if (rc != 0) {
    pb_err_set(&e, rc, "batcher: out of memory (%zu states)", total);
  } else {
    size_t k = 0;
    for (int i = 0; i < b->threads; i++) {
      const req_t *r = &b->req[i];
      if (r->kind != kind) continue;
      memcpy(b->sbuf + k, r->states, (size_t)r->n * sizeof *b->sbuf);
      k += (size_t)r->n;
    }
    rc = kind == K_Q
             ? b->inner->qvalues(b->inner->ctx, b->sbuf, (int)total, b->obuf, &e)
             : b->inner->value(b->inner->ctx, b->sbuf, (int)total, b->obuf, &e);
    if (kind == K_Q) {
      b->st.q_calls++;
      b->st.q_rows += total;
    } else {
      b->st.v_calls++;
      b->st.v_rows += total;
    }
  }
  size_t k = 0;
  for (int i = 0; i < b->threads; i++) {
    req_t *r = &b->req[i];
    if (r->kind != kind) continue;
    r->rc = rc;
    if (rc != 0)
      r->err = e;
    else
      memcpy(r->out, b->obuf + k * w, (size_t)r->n * w * sizeof *r->out);
    k += (size_t)r->n;
  }
  if (rc != 0 && !b->failed) {
    b->failed = 1;
    b->fail_rc = rc;
    b->fail_err = e;
  }
}

/* Answers every queued request; with b->mu held. */
static void run_batch(pb_batcher_t *b) {
  run_kind(b, K_Q);
  run_kind(b, K_V);
  for (int i = 0; i < b->threads; i++) b->req[i].kind = K_NONE;
  b->waiting = 0;
  b->gen++;
  pthread_cond_broadcast(&b->cv);
}

static int call(member_t *m, int kind, const pb_state_t *s, int n, float *out,
                pb_err_t *err) {
  if (n <= 0) return 0;
  pb_batcher_t *b = m->b;
  pthread_mutex_lock(&b->mu);
  b->st.requests++;
  if (b->failed) {
    int rc = b->fail_rc;
    if (err) *err = b->fail_err;
    pthread_mutex_unlock(&b->mu);
    return rc;
  }
  req_t *r = &b->req[m->idx];
  *r = (req_t){kind, s, n, out, 0, {0, ""}};
  b->waiting++;
  uint64_t mine = b->gen;
  if (b->waiting == b->active)
    run_batch(b);
  else
    while (b->gen == mine) pthread_cond_wait(&b->cv, &b->mu);
  int rc = r->rc;
  if (rc != 0 && err) *err = r->err;
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

/* A member is done: the others no longer wait for it. */
static void leave(pb_batcher_t *b) {
  pthread_mutex_lock(&b->mu);
  b->active--;
  if (b->active > 0 && b->waiting == b->active) run_batch(b);
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
  b->active = members;
  b->waiting = 0;
  b->failed = 0;
  for (int i = 0; i < members; i++) {
    b->m[i] = (member_t){.b = b, .idx = i};
    b->req[i].kind = K_NONE;
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
  *st = b->st;
}
