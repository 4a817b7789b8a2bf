/* test_evaluator.c - the evaluator: the SVG chart, and rating
 * a fixture run directory (a real 2-iteration training run), resuming and
 * following it through evalrun.h. The probs-evaluator process itself:
 * test_evaluator_proc.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "elo.h"
#include "elotable.h"
#include "evalrun.h"
#include "precision.h"
#include "record.h"
#include "json.h"
#include "log.h"
#include "rundir.h"
#include "svgplot.h"
#include "util.h"

#include "evaluator_fixtures.h"

/* ------------------------------------------------------------ helpers */

/* python3's XML parser, where there is one: 0 parsed, 1 failed, -1 no
 * python3 with xml.etree. */
static int python_xml_ok(const char *path) {
  if (system("python3 -c 'import xml.etree.ElementTree' >/dev/null 2>&1") != 0)
    return -1;
  char cmd[4400];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import sys, xml.etree.ElementTree as E; "
           "r = E.parse(sys.argv[1]).getroot(); "
           "sys.exit(0 if r.tag.endswith(\"svg\") else 1)' '%s'",
           path);
  return system(cmd) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ svgplot */

static void test_ticks(void **state) {
  (void)state;
  double first, step;
  assert_int_equal(pb_svgplot_ticks(0, 10, 6, &first, &step), 6);
  assert_true(first == 0 && step == 2);
  assert_int_equal(pb_svgplot_ticks(993, 1612, 7, &first, &step), 4);
  assert_true(first == 1000 && step == 200);
  assert_int_equal(pb_svgplot_ticks(950, 1612, 8, &first, &step), 7);
  assert_true(first == 1000 && step == 100);
  assert_int_equal(pb_svgplot_ticks(-0.3, 0.3, 5, &first, &step), 3);
  assert_true(fabs(first + 0.2) < 1e-12 && fabs(step - 0.2) < 1e-12);
  assert_int_equal(pb_svgplot_ticks(1, 1, 5, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(2, 1, 5, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(0, NAN, 5, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(0, 1, 1, &first, &step), 0);
  /* Every tick lies in the range and the steps are 1, 2 or 5 x 10^k. */
  for (double hi = 0.7; hi < 5e4; hi *= 3.1) {
    int n = pb_svgplot_ticks(-hi / 3, hi, 7, &first, &step);
    assert_true(n >= 3 && n <= 13);
    assert_true(first >= -hi / 3 - 1e-9 && first + (n - 1) * step <= hi + 1e-9);
    double m = step / pow(10, floor(log10(step)));
    assert_true(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9);
  }
}

static void test_svg_wellformed(void **state) {
  (void)state;
  pb_svgplot_point_t pts[5] = {{0, 1000, 900, 1100, 0},
                               {1, 1200, 1100, 1300, 0},
                               {2, NAN, NAN, NAN, 0},
                               {3, 1400, NAN, NAN, 0},
                               {4, 1700, 1500, 1900, 1}};
  pb_svgplot_hline_t lines[2] = {{1000, "random (1000)"},
                                 {1183, "a<b & \"c\""}};
  pb_svgplot_t p = {0};
  p.title = "Elo of <run> & co";
  p.xlabel = "iteration";
  p.ylabel = "Elo";
  p.series = "Elo";
  p.pts = pts;
  p.n = 5;
  p.lines = lines;
  p.nlines = 2;
  char *svg = NULL;
  size_t len = 0;
  pb_err_t err;
  assert_int_equal(pb_svgplot_render(&p, &svg, &len, &err), 0);
  assert_int_equal(strlen(svg), len);
  const char *why = xml_check(svg, "svg");
  if (why != NULL) fail_msg("svg: %s\n%s", why, svg);
  assert_non_null(strstr(svg, "Elo of &lt;run&gt; &amp; co"));
  assert_non_null(strstr(svg, "a&lt;b &amp; &quot;c&quot;"));
  assert_non_null(strstr(svg, "<polyline"));
  assert_non_null(strstr(svg, "<polygon")); /* the band over points 0-1 */
  assert_int_equal(count_str(svg, "stroke-dasharray"), 3); /* 2 + legend */
  /* 4 finite points + 1 legend marker + 1 legend "won or lost all". */
  assert_int_equal(count_str(svg, "<circle"), 6);
  assert_non_null(strstr(svg, ">iteration</text>"));
  assert_null(strstr(svg, "nan"));
  assert_null(strstr(svg, "inf"));
  free(svg);

  /* Nothing to draw yet: still a valid chart that says so. */
  p.n = 0;
  p.nlines = 0;
  assert_int_equal(pb_svgplot_render(&p, &svg, NULL, &err), 0);
  assert_null(xml_check(svg, "svg"));
  assert_non_null(strstr(svg, "no data yet"));
  free(svg);
  /* One point. */
  p.pts = &pts[4];
  p.n = 1;
  assert_int_equal(pb_svgplot_render(&p, &svg, NULL, &err), 0);
  assert_null(xml_check(svg, "svg"));
  assert_null(strstr(svg, "nan"));
  free(svg);
  /* Bad arguments. */
  p.width = 50;
  assert_int_equal(pb_svgplot_render(&p, &svg, NULL, &err), PB_EINVAL);
  assert_null(svg);
  p.width = 0;
  p.n = -1;
  assert_int_equal(pb_svgplot_render(&p, &svg, NULL, &err), PB_EINVAL);
  assert_int_equal(pb_svgplot_render(NULL, &svg, NULL, &err), PB_EINVAL);
  /* The checker itself catches broken documents. */
  assert_non_null(xml_check("<svg><g></svg></g>", "svg"));
  assert_non_null(xml_check("<svg a=b></svg>", "svg"));
  assert_non_null(xml_check("<svg>&</svg>", "svg"));
  assert_non_null(xml_check("<svg></svg><svg></svg>", "svg"));
  assert_null(
      xml_check("<?xml version=\"1.0\"?><svg><g a=\"1\"/></svg>", "svg"));
}

/* --------------------------------------------------- rating a run dir */

static pb_evalrun_t *open_run(int every, pb_log_t *log, pb_evalrun_opts_t *o) {
  pb_err_t err;
  assert_int_equal(pb_evalrun_opts_from_config(o, &FX->cfg, &err), 0);
  pb_evalrun_dir_opts_t d = {every, 0, log, NULL};
  pb_evalrun_t *r = pb_evalrun_new(FX->dir, o, &d, &err);
  if (r == NULL) fail_msg("%s", err.msg);
  return r;
}

static void test_opts(void **state) {
  (void)state;
  pb_evalrun_opts_t o;
  pb_err_t err;
  pb_config_t c = FX->cfg;
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  assert_int_equal(o.n_opponents, 2);
  assert_string_equal(o.opponents[1], "lookahead:1");
  assert_true(o.anchor[0] == 1000 && o.anchor[1] == 1183);
  assert_int_equal(o.games, 6);
  /* The accuracy's search agent: abnet by default (at the config's
   * nodes), beam when eval.search says so, MCTS in an alphazero run. */
  char spec[128], name[64];
  assert_int_equal(o.search_beam, 0);
  pb_evalrun_search_spec(&o, "c.pbck", spec, sizeof spec, name, sizeof name);
  assert_string_equal(spec, "abnet:c.pbck,nodes=60,precision=fp32");
  assert_string_equal(name, "abnet nodes=60");
  pb_config_t dc;
  pb_config_defaults(&dc);
  assert_string_equal(dc.eval.search, "abnet");
  assert_int_equal(dc.eval.search_nodes, 500);
  assert_int_equal(pb_config_set(&c, "eval.search", "beam", &err), 0);
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  pb_evalrun_search_spec(&o, "c.pbck", spec, sizeof spec, name, sizeof name);
  assert_string_equal(spec, "beam:c.pbck,E=10,M=3,precision=fp32");
  assert_string_equal(name, "E=10,M=3");
  assert_int_equal(pb_config_set(&c, "eval.search", "mcts", &err), PB_ECONFIG);
  assert_int_equal(pb_config_set(&c, "algorithm", "alphazero", &err), 0);
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  pb_evalrun_search_spec(&o, "c.pbck", spec, sizeof spec, NULL, 0);
  assert_string_equal(spec, "mcts:c.pbck,N=100,precision=fp32");
  /* The networks play in the evaluator's own model.precision, resolved
   * here: auto is bf16 exactly where this CPU has it natively. */
  assert_int_equal(pb_config_set(&c, "model.precision", "auto", &err), 0);
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  assert_string_equal(o.precision,
                      pb_precision_native("cpu", NULL, 0) ? "bf16" : "fp32");
  c = FX->cfg;
  snprintf(c.eval.opponents, sizeof c.eval.opponents,
           "lookahead:3,alphabeta:2,random,lookahead:2");
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  assert_true(o.anchor[0] == 1603 && isnan(o.anchor[1]) &&
              o.anchor[2] == 1000 && o.anchor[3] == 1501);
  assert_int_equal(pb_evalrun_set_anchor(&o, "alphabeta:2=1800", &err), 0);
  assert_true(o.anchor[1] == 1800);
  assert_int_equal(pb_evalrun_set_anchor(&o, "random=none", &err), 0);
  assert_true(isnan(o.anchor[2]));
  assert_int_equal(pb_evalrun_set_anchor(&o, "lookahead:1=1200", &err),
                   PB_ENOTFOUND);
  assert_int_equal(pb_evalrun_set_anchor(&o, "random=12x", &err), PB_EINVAL);
  assert_int_equal(pb_evalrun_set_anchor(&o, "random", &err), PB_EINVAL);
  assert_int_equal(pb_evalrun_set_anchor(&o, "=5", &err), PB_EINVAL);
  snprintf(c.eval.opponents, sizeof c.eval.opponents, "random,random");
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "twice"));
  double r;
  assert_int_equal(pb_elo_default_anchor("lookahead:2", &r), 0);
  assert_true(r == 1501);
  assert_int_equal(pb_elo_default_anchor("lookahead:4", &r), PB_ENOTFOUND);
  /* A bad opponent spec is refused when the run is opened. */
  snprintf(c.eval.opponents, sizeof c.eval.opponents, "random,minimax:3");
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  pb_evalrun_dir_opts_t d = {1, 0, NULL, NULL};
  assert_null(pb_evalrun_new(FX->dir, &o, &d, &err));
  assert_non_null(strstr(err.msg, "minimax"));

  /* eval.anchors over the defaults; the lookahead ladder is Connect
   * Four's: in Othello only random keeps a default. */
  snprintf(c.eval.opponents, sizeof c.eval.opponents,
           "random,greedy,lookahead:1,alphabeta:2");
  snprintf(c.game, sizeof c.game, "othello");
  snprintf(c.eval.anchors, sizeof c.eval.anchors,
           "greedy=1032,alphabeta:2=1335");
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  assert_true(o.anchor[0] == 1000);
  assert_true(o.anchor[1] == 1032);
  assert_true(isnan(o.anchor[2]));
  assert_true(o.anchor[3] == 1335);
  snprintf(c.eval.anchors, sizeof c.eval.anchors, "random=none,greedy=1e9");
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "eval.anchors"));
  assert_non_null(strstr(err.msg, "1e9"));
  snprintf(c.eval.anchors, sizeof c.eval.anchors, "alphabeta:3=1400");
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), PB_ECONFIG);
  assert_non_null(strstr(err.msg, "alphabeta:3"));
  snprintf(c.eval.anchors, sizeof c.eval.anchors, "greedy=1032,,");
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), PB_ECONFIG);
  snprintf(c.game, sizeof c.game, "connect4");
  c.eval.anchors[0] = '\0';
  assert_int_equal(pb_evalrun_opts_from_config(&o, &c, &err), 0);
  assert_true(o.anchor[2] == 1183);
}

