/* mcts.c - see mcts.h. */
#include "mcts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pb_mcts {
  const pb_game_t *g;
  pb_mcts_opts_t o;
  int A, nmax, emax, pmax; /* per search: nodes, edges, path length */
  /* nodes of search s: [s * nmax, (s + 1) * nmax) */
  pb_state_t *st;
  int *edge0, *nedges, *visits;
  uint8_t *terminal;
  float *term_value;
  /* edges of search s: [s * emax, ...) */
  uint8_t *eact;
  float *eprior, *eW;
  int *echild, *eN;
  int *nused, *eused; /* per search */
  int *path, *plen;   /* edges on the way down, per search */
  /* the round's leaves */
  int *leaf_s, *leaf_node;
  pb_state_t *leaf_st;
  float *pol, *val;
  double *noise;
  uint64_t evaluations;
};

void pb_mcts_destroy(pb_mcts_t **pm) {
  if (pm == NULL || *pm == NULL) return;
  pb_mcts_t *m = *pm;
  free(m->st);
  free(m->edge0);
  free(m->nedges);
  free(m->visits);
  free(m->terminal);
  free(m->term_value);
  free(m->eact);
  free(m->eprior);
  free(m->eW);
  free(m->echild);
  free(m->eN);
  free(m->nused);
  free(m->eused);
  free(m->path);
  free(m->plen);
  free(m->leaf_s);
  free(m->leaf_node);
  free(m->leaf_st);
  free(m->pol);
  free(m->val);
  free(m->noise);
  free(m);
  *pm = NULL;
}

pb_mcts_t *pb_mcts_new(const pb_game_t *g, const pb_mcts_opts_t *o,
                       pb_err_t *err) {
  if (g == NULL || o == NULL || o->simulations < 1 ||
      o->simulations > 10000000 || !(o->c_puct > 0) || !(o->eps >= 0) ||
      o->eps > 1 || (o->eps > 0 && !(o->alpha > 0)) || o->parallel < 1 ||
      (o->discount != 0 && o->discount != 1)) {
    pb_err_set(err, PB_EINVAL,
               "mcts: bad options (simulations >= 1, c_puct > 0, eps in "
               "[0, 1], alpha > 0, parallel >= 1, discount 0 or 1)");
    return NULL;
  }
  pb_mcts_t *m = calloc(1, sizeof *m);
  if (m == NULL) goto nomem;
  m->g = g;
  m->o = *o;
  m->A = g->num_actions;
  m->nmax = o->simulations + 1;
  m->emax = m->nmax * m->A;
  m->pmax = g->max_turns + 2;
  /* Trees of at most about 1 GiB together. */
  size_t per = (size_t)m->nmax * (sizeof(pb_state_t) + 4 * sizeof(int) + 5) +
               (size_t)m->emax * (1 + 3 * sizeof(float) + sizeof(int));
  size_t p = (size_t)o->parallel;
  while (p > 1 && p * per > ((size_t)1 << 30)) p /= 2;
  m->o.parallel = (int)p;
  size_t N = p * (size_t)m->nmax, E = p * (size_t)m->emax;
  m->st = malloc(N * sizeof *m->st);
  m->edge0 = malloc(N * sizeof(int));
  m->nedges = malloc(N * sizeof(int));
  m->visits = malloc(N * sizeof(int));
  m->terminal = malloc(N);
  m->term_value = malloc(N * sizeof(float));
  m->eact = malloc(E);
  m->eprior = malloc(E * sizeof(float));
  m->eW = malloc(E * sizeof(float));
  m->echild = malloc(E * sizeof(int));
  m->eN = malloc(E * sizeof(int));
  m->nused = malloc(p * sizeof(int));
  m->eused = malloc(p * sizeof(int));
  m->path = malloc(p * (size_t)m->pmax * sizeof(int));
  m->plen = malloc(p * sizeof(int));
  m->leaf_s = malloc(p * sizeof(int));
  m->leaf_node = malloc(p * sizeof(int));
  m->leaf_st = malloc(p * sizeof(pb_state_t));
  m->pol = malloc(p * (size_t)m->A * sizeof(float));
  m->val = malloc(p * sizeof(float));
  m->noise = malloc((size_t)m->A * sizeof(double));
  if (!m->st || !m->edge0 || !m->nedges || !m->visits || !m->terminal ||
      !m->term_value || !m->eact || !m->eprior || !m->eW || !m->echild ||
      !m->eN || !m->nused || !m->eused || !m->path || !m->plen || !m->leaf_s ||
      !m->leaf_node || !m->leaf_st || !m->pol || !m->val || !m->noise)
    goto nomem;
  return m;
nomem:
  pb_mcts_destroy(&m);
  pb_err_set(err, PB_ENOMEM, "mcts: out of memory");
  return NULL;
}

