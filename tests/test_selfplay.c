/* test_selfplay.c - move selection (with its temperature) and episode
 * generation (common/train/selfplay) and the episode store with its V targets
 * (common/train/episodes). */
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

/* pb_selfplay_check takes every episode self-play makes (decided games,
 * games cut at the limit, every game) and refuses each kind of forgery:
 * a one-position "draw", a wrong outcome, a position skipped or made up,
 * a game longer than the run's limit, a start elsewhere. */
static void test_check_episodes(void **state) {
  (void)state;
  const char *games[] = {"connect4", "tictactoe", "othello", "toguz"};
  pb_err_t err;
  for (int gi = 0; gi < 4; gi++) {
    const pb_game_t *g = pb_game_by_name(games[gi]);
    for (int mt = 5; mt <= 400; mt += 395) {
      uint64_t h[30];
      pb_episodes_t e;
      pb_episodes_init(&e);
      run_and_hash(g, 4, 30, mt, 11, h, &e);
      int decided = 0;
      for (size_t k = 0; k < e.n_eps; k++) {
        const pb_state_t *s = e.states + e.start[k];
        const uint32_t n = e.len[k];
        const int r = e.reward[k];
        decided += r != 0;
        assert_int_equal(pb_selfplay_check(g, s, n, r, (uint32_t)mt, &err), 0);
        /* Another outcome: refused, unless the rules allow it too (a draw
         * of a game cut at the limit). */
        for (int o = -1; o <= 1; o++) {
          if (o == r) continue;
          int rc = pb_selfplay_check(g, s, n, o, (uint32_t)mt, &err);
          if (rc == 0) continue; /* another last move gives o */
          assert_int_equal(rc, PB_ECORRUPT);
          assert_non_null(strstr(err.msg, "announced"));
        }
        /* A shorter limit than the episode's length. */
        if (n > 1) {
          assert_int_equal(pb_selfplay_check(g, s, n, r, n - 1, &err),
                           PB_ECORRUPT);
          assert_non_null(strstr(err.msg, "moves"));
        }
        /* The first positions only, as a draw: no move of the last one
         * ends the game in a draw and the game is not at the limit. */
        if (n > 2 && r != 0) {
          int rc = pb_selfplay_check(g, s, 1, 0, (uint32_t)mt, &err);
          assert_int_equal(rc, PB_ECORRUPT);
        }
        /* A position left out. */
        if (n > 3) {
          pb_state_t *c = malloc(n * sizeof *c);
          assert_non_null(c);
          memcpy(c, s, n * sizeof *c);
          memmove(&c[1], &c[2], (n - 2) * sizeof *c);
          assert_int_equal(pb_selfplay_check(g, c, n - 1, r, (uint32_t)mt, &err),
                           PB_ECORRUPT);
          assert_non_null(strstr(err.msg, "legal move"));
          /* Not from the start. */
          assert_int_equal(
              pb_selfplay_check(g, s + 1, n - 1, r, (uint32_t)mt, &err),
              PB_ECORRUPT);
          free(c);
        }
      }
      if (mt > 100) assert_true(decided > 0);
      pb_episodes_free(&e);
    }
    /* The forgery of issue 26: the initial position alone, as a draw. */
    pb_state_t s0;
    g->reset(&s0);
    assert_int_equal(pb_selfplay_check(g, &s0, 1, 0, 400, &err), PB_ECORRUPT);
    assert_int_equal(pb_selfplay_check(g, &s0, 0, 0, 400, &err), PB_ECORRUPT);
    /* A one-move run: the draw at the limit is what self-play makes. */
    assert_int_equal(pb_selfplay_check(g, &s0, 1, 0, 1, &err), 0);
  }
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

/* The draw as the header defines it, written plainly: the same random
 * numbers (a Dirichlet draw, then one uniform) and the same sums. */
static int ref_pick(const float *q, const uint8_t *acts, int na, double eps,
                    double alpha, double temperature, pb_rng_t *rng) {
  double p[PB_MAX_ACTIONS], eta[PB_MAX_ACTIONS], mx = -INFINITY, sum = 0;
  for (int j = 0; j < na; j++)
    if (q[acts[j]] > mx) mx = q[acts[j]];
  for (int j = 0; j < na; j++) sum += p[j] = exp((q[acts[j]] - mx) / temperature);
  pb_rng_dirichlet(rng, alpha, na, eta);
  double u = pb_rng_uniform(rng), acc = 0;
  for (int j = 0; j < na; j++) {
    acc += (1 - eps) * p[j] / sum + eps * eta[j];
    if (u < acc) return acts[j];
  }
  return acts[na - 1];
}

/* softmax(Q / T): T = 1 is the old distribution draw for draw; a low T
 * is nearly greedy, a high T nearly uniform; bad temperatures are
 * refused. */
static void test_pick_temperature(void **state) {
  (void)state;
  const float q7[7] = {0.0f, 1.0f, 9.0f, -1.0f, 0.5f, 2.0f, 0.0f};
  const uint8_t acts7[4] = {0, 1, 3, 5};
  /* draw for draw equal to the plain softmax(Q / T) with the same stream,
   * with and without noise */
  const double temps[] = {1.0, 0.5, 3.0, 0.01, 100.0};
  for (size_t ti = 0; ti < sizeof temps / sizeof temps[0]; ti++)
    for (int noisy = 0; noisy < 2; noisy++) {
      pb_rng_t r1, r2;
      pb_rng_seed(&r1, 11 + ti, noisy);
      pb_rng_seed(&r2, 11 + ti, noisy);
      double eps = noisy ? 0.25 : 0.0;
      for (int i = 0; i < 2000; i++) {
        int a = pb_selfplay_pick(q7, acts7, 4, eps, 0.5, temps[ti], &r1);
        int b = ref_pick(q7, acts7, 4, eps, 0.5, temps[ti], &r2);
        if (a != b)
          fail_msg("T %g eps %g draw %d: %d, reference %d", temps[ti], eps, i,
                   a, b);
      }
    }

  const float q[4] = {1.0f, 0.0f, 0.0f, 0.0f};
  const uint8_t acts[4] = {0, 1, 2, 3};
  enum { N = 10000 };
  int count[4] = {0};
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  /* T = 1: softmax(Q) itself, p(0) = e / (e + 3) = 0.475 */
  for (int i = 0; i < N; i++)
    count[pb_selfplay_pick(q, acts, 4, 0.0, 0.5, 1.0, &rng)]++;
  double p0 = exp(1.0) / (exp(1.0) + 3.0);
  assert_true(fabs(count[0] - N * p0) < 5 * sqrt(N * p0 * (1 - p0)));
  /* T = 0.1: p(0) = 1 / (1 + 3 e^-10) = 0.99986 */
  memset(count, 0, sizeof count);
  for (int i = 0; i < N; i++)
    count[pb_selfplay_pick(q, acts, 4, 0.0, 0.5, 0.1, &rng)]++;
  print_message("T 0.1: best action %d of %d draws\n", count[0], N);
  assert_true(count[0] > N * 99 / 100);
  /* T = 10: p(0) = e^0.1 / (e^0.1 + 3) = 0.269, the others 0.244 each */
  memset(count, 0, sizeof count);
  for (int i = 0; i < N; i++)
    count[pb_selfplay_pick(q, acts, 4, 0.0, 0.5, 10.0, &rng)]++;
  double z = exp(0.1) + 3.0;
  for (int j = 0; j < 4; j++) {
    double p = (j == 0 ? exp(0.1) : 1.0) / z;
    assert_true(fabs(count[j] - N * p) < 5 * sqrt(N * p * (1 - p)));
    assert_true(abs(count[j] - N / 4) < N / 20); /* close to uniform */
  }
  /* and T = 1 was not already that flat */
  assert_true(count[0] < N * p0 - 1000);

  /* the engine refuses temperatures outside [0.01, 100] */
  const pb_game_t *g = pb_game_by_name("connect4");
  const double bad[] = {0.0, 1000.0, 0.009, 100.5, -1.0, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_selfplay_opts_t o = {4, 100, 0.25, 0.5, bad[i]};
    pb_err_t err;
    pb_err_clear(&err);
    assert_null(pb_selfplay_new(g, &o, &err));
    assert_int_equal(err.code, PB_EINVAL);
    assert_non_null(strstr(err.msg, "temperature"));
  }
  const double good[] = {0.01, 1.0, 100.0};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pb_selfplay_opts_t o = {4, 100, 0.25, 0.5, good[i]};
    pb_err_t err;
    pb_selfplay_t *sp = pb_selfplay_new(g, &o, &err);
    assert_non_null(sp);
    pb_selfplay_destroy(&sp);
  }
}

