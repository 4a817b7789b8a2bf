/* models.c - finding the shipped model files (models.h). */
#include "models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each game whose default network is not "<game>.pbck" (the PROBS one):
 * the measured strongest (data/models/README.md). */
static const struct {
  const char *game, *file;
} DEFAULTS[] = {
    {"connect4", "connect4-alphazero"},
    {"othello", "othello-alphazero"},
};

const char *pb_cli_default_model_name(const char *game) {
  for (size_t i = 0; i < sizeof DEFAULTS / sizeof DEFAULTS[0]; i++)
    if (strcmp(game, DEFAULTS[i].game) == 0) return DEFAULTS[i].file;
  return game;
}

/* Sets dir to the directory of this program (from /proc/self/exe);
 * returns 0, or -1 when it cannot be read. */
static int program_dir(char *dir, size_t n) {
  ssize_t k = readlink("/proc/self/exe", dir, n - 1);
  if (k <= 0) return -1;
  dir[k] = '\0';
  char *slash = strrchr(dir, '/');
  if (slash == NULL) return -1;
  *slash = '\0';
  return 0;
}

int pb_cli_shipped_model(const char *name, char *path, size_t n,
                         pb_err_t *err) {
  name = pb_cli_default_model_name(name);
  char dirs[3][4096];
  int nd = 0;
  const char *env = getenv("PROBS_MODELS");
  if (env != NULL && env[0] != '\0')
    snprintf(dirs[nd++], sizeof dirs[0], "%s", env);
  char self[3900];
  if (program_dir(self, sizeof self) == 0) {
    snprintf(dirs[nd++], sizeof dirs[0], "%s/../../data/models", self);
    snprintf(dirs[nd++], sizeof dirs[0], "%s/../share/probs/models", self);
  }
  char looked[1024] = "";
  size_t l = 0;
  for (int i = 0; i < nd; i++) {
    char p[4400];
    int k = snprintf(p, sizeof p, "%s/%s.pbck", dirs[i], name);
    if (k < 0 || (size_t)k >= sizeof p) continue; /* no such file */
    if (access(p, R_OK) == 0) {
      k = snprintf(path, n, "%s", p);
      if (k < 0 || (size_t)k >= n)
        return pb_err_set(err, PB_ERANGE, "model path too long: %s", p);
      return 0;
    }
    if (l < sizeof looked) {
      k = snprintf(looked + l, sizeof looked - l, "%s%s", l ? ", " : "",
                   dirs[i]);
      l = k < 0 ? sizeof looked : l + (size_t)k;
    }
  }
  return pb_err_set(err, PB_ENOTFOUND,
                    "no shipped model %s.pbck (looked in %s; set PROBS_MODELS "
                    "or give --model CKPT)",
                    name, nd ? looked : "nowhere: /proc/self/exe unreadable");
}
