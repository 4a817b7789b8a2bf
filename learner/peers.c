/* peers.c - what workers send the learner (docs/protocol.md): drain()
 * reading the ROUTER on the loop thread, handle() decoding each message
 * strictly and dispatching it to its on_* handler (hello, work request,
 * self-play result, search result, weights request, heartbeat, bye). Every
 * message of every worker passes here, on the loop thread; what takes long
 * runs as a job (phases.c, spot.c). A result that fails its checks is
 * refused and its item re-queued. The sockets, the table of peers and the
 * replies are in sockets.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "selfplay.h"
#include "state.h"

/* ---- message handlers ------------------------------------------------- */

/* A worker given the run id of another start of this run (two starts of
 * one config, one's workers at the other's port) is refused, told this
 * learner's run id, and its later messages are refused too (handle). */
static int other_start(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  const char *want = m->hello.start_id;
  p->other_start = want[0] != '\0' && strcmp(want, l->start_id) != 0;
  if (!p->other_start) return 0;
  l->intake.msgs_mismatch++;
  pb_log_warn(l->log,
              "refused %s %s (host %s, pid %u): it was given run id %s, this "
              "learner is run id %s (another start of run '%s'); its work "
              "is not taken",
              pb_msg_role_name(m->hello.role), m->header.sender_id,
              m->hello.hostname, m->hello.pid, want, l->start_id, l->run_id);
  pb_msg_t r;
  pb__init_msg(l, &r, PB_MSG_HELLO_REPLY);
  snprintf(r.hello_reply.message, sizeof r.hello_reply.message,
           "this learner is run id %s, you were given %s: another start of "
           "run '%s'",
           l->start_id, want, l->run_id);
  snprintf(r.hello_reply.start_id, sizeof r.hello_reply.start_id, "%s",
           l->start_id);
  pb__send_msg(l, p, &r);
  return 1;
}

static void on_hello(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  if (other_start(l, p, m)) return;
  p->role = m->hello.role;
  snprintf(p->sender, sizeof p->sender, "%s", m->header.sender_id);
  snprintf(p->host, sizeof p->host, "%s", m->hello.hostname);
  pb_log_info(l->log, "%s %s joined (host %s, pid %u, %u threads); %d workers",
              pb_msg_role_name(p->role), p->sender, p->host, m->hello.pid,
              m->hello.threads, pb__workers_alive(l, 0));
  pb_msg_t r;
  pb__init_msg(l, &r, PB_MSG_HELLO_REPLY);
  r.hello_reply.accepted = 1;
  snprintf(r.hello_reply.message, sizeof r.hello_reply.message, "welcome to %s",
           l->run_id);
  snprintf(r.hello_reply.start_id, sizeof r.hello_reply.start_id, "%s",
           l->start_id);
  r.hello_reply.version = pb_learn_version(l->learn);
  /* Everything the worker plays and searches by: the whole config. */
  r.hello_reply.config = l->config_yaml;
  r.hello_reply.config_len = strlen(l->config_yaml);
  pb__send_msg(l, p, &r);
}

/* The most items of q one worker of `role` may hold: an even share of
 * what is left among the workers of that role the learner accepts (at
 * least 1). A greedy holder cannot take the whole phase. */
static size_t share(pb_learner_t *l, const pb_workq_t *q, int role) {
  pb_workq_counts_t c;
  pb_workq_counts(q, &c);
  size_t left = c.total - c.done;
  int n = pb__workers_usable(l, role);
  if (n < 1) n = 1;
  size_t k = (left + (size_t)n - 1) / (size_t)n;
  return k > 0 ? k : 1;
}

/* state.h. Before any item is done: net.lease_ms, what a worker that
 * stops heartbeating costs anyway. */
/* An idle worker with a clean record, when nothing of q is pending for
 * it: a backup copy of the item held longest by another, if held long
 * (pb_workq_lease_copy). The first result of the two is taken. */
static int lease_copy(pb_learner_t *l, const peer_t *p, pb_workq_t *q,
                      size_t *idx, uint64_t *id) {
  if (pb_workq_held(q, p->serial) > 0) return PB_EAGAIN;
  uint32_t holder;
  double age;
  const double after = pb_workq_backup_after(q, l->cfg.net.lease_ms / 1000.0);
  if (pb_workq_lease_copy(q, now(l), l->cfg.net.lease_ms / 1000.0, p->serial,
                          after, idx, id, &holder, &age) != 0)
    return PB_EAGAIN;
  const peer_t *h = pb__peer_by_serial(l, holder);
  pb_log_info(l->log,
              "%s item %zu held by %s (address %s) for %.1f s (items of this "
              "phase take %.1f s on average): a backup copy goes to %s; the "
              "first result counts",
              q == l->it.spq ? "self-play" : "search", *idx,
              h != NULL && h->sender[0] ? h->sender : "?",
              h != NULL && h->addr[0] ? h->addr : "?", age,
              pb_workq_mean_time(q), p->sender[0] ? p->sender : "?");
  return 0;
}