/* Every version rated, a correct csv (counts, the fit, sorted), a
 * well-formed svg, a metrics line and a log line per result. */
static void test_all_writes_csv_and_svg(void **state) {
  (void)state;
  clean_outputs();
  pb_err_t err;
  char path[256];
  fx_path(path, sizeof path, "learner.log");
  pb_log_t *log = pb_log_new("evaluator", path, PB_LOG_INFO, &err);
  assert_non_null(log);
  pb_log_set_stderr(log, 0);
  pb_evalrun_opts_t o;
  pb_evalrun_t *r = open_run(1, log, &o);
  int rated = -1;
  assert_int_equal(pb_evalrun_all(r, &rated, &err), 0);
  assert_int_equal(rated, 3);
  const pb_elotable_t *t = pb_evalrun_table(r);
  assert_int_equal(pb_elotable_count(t), 3);

  /* The csv, read back by hand. */
  fx_path(path, sizeof path, "elo.csv");
  char *csv = slurp(path);
  assert_non_null(csv);
  assert_true(!strncmp(csv, "iteration,version,elo,elo_lo,elo_hi,", 36));
  assert_int_equal(count_str(csv, "\n"), 4);
  char *line = strchr(csv, '\n') + 1;
  for (int v = 0; v < 3; v++) {
    unsigned long long it, ver;
    double elo, lo, hi, secs;
    int games, w1, d1, l1, w2, d2, l2, n = 0;
    assert_int_equal(
        sscanf(line, "%llu,%llu,%lf,%lf,%lf,,%d,%lf,%d,%d,%d,%d,%d,%d%n", &it,
               &ver, &elo, &lo, &hi, &games, &secs, &w1, &d1, &l1, &w2, &d2,
               &l2, &n),
        13);
    assert_true(it == (unsigned long long)v && ver == it);
    assert_int_equal(w1 + d1 + l1, 6);
    assert_int_equal(w2 + d2 + l2, 6);
    assert_int_equal(games, 12);
    assert_true(lo <= elo && elo <= hi);
    /* The Elo is the maximum-likelihood fit of these counts. */
    pb_elo_record_t recs[2] = {{1000, w1, d1, l1}, {1183, w2, d2, l2}};
    pb_elo_fit_t f;
    assert_int_equal(pb_elo_fit_one(recs, 2, &f, NULL), 0);
    assert_true(fabs(f.rating - elo) < 0.051 && fabs(f.lo - lo) < 0.051 &&
                fabs(f.hi - hi) < 0.051);
    /* The same counts come from a fresh single-threaded rating. */
    pb_evalrun_opts_t o1 = o;
    o1.threads = 1;
    char ck[4200];
    pb_rundir_ckpt_path(FX->dir, (unsigned long long)v, ck, sizeof ck);
    pb_elotable_row_t row;
    assert_int_equal(pb_evalrun_play(&o1, ck, (uint64_t)v, &row, &err), 0);
    assert_true(row.wdl[0][0] == w1 && row.wdl[0][1] == d1 &&
                row.wdl[1][0] == w2 && row.wdl[1][2] == l2);
    /* Its games, recorded in games/: the same counts, game by game. */
    char gp[64];
    snprintf(gp, sizeof gp, "games/eval-v%06d.jsonl", v);
    fx_path(path, sizeof path, gp);
    pb_record_reader_t *rd = pb_record_reader_open(path, &err);
    if (rd == NULL) fail_msg("%s", err.msg);
    int wdl[2][3] = {{0}}, k = 0;
    pb_record_t rec;
    while (pb_record_reader_next(rd, &rec, &err) == 1) {
      const int j = k / 6, net_first = strncmp(rec.first, "ckpt-", 5) == 0;
      assert_int_equal(rec.version, v);
      assert_string_equal(net_first ? rec.second : rec.first,
                          j == 0 ? "random" : "lookahead:1");
      int res = net_first ? rec.result : -rec.result;
      wdl[j][res > 0 ? 0 : res == 0 ? 1 : 2]++;
      k++;
    }
    assert_int_equal(k, 12);
    pb_record_reader_destroy(&rd);
    assert_true(wdl[0][0] == w1 && wdl[0][1] == d1 && wdl[0][2] == l1 &&
                wdl[1][0] == w2 && wdl[1][1] == d2 && wdl[1][2] == l2);
    line = strchr(line, '\n') + 1;
  }
  free(csv);

  /* The svg. */
  fx_path(path, sizeof path, "elo.svg");
  char *svg = slurp(path);
  assert_non_null(svg);
  const char *why = xml_check(svg, "svg");
  if (why != NULL) fail_msg("elo.svg: %s", why);
  assert_int_equal(python_xml_ok(path) == 1, 0);
  assert_non_null(strstr(svg, "random (1000)"));
  assert_non_null(strstr(svg, "lookahead:1 (1183)"));
  assert_non_null(strstr(svg, "<polygon"));
  assert_true(count_str(svg, "<circle") >= 3);
  /* The labels of the anchors are drawn after (over) the data. */
  assert_true(strstr(svg, "random (1000)") > strstr(svg, "<polyline"));
  free(svg);
  /* The same against wall time. */
  fx_path(path, sizeof path, "elo-time.svg");
  svg = slurp(path);
  assert_non_null(svg);
  why = xml_check(svg, "svg");
  if (why != NULL) fail_msg("elo-time.svg: %s", why);
  assert_non_null(strstr(svg, "minutes since the run started"));
  assert_non_null(strstr(svg, "random (1000)"));
  /* Each chart its own title. */
  assert_non_null(strstr(svg, "<title>Elo (connect4) by wall time</title>"));
  free(svg);
  fx_path(path, sizeof path, "elo.svg");
  svg = slurp(path);
  assert_non_null(strstr(svg, "<title>Elo (connect4) by version</title>"));
  free(svg);

  /* metrics.jsonl: one valid JSON line per result. */
  fx_path(path, sizeof path, "metrics.jsonl");
  char *m = slurp(path);
  assert_non_null(m);
  int elo_lines = 0;
  for (char *p = m; *p;) {
    char *nl = strchr(p, '\n');
    assert_non_null(nl);
    *nl = '\0';
    if (strstr(p, "\"event\":\"elo\"") != NULL) {
      elo_lines++;
      assert_int_equal(pb_json_validate(p), 0);
      assert_non_null(strstr(p, "\"elo_lo\":"));
      assert_non_null(strstr(p, "\"lookahead:1\":{\"w\":"));
    }
    p = nl + 1;
  }
  assert_int_equal(elo_lines, 3);
  free(m);
  fx_path(path, sizeof path, "learner.log");
  char *lg = slurp(path);
  assert_int_equal(count_str(lg, "evaluator INFO  version "), 6);
  assert_int_equal(count_str(lg, ": Elo "), 3);
  /* Connect Four has a solver: every version also got its accuracies. */
  assert_int_equal(count_str(lg, "share of optimal moves on 1000 solved"), 3);
  assert_int_equal(count_str(lg, ", abnet (nodes=60) 0."), 3);
  free(lg);
  for (int i = 0; i < pb_elotable_count(t); i++) {
    const pb_elotable_row_t *row = pb_elotable_row(t, i);
    assert_true(row->acc_q >= 0 && row->acc_q <= 1);
    assert_true(row->acc_v >= 0 && row->acc_v <= 1);
    assert_true(row->acc_beam >= 0 && row->acc_beam <= 1);
    assert_true(row->minutes >= 0);
  }
  fx_path(path, sizeof path, "elo.svg");
  svg = slurp(path);
  assert_non_null(strstr(svg, "accuracy: greedy Q"));
  assert_non_null(strstr(svg, ">accuracy: abnet nodes=60</text>"));
  /* Every name of the legend whole and inside the picture. */
  why = svg_legend_fits(svg, pb_svgplot_text_width);
  if (why != NULL) fail_msg("elo.svg: %s", why);
  free(svg);
  fx_path(path, sizeof path, "metrics.jsonl");
  m = slurp(path);
  assert_int_equal(count_str(m, "\"acc_q\":0."), 3);
  assert_int_equal(count_str(m, "\"beam_agent\":\"abnet nodes=60\""), 3);
  free(m);
  pb_evalrun_destroy(&r);
  pb_log_destroy(&log);
}

