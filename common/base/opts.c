/* opts.c - the command line of every program, read from its table of
 * options (opts.h). One pass over argv, a linear search of the table per
 * option: tables are a dozen rows, command lines a few dozen words. */
#include "opts.h"

#include <stdarg.h>
#include <string.h>

#include "invariant.h"

int pb_opts_fail(const pb_opts_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", o->prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  o->usage(stderr);
  return PB_OPTS_USAGE;
}

int pb_opts_exit(int rc) {
  pb_assert(rc == PB_OPTS_HELP || rc == PB_OPTS_USAGE);
  return rc == PB_OPTS_HELP ? 0 : 2;
}

/* The row of the long name name[0..len), or NULL. */
static const pb_opts_row_t *by_name(const pb_opts_t *o, const char *name,
                                    size_t len) {
  for (int i = 0; i < o->nrows; i++) {
    const char *n = o->rows[i].name;
    if (n != NULL && strlen(n) == len && memcmp(n, name, len) == 0)
      return &o->rows[i];
  }
  return NULL;
}

/* The row of the one-letter alias c, or NULL. */
static const pb_opts_row_t *by_alias(const pb_opts_t *o, char c) {
  for (int i = 0; i < o->nrows; i++)
    if (o->rows[i].alias != 0 && o->rows[i].alias == c) return &o->rows[i];
  return NULL;
}

/* A table the program got wrong is a bug: every row has a name or an
 * alias and the destination of its kind, and no name or alias is taken
 * twice or by --help/-h. */
static int table_ok(const pb_opts_t *o) {
  for (int i = 0; i < o->nrows; i++) {
    const pb_opts_row_t *r = &o->rows[i];
    if (r->name == NULL && r->alias == 0) return 0;
    if (r->name != NULL &&
        (r->name[0] == '\0' || r->name[0] == '-' || strchr(r->name, '=') ||
         !strcmp(r->name, "help") || by_name(o, r->name, strlen(r->name)) != r))
      return 0;
    if (r->alias != 0 &&
        (r->alias == 'h' || r->alias == '-' || by_alias(o, r->alias) != r))
      return 0;
    if (r->kind == PB_OPTS_KIND_VALUE && r->value == NULL) return 0;
    if (r->kind == PB_OPTS_KIND_FLAG && r->flag == NULL) return 0;
    if (r->kind == PB_OPTS_KIND_LIST &&
        (r->list == NULL || r->count == NULL || r->max < 0))
      return 0;
  }
  return o->max_pos == 0 || (o->pos != NULL && o->npos != NULL);
}

/* Stores the value v of option r, typed as name[0..len). PB_OPTS_OK, or
 * PB_OPTS_USAGE after the message when a list is full. */
static int store(const pb_opts_t *o, const pb_opts_row_t *r, const char *name,
                 size_t len, const char *v) {
  if (r->kind == PB_OPTS_KIND_VALUE) {
    *r->value = v;
    return PB_OPTS_OK;
  }
  if (*r->count >= r->max)
    return pb_opts_fail(o, "option '%.*s' given more than %d times", (int)len,
                        name, r->max);
  r->list[(*r->count)++] = v;
  return PB_OPTS_OK;
}

/* One option at argv[*i] (which begins with '-' and is not "-" or "--"),
 * with the value it takes, if any, from argv[*i + 1] (then *i moves on to
 * it). PB_OPTS_OK, or PB_OPTS_HELP / PB_OPTS_USAGE as pb_opts_parse. */
static int option(const pb_opts_t *o, int argc, char **argv, int *i) {
  const char *arg = argv[*i], *attached = NULL;
  const pb_opts_row_t *r;
  char shown[3] = {'-', arg[1], '\0'}; /* "-E" */
  const char *name = shown;
  size_t len = 2;
  if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
    o->usage(stdout);
    return PB_OPTS_HELP;
  }
  if (arg[1] == '-') {
    const char *eq = strchr(arg, '=');
    len = eq ? (size_t)(eq - arg) : strlen(arg);
    r = by_name(o, arg + 2, len - 2);
    name = arg;
    if (eq != NULL) attached = eq + 1;
  } else {
    r = by_alias(o, arg[1]);
    if (arg[2] != '\0') attached = arg + 2;
  }
  if (r == NULL) return pb_opts_fail(o, "unknown option '%s'", arg);
  if (r->kind == PB_OPTS_KIND_FLAG) {
    if (attached != NULL)
      return pb_opts_fail(o, "option '%.*s' takes no value", (int)len, name);
    *r->flag = 1;
    return PB_OPTS_OK;
  }
  if (attached == NULL) {
    if (*i + 1 >= argc)
      return pb_opts_fail(o, "option '%.*s' needs a value", (int)len, name);
    attached = argv[++*i];
  }
  return store(o, r, name, len, attached);
}

int pb_opts_parse(const pb_opts_t *o, int argc, char **argv) {
  pb_assert(o != NULL && o->prog != NULL && o->usage != NULL);
  pb_assert(table_ok(o));
  int only_pos = 0;
  if (o->npos != NULL) *o->npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!only_pos && !strcmp(arg, "--")) {
      only_pos = 1;
      continue;
    }
    if (!only_pos && arg[0] == '-' && arg[1] != '\0') {
      int rc = option(o, argc, argv, &i);
      if (rc != PB_OPTS_OK) return rc;
      continue;
    }
    if (o->npos == NULL || *o->npos >= o->max_pos)
      return pb_opts_fail(o, "unexpected argument '%s'", arg);
    o->pos[(*o->npos)++] = arg;
  }
  return PB_OPTS_OK;
}
