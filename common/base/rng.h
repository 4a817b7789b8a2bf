/* rng.h - deterministic random numbers (xoshiro256**), seeded by splitmix64.
 *
 * The state is a small transparent struct so that it can be embedded,
 * copied, and written into checkpoints byte for byte (RNG streams survive a
 * --resume). Every stream is derived from a run seed plus a stream id, so
 * that the same seed gives the same run whatever the thread schedule. */
#ifndef PB_RNG_H
#define PB_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb_rng {
  uint64_t s[4];
} pb_rng_t;

/* Seeds *rng from (seed, stream): distinct streams are independent. */
void pb_rng_seed(pb_rng_t *rng, uint64_t seed, uint64_t stream);

/* Next 64 random bits. */
uint64_t pb_rng_next(pb_rng_t *rng);

/* Uniform double in [0, 1). */
double pb_rng_uniform(pb_rng_t *rng);

/* Uniform integer in [0, n); n must be > 0. Unbiased (rejection). */
uint32_t pb_rng_below(pb_rng_t *rng, uint32_t n);

/* Standard normal deviate. */
double pb_rng_normal(pb_rng_t *rng);

/* Gamma(shape, 1) deviate, shape > 0 (Marsaglia-Tsang, boosted below 1). */
double pb_rng_gamma(pb_rng_t *rng, double shape);

/* Fills out[0..n) with a Dirichlet(alpha, ..., alpha) sample (sums to 1). */
void pb_rng_dirichlet(pb_rng_t *rng, double alpha, int n, double *out);

/* Shuffles idx[0..n) in place (Fisher-Yates). */
void pb_rng_shuffle_u32(pb_rng_t *rng, uint32_t *idx, size_t n);

/* splitmix64 finaliser: a good 64-bit mixer, used for hashing too. */
uint64_t pb_mix64(uint64_t x);

#endif
