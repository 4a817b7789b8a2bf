/* test_replay.c - the replay window (common/train/replay.h): iterations
 * pushed, the oldest dropped past `keep`, samples read across them in
 * order, the checkpoint section written and read back exactly (with the
 * tags of who delivered each position; a section of the first format,
 * without them, still read), and bad sections (magic, another game,
 * truncated, overlong, too many iterations, a corrupt tag) refused with
 * the window untouched; positions dropped by who delivered them, the
 * rest kept bit for bit; and the episodes' capacity rule
 * (pb_episodes_keep_newest) keeping whole newest episodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "episodes.h"
#include "game.h"
#include "replay.h"

enum { A = 7 };

/* Connection c's tag (of one learner start), and key k's. */
#define CONN(c) PB_REPLAY_TAG(PB_REPLAY_TAG_CONN, (0xABCull << 32) | (c))
#define KEY(k) PB_REPLAY_TAG(PB_REPLAY_TAG_KEY, 0x5EED00ull + (k))

/* Who delivered position k of iteration `tag`: its self-play episode
 * connection 1 + k % 3 (none for every fifth), its search targets key
 * 1 + k % 2. */
static uint64_t by_selfplay(int tag, size_t k) {
  (void)tag;
  return k % 5 == 4 ? 0 : CONN(1 + k % 3);
}
static uint64_t by_search(int tag, size_t k) {
  (void)tag;
  return KEY(1 + k % 2);
}

/* Iteration `tag` of n positions: recognisable states and targets. */
static void push(pb_replay_t *r, int tag, size_t n, int keep) {
  pb_err_t err;
  pb_replay_iter_t *it = pb_replay_push(r, n, keep, &err);
  assert_non_null(it);
  for (size_t k = 0; k < n; k++) {
    memset(&it->states[k], 0, sizeof it->states[k]);
    it->states[k].w[0] = (uint64_t)tag * 1000 + k;
    it->v[k] = (float)tag + 0.001f * (float)k;
    for (int a = 0; a < A; a++) it->q[k * A + a] = (float)(tag * 10 + a);
    assert_true(it->by[k * PB_REPLAY_BY] == 0); /* zeroed */
    it->by[k * PB_REPLAY_BY + PB_REPLAY_BY_SELFPLAY] = by_selfplay(tag, k);
    it->by[k * PB_REPLAY_BY + PB_REPLAY_BY_SEARCH] = by_search(tag, k);
  }
}

/* Iteration i of a and b are the same, bit for bit. */
static void same_iter(const pb_replay_iter_t *a, const pb_replay_iter_t *b,
                      int tags) {
  assert_int_equal(a->n, b->n);
  const size_t n = a->n;
  if (n == 0) return;
  assert_memory_equal(a->states, b->states, n * sizeof(pb_state_t));
  assert_memory_equal(a->v, b->v, n * sizeof(float));
  assert_memory_equal(a->q, b->q, n * A * sizeof(float));
  if (tags)
    assert_memory_equal(a->by, b->by, n * PB_REPLAY_BY * sizeof(uint64_t));
}

static void test_push_trim_sample(void **state) {
  (void)state;
  pb_replay_t r;
  pb_err_t err;
  assert_int_equal(pb_replay_init(&r, A, &err), 0);
  assert_int_equal(pb_replay_positions(&r), 0);
  push(&r, 1, 3, 2);
  push(&r, 2, 4, 2);
  push(&r, 3, 5, 2); /* keep 2: iteration 1 goes */
  assert_int_equal(r.n, 2);
  assert_int_equal(pb_replay_positions(&r), 9);
  const pb_state_t *s;
  float v;
  const float *q;
  pb_replay_sample(&r, 0, &s, &v, &q);
  assert_int_equal(s->w[0], 2000);
  pb_replay_sample(&r, 3, &s, &v, &q);
  assert_int_equal(s->w[0], 2003);
  pb_replay_sample(&r, 4, &s, &v, &q);
  assert_int_equal(s->w[0], 3000);
  assert_true(v == 3.0f);
  assert_true(q[6] == 36.0f);
  pb_replay_sample(&r, 8, &s, NULL, NULL);
  assert_int_equal(s->w[0], 3004);
  pb_replay_trim(&r, 1);
  assert_int_equal(r.n, 1);
  assert_int_equal(pb_replay_positions(&r), 5);
  pb_replay_trim(&r, 0);
  assert_int_equal(pb_replay_positions(&r), 0);
  pb_replay_free(&r);
  pb_replay_free(&r); /* twice is harmless */
}

