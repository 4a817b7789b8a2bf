/* test_rundir.c - the run directory (common/run/rundir): file paths, the listing
 * of checkpoint versions, the one-learner lock, the retention protocol
 * between the learner and a live evaluator (the lock, and elo.csv's newest
 * row), which directories a new run may start in, run ids, and what a
 * failed start takes back (pb_rundir_undo_*). The same protocol in a real
 * training run: test_inproc; the refusals of real programs:
 * test_train_cli.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "proc.h"
#include "rundir.h"
#include "util.h"

static void touch(const char *dir, const char *name, const char *text) {
  char path[PB_RUNDIR_PATH_MAX];
  assert_int_equal(pb_rundir_path(dir, name, path, sizeof path), 0);
  assert_int_equal(pb_write_file(path, text, strlen(text), NULL), 0);
}

static void test_paths(void **state) {
  (void)state;
  char buf[64];
  assert_int_equal(pb_rundir_path("runs/x", PB_RUNDIR_ELO_CSV, buf, sizeof buf),
                   0);
  assert_string_equal(buf, "runs/x/elo.csv");
  assert_int_equal(pb_rundir_path("runs/x", PB_RUNDIR_METRICS, buf, 10),
                   PB_ERANGE);
  pb_rundir_ckpt_path("runs/x", 42, buf, sizeof buf);
  assert_string_equal(buf, "runs/x/checkpoints/ckpt-000042.pbck");
  pb_rundir_ckpt_path("r", 1234567, buf, sizeof buf);
  assert_string_equal(buf, "r/checkpoints/ckpt-1234567.pbck");
}

static void test_versions(void **state) {
  (void)state;
  char dir[256], sub[300];
  tp_tmpdir(dir, sizeof dir, "rundir-v");
  uint64_t *v = (uint64_t *)1;
  size_t n = 7;
  pb_err_t err;
  assert_int_equal(pb_rundir_versions(dir, &v, &n, &err), 0); /* none yet */
  assert_int_equal(n, 0);
  assert_null(v);
  snprintf(sub, sizeof sub, "%s/checkpoints", dir);
  assert_int_equal(pb_mkdir_p(sub, &err), 0);
  touch(sub, "ckpt-000010.pbck", "x");
  touch(sub, "ckpt-000003.pbck", "x");
  touch(sub, "notes.txt", "x");
  touch(sub, "ckpt-000004.pbck.tmp.77", "x");
  assert_int_equal(pb_rundir_versions(dir, &v, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_true(v[0] == 3 && v[1] == 10);
  free(v);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* The learner's side of retention: nothing is protected unless an
 * evaluator holds its lock; then everything above elo.csv's newest row. */
static void test_protect_from(void **state) {
  (void)state;
  char dir[256], logpath[320];
  tp_tmpdir(dir, sizeof dir, "rundir-p");
  pb_err_t err;
  uint64_t from = 5;
  assert_int_equal(pb_rundir_protect_from(dir, &from, &err), 0);
  assert_true(from == UINT64_MAX); /* no evaluator ever ran */
  snprintf(logpath, sizeof logpath, "%s/eval.log", dir);
  pb_log_t *log = pb_log_new("evaluator", logpath, PB_LOG_INFO, &err);
  assert_non_null(log);
  int fd = pb_rundir_lock_evaluator(dir, log);
  assert_true(fd >= 0);
  assert_int_equal(pb_rundir_protect_from(dir, &from, &err), 0);
  assert_true(from == 0); /* held, nothing rated: keep everything */
  touch(dir, PB_RUNDIR_ELO_CSV,
        "iteration,version,elo\n3,3,1000.0\n7,7,1100.0\n");
  assert_int_equal(pb_rundir_protect_from(dir, &from, &err), 0);
  assert_true(from == 8);
  touch(dir, PB_RUNDIR_ELO_CSV, "iteration,version,elo\n");
  assert_int_equal(pb_rundir_protect_from(dir, &from, &err), 0);
  assert_true(from == 0);
  touch(dir, PB_RUNDIR_ELO_CSV, "name,score\nalice,3\n");
  from = 5;
  assert_int_equal(pb_rundir_protect_from(dir, &from, &err), PB_ECORRUPT);
  assert_true(from == 0); /* the safe answer */
  assert_non_null(strstr(err.msg, "elo.csv"));
  /* A second evaluator goes on without the lock, and says so. */
  assert_int_equal(pb_rundir_lock_evaluator(dir, log), -1);
  close(fd);
  assert_int_equal(pb_rundir_protect_from(dir, &from, &err), 0);
  assert_true(from == UINT64_MAX); /* the evaluator is gone */
  pb_log_destroy(&log);
  assert_int_equal(tp_count(logpath, "going on without it"), 1);
  assert_int_equal(pb_rundir_protect_from(NULL, &from, &err), PB_EINVAL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_learner_lock(void **state) {
  (void)state;
  char dir[256];
  tp_tmpdir(dir, sizeof dir, "rundir-l");
  pb_err_t err;
  int fd = pb_rundir_lock_learner(dir, &err);
  assert_true(fd >= 0);
  pb_err_clear(&err);
  assert_int_equal(pb_rundir_lock_learner(dir, &err), PB_EAGAIN);
  assert_non_null(strstr(err.msg, "in use by another learner"));
  close(fd);
  fd = pb_rundir_lock_learner(dir, &err);
  assert_true(fd >= 0);
  close(fd);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* pb_rundir_lock_held sees a lock without taking it: no file, a file
 * nobody holds, the learner's lock held (by us: the pid is ours), the
 * evaluator's, and a learner can still take its lock right after a probe. */
static void test_lock_held(void **state) {
  (void)state;
  char dir[256];
  tp_tmpdir(dir, sizeof dir, "rundir-h");
  pb_err_t err;
  long pid = -1;
  assert_int_equal(
      pb_rundir_lock_held(dir, PB_RUNDIR_LEARNER_LOCK, 0, &pid, &err), 0);
  assert_int_equal(pid, 0);
  int fd = pb_rundir_lock_learner(dir, &err);
  assert_true(fd >= 0);
  assert_int_equal(
      pb_rundir_lock_held(dir, PB_RUNDIR_LEARNER_LOCK, 0, &pid, &err), 1);
  assert_int_equal(pid, (long)getpid());
  assert_int_equal(
      pb_rundir_lock_held(dir, PB_RUNDIR_EVALUATOR_LOCK, 1, NULL, &err), 0);
  close(fd);
  /* The file stays behind, unlocked. */
  assert_int_equal(
      pb_rundir_lock_held(dir, PB_RUNDIR_LEARNER_LOCK, 0, &pid, &err), 0);
  for (int i = 0; i < 50; i++) {
    assert_int_equal(
        pb_rundir_lock_held(dir, PB_RUNDIR_LEARNER_LOCK, 0, NULL, &err), 0);
    fd = pb_rundir_lock_learner(dir, &err);
    assert_true(fd >= 0);
    close(fd);
  }
  /* The evaluator's, with and without the probe (which also sees a
   * holder in another pid namespace): both see it held, then not; an
   * evaluator starting between probes still takes its lock. */
  for (int probe = 0; probe <= 1; probe++) {
    assert_int_equal(
        pb_rundir_lock_held(dir, PB_RUNDIR_EVALUATOR_LOCK, probe, NULL, &err),
        0);
    int ev = pb_rundir_lock_evaluator(dir, NULL);
    assert_true(ev >= 0);
    assert_int_equal(
        pb_rundir_lock_held(dir, PB_RUNDIR_EVALUATOR_LOCK, probe, &pid, &err),
        1);
    assert_int_equal(pid, (long)getpid());
    close(ev);
    assert_int_equal(
        pb_rundir_lock_held(dir, PB_RUNDIR_EVALUATOR_LOCK, probe, NULL, &err),
        0);
  }
  for (int i = 0; i < 50; i++) {
    assert_int_equal(
        pb_rundir_lock_held(dir, PB_RUNDIR_EVALUATOR_LOCK, 1, NULL, &err), 0);
    int ev = pb_rundir_lock_evaluator(dir, NULL);
    assert_true(ev >= 0);
    close(ev);
  }
  assert_int_equal(pb_rundir_lock_held(NULL, "x", 0, NULL, &err), PB_EINVAL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* A new run starts only in a directory without a run: absent, empty, or
 * with logs and config.yaml alone; a checkpoint or history refuses it,
 * naming the directory, what it holds, --resume and --restart. */
static void test_check_new(void **state) {
  (void)state;
  char dir[256], sub[300], cmd[400];
  tp_tmpdir(dir, sizeof dir, "rundir-n");
  pb_err_t err;
  snprintf(sub, sizeof sub, "%s/absent", dir);
  assert_int_equal(pb_rundir_check_new(sub, &err), 0);
  assert_int_equal(access(sub, F_OK), -1); /* not made */
  assert_int_equal(pb_rundir_check_new(dir, &err), 0);
  snprintf(sub, sizeof sub, "%s/logs", dir);
  assert_int_equal(pb_mkdir_p(sub, &err), 0);
  touch(dir, "config.yaml", "game: connect4\n");
  touch(dir, PB_RUNDIR_METRICS, ""); /* empty: no history */
  snprintf(sub, sizeof sub, "%s/checkpoints", dir);
  assert_int_equal(pb_mkdir_p(sub, &err), 0);
  touch(sub, "ckpt-000001.pbck.tmp.5", "x");
  assert_int_equal(pb_rundir_check_new(dir, &err), 0);

  touch(dir, PB_RUNDIR_ELO_CSV, "iteration,version,elo\n");
  pb_err_clear(&err);
  assert_int_equal(pb_rundir_check_new(dir, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, dir));
  assert_non_null(strstr(err.msg, "elo.csv, but no checkpoint"));
  assert_non_null(strstr(err.msg, "--resume"));
  assert_non_null(strstr(err.msg, "--restart"));
  touch(sub, "ckpt-000007.pbck", "x");
  touch(sub, "ckpt-000003.pbck", "x");
  touch(dir, PB_RUNDIR_METRICS, "{}\n");
  assert_int_equal(pb_rundir_check_new(dir, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg,
                         "(checkpoints up to version 7, "
                         "metrics.jsonl, elo.csv)"));
  assert_int_equal(pb_rundir_check_new(NULL, &err), PB_EINVAL);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static int exists(const char *dir, const char *name) {
  char p[PB_RUNDIR_PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

/* What a failed start takes back: the directories and files it made,
 * newest first; never a file that was there, never a directory that
 * holds something it did not make. */
static void test_undo(void **state) {
  (void)state;
  char dir[256], p[PB_RUNDIR_PATH_MAX];
  tp_tmpdir(dir, sizeof dir, "rundir-u");
  touch(dir, "mine.txt", "there before\n");
  pb_rundir_undo_t u;
  pb_rundir_undo_init(&u);
  pb_err_t err;
  snprintf(p, sizeof p, "%s/a/b/c", dir);
  assert_int_equal(pb_rundir_undo_mkdir(&u, p, &err), 0);
  assert_int_equal(u.n, 3); /* a, a/b, a/b/c */
  assert_int_equal(pb_rundir_undo_mkdir(&u, p, &err), 0);
  assert_int_equal(u.n, 3); /* nothing new */
  snprintf(p, sizeof p, "%s/a/b/c/x", dir);
  assert_int_equal(pb_rundir_undo_note(&u, p), 1);
  touch(dir, "a/b/c/x", "made\n");
  snprintf(p, sizeof p, "%s/mine.txt", dir);
  assert_int_equal(pb_rundir_undo_note(&u, p), 0); /* exists: not ours */
  touch(dir, "mine.txt", "overwritten\n");
  touch(dir, "a/b/theirs", "made by someone else meanwhile\n");
  pb_rundir_undo_run(&u, NULL);
  assert_int_equal(u.n, 0);
  assert_false(exists(dir, "a/b/c/x"));
  assert_false(exists(dir, "a/b/c"));
  assert_true(exists(dir, "a/b/theirs")); /* a/b is not empty: stays */
  assert_true(exists(dir, "mine.txt"));
  /* A list with only what is gone already: nothing happens. */
  snprintf(p, sizeof p, "%s/never", dir);
  assert_int_equal(pb_rundir_undo_note(&u, p), 1);
  pb_rundir_undo_run(&u, NULL);
  assert_int_equal(pb_rundir_undo_mkdir(&u, "", &err), PB_EINVAL);
  snprintf(p, sizeof p, "%s/mine.txt/sub", dir);
  assert_int_equal(pb_rundir_undo_mkdir(&u, p, &err), PB_EIO);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* A run id is NAME-XXXXXXXX, new at every call; a given one must be of
 * the run. */
static void test_run_id(void **state) {
  (void)state;
  char a[PB_RUNDIR_RUN_ID_MAX + 1], b[PB_RUNDIR_RUN_ID_MAX + 1];
  pb_err_t err;
  assert_int_equal(pb_rundir_new_run_id("c4", a, sizeof a, &err), 0);
  assert_int_equal(pb_rundir_new_run_id("c4", b, sizeof b, &err), 0);
  assert_int_equal(strlen(a), 11);
  assert_memory_equal(a, "c4-", 3);
  assert_true(strspn(a + 3, "0123456789abcdef") == 8);
  assert_string_not_equal(a, b); /* 1 in 2^32 to fail */
  assert_int_equal(pb_rundir_run_id_check("c4", a, &err), 0);
  assert_int_equal(pb_rundir_run_id_check("c4", "c4-x", &err), 0);
  assert_int_equal(pb_rundir_run_id_check("c4", "c5-1234", &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "not one of run 'c4'"));
  assert_int_equal(pb_rundir_run_id_check("c4", "c4-", &err), PB_EINVAL);
  assert_int_equal(pb_rundir_run_id_check("c4", "c4", &err), PB_EINVAL);
  assert_int_equal(pb_rundir_run_id_check("c4", "c4-a b", &err), PB_EINVAL);
  assert_int_equal(pb_rundir_run_id_check("c4", "c4x12345", &err), PB_EINVAL);
  /* a long name is cut so that the id fits a message's id */
  char name[64];
  memset(name, 'n', 63);
  name[63] = '\0';
  assert_int_equal(pb_rundir_new_run_id(name, a, sizeof a, &err), 0);
  assert_int_equal(strlen(a), PB_RUNDIR_RUN_ID_MAX);
  assert_int_equal(pb_rundir_run_id_check(name, a, &err), 0);
  assert_int_equal(pb_rundir_new_run_id("c4", a, 20, &err), PB_EINVAL);
  assert_int_equal(pb_rundir_new_run_id("", a, sizeof a, &err), PB_EINVAL);
}

/* keep_last 0 keeps every checkpoint: nothing is even looked at. */
static void test_prune_keep_all(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  pb_err_t err;
  assert_int_equal(pb_config_set(&c, "run.dir", "/nonexistent/run", &err), 0);
  assert_int_equal(pb_config_set(&c, "run.keep_last", "0", &err), 0);
  assert_int_equal(pb_rundir_prune(&c, 100, NULL, &err), 0);
  assert_int_equal(pb_rundir_prune(NULL, 100, NULL, &err), PB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paths),
      cmocka_unit_test(test_versions),
      cmocka_unit_test(test_protect_from),
      cmocka_unit_test(test_learner_lock),
      cmocka_unit_test(test_lock_held),
      cmocka_unit_test(test_prune_keep_all),
      cmocka_unit_test(test_check_new),
      cmocka_unit_test(test_run_id),
      cmocka_unit_test(test_undo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
