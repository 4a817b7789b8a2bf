/* json.c - JSON writer and validator (see json.h).
 *
 * Workload: a few lines a second (metrics, status pages), each well under a
 * kilobyte; clarity over speed. The validator is a recursive-descent
 * recogniser of RFC 8259 with a depth limit, so hostile input cannot
 * exhaust the stack. */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((p[i] & 0xC0) != 0x80) return 0;
  return len;
}

/* ---- writer ---------------------------------------------------------- */

void pb_json_init(pb_json_t *j) {
  memset(j, 0, sizeof *j);
}

void pb_json_free(pb_json_t *j) {
  if (j == NULL) return;
  free(j->buf);
  memset(j, 0, sizeof *j);
}

void pb_json_reset(pb_json_t *j) {
  char *buf = j->buf;
  size_t cap = j->cap;
  memset(j, 0, sizeof *j);
  j->buf = buf;
  j->cap = cap;
  if (buf != NULL) buf[0] = '\0';
}

static int fail(pb_json_t *j, int code) {
  if (j->err == 0) j->err = code;
  return j->err;
}

static int reserve(pb_json_t *j, size_t extra) {
  if (j->len + extra + 1 <= j->cap) return 0;
  size_t cap = j->cap ? j->cap : 256;
  while (cap < j->len + extra + 1) {
    if (cap > SIZE_MAX / 2) return fail(j, PB_ENOMEM);
    cap *= 2;
  }
  char *b = realloc(j->buf, cap);
  if (b == NULL) return fail(j, PB_ENOMEM);
  j->buf = b;
  j->cap = cap;
  return 0;
}

static int put(pb_json_t *j, const char *s, size_t n) {
  if (reserve(j, n)) return j->err;
  memcpy(j->buf + j->len, s, n);
  j->len += n;
  j->buf[j->len] = '\0';
  return 0;
}

/* Comma and placement rules before a value (or container) is written. */
static int before_value(pb_json_t *j) {
  if (j->err) return j->err;
  if (j->depth == 0) {
    if (j->done) return fail(j, PB_EINVAL); /* only one top-level value */
    return 0;
  }
  if (j->kind[j->depth - 1] == '{') {
    if (!j->after_key) return fail(j, PB_EINVAL); /* a key is due */
    j->after_key = 0;
    return 0;
  }
  if (j->items[j->depth - 1] && put(j, ",", 1)) return j->err;
  j->items[j->depth - 1] = 1;
  return 0;
}

static void after_value(pb_json_t *j) {
  if (j->depth == 0) j->done = 1;
}

static int begin(pb_json_t *j, char kind) {
  if (before_value(j)) return j->err;
  if (j->depth >= PB_JSON_MAX_DEPTH) return fail(j, PB_EINVAL);
  if (put(j, &kind, 1)) return j->err;
  j->kind[j->depth] = kind;
  j->items[j->depth] = 0;
  j->depth++;
  return 0;
}

static int end(pb_json_t *j, char kind) {
  if (j->err) return j->err;
  if (j->depth == 0 || j->kind[j->depth - 1] != kind || j->after_key)
    return fail(j, PB_EINVAL);
  char close = kind == '{' ? '}' : ']';
  if (put(j, &close, 1)) return j->err;
  j->depth--;
  after_value(j);
  return 0;
}

int pb_json_obj_begin(pb_json_t *j) {
  return begin(j, '{');
}
int pb_json_obj_end(pb_json_t *j) {
  return end(j, '{');
}
int pb_json_arr_begin(pb_json_t *j) {
  return begin(j, '[');
}
int pb_json_arr_end(pb_json_t *j) {
  return end(j, '[');
}

/* Writes s[0..n) as a quoted, escaped JSON string. */
static int put_string(pb_json_t *j, const char *s, size_t n) {
  /* Worst case: every byte becomes \u00XX (6) or U+FFFD (3 bytes). */
  if (n > (SIZE_MAX - 2) / 6) return fail(j, PB_ENOMEM);
  if (reserve(j, 6 * n + 2)) return j->err;
  char *o = j->buf + j->len;
  const unsigned char *p = (const unsigned char *)s;
  *o++ = '"';
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      *o++ = '\\';
      *o++ = (char)c;
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      *o++ = '\\';
      switch (c) {
        case '\b':
          *o++ = 'b';
          break;
        case '\f':
          *o++ = 'f';
          break;
        case '\n':
          *o++ = 'n';
          break;
        case '\r':
          *o++ = 'r';
          break;
        case '\t':
          *o++ = 't';
          break;
        default:
          *o++ = 'u';
          *o++ = '0';
          *o++ = '0';
          *o++ = hex[c >> 4];
          *o++ = hex[c & 15];
      }
      i++;
    } else {
      size_t k = utf8_len(p + i, n - i);
      if (k == 0) { /* not UTF-8: U+REPLACEMENT CHARACTER */
        memcpy(o, "\xEF\xBF\xBD", 3);
        o += 3;
        i++;
      } else {
        memcpy(o, p + i, k);
        o += k;
        i += k;
      }
    }
  }
  *o++ = '"';
  j->len = (size_t)(o - j->buf);
  j->buf[j->len] = '\0';
  return 0;
}

