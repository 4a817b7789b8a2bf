/* beam_search.c - Algorithm 1, batched. See beam_search.h for the contract.
 *
 * Each search ("slot") owns a flat node array: a node's children are created
 * together at its expansion and so sit contiguously after it, which makes the
 * backup a single reverse sweep (children always have larger indices). The
 * beam is a binary max-heap of (priority, node index). */
#include "beam_search.h"
#include "invariant.h"
#include "bounds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { F_VALUED = 1 };

typedef struct {
  pb_state_t s;
  float value;
  uint32_t first; /* index of the first child (valid when nchild > 0) */
  uint8_t nchild;
  uint8_t action;
  uint8_t depth;
  uint8_t flags;
} node_t;

typedef struct {
  float prio;
  uint32_t node;
} hent_t;

typedef struct {
  node_t *nodes;
  hent_t *heap;
  uint32_t nnodes, nheap;
  int expansions;
  int done;
  uint32_t pending; /* node popped this round, or NONE */
  int qrow;         /* its row in the round's Q batch, or -1 */
} slot_t;

#define NONE UINT32_MAX

struct pb_beam {
  const pb_game_t *g;
  int E, M, parallel;
  uint32_t max_nodes;
  slot_t *slots;
  node_t *node_pool;
  hent_t *heap_pool;
  pb_state_t *qbuf; /* [parallel] */
  float *qout;      /* [parallel][num_actions] */
  pb_state_t *leaf; /* [parallel * max_nodes] */
  float *leafval;
  pb_beam_stats_t st;
};

/* Heap order: higher priority first; equal priorities by creation order. */
static inline int before(hent_t a, hent_t b) {
  return a.prio > b.prio || (a.prio == b.prio && a.node < b.node);
}

static void heap_push(slot_t *sl, float prio, uint32_t node) {
  hent_t e = {prio, node};
  pb_assert(node < sl->nnodes); /* a node already made, queued once */
  uint32_t i = sl->nheap++;
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!before(e, sl->heap[p])) break;
    sl->heap[i] = sl->heap[p];
    i = p;
  }
  sl->heap[i] = e;
}

static uint32_t heap_pop(slot_t *sl) {
  pb_assert(sl->nheap > 0);
  uint32_t top = sl->heap[0].node;
  hent_t e = sl->heap[--sl->nheap];
  uint32_t i = 0, n = sl->nheap;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(sl->heap[c + 1], sl->heap[c])) c++;
    if (!before(sl->heap[c], e)) break;
    sl->heap[i] = sl->heap[c];
    i = c;
  }
  if (n > 0) sl->heap[i] = e;
  return top;
}

/* A network may emit NaN; it must not poison the heap order. */
static inline float sane(float x) { return isnan(x) ? -INFINITY : x; }

pb_beam_t *pb_beam_new(const pb_game_t *g, int expansions, int max_depth,
                       int parallel, pb_err_t *err) {
  if (g == NULL || expansions < 1 || expansions > PB_BEAM_MAX_EXPANSIONS ||
      max_depth < 1 || max_depth > PB_BEAM_MAX_DEPTH || parallel < 1) {
    pb_err_set(err, PB_EINVAL,
               "beam search: need expansions in 1..%d (got %d), "
               "max_depth in 1..%d (got %d), parallel >= 1 (got %d)",
               PB_BEAM_MAX_EXPANSIONS, expansions, PB_BEAM_MAX_DEPTH,
               max_depth, parallel);
    return NULL;
  }
  uint64_t max_nodes = 1 + (uint64_t)expansions * g->num_actions;
  uint64_t per_slot = max_nodes * (sizeof(node_t) + sizeof(hent_t) +
                                   sizeof(pb_state_t) + sizeof(float));
  while (parallel > 1 && per_slot * (uint64_t)parallel > (1ull << 30))
    parallel /= 2;
  if (per_slot > (1ull << 31)) {
    pb_err_set(err, PB_ERANGE, "beam search: E=%d needs too many nodes",
               expansions);
    return NULL;
  }
  pb_beam_t *b = calloc(1, sizeof *b);
  if (b == NULL) goto nomem;
  b->g = g;
  b->E = expansions;
  b->M = max_depth;
  b->parallel = parallel;
  b->max_nodes = (uint32_t)max_nodes;
  size_t total = (size_t)parallel * max_nodes;
  b->slots = calloc((size_t)parallel, sizeof *b->slots);
  b->node_pool = malloc(total * sizeof *b->node_pool);
  b->heap_pool = malloc(total * sizeof *b->heap_pool);
  b->qbuf = malloc((size_t)parallel * sizeof *b->qbuf);
  b->qout = malloc((size_t)parallel * g->num_actions * sizeof *b->qout);
  b->leaf = malloc(total * sizeof *b->leaf);
  b->leafval = malloc(total * sizeof *b->leafval);
  if (!b->slots || !b->node_pool || !b->heap_pool || !b->qbuf || !b->qout ||
      !b->leaf || !b->leafval)
    goto nomem;
  for (int i = 0; i < parallel; i++) {
    b->slots[i].nodes = b->node_pool + (size_t)i * max_nodes;
    b->slots[i].heap = b->heap_pool + (size_t)i * max_nodes;
  }
  return b;
nomem:
  pb_beam_destroy(&b);
  pb_err_set(err, PB_ENOMEM, "beam search: out of memory");
  return NULL;
}

