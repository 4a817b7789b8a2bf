/* sprt.c - see sprt.h. */
#include "sprt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elo.h"

int pb_sprt_init(pb_sprt_t *t, double elo0, double elo1, double alpha,
                 double beta, pb_err_t *err) {
  if (t == NULL) return pb_err_set(err, PB_EINVAL, "sprt: NULL test");
  memset(t, 0, sizeof *t);
  if (!(fabs(elo0) <= PB_SPRT_ELO_MAX) || !(fabs(elo1) <= PB_SPRT_ELO_MAX))
    return pb_err_set(err, PB_EINVAL,
                      "sprt: elo0 and elo1 must lie in -%.0f..%.0f (got %g, "
                      "%g)",
                      PB_SPRT_ELO_MAX, PB_SPRT_ELO_MAX, elo0, elo1);
  if (!(elo0 < elo1))
    return pb_err_set(err, PB_EINVAL,
                      "sprt: elo0 must be below elo1 (got %g, %g)", elo0, elo1);
  if (!(alpha >= PB_SPRT_ERR_MIN && alpha <= PB_SPRT_ERR_MAX))
    return pb_err_set(err, PB_EINVAL, "sprt: alpha must lie in %g..%g (got %g)",
                      PB_SPRT_ERR_MIN, PB_SPRT_ERR_MAX, alpha);
  if (!(beta >= PB_SPRT_ERR_MIN && beta <= PB_SPRT_ERR_MAX))
    return pb_err_set(err, PB_EINVAL, "sprt: beta must lie in %g..%g (got %g)",
                      PB_SPRT_ERR_MIN, PB_SPRT_ERR_MAX, beta);
  t->elo0 = elo0;
  t->elo1 = elo1;
  t->alpha = alpha;
  t->beta = beta;
  t->s0 = pb_elo_expected(elo0);
  t->s1 = pb_elo_expected(elo1);
  t->lower = log(beta / (1.0 - alpha));
  t->upper = log((1.0 - beta) / alpha);
  return 0;
}

