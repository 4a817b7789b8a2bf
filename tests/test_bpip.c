/* test_bpip.c - BPIP search over V (common/search/bpip.h): the leaf model and the
 * product rule against hand-computed cases and brute-force enumeration;
 * every leaf's QSS relevance against a plain recomputation of the tree
 * per spike (the paper's equation 3 transcribed); relevance 0 where a
 * leaf cannot change Q1; with a budget that covers the tree the move is
 * the solver's; with exact V small budgets play perfectly; the budget is
 * kept and counted; errors. */
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
#include "bpip.h"
#include "evalfn.h"
#include "fn_fixtures.h"
#include "game.h"
#include "rng.h"
#include "solver.h"

#define K PB_BPIP_GRID

/* ---- value functions (fn_fixtures.h's V; a Q of its own) ----------------- */


static int cb_q(void *ctx, const pb_state_t *s, int n, float *out,
                pb_err_t *err) {
  fn_t *f = ctx;
  if (++f->calls == f->fail_at)
    return pb_err_set(err, PB_ENN, "test: call %d fails", f->calls);
  f->q_rows += (uint64_t)n;
  const int A = f->g->num_actions;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < A; a++)
      out[i * A + a] = noise(hash_state(&s[i]) * 31 + (uint64_t)a, 0);
  return 0;
}

static pb_evalfn_t evfn(fn_t *f) {
  pb_evalfn_t ev = {fn_cb_value, cb_q, f};
  return ev;
}

static pb_bpip_t *mk(const pb_game_t *g, uint64_t evals, double sigma,
                     double gulp) {
  pb_bpip_opts_t o;
  pb_bpip_defaults(&o);
  o.evals = evals;
  o.sigma = sigma;
  o.gulp = gulp;
  pb_err_t err;
  pb_bpip_t *bp = pb_bpip_new(g, &o, &err);
  if (bp == NULL) fail_msg("%s", err.msg);
  return bp;
}

static pb_state_t some_position(const pb_game_t *g, pb_rng_t *rng,
                                int min_plies, int max_plies) {
  for (;;) {
    pb_state_t s = random_position(g, rng, max_plies);
    if (g->ply(&s) >= min_plies) return s;
  }
}

static double mean(const double *p) {
  double m = 0;
  for (int i = 0; i < K; i++) m += pb_bpip_grid(i) * p[i];
  return m;
}

/* ---- the leaf model and the product rule --------------------------------- */

/* A leaf's distribution: a probability distribution, the mirror image for
 * -V, its mean the clipped Gaussian's (numerical integration), V itself
 * when sigma is small, increasing in V. */
static void test_leaf_dist(void **state) {
  (void)state;
  const double vs[] = {-1.0, -0.93, -0.5, -0.12, 0.0, 0.3, 0.77, 1.0};
  const double sg[] = {0.01, 0.1, 0.3, 0.55, 1.0, 4.0};
  double p[K], q[K];
  for (size_t a = 0; a < sizeof vs / sizeof vs[0]; a++)
    for (size_t b = 0; b < sizeof sg / sizeof sg[0]; b++) {
      const double v = vs[a], s = sg[b];
      pb_bpip_leaf_dist(v, s, p);
      pb_bpip_leaf_dist(-v, s, q);
      double sum = 0;
      for (int i = 0; i < K; i++) {
        assert_true(p[i] >= 0);
        assert_true(fabs(p[i] - q[K - 1 - i]) < 1e-12);
        sum += p[i];
      }
      assert_true(fabs(sum - 1.0) < 1e-12);
      /* E[clip(X)], X ~ N(v, s^2), by the midpoint rule over +-12 s. */
      double ref = 0;
      const int steps = 400000;
      const double lo = v - 12 * s, w = 24 * s / steps;
      for (int k = 0; k < steps; k++) {
        const double x = lo + (k + 0.5) * w, z = (x - v) / s;
        const double c = x < -1 ? -1 : x > 1 ? 1 : x;
        ref += c * exp(-0.5 * z * z) * w / (s * sqrt(2 * M_PI));
      }
      if (fabs(mean(p) - ref) > 1e-6)
        fail_msg("v %g sigma %g: mean %.9f, clipped Gaussian %.9f", v, s,
                 mean(p), ref);
    }
  pb_bpip_leaf_dist(0.37, 0.01, p);
  assert_true(fabs(mean(p) - 0.37) < 1e-9);
  double last = -2;
  for (int k = -100; k <= 100; k++) {
    pb_bpip_leaf_dist(k / 100.0, 0.4, p);
    assert_true(mean(p) > last);
    last = mean(p);
  }
  pb_bpip_leaf_dist(NAN, 0.4, p);
  pb_bpip_leaf_dist(-1.0, 0.4, q);
  assert_memory_equal(p, q, sizeof p);
}

