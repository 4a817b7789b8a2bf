/* record_ggf.c - Othello records as GGF (the Generic Game Format of the
 * Othello servers: GGS, and tools such as NBoard), written and read back;
 * see record.h.
 *
 * Workload: one game a line, written as a match's games finish and read
 * back one game at a time; the rules replay each game, microseconds. */
#include "record.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The start board as GGF writes it (TY[8]), and the same without spaces. */
#define GGF_START_BO \
  "8 -------- -------- -------- ---O*--- ---*O--- -------- -------- -------- *"

static int is_pass(const pb_game_t *g, int a) {
  char nm[16];
  return g->action_name(a, nm, sizeof nm) == 4 && !strcmp(nm, "pass");
}

/* ---- writing ---------------------------------------------------------- */

/* Copies text into t at k (room is there), with the characters GGF gives
 * a meaning ('[', ']', '\\') and control characters as '_'; returns the
 * new k. */
static size_t ggf_text(char *t, size_t k, const char *s) {
  for (; *s; s++)
    t[k++] = (*s == '[' || *s == ']' || *s == '\\' || (unsigned char)*s < 32)
                 ? '_'
                 : *s;
  return k;
}

/* Seconds as a GGS clock time, "MM:SS" or "H:MM:SS", with the fraction
 * of a second when there is one ("00:00.1"). */
static void clock_time(double s, char *buf, size_t n) {
  long ms = lround(s * 1000);
  long sec = ms / 1000, frac = ms % 1000;
  int k = sec >= 3600 ? snprintf(buf, n, "%ld:%02ld:%02ld", sec / 3600,
                                 sec / 60 % 60, sec % 60)
                      : snprintf(buf, n, "%02ld:%02ld", sec / 60, sec % 60);
  if (frac != 0 && k > 0 && (size_t)k < n) {
    char f[8];
    snprintf(f, sizeof f, ".%03ld", frac);
    for (int i = 3; i > 1 && f[i] == '0'; i--) f[i] = '\0';
    snprintf(buf + k, n - (size_t)k, "%s", f);
  }
}

/* "10+0.1" into base and increment: 1, or 0 when it is not that. */
static int tc_split(const char *tc, double *base, double *inc) {
  char *end;
  *base = strtod(tc, &end);
  *inc = 0;
  if (end == tc || !(*base >= 0)) return 0;
  if (*end == '+') {
    const char *p = end + 1;
    *inc = strtod(p, &end);
    if (end == p || !(*inc >= 0)) return 0;
  }
  return *end == '\0';
}

