/* test_record_ggf.c - the records' headers and per-ply members, and GGF
 * (common/play/record_ggf.c) written and read back: random Othello games
 * ended every way a record knows (finished, capped, on time, resigned,
 * adjudicated) round-trip with their date, time control and move times;
 * GGF as other tools write it (a UNIX date, a clock with extension,
 * evaluations, passes left out) reads; malformed GGF is refused naming
 * the fault; and a file appended to tells its last round. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "game.h"
#include "json.h"
#include "jsonread.h"
#include "record.h"
#include "rng.h"

/* A random Othello game into moves: to its end, or cut after `cut`
 * plies (0: none). Returns its plies; *finished, *result for black. */
static int random_game(pb_rng_t *rng, int cut, uint8_t *moves, int *finished,
                       int *result) {
  const pb_game_t *g = &pb_game_othello;
  pb_state_t s;
  g->reset(&s);
  int n = 0, done = 0;
  *result = 0;
  while (!done && (cut == 0 || n < cut)) {
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(&s, acts);
    int a = acts[pb_rng_below(rng, (uint32_t)na)];
    float r = g->step(&s, a, &done);
    moves[n++] = (uint8_t)a;
    if (done) *result = (n % 2 == 1 ? 1 : -1) * ((r > 0) - (r < 0));
  }
  *finished = done;
  return n;
}

/* Every way a game ends, through GGF and back (directly and as a line
 * of a record file): the same moves, players, result and termination,
 * date, time control, move times and evaluations ("sq/eval/time", with
 * and without the time). */
static void test_ggf_round_trip(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_othello;
  uint8_t moves[256], back[256];
  int32_t ms[256], ms2[256];
  float ev[256], ev2[256];
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  int passes = 0;
  for (int it = 0; it < 60; it++) {
    const int how = it % 6; /* 0 finished, 1 capped, 2 time, 3 resigned,
                               4 adjudicated, 5 finished without times */
    int finished = 0, result = 0;
    int n = random_game(&rng, how >= 1 && how <= 4 ? 10 + it : 0, moves,
                        &finished, &result);
    if (how >= 1 && how <= 4 && finished) continue; /* ended before the cut */
    pb_record_t r, r2;
    pb_record_init(&r, g);
    r.moves = moves;
    r.n_moves = n;
    r.result = result;
    r.capped = how == 1;
    r.time_loss = how == 2;
    r.resigned = how == 3;
    r.adjudicated = how == 4;
    if (how == 2) r.result = n % 2 == 0 ? -1 : 1;
    if (how == 3 || how == 4) r.result = it % 4 < 2 ? 1 : -1;
    snprintf(r.first, sizeof r.first, "abnet:x,nodes=%d", it);
    snprintf(r.second, sizeof r.second, "gtp:rhino");
    snprintf(r.date, sizeof r.date, "2026-11-%02dT%02d:%02d:07Z", 1 + it % 28,
             it % 24, it);
    if (it % 2) snprintf(r.time_control, sizeof r.time_control, "%d+%g",
                         it + 1, (it % 3) * 0.25);
    for (int i = 0; i < n; i++) ms[i] = i < 2 ? -1 : (int32_t)(i * 37 + it);
    if (how != 5) r.ms = ms;
    for (int i = 0; i < n; i++) /* the opening's plies and every 5th none */
      ev[i] = i < 2 || i % 5 == 0 ? NAN : ((i * 7 + it) % 201 - 100) / 100.0f;
    if (it % 3 == 0) r.evals = ev;
    char *t = NULL;
    size_t len = 0;
    pb_err_t err;
    pb_err_clear(&err);
    assert_int_equal(pb_record_ggf(&r, &t, &len, &err), 0);
    passes += strstr(t, "[PA") != NULL;
    if (r.time_control[0]) assert_non_null(strstr(t, "TI["));
    assert_non_null(strstr(t, "DT[2026.11."));
    for (int path = 0; path < 2; path++) {
      int rc = path == 0 ? pb_record_ggf_parse_full(t, len, back, ms2, ev2,
                                                    256, &r2, &err)
                         : pb_record_parse_full(jr, t, len, back, ms2, ev2,
                                                256, &r2, &err);
      if (rc != 0) fail_msg("%s: %s", t, err.msg);
      assert_ptr_equal(r2.g, g);
      assert_int_equal(r2.n_moves, n);
      assert_memory_equal(r2.moves, moves, (size_t)n);
      assert_string_equal(r2.first, r.first);
      assert_string_equal(r2.second, r.second);
      assert_int_equal(r2.result, r.result);
      assert_int_equal(r2.capped, r.capped);
      assert_int_equal(r2.time_loss, r.time_loss);
      assert_int_equal(r2.resigned, r.resigned);
      assert_int_equal(r2.adjudicated, r.adjudicated);
      assert_string_equal(r2.date, r.date);
      if (r.time_control[0] == '\0') {
        assert_string_equal(r2.time_control, "");
      } else {
        double b1, i1, b2, i2;
        assert_int_equal(sscanf(r.time_control, "%lf+%lf", &b1, &i1), 2);
        assert_int_equal(sscanf(r2.time_control, "%lf+%lf", &b2, &i2), 2);
        assert_true(b1 == b2 && i1 == i2);
      }
      if (how == 5) {
        assert_null(r2.ms);
      } else {
        assert_non_null(r2.ms);
        assert_memory_equal(r2.ms, ms, (size_t)n * sizeof *ms);
      }
      if (it % 3 != 0) {
        assert_null(r2.evals);
      } else {
        assert_non_null(r2.evals);
        for (int i = 0; i < n; i++)
          if (isnan(ev[i]))
            assert_true(isnan(r2.evals[i]));
          else
            assert_true(fabsf(r2.evals[i] - ev[i]) < 1e-4f);
      }
    }
    free(t);
  }
  assert_true(passes > 0);
  pb_jsonr_destroy(&jr);
}

