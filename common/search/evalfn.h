/* evalfn.h - how search and self-play ask for V and Q: a pair of batched
 * callbacks. Production binds them to the networks (common/nn/neteval.h); tests
 * bind them to plain deterministic functions, so the search can be checked
 * exactly without libtorch. */
#ifndef PB_EVALFN_H
#define PB_EVALFN_H

#include "err.h"
#include "game.h"

typedef struct pb_evalfn {
  /* Writes V(states[i]) (from the side to move, in [-1, 1]) to out[i] for
   * i < n. Returns 0 or a negative PB_E* code with err filled. */
  int (*value)(void *ctx, const pb_state_t *states, int n, float *out,
               pb_err_t *err);
  /* Writes Q(states[i])[a] to out[i * num_actions + a] for i < n and every
   * action a of the game (legal or not). */
  int (*qvalues)(void *ctx, const pb_state_t *states, int n, float *out,
                 pb_err_t *err);
  void *ctx;
} pb_evalfn_t;

#endif
