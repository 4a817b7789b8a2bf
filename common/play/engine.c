/* engine.c - the batch analysis engine of engine.h: queries wait in a
 * batch; answering it is one turn of
 *   1. the networks' values of every position (V, Q, policy), batched;
 *   2. the values one ply deep: every child of every position, batched;
 *   3. the agents' moves, one call per agent spec where the agent batches;
 *   4. the answers, in the order the queries came.
 * Reading a query is engine_query.c. */
#include "engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "engine_impl.h"

/* ---- lifecycle ----------------------------------------------------------- */

static int alloc_buffers(pb_engine_t *e) {
  size_t b = (size_t)e->batch, A = (size_t)e->g->num_actions;
  e->q = calloc(b, sizeof *e->q);
  e->pos = calloc(b, sizeof *e->pos);
  e->pos_of = calloc(b, sizeof *e->pos_of);
  e->moves = calloc(b, sizeof *e->moves);
  e->v = calloc(b, sizeof *e->v);
  e->fail = calloc(b, sizeof *e->fail);
  e->fail_field = calloc(b, sizeof *e->fail_field);
  e->kids = calloc(b * A, sizeof *e->kids);
  e->kid_of = calloc(b * A, sizeof *e->kid_of);
  e->kid_act = calloc(b * A, sizeof *e->kid_act);
  e->kid_v = calloc(b * A, sizeof *e->kid_v);
  e->qv = calloc(b * A, sizeof *e->qv);
  e->policy = calloc(b * A, sizeof *e->policy);
  e->v1 = calloc(b * A, sizeof *e->v1);
  e->chunk_logits = calloc((size_t)PB_ENGINE_CHUNK * A, sizeof(float));
  e->info = calloc(b, sizeof *e->info);
  e->order = calloc(b, sizeof *e->order);
  return e->q && e->pos && e->pos_of && e->moves && e->v && e->fail &&
                 e->fail_field && e->kids && e->kid_of && e->kid_act &&
                 e->kid_v && e->qv && e->policy && e->v1 &&
                 e->chunk_logits && e->info && e->order
             ? 0
             : PB_ENOMEM;
}

pb_engine_t *pb_engine_new(pb_model_t *m, const char *model_path, int batch,
                           pb_engine_emit_fn emit, void *ctx, pb_err_t *err) {
  if (m == NULL || model_path == NULL || emit == NULL) {
    pb_err_set(err, PB_EINVAL, "analysis engine: NULL argument");
    return NULL;
  }
  if (batch < 1 || batch > PB_ENGINE_MAX_BATCH) {
    pb_err_set(err, PB_EINVAL, "analysis engine: batch %d (expected 1..%d)",
               batch, PB_ENGINE_MAX_BATCH);
    return NULL;
  }
  pb_engine_t *e = calloc(1, sizeof *e);
  if (e == NULL) {
    pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
    return NULL;
  }
  e->m = m;
  e->g = pb_model_game(m);
  e->az = pb_model_kind(m) == PB_NETS_PV;
  e->batch = batch;
  e->emit = emit;
  e->ctx = ctx;
  pb_json_init(&e->out);
  atomic_init(&e->intr, 0);
  pthread_mutex_init(&e->lock, NULL);
  e->model_path = strdup(model_path);
  if (e->model_path == NULL || alloc_buffers(e) != 0 ||
      (e->jr = pb_jsonr_new(err)) == NULL ||
      (e->njr = pb_jsonr_new(err)) == NULL) {
    pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
    pb_engine_destroy(&e);
    return NULL;
  }
  int rc = 0;
  if (e->az) {
    e->pve = pb_pveval_new(e->g, PB_ENGINE_CHUNK, err);
    rc = e->pve == NULL ? -1 : pb_pveval_bind(e->pve, pb_model_q(m), err);
  } else {
    e->ne = pb_neteval_new(e->g, PB_ENGINE_CHUNK, 1u << 16, err);
    if (e->ne == NULL)
      rc = -1;
    else
      pb_neteval_bind(e->ne, pb_model_v(m), pb_model_q(m));
  }
  if (rc != 0) pb_engine_destroy(&e);
  return e;
}

