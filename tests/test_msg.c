/* test_msg.c - wire messages: round trips of every type, strict refusals,
 * and garbage that must never crash the decoder.
 *
 * Refusals of things our own encoder never writes (sizes that disagree
 * with counts, over-long strings, bad enums) are built with a tiny
 * hand-written protobuf writer, checked once against the real encoder. */
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
#include "rng.h"

#define RUN "run-test"
#define SENDER "actor-7@host"

static const pb_msg_expect_t EXPECT_C4 = {RUN, PB_GAME_CONNECT4};

/* ---- helpers ------------------------------------------------------------ */

/* Plays one random game of g from the start; out gets every position where
 * a move was chosen. Returns their count; *final_reward the last move's
 * reward for its mover. */
static uint32_t play_episode(pb_rng_t *r, const pb_game_t *g, pb_state_t *out,
                             int *final_reward) {
  pb_state_t s;
  uint8_t acts[PB_MAX_ACTIONS];
  uint32_t n = 0;
  int done = 0;
  float rew = 0;
  g->reset(&s);
  while (!done) {
    out[n++] = s;
    int k = g->legal(&s, acts);
    assert_true(k > 0);
    rew = g->step(&s, acts[pb_rng_below(r, (uint32_t)k)], &done);
  }
  *final_reward = (int)rew;
  return n;
}

/* A SelfplayResult of n_ep random Connect Four games (storage from the
 * caller: states[n_ep][42], eps[n_ep]). */
static void make_selfplay(pb_msg_t *m, pb_rng_t *r, int n_ep,
                          pb_state_t (*states)[42], pb_msg_episode_t *eps) {
  pb_msg_init(m, PB_MSG_SELFPLAY_RESULT, RUN, PB_GAME_CONNECT4, SENDER);
  for (int i = 0; i < n_ep; i++) {
    eps[i].states = states[i];
    eps[i].n_states =
        play_episode(r, &pb_game_connect4, states[i], &eps[i].final_reward);
    eps[i].q_version = 100 + (uint64_t)i;
    eps[i].policy = NULL;
  }
  m->selfplay_result.item_id = 0x123456789abcdefULL;
  m->selfplay_result.episodes = eps;
  m->selfplay_result.n_episodes = (uint32_t)n_ep;
}

/* Encodes m both ways (malloc'd and into a reused buffer: the same bytes)
 * and decodes it with expect; returns the decode result. */
static int round_trip(const pb_msg_t *m, const pb_msg_expect_t *ex,
                      pb_msg_t *out, pb_err_t *err) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  pb_err_t e;
  int rc = pb_msg_encode(m, &bytes, &len, &e);
  if (rc != 0) fprintf(stderr, "encode: %s\n", e.msg);
  assert_int_equal(rc, 0);
  pb_msg_buf_t buf = {0};
  assert_int_equal(pb_msg_encode_buf(m, &buf, &e), 0);
  assert_int_equal(buf.len, len);
  assert_memory_equal(buf.data, bytes, len);
  pb_msg_buf_free(&buf);
  rc = pb_msg_decode(bytes, len, ex, out, err);
  free(bytes);
  return rc;
}

/* Decodes bytes expecting failure with `code`, and a message containing
 * each of the NULL-terminated needles. */
static void expect_refusal(const uint8_t *bytes, size_t len,
                           const pb_msg_expect_t *ex, int code, ...) {
  pb_msg_t out;
  pb_err_t e = {0};
  int rc = pb_msg_decode(bytes, len, ex, &out, &e);
  if (rc != code)
    fprintf(stderr, "expected %s, got %s: %s\n", pb_err_name(code),
            pb_err_name(rc), e.msg);
  assert_int_equal(rc, code);
  assert_int_equal(e.code, code);
  va_list ap;
  va_start(ap, code);
  for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;) {
    if (strstr(e.msg, needle) == NULL)
      fprintf(stderr, "'%s' not in: %s\n", needle, e.msg);
    assert_non_null(strstr(e.msg, needle));
  }
  va_end(ap);
  assert_int_equal(out.type, PB_MSG_NONE);
  assert_null(out.pb__mem);
  assert_null(out.pb__unpacked);
  pb_msg_free(&out);
}

