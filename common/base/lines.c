/* lines.c - the line splitter (lines.h). */
#include "lines.h"

#include <string.h>

#include "err.h"
#include "invariant.h"

void pb_lines_init(pb_lines_t *it, const char *text, size_t len) {
  pb_assert(it != NULL && (text != NULL || len == 0));
  memset(it, 0, sizeof *it);
  it->text = text;
  it->len = len;
}

void pb_lines_init_w(pb_lines_t *it, char *text, size_t len) {
  pb_lines_init(it, text, len);
  it->wtext = text;
}

int pb_lines_next(pb_lines_t *it, const char **line, size_t *n) {
  pb_assert(it->pos <= it->len);
  if (it->pos == it->len) return 0;
  const char *p = it->text + it->pos;
  size_t left = it->len - it->pos;
  const char *nl = memchr(p, '\n', left);
  if (nl == NULL && it->partial) {
    if (it->max == 0 || left <= it->max) return 0; /* still being written */
    it->pos = it->len;
    it->lineno++;
    *line = p;
    *n = left;
    return PB_ERANGE;
  }
  size_t ll = nl != NULL ? (size_t)(nl - p) : left;
  it->pos += nl != NULL ? ll + 1 : ll;
  it->lineno++;
  if (ll > 0 && p[ll - 1] == '\r') ll--;
  *line = p;
  *n = ll;
  return it->max > 0 && ll > it->max ? PB_ERANGE : 1;
}

int pb_lines_cut(pb_lines_t *it, char **line, size_t *n) {
  pb_assert(it->wtext == it->text); /* pb_lines_init_w gave it */
  const char *l = NULL;
  size_t ll = 0;
  int rc = pb_lines_next(it, &l, &ll);
  if (rc == 0) return 0;
  char *w = it->wtext + (l - it->text);
  w[ll] = '\0';
  *line = w;
  *n = ll;
  return rc;
}
