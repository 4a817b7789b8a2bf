/* msg.c - strict codec between pb_msg_t and proto/probs.proto.
 *
 * The only file that includes the protoc-c generated header. Field rules
 * (ranges, enums, string limits) live in one place, check_header_syntax and
 * check_body, used by encode (PB_EINVAL: our own bug) and decode
 * (PB_EPROTO: a bad peer). Decode adds what only the wire can get wrong:
 * byte sizes that disagree with counts, foreign run/game/version, and
 * positions or episodes that cannot happen in the game.
 *
 * Workload: SelfplayResults of ~16 episodes of ~20 positions and
 * SearchResults of a few hundred positions, thousands per second. Encode
 * into a pb_msg_buf_t allocates nothing once the buffer has grown; decode
 * makes one allocation for our arrays besides protobuf-c's own.
 */
#include "msg.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probs.pb-c.h"

/* ---- names ------------------------------------------------------------ */

static const char *const type_names[PB_MSG_TYPE_COUNT] = {
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
  return type_names[type];
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

/* Envelope body case -> our type (PB_MSG_NONE for none or unknown). */
static int type_of_case(Probs__Envelope__BodyCase c) {
  switch (c) {
    case PROBS__ENVELOPE__BODY_HELLO:
      return PB_MSG_HELLO;
    case PROBS__ENVELOPE__BODY_HELLO_REPLY:
      return PB_MSG_HELLO_REPLY;
    case PROBS__ENVELOPE__BODY_WORK_REQUEST:
      return PB_MSG_WORK_REQUEST;
    case PROBS__ENVELOPE__BODY_WORK_ITEM:
      return PB_MSG_WORK_ITEM;
    case PROBS__ENVELOPE__BODY_NO_WORK:
      return PB_MSG_NO_WORK;
    case PROBS__ENVELOPE__BODY_SELFPLAY_RESULT:
      return PB_MSG_SELFPLAY_RESULT;
    case PROBS__ENVELOPE__BODY_SEARCH_RESULT:
      return PB_MSG_SEARCH_RESULT;
    case PROBS__ENVELOPE__BODY_HEARTBEAT:
      return PB_MSG_HEARTBEAT;
    case PROBS__ENVELOPE__BODY_WEIGHTS_REQUEST:
      return PB_MSG_WEIGHTS_REQUEST;
    case PROBS__ENVELOPE__BODY_WEIGHTS:
      return PB_MSG_WEIGHTS;
    case PROBS__ENVELOPE__BODY_ANNOUNCE:
      return PB_MSG_ANNOUNCE;
    case PROBS__ENVELOPE__BODY_REJECT:
      return PB_MSG_REJECT;
    case PROBS__ENVELOPE__BODY_BYE:
      return PB_MSG_BYE;
    default:
      return PB_MSG_NONE;
  }
}

/* ---- error context ---------------------------------------------------- */

/* Who is complaining about what: errors read
 * "SelfplayResult from 'actor-1': episodes[3].states: ..." on decode and
 * "encode SelfplayResult: ..." on encode. */
typedef struct ctx {
  pb_err_t *err;
  int code; /* for rule violations: PB_EINVAL (encode) or PB_EPROTO */
  int decoding;
  char prefix[PB_MSG_ID_MAX + 48];
} ctx_t;

static void ctx_init(ctx_t *c, pb_err_t *err, int decoding) {
  c->err = err;
  c->decoding = decoding;
  c->code = decoding ? PB_EPROTO : PB_EINVAL;
  snprintf(c->prefix, sizeof c->prefix, decoding ? "message" : "encode");
}

static void ctx_name(ctx_t *c, int type, const char *sender) {
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

static int fail(ctx_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(ctx_t *c, int code, const char *fmt, ...) {
  char detail[PB_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return pb_err_set(c->err, code, "%s: %s", c->prefix, detail);
}

/* ---- field rules shared by encode and decode -------------------------- */

enum { TEXT_ID, TEXT_FREE };

/* Ids and host names are printable ASCII without spaces; free text may
 * hold any byte but control characters (it ends up in logs). s has room
 * for max + 1 bytes. */
static int check_text(ctx_t *c, const char *field, const char *s, size_t max,
                      int kind, int required) {
  size_t n = strnlen(s, max + 1);
  if (n > max) return fail(c, c->code, "%s: longer than %zu bytes", field, max);
  if (required && n == 0) return fail(c, c->code, "%s: empty", field);
  for (size_t i = 0; i < n; i++) {
    unsigned ch = (unsigned char)s[i];
    int bad =
        kind == TEXT_ID ? (ch < 0x21 || ch > 0x7e) : (ch < 0x20 || ch == 0x7f);
    if (bad)
      return fail(c, c->code, "%s: byte %zu is 0x%02x, not allowed here", field,
                  i, ch);
  }
  return 0;
}

static int check_range(ctx_t *c, const char *field, uint64_t v, uint64_t lo,
                       uint64_t hi) {
  if (v < lo || v > hi)
    return fail(c, c->code, "%s: %llu outside [%llu, %llu]", field,
                (unsigned long long)v, (unsigned long long)lo,
                (unsigned long long)hi);
  return 0;
}

static int check_role(ctx_t *c, const char *field, int role) {
  if (role < PB_ROLE_ACTOR || role > PB_ROLE_EVALUATOR)
    return fail(c, c->code,
                "%s: %d is not a role (1 actor, 2 searcher, "
                "3 evaluator)",
                field, role);
  return 0;
}

/* Finite and in [lo, hi]. */
static int check_real(ctx_t *c, const char *field, double v, double lo,
                      double hi) {
  if (!isfinite(v) || v < lo || v > hi)
    return fail(c, c->code, "%s: %g outside [%g, %g]", field, v, lo, hi);
  return 0;
}

static int check_header_syntax(ctx_t *c, const pb_msg_header_t *h) {
  int rc = check_text(c, "header.sender_id", h->sender_id, PB_MSG_ID_MAX,
                      TEXT_ID, 1);
  if (rc == 0)
    rc = check_text(c, "header.run_id", h->run_id, PB_MSG_ID_MAX, TEXT_ID, 0);
  return rc;
}

/* Messages that carry positions or per-action values need a game. */
static int needs_game(const pb_msg_t *m) {
  return m->type == PB_MSG_SELFPLAY_RESULT || m->type == PB_MSG_SEARCH_RESULT ||
         (m->type == PB_MSG_WORK_ITEM && m->work_item.kind == PB_WORK_SEARCH);
}

/* Scalar rules of every body. Pointers and their contents are checked only
 * when encoding: decode checks them while it fills them (sizes against the
 * wire, positions with the game). g is the header's game (NULL only where
 * needs_game is false). */
static int check_body(ctx_t *c, const pb_msg_t *m, const pb_game_t *g) {
  int rc = 0;
  char field[64];
  switch (m->type) {
    case PB_MSG_HELLO: {
      const pb_msg_hello_t *b = &m->hello;
      if ((rc = check_role(c, "role", b->role))) return rc;
      if ((rc = check_range(c, "threads", b->threads, 1, PB_MSG_MAX_THREADS)))
        return rc;
      return check_text(c, "hostname", b->hostname, PB_MSG_HOST_MAX, TEXT_ID,
                        0);
    }
    case PB_MSG_HELLO_REPLY: {
      const pb_msg_hello_reply_t *b = &m->hello_reply;
      if ((rc = check_range(c, "accepted", (uint64_t)(unsigned)b->accepted, 0,
                            1)))
        return rc;
      if ((rc = check_text(c, "message", b->message, PB_MSG_TEXT_MAX, TEXT_FREE,
                           0)))
        return rc;
      if ((rc = check_range(c, "expansions", b->expansions, 0,
                            PB_MSG_MAX_EXPANSIONS)))
        return rc;
      if ((rc = check_range(c, "max_depth", b->max_depth, 0, PB_MSG_MAX_DEPTH)))
        return rc;
      if ((rc = check_range(c, "max_turns", b->max_turns, 0, PB_MSG_MAX_TURNS)))
        return rc;
      if ((rc = check_real(c, "eps", b->eps, 0.0, 1.0))) return rc;
      if ((rc = check_real(c, "temperature", b->temperature, 0.0, 100.0)))
        return rc;
      if (b->temperature != 0.0 && b->temperature < 0.01)
        return check_real(c, "temperature", b->temperature, 0.01, 100.0);
      if ((rc = check_range(c, "algorithm", b->algorithm, PB_ALGO_PROBS,
                            PB_ALGO_ALPHAZERO)))
        return rc;
      if (b->algorithm == PB_ALGO_ALPHAZERO) {
        if ((rc = check_range(c, "simulations", b->simulations, 1,
                              PB_MSG_MAX_SIMULATIONS)))
          return rc;
        if ((rc = check_real(c, "c_puct", b->c_puct, 1e-3, 100.0))) return rc;
        if ((rc = check_range(c, "temp_moves", b->temp_moves, 0,
                              PB_MSG_MAX_TURNS)))
          return rc;
      }
      return check_real(c, "alpha", b->alpha, 0.0, 1e6);
    }
    case PB_MSG_WORK_REQUEST:
      if ((rc = check_role(c, "role", m->work_request.role))) return rc;
      return check_range(c, "capacity", m->work_request.capacity, 0,
                         PB_MSG_MAX_CAPACITY);
    case PB_MSG_WORK_ITEM: {
      const pb_msg_work_item_t *b = &m->work_item;
      if ((rc =
               check_range(c, "lease_ms", b->lease_ms, 1, PB_MSG_MAX_LEASE_MS)))
        return rc;
      if (b->kind == PB_WORK_SELFPLAY)
        return check_range(c, "selfplay.episodes", b->episodes, 1,
                           PB_MSG_MAX_EPISODES);
      if (b->kind != PB_WORK_SEARCH)
        return fail(c, c->code,
                    "kind: %d is neither selfplay (1) nor search "
                    "(2)",
                    b->kind);
      if ((rc = check_range(c, "search.n_states", b->n_states, 1,
                            PB_MSG_MAX_STATES)))
        return rc;
      if ((rc = check_range(c, "search.expansions", b->expansions, 1,
                            PB_MSG_MAX_EXPANSIONS)))
        return rc;
      if ((rc = check_range(c, "search.max_depth", b->max_depth, 1,
                            PB_MSG_MAX_DEPTH)))
        return rc;
      if (!c->decoding && b->states == NULL)
        return fail(c, c->code, "search.states: NULL");
      return 0;
    }
    case PB_MSG_NO_WORK:
      return check_range(c, "retry_ms", m->no_work.retry_ms, 0,
                         PB_MSG_MAX_RETRY_MS);
    case PB_MSG_SELFPLAY_RESULT: {
      const pb_msg_selfplay_result_t *b = &m->selfplay_result;
      if ((rc = check_range(c, "episodes", b->n_episodes, 1,
                            PB_MSG_MAX_EPISODES)))
        return rc;
      if (c->decoding) return 0; /* per episode: while decoding them */
      if (b->episodes == NULL) return fail(c, c->code, "episodes: NULL");
      for (uint32_t i = 0; i < b->n_episodes; i++) {
        const pb_msg_episode_t *e = &b->episodes[i];
        snprintf(field, sizeof field, "episodes[%u].n_states", i);
        if ((rc =
                 check_range(c, field, e->n_states, 1, (uint64_t)g->max_turns)))
          return rc;
        if (e->states == NULL)
          return fail(c, c->code, "episodes[%u].states: NULL", i);
        if (e->final_reward < -1 || e->final_reward > 1)
          return fail(c, c->code,
                      "episodes[%u].final_reward: %d, not -1, 0 "
                      "or 1",
                      i, e->final_reward);
      }
      return 0;
    }
    case PB_MSG_SEARCH_RESULT: {
      const pb_msg_search_result_t *b = &m->search_result;
      if ((rc = check_range(c, "n_states", b->n_states, 1, PB_MSG_MAX_STATES)))
        return rc;
      if (b->n_actions != (uint32_t)g->num_actions)
        return fail(c, c->code, "n_actions: %u, but %s has %d actions",
                    b->n_actions, g->name, g->num_actions);
      if (c->decoding) return 0;
      if (b->qvalues == NULL) return fail(c, c->code, "qvalues: NULL");
      size_t n = (size_t)b->n_states * b->n_actions;
      for (size_t i = 0; i < n; i++)
        if (!isfinite(b->qvalues[i]))
          return fail(c, c->code, "qvalues[%zu][%zu]: not finite",
                      i / b->n_actions, i % b->n_actions);
      return 0;
    }
    case PB_MSG_HEARTBEAT:
      if ((rc = check_range(c, "item_ids", m->heartbeat.n_item_ids, 0,
                            PB_MSG_MAX_ITEM_IDS)))
        return rc;
      if (!c->decoding && m->heartbeat.n_item_ids > 0 &&
          m->heartbeat.item_ids == NULL)
        return fail(c, c->code, "item_ids: NULL");
      return 0;
    case PB_MSG_WEIGHTS_REQUEST:
      if (m->weights_request.which < PB_WHICH_V ||
          m->weights_request.which > PB_WHICH_BOTH)
        return fail(c, c->code, "which: %d is not V (1), Q (2) or both (3)",
                    m->weights_request.which);
      return 0;
    case PB_MSG_WEIGHTS: {
      const pb_msg_weights_t *b = &m->weights;
      if (b->v_len > PB_MSG_MAX_WEIGHTS || b->q_len > PB_MSG_MAX_WEIGHTS)
        return fail(c, c->code, "%s: %zu bytes, over the cap of %u",
                    b->v_len > PB_MSG_MAX_WEIGHTS ? "v_weights" : "q_weights",
                    b->v_len > PB_MSG_MAX_WEIGHTS ? b->v_len : b->q_len,
                    PB_MSG_MAX_WEIGHTS);
      if (b->v_len == 0 && b->q_len == 0)
        return fail(c, c->code, "v_weights and q_weights: both empty");
      if ((b->v_len > 0 && b->v_weights == NULL) ||
          (b->q_len > 0 && b->q_weights == NULL))
        return fail(
            c, c->code, "%s: NULL with a length",
            b->v_len > 0 && b->v_weights == NULL ? "v_weights" : "q_weights");
      return 0;
    }
    case PB_MSG_ANNOUNCE:
      if (m->announce.phase < PB_PHASE_SELFPLAY ||
          m->announce.phase > PB_PHASE_STOPPING)
        return fail(c, c->code, "phase: %d is not a phase (1..5)",
                    m->announce.phase);
      return 0;
    case PB_MSG_REJECT:
      if (m->reject.code >= 0)
        return fail(c, c->code, "code: %d, not a negative PB_E* code",
                    m->reject.code);
      return check_text(c, "message", m->reject.message, PB_MSG_TEXT_MAX,
                        TEXT_FREE, 0);
    case PB_MSG_BYE:
      return check_text(c, "reason", m->bye.reason, PB_MSG_TEXT_MAX, TEXT_FREE,
                        0);
    default:
      return fail(c, c->code, "type %d is not a message type", m->type);
  }
}

/* ---- encode ----------------------------------------------------------- */

static void store_f32le(uint8_t *p, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  p[0] = (uint8_t)u;
  p[1] = (uint8_t)(u >> 8);
  p[2] = (uint8_t)(u >> 16);
  p[3] = (uint8_t)(u >> 24);
}

static float load_f32le(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Scratch holds what the protobuf-c structs point to while packing; its
 * old contents need not survive growth. */
static int reserve_scratch(pb_msg_buf_t *b, size_t need) {
  if (need <= b->scratch_cap) return 0;
  size_t cap = b->scratch_cap ? b->scratch_cap : 4096;
  while (cap < need) cap *= 2;
  void *p = malloc(cap);
  if (p == NULL) return PB_ENOMEM;
  free(b->scratch);
  b->scratch = p;
  b->scratch_cap = cap;
  return 0;
}

static size_t align_up(size_t n) {
  return (n + 15) & ~(size_t)15;
}

static Probs__Role role_out(int role) {
  return (Probs__Role)role;
}

/* Builds the protobuf-c view of m (pointing into m and b->scratch) and packs
 * it into b->data: grown by doubling, or allocated to the exact size when
 * `exact` (pb_msg_encode hands that buffer over). */
static int encode_impl(const pb_msg_t *m, pb_msg_buf_t *b, int exact,
                       pb_err_t *err) {
  ctx_t c;
  ctx_init(&c, err, 0);
  if (m == NULL || b == NULL)
    return pb_err_set(err, PB_EINVAL, "encode: NULL message or buffer");
  b->len = 0;
  ctx_name(&c, m->type, NULL);
  int rc = check_header_syntax(&c, &m->header);
  if (rc) return rc;
  const pb_game_t *g = NULL;
  if (needs_game(m)) {
    g = pb_game_by_id(m->header.game_id);
    if (g == NULL)
      return fail(&c, PB_EINVAL,
                  "header.game_id: %d is not a known game, "
                  "and this message carries positions or actions",
                  m->header.game_id);
  }
  if ((rc = check_body(&c, m, g))) return rc;

  Probs__Header hdr = PROBS__HEADER__INIT;
  hdr.protocol_version = m->header.protocol_version;
  hdr.run_id = (char *)m->header.run_id;
  hdr.game_id = (uint32_t)m->header.game_id;
  hdr.sender_id = (char *)m->header.sender_id;
  Probs__Envelope env = PROBS__ENVELOPE__INIT;
  env.header = &hdr;

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

  switch (m->type) {
    case PB_MSG_HELLO:
      probs__hello__init(&body.hello);
      body.hello.role = role_out(m->hello.role);
      body.hello.threads = m->hello.threads;
      body.hello.pid = m->hello.pid;
      body.hello.hostname = (char *)m->hello.hostname;
      env.body_case = PROBS__ENVELOPE__BODY_HELLO;
      env.hello = &body.hello;
      break;
    case PB_MSG_HELLO_REPLY: {
      const pb_msg_hello_reply_t *s = &m->hello_reply;
      Probs__HelloReply *d = &body.hello_reply;
      probs__hello_reply__init(d);
      d->accepted = s->accepted;
      d->message = (char *)s->message;
      d->version = s->version;
      d->expansions = s->expansions;
      d->max_depth = s->max_depth;
      d->max_turns = s->max_turns;
      d->eps = s->eps;
      d->alpha = s->alpha;
      d->seed = s->seed;
      d->temperature = s->temperature;
      d->algorithm = s->algorithm;
      d->simulations = s->simulations;
      d->c_puct = s->c_puct;
      d->temp_moves = s->temp_moves;
      env.body_case = PROBS__ENVELOPE__BODY_HELLO_REPLY;
      env.hello_reply = d;
      break;
    }
    case PB_MSG_WORK_REQUEST:
      probs__work_request__init(&body.work_request);
      body.work_request.role = role_out(m->work_request.role);
      body.work_request.capacity = m->work_request.capacity;
      env.body_case = PROBS__ENVELOPE__BODY_WORK_REQUEST;
      env.work_request = &body.work_request;
      break;
    case PB_MSG_WORK_ITEM: {
      const pb_msg_work_item_t *s = &m->work_item;
      Probs__WorkItem *d = &body.work_item;
      probs__work_item__init(d);
      d->item_id = s->item_id;
      d->lease_ms = s->lease_ms;
      if (s->kind == PB_WORK_SELFPLAY) {
        probs__selfplay_work__init(&spw);
        spw.episodes = s->episodes;
        spw.seed = s->seed;
        spw.q_version = s->q_version;
        d->work_case = PROBS__WORK_ITEM__WORK_SELFPLAY;
        d->selfplay = &spw;
      } else {
        size_t sb = (size_t)g->state_bytes, n = s->n_states;
        if (reserve_scratch(b, n * sb))
          return pb_err_set(err, PB_ENOMEM, "encode WorkItem: out of memory");
        uint8_t *p = b->scratch;
        for (size_t i = 0; i < n; i++) g->pack(&s->states[i], p + i * sb);
        probs__search_work__init(&sw);
        sw.states.data = p;
        sw.states.len = n * sb;
        sw.n_states = s->n_states;
        sw.v_version = s->v_version;
        sw.q_version = s->q_version;
        sw.expansions = s->expansions;
        sw.max_depth = s->max_depth;
        d->work_case = PROBS__WORK_ITEM__WORK_SEARCH;
        d->search = &sw;
      }
      env.body_case = PROBS__ENVELOPE__BODY_WORK_ITEM;
      env.work_item = d;
      break;
    }
    case PB_MSG_NO_WORK:
      probs__no_work__init(&body.no_work);
      body.no_work.retry_ms = m->no_work.retry_ms;
      env.body_case = PROBS__ENVELOPE__BODY_NO_WORK;
      env.no_work = &body.no_work;
      break;
    case PB_MSG_SELFPLAY_RESULT: {
      const pb_msg_selfplay_result_t *s = &m->selfplay_result;
      size_t ne = s->n_episodes, sb = (size_t)g->state_bytes, total = 0,
             npol = 0;
      for (size_t i = 0; i < ne; i++) {
        total += s->episodes[i].n_states;
        if (s->episodes[i].policy != NULL)
          npol += (size_t)s->episodes[i].n_states * g->num_actions;
      }
      size_t off_ptrs = align_up(ne * sizeof(Probs__Episode));
      size_t off_bytes = off_ptrs + align_up(ne * sizeof(Probs__Episode *));
      if (reserve_scratch(b, off_bytes + total * sb + npol * 4))
        return pb_err_set(err, PB_ENOMEM,
                          "encode SelfplayResult: out of memory");
      uint8_t *base = b->scratch;
      Probs__Episode *eps = (Probs__Episode *)(void *)base;
      Probs__Episode **ptrs = (Probs__Episode **)(void *)(base + off_ptrs);
      uint8_t *p = base + off_bytes;
      for (size_t i = 0; i < ne; i++) {
        const pb_msg_episode_t *e = &s->episodes[i];
        probs__episode__init(&eps[i]);
        eps[i].states.data = p;
        eps[i].states.len = e->n_states * sb;
        for (uint32_t t = 0; t < e->n_states; t++, p += sb)
          g->pack(&e->states[t], p);
        eps[i].n_states = e->n_states;
        eps[i].final_reward = e->final_reward;
        eps[i].q_version = e->q_version;
        if (e->policy != NULL) {
          size_t np = (size_t)e->n_states * g->num_actions;
          eps[i].policy.data = p;
          eps[i].policy.len = np * 4;
          for (size_t k = 0; k < np; k++, p += 4) store_f32le(p, e->policy[k]);
        }
        ptrs[i] = &eps[i];
      }
      probs__selfplay_result__init(&body.selfplay_result);
      body.selfplay_result.item_id = s->item_id;
      body.selfplay_result.n_episodes = ne;
      body.selfplay_result.episodes = ptrs;
      env.body_case = PROBS__ENVELOPE__BODY_SELFPLAY_RESULT;
      env.selfplay_result = &body.selfplay_result;
      break;
    }
    case PB_MSG_SEARCH_RESULT: {
      const pb_msg_search_result_t *s = &m->search_result;
      size_t n = (size_t)s->n_states * s->n_actions;
      if (reserve_scratch(b, n * 4))
        return pb_err_set(err, PB_ENOMEM, "encode SearchResult: out of memory");
      uint8_t *p = b->scratch;
      for (size_t i = 0; i < n; i++) store_f32le(p + 4 * i, s->qvalues[i]);
      Probs__SearchResult *d = &body.search_result;
      probs__search_result__init(d);
      d->item_id = s->item_id;
      d->n_states = s->n_states;
      d->n_actions = s->n_actions;
      d->qvalues.data = p;
      d->qvalues.len = n * 4;
      env.body_case = PROBS__ENVELOPE__BODY_SEARCH_RESULT;
      env.search_result = d;
      break;
    }
    case PB_MSG_HEARTBEAT:
      probs__heartbeat__init(&body.heartbeat);
      body.heartbeat.n_item_ids = m->heartbeat.n_item_ids;
      body.heartbeat.item_ids = (uint64_t *)m->heartbeat.item_ids;
      env.body_case = PROBS__ENVELOPE__BODY_HEARTBEAT;
      env.heartbeat = &body.heartbeat;
      break;
    case PB_MSG_WEIGHTS_REQUEST:
      probs__weights_request__init(&body.weights_request);
      body.weights_request.version = m->weights_request.version;
      body.weights_request.which = (Probs__Which)m->weights_request.which;
      env.body_case = PROBS__ENVELOPE__BODY_WEIGHTS_REQUEST;
      env.weights_request = &body.weights_request;
      break;
    case PB_MSG_WEIGHTS:
      probs__weights__init(&body.weights);
      body.weights.version = m->weights.version;
      body.weights.v_weights.data = (uint8_t *)m->weights.v_weights;
      body.weights.v_weights.len = m->weights.v_len;
      body.weights.q_weights.data = (uint8_t *)m->weights.q_weights;
      body.weights.q_weights.len = m->weights.q_len;
      env.body_case = PROBS__ENVELOPE__BODY_WEIGHTS;
      env.weights = &body.weights;
      break;
    case PB_MSG_ANNOUNCE:
      probs__announce__init(&body.announce);
      body.announce.version = m->announce.version;
      body.announce.iteration = m->announce.iteration;
      body.announce.phase = (Probs__Phase)m->announce.phase;
      env.body_case = PROBS__ENVELOPE__BODY_ANNOUNCE;
      env.announce = &body.announce;
      break;
    case PB_MSG_REJECT:
      probs__reject__init(&body.reject);
      body.reject.code = m->reject.code;
      body.reject.message = (char *)m->reject.message;
      env.body_case = PROBS__ENVELOPE__BODY_REJECT;
      env.reject = &body.reject;
      break;
    case PB_MSG_BYE:
      probs__bye__init(&body.bye);
      body.bye.reason = (char *)m->bye.reason;
      env.body_case = PROBS__ENVELOPE__BODY_BYE;
      env.bye = &body.bye;
      break;
    default: /* check_body refused it already */
      return fail(&c, PB_EINVAL, "type %d is not a message type", m->type);
  }

  size_t size = probs__envelope__get_packed_size(&env);
  if (size > PB_MSG_MAX_BYTES)
    return fail(&c, PB_EINVAL, "%zu bytes, over the cap of %u", size,
                PB_MSG_MAX_BYTES);
  if (exact || size > b->cap) {
    size_t cap = size ? size : 1;
    if (!exact) {
      cap = b->cap ? b->cap : 256;
      while (cap < size) cap *= 2;
    }
    uint8_t *p = malloc(cap);
    if (p == NULL) return fail(&c, PB_ENOMEM, "out of memory (%zu bytes)", cap);
    free(b->data);
    b->data = p;
    b->cap = cap;
  }
  b->len = probs__envelope__pack(&env, b->data);
  return 0;
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

/* ---- decode ----------------------------------------------------------- */

/* Copies a protobuf-c string into a fixed array of max + 1 bytes, refusing
 * one that does not fit. */
static int copy_text(ctx_t *c, const char *field, char *dst, const char *src,
                     size_t max) {
  if (src == NULL) src = "";
  size_t n = strnlen(src, max + 1);
  if (n > max)
    return fail(c, PB_EPROTO, "%s: longer than %zu bytes", field, max);
  memcpy(dst, src, n);
  dst[n] = '\0';
  return 0;
}

/* Version, then who sent it (for every later message), then whether run
 * and game are ours. */
static int decode_header(ctx_t *c, const Probs__Envelope *env, int type,
                         const pb_msg_expect_t *ex, pb_msg_header_t *h,
                         const pb_game_t **game) {
  const Probs__Header *w = env->header;
  if (w == NULL) return fail(c, PB_EPROTO, "header: missing");
  h->protocol_version = w->protocol_version;
  int rc = copy_text(c, "header.sender_id", h->sender_id, w->sender_id,
                     PB_MSG_ID_MAX);
  if (rc == 0)
    rc = copy_text(c, "header.run_id", h->run_id, w->run_id, PB_MSG_ID_MAX);
  if (rc == 0) rc = check_header_syntax(c, h);
  if (rc)
    h->sender_id[0] = h->run_id[0] = '\0'; /* not fit for logs */
  else
    ctx_name(c, type, h->sender_id);
  /* A peer of another version is told so even if the rest of its header
   * reads differently to us. */
  if (w->protocol_version != PB_PROTOCOL_VERSION)
    return fail(c, PB_EMISMATCH,
                "header.protocol_version: got %u, "
                "expected %u",
                w->protocol_version, PB_PROTOCOL_VERSION);
  if (rc) return rc;
  if (type == PB_MSG_NONE)
    return fail(c, PB_EPROTO, "body: missing or of an unknown type");

  const char *want_run = ex && ex->run_id ? ex->run_id : "";
  if (h->run_id[0] == '\0') {
    if (type != PB_MSG_HELLO)
      return fail(c, PB_EPROTO,
                  "header.run_id: empty (only a Hello may "
                  "omit it)");
  } else if (want_run[0] != '\0' && strcmp(h->run_id, want_run) != 0) {
    return fail(c, PB_EMISMATCH, "header.run_id: got '%s', expected '%s'",
                h->run_id, want_run);
  }

  uint32_t gid = w->game_id;
  int want_game = ex ? ex->game_id : 0;
  *game = NULL;
  if (gid == 0) {
    if (type != PB_MSG_HELLO)
      return fail(c, PB_EPROTO,
                  "header.game_id: 0 (only a Hello may omit "
                  "it)");
    return 0;
  }
  const pb_game_t *g = gid <= INT_MAX ? pb_game_by_id((int)gid) : NULL;
  if (g == NULL)
    return fail(c, PB_EMISMATCH,
                "header.game_id: got %u, not a known game "
                "(known: %s)",
                gid, pb_game_names());
  if (want_game != 0 && (int)gid != want_game) {
    const pb_game_t *wg = pb_game_by_id(want_game);
    return fail(c, PB_EMISMATCH,
                "header.game_id: got %u (%s), expected %d "
                "(%s)",
                gid, g->name, want_game, wg ? wg->name : "?");
  }
  h->game_id = (int)gid;
  *game = g;
  return 0;
}

/* Unpacks n packed positions, validating each with the game. */
static int unpack_states(ctx_t *c, const pb_game_t *g, const char *field,
                         const ProtobufCBinaryData *bytes, uint32_t n,
                         pb_state_t *out) {
  size_t sb = (size_t)g->state_bytes;
  if (bytes->len != (size_t)n * sb)
    return fail(c, PB_EPROTO, "%s: %zu bytes, expected %u states x %zu = %zu",
                field, bytes->len, n, sb, (size_t)n * sb);
  for (uint32_t i = 0; i < n; i++) {
    pb_err_t e = {0};
    if (g->unpack(&out[i], bytes->data + i * sb, sb, &e) != 0)
      return fail(c, PB_EPROTO, "%s[%u]: not a %s position: %s", field, i,
                  g->name, e.msg);
  }
  return 0;
}

/* A policy row per position: finite, in [0, 1], 0 on illegal actions,
 * summing to 1 (within 1e-3). */
static int check_policy(ctx_t *c, const pb_game_t *g, uint32_t ei,
                        const pb_msg_episode_t *e) {
  const int A = g->num_actions;
  for (uint32_t t = 0; t < e->n_states; t++) {
    uint8_t acts[PB_MAX_ACTIONS], legal[PB_MAX_ACTIONS] = {0};
    int n = g->legal(&e->states[t], acts);
    for (int k = 0; k < n; k++) legal[acts[k]] = 1;
    const float *row = &e->policy[(size_t)t * A];
    double sum = 0;
    for (int a = 0; a < A; a++) {
      float x = row[a];
      if (!(x >= 0.0f && x <= 1.0f))
        return fail(c, PB_EPROTO,
                    "episodes[%u].policy[%u][%d]: %g, not a probability", ei,
                    t, a, (double)x);
      if (x != 0.0f && !legal[a])
        return fail(c, PB_EPROTO,
                    "episodes[%u].policy[%u][%d]: %g on an illegal action",
                    ei, t, a, (double)x);
      sum += x;
    }
    if (fabs(sum - 1.0) > 1e-3)
      return fail(c, PB_EPROTO, "episodes[%u].policy[%u]: sums to %g, not 1",
                  ei, t, sum);
  }
  return 0;
}

/* An episode is the positions where moves were chosen: none is terminal,
 * each follows the one before by a legal move, and a decisive final_reward
 * must be what some legal last move gives its mover. */
static int check_episode(ctx_t *c, const pb_game_t *g, uint32_t ei,
                         const pb_msg_episode_t *e) {
  uint8_t acts[PB_MAX_ACTIONS];
  for (uint32_t t = 0; t < e->n_states; t++) {
    int n = g->legal(&e->states[t], acts);
    if (n <= 0)
      return fail(c, PB_EPROTO,
                  "episodes[%u].states[%u]: a finished game, "
                  "where no move can be chosen",
                  ei, t);
    int found = 0;
    for (int k = 0; k < n && !found; k++) {
      pb_state_t s = e->states[t];
      int done = 0;
      float r = g->step(&s, acts[k], &done);
      if (t + 1 < e->n_states)
        found = memcmp(&s, &e->states[t + 1], sizeof s) == 0;
      else
        found = e->final_reward == 0 || (done && r == (float)e->final_reward);
    }
    if (!found) {
      if (t + 1 < e->n_states)
        return fail(c, PB_EPROTO,
                    "episodes[%u].states[%u]: not reachable "
                    "from states[%u] by one legal move",
                    ei, t + 1, t);
      return fail(c, PB_EPROTO,
                  "episodes[%u].final_reward: %d, but no legal "
                  "move from the last state ends the game so",
                  ei, e->final_reward);
    }
  }
  return 0;
}

static int decode_selfplay(ctx_t *c, const Probs__SelfplayResult *w,
                           const pb_game_t *g, pb_msg_t *out) {
  pb_msg_selfplay_result_t *d = &out->selfplay_result;
  d->item_id = w->item_id;
  if (w->n_episodes > PB_MSG_MAX_EPISODES)
    return fail(c, PB_EPROTO, "episodes: %zu, over the cap of %d",
                w->n_episodes, PB_MSG_MAX_EPISODES);
  d->n_episodes = (uint32_t)w->n_episodes;
  int rc = check_body(c, out, g);
  if (rc) return rc;
  size_t total = 0, npol = 0;
  char field[64];
  for (uint32_t i = 0; i < d->n_episodes; i++) {
    const Probs__Episode *e = w->episodes[i];
    if (e == NULL) return fail(c, PB_EPROTO, "episodes[%u]: missing", i);
    snprintf(field, sizeof field, "episodes[%u].n_states", i);
    if ((rc = check_range(c, field, e->n_states, 1, (uint64_t)g->max_turns)))
      return rc;
    if (e->states.len != (size_t)e->n_states * (size_t)g->state_bytes)
      return fail(c, PB_EPROTO,
                  "episodes[%u].states: %zu bytes, expected "
                  "%u states x %d = %zu",
                  i, e->states.len, e->n_states, g->state_bytes,
                  (size_t)e->n_states * g->state_bytes);
    if (e->final_reward < -1 || e->final_reward > 1)
      return fail(c, PB_EPROTO,
                  "episodes[%u].final_reward: %d, not -1, 0 "
                  "or 1",
                  i, e->final_reward);
    size_t np = (size_t)e->n_states * g->num_actions;
    if (e->policy.len != 0 && e->policy.len != np * 4)
      return fail(c, PB_EPROTO,
                  "episodes[%u].policy: %zu bytes, expected 0 or %u states x "
                  "%d actions x 4 = %zu",
                  i, e->policy.len, e->n_states, g->num_actions, np * 4);
    if ((e->policy.len != 0) != (w->episodes[0]->policy.len != 0))
      return fail(c, PB_EPROTO,
                  "episodes[%u].policy: %s, but episodes[0]'s %s", i,
                  e->policy.len ? "present" : "absent",
                  e->policy.len ? "is absent" : "is present");
    total += e->n_states;
    if (e->policy.len) npol += np;
  }
  /* Sizes now agree with the bytes received, so this is bounded by len. */
  size_t off = align_up(d->n_episodes * sizeof(pb_msg_episode_t));
  uint8_t *mem = malloc(off + total * sizeof(pb_state_t) + npol * 4);
  if (mem == NULL) return fail(c, PB_ENOMEM, "out of memory");
  out->pb__mem = mem;
  pb_msg_episode_t *eps = (pb_msg_episode_t *)(void *)mem;
  pb_state_t *st = (pb_state_t *)(void *)(mem + off);
  float *pol = (float *)(void *)(mem + off + total * sizeof(pb_state_t));
  for (uint32_t i = 0; i < d->n_episodes; i++) {
    const Probs__Episode *e = w->episodes[i];
    snprintf(field, sizeof field, "episodes[%u].states", i);
    if ((rc = unpack_states(c, g, field, &e->states, e->n_states, st)))
      return rc;
    eps[i].states = st;
    eps[i].n_states = e->n_states;
    eps[i].final_reward = e->final_reward;
    eps[i].q_version = e->q_version;
    eps[i].policy = NULL;
    st += e->n_states;
    if ((rc = check_episode(c, g, i, &eps[i]))) return rc;
    if (e->policy.len) {
      size_t np = (size_t)e->n_states * g->num_actions;
      for (size_t k = 0; k < np; k++) pol[k] = load_f32le(e->policy.data + 4 * k);
      eps[i].policy = pol;
      pol += np;
      if ((rc = check_policy(c, g, i, &eps[i]))) return rc;
    }
  }
  d->episodes = eps;
  return 0;
}

static int decode_work_item(ctx_t *c, const Probs__WorkItem *w,
                            const pb_game_t *g, pb_msg_t *out) {
  pb_msg_work_item_t *d = &out->work_item;
  d->item_id = w->item_id;
  d->lease_ms = w->lease_ms;
  if (w->work_case == PROBS__WORK_ITEM__WORK_SELFPLAY && w->selfplay) {
    d->kind = PB_WORK_SELFPLAY;
    d->episodes = w->selfplay->episodes;
    d->seed = w->selfplay->seed;
    d->q_version = w->selfplay->q_version;
    return check_body(c, out, g);
  }
  if (w->work_case != PROBS__WORK_ITEM__WORK_SEARCH || w->search == NULL)
    return fail(c, PB_EPROTO, "work: neither selfplay nor search");
  const Probs__SearchWork *s = w->search;
  d->kind = PB_WORK_SEARCH;
  d->n_states = s->n_states;
  d->v_version = s->v_version;
  d->q_version = s->q_version;
  d->expansions = s->expansions;
  d->max_depth = s->max_depth;
  int rc = check_body(c, out, g);
  if (rc) return rc;
  if (s->states.len != (size_t)s->n_states * (size_t)g->state_bytes)
    return fail(c, PB_EPROTO,
                "search.states: %zu bytes, expected %u states "
                "x %d = %zu",
                s->states.len, s->n_states, g->state_bytes,
                (size_t)s->n_states * g->state_bytes);
  pb_state_t *st = malloc((size_t)s->n_states * sizeof *st);
  if (st == NULL) return fail(c, PB_ENOMEM, "out of memory");
  out->pb__mem = st;
  if ((rc = unpack_states(c, g, "search.states", &s->states, s->n_states, st)))
    return rc;
  d->states = st;
  return 0;
}

static int decode_search_result(ctx_t *c, const Probs__SearchResult *w,
                                const pb_game_t *g, pb_msg_t *out) {
  pb_msg_search_result_t *d = &out->search_result;
  d->item_id = w->item_id;
  d->n_states = w->n_states;
  d->n_actions = w->n_actions;
  int rc = check_body(c, out, g);
  if (rc) return rc;
  size_t n = (size_t)d->n_states * d->n_actions;
  if (w->qvalues.len != n * 4)
    return fail(c, PB_EPROTO,
                "qvalues: %zu bytes, expected %u states x %u "
                "actions x 4 = %zu",
                w->qvalues.len, d->n_states, d->n_actions, n * 4);
  float *q = malloc(n * sizeof *q);
  if (q == NULL) return fail(c, PB_ENOMEM, "out of memory");
  out->pb__mem = q;
  for (size_t i = 0; i < n; i++) {
    q[i] = load_f32le(w->qvalues.data + 4 * i);
    if (!isfinite(q[i]))
      return fail(c, PB_EPROTO, "qvalues[%zu][%zu]: not finite",
                  i / d->n_actions, i % d->n_actions);
  }
  d->qvalues = q;
  return 0;
}

/* Fills out's body from env (header already done). May set out->pb__mem
 * or out->pb__unpacked even when it fails; the caller frees them. */
static int decode_body(ctx_t *c, Probs__Envelope *env, const pb_game_t *g,
                       pb_msg_t *out) {
  int rc;
  switch (out->type) {
    case PB_MSG_HELLO: {
      const Probs__Hello *w = env->hello;
      out->hello.role = (int)w->role;
      out->hello.threads = w->threads;
      out->hello.pid = w->pid;
      if ((rc = copy_text(c, "hostname", out->hello.hostname, w->hostname,
                          PB_MSG_HOST_MAX)))
        return rc;
      return check_body(c, out, g);
    }
    case PB_MSG_HELLO_REPLY: {
      const Probs__HelloReply *w = env->hello_reply;
      pb_msg_hello_reply_t *d = &out->hello_reply;
      d->accepted = w->accepted != 0;
      if ((rc = copy_text(c, "message", d->message, w->message,
                          PB_MSG_TEXT_MAX)))
        return rc;
      d->version = w->version;
      d->expansions = w->expansions;
      d->max_depth = w->max_depth;
      d->max_turns = w->max_turns;
      d->eps = w->eps;
      d->alpha = w->alpha;
      d->seed = w->seed;
      d->temperature = w->temperature;
      d->algorithm = w->algorithm;
      d->simulations = w->simulations;
      d->c_puct = w->c_puct;
      d->temp_moves = w->temp_moves;
      return check_body(c, out, g);
    }
    case PB_MSG_WORK_REQUEST:
      out->work_request.role = (int)env->work_request->role;
      out->work_request.capacity = env->work_request->capacity;
      return check_body(c, out, g);
    case PB_MSG_WORK_ITEM:
      return decode_work_item(c, env->work_item, g, out);
    case PB_MSG_NO_WORK:
      out->no_work.retry_ms = env->no_work->retry_ms;
      return check_body(c, out, g);
    case PB_MSG_SELFPLAY_RESULT:
      return decode_selfplay(c, env->selfplay_result, g, out);
    case PB_MSG_SEARCH_RESULT:
      return decode_search_result(c, env->search_result, g, out);
    case PB_MSG_HEARTBEAT: {
      const Probs__Heartbeat *w = env->heartbeat;
      if (w->n_item_ids > PB_MSG_MAX_ITEM_IDS)
        return fail(c, PB_EPROTO, "item_ids: %zu, over the cap of %d",
                    w->n_item_ids, PB_MSG_MAX_ITEM_IDS);
      out->heartbeat.n_item_ids = (uint32_t)w->n_item_ids;
      if (w->n_item_ids > 0) {
        uint64_t *ids = malloc(w->n_item_ids * sizeof *ids);
        if (ids == NULL) return fail(c, PB_ENOMEM, "out of memory");
        memcpy(ids, w->item_ids, w->n_item_ids * sizeof *ids);
        out->pb__mem = ids;
        out->heartbeat.item_ids = ids;
      }
      return check_body(c, out, g);
    }
    case PB_MSG_WEIGHTS_REQUEST:
      out->weights_request.version = env->weights_request->version;
      out->weights_request.which = (int)env->weights_request->which;
      return check_body(c, out, g);
    case PB_MSG_WEIGHTS: {
      /* Weights are large: point into protobuf-c's copy and keep it. */
      const Probs__Weights *w = env->weights;
      pb_msg_weights_t *d = &out->weights;
      d->version = w->version;
      d->v_len = w->v_weights.len;
      d->v_weights = w->v_weights.len ? w->v_weights.data : NULL;
      d->q_len = w->q_weights.len;
      d->q_weights = w->q_weights.len ? w->q_weights.data : NULL;
      out->pb__unpacked = env;
      return check_body(c, out, g);
    }
    case PB_MSG_ANNOUNCE:
      out->announce.version = env->announce->version;
      out->announce.iteration = env->announce->iteration;
      out->announce.phase = (int)env->announce->phase;
      return check_body(c, out, g);
    case PB_MSG_REJECT:
      out->reject.code = env->reject->code;
      if ((rc = copy_text(c, "message", out->reject.message,
                          env->reject->message, PB_MSG_TEXT_MAX)))
        return rc;
      return check_body(c, out, g);
    case PB_MSG_BYE:
      if ((rc = copy_text(c, "reason", out->bye.reason, env->bye->reason,
                          PB_MSG_TEXT_MAX)))
        return rc;
      return check_body(c, out, g);
    default:
      return fail(c, PB_EPROTO, "body: of an unknown type");
  }
}

/* protobuf-c leaves a oneof member NULL only if the wire never set it, and
 * then the case is NOT_SET; this guards the pointer all the same. */
static int body_present(const Probs__Envelope *env) {
  switch (env->body_case) {
    case PROBS__ENVELOPE__BODY_HELLO:
      return env->hello != NULL;
    case PROBS__ENVELOPE__BODY_HELLO_REPLY:
      return env->hello_reply != NULL;
    case PROBS__ENVELOPE__BODY_WORK_REQUEST:
      return env->work_request != NULL;
    case PROBS__ENVELOPE__BODY_WORK_ITEM:
      return env->work_item != NULL;
    case PROBS__ENVELOPE__BODY_NO_WORK:
      return env->no_work != NULL;
    case PROBS__ENVELOPE__BODY_SELFPLAY_RESULT:
      return env->selfplay_result != NULL;
    case PROBS__ENVELOPE__BODY_SEARCH_RESULT:
      return env->search_result != NULL;
    case PROBS__ENVELOPE__BODY_HEARTBEAT:
      return env->heartbeat != NULL;
    case PROBS__ENVELOPE__BODY_WEIGHTS_REQUEST:
      return env->weights_request != NULL;
    case PROBS__ENVELOPE__BODY_WEIGHTS:
      return env->weights != NULL;
    case PROBS__ENVELOPE__BODY_ANNOUNCE:
      return env->announce != NULL;
    case PROBS__ENVELOPE__BODY_REJECT:
      return env->reject != NULL;
    case PROBS__ENVELOPE__BODY_BYE:
      return env->bye != NULL;
    default:
      return 0;
  }
}

int pb_msg_decode(const uint8_t *buf, size_t len, const pb_msg_expect_t *expect,
                  pb_msg_t *out, pb_err_t *err) {
  static const uint8_t empty[1] = {0};
  ctx_t c;
  ctx_init(&c, err, 1);
  if (out == NULL) return pb_err_set(err, PB_EINVAL, "decode: out is NULL");
  memset(out, 0, sizeof *out);
  if (buf == NULL && len > 0)
    return pb_err_set(err, PB_EINVAL, "decode: NULL buffer of %zu bytes", len);
  if (len > PB_MSG_MAX_BYTES)
    return fail(&c, PB_EPROTO, "%zu bytes, over the cap of %u", len,
                PB_MSG_MAX_BYTES);
  Probs__Envelope *env = probs__envelope__unpack(NULL, len, len ? buf : empty);
  if (env == NULL)
    return fail(&c, PB_EPROTO, "not a valid protobuf Envelope (%zu bytes)",
                len);
  int type = body_present(env) ? type_of_case(env->body_case) : PB_MSG_NONE;
  const pb_game_t *g = NULL;
  int rc = decode_header(&c, env, type, expect, &out->header, &g);
  if (rc == 0) {
    out->type = type;
    rc = decode_body(&c, env, g, out);
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
  size_t sp = (size_t)item_episodes *
                  ((turns + 1) * ((size_t)g->state_bytes +
                                  4 * (size_t)g->num_actions) +
                   64) +
              1024;
  size_t sr = (size_t)item_states *
                  ((size_t)g->num_actions * 4 + (size_t)g->state_bytes + 16) +
              1024;
  size_t most = 2 * (sp > sr ? sp : sr) + 65536;
  return most < PB_MSG_MAX_BYTES ? most : PB_MSG_MAX_BYTES;
}
