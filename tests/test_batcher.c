/* test_batcher.c - several threads feeding one evalfn (common/search/batcher.h):
 * beam search and self-play split over threads give exactly the targets
 * and episodes of one thread (with an evalfn whose output for a state does
 * not depend on the rest of the call), and requests are batched, in both
 * modes (gathering: lock step; overlapping: a member never waits for
 * another member's work); an inner failure stops every member without a
 * hang, and uneven work does not deadlock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"
#include "beam_search.h"
#include "episodes.h"
#include "game.h"
#include "rng.h"
#include "selfplay.h"

/* A plain deterministic "network": V and Q are hashes of the state, in
 * [-1, 1]. Counts its calls (one caller at a time: the batcher's
 * contract). With hold set, its first call returns only once the batcher
 * has queued hold_requests member calls, so that the next batch is sure
 * to join the others' requests. */
typedef struct {
  const pb_game_t *g;
  int calls, fail_at; /* fail_at > 0: the fail_at-th call fails */
  int max_rows;
  const pb_batcher_t *hold;
  uint64_t hold_requests;
} plain_t;

static void plain_hold(plain_t *p) {
  if (p->hold == NULL || p->calls != 1) return;
  for (;;) {
    pb_batcher_stats_t st;
    pb_batcher_stats(p->hold, &st);
    if (st.requests >= p->hold_requests) return;
    sched_yield();
  }
}

static uint64_t hash_state(const pb_state_t *s) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < PB_STATE_WORDS; i++) h = pb_mix64(h ^ s->w[i]);
  return h;
}

