/* engine_answer.c - the answer of one query of the analysis engine, in
 * probs's fields (ply, to_move, v, moves, move, agent) and KataGo's
 * (turnNumber, isDuringSearch, rootInfo, moveInfos, policy) side by side;
 * docs/analysis.md, "An answer"; and sending an answer or an error
 * object through the engine's emit function. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "engine_impl.h"

static void move_name(const pb_game_t *g, int a, char *buf, size_t n) {
  if (a < 0 || g->action_name(a, buf, n) < 0) snprintf(buf, n, "-");
}

/* A value in [-1, 1] from the side to move as KataGo's winrate in [0, 1]
 * (a draw is 0.5). */
static float winrate(float v) {
  return (1.0f + v) / 2.0f;
}

/* How move a of query i ranks before move b (KataGo's order: the best
 * first): the agent's move, then the search's visits, then the value one
 * ply deep, Q or the policy (whichever the query reported), then the
 * action's number. */
typedef struct {
  const pb_engine_t *e;
  int i;
} rank_ctx_t;

static double key_of(const rank_ctx_t *c, int a) {
  const pb__engine_query_t *q = &c->e->q[c->i];
  size_t A = (size_t)c->e->g->num_actions, i = (size_t)c->i;
  double k = 0;
  if (q->report & PB__ENGINE_V1)
    k = c->e->v1[i * A + (size_t)a];
  else if (q->report & PB__ENGINE_Q)
    k = c->e->qv[i * A + (size_t)a];
  else if (q->report & PB__ENGINE_POLICY)
    k = c->e->policy[i * A + (size_t)a];
  return isnan(k) ? -INFINITY : k;
}

static int before(const rank_ctx_t *c, int a, int b) {
  const pb_engine_t *e = c->e;
  const pb_agent_info_t *in = &e->info[c->i];
  int mv = e->moves[c->i];
  if ((a == mv) != (b == mv)) return a == mv;
  if (in->move_visits[a] != in->move_visits[b])
    return in->move_visits[a] > in->move_visits[b];
  double ka = key_of(c, a), kb = key_of(c, b);
  if (ka != kb) return ka > kb;
  return a < b;
}

/* moveInfos: every legal move, best first. */
static void move_infos(pb_engine_t *e, int i, const uint8_t *legal, int nl) {
  const pb__engine_query_t *q = &e->q[i];
  const pb_game_t *g = e->g;
  const pb_agent_info_t *in = &e->info[i];
  size_t A = (size_t)g->num_actions;
  pb_json_t *j = &e->out;
  rank_ctx_t c = {e, i};
  int ord[PB_MAX_ACTIONS];
  for (int k = 0; k < nl; k++) {
    int t = k;
    while (t > 0 && before(&c, legal[k], ord[t - 1])) {
      ord[t] = ord[t - 1];
      t--;
    }
    ord[t] = legal[k];
  }
  char name[16];
  pb_json_key(j, "moveInfos");
  pb_json_arr_begin(j);
  for (int k = 0; k < nl; k++) {
    size_t a = (size_t)ord[k];
    move_name(g, (int)a, name, sizeof name);
    pb_json_obj_begin(j);
    pb_json_kstr(j, "move", name);
    pb_json_kint(j, "order", k);
    if (in->searched && in->move_visits[a] > 0)
      pb_json_kuint(j, "visits", (uint64_t)in->move_visits[a]);
    if (q->report & PB__ENGINE_V1)
      pb_json_kfloat(j, "winrate", winrate(e->v1[i * A + a]));
    if (q->report & PB__ENGINE_POLICY)
      pb_json_kfloat(j, "prior", e->policy[i * A + a]);
    pb_json_key(j, "pv");
    pb_json_arr_begin(j);
    if ((int)a == e->moves[i] && in->searched && in->pv_len > 0) {
      for (int t = 0; t < in->pv_len; t++) {
        move_name(g, in->pv[t], name, sizeof name);
        pb_json_str(j, name);
      }
    } else {
      pb_json_str(j, name);
    }
    pb_json_arr_end(j);
    pb_json_obj_end(j);
  }
  pb_json_arr_end(j);
}

/* rootInfo: the search's visits (0 without a search), the winrate (the
 * search's root value, else V), the side to move. */
static void root_info(pb_engine_t *e, int i, const char *side) {
  const pb__engine_query_t *q = &e->q[i];
  const pb_agent_info_t *in = &e->info[i];
  pb_json_t *j = &e->out;
  pb_json_key(j, "rootInfo");
  pb_json_obj_begin(j);
  pb_json_kstr(j, "currentPlayer", side);
  pb_json_kuint(j, "visits", in->searched ? in->visits : 0);
  if (in->searched)
    pb_json_kfloat(j, "winrate", winrate(in->value));
  else if (q->report & PB__ENGINE_V)
    pb_json_kfloat(j, "winrate", winrate(e->v[i]));
  pb_json_obj_end(j);
}

