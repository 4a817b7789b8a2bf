/* worker.h - the worker side of the probs protocol (docs/protocol.md): one
 * process that plays self-play games (role actor) or runs beam searches
 * (role searcher) for a learner over ZeroMQ.
 *
 * Path from main(): actor/main.c parses the command line and the config,
 * creates the worker (pb_worker_new), calls pb_worker_run until a signal or
 * the learner's STOPPING announcement, and destroys it. Everything happens
 * on the calling thread: one loop around zmq_poll over a DEALER (requests
 * and replies) and a SUB (announcements). While an item is being computed
 * the loop is not running; the evaluator callbacks that self-play and beam
 * search call between batches send the heartbeats and look at the stop
 * flag instead (see pb_worker_run).
 *
 * What the worker takes from where. Local settings come from the config:
 * endpoints, net.heartbeat_ms, net.lease_ms (how long to wait for a reply
 * before sending the request again), net.hwm, train.selfplay_parallel,
 * search.parallel, search.cache_entries, model.threads, model.device, and
 * log.level (main). Algorithm parameters (max_turns, eps, alpha, E, M) and
 * the game come from the learner's HelloReply and the work items, so a
 * worker cannot disagree with its learner. Networks are built from the
 * spec inside the weights the learner sends.
 *
 * Tuned for: items of tens of episodes or hundreds of positions that take
 * seconds; the per-item overhead (a few messages, one weights fetch per new
 * version) is small beside that. Buffers (episode store, search output,
 * encode buffers, trees) are reused from item to item. */
#ifndef PB_WORKER_H
#define PB_WORKER_H

#include <signal.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "log.h"

typedef struct pb_worker pb_worker_t;

/* "selfplay" -> PB_ROLE_ACTOR, "search" -> PB_ROLE_SEARCHER (common/net/msg.h);
 * anything else (or NULL) -> PB_EINVAL. */
int pb_worker_role_parse(const char *s);

/* The log component of a role: "actor", "searcher" ("worker" otherwise). */
const char *pb_worker_component(int role);

/* Writes the default sender id "<role word>-<hostname>-<pid>" ("selfplay-
 * box-4711"; characters of the hostname that may not travel in a header
 * become '_', and the whole is cut to PB_MSG_ID_MAX bytes) into buf. */
void pb_worker_default_id(int role, char *buf, size_t n);

/* Checks a sender id given by a user: 1..PB_MSG_ID_MAX printable ASCII
 * characters, no spaces. Returns 0 or PB_EINVAL with a message naming the
 * problem. */
int pb_worker_id_check(const char *id, pb_err_t *err);

/* Creates a worker of `role` (PB_ROLE_ACTOR or PB_ROLE_SEARCHER) for the
 * checked config cfg (copied). id is the sender id (NULL: the default id);
 * run_id is the run id of the learner's start to join (common/run/rundir.h; what
 * `probs train` gives its workers), or NULL to join any learner of
 * run.name; log is borrowed and must outlive the worker (NULL logs to
 * stderr). Sets
 * libtorch's thread count to model.threads for the calling thread, which
 * must be the one that calls pb_worker_run. Tries model.device once (a
 * throwaway network) so that a device that cannot work fails here, not at
 * the first item. Creates the ZeroMQ context and sockets and connects them
 * (ZeroMQ connects in the background: a learner that is not there yet is
 * not an error). Returns NULL with err filled: PB_EINVAL (bad role or id),
 * PB_ECONFIG (config fails pb_config_check), PB_EUNSUPP ("cuda" without
 * CUDA) or PB_ENN (libtorch fails), PB_EIO (a socket cannot be created or
 * an endpoint is refused by ZeroMQ, naming the endpoint), PB_ENOMEM. */
pb_worker_t *pb_worker_new(const pb_config_t *cfg, int role, const char *id,
                           const char *run_id, pb_log_t *log, pb_err_t *err);

/* Sends nothing more, closes the sockets (waiting at most net linger, 1 s,
 * for a Bye still queued) and frees everything; accepts NULL and sets *w to
 * NULL. */
void pb_worker_destroy(pb_worker_t **w);

/* The sender id in use. */
const char *pb_worker_id(const pb_worker_t *w);

/* Runs the worker until *stop becomes nonzero (a signal handler sets it) or
 * the learner announces STOPPING. One turn of the loop:
 *
 *   1. join     Hello until an accepted HelloReply; its header gives the
 *               run id and game that every later message must carry. With
 *               a run id given (pb_worker_new), a learner of another start
 *               ends the run with PB_EMISMATCH naming both run ids
 *               (pb_worker_wrong_start), whether it refused the Hello or
 *               not: retrying cannot change which learner is there.
 *   2. ask      WorkRequest -> WorkItem, or NoWork: wait retry_ms or until
 *               an Announce, then ask again.
 *   3. weights  WeightsRequest for each network version the item needs and
 *               the worker does not hold; Weights -> build or reload the
 *               network, rebind the evaluator (clearing its caches).
 *   4. work     pb_selfplay_run or pb_beam_run through an evaluator that
 *               sends a Heartbeat {item} every net.heartbeat_ms and gives
 *               up (abandoning the item) when a stop is requested.
 *   5. result   SelfplayResult or SearchResult; back to 2.
 *
 * Any wait for a reply sends the request again after net.lease_ms of
 * silence, and sends an idle Heartbeat every net.heartbeat_ms. A Reject
 * PB_EMISMATCH (the learner runs another run) goes back to 1; a Reject of a
 * weights request drops the item (its lease expires and the learner hands
 * it to another worker). Messages that fail to decode are logged and
 * dropped: a peer can never crash or stop the worker.
 *
 * On a stop the worker sends Bye (when it has joined a run) and returns 0,
 * within about a second even in the middle of an item. Returns a negative
 * PB_E* code with err filled only for local failures that retrying cannot
 * cure: socket errors, out of memory, a network that cannot be created on
 * model.device, a learner's settings the engines refuse. */
int pb_worker_run(pb_worker_t *w, volatile sig_atomic_t *stop, pb_err_t *err);

/* 1 when pb_worker_run ended because the learner is of another start
 * than the run id the worker was given; a restart would not help. */
int pb_worker_wrong_start(const pb_worker_t *w);

/* Counters since creation, for logs and tests. */
typedef struct pb_worker_stats {
  uint64_t items;     /* items finished and sent */
  uint64_t dropped;   /* items given up (weights refused, bad item, stop) */
  uint64_t episodes;  /* self-play episodes sent */
  uint64_t positions; /* self-play positions sent */
  uint64_t states;    /* searched states sent */
  uint64_t resends;   /* requests sent again after lease_ms of silence */
  uint64_t bad_msgs;  /* messages dropped because they did not decode */
  uint64_t joins;     /* accepted HelloReplies */
} pb_worker_stats_t;

void pb_worker_stats(const pb_worker_t *w, pb_worker_stats_t *st);

#endif
