/* test_gtp_timed.c - agents sized to a time budget per move
 * (common/play/gtp_timed.h) over untrained checkpoints: abnet gets time=,
 * mcts N= and beam E= from the budget (a value of the spec caps them),
 * more budget makes a larger search, the other kinds play as given, and
 * bad specs fail when the timed agent is made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_fixtures.h"
#include "ckpt_fixtures.h"
#include "gtp_timed.h"

enum { P_T3 = 0, P_C4 = 1, P_T3_AZ = 4 }; /* ckpts_t paths */

static int setup(void **state) {
  return ckpts_setup(state, "gtp_timed");
}

/* The value of ",key=V" in spec, or -1. */
static long setting(const char *spec, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, ",%s=", key);
  const char *p = strstr(spec, pat);
  return p != NULL ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* 1 if v is 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten
 * (rounded down to an integer). */
static int is_nice(long v) {
  while (v >= 10 && v % 10 == 0) v /= 10;
  return v == 12 || v == 15 || v == 25 || (v >= 1 && v <= 8 && v != 7);
}

static double ms_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
         (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static pb_gtp_timed_t *timed(const pb_game_t *g, const char *fmt,
                             const char *path) {
  char spec[512];
  snprintf(spec, sizeof spec, fmt, path);
  pb_err_t err;
  pb_gtp_timed_t *t = pb_gtp_timed_new(g, spec, 1, &err);
  if (t == NULL) fail_msg("%s: %s", spec, err.msg);
  return t;
}

/* A move within budget (ms; -1: none): legal, or the test fails. */
static int act(pb_gtp_timed_t *t, const pb_state_t *s, int64_t budget) {
  pb_err_t err;
  int a = pb_gtp_timed_act(t, s, budget, &err);
  if (a < 0) fail_msg("act: %s", err.msg);
  const pb_game_t *g = pb_agent_game(pb_gtp_timed_agent(t));
  assert_true(is_legal(g, s, a));
  return a;
}

static void test_abnet_time(void **state) {
  const ckpts_t *f = *state;
  const char *p = f->path[P_C4];
  pb_state_t s = pos(C4, "4453");
  pb_gtp_timed_t *t = timed(C4, "abnet:%s", p);
  assert_true(pb_gtp_timed_scales(t));
  char want[512];
  snprintf(want, sizeof want, "abnet:%s", p);
  assert_string_equal(pb_gtp_timed_last_spec(t), want);
  assert_string_equal(pb_agent_name(pb_gtp_timed_agent(t)), want);
  act(t, &s, -1); /* no budget: the spec as given */
  assert_string_equal(pb_gtp_timed_last_spec(t), want);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  act(t, &s, 300);
  double took = ms_since(&t0);
  const char *sp = pb_gtp_timed_last_spec(t);
  long ms = setting(sp, "time");
  assert_true(ms >= 1 && ms <= 300 && is_nice(ms));
  assert_int_equal(setting(sp, "nodes"), -1); /* no evaluation limit */
  assert_memory_equal(sp, want, strlen(want));
  /* It searched for about its time (the bound is loose: a slow machine) */
  assert_true(took < 300 + 3000);
  pb_gtp_timed_destroy(&t);
  /* The spec's time= caps the budget; its nodes= stays. */
  t = timed(C4, "abnet:%s,time=40,nodes=50", p);
  act(t, &s, 100000);
  sp = pb_gtp_timed_last_spec(t);
  assert_true(setting(sp, "time") >= 1 && setting(sp, "time") <= 40);
  assert_int_equal(setting(sp, "nodes"), 50);
  act(t, &s, 1); /* the least budget still plays */
  assert_int_equal(setting(pb_gtp_timed_last_spec(t), "time"), 1);
  pb_gtp_timed_destroy(&t);
}

static void test_mcts_count(void **state) {
  const ckpts_t *f = *state;
  const char *p = f->path[P_T3_AZ];
  pb_state_t s = pos(T3, "5");
  pb_gtp_timed_t *t = timed(T3, "mcts:%s", p);
  assert_true(pb_gtp_timed_scales(t));
  /* The first move: a probe, then what is left. */
  act(t, &s, 200);
  long n1 = setting(pb_gtp_timed_last_spec(t), "N");
  assert_true(n1 >= 1 && n1 <= 100000 && is_nice(n1));
  /* Far less budget, far fewer simulations; far more, more. */
  act(t, &s, 5);
  long n0 = setting(pb_gtp_timed_last_spec(t), "N");
  act(t, &s, 800);
  long n2 = setting(pb_gtp_timed_last_spec(t), "N");
  assert_true(n0 >= 1 && n0 < n2);
  pb_gtp_timed_destroy(&t);
  /* N= caps it; T= and c= stay, in any order. */
  t = timed(T3, "mcts:%s,N=20,c=2", p);
  act(t, &s, 10000);
  const char *sp = pb_gtp_timed_last_spec(t);
  assert_true(setting(sp, "N") >= 1 && setting(sp, "N") <= 20);
  assert_non_null(strstr(sp, ",c=2"));
  pb_gtp_timed_destroy(&t);
}

static void test_beam_and_fixed(void **state) {
  const ckpts_t *f = *state;
  pb_state_t s = pos(T3, "");
  pb_gtp_timed_t *t = timed(T3, "beam:%s,E=5,M=2", f->path[P_T3]);
  act(t, &s, 10000);
  const char *sp = pb_gtp_timed_last_spec(t);
  assert_true(setting(sp, "E") >= 1 && setting(sp, "E") <= 5);
  assert_int_equal(setting(sp, "M"), 2);
  pb_gtp_timed_destroy(&t);
  /* Kinds that do not search play as given. */
  static const char *const fixed[] = {"checkpoint:%s", "value:%s",
                                      "lookahead:2", "random"};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    t = timed(T3, fixed[i], f->path[P_T3]);
    assert_false(pb_gtp_timed_scales(t));
    act(t, &s, 50);
    char given[512];
    snprintf(given, sizeof given, fixed[i], f->path[P_T3]);
    assert_string_equal(pb_gtp_timed_last_spec(t), given);
    /* The given network agent is an agent like any (batched as
     * single; the baselines are random). */
    if (i < 2) batched_equals_single(pb_gtp_timed_agent(t), T3, 5 + i);
    pb_gtp_timed_destroy(&t);
  }
}

