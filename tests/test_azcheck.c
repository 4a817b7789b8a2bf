/* test_azcheck.c - the check of AlphaZero self-play (common/train/azcheck.h)
 * with a real policy+value network (Tic-Tac-Toe, the run's model, seeded
 * weights) and real azplay episodes: honest episodes pass every exact
 * check and their z stay small (PUCT, forced playouts, the playout cap,
 * Gumbel); rows made one-hot, or with their mass moved to a thrown move,
 * are caught by the re-run; a thrower that keeps its honest rows is caught
 * by the exact checks (past temp_moves) and by its moves' surprise (within
 * them); rows of zeros where the run has no playout cap are impossible;
 * a deterministic search is refused; an episode that does not follow is
 * PB_ECORRUPT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azcheck.h"
#include "azplay.h"
#include "config.h"
#include "episodes.h"
#include "game.h"
#include "mcts_rules.h"
#include "model.h"
#include "nn.h"
#include "pveval.h"
#include "rng.h"

#define T3 (pb_game_by_id(PB_GAME_TICTACTOE))

typedef struct {
  pb_nn_t *nn;
  pb_pveval_t *pe;
  pb_mcts_evalfn_t ev;
} net_t;

/* The run's policy+value network for Tic-Tac-Toe, its seeded weights. */
static void net_open(net_t *n) {
  pb_config_t cfg;
  pb_config_defaults(&cfg);
  pb_err_t err;
  assert_int_equal(pb_config_load_string(&cfg,
                                         "game: tictactoe\n"
                                         "algorithm: alphazero\n"
                                         "model: {q: {conv_layers: 2, "
                                         "conv_channels: 16, dense_layers: 1, "
                                         "dense_units: 32}}\n",
                                         &err),
                   0);
  pb_nn_t *v = NULL;
  if (pb_model_nets(&cfg, T3, "cpu", "test", &v, &n->nn, &err) != 0)
    fail_msg("model: %s", err.msg);
  assert_null(v);
  n->pe = pb_pveval_new(T3, 256, &err);
  assert_non_null(n->pe);
  assert_int_equal(pb_pveval_bind(n->pe, n->nn, &err), 0);
  n->ev = pb_pveval_fn(n->pe);
}

static void net_close(net_t *n) {
  pb_pveval_destroy(&n->pe);
  pb_nn_destroy(&n->nn);
}

static pb_azplay_opts_t opts(void) {
  return (pb_azplay_opts_t){.parallel = 32,
                            .max_turns = 9,
                            .simulations = 32,
                            .c_puct = 1.5,
                            .eps = 0.25,
                            .alpha = 1.0,
                            .temp_moves = 4};
}

/* Plays n honest episodes with azplay. */
static void play(const pb_azplay_opts_t *o, net_t *n, int count,
                 uint64_t seed, pb_episodes_t *out) {
  pb_err_t err;
  pb_azplay_t *p = pb_azplay_new(T3, o, &err);
  assert_non_null(p);
  pb_episodes_init(out);
  assert_int_equal(pb_azplay_run(p, count, seed, 0, &n->ev, 1, out, &err), 0);
  pb_azplay_destroy(&p);
}

/* The exact checks of every episode of e into t; the impossible ones. */
static uint64_t check_all(const pb_azplay_opts_t *o, const pb_episodes_t *e,
                          pb_az_tally_t *t) {
  const int A = T3->num_actions;
  pb_err_t err;
  char why[200] = "";
  for (size_t k = 0; k < e->n_eps; k++)
    assert_int_equal(pb_az_check_episode(T3, o, e->states + e->start[k],
                                         e->len[k], e->reward[k],
                                         e->policy + (size_t)e->start[k] * A,
                                         t, why, sizeof why, &err),
                     0);
  return t->impossible;
}

