/* test_engine_katago.c - the analysis engine's KataGo fields and actions
 * (common/play/engine.h, docs/analysis.md "KataGo's fields"): moves as
 * [player, move] pairs, analyzeTurns, maxVisits, priority, includePolicy,
 * includeOwnership, boardXSize/boardYSize, the KataGo fields that do not
 * apply (each refused naming itself), moveInfos and rootInfo against the
 * searches, and the actions terminate (of waiting queries, and of a
 * search under way from another thread, as `probs analysis`'s reader
 * does), query_version, clear_cache, with their errors; pb_engine_stop.
 * Connect Four's shipped models: a PROBS one and an AlphaZero one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "json.h"
#include "jsonread.h"
#include "model.h"

#include "engine_fixtures.h"

static const char *const c4 = PB_SOURCE_DIR "/data/models/connect4.pbck";
static const char *const c4az =
    PB_SOURCE_DIR "/data/models/connect4-alphazero.pbck";

/* One answer line a query gets alone (malloc'd). */
static char *alone(const char *ckpt, const char *q) {
  fix_t f;
  fix_open(&f, ckpt, 64);
  query(&f, q);
  flush(&f);
  assert_int_equal(f.n, 1);
  char *s = strdup(f.line[0]);
  fix_close(&f);
  return s;
}

/* V of an answer line. */
static double v_of(fix_t *f, const char *line) {
  const pb_jval_t *a = pb_jsonr_parse(f->jr, line, strlen(line), NULL);
  assert_non_null(a);
  return num_of(a, "v");
}

/* The line of the answer whose id is the string id. */
static const char *line_of(fix_t *f, const char *id) {
  char want[128];
  snprintf(want, sizeof want, "{\"id\":\"%s\",", id);
  for (int i = 0; i < f->n; i++)
    if (strncmp(f->line[i], want, strlen(want)) == 0) return f->line[i];
  fail_msg("no answer for id %s", id);
  return NULL;
}

/* analyzeTurns and [player, move] pairs: one answer per turn, each that
 * of a query of the moves before it; the errors. */
static void test_turns_and_pairs(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4, 64);
  query(&f,
        "{\"id\":\"g\",\"moves\":[[\"B\",\"4\"],[\"W\",\"4\"],[\"x\","
        "\"5\"]],\"analyzeTurns\":[3,0,1],\"report\":[\"v\"]}");
  query(&f, "{\"id\":\"pos\",\"position\":\"4\",\"analyzeTurns\":[0]}");
  query(&f, "{\"id\":\"far\",\"moves\":[\"4\"],\"analyzeTurns\":[2]}");
  query(&f, "{\"id\":\"twice\",\"moves\":[\"4\"],\"analyzeTurns\":[1,1]}");
  query(&f, "{\"id\":\"empty\",\"moves\":[\"4\"],\"analyzeTurns\":[]}");
  query(&f, "{\"id\":\"side\",\"moves\":[[\"W\",\"4\"]]}");
  query(&f, "{\"id\":\"pair\",\"moves\":[[\"B\"]]}");
  flush(&f);
  assert_error(&f, "pos", "analyzeTurns", "needs moves");
  assert_error(&f, "far", "analyzeTurns", "not a turn 0..1");
  assert_error(&f, "twice", "analyzeTurns", "given twice");
  assert_error(&f, "empty", "analyzeTurns", "empty");
  assert_error(&f, "side", "moves", "not the side to move");
  assert_error(&f, "pair", "moves", "not a [player, move] pair");
  static const struct {
    int turn;
    const char *moves;
  } want[] = {{3, "[\"4\",\"4\",\"5\"]"}, {0, "[]"}, {1, "[\"4\"]"}};
  for (int k = 0; k < 3; k++) {
    const pb_jval_t *a = answer_k(&f, "g", k);
    assert_int_equal((int)num_of(a, "turnNumber"), want[k].turn);
    assert_int_equal((int)num_of(a, "ply"), want[k].turn);
    double v = num_of(a, "v");
    char q[128];
    snprintf(q, sizeof q, "{\"id\":\"g\",\"moves\":%s,\"report\":[\"v\"]}",
             want[k].moves);
    char *one = alone(c4, q);
    /* The same value to float rounding (a batch may sum in another
     * order than one position alone). */
    assert_true(fabs(v_of(&f, one) - v) < 1e-5);
    free(one);
  }
  fix_close(&f);
}

/* maxVisits is budget by KataGo's name; the settings and the KataGo
 * fields that do not apply. */
