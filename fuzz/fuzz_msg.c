/* fuzz_msg - libFuzzer target: the wire decoder (pb_msg_decode) on any
 * bytes, with and without the run/game a learner expects, and the encoder
 * on whatever decodes (a round trip must decode again). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pb_msg_t m;
  pb_err_t err;
  static const pb_msg_expect_t ex = {"c4-smoke", PB_GAME_CONNECT4};
  if (pb_msg_decode(data, size, &ex, &m, &err) == 0) pb_msg_free(&m);
  if (pb_msg_decode(data, size, NULL, &m, &err) == 0) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (pb_msg_encode(&m, &buf, &len, &err) == 0) {
      pb_msg_t again;
      if (pb_msg_decode(buf, len, NULL, &again, &err) != 0) abort();
      if (again.type != m.type) abort();
      pb_msg_free(&again);
      free(buf);
    }
    pb_msg_free(&m);
  }
  return 0;
}
