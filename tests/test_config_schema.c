/* test_config_schema.c - the keys of common/run/config_schema.c: their
 * defaults, ranges, enums and checks, key by key for the sections that
 * have rules of their own (run retention, the algorithm's section, the
 * targets' search, MCTS efficiency, the device per role, the
 * evaluator's lists), and the list --keys prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algos.h"
#include "config.h"
#include "err.h"
#include "game.h"

#include "config_fixtures.h"

static void test_keep_keys(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_int_equal(c.run.keep_last, 10);
  assert_int_equal(c.run.keep_every, 10);
  assert_int_equal(pb_config_check(&c, &err), 0);
  assert_int_equal(
      pb_config_load_string(&c, "run:\n  keep_last: 0\n  keep_every: 0\n",
                            &err),
      0);
  assert_int_equal(c.run.keep_last, 0);
  assert_int_equal(c.run.keep_every, 0);
  assert_int_equal(pb_config_set(&c, "run.keep_last", "1", &err), 0);
  assert_int_equal(pb_config_set(&c, "run.keep_every", "1000000", &err), 0);
  assert_int_equal(c.run.keep_last, 1);
  assert_int_equal(c.run.keep_every, 1000000);
  assert_int_equal(pb_config_check(&c, &err), 0);
  char buf[32];
  assert_int_equal(pb_config_get(&c, "run.keep_every", buf, sizeof buf, &err),
                   0);
  assert_string_equal(buf, "1000000");
  expect_set_error("run.keep_last=-1", "run.keep_last", "out of range");
  expect_set_error("run.keep_every=1000001", "run.keep_every", "out of range");
  expect_set_error("run.keep_last=ten", "run.keep_last", NULL);
  expect_load_error("run:\n  keep_every: -3\n", "run.keep_every",
                    "out of range", NULL);
  /* a field set out of range directly is caught by the check */
  pb_config_defaults(&c);
  c.run.keep_last = -5;
  pb_err_clear(&err);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "run.keep_last");
  /* --keys documents both with their defaults */
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  assert_non_null(f);
  pb_config_print_keys(f);
  fclose(f);
  assert_msg_has(out, "run.keep_last");
  assert_msg_has(out, "run.keep_every");
  assert_msg_has(out, "0 = keep every checkpoint");
  free(out);
}

static void test_print_keys(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  pb_config_print_keys(f);
  fclose(f);
  const char *keys[] = {"game",
                        "seed",
                        "run.dir",
                        "train.replay_capacity",
                        "search.expansions",
                        "model.q.dense_units",
                        "net.item_states",
                        "eval.every",
                        "log.level"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    assert_msg_has(buf, keys[i]);
  assert_msg_has(buf, "1..100000");
  assert_msg_has(buf, "cpu|cuda|auto");
  free(buf);
}

/* algorithm: probs (the default) or alphazero; alphazero refuses
 * train.v_search_mix; the mcts keys
 * load and check like every key. */
static void test_algorithm(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_string_equal(c.algorithm, "probs");
  assert_int_equal(pb_algos_of(&c)->nets, PB_NETS_VQ);
  assert_int_equal(pb_config_load_string(&c,
                                         "algorithm: alphazero\n"
                                         "mcts: {simulations: 64, c_puct: 2.5, "
                                         "temp_moves: 3, discount: true}\n"
                                         "eval: {mcts_simulations: 32}\n",
                                         &err),
                   0);
  assert_int_equal(pb_algos_of(&c)->nets, PB_NETS_PV);
  assert_int_equal(c.mcts.simulations, 64);
  assert_true(c.mcts.c_puct == 2.5);
  assert_int_equal(c.mcts.temp_moves, 3);
  assert_true(c.mcts.discount);
  assert_int_equal(c.eval.mcts_simulations, 32);
  assert_int_equal(pb_config_check(&c, &err), 0);
  c.train.v_search_mix = 0.5;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "train.v_search_mix"));
  assert_non_null(strstr(err.msg, "alphazero"));
  pb_config_defaults(&c);
  assert_int_equal(pb_config_set(&c, "algorithm", "muzero", &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "algorithm"));
  assert_int_equal(pb_config_set(&c, "mcts.simulations", "0", &err),
                   PB_ECONFIG);
  assert_int_equal(pb_config_set(&c, "mcts.c_puct", "-1", &err), PB_ECONFIG);
  assert_false(c.mcts.discount); /* off by default */
  assert_int_equal(pb_config_set(&c, "mcts.discount", "maybe", &err),
                   PB_ECONFIG);
  /* round trip through YAML, as checkpoints store it */
  pb_config_defaults(&c);
  assert_int_equal(pb_config_set(&c, "algorithm", "alphazero", &err), 0);
  assert_int_equal(pb_config_set(&c, "mcts.discount", "true", &err), 0);
  char *yaml = NULL;
  assert_int_equal(pb_config_to_yaml(&c, &yaml, &err), 0);
  pb_config_t d;
  pb_config_defaults(&d);
  assert_int_equal(pb_config_load_string(&d, yaml, &err), 0);
  assert_memory_equal(&c, &d, sizeof c);
  free(yaml);
}

