/* elotable.c - elo.csv: the ratings of a run's versions, read back
 * strictly and written atomically.
 *
 * Workload: one row per rated checkpoint (hundreds in a long run), read by
 * the evaluator at start, by the learner for /metrics and by the web page;
 * a whole-file read and rewrite each time is cheap next to the games. */
#include "elotable.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elo.h"
#include "lines.h"
#include "rundir.h"
#include "util.h"

#define PB__CSV_MAX (64u << 20)

struct pb_elotable {
  int n_opp;
  int file_extra; /* while loading: the file has the trailing columns */
  char opp[PB_ELOTABLE_MAX_OPPONENTS][PB_ELOTABLE_SPEC_MAX];
  pb_elotable_row_t *rows;
  int n, cap;
};

static const char *const fixed_cols[] = {"iteration", "version", "elo",
                                         "elo_lo",    "elo_hi",  "note",
                                         "games",     "seconds"};
#define PB__NFIXED ((int)(sizeof fixed_cols / sizeof fixed_cols[0]))

/* The columns after the opponents' triples (absent in older files). */
static const char *const extra_cols[] = {"acc_q", "acc_v", "acc_beam",
                                         "minutes"};
#define PB__NEXTRA ((int)(sizeof extra_cols / sizeof extra_cols[0]))

const char *pb_elotable_note(int flags) {
  if (flags & PB_ELOTABLE_NO_ANCHOR) return "no_anchor";
  if (flags & PB_ELO_ALL_WINS) return "all_wins";
  if (flags & PB_ELO_ALL_LOSSES) return "all_losses";
  return "";
}

pb_elotable_t *pb_elotable_new(
    const char (*opponents)[PB_ELOTABLE_SPEC_MAX], int n, pb_err_t *err) {
  if (opponents == NULL || n < 1 || n > PB_ELOTABLE_MAX_OPPONENTS) {
    pb_err_set(err, PB_EINVAL, "elo table: %d opponents (1..%d)", n,
               PB_ELOTABLE_MAX_OPPONENTS);
    return NULL;
  }
  for (int j = 0; j < n; j++) {
    size_t len = strnlen(opponents[j], PB_ELOTABLE_SPEC_MAX);
    if (len == 0 || len == PB_ELOTABLE_SPEC_MAX ||
        strpbrk(opponents[j], ",\"\r\n") != NULL) {
      pb_err_set(err, PB_EINVAL,
                 "elo table: opponent %d is empty, too long or holds a "
                 "comma, quote or line break",
                 j);
      return NULL;
    }
  }
  pb_elotable_t *t = calloc(1, sizeof *t);
  if (t == NULL) {
    pb_err_set(err, PB_ENOMEM, "elo table: out of memory");
    return NULL;
  }
  t->n_opp = n;
  memcpy(t->opp, opponents, (size_t)n * sizeof t->opp[0]);
  return t;
}

void pb_elotable_destroy(pb_elotable_t **t) {
  if (t == NULL || *t == NULL) return;
  free((*t)->rows);
  free(*t);
  *t = NULL;
}

int pb_elotable_count(const pb_elotable_t *t) {
  return t != NULL ? t->n : 0;
}

const pb_elotable_row_t *pb_elotable_row(const pb_elotable_t *t,
                                             int i) {
  return t != NULL && i >= 0 && i < t->n ? &t->rows[i] : NULL;
}

const pb_elotable_row_t *pb_elotable_find(const pb_elotable_t *t,
                                              uint64_t version) {
  int lo = 0, hi = t != NULL ? t->n - 1 : -1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    uint64_t v = t->rows[mid].version;
    if (v == version) return &t->rows[mid];
    if (v < version)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

int pb_elotable_put(pb_elotable_t *t, const pb_elotable_row_t *row,
                         pb_err_t *err) {
  if (t == NULL || row == NULL || row->n_opponents != t->n_opp)
    return pb_err_set(err, PB_EINVAL,
                      "elo table: row has %d opponents, the table %d",
                      row ? row->n_opponents : -1, t ? t->n_opp : -1);
  int k = 0;
  while (k < t->n && t->rows[k].version < row->version) k++;
  if (k < t->n && t->rows[k].version == row->version) {
    t->rows[k] = *row;
    return 0;
  }
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 16;
    pb_elotable_row_t *nr = realloc(t->rows, (size_t)cap * sizeof *nr);
    if (nr == NULL) return pb_err_set(err, PB_ENOMEM, "elo table: no memory");
    t->rows = nr;
    t->cap = cap;
  }
  memmove(&t->rows[k + 1], &t->rows[k], (size_t)(t->n - k) * sizeof *t->rows);
  t->rows[k] = *row;
  t->n++;
  return 0;
}

