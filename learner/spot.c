/* spot.c - the spot check of search results, and the quarantine it leads
 * to. Positions of each accepted search item wait in spot_wait (drawn by
 * pb_spot_sample: every position weighing 0.1% of the iteration's training
 * or more, such as the start position and the first plies, and
 * net.spot_check of the distinct positions drawn in proportion to how
 * often each occurs, so that the check looks where the training looks);
 * one job at a time on libuv's thread pool searches them again with the
 * learner's own networks (common/train/spotcheck.h), beside the search
 * phase, while the loop thread keeps serving.
 *
 * A checked position disagrees when a target differs by more than
 * net.spot_check_tolerance. Its item is thrown away and re-queued for
 * another worker, whoever sent it. Checks are tallied per connection, per
 * CURVE key and (without CURVE) per IP address, over the run: a connection
 * or a key with at least 3 and more than net.spot_check_max_disagree of
 * its checked positions disagreeing is quarantined; so is one whose
 * targets lean, on average, away from the other searchers' by a tenth of
 * the tolerance or more, and by 6 standard errors (pb_spot_biased: a
 * small bias on every target, under the tolerance of one position); and so
 * is an address 3 of whose connections disagreed (a peer that opens a new
 * connection with a new sender id for every item). The quarantine is
 * quarantine.c's, the same for the three checks: a quarantined
 * connection's items of the iteration are re-queued and it is refused for
 * the rest of the learner's life, so is its key; without CURVE, its
 * sender id and new connections from its address are refused for a while
 * (connections of a banned address that never disagreed keep working).
 * The search phase ends (phases.c) only when every check is done. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "precision.h"
#include "state.h"

/* ---- the spot check of search results --------------------------------- */

void pb__spotq_free(spotq_t *q) {
  free(q->states);
  free(q->claimed);
  free(q->who);
  free(q->item);
  memset(q, 0, sizeof *q);
}

static int spotq_push(spotq_t *q, int A, const pb_state_t *st,
                      const float *claimed, owner_t who, uint32_t item) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 256;
    pb_state_t *s = realloc(q->states, cap * sizeof *s);
    if (s) q->states = s;
    float *c = realloc(q->claimed, cap * (size_t)A * sizeof *c);
    if (c) q->claimed = c;
    owner_t *w = realloc(q->who, cap * sizeof *w);
    if (w) q->who = w;
    uint32_t *it = realloc(q->item, cap * sizeof *it);
    if (it) q->item = it;
    if (!s || !c || !w || !it) return PB_ENOMEM;
    q->cap = cap;
  }
  q->states[q->n] = *st;
  memcpy(q->claimed + q->n * (size_t)A, claimed, (size_t)A * sizeof *claimed);
  q->who[q->n] = who;
  q->item[q->n] = item;
  q->n++;
  return 0;
}


/* ---- probation and the pooled lean test (issue 46) --------------------
 *
 * A liar that takes a new identity for every item never builds a tally
 * of its own that a test could judge (issue 46: a new address per item,
 * +0.019 on every target: 514 addresses, 32,570 lies trained). So:
 *
 *   - an identity (its CURVE key; without CURVE its connection: an address
 *     is no identity) with fewer than PB_SPOT_BIAS_MIN checked positions
 *     is on probation: its items are checked at PB__PROBATION_SHARE (a
 *     quarter of their positions) instead of net.spot_check, within a
 *     budget per search phase of 4x what the ordinary share checks (at
 *     least 4 x PB_SPOT_BIAS_MIN positions), so that a flood of new
 *     identities costs the check at most that much more; past the budget
 *     they are checked at the ordinary share (every item still has a
 *     position checked);
 *   - the positions of identities on probation that agreed go to one pool
 *     (l->spot.pool), judged as one searcher against the learner's own
 *     search (pb_spot_biased over the pool's recent positions, about the
 *     last PB_SPOT_RECENT): a lie spread thin over many identities leans
 *     the pool;
 *   - the items of this phase with a checked position on probation
 *     leaning by a tenth of the tolerance or more are remembered
 *     (l->spot.lean); when the pool leans, those leaning its way are thrown
 *     away and redone by another worker, and so is every such item
 *     checked while it leans. The search phase ends only when every check
 *     is done, so nothing they taught is trained; and the identities
 *     whose recent positions lean its way lose what they delivered in
 *     earlier iterations from the replay window (replaydrop.c). */

