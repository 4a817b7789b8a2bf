/* elo.c - Elo differences from win/draw/loss counts, and maximum-likelihood
 * ratings (one player against anchors; several players jointly).
 *
 * Workload: a handful of opponents per fit, a few fits per checkpoint;
 * clarity over speed (bisection, dense Newton). */
#include "elo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "invariant.h"

#include "err.h"

double pb_elo_expected(double diff) {
  return 1.0 / (1.0 + pow(10.0, -diff / 400.0));
}

double pb_elo_from_score(double s) {
  if (s < 1e-9) s = 1e-9;
  if (s > 1.0 - 1e-9) s = 1.0 - 1e-9;
  /* + 0.0: an even score is +0, not -400 * 0 = -0. */
  return -400.0 * log10(1.0 / s - 1.0) + 0.0;
}

char *pb_elo_format(char *buf, size_t n, double elo, int decimals, int sign) {
  if (buf == NULL || n == 0) return buf;
  if (decimals < 0) decimals = 0;
  if (decimals > 6) decimals = 6;
  snprintf(buf, n, sign ? "%+.*f" : "%.*f", decimals, elo);
  /* "-0", "-0.0": printf keeps the sign of a value that rounds to zero. */
  if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
    snprintf(buf, n, sign ? "%+.*f" : "%.*f", decimals, 0.0);
  return buf;
}