/* A new node of search s holding state st; -1 if the tree is full. */
static int new_node(pb_mcts_t *m, int s, const pb_state_t *st, int terminal,
                    float tv) {
  if (m->nused[s] == m->nmax) return -1;
  int i = s * m->nmax + m->nused[s]++;
  m->st[i] = *st;
  m->edge0[i] = -1;
  m->nedges[i] = 0;
  m->visits[i] = 0;
  m->terminal[i] = (uint8_t)terminal;
  m->term_value[i] = tv;
  return i;
}

/* Gives node i (of search s) its edges: the legal actions with the
 * softmax of logits over them as priors, mixed with Dirichlet noise. */
static void expand(pb_mcts_t *m, int s, int i, const float *logits,
                   pb_rng_t *noise_rng) {
  uint8_t acts[PB_MAX_ACTIONS];
  int na = m->g->legal(&m->st[i], acts);
  int e0 = s * m->emax + m->eused[s];
  m->eused[s] += na;
  float mx = -INFINITY;
  for (int k = 0; k < na; k++)
    if (logits[acts[k]] > mx) mx = logits[acts[k]];
  double sum = 0;
  for (int k = 0; k < na; k++) {
    float x = isfinite(logits[acts[k]]) ? logits[acts[k]] - mx : -INFINITY;
    m->eprior[e0 + k] = isfinite(mx) ? expf(x) : 1.0f;
    sum += m->eprior[e0 + k];
  }
  if (noise_rng != NULL) pb_rng_dirichlet(noise_rng, m->o.alpha, na, m->noise);
  for (int k = 0; k < na; k++) {
    double p = sum > 0 ? m->eprior[e0 + k] / sum : 1.0 / na;
    if (noise_rng != NULL) p = (1 - m->o.eps) * p + m->o.eps * m->noise[k];
    m->eprior[e0 + k] = (float)p;
    m->eact[e0 + k] = acts[k];
    m->echild[e0 + k] = -1;
    m->eN[e0 + k] = 0;
    m->eW[e0 + k] = 0;
  }
  m->edge0[i] = e0;
  m->nedges[i] = na;
}

/* Backs value v (from the side to move at the end of search s's path) up
 * the path. */
static void backup(pb_mcts_t *m, int s, float v) {
  const int *path = m->path + (size_t)s * m->pmax;
  for (int k = m->plen[s] - 1; k >= 0; k--) {
    int e = path[k];
    m->eN[e]++;
    m->eW[e] -= v; /* the edge counts from its parent's side */
    v = -v;
  }
}

/* One descent of search s from its root; a leaf to evaluate is queued
 * (returns 1), a terminal end is backed up at once (returns 0). */
static int descend(pb_mcts_t *m, int s, int root, int *nleaf) {
  int i = root, *path = m->path + (size_t)s * m->pmax;
  m->plen[s] = 0;
  for (;;) {
    m->visits[i]++;
    int e0 = m->edge0[i], ne = m->nedges[i];
    double sq = sqrt((double)(m->visits[i] > 1 ? m->visits[i] - 1 : 0));
    int best = e0;
    double bscore = -INFINITY;
    for (int e = e0; e < e0 + ne; e++) {
      double q = m->eN[e] ? m->eW[e] / m->eN[e] : 0.0;
      double u = q + m->o.c_puct * m->eprior[e] * sq / (1 + m->eN[e]);
      if (u > bscore) {
        bscore = u;
        best = e;
      }
    }
    path[m->plen[s]++] = best;
    int c = m->echild[best];
    if (c < 0) {
      pb_state_t t = m->st[i];
      int done = 0;
      float r = m->g->step(&t, m->eact[best], &done);
      /* A terminal child's value, from its side to move, is -reward. */
      c = new_node(m, s, &t, done, done ? -r : 0.0f);
      m->echild[best] = c;
      if (c < 0) return 0; /* cannot happen: one node per simulation */
      if (!done) {
        m->visits[c]++;
        m->leaf_s[*nleaf] = s;
        m->leaf_node[*nleaf] = c;
        m->leaf_st[*nleaf] = t;
        (*nleaf)++;
        return 1;
      }
    }
    if (m->terminal[c]) {
      m->visits[c]++;
      /* Discounting: the payoff over its depth (plies from the root). */
      float v = m->term_value[c];
      if (m->o.discount) v /= (float)m->plen[s];
      backup(m, s, v);
      return 0;
    }
    i = c;
  }
}

