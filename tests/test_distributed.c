/* test_distributed.c - the distributed system with real processes and
 * real sockets on loopback: probs-learner, probs-actor in both roles, and
 * probs train --inproc as the reference.
 *
 * Each test gets its own run directory; the learner binds ports the
 * kernel picks (tcp://127.0.0.1:*, net.http_port=-1) and the workers are
 * started with what it wrote to RUN_DIR/endpoints, so parallel tests never
 * collide. Tests whose learner restarts use ipc:// endpoints in the run
 * directory, which the new learner binds again. Every worker gives up
 * after 60 s without a word from its learner (net.give_up_s), and every
 * process a test starts is killed when it ends, fails or is interrupted
 * (tests/proc.h, tp_teardown). Timeouts are generous: under
 * AddressSanitizer a process that loads libtorch takes seconds to start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "http_fixtures.h"
#include "json.h"
#include "proc.h"

#define BIN PB_BIN_DIR
#define CONFIG PB_SOURCE_DIR "/configs/connect4-smoke.yaml"

typedef struct {
  char dir[256];
  char work[320], pub[320]; /* --set values: what the learner binds, and */
                            /* once it has, what workers connect to */
  int http;                 /* the learner's HTTP port, once bound */
  char *extra[16];          /* more --set values, NULL-terminated */
} run_t;

static void run_init(run_t *r, const char *tag) {
  memset(r, 0, sizeof *r);
  tp_tmpdir(r->dir, sizeof r->dir, tag);
  assert_true(r->dir[0] != '\0');
  snprintf(r->work, sizeof r->work, "net.work_endpoint=tcp://127.0.0.1:*");
  snprintf(r->pub, sizeof r->pub, "net.pub_endpoint=tcp://127.0.0.1:*");
}

/* For a learner that is killed and started again: ipc:// endpoints in the
 * run dir, the same for every learner of the run. */
static void run_use_ipc(run_t *r) {
  snprintf(r->work, sizeof r->work, "net.work_endpoint=ipc://%s/work.ipc",
           r->dir);
  snprintf(r->pub, sizeof r->pub, "net.pub_endpoint=ipc://%s/pub.ipc", r->dir);
}

/* argv for one process: prog CONFIG <role args> --set ... */
static pid_t start(run_t *r, const char *prog, const char *a1, const char *a2,
                   const char *a3, const char *a4, const char *logname) {
  char *argv[64];
  int n = 0;
  char path[512], log[512];
  snprintf(path, sizeof path, "%s/%s", BIN, prog);
  snprintf(log, sizeof log, "%s/%s.out", r->dir, logname);
  argv[n++] = path;
  argv[n++] = (char *)CONFIG;
  const char *a[] = {a1, a2, a3, a4};
  for (int i = 0; i < 4; i++)
    if (a[i]) argv[n++] = (char *)a[i];
  argv[n++] = (char *)"--set";
  argv[n++] = r->work;
  argv[n++] = (char *)"--set";
  argv[n++] = r->pub;
  for (int i = 0; r->extra[i]; i++) {
    argv[n++] = (char *)"--set";
    argv[n++] = r->extra[i];
  }
  if (strcmp(prog, "probs-actor") == 0) {
    argv[n++] = (char *)"--set"; /* no orphan outlives a failed test */
    argv[n++] = (char *)"net.give_up_s=60";
  }
  argv[n] = NULL;
  pid_t pid = tp_spawn(argv, log);
  assert_true(pid > 0);
  return pid;
}

/* Starts the learner and waits until it has bound its sockets; from then
 * on r->work, r->pub and r->http say where (RUN_DIR/endpoints). */
static pid_t start_learner_as(run_t *r, const char *flag) {
  char path[512];
  snprintf(path, sizeof path, "%s/endpoints", r->dir);
  unlink(path); /* a killed learner's */
  pid_t pid = start(r, "probs-learner", "--run-dir", r->dir, flag, NULL,
                    "learner");
  tp_endpoints_t e;
  if (!tp_endpoints(r->dir, pid, 240, &e)) {
    snprintf(path, sizeof path, "%s/learner.out", r->dir);
    char *out = tp_slurp(path);
    fail_msg("the learner wrote no RUN_DIR/endpoints: %s", out ? out : "");
  }
  snprintf(r->work, sizeof r->work, "%s", e.work);
  snprintf(r->pub, sizeof r->pub, "%s", e.pub);
  r->http = e.http;
  return pid;
}

static pid_t start_learner(run_t *r, int resume) {
  return start_learner_as(r, resume ? "--resume" : NULL);
}

