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
 * connection with a new sender id for every item). A quarantined
 * connection's items of the iteration are re-queued; it, its sender id,
 * its key, and new connections from its address are refused for the rest
 * of the learner's life (connections of a banned address that never
 * disagreed keep working). The search phase ends (phases.c) only when
 * every check is done. The table of keys and addresses is trust.c's,
 * whose lease tallies quarantine too: pb__refused refuses a peer for
 * either reason and says which. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int same_owner(owner_t a, owner_t b) {
  return a.slot == b.slot && a.serial == b.serial;
}

/* Draws the positions of an accepted item that the learner searches
 * again. The draw is not reproducible from the run's seed (which workers
 * know): a searcher cannot tell which of its answers will be checked. */
void pb__spot_sample(pb_learner_t *l, const peer_t *p, size_t idx,
                        size_t first, size_t n) {
  if (l->spot == NULL) return;
  const int A = l->g->num_actions;
  owner_t who = {(uint32_t)(p - l->peers), p->serial};
  const uint32_t *counts = pb_iter_search_counts(l->iter);
  size_t m = pb_spot_sample(&l->spot_rng, n, counts ? counts + first : NULL,
                            pb_iter_search_occurrences(l->iter),
                            pb_iter_search_positions(l->iter),
                            l->cfg.net.spot_check, l->spot_idx,
                            (size_t)l->cfg.net.item_states);
  for (size_t i = 0; i < m; i++) {
    size_t k = first + l->spot_idx[i];
    if (spotq_push(&l->spot_wait, A, &pb_iter_search_states(l->iter)[k],
                   pb_iter_targets(l->iter) + k * A, who,
                   (uint32_t)idx) != 0) {
      pb_err_t err;
      pb_err_set(&err, PB_ENOMEM, "learner: out of memory (spot check)");
      pb__set_fatal(l, &err);
      return;
    }
  }
}

static int is_banned(const pb_learner_t *l, const char *id) {
  if (id == NULL || id[0] == '\0') return 0;
  for (int i = 0; i < l->n_banned; i++)
    if (!strcmp(l->banned[i], id)) return 1;
  return 0;
}

/* Whether p is refused by its key or its address: why (QUAR_*), or 0. */
static int ident_refuses(pb_learner_t *l, const peer_t *p) {
  if (p->key[0] != '\0') {
    const ident_t *k = pb__ident_find(l, IDENT_KEY, p->key, 0);
    if (k != NULL && k->banned) return k->banned;
  }
  if (p->addr[0] != '\0' && l->zap == NULL) {
    const ident_t *a = pb__ident_find(l, IDENT_ADDR, p->addr, 0);
    /* Refused: new connections; of the old ones, those that disagreed
     * (spot check), or never delivered anything (leases: trust.c). */
    if (a != NULL && a->banned &&
        (p->disagreed || p->play_bad || p->first_seen >= a->banned_at ||
         (a->banned == QUAR_LEASES && p->items == 0)))
      return a->banned;
  }
  return 0;
}

void pb__ban_sender(pb_learner_t *l, const char *id) {
  if (id[0] == '\0' || is_banned(l, id)) return;
  int k = l->n_banned < BANNED_MAX ? l->n_banned++ : BANNED_MAX - 1;
  snprintf(l->banned[k], sizeof l->banned[k], "%s", id);
}

/* A searcher whose results disagree: everything it delivered in this
 * iteration is re-queued, the checks of its results still waiting are
 * dropped, and it (its connection and its sender id) is refused for the
 * rest of the learner's life; `why` says what was tallied. */
static void quarantine(pb_learner_t *l, peer_t *p, const char *why,
                       const pb_spot_tally_t *t) {
  const uint32_t slot = (uint32_t)(p - l->peers);
  const owner_t who = {slot, p->serial};
  if (p->quarantined) return;
  p->quarantined = QUAR_SPOT;
  l->quarantined++;
  pb__ban_sender(l, p->sender);
  size_t k = 0;
  for (size_t i = 0; i < l->n_bs_items; i++)
    if (same_owner(l->item_owner[i], who)) {
      pb_workq_requeue(l->wq, i, now(l));
      l->item_owner[i] = (owner_t){UINT32_MAX, 0};
      k++;
    }
  if (p->used) k += pb_workq_release(l->wq, p->serial);
  spotq_t *q = &l->spot_wait;
  const int A = l->g->num_actions;
  size_t n = 0;
  for (size_t i = 0; i < q->n; i++) {
    if (same_owner(q->who[i], who)) continue;
    q->states[n] = q->states[i];
    memmove(q->claimed + n * A, q->claimed + i * A, (size_t)A * sizeof(float));
    q->who[n] = q->who[i];
    q->item[n++] = q->item[i];
  }
  q->n = n;
  char msg[PB_MSG_TEXT_MAX];
  snprintf(msg, sizeof msg,
           "quarantined (%s): %" PRIu64 " of %" PRIu64 " search results the "
           "learner searched again disagree with its own (largest "
           "difference %.3g, tolerance %g)",
           why, t->disagree, t->checked, (double)t->max_diff,
           l->cfg.net.spot_check_tolerance);
  pb_log_warn(l->log,
              "searcher %s (address %s, host %s%s%s) %s; its %zu items of "
              "this iteration are re-queued and it is refused from now on",
              p->sender[0] ? p->sender : "?", p->addr[0] ? p->addr : "?",
              p->host[0] ? p->host : "?", p->key[0] ? ", key " : "", p->key,
              msg, k);
  if (p->used) pb__reject(l, p, PB_EDENIED, msg);
}

