/* engine_actions.c - the analysis engine's actions (KataGo's special
 * action queries: terminate, query_version, clear_cache) and the stopping
 * of searches from other threads (pb_engine_notice, pb_engine_stop).
 * docs/analysis.md, "Actions". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"

#ifndef PB_VERSION /* CMakeLists.txt defines it: project(VERSION) */
#define PB_VERSION "unknown"
#endif

static const char *const action_fields[] = {"id", "action", "terminateId",
                                            "turnNumbers"};

/* A value's JSON text, NUL-terminated (malloc'd), or NULL. */
static char *text_of(const pb_jval_t *v) {
  size_t len = 0;
  const char *t = pb_jval_text(v, &len);
  char *s = malloc(len + 1);
  if (s == NULL) return NULL;
  memcpy(s, t, len);
  s[len] = '\0';
  return s;
}

/* The terminate's target: terminateId (a string or a number) as JSON
 * text (malloc'd) and turnNumbers (malloc'd; NULL: all). 0, PB_ENOMEM,
 * or PB_EINVAL with err and *field set. */
static int read_target(const pb_jval_t *root, char **id, int **turns,
                       int *nturns, const char **field, pb_err_t *err) {
  const pb_jval_t *t = pb_jval_get(root, "terminateId");
  *id = NULL;
  *turns = NULL;
  *nturns = 0;
  *field = "terminateId";
  if (t == NULL)
    return pb_err_set(err, PB_EINVAL,
                      "terminate needs terminateId (the id of the queries "
                      "to terminate)");
  int k = pb_jval_kind(t);
  if (k != PB_JVAL_STRING && k != PB_JVAL_NUMBER)
    return pb_err_set(err, PB_EINVAL,
                      "terminateId is %s; expected a string or a number",
                      pb_jval_kind_name(k));
  const pb_jval_t *tn = pb_jval_get(root, "turnNumbers");
  if (tn != NULL) {
    *field = "turnNumbers";
    if (pb_jval_kind(tn) != PB_JVAL_ARRAY)
      return pb_err_set(err, PB_EINVAL,
                        "turnNumbers is %s; expected an array of turns",
                        pb_jval_kind_name(pb_jval_kind(tn)));
    size_t n = pb_jval_count(tn);
    *turns = malloc((n + 1) * sizeof **turns);
    if (*turns == NULL) return PB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
      int64_t v = 0;
      if (pb_jval_int(pb_jval_at(tn, i), 0, INT32_MAX, &v) != 0) {
        free(*turns);
        *turns = NULL;
        return pb_err_set(err, PB_EINVAL,
                          "turnNumbers[%zu] is not a turn number (an "
                          "integer >= 0)",
                          i);
      }
      (*turns)[i] = (int)v;
    }
    *nturns = (int)n;
  }
  if ((*id = text_of(t)) == NULL) {
    free(*turns);
    *turns = NULL;
    return PB_ENOMEM;
  }
  return 0;
}

int pb__engine_mark_terminated(pb_engine_t *e, const char *id, const int *turns,
                               int nturns) {
  int marked = 0;
  for (int i = 0; i < e->nq; i++) {
    pb__engine_query_t *q = &e->q[i];
    if (strcmp(q->id, id) != 0) continue;
    int hit = turns == NULL;
    for (int k = 0; k < nturns && !hit; k++) hit = turns[k] == q->turn;
    if (hit && !q->terminated) {
      q->terminated = 1;
      marked++;
    }
  }
  return marked;
}

void pb__engine_take_notices(pb_engine_t *e) {
  pthread_mutex_lock(&e->lock);
  for (int k = 0; k < e->nnotices; k++) {
    pb__engine_notice_t *nt = &e->notices[k];
    pb__engine_mark_terminated(e, nt->id, nt->turns, nt->nturns);
    free(nt->id);
    free(nt->turns);
  }
  e->nnotices = 0;
  int one = 1;
  atomic_compare_exchange_strong(&e->intr, &one, 0);
  pthread_mutex_unlock(&e->lock);
}

void pb_engine_notice(pb_engine_t *e, const char *line, size_t n) {
  pthread_mutex_lock(&e->lock);
  const pb_jval_t *root = pb_jsonr_parse(e->njr, line, n, NULL);
  const pb_jval_t *act = root ? pb_jval_get(root, "action") : NULL;
  const char *a = act ? pb_jval_str(act, NULL) : NULL;
  const char *field = NULL;
  pb__engine_notice_t nt;
  if (a != NULL && strcmp(a, "terminate") == 0 &&
      e->nnotices < PB__ENGINE_NOTICES &&
      read_target(root, &nt.id, &nt.turns, &nt.nturns, &field, NULL) == 0) {
    e->notices[e->nnotices++] = nt;
    int zero = 0;
    atomic_compare_exchange_strong(&e->intr, &zero, 1);
  }
  pthread_mutex_unlock(&e->lock);
}