static int at(double x) {
  return (int)lround((x + 1.0) * (K - 1) / 2.0);
}

/* The product rule: two cases by hand, and three sparse children against
 * enumerating every joint outcome. */
static void test_product_rule(void **state) {
  (void)state;
  double a[K] = {0}, b[K] = {0}, out[K];
  const double *kids[3] = {a, b, NULL};
  /* X1 = -1 or +1 (1/2 each), X2 = 0: max(-X1, 0) = 1 or 0, 1/2 each. */
  a[at(-1)] = 0.5;
  a[at(1)] = 0.5;
  b[at(0)] = 1.0;
  pb_bpip_negamax_dist(kids, 2, out);
  for (int i = 0; i < K; i++) {
    const double want = i == at(1) || i == at(0) ? 0.5 : 0.0;
    assert_true(fabs(out[i] - want) < 1e-15);
  }
  /* X1 = -0.5 (1/4) or 0.5 (3/4), X2 = 0 or -1 (1/2 each): -X2 = 1 half
   * the time, the max 1; else max(-X1, 0): 0.5 (1/4) or 0 (3/4). */
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  a[at(-0.5)] = 0.25;
  a[at(0.5)] = 0.75;
  b[at(0)] = 0.5;
  b[at(-1)] = 0.5;
  pb_bpip_negamax_dist(kids, 2, out);
  for (int i = 0; i < K; i++) {
    const double want = i == at(1)     ? 0.5
                        : i == at(0.5) ? 0.125
                        : i == at(0)   ? 0.375
                                       : 0.0;
    assert_true(fabs(out[i] - want) < 1e-15);
  }
  /* One child: its mirror image. */
  pb_bpip_negamax_dist(kids, 1, out);
  for (int i = 0; i < K; i++) assert_true(fabs(out[i] - a[K - 1 - i]) < 1e-15);
  /* Three children, three points each, random. */
  pb_rng_t rng;
  pb_rng_seed(&rng, 21, 0);
  double c[K];
  kids[2] = c;
  for (int t = 0; t < 200; t++) {
    double *d[3] = {a, b, c};
    int pt[3][3];
    double pr[3][3];
    for (int j = 0; j < 3; j++) {
      memset(d[j], 0, K * sizeof(double));
      double w[3], sw = 0;
      for (int k = 0; k < 3; k++) {
        pt[j][k] = (int)pb_rng_below(&rng, K);
        w[k] = 1 + pb_rng_below(&rng, 9);
        sw += w[k];
      }
      for (int k = 0; k < 3; k++) {
        pr[j][k] = w[k] / sw;
        d[j][pt[j][k]] += pr[j][k];
      }
    }
    double ref[K] = {0};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 3; k++) {
          int m = K - 1 - pt[0][i];
          if (K - 1 - pt[1][j] > m) m = K - 1 - pt[1][j];
          if (K - 1 - pt[2][k] > m) m = K - 1 - pt[2][k];
          ref[m] += pr[0][i] * pr[1][j] * pr[2][k];
        }
    pb_bpip_negamax_dist(kids, 3, out);
    for (int i = 0; i < K; i++) assert_true(fabs(out[i] - ref[i]) < 1e-12);
  }
}

/* ---- the reference: the whole tree recomputed per spike ------------------ */

typedef struct {
  int n;
  pb_bpip_node_t *nd;
  double (*pmf)[K]; /* per node, recomputed */
} tree_t;

static tree_t read_tree(pb_bpip_t *bp) {
  tree_t t;
  t.n = pb_bpip_tree(bp);
  t.nd = calloc((size_t)t.n, sizeof *t.nd);
  t.pmf = calloc((size_t)t.n, sizeof *t.pmf);
  assert_non_null(t.nd);
  assert_non_null(t.pmf);
  for (int i = 0; i < t.n; i++)
    assert_int_equal(pb_bpip_node(bp, i, &t.nd[i]), 0);
  return t;
}

