/* test_invariant.c - pb_assert (common/base/invariant.h): a true condition
 * is evaluated once and nothing happens; a false one prints FILE:LINE,
 * the function and the condition on stderr and aborts, also with NDEBUG
 * defined (a child process is made to fail, and its exit is read). */
#define NDEBUG 1 /* pb_assert must not depend on it */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "invariant.h"

static int calls;
static int once(int v) {
  calls++;
  return v;
}

static void test_true_is_quiet(void **state) {
  (void)state;
  calls = 0;
  pb_assert(once(1) == 1);
  assert_int_equal(calls, 1);
}

static void bug(int n) {
  pb_assert(n >= 1 && "n counts episodes");
}

static void test_false_aborts_naming_the_place(void **state) {
  (void)state;
  int fd[2];
  assert_int_equal(pipe(fd), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    signal(SIGABRT, SIG_DFL);
    bug(0);
    _exit(0); /* not reached */
  }
  close(fd[1]);
  char buf[512] = "";
  size_t k = 0;
  ssize_t r;
  while (k + 1 < sizeof buf &&
         (r = read(fd[0], buf + k, sizeof buf - 1 - k)) > 0)
    k += (size_t)r;
  buf[k] = '\0';
  close(fd[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st));
  assert_int_equal(WTERMSIG(st), SIGABRT);
  assert_non_null(strstr(buf, "test_invariant.c:"));
  assert_non_null(strstr(buf, ": bug: invariant failed: n >= 1"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_true_is_quiet),
      cmocka_unit_test(test_false_aborts_naming_the_place),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