static void csv_elo(FILE *f, double v) {
  char buf[64];
  if (isfinite(v))
    fprintf(f, ",%s", pb_elo_format(buf, sizeof buf, v, 1, 0)); /* no -0.0 */
  else
    fputc(',', f);
}

int pb_elotable_csv(const pb_elotable_t *t, char **out, size_t *len,
                         pb_err_t *err) {
  if (out != NULL) *out = NULL;
  if (t == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "elo table: NULL argument");
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (f == NULL) return pb_err_set(err, PB_ENOMEM, "elo table: no memory");
  for (int c = 0; c < PB__NFIXED; c++)
    fprintf(f, "%s%s", c ? "," : "", fixed_cols[c]);
  for (int j = 0; j < t->n_opp; j++)
    fprintf(f, ",%s_w,%s_d,%s_l", t->opp[j], t->opp[j], t->opp[j]);
  for (int c = 0; c < PB__NEXTRA; c++) fprintf(f, ",%s", extra_cols[c]);
  fputc('\n', f);
  for (int i = 0; i < t->n; i++) {
    const pb_elotable_row_t *r = &t->rows[i];
    fprintf(f, "%llu,%llu", (unsigned long long)r->iteration,
            (unsigned long long)r->version);
    csv_elo(f, r->elo);
    csv_elo(f, r->lo);
    csv_elo(f, r->hi);
    fprintf(f, ",%s,%d,%.2f", pb_elotable_note(r->flags), r->games, r->seconds);
    for (int j = 0; j < t->n_opp; j++)
      fprintf(f, ",%d,%d,%d", r->wdl[j][0], r->wdl[j][1], r->wdl[j][2]);
    const double ex[PB__NEXTRA] = {r->acc_q, r->acc_v, r->acc_beam, r->minutes};
    for (int c = 0; c < PB__NEXTRA; c++)
      if (isfinite(ex[c]))
        fprintf(f, c < 3 ? ",%.3f" : ",%.2f", ex[c]);
      else
        fputc(',', f);
    fputc('\n', f);
  }
  if (fclose(f) != 0 || buf == NULL) {
    free(buf);
    return pb_err_set(err, PB_ENOMEM, "elo table: no memory");
  }
  *out = buf;
  if (len != NULL) *len = n;
  return 0;
}

int pb_elotable_save(const pb_elotable_t *t, const char *path,
                          pb_err_t *err) {
  char *text = NULL;
  size_t len = 0;
  int rc = pb_elotable_csv(t, &text, &len, err);
  if (rc == 0) rc = pb_write_file(path, text, len, err);
  free(text);
  return rc;
}

/* Splits line (modified in place) at commas into at most max fields;
 * returns the number of fields, or max + 1 if there are more. */
static int split_fields(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    if (n == max) return max + 1;
    fields[n++] = p;
    char *c = strchr(p, ',');
    if (c == NULL) return n;
    *c = '\0';
    p = c + 1;
  }
}

static int parse_u64(const char *s, uint64_t *out) {
  if (*s < '0' || *s > '9') return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0') return -1;
  *out = v;
  return 0;
}

static int parse_count(const char *s, int *out) {
  uint64_t v;
  if (parse_u64(s, &v) != 0 || v > 2000000000ULL) return -1;
  *out = (int)v;
  return 0;
}

