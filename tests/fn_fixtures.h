/* fn_fixtures.h - the stand-in V (and the solver) that test_abnet.c and
 * test_bpip.c search over: hashed noise, noise in 5 levels (ties), or
 * the exact value. Each test adds its own Q. Include after cmocka.h. */
#ifndef PB_TEST_FN_FIXTURES_H
#define PB_TEST_FN_FIXTURES_H

#include <math.h>
#include <stdint.h>

#include "game.h"
#include "rng.h"
#include "solver.h"

/* How a test's V and Q are made. */
typedef struct {
  const pb_game_t *g;
  int kind;          /* 0: hashed noise, 1: hashed noise in 5 levels (ties),
                        2: exact (the solver) */
  pb_solver_t *sol;  /* kind 2 */
  int fail_at;       /* the call that fails (0: none) */
  int calls;
  uint64_t v_rows, q_rows;
} fn_t;

static uint64_t hash_state(const pb_state_t *s) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < PB_STATE_WORDS; i++) h = pb_mix64(h ^ s->w[i]);
  return h;
}

static float noise(uint64_t h, int levels) {
  float x = (float)((h >> 11) % 20001) / 10000.0f - 1.0f; /* [-1, 1] */
  return levels ? roundf(x * 2.0f) / 2.0f : x;
}

/* The exact value of s for its side to move. */
static int exact(fn_t *f, const pb_state_t *s) {
  pb_solve_value_t v;
  pb_err_t err;
  if (pb_solver_solve(f->sol, s, 1, &v, &err) != 0) fail_msg("%s", err.msg);
  return v.result;
}

static float fn_v(fn_t *f, const pb_state_t *s) {
  return f->kind == 2 ? (float)exact(f, s) : noise(hash_state(s), f->kind);
}

#endif