/* A key or an address is banned: its connections are quarantined (for an
 * address, those that disagreed; the others keep working), and new ones
 * refused. */
static void ban_ident(pb_learner_t *l, ident_t *e, const char *why) {
  e->banned = QUAR_SPOT;
  e->banned_at = now(l);
  int shared = 0;
  for (int i = 0; i < l->max_peers; i++) {
    peer_t *p = &l->peers[i];
    if (!p->used) continue;
    int match = e->kind == IDENT_KEY ? !strcmp(p->key, e->id)
                                     : !strcmp(p->addr, e->id) && p->disagreed;
    if (!match) continue;
    if (!p->disagreed) shared++;
    quarantine(l, p, why, &e->tally);
  }
  if (e->kind == IDENT_KEY)
    pb_log_warn(l->log,
                "CURVE key %s is quarantined (%s): every connection with it "
                "is refused from now on%s",
                e->id, why,
                shared > 0 ? "; workers that never disagreed held it too: "
                             "give each worker its own key (probs keys DIR "
                             "--workers N, or --add-worker NAME)"
                           : "");
  else
    pb_log_warn(l->log,
                "address %s is quarantined (%s): new connections from it are "
                "refused from now on; connections from it that never "
                "disagreed keep working (workers of one host that must "
                "survive a liar among them need their own CURVE keys)",
                e->id, why);
}

/* The agreeing checked positions of the run that are not t's (t's own
 * agreeing ones are in l->spot_all as far as they agreed: take out at most
 * what is there). */
static pb_spot_tally_t rest_of(const pb_learner_t *l,
                               const pb_spot_tally_t *t) {
  pb_spot_tally_t rest = l->spot_all;
  const uint64_t own = t->checked - t->disagree;
  if (own >= rest.checked || t->disagree > 0) {
    /* Its disagreeing positions are not in spot_all, so its agreeing
     * biases cannot be told apart from its sums: compare with all. */
    return own >= rest.checked ? (pb_spot_tally_t){0} : rest;
  }
  rest.checked -= own;
  rest.bias_sum -= t->bias_sum;
  rest.bias_sq -= t->bias_sq;
  return rest;
}

/* Whether tally t leans (pb_spot_biased) against the rest of the run's
 * agreeing checked positions. */
static int leans(const pb_learner_t *l, const pb_spot_tally_t *t) {
  pb_spot_tally_t rest = rest_of(l, t);
  return pb_spot_biased(t, &rest, l->cfg.net.spot_check_tolerance / 10);
}

/* Why a tally is quarantined: too many disagreements, or a lean. */
static const char *verdict(const pb_learner_t *l, const pb_spot_tally_t *t,
                           char *buf, size_t cap, const char *whose) {
  if (pb_spot_failed(t, l->cfg.net.spot_check_max_disagree))
    return whose;
  const pb_spot_tally_t rest = rest_of(l, t);
  snprintf(buf, cap,
           "%s: its targets lean by %+.4f on average over %" PRIu64
           " positions checked (%+.4f over its recent ones), the other "
           "searchers' by %+.4f",
           whose, pb_spot_mean_bias(t), t->checked, pb_spot_recent_bias(t),
           pb_spot_mean_bias(&rest));
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
  /* The baseline of the bias test: positions that agreed (a liar's
   * wrong answers must not become the honest searchers' lean). */
  if (!bad && !p->quarantined) pb_spot_count(&l->spot_all, d, b, tol);
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
  ident_t *a = p->addr[0] && l->zap == NULL
                   ? pb__ident_find(l, IDENT_ADDR, p->addr, 1)
                   : NULL;
  if (a != NULL) {
    a->last = now(l);
    pb_spot_count(&a->tally, d, b, tol);
    if (first_bad) a->bad_conns++;
    if (!a->banned && a->bad_conns >= 3) {
      snprintf(why, sizeof why, "%u connections from its address disagreed",
               a->bad_conns);
      ban_ident(l, a, why);
    }
  }
}

/* A position of item `item` (delivered by w) disagrees by d: the whole item
 * goes back to the queue, for another worker. */
