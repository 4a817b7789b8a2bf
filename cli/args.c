#include "args.h"

#include <errno.h>
#include <stdlib.h>

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
