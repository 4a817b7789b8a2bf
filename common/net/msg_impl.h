/* msg_impl.h - private to common/net/msg*.c (not part of msg.h): what the files of
 * the message codec share. The only header that includes the protoc-c
 * generated probs.pb-c.h, and only common/net/msg*.c include it, so generated
 * names stay in these files.
 *
 *   msg_codec.c   the entry points (pb_msg_encode, pb_msg_decode), the
 *                 table of message types that picks the functions below,
 *                 the envelope and its header
 *   msg.c         the messages' names, init and free, and the error
 *                 context every file reports through
 *   msg_check.c   the field rules of each body (and of the header), shared
 *                 by encode (PB_EINVAL) and decode (PB_EPROTO)
 *   msg_encode.c  each body from pb_msg_t to its protobuf-c struct
 *   msg_decode.c  each body from its protobuf-c struct to pb_msg_t, with
 *                 what only the wire can get wrong
 */
#ifndef PB_MSG_IMPL_H
#define PB_MSG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "probs.pb-c.h"

/* ---- error context (msg.c) -------------------------------------------- */

/* Who is complaining about what: errors read
 * "SelfplayResult from 'actor-1': episodes[3].states: ..." on decode and
 * "encode SelfplayResult: ..." on encode. */
typedef struct pb__msg_ctx {
  pb_err_t *err;
  int code; /* for rule violations: PB_EINVAL (encode) or PB_EPROTO */
  int decoding;
  /* The header's game: NULL until the header is read, and for messages
   * that need none (see needs_game in msg_codec.c). */
  const pb_game_t *game;
  char prefix[PB_MSG_ID_MAX + 48];
} pb__msg_ctx_t;

/* A fresh context for encoding (decoding 0: rule violations are
 * PB_EINVAL, our own bug) or decoding (PB_EPROTO, a bad peer). */
void pb__msg_ctx_init(pb__msg_ctx_t *c, pb_err_t *err, int decoding);

/* Names the message in every later error: "encode TYPE", "TYPE" or "TYPE
 * from 'SENDER'". */
void pb__msg_ctx_name(pb__msg_ctx_t *c, int type, const char *sender);

/* Sets c->err to code with "PREFIX: " and the formatted detail; returns
 * code. */
int pb__msg_fail(pb__msg_ctx_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline size_t pb__msg_align_up(size_t n) {
  return (n + 15) & ~(size_t)15;
}

/* ---- field rules (msg_check.c) ---------------------------------------- */

/* The header's strings: sender_id required, run_id optional, both ids. */
int pb__msg_check_header(pb__msg_ctx_t *c, const pb_msg_header_t *h);

/* v in [lo, hi], else a rule violation naming field. */
int pb__msg_check_range(pb__msg_ctx_t *c, const char *field, uint64_t v,
                        uint64_t lo, uint64_t hi);

/* Scalar rules of one body, by type. Pointers and their contents are
 * checked only when encoding: decode checks them while it fills them
 * (sizes against the wire, positions with the game). c->game is the
 * header's game. Return 0 or c->code, set in c->err. */
int pb__msg_check_hello(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_hello_reply(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_work_request(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_work_item(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_no_work(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_selfplay_result(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_search_result(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_heartbeat(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_weights_request(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_weights(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_announce(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_reject(pb__msg_ctx_t *c, const pb_msg_t *m);
int pb__msg_check_bye(pb__msg_ctx_t *c, const pb_msg_t *m);

/* ---- encode (msg_encode.c) -------------------------------------------- */

/* The protobuf-c view of one message being encoded, on the encoder's
 * stack: it points into the pb_msg_t and into buf's scratch until it is
 * packed. */
typedef struct pb__msg_wire {
  const pb_game_t *game; /* the header's game (NULL where none is needed) */
  pb_msg_buf_t *buf;     /* its scratch holds packed states and floats */
  Probs__Envelope env;   /* msg.c sets header and body_case */
  Probs__Header hdr;
  union {
    Probs__Hello hello;
    Probs__HelloReply hello_reply;
    Probs__WorkRequest work_request;
    Probs__WorkItem work_item;
    Probs__NoWork no_work;
    Probs__SelfplayResult selfplay_result;
    Probs__SearchResult search_result;
    Probs__Heartbeat heartbeat;
    Probs__WeightsRequest weights_request;
    Probs__Weights weights;
    Probs__Announce announce;
    Probs__Reject reject;
    Probs__Bye bye;
  } body;
  Probs__SelfplayWork spw;
  Probs__SearchWork sw;
} pb__msg_wire_t;

/* Fills w->body from m's body (already checked) and points its member of
 * w->env at it. Return 0 or PB_ENOMEM (scratch could not grow). */
int pb__msg_encode_hello(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_hello_reply(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_work_request(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_work_item(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_no_work(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_selfplay_result(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_search_result(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_heartbeat(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_weights_request(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_weights(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_announce(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_reject(pb__msg_wire_t *w, const pb_msg_t *m);
int pb__msg_encode_bye(pb__msg_wire_t *w, const pb_msg_t *m);

/* ---- decode (msg_decode.c) -------------------------------------------- */

/* Copies a protobuf-c string into a fixed array of max + 1 bytes, refusing
 * one that does not fit. */
int pb__msg_copy_text(pb__msg_ctx_t *c, const char *field, char *dst,
                      const char *src, size_t max);

/* Fills out's body from env's body of out->type (present; the header is
 * done and c->game set) and checks it. May set out->pb__mem or
 * out->pb__unpacked (then env is out's to keep) even when it fails; the
 * caller frees them. */
int pb__msg_decode_hello(pb__msg_ctx_t *c, Probs__Envelope *env, pb_msg_t *out);
int pb__msg_decode_hello_reply(pb__msg_ctx_t *c, Probs__Envelope *env,
                               pb_msg_t *out);
int pb__msg_decode_work_request(pb__msg_ctx_t *c, Probs__Envelope *env,
                                pb_msg_t *out);
int pb__msg_decode_work_item(pb__msg_ctx_t *c, Probs__Envelope *env,
                             pb_msg_t *out);
int pb__msg_decode_no_work(pb__msg_ctx_t *c, Probs__Envelope *env,
                           pb_msg_t *out);
int pb__msg_decode_selfplay_result(pb__msg_ctx_t *c, Probs__Envelope *env,
                                   pb_msg_t *out);
int pb__msg_decode_search_result(pb__msg_ctx_t *c, Probs__Envelope *env,
                                 pb_msg_t *out);
int pb__msg_decode_heartbeat(pb__msg_ctx_t *c, Probs__Envelope *env,
                             pb_msg_t *out);
int pb__msg_decode_weights_request(pb__msg_ctx_t *c, Probs__Envelope *env,
                                   pb_msg_t *out);
int pb__msg_decode_weights(pb__msg_ctx_t *c, Probs__Envelope *env,
                           pb_msg_t *out);
int pb__msg_decode_announce(pb__msg_ctx_t *c, Probs__Envelope *env,
                            pb_msg_t *out);
int pb__msg_decode_reject(pb__msg_ctx_t *c, Probs__Envelope *env,
                          pb_msg_t *out);
int pb__msg_decode_bye(pb__msg_ctx_t *c, Probs__Envelope *env, pb_msg_t *out);

#endif
