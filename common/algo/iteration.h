/* iteration.h - one training iteration, the same sequence for the learner
 * (learner/: phases handed to workers over the network, training jobs on
 * a thread pool) and for --inproc (inproc.h: everything in turn on one
 * thread):
 *
 *   1. self-play   pb_iter_open_selfplay: the iteration's items (seeds,
 *                  episodes, td's epsilon); their episodes go to
 *                  pb_iter_item_store; pb_iter_selfplay_done gathers them
 *                  in item order and caps the replay (train.replay_capacity)
 *   2. training before the search   pb_iter_train_before (PROBS: V, and
 *                  the distinct positions to search)
 *   3. search      pb_iter_search_positions / _search_states / _targets:
 *                  cut into items of net.item_states positions
 *                  (pb_iter_search_item), each item's targets written at
 *                  its place; only where the algorithm searches
 *   4. training after it   pb_iter_train_after (Q, the policy+value
 *                  network, TD(0)), and the end of the iteration: version + 1
 *   5. checkpoint  pb_iter_save (and the retention rule)
 *
 * What differs between algorithms is in their tables (algo.h). Timings are
 * the caller's (it knows what waiting meant); pb_iter_report writes the
 * metrics.jsonl object both callers share, pb_iter_describe the log line.
 *
 * An iteration object lives as long as the run and is reused; it owns
 * the episodes and targets of the current iteration. Not thread-safe:
 * the learner runs a job only while nothing else touches it. */
#ifndef PB_ITERATION_H
#define PB_ITERATION_H

#include <stddef.h>
#include <stdint.h>

#include "algo.h"
#include "config.h"
#include "episodes.h"
#include "err.h"
#include "learn.h"
#include "log.h"

typedef struct pb_iter pb_iter_t;

/* The iteration of cfg's algorithm over learn's networks (both borrowed:
 * they outlive it). NULL with err filled (PB_ENOMEM). */
pb_iter_t *pb_iter_new(const pb_config_t *cfg, pb_learn_t *learn,
                       pb_err_t *err);
void pb_iter_destroy(pb_iter_t **it);

const pb_algo_t *pb_iter_algo(const pb_iter_t *it);
pb_learn_t *pb_iter_learn(pb_iter_t *it);

/* ---- 1. self-play ---- */

/* Opens the self-play items of iteration `iter` (the networks it plays
 * with are version iter - 1): train.episodes_per_iter episodes in items
 * of net.item_episodes. Their stores are emptied. 0 or PB_ENOMEM. */
int pb_iter_open_selfplay(pb_iter_t *it, uint64_t iter, pb_err_t *err);
/* The iteration the open items are for (0: none open). */
uint64_t pb_iter_selfplay_iter(const pb_iter_t *it);
size_t pb_iter_selfplay_items(const pb_iter_t *it);
/* Item i (< pb_iter_selfplay_items) and the store its episodes go to. */
void pb_iter_selfplay_item(const pb_iter_t *it, size_t i, pb_algo_item_t *item);
pb_episodes_t *pb_iter_item_store(pb_iter_t *it, size_t i);
/* All items in: their episodes in item order are the iteration's
 * (pb_iter_episodes), the oldest whole episodes beyond
 * train.replay_capacity dropped. The open items are closed. 0 or
 * PB_ENOMEM. */
int pb_iter_selfplay_done(pb_iter_t *it, pb_err_t *err);
const pb_episodes_t *pb_iter_episodes(const pb_iter_t *it);
/* Episodes dropped by the cap; how far the episodes' versions lag the
 * networks that train on them (pipelined self-play). */
size_t pb_iter_dropped(const pb_iter_t *it);
uint64_t pb_iter_staleness(const pb_iter_t *it);
/* Wins of the first player and draws among the iteration's episodes. */
void pb_iter_outcomes(const pb_iter_t *it, int *wins, int *draws);

/* ---- 2.-4. training and search ---- */

int pb_iter_train_before(pb_iter_t *it, pb_err_t *err);
/* 1 when this iteration searches (the algorithm has searchers). */
int pb_iter_searches(const pb_iter_t *it);
size_t pb_iter_search_positions(const pb_iter_t *it);
const pb_state_t *pb_iter_search_states(const pb_iter_t *it);
/* How often each position to search occurs among the iteration's
 * positions: how much the training weighs its targets (NULL: once each). */
const uint32_t *pb_iter_search_counts(const pb_iter_t *it);
/* Their sum: the positions the training of Q goes over. */
uint64_t pb_iter_search_occurrences(const pb_iter_t *it);
/* [positions][num_actions]: the search's targets, written by the caller
 * (item k's at pb_iter_search_item's first * num_actions). */
float *pb_iter_targets(pb_iter_t *it);
size_t pb_iter_search_items(const pb_iter_t *it);
void pb_iter_search_item(const pb_iter_t *it, size_t k, size_t *first,
                         size_t *n);
int pb_iter_train_after(pb_iter_t *it, pb_err_t *err);
/* 1 when train_after changed V too (td: V is what it learns), so that a
 * learner serves it anew. */
int pb_iter_v_after(const pb_iter_t *it);

/* The stats of the two trainings (V, and Q or the policy+value network;
 * zero where the algorithm has none). */
const pb_learn_stats_t *pb_iter_stats_v(const pb_iter_t *it);
const pb_learn_stats_t *pb_iter_stats_q(const pb_iter_t *it);

/* ---- 5. checkpoint ---- */

/* Saves the current version as RUN_DIR/checkpoints/ckpt-N.pbck and applies
 * run.keep_last / run.keep_every (a failure of the retention is only
 * logged to log). 0 or the save's error. */
int pb_iter_save(pb_iter_t *it, pb_log_t *log, pb_err_t *err);

/* ---- reports ---- */

/* Times of the finished iteration, measured by the caller. */
typedef struct pb_iter_times {
  double selfplay_s, search_s, checkpoint_s, iteration_s;
} pb_iter_times_t;

/* Opens the metrics.jsonl object of the finished iteration in j (empty):
 * "event":"iteration", "mode", "algorithm", the version, episodes,
 * positions, targets_crc, losses and times, and the algorithm's fields.
 * The caller adds its own and closes the object. */
void pb_iter_report(const pb_iter_t *it, const char *mode,
                    const pb_iter_times_t *t, struct pb_json *j);

/* The finished iteration's training in words (the algorithm's part of the
 * log line: losses, times, the search's rate), into buf. */
void pb_iter_describe(const pb_iter_t *it, const pb_iter_times_t *t, char *buf,
                      size_t n);

#endif