/* Re-runs up to max rows of e that are not all zero into t. */
static void rerun(const pb_azplay_opts_t *o, net_t *n, const pb_episodes_t *e,
                  size_t max, pb_az_tally_t *t) {
  const int A = T3->num_actions, B = 64;
  pb_err_t err;
  pb_azcheck_t *c = pb_azcheck_new(T3, o, B, &err);
  assert_non_null(c);
  pb_rng_t rng;
  pb_rng_seed(&rng, 4242, 7);
  pb_state_t st[64];
  float rows[64 * PB_MAX_ACTIONS];
  double x[64];
  int k = 0;
  size_t done = 0;
  for (size_t i = 0; i < e->n_states && done < max; i++) {
    const float *r = e->policy + i * A;
    int zero = 1;
    for (int a = 0; a < A; a++) zero &= r[a] == 0.0f;
    if (zero) continue;
    st[k] = e->states[i];
    memcpy(rows + (size_t)k * A, r, (size_t)A * sizeof *r);
    done++;
    if (++k == B || done == max) {
      assert_int_equal(pb_azcheck_run(c, st, rows, k, &n->ev, &rng, x, &err),
                       0);
      pb_az_add_rows(t, x, k);
      k = 0;
    }
  }
  if (k > 0) {
    assert_int_equal(pb_azcheck_run(c, st, rows, k, &n->ev, &rng, x, &err), 0);
    pb_az_add_rows(t, x, k);
  }
  pb_azcheck_destroy(&c);
  assert_null(c);
}

/* Honest episodes of options o: no impossible move, every z small. */
static void honest(const pb_azplay_opts_t *o) {
  net_t n;
  net_open(&n);
  pb_episodes_t e;
  play(o, &n, 120, 31, &e);
  pb_az_tally_t t = {0};
  assert_int_equal(check_all(o, &e, &t), 0);
  rerun(o, &n, &e, 400, &t);
  printf("honest (root %d, forced %d, cap %d): %" PRIu64 " rows, %" PRIu64
         " re-run z %.2f; %" PRIu64 " moves z %.2f; %" PRIu64
         " zero rows z %.2f\n",
         o->root.rule, o->root.forced, o->small_simulations, t.rows,
         t.positions, pb_az_rows_z(&t), t.moves, pb_az_moves_z(&t),
         t.zero_rows, pb_az_zeros_z(&t, o));
  assert_true(t.positions >= 100);
  assert_true(fabs(pb_az_rows_z(&t)) < 4.0);
  assert_true(fabs(pb_az_moves_z(&t)) < 4.0);
  assert_true(fabs(pb_az_zeros_z(&t, o)) < 4.0);
  assert_int_equal(pb_az_verdict(&t, o), PB_AZ_OK);
  if (o->root.rule != PB_MCTS_GUMBEL) assert_true(t.moves > 50);
  pb_episodes_free(&e);
  net_close(&n);
}

static void test_honest_puct(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  honest(&o);
}

static void test_honest_forced_and_cap(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  o.root.forced = 1;
  o.small_simulations = 8;
  o.full_fraction = 0.5;
  honest(&o);
}

static void test_honest_gumbel(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  o.root = (pb_mcts_root_opts_t){.rule = PB_MCTS_GUMBEL,
                                 .considered = 4,
                                 .c_visit = PB_MCTS_GUMBEL_C_VISIT,
                                 .c_scale = PB_MCTS_GUMBEL_C_SCALE};
  honest(&o);
}

/* The z of honest rows over many batches is a standard normal's at most
 * (sub-Gaussian): its mean near 0 and none past 4. */
static void test_honest_z_many(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  net_t n;
  net_open(&n);
  pb_episodes_t e;
  play(&o, &n, 240, 77, &e);
  const int A = T3->num_actions;
  double zs = 0.0;
  int batches = 0;
  /* Batches of 12 episodes. */
  for (size_t k0 = 0; k0 + 12 <= e.n_eps; k0 += 12, batches++) {
    pb_episodes_t b;
    pb_episodes_init(&b);
    pb_err_t err;
    for (size_t k = k0; k < k0 + 12; k++)
      assert_int_equal(pb_episodes_add_policy(
                           &b, e.states + e.start[k], e.len[k], e.reward[k], 1,
                           e.policy + (size_t)e.start[k] * A, A, &err),
                       0);
    pb_az_tally_t t = {0};
    rerun(&o, &n, &b, 1000, &t);
    const double z = pb_az_rows_z(&t);
    assert_true(fabs(z) < 4.0);
    zs += z;
    pb_episodes_free(&b);
  }
  printf("honest z over %d batches: mean %.2f\n", batches, zs / batches);
  assert_true(batches >= 15);
  assert_true(fabs(zs / batches) < 4.0 / sqrt(batches));
  pb_episodes_free(&e);
  net_close(&n);
}

