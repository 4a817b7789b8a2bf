/* jsonread.h - a strict JSON reader: one text into a tree of values that
 * the caller walks (the writer and the validator are json.h).
 *
 *     pb_jsonr_t *r = pb_jsonr_new(&err);
 *     const pb_jval_t *root = pb_jsonr_parse(r, line, len, &err);
 *     const pb_jval_t *id = root ? pb_jval_get(root, "id") : NULL;
 *     if (id && pb_jval_kind(id) == PB_JVAL_STRING) use(pb_jval_str(id, NULL));
 *     pb_jsonr_destroy(&r);
 *
 * Strict: the text must be exactly one value as pb_json_validate accepts
 * it (RFC 8259: UTF-8, no trailing commas, no comments, nesting up to 256
 * deep, surrounding whitespace allowed), and an object may not name a key
 * twice (RFC 8259 leaves that to the reader; we refuse it, so no member is
 * silently dropped). Strings are decoded (escapes, surrogate pairs; a lone
 * surrogate escape becomes U+FFFD); numbers are kept as text as well as
 * as a double, so integers are read exactly (pb_jval_int).
 *
 * Workload: one short line at a time (analysis queries, records). A
 * reader keeps its buffers from one parse to the next, so a loop over
 * lines allocates only while they grow. The values returned point into
 * the reader and the text is copied: they are valid until the next parse
 * or destroy. A reader is used by one thread at a time. */
#ifndef PB_JSONREAD_H
#define PB_JSONREAD_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct pb_jsonr pb_jsonr_t;
typedef struct pb_jval pb_jval_t;

enum {
  PB_JVAL_NULL = 0,
  PB_JVAL_BOOL = 1,
  PB_JVAL_NUMBER = 2,
  PB_JVAL_STRING = 3,
  PB_JVAL_ARRAY = 4,
  PB_JVAL_OBJECT = 5
};

/* An empty reader; NULL with err filled (PB_ENOMEM). */
pb_jsonr_t *pb_jsonr_new(pb_err_t *err);

/* Frees the reader and every value it returned; accepts NULL, nulls *r. */
void pb_jsonr_destroy(pb_jsonr_t **r);

/* Reads s[0..n) (it need not be NUL-terminated). Returns the root value,
 * or NULL with err filled: PB_ECORRUPT "json: at byte N: expected X" for
 * text that is not one JSON value, PB_EINVAL "json: key \"k\" given
 * twice" for a repeated key, PB_ENOMEM. Forgets the previous parse. */
const pb_jval_t *pb_jsonr_parse(pb_jsonr_t *r, const char *s, size_t n,
                                pb_err_t *err);

/* The kind of v (PB_JVAL_*), and the kind in words for messages ("a
 * string", "an object", ...). */
int pb_jval_kind(const pb_jval_t *v);
const char *pb_jval_kind_name(int kind);

/* The value's text as it stood in the input (a string with its quotes
 * and escapes), not NUL-terminated; its length in *len. For echoing a
 * value back unchanged. */
const char *pb_jval_text(const pb_jval_t *v, size_t *len);

/* A string's decoded UTF-8, NUL-terminated (it may hold NULs of its own
 * from "\u0000": *len, when not NULL, is the whole length); NULL when v
 * is not a string. */
const char *pb_jval_str(const pb_jval_t *v, size_t *len);

/* A boolean's value (0 or 1); -1 when v is not a boolean. */
int pb_jval_bool(const pb_jval_t *v);

/* A number's value as a double (NaN when v is not a number). */
double pb_jval_num(const pb_jval_t *v);

/* A number written as an integer (no fraction, no exponent) in [lo, hi]:
 * 0 and *out set; PB_EINVAL when v is not such a number (another kind, or
 * a fraction or exponent), PB_ERANGE when it lies outside [lo, hi]. */
int pb_jval_int(const pb_jval_t *v, int64_t lo, int64_t hi, int64_t *out);

/* The elements of an array or the members of an object; 0 for the other
 * kinds. */
size_t pb_jval_count(const pb_jval_t *v);

/* Element i of an array, or the value of member i of an object (in the
 * input's order); NULL past the end or for the other kinds. */
const pb_jval_t *pb_jval_at(const pb_jval_t *v, size_t i);

/* The key of member i of an object (decoded, NUL-terminated); NULL past
 * the end or when v is not an object. */
const char *pb_jval_key(const pb_jval_t *v, size_t i);

/* The value of the member of object v named key; NULL when there is none
 * or v is not an object. */
const pb_jval_t *pb_jval_get(const pb_jval_t *v, const char *key);

#endif
