/* test_elotable.c - elo.csv (common/rating/elotable): rows put in version order,
 * the CSV text exactly, a round trip through the file, files of an older
 * layout, and every kind of file that is not ours refused and left as it
 * is; the newest row for /metrics. */
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

#include "elo.h"
#include "elotable.h"
#include "proc.h"
#include "util.h"

static char g_dir[200];

static void spit(const char *path, const char *text) {
  assert_int_equal(pb_write_file(path, text, strlen(text), NULL), 0);
}

static const char OPP2[2][PB_ELOTABLE_SPEC_MAX] = {"random", "lookahead:1"};

static pb_elotable_row_t mkrow(uint64_t v, double elo, int w, int d, int l) {
  pb_elotable_row_t r;
  memset(&r, 0, sizeof r);
  r.version = r.iteration = v;
  r.elo = elo;
  r.lo = elo - 50;
  r.hi = elo + 60;
  r.n_opponents = 2;
  r.wdl[0][0] = w;
  r.wdl[0][1] = d;
  r.wdl[0][2] = l;
  r.wdl[1][0] = 1;
  r.games = w + d + l + 1;
  r.seconds = 1.25;
  r.acc_q = r.acc_v = r.acc_beam = r.minutes = NAN;
  return r;
}

static void test_table_roundtrip(void **state) {
  (void)state;
  pb_err_t err;
  pb_elotable_t *t = pb_elotable_new(OPP2, 2, &err);
  assert_non_null(t);
  pb_elotable_row_t r5 = mkrow(5, 1234.56, 3, 1, 0),
                   r2 = mkrow(2, 1100, 1, 1, 1);
  pb_elotable_row_t r9 = mkrow(9, NAN, 0, 0, 4);
  r9.lo = r9.hi = NAN;
  r9.flags = PB_ELOTABLE_NO_ANCHOR;
  pb_elotable_row_t r7 = mkrow(7, 1900, 4, 0, 0);
  r7.flags = PB_ELO_ALL_WINS | PB_ELO_ADJUSTED;
  r7.acc_q = 0.8125;
  r7.acc_v = 0.5;
  r7.acc_beam = 0.9375;
  r7.minutes = 12.345;
  assert_int_equal(pb_elotable_put(t, &r5, &err), 0);
  assert_int_equal(pb_elotable_put(t, &r9, &err), 0);
  assert_int_equal(pb_elotable_put(t, &r2, &err), 0);
  assert_int_equal(pb_elotable_put(t, &r7, &err), 0);
  r5.elo = 1235.0; /* same version: replaced */
  assert_int_equal(pb_elotable_put(t, &r5, &err), 0);
  assert_int_equal(pb_elotable_count(t), 4);
  assert_int_equal(pb_elotable_row(t, 0)->version, 2);
  assert_int_equal(pb_elotable_row(t, 3)->version, 9);
  assert_null(pb_elotable_row(t, 4));
  assert_non_null(pb_elotable_find(t, 7));
  assert_null(pb_elotable_find(t, 6));
  pb_elotable_row_t bad = r5;
  bad.n_opponents = 3;
  assert_int_equal(pb_elotable_put(t, &bad, &err), PB_EINVAL);

  char *csv = NULL;
  assert_int_equal(pb_elotable_csv(t, &csv, NULL, &err), 0);
  const char *want =
      "iteration,version,elo,elo_lo,elo_hi,note,games,seconds,random_w,"
      "random_d,random_l,lookahead:1_w,lookahead:1_d,lookahead:1_l,acc_q,"
      "acc_v,acc_beam,minutes\n"
      "2,2,1100.0,1050.0,1160.0,,4,1.25,1,1,1,1,0,0,,,,\n"
      "5,5,1235.0,1184.6,1294.6,,5,1.25,3,1,0,1,0,0,,,,\n"
      "7,7,1900.0,1850.0,1960.0,all_wins,5,1.25,4,0,0,1,0,0,0.812,0.500,"
      "0.938,12.35\n"
      "9,9,,,,no_anchor,5,1.25,0,0,4,1,0,0,,,,\n";
  assert_string_equal(csv, want);
  char path[256];
  snprintf(path, sizeof path, "%s/table-test.csv", g_dir);
  assert_int_equal(pb_elotable_save(t, path, &err), 0);
  pb_elotable_t *u = pb_elotable_load(path, OPP2, 2, &err);
  if (u == NULL) fail_msg("%s", err.msg);
  char *csv2 = NULL;
  assert_int_equal(pb_elotable_csv(u, &csv2, NULL, &err), 0);
  assert_string_equal(csv2, want);
  assert_int_equal(pb_elotable_row(u, 2)->flags,
                   PB_ELO_ALL_WINS | PB_ELO_ADJUSTED);
  assert_true(isnan(pb_elotable_row(u, 3)->elo));
  assert_true(fabs(pb_elotable_row(u, 2)->acc_q - 0.812) < 1e-9);
  assert_true(fabs(pb_elotable_row(u, 2)->minutes - 12.35) < 1e-9);
  assert_true(isnan(pb_elotable_row(u, 0)->acc_beam));
  free(csv);
  free(csv2);

  /* A table written before the accuracy columns existed still loads (its
   * rows have none), and is written back with them. */
  const char *old =
      "iteration,version,elo,elo_lo,elo_hi,note,games,seconds,random_w,"
      "random_d,random_l,lookahead:1_w,lookahead:1_d,lookahead:1_l\n"
      "2,2,1100.0,1050.0,1160.0,,4,1.25,1,1,1,1,0,0\n";
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(old, f);
  fclose(f);
  pb_elotable_t *o = pb_elotable_load(path, OPP2, 2, &err);
  if (o == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_elotable_count(o), 1);
  assert_true(isnan(pb_elotable_row(o, 0)->acc_q));
  pb_elotable_destroy(&o);
  /* A bad accuracy is refused, naming the column. */
  f = fopen(path, "w");
  assert_non_null(f);
  fputs("iteration,version,elo,elo_lo,elo_hi,note,games,seconds,random_w,"
        "random_d,random_l,lookahead:1_w,lookahead:1_d,lookahead:1_l,acc_q,"
        "acc_v,acc_beam,minutes\n"
        "2,2,1100.0,1050.0,1160.0,,4,1.25,1,1,1,1,0,0,1.5,,,\n",
        f);
  fclose(f);
  assert_null(pb_elotable_load(path, OPP2, 2, &err));
  assert_int_equal(err.code, PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "acc_q"));
  pb_elotable_destroy(&t);
  pb_elotable_destroy(&u);
  assert_null(u);
  /* A missing file is an empty table. */
  snprintf(path, sizeof path, "%s/no-such.csv", g_dir);
  u = pb_elotable_load(path, OPP2, 2, &err);
  assert_non_null(u);
  assert_int_equal(pb_elotable_count(u), 0);
  pb_elotable_destroy(&u);
  /* Bad opponent lists. */
  const char commas[1][PB_ELOTABLE_SPEC_MAX] = {"a,b"};
  assert_null(pb_elotable_new(commas, 1, &err));
  assert_null(pb_elotable_new(OPP2, 0, &err));
}

