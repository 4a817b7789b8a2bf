/* trust.c - what a worker's leases earn it. A worker that takes items and
 * never answers (hung, or stalling the run on purpose) must not hold the
 * run: every lease that expires is tallied for its connection, its CURVE
 * key and (without CURVE) its address, beside the results of each that
 * were taken, and the record sets what it may hold:
 *
 *   strikes = expired - taken / 2 (at least 0), one more while it has
 *             never had a result taken; the highest of its connection's
 *             and its key's
 *   0  TRUST_FULL  its share of the phase's items (peers.c: share)
 *   1  TRUST_ONE   one item at a time
 *   2  TRUST_NONE  no item for net.lease_ms after its last expired lease,
 *                  then one at a time
 *   3+ TRUST_OUT   quarantined: its leases go back, it is refused from
 *                  now on, and a key at 3 is banned with every connection
 *                  it has
 *
 * so a connection that never delivered is out at its second expired
 * lease, and a long honest record absorbs the leases of a worker killed
 * now and then. A connection that has had no result taken yet holds one
 * item at a time, and items that came back go to workers with a clean
 * record first (pb_workq_lease_untrusted). An address three of whose
 * connections let a lease expire before delivering anything is banned:
 * its connections that never delivered anything, and new ones, are
 * refused (spot.c: pb__refused); those with a record keep working. New connections are limited per address (Hello's rate), and
 * the table of peers never forgets one that holds a lease (sockets.c).
 * Each step down is logged; /status counts the connections at each level.
 *
 * The table of keys and addresses (ident_t) is the spot check's too. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "state.h"

#define PB__CONN_BURST 128.0 /* new connections an address may open at once */
#define PB__CONN_RATE 32.0   /* and a second, after that */

ident_t *pb__ident_find(pb_learner_t *l, int kind, const char *id,
                        int create) {
  ident_t *free_e = NULL, *stale = NULL;
  for (int i = 0; i < IDENTS_MAX; i++) {
    ident_t *e = &l->idents[i];
    if (e->kind == kind && !strcmp(e->id, id)) return e;
    if (e->kind == 0) {
      if (free_e == NULL) free_e = e;
    } else if (!e->banned && (stale == NULL || e->last < stale->last)) {
      stale = e;
    }
  }
  ident_t *fresh = free_e != NULL ? free_e : stale;
  if (!create || fresh == NULL) return NULL;
  memset(fresh, 0, sizeof *fresh);
  fresh->kind = (uint8_t)kind;
  snprintf(fresh->id, sizeof fresh->id, "%s", id);
  fresh->last = now(l);
  fresh->tokens = PB__CONN_BURST;
  fresh->t_tokens = now(l);
  return fresh;
}

int pb__trust_admit(pb_learner_t *l, const char *addr) {
  if (addr == NULL || addr[0] == '\0') return 1;
  ident_t *a = pb__ident_find(l, IDENT_ADDR, addr, 1);
  if (a == NULL) return 1; /* the table is full of banned ones */
  const double t = now(l);
  a->last = t;
  a->tokens += (t - a->t_tokens) * PB__CONN_RATE;
  if (a->tokens > PB__CONN_BURST) a->tokens = PB__CONN_BURST;
  a->t_tokens = t;
  if (a->tokens >= 1.0) {
    a->tokens -= 1.0;
    return 1;
  }
  l->conns_limited++;
  if (pb__may_warn(l))
    pb_log_warn(l->log,
                "new connection from %s dropped: more than %.0f a second "
                "from that address",
                addr, PB__CONN_RATE);
  return 0;
}

/* Strikes of a record (the top comment), at most TRUST_OUT. */
static int strikes(uint32_t expired, uint64_t taken) {
  if (expired == 0) return TRUST_FULL;
  uint64_t s = expired > taken / 2 ? expired - taken / 2 : 0;
  if (taken == 0) s++;
  return s > TRUST_OUT ? TRUST_OUT : (int)s;
}

static ident_t *key_of(pb_learner_t *l, const peer_t *p, int create) {
  return p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, create) : NULL;
}

static ident_t *addr_of(pb_learner_t *l, const peer_t *p, int create) {
  return p->addr[0] && l->zap == NULL
             ? pb__ident_find(l, IDENT_ADDR, p->addr, create)
             : NULL;
}

int pb__trust_level(pb_learner_t *l, const peer_t *p) {
  if (p->quarantined) return TRUST_OUT;
  int lv = strikes(p->expired, p->items);
  const ident_t *k = key_of(l, p, 0);
  if (k != NULL) {
    int kl = strikes(k->expired, k->done);
    if (kl > lv) lv = kl;
  }
  const ident_t *a = addr_of(l, p, 0);
  if (a != NULL && a->banned == QUAR_LEASES && p->items == 0) lv = TRUST_OUT;
  return lv;
}

/* The cool-down of TRUST_NONE: net.lease_ms, at least a second. */
static double cooldown(const pb_learner_t *l) {
  double s = l->cfg.net.lease_ms / 1000.0;
  return s < 1.0 ? 1.0 : s;
}

int pb__trust_allows(pb_learner_t *l, const peer_t *p, size_t share,
                     size_t *max_held, int *trusted) {
  const int lv = pb__trust_level(l, p);
  *trusted = lv == TRUST_FULL && p->items > 0;
  *max_held = share;
  if (lv >= TRUST_OUT) return 0;
  if (lv == TRUST_NONE) {
    double last = p->last_expiry;
    const ident_t *k = key_of(l, p, 0);
    if (k != NULL && k->last_expiry > last) last = k->last_expiry;
    if (now(l) - last < cooldown(l)) return 0;
  }
  if (lv >= TRUST_ONE || p->items == 0) *max_held = 1;
  return 1;
}