/* Leases p an item of q if its record allows (trust.c): its share, or
 * one at a time; items that came back only when its record is clean;
 * with nothing pending, a backup copy of a straggler's item to an idle
 * worker whose record is clean. */
static int lease_for(pb_learner_t *l, const peer_t *p, pb_workq_t *q, int role,
                     size_t *idx, uint64_t *id) {
  size_t most;
  int trusted;
  if (!pb__trust_allows(l, p, share(l, q, role), &most, &trusted))
    return PB_EAGAIN;
  const double lease = l->cfg.net.lease_ms / 1000.0;
  int rc = trusted
               ? pb_workq_lease(q, now(l), lease, p->serial, most, idx, id)
               : pb_workq_lease_untrusted(q, now(l), lease, p->serial, most,
                                          idx, id);
  if (rc == PB_EAGAIN && trusted) rc = lease_copy(l, p, q, idx, id);
  return rc;
}

static void on_work_request(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  const pb_config_t *c = &l->cfg;
  int role = m->work_request.role;
  if (p->role == 0) p->role = role;
  if (p->sender[0] == '\0')
    snprintf(p->sender, sizeof p->sender, "%s", m->header.sender_id);
  pb_msg_t r;
  size_t idx;
  uint64_t id;
  if (role == PB_ROLE_ACTOR && !l->stopping &&
      pb_iter_selfplay_iter(l->it.iter) != 0 &&
      (l->it.phase == PH_SELFPLAY || pb__pipelined(l)) &&
      lease_for(l, p, l->it.spq, role, &idx, &id) == 0) {
    pb_algo_item_t item;
    pb_iter_selfplay_item(l->it.iter, idx, &item);
    pb__init_msg(l, &r, PB_MSG_WORK_ITEM);
    r.work_item.item_id = id;
    r.work_item.lease_ms = (uint32_t)c->net.lease_ms;
    r.work_item.kind = PB_WORK_SELFPLAY;
    /* The newest Q served (a job may be making the next one). */
    r.work_item.q_version = l->net.qw.version;
    r.work_item.episodes = (uint32_t)item.episodes;
    r.work_item.seed = item.seed;
    r.work_item.td_epsilon = item.td_epsilon;
    pb__send_msg(l, p, &r);
    pb_log_debug(l->log, "self-play item %zu (%d episodes) -> %s", idx,
                 item.episodes, p->sender);
    pb__selfref_kick(l); /* the learner's own games of this version */
    return;
  }
  if (l->it.phase == PH_SEARCH && role == PB_ROLE_SEARCHER && !l->stopping &&
      lease_for(l, p, l->it.wq, role, &idx, &id) == 0) {
    size_t first, cnt;
    pb_iter_search_item(l->it.iter, idx, &first, &cnt);
    pb__init_msg(l, &r, PB_MSG_WORK_ITEM);
    r.work_item.item_id = id;
    r.work_item.lease_ms = (uint32_t)c->net.lease_ms;
    r.work_item.kind = PB_WORK_SEARCH;
    r.work_item.states = pb_iter_search_states(l->it.iter) + first;
    r.work_item.n_states = (uint32_t)cnt;
    r.work_item.v_version = l->net.vw.version;
    r.work_item.q_version = l->net.qw.version;
    pb__send_msg(l, p, &r);
    pb_log_debug(l->log, "search item %zu (%zu states) -> %s", idx, cnt,
                 p->sender);
    return;
  }
  pb__init_msg(l, &r, PB_MSG_NO_WORK);
  r.no_work.retry_ms = (uint32_t)c->net.heartbeat_ms;
  pb__send_msg(l, p, &r);
}

static void on_selfplay_result(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  pb__intake_selfplay(l, p, &m->selfplay_result);
}

static void on_search_result(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  pb__intake_search(l, p, &m->search_result);
}

