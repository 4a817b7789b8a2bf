/* replaydrop.c - who delivered what the replay window holds, and what
 * leaves it when a worker is caught lying only later (issue 46).
 *
 * The spot check (spot.c), the pooled lean test and the self-play check
 * (selfcheck.c) throw out and redo a liar's items of the open phase
 * (quarantine.c). With train.replay_iterations > 1 its items of earlier
 * iterations still train V and Q from the replay window
 * (common/train/replay.h). So each position of the window carries two
 * tags, whose self-play episode it is and whose search targets its Q row
 * is (replay.h's PB_REPLAY_TAG_*): with CURVE the worker's key (an
 * identity: the operator gave it to one worker), without it the
 * connection (a mark of this learner's start and its serial; an address
 * is no identity). Before job TRAIN the learner hands pb_learn the tags
 * of the iteration's episodes and distinct positions, which
 * pb_learn_end_iteration keeps in the window and its checkpoint.
 *
 * A connection quarantined for lying (QUAR_SPOT, QUAR_PLAY), a CURVE key
 * banned for it, and the identities on probation whose recent checked
 * positions lean the way the pooled lean test fires (spot.c) are
 * condemned: every position they delivered leaves the window, at once
 * when no job holds the window, else when the job ends; and since the
 * iteration in training may hold their items too, the last RDROP_TAGS
 * condemned tags are applied again after every TRAIN job. /status counts
 * the positions that left (`spot_check` / `selfplay_check`:
 * `replay_dropped`).
 *
 * The owners of the items are owners.c's (l->own). Not covered: a
 * connection forgotten by the peer table (full) before its iteration
 * trained is tagged by its connection, not its key. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

/* FNV-1a, 64 bits. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
#define FNV0 0xcbf29ce484222325ull

/* The tag of connection `serial` of this start. */
static uint64_t conn_tag(pb_learner_t *l, uint32_t serial) {
  pb_lrdrop_t *r = &l->rdrop;
  if (r->mark == 0) { /* this start's: its id, when and which process */
    uint64_t h = fnv(FNV0, l->start_id, strlen(l->start_id));
    h = fnv(h, &l->t_start, sizeof l->t_start);
    const long pid = (long)getpid();
    h = fnv(h, &pid, sizeof pid);
    r->mark = (uint32_t)(h & 0xFFFFFF) ? (uint32_t)(h & 0xFFFFFF) : 1;
  }
  return PB_REPLAY_TAG(PB_REPLAY_TAG_CONN, ((uint64_t)r->mark << 32) | serial);
}

static uint64_t key_tag(const char *key) {
  uint64_t h = fnv(FNV0, key, strlen(key)) & 0x00FFFFFFFFFFFFFFull;
  return PB_REPLAY_TAG(PB_REPLAY_TAG_KEY, h ? h : 1);
}

static uint64_t peer_tag(pb_learner_t *l, const peer_t *p) {
  return p->key[0] ? key_tag(p->key) : conn_tag(l, p->serial);
}

/* The tag of who delivered an item (0: nobody known). */
static uint64_t owner_tag(pb_learner_t *l, owner_t w) {
  if (w.slot == UINT32_MAX || w.slot >= (uint32_t)l->net.max_peers) return 0;
  const peer_t *p = &l->net.peers[w.slot];
  return p->serial == w.serial ? peer_tag(l, p) : conn_tag(l, w.serial);
}

static int grow(uint64_t **a, size_t *cap, size_t n) {
  if (n <= *cap) return 0;
  uint64_t *t = realloc(*a, n * sizeof *t);
  if (t == NULL) return -1;
  *a = t;
  *cap = n;
  return 0;
}

static void nomem(pb_learner_t *l) {
  pb_err_t err;
  pb_err_set(&err, PB_ENOMEM, "learner: out of memory (replay window tags)");
  pb__set_fatal(l, &err);
}

void pb__rdrop_selfplay(pb_learner_t *l) {
  pb_lrdrop_t *r = &l->rdrop;
  const uint64_t it = pb_iter_selfplay_iter(l->it.iter);
  const size_t items = pb_iter_selfplay_items(l->it.iter);
  const int known =
      it != 0 && l->own.selfplay != NULL && l->own.selfplay_iter == it;
  r->n_ep = 0;
  if (l->cfg.train.replay_iterations <= 1) return; /* no window */
  for (size_t i = 0; it != 0 && i < items; i++) {
    const size_t n = pb_iter_item_store(l->it.iter, i)->n_eps;
    const uint64_t t =
        known && i < l->own.selfplay_cap ? owner_tag(l, l->own.selfplay[i]) : 0;
    if (grow(&r->ep, &r->ep_cap, r->n_ep + n) != 0) {
      nomem(l);
      return;
    }
    for (size_t k = 0; k < n; k++) r->ep[r->n_ep++] = t;
  }
}