/* GGF as GGS and other tools write it. */
static void test_ggf_foreign(void **state) {
  (void)state;
  uint8_t back[256];
  int32_t ms[256];
  pb_record_t r;
  pb_err_t err;
  /* A UNIX date, a clock with an extension, evaluations and times,
   * upper-case squares, a place and ratings that are skipped. */
  const char *ggs =
      "  (;GM[Othello]PC[GGS/os]DT[1057086163]PB[alpha]PW[beta]RB[2100.5]"
      "RW[1999.0]TI[15:00//02:00]TY[8]RE[+3.000:r]BO[8 -------- -------- "
      "-------- ---O*--- ---*O--- -------- -------- -------- *]"
      "B[F5/0.51/1.25]W[d6//0.5]B[C3];) \r\n";
  assert_int_equal(
      pb_record_ggf_parse(ggs, strlen(ggs), back, ms, 256, &r, &err), 0);
  assert_int_equal(r.n_moves, 3);
  assert_string_equal(r.first, "alpha");
  assert_string_equal(r.date, "2003-07-01T19:02:43Z");
  assert_string_equal(r.time_control, "900+0");
  assert_int_equal(r.resigned, 1);
  assert_int_equal(r.result, 1);
  assert_int_equal(ms[0], 1250);
  assert_int_equal(ms[1], 500);
  assert_int_equal(ms[2], -1);
  /* Its evaluations: 0.51 fits our [-1, 1]; a disc count (GGS's scale)
   * or text is none. */
  const char *evs = "(;GM[Othello]B[f5/0.51/1.25]W[d6/-12.5/0.5]B[c3/x];)";
  float ev[256];
  assert_int_equal(pb_record_ggf_parse_full(evs, strlen(evs), back, ms, ev,
                                            256, &r, &err),
                   0);
  assert_non_null(r.evals);
  assert_true(fabsf(r.evals[0] - 0.51f) < 1e-6f);
  assert_true(isnan(r.evals[1]) && isnan(r.evals[2]));
  /* GGS's own date form, a local zone kept as written; no RE: unfinished,
   * as RE[?]. */
  const char *local2 = "(;GM[Othello]DT[2003.12.15_13:24:03.MET]B[f5];)";
  assert_int_equal(
      pb_record_ggf_parse(local2, strlen(local2), back, NULL, 256, &r, &err),
      0);
  assert_string_equal(r.date, "2003.12.15_13:24:03.MET");
  assert_string_equal(r.first, "black");
  assert_int_equal(r.capped, 1);
  const char *utc = "(;GM[Othello]DT[2003.12.15_13:24:03.UTC]RE[?]B[f5];)";
  assert_int_equal(
      pb_record_ggf_parse(utc, strlen(utc), back, NULL, 256, &r, &err), 0);
  assert_string_equal(r.date, "2003-12-15T13:24:03Z");
  /* A game with a forced pass: the same moves with the PA left out. */
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  uint8_t moves[256];
  for (int found = 0; !found;) {
    int finished, result;
    pb_record_t w;
    pb_record_init(&w, &pb_game_othello);
    w.n_moves = random_game(&rng, 0, moves, &finished, &result);
    w.moves = moves;
    w.result = result;
    snprintf(w.first, sizeof w.first, "a");
    snprintf(w.second, sizeof w.second, "b");
    char *t;
    size_t len;
    assert_int_equal(pb_record_ggf(&w, &t, &len, &err), 0);
    char *pa;
    while ((pa = strstr(t, "W[PA]")) != NULL || (pa = strstr(t, "B[PA]")))
      memmove(pa, pa + 5, strlen(pa + 5) + 1), found = 1;
    if (found) {
      assert_int_equal(pb_record_ggf_parse(t, strlen(t), back, NULL, 256, &r,
                                           &err),
                       0);
      assert_int_equal(r.n_moves, w.n_moves);
      assert_memory_equal(back, moves, (size_t)w.n_moves);
    }
    free(t);
  }
}

