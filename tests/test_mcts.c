/* test_mcts.c - PUCT MCTS (common/search/mcts.h): with a uniform network and
 * enough simulations it finds the winning move and the only block in
 * hand-picked Tic-Tac-Toe positions; visit counts sum to the simulations;
 * many searches advanced together give exactly what one at a time gives;
 * errors pass through; the discounting heuristic prefers a win in 1 to a
 * win in 3; a PROBS V and Q as the evaluator (pb_mcts_vq_fn): logits Q/T,
 * value V, and with exact V and Q the most visited move is optimal in
 * Tic-Tac-Toe and late Connect Four positions. Gumbel search spends
 * exactly its budget on the top-m actions by Gumbel noise + logits and
 * picks one of them, and with twice the tree's size in simulations keeps
 * the exact result in 150 Tic-Tac-Toe positions; forced playouts give
 * every root child its forced share and the target is the pruned counts;
 * per-root budgets and fast roots (playout cap) batch exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_fixtures.h"
#include "evalfn.h"
#include "game.h"
#include "mcts.h"
#include "mcts_rules.h"
#include "rng.h"
#include "solver.h"

#include "plain_net.h"

static int argmax(const float *v, int n) {
  int b = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[b]) b = i;
  return b;
}

/* Win in one, and the only move that does not lose at once. */
static void test_finds_win_and_block(void **state) {
  (void)state;
  pb_err_t err;
  pb_mcts_opts_t o = {2000, 1.5, 0.0, 0.0, 8, 0};
  pb_mcts_t *m = pb_mcts_new(T3, &o, &err);
  assert_non_null(m);
  net_t nt = {T3, 0, 0, 0, 0};
  pb_mcts_evalfn_t ev = {net_eval, &nt};
  /* X (7, 8) against O (1, 5): cell 9 (action 8) wins; mirrored: cell 7
   * (action 6). X (1, 2) against O (5), O to... X to move after O at 9:
   * "1529": X holds 1 and 2, O 5 and 9: X wins at 3 (action 2). */
  const struct {
    const char *moves;
    int best;
  } cases[] = {{"7185", 8}, {"9385", 6}, {"1529", 2},
               /* O holds 5, X holds 1 and 2 threatening 3; O to move
                * after X's 2 must block at 3 (action 2): "15 2" -> X 1, O 5,
                * X 2. */
               {"152", 2}};
  const int nc = sizeof cases / sizeof cases[0];
  pb_state_t s[4];
  for (int i = 0; i < nc; i++) s[i] = pos(T3, cases[i].moves);
  float visits[4 * 9], val[4];
  assert_int_equal(pb_mcts_run(m, s, nc, &ev, NULL, visits, val, &err), 0);
  for (int i = 0; i < nc; i++) {
    if (argmax(visits + i * 9, 9) != cases[i].best)
      fail_msg("%s: most visits on %d, want %d", cases[i].moves,
               argmax(visits + i * 9, 9), cases[i].best);
    double sum = 0;
    for (int a = 0; a < 9; a++) sum += visits[i * 9 + a];
    assert_true(sum == 2000);
  }
  /* The wins are worth about +1 to the side to move. */
  assert_true(val[0] > 0.5f && val[1] > 0.5f && val[2] > 0.5f);
  pb_mcts_destroy(&m);
  pb_mcts_destroy(&m);
  assert_null(m);
}

/* Visit counts: sum to the simulations, 0 on illegal actions; many
 * searches together (parallel 64) = one at a time (parallel 1), exactly,
 * with one network call per round. */