static void throw_item(pb_learner_t *l, uint32_t item, owner_t w, float d) {
  if (!same_owner(l->item_owner[item], w)) return; /* already redone */
  pb_workq_requeue(l->wq, item, now(l));
  l->item_owner[item] = (owner_t){UINT32_MAX, 0};
  l->items_thrown++;
  const peer_t *p = &l->peers[w.slot];
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
  pb_err_clear(&l->spot_err);
  pb_nn_set_threads(l->cfg.model.threads);
  /* In the searchers' precision, then back to the learner's own. */
  pb_nn_t *v = pb_learn_v(l->learn), *q = pb_learn_q(l->learn);
  const int own = pb_nn_precision(q);
  pb_nn_set_precision(v, l->spot_prec, NULL);
  pb_nn_set_precision(q, l->spot_prec, NULL);
  l->spot_rc = pb_spot_search(l->spot, v, q, l->spot_run.states,
                              (int)l->spot_run.n, l->spot_mine, &l->spot_err);
  pb_nn_set_precision(v, own, NULL);
  pb_nn_set_precision(q, own, NULL);
}

static void spot_done(uv_work_t *req, int status) {
  pb_learner_t *l = req->data;
  spotq_t *q = &l->spot_run;
  const size_t n = q->n;
  l->spot_running = 0;
  q->n = 0;
  if (status != 0 || l->spot_rc != 0) {
    if (status != 0)
      pb_err_set(&l->spot_err, PB_EIO, "spot check cancelled: %s",
                 uv_strerror(status));
    pb__set_fatal(l, &l->spot_err);
    return;
  }
  if (l->stopping || !l->handles_open || l->phase != PH_SEARCH) return;
  const int A = l->g->num_actions;
  const double tol = l->cfg.net.spot_check_tolerance;
  for (size_t i = 0; i < n; i++) {
    const float *mine = l->spot_mine + i * A, *theirs = q->claimed + i * A;
    const float d = pb_spot_diff(l->g, &q->states[i], mine, theirs);
    const float b = pb_spot_bias(l->g, &q->states[i], mine, theirs);
    owner_t w = q->who[i];
    peer_t *p = &l->peers[w.slot];
    l->spot_checked++;
    if ((double)d > tol) {
      l->spot_disagree++;
      throw_item(l, q->item[i], w, d);
    }
    /* A peer whose slot went to another is judged by its items alone. */
    if (p->serial == w.serial) tally(l, p, d, b);
  }
  pb__spot_kick(l);
  pb__search_maybe_done(l);
}

void pb__spot_kick(pb_learner_t *l) {
  if (l->spot == NULL || l->spot_running || l->spot_wait.n == 0 ||
      l->phase != PH_SEARCH || l->stopping || !l->handles_open || l->fatal)
    return;
  spotq_t t = l->spot_run;
  l->spot_run = l->spot_wait;
  l->spot_wait = t;
  l->spot_wait.n = 0;
  size_t need = l->spot_run.n * (size_t)l->g->num_actions;
  if (need > l->spot_mine_cap) {
    free(l->spot_mine);
    l->spot_mine = malloc(need * sizeof *l->spot_mine);
    l->spot_mine_cap = l->spot_mine ? need : 0;
  }
  pb_err_t err;
  int rc = l->spot_mine == NULL ? UV_ENOMEM : 0;
  if (rc == 0) {
    l->spot_running = 1;
    l->spot_job.data = l;
    rc = uv_queue_work(&l->loop, &l->spot_job, spot_work, spot_done);
  }
  if (rc != 0) {
    l->spot_running = 0;
    pb_err_set(&err, PB_EIO, "cannot start the spot check: %s",
               uv_strerror(rc));
    pb__set_fatal(l, &err);
  }
}

/* A quarantined peer, or a new connection with the sender id or CURVE key
 * of one, gets only refusals (rate limited: a refusal answers its requests
 * and results, nothing else). Returns 1 when the message is dropped. */
int pb__refused(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  int why = p->quarantined;
  if (!why && is_banned(l, m->header.sender_id)) why = QUAR_SPOT;
  if (!why) why = ident_refuses(l, p);
  if (!why) return 0;
  if (p->role == 0 && m->type == PB_MSG_WORK_REQUEST)
    p->role = m->work_request.role; /* counted among the refused */
  if (!p->quarantined) {
    p->quarantined = why;
    if (pb__may_warn(l))
      pb_log_warn(l->log, "refused %s from quarantined %s (address %s)%s%s",
                  pb_msg_type_name(m->type), m->header.sender_id,
                  p->addr[0] ? p->addr : "?", p->key[0] ? " with key " : "",
                  p->key);
  }
  l->msgs_bad++;
  if (m->type == PB_MSG_HELLO || m->type == PB_MSG_WORK_REQUEST ||
      m->type == PB_MSG_SEARCH_RESULT || m->type == PB_MSG_SELFPLAY_RESULT) {
    if (m->type == PB_MSG_SEARCH_RESULT || m->type == PB_MSG_SELFPLAY_RESULT)
      l->results_dup++;
    pb__reject(l, p, PB_EDENIED,
               why == QUAR_LEASES
                   ? "quarantined: this worker's leases (or those of its key "
                     "or address) kept expiring without a result; see the "
                     "learner's log"
                   : "quarantined: this worker's search results disagreed "
                     "with the learner's spot check; see the learner's log");
  }
  return 1;
}
