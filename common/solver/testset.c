/* testset.c - solved test sets (testset.h): the text format, the sets
 * compiled into the program, and scoring chosen moves. */
#include "testset.h"

#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "util.h"

/* The shipped sets, generated at build time from data/<game>-testset.txt
 * (cmake/embed_testsets.cmake). */
typedef struct {
  const char *game;
  const char *text;
  size_t len;
} pb_testset_blob_t;
extern const pb_testset_blob_t pb_testset_blobs[];
extern const int pb_testset_nblobs;

struct pb_testset {
  const pb_game_t *g;
  char *name;
  size_t n, cap;
  pb_state_t *states;
  int8_t *labels; /* n * num_actions */
};

static const char HEADER[] = "# probs testset game=";

void pb_testset_destroy(pb_testset_t **pt) {
  if (pt == NULL || *pt == NULL) return;
  free((*pt)->name);
  free((*pt)->states);
  free((*pt)->labels);
  free(*pt);
  *pt = NULL;
}

const pb_game_t *pb_testset_game(const pb_testset_t *t) { return t->g; }
size_t pb_testset_count(const pb_testset_t *t) { return t->n; }
const char *pb_testset_name(const pb_testset_t *t) { return t->name; }

const pb_state_t *pb_testset_state(const pb_testset_t *t, size_t i) {
  return &t->states[i];
}

const int8_t *pb_testset_labels(const pb_testset_t *t, size_t i) {
  return &t->labels[i * (size_t)t->g->num_actions];
}

static int label_of(char c) {
  switch (c) {
    case 'W': return PB_TS_WIN;
    case 'D': return PB_TS_DRAW;
    case 'L': return PB_TS_LOSS;
    case '.': return PB_TS_ILLEGAL;
    default: return -100;
  }
}

static char char_of(int label) {
  switch (label) {
    case PB_TS_WIN: return 'W';
    case PB_TS_DRAW: return 'D';
    case PB_TS_LOSS: return 'L';
    default: return '.';
  }
}

static int best_label(const int8_t *lab, int na) {
  int best = PB_TS_ILLEGAL;
  for (int a = 0; a < na; a++)
    if (lab[a] > best) best = lab[a];
  return best;
}

int pb_testset_optimal(const pb_testset_t *t, size_t i, int action) {
  const int na = t->g->num_actions;
  if (i >= t->n || action < 0 || action >= na) return 0;
  const int8_t *lab = pb_testset_labels(t, i);
  return lab[action] != PB_TS_ILLEGAL && lab[action] == best_label(lab, na);
}

double pb_testset_score(const pb_testset_t *t, const int *actions) {
  if (t->n == 0) return 0.0;
  size_t ok = 0;
  for (size_t i = 0; i < t->n; i++) ok += (size_t)pb_testset_optimal(t, i, actions[i]);
  return (double)ok / (double)t->n;
}

/* Parses one position line (NUL-terminated, no line break) into slot
 * t->n. */
static int parse_line(pb_testset_t *t, char *line, const char *name,
                      int lineno, pb_err_t *err) {
  const pb_game_t *g = t->g;
  const int na = g->num_actions;
  char *sp = strchr(line, ' ');
  if (sp == NULL)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s:%d: expected \"MOVES LABELS\" (one space)", name,
                      lineno);
  *sp = '\0';
  const char *moves = line, *labels = sp + 1;
  pb_state_t s;
  pb_err_t e;
  pb_err_clear(&e);
  if (strcmp(moves, "-") == 0)
    g->reset(&s);
  else if (g->parse(&s, moves, &e) != 0)
    return pb_err_set(err, PB_ECORRUPT, "%s:%d: %s", name, lineno, e.msg);
  if ((int)strlen(labels) != na)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s:%d: %zu labels, expected one per action (%d)", name,
                      lineno, strlen(labels), na);
  uint8_t acts[PB_MAX_ACTIONS];
  int nl = g->legal(&s, acts);
  if (nl == 0)
    return pb_err_set(err, PB_ECORRUPT, "%s:%d: the game is over in \"%s\"",
                      name, lineno, moves);
  int8_t *lab = &t->labels[t->n * (size_t)na];
  int k = 0;
  for (int a = 0; a < na; a++) {
    int v = label_of(labels[a]);
    if (v == -100)
      return pb_err_set(err, PB_ECORRUPT,
                        "%s:%d: bad label '%c' (expected W, D, L or .)", name,
                        lineno, labels[a] >= 32 && labels[a] < 127 ? labels[a] : '?');
    int legal = k < nl && acts[k] == a;
    if (legal) k++;
    if (legal != (v != PB_TS_ILLEGAL))
      return pb_err_set(err, PB_ECORRUPT,
                        "%s:%d: action %d is %s but labelled '%c'", name,
                        lineno, a, legal ? "legal" : "illegal", labels[a]);
    lab[a] = (int8_t)v;
  }
  t->states[t->n++] = s;
  return 0;
}

