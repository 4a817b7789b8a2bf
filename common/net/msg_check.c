/* msg_check.c - the field rules of the wire messages (ranges, enums,
 * string limits), one check per body and one for the header's strings.
 * They live in one place, used by encode (PB_EINVAL: our own bug) and
 * decode (PB_EPROTO: a bad peer); msg.c picks the check of a type from its
 * table, msg_decode.c calls it once a body is filled.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "msg_impl.h"

/* ---- field rules shared by encode and decode -------------------------- */

enum { TEXT_ID, TEXT_FREE };

/* Ids and host names are printable ASCII without spaces; free text may
 * hold any byte but control characters (it ends up in logs). s has room
 * for max + 1 bytes. */
static int check_text(pb__msg_ctx_t *c, const char *field, const char *s,
                      size_t max, int kind, int required) {
  size_t n = strnlen(s, max + 1);
  if (n > max)
    return pb__msg_fail(c, c->code, "%s: longer than %zu bytes", field, max);
  if (required && n == 0) return pb__msg_fail(c, c->code, "%s: empty", field);
  for (size_t i = 0; i < n; i++) {
    unsigned ch = (unsigned char)s[i];
    int bad =
        kind == TEXT_ID ? (ch < 0x21 || ch > 0x7e) : (ch < 0x20 || ch == 0x7f);
    if (bad)
      return pb__msg_fail(
          c, c->code, "%s: byte %zu is 0x%02x, not allowed here", field, i, ch);
  }
  return 0;
}

int pb__msg_check_range(pb__msg_ctx_t *c, const char *field, uint64_t v,
                        uint64_t lo, uint64_t hi) {
  if (v < lo || v > hi)
    return pb__msg_fail(c, c->code, "%s: %llu outside [%llu, %llu]", field,
                        (unsigned long long)v, (unsigned long long)lo,
                        (unsigned long long)hi);
  return 0;
}

static int check_role(pb__msg_ctx_t *c, const char *field, int role) {
  if (role < PB_ROLE_ACTOR || role > PB_ROLE_EVALUATOR)
    return pb__msg_fail(c, c->code,
                        "%s: %d is not a role (1 actor, 2 searcher, "
                        "3 evaluator)",
                        field, role);
  return 0;
}

/* Finite and in [lo, hi]. */
static int check_real(pb__msg_ctx_t *c, const char *field, double v, double lo,
                      double hi) {
  if (!isfinite(v) || v < lo || v > hi)
    return pb__msg_fail(c, c->code, "%s: %g outside [%g, %g]", field, v, lo,
                        hi);
  return 0;
}

int pb__msg_check_header(pb__msg_ctx_t *c, const pb_msg_header_t *h) {
  int rc = check_text(c, "header.sender_id", h->sender_id, PB_MSG_ID_MAX,
                      TEXT_ID, 1);
  if (rc == 0)
    rc = check_text(c, "header.run_id", h->run_id, PB_MSG_ID_MAX, TEXT_ID, 0);
  return rc;
}

/* ---- one check per body ----------------------------------------------- */

int pb__msg_check_hello(pb__msg_ctx_t *c, const pb_msg_t *m) {
  const pb_msg_hello_t *b = &m->hello;
  int rc;
  if ((rc = check_role(c, "role", b->role))) return rc;
  if ((rc = pb__msg_check_range(c, "threads", b->threads, 1,
                                PB_MSG_MAX_THREADS)))
    return rc;
  if ((rc =
           check_text(c, "hostname", b->hostname, PB_MSG_HOST_MAX, TEXT_ID, 0)))
    return rc;
  return check_text(c, "start_id", b->start_id, PB_MSG_ID_MAX, TEXT_ID, 0);
}

