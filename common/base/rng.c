#include "rng.h"

#include <math.h>

#include "invariant.h"

uint64_t pb_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void pb_rng_seed(pb_rng_t *rng, uint64_t seed, uint64_t stream) {
  uint64_t x = pb_mix64(seed) ^ pb_mix64(stream * 0xd1342543de82ef95ULL + 1);
  for (int i = 0; i < 4; i++) {
    x = pb_mix64(x + (uint64_t)i);
    rng->s[i] = x;
  }
  if ((rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]) == 0) rng->s[0] = 1;
}

static inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

uint64_t pb_rng_next(pb_rng_t *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double pb_rng_uniform(pb_rng_t *rng) {
  return (double)(pb_rng_next(rng) >> 11) * 0x1.0p-53;
}

uint32_t pb_rng_below(pb_rng_t *rng, uint32_t n) {
  pb_assert(n > 0); /* a choice among none: the rejection zone divides by n */
  /* Lemire's multiply-shift with rejection of the biased low zone. */
  uint64_t m = (uint64_t)(uint32_t)(pb_rng_next(rng) >> 32) * n;
  uint32_t lo = (uint32_t)m;
  if (lo < n) {
    uint32_t t = (uint32_t)(-n) % n;
    while (lo < t) {
      m = (uint64_t)(uint32_t)(pb_rng_next(rng) >> 32) * n;
      lo = (uint32_t)m;
    }
  }
  return (uint32_t)(m >> 32);
}

double pb_rng_normal(pb_rng_t *rng) {
  /* Box-Muller; one of the pair is dropped to keep the state plain. */
  double u1 = pb_rng_uniform(rng), u2 = pb_rng_uniform(rng);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double pb_rng_gamma(pb_rng_t *rng, double shape) {
  pb_assert(shape > 0.0);
  if (shape < 1.0) {
    /* Gamma(a) = Gamma(a+1) * U^(1/a) */
    double u = pb_rng_uniform(rng);
    if (u < 1e-300) u = 1e-300;
    return pb_rng_gamma(rng, shape + 1.0) * pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = pb_rng_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = pb_rng_uniform(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
  }
}

void pb_rng_dirichlet(pb_rng_t *rng, double alpha, int n, double *out) {
  pb_assert(alpha > 0.0 && n >= 0 && (n == 0 || out != NULL));
  double sum = 0.0;
  for (int i = 0; i < n; i++) {
    out[i] = pb_rng_gamma(rng, alpha);
    sum += out[i];
  }
  if (sum <= 0.0) {
    for (int i = 0; i < n; i++) out[i] = 1.0 / n;
    return;
  }
  for (int i = 0; i < n; i++) out[i] /= sum;
}

void pb_rng_shuffle_u32(pb_rng_t *rng, uint32_t *idx, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = pb_rng_below(rng, (uint32_t)i);
    uint32_t t = idx[i - 1];
    idx[i - 1] = idx[j];
    idx[j] = t;
  }
}
