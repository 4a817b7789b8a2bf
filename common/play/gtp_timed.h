/* gtp_timed.h - the agent of a GTP engine (gtp_engine.h) under a time
 * budget per move (gtp_clock.h): an agent spec (agent.h) whose search is
 * sized to the budget of each move, the agent remade when that size
 * changes.
 *
 *   abnet:PATH,...  plays with time=MS, MS the budget less the time a
 *                   remake takes; a time= of the spec caps it, a nodes= of
 *                   the spec stays (without one: no evaluation limit).
 *   mcts:PATH,...   N= simulations, beam:PATH,... E= expansions,
 *   bpip:PATH,...   N= evaluations: the budget times the rate (of the
 *                   setting per millisecond) measured on the moves before;
 *                   the first move under a budget measures it with a
 *                   probe search of PB_GTP_TIMED_PROBE, then searches what
 *                   its budget has left. A value of the spec caps it.
 *   anything else   plays as the spec says, whatever the budget: greedy
 *                   networks (checkpoint:, value:), td:'s n-ply search,
 *                   the baselines, gtp: engines.
 * Sizes are rounded down to 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a
 * power of ten, so that a budget that drifts a little does not remake the
 * agent (a remake reads the checkpoint again: milliseconds). Without a
 * budget (-1) the spec plays as given.
 *
 * A pb_gtp_timed_t is used by one thread at a time. */
#ifndef PB_GTP_TIMED_H
#define PB_GTP_TIMED_H

#include <stdint.h>

#include "agent.h"
#include "err.h"
#include "game.h"

#define PB_GTP_TIMED_PROBE 8       /* the first move's probe search */
#define PB_GTP_TIMED_SPEC_MAX 4608 /* the longest spec sized */

typedef struct pb_gtp_timed pb_gtp_timed_t;

/* The timed agent of `spec` (a `probs match` spec, the checkpoint path
 * given) for game g, each of its agents seeded from `seed`. Makes the
 * spec's agent at once: NULL + pb_agent_new's error when it cannot. */
pb_gtp_timed_t *pb_gtp_timed_new(const pb_game_t *g, const char *spec,
                                 uint64_t seed, pb_err_t *err);

/* Frees it and its agents; accepts NULL and sets *t to NULL. */
void pb_gtp_timed_destroy(pb_gtp_timed_t **t);

/* The agent of the spec as given (borrowed, valid while t lives). */
pb_agent_t *pb_gtp_timed_agent(pb_gtp_timed_t *t);

/* The agent that made the last move of pb_gtp_timed_act (the spec's, or
 * one sized to a budget), for pb_agent_info; the spec's before any. */
pb_agent_t *pb_gtp_timed_last_agent(pb_gtp_timed_t *t);

/* 1 if the spec's search is sized to a budget (abnet, mcts, beam, bpip),
 * else 0. */
int pb_gtp_timed_scales(const pb_gtp_timed_t *t);

/* Chooses a move in the non-terminal position s within about budget_ms
 * milliseconds (-1: no budget, the spec as given). Returns the action, or
 * a negative PB_E* code with err filled (the agent's, or a remake's). */
int pb_gtp_timed_act(pb_gtp_timed_t *t, const pb_state_t *s, int64_t budget_ms,
                     pb_err_t *err);

/* The spec that chose the last move (the one given before any move, and
 * for the kinds not sized), valid until the next pb_gtp_timed_act. */
const char *pb_gtp_timed_last_spec(const pb_gtp_timed_t *t);

#endif
