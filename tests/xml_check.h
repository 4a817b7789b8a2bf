/* xml_check.h - a minimal well-formedness check of the XML documents the
 * tests read (the evaluator's charts, svgplot's output), and the texts of
 * a chart's legend. Header only. */
#ifndef PB_TEST_XML_CHECK_H
#define PB_TEST_XML_CHECK_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A minimal well-formedness check of an XML document: a prolog, comments,
 * elements with quoted attributes, escaped text, tags that nest and
 * close, one root element named `root`. Returns NULL or what is wrong. */
static inline const char *xml_check(const char *s, const char *root) {
  static char why[160];
  const char *stack[256];
  size_t slen[256];
  int depth = 0, roots = 0;
  const char *p = s;
  if (!strncmp(p, "<?xml", 5)) {
    p = strstr(p, "?>");
    if (p == NULL) return "unterminated prolog";
    p += 2;
  }
  while (*p) {
    if (*p != '<') {
      if (*p == '>') return "raw '>' in text";
      if (*p == '&') {
        static const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;",
                                     "&apos;"};
        int ok = 0;
        for (int i = 0; i < 5; i++) ok |= !strncmp(p, ents[i], strlen(ents[i]));
        if (!ok) return "bad entity";
      }
      if (depth == 0 && !isspace((unsigned char)*p)) return "text outside root";
      p++;
      continue;
    }
    if (!strncmp(p, "<!--", 4)) {
      p = strstr(p, "-->");
      if (p == NULL) return "unterminated comment";
      p += 3;
      continue;
    }
    int closing = p[1] == '/';
    const char *name = p + 1 + closing;
    size_t n = 0;
    while (isalnum((unsigned char)name[n]) || name[n] == '-' ||
           name[n] == '_' || name[n] == ':')
      n++;
    if (n == 0 || !isalpha((unsigned char)name[0])) return "bad tag name";
    p = name + n;
    if (closing) {
      if (*p != '>') return "bad closing tag";
      if (depth == 0 || slen[depth - 1] != n ||
          strncmp(stack[depth - 1], name, n)) {
        snprintf(why, sizeof why, "closing </%.*s> does not match", (int)n,
                 name);
        return why;
      }
      depth--;
      p++;
      continue;
    }
    /* attributes */
    for (;;) {
      while (isspace((unsigned char)*p)) p++;
      if (*p == '>' || (*p == '/' && p[1] == '>')) break;
      size_t an = 0;
      while (isalnum((unsigned char)p[an]) || p[an] == '-' || p[an] == ':' ||
             p[an] == '_')
        an++;
      if (an == 0) return "bad attribute name";
      p += an;
      if (*p++ != '=') return "attribute without '='";
      if (*p != '"') return "unquoted attribute";
      const char *end = strchr(p + 1, '"');
      if (end == NULL) return "unterminated attribute";
      for (const char *q = p + 1; q < end; q++)
        if (*q == '<') return "'<' in an attribute";
      p = end + 1;
    }
    if (depth == 0) {
      roots++;
      if (strlen(root) != n || strncmp(name, root, n)) return "wrong root";
    }
    if (*p == '/') {
      p += 2;
      continue;
    }
    if (depth == 256) return "too deep";
    stack[depth] = name;
    slen[depth++] = n;
    p++;
  }
  if (depth != 0) return "unclosed element";
  if (roots != 1) return "not exactly one root";
  return NULL;
}

/* ---- the texts of an SVG chart's legend -------------------------------- */

#define SVG_TEXT_LINES 8
typedef struct {
  double x, y, size;                /* of the <text>; size 12 unless set */
  int nline;                        /* 1, or its <tspan>s */
  char line[SVG_TEXT_LINES][160];   /* each line, entities decoded */
  char whole[SVG_TEXT_LINES * 161]; /* the lines joined by spaces */
} svg_text_t;

