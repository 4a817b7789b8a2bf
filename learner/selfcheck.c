/* selfcheck.c - the learner's check of self-play episodes beyond the rules:
 * how surprising each actor's moves are under the Q it announced
 * (common/train/playcheck.h), tallied per connection, per CURVE key and,
 * without CURVE, per address, over the run; and how its games end beside
 * the other actors' of the same iteration (the outcome test, below). A
 * tally statistically impossible for an honest actor (z >= 6 over at
 * least 100 moves, or 30 episodes) quarantines the connection, the key or
 * the address (quarantine.c; an address only for a while): its result is
 * refused, its items of the open iteration are dropped and re-queued for
 * other actors, and it is refused from then on.
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "precision.h"
#include "state.h"

enum { PC_BATCH = 256 };

int pb__selfcheck_init(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *c = &l->cfg;
  l->play.version = UINT64_MAX;
  if (!(c->net.selfplay_check > 0) || !pb_iter_algo(l->it.iter)->q_play)
    return 0;
  pb_nn_t *q = pb_learn_q(l->learn);
  l->play.q = pb_nn_new(pb_nn_spec(q), NULL, pb_nn_device(q), 1, err);
  if (l->play.q == NULL) return err->code;
  /* The actors' precision: a bf16 actor's Q differs from fp32's in the
   * second or third digit, which a run-long sum would notice. */
  const int prec = pb__role_precision(l, PB_DEVICE_ACTOR);
  int rc = pb_nn_set_precision(l->play.q, prec, err);
  if (rc != 0) return rc;
  l->play.ne = pb_neteval_new(l->g, PC_BATCH, 0, err);
  if (l->play.ne == NULL) return err->code;
  pb_neteval_bind(l->play.ne, NULL, l->play.q);
  /* Not the run's seed: workers know that one. */
  pb_rng_seed(&l->play.rng, pb_mix64((uint64_t)(pb_now() * 1e9) ^ 0x5e1f),
              (uint64_t)getpid());
  return 0;
}

void pb__selfcheck_free(pb_learner_t *l) {
  pb_neteval_destroy(&l->play.ne);
  pb_nn_destroy(&l->play.q);
  free(l->play.out);
  free(l->play.pool.items);
  l->play.pool.items = NULL;
  l->play.pool.n_items = l->play.pool.cap = 0;
  l->play.out = NULL;
  l->play.cap = 0;
}

/* The scoring network holds the served Q. 0, or the load's error. */
static int load(pb_learner_t *l, pb_err_t *err) {
  if (l->play.version == l->net.qw.version || l->net.qw.buf == NULL) return 0;
  int rc = pb_nn_weights_load(l->play.q, l->net.qw.buf, l->net.qw.len, NULL, err);
  if (rc != 0) return rc;
  l->play.version = l->net.qw.version;
  pb_neteval_bind(l->play.ne, NULL, l->play.q);
  return 0;
}

/* Q of every state of episode ep into l->play.out. */
static int q_of(pb_learner_t *l, const pb_msg_episode_t *ep, pb_err_t *err) {
  const size_t A = (size_t)l->g->num_actions;
  const size_t need = (size_t)ep->n_states * A;
  if (need > l->play.cap) {
    float *o = realloc(l->play.out, need * sizeof *o);
    if (o == NULL)
      return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    l->play.out = o;
    l->play.cap = need;
  }
  pb_evalfn_t fn = pb_neteval_fn(l->play.ne);
  return fn.qvalues(fn.ctx, ep->states, (int)ep->n_states, l->play.out, err);
}

/* p's CURVE key and (without CURVE) its address, or NULL. */
static void idents(pb_learner_t *l, const peer_t *p, ident_t *id[2]) {
  id[0] = p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 1) : NULL;
  id[1] = p->addr[0] && l->net.zap == NULL
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
  l->play.episodes += t->episodes;
  l->play.moves += t->moves;
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

