/* sockets.c - the learner's sockets: the ROUTER it serves workers on and
 * the PUB it announces on (CURVE when net.curve_dir is set), the table of
 * peers, and every message the learner sends (replies, Reject, Announce).
 * The handlers of what workers send are in peers.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "invariant.h"
#include "state.h"

/* ---- sending ---------------------------------------------------------- */

/* Warnings caused by peers are rate limited: a flood must not fill the
 * disk. */
int pb__may_warn(pb_learner_t *l) {
  double t = now(l);
  if (t - l->net.log_budget_t > 1.0) {
    l->net.log_budget_t = t;
    l->net.log_budget = 20;
  }
  return l->net.log_budget-- > 0;
}

void pb__rid_text(const uint8_t *rid, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 3 < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%02x", rid[i]);
  out[k < cap ? k : cap - 1] = '\0';
}

/* Which entry goes first when the table is full (lower: sooner): one
 * without a key that never worked, then one that never worked, then the
 * others. One that holds a lease never goes (holds()). */
static int evict_class(const peer_t *p) {
  if (p->items == 0) return p->key[0] == '\0' ? 0 : 1;
  return 2;
}

static int holds(const pb_learner_t *l, const peer_t *p) {
  return pb_workq_held(l->it.wq, p->serial) + pb_workq_held(l->it.spq, p->serial) >
         0;
}

peer_t *pb__peer_find(pb_learner_t *l, const uint8_t *rid, size_t n,
                      int create) {
  int free_slot = -1;
  for (int i = 0; i < l->net.max_peers; i++) {
    peer_t *p = &l->net.peers[i];
    if (!p->used) {
      if (free_slot < 0) free_slot = i;
      continue;
    }
    if (p->rid_len == n && !memcmp(p->rid, rid, n)) return p;
  }
  if (!create) return NULL;
  int k = free_slot;
  if (k < 0) { /* full: forget one (state.h) */
    int best = -1;
    for (int i = 0; i < l->net.max_peers; i++) {
      const peer_t *p = &l->net.peers[i];
      int c = evict_class(p);
      /* Whether it holds a lease (O(items)) only for a better candidate. */
      if ((k < 0 || c < best ||
           (c == best && p->last_seen < l->net.peers[k].last_seen)) &&
          !holds(l, p)) {
        k = i;
        best = c;
      }
    }
    if (k < 0) return NULL;
  }
  peer_t *p = &l->net.peers[k];
  pb__peer_forget(p);
  memset(p, 0, sizeof *p);
  p->used = 1;
  p->serial = ++l->net.peer_serial;
  memcpy(p->rid, rid, n);
  p->rid_len = n;
  p->first_seen = p->last_seen = now(l);
  return p;
}

peer_t *pb__peer_by_serial(pb_learner_t *l, uint32_t serial) {
  for (int i = 0; i < l->net.max_peers; i++)
    if (l->net.peers[i].used && l->net.peers[i].serial == serial) return &l->net.peers[i];
  return NULL;
}

