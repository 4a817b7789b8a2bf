/* jsonread.c - the strict JSON reader of jsonread.h.
 *
 * The text is first checked by the validator of json.h, so the tree
 * builder below reads text it knows to be well formed and only has to
 * refuse repeated keys. The tree is a flat array of nodes in document
 * order: a container's children follow it, and each node records the
 * index just past its last descendant, so a container's children are
 * walked by hopping from one to the next. Once the tree is built, one
 * pass lists every container's children in `kids`, so that element i of
 * an array is found at once, not by walking i elements (a loop over an
 * array of a million elements stays linear). */
#include "jsonread.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct pb_jval {
  const pb_jsonr_t *r;
  int kind;
  size_t next;      /* index of the node after this one and its children */
  size_t count;     /* children (containers) */
  size_t kid0;      /* containers: their children's indices start at
                       r->kids[kid0] */
  size_t off, len;  /* the value's text in r->text */
  size_t str, slen; /* a string: its decoded bytes in r->strs */
  size_t key, klen; /* a member of an object: its key in r->strs */
  double num;       /* a number (NaN for the other kinds) */
  int boolean;      /* a boolean */
};

struct pb_jsonr {
  char *text; /* a copy of the text parsed, NUL-terminated */
  size_t text_cap;
  char *strs; /* decoded strings and keys, each NUL-terminated */
  size_t strs_len, strs_cap;
  pb_jval_t *nodes;
  size_t nnodes, nodes_cap;
  size_t *kids; /* the children of every container, in order */
  size_t kids_cap;
  size_t *seen; /* a hash set of one object's keys (node index + 1) */
  size_t seen_cap;
  size_t pos; /* where the builder reads */
};

pb_jsonr_t *pb_jsonr_new(pb_err_t *err) {
  pb_jsonr_t *r = calloc(1, sizeof *r);
  if (r == NULL) pb_err_set(err, PB_ENOMEM, "json: out of memory");
  return r;
}

void pb_jsonr_destroy(pb_jsonr_t **r) {
  if (r == NULL || *r == NULL) return;
  free((*r)->text);
  free((*r)->strs);
  free((*r)->nodes);
  free((*r)->kids);
  free((*r)->seen);
  free(*r);
  *r = NULL;
}

/* Grows *buf (of *cap bytes) to hold at least need bytes. */
static int grow(void **buf, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  void *b = realloc(*buf, nc * size);
  if (b == NULL) return PB_ENOMEM;
  *buf = b;
  *cap = nc;
  return 0;
}

static void skip_ws(pb_jsonr_t *r) {
  while (r->text[r->pos] == ' ' || r->text[r->pos] == '\t' ||
         r->text[r->pos] == '\n' || r->text[r->pos] == '\r')
    r->pos++;
}

static unsigned hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

static void put_utf8(pb_jsonr_t *r, unsigned cp) {
  char *o = r->strs + r->strs_len;
  size_t k;
  if (cp < 0x80) {
    o[0] = (char)cp;
    k = 1;
  } else if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    k = 2;
  } else if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    k = 3;
  } else {
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    k = 4;
  }
  r->strs_len += k;
}

/* Decodes the (valid) string at r->pos into r->strs; sets *off and *len.
 * The strings buffer was sized for the whole text, so this cannot run out:
 * no escape decodes to more bytes than it is written with. */
static void decode_string(pb_jsonr_t *r, size_t *off, size_t *len) {
  *off = r->strs_len;
  r->pos++; /* the opening quote */
  for (;;) {
    char c = r->text[r->pos];
    if (c == '"') break;
    if (c != '\\') {
      r->strs[r->strs_len++] = c;
      r->pos++;
      continue;
    }
    char e = r->text[r->pos + 1];
    r->pos += 2;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *f = strchr(from, e);
    if (e != 'u') {
      r->strs[r->strs_len++] = to[f - from];
      continue;
    }
    unsigned cp = hex4(r->text + r->pos);
    r->pos += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF && r->text[r->pos] == '\\' &&
        r->text[r->pos + 1] == 'u') {
      unsigned lo = hex4(r->text + r->pos + 2);
      if (lo >= 0xDC00 && lo <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        r->pos += 6;
      }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD; /* a lone surrogate */
    put_utf8(r, cp);
  }
  r->pos++; /* the closing quote */
  *len = r->strs_len - *off;
  r->strs[r->strs_len++] = '\0';
}

