/* test_liars.c - the lying searchers of issue 46's table, each a process
 * test: a real learner of connect4-smoke and a real actor over loopback,
 * the liars written here (tests/liar_fixtures.h: honest targets searched
 * with the learner's own networks, then the lie), and what the run
 * trained beside the clean in-process run of the same seed (targets_crc
 * and the mean Q-target of each iteration):
 *   - two colluding searchers adding +0.019 to every target, and no honest
 *     one (issue 46: 70,060 lies, 0 quarantines): each is judged against
 *     the learner's own re-search, not against the other searchers, and
 *     both are quarantined; the targets trained are the clean run's;
 *   - +1 on 2% of the positions, from the start (issue 46: caught in
 *     iteration 4, about 44 lying items trained before), and after an
 *     honest history longer than the decayed tallies remember (issue 46:
 *     honest for 300 results, then the lie: 244 lying items trained, never
 *     caught): both caught, within the same bound of lying items trained
 *     before the catch (LIE_BOUND below says why that bound);
 *   - the same +1 on 2%, keyless, with a new connection, source address
 *     and sender id for every item, beside an honest searcher: no identity
 *     lives long enough to be judged, so what stops a lie is the check of
 *     its own item (on probation, a quarter of its positions); the test
 *     says what passes, measured. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <zmq.h>

#include "game.h"
#include "msg.h"
#include "peer_fixtures.h"
#include "proc.h"
#include "run_fixtures.h"
#include "liar_fixtures.h"

/* Two searchers that add 0.019 to every target (under the 0.02 tolerance
 * of one position), from two hosts (127.0.0.2 and 127.0.0.3), taking turns
 * at the learner's items, and no honest searcher until both are refused:
 * the other searchers lean as much as each (the colluder), but the lean
 * test judges each against the learner's own search, so both are
 * quarantined; their items of the iteration are redone by the honest
 * searcher that comes then, and the targets trained are the clean run's. */
static void test_colluding_leaners_quarantined(void **state) {
  (void)state;
  scene_t s;
  const char *extra[] = {"train.iterations=2", "train.episodes_per_iter=40",
                         "net.item_states=16", "net.spot_check=0.05", NULL};
  scene_begin(&s, "collude", extra, NULL, 0);
  liar_t x[2];
  liar_open(&x[0], &s.r, s.ctx, LIE_LEAN, "127.0.0.2", "colluder-1", 0, 0);
  liar_open(&x[1], &s.r, s.ctx, LIE_LEAN, "127.0.0.3", "colluder-2", 0, 0);
  const double t0 = tp_now();
  while (tp_now() - t0 < 240 && running(s.learner, &s.lst) &&
         !(x[0].refused && x[1].refused))
    for (int k = 0; k < 2; k++)
      if (!x[k].refused) liar_step(&x[k]);
  for (int k = 0; k < 2; k++) liar_close(&x[k]);
  scene_end(&s);
  print_message("the colluders answered %d and %d items, refused %d and %d "
                "times\n", x[0].answered, x[1].answered, x[0].refused,
                x[1].refused);
  assert_true(x[0].refused && x[1].refused);
  assert_true(tp_count(s.log, "searcher colluder-1 (address 127.0.0.2") >= 1);
  assert_true(tp_count(s.log, "searcher colluder-2 (address 127.0.0.3") >= 1);
  assert_true(tp_count(s.log, "its targets lean by +0.0") >= 2);
  run_clean(&s.ref);
  int same;
  run_against_clean(&s.r, &s.ref, 2, 0.005, &same);
  print_message("targets_crc the clean run's in %d of 2 iterations\n", same);
}

/* ---- +1 on 2% of the positions ---------------------------------------- */

/* The check searches again net.spot_check = 10% of each item's distinct
 * positions here (each at least that likely; a quarter while the
 * connection is on probation, its first 30 checked). A liar is caught
 * once 3 of its checked positions disagree and more than 1% of them
 * (net.spot_check_max_disagree), or its decayed recent ones weigh 3.5
 * disagreements and more than 1% (common/learn/spotcheck.h): with 2% of
 * its positions lies, about 3 checked lies from the start, about 6 after
 * an honest history (the decayed counts reach 3.5 after about 290 checked
 * positions), 10 at the most in all likelihood. A lying item is trained
 * only when none of its lies was checked and its iteration closed before
 * the catch, so each holds at least one lie left unchecked before the
 * catch; and the lies left unchecked before the 10th checked one (a
 * negative binomial, each checked with probability 0.1 or more) exceed
 * 300 with probability under 2e-6. So LIE_BOUND: 300, against about 44
 * in issue 46 at the smoke config's 1% share. */
#define LIE_SHARE "net.spot_check=0.1"
#define LIE_BOUND 300
/* Checked positions of an honest history longer than the decayed tallies
 * remember (PB_SPOT_RECENT, 256): its whole-run tally alone would dilute
 * the lie. */
#define HONEST_CHECKED 300

typedef struct {
  int answered_honestly; /* results before the first lie */
  int lying_items;       /* delivered before the catch */
  int lies;
  int trained;           /* lying items trained */
  int caught_iteration;  /* 1-based */
  int first_lie_iteration;
} spike_t;

/* A +1-on-2% liar alone at the learner's search items, lying from the
 * start (honest_checked 0) or once the learner has checked honest_checked
 * of its positions; an honest searcher joins once it is refused. */
