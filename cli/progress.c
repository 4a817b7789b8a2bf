/* progress.c - see progress.h. */
#include "progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "algos.h"
#include "json.h"

/* ---- the members of a JSON object (validated by pb_json_validate) ---- */

typedef struct {
  const char *k, *v;
  size_t kn, vn;
} member_t;

#define MAX_MEMBERS 64

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static const char *skip_string(const char *p) { /* p at the opening quote */
  for (p++; *p && *p != '"'; p++)
    if (*p == '\\' && p[1]) p++;
  return *p ? p + 1 : p;
}

/* Splits the object at s (a valid JSON text) into its members, at most
 * `max`. Returns the count, or -1 if the value is not an object. */
static int json_members(const char *s, member_t *out, int max) {
  const char *p = skip_ws(s);
  if (*p != '{') return -1;
  p = skip_ws(p + 1);
  int n = 0;
  while (*p == '"') {
    const char *k = p + 1, *ke = skip_string(p);
    p = skip_ws(ke);
    if (*p != ':') return -1;
    p = skip_ws(p + 1);
    const char *v = p;
    if (*p == '"') {
      p = skip_string(p);
    } else if (*p == '{' || *p == '[') {
      int depth = 0;
      do {
        if (*p == '"') {
          p = skip_string(p);
          continue;
        }
        if (*p == '{' || *p == '[') depth++;
        if (*p == '}' || *p == ']') depth--;
        p++;
      } while (*p && depth > 0);
    } else {
      while (*p && *p != ',' && *p != '}' && *p != ' ' && *p != '\t' &&
             *p != '\r' && *p != '\n')
        p++;
    }
    if (n < max)
      out[n++] = (member_t){k, v, (size_t)(ke - 1 - k), (size_t)(p - v)};
    p = skip_ws(p);
    if (*p == ',') p = skip_ws(p + 1);
  }
  return n;
}

static const member_t *member(const member_t *m, int n, const char *key) {
  size_t kl = strlen(key);
  for (int i = 0; i < n; i++)
    if (m[i].kn == kl && memcmp(m[i].k, key, kl) == 0) return &m[i];
  return NULL;
}

/* The number of member `key`, or NAN when it is missing or not a number. */
static double num(const member_t *m, int n, const char *key) {
  const member_t *v = member(m, n, key);
  char tmp[64];
  if (v == NULL || v->vn == 0 || v->vn >= sizeof tmp) return NAN;
  memcpy(tmp, v->v, v->vn);
  tmp[v->vn] = '\0';
  char *end;
  double x = strtod(tmp, &end);
  return end != tmp && *end == '\0' ? x : NAN;
}

/* ---- a line being built ------------------------------------------------ */

typedef struct {
  char *buf;
  size_t len, cap; /* cap excludes the NUL */
} line_t;

