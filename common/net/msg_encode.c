/* msg_encode.c - each body from pb_msg_t to its protobuf-c struct, one
 * function per message type (msg.c picks it from its table, after the
 * body's check, and packs the envelope).
 *
 * Workload: SelfplayResults of ~16 episodes of ~20 positions and
 * SearchResults of a few hundred positions, thousands per second. Encode
 * into a pb_msg_buf_t allocates nothing once the buffer has grown: packed
 * states and floats go to its scratch.
 */
#include <stdlib.h>
#include <string.h>

#include "msg_impl.h"

static void store_f32le(uint8_t *p, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  p[0] = (uint8_t)u;
  p[1] = (uint8_t)(u >> 8);
  p[2] = (uint8_t)(u >> 16);
  p[3] = (uint8_t)(u >> 24);
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

static Probs__Role role_out(int role) {
  return (Probs__Role)role;
}

int pb__msg_encode_hello(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__hello__init(&w->body.hello);
  w->body.hello.role = role_out(m->hello.role);
  w->body.hello.threads = m->hello.threads;
  w->body.hello.pid = m->hello.pid;
  w->body.hello.hostname = (char *)m->hello.hostname;
  w->body.hello.start_id = (char *)m->hello.start_id;
  w->env.hello = &w->body.hello;
  return 0;
}

int pb__msg_encode_hello_reply(pb__msg_wire_t *w, const pb_msg_t *m) {
  const pb_msg_hello_reply_t *s = &m->hello_reply;
  Probs__HelloReply *d = &w->body.hello_reply;
  probs__hello_reply__init(d);
  d->accepted = s->accepted;
  d->message = (char *)s->message;
  d->version = s->version;
  d->start_id = (char *)s->start_id;
  /* The check saw config_len bytes without a NUL; the text is the
   * caller's and NUL-terminated there. */
  d->config_yaml = s->config_len > 0 ? (char *)s->config : (char *)"";
  w->env.hello_reply = d;
  return 0;
}

int pb__msg_encode_work_request(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__work_request__init(&w->body.work_request);
  w->body.work_request.role = role_out(m->work_request.role);
  w->body.work_request.capacity = m->work_request.capacity;
  w->env.work_request = &w->body.work_request;
  return 0;
}

int pb__msg_encode_work_item(pb__msg_wire_t *w, const pb_msg_t *m) {
  const pb_msg_work_item_t *s = &m->work_item;
  Probs__WorkItem *d = &w->body.work_item;
  probs__work_item__init(d);
  d->item_id = s->item_id;
  d->lease_ms = s->lease_ms;
  if (s->kind == PB_WORK_SELFPLAY) {
    probs__selfplay_work__init(&w->spw);
    w->spw.episodes = s->episodes;
    w->spw.seed = s->seed;
    w->spw.q_version = s->q_version;
    w->spw.td_epsilon = s->td_epsilon;
    d->work_case = PROBS__WORK_ITEM__WORK_SELFPLAY;
    d->selfplay = &w->spw;
  } else {
    const pb_game_t *g = w->game;
    size_t sb = (size_t)g->state_bytes, n = s->n_states;
    if (reserve_scratch(w->buf, n * sb)) return PB_ENOMEM;
    uint8_t *p = w->buf->scratch;
    for (size_t i = 0; i < n; i++) g->pack(&s->states[i], p + i * sb);
    Probs__SearchWork *sw = &w->sw;
    probs__search_work__init(sw);
    sw->states.data = p;
    sw->states.len = n * sb;
    sw->n_states = s->n_states;
    sw->v_version = s->v_version;
    sw->q_version = s->q_version;
    d->work_case = PROBS__WORK_ITEM__WORK_SEARCH;
    d->search = sw;
  }
  w->env.work_item = d;
  return 0;
}

int pb__msg_encode_no_work(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__no_work__init(&w->body.no_work);
  w->body.no_work.retry_ms = m->no_work.retry_ms;
  w->env.no_work = &w->body.no_work;
  return 0;
}

int pb__msg_encode_selfplay_result(pb__msg_wire_t *w, const pb_msg_t *m) {
  const pb_msg_selfplay_result_t *s = &m->selfplay_result;
  const pb_game_t *g = w->game;
  size_t ne = s->n_episodes, sb = (size_t)g->state_bytes, total = 0, npol = 0;
  for (size_t i = 0; i < ne; i++) {
    total += s->episodes[i].n_states;
    if (s->episodes[i].policy != NULL)
      npol += (size_t)s->episodes[i].n_states * g->num_actions;
  }
  size_t off_ptrs = pb__msg_align_up(ne * sizeof(Probs__Episode));
  size_t off_bytes = off_ptrs + pb__msg_align_up(ne * sizeof(Probs__Episode *));
  if (reserve_scratch(w->buf, off_bytes + total * sb + npol * 4))
    return PB_ENOMEM;
  uint8_t *base = w->buf->scratch;
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
  probs__selfplay_result__init(&w->body.selfplay_result);
  w->body.selfplay_result.item_id = s->item_id;
  w->body.selfplay_result.n_episodes = ne;
  w->body.selfplay_result.episodes = ptrs;
  w->env.selfplay_result = &w->body.selfplay_result;
  return 0;
}

int pb__msg_encode_search_result(pb__msg_wire_t *w, const pb_msg_t *m) {
  const pb_msg_search_result_t *s = &m->search_result;
  size_t n = (size_t)s->n_states * s->n_actions;
  if (reserve_scratch(w->buf, n * 4)) return PB_ENOMEM;
  uint8_t *p = w->buf->scratch;
  for (size_t i = 0; i < n; i++) store_f32le(p + 4 * i, s->qvalues[i]);
  Probs__SearchResult *d = &w->body.search_result;
  probs__search_result__init(d);
  d->item_id = s->item_id;
  d->n_states = s->n_states;
  d->n_actions = s->n_actions;
  d->qvalues.data = p;
  d->qvalues.len = n * 4;
  w->env.search_result = d;
  return 0;
}

int pb__msg_encode_heartbeat(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__heartbeat__init(&w->body.heartbeat);
  w->body.heartbeat.n_item_ids = m->heartbeat.n_item_ids;
  w->body.heartbeat.item_ids = (uint64_t *)m->heartbeat.item_ids;
  w->env.heartbeat = &w->body.heartbeat;
  return 0;
}

int pb__msg_encode_weights_request(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__weights_request__init(&w->body.weights_request);
  w->body.weights_request.version = m->weights_request.version;
  w->body.weights_request.which = (Probs__Which)m->weights_request.which;
  w->env.weights_request = &w->body.weights_request;
  return 0;
}

int pb__msg_encode_weights(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__weights__init(&w->body.weights);
  w->body.weights.version = m->weights.version;
  w->body.weights.v_weights.data = (uint8_t *)m->weights.v_weights;
  w->body.weights.v_weights.len = m->weights.v_len;
  w->body.weights.q_weights.data = (uint8_t *)m->weights.q_weights;
  w->body.weights.q_weights.len = m->weights.q_len;
  w->env.weights = &w->body.weights;
  return 0;
}

int pb__msg_encode_announce(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__announce__init(&w->body.announce);
  w->body.announce.version = m->announce.version;
  w->body.announce.iteration = m->announce.iteration;
  w->body.announce.phase = (Probs__Phase)m->announce.phase;
  w->env.announce = &w->body.announce;
  return 0;
}

int pb__msg_encode_reject(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__reject__init(&w->body.reject);
  w->body.reject.code = m->reject.code;
  w->body.reject.message = (char *)m->reject.message;
  w->env.reject = &w->body.reject;
  return 0;
}

int pb__msg_encode_bye(pb__msg_wire_t *w, const pb_msg_t *m) {
  probs__bye__init(&w->body.bye);
  w->body.bye.reason = (char *)m->bye.reason;
  w->env.bye = &w->body.bye;
  return 0;
}
