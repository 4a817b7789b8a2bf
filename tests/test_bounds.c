/* test_bounds.c - each search limit is written once (common/base/bounds.h)
 * and every part that takes the setting draws the line at the same place:
 * the config schema, the wire check of a search item, the searches, the
 * agents' spec options and the analysis. The largest value passes them
 * all; one more is refused by each, naming the setting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abnet.h"
#include "abtargets.h"
#include "beam_search.h"
#include "bounds.h"
#include "config.h"
#include "game.h"
#include "msg.h"

static void set_ok(pb_config_t *c, const char *key, long v) {
  char buf[32];
  pb_err_t err;
  snprintf(buf, sizeof buf, "%ld", v);
  if (pb_config_set(c, key, buf, &err) != 0)
    fail_msg("%s=%s: %s", key, buf, err.msg);
}

static void set_refused(pb_config_t *c, const char *key, long v) {
  char buf[32];
  pb_err_t err;
  snprintf(buf, sizeof buf, "%ld", v);
  assert_int_equal(pb_config_set(c, key, buf, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, key));
}

static void test_schema(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  const struct {
    const char *key;
    long max;
  } rows[] = {{"search.expansions", PB_BEAM_MAX_EXPANSIONS},
              {"eval.search_expansions", PB_BEAM_MAX_EXPANSIONS},
              {"search.max_depth", PB_BEAM_MAX_DEPTH},
              {"eval.search_depth", PB_BEAM_MAX_DEPTH},
              {"search.nodes", PB_SEARCH_MAX_NODES},
              {"eval.search_nodes", PB_SEARCH_MAX_NODES},
              {"mcts.simulations", PB_MCTS_MAX_SIMULATIONS},
              {"eval.mcts_simulations", PB_MCTS_MAX_SIMULATIONS}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    set_ok(&c, rows[i].key, rows[i].max);
    set_refused(&c, rows[i].key, rows[i].max + 1);
  }
  /* abnet targets: the horizon below the position, one more ply */
  pb_err_t err;
  pb_config_defaults(&c);
  assert_int_equal(pb_config_set(&c, "search.algorithm", "abnet", &err), 0);
  set_ok(&c, "search.max_depth", PB_ABNET_MAX_DEPTH + 1);
  assert_int_equal(pb_config_check(&c, &err), 0);
  set_ok(&c, "search.max_depth", PB_ABNET_MAX_DEPTH + 2);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "search.max_depth"));
}

/* A search item at the limits encodes; one more is refused naming it. */
static void test_wire(void **state) {
  (void)state;
  pb_state_t s;
  pb_game_connect4.reset(&s);
  pb_msg_t m;
  pb_err_t err;
  uint8_t *b = NULL;
  size_t len;
  pb_msg_init(&m, PB_MSG_WORK_ITEM, "run", PB_GAME_CONNECT4, "learner");
  m.work_item = (pb_msg_work_item_t){.item_id = 1,
                                     .lease_ms = 1000,
                                     .kind = PB_WORK_SEARCH,
                                     .states = &s,
                                     .n_states = 1,
                                     .expansions = PB_BEAM_MAX_EXPANSIONS,
                                     .max_depth = PB_BEAM_MAX_DEPTH};
  assert_int_equal(pb_msg_encode(&m, &b, &len, &err), 0);
  free(b);
  m.work_item.expansions++;
  assert_int_equal(pb_msg_encode(&m, &b, &len, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "expansions"));
  m.work_item.expansions--;
  m.work_item.max_depth++;
  assert_int_equal(pb_msg_encode(&m, &b, &len, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "max_depth"));
  m.work_item.search_algorithm = PB_SEARCH_ABNET;
  m.work_item.expansions = 1;
  m.work_item.max_depth = PB_ABNET_MAX_DEPTH + 1;
  m.work_item.nodes = PB_SEARCH_MAX_NODES;
  assert_int_equal(pb_msg_encode(&m, &b, &len, &err), 0);
  free(b);
  m.work_item.nodes++;
  assert_int_equal(pb_msg_encode(&m, &b, &len, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "nodes"));
}

/* The searches take the largest values and refuse one more. */
static void test_searches(void **state) {
  (void)state;
  pb_err_t err;
  const pb_game_t *g = &pb_game_tictactoe;
  pb_beam_t *b =
      pb_beam_new(g, PB_BEAM_MAX_EXPANSIONS, PB_BEAM_MAX_DEPTH, 1, &err);
  if (b == NULL) fail_msg("%s", err.msg);
  pb_beam_destroy(&b);
  assert_null(pb_beam_new(g, PB_BEAM_MAX_EXPANSIONS + 1, 3, 1, &err));
  assert_null(pb_beam_new(g, 10, PB_BEAM_MAX_DEPTH + 1, 1, &err));
  pb_abnet_opts_t o;
  pb_abnet_defaults(&o);
  o.max_depth = PB_ABNET_MAX_DEPTH;
  o.nodes = PB_SEARCH_MAX_NODES;
  pb_abnet_t *ab = pb_abnet_new(g, &o, &err);
  if (ab == NULL) fail_msg("%s", err.msg);
  pb_abnet_destroy(&ab);
  o.max_depth = PB_ABNET_MAX_DEPTH + 1;
  assert_null(pb_abnet_new(g, &o, &err));
  pb_abtargets_t *t =
      pb_abtargets_new(g, PB_ABNET_MAX_DEPTH + 1, PB_SEARCH_MAX_NODES, 1, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  pb_abtargets_destroy(&t);
  assert_null(pb_abtargets_new(g, PB_ABNET_MAX_DEPTH + 2, 100, 1, &err));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schema),
      cmocka_unit_test(test_wire),
      cmocka_unit_test(test_searches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
