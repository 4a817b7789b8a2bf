/* test_trust.c - what workers' leases earn them (learner/trust.c), with a
 * real learner and real workers over loopback, and hand-made peers in
 * this process:
 *   - 100 connections that take items, heartbeat for them and never
 *     answer (hung workers, or a run stalled on purpose) do not stop the
 *     run: they get one item, then none, then are quarantined, their
 *     address takes no new connection while its ban lasts (a temporary
 *     measure: then each may take one more), and the items go to the
 *     workers that deliver (the hand-made peers connect from 127.0.0.2,
 *     the real workers from 127.0.0.1: two hosts);
 *   - without CURVE keys an address is no identity: 10 withholders on the
 *     honest workers' own address get it banned, the honest searcher
 *     restarts meanwhile, and the ban ends (2 x net.lease_ms): the new
 *     searcher is served and the run finishes (issue 46: it was refused
 *     until net.no_workers_exit_s stopped the run);
 *   - 150 connections that only send heartbeats against a table of 64
 *     peers never push out a worker that holds a lease (no result of
 *     theirs is refused as "not the holder"), and new connections from
 *     one address are rate limited;
 *   - withholders spread over 200 source addresses (issue 46: 3
 *     iterations in 43 s, 30 from one address) hold no phase for longer
 *     than a backup copy takes: no lease of theirs ever expires (10
 *     minutes on heartbeats), the honest workers redo their items;
 *   - a heartbeat storm of 2,000 connections from 400 addresses (issue
 *     46: 3.7x slower, the per-address limit never triggered) against
 *     the default table of 1,024 peers: the run finishes; what it costs
 *     and what the limits did (/status) is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <zmq.h>

#include "game.h"
#include "msg.h"
#include "peer_fixtures.h"
#include "http_fixtures.h"
#include "proc.h"
#include "run_fixtures.h"

/* The n withholders f go on until the learner l exits (its status kept in
 * *lst), r's log says `until` (NULL: never) or limit_s pass; with
 * *quarantined (when not NULL): the most connections /status counted as
 * quarantined for their leases meanwhile. */
static void withhold(const run_t *r, pid_t l, int *lst, hold_t *f, int n,
                     double limit_s, const char *until, double *quarantined) {
  char log[512];
  path_of(r, "learner.log", log, sizeof log);
  const double t0 = tp_now();
  while (tp_now() - t0 < limit_s && running(l, lst) &&
         !(until && tp_count(log, until) > 0)) {
    for (int i = 0; i < n; i++) hold_round(&f[i]);
    if (quarantined != NULL) {
      const double q = run_status(r, "trust", "quarantined");
      if (q > *quarantined) *quarantined = q;
    }
    tp_sleep(0.1);
  }
}

/* n withholders from address `from` (NULL: each its own, 127.0.X.Y),
 * sender ids TAG-i, every other one a searcher. */
static void withholders(hold_t *f, int n, void *ctx, const run_t *r,
                        const char *from, const char *tag) {
  for (int i = 0; i < n; i++) {
    char id[32], at[32];
    snprintf(id, sizeof id, "%s-%d", tag, i);
    snprintf(at, sizeof at, "127.0.%d.%d", 1 + i / 250, 2 + i % 250);
    hold_hello(&f[i], ctx, r->ep, from ? from : at, id,
               i % 2 ? PB_ROLE_SEARCHER : PB_ROLE_ACTOR);
  }
}

static void withholders_close(hold_t *f, int n, void *ctx) {
  for (int i = 0; i < n; i++) zmq_close(f[i].sock);
  zmq_ctx_term(ctx);
}

/* The run r has not finished: fail, with its log. */
static void stalled(const run_t *r, const char *what) {
  char log[512];
  path_of(r, "learner.log", log, sizeof log);
  char *o = tp_slurp(log);
  fail_msg("%s stalled the run (%d iterations): %.3000s", what,
           run_iterations(r), o ? o : "");
}

#define WITHHOLDERS 100

