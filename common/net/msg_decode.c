/* msg_decode.c - each body from its protobuf-c struct to pb_msg_t, one
 * function per message type (msg.c picks it from its table once the
 * envelope and header are read). Each checks its body with its check of
 * msg_check.c, and adds what only the wire can get wrong: byte sizes that
 * disagree with counts, and positions or episodes that cannot happen in
 * the game.
 *
 * Workload: SelfplayResults of ~16 episodes of ~20 positions and
 * SearchResults of a few hundred positions, thousands per second. Decode
 * makes one allocation for our arrays besides protobuf-c's own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_impl.h"

static float load_f32le(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

int pb__msg_copy_text(pb__msg_ctx_t *c, const char *field, char *dst,
                      const char *src, size_t max) {
  if (src == NULL) src = "";
  size_t n = strnlen(src, max + 1);
  if (n > max)
    return pb__msg_fail(c, PB_EPROTO, "%s: longer than %zu bytes", field, max);
  memcpy(dst, src, n);
  dst[n] = '\0';
  return 0;
}

/* Unpacks n packed positions, validating each with the game. */
static int unpack_states(pb__msg_ctx_t *c, const pb_game_t *g,
                         const char *field, const ProtobufCBinaryData *bytes,
                         uint32_t n, pb_state_t *out) {
  size_t sb = (size_t)g->state_bytes;
  if (bytes->len != (size_t)n * sb)
    return pb__msg_fail(c, PB_EPROTO,
                        "%s: %zu bytes, expected %u states x %zu = %zu", field,
                        bytes->len, n, sb, (size_t)n * sb);
  for (uint32_t i = 0; i < n; i++) {
    pb_err_t e = {0};
    if (g->unpack(&out[i], bytes->data + i * sb, sb, &e) != 0)
      return pb__msg_fail(c, PB_EPROTO, "%s[%u]: not a %s position: %s", field,
                          i, g->name, e.msg);
  }
  return 0;
}

/* A policy row per position: finite, in [0, 1], 0 on illegal actions,
 * summing to 1 (within 1e-3). */
static int check_policy(pb__msg_ctx_t *c, const pb_game_t *g, uint32_t ei,
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
        return pb__msg_fail(
            c, PB_EPROTO, "episodes[%u].policy[%u][%d]: %g, not a probability",
            ei, t, a, (double)x);
      if (x != 0.0f && !legal[a])
        return pb__msg_fail(
            c, PB_EPROTO,
            "episodes[%u].policy[%u][%d]: %g on an illegal action", ei, t, a,
            (double)x);
      sum += x;
    }
    /* All zeros: a position that is not a policy target (a fast search
     * under playout cap randomization, common/train/azplay.h). */
    if (sum != 0.0 && fabs(sum - 1.0) > 1e-3)
      return pb__msg_fail(c, PB_EPROTO,
                          "episodes[%u].policy[%u]: sums to %g, not 1 (or 0)",
                          ei, t, sum);
  }
  return 0;
}

/* An episode is the positions where moves were chosen: none is terminal,
 * each follows the one before by a legal move, and a decisive final_reward
 * must be what some legal last move gives its mover. */
static int check_episode(pb__msg_ctx_t *c, const pb_game_t *g, uint32_t ei,
                         const pb_msg_episode_t *e) {
  uint8_t acts[PB_MAX_ACTIONS];
  for (uint32_t t = 0; t < e->n_states; t++) {
    int n = g->legal(&e->states[t], acts);
    if (n <= 0)
      return pb__msg_fail(c, PB_EPROTO,
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
        return pb__msg_fail(c, PB_EPROTO,
                            "episodes[%u].states[%u]: not reachable "
                            "from states[%u] by one legal move",
                            ei, t + 1, t);
      return pb__msg_fail(c, PB_EPROTO,
                          "episodes[%u].final_reward: %d, but no legal "
                          "move from the last state ends the game so",
                          ei, e->final_reward);
    }
  }
  return 0;
}

