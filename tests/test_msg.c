/* test_msg.c - wire messages: round trips of every type, who may talk to
 * whom, and who owns what. Malformed and hostile input is in
 * test_msg_hostile.c, search items and results in test_msg_search.c; the
 * shared helpers in msg_fixtures.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "game.h"
#include "msg.h"
#include "msg_fixtures.h"
#include "rng.h"

/* ---- round trips ----------------------------------------------------------
 */

static void test_type_names(void **state) {
  (void)state;
  for (int t = PB_MSG_HELLO; t < PB_MSG_TYPE_COUNT; t++) {
    assert_string_not_equal(pb_msg_type_name(t), "Unknown");
    for (int u = PB_MSG_HELLO; u < t; u++)
      assert_string_not_equal(pb_msg_type_name(t), pb_msg_type_name(u));
  }
  assert_string_equal(pb_msg_type_name(PB_MSG_TYPE_COUNT), "Unknown");
  assert_string_equal(pb_msg_type_name(-3), "Unknown");
  assert_string_equal(pb_msg_type_name(PB_MSG_SELFPLAY_RESULT),
                      "SelfplayResult");
  assert_string_equal(pb_msg_role_name(PB_ROLE_SEARCHER), "searcher");
  assert_string_equal(pb_msg_role_name(9), "unknown");
}

static void test_round_trip_small(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;

  pb_msg_init(&m, PB_MSG_HELLO, RUN, PB_GAME_CONNECT4, SENDER);
  m.hello = (pb_msg_hello_t){PB_ROLE_SEARCHER, 12, 4242, "node-3.cluster", ""};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_int_equal(d.hello.role, PB_ROLE_SEARCHER);
  assert_int_equal(d.hello.threads, 12);
  assert_int_equal(d.hello.pid, 4242);
  assert_string_equal(d.hello.hostname, "node-3.cluster");
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
  pb_msg_hello_reply_t *hr = &m.hello_reply;
  hr->accepted = 1;
  snprintf(hr->message, sizeof hr->message, "welcome, ünïcode ok");
  hr->version = 1ULL << 40;
  hr->config = "game: connect4\nsearch:\n  expansions: 1000\n";
  hr->config_len = strlen(hr->config);
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_int_equal(d.hello_reply.accepted, 1);
  assert_string_equal(d.hello_reply.message, hr->message);
  assert_true(d.hello_reply.version == hr->version);
  assert_int_equal(d.hello_reply.config_len, hr->config_len);
  assert_string_equal(d.hello_reply.config, hr->config);
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_WORK_REQUEST, RUN, PB_GAME_CONNECT4, SENDER);
  m.work_request.role = PB_ROLE_ACTOR;
  m.work_request.capacity = 64;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_int_equal(d.work_request.role, PB_ROLE_ACTOR);
  assert_int_equal(d.work_request.capacity, 64);
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_WORK_ITEM, RUN, PB_GAME_CONNECT4, "learner");
  m.work_item.item_id = UINT64_MAX;
  m.work_item.lease_ms = 30000;
  m.work_item.kind = PB_WORK_SELFPLAY;
  m.work_item.episodes = 16;
  m.work_item.seed = 99;
  m.work_item.q_version = 5;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_true(d.work_item.item_id == UINT64_MAX);
  assert_int_equal(d.work_item.lease_ms, 30000);
  assert_int_equal(d.work_item.kind, PB_WORK_SELFPLAY);
  assert_int_equal(d.work_item.episodes, 16);
  assert_int_equal(d.work_item.seed, 99);
  assert_int_equal(d.work_item.q_version, 5);
  assert_null(d.work_item.states);
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_NO_WORK, RUN, PB_GAME_CONNECT4, "learner");
  m.no_work.retry_ms = 250;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.no_work.retry_ms, 250);
  pb_msg_free(&d);

  uint64_t ids[5] = {1, 0, UINT64_MAX, 77, 1ULL << 63};
  pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, PB_GAME_CONNECT4, SENDER);
  m.heartbeat.item_ids = ids;
  m.heartbeat.n_item_ids = 5;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.heartbeat.n_item_ids, 5);
  assert_memory_equal(d.heartbeat.item_ids, ids, sizeof ids);
  assert_true(d.heartbeat.item_ids != ids);
  pb_msg_free(&d);
  m.heartbeat.n_item_ids = 0; /* an idle worker's heartbeat */
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.heartbeat.n_item_ids, 0);
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_WEIGHTS_REQUEST, RUN, PB_GAME_CONNECT4, SENDER);
  m.weights_request.version = 12;
  m.weights_request.which = PB_WHICH_BOTH;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.weights_request.version, 12);
  assert_int_equal(d.weights_request.which, PB_WHICH_BOTH);
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_ANNOUNCE, RUN, PB_GAME_CONNECT4, "learner");
  m.announce.version = 13;
  m.announce.iteration = 12;
  m.announce.phase = PB_PHASE_SEARCH;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.announce.version, 13);
  assert_int_equal(d.announce.iteration, 12);
  assert_int_equal(d.announce.phase, PB_PHASE_SEARCH);
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_REJECT, RUN, PB_GAME_CONNECT4, "learner");
  m.reject.code = PB_EMISMATCH;
  snprintf(m.reject.message, sizeof m.reject.message, "wrong run 'x'");
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.reject.code, PB_EMISMATCH);
  assert_string_equal(d.reject.message, "wrong run 'x'");
  pb_msg_free(&d);

  pb_msg_init(&m, PB_MSG_BYE, RUN, PB_GAME_CONNECT4, SENDER);
  memset(m.bye.reason, 'z', PB_MSG_TEXT_MAX); /* exactly at the limit */
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_string_equal(d.bye.reason, m.bye.reason);
  pb_msg_free(&d);
}

