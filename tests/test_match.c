/* test_match.c - matches: bookkeeping, colours, determinism across thread
 * counts, and that the baselines are ordered as they should be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "match.h"

static pb_match_result_t play(const pb_game_t *g, const char *a, const char *b,
                              int games, uint64_t seed, int threads,
                              int opening) {
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = a;
  o.b_spec = b;
  o.games = games;
  o.seed = seed;
  o.threads = threads;
  o.opening_random_moves = opening;
  pb_match_result_t r;
  pb_err_t err;
  int rc = pb_match_play(g, &o, &r, &err);
  if (rc != 0) fail_msg("match %s vs %s: %s", a, b, err.msg);
  return r;
}

static void check_sums(const pb_match_result_t *r, int games) {
  assert_int_equal(r->games, games);
  assert_int_equal(r->wins + r->draws + r->losses, games);
  assert_int_equal(r->first_wins + r->first_draws + r->first_losses,
                   (games + 1) / 2);
  assert_int_equal(r->second_wins + r->second_draws + r->second_losses,
                   games / 2);
  assert_int_equal(r->first_wins + r->second_wins, r->wins);
  assert_int_equal(r->first_draws + r->second_draws, r->draws);
  assert_int_equal(r->first_losses + r->second_losses, r->losses);
}

static void test_deterministic_across_threads(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_match_result_t r1 = play(g, "lookahead:2", "random", 61, 7, 1, 2);
  check_sums(&r1, 61);
  for (int t = 2; t <= 5; t++) {
    pb_match_result_t rt = play(g, "lookahead:2", "random", 61, 7, t, 2);
    assert_memory_equal(&r1, &rt, sizeof r1);
  }
  pb_match_result_t r0 = play(g, "lookahead:2", "random", 61, 7, 0, 2);
  assert_memory_equal(&r1, &r0, sizeof r1);
  /* Another seed gives other games. */
  pb_match_result_t other = play(g, "lookahead:2", "random", 61, 8, 2, 2);
  assert_true(memcmp(&r1, &other, sizeof r1) != 0);
}

static void test_single_game(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_tictactoe;
  pb_err_t err;
  pb_agent_t *ab = pb_agent_new(g, "alphabeta:9", 1, &err);
  pb_agent_t *rnd = pb_agent_new(g, "random", 2, &err);
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  int outcome = 5, plies = 0, capped = 5, losses = 0;
  for (int i = 0; i < 20; i++) {
    assert_int_equal(
        pb_match_game(g, ab, rnd, &rng, 0, 0, &outcome, &plies, &capped, &err),
        0);
    assert_true(plies >= 5 && plies <= 9);
    assert_int_equal(capped, 0);
    losses += outcome < 0;
  }
  assert_int_equal(losses, 0);
  /* A turn cap stops the game as a draw. */
  assert_int_equal(
      pb_match_game(g, ab, rnd, &rng, 0, 3, &outcome, &plies, &capped, &err),
      0);
  assert_int_equal(outcome, 0);
  assert_int_equal(plies, 3);
  assert_int_equal(capped, 1);
  /* A fully random opening: the agents never move. */
  assert_int_equal(
      pb_match_game(g, ab, rnd, &rng, 9, 0, &outcome, &plies, NULL, &err), 0);
  assert_int_equal(
      pb_match_game(g, ab, rnd, NULL, 2, 0, &outcome, &plies, NULL, &err),
      PB_EINVAL);
  assert_int_equal(
      pb_match_game(g, NULL, rnd, &rng, 0, 0, NULL, NULL, NULL, &err),
      PB_EINVAL);
  pb_agent_destroy(&ab);
  pb_agent_destroy(&rnd);
}

static void test_bad_options(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_match_opts_t o;
  pb_match_result_t r;
  pb_err_t err;
  pb_match_opts_default(&o);
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL); /* no specs */
  o.a_spec = "random";
  o.b_spec = "lookahead:9";
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "lookahead"));
  o.b_spec = "random";
  o.games = 0;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  o.games = 4;
  o.threads = -1;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  o.threads = 1;
  o.opening_random_moves = -2;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  o.opening_random_moves = 0;
  o.max_turns = -1;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  assert_int_equal(pb_match_play(NULL, &o, &r, &err), PB_EINVAL);
  o.max_turns = 0;
  assert_int_equal(pb_match_play(g, &o, NULL, &err), PB_EINVAL);
  /* More threads than games is fine. */
  o.threads = 16;
  o.games = 3;
  assert_int_equal(pb_match_play(g, &o, &r, &err), 0);
  check_sums(&r, 3);
}

static void test_turn_cap(void **state) {
  (void)state;
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = "random";
  o.b_spec = "random";
  o.games = 20;
  o.threads = 2;
  o.max_turns = 4; /* nobody can win in 4 plies */
  pb_match_result_t r;
  pb_err_t err;
  assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), 0);
  assert_int_equal(r.draws, 20);
  assert_int_equal(r.capped, 20);
  assert_int_equal(r.plies, 80);
}

/* lookahead:1 clearly beats random, and alternation works (A wins with both
 * colours). */
static void test_lookahead_beats_random(void **state) {
  (void)state;
  pb_match_result_t r =
      play(&pb_game_tictactoe, "lookahead:1", "random", 300, 1, 2, 0);
  check_sums(&r, 300);
  double score = (r.wins + 0.5 * r.draws) / r.games;
  assert_true(score > 0.65);
  assert_true(r.first_wins > r.first_losses);
  assert_true(r.second_wins > r.second_losses);

  r = play(&pb_game_connect4, "lookahead:1", "random", 200, 1, 2, 0);
  check_sums(&r, 200);
  score = (r.wins + 0.5 * r.draws) / r.games;
  assert_true(score > 0.65);
  /* And the other way round the score mirrors. */
  pb_match_result_t m =
      play(&pb_game_connect4, "random", "lookahead:1", 200, 1, 2, 0);
  assert_true(m.wins < m.losses);
}

/* The ladder random < lookahead:1 < lookahead:2 < lookahead:3. */
static void test_lookahead_ladder(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  const char *ladder[] = {"random", "lookahead:1", "lookahead:2",
                          "lookahead:3"};
  for (int i = 1; i < 4; i++) {
    pb_match_result_t r = play(g, ladder[i], ladder[i - 1], 100, 3, 2, 0);
    if (r.wins <= r.losses + 10)
      fail_msg("%s vs %s: W=%d D=%d L=%d", ladder[i], ladder[i - 1], r.wins,
               r.draws, r.losses);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deterministic_across_threads),
      cmocka_unit_test(test_single_game),
      cmocka_unit_test(test_bad_options),
      cmocka_unit_test(test_turn_cap),
      cmocka_unit_test(test_lookahead_beats_random),
      cmocka_unit_test(test_lookahead_ladder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