/* The temperature reaches the games: with T = 0.01 and eps 0, play is
 * (nearly) greedy in Q, so most episodes are the same game; with T = 100
 * they all differ. */
static void test_selfplay_temperature(void **state) {
  (void)state;
  const pb_game_t *g = pb_game_by_name("connect4");
  pb_evalfn_t fn = {NULL, q_hashed, (void *)g};
  pb_err_t err;
  const double temps[] = {0.01, 100.0};
  int distinct[2], most[2];
  for (int ti = 0; ti < 2; ti++) {
    pb_selfplay_opts_t o = {4, 100, 0.0, 0.5, temps[ti]};
    pb_selfplay_t *sp = pb_selfplay_new(g, &o, &err);
    assert_non_null(sp);
    pb_episodes_t e;
    pb_episodes_init(&e);
    assert_int_equal(pb_selfplay_run(sp, 20, 9, 0, &fn, 1, &e, &err), 0);
    check_episodes(g, &e, 100);
    uint64_t h[20];
    for (int k = 0; k < 20; k++) h[k] = episode_hash(g, &e, k);
    qsort(h, 20, sizeof *h, cmp_u64);
    distinct[ti] = 1;
    most[ti] = 1;
    for (int k = 1, run = 1; k < 20; k++) {
      run = h[k] == h[k - 1] ? run + 1 : 1;
      distinct[ti] += h[k] != h[k - 1];
      if (run > most[ti]) most[ti] = run;
    }
    pb_episodes_free(&e);
    pb_selfplay_destroy(&sp);
  }
  /* q_hashed's values are random in [-2, 2]: a near tie (within a few
   * hundredths) lets T = 0.01 stray now and then, but not often */
  print_message("T 0.01: %d distinct games, the commonest %d times; "
                "T 100: %d distinct\n",
                distinct[0], most[0], distinct[1]);
  assert_true(most[0] >= 10);
  assert_int_equal(most[1], 1);
  assert_int_equal(distinct[1], 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pick_follows_softmax),
      cmocka_unit_test(test_episodes_real_and_deterministic),
      cmocka_unit_test(test_turn_limit),
      cmocka_unit_test(test_episode_store),
      cmocka_unit_test(test_check_episodes),
      cmocka_unit_test(test_bad_options),
      cmocka_unit_test(test_pick_temperature),
      cmocka_unit_test(test_selfplay_temperature),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
