/* web.c - see web.h. */
#include "web.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "elotable.h"
#include "game.h"
#include "lines.h"
#include "rundir.h"
#include "util.h"
#include "webplay.h"

/* The page, compiled in by cmake/embed_web.cmake. */
extern const char pb_web_index_html[];
extern const size_t pb_web_index_html_len;

#define PATH_MAX_ 4200

/* What a file looked like when it was last read. */
typedef struct {
  int known;
  long long size;
  long long mtime_ns;
} fstamp_t;

struct pb_web {
  pb_config_t cfg;
  const pb_game_t *g;
  pb_webplay_t *play;

  /* metrics.jsonl */
  fstamp_t m_stamp;
  char *recs;        /* "[{...},{...}]", or NULL before the first read */
  char *last;        /* the newest record, or NULL */
  char *last_elo;    /* the newest "event":"elo" line (anchors), or NULL */
  char *progress;    /* the newest "event":"progress" line after the newest
                        record (the iteration in progress), or NULL */
  int truncated;
  size_t count;
  uint64_t version;
  double sum_iter_s, first_unix, first_iter_s, last_unix;
  int has_unix, has_last_unix;
  int live; /* the run goes on: elapsed runs to now (pb_web_set_live) */

  /* elo.csv */
  fstamp_t e_stamp;
  char *elo;         /* "[...]" or NULL */
  int elo_rows;
  uint64_t elo_newest; /* the newest row's version (elo_rows > 0) */
};

pb_web_t *pb_web_new(const pb_config_t *cfg, pb_err_t *err) {
  const pb_game_t *g = cfg ? pb_game_by_name(cfg->game) : NULL;
  if (g == NULL) {
    pb_err_set(err, PB_EINVAL, "web: NULL config or unknown game");
    return NULL;
  }
  pb_web_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    pb_err_set(err, PB_ENOMEM, "web: out of memory");
    return NULL;
  }
  w->cfg = *cfg;
  w->g = g;
  w->live = 1;
  w->play = pb_webplay_new(g, cfg->run.dir, cfg->model.threads, err);
  if (w->play == NULL) {
    free(w);
    return NULL;
  }
  return w;
}

void pb_web_destroy(pb_web_t **pw) {
  if (pw == NULL || *pw == NULL) return;
  pb_web_t *w = *pw;
  pb_webplay_destroy(&w->play);
  free(w->recs);
  free(w->last);
  free(w->last_elo);
  free(w->progress);
  free(w->elo);
  free(w);
  *pw = NULL;
}

/* 1 if `path` changed since *st was taken (or cannot be stat'ed while it
 * could before), updating *st; *size gets the current size (-1: none). */
static int changed(const char *path, fstamp_t *st, long long *size) {
  struct stat sb;
  fstamp_t now = {0, -1, 0};
  if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
    now.known = 1;
    now.size = (long long)sb.st_size;
    now.mtime_ns = (long long)sb.st_mtim.tv_sec * 1000000000LL +
                   sb.st_mtim.tv_nsec;
  }
  *size = now.size;
  int c = now.known != st->known || now.size != st->size ||
          now.mtime_ns != st->mtime_ns;
  *st = now;
  return c;
}

/* The number after "key": in a JSON line we wrote (flat objects). */
static int num_field(const char *line, const char *key, double *v) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(line, pat);
  if (p == NULL) return 0;
  char *end;
  double x = strtod(p + strlen(pat), &end);
  if (end == p + strlen(pat) || !isfinite(x)) return 0;
  *v = x;
  return 1;
}

/* Appends s[0..n) to the growing buffer *b (length *len, capacity *cap). */
static int append(char **b, size_t *len, size_t *cap, const char *s,
                  size_t n) {
  if (*len + n + 1 > *cap) {
    size_t nc = *cap ? *cap : 4096;
    while (*len + n + 1 > nc) nc *= 2;
    char *g = realloc(*b, nc);
    if (g == NULL) return PB_ENOMEM;
    *b = g;
    *cap = nc;
  }
  memcpy(*b + *len, s, n);
  *len += n;
  (*b)[*len] = '\0';
  return 0;
}

