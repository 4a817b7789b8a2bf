/* uct.c - see uct.h. */
#include "uct.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "invariant.h"

struct pb_uct {
  const pb_game_t *g;
  pb_uct_opts_t o;
  int nmax, emax, pmax; /* nodes, edges, path length */
  /* nodes */
  pb_state_t *st;
  int *edge0, *nedges, *nvisits; /* nvisits: results backed up through it */
  uint8_t *terminal;
  float *tvalue; /* terminal: the result of the move into it, for its mover */
  /* edges: the legal actions of each node, in increasing order */
  uint8_t *eact;
  int *echild, *eN;
  double *eW; /* from the side to move at the edge's parent */
  int nused, eused;
  int *pedge, *pnode; /* the path: edges and the nodes they leave */
  uint64_t simulations;
};

void pb_uct_destroy(pb_uct_t **pu) {
  if (pu == NULL || *pu == NULL) return;
  pb_uct_t *u = *pu;
  free(u->st);
  free(u->edge0);
  free(u->nedges);
  free(u->nvisits);
  free(u->terminal);
  free(u->tvalue);
  free(u->eact);
  free(u->echild);
  free(u->eN);
  free(u->eW);
  free(u->pedge);
  free(u->pnode);
  free(u);
  *pu = NULL;
}

pb_uct_t *pb_uct_new(const pb_game_t *g, const pb_uct_opts_t *o,
                     pb_err_t *err) {
  if (g == NULL || o == NULL) {
    pb_err_set(err, PB_EINVAL, "uct: NULL game or options");
    return NULL;
  }
  if (o->simulations < 1 || o->simulations > PB_UCT_MAX_SIMULATIONS) {
    pb_err_set(err, PB_EINVAL, "uct: simulations %d out of range 1..%d",
               o->simulations, PB_UCT_MAX_SIMULATIONS);
    return NULL;
  }
  if (!(o->c > 0) || !isfinite(o->c)) {
    pb_err_set(err, PB_EINVAL,
               "uct: exploration constant c = %g (must be finite and > 0)",
               o->c);
    return NULL;
  }
  if (o->discount != 0 && o->discount != 1) {
    pb_err_set(err, PB_EINVAL, "uct: discount %d (must be 0 or 1)",
               o->discount);
    return NULL;
  }
  if (o->max_turns < 0) {
    pb_err_set(err, PB_EINVAL, "uct: max_turns %d (must be >= 0)",
               o->max_turns);
    return NULL;
  }
  pb_uct_t *u = calloc(1, sizeof *u);
  if (u == NULL) goto nomem;
  u->g = g;
  u->o = *o;
  if (u->o.max_turns == 0 || u->o.max_turns > g->max_turns)
    u->o.max_turns = g->max_turns;
  /* One node per simulation and the root; every node's edges are made with
   * it, at most num_actions each. Untouched pages of the edge arrays cost
   * no memory. */
  u->nmax = o->simulations + 1;
  u->emax = u->nmax * g->num_actions;
  u->pmax = u->o.max_turns + 2;
  size_t N = (size_t)u->nmax, E = (size_t)u->emax, P = (size_t)u->pmax;
  u->st = malloc(N * sizeof *u->st);
  u->edge0 = malloc(N * sizeof(int));
  u->nedges = malloc(N * sizeof(int));
  u->nvisits = malloc(N * sizeof(int));
  u->terminal = malloc(N);
  u->tvalue = malloc(N * sizeof(float));
  u->eact = malloc(E);
  u->echild = malloc(E * sizeof(int));
  u->eN = malloc(E * sizeof(int));
  u->eW = malloc(E * sizeof(double));
  u->pedge = malloc(P * sizeof(int));
  u->pnode = malloc(P * sizeof(int));
  if (!u->st || !u->edge0 || !u->nedges || !u->nvisits || !u->terminal ||
      !u->tvalue || !u->eact || !u->echild || !u->eN || !u->eW || !u->pedge ||
      !u->pnode)
    goto nomem;
  return u;
nomem:
  pb_uct_destroy(&u);
  pb_err_set(err, PB_ENOMEM, "uct: out of memory for %d simulations",
             o->simulations);
  return NULL;
}

/* A new node holding st: terminal (the move into it scored `tv` for its
 * mover), or with one edge per legal action. -1 if the tree is full. */
static int new_node(pb_uct_t *u, const pb_state_t *st, int terminal, float tv) {
  if (u->nused == u->nmax) return -1;
  int i = u->nused++;
  u->st[i] = *st;
  u->nvisits[i] = 0;
  u->terminal[i] = (uint8_t)terminal;
  u->tvalue[i] = tv;
  u->edge0[i] = u->eused;
  u->nedges[i] = 0;
  if (!terminal) {
    uint8_t acts[PB_MAX_ACTIONS];
    int na = u->g->legal(st, acts);
    /* Not terminal: it has moves; at most A edges a node fit in emax. */
    pb_assert(na >= 1 && u->eused + na <= u->emax);
    for (int k = 0; k < na; k++) {
      int e = u->eused + k;
      u->eact[e] = acts[k];
      u->echild[e] = -1;
      u->eN[e] = 0;
      u->eW[e] = 0.0;
    }
    u->eused += na;
    u->nedges[i] = na;
  }
  return i;
}