static void encode_refused(const pb_msg_t *m, int code, const char *needle) {
  uint8_t *bytes = (uint8_t *)1;
  size_t len = 1;
  pb_err_t e = {0};
  int rc = pb_msg_encode(m, &bytes, &len, &e);
  if (rc != code || strstr(e.msg, needle) == NULL)
    fprintf(stderr, "encode: want %s '%s', got %s: %s\n", pb_err_name(code),
            needle, pb_err_name(rc), e.msg);
  assert_int_equal(rc, code);
  assert_null(bytes);
  assert_int_equal(len, 0);
  assert_non_null(strstr(e.msg, needle));
}

/* ---- a minimal protobuf writer (wire format by hand) --------------------- */

typedef struct wbuf {
  uint8_t b[16384];
  size_t n;
} wbuf_t;

static void w_varint(wbuf_t *w, uint64_t v) {
  do {
    assert_true(w->n < sizeof w->b);
    uint8_t byte = v & 0x7f;
    v >>= 7;
    w->b[w->n++] = byte | (v ? 0x80 : 0);
  } while (v);
}

static void w_uint(wbuf_t *w, int field, uint64_t v) {
  w_varint(w, (uint64_t)field << 3 | 0);
  w_varint(w, v);
}

static void w_sint(wbuf_t *w, int field, int64_t v) {
  w_uint(w, field, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void w_bytes(wbuf_t *w, int field, const void *p, size_t n) {
  w_varint(w, (uint64_t)field << 3 | 2);
  w_varint(w, n);
  assert_true(w->n + n <= sizeof w->b);
  memcpy(w->b + w->n, p, n);
  w->n += n;
}

static void w_str(wbuf_t *w, int field, const char *s) {
  w_bytes(w, field, s, strlen(s));
}

static void w_sub(wbuf_t *w, int field, const wbuf_t *sub) {
  w_bytes(w, field, sub->b, sub->n);
}

/* An Envelope with this header and body (field number of the body). */
static void w_envelope(wbuf_t *w, uint32_t version, const char *run,
                       uint32_t game, const char *sender, int body_field,
                       const wbuf_t *body) {
  wbuf_t h = {.n = 0};
  w->n = 0;
  if (version) w_uint(&h, 1, version);
  if (run[0]) w_str(&h, 2, run);
  if (game) w_uint(&h, 3, game);
  if (sender[0]) w_str(&h, 4, sender);
  w_sub(w, 1, &h);
  w_sub(w, body_field, body);
}

enum {
  F_HELLO = 10,
  F_WORK_ITEM = 13,
  F_SELFPLAY = 15,
  F_SEARCH_RESULT = 16,
  F_HEARTBEAT = 17,
  F_ANNOUNCE = 20,
  F_BYE = 22
};

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

static void check_header(const pb_msg_t *a, const pb_msg_t *b) {
  assert_int_equal(a->type, b->type);
  assert_int_equal(a->header.protocol_version, b->header.protocol_version);
  assert_string_equal(a->header.run_id, b->header.run_id);
  assert_int_equal(a->header.game_id, b->header.game_id);
  assert_string_equal(a->header.sender_id, b->header.sender_id);
}

static void test_round_trip_small(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;

  pb_msg_init(&m, PB_MSG_HELLO, RUN, PB_GAME_CONNECT4, SENDER);
  m.hello = (pb_msg_hello_t){PB_ROLE_SEARCHER, 12, 4242, "node-3.cluster"};
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
  hr->expansions = 1000;
  hr->max_depth = 20;
  hr->max_turns = 42;
  hr->eps = 0.25;
  hr->alpha = 0.3;
  hr->seed = 0xfeedfacecafebeefULL;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_int_equal(d.hello_reply.accepted, 1);
  assert_string_equal(d.hello_reply.message, hr->message);
  assert_true(d.hello_reply.version == hr->version);
  assert_int_equal(d.hello_reply.expansions, 1000);
  assert_int_equal(d.hello_reply.max_depth, 20);
  assert_int_equal(d.hello_reply.max_turns, 42);
  assert_true(d.hello_reply.eps == 0.25 && d.hello_reply.alpha == 0.3);
  assert_true(d.hello_reply.seed == hr->seed);
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

/* HelloReply's alphazero settings round trip and are range-checked. */
static void test_hello_reply_alphazero(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
  m.hello_reply.accepted = 1;
  m.hello_reply.max_turns = 42;
  m.hello_reply.algorithm = PB_ALGO_ALPHAZERO;
  m.hello_reply.simulations = 200;
  m.hello_reply.c_puct = 1.25;
  m.hello_reply.temp_moves = 12;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.hello_reply.algorithm, PB_ALGO_ALPHAZERO);
  assert_int_equal(d.hello_reply.simulations, 200);
  assert_true(d.hello_reply.c_puct == 1.25);
  assert_int_equal(d.hello_reply.temp_moves, 12);
  pb_msg_free(&d);
  m.hello_reply.simulations = 0;
  encode_refused(&m, PB_EINVAL, "simulations");
  m.hello_reply.simulations = 10;
  m.hello_reply.c_puct = 0;
  encode_refused(&m, PB_EINVAL, "c_puct");
  m.hello_reply.c_puct = 1;
  m.hello_reply.algorithm = 7;
  encode_refused(&m, PB_EINVAL, "algorithm");
  /* PROBS replies need none of them */
  m.hello_reply.algorithm = PB_ALGO_PROBS;
  m.hello_reply.simulations = 0;
  m.hello_reply.c_puct = 0;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.hello_reply.algorithm, PB_ALGO_PROBS);
  pb_msg_free(&d);
}

static void test_round_trip_search(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 12, 0);
  enum { N = 300 };
  pb_state_t st[N];
  for (int i = 0; i < N; i++) {
    pb_state_t ep[42];
    int fr;
    uint32_t n = play_episode(&r, &pb_game_connect4, ep, &fr);
    st[i] = ep[pb_rng_below(&r, n)];
  }
  pb_msg_t m, d;
  pb_err_t e;
  pb_msg_init(&m, PB_MSG_WORK_ITEM, RUN, PB_GAME_CONNECT4, "learner");
  pb_msg_work_item_t *w = &m.work_item;
  w->item_id = 5;
  w->lease_ms = 60000;
  w->kind = PB_WORK_SEARCH;
  w->states = st;
  w->n_states = N;
  w->v_version = 3;
  w->q_version = 2;
  w->expansions = 500;
  w->max_depth = 12;
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  check_header(&m, &d);
  assert_int_equal(d.work_item.kind, PB_WORK_SEARCH);
  assert_int_equal(d.work_item.n_states, N);
  assert_memory_equal(d.work_item.states, st, sizeof st);
  assert_int_equal(d.work_item.v_version, 3);
  assert_int_equal(d.work_item.q_version, 2);
  assert_int_equal(d.work_item.expansions, 500);
  assert_int_equal(d.work_item.max_depth, 12);
  assert_int_equal(d.work_item.lease_ms, 60000);
  pb_msg_free(&d);

  static float q[N * 7];
  for (int i = 0; i < N * 7; i++) q[i] = (float)(pb_rng_uniform(&r) * 2 - 1);
  q[0] = -0.0f;
  q[1] = 1e-40f; /* subnormal: still bit-exact */
  q[2] = 0.0f;
  pb_msg_init(&m, PB_MSG_SEARCH_RESULT, RUN, PB_GAME_CONNECT4, SENDER);
  m.search_result = (pb_msg_search_result_t){5, N, 7, q};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.search_result.item_id, 5);
  assert_int_equal(d.search_result.n_states, N);
  assert_int_equal(d.search_result.n_actions, 7);
  assert_memory_equal(d.search_result.qvalues, q, sizeof q);
  pb_msg_free(&d);
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
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, ""};
  assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
  assert_string_equal(d.header.run_id, "");
  assert_int_equal(d.header.game_id, 0);
  pb_msg_free(&d);
  /* The worker, not knowing its run yet, accepts any reply. */
  pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
  m.hello_reply.accepted = 1;
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
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, "h"};
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
  m.header.protocol_version = 2;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EMISMATCH, "protocol_version",
                 "got 2", "expected 1", SENDER, NULL);
  free(bytes);
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

