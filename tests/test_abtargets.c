/* test_abtargets.c - Q-targets by alpha-beta (common/search/abtargets.h): each
 * legal move's target against a brute-force negamax over the same V when
 * the budget covers the tree (bit for bit), against the solver with an
 * exact V, against abnet's own search of the child at budgets that stop
 * early; the same targets whatever the number of positions searched at
 * once; errors, bad arguments and the counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abnet.h"
#include "abtargets.h"
#include "agent_fixtures.h"
#include "evalfn.h"
#include "fn_fixtures.h"
#include "game.h"
#include "rng.h"
#include "solver.h"


/* ---- the brute-force reference ------------------------------------------ */

/* The reference targets of s with the horizon max_depth plies below it. */
static void reference(fn_t *f, const pb_state_t *s, int max_depth, float *out) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = f->g->legal(s, acts);
  memset(out, 0, (size_t)f->g->num_actions * sizeof *out);
  for (int k = 0; k < n; k++) {
    pb_state_t c = *s;
    int done = 0;
    float r = f->g->step(&c, acts[k], &done);
    out[acts[k]] = done ? r : -fn_negamax(f, &c, max_depth - 1);
  }
}

static pb_abtargets_t *mk(const pb_game_t *g, int max_depth, uint64_t nodes,
                          int parallel) {
  pb_err_t err;
  pb_abtargets_t *t = pb_abtargets_new(g, max_depth, nodes, parallel, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  return t;
}

/* n positions of g after 0..max_plies random moves, none over. */
static void positions(const pb_game_t *g, uint64_t seed, int max_plies,
                      pb_state_t *out, int n) {
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 3);
  for (int i = 0; i < n; i++) out[i] = random_position(g, &rng, max_plies);
}

static void expect_same(const pb_game_t *g, const pb_state_t *s,
                        const float *want, const float *got, const char *what) {
  for (int a = 0; a < g->num_actions; a++)
    if (want[a] != got[a]) {
      char buf[512];
      g->render(s, buf, sizeof buf);
      fail_msg("%s: action %d: want %.9g, got %.9g in\n%s", what, a,
               (double)want[a], (double)got[a], buf);
    }
}

/* ---- tests ----------------------------------------------------------------
 */

/* An ample budget: every target is the brute-force negamax's, bit for bit,
 * at horizons 2..4 plies below the position, with V in ties or not, one
 * position or several at a time. */
static void test_ample_budget_equals_negamax(void **state) {
  (void)state;
  const pb_game_t *games[] = {&pb_game_connect4, &pb_game_tictactoe,
                              &pb_game_othello};
  for (size_t gi = 0; gi < sizeof games / sizeof games[0]; gi++) {
    const pb_game_t *g = games[gi];
    enum { N = 24 };
    pb_state_t pos[N];
    positions(g, 11 + gi, 20, pos, N);
    int top = g == &pb_game_othello ? 3 : 4;
    for (int M = 2; M <= top; M++)
      for (int kind = 0; kind < 2; kind++)
        for (int par = 1; par <= 5; par += 4) {
          fn_t f = {.g = g, .kind = kind};
          pb_evalfn_t ev = fn_evfn(&f);
          pb_abtargets_t *t = mk(g, M, 1000000, par);
          float *out = calloc((size_t)N * g->num_actions, sizeof *out);
          float want[PB_MAX_ACTIONS];
          pb_err_t err;
          assert_int_equal(pb_abtargets_run(t, pos, N, &ev, out, &err), 0);
          for (int i = 0; i < N; i++) {
            reference(&f, &pos[i], M, want);
            expect_same(g, &pos[i], want, out + (size_t)i * g->num_actions,
                        g->name);
          }
          free(out);
          pb_abtargets_destroy(&t);
        }
  }
}

/* With the exact value as V, every target is the move's exact value (the
 * solvers), whatever the depth. */
