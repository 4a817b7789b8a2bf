/* test_azplay.c - AlphaZero self-play (common/train/azplay.h) with a plain,
 * deterministic network: every episode is a real game whose positions
 * follow by legal moves, each with a visit distribution over its legal
 * actions; the same seed gives the same episodes whatever `parallel` is
 * and however an item is split (first_index); after temp_moves every move
 * is the most visited one; per-root noise streams (pb_mcts_run_rngs) make
 * a search independent of its neighbours; with the new options off the
 * episodes are bit for bit those of the code before them; the playout cap
 * makes about full_fraction of the moves full searches and stores the
 * others without a policy target; Gumbel and forced-playout self-play
 * give valid, deterministic episodes; errors pass through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azplay.h"
#include "config.h"
#include "episodes.h"
#include "game.h"
#include "mcts.h"
#include "rng.h"

#define T3 (pb_game_by_id(PB_GAME_TICTACTOE))
#define C4 (pb_game_by_id(PB_GAME_CONNECT4))

#include "plain_net.h"

static pb_azplay_t *engine(const pb_game_t *g, int parallel, int sims,
                           int temp_moves) {
  pb_azplay_opts_t o = {.parallel = parallel,
                        .max_turns = g->max_turns,
                        .simulations = sims,
                        .c_puct = 1.5,
                        .eps = 0.25,
                        .alpha = 1.0,
                        .temp_moves = temp_moves};
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
 * legal actions, with multiples of 1/unit (the visits; unit 0: any), or
 * (zeros_ok) all zeros; the move played has mass in a row that is not all
 * zeros. Returns the rows of zeros. */
static int check_rows(const pb_game_t *g, const pb_episodes_t *e, int unit,
                      int zeros_ok);

static void check_episodes(const pb_game_t *g, const pb_episodes_t *e) {
  assert_int_equal(check_rows(g, e, 24, 0), 0);
}

static int check_rows(const pb_game_t *g, const pb_episodes_t *e, int unit,
                      int zeros_ok) {
  int zeros = 0;
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
        double v = pi[a] * unit;
        if (unit > 0) assert_true(fabs(v - round(v)) < 1e-4);
        sum += pi[a];
      }
      if (sum == 0.0 && zeros_ok)
        zeros++;
      else
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
            assert_true(pi[acts[i]] > 0.0f || sum == 0.0); /* visited */
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
  return zeros;
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

static void play_opts(const pb_game_t *g, const pb_azplay_opts_t *o, int n,
                      uint64_t first, pb_episodes_t *out) {
  net_t nt = {g, 0, 0, 0, 1};
  pb_mcts_evalfn_t ev = {net_eval, &nt};
  pb_err_t err;
  pb_azplay_t *p = pb_azplay_new(g, o, &err);
  if (p == NULL) fail_msg("azplay_new: %s", err.msg);
  assert_int_equal(pb_azplay_run(p, n, 99, first, &ev, 5, out, &err), 0);
  pb_azplay_destroy(&p);
}

