/* test_bounds.c - each limit is written once (common/base/bounds.h) and
 * every part that takes the setting draws the line at the same place: the
 * config schema, the wire, the searches, the agents' spec options and the
 * analysis. The largest value passes them all; one more is refused by
 * each, naming the setting. And a config at every maximum the schema
 * allows makes messages the encoder takes, within the size the learner's
 * socket accepts from a worker, for every game. */
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
#include "batcher.h"
#include "beam_search.h"
#include "bounds.h"
#include "config.h"
#include "game.h"
#include "msg.h"
#include "selfplay.h"

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
  } rows[] = {{"net.item_episodes", PB_ITEM_MAX_EPISODES},
              {"net.item_states", PB_ITEM_MAX_STATES},
              {"net.lease_ms", PB_LEASE_MAX_MS},
              {"net.lease_max_ms", PB_LEASE_MAX_MS},
              {"net.heartbeat_ms", PB_HEARTBEAT_MAX_MS},
              {"train.max_turns", PB_MAX_TURNS},
              {"train.replay_iterations", PB_REPLAY_MAX_ITERATIONS},
              {"train.selfplay_parallel", PB_SELFPLAY_MAX_PARALLEL},
              {"train.selfplay_threads", PB_MAX_THREADS},
              {"search.threads", PB_MAX_THREADS},
              {"eval.threads", PB_MAX_THREADS},
              {"model.threads", PB_NN_MAX_THREADS},
              {"model.learner_threads", PB_NN_MAX_TRAIN_THREADS},
              {"td.ply", PB_NPLY_MAX_DEPTH},
              {"search.expansions", PB_BEAM_MAX_EXPANSIONS},
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
  set_ok(&c, "search.max_depth", PB_ABNET_MAX_HORIZON);
  assert_int_equal(pb_config_check(&c, &err), 0);
  set_ok(&c, "search.max_depth", PB_ABNET_MAX_HORIZON + 1);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "search.max_depth"));
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
      pb_abtargets_new(g, PB_ABNET_MAX_HORIZON, PB_SEARCH_MAX_NODES, 1, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  pb_abtargets_destroy(&t);
  assert_null(pb_abtargets_new(g, PB_ABNET_MAX_HORIZON + 1, 100, 1, &err));
  pb_batcher_t *bt = pb_batcher_new(g, PB_MAX_THREADS, &err);
  if (bt == NULL) fail_msg("%s", err.msg);
  pb_batcher_destroy(&bt);
  assert_null(pb_batcher_new(g, PB_MAX_THREADS + 1, &err));
}

/* Self-play from a config at its maxima: train.selfplay_parallel games at
 * once of up to train.max_turns moves; the engine's buffers stop at the
 * game's own max_turns, so it is built; one more of either is refused. */
static void test_selfplay_at_maxima(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  set_ok(&c, "train.selfplay_parallel", PB_SELFPLAY_MAX_PARALLEL);
  set_ok(&c, "train.max_turns", PB_MAX_TURNS);
  pb_selfplay_opts_t o;
  pb_selfplay_config_opts(&c, &o);
  pb_selfplay_t *sp = pb_selfplay_new(&pb_game_tictactoe, &o, &err);
  if (sp == NULL) fail_msg("%s", err.msg);
  pb_selfplay_destroy(&sp);
  o.parallel++;
  assert_null(pb_selfplay_new(&pb_game_tictactoe, &o, &err));
  o.parallel--;
  o.max_turns++;
  assert_null(pb_selfplay_new(&pb_game_tictactoe, &o, &err));
}

/* Encodes m into buf, failing the test with the encoder's reason. */
static size_t encodes(const pb_msg_t *m, pb_msg_buf_t *buf, const char *what,
                      const char *game) {
  pb_err_t err;
  if (pb_msg_encode_buf(m, buf, &err) != 0)
    fail_msg("%s of %s at the config's maxima: %s", what, game, err.msg);
  return buf->len;
}

/* A config at every maximum the schema allows passes its check, and the
 * messages a learner and its workers make from it encode, for every game:
 * the Hello (model.threads), the HelloReply (the config as YAML), a
 * self-play item (net.item_episodes, net.lease_ms) and a search item
 * (net.item_states), NoWork (net.heartbeat_ms as the retry), the
 * self-play result of item_episodes episodes of the longest game
 * train.max_turns allows, with AlphaZero's policy rows, and the search
 * result. The worker's results fit the learner's socket limit
 * (pb_msg_max_worker_bytes). */
