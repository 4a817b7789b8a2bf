/* json.h - a small JSON writer (metrics.jsonl, /status) and a validator.
 *
 * The writer appends to a growable buffer and places commas and colons
 * itself, so building an object is a flat list of calls:
 *
 *     pb_json_t j;
 *     pb_json_init(&j);
 *     pb_json_obj_begin(&j);
 *     pb_json_key(&j, "iteration"); pb_json_int(&j, 3);
 *     pb_json_kdouble(&j, "v_loss", 0.25);
 *     pb_json_obj_end(&j);
 *     if (pb_json_cstr(&j)) pb_metrics_write(m, pb_json_cstr(&j));
 *     pb_json_free(&j);
 *
 * Strings are escaped as RFC 8259 requires (quote, backslash, control
 * characters); bytes that are not valid UTF-8 become U+FFFD, so the output
 * is always valid JSON text. Non-finite numbers (NaN, infinities) are
 * written as null.
 *
 * Errors are sticky: after a failed allocation (PB_ENOMEM) or a misuse such
 * as a value where a key is due, or an end that does not match its begin
 * (PB_EINVAL), every later call does nothing and returns the same code, and
 * pb_json_cstr returns NULL. So a sequence of calls needs one check at the
 * end. A pb_json_t is used by one thread at a time.
 */
#ifndef PB_JSON_H
#define PB_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define PB_JSON_MAX_DEPTH 64 /* nesting depth of the writer */

/* The fields are private; the struct is transparent only so it can live
 * on the stack. */
typedef struct pb_json {
  char *buf;
  size_t len, cap;
  int err;                      /* sticky: 0, PB_ENOMEM or PB_EINVAL */
  int depth;                    /* open containers */
  int after_key;                /* a key was written, its value is due */
  int done;                     /* a whole top-level value has been written */
  char kind[PB_JSON_MAX_DEPTH]; /* '{' or '[' per open container */
  unsigned char items[PB_JSON_MAX_DEPTH]; /* container has members */
} pb_json_t;

/* Starts an empty writer (allocates nothing yet). */
void pb_json_init(pb_json_t *j);

/* Frees the buffer; the writer may be initialised again. Accepts NULL. */
void pb_json_free(pb_json_t *j);

/* Empties the writer and clears any error but keeps the buffer, so a loop
 * writing one line per iteration allocates only while lines grow. */
void pb_json_reset(pb_json_t *j);

/* Containers. Each returns 0 or the sticky error. */
int pb_json_obj_begin(pb_json_t *j);
int pb_json_obj_end(pb_json_t *j);
int pb_json_arr_begin(pb_json_t *j);
int pb_json_arr_end(pb_json_t *j);

/* Member name inside an object; the next call must write its value. */
int pb_json_key(pb_json_t *j, const char *name);

/* Values. A NULL string is written as null. */
int pb_json_str(pb_json_t *j, const char *s);
int pb_json_strn(pb_json_t *j, const char *s, size_t n); /* may hold NULs */
int pb_json_int(pb_json_t *j, int64_t v);
int pb_json_uint(pb_json_t *j, uint64_t v);
int pb_json_double(pb_json_t *j, double v); /* shortest exact form */
int pb_json_float(pb_json_t *j, float v);   /* shortest form for a float */
int pb_json_bool(pb_json_t *j, bool v);
int pb_json_null(pb_json_t *j);
/* Inserts already-built JSON text as one value. The text is checked with
 * pb_json_validate first; malformed text sets PB_EINVAL. */
int pb_json_raw(pb_json_t *j, const char *json);

/* Key plus value in one call. */
int pb_json_kstr(pb_json_t *j, const char *key, const char *s);
int pb_json_kint(pb_json_t *j, const char *key, int64_t v);
int pb_json_kuint(pb_json_t *j, const char *key, uint64_t v);
int pb_json_kdouble(pb_json_t *j, const char *key, double v);
int pb_json_kfloat(pb_json_t *j, const char *key, float v);
int pb_json_kbool(pb_json_t *j, const char *key, bool v);

/* The text written so far (NUL-terminated, owned by the writer, valid until
 * the next call on it); "" when nothing was written; NULL after an error. */
const char *pb_json_cstr(const pb_json_t *j);

/* Length of that text in bytes. */
size_t pb_json_len(const pb_json_t *j);

/* 0 if the writer holds one complete value with every container closed;
 * the sticky error, or PB_EINVAL if something is still open or empty. */
int pb_json_error(const pb_json_t *j);

/* Hands the malloc'd text to the caller (who frees it) and empties the
 * writer. NULL after an error or if nothing was written. */
char *pb_json_take(pb_json_t *j);

/* Returns 0 if s is exactly one well-formed JSON value (RFC 8259: UTF-8,
 * surrounding whitespace allowed, nesting up to 256 deep), else
 * PB_ECORRUPT. For tests and for checking other modules' output. */
int pb_json_validate(const char *s);

/* Same for s[0..n), filling err with the byte offset and what was
 * expected there. */
int pb_json_validate_n(const char *s, size_t n, pb_err_t *err);

#endif