void pb__trust_done(pb_learner_t *l, const peer_t *p) {
  ident_t *k = key_of(l, p, 1), *a = addr_of(l, p, 1);
  if (k != NULL) {
    k->done++;
    k->last = now(l);
  }
  if (a != NULL) {
    a->done++;
    a->last = now(l);
  }
}

/* p is out for its leases: what it holds goes back, it is refused from
 * now on (spot.c: pb__refused). */
static void quarantine(pb_learner_t *l, peer_t *p, const char *why) {
  if (p->quarantined) return;
  p->quarantined = QUAR_LEASES;
  l->lease_quarantined++;
  size_t k = pb_workq_release(l->wq, p->serial) +
             pb_workq_release(l->spq, p->serial);
  char msg[PB_MSG_TEXT_MAX];
  snprintf(msg, sizeof msg,
           "quarantined (%s): %u of its leases expired, %" PRIu64
           " results taken",
           why, p->expired, p->items);
  if (pb__may_warn(l))
    pb_log_warn(l->log,
                "%s %s (address %s%s%s) %s; %zu items it held are re-queued "
                "and it is refused from now on",
                pb_msg_role_name(p->role), p->sender[0] ? p->sender : "?",
                p->addr[0] ? p->addr : "?", p->key[0] ? ", key " : "", p->key,
                msg, k);
  pb__reject(l, p, PB_EDENIED, msg);
}

/* Key k is out: banned, with every connection it has. */
static void ban_key(pb_learner_t *l, ident_t *k) {
  if (k->banned) return;
  k->banned = QUAR_LEASES;
  k->banned_at = now(l);
  pb_log_warn(l->log,
              "CURVE key %s is quarantined: %u of its leases expired, "
              "%" PRIu64 " results taken; every connection with it is "
              "refused from now on",
              k->id, k->expired, k->done);
  for (int i = 0; i < l->max_peers; i++) {
    peer_t *q = &l->peers[i];
    if (q->used && !strcmp(q->key, k->id)) quarantine(l, q, "its CURVE key");
  }
}

/* An address three of whose connections withheld their first item:
 * no new connection from it (spot.c: ident_refuses). */
static void ban_addr(pb_learner_t *l, ident_t *a) {
  if (a->banned) return;
  a->banned = QUAR_LEASES;
  a->banned_at = now(l);
  pb_log_warn(l->log,
              "address %s is quarantined: %u of its connections let a lease "
              "expire before delivering anything; new connections from it, "
              "and those that never delivered, are refused from now on "
              "(workers of one host that must survive a hung neighbour "
              "need their own CURVE keys)",
              a->id, a->withheld_conns);
  for (int i = 0; i < l->max_peers; i++) {
    peer_t *q = &l->peers[i];
    if (q->used && q->items == 0 && !strcmp(q->addr, a->id))
      quarantine(l, q, "its address");
  }
}

static const char *level_text(int lv) {
  switch (lv) {
  case TRUST_ONE: return "it gets one item at a time from now on";
  case TRUST_NONE: return "it gets no item for a while";
  default: return "it is quarantined";
  }
}

/* A lease that ended without a result of its holder's: expired, or
 * overtaken by a backup copy's result; tallied the same. */
static void lease_lost(pb_learner_t *l, const char *what, size_t index,
                       uint32_t serial, int overtaken) {
  peer_t *p = pb__peer_by_serial(l, serial);
  if (p == NULL) {
    if (pb__may_warn(l) && !overtaken)
      pb_log_warn(l->log, "lease of %s item %zu (worker gone) expired; "
                  "re-queued for another worker", what, index);
    return;
  }
  const double t = now(l);
  const int first_of_new = p->items == 0 && p->expired == 0;
  p->expired++;
  p->last_expiry = t;
  ident_t *k = key_of(l, p, 1), *a = addr_of(l, p, 1);
  if (k != NULL) {
    k->expired++;
    k->last_expiry = k->last = t;
  }
  if (a != NULL) {
    a->expired++;
    a->last_expiry = a->last = t;
    if (first_of_new && ++a->withheld_conns >= 3) ban_addr(l, a);
  }
  const int lv = pb__trust_level(l, p);
  if (pb__may_warn(l))
    pb_log_warn(l->log,
                overtaken ? "lease of %s item %zu (%s, address %s) "
                            "overtaken: a backup copy's result came first; "
                            "counted as an expired lease%s%s"
                          : "lease of %s item %zu (%s, address %s) expired; "
                            "re-queued for another worker%s%s",
                what, index, p->sender[0] ? p->sender : "?",
                p->addr[0] ? p->addr : "?",
                lv > p->trust_said && lv < TRUST_OUT ? "; " : "",
                lv > p->trust_said && lv < TRUST_OUT ? level_text(lv) : "");
  if (lv > p->trust_said) p->trust_said = lv;
  if (k != NULL && strikes(k->expired, k->done) >= TRUST_OUT) ban_key(l, k);
  if (lv >= TRUST_OUT) quarantine(l, p, "its leases kept expiring");
}

void pb__trust_expired(pb_learner_t *l, const char *what, size_t index,
                       uint32_t serial) {
  l->leases_expired++;
  lease_lost(l, what, index, serial, 0);
}

void pb__trust_overtaken(pb_learner_t *l, const char *what, size_t index,
                         uint32_t serial) {
  lease_lost(l, what, index, serial, 1);
}
