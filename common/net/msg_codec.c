/* msg_codec.c - strict codec between pb_msg_t and proto/probs.proto: the
 * entry points pb_msg_encode / pb_msg_decode, the envelope and its header.
 *
 * One table, indexed by message type, picks each type's functions: the check of its fields (msg_check.c), used by encode
 * (PB_EINVAL: our own bug) and decode (PB_EPROTO: a bad peer), and its
 * conversion to and from the protobuf-c structs (msg_encode.c,
 * msg_decode.c). Decode adds what only the wire can get wrong: byte sizes
 * that disagree with counts, foreign run/game/version, and positions or
 * episodes that cannot happen in the game. Only common/net/msg*.c see the protoc-c
 * generated code (through msg_impl.h).
 *
 * Workload: SelfplayResults of ~16 episodes of ~20 positions and
 * SearchResults of a few hundred positions, thousands per second. Encode
 * into a pb_msg_buf_t allocates nothing once the buffer has grown; decode
 * makes one allocation for our arrays besides protobuf-c's own.
 */
#include "msg.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "msg_impl.h"

/* ---- the table of message types --------------------------------------- */

/* What the codec does with one message type. */
typedef struct msg_kind {
  Probs__Envelope__BodyCase body_case; /* the envelope's oneof case */
  size_t body_at; /* offsetof its body's pointer in Probs__Envelope */
  int (*check)(pb__msg_ctx_t *c, const pb_msg_t *m);
  int (*encode)(pb__msg_wire_t *w, const pb_msg_t *m);
  int (*decode)(pb__msg_ctx_t *c, Probs__Envelope *env, pb_msg_t *out);
} msg_kind_t;

/* One row: the type's envelope oneof case, and `body`, which names its
 * member of Probs__Envelope and its three functions. */
#define KIND(CASE, body)                                                       \
  {                                                                            \
    .body_case = PROBS__ENVELOPE__BODY_##CASE,                                 \
    .body_at = offsetof(Probs__Envelope, body), .check = pb__msg_check_##body, \
    .encode = pb__msg_encode_##body, .decode = pb__msg_decode_##body,          \
  }

static const msg_kind_t kinds[PB_MSG_TYPE_COUNT] = {
    [PB_MSG_HELLO] = KIND(HELLO, hello),
    [PB_MSG_HELLO_REPLY] = KIND(HELLO_REPLY, hello_reply),
    [PB_MSG_WORK_REQUEST] = KIND(WORK_REQUEST, work_request),
    [PB_MSG_WORK_ITEM] = KIND(WORK_ITEM, work_item),
    [PB_MSG_NO_WORK] = KIND(NO_WORK, no_work),
    [PB_MSG_SELFPLAY_RESULT] = KIND(SELFPLAY_RESULT, selfplay_result),
    [PB_MSG_SEARCH_RESULT] = KIND(SEARCH_RESULT, search_result),
    [PB_MSG_HEARTBEAT] = KIND(HEARTBEAT, heartbeat),
    [PB_MSG_WEIGHTS_REQUEST] = KIND(WEIGHTS_REQUEST, weights_request),
    [PB_MSG_WEIGHTS] = KIND(WEIGHTS, weights),
    [PB_MSG_ANNOUNCE] = KIND(ANNOUNCE, announce),
    [PB_MSG_REJECT] = KIND(REJECT, reject),
    [PB_MSG_BYE] = KIND(BYE, bye),
};

#undef KIND

/* The functions of a message type; NULL for PB_MSG_NONE and non-types. */
static const msg_kind_t *kind_of(int type) {
  if (type <= PB_MSG_NONE || type >= PB_MSG_TYPE_COUNT) return NULL;
  return &kinds[type];
}

/* Envelope body case -> our type (PB_MSG_NONE for none or unknown). */
static int type_of_case(Probs__Envelope__BodyCase c) {
  for (int t = PB_MSG_NONE + 1; t < PB_MSG_TYPE_COUNT; t++)
    if (kinds[t].body_case == c) return t;
  return PB_MSG_NONE;
}

/* ---- encode ----------------------------------------------------------- */

/* Messages that carry positions or per-action values need a game. */
static int needs_game(const pb_msg_t *m) {
  return m->type == PB_MSG_SELFPLAY_RESULT || m->type == PB_MSG_SEARCH_RESULT ||
         (m->type == PB_MSG_WORK_ITEM && m->work_item.kind == PB_WORK_SEARCH);
}

/* Packs env into b->data: grown by doubling, or allocated to the exact size
 * when `exact` (pb_msg_encode hands that buffer over). */
