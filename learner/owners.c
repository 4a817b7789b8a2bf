/* owners.c - who delivered each item of the open phases (l->own, written
 * here only): a search item's owner from its acceptance until the search
 * phase ends, a self-play item's until the next self-play iteration
 * opens. intake.c records an owner when it takes a result; the checks
 * (spot.c, selfcheck.c) read them and take an item back (pb__owners_drop)
 * when they throw it out; quarantine.c takes back everything a
 * quarantined connection delivered (pb__owners_forget). Uses only
 * state.c, below it. */
#include <stdlib.h>
#include <string.h>

#include "state.h"

static const owner_t NOBODY = {UINT32_MAX, 0};

static int grow(owner_t **o, size_t *cap, size_t n, pb_err_t *err) {
  if (n > *cap) {
    owner_t *p = realloc(*o, n * sizeof *p);
    if (p == NULL) return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    *o = p;
    *cap = n;
  }
  for (size_t i = 0; i < *cap; i++) (*o)[i] = NOBODY;
  return 0;
}

int pb__owners_search_phase(pb_learner_t *l, size_t n_items, pb_err_t *err) {
  l->own.n_search = 0;
  if (grow(&l->own.search, &l->own.search_cap, n_items, err) != 0)
    return err->code;
  l->own.n_search = n_items;
  return 0;
}

/* The owners of the open self-play iteration's items (a new iteration:
 * none yet). 0, or PB_ENOMEM. */
static int selfplay_iter(pb_learner_t *l, pb_err_t *err) {
  const uint64_t it = pb_iter_selfplay_iter(l->it.iter);
  const size_t n = pb_iter_selfplay_items(l->it.iter);
  if (it == l->own.selfplay_iter && n <= l->own.selfplay_cap) return 0;
  if (grow(&l->own.selfplay, &l->own.selfplay_cap, n, err) != 0)
    return err->code;
  l->own.selfplay_iter = it;
  return 0;
}

int pb__owners_took(pb_learner_t *l, int phase, size_t idx, const peer_t *p,
                    pb_err_t *err) {
  const owner_t who = pb__owner_of(l, p);
  if (phase == PH_SEARCH) {
    if (idx < l->own.n_search) l->own.search[idx] = who;
    return 0;
  }
  if (selfplay_iter(l, err) != 0) return err->code;
  if (idx < l->own.selfplay_cap) l->own.selfplay[idx] = who;
  return 0;
}

int pb__owners_is(const pb_learner_t *l, int phase, size_t idx, owner_t who) {
  if (phase == PH_SEARCH)
    return idx < l->own.n_search && pb__same_owner(l->own.search[idx], who);
  return l->own.selfplay_iter == pb_iter_selfplay_iter(l->it.iter) &&
         idx < l->own.selfplay_cap &&
         pb__same_owner(l->own.selfplay[idx], who);
}

void pb__owners_drop(pb_learner_t *l, int phase, size_t idx) {
  if (phase == PH_SEARCH) {
    if (idx < l->own.n_search) l->own.search[idx] = NOBODY;
  } else if (idx < l->own.selfplay_cap) {
    l->own.selfplay[idx] = NOBODY;
  }
}

/* p's accepted search items of the open search phase go back to the
 * queue (the spot check skips their waiting positions: their owner is
 * gone). */
static size_t forget_search(pb_learner_t *l, owner_t who) {
  size_t k = 0;
  if (l->it.phase != PH_SEARCH) return 0;
  for (size_t i = 0; i < l->own.n_search; i++)
    if (pb__same_owner(l->own.search[i], who)) {
      pb_workq_requeue(l->it.wq, i, now(l));
      l->own.search[i] = NOBODY;
      k++;
    }
  return k;
}

/* p's accepted self-play items of the open self-play iteration (until
 * they are gathered: the phase may wait for the reference games with
 * every item in): their episodes go, and they are re-queued for other
 * actors. */
static size_t forget_selfplay(pb_learner_t *l, owner_t who) {
  if (pb_iter_selfplay_iter(l->it.iter) == 0 || l->own.selfplay == NULL ||
      l->own.selfplay_iter != pb_iter_selfplay_iter(l->it.iter) ||
      (pb_workq_finished(l->it.spq) && l->it.phase != PH_SELFPLAY))
    return 0;
  size_t n = pb_iter_selfplay_items(l->it.iter), k = 0;
  if (n > l->own.selfplay_cap) n = l->own.selfplay_cap;
  for (size_t i = 0; i < n; i++) {
    if (!pb__same_owner(l->own.selfplay[i], who)) continue;
    pb_episodes_clear(pb_iter_item_store(l->it.iter, i));
    pb_workq_requeue(l->it.spq, i, now(l));
    l->own.selfplay[i] = NOBODY;
    k++;
  }
  l->own.selfplay_dropped += k;
  return k;
}

size_t pb__owners_forget(pb_learner_t *l, const peer_t *p) {
  const owner_t who = pb__owner_of(l, p);
  return forget_search(l, who) + forget_selfplay(l, who);
}

void pb__owners_free(pb_learner_t *l) {
  free(l->own.search);
  free(l->own.selfplay);
  memset(&l->own, 0, sizeof l->own);
}
