/* selfcheck.c - the learner's check of self-play episodes beyond the rules:
 * how surprising each actor's moves are under the Q it announced
 * (common/train/playcheck.h), tallied per connection, per CURVE key and,
 * without CURVE, per address, over the run. A tally whose moves are
 * statistically impossible for an honest actor (z >= 6 over at least 100
 * moves) quarantines the connection, the key or the address: its result
 * is refused, its items of the open iteration are dropped and re-queued
 * for other actors, and it is refused from then on.
 *
 * The learner scores with its own copy of the Q network it serves (the
 * weights workers download), in the actors' precision, on the loop thread:
 * a forward pass over the sampled episodes' positions (net.selfplay_check
 * of the episodes of a result, at least one), a few milliseconds an item.
 * Episodes played with another version (pipelined runs, whose Q may lag)
 * are not scored. Only algorithms whose actors draw moves from Q
 * (pb_algo_t.q_play: PROBS) are scored; AlphaZero's moves come from a
 * search the learner would have to repeat. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "precision.h"
#include "state.h"

enum { PC_BATCH = 256 };

int pb__selfcheck_init(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *c = &l->cfg;
  l->pc_version = UINT64_MAX;
  if (!(c->net.selfplay_check > 0) || !pb_iter_algo(l->iter)->q_play)
    return 0;
  pb_nn_t *q = pb_learn_q(l->learn);
  l->pc_q = pb_nn_new(pb_nn_spec(q), NULL, pb_nn_device(q), 1, err);
  if (l->pc_q == NULL) return err->code;
  /* The actors' precision: a bf16 actor's Q differs from fp32's in the
   * second or third digit, which a run-long sum would notice. */
  const char *ap = pb_config_precision(c, PB_DEVICE_ACTOR, NULL);
  const int prec = !strcmp(ap, "bf16") ? PB_NN_BF16
                   : !strcmp(ap, "auto") &&
                           pb_precision_auto_bf16(pb_nn_device(q), NULL, 0)
                       ? PB_NN_BF16
                       : PB_NN_FP32;
  int rc = pb_nn_set_precision(l->pc_q, prec, err);
  if (rc != 0) return rc;
  l->pc_ne = pb_neteval_new(l->g, PC_BATCH, 0, err);
  if (l->pc_ne == NULL) return err->code;
  pb_neteval_bind(l->pc_ne, NULL, l->pc_q);
  /* Not the run's seed: workers know that one. */
  pb_rng_seed(&l->pc_rng, pb_mix64((uint64_t)(pb_now() * 1e9) ^ 0x5e1f),
              (uint64_t)getpid());
  return 0;
}

void pb__selfcheck_free(pb_learner_t *l) {
  pb_neteval_destroy(&l->pc_ne);
  pb_nn_destroy(&l->pc_q);
  free(l->pc_out);
  l->pc_out = NULL;
  l->pc_cap = 0;
  free(l->sp_owner);
  l->sp_owner = NULL;
  l->sp_owner_cap = 0;
}

/* The owners of the open iteration's self-play items (a new iteration:
 * none yet). 0, or PB_ENOMEM. */
static int owners(pb_learner_t *l, pb_err_t *err) {
  const uint64_t it = pb_iter_selfplay_iter(l->iter);
  const size_t n = pb_iter_selfplay_items(l->iter);
  if (it == l->sp_owner_iter && n <= l->sp_owner_cap) return 0;
  if (n > l->sp_owner_cap) {
    owner_t *o = realloc(l->sp_owner, n * sizeof *o);
    if (o == NULL)
      return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    l->sp_owner = o;
    l->sp_owner_cap = n;
  }
  for (size_t i = 0; i < l->sp_owner_cap; i++)
    l->sp_owner[i] = (owner_t){UINT32_MAX, 0};
  l->sp_owner_iter = it;
  return 0;
}