/* Malformed GGF: refused, the message naming the fault. */
static void test_ggf_malformed(void **state) {
  (void)state;
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"(;GM[Othello]PB[a]B[f5]", "not closed with \";)\""},
      {"(;GM[Othello]PB[a;)", "not closed with \"]\""},
      {"(;GM[Go]RE[?];)", "only Othello"},
      {"(;GM[Othello]TY[8r]RE[?];)", "TY[8r]"},
      {"(;GM[Othello]BO[8 -------- -------- -------- ---OO--- ---*O--- "
       "-------- -------- -------- *]RE[?];)",
       "standard start"},
      {"(;GM[Othello]RE[?]B[f5]W[a1];)", "W[a1] at ply 2: not a legal move"},
      {"(;GM[Othello]RE[?]B[f5]B[d6];)", "white (W) is to move"},
      {"(;GM[Othello]RE[?]B[PA];)", "a pass, but black has a move"},
      {"(;GM[Othello]RE[?]B[z];)", "not a legal move"},
      {"(;GM[Othello]RE[soon]B[f5];)", "RE[soon]"},
      {"(;GM[Othello]RE[+2.000:x]B[f5];)", "RE[+2.000:x]"},
      {"(;GM[Othello]TI[ten]RE[?];)", "TI[ten]"},
      {"(;GM[Othello]RE[?]B[f5//soon];)", "is not seconds"},
      {"(;GM[Othello]RE[?];) (;GM[Othello]RE[?];)", "something after"},
      {"(;PB[a]RE[?];)", "no GM[Othello]"},
      {"(;GM[Othello]RE[?] b[f5];)", "expected a property"},
      {"GM[Othello]", "starts with \"(;\""},
      {"(;GM[Othello]RE[+0.000:r]B[f5];)", "resigned, but a draw"},
      /* time lost by the side that is not to move */
      {"(;GM[Othello]RE[-64.000:t]B[f5];)", "lost on time by the second"},
  };
  uint8_t back[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_record_t r;
    pb_err_t err;
    pb_err_clear(&err);
    int rc = pb_record_ggf_parse(bad[i].text, strlen(bad[i].text), back, NULL,
                                 256, &r, &err);
    if (rc != PB_ECORRUPT || strstr(err.msg, bad[i].msg) == NULL)
      fail_msg("%s: rc %d, \"%s\" (wanted \"%s\")", bad[i].text, rc, err.msg,
               bad[i].msg);
  }
  /* A finished game whose RE contradicts the moves. */
  pb_rng_t rng;
  pb_rng_seed(&rng, 9, 0);
  uint8_t moves[256];
  int finished, result;
  pb_record_t w, r;
  pb_record_init(&w, &pb_game_othello);
  do {
    w.n_moves = random_game(&rng, 0, moves, &finished, &result);
  } while (result == 0);
  w.moves = moves;
  w.result = result;
  snprintf(w.first, sizeof w.first, "a");
  snprintf(w.second, sizeof w.second, "b");
  char *t;
  size_t len;
  pb_err_t err;
  assert_int_equal(pb_record_ggf(&w, &t, &len, &err), 0);
  char *re = strstr(t, "RE[");
  re[3] = re[3] == '+' ? '-' : '+';
  assert_int_equal(pb_record_ggf_parse(t, len, back, NULL, 256, &r, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "but the moves end the game"));
  free(t);
}