static void test_fields(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4, 64);
  query(&f,
        "{\"id\":\"mv\",\"report\":[\"move\"],\"agent\":\"abnet\","
        "\"maxVisits\":300}");
  query(&f,
        "{\"id\":\"bud\",\"report\":[\"move\"],\"agent\":\"abnet\","
        "\"budget\":300}");
  query(&f, "{\"id\":\"both\",\"budget\":3,\"maxVisits\":3}");
  query(&f, "{\"id\":\"range\",\"agent\":\"lookahead\",\"maxVisits\":9}");
  query(&f,
        "{\"id\":\"size\",\"boardXSize\":7,\"boardYSize\":6,"
        "\"report\":[\"v\"]}");
  query(&f, "{\"id\":\"xsize\",\"boardXSize\":19}");
  query(&f, "{\"id\":\"ysize\",\"boardYSize\":7}");
  query(&f, "{\"id\":\"prio\",\"priority\":\"high\"}");
  query(&f, "{\"id\":\"pol\",\"includePolicy\":true}");
  query(&f, "{\"id\":\"polstr\",\"includePolicy\":1}");
  query(&f, "{\"id\":\"own\",\"includeOwnership\":true}");
  query(&f, "{\"id\":\"ownf\",\"includeOwnership\":false,\"report\":[\"v\"]}");
  query(&f, "{\"id\":\"rds\",\"reportDuringSearchEvery\":0}");
  query(&f, "{\"id\":\"rdss\",\"reportDuringSearchEvery\":\"1\"}");
  query(&f, "{\"id\":\"komi\",\"komi\":7.5}");
  query(&f, "{\"id\":\"rules\",\"rules\":\"tromp-taylor\"}");
  query(&f, "{\"id\":\"init\",\"initialStones\":[]}");
  query(&f, "{\"id\":\"typo\",\"maxVisit\":3}");
  flush(&f);
  char *mv = strdup(str_of(answer(&f, "mv"), "move"));
  assert_string_equal(str_of(answer(&f, "bud"), "move"), mv);
  free(mv);
  assert_string_equal(str_of(answer(&f, "mv"), "agent"), "abnet,nodes=300");
  assert_error(&f, "both", "maxVisits", "not both");
  assert_error(&f, "range", "maxVisits", "out of range for lookahead");
  assert_null(str_of(answer(&f, "size"), "error"));
  assert_error(&f, "xsize", "boardXSize", "must be 7");
  assert_error(&f, "ysize", "boardYSize", "must be 6");
  assert_error(&f, "prio", "priority", "integer");
  assert_error(&f, "pol", "includePolicy", "no policy");
  assert_error(&f, "polstr", "includePolicy", "true or false");
  assert_error(&f, "own", "includeOwnership", "no ownership");
  assert_null(str_of(answer(&f, "ownf"), "error"));
  assert_error(&f, "rds", "reportDuringSearchEvery", "0.01..3600");
  assert_error(&f, "rdss", "reportDuringSearchEvery", "0.01..3600");
  assert_error(&f, "komi", "komi", "no komi");
  assert_error(&f, "rules", "rules", "one set of rules");
  assert_error(&f, "init", "initialStones", "give the moves");
  assert_error(&f, "typo", "maxVisit", "unknown field \"maxVisit\"");
  fix_close(&f);
}

/* Within a batch the highest priority is answered first, ties in the
 * order they came. */
static void test_priority(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4, 64);
  query(&f, "{\"id\":\"a\",\"report\":[\"v\"]}");
  query(&f, "{\"id\":\"b\",\"report\":[\"v\"],\"priority\":5}");
  query(&f, "{\"id\":\"c\",\"report\":[\"v\"],\"priority\":-1}");
  query(&f,
        "{\"id\":\"d\",\"report\":[\"move\"],\"agent\":\"random\","
        "\"priority\":5}");
  flush(&f);
  assert_int_equal(f.n, 4);
  const char *order[] = {"b", "d", "a", "c"};
  for (int k = 0; k < 4; k++) {
    char want[16];
    snprintf(want, sizeof want, "{\"id\":\"%s\",", order[k]);
    if (strncmp(f.line[k], want, strlen(want)) != 0)
      fail_msg("answer %d: %s", k, f.line[k]);
  }
  fix_close(&f);
}

/* moveInfos and rootInfo: MCTS's visits (summing to maxVisits, the most
 * visited first, its prior the policy), abnet's principal variation and
 * value, and without a search the networks' values. */
