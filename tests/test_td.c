/* test_td.c - algorithm td (seed 004): the linear evaluation
 * (common/search/linear.h), the n-ply search against a brute-force negamax
 * (common/search/nply.h), the TD(0) update against hand-computed numbers and
 * the schedules (common/train/td.h), epsilon-greedy self-play (common/train/tdplay.h),
 * the evaluation as a pb_nn network (common/nn/tdnet.h), the config's td keys
 * and their refusals, and a short in-process run whose learned weighted
 * piece counter beats random clearly more often than the untrained one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "config.h"
#include "episodes.h"
#include "game.h"
#include "inproc.h"
#include "linear.h"
#include "match.h"
#include "model.h"
#include "nply.h"
#include "proc.h"
#include "rng.h"
#include "td.h"
#include "tdnet.h"
#include "tdplay.h"

/* ---- helpers ------------------------------------------------------------ */

static void random_weights(pb_linear_t *lin, uint64_t seed) {
  pb_rng_t r;
  pb_rng_seed(&r, seed, 7);
  for (int i = 0; i < lin->n_features; i++)
    lin->w[i] = (float)(pb_rng_uniform(&r) - 0.5);
  lin->bias = (float)(0.2 * (pb_rng_uniform(&r) - 0.5));
}

/* A position k random moves from the start (fewer if the game ends). */
static pb_state_t random_position(const pb_game_t *g, pb_rng_t *r, int k) {
  pb_state_t s;
  g->reset(&s);
  uint8_t a[PB_MAX_ACTIONS];
  for (int i = 0; i < k; i++) {
    pb_state_t t = s;
    int n = g->legal(&t, a), done = 0;
    if (n == 0) break;
    g->step(&t, a[pb_rng_below(r, (uint32_t)n)], &done);
    float rw;
    if (g->terminal(&t, &rw)) break;
    s = t;
  }
  return s;
}

/* Plain negamax, every child, no cut-off: the reference. */
static double brute(const pb_linear_t *lin, const pb_state_t *s, int depth) {
  const pb_game_t *g = lin->g;
  float r;
  if (g->terminal(s, &r)) return r;
  if (depth == 0) return pb_linear_value(lin, s);
  uint8_t a[PB_MAX_ACTIONS];
  int n = g->legal(s, a);
  double best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done;
    g->step(&c, a[i], &done);
    double v = -brute(lin, &c, depth - 1);
    if (v > best) best = v;
  }
  return best;
}

static int brute_move(const pb_linear_t *lin, const pb_state_t *s, int depth,
                      double *value) {
  const pb_game_t *g = lin->g;
  uint8_t a[PB_MAX_ACTIONS];
  int n = g->legal(s, a), move = -1;
  double best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done;
    g->step(&c, a[i], &done);
    double v = -brute(lin, &c, depth - 1);
    if (v > best) best = v, move = a[i];
  }
  *value = best;
  return move;
}

/* ---- the linear evaluation ----------------------------------------------- */

static void test_features(void **state) {
  (void)state;
  pb_err_t err;
  pb_linear_t lin;
  assert_int_equal(pb_linear_init(&lin, &pb_game_othello, &err), 0);
  assert_int_equal(lin.n_features, 64);
  pb_state_t s;
  pb_game_othello.reset(&s);
  float x[PB_LINEAR_MAX_FEATURES];
  pb_linear_features(&lin, &s, x);
  int plus = 0, minus = 0, zero = 0;
  for (int i = 0; i < 64; i++)
    plus += x[i] == 1.0f, minus += x[i] == -1.0f, zero += x[i] == 0.0f;
  assert_int_equal(plus, 2); /* the start: two discs each */
  assert_int_equal(minus, 2);
  assert_int_equal(zero, 60);
  /* Othello's value from the bitboards is the dot product of the
   * features, to the bit. */
  random_weights(&lin, 3);
  pb_rng_t r;
  pb_rng_seed(&r, 8, 8);
  for (int k = 0; k < 200; k++) {
    pb_state_t p = random_position(&pb_game_othello, &r, k % 60);
    pb_linear_features(&lin, &p, x);
    double f = lin.bias;
    for (int i = 0; i < 64; i++) f += (double)lin.w[i] * x[i];
    assert_true(pb_linear_raw(&lin, &p) == f);
  }
  assert_int_equal(pb_linear_init(&lin, &pb_game_connect4, &err), 0);
  assert_int_equal(lin.n_features, 84);
  assert_int_equal(pb_linear_init(&lin, &pb_game_toguz, &err), 0);
  assert_int_equal(lin.n_features, 306);
  assert_int_equal(pb_linear_init(&lin, &pb_game_tictactoe, &err), PB_EUNSUPP);
  assert_non_null(strstr(err.msg, "tictactoe"));
}