static pid_t start_worker(run_t *r, const char *role, const char *id) {
  return start(r, "probs-actor", "--role", role, "--id", id, id);
}

static void path_of(const run_t *r, const char *name, char *buf, size_t n) {
  snprintf(buf, n, "%s/%s", r->dir, name);
}

static int exited_ok(int st) { return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0; }

/* Values of "key":<number> in metrics.jsonl iteration lines, in order. */
static int metric_values(const char *path, const char *key, double *out,
                         int max) {
  char *b = tp_slurp(path);
  if (!b) return 0;
  int n = 0;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  for (char *line = strtok(b, "\n"); line && n < max; line = strtok(NULL, "\n")) {
    if (!strstr(line, "\"event\":\"iteration\"")) continue;
    char *p = strstr(line, pat);
    if (p) out[n++] = strtod(p + strlen(pat), NULL);
  }
  free(b);
  return n;
}

/* learner + 2 actors + 2 searchers run 2 iterations to the end; the
 * workers leave by themselves when the learner announces the end. */
static void test_two_iterations_two_workers_each(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "dist");
  pid_t l = start_learner(&r, 0);
  pid_t w[4];
  w[0] = start_worker(&r, "selfplay", "actor-1");
  w[1] = start_worker(&r, "selfplay", "actor-2");
  w[2] = start_worker(&r, "search", "searcher-1");
  w[3] = start_worker(&r, "search", "searcher-2");
  assert_true(exited_ok(tp_wait(l, 300)));
  for (int i = 0; i < 4; i++) assert_true(exited_ok(tp_wait(w[i], 30)));
  char p[512];
  path_of(&r, "metrics.jsonl", p, sizeof p);
  assert_int_equal(tp_count(p, "\"event\":\"iteration\""), 2);
  path_of(&r, "checkpoints/ckpt-000002.pbck", p, sizeof p);
  assert_int_equal(access(p, R_OK), 0);
  /* Both roles joined (in a fast build the run can end before the last
   * worker got in; it then leaves on the end announcement all the same). */
  path_of(&r, "learner.log", p, sizeof p);
  assert_true(tp_count(p, "actor actor-") >= 1);
  assert_true(tp_count(p, "searcher searcher-") >= 1);
  /* Honest searchers pass the spot check (default share 0.01: at least
   * one position of every item). */
  double checked[4], disagree[4], quarantined[4];
  path_of(&r, "metrics.jsonl", p, sizeof p);
  assert_int_equal(metric_values(p, "spot_checked", checked, 4), 2);
  assert_int_equal(metric_values(p, "spot_disagree", disagree, 4), 2);
  assert_int_equal(metric_values(p, "searchers_quarantined", quarantined, 4), 2);
  assert_true(checked[1] > checked[0] && checked[0] > 0);
  assert_true(quarantined[1] == 0);
}

/* The in-process reference in ref's run dir (with ref's extra settings),
 * and beside it run r distributed with one actor and one searcher; both
 * must finish. */
static void run_beside_inproc(run_t *r, run_t *ref) {
  char path[512], log[512];
  snprintf(path, sizeof path, "%s/probs", BIN);
  snprintf(log, sizeof log, "%s/inproc.out", ref->dir);
  char *argv[64] = {path, (char *)"train", (char *)CONFIG, (char *)"--inproc",
                    (char *)"--run-dir", ref->dir};
  int n = 6;
  for (int i = 0; ref->extra[i] && n < 62; i++) {
    argv[n++] = (char *)"--set";
    argv[n++] = ref->extra[i];
  }
  argv[n] = NULL;
  pid_t ip = tp_spawn(argv, log);
  pid_t l = start_learner(r, 0);
  pid_t w[2];
  w[0] = start_worker(r, "selfplay", "actor-1");
  w[1] = start_worker(r, "search", "searcher-1");
  assert_true(exited_ok(tp_wait(ip, 300)));
  assert_true(exited_ok(tp_wait(l, 300)));
  for (int i = 0; i < 2; i++) assert_true(exited_ok(tp_wait(w[i], 30)));
}

/* With one worker of each role and the same seed, the distributed run
 * trains on exactly the data of the in-process reference. */