static void test_infos(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4az, 64);
  query(&f,
        "{\"id\":\"m\",\"moves\":[\"4\"],\"agent\":\"mcts\","
        "\"maxVisits\":60,\"includePolicy\":true,\"report\":[\"v\","
        "\"policy\",\"v1\",\"move\"]}");
  query(&f,
        "{\"id\":\"full\",\"position\":\"444444\",\"includePolicy\":"
        "true}");
  flush(&f);
  const pb_jval_t *a = answer(&f, "m");
  assert_false(pb_jval_bool(pb_jval_get(a, "isDuringSearch")));
  assert_int_equal((int)num_of(a, "turnNumber"), 1);
  const pb_jval_t *ri = pb_jval_get(a, "rootInfo");
  assert_int_equal((int)num_of(ri, "visits"), 60);
  assert_string_equal(str_of(ri, "currentPlayer"), "O");
  double wr = num_of(ri, "winrate");
  assert_true(wr >= 0 && wr <= 1);
  const pb_jval_t *mi = pb_jval_get(a, "moveInfos");
  const pb_jval_t *pol = pb_jval_get(a, "policy");
  assert_int_equal(pb_jval_count(mi), 7);
  assert_int_equal(pb_jval_count(pol), 7);
  int visits = 0, last = 1 << 30;
  for (size_t k = 0; k < pb_jval_count(mi); k++) {
    const pb_jval_t *m = pb_jval_at(mi, k);
    assert_int_equal((int)num_of(m, "order"), (int)k);
    const pb_jval_t *v = pb_jval_get(m, "visits");
    int n = v ? (int)pb_jval_num(v) : 0;
    assert_true(n <= last); /* the most visited first */
    last = n;
    visits += n;
    double w = num_of(m, "winrate"), p = num_of(m, "prior");
    assert_true(w >= 0 && w <= 1);
    int col = atoi(str_of(m, "move"));
    assert_true(fabs(p - pb_jval_num(pb_jval_at(pol, (size_t)col - 1))) < 1e-6);
    const pb_jval_t *pv = pb_jval_get(m, "pv");
    assert_string_equal(pb_jval_str(pb_jval_at(pv, 0), NULL),
                        str_of(m, "move"));
  }
  assert_int_equal(visits, 60);
  assert_string_equal(str_of(pb_jval_at(mi, 0), "move"), str_of(a, "move"));
  /* includePolicy: -1 for a move that is not legal (the full column). */
  a = answer(&f, "full");
  pol = pb_jval_get(a, "policy");
  double sum = 0;
  for (size_t k = 0; k < 7; k++) {
    double p = pb_jval_num(pb_jval_at(pol, k));
    if (k == 3)
      assert_true(p == -1);
    else
      sum += p;
  }
  assert_true(fabs(sum - 1) < 1e-4);
  fix_close(&f);

  fix_open(&f, c4, 64);
  query(&f,
        "{\"id\":\"ab\",\"agent\":\"abnet\",\"maxVisits\":2000,"
        "\"report\":[\"v\",\"q\",\"v1\",\"move\"]}");
  query(&f, "{\"id\":\"plain\",\"moves\":[\"4\"]}");
  flush(&f);
  a = answer(&f, "ab");
  ri = pb_jval_get(a, "rootInfo");
  assert_true(num_of(ri, "visits") > 0);
  mi = pb_jval_get(a, "moveInfos");
  const pb_jval_t *m0 = pb_jval_at(mi, 0);
  assert_string_equal(str_of(m0, "move"), str_of(a, "move"));
  assert_null(pb_jval_get(m0, "prior")); /* a probs checkpoint: no policy */
  const pb_jval_t *pv = pb_jval_get(m0, "pv");
  assert_true(pb_jval_count(pv) >= 2); /* abnet's line, deeper than 1 */
  assert_string_equal(pb_jval_str(pb_jval_at(pv, 0), NULL), str_of(a, "move"));
  for (size_t k = 1; k < pb_jval_count(mi); k++)
    assert_int_equal(pb_jval_count(pb_jval_get(pb_jval_at(mi, k), "pv")), 1);
  /* No search: no visits, the root's winrate is (1 + V) / 2, the moves
   * ranked by their value one ply deep. */
  a = answer(&f, "plain");
  ri = pb_jval_get(a, "rootInfo");
  assert_int_equal((int)num_of(ri, "visits"), 0);
  assert_true(fabs(num_of(ri, "winrate") - (1 + num_of(a, "v")) / 2) < 1e-6);
  mi = pb_jval_get(a, "moveInfos");
  for (size_t k = 1; k < pb_jval_count(mi); k++)
    assert_true(num_of(pb_jval_at(mi, k - 1), "winrate") >=
                num_of(pb_jval_at(mi, k), "winrate"));
  fix_close(&f);
}

