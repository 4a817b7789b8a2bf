/* test_toguz.c - Toguz Kumalak: every position of thousands of random games
 * against a deliberately plain engine (absolute sides, a hole at a time),
 * and a hand-worked case for every rule. No published perft exists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "game.h"
#include "rng.h"

static const pb_game_t *const G = &pb_game_toguz;

#include "plain_toguz.h"

/* The game's position as the reference's. */
static void to_ref(const pb_state_t *s, ptk_t *r) {
  uint8_t b[24];
  G->pack(s, b);
  memset(r, 0, sizeof *r);
  int me = G->ply(s) & 1, op = 1 - me;
  for (int h = 0; h < 9; h++) {
    r->holes[me][h] = b[h];
    r->holes[op][h] = b[9 + h];
  }
  r->kazna[me] = b[18];
  r->kazna[op] = b[19];
  r->tuz[me] = b[20];
  r->tuz[op] = b[21];
  r->to_move = me;
}

static void test_random_games_agree_with_reference(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 42, 0);
  int tuzdyks = 0, ends[3] = {0, 0, 0}, starved = 0, collected = 0;
  for (int game = 0; game < 3000; game++) {
    pb_state_t s;
    ptk_t r, got;
    G->reset(&s);
    ptk_reset(&r);
    for (int ply = 0;; ply++) {
      to_ref(&s, &got);
      got.over = r.over;
      assert_memory_equal(&got, &r, sizeof r);
      uint8_t a[PB_MAX_ACTIONS];
      int n = G->legal(&s, a);
      float tr = 9;
      int term = G->terminal(&s, &tr);
      assert_int_equal(term, n == 0);
      assert_int_equal(term, r.over);
      if (n == 0) break;
      int m = 0;
      for (int h = 0; h < 9; h++)
        if (r.holes[r.to_move][h] > 0) assert_int_equal(a[m++], h);
      assert_int_equal(m, n);
      int act = a[pb_rng_below(&rng, (uint32_t)n)], done = 0, rdone = 0;
      int had_tuz = r.tuz[r.to_move];
      int sum_other = ptk_sum(&r, 1 - r.to_move);
      float rew = G->step(&s, act, &done);
      int rrew = ptk_play(&r, act, &rdone);
      assert_int_equal(done, rdone);
      assert_true(rew == (float)rrew);
      tuzdyks += !had_tuz && r.tuz[1 - r.to_move];
      if (done) {
        ends[rrew + 1]++;
        starved += sum_other > 0 && ptk_sum(&r, r.to_move) == 0 &&
                   r.kazna[0] < 82 && r.kazna[1] < 82;
        collected += r.kazna[0] + r.kazna[1] == 162;
        /* The terminal position says the same from the other side. */
        assert_int_equal(G->terminal(&s, &tr), 1);
        assert_true(tr == (float)-rrew || (rrew == 0 && tr == 0.0f));
      }
      assert_true(ply < G->max_turns);
    }
  }
  assert_true(tuzdyks > 100);
  assert_true(ends[0] > 0 && ends[2] > 0);
  (void)starved;
  (void)collected;
}

/* ----------------------------------------------------- hand-made cases */

/* A position, South to move at ply 10 (or North at 11 with north=1). */
static pb_state_t make(const int me[9], const int op[9], int km, int ko,
                       int tm, int to) {
  uint8_t b[24];
  memset(b, 0, sizeof b);
  for (int h = 0; h < 9; h++) {
    b[h] = (uint8_t)me[h];
    b[9 + h] = (uint8_t)op[h];
  }
  b[18] = (uint8_t)km;
  b[19] = (uint8_t)ko;
  b[20] = (uint8_t)tm;
  b[21] = (uint8_t)to;
  b[22] = 10;
  pb_state_t s;
  pb_err_t err;
  if (G->unpack(&s, b, sizeof b, &err) != 0) fail_msg("make: %s", err.msg);
  return s;
}

/* After a move the opponent is to move: "mine" is b[9..17] and b[19]. */
static void after(const pb_state_t *s, int me[9], int op[9], int *km, int *ko,
                  int *tm, int *to) {
  uint8_t b[24];
  G->pack(s, b);
  for (int h = 0; h < 9; h++) {
    op[h] = b[h];
    me[h] = b[9 + h];
  }
  *ko = b[18];
  *km = b[19];
  *to = b[20];
  *tm = b[21];
}