static void test_exact_v_gives_exact_targets(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_err_t err;
  fn_t f = {.g = g, .kind = 2};
  f.sol = pb_solver_new(g, 18, &err);
  assert_non_null(f.sol);
  pb_evalfn_t ev = fn_evfn(&f);
  enum { N = 6 };
  pb_state_t pos[N];
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 5);
  for (int i = 0; i < N; i++) {
    do pos[i] = random_position(g, &rng, 30);
    while (g->ply(&pos[i]) < 22);
  }
  float out[N * 7];
  for (int M = 2; M <= 3; M++) {
    pb_abtargets_t *t = mk(g, M, 100000, 3);
    assert_int_equal(pb_abtargets_run(t, pos, N, &ev, out, &err), 0);
    for (int i = 0; i < N; i++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int n = g->legal(&pos[i], acts);
      for (int k = 0; k < n; k++) {
        pb_state_t c = pos[i];
        int done = 0;
        float r = g->step(&c, acts[k], &done);
        float want = done ? r : (float)-exact(&f, &c);
        assert_true(out[i * 7 + acts[k]] == want);
      }
    }
    pb_abtargets_destroy(&t);
  }
  pb_solver_destroy(&f.sol);
}

/* Budgets that stop the search early (1 evaluation: the child's Q alone;
 * then 10, 40): each target is -(abnet's value of the child) with the same
 * budget and depth, the same for 1 and 8 positions at a time. */
static void test_small_budgets_follow_abnet(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  enum { N = 30, A = 7 };
  pb_state_t pos[N];
  positions(g, 21, 16, pos, N);
  const uint64_t budgets[] = {1, 10, 40};
  for (size_t b = 0; b < 3; b++) {
    fn_t f = {.g = g, .kind = 1};
    pb_evalfn_t ev = fn_evfn(&f);
    pb_err_t err;
    pb_abnet_opts_t o;
    pb_abnet_defaults(&o);
    o.nodes = budgets[b];
    o.max_depth = 4;
    pb_abnet_t *ab = pb_abnet_new(g, &o, &err);
    assert_non_null(ab);
    float one[N * A], eight[N * A];
    pb_abtargets_t *t1 = mk(g, 5, budgets[b], 1);
    pb_abtargets_t *t8 = mk(g, 5, budgets[b], 8);
    assert_int_equal(pb_abtargets_run(t1, pos, N, &ev, one, &err), 0);
    assert_int_equal(pb_abtargets_run(t8, pos, N, &ev, eight, &err), 0);
    assert_memory_equal(one, eight, sizeof one);
    int depth0 = 0;
    for (int i = 0; i < N; i++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int n = g->legal(&pos[i], acts);
      for (int k = 0; k < n; k++) {
        pb_state_t c = pos[i];
        int done = 0;
        float r = g->step(&c, acts[k], &done);
        float want = r;
        if (!done) {
          pb_abnet_result_t res;
          assert_int_equal(pb_abnet_search(ab, &c, &ev, &res, &err), 0);
          want = -fn_clampv(res.value);
          depth0 += res.depth == 0;
        }
        assert_true(one[i * A + acts[k]] == want);
      }
    }
    /* 1 evaluation never completes a ply; 40 usually does. */
    if (budgets[b] == 1) assert_true(depth0 > N);
    if (budgets[b] == 40) assert_true(depth0 < N);
    pb_abtargets_stats_t st;
    pb_abtargets_stats(t8, &st);
    assert_true(st.positions == N);
    assert_true(st.searches <= st.moves && st.searches > 0);
    assert_true(st.q_evals >= st.searches); /* each asks its child's Q */
    assert_true(st.v_evals + st.q_evals <= st.searches * budgets[b]);
    pb_abtargets_destroy(&t1);
    pb_abtargets_destroy(&t8);
    pb_abnet_destroy(&ab);
  }
}

/* Positions searched many at a time (64 threads, more than the positions)
 * come out as one at a time, and the network sees fewer, larger calls. */
