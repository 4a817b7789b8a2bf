/* spotcheck.h - the learner's check of what searchers send back.
 *
 * A searcher's Q-targets cannot be checked for truth by looking at them:
 * well-formed but false values (all +1, say) pass every range check. The
 * learner holds the very networks the searchers were given (V_k, Q_{k-1}),
 * so it searches a small random sample of each result's positions itself
 * and compares. Agreement cannot be asked bit for bit: the network's
 * output for a position depends in its last bits on the batch it was
 * computed in (and on the CPU), and a different last bit can turn a tie in
 * the beam's priority queue and with it the tree. So:
 *
 *   - a position agrees when every legal action's target is within
 *     `tolerance` of the learner's (illegal actions must be exactly 0);
 *   - a peer is judged on all its sampled positions of the run: it fails
 *     when at least PB_SPOT_MIN_DISAGREE of them disagree and more than
 *     `max_disagree` (a share) of them do. One position whose tree turned
 *     on a rounding is never enough;
 *   - and on its recent ones (issue 46: trust that can be lost): counts
 *     that decay with every position checked, about the last
 *     PB_SPOT_RECENT, judged by the same rules, so a searcher that lies
 *     after hundreds of honest results is caught about as fast as one
 *     that lies from the start, not once its lies outweigh its history.
 *
 * docs/reliability.md gives the measured honest rates behind the defaults
 * (bench/bench_spotcheck.c measures them for a checkpoint and config).
 *
 * Ownership: a pb_spot_t owns its searcher (beam or abnet) and evaluator; the networks
 * are borrowed for one call. Not thread-safe; the learner runs it on one
 * pool thread while the networks are not trained. */
#ifndef PB_SPOTCHECK_H
#define PB_SPOTCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "game.h"
#include "nn.h"
#include "rng.h"

typedef struct pb_spot pb_spot_t;

/* What one peer's checked positions came to. */
typedef struct pb_spot_tally {
  uint64_t checked;  /* positions searched again */
  uint64_t disagree; /* of which outside the tolerance */
  float max_diff;    /* the largest difference seen on a legal action */
  /* The signed bias of each checked position (pb_spot_bias): its sum and
   * sum of squares, for pb_spot_biased. */
  double bias_sum, bias_sq;
  /* The same, decayed: each position weighs (1 - 1/PB_SPOT_RECENT) less
   * for every position counted after it (about the last PB_SPOT_RECENT). */
  double r_checked, r_disagree, r_bias_sum, r_bias_sq;
} pb_spot_tally_t;

#define PB_SPOT_RECENT 256
/* The weight of recent disagreements that may fail a tally: four recent
 * ones (docs/reliability.md: an honest searcher whose trees turn on 0.03%
 * of its positions goes a million positions without reaching it). */
#define PB_SPOT_RECENT_MIN 3.5

/* A checker for game g searching with E = expansions and M = max_depth,
 * `parallel` searches at once, network batches of at most max_batch and a
 * cache of cache_entries (as the searchers are configured). NULL with err
 * filled on bad arguments or no memory. */
pb_spot_t *pb_spot_new(const pb_game_t *g, int expansions, int max_depth,
                       int parallel, int max_batch, uint32_t cache_entries,
                       pb_err_t *err);

/* Frees the checker; accepts NULL and sets *s to NULL. */
void pb_spot_destroy(pb_spot_t **s);

/* Makes the checker search as search.algorithm abnet does
 * (common/search/abtargets.h): per legal move, alpha-beta over V to `nodes`
 * evaluations, with the max_depth and parallel given to pb_spot_new.
 * Returns 0, or PB_EINVAL / PB_ENOMEM (the checker is unchanged). */
int pb_spot_set_abnet(pb_spot_t *s, uint64_t nodes, pb_err_t *err);

/* Searches states[0..n) with networks v and q (borrowed; the cache is
 * cleared first) and writes the targets to out[i * num_actions + a], as a
 * searcher does. Returns 0 or the error of the search or the networks. */
int pb_spot_search(pb_spot_t *s, pb_nn_t *v, pb_nn_t *q,
                   const pb_state_t *states, int n, float *out, pb_err_t *err);