/* Files that are not ours, or not for these opponents, are refused (and
 * left as they are). */
static void test_table_refuses(void **state) {
  (void)state;
  static const char *hdr =
      "iteration,version,elo,elo_lo,elo_hi,note,games,seconds,random_w,"
      "random_d,random_l,lookahead:1_w,lookahead:1_d,lookahead:1_l\n";
  struct {
    const char *body; /* after the header, or the whole file if no_hdr */
    int no_hdr;
    int code;
    const char *says;
  } cases[] = {
      {"name,score\nalice,3\n", 1, PB_ECORRUPT, "not the header"},
      {"", 1, PB_ECORRUPT, "empty"},
      {"iteration,version,elo,elo_lo,elo_hi,note,games,seconds,random_w,"
       "random_d,random_l\n",
       1, PB_EMISMATCH, "opponents random, but"},
      {"1,1,1000.0,900.0,1100.0,,2,0.5,1,0,0,1,0,0\n", 0, 0, NULL},
      {"1,1,1000.0,900.0,1100.0,,3,0.5,1,0,0,1,0,0\n", 0, PB_ECORRUPT,
       "add up"},
      {"1,1,1000.0,900.0,1100.0,,2,0.5,1,0,0,1,0\n", 0, PB_ECORRUPT, ":2:"},
      {"1,1,1000.0,900.0,1100.0,,2,0.5,1,0,0,1,0,0,7\n", 0, PB_ECORRUPT,
       "fields"},
      {"1,1,abc,900.0,1100.0,,2,0.5,1,0,0,1,0,0\n", 0, PB_ECORRUPT, "elo"},
      {"1,1,1000.0,900.0,1100.0,,2,0.5,-1,0,0,1,0,2\n", 0, PB_ECORRUPT,
       "count"},
      {"1,1,1000.0,900.0,1100.0,weird,2,0.5,1,0,0,1,0,0\n", 0, PB_ECORRUPT,
       "note"},
      {"1,1,1000.0,1100.0,1200.0,,2,0.5,1,0,0,1,0,0\n", 0, PB_ECORRUPT,
       "agree"},
      {"2,2,1000.0,900.0,1100.0,,2,0.5,1,0,0,1,0,0\n"
       "1,1,1000.0,900.0,1100.0,,2,0.5,1,0,0,1,0,0\n",
       0, PB_ECORRUPT, "not after"},
      {"1,1,1000.0,900.0,1100.0,,2,0.5,1,0,0,1,0,0\n\n"
       "2,2,1000.0,900.0,1100.0,,2,0.5,1,0,0,1,0,0\n",
       0, PB_ECORRUPT, "empty line"},
  };
  char path[256], text[1024];
  snprintf(path, sizeof path, "%s/refuse-test.csv", g_dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(text, sizeof text, "%s%s", cases[i].no_hdr ? "" : hdr,
             cases[i].body);
    spit(path, text);
    pb_err_t err;
    pb_err_clear(&err);
    pb_elotable_t *t = pb_elotable_load(path, OPP2, 2, &err);
    if (cases[i].code == 0) {
      if (t == NULL) fail_msg("case %zu: %s", i, err.msg);
      pb_elotable_destroy(&t);
      continue;
    }
    if (t != NULL) fail_msg("case %zu was accepted", i);
    if (err.code != cases[i].code || strstr(err.msg, cases[i].says) == NULL)
      fail_msg("case %zu: %s (%s)", i, err.msg, pb_err_name(err.code));
    char *back = tp_slurp(path);
    assert_string_equal(back, text);
    free(back);
  }
  unlink(path);
}

