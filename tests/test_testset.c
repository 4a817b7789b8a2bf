/* test_testset.c - solved test sets (common/solver/testset.c): the text format
 * written and read back, every kind of malformed input refused with the
 * line it is on, scoring, and the shipped sets checked against the solver
 * (all of Tic-Tac-Toe's, a sample of Connect Four's late positions). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "game.h"
#include "rng.h"
#include "solver.h"
#include "testset.h"

static const pb_game_t *C4 = &pb_game_connect4;
static const pb_game_t *T3 = &pb_game_tictactoe;

static pb_state_t pos(const pb_game_t *g, const char *moves) {
  pb_state_t s;
  pb_err_t err;
  if (g->parse(&s, moves, &err) != 0) fail_msg("parse %s: %s", moves, err.msg);
  return s;
}

static pb_testset_t *parse(const char *text, const pb_game_t *g,
                           pb_err_t *err) {
  pb_err_clear(err);
  return pb_testset_parse(text, strlen(text), "t.txt", g, err);
}

/* ---- the format ---------------------------------------------------------- */

static void test_parse(void **state) {
  (void)state;
  const char *text =
      "# probs testset game=connect4\n"
      "# a comment\n"
      "\n"
      "4453 LLLDLLW\n"
      "- DDDWDDD\n"
      "111111 .LWLLLL\r\n"
      "# another comment\n"
      "7777776 DDDDDW.";
  pb_err_t err;
  pb_testset_t *t = parse(text, C4, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_testset_count(t), 4);
  assert_ptr_equal(pb_testset_game(t), C4);
  assert_string_equal(pb_testset_name(t), "t.txt");
  const char *moves[4] = {"4453", "", "111111", "7777776"};
  const int8_t want[4][7] = {
      {-1, -1, -1, 0, -1, -1, 1},
      {0, 0, 0, 1, 0, 0, 0},
      {PB_TS_ILLEGAL, -1, 1, -1, -1, -1, -1},
      {0, 0, 0, 0, 0, 1, PB_TS_ILLEGAL},
  };
  for (size_t i = 0; i < 4; i++) {
    pb_state_t s = pos(C4, moves[i]);
    assert_memory_equal(pb_testset_state(t, i), &s, sizeof s);
    assert_memory_equal(pb_testset_labels(t, i), want[i], 7);
  }
  /* Optimal moves: those of the line's best label, never illegal ones. */
  assert_int_equal(pb_testset_optimal(t, 0, 6), 1);
  for (int a = 0; a < 6; a++) assert_int_equal(pb_testset_optimal(t, 0, a), 0);
  assert_int_equal(pb_testset_optimal(t, 1, 3), 1);
  assert_int_equal(pb_testset_optimal(t, 1, 2), 0);
  assert_int_equal(pb_testset_optimal(t, 2, 0), 0); /* illegal */
  assert_int_equal(pb_testset_optimal(t, 2, 2), 1);
  assert_int_equal(pb_testset_optimal(t, 3, 5), 1);
  assert_int_equal(pb_testset_optimal(t, 3, 6), 0);
  assert_int_equal(pb_testset_optimal(t, 0, -1), 0);
  assert_int_equal(pb_testset_optimal(t, 0, 7), 0);
  assert_int_equal(pb_testset_optimal(t, 4, 6), 0); /* no position 4 */
  int all_best[4] = {6, 3, 2, 5}, two[4] = {6, 0, 0, 5}, none[4] = {0, 0, 0, 6};
  assert_true(pb_testset_score(t, all_best) == 1.0);
  assert_true(pb_testset_score(t, two) == 0.5);
  assert_true(pb_testset_score(t, none) == 0.0);
  pb_testset_destroy(&t);
  assert_null(t);
  pb_testset_destroy(NULL);

  /* Tic-Tac-Toe, and a set whose every label is the same (the parser
   * does not require that the choice matters). */
  t = parse("# probs testset game=tictactoe\n5 DLDL.LDLD\n- DDDDDDDDD\n", T3,
            &err);
  if (t == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_testset_count(t), 2);
  assert_int_equal(pb_testset_optimal(t, 0, 0), 1);
  assert_int_equal(pb_testset_optimal(t, 0, 1), 0);
  assert_int_equal(pb_testset_optimal(t, 0, 4), 0);
  for (int a = 0; a < 9; a++) assert_int_equal(pb_testset_optimal(t, 1, a), 1);
  pb_testset_destroy(&t);
}