static void test_matches_inproc(void **state) {
  (void)state;
  run_t r, ref;
  run_init(&r, "same");
  run_init(&ref, "ref");
  run_beside_inproc(&r, &ref);
  const char *keys[] = {"targets_crc", "positions", "distinct_positions",
                        "v_loss", "q_loss"};
  char a[512], b[512];
  path_of(&r, "metrics.jsonl", a, sizeof a);
  path_of(&ref, "metrics.jsonl", b, sizeof b);
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    double x[8], y[8];
    int nx = metric_values(a, keys[k], x, 8), ny = metric_values(b, keys[k], y, 8);
    assert_int_equal(nx, 2);
    assert_int_equal(ny, 2);
    for (int i = 0; i < 2; i++) {
      if (x[i] != y[i])
        print_error("%s of iteration %d: distributed %.17g, inproc %.17g\n",
                    keys[k], i + 1, x[i], y[i]);
      assert_true(x[i] == y[i]);
    }
  }
}

/* Workers with several threads of game and tree work feeding one network
 * (search.threads, train.selfplay_threads; common/search/batcher.h) play the same
 * games as the in-process reference: the same positions; and on the first
 * iteration the same Q-targets (later ones may differ in the last bits of
 * the floats, since the network's batches are made differently). */
static void test_threaded_workers(void **state) {
  (void)state;
  run_t r, ref;
  run_init(&r, "threads");
  run_init(&ref, "threads-ref");
  r.extra[0] = (char *)"search.threads=3";
  r.extra[1] = (char *)"train.selfplay_threads=2";
  run_beside_inproc(&r, &ref);
  char a[512], b[512];
  path_of(&r, "searcher-1.out", a, sizeof a);
  assert_true(tp_count(a, "threads 3,") == 1);
  path_of(&r, "actor-1.out", a, sizeof a);
  assert_true(tp_count(a, "threads 2,") == 1);
  path_of(&r, "metrics.jsonl", a, sizeof a);
  path_of(&ref, "metrics.jsonl", b, sizeof b);
  double x[8], y[8];
  assert_int_equal(metric_values(a, "positions", x, 8), 2);
  assert_int_equal(metric_values(b, "positions", y, 8), 2);
  assert_true(x[0] == y[0]);
  assert_int_equal(metric_values(a, "targets_crc", x, 8), 2);
  assert_int_equal(metric_values(b, "targets_crc", y, 8), 2);
  if (x[0] != y[0])
    print_error("targets_crc of iteration 1: threaded %.17g, inproc %.17g\n",
                x[0], y[0]);
  assert_true(x[0] == y[0]);
}

/* search.algorithm abnet: the searcher makes its targets by alpha-beta
 * (common/search/abtargets.h), the learner checks every position it sends (spot
 * check share 1) and quarantines nobody; the run trains on the same games
 * as the in-process reference with the same settings, whose first
 * iteration's targets it matches. */
static void test_abnet_targets(void **state) {
  (void)state;
  run_t r, ref;
  run_init(&r, "abnet");
  run_init(&ref, "abnet-ref");
  const char *sets[] = {"search.algorithm=abnet", "search.nodes=30",
                        "search.max_depth=3", "net.spot_check=1"};
  for (int i = 0; i < 4; i++) r.extra[i] = ref.extra[i] = (char *)sets[i];
  run_beside_inproc(&r, &ref);
  char a[512], b[512];
  path_of(&r, "searcher-1.out", a, sizeof a);
  /* its items searched by the run's config: the item carries none */
  assert_true(tp_count(a, "states, abnet search (nodes=30 a move, M=3), in") >=
              1);
  path_of(&r, "learner.log", a, sizeof a);
  assert_true(tp_count(a, "abnet search (nodes=30 a move, M=3)") == 2);
  path_of(&ref, "inproc.out", b, sizeof b);
  assert_true(tp_count(b, "abnet search (nodes=30 a move, M=3)") == 1);
  path_of(&r, "metrics.jsonl", a, sizeof a);
  path_of(&ref, "metrics.jsonl", b, sizeof b);
  double x[8], y[8], checked[8], quarantined[8];
  assert_int_equal(metric_values(a, "positions", x, 8), 2);
  assert_int_equal(metric_values(b, "positions", y, 8), 2);
  assert_true(x[0] == y[0] && x[1] == y[1]);
  assert_int_equal(metric_values(a, "distinct_positions", x, 8), 2);
  assert_int_equal(metric_values(a, "spot_checked", checked, 8), 2);
  assert_true(checked[0] >= x[0]); /* share 1: every position */
  assert_int_equal(metric_values(a, "searchers_quarantined", quarantined, 8),
                   2);
  assert_true(quarantined[1] == 0);
  assert_int_equal(metric_values(a, "q_loss", x, 8), 2);
  assert_int_equal(metric_values(b, "q_loss", y, 8), 2);
  for (int i = 0; i < 2; i++) assert_true(x[i] >= 0 && x[i] < 2);
}

