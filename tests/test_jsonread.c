/* test_jsonread.c - the strict JSON reader of common/base/jsonread.h: every
 * kind of value, strings decoded (escapes, surrogates), integers read
 * exactly, texts refused (malformed, a key given twice), the reader reused
 * across lines, big containers walked in linear time, and random bytes
 * never crashing it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "jsonread.h"
#include "rng.h"

static const pb_jval_t *parse(pb_jsonr_t *r, const char *s, pb_err_t *err) {
  return pb_jsonr_parse(r, s, strlen(s), err);
}

static void test_kinds(void **state) {
  (void)state;
  pb_err_t err;
  pb_jsonr_t *r = pb_jsonr_new(&err);
  assert_non_null(r);
  const pb_jval_t *v =
      parse(r,
            " {\"id\": \"q1\", \"n\": -42, \"x\": 2.5e1, \"ok\": true, \"no\": "
            "false, \"nil\": null, \"moves\": [\"4\", \"4\", 5], \"o\": {}} ",
            &err);
  assert_non_null(v);
  assert_int_equal(pb_jval_kind(v), PB_JVAL_OBJECT);
  assert_int_equal(pb_jval_count(v), 8);
  assert_string_equal(pb_jval_key(v, 0), "id");
  assert_string_equal(pb_jval_key(v, 7), "o");
  assert_null(pb_jval_key(v, 8));
  assert_string_equal(pb_jval_str(pb_jval_get(v, "id"), NULL), "q1");
  int64_t n = 0;
  assert_int_equal(pb_jval_int(pb_jval_get(v, "n"), -100, 100, &n), 0);
  assert_int_equal(n, -42);
  assert_int_equal(pb_jval_int(pb_jval_get(v, "n"), 0, 100, &n), PB_ERANGE);
  assert_int_equal(pb_jval_int(pb_jval_get(v, "x"), 0, 100, &n), PB_EINVAL);
  assert_int_equal(pb_jval_int(pb_jval_get(v, "id"), 0, 100, &n), PB_EINVAL);
  assert_true(pb_jval_num(pb_jval_get(v, "x")) == 25.0);
  assert_true(isnan(pb_jval_num(pb_jval_get(v, "id"))));
  assert_int_equal(pb_jval_bool(pb_jval_get(v, "ok")), 1);
  assert_int_equal(pb_jval_bool(pb_jval_get(v, "no")), 0);
  assert_int_equal(pb_jval_bool(pb_jval_get(v, "nil")), -1);
  assert_int_equal(pb_jval_kind(pb_jval_get(v, "nil")), PB_JVAL_NULL);
  const pb_jval_t *m = pb_jval_get(v, "moves");
  assert_int_equal(pb_jval_kind(m), PB_JVAL_ARRAY);
  assert_int_equal(pb_jval_count(m), 3);
  assert_string_equal(pb_jval_str(pb_jval_at(m, 1), NULL), "4");
  assert_int_equal(pb_jval_kind(pb_jval_at(m, 2)), PB_JVAL_NUMBER);
  assert_null(pb_jval_at(m, 3));
  assert_null(pb_jval_key(m, 0)); /* not an object */
  assert_null(pb_jval_get(m, "x"));
  assert_null(pb_jval_get(v, "missing"));
  assert_int_equal(pb_jval_count(pb_jval_get(v, "o")), 0);
  assert_int_equal(pb_jval_count(pb_jval_get(v, "n")), 0);
  /* The text as written, for echoing. */
  size_t len = 0;
  const char *t = pb_jval_text(pb_jval_get(v, "x"), &len);
  assert_int_equal(len, 5);
  assert_memory_equal(t, "2.5e1", 5);
  t = pb_jval_text(m, &len);
  assert_int_equal(len, 13);
  assert_memory_equal(t, "[\"4\", \"4\", 5]", 13);
  assert_string_equal(pb_jval_kind_name(PB_JVAL_STRING), "a string");
  assert_string_equal(pb_jval_kind_name(PB_JVAL_OBJECT), "an object");
  pb_jsonr_destroy(&r);
  assert_null(r);
  pb_jsonr_destroy(&r);
  pb_jsonr_destroy(NULL);
}

