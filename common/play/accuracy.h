/* accuracy.h - how often an agent keeps the best outcome, measured on a
 * solved test set (common/solver/testset.h), and the making of such sets.
 *
 * The figure is exact where Elo saturates: for each position of the set
 * the agent chooses a move, and the move is optimal when its outcome with
 * perfect play (win / draw / loss) is the position's best. The share of
 * optimal moves is the accuracy; uniformly random play scores the mean
 * share of optimal moves per position, a perfect player 1.
 *
 * Test sets are made from games between mixed-strength players (random,
 * lookahead:K, alphabeta:D, chosen at random per game and side), one
 * position sampled per game at a ply that still needs positions (the plies
 * of [min_ply, max_ply] get equal shares), kept when it is new and the
 * choice matters (not every legal move has the same outcome), and labelled
 * by the solver (weak: outcomes only). Candidates are numbered and seeded
 * by number and accepted in order, so the set depends on the options only,
 * never on the thread count. */
#ifndef PB_ACCURACY_H
#define PB_ACCURACY_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "game.h"
#include "log.h"
#include "testset.h"

typedef struct pb_accuracy {
  double share;    /* optimal / positions */
  size_t optimal;  /* positions where the agent kept the best outcome */
  size_t positions;
  double seconds;  /* wall time of the measurement */
  double evals_per_move; /* network evaluations per position
                            (pb_agent_evaluations); 0 without a network */
} pb_accuracy_t;

/* Plays agent `spec` (agent.h) once in every position of ts and scores
 * it. Position i is played by the agent reseeded with
 * pb_mix64(seed + i), so the figure does not depend on `threads` (0: every
 * online CPU; network agents answer the whole set in batches on one
 * thread). Returns 0, or the agent's error (PB_EINVAL for a bad spec,
 * PB_EMISMATCH for a checkpoint of another game, ...). */
int pb_accuracy_of_agent(const pb_testset_t *ts, const char *spec,
                         uint64_t seed, int threads, pb_accuracy_t *out,
                         pb_err_t *err);

/* As pb_accuracy_of_agent, stopping early with PB_EINTR (nothing in *out)
 * once *stop is set (may be NULL): it is checked between chunks of
 * positions, so a stop waits for at most one chunk. The figure is the
 * same as without it (the chunks are the agents' own batches). */
int pb_accuracy_until(const pb_testset_t *ts, const char *spec, uint64_t seed,
                      int threads, volatile sig_atomic_t *stop,
                      pb_accuracy_t *out, pb_err_t *err);

/* The same, also writing the move chosen in every position to moves
 * (pb_testset_count(ts) entries; may be NULL), for breakdowns such as
 * accuracy by ply; with a stop flag as pb_accuracy_until. */
int pb_accuracy_moves(const pb_testset_t *ts, const char *spec, uint64_t seed,
                      int threads, volatile sig_atomic_t *stop,
                      pb_accuracy_t *out, int *moves, pb_err_t *err);

/* How far pb_accuracy_run has come: `done` of `total` positions played
 * (called with done 0 first, then as positions are played, from one
 * thread at a time: the caller's or one of the workers). */
typedef void (*pb_accuracy_progress_fn)(void *ctx, size_t done, size_t total);

/* pb_accuracy_moves with a progress callback (may be NULL) and its ctx. */
int pb_accuracy_run(const pb_testset_t *ts, const char *spec, uint64_t seed,
                    int threads, volatile sig_atomic_t *stop,
                    pb_accuracy_progress_fn progress, void *ctx,
                    pb_accuracy_t *out, int *moves, pb_err_t *err);

typedef struct pb_testgen_opts {
  const pb_game_t *g;
  int count;             /* positions wanted (>= 1) */
  int min_ply, max_ply;  /* plies of the positions, 0 <= min <= max */
  uint64_t seed;
  int threads;           /* 0: every online CPU */
  const char *players;   /* comma-separated agent specs; NULL: the default */
  int tt_log2;           /* solver table per thread (0: default) */
  long max_candidates;   /* stop after this many games (0: 200 * count) */
  volatile sig_atomic_t *stop; /* may be NULL */
  pb_log_t *log;               /* progress lines; may be NULL */
} pb_testgen_opts_t;

/* The default player pool for g ("random,lookahead:1,...,alphabeta:8"). */
const char *pb_testgen_default_players(const pb_game_t *g);

/* Makes a test set and writes it to out (header with the options, then
 * the positions ordered by ply). Fewer than `count` positions are written
 * when some ply cannot be filled within max_candidates (logged). Returns
 * 0, PB_EUNSUPP for a game without a solver, PB_EINVAL for bad options or
 * player specs, PB_EINTR when stopped, PB_EIO. */
int pb_testgen_run(const pb_testgen_opts_t *o, FILE *out, pb_err_t *err);

#endif
