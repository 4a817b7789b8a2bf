/* batcher.h - several threads of tree or game work feeding one network.
 *
 * A searcher's tree work (or an actor's game work) is CPU work on one
 * thread, so one process cannot keep a GPU busy. pb_batcher_run runs
 * `threads` members, each with its own share of the work on its own thread,
 * and gives each member a pb_evalfn_t of its own that behaves as if the
 * member were alone. Behind it, every call is queued; when every member
 * still running is waiting on a call, the last one to arrive concatenates
 * the queued V requests into one call of the inner evalfn and the queued Q
 * requests into another, hands each member its rows and wakes them. So the
 * network sees batches up to `threads` times larger, and the inner evalfn
 * (e.g. common/nn/neteval.h, with its cache) is called by one thread at a time
 * under a lock: it need not be thread-safe, only callable from any thread.
 *
 * Results: each member gets exactly the rows the inner evalfn returns for
 * its states; with an evalfn whose output for a state does not depend on
 * the other states of the call (a plain function; a network up to the last
 * bits of its floats) the work comes out the same as on one thread.
 *
 * Errors: when the inner evalfn fails, every member of that batch gets its
 * error, and every later call of any member fails at once with it, so all
 * members stop soon. pb_batcher_run returns the first member's error.
 *
 * Not reentrant: one pb_batcher_run at a time per batcher. */
#ifndef PB_BATCHER_H
#define PB_BATCHER_H

#include <stdint.h>

#include "err.h"
#include "evalfn.h"
#include "game.h"

typedef struct pb_batcher pb_batcher_t;

#define PB_BATCHER_MAX_THREADS 256

/* A batcher for game g with up to `threads` members (1..
 * PB_BATCHER_MAX_THREADS). NULL with err filled on bad arguments or no
 * memory. */
pb_batcher_t *pb_batcher_new(const pb_game_t *g, int threads, pb_err_t *err);

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
} pb_batcher_stats_t;

/* Counters since creation. */
void pb_batcher_stats(const pb_batcher_t *b, pb_batcher_stats_t *st);

#endif
