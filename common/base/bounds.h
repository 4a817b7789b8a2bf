/* bounds.h - the limits of the searches' settings, each written once.
 *
 * The config schema (common/run/config_schema.c), the wire check
 * (common/net/msg_check.c), the searches themselves (common/search/) and
 * the agents and commands that take a budget (common/play/, cli/) all
 * refuse a value outside these, so a setting the config accepts is one
 * every other part accepts too. */
#ifndef PB_BOUNDS_H
#define PB_BOUNDS_H

/* Beam search (Algorithm 1): nodes expanded per search (E:
 * search.expansions, eval.search_expansions, beam:...,E=) and the depth
 * limit (M: search.max_depth with the beam, eval.search_depth,
 * beam:...,M=). A node's depth is one byte. */
#define PB_BEAM_MAX_EXPANSIONS 100000
#define PB_BEAM_MAX_DEPTH 200

/* Alpha-beta over V and Q (abnet): the deepest iteration, and the
 * evaluations per move (search.nodes, eval.search_nodes, abnet:...,nodes=).
 * Its Q-targets search a position's children PB_ABNET_MAX_DEPTH plies
 * deep, so search.max_depth with abnet goes to PB_ABNET_MAX_DEPTH + 1. */
#define PB_ABNET_MAX_DEPTH 64
#define PB_SEARCH_MAX_NODES 100000000

/* MCTS simulations per move (mcts.simulations, eval.mcts_simulations,
 * mcts:...,N=, probs analyze --simulations). */
#define PB_MCTS_MAX_SIMULATIONS 100000

/* A bound as text, for usage lines: PB_BOUND_STR(PB_BEAM_MAX_DEPTH). */
#define PB_BOUND_STR(x) PB__BOUND_STR(x)
#define PB__BOUND_STR(x) #x

#endif
