/* itemcheck.h - what a worker's result must be before the learner takes
 * it into an iteration: the one place that says so, for both kinds of
 * result. The learner (learner/intake.c) calls these on every result it
 * takes; what they cannot see (moves that an honest policy would not
 * play, targets that lean) is the trust checks' (learner/spot.c,
 * selfcheck.c).
 *
 * A self-play episode must be of a Q version the item allows, carry
 * policy rows exactly when the run's algorithm trains on them, and obey
 * the rules (pb_selfplay_check: every move legal, the length within
 * max_turns, the outcome the rules give). A search result's targets are
 * one row of num_actions values per position, each in [-1, 1], and 0 on
 * every illegal action.
 *
 * Each returns 0, or PB_ECORRUPT with err naming the fault (its position
 * or ply where there is one). Nothing is allocated. */
#ifndef PB_ITEMCHECK_H
#define PB_ITEMCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "game.h"

/* What an item's episodes must satisfy. */
typedef struct pb_itemcheck_rules {
  uint64_t version;   /* the item's version: an episode's Q at most this */
  uint64_t staleness; /* and at least version - staleness */
  int policy;         /* 1: every episode has policy rows, 0: none has */
  uint32_t max_turns; /* the run's turn limit */
} pb_itemcheck_rules_t;

/* Episode of n states (states[0] the initial position) ending with
 * final_reward (for the first player), played with Q version q_version,
 * with policy rows or not (has_policy). */
int pb_itemcheck_episode(const pb_game_t *g, const pb_itemcheck_rules_t *r,
                         const pb_state_t *states, uint32_t n,
                         int final_reward, uint64_t q_version, int has_policy,
                         pb_err_t *err);

/* Targets q[n][num_actions] for states[0..n). */
int pb_itemcheck_targets(const pb_game_t *g, const pb_state_t *states,
                         size_t n, const float *q, pb_err_t *err);

#endif