static int pack_envelope(pb__msg_ctx_t *c, const Probs__Envelope *env,
                         pb_msg_buf_t *b, int exact) {
  size_t size = probs__envelope__get_packed_size(env);
  if (size > PB_MSG_MAX_BYTES)
    return pb__msg_fail(c, PB_EINVAL, "%zu bytes, over the cap of %u", size,
                        PB_MSG_MAX_BYTES);
  if (exact || size > b->cap) {
    size_t cap = size ? size : 1;
    if (!exact) {
      cap = b->cap ? b->cap : 256;
      while (cap < size) cap *= 2;
    }
    uint8_t *p = malloc(cap);
    if (p == NULL)
      return pb__msg_fail(c, PB_ENOMEM, "out of memory (%zu bytes)", cap);
    free(b->data);
    b->data = p;
    b->cap = cap;
  }
  b->len = probs__envelope__pack(env, b->data);
  return 0;
}

/* Checks m, builds its protobuf-c view (pointing into m and b->scratch)
 * with the encoder of its type and packs it into b (see pack_envelope). */
static int encode_impl(const pb_msg_t *m, pb_msg_buf_t *b, int exact,
                       pb_err_t *err) {
  pb__msg_ctx_t c;
  pb__msg_ctx_init(&c, err, 0);
  if (m == NULL || b == NULL)
    return pb_err_set(err, PB_EINVAL, "encode: NULL message or buffer");
  b->len = 0;
  pb__msg_ctx_name(&c, m->type, NULL);
  int rc = pb__msg_check_header(&c, &m->header);
  if (rc) return rc;
  if (needs_game(m)) {
    c.game = pb_game_by_id(m->header.game_id);
    if (c.game == NULL)
      return pb__msg_fail(&c, PB_EINVAL,
                          "header.game_id: %d is not a known game, "
                          "and this message carries positions or actions",
                          m->header.game_id);
  }
  const msg_kind_t *k = kind_of(m->type);
  if (k == NULL)
    return pb__msg_fail(&c, c.code, "type %d is not a message type", m->type);
  if ((rc = k->check(&c, m))) return rc;

  pb__msg_wire_t w;
  w.game = c.game;
  w.buf = b;
  probs__header__init(&w.hdr);
  w.hdr.protocol_version = m->header.protocol_version;
  w.hdr.run_id = (char *)m->header.run_id;
  w.hdr.game_id = (uint32_t)m->header.game_id;
  w.hdr.sender_id = (char *)m->header.sender_id;
  probs__envelope__init(&w.env);
  w.env.header = &w.hdr;
  w.env.body_case = k->body_case;
  if ((rc = k->encode(&w, m))) return pb__msg_fail(&c, rc, "out of memory");
  return pack_envelope(&c, &w.env, b, exact);
}

int pb_msg_encode_buf(const pb_msg_t *m, pb_msg_buf_t *buf, pb_err_t *err) {
  return encode_impl(m, buf, 0, err);
}

int pb_msg_encode(const pb_msg_t *m, uint8_t **out, size_t *len,
                  pb_err_t *err) {
  if (out == NULL || len == NULL)
    return pb_err_set(err, PB_EINVAL, "encode: NULL output");
  *out = NULL;
  *len = 0;
  pb_msg_buf_t b = {0};
  int rc = encode_impl(m, &b, 1, err);
  if (rc == 0) {
    *out = b.data;
    *len = b.len;
    b.data = NULL;
  }
  pb_msg_buf_free(&b);
  return rc;
}

/* ---- decode ----------------------------------------------------------- */

/* Version, then who sent it (for every later message), then whether run
 * and game are ours; sets c->game. */
