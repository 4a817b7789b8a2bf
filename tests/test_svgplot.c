/* test_svgplot.c - the SVG line chart (common/rating/svgplot): tick choice, and
 * the series on the right axis: a well-formed document with each series
 * in the legend and drawn, the x range covering them, a chart without
 * them exactly as before, and the arguments it refuses; the legend's
 * names whole and inside the picture (widened, or wrapped when too long),
 * the title too. The same in a browser's own fonts: test_serve.sh. The main
 * series alone is also covered by test_evaluator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "svgplot.h"
#include "xml_check.h"

/* ------------------------------------------------------------ helpers */

/* python3's XML parser on the document, where there is one: 0 parsed,
 * 1 failed, -1 no python3 (the caller skips that check). */
static int python_xml_ok(const char *svg) {
  static int have = -1; /* -1 not yet known, 0 no, 1 yes */
  if (have < 0)
    have = system("python3 -c 'import xml.dom.minidom' >/dev/null 2>&1") == 0;
  if (!have) return -1;
  char path[] = "/tmp/test_svgplot-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  size_t len = strlen(svg);
  assert_int_equal(write(fd, svg, len), (ssize_t)len);
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import xml.dom.minidom, sys; "
           "xml.dom.minidom.parse(sys.argv[1])' '%s' 2>/dev/null",
           path);
  int rc = system(cmd);
  unlink(path);
  return rc == 0 ? 0 : 1;
}

static void assert_wellformed(const char *svg) {
  const char *why = xml_check(svg, "svg");
  if (why != NULL) fail_msg("svg: %s\n%s", why, svg);
}

static int count_str(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* The text of the group that starts with `open` (a "<g class=..." prefix)
 * up to its "</g>" (these groups hold no groups), malloc'd. */
static char *group(const char *svg, const char *open) {
  const char *a = strstr(svg, open);
  if (a == NULL) fail_msg("no %s in\n%s", open, svg);
  const char *b = strstr(a, "</g>");
  assert_non_null(b);
  char *g = strndup(a, (size_t)(b - a));
  assert_non_null(g);
  return g;
}

/* The value of the first attribute `name="` after `from`. */
static double attr(const char *from, const char *name) {
  char key[32];
  snprintf(key, sizeof key, " %s=\"", name);
  const char *a = strstr(from, key);
  if (a == NULL) fail_msg("no %s in %.80s", name, from);
  return strtod(a + strlen(key), NULL);
}

typedef struct {
  double L, T, W, H;
} area_t;

/* The plot area: the frame rectangle of the axes group. */
static area_t plot_area(const char *svg) {
  const char *a = strstr(svg, "<g class=\"axes\"");
  assert_non_null(a);
  a = strstr(a, "<rect");
  assert_non_null(a);
  area_t r = {attr(a, "x"), attr(a, "y"), attr(a, "width"), attr(a, "height")};
  return r;
}

/* The x pixel of every marker "<path d=\"Mx y..." in the text, at most
 * max; returns how many. */
static int marker_xs(const char *text, double *xs, int max) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, "<path d=\"M")) != NULL; p++, n++)
    if (n < max) xs[n] = strtod(p + strlen("<path d=\"M"), NULL);
  return n;
}

/* The cx of every circle in the main series' group, at most max. */
static int circle_xs(const char *svg, double *xs, int max) {
  char *g = group(svg, "<g class=\"series\"");
  int n = 0;
  for (const char *p = g; (p = strstr(p, "<circle")) != NULL; p++, n++)
    if (n < max) xs[n] = attr(p, "cx");
  free(g);
  return n;
}

static char *render_ok(const pb_svgplot_t *p) {
  char *svg = NULL;
  size_t len = 0;
  pb_err_t err = {0};
  int rc = pb_svgplot_render(p, &svg, &len, &err);
  if (rc != 0) fail_msg("render: %d %s", rc, err.msg);
  assert_non_null(svg);
  assert_int_equal(strlen(svg), len);
  return svg;
}