/* The actions, as KataGo answers them, and their errors. */
static void test_actions(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4, 64);
  query(&f, "{\"id\":\"v\",\"action\":\"query_version\"}");
  query(&f,
        "{\"id\":\"g\",\"moves\":[\"4\",\"4\"],\"analyzeTurns\":[0,1,2],"
        "\"report\":[\"v\"]}");
  query(&f, "{\"id\":\"keep\",\"report\":[\"v\"]}");
  query(&f,
        "{\"id\":\"t\",\"action\":\"terminate\",\"terminateId\":\"g\","
        "\"turnNumbers\":[0,2]}");
  query(&f, "{\"id\":\"nt\",\"action\":\"terminate\"}");
  query(&f,
        "{\"id\":\"tn\",\"action\":\"terminate\",\"terminateId\":\"g\","
        "\"turnNumbers\":[-1]}");
  query(&f,
        "{\"id\":\"tx\",\"action\":\"terminate\",\"terminateId\":\"g\","
        "\"moves\":[]}");
  query(&f, "{\"id\":\"cx\",\"action\":\"clear_cache\",\"terminateId\":\"g\"}");
  query(&f, "{\"id\":\"fly\",\"action\":\"fly\"}");
  query(&f, "{\"action\":\"clear_cache\"}");
  assert_int_equal(pb_engine_waiting(f.e), 4);
  flush(&f);
  const pb_jval_t *a = answer(&f, "v");
  assert_string_equal(str_of(a, "action"), "query_version");
  assert_non_null(str_of(a, "version"));
  assert_non_null(str_of(a, "git_hash"));
  assert_string_equal(f.line[1],
                      "{\"id\":\"t\",\"action\":\"terminate\",\"terminateId\":"
                      "\"g\",\"turnNumbers\":[0,2]}");
  assert_error(&f, "nt", "terminateId", "needs terminateId");
  assert_error(&f, "tn", "turnNumbers", "turnNumbers[0]");
  assert_error(&f, "tx", "moves", "unknown field \"moves\" in an action");
  assert_error(&f, "cx", "terminateId", "for the terminate action");
  assert_error(&f, "fly", "action", "not one of");
  int noid = 0;
  for (int i = 0; i < f.n; i++)
    noid += strstr(f.line[i], "{\"id\":null,\"error\":\"the query has no id") ==
            f.line[i];
  assert_int_equal(noid, 1);
  /* Turns 0 and 2 terminated before they were searched; 1 answered. */
  for (int k = 0; k < 3; k++) {
    a = answer_k(&f, "g", k);
    int turn = (int)num_of(a, "turnNumber");
    if (turn == 1) {
      assert_non_null(pb_jval_get(a, "v"));
    } else {
      assert_true(pb_jval_bool(pb_jval_get(a, "noResults")) == 1);
      assert_false(pb_jval_bool(pb_jval_get(a, "isDuringSearch")));
      assert_null(pb_jval_get(a, "v"));
    }
  }
  assert_non_null(pb_jval_get(answer(&f, "keep"), "v"));
  /* clear_cache: echoed, and the same query answers the same after (to
   * float rounding: alone, not in a batch). */
  double before = v_of(&f, line_of(&f, "keep"));
  clear(&f);
  pb_engine_stats_t s0, s1, s2;
  pb_engine_stats(f.e, &s0);
  query(&f, "{\"id\":\"again\",\"report\":[\"v\"]}");
  flush(&f);
  pb_engine_stats(f.e, &s1);
  assert_int_equal(s1.net_calls, s0.net_calls); /* V cached */
  clear(&f);
  query(&f, "{\"id\":\"c\",\"action\":\"clear_cache\"}");
  assert_string_equal(f.line[0], "{\"id\":\"c\",\"action\":\"clear_cache\"}");
  query(&f, "{\"id\":\"keep\",\"report\":[\"v\"]}");
  flush(&f);
  assert_true(fabs(v_of(&f, f.line[1]) - before) < 1e-5);
  pb_engine_stats(f.e, &s2);
  assert_int_equal(s2.net_calls, s1.net_calls + 1); /* the cache was cleared */
  fix_close(&f);
}

/* reportDuringSearchEvery: partial answers (isDuringSearch true) while
 * the search runs, their visits growing, then exactly one final answer;
 * a query of the same batch that did not ask gets none. MCTS at 3000
 * simulations (seconds here) reported every 0.05 s: several partials. */