static void test_start_and_first_move(void **state) {
  (void)state;
  pb_state_t s;
  G->reset(&s);
  uint8_t a[PB_MAX_ACTIONS];
  assert_int_equal(G->legal(&s, a), 9);
  /* Hole 1: the first stone back into hole 1, one each into 2..9; the
   * last lands at home, nothing taken. */
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 0, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(me[0], 1);
  for (int h = 1; h < 9; h++) assert_int_equal(me[h], 10);
  for (int h = 0; h < 9; h++) assert_int_equal(op[h], 9);
  assert_int_equal(km, 0);
  assert_int_equal(G->ply(&s), 1);
  char board[256];
  G->reset(&s);
  G->render(&s, board, sizeof board);
  assert_string_equal(board,
                      "O   9   9   9   9   9   9   9   9   9  kazna   0\n"
                      "X   9   9   9   9   9   9   9   9   9  kazna   0\n"
                      "    1   2   3   4   5   6   7   8   9\n");
}

static void test_even_count_captures(void **state) {
  (void)state;
  /* From the start, hole 2: holes 2..9 and the opponent's hole 1, which
   * gets its 10th stone: even, taken. */
  pb_state_t s;
  G->reset(&s);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 1, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(km, 10);
  assert_int_equal(op[0], 0);
  assert_int_equal(me[1], 1);
  /* Odd (and not 3): nothing. Hole 9 with 4: home, o1 5, o2 10, o3 9. */
  static const int m2[9] = {9, 9, 9, 9, 9, 9, 9, 9, 4};
  static const int o2[9] = {4, 9, 8, 9, 9, 9, 9, 9, 9};
  s = make(m2, o2, 10, 1, 0, 0);
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(op[0], 5);
  assert_int_equal(op[1], 10); /* even, but not where the last stone fell */
  assert_int_equal(op[2], 9);
  assert_int_equal(km, 10);
  assert_int_equal(tm, 0);
}

static void test_capture_only_on_the_opponents_side(void **state) {
  (void)state;
  /* Hole 8 with 2 stones: 8 and 9, both at home; hole 9 becomes 10 (even)
   * and stays. */
  static const int m[9] = {9, 9, 9, 9, 9, 9, 9, 2, 9};
  static const int o[9] = {9, 9, 9, 9, 9, 9, 9, 9, 9};
  pb_state_t s = make(m, o, 7, 0, 0, 0);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 7, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(me[7], 1);
  assert_int_equal(me[8], 10);
  assert_int_equal(km, 7);
}

static void test_single_stone_moves_on(void **state) {
  (void)state;
  static const int m[9] = {1, 5, 0, 0, 0, 0, 0, 0, 0};
  static const int o[9] = {9, 9, 9, 9, 9, 9, 9, 9, 9};
  pb_state_t s = make(m, o, 40, 35, 0, 0);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 0, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(me[0], 0);
  assert_int_equal(me[1], 6);
  assert_int_equal(done, 0);
  /* A single stone in hole 9 crosses over: o1 9 -> 10, even, taken. */
  static const int m2[9] = {1, 5, 0, 0, 0, 0, 0, 0, 1};
  s = make(m2, o, 40, 34, 0, 0);
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(me[8], 0);
  assert_int_equal(op[0], 0);
  assert_int_equal(km, 50);
}

static void test_tuzdyk_made_at_three(void **state) {
  (void)state;
  /* Hole 9 with 2: one back home, one on the opponent's hole 1: 2 -> 3. */
  static const int m[9] = {5, 0, 0, 0, 0, 0, 0, 0, 2};
  static const int o[9] = {2, 9, 9, 9, 9, 9, 9, 9, 9};
  pb_state_t s = make(m, o, 40, 41, 0, 0);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(tm, 1);
  assert_int_equal(op[0], 0);
  assert_int_equal(km, 43);
  /* The opponent sees it as their hole 1 taken: empty, not playable. */
  uint8_t a[PB_MAX_ACTIONS];
  int n = G->legal(&s, a);
  for (int i = 0; i < n; i++) assert_true(a[i] != 0);
}

static void test_tuzdyk_one_per_player(void **state) {
  (void)state;
  /* The same, but the mover already owns the opponent's hole 5. */
  static const int m[9] = {5, 0, 0, 0, 0, 0, 0, 0, 2};
  static const int o[9] = {2, 9, 9, 9, 0, 9, 9, 9, 9};
  pb_state_t s = make(m, o, 45, 45, 5, 0);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(tm, 5);
  assert_int_equal(op[0], 3);
  assert_int_equal(km, 45);
}

static void test_tuzdyk_never_the_ninth(void **state) {
  (void)state;
  /* Hole 9 with 10: home, then the opponent's 1..9; hole 9: 2 -> 3. */
  static const int m[9] = {0, 0, 0, 0, 0, 0, 0, 0, 10};
  static const int o[9] = {9, 9, 9, 9, 9, 9, 9, 9, 2};
  pb_state_t s = make(m, o, 39, 39, 0, 0);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(tm, 0);
  assert_int_equal(op[8], 3);
  assert_int_equal(km, 39);
}