/* train.pipeline: actors play the next iteration's games while the
 * learner trains and the searchers search. The run completes, every
 * iteration's episodes lag the version trained from by at most
 * train.max_staleness (1), and the overlap happens (some lag 1). */
static void test_pipelined(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "pipe");
  r.extra[0] = (char *)"train.pipeline=true";
  r.extra[1] = (char *)"train.iterations=5";
  pid_t l = start_learner(&r, 0);
  pid_t w[3];
  w[0] = start_worker(&r, "selfplay", "actor-1");
  w[1] = start_worker(&r, "selfplay", "actor-2");
  w[2] = start_worker(&r, "search", "searcher-1");
  assert_true(exited_ok(tp_wait(l, 300)));
  for (int i = 0; i < 3; i++) assert_true(exited_ok(tp_wait(w[i], 30)));
  char p[512];
  path_of(&r, "metrics.jsonl", p, sizeof p);
  double st[8], ql[8];
  assert_int_equal(metric_values(p, "staleness_max", st, 8), 5);
  assert_int_equal(metric_values(p, "q_loss", ql, 8), 5);
  double most = 0;
  for (int i = 0; i < 5; i++) {
    assert_true(st[i] >= 0 && st[i] <= 1);
    assert_true(ql[i] >= 0 && ql[i] < 2);
    if (st[i] > most) most = st[i];
  }
  assert_true(st[0] == 0); /* nothing to overlap with before version 1 */
  assert_true(most == 1);
  path_of(&r, "checkpoints/ckpt-000005.pbck", p, sizeof p);
  assert_int_equal(access(p, R_OK), 0);
  path_of(&r, "learner.log", p, sizeof p);
  assert_true(tp_count(p, "pipelined: started with the previous version") >= 1);
}

/* A search worker killed with SIGKILL mid-iteration: its lease expires and
 * the other searcher finishes the iteration. */
static void test_searcher_killed(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "kill");
  r.extra[0] = (char *)"train.episodes_per_iter=60";
  r.extra[1] = (char *)"net.item_states=8";
  r.extra[2] = (char *)"net.lease_ms=1500";
  r.extra[3] = (char *)"net.heartbeat_ms=300";
  r.extra[4] = (char *)"search.expansions=30";
  pid_t l = start_learner(&r, 0);
  pid_t w[3];
  w[0] = start_worker(&r, "selfplay", "actor-1");
  w[1] = start_worker(&r, "search", "searcher-1");
  w[2] = start_worker(&r, "search", "searcher-2");
  char p[512];
  path_of(&r, "learner.log", p, sizeof p);
  assert_true(tp_wait_for(p, "distinct positions in", 1, 240));
  tp_sleep(0.3);
  kill(w[1], SIGKILL);
  tp_wait(w[1], 10);
  assert_true(exited_ok(tp_wait(l, 300)));
  path_of(&r, "metrics.jsonl", p, sizeof p);
  assert_int_equal(tp_count(p, "\"event\":\"iteration\""), 2);
  assert_true(exited_ok(tp_wait(w[0], 30)));
  assert_true(exited_ok(tp_wait(w[2], 30)));
}

/* The learner killed with SIGKILL after its first iteration; started
 * again with --resume it continues at iteration 2, the workers reconnect
 * by themselves, and the run finishes. */
