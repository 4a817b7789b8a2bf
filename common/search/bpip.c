/* bpip.c - see bpip.h.
 *
 * The tree is an array of nodes; a node's children are consecutive and come
 * after it, so one sweep in index order visits every parent before its
 * children (the pass down the tree that gives every leaf its relevance).
 *
 * Notation of the pass (K grid points, x_k the grid): a node n with parent
 * p takes the value X_p = max(-X_n, W), W the maximum of minus its
 * siblings' values. For any function H_p of p's value (G: E[max of the
 * root's moves], M: E[the root move above]), the same function of n's
 * value is H_n(i) = P(W <= x_j) H_p(j) + sum_{k > j} P(W = x_k) H_p(k),
 * j = K-1-i (the grid is symmetric: -x_i = x_j). At the root G is the
 * identity (the root's value is the max), and M of a root move c is
 * -x_i itself. */
#include "bpip.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "invariant.h"

#define K PB_BPIP_GRID
#define EPS 1e-12 /* relevance and Q1 at or below this count as 0 */

enum {
  NF_TERMINAL = 1, /* a finished game */
  NF_EXACT = 2,    /* its distribution is exact */
  NF_VALUED = 4,   /* a leaf valued by V */
  NF_DEAD = 8      /* this pass: its value cannot change Q1 */
};

typedef struct {
  pb_state_t st;
  int32_t parent, first, rc; /* rc: the root's child above (itself), -1 */
  int32_t depth;
  uint8_t kids, action, flags;
  float v;
  double qss;
} node_t;

typedef struct {
  double qss;
  int32_t idx;
} cand_t;

struct pb_bpip {
  const pb_game_t *g;
  pb_bpip_opts_t o;
  int A;
  int32_t cap, n;
  node_t *nd;
  double *pmf, *G, *M; /* cap rows of K */
  cand_t *cand;        /* the relevant leaves of a pass */
  int32_t ncand;
  pb_state_t *vin; /* a round's positions for V (evals + A) */
  float *vout;
  int32_t *vnode;
  double *T, *pre, *suf; /* per child of one parent: A rows of K */
  double *mo;            /* per root child: the best mean of the others */
  double x[K];
  double q1;
  int fresh;
  const pb_evalfn_t *ev;
  pb_err_t *err;
  pb_bpip_result_t r;
};

/* ---- distributions ------------------------------------------------------- */

double pb_bpip_grid(int i) {
  return -1.0 + 2.0 * (double)i / (K - 1);
}

static double npdf(double z) {
  return 0.3989422804014327 * exp(-0.5 * z * z);
}
static double ncdf(double z) {
  return 0.5 * erfc(-z * M_SQRT1_2);
}

/* P(za < Z < zb) for a standard normal Z, in the tail where it is exact. */
static double nmass(double za, double zb) {
  return za > 0 ? ncdf(-za) - ncdf(-zb) : ncdf(zb) - ncdf(za);
}

void pb_bpip_leaf_dist(double v, double sigma, double *p) {
  if (!(v >= -1.0)) v = -1.0;
  if (v > 1.0) v = 1.0;
  memset(p, 0, K * sizeof *p);
  const double h = 2.0 / (K - 1);
  if (!(sigma > 0)) { /* a point: split between its two grid points */
    double pos = (v + 1.0) / h;
    int i = (int)floor(pos);
    if (i >= K - 1) {
      p[K - 1] = 1.0;
    } else {
      p[i] = 1.0 - (pos - i);
      p[i + 1] = pos - i;
    }
    return;
  }
  double za = (-1.0 - v) / sigma;
  p[0] = ncdf(za); /* the mass below -1 */
  for (int c = 0; c < K - 1; c++) {
    const double a = pb_bpip_grid(c);
    const double zb = (pb_bpip_grid(c + 1) - v) / sigma;
    const double P = nmass(za, zb);
    if (P > 0) {
      /* E[X - a; a < X < b] / h goes up to b, the rest stays at a. */
      double up = (P * (v - a) + sigma * (npdf(za) - npdf(zb))) / h;
      up = up < 0 ? 0 : up > P ? P : up;
      p[c + 1] += up;
      p[c] += P - up;
    }
    za = zb;
  }
  p[K - 1] += ncdf(-za); /* the mass above +1 */
  double sum = 0;
  for (int i = 0; i < K; i++) sum += p[i];
  for (int i = 0; i < K; i++) p[i] /= sum;
}

