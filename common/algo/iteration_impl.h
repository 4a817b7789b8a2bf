/* iteration_impl.h - private to common/algo/: the iteration's state, which
 * the algorithms' tables (algo_*.c) fill and read. */
#ifndef PB_ITERATION_IMPL_H
#define PB_ITERATION_IMPL_H

#include "iteration.h"

struct pb_iter {
  const pb_config_t *cfg;
  const pb_algo_t *algo;
  pb_learn_t *learn;
  const pb_game_t *g;
  /* self-play: the open items and their stores */
  uint64_t sp_iter; /* 0: none open */
  size_t n_items, max_items;
  pb_episodes_t *store; /* [max_items] */
  /* the iteration's episodes, staleness and what the cap dropped */
  pb_episodes_t eps;
  uint64_t staleness;
  size_t dropped;
  /* the search: positions (owned by learn, or the episodes' own), their
   * targets; `targets` is what the training reads as Q-targets (the
   * search's, AlphaZero's policies, or NULL) */
  const pb_state_t *uniq;
  const uint32_t *uniq_count; /* occurrences of each (NULL: 1 each) */
  uint64_t uniq_total;        /* their sum */
  size_t n_uniq;
  float *qt;
  size_t qt_cap;
  const float *targets;
  int v_after;
  pb_learn_stats_t vst, qst;
  /* the algorithm's own (algo.h: state_size bytes, zeroed) */
  void *priv;
};

/* For the algorithms: makes room for the targets of n positions (it->qt)
 * and sets the positions to search and how often each occurs among the
 * iteration's positions (counts: NULL when each occurs once). 0 or
 * PB_ENOMEM. */
int pb__iter_set_search(pb_iter_t *it, const pb_state_t *states,
                        const uint32_t *counts, size_t n, pb_err_t *err);

#endif
