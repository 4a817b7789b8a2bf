/* pveval.h - a policy+value network (PB_NN_HEAD_PV) as the evaluator of
 * PUCT MCTS (mcts.h).
 *
 * Binds a borrowed network to a pb_mcts_evalfn_t: each call encodes the
 * positions, runs them through the network in chunks of at most max_batch
 * rows and splits every output row [logits of the A actions, value] into
 * the policy and value arrays MCTS reads. No cache: an MCTS tree reaches
 * each leaf once, and transpositions between the trees of one call are
 * rare. No allocation after pb_pveval_new. Used by one thread at a time. */
#ifndef PB_PVEVAL_H
#define PB_PVEVAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "game.h"
#include "mcts.h"
#include "nn.h"

typedef struct pb_pveval pb_pveval_t;

/* An evaluator for game g whose network calls have at most max_batch
 * (>= 1) rows. NULL with err filled (PB_EINVAL, PB_ENOMEM). */
pb_pveval_t *pb_pveval_new(const pb_game_t *g, int max_batch, pb_err_t *err);

/* Frees it (not the network); accepts NULL and sets *pe to NULL. */
void pb_pveval_destroy(pb_pveval_t **pe);

/* Uses network nn (borrowed) from now on. Returns 0, or PB_EMISMATCH when
 * nn is not a policy+value network of g's shape (head PB_NN_HEAD_PV,
 * num_actions + 1 outputs, g's planes). */
int pb_pveval_bind(pb_pveval_t *pe, pb_nn_t *nn, pb_err_t *err);

/* The callback bound to this evaluator (calls fail with PB_EINVAL while
 * no network is bound). */
pb_mcts_evalfn_t pb_pveval_fn(pb_pveval_t *pe);

/* Calls made after pb_now() passes `until` (seconds; 0 = never) fail with
 * PB_ERANGE: how a caller bounds the time of a search. */
void pb_pveval_set_deadline(pb_pveval_t *pe, double until);

/* Calls made while *stop is nonzero (NULL: never; borrowed, may be set by
 * another thread or a signal handler) fail with PB_EINTR. */
void pb_pveval_set_stop(pb_pveval_t *pe, const atomic_int *stop);

/* Positions evaluated and network calls made since creation. */
uint64_t pb_pveval_positions(const pb_pveval_t *pe);
uint64_t pb_pveval_calls(const pb_pveval_t *pe);

#endif
