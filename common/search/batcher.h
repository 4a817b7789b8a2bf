/* batcher.h - several threads of tree or game work feeding one network.
 *
 * A searcher's tree work (or an actor's game work) is CPU work on one
 * thread, so one process cannot keep a GPU busy. pb_batcher_run runs
 * `threads` members, each with its own share of the work on its own thread,
 * and gives each member a pb_evalfn_t of its own that behaves as if the
 * member were alone. Behind it, every call is queued, and the inner evalfn
 * (e.g. common/nn/neteval.h, with its cache) answers the queue in batches,
 * one at a time: a member takes every queued request, concatenates the V
 * requests into one inner call and the Q requests into another (a lone
 * request goes through without copying), and hands each member its rows.
 * When a batch starts is the batcher's mode (pb_batcher_set_mode):
 *
 *   PB_BATCHER_GATHER   (the default) when every member still running
 *                       waits on a call: the members go in lock step, the
 *                       batches are the largest, and with an even split of
 *                       the work each batch holds the rows one thread's
 *                       batch would, in the same order, so even a network
 *                       whose rows depend on the batch in their last bits
 *                       gives one thread's results. For a network on the
 *                       CPU, which is most of the time and runs on one
 *                       thread anyway.
 *   PB_BATCHER_OVERLAP  whenever the inner evalfn is idle: while one batch
 *                       is evaluated, the other members go on with their
 *                       tree work and queue the next one; a member waits
 *                       only for its own rows, never for the other members.
 *                       So the network stays busy while any member has a
 *                       request, and the tree work of the threads scales
 *                       (bench_search -m free). For a network on a GPU,
 *                       which one thread's tree work cannot keep busy.
 *                       Which requests share a batch depends on timing.
 *
 * The inner evalfn is called by one thread at a time: it need not be
 * thread-safe, only callable from any thread.
 *
 * Results: each member gets exactly the rows the inner evalfn returns for
 * its states; with an evalfn whose output for a state does not depend on
 * the other states of the call (a plain function; a network up to the last
 * bits of its floats) the work comes out the same as on one thread, in
 * either mode. Overlapping, with a network whose rows do depend on the
 * batch in their last bits (libtorch's CPU kernels do), those bits may
 * differ from run to run.
 *
 * Errors: when the inner evalfn fails, every member of that batch gets its
 * error, and every later call of any member fails at once with it, so all
 * members stop soon. pb_batcher_run returns the first member's error.
 *
 * Not reentrant: one pb_batcher_run at a time per batcher. */
#ifndef PB_BATCHER_H
#define PB_BATCHER_H

#include <stdint.h>

#include "bounds.h"
#include "err.h"
#include "evalfn.h"
#include "game.h"

typedef struct pb_batcher pb_batcher_t;

/* The most members: PB_MAX_THREADS, the bound of every thread count of
 * games or searches (search.threads, train.selfplay_threads, ...). */
#define PB_BATCHER_MAX_THREADS PB_MAX_THREADS

/* A batcher for game g with up to `threads` members (1..
 * PB_BATCHER_MAX_THREADS). NULL with err filled on bad arguments or no
 * memory. */
pb_batcher_t *pb_batcher_new(const pb_game_t *g, int threads, pb_err_t *err);

enum { PB_BATCHER_GATHER = 0, PB_BATCHER_OVERLAP = 1 };

/* Sets when a batch starts (above); for the later runs. */
void pb_batcher_set_mode(pb_batcher_t *b, int mode);

/* Frees the batcher; accepts NULL and sets *b to NULL. */
void pb_batcher_destroy(pb_batcher_t **b);

/* The work of one member: run on its own thread (member 0 on the calling
 * thread) with the member's evalfn. Returns 0 or a negative PB_E* code with
 * err filled. */
typedef int (*pb_batcher_work_fn)(void *ctx, int member, const pb_evalfn_t *ev,
                                  pb_err_t *err);

/* Runs work for members 0..members-1 (1 <= members <= the batcher's
 * threads) over the inner evalfn (borrowed for the call) and waits for all.
 * Returns 0, the first failing member's error (lowest member number), or
 * PB_ENOMEM / PB_EIO when a thread cannot be started. */
int pb_batcher_run(pb_batcher_t *b, int members, const pb_evalfn_t *inner,
                   pb_batcher_work_fn work, void *ctx, pb_err_t *err);

typedef struct pb_batcher_stats {
  uint64_t v_calls, q_calls; /* calls of the inner evalfn */
  uint64_t v_rows, q_rows;   /* states passed to them */
  uint64_t requests;         /* members' calls */
  uint64_t batches;          /* batches answered (one or two inner calls) */
  uint64_t max_requests;     /* most members' calls answered by one batch */
} pb_batcher_stats_t;

/* Counters since creation; callable from any thread, also during a run
 * (e.g. from inside the inner evalfn). */
void pb_batcher_stats(const pb_batcher_t *b, pb_batcher_stats_t *st);

#endif
