#include "args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pb_cli_options(int argc, char **argv, const char *cmd,
                   const char *const *names, int n, const char **val,
                   void (*usage)(FILE *f)) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *v = NULL;
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      usage(stdout);
      return 1;
    }
    const char *eq = strchr(arg, '=');
    size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
    int k = -1;
    for (int j = 0; j < n && k < 0; j++)
      if (strlen(names[j]) == klen && !strncmp(arg, names[j], klen)) k = j;
    if (k < 0) {
      fprintf(stderr, "probs %s: unknown option '%s'\n", cmd, arg);
      usage(stderr);
      return 2;
    }
    if (eq)
      v = eq + 1;
    else if (i + 1 < argc)
      v = argv[++i];
    if (v == NULL) {
      fprintf(stderr, "probs %s: option '%s' needs a value\n", cmd, names[k]);
      usage(stderr);
      return 2;
    }
    val[k] = v;
  }
  return 0;
}

int pb_cli_seed(const char *s, unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || errno != 0 || *end != '\0') return -1;
  *out = v;
  return 0;
}

int pb_cli_long(const char *s, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}
