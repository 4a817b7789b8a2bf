/* test_agent_net.c - network agents read from a real (tiny) training run:
 * checkpoint:, run:, value:, beam:, their errors, matches and batched
 * moves (pb_agent_act_many). The baselines: test_agent.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accuracy.h"
#include "agent.h"
#include "agent_fixtures.h"
#include "beam_search.h"
#include "config.h"
#include "game.h"
#include "inproc.h"
#include "learn.h"
#include "match.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "precision.h"
#include "rng.h"
#include "rundir.h"
#include "testset.h"

/* ------------------------------------------------------ network agents */

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* A fixture run: configs/connect4-smoke.yaml for 2 iterations in a fresh
 * temporary directory (checkpoints 0, 1 and 2). */
typedef struct {
  char dir[64];
  char ckpt[2][4200]; /* versions 1 and 2 */
} run_fixture_t;

static int run_setup(void **state) {
  run_fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/pb_test_agent_XXXXXX");
  if (mkdtemp(f->dir) == NULL) return -1;
  pb_config_t cfg;
  pb_err_t err;
  pb_config_defaults(&cfg);
  if (pb_config_load_file(&cfg, PB_SOURCE_DIR "/configs/connect4-smoke.yaml",
                          &err) != 0 ||
      pb_config_set(&cfg, "run.dir", f->dir, &err) != 0) {
    fprintf(stderr, "fixture: %s\n", err.msg);
    return -1;
  }
  pb_inproc_opts_t o = {.resume = 0};
  if (pb_inproc_run(&cfg, NULL, &o, &err) != 0) {
    fprintf(stderr, "fixture: %s\n", err.msg);
    return -1;
  }
  for (int v = 1; v <= 2; v++)
    pb_rundir_ckpt_path(f->dir, (unsigned long long)v, f->ckpt[v - 1],
                        sizeof f->ckpt[0]);
  *state = f;
  return 0;
}

static int run_teardown(void **state) {
  run_fixture_t *f = *state;
  if (f != NULL) nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(f);
  return 0;
}

/* The argmax of Q over the legal moves, computed here the long way. */
static int greedy_reference(pb_nn_t *q, const pb_state_t *s) {
  float in[6 * 7 * 8], out[PB_MAX_ACTIONS];
  uint8_t legal[PB_MAX_ACTIONS];
  int n = C4->legal(s, legal);
  assert_true((size_t)C4->planes * C4->height * C4->width <= 6 * 7 * 8);
  C4->encode(s, in);
  assert_int_equal(pb_nn_forward(q, in, 1, out, NULL), 0);
  int best = -1;
  for (int i = 0; i < n; i++)
    if (best < 0 || out[legal[i]] > out[best]) best = legal[i];
  return best;
}

static void test_checkpoint_agent_greedy(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  char spec[4300];
  snprintf(spec, sizeof spec, "checkpoint:%s", f->ckpt[1]);
  pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
  if (a == NULL) fail_msg("%s", err.msg);
  assert_string_equal(pb_agent_name(a), spec);
  pb_model_t *l = pb_model_open(f->ckpt[1], "cpu", NULL, &err);
  assert_non_null(l);
  /* Along a random game: the agent's move is the reference argmax, and
   * reseeding changes nothing. */
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  for (int game = 0; game < 4; game++) {
    pb_state_t s;
    C4->reset(&s);
    int done = 0;
    while (!done) {
      pb_agent_reseed(a, pb_rng_next(&rng));
      int m = pb_agent_act(a, &s, &err);
      assert_true(m >= 0);
      assert_int_equal(m, greedy_reference(pb_model_q(l), &s));
      uint8_t legal[PB_MAX_ACTIONS];
      int n = C4->legal(&s, legal);
      C4->step(&s, legal[pb_rng_below(&rng, (uint32_t)n)], &done);
    }
  }
  pb_model_destroy(&l);
  pb_agent_destroy(&a);
  assert_null(a);
}

