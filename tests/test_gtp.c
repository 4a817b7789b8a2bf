/* test_gtp.c - the GTP client against real processes: Debian's gtp-rhino
 * (packages grhino, grhino-data; scripts/setup.sh installs them) and
 * hostile engines written as shell scripts: one that answers garbage, one
 * that dies, one that never answers, one that never stops talking. Every
 * failure must be a clear PB_EPROTO, never a hang or a SIGPIPE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gtp.h"

static char dir[256];

/* Writes an executable shell script `name` into the test's directory and
 * returns its path (static buffer per call site is enough: one at a time). */
static const char *script(const char *name, const char *body) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  assert_int_equal(chmod(path, 0755), 0);
  return path;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/probs-test-gtp-XXXXXX");
  return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_real_engine(void **state) {
  (void)state;
  pb_err_t err;
  pb_gtp_t *g = pb_gtp_new("gtp-rhino", 10000, &err);
  if (g == NULL) fail_msg("%s (scripts/setup.sh installs it)", err.msg);
  char reply[256];
  assert_int_equal(pb_gtp_cmd(g, "protocol_version", reply, sizeof reply, &err),
                   0);
  assert_string_equal(reply, "2");
  assert_int_equal(pb_gtp_cmd(g, "boardsize 8", reply, sizeof reply, &err), 0);
  assert_string_equal(reply, "");
  assert_int_equal(pb_gtp_cmd(g, "clear_board", NULL, 0, &err), 0);
  assert_int_equal(pb_gtp_cmd(g, "play black f5", NULL, 0, &err), 0);
  assert_int_equal(pb_gtp_cmd(g, "genmove white", reply, sizeof reply, &err),
                   0);
  /* White's replies to f5: d6, f6 or f4 (any case). */
  assert_int_equal(strlen(reply), 2);
  /* A multi-line answer comes back whole. */
  assert_int_equal(pb_gtp_cmd(g, "showboard", reply, sizeof reply, &err), 0);
  assert_non_null(strstr(reply, "a b c d e f g h"));
  assert_non_null(strchr(reply, '\n'));
  /* '?' answers are errors with the engine's words, and not fatal. */
  assert_int_equal(pb_gtp_cmd(g, "play black a1", NULL, 0, &err), PB_EPROTO);
  assert_non_null(strstr(err.msg, "illegal"));
  assert_int_equal(pb_gtp_cmd(g, "no_such_command", NULL, 0, &err), PB_EPROTO);
  assert_int_equal(pb_gtp_cmd(g, "name", reply, sizeof reply, &err), 0);
  assert_non_null(strstr(reply, "GRhino"));
  assert_string_equal(pb_gtp_command(g), "gtp-rhino");
  pb_gtp_destroy(&g);
  assert_null(g);
  pb_gtp_destroy(&g);
  pb_gtp_destroy(NULL);
}

static void test_missing_engine(void **state) {
  (void)state;
  pb_err_t err;
  assert_null(pb_gtp_new("/nonexistent/gtp-rhino", 1000, &err));
  assert_int_equal(err.code, PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "grhino-data"));
  assert_null(pb_gtp_new("probs-no-such-engine --flag", 1000, &err));
  assert_int_equal(err.code, PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "probs-no-such-engine"));
  assert_null(pb_gtp_new("   ", 1000, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_gtp_new(NULL, 1000, &err));
}

static void test_garbage(void **state) {
  (void)state;
  pb_err_t err;
  const char *p = script("garbage", "read x; printf 'hello there\\n\\n'; "
                                    "sleep 5");
  pb_gtp_t *g = pb_gtp_new(p, 2000, &err);
  assert_non_null(g);
  assert_int_equal(pb_gtp_cmd(g, "name", NULL, 0, &err), PB_EPROTO);
  assert_non_null(strstr(err.msg, "garbage"));
  assert_non_null(strstr(err.msg, "hello there"));
  /* Dead from now on, without talking to the engine. */
  assert_int_equal(pb_gtp_cmd(g, "name", NULL, 0, &err), PB_EPROTO);
  assert_non_null(strstr(err.msg, "failed earlier"));
  time_t t0 = time(NULL);
  pb_gtp_destroy(&g); /* kills the sleeping script within ~1 s */
  assert_true(time(NULL) - t0 <= 3);
}