static void test_strings(void **state) {
  (void)state;
  pb_err_t err;
  pb_jsonr_t *r = pb_jsonr_new(&err);
  const pb_jval_t *v =
      parse(r,
            "[\"a\\\"b\\\\c\\/d\\n\\t\", \"\\u00e9\\u20ac\", "
            "\"\\ud83d\\ude00\", \"\\ud800x\", \"nul\\u0000in\", \"\"]",
            &err);
  assert_non_null(v);
  size_t n = 0;
  assert_string_equal(pb_jval_str(pb_jval_at(v, 0), &n), "a\"b\\c/d\n\t");
  assert_int_equal(n, 9);
  assert_string_equal(pb_jval_str(pb_jval_at(v, 1), NULL),
                      "\xC3\xA9\xE2\x82\xAC");
  assert_string_equal(pb_jval_str(pb_jval_at(v, 2), NULL), "\xF0\x9F\x98\x80");
  assert_string_equal(pb_jval_str(pb_jval_at(v, 3), NULL), "\xEF\xBF\xBDx");
  const char *s = pb_jval_str(pb_jval_at(v, 4), &n);
  assert_int_equal(n, 6);
  assert_memory_equal(s, "nul\0in", 6);
  assert_string_equal(pb_jval_str(pb_jval_at(v, 5), &n), "");
  assert_int_equal(n, 0);
  assert_null(pb_jval_str(v, NULL));
  /* Escaped keys are decoded too. */
  v = parse(r, "{\"a\\u0062\": 1}", &err);
  assert_non_null(v);
  assert_non_null(pb_jval_get(v, "ab"));
  pb_jsonr_destroy(&r);
}

static void test_integers(void **state) {
  (void)state;
  pb_err_t err;
  pb_jsonr_t *r = pb_jsonr_new(&err);
  int64_t x = 0;
  const pb_jval_t *v = parse(r, "9007199254740993", &err);
  assert_int_equal(pb_jval_int(v, INT64_MIN, INT64_MAX, &x), 0);
  assert_true(x == 9007199254740993ll); /* exact, beyond a double's 2^53 */
  v = parse(r, "-9223372036854775808", &err);
  assert_int_equal(pb_jval_int(v, INT64_MIN, INT64_MAX, &x), 0);
  assert_true(x == INT64_MIN);
  v = parse(r, "99999999999999999999", &err);
  assert_int_equal(pb_jval_int(v, INT64_MIN, INT64_MAX, &x), PB_ERANGE);
  v = parse(r, "1.0", &err);
  assert_int_equal(pb_jval_int(v, 0, 10, &x), PB_EINVAL);
  v = parse(r, "1E2", &err);
  assert_int_equal(pb_jval_int(v, 0, 1000, &x), PB_EINVAL);
  pb_jsonr_destroy(&r);
}

/* Each text is refused with code and a message holding `what`. */
static void refused(pb_jsonr_t *r, const char *s, size_t n, int code,
                    const char *what) {
  pb_err_t err;
  pb_err_clear(&err);
  assert_null(pb_jsonr_parse(r, s, n, &err));
  if (err.code != code) fail_msg("'%s': %s", s, err.msg);
  if (strstr(err.msg, what) == NULL) fail_msg("'%s': %s", s, err.msg);
}

