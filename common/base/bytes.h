/* bytes.h - little-endian numbers in byte buffers: the byte order of every
 * number probs writes into a file or a buffer of its own (the games'
 * packed positions, checkpoints and their sections, network weights and
 * state buffers). Header only: inlined where the games pack positions. */
#ifndef PB_BYTES_H
#define PB_BYTES_H

#include <stdint.h>

/* x into p[0..3] / p[0..7], least significant byte first. */
static inline void pb_le_put32(uint8_t *p, uint32_t x) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(x >> (8 * i));
}
static inline void pb_le_put64(uint8_t *p, uint64_t x) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(x >> (8 * i));
}

/* The number at p[0..3] / p[0..7]. */
static inline uint32_t pb_le_get32(const uint8_t *p) {
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) x |= (uint32_t)p[i] << (8 * i);
  return x;
}
static inline uint64_t pb_le_get64(const uint8_t *p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)p[i] << (8 * i);
  return x;
}

#endif