void pb_engine_stop(pb_engine_t *e) {
  atomic_store(&e->intr, 2);
}

int pb_engine_stopping(const pb_engine_t *e) {
  return atomic_load(&((pb_engine_t *)e)->intr) == 2;
}

/* The action's object echoed (its members as given), with KataGo's
 * version fields when `version`. */
static int echo(pb_engine_t *e, const pb_jval_t *root, int version,
                pb_err_t *err) {
  pb_json_t *j = &e->out;
  pb_json_reset(j);
  pb_json_obj_begin(j);
  for (size_t i = 0; i < pb_jval_count(root); i++) {
    char *t = text_of(pb_jval_at(root, i));
    if (t == NULL) {
      e->fatal = PB_ENOMEM;
      return pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
    }
    pb_json_key(j, pb_jval_key(root, i));
    pb_json_raw(j, t);
    free(t);
  }
  if (version) {
    pb_json_kstr(j, "version", PB_VERSION);
    pb_json_kstr(j, "git_hash", "<omitted>");
  }
  pb_json_obj_end(j);
  return pb__engine_send(e, err);
}

/* clear_cache: the engine's cached network values, and the kept agents
 * (with their caches) that no waiting query needs. */
static void clear_cache(pb_engine_t *e) {
  if (e->ne != NULL) pb_neteval_bind(e->ne, pb_model_v(e->m), pb_model_q(e->m));
  for (int k = 0; k < PB_ENGINE_AGENTS; k++) {
    pb__engine_agent_t *ag = &e->agents[k];
    if (ag->waiting > 0 || ag->spec == NULL) continue;
    pb_agent_destroy(&ag->a);
    free(ag->spec);
    ag->spec = NULL;
  }
}

int pb__engine_action(pb_engine_t *e, const pb_jval_t *root, const char *line,
                      size_t n, pb_err_t *err) {
  (void)line;
  (void)n;
  char *id = text_of(pb_jval_get(root, "id"));
  if (id == NULL) {
    e->fatal = PB_ENOMEM;
    return pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
  }
  const char *field = "action",
             *a = pb_jval_str(pb_jval_get(root, "action"), NULL);
  pb_err_t qe;
  pb_err_clear(&qe);
  int rc = 0;
  for (size_t i = 0; i < pb_jval_count(root) && rc == 0; i++) {
    const char *key = pb_jval_key(root, i);
    size_t k = 0, nk = sizeof action_fields / sizeof action_fields[0];
    while (k < nk && strcmp(key, action_fields[k]) != 0) k++;
    if (k == nk) {
      field = key;
      rc = pb_err_set(&qe, PB_EINVAL,
                      "unknown field \"%.64s\" in an action (known: id, "
                      "action, terminateId, turnNumbers)",
                      key);
    }
  }
  int is_term = a != NULL && strcmp(a, "terminate") == 0;
  if (rc == 0 && !is_term &&
      (pb_jval_get(root, "terminateId") || pb_jval_get(root, "turnNumbers"))) {
    field = pb_jval_get(root, "terminateId") ? "terminateId" : "turnNumbers";
    rc = pb_err_set(&qe, PB_EINVAL, "%s is for the terminate action", field);
  }
  if (rc == 0 && is_term) {
    char *tid = NULL;
    int *turns = NULL, nturns = 0;
    rc = read_target(root, &tid, &turns, &nturns, &field, &qe);
    if (rc == 0) {
      pb__engine_mark_terminated(e, tid, turns, nturns);
      rc = echo(e, root, 0, err);
      free(tid);
      free(turns);
      free(id);
      return rc;
    }
    if (rc == PB_ENOMEM) {
      free(id);
      e->fatal = PB_ENOMEM;
      return pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
    }
  } else if (rc == 0 && a != NULL && strcmp(a, "query_version") == 0) {
    free(id);
    return echo(e, root, 1, err);
  } else if (rc == 0 && a != NULL && strcmp(a, "clear_cache") == 0) {
    clear_cache(e);
    free(id);
    return echo(e, root, 0, err);
  } else if (rc == 0) {
    field = "action";
    rc = pb_err_set(&qe, PB_EINVAL,
                    "action is not one of \"terminate\", \"query_version\", "
                    "\"clear_cache\"");
  }
  rc = pb__engine_send_error(e, id, field, qe.msg, err);
  free(id);
  return rc;
}