static void test_refused(void **state) {
  (void)state;
  pb_err_t err;
  pb_jsonr_t *r = pb_jsonr_new(&err);
  const char *bad[] = {"",          "  ",         "{",       "{\"a\":}",
                       "[1,]",      "{\"a\":1,}", "'a'",     "[1] [2]",
                       "tru",       "01",         "1.",      "\"\\x\"",
                       "\"\\ud8\"", "{a:1}",      "// c\n1", "nan",
                       "\"\x01\"",  "[1 2]",      "\"\xff\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    refused(r, bad[i], strlen(bad[i]), PB_ECORRUPT, "json: at byte");
  refused(r, "1\0 2", 4, PB_ECORRUPT, "json: at byte");
  refused(r, "{\"a\":1,\"b\":2,\"a\":3}", 19, PB_EINVAL,
          "key \"a\" given twice");
  refused(r, "[{\"x\":[{\"k\":1,\"k\":2}]}]", 23, PB_EINVAL,
          "key \"k\" given twice");
  /* Nesting past 256 levels is refused, up to it read. */
  char deep[700];
  memset(deep, '[', 257);
  memset(deep + 257, ']', 257);
  refused(r, deep, 514, PB_ECORRUPT, "json: at byte");
  assert_non_null(pb_jsonr_parse(r, deep + 1, 512, &err));
  /* After a refusal the reader reads the next text. */
  const pb_jval_t *v = parse(r, "{\"a\":1,\"b\":{\"a\":2}}", &err);
  assert_non_null(v);
  assert_non_null(pb_jval_get(pb_jval_get(v, "b"), "a"));
  assert_null(pb_jsonr_parse(NULL, "1", 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
  pb_jsonr_destroy(&r);
}

/* The text need not be NUL-terminated: only s[0..n) is read. */
static void test_not_terminated(void **state) {
  (void)state;
  pb_err_t err;
  pb_jsonr_t *r = pb_jsonr_new(&err);
  const char text[] = "[1,2]garbage";
  const pb_jval_t *v = pb_jsonr_parse(r, text, 5, &err);
  assert_non_null(v);
  assert_int_equal(pb_jval_count(v), 2);
  pb_jsonr_destroy(&r);
}

/* A big array and a big object: walking them is linear, and a key given
 * twice among many is found. */
static void test_big(void **state) {
  (void)state;
  enum { N = 200000 };
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_key(&j, "arr");
  pb_json_arr_begin(&j);
  for (int i = 0; i < N; i++) pb_json_int(&j, i);
  pb_json_arr_end(&j);
  pb_json_key(&j, "obj");
  pb_json_obj_begin(&j);
  char key[32];
  for (int i = 0; i < N / 4; i++) {
    snprintf(key, sizeof key, "k%d", i);
    pb_json_kint(&j, key, i);
  }
  pb_json_obj_end(&j);
  pb_json_obj_end(&j);
  assert_int_equal(pb_json_error(&j), 0);
  pb_err_t err;
  pb_jsonr_t *r = pb_jsonr_new(&err);
  const pb_jval_t *v =
      pb_jsonr_parse(r, pb_json_cstr(&j), pb_json_len(&j), &err);
  assert_non_null(v);
  const pb_jval_t *a = pb_jval_get(v, "arr");
  assert_int_equal(pb_jval_count(a), N);
  int64_t sum = 0, x = 0;
  for (size_t i = 0; i < pb_jval_count(a); i++) {
    assert_int_equal(pb_jval_int(pb_jval_at(a, i), 0, N, &x), 0);
    sum += x;
  }
  assert_true(sum == (int64_t)N * (N - 1) / 2);
  const pb_jval_t *o = pb_jval_get(v, "obj");
  assert_int_equal(pb_jval_count(o), N / 4);
  assert_string_equal(pb_jval_key(o, N / 4 - 1), "k49999");
  /* The same object with its first key again at the end. */
  char *text = pb_json_take(&j);
  size_t len = strlen(text);
  char *dup = malloc(len + 16);
  assert_non_null(dup);
  memcpy(dup, text, len - 2);
  strcpy(dup + len - 2, ",\"k0\":1}}");
  assert_null(pb_jsonr_parse(r, dup, strlen(dup), &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "\"k0\" given twice"));
  free(dup);
  free(text);
  pb_jsonr_destroy(&r);
}

/* Random bytes and mutated JSON: the reader accepts exactly what the
 * validator accepts (less repeated keys) and never crashes. */
static void test_random(void **state) {
  (void)state;
  pb_err_t err;
  pb_jsonr_t *r = pb_jsonr_new(&err);
  pb_rng_t rng;
  pb_rng_seed(&rng, 7, 0);
  const char *seed =
      "{\"id\":\"q\",\"moves\":[\"4\",\"f5\"],\"n\":[1,-2.5e3,"
      "true,null,{\"a\":\"\\u00e9\"}]}";
  char buf[128];
  for (int it = 0; it < 20000; it++) {
    size_t n = strlen(seed);
    memcpy(buf, seed, n);
    int edits = 1 + (int)pb_rng_below(&rng, 4);
    for (int e = 0; e < edits; e++) {
      size_t at = (size_t)pb_rng_below(&rng, (uint32_t)n);
      buf[at] = it % 2 ? (char)pb_rng_below(&rng, 256)
                       : "{}[],:\"\\0e-. a"[pb_rng_below(&rng, 14)];
    }
    if (it % 3 == 0) n = (size_t)pb_rng_below(&rng, (uint32_t)n + 1);
    const pb_jval_t *v = pb_jsonr_parse(r, buf, n, &err);
    int valid = pb_json_validate_n(buf, n, NULL) == 0;
    if (v != NULL) {
      assert_true(valid);
      for (size_t i = 0; i < pb_jval_count(v); i++)
        (void)pb_jval_text(pb_jval_at(v, i), NULL);
    } else if (valid) {
      assert_int_equal(err.code, PB_EINVAL); /* a key given twice */
    }
  }
  pb_jsonr_destroy(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds),          cmocka_unit_test(test_strings),
      cmocka_unit_test(test_integers),       cmocka_unit_test(test_refused),
      cmocka_unit_test(test_not_terminated), cmocka_unit_test(test_big),
      cmocka_unit_test(test_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