/* The move played at ply i of episode k (an ending move: -1). */
static int played(const pb_episodes_t *e, size_t k, uint32_t i) {
  if (i + 1 >= e->len[k]) return -1;
  const pb_state_t *s = &e->states[e->start[k] + i];
  uint8_t acts[PB_MAX_ACTIONS];
  const int na = T3->legal(s, acts);
  for (int j = 0; j < na; j++) {
    pb_state_t c = *s;
    int over = 0;
    T3->step(&c, acts[j], &over);
    if (!over && !memcmp(&c, &e->states[e->start[k] + i + 1], sizeof c))
      return acts[j];
  }
  return -1;
}

/* Honest games with one-hot rows on the moves played: every exact check
 * passes, the re-run catches them. */
static void test_one_hot(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  net_t n;
  net_open(&n);
  pb_episodes_t e;
  play(&o, &n, 40, 5, &e);
  const int A = T3->num_actions;
  for (size_t k = 0; k < e.n_eps; k++)
    for (uint32_t i = 0; i + 1 < e.len[k]; i++) {
      float *r = e.policy + (size_t)(e.start[k] + i) * A;
      const int a = played(&e, k, i);
      assert_true(a >= 0);
      memset(r, 0, (size_t)A * sizeof *r);
      r[a] = 1.0f;
    }
  pb_az_tally_t t = {0};
  assert_int_equal(check_all(&o, &e, &t), 0);
  rerun(&o, &n, &e, 150, &t);
  printf("one-hot: re-run z %.2f over %" PRIu64 "\n", pb_az_rows_z(&t),
         t.positions);
  assert_true(pb_az_rows_z(&t) >= PB_AZ_Z);
  assert_int_equal(pb_az_verdict(&t, &o), PB_AZ_BAD_ROWS);
  pb_episodes_free(&e);
  net_close(&n);
}

/* A thrower: its own search each move, then the legal move its row gives
 * the least mass; forge 0 sends the honest rows, 1 moves the mass of the
 * row's most visited moves onto the thrown move (the row then says it
 * chose it). */
static void throw_games(net_t *n, const pb_azplay_opts_t *o, int count,
                        int forge, pb_episodes_t *out) {
  const int A = T3->num_actions;
  pb_err_t err;
  pb_mcts_opts_t mo = {o->simulations, o->c_puct, o->eps, o->alpha, 1, 0};
  pb_mcts_t *m = pb_mcts_new(T3, &mo, &err);
  assert_non_null(m);
  pb_rng_t rng;
  pb_rng_seed(&rng, 9, 9);
  pb_rng_t *rngs[1] = {&rng};
  pb_episodes_init(out);
  for (int g = 0; g < count; g++) {
    pb_state_t hist[9], s;
    float rows[9 * PB_MAX_ACTIONS], vis[PB_MAX_ACTIONS], tgt[PB_MAX_ACTIONS];
    T3->reset(&s);
    uint32_t len = 0;
    int over = 0;
    float r = 0;
    while (!over && len < 9) {
      pb_mcts_io_t io = {NULL, NULL, vis, tgt, NULL, NULL};
      assert_int_equal(pb_mcts_search(m, &s, 1, &n->ev, rngs, &io, &err), 0);
      uint8_t acts[PB_MAX_ACTIONS];
      const int na = T3->legal(&s, acts);
      int worst = acts[0];
      for (int j = 1; j < na; j++)
        if (tgt[acts[j]] < tgt[worst]) worst = acts[j];
      if (forge) { /* the mass of the most visited moves onto it */
        float top = 0;
        for (int j = 0; j < na; j++)
          if (tgt[acts[j]] > top) top = tgt[acts[j]];
        for (int j = 0; j < na; j++)
          if (acts[j] != worst && tgt[acts[j]] == top) {
            tgt[worst] += top;
            tgt[acts[j]] = 0;
          }
      }
      memcpy(rows + (size_t)len * A, tgt, (size_t)A * sizeof *tgt);
      hist[len++] = s;
      r = T3->step(&s, worst, &over);
    }
    assert_int_equal(pb_episodes_add_policy(out, hist, len,
                                            over ? (int)lrintf(r) : 0, 1, rows,
                                            A, &err),
                     0);
  }
  pb_mcts_destroy(&m);
}