static void test_parallel_batches(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  enum { N = 40, A = 7 };
  pb_state_t pos[N];
  positions(g, 31, 12, pos, N);
  fn_t f1 = {.g = g}, f64 = {.g = g};
  pb_evalfn_t e1 = fn_evfn(&f1), e64 = fn_evfn(&f64);
  float a[N * A], b[N * A];
  pb_abtargets_t *t1 = mk(g, 3, 200, 1), *t64 = mk(g, 3, 200, 1000);
  pb_err_t err;
  assert_int_equal(pb_abtargets_run(t1, pos, N, &e1, a, &err), 0);
  assert_int_equal(pb_abtargets_run(t64, pos, N, &e64, b, &err), 0);
  assert_memory_equal(a, b, sizeof a);
  assert_true(f1.v_rows == f64.v_rows && f1.q_rows == f64.q_rows);
  assert_true(f64.calls * 4 < f1.calls);
  pb_abtargets_destroy(&t1);
  pb_abtargets_destroy(&t64);
}

/* A finished game is refused before anything is searched; a failing
 * evalfn's error comes back from any member; bad arguments are named. */
static void test_errors(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_tictactoe;
  pb_state_t pos[4];
  positions(g, 41, 3, pos, 4);
  pb_state_t over;
  g->reset(&over);
  int done = 0;
  const int moves[] = {0, 3, 1, 4, 2};
  for (int i = 0; i < 5; i++) g->step(&over, moves[i], &done);
  assert_true(done);
  pos[2] = over;
  fn_t f = {.g = g};
  pb_evalfn_t ev = fn_evfn(&f);
  float out[4 * 9];
  pb_err_t err;
  pb_abtargets_t *t = mk(g, 3, 100, 4);
  assert_int_equal(pb_abtargets_run(t, pos, 4, &ev, out, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "position 2"));
  assert_int_equal(f.calls, 0);
  positions(g, 42, 3, pos, 4);
  for (int at = 1; at <= 3; at++) {
    fn_t ff = {.g = g, .fail_at = at};
    pb_evalfn_t fe = fn_evfn(&ff);
    assert_int_equal(pb_abtargets_run(t, pos, 4, &fe, out, &err), PB_ENN);
    assert_non_null(strstr(err.msg, "fails"));
  }
  assert_int_equal(pb_abtargets_run(t, pos, 0, &ev, out, &err), 0);
  assert_int_equal(pb_abtargets_run(NULL, pos, 4, &ev, out, &err), PB_EINVAL);
  assert_int_equal(pb_abtargets_run(t, pos, 4, NULL, out, &err), PB_EINVAL);
  pb_abtargets_destroy(&t);
  pb_abtargets_destroy(&t);
  pb_abtargets_destroy(NULL);

  assert_null(pb_abtargets_new(g, 1, 100, 1, &err));
  assert_non_null(strstr(err.msg, "max_depth 1"));
  assert_null(pb_abtargets_new(g, PB_ABNET_MAX_DEPTH + 2, 100, 1, &err));
  assert_non_null(strstr(err.msg, "max_depth"));
  assert_null(pb_abtargets_new(g, 3, 0, 1, &err));
  assert_non_null(strstr(err.msg, "nodes 0"));
  assert_null(pb_abtargets_new(g, 3, PB_ABNET_MAX_NODES + 1, 1, &err));
  assert_non_null(strstr(err.msg, "nodes"));
  assert_null(pb_abtargets_new(g, 3, 100, 0, &err));
  assert_non_null(strstr(err.msg, "parallel 0"));
  assert_null(pb_abtargets_new(NULL, 3, 100, 1, &err));
  t = mk(g, PB_ABNET_MAX_DEPTH + 1, 1, 2);
  assert_int_equal(pb_abtargets_max_depth(t), PB_ABNET_MAX_DEPTH + 1);
  assert_true(pb_abtargets_nodes(t) == 1);
  pb_abtargets_destroy(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ample_budget_equals_negamax),
      cmocka_unit_test(test_exact_v_gives_exact_targets),
      cmocka_unit_test(test_small_budgets_follow_abnet),
      cmocka_unit_test(test_parallel_batches),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
