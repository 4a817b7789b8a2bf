/* state.h - private to learner/: the learner object and what the files of
 * the learner share. Not part of learner.h's interface; nothing outside
 * learner/ includes it. The files, each using only those above it in
 * this list:
 *
 *   state.c    the learner's fate (fatal error, loop shut down), phase
 *              names, who is alive
 *   sockets.c  the ROUTER and PUB sockets, the table of peers, everything
 *              the learner sends
 *   status.c   /status, /metrics, the progress log, metrics.jsonl lines
 *   replaydrop.c  who delivered what the replay window holds, and what
 *              leaves it when a worker is caught lying later
 *   phases.c   the phases of an iteration and the jobs on the thread pool
 *   quarantine.c  the one quarantine (of a connection, a key, an
 *              address, a sender id) and the refusals it leads to; the
 *              table of keys and addresses
 *   trust.c    leases that expire and
 *              what a worker's record earns it; Hello's rate per address
 *   spot.c     the spot check of search results and the quarantine
 *   selfcheck.c  the surprise of self-play moves, and the quarantine of
 *              actors whose moves are impossible
 *   selfrec.c  run.record_selfplay: the self-play games taken, a record
 *              line each, through a spool
 *   peers.c    drain, handle() and the handlers of what workers send
 *   learner.c  lifecycle (new, run, destroy) and the loop's turn (tick,
 *              signals) */
#ifndef PB_LEARNER_STATE_H
#define PB_LEARNER_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "curve.h"
#include "episodes.h"
#include "http.h"
#include "learn.h"
#include "learner.h"
#include "msg.h"
#include "rng.h"
#include "rundir.h"
#include "iteration.h"
#include "neteval.h"
#include "playcheck.h"
#include "spotcheck.h"
#include "util.h"
#include "web.h"
#include "workq.h"

/* The phases of an iteration (learner.c's top comment). */
enum { PH_SELFPLAY = 1, PH_PREPARE_SEARCH, PH_SEARCH, PH_TRAIN, PH_DONE };

/* The longest ZeroMQ routing id kept for a peer. */
#define RID_MAX 256

/* A Weights reply encoded once (one version; V, Q or both) and shared by
 * every send of it, and a peer's count of replies ZeroMQ still holds:
 * both are freed by whoever drops the last reference, the learner or
 * ZeroMQ's I/O thread (sockets.c). */
typedef struct wreply wreply_t;
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
} outc_t;

typedef struct {
  int used;
  uint8_t rid[RID_MAX];
  size_t rid_len;
  char sender[PB_MSG_ID_MAX + 1];
  char host[PB_MSG_HOST_MAX + 1];
  char key[PB_CURVE_Z85 + 1]; /* its CURVE public key, "" without CURVE */
  char addr[64];              /* its IP address as ZeroMQ saw it */
  int role;
  double first_seen, last_seen;
  uint64_t items, positions;
  uint32_t serial;       /* tells a reused slot from the peer that left */
  int quarantined;       /* refused (QUAR_*): its results disagreed with
                          * the spot check, its leases kept expiring, or
                          * it is of a banned key or address */
  int quar_ident;        /* refused only by its address or sender id, a
                          * measure that ends (quarantine.c) */
  uint32_t expired;      /* its leases that expired (trust.c) */
  double last_expiry;
  int trust_said;        /* the trust level last logged for it */
  int disagreed;         /* a position it delivered failed the spot check */
  int other_start;       /* its Hello named another start's run id */
  pb_spot_tally_t spot_tally; /* its checked positions (spot.c) */
  pb_play_tally_t play;  /* the surprise of its self-play moves (selfcheck.c) */
  int play_bad;          /* its self-play moves were impossible */
  outc_t outc;           /* its self-play outcomes (selfcheck.c) */
  wflight_t *wflight;    /* its weights replies in flight (NULL: none yet) */
} peer_t;

/* Why a peer or an ident is refused. */
enum { QUAR_SPOT = 1, QUAR_LEASES = 2, QUAR_PLAY = 3 };

/* Who delivered a search or self-play item (by peer slot and serial). */
typedef struct {
  uint32_t slot, serial;
} owner_t;

/* Positions waiting for the spot check or being checked: the state, the
 * targets its searcher claimed, and who claimed them. */
typedef struct {
  pb_state_t *states;
  float *claimed; /* n * num_actions */
  owner_t *who;
  uint32_t *item;
  size_t n, cap;
} spotq_t;