void pb__rdrop_train(pb_learner_t *l) {
  pb_lrdrop_t *r = &l->rdrop;
  if (l->cfg.train.replay_iterations <= 1) return;
  /* The episodes the cap (train.replay_capacity) kept: the newest. */
  const size_t dropped = pb_iter_dropped(l->it.iter);
  const size_t n_ep = r->n_ep > dropped ? r->n_ep - dropped : 0;
  const size_t n = pb_iter_searches(l->it.iter)
                       ? pb_iter_search_positions(l->it.iter)
                       : 0;
  if (grow(&r->uniq, &r->uniq_cap, n) != 0) {
    nomem(l);
    return;
  }
  const size_t per = (size_t)l->cfg.net.item_states;
  for (size_t d = 0; d < n; d++) {
    const size_t item = d / per;
    r->uniq[d] = l->own.search != NULL && item < l->own.n_search
                     ? owner_tag(l, l->own.search[item])
                     : 0;
  }
  pb_err_t err;
  if (pb_learn_set_origin(l->learn, n_ep ? r->ep + dropped : NULL, n_ep,
                          n ? r->uniq : NULL, n, &err) != 0)
    pb__set_fatal(l, &err);
}

static int cmp_tag(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Drops the condemned tags' positions from the window now (no job may
 * hold it), logged and counted by why. */
static void apply(pb_learner_t *l) {
  pb_lrdrop_t *r = &l->rdrop;
  r->pending = 0;
  const int whys[2] = {QUAR_SPOT, QUAR_PLAY};
  for (int w = 0; w < 2; w++) {
    size_t n = 0;
    if (grow(&r->scratch, &r->scratch_cap, r->n_bad) != 0) {
      nomem(l);
      return;
    }
    for (size_t i = 0; i < r->n_bad; i++)
      if (r->bad[i].why == whys[w]) r->scratch[n++] = r->bad[i].tag;
    if (n == 0) continue;
    qsort(r->scratch, n, sizeof *r->scratch, cmp_tag);
    const size_t out = pb_learn_replay_drop(l->learn, r->scratch, n);
    if (out == 0) continue;
    r->dropped[w] += out;
    pb_log_warn(l->log,
                "replay window: %zu positions delivered by workers found "
                "lying (%s) left it; %zu remain",
                out, whys[w] == QUAR_SPOT ? "search results, spot check"
                                          : "self-play, self-play check",
                pb_learn_replay_positions(l->learn));
  }
}

/* Tag t is condemned for why (QUAR_SPOT, QUAR_PLAY); 1 when it is new. */
static int condemn(pb_learner_t *l, uint64_t t, int why) {
  pb_lrdrop_t *r = &l->rdrop;
  if (t == 0 || l->cfg.train.replay_iterations <= 1) return 0;
  for (size_t i = 0; i < r->n_bad; i++)
    if (r->bad[i].tag == t) return 0;
  if (r->bad == NULL && (r->bad = calloc(RDROP_TAGS, sizeof *r->bad)) == NULL) {
    nomem(l);
    return 0;
  }
  /* A ring: the oldest makes room (its positions left long ago). */
  r->bad[r->bad_at] = (rdrop_tag_t){t, (uint8_t)why};
  r->bad_at = (r->bad_at + 1) % RDROP_TAGS;
  if (r->n_bad < RDROP_TAGS) r->n_bad++;
  r->pending = 1;
  return 1;
}

static void apply_now(pb_learner_t *l) {
  if (l->rdrop.pending && l->it.job_kind == 0) apply(l);
}

void pb__rdrop_peer(pb_learner_t *l, const peer_t *p, int why) {
  if (why != QUAR_SPOT && why != QUAR_PLAY) return;
  if (condemn(l, peer_tag(l, p), why)) apply_now(l);
}

void pb__rdrop_key(pb_learner_t *l, const char *key, int why) {
  if (why != QUAR_SPOT && why != QUAR_PLAY) return;
  if (condemn(l, key_tag(key), why)) apply_now(l);
}

void pb__rdrop_lean(pb_learner_t *l, owner_t w, float bias, int pool_sign) {
  pb_lrdrop_t *r = &l->rdrop;
  if (l->cfg.train.replay_iterations <= 1) return;
  if (bias != 0.0f) {
    r->lean[r->lean_at] = (rdrop_lean_t){owner_tag(l, w), bias};
    r->lean_at = (r->lean_at + 1) % RDROP_LEAN;
    if (r->n_lean < RDROP_LEAN) r->n_lean++;
  }
  if (pool_sign == 0) return;
  int any = 0;
  for (size_t i = 0; i < r->n_lean; i++) {
    rdrop_lean_t *e = &r->lean[i];
    if (e->tag != 0 && (e->bias > 0 ? 1 : -1) == pool_sign) {
      any |= condemn(l, e->tag, QUAR_SPOT);
      e->tag = 0; /* condemned once */
    }
  }
  if (any) apply_now(l);
}

void pb__rdrop_job_done(pb_learner_t *l, int kind) {
  if (kind == PH_TRAIN && l->rdrop.n_bad > 0) l->rdrop.pending = 1;
  apply_now(l);
}

void pb__rdrop_free(pb_learner_t *l) {
  pb_lrdrop_t *r = &l->rdrop;
  free(r->ep);
  free(r->uniq);
  free(r->scratch);
  free(r->bad);
  memset(r, 0, sizeof *r);
}
