/* msg.c - the messages of common/net/msg.h: their names, init and free, the
 * largest a worker may send, and the error context through which every
 * part of the codec reports (msg_codec.c holds the entry points and the
 * table of message types; msg_check.c, msg_encode.c and msg_decode.c the
 * functions of each type). Only common/net/msg*.c see the protoc-c generated code
 * (through msg_impl.h). */
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_impl.h"

/* ---- names ------------------------------------------------------------ */

static const char *const names[PB_MSG_TYPE_COUNT] = {
    [PB_MSG_NONE] = "None",
    [PB_MSG_HELLO] = "Hello",
    [PB_MSG_HELLO_REPLY] = "HelloReply",
    [PB_MSG_WORK_REQUEST] = "WorkRequest",
    [PB_MSG_WORK_ITEM] = "WorkItem",
    [PB_MSG_NO_WORK] = "NoWork",
    [PB_MSG_SELFPLAY_RESULT] = "SelfplayResult",
    [PB_MSG_SEARCH_RESULT] = "SearchResult",
    [PB_MSG_HEARTBEAT] = "Heartbeat",
    [PB_MSG_WEIGHTS_REQUEST] = "WeightsRequest",
    [PB_MSG_WEIGHTS] = "Weights",
    [PB_MSG_ANNOUNCE] = "Announce",
    [PB_MSG_REJECT] = "Reject",
    [PB_MSG_BYE] = "Bye",
};

const char *pb_msg_type_name(int type) {
  if (type < 0 || type >= PB_MSG_TYPE_COUNT) return "Unknown";
  return names[type];
}

const char *pb_msg_role_name(int role) {
  switch (role) {
    case PB_ROLE_ACTOR:
      return "actor";
    case PB_ROLE_SEARCHER:
      return "searcher";
    case PB_ROLE_EVALUATOR:
      return "evaluator";
  }
  return "unknown";
}

/* ---- error context ---------------------------------------------------- */

void pb__msg_ctx_init(pb__msg_ctx_t *c, pb_err_t *err, int decoding) {
  c->err = err;
  c->decoding = decoding;
  c->code = decoding ? PB_EPROTO : PB_EINVAL;
  c->game = NULL;
  snprintf(c->prefix, sizeof c->prefix, decoding ? "message" : "encode");
}

void pb__msg_ctx_name(pb__msg_ctx_t *c, int type, const char *sender) {
  if (c->decoding) {
    if (sender != NULL)
      snprintf(c->prefix, sizeof c->prefix, "%s from '%s'",
               pb_msg_type_name(type), sender);
    else
      snprintf(c->prefix, sizeof c->prefix, "%s", pb_msg_type_name(type));
  } else {
    snprintf(c->prefix, sizeof c->prefix, "encode %s", pb_msg_type_name(type));
  }
}

int pb__msg_fail(pb__msg_ctx_t *c, int code, const char *fmt, ...) {
  char detail[PB_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return pb_err_set(c->err, code, "%s: %s", c->prefix, detail);
}

void pb_msg_buf_free(pb_msg_buf_t *buf) {
  if (buf == NULL) return;
  free(buf->data);
  free(buf->scratch);
  memset(buf, 0, sizeof *buf);
}

void pb_msg_init(pb_msg_t *m, int type, const char *run_id, int game_id,
                 const char *sender_id) {
  memset(m, 0, sizeof *m);
  m->type = type;
  m->header.protocol_version = PB_PROTOCOL_VERSION;
  m->header.game_id = game_id;
  snprintf(m->header.run_id, sizeof m->header.run_id, "%s",
           run_id ? run_id : "");
  snprintf(m->header.sender_id, sizeof m->header.sender_id, "%s",
           sender_id ? sender_id : "");
}

void pb_msg_free(pb_msg_t *m) {
  if (m == NULL) return;
  free(m->pb__mem);
  if (m->pb__unpacked != NULL)
    probs__envelope__free_unpacked(m->pb__unpacked, NULL);
  memset(m, 0, sizeof *m);
}

size_t pb_msg_max_worker_bytes(const pb_game_t *g, int item_episodes,
                               int max_turns, int item_states) {
  size_t turns = (size_t)(max_turns < g->max_turns ? max_turns : g->max_turns);
  /* States, and (alphazero) a float policy row per state. */
  size_t sp =
      (size_t)item_episodes *
          ((turns + 1) * ((size_t)g->state_bytes + 4 * (size_t)g->num_actions) +
           64) +
      1024;
  size_t sr = (size_t)item_states *
                  ((size_t)g->num_actions * 4 + (size_t)g->state_bytes + 16) +
              1024;
  size_t most = 2 * (sp > sr ? sp : sr) + 65536;
  return most < PB_MSG_MAX_BYTES ? most : PB_MSG_MAX_BYTES;
}