#define PB__PROBATION_SHARE 0.25

/* Whether p's identity has been checked too little to be judged alone. */
static int on_probation(pb_learner_t *l, const peer_t *p) {
  if (p->key[0] != '\0') {
    const ident_t *k = pb__ident_find(l, IDENT_KEY, p->key, 0);
    return k == NULL || k->tally.checked < PB_SPOT_BIAS_MIN;
  }
  return p->spot_tally.checked < PB_SPOT_BIAS_MIN;
}

/* A new search phase: the probation budget is full again and no item is
 * remembered. */
static void phase_check(pb_learner_t *l) {
  if (l->spot.probation_phase == l->it.t_phase) return;
  l->spot.probation_phase = l->it.t_phase;
  const double want = 4.0 * l->cfg.net.spot_check *
                      (double)pb_iter_search_positions(l->it.iter);
  l->spot.probation_left =
      want > 4.0 * PB_SPOT_BIAS_MIN ? (uint64_t)want : 4 * PB_SPOT_BIAS_MIN;
  l->spot.n_lean = 0;
}

/* Item `item` of w is thrown away by the pooled test. */
static void pool_throw(pb_learner_t *l, uint32_t item, owner_t w, float b) {
  if (!pb__owners_is(l, PH_SEARCH, item, w)) return; /* already redone */
  pb_workq_requeue(l->it.wq, item, now(l));
  pb__owners_drop(l, PH_SEARCH, item);
  l->spot.items_thrown++;
  l->spot.pool_thrown++;
  const peer_t *p = &l->net.peers[w.slot];
  if (pb__may_warn(l))
    pb_log_warn(l->log,
                "search item %u thrown away: a position of %s (address %s, "
                "on probation) leans by %+.4f from the learner's search, "
                "and the positions of identities on probation lean by "
                "%+.4f on average (the pooled lean test); re-queued for "
                "another worker",
                item, p->serial == w.serial && p->sender[0] ? p->sender : "?",
                p->serial == w.serial && p->addr[0] ? p->addr : "?",
                (double)b, pb_spot_recent_bias(&l->spot.pool));
}

/* An agreeing position of item `item` of w, on probation, leaning by b:
 * into the pool; what leans the pool's way is thrown while it leans. */
