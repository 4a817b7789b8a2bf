/* worker.c - the actor / beam-search worker: see worker.h for the contract
 * and docs/protocol.md for the conversation.
 *
 * Shape: pb_worker_run is the loop of worker.h (join, ask, weights, work,
 * result). Every "send a request and wait for its reply" goes through
 * request() -> wait_for(), the only place that polls the sockets; it also
 * handles announcements, idle heartbeats and resends. While an item is being
 * computed, the evaluator callbacks (ev_value / ev_qvalues) take over the
 * duties that cannot wait: heartbeats, the stop flag, a STOPPING
 * announcement.
 *
 * Internal outcomes travel as small positive codes next to 0 and the
 * negative PB_E* errors, so that "the learner changed runs" or "give this
 * item up" never look like failures of the process. */
#include "worker.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "azplay.h"
#include "beam_search.h"
#include "curve.h"
#include "episodes.h"
#include "learn.h"
#include "model.h"
#include "msg.h"
#include "batcher.h"
#include "neteval.h"
#include "nn.h"
#include "pveval.h"
#include "selfplay.h"
#include "util.h"

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
#define PB_WORKER_POLL_MAX_MS 100
#define PB_WORKER_LINGER_MS 1000

/* A network the worker holds, and which version of the learner's it is. */
typedef struct {
  pb_nn_t *nn;
  uint64_t version;
  int have; /* nn holds the weights of `version` */
} net_t;

struct pb_worker {
  pb_config_t cfg;
  double warn_t; /* start of the current one-second warning window */
  int warn_left; /* warnings about peers' bytes left in it */
  int role;
  char id[PB_MSG_ID_MAX + 1];
  char host[PB_MSG_HOST_MAX + 1];
  pb_log_t *log;
  char device[16]; /* what model.device resolved to: "cpu" or "cuda" */
  void *zctx, *dealer, *sub;
  volatile sig_atomic_t *stop;
  int stopping; /* the learner announced STOPPING */
  int said_bye;

  /* The run joined (valid while joined). */
  int joined;
  char run_id[PB_MSG_ID_MAX + 1];
  const pb_game_t *g;
  pb_msg_hello_reply_t hello;

  /* Networks and engines, built lazily and reused from item to item; one
   * engine per thread of game or tree work (search/batcher.h). */
  net_t v, q;
  pb_neteval_t *ne;
  int threads; /* search.threads / train.selfplay_threads, resolved */
  pb_batcher_t *batcher; /* NULL with one thread */
  pb_selfplay_t *sp[PB_BATCHER_MAX_THREADS];
  pb_azplay_t *az;     /* alphazero self-play (one thread) */
  pb_pveval_t *pve;    /* its network evaluator */
  pb_episodes_t sp_eps[PB_BATCHER_MAX_THREADS]; /* members 1.. */
  pb_beam_t *beam[PB_BATCHER_MAX_THREADS];
  int beam_E, beam_M;

  /* The item in hand, for heartbeats from inside the evaluator. */
  int busy;
  uint64_t item_id;
  double item_hb_s;    /* heartbeat interval for this item */
  double last_item_hb; /* last heartbeat naming the item */
  double last_send;    /* last message of any kind to the learner */

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
};

/* ---- names and ids ---------------------------------------------------- */

int pb_worker_role_parse(const char *s) {
  if (s != NULL && strcmp(s, "selfplay") == 0) return PB_ROLE_ACTOR;
  if (s != NULL && strcmp(s, "search") == 0) return PB_ROLE_SEARCHER;
  return PB_EINVAL;
}

const char *pb_worker_component(int role) {
  return role == PB_ROLE_ACTOR      ? "actor"
         : role == PB_ROLE_SEARCHER ? "searcher"
                                    : "worker";
}

static const char *role_word(int role) {
  return role == PB_ROLE_ACTOR ? "selfplay" : "search";
}

/* Printable ASCII without spaces, as header ids must be; anything else
 * becomes '_'. */
static void sanitize_id(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) *s = '_';
}

static void hostname_of(char *buf, size_t n) {
  if (gethostname(buf, n) != 0) snprintf(buf, n, "unknown");
  buf[n - 1] = '\0';
  if (buf[0] == '\0') snprintf(buf, n, "unknown");
  sanitize_id(buf);
}

void pb_worker_default_id(int role, char *buf, size_t n) {
  char host[PB_MSG_HOST_MAX + 1];
  char id[3 * PB_MSG_ID_MAX];
  hostname_of(host, sizeof host);
  /* Keep the pid whole when a long hostname must be cut. */
  char pid[24];
  snprintf(pid, sizeof pid, "-%ld", (long)getpid());
  int room =
      PB_MSG_ID_MAX - (int)strlen(role_word(role)) - 1 - (int)strlen(pid);
  snprintf(id, sizeof id, "%s-%.*s%s", role_word(role), room, host, pid);
  snprintf(buf, n, "%s", id);
}

int pb_worker_id_check(const char *id, pb_err_t *err) {
  if (id == NULL || id[0] == '\0')
    return pb_err_set(err, PB_EINVAL, "the worker id is empty");
  size_t n = strlen(id);
  if (n > PB_MSG_ID_MAX)
    return pb_err_set(err, PB_EINVAL,
                      "the worker id is %zu bytes long, at most %d allowed", n,
                      PB_MSG_ID_MAX);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
      return pb_err_set(err, PB_EINVAL,
                        "the worker id has byte 0x%02x at %zu: only printable "
                        "ASCII without spaces is allowed",
                        (unsigned char)id[i], i);
  return 0;
}

/* ---- construction ----------------------------------------------------- */

static int sockopt_int(void *s, int opt, int v, const char *what,
                       pb_err_t *err) {
  if (zmq_setsockopt(s, opt, &v, sizeof v) != 0)
    return pb_err_set(err, PB_EIO, "%s: zmq_setsockopt(%d): %s", what, opt,
                      zmq_strerror(zmq_errno()));
  return 0;
}

