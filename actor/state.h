/* state.h - private to actor/: the worker object and what the files
 * of the worker share. Not part of worker.h's interface; nothing outside
 * actor/ includes it.
 *
 *   worker.c   names and ids, lifecycle (new, destroy), 1. join, 2. ask,
 *              and the loop (pb_worker_run)
 *   sockets.c  the ZeroMQ sockets: setup, sending, receiving, and wait_for,
 *              the one place that polls them
 *   weights.c  3. weights: the networks held, WeightsRequest, loading
 *   jobs.c     4. work: self-play and search items with the run's
 *              algorithm (common/algo/algo.h), the heartbeat between
 *              network batches, 5. their results */
#ifndef PB_ACTOR_STATE_H
#define PB_ACTOR_STATE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "algo.h"
#include "batcher.h"
#include "config.h"
#include "episodes.h"
#include "err.h"
#include "game.h"
#include "log.h"
#include "msg.h"
#include "neteval.h"
#include "nn.h"
#include "worker.h"

enum {
  W_STOP = 1,    /* a signal or the learner's STOPPING: say Bye and return */
  W_REJOIN = 2,  /* the learner runs another run: Hello again */
  W_DROP = 3,    /* give the item up; its lease expires at the learner */
  W_TIMEOUT = 4, /* wait_for reached its deadline */
  W_WAKE = 5,    /* wait_for saw an Announce and was asked to wake on it */
};

/* wait_for flags */
enum { WAIT_RESEND = 1, WAIT_WAKE = 2 };

#define BIT(type) (1u << (type))

/* How long a refused Hello or a rejected request waits before trying again,
 * and the longest a poll sleeps before it looks at the stop flag again (a
 * signal may be delivered to a libtorch or ZeroMQ thread and then does not
 * interrupt our poll). */
#define PB_WORKER_RETRY_S 2.0
/* Backoff after failures in a row (a refusal, a dropped item, joining
 * again): PB_WORKER_BACKOFF_MIN_S doubled each time up to
 * PB_WORKER_BACKOFF_MAX_S, times a random factor in [0.5, 1.5). */
#define PB_WORKER_BACKOFF_MIN_S 0.1
#define PB_WORKER_BACKOFF_MAX_S 30.0
#define PB_WORKER_POLL_MAX_MS 100
#define PB_WORKER_LINGER_MS 1000

/* A network the worker holds, and which version of the learner's it is. */
typedef struct {
  pb_nn_t *nn;
  uint64_t version;
  int have; /* nn holds the weights of `version` */
} pb__worker_net_t;

struct pb_worker {
  pb_config_t cfg;
  double warn_t; /* start of the current one-second warning window */
  int warn_left; /* warnings about peers' bytes left in it */
  int role;
  char id[PB_MSG_ID_MAX + 1];
  char host[PB_MSG_HOST_MAX + 1];
  pb_log_t *log;
  char device[16]; /* what model.device resolved to: "cpu" or "cuda" */
  int precision;    /* PB_NN_FP32 or PB_NN_BF16 (model.precision) */
  char precision_why[256]; /* the choice in words, for the log */
  void *zctx, *dealer, *sub;
  volatile sig_atomic_t *stop;
  int stopping; /* the learner announced STOPPING */
  int said_bye;

  /* The start to join: the run id given, "" for any start of run.name;
   * set when a learner of another start answered. */
  char want_start[PB_MSG_ID_MAX + 1];
  int wrong_start;

  /* The run joined (valid while joined). */
  int joined;
  char run_id[PB_MSG_ID_MAX + 1];
  char start_id[PB_MSG_ID_MAX + 1]; /* its learner's start ("" if unsaid) */
  const pb_game_t *g;
  /* The learner's config, from the accepted HelloReply: what the run
   * plays and searches by (self-play, MCTS, td settings, the algorithm).
   * cfg stays this process's own (endpoints, device, precision, threads,
   * games and searches at once). run_yaml is its text, to tell a new
   * config from the same one when joining again. */
  pb_config_t run;
  char *run_yaml;

  /* Networks and engines, built lazily and reused from item to item; one
   * engine per thread of game or tree work (common/search/batcher.h). */
  pb__worker_net_t v, q;
  pb_neteval_t *ne;
  int threads; /* search.threads / train.selfplay_threads, resolved */
  pb_batcher_t *batcher; /* NULL with one thread */
  /* The run's algorithm (common/algo/algo.h) and its engines: the
   * self-play player of an actor, the searcher of a search worker. */
  const pb_algo_t *algo;
  void *player, *searcher;

  /* The item in hand, for heartbeats from inside the evaluator. */
  int busy;
  uint64_t item_id;
  double item_hb_s;    /* heartbeat interval for this item */
  double last_item_hb; /* last heartbeat naming the item */
  double last_send;    /* last message of any kind to the learner */
  double heard_at;     /* last message from the learner (net.give_up_s) */

