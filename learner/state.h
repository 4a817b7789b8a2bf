/* state.h - private to learner/: the learner object and what the files of
 * the learner share. Not part of learner.h's interface; nothing outside
 * learner/ includes it.
 *
 * The state is split by concern: struct pb_learner holds what the learner
 * is (its config, game, log, loop, run dir, networks) and one struct per
 * concern, each written only by the file(s) named beside it (its header
 * says what it holds; scripts/check-learner-owners.sh, run by
 * tests/test_learner_owners.sh, fails on a write from any other file).
 * Other files read it, and change it through the owner's functions
 * declared below. A peer's and an identity's records (state_peer.h) have
 * a part per concern, each marked with the file that writes it.
 *
 *   state_net.h     l->net     sockets.c
 *   state_iter.h    l->it      phases.c;  l->status  status.c
 *   state_intake.h  l->intake  peers.c, intake.c;  l->rec  selfrec.c
 *   state_peer.h    l->own     owners.c
 *   state_replay.h  l->rdrop   replaydrop.c
 *   state_trust.h   l->quar    quarantine.c;  l->lease  trust.c;
 *                   l->spot    spot.c;  l->play  selfcheck.c;
 *                   l->ref     selfref.c
 *
 * The files, each using only those above it in this list:
 *
 *   state.c    the learner's fate (fatal error, loop shut down), phase
 *              names, who is alive
 *   owners.c   who delivered each item of the open phases, and taking
 *              back what a quarantined connection delivered
 *   sockets.c  the ROUTER and PUB sockets, the table of peers, the
 *              weights served, everything the learner sends
 *   status.c   /status, /metrics, the progress log, metrics.jsonl lines
 *   replaydrop.c  who delivered what the replay window holds, and what
 *              leaves it when a worker is caught lying later
 *   phases.c   the iteration: its phases and the jobs on the thread pool
 *   quarantine.c  the one quarantine (of a connection, a key, an
 *              address, a sender id) and the refusals it leads to; the
 *              table of keys and addresses
 *   trust.c    leases that expire and
 *              what a worker's record earns it; Hello's rate per address
 *   spot.c     the spot check of search results and the quarantine
 *   selfcheck.c  the surprise of self-play moves, the outcome test, the
 *              pool of new identities, and the quarantine of actors whose
 *              moves or outcomes are impossible
 *   selfref.c  the learner's own reference games of self-play (a job
 *              on the thread pool), what the outcome test compares with
 *   azcheck.c  AlphaZero's self-play moves against their policy rows,
 *              and a share of the rows against the learner's re-run
 *              (its own state, l->azck)
 *   selfrec.c  run.record_selfplay: the self-play games taken, a record
 *              line each, through a spool
 *   intake.c   the one path of a result into the iteration: the lease,
 *              the checks (common/train/itemcheck.h, then the trust
 *              checks), the store
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
#include "json.h"
#include "neteval.h"
#include "playcheck.h"
#include "spotcheck.h"
#include "util.h"
#include "web.h"
#include "workq.h"

#include "state_intake.h"
#include "state_iter.h"
#include "state_net.h"
#include "state_peer.h"
#include "state_replay.h"
#include "state_trust.h"

struct pb_learner {
  /* learner.c: what the learner is and its loop (state.c: its fate) */
  pb_config_t cfg;
  const pb_game_t *g;
  pb_log_t *log;
  int lock_fd; /* RUN_DIR/learner.lock, held while the learner lives */
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
  int http_port; /* the HTTP port bound (0: off) */
  int endpoints_written; /* RUN_DIR/endpoints says what was bound */
  int handles_open;
  int loop_inited;
  /* What this start made in RUN_DIR, taken back if it fails. */
  pb_rundir_undo_t undo;
  pb_learn_t *learn; /* the networks and their training */
  double t_start;    /* when it started (pb_now) */
  int stopping;      /* a signal asked us to stop */
  int fatal;
  pb_err_t fatal_err;

  /* by concern, each written by its file (the headers say which) */
  pb_lnet_t net;       /* sockets, peers, weights served: sockets.c */
  pb_liter_t it;       /* the iteration: phases.c */
  pb_lintake_t intake; /* what arrives: peers.c, intake.c */
  pb_lowners_t own;    /* who delivered each item: owners.c */
  pb_lrec_t rec;       /* self-play records: selfrec.c */
  pb_lquar_t quar;     /* bans: quarantine.c */
  pb_llease_t lease;   /* leases: trust.c */
  pb_lspot_t spot;     /* the spot check: spot.c */
  pb_lplay_t play;     /* the checks of self-play: selfcheck.c */
  pb_lref_t ref;       /* the learner's reference games: selfref.c */
  struct pb_azck *azck; /* AlphaZero's moves and rows (NULL: off): azcheck.c */
  pb_lstatus_t status; /* what was reported last: status.c */
  pb_lrdrop_t rdrop;   /* the replay window's tags: replaydrop.c */
};

/* Who p is, as an item's owner. */
static inline owner_t pb__owner_of(const pb_learner_t *l, const peer_t *p) {
  return (owner_t){(uint32_t)(p - l->net.peers), p->serial};
}

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

/* The precision the workers of role (PB_DEVICE_ACTOR, _SEARCHER) compute
 * in, which the learner's checks of their work must compute in too (a
 * bf16 actor's Q differs from fp32's in the second or third digit): their
 * key's value, "auto" resolved on the learner's device (PB_NN_*). */
int pb__role_precision(const pb_learner_t *l, int role);

/* ---- owners.c: who delivered each item of the open phases ------------ */

/* A search phase of n_items items begins: no owners yet. 0 or PB_ENOMEM. */
int pb__owners_search_phase(pb_learner_t *l, size_t n_items, pb_err_t *err);