static void test_section_round_trip_and_refusals(void **state) {
  (void)state;
  pb_replay_t r, back;
  pb_err_t err;
  assert_int_equal(pb_replay_init(&r, A, &err), 0);
  push(&r, 5, 2, 3);
  push(&r, 6, 0, 3); /* an empty iteration */
  push(&r, 7, 3, 3);
  uint8_t *buf = NULL;
  size_t len = 0;
  assert_int_equal(pb_replay_encode(&r, &buf, &len, &err), 0);
  assert_int_equal(len, 16 + 3 * 8 + 5 * (32 + 4 + 4 * A + 8 * PB_REPLAY_BY));
  assert_memory_equal(buf, "PBREPLV2", 8); /* format 2 */
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  assert_int_equal(pb_replay_decode(&back, buf, len, "x.pbck", &err), 0);
  assert_int_equal(back.n, 3);
  for (int i = 0; i < 3; i++) same_iter(&back.it[i], &r.it[i], 1);
  pb_replay_free(&back);
  /* refusals: nothing is left in the window */
  uint8_t *bad = malloc(len + 8);
  struct {
    const char *what;
    size_t len;
    void (*mess)(uint8_t *);
  } cases[] = {
      {"truncated", len - 1, NULL},
      {"overlong", len + 4, NULL},
      {"header only", 15, NULL},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memcpy(bad, buf, len);
    memset(bad + len, 0, 8);
    assert_int_equal(pb_replay_init(&back, A, &err), 0);
    assert_int_equal(pb_replay_decode(&back, bad, cases[c].len, "x.pbck", &err),
                     PB_ECORRUPT);
    assert_non_null(strstr(err.msg, "x.pbck"));
    assert_int_equal(back.n, 0);
    pb_replay_free(&back);
  }
  memcpy(bad, buf, len);
  bad[0] ^= 1; /* magic */
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  assert_int_equal(pb_replay_decode(&back, bad, len, "m.pbck", &err),
                   PB_ECORRUPT);
  memcpy(bad, buf, len);
  pb_le_put32(bad + 8, A + 1); /* another game's actions */
  assert_int_equal(pb_replay_decode(&back, bad, len, "m.pbck", &err),
                   PB_ECORRUPT);
  memcpy(bad, buf, len);
  pb_le_put32(bad + 12, PB_REPLAY_MAX_ITERATIONS + 1);
  assert_int_equal(pb_replay_decode(&back, bad, len, "m.pbck", &err),
                   PB_ECORRUPT);
  memcpy(bad, buf, len);
  pb_le_put64(bad + 16, (uint64_t)1 << 40); /* absurd count */
  assert_int_equal(pb_replay_decode(&back, bad, len, "m.pbck", &err),
                   PB_ECORRUPT);
  assert_int_equal(back.n, 0);
  pb_replay_free(&back);
  /* move: dst takes everything, src holds nothing */
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  push(&back, 9, 1, 1);
  pb_replay_move(&back, &r);
  assert_int_equal(back.n, 3);
  assert_null(r.it);
  pb_replay_free(&r);
  pb_replay_free(&back);
  free(bad);
  free(buf);
}

/* Positions leave the window by either of their tags; the rest stay in
 * their order, bit for bit; an iteration may be left empty. */
