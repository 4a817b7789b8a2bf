/* test_azplay.c - AlphaZero self-play (train/azplay.h) with a plain,
 * deterministic network: every episode is a real game whose positions
 * follow by legal moves, each with a visit distribution over its legal
 * actions; the same seed gives the same episodes whatever `parallel` is
 * and however an item is split (first_index); after temp_moves every move
 * is the most visited one; per-root noise streams (pb_mcts_run_rngs) make
 * a search independent of its neighbours; errors pass through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "azplay.h"
#include "episodes.h"
#include "game.h"
#include "mcts.h"
#include "rng.h"

#define T3 (pb_game_by_id(PB_GAME_TICTACTOE))
#define C4 (pb_game_by_id(PB_GAME_CONNECT4))

#include "plain_net.h"

static pb_azplay_t *engine(const pb_game_t *g, int parallel, int sims,
                           int temp_moves) {
  pb_azplay_opts_t o = {parallel, g->max_turns, sims, 1.5, 0.25, 1.0,
                        temp_moves, 0};
  pb_err_t err;
  pb_azplay_t *p = pb_azplay_new(g, &o, &err);
  if (p == NULL) fail_msg("azplay_new: %s", err.msg);
  return p;
}

static void play(const pb_game_t *g, int parallel, int n, uint64_t first,
                 int temp_moves, pb_episodes_t *out) {
  net_t nt = {g, 0, 0, 0, 1};
  pb_mcts_evalfn_t ev = {net_eval, &nt};
  pb_azplay_t *p = engine(g, parallel, 24, temp_moves);
  pb_err_t err;
  assert_int_equal(pb_azplay_run(p, n, 99, first, &ev, 5, out, &err), 0);
  assert_true(pb_azplay_positions(p) > 0);
  assert_true(pb_azplay_evaluations(p) > pb_azplay_positions(p));
  pb_azplay_destroy(&p);
  assert_null(p);
}

/* Every episode is a game from the start; rows are distributions over the
 * legal actions with multiples of 1/24 (the visits). */
static void check_episodes(const pb_game_t *g, const pb_episodes_t *e) {
  const int A = g->num_actions;
  assert_int_equal(e->policy_width, A);
  for (size_t k = 0; k < e->n_eps; k++) {
    pb_state_t s;
    g->reset(&s);
    assert_int_equal(e->version[k], 5);
    for (uint32_t t = 0; t < e->len[k]; t++) {
      assert_memory_equal(&s, &e->states[e->start[k] + t], sizeof s);
      const float *pi = pb_episodes_policy(e, k, t);
      uint8_t acts[PB_MAX_ACTIONS], legal[PB_MAX_ACTIONS] = {0};
      int na = g->legal(&s, acts);
      for (int i = 0; i < na; i++) legal[acts[i]] = 1;
      double sum = 0;
      for (int a = 0; a < A; a++) {
        if (!legal[a]) assert_true(pi[a] == 0.0f);
        double v = pi[a] * 24.0;
        assert_true(fabs(v - round(v)) < 1e-4);
        sum += pi[a];
      }
      assert_true(fabs(sum - 1.0) < 1e-5);
      /* the move played: the one leading to the next stored position, or
       * for the last one a move giving the recorded result */
      int found = 0;
      for (int i = 0; i < na && !found; i++) {
        pb_state_t c = s;
        int done = 0;
        float r = g->step(&c, acts[i], &done);
        if (t + 1 < e->len[k]) {
          if (!memcmp(&c, &e->states[e->start[k] + t + 1], sizeof c)) {
            assert_true(pi[acts[i]] > 0.0f); /* only visited moves */
            s = c;
            found = 1;
          }
        } else {
          found = done && (int)lrintf(r) == e->reward[k];
        }
      }
      assert_true(found);
    }
  }
}

static void test_episodes_valid(void **state) {
  (void)state;
  const pb_game_t *games[2] = {T3, C4};
  for (int gi = 0; gi < 2; gi++) {
    pb_episodes_t e;
    pb_episodes_init(&e);
    play(games[gi], 4, 9, 0, 4, &e);
    assert_int_equal(e.n_eps, 9);
    check_episodes(games[gi], &e);
    pb_episodes_free(&e);
  }
}

static void same_episodes(const pb_episodes_t *a, const pb_episodes_t *b,
                          int A) {
  assert_int_equal(a->n_eps, b->n_eps);
  assert_int_equal(a->n_states, b->n_states);
  assert_memory_equal(a->states, b->states, a->n_states * sizeof *a->states);
  assert_memory_equal(a->policy, b->policy, a->n_states * A * sizeof(float));
  assert_memory_equal(a->len, b->len, a->n_eps * sizeof *a->len);
  assert_memory_equal(a->reward, b->reward, a->n_eps);
}