/* "" -> NAN, else a finite number. */
static int parse_elo(const char *s, double *out) {
  if (*s == '\0') {
    *out = NAN;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

/* The header's opponents, comma-joined, for messages. */
static void join_opponents(char *buf, size_t n, char **fields, int nf) {
  size_t k = 0;
  buf[0] = '\0';
  for (int c = PB__NFIXED; c + 2 < nf && k < n; c += 3) {
    size_t len = strlen(fields[c]);
    int w = snprintf(buf + k, n - k, "%s%.*s", k ? "," : "",
                     (int)(len >= 2 ? len - 2 : len), fields[c]);
    if (w < 0) break;
    k += (size_t)w;
  }
}

/* Checks the header line; PB_ECORRUPT if it is not ours, PB_EMISMATCH if
 * it names other opponents. */
static int check_header(pb_elotable_t *t, char *line,
                        const char *path, pb_err_t *err) {
  enum { MAXF = PB__NFIXED + 3 * PB_ELOTABLE_MAX_OPPONENTS + PB__NEXTRA };
  char *f[MAXF + 1];
  int nf = split_fields(line, f, MAXF);
  /* The trailing columns, if this file has them. */
  t->file_extra = nf >= PB__NFIXED + PB__NEXTRA && nf <= MAXF;
  for (int c = 0; t->file_extra && c < PB__NEXTRA; c++)
    t->file_extra = !strcmp(f[nf - PB__NEXTRA + c], extra_cols[c]);
  if (t->file_extra) nf -= PB__NEXTRA;
  int ours = nf >= PB__NFIXED + 3 && nf <= MAXF && (nf - PB__NFIXED) % 3 == 0;
  for (int c = 0; ours && c < PB__NFIXED; c++)
    ours = !strcmp(f[c], fixed_cols[c]);
  for (int c = PB__NFIXED; ours && c + 2 < nf; c += 3) {
    size_t len = strlen(f[c]);
    ours =
        len > 2 && !strcmp(f[c] + len - 2, "_w") && strlen(f[c + 1]) == len &&
        strlen(f[c + 2]) == len && !strncmp(f[c], f[c + 1], len - 2) &&
        !strncmp(f[c], f[c + 2], len - 2) &&
        !strcmp(f[c + 1] + len - 2, "_d") && !strcmp(f[c + 2] + len - 2, "_l");
  }
  if (!ours)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: line 1 is not the header of an elo.csv written by "
                      "probs-evaluator; refusing to overwrite it (move it "
                      "away to start a new table)",
                      path);
  int same = (nf - PB__NFIXED) / 3 == t->n_opp;
  for (int j = 0; same && j < t->n_opp; j++) {
    const char *h = f[PB__NFIXED + 3 * j];
    size_t len = strlen(h) - 2;
    same = strlen(t->opp[j]) == len && !strncmp(h, t->opp[j], len);
  }
  if (!same) {
    char theirs[1200], ours_s[1200];
    join_opponents(theirs, sizeof theirs, f, nf);
    size_t k = 0;
    ours_s[0] = '\0';
    for (int j = 0; j < t->n_opp && k < sizeof ours_s; j++) {
      int w = snprintf(ours_s + k, sizeof ours_s - k, "%s%s", j ? "," : "",
                       t->opp[j]);
      if (w < 0) break;
      k += (size_t)w;
    }
    return pb_err_set(err, PB_EMISMATCH,
                      "%s was written for opponents %s, but this evaluation "
                      "plays %s; use the same eval.opponents or move the "
                      "file away",
                      path, theirs, ours_s);
  }
  return 0;
}

static int parse_row(const pb_elotable_t *t, char *line, int lineno,
                     const char *path, pb_elotable_row_t *r, pb_err_t *err) {
  enum { MAXF = PB__NFIXED + 3 * PB_ELOTABLE_MAX_OPPONENTS + PB__NEXTRA };
  char *f[MAXF + 1];
  int want = PB__NFIXED + 3 * t->n_opp + (t->file_extra ? PB__NEXTRA : 0);
  int nf = split_fields(line, f, MAXF);
  if (nf != want)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s:%d: %d fields where the header has %d", path, lineno,
                      nf > MAXF ? MAXF + 1 : nf, want);
  memset(r, 0, sizeof *r);
  r->n_opponents = t->n_opp;
  const char *what = NULL;
  if (parse_u64(f[0], &r->iteration) != 0)
    what = "iteration";
  else if (parse_u64(f[1], &r->version) != 0)
    what = "version";
  else if (parse_elo(f[2], &r->elo) != 0)
    what = "elo";
  else if (parse_elo(f[3], &r->lo) != 0)
    what = "elo_lo";
  else if (parse_elo(f[4], &r->hi) != 0)
    what = "elo_hi";
  else if (parse_count(f[6], &r->games) != 0)
    what = "games";
  if (what == NULL) {
    char *end = NULL;
    errno = 0;
    r->seconds = strtod(f[7], &end);
    if (errno != 0 || end == f[7] || *end != '\0' || !isfinite(r->seconds) ||
        r->seconds < 0)
      what = "seconds";
  }
  if (what == NULL) {
    if (!strcmp(f[5], ""))
      r->flags = 0;
    else if (!strcmp(f[5], "all_wins"))
      r->flags = PB_ELO_ALL_WINS | PB_ELO_ADJUSTED;
    else if (!strcmp(f[5], "all_losses"))
      r->flags = PB_ELO_ALL_LOSSES | PB_ELO_ADJUSTED;
    else if (!strcmp(f[5], "no_anchor"))
      r->flags = PB_ELOTABLE_NO_ANCHOR;
    else
      what = "note";
  }
  long long sum = 0;
  for (int j = 0; what == NULL && j < t->n_opp; j++)
    for (int k = 0; k < 3 && what == NULL; k++) {
      if (parse_count(f[PB__NFIXED + 3 * j + k], &r->wdl[j][k]) != 0)
        what = "a win/draw/loss count";
      sum += r->wdl[j][k];
    }
  r->acc_q = r->acc_v = r->acc_beam = r->minutes = NAN;
  double *ex[PB__NEXTRA] = {&r->acc_q, &r->acc_v, &r->acc_beam, &r->minutes};
  for (int c = 0; what == NULL && t->file_extra && c < PB__NEXTRA; c++) {
    const char *s = f[PB__NFIXED + 3 * t->n_opp + c];
    if (parse_elo(s, ex[c]) != 0 ||
        (c < 3 && isfinite(*ex[c]) && (*ex[c] < 0 || *ex[c] > 1)) ||
        (c == 3 && isfinite(*ex[c]) && *ex[c] < 0))
      what = extra_cols[c];
  }
  if (what != NULL)
    return pb_err_set(err, PB_ECORRUPT, "%s:%d: bad %s", path, lineno, what);
  if (sum != r->games)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s:%d: games is %d but the counts add up to %lld", path,
                      lineno, r->games, sum);
  if (isfinite(r->elo) != isfinite(r->lo) ||
      isfinite(r->elo) != isfinite(r->hi) ||
      (isfinite(r->elo) && !(r->lo <= r->elo && r->elo <= r->hi)) ||
      (!isfinite(r->elo)) != ((r->flags & PB_ELOTABLE_NO_ANCHOR) != 0))
    return pb_err_set(err, PB_ECORRUPT,
                      "%s:%d: elo, elo_lo, elo_hi and note do not agree", path,
                      lineno);
  return 0;
}

