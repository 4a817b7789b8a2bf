/* rundir_fixtures.h - a temporary run directory and a config read from
 * configs/ beside it: the fixture of the tests that read a run as the web
 * pages, the play server and the status server do (test_web.c,
 * test_webplay.c, test_webserve.c). Include after cmocka.h. */
#ifndef PB_TEST_RUNDIR_FIXTURES_H
#define PB_TEST_RUNDIR_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>

#include "config.h"

/* Makes the directory /tmp/pb_test_TAG_XXXXXX into dir (n bytes) and
 * reads PB_SOURCE_DIR/configs/CONFIG into cfg, with run.dir set to dir
 * when at_dir is 1. Returns 0, or -1 after saying why on stderr (for a
 * cmocka setup). */
static inline int rundir_fixture_open(char *dir, size_t n, const char *tag,
                                      const char *config, int at_dir,
                                      pb_config_t *cfg) {
  char path[512];
  pb_err_t err;
  snprintf(dir, n, "/tmp/pb_test_%s_XXXXXX", tag);
  if (mkdtemp(dir) == NULL) {
    perror("fixture: mkdtemp");
    return -1;
  }
  snprintf(path, sizeof path, "%s/configs/%s", PB_SOURCE_DIR, config);
  pb_config_defaults(cfg);
  if (pb_config_load_file(cfg, path, &err) != 0 ||
      (at_dir && pb_config_set(cfg, "run.dir", dir, &err) != 0)) {
    fprintf(stderr, "fixture: %s\n", err.msg);
    return -1;
  }
  return 0;
}

/* Removes dir and all it holds: 0, or -1. */
static inline int rundir_fixture_remove(const char *dir) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

#endif
