/* evaluator_fixtures.h - what the evaluator's test programs
 * (test_evaluator.c, test_evaluator_proc.c) share: a minimal XML check,
 * file helpers, and the fixture, a real 2-iteration training run in a
 * temporary run directory (FX), made once per program. Header-only
 * (static inline), like proc.h. Include after cmocka.h. */
#ifndef PB_TEST_EVALUATOR_FIXTURES_H
#define PB_TEST_EVALUATOR_FIXTURES_H

#include <ctype.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "inproc.h"
#include "util.h"

/* ------------------------------------------------------------ helpers */

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

static inline int count_str(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static inline char *slurp(const char *path) {
  char *text = NULL;
  size_t len;
  if (pb_read_file(path, 1 << 26, &text, &len, NULL) != 0) return NULL;
  return text;
}

static inline void spit(const char *path, const char *text) {
  assert_int_equal(pb_write_file(path, text, strlen(text), NULL), 0);
}

static inline int rm_entry(const char *path, const struct stat *sb, int flag,
                           struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* ------------------------------------------------------------ fixture */

typedef struct {
  char dir[64];
  char cfg_path[128]; /* the run's config.yaml */
  pb_config_t cfg;
} fixture_t;

static fixture_t *FX;

static inline int group_setup(void **state) {
  (void)state;
  FX = calloc(1, sizeof *FX);
  if (FX == NULL) return -1;
  snprintf(FX->dir, sizeof FX->dir, "/tmp/pb_test_eval_XXXXXX");
  if (mkdtemp(FX->dir) == NULL) return -1;
  pb_err_t err;
  pb_config_defaults(&FX->cfg);
  char ep[128];
  snprintf(ep, sizeof ep, "ipc://%s/pub", FX->dir);
  if (pb_config_load_file(
          &FX->cfg, PB_SOURCE_DIR "/configs/connect4-smoke.yaml", &err) != 0 ||
      pb_config_set(&FX->cfg, "run.dir", FX->dir, &err) != 0 ||
      pb_config_set(&FX->cfg, "net.pub_endpoint", ep, &err) != 0 ||
      pb_config_set(&FX->cfg, "eval.games_per_opponent", "6", &err) != 0 ||
      pb_config_set(&FX->cfg, "eval.threads", "2", &err) != 0) {
    fprintf(stderr, "fixture: %s\n", err.msg);
    return -1;
  }
  pb_inproc_opts_t o = {0, NULL, 0};
  if (pb_inproc_run(&FX->cfg, NULL, &o, &err) != 0) {
    fprintf(stderr, "fixture: %s\n", err.msg);
    return -1;
  }
  snprintf(FX->cfg_path, sizeof FX->cfg_path, "%s/config.yaml", FX->dir);
  return 0;
}

static inline int group_teardown(void **state) {
  (void)state;
  if (FX != NULL) nftw(FX->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(FX);
  FX = NULL;
  return 0;
}

/* Removes the evaluator's outputs, so each test starts from none. */
static inline void clean_outputs(void) {
  const char *names[] = {"elo.csv", "elo.svg", "elo-time.svg", "elo.png",
                         "metrics.jsonl", "learner.log"};
  char path[256];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", FX->dir, names[i]);
    unlink(path);
  }
}

static inline void fx_path(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", FX->dir, name);
}

#endif
