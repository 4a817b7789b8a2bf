/* svgplot.h - a small self-contained SVG line chart: the evaluator's Elo plot.
 *
 * One series of points with an interval per point (drawn as a shaded band
 * plus error bars, so a single point still shows its interval), a line with
 * markers, dashed labelled horizontal reference lines (the baselines),
 * axes with "nice" ticks (1, 2 or 5 times a power of ten), axis labels, a
 * title and a legend. The output is one standalone SVG 1.1 document
 * (well-formed XML, no scripts, no external resources), readable in any
 * browser. Text is XML-escaped. Nothing here touches files.
 */
#ifndef PB_SVGPLOT_H
#define PB_SVGPLOT_H

#include <stddef.h>

#include "err.h"

#define PB_SVGPLOT_LABEL_MAX 96 /* reference-line labels, incl. NUL */

typedef struct pb_svgplot_point {
  double x, y;   /* the point; skipped if either is not finite */
  double lo, hi; /* its interval; not drawn if either is not finite */
  int marked;    /* drawn as a hollow marker (e.g. an adjusted estimate) */
} pb_svgplot_point_t;

typedef struct pb_svgplot_hline {
  double y; /* skipped if not finite */
  char label[PB_SVGPLOT_LABEL_MAX];
} pb_svgplot_hline_t;

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
} pb_svgplot_t;

/* Renders the chart into a malloc'd NUL-terminated string (*out, the
 * caller frees it) of *len bytes (len may be NULL). With no drawable point
 * the chart still has its axes (x 0..1) and reference lines, and says "no
 * data yet". Returns 0, PB_EINVAL (NULL arguments, n or nlines negative,
 * a size outside 200..10000), or PB_ENOMEM. */
int pb_svgplot_render(const pb_svgplot_t *p, char **out, size_t *len,
                      pb_err_t *err);

/* Chooses axis ticks for the range [lo, hi] (lo < hi, finite): about
 * `target` (>= 2) ticks at multiples of *step, *step = 1, 2 or 5 times a
 * power of ten, from *first (the smallest multiple >= lo) to the largest
 * multiple <= hi. Returns the number of ticks (>= 1 when the range holds
 * a multiple), or 0 for bad arguments. */
int pb_svgplot_ticks(double lo, double hi, int target, double *first,
                     double *step);

#endif
