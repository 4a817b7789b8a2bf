/* mcts_rules.c - see mcts_rules.h. */
#include "mcts_rules.h"

#include <float.h>
#include <math.h>

int pb_mcts_halving_visit(int m, int n, int k) {
  if (m <= 1) return k;
  int log2max = 0;
  while ((1 << log2max) < m) log2max++;
  /* Each phase gives its c actions x visits each: x rounds of c
   * simulations, round r of them at visit count base + r. */
  int c = m, base = 0;
  long pos = 0;
  for (;;) {
    int x = (int)((double)n / ((double)log2max * c));
    if (x < 1) x = 1;
    if (k < pos + (long)x * c) return base + (int)((k - pos) / c);
    pos += (long)x * c;
    base += x;
    c = c / 2 > 2 ? c / 2 : 2;
  }
}

void pb_mcts_gumbel_sigma(int na, const float *prior, const int *visits,
                          const double *q, double value, double c_visit,
                          double c_scale, double *sigma) {
  double sum_n = 0, sum_p = 0, sum_pq = 0;
  int max_n = 0;
  for (int c = 0; c < na; c++) {
    if (visits[c] > max_n) max_n = visits[c];
    if (visits[c] <= 0) continue;
    /* mctx floors the priors at the smallest float: a visited child of
     * prior 0 still counts. */
    double p = prior[c] > FLT_MIN ? prior[c] : FLT_MIN;
    sum_n += visits[c];
    sum_p += p;
    sum_pq += p * q[c];
  }
  double mixed = value;
  if (sum_n > 0) mixed = (value + sum_n * (sum_pq / sum_p)) / (sum_n + 1);
  /* Values lie in [-1, 1]: MuZero's known bounds for board games. */
  const double scale = (c_visit + max_n) * c_scale;
  for (int c = 0; c < na; c++) {
    double x = ((visits[c] > 0 ? q[c] : mixed) + 1.0) / 2.0;
    sigma[c] = (x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x) * scale;
  }
}

void pb_mcts_improved_policy(int na, const double *logits, const double *sigma,
                             double *pi) {
  double mx = -INFINITY;
  for (int c = 0; c < na; c++)
    if (logits[c] + sigma[c] > mx) mx = logits[c] + sigma[c];
  double sum = 0;
  for (int c = 0; c < na; c++) {
    pi[c] = isfinite(mx) ? exp(logits[c] + sigma[c] - mx) : 1.0;
    sum += pi[c];
  }
  for (int c = 0; c < na; c++) pi[c] /= sum;
}

double pb_mcts_forced_visits(double prior, int total) {
  double x = PB_MCTS_FORCED_K * prior * total;
  return x > 0 ? sqrt(x) : 0.0;
}

void pb_mcts_prune_forced(int na, const float *prior, const int *visits,
                          const double *q, double c_puct, double *out) {
  int best = 0, total = 0;
  for (int c = 0; c < na; c++) {
    total += visits[c];
    if (visits[c] > visits[best]) best = c;
  }
  const double sq = sqrt((double)total);
  const double top = q[best] + c_puct * prior[best] * sq / (1.0 + visits[best]);
  for (int c = 0; c < na; c++) {
    out[c] = visits[c];
    if (c == best || visits[c] <= 0) continue;
    int cap = (int)floor(pb_mcts_forced_visits(prior[c], total));
    int n = visits[c];
    while (cap > 0 && n > 0 &&
           q[c] + c_puct * prior[c] * sq / (1.0 + (n - 1)) < top) {
      n--;
      cap--;
    }
    out[c] = n <= 1 ? 0.0 : n;
  }
}