int pb__msg_decode_hello(pb__msg_ctx_t *c, Probs__Envelope *env,
                         pb_msg_t *out) {
  const Probs__Hello *w = env->hello;
  int rc;
  out->hello.role = (int)w->role;
  out->hello.threads = w->threads;
  out->hello.pid = w->pid;
  if ((rc = pb__msg_copy_text(c, "hostname", out->hello.hostname, w->hostname,
                              PB_MSG_HOST_MAX)) ||
      (rc = pb__msg_copy_text(c, "start_id", out->hello.start_id, w->start_id,
                              PB_MSG_ID_MAX)))
    return rc;
  return pb__msg_check_hello(c, out);
}

int pb__msg_decode_hello_reply(pb__msg_ctx_t *c, Probs__Envelope *env,
                               pb_msg_t *out) {
  const Probs__HelloReply *w = env->hello_reply;
  pb_msg_hello_reply_t *d = &out->hello_reply;
  int rc;
  d->accepted = w->accepted != 0;
  if ((rc = pb__msg_copy_text(c, "message", d->message, w->message,
                              PB_MSG_TEXT_MAX)))
    return rc;
  d->version = w->version;
  if ((rc = pb__msg_copy_text(c, "start_id", d->start_id, w->start_id,
                              PB_MSG_ID_MAX)))
    return rc;
  /* Points into protobuf-c's copy, which the message keeps until
   * pb_msg_free (a protobuf-c string: NUL-terminated; a NUL inside it ends
   * it early, and the check sees the shorter text). */
  d->config = w->config_yaml;
  d->config_len = w->config_yaml ? strlen(w->config_yaml) : 0;
  out->pb__unpacked = env;
  return pb__msg_check_hello_reply(c, out);
}

int pb__msg_decode_work_request(pb__msg_ctx_t *c, Probs__Envelope *env,
                                pb_msg_t *out) {
  out->work_request.role = (int)env->work_request->role;
  out->work_request.capacity = env->work_request->capacity;
  return pb__msg_check_work_request(c, out);
}

int pb__msg_decode_work_item(pb__msg_ctx_t *c, Probs__Envelope *env,
                             pb_msg_t *out) {
  const Probs__WorkItem *w = env->work_item;
  const pb_game_t *g = c->game;
  pb_msg_work_item_t *d = &out->work_item;
  d->item_id = w->item_id;
  d->lease_ms = w->lease_ms;
  if (w->work_case == PROBS__WORK_ITEM__WORK_SELFPLAY && w->selfplay) {
    d->kind = PB_WORK_SELFPLAY;
    d->episodes = w->selfplay->episodes;
    d->seed = w->selfplay->seed;
    d->q_version = w->selfplay->q_version;
    d->td_epsilon = w->selfplay->td_epsilon;
    return pb__msg_check_work_item(c, out);
  }
  if (w->work_case != PROBS__WORK_ITEM__WORK_SEARCH || w->search == NULL)
    return pb__msg_fail(c, PB_EPROTO, "work: neither selfplay nor search");
  const Probs__SearchWork *s = w->search;
  d->kind = PB_WORK_SEARCH;
  d->n_states = s->n_states;
  d->v_version = s->v_version;
  d->q_version = s->q_version;
  int rc = pb__msg_check_work_item(c, out);
  if (rc) return rc;
  if (s->states.len != (size_t)s->n_states * (size_t)g->state_bytes)
    return pb__msg_fail(c, PB_EPROTO,
                        "search.states: %zu bytes, expected %u states "
                        "x %d = %zu",
                        s->states.len, s->n_states, g->state_bytes,
                        (size_t)s->n_states * g->state_bytes);
  pb_state_t *st = malloc((size_t)s->n_states * sizeof *st);
  if (st == NULL) return pb__msg_fail(c, PB_ENOMEM, "out of memory");
  out->pb__mem = st;
  if ((rc = unpack_states(c, g, "search.states", &s->states, s->n_states, st)))
    return rc;
  d->states = st;
  return 0;
}