static void test_withholders_do_not_stall_the_run(void **state) {
  (void)state;
  run_t r;
  const char *extra[] = {"train.iterations=4", "net.lease_ms=1000",
                         "net.heartbeat_ms=200", "net.lease_max_ms=3000",
                         "net.http_port=-1", NULL};
  pid_t l = run_begin(&r, NULL, "withhold", extra);
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  pid_t w[2] = {start_worker(&r, "selfplay", "actor-1", NULL),
                start_worker(&r, "search", "searcher-1", NULL)};
  int lst = -1;
  /* The honest workers deliver an iteration first. */
  assert_true(run_wait_iterations(&r, l, &lst, 1, 120));
  void *ctx = zmq_ctx_new();
  static hold_t f[WITHHOLDERS];
  withholders(f, WITHHOLDERS, ctx, &r, "127.0.0.2", "hung");
  /* Withhold until the run ends; watch /status say what they earned. */
  double quarantined = 0;
  withhold(&r, l, &lst, f, WITHHOLDERS, 240, NULL, &quarantined);
  if (running(l, &lst)) stalled(&r, "withholders");
  run_finish(&r, l, lst, 10, w, 2);
  assert_int_equal(run_iterations(&r), 4);
  /* They took items, one each at most while their address was not
   * banned (none of them ever delivered), until their address was
   * quarantined, in the first phases they saw (4 self-play and 6 search
   * items); the ban of an address ends (a temporary measure: a keyless
   * run cannot tell withholders from honest workers behind one NAT), and
   * then each may take one more. */
  int most, given = hold_given(f, WITHHOLDERS, &most);
  const int bans = tp_count(log, "address 127.0.0.2 is quarantined");
  print_message("withholders were handed %d items (at most %d each); their "
                "address was banned %d times\n", given, most, bans);
  assert_true(given >= 3);
  assert_true(bans >= 1);
  assert_true(most <= 1 + bans);
  assert_true(given <= 20 * (1 + bans));
  assert_true(quarantined >= 1);
  assert_true(tp_count(log, "quarantined (its address)") >= 1);
  withholders_close(f, WITHHOLDERS, ctx);
}

#define NEIGHBOURS 10

/* Without keys: withholders on the honest workers' own address
 * (127.0.0.1, as behind one NAT) until that address is banned; the honest
 * searcher restarts then. The ban is a temporary measure: it ends after
 * 2 x net.lease_ms, the new searcher is served again and the run finishes
 * (before: refused as quarantined for good, the run froze until
 * no_workers_exit_s). */
static void test_shared_address_ban_ends(void **state) {
  (void)state;
  run_t r;
  const char *extra[] = {"train.iterations=4", "net.lease_ms=2000",
                         "net.heartbeat_ms=200", "net.lease_max_ms=6000",
                         NULL};
  pid_t l = run_begin(&r, NULL, "natban", extra);
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  pid_t a = start_worker(&r, "selfplay", "actor-1", NULL);
  pid_t s = start_worker(&r, "search", "searcher-1", NULL);
  int lst = -1;
  assert_true(run_wait_iterations(&r, l, &lst, 1, 120));
  void *ctx = zmq_ctx_new();
  static hold_t f[NEIGHBOURS];
  withholders(f, NEIGHBOURS, ctx, &r, "127.0.0.1", "neighbour");
  withhold(&r, l, &lst, f, NEIGHBOURS, 120, "address 127.0.0.1 is quarantined",
           NULL);
  assert_true(tp_count(log, "address 127.0.0.1 is quarantined") >= 1);
  /* The honest searcher restarts while its address is banned; the
   * withholders go on. */
  kill(s, SIGKILL);
  tp_wait(s, 10);
  s = start_worker(&r, "search", "searcher-2", NULL);
  withhold(&r, l, &lst, f, NEIGHBOURS, 240, NULL, NULL);
  if (running(l, &lst)) stalled(&r, "the ban of a shared address");
  run_finish(&r, l, lst, 10, (pid_t[]){a, s}, 2);
  assert_int_equal(run_iterations(&r), 4);
  assert_true(tp_count(log, "searcher searcher-2 joined") >= 1);
  assert_true(tp_count(log, "its quarantine ended") >= 1);
  print_message("searcher-2 refused %d times while the ban lasted\n",
                tp_count(log, "from quarantined searcher-2"));
  withholders_close(f, NEIGHBOURS, ctx);
}

/* Withholders spread over 200 source addresses (issue 46: 3 iterations
 * in 43 s, against 30 from one address): no address and no connection
 * ever reaches a limit (each holds one item at a time, on heartbeats, and
 * the lease of up to 10 minutes never expires), so only the
 * backup copies move the run: the honest workers, with a clean record,
 * get copies of the withheld items once they are held a few item times
 * (/status leases.backup_after_s). The bound on an iteration's delay:
 * no phase waits for a withheld lease to end (no lease expires in the
 * run; it finishes in far less than the 10 minutes of one); the time of
 * each iteration is printed beside the first, before the withholders. */
#define SPREAD 200

