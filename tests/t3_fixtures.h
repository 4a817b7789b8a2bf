/* t3_fixtures.h - two untrained Tic-Tac-Toe checkpoints in a temporary
 * directory, a PROBS one (V and Q) and an AlphaZero one (policy+value),
 * for the tests of what reads a checkpoint (test_analyze.c,
 * test_analysis_engine.c). Include after cmocka.h. */
#ifndef PB_TEST_T3_FIXTURES_H
#define PB_TEST_T3_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "learn.h"

static char g_dir[64];
static char g_ckpt[128];   /* probs: Tic-Tac-Toe V and Q */
static char g_azckpt[128]; /* alphazero: a Tic-Tac-Toe policy+value net */

/* An untrained checkpoint of config `name` (configs/NAME.yaml) at path. */
static inline int t3_make_ckpt(const char *name, const char *path) {
  char file[256];
  snprintf(file, sizeof file, PB_SOURCE_DIR "/configs/%s.yaml", name);
  pb_config_t cfg;
  pb_err_t err;
  pb_config_defaults(&cfg);
  if (pb_config_load_file(&cfg, file, &err) != 0) return -1;
  pb_learn_t *l = pb_learn_new(&cfg, &err);
  if (l == NULL) return -1;
  int rc = pb_learn_save(l, path, NULL, 0, &err);
  pb_learn_destroy(&l);
  return rc;
}

/* Makes /tmp/pb_test_TAG_XXXXXX with both checkpoints; 0 or -1. */
static inline int t3_setup(const char *tag) {
  snprintf(g_dir, sizeof g_dir, "/tmp/pb_test_%s_XXXXXX", tag);
  if (mkdtemp(g_dir) == NULL) return -1;
  snprintf(g_ckpt, sizeof g_ckpt, "%s/t3.pbck", g_dir);
  snprintf(g_azckpt, sizeof g_azckpt, "%s/t3az.pbck", g_dir);
  if (t3_make_ckpt("tictactoe-smoke", g_ckpt) != 0) return -1;
  return t3_make_ckpt("tictactoe-alphazero", g_azckpt);
}

/* Removes the directory. */
static inline int t3_teardown(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

#endif
