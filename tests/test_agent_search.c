/* test_agent_search.c - the searching agents over a PROBS checkpoint's V
 * and Q: abnet: (alpha-beta, common/search/abnet.h) and mcts: with a PROBS
 * checkpoint (PUCT with priors softmax(Q / T)). Untrained checkpoints of
 * every game (pb_learn_new, saved): legal moves only, batched moves equal
 * to single ones, the evaluation budget kept, a whole-tree budget
 * perfect in Tic-Tac-Toe; bad specs name themselves; AlphaZero and
 * other games' checkpoints are refused. The searches themselves are
 * tested against exact values in test_abnet.c and test_mcts.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "agent_fixtures.h"
#include "ckpt_fixtures.h"
#include "config.h"
#include "game.h"
#include "learn.h"
#include "rng.h"

static const pb_game_t *OTH = &pb_game_othello;
static const pb_game_t *TOG = &pb_game_toguz;

static int setup(void **state) { return ckpts_setup(state, "agent_search"); }
static int teardown(void **state) { return ckpts_teardown(state); }

/* Every kind in every game: a game against random play (at most 40
 * plies) with legal moves only, and a batch of random positions answered
 * as one at a time; abnet's nodes= bounds its evaluations per move. */
static void test_legal_moves_all_games(void **state) {
  ckpts_t *f = *state;
  const pb_game_t *games[4] = {T3, C4, OTH, TOG};
  const char *specs[5] = {"abnet:%s,nodes=60", "abnet:%s,nodes=150,batch=0,qplies=2",
                          "abnet:%s,time=20,depth=3", "mcts:%s,N=24",
                          "mcts:%s,N=16,T=0.25,c=2"};
  pb_err_t err;
  for (int gi = 0; gi < 4; gi++) {
    const pb_game_t *g = games[gi];
    for (int k = 0; k < 5; k++) {
      char spec[512];
      snprintf(spec, sizeof spec, specs[k], f->path[gi]);
      pb_agent_t *a = pb_agent_new(g, spec, 7, &err);
      if (a == NULL) fail_msg("%s: %s", spec, err.msg);
      pb_agent_t *rnd = pb_agent_new(g, "random", 3, &err);
      assert_non_null(rnd);
      assert_non_null(pb_agent_networks(a, NULL, NULL));
      pb_state_t s;
      g->reset(&s);
      int done = 0, moves = 0;
      for (int p = 0; p < 40 && !done; p++) {
        int mv = pb_agent_act(p % 2 ? rnd : a, &s, &err);
        if (mv < 0 || !is_legal(g, &s, mv))
          fail_msg("%s in %s: move %d (%s)", spec, g->name, mv, err.msg);
        moves += p % 2 == 0;
        g->step(&s, mv, &done);
      }
      uint64_t ev = pb_agent_evaluations(a);
      assert_true(ev > 0);
      if (k == 0) assert_true(ev <= 60u * (uint64_t)moves);
      if (k == 1) assert_true(ev <= 150u * (uint64_t)moves);
      /* Batched: what single moves choose (time= aside: the clock). */
      if (k != 2) batched_equals_single(a, g, 17 + (uint64_t)gi);
      pb_agent_destroy(&a);
      pb_agent_destroy(&rnd);
    }
  }
}

/* abnet with a budget that covers Tic-Tac-Toe's tree plays perfectly
 * whatever the (untrained) networks say. */
static void test_abnet_tictactoe_perfect(void **state) {
  ckpts_t *f = *state;
  char spec[512];
  snprintf(spec, sizeof spec, "abnet:%s,nodes=200000", f->path[0]);
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(T3, spec, 1, &err);
  if (a == NULL) fail_msg("%s", err.msg);
  enum { N = 60 };
  pb_state_t s[N];
  int out[N];
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  for (int i = 0; i < N; i++) s[i] = random_position(T3, &rng, 7);
  T3->reset(&s[0]);
  assert_int_equal(pb_agent_act_many(a, s, N, 0, out, &err), 0);
  t3_assert_optimal(s, out, N);
  pb_agent_destroy(&a);
}