static void test_batched_same_as_one(void **state) {
  (void)state;
  pb_err_t err;
  enum { N = 40, S = 60, A = 7 };
  pb_state_t s[N];
  pb_rng_t r;
  pb_rng_seed(&r, 9, 0);
  for (int i = 0; i < N; i++) {
    C4->reset(&s[i]);
    int plies = (int)pb_rng_below(&r, 12);
    for (int k = 0; k < plies; k++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int na = C4->legal(&s[i], acts), done = 0;
      pb_state_t t = s[i];
      C4->step(&t, acts[pb_rng_below(&r, (uint32_t)na)], &done);
      if (done) break;
      s[i] = t;
    }
  }
  float want[N * A], got[N * A], wv[N], gv[N];
  pb_mcts_opts_t one = {S, 1.25, 0.0, 0.0, 1, 0},
                 many = {S, 1.25, 0.0, 0.0, 64, 0};
  net_t n1 = {C4, 0, 0, 0, 1}, n2 = {C4, 0, 0, 0, 1};
  pb_mcts_evalfn_t e1 = {net_eval, &n1}, e2 = {net_eval, &n2};
  pb_mcts_t *m1 = pb_mcts_new(C4, &one, &err), *m2 = pb_mcts_new(C4, &many, &err);
  assert_int_equal(pb_mcts_run(m1, s, N, &e1, NULL, want, wv, &err), 0);
  assert_int_equal(pb_mcts_run(m2, s, N, &e2, NULL, got, gv, &err), 0);
  assert_memory_equal(want, got, sizeof want);
  assert_memory_equal(wv, gv, sizeof wv);
  for (int i = 0; i < N; i++) {
    uint8_t acts[PB_MAX_ACTIONS], legal[PB_MAX_ACTIONS] = {0};
    int na = C4->legal(&s[i], acts);
    for (int k = 0; k < na; k++) legal[acts[k]] = 1;
    double sum = 0;
    for (int a = 0; a < A; a++) {
      if (!legal[a]) assert_true(got[i * A + a] == 0);
      sum += got[i * A + a];
    }
    assert_true(sum == S);
  }
  /* One call for the roots and at most one per simulation round (none in
   * a round whose descents all ended in finished games). */
  assert_true(n2.calls <= S + 1 && n2.calls > S / 2);
  assert_true(n1.calls <= N * (S + 1) && n1.calls > 20 * n2.calls);
  assert_int_equal(n1.rows, n2.rows);
  assert_true(pb_mcts_evaluations(m2) == (uint64_t)n2.rows);
  pb_mcts_destroy(&m1);
  pb_mcts_destroy(&m2);
}

/* Root noise moves visits around but keeps their sum; errors pass
 * through; bad options and finished games are refused. */
