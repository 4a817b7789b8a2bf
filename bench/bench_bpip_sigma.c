/* bench_bpip_sigma - how far a PROBS checkpoint's V is from the exact
 * values of solved positions: the spread (sigma) of bpip's leaf
 * distributions (common/search/bpip.h, bpip:PATH,sigma=x).
 *
 *   bench_bpip_sigma CKPT [-t TESTSET] [-n POSITIONS]
 *
 * Samples, from the game's solved test set (common/solver/testset.h; the shipped
 * one unless -t): "children", every legal move of every position that
 * does not end the game, whose exact value from the child's side to move
 * is minus the move's label (W +1, D 0, L -1): the positions a search
 * values with V at its leaves; and "positions", the set's positions
 * themselves, exact value their best label. For each kind, and for the
 * children by ply range, one row: the count, the mean of V - exact (bias),
 * its root mean square, the mean |V - exact|, and the maximum-likelihood
 * sigma: the sigma (0.02..4.00 by 0.01) under which the leaf model
 * (pb_bpip_leaf_dist(V, sigma), a Gaussian around V clipped to [-1, 1] on
 * bpip's grid) gives the exact values the highest probability, with the
 * mean log-likelihood there. V from the checkpoint with one libtorch
 * thread, no cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "bpip.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "testset.h"

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_bpip_sigma: %s: %s\n", what, err->msg);
  exit(1);
}

typedef struct {
  float v;
  int8_t exact;
  int16_t ply;
} sample_t;

/* The grid point of an exact value -1, 0, +1. */
static int point(int exact) {
  return exact < 0 ? 0 : exact > 0 ? PB_BPIP_GRID - 1 : PB_BPIP_GRID / 2;
}

static double loglik(const sample_t *s, int n, double sigma) {
  double ll = 0, p[PB_BPIP_GRID];
  for (int i = 0; i < n; i++) {
    pb_bpip_leaf_dist(s[i].v, sigma, p);
    const double q = p[point(s[i].exact)];
    ll += log(q > 1e-300 ? q : 1e-300);
  }
  return n > 0 ? ll / n : 0;
}

/* One row for the samples s[0..n) of plies lo..hi (all: lo < 0). */
static void row(const char *what, const sample_t *all, int n, int lo, int hi,
                sample_t *buf) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (lo < 0 || (all[i].ply >= lo && all[i].ply <= hi)) buf[m++] = all[i];
  if (m == 0) return;
  double bias = 0, sq = 0, ab = 0, sv = 0, sx = 0, svv = 0, sxx = 0, svx = 0;
  for (int i = 0; i < m; i++) {
    const double e = buf[i].v - buf[i].exact;
    bias += e;
    sq += e * e;
    ab += fabs(e);
    sv += buf[i].v;
    sx += buf[i].exact;
    svv += (double)buf[i].v * buf[i].v;
    sxx += (double)buf[i].exact * buf[i].exact;
    svx += (double)buf[i].v * buf[i].exact;
  }
  const double cov = svx / m - sv * sx / m / m;
  const double corr =
      cov / sqrt((svv / m - sv * sv / m / m) * (sxx / m - sx * sx / m / m));
  double best = 0, bll = -INFINITY;
  for (int k = 2; k <= 400; k++) {
    const double ll = loglik(buf, m, k / 100.0);
    if (ll > bll) {
      bll = ll;
      best = k / 100.0;
    }
  }
  char label[64];
  if (lo < 0)
    snprintf(label, sizeof label, "%s", what);
  else
    snprintf(label, sizeof label, "%s, plies %d-%d", what, lo, hi);
  printf("%-24s %6d %7.3f %6.3f %6.3f %6.3f %9.2f %8.3f\n", label, m, bias / m,
         sqrt(sq / m), ab / m, corr, best, bll);
}