static int setup_sockets(pb_worker_t *w, pb_err_t *err) {
  const pb_config_t *c = &w->cfg;
  w->zctx = zmq_ctx_new();
  if (w->zctx == NULL)
    return pb_err_set(err, PB_EIO, "cannot create a ZeroMQ context: %s",
                      zmq_strerror(zmq_errno()));
  w->dealer = zmq_socket(w->zctx, ZMQ_DEALER);
  w->sub = zmq_socket(w->zctx, ZMQ_SUB);
  if (w->dealer == NULL || w->sub == NULL)
    return pb_err_set(err, PB_EIO, "cannot create ZeroMQ sockets: %s",
                      zmq_strerror(zmq_errno()));
  int64_t maxmsg = PB_MSG_MAX_BYTES;
  int rc = 0;
  const char *d = "work socket";
  if (rc == 0) rc = sockopt_int(w->dealer, ZMQ_SNDHWM, c->net.hwm, d, err);
  if (rc == 0) rc = sockopt_int(w->dealer, ZMQ_RCVHWM, c->net.hwm, d, err);
  if (rc == 0 &&
      zmq_setsockopt(w->dealer, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) != 0)
    rc = pb_err_set(err, PB_EIO, "work socket: ZMQ_MAXMSGSIZE: %s",
                    zmq_strerror(zmq_errno()));
  if (rc == 0)
    rc = sockopt_int(w->dealer, ZMQ_LINGER, PB_WORKER_LINGER_MS, d, err);
  /* Queue requests while the learner is away: it may be starting. */
  if (rc == 0) rc = sockopt_int(w->dealer, ZMQ_IMMEDIATE, 0, d, err);
  if (rc == 0) rc = sockopt_int(w->dealer, ZMQ_RECONNECT_IVL, 100, d, err);
  if (rc == 0) rc = sockopt_int(w->dealer, ZMQ_RECONNECT_IVL_MAX, 2000, d, err);

  /* Announcements are tiny; nothing larger is ours. */
  int64_t maxann = 1 << 16;
  const char *s = "announcement socket";
  if (rc == 0 && zmq_setsockopt(w->sub, ZMQ_SUBSCRIBE, "", 0) != 0)
    rc = pb_err_set(err, PB_EIO, "%s: ZMQ_SUBSCRIBE: %s", s,
                    zmq_strerror(zmq_errno()));
  if (rc == 0) rc = sockopt_int(w->sub, ZMQ_RCVHWM, c->net.hwm, s, err);
  if (rc == 0 &&
      zmq_setsockopt(w->sub, ZMQ_MAXMSGSIZE, &maxann, sizeof maxann) != 0)
    rc = pb_err_set(err, PB_EIO, "%s: ZMQ_MAXMSGSIZE: %s", s,
                    zmq_strerror(zmq_errno()));
  if (rc == 0) rc = sockopt_int(w->sub, ZMQ_LINGER, 0, s, err);
  if (rc == 0) rc = sockopt_int(w->sub, ZMQ_RECONNECT_IVL, 100, s, err);
  if (rc == 0) rc = sockopt_int(w->sub, ZMQ_RECONNECT_IVL_MAX, 2000, s, err);
  if (rc == 0) { /* CURVE (net.curve_dir): talk only to the pinned learner */
    void *const socks[2] = {w->dealer, w->sub};
    rc = pb_curve_client_dir(c->net.curve_dir, socks, 2, err);
  }
  if (rc != 0) return rc;

  if (zmq_connect(w->dealer, c->net.work_endpoint) != 0)
    return pb_err_set(err, PB_EIO,
                      "cannot connect to net.work_endpoint '%s': %s",
                      c->net.work_endpoint, zmq_strerror(zmq_errno()));
  if (zmq_connect(w->sub, c->net.pub_endpoint) != 0)
    return pb_err_set(err, PB_EIO,
                      "cannot connect to net.pub_endpoint '%s': %s",
                      c->net.pub_endpoint, zmq_strerror(zmq_errno()));
  return 0;
}

/* The device of this worker's role (pb_config_device), and the key that
 * chose it. */
static const char *role_device(const pb_worker_t *w, const char **key) {
  return pb_config_device(&w->cfg,
                          w->role == PB_ROLE_ACTOR ? PB_DEVICE_ACTOR
                                                   : PB_DEVICE_SEARCHER,
                          key);
}

/* Creates a throwaway network on the role's device, so that a device that
 * cannot work ("cuda" without CUDA) is reported at startup rather than at
 * the first weights, and so that the log names the device "auto" chose. */
static int probe_device(pb_worker_t *w, pb_err_t *err) {
  const pb_game_t *g = pb_game_by_name(w->cfg.game);
  pb_nn_spec_t spec;
  pb_model_spec(&w->cfg, g, 0, &spec);
  pb_err_t e;
  pb_err_clear(&e);
  const char *key, *dev = role_device(w, &key);
  pb_nn_t *nn = pb_nn_new(&spec, NULL, dev, 0, &e);
  if (nn == NULL)
    return pb_err_set(err, e.code, "%s '%s' (the %s): %s", key, dev,
                      pb_msg_role_name(w->role), e.msg);
  snprintf(w->device, sizeof w->device, "%s", pb_nn_device(nn));
  pb_nn_destroy(&nn);
  return 0;
}

pb_worker_t *pb_worker_new(const pb_config_t *cfg, int role, const char *id,
                           pb_log_t *log, pb_err_t *err) {
  if (cfg == NULL) {
    pb_err_set(err, PB_EINVAL, "worker: config is NULL");
    return NULL;
  }
  if (role != PB_ROLE_ACTOR && role != PB_ROLE_SEARCHER) {
    pb_err_set(err, PB_EINVAL, "worker: role %d is neither actor nor searcher",
               role);
    return NULL;
  }
  if (id != NULL && pb_worker_id_check(id, err) != 0) return NULL;
  if (pb_config_check(cfg, err) != 0) return NULL;
  pb_worker_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    pb_err_set(err, PB_ENOMEM, "worker: out of memory");
    return NULL;
  }
  w->cfg = *cfg;
  w->role = role;
  w->log = log;
  if (id != NULL)
    snprintf(w->id, sizeof w->id, "%s", id);
  else
    pb_worker_default_id(role, w->id, sizeof w->id);
  hostname_of(w->host, sizeof w->host);
  pb_episodes_init(&w->eps);
  pb_nn_set_threads(cfg->model.threads);
  if (probe_device(w, err) != 0 || setup_sockets(w, err) != 0) {
    pb_worker_destroy(&w);
    return NULL;
  }
  /* Threads of game or tree work: one on the CPU (a process per core does
   * better there), as many as the process may use on a GPU, which one
   * thread cannot keep busy. */
  int want = role == PB_ROLE_ACTOR ? cfg->train.selfplay_threads
                                   : cfg->search.threads;
  if (want == 0) {
    cpu_set_t set;
    want = 1;
    if (strcmp(w->device, "cuda") == 0 &&
        sched_getaffinity(0, sizeof set, &set) == 0)
      want = CPU_COUNT(&set);
  }
  w->threads = want < 1 ? 1
               : want > PB_BATCHER_MAX_THREADS ? PB_BATCHER_MAX_THREADS
                                               : want;
  return w;
}