static void put(line_t *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(line_t *l, const char *fmt, ...) {
  if (l->len >= l->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(l->buf + l->len, l->cap - l->len + 1, fmt, ap);
  va_end(ap);
  if (n > 0) l->len += (size_t)n;
  if (l->len > l->cap) l->len = l->cap;
}

void pb_progress_duration(char *buf, size_t n, double s) {
  if (!(s >= 0) || s > 1e15) s = s > 1e15 ? 1e15 : 0;
  long t = lround(s);
  if (t < 60)
    snprintf(buf, n, "%lds", t);
  else if (t < 3600)
    snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(buf, n, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

static void put_duration(line_t *l, double s) {
  char b[32];
  pb_progress_duration(b, sizeof b, s);
  put(l, "%s", b);
}

/* The line's clock: its "unix_time" as local HH:MM:SS. */
static void put_clock(line_t *l, const member_t *m, int n) {
  double t = num(m, n, "unix_time");
  if (!isfinite(t)) return;
  time_t tt = (time_t)t;
  struct tm tm;
  if (localtime_r(&tt, &tm) == NULL) return;
  put(l, "%02d:%02d:%02d ", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void put_string(line_t *l, const member_t *v) {
  if (v->vn >= 2 && v->v[0] == '"')
    put(l, "%.*s", (int)(v->vn - 2), v->v + 1);
  else
    put(l, "%.*s", (int)v->vn, v->v);
}

/* ---- the events ----------------------------------------------------- */

static void iteration_line(pb_progress_t *p, const member_t *m, int n,
                           line_t *l) {
  put_clock(l, m, n);
  double it = num(m, n, "version");
  if (!isfinite(it)) it = num(m, n, "iteration");
  put(l, "iteration");
  if (isfinite(it)) put(l, " %.0f", it);
  if (p->iterations > 0) put(l, "/%d", p->iterations);
  double total = num(m, n, "iteration_s");
  if (isfinite(total)) put(l, total < 1 ? " in %.2fs" : " in %.1fs", total);
  static const char *const phase[] = {"selfplay_s", "train_v_s", "search_s",
                                      "train_q_s"};
  static const char *const label[] = {"self-play", "V", "search", "Q"};
  /* The line's algorithm's row (common/run/algos.h) says its networks: a
   * policy+value network, trained on visits and outcomes; a linear V by
   * TD(0), no search, no losses (its Q slot and loss fields stay the
   * untrained start's zeros) */
  const member_t *alg = member(m, n, "algorithm");
  char aname[PB_CONFIG_NAME_MAX] = "";
  if (alg != NULL && alg->vn >= 2 && alg->vn - 2 < sizeof aname)
    snprintf(aname, sizeof aname, "%.*s", (int)alg->vn - 2, alg->v + 1);
  const pb_algo_data_t *row = pb_algos_find(aname);
  const int nets = row != NULL ? row->nets : PB_NETS_VQ;
  const int az = nets == PB_NETS_PV, td = nets == PB_NETS_LINEAR;
  const char *sep = " (";
  for (int i = 0; i < 4; i++) {
    double x = num(m, n, phase[i]);
    if (!isfinite(x) || (td && (i == 1 || i == 2))) continue;
    put(l, x < 1 ? "%s%s %.2f" : "%s%s %.1f", sep,
        td && i == 3   ? "TD"
        : az && i == 3 ? "train"
                       : label[i],
        x);
    sep = ", ";
  }
  if (sep[0] == ',') put(l, ")");
  double vl = num(m, n, "v_loss"), ql = num(m, n, "q_loss");
  if (td) {
    double d = num(m, n, "td_abs_delta"), a = num(m, n, "alpha"),
           e = num(m, n, "epsilon");
    if (isfinite(d)) put(l, " | TD mean |delta| %.4g", d);
    if (isfinite(a)) put(l, "%s alpha %.3g", isfinite(d) ? "," : " |", a);
    if (isfinite(e)) put(l, ", epsilon %.3g", e);
  } else if (az) {
    put(l, " | loss policy %.4g, value %.4g", num(m, n, "policy_loss"),
        num(m, n, "value_loss"));
  } else if (isfinite(vl) || isfinite(ql)) {
    put(l, " | loss");
    if (isfinite(vl)) put(l, " V %.4g", vl);
    if (isfinite(ql)) put(l, "%s Q %.4g", isfinite(vl) ? "," : "", ql);
  }
  double pps = num(m, n, "selfplay_positions_per_s");
  double sps = td ? NAN : num(m, n, "search_states_per_s");
  if (isfinite(pps) || isfinite(sps)) {
    put(l, " |");
    if (isfinite(pps)) put(l, " %.0f positions/s", pps);
    if (isfinite(sps)) put(l, "%s %.0f states/s", isfinite(pps) ? "," : "", sps);
  }
  double now = num(m, n, "unix_time");
  if (isfinite(now) && now >= p->start) {
    put(l, " | elapsed ");
    put_duration(l, now - p->start);
  }
  if (isfinite(total) && total >= 0) {
    p->recent[p->next] = total;
    p->next = (p->next + 1) % PB_PROGRESS_WINDOW;
    if (p->n_recent < PB_PROGRESS_WINDOW) p->n_recent++;
  }
  if (p->iterations > 0 && isfinite(it) && it < p->iterations &&
      p->n_recent > 0) {
    double sum = 0;
    for (int i = 0; i < p->n_recent; i++) sum += p->recent[i];
    put(l, ", ETA ");
    put_duration(l, sum / p->n_recent * (p->iterations - it));
  }
}

/* {"event":"progress"}: where an iteration's self-play or search stands
 * (the learner writes one every 5 s of a phase). */
static void progress_line(pb_progress_t *p, const member_t *m, int n,
                          line_t *l) {
  put_clock(l, m, n);
  double it = num(m, n, "iteration");
  put(l, "iteration");
  if (isfinite(it)) put(l, " %.0f", it);
  if (p->iterations > 0) put(l, "/%d", p->iterations);
  const member_t *ph = member(m, n, "phase");
  if (ph != NULL) {
    put(l, " ");
    put_string(l, ph);
    put(l, ":");
  }
  double done = num(m, n, "done"), total = num(m, n, "total");
  if (isfinite(done) && isfinite(total))
    put(l, " %.0f/%.0f items (%.0f%%)", done, total,
        total > 0 ? 100.0 * done / total : 100.0);
  double units = num(m, n, "units"), secs = num(m, n, "seconds");
  const member_t *u = member(m, n, "unit");
  if (isfinite(units) && units > 0 && isfinite(secs) && secs > 0 && u != NULL) {
    put(l, ", %.0f ", units / secs);
    put_string(l, u);
    put(l, "/s");
  }
  double eta = num(m, n, "eta_s");
  if (isfinite(eta) && eta >= 0) {
    put(l, ", ETA ");
    put_duration(l, eta);
  }
}

static void eval_line(const member_t *m, int n, line_t *l) {
  put_clock(l, m, n);
  double v = num(m, n, "version");
  put(l, "eval");
  if (isfinite(v)) put(l, " v%.0f", v);
  double elo = num(m, n, "elo"), lo = num(m, n, "elo_lo"),
         hi = num(m, n, "elo_hi");
  if (isfinite(elo)) {
    put(l, ": Elo %.0f", elo);
    if (isfinite(lo) && isfinite(hi)) put(l, " [%.0f, %.0f]", lo, hi);
  } else {
    put(l, ": Elo n/a");
  }
  const member_t *note = member(m, n, "note");
  if (note != NULL && note->vn > 2 && note->v[0] == '"') {
    put(l, " (");
    put_string(l, note);
    put(l, ")");
  }
  /* The strongest anchor: the opponent rated highest. */
  const member_t *opp = member(m, n, "opponents");
  if (opp != NULL && opp->vn > 1 && opp->v[0] == '{') {
    char *text = strndup(opp->v, opp->vn);
    member_t o[MAX_MEMBERS];
    int no = text ? json_members(text, o, MAX_MEMBERS) : -1;
    int best = -1;
    double best_anchor = -INFINITY, w = NAN, d = NAN, lo_ = NAN;
    for (int i = 0; i < no; i++) {
      if (o[i].vn < 2 || o[i].v[0] != '{') continue;
      char *one = strndup(o[i].v, o[i].vn);
      member_t r[8];
      int nr = one ? json_members(one, r, 8) : -1;
      double a = nr > 0 ? num(r, nr, "anchor") : NAN;
      if (isfinite(a) && a > best_anchor) {
        best_anchor = a;
        best = i;
        w = num(r, nr, "w");
        d = num(r, nr, "d");
        lo_ = num(r, nr, "l");
      }
      free(one);
    }
    if (best >= 0) {
      put(l, " | vs %.*s (%.0f): W/D/L %.0f/%.0f/%.0f", (int)o[best].kn,
          o[best].k, best_anchor, w, d, lo_);
    }
    free(text);
  }
  static const char *const acc[] = {"acc_q", "acc_v", "acc_beam"};
  static const char *const plabel[] = {"Q", "V", "beam"};
  static const char *const ablabel[] = {"Q", "V", "abnet"};
  static const char *const alabel[] = {"policy", "value", "mcts"};
  /* the search agent: "accuracy":{"beam_agent":"mcts N=.."} in an
   * alphazero run, "abnet nodes=.." or "E=..,M=.." (beam) in a probs run */
  const char *const *label = plabel;
  for (int i = 0; i < n; i++)
    if (m[i].kn == 8 && !memcmp(m[i].k, "accuracy", 8)) {
      if (memmem(m[i].v, m[i].vn, "\"mcts", 5) != NULL) label = alabel;
      if (memmem(m[i].v, m[i].vn, "\"abnet", 6) != NULL) label = ablabel;
    }
  const char *sep = " | optimal moves: ";
  for (int i = 0; i < 3; i++) {
    double a = num(m, n, acc[i]);
    if (!isfinite(a)) continue;
    put(l, "%s%s %.3f", sep, label[i], a);
    sep = ", ";
  }
}

void pb_progress_init(pb_progress_t *p, int iterations, double now) {
  memset(p, 0, sizeof *p);
  p->iterations = iterations;
  p->start = now;
}

int pb_progress_line(pb_progress_t *p, const char *json, char *out,
                     size_t cap) {
  if (cap > 0) out[0] = '\0';
  member_t m[MAX_MEMBERS];
  int n;
  if (json == NULL || pb_json_validate(json) != 0 ||
      (n = json_members(json, m, MAX_MEMBERS)) < 0) {
    p->bad_lines++;
    return -1;
  }
  const member_t *ev = member(m, n, "event");
  if (ev == NULL || cap == 0) return 0;
  line_t l = {out, 0, cap - 1};
  if (ev->vn == 11 && memcmp(ev->v, "\"iteration\"", 11) == 0)
    iteration_line(p, m, n, &l);
  else if (ev->vn == 5 && memcmp(ev->v, "\"elo\"", 5) == 0)
    eval_line(m, n, &l);
  else if (ev->vn == 10 && memcmp(ev->v, "\"progress\"", 10) == 0)
    progress_line(p, m, n, &l);
  else
    return 0;
  out[l.len] = '\0';
  return 1;
}

/* ---- the meter ---------------------------------------------------- */

void pb_meter_init(pb_meter_t *m, FILE *out, int tty, const char *label,
                   const char *unit, double total, double every, double now) {
  memset(m, 0, sizeof *m);
  m->out = out;
  m->tty = tty && every >= 0;
  snprintf(m->label, sizeof m->label, "%s", label != NULL ? label : "");
  snprintf(m->unit, sizeof m->unit, "%s", unit != NULL ? unit : "");
  m->total = total;
  m->eta = 1;
  m->every = every;
  m->start = m->last = now;
}

void pb_meter_stderr(pb_meter_t *m, const char *label, const char *unit,
                     double total, double now) {
  pb_meter_init(m, stderr, isatty(fileno(stderr)), label, unit, total,
                PB_METER_EVERY_S, now);
}

/* A count of units as a person reads it: whole numbers without a
 * fraction. */
static void put_count(line_t *l, double x) {
  if (x == floor(x) && fabs(x) < 1e15)
    put(l, "%.0f", x);
  else
    put(l, "%.3g", x);
}

size_t pb_meter_format(const pb_meter_t *m, double done, double now,
                       const char *extra, int bar, char *buf, size_t n) {
  char tmp[1];
  line_t l = {n > 0 ? buf : tmp, 0, n > 0 ? n - 1 : 0};
  if (n > 0) buf[0] = '\0';
  const int known = m->total > 0;
  const double frac = known ? (done < 0 ? 0 : done > m->total ? 1 : done / m->total) : 0;
  if (bar && known) {
    int full = (int)(frac * PB_METER_BAR + 1e-9);
    put(&l, "%s [", m->label);
    for (int i = 0; i < PB_METER_BAR; i++) put(&l, "%c", i < full ? '#' : '.');
    put(&l, "] %.0f%% ", floor(100 * frac));
  } else {
    put(&l, "%s: ", m->label);
  }
  put_count(&l, done);
  if (known) {
    put(&l, "/");
    put_count(&l, m->total);
  }
  put(&l, " %s", m->unit);
  if (extra != NULL && extra[0] != '\0') put(&l, ", %s", extra);
  const double el = now - m->start;
  if (el > 0 && done > 0) {
    double rate = done / el;
    put(&l, rate >= 100 ? ", %.0f %s/s" : rate >= 10 ? ", %.1f %s/s" : ", %.2f %s/s",
        rate, m->unit);
  }
  put(&l, ", elapsed ");
  put_duration(&l, el > 0 ? el : 0);
  if (m->eta && known && done > 0 && done < m->total && el > 0) {
    put(&l, ", ETA ");
    put_duration(&l, el / done * (m->total - done));
  }
  if (n > 0) buf[l.len] = '\0';
  return n > 0 ? l.len : 0;
}

/* Prints the meter now: the bar in place on a terminal, a line off it. */
static void meter_print(pb_meter_t *m, double done, double now,
                        const char *extra) {
  char buf[1024];
  pb_meter_format(m, done, now, extra, m->tty, buf, sizeof buf);
  if (m->tty) {
    fprintf(m->out, "\r%s\033[K", buf);
    m->shown = 1;
  } else {
    fprintf(m->out, "%s\n", buf);
  }
  fflush(m->out);
  m->last = now;
  m->last_done = done;
  m->lines++;
}

int pb_meter_update(pb_meter_t *m, double done, double now,
                    const char *extra) {
  if (m->out == NULL || m->every < 0) return 0;
  double gap = m->tty ? PB_METER_TTY_S : m->every;
  if (now - m->last < gap && !(gap == 0)) return 0;
  meter_print(m, done, now, extra);
  return 1;
}

void pb_meter_end(pb_meter_t *m, double done, double now, const char *extra,
                  int always) {
  if (m->out == NULL || m->every < 0) return;
  /* A last line, unless the last one printed said the same. */
  if (m->tty || always || (m->lines > 0 && done != m->last_done))
    meter_print(m, done, now, extra);
  if (m->shown) {
    fprintf(m->out, "\n");
    fflush(m->out);
    m->shown = 0;
  }
}
