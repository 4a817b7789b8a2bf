/* abnet.c - see abnet.h. */
#include "abnet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum { F_NONE = 0, F_EXACT = 1, F_LOWER = 2, F_UPPER = 3 };
#define NOMOVE 255
#define MAXP (PB_ABNET_MAX_DEPTH + 1) /* per-ply buffers */

/* A transposition table entry: one position of the current search (gen),
 * its search value of iteration `iter` at remaining depth `depth`, its best
 * move, its V and the row of its Q. */
typedef struct {
  pb_state_t st;
  float value, v;
  int32_t q; /* row in qrows, -1: none */
  uint32_t gen;
  uint8_t iter;
  int8_t depth; /* -1: no value */
  uint8_t flag, best, has_v;
} tt_t;

struct pb_abnet {
  const pb_game_t *g;
  pb_abnet_opts_t o;
  int A;
  tt_t *tt;
  uint64_t mask;
  float *qrows;
  int32_t qcap, qused;
  /* per ply: the children of the node being searched there */
  pb_state_t *kids;
  uint8_t *acts, *done, *ord;
  float *rew, *key;
  int killer[MAXP][2];
  int32_t hist[2][PB_MAX_ACTIONS];
  /* scratch for one V call and one uncached Q row */
  pb_state_t vin[PB_MAX_ACTIONS];
  float vout[PB_MAX_ACTIONS], qout[PB_MAX_ACTIONS];
  /* the search in progress */
  const pb_evalfn_t *ev;
  pb_err_t *err;
  int rc, stop, horizon, root_best;
  uint32_t gen;
  uint8_t iter;
  double deadline;
  double cap; /* pb_abnet_set_deadline: the latest deadline; 0: none */
  const atomic_int *stop_flag; /* pb_abnet_set_stop; NULL: none */
  pb_abnet_progress_fn progress; /* pb_abnet_set_progress; NULL: none */
  void *pctx;
  pb_abnet_result_t r;
  /* the principal variation of the deepest completed iteration */
  int pv_len;
  uint8_t pv[PB_ABNET_MAX_DEPTH];
};

void pb_abnet_defaults(pb_abnet_opts_t *o) {
  o->nodes = 1000;
  o->time_ms = 0;
  o->max_depth = PB_ABNET_MAX_DEPTH;
  o->q_plies = 2;
  o->batch = 1;
}

void pb_abnet_destroy(pb_abnet_t **pab) {
  if (pab == NULL || *pab == NULL) return;
  pb_abnet_t *ab = *pab;
  free(ab->tt);
  free(ab->qrows);
  free(ab->kids);
  free(ab->acts);
  free(ab->done);
  free(ab->ord);
  free(ab->rew);
  free(ab->key);
  free(ab);
  *pab = NULL;
}

pb_abnet_t *pb_abnet_new(const pb_game_t *g, const pb_abnet_opts_t *o,
                         pb_err_t *err) {
  if (g == NULL || o == NULL) {
    pb_err_set(err, PB_EINVAL, "abnet: NULL game or options");
    return NULL;
  }
  if (o->nodes > PB_ABNET_MAX_NODES || o->time_ms < 0 ||
      o->time_ms > 3600000 || (o->nodes == 0 && o->time_ms == 0)) {
    pb_err_set(err, PB_EINVAL,
               "abnet: budget nodes=%llu time=%d ms out of range (nodes "
               "1..%llu or 0 with a time budget, time 0..3600000 ms)",
               (unsigned long long)o->nodes, o->time_ms,
               (unsigned long long)PB_ABNET_MAX_NODES);
    return NULL;
  }
  if (o->max_depth < 1 || o->max_depth > PB_ABNET_MAX_DEPTH ||
      o->q_plies < 1 || o->q_plies > PB_ABNET_MAX_DEPTH ||
      (o->batch != 0 && o->batch != 1)) {
    pb_err_set(err, PB_EINVAL,
               "abnet: max_depth %d, q_plies %d (each 1..%d) or batch %d "
               "(0 or 1) out of range",
               o->max_depth, o->q_plies, PB_ABNET_MAX_DEPTH, o->batch);
    return NULL;
  }
  pb_abnet_t *ab = calloc(1, sizeof *ab);
  if (ab == NULL) goto nomem;
  ab->g = g;
  ab->o = *o;
  ab->A = g->num_actions;
  /* About 4 entries per evaluation: leaves and interior nodes. */
  int lg = 19;
  if (o->nodes > 0) {
    lg = 12;
    while (lg < 20 && (1ULL << lg) < 4 * o->nodes) lg++;
  }
  ab->mask = (1ULL << lg) - 1;
  ab->tt = calloc((size_t)1 << lg, sizeof *ab->tt);
  /* A Q row costs an evaluation: never more rows than the budget. */
  uint64_t rows = (1u << 20) / (unsigned)ab->A;
  if (o->nodes > 0 && o->nodes < rows) rows = o->nodes;
  ab->qcap = (int32_t)rows;
  ab->qrows = malloc((size_t)rows * (size_t)ab->A * sizeof *ab->qrows);
  const size_t per = (size_t)MAXP * PB_MAX_ACTIONS;
  ab->kids = malloc(per * sizeof *ab->kids);
  ab->acts = malloc(per);
  ab->done = malloc(per);
  ab->ord = malloc(per);
  ab->rew = malloc(per * sizeof *ab->rew);
  ab->key = malloc(per * sizeof *ab->key);
  if (!ab->tt || !ab->qrows || !ab->kids || !ab->acts || !ab->done ||
      !ab->ord || !ab->rew || !ab->key)
    goto nomem;
  return ab;
nomem:
  pb_abnet_destroy(&ab);
  pb_err_set(err, PB_ENOMEM, "abnet: out of memory");
  return NULL;
}