void pb_beam_destroy(pb_beam_t **pb) {
  if (pb == NULL || *pb == NULL) return;
  pb_beam_t *b = *pb;
  free(b->slots);
  free(b->node_pool);
  free(b->heap_pool);
  free(b->qbuf);
  free(b->qout);
  free(b->leaf);
  free(b->leafval);
  free(b);
  *pb = NULL;
}

/* Creates the children of node idx. q holds Q(node) when the children get
 * finite priorities, NULL otherwise (root, or depth M where none is queued). */
static void expand(pb_beam_t *b, slot_t *sl, uint32_t idx, const float *q) {
  const pb_game_t *g = b->g;
  uint8_t acts[PB_MAX_ACTIONS];
  node_t *nd = &sl->nodes[idx];
  int na = g->legal(&nd->s, acts);
  int d = nd->depth;
  /* Expanded once, within the depth limit, children fitting in a byte. */
  pb_assert(nd->nchild == 0 && d <= b->M && na <= g->num_actions &&
            g->num_actions <= 255);
  nd->first = sl->nnodes;
  nd->nchild = (uint8_t)na;
  /* E expansions of at most A children each, and the root */
  pb_assert(sl->nnodes + (uint32_t)na <= b->max_nodes);
  for (int j = 0; j < na; j++) {
    uint32_t ci = sl->nnodes++;
    node_t *c = &sl->nodes[ci];
    int done = 0;
    c->s = sl->nodes[idx].s;
    float r = g->step(&c->s, acts[j], &done);
    c->action = acts[j];
    c->depth = (uint8_t)(d + 1);
    c->nchild = 0;
    c->first = 0;
    if (done) {
      c->value = -r;
      c->flags = F_VALUED;
    } else {
      c->flags = 0;
      if (d < b->M) heap_push(sl, d == 0 ? INFINITY : sane(q[acts[j]]), ci);
    }
  }
  b->st.nodes += (uint64_t)na;
  b->st.expanded++;
  b->st.expanded_at[d < 7 ? d : 7]++;
}

/* Adds the shape of slot sl's finished tree to the counters. */
static void tree_shape(pb_beam_t *b, const slot_t *sl) {
  const node_t *nodes = sl->nodes;
  int deepest = 0;
  for (uint32_t k = 0; k < sl->nnodes; k++)
    if (nodes[k].nchild > 0 && nodes[k].depth > deepest)
      deepest = nodes[k].depth;
  b->st.depth_max_sum += (uint64_t)deepest;
  b->st.root_moves += nodes[0].nchild;
  for (uint32_t c = nodes[0].first; c < nodes[0].first + nodes[0].nchild; c++) {
    int deep = 0;
    for (uint32_t k = nodes[c].first;
         nodes[c].nchild > 0 && k < nodes[c].first + nodes[c].nchild; k++)
      deep |= nodes[k].nchild > 0;
    b->st.root_moves_deep += (uint64_t)deep;
  }
}