int pb_record_ggf(const pb_record_t *r, char **out, size_t *len,
                  pb_err_t *err) {
  if (out == NULL || len == NULL)
    return pb_err_set(err, PB_EINVAL, "record: NULL output");
  *out = NULL;
  *len = 0;
  if (r != NULL && r->g != NULL && r->g->id != PB_GAME_OTHELLO)
    return pb_err_set(err, PB_EUNSUPP, "record: GGF is for othello, not %s",
                      r->g->name);
  int rc = pb_record_check(r, err);
  if (rc != 0) return rc;
  pb_state_t s;
  r->g->reset(&s);
  int finished = 0;
  for (int i = 0; i < r->n_moves; i++) r->g->step(&s, r->moves[i], &finished);
  size_t cap = 640 + 2 * strlen(r->first) + 2 * strlen(r->second) +
               32 * (size_t)r->n_moves;
  char *t = malloc(cap);
  if (t == NULL) return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  size_t k = (size_t)snprintf(t, cap, "(;GM[Othello]PC[probs]");
  int Y, M, D, h, m, sec;
  if (r->date[0] != '\0') {
    /* GGS's form of the date, from ISO 8601 UTC; any other as written. */
    if (sscanf(r->date, "%4d-%2d-%2dT%2d:%2d:%2dZ", &Y, &M, &D, &h, &m,
               &sec) == 6)
      k += (size_t)snprintf(t + k, cap - k,
                            "DT[%04d.%02d.%02d_%02d:%02d:%02d.GMT]", Y, M, D,
                            h, m, sec);
    else {
      k += (size_t)snprintf(t + k, cap - k, "DT[");
      k = ggf_text(t, k, r->date);
      t[k++] = ']';
    }
  }
  k += (size_t)snprintf(t + k, cap - k, "PB[");
  k = ggf_text(t, k, r->first);
  k += (size_t)snprintf(t + k, cap - k, "]PW[");
  k = ggf_text(t, k, r->second);
  k += (size_t)snprintf(t + k, cap - k, "]");
  double base, inc;
  if (r->time_control[0] != '\0' && tc_split(r->time_control, &base, &inc)) {
    char b[32], i[32];
    clock_time(base, b, sizeof b);
    clock_time(inc, i, sizeof i);
    k += (size_t)snprintf(t + k, cap - k, "TI[%s/%s/]", b, i);
  }
  if (finished) {
    /* Black's disc difference: the side to move in s is black after an
     * even number of plies. */
    int mat = r->g->material(&s);
    k += (size_t)snprintf(t + k, cap - k, "RE[%+d.000]",
                          r->n_moves % 2 == 0 ? mat : -mat);
  } else if (r->adjudicated || r->time_loss || r->resigned) {
    /* Black's view; ":t" on time, ":r" resigned, ":s" scored. */
    k += (size_t)snprintf(t + k, cap - k, "RE[%s:%c]",
                          r->result > 0   ? "+64.000"
                          : r->result < 0 ? "-64.000"
                                          : "0.000",
                          r->time_loss ? 't' : r->resigned ? 'r' : 's');
  } else {
    k += (size_t)snprintf(t + k, cap - k, "RE[?]");
  }
  k += (size_t)snprintf(t + k, cap - k, "TY[8]BO[" GGF_START_BO "]");
  for (int i = 0; i < r->n_moves; i++) {
    char nm[16];
    r->g->action_name(r->moves[i], nm, sizeof nm);
    k += (size_t)snprintf(t + k, cap - k, "%c[%s", i % 2 == 0 ? 'B' : 'W',
                          is_pass(r->g, r->moves[i]) ? "PA" : nm);
    /* "sq/eval/time": the mover's value, the seconds it took. */
    int ev = r->evals != NULL && !isnan(r->evals[i]);
    if (ev)
      k += (size_t)snprintf(t + k, cap - k, "/%.4f", (double)r->evals[i]);
    if (r->ms != NULL && r->ms[i] >= 0)
      k += (size_t)snprintf(t + k, cap - k, "%s/%.3f", ev ? "" : "/",
                            r->ms[i] / 1000.0);
    t[k++] = ']';
  }
  k += (size_t)snprintf(t + k, cap - k, ";)");
  t[k] = '\0';
  *out = t;
  *len = k;
  return 0;
}

/* ---- reading ---------------------------------------------------------- */

/* A GGS clock time "[[H:]M:]S[.F]" (an optional trailing modifier
 * letter is not allowed) into seconds: 1, or 0. */
static int parse_clock(const char *s, double *out) {
  double parts[3];
  int n = 0;
  const char *p = s;
  if (*p == '\0') {
    *out = 0;
    return 1;
  }
  for (;;) {
    char *end;
    if (!isdigit((unsigned char)*p)) return 0;
    double v = strtod(p, &end);
    if (n == 3 || !(v >= 0)) return 0;
    parts[n++] = v;
    p = end;
    if (*p == ':') {
      p++;
      continue;
    }
    break;
  }
  if (*p != '\0') return 0;
  double t = 0;
  for (int i = 0; i < n; i++) t = t * 60 + parts[i];
  *out = t;
  return 1;
}

/* "%g" of x into buf, the shortest that reads back. */
static void put_num(char *buf, size_t n, double x) {
  snprintf(buf, n, "%.10g", x);
}

/* The value of property TI ("BASE/INC/EXT") as r->time_control. */
static int read_ti(const char *v, pb_record_t *r, pb_err_t *err) {
  char a[64] = "", b[64] = "";
  const char *s1 = strchr(v, '/');
  size_t la = s1 != NULL ? (size_t)(s1 - v) : strlen(v);
  if (la >= sizeof a) la = sizeof a - 1;
  memcpy(a, v, la);
  a[la] = '\0';
  if (s1 != NULL) {
    const char *s2 = strchr(s1 + 1, '/');
    size_t lb = s2 != NULL ? (size_t)(s2 - s1 - 1) : strlen(s1 + 1);
    if (lb >= sizeof b) lb = sizeof b - 1;
    memcpy(b, s1 + 1, lb);
    b[lb] = '\0';
  }
  double base, inc;
  if (!parse_clock(a, &base) || !parse_clock(b, &inc))
    return pb_err_set(err, PB_ECORRUPT,
                      "TI[%.40s]: not a GGS clock (BASE/INC/EXT, each "
                      "[[H:]M:]S)",
                      v);
  char nb[32], ni[32];
  put_num(nb, sizeof nb, base);
  put_num(ni, sizeof ni, inc);
  snprintf(r->time_control, sizeof r->time_control, "%.14s+%.14s", nb, ni);
  return 0;
}

