/* invariant.c - pb_assert's failure (invariant.h). */
#include "invariant.h"

#include <stdio.h>
#include <stdlib.h>

_Noreturn void pb__invariant_failed(const char *cond, const char *file,
                                    int line, const char *func) {
  fprintf(stderr, "%s:%d: %s: invariant failed: %s\n", file, line, func, cond);
  fflush(stderr);
  abort();
}