static void test_noise_and_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_mcts_opts_t o = {100, 1.25, 0.25, 0.3, 4, 0};
  pb_mcts_t *m = pb_mcts_new(T3, &o, &err);
  assert_non_null(m);
  net_t nt = {T3, 0, 0, 0, 1};
  pb_mcts_evalfn_t ev = {net_eval, &nt};
  pb_state_t s = pos(T3, "");
  float v1[9], v2[9];
  pb_rng_t r1, r2;
  pb_rng_seed(&r1, 1, 0);
  pb_rng_seed(&r2, 2, 0);
  assert_int_equal(pb_mcts_run(m, &s, 1, &ev, &r1, v1, NULL, &err), 0);
  assert_int_equal(pb_mcts_run(m, &s, 1, &ev, &r2, v2, NULL, &err), 0);
  double a = 0, b = 0;
  for (int i = 0; i < 9; i++) {
    a += v1[i];
    b += v2[i];
  }
  assert_true(a == 100 && b == 100);
  assert_memory_not_equal(v1, v2, sizeof v1);
  /* A finished game. */
  pb_state_t won = pos(T3, "14253");
  assert_int_equal(pb_mcts_run(m, &won, 1, &ev, &r1, v1, NULL, &err), PB_EINVAL);
  /* The network fails on its 3rd call. */
  net_t bad = {T3, 0, 0, 3, 0};
  pb_mcts_evalfn_t evb = {net_eval, &bad};
  assert_int_equal(pb_mcts_run(m, &s, 1, &evb, &r1, v1, NULL, &err), PB_ENN);
  assert_non_null(strstr(err.msg, "call 3 fails"));
  pb_mcts_destroy(&m);
  pb_mcts_opts_t badopts[] = {{0, 1, 0, 0, 1, 0},      {10, 0, 0, 0, 1, 0},
                              {10, 1, 0.5, 0, 1, 0},   {10, 1, 0, 0, 0, 0},
                              {10, 1, 1.5, 0.3, 1, 0}, {10, 1, 0, 0, 1, 2}};
  for (size_t i = 0; i < sizeof badopts / sizeof badopts[0]; i++) {
    assert_null(pb_mcts_new(T3, &badopts[i], &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
}

/* A perfect value network for Tic-Tac-Toe (the exact value, undiscounted)
 * whose policy favours action 4 (logit 3, the others 0). */
static int oracle_eval(void *ctx, const pb_state_t *s, int n, float *policy,
                       float *value, pb_err_t *err) {
  (void)ctx;
  (void)err;
  for (int i = 0; i < n; i++) {
    value[i] = (float)t3_minimax(&s[i]);
    for (int a = 0; a < 9; a++) policy[i * 9 + a] = a == 4 ? 3.0f : 0.0f;
  }
  return 0;
}

/* Discounting: in "1248" X wins at once at 7 (action 6) and in 3 plies
 * after 5 (action 4, the move the policy favours). With exact values both
 * are worth 1, so plain PUCT follows the policy to the win in 3; with
 * discount the win in 3 scores at most 1/3 at its terminal positions and
 * the search prefers the win in 1, in its visits and its root value. */
static void test_discount_prefers_quick_win(void **state) {
  (void)state;
  pb_err_t err;
  pb_state_t s = pos(T3, "1248");
  pb_mcts_evalfn_t ev = {oracle_eval, NULL};
  float visits[2][9], rv[2];
  for (int d = 0; d <= 1; d++) {
    pb_mcts_opts_t o = {2000, 1.5, 0.0, 0.0, 1, d};
    pb_mcts_t *m = pb_mcts_new(T3, &o, &err);
    assert_non_null(m);
    assert_int_equal(pb_mcts_run(m, &s, 1, &ev, NULL, visits[d], &rv[d], &err),
                     0);
    pb_mcts_destroy(&m);
  }
  printf(
      "off: visits %.0f (win in 1), %.0f (win in 3), root %.3f; on: %.0f, "
      "%.0f, %.3f\n",
      visits[0][6], visits[0][4], rv[0], visits[1][6], visits[1][4], rv[1]);
  assert_true(visits[0][4] > visits[0][6]); /* off: the policy's choice */
  assert_true(visits[1][6] > visits[1][4]); /* on: the quicker win */
  assert_int_equal(argmax(visits[1], 9), 6);
  assert_true(rv[1] < rv[0]);
  assert_true(rv[1] > 0.5f);
}

/* ---- a PROBS V and Q as the evaluator ---------------------------------- */

/* Exact V and Q from the solver: V(s) the result for s's side to move,
 * Q(s)[a] the result of playing a; illegal actions 0. With `flat`, Q is 0
 * everywhere (uniform priors). */
typedef struct {
  const pb_game_t *g;
  pb_solver_t *sol;
  int flat, v_rows, q_rows;
} exact_t;

static int exact_result(exact_t *x, const pb_state_t *s) {
  pb_solve_value_t v;
  pb_err_t err;
  if (pb_solver_solve(x->sol, s, 1, &v, &err) != 0) fail_msg("%s", err.msg);
  return v.result;
}

static int ex_value(void *ctx, const pb_state_t *s, int n, float *out,
                    pb_err_t *err) {
  (void)err;
  exact_t *x = ctx;
  x->v_rows += n;
  for (int i = 0; i < n; i++) out[i] = (float)exact_result(x, &s[i]);
  return 0;
}

static int ex_q(void *ctx, const pb_state_t *s, int n, float *out,
                pb_err_t *err) {
  (void)err;
  exact_t *x = ctx;
  const int A = x->g->num_actions;
  x->q_rows += n;
  for (int i = 0; i < n; i++) {
    uint8_t acts[PB_MAX_ACTIONS];
    int na = x->g->legal(&s[i], acts);
    for (int a = 0; a < A; a++) out[i * A + a] = 0.0f;
    for (int k = 0; k < na && !x->flat; k++) {
      pb_state_t c = s[i];
      int done = 0;
      float r = x->g->step(&c, acts[k], &done);
      out[i * A + acts[k]] = done ? r : (float)-exact_result(x, &c);
    }
  }
  return 0;
}

/* The adapter: logits Q / T, values V, one call of each per batch. */
static void test_vq_adapter(void **state) {
  (void)state;
  pb_err_t err;
  exact_t x = {T3, pb_solver_new(T3, 0, &err), 0, 0, 0};
  assert_non_null(x.sol);
  pb_mcts_vq_t vq = {T3, {ex_value, ex_q, &x}, 0.25};
  pb_mcts_evalfn_t fn = pb_mcts_vq_fn(&vq);
  /* X (7, 8) against O (1, 5): X wins at 9 and loses elsewhere. */
  pb_state_t s[2] = {pos(T3, "7185"), pos(T3, "5")};
  float pol[2 * 9], val[2];
  assert_int_equal(fn.eval(fn.ctx, s, 2, pol, val, &err), 0);
  assert_true(val[0] == 1.0f && val[1] == 0.0f);
  assert_true(pol[8] == 4.0f && pol[2] == -4.0f);
  assert_true(pol[9 + 0] == 0.0f);
  assert_int_equal(x.v_rows, 2);
  assert_int_equal(x.q_rows, 2);
  vq.temperature = 0;
  assert_int_equal(fn.eval(fn.ctx, s, 1, pol, val, &err), PB_EINVAL);
  pb_solver_destroy(&x.sol);
}

/* With exact V (and exact or flat Q priors, T 1 or 0.2) the most visited
 * move keeps the position's exact result. */
static void test_vq_exact_converges(void **state) {
  (void)state;
  pb_err_t err;
  pb_rng_t rng;
  pb_rng_seed(&rng, 21, 0);
  const pb_game_t *games[2] = {T3, C4};
  const int sims[2] = {600, 300}, npos[2] = {12, 5};
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = games[gi];
    const int A = g->num_actions;
    exact_t x = {g, pb_solver_new(g, 16, &err), 0, 0, 0};
    assert_non_null(x.sol);
    for (int t = 0; t < npos[gi]; t++) {
      pb_state_t s;
      for (;;) { /* a position where some move is worse than the best */
        g->reset(&s);
        int plies = gi == 0 ? (int)pb_rng_below(&rng, 6) : 26 + (int)pb_rng_below(&rng, 8);
        int done = 0;
        for (int p = 0; p < plies && !done; p++) {
          uint8_t acts[PB_MAX_ACTIONS];
          int na = g->legal(&s, acts);
          pb_state_t c = s;
          g->step(&c, acts[pb_rng_below(&rng, (uint32_t)na)], &done);
          if (!done) s = c;
        }
        pb_solve_value_t mv[PB_MAX_ACTIONS];
        assert_int_equal(pb_solver_moves(x.sol, &s, 1, mv, &err), 0);
        int lo = 2, hi = -2;
        for (int a = 0; a < A; a++)
          if (mv[a].result != PB_SOLVE_ILLEGAL) {
            lo = mv[a].result < lo ? mv[a].result : lo;
            hi = mv[a].result > hi ? mv[a].result : hi;
          }
        if (lo < hi) break;
      }
      pb_solve_value_t sv, mv[PB_MAX_ACTIONS];
      assert_int_equal(pb_solver_solve(x.sol, &s, 1, &sv, &err), 0);
      assert_int_equal(pb_solver_moves(x.sol, &s, 1, mv, &err), 0);
      for (int v = 0; v < 3; v++) {
        x.flat = v == 2;
        pb_mcts_vq_t vq = {g, {ex_value, ex_q, &x}, v == 1 ? 0.2 : 1.0};
        pb_mcts_evalfn_t fn = pb_mcts_vq_fn(&vq);
        pb_mcts_opts_t o = {sims[gi], 1.5, 0.0, 0.0, 1, 0};
        pb_mcts_t *m = pb_mcts_new(g, &o, &err);
        assert_non_null(m);
        float visits[PB_MAX_ACTIONS], rv;
        assert_int_equal(pb_mcts_run(m, &s, 1, &fn, NULL, visits, &rv, &err), 0);
        int best = argmax(visits, A);
        if (mv[best].result != sv.result)
          fail_msg("%s t=%d variant %d: most visited %d (result %d), exact %d",
                   g->name, t, v, best, mv[best].result, sv.result);
        pb_mcts_destroy(&m);
      }
    }
    pb_solver_destroy(&x.sol);
  }
}

/* ---- Gumbel search, forced playouts, per-root budgets ------------------ */

static pb_mcts_t *gumbel(const pb_game_t *g, int sims, int m, int par) {
  pb_err_t err;
  pb_mcts_opts_t o = {sims, 1.5, 0.0, 0.0, par, 0};
  pb_mcts_root_opts_t r = {PB_MCTS_GUMBEL, m, PB_MCTS_GUMBEL_C_VISIT,
                           PB_MCTS_GUMBEL_C_SCALE, 0};
  pb_mcts_t *t = pb_mcts_new_ex(g, &o, &r, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  return t;
}

/* The root's g + logits by legal action, recomputed as mcts.c draws and
 * expands them: one uniform per legal action from the root's stream, the
 * priors the float softmax of the network's logits. */
static int perturbed(const pb_game_t *g, const pb_state_t *s, pb_rng_t rng,
                     uint8_t *acts, double *score) {
  float pol[PB_MAX_ACTIONS], val, pr[PB_MAX_ACTIONS];
  net_t nt = {g, 0, 0, 0, 1};
  pb_err_t err;
  net_eval(&nt, s, 1, pol, &val, &err);
  int na = g->legal(s, acts);
  float mx = -INFINITY;
  for (int k = 0; k < na; k++) mx = pol[acts[k]] > mx ? pol[acts[k]] : mx;
  double sum = 0;
  for (int k = 0; k < na; k++) {
    pr[k] = expf(pol[acts[k]] - mx);
    sum += pr[k];
  }
  for (int k = 0; k < na; k++) {
    double u = pb_rng_uniform(&rng);
    score[k] = -log(-log(u)) + log((double)(float)(pr[k] / sum));
  }
  return na;
}

/* Sequential halving spends exactly the budget; it visits the top
 * min(m, n) actions by Gumbel noise + logits and no other, and its move
 * is one of the top m (C4 with 7 and T3 with 9 legal actions). */
static void test_gumbel_budget_top_m(void **state) {
  (void)state;
  const pb_game_t *games[2] = {C4, T3};
  const int ms[3] = {2, 4, 16}, ns[6] = {1, 2, 3, 8, 16, 100};
  for (int gi = 0; gi < 2; gi++)
    for (int mi = 0; mi < 3; mi++)
      for (int ni = 0; ni < 6; ni++) {
        const pb_game_t *g = games[gi];
        const int A = g->num_actions, m = ms[mi], n = ns[ni];
        pb_state_t s = pos(g, gi == 0 ? "4" : "5");
        pb_rng_t rng;
        pb_rng_seed(&rng, 77, (uint64_t)(mi * 10 + ni));
        uint8_t acts[PB_MAX_ACTIONS];
        double score[PB_MAX_ACTIONS];
        int na = perturbed(g, &s, rng, acts, score);
        pb_mcts_t *t = gumbel(g, n, m, 1);
        net_t nt = {g, 0, 0, 0, 1};
        pb_mcts_evalfn_t ev = {net_eval, &nt};
        float visits[PB_MAX_ACTIONS], target[PB_MAX_ACTIONS];
        int action = -1;
        pb_mcts_io_t io = {NULL, NULL, visits, target, &action, NULL};
        pb_rng_t *rp = &rng;
        pb_err_t err;
        assert_int_equal(pb_mcts_search(t, &s, 1, &ev, &rp, &io, &err), 0);
        double sum = 0, tsum = 0;
        for (int a = 0; a < A; a++) {
          sum += visits[a];
          tsum += target[a];
        }
        assert_true(sum == n);
        assert_true(fabs(tsum - 1.0) < 1e-5);
        const int top = m < na ? m : na, want = top < n ? top : n;
        int visited = 0, action_rank = -1;
        for (int k = 0; k < na; k++) {
          int rank = 0; /* actions with a higher score */
          for (int j = 0; j < na; j++) rank += score[j] > score[k];
          if (visits[acts[k]] > 0) {
            visited++;
            if (rank >= want)
              fail_msg("%s m %d n %d: action %d of rank %d visited", g->name, m,
                       n, acts[k], rank);
          }
          if (acts[k] == action) action_rank = rank;
        }
        assert_int_equal(visited, want);
        assert_true(action_rank >= 0 && action_rank < top);
        pb_mcts_destroy(&t);
      }
}

/* Nodes below s (terminal ones included): the simulations a search needs
 * to hold the whole tree. */

static int tree_size(const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = T3->legal(s, acts), size = 0;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    T3->step(&c, acts[i], &done);
    size += 1 + (done ? 0 : tree_size(&c));
  }
  return size;
}

/* With twice as many simulations as the tree has nodes, Gumbel search's
 * move keeps the exact result (t3_minimax) in 150 Tic-Tac-Toe positions
 * of 4 to 6 plies where some move is worse, with a uniform network
 * (logits 0, value 0), with and without Gumbel noise. (With exactly as
 * many, one of them fails: halving's first phase gives each of the 4
 * moves 7 of the 60 simulations, fewer than their subtrees hold, and
 * drops the draw with mean values that are not yet minimax.) */
static void test_gumbel_finds_best(void **state) {
  (void)state;
  pb_rng_t pr;
  pb_rng_seed(&pr, 31, 0);
  int checked = 0;
  for (int t = 0; t < 400 && checked < 150; t++) {
    pb_state_t s = random_position(T3, &pr, 6);
    uint8_t acts[PB_MAX_ACTIONS];
    int na = T3->legal(&s, acts), lo = 2, hi = -2;
    if (na > 5) continue; /* 4 plies or more */
    for (int k = 0; k < na; k++) {
      pb_state_t c = s;
      int done = 0;
      float r = T3->step(&c, acts[k], &done);
      int v = done ? (int)r : -t3_minimax(&c);
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    if (lo == hi) continue;
    const int n = 2 * tree_size(&s);
    for (int noise = 0; noise <= 1; noise++) {
      pb_mcts_t *m = gumbel(T3, n, 16, 1);
      net_t nt = {T3, 0, 0, 0, 0};
      pb_mcts_evalfn_t ev = {net_eval, &nt};
      float visits[9];
      int action = -1;
      pb_mcts_io_t io = {NULL, NULL, visits, NULL, &action, NULL};
      pb_rng_t rng;
      pb_rng_seed(&rng, 5, (uint64_t)t);
      pb_rng_t *rp = noise ? &rng : NULL;
      pb_err_t err;
      assert_int_equal(pb_mcts_search(m, &s, 1, &ev, &rp, &io, &err), 0);
      pb_state_t c = s;
      int done = 0;
      float r = T3->step(&c, action, &done);
      int v = done ? (int)r : -t3_minimax(&c);
      if (v != hi)
        fail_msg("position %d (%d nodes), noise %d: move %d worth %d, best %d",
                 t, n, noise, action, v, hi);
      pb_mcts_destroy(&m);
    }
    checked++;
  }
  assert_true(checked >= 100);
}

/* Forced playouts: every root child gets its forced share (no fewer
 * than sqrt(2 P N) - 1 visits at the end, where plain PUCT leaves some
 * child below it), and the target is the pruned counts: the most visited
 * child keeps its visits, no other keeps more than it had, nor exactly 1,
 * nor loses more than its forced count. */
static void test_forced_playouts(void **state) {
  (void)state;
  const pb_game_t *g = C4;
  const int A = 7, S = 400;
  pb_state_t s = pos(g, "44");
  float pol[A], val, pr[A];
  net_t nt = {g, 0, 0, 0, 1};
  pb_mcts_evalfn_t ev = {net_eval, &nt};
  pb_err_t err;
  net_eval(&nt, &s, 1, pol, &val, &err);
  float mx = -INFINITY;
  double sum = 0;
  for (int a = 0; a < A; a++) mx = pol[a] > mx ? pol[a] : mx;
  for (int a = 0; a < A; a++) sum += (pr[a] = expf(pol[a] - mx));
  for (int a = 0; a < A; a++) pr[a] = (float)(pr[a] / sum);
  int below[2] = {0, 0};
  for (int forced = 0; forced <= 1; forced++) {
    pb_mcts_opts_t o = {S, 1.5, 0.0, 0.0, 1, 0};
    pb_mcts_root_opts_t r = {PB_MCTS_PUCT, 0, 0, 0, forced};
    pb_mcts_t *m = pb_mcts_new_ex(g, &o, &r, &err);
    assert_non_null(m);
    float visits[A], target[A];
    int action = -1;
    pb_mcts_io_t io = {NULL, NULL, visits, target, &action, NULL};
    assert_int_equal(pb_mcts_search(m, &s, 1, &ev, NULL, &io, &err), 0);
    for (int a = 0; a < A; a++)
      below[forced] += visits[a] < pb_mcts_forced_visits(pr[a], S) - 1.0;
    if (forced) {
      double scale = visits[action] / target[action], tsum = 0;
      for (int a = 0; a < A; a++) {
        double kept = target[a] * scale;
        tsum += target[a];
        assert_true(fabs(kept - round(kept)) < 1e-3);
        assert_true(kept <= visits[a] + 1e-3);
        assert_true(fabs(kept - 1.0) > 0.5);
        if (kept > 0.5)
          assert_true(kept >= visits[a] -
                                  floor(pb_mcts_forced_visits(pr[a], S)) -
                                  1e-3);
      }
      assert_true(fabs(tsum - 1.0) < 1e-5);
      assert_true(scale < S - 0.5); /* something was pruned */
    } else {
      for (int a = 0; a < A; a++)
        assert_true(fabs(target[a] - visits[a] / S) < 1e-6);
    }
    pb_mcts_destroy(&m);
  }
  printf("children below sqrt(2 P N) - 1: plain %d, forced %d\n", below[0],
         below[1]);
  assert_int_equal(below[1], 0);
  assert_true(below[0] > 0);
}

/* Per-root budgets and fast roots (playout cap): each root's visits sum
 * to its own budget; many roots together give what one at a time gives
 * (PUCT with noise, and gumbel); a fast root draws no Dirichlet noise
 * (it needs no stream and equals a noiseless search); budgets out of
 * range and a missing stream for a noisy root are refused. */
static void test_budgets_and_fast(void **state) {
  (void)state;
  const pb_game_t *g = C4;
  enum { N = 5, A = 7 };
  const int sims[N] = {5, 30, 1, 17, 30};
  const uint8_t fast[N] = {1, 0, 1, 1, 0};
  pb_state_t s[N];
  pb_rng_t pr;
  pb_rng_seed(&pr, 3, 0);
  for (int i = 0; i < N; i++) s[i] = random_position(g, &pr, 8);
  pb_err_t err;
  for (int rule = 0; rule <= 1; rule++) {
    float all[N * A], one[A], tall[N * A], tone[A];
    pb_mcts_opts_t o = {30, 1.5, 0.25, 1.0, 8, 0}, o1 = o;
    o1.parallel = 1;
    pb_mcts_root_opts_t r = {rule, 3, 50, 1, 0};
    pb_mcts_t *m = pb_mcts_new_ex(g, &o, &r, &err),
              *m1 = pb_mcts_new_ex(g, &o1, &r, &err);
    assert_non_null(m);
    assert_non_null(m1);
    net_t nt = {g, 0, 0, 0, 1};
    pb_mcts_evalfn_t ev = {net_eval, &nt};
    pb_rng_t rr[N], *rp[N];
    for (int i = 0; i < N; i++) {
      pb_rng_seed(&rr[i], 8, (uint64_t)i);
      rp[i] = &rr[i];
    }
    pb_mcts_io_t io = {sims, fast, all, tall, NULL, NULL};
    assert_int_equal(pb_mcts_search(m, s, N, &ev, rp, &io, &err), 0);
    for (int i = 0; i < N; i++) {
      double sum = 0;
      for (int a = 0; a < A; a++) sum += all[i * A + a];
      assert_true(sum == sims[i]);
      pb_rng_t r1;
      pb_rng_seed(&r1, 8, (uint64_t)i);
      pb_rng_t *p1 = &r1;
      pb_mcts_io_t io1 = {&sims[i], &fast[i], one, tone, NULL, NULL};
      assert_int_equal(pb_mcts_search(m1, &s[i], 1, &ev, &p1, &io1, &err), 0);
      assert_memory_equal(one, &all[i * A], sizeof one);
      assert_memory_equal(tone, &tall[i * A], sizeof tone);
      if (rule == PB_MCTS_PUCT && fast[i]) {
        /* no stream needed, and the same as without noise */
        pb_mcts_opts_t q = {sims[i], 1.5, 0.0, 0.0, 1, 0};
        pb_mcts_t *plain = pb_mcts_new(g, &q, &err);
        float pv[A];
        assert_int_equal(
            pb_mcts_run(plain, &s[i], 1, &ev, NULL, pv, NULL, &err), 0);
        assert_memory_equal(pv, one, sizeof pv);
        pb_rng_t *none = NULL;
        assert_int_equal(pb_mcts_search(m1, &s[i], 1, &ev, &none, &io1, &err),
                         0);
        assert_memory_equal(one, &all[i * A], sizeof one);
        pb_mcts_destroy(&plain);
      }
    }
    if (rule == PB_MCTS_PUCT) { /* a full noisy root without a stream */
      rp[1] = NULL;
      assert_int_equal(pb_mcts_search(m, s, N, &ev, rp, &io, &err), PB_EINVAL);
      rp[1] = &rr[1];
    }
    int bad[N] = {5, 31, 1, 17, 30};
    pb_mcts_io_t iob = {bad, fast, all, NULL, NULL, NULL};
    assert_int_equal(pb_mcts_search(m, s, N, &ev, rp, &iob, &err), PB_EINVAL);
    assert_non_null(strstr(err.msg, "budget"));
    bad[1] = 0;
    assert_int_equal(pb_mcts_search(m, s, N, &ev, rp, &iob, &err), PB_EINVAL);
    pb_mcts_destroy(&m);
    pb_mcts_destroy(&m1);
  }
  /* bad root options */
  pb_mcts_opts_t o = {10, 1.5, 0.0, 0.0, 1, 0};
  const pb_mcts_root_opts_t bad[] = {{2, 0, 0, 0, 0},
                                     {PB_MCTS_PUCT, 0, 0, 0, 2},
                                     {PB_MCTS_GUMBEL, 0, 50, 1, 0},
                                     {PB_MCTS_GUMBEL, 4, 0, 1, 0},
                                     {PB_MCTS_GUMBEL, 4, 50, 0, 0},
                                     {PB_MCTS_GUMBEL, 4, 50, 1, 1}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_null(pb_mcts_new_ex(g, &o, &bad[i], &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_finds_win_and_block),
      cmocka_unit_test(test_batched_same_as_one),
      cmocka_unit_test(test_noise_and_errors),
      cmocka_unit_test(test_discount_prefers_quick_win),
      cmocka_unit_test(test_vq_adapter),
      cmocka_unit_test(test_vq_exact_converges),
      cmocka_unit_test(test_gumbel_budget_top_m),
      cmocka_unit_test(test_gumbel_finds_best),
      cmocka_unit_test(test_forced_playouts),
      cmocka_unit_test(test_budgets_and_fast),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
