/* test_itemcheck.c - the checks of a worker's result before the learner
 * takes it (common/train/itemcheck.h): an honest episode and honest
 * targets pass; a Q version out of the item's range, policy rows where
 * the run has none (or none where it trains on them), a broken rule,
 * a value out of [-1, 1] and a value on an illegal action are each
 * refused, naming the fault. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "game.h"
#include "itemcheck.h"

/* A decided Connect Four game: the first player stacks column 0 while the
 * second plays column 1; the first wins on its fourth move. */
static uint32_t game(const pb_game_t *g, pb_state_t *s, int *reward) {
  uint32_t n = 0;
  g->reset(&s[n]);
  const int moves[] = {0, 1, 0, 1, 0, 1, 0};
  for (int k = 0; k < 7; k++) {
    s[n + 1] = s[n];
    int done = 0;
    float r = g->step(&s[n + 1], moves[k], &done);
    if (done) {
      /* The episode keeps no terminal position: the last move's reward,
       * for its mover (the first player, even k), is the outcome. */
      *reward = (k % 2 == 0) ? (int)r : -(int)r;
      return n + 1;
    }
    n++;
  }
  *reward = 0;
  return n + 1;
}

static void test_episodes(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  pb_state_t s[16];
  int reward = 0;
  const uint32_t n = game(g, s, &reward);
  assert_int_equal(reward, 1);
  pb_err_t err;
  pb_itemcheck_rules_t r = {.version = 5, .staleness = 0, .policy = 0,
                            .max_turns = 42};
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 5, 0, &err), 0);
  /* Q versions outside version - staleness .. version. */
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 4, 0, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "Q version 4"));
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 6, 0, &err),
                   PB_ECORRUPT);
  r.staleness = 2;
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 3, 0, &err), 0);
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 2, 0, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "3..5"));
  /* Policy rows exactly when the run trains on them. */
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 5, 1, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "does not make"));
  r.policy = 1;
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 5, 0, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "trains on"));
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 5, 1, &err), 0);
  /* The rules: another outcome, a position skipped, a turn limit. */
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, -1, 5, 1, &err),
                   PB_ECORRUPT);
  pb_state_t c[16];
  memcpy(c, s, n * sizeof *c);
  memmove(&c[1], &c[2], (n - 2) * sizeof *c);
  assert_int_equal(pb_itemcheck_episode(g, &r, c, n - 1, reward, 5, 1, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "legal move"));
  r.max_turns = 3;
  assert_int_equal(pb_itemcheck_episode(g, &r, s, n, reward, 5, 1, &err),
                   PB_ECORRUPT);
}

static void test_targets(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("tictactoe");
  const int A = g->num_actions;
  pb_state_t s[2];
  g->reset(&s[0]);
  s[1] = s[0];
  int done = 0;
  g->step(&s[1], 4, &done); /* the centre: action 4 is illegal in s[1] */
  float q[2 * 9];
  for (int a = 0; a < A; a++) {
    q[a] = (float)(a - 4) / 4.0f;
    q[A + a] = a == 4 ? 0.0f : -0.5f;
  }
  pb_err_t err;
  assert_int_equal(pb_itemcheck_targets(g, s, 2, q, &err), 0);
  q[A + 4] = 0.25f;
  assert_int_equal(pb_itemcheck_targets(g, s, 2, q, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "position 1: a value on illegal action 4"));
  q[A + 4] = 0.0f;
  q[7] = 1.5f;
  assert_int_equal(pb_itemcheck_targets(g, s, 2, q, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "position 0: a value outside [-1, 1]"));
  q[7] = __builtin_nanf("");
  assert_int_equal(pb_itemcheck_targets(g, s, 2, q, &err), PB_ECORRUPT);
  q[7] = -1.0f;
  assert_int_equal(pb_itemcheck_targets(g, s, 2, q, &err), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_episodes),
      cmocka_unit_test(test_targets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