/* A second pass rates nothing; a version removed from elo.csv is rated
 * again, to exactly the same row, and the others are kept as they were. */
static void test_resume(void **state) {
  (void)state;
  clean_outputs();
  pb_err_t err;
  pb_evalrun_opts_t o;
  pb_evalrun_t *r = open_run(1, NULL, &o);
  int rated = 0;
  assert_int_equal(pb_evalrun_all(r, &rated, &err), 0);
  assert_int_equal(rated, 3);
  pb_evalrun_destroy(&r);
  char path[256];
  fx_path(path, sizeof path, "elo.csv");
  char *full = slurp(path);

  r = open_run(1, NULL, &o);
  assert_int_equal(pb_elotable_count(pb_evalrun_table(r)), 3);
  assert_int_equal(pb_evalrun_all(r, &rated, &err), 0);
  assert_int_equal(rated, 0);
  pb_evalrun_destroy(&r);
  char *again = slurp(path);
  assert_string_equal(again, full);
  free(again);

  /* Drop version 1's row (the third line). */
  char *cut = strdup(full);
  char *l2 = strchr(strchr(cut, '\n') + 1, '\n') + 1;
  char *l3 = strchr(l2, '\n') + 1;
  memmove(l2, l3, strlen(l3) + 1);
  spit(path, cut);
  /* every = 2 does not stop --all from rating version 1: it rates every
   * version elo.csv lacks (issue 39: "rated 0 version(s)"). */
  r = open_run(2, NULL, &o);
  assert_int_equal(pb_elotable_count(pb_evalrun_table(r)), 2);
  assert_int_equal(pb_evalrun_all(r, &rated, &err), 0);
  assert_int_equal(rated, 1);
  pb_evalrun_destroy(&r);
  again = slurp(path);
  /* Same text except the seconds column of the re-rated row. */
  char *a = full, *b = again;
  int lines = 0;
  while (*a && *b) {
    char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    assert_non_null(ea);
    assert_non_null(eb);
    /* Fields 0-6 and 8-: everything but the time. */
    char la[512], lb[512];
    snprintf(la, sizeof la, "%.*s", (int)(ea - a), a);
    snprintf(lb, sizeof lb, "%.*s", (int)(eb - b), b);
    char *fa[20], *fb[20];
    int na = 0, nb = 0;
    for (char *p = strtok(la, ","); p; p = strtok(NULL, ",")) fa[na++] = p;
    for (char *p = strtok(lb, ","); p; p = strtok(NULL, ",")) fb[nb++] = p;
    assert_int_equal(na, nb);
    for (int k = 0; k < na; k++)
      if (lines == 0 || k != 6) assert_string_equal(fa[k], fb[k]);
    a = ea + 1;
    b = eb + 1;
    lines++;
  }
  assert_int_equal(lines, 4);
  free(again);
  free(cut);
  free(full);
}