static void test_round_trip_weights(void **state) {
  (void)state;
  size_t vn = 100000, qn = 7;
  uint8_t *v = malloc(vn), q[7] = {0, 1, 2, 0, 255, 0, 9};
  for (size_t i = 0; i < vn; i++) v[i] = (uint8_t)(i * 31 + 7);
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_WEIGHTS, RUN, PB_GAME_CONNECT4, "learner");
  m.weights = (pb_msg_weights_t){77, v, vn, q, qn};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.weights.version, 77);
  assert_int_equal(d.weights.v_len, vn);
  assert_int_equal(d.weights.q_len, qn);
  assert_memory_equal(d.weights.v_weights, v, vn);
  assert_memory_equal(d.weights.q_weights, q, qn);
  pb_msg_free(&d);
  /* Only Q asked for. */
  m.weights = (pb_msg_weights_t){78, NULL, 0, q, qn};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_null(d.weights.v_weights);
  assert_int_equal(d.weights.v_len, 0);
  assert_memory_equal(d.weights.q_weights, q, qn);
  pb_msg_free(&d);
  free(v);
}

static void test_round_trip_selfplay(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 11, 0);
  pb_state_t states[16][42];
  pb_msg_episode_t eps[16];
  pb_msg_t m, d;
  pb_err_t e;
  make_selfplay(&m, &r, 16, states, eps);
  /* One episode cut off at max_turns: a draw by decree. */
  eps[3].n_states = eps[3].n_states > 5 ? 5 : eps[3].n_states;
  eps[3].final_reward = 0;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  const pb_msg_selfplay_result_t *s = &d.selfplay_result;
  assert_true(s->item_id == m.selfplay_result.item_id);
  assert_int_equal(s->n_episodes, 16);
  for (int i = 0; i < 16; i++) {
    assert_int_equal(s->episodes[i].n_states, eps[i].n_states);
    assert_int_equal(s->episodes[i].final_reward, eps[i].final_reward);
    assert_int_equal(s->episodes[i].q_version, eps[i].q_version);
    assert_memory_equal(s->episodes[i].states, eps[i].states,
                        eps[i].n_states * sizeof(pb_state_t));
  }
  pb_msg_free(&d);
  pb_msg_free(&d); /* twice is harmless */
}

/* AlphaZero episodes carry a visit distribution per position: they round
 * trip exactly, and a peer's bad rows are refused naming the row. */
