/* test_playcheck.c - the surprise of self-play moves (common/train/playcheck.h):
 * its arithmetic, honest actors' z against a standard normal, and a
 * player that throws its games. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "game.h"
#include "playcheck.h"
#include "rng.h"
#include "selfplay.h"

static const pb_game_t *c4(void) { return pb_game_by_id(PB_GAME_CONNECT4); }

/* A Q network stand-in: a fixed function of the position, in [-1, 1], far
 * from flat (what a trained network looks like to the test). */
static void qof(const pb_game_t *g, const pb_state_t *s, float *q) {
  const uint64_t h = g->hash(s);
  for (int a = 0; a < g->num_actions; a++)
    q[a] = (float)sin((double)((h >> (a * 5)) & 1023) * 0.37 + a);
}

enum { MAXN = 64 };

/* One episode of connect4: moves drawn by pb_selfplay_pick (eps, alpha,
 * T) from qof, except that with `throw` the first player plays its
 * lowest-Q move. States before each move into st, Q into q; returns n. */
static uint32_t episode(pb_rng_t *rng, int throw, double eps, double T,
                        pb_state_t *st, float *q, int *reward) {
  const pb_game_t *g = c4();
  const int A = g->num_actions;
  pb_state_t s;
  g->reset(&s);
  uint32_t n = 0;
  for (;;) {
    st[n] = s;
    qof(g, &s, q + (size_t)n * A);
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(&s, acts);
    const float *qs = q + (size_t)n * A;
    int a = pb_selfplay_pick(qs, acts, na, eps, 0.5, T, rng);
    if (throw && g->ply(&s) % 2 == 0) {
      a = acts[0];
      for (int j = 1; j < na; j++)
        if (qs[acts[j]] < qs[a]) a = acts[j];
    }
    n++;
    int done = 0;
    float r = g->step(&s, a, &done);
    *reward = done ? (int)lrintf(r) : 0;
    if (done || n == MAXN) return n;
  }
}

static void test_surprise_arithmetic(void **state) {
  (void)state;
  float q[PB_MAX_ACTIONS] = {0};
  uint8_t acts[3] = {0, 2, 5};
  double mean, var;
  /* Flat Q: every move log(3), no variance. */
  double x = pb_play_surprise(q, acts, 3, 1, 0.25, 1.0, &mean, &var);
  assert_true(fabs(x - log(3.0)) < 1e-12);
  assert_true(fabs(mean - log(3.0)) < 1e-12);
  assert_true(var < 1e-12);
  /* One forced move: nothing. */
  assert_true(pb_play_surprise(q, acts, 1, 0, 0.25, 1.0, &mean, &var) == 0.0);
  assert_true(mean == 0.0 && var == 0.0);
  /* Q = (1, 0, 0), eps 0, T 1: p = (e, 1, 1) / (e + 2). */
  q[0] = 1.0f;
  const double z = exp(1.0) + 2.0, p0 = exp(1.0) / z, p1 = 1.0 / z;
  x = pb_play_surprise(q, acts, 3, 2, 0.0, 1.0, &mean, &var);
  assert_true(fabs(x + log(p1)) < 1e-9);
  const double h = -p0 * log(p0) - 2 * p1 * log(p1);
  assert_true(fabs(mean - h) < 1e-9);
  const double h2 = p0 * log(p0) * log(p0) + 2 * p1 * log(p1) * log(p1);
  assert_true(fabs(var - (h2 - h * h)) < 1e-9);
  /* The noise: eps 1 is uniform whatever Q says. */
  x = pb_play_surprise(q, acts, 3, 0, 1.0, 1.0, &mean, &var);
  assert_true(fabs(x - log(3.0)) < 1e-12);
  /* A move a policy without noise never plays: finite and huge. */
  q[5] = NAN;
  x = pb_play_surprise(q, acts, 3, 2, 0.0, 1.0, &mean, &var);
  assert_true(isfinite(x) && x > 100.0);
}

/* Honest actors (pb_selfplay_pick itself) at the strong config's settings
 * and at the paper's: z of 40 workers of 100 episodes each stays a
 * standard normal's (none beyond 4, the spread about 1). */