void pb_engine_destroy(pb_engine_t **ep) {
  if (ep == NULL || *ep == NULL) return;
  pb_engine_t *e = *ep;
  for (int i = 0; i < e->nq; i++) pb__engine_query_free(&e->q[i]);
  for (int k = 0; k < PB_ENGINE_AGENTS; k++) {
    pb_agent_destroy(&e->agents[k].a);
    free(e->agents[k].spec);
  }
  pb_neteval_destroy(&e->ne);
  pb_pveval_destroy(&e->pve);
  pb_jsonr_destroy(&e->jr);
  pb_jsonr_destroy(&e->njr);
  for (int k = 0; k < e->nnotices; k++) {
    free(e->notices[k].id);
    free(e->notices[k].turns);
  }
  pthread_mutex_destroy(&e->lock);
  free(e->info);
  free(e->order);
  free(e->acts);
  pb_json_free(&e->out);
  free(e->model_path);
  free(e->q);
  free(e->pos);
  free(e->pos_of);
  free(e->moves);
  free(e->v);
  free(e->fail);
  free(e->fail_field);
  free(e->kids);
  free(e->kid_of);
  free(e->kid_act);
  free(e->kid_v);
  free(e->qv);
  free(e->policy);
  free(e->v1);
  free(e->chunk_logits);
  free(e);
  *ep = NULL;
}

int pb_engine_waiting(const pb_engine_t *e) {
  return e->nq;
}

void pb_engine_stats(const pb_engine_t *e, pb_engine_stats_t *st) {
  *st = e->st;
}

/* ---- answers ------------------------------------------------------------- */

/* The answer of waiting query i. */
static int send_answer(pb_engine_t *e, int i, pb_err_t *err) {
  const pb__engine_query_t *q = &e->q[i];
  if (e->fail[i].code != 0 && !q->terminated && !q->stopped)
    return pb__engine_send_error(e, q->id, e->fail_field[i], e->fail[i].msg,
                                 err);
  pb__engine_answer(e, i, 0);
  return pb__engine_send(e, err);
}

/* ---- one batch ----------------------------------------------------------- */

/* Marks the waiting queries idx[0..n) as failed with why's message (those
 * failed already keep their first reason). */
static void fail_all(pb_engine_t *e, const int *idx, int n, const char *field,
                     const pb_err_t *why) {
  for (int k = 0; k < n; k++) {
    int i = idx[k];
    if (e->fail[i].code != 0) continue;
    e->fail[i] = *why;
    if (e->fail[i].code == 0) e->fail[i].code = PB_ENN;
    e->fail_field[i] = field;
  }
}

/* Whether waiting query i needs the networks for any of `bits`. */
static int wants(const pb_engine_t *e, int i, unsigned bits) {
  return !e->q[i].over && !e->q[i].terminated && !e->q[i].stopped &&
         e->fail[i].code == 0 && (e->q[i].report & bits);
}

/* The positions of the queries that want `bits` into e->pos (their
 * query in e->pos_of); returns how many. */
static int gather(pb_engine_t *e, unsigned bits) {
  int n = 0;
  for (int i = 0; i < e->nq; i++)
    if (wants(e, i, bits)) {
      e->pos[n] = e->q[i].s;
      e->pos_of[n++] = i;
    }
  return n;
}

/* PROBS: V and Q of the positions, one call each. */
static void values_probs(pb_engine_t *e) {
  pb_evalfn_t fn = pb_neteval_fn(e->ne);
  size_t A = (size_t)e->g->num_actions;
  pb_err_t err;
  pb_err_clear(&err);
  int n = gather(e, PB__ENGINE_V);
  if (n > 0 && fn.value(fn.ctx, e->pos, n, e->kid_v, &err) < 0)
    fail_all(e, e->pos_of, n, NULL, &err);
  else
    for (int k = 0; k < n; k++) e->v[e->pos_of[k]] = e->kid_v[k];
  n = gather(e, PB__ENGINE_Q);
  if (n > 0 && fn.qvalues(fn.ctx, e->pos, n, e->kid_v, &err) < 0)
    fail_all(e, e->pos_of, n, NULL, &err);
  else
    for (int k = 0; k < n; k++)
      memcpy(e->qv + (size_t)e->pos_of[k] * A, e->kid_v + (size_t)k * A,
             A * sizeof *e->qv);
}