/* A checked position on probation that leans (spot.c): whose, which
 * item, by how much. */
typedef struct {
  owner_t who;
  uint32_t item;
  float bias;
} lean_t;

/* replaydrop.c: the tags whose positions leave the replay window (the
 * last RDROP_TAGS), and the recent leaning positions on probation. */
#define RDROP_TAGS 4096
#define RDROP_LEAN 256
typedef struct {
  uint64_t tag;
  uint8_t why; /* QUAR_SPOT, QUAR_PLAY */
} rdrop_tag_t;
typedef struct {
  uint64_t tag; /* 0: condemned already */
  float bias;
} rdrop_lean_t;
typedef struct {
  uint32_t mark;           /* this start's mark in connection tags */
  uint64_t *ep;            /* the tags of the episodes gathered last */
  size_t n_ep, ep_cap;
  uint64_t *uniq, *scratch; /* per distinct position; sorting */
  size_t uniq_cap, scratch_cap;
  rdrop_tag_t *bad;        /* a ring of RDROP_TAGS (NULL: none yet) */
  size_t n_bad, bad_at;
  int pending;             /* condemned, not applied yet (a job ran) */
  rdrop_lean_t lean[RDROP_LEAN];
  size_t n_lean, lean_at;
  uint64_t dropped[2];     /* positions that left: spot check, self-play */
} rdrop_t;

/* Sender ids refused for the rest of the run. */
#define BANNED_MAX 64

/* A CURVE key or an IP address, as the spot check tallies it: a peer
 * picks its own sender id and opens as many connections as it likes, but
 * not its key (the operator authorizes keys) nor, on one host, its
 * address. */
enum { IDENT_KEY = 1, IDENT_ADDR = 2 };
#define IDENTS_MAX 256
typedef struct {
  uint8_t kind; /* IDENT_*, 0 = free */
  uint8_t banned; /* QUAR_*, 0 = not */
  char id[64];  /* the key (Z85) or the address */
  uint32_t bad_conns;    /* its connections that delivered a disagreement */
  pb_spot_tally_t tally; /* its checked positions, over the run */
  pb_play_tally_t play;  /* its self-play moves' surprise (selfcheck.c) */
  outc_t outc;           /* its self-play outcomes (selfcheck.c) */
  double banned_at, last;
  double banned_until; /* an address's ban ends then (0: a key's, never) */
  uint32_t bans;       /* times it was banned (an address: each lasts longer) */
  /* its leases (trust.c): expired, and results taken */
  uint32_t expired;
  uint64_t done;
  double last_expiry;
  uint32_t withheld_conns; /* its connections whose first lease expired */
  double tokens, t_tokens; /* new connections it may still open now */
} ident_t;

/* A weights buffer as served to workers. */
typedef struct {
  uint8_t *buf;
  size_t len;
  uint64_t version;
} wbuf_t;

struct pb_learner {
  pb_config_t cfg;
  const pb_game_t *g;
  pb_log_t *log;
  int lock_fd; /* RUN_DIR/learner.lock, held while the learner lives */
  pb_zap_t *zap;
  int zap_keys; /* worker keys accepted when last logged */ /* CURVE's ZAP handler, or NULL */
  pb_metrics_t *metrics;
  char run_id[PB_MSG_ID_MAX + 1];   /* run.name: every header's run_id */
  char start_id[PB_MSG_ID_MAX + 1]; /* this start's run id (RUN_DIR/run-id) */
  char *config_yaml; /* the run's config (pb_config_to_yaml): RUN_DIR/
                        config.yaml and every accepted HelloReply */
  char sender[PB_MSG_ID_MAX + 1];

  uv_loop_t loop;
  uv_poll_t zpoll;
  uv_idle_t zidle;
  uv_timer_t tick;
  uv_signal_t sigint, sigterm;
  pb_http_t *http;
  pb_web_t *web; /* the page and its API (/, /api/...) */
  int handles_open;
  int loop_inited;

  void *zctx, *router, *pub;
  pb_msg_buf_t obuf;
  /* What was bound (ZMQ_LAST_ENDPOINT; a '*' port resolved), the HTTP
   * port (0: off), and whether RUN_DIR/endpoints says so. */
  char work_ep[PB_CONFIG_PATH_MAX + 64], pub_ep[PB_CONFIG_PATH_MAX + 64];
  int http_port;
  int endpoints_written;
  /* What this start made in RUN_DIR, taken back if it fails. */
  pb_rundir_undo_t undo;

