/* test_plan.c - the default workers of a node (common/run/plan.h): on CUDA
 * many searcher processes of one thread (cores - 2, the measured best: 14
 * on 16 cores), on a CPU-only node what it was before (a process of one
 * thread per core and role), and the line for the log says why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "plan.h"

static void test_cuda_node(void **state) {
  (void)state;
  pb_plan_t p;
  char why[256];
  pb_plan_workers(16, 1, 1, &p, why, sizeof why);
  assert_int_equal(p.searchers, 14);
  assert_int_equal(p.search_threads, 1);
  assert_int_equal(p.actors, 16);
  assert_non_null(strstr(why, "14 searcher(s) x 1 thread, 16 actor(s)"));
  assert_non_null(strstr(why, "CUDA"));
  /* Small nodes keep a searcher. */
  for (int cores = 1; cores <= 3; cores++) {
    pb_plan_workers(cores, 1, 1, &p, NULL, 0);
    assert_int_equal(p.searchers, 1);
    assert_int_equal(p.actors, cores);
  }
  pb_plan_workers(4, 1, 1, &p, NULL, 0);
  assert_int_equal(p.searchers, 2);
}

/* A CPU-only node: as before the rule, a worker of one thread per core
 * and role. */
static void test_cpu_node_unchanged(void **state) {
  (void)state;
  pb_plan_t p;
  char why[256];
  for (int cores = 1; cores <= 64; cores *= 2) {
    pb_plan_workers(cores, 0, 1, &p, why, sizeof why);
    assert_int_equal(p.actors, cores);
    assert_int_equal(p.searchers, cores);
    assert_int_equal(p.search_threads, 1);
    assert_non_null(strstr(why, "CPU only"));
  }
  pb_plan_workers(0, 0, 1, &p, NULL, 0); /* unknown: one core */
  assert_int_equal(p.actors, 1);
  assert_int_equal(p.searchers, 1);
}

/* An algorithm that does not search gets no searchers, anywhere. */
static void test_no_search(void **state) {
  (void)state;
  pb_plan_t p;
  char why[256];
  pb_plan_workers(16, 1, 0, &p, why, sizeof why);
  assert_int_equal(p.searchers, 0);
  assert_int_equal(p.actors, 16);
  assert_non_null(strstr(why, "no searchers"));
  pb_plan_workers(8, 0, 0, &p, NULL, 0);
  assert_int_equal(p.searchers, 0);
}

/* search.threads / train.selfplay_threads 0: one thread per searcher
 * everywhere; an actor on CUDA gets its CPUs, on the CPU one. */
static void test_threads(void **state) {
  (void)state;
  assert_int_equal(pb_plan_threads(1, 1, 16), 1);
  assert_int_equal(pb_plan_threads(1, 0, 16), 1);
  assert_int_equal(pb_plan_threads(0, 0, 16), 1);
  assert_int_equal(pb_plan_threads(0, 1, 16), 16);
  assert_int_equal(pb_plan_threads(0, 1, 0), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_node),
      cmocka_unit_test(test_cpu_node_unchanged),
      cmocka_unit_test(test_no_search),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