/* ---- payloads that disagree with the game ----------------------------------
 */

static void test_bad_positions(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 21, 0);
  pb_state_t states[4][42];
  pb_msg_episode_t eps[4];
  pb_msg_t m;
  uint8_t *bytes;
  size_t len;
  pb_err_t e;
  make_selfplay(&m, &r, 4, states, eps);

  /* A stone floating in the air of column 1 in episode 2. */
  pb_state_t keep = states[2][1];
  states[2][1].w[1] |= 1ULL << 5;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EPROTO, "episodes[2].states[1]",
                 "connect4", NULL);
  free(bytes);
  states[2][1] = keep;

  /* Legal positions, but not one game: two positions swapped. */
  assert_true(eps[1].n_states >= 7);
  pb_state_t t = states[1][3];
  states[1][3] = states[1][4];
  states[1][4] = t;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EPROTO, "episodes[1].states[",
                 "not reachable", NULL);
  free(bytes);
  states[1][4] = states[1][3];
  states[1][3] = t;

  /* A finished game inside an episode: after its last move. */
  int done = 0;
  uint8_t acts[PB_MAX_ACTIONS];
  pb_state_t last = states[0][eps[0].n_states - 1], end = last;
  int k = pb_game_connect4.legal(&last, acts);
  for (int i = 0; i < k; i++) {
    end = last;
    pb_game_connect4.step(&end, acts[i], &done);
    if (done) break;
  }
  assert_true(done);
  states[0][eps[0].n_states] = end;
  eps[0].n_states++;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EPROTO, "episodes[0].states[",
                 "finished", NULL);
  free(bytes);
  eps[0].n_states--;

  /* A win claimed where no move wins: cut an episode short. */
  eps[3].n_states = 3;
  eps[3].final_reward = 1;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EPROTO, "episodes[3].final_reward",
                 NULL);
  free(bytes);

  /* The same floating stone in a search item. */
  pb_msg_init(&m, PB_MSG_WORK_ITEM, RUN, PB_GAME_CONNECT4, "learner");
  pb_state_t bad[3] = {states[0][0], states[0][1], states[0][1]};
  bad[2].w[1] |= 1ULL << 12;
  m.work_item = (pb_msg_work_item_t){.item_id = 1,
                                     .lease_ms = 10,
                                     .kind = PB_WORK_SEARCH,
                                     .states = bad,
                                     .n_states = 3,
                                     .expansions = 1,
                                     .max_depth = 1};
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  expect_refusal(bytes, len, &EXPECT_C4, PB_EPROTO, "search.states[2]", NULL);
  free(bytes);
}

