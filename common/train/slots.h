/* slots.h - the scheduler that keeps up to P self-play episodes running at
 * once, shared by the two self-play engines (common/train/selfplay.h: moves
 * drawn from Q; common/train/azplay.h: moves from MCTS).
 *
 * A run plays n episodes numbered first .. first + n - 1. Each slot plays
 * one episode at a time; a slot whose episode ends starts the next number
 * at once, so the batch of positions the engine evaluates stays full
 * until the last episodes. Episode number i draws from its own random
 * stream (seed, i), whatever slot plays it, so the episodes do not depend
 * on P. The engine keeps its finished episodes in the order they finished
 * (pb_slots_finish tells the scheduler which one did); pb_slots_end
 * appends them to the output in number order, one copy per run.
 *
 *   pb_slots_begin(&s, g, n, seed, first, err);
 *   for (i = 0; i < P; i++) pb_slots_fill(&s, &slot[i]);
 *   while (pb_slots_running(&s)) {
 *     ... evaluate every active slot, step each one ...
 *     if (its episode ended) { add it to done; pb_slots_finish(&s, slot);
 *                              pb_slots_fill(&s, slot); }
 *   }
 *   rc = pb_slots_end(&s, &done, out, rc, err);
 *
 * Nothing is allocated per move: begin allocates the finish order once. */
#ifndef PB_SLOTS_H
#define PB_SLOTS_H

#include <stdint.h>

#include "episodes.h"
#include "err.h"
#include "game.h"
#include "rng.h"

/* What the scheduler knows of a slot; an engine's slot embeds it. */
typedef struct pb_slot {
  int active;     /* playing an episode */
  uint64_t index; /* its episode number */
  pb_rng_t rng;   /* its stream: (seed, index) */
  pb_state_t cur; /* the position to move in */
  uint32_t n;     /* positions so far */
} pb_slot_t;

typedef struct pb_slots {
  const pb_game_t *g;
  int n, next, finished;
  uint64_t seed, first;
  uint32_t *at; /* episode number - first -> rank among the finished */
} pb_slots_t;

/* Starts a run of n >= 1 episodes. Returns 0, or PB_ENOMEM. */
int pb_slots_begin(pb_slots_t *s, const pb_game_t *g, int n, uint64_t seed,
                   uint64_t first, pb_err_t *err);

/* Starts the next episode number in slot (its stream, the initial
 * position, no positions yet), or leaves it inactive when every episode
 * has started. */
void pb_slots_fill(pb_slots_t *s, pb_slot_t *slot);

/* The episode of slot has ended and was the next one the engine kept:
 * records its rank and makes the slot inactive. */
void pb_slots_finish(pb_slots_t *s, pb_slot_t *slot);

/* 1 while some episode has not finished. */
int pb_slots_running(const pb_slots_t *s);

/* Ends the run: when rc is 0, appends `done` (the episodes in the order
 * they finished) to out in number order and returns that call's result;
 * else returns rc, leaving out as it was. Frees what begin allocated. */
int pb_slots_end(pb_slots_t *s, const pb_episodes_t *done, pb_episodes_t *out,
                 int rc, pb_err_t *err);

#endif
