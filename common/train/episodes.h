/* episodes.h - a growable store of finished self-play episodes.
 *
 * An episode is the list of positions s_0..s_{T-1} in which a move was
 * chosen (the final, terminal position is not stored: nothing is learned
 * from it, and beam search cannot start there) and the reward r_T of the
 * last move for the player who made it (+1, 0 or -1; 0 also when the game
 * was cut at the turn limit). The V target of s_t is delta_t * r_T with
 * delta = +1 for the last position and alternating backwards (Algorithm 2,
 * line 16), because the side to move alternates.
 *
 * AlphaZero episodes (algorithm: alphazero) also carry, for every stored
 * position, the search's visit distribution over the actions (the policy
 * target): policy[i * policy_width + a] for position i, policy_width the
 * game's num_actions. A store holds either no policies (policy_width 0)
 * or a policy for every position: the first episode added decides. */
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
  float *policy;       /* n_states * policy_width, or NULL (PROBS) */
  int policy_width;    /* 0: no policies */
  size_t n_states, cap_states, cap_policy;
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

/* As pb_episodes_add, with the positions' policy targets: policy holds
 * n * width floats (copied). PB_EINVAL when the store already holds
 * episodes of another width (0 included), or width < 1. */
int pb_episodes_add_policy(pb_episodes_t *e, const pb_state_t *states,
                           uint32_t n, int reward, uint64_t version,
                           const float *policy, int width, pb_err_t *err);

/* Appends the episodes of src in the order src episode at[0], at[1], ...,
 * at[src->n_eps - 1] (a permutation), with their policies, if any: how
 * self-play puts episodes that finished in any order in number order. */
int pb_episodes_append_order(pb_episodes_t *e, const pb_episodes_t *src,
                             const uint32_t *at, pb_err_t *err);

/* Keeps the newest whole episodes that fit in cap positions (all of them
 * when they fit), dropping the oldest; returns how many were dropped. */
size_t pb_episodes_keep_newest(pb_episodes_t *e, size_t cap);

/* Policy row of position t of episode k (NULL without policies). */
const float *pb_episodes_policy(const pb_episodes_t *e, size_t k, uint32_t t);

/* Appends every episode of src (with its policies, if any). */
int pb_episodes_append(pb_episodes_t *e, const pb_episodes_t *src,
                       pb_err_t *err);

/* V target of position t (0 <= t < len) of episode k. */
float pb_episodes_target(const pb_episodes_t *e, size_t k, uint32_t t);

/* Fills target[i] for every stored position i (in storage order). */
void pb_episodes_targets(const pb_episodes_t *e, float *target);

#endif