static void test_bad_sizes(void **state) {
  (void)state;
  wbuf_t body, sub, env;
  uint8_t st[16 * 3] = {0}; /* empty boards: valid Connect Four positions */

  /* SearchWork: 3 states announced, 2.5 sent. */
  sub.n = 0;
  w_bytes(&sub, 1, st, 40);
  w_uint(&sub, 2, 3);
  w_uint(&sub, 5, 10);
  w_uint(&sub, 6, 4);
  body.n = 0;
  w_uint(&body, 1, 8);
  w_uint(&body, 2, 1000);
  w_sub(&body, 4, &sub);
  w_envelope(&env, 1, RUN, 1, "learner", F_WORK_ITEM, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "search.states",
                 "40 bytes", "48", NULL);
  /* With the right length the same message is fine. */
  sub.n = 0;
  w_bytes(&sub, 1, st, 48);
  w_uint(&sub, 2, 3);
  w_uint(&sub, 5, 10);
  w_uint(&sub, 6, 4);
  body.n = 0;
  w_uint(&body, 1, 8);
  w_uint(&body, 2, 1000);
  w_sub(&body, 4, &sub);
  w_envelope(&env, 1, RUN, 1, "learner", F_WORK_ITEM, &body);
  pb_msg_t d;
  pb_err_t e;
  assert_int_equal(pb_msg_decode(env.b, env.n, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.work_item.n_states, 3);
  pb_msg_free(&d);

  /* Episode: states for 2 positions, n_states says 1. */
  wbuf_t ep;
  ep.n = 0;
  w_bytes(&ep, 1, st, 32);
  w_uint(&ep, 2, 1);
  body.n = 0;
  w_uint(&body, 1, 3);
  w_sub(&body, 2, &ep);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "episodes[0].states",
                 "32 bytes", NULL);
  /* An episode longer than any Connect Four game. */
  ep.n = 0;
  w_bytes(&ep, 1, st, 16);
  w_uint(&ep, 2, 43);
  body.n = 0;
  w_sub(&body, 2, &ep);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "episodes[0].n_states",
                 "43", NULL);
  /* final_reward 2. */
  ep.n = 0;
  w_bytes(&ep, 1, st, 16);
  w_uint(&ep, 2, 1);
  w_sint(&ep, 3, 2);
  body.n = 0;
  w_sub(&body, 2, &ep);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "final_reward", NULL);
  /* No episodes at all. */
  body.n = 0;
  w_uint(&body, 1, 3);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "episodes", NULL);

  /* SearchResult: qvalues of 2 x 7 floats less 4 bytes. */
  float q[14] = {0};
  body.n = 0;
  w_uint(&body, 1, 8);
  w_uint(&body, 2, 2);
  w_uint(&body, 3, 7);
  w_bytes(&body, 4, q, 52);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "qvalues", "52 bytes",
                 "56", NULL);
  /* n_actions that is not the game's. */
  body.n = 0;
  w_uint(&body, 2, 2);
  w_uint(&body, 3, 8);
  w_bytes(&body, 4, q, 56);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "n_actions", "8", NULL);
  /* n_states over the cap. */
  body.n = 0;
  w_uint(&body, 2, PB_MSG_MAX_STATES + 1);
  w_uint(&body, 3, 7);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "n_states", NULL);
  /* A NaN target. */
  q[9] = NAN;
  body.n = 0;
  w_uint(&body, 2, 2);
  w_uint(&body, 3, 7);
  w_bytes(&body, 4, q, 56);
  w_envelope(&env, 1, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "qvalues[1][2]", "finite",
                 NULL);
}