pb_testset_t *pb_testset_parse(const char *text, size_t len, const char *name,
                               const pb_game_t *g, pb_err_t *err) {
  if (text == NULL || g == NULL || name == NULL) {
    pb_err_set(err, PB_EINVAL, "testset: NULL argument");
    return NULL;
  }
  pb_testset_t *t = calloc(1, sizeof *t);
  char *buf = malloc(len + 1);
  if (t == NULL || buf == NULL || (t->name = strdup(name)) == NULL) {
    free(buf);
    pb_testset_destroy(&t);
    pb_err_set(err, PB_ENOMEM, "testset: out of memory");
    return NULL;
  }
  t->g = g;
  memcpy(buf, text, len);
  buf[len] = '\0';
  int rc = 0, lineno = 0;
  pb_lines_t it;
  pb_lines_init_w(&it, buf, len);
  char *p = NULL;
  size_t ll = 0;
  while (rc == 0 && pb_lines_cut(&it, &p, &ll) == 1) {
    lineno = it.lineno;
    if (memchr(p, '\0', ll) != NULL) {
      rc = pb_err_set(err, PB_ECORRUPT, "%s:%d: a NUL byte (not a text file)",
                      name, lineno);
    } else if (lineno == 1) {
      size_t hl = sizeof HEADER - 1;
      if (strncmp(p, HEADER, hl) != 0)
        rc = pb_err_set(err, PB_ECORRUPT,
                        "%s:1: not a probs test set (the first line must be "
                        "\"%sNAME\")",
                        name, HEADER);
      else if (strcmp(p + hl, g->name) != 0)
        rc = pb_err_set(err, PB_EMISMATCH,
                        "%s: a test set for %s, not %s", name, p + hl,
                        g->name);
    } else if (ll > 0 && p[0] != '#') {
      if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 256;
        pb_state_t *ns = realloc(t->states, nc * sizeof *ns);
        if (ns != NULL) t->states = ns;
        int8_t *lb = realloc(t->labels, nc * (size_t)g->num_actions);
        if (lb != NULL) t->labels = lb;
        if (ns == NULL || lb == NULL) {
          rc = pb_err_set(err, PB_ENOMEM, "testset: out of memory");
          break;
        }
        t->cap = nc;
      }
      rc = parse_line(t, p, name, lineno, err);
    }
  }
  free(buf);
  if (rc == 0 && t->n == 0)
    rc = pb_err_set(err, PB_ECORRUPT, "%s: no positions", name);
  if (rc != 0) pb_testset_destroy(&t);
  return t;
}

pb_testset_t *pb_testset_load(const char *path, const pb_game_t *g,
                              pb_err_t *err) {
  char *buf = NULL;
  size_t len = 0;
  if (pb_read_file(path, 64u << 20, &buf, &len, err) != 0) return NULL;
  pb_testset_t *t = pb_testset_parse(buf, len, path, g, err);
  free(buf);
  return t;
}

pb_testset_t *pb_testset_builtin(const pb_game_t *g, pb_err_t *err) {
  for (int i = 0; g != NULL && i < pb_testset_nblobs; i++)
    if (strcmp(pb_testset_blobs[i].game, g->name) == 0) {
      char name[96];
      snprintf(name, sizeof name, "builtin:%s", g->name);
      return pb_testset_parse(pb_testset_blobs[i].text,
                              pb_testset_blobs[i].len, name, g, err);
    }
  pb_err_set(err, PB_ENOTFOUND, "testset: no test set is shipped for %s",
             g ? g->name : "(null)");
  return NULL;
}

pb_testset_t *pb_testset_open(const char *path, const pb_game_t *g,
                              pb_err_t *err) {
  if (path == NULL || path[0] == '\0' || strcmp(path, "builtin") == 0)
    return pb_testset_builtin(g, err);
  return pb_testset_load(path, g, err);
}

int pb_testset_write_line(FILE *f, const pb_game_t *g, const uint8_t *moves,
                          int n, const int8_t *labels, pb_err_t *err) {
  char line[512];
  size_t k = 0;
  if (n == 0) line[k++] = '-';
  for (int i = 0; i < n; i++) {
    char nm[16];
    int w = g->action_name(moves[i], nm, sizeof nm);
    if (w < 0 || k + (size_t)w + 1 >= sizeof line - PB_MAX_ACTIONS - 2)
      return pb_err_set(err, PB_EINVAL, "testset: cannot name move %d", i);
    memcpy(line + k, nm, (size_t)w);
    k += (size_t)w;
  }
  line[k++] = ' ';
  for (int a = 0; a < g->num_actions; a++) line[k++] = char_of(labels[a]);
  line[k++] = '\n';
  if (fwrite(line, 1, k, f) != k)
    return pb_err_set(err, PB_EIO, "testset: write failed");
  return 0;
}
