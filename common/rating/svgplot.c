/* svgplot.c - the Elo chart as a standalone SVG document.
 *
 * Workload: one small chart (a few hundred points at most) rewritten after
 * each evaluation; written for clarity. The text is built with
 * open_memstream, so the caller gets one malloc'd string. */
#include "svgplot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pb_svgplot_ticks(double lo, double hi, int target, double *first,
                     double *step) {
  if (!(lo < hi) || !isfinite(lo) || !isfinite(hi) || target < 2 ||
      first == NULL || step == NULL)
    return 0;
  double raw = (hi - lo) / (target - 1);
  double mag = pow(10.0, floor(log10(raw)));
  double r = raw / mag, st;
  if (r <= 1.0)
    st = 1.0;
  else if (r <= 2.0)
    st = 2.0;
  else if (r <= 5.0)
    st = 5.0;
  else
    st = 10.0;
  st *= mag;
  double f = ceil(lo / st - 1e-9) * st;
  int count = 0;
  /* The 1e-9 slack keeps an end that is a multiple in spite of rounding. */
  while (count < 1000 && f + count * st <= hi + 1e-9 * st) count++;
  *first = f;
  *step = st;
  return count;
}

/* Writes the first n bytes of s (up to its NUL) with XML's special
 * characters escaped; control characters (which XML 1.0 forbids) become
 * '?'. */
static void xml_text_n(FILE *f, const char *s, size_t n) {
  for (const char *e = s + n; s != NULL && s < e && *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
      case '&':
        fputs("&amp;", f);
        break;
      case '<':
        fputs("&lt;", f);
        break;
      case '>':
        fputs("&gt;", f);
        break;
      case '"':
        fputs("&quot;", f);
        break;
      case '\'':
        fputs("&apos;", f);
        break;
      default:
        fputc(c < 0x20 ? '?' : c, f);
    }
  }
}

static void xml_text(FILE *f, const char *s) {
  xml_text_n(f, s, s != NULL ? strlen(s) : 0);
}

/* Advance widths of ASCII 32..126 in DejaVu Sans, in thousandths of the
 * font size: the widest of the usual "sans-serif" fonts (Liberation Sans,
 * Arial and Helvetica are narrower), so text measured with it fits. */
static const unsigned short SANS_W[95] = {
    318, 402, 461, 838, 636,  950, 780, 275, 390, 390, 500, 838, 318, 361,
    318, 337, 636, 636, 636,  636, 636, 636, 636, 636, 636, 636, 337, 337,
    838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295,
    295, 656, 557, 863, 748,  787, 603, 787, 695, 635, 611, 732, 684, 989,
    685, 611, 685, 390, 337,  390, 838, 500, 500, 613, 635, 550, 635, 615,
    352, 635, 634, 278, 278,  579, 278, 974, 634, 612, 635, 635, 411, 521,
    392, 634, 592, 818, 592,  592, 525, 636, 337, 636, 838};

/* The width in pixels of the first n bytes of s at font size px (a
 * character outside ASCII counts as a whole em, a control character as
 * the '?' it is written as). */
static double text_width_n(const char *s, size_t n, double px) {
  double w = 0;
  for (size_t i = 0; i < n && s[i]; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80)
      w += (c & 0xC0) == 0x80 ? 0 : 1000; /* one per UTF-8 lead byte */
    else
      w += SANS_W[(c < 32 || c > 126 ? '?' : c) - 32];
  }
  return w * px / 1000.0;
}

double pb_svgplot_text_width(const char *s, double px) {
  return s != NULL ? text_width_n(s, strlen(s), px) : 0.0;
}

/* A tick label with as many decimals as the step needs. */
static void tick_label(char *buf, size_t n, double v, double step) {
  int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
  if (dec > 6) dec = 6;
  if (fabs(v) < 0.5 * step * 1e-6) v = 0.0; /* no "-0" */
  snprintf(buf, n, "%.*f", dec, v);
}

typedef struct {
  double x0, x1, y0, y1; /* data range */
  double L, T, W, H;     /* plot area in pixels */
  double z0, z1;         /* right axis range, padded (nright > 0) */
  double text_room;      /* pixels a legend name may take on one line */
} frame_t;

static double px(const frame_t *fr, double x) {
  return fr->L + (x - fr->x0) / (fr->x1 - fr->x0) * fr->W;
}