/* ---- the outcome test (issue 46) ---------------------------------------
 *
 * The surprise of the moves cannot see games played by the announced
 * policy and sent only when they end one way (rejection sampling: honest
 * games, only the first player's losses sent), nor made-up moves under a Q
 * nearly flat (issue 46: a thrower never scored above z 0.06 with seed 12,
 * while V(start) fell from +0.018 to -0.494). Their outcomes show it: the
 * first player's result of each episode, compared with games of the same
 * policy. Per connection and CURVE key, summed over the Q versions (each
 * its own comparison): the sum of its results minus its count times the
 * reference's mean, over the variance of that difference were both drawn
 * alike (the pooled variance x n (1 + n / reference)); |z| >= PB_PLAY_Z
 * over at least PB__OUT_MIN episodes quarantines it as impossible moves
 * do (QUAR_PLAY). The reference:
 *
 *   - the learner's own games of that Q version (selfref.c,
 *     net.selfplay_reference a version), the ground truth, for every
 *     episode of a version the learner plays: a lone actor, colluders
 *     alone and a cheat that takes most items are judged too;
 *   - otherwise (the reference off, or a version the learner did not
 *     play) the other actors' episodes of the same self-play iteration.
 *
 * Identities too new to be judged alone (under PB__OUT_MIN episodes, or
 * the surprise's PB_PLAY_MIN_MOVES moves: a keyless cheat that opens a
 * new connection per item) are judged together: their episodes of the
 * iteration's reference version and their scored moves go to one pool
 * (struct selfref). When the pool is impossible (its outcomes beside the
 * reference games, or its surprise), their items of the open iteration
 * that lean its way are dropped and redone, and so is every such item
 * while it stays impossible; they cannot be quarantined (each is new).
 * Any algorithm: AlphaZero's and td's thrown games are caught here too. */

#define PB__OUT_MIN 30

/* The first player's result of episode ep: the last mover's reward, its
 * sign turned when the second player made the last move. */
static double first_result(const pb_msg_episode_t *ep) {
  if (ep->n_states == 0) return 0.0;
  const double r = ep->final_reward;
  return (ep->n_states - 1) % 2 == 0 ? r : -r;
}

/* o's episodes of this iteration against the others' (the iteration's
 * totals less o's): the excess and its variance; 0 when nobody else
 * played yet. */
static int outc_part(const pb_learner_t *l, const outc_t *o, double *excess,
                     double *var) {
  *excess = *var = 0.0;
  if (o->n == 0 || o->iter != l->play.out_iter || l->play.out_n <= o->n)
    return 0;
  return pb_outcome_part(o->n, o->sum, o->sq, l->play.out_n - o->n,
                         l->play.out_sum - o->sum, l->play.out_sq - o->sq,
                         excess, var);
}

/* The iteration ended for o: its part goes to the run's sums. */
static void outc_fold(const pb_learner_t *l, outc_t *o) {
  double e, v;
  if (outc_part(l, o, &e, &v)) {
    o->excess += e;
    o->var += v;
    o->episodes += o->n;
  }
  o->n = 0;
  o->sum = o->sq = 0.0;
}

/* z of o over the run so far, this iteration included; its episodes. */
static double outc_z(const pb_learner_t *l, const outc_t *o,
                     uint64_t *episodes) {
  double e, v;
  *episodes = o->episodes;
  if (outc_part(l, o, &e, &v)) *episodes += o->n;
  e += o->excess;
  v += o->var;
  return v > 0 ? e / sqrt(v) : 0.0;
}

/* A new self-play iteration: every tally of the last one is folded. */
static void outc_iteration(pb_learner_t *l, uint64_t it) {
  if (it == l->play.out_iter) return;
  for (int i = 0; i < l->net.max_peers; i++)
    if (l->net.peers[i].used && l->net.peers[i].outc.iter == l->play.out_iter)
      outc_fold(l, &l->net.peers[i].outc);
  for (int i = 0; i < IDENTS_MAX; i++)
    if (l->quar.idents[i].kind && l->quar.idents[i].outc.iter == l->play.out_iter)
      outc_fold(l, &l->quar.idents[i].outc);
  l->play.out_iter = it;
  l->play.out_n = 0;
  l->play.out_sum = l->play.out_sq = 0.0;
}

static void outc_add(outc_t *o, uint64_t it, const outc_t *r) {
  if (o->iter != it) {
    o->n = 0;
    o->sum = o->sq = 0.0;
    o->iter = it;
  }
  o->n += r->n;
  o->sum += r->sum;
  o->sq += r->sq;
}

/* The reference games of Q version v (started; done says whether they
 * are played), or NULL. */
static const refgames_t *ref_of(const pb_learner_t *l, uint64_t v) {
  if (!l->ref.on) return NULL;
  const refgames_t *g = &l->ref.games[v % REF_KEEP];
  return g->started && g->version == v ? g : NULL;
}

/* n episodes (their results' sum and squares) against reference games g:
 * the excess over g's mean and its variance; 0 when g is not played. */
