/* sockets.c - the worker's ZeroMQ sockets (state.h): their setup,
 * sending (patient requests, impatient heartbeats), receiving and decoding
 * with the checks a message must pass, and wait_for, the one place that
 * polls them. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "curve.h"
#include "msg.h"
#include "util.h"
#include "state.h"

/* ---- setup ------------------------------------------------------------ */

static int sockopt_int(void *s, int opt, int v, const char *what,
                       pb_err_t *err) {
  if (zmq_setsockopt(s, opt, &v, sizeof v) != 0)
    return pb_err_set(err, PB_EIO, "%s: zmq_setsockopt(%d): %s", what, opt,
                      zmq_strerror(zmq_errno()));
  return 0;
}

int pb__worker_setup_sockets(pb_worker_t *w, pb_err_t *err) {
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
    rc = pb_curve_client_dir(c->net.curve_dir, c->net.curve_key, socks, 2, err);
  }
  if (rc != 0) return rc;

  /* A '*' port is for the learner to bind; a worker needs the real one. */
  const char *const eps[2] = {c->net.work_endpoint, c->net.pub_endpoint};
  for (int i = 0; i < 2; i++) {
    size_t n = strlen(eps[i]);
    if (n > 2 && eps[i][n - 2] == ':' && eps[i][n - 1] == '*')
      return pb_err_set(err, PB_EINVAL,
                        "%s '%s' has no port ('*' is for the learner, "
                        "which writes the ports it bound to "
                        "RUN_DIR/endpoints)",
                        i == 0 ? "net.work_endpoint" : "net.pub_endpoint",
                        eps[i]);
  }
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

/* ---- sending ---------------------------------------------------------- */

void pb__worker_msg_init(const pb_worker_t *w, pb_msg_t *m, int type) {
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
    if (pb__worker_stop_requested(w) || pb_now() >= give_up) {
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
int pb__worker_encode_send(pb_worker_t *w, const pb_msg_t *m, pb_msg_buf_t *b,
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
void pb__worker_heartbeat(pb_worker_t *w) {
  pb_msg_t m;
  pb__worker_msg_init(w, &m, PB_MSG_HEARTBEAT);
  if (w->busy) {
    m.heartbeat.item_ids = &w->item_id;
    m.heartbeat.n_item_ids = 1;
  }
  pb_err_t e;
  pb_err_clear(&e);
  if (pb__worker_encode_send(w, &m, &w->out, &e) != 0)
    pb_log_warn(w->log, "heartbeat not sent: %s", e.msg);
  if (w->busy) w->last_item_hb = pb_now();
}

/* Seconds until the next heartbeat is due (<= 0: now). Only a joined
 * worker has a run id to put in one. */
double pb__worker_heartbeat_due(const pb_worker_t *w, double now) {
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
  w->heard_at = pb_now(); /* a message of the learner's, decoded */
  return 1;
}

/* Reads every announcement waiting on the SUB socket. Sets *woke when one
 * arrived. */
int pb__worker_drain_announcements(pb_worker_t *w, int *woke, pb_err_t *err) {
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
/* net.give_up_s: whether the learner has been silent too long in this
 * wait (PB_EAGAIN, err naming the endpoint), else 0. */
static int silent_too_long(pb_worker_t *w, double entered, double now,
                           pb_err_t *err) {
  const int give_up = w->cfg.net.give_up_s;
  double since = w->heard_at > entered ? w->heard_at : entered;
  if (give_up <= 0 || now - since < give_up) return 0;
  return pb_err_set(err, PB_EAGAIN,
                    "no word from the learner at %s for %.0f s (waiting "
                    "for %s; net.give_up_s = %d): giving up",
                    w->cfg.net.work_endpoint, now - since,
                    w->req_name ? w->req_name : "a message", give_up);
}

int pb__worker_wait_for(pb_worker_t *w, unsigned want, double deadline,
                        int flags, pb_msg_t *m, pb_err_t *err) {
  const double lease = w->cfg.net.lease_ms / 1000.0;
  double sent_at = pb_now(), entered = sent_at;
  for (;;) {
    if (pb__worker_stop_requested(w)) return W_STOP;
    double now = pb_now();
    if (deadline > 0 && now >= deadline) return W_TIMEOUT;
    int quiet = silent_too_long(w, entered, now, err);
    if (quiet != 0) return quiet;
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
    if (pb__worker_heartbeat_due(w, now) <= 0) pb__worker_heartbeat(w);

    double wait = PB_WORKER_POLL_MAX_MS / 1000.0;
    double hb = pb__worker_heartbeat_due(w, now);
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
      int rc = pb__worker_drain_announcements(w, &woke, err);
      if (rc < 0) return rc;
      if (pb__worker_stop_requested(w)) return W_STOP;
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
int pb__worker_request(pb_worker_t *w, const pb_msg_t *req, unsigned want,
                       pb_msg_t *reply, pb_err_t *err) {
  w->req_name = pb_msg_type_name(req->type);
  int rc = pb__worker_encode_send(w, req, &w->req, err);
  if (rc != 0) return rc;
  return pb__worker_wait_for(w, want, 0, WAIT_RESEND, reply, err);
}

/* Sleeps `seconds` while still heartbeating and listening. */
int pb__worker_pause_for(pb_worker_t *w, double seconds, pb_err_t *err) {
  pb_msg_t m;
  int rc = pb__worker_wait_for(w, 0, pb_now() + seconds, 0, &m, err);
  return rc == W_TIMEOUT ? 0 : rc;
}

/* A warning (state.h): logged at WARN while requests succeed, at DEBUG
 * while they keep failing (the backoff of worker.c says when it ends). */
void pb__worker_warn(pb_worker_t *w, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (w->fails == 0)
    pb_log_warn(w->log, "%s", line);
  else
    pb_log_debug(w->log, "%s (failure %d in a row)", line, w->fails + 1);
}