static double py(const frame_t *fr, double y) {
  return fr->T + fr->H - (y - fr->y0) / (fr->y1 - fr->y0) * fr->H;
}

/* y against the right axis. */
static double pz(const frame_t *fr, double y) {
  return fr->T + fr->H - (y - fr->z0) / (fr->z1 - fr->z0) * fr->H;
}

static int finite_pt(const pb_svgplot_point_t *p) {
  return isfinite(p->x) && isfinite(p->y);
}

static int has_interval(const pb_svgplot_point_t *p) {
  return finite_pt(p) && isfinite(p->lo) && isfinite(p->hi);
}

/* Data range of everything drawable, padded; a degenerate range is
 * widened so that every mapping stays finite. */
static void data_range(const pb_svgplot_t *p, frame_t *fr) {
  int any_x = 0, any_y = 0;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
#define PB__EXT(v, lo, hi, any) \
  do {                          \
    if (!(any)) {               \
      lo = hi = (v);            \
      any = 1;                  \
    } else {                    \
      if ((v) < lo) lo = (v);   \
      if ((v) > hi) hi = (v);   \
    }                           \
  } while (0)
  for (int i = 0; i < p->n; i++) {
    const pb_svgplot_point_t *q = &p->pts[i];
    if (!finite_pt(q)) continue;
    PB__EXT(q->x, x0, x1, any_x);
    PB__EXT(q->y, y0, y1, any_y);
    if (has_interval(q)) {
      PB__EXT(q->lo, y0, y1, any_y);
      PB__EXT(q->hi, y0, y1, any_y);
    }
  }
  for (int i = 0; i < p->nlines; i++)
    if (isfinite(p->lines[i].y)) PB__EXT(p->lines[i].y, y0, y1, any_y);
  /* The right series widen x only: their y has an axis of its own. */
  for (int s = 0; s < p->nright; s++)
    for (int i = 0; i < p->right[s].n; i++)
      if (finite_pt(&p->right[s].pts[i]))
        PB__EXT(p->right[s].pts[i].x, x0, x1, any_x);
#undef PB__EXT
  if (!any_x) {
    x0 = 0;
    x1 = 1;
  } else if (x1 - x0 < 1e-9) {
    /* One x value (one version rated so far): a range of 2 around it that
     * does not go below 0 for data that do not. */
    x0 = x0 >= 1 || x0 < 0 ? x0 - 1 : 0;
    x1 = x0 + 2;
  }
  if (!any_y) {
    y0 = 0;
    y1 = 1;
  } else if (y1 - y0 < 1e-9) {
    y0 -= 50;
    y1 += 50;
  }
  double dx = 0.03 * (x1 - x0), dy = 0.06 * (y1 - y0);
  fr->x0 = x0 - dx;
  fr->x1 = x1 + dx;
  fr->y0 = y0 - dy;
  fr->y1 = y1 + dy;
  fr->z0 = 0;
  fr->z1 = 1;
  if (p->nright > 0) {
    double dz = 0.06 * (p->y2max - p->y2min);
    fr->z0 = p->y2min - dz;
    fr->z1 = p->y2max + dz;
  }
}

static const char *const LINE_COLOUR = "#1f5fa8";
static const char *const BAND_COLOUR = "#9cc3ea";
static const char *const REF_COLOUR = "#b0413e";
/* The right series: colours apart from the three above, and marker
 * shapes apart from the main series' circles (centred on 0,0). */
static const char *const RIGHT_COLOUR[PB_SVGPLOT_MAX_RIGHT] = {
    "#2e8b3a", "#7b3fa6", "#e07b12", "#6e6e6e"};
static const char *const RIGHT_MARKER[PB_SVGPLOT_MAX_RIGHT] = {
    "m-3 -3h6v6h-6z", "m0 -4l4 4l-4 4l-4 -4z", "m0 -4l3.6 6.4h-7.2z",
    "m0 4l3.6 -6.4h-7.2z"};
#define PB__RIGHT_ROOM 64 /* pixels for the right axis' ticks and label */
/* The legend's column right of the plot: LEGEND_GAP, a key of
 * LEGEND_KEY pixels, the text and LEGEND_MARGIN before the picture's edge;
 * at least LEGEND_MIN pixels, widened for longer names up to
 * LEGEND_MAX_SHARE of the picture, past which names wrap. */