static int ref_part(const refgames_t *g, uint64_t n, double sum, double sq,
                    double *excess, double *var) {
  *excess = *var = 0.0;
  if (g == NULL || !g->done) return 0;
  return pb_outcome_part(n, sum, sq, g->n, g->sum, g->sq, excess, var);
}

/* o's episodes of version o->rver go to its run's sums (those whose
 * reference is not played by now are counted as late). */
static void ref_fold(pb_learner_t *l, outc_t *o) {
  double e, v;
  if (o->rn > 0) {
    if (ref_part(ref_of(l, o->rver), o->rn, o->rsum, o->rsq, &e, &v)) {
      o->rexcess += e;
      o->rvar += v;
      o->repisodes += o->rn;
    } else {
      l->play.pool.late += o->rn;
    }
  }
  o->rn = 0;
  o->rsum = o->rsq = 0.0;
}

static void ref_add(pb_learner_t *l, outc_t *o, uint64_t v, double x) {
  if (o->rver != v) {
    ref_fold(l, o);
    o->rver = v;
  }
  o->rn++;
  o->rsum += x;
  o->rsq += x * x;
}

/* z of o against the reference games over the run; its episodes. */
static double ref_z(const pb_learner_t *l, const outc_t *o,
                    uint64_t *episodes) {
  double e, v;
  *episodes = o->repisodes;
  if (ref_part(ref_of(l, o->rver), o->rn, o->rsum, o->rsq, &e, &v))
    *episodes += o->rn;
  e += o->rexcess;
  v += o->rvar;
  return v > 0 ? e / sqrt(v) : 0.0;
}

static void outc_text(const pb_learner_t *l, const char *whose,
                      const outc_t *o, double z, uint64_t n, char *msg,
                      size_t cap) {
  snprintf(msg, cap,
           "%s: the outcomes of its self-play games are impossible beside "
           "the other actors' of the same iterations: %.1f standard errors "
           "over %" PRIu64 " episodes (the first player's mean result %+.2f "
           "in this iteration, the others' %+.2f)",
           whose, z, n, o->n ? o->sum / (double)o->n : 0.0,
           l->play.out_n > o->n
               ? (l->play.out_sum - o->sum) / (double)(l->play.out_n - o->n)
               : 0.0);
}

static void ref_text(const pb_learner_t *l, const char *whose,
                     const outc_t *o, double z, uint64_t n, char *msg,
                     size_t cap) {
  const refgames_t *g = ref_of(l, o->rver);
  snprintf(msg, cap,
           "%s: the outcomes of its self-play games are impossible beside "
           "the learner's own reference games: %.1f standard errors over "
           "%" PRIu64 " episodes (the first player's mean result %+.2f in "
           "its games of Q version %" PRIu64 ", %+.2f in the learner's %"
           PRIu64 ")",
           whose, z, n, o->rn ? o->rsum / (double)o->rn : 0.0, o->rver,
           g != NULL && g->n ? g->sum / (double)g->n : 0.0,
           g != NULL ? g->n : 0);
}

/* Of a banned key's connections, those that played. */
static int played_games(const peer_t *p) {
  return p->outc.n > 0 || p->outc.episodes > 0 || p->outc.rn > 0 ||
         p->outc.repisodes > 0;
}

/* Judges p's outcomes and its key's (NULL: none); 1 when p is now
 * quarantined. */
static int judge(pb_learner_t *l, peer_t *p, ident_t *key) {
  char msg[PB_MSG_TEXT_MAX], why[PB_MSG_TEXT_MAX - 20];
  uint64_t n;
  double z = outc_z(l, &p->outc, &n);
  int bad = n >= PB__OUT_MIN && fabs(z) >= PB_PLAY_Z;
  if (bad) outc_text(l, "its connection", &p->outc, z, n, why, sizeof why);
  if (!bad) {
    z = ref_z(l, &p->outc, &n);
    bad = n >= PB__OUT_MIN && fabs(z) >= PB_PLAY_Z;
    if (bad) ref_text(l, "its connection", &p->outc, z, n, why, sizeof why);
  }
  if (bad) {
    snprintf(msg, sizeof msg, "quarantined (%s)", why);
    /* Its games leave the reference of the others. */
    if (p->outc.iter == l->play.out_iter) {
      l->play.out_n -= p->outc.n;
      l->play.out_sum -= p->outc.sum;
      l->play.out_sq -= p->outc.sq;
    }
    l->play.out_quarantined++;
    pb__quarantine(l, p, QUAR_PLAY, msg);
    return 1;
  }
  if (key != NULL && !key->banned) {
    z = outc_z(l, &key->outc, &n);
    bad = n >= PB__OUT_MIN && fabs(z) >= PB_PLAY_Z;
    if (bad) outc_text(l, "its CURVE key", &key->outc, z, n, why, sizeof why);
    if (!bad) {
      z = ref_z(l, &key->outc, &n);
      bad = n >= PB__OUT_MIN && fabs(z) >= PB_PLAY_Z;
      if (bad) ref_text(l, "its CURVE key", &key->outc, z, n, why, sizeof why);
    }
    if (bad) {
      l->play.out_quarantined++;
      pb__ban(l, key, QUAR_PLAY, why, played_games);
    }
  }
  return p->quarantined != 0;
}