/* Builds the value at r->pos (text the validator accepted); its index in
 * *idx. 0 or PB_ENOMEM (err filled). */
static int build(pb_jsonr_t *r, size_t *idx, pb_err_t *err) {
  skip_ws(r);
  if (grow((void **)&r->nodes, &r->nodes_cap, r->nnodes + 1,
           sizeof *r->nodes) != 0)
    return pb_err_set(err, PB_ENOMEM, "json: out of memory");
  size_t i = r->nnodes++;
  pb_jval_t *v = &r->nodes[i];
  memset(v, 0, sizeof *v);
  v->r = r;
  v->off = r->pos;
  v->num = NAN;
  *idx = i;
  char c = r->text[r->pos];
  if (c == '{' || c == '[') {
    int obj = c == '{';
    char close = obj ? '}' : ']';
    r->nodes[i].kind = obj ? PB_JVAL_OBJECT : PB_JVAL_ARRAY;
    r->pos++;
    skip_ws(r);
    size_t count = 0;
    while (r->text[r->pos] != close) {
      size_t koff = 0, klen = 0, kid;
      if (obj) {
        skip_ws(r);
        decode_string(r, &koff, &klen);
        skip_ws(r);
        r->pos++; /* ':' */
      }
      int rc = build(r, &kid, err);
      if (rc != 0) return rc;
      r->nodes[kid].key = koff;
      r->nodes[kid].klen = klen;
      count++;
      skip_ws(r);
      if (r->text[r->pos] == ',') r->pos++;
    }
    r->pos++;
    r->nodes[i].count = count;
  } else if (c == '"') {
    r->nodes[i].kind = PB_JVAL_STRING;
    decode_string(r, &r->nodes[i].str, &r->nodes[i].slen);
  } else if (c == 't' || c == 'f' || c == 'n') {
    r->nodes[i].kind = c == 'n' ? PB_JVAL_NULL : PB_JVAL_BOOL;
    r->nodes[i].boolean = c == 't';
    r->pos += c == 'f' ? 5 : 4;
  } else {
    char *end = NULL;
    r->nodes[i].kind = PB_JVAL_NUMBER;
    r->nodes[i].num = strtod(r->text + r->pos, &end);
    r->pos = (size_t)(end - r->text);
  }
  r->nodes[i].len = r->pos - r->nodes[i].off;
  r->nodes[i].next = r->nnodes;
  return 0;
}

/* FNV-1a of a key. */
static size_t key_hash(const char *k, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
  return (size_t)h;
}

/* Refuses an object c whose members name a key twice, with a hash set of
 * its keys (linear in its members, whatever their number). */
static int check_keys(pb_jsonr_t *r, const pb_jval_t *c, pb_err_t *err) {
  size_t cap = 8;
  while (cap < 2 * c->count) cap *= 2;
  if (grow((void **)&r->seen, &r->seen_cap, cap, sizeof *r->seen) != 0)
    return pb_err_set(err, PB_ENOMEM, "json: out of memory");
  memset(r->seen, 0, cap * sizeof *r->seen);
  for (size_t m = 0; m < c->count; m++) {
    size_t k = r->kids[c->kid0 + m];
    const pb_jval_t *v = &r->nodes[k];
    const char *key = r->strs + v->key;
    size_t h = key_hash(key, v->klen) & (cap - 1);
    for (; r->seen[h] != 0; h = (h + 1) & (cap - 1)) {
      const pb_jval_t *o = &r->nodes[r->seen[h] - 1];
      if (o->klen == v->klen && memcmp(r->strs + o->key, key, v->klen) == 0)
        return pb_err_set(err, PB_EINVAL, "json: key \"%s\" given twice", key);
    }
    r->seen[h] = k + 1;
  }
  return 0;
}

/* Lists every container's children in r->kids (nnodes - 1 entries: each
 * node but the root is the child of one container) and refuses a key
 * given twice in an object. */
