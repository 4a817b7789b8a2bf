/* match_openings.c - the openings of a match (match.h): a file of
 * openings, one a line, read into start positions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "match.h"
#include "util.h"

/* ---- openings ---------------------------------------------------------- */

void pb_match_openings_free_lines(char ***lines, int n) {
  if (lines == NULL || *lines == NULL) return;
  for (int k = 0; k < n; k++) free((*lines)[k]);
  free(*lines);
  *lines = NULL;
}

/* pb_match_openings_parse, keeping each opening's line in *lines when
 * lines is not NULL. */
static int openings_parse(const pb_game_t *g, const char *text, size_t len,
                          const char *name, pb_state_t **out, char ***lines,
                          int *n, pb_err_t *err) {
  if (out != NULL) *out = NULL;
  if (n != NULL) *n = 0;
  if (lines != NULL) *lines = NULL;
  char **ls = NULL;
  if (g == NULL || text == NULL || name == NULL || out == NULL || n == NULL)
    return pb_err_set(err, PB_EINVAL, "openings: NULL argument");
  pb_state_t *st = NULL;
  int count = 0, cap = 0, rc = 0, lineno = 0;
  char line[4096];
  pb_lines_t it;
  pb_lines_init(&it, text, len);
  const char *p = NULL;
  size_t ll = 0;
  while (rc == 0 && pb_lines_next(&it, &p, &ll) == 1) {
    lineno = it.lineno;
    /* Trim spaces (and a CR) at both ends. */
    while (ll > 0 && (*p == ' ' || *p == '\t')) p++, ll--;
    while (ll > 0 && (p[ll - 1] == ' ' || p[ll - 1] == '\t' ||
                      p[ll - 1] == '\r'))
      ll--;
    if (ll == 0 || p[0] == '#') continue;
    if (ll >= sizeof line) {
      rc = pb_err_set(err, PB_ECORRUPT, "%s:%d: line longer than %zu bytes",
                      name, lineno, sizeof line - 1);
      break;
    }
    if (memchr(p, '\0', ll) != NULL) {
      rc = pb_err_set(err, PB_ECORRUPT, "%s:%d: a NUL byte (not a text file)",
                      name, lineno);
      break;
    }
    memcpy(line, p, ll);
    line[ll] = '\0';
    pb_state_t s;
    pb_err_t e;
    pb_err_clear(&e);
    if (strcmp(line, "-") == 0) {
      g->reset(&s);
    } else if (g->parse(&s, line, &e) != 0) {
      rc = pb_err_set(err, PB_ECORRUPT, "%s:%d: \"%.60s\": %s", name, lineno,
                      line, e.msg);
      break;
    }
    float r;
    if (g->terminal(&s, &r)) {
      rc = pb_err_set(err, PB_ECORRUPT,
                      "%s:%d: \"%.60s\": the game is over after these moves",
                      name, lineno, line);
      break;
    }
    if (count == PB_MATCH_OPENINGS_MAX) {
      rc = pb_err_set(err, PB_ERANGE, "%s:%d: more than %d openings", name,
                      lineno, PB_MATCH_OPENINGS_MAX);
      break;
    }
    if (count == cap) {
      int nc = cap ? 2 * cap : 64;
      pb_state_t *ns = realloc(st, (size_t)nc * sizeof *ns);
      if (ns != NULL) st = ns;
      char **nl2 = lines != NULL ? realloc(ls, (size_t)nc * sizeof *nl2) : NULL;
      if (nl2 != NULL) ls = nl2;
      if (ns == NULL || (lines != NULL && nl2 == NULL)) {
        rc = pb_err_set(err, PB_ENOMEM, "%s: out of memory", name);
        break;
      }
      cap = nc;
    }
    if (lines != NULL &&
        (ls[count] = strdup(strcmp(line, "-") ? line : "")) == NULL) {
      rc = pb_err_set(err, PB_ENOMEM, "%s: out of memory", name);
      break;
    }
    st[count++] = s;
  }
  if (rc == 0 && count == 0)
    rc = pb_err_set(err, PB_ECORRUPT,
                    "%s: no openings (one a line, the moves in %s's notation)",
                    name, g->name);
  if (rc != 0) {
    free(st);
    pb_match_openings_free_lines(&ls, count);
    return rc;
  }
  *out = st;
  *n = count;
  if (lines != NULL) *lines = ls;
  return 0;
}

int pb_match_openings_parse(const pb_game_t *g, const char *text, size_t len,
                            const char *name, pb_state_t **out, int *n,
                            pb_err_t *err) {
  return openings_parse(g, text, len, name, out, NULL, n, err);
}

#define PB__OPENINGS_FILE_MAX (64u << 20)

int pb_match_openings_load(const pb_game_t *g, const char *path,
                           pb_state_t **out, int *n, pb_err_t *err) {
  return pb_match_openings_load_lines(g, path, out, NULL, n, err);
}

int pb_match_openings_load_lines(const pb_game_t *g, const char *path,
                                 pb_state_t **out, char ***lines, int *n,
                                 pb_err_t *err) {
  if (out != NULL) *out = NULL;
  if (n != NULL) *n = 0;
  if (lines != NULL) *lines = NULL;
  if (path == NULL) return pb_err_set(err, PB_EINVAL, "openings: NULL path");
  char *buf = NULL;
  size_t len = 0;
  int rc = pb_read_file(path, PB__OPENINGS_FILE_MAX, &buf, &len, err);
  if (rc == 0) rc = openings_parse(g, buf, len, path, out, lines, n, err);
  free(buf);
  return rc;
}