/* includePolicy: the policy of every action (-1: not legal). */
static void policy_array(pb_engine_t *e, int i, const uint8_t *legal, int nl) {
  size_t A = (size_t)e->g->num_actions;
  pb_json_t *j = &e->out;
  pb_json_key(j, "policy");
  pb_json_arr_begin(j);
  for (size_t a = 0, k = 0; a < A; a++) {
    while (k < (size_t)nl && legal[k] < a) k++;
    if (k < (size_t)nl && legal[k] == a)
      pb_json_float(j, e->policy[(size_t)i * A + a]);
    else
      pb_json_int(j, -1);
  }
  pb_json_arr_end(j);
}

void pb__engine_answer(pb_engine_t *e, int i, int during) {
  const pb__engine_query_t *q = &e->q[i];
  const pb_game_t *g = e->g;
  pb_json_t *j = &e->out;
  char side[2] = {pb_analysis_side(g, &q->s), '\0'}, name[16];
  pb_json_reset(j);
  pb_json_obj_begin(j);
  pb_json_key(j, "id");
  pb_json_raw(j, q->id);
  if (q->terminated || q->stopped) {
    pb_json_kint(j, "turnNumber", q->turn);
    pb_json_kbool(j, "isDuringSearch", false);
    pb_json_kbool(j, "noResults", true);
    pb_json_obj_end(j);
    return;
  }
  /* probs's fields first (their order as before KataGo's came), then
   * KataGo's. */
  pb_json_kint(j, "ply", g->ply(&q->s));
  pb_json_kstr(j, "to_move", side);
  if (q->over) {
    char result[64];
    pb_analysis_result(g, &q->s, result, sizeof result);
    pb_json_kstr(j, "result", result);
    pb_json_kint(j, "turnNumber", q->turn);
    pb_json_kbool(j, "isDuringSearch", false);
    pb_json_obj_end(j);
    return;
  }
  size_t A = (size_t)g->num_actions;
  uint8_t legal[PB_MAX_ACTIONS];
  int nl = g->legal(&q->s, legal);
  if (q->report & PB__ENGINE_V) pb_json_kfloat(j, "v", e->v[i]);
  if (q->report & (PB__ENGINE_Q | PB__ENGINE_POLICY | PB__ENGINE_V1)) {
    pb_json_key(j, "moves");
    pb_json_arr_begin(j);
    for (int k = 0; k < nl; k++) {
      size_t a = legal[k];
      move_name(g, (int)a, name, sizeof name);
      pb_json_obj_begin(j);
      pb_json_kstr(j, "move", name);
      if (q->report & PB__ENGINE_Q) pb_json_kfloat(j, "q", e->qv[i * A + a]);
      if (q->report & PB__ENGINE_POLICY)
        pb_json_kfloat(j, "policy", e->policy[i * A + a]);
      if (q->report & PB__ENGINE_V1) pb_json_kfloat(j, "v1", e->v1[i * A + a]);
      pb_json_obj_end(j);
    }
    pb_json_arr_end(j);
  }
  if (q->report & PB__ENGINE_MOVE) {
    move_name(g, e->moves[i], name, sizeof name);
    pb_json_kstr(j, "move", name);
    pb_json_kstr(j, "agent", q->spec);
  }
  pb_json_kint(j, "turnNumber", q->turn);
  pb_json_kbool(j, "isDuringSearch", during != 0);
  root_info(e, i, side);
  move_infos(e, i, legal, nl);
  if (q->policy_arr) policy_array(e, i, legal, nl);
  pb_json_obj_end(j);
}

/* ---- sending ------------------------------------------------------------- */

/* Writes the object built in e->out through emit. */
int pb__engine_send(pb_engine_t *e, pb_err_t *err) {
  int rc = pb_json_error(&e->out);
  if (rc != 0) {
    e->fatal = PB_ENOMEM;
    return pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
  }
  rc = e->emit(e->ctx, pb_json_cstr(&e->out), pb_json_len(&e->out));
  if (rc != 0) {
    e->fatal = rc;
    return pb_err_set(err, rc, "analysis engine: cannot write an answer");
  }
  e->st.queries++;
  return 0;
}

/* An error object: {"id": id or null, "error": msg[, "field": field]}. */
int pb__engine_send_error(pb_engine_t *e, const char *id, const char *field,
                          const char *msg, pb_err_t *err) {
  pb_json_reset(&e->out);
  pb_json_obj_begin(&e->out);
  pb_json_key(&e->out, "id");
  if (id != NULL)
    pb_json_raw(&e->out, id);
  else
    pb_json_null(&e->out);
  pb_json_kstr(&e->out, "error", msg);
  if (field != NULL) pb_json_kstr(&e->out, "field", field);
  pb_json_obj_end(&e->out);
  e->st.errors++;
  return pb__engine_send(e, err);
}
