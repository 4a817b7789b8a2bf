/* test_beam_search.c - the batched beam search against the paper's
 * Algorithm 1 (a plain reference), against exact negamax, and on hand-made
 * cases for priorities, the depth limit and terminal values. The networks
 * are replaced by deterministic functions of the position, so agreement
 * must be exact (bit for bit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "beam_search.h"
#include "game.h"
#include "rng.h"

/* ---- deterministic stand-ins for V and Q ---------------------------- */

typedef struct {
  const pb_game_t *g;
  int quantize;  /* > 0: round to multiples of 1/quantize (many ties) */
  float v_const; /* used when mode == CONST */
  int mode;      /* 0: hashed, 1: constant V, Q favours action q_fav */
  int q_fav;
  long q_calls, v_calls;
} fake_t;

static float hashed(uint64_t h, int quantize) {
  float x = (float)((pb_mix64(h) >> 40) * (1.0 / (1 << 24))) * 2.0f - 1.0f;
  if (quantize > 0) x = roundf(x * quantize) / quantize;
  return x;
}

static int fake_value(void *ctx, const pb_state_t *s, int n, float *out,
                      pb_err_t *err) {
  (void)err;
  fake_t *f = ctx;
  f->v_calls++;
  for (int i = 0; i < n; i++)
    out[i] = f->mode ? f->v_const : hashed(f->g->hash(&s[i]), f->quantize);
  return 0;
}

static int fake_q(void *ctx, const pb_state_t *s, int n, float *out,
                  pb_err_t *err) {
  (void)err;
  fake_t *f = ctx;
  const int A = f->g->num_actions;
  f->q_calls++;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < A; a++)
      out[i * A + a] =
          f->mode ? (a == f->q_fav ? 1.0f : 0.0f)
                  : hashed(f->g->hash(&s[i]) ^ (0x9e37ull * (a + 1)),
                           f->quantize);
  return 0;
}

static pb_evalfn_t fake_fn(fake_t *f) {
  pb_evalfn_t fn = {fake_value, fake_q, f};
  return fn;
}

/* A random non-terminal position after up to max_moves random moves. */
static pb_state_t random_position(const pb_game_t *g, pb_rng_t *rng,
                                  int min_moves, int max_moves) {
  for (;;) {
    pb_state_t s;
    g->reset(&s);
    int k = min_moves + (int)pb_rng_below(rng, max_moves - min_moves + 1);
    int ok = 1;
    for (int m = 0; m < k && ok; m++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&s, acts);
      int done = 0;
      g->step(&s, acts[pb_rng_below(rng, na)], &done);
      if (done) ok = 0;
    }
    float r;
    if (ok && !g->terminal(&s, &r)) return s;
  }
}

/* ---- (1) batched == reference on many random positions -------------- */

static void check_agreement(const pb_game_t *g, int E, int M, int quantize,
                            int npos, int parallel, uint64_t seed) {
  pb_err_t err;
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  fake_t f = {.g = g, .quantize = quantize};
  pb_evalfn_t fn = fake_fn(&f);
  pb_beam_t *b = pb_beam_new(g, E, M, parallel, &err);
  assert_non_null(b);
  const int A = g->num_actions;
  pb_state_t *pos = malloc(npos * sizeof *pos);
  float *got = malloc((size_t)npos * A * sizeof *got);
  float want[PB_MAX_ACTIONS];
  for (int i = 0; i < npos; i++) pos[i] = random_position(g, &rng, 0, 20);
  assert_int_equal(pb_beam_run(b, pos, npos, &fn, got, &err), 0);
  for (int i = 0; i < npos; i++) {
    assert_int_equal(pb_beam_search_ref(g, &pos[i], E, M, &fn, want, &err), 0);
    if (memcmp(want, &got[i * A], A * sizeof(float)) != 0) {
      char buf[512];
      g->render(&pos[i], buf, sizeof buf);
      print_error("E=%d M=%d position %d disagrees:\n%s\n", E, M, i, buf);
      for (int a = 0; a < A; a++)
        print_error("  a=%d ref=%.9g batched=%.9g\n", a, want[a], got[i * A + a]);
      fail();
    }
  }
  pb_beam_destroy(&b);
  assert_null(b);
  free(pos);
  free(got);
}