static void pool_count(pb_learner_t *l, uint32_t item, owner_t w, float b) {
  const double tol = l->cfg.net.spot_check_tolerance, least = tol / 10;
  pb_spot_count(&l->spot.pool, 0.0f, b, tol);
  if (fabs((double)b) >= least && l->spot.n_lean < l->it.n_bs_items) {
    if (l->spot.n_lean == l->spot.lean_cap) {
      size_t cap = l->spot.lean_cap ? 2 * l->spot.lean_cap : 64;
      lean_t *e = realloc(l->spot.lean, cap * sizeof *e);
      if (e == NULL) return; /* remembered no further; still in the pool */
      l->spot.lean = e;
      l->spot.lean_cap = cap;
    }
    l->spot.lean[l->spot.n_lean++] = (lean_t){w, item, b};
  }
  /* The pool's recent positions, as a tally of their own. */
  const pb_spot_tally_t *t = &l->spot.pool;
  const pb_spot_tally_t recent = {
      .checked = (uint64_t)t->r_checked, .bias_sum = t->r_bias_sum,
      .bias_sq = t->r_bias_sq, .r_checked = t->r_checked,
      .r_bias_sum = t->r_bias_sum, .r_bias_sq = t->r_bias_sq};
  static const pb_spot_tally_t own = {0};
  const int was = l->spot.pool_sign;
  l->spot.pool_sign = !pb_spot_biased(&recent, &own, least) ? 0
                 : t->r_bias_sum > 0                   ? 1
                                                       : -1;
  if (l->spot.pool_sign != 0 && was == 0) {
    l->spot.pool_fired++;
    pb_log_warn(l->log,
                "the pooled lean test: the %.0f recent checked positions of "
                "identities on probation lean by %+.4f on average from the "
                "learner's own search (a lie spread over many identities); "
                "their items of this phase leaning that way by %g or more "
                "are thrown away, and so are those checked while the pool "
                "leans",
                t->r_checked, pb_spot_recent_bias(t), least);
  }
  /* And what the leaning identities taught earlier: the replay window
   * (replaydrop.c). */
  pb__rdrop_lean(l, w, fabs((double)b) >= least ? b : 0.0f,
                 l->spot.pool_sign);
  if (l->spot.pool_sign == 0) return;
  size_t n = 0;
  for (size_t i = 0; i < l->spot.n_lean; i++) {
    const lean_t *e = &l->spot.lean[i];
    if ((e->bias > 0 ? 1 : -1) == l->spot.pool_sign)
      pool_throw(l, e->item, e->who, e->bias);
    else
      l->spot.lean[n++] = *e;
  }
  l->spot.n_lean = n;
}

/* Draws the positions of an accepted item that the learner searches
 * again: net.spot_check of them, or PB__PROBATION_SHARE while p is on
 * probation and the phase's budget lasts. The draw is not reproducible
 * from the run's seed (which workers know): a searcher cannot tell which
 * of its answers will be checked. */
void pb__spot_sample(pb_learner_t *l, const peer_t *p, size_t idx,
                        size_t first, size_t n) {
  if (l->spot.check == NULL) return;
  const owner_t who = pb__owner_of(l, p);
  const int A = l->g->num_actions;
  const uint32_t *counts = pb_iter_search_counts(l->it.iter);
  phase_check(l);
  double share = l->cfg.net.spot_check;
  const int probation = share > 0 && share < PB__PROBATION_SHARE &&
                        l->spot.probation_left > 0 && on_probation(l, p);
  if (probation) share = PB__PROBATION_SHARE;
  size_t m = pb_spot_sample(&l->spot.rng, n, counts ? counts + first : NULL,
                            pb_iter_search_occurrences(l->it.iter),
                            pb_iter_search_positions(l->it.iter), share,
                            l->spot.idx, (size_t)l->cfg.net.item_states);
  if (probation) {
    l->spot.probation_left -= m < l->spot.probation_left ? m : l->spot.probation_left;
    l->spot.probation_checks += m;
  }
  for (size_t i = 0; i < m; i++) {
    size_t k = first + l->spot.idx[i];
    if (spotq_push(&l->spot.wait, A, &pb_iter_search_states(l->it.iter)[k],
                   pb_iter_targets(l->it.iter) + k * A, who,
                   (uint32_t)idx) != 0) {
      pb_err_t err;
      pb_err_set(&err, PB_ENOMEM, "learner: out of memory (spot check)");
      pb__set_fatal(l, &err);
      return;
    }
  }
}

/* The text of a quarantine for tally t (why: what crossed its limit). */
static void reason(const pb_learner_t *l, const char *why,
                   const pb_spot_tally_t *t, char *msg, size_t cap) {
  snprintf(msg, cap,
           "%s: %" PRIu64 " of %" PRIu64 " search results the learner "
           "searched again disagree with its own (largest difference %.3g, "
           "tolerance %g)",
           why, t->disagree, t->checked, (double)t->max_diff,
           l->cfg.net.spot_check_tolerance);
}