static int decode_header(pb__msg_ctx_t *c, const Probs__Envelope *env, int type,
                         const pb_msg_expect_t *ex, pb_msg_header_t *h) {
  const Probs__Header *w = env->header;
  if (w == NULL) return pb__msg_fail(c, PB_EPROTO, "header: missing");
  h->protocol_version = w->protocol_version;
  int rc = pb__msg_copy_text(c, "header.sender_id", h->sender_id, w->sender_id,
                             PB_MSG_ID_MAX);
  if (rc == 0)
    rc = pb__msg_copy_text(c, "header.run_id", h->run_id, w->run_id,
                           PB_MSG_ID_MAX);
  if (rc == 0) rc = pb__msg_check_header(c, h);
  if (rc)
    h->sender_id[0] = h->run_id[0] = '\0'; /* not fit for logs */
  else
    pb__msg_ctx_name(c, type, h->sender_id);
  /* A peer of another version is told so even if the rest of its header
   * reads differently to us. */
  if (w->protocol_version != PB_PROTOCOL_VERSION)
    return pb__msg_fail(c, PB_EMISMATCH,
                        "header.protocol_version: got %u, "
                        "expected %u (a peer of another probs version: "
                        "every machine of a run runs the same one)",
                        w->protocol_version, PB_PROTOCOL_VERSION);
  if (rc) return rc;
  if (type == PB_MSG_NONE)
    return pb__msg_fail(c, PB_EPROTO, "body: missing or of an unknown type");

  const char *want_run = ex && ex->run_id ? ex->run_id : "";
  if (h->run_id[0] == '\0') {
    if (type != PB_MSG_HELLO)
      return pb__msg_fail(c, PB_EPROTO,
                          "header.run_id: empty (only a Hello may "
                          "omit it)");
  } else if (want_run[0] != '\0' && strcmp(h->run_id, want_run) != 0) {
    return pb__msg_fail(c, PB_EMISMATCH,
                        "header.run_id: got '%s', expected '%s'", h->run_id,
                        want_run);
  }

  uint32_t gid = w->game_id;
  int want_game = ex ? ex->game_id : 0;
  if (gid == 0) {
    if (type != PB_MSG_HELLO)
      return pb__msg_fail(c, PB_EPROTO,
                          "header.game_id: 0 (only a Hello may omit "
                          "it)");
    return 0;
  }
  const pb_game_t *g = gid <= INT_MAX ? pb_game_by_id((int)gid) : NULL;
  if (g == NULL)
    return pb__msg_fail(c, PB_EMISMATCH,
                        "header.game_id: got %u, not a known game "
                        "(known: %s)",
                        gid, pb_game_names());
  if (want_game != 0 && (int)gid != want_game) {
    const pb_game_t *wg = pb_game_by_id(want_game);
    return pb__msg_fail(c, PB_EMISMATCH,
                        "header.game_id: got %u (%s), expected %d "
                        "(%s)",
                        gid, g->name, want_game, wg ? wg->name : "?");
  }
  h->game_id = (int)gid;
  c->game = g;
  return 0;
}

/* protobuf-c leaves a oneof member NULL only if the wire never set it, and
 * then the case is NOT_SET; this guards the pointer of type's body (at
 * body_at in env) all the same. */
static int body_present(const Probs__Envelope *env, int type) {
  const msg_kind_t *k = kind_of(type);
  if (k == NULL) return 0;
  const void *body;
  memcpy(&body, (const char *)env + k->body_at, sizeof body);
  return body != NULL;
}

int pb_msg_decode(const uint8_t *buf, size_t len, const pb_msg_expect_t *expect,
                  pb_msg_t *out, pb_err_t *err) {
  static const uint8_t empty[1] = {0};
  pb__msg_ctx_t c;
  pb__msg_ctx_init(&c, err, 1);
  if (out == NULL) return pb_err_set(err, PB_EINVAL, "decode: out is NULL");
  memset(out, 0, sizeof *out);
  if (buf == NULL && len > 0)
    return pb_err_set(err, PB_EINVAL, "decode: NULL buffer of %zu bytes", len);
  if (len > PB_MSG_MAX_BYTES)
    return pb__msg_fail(&c, PB_EPROTO, "%zu bytes, over the cap of %u", len,
                        PB_MSG_MAX_BYTES);
  Probs__Envelope *env = probs__envelope__unpack(NULL, len, len ? buf : empty);
  if (env == NULL)
    return pb__msg_fail(&c, PB_EPROTO,
                        "not a valid protobuf Envelope (%zu bytes)", len);
  int type = type_of_case(env->body_case);
  if (!body_present(env, type)) type = PB_MSG_NONE;
  int rc = decode_header(&c, env, type, expect, &out->header);
  if (rc == 0) {
    /* decode_header refused PB_MSG_NONE. The decoder fills out's body; it
     * may set out->pb__mem or out->pb__unpacked even when it fails. */
    const msg_kind_t *k = kind_of(type);
    out->type = type;
    rc = k ? k->decode(&c, env, out)
           : pb__msg_fail(&c, PB_EPROTO, "body: of an unknown type");
  }
  if (rc != 0) {
    pb_msg_header_t h = out->header;
    free(out->pb__mem);
    memset(out, 0, sizeof *out);
    out->header = h;
    probs__envelope__free_unpacked(env, NULL);
    return rc;
  }
  if (out->pb__unpacked != env) probs__envelope__free_unpacked(env, NULL);
  return 0;
}