  pb_learn_t *learn;
  /* The iteration (common/algo/iteration.h): its self-play items and their
   * episodes, the positions to search and their targets, the training.
   * pb_iter_selfplay_iter is the iteration spq's items are for (0: none). */
  pb_iter_t *iter;
  pb_workq_t *wq;  /* search items */
  pb_workq_t *spq; /* self-play items */
  int phase;
  int stopping; /* a signal asked us to stop */
  int fatal;
  pb_err_t fatal_err;
  double done_at;

  size_t max_items; /* the work queues' capacity */
  size_t n_bs_items; /* search items of the current iteration */

  wbuf_t vw, qw;          /* served now */
  wreply_t *wreply[3];    /* their Weights replies (V, Q, both), encoded
                             once; dropped when vw or qw change */
  uint64_t weights_skipped; /* requests of a peer with a reply in flight */
  wbuf_t vw_new, qw_new;  /* made by a job, swapped in on completion */

  /* the running job */
  uv_work_t job;
  int job_kind; /* PH_PREPARE_SEARCH or PH_TRAIN, 0 = none */
  int job_rc;
  pb_err_t job_err;
  double job_ckpt_s;
  /* pb_now() when the job's checkpoint write began, 0 when none runs: set
   * by the pool thread, read by the loop (/status's disk.stalled_s), so a
   * write that blocks (a frozen file system) shows while it blocks */
  _Atomic double ckpt_since;

  peer_t *peers;
  int max_peers;
  uint32_t peer_serial;

  /* the spot check of search results (common/train/spotcheck.h) */
  pb_spot_t *spot;
  int spot_prec; /* the searchers' precision, which the check computes in */
  pb_rng_t spot_rng;
  uint32_t *spot_idx; /* the positions drawn from one item */
  spotq_t spot_wait, spot_run; /* arrived; in the running check job */
  float *spot_mine;            /* the learner's targets for spot_run */
  size_t spot_mine_cap;
  uv_work_t spot_job;
  int spot_running, spot_rc;
  pb_err_t spot_err;
  owner_t *item_owner; /* per search item of this iteration */
  size_t item_owner_cap;
  uint64_t spot_checked, spot_disagree, quarantined;
  pb_spot_tally_t spot_all; /* every checked position of the run */
  char banned[BANNED_MAX][PB_MSG_ID_MAX + 1]; /* sender ids (no CURVE) */
  double banned_until[BANNED_MAX];            /* each refused until then */
  int n_banned;
  ident_t idents[IDENTS_MAX]; /* keys and addresses (spot.c) */
  uint64_t items_thrown; /* search items re-queued after a disagreement */
  /* spot.c: probation and the pooled lean test */
  pb_spot_tally_t spot_pool; /* agreeing positions of identities on probation */
  int pool_sign;             /* the pool leans: +1, -1; 0: not */
  lean_t *lean;              /* this phase's leaning positions on probation */
  size_t n_lean, lean_cap;
  double probation_phase;    /* l->t_phase of the budget's phase */
  uint64_t probation_left;   /* positions the budget still checks */
  uint64_t probation_checks, pool_fired, pool_thrown;
  /* selfrec.c: run.record_selfplay's games/selfplay.jsonl (NULL: off) */
  pb_metrics_t *selfrec;
  uint8_t *selfrec_moves;
  uint64_t selfrec_failed; /* games not recorded */
  /* selfcheck.c: the surprise of self-play moves under the Q they were
   * played with, scored with a copy of the served Q (pc_q, in the
   * actors' precision) */
  pb_nn_t *pc_q;
  pb_neteval_t *pc_ne;
  uint64_t pc_version; /* the weights in pc_q; UINT64_MAX: none yet */
  pb_rng_t pc_rng;
  float *pc_out;
  size_t pc_cap;
  owner_t *sp_owner; /* per self-play item of iteration sp_owner_iter */
  size_t sp_owner_cap;
  uint64_t sp_owner_iter;
  uint64_t pc_episodes, pc_moves, pc_quarantined, pc_items_dropped;
  /* the outcome test: every accepted episode of self-play iteration
   * out_iter (the first player's results: count, sum, sum of squares) */
  uint64_t out_iter, out_n;
  double out_sum, out_sq;
  uint64_t out_quarantined;
  rdrop_t rdrop; /* replaydrop.c */
  /* trust.c */
  uint64_t lease_quarantined; /* connections refused for their leases */
  uint64_t conns_limited;     /* new connections dropped: Hello's rate */
  uint64_t peers_full;        /* messages of new connections dropped: every
                                 entry of the table holds leases */