/* The policy+value network over e->pos[0..n), in chunks: logits to
 * `logits` rows (NULL: dropped), values to vals. */
static int pv_eval(pb_engine_t *e, const pb_state_t *pos, int n, float *logits,
                   float *vals, pb_err_t *err) {
  pb_mcts_evalfn_t fn = pb_pveval_fn(e->pve);
  size_t A = (size_t)e->g->num_actions;
  for (int off = 0; off < n; off += PB_ENGINE_CHUNK) {
    int c = n - off < PB_ENGINE_CHUNK ? n - off : PB_ENGINE_CHUNK;
    int rc = fn.eval(fn.ctx, pos + off, c, e->chunk_logits, vals + off, err);
    if (rc < 0) return rc;
    if (logits != NULL)
      memcpy(logits + (size_t)off * A, e->chunk_logits,
             (size_t)c * A * sizeof *logits);
  }
  return 0;
}

/* AlphaZero: the value head and the policy (softmax of the logits over
 * the legal moves, as MCTS makes its priors), one call. */
static void values_az(pb_engine_t *e) {
  size_t A = (size_t)e->g->num_actions;
  pb_err_t err;
  pb_err_clear(&err);
  int n = gather(e, PB__ENGINE_V | PB__ENGINE_POLICY);
  if (n == 0) return;
  /* e->qv is free with an AlphaZero checkpoint: the logits go there. */
  if (pv_eval(e, e->pos, n, e->qv, e->kid_v, &err) < 0) {
    fail_all(e, e->pos_of, n, NULL, &err);
    return;
  }
  for (int k = 0; k < n; k++) {
    int i = e->pos_of[k];
    const float *lg = e->qv + (size_t)k * A;
    float *p = e->policy + (size_t)i * A;
    e->v[i] = e->kid_v[k];
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = e->g->legal(&e->pos[k], legal);
    double mx = -INFINITY, sum = 0;
    for (int t = 0; t < nl; t++) mx = lg[legal[t]] > mx ? lg[legal[t]] : mx;
    for (int t = 0; t < nl; t++) sum += exp(lg[legal[t]] - mx);
    for (int t = 0; t < nl; t++)
      p[legal[t]] = (float)(exp(lg[legal[t]] - mx) / sum);
  }
}

/* Values one ply deep: a move that ends the game is worth its result to
 * the mover; the others -V(child), all children in one call. */
static void values_v1(pb_engine_t *e) {
  const pb_game_t *g = e->g;
  size_t A = (size_t)g->num_actions;
  int nk = 0, n = gather(e, PB__ENGINE_V1);
  for (int k = 0; k < n; k++) {
    int i = e->pos_of[k];
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&e->pos[k], legal);
    for (int t = 0; t < nl; t++) {
      pb_state_t c = e->pos[k];
      int done = 0;
      float r = g->step(&c, legal[t], &done);
      if (done) {
        e->v1[(size_t)i * A + legal[t]] = r;
        continue;
      }
      e->kids[nk] = c;
      e->kid_of[nk] = i;
      e->kid_act[nk++] = legal[t];
    }
  }
  if (nk == 0) return;
  pb_err_t err;
  pb_err_clear(&err);
  int rc;
  if (e->az) {
    rc = pv_eval(e, e->kids, nk, NULL, e->kid_v, &err);
  } else {
    pb_evalfn_t fn = pb_neteval_fn(e->ne);
    rc = fn.value(fn.ctx, e->kids, nk, e->kid_v, &err);
  }
  if (rc < 0) {
    fail_all(e, e->pos_of, n, NULL, &err);
    return;
  }
  for (int k = 0; k < nk; k++)
    e->v1[(size_t)e->kid_of[k] * A + e->kid_act[k]] = -e->kid_v[k];
}

/* pb_agent_set_progress's callback: a partial answer (isDuringSearch
 * true) for the k-th position of the agent call under way, if its query
 * asked for them (reportDuringSearchEvery). */
