/* learn.h - the learner's side of Algorithm 2: the two networks, training
 * V on episode outcomes and Q on beam-search targets, and the run state that
 * checkpoints carry (networks, optimizer moments, version, RNG stream).
 *
 * Used by `probs train --inproc` (common/train/inproc.c) and by the distributed
 * learner (learner/), so both train exactly alike. The networks' part of a
 * checkpoint is common/nn/model.h's; this module adds the run state around it. Versions count finished
 * iterations: version 0 is the random initial pair; iteration k plays with
 * Q_{k-1}, trains V_k, searches with (V_k, Q_{k-1}) and trains Q_k. */
#ifndef PB_LEARN_H
#define PB_LEARN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "episodes.h"
#include "err.h"
#include "game.h"
#include "nn.h"
#include "replay.h"
#include "rng.h"

typedef struct pb_learn pb_learn_t;

typedef struct pb_learn_stats {
  double loss_first, loss_last, loss_mean; /* per-minibatch MSE */
  size_t samples;                          /* rows trained on */
  size_t steps;                            /* minibatches */
  double seconds;
  double grad_norm_mean, grad_norm_max;    /* before clipping */
  double lr;                               /* of the last step */
  double policy_loss_mean, value_loss_mean; /* alphazero: the loss's parts */
} pb_learn_stats_t;

/* Creates the networks from cfg (device, precision, threads, specs, seeds; with
 * algorithm td, V is the linear evaluation with every weight zero:
 * common/nn/tdnet.h). The config is copied. NULL with err filled on failure. */
pb_learn_t *pb_learn_new(const pb_config_t *cfg, pb_err_t *err);

/* Frees everything; accepts NULL and sets *l to NULL. */
void pb_learn_destroy(pb_learn_t **l);

const pb_game_t *pb_learn_game(const pb_learn_t *l);
/* The networks. In the PB_NETS_PV family pb_learn_v is NULL and
 * pb_learn_q is the policy+value network (PB_NN_HEAD_PV). */
pb_nn_t *pb_learn_v(pb_learn_t *l);
pb_nn_t *pb_learn_q(pb_learn_t *l);

/* The family of the networks (pb_nets_t, common/run/algos.h: that of the
 * config's algorithm). */
int pb_learn_nets(const pb_learn_t *l);

/* The precision the networks compute in and why, for the log (e.g. "bf16
 * (model.learner_precision 'auto': this CPU has AVX-512 BF16)";
 * model.learner_precision, or model.precision: common/nn/precision.h). */
const char *pb_learn_precision(const pb_learn_t *l);

/* What train.cuda_batch_scale did to the minibatch and the rates, for the
 * log (common/nn/model.h, pb_model_batch_scale); "" when it is 1. The
 * learner trains with the scaled values (they are not in its config). */
const char *pb_learn_batch(const pb_learn_t *l);

/* Number of finished iterations (the version of the current networks). */
uint64_t pb_learn_version(const pb_learn_t *l);

/* Keeps at most train.replay_capacity positions of eps (the most recent
 * whole episodes), as the paper's replay of capacity C. Returns how many
 * episodes from the front were dropped. */
size_t pb_learn_cap_replay(const pb_learn_t *l, pb_episodes_t *eps);

/* Whether V is trained before the search, as in the paper (1), or after
 * it (0: train.v_search_mix > 0, whose targets need the search values; the
 * search then runs with the previous iteration's V). */
int pb_learn_v_first(const pb_learn_t *l);

/* Trains V for train.v_epochs passes, in random minibatches, over every
 * position of eps and every position of the replay window (the last
 * train.replay_iterations - 1 iterations' data, when > 1). The target of
 * a position of eps is delta_t * r_T (its game's outcome), or, when
 * qtargets is given and train.v_search_mix = m > 0, (1 - m) * outcome +
 * m * (its best Q target: the value the beam search found), qtargets
 * indexed as in pb_learn_train_q. With train.augment = mirror each sample
 * is mirrored with probability 1/2. Learning rates follow
 * train.lr_warmup_steps / lr_decay_iterations. */
int pb_learn_train_v(pb_learn_t *l, const pb_episodes_t *eps,
                     const float *qtargets, pb_learn_stats_t *st,
                     pb_err_t *err);

/* Finds the distinct positions of eps. Afterwards pb_learn_distinct_states
 * returns them, in the order of their first occurrence, and
 * pb_learn_distinct_counts how often each occurs in eps (how much the
 * training of Q weighs it; both owned by l, valid until the next call), and
 * train_q maps each stored position to its distinct index. */
int pb_learn_distinct(pb_learn_t *l, const pb_episodes_t *eps, size_t *n,
                      pb_err_t *err);
const pb_state_t *pb_learn_distinct_states(const pb_learn_t *l);
const uint32_t *pb_learn_distinct_counts(const pb_learn_t *l);

/* Trains Q for train.q_epochs passes over every position of eps (all
 * occurrences, as the paper's D_Q), target the beam-search values
 * qtargets[distinct index][action], masked to the legal actions, and over
 * the replay window's positions with the targets they had (mirroring and
 * learning rates as pb_learn_train_v). */