static float unit(uint64_t h) {
  return (float)((double)(h >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static int plain_v(void *ctx, const pb_state_t *s, int n, float *out,
                   pb_err_t *err) {
  plain_t *p = ctx;
  if (++p->calls == p->fail_at)
    return pb_err_set(err, PB_ENN, "plain: call %d fails", p->calls);
  plain_hold(p);
  if (n > p->max_rows) p->max_rows = n;
  for (int i = 0; i < n; i++) out[i] = unit(hash_state(&s[i]));
  return 0;
}

static int plain_q(void *ctx, const pb_state_t *s, int n, float *out,
                   pb_err_t *err) {
  plain_t *p = ctx;
  if (++p->calls == p->fail_at)
    return pb_err_set(err, PB_ENN, "plain: call %d fails", p->calls);
  plain_hold(p);
  if (n > p->max_rows) p->max_rows = n;
  const int A = p->g->num_actions;
  for (int i = 0; i < n; i++) {
    uint64_t h = hash_state(&s[i]);
    for (int a = 0; a < A; a++) out[i * A + a] = unit(pb_mix64(h + (uint64_t)a));
  }
  return 0;
}

static const pb_game_t *c4(void) { return pb_game_by_id(PB_GAME_CONNECT4); }

/* n positions of random Connect Four games, none terminal. */
static void positions(pb_state_t *pos, int n, uint64_t seed) {
  const pb_game_t *g = c4();
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  for (int i = 0; i < n; i++) {
    g->reset(&pos[i]);
    int plies = (int)pb_rng_below(&rng, 20);
    for (int k = 0; k < plies; k++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&pos[i], acts), done = 0;
      pb_state_t t = pos[i];
      g->step(&t, acts[pb_rng_below(&rng, (uint32_t)na)], &done);
      if (done) break;
      pos[i] = t;
    }
  }
}

/* ---- beam search over threads ----------------------------------------- */

typedef struct {
  pb_beam_t *beam[8];
  const pb_state_t *pos;
  int n, members;
  float *out;
} search_job_t;

static int search_work(void *ctx, int member, const pb_evalfn_t *ev,
                       pb_err_t *err) {
  search_job_t *j = ctx;
  int lo = j->n * member / j->members, hi = j->n * (member + 1) / j->members;
  if (hi == lo) return 0;
  return pb_beam_run(j->beam[member], j->pos + lo, hi - lo, ev,
                     j->out + (size_t)lo * c4()->num_actions, err);
}

static void test_search_same_as_one_thread(void **state) {
  (void)state;
  const pb_game_t *g = c4();
  enum { N = 300, E = 20, M = 4, P = 16 };
  pb_state_t pos[N];
  positions(pos, N, 11);
  pb_err_t err;
  plain_t p1 = {.g = g};
  pb_evalfn_t inner1 = {plain_v, plain_q, &p1};
  float *want = malloc(sizeof(float) * N * 7), *got = malloc(sizeof(float) * N * 7);
  assert_non_null(want);
  assert_non_null(got);
  pb_beam_t *one = pb_beam_new(g, E, M, P, &err);
  assert_non_null(one);
  assert_int_equal(pb_beam_run(one, pos, N, &inner1, want, &err), 0);
  pb_beam_destroy(&one);
  const int single_calls = p1.calls;

  for (int mode = 0; mode < 2; mode++)
    for (int members = 1; members <= 8; members *= 2) {
      search_job_t j = {.pos = pos, .n = N, .members = members, .out = got};
      for (int m = 0; m < members; m++) {
        j.beam[m] = pb_beam_new(g, E, M, P, &err);
        assert_non_null(j.beam[m]);
      }
      pb_batcher_t *b = pb_batcher_new(g, 8, &err);
      assert_non_null(b);
      pb_batcher_set_mode(b, mode ? PB_BATCHER_OVERLAP : PB_BATCHER_GATHER);
      /* Overlapping, the first inner call waits until every member has
       * queued its first request: the next batch joins the other members'
       * requests. (Gathering, they are queued already.) */
      plain_t p = {.g = g, .hold = members > 1 ? b : NULL,
                   .hold_requests = (uint64_t)members};
      pb_evalfn_t inner = {plain_v, plain_q, &p};
      memset(got, 0, sizeof(float) * N * 7);
      assert_int_equal(
          pb_batcher_run(b, members, &inner, search_work, &j, &err), 0);
      assert_memory_equal(want, got, sizeof(float) * N * 7);
      pb_batcher_stats_t st;
      pb_batcher_stats(b, &st);
      assert_int_equal(st.v_calls + st.q_calls, (uint64_t)p.calls);
      assert_true(st.batches <= st.v_calls + st.q_calls);
      if (mode == 0 && members > 1) {
        /* Lock step: every member in each batch while all run, far fewer
         * inner calls than the members made. */
        assert_int_equal(st.max_requests, (uint64_t)members);
        assert_true(st.requests > (uint64_t)p.calls);
        assert_true(p.calls <= single_calls);
        assert_true(p.max_rows > P); /* more than one member's batch */
      }
      if (mode == 1 && members > 2) {
        /* The members' requests queued during the first call are
         * answered together. */
        assert_true(st.max_requests >= (uint64_t)members - 1);
        assert_true(st.requests > st.batches);
        assert_true(p.max_rows > P);
      }
      pb_batcher_destroy(&b);
      for (int m = 0; m < members; m++) pb_beam_destroy(&j.beam[m]);
    }
  free(want);
  free(got);
}

/* Members with nothing to do, or far less than the others, leave early;
 * the others go on without waiting for them. */
static void test_uneven_work(void **state) {
  (void)state;
  const pb_game_t *g = c4();
  pb_state_t pos[3];
  positions(pos, 3, 5);
  pb_err_t err;
  search_job_t j = {.pos = pos, .n = 3, .members = 8};
  float out[3 * 7];
  j.out = out;
  for (int m = 0; m < 8; m++) j.beam[m] = pb_beam_new(g, 50, 6, 4, &err);
  float want[3 * 7];
  plain_t p1 = {.g = g};
  pb_evalfn_t inner1 = {plain_v, plain_q, &p1};
  assert_int_equal(pb_beam_run(j.beam[0], pos, 3, &inner1, want, &err), 0);
  for (int mode = 0; mode < 2; mode++) {
    pb_batcher_t *b = pb_batcher_new(g, 8, &err);
    pb_batcher_set_mode(b, mode ? PB_BATCHER_OVERLAP : PB_BATCHER_GATHER);
    plain_t p = {.g = g};
    pb_evalfn_t inner = {plain_v, plain_q, &p};
    memset(out, 0, sizeof out);
    assert_int_equal(pb_batcher_run(b, 8, &inner, search_work, &j, &err), 0);
    assert_memory_equal(want, out, sizeof out);
    /* Twice with the same batcher. */
    memset(out, 0, sizeof out);
    assert_int_equal(pb_batcher_run(b, 8, &inner, search_work, &j, &err), 0);
    assert_memory_equal(want, out, sizeof out);
    pb_batcher_destroy(&b);
  }
  for (int m = 0; m < 8; m++) pb_beam_destroy(&j.beam[m]);
}

/* Overlapping, no lock step: member 1 starts only after member 0 has
 * finished all its work, so member 0's calls are answered without waiting
 * for member 1 (gathering, which waits for every member before calling
 * the network, would hang here). The targets are still one thread's. */
typedef struct {
  search_job_t s;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int first_done;
} after_job_t;

static int after_work(void *ctx, int member, const pb_evalfn_t *ev,
                      pb_err_t *err) {
  after_job_t *a = ctx;
  if (member == 1) {
    pthread_mutex_lock(&a->mu);
    while (!a->first_done) pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
  }
  int rc = search_work(&a->s, member, ev, err);
  if (member == 0) {
    pthread_mutex_lock(&a->mu);
    a->first_done = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
  }
  return rc;
}

static void test_no_lock_step(void **state) {
  (void)state;
  const pb_game_t *g = c4();
  enum { N = 40 };
  pb_state_t pos[N];
  positions(pos, N, 13);
  pb_err_t err;
  float want[N * 7], got[N * 7];
  after_job_t a = {.s = {.pos = pos, .n = N, .members = 2, .out = got}};
  pthread_mutex_init(&a.mu, NULL);
  pthread_cond_init(&a.cv, NULL);
  for (int m = 0; m < 2; m++) a.s.beam[m] = pb_beam_new(g, 20, 4, 8, &err);
  plain_t p1 = {.g = g};
  pb_evalfn_t inner1 = {plain_v, plain_q, &p1};
  assert_int_equal(pb_beam_run(a.s.beam[0], pos, N, &inner1, want, &err), 0);
  pb_batcher_t *b = pb_batcher_new(g, 2, &err);
  pb_batcher_set_mode(b, PB_BATCHER_OVERLAP);
  plain_t p = {.g = g};
  pb_evalfn_t inner = {plain_v, plain_q, &p};
  assert_int_equal(pb_batcher_run(b, 2, &inner, after_work, &a, &err), 0);
  assert_memory_equal(want, got, sizeof got);
  pb_batcher_stats_t st;
  pb_batcher_stats(b, &st);
  assert_int_equal(st.max_requests, 1); /* the members never met */
  pb_batcher_destroy(&b);
  for (int m = 0; m < 2; m++) pb_beam_destroy(&a.s.beam[m]);
  pthread_cond_destroy(&a.cv);
  pthread_mutex_destroy(&a.mu);
}

/* The inner evalfn fails at its 3rd call: every member gets the error and
 * stops; the run returns it; the batcher works again afterwards. In both
 * modes. */
static void test_inner_failure(void **state) {
  (void)state;
  const pb_game_t *g = c4();
  enum { N = 64 };
  pb_state_t pos[N];
  positions(pos, N, 7);
  pb_err_t err;
  float out[N * 7];
  search_job_t j = {.pos = pos, .n = N, .members = 4, .out = out};
  for (int m = 0; m < 4; m++) j.beam[m] = pb_beam_new(g, 20, 4, 8, &err);
  for (int mode = 0; mode < 2; mode++) {
    pb_batcher_t *b = pb_batcher_new(g, 4, &err);
    pb_batcher_set_mode(b, mode ? PB_BATCHER_OVERLAP : PB_BATCHER_GATHER);
    plain_t p = {.g = g, .fail_at = 3};
    pb_evalfn_t inner = {plain_v, plain_q, &p};
    pb_err_clear(&err);
    assert_int_equal(pb_batcher_run(b, 4, &inner, search_work, &j, &err),
                     PB_ENN);
    assert_non_null(strstr(err.msg, "call 3 fails"));
    assert_int_equal(p.calls, 3); /* nobody called on after the failure */
    plain_t ok = {.g = g};
    pb_evalfn_t inner2 = {plain_v, plain_q, &ok};
    assert_int_equal(pb_batcher_run(b, 4, &inner2, search_work, &j, &err), 0);
    pb_batcher_destroy(&b);
  }
  for (int m = 0; m < 4; m++) pb_beam_destroy(&j.beam[m]);
}

/* ---- self-play over threads -------------------------------------------- */

typedef struct {
  pb_selfplay_t *sp[4];
  pb_episodes_t eps[4];
  int n, members;
} play_job_t;

static int play_work(void *ctx, int member, const pb_evalfn_t *ev,
                     pb_err_t *err) {
  play_job_t *j = ctx;
  int lo = j->n * member / j->members, hi = j->n * (member + 1) / j->members;
  return pb_selfplay_run(j->sp[member], hi - lo, 99, (uint64_t)lo, ev, 1,
                         &j->eps[member], err);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The hashes of every episode (positions and reward), sorted. */
static void episode_hashes(const pb_episodes_t *e, uint64_t *h) {
  for (size_t k = 0; k < e->n_eps; k++) {
    uint64_t x = (uint64_t)(e->reward[k] + 2);
    for (uint32_t i = 0; i < e->len[k]; i++)
      x = pb_mix64(x ^ hash_state(&e->states[e->start[k] + i]));
    h[k] = x;
  }
  qsort(h, e->n_eps, sizeof *h, cmp_u64);
}

static void test_selfplay_same_episodes(void **state) {
  (void)state;
  const pb_game_t *g = c4();
  enum { N = 40 };
  pb_selfplay_opts_t o = {8, 42, 0.25, 0.5, 1.0};
  pb_err_t err;
  plain_t p1 = {.g = g};
  pb_evalfn_t inner1 = {plain_v, plain_q, &p1};
  pb_selfplay_t *one = pb_selfplay_new(g, &o, &err);
  pb_episodes_t ref;
  pb_episodes_init(&ref);
  assert_int_equal(pb_selfplay_run(one, N, 99, 0, &inner1, 1, &ref, &err), 0);
  pb_selfplay_destroy(&one);
  uint64_t want[N], got[N];
  episode_hashes(&ref, want);

  play_job_t j = {.n = N, .members = 4};
  for (int m = 0; m < 4; m++) {
    j.sp[m] = pb_selfplay_new(g, &o, &err);
    pb_episodes_init(&j.eps[m]);
  }
  pb_batcher_t *b = pb_batcher_new(g, 4, &err);
  for (int mode = 0; mode < 2; mode++) {
    pb_batcher_set_mode(b, mode ? PB_BATCHER_OVERLAP : PB_BATCHER_GATHER);
    for (int m = 0; m < 4; m++) pb_episodes_clear(&j.eps[m]);
    plain_t p = {.g = g};
    pb_evalfn_t inner = {plain_v, plain_q, &p};
    assert_int_equal(pb_batcher_run(b, 4, &inner, play_work, &j, &err), 0);
    pb_episodes_t all;
    pb_episodes_init(&all);
    for (int m = 0; m < 4; m++)
      assert_int_equal(pb_episodes_append(&all, &j.eps[m], &err), 0);
    assert_int_equal(all.n_eps, N);
    assert_int_equal(all.n_states, ref.n_states);
    episode_hashes(&all, got);
    assert_memory_equal(want, got, sizeof want);
    pb_episodes_free(&all);
  }
  pb_episodes_free(&ref);
  for (int m = 0; m < 4; m++) {
    pb_selfplay_destroy(&j.sp[m]);
    pb_episodes_free(&j.eps[m]);
  }
  pb_batcher_destroy(&b);
}

static void test_bad_arguments(void **state) {
  (void)state;
  pb_err_t err;
  assert_null(pb_batcher_new(c4(), 0, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_batcher_new(c4(), PB_BATCHER_MAX_THREADS + 1, &err));
  assert_null(pb_batcher_new(NULL, 2, &err));
  pb_batcher_t *b = pb_batcher_new(c4(), 2, &err);
  plain_t p = {.g = c4()};
  pb_evalfn_t inner = {plain_v, plain_q, &p};
  assert_int_equal(pb_batcher_run(b, 3, &inner, search_work, NULL, &err),
                   PB_EINVAL);
  assert_int_equal(pb_batcher_run(b, 0, &inner, search_work, NULL, &err),
                   PB_EINVAL);
  pb_batcher_destroy(&b);
  pb_batcher_destroy(&b);
  assert_null(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_search_same_as_one_thread),
      cmocka_unit_test(test_uneven_work),
      cmocka_unit_test(test_no_lock_step),
      cmocka_unit_test(test_inner_failure),
      cmocka_unit_test(test_selfplay_same_episodes),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
