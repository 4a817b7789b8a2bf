/* test_msg_hostile.c - wire messages from a bad peer: strict refusals of
 * payloads that disagree with the game or the limits, and garbage that
 * must never crash the decoder. Round trips are in test_msg.c; the shared
 * helpers in msg_fixtures.h.
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
#include "msg_fixtures.h"
#include "rng.h"

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
                                     .n_states = 3};
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
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "learner", F_WORK_ITEM, &body);
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
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "learner", F_WORK_ITEM, &body);
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
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "episodes[0].states",
                 "32 bytes", NULL);
  /* An episode longer than any Connect Four game. */
  ep.n = 0;
  w_bytes(&ep, 1, st, 16);
  w_uint(&ep, 2, 43);
  body.n = 0;
  w_sub(&body, 2, &ep);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "episodes[0].n_states",
                 "43", NULL);
  /* final_reward 2. */
  ep.n = 0;
  w_bytes(&ep, 1, st, 16);
  w_uint(&ep, 2, 1);
  w_sint(&ep, 3, 2);
  body.n = 0;
  w_sub(&body, 2, &ep);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "final_reward", NULL);
  /* No episodes at all. */
  body.n = 0;
  w_uint(&body, 1, 3);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SELFPLAY, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "episodes", NULL);

  /* SearchResult: qvalues of 2 x 7 floats less 4 bytes. */
  float q[14] = {0};
  body.n = 0;
  w_uint(&body, 1, 8);
  w_uint(&body, 2, 2);
  w_uint(&body, 3, 7);
  w_bytes(&body, 4, q, 52);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "qvalues", "52 bytes",
                 "56", NULL);
  /* n_actions that is not the game's. */
  body.n = 0;
  w_uint(&body, 2, 2);
  w_uint(&body, 3, 8);
  w_bytes(&body, 4, q, 56);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "n_actions", "8", NULL);
  /* n_states over the cap. */
  body.n = 0;
  w_uint(&body, 2, PB_MSG_MAX_STATES + 1);
  w_uint(&body, 3, 7);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "n_states", NULL);
  /* A NaN target. */
  q[9] = NAN;
  body.n = 0;
  w_uint(&body, 2, 2);
  w_uint(&body, 3, 7);
  w_bytes(&body, 4, q, 56);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_SEARCH_RESULT, &body);
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
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, longid, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "sender_id", "64", NULL);
  w_envelope(&env, PB_PROTOCOL_VERSION, longid, 1, SENDER, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "run_id", NULL);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "", F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "sender_id", "empty",
                 NULL);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "bad\nname", F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "sender_id", "0x0a",
                 NULL);
  /* Role 7, threads 0. */
  body.n = 0;
  w_uint(&body, 1, 7);
  w_uint(&body, 2, 1);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "role", "7", NULL);
  body.n = 0;
  w_uint(&body, 1, 1);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_HELLO, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "threads", NULL);
  /* Phase 9. */
  body.n = 0;
  w_uint(&body, 3, 9);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "learner", F_ANNOUNCE, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "phase", NULL);
  /* Too many item ids in a heartbeat. */
  body.n = 0;
  for (int i = 0; i <= PB_MSG_MAX_ITEM_IDS; i++) w_uint(&body, 1, 1);
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_HEARTBEAT, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "item_ids", NULL);
  /* A reason with a control character. */
  body.n = 0;
  w_str(&body, 1, "bye\x1b[2J");
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_BYE, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "reason", "0x1b", NULL);
  /* No body, no header. */
  expect_refusal(env.b, 0, &EXPECT_C4, PB_EPROTO, "header", NULL);
  wbuf_t h = {.n = 0};
  w_uint(&h, 1, PB_PROTOCOL_VERSION);
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

/* A search item as protocol 2 wrote it: the search's settings (E, M, the
 * search, its node budget) in SearchWork fields 5-8, which protocol 3
 * retired. A peer that sends one is of another probs version: refused by
 * its header, naming both versions, before the body is read. */
static void w_search_item_v2(wbuf_t *env, uint32_t version) {
  uint8_t packed[64];
  pb_state_t s;
  pb_game_connect4.reset(&s);
  pb_game_connect4.pack(&s, packed);
  wbuf_t sw = {.n = 0}, wi = {.n = 0};
  w_bytes(&sw, 1, packed, (size_t)pb_game_connect4.state_bytes);
  w_uint(&sw, 2, 1);
  w_uint(&sw, 3, 4);
  w_uint(&sw, 4, 3);
  w_uint(&sw, 5, 10);  /* expansions */
  w_uint(&sw, 6, 3);   /* max_depth */
  w_uint(&sw, 7, 1);   /* search_algorithm: abnet */
  w_uint(&sw, 8, 100); /* nodes */
  w_uint(&wi, 1, 1);
  w_uint(&wi, 2, 1000);
  w_sub(&wi, 4, &sw);
  w_envelope(env, version, RUN, 1, "learner", F_WORK_ITEM, &wi);
}