const pb_abnet_opts_t *pb_abnet_options(const pb_abnet_t *ab) {
  return &ab->o;
}

/* ---- the table ---------------------------------------------------------- */

static tt_t *tt_find(pb_abnet_t *ab, const pb_state_t *s, uint64_t h) {
  uint64_t i = h & ab->mask;
  for (uint64_t k = 0; k < 2; k++) {
    tt_t *e = &ab->tt[i ^ k];
    if (e->gen == ab->gen && memcmp(&e->st, s, sizeof *s) == 0) return e;
  }
  return NULL;
}

/* What an entry is worth keeping: its Q row and V cost evaluations. */
static int tt_worth(const tt_t *e) {
  return (e->q >= 0 ? 1000 : 0) + (e->has_v ? 100 : 0) + e->depth;
}

/* The entry of s: its own, or a fresh one in place of a stale or the less
 * worthy entry of its pair. */
static tt_t *tt_slot(pb_abnet_t *ab, const pb_state_t *s, uint64_t h) {
  tt_t *e = tt_find(ab, s, h);
  if (e != NULL) return e;
  tt_t *a = &ab->tt[h & ab->mask], *b = &ab->tt[(h & ab->mask) ^ 1];
  e = a->gen != ab->gen   ? a
      : b->gen != ab->gen ? b
      : tt_worth(b) <= tt_worth(a) ? b
                                   : a;
  e->st = *s;
  e->gen = ab->gen;
  e->q = -1;
  e->has_v = 0;
  e->depth = -1;
  e->flag = F_NONE;
  e->best = NOMOVE;
  e->iter = 0;
  return e;
}

/* ---- network calls ------------------------------------------------------ */

/* Whether the caller's stop flag is up. */
static int stopped(const pb_abnet_t *ab) {
  return ab->stop_flag != NULL &&
         atomic_load_explicit(ab->stop_flag, memory_order_relaxed) != 0;
}

/* Whether k more evaluations fit the budgets; if not, the iteration stops. */
static int can_eval(pb_abnet_t *ab, int k) {
  if (ab->stop) return 0;
  if (ab->o.nodes > 0 &&
      ab->r.v_evals + ab->r.q_evals + (uint64_t)k > ab->o.nodes)
    ab->stop = 1;
  else if (ab->deadline > 0 && pb_now() > ab->deadline)
    ab->stop = 1;
  else if (stopped(ab))
    ab->stop = 1;
  return !ab->stop;
}

static float clampv(float x) { return !(x >= -1.0f) ? -1.0f : x > 1.0f ? 1.0f : x; }

/* Q of s (its entry e) from the table or one Q call; NULL when the budget
 * is spent or the call failed (ab->stop set). */