/* run:DIR@ITER names the same file; run:DIR the newest. */
static void test_run_agent(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  char spec[4300];
  pb_agent_t *by_path[2], *by_run[2];
  for (int v = 0; v < 2; v++) {
    snprintf(spec, sizeof spec, "checkpoint:%s", f->ckpt[v]);
    by_path[v] = pb_agent_new(C4, spec, 1, &err);
    snprintf(spec, sizeof spec, "run:%s@%d", f->dir, v + 1);
    by_run[v] = pb_agent_new(C4, spec, 1, &err);
    assert_non_null(by_path[v]);
    if (by_run[v] == NULL) fail_msg("%s", err.msg);
    assert_string_equal(pb_agent_name(by_run[v]), spec);
  }
  snprintf(spec, sizeof spec, "run:%s", f->dir);
  pb_agent_t *newest = pb_agent_new(C4, spec, 1, &err);
  if (newest == NULL) fail_msg("%s", err.msg);
  /* Compare the moves over many positions. */
  pb_rng_t rng;
  pb_rng_seed(&rng, 9, 0);
  int differ12 = 0;
  for (int k = 0; k < 300; k++) {
    pb_state_t s;
    C4->reset(&s);
    int plies = (int)pb_rng_below(&rng, 20), done = 0;
    for (int p = 0; p < plies && !done; p++) {
      uint8_t legal[PB_MAX_ACTIONS];
      int n = C4->legal(&s, legal);
      C4->step(&s, legal[pb_rng_below(&rng, (uint32_t)n)], &done);
    }
    if (done) continue;
    int m1 = pb_agent_act(by_path[0], &s, &err);
    int m2 = pb_agent_act(by_path[1], &s, &err);
    assert_int_equal(pb_agent_act(by_run[0], &s, &err), m1);
    assert_int_equal(pb_agent_act(by_run[1], &s, &err), m2);
    assert_int_equal(pb_agent_act(newest, &s, &err), m2);
    differ12 += m1 != m2;
  }
  /* Versions 1 and 2 are different networks (the test would be blind if
   * they played alike). */
  assert_true(differ12 > 0);
  for (int v = 0; v < 2; v++) {
    pb_agent_destroy(&by_path[v]);
    pb_agent_destroy(&by_run[v]);
  }
  pb_agent_destroy(&newest);
}

static void test_network_agent_errors(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  char spec[4300];
  /* A Connect Four checkpoint in a Tic-Tac-Toe match. */
  snprintf(spec, sizeof spec, "checkpoint:%s", f->ckpt[0]);
  pb_err_clear(&err);
  assert_null(pb_agent_new(T3, spec, 1, &err));
  assert_int_equal(err.code, PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "connect4"));
  assert_non_null(strstr(err.msg, "tictactoe"));
  /* Missing files and iterations name what is missing. */
  snprintf(spec, sizeof spec, "checkpoint:%s/nonexistent.pbck", f->dir);
  pb_err_clear(&err);
  assert_null(pb_agent_new(C4, spec, 1, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "nonexistent.pbck"));
  snprintf(spec, sizeof spec, "run:%s@99", f->dir);
  pb_err_clear(&err);
  assert_null(pb_agent_new(C4, spec, 1, &err));
  assert_true(err.code < 0);
  assert_non_null(strstr(err.msg, "ckpt-000099"));
  snprintf(spec, sizeof spec, "run:%s/nowhere", f->dir);
  pb_err_clear(&err);
  assert_null(pb_agent_new(C4, spec, 1, &err));
  assert_int_equal(err.code, PB_ENOTFOUND);
  /* A file that is not a checkpoint. */
  char path[4200];
  snprintf(path, sizeof path, "%s/config.yaml", f->dir);
  snprintf(spec, sizeof spec, "checkpoint:%s", path);
  pb_err_clear(&err);
  assert_null(pb_agent_new(C4, spec, 1, &err));
  assert_int_equal(err.code, PB_ECORRUPT);
}

