#include "evalcache.h"

#include <stdlib.h>
#include <string.h>

#include "invariant.h"

#define PROBE 4

typedef struct {
  pb_state_t s;
  uint64_t hash;
  uint32_t gen; /* entry is live iff gen == cache->gen */
} entry_t;

struct pb_evalcache {
  entry_t *e;
  float *val;
  uint32_t mask;
  uint32_t gen;
  int outputs;
  uint64_t hits, misses;
};

pb_evalcache_t *pb_evalcache_new(uint32_t entries, int outputs, pb_err_t *err) {
  if (entries < 1 || entries > (1u << 28) || outputs < 1 || outputs > 4096) {
    pb_err_set(err, PB_EINVAL, "evalcache: entries %u or outputs %d out of range",
               entries, outputs);
    return NULL;
  }
  uint32_t n = PROBE;
  while (n < entries) n <<= 1;
  pb_evalcache_t *c = calloc(1, sizeof *c);
  if (c != NULL) {
    c->e = calloc(n, sizeof *c->e);
    c->val = malloc((size_t)n * outputs * sizeof *c->val);
  }
  if (c == NULL || c->e == NULL || c->val == NULL) {
    pb_evalcache_destroy(&c);
    pb_err_set(err, PB_ENOMEM, "evalcache: cannot allocate %u entries", n);
    return NULL;
  }
  c->mask = n - 1;
  c->gen = 1; /* calloc'd entries have gen 0: all empty */
  c->outputs = outputs;
  return c;
}

void pb_evalcache_destroy(pb_evalcache_t **c) {
  if (c == NULL || *c == NULL) return;
  free((*c)->e);
  free((*c)->val);
  free(*c);
  *c = NULL;
}

const float *pb_evalcache_get(pb_evalcache_t *c, const pb_state_t *s,
                              uint64_t hash) {
  pb_assert(c->gen != 0); /* 0 marks an empty entry, never a live one */
  for (uint32_t i = 0; i < PROBE; i++) {
    uint32_t k = (uint32_t)(hash + i) & c->mask;
    entry_t *e = &c->e[k];
    if (e->gen == c->gen && e->hash == hash && !memcmp(&e->s, s, sizeof *s)) {
      c->hits++;
      return &c->val[(size_t)k * c->outputs];
    }
  }
  c->misses++;
  return NULL;
}

void pb_evalcache_put(pb_evalcache_t *c, const pb_state_t *s, uint64_t hash,
                      const float *outputs) {
  pb_assert(c->gen != 0 && outputs != NULL);
  uint32_t victim = (uint32_t)(hash + ((hash >> 40) % PROBE)) & c->mask;
  for (uint32_t i = 0; i < PROBE; i++) {
    uint32_t k = (uint32_t)(hash + i) & c->mask;
    entry_t *e = &c->e[k];
    if (e->gen != c->gen ||
        (e->hash == hash && !memcmp(&e->s, s, sizeof *s))) {
      victim = k;
      break;
    }
  }
  entry_t *e = &c->e[victim];
  e->s = *s;
  e->hash = hash;
  e->gen = c->gen;
  memcpy(&c->val[(size_t)victim * c->outputs], outputs,
         (size_t)c->outputs * sizeof *outputs);
}

void pb_evalcache_clear(pb_evalcache_t *c) {
  if (++c->gen == 0) { /* wrapped: really wipe, keep 0 meaning empty */
    for (uint32_t i = 0; i <= c->mask; i++) c->e[i].gen = 0;
    c->gen = 1;
  }
}

void pb_evalcache_stats(const pb_evalcache_t *c, uint64_t *hits,
                        uint64_t *misses) {
  if (hits) *hits = c->hits;
  if (misses) *misses = c->misses;
}