/* The value of DT as r->date: GGS's "YYYY.MM.DD_HH:MM:SS.GMT" (or UTC)
 * and a UNIX time become ISO 8601; anything else is kept as written. */
static void read_dt(const char *v, pb_record_t *r) {
  int Y, M, D, h, m, s, used = 0;
  char zone[8] = "";
  char *end;
  double t = strtod(v, &end);
  if (sscanf(v, "%4d.%2d.%2d_%2d:%2d:%2d.%7[A-Za-z]%n", &Y, &M, &D, &h, &m,
             &s, zone, &used) == 7 &&
      v[used] == '\0' && (!strcmp(zone, "GMT") || !strcmp(zone, "UTC")))
    snprintf(r->date, sizeof r->date, "%04d-%02d-%02dT%02d:%02d:%02dZ", Y, M,
             D, h, m, s);
  else if (end != v && *end == '\0' && t > 0 && t < 1e11)
    pb_record_date(t, r->date, sizeof r->date);
  else
    snprintf(r->date, sizeof r->date, "%s", v);
}

/* Whether a BO value is the standard start, spaces aside. */
static int start_board(const char *v) {
  const char *want = GGF_START_BO;
  for (;;) {
    while (isspace((unsigned char)*v)) v++;
    while (*want == ' ') want++;
    if (*v == '\0' || *want == '\0') return *v == *want;
    if (*v++ != *want++) return 0;
  }
}

/* The result RE[...] (black's disc difference, then an optional ":t",
 * ":r", ":s"; or "?") into *sign (+1 black ahead, 0, -1; 2 for "?") and
 * *how ('\0', 't', 'r', 's'). 0, or PB_ECORRUPT. */
static int read_re(const char *v, int *sign, char *how, pb_err_t *err) {
  *how = '\0';
  if (!strcmp(v, "?")) {
    *sign = 2;
    return 0;
  }
  char *end;
  double d = strtod(v, &end);
  if (end == v || !isfinite(d) ||
      (*end != '\0' && !(end[0] == ':' && strchr("trs", end[1]) != NULL &&
                         end[1] != '\0' && end[2] == '\0')))
    return pb_err_set(err, PB_ECORRUPT,
                      "RE[%.40s]: not a result (black's disc difference, "
                      "e.g. +4.000, with :t, :r or :s, or ?)",
                      v);
  *sign = (d > 0) - (d < 0);
  if (*end == ':') *how = end[1];
  return 0;
}

/* The evaluation of a move "sq/eval[/time]": a number in [-1, 1] (ours,
 * the mover's value); NaN for none, or for another tool's scale (GGS's
 * disc counts) or text. */
static float read_eval(const char *v) {
  const char *slash = strchr(v, '/');
  if (slash == NULL || slash[1] == '/' || slash[1] == '\0') return NAN;
  char *end;
  double e = strtod(slash + 1, &end);
  if (end == slash + 1 || (*end != '/' && *end != '\0') ||
      !(e >= -1.0 && e <= 1.0))
    return NAN;
  return (float)e;
}

/* One move "sq[/eval[/time]]" of colour c ('B' or 'W') at ply n of the
 * game in *s: appends its action (and a forced pass before it, when the
 * other side had to pass and the file left it out) to moves, its time to
 * ms and its evaluation to evals (either NULL: not kept). */
