/* plan.c - the default workers of a node (plan.h). */
#include "plan.h"

#include <stdio.h>

void pb_plan_workers(int cores, int cuda, int searches, pb_plan_t *plan,
                     char *why, size_t n) {
  if (cores < 1) cores = 1;
  plan->actors = cores;
  plan->search_threads = pb_plan_threads(1, cuda, cores);
  if (!searches)
    plan->searchers = 0;
  else if (cuda)
    plan->searchers = cores - 2 >= 1 ? cores - 2 : 1;
  else
    plan->searchers = cores;
  if (why == NULL || n == 0) return;
  if (!searches)
    snprintf(why, n,
             "%d actor(s), no searchers: one actor per core (%d cores); the "
             "algorithm does not search",
             plan->actors, cores);
  else if (cuda)
    snprintf(why, n,
             "%d searcher(s) x %d thread, %d actor(s): searchers on CUDA, %d "
             "cores: cores - 2 searcher processes of one thread (measured "
             "best, 14 x 1 on 16 cores: docs/performance.md), one CPU actor "
             "per core",
             plan->searchers, plan->search_threads, plan->actors, cores);
  else
    snprintf(why, n,
             "%d searcher(s) x %d thread, %d actor(s): CPU only, %d cores: "
             "one process of one thread per core and role (the roles take "
             "turns)",
             plan->searchers, plan->search_threads, plan->actors, cores);
}

int pb_plan_threads(int searcher, int cuda, int cpus) {
  if (cpus < 1) cpus = 1;
  if (searcher || !cuda) return 1;
  return cpus;
}
