/* fn_fixtures.h - the stand-in V (and the solver) that test_abnet.c,
 * test_abtargets.c and test_bpip.c search over: hashed noise, noise in 5 levels (ties), or
 * the exact value. Each test adds its own Q. Include after cmocka.h. */
#ifndef PB_TEST_FN_FIXTURES_H
#define PB_TEST_FN_FIXTURES_H

#include <math.h>
#include <stdint.h>

#include "err.h"
#include "evalfn.h"
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


/* V through the evalfn (counting rows; call number fail_at fails). */
static inline int fn_cb_value(void *ctx, const pb_state_t *s, int n,
                              float *out, pb_err_t *err) {
  fn_t *f = ctx;
  if (++f->calls == f->fail_at)
    return pb_err_set(err, PB_ENN, "test: call %d fails", f->calls);
  f->v_rows += (uint64_t)n;
  for (int i = 0; i < n; i++) out[i] = fn_v(f, &s[i]);
  return 0;
}

/* Q from the children: each legal move's exact value (kind 2) or hashed
 * noise of the child, 0 on illegal actions. */
static inline int fn_cb_q_children(void *ctx, const pb_state_t *s, int n,
                                   float *out, pb_err_t *err) {
  fn_t *f = ctx;
  if (++f->calls == f->fail_at)
    return pb_err_set(err, PB_ENN, "test: call %d fails", f->calls);
  f->q_rows += (uint64_t)n;
  const int A = f->g->num_actions;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = f->g->legal(&s[i], legal);
    for (int a = 0; a < A; a++) out[i * A + a] = 0.0f;
    for (int k = 0; k < nl; k++) {
      pb_state_t c = s[i];
      int done = 0;
      float r = f->g->step(&c, legal[k], &done);
      float q = f->kind == 2 ? (done ? r : (float)-exact(f, &c))
                             : noise(hash_state(&c) * 31 + 7, 0);
      out[i * A + legal[k]] = q;
    }
  }
  return 0;
}

/* V and Q from the children, as an evalfn. */
static inline pb_evalfn_t fn_evfn(fn_t *f) {
  pb_evalfn_t ev = {fn_cb_value, fn_cb_q_children, f};
  return ev;
}

/* V clamped to [-1, 1], NaN as -1: what the searches use at a horizon. */
static inline float fn_clampv(float x) {
  return !(x >= -1.0f) ? -1.0f : x > 1.0f ? 1.0f : x;
}

/* Plain depth-d negamax over V (d >= 1): children at the horizon are
 * worth -V, finished games their reward. The brute-force reference. */
static inline float fn_negamax(fn_t *f, const pb_state_t *s, int d) {
  const pb_game_t *g = f->g;
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  float best = -INFINITY;
  for (int k = 0; k < n; k++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[k], &done);
    float sc = done ? r
               : d == 1 ? -fn_clampv(fn_v(f, &c))
                        : -fn_negamax(f, &c, d - 1);
    if (sc > best) best = sc;
  }
  return best;
}

#endif