static void test_learner_killed_and_resumed(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "resume");
  run_use_ipc(&r);
  r.extra[0] = (char *)"train.iterations=3";
  r.extra[1] = (char *)"net.lease_ms=3000";
  pid_t l = start_learner(&r, 0);
  pid_t w[2];
  w[0] = start_worker(&r, "selfplay", "actor-1");
  w[1] = start_worker(&r, "search", "searcher-1");
  char log[512], met[512];
  path_of(&r, "learner.log", log, sizeof log);
  path_of(&r, "metrics.jsonl", met, sizeof met);
  assert_true(tp_wait_for(met, "\"event\":\"iteration\"", 1, 240));
  kill(l, SIGKILL);
  tp_wait(l, 10);
  /* What a crash mid-write leaves: a temporary file, and a torn newest
   * checkpoint. The resume removes the first, names and skips the second. */
  char tmp[600], torn[600];
  snprintf(tmp, sizeof tmp, "%s/checkpoints/ckpt-000001.pbck.tmp.999999",
           r.dir);
  snprintf(torn, sizeof torn, "%s/checkpoints/ckpt-000099.pbck", r.dir);
  FILE *f = fopen(tmp, "w");
  fputs("half a checkpoint", f);
  fclose(f);
  f = fopen(torn, "w");
  fputs("PBCK torn", f);
  fclose(f);
  struct timespec old[2] = {{time(NULL) - 600, 0}, {time(NULL) - 600, 0}};
  assert_int_equal(utimensat(AT_FDCWD, tmp, old, 0), 0);
  l = start_learner(&r, 1);
  assert_true(exited_ok(tp_wait(l, 300)));
  assert_true(tp_count(log, "resumed from") >= 1);
  assert_true(access(tmp, F_OK) != 0);
  assert_true(tp_count(log, "removed ") >= 1);
  assert_true(tp_count(log, "WARN") >= 1);
  assert_true(tp_count(log, "skipping checkpoint") >= 1);
  assert_true(tp_count(log, "ckpt-000099.pbck") >= 1);
  double it[8];
  int n = metric_values(met, "iteration", it, 8);
  assert_true(n >= 3);
  assert_true(it[n - 1] == 3.0);
  for (int i = 0; i < 2; i++) assert_true(exited_ok(tp_wait(w[i], 30)));
}

/* The checkpoints of a run deleted while it ran: resuming is a clear
 * error that leaves the history alone, instead of a silent start from
 * scratch; --restart starts over and moves the history aside. */
static void test_lost_checkpoints(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "lost");
  run_use_ipc(&r);
  r.extra[0] = (char *)"train.iterations=2";
  r.extra[1] = (char *)"net.lease_ms=3000";
  pid_t l = start_learner(&r, 0);
  pid_t w[2];
  w[0] = start_worker(&r, "selfplay", "actor-1");
  w[1] = start_worker(&r, "search", "searcher-1");
  char log[512], met[512], cmd[600];
  path_of(&r, "learner.log", log, sizeof log);
  path_of(&r, "metrics.jsonl", met, sizeof met);
  assert_true(tp_wait_for(met, "\"event\":\"iteration\"", 1, 240));
  kill(l, SIGKILL);
  tp_wait(l, 10);
  snprintf(cmd, sizeof cmd, "rm -rf '%s/checkpoints'", r.dir);
  assert_int_equal(system(cmd), 0);
  char *before = tp_slurp(met);
  assert_non_null(before);
  l = start(&r, "probs-learner", "--run-dir", r.dir, "--resume", NULL,
            "learner");
  int st = tp_wait(l, 60);
  assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
  assert_true(tp_count(log, "no readable checkpoint") >= 1);
  char *after = tp_slurp(met);
  assert_non_null(after);
  assert_string_equal(after, before); /* nothing appended, nothing lost */
  free(after);
  /* --restart: the history moves aside, the run starts over and ends. */
  l = start_learner_as(&r, "--restart");
  assert_true(exited_ok(tp_wait(l, 300)));
  assert_true(tp_count(log, "moved to") >= 1);
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -q '^metrics.jsonl.before-restart-'",
           r.dir);
  assert_int_equal(system(cmd), 0);
  double it[8];
  int n = metric_values(met, "iteration", it, 8);
  assert_int_equal(n, 2);
  assert_true(it[0] == 1.0 && it[1] == 2.0);
  free(before);
  for (int i = 0; i < 2; i++) assert_true(exited_ok(tp_wait(w[i], 30)));
}

/* The learner's /status (JSON) and /metrics (Prometheus text) while it
 * waits for workers, and a clean exit 0 on SIGTERM. */