/* Runs one group of m <= parallel searches to completion. */
static int run_group(pb_beam_t *b, const pb_state_t *states, int m,
                     const pb_evalfn_t *ev, float *out, pb_err_t *err) {
  const pb_game_t *g = b->g;
  const int A = g->num_actions;
  for (int i = 0; i < m; i++) {
    slot_t *sl = &b->slots[i];
    float r;
    if (g->terminal(&states[i], &r))
      return pb_err_set(err, PB_EINVAL, "beam search: position %d is terminal",
                        i);
    sl->nodes[0].s = states[i];
    sl->nodes[0].depth = 0;
    sl->nodes[0].flags = 0;
    sl->nodes[0].nchild = 0;
    sl->nodes[0].action = 0;
    sl->nnodes = 1;
    sl->nheap = 0;
    sl->expansions = 0;
    sl->done = 0;
    heap_push(sl, INFINITY, 0);
  }
  /* Expansion rounds: at most one expansion per search per round, with one
   * Q call for all searches that need it. */
  for (;;) {
    int nq = 0, active = 0;
    for (int i = 0; i < m; i++) {
      slot_t *sl = &b->slots[i];
      sl->pending = NONE;
      if (sl->done) continue;
      if (sl->expansions >= b->E || sl->nheap == 0) {
        sl->done = 1;
        continue;
      }
      uint32_t idx = heap_pop(sl);
      int d = sl->nodes[idx].depth;
      sl->expansions++;
      sl->pending = idx;
      sl->qrow = -1;
      if (d > 0 && d < b->M) {
        sl->qrow = nq;
        b->qbuf[nq++] = sl->nodes[idx].s;
      }
      active++;
    }
    if (active == 0) break;
    if (nq > 0) {
      int rc = ev->qvalues(ev->ctx, b->qbuf, nq, b->qout, err);
      if (rc != 0) return rc;
      b->st.q_calls++;
      b->st.q_asked += (uint64_t)nq;
    }
    for (int i = 0; i < m; i++) {
      slot_t *sl = &b->slots[i];
      if (sl->pending == NONE) continue;
      expand(b, sl, sl->pending,
             sl->qrow >= 0 ? &b->qout[(size_t)sl->qrow * A] : NULL);
    }
  }
  /* All unexpanded, non-terminal nodes of all searches: one V call. */
  size_t nl = 0;
  for (int i = 0; i < m; i++) {
    slot_t *sl = &b->slots[i];
    for (uint32_t k = 0; k < sl->nnodes; k++)
      if (sl->nodes[k].nchild == 0 && !(sl->nodes[k].flags & F_VALUED))
        b->leaf[nl++] = sl->nodes[k].s;
  }
  if (nl > 0) {
    int rc = ev->value(ev->ctx, b->leaf, (int)nl, b->leafval, err);
    if (rc != 0) return rc;
    b->st.v_calls++;
    b->st.v_asked += nl;
  }
  /* Backup: leaves take their V, expanded nodes max(-child), in reverse. */
  nl = 0;
  for (int i = 0; i < m; i++) {
    slot_t *sl = &b->slots[i];
    node_t *nodes = sl->nodes;
    for (uint32_t k = 0; k < sl->nnodes; k++)
      if (nodes[k].nchild == 0 && !(nodes[k].flags & F_VALUED))
        nodes[k].value = b->leafval[nl++];
    for (uint32_t k = sl->nnodes; k-- > 0;) {
      node_t *nd = &nodes[k];
      if (nd->nchild == 0) continue;
      float best = -INFINITY;
      for (uint32_t c = nd->first; c < nd->first + nd->nchild; c++)
        if (-nodes[c].value > best) best = -nodes[c].value;
      nd->value = best;
    }
    tree_shape(b, sl);
    float *o = &out[(size_t)i * A];
    memset(o, 0, (size_t)A * sizeof *o);
    for (uint32_t c = nodes[0].first; c < nodes[0].first + nodes[0].nchild; c++)
      o[nodes[c].action] = -nodes[c].value;
  }
  b->st.searches += (uint64_t)m;
  return 0;
}

