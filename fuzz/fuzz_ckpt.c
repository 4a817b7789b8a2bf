/* fuzz_ckpt - libFuzzer target: the checkpoint file parser
 * (pb_ckpt_decode, what pb_ckpt_read runs on a file's bytes); whatever
 * parses must encode to a file that parses again. The file ends with a
 * CRC-32 of the rest, which random mutations almost never keep right: the
 * custom mutator below fixes it in three mutations out of four, so the
 * parser behind the checksum gets explored too. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ckpt.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (size >= 4 && seed % 4 != 0) {
    uint32_t crc = pb_crc32(0, data, size - 4);
    for (int i = 0; i < 4; i++) data[size - 4 + i] = (uint8_t)(crc >> (8 * i));
  }
  return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pb_err_t err;
  pb_ckpt_t *ck = pb_ckpt_decode(data, size, "fuzz", &err);
  if (ck == NULL) return 0;
  for (int i = 0; i < pb_ckpt_count(ck); i++) (void)pb_ckpt_name(ck, i);
  uint8_t *buf = NULL;
  size_t len = 0;
  if (pb_ckpt_encode(ck, &buf, &len, &err) == 0) {
    pb_ckpt_t *again = pb_ckpt_decode(buf, len, "fuzz-again", &err);
    if (again == NULL) abort();
    pb_ckpt_destroy(&again);
    free(buf);
  }
  pb_ckpt_destroy(&ck);
  return 0;
}