  /* no worker the learner accepts for the phase, since (0: there is one) */
  double starved_since, starved_warned;

  /* timings of the current iteration */
  double t_iter, t_phase, t_selfplay, t_search, t_train_v, t_train_q;
  double t_start, last_progress;

  /* counters */
  uint64_t msgs_in, bytes_in, msgs_bad, msgs_mismatch, sends_failed;
  uint64_t positions_in, results_dup, results_bad, leases_expired;
  uint64_t results_not_holder; /* results from a peer without the lease */
  /* the long lease last warned of (learner.c): its queue, item, holder
   * and when it began */
  const pb_workq_t *long_q;
  size_t long_idx;
  uint32_t long_holder;
  double long_since;
  double last_v_loss, last_q_loss, last_iter_s;
  int log_budget; /* warnings left in this second, against floods */
  double log_budget_t;
};

/* The clock the learner reads (pb_now). */
static inline double now(pb_learner_t *l) {
  (void)l;
  return pb_now();
}

/* ---- state.c: the learner's fate, phase names, who is alive ---------- */

/* Records the first fatal error (logged) and stops the loop;
 * pb_learner_run returns it. */
void pb__set_fatal(pb_learner_t *l, const pb_err_t *err);

/* Closes the loop's handles and the HTTP server, once; the loop then ends
 * when the running jobs are done. */
void pb__shutdown_loop(pb_learner_t *l);

/* The name of phase p ("selfplay", ..., "done"; "?" for others). */
const char *pb__phase_name(int p);

/* Whether the next iteration's self-play starts while this one trains
 * (train.pipeline with train.max_staleness >= 1). */
int pb__pipelined(const pb_learner_t *l);

/* Workers seen within the heartbeat horizon, of role (0: any). */
int pb__workers_alive(pb_learner_t *l, int role);

/* Of those, the ones not refused (not quarantined). */
int pb__workers_usable(pb_learner_t *l, int role);

/* ---- sockets.c: the sockets, the peers, what the learner sends -------- */

/* Makes the ROUTER and PUB sockets (CURVE when net.curve_dir is set),
 * binds them and puts what they bound in work_ep and pub_ep. 0, or a PB_E*
 * code with err filled. */
int pb__open_sockets(pb_learner_t *l, pb_err_t *err);

/* Whether a warning caused by a peer may be logged now (at most 20 a
 * second: a flood must not fill the disk). */
int pb__may_warn(pb_learner_t *l);

/* ---- selfrec.c: run.record_selfplay ----------------------------------- */

/* Opens RUN_DIR/games/selfplay.jsonl for appending when
 * run.record_selfplay is on (what it makes noted in l->undo). 0 or the
 * error. */
int pb__selfrec_open(pb_learner_t *l, pb_err_t *err);
void pb__selfrec_close(pb_learner_t *l);

/* Appends the games of self-play result r (taken for `iteration`, every
 * episode checked against the rules) to the file, through its spool;
 * nothing when recording is off. Never waits for the disk. */
void pb__selfrec_item(pb_learner_t *l, uint64_t iteration,
                      const pb_msg_selfplay_result_t *r);

/* A routing id as hex text (for logs). */
void pb__rid_text(const uint8_t *rid, size_t n, char *out, size_t cap);

/* The peer of routing id rid; with create, a new entry. When the table is
 * full an entry is forgotten, never one that holds a lease: first the
 * stalest of those without a key that never worked, then of those that
 * never worked, then of the others; NULL when every entry holds leases
 * (or, without create, when rid is unknown). */
peer_t *pb__peer_find(pb_learner_t *l, const uint8_t *rid, size_t n,
                      int create);

/* The peer of connection serial `serial`, or NULL when it left. */
peer_t *pb__peer_by_serial(pb_learner_t *l, uint32_t serial);

/* m with this learner's header (run id, game, sender). */
void pb__init_msg(pb_learner_t *l, pb_msg_t *m, int type);

/* Encodes m and sends it to p without blocking (a failure is counted and,
 * rate limited, logged). */
void pb__send_msg(pb_learner_t *l, const peer_t *p, pb_msg_t *m);

