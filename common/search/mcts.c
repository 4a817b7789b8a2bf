/* mcts.c - see mcts.h. */
#include "mcts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "invariant.h"
#include "mcts_rules.h"

struct pb_mcts {
  const pb_game_t *g;
  pb_mcts_opts_t o;
  pb_mcts_progress_fn progress; /* pb_mcts_set_progress; NULL: none */
  void *pctx;
  int base; /* the chunk under way: its first root in the call */
  pb_mcts_root_opts_t r;
  int A, nmax, emax, pmax; /* per search: nodes, edges, path length */
  /* nodes of search s: [s * nmax, (s + 1) * nmax) */
  pb_state_t *st;
  int *edge0, *nedges, *visits;
  uint8_t *terminal;
  float *term_value;
  float *nraw; /* the network's value of the node (gumbel's mixed value) */
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
  /* per search: its budget, whether it is fast, and (gumbel) the root's
   * Gumbel noise and log-priors by root edge, [A] each */
  int *sims;
  uint8_t *fast;
  double *gum, *rlogit;
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
  free(m->nraw);
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
  free(m->sims);
  free(m->fast);
  free(m->gum);
  free(m->rlogit);
  free(m);
  *pm = NULL;
}

pb_mcts_t *pb_mcts_new(const pb_game_t *g, const pb_mcts_opts_t *o,
                       pb_err_t *err) {
  return pb_mcts_new_ex(g, o, NULL, err);
}

/* 0, or PB_EINVAL with err naming what is wrong with r. */
static int check_root(const pb_mcts_root_opts_t *r, pb_err_t *err) {
  if (r->rule != PB_MCTS_PUCT && r->rule != PB_MCTS_GUMBEL)
    return pb_err_set(err, PB_EINVAL, "mcts: root rule %d (0 puct, 1 gumbel)",
                      r->rule);
  if (r->forced != 0 && r->forced != 1)
    return pb_err_set(err, PB_EINVAL, "mcts: forced %d (must be 0 or 1)",
                      r->forced);
  if (r->rule == PB_MCTS_GUMBEL && (r->considered < 1 || !(r->c_visit > 0) ||
                                    !(r->c_scale > 0) || r->forced))
    return pb_err_set(err, PB_EINVAL,
                      "mcts: gumbel needs considered >= 1 (got %d), c_visit "
                      "> 0 (%g), c_scale > 0 (%g) and no forced playouts",
                      r->considered, r->c_visit, r->c_scale);
  return 0;
}

pb_mcts_t *pb_mcts_new_ex(const pb_game_t *g, const pb_mcts_opts_t *o,
                          const pb_mcts_root_opts_t *r, pb_err_t *err) {
  static const pb_mcts_root_opts_t plain = {PB_MCTS_PUCT, 0, 0, 0, 0};
  if (r == NULL) r = &plain;
  if (check_root(r, err) != 0) return NULL;
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
  m->r = *r;
  m->A = g->num_actions;
  m->nmax = o->simulations + 1;
  m->emax = m->nmax * m->A;
  m->pmax = g->max_turns + 2;
  /* Trees of at most about 1 GiB together. */
  size_t per = (size_t)m->nmax * (sizeof(pb_state_t) + 4 * sizeof(int) + 9) +
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
  m->nraw = malloc(N * sizeof(float));
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
  m->sims = malloc(p * sizeof(int));
  m->fast = malloc(p);
  m->gum = malloc(p * (size_t)m->A * sizeof(double));
  m->rlogit = malloc(p * (size_t)m->A * sizeof(double));
  if (!m->st || !m->edge0 || !m->nedges || !m->visits || !m->terminal ||
      !m->term_value || !m->nraw || !m->eact || !m->eprior || !m->eW ||
      !m->echild || !m->eN || !m->nused || !m->eused || !m->path || !m->plen ||
      !m->leaf_s || !m->leaf_node || !m->leaf_st || !m->pol || !m->val ||
      !m->noise || !m->sims || !m->fast || !m->gum || !m->rlogit)
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
  m->nraw[i] = 0.0f;
  return i;
}

/* Gives node i (of search s) its edges: the legal actions with the
 * softmax of logits over them as priors, mixed with Dirichlet noise. */