int pb__msg_decode_no_work(pb__msg_ctx_t *c, Probs__Envelope *env,
                           pb_msg_t *out) {
  out->no_work.retry_ms = env->no_work->retry_ms;
  return pb__msg_check_no_work(c, out);
}

int pb__msg_decode_selfplay_result(pb__msg_ctx_t *c, Probs__Envelope *env,
                                   pb_msg_t *out) {
  const Probs__SelfplayResult *w = env->selfplay_result;
  const pb_game_t *g = c->game;
  pb_msg_selfplay_result_t *d = &out->selfplay_result;
  d->item_id = w->item_id;
  if (w->n_episodes > PB_MSG_MAX_EPISODES)
    return pb__msg_fail(c, PB_EPROTO, "episodes: %zu, over the cap of %d",
                        w->n_episodes, PB_MSG_MAX_EPISODES);
  d->n_episodes = (uint32_t)w->n_episodes;
  int rc = pb__msg_check_selfplay_result(c, out);
  if (rc) return rc;
  size_t total = 0, npol = 0;
  char field[64];
  for (uint32_t i = 0; i < d->n_episodes; i++) {
    const Probs__Episode *e = w->episodes[i];
    if (e == NULL)
      return pb__msg_fail(c, PB_EPROTO, "episodes[%u]: missing", i);
    snprintf(field, sizeof field, "episodes[%u].n_states", i);
    if ((rc = pb__msg_check_range(c, field, e->n_states, 1,
                                  (uint64_t)g->max_turns)))
      return rc;
    if (e->states.len != (size_t)e->n_states * (size_t)g->state_bytes)
      return pb__msg_fail(c, PB_EPROTO,
                          "episodes[%u].states: %zu bytes, expected "
                          "%u states x %d = %zu",
                          i, e->states.len, e->n_states, g->state_bytes,
                          (size_t)e->n_states * g->state_bytes);
    if (e->final_reward < -1 || e->final_reward > 1)
      return pb__msg_fail(c, PB_EPROTO,
                          "episodes[%u].final_reward: %d, not -1, 0 "
                          "or 1",
                          i, e->final_reward);
    size_t np = (size_t)e->n_states * g->num_actions;
    if (e->policy.len != 0 && e->policy.len != np * 4)
      return pb__msg_fail(
          c, PB_EPROTO,
          "episodes[%u].policy: %zu bytes, expected 0 or %u states x "
          "%d actions x 4 = %zu",
          i, e->policy.len, e->n_states, g->num_actions, np * 4);
    if ((e->policy.len != 0) != (w->episodes[0]->policy.len != 0))
      return pb__msg_fail(c, PB_EPROTO,
                          "episodes[%u].policy: %s, but episodes[0]'s %s", i,
                          e->policy.len ? "present" : "absent",
                          e->policy.len ? "is absent" : "is present");
    total += e->n_states;
    if (e->policy.len) npol += np;
  }
  /* Sizes now agree with the bytes received, so this is bounded by len. */
  size_t off = pb__msg_align_up(d->n_episodes * sizeof(pb_msg_episode_t));
  uint8_t *mem = malloc(off + total * sizeof(pb_state_t) + npol * 4);
  if (mem == NULL) return pb__msg_fail(c, PB_ENOMEM, "out of memory");
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
      for (size_t k = 0; k < np; k++)
        pol[k] = load_f32le(e->policy.data + 4 * k);
      eps[i].policy = pol;
      pol += np;
      if ((rc = check_policy(c, g, i, &eps[i]))) return rc;
    }
  }
  d->episodes = eps;
  return 0;
}