static void free_tree(tree_t *t) {
  free(t->nd);
  free(t->pmf);
}

/* The product rule by hand into t->pmf[i] from its children's t->pmf:
 * the CDF of the max is the product of the CDFs of -(child). */
static void by_hand(tree_t *t, int i) {
  const pb_bpip_node_t *n = &t->nd[i];
  double F[K];
  for (int k = 0; k < K; k++) F[k] = 1;
  for (int c = 0; c < n->kids; c++) {
    const double *p = t->pmf[n->first + c];
    double s = 0; /* P(-X_c <= x_k) = P(X_c >= x_{K-1-k}) = s */
    for (int k = 0; k < K; k++) {
      s += p[K - 1 - k];
      F[k] *= s;
    }
  }
  for (int k = 0; k < K; k++) t->pmf[i][k] = F[k] - (k ? F[k - 1] : 0);
}

/* Every node's distribution from the leaves up. */
static void recompute_all(tree_t *t) {
  for (int i = t->n - 1; i >= 0; i--) {
    if (t->nd[i].kids == 0)
      memcpy(t->pmf[i], t->nd[i].pmf, sizeof t->pmf[i]);
    else
      by_hand(t, i);
  }
}

/* Q1 = E[max of the root's moves] - max of their means. */
static double q1_now(const tree_t *t) {
  const pb_bpip_node_t *r = &t->nd[0];
  if (r->kids == 0) return 0;
  double best = -INFINITY;
  for (int c = 0; c < r->kids; c++) {
    double m = -mean(t->pmf[r->first + c]);
    if (m > best) best = m;
  }
  return mean(t->pmf[0]) - best;
}

/* Q1 with leaf L's distribution replaced by `ovr`: L's ancestors
 * recomputed by hand (the rest of the tree does not change), then put
 * back. */
static double q1_with(tree_t *t, int L, const double *ovr) {
  memcpy(t->pmf[L], ovr, sizeof t->pmf[L]);
  for (int a = t->nd[L].parent; a >= 0; a = t->nd[a].parent) by_hand(t, a);
  double q = q1_now(t);
  memcpy(t->pmf[L], t->nd[L].pmf, sizeof t->pmf[L]);
  for (int a = t->nd[L].parent; a >= 0; a = t->nd[a].parent) by_hand(t, a);
  return q;
}

/* Checks every node of the last search: the stored distributions are the
 * product rule's and the leaf model's, and every leaf's relevance is
 * sum_j p_j |Q1 - Q1_L(j)|, each Q1_L(j) recomputed by hand. */
static void check_tree(pb_bpip_t *bp, const char *what, int *positive,
                       int *zero) {
  tree_t t = read_tree(bp);
  const double sigma = pb_bpip_options(bp)->sigma;
  recompute_all(&t);
  for (int i = 0; i < t.n; i++) {
    const pb_bpip_node_t *n = &t.nd[i];
    double leaf[K];
    const double *want = t.pmf[i];
    if (n->kids == 0 && !n->exact) {
      pb_bpip_leaf_dist(n->v, sigma, leaf);
      want = leaf;
    }
    for (int k = 0; k < K; k++)
      if (fabs(n->pmf[k] - want[k]) > 1e-12)
        fail_msg("%s: node %d point %d: %.15f, reference %.15f", what, i, k,
                 n->pmf[k], want[k]);
  }
  double q1 = q1_now(&t);
  if (q1 < 0) q1 = 0;
  assert_true(fabs(q1 - t.nd[0].q1) < 1e-9);
  for (int i = 0; i < t.n; i++) {
    const pb_bpip_node_t *n = &t.nd[i];
    if (n->kids > 0 || n->exact) {
      assert_true(n->qss == 0);
      continue;
    }
    double ref = 0, sp[K];
    for (int j = 0; j < K; j++) {
      if (n->pmf[j] <= 0) continue;
      memset(sp, 0, sizeof sp);
      sp[j] = 1;
      ref += n->pmf[j] * fabs(q1 - q1_with(&t, i, sp));
    }
    if (q1 <= 1e-12) ref = 0;
    if (fabs(ref - n->qss) > 1e-9)
      fail_msg("%s: leaf %d (depth %d): qss %.12f, reference %.12f", what, i,
               n->depth, n->qss, ref);
    *positive += n->qss > 0;
    *zero += n->qss == 0;
  }
  free_tree(&t);
}

