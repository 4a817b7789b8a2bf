/* fuzz_http - libFuzzer target: the HTTP request-head parser the
 * learner's server runs on every connection's first bytes, and the query
 * decoder (pb_http_query_get) of /api/move on the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > PB_HTTP_HEAD_MAX) size = PB_HTTP_HEAD_MAX;
  char *buf = malloc(size + 1);
  if (buf == NULL) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  const char *method = NULL;
  char *target = NULL;
  long n = pb_http_parse_head(buf, size, &method, &target);
  if (n > 0 && (method == NULL || target == NULL || target[0] != '/' ||
                (size_t)n > size))
    abort();
  /* The bytes as a query string (cut at the first NUL). */
  memcpy(buf, data, size);
  buf[size] = '\0';
  char out[64];
  long q = pb_http_query_get(buf, "moves", out, sizeof out);
  if (q >= 0 && ((size_t)q >= sizeof out || strlen(out) != (size_t)q))
    abort();
  free(buf);
  return 0;
}
