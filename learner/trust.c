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
 * record first (pb_workq_lease_untrusted). Without CURVE, an address
 * three of whose connections let a lease expire before delivering
 * anything is banned for a while (quarantine.c: a temporary measure, as
 * workers behind one NAT share an address): its connections that never
 * delivered anything, and new ones, are refused; those with a record keep
 * working. New connections are limited per address (Hello's rate), and
 * the table of peers never forgets one that holds a lease (sockets.c).
 * Each step down is logged; /status counts the connections at each level.
 *
 * The table of keys and addresses (ident_t) and the quarantine are
 * quarantine.c's, shared with the spot check and the self-play check. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "state.h"

#define PB__CONN_RATE 32.0 /* new connections an address may open a second */

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
  l->lease.conns_limited++;
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
  return p->addr[0] && l->net.zap == NULL
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
  ident_t *a = addr_of(l, p, 0);
  if (pb__ident_banned(l, a) == QUAR_LEASES && p->items == 0) lv = TRUST_OUT;
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

/* p is out for its leases. */
static void quarantine(pb_learner_t *l, peer_t *p, const char *why) {
  char msg[PB_MSG_TEXT_MAX];
  snprintf(msg, sizeof msg,
           "quarantined (%s): %u of its leases expired, %" PRIu64
           " results taken",
           why, p->expired, p->items);
  pb__quarantine(l, p, QUAR_LEASES, msg);
}

/* Of a banned key's or address's connections, those that never
 * delivered anything (an address keeps those that did). */
static int never_delivered(const peer_t *p) { return p->items == 0; }

/* Key k is out: banned, with every connection it has. */
static void ban_key(pb_learner_t *l, ident_t *k) {
  char msg[200];
  snprintf(msg, sizeof msg,
           "%u of its leases expired, %" PRIu64 " results taken", k->expired,
           k->done);
  pb__ban(l, k, QUAR_LEASES, msg, never_delivered);
}

/* An address three of whose connections withheld their first item. */
static void ban_addr(pb_learner_t *l, ident_t *a) {
  char msg[200];
  snprintf(msg, sizeof msg,
           "%u of its connections let a lease expire before delivering "
           "anything",
           a->withheld_conns);
  pb__ban(l, a, QUAR_LEASES, msg, never_delivered);
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
    if (first_of_new && ++a->withheld_conns >= 3 && !pb__ident_banned(l, a))
      ban_addr(l, a);
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
  if (k != NULL && !k->banned && strikes(k->expired, k->done) >= TRUST_OUT)
    ban_key(l, k);
  if (lv >= TRUST_OUT) quarantine(l, p, "its leases kept expiring");
}

void pb__trust_expired(pb_learner_t *l, const char *what, size_t index,
                       uint32_t serial) {
  l->lease.expired++;
  lease_lost(l, what, index, serial, 0);
}

void pb__trust_overtaken(pb_learner_t *l, const char *what, size_t index,
                         uint32_t serial) {
  lease_lost(l, what, index, serial, 1);
}

/* A lease of the phase's queue held longer than the backup time is
 * logged, once per lease: who holds which item, for how long. */
void pb__trust_long_lease(pb_learner_t *l, double t) {
  const pb_workq_t *q = l->it.phase == PH_SEARCH ? l->it.wq
                        : l->it.phase == PH_SELFPLAY &&
                                pb_iter_selfplay_iter(l->it.iter) != 0
                            ? l->it.spq
                            : NULL;
  if (q == NULL) return;
  size_t idx = 0;
  uint32_t holder = 0;
  const double age = pb_workq_oldest(q, t, &idx, &holder);
  const double after = pb_workq_backup_after(q, l->cfg.net.lease_ms / 1000.0);
  if (age < after) return;
  if (q == l->lease.long_q && idx == l->lease.long_idx && holder == l->lease.long_holder &&
      fabs((t - age) - l->lease.long_since) < 1e-6)
    return; /* warned of already */
  l->lease.long_q = q;
  l->lease.long_idx = idx;
  l->lease.long_holder = holder;
  l->lease.long_since = t - age;
  const peer_t *p = pb__peer_by_serial(l, holder);
  pb_log_warn(l->log,
              "%s item %zu held by %s (address %s) for %.1f s, longer than "
              "the %.1f s after which an idle worker gets a backup copy",
              q == l->it.spq ? "self-play" : "search", idx,
              p != NULL && p->sender[0] ? p->sender : "?",
              p != NULL && p->addr[0] ? p->addr : "?", age, after);
}
