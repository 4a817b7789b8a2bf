/* svgplot.h - a small self-contained SVG line chart: the evaluator's Elo plot.
 *
 * One series of points with an interval per point (drawn as a shaded band
 * plus error bars, so a single point still shows its interval), a line with
 * markers, dashed labelled horizontal reference lines (the baselines; each
 * label drawn over the data with a white halo, at the end of its line where
 * the series passes farthest from it),
 * axes with "nice" ticks (1, 2 or 5 times a power of ten), axis labels, a
 * title and a legend (right of the plot, widened for long names up to 40%
 * of the picture, past which a name wraps onto more lines; the title is
 * kept inside the picture). The output is one standalone SVG 1.1 document
 * (well-formed XML, no scripts, no external resources), readable in any
 * browser. Text is XML-escaped. Nothing here touches files.
 *
 * Optionally up to PB_SVGPLOT_MAX_RIGHT secondary series (e.g. the
 * accuracies of a few agents, shares in [0, 1]) are drawn against a
 * second y axis on the right, each as a thin line with small markers of
 * its own colour and shape, listed in the legend under "right axis". A
 * chart without them is exactly the chart drawn before they existed.
 */
#ifndef PB_SVGPLOT_H
#define PB_SVGPLOT_H

#include <stddef.h>

#include "err.h"

#define PB_SVGPLOT_LABEL_MAX 96 /* reference-line labels, incl. NUL */
#define PB_SVGPLOT_MAX_RIGHT 4  /* series on the right axis, at most */

typedef struct pb_svgplot_point {
  double x, y;   /* the point; skipped if either is not finite */
  double lo, hi; /* its interval; not drawn if either is not finite */
  int marked;    /* drawn as a hollow marker (e.g. an adjusted estimate) */
} pb_svgplot_point_t;

typedef struct pb_svgplot_hline {
  double y; /* skipped if not finite */
  char label[PB_SVGPLOT_LABEL_MAX];
} pb_svgplot_hline_t;

/* A series drawn against the right axis: a line through its finite points
 * with a marker on each; a non-finite point breaks the line there. */
typedef struct pb_svgplot_series {
  const char *name;              /* legend name (NULL: "series N", N = 1 for
                                    right[0]) */
  const pb_svgplot_point_t *pts; /* n points in increasing x; y against the
                                    right axis; lo/hi and marked ignored;
                                    non-finite points skipped (the line
                                    breaks there) */
  int n;
} pb_svgplot_series_t;

typedef struct pb_svgplot {
  const char *title;  /* may be NULL */
  const char *xlabel; /* may be NULL */
  const char *ylabel; /* may be NULL */
  const char *series; /* legend name of the line (NULL: "value") */
  const char *band;   /* legend name of the band (NULL: "95% interval") */
  const pb_svgplot_point_t *pts; /* n points, in increasing x */
  int n;
  const pb_svgplot_hline_t *lines; /* nlines reference lines */
  int nlines;
  int width, height; /* pixels; 0 gives 800 x 480 */
  /* The right axis; all ignored when nright is 0, so that a zero or
   * designated initialiser of the fields above keeps working. */
  const pb_svgplot_series_t *right; /* nright (0..PB_SVGPLOT_MAX_RIGHT)
                                       series on a right axis */
  int nright;
  const char *y2label; /* right axis label (may be NULL) */
  double y2min, y2max; /* right axis range, y2min < y2max, both finite
                          (required when nright > 0) */
} pb_svgplot_t;

/* Renders the chart into a malloc'd NUL-terminated string (*out, the
 * caller frees it) of *len bytes (len may be NULL). With no drawable point
 * the chart still has its axes (x 0..1) and reference lines, and says "no
 * data yet". The x axis covers the points of the main series and of every
 * right series. When nright > 0 the plot area narrows to make room for the
 * right axis, which runs from y2min to y2max (with the same small margin
 * as the left axis; ticks only inside the range, no grid lines of its
 * own); what a right series has outside the plot area is clipped.
 * Returns 0, PB_EINVAL (NULL arguments, n or nlines negative, a size
 * outside 200..10000; when nright is not 0: nright outside
 * 0..PB_SVGPLOT_MAX_RIGHT, right NULL, a series with n negative or pts
 * NULL and n > 0, y2min/y2max not finite with y2min < y2max; the message
 * names the field), or PB_ENOMEM. On failure *out is NULL. */
int pb_svgplot_render(const pb_svgplot_t *p, char **out, size_t *len,
                      pb_err_t *err);

/* The width in pixels of text s drawn in a sans-serif font of size px, as
 * the chart measures its legend and title: DejaVu Sans's advance widths
 * (the widest of the common sans-serif fonts), a character outside ASCII
 * counted as 1 em. 0 for NULL. */
double pb_svgplot_text_width(const char *s, double px);

/* Chooses axis ticks for the range [lo, hi] (lo < hi, finite): about
 * `target` (>= 2) ticks at multiples of *step, *step = 1, 2 or 5 times a
 * power of ten, from *first (the smallest multiple >= lo) to the largest
 * multiple <= hi. Returns the number of ticks (>= 1 when the range holds
 * a multiple), or 0 for bad arguments. */
int pb_svgplot_ticks(double lo, double hi, int target, double *first,
                     double *step);

#endif