/* A whole decimal number (strtod, nothing left over, finite). */
static int parse_num(const char *s, size_t n, double *out) {
  char buf[64];
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end = NULL;
  errno = 0;
  double v = strtod(buf, &end);
  if (errno != 0 || end == buf || *end != '\0' || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int pb_sprt_parse(pb_sprt_t *t, const char *text, pb_err_t *err) {
  static const char *const names[4] = {"elo0", "elo1", "alpha", "beta"};
  double v[4] = {0, 0, 0.05, 0.05};
  if (t != NULL) memset(t, 0, sizeof *t);
  if (t == NULL || text == NULL)
    return pb_err_set(err, PB_EINVAL, "sprt: NULL argument");
  int k = 0;
  const char *p = text;
  for (;; k++) {
    size_t n = strcspn(p, ",");
    if (k == 4)
      return pb_err_set(err, PB_EINVAL,
                        "sprt: '%s': expected ELO0,ELO1 or "
                        "ELO0,ELO1,ALPHA,BETA (too many values)",
                        text);
    if (parse_num(p, n, &v[k]) != 0)
      return pb_err_set(err, PB_EINVAL,
                        "sprt: '%s': %s '%.*s' is not a number (expected "
                        "ELO0,ELO1[,ALPHA,BETA], e.g. 0,10 or 0,10,0.05,0.05)",
                        text, names[k], (int)(n < 40 ? n : 40), p);
    if (p[n] == '\0') break;
    p += n + 1;
  }
  if (k != 1 && k != 3)
    return pb_err_set(err, PB_EINVAL,
                      "sprt: '%s': expected ELO0,ELO1 or ELO0,ELO1,ALPHA,BETA "
                      "(%d values)",
                      text, k + 1);
  return pb_sprt_init(t, v[0], v[1], v[2], v[3], err);
}

/* g(lambda) = sum_j f_j d_j / (1 + lambda d_j), decreasing in lambda. */
static double score_eq(int k, const double *f, const double *d, double lambda,
                       double *slope) {
  double g = 0, gs = 0;
  for (int j = 0; j < k; j++) {
    double q = 1.0 + lambda * d[j];
    g += f[j] * d[j] / q;
    gs -= f[j] * d[j] * d[j] / (q * q);
  }
  if (slope != NULL) *slope = gs;
  return g;
}

void pb_sprt_mle_n(int k, const double *a, const double *f, double s,
                   double *p) {
  double d[PB_SPRT_OUTCOMES_MAX];
  double dmin = 0, dmax = 0;
  for (int j = 0; j < k; j++) {
    d[j] = a[j] - s;
    if (d[j] < dmin) dmin = d[j];
    if (d[j] > dmax) dmax = d[j];
  }
  /* Every 1 + lambda d_j > 0: lambda in (-1/dmax, -1/dmin). */
  double lo = dmax > 0 ? -1.0 / dmax : -1e300;
  double hi = dmin < 0 ? -1.0 / dmin : 1e300, lambda = 0.0;
  for (int it = 0; it < 200; it++) {
    double slope;
    double g = score_eq(k, f, d, lambda, &slope);
    if (g == 0.0) break;
    if (g > 0)
      lo = lambda;
    else
      hi = lambda;
    double next = slope < 0 ? lambda - g / slope : NAN;
    /* Newton inside the bracket, bisection otherwise. */
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (fabs(next - lambda) <= 1e-15 * (1.0 + fabs(lambda))) {
      lambda = next;
      break;
    }
    lambda = next;
  }
  for (int j = 0; j < k; j++) p[j] = f[j] / (1.0 + lambda * d[j]);
}

void pb_sprt_mle(const double f[3], double s, double p[3]) {
  static const double a[3] = {0.0, 0.5, 1.0};
  pb_sprt_mle_n(3, a, f, s, p);
}

/* The GSPRT's LLR for counts c[0..k) of outcomes scoring a[0..k). */
static double llr_n(const pb_sprt_t *t, int k, const double *a,
                    const int *counts) {
  double c[PB_SPRT_OUTCOMES_MAX], n = 0, raw = 0;
  for (int j = 0; j < k; j++) {
    if (counts[j] < 0) return 0.0;
    raw += counts[j];
    c[j] = counts[j] < 1e-3 ? 1e-3 : counts[j];
    n += c[j];
  }
  if (raw == 0) return 0.0;
  double f[PB_SPRT_OUTCOMES_MAX], p0[PB_SPRT_OUTCOMES_MAX],
      p1[PB_SPRT_OUTCOMES_MAX];
  for (int j = 0; j < k; j++) f[j] = c[j] / n;
  pb_sprt_mle_n(k, a, f, t->s0, p0);
  pb_sprt_mle_n(k, a, f, t->s1, p1);
  double sum = 0;
  for (int j = 0; j < k; j++) sum += f[j] * log(p1[j] / p0[j]);
  return n * sum;
}

double pb_sprt_llr(const pb_sprt_t *t, int wins, int draws, int losses) {
  static const double a[3] = {0.0, 0.5, 1.0};
  if (t == NULL) return 0.0;
  const int c[3] = {losses, draws, wins};
  return llr_n(t, 3, a, c);
}

double pb_sprt_llr_penta(const pb_sprt_t *t, const int penta[5]) {
  static const double a[5] = {0.0, 0.25, 0.5, 0.75, 1.0};
  if (t == NULL || penta == NULL) return 0.0;
  return llr_n(t, 5, a, penta);
}

int pb_sprt_decide(const pb_sprt_t *t, double llr) {
  if (t == NULL) return PB_SPRT_CONTINUE;
  if (llr <= t->lower) return PB_SPRT_H0;
  if (llr >= t->upper) return PB_SPRT_H1;
  return PB_SPRT_CONTINUE;
}

int pb_sprt_check(const pb_sprt_t *t, int wins, int draws, int losses,
                  double *llr) {
  double x = pb_sprt_llr(t, wins, draws, losses);
  if (llr != NULL) *llr = x;
  return pb_sprt_decide(t, x);
}

int pb_sprt_check_penta(const pb_sprt_t *t, const int penta[5], double *llr) {
  double x = pb_sprt_llr_penta(t, penta);
  if (llr != NULL) *llr = x;
  return pb_sprt_decide(t, x);
}

const char *pb_sprt_verdict(int decision) {
  switch (decision) {
    case PB_SPRT_H0:
      return "H0 accepted";
    case PB_SPRT_H1:
      return "H1 accepted";
    default:
      return "undecided";
  }
}
