/* test_slots.c - the self-play scheduler (common/train/slots.h): every
 * episode number started once, in order, on its own stream; slots past
 * the last number stay idle; the finished episodes come out in number
 * order whatever order they finished in; an error leaves the output as
 * it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "episodes.h"
#include "game.h"
#include "rng.h"
#include "slots.h"

#define C4 (&pb_game_connect4)

/* Episode number i is i + 1 positions long, its reward (i % 3) - 1, so
 * that the output's order can be read back. */
static void add_episode(pb_episodes_t *done, const pb_slot_t *s) {
  pb_state_t hist[16];
  uint32_t len = (uint32_t)(s->index % 10) + 1;
  for (uint32_t t = 0; t < len; t++) hist[t] = s->cur;
  pb_err_t err;
  assert_int_equal(
      pb_episodes_add(done, hist, len, (int)(s->index % 3) - 1, 7, &err), 0);
}

static void test_order_streams_idle(void **state) {
  (void)state;
  enum { P = 3, N = 7 };
  const uint64_t seed = 99, first = 40;
  pb_slots_t run;
  pb_slot_t slot[P];
  pb_err_t err;
  pb_episodes_t done, out;
  pb_episodes_init(&done);
  pb_episodes_init(&out);
  assert_int_equal(pb_slots_begin(&run, C4, N, seed, first, &err), 0);
  for (int i = 0; i < P; i++) pb_slots_fill(&run, &slot[i]);
  pb_state_t s0;
  C4->reset(&s0);
  int started[N] = {0};
  for (int i = 0; i < P; i++) {
    assert_true(slot[i].active);
    assert_int_equal(slot[i].index, first + (uint64_t)i);
    assert_int_equal(slot[i].n, 0);
    assert_memory_equal(&slot[i].cur, &s0, sizeof s0);
    started[slot[i].index - first]++;
  }
  /* Finish in a scrambled order: the last slot first, then the first. */
  const int order[] = {2, 0, 1, 1, 2, 0, 1};
  for (int k = 0; k < N; k++) {
    assert_true(pb_slots_running(&run));
    pb_slot_t *s = &slot[order[k]];
    assert_true(s->active);
    /* its stream is (seed, index), whatever slot plays it */
    pb_rng_t want;
    pb_rng_seed(&want, seed, s->index);
    assert_int_equal(pb_rng_next(&s->rng), pb_rng_next(&want));
    add_episode(&done, s);
    pb_slots_finish(&run, s);
    assert_false(s->active);
    pb_slots_fill(&run, s);
    if (s->active) started[s->index - first]++;
  }
  for (int i = 0; i < N; i++) assert_int_equal(started[i], 1);
  for (int i = 0; i < P; i++) assert_false(slot[i].active); /* idle now */
  assert_false(pb_slots_running(&run));
  assert_int_equal(pb_slots_end(&run, &done, &out, 0, &err), 0);
  assert_int_equal(out.n_eps, N);
  for (int k = 0; k < N; k++) {
    uint64_t idx = first + (uint64_t)k;
    assert_int_equal(out.len[k], (uint32_t)(idx % 10) + 1);
    assert_int_equal(out.reward[k], (int)(idx % 3) - 1);
  }
  pb_episodes_free(&done);
  pb_episodes_free(&out);
}

static void test_error_keeps_output(void **state) {
  (void)state;
  pb_slots_t run;
  pb_slot_t slot;
  pb_err_t err;
  pb_episodes_t done, out;
  pb_episodes_init(&done);
  pb_episodes_init(&out);
  assert_int_equal(pb_slots_begin(&run, C4, 2, 1, 0, &err), 0);
  pb_slots_fill(&run, &slot);
  add_episode(&done, &slot);
  pb_slots_finish(&run, &slot);
  /* the engine failed before the second episode ended */
  assert_int_equal(pb_slots_end(&run, &done, &out, PB_ENN, &err), PB_ENN);
  assert_int_equal(out.n_eps, 0);
  assert_null(run.at);
  pb_episodes_free(&done);
  pb_episodes_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_streams_idle),
      cmocka_unit_test(test_error_keeps_output),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
