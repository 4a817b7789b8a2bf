/* test_agent.c - agent specs, and the baselines' tactics on positions with
 * known answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "game.h"

static const pb_game_t *C4 = &pb_game_connect4;
static const pb_game_t *T3 = &pb_game_tictactoe;

static pb_state_t pos(const pb_game_t *g, const char *moves) {
  pb_state_t s;
  pb_err_t err;
  if (g->parse(&s, moves, &err) != 0) fail_msg("parse %s: %s", moves, err.msg);
  return s;
}

/* How often each action is chosen over `n` seeds. */
static void histogram(const pb_game_t *g, const char *spec, const char *moves,
                      int n, int *count) {
  pb_state_t s = pos(g, moves);
  memset(count, 0, sizeof(int) * PB_MAX_ACTIONS);
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(g, spec, 0, &err);
  assert_non_null(a);
  for (int i = 0; i < n; i++) {
    pb_agent_reseed(a, (uint64_t)i);
    int act = pb_agent_act(a, &s, &err);
    assert_true(act >= 0 && act < g->num_actions);
    count[act]++;
  }
  pb_agent_destroy(&a);
  assert_null(a);
}

static void test_specs(void **state) {
  (void)state;
  pb_err_t err;
  const char *good[] = {"random", "lookahead:1", "lookahead:4", "alphabeta:1",
                        "alphabeta:12"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pb_agent_t *a = pb_agent_new(C4, good[i], 1, &err);
    assert_non_null(a);
    assert_string_equal(pb_agent_name(a), good[i]);
    assert_ptr_equal(pb_agent_game(a), C4);
    pb_agent_destroy(&a);
  }
  const char *bad[] = {"", "rand", "random:1", "lookahead", "lookahead:",
                       "lookahead:0", "lookahead:5", "lookahead:3x",
                       "lookahead:-1", "alphabeta:13", "alphabeta:x",
                       "Random", "lookahead:99999999999999999999",
                       "checkpoint:/nonexistent"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    pb_agent_t *a = pb_agent_new(C4, bad[i], 1, &err);
    if (a != NULL) fail_msg("spec \"%s\" was accepted", bad[i]);
    assert_int_equal(err.code, PB_EINVAL);
    assert_true(err.msg[0] != '\0');
  }
  /* Unknown kinds list the valid ones. */
  assert_null(pb_agent_new(C4, "minimax:3", 1, &err));
  assert_non_null(strstr(err.msg, "lookahead:K"));
  assert_non_null(strstr(err.msg, "alphabeta:D"));
  assert_non_null(strstr(err.msg, "random"));
  assert_null(pb_agent_new(NULL, "random", 1, &err));
  assert_null(pb_agent_new(C4, NULL, 1, &err));
  char kinds[256];
  assert_true(pb_agent_kinds(kinds, sizeof kinds) > 10);
  assert_non_null(strstr(kinds, "random"));
  char tiny[8];
  assert_int_equal(pb_agent_kinds(tiny, sizeof tiny), 7);
  pb_agent_destroy(NULL);
  pb_agent_t *none = NULL;
  pb_agent_destroy(&none);
}

static void test_act_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(C4, "random", 1, &err);
  assert_non_null(a);
  pb_state_t s = pos(C4, "1212121"); /* X has won */
  assert_int_equal(pb_agent_act(a, &s, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "terminal"));
  assert_int_equal(pb_agent_act(a, NULL, &err), PB_EINVAL);
  assert_int_equal(pb_agent_act(NULL, &s, &err), PB_EINVAL);
  pb_agent_destroy(&a);
}

/* A kind that always answers action 0, legal or not, and counts frees. */
static int freed;
static int zero_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                    int n, pb_err_t *err) {
  (void)impl, (void)s, (void)legal, (void)n, (void)err;
  return 0;
}
static void zero_destroy(void *impl) {
  freed++;
  free(impl);
}
static const pb_agent_vtable_t zero_vt = {zero_act, NULL, zero_destroy};

static void test_wrap(void **state) {
  (void)state;
  pb_err_t err;
  freed = 0;
  pb_agent_t *a = pb_agent_wrap(C4, &zero_vt, malloc(16), "zero", &err);
  assert_non_null(a);
  assert_string_equal(pb_agent_name(a), "zero");
  pb_state_t s = pos(C4, "");
  assert_int_equal(pb_agent_act(a, &s, &err), 0);
  pb_agent_reseed(a, 5); /* no reseed function: nothing happens */
  s = pos(C4, "111111"); /* column 1 is full: 0 is illegal */
  assert_int_equal(pb_agent_act(a, &s, &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "zero"));
  pb_agent_destroy(&a);
  assert_int_equal(freed, 1);
  /* A failed wrap still frees the private state. */
  assert_null(pb_agent_wrap(C4, &zero_vt, malloc(16), NULL, &err));
  assert_int_equal(freed, 2);
}