static void on_weights_request(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  const pb_msg_weights_request_t *w = &m->weights_request;
  const int want_v = (w->which & PB_WHICH_V) != 0;
  const int want_q = (w->which & PB_WHICH_Q) != 0;
  const int have_v = w->version == l->net.vw.version && l->net.vw.buf != NULL;
  const int have_q = w->version == l->net.qw.version && l->net.qw.buf != NULL;
  if ((!want_v && !want_q) || (want_v && !have_v) || (want_q && !have_q)) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "weights version %" PRIu64 " not served (V is %" PRIu64
             ", Q is %" PRIu64 ")",
             w->version, l->net.vw.version, l->net.qw.version);
    pb__reject(l, p, PB_ENOTFOUND, msg);
    return;
  }
  pb__send_weights(l, p, (want_v ? PB_WHICH_V : 0) | (want_q ? PB_WHICH_Q : 0));
}

static void on_heartbeat(pb_learner_t *l, const peer_t *p, const pb_msg_t *m) {
  const double lease = l->cfg.net.lease_ms / 1000.0;
  for (uint32_t i = 0; i < m->heartbeat.n_item_ids; i++) {
    const uint64_t id = m->heartbeat.item_ids[i];
    if (pb_workq_renew(l->it.wq, id, p->serial, now(l), lease) != 0)
      pb_workq_renew(l->it.spq, id, p->serial, now(l), lease);
  }
}

static void on_bye(pb_learner_t *l, peer_t *p, const pb_msg_t *m) {
  size_t k = pb_workq_release(l->it.wq, p->serial) +
             pb_workq_release(l->it.spq, p->serial);
  pb_log_info(l->log, "%s %s left (%s)%s", pb_msg_role_name(p->role),
              p->sender[0] ? p->sender : "worker", m->bye.reason,
              k ? "; its items are re-queued" : "");
  pb__peer_forget(p);
  p->used = 0;
}

/* The peer of a message: known, or new if its address may open another
 * connection now (trust.c) and the table has room for it (sockets.c);
 * else NULL, and the message is dropped. */
static peer_t *peer_of(pb_learner_t *l, const uint8_t *rid, size_t rid_len,
                       const char *addr) {
  peer_t *p = pb__peer_find(l, rid, rid_len, 0);
  if (p != NULL) return p;
  if (!pb__trust_admit(l, addr)) return NULL;
  p = pb__peer_find(l, rid, rid_len, 1);
  if (p == NULL) {
    l->intake.peers_full++;
    if (pb__may_warn(l))
      pb_log_warn(l->log,
                  "a message of a new connection (address %s) dropped: all "
                  "%d entries of the table of peers (net.max_workers) hold "
                  "leases",
                  addr && addr[0] ? addr : "?", l->net.max_peers);
  }
  return p;
}

static void handle(pb_learner_t *l, const uint8_t *rid, size_t rid_len,
                   const char *key, const char *addr, const uint8_t *buf,
                   size_t len) {
  pb_msg_t m;
  pb_err_t err;
  pb_err_clear(&err);
  pb_msg_expect_t ex = {l->run_id, l->g->id};
  l->intake.msgs_in++;
  l->intake.bytes_in += len;
  int rc = pb_msg_decode(buf, len, &ex, &m, &err);
  if (rc != 0) {
    char who[2 * RID_MAX + 1];
    pb__rid_text(rid, rid_len, who, sizeof who);
    if (rc == PB_EMISMATCH) l->intake.msgs_mismatch++;
    else l->intake.msgs_bad++;
    if (pb__may_warn(l))
      pb_log_warn(l->log, "dropped a message from peer %s (sender '%s'): %s",
                  who, m.header.sender_id, err.msg);
    if (rc == PB_EMISMATCH) {
      peer_t *p = peer_of(l, rid, rid_len, addr);
      if (p != NULL) pb__reject(l, p, PB_EMISMATCH, err.msg);
    }
    pb_msg_free(&m);
    return;
  }
  peer_t *p = peer_of(l, rid, rid_len, addr);
  if (p == NULL) {
    pb_msg_free(&m);
    return;
  }
  p->last_seen = now(l);
  if (key != NULL && p->key[0] == '\0')
    snprintf(p->key, sizeof p->key, "%s", key);
  if (addr != NULL && p->addr[0] == '\0')
    snprintf(p->addr, sizeof p->addr, "%s", addr);
  if (pb__refused(l, p, &m)) {
    l->intake.msgs_bad++;
    if (m.type == PB_MSG_SEARCH_RESULT || m.type == PB_MSG_SELFPLAY_RESULT)
      l->intake.results_dup++;
    pb_msg_free(&m);
    return;
  }
  if (p->other_start && m.type != PB_MSG_HELLO) {
    l->intake.msgs_mismatch++;
    if (m.type != PB_MSG_BYE && m.type != PB_MSG_HEARTBEAT)
      pb__reject(l, p, PB_EMISMATCH,
                 "your Hello named another start of this run (see the "
                 "learner's run id in its HelloReply)");
    pb_msg_free(&m);
    return;
  }
  switch (m.type) {
  case PB_MSG_HELLO: on_hello(l, p, &m); break;
  case PB_MSG_WORK_REQUEST: on_work_request(l, p, &m); break;
  case PB_MSG_SELFPLAY_RESULT: on_selfplay_result(l, p, &m); break;
  case PB_MSG_SEARCH_RESULT: on_search_result(l, p, &m); break;
  case PB_MSG_WEIGHTS_REQUEST: on_weights_request(l, p, &m); break;
  case PB_MSG_HEARTBEAT: on_heartbeat(l, p, &m); break;
  case PB_MSG_BYE: on_bye(l, p, &m); break;
  default:
    l->intake.msgs_bad++;
    if (pb__may_warn(l))
      pb_log_warn(l->log, "unexpected %s from %s: dropped",
                  pb_msg_type_name(m.type), m.header.sender_id);
  }
  pb_msg_free(&m);
}