static void test_tuzdyk_not_opposite_the_opponents(void **state) {
  (void)state;
  /* The opponent owns the mover's hole 1: the mover may not take the
   * opponent's hole 1. */
  static const int m[9] = {0, 5, 0, 0, 0, 0, 0, 0, 2};
  static const int o[9] = {2, 9, 9, 9, 9, 9, 9, 9, 9};
  pb_state_t s = make(m, o, 40, 41, 0, 1);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(tm, 0);
  assert_int_equal(op[0], 3);
  /* With the opponent's tuzdyk on hole 2 instead, hole 1 is allowed. */
  static const int m2[9] = {5, 0, 0, 0, 0, 0, 0, 0, 2};
  s = make(m2, o, 40, 41, 0, 2);
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(tm, 1);
  assert_int_equal(to, 2);
}

static void test_tuzdyk_collects_for_its_owner(void **state) {
  (void)state;
  /* The mover owns the opponent's hole 2: sowing 3 from hole 9 puts one
   * at home, one on o1, one into the tuzdyk: the mover's kazna. The last
   * stone in a tuzdyk takes nothing else. */
  static const int m[9] = {9, 9, 9, 9, 9, 9, 9, 9, 3};
  static const int o[9] = {8, 0, 9, 9, 9, 9, 9, 9, 9};
  pb_state_t s = make(m, o, 10, 6, 2, 0);
  int done, me[9], op[9], km, ko, tm, to;
  G->step(&s, 8, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(km, 11);
  assert_int_equal(op[0], 9);
  assert_int_equal(op[1], 0);
  /* The opponent owns the mover's hole 3: sowing 4 from hole 1 drops one
   * into it, for the opponent. */
  static const int m2[9] = {4, 9, 0, 9, 9, 9, 9, 9, 9};
  static const int o2[9] = {9, 9, 9, 9, 9, 9, 9, 9, 9};
  s = make(m2, o2, 8, 6, 0, 3);
  G->step(&s, 0, &done);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(ko, 7);
  assert_int_equal(me[2], 0);
  assert_int_equal(me[0], 1);
  assert_int_equal(me[1], 10);
  assert_int_equal(me[3], 10);
}

static void test_win_at_82(void **state) {
  (void)state;
  static const int m[9] = {3, 0, 0, 0, 0, 0, 0, 0, 2};
  static const int o[9] = {1, 9, 9, 9, 9, 9, 9, 9, 9};
  pb_state_t s = make(m, o, 80, 4, 0, 0);
  int done = 0;
  float r = G->step(&s, 8, &done); /* o1: 1 -> 2, taken: 82 */
  assert_int_equal(done, 1);
  assert_true(r == 1.0f);
  float tr = 0;
  assert_int_equal(G->terminal(&s, &tr), 1);
  assert_true(tr == -1.0f);
  uint8_t a[PB_MAX_ACTIONS];
  assert_int_equal(G->legal(&s, a), 0);
  /* Reaching 82 through the opponent's tuzdyk on the mover's move loses. */
  static const int m2[9] = {4, 9, 0, 9, 9, 9, 9, 9, 9};
  static const int o2[9] = {9, 0, 0, 0, 0, 0, 0, 0, 0};
  s = make(m2, o2, 5, 81, 0, 3);
  r = G->step(&s, 0, &done);
  assert_int_equal(done, 1);
  assert_true(r == -1.0f);
}

static void test_draw_at_81(void **state) {
  (void)state;
  /* Hole 9's single stone takes o1 (1 -> 2): 81-81, the board empty. */
  static const int m[9] = {0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const int o[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
  pb_state_t s = make(m, o, 79, 81, 0, 0);
  int done = 0;
  float r = G->step(&s, 8, &done);
  assert_int_equal(done, 1);
  assert_true(r == 0.0f);
  float tr = 5;
  assert_int_equal(G->terminal(&s, &tr), 1);
  assert_true(tr == 0.0f);
}

static void test_no_move_ends_and_collects(void **state) {
  (void)state;
  /* The move empties the opponent's side: the opponent cannot move, the
   * mover's 5 stones left on its side go to its kazna: 77 + 2 + 5. */
  static const int m[9] = {5, 0, 0, 0, 0, 0, 0, 0, 1};
  static const int o[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
  pb_state_t s = make(m, o, 77, 78, 0, 0);
  int done = 0, me[9], op[9], km, ko, tm, to;
  float r = G->step(&s, 8, &done);
  assert_int_equal(done, 1);
  assert_true(r == 1.0f);
  after(&s, me, op, &km, &ko, &tm, &to);
  assert_int_equal(km, 84);
  assert_int_equal(me[0], 0);
  /* A side to move with nothing to move: the other side collects. */
  static const int e[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  static const int o2[9] = {0, 0, 3, 0, 0, 0, 0, 0, 0};
  s = make(e, o2, 80, 79, 0, 0);
  float tr = 5;
  assert_int_equal(G->terminal(&s, &tr), 1);
  assert_true(tr == -1.0f); /* 80 against 79 + 3 */
  uint8_t a[PB_MAX_ACTIONS];
  assert_int_equal(G->legal(&s, a), 0);
}

/* ---------------------------------------------- wire form, text, perft */

static void test_pack_parse_perft(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  pb_err_t err;
  for (int game = 0; game < 200; game++) {
    pb_state_t s;
    G->reset(&s);
    char moves[2048] = "";
    size_t k = 0;
    uint8_t a[PB_MAX_ACTIONS];
    int n;
    while ((n = G->legal(&s, a)) > 0 && k < sizeof moves - 1) {
      uint8_t buf[24];
      G->pack(&s, buf);
      pb_state_t t;
      assert_int_equal(G->unpack(&t, buf, sizeof buf, &err), 0);
      assert_memory_equal(&t, &s, sizeof s);
      int act = a[pb_rng_below(&rng, (uint32_t)n)], done;
      moves[k++] = (char)('1' + act);
      moves[k] = '\0';
      G->step(&s, act, &done);
    }
    pb_state_t p;
    assert_int_equal(G->parse(&p, moves, &err), 0);
    assert_memory_equal(&p, &s, sizeof s);
    if (n == 0) {
      moves[k] = '1';
      moves[k + 1] = '\0';
      assert_int_equal(G->parse(&p, moves, &err), PB_EILLEGAL);
      assert_non_null(strstr(err.msg, "end of the game"));
    }
  }
  pb_state_t s;
  assert_int_equal(G->parse(&s, "0", &err), PB_EINVAL);
  /* Single stones move on; a hole played empty cannot be played. */
  assert_int_equal(G->parse(&s, "1919", &err), 0);
  assert_int_equal(G->parse(&s, "1111", &err), 0);
  assert_int_equal(G->parse(&s, "11111", &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "empty"));
  char name[4];
  assert_int_equal(G->action_name(8, name, sizeof name), 1);
  assert_string_equal(name, "9");
  assert_int_equal(G->action_name(9, name, sizeof name), PB_EINVAL);

  /* Corrupt wire forms. */
  G->reset(&s);
  uint8_t b[24], bad[24];
  G->pack(&s, b);
  assert_int_equal(G->unpack(&s, b, 23, &err), PB_ECORRUPT);
  memcpy(bad, b, 24);
  bad[3]++;
  assert_int_equal(G->unpack(&s, bad, 24, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "162"));
  memcpy(bad, b, 24);
  bad[9 + 8] = 0; /* the opponent's hole 9 as a tuzdyk */
  bad[18] = 9;
  bad[20] = 9;
  assert_int_equal(G->unpack(&s, bad, 24, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "9th"));
  memcpy(bad, b, 24);
  bad[20] = 2; /* the opponent's hole 2 holds 9 stones */
  assert_int_equal(G->unpack(&s, bad, 24, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "holds stones"));
  memcpy(bad, b, 24);
  bad[1] = 0;
  bad[9 + 1] = 0;
  bad[18] = 18;
  bad[20] = 2;
  bad[21] = 2;
  assert_int_equal(G->unpack(&s, bad, 24, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "both tuzdyks"));

  /* Perft: 9 first moves; of the 81 replies, the 8 first moves that take
   * the opponent's hole 1 leave 8. */
  G->reset(&s);
  assert_int_equal(pb_game_perft(G, &s, 1), 9);
  assert_int_equal(pb_game_perft(G, &s, 2), 73);
  assert_int_equal(pb_game_perft(G, &s, 3), 613);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_games_agree_with_reference),
      cmocka_unit_test(test_start_and_first_move),
      cmocka_unit_test(test_even_count_captures),
      cmocka_unit_test(test_capture_only_on_the_opponents_side),
      cmocka_unit_test(test_single_stone_moves_on),
      cmocka_unit_test(test_tuzdyk_made_at_three),
      cmocka_unit_test(test_tuzdyk_one_per_player),
      cmocka_unit_test(test_tuzdyk_never_the_ninth),
      cmocka_unit_test(test_tuzdyk_not_opposite_the_opponents),
      cmocka_unit_test(test_tuzdyk_collects_for_its_owner),
      cmocka_unit_test(test_win_at_82),
      cmocka_unit_test(test_draw_at_81),
      cmocka_unit_test(test_no_move_ends_and_collects),
      cmocka_unit_test(test_pack_parse_perft),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
