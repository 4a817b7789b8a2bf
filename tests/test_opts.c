/* test_opts.c - the command-line parser of every program (common/base/opts):
 * values in their four forms, flags, lists in order and up to their
 * maximum, positionals up to theirs, "--" and "-", --help/-h on stdout,
 * and each refusal: its one line on stderr, the usage after it, the code
 * returned and the exit status it means. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "opts.h"

#define USAGE_TEXT "usage: probs test [options]\n"

static void usage(FILE *f) {
  fputs(USAGE_TEXT, f);
}

/* What one parse printed. */
typedef struct {
  char out[4096], err[4096];
} printed_t;

/* Parses the NULL-terminated args (after argv[0] = "test") with o,
 * capturing stdout and stderr into *p. Returns pb_opts_parse's result. */
static int parse(const pb_opts_t *o, const char *const *args, printed_t *p) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = "test";
  for (int i = 0; args[i] != NULL; i++) argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  memset(p, 0, sizeof *p);
  FILE *saved_out = stdout, *saved_err = stderr;
  FILE *out = fmemopen(p->out, sizeof p->out - 1, "w");
  FILE *err = fmemopen(p->err, sizeof p->err - 1, "w");
  assert_non_null(out);
  assert_non_null(err);
  stdout = out;
  stderr = err;
  int rc = pb_opts_parse(o, argc, argv);
  stdout = saved_out;
  stderr = saved_err;
  fclose(out);
  fclose(err);
  return rc;
}

/* The destinations of the table of most tests. */
typedef struct {
  const char *game, *model, *E;
  int json, quiet;
  const char *agents[3];
  int nagents;
  const char *pos[2];
  int npos;
} dest_t;

/* A table over *d: --game (-g), --model, -E, --json (-j), --quiet, --agent
 * (-a, at most 3), and at most 2 positionals. */
#define TABLE(d)                                                        \
  const pb_opts_row_t rows[] = {                                        \
      PB_OPTS_VALUE("game", 'g', &(d)->game),                           \
      PB_OPTS_VALUE("model", 0, &(d)->model),                           \
      PB_OPTS_VALUE(NULL, 'E', &(d)->E),                                \
      PB_OPTS_FLAG("json", 'j', &(d)->json),                            \
      PB_OPTS_FLAG("quiet", 0, &(d)->quiet),                            \
      PB_OPTS_LIST("agent", 'a', (d)->agents, &(d)->nagents, 3)};       \
  const pb_opts_t o = {"probs test", usage, rows,      PB_OPTS_N(rows), \
                       (d)->pos,     2,     &(d)->npos}

static void test_values(void **state) {
  (void)state;
  dest_t d = {.game = "connect4"};
  TABLE(&d);
  printed_t p;
  /* Untouched when not given: the caller's default stays. */
  assert_int_equal(parse(&o, (const char *[]){NULL}, &p), PB_OPTS_OK);
  assert_string_equal(d.game, "connect4");
  assert_null(d.model);
  /* --name VALUE, --name=VALUE, -E VALUE, -EVALUE */
  const char *a1[] = {"--game", "othello", "--model=x.pbck", "-E", "30", NULL};
  assert_int_equal(parse(&o, a1, &p), PB_OPTS_OK);
  assert_string_equal(d.game, "othello");
  assert_string_equal(d.model, "x.pbck");
  assert_string_equal(d.E, "30");
  const char *a2[] = {"-E200", "-g", "toguz", NULL};
  assert_int_equal(parse(&o, a2, &p), PB_OPTS_OK);
  assert_string_equal(d.E, "200");
  assert_string_equal(d.game, "toguz");
  /* The last one wins; a value may begin with '-' or be empty; only the
   * first '=' splits. */
  const char *a3[] = {"--game",   "a",      "--game", "-1",
                      "--model=", "-g=x=y", NULL};
  assert_int_equal(parse(&o, a3, &p), PB_OPTS_OK);
  assert_string_equal(d.game, "=x=y");
  assert_string_equal(d.model, "");
  const char *a4[] = {"--game=k=v", NULL};
  assert_int_equal(parse(&o, a4, &p), PB_OPTS_OK);
  assert_string_equal(d.game, "k=v");
  assert_string_equal(p.out, "");
  assert_string_equal(p.err, "");
  /* The values point into argv. */
  char v[] = "tictactoe";
  char *argv[] = {"test", "--game", v, NULL};
  assert_int_equal(pb_opts_parse(&o, 3, argv), PB_OPTS_OK);
  assert_ptr_equal(d.game, v);
}

