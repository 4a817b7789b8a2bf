/* plain_net.h - a deterministic stand-in for a policy+value network, for
 * the MCTS tests (test_mcts, test_azplay): uniform (logits 0, value 0) or
 * logits and value from a hash of the position; fails on call `fail_at`
 * (0: never). */
#ifndef PB_TEST_PLAIN_NET_H
#define PB_TEST_PLAIN_NET_H

#include "err.h"
#include "game.h"
#include "rng.h"

typedef struct {
  const pb_game_t *g;
  int calls, rows, fail_at;
  int hashed; /* 0: uniform (logits 0, value 0); 1: hashes of the state */
} net_t;

static uint64_t hash_state(const pb_state_t *s) {
  uint64_t h = 0x12345;
  for (int i = 0; i < PB_STATE_WORDS; i++) h = pb_mix64(h ^ s->w[i]);
  return h;
}

static int net_eval(void *ctx, const pb_state_t *s, int n, float *policy,
                    float *value, pb_err_t *err) {
  net_t *nt = ctx;
  if (++nt->calls == nt->fail_at)
    return pb_err_set(err, PB_ENN, "net: call %d fails", nt->calls);
  nt->rows += n;
  const int A = nt->g->num_actions;
  for (int i = 0; i < n; i++) {
    uint64_t h = nt->hashed ? hash_state(&s[i]) : 0;
    value[i] = nt->hashed ? (float)((h >> 40) % 2001) / 1000.0f - 1.0f : 0.0f;
    for (int a = 0; a < A; a++)
      policy[i * A + a] =
          nt->hashed ? (float)(pb_mix64(h + (uint64_t)a) % 1000) / 250.0f : 0.0f;
  }
  return 0;
}

#endif