/* t[k] = P(-X <= x_k) = P(X >= x_{K-1-k}) for X of distribution p. */
static void neg_cdf(const double *p, double *t) {
  double s = 0;
  for (int j = K - 1; j >= 0; j--) {
    s += p[j];
    t[K - 1 - j] = s;
  }
}

/* The pmf of a CDF (non-decreasing: products of non-decreasing factors
 * round monotonically, so no difference is negative). */
static void cdf_pmf(const double *F, double *p) {
  double prev = 0;
  for (int k = 0; k < K; k++) {
    p[k] = F[k] - prev;
    prev = F[k];
  }
}

/* The negamax distribution of n children whose pmfs are rows[0..n). */
static void negamax_rows(const double *rows, int n, double *out) {
  double F[K], t[K];
  for (int k = 0; k < K; k++) F[k] = 1.0;
  for (int c = 0; c < n; c++) {
    neg_cdf(rows + (size_t)c * K, t);
    for (int k = 0; k < K; k++) F[k] *= t[k];
  }
  cdf_pmf(F, out);
}

void pb_bpip_negamax_dist(const double *const *kids, int n, double *pmf) {
  double F[K], t[K];
  for (int k = 0; k < K; k++) F[k] = 1.0;
  for (int c = 0; c < n; c++) {
    neg_cdf(kids[c], t);
    for (int k = 0; k < K; k++) F[k] *= t[k];
  }
  cdf_pmf(F, pmf);
}

static double mean_of(const double *p) {
  double m = 0;
  for (int i = 0; i < K; i++) m += pb_bpip_grid(i) * p[i];
  return m;
}

static void spike(double *p, int i) {
  memset(p, 0, K * sizeof *p);
  p[i] = 1.0;
}

/* ---- the searcher -------------------------------------------------------- */

void pb_bpip_defaults(pb_bpip_opts_t *o) {
  o->evals = 1000;
  o->sigma = PB_BPIP_SIGMA_DEFAULT;
  o->gulp = PB_BPIP_GULP_DEFAULT;
}

void pb_bpip_destroy(pb_bpip_t **pbp) {
  if (pbp == NULL || *pbp == NULL) return;
  pb_bpip_t *bp = *pbp;
  free(bp->nd);
  free(bp->pmf);
  free(bp->G);
  free(bp->M);
  free(bp->cand);
  free(bp->vin);
  free(bp->vout);
  free(bp->vnode);
  free(bp->T);
  free(bp->pre);
  free(bp->suf);
  free(bp->mo);
  free(bp);
  *pbp = NULL;
}

pb_bpip_t *pb_bpip_new(const pb_game_t *g, const pb_bpip_opts_t *o,
                       pb_err_t *err) {
  if (g == NULL || o == NULL) {
    pb_err_set(err, PB_EINVAL, "bpip: NULL game or options");
    return NULL;
  }
  if (o->evals < 1 || o->evals > PB_BPIP_MAX_EVALS) {
    pb_err_set(err, PB_EINVAL,
               "bpip: budget of %llu evaluations out of range (1..%d)",
               (unsigned long long)o->evals, PB_BPIP_MAX_EVALS);
    return NULL;
  }
  if (!(o->sigma >= PB_BPIP_SIGMA_MIN && o->sigma <= PB_BPIP_SIGMA_MAX)) {
    pb_err_set(err, PB_EINVAL, "bpip: sigma %g out of range (%g..%g)", o->sigma,
               PB_BPIP_SIGMA_MIN, PB_BPIP_SIGMA_MAX);
    return NULL;
  }
  if (!(o->gulp >= 0 && o->gulp <= PB_BPIP_GULP_MAX)) {
    pb_err_set(err, PB_EINVAL, "bpip: gulp %g out of range (0..%g)", o->gulp,
               PB_BPIP_GULP_MAX);
    return NULL;
  }
  pb_bpip_t *bp = calloc(1, sizeof *bp);
  if (bp == NULL) goto nomem;
  bp->g = g;
  bp->o = *o;
  bp->A = g->num_actions;
  /* Nodes valued by V are at most evals; finished games rarely more. */
  bp->cap = (int32_t)(2 * o->evals + 2 * (uint64_t)bp->A + 64);
  const size_t cap = (size_t)bp->cap, A = (size_t)bp->A;
  const size_t nv = (size_t)o->evals + A;
  bp->nd = malloc(cap * sizeof *bp->nd);
  bp->pmf = malloc(cap * K * sizeof *bp->pmf);
  bp->G = malloc(cap * K * sizeof *bp->G);
  bp->M = malloc(cap * K * sizeof *bp->M);
  bp->cand = malloc(cap * sizeof *bp->cand);
  bp->vin = malloc(nv * sizeof *bp->vin);
  bp->vout = malloc((nv > A ? nv : A) * sizeof *bp->vout);
  bp->vnode = malloc(nv * sizeof *bp->vnode);
  bp->T = malloc(A * K * sizeof *bp->T);
  bp->pre = malloc(A * K * sizeof *bp->pre);
  bp->suf = malloc(A * K * sizeof *bp->suf);
  bp->mo = malloc((A + 1) * sizeof *bp->mo);
  if (!bp->nd || !bp->pmf || !bp->G || !bp->M || !bp->cand || !bp->vin ||
      !bp->vout || !bp->vnode || !bp->T || !bp->pre || !bp->suf || !bp->mo)
    goto nomem;
  for (int i = 0; i < K; i++) bp->x[i] = pb_bpip_grid(i);
  return bp;
nomem:
  pb_bpip_destroy(&bp);
  pb_err_set(err, PB_ENOMEM, "bpip: out of memory");
  return NULL;
}