static void test_flags(void **state) {
  (void)state;
  dest_t d = {0};
  TABLE(&d);
  printed_t p;
  assert_int_equal(parse(&o, (const char *[]){"--quiet", NULL}, &p),
                   PB_OPTS_OK);
  assert_int_equal(d.quiet, 1);
  assert_int_equal(d.json, 0);
  assert_int_equal(parse(&o, (const char *[]){"-j", "-j", NULL}, &p),
                   PB_OPTS_OK);
  assert_int_equal(d.json, 1);
  d.json = 0;
  assert_int_equal(parse(&o, (const char *[]){"--json", NULL}, &p), PB_OPTS_OK);
  assert_int_equal(d.json, 1);
}

static void test_lists(void **state) {
  (void)state;
  dest_t d = {0};
  TABLE(&d);
  printed_t p;
  const char *a[] = {"--agent", "random", "-alookahead:2", "--agent=uct", NULL};
  assert_int_equal(parse(&o, a, &p), PB_OPTS_OK);
  assert_int_equal(d.nagents, 3);
  assert_string_equal(d.agents[0], "random");
  assert_string_equal(d.agents[1], "lookahead:2");
  assert_string_equal(d.agents[2], "uct");
  /* One more than the maximum: refused, naming the option. */
  d.nagents = 0;
  const char *b[] = {"--agent", "1",       "-a", "2", "--agent",
                     "3",       "--agent", "4",  NULL};
  assert_int_equal(parse(&o, b, &p), PB_OPTS_USAGE);
  assert_string_equal(p.err,
                      "probs test: option '--agent' given more than 3 "
                      "times\n" USAGE_TEXT);
  assert_int_equal(d.nagents, 3);
  /* The count goes on from where the caller left it. */
  d.nagents = 2;
  assert_int_equal(parse(&o, (const char *[]){"-a", "x", "-a", "y", NULL}, &p),
                   PB_OPTS_USAGE);
  assert_string_equal(p.err,
                      "probs test: option '-a' given more than 3 "
                      "times\n" USAGE_TEXT);
}

static void test_positionals(void **state) {
  (void)state;
  dest_t d = {0};
  TABLE(&d);
  printed_t p;
  /* In order, mixed with options; "-" is one. */
  const char *a[] = {"run.yaml", "--json", "-", NULL};
  assert_int_equal(parse(&o, a, &p), PB_OPTS_OK);
  assert_int_equal(d.npos, 2);
  assert_string_equal(d.pos[0], "run.yaml");
  assert_string_equal(d.pos[1], "-");
  assert_int_equal(d.json, 1);
  /* npos counts this parse only. */
  assert_int_equal(parse(&o, (const char *[]){"x", NULL}, &p), PB_OPTS_OK);
  assert_int_equal(d.npos, 1);
  assert_string_equal(d.pos[0], "x");
  /* One more than the maximum. */
  const char *b[] = {"a", "b", "c", NULL};
  assert_int_equal(parse(&o, b, &p), PB_OPTS_USAGE);
  assert_string_equal(p.err,
                      "probs test: unexpected argument 'c'\n" USAGE_TEXT);
  assert_string_equal(p.out, "");
  /* After "--" every argument is positional, options included. */
  d.quiet = 0;
  const char *c[] = {"--", "--quiet", "-g", NULL};
  assert_int_equal(parse(&o, c, &p), PB_OPTS_OK);
  assert_int_equal(d.npos, 2);
  assert_string_equal(d.pos[0], "--quiet");
  assert_string_equal(d.pos[1], "-g");
  assert_int_equal(d.quiet, 0);
  const char *e[] = {"--quiet", "--", "--", NULL};
  assert_int_equal(parse(&o, e, &p), PB_OPTS_OK);
  assert_int_equal(d.npos, 1);
  assert_string_equal(d.pos[0], "--");
  /* A table without positionals takes none. */
  const pb_opts_t none = {.prog = "probs none",
                          .usage = usage,
                          .rows = rows,
                          .nrows = PB_OPTS_N(rows)};
  assert_int_equal(parse(&none, (const char *[]){"x", NULL}, &p),
                   PB_OPTS_USAGE);
  assert_string_equal(p.err,
                      "probs none: unexpected argument 'x'\n" USAGE_TEXT);
}

