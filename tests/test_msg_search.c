/* test_msg_search.c - the searchers' messages: search work items (the
 * positions and the versions; how to search is the run's config) and
 * their results, round trips and the refusals of the encoder. The decoder's refusals of a
 * peer's bytes are in test_msg_hostile.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "game.h"
#include "msg.h"
#include "msg_fixtures.h"
#include "rng.h"

static void test_round_trip_search(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 12, 0);
  enum { N = 300 };
  pb_state_t st[N];
  for (int i = 0; i < N; i++) {
    pb_state_t ep[42];
    int fr;
    uint32_t n = play_episode(&r, &pb_game_connect4, ep, &fr);
    st[i] = ep[pb_rng_below(&r, n)];
  }
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_WORK_ITEM, RUN, PB_GAME_CONNECT4, "learner");
  pb_msg_work_item_t *w = &m.work_item;
  w->item_id = 5;
  w->lease_ms = 60000;
  w->kind = PB_WORK_SEARCH;
  w->states = st;
  w->n_states = N;
  w->v_version = 3;
  w->q_version = 2;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_int_equal(d.work_item.kind, PB_WORK_SEARCH);
  assert_int_equal(d.work_item.n_states, N);
  assert_memory_equal(d.work_item.states, st, sizeof st);
  assert_int_equal(d.work_item.v_version, 3);
  assert_int_equal(d.work_item.q_version, 2);
  assert_int_equal(d.work_item.lease_ms, 60000);
  pb_msg_free(&d);

  static float q[N * 7];
  for (int i = 0; i < N * 7; i++) q[i] = (float)(pb_rng_uniform(&r) * 2 - 1);
  q[0] = -0.0f;
  q[1] = 1e-40f; /* subnormal: still bit-exact */
  q[2] = 0.0f;
  pb_msg_init(&m, PB_MSG_SEARCH_RESULT, RUN, PB_GAME_CONNECT4, SENDER);
  m.search_result = (pb_msg_search_result_t){5, N, 7, q};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.search_result.item_id, 5);
  assert_int_equal(d.search_result.n_states, N);
  assert_int_equal(d.search_result.n_actions, 7);
  assert_memory_equal(d.search_result.qvalues, q, sizeof q);
  pb_msg_free(&d);
}

/* A search item's bounds: 1..PB_MSG_MAX_STATES positions, a lease of
 * 1..PB_MSG_MAX_LEASE_MS, and states to pack; the encoder refuses others
 * naming the field. */
static void test_search_item_bounds(void **state) {
  (void)state;
  pb_state_t st[3];
  for (int i = 0; i < 3; i++) pb_game_connect4.reset(&st[i]);
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_WORK_ITEM, RUN, PB_GAME_CONNECT4, "learner");
  pb_msg_work_item_t *w = &m.work_item;
  *w = (pb_msg_work_item_t){.item_id = 9,
                            .lease_ms = PB_MSG_MAX_LEASE_MS,
                            .kind = PB_WORK_SEARCH,
                            .states = st,
                            .n_states = 3,
                            .v_version = 4,
                            .q_version = 3};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.work_item.lease_ms, PB_MSG_MAX_LEASE_MS);
  assert_true(d.work_item.v_version == 4 && d.work_item.q_version == 3);
  pb_msg_free(&d);
  w->lease_ms = PB_MSG_MAX_LEASE_MS + 1;
  encode_refused(&m, PB_EINVAL, "lease_ms");
  w->lease_ms = 0;
  encode_refused(&m, PB_EINVAL, "lease_ms");
  w->lease_ms = 1000;
  w->n_states = 0;
  encode_refused(&m, PB_EINVAL, "search.n_states");
  w->n_states = PB_MSG_MAX_STATES + 1;
  encode_refused(&m, PB_EINVAL, "search.n_states");
  w->n_states = 3;
  w->states = NULL;
  encode_refused(&m, PB_EINVAL, "search.states");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_search),
      cmocka_unit_test(test_search_item_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