/* The edge the tree policy takes from node i: a random untried one, else
 * UCB1's best (ties: the first, i.e. the lowest action). */
static int select_edge(pb_uct_t *u, int i, pb_rng_t *rng) {
  int e0 = u->edge0[i], ne = u->nedges[i], untried = 0;
  for (int e = e0; e < e0 + ne; e++) untried += u->eN[e] == 0;
  if (untried > 0) {
    int k = (int)pb_rng_below(rng, (uint32_t)untried);
    for (int e = e0; e < e0 + ne; e++)
      if (u->eN[e] == 0 && k-- == 0) return e;
  }
  double lnN = log((double)u->nvisits[i]), bscore = -INFINITY;
  int best = e0;
  for (int e = e0; e < e0 + ne; e++) {
    double n = (double)u->eN[e];
    double score = u->eW[e] / n + u->o.c * sqrt(lnN / n);
    if (score > bscore) {
      bscore = score;
      best = e;
    }
  }
  return best;
}

/* Random moves from the non-terminal t to the end of the game (or
 * max_turns: a draw). Returns the result for t's side to move; *plies
 * gets the moves made. */
static float playout(const pb_uct_t *u, pb_state_t t, pb_rng_t *rng,
                     int *plies) {
  const pb_game_t *g = u->g;
  uint8_t acts[PB_MAX_ACTIONS];
  for (int p = 1;; p++) {
    int n = g->legal(&t, acts), done = 0;
    pb_assert(n >= 1); /* t is not terminal: the last step said so */
    float r = g->step(&t, acts[pb_rng_below(rng, (uint32_t)n)], &done);
    if (done || g->ply(&t) >= u->o.max_turns) {
      *plies = p;
      if (!done) return 0.0f;
      return (p & 1) ? r : -r; /* odd plies: t's side made the last move */
    }
  }
}

/* Backs up v, the result for the mover of the path's last edge, reached
 * `depth` plies below the root. */
static void backup(pb_uct_t *u, int plen, float v, int depth) {
  double x = u->o.discount ? (double)v / depth : (double)v;
  for (int k = plen - 1; k >= 0; k--) {
    u->eN[u->pedge[k]]++;
    u->eW[u->pedge[k]] += x;
    u->nvisits[u->pnode[k]]++;
    x = -x;
  }
}

/* One simulation from the root (node 0). */
static void simulate(pb_uct_t *u, pb_rng_t *rng) {
  int i = 0, plen = 0;
  for (;;) {
    /* An inner node with edges, a path within max_turns plies. */
    pb_assert(!u->terminal[i] && u->nedges[i] > 0 && plen < u->pmax);
    int e = select_edge(u, i, rng);
    u->pedge[plen] = e;
    u->pnode[plen] = i;
    plen++;
    int c = u->echild[e];
    if (c < 0) {
      pb_state_t t = u->st[i];
      int done = 0;
      float r = u->g->step(&t, u->eact[e], &done);
      int cut = !done && u->g->ply(&t) >= u->o.max_turns;
      c = new_node(u, &t, done || cut, done ? r : 0.0f);
      u->echild[e] = c;
      pb_assert(c >= 0); /* one new node per simulation: nmax is enough */
      if (!done && !cut) {
        int plies = 0;
        float z = playout(u, t, rng, &plies);
        backup(u, plen, -z, plen + plies);
        return;
      }
    }
    if (u->terminal[c]) {
      backup(u, plen, u->tvalue[c], plen);
      return;
    }
    i = c;
  }
}

int pb_uct_search(pb_uct_t *u, const pb_state_t *s, pb_rng_t *rng,
                  float *visits, float *values, float *root_value,
                  pb_err_t *err) {
  if (u == NULL || s == NULL || rng == NULL)
    return pb_err_set(err, PB_EINVAL, "uct: NULL searcher, state or rng");
  float r;
  if (u->g->terminal(s, &r))
    return pb_err_set(err, PB_EINVAL, "uct: the root is a finished game");
  u->nused = u->eused = 0;
  new_node(u, s, 0, 0.0f);
  for (int k = 0; k < u->o.simulations; k++) simulate(u, rng);
  u->simulations += (uint64_t)u->o.simulations;

  const int A = u->g->num_actions, e0 = u->edge0[0], ne = u->nedges[0];
  if (visits != NULL) memset(visits, 0, (size_t)A * sizeof *visits);
  if (values != NULL) memset(values, 0, (size_t)A * sizeof *values);
  int best = e0;
  double w = 0, n = 0;
  for (int e = e0; e < e0 + ne; e++) {
    double mean = u->eN[e] ? u->eW[e] / u->eN[e] : 0.0;
    if (visits != NULL) visits[u->eact[e]] = (float)u->eN[e];
    if (values != NULL) values[u->eact[e]] = (float)mean;
    w += u->eW[e];
    n += u->eN[e];
    double bmean = u->eN[best] ? u->eW[best] / u->eN[best] : 0.0;
    if (u->eN[e] > u->eN[best] || (u->eN[e] == u->eN[best] && mean > bmean))
      best = e;
  }
  if (root_value != NULL) *root_value = n > 0 ? (float)(w / n) : 0.0f;
  return u->eact[best];
}

uint64_t pb_uct_simulations(const pb_uct_t *u) {
  return u != NULL ? u->simulations : 0;
}