static void test_help(void **state) {
  (void)state;
  dest_t d = {0};
  TABLE(&d);
  printed_t p;
  const char *a[] = {"--game", "x", "--help", "--bogus", NULL};
  assert_int_equal(parse(&o, a, &p), PB_OPTS_HELP);
  assert_string_equal(p.out, USAGE_TEXT);
  assert_string_equal(p.err, "");
  assert_int_equal(parse(&o, (const char *[]){"pos", "-h", NULL}, &p),
                   PB_OPTS_HELP);
  assert_string_equal(p.out, USAGE_TEXT);
  assert_string_equal(p.err, "");
  assert_int_equal(pb_opts_exit(PB_OPTS_HELP), 0);
  /* A value that reads "--help" is a value. */
  assert_int_equal(parse(&o, (const char *[]){"--game", "--help", NULL}, &p),
                   PB_OPTS_OK);
  assert_string_equal(d.game, "--help");
  /* After "--" it is a positional. */
  assert_int_equal(parse(&o, (const char *[]){"--", "-h", NULL}, &p),
                   PB_OPTS_OK);
  assert_string_equal(d.pos[0], "-h");
}

static void test_errors(void **state) {
  (void)state;
  dest_t d = {0};
  TABLE(&d);
  printed_t p;
  static const struct {
    const char *args[4];
    const char *line; /* the one line on stderr, before the usage */
  } cases[] = {
      {{"--bogus", NULL}, "probs test: unknown option '--bogus'"},
      {{"--bogus=1", NULL}, "probs test: unknown option '--bogus=1'"},
      {{"-x", NULL}, "probs test: unknown option '-x'"},
      {{"-xyz", NULL}, "probs test: unknown option '-xyz'"},
      {{"--gam", "x", NULL}, "probs test: unknown option '--gam'"},
      {{"---game", "x", NULL}, "probs test: unknown option '---game'"},
      {{"--=x", NULL}, "probs test: unknown option '--=x'"},
      {{"--game", NULL}, "probs test: option '--game' needs a value"},
      {{"--json", "-g", NULL}, "probs test: option '-g' needs a value"},
      {{"-E", NULL}, "probs test: option '-E' needs a value"},
      {{"--agent", NULL}, "probs test: option '--agent' needs a value"},
      {{"--json=1", NULL}, "probs test: option '--json' takes no value"},
      {{"-jx", NULL}, "probs test: option '-j' takes no value"},
      {{"a", "b", "c", NULL}, "probs test: unexpected argument 'c'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = parse(&o, cases[i].args, &p);
    char want[256];
    snprintf(want, sizeof want, "%s\n" USAGE_TEXT, cases[i].line);
    if (rc != PB_OPTS_USAGE || strcmp(p.err, want) != 0 || p.out[0] != '\0')
      fail_msg("case %zu: rc %d, stderr:\n%s\nstdout:\n%s", i, rc, p.err,
               p.out);
  }
  /* The first error stops the parse. */
  const char *a[] = {"--bogus", "--help", NULL};
  assert_int_equal(parse(&o, a, &p), PB_OPTS_USAGE);
  assert_string_equal(p.out, "");
  assert_int_equal(pb_opts_exit(PB_OPTS_USAGE), 2);
  assert_int_equal(PB_OPTS_USAGE, 2); /* the exit status itself */
}

static void test_fail(void **state) {
  (void)state;
  dest_t d = {0};
  TABLE(&d);
  printed_t p;
  memset(&p, 0, sizeof p);
  FILE *saved = stderr, *err = fmemopen(p.err, sizeof p.err - 1, "w");
  stderr = err;
  int rc = pb_opts_fail(&o, "need %s and %d more", "CONFIG", 2);
  stderr = saved;
  fclose(err);
  assert_int_equal(rc, PB_OPTS_USAGE);
  assert_string_equal(p.err, "probs test: need CONFIG and 2 more\n" USAGE_TEXT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values), cmocka_unit_test(test_flags),
      cmocka_unit_test(test_lists),  cmocka_unit_test(test_positionals),
      cmocka_unit_test(test_help),   cmocka_unit_test(test_errors),
      cmocka_unit_test(test_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