static void partial(void *ctx, int k, const pb_agent_info_t *p) {
  pb_engine_t *e = ctx;
  int i = e->prog_of[k];
  if (e->fatal || !(e->q[i].every > 0)) return;
  pb_agent_info_t keep = e->info[i];
  int mv = e->moves[i];
  e->info[i] = *p;
  e->moves[i] = p->pv_len > 0 ? p->pv[0] : -1;
  pb__engine_answer(e, i, 1);
  pb_err_t err;
  if (pb__engine_send(e, &err) == 0) e->st.queries--; /* not an answer */
  e->info[i] = keep;
  e->moves[i] = mv;
}

/* The moves of the queries of agent slot `slot`. */
static void moves_of(pb_engine_t *e, int slot) {
  pb_agent_t *a = e->agents[slot].a;
  pb_err_t err;
  pb_err_clear(&err);
  int n = 0;
  double every = 0;
  for (int i = 0; i < e->nq; i++)
    if (e->q[i].agent == slot && wants(e, i, PB__ENGINE_MOVE)) {
      e->pos[n] = e->q[i].s;
      e->pos_of[n++] = i;
      if (e->q[i].every > 0 && (every == 0 || e->q[i].every < every))
        every = e->q[i].every;
    }
  if (n == 0) return;
  (void)pb_agent_set_progress(a, every > 0 ? partial : NULL, e, every);
  e->prog_of = e->pos_of;
  if (pb_agent_batched(a)) {
    /* The network kinds ignore the seed: one call for them all. */
    int *out = (int *)e->kid_act;
    if (pb_agent_act_many(a, e->pos, n, 0, out, &err) < 0)
      fail_all(e, e->pos_of, n, "agent", &err);
    else
      for (int k = 0; k < n; k++) {
        e->moves[e->pos_of[k]] = out[k];
        pb_agent_info(a, k, &e->info[e->pos_of[k]]);
      }
    return;
  }
  for (int k = 0; k < n; k++) {
    int i = e->pos_of[k], mv = -1;
    e->prog_of = &e->pos_of[k];
    if (pb_agent_act_many(a, &e->pos[k], 1, e->q[i].seed, &mv, &err) < 0) {
      fail_all(e, &i, 1, "agent", &err);
    } else {
      e->moves[i] = mv;
      pb_agent_info(a, 0, &e->info[i]);
    }
  }
}

/* The moves of agent slot `slot`, again while a terminate that was
 * noticed during its search stops it (its results cannot be told from a
 * finished search's); a stop (pb_engine_stop) leaves its queries
 * stopped. */
static void moves_stoppable(pb_engine_t *e, int slot) {
  for (;;) {
    moves_of(e, slot);
    int intr = atomic_load(&e->intr);
    if (intr == 0 || !e->agents[slot].stoppable) return;
    for (int i = 0; i < e->nq; i++) {
      if (e->q[i].agent != slot || !(e->q[i].report & PB__ENGINE_MOVE) ||
          e->q[i].over || e->q[i].terminated)
        continue;
      if (intr == 2) {
        e->q[i].stopped = 1;
      } else {
        pb_err_clear(&e->fail[i]);
        e->fail_field[i] = NULL;
        e->moves[i] = -1;
        memset(&e->info[i], 0, sizeof e->info[i]);
      }
    }
    if (intr == 2) return;
    pb__engine_take_notices(e);
  }
}

/* The highest priority among the waiting queries of agent slot s. */
static int slot_priority(const pb_engine_t *e, int s) {
  int p = INT32_MIN;
  for (int i = 0; i < e->nq; i++)
    if (e->q[i].agent == s && e->q[i].priority > p) p = e->q[i].priority;
  return p;
}

/* Counts the network calls of the values (not the agents'). */
static uint64_t net_calls(const pb_engine_t *e) {
  if (e->pve != NULL) return pb_pveval_calls(e->pve);
  pb_neteval_stats_t st;
  pb_neteval_stats(e->ne, &st);
  return st.v_calls + st.q_calls;
}