int pb_json_key(pb_json_t *j, const char *name) {
  if (j->err) return j->err;
  if (name == NULL || j->depth == 0 || j->kind[j->depth - 1] != '{' ||
      j->after_key)
    return fail(j, PB_EINVAL);
  if (j->items[j->depth - 1] && put(j, ",", 1)) return j->err;
  j->items[j->depth - 1] = 1;
  if (put_string(j, name, strlen(name)) || put(j, ":", 1)) return j->err;
  j->after_key = 1;
  return 0;
}

int pb_json_strn(pb_json_t *j, const char *s, size_t n) {
  if (s == NULL) return pb_json_null(j);
  if (before_value(j) || put_string(j, s, n)) return j->err;
  after_value(j);
  return 0;
}

int pb_json_str(pb_json_t *j, const char *s) {
  return pb_json_strn(j, s, s ? strlen(s) : 0);
}

static int put_text(pb_json_t *j, const char *text) {
  if (before_value(j) || put(j, text, strlen(text))) return j->err;
  after_value(j);
  return 0;
}

int pb_json_int(pb_json_t *j, int64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRId64, v);
  return put_text(j, b);
}

int pb_json_uint(pb_json_t *j, uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRIu64, v);
  return put_text(j, b);
}

int pb_json_double(pb_json_t *j, double v) {
  if (!isfinite(v)) return pb_json_null(j);
  char b[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(b, sizeof b, "%.*g", prec, v);
    if (strtod(b, NULL) == v) break;
  }
  return put_text(j, b);
}

int pb_json_float(pb_json_t *j, float v) {
  if (!isfinite(v)) return pb_json_null(j);
  char b[40];
  for (int prec = 6; prec <= 9; prec++) {
    snprintf(b, sizeof b, "%.*g", prec, (double)v);
    if (strtof(b, NULL) == v) break;
  }
  return put_text(j, b);
}

int pb_json_bool(pb_json_t *j, bool v) {
  return put_text(j, v ? "true" : "false");
}

int pb_json_null(pb_json_t *j) {
  return put_text(j, "null");
}

int pb_json_raw(pb_json_t *j, const char *json) {
  if (j->err) return j->err;
  if (json == NULL || pb_json_validate(json) != 0) return fail(j, PB_EINVAL);
  return put_text(j, json);
}

#define PB__JSON_KV(fn, type, valfn)              \
  int fn(pb_json_t *j, const char *key, type v) { \
    if (pb_json_key(j, key)) return j->err;       \
    return valfn(j, v);                           \
  }
PB__JSON_KV(pb_json_kstr, const char *, pb_json_str)
PB__JSON_KV(pb_json_kint, int64_t, pb_json_int)
PB__JSON_KV(pb_json_kuint, uint64_t, pb_json_uint)
PB__JSON_KV(pb_json_kdouble, double, pb_json_double)
PB__JSON_KV(pb_json_kfloat, float, pb_json_float)
PB__JSON_KV(pb_json_kbool, bool, pb_json_bool)
#undef PB__JSON_KV

const char *pb_json_cstr(const pb_json_t *j) {
  if (j->err) return NULL;
  return j->buf ? j->buf : "";
}

size_t pb_json_len(const pb_json_t *j) {
  return j->err ? 0 : j->len;
}

int pb_json_error(const pb_json_t *j) {
  if (j->err) return j->err;
  if (j->depth != 0 || !j->done) return PB_EINVAL;
  return 0;
}

char *pb_json_take(pb_json_t *j) {
  if (j->err || j->buf == NULL || j->len == 0) return NULL;
  char *b = j->buf;
  memset(j, 0, sizeof *j);
  return b;
}

/* ---- validator ------------------------------------------------------- */

#define PB__JSON_MAX_NEST 256

typedef struct {
  const unsigned char *s;
  size_t n, i;
  const char *want; /* what was expected where it stopped */
} pb__jv_t;

static int jv_fail(pb__jv_t *v, const char *want) {
  v->want = want;
  return -1;
}

static void jv_ws(pb__jv_t *v) {
  while (v->i < v->n && (v->s[v->i] == ' ' || v->s[v->i] == '\t' ||
                         v->s[v->i] == '\n' || v->s[v->i] == '\r'))
    v->i++;
}