int main(int argc, char **argv) {
  const char *ckpt = NULL, *tspath = NULL, *npos_s = NULL;
  int limit = 0, npos = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE(NULL, 't', &tspath),
                                PB_OPTS_VALUE(NULL, 'n', &npos_s)};
  bench_usage_text =
      "usage: bench_bpip_sigma CKPT [-t TESTSET] [-n POSITIONS]\n";
  const pb_opts_t opts = {"bench_bpip_sigma", bench_usage, rows,
                          PB_OPTS_N(rows), &ckpt, 1, &npos};
  int rc = pb_opts_parse(&opts, argc, argv);
  if (rc == PB_OPTS_OK && npos != 1)
    rc = pb_opts_fail(&opts, "a checkpoint (CKPT) is needed");
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&opts, "-n", npos_s, 0, 1 << 30, &limit);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_err_t err;
  pb_config_t cfg;
  pb_model_t *m = pb_model_open(ckpt, "cpu", &cfg, &err);
  if (m == NULL) die(ckpt, &err);
  if (pb_model_kind(m) == PB_NETS_PV) {
    fprintf(stderr, "bench_bpip_sigma: %s is an alphazero checkpoint (no V)\n",
            ckpt);
    return 2;
  }
  pb_nn_set_threads(1);
  const pb_game_t *g = pb_model_game(m);
  pb_testset_t *ts = pb_testset_open(tspath, g, &err);
  if (ts == NULL) die("test set", &err);
  int n = (int)pb_testset_count(ts);
  if (limit > 0 && limit < n) n = limit;
  const int A = g->num_actions;
  const size_t cap = (size_t)n * (size_t)(A + 1);
  pb_state_t *st = malloc(cap * sizeof *st);
  sample_t *s = malloc(cap * sizeof *s), *buf = malloc(cap * sizeof *buf);
  float *v = malloc(cap * sizeof *v);
  int *kind = malloc(cap * sizeof *kind);
  if (st == NULL || s == NULL || buf == NULL || v == NULL || kind == NULL)
    return 1;
  int ns = 0;
  for (int i = 0; i < n; i++) {
    const pb_state_t *p = pb_testset_state(ts, (size_t)i);
    const int8_t *lab = pb_testset_labels(ts, (size_t)i);
    int best = -2;
    for (int a = 0; a < A; a++) {
      if (lab[a] == PB_TS_ILLEGAL) continue;
      best = lab[a] > best ? lab[a] : best;
      pb_state_t c = *p;
      int done = 0;
      g->step(&c, a, &done);
      if (done) continue;
      st[ns] = c;
      s[ns].exact = (int8_t)-lab[a];
      s[ns].ply = (int16_t)g->ply(&c);
      kind[ns++] = 0;
    }
    st[ns] = *p;
    s[ns].exact = (int8_t)best;
    s[ns].ply = (int16_t)g->ply(p);
    kind[ns++] = 1;
  }
  pb_neteval_t *ne = pb_neteval_new(g, 512, 0, &err);
  if (ne == NULL) die("evaluator", &err);
  pb_neteval_bind(ne, pb_model_v(m), NULL);
  pb_evalfn_t fn = pb_neteval_fn(ne);
  if (fn.value(fn.ctx, st, ns, v, &err) != 0) die("V", &err);
  int nc = 0, np = 0;
  sample_t *kids = malloc((size_t)ns * sizeof *kids);
  sample_t *roots = malloc((size_t)ns * sizeof *roots);
  if (kids == NULL || roots == NULL) return 1;
  for (int i = 0; i < ns; i++) {
    s[i].v = !(v[i] >= -1.0f) ? -1.0f : v[i] > 1.0f ? 1.0f : v[i];
    if (kind[i] == 0)
      kids[nc++] = s[i];
    else
      roots[np++] = s[i];
  }
  printf("# %s, %s, %d positions of %s\n", ckpt, g->name, n,
         pb_testset_name(ts));
  printf("%-24s %6s %7s %6s %6s %6s %9s %8s\n", "# samples", "n", "bias", "rms",
         "mae", "corr", "ML sigma", "mean ll");
  row("children", kids, nc, -1, -1, buf);
  row("positions", roots, np, -1, -1, buf);
  for (int lo = 0; lo < g->max_turns; lo += 8) {
    int any = 0;
    for (int i = 0; i < nc && !any; i++)
      any = kids[i].ply >= lo && kids[i].ply <= lo + 7;
    if (any) row("children", kids, nc, lo, lo + 7, buf);
  }
  free(kids);
  free(roots);
  free(st);
  free(s);
  free(buf);
  free(v);
  free(kind);
  pb_neteval_destroy(&ne);
  pb_testset_destroy(&ts);
  pb_model_destroy(&m);
  return 0;
}