#define PB__LEGEND_MIN 170
#define PB__LEGEND_GAP 16
#define PB__LEGEND_KEY 32
#define PB__LEGEND_MARGIN 8
#define PB__LEGEND_MAX_SHARE 0.4
#define PB__LEGEND_FONT 12.0
#define PB__LEGEND_LINE 14 /* pixels between the lines of a wrapped name */

static void draw_axes(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  double first, step;
  char lab[64];
  fprintf(f, "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
  int ny = pb_svgplot_ticks(fr->y0, fr->y1, 7, &first, &step);
  for (int i = 0; i < ny; i++)
    fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n",
            fr->L, py(fr, first + i * step), fr->L + fr->W,
            py(fr, first + i * step));
  fprintf(f, "</g>\n");
  fprintf(f,
          "<g class=\"axes\" font-family=\"sans-serif\" font-size=\"12\" "
          "fill=\"#333\">\n");
  fprintf(f,
          "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
          "fill=\"none\" stroke=\"#555\" stroke-width=\"1\"/>\n",
          fr->L, fr->T, fr->W, fr->H);
  for (int i = 0; i < ny; i++) {
    double v = first + i * step, y = py(fr, v);
    tick_label(lab, sizeof lab, v, step);
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
            "stroke=\"#555\"/>\n",
            fr->L - 5, y, fr->L, y);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
            fr->L - 8, y + 4, lab);
  }
  /* x ticks: whole numbers only when the data are (iterations). */
  int nx = pb_svgplot_ticks(fr->x0, fr->x1, 8, &first, &step);
  if (step < 1.0 && fr->x1 - fr->x0 >= 2.0) {
    step = 1.0;
    first = ceil(fr->x0);
    nx = (int)(floor(fr->x1) - first) + 1;
  }
  for (int i = 0; i < nx; i++) {
    double v = first + i * step, x = px(fr, v);
    tick_label(lab, sizeof lab, v, step);
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
            "stroke=\"#555\"/>\n",
            x, fr->T + fr->H, x, fr->T + fr->H + 5);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n",
            x, fr->T + fr->H + 19, lab);
  }
  if (p->xlabel != NULL) {
    fprintf(f,
            "<text class=\"xlabel\" x=\"%.2f\" y=\"%.2f\" "
            "text-anchor=\"middle\" font-size=\"13\">",
            fr->L + fr->W / 2, fr->T + fr->H + 40);
    xml_text(f, p->xlabel);
    fprintf(f, "</text>\n");
  }
  if (p->ylabel != NULL) {
    double x = fr->L - 52, y = fr->T + fr->H / 2;
    fprintf(f,
            "<text class=\"ylabel\" x=\"%.2f\" y=\"%.2f\" "
            "text-anchor=\"middle\" font-size=\"13\" "
            "transform=\"rotate(-90 %.2f %.2f)\">",
            x, y, x, y);
    xml_text(f, p->ylabel);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</g>\n");
}

/* The right axis: ticks inside [y2min, y2max] and the rotated label. */
static void draw_right_axis(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  double first, step, x = fr->L + fr->W;
  char lab[64];
  fprintf(f,
          "<g class=\"axis2\" font-family=\"sans-serif\" font-size=\"12\" "
          "fill=\"#333\">\n");
  int n = pb_svgplot_ticks(p->y2min, p->y2max, 6, &first, &step);
  for (int i = 0; i < n; i++) {
    double v = first + i * step, y = pz(fr, v);
    tick_label(lab, sizeof lab, v, step);
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
            "stroke=\"#555\"/>\n",
            x, y, x + 5, y);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"start\">%s</text>\n",
            x + 8, y + 4, lab);
  }
  if (p->y2label != NULL) {
    double lx = x + 54, ly = fr->T + fr->H / 2;
    fprintf(f,
            "<text class=\"y2label\" x=\"%.2f\" y=\"%.2f\" "
            "text-anchor=\"middle\" font-size=\"13\" "
            "transform=\"rotate(-90 %.2f %.2f)\">",
            lx, ly, lx, ly);
    xml_text(f, p->y2label);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</g>\n");
}

