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

/* p's CURVE key and (without CURVE) its address, or NULL. */
static void idents(pb_learner_t *l, const peer_t *p, ident_t *id[2]) {
  id[0] = p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 1) : NULL;
  id[1] = p->addr[0] && l->zap == NULL
              ? pb__ident_find(l, IDENT_ADDR, p->addr, 1)
              : NULL;
}

/* The text of a quarantine for tally t. */
static void reason(const char *whose, const pb_play_tally_t *t, char *msg,
                   size_t cap) {
  snprintf(msg, cap,
           "%s: its self-play moves are impossible under the Q they were "
           "played with: %.1f standard errors more surprising than the "
           "policy over %" PRIu64 " moves of %" PRIu64
           " episodes (%.1f over its recent moves)",
           whose, pb_play_z(t), t->moves, t->episodes, pb_play_recent_z(t));
}

/* Quarantines actor p (quarantine.c: its items of the open iteration are
 * dropped and re-queued, it is refused from now on): `whose` tally t is
 * impossible. */
static void quarantine(pb_learner_t *l, peer_t *p, const char *whose,
                       const pb_play_tally_t *t) {
  if (p->quarantined) return;
  /* Its moves are dealt with: they leave its key's and its address's
   * tallies, which go on judging the connections left (an honest actor
   * on the liar's host is not judged by the liar's moves). */
  ident_t *id[2];
  idents(l, p, id);
  for (int i = 0; i < 2; i++)
    if (id[i] != NULL && !id[i]->banned) pb_play_sub(&id[i]->play, &p->play);
  char msg[PB_MSG_TEXT_MAX], r[PB_MSG_TEXT_MAX - 20];
  reason(whose, t, r, sizeof r);
  snprintf(msg, sizeof msg, "quarantined (%s)", r);
  pb__quarantine(l, p, QUAR_PLAY, msg);
}

/* Of a banned key's connections, those that played; of an address's,
 * those whose own moves lean by 3 standard errors or more (an honest
 * actor on the host keeps working, the hopping liar's do not). */
static int played(const peer_t *p) { return p->play.moves > 0; }
static int leaning(const peer_t *p) {
  return p->play.moves > 0 && pb_play_z(&p->play) >= PB_PLAY_Z / 2;
}

/* A key or an address whose tally is impossible (the moves of its
 * connections that are not quarantined, over the run: a liar that opens a
 * new connection for every item): banned (quarantine.c). */
static void ban(pb_learner_t *l, ident_t *e, const char *whose) {
  char msg[PB_MSG_TEXT_MAX];
  reason(whose, &e->play, msg, sizeof msg);
  pb__ban(l, e, QUAR_PLAY, msg, e->kind == IDENT_KEY ? played : leaning);
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
    if (id[i] != NULL && !pb__ident_banned(l, id[i]) &&
        pb_play_impossible(&id[i]->play))
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