static void test_bad(void **state) {
  const ckpts_t *f = *state;
  pb_err_t err;
  char spec[512];
  assert_null(pb_gtp_timed_new(T3, "minimax:3", 1, &err));
  assert_non_null(strstr(err.msg, "minimax"));
  snprintf(spec, sizeof spec, "mcts:%s,N=0", f->path[P_T3]);
  assert_null(pb_gtp_timed_new(T3, spec, 1, &err));
  snprintf(spec, sizeof spec, "abnet:%s", f->path[P_T3_AZ]);
  assert_null(pb_gtp_timed_new(T3, spec, 1, &err));
  assert_int_equal(err.code, PB_EMISMATCH);
  assert_null(pb_gtp_timed_new(NULL, "random", 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_gtp_timed_new(T3, NULL, 1, &err));
  pb_gtp_timed_t *t = timed(T3, "random", NULL);
  assert_int_equal(pb_gtp_timed_act(t, NULL, 5, &err), PB_EINVAL);
  assert_int_equal(pb_gtp_timed_act(NULL, NULL, 5, &err), PB_EINVAL);
  pb_gtp_timed_destroy(&t);
  pb_gtp_timed_destroy(&t);
  pb_gtp_timed_destroy(NULL);
  assert_null(pb_gtp_timed_agent(NULL));
  assert_null(pb_gtp_timed_last_spec(NULL));
  assert_false(pb_gtp_timed_scales(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_abnet_time),
      cmocka_unit_test(test_mcts_count),
      cmocka_unit_test(test_beam_and_fixed),
      cmocka_unit_test(test_bad),
  };
  return cmocka_run_group_tests(tests, setup, ckpts_teardown);
}