int pb_learn_train_q(pb_learn_t *l, const pb_episodes_t *eps,
                     const float *qtargets, pb_learn_stats_t *st,
                     pb_err_t *err);

/* After the search: trains Q (pb_learn_train_q) and, when V trains after
 * the search (pb_learn_v_first is 0), V with the search values
 * (pb_learn_train_v with qtargets) at the same time on a second thread,
 * each network with its own random stream, so the result does not depend
 * on the timing. vst is left alone when V trained before the search. */
int pb_learn_train_after_search(pb_learn_t *l, const pb_episodes_t *eps,
                                const float *qtargets, pb_learn_stats_t *vst,
                                pb_learn_stats_t *qst, pb_err_t *err);

/* AlphaZero: trains the policy+value network for train.q_epochs passes
 * over every position of eps and of the replay window, target the
 * position's visit distribution (eps->policy) and its game's outcome
 * (cross-entropy + squared error, pb_nn_train_step), mirroring and
 * learning rates as pb_learn_train_q. Also makes every position its own
 * "distinct" position (pb_learn_distinct is the identity in an alphazero
 * run), so that pb_learn_end_iteration(l, eps, eps->policy) keeps the
 * policies in the replay window. PB_EINVAL in a probs run or for episodes
 * without policies. */
int pb_learn_train_pv(pb_learn_t *l, const pb_episodes_t *eps,
                      pb_learn_stats_t *st, pb_err_t *err);

/* Marks the iteration finished: version + 1, and (train.replay_iterations
 * > 1) keeps the iteration's positions with their V and Q targets in the
 * replay window, dropping the oldest iteration beyond the window. eps and
 * qtargets are those just trained on (the distinct positions of the last
 * pb_learn_distinct). Returns 0 or PB_ENOMEM (nothing changed). */
int pb_learn_end_iteration(pb_learn_t *l, const pb_episodes_t *eps,
                           const float *qtargets, pb_err_t *err);

/* Positions held in the replay window (0 in the paper's setting). */
size_t pb_learn_replay_positions(const pb_learn_t *l);

/* Who delivered what the next pb_learn_end_iteration keeps (replay.h's
 * tags): ep[k] the tag of the episode k of the eps it is given (n_eps of
 * them), uniq[d] that of the search targets of distinct position d (n_uniq
 * of them; NULL: none). Copied; used by the next pb_learn_end_iteration
 * only, and only where the counts match its eps and distinct positions
 * (else its positions get tag 0). 0 or PB_ENOMEM (nothing set). */
int pb_learn_set_origin(pb_learn_t *l, const uint64_t *ep, size_t n_eps,
                        const uint64_t *uniq, size_t n_uniq, pb_err_t *err);

/* Drops from the replay window every position delivered by one of
 * tags[0..n) (sorted ascending): pb_replay_drop. Returns the positions
 * dropped. */
size_t pb_learn_replay_drop(pb_learn_t *l, const uint64_t *tags, size_t n);

/* The replay window (read only; the run's, or what pb_learn_load read). */
const pb_replay_t *pb_learn_replay(const pb_learn_t *l);

/* Writes the whole run state to `path` atomically (temporary file, fsync,
 * rename): both networks with optimizer moments, version, the training RNG,
 * the replay window, the config as YAML, and `extra` (caller's blob, may
 * be NULL). */
int pb_learn_save(const pb_learn_t *l, const char *path, const void *extra,
                  size_t extra_len, pb_err_t *err);

/* Restores the state saved by pb_learn_save (the replay window cut to
 * this config's train.replay_iterations). A corrupt file, or one from
 * another game or network shape, is refused and l is unchanged. If extra
 * is not NULL, *extra receives a malloc'd copy of the caller's blob. */
int pb_learn_load(pb_learn_t *l, const char *path, void **extra,
                  size_t *extra_len, pb_err_t *err);

/* The seed of the self-play work item whose first episode is number
 * `first` in the iteration that plays with Q version `version`. The item
 * numbers its episodes from 0 (pb_selfplay_run's first_index = 0). Shared
 * by the in-process trainer and the distributed learner so both play the
 * same games. */
uint64_t pb_learn_item_seed(const pb_config_t *cfg, uint64_t version,
                            uint64_t first);

/* Largest batch one network call gets in self-play and search workers
 * (the same in every process, so that batches, and with them the floating
 * point results, are the same in-process and distributed), from the
 * search.parallel, search.expansions and train.selfplay_parallel in use
 * and the game's number of actions. */
int pb_learn_eval_batch(int search_parallel, int expansions, int num_actions,
                        int selfplay_parallel);

/* A CRC-32 over everything one iteration trains on: every position of eps
 * with its V target, and the Q targets of the n distinct positions. Equal
 * checksums in two runs mean they trained on the same data (used to check
 * the distributed system against the in-process reference). */
uint32_t pb_learn_targets_crc(const pb_learn_t *l, const pb_episodes_t *eps,
                              const float *qtargets, size_t n);

#endif