/* The AlphaZero efficiency keys (mcts.root and gumbel_*, the playout
 * cap, forced playouts): off by default (puct, full_fraction 1, no forced
 * playouts), loaded from YAML, range-checked, and the two cross-key rules
 * (a cap needs small_simulations in 1..simulations; forced playouts are a
 * puct rule) refused with messages naming the keys. */
/* search.algorithm: beam by default; abnet with its node budget and a
 * depth of 2..65; refused for the other algorithms and for M = 1, naming
 * the key; an unknown search is refused by the enum. */
static void test_target_search_keys(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  char buf[96];
  pb_config_defaults(&c);
  assert_string_equal(c.search.algorithm, "beam");
  assert_int_equal(c.search.nodes, 100);
  assert_false(pb_config_abnet_targets(&c));
  assert_string_equal(pb_config_search_desc(&c, buf, sizeof buf),
                      "beam search (E=30, M=3)");
  assert_int_equal(pb_config_load_string(
                       &c, "search: {algorithm: abnet, nodes: 40}\n", &err),
                   0);
  assert_true(pb_config_abnet_targets(&c));
  assert_int_equal(pb_config_check(&c, &err), 0);
  assert_string_equal(pb_config_search_desc(&c, buf, sizeof buf),
                      "abnet search (nodes=40 a move, M=3)");
  c.search.max_depth = 1;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "search.max_depth (1)"));
  c.search.max_depth = 66;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  c.search.max_depth = 65;
  assert_int_equal(pb_config_check(&c, &err), 0);
  assert_int_equal(pb_config_set(&c, "algorithm", "alphazero", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "search.algorithm"));
  assert_int_equal(pb_config_set(&c, "search.algorithm", "mcts", &err),
                   PB_ECONFIG);
  assert_non_null(strstr(err.msg, "search.algorithm"));
  assert_int_equal(pb_config_set(&c, "search.nodes", "0", &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "search.nodes"));
}

static void test_mcts_efficiency_keys(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_string_equal(c.mcts.root, "puct");
  assert_int_equal(c.mcts.gumbel_considered, 16);
  assert_true(c.mcts.gumbel_c_visit == 50 && c.mcts.gumbel_c_scale == 1);
  assert_true(c.mcts.full_fraction == 1.0);
  assert_int_equal(c.mcts.small_simulations, 0);
  assert_false(c.mcts.forced_playouts);
  assert_int_equal(pb_config_check(&c, &err), 0);
  assert_int_equal(
      pb_config_load_string(&c,
                            "algorithm: alphazero\n"
                            "mcts: {simulations: 64, root: gumbel, "
                            "gumbel_considered: 8, gumbel_c_visit: 40, "
                            "gumbel_c_scale: 0.1, full_fraction: 0.25, "
                            "small_simulations: 16}\n",
                            &err),
      0);
  assert_string_equal(c.mcts.root, "gumbel");
  assert_int_equal(c.mcts.gumbel_considered, 8);
  assert_true(c.mcts.gumbel_c_visit == 40 && c.mcts.gumbel_c_scale == 0.1);
  assert_true(c.mcts.full_fraction == 0.25);
  assert_int_equal(c.mcts.small_simulations, 16);
  assert_int_equal(pb_config_check(&c, &err), 0);
  /* forced playouts are a rule of the puct root */
  c.mcts.forced_playouts = true;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "mcts.forced_playouts"));
  assert_int_equal(pb_config_set(&c, "mcts.root", "puct", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), 0);
  /* the cap's fast budget: set, and at most the full one */
  c.mcts.small_simulations = 0;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "mcts.small_simulations"));
  assert_non_null(strstr(err.msg, "mcts.full_fraction"));
  c.mcts.small_simulations = 65;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  c.mcts.full_fraction = 1.0; /* no cap: small_simulations is unused */
  assert_int_equal(pb_config_check(&c, &err), 0);
  /* ranges */
  const char *bad[][2] = {
      {"mcts.root", "alphabeta"},       {"mcts.gumbel_considered", "0"},
      {"mcts.gumbel_c_visit", "0"},     {"mcts.gumbel_c_scale", "-1"},
      {"mcts.full_fraction", "1.5"},    {"mcts.full_fraction", "-0.1"},
      {"mcts.small_simulations", "-1"}, {"mcts.forced_playouts", "sometimes"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_int_equal(pb_config_set(&c, bad[i][0], bad[i][1], &err), PB_ECONFIG);
    assert_non_null(strstr(err.msg, bad[i][0]));
  }
}

/* Each role's device: its own key, else model.device, else its default
 * (actors the CPU, the others auto); the key that decided is named. */