/* Sends p the weights it asked for (which: PB_WHICH_V, _Q or both, of the
 * versions served now, which the caller has checked): one encoding per
 * version and `which`, shared without a copy by every peer's reply, and
 * at most one reply in flight per peer (a request while one is queued
 * is not answered: the worker asks again after net.lease_ms). So what
 * weights requests cost the learner's memory is bounded by the encodings
 * of the versions served, whatever clients do. */
void pb__send_weights(pb_learner_t *l, peer_t *p, int which);

/* Forgets the encoded replies (the served weights changed), and a peer's
 * count (its slot is reused or freed). */
void pb__weights_drop(pb_learner_t *l);
void pb__peer_forget(peer_t *p);

/* Publishes the version, iteration and phase on the PUB socket. */
void pb__announce(pb_learner_t *l);

/* Sends p a Reject with code and msg. */
void pb__reject(pb_learner_t *l, peer_t *p, int code, const char *msg);

/* ---- status.c: /status, /metrics, progress, metrics.jsonl ------------- */

/* Logs an iteration's summary and appends its line to metrics.jsonl. */
void pb__write_iteration_metrics(pb_learner_t *l);

/* Every 5 s of self-play or search: a line of progress in the log. */
void pb__log_progress(pb_learner_t *l, double t);

/* The HTTP handler: /status, /metrics, and the web page's paths. */
void pb__on_http(void *ctx, const char *method, const char *path,
                 pb_http_response_t *res);

/* ---- replaydrop.c: what liars caught later taught leaves the window --- */

/* All self-play items are in (before pb_iter_selfplay_done): the tags of
 * their episodes, in item order. */
void pb__rdrop_selfplay(pb_learner_t *l);

/* Before job TRAIN: hands pb_learn who delivered the iteration's episodes
 * and search targets (pb_learn_set_origin). */
void pb__rdrop_train(pb_learner_t *l);

/* Connection p is quarantined for why (QUAR_SPOT, QUAR_PLAY; others do
 * nothing): every position it delivered (with CURVE: its key) leaves the
 * window. */
void pb__rdrop_peer(pb_learner_t *l, const peer_t *p, int why);

/* CURVE key `key` is banned for why: the same for the key. */
void pb__rdrop_key(pb_learner_t *l, const char *key, int why);

/* An agreeing checked position on probation of w, leaning by bias (0: by
 * less than the pooled test counts), the pool leaning now by pool_sign
 * (0: not): while the pool leans, every identity whose recent positions
 * lean its way is condemned (its positions leave the window). */
void pb__rdrop_lean(pb_learner_t *l, owner_t w, float bias, int pool_sign);

/* A job of kind `kind` ended (the window is the loop's again): what was
 * condemned meanwhile leaves it, and after TRAIN every recent condemned
 * tag again (the iteration just kept may hold their positions). */
void pb__rdrop_job_done(pb_learner_t *l, int kind);

void pb__rdrop_free(pb_learner_t *l);

/* ---- phases.c: the phases of an iteration and the jobs ---------------- */

/* Starts the self-play phase of iteration version + 1 (its items may be
 * out already when pipelined). */
void pb__start_selfplay(pb_learner_t *l);

/* All self-play items are in: gathers the episodes, opens the next
 * iteration's items when pipelined, starts job PREPARE_SEARCH (TRAIN
 * when the algorithm does not search). */
void pb__selfplay_done(pb_learner_t *l);

/* Starts job TRAIN when every search item is in and every spot check
 * done; does nothing otherwise. */
void pb__search_maybe_done(pb_learner_t *l);

/* ---- quarantine.c: the one quarantine, bans and refusals --------------- */

/* New connections an address may open at once (trust.c's rate). */
#define PB__CONN_BURST 128.0

/* The entry of a key or an address (kind IDENT_*); with create, a new one
 * (a free entry, else the least recently seen one that is not banned).
 * NULL when unknown, or when the table is full of banned ones. */
ident_t *pb__ident_find(pb_learner_t *l, int kind, const char *id, int create);

/* Why e (NULL: none) is banned now (QUAR_*), or 0; an address's ban that
 * has run its time ends here (its tallies start again). */
int pb__ident_banned(pb_learner_t *l, ident_t *e);

/* How long the nth ban of an address (or a sender id's) lasts, in s. */
double pb__ban_length(const pb_learner_t *l, uint32_t nth);

