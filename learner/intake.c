/* intake.c - the one path by which a worker's result enters the
 * iteration. peers.c decodes a message and hands a self-play or search
 * result here; each goes, in this order, through
 *
 *   1. the lease: the first result for an item of the phase, from the
 *      connection that holds its lease (take); anything else is dropped
 *      and counted;
 *   2. its form and the rules (common/train/itemcheck.h), all of it
 *      before anything is stored;
 *   3. the trust checks that need the learner: the surprise and outcomes
 *      of self-play (selfcheck.c), the spot check of search targets
 *      (spot.c, after storing: a disagreement throws the item out and
 *      re-queues it);
 *   4. the iteration's store (common/algo/iteration.h), the counts, the
 *      self-play record (selfrec.c), the worker's record (trust.c);
 *   5. the phase's end when it was the last item (phases.c).
 *
 * A result refused at 2 or 3 is logged (rate limited), its item
 * re-queued for another worker, and nothing of it stays. */
#include <stdio.h>
#include <string.h>

#include "itemcheck.h"
#include "state.h"

static void refuse(pb_learner_t *l, pb_workq_t *q, peer_t *p, size_t idx,
                   const char *why) {
  l->intake.results_bad++;
  pb_workq_requeue(q, idx, now(l));
  if (pb__may_warn(l))
    pb_log_warn(l->log, "result for item %zu from %s refused (%s); re-queued",
                idx, p->sender, why);
}

/* The first result for an item of the current phase, from the peer that
 * holds its lease, is taken (the item is then done, *idx set); anything
 * else (a duplicate, a stale result, a result of a lease that expired or
 * was never this peer's) is dropped. */
static int take(pb_learner_t *l, const peer_t *p, int phase, uint64_t item_id,
                size_t *idx) {
  const double t = now(l);
  pb_workq_t *q = phase == PH_SELFPLAY ? l->it.spq : l->it.wq;
  const int open = phase == PH_SELFPLAY
                       ? pb_iter_selfplay_iter(l->it.iter) != 0
                       : l->it.phase == phase;
  int st = open ? pb_workq_complete(q, item_id, p->serial, t, idx)
                : PB_WORKQ_UNKNOWN;
  if (st == PB_WORKQ_ACCEPTED) {
    uint32_t other;
    if (pb_workq_overtaken(q, *idx, &other))
      pb__trust_overtaken(l, pb__phase_name(phase), *idx, other);
    return 1;
  }
  if (st == PB_WORKQ_NOT_HOLDER) {
    l->intake.results_not_holder++;
    if (pb__may_warn(l))
      pb_log_warn(l->log,
                  "%s result from %s (address %s) refused: it does not hold "
                  "that item's lease (expired, or never handed to it)",
                  pb__phase_name(phase), p->sender[0] ? p->sender : "?",
                  p->addr[0] ? p->addr : "?");
    return 0;
  }
  l->intake.results_dup++;
  pb_log_debug(l->log, "dropped %s %s result from %s",
               st == PB_WORKQ_DUPLICATE ? "duplicate" : "stale",
               pb__phase_name(phase), p->sender);
  return 0;
}

/* Step 2 for a self-play result: 0, or why (in why) it is refused. */
static int check_selfplay(pb_learner_t *l, size_t idx,
                          const pb_msg_selfplay_result_t *r, char *why,
                          size_t cap) {
  const pb_config_t *c = &l->cfg;
  pb_algo_item_t item;
  pb_iter_selfplay_item(l->it.iter, idx, &item);
  if (r->n_episodes != (uint32_t)item.episodes) {
    snprintf(why, cap, "wrong number of episodes");
    return -1;
  }
  /* Trained from version sp_iter - 1: the episode's Q may lag it by
   * train.max_staleness when pipelined, not at all otherwise. */
  const pb_itemcheck_rules_t rules = {
      .version = item.version,
      .staleness = pb__pipelined(l) ? (uint64_t)c->train.max_staleness : 0,
      .policy = pb_iter_algo(l->it.iter)->data->nets == PB_NETS_PV,
      .max_turns = (uint32_t)c->train.max_turns,
  };
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    pb_err_t err;
    if (pb_itemcheck_episode(l->g, &rules, ep->states, ep->n_states,
                             ep->final_reward, ep->q_version,
                             ep->policy != NULL, &err) != 0) {
      snprintf(why, cap, "episode %u: %s", k, err.msg);
      return -1;
    }
  }
  return 0;
}

