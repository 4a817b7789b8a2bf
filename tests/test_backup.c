/* test_backup.c - no item can stall an iteration (issue 46): a worker that
 * takes items, heartbeats for them and never answers (hung, or stalling
 * the run on purpose) holds each for net.lease_max_ms (10 minutes) as far
 * as its lease goes; the learner hands an idle worker with a clean record
 * a backup copy of such an item once it has been held a few times longer
 * than the phase's items take (common/net/workq.h: pb_workq_lease_copy,
 * learner/peers.c), takes the first result and drops the other.
 *
 * A real learner of connect4-smoke, a real actor and a real searcher, and
 * beside them a hung actor and a hung searcher written here with the wire
 * codec (one connection each, from the honest workers' address: a keyless
 * run cannot tell them apart by address). The run finishes its iterations
 * (before the fix, self-play waited 10 minutes for the hung item), the
 * log names the long leases and the copies, /status and metrics.jsonl
 * count them, and the run trains on what the clean in-process run of the
 * same seed trains on (the same games and positions; the mean Q-target to
 * float rounding). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zmq.h>

#include "game.h"
#include "msg.h"
#include "peer_fixtures.h"
#include "http_fixtures.h"
#include "proc.h"
#include "run_fixtures.h"

static void test_hung_workers_are_backed_up(void **state) {
  (void)state;
  run_t r, ref;
  /* The setting: a lease lives up to 10 minutes on heartbeats. */
  const char *extra[] = {"net.lease_max_ms=600000", "net.http_port=-1", NULL};
  pid_t l = run_begin(&r, &ref, "backup", extra);
  ref.extra[1] = NULL; /* the clean run serves no /status */
  assert_true(r.http > 0);
  void *ctx = zmq_ctx_new();
  hold_t h[2];
  hold_hello(&h[0], ctx, r.ep, NULL, "hung-actor", PB_ROLE_ACTOR);
  hold_hello(&h[1], ctx, r.ep, NULL, "hung-searcher", PB_ROLE_SEARCHER);
  /* The hung actor takes its self-play item before the honest workers
   * come. */
  for (int i = 0; i < 600 && h[0].given == 0; i++) {
    hold_round(&h[0]);
    hold_round(&h[1]);
    tp_sleep(0.05);
  }
  assert_true(h[0].given >= 1);
  pid_t a = start_worker(&r, "selfplay", "actor-1", NULL);
  pid_t s = start_worker(&r, "search", "searcher-1", NULL);
  int lst = -1;
  double backups = 0, longest = 0;
  const double t0 = tp_now();
  while (running(l, &lst) && tp_now() - t0 < 400) {
    hold_round(&h[0]);
    hold_round(&h[1]);
    char *st = http_get(r.http, "/status");
    const char *ls = st ? strstr(st, "\"leases\":") : NULL;
    const double b = number_after(ls, "\"backups\":");
    const double g = number_after(ls, "\"longest_s\":");
    if (b > backups) backups = b;
    if (g > longest) longest = g;
    free(st);
    tp_sleep(0.1);
  }
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  if (lst == -1) {
    char *o = tp_slurp(log);
    fail_msg("hung workers stalled the run (%d iterations in %.0f s): %.3000s",
             run_iterations(&r), tp_now() - t0,
             o ? o : "");
  }
  run_finish(&r, l, lst, 60, (pid_t[]){a, s}, 2);
  zmq_close(h[0].sock);
  zmq_close(h[1].sock);
  zmq_ctx_term(ctx);
  print_message("hung actor given %d items, hung searcher %d; the run took "
                "%.0f s; /status saw %.0f backups, a lease of %.1f s\n",
                h[0].given, h[1].given, tp_now() - t0, backups, longest);
  /* Both hung workers held items; each was copied and the copy counted. */
  assert_true(h[1].given >= 1);
  assert_true(tp_count(log, "a backup copy goes to actor-1") >= 1);
  assert_true(tp_count(log, "a backup copy goes to searcher-1") >= 1);
  assert_true(tp_count(log, "held by hung-") >= 2);
  assert_true(backups >= 1);
  assert_true(longest >= 1.0);
  double won[4];
  assert_int_equal(run_values(&r, "backups_won", won, 4), 2);
  assert_true(won[1] >= 2);

  /* What was trained is what the clean in-process run trains on: the
   * same games (positions), the same positions to search, and the same
   * targets to float rounding: the searcher did the copied item after the
   * others, so its cache held values of other batches (docs/
   * reliability.md: a network's last bits depend on the batch), which
   * moves targets_crc, not the mean. */
  run_clean(&ref);
  static const char *const same[] = {"positions", "distinct_positions"};
  for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) {
    double x[4], y[4];
    assert_int_equal(run_values(&r, same[k], x, 4), 2);
    assert_int_equal(run_values(&ref, same[k], y, 4), 2);
    for (int i = 0; i < 2; i++) {
      print_message("%s of iteration %d: %.0f, clean run %.0f\n", same[k],
                    i + 1, x[i], y[i]);
      assert_true(x[i] == y[i]);
    }
  }
  run_against_clean(&r, &ref, 2, 1e-5, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_hung_workers_are_backed_up, tp_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