static void test_deterministic(void **state) {
  (void)state;
  const pb_game_t *g = C4;
  pb_episodes_t a, b, c;
  pb_episodes_init(&a);
  pb_episodes_init(&b);
  pb_episodes_init(&c);
  play(g, 1, 10, 0, 6, &a);
  play(g, 7, 10, 0, 6, &b);
  /* an item split in two, as threads split it */
  play(g, 3, 4, 0, 6, &c);
  play(g, 5, 6, 4, 6, &c);
  same_episodes(&a, &b, g->num_actions);
  same_episodes(&a, &c, g->num_actions);
  /* another first index: other games */
  pb_episodes_t d;
  pb_episodes_init(&d);
  play(g, 7, 10, 100, 6, &d);
  assert_true(d.n_states != a.n_states ||
              memcmp(d.states, a.states, a.n_states * sizeof *a.states) != 0);
  pb_episodes_free(&a);
  pb_episodes_free(&b);
  pb_episodes_free(&c);
  pb_episodes_free(&d);
}

/* After temp_moves moves every move is the most visited one. */
static void test_greedy_after_temp_moves(void **state) {
  (void)state;
  const pb_game_t *g = C4;
  const int A = g->num_actions, TM = 3;
  pb_episodes_t e;
  pb_episodes_init(&e);
  play(g, 8, 8, 0, TM, &e);
  int checked = 0;
  for (size_t k = 0; k < e.n_eps; k++)
    for (uint32_t t = TM; t + 1 < e.len[k]; t++) {
      const float *pi = pb_episodes_policy(&e, k, t);
      int best = 0;
      for (int a = 1; a < A; a++)
        if (pi[a] > pi[best]) best = a;
      pb_state_t s = e.states[e.start[k] + t];
      int done = 0;
      g->step(&s, best, &done);
      assert_memory_equal(&s, &e.states[e.start[k] + t + 1], sizeof s);
      checked++;
    }
  assert_true(checked > 20);
  pb_episodes_free(&e);
}

/* pb_mcts_run_rngs: a root's result depends on its own stream only. */
static void test_rngs_per_root(void **state) {
  (void)state;
  const pb_game_t *g = C4;
  const int A = g->num_actions;
  pb_mcts_opts_t o = {40, 1.5, 0.25, 1.0, 8, 0};
  pb_err_t err;
  pb_mcts_t *m = pb_mcts_new(g, &o, &err);
  assert_non_null(m);
  net_t nt = {g, 0, 0, 0, 1};
  pb_mcts_evalfn_t ev = {net_eval, &nt};
  pb_state_t roots[3];
  for (int i = 0; i < 3; i++) g->reset(&roots[i]);
  int dn = 0;
  g->step(&roots[1], 3, &dn);
  pb_rng_t r[3], *rp[3];
  for (int i = 0; i < 3; i++) {
    pb_rng_seed(&r[i], 5, (uint64_t)i);
    rp[i] = &r[i];
  }
  float all[3 * PB_MAX_ACTIONS], one[PB_MAX_ACTIONS];
  assert_int_equal(pb_mcts_run_rngs(m, roots, 3, &ev, rp, all, NULL, &err), 0);
  pb_rng_t r2;
  pb_rng_seed(&r2, 5, 2);
  pb_rng_t *p2 = &r2;
  assert_int_equal(pb_mcts_run_rngs(m, &roots[2], 1, &ev, &p2, one, NULL, &err),
                   0);
  assert_memory_equal(one, &all[2 * A], (size_t)A * sizeof *one);
  /* noise without streams is refused */
  assert_int_equal(pb_mcts_run_rngs(m, roots, 3, &ev, NULL, all, NULL, &err),
                   PB_EINVAL);
  pb_mcts_destroy(&m);
}

static void test_errors(void **state) {
  (void)state;
  const pb_game_t *g = T3;
  pb_err_t err;
  pb_azplay_opts_t bad = {0, 9, 10, 1.5, 0.25, 1.0, 2, 0};
  assert_null(pb_azplay_new(g, &bad, &err));
  assert_int_equal(err.code, PB_EINVAL);
  pb_azplay_opts_t bad2 = {4, 9, 0, 1.5, 0.25, 1.0, 2, 0};
  assert_null(pb_azplay_new(g, &bad2, &err));
  pb_azplay_opts_t bad3 = {4, 9, 10, 1.5, 0.25, 1.0, -1, 0};
  assert_null(pb_azplay_new(g, &bad3, &err));
  pb_azplay_t *p = engine(g, 4, 8, 2);
  net_t nt = {g, 0, 0, 5, 1};
  pb_mcts_evalfn_t ev = {net_eval, &nt};
  pb_episodes_t e;
  pb_episodes_init(&e);
  assert_int_equal(pb_azplay_run(p, 6, 1, 0, &ev, 0, &e, &err), PB_ENN);
  assert_int_equal(e.n_eps, 0);
  assert_int_equal(pb_azplay_run(p, 0, 1, 0, &ev, 0, &e, &err), 0);
  /* a store of PROBS episodes takes no AlphaZero ones */
  pb_state_t s0;
  g->reset(&s0);
  assert_int_equal(pb_episodes_add(&e, &s0, 1, 0, 0, &err), 0);
  nt.fail_at = 0;
  assert_int_equal(pb_azplay_run(p, 2, 1, 0, &ev, 0, &e, &err), PB_EINVAL);
  pb_episodes_free(&e);
  pb_azplay_destroy(&p);
  pb_azplay_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_episodes_valid),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_greedy_after_temp_moves),
      cmocka_unit_test(test_rngs_per_root),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
