/* quarantine.c - the one quarantine of the learner, whatever the reason
 * (issue 47: it was written three times, in trust.c, spot.c and
 * selfcheck.c). Three checks find a worker out: its leases keep expiring
 * (trust.c, QUAR_LEASES), its search results disagree with the learner's
 * own re-search (spot.c, QUAR_SPOT), its self-play moves are impossible
 * under the Q they were played with (selfcheck.c, QUAR_PLAY). Each calls
 * pb__quarantine for a connection and pb__ban for a CURVE key or an
 * address; this file does the rest the same for all three:
 *
 *   - a connection quarantined for what it did itself is refused for the
 *     rest of the learner's life; what it holds goes back to the queues,
 *     and for a liar (QUAR_SPOT, QUAR_PLAY) what it delivered in the open
 *     phase is thrown away and redone (its search items, its self-play
 *     items and their episodes, its positions waiting for the spot check),
 *     and what it delivered in earlier iterations leaves the replay window
 *     (replaydrop.c; for a banned CURVE key, all the key delivered);
 *   - a CURVE key is an identity (the operator gave it to one worker): a
 *     banned key is refused for good, with every connection it has, and
 *     nothing else is: no address, no sender id (a worker picks its own,
 *     so a liar could take an honest worker's), never another key's
 *     worker (issue 46);
 *   - without CURVE an address and a sender id are not identities: the
 *     workers behind one NAT, one node or one Compose network share an
 *     address, and anybody can claim any sender id. A ban of either is a
 *     temporary measure: it lasts 2 x net.lease_ms (at least 1 s), twice
 *     as long at each new ban of the same address, at most 32 times that
 *     and never more than half of net.no_workers_exit_s, so it alone can
 *     never stop the run; when it ends, the address's tallies start again
 *     and the connections it refused are served again (issue 46: ten
 *     withholders on the honest workers' address, then the honest
 *     searcher restarts: refused until no_workers_exit_s stopped the run).
 *
 * pb__refused answers every message of a refused connection; a refusal
 * by an address or a sender id is looked at again at each message, so a
 * ban's end is seen at the next request. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "state.h"

#define PB__BAN_DOUBLINGS 5  /* a ban of an address lasts 32x the first, at most */