static void test_thrower_honest_rows(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  net_t n;
  net_open(&n);
  pb_episodes_t e;
  throw_games(&n, &o, 20, 0, &e);
  pb_az_tally_t t = {0};
  /* Past temp_moves its moves are not its rows' argmax. */
  assert_true(check_all(&o, &e, &t) > 0);
  assert_int_equal(pb_az_verdict(&t, &o), PB_AZ_BAD_MOVE);
  /* Within them (temp_moves past the game) their surprise shows. */
  o.temp_moves = 9;
  pb_az_tally_t w = {0};
  pb_episodes_free(&e);
  throw_games(&n, &o, 40, 0, &e);
  assert_int_equal(check_all(&o, &e, &w), 0);
  printf("thrower, honest rows, all drawn: moves z %.2f over %" PRIu64 "\n",
         pb_az_moves_z(&w), w.moves);
  assert_true(pb_az_moves_z(&w) >= PB_AZ_Z);
  assert_int_equal(pb_az_verdict(&w, &o), PB_AZ_BAD_DRAWS);
  pb_episodes_free(&e);
  net_close(&n);
}

/* Rows forged to match the thrown moves pass the exact checks; the re-run
 * catches them. */
static void test_thrower_forged_rows(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  net_t n;
  net_open(&n);
  pb_episodes_t e;
  throw_games(&n, &o, 20, 1, &e);
  pb_az_tally_t t = {0};
  assert_int_equal(check_all(&o, &e, &t), 0);
  rerun(&o, &n, &e, 150, &t);
  printf("thrower, forged rows: re-run z %.2f over %" PRIu64 "\n",
         pb_az_rows_z(&t), t.positions);
  assert_int_equal(pb_az_verdict(&t, &o), PB_AZ_BAD_ROWS);
  pb_episodes_free(&e);
  net_close(&n);
}

/* Rows of zeros: impossible without a playout cap; with one, too many of
 * them give a large z. */
static void test_zero_rows(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  net_t n;
  net_open(&n);
  pb_episodes_t e;
  play(&o, &n, 30, 3, &e);
  memset(e.policy, 0, e.n_states * (size_t)T3->num_actions * sizeof(float));
  pb_az_tally_t t = {0};
  char why[200] = "";
  pb_err_t err;
  assert_int_equal(pb_az_check_episode(T3, &o, e.states, e.len[0],
                                       e.reward[0], e.policy, &t, why,
                                       sizeof why, &err),
                   0);
  assert_true(t.impossible >= 1);
  assert_non_null(strstr(why, "zeros"));
  o.small_simulations = 8;
  o.full_fraction = 0.75;
  pb_az_tally_t c = {0};
  assert_int_equal(check_all(&o, &e, &c), 0);
  assert_true(pb_az_zeros_z(&c, &o) >= PB_AZ_Z);
  assert_int_equal(pb_az_verdict(&c, &o), PB_AZ_BAD_ZEROS);
  pb_episodes_free(&e);
  net_close(&n);
}

static void test_refusals(void **state) {
  (void)state;
  pb_azplay_opts_t o = opts();
  pb_err_t err;
  o.eps = 0.0;
  assert_null(pb_azcheck_new(T3, &o, 4, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "deterministic"));
  o = opts();
  assert_null(pb_azcheck_new(T3, &o, 0, &err));
  pb_azcheck_destroy(NULL);
  /* States that do not follow. */
  pb_state_t s[2];
  T3->reset(&s[0]);
  s[1] = s[0];
  float rows[2 * PB_MAX_ACTIONS] = {0};
  rows[0] = rows[PB_MAX_ACTIONS] = 1.0f;
  pb_az_tally_t t = {0};
  assert_int_equal(
      pb_az_check_episode(T3, &o, s, 2, 0, rows, &t, NULL, 0, &err),
      PB_ECORRUPT);
  /* Sub undoes add. */
  pb_az_tally_t a = {0}, b = {.episodes = 2, .positions = 3, .r_sum = 1.5,
                              .r_sq = 2.0};
  pb_az_add(&a, &b);
  pb_az_sub(&a, &b);
  assert_int_equal(a.positions, 0);
  assert_true(fabs(a.r_sum) < 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_honest_puct),
      cmocka_unit_test(test_honest_forced_and_cap),
      cmocka_unit_test(test_honest_gumbel),
      cmocka_unit_test(test_honest_z_many),
      cmocka_unit_test(test_one_hot),
      cmocka_unit_test(test_thrower_honest_rows),
      cmocka_unit_test(test_thrower_forged_rows),
      cmocka_unit_test(test_zero_rows),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