/* The JSON line's headers and per-ply members, and the lines that must
 * be refused with them. */
static void test_json_headers(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  uint8_t m[16], back[16];
  int32_t ms[16] = {-1, 5, 0, 12, 7, 3, 1000};
  float ev[16] = {NAN, 0.25f, -0.5f, 1.0f, NAN, -1.0f, 0.125f};
  int32_t ms2[16];
  float ev2[16];
  pb_record_t r, r2;
  pb_record_init(&r, g);
  int n;
  assert_int_equal(pb_record_moves_parse(g, "1212121", m, 16, &n, NULL), 0);
  r.moves = m;
  r.n_moves = n;
  r.result = 1;
  r.round = 9;
  snprintf(r.first, sizeof r.first, "lookahead:3");
  snprintf(r.second, sizeof r.second, "gtp:probs gtp");
  snprintf(r.first_version, sizeof r.first_version, "probs 0.39.0");
  snprintf(r.second_version, sizeof r.second_version, "probs 0.39.0 \"x\"");
  snprintf(r.event, sizeof r.event, "nightly");
  snprintf(r.date, sizeof r.date, "2026-11-28T20:50:01Z");
  snprintf(r.time_control, sizeof r.time_control, "10+0.1");
  r.ms = ms;
  r.evals = ev;
  pb_json_t j;
  pb_json_init(&j);
  pb_err_t err;
  assert_int_equal(pb_record_json(&r, &j, &err), 0);
  const char *line = pb_json_cstr(&j);
  assert_non_null(strstr(line, "\"ms\":[null,5,0,12,7,3,1000]"));
  assert_non_null(strstr(line, "\"evals\":[null,0.25,-0.5,1,null,-1,0.125]"));
  assert_non_null(strstr(line, "\"termination\":\"normal\""));
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  assert_int_equal(pb_record_parse_full(jr, line, strlen(line), back, ms2, ev2,
                                        16, &r2, &err),
                   0);
  assert_string_equal(r2.event, "nightly");
  assert_string_equal(r2.date, r.date);
  assert_string_equal(r2.first_version, r.first_version);
  assert_string_equal(r2.second_version, r.second_version);
  assert_string_equal(r2.time_control, "10+0.1");
  assert_memory_equal(r2.ms, ms, 7 * sizeof *ms);
  for (int i = 0; i < 7; i++)
    assert_true(isnan(ev[i]) ? isnan(r2.evals[i]) : r2.evals[i] == ev[i]);
  /* pb_record_parse (no buffers) skips them. */
  assert_int_equal(pb_record_parse(jr, line, strlen(line), back, 16, &r2, &err),
                   0);
  assert_null(r2.ms);
  assert_null(r2.evals);
  /* An interrupted game: "*", unfinished. */
  pb_record_init(&r, g);
  r.moves = m;
  r.n_moves = 3;
  r.interrupted = 1;
  snprintf(r.first, sizeof r.first, "a");
  snprintf(r.second, sizeof r.second, "b");
  assert_int_equal(pb_record_json(&r, &j, &err), 0);
  line = pb_json_cstr(&j);
  assert_non_null(strstr(line, "\"result\":\"*\""));
  assert_non_null(strstr(line, "\"termination\":\"interrupted\""));
  assert_int_equal(pb_record_parse(jr, line, strlen(line), back, 16, &r2, &err),
                   0);
  assert_int_equal(r2.interrupted, 1);
  r.result = 1;
  assert_int_equal(pb_record_json(&r, &j, &err), PB_EINVAL);
  static const struct {
    const char *line, *msg;
  } bad[] = {
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\",\"result\":"
       "\"*\",\"moves\":\"12\"}",
       "\"*\" is the result of an interrupted game alone"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\",\"result\":"
       "\"1-0\",\"moves\":\"12\",\"termination\":\"resignation\",\"ms\":[1]}",
       "\"ms\" is not an array of 2 entries"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\",\"result\":"
       "\"1-0\",\"moves\":\"12\",\"termination\":\"resignation\",\"ms\":[1,"
       "-4]}",
       "\"ms\"[1]"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\",\"result\":"
       "\"1-0\",\"moves\":\"12\",\"termination\":\"resignation\",\"evals\":"
       "[0.5,1.5]}",
       "\"evals\"[1]"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\",\"result\":"
       "\"1/2-1/2\",\"moves\":\"12\",\"termination\":\"resignation\"}",
       "resigned, but a draw"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\",\"result\":"
       "\"1-0\",\"moves\":\"12\",\"termination\":\"abandoned\"}",
       "\"termination\": \"abandoned\""},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\",\"result\":"
       "\"1-0\",\"moves\":\"12\",\"termination\":\"resignation\",\"date\":"
       "7}",
       "\"date\" is a number"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    int rc = pb_record_parse_full(jr, bad[i].line, strlen(bad[i].line), back,
                                  ms2, ev2, 16, &r2, &err);
    if (rc != PB_ECORRUPT || strstr(err.msg, bad[i].msg) == NULL)
      fail_msg("%s: rc %d, \"%s\" (wanted \"%s\")", bad[i].line, rc, err.msg,
               bad[i].msg);
  }
  pb_jsonr_destroy(&jr);
  pb_json_free(&j);
}