/* The largest |mine - theirs| over the legal actions of state st; an
 * illegal action with a nonzero claimed value, or a non-finite value,
 * counts as 2 (the largest possible difference). */
float pb_spot_diff(const pb_game_t *g, const pb_state_t *st,
                   const float *mine, const float *theirs);

/* The mean of theirs - mine over the legal actions of st: how far the
 * claimed targets lean, up or down, on that position (0 without legal
 * actions; a non-finite claim counts as 2). */
float pb_spot_bias(const pb_game_t *g, const pb_state_t *st, const float *mine,
                   const float *theirs);

/* Adds one compared position to tally t: disagrees when diff > tolerance;
 * bias (pb_spot_bias) goes to the tally's bias sums. Returns 1 if it
 * disagreed. */
int pb_spot_count(pb_spot_tally_t *t, float diff, float bias,
                  double tolerance);

#define PB_SPOT_MIN_DISAGREE 3

/* 1 when tally t fails: at least PB_SPOT_MIN_DISAGREE positions and more
 * than max_disagree (share, 0..1) of the checked ones disagreed, over the
 * run; or, over the recent ones (the decayed counts), disagreements
 * weighing PB_SPOT_RECENT_MIN or more and more than max_disagree of the
 * recent positions. */
int pb_spot_failed(const pb_spot_tally_t *t, double max_disagree);

/* The bias test: a small lean on every target (under the tolerance of
 * one position) shows in the mean over many. A tally is biased when it
 * has at least PB_SPOT_BIAS_MIN positions, its mean bias is at least
 * min_effect away from 0 (the learner's own search), and it differs from
 * the mean bias of `others` (the honest rest of the run's checked
 * positions; an empty tally: the learner's own, 0) by at least min_effect
 * and by at least PB_SPOT_BIAS_Z standard errors (Welch). So a searcher
 * that agrees with the learner is never biased, whatever the others do,
 * and a lean the whole honest run shares (hardware that rounds
 * differently) is not one searcher's. Honest searchers agree to the
 * last bits (docs/reliability.md): their means are within 1e-6 of each
 * other, so min_effect (the learner's: tolerance / 10) is what keeps
 * hardware that rounds differently safe. */
#define PB_SPOT_BIAS_MIN 30
#define PB_SPOT_BIAS_Z 6.0
/* The same test is made on t's recent positions (the decayed sums, once
 * they weigh PB_SPOT_BIAS_MIN) against the others' whole run: a lean that
 * starts late is not diluted by the honest history before it. */
int pb_spot_biased(const pb_spot_tally_t *t, const pb_spot_tally_t *others,
                   double min_effect);

/* The mean bias of a tally (0 when empty), and of its recent positions. */
double pb_spot_mean_bias(const pb_spot_tally_t *t);
double pb_spot_recent_bias(const pb_spot_tally_t *t);

/* A position weighing at least this share of the iteration's training is
 * always checked (pb_spot_sample). */
#define PB_SPOT_ALWAYS 0.001

/* Draws the positions to check from an item of n. counts[i] (NULL: 1
 * each) is how often position i occurs among the iteration's `total`
 * positions, that is how much the training of Q weighs its targets, and
 * `distinct` how many distinct positions the iteration has. Drawn:
 *   - every position weighing at least PB_SPOT_ALWAYS of the training
 *     and occurring twice or more (counts[i] >= max(2, PB_SPOT_ALWAYS *
 *     total)): the start position and the first plies, where one lie
 *     weighs the most;
 *   - each other one with probability min(1, max(share, share * distinct
 *     * counts[i] / total)): at least `share`, and more in proportion to
 *     its weight (at most twice `share` of the distinct positions on
 *     average; share 1 checks every position);
 *   - at least one when share > 0 and n > 0 (a result is never taken
 *     unseen by chance alone).
 * With counts NULL and total = distinct this is `share` of each item,
 * uniformly. Writes up to cap indices, in increasing order, to idx;
 * returns how many. */
size_t pb_spot_sample(pb_rng_t *rng, size_t n, const uint32_t *counts,
                      uint64_t total, size_t distinct, double share,
                      uint32_t *idx, size_t cap);

#endif