static int read_move(const pb_game_t *g, pb_state_t *s, char c, const char *v,
                     uint8_t *moves, int32_t *ms, float *evals, int cap,
                     int *n, int *done, pb_err_t *err) {
  char sq[16];
  size_t l = strcspn(v, "/");
  if (l == 0 || l >= sizeof sq)
    return pb_err_set(err, PB_ECORRUPT, "%c[%.40s] at ply %d: no square", c,
                      v, *n + 1);
  memcpy(sq, v, l);
  sq[l] = '\0';
  int32_t t = -1;
  const char *slash = strchr(v, '/');
  if (slash != NULL && (slash = strchr(slash + 1, '/')) != NULL &&
      slash[1] != '\0') {
    char *end;
    double sec = strtod(slash + 1, &end);
    if (end == slash + 1 || *end != '\0' || !(sec >= 0 && sec < 2e6))
      return pb_err_set(err, PB_ECORRUPT,
                        "%c[%.40s] at ply %d: the time after the second / "
                        "is not seconds",
                        c, v, *n + 1);
    t = (int32_t)lround(sec * 1000);
  }
  for (int pass = 0; pass < 2; pass++) {
    if (*done)
      return pb_err_set(err, PB_ECORRUPT,
                        "%c[%s] at ply %d comes after the end of the game", c,
                        sq, *n + 1);
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(s, acts);
    char mover = g->ply(s) % 2 == 0 ? 'B' : 'W';
    int forced = na == 1 && is_pass(g, acts[0]);
    int a = -1;
    if (mover != c) {
      /* The other side is to move: it must have had to pass. */
      if (!forced || pass == 1)
        return pb_err_set(err, PB_ECORRUPT,
                          "%c[%s] at ply %d: %s is to move there", c, sq,
                          *n + 1, mover == 'B' ? "black (B)" : "white (W)");
      a = acts[0];
    } else if (!strcasecmp(sq, "PA") || !strcasecmp(sq, "pass")) {
      if (!forced)
        return pb_err_set(err, PB_ECORRUPT,
                          "%c[%s] at ply %d: a pass, but %s has a move", c, sq,
                          *n + 1, c == 'B' ? "black" : "white");
      a = acts[0];
    } else {
      for (int j = 0; j < na && a < 0; j++) {
        char nm[16];
        if (g->action_name(acts[j], nm, sizeof nm) > 0 &&
            !strcasecmp(nm, sq))
          a = acts[j];
      }
      if (a < 0)
        return pb_err_set(err, PB_ECORRUPT,
                          "%c[%s] at ply %d: not a legal move there", c, sq,
                          *n + 1);
    }
    if (*n == cap)
      return pb_err_set(err, PB_ERANGE, "GGF: more than %d moves", cap);
    if (ms != NULL) ms[*n] = mover == c ? t : -1;
    if (evals != NULL) evals[*n] = mover == c ? read_eval(v) : NAN;
    moves[(*n)++] = (uint8_t)a;
    g->step(s, a, done);
    if (mover == c) return 0;
  }
  return 0;
}

int pb_record_ggf_parse(const char *text, size_t len, uint8_t *moves,
                        int32_t *ms, int cap, pb_record_t *r, pb_err_t *err) {
  return pb_record_ggf_parse_full(text, len, moves, ms, NULL, cap, r, err);
}