/* A searcher whose results disagree (quarantine.c: its items of the
 * iteration are re-queued, its checks still waiting dropped, and it is
 * refused from now on). */
static void quarantine(pb_learner_t *l, peer_t *p, const char *why,
                       const pb_spot_tally_t *t) {
  char msg[PB_MSG_TEXT_MAX], r[PB_MSG_TEXT_MAX - 20];
  reason(l, why, t, r, sizeof r);
  snprintf(msg, sizeof msg, "quarantined (%s)", r);
  pb__quarantine(l, p, QUAR_SPOT, msg);
}

/* Of a banned key's or address's connections, those that disagreed. */
static int disagreed(const peer_t *p) { return p->disagreed; }

/* A key or an address is banned (quarantine.c). */
static void ban_ident(pb_learner_t *l, ident_t *e, const char *why) {
  char msg[PB_MSG_TEXT_MAX];
  reason(l, why, &e->tally, msg, sizeof msg);
  pb__ban(l, e, QUAR_SPOT, msg, disagreed);
}

/* Whether tally t leans (pb_spot_biased) away from the learner's own
 * search, the ground truth (not from the other searchers': colluders can
 * be all of them; issue 46: two +0.019 searchers and no honest one
 * passed). */
static int leans(const pb_learner_t *l, const pb_spot_tally_t *t) {
  static const pb_spot_tally_t own = {0};
  return pb_spot_biased(t, &own, l->cfg.net.spot_check_tolerance / 10);
}

/* Why a tally is quarantined: too many disagreements, or a lean. */
static const char *verdict(const pb_learner_t *l, const pb_spot_tally_t *t,
                           char *buf, size_t cap, const char *whose) {
  if (pb_spot_failed(t, l->cfg.net.spot_check_max_disagree))
    return whose;
  snprintf(buf, cap,
           "%s: its targets lean by %+.4f on average over %" PRIu64
           " positions checked (%+.4f over its recent ones), the learner's "
           "own search by 0, the other searchers' by %+.4f",
           whose, pb_spot_mean_bias(t), t->checked, pb_spot_recent_bias(t),
           pb_spot_mean_bias(&l->spot.all));
  return buf;
}

/* A checked position of p's, off by d and leaning by b: tallied for p, its
 * key and (without CURVE) its address, over the run; whatever crosses
 * its limit (pb_spot_failed: too many disagreements; pb_spot_biased: a
 * lean the other searchers do not have) is quarantined. */
static void tally(pb_learner_t *l, peer_t *p, float d, float b) {
  const double tol = l->cfg.net.spot_check_tolerance;
  const double most = l->cfg.net.spot_check_max_disagree;
  const int bad = (double)d > tol;
  const int first_bad = bad && !p->disagreed;
  char why[256];
  if (bad) p->disagreed = 1;
  /* What the run's searchers lean by, for the log: positions that
   * agreed. */
  if (!bad && !p->quarantined) pb_spot_count(&l->spot.all, d, b, tol);
  pb_spot_count(&p->spot_tally, d, b, tol);
  if (!p->quarantined &&
      (pb_spot_failed(&p->spot_tally, most) || leans(l, &p->spot_tally)))
    quarantine(l, p,
               verdict(l, &p->spot_tally, why, sizeof why, "its connection"),
               &p->spot_tally);
  ident_t *k = p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 1) : NULL;
  if (k != NULL) {
    k->last = now(l);
    pb_spot_count(&k->tally, d, b, tol);
    if (!k->banned && (pb_spot_failed(&k->tally, most) || leans(l, &k->tally)))
      ban_ident(l, k, verdict(l, &k->tally, why, sizeof why, "its CURVE key"));
  }
  ident_t *a = p->addr[0] && l->net.zap == NULL
                   ? pb__ident_find(l, IDENT_ADDR, p->addr, 1)
                   : NULL;
  if (a != NULL) {
    a->last = now(l);
    pb_spot_count(&a->tally, d, b, tol);
    if (first_bad) a->bad_conns++;
    if (!pb__ident_banned(l, a) && a->bad_conns >= 3) {
      snprintf(why, sizeof why, "%u connections from its address disagreed",
               a->bad_conns);
      ban_ident(l, a, why);
    }
  }
}

