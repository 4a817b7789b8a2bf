/* episodes.h - a growable store of finished self-play episodes.
 *
 * An episode is the list of positions s_0..s_{T-1} in which a move was
 * chosen (the final, terminal position is not stored: nothing is learned
 * from it, and beam search cannot start there) and the reward r_T of the
 * last move for the player who made it (+1, 0 or -1; 0 also when the game
 * was cut at the turn limit). The V target of s_t is delta_t * r_T with
 * delta = +1 for the last position and alternating backwards (Algorithm 2,
 * line 16), because the side to move alternates. */
#ifndef PB_EPISODES_H
#define PB_EPISODES_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "game.h"

typedef struct pb_episodes {
  pb_state_t *states;  /* all positions, episode after episode */
  uint32_t *start;     /* episode k: states[start[k] .. start[k] + len[k]) */
  uint32_t *len;
  int8_t *reward;      /* r_T of episode k */
  uint64_t *version;   /* Q version that played episode k */
  size_t n_states, cap_states;
  size_t n_eps, cap_eps;
} pb_episodes_t;

/* Initialises an empty store (no allocation yet). */
void pb_episodes_init(pb_episodes_t *e);

/* Frees the arrays and leaves an empty store. */
void pb_episodes_free(pb_episodes_t *e);

/* Forgets every episode, keeping the memory for reuse. */
void pb_episodes_clear(pb_episodes_t *e);

/* Appends one episode of n positions (copied). Returns 0 or PB_ENOMEM. */
int pb_episodes_add(pb_episodes_t *e, const pb_state_t *states, uint32_t n,
                    int reward, uint64_t version, pb_err_t *err);

/* Appends every episode of src. */
int pb_episodes_append(pb_episodes_t *e, const pb_episodes_t *src,
                       pb_err_t *err);

/* V target of position t (0 <= t < len) of episode k. */
float pb_episodes_target(const pb_episodes_t *e, size_t k, uint32_t t);

/* Fills target[i] for every stored position i (in storage order). */
void pb_episodes_targets(const pb_episodes_t *e, float *target);

#endif
