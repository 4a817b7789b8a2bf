/* config_impl.h - private to the files of the configuration module
 * (config.c, config_schema.c, config_yaml.c): the schema row type and the
 * pb__ functions they share. Not part of the public API (config.h). */
#ifndef PB_CONFIG_IMPL_H
#define PB_CONFIG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"

typedef enum {
  PB__CT_INT,
  PB__CT_INT64,
  PB__CT_DOUBLE,
  PB__CT_BOOL,
  PB__CT_STR,  /* printable ASCII; min/max bound the length */
  PB__CT_ENUM, /* one of `choices` ('|'-separated) */
  PB__CT_NAME, /* [A-Za-z0-9._-]; min/max bound the length */
} pb__ctype_t;

typedef struct {
  const char *path;
  pb__ctype_t type;
  size_t off;
  size_t size; /* of the field (strings: the array) */
  int64_t imin, imax;
  double dmin, dmax;
  const char *def; /* default, in the text form pb_config_set takes */
  const char *choices;
  const char *doc;
} pb__row_t;

/* Longest value quoted back in a message; the rest is elided. */
#define PB__SHOW 80

/* The schema (config_schema.c): one row per key, pb__nrows of them. Rows
 * sharing a section are kept together. */
extern const pb__row_t pb__schema[];
extern const size_t pb__nrows;

/* The row of a dotted key, or NULL. */
const pb__row_t *pb__row_find(const char *key);

/* Whether `prefix` names a section: some key starts with "prefix.". */
int pb__is_section(const char *prefix);

/* Sets PB_ECONFIG "<loc>unknown key ..." with a near key to suggest, if
 * any; returns PB_ECONFIG. */
int pb__unknown_key(pb_err_t *err, const char *loc, const char *key);

/* The allowed range or set of a row, for messages and --help. */
void pb__row_range(const pb__row_t *r, char *buf, size_t n);

/* "integer", "number", "bool", "choice" or "string". */
const char *pb__type_name(pb__ctype_t t);

/* Parses `v` for row r and stores it in *c; 0, or PB_ECONFIG with a
 * message that starts with `loc`. `quoted` says the YAML scalar was quoted,
 * which makes it a string: refused for numbers and bools. */
int pb__row_set(pb_config_t *c, const pb__row_t *r, const char *v, int quoted,
                const char *loc, pb_err_t *err);

/* Formats the value of row r in the text form pb__row_set accepts; 0, or
 * -1 when it does not fit in n bytes. */
int pb__row_format(const pb_config_t *c, const pb__row_t *r, char *buf,
                   size_t n);

#endif