static pb_azplay_opts_t opts(const pb_game_t *g, int parallel) {
  pb_azplay_opts_t o = {.parallel = parallel,
                        .max_turns = g->max_turns,
                        .simulations = 24,
                        .c_puct = 1.5,
                        .eps = 0.25,
                        .alpha = 1.0,
                        .temp_moves = 4};
  return o;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

/* The episodes' positions, policy rows, lengths and results, hashed. */
static uint64_t episodes_hash(const pb_episodes_t *e, int A) {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv(h, e->states, e->n_states * sizeof *e->states);
  h = fnv(h, e->policy, e->n_states * (size_t)A * sizeof(float));
  h = fnv(h, e->len, e->n_eps * sizeof *e->len);
  h = fnv(h, e->reward, e->n_eps);
  return h;
}

/* With the new options off, self-play is what it was bit for bit: the
 * hashes were taken from the code before Gumbel search, forced playouts
 * and the playout cap (commit 96d9034), the same episodes at -O0 and
 * -O2. A run's default configuration maps to those options off. */
static void test_defaults_unchanged(void **state) {
  (void)state;
  const pb_game_t *games[2] = {T3, C4};
  const uint64_t want[2] = {0x10cb681fabbba1caULL, 0x103d4737e67ea002ULL};
  for (int gi = 0; gi < 2; gi++) {
    pb_episodes_t e;
    pb_episodes_init(&e);
    play(games[gi], 5, 12, 3, 4, &e);
    uint64_t h = episodes_hash(&e, games[gi]->num_actions);
    if (h != want[gi])
      fail_msg("%s: hash %016llx, before %016llx", games[gi]->name,
               (unsigned long long)h, (unsigned long long)want[gi]);
    pb_episodes_free(&e);
  }
  pb_config_t c;
  pb_config_defaults(&c);
  pb_azplay_opts_t o;
  pb_azplay_config_opts(&c, &o);
  assert_int_equal(o.root.rule, PB_MCTS_PUCT);
  assert_int_equal(o.root.forced, 0);
  assert_int_equal(o.small_simulations, 0);
  pb_err_t err;
  assert_int_equal(pb_config_set(&c, "mcts.root", "gumbel", &err), 0);
  assert_int_equal(pb_config_set(&c, "mcts.gumbel_considered", "4", &err), 0);
  assert_int_equal(pb_config_set(&c, "mcts.full_fraction", "0.25", &err), 0);
  assert_int_equal(pb_config_set(&c, "mcts.small_simulations", "8", &err), 0);
  pb_azplay_config_opts(&c, &o);
  assert_int_equal(o.root.rule, PB_MCTS_GUMBEL);
  assert_int_equal(o.root.considered, 4);
  assert_true(o.root.c_visit == 50 && o.root.c_scale == 1);
  assert_true(o.full_fraction == 0.25);
  assert_int_equal(o.small_simulations, 8);
}

/* Playout cap randomization: about full_fraction of the moves are full
 * searches (rows of visits / 24), the others fast and stored with a row
 * of zeros (no policy target); with seed 99 exactly 166 of the 623
 * moves of these 40 Connect Four games are full (0.266); the same episodes
 * whatever `parallel` is. */
static void test_playout_cap(void **state) {
  (void)state;
  const pb_game_t *g = C4;
  pb_azplay_opts_t o = opts(g, 8);
  o.full_fraction = 0.25;
  o.small_simulations = 4;
  pb_episodes_t e, f;
  pb_episodes_init(&e);
  pb_episodes_init(&f);
  play_opts(g, &o, 40, 0, &e);
  int zeros = check_rows(g, &e, 24, 1);
  int full = (int)e.n_states - zeros;
  double frac = (double)full / (double)e.n_states;
  printf("playout cap: %d full of %zu moves (%.3f)\n", full, e.n_states, frac);
  assert_true(fabs(frac - 0.25) < 4 * sqrt(0.25 * 0.75 / (double)e.n_states));
  assert_int_equal(full, 166);
  assert_int_equal((int)e.n_states, 623);
  o.parallel = 3;
  play_opts(g, &o, 40, 0, &f);
  same_episodes(&e, &f, g->num_actions);
  /* every move fast: no policy target at all; every move full: all */
  o.full_fraction = 0.0;
  pb_episodes_free(&f);
  pb_episodes_init(&f);
  play_opts(g, &o, 6, 0, &f);
  assert_int_equal(check_rows(g, &f, 24, 1), (int)f.n_states);
  o.full_fraction = 1.0;
  pb_episodes_free(&f);
  pb_episodes_init(&f);
  play_opts(g, &o, 6, 0, &f);
  assert_int_equal(check_rows(g, &f, 24, 1), 0);
  pb_episodes_free(&e);
  pb_episodes_free(&f);
}

/* Gumbel self-play: rows are the improved policy (a distribution over the
 * legal moves, not multiples of 1/24), the move played has mass, and the
 * episodes do not depend on `parallel`; with the playout cap too. KataGo's
 * forced playouts: rows are pruned visit counts over their sum. */
static void test_gumbel_and_forced_selfplay(void **state) {
  (void)state;
  const pb_game_t *games[2] = {T3, C4};
  for (int gi = 0; gi < 2; gi++)
    for (int variant = 0; variant < 3; variant++) {
      const pb_game_t *g = games[gi];
      pb_azplay_opts_t o = opts(g, 6);
      if (variant < 2)
        o.root = (pb_mcts_root_opts_t){PB_MCTS_GUMBEL, 4, 50, 1, 0};
      else
        o.root.forced = 1;
      if (variant == 1) {
        o.full_fraction = 0.5;
        o.small_simulations = 6;
      }
      pb_episodes_t e, f;
      pb_episodes_init(&e);
      pb_episodes_init(&f);
      play_opts(g, &o, 10, 0, &e);
      int zeros = check_rows(g, &e, 0, variant == 1);
      assert_true(variant == 1 ? zeros > 0 : zeros == 0);
      o.parallel = 1;
      play_opts(g, &o, 10, 0, &f);
      same_episodes(&e, &f, g->num_actions);
      pb_episodes_free(&e);
      pb_episodes_free(&f);
    }
}

static void test_errors(void **state) {
  (void)state;
  const pb_game_t *g = T3;
  pb_err_t err;
  const pb_azplay_opts_t ok = {.parallel = 4,
                               .max_turns = 9,
                               .simulations = 10,
                               .c_puct = 1.5,
                               .eps = 0.25,
                               .alpha = 1.0,
                               .temp_moves = 2};
  pb_azplay_opts_t bad = ok;
  bad.parallel = 0;
  assert_null(pb_azplay_new(g, &bad, &err));
  assert_int_equal(err.code, PB_EINVAL);
  pb_azplay_opts_t bad2 = ok;
  bad2.simulations = 0;
  assert_null(pb_azplay_new(g, &bad2, &err));
  pb_azplay_opts_t bad3 = ok;
  bad3.temp_moves = -1;
  assert_null(pb_azplay_new(g, &bad3, &err));
  /* the playout cap: a fast budget above the full one, a fraction out of
   * [0, 1]; the root rule: gumbel without m, forced with gumbel */
  pb_azplay_opts_t bad4 = ok;
  bad4.small_simulations = 11;
  bad4.full_fraction = 0.5;
  assert_null(pb_azplay_new(g, &bad4, &err));
  assert_non_null(strstr(err.msg, "small_simulations"));
  bad4.small_simulations = 2;
  bad4.full_fraction = 1.5;
  assert_null(pb_azplay_new(g, &bad4, &err));
  assert_non_null(strstr(err.msg, "full_fraction"));
  pb_azplay_opts_t bad5 = ok;
  bad5.root = (pb_mcts_root_opts_t){PB_MCTS_GUMBEL, 0, 50, 1, 0};
  assert_null(pb_azplay_new(g, &bad5, &err));
  assert_non_null(strstr(err.msg, "considered"));
  bad5.root = (pb_mcts_root_opts_t){PB_MCTS_GUMBEL, 4, 50, 1, 1};
  assert_null(pb_azplay_new(g, &bad5, &err));
  assert_non_null(strstr(err.msg, "forced"));
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
      cmocka_unit_test(test_defaults_unchanged),
      cmocka_unit_test(test_playout_cap),
      cmocka_unit_test(test_gumbel_and_forced_selfplay),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