static void uniform_policy(const pb_msg_episode_t *e, float *pol) {
  const pb_game_t *g = &pb_game_connect4;
  for (uint32_t t = 0; t < e->n_states; t++) {
    uint8_t acts[PB_MAX_ACTIONS];
    int n = g->legal(&e->states[t], acts);
    float *row = &pol[(size_t)t * g->num_actions];
    memset(row, 0, (size_t)g->num_actions * sizeof *row);
    for (int k = 0; k < n; k++) row[acts[k]] = 1.0f / (float)n;
  }
}

static void test_round_trip_policy(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 12, 0);
  pb_state_t states[4][42];
  pb_msg_episode_t eps[4];
  static float pol[4][42 * 7];
  pb_msg_t m, d;
  pb_err_t e;
  make_selfplay(&m, &r, 4, states, eps);
  for (int i = 0; i < 4; i++) {
    uniform_policy(&eps[i], pol[i]);
    eps[i].policy = pol[i];
  }
  pol[1][7 * 2 + 3] += 0.05f; /* an uneven row, still summing to 1 */
  pol[1][7 * 2 + 4] -= 0.05f;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  for (int i = 0; i < 4; i++) {
    assert_non_null(d.selfplay_result.episodes[i].policy);
    assert_memory_equal(d.selfplay_result.episodes[i].policy, pol[i],
                        eps[i].n_states * 7 * sizeof(float));
  }
  pb_msg_free(&d);
  /* PROBS episodes decode without policies */
  for (int i = 0; i < 4; i++) eps[i].policy = NULL;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_null(d.selfplay_result.episodes[2].policy);
  pb_msg_free(&d);
  /* Bad rows: the encoder sends what it is given; decode refuses. */
  struct {
    int ep, t, a;
    float v;
    const char *needle;
  } bad[] = {
      {0, 0, 0, NAN, "not a probability"},
      {0, 1, 1, -0.1f, "not a probability"},
      {2, 0, 3, 1.5f, "not a probability"},
      {3, 2, 5, 0.5f, "sums to"},
  };
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    for (int i = 0; i < 4; i++) {
      uniform_policy(&eps[i], pol[i]);
      eps[i].policy = pol[i];
    }
    pol[bad[b].ep][bad[b].t * 7 + bad[b].a] = bad[b].v;
    assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), PB_EPROTO);
    if (strstr(e.msg, bad[b].needle) == NULL)
      fprintf(stderr, "'%s' not in: %s\n", bad[b].needle, e.msg);
    assert_non_null(strstr(e.msg, bad[b].needle));
    assert_non_null(strstr(e.msg, "policy"));
  }
  /* mass on an illegal action: a full column of a late position */
  for (int i = 0; i < 4; i++) {
    uniform_policy(&eps[i], pol[i]);
    eps[i].policy = pol[i];
  }
  int found = 0;
  for (uint32_t t = 0; t < eps[0].n_states && !found; t++) {
    uint8_t acts[PB_MAX_ACTIONS], legal[7] = {0};
    int n = pb_game_connect4.legal(&eps[0].states[t], acts);
    for (int k = 0; k < n; k++) legal[acts[k]] = 1;
    for (int a = 0; a < 7 && !found; a++)
      if (!legal[a]) {
        float *row = &pol[0][t * 7];
        row[acts[0]] -= 0.5f;
        row[a] = 0.5f;
        found = 1;
      }
  }
  if (found) {
    assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), PB_EPROTO);
    assert_non_null(strstr(e.msg, "illegal action"));
  }
  /* some episodes with policies, some without */
  for (int i = 0; i < 4; i++) eps[i].policy = i == 2 ? NULL : pol[i];
  for (int i = 0; i < 4; i++) uniform_policy(&eps[i], pol[i]);
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), PB_EPROTO);
  assert_non_null(strstr(e.msg, "episodes[2].policy"));
}

/* HelloReply's config (protocol 2: the run's whole config as YAML, for
 * the worker to read with its schema) round trips byte for byte at any
 * size up to the cap, is required in an accepted reply and optional in a
 * refusal, and may hold newlines and tabs but no other control byte. */