/* p delivered item idx of phase (PH_SEARCH, PH_SELFPLAY: of the open
 * self-play iteration), taken now. 0 or PB_ENOMEM. */
int pb__owners_took(pb_learner_t *l, int phase, size_t idx, const peer_t *p,
                    pb_err_t *err);

/* Whether item idx of phase is still who's (not thrown out, not taken
 * back). */
int pb__owners_is(const pb_learner_t *l, int phase, size_t idx, owner_t who);

/* Item idx of phase was thrown out (re-queued by the caller). */
void pb__owners_drop(pb_learner_t *l, int phase, size_t idx);

/* p is quarantined: what it delivered in the open phases is taken back:
 * its search items re-queued, its self-play items' episodes dropped and
 * re-queued. The number of items. */
size_t pb__owners_forget(pb_learner_t *l, const peer_t *p);
void pb__owners_free(pb_learner_t *l);

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

/* Closes the sockets and frees the table of peers and the weights
 * served (at the end). */
void pb__close_sockets(pb_learner_t *l);

/* Serves the learner's networks as they are now (at start). 0 or the
 * error. */
int pb__weights_serve_learned(pb_learner_t *l, pb_err_t *err);

/* Serves *fresh (made by a job) as the V (which PB_WHICH_V) or Q weights;
 * *fresh is taken over and zeroed. */
void pb__weights_serve(pb_learner_t *l, int which, wbuf_t *fresh);

/* Logs a change in the number of CURVE keys authorized (the tick). */
void pb__zap_tick(pb_learner_t *l);

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

/* Makes the iteration and its work queues (l->it); frees them. 0 or the
 * error. */
int pb__iter_init(pb_learner_t *l, pb_err_t *err);
void pb__iter_free(pb_learner_t *l);

/* The first phase: self-play of the next iteration, or done when the
 * run has made its last version. */
void pb__iterations_begin(pb_learner_t *l);

/* Self-play or search waits for workers: with none the learner accepts
 * for net.no_workers_exit_s, the run stops (the tick). */
void pb__check_starved(pb_learner_t *l, double t);

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

/* A lease of the phase's queue held longer than the backup time is
 * logged, once per lease (the tick). */
void pb__trust_long_lease(pb_learner_t *l, double t);

/* p's level now (TRUST_*). */
int pb__trust_level(pb_learner_t *l, const peer_t *p);

/* ---- spot.c: the spot check of search results ------------------------- */

/* Queues a share of the accepted search item idx (positions first ..
 * first + n, delivered by p) for the spot check. */
void pb__spot_sample(pb_learner_t *l, const peer_t *p, size_t idx, size_t first,
                     size_t n);

/* Makes the spot check when net.spot_check > 0 (l->spot); frees it. 0 or
 * the error. */
int pb__spot_init(pb_learner_t *l, pb_err_t *err);
void pb__spot_free(pb_learner_t *l);

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
 * p, its key and its address; its outcomes are judged against the
 * learner's reference games (or the other actors'), and with those of
 * every identity too new to be judged alone. 1 when r must be refused:
 * p, its key or its address is impossible (p is quarantined, its items
 * of the open iteration are dropped and re-queued), or the pool of new
 * identities is impossible and r leans its way; else 0 (r is p's). */
int pb__selfcheck_item(pb_learner_t *l, peer_t *p, size_t idx,
                       const pb_msg_selfplay_result_t *r);

/* Judges again every identity with episodes of Q version `version`, and
 * the pool of new identities, now that the learner's reference games of
 * that version are played (selfref.c). */
void pb__selfcheck_reference(pb_learner_t *l, uint64_t version);

/* ---- selfref.c: the learner's reference games ------------------------- */

/* Makes the reference player (its networks, the algorithm's engine) when
 * net.selfplay_check > 0 and net.selfplay_reference > 0; 0 or the
 * error. */
int pb__selfref_init(pb_learner_t *l, pb_err_t *err);
void pb__selfref_free(pb_learner_t *l);

/* Starts the job that plays the served Q version's reference games, when
 * self-play items are out, none runs and that version has none yet; and
 * notes how long self-play, its items all in, waits for one. */
void pb__selfref_kick(pb_learner_t *l);

/* ---- azcheck.c: AlphaZero's moves and policy rows --------------------- */

/* Makes the check when the run's algorithm is AlphaZero and
 * net.selfplay_check > 0 (the re-run's network when net.az_check > 0); 0
 * or the error. */
int pb__azcheck_init(pb_learner_t *l, pb_err_t *err);
void pb__azcheck_free(pb_learner_t *l);

/* Checks result r of p (every episode already checked against the rules)
 * and tallies it for p, its key and its address: 1 when p is quarantined
 * now (r must be refused), else 0. */
int pb__azcheck_item(pb_learner_t *l, peer_t *p,
                     const pb_msg_selfplay_result_t *r);

/* The check's counters, an "alphazero" object of /status. */
void pb__azcheck_status(pb_learner_t *l, pb_json_t *j);

/* ---- intake.c: the one path of a result into the iteration ------------ */

/* A self-play or search result r from p: taken when p holds the item's
 * lease and r passes every check (intake.c's top comment lists them in
 * order), else dropped or refused and its item re-queued. */
void pb__intake_selfplay(pb_learner_t *l, peer_t *p,
                         const pb_msg_selfplay_result_t *r);
void pb__intake_search(pb_learner_t *l, peer_t *p,
                       const pb_msg_search_result_t *r);

/* ---- peers.c: drain and the handlers of what workers send ------------- */

/* The ROUTER's file descriptor is readable: drains it. */
void pb__on_zpoll(uv_poll_t *h, int status, int events);

/* Reads and handles the ROUTER's waiting messages (at most 512 a call). */
void pb__drain(pb_learner_t *l);

#endif
