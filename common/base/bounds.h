/* bounds.h - the limits of the settings, each written once.
 *
 * The config schema (common/run/config_schema.c), the wire check
 * (common/net/msg_check.c), the searches themselves (common/search/),
 * the trainers and the agents and commands that take a budget
 * (common/play/, cli/) all refuse a value outside these, so a setting the
 * config accepts is one every other part accepts too, and a config that
 * passes its check never makes a message the encoder refuses
 * (tests/test_bounds.c holds each key at its bound and one past it, and
 * encodes the messages of a config at every maximum). */
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
 * deep, so search.max_depth with abnet goes to PB_ABNET_MAX_HORIZON. */
#define PB_ABNET_MAX_DEPTH 64
#define PB_ABNET_MAX_HORIZON (PB_ABNET_MAX_DEPTH + 1)
#define PB_SEARCH_MAX_NODES 100000000

/* MCTS simulations per move (mcts.simulations, eval.mcts_simulations,
 * mcts:...,N=, probs analyze --simulations). */
#define PB_MCTS_MAX_SIMULATIONS 100000

/* ---- work items and leases (net.*; common/net/msg.h) ---- */

/* Episodes of one self-play item and result (net.item_episodes,
 * SelfplayWork.episodes, SelfplayResult.episodes) and positions of one
 * search item and result (net.item_states, SearchWork/SearchResult
 * n_states). At these, with the longest game, a result stays well within
 * the largest message (PB_MSG_MAX_BYTES). */
#define PB_ITEM_MAX_EPISODES 4096
#define PB_ITEM_MAX_STATES 65536

/* The longest lease (net.lease_ms, net.lease_max_ms, WorkItem.lease_ms):
 * one day. */
#define PB_LEASE_MAX_MS 86400000

/* The longest heartbeat period (net.heartbeat_ms), which the learner also
 * gives as NoWork.retry_ms: ten minutes. */
#define PB_HEARTBEAT_MAX_MS 600000

/* ---- games and training ---- */

/* Moves of one game: train.max_turns, the self-play engines, a match's
 * --max-turns. A game's own max_turns (pb_game_t) may be lower. */
#define PB_MAX_TURNS 100000

/* Self-play games played at once by one engine (train.selfplay_parallel,
 * the PROBS and AlphaZero self-play of common/train/). */
#define PB_SELFPLAY_MAX_PARALLEL 65536

/* Iterations of training data a run trains on (train.replay_iterations;
 * the replay window of common/train/replay.h and its file). */
#define PB_REPLAY_MAX_ITERATIONS 1000

/* The n-ply search over a linear evaluation (common/search/nply.h): td's
 * self-play look-ahead (td.ply), the td agent's depth, the analysis. */
#define PB_NPLY_MAX_DEPTH 16

/* ---- threads ---- */

/* Threads of games or searches in one process: train.selfplay_threads,
 * search.threads, eval.threads, the batcher (common/search/batcher.h),
 * matches and the evaluator, the commands' --threads. */
#define PB_MAX_THREADS 256

/* The network's own threads (model.threads, which a worker's Hello
 * carries) and the learner's training shards (model.learner_threads). */
#define PB_NN_MAX_THREADS 1024
#define PB_NN_MAX_TRAIN_THREADS 64

/* A bound as text, for usage lines: PB_BOUND_STR(PB_BEAM_MAX_DEPTH). */
#define PB_BOUND_STR(x) PB__BOUND_STR(x)
#define PB__BOUND_STR(x) #x

#endif