  /* Buffers reused from item to item. */
  pb_episodes_t eps;
  pb_msg_episode_t *mep;
  size_t mep_cap;
  float *qout;
  size_t qout_cap;
  pb_msg_buf_t req; /* the request awaiting a reply, resent as is */
  const char *req_name;
  pb_msg_buf_t out; /* everything else */

  pb_worker_stats_t st;

  /* Failures in a row (worker.c: backoff) and when the streak began; the
   * first of a streak is logged as a warning, the rest at debug level
   * (pb__worker_warn), the end of it once. */
  int fails;
  double fails_since;
  uint64_t jitter; /* splitmix64 state of the backoff's jitter */
};

/* A warning when it opens a streak of failures, else a debug line: the
 * log says once that something keeps failing, not once per try. */
void pb__worker_warn(pb_worker_t *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- sockets.c -------------------------------------------------------- */

/* Creates the ZeroMQ context and sockets with their options (CURVE when
 * net.curve_dir is set) and connects them to the config's endpoints.
 * Returns 0 or PB_EIO naming the socket or endpoint. */
int pb__worker_setup_sockets(pb_worker_t *w, pb_err_t *err);

/* A signal or the learner's STOPPING asks the worker to stop. */
static inline int pb__worker_stop_requested(const pb_worker_t *w) {
  return w->stopping || (w->stop != NULL && *w->stop);
}

/* Starts message *m of `type` with our header (the run's id and game once
 * joined). */
void pb__worker_msg_init(const pb_worker_t *w, pb_msg_t *m, int type);

/* Encodes *m into b and sends it (patiently, but for heartbeats). Returns
 * 0, PB_EIO for a socket failure, or the encoder's code (logged). */
int pb__worker_encode_send(pb_worker_t *w, const pb_msg_t *m, pb_msg_buf_t *b,
                           pb_err_t *err);

/* Sends a Heartbeat naming the item in hand, or none when idle; best
 * effort (a failure is logged). */
void pb__worker_heartbeat(pb_worker_t *w);

/* Seconds until the next heartbeat is due (<= 0: now). */
double pb__worker_heartbeat_due(const pb_worker_t *w, double now);

/* Reads every announcement waiting on the SUB socket (sets w->stopping on
 * STOPPING); sets *woke (if not NULL) when one arrived. Returns 0 or
 * PB_EIO. */
int pb__worker_drain_announcements(pb_worker_t *w, int *woke, pb_err_t *err);

/* Waits for a message of a type in the bit set `want` (BIT(type)) on the
 * DEALER until `deadline` (pb_now() seconds; 0: none), heartbeating and
 * handling announcements meanwhile; WAIT_RESEND resends w->req after
 * lease_ms of silence, WAIT_WAKE returns on an Announce. With
 * net.give_up_s > 0, a wait that hears nothing from the learner (no valid
 * message on either socket) for that long, counted from the later of the
 * last message heard and the start of the wait, ends in PB_EAGAIN naming
 * the endpoint and the time waited. Returns 0 with *m filled (the caller
 * frees it), W_TIMEOUT, W_WAKE, W_STOP, PB_EAGAIN or PB_EIO. */
int pb__worker_wait_for(pb_worker_t *w, unsigned want, double deadline,
                        int flags, pb_msg_t *m, pb_err_t *err);

/* Sends *req (kept in w->req for resends) and waits for a reply of a type
 * in `want`. Returns as pb__worker_wait_for. */
int pb__worker_request(pb_worker_t *w, const pb_msg_t *req, unsigned want,
                       pb_msg_t *reply, pb_err_t *err);

/* Sleeps `seconds` while still heartbeating and listening. Returns 0,
 * W_STOP or PB_EIO. */
int pb__worker_pause_for(pb_worker_t *w, double seconds, pb_err_t *err);

/* ---- weights.c -------------------------------------------------------- */

/* Makes sure V of v_version (if need_v) and Q of q_version are loaded and
 * bound to the evaluator, fetching what is missing. Returns 0, W_DROP,
 * W_REJOIN, W_STOP or an error that retrying cannot cure. */
int pb__worker_ensure_weights(pb_worker_t *w, int need_v, uint64_t v_version,
                              uint64_t q_version, pb_err_t *err);

/* ---- jobs.c ----------------------------------------------------------- */

/* Marks item `it` as the one in hand: heartbeats name it from now on,
 * every half lease at least. */
void pb__worker_begin_item(pb_worker_t *w, const pb_msg_work_item_t *it);

/* Plays a self-play item (PROBS or AlphaZero, as the run's algorithm) and
 * sends its SelfplayResult. Returns 0, W_DROP, W_REJOIN, W_STOP or an
 * error that retrying cannot cure. */
int pb__worker_do_selfplay(pb_worker_t *w, const pb_msg_work_item_t *it,
                           pb_err_t *err);

/* Runs a search item's beam searches and sends its SearchResult. Returns
 * as pb__worker_do_selfplay. */
int pb__worker_do_search(pb_worker_t *w, const pb_msg_work_item_t *it,
                         pb_err_t *err);

#endif
