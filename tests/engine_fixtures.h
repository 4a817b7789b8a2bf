/* engine_fixtures.h - an analysis engine (common/play/engine.h) on a model
 * file, whose answer lines are collected (each checked to be one valid
 * JSON line) and looked up by their query's id, for test_analysis_engine.c
 * and test_engine_katago.c. Include after cmocka.h. */
#ifndef PB_TEST_ENGINE_FIXTURES_H
#define PB_TEST_ENGINE_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "json.h"
#include "jsonread.h"
#include "model.h"

#define MAX_OUT 4096

typedef struct {
  pb_model_t *m;
  pb_engine_t *e;
  char *line[MAX_OUT]; /* the answers, in order */
  int n;
  pb_jsonr_t *jr;      /* what answer() parses into */
} fix_t;

static inline int collect(void *ctx, const char *line, size_t len) {
  fix_t *f = ctx;
  assert_int_equal(strlen(line), len);
  assert_int_equal(pb_json_validate(line), 0);
  assert_true(f->n < MAX_OUT);
  f->line[f->n++] = strdup(line);
  return 0;
}

/* An engine on the model file ckpt (on the CPU), batches of `batch`. */
static inline void fix_open(fix_t *f, const char *ckpt, int batch) {
  pb_err_t err;
  memset(f, 0, sizeof *f);
  f->m = pb_model_open(ckpt, "cpu", NULL, &err);
  if (f->m == NULL) fail_msg("%s", err.msg);
  f->e = pb_engine_new(f->m, ckpt, batch, collect, f, &err);
  if (f->e == NULL) fail_msg("%s", err.msg);
  f->jr = pb_jsonr_new(&err);
  assert_non_null(f->jr);
}

/* Forgets the answers collected so far. */
static inline void clear(fix_t *f) {
  for (int i = 0; i < f->n; i++) free(f->line[i]);
  f->n = 0;
}

static inline void fix_close(fix_t *f) {
  pb_engine_destroy(&f->e);
  assert_null(f->e);
  pb_model_destroy(&f->m);
  pb_jsonr_destroy(&f->jr);
  clear(f);
}

static inline void query(fix_t *f, const char *line) {
  pb_err_t err;
  if (pb_engine_query(f->e, line, strlen(line), &err) != 0)
    fail_msg("%s: %s", line, err.msg);
}

/* Answers every query waiting. */
static inline void flush(fix_t *f) {
  pb_err_t err;
  if (pb_engine_flush(f->e, &err) != 0) fail_msg("%s", err.msg);
  assert_int_equal(pb_engine_waiting(f->e), 0);
}

/* Answer line k, parsed (into f->jr: valid until the next parse). */
static inline const pb_jval_t *parsed(fix_t *f, int k) {
  assert_true(k < f->n);
  const pb_jval_t *v =
      pb_jsonr_parse(f->jr, f->line[k], strlen(f->line[k]), NULL);
  assert_non_null(v);
  return v;
}

/* The k-th answer whose id is the string id (k from 0), parsed; fails
 * when there is none. */
static inline const pb_jval_t *answer_k(fix_t *f, const char *id, int k) {
  char want[128];
  snprintf(want, sizeof want, "{\"id\":\"%s\",", id);
  for (int i = 0; i < f->n; i++)
    if (strncmp(f->line[i], want, strlen(want)) == 0 && k-- == 0)
      return parsed(f, i);
  fail_msg("no answer for id %s", id);
  return NULL;
}

/* The one answer whose id is the string id, parsed; fails when there is
 * none or more than one. */
static inline const pb_jval_t *answer(fix_t *f, const char *id) {
  char want[128];
  snprintf(want, sizeof want, "{\"id\":\"%s\",", id);
  int found = -1;
  for (int i = 0; i < f->n; i++)
    if (strncmp(f->line[i], want, strlen(want)) == 0) {
      assert_int_equal(found, -1); /* one answer per query */
      found = i;
    }
  if (found < 0) fail_msg("no answer for id %s", id);
  return parsed(f, found);
}

static inline const char *str_of(const pb_jval_t *o, const char *key) {
  const pb_jval_t *v = pb_jval_get(o, key);
  return v ? pb_jval_str(v, NULL) : NULL;
}

static inline double num_of(const pb_jval_t *o, const char *key) {
  const pb_jval_t *v = pb_jval_get(o, key);
  if (v == NULL) fail_msg("no %s", key);
  return pb_jval_num(v);
}

/* The answer to `id` is an error naming `field` (NULL: none) whose message
 * holds `what`. */
static inline void assert_error(fix_t *f, const char *id, const char *field,
                                const char *what) {
  const pb_jval_t *a = answer(f, id);
  const char *msg = str_of(a, "error");
  if (msg == NULL) fail_msg("%s: not an error", id);
  if (strstr(msg, what) == NULL)
    fail_msg("%s: \"%s\" not in: %s", id, what, msg);
  const char *got = str_of(a, "field");
  if (field == NULL) {
    assert_null(pb_jval_get(a, "field"));
  } else {
    if (got == NULL) fail_msg("%s: no field in the error: %s", id, msg);
    assert_string_equal(got, field);
  }
}

#endif
