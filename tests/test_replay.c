/* test_replay.c - the replay window (common/train/replay.h): iterations
 * pushed, the oldest dropped past `keep`, samples read across them in
 * order, the checkpoint section written and read back exactly, and bad
 * sections (magic, another game, truncated, overlong, too many
 * iterations) refused with the window untouched; and the episodes'
 * capacity rule (pb_episodes_keep_newest) keeping whole newest episodes. */
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
  }
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
  assert_int_equal(len, 16 + 3 * 8 + 5 * (32 + 4 + 4 * A));
  assert_int_equal(pb_replay_init(&back, A, &err), 0);
  assert_int_equal(pb_replay_decode(&back, buf, len, "x.pbck", &err), 0);
  assert_int_equal(back.n, 3);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(back.it[i].n, r.it[i].n);
    size_t n = r.it[i].n;
    if (n == 0) continue;
    assert_memory_equal(back.it[i].states, r.it[i].states,
                        n * sizeof(pb_state_t));
    assert_memory_equal(back.it[i].v, r.it[i].v, n * sizeof(float));
    assert_memory_equal(back.it[i].q, r.it[i].q, n * A * sizeof(float));
  }
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
      cmocka_unit_test(test_keep_newest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
