/* plan.h - how many workers of each role a node runs, and how many threads
 * of tree or game work each one uses, when the user does not say
 * (`probs train CONFIG` without --actors / --searchers; search.threads and
 * train.selfplay_threads 0). The one rule, written here and nowhere else;
 * cli/cmd_train.c and actor/worker.c only apply it.
 *
 * The rule, from measurements (H200 node, 16-core Xeon with AMX,
 * configs/connect4-strong.yaml, GPU learner and searchers, 2 CPU actors;
 * ../shared/gpu/README.md, summarized in docs/performance.md, "Search
 * threads"): searcher processes scale about linearly (1.4-1.6K states/s
 * each), the threads of one searcher did not (1 searcher x 16 threads
 * 1,359 states/s; 2 x 7 2,707; 4 x 3 6,342; 8 x 2 14,628; 14 x 1 22,194,
 * the best). So:
 *
 *   search threads  1 per searcher, on the CPU and on CUDA (many searcher
 *                   processes of one thread beat few of many threads);
 *   searchers       CPU: one per core (as before); CUDA: cores - 2, at
 *                   least 1 (14 on 16 cores, the best measured; two cores
 *                   stay for the learner's host-side dispatch and the
 *                   supervisor);
 *   actors          one per core (self-play runs in a phase of its own,
 *                   on the CPU by default: model.actor_device);
 *   self-play threads  1 per actor on the CPU; on CUDA (an actor put there
 *                   by hand) the CPUs the process may use, as before (not
 *                   measured otherwise).
 *
 * model.precision auto is the other measured default; it lives with the
 * precision (common/nn/precision.h: fp32 on CUDA). The learner's
 * minibatch on CUDA is the config's (train.cuda_batch_scale,
 * common/nn/model.h: 4 in configs/connect4-strong.yaml). */
#ifndef PB_PLAN_H
#define PB_PLAN_H

#include <stddef.h>

/* What a node runs by default. */
typedef struct pb_plan {
  int actors, searchers; /* processes */
  int search_threads;    /* search.threads of each searcher */
} pb_plan_t;

/* The workers of a node with `cores` CPUs (< 1 counts as 1) whose
 * searchers run on CUDA (cuda 1) or on the CPU (0), for an algorithm that
 * searches (searches 1; else no searchers). Writes the one line for the
 * log into why (n >= 200 is enough), e.g. "14 searchers x 1 thread, 16
 * actors: searchers on CUDA, 16 cores: cores - 2 searcher processes of
 * one thread (measured best: docs/performance.md)". Pure. */
void pb_plan_workers(int cores, int cuda, int searches, pb_plan_t *plan,
                     char *why, size_t n);

/* The threads of tree work (searcher 1) or game work (searcher 0) of one
 * worker process whose networks run on CUDA (cuda 1) or the CPU, allowed
 * `cpus` CPUs (< 1 counts as 1), when its config says 0. Pure. */
int pb_plan_threads(int searcher, int cuda, int cpus);

#endif
