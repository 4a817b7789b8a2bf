/* mcts_rules.h - the node-local rules of mcts.c's two root variants, as
 * pure functions over one node's children (so that each can be checked
 * against a hand computation):
 *
 * - Gumbel search (Danihelka, Guez, Schrittwieser and Silver, "Policy
 *   improvement by planning with Gumbel", ICLR 2022; the reference
 *   implementation is DeepMind's mctx): the visit schedule of sequential
 *   halving, sigma of the completed Q-values, and the improved policy
 *   softmax(logits + sigma(completed Q)).
 * - KataGo's forced playouts and policy target pruning (Wu, "Accelerating
 *   Self-Play Learning in Go", 2019, section 3.2): the forced visit count
 *   sqrt(k * P(c) * total) and the pruned visit counts.
 *
 * A node's children are given as arrays of length na (1 <= na <=
 * PB_MAX_ACTIONS): prior[c] (the softmax of the network's logits, > 0 or
 * 0), visits[c] (N(c) >= 0) and q[c] (the mean value of child c from the
 * node's side to move; read only where visits[c] > 0). Nothing allocates. */
#ifndef PB_MCTS_RULES_H
#define PB_MCTS_RULES_H

/* The paper's constants: sigma's c_visit and c_scale, and KataGo's k. */
#define PB_MCTS_GUMBEL_C_VISIT 50.0
#define PB_MCTS_GUMBEL_C_SCALE 1.0
#define PB_MCTS_FORCED_K 2.0

/* Sequential halving's schedule (mctx's get_sequence_of_considered_visits,
 * its element k): with m actions considered (m >= 1) and n simulations
 * (n >= 1), the root's simulation k (0 <= k < n) goes to the best, by
 * g + logits + sigma, of the actions that have exactly this many visits.
 * Phases: log2max = ceil(log2 m); while fewer than n simulations are
 * scheduled, each of the c actions still considered (c = m first) gets
 * max(1, floor(n / (log2max * c))) more visits, one round at a time, and
 * then c = max(2, c / 2). With m = 1 the answer is k. */
int pb_mcts_halving_visit(int m, int n, int k);

/* sigma(completed Q) of a node, into sigma[0..na): the completed Q-value
 * of child c is q[c] where visits[c] > 0 and otherwise the mixed value
 *   v_mix = (value + S * sum_{N(b)>0} P(b) q(b) / sum_{N(b)>0} P(b)) / (S + 1)
 * (S = sum of the visits, value the network's value of the node: v_mix is
 * `value` when no child has visits, as mctx's
 * qtransform_completed_by_mix_value); the completed values are mapped
 * from [-1, 1] to [0, 1] by (q + 1) / 2 (MuZero's normalisation with the
 * known bounds of board games) and multiplied by
 * (c_visit + max_b N(b)) * c_scale.
 *
 * Not mctx's rescaling by the minimum and maximum of the node's completed
 * values: that stretches any difference, however small, to the full
 * scale, so that with c_scale 1 the policy target is one-hot on the
 * noise of an untrained value; in self-play it collapsed (Connect Four
 * iterations of about 7 plies a game, docs/comparison.md). */
void pb_mcts_gumbel_sigma(int na, const float *prior, const int *visits,
                          const double *q, double value, double c_visit,
                          double c_scale, double *sigma);

/* The improved policy softmax(logits + sigma) over na children into
 * pi[0..na) (sums to 1; a logit of -inf gets 0). */
void pb_mcts_improved_policy(int na, const double *logits, const double *sigma,
                             double *pi);

/* KataGo's forced visit count of a root child of prior p when the root's
 * children have `total` visits: sqrt(PB_MCTS_FORCED_K * p * total). */
double pb_mcts_forced_visits(double prior, int total);

/* Policy target pruning, into out[0..na) (counts, not normalised): c* is
 * the most visited child (ties: the lowest index) and keeps its visits;
 * with T the sum of the visits and
 *   PUCT(c, n) = q[c] + c_puct * prior[c] * sqrt(T) / (1 + n),
 * every other visited child c loses d visits, d the largest number up to
 * floor(pb_mcts_forced_visits(prior[c], T)) (and up to N(c)) for which
 * PUCT(c, N(c) - d) < PUCT(c*, N(c*)): the visits PUCT would not have
 * given it. A child left with 1 visit or none gets 0. */
void pb_mcts_prune_forced(int na, const float *prior, const int *visits,
                          const double *q, double c_puct, double *out);

#endif