static void test_agrees_with_reference_connect4(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  assert_non_null(g);
  static const int EM[][2] = {{1, 1},  {2, 1},  {8, 2},  {10, 2}, {30, 3},
                              {30, 1}, {64, 99}, {100, 5}, {17, 4}};
  for (size_t k = 0; k < sizeof EM / sizeof EM[0]; k++) {
    check_agreement(g, EM[k][0], EM[k][1], 0, 60, 16, 100 + k);
    check_agreement(g, EM[k][0], EM[k][1], 4, 60, 7, 200 + k); /* ties */
  }
}

static void test_agrees_with_reference_tictactoe(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("tictactoe");
  assert_non_null(g);
  check_agreement(g, 5, 2, 0, 100, 32, 7);
  check_agreement(g, 40, 4, 2, 100, 3, 8);
  check_agreement(g, 300, 9, 0, 40, 40, 9);
}

/* ---- (2) full budget == exact negamax on Tic-Tac-Toe ---------------- */

static int negamax(const pb_game_t *g, const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(s, acts), best = -2;
  for (int j = 0; j < na; j++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[j], &done);
    int v = done ? (int)r : -negamax(g, &c);
    if (v > best) best = v;
  }
  return best;
}

static void test_full_budget_is_negamax(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("tictactoe");
  pb_err_t err;
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  fake_t f = {.g = g};
  pb_evalfn_t fn = fake_fn(&f); /* arbitrary V/Q: must not matter */
  const int npos = 48, A = g->num_actions;
  pb_beam_t *b = pb_beam_new(g, 20000, 9, 4, &err);
  assert_non_null(b);
  pb_state_t pos[48];
  float out[48 * 9];
  for (int i = 0; i < npos; i++) pos[i] = random_position(g, &rng, 2, 6);
  assert_int_equal(pb_beam_run(b, pos, npos, &fn, out, &err), 0);
  for (int i = 0; i < npos; i++) {
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(&pos[i], acts);
    for (int j = 0; j < na; j++) {
      pb_state_t c = pos[i];
      int done = 0;
      float r = g->step(&c, acts[j], &done);
      int exact = done ? (int)r : -negamax(g, &c);
      assert_true(out[i * A + acts[j]] == (float)exact);
    }
  }
  pb_beam_destroy(&b);
}

/* ---- (3) hand-made cases ------------------------------------------- */

/* Empty Connect Four board, V = 0.5 everywhere, Q prefers column 4.
 * E = 9: the root, its 7 children (infinite priority, in column order),
 * then the child of the first child by column 4 (priority 1, ties broken by
 * creation order). Then: Q[col 1] = -|0.5|, the other columns 0.5. */
static void test_priorities_and_backup(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  pb_err_t err;
  fake_t f = {.g = g, .mode = 1, .v_const = 0.5f, .q_fav = 3};
  pb_evalfn_t fn = fake_fn(&f);
  pb_beam_t *b = pb_beam_new(g, 9, 3, 1, &err);
  pb_state_t s;
  g->reset(&s);
  float out[7], ref[7];
  assert_int_equal(pb_beam_run(b, &s, 1, &fn, out, &err), 0);
  assert_true(out[0] == -0.5f);
  for (int a = 1; a < 7; a++) assert_true(out[a] == 0.5f);
  pb_beam_stats_t st;
  pb_beam_stats(b, &st);
  assert_int_equal(st.expanded, 9);
  assert_int_equal(st.nodes, 7 + 49 + 7);
  assert_int_equal(st.v_asked, 1 + 63 - 9); /* leaves: all nodes but expanded */
  assert_int_equal(st.q_asked, 8);          /* not the root */
  /* The shape: the root, its 7 children, one grandchild under child 1. */
  assert_int_equal(st.expanded_at[0], 1);
  assert_int_equal(st.expanded_at[1], 7);
  assert_int_equal(st.expanded_at[2], 1);
  assert_int_equal(st.expanded_at[3], 0);
  assert_int_equal(st.depth_max_sum, 2);
  assert_int_equal(st.root_moves, 7);
  assert_int_equal(st.root_moves_deep, 1);
  assert_int_equal(pb_beam_search_ref(g, &s, 9, 3, &fn, ref, &err), 0);
  assert_memory_equal(out, ref, sizeof out);
  pb_beam_destroy(&b);
}