/* Connection p is quarantined for what it did (why: QUAR_*; msg, the
 * reason, "quarantined (...): ..."): what it holds is re-queued, for a
 * liar what it delivered in the open phase is thrown away and redone, it
 * is told so and refused for the rest of the learner's life. */
void pb__quarantine(pb_learner_t *l, peer_t *p, int why, const char *msg);

/* Key or address e is banned (msg says why): a key for good, with every
 * connection it has; an address for pb__ban_length, with its connections
 * for which guilty() is 1 (and new ones). guilty NULL: all. */
void pb__ban(pb_learner_t *l, ident_t *e, int why, const char *msg,
             int (*guilty)(const peer_t *p));

/* Whether message m from p is refused (a quarantined peer, a banned key,
 * or, without CURVE, a banned address or sender id); answers it with a
 * Reject where it asks for one. 1 when dropped. */
int pb__refused(pb_learner_t *l, peer_t *p, const pb_msg_t *m);

/* ---- trust.c: leases, what a record earns ------------------------------ */

/* The levels a worker's record earns (trust.c's top comment). */
enum { TRUST_FULL = 0, TRUST_ONE, TRUST_NONE, TRUST_OUT };

/* A new connection from address addr (NULL, "": not known): whether the
 * learner takes it (at most PB__CONN_BURST at once and PB__CONN_RATE a
 * second per address); a refusal is counted and, rate limited, logged. */
int pb__trust_admit(pb_learner_t *l, const char *addr);

/* Lease `serial` of a `what` ("search", "selfplay") item expired: tallied
 * for the connection, its key and its address, and whatever crosses a
 * level is told so (the log, /status) or quarantined. */
void pb__trust_expired(pb_learner_t *l, const char *what, size_t index,
                       uint32_t serial);

/* The holder `serial` of a `what` item was overtaken: a backup copy's
 * result was taken first (peers.c). Tallied as an expired lease (a worker
 * with results behind it absorbs it; one that never delivered, hung or
 * withholding, is held to one item, then none, then quarantined), but not
 * counted in leases_expired. */
void pb__trust_overtaken(pb_learner_t *l, const char *what, size_t index,
                         uint32_t serial);

/* A result of p's was taken: tallied for its key and its address (its
 * own count is p->items). */
void pb__trust_done(pb_learner_t *l, const peer_t *p);

/* What p may hold now: *max_held items (0: no limit beyond `share`),
 * and whether an item that came back may go to it (*trusted). Returns 0
 * when it gets no item now. */
int pb__trust_allows(pb_learner_t *l, const peer_t *p, size_t share,
                     size_t *max_held, int *trusted);

/* p's level now (TRUST_*). */
int pb__trust_level(pb_learner_t *l, const peer_t *p);

/* ---- spot.c: the spot check of search results ------------------------- */

/* Queues a share of the accepted search item idx (positions first ..
 * first + n, delivered by p) for the spot check. */
void pb__spot_sample(pb_learner_t *l, const peer_t *p, size_t idx, size_t first,
                     size_t n);

/* Starts a check job on the waiting positions when none runs. */
void pb__spot_kick(pb_learner_t *l);

/* Frees a queue of positions to check. */
void pb__spotq_free(spotq_t *q);

/* ---- selfcheck.c: the surprise of self-play moves --------------------- */

/* Makes the scoring network when the run's algorithm lets the learner
 * score its actors' moves (pb_algo_t.q_play) and net.selfplay_check > 0;
 * 0 or the network's error. */
int pb__selfcheck_init(pb_learner_t *l, pb_err_t *err);
void pb__selfcheck_free(pb_learner_t *l);

/* Scores a share of the episodes of self-play result r (item idx, from p,
 * every episode already checked against the rules) and tallies them for
 * p, its key and its address. 1 when that made p, its key or its address
 * impossible: p is quarantined, its items of the open iteration are
 * dropped and re-queued, and r must be refused; else 0 (r is p's). */
int pb__selfcheck_item(pb_learner_t *l, peer_t *p, size_t idx,
                       const pb_msg_selfplay_result_t *r);

/* ---- peers.c: drain and the handlers of what workers send ------------- */

/* The ROUTER's file descriptor is readable: drains it. */
void pb__on_zpoll(uv_poll_t *h, int status, int events);

/* Reads and handles the ROUTER's waiting messages (at most 512 a call). */
void pb__drain(pb_learner_t *l);

#endif