static void draw_band(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  fprintf(f, "<g class=\"band\">\n");
  /* One polygon per run of consecutive points that have intervals. */
  int i = 0;
  while (i < p->n) {
    if (!has_interval(&p->pts[i])) {
      i++;
      continue;
    }
    int j = i;
    while (j + 1 < p->n && has_interval(&p->pts[j + 1])) j++;
    if (j > i) {
      fprintf(f,
              "<polygon fill=\"%s\" fill-opacity=\"0.45\" stroke=\"none\" "
              "points=\"",
              BAND_COLOUR);
      for (int k = i; k <= j; k++)
        fprintf(f, "%.2f,%.2f ", px(fr, p->pts[k].x), py(fr, p->pts[k].hi));
      for (int k = j; k >= i; k--)
        fprintf(f, "%.2f,%.2f%s", px(fr, p->pts[k].x), py(fr, p->pts[k].lo),
                k > i ? " " : "");
      fprintf(f, "\"/>\n");
    }
    i = j + 1;
  }
  /* Error bars, so that an isolated point shows its interval too. */
  for (int k = 0; k < p->n; k++) {
    const pb_svgplot_point_t *q = &p->pts[k];
    if (!has_interval(q)) continue;
    double x = px(fr, q->x);
    fprintf(f,
            "<path d=\"M%.2f %.2fV%.2fM%.2f %.2fH%.2fM%.2f %.2fH%.2f\" "
            "stroke=\"%s\" stroke-width=\"1\" fill=\"none\"/>\n",
            x, py(fr, q->lo), py(fr, q->hi), x - 3, py(fr, q->lo), x + 3, x - 3,
            py(fr, q->hi), x + 3, LINE_COLOUR);
  }
  fprintf(f, "</g>\n");
}

/* The dashed reference lines, drawn under the data. */
static void draw_refs(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  fprintf(f, "<g class=\"baselines\">\n");
  for (int i = 0; i < p->nlines; i++) {
    const pb_svgplot_hline_t *h = &p->lines[i];
    if (!isfinite(h->y)) continue;
    double y = py(fr, h->y);
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
            "stroke=\"%s\" stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>\n",
            fr->L, y, fr->L + fr->W, y, REF_COLOUR);
  }
  fprintf(f, "</g>\n");
}

/* The smallest vertical distance in pixels between pixel row y and the
 * main series' points whose x lies in the quarter [x0, x1] of the plot
 * (infinite when none does). */
static double gap_near(const pb_svgplot_t *p, const frame_t *fr, double y,
                       double x0, double x1) {
  double best = INFINITY;
  for (int i = 0; i < p->n; i++) {
    const pb_svgplot_point_t *q = &p->pts[i];
    if (!finite_pt(q)) continue;
    double x = px(fr, q->x);
    if (x < x0 || x > x1) continue;
    double d = fabs(py(fr, q->y) - y);
    if (d < best) best = d;
  }
  return best;
}

/* The reference lines' labels, drawn over the data with a white halo so
 * the line never hides them, at the end of the line (left or right) where
 * the main series passes farthest from it. */
static void draw_ref_labels(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  fprintf(f,
          "<g class=\"baseline-labels\" font-family=\"sans-serif\" "
          "font-size=\"11\">\n");
  for (int i = 0; i < p->nlines; i++) {
    const pb_svgplot_hline_t *h = &p->lines[i];
    if (!isfinite(h->y)) continue;
    double y = py(fr, h->y);
    double left = gap_near(p, fr, y - 8, fr->L, fr->L + fr->W / 4);
    double right = gap_near(p, fr, y - 8, fr->L + 3 * fr->W / 4, fr->L + fr->W);
    int at_left = left > right;
    fprintf(f,
            "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" fill=\"%s\" "
            "stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" "
            "paint-order=\"stroke\">",
            at_left ? fr->L + 4 : fr->L + fr->W - 4, y - 4,
            at_left ? "start" : "end", REF_COLOUR);
    xml_text(f, h->label);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "</g>\n");
}

static void draw_series(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  fprintf(f, "<g class=\"series\">\n");
  int npts = 0;
  for (int i = 0; i < p->n; i++) npts += finite_pt(&p->pts[i]);
  if (npts >= 2) {
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
            "points=\"",
            LINE_COLOUR);
    int k = 0;
    for (int i = 0; i < p->n; i++)
      if (finite_pt(&p->pts[i]))
        fprintf(f, "%.2f,%.2f%s", px(fr, p->pts[i].x), py(fr, p->pts[i].y),
                ++k < npts ? " " : "");
    fprintf(f, "\"/>\n");
  }
  for (int i = 0; i < p->n; i++) {
    const pb_svgplot_point_t *q = &p->pts[i];
    if (!finite_pt(q)) continue;
    fprintf(f,
            "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\" "
            "stroke=\"%s\" stroke-width=\"1.5\"/>\n",
            px(fr, q->x), py(fr, q->y), q->marked ? "#ffffff" : LINE_COLOUR,
            LINE_COLOUR);
  }
  fprintf(f, "</g>\n");
}

