/* test_agent_bpip.c - the bpip: agent (BPIP search over a PROBS
 * checkpoint's V, common/search/bpip.h). Untrained checkpoints of every game
 * (pb_learn_new, saved): legal moves only, batched moves equal to single
 * ones, N= bounds the evaluations per move, a whole-tree budget perfect in
 * Tic-Tac-Toe; bad specs name themselves; AlphaZero and other games'
 * checkpoints are refused. The search itself is tested in test_bpip.c. */
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

static int setup(void **state) { return ckpts_setup(state, "agent_bpip"); }
static int teardown(void **state) { return ckpts_teardown(state); }

/* Every game: a game against random play (at most 40 plies) with legal
 * moves only and at most N evaluations per move, and a batch of random
 * positions answered as one at a time. */
static void test_legal_moves_all_games(void **state) {
  ckpts_t *f = *state;
  const pb_game_t *games[4] = {T3, C4, &pb_game_othello, &pb_game_toguz};
  const char *specs[2] = {"bpip:%s,N=60", "bpip:%s,gulp=0.2,sigma=1,N=150"};
  const uint64_t budget[2] = {60, 150};
  pb_err_t err;
  for (int gi = 0; gi < 4; gi++) {
    const pb_game_t *g = games[gi];
    for (int k = 0; k < 2; k++) {
      char spec[512];
      snprintf(spec, sizeof spec, specs[k], f->path[gi]);
      pb_agent_t *a = pb_agent_new(g, spec, 7, &err);
      if (a == NULL) fail_msg("%s: %s", spec, err.msg);
      pb_agent_t *rnd = pb_agent_new(g, "random", 3, &err);
      assert_non_null(rnd);
      assert_non_null(pb_agent_networks(a, NULL, NULL));
      assert_string_equal(pb_agent_name(a), spec);
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
      assert_true(ev <= budget[k] * (uint64_t)moves);
      batched_equals_single(a, g, 17 + (uint64_t)gi);
      pb_agent_destroy(&a);
      pb_agent_destroy(&rnd);
    }
  }
}

/* A budget that covers Tic-Tac-Toe's tree from 3 plies on: perfect play
 * whatever the (untrained) networks say. */
static void test_tictactoe_perfect(void **state) {
  ckpts_t *f = *state;
  char spec[512];
  snprintf(spec, sizeof spec, "bpip:%s,N=100000,sigma=1,gulp=0.1", f->path[0]);
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(T3, spec, 1, &err);
  if (a == NULL) fail_msg("%s", err.msg);
  enum { N = 40 };
  pb_state_t s[N];
  int out[N];
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  for (int i = 0; i < N; i++) {
    do {
      s[i] = random_position(T3, &rng, 7);
    } while (T3->ply(&s[i]) < 3);
  }
  assert_int_equal(pb_agent_act_many(a, s, N, 0, out, &err), 0);
  t3_assert_optimal(s, out, N);
  pb_agent_destroy(&a);
}

/* Bad specs: PB_EINVAL and a message that names the spec's kind and, for
 * a bad setting, the setting; an unknown or repeated setting is refused.
 * AlphaZero and another game's checkpoints: PB_EMISMATCH. */
static void test_bad_specs(void **state) {
  ckpts_t *f = *state;
  const char *p = f->path[1];
  static const struct {
    const char *fmt, *names;
  } bad[] = {
      {"bpip:", "bpip"},
      {"bpip", "bpip"},
      {"bpip:%s,N=0", "N="},
      {"bpip:%s,N=x", "N="},
      {"bpip:%s,N=100001", "N="},
      {"bpip:%s,N=", "N="},
      {"bpip:%s,sigma=0", "sigma="},
      {"bpip:%s,sigma=4.5", "sigma="},
      {"bpip:%s,sigma=nan", "sigma="},
      {"bpip:%s,gulp=-0.1", "gulp="},
      {"bpip:%s,gulp=0.6", "gulp="},
      {"bpip:%s,depth=3", "unknown or repeated setting \"depth=3\""},
      {"bpip:%s,N=5,N=6", "unknown or repeated setting \"N=5\""},
      {"bpip:,N=5", "bpip"},
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
  /* Settings in any order, the path from --model; the kinds list. */
  char spec[512], list[1024];
  pb_agent_spec_with_model("bpip,gulp=0.05,sigma=0.3,N=30", p, spec,
                           sizeof spec);
  assert_int_equal(strncmp(spec, "bpip:", 5), 0);
  assert_non_null(strstr(spec, ",gulp=0.05,sigma=0.3,N=30"));
  pb_agent_t *a = pb_agent_new(C4, spec, 1, &err);
  if (a == NULL) fail_msg("%s: %s", spec, err.msg);
  pb_state_t s = pos(C4, "4453");
  assert_true(is_legal(C4, &s, pb_agent_act(a, &s, &err)));
  assert_true(pb_agent_evaluations(a) <= 30);
  pb_agent_destroy(&a);
  pb_agent_kinds(list, sizeof list);
  assert_non_null(strstr(list, "bpip:PATH"));
  /* An AlphaZero checkpoint has no V. */
  snprintf(spec, sizeof spec, "bpip:%s,N=10", f->path[4]);
  pb_err_clear(&err);
  assert_null(pb_agent_new(T3, spec, 1, &err));
  assert_int_equal(err.code, PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "alphazero"));
  assert_non_null(strstr(err.msg, "BPIP"));
  /* Another game's checkpoint. */
  snprintf(spec, sizeof spec, "bpip:%s", f->path[0]);
  pb_err_clear(&err);
  assert_null(pb_agent_new(C4, spec, 1, &err));
  assert_int_equal(err.code, PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "tictactoe"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_legal_moves_all_games),
      cmocka_unit_test(test_tictactoe_perfect),
      cmocka_unit_test(test_bad_specs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