static void test_during_search(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4az, 64);
  query(&f, "{\"id\":\"m\",\"agent\":\"mcts\",\"maxVisits\":3000,"
            "\"reportDuringSearchEvery\":0.05}");
  query(&f, "{\"id\":\"quiet\",\"agent\":\"mcts\",\"maxVisits\":50,"
            "\"moves\":[\"4\"]}");
  flush(&f);
  int partials = 0, finals = 0;
  double last = 0;
  for (int k = 0; k < f.n; k++) {
    const pb_jval_t *a = parsed(&f, k);
    const char *id = str_of(a, "id");
    if (strcmp(id, "quiet") == 0) {
      assert_false(pb_jval_bool(pb_jval_get(a, "isDuringSearch")));
      continue;
    }
    double visits = num_of(pb_jval_get(a, "rootInfo"), "visits");
    const pb_jval_t *mi = pb_jval_get(a, "moveInfos");
    assert_string_equal(str_of(pb_jval_at(mi, 0), "move"), str_of(a, "move"));
    if (pb_jval_bool(pb_jval_get(a, "isDuringSearch")) == 1) {
      assert_int_equal(finals, 0); /* partials come first */
      assert_true(visits >= last && visits < 3000);
      last = visits;
      partials++;
    } else {
      assert_true(visits == 3000);
      finals++;
    }
  }
  assert_int_equal(finals, 1);
  assert_true(partials >= 1);
  pb_engine_stats_t st;
  pb_engine_stats(f.e, &st);
  assert_int_equal(st.queries, 2); /* partials are not answers */
  fix_close(&f);
}

/* ---- stopping a search from another thread ------------------------------- */

typedef struct {
  pb_engine_t *e;
  const char *line; /* a terminate to notice; NULL: pb_engine_stop */
} stopper_t;

static void *stopper(void *arg) {
  stopper_t *s = arg;
  struct timespec t = {0, 300 * 1000000L};
  nanosleep(&t, NULL);
  if (s->line != NULL)
    pb_engine_notice(s->e, s->line, strlen(s->line));
  else
    pb_engine_stop(s->e);
  return NULL;
}

/* A terminate noticed while a search of 100000 simulations (minutes
 * unbounded) runs stops it: that query is answered noResults, the other
 * query of the same agent call is searched again and answered, a query
 * of another agent is answered; then the terminate line itself is
 * echoed. Whether the notice comes before or during the search, the
 * answers are the same. */
static void test_terminate_running(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4az, 64);
  query(&f, "{\"id\":\"long\",\"agent\":\"mcts\",\"maxVisits\":100000}");
  query(&f,
        "{\"id\":\"mate\",\"agent\":\"mcts\",\"maxVisits\":100000,"
        "\"position\":\"1212121\"}");
  query(&f, "{\"id\":\"short\",\"agent\":\"mcts\",\"maxVisits\":30}");
  const char *t =
      "{\"id\":\"t\",\"action\":\"terminate\",\"terminateId\":"
      "\"long\"}";
  stopper_t s = {f.e, t};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, stopper, &s), 0);
  flush(&f);
  pthread_join(th, NULL);
  assert_true(pb_jval_bool(pb_jval_get(answer(&f, "long"), "noResults")) == 1);
  assert_string_equal(str_of(answer(&f, "mate"), "result"), "X wins");
  const pb_jval_t *a = answer(&f, "short");
  assert_int_equal((int)num_of(pb_jval_get(a, "rootInfo"), "visits"), 30);
  query(&f, t);
  assert_string_equal(f.line[f.n - 1], t);
  assert_false(pb_engine_stopping(f.e));
  fix_close(&f);
}

/* pb_engine_stop during a search of 10^8 evaluations: answered noResults
 * at once; so is every later search; the values still come. */
static void test_stop(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, c4, 64);
  query(&f, "{\"id\":\"long\",\"agent\":\"abnet\",\"maxVisits\":100000000}");
  stopper_t s = {f.e, NULL};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, stopper, &s), 0);
  flush(&f);
  pthread_join(th, NULL);
  assert_true(pb_engine_stopping(f.e));
  assert_true(pb_jval_bool(pb_jval_get(answer(&f, "long"), "noResults")) == 1);
  query(&f, "{\"id\":\"later\",\"agent\":\"beam\",\"maxVisits\":100000}");
  query(&f, "{\"id\":\"plain\",\"report\":[\"v\"]}");
  flush(&f);
  assert_true(pb_jval_bool(pb_jval_get(answer(&f, "later"), "noResults")) == 1);
  assert_non_null(pb_jval_get(answer(&f, "plain"), "v"));
  fix_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_turns_and_pairs),
      cmocka_unit_test(test_fields),
      cmocka_unit_test(test_priority),
      cmocka_unit_test(test_infos),
      cmocka_unit_test(test_actions),
      cmocka_unit_test(test_during_search),
      cmocka_unit_test(test_terminate_running),
      cmocka_unit_test(test_stop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