static void test_http_status_and_metrics(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "http");
  r.extra[0] = (char *)"net.http_port=-1"; /* the kernel picks */
  pid_t l = start_learner(&r, 0);
  int port = r.http;
  assert_true(port > 0);
  char *st = NULL;
  for (int i = 0; i < 600 && st == NULL; i++) {
    st = http_get(port, "/status");
    if (st == NULL) tp_sleep(0.1);
  }
  assert_non_null(st);
  assert_non_null(strstr(st, "HTTP/1.1 200"));
  char *body = strstr(st, "\r\n\r\n");
  assert_non_null(body);
  assert_int_equal(pb_json_validate(body + 4), 0);
  assert_non_null(strstr(body, "\"phase\":\"selfplay\""));
  assert_non_null(strstr(body, "\"version\":0"));
  assert_non_null(strstr(body, "\"queue\":{"));
  free(st);
  char *m = http_get(port, "/metrics");
  assert_non_null(m);
  assert_non_null(strstr(m, "# TYPE probs_version gauge"));
  assert_non_null(strstr(m, "\nprobs_version 0\n"));
  assert_non_null(strstr(m, "probs_workers{role=\"actor\"} 0"));
  assert_non_null(strstr(m, "probs_queue_items{state=\"pending\"}"));
  assert_null(strstr(m, "probs_eval_"));
  free(m);
  /* Once the evaluator has written elo.csv, /metrics carries its newest
   * Elo and accuracies. */
  char csv[512];
  path_of(&r, "elo.csv", csv, sizeof csv);
  FILE *f = fopen(csv, "w");
  assert_non_null(f);
  fputs("iteration,version,elo,elo_lo,elo_hi,note,games,seconds,random_w,"
        "random_d,random_l,lookahead:1_w,lookahead:1_d,lookahead:1_l,acc_q,"
        "acc_v,acc_beam,minutes\n"
        "0,0,1100.0,1050.0,1160.0,,4,1.25,1,1,1,1,0,0,0.500,0.400,0.700,0.00\n"
        "3,3,1300.0,1250.0,1360.0,,4,1.25,3,0,0,1,0,0,0.734,0.612,0.881,1.50\n",
        f);
  fclose(f);
  m = http_get(port, "/metrics");
  assert_non_null(m);
  assert_non_null(strstr(m, "\nprobs_eval_version 3\n"));
  assert_non_null(strstr(m, "\nprobs_eval_elo 1300.0\n"));
  assert_non_null(strstr(m, "# TYPE probs_eval_accuracy gauge"));
  assert_non_null(strstr(m, "probs_eval_accuracy{agent=\"greedy_q\"} 0.7340"));
  assert_non_null(strstr(m, "probs_eval_accuracy{agent=\"beam\"} 0.8810"));
  free(m);
  char *nf = http_get(port, "/nope");
  assert_non_null(nf);
  assert_non_null(strstr(nf, "HTTP/1.1 404"));
  free(nf);
  kill(l, SIGTERM);
  assert_true(exited_ok(tp_wait(l, 60)));
}

/* A TCP socket listening on a port the kernel picks on 127.0.0.1: a port
 * in use. Returns the fd, and the port in *port. */
static int take_port(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 1), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &n), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

/* The names in dir, sorted, space-separated ("" if empty); NULL when dir
 * does not exist. */
static char *listing(const char *dir) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  if (n < 0) return NULL;
  char *out = calloc(1, 4096);
  assert_non_null(out);
  for (int i = 0; i < n; i++) {
    const char *nm = names[i]->d_name;
    if (strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0 &&
        strlen(out) + strlen(nm) + 2 < 4096) {
      strcat(out, out[0] ? " " : "");
      strcat(out, nm);
    }
    free(names[i]);
  }
  free(names);
  return out;
}

/* Runs the learner on run_dir with the given --set values; returns its
 * exit status and its output in *out (malloc'd). */
static int learner_exit(const char *tmp, const char *run_dir,
                        const char *set1, const char *set2, const char *set3,
                        char **out) {
  char path[512], log[512];
  snprintf(path, sizeof path, "%s/probs-learner", BIN);
  snprintf(log, sizeof log, "%s/failed-start.out", tmp);
  unlink(log);
  char *argv[] = {path,          (char *)CONFIG, (char *)"--run-dir",
                  (char *)run_dir, (char *)"--set", (char *)set1,
                  (char *)"--set", (char *)set2,  (char *)"--set",
                  (char *)set3,  NULL};
  pid_t pid = tp_spawn(argv, log);
  assert_true(pid > 0);
  int st = tp_wait(pid, 120);
  *out = tp_slurp(log);
  assert_non_null(*out);
  return st;
}

/* A learner that cannot bind one of its ports (each in turn: work,
 * announcements, HTTP) exits 78 naming the address, and leaves nothing it
 * made: a run dir it made is gone; in one that was there, every file that
 * was there is as it was, and only learner.log (the reason) was added. */