/* A file appended to tells the round of its last record: its "round",
 * a cut last line passed over, the count of records without rounds. */
static void test_last_round(void **state) {
  (void)state;
  char dir[] = "/tmp/pb_test_record_ggf_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/g.jsonl", dir);
  const char *c4 = "{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
                   "\"result\":\"1-0\",\"moves\":\"1212121\"";
  struct {
    const char *body;
    int64_t round;
  } cases[] = {
      {"", 0},
      {"R7}\nR12}\n", 12},
      {"R7}\nR12}\n{\"game\":\"conn", 12},  /* a cut last line */
      {"N}\n\nN}\nN}\n", 3},               /* no rounds: the count */
      {"N}\nN}\nR5}\nN}\n", 4},             /* the last has none: the count */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    FILE *f = fopen(path, "w");
    for (const char *p = cases[i].body; *p; p++) {
      if (*p == 'R') {
        fprintf(f, "%s,\"round\":%d", c4, atoi(p + 1));
        while (p[1] >= '0' && p[1] <= '9') p++;
      } else if (*p == 'N') {
        fprintf(f, "%s", c4);
      } else {
        fputc(*p, f);
      }
    }
    fclose(f);
    pb_err_t err;
    pb_record_file_t *rf = pb_record_file_open(path, PB_RECORD_JSONL, &err);
    if (rf == NULL) fail_msg("case %zu: %s", i, err.msg);
    assert_int_equal(pb_record_file_last_round(rf), cases[i].round);
    pb_record_file_close(&rf);
  }
  /* A JSON record file refuses GGF, and the reader reads GGF lines. */
  FILE *f = fopen(path, "w");
  fprintf(f, "(;GM[Othello]RE[?]B[f5];)\n");
  fclose(f);
  pb_err_t err;
  assert_null(pb_record_file_open(path, PB_RECORD_JSONL, &err));
  assert_non_null(strstr(err.msg, "GGF"));
  pb_record_reader_t *rd = pb_record_reader_open(path, &err);
  pb_record_t r;
  assert_int_equal(pb_record_reader_next(rd, &r, &err), 1);
  assert_int_equal(r.n_moves, 1);
  assert_int_equal(pb_record_reader_next(rd, &r, &err), 0);
  pb_record_reader_destroy(&rd);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ggf_round_trip),
      cmocka_unit_test(test_ggf_foreign),
      cmocka_unit_test(test_ggf_malformed),
      cmocka_unit_test(test_json_headers),
      cmocka_unit_test(test_last_round),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