/* Relevance against the reference, in trees of several sizes and shapes
 * (one leaf per round and gulps), Tic-Tac-Toe and Connect Four. */
static void test_qss_reference(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 7, 0);
  const pb_game_t *games[2] = {T3, C4};
  const uint64_t budgets[] = {9, 25, 60, 150};
  int positive = 0, zero = 0;
  for (int gi = 0; gi < 2; gi++)
    for (int t = 0; t < 10; t++) {
      const pb_game_t *g = games[gi];
      pb_state_t s = some_position(g, &rng, gi == 0 ? 0 : 4, gi == 0 ? 7 : 36);
      fn_t f = {g, t % 2, NULL, 0, 0, 0, 0};
      pb_evalfn_t ev = evfn(&f);
      for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
        const double sigma = t % 3 == 0 ? 0.3 : t % 3 == 1 ? 0.55 : 1.5;
        pb_bpip_t *bp = mk(g, budgets[b], sigma, t >= 5 ? 0.2 : 0.0);
        pb_bpip_result_t r;
        pb_err_t err;
        assert_int_equal(pb_bpip_search(bp, &s, &ev, &r, &err), 0);
        char what[96];
        snprintf(what, sizeof what, "%s t=%d budget %d", g->name, t,
                 (int)budgets[b]);
        check_tree(bp, what, &positive, &zero);
        pb_bpip_destroy(&bp);
      }
    }
  printf("leaves checked: %d of relevance > 0, %d of relevance 0\n", positive,
         zero);
  assert_true(positive > 0 && zero > 0);
}

/* ---- relevance 0 --------------------------------------------------------- */

/* A Tic-Tac-Toe position, X or O to move, with no win at once but a move
 * after which every reply lets the mover win at once. */
static pb_state_t forcing_position(pb_rng_t *rng, int *fork) {
  for (;;) {
    pb_state_t s = some_position(T3, rng, 2, 6);
    uint8_t acts[PB_MAX_ACTIONS];
    int n = T3->legal(&s, acts), win = 0, found = -1;
    for (int k = 0; k < n; k++) {
      pb_state_t c = s;
      int d = 0;
      if (T3->step(&c, acts[k], &d) > 0) win = 1;
    }
    for (int k = 0; k < n && !win && found < 0; k++) {
      pb_state_t c = s;
      int d = 0;
      T3->step(&c, acts[k], &d);
      if (d) continue;
      uint8_t r[PB_MAX_ACTIONS];
      int nr = T3->legal(&c, r), all = 1;
      for (int j = 0; j < nr && all; j++) {
        pb_state_t e = c;
        int d2 = 0;
        T3->step(&e, r[j], &d2);
        if (d2) {
          all = 0;
          break;
        }
        uint8_t w[PB_MAX_ACTIONS];
        int nw = T3->legal(&e, w), any = 0;
        for (int i = 0; i < nw; i++) {
          pb_state_t x = e;
          int d3 = 0;
          if (T3->step(&x, w[i], &d3) > 0) any = 1;
        }
        all = any;
      }
      if (all) found = acts[k];
    }
    if (found >= 0) {
      *fork = found;
      return s;
    }
  }
}

/* Positions with a forced win: the search stops before its budget once
 * the choice is settled (the winning move proven, or every other move
 * proven lost), plays a winning move, and every leaf has relevance
 * exactly 0. In any tree, a leaf below a node whose value is exact has
 * relevance exactly 0. */