/* Bad specs: PB_EINVAL and a message that names the spec's kind and, for
 * a bad setting, the setting. AlphaZero checkpoints: abnet and mcts with
 * T= refuse them, mcts plays them; another game's checkpoint is refused. */
static void test_bad_specs(void **state) {
  ckpts_t *f = *state;
  const char *p = f->path[1];
  static const struct {
    const char *fmt, *names;
  } bad[] = {
      {"abnet:", "abnet"},
      {"abnet", "abnet"},
      {"abnet:%s,nodes=0", "nodes="},
      {"abnet:%s,nodes=x", "nodes="},
      {"abnet:%s,nodes=100000001", "nodes="},
      {"abnet:%s,nodes=", "nodes="},
      {"abnet:%s,time=0", "time="},
      {"abnet:%s,time=-5", "time="},
      {"abnet:%s,depth=65", "depth="},
      {"abnet:%s,qplies=0", "qplies="},
      {"abnet:%s,batch=2", "batch="},
      {"abnet:,nodes=5", "abnet"},
      {"mcts:%s,T=0", "T="},
      {"mcts:%s,T=x", "T="},
      {"mcts:%s,c=0", "c="},
      {"mcts:%s,N=0", "N="},
      {"mcts:", "mcts"},
  };
  pb_err_t err;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char spec[512];
    snprintf(spec, sizeof spec, bad[i].fmt, p);
    pb_err_clear(&err);
    pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
    if (a != NULL) fail_msg("spec \"%s\" was accepted", spec);
    if (err.code != PB_EINVAL || strstr(err.msg, bad[i].names) == NULL)
      fail_msg("spec \"%s\": %s (%s)", spec, pb_err_name(err.code), err.msg);
  }
  /* Settings in any order (the path from --model too); the kinds list
   * names abnet. */
  char spec[512], list[1024];
  pb_agent_spec_with_model("abnet,batch=0,depth=2,nodes=30,qplies=1", p, spec,
                           sizeof spec);
  assert_int_equal(strncmp(spec, "abnet:", 6), 0);
  assert_non_null(strstr(spec, ",batch=0,depth=2,nodes=30,qplies=1"));
  pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
  if (a == NULL) fail_msg("%s: %s", spec, err.msg);
  pb_agent_destroy(&a);
  pb_agent_kinds(list, sizeof list);
  assert_non_null(strstr(list, "abnet:PATH"));
  /* AlphaZero checkpoint. */
  const char *az = f->path[4];
  const char *refuse[2] = {"abnet:%s,nodes=10", "mcts:%s,N=10,T=0.5"};
  for (int i = 0; i < 2; i++) {
    snprintf(spec, sizeof spec, refuse[i], az);
    pb_err_clear(&err);
    assert_null(pb_agent_new(T3, spec, 1, &err));
    assert_int_equal(err.code, PB_EMISMATCH);
    assert_non_null(strstr(err.msg, i == 0 ? "mcts:" : "T="));
  }
  snprintf(spec, sizeof spec, "mcts:%s,N=10", az);
  a = pb_agent_new(T3, spec, 1, &err);
  if (a == NULL) fail_msg("%s: %s", spec, err.msg);
  pb_state_t s = pos(T3, "5");
  assert_true(is_legal(T3, &s, pb_agent_act(a, &s, &err)));
  pb_agent_destroy(&a);
  /* Another game's checkpoint. */
  snprintf(spec, sizeof spec, "abnet:%s", f->path[0]);
  pb_err_clear(&err);
  assert_null(pb_agent_new(C4, spec, 1, &err));
  assert_int_equal(err.code, PB_EMISMATCH);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_legal_moves_all_games),
      cmocka_unit_test(test_abnet_tictactoe_perfect),
      cmocka_unit_test(test_bad_specs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