static void test_device_per_role(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  const char *key;
  assert_string_equal(pb_config_device(&c, PB_DEVICE_LEARNER, &key), "auto");
  assert_string_equal(key, "model.learner_device");
  assert_string_equal(pb_config_device(&c, PB_DEVICE_ACTOR, &key), "cpu");
  assert_string_equal(key, "model.actor_device");
  assert_string_equal(pb_config_device(&c, PB_DEVICE_SEARCHER, NULL), "auto");
  /* model.device decides for every role left at auto. */
  assert_int_equal(pb_config_apply_override(&c, "model.device=cuda", &err), 0);
  assert_string_equal(pb_config_device(&c, PB_DEVICE_ACTOR, &key), "cuda");
  assert_string_equal(key, "model.device");
  assert_string_equal(pb_config_device(&c, PB_DEVICE_LEARNER, NULL), "cuda");
  /* A role's own key wins. */
  assert_int_equal(
      pb_config_apply_override(&c, "model.actor_device=cpu", &err), 0);
  assert_int_equal(
      pb_config_apply_override(&c, "model.searcher_device=cpu", &err), 0);
  assert_string_equal(pb_config_device(&c, PB_DEVICE_ACTOR, &key), "cpu");
  assert_string_equal(key, "model.actor_device");
  assert_string_equal(pb_config_device(&c, PB_DEVICE_SEARCHER, &key), "cpu");
  assert_string_equal(key, "model.searcher_device");
  assert_string_equal(pb_config_device(&c, PB_DEVICE_LEARNER, NULL), "cuda");
  assert_int_equal(
      pb_config_apply_override(&c, "model.learner_device=cpu", &err), 0);
  assert_string_equal(pb_config_device(&c, PB_DEVICE_LEARNER, NULL), "cpu");
  /* Bad values name the key and the choices. */
  assert_int_equal(pb_config_apply_override(&c, "model.actor_device=gpu", &err),
                   PB_ECONFIG);
  assert_non_null(strstr(err.msg, "model.actor_device"));
  assert_non_null(strstr(err.msg, "cpu|cuda|auto"));
}

/* eval.opponents and eval.anchors are checked here, the one place: the
 * list's items, their number, repeats; each anchor's form, rating and
 * opponent. pb_config_opponents and pb_config_anchor read them back. */
static void test_eval_lists(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_int_equal(pb_config_set(&c, "eval.opponents",
                                 "random,lookahead:2,alphabeta:3", &err),
                   0);
  assert_int_equal(pb_config_check(&c, &err), 0);
  char opp[PB_CONFIG_MAX_OPPONENTS][PB_CONFIG_OPPONENT_MAX];
  assert_int_equal(pb_config_opponents(&c, opp), 3);
  assert_string_equal(opp[1], "lookahead:2");
  static const struct {
    const char *opponents, *anchors, *says;
  } bad[] = {
      {"random,,greedy", "", "empty item"},
      {"random,random", "", "listed twice"},
      {"random,look ahead", "", "not of the form"},
      {"a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,b0,b1,b2,b3,b4,b5,b6", "",
       "more than 16"},
      {"random", "random=12x", "eval.anchors: anchor 'random=12x'"},
      {"random", "random=1e9", "1e9"},
      {"random", "greedy=1200", "'greedy' is not one of the opponents"},
      {"random", "random=1000,,", "empty or too long item"},
      {"random", "=5", "expected SPEC=RATING"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_config_defaults(&c);
    snprintf(c.eval.opponents, sizeof c.eval.opponents, "%s",
             bad[i].opponents);
    snprintf(c.eval.anchors, sizeof c.eval.anchors, "%s", bad[i].anchors);
    pb_err_clear(&err);
    if (pb_config_check(&c, &err) != PB_ECONFIG ||
        strstr(err.msg, bad[i].says) == NULL)
      fail_msg("case %zu: '%s'", i, err.msg);
  }
  char longer[PB_CONFIG_OPPONENT_MAX + 8];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  pb_config_defaults(&c);
  snprintf(c.eval.opponents, sizeof c.eval.opponents, "%s", longer);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "longer than 63"));
  size_t len;
  double r;
  assert_int_equal(pb_config_anchor("lookahead:2=1450", &len, &r, &err), 0);
  assert_true(len == 11 && r == 1450);
  assert_int_equal(pb_config_anchor("random=none", &len, &r, &err), 0);
  assert_true(len == 6 && isnan(r));
  assert_int_equal(pb_config_anchor("random", &len, &r, &err), PB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keep_keys),
      cmocka_unit_test(test_print_keys),
      cmocka_unit_test(test_algorithm),
      cmocka_unit_test(test_target_search_keys),
      cmocka_unit_test(test_mcts_efficiency_keys),
      cmocka_unit_test(test_device_per_role),
      cmocka_unit_test(test_eval_lists),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
