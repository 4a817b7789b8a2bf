/* test_agent.c - agent specs, the baselines' tactics on positions with
 * known answers, and network agents read from a real (tiny) training run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "config.h"
#include "game.h"
#include "inproc.h"
#include "learn.h"
#include "match.h"
#include "nn.h"
#include "rng.h"

static const pb_game_t *C4 = &pb_game_connect4;
static const pb_game_t *T3 = &pb_game_tictactoe;

static pb_state_t pos(const pb_game_t *g, const char *moves) {
  pb_state_t s;
  pb_err_t err;
  if (g->parse(&s, moves, &err) != 0) fail_msg("parse %s: %s", moves, err.msg);
  return s;
}

/* How often each action is chosen over `n` seeds. */
static void histogram(const pb_game_t *g, const char *spec, const char *moves,
                      int n, int *count) {
  pb_state_t s = pos(g, moves);
  memset(count, 0, sizeof(int) * PB_MAX_ACTIONS);
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(g, spec, 0, &err);
  assert_non_null(a);
  for (int i = 0; i < n; i++) {
    pb_agent_reseed(a, (uint64_t)i);
    int act = pb_agent_act(a, &s, &err);
    assert_true(act >= 0 && act < g->num_actions);
    count[act]++;
  }
  pb_agent_destroy(&a);
  assert_null(a);
}

static void test_specs(void **state) {
  (void)state;
  pb_err_t err;
  const char *good[] = {"random", "lookahead:1", "lookahead:4", "alphabeta:1",
                        "alphabeta:12"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pb_agent_t *a = pb_agent_new(C4, good[i], 1, &err);
    assert_non_null(a);
    assert_string_equal(pb_agent_name(a), good[i]);
    assert_ptr_equal(pb_agent_game(a), C4);
    pb_agent_destroy(&a);
  }
  const char *bad[] = {"",
                       "rand",
                       "random:1",
                       "lookahead",
                       "lookahead:",
                       "lookahead:0",
                       "lookahead:5",
                       "lookahead:3x",
                       "lookahead:-1",
                       "alphabeta:13",
                       "alphabeta:x",
                       "Random",
                       "lookahead:99999999999999999999",
                       "checkpoint",
                       "checkpoint:",
                       "run",
                       "run:",
                       "run:@3",
                       "run:/tmp@",
                       "run:/tmp@x",
                       "run:/tmp@-1",
                       "run:/tmp@3x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    pb_agent_t *a = pb_agent_new(C4, bad[i], 1, &err);
    if (a != NULL) fail_msg("spec \"%s\" was accepted", bad[i]);
    assert_int_equal(err.code, PB_EINVAL);
    assert_true(err.msg[0] != '\0');
  }
  /* Unknown kinds list the valid ones. */
  assert_null(pb_agent_new(C4, "minimax:3", 1, &err));
  assert_non_null(strstr(err.msg, "lookahead:K"));
  assert_non_null(strstr(err.msg, "alphabeta:D"));
  assert_non_null(strstr(err.msg, "random"));
  assert_null(pb_agent_new(NULL, "random", 1, &err));
  assert_null(pb_agent_new(C4, NULL, 1, &err));
  char kinds[256];
  assert_true(pb_agent_kinds(kinds, sizeof kinds) > 10);
  assert_non_null(strstr(kinds, "random"));
  char tiny[8];
  assert_int_equal(pb_agent_kinds(tiny, sizeof tiny), 7);
  pb_agent_destroy(NULL);
  pb_agent_t *none = NULL;
  pb_agent_destroy(&none);
}

static void test_act_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(C4, "random", 1, &err);
  assert_non_null(a);
  pb_state_t s = pos(C4, "1212121"); /* X has won */
  assert_int_equal(pb_agent_act(a, &s, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "terminal"));
  assert_int_equal(pb_agent_act(a, NULL, &err), PB_EINVAL);
  assert_int_equal(pb_agent_act(NULL, &s, &err), PB_EINVAL);
  pb_agent_destroy(&a);
}