/* Decodes XML text s[0..n) (the five entities) into out (size cap). */
static inline void svg_decode(const char *s, size_t n, char *out, size_t cap) {
  static const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
  static const char chr[] = "&<>\"'";
  size_t k = 0;
  for (size_t i = 0; i < n && k + 1 < cap;) {
    int e = -1;
    for (int j = 0; j < 5 && s[i] == '&'; j++)
      if (!strncmp(s + i, ents[j], strlen(ents[j]))) e = j;
    out[k++] = e >= 0 ? chr[e] : s[i];
    i += e >= 0 ? strlen(ents[e]) : 1;
  }
  out[k] = '\0';
}

/* The number after attribute `name="` inside the tag that starts at tag
 * (up to its '>'), or `dflt`. */
static inline double svg_attr(const char *tag, const char *name, double dflt) {
  char key[40];
  snprintf(key, sizeof key, " %s=\"", name);
  const char *end = strchr(tag, '>');
  const char *a = strstr(tag, key);
  if (a == NULL || (end != NULL && a > end)) return dflt;
  return strtod(a + strlen(key), NULL);
}

/* The <text> elements of the chart's legend group (<g class="legend">),
 * at most max into out; returns how many there are. */
static inline int svg_legend_texts(const char *svg, svg_text_t *out, int max) {
  const char *g = strstr(svg, "<g class=\"legend\"");
  if (g == NULL) return 0;
  const char *gend = strstr(g, "</g>");
  int n = 0;
  for (const char *t = g; (t = strstr(t, "<text")) != NULL && t < gend;
       t++, n++) {
    if (n >= max) continue;
    svg_text_t *o = &out[n];
    memset(o, 0, sizeof *o);
    o->x = svg_attr(t, "x", -1e9);
    o->y = svg_attr(t, "y", -1e9);
    o->size = svg_attr(t, "font-size", 12);
    const char *body = strchr(t, '>') + 1, *close = strstr(body, "</text>");
    if (strncmp(body, "<tspan", 6) != 0) {
      svg_decode(body, (size_t)(close - body), o->line[0], sizeof o->line[0]);
      o->nline = 1;
    } else {
      for (const char *s = body; (s = strstr(s, "<tspan")) != NULL && s < close;
           s++) {
        const char *b = strchr(s, '>') + 1, *e = strstr(b, "</tspan>");
        if (o->nline < SVG_TEXT_LINES)
          svg_decode(b, (size_t)(e - b), o->line[o->nline++],
                     sizeof o->line[0]);
      }
    }
    for (int i = 0; i < o->nline; i++) {
      if (i) strcat(o->whole, " ");
      strcat(o->whole, o->line[i]);
    }
  }
  return n;
}

/* The width and height of the svg's viewBox="0 0 W H" (0 when none). */
static inline void svg_viewbox(const char *svg, double *w, double *h) {
  const char *v = strstr(svg, "viewBox=\"0 0 ");
  *w = *h = 0;
  if (v != NULL) sscanf(v + strlen("viewBox=\"0 0 "), "%lf %lf", w, h);
}

/* Whether every line of every legend text lies inside the viewBox, its
 * width measured by width(text, font size): NULL, or what sticks out. */
static inline const char *svg_legend_fits(const char *svg,
                                          double (*width)(const char *,
                                                          double)) {
  static char why[300];
  svg_text_t t[24];
  double vw, vh;
  svg_viewbox(svg, &vw, &vh);
  if (vw <= 0 || vh <= 0) return "no viewBox";
  int n = svg_legend_texts(svg, t, 24);
  if (n == 0) return "no legend texts";
  for (int i = 0; i < n && i < 24; i++)
    for (int k = 0; k < t[i].nline; k++) {
      double right = t[i].x + width(t[i].line[k], t[i].size);
      double y = t[i].y + 14.0 * k;
      if (t[i].x < 0 || right > vw || y > vh || y < t[i].size) {
        snprintf(why, sizeof why,
                 "legend \"%.120s\" line %d spans x %.1f..%.1f at y %.1f, "
                 "outside 0 0 %.0f %.0f",
                 t[i].whole, k, t[i].x, right, y, vw, vh);
        return why;
      }
    }
  return NULL;
}

#endif
