/* test_selfplay.c - move selection and episode generation (common/selfplay)
 * and the episode store with its V targets (common/episodes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "episodes.h"
#include "game.h"
#include "rng.h"
#include "selfplay.h"

static int q_hashed(void *ctx, const pb_state_t *s, int n, float *out,
                    pb_err_t *err) {
  (void)err;
  const pb_game_t *g = ctx;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < g->num_actions; a++)
      out[i * g->num_actions + a] =
          (float)((pb_mix64(g->hash(&s[i]) + (uint64_t)a) >> 40) /
                  (double)(1 << 24)) * 4.0f - 2.0f;
  return 0;
}

static void test_pick_follows_softmax(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 1, 0);
  const float q[7] = {0.0f, 1.0f, 9.0f, -1.0f, 0.5f, 2.0f, 0.0f};
  const uint8_t acts[4] = {0, 1, 3, 5}; /* column 2 (q = 9) is illegal */
  int count[7] = {0};
  const int n = 40000;
  for (int i = 0; i < n; i++) count[pb_selfplay_pick(q, acts, 4, 0.0, 0.5, 1.0, &rng)]++;
  assert_int_equal(count[2] + count[4] + count[6], 0);
  double z = exp(0.0) + exp(1.0) + exp(-1.0) + exp(2.0);
  const int idx[4] = {0, 1, 3, 5};
  for (int j = 0; j < 4; j++) {
    double p = exp(q[idx[j]]) / z;
    double sd = sqrt(n * p * (1 - p));
    assert_true(fabs(count[idx[j]] - n * p) < 5 * sd + 1);
  }
  /* With eps = 1 the choice is pure Dirichlet noise: mean uniform. */
  memset(count, 0, sizeof count);
  for (int i = 0; i < n; i++) count[pb_selfplay_pick(q, acts, 4, 1.0, 0.5, 1.0, &rng)]++;
  for (int j = 0; j < 4; j++) assert_true(abs(count[idx[j]] - n / 4) < n / 40);
}

static uint64_t episode_hash(const pb_game_t *g, const pb_episodes_t *e,
                             size_t k) {
  uint64_t h = (uint64_t)e->len[k] * 31 + (uint64_t)(e->reward[k] + 1);
  for (uint32_t t = 0; t < e->len[k]; t++)
    h = pb_mix64(h ^ g->hash(&e->states[e->start[k] + t]));
  return h;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Every episode is a real game: consecutive positions differ by one legal
 * move, and the last move ends the game with the stored reward (or the game
 * hit the turn limit with reward 0). */
static void check_episodes(const pb_game_t *g, const pb_episodes_t *e,
                           int max_turns) {
  size_t total = 0;
  for (size_t k = 0; k < e->n_eps; k++) {
    const pb_state_t *s = &e->states[e->start[k]];
    pb_state_t first;
    g->reset(&first);
    assert_memory_equal(&s[0], &first, sizeof first);
    assert_true(e->len[k] >= 1 && e->len[k] <= (uint32_t)max_turns);
    for (uint32_t t = 0; t < e->len[k]; t++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&s[t], acts), found = 0;
      float last_r = 0;
      int last_done = 0;
      for (int j = 0; j < na; j++) {
        pb_state_t c = s[t];
        int done = 0;
        float r = g->step(&c, acts[j], &done);
        if (t + 1 < e->len[k]) {
          if (!done && !memcmp(&c, &s[t + 1], sizeof c)) found = 1;
        } else if ((done && (int)r == e->reward[k]) ||
                   (!done && e->len[k] == (uint32_t)max_turns &&
                    e->reward[k] == 0)) {
          found = 1;
          last_r = r;
          last_done = done;
        }
      }
      (void)last_r;
      (void)last_done;
      assert_true(found);
      float tgt = pb_episodes_target(e, k, t);
      float want = ((e->len[k] - 1 - t) % 2 == 0) ? e->reward[k] : -e->reward[k];
      assert_true(tgt == want);
    }
    total += e->len[k];
  }
  assert_int_equal(total, e->n_states);
}