/* The newest row of RUN_DIR/elo.csv, for the learner's /metrics. */
static void test_latest(void **state) {
  (void)state;
  char dir[256], path[320];
  tp_tmpdir(dir, sizeof dir, "elolatest");
  pb_elotable_row_t row;
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t c;
  pb_config_defaults(&c);
  assert_int_equal(pb_config_set(&c, "eval.opponents", "random,lookahead:1",
                                 &err),
                   0);
  assert_int_equal(pb_elotable_latest(dir, &c, &row, &err), PB_ENOTFOUND);
  pb_elotable_t *t = pb_elotable_new(OPP2, 2, &err);
  pb_elotable_row_t r3 = mkrow(3, 1300, 2, 0, 1), r8 = mkrow(8, 1450, 3, 0, 0);
  assert_int_equal(pb_elotable_put(t, &r8, &err), 0);
  assert_int_equal(pb_elotable_put(t, &r3, &err), 0);
  snprintf(path, sizeof path, "%s/elo.csv", dir);
  assert_int_equal(pb_elotable_save(t, path, &err), 0);
  pb_elotable_destroy(&t);
  assert_int_equal(pb_elotable_latest(dir, &c, &row, &err), 0);
  assert_int_equal(row.version, 8);
  assert_true(fabs(row.elo - 1450) < 1e-9);
  /* Another opponents list: the file is not this evaluation's. */
  assert_int_equal(pb_config_set(&c, "eval.opponents", "random", &err), 0);
  assert_int_equal(pb_elotable_latest(dir, &c, &row, &err), PB_EMISMATCH);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  tp_tmpdir(g_dir, sizeof g_dir, "elotable");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_roundtrip),
      cmocka_unit_test(test_table_refuses),
      cmocka_unit_test(test_latest),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char path[320];
  snprintf(path, sizeof path, "%s/table-test.csv", g_dir);
  unlink(path);
  rmdir(g_dir);
  return rc;
}