ident_t *pb__ident_find(pb_learner_t *l, int kind, const char *id,
                        int create) {
  ident_t *free_e = NULL, *stale = NULL;
  for (int i = 0; i < IDENTS_MAX; i++) {
    ident_t *e = &l->quar.idents[i];
    if (e->kind == kind && !strcmp(e->id, id)) return e;
    if (e->kind == 0) {
      if (free_e == NULL) free_e = e;
    } else if ((!e->banned || (e->banned_until > 0 &&
                               now(l) >= e->banned_until)) &&
               (stale == NULL || e->last < stale->last)) {
      stale = e; /* an address whose ban has ended makes room too */
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

double pb__ban_length(const pb_learner_t *l, uint32_t nth) {
  double s = 2.0 * l->cfg.net.lease_ms / 1000.0;
  if (s < 1.0) s = 1.0;
  for (uint32_t i = 1; i < nth && i <= PB__BAN_DOUBLINGS; i++) s *= 2;
  const int stop = l->cfg.net.no_workers_exit_s;
  if (stop > 0 && s > stop / 2.0) s = stop / 2.0;
  return s;
}

int pb__ident_banned(pb_learner_t *l, ident_t *e) {
  if (e == NULL || !e->banned) return 0;
  if (e->banned_until > 0 && now(l) >= e->banned_until) {
    pb_log_info(l->log,
                "address %s: its quarantine ended after %.0f s; its tallies "
                "start again and connections from it are served again",
                e->id, now(l) - e->banned_at);
    e->banned = 0;
    e->banned_until = 0;
    e->bad_conns = e->withheld_conns = 0;
    e->expired = 0;
    e->done = 0;
    memset(&e->tally, 0, sizeof e->tally);
    memset(&e->play, 0, sizeof e->play);
    return 0;
  }
  return e->banned;
}

/* ---- sender ids ------------------------------------------------------- */

/* A sender id is refused (keyless runs only, for a while). */
static int sender_banned(pb_learner_t *l, const char *id) {
  if (id == NULL || id[0] == '\0' || l->net.zap != NULL) return 0;
  for (int i = 0; i < l->quar.n_banned; i++)
    if (!strcmp(l->quar.banned[i], id)) return now(l) < l->quar.banned_until[i];
  return 0;
}

/* Refuses sender id `id` (without CURVE only: with it a worker is its
 * key) for pb__ban_length(1). */
static void ban_sender(pb_learner_t *l, const char *id) {
  if (id[0] == '\0' || l->net.zap != NULL) return;
  int k = 0;
  while (k < l->quar.n_banned && strcmp(l->quar.banned[k], id)) k++;
  if (k == l->quar.n_banned) {
    if (l->quar.n_banned < BANNED_MAX) {
      l->quar.n_banned++;
    } else { /* the one that ends first makes room */
      k = 0;
      for (int i = 1; i < BANNED_MAX; i++)
        if (l->quar.banned_until[i] < l->quar.banned_until[k]) k = i;
    }
  }
  snprintf(l->quar.banned[k], sizeof l->quar.banned[k], "%s", id);
  l->quar.banned_until[k] = now(l) + pb__ban_length(l, 1);
}

/* ---- what a quarantined connection delivered -------------------------- */

/* ---- the quarantine ---------------------------------------------------- */

static const char *const quar_done[] = {
    [QUAR_SPOT] = "its items of this iteration are re-queued",
    [QUAR_LEASES] = "the items it held are re-queued",
    [QUAR_PLAY] = "its items of this iteration are dropped and re-queued",
};

static void quarantine(pb_learner_t *l, peer_t *p, int why, int by_ident,
                       const char *msg) {
  if (p->quarantined) return;
  p->quarantined = why;
  p->quar_ident = by_ident;
  switch (why) {
  case QUAR_SPOT: l->quar.quarantined++; break;
  case QUAR_PLAY:
    l->quar.play_quarantined++;
    p->play_bad = 1;
    break;
  default: l->quar.lease_quarantined++;
  }
  size_t k = 0;
  if (why != QUAR_LEASES) {
    ban_sender(l, p->sender);
    k += pb__owners_forget(l, p);
  }
  if (p->used)
    k += pb_workq_release(l->it.wq, p->serial) +
         pb_workq_release(l->it.spq, p->serial);
  if (why == QUAR_LEASES ? pb__may_warn(l) : 1)
    pb_log_warn(l->log,
                "%s %s (address %s, host %s%s%s) %s; %s (%zu) and it is "
                "refused from now on",
                p->role ? pb_msg_role_name(p->role) : "worker",
                p->sender[0] ? p->sender : "?", p->addr[0] ? p->addr : "?",
                p->host[0] ? p->host : "?", p->key[0] ? ", key " : "", p->key,
                msg, quar_done[why], k);
  /* And what it taught of earlier iterations (replaydrop.c). */
  pb__rdrop_peer(l, p, why);
  if (p->used) pb__reject(l, p, PB_EDENIED, msg);
}

void pb__quarantine(pb_learner_t *l, peer_t *p, int why, const char *msg) {
  quarantine(l, p, why, 0, msg);
}

/* Whether connection p of banned address a (why: a->banned) is refused:
 * new connections; of the old ones, those that did what the ban is for
 * (disagreed, played impossible moves, never delivered: leases). */
static int addr_refuses(const peer_t *p, const ident_t *a) {
  return p->disagreed || p->play_bad || p->first_seen >= a->banned_at ||
         (a->banned == QUAR_LEASES && p->items == 0);
}

void pb__ban(pb_learner_t *l, ident_t *e, int why, const char *msg,
             int (*guilty)(const peer_t *p)) {
  if (pb__ident_banned(l, e)) return;
  const int addr = e->kind == IDENT_ADDR;
  e->banned = (uint8_t)why;
  e->banned_at = now(l);
  e->banned_until = 0;
  if (addr) {
    e->bans++;
    e->banned_until = e->banned_at + pb__ban_length(l, e->bans);
  }
  char qmsg[PB_MSG_TEXT_MAX];
  snprintf(qmsg, sizeof qmsg, "quarantined (its %s): %s",
           addr ? "address" : "CURVE key", msg);
  int innocent = 0;
  for (int i = 0; i < l->net.max_peers; i++) {
    peer_t *p = &l->net.peers[i];
    if (!p->used || p->quarantined) continue;
    if (strcmp(addr ? p->addr : p->key, e->id)) continue;
    const int g = guilty == NULL || guilty(p);
    if (addr && !g) continue;
    if (!g) innocent++;
    /* Of an address's connections, one that withheld a lease itself is
     * out for good (as a liar is: guilty() is what it did); one that had
     * not delivered yet, only while the ban lasts. */
    quarantine(l, p, why, addr && why == QUAR_LEASES && p->expired == 0,
               qmsg);
  }
  if (addr)
    pb_log_warn(l->log,
                "address %s is quarantined for %.0f s (ban %u of it): %s; new "
                "connections from it, and those of its connections that did "
                "this, are refused until then. Without CURVE keys an address "
                "is not an identity (workers behind one NAT or on one node "
                "share it), so this is a temporary measure; workers of one "
                "host that must survive a hostile neighbour need their own "
                "keys",
                e->id, e->banned_until - e->banned_at, e->bans, msg);
  else
    pb_log_warn(l->log,
                "CURVE key %s is quarantined: %s; every connection with it is "
                "refused from now on%s",
                e->id, msg,
                innocent > 0 ? "; workers that did nothing wrong held it too: "
                               "give each worker its own key (probs keys DIR "
                               "--workers N, or --add-worker NAME)"
                             : "");
  if (!addr) pb__rdrop_key(l, e->id, why); /* all it delivered: the window */
}

/* ---- refusals ---------------------------------------------------------- */

/* Whether p is refused by its key, its address or its sender id: why
 * (QUAR_*), or 0. Sets *by_ident when only an address or a sender id
 * refuses it (a measure that ends). */
static int ident_refuses(pb_learner_t *l, peer_t *p, const char *sender) {
  if (p->key[0] != '\0') {
    ident_t *k = pb__ident_find(l, IDENT_KEY, p->key, 0);
    if (k != NULL && k->banned) return k->banned;
  }
  if (l->net.zap != NULL) return 0;
  if (p->addr[0] != '\0') {
    ident_t *a = pb__ident_find(l, IDENT_ADDR, p->addr, 0);
    if (pb__ident_banned(l, a) && addr_refuses(p, a)) return a->banned;
  }
  if (sender_banned(l, sender)) return QUAR_SPOT;
  return 0;
}

int pb__refused(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  int why = p->quarantined;
  if (why && p->quar_ident) {
    /* Refused by its address or sender id: served again when that ends. */
    why = ident_refuses(l, p, m->header.sender_id);
    if (!why) {
      pb_log_info(l->log, "%s (address %s) is served again: the quarantine "
                  "of its address or sender id ended",
                  m->header.sender_id, p->addr[0] ? p->addr : "?");
      p->quarantined = p->quar_ident = 0;
      return 0;
    }
  }
  if (!why) why = ident_refuses(l, p, m->header.sender_id);
  if (!why) return 0;
  if (p->role == 0 && m->type == PB_MSG_WORK_REQUEST)
    p->role = m->work_request.role; /* counted among the refused */
  if (!p->quarantined) {
    p->quarantined = why;
    p->quar_ident = l->net.zap == NULL;
    if (pb__may_warn(l))
      pb_log_warn(l->log, "refused %s from quarantined %s (address %s)%s%s",
                  pb_msg_type_name(m->type), m->header.sender_id,
                  p->addr[0] ? p->addr : "?", p->key[0] ? " with key " : "",
                  p->key);
  }
  if (m->type == PB_MSG_HELLO || m->type == PB_MSG_WORK_REQUEST ||
      m->type == PB_MSG_SEARCH_RESULT || m->type == PB_MSG_SELFPLAY_RESULT) {
    pb__reject(l, p, PB_EDENIED,
               why == QUAR_LEASES
                   ? "quarantined: this worker's leases (or those of its key "
                     "or address) kept expiring without a result; see the "
                     "learner's log"
               : why == QUAR_PLAY
                   ? "quarantined: this worker's self-play moves (or those "
                     "of its key or address) were impossible under the Q "
                     "they were played with; see the learner's log"
                   : "quarantined: this worker's search results disagreed "
                     "with the learner's spot check; see the learner's log");
  }
  return 1;
}
