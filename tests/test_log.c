/* test_log.c - line format, files, threads and the metrics writer of
 * common/base/log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "log.h"

/* A fresh temporary directory per test, removed with its files. */
typedef struct {
  char dir[64];
  char path[128];
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/pb_test_log_XXXXXX");
  if (mkdtemp(f->dir) == NULL) return -1;
  snprintf(f->path, sizeof f->path, "%s/out.log", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  unlink(f->path);
  rmdir(f->dir);
  free(f);
  return 0;
}

/* Whole file into a malloc'd string. */
static char *slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int ch;
  while ((ch = fgetc(fp)) != EOF) {
    if (len + 2 > cap) {
      cap = cap ? 2 * cap : 4096;
      buf = realloc(buf, cap);
      assert_non_null(buf);
    }
    buf[len++] = (char)ch;
  }
  fclose(fp);
  if (buf == NULL) buf = calloc(1, 1);
  buf[len] = '\0';
  return buf;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* "2026-11-21T20:15:03.123Z " */
static void assert_timestamp(const char *line) {
  const char *pat = "dddd-dd-ddTdd:dd:dd.dddZ ";
  for (size_t i = 0; pat[i]; i++) {
    if (pat[i] == 'd') {
      if (!isdigit((unsigned char)line[i])) {
        print_error("bad timestamp in line: %s\n", line);
        fail();
      }
    } else if (line[i] != pat[i]) {
      print_error("bad timestamp in line: %s\n", line);
      fail();
    }
  }
}

static void test_level_parse(void **state) {
  (void)state;
  assert_int_equal(pb_log_level_parse("debug"), PB_LOG_DEBUG);
  assert_int_equal(pb_log_level_parse("info"), PB_LOG_INFO);
  assert_int_equal(pb_log_level_parse("warn"), PB_LOG_WARN);
  assert_int_equal(pb_log_level_parse("warning"), PB_LOG_WARN);
  assert_int_equal(pb_log_level_parse("error"), PB_LOG_ERROR);
  assert_int_equal(pb_log_level_parse("verbose"), PB_EINVAL);
  assert_int_equal(pb_log_level_parse(""), PB_EINVAL);
  assert_int_equal(pb_log_level_parse(NULL), PB_EINVAL);
  assert_string_equal(pb_log_level_name(PB_LOG_WARN), "WARN");
  assert_string_equal(pb_log_level_name(42), "?");
}

static void test_file_lines(void **state) {
  fixture_t *f = *state;
  pb_err_t err;
  pb_err_clear(&err);
  pb_log_t *log = pb_log_new("learner", f->path, PB_LOG_INFO, &err);
  assert_non_null(log);
  pb_log_set_stderr(log, 0);
  assert_false(pb_log_enabled(log, PB_LOG_DEBUG));
  assert_true(pb_log_enabled(log, PB_LOG_INFO));
  pb_log_debug(log, "hidden %d", 1);
  pb_log_info(log, "hello %d", 42);
  pb_log_warn(log, "two\nlines\n");
  pb_log_error(log, "bad %s", "thing");
  pb_log_set_level(log, PB_LOG_DEBUG);
  pb_log_debug(log, "now shown");
  pb_log_write(log, PB_LOG_INFO, "via write");
  pb_log_write(log, 17, "bad level is dropped");
  pb_log_destroy(&log);
  assert_null(log);
  pb_log_destroy(&log); /* NULL is fine */
  pb_log_destroy(NULL);

  char *text = slurp(f->path);
  assert_int_equal(count_lines(text), 5);
  const char *want[] = {
      " learner INFO  hello 42\n", " learner WARN  two lines\n",
      " learner ERROR bad thing\n", " learner DEBUG now shown\n",
      " learner INFO  via write\n"};
  char *line = text;
  for (size_t i = 0; i < 5; i++) {
    char *nl = strchr(line, '\n');
    assert_non_null(nl);
    assert_timestamp(line);
    /* the line after the 24-character timestamp */
    assert_memory_equal(line + 24, want[i], strlen(want[i]));
    line = nl + 1;
  }
  assert_null(strstr(text, "hidden"));
  free(text);

  /* A second logger appends. */
  log = pb_log_new("actor-1", f->path, PB_LOG_WARN, &err);
  assert_non_null(log);
  pb_log_set_stderr(log, 0);
  pb_log_info(log, "dropped");
  pb_log_warn(log, "kept");
  pb_log_destroy(&log);
  text = slurp(f->path);
  assert_int_equal(count_lines(text), 6);
  assert_non_null(strstr(text, " actor-1 WARN  kept\n"));
  assert_null(strstr(text, "dropped"));
  free(text);
}

/* Runs fn with stderr redirected to `path`, then restores it. */
static void with_stderr_to(const char *path, void (*fn)(void *), void *arg) {
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  assert_true(saved >= 0);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_true(dup2(fd, STDERR_FILENO) >= 0);
  close(fd);
  fn(arg);
  assert_true(dup2(saved, STDERR_FILENO) >= 0);
  close(saved);
}

static void log_null_logger(void *arg) {
  (void)arg;
  pb_log_debug(NULL, "not shown");
  pb_log_info(NULL, "no logger %s", "here");
  pb_log_error(NULL, "still fine");
}

static void log_to_both(void *arg) {
  pb_log_t *log = arg;
  pb_log_info(log, "both places");
}

static void test_stderr(void **state) {
  fixture_t *f = *state;
  with_stderr_to(f->path, log_null_logger, NULL);
  char *text = slurp(f->path);
  assert_int_equal(count_lines(text), 2);
  assert_timestamp(text);
  assert_non_null(strstr(text, " probs INFO  no logger here\n"));
  assert_non_null(strstr(text, " probs ERROR still fine\n"));
  assert_null(strstr(text, "not shown"));
  free(text);

  /* A logger with a file writes the same line to stderr and the file. */
  char other[160];
  snprintf(other, sizeof other, "%s/second.log", f->dir);
  pb_err_t err;
  pb_log_t *log = pb_log_new("eval", other, PB_LOG_INFO, &err);
  assert_non_null(log);
  with_stderr_to(f->path, log_to_both, log);
  pb_log_destroy(&log);
  char *a = slurp(f->path), *b = slurp(other);
  assert_string_equal(a, b);
  assert_non_null(strstr(a, " eval INFO  both places\n"));
  free(a);
  free(b);
  unlink(other);
}

static void test_long_message(void **state) {
  fixture_t *f = *state;
  pb_err_t err;
  pb_log_t *log = pb_log_new("learner", f->path, PB_LOG_INFO, &err);
  assert_non_null(log);
  pb_log_set_stderr(log, 0);
  char *big = malloc(5001);
  assert_non_null(big);
  memset(big, 'y', 5000);
  big[5000] = '\0';
  pb_log_info(log, "[%s]", big);
  pb_log_destroy(&log);
  char *text = slurp(f->path);
  assert_int_equal(count_lines(text), 1);
  const char *open = strchr(text, '[');
  assert_non_null(open);
  assert_memory_equal(open + 1, big, 5000);
  assert_string_equal(open + 5001, "]\n");
  free(text);
  free(big);
}

typedef struct {
  pb_log_t *log;
  pb_metrics_t *m;
  int id;
} thread_arg_t;

#define THREADS 4
#define PER_THREAD 300

static void *log_thread(void *p) {
  thread_arg_t *a = p;
  for (int i = 0; i < PER_THREAD; i++) {
    pb_log_info(a->log, "thread %d line %d end", a->id, i);
    char line[64];
    snprintf(line, sizeof line, "{\"thread\":%d,\"i\":%d}", a->id, i);
    if (a->m != NULL && pb_metrics_write(a->m, line) != 0) return (void *)1;
  }
  return NULL;
}

static void test_threads(void **state) {
  fixture_t *f = *state;
  pb_err_t err;
  char mpath[160];
  snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", f->dir);
  pb_log_t *log = pb_log_new("learner", f->path, PB_LOG_INFO, &err);
  pb_metrics_t *m = pb_metrics_new(mpath, &err);
  assert_non_null(log);
  assert_non_null(m);
  pb_log_set_stderr(log, 0);
  pthread_t th[THREADS];
  thread_arg_t args[THREADS];
  for (int t = 0; t < THREADS; t++) {
    args[t] = (thread_arg_t){log, m, t};
    assert_int_equal(pthread_create(&th[t], NULL, log_thread, &args[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) {
    void *ret;
    pthread_join(th[t], &ret);
    assert_null(ret);
  }
  pb_log_destroy(&log);
  pb_metrics_destroy(&m);
  assert_null(m);

  /* Every line whole: timestamp, then the message, then "end". */
  char *text = slurp(f->path);
  assert_int_equal(count_lines(text), THREADS * PER_THREAD);
  int seen[THREADS] = {0};
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    *nl = '\0';
    assert_timestamp(line);
    int t, i;
    assert_int_equal(
        sscanf(line + 24, " learner INFO  thread %d line %d", &t, &i), 2);
    assert_true(t >= 0 && t < THREADS);
    assert_int_equal(i, seen[t]); /* in order within a thread */
    seen[t]++;
    assert_string_equal(nl - 4, " end");
    line = nl + 1;
  }
  free(text);

  text = slurp(mpath);
  assert_int_equal(count_lines(text), THREADS * PER_THREAD);
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    *nl = '\0';
    assert_int_equal(pb_json_validate(line), 0);
    line = nl + 1;
  }
  free(text);
  unlink(mpath);
}

static void test_open_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_err_clear(&err);
  assert_null(pb_log_new("x", "/nonexistent/dir/a.log", PB_LOG_INFO, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent/dir/a.log"));
  assert_null(pb_log_new("x", NULL, 9, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_metrics_new("/nonexistent/dir/m.jsonl", &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent/dir/m.jsonl"));

  /* Without a file the logger is stderr-only. */
  pb_log_t *log = pb_log_new(NULL, NULL, PB_LOG_ERROR, &err);
  assert_non_null(log);
  assert_false(pb_log_enabled(log, PB_LOG_WARN));
  pb_log_destroy(&log);
  pb_metrics_destroy(NULL);
}

static void test_metrics(void **state) {
  fixture_t *f = *state;
  pb_err_t err;
  pb_metrics_t *m = pb_metrics_new(f->path, &err);
  assert_non_null(m);
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kint(&j, "iteration", 1);
  pb_json_kdouble(&j, "v_loss", 0.5);
  pb_json_obj_end(&j);
  assert_int_equal(pb_metrics_write(m, pb_json_cstr(&j)), 0);
  pb_json_free(&j);
  assert_int_equal(pb_metrics_write(m, " {\"iteration\": 2}"), 0);
  /* Refused: not an object, malformed, more than one line, NULL. */
  assert_int_equal(pb_metrics_write(m, "not json"), PB_EINVAL);
  assert_int_equal(pb_metrics_write(m, "[1, 2]"), PB_EINVAL);
  assert_int_equal(pb_metrics_write(m, "{\"a\": 1"), PB_EINVAL);
  assert_int_equal(pb_metrics_write(m, "{\"a\": 1}\n{\"b\": 2}"), PB_EINVAL);
  assert_int_equal(pb_metrics_write(m, "{\"a\":\n 1}"), PB_EINVAL);
  assert_int_equal(pb_metrics_write(m, NULL), PB_EINVAL);
  assert_int_equal(pb_metrics_write(NULL, "{}"), PB_EINVAL);
  pb_metrics_destroy(&m);

  /* Each line: when it was written, then the caller's members. */
  char *text = slurp(f->path);
  assert_int_equal(count_lines(text), 2);
  char *l1 = strtok(text, "\n"), *l2 = strtok(NULL, "\n");
  const char *w1 = ",\"iteration\":1,\"v_loss\":0.5}";
  const char *w2 = ",\"iteration\": 2}";
  assert_int_equal(strncmp(l1, "{\"time\":\"20", 11), 0);
  assert_non_null(strstr(l1, "Z\",\"unix_time\":"));
  assert_string_equal(l1 + strlen(l1) - strlen(w1), w1);
  assert_string_equal(l2 + strlen(l2) - strlen(w2), w2);
  assert_int_equal(pb_json_validate(l1), 0);
  assert_int_equal(pb_json_validate(l2), 0);
  double t = strtod(strstr(l1, "unix_time\":") + 11, NULL);
  assert_true(fabs(t - (double)time(NULL)) < 3600);
  free(text);

  /* Reopening appends; an empty object gets the time alone. */
  m = pb_metrics_new(f->path, &err);
  assert_non_null(m);
  assert_int_equal(pb_metrics_write(m, "{}"), 0);
  assert_int_equal(pb_metrics_write(m, "{ }"), 0);
  pb_metrics_destroy(&m);
  text = slurp(f->path);
  assert_int_equal(count_lines(text), 4);
  strtok(text, "\n");
  strtok(NULL, "\n");
  for (int i = 0; i < 2; i++) {
    char *l = strtok(NULL, "\n");
    assert_int_equal(pb_json_validate(l), 0);
    assert_non_null(strstr(l, "\"unix_time\":"));
  }
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_level_parse),
      cmocka_unit_test_setup_teardown(test_file_lines, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stderr, setup, teardown),
      cmocka_unit_test_setup_teardown(test_long_message, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
      cmocka_unit_test(test_open_errors),
      cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