static void test_hello_reply_config(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;
  static char big[PB_MSG_MAX_CONFIG + 2];
  pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
  m.hello_reply.accepted = 1;
  for (size_t len = 1; len <= PB_MSG_MAX_CONFIG; len *= 8) {
    for (size_t i = 0; i < len; i++) big[i] = "ab:\n \t#-"[i % 8];
    big[len] = '\0';
    m.hello_reply.config = big;
    m.hello_reply.config_len = len;
    assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
    assert_int_equal(d.hello_reply.config_len, len);
    assert_memory_equal(d.hello_reply.config, big, len + 1);
    pb_msg_free(&d);
  }
  memset(big, 'x', PB_MSG_MAX_CONFIG + 1);
  big[PB_MSG_MAX_CONFIG + 1] = '\0';
  m.hello_reply.config_len = PB_MSG_MAX_CONFIG + 1;
  encode_refused(&m, PB_EINVAL, "config_yaml");
  m.hello_reply.config = "";
  m.hello_reply.config_len = 0;
  encode_refused(&m, PB_EINVAL, "config_yaml");
  m.hello_reply.config = "game: connect4\x01\n";
  m.hello_reply.config_len = strlen(m.hello_reply.config);
  encode_refused(&m, PB_EINVAL, "config_yaml");
  m.hello_reply.config = "game: connect4\nmore";
  m.hello_reply.config_len = 10; /* not where its NUL is */
  encode_refused(&m, PB_EINVAL, "config_yaml");
  /* a refusal needs none */
  m.hello_reply.accepted = 0;
  m.hello_reply.config = NULL;
  m.hello_reply.config_len = 0;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.hello_reply.config_len, 0);
  pb_msg_free(&d);
}

/* Algorithm td: a self-play item's epsilon (field 30) round trips and is
 * range-checked. */
static void test_td_fields(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_WORK_ITEM, RUN, PB_GAME_CONNECT4, "learner");
  m.work_item.item_id = 4;
  m.work_item.lease_ms = 30000;
  m.work_item.kind = PB_WORK_SELFPLAY;
  m.work_item.episodes = 16;
  m.work_item.td_epsilon = 0.09;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_true(d.work_item.td_epsilon == 0.09);
  pb_msg_free(&d);
  m.work_item.td_epsilon = 1.5;
  encode_refused(&m, PB_EINVAL, "td_epsilon");
  m.work_item.td_epsilon = -0.1;
  encode_refused(&m, PB_EINVAL, "td_epsilon");
}

/* A policy row of zeros (a position that is no policy target: a fast
 * search under playout cap randomization) is accepted; a row of mass 0.5
 * is not. */
static void test_policy_zero_row(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 13, 0);
  pb_state_t states[4][42];
  pb_msg_episode_t eps[4];
  static float pol[4][42 * 7];
  pb_msg_t m, d;
  pb_err_t e;
  make_selfplay(&m, &r, 4, states, eps);
  for (int i = 0; i < 4; i++) {
    uniform_policy(&eps[i], pol[i]);
    eps[i].policy = pol[i];
  }
  memset(&pol[1][7 * 1], 0, 7 * sizeof(float));
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_memory_equal(d.selfplay_result.episodes[1].policy, pol[1],
                      eps[1].n_states * 7 * sizeof(float));
  pb_msg_free(&d);
  pol[1][7 * 1 + 3] = 0.5f;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), PB_EPROTO);
  assert_non_null(strstr(e.msg, "sums to"));
}

/* Hello's and HelloReply's start ids (the run id of one learner start)
 * round trip; empty is "any start"; an id with a space or longer than an id
 * may be is refused. */
static void test_start_id(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_HELLO, "", 0, SENDER);
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 7, "node", "c4-0123abcd"};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_string_equal(d.hello.start_id, "c4-0123abcd");
  assert_string_equal(d.hello.hostname, "node");
  pb_msg_free(&d);
  m.hello.start_id[0] = '\0';
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_string_equal(d.hello.start_id, "");
  pb_msg_free(&d);
  snprintf(m.hello.start_id, sizeof m.hello.start_id, "c4 0123abcd");
  encode_refused(&m, PB_EINVAL, "start_id");
  memset(m.hello.start_id, 'x', sizeof m.hello.start_id); /* no NUL */
  encode_refused(&m, PB_EINVAL, "start_id");

  pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
  m.hello_reply.accepted = 0;
  snprintf(m.hello_reply.message, sizeof m.hello_reply.message, "not you");
  snprintf(m.hello_reply.start_id, sizeof m.hello_reply.start_id, "%s-89abcdef",
           RUN);
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.hello_reply.accepted, 0);
  assert_string_equal(d.hello_reply.start_id, m.hello_reply.start_id);
  pb_msg_free(&d);
  m.hello_reply.start_id[3] = '\n';
  encode_refused(&m, PB_EINVAL, "start_id");
}