static int jv_lit(pb__jv_t *v, const char *lit) {
  size_t k = strlen(lit);
  if (v->n - v->i < k || memcmp(v->s + v->i, lit, k)) return jv_fail(v, lit);
  v->i += k;
  return 0;
}

static int is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}
static int is_hex(unsigned char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int jv_digits(pb__jv_t *v) {
  if (v->i >= v->n || !is_digit(v->s[v->i])) return jv_fail(v, "a digit");
  while (v->i < v->n && is_digit(v->s[v->i])) v->i++;
  return 0;
}

static int jv_number(pb__jv_t *v) {
  if (v->i < v->n && v->s[v->i] == '-') v->i++;
  if (v->i < v->n && v->s[v->i] == '0') {
    v->i++; /* no leading zeros */
  } else if (jv_digits(v)) {
    return -1;
  }
  if (v->i < v->n && v->s[v->i] == '.') {
    v->i++;
    if (jv_digits(v)) return -1;
  }
  if (v->i < v->n && (v->s[v->i] == 'e' || v->s[v->i] == 'E')) {
    v->i++;
    if (v->i < v->n && (v->s[v->i] == '+' || v->s[v->i] == '-')) v->i++;
    if (jv_digits(v)) return -1;
  }
  return 0;
}

static int jv_string(pb__jv_t *v) {
  if (v->i >= v->n || v->s[v->i] != '"') return jv_fail(v, "'\"'");
  v->i++;
  while (v->i < v->n) {
    unsigned char c = v->s[v->i];
    if (c == '"') {
      v->i++;
      return 0;
    }
    if (c < 0x20) return jv_fail(v, "no raw control character in a string");
    if (c == '\\') {
      v->i++;
      if (v->i >= v->n) break;
      c = v->s[v->i];
      if (c == 'u') {
        for (int k = 1; k <= 4; k++)
          if (v->i + k >= v->n || !is_hex(v->s[v->i + k]))
            return jv_fail(v, "four hex digits after \\u");
        v->i += 5;
      } else if (strchr("\"\\/bfnrt", c) != NULL && c != '\0') {
        v->i++;
      } else {
        return jv_fail(v, "a valid escape");
      }
      continue;
    }
    size_t k = utf8_len(v->s + v->i, v->n - v->i);
    if (k == 0) return jv_fail(v, "valid UTF-8");
    v->i += k;
  }
  return jv_fail(v, "the closing '\"'");
}

static int jv_value(pb__jv_t *v, int depth);

static int jv_container(pb__jv_t *v, int depth, int obj) {
  if (depth >= PB__JSON_MAX_NEST) return jv_fail(v, "less nesting");
  v->i++; /* '{' or '[' */
  jv_ws(v);
  char close = obj ? '}' : ']';
  if (v->i < v->n && v->s[v->i] == close) {
    v->i++;
    return 0;
  }
  for (;;) {
    jv_ws(v);
    if (obj) {
      if (jv_string(v)) return -1;
      jv_ws(v);
      if (v->i >= v->n || v->s[v->i] != ':') return jv_fail(v, "':'");
      v->i++;
    }
    if (jv_value(v, depth + 1)) return -1;
    jv_ws(v);
    if (v->i < v->n && v->s[v->i] == ',') {
      v->i++;
      continue;
    }
    if (v->i < v->n && v->s[v->i] == close) {
      v->i++;
      return 0;
    }
    return jv_fail(v, obj ? "',' or '}'" : "',' or ']'");
  }
}

static int jv_value(pb__jv_t *v, int depth) {
  jv_ws(v);
  if (v->i >= v->n) return jv_fail(v, "a value");
  unsigned char c = v->s[v->i];
  switch (c) {
    case '{':
      return jv_container(v, depth, 1);
    case '[':
      return jv_container(v, depth, 0);
    case '"':
      return jv_string(v);
    case 't':
      return jv_lit(v, "true");
    case 'f':
      return jv_lit(v, "false");
    case 'n':
      return jv_lit(v, "null");
    default:
      if (c == '-' || is_digit(c)) return jv_number(v);
      return jv_fail(v, "a value");
  }
}

int pb_json_validate_n(const char *s, size_t n, pb_err_t *err) {
  if (s == NULL) return pb_err_set(err, PB_ECORRUPT, "json: NULL text");
  pb__jv_t v = {(const unsigned char *)s, n, 0, NULL};
  if (jv_value(&v, 0) == 0) {
    jv_ws(&v);
    if (v.i == n) return 0;
    v.want = "the end of the text";
  }
  return pb_err_set(err, PB_ECORRUPT, "json: at byte %zu: expected %s", v.i,
                    v.want);
}

int pb_json_validate(const char *s) {
  return pb_json_validate_n(s, s ? strlen(s) : 0, NULL);
}