void pb_worker_destroy(pb_worker_t **wp) {
  if (wp == NULL || *wp == NULL) return;
  pb_worker_t *w = *wp;
  /* Only a Bye is worth waiting for; an unanswered Hello or WorkRequest
   * to a learner that is not there would only delay the exit. */
  int linger = w->said_bye ? PB_WORKER_LINGER_MS : 0;
  if (w->dealer) {
    zmq_setsockopt(w->dealer, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(w->dealer);
  }
  if (w->sub) zmq_close(w->sub);
  if (w->zctx) zmq_ctx_term(w->zctx);
  pb_neteval_destroy(&w->ne);
  pb_azplay_destroy(&w->az);
  pb_pveval_destroy(&w->pve);
  for (int t = 0; t < PB_BATCHER_MAX_THREADS; t++) {
    pb_selfplay_destroy(&w->sp[t]);
    pb_beam_destroy(&w->beam[t]);
    pb_episodes_free(&w->sp_eps[t]);
  }
  pb_batcher_destroy(&w->batcher);
  pb_nn_destroy(&w->v.nn);
  pb_nn_destroy(&w->q.nn);
  pb_episodes_free(&w->eps);
  free(w->mep);
  free(w->qout);
  pb_msg_buf_free(&w->req);
  pb_msg_buf_free(&w->out);
  free(w);
  *wp = NULL;
}

const char *pb_worker_id(const pb_worker_t *w) {
  return w->id;
}

void pb_worker_stats(const pb_worker_t *w, pb_worker_stats_t *st) {
  *st = w->st;
}

/* ---- sending ---------------------------------------------------------- */

static int stop_requested(const pb_worker_t *w) {
  return w->stopping || (w->stop != NULL && *w->stop);
}

static void msg_init(const pb_worker_t *w, pb_msg_t *m, int type) {
  pb_msg_init(m, type, w->joined ? w->run_id : "", w->joined ? w->g->id : 0,
              w->id);
}

/* Sends an encoded message on the DEALER. At the high-water mark (the
 * learner is gone or not keeping up) a patient send waits, looking at the
 * stop flag, up to lease_ms and then gives the message up with a warning;
 * an impatient one (heartbeats) gives up at once. The learner's lease and
 * our resend recover from a lost message, and a stuck learner must not
 * keep us from exiting. Returns 0 or PB_EIO for a socket failure. */
static int send_bytes(pb_worker_t *w, const pb_msg_buf_t *b, const char *what,
                      int patient, pb_err_t *err) {
  double give_up = pb_now() + w->cfg.net.lease_ms / 1000.0;
  for (;;) {
    if (zmq_send(w->dealer, b->data, b->len, ZMQ_DONTWAIT) >= 0) {
      w->last_send = pb_now();
      return 0;
    }
    int e = zmq_errno();
    if (e != EAGAIN && e != EINTR)
      return pb_err_set(err, PB_EIO, "sending %s: %s", what, zmq_strerror(e));
    if (!patient) {
      pb_log_debug(w->log, "%s not sent: the send queue is full", what);
      return 0;
    }
    if (stop_requested(w) || pb_now() >= give_up) {
      pb_log_warn(w->log,
                  "could not send %s (%zu bytes): the learner is not "
                  "taking messages; dropped it",
                  what, b->len);
      return 0;
    }
    zmq_pollitem_t it = {w->dealer, 0, ZMQ_POLLOUT, 0};
    if (zmq_poll(&it, 1, PB_WORKER_POLL_MAX_MS) < 0 && zmq_errno() != EINTR)
      return pb_err_set(err, PB_EIO, "polling the work socket: %s",
                        zmq_strerror(zmq_errno()));
  }
}

/* Encodes *m into b and sends it. An encode failure is our own bug (or an
 * item too large for one message): logged, and PB_EINVAL returned. */
static int encode_send(pb_worker_t *w, const pb_msg_t *m, pb_msg_buf_t *b,
                       pb_err_t *err) {
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_msg_encode_buf(m, b, &e) != 0) {
    pb_log_error(w->log, "cannot encode %s: %s", pb_msg_type_name(m->type),
                 e.msg);
    return pb_err_set(err, e.code, "encoding %s: %s", pb_msg_type_name(m->type),
                      e.msg);
  }
  return send_bytes(w, b, pb_msg_type_name(m->type),
                    m->type != PB_MSG_HEARTBEAT, err);
}

/* Heartbeat naming the item in hand, or none when idle. Best effort: a
 * failure is logged, never fatal by itself. */
static void heartbeat(pb_worker_t *w) {
  pb_msg_t m;
  msg_init(w, &m, PB_MSG_HEARTBEAT);
  if (w->busy) {
    m.heartbeat.item_ids = &w->item_id;
    m.heartbeat.n_item_ids = 1;
  }
  pb_err_t e;
  pb_err_clear(&e);
  if (encode_send(w, &m, &w->out, &e) != 0)
    pb_log_warn(w->log, "heartbeat not sent: %s", e.msg);
  if (w->busy) w->last_item_hb = pb_now();
}

/* Seconds until the next heartbeat is due (<= 0: now). Only a joined
 * worker has a run id to put in one. */
static double heartbeat_due(const pb_worker_t *w, double now) {
  if (!w->joined) return 1e9;
  if (w->busy) return w->last_item_hb + w->item_hb_s - now;
  return w->last_send + w->cfg.net.heartbeat_ms / 1000.0 - now;
}

/* ---- receiving -------------------------------------------------------- */

/* Reads one message from sock without blocking and decodes it with what a
 * message must carry now (any run before joining, ours after). Returns 1
 * with *m filled (the caller frees it), 0 when there was nothing to read
 * or the message was dropped (logged), or PB_EIO. A Reject PB_EMISMATCH
 * from another run is returned too: it is how a restarted learner says
 * that we must Hello again. */
/* Warnings caused by a peer's bytes are limited to 20 a second, so that a
 * flood cannot fill the disk. */
static int may_warn(pb_worker_t *w) {
  double t = pb_now();
  if (t - w->warn_t >= 1.0) {
    w->warn_t = t;
    w->warn_left = 20;
  }
  return w->warn_left-- > 0;
}

static int recv_msg(pb_worker_t *w, void *sock, pb_msg_t *m, pb_err_t *err) {
  const char *where = sock == w->sub ? "announcement" : "work";
  zmq_msg_t z;
  zmq_msg_init(&z);
  if (zmq_msg_recv(&z, sock, ZMQ_DONTWAIT) < 0) {
    int e = zmq_errno();
    zmq_msg_close(&z);
    if (e == EAGAIN || e == EINTR) return 0;
    return pb_err_set(err, PB_EIO, "receiving on the %s socket: %s", where,
                      zmq_strerror(e));
  }
  if (zmq_msg_more(&z)) {
    /* Ours are single frames: drop the whole multipart message. */
    size_t parts = 1;
    do {
      zmq_msg_close(&z);
      zmq_msg_init(&z);
      if (zmq_msg_recv(&z, sock, ZMQ_DONTWAIT) < 0) break;
      parts++;
    } while (zmq_msg_more(&z));
    zmq_msg_close(&z);
    w->st.bad_msgs++;
    if (may_warn(w))
      pb_log_warn(w->log,
                  "dropped a %zu-part message on the %s socket "
                  "(expected one frame)",
                  parts, where);
    return 0;
  }
  const uint8_t *data = zmq_msg_data(&z);
  size_t len = zmq_msg_size(&z);
  pb_msg_expect_t ex = {w->joined ? w->run_id : NULL, w->joined ? w->g->id : 0};
  pb_err_t e;
  pb_err_clear(&e);
  int rc = pb_msg_decode(data, len, &ex, m, &e);
  if (rc == PB_EMISMATCH && w->joined && sock == w->dealer) {
    pb_msg_t any;
    if (pb_msg_decode(data, len, NULL, &any, NULL) == 0 &&
        any.type == PB_MSG_REJECT && any.reject.code == PB_EMISMATCH) {
      zmq_msg_close(&z);
      *m = any;
      return 1;
    }
    pb_msg_free(&any);
  }
  zmq_msg_close(&z);
  if (rc != 0) {
    w->st.bad_msgs++;
    if (may_warn(w))
      pb_log_warn(w->log,
                  "dropped a %zu-byte message on the %s socket from "
                  "'%s': %s: %s",
                  len, where,
                  m->header.sender_id[0] ? m->header.sender_id : "?",
                  pb_err_name(rc), e.msg);
    pb_msg_free(m);
    return 0;
  }
  return 1;
}

