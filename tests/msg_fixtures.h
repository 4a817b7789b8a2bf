/* msg_fixtures.h - helpers shared by the wire message tests (test_msg.c,
 * test_msg_hostile.c): the run they talk in, random self-play results,
 * encode/decode round trips and expected refusals. Header-only (static
 * inline functions) so each test program that needs them includes it. */
#ifndef PB_TEST_MSG_FIXTURES_H
#define PB_TEST_MSG_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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
static inline uint32_t play_episode(pb_rng_t *r, const pb_game_t *g,
                                    pb_state_t *out, int *final_reward) {
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
static inline void make_selfplay(pb_msg_t *m, pb_rng_t *r, int n_ep,
                                 pb_state_t (*states)[42],
                                 pb_msg_episode_t *eps) {
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
static inline int round_trip(const pb_msg_t *m, const pb_msg_expect_t *ex,
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
static inline void expect_refusal(const uint8_t *bytes, size_t len,
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

static inline void encode_refused(const pb_msg_t *m, int code,
                                  const char *needle) {
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

/* A decoded message's type and header are the sent one's. */
static inline void check_header(const pb_msg_t *a, const pb_msg_t *b) {
  assert_int_equal(a->type, b->type);
  assert_int_equal(a->header.protocol_version, b->header.protocol_version);
  assert_string_equal(a->header.run_id, b->header.run_id);
  assert_int_equal(a->header.game_id, b->header.game_id);
  assert_string_equal(a->header.sender_id, b->header.sender_id);
}

#endif