static void test_bad_fields(void **state) {
  (void)state;
  wbuf_t body, env;
  char longid[PB_MSG_ID_MAX + 2];
  memset(longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';

  body.n = 0;
  w_uint(&body, 1, 1);
  w_uint(&body, 2, 1);
  w_envelope(&env, 1, RUN, 1, longid, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "sender_id", "64", NULL);
  w_envelope(&env, 1, longid, 1, SENDER, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "run_id", NULL);
  w_envelope(&env, 1, RUN, 1, "", F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "sender_id", "empty",
                 NULL);
  w_envelope(&env, 1, RUN, 1, "bad\nname", F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "sender_id", "0x0a",
                 NULL);
  /* Role 7, threads 0. */
  body.n = 0;
  w_uint(&body, 1, 7);
  w_uint(&body, 2, 1);
  w_envelope(&env, 1, RUN, 1, SENDER, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "role", "7", NULL);
  body.n = 0;
  w_uint(&body, 1, 1);
  w_envelope(&env, 1, RUN, 1, SENDER, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "threads", NULL);
  /* Phase 9. */
  body.n = 0;
  w_uint(&body, 3, 9);
  w_envelope(&env, 1, RUN, 1, "learner", F_ANNOUNCE, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "phase", NULL);
  /* Too many item ids in a heartbeat. */
  body.n = 0;
  for (int i = 0; i <= PB_MSG_MAX_ITEM_IDS; i++) w_uint(&body, 1, 1);
  w_envelope(&env, 1, RUN, 1, SENDER, F_HEARTBEAT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "item_ids", NULL);
  /* A reason with a control character. */
  body.n = 0;
  w_str(&body, 1, "bye\x1b[2J");
  w_envelope(&env, 1, RUN, 1, SENDER, F_BYE, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "reason", "0x1b", NULL);
  /* No body, no header. */
  expect_refusal(env.b, 0, &EXPECT_C4, PB_EPROTO, "header", NULL);
  wbuf_t h = {.n = 0};
  w_uint(&h, 1, 1);
  w_str(&h, 2, RUN);
  w_uint(&h, 3, 1);
  w_str(&h, 4, SENDER);
  env.n = 0;
  w_sub(&env, 1, &h);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "body", NULL);
  /* A body from a future version: an unknown field number. */
  w_sub(&env, 40, &h);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "body", NULL);
}

static void test_writer_matches_encoder(void **state) {
  (void)state;
  uint64_t ids[3] = {5, 300, 1ULL << 40};
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, PB_GAME_CONNECT4, SENDER);
  m.heartbeat = (pb_msg_heartbeat_t){ids, 3};
  uint8_t *bytes;
  size_t len;
  pb_err_t e;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  /* proto3 packs repeated scalars: one length-delimited run of varints. */
  wbuf_t packed = {.n = 0}, body = {.n = 0}, env;
  for (int i = 0; i < 3; i++) w_varint(&packed, ids[i]);
  w_bytes(&body, 1, packed.b, packed.n);
  w_envelope(&env, 1, RUN, 1, SENDER, F_HEARTBEAT, &body);
  assert_int_equal(env.n, len);
  assert_memory_equal(env.b, bytes, len);
  free(bytes);
}