static int run_chunk(pb_mcts_t *m, const pb_state_t *roots, int n,
                     const pb_mcts_evalfn_t *ev, pb_rng_t *rng,
                     pb_rng_t *const *rngs, float *visits, float *root_value,
                     pb_err_t *err) {
  const int A = m->A;
  /* The roots: evaluated together, expanded with noise. */
  for (int s = 0; s < n; s++) {
    m->nused[s] = m->eused[s] = 0;
    m->leaf_st[s] = roots[s];
  }
  int rc = ev->eval(ev->ctx, m->leaf_st, n, m->pol, m->val, err);
  if (rc != 0) return rc;
  m->evaluations += (uint64_t)n;
  for (int s = 0; s < n; s++) {
    int r = new_node(m, s, &roots[s], 0, 0.0f);
    pb_rng_t *nr = rngs != NULL ? rngs[s] : rng;
    expand(m, s, r, m->pol + (size_t)s * A, m->o.eps > 0 ? nr : NULL);
    m->visits[r] = 1;
  }
  for (int sim = 0; sim < m->o.simulations; sim++) {
    int nleaf = 0;
    for (int s = 0; s < n; s++) descend(m, s, s * m->nmax, &nleaf);
    if (nleaf == 0) continue;
    rc = ev->eval(ev->ctx, m->leaf_st, nleaf, m->pol, m->val, err);
    if (rc != 0) return rc;
    m->evaluations += (uint64_t)nleaf;
    for (int k = 0; k < nleaf; k++) {
      int s = m->leaf_s[k], c = m->leaf_node[k];
      expand(m, s, c, m->pol + (size_t)k * A, NULL);
      float v = m->val[k];
      if (!(v >= -1.0f)) v = -1.0f; /* NaN and below */
      if (v > 1.0f) v = 1.0f;
      backup(m, s, v);
    }
  }
  for (int s = 0; s < n; s++) {
    int r = s * m->nmax;
    float *out = visits + (size_t)s * A;
    memset(out, 0, (size_t)A * sizeof *out);
    double w = 0, nn = 0;
    for (int e = m->edge0[r]; e < m->edge0[r] + m->nedges[r]; e++) {
      out[m->eact[e]] = (float)m->eN[e];
      w += m->eW[e];
      nn += m->eN[e];
    }
    if (root_value != NULL) root_value[s] = nn > 0 ? (float)(w / nn) : 0.0f;
  }
  return 0;
}

static int run(pb_mcts_t *m, const pb_state_t *states, int n,
               const pb_mcts_evalfn_t *ev, pb_rng_t *rng,
               pb_rng_t *const *rngs, float *visits, float *root_value,
               pb_err_t *err) {
  if (m == NULL || ev == NULL || (n > 0 && (states == NULL || visits == NULL)))
    return pb_err_set(err, PB_EINVAL, "mcts: NULL argument");
  for (int i = 0; i < n; i++) {
    float r;
    if (m->g->terminal(&states[i], &r))
      return pb_err_set(err, PB_EINVAL, "mcts: root %d is a finished game", i);
  }
  for (int f = 0; f < n; f += m->o.parallel) {
    int cnt = n - f < m->o.parallel ? n - f : m->o.parallel;
    int rc = run_chunk(m, states + f, cnt, ev, rng, rngs ? rngs + f : NULL,
                       visits + (size_t)f * m->A,
                       root_value ? root_value + f : NULL, err);
    if (rc != 0) return rc;
  }
  return 0;
}

int pb_mcts_run(pb_mcts_t *m, const pb_state_t *states, int n,
                const pb_mcts_evalfn_t *ev, pb_rng_t *rng, float *visits,
                float *root_value, pb_err_t *err) {
  return run(m, states, n, ev, rng, NULL, visits, root_value, err);
}

int pb_mcts_run_rngs(pb_mcts_t *m, const pb_state_t *states, int n,
                     const pb_mcts_evalfn_t *ev, pb_rng_t *const *rngs,
                     float *visits, float *root_value, pb_err_t *err) {
  if (n > 0 && rngs == NULL && m != NULL && m->o.eps > 0)
    return pb_err_set(err, PB_EINVAL, "mcts: NULL rngs with noise");
  return run(m, states, n, ev, NULL, rngs, visits, root_value, err);
}

uint64_t pb_mcts_evaluations(const pb_mcts_t *m) { return m->evaluations; }

static int vq_eval(void *ctx, const pb_state_t *states, int n, float *policy,
                   float *value, pb_err_t *err) {
  const pb_mcts_vq_t *vq = ctx;
  if (vq->g == NULL || !(vq->temperature > 0))
    return pb_err_set(err, PB_EINVAL,
                      "mcts: V and Q evaluator without a game or with "
                      "temperature %g (must be > 0)",
                      vq->temperature);
  int rc = vq->ev.qvalues(vq->ev.ctx, states, n, policy, err);
  if (rc != 0) return rc;
  rc = vq->ev.value(vq->ev.ctx, states, n, value, err);
  if (rc != 0) return rc;
  if (vq->temperature != 1.0) {
    const float inv = (float)(1.0 / vq->temperature);
    const size_t m = (size_t)n * (size_t)vq->g->num_actions;
    for (size_t i = 0; i < m; i++) policy[i] *= inv;
  }
  return 0;
}

pb_mcts_evalfn_t pb_mcts_vq_fn(pb_mcts_vq_t *vq) {
  pb_mcts_evalfn_t fn = {vq_eval, vq};
  return fn;
}