static void test_honest_is_normal(void **state) {
  (void)state;
  static pb_state_t st[MAXN];
  static float q[MAXN * PB_MAX_ACTIONS];
  const double set[2][2] = {{0.25, 0.3}, {0.25, 1.0}}; /* eps, T */
  for (int c = 0; c < 2; c++) {
    double sum = 0, sq = 0, worst = 0;
    for (int w = 0; w < 40; w++) {
      pb_rng_t rng;
      pb_rng_seed(&rng, 7 + c, (uint64_t)w);
      pb_play_tally_t t = {0};
      for (int e = 0; e < 100; e++) {
        int rw;
        uint32_t n = episode(&rng, 0, set[c][0], set[c][1], st, q, &rw);
        pb_err_t err;
        assert_int_equal(pb_play_score(c4(), st, n, rw, q, set[c][0], set[c][1],
                                       &t, &err),
                         0);
      }
      assert_true(t.moves > 1000);
      assert_int_equal(t.episodes, 100);
      const double z = pb_play_z(&t);
      assert_false(pb_play_impossible(&t));
      sum += z;
      sq += z * z;
      if (fabs(z) > worst) worst = fabs(z);
    }
    const double mean = sum / 40, sd = sqrt(sq / 40 - mean * mean);
    print_message("eps %.2f T %.1f: z mean %+.2f sd %.2f largest |z| %.2f\n",
                  set[c][0], set[c][1], mean, sd, worst);
    assert_true(fabs(mean) < 0.6);
    assert_true(sd > 0.6 && sd < 1.5);
    assert_true(worst < 4.0);
  }
}

/* The first player throws its games (its lowest-Q move every time): z
 * passes 6 within a few dozen episodes. */
static void test_thrower_is_impossible(void **state) {
  (void)state;
  static pb_state_t st[MAXN];
  static float q[MAXN * PB_MAX_ACTIONS];
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  pb_play_tally_t t = {0};
  int caught = 0;
  for (int e = 1; e <= 100 && !caught; e++) {
    int rw;
    uint32_t n = episode(&rng, 1, 0.25, 0.3, st, q, &rw);
    pb_err_t err;
    assert_int_equal(pb_play_score(c4(), st, n, rw, q, 0.25, 0.3, &t, &err),
                     0);
    if (pb_play_impossible(&t)) caught = e;
  }
  print_message("thrower caught after %d episodes, z %.1f\n", caught,
                pb_play_z(&t));
  assert_true(caught > 0 && caught <= 40);
}

/* Issue 46, trust that can be lost: an actor honest for 300 episodes that
 * then throws its games is caught after about as many thrown episodes as
 * one that throws from the start (its honest moves no longer dilute the
 * run's z: over the run alone it is not caught by then); honest moves give
 * a recent z of a standard normal too (300 episodes, never near 6). */
static void test_late_thrower(void **state) {
  (void)state;
  static pb_state_t st[MAXN];
  static float q[MAXN * PB_MAX_ACTIONS];
  pb_rng_t rng;
  pb_rng_seed(&rng, 21, 0);
  int at[2] = {0, 0};
  for (int late = 0; late < 2; late++) {
    pb_play_tally_t t = {0};
    pb_err_t err;
    int rw;
    for (int e = 0; late && e < 300; e++) {
      uint32_t n = episode(&rng, 0, 0.25, 0.3, st, q, &rw);
      assert_int_equal(pb_play_score(c4(), st, n, rw, q, 0.25, 0.3, &t, &err),
                       0);
      assert_false(pb_play_impossible(&t));
      assert_true(fabs(pb_play_recent_z(&t)) < 5.0);
    }
    for (int e = 1; e <= 300 && !at[late]; e++) {
      uint32_t n = episode(&rng, 1, 0.25, 0.3, st, q, &rw);
      assert_int_equal(pb_play_score(c4(), st, n, rw, q, 0.25, 0.3, &t, &err),
                       0);
      if (pb_play_impossible(&t)) at[late] = e;
    }
    if (late) {
      print_message("after 300 honest episodes (%llu moves): caught after %d "
                    "thrown episodes; run z %.1f, recent z %.1f\n",
                    (unsigned long long)t.moves, at[1], pb_play_z(&t),
                    pb_play_recent_z(&t));
      assert_true(pb_play_z(&t) < PB_PLAY_Z); /* the run alone: not yet */
    }
  }
  print_message("a thrower from the start: caught after %d episodes\n", at[0]);
  assert_true(at[0] > 0 && at[1] > 0);
  assert_true(at[1] <= 3 * at[0]);
}

static void test_bad_episode(void **state) {
  (void)state;
  const pb_game_t *g = c4();
  pb_state_t st[3];
  float q[3 * PB_MAX_ACTIONS] = {0};
  g->reset(&st[0]);
  st[1] = st[0];
  int done = 0;
  g->step(&st[1], 3, &done);
  st[2] = st[0]; /* back to the start: no move does that */
  pb_play_tally_t t = {0};
  pb_err_t err;
  assert_int_equal(pb_play_score(g, st, 3, 0, q, 0.25, 1.0, &t, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "ply 2"));
  assert_int_equal(t.moves, 0);
  /* The first two plies alone, cut: one move scored (no move of the
   * second ends the game, so its going on says nothing). */
  assert_int_equal(pb_play_score(g, st, 2, 0, q, 0.25, 1.0, &t, &err), 0);
  assert_int_equal(t.moves, 1);
  pb_play_tally_t u = t;
  pb_play_add(&u, &t);
  assert_int_equal(u.moves, 2);
  assert_int_equal(u.episodes, 2);
  pb_play_sub(&u, &t);
  assert_int_equal(u.moves, 1);
  assert_int_equal(u.episodes, 1);
  assert_true(fabs(u.excess - t.excess) < 1e-12);
}

