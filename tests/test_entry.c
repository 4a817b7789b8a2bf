/* test_entry.c - what every main() shares (common/run/entry): --set kept in order
 * and refused in the wrong form or past the limit, --keys and --help
 * answered with exit status 0, an unknown option with 2, the program's own
 * options passed back; the config built from the file and the overrides;
 * SIGINT and SIGTERM reaching main's handler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "entry.h"

static int usage_calls;
static void usage(FILE *f) {
  (void)f;
  usage_calls++;
}

static void test_options(void **state) {
  (void)state;
  pb_entry_t e;
  pb_entry_init(&e, "probs-test", usage);
  assert_int_equal(pb_entry_option(&e, PB_ENTRY_SET, "train.iterations=3"),
                   PB_ENTRY_NEXT);
  assert_int_equal(pb_entry_option(&e, PB_ENTRY_SET, "seed=9"),
                   PB_ENTRY_NEXT);
  assert_int_equal(e.nsets, 2);
  assert_string_equal(e.sets[1], "seed=9");
  assert_int_equal(pb_entry_option(&e, PB_ENTRY_SET, "seed"), 2);
  assert_int_equal(pb_entry_option(&e, PB_ENTRY_SET, "=3"), 2);
  assert_int_equal(e.nsets, 2);
  usage_calls = 0;
  assert_int_equal(pb_entry_option(&e, PB_ENTRY_HELP, NULL), 0);
  assert_int_equal(pb_entry_option(&e, 'h', NULL), 0);
  assert_int_equal(pb_entry_option(&e, '?', NULL), 2);
  assert_int_equal(usage_calls, 3);
  assert_int_equal(pb_entry_option(&e, 'r', "x"), PB_ENTRY_NOT_SHARED);
  while (e.nsets < PB_ENTRY_MAX_SETS)
    assert_int_equal(pb_entry_option(&e, PB_ENTRY_SET, "seed=1"),
                     PB_ENTRY_NEXT);
  assert_int_equal(pb_entry_option(&e, PB_ENTRY_SET, "seed=1"), 2);
  /* --keys lists the keys on stdout */
  FILE *saved = stdout;
  char buf[1 << 16];
  FILE *mem = fmemopen(buf, sizeof buf, "w");
  stdout = mem;
  int rc = pb_entry_option(&e, PB_ENTRY_KEYS, NULL);
  fflush(mem);
  stdout = saved;
  fclose(mem);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(buf, "search.expansions"));
}

static void test_config(void **state) {
  (void)state;
  pb_entry_t e;
  pb_entry_init(&e, "probs-test", usage);
  pb_entry_option(&e, PB_ENTRY_SET, "search.expansions=7");
  pb_config_t c;
  assert_int_equal(pb_entry_config(&e, &c,
                                   PB_SOURCE_DIR "/configs/connect4-smoke.yaml",
                                   "/tmp/probs-entry-run"),
                   0);
  assert_int_equal(c.search.expansions, 7);
  assert_string_equal(c.run.dir, "/tmp/probs-entry-run");
  pb_entry_option(&e, PB_ENTRY_SET, "search.expansions=0");
  assert_int_equal(
      pb_entry_config(&e, &c, PB_SOURCE_DIR "/configs/connect4-smoke.yaml",
                      NULL),
      2);
  assert_int_equal(pb_entry_config(&e, &c, "/nonexistent.yaml", NULL), 2);
}

static volatile sig_atomic_t got;
static void on_signal(int sig) { got = sig; }

static void test_signals(void **state) {
  (void)state;
  pb_entry_signals(on_signal);
  raise(SIGTERM);
  assert_int_equal(got, SIGTERM);
  raise(SIGINT);
  assert_int_equal(got, SIGINT);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_config),
      cmocka_unit_test(test_signals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
