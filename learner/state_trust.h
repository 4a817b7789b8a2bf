/* state_trust.h - private to learner/: what the learner's checks of its
 * workers keep, one struct per file that writes it:
 *
 *   pb_lquar_t  l->quar   quarantine.c  bans of keys, addresses, sender ids
 *   pb_llease_t l->lease  trust.c       leases that expire, Hello's rate
 *   pb_lspot_t  l->spot   spot.c        the spot check of search results
 *   pb_lplay_t  l->play   selfcheck.c   the checks of self-play games
 *   pb_lref_t   l->ref    selfref.c     the learner's own reference games
 *
 * A peer's and an identity's own tallies are in state_peer.h. */
#ifndef PB_LEARNER_STATE_TRUST_H
#define PB_LEARNER_STATE_TRUST_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "algo.h"
#include "episodes.h"
#include "err.h"
#include "playcheck.h"
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

/* A self-play item of the open iteration from an identity too new to be
 * judged alone (selfcheck.c's pooled test): whose, which, its episodes of
 * the pool's version (count, sum and squares of the first player's
 * results) and its scored moves. */
typedef struct {
  owner_t who;
  uint32_t item;
  uint32_t n;
  double sum, sq;
  pb_play_tally_t play;
} pooled_t;

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

/* the pooled test of identities too new to be judged alone, judged as
 * one actor over the run: the episodes of Q version ver (n, sum, sq),
 * over the versions before (count, excess over the reference, its
 * variance), their scored moves, their items of the open iteration */
typedef struct {
  uint64_t ver, iter;
  uint64_t n;
  double sum, sq;
  uint64_t episodes;
  double excess, var;
  pb_play_tally_t moves;
  int sign;    /* its outcomes are impossible: their sign; 0: not */
  double lean; /* an item leaning its way by this much is dropped */
  int moves_bad; /* its moves are impossible */
  pooled_t *items;
  size_t n_items, cap;
  uint64_t fired, dropped;
  uint64_t late; /* actors' episodes whose reference was not played */
} lpool_t;

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
  lpool_t pool; /* the pooled test (above) */
} pb_lplay_t;

/* The first player's results of the learner's reference games of one Q
 * version (selfref.c): started, done, their count, sum and squares. */
typedef struct {
  uint64_t version;
  int started, done;
  uint64_t n;
  double sum, sq;
} refgames_t;
#define REF_KEEP 4

typedef struct {
  /* the algorithm's own player, with copies of the served networks in
   * the actors' precision; one job at a time on the thread pool */
  const pb_algo_t *algo;
  void *player;
  pb_nn_t *v, *q;
  pb_neteval_t *ne;
  pb_algo_env_t env;
  pb_episodes_t eps;
  pb_rng_t rng; /* the games' seeds: not the run's, which workers know */
  pb_algo_item_t item;
  uv_work_t job;
  int on, running, rc;
  pb_err_t err;
  double t_start, wait_since;
  uint64_t jobs, episodes;
  double busy_s, waited_s;
  refgames_t games[REF_KEEP]; /* version v in games[v % REF_KEEP] */
} pb_lref_t;

#endif
