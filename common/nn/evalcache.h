/* evalcache.h - a fixed-size cache of network outputs keyed by position.
 *
 * Workload: beam search and self-play ask for the same positions again and
 * again (openings, transpositions inside one search tree, the same state in
 * many episodes). The table never grows: it is an open-addressing array of
 * a power-of-two size with a short probe window, and a full window evicts.
 * Keys are whole positions (compared with memcmp), so a hash collision can
 * never return another position's values. Clearing is O(1) (a generation
 * counter), which is what happens whenever the network weights change. */
#ifndef PB_EVALCACHE_H
#define PB_EVALCACHE_H

#include <stdint.h>

#include "err.h"
#include "game.h"

typedef struct pb_evalcache pb_evalcache_t;

/* A cache of about `entries` positions (rounded up to a power of two), each
 * holding `outputs` floats. Returns NULL (err filled) if entries or outputs
 * is out of range or memory is short. */
pb_evalcache_t *pb_evalcache_new(uint32_t entries, int outputs, pb_err_t *err);

/* Frees the cache; accepts NULL and sets *c to NULL. */
void pb_evalcache_destroy(pb_evalcache_t **c);

/* Returns the cached outputs for s (valid until the next insert or clear),
 * or NULL on a miss. */
const float *pb_evalcache_get(pb_evalcache_t *c, const pb_state_t *s,
                              uint64_t hash);

/* Stores outputs (copied) for s, evicting an older entry if needed. */
void pb_evalcache_put(pb_evalcache_t *c, const pb_state_t *s, uint64_t hash,
                      const float *outputs);

/* Forgets every entry in O(1). */
void pb_evalcache_clear(pb_evalcache_t *c);

/* Lookup statistics since creation. */
void pb_evalcache_stats(const pb_evalcache_t *c, uint64_t *hits,
                        uint64_t *misses);

#endif