int pb_engine_flush(pb_engine_t *e, pb_err_t *err) {
  if (e->fatal) return pb_err_set(err, e->fatal, "analysis engine stopped");
  if (e->nq == 0) return 0;
  uint64_t calls0 = net_calls(e);
  for (int i = 0; i < e->nq; i++) {
    pb_err_clear(&e->fail[i]);
    e->fail_field[i] = NULL;
    e->moves[i] = -1;
    memset(&e->info[i], 0, sizeof e->info[i]);
  }
  pb__engine_take_notices(e);
  if (e->az)
    values_az(e);
  else
    values_probs(e);
  values_v1(e);
  /* The agents' searches, the slot of the highest priority first. */
  int slots[PB_ENGINE_AGENTS], ns = 0;
  for (int s = 0; s < PB_ENGINE_AGENTS; s++) {
    if (e->agents[s].a == NULL) continue;
    int t = ns++, p = slot_priority(e, s);
    while (t > 0 && slot_priority(e, slots[t - 1]) < p) {
      slots[t] = slots[t - 1];
      t--;
    }
    slots[t] = s;
  }
  for (int k = 0; k < ns; k++) moves_stoppable(e, slots[k]);
  e->st.net_calls += net_calls(e) - calls0;
  e->st.batches++;
  /* The answers, the highest priority first, in order within one. */
  for (int i = 0; i < e->nq; i++) {
    int t = i;
    while (t > 0 && e->q[e->order[t - 1]].priority < e->q[i].priority) {
      e->order[t] = e->order[t - 1];
      t--;
    }
    e->order[t] = i;
  }
  int rc = 0;
  for (int k = 0; k < e->nq && rc == 0; k++)
    rc = send_answer(e, e->order[k], err);
  for (int i = 0; i < e->nq; i++) {
    if (e->q[i].agent >= 0) e->agents[e->q[i].agent].waiting--;
    pb__engine_query_free(&e->q[i]);
  }
  e->nq = 0;
  return rc;
}

/* ---- queries and agents -------------------------------------------------- */

/* The slot of the agent of the full spec `spec`, made (or found among
 * the kept ones) and counted as used by one more waiting query. May
 * answer the waiting queries first, to free a slot. Returns the slot, or
 * a PB_E* code with err filled: pb_agent_new's, or a code that stops the
 * engine (PB_ENOMEM, emit's error: e->fatal set). */
static int agent_slot(pb_engine_t *e, const char *spec, pb_err_t *err) {
  pb__engine_agent_t *ag = e->agents;
  int slot = -1;
  for (int k = 0; k < PB_ENGINE_AGENTS; k++)
    if (ag[k].spec != NULL && strcmp(ag[k].spec, spec) == 0) slot = k;
  if (slot < 0) {
    /* A free slot, else the least recently used one no waiting query
     * needs; if they all are needed, answer the waiting queries first. */
    for (int pass = 0; pass < 2 && slot < 0; pass++) {
      for (int k = 0; k < PB_ENGINE_AGENTS; k++)
        if (ag[k].waiting == 0 &&
            (slot < 0 || ag[k].spec == NULL ||
             (ag[slot].spec != NULL && ag[k].used < ag[slot].used)))
          slot = k;
      if (slot < 0 && pb_engine_flush(e, err) != 0) return e->fatal;
    }
    pb_agent_destroy(&ag[slot].a);
    free(ag[slot].spec);
    ag[slot].spec = NULL;
    pb_agent_t *a = pb_agent_new(e->g, spec, 0, err);
    if (a == NULL) return err != NULL && err->code < 0 ? err->code : PB_EINVAL;
    ag[slot].spec = strdup(spec);
    if (ag[slot].spec == NULL) {
      pb_agent_destroy(&a);
      e->fatal = PB_ENOMEM;
      return pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
    }
    ag[slot].a = a;
    (void)pb_agent_set_time_bound(a, e->bound_ms); /* network kinds */
    ag[slot].stoppable = pb_agent_set_stop(a, &e->intr) == 0;
  }
  ag[slot].used = ++e->tick;
  ag[slot].waiting++;
  return slot;
}

int pb_engine_set_time_bound(pb_engine_t *e, int ms) {
  if (e == NULL || ms < 0 || ms > PB_ENGINE_MAX_TIME_MS) return PB_EINVAL;
  e->bound_ms = ms;
  for (int k = 0; k < PB_ENGINE_AGENTS; k++)
    if (e->agents[k].a != NULL)
      (void)pb_agent_set_time_bound(e->agents[k].a, ms);
  return 0;
}