/* Following: the first step jumps to the newest version, later steps
 * find nothing new; every = 3 picks version 0 and the final step still
 * rates the newest. */
static void test_follow_steps(void **state) {
  (void)state;
  clean_outputs();
  pb_err_t err;
  char path[256];
  fx_path(path, sizeof path, "learner.log");
  pb_log_t *log = pb_log_new("evaluator", path, PB_LOG_INFO, &err);
  pb_log_set_stderr(log, 0);
  pb_evalrun_opts_t o;
  pb_evalrun_t *r = open_run(1, log, &o);
  uint64_t v = 99;
  assert_int_equal(pb_evalrun_follow_step(r, 0, &v, &err), 1);
  assert_int_equal(v, 2);
  assert_int_equal(pb_evalrun_follow_step(r, 0, &v, &err), 0);
  assert_int_equal(pb_evalrun_follow_step(r, 1, &v, &err), 0);
  assert_int_equal(pb_elotable_count(pb_evalrun_table(r)), 1);
  char *lg = slurp(path);
  assert_non_null(strstr(lg, "skipping 2 versions (0..1)"));
  free(lg);
  pb_evalrun_destroy(&r);
  /* A restart does not go back to the skipped versions. */
  r = open_run(1, log, &o);
  assert_int_equal(pb_evalrun_follow_step(r, 0, &v, &err), 0);
  pb_evalrun_destroy(&r);

  clean_outputs();
  r = open_run(3, log, &o);
  assert_int_equal(pb_evalrun_follow_step(r, 0, &v, &err), 1);
  assert_int_equal(v, 0);
  assert_int_equal(pb_evalrun_follow_step(r, 0, &v, &err), 0);
  assert_int_equal(pb_evalrun_follow_step(r, 1, &v, &err), 1);
  assert_int_equal(v, 2);
  assert_int_equal(pb_elotable_count(pb_evalrun_table(r)), 2);
  pb_evalrun_destroy(&r);

  /* A stop request abandons a rating and writes nothing. */
  clean_outputs();
  volatile sig_atomic_t stop = 1;
  assert_int_equal(pb_evalrun_opts_from_config(&o, &FX->cfg, &err), 0);
  o.stop = &stop;
  pb_evalrun_dir_opts_t d = {1, 0, log, NULL};
  r = pb_evalrun_new(FX->dir, &o, &d, &err);
  assert_non_null(r);
  assert_int_equal(pb_evalrun_follow_step(r, 0, &v, &err), PB_EINTR);
  assert_int_equal(pb_elotable_count(pb_evalrun_table(r)), 0);
  fx_path(path, sizeof path, "elo.csv");
  assert_int_equal(access(path, F_OK), -1);
  pb_evalrun_destroy(&r);
  pb_log_destroy(&log);
}

/* A checkpoint that cannot be read is skipped with a note; the others are
 * rated. */
static void test_bad_checkpoint_skipped(void **state) {
  (void)state;
  clean_outputs();
  char path[256];
  fx_path(path, sizeof path, "checkpoints/ckpt-000003.pbck");
  spit(path, "not a checkpoint");
  pb_err_t err;
  pb_evalrun_opts_t o;
  pb_evalrun_t *r = open_run(1, NULL, &o);
  int rated = 0;
  assert_int_equal(pb_evalrun_all(r, &rated, &err), 0);
  assert_int_equal(rated, 3);
  assert_null(pb_elotable_find(pb_evalrun_table(r), 3));
  pb_evalrun_destroy(&r);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ticks),
      cmocka_unit_test(test_svg_wellformed),
      cmocka_unit_test(test_opts),
      cmocka_unit_test(test_all_writes_csv_and_svg),
      cmocka_unit_test(test_resume),
      cmocka_unit_test(test_follow_steps),
      cmocka_unit_test(test_bad_checkpoint_skipped),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