const pb_bpip_opts_t *pb_bpip_options(const pb_bpip_t *bp) {
  return &bp->o;
}

/* ---- the tree ------------------------------------------------------------ */

static double *row(double *a, int32_t i) {
  return a + (size_t)i * K;
}

/* Recomputes the distribution and exactness of the expanded node i. */
static void recompute(pb_bpip_t *bp, int32_t i) {
  node_t *n = &bp->nd[i];
  /* An expanded node: its children made after it, inside the tree. */
  pb_assert(i >= 0 && i < bp->n && n->kids > 0 && n->first > i &&
            n->first + n->kids <= bp->n);
  int all = 1, win = 0;
  for (int c = 0; c < n->kids; c++) {
    const node_t *k = &bp->nd[n->first + c];
    if (!(k->flags & NF_EXACT))
      all = 0;
    else if (row(bp->pmf, n->first + c)[0] > 0.5)
      win = 1; /* an exact child lost for its mover: this node wins */
  }
  double *p = row(bp->pmf, i);
  if (win)
    spike(p, K - 1);
  else
    negamax_rows(row(bp->pmf, n->first), n->kids, p);
  /* Exact: the value is known (every child exact, one that wins, or the
   * rest unable to change the max). */
  int one = win || all;
  for (int k = 0; k < K && !one; k++) one = p[k] >= 1.0 - EPS;
  if (one)
    n->flags |= NF_EXACT;
  else
    n->flags &= (uint8_t)~NF_EXACT;
}

/* The distributions of i (if expanded) and of its ancestors. */
static void update_up(pb_bpip_t *bp, int32_t i) {
  for (; i >= 0; i = bp->nd[i].parent)
    if (bp->nd[i].kids > 0) recompute(bp, i);
}

/* Expands leaf L: its children are made, the finished games exact, the
 * others queued for V after the `*pending` queued before. A move that wins
 * at once makes L exact (+1) with no children. Returns 1 (done), 0 (the
 * children would take the evaluations past `room`: nothing done) or -1
 * (the tree is full). */
static int expand(pb_bpip_t *bp, int32_t L, uint64_t room, int *pending) {
  const pb_game_t *g = bp->g;
  node_t *nl = &bp->nd[L];
  uint8_t acts[PB_MAX_ACTIONS], done[PB_MAX_ACTIONS];
  pb_state_t kids[PB_MAX_ACTIONS];
  float rew[PB_MAX_ACTIONS];
  const int na = g->legal(&nl->st, acts);
  uint64_t cost = 0;
  for (int k = 0; k < na; k++) {
    int d = 0;
    kids[k] = nl->st;
    rew[k] = g->step(&kids[k], acts[k], &d);
    done[k] = (uint8_t)d;
    if (d && rew[k] > 0) { /* a win at once */
      spike(row(bp->pmf, L), K - 1);
      nl->flags |= NF_EXACT;
      nl->flags &= (uint8_t)~NF_VALUED;
      return 1;
    }
    cost += !d;
  }
  if (cost > room) return 0;
  if (bp->n + na > bp->cap) return -1;
  nl->first = bp->n;
  nl->kids = (uint8_t)na;
  nl->flags &= (uint8_t)~NF_VALUED;
  for (int k = 0; k < na; k++) {
    const int32_t c = bp->n++;
    node_t *nc = &bp->nd[c];
    nc->st = kids[k];
    nc->parent = L;
    nc->first = -1;
    nc->rc = L == 0 ? c : nl->rc;
    nc->depth = nl->depth + 1;
    nc->kids = 0;
    nc->action = acts[k];
    nc->v = 0;
    nc->qss = 0;
    if (nc->depth > bp->r.depth) bp->r.depth = nc->depth;
    if (done[k]) {
      /* The mover's reward r: the child's value is -r. */
      spike(row(bp->pmf, c), rew[k] > 0 ? 0 : rew[k] < 0 ? K - 1 : K / 2);
      nc->flags = NF_TERMINAL | NF_EXACT;
    } else {
      nc->flags = NF_VALUED;
      bp->vin[*pending] = kids[k];
      bp->vnode[*pending] = c;
      (*pending)++;
    }
  }
  return 1;
}