/* ---- pb_outcome_part: the outcome test's comparison -------------------- */

static void test_outcome_arithmetic(void **state) {
  (void)state;
  double e = 1, v = 1;
  assert_int_equal(pb_outcome_part(0, 0, 0, 10, 1, 10, &e, &v), 0);
  assert_true(e == 0.0 && v == 0.0);
  assert_int_equal(pb_outcome_part(5, 1, 5, 0, 0, 0, &e, &v), 0);
  assert_true(e == 0.0 && v == 0.0);
  /* +1 +1 against +1 -1: pooled mean 0.5, variance 1 - 0.25; the excess
   * 2 - 2 x 0, its variance 0.75 x 2 x (1 + 2 / 2). */
  assert_int_equal(pb_outcome_part(2, 2, 2, 2, 0, 2, &e, &v), 1);
  assert_true(fabs(e - 2.0) < 1e-12 && fabs(v - 3.0) < 1e-12);
  /* Every game a draw: no spread, the floor keeps the variance above 0. */
  assert_int_equal(pb_outcome_part(3, 0, 0, 3, 0, 0, &e, &v), 1);
  assert_true(e == 0.0 && v > 0.0 && v < 1e-5);
}

/* A game's first-player result: +1 with 0.5, 0 with 0.1, -1 with 0.4. */
static int outcome(pb_rng_t *r) {
  const double u = pb_rng_uniform(r);
  return u < 0.5 ? 1 : u < 0.6 ? 0 : -1;
}

/* z of a worker over `versions` comparisons with `ref` reference games
 * each; its n results per version from outcome() or, thrown, all -1. */
static double outcome_z(pb_rng_t *r, int versions, int ref, int thrown,
                        int fixed_n) {
  double E = 0, V = 0;
  for (int k = 0; k < versions; k++) {
    double rs = 0, rq = 0, s = 0, q = 0;
    for (int i = 0; i < ref; i++) {
      const int x = outcome(r);
      rs += x;
      rq += x * x;
    }
    const int n = fixed_n ? fixed_n : 5 + (int)pb_rng_below(r, 96);
    for (int i = 0; i < n; i++) {
      const int x = thrown ? -1 : outcome(r);
      s += x;
      q += x * x;
    }
    double e, v;
    assert_int_equal(pb_outcome_part((uint64_t)n, s, q, (uint64_t)ref, rs,
                                     rq, &e, &v),
                     1);
    E += e;
    V += v;
  }
  return E / sqrt(V);
}

/* Honest workers against 32 reference games a version, 5-100 episodes
 * each, over 10 versions: z is a standard normal's (2,000 workers); the
 * outcome test's 6 is far in its tail. */
static void test_outcome_honest_is_normal(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 46, 5);
  const int trials = 2000;
  double s = 0, s2 = 0, most = 0;
  for (int t = 0; t < trials; t++) {
    const double z = outcome_z(&r, 10, 32, 0, 0);
    s += z;
    s2 += z * z;
    if (fabs(z) > most) most = fabs(z);
  }
  const double mean = s / trials, sd = sqrt(s2 / trials - mean * mean);
  print_message("honest outcome z: mean %+.3f, sd %.3f, largest |z| %.2f\n",
                mean, sd, most);
  assert_true(fabs(mean) < 0.1);
  assert_true(sd > 0.9 && sd < 1.1);
  assert_true(most < 5.0);
}

/* A worker that sends only games the first player lost (rejection
 * sampling), 60 a version against 32 reference games: impossible within
 * two versions, every time (200 workers). */
static void test_outcome_thrower_is_impossible(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 46, 6);
  double least = 0;
  for (int t = 0; t < 200; t++) {
    const double z = outcome_z(&r, 2, 32, 1, 60);
    if (t == 0 || z > least) least = z;
  }
  print_message("thrower's outcome z over 2 versions: at most %.2f\n",
                least);
  assert_true(least <= -PB_PLAY_Z);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_surprise_arithmetic),
      cmocka_unit_test(test_honest_is_normal),
      cmocka_unit_test(test_thrower_is_impossible),
      cmocka_unit_test(test_late_thrower),
      cmocka_unit_test(test_bad_episode),
      cmocka_unit_test(test_outcome_arithmetic),
      cmocka_unit_test(test_outcome_honest_is_normal),
      cmocka_unit_test(test_outcome_thrower_is_impossible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
