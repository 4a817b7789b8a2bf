/* state_replay.h - private to learner/: who delivered what the replay
 * window holds, and the tags whose positions leave it (l->rdrop, written
 * by replaydrop.c only). */
#ifndef PB_LEARNER_STATE_REPLAY_H
#define PB_LEARNER_STATE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

/* The tags whose positions leave the window: the last RDROP_TAGS; and
 * the recent leaning positions on probation (the pooled lean test). */
#define RDROP_TAGS 4096
#define RDROP_LEAN 256
typedef struct {
  uint64_t tag;
  uint8_t why; /* QUAR_SPOT, QUAR_PLAY */
} rdrop_tag_t;
typedef struct {
  uint64_t tag; /* 0: condemned already */
  float bias;
} rdrop_lean_t;

typedef struct {
  uint32_t mark;            /* this start's mark in connection tags */
  uint64_t *ep;             /* the tags of the episodes gathered last */
  size_t n_ep, ep_cap;
  uint64_t *uniq, *scratch; /* per distinct position; sorting */
  size_t uniq_cap, scratch_cap;
  rdrop_tag_t *bad;         /* a ring of RDROP_TAGS (NULL: none yet) */
  size_t n_bad, bad_at;
  int pending;              /* condemned, not applied yet (a job ran) */
  rdrop_lean_t lean[RDROP_LEAN];
  size_t n_lean, lean_at;
  uint64_t dropped[2];      /* positions that left: spot check, self-play */
} pb_lrdrop_t;

#endif