int pb_record_ggf_parse_full(const char *text, size_t len, uint8_t *moves,
                             int32_t *ms, float *evals, int cap,
                             pb_record_t *r, pb_err_t *err) {
  if (text == NULL || moves == NULL || r == NULL)
    return pb_err_set(err, PB_EINVAL, "record: NULL argument");
  const pb_game_t *g = &pb_game_othello;
  pb_record_init(r, g);
  size_t i = 0;
  while (i < len && isspace((unsigned char)text[i])) i++;
  if (len - i < 2 || text[i] != '(' || text[i + 1] != ';')
    return pb_err_set(err, PB_ECORRUPT, "GGF: a game starts with \"(;\"");
  i += 2;
  pb_state_t s;
  g->reset(&s);
  int n = 0, done = 0, sign = 2, have_gm = 0, closed = 0;
  char how = '\0';
  char *val = malloc(len + 1);
  if (val == NULL) return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  int rc = 0;
  while (rc == 0) {
    while (i < len && isspace((unsigned char)text[i])) i++;
    if (i + 1 < len && text[i] == ';' && text[i + 1] == ')') {
      closed = 1;
      i += 2;
      break;
    }
    char key[8];
    size_t kl = 0;
    while (i < len && isupper((unsigned char)text[i]) && kl < sizeof key - 1)
      key[kl++] = text[i++];
    key[kl] = '\0';
    if (kl == 0 || i >= len || text[i] != '[') {
      rc = pb_err_set(err, PB_ECORRUPT,
                      i >= len ? "GGF: the game is not closed with \";)\""
                               : "GGF: at byte %zu, expected a property "
                                 "NAME[value] or \";)\"",
                      i + 1);
      break;
    }
    size_t vl = 0;
    for (i++; i < len && text[i] != ']'; i++) {
      if (text[i] == '\\' && i + 1 < len) i++;
      val[vl++] = text[i];
    }
    if (i >= len) {
      rc = pb_err_set(err, PB_ECORRUPT, "GGF: %s[ is not closed with \"]\"",
                      key);
      break;
    }
    i++;
    val[vl] = '\0';
    if (!strcmp(key, "GM")) {
      if (strcasecmp(val, "Othello") != 0)
        rc = pb_err_set(err, PB_ECORRUPT,
                        "GGF: GM[%.40s]: only Othello games are read", val);
      have_gm = 1;
    } else if (!strcmp(key, "TY")) {
      if (strcmp(val, "8") != 0)
        rc = pb_err_set(err, PB_ECORRUPT,
                        "GGF: TY[%.40s]: only 8x8 Othello from the standard "
                        "start (TY[8]) is read",
                        val);
    } else if (!strcmp(key, "BO")) {
      if (!start_board(val))
        rc = pb_err_set(err, PB_ECORRUPT,
                        "GGF: BO[%.80s]: only games from the standard start "
                        "board are read",
                        val);
    } else if (!strcmp(key, "PB") || !strcmp(key, "PW")) {
      char *dst = key[1] == 'B' ? r->first : r->second;
      if (vl >= PB_RECORD_NAME_MAX)
        rc = pb_err_set(err, PB_ERANGE, "GGF: %s is longer than %d bytes",
                        key, PB_RECORD_NAME_MAX - 1);
      else
        memcpy(dst, val, vl + 1);
    } else if (!strcmp(key, "DT")) {
      read_dt(val, r);
    } else if (!strcmp(key, "TI")) {
      rc = read_ti(val, r, err);
    } else if (!strcmp(key, "RE")) {
      rc = read_re(val, &sign, &how, err);
    } else if (!strcmp(key, "B") || !strcmp(key, "W")) {
      rc = read_move(g, &s, key[0], val, moves, ms, evals, cap, &n, &done,
                     err);
    }
  }
  free(val);
  if (rc != 0) return rc;
  if (!closed)
    return pb_err_set(err, PB_ECORRUPT,
                      "GGF: the game is not closed with \";)\"");
  while (i < len && isspace((unsigned char)text[i])) i++;
  if (i < len)
    return pb_err_set(err, PB_ECORRUPT,
                      "GGF: something after the game's \";)\" (one game a "
                      "line)");
  if (!have_gm) return pb_err_set(err, PB_ECORRUPT, "GGF: no GM[Othello]");
  if (r->first[0] == '\0') snprintf(r->first, sizeof r->first, "black");
  if (r->second[0] == '\0') snprintf(r->second, sizeof r->second, "white");
  r->n_moves = n;
  r->moves = moves;
  if (ms != NULL) {
    int any = 0;
    for (int k = 0; k < n; k++) any |= ms[k] >= 0;
    if (any) r->ms = ms;
  }
  if (evals != NULL) {
    int any = 0;
    for (int k = 0; k < n; k++) any |= !isnan(evals[k]);
    if (any) r->evals = evals;
  }
  if (done) {
    float rw = 0;
    g->terminal(&s, &rw);
    int m = (rw > 0) - (rw < 0); /* the side to move's */
    int res = n % 2 == 0 ? m : -m;
    if (sign != 2 && sign != res)
      return pb_err_set(err, PB_ECORRUPT,
                        "GGF: RE gives %s, but the moves end the game %s",
                        sign > 0 ? "black the win"
                        : sign < 0 ? "white the win"
                                   : "a draw",
                        res > 0 ? "with black's win"
                        : res < 0 ? "with white's win"
                                  : "drawn");
    r->result = res;
  } else if (sign == 2) {
    r->capped = 1; /* unfinished, no result: counted as a draw */
  } else {
    r->result = sign;
    r->time_loss = how == 't';
    r->resigned = how == 'r';
    r->adjudicated = how == 's' || how == '\0';
  }
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_record_check(r, &e) != 0)
    return pb_err_set(err, PB_ECORRUPT, "GGF: %s", e.msg);
  return 0;
}
