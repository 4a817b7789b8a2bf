/* test_lines.c - the one whole-file reader (pb_read_file, util.h) and the
 * one line splitter (lines.h): limits, no trailing newline, CRLF, empty
 * files, lines past the limit, streams. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "lines.h"
#include "util.h"

/* ---- the splitter ---------------------------------------------------- */

/* The lines of text, joined by '|', into out. Returns the count. */
static int cut(const char *text, size_t len, char *out, size_t n) {
  pb_lines_t it;
  pb_lines_init(&it, text, len);
  const char *line = NULL;
  size_t ll = 0;
  int count = 0;
  out[0] = '\0';
  while (pb_lines_next(&it, &line, &ll) == 1) {
    count++;
    assert_int_equal(it.lineno, count);
    snprintf(out + strlen(out), n - strlen(out), "%s%.*s",
             count > 1 ? "|" : "", (int)ll, line);
  }
  assert_int_equal(it.pos, len);
  return count;
}

static void test_split_plain(void **state) {
  (void)state;
  char out[256];
  assert_int_equal(cut("a\nbb\nccc\n", 9, out, sizeof out), 3);
  assert_string_equal(out, "a|bb|ccc");
}

static void test_split_no_trailing_newline(void **state) {
  (void)state;
  char out[256];
  assert_int_equal(cut("a\nlast", 6, out, sizeof out), 2);
  assert_string_equal(out, "a|last");
}

static void test_split_crlf(void **state) {
  (void)state;
  char out[256];
  /* A CR before the LF goes, a CR elsewhere stays the caller's to judge. */
  assert_int_equal(cut("a\r\nb\r\n\r\nc\rd\r", 12, out, sizeof out), 4);
  assert_string_equal(out, "a|b||c\rd");
}

static void test_split_empty(void **state) {
  (void)state;
  char out[256];
  assert_int_equal(cut("", 0, out, sizeof out), 0);
  assert_int_equal(cut(NULL, 0, out, sizeof out), 0);
  /* A lone newline is one empty line; blank lines are counted. */
  assert_int_equal(cut("\n", 1, out, sizeof out), 1);
  assert_string_equal(out, "");
  assert_int_equal(cut("\n\nx\n\n", 5, out, sizeof out), 4);
  assert_string_equal(out, "||x|");
}

static void test_split_nul_inside(void **state) {
  (void)state;
  pb_lines_t it;
  pb_lines_init(&it, "a\0b\nc", 5);
  const char *line = NULL;
  size_t ll = 0;
  assert_int_equal(pb_lines_next(&it, &line, &ll), 1);
  assert_int_equal(ll, 3); /* the NUL is in the line, for the caller */
  assert_memory_equal(line, "a\0b", 3);
  assert_int_equal(pb_lines_next(&it, &line, &ll), 1);
  assert_int_equal(ll, 1);
  assert_int_equal(pb_lines_next(&it, &line, &ll), 0);
}

static void test_split_too_long(void **state) {
  (void)state;
  pb_lines_t it;
  const char *text = "abc\nabcdef\r\nab\n";
  pb_lines_init(&it, text, strlen(text));
  it.max = 3;
  const char *line = NULL;
  size_t ll = 0;
  assert_int_equal(pb_lines_next(&it, &line, &ll), 1);
  assert_int_equal(ll, 3); /* exactly the limit is fine */
  /* Past the limit: named (line 2, its bytes), then the next one. */
  assert_int_equal(pb_lines_next(&it, &line, &ll), PB_ERANGE);
  assert_int_equal(it.lineno, 2);
  assert_int_equal(ll, 6);
  assert_memory_equal(line, "abcdef", 6);
  assert_int_equal(pb_lines_next(&it, &line, &ll), 1);
  assert_int_equal(it.lineno, 3);
  assert_int_equal(ll, 2);
  assert_int_equal(pb_lines_next(&it, &line, &ll), 0);
}

static void test_split_stream(void **state) {
  (void)state;
  /* A stream's bytes so far: the unfinished last line stays at pos. */
  const char *text = "one\ntwo\r\nthr";
  pb_lines_t it;
  pb_lines_init(&it, text, strlen(text));
  it.partial = 1;
  const char *line = NULL;
  size_t ll = 0;
  assert_int_equal(pb_lines_next(&it, &line, &ll), 1);
  assert_int_equal(pb_lines_next(&it, &line, &ll), 1);
  assert_memory_equal(line, "two", ll);
  assert_int_equal(pb_lines_next(&it, &line, &ll), 0);
  assert_int_equal(it.pos, 9);
  assert_string_equal(text + it.pos, "thr");
  /* An unfinished line already past the limit is refused at once. */
  pb_lines_init(&it, "abcdefgh", 8);
  it.partial = 1;
  it.max = 4;
  assert_int_equal(pb_lines_next(&it, &line, &ll), PB_ERANGE);
  assert_int_equal(ll, 8);
  assert_int_equal(it.pos, 8);
  assert_int_equal(pb_lines_next(&it, &line, &ll), 0);
  /* ... and one within it waits. */
  pb_lines_init(&it, "abcd", 4);
  it.partial = 1;
  it.max = 4;
  assert_int_equal(pb_lines_next(&it, &line, &ll), 0);
  assert_int_equal(it.pos, 0);
}

