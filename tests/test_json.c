/* test_json.c - escaping, nesting, numbers and misuse of the common/base/json
 * writer, and the validator against hand-picked good and bad texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "rng.h"

/* The JSON text of one string value. */
static void assert_str_json(const char *s, size_t n, const char *want) {
  pb_json_t j;
  pb_json_init(&j);
  assert_int_equal(pb_json_strn(&j, s, n), 0);
  assert_int_equal(pb_json_error(&j), 0);
  assert_string_equal(pb_json_cstr(&j), want);
  assert_int_equal(pb_json_validate(pb_json_cstr(&j)), 0);
  pb_json_free(&j);
}

#define STR_JSON(lit, want) assert_str_json(lit, sizeof(lit) - 1, want)

static void test_escaping(void **state) {
  (void)state;
  STR_JSON("plain", "\"plain\"");
  STR_JSON("", "\"\"");
  STR_JSON("say \"hi\"", "\"say \\\"hi\\\"\"");
  STR_JSON("a\\b", "\"a\\\\b\"");
  STR_JSON("/", "\"/\"");
  STR_JSON("\n\t\r\b\f", "\"\\n\\t\\r\\b\\f\"");
  STR_JSON("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
  STR_JSON("nul\0inside", "\"nul\\u0000inside\"");
  /* UTF-8 passes through; invalid bytes become U+FFFD. */
  STR_JSON("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80",
           "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
  STR_JSON("a\xFFz", "\"a\xEF\xBF\xBDz\"");
  STR_JSON("\xC0\xAF", "\"\xEF\xBF\xBD\xEF\xBF\xBD\""); /* overlong '/' */
  STR_JSON("\xED\xA0\x80",
           "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""); /* surrogate */
  STR_JSON("\xE2\x82", "\"\xEF\xBF\xBD\xEF\xBF\xBD\""); /* truncated */
  /* Keys are escaped the same way. */
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "k\"ey\n", NULL);
  pb_json_obj_end(&j);
  assert_string_equal(pb_json_cstr(&j), "{\"k\\\"ey\\n\":null}");
  pb_json_free(&j);
}

static void test_nested(void **state) {
  (void)state;
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_key(&j, "a");
  pb_json_arr_begin(&j);
  pb_json_int(&j, 1);
  pb_json_int(&j, 2);
  pb_json_obj_begin(&j);
  pb_json_key(&j, "b");
  pb_json_null(&j);
  pb_json_obj_end(&j);
  pb_json_arr_begin(&j);
  pb_json_arr_end(&j);
  pb_json_arr_end(&j);
  pb_json_key(&j, "c");
  pb_json_obj_begin(&j);
  pb_json_kbool(&j, "d", true);
  pb_json_kbool(&j, "e", false);
  pb_json_key(&j, "f");
  pb_json_raw(&j, " [1, {\"x\": \"y\"}] ");
  pb_json_obj_end(&j);
  pb_json_key(&j, "g");
  pb_json_obj_begin(&j);
  pb_json_obj_end(&j);
  pb_json_kuint(&j, "h", 18446744073709551615ull);
  assert_int_equal(pb_json_obj_end(&j), 0);
  assert_int_equal(pb_json_error(&j), 0);
  const char *want =
      "{\"a\":[1,2,{\"b\":null},[]],\"c\":{\"d\":true,\"e\":false,\"f\": [1, "
      "{\"x\": \"y\"}] },"
      "\"g\":{},\"h\":18446744073709551615}";
  assert_string_equal(pb_json_cstr(&j), want);
  assert_int_equal(pb_json_len(&j), strlen(want));
  assert_int_equal(pb_json_validate(pb_json_cstr(&j)), 0);

  /* take hands over the buffer; reset keeps it for reuse. */
  char *t = pb_json_take(&j);
  assert_string_equal(t, want);
  free(t);
  assert_string_equal(pb_json_cstr(&j), "");
  pb_json_arr_begin(&j);
  pb_json_str(&j, "x");
  pb_json_arr_end(&j);
  assert_string_equal(pb_json_cstr(&j), "[\"x\"]");
  pb_json_reset(&j);
  assert_string_equal(pb_json_cstr(&j), "");
  pb_json_int(&j, 5);
  assert_string_equal(pb_json_cstr(&j), "5");
  pb_json_free(&j);
  pb_json_free(NULL);

  /* Deep but within the limit. */
  pb_json_init(&j);
  for (int i = 0; i < PB_JSON_MAX_DEPTH; i++) pb_json_arr_begin(&j);
  for (int i = 0; i < PB_JSON_MAX_DEPTH; i++) pb_json_arr_end(&j);
  assert_int_equal(pb_json_error(&j), 0);
  assert_int_equal(pb_json_validate(pb_json_cstr(&j)), 0);
  pb_json_free(&j);
}

static const char *one_value(pb_json_t *j) {
  pb_json_reset(j);
  return pb_json_cstr(j);
}

static void test_numbers(void **state) {
  (void)state;
  pb_json_t j;
  pb_json_init(&j);
  struct {
    double v;
    const char *want;
  } dcases[] = {{0.0, "0"},
                {-0.0, "-0"},
                {1.0, "1"},
                {0.1, "0.1"},
                {0.003, "0.003"},
                {1e300, "1e+300"},
                {-2.5e-8, "-2.5e-08"},
                {0.1 + 0.2, "0.30000000000000004"},
                {123456789.0, "123456789"}};
  for (size_t i = 0; i < sizeof dcases / sizeof dcases[0]; i++) {
    one_value(&j);
    pb_json_double(&j, dcases[i].v);
    assert_string_equal(pb_json_cstr(&j), dcases[i].want);
    assert_true(strtod(pb_json_cstr(&j), NULL) == dcases[i].v);
    assert_int_equal(pb_json_validate(pb_json_cstr(&j)), 0);
  }
  double bad[] = {NAN, INFINITY, -INFINITY};
  for (size_t i = 0; i < 3; i++) {
    one_value(&j);
    pb_json_double(&j, bad[i]);
    assert_string_equal(pb_json_cstr(&j), "null");
    one_value(&j);
    pb_json_float(&j, (float)bad[i]);
    assert_string_equal(pb_json_cstr(&j), "null");
  }
  one_value(&j);
  pb_json_float(&j, 0.3f);
  assert_string_equal(pb_json_cstr(&j), "0.3");
  one_value(&j);
  pb_json_float(&j, 1.0f / 3.0f);
  assert_true(strtof(pb_json_cstr(&j), NULL) == 1.0f / 3.0f);
  one_value(&j);
  pb_json_int(&j, INT64_MIN);
  assert_string_equal(pb_json_cstr(&j), "-9223372036854775808");
  one_value(&j);
  pb_json_int(&j, INT64_MAX);
  assert_string_equal(pb_json_cstr(&j), "9223372036854775807");

  /* Every double the RNG makes survives the trip, and is valid JSON. */
  pb_rng_t r;
  pb_rng_seed(&r, 3, 0);
  for (int i = 0; i < 2000; i++) {
    uint64_t bits = pb_rng_next(&r);
    double v;
    memcpy(&v, &bits, sizeof v);
    one_value(&j);
    pb_json_double(&j, v);
    if (!isfinite(v)) {
      assert_string_equal(pb_json_cstr(&j), "null");
      continue;
    }
    assert_true(strtod(pb_json_cstr(&j), NULL) == v);
    assert_int_equal(pb_json_validate(pb_json_cstr(&j)), 0);
  }
  pb_json_free(&j);
}

static void expect_misuse(pb_json_t *j) {
  assert_int_equal(pb_json_error(j), PB_EINVAL);
  assert_null(pb_json_cstr(j));
  assert_null(pb_json_take(j));
  /* Sticky: later calls report the same error and do nothing. */
  assert_int_equal(pb_json_int(j, 1), PB_EINVAL);
  pb_json_free(j);
}

static void test_misuse(void **state) {
  (void)state;
  pb_json_t j;

  pb_json_init(&j); /* value without a key */
  pb_json_obj_begin(&j);
  assert_int_equal(pb_json_int(&j, 1), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* key in an array */
  pb_json_arr_begin(&j);
  assert_int_equal(pb_json_key(&j, "k"), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* key at the top */
  assert_int_equal(pb_json_key(&j, "k"), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* two keys in a row */
  pb_json_obj_begin(&j);
  pb_json_key(&j, "a");
  assert_int_equal(pb_json_key(&j, "b"), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* end with a value due */
  pb_json_obj_begin(&j);
  pb_json_key(&j, "a");
  assert_int_equal(pb_json_obj_end(&j), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* mismatched end */
  pb_json_obj_begin(&j);
  assert_int_equal(pb_json_arr_end(&j), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* end with nothing open */
  assert_int_equal(pb_json_obj_end(&j), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* two top-level values */
  pb_json_int(&j, 1);
  assert_int_equal(pb_json_int(&j, 2), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* too deep */
  for (int i = 0; i < PB_JSON_MAX_DEPTH; i++)
    assert_int_equal(pb_json_arr_begin(&j), 0);
  assert_int_equal(pb_json_arr_begin(&j), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* malformed raw text */
  pb_json_arr_begin(&j);
  assert_int_equal(pb_json_raw(&j, "{oops}"), PB_EINVAL);
  expect_misuse(&j);

  pb_json_init(&j); /* incomplete is not an error until asked */
  pb_json_arr_begin(&j);
  assert_string_equal(pb_json_cstr(&j), "[");
  assert_int_equal(pb_json_error(&j), PB_EINVAL);
  pb_json_arr_end(&j);
  assert_int_equal(pb_json_error(&j), 0);
  pb_json_free(&j);

  pb_json_init(&j); /* nothing written */
  assert_int_equal(pb_json_error(&j), PB_EINVAL);
  assert_string_equal(pb_json_cstr(&j), "");
  assert_null(pb_json_take(&j));
  pb_json_free(&j);
}

static void test_validate(void **state) {
  (void)state;
  const char *good[] = {
      "0",
      "-0",
      "12",
      "-1.5e10",
      "1E-2",
      "0.25",
      "true",
      "false",
      "null",
      "\"\"",
      "\"a\\u00e9\\uD83D\\ude00\\n\\/\"",
      "[]",
      "{}",
      " \t\r\n[ 1 , 2 ]\n",
      "{\"a\" : [1, true, false, null, {\"b\": {}}], \"c\": \"\xC3\xA9\"}",
      "[[[[[[[[[[1]]]]]]]]]]",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pb_err_t err;
    pb_err_clear(&err);
    int rc = pb_json_validate_n(good[i], strlen(good[i]), &err);
    if (rc) print_error("should be valid: %s (%s)\n", good[i], err.msg);
    assert_int_equal(rc, 0);
  }
  const char *bad[] = {
      "",
      " ",
      "01",
      "1.",
      ".5",
      "+1",
      "-",
      "1e",
      "1e+",
      "0x10",
      "NaN",
      "Infinity",
      "-Infinity",
      "[1,]",
      "[,1]",
      "[1 2]",
      "{\"a\":1,}",
      "{a:1}",
      "{\"a\"}",
      "{\"a\":}",
      "{1:2}",
      "'x'",
      "\"\\x\"",
      "\"\\u12g4\"",
      "\"\\u12\"",
      "\"raw\ttab\"",
      "\"line\nbreak\"",
      "\"\xff\"",
      "\"\xC0\xAF\"",
      "\"unterminated",
      "nul",
      "tru",
      "true false",
      "[1]]",
      "{}{}",
      "[",
      "{\"a\":1",
      "\"\\\"",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = pb_json_validate(bad[i]);
    if (rc != PB_ECORRUPT) print_error("should be invalid: %s\n", bad[i]);
    assert_int_equal(rc, PB_ECORRUPT);
  }
  assert_int_equal(pb_json_validate(NULL), PB_ECORRUPT);

  /* Error messages give the offset. */
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_json_validate_n("[1,]", 4, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "byte 3"));
  /* Length-bounded: trailing bytes beyond n are not looked at. */
  assert_int_equal(pb_json_validate_n("[1]garbage", 3, NULL), 0);

  /* Nesting is bounded, so hostile input cannot blow the stack. */
  size_t deep = 100000;
  char *s = malloc(2 * deep + 1);
  assert_non_null(s);
  memset(s, '[', deep);
  memset(s + deep, ']', deep);
  s[2 * deep] = '\0';
  assert_int_equal(pb_json_validate(s), PB_ECORRUPT);
  memset(s, '[', 200);
  memset(s + 200, ']', 200);
  s[400] = '\0';
  assert_int_equal(pb_json_validate(s), 0);
  free(s);
}

/* Whatever bytes go in, the writer's output is valid JSON. */
static void test_fuzz_strings(void **state) {
  (void)state;
  pb_rng_t r;
  pb_rng_seed(&r, 11, 0);
  pb_json_t j;
  pb_json_init(&j);
  unsigned char buf[64];
  for (int i = 0; i < 3000; i++) {
    size_t n = pb_rng_below(&r, sizeof buf);
    for (size_t k = 0; k < n; k++)
      buf[k] = (unsigned char)pb_rng_below(&r, 256);
    pb_json_reset(&j);
    pb_json_obj_begin(&j);
    pb_json_key(&j, (const char *)"k");
    pb_json_strn(&j, (const char *)buf, n);
    pb_json_obj_end(&j);
    assert_int_equal(pb_json_error(&j), 0);
    assert_int_equal(pb_json_validate(pb_json_cstr(&j)), 0);
    /* And random bytes rarely validate, but never crash the validator. */
    buf[n] = '\0';
    (void)pb_json_validate_n((const char *)buf, n, NULL);
  }
  pb_json_free(&j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escaping), cmocka_unit_test(test_nested),
      cmocka_unit_test(test_numbers),  cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_validate), cmocka_unit_test(test_fuzz_strings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