/* Tic-Tac-Toe goes through the same code with its own sizes. */
static void test_round_trip_tictactoe(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_id(PB_GAME_TICTACTOE);
  assert_non_null(g);
  pb_rng_t r;
  pb_rng_seed(&r, 13, 0);
  pb_state_t st[4][42];
  pb_msg_episode_t eps[4];
  for (int i = 0; i < 4; i++) {
    eps[i].states = st[i];
    eps[i].n_states = play_episode(&r, g, st[i], &eps[i].final_reward);
    eps[i].q_version = 1;
    eps[i].policy = NULL;
  }
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_SELFPLAY_RESULT, RUN, PB_GAME_TICTACTOE, SENDER);
  m.selfplay_result = (pb_msg_selfplay_result_t){9, eps, 4};
  pb_msg_expect_t ex = {RUN, PB_GAME_TICTACTOE};
  assert_int_equal(round_trip(&m, &ex, &d, &e), 0);
  for (int i = 0; i < 4; i++)
    assert_memory_equal(d.selfplay_result.episodes[i].states, st[i],
                        eps[i].n_states * sizeof(pb_state_t));
  pb_msg_free(&d);
  /* Connect Four's 7 actions are not Tic-Tac-Toe's 9. */
  float q[9] = {0};
  pb_msg_init(&m, PB_MSG_SEARCH_RESULT, RUN, PB_GAME_TICTACTOE, SENDER);
  m.search_result = (pb_msg_search_result_t){1, 1, 7, q};
  encode_refused(&m, PB_EINVAL, "n_actions");
  m.search_result.n_actions = 9;
  assert_int_equal(round_trip(&m, &ex, &d, &e), 0);
  pb_msg_free(&d);
}

/* ---- who may talk to whom -------------------------------------------------
 */

static void test_hello_before_run_is_known(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_HELLO, "", 0, SENDER);
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, "", ""};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_string_equal(d.header.run_id, "");
  assert_int_equal(d.header.game_id, 0);
  pb_msg_free(&d);
  /* The worker, not knowing its run yet, accepts any reply. */
  pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
  m.hello_reply.accepted = 1;
  m.hello_reply.config = "game: connect4\n";
  m.hello_reply.config_len = strlen(m.hello_reply.config);
  pb_msg_expect_t any = {NULL, 0};
  assert_int_equal(round_trip(&m, &any, &d, &e), 0);
  assert_string_equal(d.header.run_id, RUN);
  pb_msg_free(&d);
  assert_int_equal(round_trip(&m, NULL, &d, &e), 0);
  pb_msg_free(&d);
}