/* A kind that always answers action 0, legal or not, and counts frees. */
static int freed;
static int zero_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                    int n, pb_err_t *err) {
  (void)impl, (void)s, (void)legal, (void)n, (void)err;
  return 0;
}
static void zero_destroy(void *impl) {
  freed++;
  free(impl);
}
static const pb_agent_vtable_t zero_vt = {zero_act, NULL, zero_destroy, NULL};

static void test_wrap(void **state) {
  (void)state;
  pb_err_t err;
  freed = 0;
  pb_agent_t *a = pb_agent_wrap(C4, &zero_vt, malloc(16), "zero", &err);
  assert_non_null(a);
  assert_string_equal(pb_agent_name(a), "zero");
  pb_state_t s = pos(C4, "");
  assert_int_equal(pb_agent_act(a, &s, &err), 0);
  pb_agent_reseed(a, 5); /* no reseed function: nothing happens */
  s = pos(C4, "111111"); /* column 1 is full: 0 is illegal */
  assert_int_equal(pb_agent_act(a, &s, &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "zero"));
  pb_agent_destroy(&a);
  assert_int_equal(freed, 1);
  /* A failed wrap still frees the private state. */
  assert_null(pb_agent_wrap(C4, &zero_vt, malloc(16), NULL, &err));
  assert_int_equal(freed, 2);
}

static void test_random_uniform_and_seeded(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  histogram(C4, "random", "111111", 6000, count);
  assert_int_equal(count[0], 0);
  for (int a = 1; a < 7; a++) assert_true(count[a] > 850 && count[a] < 1150);

  /* Same seed, same moves; reseeding equals a fresh agent. */
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(C4, "random", 42, &err);
  pb_agent_t *b = pb_agent_new(C4, "random", 7, &err);
  pb_state_t s = pos(C4, "");
  int first[20];
  for (int i = 0; i < 20; i++) first[i] = pb_agent_act(a, &s, &err);
  pb_agent_reseed(b, 42);
  int differ = 0;
  for (int i = 0; i < 20; i++) differ += first[i] != pb_agent_act(b, &s, &err);
  assert_int_equal(differ, 0);
  pb_agent_reseed(b, 43);
  for (int i = 0; i < 20; i++) differ += first[i] != pb_agent_act(b, &s, &err);
  assert_true(differ > 5);
  pb_agent_destroy(&a);
  pb_agent_destroy(&b);
}

static void test_lookahead_tactics(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  /* X can win in column 1 (three stacked). */
  for (int k = 1; k <= 4; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    histogram(C4, spec, "121212", 30, count);
    assert_int_equal(count[0], 30);
  }
  /* O threatens column 2 (three stacked); X has no win: lookahead:1 does
   * not care, lookahead:2..4 always block. */
  histogram(C4, "lookahead:1", "123252", 140, count);
  assert_true(count[1] < 40);
  for (int k = 2; k <= 4; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    histogram(C4, spec, "123252", 30, count);
    assert_int_equal(count[1], 30);
  }
  /* X on columns 2 and 3 of the bottom row, O stacked on 6: column 4 makes
   * an open three, a double threat that wins in three plies. Only
   * lookahead:3 and deeper see it; lookahead:2 plays anything. */
  histogram(C4, "lookahead:2", "2636", 140, count);
  assert_true(count[3] < 50);
  histogram(C4, "lookahead:3", "2636", 30, count);
  assert_int_equal(count[3], 30);
  histogram(C4, "lookahead:4", "2636", 30, count);
  assert_int_equal(count[3], 30);
  /* Ties are broken at random: from the empty board every move is "0". */
  histogram(C4, "lookahead:3", "", 700, count);
  for (int a = 0; a < 7; a++) assert_true(count[a] > 60);
}