/* precision= on every network kind: fp32 plays the checkpoint's own
 * moves; bf16 is taken where this CPU has it natively and refused naming
 * the setting where not; a setting a kind lacks (or a misspelt one) is
 * named as a setting, not read as part of the path. */
static void test_agent_precision_and_unknown_settings(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  char spec[4300];
  char why[160];
  const int native = pb_precision_native("cpu", why, sizeof why);
  const char *kinds[6] = {"checkpoint", "value", "beam",
                          "mcts",       "abnet", "bpip"};
  for (int k = 0; k < 6; k++) {
    for (int p = 0; p < 3; p++) {
      const char *prec[3] = {"fp32", "bf16", "auto"};
      snprintf(spec, sizeof spec, "%s:%s,precision=%s", kinds[k], f->ckpt[1],
               prec[p]);
      pb_err_clear(&err);
      pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
      if (p == 1 && !native) {
        assert_null(a);
        assert_int_equal(err.code, PB_ECONFIG);
        assert_non_null(strstr(err.msg, "precision"));
        continue;
      }
      if (a == NULL) fail_msg("%s: %s", spec, err.msg);
      pb_model_t *m = pb_agent_networks(a, NULL, NULL);
      assert_non_null(m);
      assert_int_equal(pb_model_get_precision(m),
                       p == 0 || !native ? PB_NN_FP32 : PB_NN_BF16);
      pb_agent_destroy(&a);
    }
    snprintf(spec, sizeof spec, "%s:%s,precision=half", kinds[k], f->ckpt[1]);
    pb_err_clear(&err);
    assert_null(pb_agent_new(C4, spec, 1, &err));
    assert_non_null(strstr(err.msg, "precision=\"half\""));
    snprintf(spec, sizeof spec, "%s:%s,Nodes=10", kinds[k], f->ckpt[1]);
    pb_err_clear(&err);
    assert_null(pb_agent_new(C4, spec, 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
    assert_non_null(
        strstr(err.msg, "unknown or repeated setting \"Nodes=10\""));
    assert_non_null(strstr(err.msg, "precision="));
  }
  /* fp32 by name plays exactly what the plain spec plays */
  snprintf(spec, sizeof spec, "checkpoint:%s", f->ckpt[1]);
  pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
  snprintf(spec, sizeof spec, "checkpoint:%s,precision=fp32", f->ckpt[1]);
  pb_agent_t *b = pb_agent_new(C4, spec, 1, &err);
  assert_non_null(a);
  assert_non_null(b);
  pb_state_t s;
  C4->reset(&s);
  for (int ply = 0; ply < 10; ply++) {
    int x = pb_agent_act(a, &s, &err), y = pb_agent_act(b, &s, &err);
    assert_int_equal(x, y);
    int done = 0;
    C4->step(&s, x, &done);
    if (done) break;
  }
  pb_agent_destroy(&a);
  pb_agent_destroy(&b);
}

/* A match between two checkpoints: valid totals, and the same result
 * with one thread and with two. */
static void test_checkpoint_match(void **state) {
  run_fixture_t *f = *state;
  char a[4300], b[4300];
  snprintf(a, sizeof a, "checkpoint:%s", f->ckpt[1]);
  snprintf(b, sizeof b, "run:%s@1", f->dir);
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = a;
  o.b_spec = b;
  o.games = 10;
  o.opening_random_moves = 2;
  pb_match_result_t r1, r2;
  pb_err_t err;
  o.threads = 1;
  if (pb_match_play(C4, &o, &r1, &err) != 0) fail_msg("%s", err.msg);
  o.threads = 2;
  assert_int_equal(pb_match_play(C4, &o, &r2, &err), 0);
  assert_int_equal(r1.wins + r1.draws + r1.losses, 10);
  assert_int_equal(r1.wins, r2.wins);
  assert_int_equal(r1.draws, r2.draws);
  assert_int_equal(r1.plies, r2.plies);
  /* Against itself without a random opening, both colours repeat one
   * game each. */
  o.b_spec = a;
  o.opening_random_moves = 0;
  assert_int_equal(pb_match_play(C4, &o, &r1, &err), 0);
  assert_true(r1.first_wins == 5 || r1.first_losses == 5 ||
              r1.first_draws == 5);
}

/* ------------------------------------- value:, beam: and batched moves */

/* The value: agent's move the long way: every legal move valued by its
 * result if it ends the game, else -V(child) (the children in one batch,
 * as the agent does); the best, ties to the lowest action. */
static int value_reference(pb_nn_t *v, const pb_state_t *s) {
  enum { IN = 6 * 7 * 2 };
  float in[7 * IN], out[7], val[PB_MAX_ACTIONS];
  uint8_t legal[PB_MAX_ACTIONS];
  int n = C4->legal(s, legal), nk = 0, row[PB_MAX_ACTIONS];
  assert_true((size_t)C4->planes * C4->height * C4->width == IN);
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = C4->step(&c, legal[i], &done);
    row[i] = -1;
    val[i] = r;
    if (!done) {
      C4->encode(&c, &in[nk * IN]);
      row[i] = nk++;
    }
  }
  if (nk > 0) assert_int_equal(pb_nn_forward(v, in, nk, out, NULL), 0);
  int best = 0;
  for (int i = 0; i < n; i++) {
    if (row[i] >= 0) val[i] = -out[row[i]];
    if (val[i] > val[best]) best = i;
  }
  return legal[best];
}

/* Positions along random games from the start (none terminal). */
static int random_positions(const pb_game_t *g, uint64_t seed, int n,
                            pb_state_t *out) {
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  int k = 0;
  while (k < n) {
    pb_state_t s;
    g->reset(&s);
    int done = 0;
    while (!done && k < n) {
      out[k++] = s;
      uint8_t legal[PB_MAX_ACTIONS];
      int nl = g->legal(&s, legal);
      g->step(&s, legal[pb_rng_below(&rng, (uint32_t)nl)], &done);
    }
  }
  return k;
}

/* value: plays the reference's move; beam: plays a move of best value in
 * the reference beam search (one network call per node, so equal values
 * up to float rounding); both are batched and ignore their seed. */
static void test_value_and_beam_agents(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  char vspec[4300], bspec[4300], dspec[4300];
  snprintf(vspec, sizeof vspec, "value:%s", f->ckpt[1]);
  snprintf(bspec, sizeof bspec, "beam:%s,E=20,M=3", f->ckpt[1]);
  snprintf(dspec, sizeof dspec, "beam:%s", f->ckpt[1]);
  pb_agent_t *va = pb_agent_new(C4, vspec, 1, &err);
  if (va == NULL) fail_msg("%s", err.msg);
  pb_agent_t *ba = pb_agent_new(C4, bspec, 1, &err);
  if (ba == NULL) fail_msg("%s", err.msg);
  pb_agent_t *da = pb_agent_new(C4, dspec, 1, &err);
  if (da == NULL) fail_msg("%s", err.msg);
  assert_string_equal(pb_agent_name(va), vspec);
  assert_string_equal(pb_agent_name(ba), bspec);
  assert_string_equal(pb_agent_name(da), dspec);
  pb_model_t *l = pb_model_open(f->ckpt[1], "cpu", NULL, &err);
  assert_non_null(l);
  pb_neteval_t *ne = pb_neteval_new(C4, 64, 0, &err);
  assert_non_null(ne);
  pb_neteval_bind(ne, pb_model_v(l), pb_model_q(l));
  pb_evalfn_t fn = pb_neteval_fn(ne);
  enum { N = 60 };
  pb_state_t s[N];
  random_positions(C4, 3, N, s);
  int differ = 0;
  for (int i = 0; i < N; i++) {
    pb_agent_reseed(va, (uint64_t)i);
    int mv = pb_agent_act(va, &s[i], &err);
    assert_int_equal(mv, value_reference(pb_model_v(l), &s[i]));
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = C4->legal(&s[i], legal);
    const struct {
      pb_agent_t *a;
      int E, M;
    } beams[2] = {{ba, 20, 3}, {da, 30, 3}};
    for (int k = 0; k < 2; k++) {
      int mb = pb_agent_act(beams[k].a, &s[i], &err);
      assert_true(mb >= 0);
      float q[PB_MAX_ACTIONS];
      assert_int_equal(
          pb_beam_search_ref(C4, &s[i], beams[k].E, beams[k].M, &fn, q, &err),
          0);
      float best = -INFINITY;
      for (int j = 0; j < nl; j++)
        if (q[legal[j]] > best) best = q[legal[j]];
      if (q[mb] < best - 1e-4f)
        fail_msg("%s position %d: played %d of value %g, best %g",
                 pb_agent_name(beams[k].a), i, mb, q[mb], best);
      differ += k == 0 && mb != mv;
    }
  }
  assert_true(differ > 0); /* the two kinds are not the same player */
  pb_neteval_destroy(&ne);
  pb_model_destroy(&l);
  pb_agent_destroy(&va);
  pb_agent_destroy(&ba);
  pb_agent_destroy(&da);
}

/* pb_agent_act_many on 50 positions gives what 50 single calls give: the
 * network kinds answer in batches, the others reseeded per position. */
static void test_act_many(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  enum { N = 50 };
  pb_state_t s[N];
  random_positions(C4, 8, N, s);
  char specs[6][4300];
  snprintf(specs[0], sizeof specs[0], "checkpoint:%s", f->ckpt[1]);
  snprintf(specs[1], sizeof specs[1], "value:%s", f->ckpt[1]);
  snprintf(specs[2], sizeof specs[2], "beam:%s,E=20,M=3", f->ckpt[1]);
  snprintf(specs[3], sizeof specs[3], "random");
  snprintf(specs[4], sizeof specs[4], "lookahead:2");
  snprintf(specs[5], sizeof specs[5], "alphabeta:3");
  const uint64_t seed = 77;
  for (int k = 0; k < 6; k++) {
    const int network = k < 3;
    pb_agent_t *many = pb_agent_new(C4, specs[k], 1, &err);
    pb_agent_t *one = pb_agent_new(C4, specs[k], 1, &err);
    if (many == NULL || one == NULL) fail_msg("%s: %s", specs[k], err.msg);
    assert_int_equal(pb_agent_batched(many), network);
    int out[N];
    memset(out, 0xff, sizeof out);
    if (pb_agent_act_many(many, s, N, seed, out, &err) != 0)
      fail_msg("%s: %s", specs[k], err.msg);
    int varied = 0;
    for (int i = 0; i < N; i++) {
      pb_agent_reseed(one, pb_mix64(seed + (uint64_t)i));
      int m = pb_agent_act(one, &s[i], &err);
      if (out[i] != m)
        fail_msg("%s position %d: act_many %d, act %d", specs[k], i, out[i], m);
      varied += i > 0 && out[i] != out[i - 1];
      /* The value of the move chosen (pb_agent_info): every network
       * agent's, in [-1, 1]; alphabeta's only where proven, +-1; none
       * from the other baselines. */
      pb_agent_info_t in;
      pb_agent_info(network ? many : one, network ? i : 0, &in);
      if (network || k == 5) {
        assert_true(in.valued || !network);
        assert_true(!in.valued || (in.value >= -1.0f && in.value <= 1.0f));
        assert_true(!in.valued || network || fabsf(in.value) == 1.0f);
      } else {
        assert_int_equal(in.valued, 0);
      }
    }
    assert_true(varied > 5);
    /* Again, in one call of 50 and in calls of 1: nothing carries over. */
    int again[N];
    assert_int_equal(pb_agent_act_many(many, s, N, seed, again, &err), 0);
    assert_memory_equal(again, out, sizeof out);
    for (int i = 0; i < N; i++) {
      assert_int_equal(
          pb_agent_act_many(many, &s[i], 1, seed + i, &again[i], &err), 0);
      assert_int_equal(again[i], out[i]);
    }
    /* Nothing to do; a terminal position is refused, naming its index. */
    assert_int_equal(pb_agent_act_many(many, s, 0, seed, out, &err), 0);
    pb_state_t bad[3] = {s[0], pos(C4, "1212121"), s[1]};
    pb_err_clear(&err);
    assert_int_equal(pb_agent_act_many(many, bad, 3, seed, out, &err),
                     PB_EINVAL);
    assert_non_null(strstr(err.msg, "position 1"));
    assert_int_equal(pb_agent_act_many(NULL, s, 1, seed, out, &err), PB_EINVAL);
    assert_int_equal(pb_agent_act_many(many, NULL, 1, seed, out, &err),
                     PB_EINVAL);
    assert_int_equal(pb_agent_act_many(many, s, 1, seed, NULL, &err),
                     PB_EINVAL);
    pb_agent_destroy(&many);
    pb_agent_destroy(&one);
  }
  assert_int_equal(pb_agent_batched(NULL), 0);
}

/* The searching kinds value the position they moved in, as pb_agent_info
 * says, in [-1, 1]; alphabeta values a win it proved at +1. */
static void test_info_values(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  const char *kinds[] = {"mcts:%s,N=20", "abnet:%s,nodes=50", "bpip:%s,N=30"};
  pb_state_t s[4];
  random_positions(C4, 6, 4, s);
  for (int k = 0; k < 3; k++) {
    char spec[4400];
    snprintf(spec, sizeof spec, kinds[k], f->ckpt[1]);
    pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
    if (a == NULL) fail_msg("%s: %s", spec, err.msg);
    for (int i = 0; i < 4; i++) {
      assert_true(pb_agent_act(a, &s[i], &err) >= 0);
      pb_agent_info_t in;
      pb_agent_info(a, 0, &in);
      assert_int_equal(in.valued, 1);
      assert_true(in.value >= -1.0f && in.value <= 1.0f);
    }
    pb_agent_destroy(&a);
  }
  /* X to move wins in column 1 at once. */
  pb_agent_t *ab = pb_agent_new(C4, "alphabeta:2", 1, &err);
  pb_state_t win = pos(C4, "121212");
  assert_int_equal(pb_agent_act(ab, &win, &err), 0);
  pb_agent_info_t in;
  pb_agent_info(ab, 0, &in);
  assert_int_equal(in.valued, 1);
  assert_true(in.value == 1.0f);
  pb_agent_destroy(&ab);
}

static void test_value_beam_specs(void **state) {
  run_fixture_t *f = *state;
  const char *p = f->ckpt[0];
  char bad[12][4300];
  snprintf(bad[0], sizeof bad[0], "beam:");
  snprintf(bad[1], sizeof bad[1], "beam");
  snprintf(bad[2], sizeof bad[2], "beam:%s,E=0", p);
  snprintf(bad[3], sizeof bad[3], "beam:%s,M=201", p);
  snprintf(bad[4], sizeof bad[4], "beam:%s,E=x", p);
  snprintf(bad[5], sizeof bad[5], "beam:%s,E=100001", p);
  snprintf(bad[6], sizeof bad[6], "beam:%s,M=0", p);
  snprintf(bad[7], sizeof bad[7], "beam:%s,E=", p);
  snprintf(bad[8], sizeof bad[8], "beam:%s,E=5x,M=2", p);
  snprintf(bad[9], sizeof bad[9], "beam:,E=5");
  snprintf(bad[10], sizeof bad[10], "value:");
  snprintf(bad[11], sizeof bad[11], "value");
  pb_err_t err;
  for (int i = 0; i < 12; i++) {
    pb_err_clear(&err);
    pb_agent_t *a = pb_agent_new(C4, bad[i], 1, &err);
    if (a != NULL) fail_msg("spec \"%s\" was accepted", bad[i]);
    if (err.code != PB_EINVAL)
      fail_msg("spec \"%s\": %s (%s)", bad[i], pb_err_name(err.code), err.msg);
    assert_true(err.msg[0] != '\0');
  }
  /* Settings in either order, at the depth limit (E=100000 would reserve
   * about 1 GiB of trees: too much for a test). */
  char spec[4300];
  snprintf(spec, sizeof spec, "beam:%s,M=1,E=1", p);
  pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
  if (a == NULL) fail_msg("%s: %s", spec, err.msg);
  pb_state_t s = pos(C4, "44");
  assert_true(pb_agent_act(a, &s, &err) >= 0);
  pb_agent_destroy(&a);
  snprintf(spec, sizeof spec, "beam:%s,E=2000,M=99", p);
  a = pb_agent_new(C4, spec, 1, &err);
  if (a == NULL) fail_msg("%s: %s", spec, err.msg);
  pb_agent_destroy(&a);
  /* A missing file is named without the settings; another game's
   * checkpoint is refused. */
  snprintf(spec, sizeof spec, "beam:%s/missing.pbck,E=5", f->dir);
  pb_err_clear(&err);
  assert_null(pb_agent_new(C4, spec, 1, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "missing.pbck"));
  const char *kinds[2] = {"value", "beam"};
  for (int k = 0; k < 2; k++) {
    snprintf(spec, sizeof spec, "%s:%s", kinds[k], p);
    pb_err_clear(&err);
    assert_null(pb_agent_new(T3, spec, 1, &err));
    assert_int_equal(err.code, PB_EMISMATCH);
  }
}

/* Beam search with a budget that expands the whole tree is exact minimax:
 * on Tic-Tac-Toe, whatever the (here untrained) networks say, it takes an
 * immediate win that is the highest legal action (ties would go to the
 * lowest), and plays an optimal move in every position from ply 3 on
 * (at most 1956 nodes below). So does value: for wins in one. */
static void test_beam_tictactoe(void **state) {
  (void)state;
  char dir[] = "/tmp/pb_test_agent_t3_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/t3.pbck", dir);
  pb_config_t cfg;
  pb_err_t err;
  pb_config_defaults(&cfg);
  if (pb_config_load_file(&cfg, PB_SOURCE_DIR "/configs/tictactoe-smoke.yaml",
                          &err) != 0)
    fail_msg("%s", err.msg);
  pb_learn_t *l = pb_learn_new(&cfg, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  pb_learn_destroy(&l);

  char spec[512];
  snprintf(spec, sizeof spec, "beam:%s,E=2000,M=9", path);
  pb_agent_t *beam = pb_agent_new(T3, spec, 1, &err);
  if (beam == NULL) fail_msg("%s", err.msg);
  snprintf(spec, sizeof spec, "value:%s", path);
  pb_agent_t *value = pb_agent_new(T3, spec, 1, &err);
  if (value == NULL) fail_msg("%s", err.msg);
  /* The networks behind the agents (probs play's eval), and the beam's
   * settings; none behind a baseline. */
  int E = -1, M = -1;
  assert_non_null(pb_agent_networks(beam, &E, &M));
  assert_int_equal(E, 2000);
  assert_int_equal(M, 9);
  assert_non_null(pb_agent_networks(value, &E, &M));
  assert_int_equal(E + M, 0);
  pb_agent_t *rnd = pb_agent_new(T3, "random", 1, &err);
  assert_non_null(rnd);
  E = M = -1;
  assert_null(pb_agent_networks(rnd, &E, &M));
  assert_int_equal(E + M, 0);
  assert_null(pb_agent_networks(NULL, NULL, NULL));
  pb_agent_destroy(&rnd);
  /* X (7, 8) against O (1, 5): cell 9 wins and every other move loses to
   * O's own 9; mirrored: X (9, 8) against O (3, 5), cell 7. */
  const struct {
    const char *moves;
    int win;
  } wins[2] = {{"7185", 8}, {"9385", 6}};
  for (int k = 0; k < 2; k++) {
    pb_state_t s = pos(T3, wins[k].moves);
    uint8_t legal[PB_MAX_ACTIONS];
    int n = T3->legal(&s, legal);
    assert_int_equal(legal[n - 1], wins[k].win);
    assert_int_equal(pb_agent_act(beam, &s, &err), wins[k].win);
    assert_int_equal(pb_agent_act(value, &s, &err), wins[k].win);
  }
  /* Minimax-optimal moves everywhere from ply 3, in one batch. */
  enum { N = 200 };
  pb_state_t s[N];
  int out[N], n = 0;
  pb_rng_t rng;
  pb_rng_seed(&rng, 31, 0);
  while (n < N) {
    pb_state_t p = random_position(T3, &rng, 7);
    if (T3->ply(&p) >= 3) s[n++] = p;
  }
  assert_int_equal(pb_agent_act_many(beam, s, N, 0, out, &err), 0);
  for (int i = 0; i < N; i++) {
    pb_state_t c = s[i];
    int done = 0;
    float r = T3->step(&c, out[i], &done);
    assert_int_equal(done ? (int)r : -t3_minimax(&c), t3_minimax(&s[i]));
  }
  pb_agent_destroy(&beam);
  pb_agent_destroy(&value);
  remove(path);
  rmdir(dir);
}

/* The accuracy pass looks at its stop flag between chunks of positions;
 * the moves are those of one batched call over the whole set (the chunks
 * are the network agents' own batches), for greedy Q and beam search. */
static void test_accuracy_in_chunks(void **state) {
  run_fixture_t *f = *state;
  pb_err_t err;
  pb_testset_t *ts = pb_testset_builtin(C4, &err);
  assert_non_null(ts);
  const size_t n = pb_testset_count(ts);
  assert_true(n > 256);
  int *one = calloc(n, sizeof *one), *chunked = calloc(n, sizeof *chunked);
  assert_non_null(one);
  assert_non_null(chunked);
  const char *kinds[] = {"checkpoint", "beam"};
  for (int k = 0; k < 2; k++) {
    char spec[4400];
    snprintf(spec, sizeof spec, "%s:%s%s", kinds[k], f->ckpt[1],
             k == 1 ? ",E=10,M=3" : "");
    pb_agent_t *a = pb_agent_new(C4, spec, 5, &err);
    assert_non_null(a);
    assert_int_equal(
        pb_agent_act_many(a, pb_testset_state(ts, 0), (int)n, 5, one, &err), 0);
    pb_agent_destroy(&a);
    volatile sig_atomic_t stop = 0;
    pb_accuracy_t acc;
    assert_int_equal(
        pb_accuracy_moves(ts, spec, 5, 1, &stop, &acc, chunked, &err), 0);
    assert_memory_equal(one, chunked, n * sizeof *one);
  }
  free(one);
  free(chunked);
  pb_testset_destroy(&ts);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_accuracy_in_chunks, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_checkpoint_agent_greedy, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_run_agent, run_setup, run_teardown),
      cmocka_unit_test_setup_teardown(test_network_agent_errors, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_agent_precision_and_unknown_settings,
                                      run_setup, run_teardown),
      cmocka_unit_test_setup_teardown(test_checkpoint_match, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_value_and_beam_agents, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_act_many, run_setup, run_teardown),
      cmocka_unit_test_setup_teardown(test_info_values, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_value_beam_specs, run_setup,
                                      run_teardown),
      cmocka_unit_test(test_beam_tictactoe),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
