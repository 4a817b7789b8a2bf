/* test_entry.c - what every main() shares (common/run/entry): --set kept in
 * order and refused in the wrong form or past the limit, --keys and --help
 * answered with exit status 0, an unknown option with 2, the program's own
 * options beside them in its table; the config built from the file and the
 * overrides; SIGINT and SIGTERM reaching main's handler. */
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

/* A program's table with the shared options and one of its own, --role,
 * parsed from the NULL-terminated args and checked: pb_entry_check's
 * result. *e is initialised here; stdout is captured into out when not
 * NULL. */
static int run(pb_entry_t *e, const char **role, const char *const *args,
               char *out, size_t n) {
  char *argv[PB_ENTRY_MAX_SETS * 2 + 8];
  int argc = 0;
  argv[argc++] = "probs-test";
  for (int i = 0; args[i] != NULL; i++) argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  pb_entry_init(e, "probs-test", usage);
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("role", 'r', role),
                                PB_ENTRY_OPTS(e)};
  const pb_opts_t o = {.prog = e->prog,
                       .usage = e->usage,
                       .rows = rows,
                       .nrows = PB_OPTS_N(rows)};
  FILE *saved = stdout, *mem = NULL;
  if (out != NULL) {
    memset(out, 0, n);
    mem = fmemopen(out, n - 1, "w");
    assert_non_null(mem);
    stdout = mem;
  }
  int rc = pb_entry_check(e, pb_opts_parse(&o, argc, argv));
  if (mem != NULL) {
    fflush(mem);
    stdout = saved;
    fclose(mem);
  }
  return rc;
}

static void test_options(void **state) {
  (void)state;
  pb_entry_t e;
  const char *role = NULL;
  /* --set kept in order, in both forms; the program's own options beside
   * them. */
  const char *a1[] = {"--set",  "train.iterations=3", "--role",
                      "search", "--set=seed=9",       NULL};
  assert_int_equal(run(&e, &role, a1, NULL, 0), PB_ENTRY_GO);
  assert_int_equal(e.nsets, 2);
  assert_string_equal(e.sets[0], "train.iterations=3");
  assert_string_equal(e.sets[1], "seed=9");
  assert_string_equal(role, "search");
  assert_int_equal(e.keys, 0);
  /* Not KEY=VALUE: 2. */
  assert_int_equal(
      run(&e, &role, (const char *[]){"--set", "seed", NULL}, NULL, 0), 2);
  assert_int_equal(
      run(&e, &role, (const char *[]){"--set", "=3", NULL}, NULL, 0), 2);
  /* --help and -h: the usage, 0; a bad option or a missing value: the
   * usage, 2. */
  usage_calls = 0;
  assert_int_equal(run(&e, &role, (const char *[]){"--help", NULL}, NULL, 0),
                   0);
  assert_int_equal(run(&e, &role, (const char *[]){"-h", NULL}, NULL, 0), 0);
  assert_int_equal(run(&e, &role, (const char *[]){"--bogus", NULL}, NULL, 0),
                   2);
  assert_int_equal(run(&e, &role, (const char *[]){"--set", NULL}, NULL, 0), 2);
  assert_int_equal(usage_calls, 4);
  /* PB_ENTRY_MAX_SETS of them, and not one more. */
  const char *many[PB_ENTRY_MAX_SETS * 2 + 4];
  int n = 0;
  for (int i = 0; i < PB_ENTRY_MAX_SETS; i++) {
    many[n++] = "--set";
    many[n++] = "seed=1";
  }
  many[n] = NULL;
  assert_int_equal(run(&e, &role, many, NULL, 0), PB_ENTRY_GO);
  assert_int_equal(e.nsets, PB_ENTRY_MAX_SETS);
  many[n++] = "--set";
  many[n++] = "seed=1";
  many[n] = NULL;
  assert_int_equal(run(&e, &role, many, NULL, 0), 2);
  /* --keys lists the keys on stdout: 0. */
  char buf[1 << 16];
  assert_int_equal(
      run(&e, &role, (const char *[]){"--keys", NULL}, buf, sizeof buf), 0);
  assert_non_null(strstr(buf, "search.expansions"));
}

/* pb_entry_config after the --set options of args. */
static int config_with(pb_entry_t *e, const char *const *args, pb_config_t *c,
                       const char *path, const char *run_dir) {
  const char *role = NULL;
  assert_int_equal(run(e, &role, args, NULL, 0), PB_ENTRY_GO);
  return pb_entry_config(e, c, path, run_dir);
}

static void test_config(void **state) {
  (void)state;
  pb_entry_t e;
  pb_config_t c;
  const char *yaml = PB_SOURCE_DIR "/configs/connect4-smoke.yaml";
  const char *a1[] = {"--set", "search.expansions=7", NULL};
  assert_int_equal(config_with(&e, a1, &c, yaml, "/tmp/probs-entry-run"), 0);
  assert_int_equal(c.search.expansions, 7);
  assert_string_equal(c.run.dir, "/tmp/probs-entry-run");
  const char *a2[] = {"--set", "search.expansions=7", "--set",
                      "search.expansions=0", NULL};
  assert_int_equal(config_with(&e, a2, &c, yaml, NULL), 2);
  assert_int_equal(config_with(&e, a2, &c, "/nonexistent.yaml", NULL), 2);
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
