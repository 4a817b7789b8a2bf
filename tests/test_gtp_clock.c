/* test_gtp_clock.c - a GTP engine's time control (common/play/gtp_clock.h):
 * the settings GTP defines (no limit, absolute time, Canadian byo-yomi),
 * time_left, the engine's own account of its time, and the budget of a
 * move in each case, by known answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "err.h"
#include "game.h"
#include "gtp_clock.h"

#define OT (&pb_game_othello)

/* The budget of a share of `s` seconds, as the header defines it. */
static int64_t of_share(double s) {
  double ms = s * 1000.0 * PB_GTP_CLOCK_USE / 100.0 - PB_GTP_CLOCK_RESERVE_MS;
  return ms >= 1 ? (int64_t)floor(ms) : 1;
}

static void test_no_limit(void **state) {
  (void)state;
  pb_gtp_clock_t c;
  pb_gtp_clock_init(&c);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), -1);
  pb_gtp_clock_spend(&c, 0, 5.0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), -1);
  /* BYO > 0 with 0 stones: GTP's "no time limit", time_left then moot. */
  assert_int_equal(pb_gtp_clock_settings(&c, 60, 30, 0), 0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 1, 10), -1);
  assert_int_equal(pb_gtp_clock_left(&c, 1, 3, 0), 0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 1, 10), -1);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 2, 10), -1); /* no color */
}

static void test_absolute(void **state) {
  (void)state;
  pb_gtp_clock_t c;
  pb_gtp_clock_init(&c);
  assert_int_equal(pb_gtp_clock_settings(&c, 300, 0, 0), 0);
  /* Othello at the start: 30 own moves left. */
  assert_int_equal(pb_gtp_clock_moves_left(OT, 0), 30);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), of_share(10.0));
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 1, 1), of_share(10.0));
  /* Late: never fewer than PB_GTP_CLOCK_MIN_MOVES. */
  assert_int_equal(pb_gtp_clock_moves_left(OT, 58), PB_GTP_CLOCK_MIN_MOVES);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 58),
                   of_share(300.0 / PB_GTP_CLOCK_MIN_MOVES));
  /* The engine's own account: 100 s spent by black, none by white. */
  pb_gtp_clock_spend(&c, 0, 100.0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), of_share(200.0 / 30));
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 1, 0), of_share(10.0));
  /* time_left overrides it; out of time: the least budget, 1 ms. */
  assert_int_equal(pb_gtp_clock_left(&c, 0, 60, 0), 0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), of_share(2.0));
  pb_gtp_clock_spend(&c, 0, 1000.0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), 1);
  /* A new game starts both clocks again. */
  pb_gtp_clock_restart(&c);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), of_share(10.0));
  /* The other games' length. */
  assert_int_equal(pb_gtp_clock_moves_left(&pb_game_connect4, 0), 21);
  assert_int_equal(pb_gtp_clock_moves_left(&pb_game_tictactoe, 0),
                   PB_GTP_CLOCK_MIN_MOVES);
  assert_int_equal(pb_gtp_clock_moves_left(&pb_game_toguz, 0), 80);
}

static void test_byo_yomi(void **state) {
  (void)state;
  pb_gtp_clock_t c;
  pb_gtp_clock_init(&c);
  /* 60 s main, then 10 s for every 5 moves. */
  assert_int_equal(pb_gtp_clock_settings(&c, 60, 10, 5), 0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0),
                   of_share(60.0 / 30 + 10.0 / 5));
  /* In byo-yomi by time_left: TIME / STONES. */
  assert_int_equal(pb_gtp_clock_left(&c, 0, 6, 3), 0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 20), of_share(2.0));
  /* Our own account: a move of 1 s leaves 5 s for 2 stones ... */
  pb_gtp_clock_spend(&c, 0, 1.0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 20), of_share(2.5));
  pb_gtp_clock_spend(&c, 0, 1.0);
  pb_gtp_clock_spend(&c, 0, 1.0);
  /* ... and the period played, the next one is 10 s for 5. */
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 20), of_share(2.0));
  assert_int_equal(c.stones_left[0], 5);
  /* Main time running out moves into byo-yomi with what was over. */
  pb_gtp_clock_restart(&c);
  pb_gtp_clock_spend(&c, 1, 62.0);
  assert_int_equal(c.stones_left[1], 5);
  assert_true(fabs(c.left_s[1] - 8.0) < 1e-9);
  /* No main time: byo-yomi from the first move. */
  assert_int_equal(pb_gtp_clock_settings(&c, 0, 30, 10), 0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), of_share(3.0));
  /* Absolute time with only time_left (no time_settings seen). */
  pb_gtp_clock_init(&c);
  assert_int_equal(pb_gtp_clock_left(&c, 1, 90, 0), 0);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 1, 1), of_share(3.0));
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), 1); /* 0 s left */
  pb_gtp_clock_restart(&c); /* keeps time_left's figures */
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 1, 1), of_share(3.0));
}

static void test_bad_values(void **state) {
  (void)state;
  pb_gtp_clock_t c;
  pb_gtp_clock_init(&c);
  assert_int_equal(pb_gtp_clock_settings(&c, 60, 0, 0), 0);
  assert_int_equal(pb_gtp_clock_settings(&c, -1, 0, 0), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_settings(&c, 1, -1, 0), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_settings(&c, 1, 1, -1), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_settings(&c, NAN, 1, 1), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_settings(&c, 1e300, 1, 1), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_left(&c, 2, 1, 0), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_left(&c, -1, 1, 0), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_left(&c, 0, -1, 0), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_left(&c, 0, INFINITY, 0), PB_EINVAL);
  assert_int_equal(pb_gtp_clock_left(&c, 0, 1, -3), PB_EINVAL);
  /* Nothing changed: still 60 s absolute. */
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), of_share(2.0));
  pb_gtp_clock_spend(&c, 0, -5); /* a clock that went back: ignored */
  pb_gtp_clock_spend(&c, 0, NAN);
  pb_gtp_clock_spend(&c, 7, 5);
  assert_int_equal(pb_gtp_clock_budget_ms(&c, OT, 0, 0), of_share(2.0));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_limit),
      cmocka_unit_test(test_absolute),
      cmocka_unit_test(test_byo_yomi),
      cmocka_unit_test(test_bad_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