/* Reads every announcement waiting on the SUB socket. Sets *woke when one
 * arrived. */
static int drain_announcements(pb_worker_t *w, int *woke, pb_err_t *err) {
  for (;;) {
    pb_msg_t m;
    int rc = recv_msg(w, w->sub, &m, err);
    if (rc <= 0) return rc;
    if (m.type == PB_MSG_ANNOUNCE) {
      pb_log_debug(w->log,
                   "announce: version %" PRIu64
                   ", iteration %u, "
                   "phase %d",
                   m.announce.version, m.announce.iteration, m.announce.phase);
      if (m.announce.phase == PB_PHASE_STOPPING && !w->stopping) {
        pb_log_info(w->log,
                    "the learner announces STOPPING (version %" PRIu64 ")",
                    m.announce.version);
        w->stopping = 1;
      }
      if (woke) *woke = 1;
    } else {
      pb_log_debug(w->log, "ignored a %s on the announcement socket",
                   pb_msg_type_name(m.type));
    }
    pb_msg_free(&m);
  }
}

/* The one place that waits on the sockets. Waits for a message whose type
 * is in the bit set `want` on the DEALER, until `deadline` (pb_now()
 * seconds; 0: none). Meanwhile it sends heartbeats when due, handles
 * announcements, drops (at debug level) replies nobody waits for, and with
 * WAIT_RESEND sends w->req again after lease_ms without a reply. Returns 0
 * with *m filled (the caller frees it), W_TIMEOUT, W_WAKE (an Announce,
 * with WAIT_WAKE), W_STOP, or PB_EIO. */