/* The td games of the config check are those with features. */
static void test_config_games_agree(void **state) {
  (void)state;
  const pb_game_t *games[] = {&pb_game_connect4, &pb_game_tictactoe,
                              &pb_game_othello, &pb_game_toguz};
  for (int i = 0; i < 4; i++) {
    pb_config_t c;
    pb_err_t err;
    pb_linear_t lin;
    pb_config_defaults(&c);
    assert_int_equal(pb_config_set(&c, "algorithm", "td", &err), 0);
    assert_int_equal(pb_config_set(&c, "game", games[i]->name, &err), 0);
    assert_int_equal(pb_config_set(&c, "eval.enabled", "false", &err), 0);
    int cfg_ok = pb_config_check(&c, &err) == 0;
    int lin_ok = pb_linear_init(&lin, games[i], &err) == 0;
    assert_int_equal(cfg_ok, lin_ok);
  }
}

/* ---- n-ply search ----------------------------------------------------------
 */

static void check_search(const pb_game_t *g, int max_depth, int positions,
                         int plies) {
  pb_err_t err;
  pb_linear_t lin;
  assert_int_equal(pb_linear_init(&lin, g, &err), 0);
  pb_rng_t r;
  pb_rng_seed(&r, 42, (uint64_t)g->id);
  for (int p = 0; p < positions; p++) {
    random_weights(&lin, (uint64_t)p);
    pb_state_t s = random_position(g, &r, (int)pb_rng_below(&r, plies));
    for (int d = 0; d <= max_depth; d++) {
      double want = brute(&lin, &s, d);
      assert_true(pb_nply_value(&lin, &s, d, NULL) == want);
      if (d == 0) continue;
      double bv, v;
      int bm = brute_move(&lin, &s, d, &bv);
      pb_nply_stats_t st = {0, 0};
      int m = pb_nply_best(&lin, &s, d, &v, &st);
      assert_int_equal(m, bm);
      assert_true(v == bv);
      assert_true(st.evals > 0 || bv == 1.0 || bv == -1.0 || bv == 0.0);
    }
  }
}

static void test_nply_othello(void **state) {
  (void)state;
  check_search(&pb_game_othello, 3, 40, 50);
}

static void test_nply_connect4(void **state) {
  (void)state;
  check_search(&pb_game_connect4, 4, 40, 30);
}

static void test_nply_toguz(void **state) {
  (void)state;
  check_search(&pb_game_toguz, 3, 20, 60);
}

/* Alpha-beta looks at fewer leaves than the full tree, and the bad
 * arguments are refused. */
static void test_nply_prunes(void **state) {
  (void)state;
  pb_err_t err;
  pb_linear_t lin;
  assert_int_equal(pb_linear_init(&lin, &pb_game_othello, &err), 0);
  random_weights(&lin, 5);
  pb_state_t s;
  pb_game_othello.reset(&s);
  pb_nply_stats_t st = {0, 0};
  pb_nply_best(&lin, &s, 4, NULL, &st);
  assert_true(st.evals > 0 && st.evals < 244); /* perft(4) = 244 leaves */
  assert_int_equal(pb_nply_best(&lin, &s, 0, NULL, NULL), PB_EINVAL);
  assert_int_equal(pb_nply_best(&lin, &s, PB_NPLY_MAX_DEPTH + 1, NULL, NULL),
                   PB_EINVAL);
}

/* ---- TD(0) -----------------------------------------------------------------
 */