static void test_encode_refuses(void **state) {
  (void)state;
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_HELLO, RUN, PB_GAME_CONNECT4, "");
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, "h"};
  encode_refused(&m, PB_EINVAL, "sender_id");
  pb_msg_init(&m, PB_MSG_HELLO, RUN, PB_GAME_CONNECT4, SENDER);
  m.hello = (pb_msg_hello_t){0, 1, 1, "h"};
  encode_refused(&m, PB_EINVAL, "role");
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, "has space"};
  encode_refused(&m, PB_EINVAL, "hostname");
  pb_msg_init(&m, PB_MSG_BYE, RUN, PB_GAME_CONNECT4, SENDER);
  memset(m.bye.reason, 'x', sizeof m.bye.reason); /* not terminated */
  encode_refused(&m, PB_EINVAL, "reason");
  float q[7] = {0};
  pb_msg_init(&m, PB_MSG_SEARCH_RESULT, RUN, 99, SENDER);
  m.search_result = (pb_msg_search_result_t){1, 1, 7, q};
  encode_refused(&m, PB_EINVAL, "game_id");
  m.header.game_id = PB_GAME_CONNECT4;
  q[3] = INFINITY;
  encode_refused(&m, PB_EINVAL, "qvalues[0][3]");
  pb_msg_init(&m, PB_MSG_WEIGHTS, RUN, PB_GAME_CONNECT4, "learner");
  encode_refused(&m, PB_EINVAL, "empty");
  pb_msg_init(&m, 42, RUN, PB_GAME_CONNECT4, SENDER);
  encode_refused(&m, PB_EINVAL, "type");
  pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
  m.hello_reply.eps = NAN;
  encode_refused(&m, PB_EINVAL, "eps");
}

/* HelloReply.temperature: round trips, 0 (the default, meaning 1) is
 * accepted, values outside [0.01, 100] are refused by the encoder and, when
 * a peer sends them anyway, by the decoder, naming the field. */
static void w_double(wbuf_t *w, int field, double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  w_varint(w, (uint64_t)field << 3 | 1);
  for (int i = 0; i < 8; i++) {
    assert_true(w->n < sizeof w->b);
    w->b[w->n++] = (uint8_t)(u >> (8 * i));
  }
}

static void test_hello_reply_temperature(void **state) {
  (void)state;
  pb_msg_t m, d;
  pb_err_t e;
  const double good[] = {0.0, 0.01, 0.3, 1.0, 2.5, 100.0};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
    m.hello_reply.accepted = 1;
    m.hello_reply.eps = 0.25;
    m.hello_reply.alpha = 0.3;
    m.hello_reply.max_turns = 42;
    m.hello_reply.temperature = good[i];
    assert_int_equal(round_trip(&m, &EXPECT_C4, &d, &e), 0);
    assert_int_equal(d.type, PB_MSG_HELLO_REPLY);
    assert_true(d.hello_reply.temperature == good[i]);
    assert_true(d.hello_reply.eps == 0.25 && d.hello_reply.alpha == 0.3);
    assert_int_equal(d.hello_reply.max_turns, 42);
    pb_msg_free(&d);
  }
  const double bad[] = {0.005, 0.00999, 101.0, 100.0001, -1.0, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_msg_init(&m, PB_MSG_HELLO_REPLY, RUN, PB_GAME_CONNECT4, "learner");
    m.hello_reply.accepted = 1;
    m.hello_reply.temperature = bad[i];
    encode_refused(&m, PB_EINVAL, "temperature");
  }
  /* a peer's bytes: the same rule on decoding */
  wbuf_t body, env;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    body.n = 0;
    w_uint(&body, 1, 1);
    w_double(&body, 10, bad[i]);
    w_envelope(&env, 1, RUN, 1, "learner", 11, &body);
    expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "temperature", NULL);
  }
  /* positive control: the same bytes with a good value decode */
  body.n = 0;
  w_uint(&body, 1, 1);
  w_double(&body, 10, 0.5);
  w_envelope(&env, 1, RUN, 1, "learner", 11, &body);
  assert_int_equal(pb_msg_decode(env.b, env.n, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.type, PB_MSG_HELLO_REPLY);
  assert_int_equal(d.hello_reply.accepted, 1);
  assert_true(d.hello_reply.temperature == 0.5);
  pb_msg_free(&d);
}