/* Adds the outcomes of result r (self-play iteration it) to p, its key
 * and the iteration: an episode of a version the learner plays reference
 * games of goes to the reference test, any other to the others'; 1 when
 * p, or its key, is now impossible (p quarantined). */
static int outcomes(pb_learner_t *l, peer_t *p, uint64_t it,
                    const pb_msg_selfplay_result_t *r) {
  outc_iteration(l, it);
  ident_t *key = p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 1) : NULL;
  outc_t add = {0};
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    const double x = first_result(ep);
    if (ref_of(l, ep->q_version) != NULL) {
      ref_add(l, &p->outc, ep->q_version, x);
      if (key != NULL) ref_add(l, &key->outc, ep->q_version, x);
    } else {
      add.n++;
      add.sum += x;
      add.sq += x * x;
    }
  }
  outc_add(&p->outc, it, &add);
  if (key != NULL) outc_add(&key->outc, it, &add);
  l->play.out_n += add.n;
  l->play.out_sum += add.sum;
  l->play.out_sq += add.sq;
  return judge(l, p, key);
}

/* ---- the pool of new identities ---------------------------------------- */

/* Whether p's identity (its key; without CURVE its connection: an
 * address is no identity) is too new for the outcome test (*out) and
 * for the surprise (*play). */
static void too_new(pb_learner_t *l, const peer_t *p, int *out, int *play) {
  const ident_t *k =
      p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 0) : NULL;
  const outc_t *o = k != NULL ? &k->outc : &p->outc;
  const pb_play_tally_t *t = k != NULL ? &k->play : &p->play;
  *out = o->episodes + o->n + o->repisodes + o->rn < PB__OUT_MIN;
  *play = l->play.q != NULL && t->moves < PB_PLAY_MIN_MOVES;
}

/* Pooled item e leaves the pool (its episodes were not its own to judge:
 * its connection was quarantined, or its item redone). */
static void pool_sub(lpool_t *P, const pooled_t *e) {
  P->n -= e->n;
  P->sum -= e->sum;
  P->sq -= e->sq;
  pb_play_sub(&P->moves, &e->play);
}

/* Whether pooled item e leans the way of an impossible pool. */
static int pool_leans(const pb_learner_t *l, const pooled_t *e) {
  const lpool_t *P = &l->play.pool;
  const refgames_t *g = ref_of(l, P->ver);
  if (P->sign != 0 && e->n > 0 && g != NULL && g->n > 0 &&
      (e->sum / e->n - g->sum / (double)g->n) * P->sign >= P->lean)
    return 1;
  return P->moves_bad && e->play.moves > 0 &&
         pb_play_z(&e->play) >= PB_PLAY_Z / 2;
}

/* Pooled item e is dropped (re-queued for another actor); `taken`: it is
 * in the iteration's store (else it is the result being checked, which
 * the caller refuses). */
static void pool_drop(pb_learner_t *l, const pooled_t *e, int taken) {
  lpool_t *P = &l->play.pool;
  if (taken) {
    pb_episodes_clear(pb_iter_item_store(l->it.iter, e->item));
    pb_workq_requeue(l->it.spq, e->item, now(l));
    pb__owners_drop(l, PH_SELFPLAY, e->item);
  }
  P->dropped++;
  const peer_t *p = &l->net.peers[e->who.slot];
  const int here = p->used && p->serial == e->who.serial;
  if (pb__may_warn(l))
    pb_log_warn(l->log,
                "self-play item %u of %s (address %s, too new to be judged "
                "alone) dropped: the pooled test of new identities is "
                "impossible (%s) and the item leans its way (the first "
                "player's mean result %+.2f, surprise z %.1f); re-queued "
                "for another actor",
                e->item, here && p->sender[0] ? p->sender : "?",
                here && p->addr[0] ? p->addr : "?",
                P->sign ? "their outcomes beside the reference games"
                        : "their moves' surprise",
                e->n ? e->sum / e->n : 0.0,
                e->play.moves ? pb_play_z(&e->play) : 0.0);
}