static int wait_for(pb_worker_t *w, unsigned want, double deadline, int flags,
                    pb_msg_t *m, pb_err_t *err) {
  const double lease = w->cfg.net.lease_ms / 1000.0;
  double sent_at = pb_now();
  for (;;) {
    if (stop_requested(w)) return W_STOP;
    double now = pb_now();
    if (deadline > 0 && now >= deadline) return W_TIMEOUT;
    if ((flags & WAIT_RESEND) && now - sent_at >= lease) {
      w->st.resends++;
      pb_log_warn(w->log,
                  "no reply to %s within %d ms: sending it again "
                  "(the learner may have restarted)",
                  w->req_name, w->cfg.net.lease_ms);
      int rc = send_bytes(w, &w->req, w->req_name, 1, err);
      if (rc != 0) return rc;
      sent_at = now;
    }
    if (heartbeat_due(w, now) <= 0) heartbeat(w);

    double wait = PB_WORKER_POLL_MAX_MS / 1000.0;
    double hb = heartbeat_due(w, now);
    if (hb < wait) wait = hb;
    if (deadline > 0 && deadline - now < wait) wait = deadline - now;
    if ((flags & WAIT_RESEND) && sent_at + lease - now < wait)
      wait = sent_at + lease - now;
    long ms = wait > 0 ? (long)(wait * 1000.0) + 1 : 0;
    zmq_pollitem_t it[2] = {{w->dealer, 0, ZMQ_POLLIN, 0},
                            {w->sub, 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(it, 2, ms) < 0) {
      if (zmq_errno() == EINTR) continue;
      return pb_err_set(err, PB_EIO, "polling the sockets: %s",
                        zmq_strerror(zmq_errno()));
    }
    int woke = 0;
    if (it[1].revents & ZMQ_POLLIN) {
      int rc = drain_announcements(w, &woke, err);
      if (rc < 0) return rc;
      if (stop_requested(w)) return W_STOP;
    }
    if (it[0].revents & ZMQ_POLLIN) {
      for (;;) {
        int rc = recv_msg(w, w->dealer, m, err);
        if (rc < 0) return rc;
        if (rc == 0) break;
        if (want & BIT(m->type)) return 0;
        pb_log_debug(w->log, "ignored a %s from '%s' (nobody waits for it)",
                     pb_msg_type_name(m->type), m->header.sender_id);
        pb_msg_free(m);
      }
    }
    if (woke && (flags & WAIT_WAKE)) return W_WAKE;
  }
}

/* Encodes *req into w->req, sends it, and waits for a reply of a type in
 * `want`, resending after lease_ms of silence. Returns as wait_for. */
static int request(pb_worker_t *w, const pb_msg_t *req, unsigned want,
                   pb_msg_t *reply, pb_err_t *err) {
  w->req_name = pb_msg_type_name(req->type);
  int rc = encode_send(w, req, &w->req, err);
  if (rc != 0) return rc;
  return wait_for(w, want, 0, WAIT_RESEND, reply, err);
}

/* Sleeps `seconds` while still heartbeating and listening. */
static int pause_for(pb_worker_t *w, double seconds, pb_err_t *err) {
  pb_msg_t m;
  int rc = wait_for(w, 0, pb_now() + seconds, 0, &m, err);
  return rc == W_TIMEOUT ? 0 : rc;
}

/* ---- 1. join ---------------------------------------------------------- */

/* Takes the settings of an accepted HelloReply whose header is h. Engines
 * that depend on the game or on the learner's settings are rebuilt lazily;
 * networks of another run are forgotten (their versions mean nothing now),
 * but kept allocated for reuse when the spec is the same. */
static int adopt_run(pb_worker_t *w, const pb_msg_header_t *h,
                     const pb_msg_hello_reply_t *r, pb_err_t *err) {
  const pb_game_t *g = pb_game_by_id(h->game_id);
  if (g == NULL) /* decode guarantees a known game */
    return pb_err_set(err, PB_EPROTO, "HelloReply names game %d", h->game_id);
  int same_run = w->g == g && strcmp(w->run_id, h->run_id) == 0;
  if (!same_run) {
    w->v.have = w->q.have = 0;
    pb_neteval_destroy(&w->ne); /* its batch bound follows the run's E */
  }
  if (w->g != g) {
    for (int t = 0; t < w->threads; t++) pb_beam_destroy(&w->beam[t]);
    pb_batcher_destroy(&w->batcher);
    pb_nn_destroy(&w->v.nn);
    pb_nn_destroy(&w->q.nn);
  }
  if (w->g != g || r->max_turns != w->hello.max_turns ||
      r->eps != w->hello.eps || r->alpha != w->hello.alpha ||
      r->temperature != w->hello.temperature ||
      r->algorithm != w->hello.algorithm ||
      r->simulations != w->hello.simulations ||
      r->c_puct != w->hello.c_puct || r->temp_moves != w->hello.temp_moves) {
    for (int t = 0; t < w->threads; t++) pb_selfplay_destroy(&w->sp[t]);
    pb_azplay_destroy(&w->az);
    pb_pveval_destroy(&w->pve);
  }
  if (w->g != g || r->algorithm != w->hello.algorithm) {
    /* V and Q of another shape (a PROBS Q or a policy+value network). */
    w->v.have = w->q.have = 0;
    if (w->ne != NULL) pb_neteval_bind(w->ne, NULL, NULL);
    pb_nn_destroy(&w->v.nn);
    pb_nn_destroy(&w->q.nn);
  }
  if (strcmp(w->cfg.game, g->name) != 0)
    pb_log_warn(w->log,
                "the learner plays %s, our config says %s: following "
                "the learner",
                g->name, w->cfg.game);
  w->g = g;
  snprintf(w->run_id, sizeof w->run_id, "%s", h->run_id);
  w->hello = *r;
  if (w->ne == NULL) {
    /* The batch bound is the learner's (same formula, its E), so that
     * network calls, and with them the floats, match an in-process run. */
    const pb_config_t *c = &w->cfg;
    int E = r->expansions > 0 ? (int)r->expansions : c->search.expansions;
    w->ne = pb_neteval_new(g,
                           pb_learn_eval_batch(c->search.parallel, E,
                                               g->num_actions,
                                               c->train.selfplay_parallel),
                           (uint32_t)c->search.cache_entries, err);
    if (w->ne == NULL) return err && err->code ? err->code : PB_ENOMEM;
  }
  w->joined = 1;
  w->st.joins++;
  pb_log_info(w->log,
              "hello accepted: run '%s', game %s, model version %" PRIu64
              ", E=%u M=%u max_turns=%u eps=%g alpha=%g%s%s",
              w->run_id, g->name, r->version, r->expansions, r->max_depth,
              r->max_turns, r->eps, r->alpha, r->message[0] ? ": " : "",
              r->message);
  return 0;
}

static int join(pb_worker_t *w, pb_err_t *err) {
  w->joined = 0;
  for (;;) {
    pb_msg_t m, r;
    msg_init(w, &m, PB_MSG_HELLO);
    m.hello.role = w->role;
    m.hello.threads = (uint32_t)w->cfg.model.threads;
    m.hello.pid = (uint32_t)getpid();
    snprintf(m.hello.hostname, sizeof m.hello.hostname, "%s", w->host);
    int rc = request(w, &m, BIT(PB_MSG_HELLO_REPLY), &r, err);
    if (rc != 0) return rc;
    if (r.hello_reply.accepted) {
      rc = adopt_run(w, &r.header, &r.hello_reply, err);
      pb_msg_free(&r);
      return rc;
    }
    pb_log_warn(w->log,
                "the learner (run '%s') refused us: %s; trying again "
                "in %.0f s",
                r.header.run_id, r.hello_reply.message, PB_WORKER_RETRY_S);
    pb_msg_free(&r);
    if ((rc = pause_for(w, PB_WORKER_RETRY_S, err)) != 0) return rc;
  }
}

/* ---- 2. ask ----------------------------------------------------------- */

/* Gets the next work item into *item (the caller frees it). Returns 0,
 * W_REJOIN, W_STOP or an error. */
static int ask(pb_worker_t *w, pb_msg_t *item, pb_err_t *err) {
  const unsigned want =
      BIT(PB_MSG_WORK_ITEM) | BIT(PB_MSG_NO_WORK) | BIT(PB_MSG_REJECT);
  for (;;) {
    pb_msg_t m;
    msg_init(w, &m, PB_MSG_WORK_REQUEST);
    m.work_request.role = w->role;
    m.work_request.capacity = 0; /* items are sized by the learner */
    int rc = request(w, &m, want, item, err);
    if (rc != 0) return rc;
    if (item->type == PB_MSG_NO_WORK) {
      /* Floor the wait so that a learner saying 0 is not hammered. */
      uint32_t ms = item->no_work.retry_ms > 10 ? item->no_work.retry_ms : 10;
      pb_msg_free(item);
      pb_log_debug(w->log,
                   "no work: asking again in %u ms or at the next "
                   "announcement",
                   ms);
      /* A late WorkItem (the answer to a resent request) is as good. */
      rc = wait_for(w, BIT(PB_MSG_WORK_ITEM) | BIT(PB_MSG_REJECT),
                    pb_now() + ms / 1000.0, WAIT_WAKE, item, err);
      if (rc == W_TIMEOUT || rc == W_WAKE) continue;
      if (rc != 0) return rc;
    }
    if (item->type == PB_MSG_REJECT) {
      int code = item->reject.code;
      if (code == PB_EMISMATCH) {
        pb_log_info(w->log, "the learner rejects our run (%s): joining again",
                    item->reject.message);
        pb_msg_free(item);
        return W_REJOIN;
      }
      pb_log_warn(w->log,
                  "the learner rejected a request: %s: %s; asking "
                  "again in %.0f s",
                  pb_err_name(code), item->reject.message, PB_WORKER_RETRY_S);
      pb_msg_free(item);
      if ((rc = pause_for(w, PB_WORKER_RETRY_S, err)) != 0) return rc;
      continue;
    }
    return 0; /* a WorkItem */
  }
}

/* ---- 3. weights ------------------------------------------------------- */

static int have(const net_t *n, uint64_t version) {
  return n->have && n->version == version;
}

/* Loads one weights buffer into n (V when q == 0), building the network
 * from the spec inside when there is none or the spec changed. Returns 0,
 * W_DROP for weights we cannot use (logged; n keeps the version it held
 * unless it had to be rebuilt), or an error that retrying cannot cure (the
 * device, memory). */
static int load_net(pb_worker_t *w, net_t *n, int q, uint64_t version,
                    const uint8_t *buf, size_t len, pb_err_t *err) {
  const char *name = q ? "Q" : "V";
  const pb_game_t *g = w->g;
  pb_nn_spec_t spec;
  pb_err_t e;
  pb_err_clear(&e);
  if (len == 0) {
    pb_log_warn(w->log, "the learner sent no %s weights for version %" PRIu64,
                name, version);
    return W_DROP;
  }
  if (pb_nn_weights_peek(buf, len, &spec, NULL, &e) != 0) {
    pb_log_warn(w->log, "%s weights version %" PRIu64 " are unusable: %s", name,
                version, e.msg);
    return W_DROP;
  }
  /* The evaluator trusts the shapes: a peer's spec must fit the game (and
   * in an alphazero run, Q is the policy+value network). */
  const int az = w->hello.algorithm == PB_ALGO_ALPHAZERO;
  int outputs = q ? g->num_actions + (az ? 1 : 0) : 1;
  int head = q ? (az ? PB_NN_HEAD_PV : PB_NN_HEAD_LINEAR) : PB_NN_HEAD_TANH;
  if (spec.planes != g->planes || spec.height != g->height ||
      spec.width != g->width || spec.outputs != outputs || spec.head != head) {
    pb_log_warn(w->log,
                "%s weights version %" PRIu64
                " do not fit %s: input "
                "%dx%dx%d, %d outputs, head %d (want %dx%dx%d, %d, %d)",
                name, version, g->name, spec.planes, spec.height, spec.width,
                spec.outputs, spec.head, g->planes, g->height, g->width,
                outputs, head);
    return W_DROP;
  }
  double t0 = pb_now();
  if (n->nn == NULL || memcmp(pb_nn_spec(n->nn), &spec, sizeof spec) != 0) {
    pb_neteval_bind(w->ne, NULL, NULL); /* it must not hold a freed net */
    n->have = 0;
    pb_nn_destroy(&n->nn);
    n->nn = pb_nn_new(&spec, NULL, w->device, 0, &e); /* probed at start */
    if (n->nn == NULL) {
      if (e.code == PB_EINVAL) {
        pb_log_warn(w->log, "%s weights version %" PRIu64 ": %s", name, version,
                    e.msg);
        return W_DROP;
      }
      return pb_err_set(err, e.code, "cannot create the %s network on '%s': %s",
                        name, w->device, e.msg);
    }
  }
  if (pb_nn_weights_load(n->nn, buf, len, NULL, &e) != 0) {
    if (e.code == PB_ENN || e.code == PB_ENOMEM)
      return pb_err_set(err, e.code, "loading %s weights: %s", name, e.msg);
    pb_log_warn(w->log, "%s weights version %" PRIu64 " refused: %s", name,
                version, e.msg);
    return W_DROP;
  }
  n->version = version;
  n->have = 1;
  pb_log_info(w->log,
              "weights loaded: %s version %" PRIu64
              ", %ld parameters, "
              "%zu bytes, device %s, %.3f s",
              name, version, pb_nn_param_count(n->nn), len, pb_nn_device(n->nn),
              pb_now() - t0);
  return 0;
}

/* Fetches `which` (PB_WHICH_V or PB_WHICH_Q) of `version` and loads it. */
static int fetch(pb_worker_t *w, int which, uint64_t version, pb_err_t *err) {
  pb_msg_t m, r;
  msg_init(w, &m, PB_MSG_WEIGHTS_REQUEST);
  m.weights_request.version = version;
  m.weights_request.which = which;
  int rc = request(w, &m, BIT(PB_MSG_WEIGHTS) | BIT(PB_MSG_REJECT), &r, err);
  /* A Weights reply to an earlier request of ours may come first. */
  while (rc == 0 && r.type == PB_MSG_WEIGHTS && r.weights.version != version) {
    pb_log_debug(w->log,
                 "ignored weights version %" PRIu64 " (want %" PRIu64 ")",
                 r.weights.version, version);
    pb_msg_free(&r);
    rc = wait_for(w, BIT(PB_MSG_WEIGHTS) | BIT(PB_MSG_REJECT), 0, WAIT_RESEND,
                  &r, err);
  }
  if (rc != 0) return rc;
  if (r.type == PB_MSG_REJECT) {
    rc = r.reject.code == PB_EMISMATCH ? W_REJOIN : W_DROP;
    pb_log_warn(w->log,
                "the learner refused weights version %" PRIu64
                ": "
                "%s: %s; %s",
                version, pb_err_name(r.reject.code), r.reject.message,
                rc == W_REJOIN ? "joining again" : "dropping the item");
    pb_msg_free(&r);
    return rc;
  }
  if (which & PB_WHICH_V)
    rc = load_net(w, &w->v, 0, version, r.weights.v_weights, r.weights.v_len,
                  err);
  if (rc == 0 && (which & PB_WHICH_Q))
    rc = load_net(w, &w->q, 1, version, r.weights.q_weights, r.weights.q_len,
                  err);
  pb_msg_free(&r);
  return rc;
}

/* Makes sure V of v_version (if need_v) and Q of q_version are loaded and
 * bound to the evaluator. */
static int ensure_weights(pb_worker_t *w, int need_v, uint64_t v_version,
                          uint64_t q_version, pb_err_t *err) {
  int miss_v = need_v && !have(&w->v, v_version);
  int miss_q = !have(&w->q, q_version);
  /* One request per network, as the protocol has it: V and Q of one item
   * are of different versions anyway (V_k searches with Q_{k-1}). */
  int rc = 0;
  if (miss_v) rc = fetch(w, PB_WHICH_V, v_version, err);
  if (rc == 0 && miss_q) rc = fetch(w, PB_WHICH_Q, q_version, err);
  /* Rebind whenever anything was loaded or dropped: it clears the caches
   * and never leaves the evaluator pointing at a network it should not use. */
  if (miss_v || miss_q)
    pb_neteval_bind(w->ne, w->v.have ? w->v.nn : NULL,
                    w->q.have ? w->q.nn : NULL);
  return rc;
}

/* ---- 4. work: the evaluator that heartbeats ---------------------------- */

/* Runs between network batches: stop flag, heartbeat, announcements. */
static int tick(pb_worker_t *w, pb_err_t *err) {
  if (stop_requested(w)) return pb_err_set(err, PB_EINTR, "stop requested");
  if (heartbeat_due(w, pb_now()) <= 0) {
    pb_err_t e;
    pb_err_clear(&e);
    if (drain_announcements(w, NULL, &e) < 0) pb_log_warn(w->log, "%s", e.msg);
    if (stop_requested(w)) return pb_err_set(err, PB_EINTR, "stop requested");
    heartbeat(w);
  }
  return 0;
}

static int ev_value(void *ctx, const pb_state_t *s, int n, float *out,
                    pb_err_t *err) {
  pb_worker_t *w = ctx;
  int rc = tick(w, err);
  if (rc != 0) return rc;
  pb_evalfn_t f = pb_neteval_fn(w->ne);
  return f.value(f.ctx, s, n, out, err);
}

static int ev_qvalues(void *ctx, const pb_state_t *s, int n, float *out,
                      pb_err_t *err) {
  pb_worker_t *w = ctx;
  int rc = tick(w, err);
  if (rc != 0) return rc;
  pb_evalfn_t f = pb_neteval_fn(w->ne);
  return f.qvalues(f.ctx, s, n, out, err);
}

/* What a failed engine run means: a stop, a bad item (drop it), or a
 * failure of this process (the network backend, memory). */
static int engine_failed(pb_worker_t *w, int rc, uint64_t item_id,
                         const pb_err_t *e, pb_err_t *err) {
  if (rc == PB_EINTR) {
    pb_log_info(w->log, "abandoning item %" PRIu64 " to stop", item_id);
    w->st.dropped++;
    return W_STOP;
  }
  if (rc == PB_ENN || rc == PB_ENOMEM)
    return pb_err_set(err, rc, "item %" PRIu64 ": %s", item_id, e->msg);
  pb_log_warn(w->log, "item %" PRIu64 " failed: %s: %s; dropping it", item_id,
              pb_err_name(rc), e->msg);
  return W_DROP;
}

static void begin_item(pb_worker_t *w, const pb_msg_work_item_t *it) {
  w->busy = 1;
  w->item_id = it->item_id;
  /* Renew the lease well within its length even if our heartbeat setting
   * is longer than what the learner granted. */
  double hb = w->cfg.net.heartbeat_ms / 1000.0;
  double lease_half = it->lease_ms / 2000.0;
  w->item_hb_s = hb < lease_half ? hb : lease_half;
  w->last_item_hb = pb_now();
}

/* The batcher of a worker with several threads, made for the run's game. */
static int ensure_batcher(pb_worker_t *w, pb_err_t *err) {
  if (w->threads <= 1 || w->batcher != NULL) return 0;
  w->batcher = pb_batcher_new(w->g, w->threads, err);
  return w->batcher ? 0 : PB_ENOMEM;
}

/* Member m's share [lo, hi) of n things split over `members`. */
static void share_of(size_t n, int members, int m, size_t *lo, size_t *hi) {
  *lo = n * (size_t)m / (size_t)members;
  *hi = n * (size_t)(m + 1) / (size_t)members;
}

typedef struct {
  pb_worker_t *w;
  const pb_msg_work_item_t *it;
  int members;
} job_t;

/* One thread's episodes: numbered from its first one, so that the item
 * plays the same episodes whatever the thread count. */
static int selfplay_member(void *ctx, int m, const pb_evalfn_t *ev,
                           pb_err_t *err) {
  job_t *j = ctx;
  size_t lo, hi;
  share_of(j->it->episodes, j->members, m, &lo, &hi);
  pb_episodes_t *out = m == 0 ? &j->w->eps : &j->w->sp_eps[m];
  pb_episodes_clear(out);
  if (hi == lo) return 0;
  return pb_selfplay_run(j->w->sp[m], (int)(hi - lo), j->it->seed, lo, ev,
                         j->it->q_version, out, err);
}

/* The policy+value network for MCTS, with the heartbeat between calls. */
static int ev_pv(void *ctx, const pb_state_t *s, int n, float *policy,
                 float *value, pb_err_t *err) {
  pb_worker_t *w = ctx;
  int rc = tick(w, err);
  if (rc != 0) return rc;
  pb_mcts_evalfn_t f = pb_pveval_fn(w->pve);
  return f.eval(f.ctx, s, n, policy, value, err);
}

static int send_episodes(pb_worker_t *w, const pb_msg_work_item_t *it,
                         double dt, pb_err_t *err);

/* AlphaZero self-play: the item's episodes with MCTS on one thread (the
 * games of the item search together, one network call per round). */
static int do_azplay(pb_worker_t *w, const pb_msg_work_item_t *it,
                     pb_err_t *err) {
  const pb_game_t *g = w->g;
  if (w->az == NULL) {
    uint32_t mt = w->hello.max_turns;
    if (mt > (uint32_t)g->max_turns) mt = (uint32_t)g->max_turns;
    double alpha = w->hello.alpha > 0.0 ? w->hello.alpha : 1.0;
    pb_azplay_opts_t o = {w->cfg.train.selfplay_parallel, (int)mt,
                          (int)w->hello.simulations, w->hello.c_puct,
                          w->hello.eps, alpha, (int)w->hello.temp_moves};
    pb_err_t e;
    pb_err_clear(&e);
    w->az = pb_azplay_new(g, &o, &e);
    if (w->az != NULL && w->pve == NULL)
      w->pve = pb_pveval_new(g, w->cfg.train.selfplay_parallel, &e);
    if (w->az == NULL || w->pve == NULL)
      return pb_err_set(err, e.code,
                        "the learner's alphazero settings (simulations %u, "
                        "c_puct %g, eps %g, alpha %g) are refused: %s",
                        w->hello.simulations, w->hello.c_puct, w->hello.eps,
                        w->hello.alpha, e.msg);
    if (w->threads > 1)
      pb_log_info(w->log, "alphazero self-play runs on one thread (%d asked)",
                  w->threads);
  }
  int rc = ensure_weights(w, 0, 0, it->q_version, err);
  if (rc != 0) return rc;
  pb_err_t e;
  pb_err_clear(&e);
  if ((rc = pb_pveval_bind(w->pve, w->q.nn, &e)) != 0)
    return engine_failed(w, rc, it->item_id, &e, err);
  pb_episodes_clear(&w->eps);
  pb_mcts_evalfn_t fn = {ev_pv, w};
  double t0 = pb_now();
  rc = pb_azplay_run(w->az, (int)it->episodes, it->seed, 0, &fn,
                     it->q_version, &w->eps, &e);
  if (rc != 0) return engine_failed(w, rc, it->item_id, &e, err);
  return send_episodes(w, it, pb_now() - t0, err);
}

static int do_selfplay(pb_worker_t *w, const pb_msg_work_item_t *it,
                       pb_err_t *err) {
  const pb_game_t *g = w->g;
  if (w->hello.algorithm == PB_ALGO_ALPHAZERO) return do_azplay(w, it, err);
  int members = w->threads < (int)it->episodes ? w->threads : (int)it->episodes;
  if (members < 1) members = 1;
  for (int t = 0; t < members; t++) {
    if (w->sp[t] != NULL) continue;
    /* No game outlasts g->max_turns moves, so a larger limit changes
     * nothing but the memory the engine reserves. */
    uint32_t mt = w->hello.max_turns;
    if (mt > (uint32_t)g->max_turns) mt = (uint32_t)g->max_turns;
    double alpha = w->hello.alpha;
    if (w->hello.eps == 0.0 && !(alpha > 0.0)) alpha = 1.0; /* unused */
    double temp = w->hello.temperature > 0.0 ? w->hello.temperature : 1.0;
    pb_selfplay_opts_t o = {w->cfg.train.selfplay_parallel, (int)mt,
                            w->hello.eps, alpha, temp};
    pb_err_t e;
    pb_err_clear(&e);
    w->sp[t] = pb_selfplay_new(g, &o, &e);
    if (w->sp[t] == NULL)
      return pb_err_set(err, e.code,
                        "the learner's self-play settings "
                        "(max_turns %u, eps %g, alpha %g) are refused: %s",
                        w->hello.max_turns, w->hello.eps, w->hello.alpha,
                        e.msg);
  }
  int rc = ensure_weights(w, 0, 0, it->q_version, err);
  if (rc != 0) return rc;

  pb_episodes_clear(&w->eps);
  pb_evalfn_t fn = {ev_value, ev_qvalues, w};
  pb_err_t e;
  pb_err_clear(&e);
  double t0 = pb_now();
  job_t job = {w, it, members};
  if (members == 1)
    rc = selfplay_member(&job, 0, &fn, &e);
  else if ((rc = ensure_batcher(w, err)) != 0)
    return rc;
  else
    rc = pb_batcher_run(w->batcher, members, &fn, selfplay_member, &job, &e);
  /* The threads' episodes after the first one's, in thread order. */
  for (int t = 1; rc == 0 && t < members; t++)
    rc = pb_episodes_append(&w->eps, &w->sp_eps[t], &e);
  if (rc != 0) return engine_failed(w, rc, it->item_id, &e, err);
  return send_episodes(w, it, pb_now() - t0, err);
}

/* Sends w->eps, the item's episodes, played in dt seconds. */
static int send_episodes(pb_worker_t *w, const pb_msg_work_item_t *it,
                         double dt, pb_err_t *err) {
  int rc;
  size_t n = w->eps.n_eps;
  if (n > w->mep_cap) {
    pb_msg_episode_t *p = realloc(w->mep, n * sizeof *p);
    if (p == NULL) return pb_err_set(err, PB_ENOMEM, "worker: out of memory");
    w->mep = p;
    w->mep_cap = n;
  }
  for (size_t k = 0; k < n; k++) {
    w->mep[k].states = w->eps.states + w->eps.start[k];
    w->mep[k].n_states = w->eps.len[k];
    w->mep[k].final_reward = w->eps.reward[k];
    w->mep[k].q_version = w->eps.version[k];
    w->mep[k].policy = pb_episodes_policy(&w->eps, k, 0);
  }
  pb_msg_t m;
  msg_init(w, &m, PB_MSG_SELFPLAY_RESULT);
  m.selfplay_result.item_id = it->item_id;
  m.selfplay_result.episodes = w->mep;
  m.selfplay_result.n_episodes = (uint32_t)n;
  if ((rc = encode_send(w, &m, &w->out, err)) != 0)
    return rc == PB_EIO ? rc : W_DROP;
  size_t pos = w->eps.n_states;
  w->st.items++;
  w->st.episodes += n;
  w->st.positions += pos;
  pb_log_info(w->log,
              "selfplay item %" PRIu64
              ": %zu episodes, %zu positions"
              " in %.2f s (%.0f positions/s), Q version %" PRIu64,
              it->item_id, n, pos, dt, pos / (dt > 0 ? dt : 1e-9),
              it->q_version);
  return 0;
}

/* One thread's share of the item's positions. */
static int search_member(void *ctx, int m, const pb_evalfn_t *ev,
                         pb_err_t *err) {
  job_t *j = ctx;
  size_t lo, hi;
  share_of(j->it->n_states, j->members, m, &lo, &hi);
  if (hi == lo) return 0;
  return pb_beam_run(j->w->beam[m], j->it->states + lo, (int)(hi - lo), ev,
                     j->w->qout + lo * (size_t)j->w->g->num_actions, err);
}

static int do_search(pb_worker_t *w, const pb_msg_work_item_t *it,
                     pb_err_t *err) {
  const pb_game_t *g = w->g;
  pb_err_t e;
  pb_err_clear(&e);
  int E = (int)it->expansions, M = (int)it->max_depth;
  int members = w->threads < (int)it->n_states ? w->threads : (int)it->n_states;
  if (members < 1) members = 1;
  if (w->beam_E != E || w->beam_M != M)
    for (int t = 0; t < w->threads; t++) pb_beam_destroy(&w->beam[t]);
  for (int t = 0; t < members; t++) {
    if (w->beam[t] != NULL) continue;
    w->beam[t] = pb_beam_new(g, E, M, w->cfg.search.parallel, &e);
    if (w->beam[t] == NULL) {
      if (e.code == PB_ENOMEM) return pb_err_set(err, e.code, "%s", e.msg);
      pb_log_warn(w->log,
                  "search item %" PRIu64
                  " (E=%d, M=%d) refused: %s; "
                  "dropping it",
                  it->item_id, E, M, e.msg);
      return W_DROP;
    }
    w->beam_E = E;
    w->beam_M = M;
  }
  int rc = ensure_weights(w, 1, it->v_version, it->q_version, err);
  if (rc != 0) return rc;

  size_t need = (size_t)it->n_states * g->num_actions;
  if (need > w->qout_cap) {
    float *p = realloc(w->qout, need * sizeof *p);
    if (p == NULL) return pb_err_set(err, PB_ENOMEM, "worker: out of memory");
    w->qout = p;
    w->qout_cap = need;
  }
  pb_evalfn_t fn = {ev_value, ev_qvalues, w};
  double t0 = pb_now();
  job_t job = {w, it, members};
  if (members == 1)
    rc = search_member(&job, 0, &fn, &e);
  else if ((rc = ensure_batcher(w, err)) != 0)
    return rc;
  else
    rc = pb_batcher_run(w->batcher, members, &fn, search_member, &job, &e);
  if (rc != 0) return engine_failed(w, rc, it->item_id, &e, err);
  double dt = pb_now() - t0;

  pb_msg_t m;
  msg_init(w, &m, PB_MSG_SEARCH_RESULT);
  m.search_result.item_id = it->item_id;
  m.search_result.n_states = it->n_states;
  m.search_result.n_actions = (uint32_t)g->num_actions;
  m.search_result.qvalues = w->qout;
  if ((rc = encode_send(w, &m, &w->out, err)) != 0)
    return rc == PB_EIO ? rc : W_DROP;
  w->st.items++;
  w->st.states += it->n_states;
  pb_log_info(
      w->log,
      "search item %" PRIu64
      ": %u states, E=%d M=%d, in "
      "%.2f s (%.0f states/s), V version %" PRIu64 ", Q version %" PRIu64,
      it->item_id, it->n_states, E, M, dt, it->n_states / (dt > 0 ? dt : 1e-9),
      it->v_version, it->q_version);
  return 0;
}

/* ---- the loop --------------------------------------------------------- */

static void say_bye(pb_worker_t *w, const char *reason) {
  if (!w->joined) return; /* no run to say it to */
  pb_msg_t m;
  msg_init(w, &m, PB_MSG_BYE);
  snprintf(m.bye.reason, sizeof m.bye.reason, "%s", reason);
  /* A Bye must not wait on a full queue: the stop is already requested. */
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_msg_encode_buf(&m, &w->out, &e) == 0 &&
      zmq_send(w->dealer, w->out.data, w->out.len, ZMQ_DONTWAIT) >= 0)
    w->said_bye = 1;
}

