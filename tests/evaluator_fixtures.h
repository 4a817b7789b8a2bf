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
#include "xml_check.h"

/* ------------------------------------------------------------ helpers */

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
  pb_inproc_opts_t o = {.resume = 0};
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