int pb_beam_run(pb_beam_t *b, const pb_state_t *states, int n,
                const pb_evalfn_t *ev, float *out, pb_err_t *err) {
  if (n < 0 || (n > 0 && (states == NULL || out == NULL || ev == NULL)))
    return pb_err_set(err, PB_EINVAL, "beam search: bad arguments");
  for (int base = 0; base < n; base += b->parallel) {
    int m = n - base < b->parallel ? n - base : b->parallel;
    int rc = run_group(b, states + base, m, ev,
                       out + (size_t)base * b->g->num_actions, err);
    if (rc != 0) return rc;
  }
  return 0;
}

void pb_beam_stats(const pb_beam_t *b, pb_beam_stats_t *st) { *st = b->st; }

/* ------------------------------------------------------------------------
 * Reference implementation: Algorithm 1 line by line. */

typedef struct {
  pb_state_t s;
  int has_value;
  float value;
  int first, nchild; /* children are tree[first .. first+nchild) */
  int action;
} ref_node_t;

typedef struct {
  float prio;
  int node, depth;
} ref_item_t;

/* Value of tree[i] for lines 28-37, computed recursively. */
static int ref_value(ref_node_t *tree, int i, const pb_evalfn_t *ev,
                     pb_err_t *err) {
  ref_node_t *nd = &tree[i];
  if (nd->has_value) return 0;
  if (nd->nchild == 0) {
    int rc = ev->value(ev->ctx, &nd->s, 1, &nd->value, err);
    if (rc != 0) return rc;
  } else {
    float best = -INFINITY;
    for (int c = nd->first; c < nd->first + nd->nchild; c++) {
      int rc = ref_value(tree, c, ev, err);
      if (rc != 0) return rc;
      if (-tree[c].value > best) best = -tree[c].value;
    }
    nd->value = best;
  }
  nd->has_value = 1;
  return 0;
}

int pb_beam_search_ref(const pb_game_t *g, const pb_state_t *s, int E, int M,
                       const pb_evalfn_t *ev, float *out, pb_err_t *err) {
  float r0;
  if (g->terminal(s, &r0))
    return pb_err_set(err, PB_EINVAL, "beam search: position is terminal");
  const int A = g->num_actions;
  size_t cap = 1 + (size_t)E * A;
  ref_node_t *tree = calloc(cap, sizeof *tree);
  ref_item_t *beam = calloc(cap, sizeof *beam);
  float *q = malloc((size_t)A * sizeof *q);
  int rc = 0;
  if (!tree || !beam || !q) {
    rc = pb_err_set(err, PB_ENOMEM, "beam search ref: out of memory");
    goto done;
  }
  int ntree = 1, nbeam = 1;
  tree[0].s = *s;
  beam[0] = (ref_item_t){INFINITY, 0, 0};
  for (int expand = 1; expand <= E && nbeam > 0; expand++) {
    int best = 0; /* highest priority; among equals the earliest node */
    for (int k = 1; k < nbeam; k++) {
      if (beam[k].prio > beam[best].prio ||
          (beam[k].prio == beam[best].prio && beam[k].node < beam[best].node))
        best = k;
    }
    ref_item_t it = beam[best];
    beam[best] = beam[--nbeam];
    rc = ev->qvalues(ev->ctx, &tree[it.node].s, 1, q, err);
    if (rc != 0) goto done;
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(&tree[it.node].s, acts);
    tree[it.node].first = ntree;
    tree[it.node].nchild = na;
    for (int j = 0; j < na; j++) {
      ref_node_t *c = &tree[ntree];
      int done = 0;
      c->s = tree[it.node].s;
      float r = g->step(&c->s, acts[j], &done);
      c->action = acts[j];
      if (done) {
        c->has_value = 1;
        c->value = -r;
      } else if (it.depth < M) {
        float p = it.depth == 0 ? INFINITY : (isnan(q[acts[j]]) ? -INFINITY
                                                                : q[acts[j]]);
        beam[nbeam++] = (ref_item_t){p, ntree, it.depth + 1};
      }
      ntree++;
    }
  }
  rc = ref_value(tree, 0, ev, err);
  if (rc != 0) goto done;
  memset(out, 0, (size_t)A * sizeof *out);
  for (int c = tree[0].first; c < tree[0].first + tree[0].nchild; c++)
    out[tree[c].action] = -tree[c].value;
done:
  free(tree);
  free(beam);
  free(q);
  return rc;
}