static void test_learner_port_taken_leaves_nothing(void **state) {
  (void)state;
  char tmp[256], run[400], addr[64], s1[128], s2[128], s3[128];
  tp_tmpdir(tmp, sizeof tmp, "taken");
  assert_true(tmp[0] != '\0');
  int port, fd = take_port(&port);
  snprintf(addr, sizeof addr, "tcp://127.0.0.1:%d", port);
  char *out;
  /* The work port, in a run dir that does not exist yet (two levels). */
  snprintf(run, sizeof run, "%s/new/run", tmp);
  snprintf(s1, sizeof s1, "net.work_endpoint=%s", addr);
  int st = learner_exit(tmp, run, s1, "net.pub_endpoint=tcp://127.0.0.1:*",
                        "net.http_port=-1", &out);
  assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 78);
  if (strstr(out, addr) == NULL) fail_msg("no '%s' in: %s", addr, out);
  assert_non_null(strstr(out, "net.work_endpoint"));
  free(out);
  snprintf(run, sizeof run, "%s/new", tmp);
  assert_null(listing(run)); /* not there, as before */
  /* The announcement port, in a run dir that exists with files of its
   * own: a lock of an earlier learner and a note of the user's. */
  snprintf(run, sizeof run, "%s/old", tmp);
  assert_int_equal(mkdir(run, 0755), 0);
  char p[600];
  snprintf(p, sizeof p, "%s/notes.txt", run);
  FILE *f = fopen(p, "w");
  fputs("mine\n", f);
  fclose(f);
  snprintf(p, sizeof p, "%s/learner.lock", run);
  f = fopen(p, "w");
  fclose(f);
  snprintf(s2, sizeof s2, "net.pub_endpoint=%s", addr);
  st = learner_exit(tmp, run, "net.work_endpoint=tcp://127.0.0.1:*", s2,
                    "net.http_port=0", &out);
  assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 78);
  assert_non_null(strstr(out, addr));
  free(out);
  char *ls = listing(run);
  assert_non_null(ls);
  assert_string_equal(ls, "learner.lock learner.log notes.txt");
  free(ls);
  snprintf(p, sizeof p, "%s/notes.txt", run);
  char *notes = tp_slurp(p);
  assert_string_equal(notes, "mine\n");
  free(notes);
  /* The HTTP port, in a fresh run dir that exists (empty). */
  snprintf(run, sizeof run, "%s/empty", tmp);
  assert_int_equal(mkdir(run, 0755), 0);
  snprintf(s3, sizeof s3, "net.http_port=%d", port);
  st = learner_exit(tmp, run, "net.work_endpoint=tcp://127.0.0.1:*",
                    "net.pub_endpoint=tcp://127.0.0.1:*", s3, &out);
  assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 78);
  snprintf(addr, sizeof addr, "127.0.0.1 port %d", port);
  if (strstr(out, addr) == NULL) fail_msg("no '%s' in: %s", addr, out);
  free(out);
  ls = listing(run);
  assert_non_null(ls);
  assert_string_equal(ls, "learner.log");
  free(ls);
  close(fd);
}

/* A worker whose learner never answers gives up after net.give_up_s,
 * exiting non-zero with a message naming the endpoint and the wait. */
static void test_worker_gives_up(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "giveup");
  run_use_ipc(&r); /* nobody binds it */
  char path[512], log[512], work[400];
  snprintf(path, sizeof path, "%s/probs-actor", BIN);
  snprintf(log, sizeof log, "%s/actor.out", r.dir);
  char *argv[] = {path,          (char *)CONFIG, (char *)"--role",
                  (char *)"selfplay", (char *)"--set", r.work,
                  (char *)"--set", r.pub,        (char *)"--set",
                  (char *)"net.give_up_s=2", NULL};
  pid_t w = tp_spawn(argv, log);
  assert_true(w > 0);
  int st = tp_wait(w, 120);
  assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) != 0);
  assert_true(snprintf(work, sizeof work, "no word from the learner at %s",
                       r.work + strlen("net.work_endpoint=")) <
              (int)sizeof work);
  char *out = tp_slurp(log);
  assert_non_null(out);
  if (strstr(out, work) == NULL) fail_msg("no '%s' in: %s", work, out);
  assert_non_null(strstr(out, "net.give_up_s = 2"));
  free(out);
}

/* Whether pid is gone (or a zombie nobody has reaped yet). */
static int gone(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  char *st = tp_slurp(path);
  if (st == NULL) return 1;
  const char *rp = strrchr(st, ')');
  int z = rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
  free(st);
  return z;
}

static int wait_gone(pid_t pid, double timeout_s) {
  double end = tp_now() + timeout_s;
  while (!gone(pid))
    if (tp_now() > end) return 0;
    else tp_sleep(0.05);
  return 1;
}

/* The pid a shell wrote to path, waiting up to 60 s for it. */
static pid_t pid_in(const char *path) {
  for (int i = 0; i < 1200; i++) {
    char *t = tp_slurp(path);
    long v = t != NULL ? strtol(t, NULL, 10) : 0;
    free(t);
    if (v > 1) return (pid_t)v;
    tp_sleep(0.05);
  }
  fail_msg("no pid in %s", path);
  return -1;
}

