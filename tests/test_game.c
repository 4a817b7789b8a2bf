/* test_game.c - the game registry, checked stepping, and perft by known
 * answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "game.h"
#include "rng.h"

static void test_registry(void **state) {
  (void)state;
  assert_ptr_equal(pb_game_by_name("connect4"), &pb_game_connect4);
  assert_ptr_equal(pb_game_by_name("tictactoe"), &pb_game_tictactoe);
  assert_null(pb_game_by_name("chess"));
  assert_null(pb_game_by_name(""));
  assert_null(pb_game_by_name(NULL));
  assert_null(pb_game_by_name("Connect4"));
  assert_ptr_equal(pb_game_by_id(PB_GAME_CONNECT4), &pb_game_connect4);
  assert_ptr_equal(pb_game_by_id(PB_GAME_TICTACTOE), &pb_game_tictactoe);
  assert_null(pb_game_by_id(0));
  assert_null(pb_game_by_id(99));

  /* The names list and the table agree: every listed name resolves and
   * its game is listed under its own name and id. */
  char names[256];
  strncpy(names, pb_game_names(), sizeof names - 1);
  names[sizeof names - 1] = '\0';
  int count = 0;
  for (char *save = NULL, *t = strtok_r(names, ", ", &save); t != NULL;
       t = strtok_r(NULL, ", ", &save)) {
    const pb_game_t *g = pb_game_by_name(t);
    assert_non_null(g);
    assert_string_equal(g->name, t);
    assert_ptr_equal(pb_game_by_id(g->id), g);
    assert_true(g->num_actions <= PB_MAX_ACTIONS);
    count++;
  }
  assert_int_equal(count, 4);
}

static void test_step_checked(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_state_t s, before;
  pb_err_t err;
  float r = 5;
  int done = 5;
  assert_int_equal(g->parse(&s, "444444", &err), 0);
  before = s;
  assert_int_equal(pb_game_step_checked(g, &s, 3, &r, &done, &err),
                   PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "'4'"));
  assert_memory_equal(&s, &before, sizeof s);
  assert_int_equal(pb_game_step_checked(g, &s, 7, &r, &done, &err),
                   PB_EILLEGAL);
  assert_int_equal(pb_game_step_checked(g, &s, -1, &r, &done, &err),
                   PB_EILLEGAL);
  assert_int_equal(pb_game_step_checked(g, &s, 0, &r, &done, &err), 0);
  assert_true(r == 0.0f);
  assert_int_equal(done, 0);
  assert_int_equal(pb_game_step_checked(g, &s, 1, NULL, NULL, &err), 0);

  assert_int_equal(g->parse(&s, "121212", &err), 0);
  assert_int_equal(pb_game_step_checked(g, &s, 0, &r, &done, &err), 0);
  assert_true(r == 1.0f);
  assert_int_equal(done, 1);
  assert_int_equal(pb_game_step_checked(g, &s, 2, &r, &done, &err),
                   PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "over"));
  assert_int_equal(pb_game_step_checked(NULL, &s, 2, &r, &done, NULL),
                   PB_EINVAL);
}

/* Perft without bulk counting or shortcuts, to check pb_game_perft's. */
static uint64_t naive_perft(const pb_game_t *g, const pb_state_t *s,
                            int depth) {
  if (depth == 0) return 1;
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  uint64_t sum = 0;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    g->step(&c, acts[i], &done);
    if (!done)
      sum += naive_perft(g, &c, depth - 1);
    else if (depth == 1)
      sum++;
  }
  return sum;
}

static void test_perft_connect4(void **state) {
  (void)state;
  static const uint64_t want[10] = {1,     7,      49,     343,     2401,
                                    16807, 117649, 823536, 5673234, 39394572};
  const pb_game_t *g = &pb_game_connect4;
  pb_state_t s;
  g->reset(&s);
  for (int d = 0; d <= 9; d++)
    assert_int_equal(pb_game_perft(g, &s, d), want[d]);
  assert_int_equal(pb_game_perft(g, &s, -3), 1);
}

static void test_perft_tictactoe(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_tictactoe;
  pb_state_t s;
  g->reset(&s);
  /* 9! = 362880 sequences minus those cut short by a win. */
  static const uint64_t want[10] = {1,     9,     72,     504,    3024,
                                    15120, 54720, 148176, 200448, 127872};
  for (int d = 0; d <= 9; d++)
    assert_int_equal(pb_game_perft(g, &s, d), want[d]);
  assert_int_equal(pb_game_perft(g, &s, 10), 0);
  /* Complete games: 1440 end at ply 5, 5328 at 6, 47952 at 7, 72576 at 8,
   * 127872 at 9 (81792 wins, 46080 draws). */
  static const uint64_t games[10] = {0,    0,    0,     0,      0,
                                     1440, 6768, 54720, 127296, 255168};
  for (int d = 0; d <= 9; d++)
    assert_int_equal(pb_game_count_games(g, &s, d), games[d]);
}

/* From random midgame positions (some close to the end), the bulk-counting
 * perft agrees with the naive one. */
static void test_perft_from_positions(void **state) {
  (void)state;
  const pb_game_t *games[2] = {&pb_game_connect4, &pb_game_tictactoe};
  pb_rng_t rng;
  pb_rng_seed(&rng, 99, 0);
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = games[gi];
    for (int trial = 0; trial < 40; trial++) {
      pb_state_t s;
      g->reset(&s);
      int plies = (int)pb_rng_below(&rng, (uint32_t)g->max_turns - 2), done = 0;
      for (int p = 0; p < plies && !done; p++) {
        uint8_t acts[PB_MAX_ACTIONS];
        int n = g->legal(&s, acts);
        pb_state_t c = s;
        g->step(&c, acts[pb_rng_below(&rng, (uint32_t)n)], &done);
        if (!done) s = c;
      }
      for (int d = 1; d <= 5; d++)
        assert_int_equal(pb_game_perft(g, &s, d), naive_perft(g, &s, d));
    }
  }
  /* A terminal position has no move sequences. */
  pb_state_t s;
  pb_err_t err;
  assert_int_equal(pb_game_connect4.parse(&s, "1212121", &err), 0);
  assert_int_equal(pb_game_perft(&pb_game_connect4, &s, 1), 0);
  assert_int_equal(pb_game_perft(&pb_game_connect4, &s, 0), 1);
  assert_int_equal(pb_game_count_games(&pb_game_connect4, &s, 3), 0);
  /* One move before the end of a forced line: X wins in column 1 or not. */
  assert_int_equal(pb_game_connect4.parse(&s, "121212", &err), 0);
  assert_int_equal(pb_game_count_games(&pb_game_connect4, &s, 1), 1);
  assert_int_equal(pb_game_perft(&pb_game_connect4, &s, 2), 6 * 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry),
      cmocka_unit_test(test_step_checked),
      cmocka_unit_test(test_perft_connect4),
      cmocka_unit_test(test_perft_tictactoe),
      cmocka_unit_test(test_perft_from_positions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
