/* replay.h - the replay window: the training data of the last few
 * iterations (train.replay_iterations - 1 of them) that V and Q train on
 * beside the current iteration's, oldest first, and its checkpoint
 * section.
 *
 * An iteration's data is its positions with their V targets and one row
 * of num_actions Q targets each (a position's row is its search targets,
 * or the AlphaZero policy), and who delivered each (two tags: its
 * self-play episode's and its search targets'), so that what a worker
 * found lying later taught can leave the window (pb_replay_drop; issue
 * 46). The window owns copies. */
#ifndef PB_REPLAY_H
#define PB_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "bounds.h"
#include "err.h"
#include "game.h"

/* The most iterations a window holds: PB_REPLAY_MAX_ITERATIONS (bounds.h,
 * train.replay_iterations' bound). */

/* A tag: who delivered a position, as the distributed learner names its
 * workers (learner/replaydrop.c). 0: nobody known (the learner itself,
 * --inproc, a window of the first format). Otherwise the top byte is the
 * kind and the rest is not 0:
 *   PB_REPLAY_TAG_CONN  a connection: bits 32..55 a mark of the learner's
 *                       start, bits 0..31 the connection's serial in it
 *   PB_REPLAY_TAG_KEY   a CURVE key: 56 bits of a hash of the key
 * Another top byte is a corrupt tag (pb_replay_decode refuses it). */
enum { PB_REPLAY_TAG_CONN = 1, PB_REPLAY_TAG_KEY = 2 };
#define PB_REPLAY_TAG(kind, rest)                                           \
  (((uint64_t)(kind) << 56) | ((uint64_t)(rest) & 0x00FFFFFFFFFFFFFFull))

/* A position's two tags: whose self-play episode it is, whose search
 * targets its Q row (and, with train.v_search_mix, its V target) are. */
enum { PB_REPLAY_BY_SELFPLAY = 0, PB_REPLAY_BY_SEARCH = 1, PB_REPLAY_BY = 2 };

/* One earlier iteration's training data. */
typedef struct pb_replay_iter {
  size_t n;
  pb_state_t *states;
  float *v;     /* V targets, [n] */
  float *q;     /* Q targets, [n][num_actions] */
  uint64_t *by; /* tags, [n][PB_REPLAY_BY] (0 when not known) */
} pb_replay_iter_t;

typedef struct pb_replay {
  int num_actions;
  int n;                /* iterations held */
  pb_replay_iter_t *it; /* [PB_REPLAY_MAX_ITERATIONS], oldest first */
} pb_replay_t;

/* An empty window for a game of num_actions actions. 0, or PB_ENOMEM. */
int pb_replay_init(pb_replay_t *r, int num_actions, pb_err_t *err);

/* Frees everything; the window is empty (and must be inited again). */
void pb_replay_free(pb_replay_t *r);

/* Drops the oldest iterations until at most keep (>= 0) are left. */
void pb_replay_trim(pb_replay_t *r, int keep);

/* Makes room for a new newest iteration of n positions, keeping at most
 * keep (1..PB_REPLAY_MAX_ITERATIONS) iterations with it, and returns it for the
 * caller to fill (states, v, q allocated for n positions; by zeroed). NULL with
 * PB_ENOMEM in err, the window as it was. */
pb_replay_iter_t *pb_replay_push(pb_replay_t *r, size_t n, int keep,
                                 pb_err_t *err);

/* Positions in the window. */
size_t pb_replay_positions(const pb_replay_t *r);

/* Sample k (< pb_replay_positions) in window order: its position, V
 * target and Q row (v and q may be NULL). */
void pb_replay_sample(const pb_replay_t *r, size_t k, const pb_state_t **s,
                      float *v, const float **q);

/* Drops from every iteration each position one of whose tags is among
 * tags[0..n_tags) (sorted ascending; a 0 in it matches nothing), keeping
 * the others in their order, bit for bit (an iteration may be left with
 * no position). Returns how many positions were dropped. */
size_t pb_replay_drop(pb_replay_t *r, const uint64_t *tags, size_t n_tags);

/* The window as a checkpoint section (little-endian), format 2: u64 magic
 * "PBREPLV2", u32 num_actions, u32 iterations, then per iteration u64 n,
 * n positions (4 u64 words each), n f32 V targets, n * num_actions f32 Q
 * targets, n * PB_REPLAY_BY u64 tags. (Format 1, magic "PBREPLAY", is the
 * same without the tags.) *out is malloc'd (caller frees). 0 or
 * PB_ENOMEM. */
int pb_replay_encode(const pb_replay_t *r, uint8_t **out, size_t *len,
                     pb_err_t *err);

/* Decodes a section of pb_replay_encode, of either format (format 1's
 * positions get tag 0), into r (inited, empty), all or nothing:
 * PB_ECORRUPT naming `path` for a bad magic, another game's action count,
 * more than PB_REPLAY_MAX_ITERATIONS iterations, a truncated or overlong
 * section, or a corrupt tag (named: its iteration, position and value);
 * PB_ENOMEM. */
int pb_replay_decode(pb_replay_t *r, const uint8_t *buf, size_t len,
                     const char *path, pb_err_t *err);

/* Moves everything of src into dst (whose iterations it frees first);
 * src is left holding nothing (pb_replay_free it, or init it again). */
void pb_replay_move(pb_replay_t *dst, pb_replay_t *src);

#endif