/* V of the m queued positions, in one call; their distributions. */
static int valuate(pb_bpip_t *bp, int m) {
  if (m == 0) return 0;
  int rc = bp->ev->value(bp->ev->ctx, bp->vin, m, bp->vout, bp->err);
  if (rc != 0) return rc;
  bp->r.v_evals += (uint64_t)m;
  bp->r.v_calls++;
  for (int j = 0; j < m; j++) {
    float v = bp->vout[j];
    v = !(v >= -1.0f) ? -1.0f : v > 1.0f ? 1.0f : v;
    bp->nd[bp->vnode[j]].v = v;
    pb_bpip_leaf_dist(v, bp->o.sigma, row(bp->pmf, bp->vnode[j]));
  }
  return 0;
}

/* ---- relevance ----------------------------------------------------------- */

/* H_c from H_p for a child whose siblings' maximum W has CDF Fw. */
static void down(const double *Hp, const double *Fw, double *Hc) {
  double R = 0; /* sum over k > j of P(W = x_k) H_p(k) */
  for (int j = K - 1; j >= 0; j--) {
    Hc[K - 1 - j] = Fw[j] * Hp[j] + R;
    R += (Fw[j] - (j > 0 ? Fw[j - 1] : 0.0)) * Hp[j];
  }
}

/* For the n children of p: T rows P(-X_c <= x_k), and the products of the
 * rows before (pre) and after (suf) each; returns the CDF of the max in
 * F (may be NULL). */
static void sibling_products(pb_bpip_t *bp, int32_t first, int n, double *F) {
  for (int c = 0; c < n; c++) neg_cdf(row(bp->pmf, first + c), row(bp->T, c));
  for (int k = 0; k < K; k++) {
    double a = 1.0, b = 1.0;
    for (int c = 0; c < n; c++) {
      row(bp->pre, c)[k] = a;
      a *= row(bp->T, c)[k];
    }
    for (int c = n - 1; c >= 0; c--) {
      row(bp->suf, c)[k] = b;
      b *= row(bp->T, c)[k];
    }
    if (F != NULL) F[k] = a;
  }
}

static int flat(const double *h) {
  double lo = h[0], hi = h[0];
  for (int i = 1; i < K; i++) {
    lo = h[i] < lo ? h[i] : lo;
    hi = h[i] > hi ? h[i] : hi;
  }
  return hi - lo <= EPS;
}

/* G and M of child c (index i among p's children) are in place: the
 * relevance of a leaf, the dead mark of an interior node. */
static void visit(pb_bpip_t *bp, int32_t c) {
  node_t *n = &bp->nd[c];
  const double *G = row(bp->G, c), *Mc = row(bp->M, c);
  n->qss = 0;
  if (n->kids > 0) {
    if (flat(G) && flat(Mc)) n->flags |= NF_DEAD;
    return;
  }
  if (n->flags & NF_EXACT) return;
  const double *p = row(bp->pmf, c), mo = bp->mo[n->rc];
  double a = 0;
  for (int i = 0; i < K; i++) {
    const double q = G[i] - (Mc[i] > mo ? Mc[i] : mo);
    a += p[i] * fabs(bp->q1 - q);
  }
  if (a <= EPS) a = 0; /* Q1 cannot change (up to rounding) */
  n->qss = a;
  if (a > EPS) {
    bp->cand[bp->ncand].qss = a;
    bp->cand[bp->ncand++].idx = c;
  }
}

/* Q1, the best move's mean, and for each root child the best mean of the
 * others (bp->mo); returns the root child of highest mean (ties: the
 * lowest action), -1 if the root has no children. */