static void test_random_uniform_and_seeded(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  histogram(C4, "random", "111111", 6000, count);
  assert_int_equal(count[0], 0);
  for (int a = 1; a < 7; a++) assert_true(count[a] > 850 && count[a] < 1150);

  /* Same seed, same moves; reseeding equals a fresh agent. */
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(C4, "random", 42, &err);
  pb_agent_t *b = pb_agent_new(C4, "random", 7, &err);
  pb_state_t s = pos(C4, "");
  int first[20];
  for (int i = 0; i < 20; i++) first[i] = pb_agent_act(a, &s, &err);
  pb_agent_reseed(b, 42);
  int differ = 0;
  for (int i = 0; i < 20; i++) differ += first[i] != pb_agent_act(b, &s, &err);
  assert_int_equal(differ, 0);
  pb_agent_reseed(b, 43);
  for (int i = 0; i < 20; i++) differ += first[i] != pb_agent_act(b, &s, &err);
  assert_true(differ > 5);
  pb_agent_destroy(&a);
  pb_agent_destroy(&b);
}

static void test_lookahead_tactics(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  /* X can win in column 1 (three stacked). */
  for (int k = 1; k <= 4; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    histogram(C4, spec, "121212", 30, count);
    assert_int_equal(count[0], 30);
  }
  /* O threatens column 2 (three stacked); X has no win: lookahead:1 does
   * not care, lookahead:2..4 always block. */
  histogram(C4, "lookahead:1", "123252", 140, count);
  assert_true(count[1] < 40);
  for (int k = 2; k <= 4; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    histogram(C4, spec, "123252", 30, count);
    assert_int_equal(count[1], 30);
  }
  /* X on columns 2 and 3 of the bottom row, O stacked on 6: column 4 makes
   * an open three, a double threat that wins in three plies. Only
   * lookahead:3 and deeper see it; lookahead:2 plays anything. */
  histogram(C4, "lookahead:2", "2636", 140, count);
  assert_true(count[3] < 50);
  histogram(C4, "lookahead:3", "2636", 30, count);
  assert_int_equal(count[3], 30);
  histogram(C4, "lookahead:4", "2636", 30, count);
  assert_int_equal(count[3], 30);
  /* Ties are broken at random: from the empty board every move is "0". */
  histogram(C4, "lookahead:3", "", 700, count);
  for (int a = 0; a < 7; a++) assert_true(count[a] > 60);
}

static void test_alphabeta_tactics(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  for (int d = 1; d <= 6; d++) {
    char spec[32];
    snprintf(spec, sizeof spec, "alphabeta:%d", d);
    histogram(C4, spec, "121212", 10, count); /* win now */
    assert_int_equal(count[0], 10);
    if (d >= 2) {
      histogram(C4, spec, "123252", 10, count); /* block */
      assert_int_equal(count[1], 10);
    }
    if (d >= 3) {
      histogram(C4, spec, "2636", 10, count); /* double threat */
      assert_int_equal(count[3], 10);
    }
  }
  /* Center first from the empty board (the heuristic prefers it). */
  histogram(C4, "alphabeta:4", "", 10, count);
  assert_int_equal(count[3], 10);
  /* Tic-Tac-Toe: take the win rather than block, block when needed. */
  histogram(T3, "alphabeta:9", "1425", 10, count); /* X: 1,2; O: 4,5 */
  assert_int_equal(count[2], 10);
  histogram(T3, "alphabeta:9", "152", 10, count); /* O must block 3 */
  assert_int_equal(count[2], 10);
  pb_err_t err;
  assert_null(pb_agent_new(pb_game_by_id(PB_GAME_TICTACTOE), "alphabeta:0", 1,
                           &err));
}

/* Full-depth alpha-beta plays Tic-Tac-Toe perfectly: it never loses, to
 * random play or to itself, from either side. */
static void test_alphabeta_tictactoe_perfect(void **state) {
  (void)state;
  pb_err_t err;
  pb_agent_t *ab = pb_agent_new(T3, "alphabeta:9", 3, &err);
  pb_agent_t *ab2 = pb_agent_new(T3, "alphabeta:9", 4, &err);
  pb_agent_t *rnd = pb_agent_new(T3, "random", 5, &err);
  assert_non_null(ab);
  assert_non_null(ab2);
  assert_non_null(rnd);
  int ab_wins = 0;
  for (int game = 0; game < 60; game++) {
    pb_agent_t *p[2];
    int ab_side = game % 2;
    p[ab_side] = ab;
    p[1 - ab_side] = game < 40 ? rnd : ab2;
    pb_state_t s;
    T3->reset(&s);
    int done = 0, ply = 0;
    float r = 0;
    while (!done) {
      int a = pb_agent_act(p[ply % 2], &s, &err);
      assert_true(a >= 0);
      r = T3->step(&s, a, &done);
      ply++;
    }
    int mover = (ply - 1) % 2;
    if (r > 0) {
      assert_int_equal(mover, ab_side); /* only alphabeta ever wins */
      ab_wins++;
    }
    if (game >= 40) assert_true(r == 0.0f); /* perfect vs perfect: draw */
  }
  assert_true(ab_wins > 25);
  pb_agent_destroy(&ab);
  pb_agent_destroy(&ab2);
  pb_agent_destroy(&rnd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_specs),
      cmocka_unit_test(test_act_errors),
      cmocka_unit_test(test_wrap),
      cmocka_unit_test(test_random_uniform_and_seeded),
      cmocka_unit_test(test_lookahead_tactics),
      cmocka_unit_test(test_alphabeta_tactics),
      cmocka_unit_test(test_alphabeta_tictactoe_perfect),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
