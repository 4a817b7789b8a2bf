/* config_fixtures.h - what the tests of common/run/config (test_config.c,
 * test_config_schema.c) share: the shipped configs' folder, and the
 * expectations of a refused load or override (PB_ECONFIG, the config
 * unchanged, the message naming what is wrong). */
#ifndef PB_TEST_CONFIG_FIXTURES_H
#define PB_TEST_CONFIG_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "config.h"
#include "err.h"

#define CONFIGS PB_SOURCE_DIR "/configs/"

/* Asserts that `msg` contains `needle`, printing the message if not. */
#define assert_msg_has(msg, needle)                                  \
  do {                                                               \
    if (strstr((msg), (needle)) == NULL) {                           \
      print_error("message \"%s\" lacks \"%s\"\n", (msg), (needle)); \
      fail();                                                        \
    }                                                                \
  } while (0)

/* Loads `yaml` on top of the defaults; expects PB_ECONFIG, an unchanged
 * config, and a message holding every needle (NULL-terminated list). */
static inline void expect_load_error(const char *yaml, ...) {
  pb_config_t c, d;
  pb_config_defaults(&c);
  pb_config_defaults(&d);
  pb_err_t err;
  pb_err_clear(&err);
  int rc = pb_config_load_string(&c, yaml, &err);
  if (rc != PB_ECONFIG)
    print_error("yaml: %s\nrc %d msg %s\n", yaml, rc, err.msg);
  assert_int_equal(rc, PB_ECONFIG);
  assert_int_equal(err.code, PB_ECONFIG);
  assert_memory_equal(&c, &d, sizeof c);
  va_list ap;
  va_start(ap, yaml);
  for (const char *n = va_arg(ap, const char *); n != NULL;
       n = va_arg(ap, const char *))
    assert_msg_has(err.msg, n);
  va_end(ap);
}

static inline void expect_set_error(const char *kv, const char *needle1,
                             const char *needle2) {
  pb_config_t c, d;
  pb_config_defaults(&c);
  pb_config_defaults(&d);
  pb_err_t err;
  pb_err_clear(&err);
  int rc = pb_config_apply_override(&c, kv, &err);
  if (rc != PB_ECONFIG)
    print_error("override %s: rc %d msg %s\n", kv, rc, err.msg);
  assert_int_equal(rc, PB_ECONFIG);
  assert_memory_equal(&c, &d, sizeof c);
  if (needle1) assert_msg_has(err.msg, needle1);
  if (needle2) assert_msg_has(err.msg, needle2);
}

#endif