static int32_t root_stats(pb_bpip_t *bp, double *emax, double *best) {
  const node_t *r = &bp->nd[0];
  *emax = *best = 0;
  bp->q1 = 0;
  if (r->kids == 0) return -1;
  int32_t bi = -1;
  double b1 = -INFINITY, b2 = -INFINITY;
  for (int c = 0; c < r->kids; c++) {
    const double m = -mean_of(row(bp->pmf, r->first + c));
    if (m > b1) {
      b2 = b1;
      b1 = m;
      bi = r->first + c;
    } else if (m > b2) {
      b2 = m;
    }
  }
  for (int c = 0; c < r->kids; c++) {
    const int32_t i = r->first + c;
    bp->mo[i] = i == bi ? b2 : b1;
  }
  /* The root's own distribution is the max of its moves. */
  *emax = mean_of(row(bp->pmf, 0));
  *best = b1;
  bp->q1 = *emax - b1 > 0 ? *emax - b1 : 0;
  return bi;
}

/* The pass: every leaf's relevance and the relevant leaves in cand. */
static void pass(pb_bpip_t *bp) {
  double emax, best;
  bp->ncand = 0;
  bp->fresh = 1;
  for (int32_t i = 0; i < bp->n; i++) {
    bp->nd[i].flags &= (uint8_t)~NF_DEAD;
    bp->nd[i].qss = 0;
  }
  if (root_stats(bp, &emax, &best) < 0 || bp->q1 <= EPS) return;
  double Fw[K];
  for (int32_t p = 0; p < bp->n; p++) {
    const node_t *np = &bp->nd[p];
    if (np->kids == 0) continue;
    if (np->flags & NF_DEAD) {
      for (int c = 0; c < np->kids; c++) {
        bp->nd[np->first + c].flags |= NF_DEAD;
        bp->nd[np->first + c].qss = 0;
      }
      continue;
    }
    sibling_products(bp, np->first, np->kids, NULL);
    for (int c = 0; c < np->kids; c++) {
      const int32_t i = np->first + c;
      for (int k = 0; k < K; k++)
        Fw[k] = row(bp->pre, c)[k] * row(bp->suf, c)[k];
      if (p == 0) { /* a root move: G over the identity, M = -x_i */
        down(bp->x, Fw, row(bp->G, i));
        for (int k = 0; k < K; k++) row(bp->M, i)[k] = -bp->x[k];
      } else {
        down(row(bp->G, p), Fw, row(bp->G, i));
        down(row(bp->M, p), Fw, row(bp->M, i));
      }
      visit(bp, i);
    }
  }
}