static void expand(pb_mcts_t *m, int s, int i, const float *logits,
                   pb_rng_t *noise_rng) {
  uint8_t acts[PB_MAX_ACTIONS];
  int na = m->g->legal(&m->st[i], acts);
  /* A node is expanded once, and only when not terminal: it has moves,
   * and at most A more edges fit in its search's share. */
  pb_assert(m->edge0[i] < 0 && na >= 1 && na <= m->A &&
            m->eused[s] + na <= m->emax);
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
    pb_assert(e >= s * m->emax && e < s * m->emax + m->eused[s]);
    m->eN[e]++;
    m->eW[e] -= v; /* the edge counts from its parent's side */
    v = -v;
  }
}

/* PUCT's choice among node i's edges (visits[i] counts this descent).
 * With `forced` (the root of a full search with forced playouts) a child
 * below its forced visit count goes first: the best by PUCT among them. */
static int puct_edge(const pb_mcts_t *m, int i, int forced) {
  const int e0 = m->edge0[i], ne = m->nedges[i];
  double sq = sqrt((double)(m->visits[i] > 1 ? m->visits[i] - 1 : 0));
  int best = e0;
  double bscore = -INFINITY;
  if (forced) {
    int total = 0, fb = -1;
    for (int e = e0; e < e0 + ne; e++) total += m->eN[e];
    for (int e = e0; e < e0 + ne; e++) {
      if (m->eN[e] >= pb_mcts_forced_visits(m->eprior[e], total)) continue;
      double q = m->eN[e] ? m->eW[e] / m->eN[e] : 0.0;
      double u = q + m->o.c_puct * m->eprior[e] * sq / (1 + m->eN[e]);
      if (fb < 0 || u > bscore) {
        bscore = u;
        fb = e;
      }
    }
    if (fb >= 0) return fb;
    bscore = -INFINITY;
  }
  for (int e = e0; e < e0 + ne; e++) {
    double q = m->eN[e] ? m->eW[e] / m->eN[e] : 0.0;
    double u = q + m->o.c_puct * m->eprior[e] * sq / (1 + m->eN[e]);
    if (u > bscore) {
      bscore = u;
      best = e;
    }
  }
  return best;
}

/* Node i's children for mcts_rules.h: visits, mean values from i's side
 * (0 where unvisited) and sigma(completed Q); returns their number. */
static int children(const pb_mcts_t *m, int i, int *vis, double *q,
                    double *sigma) {
  const int e0 = m->edge0[i], ne = m->nedges[i];
  for (int k = 0; k < ne; k++) {
    vis[k] = m->eN[e0 + k];
    q[k] = vis[k] ? (double)m->eW[e0 + k] / vis[k] : 0.0;
  }
  pb_mcts_gumbel_sigma(ne, m->eprior + e0, vis, q, m->nraw[i], m->r.c_visit,
                       m->r.c_scale, sigma);
  return ne;
}

/* Among the na root children with exactly `want` visits, the best by
 * g + logits + sigma (floored at -1e9, as mctx; ties: the lowest); if
 * none has `want` visits, the best of all. */
static int best_considered(int na, const int *vis, int want, const double *g,
                           const double *lg, const double *sigma) {
  int best = -1, any = 0;
  double bs = -INFINITY, as = -INFINITY;
  for (int c = 0; c < na; c++) {
    double sc = g[c] + lg[c] + sigma[c];
    if (!(sc > -1e9)) sc = -1e9;
    if (sc > as) {
      as = sc;
      any = c;
    }
    if (vis[c] == want && (best < 0 || sc > bs)) {
      bs = sc;
      best = c;
    }
  }
  return best >= 0 ? best : any;
}

/* Gumbel's choice at the root r of search s: sequential halving. */
static int gumbel_root_edge(const pb_mcts_t *m, int s, int r) {
  int vis[PB_MAX_ACTIONS], k = 0;
  double q[PB_MAX_ACTIONS], sigma[PB_MAX_ACTIONS];
  const int na = children(m, r, vis, q, sigma);
  for (int c = 0; c < na; c++) k += vis[c];
  const int mm = m->r.considered < na ? m->r.considered : na;
  const int want = pb_mcts_halving_visit(mm, m->sims[s], k);
  const size_t o = (size_t)s * m->A;
  return m->edge0[r] +
         best_considered(na, vis, want, m->gum + o, m->rlogit + o, sigma);
}