/* M = 1: only the root's children may be expanded, whatever E is. */
static void test_depth_limit(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  pb_err_t err;
  fake_t f = {.g = g, .mode = 1, .v_const = -0.25f, .q_fav = 0};
  pb_evalfn_t fn = fake_fn(&f);
  pb_beam_t *b = pb_beam_new(g, 1000, 1, 2, &err);
  pb_state_t s;
  g->reset(&s);
  float out[7];
  assert_int_equal(pb_beam_run(b, &s, 1, &fn, out, &err), 0);
  pb_beam_stats_t st;
  pb_beam_stats(b, &st);
  assert_int_equal(st.expanded, 8);
  assert_int_equal(st.nodes, 7 + 49);
  assert_int_equal(st.q_asked, 0); /* depth-1 nodes queue nothing */
  assert_int_equal(st.depth_max_sum, 1);
  assert_int_equal(st.root_moves_deep, 0);
  assert_int_equal(st.expanded_at[1], 7);
  /* child value = max(-V(grandchild)) = 0.25, so Q = -0.25 */
  for (int a = 0; a < 7; a++) assert_true(out[a] == -0.25f);
  pb_beam_destroy(&b);
}

/* A winning move is worth +1 and a move that lets the opponent win at once
 * is worth -1 when the search sees it, whatever V says. */
static void test_terminal_values(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  pb_err_t err;
  fake_t f = {.g = g, .mode = 1, .v_const = 0.0f, .q_fav = 0};
  pb_evalfn_t fn = fake_fn(&f);
  pb_beam_t *b = pb_beam_new(g, 8, 2, 1, &err);
  pb_state_t s;
  /* X has three in column 1; X to move: column 1 wins. */
  assert_int_equal(g->parse(&s, "121212", &err), 0);
  float out[7];
  assert_int_equal(pb_beam_run(b, &s, 1, &fn, out, &err), 0);
  assert_true(out[0] == 1.0f);
  /* O to move after X threatens: every move but column 1 loses at once.
   * Root + 7 children expanded (E = 8): each child sees X's win. */
  assert_int_equal(g->parse(&s, "12121", &err), 0);
  assert_int_equal(pb_beam_run(b, &s, 1, &fn, out, &err), 0);
  for (int a = 1; a < 7; a++) assert_true(out[a] == -1.0f);
  assert_true(out[0] == 0.0f);
  pb_beam_destroy(&b);
}

static void test_rejects_bad_input(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  pb_err_t err;
  assert_null(pb_beam_new(g, 0, 3, 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_beam_new(g, 10, 0, 1, &err));
  pb_beam_t *b = pb_beam_new(g, 10, 2, 4, &err);
  fake_t f = {.g = g};
  pb_evalfn_t fn = fake_fn(&f);
  pb_state_t s;
  assert_int_equal(g->parse(&s, "1212121", &err), 0); /* X won */
  float out[7];
  assert_int_equal(pb_beam_run(b, &s, 1, &fn, out, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "terminal"));
  pb_beam_destroy(&b);
  pb_beam_destroy(&b); /* NULL is fine */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_agrees_with_reference_connect4),
      cmocka_unit_test(test_agrees_with_reference_tictactoe),
      cmocka_unit_test(test_full_budget_is_negamax),
      cmocka_unit_test(test_priorities_and_backup),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_terminal_values),
      cmocka_unit_test(test_rejects_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