static int is_cur(const pooled_t *e, const pooled_t *c) {
  return e->item == c->item && pb__same_owner(e->who, c->who);
}

/* The pool's outcomes over the run against the reference games: z, and
 * its episodes and excess. */
static double pool_z(const pb_learner_t *l, uint64_t *n, double *excess) {
  const lpool_t *P = &l->play.pool;
  double e, v;
  *n = P->episodes;
  if (ref_part(ref_of(l, P->ver), P->n, P->sum, P->sq, &e, &v)) *n += P->n;
  e += P->excess;
  v += P->var;
  *excess = e;
  return v > 0 ? e / sqrt(v) : 0.0;
}

/* Judges the pool: items no longer held by who delivered them leave it
 * (cur, the item being checked, is held); while it is impossible, those
 * that lean its way are dropped (their episodes stay in it: what they
 * showed of the pool stays shown). 1 when cur is dropped. */
static int pool_judge(pb_learner_t *l, const pooled_t *cur) {
  lpool_t *P = &l->play.pool;
  const pooled_t c = cur != NULL ? *cur : (pooled_t){.item = UINT32_MAX};
  /* Items can be redone until their iteration's episodes are gathered. */
  const int open = l->ref.on &&
                   P->iter == pb_iter_selfplay_iter(l->it.iter) &&
                   (l->it.phase == PH_SELFPLAY ||
                    !pb_workq_finished(l->it.spq));
  size_t n = 0;
  for (size_t i = 0; open && i < P->n_items; i++) {
    const pooled_t *e = &P->items[i];
    if (is_cur(e, &c) || pb__owners_is(l, PH_SELFPLAY, e->item, e->who))
      P->items[n++] = *e;
    else
      pool_sub(P, e);
  }
  if (open) P->n_items = n;
  uint64_t pe;
  double excess;
  const double z = pool_z(l, &pe, &excess);
  const int was = P->sign;
  P->sign = pe >= PB__OUT_MIN && fabs(z) >= PB_PLAY_Z ? (z > 0 ? 1 : -1) : 0;
  if (P->sign != 0) P->lean = fabs(excess) / (double)pe / 2;
  if (P->sign != 0 && was == 0) {
    const refgames_t *g = ref_of(l, P->ver);
    P->fired++;
    pb_log_warn(l->log,
                "the pooled outcome test: the %" PRIu64 " episodes of "
                "identities too new to be judged alone are impossible beside "
                "the learner's reference games (%.1f standard errors; %+.2f "
                "from the reference's mean result on average, the learner's "
                "%+.2f with Q version %" PRIu64 "); their items leaning that "
                "way by %.2f or more are dropped and redone while the pool "
                "stays so",
                pe, z, excess / (double)pe,
                g != NULL && g->n ? g->sum / (double)g->n : 0.0, P->ver,
                P->lean);
  }
  const int mwas = P->moves_bad;
  P->moves_bad = pb_play_impossible(&P->moves);
  if (P->moves_bad && !mwas) {
    P->fired++;
    pb_log_warn(l->log,
                "the pooled surprise test: the %" PRIu64 " scored moves of "
                "identities too new to be judged alone are impossible under "
                "the Q they were played with (%.1f standard errors); their "
                "items of this iteration with a surprise of %.0f standard "
                "errors or more are dropped and redone while the pool stays "
                "so",
                P->moves.moves, pb_play_z(&P->moves), PB_PLAY_Z / 2);
  }
  if ((P->sign == 0 && !P->moves_bad) || !open) return 0;
  int cur_dropped = 0;
  n = 0;
  for (size_t i = 0; i < P->n_items; i++) {
    const pooled_t *it = &P->items[i];
    if (pool_leans(l, it)) {
      pool_drop(l, it, !is_cur(it, &c));
      cur_dropped |= is_cur(it, &c);
    } else {
      P->items[n++] = *it;
    }
  }
  P->n_items = n;
  return cur_dropped;
}