/* Re-reads the tail of metrics.jsonl into w->recs and the summary. */
static int load_metrics(pb_web_t *w, pb_err_t *err) {
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "%s/metrics.jsonl", w->cfg.run.dir);
  long long size;
  if (!changed(path, &w->m_stamp, &size) && w->recs != NULL) return 0;
  free(w->recs);
  free(w->last);
  free(w->last_elo);
  free(w->progress);
  w->recs = w->last = w->last_elo = w->progress = NULL;
  w->truncated = 0;
  w->count = 0;
  w->version = 0;
  w->sum_iter_s = w->first_unix = w->first_iter_s = w->last_unix = 0;
  w->has_unix = w->has_last_unix = 0;

  char *buf = NULL;
  size_t n = 0;
  FILE *f = size > 0 ? fopen(path, "rb") : NULL;
  if (f != NULL) {
    long long off = size > (long long)PB_WEB_TAIL_BYTES
                        ? size - (long long)PB_WEB_TAIL_BYTES
                        : 0;
    buf = malloc(PB_WEB_TAIL_BYTES + 1);
    if (buf != NULL && fseeko(f, (off_t)off, SEEK_SET) == 0)
      n = fread(buf, 1, PB_WEB_TAIL_BYTES, f);
    fclose(f);
    if (buf == NULL) return pb_err_set(err, PB_ENOMEM, "web: out of memory");
    buf[n] = '\0';
    w->truncated = off > 0;
  }
  /* Line starts: the first line of a tail is partial, and so is a last
   * line without its newline (being written). */
  size_t start = 0;
  if (w->truncated) {
    char *nl = memchr(buf, '\n', n);
    start = nl ? (size_t)(nl - buf) + 1 : n;
  }
  size_t *lines = NULL, nlines = 0, cap_lines = 0;
  const char *elo_line = NULL;  /* the evaluator's newest result */
  const char *prog_line = NULL; /* the learner's, since its newest record */
  pb_lines_t it;
  pb_lines_init_w(&it, buf != NULL ? buf + start : NULL, n - start);
  it.partial = 1; /* a last line without its newline is being written */
  char *line = NULL;
  size_t ll = 0;
  while (pb_lines_cut(&it, &line, &ll) == 1) {
    size_t i = (size_t)(line - buf);
    if (strstr(line, "\"event\":\"elo\"") != NULL &&
        pb_json_validate(line) == 0)
      elo_line = line;
    if (strstr(line, "\"event\":\"progress\"") != NULL &&
        pb_json_validate(line) == 0)
      prog_line = line;
    if (strstr(line, "\"event\":\"iteration\"") != NULL &&
        pb_json_validate(line) == 0) {
      if (nlines == cap_lines) {
        size_t nc = cap_lines ? cap_lines * 2 : 256;
        size_t *g = realloc(lines, nc * sizeof *g);
        if (g == NULL) {
          free(lines);
          free(buf);
          return pb_err_set(err, PB_ENOMEM, "web: out of memory");
        }
        lines = g;
        cap_lines = nc;
      }
      lines[nlines++] = i;
      prog_line = NULL; /* that iteration is over */
    }
  }
  size_t first = nlines > PB_WEB_MAX_RECORDS ? nlines - PB_WEB_MAX_RECORDS : 0;
  if (first > 0) w->truncated = 1;
  char *out = NULL;
  size_t len = 0, cap = 0;
  int rc = append(&out, &len, &cap, "[", 1);
  for (size_t k = first; k < nlines && rc == 0; k++) {
    const char *line = buf + lines[k];
    if (k > first) rc = append(&out, &len, &cap, ",", 1);
    if (rc == 0) rc = append(&out, &len, &cap, line, strlen(line));
    double v;
    if (num_field(line, "iteration_s", &v)) w->sum_iter_s += v;
    if (k == first) {
      w->first_iter_s = num_field(line, "iteration_s", &v) ? v : 0;
      w->has_unix = num_field(line, "unix_time", &w->first_unix);
    }
    if (num_field(line, "version", &v) && v >= 0) w->version = (uint64_t)v;
    w->has_last_unix = num_field(line, "unix_time", &w->last_unix);
    w->count++;
  }
  if (rc == 0) rc = append(&out, &len, &cap, "]", 1);
  if (rc == 0 && nlines > first) {
    w->last = strdup(buf + lines[nlines - 1]);
    if (w->last == NULL) rc = PB_ENOMEM;
  }
  if (rc == 0 && elo_line != NULL) {
    w->last_elo = strdup(elo_line);
    if (w->last_elo == NULL) rc = PB_ENOMEM;
  }
  if (rc == 0 && prog_line != NULL) {
    w->progress = strdup(prog_line);
    if (w->progress == NULL) rc = PB_ENOMEM;
  }
  free(lines);
  free(buf);
  if (rc != 0) {
    free(out);
    w->m_stamp.known = -1; /* read again next time */
    return pb_err_set(err, PB_ENOMEM, "web: out of memory");
  }
  w->recs = out;
  return 0;
}