static void test_old_search_item(void **state) {
  (void)state;
  wbuf_t env;
  pb_msg_t d;
  pb_err_t e;
  w_search_item_v2(&env, 2);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EMISMATCH, "protocol_version",
                 "got 2", "expected 3", "another probs version", NULL);
  /* The retired fields under this protocol's header (no learner sends
   * them) are unknown fields: skipped, the item is its states and
   * versions. */
  w_search_item_v2(&env, PB_PROTOCOL_VERSION);
  assert_int_equal(pb_msg_decode(env.b, env.n, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.work_item.kind, PB_WORK_SEARCH);
  assert_int_equal(d.work_item.n_states, 1);
  assert_true(d.work_item.v_version == 4 && d.work_item.q_version == 3);
  pb_msg_free(&d);
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
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, SENDER, F_HEARTBEAT, &body);
  assert_int_equal(env.n, len);
  assert_memory_equal(env.b, bytes, len);
  free(bytes);
}

static void test_encode_refuses(void **state) {
  (void)state;
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_HELLO, RUN, PB_GAME_CONNECT4, "");
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, "h", ""};
  encode_refused(&m, PB_EINVAL, "sender_id");
  pb_msg_init(&m, PB_MSG_HELLO, RUN, PB_GAME_CONNECT4, SENDER);
  m.hello = (pb_msg_hello_t){0, 1, 1, "h", ""};
  encode_refused(&m, PB_EINVAL, "role");
  m.hello = (pb_msg_hello_t){PB_ROLE_ACTOR, 1, 1, "has space", ""};
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
  m.hello_reply.accepted = 1; /* without its config */
  encode_refused(&m, PB_EINVAL, "config_yaml");
}

/* HelloReply.config_yaml (field 24) from a peer's bytes: control bytes
 * and an accepted reply without a config are refused naming the field;
 * a good config decodes to its text. */
static void test_hello_reply_config_bytes(void **state) {
  (void)state;
  pb_msg_t d;
  pb_err_t e;
  wbuf_t body, env;
  const char *bad[] = {"game: connect4\x07", "\x1b[2Jgame: x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    body.n = 0;
    w_uint(&body, 1, 1);
    w_str(&body, 24, bad[i]);
    w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "learner", 11, &body);
    expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "config_yaml", NULL);
  }
  body.n = 0;
  w_uint(&body, 1, 1); /* accepted, no config */
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "learner", 11, &body);
  expect_refusal(env.b, env.n, &EXPECT_C4, PB_EPROTO, "config_yaml", "empty",
                 NULL);
  /* protocol 1's settings fields (4, 7) are unknown fields now: skipped,
   * and the reply still needs its config */
  body.n = 0;
  w_uint(&body, 1, 1);
  w_uint(&body, 4, 1000);
  w_str(&body, 24, "game: connect4\n\tseed: 3\n");
  w_envelope(&env, PB_PROTOCOL_VERSION, RUN, 1, "learner", 11, &body);
  assert_int_equal(pb_msg_decode(env.b, env.n, &EXPECT_C4, &d, &e), 0);
  assert_int_equal(d.type, PB_MSG_HELLO_REPLY);
  assert_int_equal(d.hello_reply.accepted, 1);
  assert_string_equal(d.hello_reply.config, "game: connect4\n\tseed: 3\n");
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
        m.hello = (pb_msg_hello_t){1, 2, 3, "h", ""};
        break;
      case PB_MSG_HELLO_REPLY:
        m.hello_reply.accepted = 1;
        m.hello_reply.config = "game: connect4\ntrain:\n  eps: 0.5\n";
        m.hello_reply.config_len = strlen(m.hello_reply.config);
        break;
      case PB_MSG_WORK_REQUEST:
        m.work_request.role = 2;
        break;
      case PB_MSG_WORK_ITEM:
        m.work_item = (pb_msg_work_item_t){.item_id = 3,
                                           .lease_ms = 9,
                                           .kind = PB_WORK_SEARCH,
                                           .states = states[0],
                                           .n_states = 5};
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_positions),
      cmocka_unit_test(test_bad_sizes),
      cmocka_unit_test(test_bad_fields),
      cmocka_unit_test(test_old_search_item),
      cmocka_unit_test(test_writer_matches_encoder),
      cmocka_unit_test(test_encode_refuses),
      cmocka_unit_test(test_hello_reply_config_bytes),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_truncated_and_flipped),
      cmocka_unit_test(test_mutations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