static void test_drop_by_tag(void **state) {
  (void)state;
  pb_replay_t r, want;
  pb_err_t err;
  assert_int_equal(pb_replay_init(&r, A, &err), 0);
  assert_int_equal(pb_replay_init(&want, A, &err), 0);
  push(&r, 1, 10, 4);
  push(&r, 2, 7, 4);
  push(&r, 3, 1, 4);
  /* Nothing delivered by these: nothing leaves. A 0 matches nothing. */
  const uint64_t none[] = {0, CONN(9), KEY(7)};
  assert_int_equal(pb_replay_drop(&r, none, 3), 0);
  assert_int_equal(pb_replay_drop(&r, NULL, 0), 0);
  assert_int_equal(pb_replay_positions(&r), 18);
  /* Connection 2's self-play: position k with k % 3 == 1, k % 5 != 4. */
  const uint64_t c2[] = {CONN(2)};
  size_t left[3] = {0}, expect = 0;
  const size_t ns[3] = {10, 7, 1};
  for (int i = 0; i < 3; i++) {
    pb_replay_iter_t *w = pb_replay_push(&want, ns[i], 4, &err);
    assert_non_null(w);
    for (size_t k = 0; k < ns[i]; k++) {
      if (by_selfplay(i + 1, k) == CONN(2)) {
        expect++;
        continue;
      }
      const size_t j = left[i]++;
      w->states[j] = r.it[i].states[k];
      w->v[j] = r.it[i].v[k];
      memcpy(&w->q[j * A], &r.it[i].q[k * A], A * sizeof(float));
      memcpy(&w->by[j * PB_REPLAY_BY], &r.it[i].by[k * PB_REPLAY_BY],
             PB_REPLAY_BY * sizeof(uint64_t));
    }
    w->n = left[i];
  }
  assert_int_equal(expect, 2 + 1); /* k = 1, 7 of 10 (4 is 0); 1 of 7 */
  assert_int_equal(pb_replay_drop(&r, c2, 1), expect);
  assert_int_equal(r.n, 3);
  for (int i = 0; i < 3; i++) same_iter(&r.it[i], &want.it[i], 1);
  /* Dropping it again drops nothing. */
  assert_int_equal(pb_replay_drop(&r, c2, 1), 0);
  /* Key 1's search targets and connection 3's self-play (a set, sorted):
   * what is left is key 2's with connection 1's self-play or none. */
  uint64_t set[] = {CONN(3), KEY(1)};
  if (set[0] > set[1]) {
    uint64_t t = set[0];
    set[0] = set[1];
    set[1] = t;
  }
  const size_t before = pb_replay_positions(&r);
  const size_t out = pb_replay_drop(&r, set, 2);
  assert_true(out > 0);
  assert_int_equal(pb_replay_positions(&r), before - out);
  for (int i = 0; i < r.n; i++)
    for (size_t k = 0; k < r.it[i].n; k++) {
      const uint64_t *by = &r.it[i].by[k * PB_REPLAY_BY];
      assert_true(by[PB_REPLAY_BY_SEARCH] == KEY(2));
      assert_true(by[PB_REPLAY_BY_SELFPLAY] == CONN(1) ||
                  by[PB_REPLAY_BY_SELFPLAY] == 0);
      /* its data is still its own */
      const uint64_t w0 = r.it[i].states[k].w[0];
      assert_true(r.it[i].q[k * A + 2] == (float)((i + 1) * 10 + 2));
      assert_true(w0 / 1000 == (uint64_t)(i + 1));
    }
  assert_int_equal(r.it[2].n, 0); /* its one position was key 1's */
  /* Everything: the window holds iterations with no position. */
  const uint64_t all[] = {KEY(1), KEY(2)};
  pb_replay_drop(&r, all, 2);
  assert_int_equal(pb_replay_positions(&r), 0);
  assert_int_equal(r.n, 3);
  /* and it still takes new iterations and round-trips */
  push(&r, 4, 2, 4);
  uint8_t *buf;
  size_t len;
  assert_int_equal(pb_replay_encode(&r, &buf, &len, &err), 0);
  pb_replay_t back;
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  assert_int_equal(pb_replay_decode(&back, buf, len, "d.pbck", &err), 0);
  assert_int_equal(back.n, 4);
  for (int i = 0; i < 4; i++) same_iter(&back.it[i], &r.it[i], 1);
  free(buf);
  pb_replay_free(&back);
  pb_replay_free(&want);
  pb_replay_free(&r);
}

/* A section of format 1 (magic "PBREPLAY", no tags), as checkpoints
 * written before the tags hold it: read, every tag 0. */
static void test_old_format(void **state) {
  (void)state;
  pb_replay_t r, back;
  pb_err_t err;
  assert_int_equal(pb_replay_init(&r, A, &err), 0);
  push(&r, 1, 3, 3);
  push(&r, 2, 0, 3);
  push(&r, 3, 2, 3);
  uint8_t *buf;
  size_t len;
  assert_int_equal(pb_replay_encode(&r, &buf, &len, &err), 0);
  /* Format 1: the same without each iteration's tags. */
  uint8_t *old = malloc(len);
  assert_non_null(old);
  memcpy(old, "PBREPLAY", 8);
  memcpy(old + 8, buf + 8, 8);
  size_t in = 16, out = 16;
  for (int i = 0; i < 3; i++) {
    const size_t n = (size_t)pb_le_get64(buf + in);
    const size_t body = 8 + n * (32 + 4 + 4 * A);
    memcpy(old + out, buf + in, body);
    in += body + n * 8 * PB_REPLAY_BY;
    out += body;
  }
  assert_int_equal(in, len);
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  assert_int_equal(pb_replay_decode(&back, old, out, "old.pbck", &err), 0);
  assert_int_equal(back.n, 3);
  for (int i = 0; i < 3; i++) {
    same_iter(&back.it[i], &r.it[i], 0);
    for (size_t k = 0; k < back.it[i].n * PB_REPLAY_BY; k++)
      assert_true(back.it[i].by[k] == 0);
  }
  /* Nobody known delivered them: no drop takes any. */
  const uint64_t t[] = {CONN(1), CONN(2), CONN(3)};
  assert_int_equal(pb_replay_drop(&back, t, 3), 0);
  pb_replay_free(&back);
  /* A format 1 section with a format 2 magic is refused (too short). */
  memcpy(old, "PBREPLV2", 8);
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  assert_int_equal(pb_replay_decode(&back, old, out, "old.pbck", &err),
                   PB_ECORRUPT);
  assert_int_equal(back.n, 0);
  pb_replay_free(&back);
  free(old);
  free(buf);
  pb_replay_free(&r);
}