static spike_t spike_run(const char *tag, int honest_checked, int iters) {
  scene_t s;
  char its[64];
  snprintf(its, sizeof its, "train.iterations=%d", iters);
  const char *extra[] = {its, "net.item_states=16", LIE_SHARE, NULL};
  const char *own[] = {"net.http_port=-1", NULL};
  scene_begin(&s, tag, extra, own, 0);
  liar_t x;
  liar_open(&x, &s.r, s.ctx, LIE_SPIKE, NULL, "spiker",
            honest_checked > 0 ? INT_MAX : 0, 0);
  spike_t out = {0};
  const double t0 = tp_now();
  while (tp_now() - t0 < 400 && running(s.learner, &s.lst) && !x.refused) {
    liar_step(&x);
    if (x.honest_first == INT_MAX &&
        run_status(&s.r, "spot_check", "checked") >= honest_checked) {
      x.honest_first = x.answered;
      out.answered_honestly = x.answered;
      out.first_lie_iteration = x.last_version + 1;
    }
  }
  liar_close(&x);
  scene_end(&s);
  assert_true(x.refused >= 1); /* caught within the run */
  out.lying_items = x.lying_items_caught;
  out.lies = x.lies;
  out.trained = liar_trained(&x, &s.r, iters);
  out.caught_iteration = x.caught_version + 1;
  print_message("%s: honest for %d results, then %d lies in %d items from "
                "iteration %d; caught in iteration %d; %d lying items "
                "trained\n",
                tag, out.answered_honestly, out.lies, out.lying_items,
                out.first_lie_iteration > 0 ? out.first_lie_iteration : 1,
                out.caught_iteration, out.trained);
  run_clean(&s.ref);
  run_against_clean(&s.r, &s.ref, iters, -1, NULL);
  return out;
}

static void test_spike_liar_from_start(void **state) {
  (void)state;
  spike_t s = spike_run("spike", 0, 10);
  assert_true(s.trained >= 0);
  assert_true(s.trained <= LIE_BOUND);
}

/* Trust that can be lost: honest until the learner has checked
 * HONEST_CHECKED of its positions, then the same lie; caught within the
 * same bound as the liar from the start (the tallies' decayed counts). */
static void test_spike_liar_after_trust(void **state) {
  (void)state;
  spike_t s = spike_run("trustlost", HONEST_CHECKED, 20);
  assert_true(s.answered_honestly >= 1);
  assert_true(s.trained >= 0);
  assert_true(s.trained <= LIE_BOUND);
}

/* Keyless, +1 on 2% of the positions, a new connection, source address
 * (127.0.X.Y) and sender id for every item, beside an honest searcher,
 * at the smoke config's own check share (1%): no connection lives to be
 * judged and no address has three disagreeing connections, so nothing is
 * quarantined; each item is on probation (a quarter of its positions
 * checked, within the phase's budget), and a checked lie throws its item
 * away. What passes: the lying items none of whose lies was checked,
 * counted here (delivered less thrown). With CURVE keys the key's tally
 * quarantines such a liar (test_poison.c:
 * test_curve_liar_bans_only_its_key). */
static void test_spike_liar_hopping(void **state) {
  (void)state;
  scene_t s;
  const char *extra[] = {"train.iterations=8", "net.item_states=16", NULL};
  const char *own[] = {"net.http_port=-1", NULL};
  scene_begin(&s, "spikehop", extra, own, 1);
  liar_t x;
  liar_open(&x, &s.r, s.ctx, LIE_SPIKE, NULL, "hop", 0, 1);
  double probation = 0;
  const double t0 = tp_now();
  while (tp_now() - t0 < 300 && running(s.learner, &s.lst)) {
    liar_step(&x);
    const double p = run_status(&s.r, "spot_check", "probation_checked");
    if (p > probation) probation = p;
  }
  liar_close(&x);
  scene_end(&s);
  /* The run's counts, from its last iteration line. */
  double v[8];
  assert_int_equal(run_values(&s.r, "search_items_thrown", v, 8), 8);
  const double thrown = v[7];
  assert_int_equal(run_values(&s.r, "spot_disagree", v, 8), 8);
  const double disagree = v[7];
  assert_int_equal(run_values(&s.r, "spot_checked", v, 8), 8);
  const double checked = v[7];
  const int trained = liar_trained(&x, &s.r, 8);
  print_message("the hopping liar answered %d items on %d connections: %d "
                "lies in %d items; the learner checked %.0f positions (%.0f "
                "on probation), %.0f disagreed, %.0f items thrown; %d lying "
                "items trained\n",
                x.answered, x.hops, x.lies, x.lying_items, checked, probation,
                disagree, thrown, trained);
  /* Each item of a new identity is checked on probation; every checked
   * lie throws its item (a disagreement is a lie: the honest searcher's
   * targets agree); none of its connections is refused. */
  assert_true(probation >= 1);
  assert_true(disagree == 0 || thrown >= 1);
  assert_true(thrown <= x.lying_items);
  assert_int_equal(x.refused, 0);
  assert_int_equal(tp_count(s.log, "is quarantined"), 0);
  run_clean(&s.ref);
  run_against_clean(&s.r, &s.ref, 8, -1, NULL);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_colluding_leaners_quarantined,
                                tp_teardown),
      cmocka_unit_test_teardown(test_spike_liar_from_start, tp_teardown),
      cmocka_unit_test_teardown(test_spike_liar_after_trust, tp_teardown),
      cmocka_unit_test_teardown(test_spike_liar_hopping, tp_teardown),
  };
  if (getenv("PB_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("PB_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