/* Two updates of the start of Othello, computed by hand (python3 math):
 * f = 0.5, v = tanh(0.5) = 0.46211715726000974, target -1: delta =
 * -1.4621171572600098, 1 - v^2 = 0.7864477329659274, step = alpha delta
 * (1 - v^2) = -0.01149878723657721 (alpha 0.01) on the bias and on every
 * w_i x_i; then f = 0.5 + 5 step = 0.44250606381711394 (the bias and four
 * discs of |x_i| = 1), v = 0.4157195587131625, target 1: delta =
 * 0.5842804412868374, step = 0.004833034877779596. */
static void test_td_update_by_hand(void **state) {
  (void)state;
  pb_err_t err;
  pb_linear_t lin;
  assert_int_equal(pb_linear_init(&lin, &pb_game_othello, &err), 0);
  lin.bias = 0.5f;
  pb_state_t s;
  pb_game_othello.reset(&s);
  float x[PB_LINEAR_MAX_FEATURES];
  pb_linear_features(&lin, &s, x);
  double d = pb_td_update(&lin, &s, -1.0, 0.01);
  assert_float_equal(d, -1.4621171572600098, 1e-6);
  const double s1 = -0.01149878723657721, s2 = 0.004833034877779596;
  assert_float_equal(lin.bias, 0.5 + s1, 1e-6);
  for (int i = 0; i < 64; i++) assert_float_equal(lin.w[i], s1 * x[i], 1e-7);
  assert_float_equal(pb_linear_raw(&lin, &s), 0.44250606381711394, 1e-6);
  d = pb_td_update(&lin, &s, 1.0, 0.01);
  assert_float_equal(d, 0.5842804412868374, 1e-6);
  assert_float_equal(lin.bias, 0.5 + s1 + s2, 1e-6);
  for (int i = 0; i < 64; i++)
    assert_float_equal(lin.w[i], (s1 + s2) * x[i], 1e-7);
}

/* pb_td_learn: a two-position episode at 1-ply updates s_0 towards
 * -v(s_1) (with the weights as they are then) and s_1 towards the
 * result, in that order: the same as two pb_td_update calls. */
static void test_td_learn_targets(void **state) {
  (void)state;
  pb_err_t err;
  pb_linear_t lin, ref;
  assert_int_equal(pb_linear_init(&lin, &pb_game_connect4, &err), 0);
  random_weights(&lin, 9);
  ref = lin;
  pb_state_t st[2];
  pb_game_connect4.reset(&st[0]);
  st[1] = st[0];
  int done;
  pb_game_connect4.step(&st[1], 3, &done);
  pb_episodes_t e;
  pb_episodes_init(&e);
  assert_int_equal(pb_episodes_add(&e, st, 2, -1, 0, &err), 0);
  pb_td_opts_t o = {1, 0.05, 0.5, 0.1, 1.0, 1};
  pb_td_stats_t ts;
  pb_td_learn(&lin, &o, &e, 3, &ts); /* game 3: alpha 0.05 * 0.5^3 */
  const double a = 0.05 * 0.125;
  pb_td_update(&ref, &st[0], -pb_linear_value(&ref, &st[1]), a);
  pb_td_update(&ref, &st[1], -1.0, a);
  assert_memory_equal(&lin, &ref, sizeof lin);
  assert_int_equal(ts.updates, 2);
  assert_float_equal(ts.alpha_first, a, 1e-12);
  /* 2-ply: the target of s_0 is the 1-ply value of s_1. */
  lin = ref;
  pb_linear_t ref2 = ref;
  o.ply = 2;
  pb_td_learn(&lin, &o, &e, 3, NULL);
  pb_td_update(&ref2, &st[0], -pb_nply_value(&ref2, &st[1], 1, NULL), a);
  pb_td_update(&ref2, &st[1], -1.0, a);
  assert_memory_equal(&lin, &ref2, sizeof lin);
  pb_episodes_free(&e);
}