static void test_irrelevant_leaves(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 13, 0);
  for (int t = 0; t < 10; t++) {
    int fork;
    pb_state_t s = forcing_position(&rng, &fork);
    fn_t f = {T3, t % 2, NULL, 0, 0, 0, 0};
    pb_evalfn_t ev = evfn(&f);
    pb_bpip_t *bp = mk(T3, 100000, 1.0, 0.0);
    pb_bpip_result_t r;
    pb_err_t err;
    assert_int_equal(pb_bpip_search(bp, &s, &ev, &r, &err), 0);
    assert_int_equal(r.stop, PB_BPIP_STOP_SETTLED);
    assert_true(r.v_evals < 100000);
    assert_true(r.q1 <= 1e-12);
    pb_state_t c = s;
    int d = 0;
    T3->step(&c, r.move, &d);
    assert_int_equal(d ? 1 : -t3_minimax(&c), 1);
    int n = pb_bpip_tree(bp);
    for (int i = 0; i < n; i++) {
      pb_bpip_node_t nd;
      assert_int_equal(pb_bpip_node(bp, i, &nd), 0);
      assert_true(nd.qss == 0.0);
    }
    pb_bpip_destroy(&bp);
  }
  /* Leaves below exact nodes, in trees cut by their budget. */
  int seen = 0;
  const pb_game_t *games[2] = {T3, C4};
  for (int gi = 0; gi < 2; gi++)
    for (int t = 0; t < 12; t++) {
      const pb_game_t *g = games[gi];
      pb_state_t s = some_position(g, &rng, gi == 0 ? 1 : 20, gi == 0 ? 5 : 34);
      fn_t f = {g, t % 2, NULL, 0, 0, 0, 0};
      pb_evalfn_t ev = evfn(&f);
      pb_bpip_t *bp = mk(g, 200 + 50 * (uint64_t)t, 0.8, 0.0);
      pb_bpip_result_t r;
      pb_err_t err;
      assert_int_equal(pb_bpip_search(bp, &s, &ev, &r, &err), 0);
      int n = pb_bpip_tree(bp);
      for (int i = 1; i < n; i++) {
        pb_bpip_node_t nd, up;
        pb_bpip_node(bp, i, &nd);
        if (nd.kids > 0 || nd.exact) continue;
        for (int a = nd.parent; a >= 0; a = up.parent) {
          pb_bpip_node(bp, a, &up);
          if (up.exact) {
            if (nd.qss != 0.0)
              fail_msg("%s t=%d: leaf %d below exact node %d has qss %g",
                       g->name, t, i, a, nd.qss);
            seen++;
            break;
          }
        }
      }
      pb_bpip_destroy(&bp);
    }
  printf("leaves below exact nodes: %d\n", seen);
  assert_true(seen > 0);
}

/* ---- exactness ----------------------------------------------------------- */

/* A budget that covers the tree: the search goes on until nothing is left
 * to learn (the choice is settled: the best move proven at least as good
 * as every other), and then the move is the solver's, whatever V says; a
 * root marked solved has the solver's value. Tic-Tac-Toe near the end (one leaf
 * per round, and gulps) and Connect Four with few empty cells. */
static void test_whole_tree_is_exact(void **state) {
  (void)state;
  pb_err_t err;
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  const pb_game_t *games[2] = {T3, C4};
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = games[gi];
    pb_solver_t *sol = pb_solver_new(g, 16, &err);
    assert_non_null(sol);
    int solved = 0;
    for (int t = 0; t < 16; t++) {
      pb_state_t s = some_position(g, &rng, gi == 0 ? 3 : 34, gi == 0 ? 7 : 37);
      fn_t f = {g, t % 2, NULL, 0, 0, 0, 0};
      pb_evalfn_t ev = evfn(&f);
      const double gulp = gi == 1 || t % 2 ? 0.1 : 0.0;
      pb_bpip_t *bp = mk(g, PB_BPIP_MAX_EVALS, t % 4 < 2 ? 1.0 : 2.0, gulp);
      pb_bpip_result_t r;
      assert_int_equal(pb_bpip_search(bp, &s, &ev, &r, &err), 0);
      pb_solve_value_t sv, mv[PB_MAX_ACTIONS];
      assert_int_equal(pb_solver_solve(sol, &s, 1, &sv, &err), 0);
      assert_int_equal(pb_solver_moves(sol, &s, 1, mv, &err), 0);
      if ((r.stop != PB_BPIP_STOP_SETTLED && r.stop != PB_BPIP_STOP_WIN) ||
          (r.solved && r.value != (float)sv.result) ||
          mv[r.move].result != sv.result) {
        char b[256];
        g->render(&s, b, sizeof b);
        printf("%s\n", b);
        int n = pb_bpip_tree(bp);
        for (int i = 0; i < n; i++) {
          pb_bpip_node_t nd;
          pb_bpip_node(bp, i, &nd);
          if (nd.depth <= 3)
            printf(
                "%*snode %d parent %d act %d kids %d exact %d mean %f qss %g v "
                "%f\n",
                2 * nd.depth, "", i, nd.parent, nd.action, nd.kids, nd.exact,
                nd.mean, nd.qss, nd.v);
        }
        fail_msg(
            "%s t=%d: stop %d solved %d value %.3f move %d (%d), "
            "exact %d",
            g->name, t, r.stop, r.solved, r.value, r.move, mv[r.move].result,
            sv.result);
      }
      assert_true(r.v_evals == f.v_rows && r.q_evals == 0);
      solved += r.solved;
      pb_bpip_destroy(&bp);
    }
    printf("%s: %d of 16 roots solved\n", g->name, solved);
    pb_solver_destroy(&sol);
  }
}

