/* state_peer.h - private to learner/: what the learner knows of one
 * connection (peer_t, an entry of the table in state_net.h) and of one
 * identity (ident_t: a CURVE key or an address, in state_quar.h), and who
 * delivered an item (owner_t). A peer's record has a part per concern,
 * each written by the file named beside it. */
#ifndef PB_LEARNER_STATE_PEER_H
#define PB_LEARNER_STATE_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "curve.h"
#include "msg.h"
#include "playcheck.h"
#include "spotcheck.h"

/* The longest ZeroMQ routing id kept for a peer. */
#define RID_MAX 256

/* A peer's count of weights replies ZeroMQ still holds (sockets.c). */
typedef struct wflight wflight_t;

/* The outcomes of a worker's self-play games beside the other workers' of
 * the same iteration (selfcheck.c): the first player's result (+1, 0, -1)
 * of each episode. */
typedef struct {
  uint64_t iter;      /* the self-play iteration of n, sum, sq */
  uint64_t n;         /* its episodes in it */
  double sum, sq;     /* their results' sum, and of squares */
  uint64_t episodes;  /* its episodes of the finished iterations */
  double excess, var; /* over those: sum - n x the others' mean, and the
                       * variance of that under "played alike" */
  /* Against the learner's reference games (selfref.c): its episodes of Q
   * version rver (rn, rsum, rsq), and over the versions before: their
   * count, excess over the reference's mean and its variance. Episodes of
   * a version the learner plays reference games of are compared with
   * those alone, the others' with the other actors'. */
  uint64_t rver, rn;
  double rsum, rsq;
  uint64_t repisodes;
  double rexcess, rvar;
} outc_t;

typedef struct {
  /* sockets.c: the connection */
  int used;
  uint8_t rid[RID_MAX];
  size_t rid_len;
  uint32_t serial;       /* tells a reused slot from the peer that left */
  char key[PB_CURVE_Z85 + 1]; /* its CURVE public key, "" without CURVE */
  char addr[64];              /* its IP address as ZeroMQ saw it */
  wflight_t *wflight;    /* its weights replies in flight (NULL: none yet) */
  /* peers.c: what it said and delivered */
  char sender[PB_MSG_ID_MAX + 1];
  char host[PB_MSG_HOST_MAX + 1];
  int role;
  double first_seen, last_seen;
  uint64_t items, positions;
  int other_start;       /* its Hello named another start's run id */
  /* quarantine.c */
  int quarantined;       /* refused (QUAR_*): its results disagreed with
                          * the spot check, its leases kept expiring, or
                          * it is of a banned key or address */
  int quar_ident;        /* refused only by its address or sender id, a
                          * measure that ends */
  /* trust.c */
  uint32_t expired;      /* its leases that expired */
  double last_expiry;
  int trust_said;        /* the trust level last logged for it */
  /* spot.c */
  int disagreed;         /* a position it delivered failed the spot check */
  pb_spot_tally_t spot_tally; /* its checked positions */
  /* selfcheck.c */
  pb_play_tally_t play;  /* the surprise of its self-play moves */
  int play_bad;          /* its self-play moves were impossible */
  outc_t outc;           /* its self-play outcomes */
} peer_t;

/* Why a peer or an ident is refused. */
enum { QUAR_SPOT = 1, QUAR_LEASES = 2, QUAR_PLAY = 3 };

/* Who delivered a search or self-play item (by peer slot and serial). */
typedef struct {
  uint32_t slot, serial;
} owner_t;

static inline int pb__same_owner(owner_t a, owner_t b) {
  return a.slot == b.slot && a.serial == b.serial;
}

/* The items' owners of the open phases (owners.c: l->own). */
typedef struct {
  owner_t *search; /* per search item of the open search phase */
  size_t n_search, search_cap;
  owner_t *selfplay; /* per self-play item of iteration selfplay_iter */
  size_t selfplay_cap;
  uint64_t selfplay_iter;
  uint64_t selfplay_dropped; /* self-play items dropped: their actor was
                                quarantined */
} pb_lowners_t;

/* A CURVE key or an IP address, as the checks tally it: a peer picks its
 * own sender id and opens as many connections as it likes, but not its
 * key (the operator authorizes keys) nor, on one host, its address. */
enum { IDENT_KEY = 1, IDENT_ADDR = 2 };
#define IDENTS_MAX 256
typedef struct {
  /* quarantine.c */
  uint8_t kind; /* IDENT_*, 0 = free */
  uint8_t banned; /* QUAR_*, 0 = not */
  char id[64];  /* the key (Z85) or the address */
  double banned_at, last;
  double banned_until; /* an address's ban ends then (0: a key's, never) */
  uint32_t bans;       /* times it was banned (an address: each lasts longer) */
  /* spot.c */
  uint32_t bad_conns;    /* its connections that delivered a disagreement */
  pb_spot_tally_t tally; /* its checked positions, over the run */
  /* selfcheck.c */
  pb_play_tally_t play;  /* its self-play moves' surprise */
  outc_t outc;           /* its self-play outcomes */
  /* trust.c: its leases, expired, and results taken */
  uint32_t expired;
  uint64_t done;
  double last_expiry;
  uint32_t withheld_conns; /* its connections whose first lease expired */
  double tokens, t_tokens; /* new connections it may still open now */
} ident_t;

#endif