static void test_engine_dies(void **state) {
  (void)state;
  pb_err_t err;
  /* Answers one command, then exits. */
  const char *p = script("dies", "read x; printf '= ok\\n\\n'; exit 3");
  pb_gtp_t *g = pb_gtp_new(p, 2000, &err);
  assert_non_null(g);
  char reply[16];
  assert_int_equal(pb_gtp_cmd(g, "name", reply, sizeof reply, &err), 0);
  assert_string_equal(reply, "ok");
  usleep(200 * 1000); /* it is gone: the next write may hit a closed pipe */
  assert_int_equal(pb_gtp_cmd(g, "genmove black", NULL, 0, &err), PB_EPROTO);
  assert_true(strstr(err.msg, "exited") != NULL ||
              strstr(err.msg, "gone") != NULL);
  pb_gtp_destroy(&g);

  /* Gone before the first command: writing must not raise SIGPIPE here. */
  p = script("gone", "exit 0");
  g = pb_gtp_new(p, 2000, &err);
  assert_non_null(g);
  usleep(200 * 1000);
  for (int i = 0; i < 3; i++)
    assert_int_equal(pb_gtp_cmd(g, "name", NULL, 0, &err), PB_EPROTO);
  pb_gtp_destroy(&g);
}

static void test_silent_engine_times_out(void **state) {
  (void)state;
  pb_err_t err;
  const char *p = script("silent", "exec sleep 30");
  pb_gtp_t *g = pb_gtp_new(p, 300, &err);
  assert_non_null(g);
  time_t t0 = time(NULL);
  assert_int_equal(pb_gtp_cmd(g, "genmove black", NULL, 0, &err), PB_EPROTO);
  assert_non_null(strstr(err.msg, "in time"));
  assert_true(time(NULL) - t0 <= 3);
  pb_gtp_destroy(&g);
}

static void test_endless_answer(void **state) {
  (void)state;
  pb_err_t err;
  const char *p = script("endless", "read x; printf '= '; exec yes");
  pb_gtp_t *g = pb_gtp_new(p, 5000, &err);
  assert_non_null(g);
  assert_int_equal(pb_gtp_cmd(g, "name", NULL, 0, &err), PB_EPROTO);
  assert_non_null(strstr(err.msg, "longer"));
  pb_gtp_destroy(&g);
}

static void test_ids_and_carriage_returns(void **state) {
  (void)state;
  pb_err_t err;
  /* An answer with an id and CRLF line ends, after a stray empty line. */
  const char *p = script("crlf", "read x; printf '\\r\\n=7 D6\\r\\n\\r\\n'; "
                                 "read x; printf '?  nope \\n\\n'; read x");
  pb_gtp_t *g = pb_gtp_new(p, 2000, &err);
  assert_non_null(g);
  char reply[16];
  assert_int_equal(pb_gtp_cmd(g, "genmove white", reply, sizeof reply, &err),
                   0);
  assert_string_equal(reply, "D6");
  assert_int_equal(pb_gtp_cmd(g, "play", reply, sizeof reply, &err),
                   PB_EPROTO);
  assert_non_null(strstr(err.msg, "refused"));
  assert_non_null(strstr(err.msg, "nope"));
  pb_gtp_destroy(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_engine),
      cmocka_unit_test(test_missing_engine),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_engine_dies),
      cmocka_unit_test(test_silent_engine_times_out),
      cmocka_unit_test(test_endless_answer),
      cmocka_unit_test(test_ids_and_carriage_returns),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
