/* learn_fixtures.h - helpers shared by the learner's tests (test_learn.c,
 * test_learn_state.c): the smoke config, learners, random Connect Four
 * episodes, made-up Q targets, one iteration of Algorithm 2, and
 * comparisons of two learners' networks and statistics. */
#ifndef PB_LEARN_FIXTURES_H
#define PB_LEARN_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "episodes.h"
#include "game.h"
#include "learn.h"
#include "nn.h"
#include "rng.h"

#define CONFIG PB_SOURCE_DIR "/configs/connect4-smoke.yaml"

static const pb_game_t *G = &pb_game_connect4;

/* The smoke config with one epoch per network, then the overrides
 * (NULL-terminated, may be NULL). */
static inline void config(pb_config_t *c, const char *const *sets) {
  pb_err_t err;
  pb_config_defaults(c);
  if (pb_config_load_file(c, CONFIG, &err) != 0) fail_msg("%s", err.msg);
  const char *base[] = {"train.v_epochs=1", "train.q_epochs=1",
                        "train.batch_size=32"};
  for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
    assert_int_equal(pb_config_apply_override(c, base[i], &err), 0);
  for (int i = 0; sets && sets[i]; i++)
    if (pb_config_apply_override(c, sets[i], &err) != 0)
      fail_msg("%s: %s", sets[i], err.msg);
  if (pb_config_check(c, &err) != 0) fail_msg("config: %s", err.msg);
}

static inline pb_learn_t *learner(const char *const *sets) {
  pb_config_t c;
  config(&c, sets);
  pb_err_t err;
  pb_learn_t *l = pb_learn_new(&c, &err);
  if (l == NULL) fail_msg("pb_learn_new: %s", err.msg);
  return l;
}

/* n random games of Connect Four from stream `seed`, as episodes (the
 * positions where a move was chosen, the last mover's reward). With
 * force_draw, every episode is stored with reward 0 (as if cut at the turn
 * limit), so every outcome target is 0. Returns the positions added. */
static inline size_t random_episodes(uint64_t seed, int n, int force_draw,
                                     pb_episodes_t *e) {
  pb_rng_t r;
  pb_rng_seed(&r, seed, 0);
  size_t total = 0;
  pb_err_t err;
  for (int k = 0; k < n; k++) {
    pb_state_t s, hist[64];
    uint32_t len = 0;
    int done = 0;
    float rew = 0;
    G->reset(&s);
    while (!done) {
      uint8_t acts[PB_MAX_ACTIONS];
      int na = G->legal(&s, acts);
      assert_true(na > 0);
      hist[len++] = s;
      rew = G->step(&s, acts[pb_rng_below(&r, (uint32_t)na)], &done);
    }
    assert_int_equal(
        pb_episodes_add(e, hist, len, force_draw ? 0 : (int)rew, 0, &err), 0);
    total += len;
  }
  return total;
}

/* Made-up Q targets for the n distinct positions of the last
 * pb_learn_distinct: a hash of (position, action, salt) in [-1, 1].
 * Caller frees. */
static inline void made_up_row(const pb_state_t *s, uint64_t salt, float *row) {
  for (int a = 0; a < G->num_actions; a++) {
    uint64_t h = pb_mix64(G->hash(s) ^ pb_mix64(salt * 131 + (uint64_t)a));
    row[a] = (float)((h >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
  }
}

static inline float *made_up_q(pb_learn_t *l, size_t n, uint64_t salt) {
  const int A = G->num_actions;
  const pb_state_t *u = pb_learn_distinct_states(l);
  float *q = malloc((n ? n : 1) * A * sizeof *q);
  assert_non_null(q);
  for (size_t i = 0; i < n; i++) made_up_row(&u[i], salt, &q[i * A]);
  return q;
}

typedef struct {
  pb_learn_stats_t v, q;
  size_t positions, distinct;
} iter_t;

/* One iteration of Algorithm 2 on given episodes, the search replaced by
 * made_up_q(salt): V (before the search in the paper's order), distinct
 * positions, Q (and V after the search when v_search_mix > 0), end. */
static inline void iterate(pb_learn_t *l, const pb_episodes_t *eps,
                           uint64_t salt, iter_t *it) {
  pb_err_t err;
  memset(it, 0, sizeof *it);
  it->positions = eps->n_states;
  if (pb_learn_v_first(l))
    assert_int_equal(pb_learn_train_v(l, eps, NULL, &it->v, &err), 0);
  size_t n = 0;
  assert_int_equal(pb_learn_distinct(l, eps, &n, &err), 0);
  assert_true(n > 0 && n <= eps->n_states);
  it->distinct = n;
  float *qt = made_up_q(l, n, salt);
  int rc = pb_learn_train_after_search(l, eps, qt, &it->v, &it->q, &err);
  if (rc != 0) fail_msg("train_after_search: %s", err.msg);
  uint64_t before = pb_learn_version(l);
  assert_int_equal(pb_learn_end_iteration(l, eps, qt, &err), 0);
  assert_int_equal(pb_learn_version(l), before + 1);
  free(qt);
}

/* The full training state of a network (weights, moments, step count). */
static inline uint8_t *state_of(pb_nn_t *nn, size_t *len) {
  uint8_t *b = NULL;
  pb_err_t err;
  assert_int_equal(pb_nn_state_save(nn, &b, len, &err), 0);
  return b;
}

static inline int same_nets(pb_learn_t *a, pb_learn_t *b) {
  int same = 1;
  for (int k = 0; k < 2; k++) {
    pb_nn_t *x = k ? pb_learn_q(a) : pb_learn_v(a);
    pb_nn_t *y = k ? pb_learn_q(b) : pb_learn_v(b);
    size_t lx, ly;
    uint8_t *bx = state_of(x, &lx), *by = state_of(y, &ly);
    same = same && lx == ly && memcmp(bx, by, lx) == 0;
    free(bx);
    free(by);
    /* the weights buffers say the same */
    pb_err_t err;
    uint8_t *wx, *wy;
    assert_int_equal(pb_nn_weights_save(x, 0, &wx, &lx, &err), 0);
    assert_int_equal(pb_nn_weights_save(y, 0, &wy, &ly, &err), 0);
    int wsame = lx == ly && memcmp(wx, wy, lx) == 0;
    free(wx);
    free(wy);
    if (same) assert_true(wsame);
  }
  return same;
}

static inline int same_stats(const pb_learn_stats_t *a,
                             const pb_learn_stats_t *b) {
  return a->loss_first == b->loss_first && a->loss_last == b->loss_last &&
         a->loss_mean == b->loss_mean && a->samples == b->samples &&
         a->steps == b->steps && a->grad_norm_max == b->grad_norm_max &&
         a->lr == b->lr;
}

#endif