static void test_alphabeta_tactics(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  for (int d = 1; d <= 6; d++) {
    char spec[32];
    snprintf(spec, sizeof spec, "alphabeta:%d", d);
    histogram(C4, spec, "121212", 10, count); /* win now */
    assert_int_equal(count[0], 10);
    if (d >= 2) {
      histogram(C4, spec, "123252", 10, count); /* block */
      assert_int_equal(count[1], 10);
    }
    if (d >= 3) {
      histogram(C4, spec, "2636", 10, count); /* double threat */
      assert_int_equal(count[3], 10);
    }
  }
  /* Center first from the empty board (the heuristic prefers it). */
  histogram(C4, "alphabeta:4", "", 10, count);
  assert_int_equal(count[3], 10);
  /* Tic-Tac-Toe: take the win rather than block, block when needed. */
  histogram(T3, "alphabeta:9", "1425", 10, count); /* X: 1,2; O: 4,5 */
  assert_int_equal(count[2], 10);
  histogram(T3, "alphabeta:9", "152", 10, count); /* O must block 3 */
  assert_int_equal(count[2], 10);
  pb_err_t err;
  assert_null(
      pb_agent_new(pb_game_by_id(PB_GAME_TICTACTOE), "alphabeta:0", 1, &err));
}

/* Full-depth alpha-beta plays Tic-Tac-Toe perfectly: it never loses, to
 * random play or to itself, from either side. */
static void test_alphabeta_tictactoe_perfect(void **state) {
  (void)state;
  pb_err_t err;
  pb_agent_t *ab = pb_agent_new(T3, "alphabeta:9", 3, &err);
  pb_agent_t *ab2 = pb_agent_new(T3, "alphabeta:9", 4, &err);
  pb_agent_t *rnd = pb_agent_new(T3, "random", 5, &err);
  assert_non_null(ab);
  assert_non_null(ab2);
  assert_non_null(rnd);
  int ab_wins = 0;
  for (int game = 0; game < 60; game++) {
    pb_agent_t *p[2];
    int ab_side = game % 2;
    p[ab_side] = ab;
    p[1 - ab_side] = game < 40 ? rnd : ab2;
    pb_state_t s;
    T3->reset(&s);
    int done = 0, ply = 0;
    float r = 0;
    while (!done) {
      int a = pb_agent_act(p[ply % 2], &s, &err);
      assert_true(a >= 0);
      r = T3->step(&s, a, &done);
      ply++;
    }
    int mover = (ply - 1) % 2;
    if (r > 0) {
      assert_int_equal(mover, ab_side); /* only alphabeta ever wins */
      ab_wins++;
    }
    if (game >= 40) assert_true(r == 0.0f); /* perfect vs perfect: draw */
  }
  assert_true(ab_wins > 25);
  pb_agent_destroy(&ab);
  pb_agent_destroy(&ab2);
  pb_agent_destroy(&rnd);
}

/* Plain depth-k negamax over outcomes, no pruning: the reference for
 * lookahead:k. */
static int plain_negamax(const pb_game_t *g, const pb_state_t *s, int k) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts), best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[i], &done);
    int v = done ? (int)r : k > 1 ? -plain_negamax(g, &c, k - 1) : 0;
    if (v > best) best = v;
  }
  return best;
}

static pb_state_t random_position(const pb_game_t *g, pb_rng_t *rng,
                                  int max_plies) {
  for (;;) {
    pb_state_t s;
    g->reset(&s);
    int plies = (int)pb_rng_below(rng, (uint32_t)max_plies + 1), done = 0;
    for (int p = 0; p < plies && !done; p++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int n = g->legal(&s, acts);
      g->step(&s, acts[pb_rng_below(rng, (uint32_t)n)], &done);
    }
    if (!done) return s;
  }
}

/* On random positions, lookahead:k only plays moves of best depth-k value
 * (as plain negamax finds them), and does vary among them. */