static void test_mismatch(void **state) {
  (void)state;
  pb_msg_t m;
  uint8_t *bytes;
  size_t len;
  pb_err_t e;
  uint64_t id = 4;
  pb_msg_init(&m, PB_MSG_HEARTBEAT, "other-run", PB_GAME_CONNECT4, SENDER);
  m.heartbeat = (pb_msg_heartbeat_t){&id, 1};
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EMISMATCH, "run_id", "other-run",
                 RUN, SENDER, NULL);
  /* The header survives a refusal, for the log line. */
  pb_msg_t out;
  assert_int_equal(pb_msg_decode(bytes, len, &EXPECT_C4, &out, &e),
                   PB_EMISMATCH);
  assert_string_equal(out.header.sender_id, SENDER);
  assert_string_equal(out.header.run_id, "other-run");
  pb_msg_free(&out);
  free(bytes);

  /* A Hello naming another run is refused as well. */
  pb_msg_init(&m, PB_MSG_HELLO, "old-run", PB_GAME_CONNECT4, SENDER);
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, "h", ""};
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EMISMATCH, "run_id", "old-run",
                 NULL);
  free(bytes);

  pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, PB_GAME_TICTACTOE, SENDER);
  m.heartbeat = (pb_msg_heartbeat_t){&id, 1};
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EMISMATCH, "game_id", "2", "1",
                 "tictactoe", "connect4", NULL);
  free(bytes);

  m.header.game_id = 99; /* no such game */
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EMISMATCH, "game_id", "99", NULL);
  pb_msg_expect_t any = {NULL, 0};
  expect_refusal(bytes, len, &any, PB_EMISMATCH, "game_id", "99", NULL);
  free(bytes);

  pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, PB_GAME_CONNECT4, SENDER);
  /* protocol 1: a peer of before HelloReply carried the config; 2: of
   * before SearchWork dropped the search settings */
  for (uint32_t v = 1; v <= 2; v++) {
    char got[16];
    snprintf(got, sizeof got, "got %u", v);
    m.header.protocol_version = v;
    assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
    expect_refusal(bytes, len, &EXPECT_C4, PB_EMISMATCH, "protocol_version",
                   got, "expected 3", "another probs version", SENDER, NULL);
    free(bytes);
  }
  m.header.protocol_version = 0;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EMISMATCH, "protocol_version",
                 NULL);
  free(bytes);

  /* Only a Hello may leave out run and game. */
  pb_msg_init(&m, PB_MSG_HEARTBEAT, "", PB_GAME_CONNECT4, SENDER);
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EPROTO, "run_id", "empty", NULL);
  free(bytes);
  pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, 0, SENDER);
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EPROTO, "game_id", NULL);
  free(bytes);
}

/* ---- ownership
 * ---------------------------------------------------------------- */

static void test_free_and_buffers(void **state) {
  (void)state;
  pb_msg_free(NULL);
  pb_msg_t z;
  memset(&z, 0, sizeof z);
  pb_msg_free(&z);
  pb_msg_free(&z);
  /* A caller-filled message: nothing of it is freed. */
  uint64_t ids[1] = {3};
  pb_msg_init(&z, PB_MSG_HEARTBEAT, RUN, 1, SENDER);
  z.heartbeat = (pb_msg_heartbeat_t){ids, 1};
  pb_msg_free(&z);
  assert_int_equal(ids[0], 3);

  pb_msg_buf_free(NULL);
  pb_msg_buf_t buf = {0};
  pb_msg_buf_free(&buf);

  /* Once grown, the buffer is reused: no allocation per message. */
  pb_rng_t r;
  pb_rng_seed(&r, 51, 0);
  pb_state_t states[16][42];
  pb_msg_episode_t eps[16];
  pb_msg_t m;
  pb_err_t e;
  make_selfplay(&m, &r, 16, states, eps);
  assert_int_equal(pb_msg_encode_buf(&m, &buf, &e), 0);
  uint8_t *data = buf.data;
  void *scratch = buf.scratch;
  size_t big = buf.len;
  for (int i = 0; i < 50; i++) {
    pb_msg_t h;
    pb_msg_init(&h, PB_MSG_HEARTBEAT, RUN, 1, SENDER);
    assert_int_equal(pb_msg_encode_buf(&h, &buf, &e), 0);
    assert_true(buf.len < big);
    assert_int_equal(pb_msg_encode_buf(&m, &buf, &e), 0);
    assert_int_equal(buf.len, big);
  }
  assert_ptr_equal(buf.data, data);
  assert_ptr_equal(buf.scratch, scratch);
  /* A failed encode leaves the buffer usable and empty. */
  pb_msg_t bad;
  pb_msg_init(&bad, PB_MSG_BYE, RUN, 1, "");
  assert_int_equal(pb_msg_encode_buf(&bad, &buf, &e), PB_EINVAL);
  assert_int_equal(buf.len, 0);
  pb_msg_t d;
  assert_int_equal(pb_msg_encode_buf(&m, &buf, &e), 0);
  assert_int_equal(pb_msg_decode(buf.data, buf.len, &EXPECT_C4, &d, &e), 0);
  pb_msg_free(&d);
  pb_msg_buf_free(&buf);
  assert_null(buf.data);
}

/* The largest honest messages of a worker fit under the learner's socket
 * limit, for every game: a full self-play item of the longest episodes,
 * and a full search item. */