/* The scoring network holds the served Q. 0, or the load's error. */
static int load(pb_learner_t *l, pb_err_t *err) {
  if (l->pc_version == l->qw.version || l->qw.buf == NULL) return 0;
  int rc = pb_nn_weights_load(l->pc_q, l->qw.buf, l->qw.len, NULL, err);
  if (rc != 0) return rc;
  l->pc_version = l->qw.version;
  pb_neteval_bind(l->pc_ne, NULL, l->pc_q);
  return 0;
}

/* Q of every state of episode ep into l->pc_out. */
static int q_of(pb_learner_t *l, const pb_msg_episode_t *ep, pb_err_t *err) {
  const size_t A = (size_t)l->g->num_actions;
  const size_t need = (size_t)ep->n_states * A;
  if (need > l->pc_cap) {
    float *o = realloc(l->pc_out, need * sizeof *o);
    if (o == NULL)
      return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    l->pc_out = o;
    l->pc_cap = need;
  }
  pb_evalfn_t fn = pb_neteval_fn(l->pc_ne);
  return fn.qvalues(fn.ctx, ep->states, (int)ep->n_states, l->pc_out, err);
}

/* Drops p's accepted items of the open iteration: their episodes go, and
 * they are re-queued for other actors. */
static size_t drop_items(pb_learner_t *l, const peer_t *p) {
  const owner_t who = {(uint32_t)(p - l->peers), p->serial};
  if (pb_iter_selfplay_iter(l->iter) == 0 || l->sp_owner == NULL ||
      l->sp_owner_iter != pb_iter_selfplay_iter(l->iter))
    return 0;
  size_t n = pb_iter_selfplay_items(l->iter), k = 0;
  if (n > l->sp_owner_cap) n = l->sp_owner_cap;
  for (size_t i = 0; i < n; i++) {
    if (l->sp_owner[i].slot != who.slot || l->sp_owner[i].serial != who.serial)
      continue;
    pb_episodes_clear(pb_iter_item_store(l->iter, i));
    pb_workq_requeue(l->spq, i, now(l));
    l->sp_owner[i] = (owner_t){UINT32_MAX, 0};
    k++;
  }
  l->pc_items_dropped += k;
  return k;
}

/* p's CURVE key and (without CURVE) its address, or NULL. */
static void idents(pb_learner_t *l, const peer_t *p, ident_t *id[2]) {
  id[0] = p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 1) : NULL;
  id[1] = p->addr[0] && l->zap == NULL
              ? pb__ident_find(l, IDENT_ADDR, p->addr, 1)
              : NULL;
}

/* Quarantines actor p: `whose` tally t is impossible. */
static void quarantine(pb_learner_t *l, peer_t *p, const char *whose,
                       const pb_play_tally_t *t) {
  if (p->quarantined) return;
  p->quarantined = QUAR_PLAY;
  p->play_bad = 1;
  l->pc_quarantined++;
  pb__ban_sender(l, p->sender);
  /* Its moves are dealt with: they leave its key's and its address's
   * tallies, which go on judging the connections left (an honest actor
   * on the liar's host is not judged by the liar's moves). */
  ident_t *id[2];
  idents(l, p, id);
  for (int i = 0; i < 2; i++)
    if (id[i] != NULL && !id[i]->banned) pb_play_sub(&id[i]->play, &p->play);
  size_t k = drop_items(l, p);
  if (p->used) k += pb_workq_release(l->spq, p->serial);
  char msg[PB_MSG_TEXT_MAX];
  snprintf(msg, sizeof msg,
           "quarantined (%s): its self-play moves are impossible under the Q "
           "they were played with: %.1f standard errors more surprising "
           "than the policy over %" PRIu64 " moves of %" PRIu64
           " episodes (%.1f over its recent moves)",
           whose, pb_play_z(t), t->moves, t->episodes, pb_play_recent_z(t));
  pb_log_warn(l->log,
              "actor %s (address %s, host %s%s%s) %s; its %zu items of this "
              "iteration are dropped and re-queued, and it is refused from "
              "now on",
              p->sender[0] ? p->sender : "?", p->addr[0] ? p->addr : "?",
              p->host[0] ? p->host : "?", p->key[0] ? ", key " : "", p->key,
              msg, k);
  if (p->used) pb__reject(l, p, PB_EDENIED, msg);
}