/* Item idx of p (result r; out: its outcomes join the pool; t, its scored
 * moves, or NULL when p's identity is judged alone by the surprise) joins
 * the pool, as its last item. */
static int pool_add(pb_learner_t *l, peer_t *p, size_t idx,
                    const pb_msg_selfplay_result_t *r, int out,
                    const pb_play_tally_t *t, pb_err_t *err) {
  lpool_t *P = &l->play.pool;
  const uint64_t it = pb_iter_selfplay_iter(l->it.iter);
  const uint64_t v = r->episodes[0].q_version;
  if (P->iter != it) {
    P->iter = it;
    P->n_items = 0;
  }
  if (P->ver != v) { /* the last version's part to the run's sums */
    double e, var;
    if (ref_part(ref_of(l, P->ver), P->n, P->sum, P->sq, &e, &var)) {
      P->excess += e;
      P->var += var;
      P->episodes += P->n;
    } else {
      P->late += P->n;
    }
    P->ver = v;
    P->n = 0;
    P->sum = P->sq = 0.0;
    P->n_items = 0; /* items of an older version are judged no more */
  }
  if (P->n_items == P->cap) {
    size_t cap = P->cap ? 2 * P->cap : 64;
    pooled_t *e = realloc(P->items, cap * sizeof *e);
    if (e == NULL)
      return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    P->items = e;
    P->cap = cap;
  }
  pooled_t e = {pb__owner_of(l, p), (uint32_t)idx, 0, 0.0, 0.0, {0}};
  if (out && ref_of(l, v) != NULL)
    for (uint32_t k = 0; k < r->n_episodes; k++) {
      if (r->episodes[k].q_version != v) continue;
      const double x = first_result(&r->episodes[k]);
      e.n++;
      e.sum += x;
      e.sq += x * x;
    }
  if (t != NULL) e.play = *t;
  P->items[P->n_items++] = e;
  P->n += e.n;
  P->sum += e.sum;
  P->sq += e.sq;
  pb_play_add(&P->moves, &e.play);
  return 0;
}

void pb__selfcheck_reference(pb_learner_t *l, uint64_t version) {
  for (int i = 0; i < l->net.max_peers; i++) {
    peer_t *p = &l->net.peers[i];
    if (!p->used || p->quarantined || p->outc.rver != version ||
        p->outc.rn == 0)
      continue;
    ident_t *key =
        p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 0) : NULL;
    judge(l, p, key);
  }
  pool_judge(l, NULL);
}

int pb__selfcheck_item(pb_learner_t *l, peer_t *p, size_t idx,
                       const pb_msg_selfplay_result_t *r) {
  if (!(l->cfg.net.selfplay_check > 0) || r->n_episodes == 0) return 0;
  pb_err_t err;
  int new_out = 0, new_play = 0;
  too_new(l, p, &new_out, &new_play);
  if (outcomes(l, p, pb_iter_selfplay_iter(l->it.iter), r)) return 1;
  pb_play_tally_t t = {0};
  if (l->play.q != NULL) {
    if (load(l, &err) != 0) {
      pb__set_fatal(l, &err);
      return 0;
    }
    const pb_config_t *c = &l->cfg;
    /* At least one episode of the result, drawn at random. */
    const uint32_t one = pb_rng_below(&l->play.rng, r->n_episodes);
    for (uint32_t k = 0; k < r->n_episodes; k++) {
      const pb_msg_episode_t *ep = &r->episodes[k];
      if (ep->q_version != l->play.version) continue;
      if (k != one && !(pb_rng_uniform(&l->play.rng) < c->net.selfplay_check))
        continue;
      if (q_of(l, ep, &err) != 0 ||
          pb_play_score(l->g, ep->states, ep->n_states, ep->final_reward,
                        l->play.out, c->train.eps,
                        c->train.selfplay_temperature, &t, &err) != 0) {
        if (err.code == PB_ECORRUPT) continue; /* the rules check refused it */
        pb__set_fatal(l, &err);
        return 0;
      }
    }
    if (t.episodes > 0 && tally(l, p, &t)) return 1;
  }
  if (!l->ref.on || !(new_out || new_play)) return 0;
  if (pool_add(l, p, idx, r, new_out, new_play ? &t : NULL, &err) != 0) {
    pb__set_fatal(l, &err);
    return 0;
  }
  /* Dropped by the pool: refused (re-queued) as an impossible result. */
  return pool_judge(l, &l->play.pool.items[l->play.pool.n_items - 1]);
}