/* Every malformed input is refused, naming the line. */
static void test_parse_errors(void **state) {
  (void)state;
  struct {
    const char *text;
    int code;
    const char *where; /* in the message */
  } bad[] = {
      /* the header */
      {"4453 LLLDLLW\n", PB_ECORRUPT, "t.txt:1"},
      {"# probs testset\n4453 LLLDLLW\n", PB_ECORRUPT, "t.txt:1"},
      {"# probs testset game=\n4453 LLLDLLW\n", PB_EMISMATCH, "t.txt"},
      {"# probs testset game=tictactoe\n5 DLDL.LDLD\n", PB_EMISMATCH,
       "tictactoe"},
      {"\n# probs testset game=connect4\n4453 LLLDLLW\n", PB_ECORRUPT,
       "t.txt:1"},
      /* labels */
      {"# probs testset game=connect4\n4453 LLLDLL\n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=connect4\n# x\n4453 LLLDLLWW\n", PB_ECORRUPT,
       "t.txt:3"},
      {"# probs testset game=connect4\n4453 LLLDLLw\n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=connect4\n4453 LLLXLLW\n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=connect4\n4453 \n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=connect4\n4453  LLLDLLW\n", PB_ECORRUPT,
       "t.txt:2"},
      {"# probs testset game=connect4\n4453\n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=connect4\n4453LLLDLLW\n", PB_ECORRUPT, "t.txt:2"},
      /* labels against the legal moves */
      {"# probs testset game=connect4\n- DDDWDDD\n111111 WLWLLLL\n",
       PB_ECORRUPT, "t.txt:3"},
      {"# probs testset game=connect4\n4453 .LLDLLW\n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=tictactoe\n5 DLDLDLDLD\n", PB_ECORRUPT, "t.txt:2"},
      /* moves */
      {"# probs testset game=connect4\n4483 LLLDLLW\n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=connect4\n44a3 LLLDLLW\n", PB_ECORRUPT, "t.txt:2"},
      {"# probs testset game=connect4\n1111111 .LLLLLL\n", PB_ECORRUPT,
       "t.txt:2"},
      {"# probs testset game=connect4\n-- DDDWDDD\n", PB_ECORRUPT, "t.txt:2"},
      /* finished positions, and moves after the end */
      {"# probs testset game=connect4\n- DDDWDDD\n1212121 .......\n",
       PB_ECORRUPT, "t.txt:3"},
      {"# probs testset game=connect4\n1212121 LLLLLLL\n", PB_ECORRUPT,
       "t.txt:2"},
      {"# probs testset game=connect4\n12121212 LLLLLLL\n", PB_ECORRUPT,
       "t.txt:2"},
      {"# probs testset game=tictactoe\n12437 .........\n", PB_ECORRUPT,
       "t.txt:2"},
      /* no position */
      {"# probs testset game=connect4\n", PB_ECORRUPT, "t.txt"},
      {"# probs testset game=connect4\n# only comments\n\n", PB_ECORRUPT,
       "t.txt"},
      {"", PB_ECORRUPT, "t.txt"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const pb_game_t *g =
        strstr(bad[i].text, "game=tictactoe") && bad[i].code != PB_EMISMATCH
            ? T3
            : C4;
    pb_err_t err;
    pb_testset_t *t = parse(bad[i].text, g, &err);
    if (t != NULL) fail_msg("case %zu was accepted:\n%s", i, bad[i].text);
    if (err.code != bad[i].code)
      fail_msg("case %zu: %s, expected %s (%s)", i, pb_err_name(err.code),
               pb_err_name(bad[i].code), err.msg);
    if (strstr(err.msg, bad[i].where) == NULL)
      fail_msg("case %zu: \"%s\" does not name %s", i, err.msg, bad[i].where);
  }
  /* The line number counts comments and blank lines. */
  pb_err_t err;
  assert_null(
      parse("# probs testset game=connect4\n\n# c\n\n4453 LLLDLLW\n"
            "4453 LLLDLL\n",
            C4, &err));
  assert_non_null(strstr(err.msg, "t.txt:6:"));
  /* NULL arguments. */
  pb_err_clear(&err);
  assert_null(pb_testset_parse(NULL, 0, "x", C4, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_testset_parse("", 0, "x", NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
}

/* The length given is what is read, not up to a NUL. */
static void test_parse_length(void **state) {
  (void)state;
  const char *text = "# probs testset game=connect4\n4453 LLLDLLW\n- DDDWDDD\n";
  pb_err_t err;
  size_t first = strlen("# probs testset game=connect4\n4453 LLLDLLW\n");
  pb_testset_t *t = pb_testset_parse(text, first, "t", C4, &err);
  assert_non_null(t);
  assert_int_equal(pb_testset_count(t), 1);
  pb_testset_destroy(&t);
  /* A cut in the middle of a line makes it malformed. */
  assert_null(pb_testset_parse(text, first - 3, "t", C4, &err));
  assert_int_equal(err.code, PB_ECORRUPT);
}

/* Random positions (plies min_plies..max_plies) with random labels for
 * their legal moves, written line by line and read back: the same
 * positions and labels. */
static void round_trip(const pb_game_t *g, int min_plies, int max_plies,
                       int npos, uint64_t seed) {
  pb_err_t err;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  fprintf(f, "# probs testset game=%s\n", g->name);
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  pb_state_t *states = calloc((size_t)npos, sizeof *states);
  int8_t *labels = calloc((size_t)npos, PB_MAX_ACTIONS);
  assert_non_null(states);
  assert_non_null(labels);
  int have = 0, starts = 0, seen[3] = {0, 0, 0};
  while (have < npos) {
    uint8_t moves[64];
    int plies = min_plies +
                (int)pb_rng_below(&rng, (uint32_t)(max_plies - min_plies + 1));
    int done = 0;
    pb_state_t s;
    g->reset(&s);
    for (int p = 0; p < plies && !done; p++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int n = g->legal(&s, acts);
      moves[p] = acts[pb_rng_below(&rng, (uint32_t)n)];
      g->step(&s, moves[p], &done);
    }
    if (done) continue;
    starts += plies == 0;
    int8_t *lab = &labels[(size_t)have * PB_MAX_ACTIONS];
    uint8_t acts[PB_MAX_ACTIONS];
    int n = g->legal(&s, acts);
    for (int a = 0; a < g->num_actions; a++) lab[a] = PB_TS_ILLEGAL;
    for (int k = 0; k < n; k++) {
      lab[acts[k]] = (int8_t)((int)pb_rng_below(&rng, 3) - 1);
      seen[lab[acts[k]] + 1]++;
    }
    states[have++] = s;
    assert_int_equal(pb_testset_write_line(f, g, moves, plies, lab, &err), 0);
  }
  assert_int_equal(fclose(f), 0);
  pb_testset_t *t = pb_testset_parse(buf, len, "mem", g, &err);
  if (t == NULL) fail_msg("%s\n%s", err.msg, buf);
  assert_int_equal(pb_testset_count(t), (size_t)npos);
  for (int i = 0; i < npos; i++) {
    assert_memory_equal(pb_testset_state(t, (size_t)i), &states[i],
                        sizeof states[i]);
    assert_memory_equal(pb_testset_labels(t, (size_t)i),
                        &labels[(size_t)i * PB_MAX_ACTIONS],
                        (size_t)g->num_actions);
  }
  assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
  /* The empty move list is written as "-". */
  if (starts > 0) assert_non_null(strstr(buf, "\n- "));
  pb_testset_destroy(&t);
  free(buf);
  free(states);
  free(labels);
}

static void test_round_trip(void **state) {
  (void)state;
  round_trip(T3, 0, 7, 300, 1);
  round_trip(C4, 0, 41, 300, 2);
  pb_err_t err;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  const uint8_t moves[4] = {3, 3, 4, 2};
  const int8_t lab[7] = {-1, -1, 1, 0, -1, PB_TS_ILLEGAL, -1};
  assert_int_equal(pb_testset_write_line(f, C4, moves, 4, lab, &err), 0);
  assert_int_equal(pb_testset_write_line(f, C4, moves, 0, lab, &err), 0);
  /* A move the game cannot name. */
  const uint8_t bad[2] = {3, 9};
  pb_err_clear(&err);
  assert_int_equal(pb_testset_write_line(f, C4, bad, 2, lab, &err), PB_EINVAL);
  assert_true(err.msg[0] != '\0');
  fclose(f);
  assert_string_equal(buf, "4453 LLWDL.L\n- LLWDL.L\n");
  free(buf);
}

/* ---- files and the shipped sets ------------------------------------------ */

static void test_load(void **state) {
  (void)state;
  char dir[] = "/tmp/pb_test_testset_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/set.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("# probs testset game=tictactoe\n5 DLDL.LDLD\n", f);
  fclose(f);
  pb_err_t err;
  pb_testset_t *t = pb_testset_load(path, T3, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_testset_count(t), 1);
  assert_string_equal(pb_testset_name(t), path);
  pb_testset_destroy(&t);
  t = pb_testset_open(path, T3, &err);
  assert_non_null(t);
  assert_string_equal(pb_testset_name(t), path);
  pb_testset_destroy(&t);
  /* Errors name the file. */
  pb_err_clear(&err);
  assert_null(pb_testset_load(path, C4, &err));
  assert_int_equal(err.code, PB_EMISMATCH);
  assert_non_null(strstr(err.msg, path));
  char missing[300];
  snprintf(missing, sizeof missing, "%s/missing.txt", dir);
  pb_err_clear(&err);
  assert_null(pb_testset_load(missing, T3, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "missing.txt"));
  pb_err_clear(&err);
  assert_null(pb_testset_open(missing, T3, &err));
  assert_int_equal(err.code, PB_EIO);
  /* A directory cannot be read as a set. */
  pb_err_clear(&err);
  assert_null(pb_testset_load(dir, T3, &err));
  assert_true(err.code == PB_EIO || err.code == PB_ECORRUPT);
  /* An empty file. */
  f = fopen(path, "w");
  fclose(f);
  pb_err_clear(&err);
  assert_null(pb_testset_load(path, T3, &err));
  assert_int_equal(err.code, PB_ECORRUPT);
  remove(path);
  rmdir(dir);
}

/* Checks a shipped set's lines: positions of the stated plies, labels that
 * leave a choice (two outcomes at least among the legal moves), ordered by
 * ply. */
static void check_builtin_shape(const pb_testset_t *t, int min_ply,
                                int max_ply) {
  const pb_game_t *g = pb_testset_game(t);
  int last = -1;
  for (size_t i = 0; i < pb_testset_count(t); i++) {
    const pb_state_t *s = pb_testset_state(t, i);
    const int8_t *lab = pb_testset_labels(t, i);
    int ply = g->ply(s);
    assert_true(ply >= min_ply && ply <= max_ply);
    assert_true(ply >= last);
    last = ply;
    int seen[3] = {0, 0, 0};
    uint8_t acts[PB_MAX_ACTIONS];
    int n = g->legal(s, acts);
    assert_true(n > 1);
    for (int k = 0; k < n; k++) {
      assert_true(lab[acts[k]] >= -1 && lab[acts[k]] <= 1);
      seen[lab[acts[k]] + 1] = 1;
    }
    if (seen[0] + seen[1] + seen[2] < 2)
      fail_msg("%s position %zu: the choice does not matter",
               pb_testset_name(t), i);
    /* No position twice. */
    for (size_t j = 0; j < i; j++)
      if (!memcmp(pb_testset_state(t, j), s, sizeof *s))
        fail_msg("%s: positions %zu and %zu are the same", pb_testset_name(t),
                 j, i);
  }
}

/* Labels of position i against the solver (weak results). */
static void check_labels(pb_solver_t *sv, const pb_testset_t *t, size_t i) {
  const pb_game_t *g = pb_testset_game(t);
  pb_solve_value_t v[PB_MAX_ACTIONS];
  pb_err_t err;
  assert_int_equal(pb_solver_moves(sv, pb_testset_state(t, i), 1, v, &err), 0);
  const int8_t *lab = pb_testset_labels(t, i);
  for (int a = 0; a < g->num_actions; a++) {
    int want = v[a].result == PB_SOLVE_ILLEGAL ? PB_TS_ILLEGAL : v[a].result;
    if (lab[a] != want)
      fail_msg("%s position %zu action %d: label %d, solver %d",
               pb_testset_name(t), i, a, lab[a], want);
  }
}

static void test_builtin_tictactoe(void **state) {
  (void)state;
  pb_err_t err;
  pb_testset_t *t = pb_testset_builtin(T3, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_testset_count(t), 120);
  assert_string_equal(pb_testset_name(t), "builtin:tictactoe");
  assert_ptr_equal(pb_testset_game(t), T3);
  check_builtin_shape(t, 2, 7);
  pb_solver_t *sv = pb_solver_new(T3, 0, &err);
  assert_non_null(sv);
  for (size_t i = 0; i < pb_testset_count(t); i++) check_labels(sv, t, i);
  pb_solver_destroy(&sv);
  pb_testset_destroy(&t);
  /* pb_testset_open's names for the builtin set. */
  const char *names[3] = {NULL, "", "builtin"};
  for (int k = 0; k < 3; k++) {
    t = pb_testset_open(names[k], T3, &err);
    assert_non_null(t);
    assert_int_equal(pb_testset_count(t), 120);
    pb_testset_destroy(&t);
  }
}

static void test_builtin_connect4(void **state) {
  (void)state;
  pb_err_t err;
  pb_testset_t *t = pb_testset_builtin(C4, &err);
  if (t == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_testset_count(t), 1000);
  assert_string_equal(pb_testset_name(t), "builtin:connect4");
  check_builtin_shape(t, 6, 36);
  /* The late positions (weak solves of a few milliseconds each), every
   * 3rd of them. */
  pb_solver_t *sv = pb_solver_new(C4, 18, &err);
  assert_non_null(sv);
  int checked = 0, late = 0;
  for (size_t i = 0; i < pb_testset_count(t); i++) {
    if (C4->ply(pb_testset_state(t, i)) < 28) continue;
    if (late++ % 3 != 0) continue;
    check_labels(sv, t, i);
    checked++;
  }
  assert_true(checked >= 90);
  pb_solver_destroy(&sv);
  pb_testset_destroy(&t);
  /* A game with no shipped set. */
  pb_game_t fake = pb_game_connect4;
  fake.id = 99;
  fake.name = "fakegame";
  pb_err_clear(&err);
  assert_null(pb_testset_builtin(&fake, &err));
  assert_int_equal(err.code, PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "fakegame"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_parse_length),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_load),
      cmocka_unit_test(test_builtin_tictactoe),
      cmocka_unit_test(test_builtin_connect4),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