static void test_schedules(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  pb_td_opts_t o;
  pb_td_opts_from_config(&c, &o);
  /* the paper: alpha 0.01 x 0.95 every 500 games, epsilon 0.1 fixed */
  assert_float_equal(pb_td_alpha(&o, 0), 0.01, 1e-15);
  assert_float_equal(pb_td_alpha(&o, 499), 0.01, 1e-15);
  assert_float_equal(pb_td_alpha(&o, 500), 0.0095, 1e-15);
  assert_float_equal(pb_td_alpha(&o, 1000), 0.009025, 1e-15);
  assert_float_equal(pb_td_alpha(&o, 49999), 0.01 * pow(0.95, 99), 1e-15);
  assert_float_equal(pb_td_epsilon(&o, 0), 0.1, 1e-15);
  assert_float_equal(pb_td_epsilon(&o, 10000), 0.1, 1e-15);
  /* its second set: epsilon x 0.9 every 500 games */
  o.epsilon_decay = 0.9;
  assert_float_equal(pb_td_epsilon(&o, 999), 0.09, 1e-15);
  assert_float_equal(pb_td_epsilon(&o, 1500), 0.0729, 1e-15);
}

/* ---- self-play --------------------------------------------------------------
 */

static void test_epsilon_rate(void **state) {
  (void)state;
  pb_err_t err;
  pb_linear_t lin;
  assert_int_equal(pb_linear_init(&lin, &pb_game_connect4, &err), 0);
  random_weights(&lin, 3);
  const double rates[] = {0.0, 0.25, 1.0};
  for (int k = 0; k < 3; k++) {
    pb_episodes_t e;
    pb_episodes_init(&e);
    pb_tdplay_opts_t o = {1, 42, rates[k], NULL, NULL};
    pb_tdplay_stats_t st = {0};
    assert_int_equal(pb_tdplay_run(&lin, &o, 200, 11, 0, 5, &e, &st, &err), 0);
    assert_int_equal(e.n_eps, 200);
    assert_int_equal(st.moves, e.n_states);
    double share = (double)st.random_moves / (double)st.moves;
    /* ~4000 moves: the binomial's standard deviation is below 0.007 */
    assert_true(fabs(share - rates[k]) < 0.03);
    if (k != 1) assert_true(share == rates[k]);
    /* the same seed and weights give the same games */
    pb_episodes_t e2;
    pb_episodes_init(&e2);
    assert_int_equal(pb_tdplay_run(&lin, &o, 200, 11, 0, 5, &e2, NULL, &err),
                     0);
    assert_int_equal(e2.n_states, e.n_states);
    assert_memory_equal(e2.states, e.states, e.n_states * sizeof *e.states);
    assert_memory_equal(e2.reward, e.reward, e.n_eps);
    /* an item split in two plays the same episodes */
    pb_episodes_clear(&e2);
    assert_int_equal(pb_tdplay_run(&lin, &o, 120, 11, 0, 5, &e2, NULL, &err),
                     0);
    assert_int_equal(pb_tdplay_run(&lin, &o, 80, 11, 120, 5, &e2, NULL, &err),
                     0);
    assert_memory_equal(e2.states, e.states, e.n_states * sizeof *e.states);
    pb_episodes_free(&e);
    pb_episodes_free(&e2);
  }
  /* greedy games follow the 1-ply search */
  pb_episodes_t e;
  pb_episodes_init(&e);
  pb_tdplay_opts_t o = {2, 42, 0.0, NULL, NULL};
  assert_int_equal(pb_tdplay_run(&lin, &o, 1, 1, 0, 0, &e, NULL, &err), 0);
  for (uint32_t t = 0; t + 1 < e.len[0]; t++) {
    int m = pb_nply_best(&lin, &e.states[t], 2, NULL, NULL);
    pb_state_t c = e.states[t];
    int done;
    pb_game_connect4.step(&c, m, &done);
    assert_memory_equal(&c, &e.states[t + 1], sizeof c);
  }
  pb_episodes_free(&e);
  pb_tdplay_opts_t bad = {0, 42, 0.1, NULL, NULL};
  assert_int_equal(pb_tdplay_run(&lin, &bad, 1, 1, 0, 0, &e, NULL, &err),
                   PB_EINVAL);
}

