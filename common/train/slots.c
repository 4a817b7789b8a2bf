/* slots.c - P self-play episodes at once (slots.h). */
#include "slots.h"

#include <stdlib.h>

#include "invariant.h"

int pb_slots_begin(pb_slots_t *s, const pb_game_t *g, int n, uint64_t seed,
                   uint64_t first, pb_err_t *err) {
  pb_assert(s != NULL && g != NULL && n >= 1);
  s->g = g;
  s->n = n;
  s->next = s->finished = 0;
  s->seed = seed;
  s->first = first;
  s->at = malloc((size_t)n * sizeof *s->at);
  return s->at ? 0 : pb_err_set(err, PB_ENOMEM, "self-play: out of memory");
}

void pb_slots_fill(pb_slots_t *s, pb_slot_t *slot) {
  slot->active = 0;
  if (s->next >= s->n) return;
  slot->active = 1;
  slot->index = s->first + (uint64_t)s->next++;
  pb_rng_seed(&slot->rng, s->seed, slot->index);
  s->g->reset(&slot->cur);
  slot->n = 0;
}

void pb_slots_finish(pb_slots_t *s, pb_slot_t *slot) {
  pb_assert(slot->active && slot->index >= s->first &&
            slot->index < s->first + (uint64_t)s->n);
  slot->active = 0;
  s->at[slot->index - s->first] = (uint32_t)s->finished++;
}

int pb_slots_running(const pb_slots_t *s) {
  return s->finished < s->n;
}

int pb_slots_end(pb_slots_t *s, const pb_episodes_t *done, pb_episodes_t *out,
                 int rc, pb_err_t *err) {
  if (rc == 0) {
    pb_assert(s->finished == s->n);
    rc = pb_episodes_append_order(out, done, s->at, err);
  }
  free(s->at);
  s->at = NULL;
  return rc;
}