/* Refused with PB_EINVAL, a message naming `field`, and no output. */
static void assert_refused(const pb_svgplot_t *p, const char *field) {
  char *svg = (char *)"untouched";
  size_t len = 7;
  pb_err_t err = {0};
  assert_int_equal(pb_svgplot_render(p, &svg, &len, &err), PB_EINVAL);
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(svg);
  assert_int_equal(len, 0);
  if (strstr(err.msg, field) == NULL)
    fail_msg("message \"%s\" does not name %s", err.msg, field);
}

/* The fixture: an Elo series over iterations 0..4 with two baselines. */
static const pb_svgplot_point_t ELO[5] = {{0, 1000, 900, 1100, 0},
                                          {1, 1200, 1100, 1300, 0},
                                          {2, NAN, NAN, NAN, 0},
                                          {3, 1400, NAN, NAN, 0},
                                          {4, 1700, 1500, 1900, 1}};
static const pb_svgplot_hline_t BASE[2] = {{1000, "random (1000)"},
                                           {1183, "a<b & \"c\""}};

static pb_svgplot_t elo_chart(void) {
  pb_svgplot_t p = {.title = "Elo of <run> & co",
                    .xlabel = "iteration",
                    .ylabel = "Elo",
                    .series = "Elo",
                    .pts = ELO,
                    .n = 5,
                    .lines = BASE,
                    .nlines = 2};
  return p;
}

/* ------------------------------------------------------------ ticks */