static void test_config_at_maxima_encodes(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  set_ok(&c, "net.item_episodes", PB_ITEM_MAX_EPISODES);
  set_ok(&c, "net.item_states", PB_ITEM_MAX_STATES);
  set_ok(&c, "net.lease_ms", PB_LEASE_MAX_MS);
  set_ok(&c, "net.lease_max_ms", PB_LEASE_MAX_MS);
  set_ok(&c, "net.heartbeat_ms", PB_HEARTBEAT_MAX_MS);
  set_ok(&c, "train.max_turns", PB_MAX_TURNS);
  set_ok(&c, "model.threads", PB_NN_MAX_THREADS);
  set_ok(&c, "train.episodes_per_iter", PB_ITEM_MAX_EPISODES);
  if (pb_config_check(&c, &err) != 0) fail_msg("%s", err.msg);
  char *yaml = NULL;
  assert_int_equal(pb_config_to_yaml(&c, &yaml, &err), 0);
  pb_msg_buf_t buf = {0};
  const int games[] = {PB_GAME_CONNECT4, PB_GAME_TICTACTOE, PB_GAME_OTHELLO,
                       PB_GAME_TOGUZ};
  for (size_t gi = 0; gi < sizeof games / sizeof games[0]; gi++) {
    const pb_game_t *g = pb_game_by_id(games[gi]);
    assert_non_null(g);
    pb_msg_t m;
    pb_msg_init(&m, PB_MSG_HELLO, "run", g->id, "worker-1");
    m.hello.role = PB_ROLE_ACTOR;
    m.hello.threads = (uint32_t)c.model.threads;
    encodes(&m, &buf, "Hello", g->name);
    pb_msg_init(&m, PB_MSG_HELLO_REPLY, "run", g->id, "learner");
    m.hello_reply.accepted = 1;
    m.hello_reply.config = yaml;
    m.hello_reply.config_len = strlen(yaml);
    encodes(&m, &buf, "HelloReply", g->name);
    pb_msg_init(&m, PB_MSG_NO_WORK, "run", g->id, "learner");
    m.no_work.retry_ms = (uint32_t)c.net.heartbeat_ms;
    encodes(&m, &buf, "NoWork", g->name);
    pb_msg_init(&m, PB_MSG_WORK_ITEM, "run", g->id, "learner");
    m.work_item = (pb_msg_work_item_t){.item_id = 1,
                                       .lease_ms = (uint32_t)c.net.lease_ms,
                                       .kind = PB_WORK_SELFPLAY,
                                       .episodes =
                                           (uint32_t)c.net.item_episodes};
    encodes(&m, &buf, "a self-play WorkItem", g->name);

    /* One game's positions and policy rows, shared by every episode (the
     * encoder only borrows them). */
    const size_t T = (size_t)(c.train.max_turns < g->max_turns
                                  ? c.train.max_turns
                                  : g->max_turns);
    const size_t S = (size_t)c.net.item_states;
    const size_t na = (size_t)g->num_actions;
    pb_state_t *st = malloc((T > S ? T : S) * sizeof *st);
    float *pol = malloc(T * na * sizeof *pol);
    float *q = calloc(S * na, sizeof *q);
    pb_msg_episode_t *eps = calloc((size_t)c.net.item_episodes, sizeof *eps);
    assert_true(st && pol && q && eps);
    for (size_t i = 0; i < (T > S ? T : S); i++) g->reset(&st[i]);
    for (size_t i = 0; i < T * na; i++) pol[i] = 1.0f / (float)na;
    for (int e = 0; e < c.net.item_episodes; e++)
      eps[e] = (pb_msg_episode_t){st, (uint32_t)T, 0, 1, pol};

    m.work_item = (pb_msg_work_item_t){.item_id = 2,
                                       .lease_ms = (uint32_t)c.net.lease_ms,
                                       .kind = PB_WORK_SEARCH,
                                       .states = st,
                                       .n_states = (uint32_t)S};
    encodes(&m, &buf, "a search WorkItem", g->name);

    const size_t most = pb_msg_max_worker_bytes(
        g, c.net.item_episodes, c.train.max_turns, c.net.item_states);
    pb_msg_init(&m, PB_MSG_SELFPLAY_RESULT, "run", g->id, "actor-1");
    m.selfplay_result.item_id = 1;
    m.selfplay_result.episodes = eps;
    m.selfplay_result.n_episodes = (uint32_t)c.net.item_episodes;
    size_t n = encodes(&m, &buf, "SelfplayResult", g->name);
    if (n > most)
      fail_msg("%s: a full SelfplayResult is %zu bytes, the learner takes "
               "%zu", g->name, n, most);
    pb_msg_init(&m, PB_MSG_SEARCH_RESULT, "run", g->id, "searcher-1");
    m.search_result =
        (pb_msg_search_result_t){2, (uint32_t)S, (uint32_t)na, q};
    n = encodes(&m, &buf, "SearchResult", g->name);
    if (n > most)
      fail_msg("%s: a full SearchResult is %zu bytes, the learner takes %zu",
               g->name, n, most);
    free(st);
    free(pol);
    free(q);
    free(eps);
  }
  pb_msg_buf_free(&buf);
  free(yaml);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schema),
      cmocka_unit_test(test_searches),
      cmocka_unit_test(test_selfplay_at_maxima),
      cmocka_unit_test(test_config_at_maxima_encodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