/* Gumbel's choice below the root: argmax pi'(a) - N(a) / (1 + sum N). */
static int gumbel_inner_edge(const pb_mcts_t *m, int i) {
  int vis[PB_MAX_ACTIONS], total = 0;
  double q[PB_MAX_ACTIONS], sigma[PB_MAX_ACTIONS], lg[PB_MAX_ACTIONS],
      pi[PB_MAX_ACTIONS];
  const int na = children(m, i, vis, q, sigma);
  for (int c = 0; c < na; c++) {
    lg[c] = log((double)m->eprior[m->edge0[i] + c]);
    total += vis[c];
  }
  pb_mcts_improved_policy(na, lg, sigma, pi);
  int best = 0;
  double bs = -INFINITY;
  for (int c = 0; c < na; c++) {
    double x = pi[c] - (double)vis[c] / (1.0 + total);
    if (x > bs) {
      bs = x;
      best = c;
    }
  }
  return m->edge0[i] + best;
}

/* One descent of search s from its root; a leaf to evaluate is queued
 * (returns 1), a terminal end is backed up at once (returns 0). */
static int descend(pb_mcts_t *m, int s, int root, int *nleaf) {
  int i = root, *path = m->path + (size_t)s * m->pmax;
  m->plen[s] = 0;
  for (;;) {
    m->visits[i]++;
    /* An inner node of the descent is expanded; the path fits. */
    pb_assert(m->nedges[i] > 0 && m->plen[s] < m->pmax);
    int best;
    if (m->r.rule == PB_MCTS_GUMBEL)
      best = i == root ? gumbel_root_edge(m, s, i) : gumbel_inner_edge(m, i);
    else
      best = puct_edge(m, i, i == root && m->r.forced && !m->fast[s]);
    path[m->plen[s]++] = best;
    int c = m->echild[best];
    if (c < 0) {
      pb_state_t t = m->st[i];
      int done = 0;
      float r = m->g->step(&t, m->eact[best], &done);
      /* A terminal child's value, from its side to move, is -reward. */
      c = new_node(m, s, &t, done, done ? -r : 0.0f);
      m->echild[best] = c;
      pb_assert(c >= 0); /* one new node per simulation: nmax is enough */
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

/* Search s's root r after its expansion, for gumbel: the log-priors and
 * (with a stream) one Gumbel(0, 1) draw per legal action. */
static void gumbel_root(pb_mcts_t *m, int s, int r, pb_rng_t *rng) {
  const size_t o = (size_t)s * m->A;
  for (int k = 0; k < m->nedges[r]; k++) {
    m->rlogit[o + k] = log((double)m->eprior[m->edge0[r] + k]);
    double u = rng != NULL ? pb_rng_uniform(rng) : 0.0;
    if (rng != NULL && u <= 0.0) u = 0x1p-60;
    m->gum[o + k] = rng != NULL ? -log(-log(u)) : 0.0;
  }
}

/* Gumbel's result for search s (root r): its move, and the improved
 * policy at the root into out (A entries, zeroed) when out is not NULL. */
static int gumbel_result(const pb_mcts_t *m, int s, int r, float *out) {
  int vis[PB_MAX_ACTIONS] = {0}, want = 0;
  double q[PB_MAX_ACTIONS] = {0}, sigma[PB_MAX_ACTIONS] = {0},
         t[PB_MAX_ACTIONS] = {0};
  const int na = children(m, r, vis, q, sigma), e0 = m->edge0[r];
  const size_t o = (size_t)s * m->A;
  for (int c = 0; c < na; c++) want = vis[c] > want ? vis[c] : want;
  int best = best_considered(na, vis, want, m->gum + o, m->rlogit + o, sigma);
  if (out != NULL) {
    pb_mcts_improved_policy(na, m->rlogit + o, sigma, t);
    for (int c = 0; c < na; c++) out[m->eact[e0 + c]] = (float)t[c];
  }
  return m->eact[e0 + best];
}

/* The pruned target of forced playouts at root r into out (zeroed). */
static void pruned_target(const pb_mcts_t *m, int r, float *out) {
  int vis[PB_MAX_ACTIONS] = {0};
  double q[PB_MAX_ACTIONS] = {0}, t[PB_MAX_ACTIONS] = {0};
  const int na = m->nedges[r], e0 = m->edge0[r];
  for (int c = 0; c < na; c++) {
    vis[c] = m->eN[e0 + c];
    q[c] = vis[c] ? (double)m->eW[e0 + c] / vis[c] : 0.0;
  }
  pb_mcts_prune_forced(na, m->eprior + e0, vis, q, m->o.c_puct, t);
  double total = 0;
  for (int c = 0; c < na; c++) total += t[c];
  for (int c = 0; c < na; c++)
    out[m->eact[e0 + c]] = total > 0 ? (float)(t[c] / total) : 0.0f;
}

/* Search s's move, and its policy target (io's `target`) into out[A] when
 * out is not NULL; visits are its root's visit counts by action. */
static int root_result(const pb_mcts_t *m, int s, const float *visits,
                       float *out) {
  const int r = s * m->nmax, A = m->A;
  if (out != NULL) memset(out, 0, (size_t)A * sizeof *out);
  if (m->r.rule == PB_MCTS_GUMBEL) return gumbel_result(m, s, r, out);
  int best = -1;
  for (int a = 0; a < A; a++)
    if (visits[a] > 0 && (best < 0 || visits[a] > visits[best])) best = a;
  if (out == NULL) return best;
  if (m->r.forced && !m->fast[s]) {
    pruned_target(m, r, out);
    return best;
  }
  double total = 0;
  for (int a = 0; a < A; a++) total += visits[a];
  for (int a = 0; a < A; a++)
    out[a] = total > 0 ? (float)(visits[a] / total) : 0;
  return best;
}

static int run_chunk(pb_mcts_t *m, const pb_state_t *roots, int n,
                     const pb_mcts_evalfn_t *ev, pb_rng_t *rng,
                     pb_rng_t *const *rngs, const pb_mcts_io_t *io,
                     pb_err_t *err) {
  const int A = m->A;
  /* The roots: evaluated together, expanded with noise. */
  int most = 0;
  for (int s = 0; s < n; s++) {
    m->nused[s] = m->eused[s] = 0;
    m->leaf_st[s] = roots[s];
    m->sims[s] = io->simulations ? io->simulations[s] : m->o.simulations;
    m->fast[s] = io->fast ? io->fast[s] != 0 : 0;
    if (m->sims[s] > most) most = m->sims[s];
  }
  int rc = ev->eval(ev->ctx, m->leaf_st, n, m->pol, m->val, err);
  if (rc != 0) return rc;
  m->evaluations += (uint64_t)n;
  for (int s = 0; s < n; s++) {
    int r = new_node(m, s, &roots[s], 0, 0.0f);
    pb_rng_t *nr = rngs != NULL ? rngs[s] : rng;
    int dirichlet = m->o.eps > 0 && m->r.rule == PB_MCTS_PUCT && !m->fast[s];
    expand(m, s, r, m->pol + (size_t)s * A, dirichlet ? nr : NULL);
    m->visits[r] = 1;
    float v = m->val[s];
    m->nraw[r] = v >= -1.0f ? (v > 1.0f ? 1.0f : v) : -1.0f;
    if (m->r.rule == PB_MCTS_GUMBEL) gumbel_root(m, s, r, nr);
  }
  for (int sim = 0; sim < most; sim++) {
    int nleaf = 0;
    for (int s = 0; s < n; s++)
      if (sim < m->sims[s]) descend(m, s, s * m->nmax, &nleaf);
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
      m->nraw[c] = v;
      backup(m, s, v);
    }
    if (m->progress != NULL) m->progress(m->pctx, m, m->base, n);
  }
  for (int s = 0; s < n; s++) {
    int r = s * m->nmax;
    float *out = io->visits + (size_t)s * A;
    memset(out, 0, (size_t)A * sizeof *out);
    double w = 0, nn = 0;
    for (int e = m->edge0[r]; e < m->edge0[r] + m->nedges[r]; e++) {
      out[m->eact[e]] = (float)m->eN[e];
      w += m->eW[e];
      nn += m->eN[e];
    }
    if (io->root_value != NULL)
      io->root_value[s] = nn > 0 ? (float)(w / nn) : 0.0f;
    if (io->target != NULL || io->action != NULL) {
      int a = root_result(m, s, out,
                          io->target ? io->target + (size_t)s * A : NULL);
      if (io->action != NULL) io->action[s] = a;
    }
  }
  return 0;
}

/* Checks the call and runs it in chunks of `parallel` roots. */
void pb_mcts_set_progress(pb_mcts_t *m, pb_mcts_progress_fn fn, void *ctx) {
  m->progress = fn;
  m->pctx = ctx;
}

void pb_mcts_partial(const pb_mcts_t *m, int k, float *visits, float *value) {
  int r = k * m->nmax;
  double w = 0, nn = 0;
  memset(visits, 0, (size_t)m->A * sizeof *visits);
  for (int e = m->edge0[r]; e < m->edge0[r] + m->nedges[r]; e++) {
    visits[m->eact[e]] = (float)m->eN[e];
    w += m->eW[e];
    nn += m->eN[e];
  }
  *value = nn > 0 ? (float)(w / nn) : 0.0f;
}

static int run(pb_mcts_t *m, const pb_state_t *states, int n,
               const pb_mcts_evalfn_t *ev, pb_rng_t *rng, pb_rng_t *const *rngs,
               const pb_mcts_io_t *io, pb_err_t *err) {
  if (m == NULL || ev == NULL || io == NULL ||
      (n > 0 && (states == NULL || io->visits == NULL)))
    return pb_err_set(err, PB_EINVAL, "mcts: NULL argument");
  for (int i = 0; i < n; i++) {
    float r;
    if (m->g->terminal(&states[i], &r))
      return pb_err_set(err, PB_EINVAL, "mcts: root %d is a finished game", i);
    int sims = io->simulations ? io->simulations[i] : m->o.simulations;
    if (sims < 1 || sims > m->o.simulations)
      return pb_err_set(err, PB_EINVAL,
                        "mcts: root %d's budget %d is not in 1..%d", i, sims,
                        m->o.simulations);
  }
  const size_t A = (size_t)m->A;
  for (int f = 0; f < n; f += m->o.parallel) {
    int cnt = n - f < m->o.parallel ? n - f : m->o.parallel;
    pb_mcts_io_t c = {io->simulations ? io->simulations + f : NULL,
                      io->fast ? io->fast + f : NULL,
                      io->visits + (size_t)f * A,
                      io->target ? io->target + (size_t)f * A : NULL,
                      io->action ? io->action + f : NULL,
                      io->root_value ? io->root_value + f : NULL};
    m->base = f;
    int rc =
        run_chunk(m, states + f, cnt, ev, rng, rngs ? rngs + f : NULL, &c, err);
    if (rc != 0) return rc;
  }
  return 0;
}

int pb_mcts_run(pb_mcts_t *m, const pb_state_t *states, int n,
                const pb_mcts_evalfn_t *ev, pb_rng_t *rng, float *visits,
                float *root_value, pb_err_t *err) {
  pb_mcts_io_t io = {NULL, NULL, visits, NULL, NULL, root_value};
  return run(m, states, n, ev, rng, NULL, &io, err);
}

int pb_mcts_run_rngs(pb_mcts_t *m, const pb_state_t *states, int n,
                     const pb_mcts_evalfn_t *ev, pb_rng_t *const *rngs,
                     float *visits, float *root_value, pb_err_t *err) {
  pb_mcts_io_t io = {NULL, NULL, visits, NULL, NULL, root_value};
  return pb_mcts_search(m, states, n, ev, rngs, &io, err);
}

int pb_mcts_search(pb_mcts_t *m, const pb_state_t *states, int n,
                   const pb_mcts_evalfn_t *ev, pb_rng_t *const *rngs,
                   const pb_mcts_io_t *io, pb_err_t *err) {
  if (m != NULL && io != NULL && m->r.rule == PB_MCTS_PUCT && m->o.eps > 0)
    for (int i = 0; i < n; i++)
      if (!(io->fast && io->fast[i]) && (rngs == NULL || rngs[i] == NULL))
        return pb_err_set(err, PB_EINVAL, "mcts: NULL rngs with noise");
  return run(m, states, n, ev, NULL, rngs, io, err);
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