static void run_and_hash(const pb_game_t *g, int parallel, int n, int max_turns,
                         uint64_t seed, uint64_t *hashes, pb_episodes_t *e) {
  pb_err_t err;
  pb_selfplay_opts_t o = {parallel, max_turns, 0.25, 0.5, 1.0};
  pb_selfplay_t *sp = pb_selfplay_new(g, &o, &err);
  assert_non_null(sp);
  pb_evalfn_t fn = {NULL, q_hashed, (void *)g};
  pb_episodes_clear(e);
  assert_int_equal(pb_selfplay_run(sp, n, seed, 1000, &fn, 7, e, &err), 0);
  assert_int_equal(e->n_eps, n);
  check_episodes(g, e, max_turns);
  for (int k = 0; k < n; k++) hashes[k] = episode_hash(g, e, k);
  qsort(hashes, n, sizeof *hashes, cmp_u64);
  assert_int_equal(pb_selfplay_positions(sp), e->n_states);
  pb_selfplay_destroy(&sp);
  assert_null(sp);
}

static void test_episodes_real_and_deterministic(void **state) {
  (void)state;
  const char *games[] = {"connect4", "tictactoe"};
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = pb_game_by_name(games[gi]);
    enum { N = 50 };
    uint64_t h1[N], h8[N], h8b[N], hother[N];
    pb_episodes_t e;
    pb_episodes_init(&e);
    run_and_hash(g, 1, N, 100, 5, h1, &e);
    run_and_hash(g, 8, N, 100, 5, h8, &e);
    run_and_hash(g, 8, N, 100, 5, h8b, &e);
    run_and_hash(g, 8, N, 100, 6, hother, &e);
    assert_memory_equal(h1, h8, sizeof h1);  /* parallel does not matter */
    assert_memory_equal(h8, h8b, sizeof h8); /* same seed, same games */
    assert_memory_not_equal(h8, hother, sizeof h8);
    /* Rewards: some decided games in a random-ish policy. */
    int decided = 0;
    for (size_t k = 0; k < e.n_eps; k++) decided += e.reward[k] != 0;
    assert_true(decided > 0);
    pb_episodes_free(&e);
  }
}

static void test_turn_limit(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  uint64_t h[20];
  pb_episodes_t e;
  pb_episodes_init(&e);
  run_and_hash(g, 4, 20, 5, 3, h, &e); /* no C4 game ends before move 7 */
  for (size_t k = 0; k < e.n_eps; k++) {
    assert_int_equal(e.len[k], 5);
    assert_int_equal(e.reward[k], 0);
  }
  pb_episodes_free(&e);
}

static void test_episode_store(void **state) {
  (void)state;
  pb_episodes_t a, b;
  pb_err_t err;
  pb_episodes_init(&a);
  pb_episodes_init(&b);
  pb_state_t s[300];
  memset(s, 0, sizeof s);
  for (int i = 0; i < 300; i++) s[i].w[0] = (uint64_t)i;
  for (int k = 0; k < 100; k++)
    assert_int_equal(pb_episodes_add(&a, s, 1 + k % 3, k % 3 - 1, k, &err), 0);
  assert_int_equal(pb_episodes_add(&a, s, 2, 2, 0, &err), PB_EINVAL);
  assert_int_equal(a.n_eps, 100);
  assert_int_equal(pb_episodes_append(&b, &a, &err), 0);
  assert_int_equal(b.n_states, a.n_states);
  float *t = malloc(b.n_states * sizeof *t);
  pb_episodes_targets(&b, t);
  /* episode with len 3 and reward +1: targets +1, -1, +1 */
  assert_int_equal(b.len[2], 3);
  assert_true(t[b.start[2]] == 1.0f && t[b.start[2] + 1] == -1.0f &&
              t[b.start[2] + 2] == 1.0f);
  /* len 2, reward 0 */
  assert_true(t[b.start[1]] == 0.0f);
  free(t);
  pb_episodes_clear(&a);
  assert_int_equal(a.n_eps, 0);
  pb_episodes_free(&a);
  pb_episodes_free(&b);
}

static void test_bad_options(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  pb_err_t err;
  pb_selfplay_opts_t o = {0, 100, 0.25, 0.5, 1.0};
  assert_null(pb_selfplay_new(g, &o, &err));
  o.parallel = 4;
  o.alpha = 0.0;
  assert_null(pb_selfplay_new(g, &o, &err));
  o.alpha = 0.5;
  o.eps = 1.5;
  assert_null(pb_selfplay_new(g, &o, &err));
  assert_int_equal(err.code, PB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pick_follows_softmax),
      cmocka_unit_test(test_episodes_real_and_deterministic),
      cmocka_unit_test(test_turn_limit),
      cmocka_unit_test(test_episode_store),
      cmocka_unit_test(test_bad_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
