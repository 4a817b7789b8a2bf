/* replay.c - the replay window (replay.h). */
#include "replay.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "invariant.h"

#define REPLAY_MAGIC 0x59414C5045524250ull  /* "PBREPLAY", format 1 */
#define REPLAY_MAGIC2 0x32564C5045524250ull /* "PBREPLV2", format 2 */

static void iter_free(pb_replay_iter_t *p) {
  free(p->states);
  free(p->v);
  free(p->q);
  free(p->by);
  memset(p, 0, sizeof *p);
}

/* Allocates an iteration of n positions (tags 0); 0 or -1. */
static int iter_alloc(pb_replay_iter_t *p, size_t n, size_t A) {
  p->n = n;
  p->states = malloc((n ? n : 1) * sizeof *p->states);
  p->v = malloc((n ? n : 1) * sizeof *p->v);
  p->q = malloc((n ? n : 1) * A * sizeof *p->q);
  p->by = calloc((n ? n : 1) * PB_REPLAY_BY, sizeof *p->by);
  if (p->states && p->v && p->q && p->by) return 0;
  iter_free(p);
  return -1;
}

int pb_replay_init(pb_replay_t *r, int num_actions, pb_err_t *err) {
  pb_assert(r != NULL && num_actions >= 1);
  r->num_actions = num_actions;
  r->n = 0;
  r->it = calloc(PB_REPLAY_MAX_ITERATIONS, sizeof *r->it);
  return r->it ? 0 : pb_err_set(err, PB_ENOMEM, "replay: out of memory");
}

void pb_replay_free(pb_replay_t *r) {
  if (r == NULL || r->it == NULL) return;
  for (int i = 0; i < r->n; i++) iter_free(&r->it[i]);
  free(r->it);
  r->it = NULL;
  r->n = 0;
}

void pb_replay_trim(pb_replay_t *r, int keep) {
  if (keep < 0) keep = 0;
  if (r->n <= keep) return;
  const int drop = r->n - keep;
  for (int i = 0; i < drop; i++) iter_free(&r->it[i]);
  memmove(&r->it[0], &r->it[drop], (size_t)keep * sizeof r->it[0]);
  memset(&r->it[keep], 0, (size_t)drop * sizeof r->it[0]);
  r->n = keep;
}

pb_replay_iter_t *pb_replay_push(pb_replay_t *r, size_t n, int keep,
                                 pb_err_t *err) {
  pb_assert(keep >= 1 && keep <= PB_REPLAY_MAX_ITERATIONS);
  pb_replay_iter_t p;
  if (iter_alloc(&p, n, (size_t)r->num_actions) != 0) {
    pb_err_set(err, PB_ENOMEM, "replay: out of memory");
    return NULL;
  }
  pb_replay_trim(r, keep - 1);
  r->it[r->n] = p;
  return &r->it[r->n++];
}

size_t pb_replay_positions(const pb_replay_t *r) {
  size_t n = 0;
  for (int i = 0; i < r->n; i++) n += r->it[i].n;
  return n;
}

void pb_replay_sample(const pb_replay_t *r, size_t k, const pb_state_t **s,
                      float *v, const float **q) {
  const size_t A = (size_t)r->num_actions;
  for (int i = 0; i < r->n; i++) {
    if (k < r->it[i].n) {
      *s = &r->it[i].states[k];
      if (v) *v = r->it[i].v[k];
      if (q) *q = &r->it[i].q[k * A];
      return;
    }
    k -= r->it[i].n;
  }
  pb_assert(!"sample index past the window");
}