static const float *node_q(pb_abnet_t *ab, tt_t *e, const pb_state_t *s,
                           int force) {
  if (e->q >= 0) return &ab->qrows[(size_t)e->q * ab->A];
  if (!force && !can_eval(ab, 1)) return NULL;
  float *row = ab->qused < ab->qcap ? &ab->qrows[(size_t)ab->qused * ab->A]
                                    : ab->qout;
  int rc = ab->ev->qvalues(ab->ev->ctx, s, 1, row, ab->err);
  if (rc != 0) {
    ab->rc = rc;
    ab->stop = 1;
    return NULL;
  }
  ab->r.q_evals++;
  ab->r.q_calls++;
  if (row != ab->qout) e->q = ab->qused++;
  return row;
}

/* V of the horizon position s (from its side to move), from the table or
 * one V call; the iteration stops when it cannot. */
static float leaf_v(pb_abnet_t *ab, const pb_state_t *s) {
  ab->horizon = 1;
  ab->r.nodes++;
  uint64_t h = ab->g->hash(s);
  tt_t *e = tt_find(ab, s, h);
  if (e != NULL && e->has_v) return e->v;
  if (!can_eval(ab, 1)) return 0.0f;
  float v;
  int rc = ab->ev->value(ab->ev->ctx, s, 1, &v, ab->err);
  if (rc != 0) {
    ab->rc = rc;
    ab->stop = 1;
    return 0.0f;
  }
  ab->r.v_evals++;
  ab->r.v_calls++;
  e = tt_slot(ab, s, h);
  e->v = clampv(v);
  e->has_v = 1;
  return e->v;
}

/* The children at ply p not yet valued by V, in one call: key[k] = -V. */
static int batch_v(pb_abnet_t *ab, int p, int n) {
  const pb_state_t *kids = ab->kids + (size_t)p * PB_MAX_ACTIONS;
  const uint8_t *done = ab->done + (size_t)p * PB_MAX_ACTIONS;
  float *key = ab->key + (size_t)p * PB_MAX_ACTIONS;
  int idx[PB_MAX_ACTIONS], m = 0;
  for (int k = 0; k < n; k++) {
    if (done[k]) continue;
    ab->horizon = 1;
    ab->r.nodes++;
    tt_t *e = tt_find(ab, &kids[k], ab->g->hash(&kids[k]));
    if (e != NULL && e->has_v) {
      key[k] = -e->v;
    } else {
      ab->vin[m] = kids[k];
      idx[m++] = k;
    }
  }
  if (m == 0) return 0;
  if (!can_eval(ab, m)) return -1;
  int rc = ab->ev->value(ab->ev->ctx, ab->vin, m, ab->vout, ab->err);
  if (rc != 0) {
    ab->rc = rc;
    ab->stop = 1;
    return -1;
  }
  ab->r.v_evals += (uint64_t)m;
  ab->r.v_calls++;
  for (int j = 0; j < m; j++) {
    tt_t *e = tt_slot(ab, &ab->vin[j], ab->g->hash(&ab->vin[j]));
    e->v = clampv(ab->vout[j]);
    e->has_v = 1;
    key[idx[j]] = -e->v;
  }
  return 0;
}

/* ---- the search --------------------------------------------------------- */

/* Stores the search value of s. */
static void store(pb_abnet_t *ab, const pb_state_t *s, uint64_t h, int depth,
                  float best, float alpha, float beta, int move) {
  tt_t *e = tt_slot(ab, s, h);
  e->value = best;
  e->depth = (int8_t)depth;
  e->iter = ab->iter;
  e->flag = best <= alpha ? F_UPPER : best >= beta ? F_LOWER : F_EXACT;
  if (best > alpha || e->best == NOMOVE) e->best = (uint8_t)move;
}

/* Sorts the n children at ply p by key descending, ties to the lower
 * action (insertion sort: n is small). */
static void order(pb_abnet_t *ab, int p, int n) {
  uint8_t *ord = ab->ord + (size_t)p * PB_MAX_ACTIONS;
  const float *key = ab->key + (size_t)p * PB_MAX_ACTIONS;
  for (int i = 0; i < n; i++) {
    int k = i, j = i;
    while (j > 0 && key[ord[j - 1]] < key[k]) {
      ord[j] = ord[j - 1];
      j--;
    }
    ord[j] = (uint8_t)k;
  }
}

/* The negamax value of the non-terminal s, `depth` >= 1 plies above the
 * horizon and `ply` plies below the root, searched in (alpha, beta)
 * fail-soft. 0 with ab->stop set when the iteration stops. */