/* Re-reads elo.csv into w->elo. A file that cannot be used gives []. */
static int load_elo(pb_web_t *w, pb_err_t *err) {
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "%s/elo.csv", w->cfg.run.dir);
  long long size;
  if (!changed(path, &w->e_stamp, &size) && w->elo != NULL) return 0;
  free(w->elo);
  w->elo = NULL;
  w->elo_rows = 0;
  w->elo_newest = 0;
  pb_json_t j;
  pb_json_init(&j);
  pb_json_arr_begin(&j);
  char opp[PB_ELOTABLE_MAX_OPPONENTS][PB_ELOTABLE_SPEC_MAX];
  int nopp = pb_config_opponents(&w->cfg, opp);
  pb_elotable_t *t = NULL;
  if (size > 0 && size <= (long long)PB_WEB_TAIL_BYTES)
    t = pb_elotable_load(path, (const char(*)[PB_ELOTABLE_SPEC_MAX])opp, nopp,
                         NULL);
  for (int i = 0; t != NULL && i < pb_elotable_count(t); i++) {
    const pb_elotable_row_t *r = pb_elotable_row(t, i);
    pb_json_obj_begin(&j);
    pb_json_kuint(&j, "iteration", r->iteration);
    pb_json_kuint(&j, "version", r->version);
    pb_json_kdouble(&j, "elo", r->elo);
    pb_json_kdouble(&j, "elo_lo", r->lo);
    pb_json_kdouble(&j, "elo_hi", r->hi);
    pb_json_kdouble(&j, "acc_q", r->acc_q);
    pb_json_kdouble(&j, "acc_v", r->acc_v);
    pb_json_kdouble(&j, "acc_beam", r->acc_beam);
    pb_json_kdouble(&j, "minutes", r->minutes);
    pb_json_kint(&j, "games", r->games);
    pb_json_obj_end(&j);
    if (w->elo_rows == 0 || r->version > w->elo_newest)
      w->elo_newest = r->version;
    w->elo_rows++;
  }
  pb_elotable_destroy(&t);
  pb_json_arr_end(&j);
  w->elo = pb_json_take(&j);
  if (w->elo == NULL) {
    w->e_stamp.known = -1;
    return pb_err_set(err, PB_ENOMEM, "web: out of memory");
  }
  return 0;
}

static double wall_now(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* The summary's members into an open object. */
static void summary(const pb_web_t *w, pb_json_t *j) {
  double mean = w->count ? w->sum_iter_s / (double)w->count : NAN;
  /* A run that has stopped ended with its newest record. */
  double end = w->live || !w->has_last_unix ? wall_now() : w->last_unix;
  double elapsed = w->has_unix && (w->live || w->has_last_unix)
                       ? end - (w->first_unix - w->first_iter_s)
                       : w->sum_iter_s;
  long long left = (long long)w->cfg.train.iterations - (long long)w->version;
  if (left < 0) left = 0;
  pb_json_kdouble(j, "mean_iteration_s", mean);
  pb_json_kdouble(j, "elapsed_s", w->count ? elapsed : NAN);
  pb_json_kdouble(j, "eta_s",
                  w->count && (w->live || left == 0) ? mean * (double)left
                                                     : NAN);
}

void pb_web_set_live(pb_web_t *w, int live) {
  if (w != NULL) w->live = live != 0;
}

int pb_web_history(pb_web_t *w, char **out, size_t *len, pb_err_t *err) {
  if (out) *out = NULL;
  if (w == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "web: NULL argument");
  int rc = load_metrics(w, err);
  if (rc == 0) rc = load_elo(w, err);
  if (rc != 0) return rc;
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "run", w->cfg.run.name);
  pb_json_kstr(&j, "game", w->g->name);
  pb_json_kint(&j, "iterations", w->cfg.train.iterations);
  pb_json_kbool(&j, "truncated", w->truncated);
  pb_json_key(&j, "summary");
  pb_json_obj_begin(&j);
  pb_json_kuint(&j, "count", w->count);
  pb_json_kuint(&j, "version", w->version);
  summary(w, &j);
  pb_json_obj_end(&j);
  pb_json_obj_end(&j);
  /* The records and rows are spliced in as they are (validated when
   * read): {"run":..,"summary":{..}} ->
   * {...,"records":[..],"elo":[..],"last_elo":{..}|null} */
  char *head = pb_json_take(&j);
  if (head == NULL) return pb_err_set(err, PB_ENOMEM, "web: out of memory");
  size_t hl = strlen(head) - 1; /* without the closing brace */
  char *b = NULL;
  size_t n = 0, cap = 0;
  rc = append(&b, &n, &cap, head, hl);
  if (rc == 0) rc = append(&b, &n, &cap, ",\"records\":", 11);
  if (rc == 0) rc = append(&b, &n, &cap, w->recs, strlen(w->recs));
  if (rc == 0) rc = append(&b, &n, &cap, ",\"elo\":", 7);
  if (rc == 0) rc = append(&b, &n, &cap, w->elo, strlen(w->elo));
  if (rc == 0) rc = append(&b, &n, &cap, ",\"last_elo\":", 12);
  if (rc == 0) {
    const char *le = w->last_elo != NULL ? w->last_elo : "null";
    rc = append(&b, &n, &cap, le, strlen(le));
  }
  if (rc == 0) rc = append(&b, &n, &cap, "}", 1);
  free(head);
  if (rc != 0) {
    free(b);
    return pb_err_set(err, PB_ENOMEM, "web: out of memory");
  }
  *out = b;
  if (len) *len = n;
  return 0;
}