void pb__intake_selfplay(pb_learner_t *l, peer_t *p,
                         const pb_msg_selfplay_result_t *r) {
  size_t idx;
  if (!take(l, p, PH_SELFPLAY, r->item_id, &idx)) return;
  char why[PB_ERR_MSG_MAX + 32];
  if (check_selfplay(l, idx, r, why, sizeof why) != 0) {
    refuse(l, l->it.spq, p, idx, why);
    return;
  }
  /* Beyond the rules: moves the announced policy would not play, games
   * that end as honest ones do not (selfcheck.c). */
  if (pb__selfcheck_item(l, p, idx, r)) {
    refuse(l, l->it.spq, p, idx,
           "its moves or outcomes are impossible for the announced Q");
    return;
  }
  /* Taken: into the iteration's store. */
  const int pol = pb_iter_algo(l->it.iter)->data->nets == PB_NETS_PV;
  pb_episodes_t *e = pb_iter_item_store(l->it.iter, idx);
  pb_episodes_clear(e);
  size_t npos = 0;
  pb_err_t err;
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    if ((pol ? pb_episodes_add_policy(e, ep->states, ep->n_states,
                                     ep->final_reward, ep->q_version,
                                     ep->policy, l->g->num_actions, &err)
             : pb_episodes_add(e, ep->states, ep->n_states, ep->final_reward,
                               ep->q_version, &err)) != 0) {
      pb__set_fatal(l, &err);
      return;
    }
    npos += ep->n_states;
  }
  if (pb__owners_took(l, PH_SELFPLAY, idx, p, &err) != 0) {
    pb__set_fatal(l, &err);
    return;
  }
  pb__selfrec_item(l, pb_iter_selfplay_iter(l->it.iter), r);
  l->intake.positions_in += npos;
  p->items++;
  p->positions += npos;
  pb__trust_done(l, p);
  if (l->it.phase == PH_SELFPLAY && pb_workq_finished(l->it.spq))
    pb__selfplay_done(l);
}

void pb__intake_search(pb_learner_t *l, peer_t *p,
                       const pb_msg_search_result_t *r) {
  size_t idx;
  if (!take(l, p, PH_SEARCH, r->item_id, &idx)) return;
  const int A = l->g->num_actions;
  size_t first, want;
  pb_iter_search_item(l->it.iter, idx, &first, &want);
  if (r->n_states != want || r->n_actions != (uint32_t)A) {
    refuse(l, l->it.wq, p, idx, "wrong number of states or actions");
    return;
  }
  pb_err_t err;
  if (pb_itemcheck_targets(l->g, pb_iter_search_states(l->it.iter) + first,
                           want, r->qvalues, &err) != 0) {
    refuse(l, l->it.wq, p, idx, err.msg);
    return;
  }
  memcpy(pb_iter_targets(l->it.iter) + first * A, r->qvalues,
         want * A * sizeof(float));
  if (pb__owners_took(l, PH_SEARCH, idx, p, &err) != 0) {
    pb__set_fatal(l, &err);
    return;
  }
  l->intake.positions_in += want;
  p->items++;
  p->positions += want;
  pb__trust_done(l, p);
  /* The spot check of a share of its positions (spot.c); a disagreement
   * found later throws the item out and re-queues it. */
  pb__spot_sample(l, p, idx, first, want);
  pb__spot_kick(l);
  pb__search_maybe_done(l);
}