/* With V exact and a narrow spread, small budgets play perfectly. */
static void test_exact_values_small_budget(void **state) {
  (void)state;
  pb_err_t err;
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  const pb_game_t *games[2] = {T3, C4};
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = games[gi];
    fn_t f = {g, 2, pb_solver_new(g, 18, &err), 0, 0, 0, 0};
    assert_non_null(f.sol);
    pb_evalfn_t ev = evfn(&f);
    pb_bpip_t *bp = mk(g, 30, 0.2, 0.0);
    for (int t = 0; t < 20; t++) {
      pb_state_t s = some_position(g, &rng, gi == 0 ? 0 : 22, gi == 0 ? 7 : 30);
      pb_bpip_result_t r;
      assert_int_equal(pb_bpip_search(bp, &s, &ev, &r, &err), 0);
      pb_solve_value_t sv, mv[PB_MAX_ACTIONS];
      assert_int_equal(pb_solver_solve(f.sol, &s, 1, &sv, &err), 0);
      assert_int_equal(pb_solver_moves(f.sol, &s, 1, mv, &err), 0);
      if (mv[r.move].result != sv.result)
        fail_msg("%s t=%d: move %d (%d), exact %d", g->name, t, r.move,
                 mv[r.move].result, sv.result);
    }
    pb_bpip_destroy(&bp);
    pb_solver_destroy(&f.sol);
  }
}

/* ---- budgets, determinism, errors ---------------------------------------- */

/* The evaluations never pass the budget and are the callbacks' rows; a
 * budget below the root's children asks Q once; a win at once costs
 * nothing; a search does not depend on the ones before it. */
static void test_budgets(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 9, 0);
  const uint64_t budgets[] = {1, 3, 6, 7, 10, 30, 100, 300, 1000};
  for (int t = 0; t < 6; t++) {
    pb_state_t s = some_position(C4, &rng, 2, 12);
    uint8_t legal[PB_MAX_ACTIONS];
    const int nl = C4->legal(&s, legal);
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
      fn_t f = {C4, 0, NULL, 0, 0, 0, 0};
      pb_evalfn_t ev = evfn(&f);
      pb_bpip_t *bp = mk(C4, budgets[b], 0.55, t % 2 ? 0.05 : 0.0);
      pb_bpip_result_t r;
      pb_err_t err;
      assert_int_equal(pb_bpip_search(bp, &s, &ev, &r, &err), 0);
      assert_true(r.v_evals + r.q_evals <= budgets[b]);
      assert_true(r.v_evals == f.v_rows && r.q_evals == f.q_rows);
      int ok = 0;
      for (int k = 0; k < nl; k++) ok |= legal[k] == r.move;
      assert_true(ok);
      if (r.stop == PB_BPIP_STOP_Q) {
        assert_true(budgets[b] < (uint64_t)nl);
        assert_true(r.q_evals == 1 && r.v_evals == 0);
      } else if (r.stop == PB_BPIP_STOP_WIN) {
        assert_true(r.v_evals == 0 && r.q_evals == 0);
      } else {
        assert_true(r.q_evals == 0);
        assert_true(r.stop == PB_BPIP_STOP_SETTLED ||
                    r.stop == PB_BPIP_STOP_BUDGET);
        /* A stop for the budget: the next leaf's children did not fit. */
        if (r.stop == PB_BPIP_STOP_BUDGET)
          assert_true(r.v_evals + (uint64_t)nl > budgets[b]);
      }
      /* Again after another position: the same search. */
      pb_bpip_result_t r2, r3;
      pb_state_t o = pos(C4, "4453");
      assert_int_equal(pb_bpip_search(bp, &o, &ev, &r2, &err), 0);
      assert_int_equal(pb_bpip_search(bp, &s, &ev, &r3, &err), 0);
      assert_int_equal(r.move, r3.move);
      assert_true(r.value == r3.value && r.q1 == r3.q1);
      assert_true(r.v_evals == r3.v_evals && r.nodes == r3.nodes &&
                  r.expansions == r3.expansions && r.stop == r3.stop);
      pb_bpip_destroy(&bp);
    }
  }
  /* X (3, 4, 5) against O (3, 4, 5): X wins at 2 or 6, at once. */
  fn_t f = {C4, 0, NULL, 0, 0, 0, 0};
  pb_evalfn_t ev = evfn(&f);
  pb_bpip_t *bp = mk(C4, 100, 0.55, 0.0);
  pb_bpip_result_t r;
  pb_err_t err;
  pb_state_t w = pos(C4, "334455");
  assert_int_equal(pb_bpip_search(bp, &w, &ev, &r, &err), 0);
  assert_true(r.move == 1 || r.move == 5);
  assert_int_equal(r.stop, PB_BPIP_STOP_WIN);
  assert_true(r.value == 1.0f && r.solved && r.v_evals == 0);
  assert_true(f.v_rows == 0 && f.q_rows == 0);
  pb_bpip_destroy(&bp);
}

