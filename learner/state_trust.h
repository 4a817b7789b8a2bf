/* state_trust.h - private to learner/: what the learner's checks of its
 * workers keep, one struct per file that writes it:
 *
 *   pb_lquar_t  l->quar   quarantine.c  bans of keys, addresses, sender ids
 *   pb_llease_t l->lease  trust.c       leases that expire, Hello's rate
 *   pb_lspot_t  l->spot   spot.c        the spot check of search results
 *   pb_lplay_t  l->play   selfcheck.c   the checks of self-play games
 *
 * A peer's and an identity's own tallies are in state_peer.h. */
#ifndef PB_LEARNER_STATE_TRUST_H
#define PB_LEARNER_STATE_TRUST_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "err.h"
#include "msg.h"
#include "neteval.h"
#include "nn.h"
#include "rng.h"
#include "spotcheck.h"
#include "state_peer.h"
#include "workq.h"

/* Sender ids refused for a while (no CURVE). */
#define BANNED_MAX 64

typedef struct {
  char banned[BANNED_MAX][PB_MSG_ID_MAX + 1]; /* sender ids (no CURVE) */
  double banned_until[BANNED_MAX];            /* each refused until then */
  int n_banned;
  ident_t idents[IDENTS_MAX]; /* keys and addresses */
  /* connections quarantined: for their search results, their self-play
   * moves, their leases */
  uint64_t quarantined, play_quarantined, lease_quarantined;
} pb_lquar_t;

typedef struct {
  uint64_t expired;     /* leases that expired */
  uint64_t conns_limited; /* new connections dropped: Hello's rate */
  /* the long lease last warned of (learner.c): its queue, item, holder
   * and when it began */
  const pb_workq_t *long_q;
  size_t long_idx;
  uint32_t long_holder;
  double long_since;
} pb_llease_t;

/* Positions waiting for the spot check or being checked: the state, the
 * targets its searcher claimed, and who claimed them. */
typedef struct {
  pb_state_t *states;
  float *claimed; /* n * num_actions */
  owner_t *who;
  uint32_t *item;
  size_t n, cap;
} spotq_t;

/* A checked position on probation that leans: whose, which item, by how
 * much. */
typedef struct {
  owner_t who;
  uint32_t item;
  float bias;
} lean_t;

typedef struct {
  pb_spot_t *check; /* common/train/spotcheck.h */
  int prec;         /* the searchers' precision, which the check computes in */
  pb_rng_t rng;
  uint32_t *idx;        /* the positions drawn from one item */
  spotq_t wait, run;    /* arrived; in the running check job */
  float *mine;          /* the learner's targets for run */
  size_t mine_cap;
  uv_work_t job;
  int running, rc;
  pb_err_t err;
  uint64_t checked, disagree;
  pb_spot_tally_t all; /* every checked position of the run */
  uint64_t items_thrown; /* search items re-queued after a disagreement */
  /* probation and the pooled lean test */
  pb_spot_tally_t pool; /* agreeing positions of identities on probation */
  int pool_sign;        /* the pool leans: +1, -1; 0: not */
  lean_t *lean;         /* this phase's leaning positions on probation */
  size_t n_lean, lean_cap;
  double probation_phase;  /* l->it.t_phase of the budget's phase */
  uint64_t probation_left; /* positions the budget still checks */
  uint64_t probation_checks, pool_fired, pool_thrown;
} pb_lspot_t;

typedef struct {
  /* the surprise of self-play moves under the Q they were played with,
   * scored with a copy of the served Q (q, in the actors' precision) */
  pb_nn_t *q;
  pb_neteval_t *ne;
  uint64_t version; /* the weights in q; UINT64_MAX: none yet */
  pb_rng_t rng;
  float *out;
  size_t cap;
  uint64_t episodes, moves;
  /* the outcome test: every accepted episode of self-play iteration
   * out_iter (the first player's results: count, sum, sum of squares) */
  uint64_t out_iter, out_n;
  double out_sum, out_sq;
  uint64_t out_quarantined;
} pb_lplay_t;

#endif