static float node(pb_abnet_t *ab, const pb_state_t *s, int depth, int ply,
                  float alpha, float beta) {
  const pb_game_t *g = ab->g;
  ab->r.nodes++;
  if ((ab->r.nodes & 255) == 0 &&
      ((ab->deadline > 0 && pb_now() > ab->deadline) || stopped(ab)))
    ab->stop = 1;
  if (ab->stop) return 0.0f;
  uint64_t h = g->hash(s);
  tt_t *e = tt_find(ab, s, h);
  int ttbest = NOMOVE;
  if (e != NULL) {
    if (e->iter == ab->iter && e->depth == depth &&
        (e->flag == F_EXACT || (e->flag == F_LOWER && e->value >= beta) ||
         (e->flag == F_UPPER && e->value <= alpha))) {
      if (ply == 0) ab->root_best = e->best;
      return e->value;
    }
    ttbest = e->best;
  }
  const size_t off = (size_t)ply * PB_MAX_ACTIONS;
  uint8_t *acts = ab->acts + off, *done = ab->done + off, *ord = ab->ord + off;
  pb_state_t *kids = ab->kids + off;
  float *rew = ab->rew + off, *key = ab->key + off;
  int n = g->legal(s, acts);
  for (int k = 0; k < n; k++) {
    int d = 0;
    kids[k] = *s;
    rew[k] = g->step(&kids[k], acts[k], &d);
    done[k] = (uint8_t)d;
    if (d && rew[k] > 0) { /* a win at once: the most there is */
      store(ab, s, h, depth, 1.0f, -INFINITY, INFINITY, acts[k]);
      if (ply == 0) ab->root_best = acts[k];
      return 1.0f;
    }
  }
  float best = -INFINITY;
  int bestk = 0;
  if (depth == 1 && ab->o.batch) {
    /* Every child, V in one call: the value is exact whatever the window. */
    if (batch_v(ab, ply, n) != 0) return 0.0f;
    for (int k = 0; k < n; k++) {
      float sc = done[k] ? rew[k] : key[k];
      if (sc > best) {
        best = sc;
        bestk = k;
      }
    }
    store(ab, s, h, depth, best, -INFINITY, INFINITY, acts[bestk]);
    if (ply == 0) ab->root_best = acts[bestk];
    return best;
  }
  /* The order: the table's move, then Q or killers and history. */
  const float *q = NULL;
  if (ply == 0 || (ply < ab->o.q_plies && (depth >= 2 || !ab->o.batch))) {
    q = node_q(ab, tt_slot(ab, s, h), s, 0);
    if (q == NULL) return 0.0f;
  }
  const int side = ply & 1;
  for (int k = 0; k < n; k++) {
    const int a = acts[k];
    float kv;
    if (q != NULL)
      kv = isnan(q[a]) ? -1e30f : q[a];
    else
      kv = a == ab->killer[ply][0]   ? 2e20f
           : a == ab->killer[ply][1] ? 1e20f
                                     : (float)ab->hist[side][a];
    key[k] = a == ttbest ? INFINITY : kv;
  }
  order(ab, ply, n);
  float a = alpha;
  for (int i = 0; i < n; i++) {
    const int k = ord[i];
    float sc;
    if (done[k]) {
      sc = rew[k];
    } else if (depth == 1) {
      sc = -leaf_v(ab, &kids[k]);
    } else if (i == 0) {
      sc = -node(ab, &kids[k], depth - 1, ply + 1, -beta, -a);
    } else {
      /* PVS: a null window at a first; the full one if k may be better. */
      sc = -node(ab, &kids[k], depth - 1, ply + 1, -nextafterf(a, INFINITY),
                 -a);
      if (!ab->stop && sc > a && sc < beta)
        sc = -node(ab, &kids[k], depth - 1, ply + 1, -beta, -a);
    }
    if (ab->stop) return 0.0f;
    if (sc > best) {
      best = sc;
      bestk = k;
    }
    if (sc > a) a = sc;
    if (a >= beta) {
      if (!done[k]) {
        const int mv = acts[k];
        if (ab->killer[ply][0] != mv) {
          ab->killer[ply][1] = ab->killer[ply][0];
          ab->killer[ply][0] = mv;
        }
        if (ab->hist[side][mv] < (1 << 30)) ab->hist[side][mv] += depth * depth;
      }
      break;
    }
  }
  store(ab, s, h, depth, best, alpha, beta, acts[bestk]);
  if (ply == 0) ab->root_best = acts[bestk];
  return best;
}