/* Each right series as a path through its finite points, a new subpath
 * after each gap, with a marker on every point; clipped to the plot
 * area (#pb-plot) so that values outside y2min..y2max stay inside it. */
static void draw_right(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  fprintf(f, "<g class=\"right-series\" clip-path=\"url(#pb-plot)\">\n");
  for (int s = 0; s < p->nright; s++) {
    const pb_svgplot_series_t *r = &p->right[s];
    const char *c = RIGHT_COLOUR[s];
    int segs = 0; /* drawn segments: a lone point has only its marker */
    for (int i = 1; i < r->n; i++)
      segs += finite_pt(&r->pts[i - 1]) && finite_pt(&r->pts[i]);
    if (segs > 0) {
      fprintf(f,
              "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
              "stroke-linejoin=\"round\" d=\"",
              c);
      int sep = 0;
      for (int i = 0; i < r->n; i++) {
        const pb_svgplot_point_t *q = &r->pts[i];
        if (!finite_pt(q)) continue;
        int joined = i > 0 && finite_pt(&r->pts[i - 1]);
        int alone = !joined && !(i + 1 < r->n && finite_pt(&r->pts[i + 1]));
        if (alone) continue;
        fprintf(f, "%s%c%.2f %.2f", sep ? " " : "", joined ? 'L' : 'M',
                px(fr, q->x), pz(fr, q->y));
        sep = 1;
      }
      fprintf(f, "\"/>\n");
    }
    for (int i = 0; i < r->n; i++) {
      const pb_svgplot_point_t *q = &r->pts[i];
      if (!finite_pt(q)) continue;
      fprintf(f, "<path d=\"M%.2f %.2f%s\" fill=\"%s\"/>\n", px(fr, q->x),
              pz(fr, q->y), RIGHT_MARKER[s], c);
    }
  }
  fprintf(f, "</g>\n");
}

/* Writes one legend name at (x, y), on one line when it fits in `room`
 * pixels, else wrapped at spaces (a word wider than the room is cut
 * between characters) into lines PB__LEGEND_LINE apart, each a <tspan>.
 * Returns the number of lines. */
static int legend_text(FILE *f, double x, double y, const char *name,
                       double room) {
  const double px = PB__LEGEND_FONT;
  fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">", x, y);
  size_t n = strlen(name);
  if (text_width_n(name, n, px) <= room) {
    xml_text(f, name);
    fprintf(f, "</text>\n");
    return 1;
  }
  int lines = 0;
  size_t i = 0;
  while (i < n) {
    while (i < n && name[i] == ' ') i++;
    if (i >= n) break;
    /* The longest run of whole words from i that fits; else the longest
     * run of whole characters (at least one). */
    size_t end = i, brk = 0;
    for (size_t k = i; k <= n; k++) {
      if (k == n || name[k] == ' ') {
        if (text_width_n(name + i, k - i, px) > room) break;
        brk = k;
      }
    }
    if (brk > i) {
      end = brk;
    } else {
      end = i + 1;
      while (end < n && ((unsigned char)name[end] & 0xC0) == 0x80) end++;
      for (size_t k = end; k < n && name[k] != ' ';) {
        size_t next = k + 1;
        while (next < n && ((unsigned char)name[next] & 0xC0) == 0x80) next++;
        if (text_width_n(name + i, next - i, px) > room) break;
        end = k = next;
      }
    }
    fprintf(f, "<tspan x=\"%.2f\" dy=\"%d\">", x,
            lines == 0 ? 0 : PB__LEGEND_LINE);
    xml_text_n(f, name + i, end - i);
    fprintf(f, "</tspan>");
    lines++;
    i = end;
  }
  fprintf(f, "</text>\n");
  return lines > 0 ? lines : 1;
}

/* The widest name the legend shows, in pixels. */
static double legend_widest(const pb_svgplot_t *p) {
  const double px = PB__LEGEND_FONT;
  double w = pb_svgplot_text_width(p->series ? p->series : "value", px);
  double b = pb_svgplot_text_width(p->band ? p->band : "95% interval", px);
  if (b > w) w = b;
  b = pb_svgplot_text_width("won or lost all", px);
  if (b > w) w = b;
  for (int s = 0; s < p->nright; s++) {
    b = p->right[s].name ? pb_svgplot_text_width(p->right[s].name, px)
                         : pb_svgplot_text_width("series 4", px);
    if (b > w) w = b;
  }
  return w;
}