/* A key or an address whose tally is impossible (the moves of its
 * connections that are not quarantined, over the run: a liar that opens a
 * new connection for every item): refused from now on. Of its connections
 * that played, a key's are quarantined (they are one worker, or share its
 * fate as with the spot check); an address's where their own moves lean
 * by 3 standard errors or more (an honest actor on the host keeps working,
 * the hopping liar's do not). */
static void ban(pb_learner_t *l, ident_t *e, const char *whose) {
  e->banned = QUAR_PLAY;
  e->banned_at = now(l);
  for (int i = 0; i < l->max_peers; i++) {
    peer_t *p = &l->peers[i];
    if (!p->used || p->play.moves == 0 || p->quarantined) continue;
    if (e->kind == IDENT_KEY ? strcmp(p->key, e->id) : strcmp(p->addr, e->id))
      continue;
    if (e->kind == IDENT_ADDR && pb_play_z(&p->play) < PB_PLAY_Z / 2) continue;
    quarantine(l, p, whose, &e->play);
  }
  pb_log_warn(l->log,
              "%s %s is quarantined (its actors' self-play moves are "
              "impossible: %.1f standard errors over %" PRIu64 " moves): "
              "new connections with it are refused from now on",
              e->kind == IDENT_KEY ? "CURVE key" : "address", e->id,
              pb_play_z(&e->play), e->play.moves);
}

/* Adds t to p, its key and its address; 1 when one of them is now
 * impossible (p quarantined). */
static int tally(pb_learner_t *l, peer_t *p, const pb_play_tally_t *t) {
  pb_play_add(&p->play, t);
  l->pc_episodes += t->episodes;
  l->pc_moves += t->moves;
  ident_t *id[2];
  idents(l, p, id);
  for (int i = 0; i < 2; i++)
    if (id[i] != NULL) pb_play_add(&id[i]->play, t);
  if (pb_play_impossible(&p->play)) {
    quarantine(l, p, "its connection", &p->play);
    return 1;
  }
  for (int i = 0; i < 2; i++)
    if (id[i] != NULL && !id[i]->banned && pb_play_impossible(&id[i]->play))
      ban(l, id[i], i == 0 ? "its CURVE key" : "its address");
  return p->quarantined != 0;
}

int pb__selfcheck_item(pb_learner_t *l, peer_t *p, size_t idx,
                       const pb_msg_selfplay_result_t *r) {
  if (l->pc_q == NULL || r->n_episodes == 0) return 0;
  pb_err_t err;
  if (owners(l, &err) != 0 || load(l, &err) != 0) {
    pb__set_fatal(l, &err);
    return 0;
  }
  const pb_config_t *c = &l->cfg;
  /* At least one episode of the result, drawn at random. */
  const uint32_t one = pb_rng_below(&l->pc_rng, r->n_episodes);
  pb_play_tally_t t = {0};
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    if (ep->q_version != l->pc_version) continue;
    if (k != one && !(pb_rng_uniform(&l->pc_rng) < c->net.selfplay_check))
      continue;
    if (q_of(l, ep, &err) != 0 ||
        pb_play_score(l->g, ep->states, ep->n_states, ep->final_reward,
                      l->pc_out, c->train.eps,
                      c->train.selfplay_temperature, &t, &err) != 0) {
      if (err.code == PB_ECORRUPT) continue; /* the rules check refused it */
      pb__set_fatal(l, &err);
      return 0;
    }
  }
  if (t.episodes > 0 && tally(l, p, &t)) return 1;
  if (idx < l->sp_owner_cap)
    l->sp_owner[idx] = (owner_t){(uint32_t)(p - l->peers), p->serial};
  return 0;
}