int pb_web_summary(pb_web_t *w, pb_web_summary_t *s) {
  if (w == NULL || s == NULL) return PB_EINVAL;
  memset(s, 0, sizeof *s);
  if (load_metrics(w, NULL) != 0) return PB_ENOMEM;
  s->count = w->count;
  s->version = w->version;
  s->mean_iteration_s = w->count ? w->sum_iter_s / (double)w->count : NAN;
  s->last_unix_time = w->has_last_unix ? w->last_unix : NAN;
  return 0;
}

/* "evaluator": what the run directory says of its evaluator, which talks
 * to nobody: whether one holds RUN_DIR/evaluator.lock now (probed too, so
 * that one in another container counts), and the newest version elo.csv
 * has a row for. */
static int evaluator_status(pb_web_t *w, pb_json_t *j) {
  long pid = 0;
  int held = pb_rundir_lock_held(w->cfg.run.dir, PB_RUNDIR_EVALUATOR_LOCK, 1,
                                 &pid, NULL);
  if (load_elo(w, NULL) != 0) return PB_ENOMEM;
  pb_json_key(j, "evaluator");
  pb_json_obj_begin(j);
  pb_json_key(j, "running");
  if (held < 0)
    pb_json_null(j); /* cannot tell */
  else
    pb_json_bool(j, held == 1);
  pb_json_kint(j, "rated", w->elo_rows);
  pb_json_key(j, "rated_version");
  if (w->elo_rows > 0)
    pb_json_uint(j, w->elo_newest);
  else
    pb_json_null(j);
  return pb_json_obj_end(j);
}

int pb_web_status(pb_web_t *w, pb_json_t *j) {
  if (w == NULL || j == NULL) return PB_EINVAL;
  if (load_metrics(w, NULL) != 0) return PB_ENOMEM;
  summary(w, j);
  int rc = pb_json_key(j, "last_iteration");
  if (rc == 0) rc = w->last != NULL ? pb_json_raw(j, w->last) : pb_json_null(j);
  if (rc == 0) rc = pb_json_key(j, "progress");
  if (rc == 0)
    rc = w->progress != NULL ? pb_json_raw(j, w->progress) : pb_json_null(j);
  if (rc == 0) rc = evaluator_status(w, j);
  if (rc == 0) {
    /* The board's player: the version it played last (null before its
     * first move) and whether it is pinned to one. */
    long long v = pb_webplay_version(w->play);
    pb_json_key(j, "play");
    pb_json_obj_begin(j);
    pb_json_key(j, "version");
    if (v >= 0)
      pb_json_int(j, v);
    else
      pb_json_null(j);
    pb_json_kbool(j, "pinned", pb_webplay_pinned(w->play) >= 0);
    rc = pb_json_obj_end(j);
  }
  return rc;
}

int pb_web_pin(pb_web_t *w, long long version, pb_err_t *err) {
  if (w == NULL) return pb_err_set(err, PB_EINVAL, "web: NULL argument");
  return pb_webplay_pin(w->play, version, err);
}

/* Sets a JSON error answer {"error": msg}. */
static void answer_error(pb_http_response_t *res, int status,
                         const char *msg) {
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "error", msg);
  pb_json_obj_end(&j);
  res->status = status;
  res->content_type = "application/json";
  res->body = pb_json_take(&j);
  res->body_len = res->body ? strlen(res->body) : 0;
}