/* ---- garbage never crashes
 * --------------------------------------------------- */

static void expect_any_error(const uint8_t *b, size_t n) {
  pb_msg_t out;
  pb_err_t e = {0};
  int rc = pb_msg_decode(b, n, &EXPECT_C4, &out, &e);
  assert_true(rc == PB_EPROTO || rc == PB_EMISMATCH);
  assert_int_equal(e.code, rc);
  assert_true(strlen(e.msg) > 0);
  assert_null(out.pb__mem);
  pb_msg_free(&out);
}

static void test_garbage(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 31, 0);
  uint8_t b[512];
  for (int i = 0; i < 3000; i++) {
    size_t n = pb_rng_below(&r, sizeof b + 1);
    for (size_t k = 0; k < n; k++) b[k] = (uint8_t)pb_rng_next(&r);
    /* Half the time start like an Envelope with a header, to get deeper. */
    if (n > 4 && (i & 1)) {
      b[0] = 0x0a;
      b[1] = (uint8_t)pb_rng_below(&r, 40);
    }
    expect_any_error(b, n);
  }
  expect_any_error(NULL, 0);
}

static void test_truncated_and_flipped(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 41, 0);
  pb_state_t states[3][42];
  pb_msg_episode_t eps[3];
  pb_msg_t m;
  make_selfplay(&m, &r, 3, states, eps);
  uint8_t *bytes;
  size_t len;
  pb_err_t e;
  assert_int_equal(pb_msg_encode(&m, &bytes, &len, &e), 0);
  for (size_t n = 0; n < len; n++) expect_any_error(bytes, n);

  /* Flip every byte (all bits, then the low bit): never a crash, nearly
   * always a refusal; what is accepted must still decode cleanly. */
  uint8_t *copy = malloc(len);
  int refused = 0, total = 0;
  for (int mask = 0xff; mask >= 1; mask = mask == 0xff ? 1 : 0) {
    for (size_t i = 0; i < len; i++) {
      memcpy(copy, bytes, len);
      copy[i] ^= (uint8_t)mask;
      pb_msg_t out;
      int rc = pb_msg_decode(copy, len, &EXPECT_C4, &out, &e);
      assert_true(rc == 0 || rc == PB_EPROTO || rc == PB_EMISMATCH);
      if (rc == 0) {
        assert_int_equal(out.type, PB_MSG_SELFPLAY_RESULT);
        assert_true(out.selfplay_result.n_episodes >= 1);
      }
      refused += rc != 0;
      total++;
      pb_msg_free(&out);
    }
  }
  /* Only item_id, q_version and a few varint bits can change harmlessly. */
  assert_true(refused > total * 8 / 10);
  free(copy);
  free(bytes);
}

/* One valid encoding of every message type (caller frees each). */
static int make_corpus(uint8_t **out, size_t *lens) {
  pb_rng_t r;
  pb_rng_seed(&r, 61, 0);
  static pb_state_t states[2][42];
  static pb_msg_episode_t eps[2];
  static float q[3 * 7];
  static uint8_t wts[40];
  static uint64_t ids[3] = {1, 2, 3};
  int n = 0;
  pb_err_t e;
  for (int t = PB_MSG_HELLO; t < PB_MSG_TYPE_COUNT; t++) {
    pb_msg_t m;
    pb_msg_init(&m, t, RUN, PB_GAME_CONNECT4, SENDER);
    switch (t) {
      case PB_MSG_HELLO:
        m.hello = (pb_msg_hello_t){1, 2, 3, "h"};
        break;
      case PB_MSG_HELLO_REPLY:
        m.hello_reply.accepted = 1;
        m.hello_reply.eps = 0.5;
        m.hello_reply.max_turns = 42;
        break;
      case PB_MSG_WORK_REQUEST:
        m.work_request.role = 2;
        break;
      case PB_MSG_WORK_ITEM:
        m.work_item = (pb_msg_work_item_t){.item_id = 3,
                                           .lease_ms = 9,
                                           .kind = PB_WORK_SEARCH,
                                           .states = states[0],
                                           .n_states = 5,
                                           .expansions = 4,
                                           .max_depth = 2};
        break;
      case PB_MSG_SELFPLAY_RESULT:
        make_selfplay(&m, &r, 2, states, eps);
        break;
      case PB_MSG_SEARCH_RESULT:
        m.search_result = (pb_msg_search_result_t){4, 3, 7, q};
        break;
      case PB_MSG_HEARTBEAT:
        m.heartbeat = (pb_msg_heartbeat_t){ids, 3};
        break;
      case PB_MSG_WEIGHTS_REQUEST:
        m.weights_request.which = 1;
        break;
      case PB_MSG_WEIGHTS:
        m.weights = (pb_msg_weights_t){1, wts, 40, wts, 8};
        break;
      case PB_MSG_ANNOUNCE:
        m.announce.phase = 1;
        break;
      case PB_MSG_REJECT:
        m.reject.code = -5;
        break;
      default:
        break;
    }
    assert_int_equal(pb_msg_encode(&m, &out[n], &lens[n], &e), 0);
    n++;
    if (t == PB_MSG_WORK_ITEM) { /* selfplay work too */
      m.work_item.kind = PB_WORK_SELFPLAY;
      m.work_item.episodes = 2;
      assert_int_equal(pb_msg_encode(&m, &out[n], &lens[n], &e), 0);
      n++;
    }
  }
  return n;
}