static void test_worker_size_limit(void **state) {
  (void)state;
  const int games[] = {PB_GAME_CONNECT4, PB_GAME_TICTACTOE, PB_GAME_OTHELLO,
                       PB_GAME_TOGUZ};
  for (int gi = 0; gi < 4; gi++) {
    const pb_game_t *g = pb_game_by_id(games[gi]);
    const int item_episodes = 16, max_turns = 100, item_states = 256;
    int T = max_turns < g->max_turns ? max_turns : g->max_turns;
    size_t limit =
        pb_msg_max_worker_bytes(g, item_episodes, max_turns, item_states);
    /* Self-play: 16 episodes of T states (random play, so each is legal). */
    pb_state_t *st = calloc((size_t)item_episodes * (size_t)T, sizeof *st);
    pb_msg_episode_t ep[16];
    assert_non_null(st);
    pb_rng_t rng;
    pb_rng_seed(&rng, 3, 0);
    for (int e = 0; e < item_episodes; e++) {
      pb_state_t *h = st + (size_t)e * (size_t)T;
      g->reset(&h[0]);
      for (int t = 1; t < T; t++) {
        uint8_t a[PB_MAX_ACTIONS];
        h[t] = h[t - 1];
        int n = g->legal(&h[t], a), done = 0;
        if (n == 0) break;
        g->step(&h[t], a[pb_rng_below(&rng, (uint32_t)n)], &done);
      }
      ep[e] = (pb_msg_episode_t){h, (uint32_t)T, 0, 0, NULL};
    }
    /* alphazero: a visit distribution per state as well (the larger) */
    float *pol = calloc((size_t)item_episodes * T * g->num_actions, sizeof *pol);
    assert_non_null(pol);
    for (int e = 0; e < item_episodes; e++) {
      ep[e].policy = pol + (size_t)e * T * g->num_actions;
      for (int t = 0; t < T; t++) {
        uint8_t a[PB_MAX_ACTIONS];
        int n = g->legal(&ep[e].states[t], a);
        for (int k = 0; k < n; k++)
          pol[((size_t)e * T + t) * g->num_actions + a[k]] = 1.0f / (float)n;
      }
    }
    pb_msg_t m;
    pb_msg_init(&m, PB_MSG_SELFPLAY_RESULT, "run", g->id, "actor");
    m.selfplay_result.item_id = 1;
    m.selfplay_result.episodes = ep;
    m.selfplay_result.n_episodes = (uint32_t)item_episodes;
    uint8_t *buf;
    size_t len;
    pb_err_t err;
    assert_int_equal(pb_msg_encode(&m, &buf, &len, &err), 0);
    assert_true(len <= limit);
    free(buf);
    free(st);
    free(pol);
    /* Search: 256 positions of num_actions values each. */
    float *q = calloc((size_t)item_states * (size_t)g->num_actions, sizeof *q);
    assert_non_null(q);
    for (size_t i = 0; i < (size_t)item_states * (size_t)g->num_actions; i++)
      q[i] = 0.123456f;
    pb_msg_init(&m, PB_MSG_SEARCH_RESULT, "run", g->id, "searcher");
    m.search_result = (pb_msg_search_result_t){2, (uint32_t)item_states,
                                               (uint32_t)g->num_actions, q};
    assert_int_equal(pb_msg_encode(&m, &buf, &len, &err), 0);
    assert_true(len <= limit);
    assert_true(limit < (8u << 20)); /* and far below the codec's cap */
    free(buf);
    free(q);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_type_names),
      cmocka_unit_test(test_round_trip_small),
      cmocka_unit_test(test_round_trip_weights),
      cmocka_unit_test(test_round_trip_selfplay),
      cmocka_unit_test(test_round_trip_policy),
      cmocka_unit_test(test_hello_reply_config),
      cmocka_unit_test(test_td_fields),
      cmocka_unit_test(test_policy_zero_row),
      cmocka_unit_test(test_start_id),
      cmocka_unit_test(test_round_trip_tictactoe),
      cmocka_unit_test(test_hello_before_run_is_known),
      cmocka_unit_test(test_mismatch),
      cmocka_unit_test(test_free_and_buffers),
      cmocka_unit_test(test_worker_size_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
