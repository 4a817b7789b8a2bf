/* bench_util.h - what every benchmark program prints and parses the same
 * way: the clock of its rates, one table row, numeric options (read, as
 * every program's, with common/base/opts.h). Header-only: each bench
 * program is one file and includes it once. */
#ifndef PB_BENCH_UTIL_H
#define PB_BENCH_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn.h"
#include "opts.h"
#include "precision.h"

/* -p: tab-separated rows for bench/run; -w: wall time instead of CPU time
 * (programs without -w leave it 0). */
static int parseable __attribute__((unused));
static int use_wall __attribute__((unused));

/* The clock of every rate: CPU time of this process by default, because
 * on a shared machine wall time measures the other load as much as this
 * code; -w switches to wall-clock time. */
static inline double bench_clock(void) {
  struct timespec ts;
  clock_gettime(use_wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One table row; ratio <= 0 prints "-". */
static inline void bench_row(const char *figure, double value, const char *unit,
                double ratio, const char *baseline) {
  char r[32];
  if (ratio > 0) snprintf(r, sizeof r, "%.2fx", ratio);
  else snprintf(r, sizeof r, "-");
  if (parseable)
    printf("%s\t%.6g\t%s\t%s\t%s\n", figure, value, unit, r, baseline);
  else
    printf("%-40s %12.1f %-12s %9s  %s\n", figure, value, unit, r, baseline);
  fflush(stdout);
}

static inline int bench_parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static inline int bench_parse_double(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
}

/* Every bench's usage text, set by its main before parsing. */
static const char *bench_usage_text __attribute__((unused));
static inline void bench_usage(FILE *f) { fputs(bench_usage_text, f); }

/* The value s of option what (NULL: not given, *out kept) into *out, a
 * whole number in lo..hi; else says so (pb_opts_fail) and returns
 * PB_OPTS_USAGE. */
static inline int bench_opt_int(const pb_opts_t *o, const char *what,
                                const char *s, int lo, int hi, int *out) {
  if (s == NULL || bench_parse_int(s, lo, hi, out) == 0) return 0;
  return pb_opts_fail(o, "%s wants a whole number in %d..%d, not '%s'", what,
                      lo, hi, s);
}

/* bench_opt_int for a number in lo..hi. */
static inline int bench_opt_double(const pb_opts_t *o, const char *what,
                                   const char *s, double lo, double hi,
                                   double *out) {
  if (s == NULL || bench_parse_double(s, lo, hi, out) == 0) return 0;
  return pb_opts_fail(o, "%s wants a number in [%g, %g], not '%s'", what, lo,
                      hi, s);
}

/* -P of bench_spotcheck and bench_playcheck: "A,B", each fp32 or bf16,
 * into prec[0] and prec[1] (PB_NN_*). 0, or -1 for anything else. */
static inline int bench_parse_prec_pair(const char *s, int prec[2]) {
  char a[8] = "", b[8] = "";
  if (sscanf(s, "%7[^,],%7s", a, b) != 2) return -1;
  prec[0] = pb_precision_parse(a);
  prec[1] = pb_precision_parse(b);
  for (int i = 0; i < 2; i++)
    if (prec[i] < 0 || prec[i] > PB_NN_BF16) return -1;
  return 0;
}

/* -P of bench_search and bench_selfplay: "fp32,bf16" (also measure bf16,
 * *bf16 = 1) or "fp32" (*bf16 = 0); -1 for anything else. */
static inline int bench_parse_prec(const char *s, int *bf16) {
  if (!strcmp(s, "fp32,bf16")) *bf16 = 1;
  else if (!strcmp(s, "fp32")) *bf16 = 0;
  else return -1;
  return 0;
}

#endif