/* ---- the ZeroMQ side of the loop -------------------------------------- */

static void on_zidle(uv_idle_t *h);

/* ZMQ_FD is edge-triggered: read until ZMQ_EVENTS says nothing is left.
 * At most `budget` messages per call so the loop stays fair; if more
 * remain, the idle handle calls again on the next turn. */
void pb__drain(pb_learner_t *l) {
  int budget = 512;
  zmq_msg_t part[2];
  zmq_msg_init(&part[0]);
  zmq_msg_init(&part[1]);
  while (budget-- > 0 && l->net.router != NULL) {
    int ev = 0;
    size_t evl = sizeof ev;
    if (zmq_getsockopt(l->net.router, ZMQ_EVENTS, &ev, &evl) != 0 ||
        !(ev & ZMQ_POLLIN))
      break;
    if (zmq_msg_recv(&part[0], l->net.router, ZMQ_DONTWAIT) < 0) break;
    int more = zmq_msg_more(&part[0]);
    int nparts = 1;
    /* Expected: [routing id][payload]. Anything else is drained and dropped. */
    if (more && zmq_msg_recv(&part[1], l->net.router, ZMQ_DONTWAIT) >= 0) {
      nparts = 2;
      more = zmq_msg_more(&part[1]);
    }
    if (more) {
      zmq_msg_t extra;
      zmq_msg_init(&extra);
      while (zmq_msg_more(&extra) || more) {
        if (zmq_msg_recv(&extra, l->net.router, ZMQ_DONTWAIT) < 0) break;
        more = 0;
      }
      zmq_msg_close(&extra);
      l->intake.msgs_bad++;
      if (pb__may_warn(l)) pb_log_warn(l->log, "dropped a multi-part message");
      continue;
    }
    /* With CURVE, the ZAP handler made the worker's key its User-Id. */
    const char *key =
        nparts == 2 && l->net.zap ? zmq_msg_gets(&part[1], "User-Id") : NULL;
    const char *addr =
        nparts == 2 ? zmq_msg_gets(&part[1], "Peer-Address") : NULL;
    if (nparts == 2 && zmq_msg_size(&part[0]) <= RID_MAX)
      handle(l, zmq_msg_data(&part[0]), zmq_msg_size(&part[0]), key, addr,
             zmq_msg_data(&part[1]), zmq_msg_size(&part[1]));
    else
      l->intake.msgs_bad++;
    if (l->fatal) break;
  }
  int ev = 0;
  size_t evl = sizeof ev;
  int more = l->net.router && !l->fatal &&
             zmq_getsockopt(l->net.router, ZMQ_EVENTS, &ev, &evl) == 0 &&
             (ev & ZMQ_POLLIN);
  if (more && !uv_is_active((uv_handle_t *)&l->zidle))
    uv_idle_start(&l->zidle, on_zidle);
  zmq_msg_close(&part[0]);
  zmq_msg_close(&part[1]);
}

void pb__on_zpoll(uv_poll_t *h, int status, int events) {
  (void)status;
  (void)events;
  pb__drain(h->data);
}

static void on_zidle(uv_idle_t *h) {
  pb_learner_t *l = h->data;
  uv_idle_stop(h);
  pb__drain(l);
}