/* A position of item `item` (delivered by w) disagrees by d: the whole item
 * goes back to the queue, for another worker. */
static void throw_item(pb_learner_t *l, uint32_t item, owner_t w, float d) {
  if (!pb__owners_is(l, PH_SEARCH, item, w)) return; /* already redone */
  pb_workq_requeue(l->it.wq, item, now(l));
  pb__owners_drop(l, PH_SEARCH, item);
  l->spot.items_thrown++;
  const peer_t *p = &l->net.peers[w.slot];
  if (pb__may_warn(l))
    pb_log_warn(l->log,
                "search item %u thrown away: a position of %s (address %s) "
                "differs from the learner's search by %.3g (tolerance %g); "
                "re-queued for another worker",
                item, p->serial == w.serial && p->sender[0] ? p->sender : "?",
                p->serial == w.serial && p->addr[0] ? p->addr : "?",
                (double)d, l->cfg.net.spot_check_tolerance);
}

/* On a pool thread: the networks are not trained while the search phase
 * lasts, so the check job may use them. */
static void spot_work(uv_work_t *req) {
  pb_learner_t *l = req->data;
  pb_err_clear(&l->spot.err);
  pb_nn_set_threads(l->cfg.model.threads);
  /* In the searchers' precision, then back to the learner's own. */
  pb_nn_t *v = pb_learn_v(l->learn), *q = pb_learn_q(l->learn);
  const int own = pb_nn_precision(q);
  pb_nn_set_precision(v, l->spot.prec, NULL);
  pb_nn_set_precision(q, l->spot.prec, NULL);
  l->spot.rc = pb_spot_search(l->spot.check, v, q, l->spot.run.states,
                              (int)l->spot.run.n, l->spot.mine, &l->spot.err);
  pb_nn_set_precision(v, own, NULL);
  pb_nn_set_precision(q, own, NULL);
}

static void spot_done(uv_work_t *req, int status) {
  pb_learner_t *l = req->data;
  spotq_t *q = &l->spot.run;
  const size_t n = q->n;
  l->spot.running = 0;
  q->n = 0;
  if (status != 0 || l->spot.rc != 0) {
    if (status != 0)
      pb_err_set(&l->spot.err, PB_EIO, "spot check cancelled: %s",
                 uv_strerror(status));
    pb__set_fatal(l, &l->spot.err);
    return;
  }
  if (l->stopping || !l->handles_open || l->it.phase != PH_SEARCH) return;
  const int A = l->g->num_actions;
  const double tol = l->cfg.net.spot_check_tolerance;
  for (size_t i = 0; i < n; i++) {
    const float *mine = l->spot.mine + i * A, *theirs = q->claimed + i * A;
    const float d = pb_spot_diff(l->g, &q->states[i], mine, theirs);
    const float b = pb_spot_bias(l->g, &q->states[i], mine, theirs);
    owner_t w = q->who[i];
    peer_t *p = &l->net.peers[w.slot];
    l->spot.checked++;
    if ((double)d > tol) {
      l->spot.disagree++;
      throw_item(l, q->item[i], w, d);
    } else if (p->serial != w.serial || on_probation(l, p)) {
      pool_count(l, q->item[i], w, b);
    }
    /* A peer whose slot went to another is judged by its items alone. */
    if (p->serial == w.serial) tally(l, p, d, b);
  }
  pb__spot_kick(l);
  pb__search_maybe_done(l);
}