/* A copy of string s into *out (NULL stays NULL); 0 or PB_ENOMEM. */
static int dup_or_null(const char *s, char **out) {
  *out = s != NULL ? strdup(s) : NULL;
  return s != NULL && *out == NULL ? PB_ENOMEM : 0;
}

/* analyzeTurns: query q once per turn (the position after the first
 * turns[k] moves of e->acts), each waiting in its own row. Takes q's
 * strings and turns. */
static int push_turns(pb_engine_t *e, pb__engine_query_t *q, int *turns,
                      int nturns, pb_err_t *err) {
  const pb_game_t *g = e->g;
  int rc = 0;
  for (int k = 0; k < nturns && rc == 0; k++) {
    pb__engine_query_t t = *q;
    if (k < nturns - 1) {
      t.id = t.spec = t.full = NULL;
      if (dup_or_null(q->id, &t.id) != 0 ||
          dup_or_null(q->spec, &t.spec) != 0 ||
          dup_or_null(q->full, &t.full) != 0) {
        pb__engine_query_free(&t);
        e->fatal = PB_ENOMEM;
        rc = pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
        break;
      }
    }
    g->reset(&t.s);
    for (int m = 0; m < turns[k]; m++) {
      int done = 0;
      g->step(&t.s, e->acts[m], &done);
    }
    uint8_t legal[PB_MAX_ACTIONS];
    t.over = g->legal(&t.s, legal) == 0;
    t.turn = turns[k];
    if (k < nturns - 1 && t.agent >= 0) e->agents[t.agent].waiting++;
    e->q[e->nq++] = t;
    if (k == nturns - 1) memset(q, 0, sizeof *q); /* its strings moved */
    if (e->nq == e->batch) rc = pb_engine_flush(e, err);
  }
  if (rc != 0) {
    if (q->agent >= 0 && q->id != NULL) e->agents[q->agent].waiting--;
    pb__engine_query_free(q);
  }
  free(turns);
  return rc;
}

int pb_engine_query(pb_engine_t *e, const char *line, size_t n, pb_err_t *err) {
  if (e->fatal) return pb_err_set(err, e->fatal, "analysis engine stopped");
  size_t k = 0;
  while (k < n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
  if (k == n) return 0; /* a blank line: no query */
  pb__engine_query_t q;
  const char *field = NULL;
  pb_err_t qe;
  pb_err_clear(&qe);
  int *turns = NULL, nturns = 0;
  int rc = pb__engine_parse(e, line, n, &q, &turns, &nturns, &field, &qe);
  if (rc == 1 || (rc != 0 && e->fatal)) { /* an action, answered */
    pb__engine_query_free(&q);
    free(turns);
    if (rc == 1) return 0;
    return pb_err_set(err, e->fatal, "%s", qe.msg);
  }
  if (rc == 0 && q.full != NULL) {
    pb_err_t ae;
    pb_err_clear(&ae);
    field = "agent";
    rc = agent_slot(e, q.full, &ae);
    if (rc >= 0) {
      q.agent = rc;
      rc = 0;
    } else if (e->fatal) {
      pb_err_set(&qe, rc, "%s", ae.msg);
    } else {
      pb_err_set(&qe, rc, "agent: %s", ae.msg);
    }
  }
  if (rc != 0) {
    if (q.agent >= 0) e->agents[q.agent].waiting--;
    free(turns);
    if (e->fatal) {
      pb__engine_query_free(&q);
      return pb_err_set(err, e->fatal, "%s", qe.msg);
    }
    /* The field may be a key of the query: write before the reader
     * forgets it. */
    rc = pb__engine_send_error(e, q.id, field, qe.msg, err);
    pb__engine_query_free(&q);
    return rc;
  }
  if (nturns == 0) {
    e->q[e->nq++] = q;
    return e->nq == e->batch ? pb_engine_flush(e, err) : 0;
  }
  return push_turns(e, &q, turns, nturns, err);
}

int pb_engine_refuse(pb_engine_t *e, const char *message, pb_err_t *err) {
  if (e->fatal) return pb_err_set(err, e->fatal, "analysis engine stopped");
  return pb__engine_send_error(e, NULL, NULL, message, err);
}