static double clamp(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

double pb_elo_interval_end(double s) {
  if (s >= 1.0) return INFINITY;
  if (s <= 0.0) return -INFINITY;
  return pb_elo_from_score(s);
}

int pb_elo_diff(int wins, int draws, int losses, double *elo, double *lo,
                double *hi) {
  if (elo != NULL) *elo = 0.0;
  if (lo != NULL) *lo = 0.0;
  if (hi != NULL) *hi = 0.0;
  if (wins < 0 || draws < 0 || losses < 0) return PB_EINVAL;
  double n = (double)wins + (double)draws + (double)losses;
  if (n <= 0.0) return PB_EINVAL;
  double s = (wins + 0.5 * draws) / n;
  /* Per-game scores are 1, 1/2 and 0: their variance around the mean. */
  double var = (wins * (1.0 - s) * (1.0 - s) + draws * (0.5 - s) * (0.5 - s) +
                losses * s * s) /
               n;
  double eps = 0.5 / n;
  double sc = clamp(s, eps, 1.0 - eps);
  if (var <= 0.0) var = sc * (1.0 - sc);
  double half = 1.96 * sqrt(var / n);
  if (elo != NULL) *elo = pb_elo_from_score(sc);
  if (lo != NULL) *lo = pb_elo_interval_end(sc - half);
  if (hi != NULL) *hi = pb_elo_interval_end(sc + half);
  return 0;
}

/* ---------------------------------------------------------------- fits */

/* Natural-log slope of the model: p = 1 / (1 + exp(-K d)). */
#define PB__ELO_K (M_LN10 / 400.0)
#define PB__ELO_MAX_RATING 1e6
#define PB__ELO_MAX_PLAYERS 1024

/* log(1 + e^x) without overflow. */
static double softplus(double x) {
  return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

double pb_elo_info(double diff) {
  double p = pb_elo_expected(diff);
  return PB__ELO_K * PB__ELO_K * p * (1.0 - p);
}

/* Points s out of n games by a player rated d above its opponent:
 * s log p + (n - s) log(1 - p), computed in log space so that a lopsided
 * pairing does not turn into log(0). */
static double pair_loglik(double s, double n, double d) {
  double z = PB__ELO_K * d;
  double l = 0.0;
  if (s > 0.0) l -= s * softplus(-z);
  if (n - s > 0.0) l -= (n - s) * softplus(z);
  return l;
}

/* The records as points and games, possibly adjusted (see fit_one). */
typedef struct {
  double r, s, n;
} one_rec_t;

static double one_loglik(const one_rec_t *v, int m, double R) {
  double l = 0.0;
  for (int j = 0; j < m; j++) l += pair_loglik(v[j].s, v[j].n, R - v[j].r);
  return l;
}

double pb_elo_loglik(const pb_elo_record_t *recs, int n, double rating) {
  double l = 0.0;
  for (int j = 0; recs != NULL && j < n; j++) {
    const pb_elo_record_t *r = &recs[j];
    double g = (double)r->wins + r->draws + r->losses;
    l += pair_loglik(r->wins + 0.5 * r->draws, g, rating - r->opp_rating);
  }
  return l;
}

/* Walks from x0 (where L >= target) in direction dir until L < target,
 * then bisects for the crossing. L is concave, so the crossing is unique. */
static double profile_bound(const one_rec_t *v, int m, double x0, double dir,
                            double step, double target) {
  double a = x0, b = x0 + dir * step;
  for (int i = 0; i < 80 && one_loglik(v, m, b) >= target; i++) {
    a = b;
    step *= 2.0;
    b = x0 + dir * step;
  }
  for (int i = 0; i < 200 && fabs(b - a) > 1e-9; i++) {
    double c = 0.5 * (a + b);
    if (one_loglik(v, m, c) >= target)
      a = c;
    else
      b = c;
  }
  return 0.5 * (a + b);
}

int pb_elo_fit_one(const pb_elo_record_t *recs, int n, pb_elo_fit_t *fit,
                   pb_err_t *err) {
  if (fit != NULL) memset(fit, 0, sizeof *fit);
  if (fit == NULL || (recs == NULL && n > 0) || n < 0)
    return pb_err_set(err, PB_EINVAL, "elo fit: NULL argument or n < 0");
  double N = 0.0, S = 0.0, rmin = 0.0, rmax = 0.0;
  int m = 0;
  for (int j = 0; j < n; j++) {
    const pb_elo_record_t *r = &recs[j];
    if (r->wins < 0 || r->draws < 0 || r->losses < 0)
      return pb_err_set(err, PB_EINVAL,
                        "elo fit: negative count in record %d (W=%d D=%d "
                        "L=%d)",
                        j, r->wins, r->draws, r->losses);
    if (!isfinite(r->opp_rating) || fabs(r->opp_rating) > PB__ELO_MAX_RATING)
      return pb_err_set(err, PB_EINVAL,
                        "elo fit: opponent rating of record %d is not a "
                        "finite number within +-1e6 (%g)",
                        j, r->opp_rating);
    double g = (double)r->wins + r->draws + r->losses;
    if (g == 0.0) continue;
    if (m == 0 || r->opp_rating < rmin) rmin = r->opp_rating;
    if (m == 0 || r->opp_rating > rmax) rmax = r->opp_rating;
    m++;
    N += g;
    S += r->wins + 0.5 * r->draws;
  }
  if (m == 0) return pb_err_set(err, PB_EINVAL, "elo fit: no games to fit");
  if (N > 2147483647.0)
    return pb_err_set(err, PB_EINVAL, "elo fit: more than 2^31 games");
  one_rec_t *v = malloc((size_t)m * sizeof *v);
  if (v == NULL) return pb_err_set(err, PB_ENOMEM, "elo fit: out of memory");
  int flags = 0;
  double shift = 0.0; /* points moved toward the middle, per game */
  if (S == 0.0) {
    flags = PB_ELO_ALL_LOSSES | PB_ELO_ADJUSTED;
    shift = 0.5 / N;
  } else if (S == N) {
    flags = PB_ELO_ALL_WINS | PB_ELO_ADJUSTED;
    shift = -0.5 / N;
  }
  m = 0;
  for (int j = 0; j < n; j++) {
    const pb_elo_record_t *r = &recs[j];
    double g = (double)r->wins + r->draws + r->losses;
    if (g == 0.0) continue;
    v[m].r = r->opp_rating;
    v[m].n = g;
    v[m].s = r->wins + 0.5 * r->draws + shift * g;
    m++;
  }
  double St = S + shift * N;

  /* Score equation: sum n_j p_j(R) = S, increasing in R. The bracket holds
   * the root for any S in [1/2, N - 1/2] and N < 2^31 (about 3700 points
   * beyond the opponents). */
  double a = rmin - 8000.0, b = rmax + 8000.0;
  for (int it = 0; it < 200 && b - a > 1e-10; it++) {
    double c = 0.5 * (a + b), e = 0.0;
    for (int j = 0; j < m; j++) e += v[j].n * pb_elo_expected(c - v[j].r);
    if (e < St)
      a = c;
    else
      b = c;
  }
  double R = 0.5 * (a + b), info = 0.0;
  for (int j = 0; j < m; j++) info += v[j].n * pb_elo_info(R - v[j].r);
  double se = 1.0 / sqrt(info);
  double target = one_loglik(v, m, R) - PB_ELO_HALF_CHI2_95;
  double step = 2.0 * se > 1.0 ? 2.0 * se : 1.0;
  fit->rating = R;
  fit->se = se;
  fit->lo = profile_bound(v, m, R, -1.0, step, target);
  fit->hi = profile_bound(v, m, R, +1.0, step, target);
  fit->score = S;
  fit->games = (int)N;
  fit->flags = flags;
  free(v);
  return 0;
}

/* Cholesky factorisation in place of the symmetric positive definite m x m
 * matrix A (lower triangle used); returns -1 if A is not positive
 * definite. */
static int cholesky(double *A, int m) {
  for (int j = 0; j < m; j++) {
    double d = A[j * m + j];
    for (int k = 0; k < j; k++) d -= A[j * m + k] * A[j * m + k];
    if (!(d > 0.0)) return -1;
    d = sqrt(d);
    A[j * m + j] = d;
    for (int i = j + 1; i < m; i++) {
      double x = A[i * m + j];
      for (int k = 0; k < j; k++) x -= A[i * m + k] * A[j * m + k];
      A[i * m + j] = x / d;
    }
  }
  return 0;
}

/* Solves L L^T x = b in place (L from cholesky). */
static void chol_solve(const double *L, int m, double *b) {
  pb_assert(m >= 1); /* cholesky made L: a positive diagonal */
  for (int i = 0; i < m; i++) {
    double x = b[i];
    for (int k = 0; k < i; k++) x -= L[i * m + k] * b[k];
    b[i] = x / L[i * m + i];
  }
  for (int i = m - 1; i >= 0; i--) {
    double x = b[i];
    for (int k = i + 1; k < m; k++) x -= L[k * m + i] * b[k];
    b[i] = x / L[i * m + i];
  }
}

typedef struct {
  int P;
  double *n, *s; /* [P][P]: games, and points of row against column */
} joint_t;

static double joint_loglik(const joint_t *J, const double *x) {
  double l = 0.0;
  for (int i = 0; i < J->P; i++)
    for (int j = i + 1; j < J->P; j++) {
      double n = J->n[i * J->P + j];
      if (n > 0.0) l += pair_loglik(J->s[i * J->P + j], n, x[i] - x[j]);
    }
  return l;
}

/* Marks in seen[] every player reachable from `from` along edges i -> j
 * where edge(i, j) holds; returns how many were reached. */
static int reach(const joint_t *J, int from, int dir, int *seen, int *stack) {
  int P = J->P, top = 0, count = 1;
  memset(seen, 0, (size_t)P * sizeof *seen);
  seen[from] = 1;
  stack[top++] = from;
  while (top > 0) {
    int i = stack[--top];
    pb_assert(i >= 0 && i < P && top < P); /* each player stacked once */
    for (int j = 0; j < P; j++) {
      if (seen[j] || J->n[i * P + j] <= 0.0) continue;
      /* dir 0: any games; dir 1: i scored against j; dir -1: j scored
       * against i. */
      double pts = dir > 0 ? J->s[i * P + j] : J->s[j * P + i];
      if (dir != 0 && pts <= 0.0) continue;
      seen[j] = 1;
      stack[top++] = j;
      count++;
    }
  }
  return count;
}

/* Free player k (all but the anchor) -> player index. */
static int free_player(int k, int anchor) {
  pb_assert(k >= 0 && anchor >= 0);
  return k < anchor ? k : k + 1;
}

/* Fills A (the negated Hessian over the free players, m x m) and g (the
 * gradient) of the joint log-likelihood at x. */
static void joint_derivs(const joint_t *J, const double *x, int anchor,
                         double *A, double *g) {
  int P = J->P, m = P - 1;
  memset(A, 0, (size_t)m * m * sizeof *A);
  memset(g, 0, (size_t)m * sizeof *g);
  for (int a = 0; a < m; a++) {
    int i = free_player(a, anchor);
    for (int j = 0; j < P; j++) {
      double n = J->n[i * P + j];
      if (j == i || n <= 0.0) continue;
      double p = pb_elo_expected(x[i] - x[j]);
      g[a] += PB__ELO_K * (J->s[i * P + j] - n * p);
      double w = PB__ELO_K * PB__ELO_K * n * p * (1.0 - p);
      A[a * m + a] += w;
      if (j != anchor) {
        int b = j < anchor ? j : j - 1;
        A[a * m + b] -= w;
      }
    }
  }
}

/* Adds the pairs' games to J and each player's games, score and
 * all-wins / all-losses flags to fits. Returns 0, or PB_EINVAL for a bad
 * pair or a player with more than 2^31 games. */
static int joint_tally(joint_t *J, const pb_elo_pair_t *pairs, int npairs,
                       pb_elo_fit_t *fits, pb_err_t *err) {
  int P = J->P;
  for (int k = 0; k < npairs; k++) {
    const pb_elo_pair_t *q = &pairs[k];
    if (q->a < 0 || q->a >= P || q->b < 0 || q->b >= P || q->a == q->b ||
        q->a_wins < 0 || q->draws < 0 || q->a_losses < 0)
      return pb_err_set(err, PB_EINVAL,
                        "elo joint fit: pair %d is bad (players %d and %d of "
                        "%d, W=%d D=%d L=%d)",
                        k, q->a, q->b, P, q->a_wins, q->draws, q->a_losses);
    double n = (double)q->a_wins + q->draws + q->a_losses;
    double s = q->a_wins + 0.5 * q->draws;
    pb_assert(s >= 0.0 && s <= n); /* a score is within its games */
    J->n[q->a * P + q->b] += n;
    J->n[q->b * P + q->a] += n;
    J->s[q->a * P + q->b] += s;
    J->s[q->b * P + q->a] += n - s;
  }
  for (int i = 0; i < P; i++) {
    double n = 0.0, s = 0.0;
    for (int j = 0; j < P; j++) {
      n += J->n[i * P + j];
      s += J->s[i * P + j];
    }
    if (n > 2147483647.0)
      return pb_err_set(err, PB_EINVAL,
                        "elo joint fit: player %d has more "
                        "than 2^31 games",
                        i);
    fits[i].games = (int)n;
    fits[i].score = s;
    if (n > 0.0 && s == 0.0) fits[i].flags |= PB_ELO_ALL_LOSSES;
    if (n > 0.0 && s == n) fits[i].flags |= PB_ELO_ALL_WINS;
  }
  return 0;
}

/* Checks that every player has a chain of games to the anchor (PB_EINVAL
 * naming one that has not), and gives one-sided pairs half a point when
 * the maximum would not exist (flagging them PB_ELO_ADJUSTED). seen and
 * stack are scratch arrays of J->P ints. */
static int joint_connect(joint_t *J, int anchor, pb_elo_fit_t *fits, int *seen,
                         int *stack, pb_err_t *err) {
  int P = J->P;
  if (reach(J, anchor, 0, seen, stack) < P) {
    int lost = 0;
    while (seen[lost]) lost++;
    return pb_err_set(err, PB_EINVAL,
                      "elo joint fit: player %d has no chain of games to the "
                      "anchor (player %d); its rating is undetermined",
                      lost, anchor);
  }
  /* The maximum exists iff every player can reach every other along "took
   * points from" edges (Zermelo; Ford 1957). If not, one-sided pairs get
   * half a point, which makes every played pair two-way. */
  if (reach(J, anchor, 1, seen, stack) < P ||
      reach(J, anchor, -1, seen, stack) < P) {
    for (int i = 0; i < P; i++)
      for (int j = 0; j < P; j++) {
        double n = J->n[i * P + j], s = J->s[i * P + j];
        if (n <= 0.0 || (s > 0.0 && s < n)) continue;
        J->s[i * P + j] = s == 0.0 ? 0.5 : n - 0.5;
        fits[i].flags |= PB_ELO_ADJUSTED;
      }
  }
  return 0;
}

/* Newton's method with step halving from every rating at anchor_rating;
 * leaves the maximum in x. xt (P), A (m x m) and g (m) are scratch.
 * Returns 0, or PB_ERANGE when it does not converge. */
static int joint_newton(const joint_t *J, int anchor, double anchor_rating,
                        double *x, double *xt, double *A, double *g,
                        pb_err_t *err) {
  int P = J->P, m = P - 1;
  for (int i = 0; i < P; i++) x[i] = anchor_rating;
  double L = joint_loglik(J, x);
  int converged = m == 0;
  for (int it = 0; it < 500 && !converged; it++) {
    joint_derivs(J, x, anchor, A, g);
    if (cholesky(A, m) != 0) break;
    chol_solve(A, m, g); /* g is now the Newton step */
    double t = 1.0, Lt = L, dmax = 0.0;
    for (int h = 0; h < 60; h++, t *= 0.5) {
      memcpy(xt, x, (size_t)P * sizeof *x);
      for (int a = 0; a < m; a++) xt[free_player(a, anchor)] += t * g[a];
      Lt = joint_loglik(J, xt);
      if (Lt >= L - 1e-12 * fabs(L)) break;
    }
    for (int a = 0; a < m; a++)
      if (fabs(t * g[a]) > dmax) dmax = fabs(t * g[a]);
    memcpy(x, xt, (size_t)P * sizeof *x);
    L = Lt;
    converged = dmax < 1e-7;
  }
  if (!converged)
    return pb_err_set(err, PB_ERANGE,
                      "elo joint fit: Newton's method did not converge");
  return 0;
}

/* The ratings x into fits, with standard errors from the information
 * matrix at x and the 95% intervals. A (m x m) and g (m) are scratch.
 * Returns 0, or PB_ERANGE when the information matrix is singular. */
static int joint_intervals(const joint_t *J, int anchor, const double *x,
                           double *A, double *g, pb_elo_fit_t *fits,
                           pb_err_t *err) {
  int P = J->P, m = P - 1;
  joint_derivs(J, x, anchor, A, g);
  if (m > 0 && cholesky(A, m) != 0)
    return pb_err_set(err, PB_ERANGE,
                      "elo joint fit: the information matrix is singular");
  for (int a = 0; a < m; a++) {
    /* Diagonal of the inverse information: solve for unit vectors. */
    memset(g, 0, (size_t)m * sizeof *g);
    g[a] = 1.0;
    chol_solve(A, m, g);
    int i = free_player(a, anchor);
    fits[i].se = sqrt(g[a]);
  }
  for (int i = 0; i < P; i++) {
    fits[i].rating = x[i];
    fits[i].lo = x[i] - PB_ELO_Z95 * fits[i].se;
    fits[i].hi = x[i] + PB_ELO_Z95 * fits[i].se;
  }
  return 0;
}

int pb_elo_fit_joint(int nplayers, const pb_elo_pair_t *pairs, int npairs,
                     int anchor, double anchor_rating, pb_elo_fit_t *fits,
                     pb_err_t *err) {
  if (fits == NULL || nplayers < 1 || nplayers > PB__ELO_MAX_PLAYERS ||
      npairs < 0 || (pairs == NULL && npairs > 0))
    return pb_err_set(err, PB_EINVAL,
                      "elo joint fit: bad arguments (%d players, at most "
                      "%d; %d pairs)",
                      nplayers, PB__ELO_MAX_PLAYERS, npairs);
  memset(fits, 0, (size_t)nplayers * sizeof *fits);
  if (anchor < 0 || anchor >= nplayers || !isfinite(anchor_rating) ||
      fabs(anchor_rating) > PB__ELO_MAX_RATING)
    return pb_err_set(err, PB_EINVAL,
                      "elo joint fit: anchor %d (rating %g) is not one of "
                      "the %d players or not a finite rating within +-1e6",
                      anchor, anchor_rating, nplayers);
  int P = nplayers, m = P - 1, rc = 0;
  joint_t J = {P, calloc((size_t)P * P, sizeof(double)),
               calloc((size_t)P * P, sizeof(double))};
  double *x = calloc((size_t)P, sizeof *x), *xt = calloc((size_t)P, sizeof *xt);
  double *A = calloc((size_t)m * m + 1, sizeof *A);
  double *g = calloc((size_t)m + 1, sizeof *g);
  int *seen = calloc((size_t)P, sizeof *seen);
  int *stack = calloc((size_t)P, sizeof *stack);
  if (!J.n || !J.s || !x || !xt || !A || !g || !seen || !stack)
    rc = pb_err_set(err, PB_ENOMEM, "elo joint fit: out of memory");
  if (rc == 0) rc = joint_tally(&J, pairs, npairs, fits, err);
  if (rc == 0) rc = joint_connect(&J, anchor, fits, seen, stack, err);
  if (rc == 0) rc = joint_newton(&J, anchor, anchor_rating, x, xt, A, g, err);
  if (rc == 0) rc = joint_intervals(&J, anchor, x, A, g, fits, err);
  if (rc != 0) memset(fits, 0, (size_t)nplayers * sizeof *fits);
  free(J.n);
  free(J.s);
  free(x);
  free(xt);
  free(A);
  free(g);
  free(seen);
  free(stack);
  return rc;
}

/* ---- the paper's anchors ---------------------------------------------- */

static const struct {
  const char *spec;
  double rating;
} default_anchors[] = {
    {"random", 1000.0},
    {"lookahead:1", 1183.0},
    {"lookahead:2", 1501.0},
    {"lookahead:3", 1603.0},
};

int pb_elo_default_anchor(const char *spec, double *rating) {
  for (size_t i = 0;
       spec != NULL && i < sizeof default_anchors / sizeof default_anchors[0];
       i++)
    if (!strcmp(spec, default_anchors[i].spec)) {
      if (rating != NULL) *rating = default_anchors[i].rating;
      return 0;
    }
  return PB_ENOTFOUND;
}