int pb__msg_decode_search_result(pb__msg_ctx_t *c, Probs__Envelope *env,
                                 pb_msg_t *out) {
  const Probs__SearchResult *w = env->search_result;
  pb_msg_search_result_t *d = &out->search_result;
  d->item_id = w->item_id;
  d->n_states = w->n_states;
  d->n_actions = w->n_actions;
  int rc = pb__msg_check_search_result(c, out);
  if (rc) return rc;
  size_t n = (size_t)d->n_states * d->n_actions;
  if (w->qvalues.len != n * 4)
    return pb__msg_fail(c, PB_EPROTO,
                        "qvalues: %zu bytes, expected %u states x %u "
                        "actions x 4 = %zu",
                        w->qvalues.len, d->n_states, d->n_actions, n * 4);
  float *q = malloc(n * sizeof *q);
  if (q == NULL) return pb__msg_fail(c, PB_ENOMEM, "out of memory");
  out->pb__mem = q;
  for (size_t i = 0; i < n; i++) {
    q[i] = load_f32le(w->qvalues.data + 4 * i);
    if (!isfinite(q[i]))
      return pb__msg_fail(c, PB_EPROTO, "qvalues[%zu][%zu]: not finite",
                          i / d->n_actions, i % d->n_actions);
  }
  d->qvalues = q;
  return 0;
}

int pb__msg_decode_heartbeat(pb__msg_ctx_t *c, Probs__Envelope *env,
                             pb_msg_t *out) {
  const Probs__Heartbeat *w = env->heartbeat;
  if (w->n_item_ids > PB_MSG_MAX_ITEM_IDS)
    return pb__msg_fail(c, PB_EPROTO, "item_ids: %zu, over the cap of %d",
                        w->n_item_ids, PB_MSG_MAX_ITEM_IDS);
  out->heartbeat.n_item_ids = (uint32_t)w->n_item_ids;
  if (w->n_item_ids > 0) {
    uint64_t *ids = malloc(w->n_item_ids * sizeof *ids);
    if (ids == NULL) return pb__msg_fail(c, PB_ENOMEM, "out of memory");
    memcpy(ids, w->item_ids, w->n_item_ids * sizeof *ids);
    out->pb__mem = ids;
    out->heartbeat.item_ids = ids;
  }
  return pb__msg_check_heartbeat(c, out);
}

int pb__msg_decode_weights_request(pb__msg_ctx_t *c, Probs__Envelope *env,
                                   pb_msg_t *out) {
  out->weights_request.version = env->weights_request->version;
  out->weights_request.which = (int)env->weights_request->which;
  return pb__msg_check_weights_request(c, out);
}

int pb__msg_decode_weights(pb__msg_ctx_t *c, Probs__Envelope *env,
                           pb_msg_t *out) {
  /* Weights are large: point into protobuf-c's copy and keep it. */
  const Probs__Weights *w = env->weights;
  pb_msg_weights_t *d = &out->weights;
  d->version = w->version;
  d->v_len = w->v_weights.len;
  d->v_weights = w->v_weights.len ? w->v_weights.data : NULL;
  d->q_len = w->q_weights.len;
  d->q_weights = w->q_weights.len ? w->q_weights.data : NULL;
  out->pb__unpacked = env;
  return pb__msg_check_weights(c, out);
}

int pb__msg_decode_announce(pb__msg_ctx_t *c, Probs__Envelope *env,
                            pb_msg_t *out) {
  out->announce.version = env->announce->version;
  out->announce.iteration = env->announce->iteration;
  out->announce.phase = (int)env->announce->phase;
  return pb__msg_check_announce(c, out);
}

int pb__msg_decode_reject(pb__msg_ctx_t *c, Probs__Envelope *env,
                          pb_msg_t *out) {
  int rc;
  out->reject.code = env->reject->code;
  if ((rc = pb__msg_copy_text(c, "message", out->reject.message,
                              env->reject->message, PB_MSG_TEXT_MAX)))
    return rc;
  return pb__msg_check_reject(c, out);
}

int pb__msg_decode_bye(pb__msg_ctx_t *c, Probs__Envelope *env, pb_msg_t *out) {
  int rc;
  if ((rc = pb__msg_copy_text(c, "reason", out->bye.reason, env->bye->reason,
                              PB_MSG_TEXT_MAX)))
    return rc;
  return pb__msg_check_bye(c, out);
}