/* Random edits (overwrite, insert, delete, truncate) of valid messages of
 * every type: no crash, no leak, and a clean result either way. */
static void test_mutations(void **state) {
  (void)state;
  uint8_t *corpus[PB_MSG_TYPE_COUNT + 1];
  size_t lens[PB_MSG_TYPE_COUNT + 1];
  int n = make_corpus(corpus, lens);
  pb_rng_t r;
  pb_rng_seed(&r, 71, 0);
  uint8_t b[4096];
  int accepted = 0;
  for (int it = 0; it < 20000; it++) {
    int k = (int)pb_rng_below(&r, (uint32_t)n);
    size_t len = lens[k];
    assert_true(len + 16 <= sizeof b);
    memcpy(b, corpus[k], len);
    int edits = 1 + (int)pb_rng_below(&r, 4);
    for (int j = 0; j < edits && len > 0; j++) {
      size_t at = pb_rng_below(&r, (uint32_t)len);
      switch (pb_rng_below(&r, 4)) {
        case 0:
          b[at] = (uint8_t)pb_rng_next(&r);
          break;
        case 1: /* insert one byte */
          memmove(b + at + 1, b + at, len - at);
          b[at] = (uint8_t)pb_rng_next(&r);
          len++;
          break;
        case 2: /* delete one byte */
          memmove(b + at, b + at + 1, len - at - 1);
          len--;
          break;
        default:
          len = at;
          break;
      }
    }
    pb_msg_t out;
    pb_err_t e = {0};
    int rc = pb_msg_decode(b, len, &EXPECT_C4, &out, &e);
    assert_true(rc == 0 || rc == PB_EPROTO || rc == PB_EMISMATCH);
    if (rc == 0) {
      accepted++;
      assert_true(out.type > PB_MSG_NONE && out.type < PB_MSG_TYPE_COUNT);
      if (out.type != PB_MSG_HELLO) { /* a Hello may name neither */
        assert_int_equal(out.header.game_id, PB_GAME_CONNECT4);
        assert_string_equal(out.header.run_id, RUN);
      }
    } else {
      assert_true(strlen(e.msg) > 0);
    }
    pb_msg_free(&out);
  }
  assert_true(accepted < 20000 / 2);
  for (int i = 0; i < n; i++) free(corpus[i]);
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
      cmocka_unit_test(test_hello_reply_alphazero),
      cmocka_unit_test(test_round_trip_search),
      cmocka_unit_test(test_round_trip_tictactoe),
      cmocka_unit_test(test_hello_before_run_is_known),
      cmocka_unit_test(test_mismatch),
      cmocka_unit_test(test_bad_positions),
      cmocka_unit_test(test_bad_sizes),
      cmocka_unit_test(test_bad_fields),
      cmocka_unit_test(test_writer_matches_encoder),
      cmocka_unit_test(test_encode_refuses),
      cmocka_unit_test(test_hello_reply_temperature),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_truncated_and_flipped),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_free_and_buffers),
      cmocka_unit_test(test_worker_size_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