void pb__send_msg(pb_learner_t *l, const peer_t *p, pb_msg_t *m) {
  pb_err_t err;
  if (pb_msg_encode_buf(m, &l->net.obuf, &err) != 0) {
    pb_log_error(l->log, "cannot encode %s: %s", pb_msg_type_name(m->type),
                 err.msg);
    return;
  }
  if (zmq_send(l->net.router, p->rid, p->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
      zmq_send(l->net.router, l->net.obuf.data, l->net.obuf.len, ZMQ_DONTWAIT) < 0) {
    l->net.sends_failed++;
    if (pb__may_warn(l))
      pb_log_warn(l->log, "cannot send %s to %s: %s", pb_msg_type_name(m->type),
                  p->sender[0] ? p->sender : "peer", zmq_strerror(errno));
  }
}

/* ---- weights: encoded once, sent without a copy ----------------------- */

struct wreply {
  atomic_int refs; /* the learner's (while served) + one per queued copy */
  uint64_t version;
  int which;
  uint8_t *data;
  size_t len;
};

struct wflight {
  atomic_int n;    /* replies of the peer ZeroMQ still holds */
  atomic_int refs; /* the peer slot's + one per reply in flight */
};

/* One queued reply: what ZeroMQ's free function gives back. */
typedef struct {
  wreply_t *w;
  wflight_t *f;
} whint_t;

static void wreply_unref(wreply_t *w) {
  if (atomic_fetch_sub(&w->refs, 1) == 1) {
    free(w->data);
    free(w);
  }
}

static void wflight_unref(wflight_t *f) {
  if (atomic_fetch_sub(&f->refs, 1) == 1) free(f);
}

/* ZeroMQ is done with a reply (sent, dropped, or never queued); on its I/O
 * thread, or on the learner's when the send failed. */
static void wsent(void *data, void *hint) {
  (void)data;
  whint_t *h = hint;
  atomic_fetch_sub(&h->f->n, 1);
  wflight_unref(h->f);
  wreply_unref(h->w);
  free(h);
}

void pb__weights_drop(pb_learner_t *l) {
  for (int i = 0; i < 3; i++)
    if (l->net.wreply[i] != NULL) {
      wreply_unref(l->net.wreply[i]);
      l->net.wreply[i] = NULL;
    }
}

void pb__peer_forget(peer_t *p) {
  if (p->wflight != NULL) wflight_unref(p->wflight);
  p->wflight = NULL;
}

/* The encoded reply for `which` of the served versions, made on first use. */
static wreply_t *wreply_of(pb_learner_t *l, int which) {
  wreply_t **slot = &l->net.wreply[which - 1];
  if (*slot != NULL) return *slot;
  pb_msg_t r;
  pb__init_msg(l, &r, PB_MSG_WEIGHTS);
  r.weights.version = which & PB_WHICH_V ? l->net.vw.version : l->net.qw.version;
  if (which & PB_WHICH_V) {
    r.weights.v_weights = l->net.vw.buf;
    r.weights.v_len = l->net.vw.len;
  }
  if (which & PB_WHICH_Q) {
    r.weights.q_weights = l->net.qw.buf;
    r.weights.q_len = l->net.qw.len;
  }
  wreply_t *w = calloc(1, sizeof *w);
  pb_err_t err;
  if (w == NULL || pb_msg_encode(&r, &w->data, &w->len, &err) != 0) {
    pb_log_error(l->log, "cannot encode weights version %" PRIu64 ": %s",
                 r.weights.version, w ? err.msg : "out of memory");
    free(w);
    return NULL;
  }
  atomic_init(&w->refs, 1);
  w->version = r.weights.version;
  w->which = which;
  return *slot = w;
}

void pb__send_weights(pb_learner_t *l, peer_t *p, int which) {
  pb_assert(which >= 1 && which <= 3);
  if (p->wflight == NULL) {
    if ((p->wflight = calloc(1, sizeof *p->wflight)) == NULL) return;
    atomic_init(&p->wflight->n, 0);
    atomic_init(&p->wflight->refs, 1);
  }
  if (atomic_load(&p->wflight->n) > 0) {
    /* One at a time: a client that asks and never reads queues nothing. */
    l->net.weights_skipped++;
    pb_log_debug(l->log, "weights request of %s: one reply still queued",
                 p->sender[0] ? p->sender : "peer");
    return;
  }
  wreply_t *w = wreply_of(l, which);
  whint_t *h = w ? malloc(sizeof *h) : NULL;
  if (h == NULL) return;
  *h = (whint_t){w, p->wflight};
  atomic_fetch_add(&w->refs, 1);
  atomic_fetch_add(&p->wflight->refs, 1);
  atomic_fetch_add(&p->wflight->n, 1);
  zmq_msg_t body;
  zmq_msg_init_data(&body, w->data, w->len, wsent, h);
  if (zmq_send(l->net.router, p->rid, p->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
      zmq_msg_send(&body, l->net.router, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&body); /* not queued: wsent gives the references back */
    l->net.sends_failed++;
    if (pb__may_warn(l))
      pb_log_warn(l->log, "cannot send weights to %s: %s",
                  p->sender[0] ? p->sender : "peer", zmq_strerror(errno));
  }
}

void pb__init_msg(pb_learner_t *l, pb_msg_t *m, int type) {
  pb_msg_init(m, type, l->run_id, l->g->id, l->sender);
}

static int announce_phase(int p) {
  switch (p) {
  case PH_SELFPLAY: return PB_PHASE_SELFPLAY;
  case PH_PREPARE_SEARCH: return PB_PHASE_PREPARE_SEARCH;
  case PH_SEARCH: return PB_PHASE_SEARCH;
  case PH_TRAIN: return PB_PHASE_TRAIN;
  }
  return PB_PHASE_STOPPING;
}

void pb__announce(pb_learner_t *l) {
  pb_msg_t m;
  pb_err_t err;
  pb__init_msg(l, &m, PB_MSG_ANNOUNCE);
  m.announce.version = pb_learn_version(l->learn);
  m.announce.iteration = (uint32_t)(pb_learn_version(l->learn) +
                                    (l->it.phase == PH_DONE ? 0 : 1));
  m.announce.phase = announce_phase(l->it.phase);
  if (pb_msg_encode_buf(&m, &l->net.obuf, &err) == 0)
    zmq_send(l->net.pub, l->net.obuf.data, l->net.obuf.len, ZMQ_DONTWAIT);
}

void pb__reject(pb_learner_t *l, peer_t *p, int code, const char *msg) {
  pb_msg_t r;
  pb__init_msg(l, &r, PB_MSG_REJECT);
  r.reject.code = code;
  snprintf(r.reject.message, sizeof r.reject.message, "%s", msg);
  pb__send_msg(l, p, &r);
}

/* ---- the sockets ------------------------------------------------------ */

/* From the ZAP thread: a refused peer is worth a warning. */
static void zap_note(void *ctx, int accepted, const char *address,
                     const char *key) {
  pb_learner_t *l = ctx;
  if (accepted)
    pb_log_info(l->log, "CURVE: worker key %s from %s accepted", key, address);
  else
    pb_log_warn(l->log,
                "CURVE: refused a peer from %s with key %s (not in "
                "authorized_keys)",
                address, key);
}

int pb__open_sockets(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *cfg = &l->cfg;
  pb_log_t *log = l->log;
  char path[4200];
  l->net.max_peers = cfg->net.max_workers;
  l->net.peers = calloc((size_t)l->net.max_peers, sizeof *l->net.peers);
  if (l->net.peers == NULL) {
    pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    goto fail;
  }
  l->net.zctx = zmq_ctx_new();
  l->net.router = zmq_socket(l->net.zctx, ZMQ_ROUTER);
  l->net.pub = zmq_socket(l->net.zctx, ZMQ_PUB);
  if (l->net.router == NULL || l->net.pub == NULL) {
    pb_err_set(err, PB_EIO, "cannot create ZeroMQ sockets: %s",
               zmq_strerror(errno));
    goto fail;
  }
  int hwm = cfg->net.hwm, linger = 0, mandatory = 1;
  /* Nothing larger than a worker's biggest honest message gets buffered. */
  int64_t maxsize = (int64_t)pb_msg_max_worker_bytes(
      l->g, cfg->net.item_episodes, cfg->train.max_turns, cfg->net.item_states);
  zmq_setsockopt(l->net.router, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(l->net.router, ZMQ_RCVHWM, &hwm, sizeof hwm);
  zmq_setsockopt(l->net.router, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(l->net.router, ZMQ_MAXMSGSIZE, &maxsize, sizeof maxsize);
  zmq_setsockopt(l->net.router, ZMQ_ROUTER_MANDATORY, &mandatory, sizeof mandatory);
  zmq_setsockopt(l->net.pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(l->net.pub, ZMQ_LINGER, &linger, sizeof linger);
  if (cfg->net.curve_dir[0] != '\0') {
    /* CURVE: only the workers of authorized_keys get in. */
    pb_curve_keys_t keys;
    snprintf(path, sizeof path, "%s/learner.key", cfg->net.curve_dir);
    if (pb_curve_load(path, 1, &keys, err) != 0) goto fail;
    snprintf(path, sizeof path, "%s/authorized_keys", cfg->net.curve_dir);
    if ((l->net.zap = pb_zap_start(l->net.zctx, path, zap_note, l, err)) == NULL ||
        pb_curve_server(l->net.router, &keys, err) != 0 ||
        pb_curve_server(l->net.pub, &keys, err) != 0)
      goto fail;
    l->net.zap_keys = pb_zap_count(l->net.zap);
    pb_log_info(log, "CURVE on: learner key %s, %d authorized worker key(s)",
                keys.pub, l->net.zap_keys);
    memset(&keys, 0, sizeof keys);
  }
  if (zmq_bind(l->net.router, cfg->net.work_endpoint) != 0) {
    pb_err_set(err, PB_EIO, "cannot bind net.work_endpoint %s: %s",
               cfg->net.work_endpoint, zmq_strerror(errno));
    goto fail;
  }
  if (zmq_bind(l->net.pub, cfg->net.pub_endpoint) != 0) {
    pb_err_set(err, PB_EIO, "cannot bind net.pub_endpoint %s: %s",
               cfg->net.pub_endpoint, zmq_strerror(errno));
    goto fail;
  }
  /* A '*' port is the kernel's choice: what workers must connect to. */
  size_t n = sizeof l->net.work_ep;
  if (zmq_getsockopt(l->net.router, ZMQ_LAST_ENDPOINT, l->net.work_ep, &n) != 0)
    snprintf(l->net.work_ep, sizeof l->net.work_ep, "%s", cfg->net.work_endpoint);
  n = sizeof l->net.pub_ep;
  if (zmq_getsockopt(l->net.pub, ZMQ_LAST_ENDPOINT, l->net.pub_ep, &n) != 0)
    snprintf(l->net.pub_ep, sizeof l->net.pub_ep, "%s", cfg->net.pub_endpoint);
  return 0;
fail:
  return err && err->code ? err->code : PB_EIO;
}

void pb__close_sockets(pb_learner_t *l) {
  if (l->net.router) zmq_close(l->net.router);
  pb_zap_stop(&l->net.zap);
  if (l->net.pub) zmq_close(l->net.pub);
  if (l->net.zctx) zmq_ctx_term(l->net.zctx);
  l->net.router = l->net.pub = l->net.zctx = NULL;
  pb_msg_buf_free(&l->net.obuf);
  free(l->net.vw.buf);
  free(l->net.qw.buf);
  memset(&l->net.vw, 0, sizeof l->net.vw);
  memset(&l->net.qw, 0, sizeof l->net.qw);
  /* ZeroMQ has given back every queued reply (its context is gone). */
  pb__weights_drop(l);
  for (int i = 0; l->net.peers != NULL && i < l->net.max_peers; i++)
    pb__peer_forget(&l->net.peers[i]);
  free(l->net.peers);
  l->net.peers = NULL;
}

void pb__weights_serve(pb_learner_t *l, int which, wbuf_t *fresh) {
  wbuf_t *cur = which == PB_WHICH_V ? &l->net.vw : &l->net.qw;
  pb__weights_drop(l); /* replies of the weights served until now */
  free(cur->buf);
  *cur = *fresh;
  memset(fresh, 0, sizeof *fresh);
}

void pb__zap_tick(pb_learner_t *l) {
  if (l->net.zap != NULL && pb_zap_count(l->net.zap) != l->net.zap_keys) {
    l->net.zap_keys = pb_zap_count(l->net.zap);
    pb_log_info(l->log, "CURVE: authorized_keys now lists %d worker key(s)",
                l->net.zap_keys);
  }
}

int pb__weights_serve_learned(pb_learner_t *l, pb_err_t *err) {
  pb_learn_t *lr = l->learn;
  /* AlphaZero has no V: only the policy+value network is served, as Q. */
  if ((pb_learn_v(lr) != NULL &&
       pb_nn_weights_save(pb_learn_v(lr), pb_learn_version(lr),
                          &l->net.vw.buf, &l->net.vw.len, err) != 0) ||
      pb_nn_weights_save(pb_learn_q(lr), pb_learn_version(lr), &l->net.qw.buf,
                         &l->net.qw.len, err) != 0)
    return err->code ? err->code : PB_EIO;
  l->net.vw.version = l->net.qw.version = pb_learn_version(lr);
  return 0;
}