static void draw_legend(FILE *f, const pb_svgplot_t *p, const frame_t *fr) {
  double x = fr->L + fr->W + (p->nright > 0 ? PB__RIGHT_ROOM : 0) +
             PB__LEGEND_GAP,
         y = fr->T + 10, tx = x + PB__LEGEND_KEY;
  int lines;
  fprintf(f,
          "<g class=\"legend\" font-family=\"sans-serif\" "
          "font-size=\"12\" fill=\"#333\">\n");
  fprintf(f,
          "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
          "stroke=\"%s\" stroke-width=\"2\"/>\n",
          x, y, x + 24, y, LINE_COLOUR);
  fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\"/>\n",
          x + 12, y, LINE_COLOUR);
  lines = legend_text(f, tx, y + 4, p->series != NULL ? p->series : "value",
                      fr->text_room);
  y += 22 + PB__LEGEND_LINE * (lines - 1);
  fprintf(f,
          "<rect x=\"%.2f\" y=\"%.2f\" width=\"24\" height=\"10\" "
          "fill=\"%s\" fill-opacity=\"0.45\"/>\n",
          x, y - 5, BAND_COLOUR);
  lines = legend_text(f, tx, y + 4, p->band != NULL ? p->band : "95% interval",
                      fr->text_room);
  y += PB__LEGEND_LINE * (lines - 1);
  if (p->nlines > 0) {
    y += 22;
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
            "stroke=\"%s\" stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>\n",
            x, y, x + 24, y, REF_COLOUR);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">baselines</text>\n", tx, y + 4);
  }
  int marked = 0;
  for (int i = 0; i < p->n; i++)
    marked |= finite_pt(&p->pts[i]) && p->pts[i].marked;
  if (marked) {
    y += 22;
    fprintf(f,
            "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"#ffffff\" "
            "stroke=\"%s\" stroke-width=\"1.5\"/>\n",
            x + 12, y, LINE_COLOUR);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">won or lost all</text>\n", tx,
            y + 4);
  }
  if (p->nright > 0) {
    y += 22;
    fprintf(f,
            "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" fill=\"#777\">"
            "right axis</text>\n",
            x, y + 4);
  }
  for (int s = 0; s < p->nright; s++) {
    y += 22;
    fprintf(f,
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
            "stroke=\"%s\" stroke-width=\"1.5\"/>\n",
            x, y, x + 24, y, RIGHT_COLOUR[s]);
    fprintf(f, "<path d=\"M%.2f %.2f%s\" fill=\"%s\"/>\n", x + 12, y,
            RIGHT_MARKER[s], RIGHT_COLOUR[s]);
    char dflt[32];
    snprintf(dflt, sizeof dflt, "series %d", s + 1);
    lines = legend_text(f, tx, y + 4,
                        p->right[s].name != NULL ? p->right[s].name : dflt,
                        fr->text_room);
    y += PB__LEGEND_LINE * (lines - 1);
  }
  fprintf(f, "</g>\n");
}

/* Checks the right-axis fields (only looked at when nright is not 0). */
static int check_right(const pb_svgplot_t *p, pb_err_t *err) {
  if (p->nright == 0) return 0;
  if (p->nright < 0 || p->nright > PB_SVGPLOT_MAX_RIGHT)
    return pb_err_set(err, PB_EINVAL, "svgplot: nright %d outside 0..%d",
                      p->nright, PB_SVGPLOT_MAX_RIGHT);
  if (p->right == NULL)
    return pb_err_set(err, PB_EINVAL, "svgplot: right is NULL, nright %d",
                      p->nright);
  for (int s = 0; s < p->nright; s++) {
    if (p->right[s].n < 0)
      return pb_err_set(err, PB_EINVAL, "svgplot: right[%d].n %d negative", s,
                        p->right[s].n);
    if (p->right[s].n > 0 && p->right[s].pts == NULL)
      return pb_err_set(err, PB_EINVAL, "svgplot: right[%d].pts is NULL, n %d",
                        s, p->right[s].n);
  }
  if (!isfinite(p->y2min) || !isfinite(p->y2max) || !(p->y2min < p->y2max))
    return pb_err_set(err, PB_EINVAL,
                      "svgplot: y2min %g, y2max %g: not a finite range with "
                      "y2min < y2max",
                      p->y2min, p->y2max);
  return 0;
}