/* A tag of an unknown kind, or a kind with nothing in it, is refused by
 * name: the file, the iteration, the position, which tag and its value. */
static void test_corrupt_tag(void **state) {
  (void)state;
  pb_replay_t r, back;
  pb_err_t err;
  assert_int_equal(pb_replay_init(&r, A, &err), 0);
  push(&r, 1, 2, 2);
  push(&r, 2, 3, 2);
  uint8_t *buf;
  size_t len;
  assert_int_equal(pb_replay_encode(&r, &buf, &len, &err), 0);
  /* The search tag of position 1 of iteration 1 (the second). */
  const size_t it1 = 16 + 8 + 2 * (32 + 4 + 4 * A + 8 * PB_REPLAY_BY);
  const size_t at = it1 + 8 + 3 * (32 + 4 + 4 * A) +
                    (1 * PB_REPLAY_BY + PB_REPLAY_BY_SEARCH) * 8;
  assert_true(pb_le_get64(buf + at) == by_search(2, 1));
  const uint64_t bad[] = {
      (uint64_t)7 << 56 | 1,                   /* an unknown kind */
      PB_REPLAY_TAG(PB_REPLAY_TAG_CONN, 0),    /* a connection of nothing */
      PB_REPLAY_TAG(PB_REPLAY_TAG_KEY, 0),
  };
  for (int c = 0; c < 3; c++) {
    uint64_t keep = pb_le_get64(buf + at);
    pb_le_put64(buf + at, bad[c]);
    assert_int_equal(pb_replay_init(&back, A, &err), 0);
    assert_int_equal(pb_replay_decode(&back, buf, len, "t.pbck", &err),
                     PB_ECORRUPT);
    assert_non_null(strstr(err.msg, "t.pbck"));
    assert_non_null(strstr(err.msg, "position 1 of iteration 1"));
    assert_non_null(strstr(err.msg, "corrupt search tag"));
    assert_int_equal(back.n, 0);
    pb_replay_free(&back);
    pb_le_put64(buf + at, keep);
  }
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  assert_int_equal(pb_replay_decode(&back, buf, len, "t.pbck", &err), 0);
  pb_replay_free(&back);
  free(buf);
  pb_replay_free(&r);
}

static void test_keep_newest(void **state) {
  (void)state;
  pb_episodes_t e;
  pb_episodes_init(&e);
  pb_state_t s[8];
  memset(s, 0, sizeof s);
  pb_err_t err;
  for (int k = 0; k < 4; k++) {
    for (int t = 0; t < 8; t++) s[t].w[0] = (uint64_t)(k * 100 + t);
    assert_int_equal(pb_episodes_add(&e, s, (uint32_t)(k + 2), k % 2 ? 1 : -1,
                                     (uint64_t)k, &err),
                     0);
  }
  /* lengths 2, 3, 4, 5 = 14 positions */
  assert_int_equal(pb_episodes_keep_newest(&e, 14), 0);
  assert_int_equal(pb_episodes_keep_newest(&e, 10), 2); /* 4 + 5 fit */
  assert_int_equal(e.n_eps, 2);
  assert_int_equal(e.n_states, 9);
  assert_int_equal(e.len[0], 4);
  assert_int_equal(e.version[0], 2);
  assert_int_equal(e.states[e.start[0]].w[0], 200);
  assert_int_equal(e.states[e.start[1] + 4].w[0], 304);
  assert_int_equal(pb_episodes_keep_newest(&e, 5), 1); /* 4 + 5 > 5 */
  assert_int_equal(e.n_eps, 1);
  assert_int_equal(e.len[0], 5);
  /* whole episodes only: a newest one longer than the cap leaves none */
  assert_int_equal(pb_episodes_keep_newest(&e, 4), 1);
  assert_int_equal(e.n_eps, 0);
  assert_int_equal(e.n_states, 0);
  pb_episodes_free(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_push_trim_sample),
      cmocka_unit_test(test_section_round_trip_and_refusals),
      cmocka_unit_test(test_drop_by_tag),
      cmocka_unit_test(test_old_format),
      cmocka_unit_test(test_corrupt_tag),
      cmocka_unit_test(test_keep_newest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