static void test_withholders_spread_over_addresses(void **state) {
  (void)state;
  run_t r, ref;
  const char *extra[] = {"train.iterations=4", "net.lease_ms=1000",
                         "net.heartbeat_ms=200", "net.lease_max_ms=600000",
                         "net.http_port=-1", NULL};
  pid_t l = run_begin(&r, &ref, "spreadhold", extra);
  ref.extra[4] = NULL; /* the clean run serves no /status */
  pid_t w[2] = {start_worker(&r, "selfplay", "actor-1", NULL),
                start_worker(&r, "search", "searcher-1", NULL)};
  int lst = -1;
  assert_true(run_wait_iterations(&r, l, &lst, 1, 120));
  void *ctx = zmq_ctx_new();
  static hold_t f[SPREAD];
  withholders(f, SPREAD, ctx, &r, NULL, "spread");
  const double t0 = tp_now();
  double after = 0;
  while (tp_now() - t0 < 300 && running(l, &lst)) {
    withhold(&r, l, &lst, f, SPREAD, 1, NULL, NULL);
    const double b = run_status(&r, "leases", "backup_after_s");
    if (b > after) after = b;
  }
  if (running(l, &lst)) stalled(&r, "withholders on 200 addresses");
  run_finish(&r, l, lst, 10, w, 2);
  int most, given = hold_given(f, SPREAD, &most);
  double s[4], expired[4], backups[4], won[4];
  assert_int_equal(run_values(&r, "iteration_s", s, 4), 4);
  assert_int_equal(run_values(&r, "leases_expired", expired, 4), 4);
  assert_int_equal(run_values(&r, "backups", backups, 4), 4);
  assert_int_equal(run_values(&r, "backups_won", won, 4), 4);
  print_message("200 withholders on 200 addresses were handed %d items (at "
                "most %d each); the run took %.0f s after they came; backup "
                "copies after %.1f s of a lease at most\n",
                given, most, tp_now() - t0, after);
  /* (backups and leases expired are counted over the run) */
  for (int i = 0; i < 4; i++)
    print_message("iteration %d: %.1f s; by its end %.0f backups (%.0f "
                  "won), %.0f leases expired\n",
                  i + 1, s[i], backups[i], won[i], expired[i]);
  assert_true(given >= 1);
  assert_true(backups[3] >= 1);
  assert_true(expired[3] == 0);
  withholders_close(f, SPREAD, ctx);
  /* What was trained: the clean run's (the same games; the targets to
   * float rounding, as in test_backup.c). */
  run_clean(&ref);
  run_against_clean(&r, &ref, 4, 1e-5, NULL);
}

#define FLOODERS 150

/* A table of 64 peers and 150 connections sending heartbeats as fast as
 * they can: the workers that hold leases stay in the table (none of their
 * results is refused as not the holder's), and the run finishes. */
static void test_heartbeat_flood_keeps_lease_holders(void **state) {
  (void)state;
  run_t r;
  const char *extra[] = {"train.iterations=3", "net.max_workers=64", NULL};
  pid_t l = run_begin(&r, NULL, "hbflood", extra);
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  void *ctx = zmq_ctx_new();
  static void *s[FLOODERS];
  for (int i = 0; i < FLOODERS; i++)
    s[i] = run_peer_from(ctx, r.ep, "127.0.0.2", 0);
  pid_t w[2] = {start_worker(&r, "selfplay", "actor-1", NULL),
                start_worker(&r, "search", "searcher-1", NULL)};
  int lst = -1;
  const double t0 = tp_now();
  uint64_t bogus = 12345;
  while (tp_now() - t0 < 240 && running(l, &lst)) {
    for (int i = 0; i < FLOODERS; i++) {
      char id[32];
      snprintf(id, sizeof id, "flood-%d", i);
      pb_msg_t m;
      pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, PB_GAME_CONNECT4, id);
      m.heartbeat.item_ids = &bogus;
      m.heartbeat.n_item_ids = 1;
      tp_peer_send(s[i], &m);
    }
    tp_sleep(0.005);
  }
  if (running(l, &lst)) stalled(&r, "the heartbeat flood");
  run_finish(&r, l, lst, 10, w, 2);
  assert_int_equal(run_iterations(&r), 3);
  assert_int_equal(tp_count(log, "does not hold that item's lease"), 0);
  assert_true(tp_count(log, "from 127.0.0.2 dropped: more than 32 a second") >= 1);
  for (int i = 0; i < FLOODERS; i++) zmq_close(s[i]);
  zmq_ctx_term(ctx);
}