static void answer_move(pb_web_t *w, const char *query,
                        pb_http_response_t *res) {
  char moves[PB_WEBPLAY_MOVES_MAX + 2], r[8];
  long n = pb_http_query_get(query ? query : "", "moves", moves, sizeof moves);
  if (n == PB_ERANGE || (n >= 0 && (size_t)n > PB_WEBPLAY_MOVES_MAX)) {
    char msg[96];
    snprintf(msg, sizeof msg, "move list longer than %d characters",
             PB_WEBPLAY_MOVES_MAX);
    answer_error(res, 400, msg);
    return;
  }
  if (n == PB_EINVAL) {
    answer_error(res, 400, "malformed query: bad percent-encoding in moves");
    return;
  }
  if (n < 0) moves[0] = '\0'; /* no moves: the start position */
  /* Separators a human may type ("4 4 5", "f5,d6") are dropped. */
  size_t k = 0;
  for (size_t i = 0; moves[i] != '\0'; i++)
    if (moves[i] != ' ' && moves[i] != ',') moves[k++] = moves[i];
  moves[k] = '\0';
  int reply = 1;
  long rn = pb_http_query_get(query ? query : "", "reply", r, sizeof r);
  if (rn != PB_ENOTFOUND) {
    if (rn < 0 || (strcmp(r, "0") != 0 && strcmp(r, "1") != 0)) {
      answer_error(res, 400, "reply must be 0 or 1");
      return;
    }
    reply = r[0] == '1';
  }
  pb_err_t e;
  pb_err_clear(&e);
  char *json = NULL;
  int rc = pb_webplay_move(w->play, moves, reply, &json, &e);
  if (rc == 0) {
    res->status = 200;
    res->content_type = "application/json";
    res->body = json;
    res->body_len = strlen(json);
    return;
  }
  int status = rc == PB_EINVAL || rc == PB_EILLEGAL || rc == PB_ERANGE ? 400
               : rc == PB_ENOTFOUND || rc == PB_ECORRUPT ||
                       rc == PB_EMISMATCH || rc == PB_EIO
                   ? 503
                   : 500;
  answer_error(res, status, e.msg[0] ? e.msg : pb_strerror(rc));
}

/* RUN_DIR/name, an SVG chart the evaluator wrote, as it is on disk. */
static void answer_chart(pb_web_t *w, const char *name,
                         pb_http_response_t *res) {
  char path[PATH_MAX_];
  snprintf(path, sizeof path, "%s/%s", w->cfg.run.dir, name);
  char *b = NULL;
  size_t n = 0;
  pb_err_t e;
  pb_err_clear(&e);
  int rc = pb_read_file(path, PB_WEB_TAIL_BYTES, &b, &n, &e);
  if (rc != 0 && access(path, F_OK) != 0) {
    answer_error(res, 404, "no chart yet: the evaluator writes it once it "
                           "has rated a checkpoint");
    return;
  }
  if (rc != 0) {
    answer_error(res, 500, rc == PB_ERANGE ? "chart file too large"
                                           : "cannot read the chart");
    return;
  }
  res->status = 200;
  res->content_type = "image/svg+xml";
  res->body = b;
  res->body_len = n;
}

int pb_web_handle(pb_web_t *w, const char *path, const char *query,
                  pb_http_response_t *res) {
  if (w == NULL || path == NULL || res == NULL) return 0;
  if (!strcmp(path, "/") || !strcmp(path, "/index.html") ||
      !strcmp(path, "/play")) {
    res->body = malloc(pb_web_index_html_len + 1);
    if (res->body == NULL) {
      res->status = 500;
      return 1;
    }
    memcpy(res->body, pb_web_index_html, pb_web_index_html_len + 1);
    res->body_len = pb_web_index_html_len;
    res->status = 200;
    res->content_type = "text/html; charset=utf-8";
    return 1;
  }
  if (!strcmp(path, "/api/history")) {
    pb_err_t e;
    pb_err_clear(&e);
    char *b = NULL;
    size_t n = 0;
    if (pb_web_history(w, &b, &n, &e) != 0) {
      answer_error(res, 500, e.msg);
      return 1;
    }
    res->status = 200;
    res->content_type = "application/json";
    res->body = b;
    res->body_len = n;
    return 1;
  }
  if (!strcmp(path, "/api/move")) {
    answer_move(w, query, res);
    return 1;
  }
  if (!strcmp(path, "/elo.svg") || !strcmp(path, "/elo-time.svg")) {
    answer_chart(w, path + 1, res);
    return 1;
  }
  return 0;
}