static int by_relevance(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  if (x->qss != y->qss) return x->qss > y->qss ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* ---- the search ---------------------------------------------------------- */

/* The root's Q (one evaluation): the legal move of highest Q. */
static int by_q(pb_bpip_t *bp) {
  const pb_game_t *g = bp->g;
  const pb_state_t *s = &bp->nd[0].st;
  int rc = bp->ev->qvalues(bp->ev->ctx, s, 1, bp->vout, bp->err);
  if (rc != 0) return rc;
  bp->r.q_evals++;
  bp->r.q_calls++;
  uint8_t legal[PB_MAX_ACTIONS];
  int n = g->legal(s, legal), mv = legal[0];
  for (int i = 1; i < n; i++)
    if (bp->vout[legal[i]] > bp->vout[mv] ||
        (isnan(bp->vout[mv]) && !isnan(bp->vout[legal[i]])))
      mv = legal[i];
  bp->r.move = mv;
  bp->r.value = bp->vout[mv];
  bp->r.stop = PB_BPIP_STOP_Q;
  return 0;
}

/* One round: the most relevant leaves expanded, their children valued.
 * Returns 0 (go on), 1 (stopped: bp->r.stop set) or an error. */
static int round_(pb_bpip_t *bp) {
  pass(bp);
  if (bp->ncand == 0) {
    bp->r.stop = PB_BPIP_STOP_SETTLED;
    return 1;
  }
  int32_t k = 1;
  if (bp->o.gulp > 0) {
    k = (int32_t)floor(bp->o.gulp * bp->ncand);
    if (k < 1) k = 1;
    qsort(bp->cand, (size_t)bp->ncand, sizeof *bp->cand, by_relevance);
  } else {
    for (int32_t j = 1; j < bp->ncand; j++)
      if (by_relevance(&bp->cand[j], &bp->cand[0]) < 0)
        bp->cand[0] = bp->cand[j];
  }
  int pending = 0, stop = -1;
  int32_t done = 0;
  const uint64_t used = bp->r.v_evals + bp->r.q_evals;
  for (; done < k; done++) {
    const uint64_t room = bp->o.evals - used - (uint64_t)pending;
    int e = expand(bp, bp->cand[done].idx, room, &pending);
    if (e <= 0) {
      stop = e == 0 ? PB_BPIP_STOP_BUDGET : PB_BPIP_STOP_NODES;
      break;
    }
  }
  int rc = valuate(bp, pending);
  if (rc != 0) return rc;
  for (int32_t j = 0; j < done; j++) {
    const int32_t L = bp->cand[j].idx;
    update_up(bp, bp->nd[L].kids > 0 ? L : bp->nd[L].parent);
  }
  bp->r.expansions += (uint64_t)done;
  bp->r.rounds++;
  bp->fresh = 0;
  if (stop >= 0) {
    bp->r.stop = stop;
    return 1;
  }
  return 0;
}

int pb_bpip_search(pb_bpip_t *bp, const pb_state_t *s, const pb_evalfn_t *ev,
                   pb_bpip_result_t *res, pb_err_t *err) {
  if (bp == NULL || s == NULL || ev == NULL || res == NULL)
    return pb_err_set(err, PB_EINVAL, "bpip: NULL argument");
  const pb_game_t *g = bp->g;
  float rr;
  if (g->terminal(s, &rr))
    return pb_err_set(err, PB_EINVAL,
                      "bpip: the game is over in this "
                      "position (nothing to search)");
  memset(&bp->r, 0, sizeof bp->r);
  bp->ev = ev;
  bp->err = err;
  bp->q1 = 0;
  bp->fresh = 0;
  bp->n = 1;
  node_t *root = &bp->nd[0];
  memset(root, 0, sizeof *root);
  root->st = *s;
  root->parent = root->first = root->rc = -1;
  memset(row(bp->pmf, 0), 0, K * sizeof(double));
  /* A move that wins at once: played, nothing evaluated. */
  uint8_t legal[PB_MAX_ACTIONS];
  const int nl = g->legal(s, legal);
  for (int k = 0; k < nl; k++) {
    pb_state_t c = *s;
    int d = 0;
    if (g->step(&c, legal[k], &d) > 0 && d) {
      spike(row(bp->pmf, 0), K - 1);
      root->flags = NF_EXACT;
      bp->r.move = legal[k];
      bp->r.value = 1.0f;
      bp->r.solved = 1;
      bp->r.stop = PB_BPIP_STOP_WIN;
      bp->r.nodes = 1;
      *res = bp->r;
      return 0;
    }
  }
  int pending = 0, rc = 0;
  if (expand(bp, 0, bp->o.evals, &pending) <= 0) {
    rc = by_q(bp);
  } else {
    rc = valuate(bp, pending);
    if (rc == 0) {
      update_up(bp, 0);
      bp->r.expansions = 1;
      while ((rc = round_(bp)) == 0) {
      }
      rc = rc > 0 ? 0 : rc;
    }
  }
  if (rc != 0) {
    bp->n = 0; /* no tree to look at */
    return rc;
  }
  if (bp->r.stop != PB_BPIP_STOP_Q) {
    double emax, best;
    int32_t bi = root_stats(bp, &emax, &best);
    bp->r.move = bp->nd[bi].action;
    bp->r.value = (float)best;
    bp->r.q1 = bp->q1;
    bp->r.solved = (bp->nd[0].flags & NF_EXACT) != 0;
  }
  bp->r.nodes = (uint64_t)bp->n;
  *res = bp->r;
  return 0;
}

/* ---- inspection ---------------------------------------------------------- */

int pb_bpip_tree(pb_bpip_t *bp) {
  if (bp == NULL) return 0;
  if (!bp->fresh && bp->n > 0) pass(bp);
  return bp->n;
}

int pb_bpip_node(const pb_bpip_t *bp, int i, pb_bpip_node_t *out) {
  if (bp == NULL || out == NULL || i < 0 || i >= bp->n) return PB_EINVAL;
  const node_t *n = &bp->nd[i];
  out->state = n->st;
  out->parent = n->parent;
  out->first = n->kids > 0 ? n->first : -1;
  out->kids = n->kids;
  out->action = i == 0 ? -1 : n->action;
  out->depth = n->depth;
  out->exact = (n->flags & NF_EXACT) != 0;
  out->v = n->v;
  out->pmf = bp->pmf + (size_t)i * K;
  out->mean = mean_of(out->pmf);
  out->qss = n->qss;
  out->q1 = bp->q1;
  return 0;
}