/* The line of iteration `depth` (just completed) from the root s: the
 * root's best move, then the best move each position of the line stored
 * in this iteration. */
static void take_pv(pb_abnet_t *ab, const pb_state_t *s, int depth) {
  const pb_game_t *g = ab->g;
  pb_state_t c = *s;
  int mv = ab->root_best;
  ab->pv_len = 0;
  while (ab->pv_len < depth && mv >= 0 && mv != NOMOVE) {
    ab->pv[ab->pv_len++] = (uint8_t)mv;
    int done = 0;
    g->step(&c, mv, &done);
    if (done) break;
    const tt_t *e = tt_find(ab, &c, g->hash(&c));
    mv = e != NULL && e->iter == ab->iter && e->depth >= 1 ? e->best : -1;
  }
}

int pb_abnet_search(pb_abnet_t *ab, const pb_state_t *s, const pb_evalfn_t *ev,
                    pb_abnet_result_t *res, pb_err_t *err) {
  if (ab == NULL || s == NULL || ev == NULL || res == NULL)
    return pb_err_set(err, PB_EINVAL, "abnet: NULL argument");
  const pb_game_t *g = ab->g;
  float rr;
  if (g->terminal(s, &rr))
    return pb_err_set(err, PB_EINVAL, "abnet: the game is over in this "
                      "position (nothing to search)");
  if (++ab->gen == 0) { /* wrapped: forget the old entries for good */
    memset(ab->tt, 0, (size_t)(ab->mask + 1) * sizeof *ab->tt);
    ab->gen = 1;
  }
  memset(&ab->r, 0, sizeof ab->r);
  memset(ab->killer, 0xff, sizeof ab->killer);
  memset(ab->hist, 0, sizeof ab->hist);
  ab->ev = ev;
  ab->err = err;
  ab->rc = 0;
  ab->stop = 0;
  ab->qused = 0;
  ab->deadline = ab->o.time_ms > 0 ? pb_now() + ab->o.time_ms / 1000.0 : 0;
  if (ab->cap > 0 && (ab->deadline == 0 || ab->cap < ab->deadline))
    ab->deadline = ab->cap;
  /* The root's Q: the move when no iteration completes. */
  const float *q = node_q(ab, tt_slot(ab, s, g->hash(s)), s, 1);
  if (q == NULL) return ab->rc;
  uint8_t legal[PB_MAX_ACTIONS];
  int n = g->legal(s, legal);
  int move = legal[0];
  for (int i = 1; i < n; i++)
    if (q[legal[i]] > q[move] || (isnan(q[move]) && !isnan(q[legal[i]])))
      move = legal[i];
  float value = q[move];
  int depth = 0, solved = 0;
  for (int d = 1; d <= ab->o.max_depth; d++) {
    ab->iter = (uint8_t)d;
    ab->horizon = 0;
    ab->root_best = -1;
    float v = node(ab, s, d, 0, -INFINITY, INFINITY);
    if (ab->rc != 0) return ab->rc;
    if (ab->stop) break;
    move = ab->root_best;
    value = v;
    depth = d;
    solved = !ab->horizon;
    take_pv(ab, s, d);
    if (solved) break;
    if (ab->progress != NULL) {
      pb_abnet_result_t p = ab->r;
      p.move = move;
      p.value = value;
      p.depth = depth;
      p.pv_len = ab->pv_len;
      memcpy(p.pv, ab->pv, (size_t)ab->pv_len);
      ab->progress(ab->pctx, &p);
    }
  }
  *res = ab->r;
  if (depth == 0) {
    ab->pv_len = 1;
    ab->pv[0] = (uint8_t)move;
  }
  res->pv_len = ab->pv_len;
  memcpy(res->pv, ab->pv, (size_t)ab->pv_len);
  res->move = move;
  res->value = value;
  res->depth = depth;
  res->solved = solved;
  return 0;
}

void pb_abnet_set_progress(pb_abnet_t *ab, pb_abnet_progress_fn fn,
                           void *ctx) {
  if (ab != NULL) {
    ab->progress = fn;
    ab->pctx = ctx;
  }
}

void pb_abnet_set_stop(pb_abnet_t *ab, const atomic_int *stop) {
  if (ab != NULL) ab->stop_flag = stop;
}

void pb_abnet_set_deadline(pb_abnet_t *ab, double until) {
  if (ab != NULL) ab->cap = until > 0 ? until : 0;
}
