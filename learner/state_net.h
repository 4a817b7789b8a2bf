/* state_net.h - private to learner/: the sockets, the table of peers and
 * the weights served (pb_lnet_t, l->net). Written by sockets.c only;
 * phases.c hands it new weights through pb__weights_serve. */
#ifndef PB_LEARNER_STATE_NET_H
#define PB_LEARNER_STATE_NET_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "curve.h"
#include "msg.h"
#include "state_peer.h"

/* A Weights reply encoded once (one version; V, Q or both) and shared by
 * every send of it: freed by whoever drops the last reference, the
 * learner or ZeroMQ's I/O thread (sockets.c). */
typedef struct wreply wreply_t;

/* A weights buffer as served to workers. */
typedef struct {
  uint8_t *buf;
  size_t len;
  uint64_t version;
} wbuf_t;

typedef struct {
  pb_zap_t *zap; /* CURVE's ZAP handler, or NULL */
  int zap_keys;  /* worker keys accepted when last logged */
  void *zctx, *router, *pub;
  pb_msg_buf_t obuf;
  /* What was bound (ZMQ_LAST_ENDPOINT; a '*' port resolved). */
  char work_ep[PB_CONFIG_PATH_MAX + 64], pub_ep[PB_CONFIG_PATH_MAX + 64];
  /* the table of peers */
  peer_t *peers;
  int max_peers;
  uint32_t peer_serial;
  /* the weights */
  wbuf_t vw, qw;          /* served now */
  wreply_t *wreply[3];    /* their Weights replies (V, Q, both), encoded
                             once; dropped when vw or qw change */
  uint64_t weights_skipped; /* requests of a peer with a reply in flight */
  uint64_t sends_failed;
  int log_budget; /* warnings left in this second, against floods */
  double log_budget_t;
} pb_lnet_t;

#endif