/* Drops from q the positions of connections quarantined since they
 * arrived (for what they delivered, not for their leases): their items
 * were taken back (owners.c) and are redone. The positions of an item
 * thrown out by the check are still checked: they count for their
 * searcher and for the pool. */
static void drop_gone(pb_learner_t *l, spotq_t *q) {
  const int A = l->g->num_actions;
  size_t n = 0;
  for (size_t i = 0; i < q->n; i++) {
    const peer_t *p = &l->net.peers[q->who[i].slot];
    if (p->serial == q->who[i].serial && p->quarantined &&
        p->quarantined != QUAR_LEASES)
      continue;
    q->states[n] = q->states[i];
    memmove(q->claimed + n * A, q->claimed + i * A, (size_t)A * sizeof(float));
    q->who[n] = q->who[i];
    q->item[n++] = q->item[i];
  }
  q->n = n;
}

void pb__spot_kick(pb_learner_t *l) {
  if (l->spot.check == NULL || l->spot.running || l->spot.wait.n == 0 ||
      l->it.phase != PH_SEARCH || l->stopping || !l->handles_open || l->fatal)
    return;
  drop_gone(l, &l->spot.wait);
  if (l->spot.wait.n == 0) return;
  spotq_t t = l->spot.run;
  l->spot.run = l->spot.wait;
  l->spot.wait = t;
  l->spot.wait.n = 0;
  size_t need = l->spot.run.n * (size_t)l->g->num_actions;
  if (need > l->spot.mine_cap) {
    free(l->spot.mine);
    l->spot.mine = malloc(need * sizeof *l->spot.mine);
    l->spot.mine_cap = l->spot.mine ? need : 0;
  }
  pb_err_t err;
  int rc = l->spot.mine == NULL ? UV_ENOMEM : 0;
  if (rc == 0) {
    l->spot.running = 1;
    l->spot.job.data = l;
    rc = uv_queue_work(&l->loop, &l->spot.job, spot_work, spot_done);
  }
  if (rc != 0) {
    l->spot.running = 0;
    pb_err_set(&err, PB_EIO, "cannot start the spot check: %s",
               uv_strerror(rc));
    pb__set_fatal(l, &err);
  }
}

int pb__spot_init(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *cfg = &l->cfg;
  if (!(cfg->net.spot_check > 0)) return 0;
  l->spot.check = pb_spot_new(
      l->g, cfg->search.expansions, cfg->search.max_depth,
      cfg->search.parallel,
      pb_learn_eval_batch(cfg->search.parallel, cfg->search.expansions,
                          l->g->num_actions, cfg->train.selfplay_parallel),
      (uint32_t)cfg->search.cache_entries, err);
  if (l->spot.check == NULL) return err->code;
  /* The check searches in the searchers' precision: bf16 against fp32
   * differs beyond the tolerance on a few percent of honest positions
   * (docs/reliability.md). auto is resolved on this machine's device. */
  l->spot.prec = pb__role_precision(l, PB_DEVICE_SEARCHER);
  if (pb_config_abnet_targets(cfg) &&
      pb_spot_set_abnet(l->spot.check, (uint64_t)cfg->search.nodes, err) != 0)
    return err->code;
  l->spot.idx = malloc((size_t)cfg->net.item_states * sizeof *l->spot.idx);
  if (l->spot.idx == NULL) {
    pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    return PB_ENOMEM;
  }
  /* Not the run's seed: workers know that one. */
  pb_rng_seed(&l->spot.rng, pb_mix64((uint64_t)(pb_now() * 1e9)),
              (uint64_t)getpid());
  return 0;
}

void pb__spot_free(pb_learner_t *l) {
  pb_spot_destroy(&l->spot.check);
  free(l->spot.idx);
  pb__spotq_free(&l->spot.wait);
  pb__spotq_free(&l->spot.run);
  free(l->spot.mine);
  free(l->spot.lean);
  memset(&l->spot, 0, sizeof l->spot);
}
