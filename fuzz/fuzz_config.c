/* fuzz_config - libFuzzer target: the YAML config loader and its checks
 * on any text (the first 64 KiB of the input, NUL-terminated). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) size = 65536;
  char *text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  if (pb_config_load_string(&c, text, &err) == 0) {
    (void)pb_config_check(&c, &err);
    char *yaml = NULL;
    if (pb_config_to_yaml(&c, &yaml, &err) == 0) free(yaml);
  }
  free(text);
  return 0;
}