static int index_kids(pb_jsonr_t *r, pb_err_t *err) {
  if (grow((void **)&r->kids, &r->kids_cap, r->nnodes, sizeof *r->kids) != 0)
    return pb_err_set(err, PB_ENOMEM, "json: out of memory");
  size_t used = 0;
  for (size_t i = 0; i < r->nnodes; i++) {
    pb_jval_t *c = &r->nodes[i];
    if (c->kind != PB_JVAL_ARRAY && c->kind != PB_JVAL_OBJECT) continue;
    c->kid0 = used;
    for (size_t k = i + 1, m = 0; m < c->count; k = r->nodes[k].next, m++)
      r->kids[used++] = k;
    if (c->kind == PB_JVAL_OBJECT && c->count > 1) {
      int rc = check_keys(r, c, err);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

const pb_jval_t *pb_jsonr_parse(pb_jsonr_t *r, const char *s, size_t n,
                                pb_err_t *err) {
  if (r == NULL || s == NULL) {
    pb_err_set(err, PB_EINVAL, "json: NULL argument");
    return NULL;
  }
  r->nnodes = 0;
  r->strs_len = 0;
  if (pb_json_validate_n(s, n, err) != 0) return NULL;
  if (grow((void **)&r->text, &r->text_cap, n + 1, 1) != 0 ||
      grow((void **)&r->strs, &r->strs_cap, 2 * n + 2, 1) != 0) {
    pb_err_set(err, PB_ENOMEM, "json: out of memory");
    return NULL;
  }
  memcpy(r->text, s, n);
  r->text[n] = '\0';
  r->pos = 0;
  size_t root;
  if (build(r, &root, err) != 0) {
    r->nnodes = 0;
    return NULL;
  }
  if (index_kids(r, err) != 0) {
    r->nnodes = 0;
    return NULL;
  }
  return &r->nodes[root];
}

int pb_jval_kind(const pb_jval_t *v) {
  return v->kind;
}

const char *pb_jval_kind_name(int kind) {
  switch (kind) {
    case PB_JVAL_NULL:
      return "null";
    case PB_JVAL_BOOL:
      return "a boolean";
    case PB_JVAL_NUMBER:
      return "a number";
    case PB_JVAL_STRING:
      return "a string";
    case PB_JVAL_ARRAY:
      return "an array";
    case PB_JVAL_OBJECT:
      return "an object";
    default:
      return "nothing";
  }
}

const char *pb_jval_text(const pb_jval_t *v, size_t *len) {
  if (len != NULL) *len = v->len;
  return v->r->text + v->off;
}

const char *pb_jval_str(const pb_jval_t *v, size_t *len) {
  if (v->kind != PB_JVAL_STRING) return NULL;
  if (len != NULL) *len = v->slen;
  return v->r->strs + v->str;
}

int pb_jval_bool(const pb_jval_t *v) {
  return v->kind == PB_JVAL_BOOL ? v->boolean : -1;
}

double pb_jval_num(const pb_jval_t *v) {
  return v->num;
}

int pb_jval_int(const pb_jval_t *v, int64_t lo, int64_t hi, int64_t *out) {
  if (v->kind != PB_JVAL_NUMBER) return PB_EINVAL;
  const char *t = v->r->text + v->off;
  for (size_t k = 0; k < v->len; k++)
    if (t[k] == '.' || t[k] == 'e' || t[k] == 'E') return PB_EINVAL;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(t, &end, 10);
  if (errno == ERANGE || x < lo || x > hi) return PB_ERANGE;
  *out = (int64_t)x;
  return 0;
}

size_t pb_jval_count(const pb_jval_t *v) {
  return v->kind == PB_JVAL_ARRAY || v->kind == PB_JVAL_OBJECT ? v->count : 0;
}

/* Child i of a container, or NULL. */
static const pb_jval_t *child(const pb_jval_t *v, size_t i) {
  if (i >= pb_jval_count(v)) return NULL;
  return &v->r->nodes[v->r->kids[v->kid0 + i]];
}

const pb_jval_t *pb_jval_at(const pb_jval_t *v, size_t i) {
  return child(v, i);
}

const char *pb_jval_key(const pb_jval_t *v, size_t i) {
  if (v->kind != PB_JVAL_OBJECT) return NULL;
  const pb_jval_t *c = child(v, i);
  return c != NULL ? v->r->strs + c->key : NULL;
}

const pb_jval_t *pb_jval_get(const pb_jval_t *v, const char *key) {
  if (v->kind != PB_JVAL_OBJECT) return NULL;
  size_t klen = strlen(key);
  const pb_jval_t *nodes = v->r->nodes;
  size_t k = (size_t)(v - nodes) + 1;
  for (size_t m = 0; m < v->count; m++, k = nodes[k].next)
    if (nodes[k].klen == klen &&
        memcmp(v->r->strs + nodes[k].key, key, klen) == 0)
      return &nodes[k];
  return NULL;
}