/* The heartbeat storm of issue 46: 2,000 connections from 400 addresses
 * (127.0.X.Y, 5 each) sending heartbeats for an item none holds, as fast
 * as this process can, against the default table of 1,024 peers, from the
 * end of the first iteration on: a smaller form of the measurement in
 * docs/reliability.md (run through a fourth iteration: 57.5 s against
 * 1.4 s, too long for the suite). The honest run finishes, with the storm
 * at the learner (/status messages: it falls far behind). The limits that
 * could stop a storm are printed, not asserted: the per-address one counts
 * new connections (trust.connections_limited: a burst of 128, then 32 a
 * second), which 5 connections an address never reach, and the table
 * (trust.peers_table_full) makes room by dropping an idle entry rather
 * than refusing one; measured: neither triggers. What the storm costs
 * (each iteration's time) is printed, not asserted. */
#define STORM 2000
#define STORM_ADDRS 400

static void test_heartbeat_storm_from_many_addresses(void **state) {
  (void)state;
  run_t r, ref;
  const char *extra[] = {"train.iterations=3", "net.http_port=-1", NULL};
  pid_t l = run_begin(&r, &ref, "hbstorm", extra);
  ref.extra[1] = NULL; /* the clean run serves no /status */
  pid_t w[2] = {start_worker(&r, "selfplay", "actor-1", NULL),
                start_worker(&r, "search", "searcher-1", NULL)};
  int lst = -1;
  assert_true(run_wait_iterations(&r, l, &lst, 1, 120));
  const double before = run_status(&r, NULL, "messages");
  void *ctx = zmq_ctx_new();
  assert_int_equal(zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, STORM + 64), 0);
  static void *s[STORM];
  for (int i = 0; i < STORM; i++) {
    char at[32];
    const int a = i % STORM_ADDRS;
    snprintf(at, sizeof at, "127.0.%d.%d", 1 + a / 250, 2 + a % 250);
    s[i] = run_peer_from(ctx, r.ep, at, 0);
  }
  const double t0 = tp_now();
  uint64_t bogus = 12345, sent = 0;
  double limited = 0, full = 0, seen = 0;
  while (tp_now() - t0 < 400 && running(l, &lst)) {
    for (int i = 0; i < STORM; i++) {
      char id[32];
      snprintf(id, sizeof id, "storm-%d", i);
      pb_msg_t m;
      pb_msg_init(&m, PB_MSG_HEARTBEAT, RUN, PB_GAME_CONNECT4, id);
      m.heartbeat.item_ids = &bogus;
      m.heartbeat.n_item_ids = 1;
      tp_peer_send(s[i], &m);
      sent++;
    }
    const double c = run_status(&r, "trust", "connections_limited");
    const double f = run_status(&r, "trust", "peers_table_full");
    const double n = run_status(&r, NULL, "messages");
    if (c > limited) limited = c;
    if (f > full) full = f;
    if (n - before > seen) seen = n - before;
  }
  if (running(l, &lst)) stalled(&r, "the heartbeat storm");
  run_finish(&r, l, lst, 10, w, 2);
  assert_int_equal(run_iterations(&r), 3);
  double it[3];
  assert_int_equal(run_values(&r, "iteration_s", it, 3), 3);
  print_message("storm: %llu heartbeats sent on %d connections from %d "
                "addresses in %.0f s, %.0f messages taken by the learner "
                "meanwhile; /status: %.0f new connections' messages dropped "
                "by the per-address rate, %.0f for a full table\n",
                (unsigned long long)sent, STORM, STORM_ADDRS, tp_now() - t0,
                seen, limited, full);
  print_message("iteration 1 (no storm; the workers' start) %.1f s; "
                "iterations 2 and 3 (storm) %.1f s and %.1f s\n", it[0], it[1],
                it[2]);
  assert_true(seen >= 1); /* it reached the learner (which falls behind) */
  for (int i = 0; i < STORM; i++) zmq_close(s[i]);
  zmq_ctx_term(ctx);
  /* Honest workers alone did the work: the clean run's targets. */
  run_clean(&ref);
  run_against_clean(&r, &ref, 3, 1e-5, NULL);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_withholders_do_not_stall_the_run,
                                tp_teardown),
      cmocka_unit_test_teardown(test_shared_address_ban_ends, tp_teardown),
      cmocka_unit_test_teardown(test_heartbeat_flood_keeps_lease_holders,
                                tp_teardown),
      cmocka_unit_test_teardown(test_withholders_spread_over_addresses,
                                tp_teardown),
      cmocka_unit_test_teardown(test_heartbeat_storm_from_many_addresses,
                                tp_teardown),
  };
  /* PB_TEST_FILTER=NAME runs the tests whose names match (cmocka's
   * pattern), as when one is debugged. */
  if (getenv("PB_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("PB_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