/* ---- the network -----------------------------------------------------------
 */

static void test_tdnet_round_trip(void **state) {
  (void)state;
  const pb_game_t *games[] = {&pb_game_othello, &pb_game_connect4,
                              &pb_game_toguz};
  for (int k = 0; k < 3; k++) {
    const pb_game_t *g = games[k];
    pb_config_t c;
    pb_err_t err;
    pb_config_defaults(&c);
    assert_int_equal(pb_config_set(&c, "algorithm", "td", &err), 0);
    assert_int_equal(pb_config_set(&c, "game", g->name, &err), 0);
    pb_nn_t *v, *q;
    assert_int_equal(pb_model_nets(&c, g, "cpu", "test", &v, &q, &err), 0);
    pb_linear_t lin, back;
    assert_int_equal(pb_linear_init(&lin, g, &err), 0);
    assert_true(pb_tdnet_fits(v, &lin));
    assert_false(pb_tdnet_fits(q, &lin));
    random_weights(&lin, 77);
    assert_int_equal(pb_tdnet_set(v, &lin, &err), 0);
    back = lin;
    memset(back.w, 0, sizeof back.w);
    back.bias = 0;
    assert_int_equal(pb_tdnet_get(v, &back, &err), 0);
    assert_memory_equal(&back, &lin, sizeof lin);
    /* the network computes the evaluation */
    pb_rng_t r;
    pb_rng_seed(&r, 1, 1);
    for (int i = 0; i < 20; i++) {
      pb_state_t s = random_position(g, &r, i);
      float in[PB_LINEAR_MAX_INPUTS], out;
      g->encode(&s, in);
      assert_int_equal(pb_nn_forward(v, in, 1, &out, &err), 0);
      assert_float_equal(out, pb_linear_value(&lin, &s), 1e-5);
    }
    assert_int_equal(pb_tdnet_get(q, &back, &err), PB_EMISMATCH);
    pb_nn_destroy(&v);
    pb_nn_destroy(&q);
  }
}

/* ---- the config ------------------------------------------------------------
 */

static void expect_refused(const char *yaml, const char *words) {
  pb_config_t c;
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_defaults(&c);
  int rc = pb_config_load_string(&c, yaml, &err);
  if (rc == 0) rc = pb_config_check(&c, &err);
  if (rc != PB_ECONFIG || strstr(err.msg, words) == NULL)
    fail_msg("'%s': rc %d, message '%s', wanted '%s'", yaml, rc, err.msg,
             words);
}

static void test_config(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_int_equal(
      pb_config_load_file(&c, PB_SOURCE_DIR "/configs/othello-td.yaml", &err),
      0);
  assert_int_equal(pb_config_check(&c, &err), 0);
  assert_int_equal(pb_algos_of(&c)->nets, PB_NETS_LINEAR);
  assert_int_equal(c.td.ply, 1);
  pb_config_defaults(&c);
  assert_int_equal(
      pb_config_load_file(&c, PB_SOURCE_DIR "/configs/connect4-td.yaml", &err),
      0);
  assert_int_equal(pb_config_check(&c, &err), 0);
  expect_refused("algorithm: td\ngame: tictactoe\n",
                 "game 'tictactoe' has no features");
  expect_refused("algorithm: td\ngame: othello\ntd:\n  ply: 0\n",
                 "td.ply: value '0' is out of range: allowed 1..16");
  expect_refused("algorithm: td\ngame: othello\ntd:\n  ply: 17\n",
                 "out of range");
  expect_refused("algorithm: td\ngame: othello\ntd:\n  epsilon: 1.5\n",
                 "td.epsilon: value '1.5' is out of range");
  expect_refused("algorithm: td\ngame: othello\ntd:\n  alpha: 0\n", "td.alpha");
  expect_refused("algorithm: td\ngame: othello\ntd:\n  alpha_decay: -1\n",
                 "td.alpha_decay");
  expect_refused("algorithm: td\ngame: othello\ntd:\n  plies: 2\n",
                 "unknown key 'td.plies'");
  expect_refused("algorithm: tdd\n", "is not one of");
  expect_refused("algorithm: td\ngame: othello\ntrain:\n  pipeline: true\n",
                 "train.pipeline applies to algorithms probs and alphazero");
  expect_refused(
      "algorithm: td\ngame: othello\ntrain:\n  replay_iterations: 2\n",
      "train.replay_iterations applies to algorithm probs");
  /* the evaluator would rate the untrained Q slot */
  expect_refused("algorithm: td\ngame: othello\n",
                 "eval.enabled: the evaluator rates probs and alphazero");
}