int pb_svgplot_render(const pb_svgplot_t *p, char **out, size_t *len,
                      pb_err_t *err) {
  if (out != NULL) *out = NULL;
  if (len != NULL) *len = 0;
  if (p == NULL || out == NULL || p->n < 0 || p->nlines < 0 ||
      (p->n > 0 && p->pts == NULL) || (p->nlines > 0 && p->lines == NULL))
    return pb_err_set(err, PB_EINVAL, "svgplot: bad arguments");
  int w = p->width ? p->width : 800, h = p->height ? p->height : 480;
  if (w < 200 || w > 10000 || h < 200 || h > 10000)
    return pb_err_set(err, PB_EINVAL, "svgplot: size %dx%d outside 200..10000",
                      w, h);
  int rc = check_right(p, err);
  if (rc != 0) return rc;
  frame_t fr;
  data_range(p, &fr);
  fr.L = 72;
  fr.T = 44;
  /* The legend's column: wide enough for its longest name, within
   * bounds; a name still too long wraps (legend_text). */
  double legend =
      PB__LEGEND_GAP + PB__LEGEND_KEY + legend_widest(p) + PB__LEGEND_MARGIN;
  double legend_max = PB__LEGEND_MAX_SHARE * w;
  if (legend > legend_max) legend = legend_max;
  if (legend < PB__LEGEND_MIN) legend = PB__LEGEND_MIN;
  legend = ceil(legend);
  fr.text_room = legend - PB__LEGEND_GAP - PB__LEGEND_KEY - PB__LEGEND_MARGIN;
  fr.W = w - fr.L - legend - (p->nright > 0 ? PB__RIGHT_ROOM : 0);
  fr.H = h - fr.T - 56;

  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (f == NULL) return pb_err_set(err, PB_ENOMEM, "svgplot: out of memory");
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
          w, h, w, h);
  fprintf(f, "<title>");
  xml_text(f, p->title != NULL ? p->title : "chart");
  fprintf(f, "</title>\n");
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
  if (p->title != NULL) {
    /* Centred over the plot, moved in to stay whole in the picture (bold
     * is about 10% wider than the regular widths measured). */
    double tw = 1.1 * pb_svgplot_text_width(p->title, 16), cx = fr.L + fr.W / 2;
    if (cx + tw / 2 > w - 4) cx = w - 4 - tw / 2;
    if (cx - tw / 2 < 4) cx = tw + 8 <= w ? 4 + tw / 2 : w / 2.0;
    fprintf(f,
            "<text class=\"title\" x=\"%.2f\" y=\"26\" text-anchor=\"middle\" "
            "font-family=\"sans-serif\" font-size=\"16\" "
            "font-weight=\"bold\" fill=\"#222\">",
            cx);
    xml_text(f, p->title);
    fprintf(f, "</text>\n");
  }
  if (p->nright > 0)
    fprintf(f,
            "<defs><clipPath id=\"pb-plot\"><rect x=\"%.2f\" y=\"%.2f\" "
            "width=\"%.2f\" height=\"%.2f\"/></clipPath></defs>\n",
            fr.L, fr.T, fr.W, fr.H);
  draw_axes(f, p, &fr);
  if (p->nright > 0) draw_right_axis(f, p, &fr);
  draw_band(f, p, &fr);
  draw_refs(f, p, &fr);
  if (p->nright > 0) draw_right(f, p, &fr);
  draw_series(f, p, &fr);
  draw_ref_labels(f, p, &fr);
  draw_legend(f, p, &fr);
  int any = 0;
  for (int i = 0; i < p->n; i++) any |= finite_pt(&p->pts[i]);
  for (int s = 0; s < p->nright; s++)
    for (int i = 0; i < p->right[s].n; i++)
      any |= finite_pt(&p->right[s].pts[i]);
  if (!any)
    fprintf(f,
            "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
            "font-family=\"sans-serif\" font-size=\"14\" fill=\"#888\">"
            "no data yet</text>\n",
            fr.L + fr.W / 2, fr.T + fr.H / 2);
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0 || buf == NULL) {
    free(buf);
    return pb_err_set(err, PB_ENOMEM, "svgplot: out of memory");
  }
  *out = buf;
  if (len != NULL) *len = n;
  return 0;
}