static void test_lookahead_matches_plain_negamax(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 17, 0);
  pb_err_t err;
  for (int k = 1; k <= 3; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    pb_agent_t *a = pb_agent_new(C4, spec, 0, &err);
    assert_non_null(a);
    int varied = 0, tactical = 0;
    for (int t = 0; t < 150; t++) {
      pb_state_t s = random_position(C4, &rng, 30);
      uint8_t acts[PB_MAX_ACTIONS];
      int n = C4->legal(&s, acts), value[PB_MAX_ACTIONS], best = -2;
      for (int i = 0; i < n; i++) {
        pb_state_t c = s;
        int done = 0;
        float r = C4->step(&c, acts[i], &done);
        value[acts[i]] = done    ? (int)r
                         : k > 1 ? -plain_negamax(C4, &c, k - 1)
                                 : 0;
        if (value[acts[i]] > best) best = value[acts[i]];
      }
      int nbest = 0;
      for (int i = 0; i < n; i++) nbest += value[acts[i]] == best;
      tactical += nbest < n;
      uint32_t seen = 0;
      for (int seed = 0; seed < 12; seed++) {
        pb_agent_reseed(a, (uint64_t)seed);
        int m = pb_agent_act(a, &s, &err);
        assert_true(m >= 0);
        if (value[m] != best)
          fail_msg("%s chose %d of value %d, best %d", spec, m, value[m], best);
        seen |= 1u << m;
      }
      varied += nbest > 1 && __builtin_popcount(seen) > 1;
    }
    assert_true(varied > 50);
    assert_true(tactical > 5); /* the positions do test something */
    pb_agent_destroy(&a);
  }
}

/* Exact minimax value of a Tic-Tac-Toe position (side to move). */
static int t3_minimax(const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = T3->legal(s, acts), best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = T3->step(&c, acts[i], &done);
    int v = done ? (int)r : -t3_minimax(&c);
    if (v > best) best = v;
  }
  return best;
}

/* Full-depth alphabeta only plays minimax-optimal moves. */
static void test_alphabeta_optimal_tictactoe(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 23, 0);
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(T3, "alphabeta:9", 0, &err);
  assert_non_null(a);
  for (int t = 0; t < 300; t++) {
    pb_state_t s = random_position(T3, &rng, 7);
    int best = t3_minimax(&s);
    pb_agent_reseed(a, (uint64_t)t);
    int m = pb_agent_act(a, &s, &err);
    assert_true(m >= 0);
    pb_state_t c = s;
    int done = 0;
    float r = T3->step(&c, m, &done);
    assert_int_equal(done ? (int)r : -t3_minimax(&c), best);
  }
  pb_agent_destroy(&a);
}

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
  pb_inproc_opts_t o = {0, NULL, 0};
  if (pb_inproc_run(&cfg, NULL, &o, &err) != 0) {
    fprintf(stderr, "fixture: %s\n", err.msg);
    return -1;
  }
  for (int v = 1; v <= 2; v++)
    pb_inproc_ckpt_path(f->dir, (unsigned long long)v, f->ckpt[v - 1],
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
  pb_learn_t *l = pb_learn_open(f->ckpt[1], "cpu", NULL, &err);
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
      assert_int_equal(m, greedy_reference(pb_learn_q(l), &s));
      uint8_t legal[PB_MAX_ACTIONS];
      int n = C4->legal(&s, legal);
      C4->step(&s, legal[pb_rng_below(&rng, (uint32_t)n)], &done);
    }
  }
  pb_learn_destroy(&l);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_specs),
      cmocka_unit_test(test_act_errors),
      cmocka_unit_test(test_wrap),
      cmocka_unit_test(test_random_uniform_and_seeded),
      cmocka_unit_test(test_lookahead_tactics),
      cmocka_unit_test(test_alphabeta_tactics),
      cmocka_unit_test(test_alphabeta_tictactoe_perfect),
      cmocka_unit_test(test_lookahead_matches_plain_negamax),
      cmocka_unit_test(test_alphabeta_optimal_tictactoe),
      cmocka_unit_test_setup_teardown(test_checkpoint_agent_greedy, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_run_agent, run_setup, run_teardown),
      cmocka_unit_test_setup_teardown(test_network_agent_errors, run_setup,
                                      run_teardown),
      cmocka_unit_test_setup_teardown(test_checkpoint_match, run_setup,
                                      run_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