/* ---- a short run ------------------------------------------------------------
 */

static double score_vs_random(const char *spec) {
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = spec;
  o.b_spec = "random";
  o.games = 200;
  o.seed = 3;
  o.threads = 1;
  o.opening_random_moves = 0;
  pb_match_result_t r;
  pb_err_t err;
  if (pb_match_play(&pb_game_othello, &o, &r, &err) != 0)
    fail_msg("match: %s", err.msg);
  return (r.wins + 0.5 * r.draws) / r.games;
}

/* 500 games of 1-ply TD(0) on Othello: the learned WPC (V of the
 * checkpoint, played greedily at 1 ply by the value: agent) beats random
 * clearly more often than the untrained one of version 0, and has learned
 * that corners are worth more than the squares next to them. */
static void test_training_improves(void **state) {
  (void)state;
  char dir[256];
  tp_tmpdir(dir, sizeof dir, "td");
  assert_true(dir[0] != '\0');
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_int_equal(
      pb_config_load_file(&c, PB_SOURCE_DIR "/configs/othello-td.yaml", &err),
      0);
  assert_int_equal(pb_config_set(&c, "run.dir", dir, &err), 0);
  assert_int_equal(pb_config_set(&c, "train.iterations", "25", &err), 0);
  assert_int_equal(pb_config_set(&c, "train.episodes_per_iter", "20", &err), 0);
  pb_inproc_opts_t o = {.resume = 0};
  if (pb_inproc_run(&c, NULL, &o, &err) != 0) fail_msg("inproc: %s", err.msg);
  char spec[400];
  snprintf(spec, sizeof spec, "value:%s/checkpoints/ckpt-000000.pbck", dir);
  double s0 = score_vs_random(spec);
  snprintf(spec, sizeof spec, "%s/checkpoints/ckpt-000025.pbck", dir);
  pb_model_t *m = pb_model_open(spec, "cpu", NULL, &err);
  assert_non_null(m);
  pb_linear_t lin;
  assert_int_equal(pb_linear_init(&lin, &pb_game_othello, &err), 0);
  assert_int_equal(pb_tdnet_get(pb_model_v(m), &lin, &err), 0);
  pb_model_destroy(&m);
  const int corners[] = {0, 7, 56, 63}, x_squares[] = {9, 14, 49, 54};
  double wc = 0, wx = 0;
  for (int i = 0; i < 4; i++)
    wc += lin.w[corners[i]], wx += lin.w[x_squares[i]];
  print_message("corners %.3f, X-squares %.3f\n", wc / 4, wx / 4);
  assert_true(wc > wx);
  snprintf(spec, sizeof spec, "value:%s/checkpoints/ckpt-000025.pbck", dir);
  double s1 = score_vs_random(spec);
  print_message(
      "score against random: %.3f untrained, %.3f after 500 "
      "games\n",
      s0, s1);
  assert_true(s1 >= 0.75);
  assert_true(s1 >= s0 + 0.15);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_features),
      cmocka_unit_test(test_config_games_agree),
      cmocka_unit_test(test_nply_othello),
      cmocka_unit_test(test_nply_connect4),
      cmocka_unit_test(test_nply_toguz),
      cmocka_unit_test(test_nply_prunes),
      cmocka_unit_test(test_td_update_by_hand),
      cmocka_unit_test(test_td_learn_targets),
      cmocka_unit_test(test_schedules),
      cmocka_unit_test(test_epsilon_rate),
      cmocka_unit_test(test_tdnet_round_trip),
      cmocka_unit_test(test_config),
      cmocka_unit_test(test_training_improves),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