/* Whether tag t is among the sorted tags[0..n). */
static int among(uint64_t t, const uint64_t *tags, size_t n) {
  if (t == 0) return 0;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (tags[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && tags[lo] == t;
}

size_t pb_replay_drop(pb_replay_t *r, const uint64_t *tags, size_t n_tags) {
  for (size_t i = 1; i < n_tags; i++) pb_assert(tags[i - 1] <= tags[i]);
  const size_t A = (size_t)r->num_actions;
  size_t dropped = 0;
  for (int i = 0; i < r->n; i++) {
    pb_replay_iter_t *p = &r->it[i];
    size_t n = 0;
    for (size_t k = 0; k < p->n; k++) {
      const uint64_t *by = &p->by[k * PB_REPLAY_BY];
      int out = 0;
      for (int b = 0; b < PB_REPLAY_BY; b++) out |= among(by[b], tags, n_tags);
      if (out) continue;
      if (n != k) {
        p->states[n] = p->states[k];
        p->v[n] = p->v[k];
        memmove(&p->q[n * A], &p->q[k * A], A * sizeof *p->q);
        memmove(&p->by[n * PB_REPLAY_BY], by, PB_REPLAY_BY * sizeof *by);
      }
      n++;
    }
    dropped += p->n - n;
    p->n = n;
  }
  return dropped;
}

/* Whether tag t is one pb_replay_decode takes (replay.h). */
static int tag_ok(uint64_t t) {
  const unsigned kind = (unsigned)(t >> 56);
  return t == 0 || ((kind == PB_REPLAY_TAG_CONN || kind == PB_REPLAY_TAG_KEY) &&
                    (t & 0x00FFFFFFFFFFFFFFull) != 0);
}

static void putf(uint8_t *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  pb_le_put32(p, u);
}
static float getf(const uint8_t *p) {
  uint32_t u = pb_le_get32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int pb_replay_encode(const pb_replay_t *r, uint8_t **out, size_t *len,
                     pb_err_t *err) {
  const size_t A = (size_t)r->num_actions;
  size_t n = 16;
  for (int i = 0; i < r->n; i++)
    n += 8 + r->it[i].n * (32 + 4 + 4 * A + 8 * PB_REPLAY_BY);
  uint8_t *b = malloc(n), *p = b;
  if (b == NULL) return pb_err_set(err, PB_ENOMEM, "replay: out of memory");
  pb_le_put64(p, REPLAY_MAGIC2);
  pb_le_put32(p + 8, (uint32_t)A);
  pb_le_put32(p + 12, (uint32_t)r->n);
  p += 16;
  for (int i = 0; i < r->n; i++) {
    const pb_replay_iter_t *ps = &r->it[i];
    pb_le_put64(p, ps->n);
    p += 8;
    for (size_t k = 0; k < ps->n; k++)
      for (int w = 0; w < 4; w++, p += 8) pb_le_put64(p, ps->states[k].w[w]);
    for (size_t k = 0; k < ps->n; k++, p += 4) putf(p, ps->v[k]);
    for (size_t k = 0; k < ps->n * A; k++, p += 4) putf(p, ps->q[k]);
    for (size_t k = 0; k < ps->n * PB_REPLAY_BY; k++, p += 8)
      pb_le_put64(p, ps->by[k]);
  }
  *out = b;
  *len = n;
  return 0;
}

int pb_replay_decode(pb_replay_t *r, const uint8_t *b, size_t len,
                     const char *path, pb_err_t *err) {
  pb_assert(r->n == 0);
  const size_t A = (size_t)r->num_actions;
  const uint64_t magic = len < 16 ? 0 : pb_le_get64(b);
  if ((magic != REPLAY_MAGIC && magic != REPLAY_MAGIC2) ||
      pb_le_get32(b + 8) != A ||
      pb_le_get32(b + 12) > PB_REPLAY_MAX_ITERATIONS)
    return pb_err_set(err, PB_ECORRUPT, "%s: bad replay window section", path);
  const size_t tags = magic == REPLAY_MAGIC2 ? 8 * PB_REPLAY_BY : 0;
  const int np = (int)pb_le_get32(b + 12);
  size_t off = 16;
  for (int i = 0; i < np; i++) {
    if (len - off < 8) goto bad;
    uint64_t n = pb_le_get64(b + off);
    off += 8;
    if (n > (len - off) / (32 + 4 + 4 * A + tags)) goto bad;
    pb_replay_iter_t *ps = &r->it[i];
    if (iter_alloc(ps, (size_t)n, A) != 0) {
      pb_replay_trim(r, 0);
      return pb_err_set(err, PB_ENOMEM, "replay: out of memory");
    }
    r->n = i + 1;
    for (size_t k = 0; k < n; k++) {
      memset(&ps->states[k], 0, sizeof ps->states[k]);
      for (int w = 0; w < 4; w++, off += 8)
        ps->states[k].w[w] = pb_le_get64(b + off);
    }
    for (size_t k = 0; k < n; k++, off += 4) ps->v[k] = getf(b + off);
    for (size_t k = 0; k < n * A; k++, off += 4) ps->q[k] = getf(b + off);
    for (size_t k = 0; tags && k < n * PB_REPLAY_BY; k++, off += 8) {
      const uint64_t t = ps->by[k] = pb_le_get64(b + off);
      if (!tag_ok(t)) {
        pb_replay_trim(r, 0);
        return pb_err_set(err, PB_ECORRUPT,
                          "%s: replay window section: position %zu of "
                          "iteration %d has a corrupt %s tag 0x%016" PRIx64
                          " (kind %u)",
                          path, k / PB_REPLAY_BY, i,
                          k % PB_REPLAY_BY == PB_REPLAY_BY_SEARCH ? "search"
                                                                 : "self-play",
                          t, (unsigned)(t >> 56));
      }
    }
  }
  if (off != len) goto bad;
  return 0;
bad:
  pb_replay_trim(r, 0);
  return pb_err_set(err, PB_ECORRUPT, "%s: replay window section truncated",
                    path);
}

void pb_replay_move(pb_replay_t *dst, pb_replay_t *src) {
  pb_replay_free(dst);
  *dst = *src;
  src->it = NULL;
  src->n = 0;
}