pb_elotable_t *pb_elotable_load(
    const char *path, const char (*opponents)[PB_ELOTABLE_SPEC_MAX], int n,
    pb_err_t *err) {
  if (path == NULL) {
    pb_err_set(err, PB_EINVAL, "elo table: NULL path");
    return NULL;
  }
  pb_elotable_t *t = pb_elotable_new(opponents, n, err);
  if (t == NULL) return NULL;
  char *text = NULL;
  size_t len = 0;
  if (access(path, F_OK) != 0 && errno == ENOENT) return t;
  if (pb_read_file(path, PB__CSV_MAX, &text, &len, err) != 0) {
    pb_elotable_destroy(&t);
    return NULL;
  }
  int rc = 0;
  if (memchr(text, '\0', len) != NULL)
    rc = pb_err_set(err, PB_ECORRUPT, "%s: holds NUL bytes: not an elo.csv",
                    path);
  pb_lines_t it;
  pb_lines_init_w(&it, text, len);
  char *p = NULL;
  size_t ll = 0;
  int lineno = 0;
  while (rc == 0 && pb_lines_cut(&it, &p, &ll) == 1) {
    lineno = it.lineno;
    if (lineno == 1) {
      rc = check_header(t, p, path, err);
    } else if (ll == 0) {
      if (it.pos < it.len) /* one empty line at the end is fine */
        rc = pb_err_set(err, PB_ECORRUPT, "%s:%d: empty line", path, lineno);
    } else {
      pb_elotable_row_t r;
      rc = parse_row(t, p, lineno, path, &r, err);
      if (rc == 0 && t->n > 0 && r.version <= t->rows[t->n - 1].version)
        rc = pb_err_set(err, PB_ECORRUPT,
                        "%s:%d: version %llu is not after the previous row's "
                        "%llu",
                        path, lineno, (unsigned long long)r.version,
                        (unsigned long long)t->rows[t->n - 1].version);
      if (rc == 0) rc = pb_elotable_put(t, &r, err);
    }
  }
  if (rc == 0 && lineno == 0)
    rc = pb_err_set(err, PB_ECORRUPT,
                    "%s: empty file: not an elo.csv (delete it to start a "
                    "new table)",
                    path);
  free(text);
  if (rc != 0) pb_elotable_destroy(&t);
  return t;
}

int pb_elotable_latest(const char *run_dir, const pb_config_t *cfg,
                       pb_elotable_row_t *row, pb_err_t *err) {
  char opp[PB_ELOTABLE_MAX_OPPONENTS][PB_ELOTABLE_SPEC_MAX];
  int n = pb_config_opponents(cfg, opp);
  char path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(run_dir, PB_RUNDIR_ELO_CSV, path, sizeof path);
  pb_elotable_t *t =
      pb_elotable_load(path, (const char(*)[PB_ELOTABLE_SPEC_MAX])opp, n, err);
  if (t == NULL) return err && err->code ? err->code : PB_EIO;
  int rc =
      t->n > 0 ? 0 : pb_err_set(err, PB_ENOTFOUND, "%s: no rating yet", path);
  if (rc == 0) *row = t->rows[t->n - 1];
  pb_elotable_destroy(&t);
  return rc;
}
