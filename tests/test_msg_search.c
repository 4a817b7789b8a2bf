/* test_msg_search.c - the searchers' messages: search work items (the
 * beam's E and M, or abnet targets' nodes and depth) and their results,
 * round trips and the refusals of the encoder. The decoder's refusals of a
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
  w->expansions = 500;
  w->max_depth = 12;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_int_equal(d.work_item.kind, PB_WORK_SEARCH);
  assert_int_equal(d.work_item.n_states, N);
  assert_memory_equal(d.work_item.states, st, sizeof st);
  assert_int_equal(d.work_item.v_version, 3);
  assert_int_equal(d.work_item.q_version, 2);
  assert_int_equal(d.work_item.expansions, 500);
  assert_int_equal(d.work_item.max_depth, 12);
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

/* A search item for abnet targets: the algorithm and its budget round
 * trip; the encoder refuses an unknown algorithm, a budget out of range, a
 * depth abnet cannot search, and a budget on a beam item, naming the field. */
static void test_abnet_item(void **state) {
  (void)state;
  pb_state_t st[3];
  for (int i = 0; i < 3; i++) pb_game_connect4.reset(&st[i]);
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_WORK_ITEM, RUN, PB_GAME_CONNECT4, "learner");
  pb_msg_work_item_t *w = &m.work_item;
  w->item_id = 9;
  w->lease_ms = 1000;
  w->kind = PB_WORK_SEARCH;
  w->states = st;
  w->n_states = 3;
  w->v_version = 4;
  w->q_version = 3;
  w->expansions = 10;
  w->max_depth = 3;
  w->search_algorithm = PB_SEARCH_ABNET;
  w->nodes = PB_MSG_MAX_NODES;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.work_item.search_algorithm, PB_SEARCH_ABNET);
  assert_true(d.work_item.nodes == PB_MSG_MAX_NODES);
  assert_int_equal(d.work_item.max_depth, 3);
  pb_msg_free(&d);
  w->nodes = 100;
  w->max_depth = PB_MSG_MAX_AB_DEPTH;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_true(d.work_item.nodes == 100);
  pb_msg_free(&d);

  w->max_depth = PB_MSG_MAX_AB_DEPTH + 1;
  encode_refused(&m, PB_EINVAL, "search.max_depth");
  w->max_depth = 1;
  encode_refused(&m, PB_EINVAL, "search.max_depth");
  w->max_depth = 3;
  w->nodes = 0;
  encode_refused(&m, PB_EINVAL, "search.nodes");
  w->nodes = PB_MSG_MAX_NODES + 1;
  encode_refused(&m, PB_EINVAL, "search.nodes");
  w->nodes = 100;
  w->search_algorithm = 2;
  encode_refused(&m, PB_EINVAL, "search.search_algorithm");
  /* The beam takes no node budget, and M = 1 is fine for it. */
  w->search_algorithm = PB_SEARCH_BEAM;
  encode_refused(&m, PB_EINVAL, "search.nodes");
  w->nodes = 0;
  w->max_depth = 1;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.work_item.search_algorithm, PB_SEARCH_BEAM);
  assert_true(d.work_item.nodes == 0);
  pb_msg_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_search),
      cmocka_unit_test(test_abnet_item),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