int pb__msg_check_hello_reply(pb__msg_ctx_t *c, const pb_msg_t *m) {
  const pb_msg_hello_reply_t *b = &m->hello_reply;
  int rc;
  if ((rc = pb__msg_check_range(c, "accepted", (uint64_t)(unsigned)b->accepted,
                                0, 1)))
    return rc;
  if ((rc =
           check_text(c, "message", b->message, PB_MSG_TEXT_MAX, TEXT_FREE, 0)))
    return rc;
  if ((rc = check_text(c, "start_id", b->start_id, PB_MSG_ID_MAX, TEXT_ID, 0)))
    return rc;
  /* The config: YAML text (tabs and newlines allowed, no other control
   * byte, no NUL), bounded; an accepted reply has one. The worker parses
   * it with the schema, which names a key it does not know. */
  if (b->config_len > PB_MSG_MAX_CONFIG)
    return pb__msg_fail(c, c->code, "config_yaml: %zu bytes, at most %u",
                        b->config_len, PB_MSG_MAX_CONFIG);
  if (b->config_len > 0 && b->config == NULL)
    return pb__msg_fail(c, c->code, "config_yaml: NULL text of %zu bytes",
                        b->config_len);
  if (b->config_len > 0 && b->config[b->config_len] != '\0')
    return pb__msg_fail(c, c->code,
                        "config_yaml: not NUL-terminated at its length");
  if (b->accepted && b->config_len == 0)
    return pb__msg_fail(c, c->code, "config_yaml: empty in an accepted reply");
  for (size_t i = 0; i < b->config_len; i++) {
    unsigned ch = (unsigned char)b->config[i];
    if ((ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') || ch == 0x7f)
      return pb__msg_fail(c, c->code,
                          "config_yaml: byte %zu is 0x%02x, not allowed here",
                          i, ch);
  }
  return 0;
}

int pb__msg_check_work_request(pb__msg_ctx_t *c, const pb_msg_t *m) {
  int rc;
  if ((rc = check_role(c, "role", m->work_request.role))) return rc;
  return pb__msg_check_range(c, "capacity", m->work_request.capacity, 0,
                             PB_MSG_MAX_CAPACITY);
}

int pb__msg_check_work_item(pb__msg_ctx_t *c, const pb_msg_t *m) {
  const pb_msg_work_item_t *b = &m->work_item;
  int rc;
  if ((rc = pb__msg_check_range(c, "lease_ms", b->lease_ms, 1,
                                PB_MSG_MAX_LEASE_MS)))
    return rc;
  if (b->kind == PB_WORK_SELFPLAY) {
    if ((rc = check_real(c, "selfplay.td_epsilon", b->td_epsilon, 0.0, 1.0)))
      return rc;
    return pb__msg_check_range(c, "selfplay.episodes", b->episodes, 1,
                               PB_MSG_MAX_EPISODES);
  }
  if (b->kind != PB_WORK_SEARCH)
    return pb__msg_fail(c, c->code,
                        "kind: %d is neither selfplay (1) nor search "
                        "(2)",
                        b->kind);
  if ((rc = pb__msg_check_range(c, "search.n_states", b->n_states, 1,
                                PB_MSG_MAX_STATES)))
    return rc;
  if (!c->decoding && b->states == NULL)
    return pb__msg_fail(c, c->code, "search.states: NULL");
  return 0;
}

int pb__msg_check_no_work(pb__msg_ctx_t *c, const pb_msg_t *m) {
  return pb__msg_check_range(c, "retry_ms", m->no_work.retry_ms, 0,
                             PB_MSG_MAX_RETRY_MS);
}

int pb__msg_check_selfplay_result(pb__msg_ctx_t *c, const pb_msg_t *m) {
  const pb_msg_selfplay_result_t *b = &m->selfplay_result;
  const pb_game_t *g = c->game;
  char field[64];
  int rc;
  if ((rc = pb__msg_check_range(c, "episodes", b->n_episodes, 1,
                                PB_MSG_MAX_EPISODES)))
    return rc;
  if (c->decoding) return 0; /* per episode: while decoding them */
  if (b->episodes == NULL) return pb__msg_fail(c, c->code, "episodes: NULL");
  for (uint32_t i = 0; i < b->n_episodes; i++) {
    const pb_msg_episode_t *e = &b->episodes[i];
    snprintf(field, sizeof field, "episodes[%u].n_states", i);
    if ((rc = pb__msg_check_range(c, field, e->n_states, 1,
                                  (uint64_t)g->max_turns)))
      return rc;
    if (e->states == NULL)
      return pb__msg_fail(c, c->code, "episodes[%u].states: NULL", i);
    if (e->final_reward < -1 || e->final_reward > 1)
      return pb__msg_fail(c, c->code,
                          "episodes[%u].final_reward: %d, not -1, 0 "
                          "or 1",
                          i, e->final_reward);
  }
  return 0;
}

int pb__msg_check_search_result(pb__msg_ctx_t *c, const pb_msg_t *m) {
  const pb_msg_search_result_t *b = &m->search_result;
  const pb_game_t *g = c->game;
  int rc;
  if ((rc = pb__msg_check_range(c, "n_states", b->n_states, 1,
                                PB_MSG_MAX_STATES)))
    return rc;
  if (b->n_actions != (uint32_t)g->num_actions)
    return pb__msg_fail(c, c->code, "n_actions: %u, but %s has %d actions",
                        b->n_actions, g->name, g->num_actions);
  if (c->decoding) return 0;
  if (b->qvalues == NULL) return pb__msg_fail(c, c->code, "qvalues: NULL");
  size_t n = (size_t)b->n_states * b->n_actions;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(b->qvalues[i]))
      return pb__msg_fail(c, c->code, "qvalues[%zu][%zu]: not finite",
                          i / b->n_actions, i % b->n_actions);
  return 0;
}

int pb__msg_check_heartbeat(pb__msg_ctx_t *c, const pb_msg_t *m) {
  int rc;
  if ((rc = pb__msg_check_range(c, "item_ids", m->heartbeat.n_item_ids, 0,
                                PB_MSG_MAX_ITEM_IDS)))
    return rc;
  if (!c->decoding && m->heartbeat.n_item_ids > 0 &&
      m->heartbeat.item_ids == NULL)
    return pb__msg_fail(c, c->code, "item_ids: NULL");
  return 0;
}

int pb__msg_check_weights_request(pb__msg_ctx_t *c, const pb_msg_t *m) {
  if (m->weights_request.which < PB_WHICH_V ||
      m->weights_request.which > PB_WHICH_BOTH)
    return pb__msg_fail(c, c->code, "which: %d is not V (1), Q (2) or both (3)",
                        m->weights_request.which);
  return 0;
}

int pb__msg_check_weights(pb__msg_ctx_t *c, const pb_msg_t *m) {
  const pb_msg_weights_t *b = &m->weights;
  if (b->v_len > PB_MSG_MAX_WEIGHTS || b->q_len > PB_MSG_MAX_WEIGHTS)
    return pb__msg_fail(
        c, c->code, "%s: %zu bytes, over the cap of %u",
        b->v_len > PB_MSG_MAX_WEIGHTS ? "v_weights" : "q_weights",
        b->v_len > PB_MSG_MAX_WEIGHTS ? b->v_len : b->q_len,
        PB_MSG_MAX_WEIGHTS);
  if (b->v_len == 0 && b->q_len == 0)
    return pb__msg_fail(c, c->code, "v_weights and q_weights: both empty");
  if ((b->v_len > 0 && b->v_weights == NULL) ||
      (b->q_len > 0 && b->q_weights == NULL))
    return pb__msg_fail(
        c, c->code, "%s: NULL with a length",
        b->v_len > 0 && b->v_weights == NULL ? "v_weights" : "q_weights");
  return 0;
}

int pb__msg_check_announce(pb__msg_ctx_t *c, const pb_msg_t *m) {
  if (m->announce.phase < PB_PHASE_SELFPLAY ||
      m->announce.phase > PB_PHASE_STOPPING)
    return pb__msg_fail(c, c->code, "phase: %d is not a phase (1..5)",
                        m->announce.phase);
  return 0;
}

int pb__msg_check_reject(pb__msg_ctx_t *c, const pb_msg_t *m) {
  if (m->reject.code >= 0)
    return pb__msg_fail(c, c->code, "code: %d, not a negative PB_E* code",
                        m->reject.code);
  return check_text(c, "message", m->reject.message, PB_MSG_TEXT_MAX, TEXT_FREE,
                    0);
}

int pb__msg_check_bye(pb__msg_ctx_t *c, const pb_msg_t *m) {
  return check_text(c, "reason", m->bye.reason, PB_MSG_TEXT_MAX, TEXT_FREE, 0);
}