/* Bad options, a finished game, NULLs and the callbacks' errors. */
static void test_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_bpip_opts_t bad[8];
  const char *names[8] = {"budget", "budget", "sigma", "sigma",
                          "sigma",  "gulp",   "gulp",  "gulp"};
  for (int i = 0; i < 8; i++) pb_bpip_defaults(&bad[i]);
  bad[0].evals = 0;
  bad[1].evals = PB_BPIP_MAX_EVALS + 1;
  bad[2].sigma = 0;
  bad[3].sigma = NAN;
  bad[4].sigma = PB_BPIP_SIGMA_MAX * 2;
  bad[5].gulp = -0.1;
  bad[6].gulp = PB_BPIP_GULP_MAX + 0.1;
  bad[7].gulp = NAN;
  for (int i = 0; i < 8; i++) {
    pb_err_clear(&err);
    assert_null(pb_bpip_new(C4, &bad[i], &err));
    assert_int_equal(err.code, PB_EINVAL);
    assert_non_null(strstr(err.msg, "bpip"));
    assert_non_null(strstr(err.msg, names[i]));
  }
  assert_null(pb_bpip_new(NULL, &bad[0], &err));
  pb_bpip_destroy(NULL);
  pb_bpip_t *bp = mk(C4, 200, 0.55, 0.0);
  assert_int_equal(pb_bpip_tree(bp), 0);
  fn_t f = {C4, 0, NULL, 0, 0, 0, 0};
  pb_evalfn_t ev = evfn(&f);
  pb_bpip_result_t r;
  pb_state_t over = pos(C4, "1212121");
  assert_int_equal(pb_bpip_search(bp, &over, &ev, &r, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "over"));
  pb_state_t s = pos(C4, "44");
  assert_int_equal(pb_bpip_search(bp, NULL, &ev, &r, &err), PB_EINVAL);
  assert_int_equal(pb_bpip_search(bp, &s, NULL, &r, &err), PB_EINVAL);
  for (int at = 1; at <= 3; at++) {
    fn_t ff = {C4, 0, NULL, at, 0, 0, 0};
    pb_evalfn_t e2 = evfn(&ff);
    pb_err_clear(&err);
    assert_int_equal(pb_bpip_search(bp, &s, &e2, &r, &err), PB_ENN);
    assert_non_null(strstr(err.msg, "fails"));
  }
  /* Q's error at a budget below the root's children. */
  pb_bpip_t *tiny = mk(C4, 2, 0.55, 0.0);
  fn_t ff = {C4, 0, NULL, 1, 0, 0, 0};
  pb_evalfn_t e2 = evfn(&ff);
  assert_int_equal(pb_bpip_search(tiny, &s, &e2, &r, &err), PB_ENN);
  pb_bpip_destroy(&tiny);
  pb_bpip_node_t nd;
  assert_int_equal(pb_bpip_node(bp, -1, &nd), PB_EINVAL);
  assert_int_equal(pb_bpip_node(bp, 1 << 30, &nd), PB_EINVAL);
  pb_bpip_destroy(&bp);
  assert_null(bp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leaf_dist),
      cmocka_unit_test(test_product_rule),
      cmocka_unit_test(test_qss_reference),
      cmocka_unit_test(test_irrelevant_leaves),
      cmocka_unit_test(test_whole_tree_is_exact),
      cmocka_unit_test(test_exact_values_small_budget),
      cmocka_unit_test(test_budgets),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