/* What a test starts dies with it (tests/proc.h): the cmocka teardown
 * (which runs after a failed assertion too) kills a child and what that
 * child started; a test program stopped by SIGTERM takes its children
 * with it; and one killed by SIGKILL, where no handler runs, still does,
 * as the probs programs ask for SIGTERM when their parent dies. */
static void test_started_processes_die_with_the_test(void **state) {
  (void)state;
  char tmp[256], pidf[400], log[400];
  tp_tmpdir(tmp, sizeof tmp, "orphans");
  snprintf(pidf, sizeof pidf, "%s/grandchild", tmp);
  snprintf(log, sizeof log, "%s/sh.out", tmp);
  char script[600];
  snprintf(script, sizeof script, "sleep 600 & echo $! > '%s'; wait", pidf);
  char *sh[] = {(char *)"/bin/sh", (char *)"-c", script, NULL};
  /* 1. The teardown. */
  pid_t c = tp_spawn(sh, log);
  assert_true(c > 0);
  pid_t g = pid_in(pidf);
  assert_int_equal(tp_teardown(NULL), 0);
  assert_true(wait_gone(c, 30) && wait_gone(g, 30));
  /* 2. SIGTERM to the test program (a fork of this one). */
  unlink(pidf);
  pid_t t = fork();
  assert_true(t >= 0);
  if (t == 0) {
    if (tp_spawn(sh, log) < 0) _exit(3);
    for (;;) pause(); /* until the signal */
  }
  g = pid_in(pidf);
  kill(t, SIGTERM);
  int st;
  assert_int_equal(waitpid(t, &st, 0), t);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  assert_true(wait_gone(g, 30));
  /* 3. SIGKILL to the test program: its worker follows (PROBS_PARENT_PID,
   * PR_SET_PDEATHSIG), though it would wait for its learner for 10 min. */
  char aout[400], pidw[400], ep1[400], ep2[400];
  snprintf(aout, sizeof aout, "%s/actor.out", tmp);
  snprintf(pidw, sizeof pidw, "%s/worker", tmp);
  snprintf(ep1, sizeof ep1, "net.work_endpoint=ipc://%s/w.ipc", tmp);
  snprintf(ep2, sizeof ep2, "net.pub_endpoint=ipc://%s/p.ipc", tmp);
  t = fork();
  assert_true(t >= 0);
  if (t == 0) {
    char path[512];
    snprintf(path, sizeof path, "%s/probs-actor", BIN);
    char *argv[] = {path, (char *)CONFIG, (char *)"--role",
                    (char *)"selfplay", (char *)"--set", ep1,
                    (char *)"--set", ep2, (char *)"--set",
                    (char *)"net.give_up_s=600", NULL};
    pid_t w = tp_spawn(argv, aout);
    FILE *f = fopen(pidw, "w");
    if (w < 0 || f == NULL) _exit(3);
    fprintf(f, "%ld\n", (long)w);
    fclose(f);
    for (;;) pause();
  }
  pid_t w = pid_in(pidw);
  assert_true(tp_wait_for(aout, "starting:", 1, 120)); /* past its prctl */
  kill(t, SIGKILL);
  assert_int_equal(waitpid(t, &st, 0), t);
  assert_true(wait_gone(w, 60));
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  /* tp_teardown: whatever a test started is killed when it ends, also
   * when an assertion fails. */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_two_iterations_two_workers_each,
                                tp_teardown),
      cmocka_unit_test_teardown(test_matches_inproc, tp_teardown),
      cmocka_unit_test_teardown(test_threaded_workers, tp_teardown),
      cmocka_unit_test_teardown(test_pipelined, tp_teardown),
      cmocka_unit_test_teardown(test_abnet_targets, tp_teardown),
      cmocka_unit_test_teardown(test_searcher_killed, tp_teardown),
      cmocka_unit_test_teardown(test_learner_killed_and_resumed, tp_teardown),
      cmocka_unit_test_teardown(test_lost_checkpoints, tp_teardown),
      cmocka_unit_test_teardown(test_http_status_and_metrics, tp_teardown),
      cmocka_unit_test_teardown(test_learner_port_taken_leaves_nothing,
                                tp_teardown),
      cmocka_unit_test_teardown(test_worker_gives_up, tp_teardown),
      cmocka_unit_test_teardown(test_started_processes_die_with_the_test,
                                tp_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