int pb_worker_run(pb_worker_t *w, volatile sig_atomic_t *stop, pb_err_t *err) {
  const pb_config_t *c = &w->cfg;
  w->stop = stop;
  pb_log_info(w->log,
              "starting: role %s, id %s, work %s, announcements %s, "
              "device %s, threads %d, libtorch threads %d, %s %d, heartbeat "
              "%d ms, lease %d ms",
              pb_worker_component(w->role), w->id, c->net.work_endpoint,
              c->net.pub_endpoint, w->device, w->threads, c->model.threads,
              w->role == PB_ROLE_ACTOR ? "games at once per thread"
                                       : "searches at once per thread",
              w->role == PB_ROLE_ACTOR ? c->train.selfplay_parallel
                                       : c->search.parallel,
              c->net.heartbeat_ms, c->net.lease_ms);
  int rc;
  for (;;) {
    if (!w->joined && (rc = join(w, err)) != 0) break;
    pb_msg_t m;
    if ((rc = ask(w, &m, err)) == W_REJOIN) {
      w->joined = 0;
      continue;
    }
    if (rc != 0) break;
    const pb_msg_work_item_t *it = &m.work_item;
    pb_log_debug(w->log, "item %" PRIu64 ": %s, lease %u ms", it->item_id,
                 it->kind == PB_WORK_SELFPLAY ? "selfplay" : "search",
                 it->lease_ms);
    begin_item(w, it); /* heartbeats name it from now on, weights fetch too */
    rc = it->kind == PB_WORK_SELFPLAY ? do_selfplay(w, it, err)
                                      : do_search(w, it, err);
    w->busy = 0;
    pb_msg_free(&m);
    if (rc == W_REJOIN) {
      w->st.dropped++;
      w->joined = 0;
      continue;
    }
    if (rc == W_DROP) {
      w->st.dropped++;
      continue;
    }
    if (rc != 0) break;
  }
  w->busy = 0;
  const pb_worker_stats_t *s = &w->st;
  if (rc == W_STOP) {
    const char *why = w->stopping ? "the learner is stopping" : "signal";
    say_bye(w, why);
    pb_log_info(w->log,
                "shutting down (%s): %" PRIu64 " items done, %" PRIu64
                " dropped, %" PRIu64 " episodes, %" PRIu64
                " positions, %" PRIu64 " states, %" PRIu64 " resends, %" PRIu64
                " bad messages",
                why, s->items, s->dropped, s->episodes, s->positions, s->states,
                s->resends, s->bad_msgs);
    return 0;
  }
  char reason[PB_MSG_TEXT_MAX + 1];
  snprintf(reason, sizeof reason, "error: %.*s", PB_MSG_TEXT_MAX - 8,
           err && err->msg[0] ? err->msg : pb_strerror(rc));
  say_bye(w, reason);
  return rc < 0 ? rc : PB_EPROTO;
}