static void test_ticks(void **state) {
  (void)state;
  double first, step;
  /* A share: 0, 0.2, ..., 1 (the right axis of accuracies). */
  assert_int_equal(pb_svgplot_ticks(0, 1, 6, &first, &step), 6);
  assert_true(first == 0 && fabs(step - 0.2) < 1e-12);
  assert_int_equal(pb_svgplot_ticks(0, 1, 5, &first, &step), 3);
  assert_true(first == 0 && step == 0.5);
  assert_int_equal(pb_svgplot_ticks(0, 10, 6, &first, &step), 6);
  assert_true(first == 0 && step == 2);
  assert_int_equal(pb_svgplot_ticks(993, 1612, 7, &first, &step), 4);
  assert_true(first == 1000 && step == 200);
  /* Negative and straddling ranges. */
  assert_int_equal(pb_svgplot_ticks(-5, -1, 5, &first, &step), 5);
  assert_true(first == -5 && step == 1);
  assert_int_equal(pb_svgplot_ticks(-0.3, 0.3, 5, &first, &step), 3);
  assert_true(fabs(first + 0.2) < 1e-12 && fabs(step - 0.2) < 1e-12);
  /* Small and large magnitudes. */
  assert_int_equal(pb_svgplot_ticks(0.001, 0.0012, 3, &first, &step), 3);
  assert_true(fabs(first - 0.001) < 1e-15 && fabs(step - 1e-4) < 1e-15);
  assert_int_equal(pb_svgplot_ticks(0, 1e6, 3, &first, &step), 3);
  assert_true(first == 0 && step == 5e5);
  /* A range that holds no multiple of the step. */
  assert_int_equal(pb_svgplot_ticks(0.31, 0.39, 2, &first, &step), 0);
  /* Bad arguments. */
  assert_int_equal(pb_svgplot_ticks(1, 1, 5, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(2, 1, 5, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(0, NAN, 5, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(-INFINITY, 0, 5, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(0, 1, 1, &first, &step), 0);
  assert_int_equal(pb_svgplot_ticks(0, 1, 5, NULL, &step), 0);
  assert_int_equal(pb_svgplot_ticks(0, 1, 5, &first, NULL), 0);
  /* Every tick lies in the range, the steps are 1, 2 or 5 x 10^k, and
   * there are no more than asked for and at least 2/5 of that. */
  for (double lo = -7.3; lo < 3; lo += 2.9)
    for (double hi = lo + 0.05; hi < lo + 5e4; hi = lo + (hi - lo) * 3.7)
      for (int target = 2; target <= 10; target += 4) {
        int n = pb_svgplot_ticks(lo, hi, target, &first, &step);
        /* raw = (hi - lo) / (target - 1) <= step <= 2.5 raw */
        assert_true(n <= target);
        assert_true(n >= (int)((target - 1) / 2.5));
        if (n == 0) continue;
        assert_true(first >= lo - 1e-9 * step);
        assert_true(first + (n - 1) * step <= hi + 1e-9 * step);
        assert_true(first - step < lo); /* the first multiple, no earlier */
        assert_true(first + n * step > hi);
        double m = step / pow(10, floor(log10(step)));
        assert_true(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 ||
                    fabs(m - 5) < 1e-9);
      }
}

/* ------------------------------------------------------------ right axis */

static void test_right_wellformed(void **state) {
  (void)state;
  pb_svgplot_point_t acc0[5] = {{0, 0.40, NAN, NAN, 0},
                                {1, 0.55, NAN, NAN, 0},
                                {2, NAN, NAN, NAN, 0}, /* the line breaks */
                                {3, 0.70, NAN, NAN, 0},
                                {4, 1.00, NAN, NAN, 0}};
  pb_svgplot_point_t acc1[5] = {{0, 0.1, 0, 0, 0},
                                {INFINITY, 0.2, 0, 0, 0},
                                {2, 0.3, 0, 0, 0},
                                {3, NAN, 0, 0, 0},
                                {4, 0.5, 0, 0, 0}}; /* three lone points */
  pb_svgplot_point_t acc2[2] = {{1, 0.0, 0, 0, 1}, {3, 0.25, 0, 0, 0}};
  pb_svgplot_point_t acc3[3] = {{0, 0.9, 0, 0, 0},
                                {2, 1.3, 0, 0, 0}, /* outside: clipped */
                                {4, 0.8, 0, 0, 0}};
  pb_svgplot_series_t right[4] = {{"policy <top-1> & co", acc0, 5},
                                  {NULL, acc1, 5},
                                  {"value head", acc2, 2},
                                  {"solver", acc3, 3}};
  pb_svgplot_t p = elo_chart();
  p.right = right;
  p.nright = 4;
  p.y2label = "accuracy (share)";
  p.y2min = 0;
  p.y2max = 1;
  char *svg = render_ok(&p);
  assert_wellformed(svg);
  if (python_xml_ok(svg) == 1) fail_msg("python3 rejects the svg:\n%s", svg);
  assert_null(strstr(svg, "nan"));
  assert_null(strstr(svg, "inf"));
  /* The right axis: its label and ticks 0.0 .. 1.0. */
  char *axis = group(svg, "<g class=\"axis2\"");
  assert_non_null(strstr(axis, ">accuracy (share)</text>"));
  assert_non_null(strstr(axis, "rotate(-90"));
  assert_non_null(strstr(axis, ">0.0</text>"));
  assert_non_null(strstr(axis, ">0.6</text>"));
  assert_non_null(strstr(axis, ">1.0</text>"));
  assert_int_equal(count_str(axis, "<text"), 7); /* 6 ticks + label */
  /* Every series in the legend under "right axis", escaped, a NULL name
   * as "series N". */
  char *legend = group(svg, "<g class=\"legend\"");
  assert_non_null(strstr(legend, ">right axis</text>"));
  assert_non_null(strstr(legend, ">policy &lt;top-1&gt; &amp; co</text>"));
  assert_non_null(strstr(legend, ">series 2</text>"));
  assert_non_null(strstr(legend, ">value head</text>"));
  assert_non_null(strstr(legend, ">solver</text>"));
  assert_true(strstr(legend, ">right axis<") < strstr(legend, ">solver<"));
  assert_int_equal(marker_xs(legend, NULL, 0), 4);
  /* The series: a line path each, but for the one of lone points; a
   * marker on each finite point: 4 + 3 + 2 + 3. */
  char *rs = group(svg, "<g class=\"right-series\"");
  assert_non_null(strstr(rs, "clip-path=\"url(#pb-plot)\""));
  assert_non_null(strstr(svg, "<clipPath id=\"pb-plot\">"));
  assert_int_equal(count_str(rs, "<path fill=\"none\""), 3);
  assert_int_equal(marker_xs(rs, NULL, 0), 12);
  /* Series 0 breaks at its NaN: two subpaths; series 1 has no line. */
  const char *line0 = strstr(rs, "<path fill=\"none\"");
  const char *d = strstr(line0, " d=\"");
  assert_non_null(d);
  const char *dend = strchr(d + 4, '"');
  int moves = 0, lines = 0;
  for (const char *c = d + 4; c < dend; c++) {
    moves += *c == 'M';
    lines += *c == 'L';
  }
  assert_int_equal(moves, 2);
  assert_int_equal(lines, 2);
  /* Distinct colours (the fill of each series' legend marker), none of
   * the main series', band's or baselines', and the same in the plot. */
  char colours[4][16];
  int nc = 0;
  for (const char *c = strstr(legend, ">right axis<");
       (c = strstr(c, "<path d=\"M")) != NULL && nc < 4; c++) {
    const char *v = strstr(c, " fill=\"") + strlen(" fill=\"");
    snprintf(colours[nc++], sizeof colours[0], "%.*s",
             (int)(strchr(v, '"') - v), v);
  }
  assert_int_equal(nc, 4);
  for (int i = 0; i < nc; i++) {
    assert_int_equal(colours[i][0], '#');
    assert_string_not_equal(colours[i], "#1f5fa8");
    assert_string_not_equal(colours[i], "#9cc3ea");
    assert_string_not_equal(colours[i], "#b0413e");
    for (int j = 0; j < i; j++) assert_string_not_equal(colours[i], colours[j]);
    char fill[32];
    snprintf(fill, sizeof fill, "fill=\"%.15s\"", colours[i]);
    assert_non_null(strstr(rs, fill));
  }
  char stroke[64];
  snprintf(stroke, sizeof stroke, "<path fill=\"none\" stroke=\"%.15s\"",
           colours[0]);
  assert_non_null(strstr(rs, stroke));
  /* Layout: the plot area is narrower than without a right axis, the
   * axis label lies right of the tick labels, and the legend right of
   * it and inside the picture. */
  area_t a = plot_area(svg);
  assert_true(a.W <= 800 - 72 - 170 - 64 + 1e-9);
  assert_true(a.W >= 800 - 72 - 0.4 * 800 - 64 - 1e-9);
  assert_null(svg_legend_fits(svg, pb_svgplot_text_width));
  double label_x = attr(strstr(axis, "class=\"y2label\""), "x");
  assert_true(label_x > a.L + a.W + 40);
  double legend_x = attr(strstr(legend, "<text"), "x");
  assert_true(legend_x > label_x + 16);
  for (const char *t = legend; (t = strstr(t, "<text")) != NULL; t++)
    assert_true(attr(t, "y") < a.T + a.H);
  /* The main series is drawn over the right ones. */
  assert_true(strstr(svg, "<g class=\"right-series\"") <
              strstr(svg, "<g class=\"series\""));
  free(rs);
  free(legend);
  free(axis);
  free(svg);

  /* One right series, the other fields as in the evaluator's chart. */
  p.nright = 1;
  p.y2label = NULL;
  svg = render_ok(&p);
  assert_wellformed(svg);
  assert_null(strstr(svg, "class=\"y2label\""));
  assert_non_null(strstr(svg, ">policy &lt;top-1&gt; &amp; co</text>"));
  assert_null(strstr(svg, ">series 2</text>"));
  free(svg);
}

static void test_unchanged_without_right(void **state) {
  (void)state;
  pb_svgplot_t old = elo_chart();
  char *want = render_ok(&old);
  assert_wellformed(want);
  assert_null(strstr(want, "right axis"));
  assert_null(strstr(want, "axis2"));
  assert_null(strstr(want, "clipPath"));
  assert_null(strstr(want, "right-series"));
  /* The right-axis fields are not looked at while nright is 0, not even
   * when they would be refused. */
  pb_svgplot_point_t acc[2] = {{0, 0.5, 0, 0, 0}, {40, 0.6, 0, 0, 0}};
  pb_svgplot_series_t right[1] = {{"acc", acc, 2}};
  pb_svgplot_t p = elo_chart();
  p.right = right;
  p.y2label = "accuracy";
  p.y2min = NAN;
  p.y2max = -1;
  char *got = render_ok(&p);
  assert_string_equal(got, want);
  free(got);
  p.right = NULL;
  got = render_ok(&p);
  assert_string_equal(got, want);
  free(got);
  /* The same for the empty chart and for other sizes. */
  pb_svgplot_t empty = {0};
  p = empty;
  p.y2min = 1;
  p.y2max = 0;
  char *e1 = render_ok(&empty), *e2 = render_ok(&p);
  assert_string_equal(e1, e2);
  assert_non_null(strstr(e1, "no data yet"));
  free(e1);
  free(e2);
  old.width = 1200;
  old.height = 300;
  p = old;
  p.right = right;
  p.y2label = "x";
  e1 = render_ok(&old);
  e2 = render_ok(&p);
  assert_string_equal(e1, e2);
  free(e1);
  free(e2);
  /* A right series does change it. */
  p = elo_chart();
  p.right = right;
  p.nright = 1;
  p.y2min = 0;
  p.y2max = 1;
  got = render_ok(&p);
  assert_string_not_equal(got, want);
  free(got);
  free(want);
}

static void test_x_range(void **state) {
  (void)state;
  double xs[16], cx[8];
  /* Without right series x = 4, the last Elo point, is near the right. */
  pb_svgplot_t p = elo_chart();
  char *svg = render_ok(&p);
  area_t a = plot_area(svg);
  assert_int_equal(circle_xs(svg, cx, 8), 4);
  assert_true(cx[3] > a.L + 0.9 * a.W);
  assert_true(cx[0] < a.L + 0.1 * a.W);
  free(svg);

  /* A right series on to x = 10: the axis grows, x = 4 moves left, and
   * every right marker lies in the plot area. */
  pb_svgplot_point_t acc[4] = {{0, 0.2, 0, 0, 0},
                               {4, 0.4, 0, 0, 0},
                               {7, 0.5, 0, 0, 0},
                               {10, 0.6, 0, 0, 0}};
  pb_svgplot_series_t right[2] = {{"acc", acc, 4}, {"late", NULL, 0}};
  p.right = right;
  p.nright = 2; /* an empty second series is fine */
  p.y2min = 0;
  p.y2max = 1;
  svg = render_ok(&p);
  assert_wellformed(svg);
  a = plot_area(svg);
  assert_int_equal(circle_xs(svg, cx, 8), 4);
  char *rs = group(svg, "<g class=\"right-series\"");
  assert_int_equal(marker_xs(rs, xs, 16), 4);
  for (int i = 0; i < 4; i++) assert_true(xs[i] >= a.L && xs[i] <= a.L + a.W);
  assert_true(xs[3] > a.L + 0.9 * a.W);       /* x = 10 at the right */
  assert_true(fabs(xs[1] - cx[3]) < 0.01);    /* x = 4 in both series */
  assert_true(cx[3] < a.L + 0.5 * a.W);       /* 4 of 0..10: left half */
  assert_true(fabs(xs[0] - cx[0]) < 0.01);    /* x = 0 in both series */
  assert_non_null(strstr(svg, ">10</text>")); /* an x tick at 10 */
  free(rs);
  free(svg);

  /* A right series starting before the Elo series widens to the left. */
  acc[0].x = -6;
  svg = render_ok(&p);
  a = plot_area(svg);
  circle_xs(svg, cx, 8);
  rs = group(svg, "<g class=\"right-series\"");
  marker_xs(rs, xs, 16);
  assert_true(xs[0] < a.L + 0.1 * a.W && xs[0] >= a.L);
  assert_true(cx[0] > a.L + 0.3 * a.W);
  free(rs);
  free(svg);

  /* Only right series: they set the x axis, and there is data to show. */
  acc[0].x = 2;
  p.n = 0;
  svg = render_ok(&p);
  assert_wellformed(svg);
  assert_null(strstr(svg, "no data yet"));
  a = plot_area(svg);
  rs = group(svg, "<g class=\"right-series\"");
  assert_int_equal(marker_xs(rs, xs, 16), 4);
  assert_true(xs[0] < a.L + 0.1 * a.W);
  assert_true(xs[3] > a.L + 0.9 * a.W);
  free(rs);
  free(svg);

  /* Right series with nothing finite: still "no data yet". */
  pb_svgplot_point_t none[1] = {{NAN, 0.5, 0, 0, 0}};
  right[0].pts = none;
  right[0].n = 1;
  svg = render_ok(&p);
  assert_wellformed(svg);
  assert_non_null(strstr(svg, "no data yet"));
  free(svg);
}

/* A reference line's label is drawn over the data (after the series, with
 * a white halo), at the end of the line the series keeps away from: the
 * right end when the series rises to the line only at the left, and the
 * left end in the usual case of a series rising to it at the right. */
static void test_label_placement(void **state) {
  (void)state;
  pb_svgplot_point_t rising[5], falling[5];
  for (int i = 0; i < 5; i++) {
    rising[i] = (pb_svgplot_point_t){i * 10, 1000 + 150 * i, NAN, NAN, 0};
    falling[i] = (pb_svgplot_point_t){i * 10, 1600 - 150 * i, NAN, NAN, 0};
  }
  pb_svgplot_hline_t line = {1600, "lookahead:3 (1600)"};
  pb_svgplot_t p = {0};
  p.lines = &line;
  p.nlines = 1;
  p.n = 5;
  p.pts = rising;
  char *svg = render_ok(&p);
  assert_wellformed(svg);
  const char *label = strstr(svg, "lookahead:3 (1600)");
  assert_non_null(label);
  assert_true(label > strstr(svg, "<polyline"));
  const char *text = label;
  while (text > svg && strncmp(text, "<text", 5) != 0) text--;
  assert_non_null(strstr(text, "paint-order=\"stroke\""));
  assert_true(strstr(text, "text-anchor=\"start\"") < label);
  assert_true(strstr(text, "text-anchor=\"start\"") != NULL);
  free(svg);
  p.pts = falling;
  svg = render_ok(&p);
  label = strstr(svg, "lookahead:3 (1600)");
  text = label;
  while (text > svg && strncmp(text, "<text", 5) != 0) text--;
  const char *end = strstr(text, "text-anchor=\"end\"");
  assert_true(end != NULL && end < label);
  free(svg);
}

/* The legend's names are whole and inside the picture: short names keep
 * the usual column (170 pixels), the evaluator's long names widen it (the
 * plot narrows), and a name too long for 40% of the picture wraps onto
 * lines that are each inside it and together the whole name. The title
 * stays inside the picture too. */
static int legend_has(const char *svg, const char *name, int *lines) {
  svg_text_t t[24];
  int n = svg_legend_texts(svg, t, 24);
  for (int i = 0; i < n && i < 24; i++)
    if (!strcmp(t[i].whole, name)) {
      if (lines) *lines = t[i].nline;
      return 1;
    }
  return 0;
}

static void test_legend_fits(void **state) {
  (void)state;
  pb_svgplot_point_t acc[3] = {
      {0, 0.4, 0, 0, 0}, {1, 0.5, 0, 0, 0}, {4, 0.6, 0, 0, 0}};
  /* The widths: monotone, every ASCII character counted, none nothing. */
  assert_true(pb_svgplot_text_width("abc", 12) > 0);
  assert_true(pb_svgplot_text_width("abcd", 12) >
              pb_svgplot_text_width("abc", 12));
  assert_true(pb_svgplot_text_width("WWW", 12) >
              pb_svgplot_text_width("iii", 12));
  assert_true(fabs(pb_svgplot_text_width("ab", 24) -
                   2 * pb_svgplot_text_width("ab", 12)) < 1e-9);
  assert_true(pb_svgplot_text_width("\xc3\xa9", 10) == 10.0); /* é: 1 em */
  assert_true(pb_svgplot_text_width(NULL, 12) == 0.0);

  /* Short names: the usual layout. */
  pb_svgplot_t p = elo_chart();
  char *svg = render_ok(&p);
  area_t a = plot_area(svg);
  assert_true(fabs(a.W - (800 - 72 - 170)) < 1e-9);
  assert_null(svg_legend_fits(svg, pb_svgplot_text_width));
  assert_true(legend_has(svg, "Elo", NULL));
  free(svg);

  /* The evaluator's names (evaluator/evalrun_chart.c): whole, one line
   * each, inside; the plot narrower than with short names. */
  static const char *const names[3] = {"accuracy: greedy Q",
                                       "accuracy: V one ply",
                                       "accuracy: beam search E=200 M=8"};
  pb_svgplot_series_t right[3];
  for (int i = 0; i < 3; i++)
    right[i] = (pb_svgplot_series_t){names[i], acc, 3};
  p.series = "Elo (max. likelihood)";
  p.right = right;
  p.nright = 3;
  p.y2label = "share of optimal moves (solved test set)";
  p.y2min = 0;
  p.y2max = 1;
  svg = render_ok(&p);
  assert_wellformed(svg);
  const char *why = svg_legend_fits(svg, pb_svgplot_text_width);
  if (why != NULL) fail_msg("%s\n%s", why, svg);
  for (int i = 0; i < 3; i++) {
    int lines = 0;
    if (!legend_has(svg, names[i], &lines))
      fail_msg("legend lacks \"%s\":\n%s", names[i], svg);
    assert_int_equal(lines, 1);
  }
  assert_non_null(strstr(svg, ">accuracy: beam search E=200 M=8</text>"));
  a = plot_area(svg);
  assert_true(a.W < 800 - 72 - 170 - 64);
  assert_true(a.W >= 800 - 72 - 0.4 * 800 - 64 - 1e-9);
  /* The legend starts right of the right axis' label. */
  svg_text_t t[24];
  int nt = svg_legend_texts(svg, t, 24);
  for (int i = 0; i < nt; i++) assert_true(t[i].x > a.L + a.W + 64);
  free(svg);

  /* Too long for 40% of the picture: wrapped at spaces, each line inside,
   * the lines together the whole name; a word longer than a line is cut
   * between characters (a UTF-8 character stays whole); markup escaped. */
  static const char *const longer[3] = {
      "accuracy of the beam search agent with E=200 expansions and M=8 "
      "depth on the solved test set of 1000 positions",
      "x<y&z_Supercalifragilisticexpialidocious_Supercalifragilistic_"
      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3"
      "\xa9\xc3\xa9\xc3\xa9",
      "short"};
  for (int i = 0; i < 3; i++) right[i].name = longer[i];
  for (int width = 800; width <= 1600; width += 800) {
    p.width = width;
    svg = render_ok(&p);
    assert_wellformed(svg);
    if (python_xml_ok(svg) == 1) fail_msg("python3 rejects:\n%s", svg);
    why = svg_legend_fits(svg, pb_svgplot_text_width);
    if (why != NULL) fail_msg("%s\n%s", why, svg);
    for (int i = 0; i < 3; i++) {
      int lines = 0;
      if (i == 1) {
        /* Cut inside a word: the lines join without the spaces. */
        nt = svg_legend_texts(svg, t, 24);
        char joined[2048] = "";
        for (int k = 0; k < nt; k++)
          if (!strncmp(t[k].line[0], "x<y&z", 5)) {
            for (int l = 0; l < t[k].nline; l++) strcat(joined, t[k].line[l]);
            lines = t[k].nline;
          }
        assert_string_equal(joined, longer[1]);
        assert_true(lines >= (width == 800 ? 2 : 1));
        continue;
      }
      if (!legend_has(svg, longer[i], &lines))
        fail_msg("legend lacks \"%s\":\n%s", longer[i], svg);
      if (i == 0) assert_true(lines >= (width == 800 ? 3 : 2));
      if (i == 2) assert_int_equal(lines, 1);
    }
    /* Wrapped names push the entries below them down: y grows. */
    nt = svg_legend_texts(svg, t, 24);
    for (int k = 1; k < nt; k++)
      assert_true(t[k].y > t[k - 1].y + 14.0 * (t[k - 1].nline - 1));
    free(svg);
  }

  /* A long title is moved in to stay whole. */
  p = elo_chart();
  p.title =
      "Elo of a run with a rather long name indeed (connect4) by "
      "wall time";
  svg = render_ok(&p);
  const char *tt = strstr(svg, "<text class=\"title\"");
  assert_non_null(tt);
  double cx = svg_attr(tt, "x", 0),
         tw = 1.1 * pb_svgplot_text_width(p.title, 16);
  assert_true(cx - tw / 2 >= 0 && cx + tw / 2 <= 800);
  free(svg);
}

static void test_bad_arguments(void **state) {
  (void)state;
  pb_svgplot_point_t acc[2] = {{0, 0.5, 0, 0, 0}, {1, 0.6, 0, 0, 0}};
  pb_svgplot_series_t right[5] = {{"a", acc, 2},
                                  {"b", acc, 2},
                                  {"c", acc, 2},
                                  {"d", acc, 2},
                                  {"e", acc, 2}};
  pb_svgplot_t good = elo_chart();
  good.right = right;
  good.nright = 4;
  good.y2min = 0;
  good.y2max = 1;
  char *svg = render_ok(&good);
  free(svg);

  pb_svgplot_t p = good;
  p.nright = 5;
  assert_refused(&p, "nright");
  p.nright = -1;
  assert_refused(&p, "nright");
  p = good;
  p.right = NULL;
  assert_refused(&p, "right");
  p = good;
  right[2].n = -1;
  assert_refused(&p, "right[2].n");
  right[2].n = 2;
  right[1].pts = NULL;
  assert_refused(&p, "right[1].pts");
  right[1].n = 0; /* no points: NULL is fine */
  free(render_ok(&p));
  right[1].pts = acc;
  right[1].n = 2;
  double bad[][2] = {{NAN, 1},      {0, NAN}, {-INFINITY, 1},
                     {0, INFINITY}, {1, 1},   {1, 0}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p = good;
    p.y2min = bad[i][0];
    p.y2max = bad[i][1];
    assert_refused(&p, "y2min");
    assert_refused(&p, "y2max");
  }
  /* The old checks still hold, with a right axis too. */
  p = good;
  p.n = -1;
  assert_refused(&p, "svgplot");
  p = good;
  p.width = 100;
  assert_refused(&p, "size");
  assert_int_equal(pb_svgplot_render(NULL, &svg, NULL, NULL), PB_EINVAL);
  assert_int_equal(pb_svgplot_render(&good, NULL, NULL, NULL), PB_EINVAL);
  /* And the scanner catches broken documents. */
  assert_non_null(xml_check("<svg><g></svg></g>", "svg"));
  assert_non_null(xml_check("<svg a=b></svg>", "svg"));
  assert_non_null(xml_check("<svg>&</svg>", "svg"));
  assert_non_null(xml_check("<svg><g></svg>", "svg"));
  /* And so does python3's parser, where there is one. */
  int py = python_xml_ok("<svg><g></svg>");
  assert_true(py == -1 || py == 1);
  py = python_xml_ok("<svg a=\"1\">&amp;</svg>");
  assert_true(py == -1 || py == 0);
  assert_null(
      xml_check("<?xml version=\"1.0\"?><svg><g a=\"1\"/></svg>", "svg"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ticks),
      cmocka_unit_test(test_right_wellformed),
      cmocka_unit_test(test_unchanged_without_right),
      cmocka_unit_test(test_x_range),
      cmocka_unit_test(test_label_placement),
      cmocka_unit_test(test_legend_fits),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
