/* test_progress.c - the terminal's lines for metrics.jsonl events
 * (cli/progress.h): what an iteration and an evaluation read like, the
 * ETA, lines of no interest, malformed lines and truncation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progress.h"

/* HH:MM:SS of UNIX time t in local time, as the lines print it. */
static void clock_of(double t, char *buf, size_t n) {
  time_t tt = (time_t)t;
  struct tm tm;
  localtime_r(&tt, &tm);
  snprintf(buf, n, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void test_iteration(void **state) {
  (void)state;
  pb_progress_t p;
  const double t0 = 1795000000.0;
  pb_progress_init(&p, 100, t0);
  char line[1024], want[1024], clk[16];
  const char *json =
      "{\"time\":\"x\",\"unix_time\":1795000185.25,\"event\":\"iteration\","
      "\"mode\":\"distributed\",\"iteration\":12,\"version\":12,"
      "\"episodes\":1000,\"positions\":20586,\"targets_crc\":3289823962,"
      "\"selfplay_s\":0.41037,\"train_v_s\":5.236,\"search_s\":9.2788,"
      "\"train_q_s\":4.715,\"iteration_s\":15.0,\"v_loss\":0.2073217,"
      "\"q_loss\":0.03016006,\"v_loss_last\":0.2,"
      "\"selfplay_positions_per_s\":50164.4,\"search_states_per_s\":1743.1,"
      "\"actors\":2}";
  assert_int_equal(pb_progress_line(&p, json, line, sizeof line), 1);
  clock_of(1795000185.25, clk, sizeof clk);
  snprintf(want, sizeof want,
           "%s iteration 12/100 in 15.0s (self-play 0.41, V 5.2, search 9.3, "
           "Q 4.7) | loss V 0.2073, Q 0.03016 | 50164 positions/s, 1743 "
           "states/s | elapsed 3m05s, ETA 22m00s",
           clk);
  assert_string_equal(line, want);
  /* The internal fields stay in metrics.jsonl. */
  assert_null(strstr(line, "crc"));
  assert_null(strstr(line, "last"));
}

/* The ETA is the mean of the last PB_PROGRESS_WINDOW iteration times per
 * iteration left; the last iteration has none. */
static void test_eta(void **state) {
  (void)state;
  pb_progress_t p;
  pb_progress_init(&p, 30, 1000.0);
  char json[256], line[1024];
  for (int i = 1; i <= 30; i++) {
    /* 100 s each for the first 10, then 10 s each */
    double s = i <= 10 ? 100.0 : 10.0;
    snprintf(json, sizeof json,
             "{\"unix_time\":%d,\"event\":\"iteration\",\"version\":%d,"
             "\"iteration_s\":%g}",
             1000 + i * 10, i, s);
    assert_int_equal(pb_progress_line(&p, json, line, sizeof line), 1);
    if (i == 10) assert_non_null(strstr(line, ", ETA 33m20s")); /* 20 x 100 */
    if (i == 20) assert_non_null(strstr(line, ", ETA 1m40s"));  /* 10 x 10 */
    if (i == 15) assert_non_null(strstr(line, ", ETA 13m45s")); /* 15 x 55 */
    if (i == 30) assert_null(strstr(line, "ETA"));
  }
  assert_non_null(strstr(line, "elapsed 5m00s"));
  /* Without train.iterations: no "/N" and no ETA. */
  pb_progress_init(&p, 0, 1000.0);
  assert_int_equal(pb_progress_line(&p,
                                    "{\"event\":\"iteration\",\"version\":3,"
                                    "\"iteration_s\":2}",
                                    line, sizeof line),
                   1);
  assert_string_equal(line, "iteration 3 in 2.0s");
}

static void test_eval(void **state) {
  (void)state;
  pb_progress_t p;
  pb_progress_init(&p, 10, 0);
  char line[1024];
  const char *json =
      "{\"event\":\"elo\",\"iteration\":34,\"version\":34,"
      "\"elo\":1895.26,\"elo_lo\":1847.67,\"elo_hi\":1946.39,\"note\":\"\","
      "\"games\":800,\"opponents\":{\"random\":{\"w\":200,\"d\":0,\"l\":0,"
      "\"anchor\":1000},\"lookahead:3\":{\"w\":169,\"d\":6,\"l\":25,"
      "\"anchor\":1603},\"lookahead:2\":{\"w\":171,\"d\":7,\"l\":22,"
      "\"anchor\":1501}},\"acc_q\":0.756,\"acc_v\":0.768,\"acc_beam\":0.804,"
      "\"accuracy\":{\"beam_agent\":\"E=100,M=10\",\"positions\":1000}}";
  assert_int_equal(pb_progress_line(&p, json, line, sizeof line), 1);
  assert_string_equal(line,
                      "eval v34: Elo 1895 [1848, 1946] | vs lookahead:3 "
                      "(1603): W/D/L 169/6/25 | optimal moves: Q 0.756, V "
                      "0.768, beam 0.804");
  /* The evaluator's default search agent is abnet: so named. */
  assert_int_equal(
      pb_progress_line(&p,
                       "{\"event\":\"elo\",\"version\":35,\"elo\":1900,"
                       "\"acc_q\":0.756,\"acc_v\":0.768,\"acc_beam\":0.81,"
                       "\"accuracy\":{\"beam_agent\":\"abnet nodes=500\"}}",
                       line, sizeof line),
      1);
  assert_non_null(strstr(line, "optimal moves: Q 0.756, V 0.768, abnet 0.810"));
  /* A note, no rating, no accuracy. */
  assert_int_equal(
      pb_progress_line(&p,
                       "{\"event\":\"elo\",\"version\":0,\"elo\":null,"
                       "\"note\":\"no anchors\"}",
                       line, sizeof line),
      1);
  assert_string_equal(line, "eval v0: Elo n/a (no anchors)");
}

/* An alphazero run's lines: one network's loss parts, no V or search; its
 * accuracies are the policy's, the value head's and MCTS's. */
static void test_alphazero(void **state) {
  (void)state;
  pb_progress_t p;
  pb_progress_init(&p, 0, 1795000000.0);
  char line[1024], want[1024], clk[16];
  const char *json =
      "{\"unix_time\":1795000010.0,\"event\":\"iteration\",\"mode\":"
      "\"distributed\",\"algorithm\":\"alphazero\",\"version\":3,"
      "\"selfplay_s\":6.3,\"train_q_s\":0.39,\"iteration_s\":6.7,"
      "\"q_loss\":2.79,\"policy_loss\":1.846,\"value_loss\":0.9414,"
      "\"selfplay_positions_per_s\":735.2}";
  assert_int_equal(pb_progress_line(&p, json, line, sizeof line), 1);
  clock_of(1795000010.0, clk, sizeof clk);
  snprintf(want, sizeof want,
           "%s iteration 3 in 6.7s (self-play 6.3, train 0.39) | loss policy "
           "1.846, value 0.9414 | 735 positions/s | elapsed 10s",
           clk);
  assert_string_equal(line, want);
  assert_int_equal(
      pb_progress_line(&p,
                       "{\"event\":\"elo\",\"version\":5,\"elo\":1499.4,"
                       "\"elo_lo\":1447.7,\"elo_hi\":1552.8,\"acc_q\":0.833,"
                       "\"acc_v\":0.842,\"acc_beam\":0.992,\"accuracy\":"
                       "{\"beam_agent\":\"mcts N=50\",\"positions\":120}}",
                       line, sizeof line),
      1);
  assert_non_null(strstr(line, "optimal moves: policy 0.833, value 0.842, "
                               "mcts 0.992"));
}

/* A td run's lines: self-play and the TD(0) update, the mean |delta|,
 * alpha and epsilon; no V/Q losses or search rate (the zeros of its
 * untrained Q slot and of a search it has not). */
static void test_td(void **state) {
  (void)state;
  pb_progress_t p;
  pb_progress_init(&p, 0, 1795000000.0);
  char line[1024], want[1024], clk[16];
  const char *json =
      "{\"unix_time\":1795000010.0,\"event\":\"iteration\",\"mode\":"
      "\"distributed\",\"algorithm\":\"td\",\"version\":2,"
      "\"selfplay_s\":0.25,\"train_q_s\":0.003,\"train_v_s\":0.003,"
      "\"search_s\":0,\"iteration_s\":0.3,\"q_loss\":0,\"v_loss\":0,"
      "\"selfplay_positions_per_s\":19076.3,\"search_states_per_s\":0,"
      "\"ply\":1,\"epsilon\":0.1,\"alpha\":0.01,"
      "\"td_abs_delta\":0.0740551}";
  assert_int_equal(pb_progress_line(&p, json, line, sizeof line), 1);
  clock_of(1795000010.0, clk, sizeof clk);
  snprintf(want, sizeof want,
           "%s iteration 2 in 0.30s (self-play 0.25, TD 0.00) | TD mean "
           "|delta| 0.07406, alpha 0.01, epsilon 0.1 | 19076 positions/s | "
           "elapsed 10s",
           clk);
  assert_string_equal(line, want);
  assert_null(strstr(line, "loss"));
  assert_null(strstr(line, "states/s"));
}

/* A progress event of the learner, within an iteration: items done, the
 * phase's rate, its ETA; it does not count as an iteration for the ETA of
 * the run. */
static void test_progress_event(void **state) {
  (void)state;
  pb_progress_t p;
  pb_progress_init(&p, 100, 0);
  char line[1024];
  assert_int_equal(
      pb_progress_line(&p,
                       "{\"event\":\"progress\",\"iteration\":13,"
                       "\"phase\":\"search\",\"done\":12,\"total\":40,"
                       "\"units\":3072,\"unit\":\"states\",\"seconds\":2,"
                       "\"eta_s\":4.6667}",
                       line, sizeof line),
      1);
  assert_string_equal(line,
                      "iteration 13/100 search: 12/40 items (30%), 1536 "
                      "states/s, ETA 5s");
  assert_int_equal(p.n_recent, 0);
  /* Nothing done yet: no rate, no ETA. */
  assert_int_equal(
      pb_progress_line(&p,
                       "{\"event\":\"progress\",\"iteration\":1,"
                       "\"phase\":\"self-play\",\"done\":0,\"total\":4,"
                       "\"units\":0,\"unit\":\"episodes\",\"seconds\":5}",
                       line, sizeof line),
      1);
  assert_string_equal(line, "iteration 1/100 self-play: 0/4 items (0%)");
}

static void test_other_lines(void **state) {
  (void)state;
  pb_progress_t p;
  pb_progress_init(&p, 10, 0);
  char line[64];
  assert_int_equal(pb_progress_line(&p, "{\"event\":\"other\"}", line,
                                    sizeof line),
                   0);
  assert_int_equal(pb_progress_line(&p, "{\"version\":3}", line, sizeof line),
                   0);
  assert_int_equal(p.bad_lines, 0);
  assert_int_equal(pb_progress_line(&p, "{\"event\":", line, sizeof line), -1);
  assert_int_equal(pb_progress_line(&p, "[1,2]", line, sizeof line), -1);
  assert_int_equal(pb_progress_line(&p, "garbage", line, sizeof line), -1);
  assert_int_equal(pb_progress_line(&p, NULL, line, sizeof line), -1);
  assert_int_equal(p.bad_lines, 4);
  /* Truncated to the buffer, always terminated. */
  char tiny[12];
  assert_int_equal(pb_progress_line(&p,
                                    "{\"event\":\"iteration\",\"version\":7,"
                                    "\"v_loss\":0.5,\"q_loss\":0.25}",
                                    tiny, sizeof tiny),
                   1);
  assert_string_equal(tiny, "iteration 7");
}

/* ---- the meter ---------------------------------------------------- */

/* The line: count, total, extra, rate, elapsed and ETA; a total not
 * known: no ETA; nothing done yet: no rate, no ETA; eta off. */
static void test_meter_format(void **state) {
  (void)state;
  pb_meter_t m;
  char buf[256];
  pb_meter_init(&m, NULL, 0, "progress", "games", 100, 5, 1000.0);
  pb_meter_format(&m, 25, 1010.0, "W=20 D=3 L=2", 0, buf, sizeof buf);
  assert_string_equal(buf, "progress: 25/100 games, W=20 D=3 L=2, 2.50 "
                           "games/s, elapsed 10s, ETA 30s");
  pb_meter_format(&m, 0, 1000.5, NULL, 0, buf, sizeof buf);
  assert_string_equal(buf, "progress: 0/100 games, elapsed 1s");
  pb_meter_format(&m, 100, 1200.0, "", 0, buf, sizeof buf);
  assert_string_equal(buf, "progress: 100/100 games, 0.50 games/s, "
                           "elapsed 3m20s");
  m.eta = 0;
  pb_meter_format(&m, 50, 1100.0, NULL, 0, buf, sizeof buf);
  assert_string_equal(buf, "progress: 50/100 games, 0.50 games/s, "
                           "elapsed 1m40s");
  pb_meter_init(&m, NULL, 0, "solve", "nodes", 0, 5, 0.0);
  pb_meter_format(&m, 1234567, 2.0, NULL, 0, buf, sizeof buf);
  assert_string_equal(buf, "solve: 1234567 nodes, 617284 nodes/s, "
                           "elapsed 2s");
  /* The bar: its share filled, the percentage. */
  pb_meter_init(&m, NULL, 1, "accuracy", "positions", 8, 5, 0.0);
  pb_meter_format(&m, 3, 30.0, NULL, 1, buf, sizeof buf);
  assert_string_equal(buf, "accuracy [#########...............] 37% 3/8 "
                           "positions, 0.10 positions/s, elapsed 30s, "
                           "ETA 50s");
  /* Truncated to the buffer. */
  char small[16];
  size_t got = pb_meter_format(&m, 3, 30.0, NULL, 1, small, sizeof small);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_int_equal(got, sizeof small - 1);
  /* An hour-long ETA reads in hours. */
  pb_meter_init(&m, NULL, 0, "p", "items", 1000, 5, 0.0);
  pb_meter_format(&m, 1, 10.0, NULL, 0, buf, sizeof buf);
  assert_non_null(strstr(buf, "ETA 2h46m"));
}

/* Off a terminal: a plain line every `every` seconds, a last line at the
 * end when any was printed; every 0: a line at every update; < 0 none. */
static void test_meter_lines(void **state) {
  (void)state;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  pb_meter_t m;
  pb_meter_init(&m, f, 0, "progress", "games", 60, 5, 0.0);
  int printed = 0;
  for (int t = 1; t <= 12; t++) printed += pb_meter_update(&m, t, t, NULL);
  assert_int_equal(printed, 2); /* at 5 s and 10 s */
  pb_meter_end(&m, 12, 12.0, NULL, 0);
  fclose(f);
  assert_string_equal(text,
                      "progress: 5/60 games, 1.00 games/s, elapsed 5s, ETA "
                      "55s\n"
                      "progress: 10/60 games, 1.00 games/s, elapsed 10s, ETA "
                      "50s\n"
                      "progress: 12/60 games, 1.00 games/s, elapsed 12s, ETA "
                      "48s\n");
  free(text);
  /* A quick command prints nothing, unless always. */
  f = open_memstream(&text, &len);
  pb_meter_init(&m, f, 0, "solve", "nodes", 0, 5, 0.0);
  assert_int_equal(pb_meter_update(&m, 10, 1.0, NULL), 0);
  pb_meter_end(&m, 10, 1.0, NULL, 0);
  fflush(f);
  assert_int_equal(len, 0);
  pb_meter_end(&m, 10, 1.0, NULL, 1);
  fclose(f);
  assert_string_equal(text, "solve: 10 nodes, 10.0 nodes/s, elapsed 1s\n");
  free(text);
  /* every 0: each update; every < 0: never. */
  f = open_memstream(&text, &len);
  pb_meter_init(&m, f, 0, "p", "games", 3, 0, 0.0);
  for (int t = 1; t <= 3; t++) assert_int_equal(pb_meter_update(&m, t, 0.5 * t, NULL), 1);
  pb_meter_init(&m, f, 1, "p", "games", 3, -1, 0.0);
  assert_int_equal(pb_meter_update(&m, 1, 100.0, NULL), 0);
  pb_meter_end(&m, 3, 100.0, NULL, 1);
  fclose(f);
  int nl = 0;
  for (char *p = text; *p; p++) nl += *p == '\n';
  assert_int_equal(nl, 3);
  free(text);
}

/* On a terminal: the bar redrawn in place (carriage return, the rest of
 * the line cleared) at most every PB_METER_TTY_S, its line ended at the
 * end. */
static void test_meter_tty(void **state) {
  (void)state;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  pb_meter_t m;
  pb_meter_init(&m, f, 1, "progress", "games", 4, 5, 0.0);
  int printed = 0;
  for (int i = 1; i <= 40; i++)
    printed += pb_meter_update(&m, i / 10.0, i * 0.05, NULL);
  assert_true(printed >= 8 && printed <= 10); /* every 0.2 s of 2 s */
  pb_meter_end(&m, 4, 2.0, NULL, 0);
  fclose(f);
  assert_int_equal(text[0], '\r');
  assert_non_null(strstr(text, "\033[K"));
  assert_null(strchr(text, '\n') == text + len - 1 ? NULL : strchr(text, '\n'));
  assert_non_null(strstr(text, "progress [########################] 100% 4/4"));
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_iteration),
      cmocka_unit_test(test_progress_event),
      cmocka_unit_test(test_eta),
      cmocka_unit_test(test_eval),
      cmocka_unit_test(test_alphazero),
      cmocka_unit_test(test_td),
      cmocka_unit_test(test_other_lines),
      cmocka_unit_test(test_meter_format),
      cmocka_unit_test(test_meter_lines),
      cmocka_unit_test(test_meter_tty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