static void test_split_cut_in_place(void **state) {
  (void)state;
  char text[] = "k v\r\n\nlast"; /* sizeof: a writable byte after "last" */
  pb_lines_t it;
  pb_lines_init_w(&it, text, sizeof text - 1);
  char *line = NULL;
  size_t ll = 0;
  assert_int_equal(pb_lines_cut(&it, &line, &ll), 1);
  assert_string_equal(line, "k v");
  assert_int_equal(pb_lines_cut(&it, &line, &ll), 1);
  assert_string_equal(line, "");
  assert_int_equal(pb_lines_cut(&it, &line, &ll), 1);
  assert_string_equal(line, "last");
  assert_int_equal(ll, 4);
  assert_int_equal(pb_lines_cut(&it, &line, &ll), 0);
}

/* ---- the reader ------------------------------------------------------- */

static char dir[] = "/tmp/pb_test_lines_XXXXXX";

static void put(const char *name, const void *data, size_t n, char *path,
                size_t pn) {
  snprintf(path, pn, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static void test_read_whole(void **state) {
  (void)state;
  char path[256];
  put("crlf.txt", "a\r\nb", 4, path, sizeof path);
  char *text = NULL;
  size_t len = 99;
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_read_file(path, 4, &text, &len, &err), 0);
  assert_int_equal(len, 4);
  assert_string_equal(text, "a\r\nb"); /* NUL-terminated, bytes as they are */
  free(text);
  /* The length may be left out. */
  assert_int_equal(pb_read_file(path, 100, &text, NULL, &err), 0);
  free(text);
}

static void test_read_empty(void **state) {
  (void)state;
  char path[256];
  put("empty.txt", "", 0, path, sizeof path);
  char *text = NULL;
  size_t len = 99;
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_read_file(path, 0, &text, &len, &err), 0);
  assert_int_equal(len, 0);
  assert_non_null(text);
  assert_string_equal(text, "");
  free(text);
}

static void test_read_limit(void **state) {
  (void)state;
  char path[256];
  static char big[200000];
  memset(big, 'x', sizeof big);
  put("big.txt", big, sizeof big, path, sizeof path);
  char *text = (char *)1;
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_read_file(path, sizeof big - 1, &text, NULL, &err),
                   PB_ERANGE);
  assert_null(text);
  assert_non_null(strstr(err.msg, "big.txt: larger than 199999 bytes"));
  size_t len = 0;
  assert_int_equal(pb_read_file(path, sizeof big, &text, &len, &err), 0);
  assert_int_equal(len, sizeof big);
  assert_memory_equal(text, big, sizeof big);
  free(text);
}

static void test_read_proc(void **state) {
  (void)state;
  /* /proc files say size 0 and are read to their end all the same. */
  char *text = NULL;
  size_t len = 0;
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_read_file("/proc/self/status", 1 << 20, &text, &len,
                                &err),
                   0);
  assert_true(len > 0);
  assert_non_null(strstr(text, "Pid:"));
  free(text);
  /* ... and under their limit too. */
  assert_int_equal(pb_read_file("/proc/self/status", 10, &text, &len, &err),
                   PB_ERANGE);
}

static void test_read_refusals(void **state) {
  (void)state;
  char path[256];
  char *text = (char *)1;
  pb_err_t err;
  pb_err_clear(&err);
  snprintf(path, sizeof path, "%s/none.txt", dir);
  assert_int_equal(pb_read_file(path, 100, &text, NULL, &err), PB_EIO);
  assert_null(text);
  assert_non_null(strstr(err.msg, "none.txt: cannot open"));
  assert_int_equal(pb_read_file(dir, 100, &text, NULL, &err), PB_EIO);
  assert_non_null(strstr(err.msg, "cannot read: a directory"));
  /* A FIFO is refused, not waited on; so is a device. */
  snprintf(path, sizeof path, "%s/fifo", dir);
  assert_int_equal(mkfifo(path, 0600), 0);
  assert_int_equal(pb_read_file(path, 100, &text, NULL, &err), PB_EIO);
  assert_non_null(strstr(err.msg, "not a regular file"));
  unlink(path);
  assert_int_equal(pb_read_file("/dev/zero", 100, &text, NULL, &err), PB_EIO);
  assert_non_null(strstr(err.msg, "not a regular file"));
}

static void test_read_then_cut(void **state) {
  (void)state;
  /* The reader's buffer has the byte pb_lines_cut needs after a last line
   * without its newline. */
  char path[256];
  put("keys.txt", "k1\r\n\nk2", 7, path, sizeof path);
  char *text = NULL;
  size_t len = 0;
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_read_file(path, 100, &text, &len, &err), 0);
  pb_lines_t it;
  pb_lines_init_w(&it, text, len);
  char *line = NULL;
  size_t ll = 0;
  char seen[64] = "";
  while (pb_lines_cut(&it, &line, &ll) == 1)
    snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "[%s]", line);
  assert_string_equal(seen, "[k1][][k2]");
  assert_int_equal(it.lineno, 3);
  free(text);
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state) {
  (void)state;
  const char *names[] = {"crlf.txt", "empty.txt", "big.txt", "keys.txt"};
  char path[256];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  return rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_plain),
      cmocka_unit_test(test_split_no_trailing_newline),
      cmocka_unit_test(test_split_crlf),
      cmocka_unit_test(test_split_empty),
      cmocka_unit_test(test_split_nul_inside),
      cmocka_unit_test(test_split_too_long),
      cmocka_unit_test(test_split_stream),
      cmocka_unit_test(test_split_cut_in_place),
      cmocka_unit_test(test_read_whole),
      cmocka_unit_test(test_read_empty),
      cmocka_unit_test(test_read_limit),
      cmocka_unit_test(test_read_proc),
      cmocka_unit_test(test_read_refusals),
      cmocka_unit_test(test_read_then_cut),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
