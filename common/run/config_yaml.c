/* config_yaml.c - loading a configuration from YAML (see config.h):
 * pb_config_load_file and pb_config_load_string. The text is read with
 * libyaml's event parser (not its document API) because events carry the
 * line and column we put in error messages; a first pass only checks the
 * syntax, a second applies the keys through the schema (config_schema.c)
 * to a copy of the config. */
#include "config_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

typedef struct {
  yaml_parser_t parser;
  const char *origin; /* file name or "<string>" */
  const char *text;   /* the YAML text, to place reader errors */
  pb_config_t *c;     /* the copy being filled */
  pb_err_t *err;
  size_t nseen;
  char last[PB_CONFIG_KEY_MAX]; /* last key read, to place syntax errors */
  /* Every dotted path (sections and keys) met so far, to refuse
   * duplicates. Only known paths get in, so the bound is the schema:
   * PB__SEEN_MAX entries, allocated with the loader. */
  char seen[][PB_CONFIG_KEY_MAX];
} pb__loader_t;
#define PB__SEEN_MAX (pb__nrows * 2)

static void loc_of(const pb__loader_t *L, yaml_mark_t m, char *buf, size_t n) {
  snprintf(buf, n, "%s:%zu:%zu: ", L->origin, m.line + 1, m.column + 1);
}

static int syntax_error(pb__loader_t *L) {
  const yaml_parser_t *p = &L->parser;
  const char *problem = p->problem ? p->problem : "malformed YAML";
  size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
  if (p->error == YAML_READER_ERROR) { /* libyaml gives a byte offset only */
    line = col = 1;
    for (size_t i = 0; i < p->problem_offset && L->text[i] != '\0'; i++) {
      if (L->text[i] == '\n')
        line++, col = 1;
      else
        col++;
    }
  }
  char ctx[160] = "", after[PB_CONFIG_KEY_MAX + 32] = "";
  if (p->context != NULL)
    snprintf(ctx, sizeof ctx, " %s (line %zu)", p->context,
             p->context_mark.line + 1);
  /* libyaml does not know our keys; the last one read says where we were. */
  if (L->last[0] != '\0')
    snprintf(after, sizeof after, ", after key '%s'", L->last);
  return pb_err_set(L->err, PB_ECONFIG, "%s:%zu:%zu: YAML syntax error: %s%s%s",
                    L->origin, line, col, problem, ctx, after);
}

static int next_event(pb__loader_t *L, yaml_event_t *ev) {
  if (!yaml_parser_parse(&L->parser, ev)) return syntax_error(L);
  return 0;
}

static int mark_seen(pb__loader_t *L, const char *path, yaml_mark_t m) {
  for (size_t i = 0; i < L->nseen; i++) {
    if (!strcmp(L->seen[i], path)) {
      char loc[PB_ERR_MSG_MAX / 2];
      loc_of(L, m, loc, sizeof loc);
      return pb_err_set(L->err, PB_ECONFIG, "%sduplicate key '%s'", loc, path);
    }
  }
  if (L->nseen < PB__SEEN_MAX) {
    snprintf(L->seen[L->nseen], PB_CONFIG_KEY_MAX, "%.*s",
             PB_CONFIG_KEY_MAX - 1, path);
    L->nseen++;
  }
  return 0;
}

static const char *event_what(yaml_event_type_t t) {
  switch (t) {
    case YAML_MAPPING_START_EVENT:
      return "a mapping";
    case YAML_SEQUENCE_START_EVENT:
      return "a list";
    case YAML_ALIAS_EVENT:
      return "an alias";
    default:
      return "something else";
  }
}

static int is_null_scalar(const yaml_event_t *ev) {
  if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
  const char *v = (const char *)ev->data.scalar.value;
  return !strcmp(v, "") || !strcmp(v, "~") || !strcmp(v, "null") ||
         !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* Reads the pairs of a mapping whose MAPPING_START has been consumed.
 * `prefix` is its dotted path ("" at the top). */
static int load_mapping(pb__loader_t *L, const char *prefix) {
  char loc[PB_ERR_MSG_MAX / 2];
  for (;;) {
    yaml_event_t kev;
    int rc = next_event(L, &kev);
    if (rc) return rc;
    if (kev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&kev);
      return 0;
    }
    loc_of(L, kev.start_mark, loc, sizeof loc);
    if (kev.type != YAML_SCALAR_EVENT) {
      rc = pb_err_set(
          L->err, PB_ECONFIG, "%skeys must be plain words, got %s%s%s", loc,
          event_what(kev.type), *prefix ? " in section " : "", prefix);
      yaml_event_delete(&kev);
      return rc;
    }
    char path[PB_CONFIG_KEY_MAX * 2];
    const char *k = (const char *)kev.data.scalar.value;
    int plen = snprintf(path, sizeof path, "%s%s%.*s", prefix,
                        *prefix ? "." : "", PB_CONFIG_KEY_MAX, k);
    yaml_mark_t kmark = kev.start_mark;
    int too_long = plen < 0 || (size_t)plen >= PB_CONFIG_KEY_MAX ||
                   strlen(k) >= PB_CONFIG_KEY_MAX;
    yaml_event_delete(&kev);
    const pb__row_t *r = too_long ? NULL : pb__row_find(path);
    int section = !too_long && r == NULL && pb__is_section(path);
    if (r == NULL && !section) return pb__unknown_key(L->err, loc, path);
    if ((rc = mark_seen(L, path, kmark))) return rc;
    snprintf(L->last, sizeof L->last, "%.*s", PB_CONFIG_KEY_MAX - 1, path);

    yaml_event_t vev;
    if ((rc = next_event(L, &vev))) return rc;
    loc_of(L, vev.start_mark, loc, sizeof loc);
    if (vev.type == YAML_SCALAR_EVENT && r != NULL) {
      if (is_null_scalar(&vev))
        rc = pb_err_set(L->err, PB_ECONFIG, "%s%s: missing value (expected %s)",
                        loc, path, pb__type_name(r->type));
      else
        rc = pb__row_set(L->c, r, (const char *)vev.data.scalar.value,
                         vev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE, loc,
                         L->err);
      yaml_event_delete(&vev);
      if (rc) return rc;
    } else if (vev.type == YAML_MAPPING_START_EVENT && section) {
      yaml_event_delete(&vev);
      if ((rc = load_mapping(L, path))) return rc;
    } else {
      if (section)
        rc = pb_err_set(
            L->err, PB_ECONFIG,
            "%s%s: is a section, expected a mapping of its keys, got %s", loc,
            path,
            vev.type == YAML_SCALAR_EVENT ? "a value" : event_what(vev.type));
      else
        rc = pb_err_set(L->err, PB_ECONFIG,
                        "%s%s: expected one %s value, got %s", loc, path,
                        pb__type_name(r->type), event_what(vev.type));
      yaml_event_delete(&vev);
      return rc;
    }
  }
}

/* Stream -> one document -> a top-level mapping (or nothing at all). */
static int load_stream(pb__loader_t *L) {
  yaml_event_t ev;
  int rc;
  if ((rc = next_event(L, &ev))) return rc; /* STREAM_START */
  yaml_event_delete(&ev);
  if ((rc = next_event(L, &ev))) return rc;
  if (ev.type == YAML_STREAM_END_EVENT) { /* empty file: nothing to apply */
    yaml_event_delete(&ev);
    return 0;
  }
  yaml_event_delete(&ev); /* DOCUMENT_START */
  if ((rc = next_event(L, &ev))) return rc;
  char loc[PB_ERR_MSG_MAX / 2];
  loc_of(L, ev.start_mark, loc, sizeof loc);
  if (ev.type == YAML_MAPPING_START_EVENT) {
    yaml_event_delete(&ev);
    if ((rc = load_mapping(L, ""))) return rc;
  } else if (ev.type == YAML_SCALAR_EVENT && is_null_scalar(&ev)) {
    yaml_event_delete(&ev); /* a document with only comments */
  } else {
    rc = pb_err_set(
        L->err, PB_ECONFIG, "%sthe top level must be a mapping of keys, got %s",
        loc, ev.type == YAML_SCALAR_EVENT ? "a value" : event_what(ev.type));
    yaml_event_delete(&ev);
    return rc;
  }
  if ((rc = next_event(L, &ev))) return rc; /* DOCUMENT_END */
  yaml_event_delete(&ev);
  if ((rc = next_event(L, &ev))) return rc;
  loc_of(L, ev.start_mark, loc, sizeof loc);
  int type = ev.type;
  yaml_event_delete(&ev);
  if (type != YAML_STREAM_END_EVENT)
    return pb_err_set(L->err, PB_ECONFIG, "%sonly one YAML document is allowed",
                      loc);
  return 0;
}

/* Pass 1: the whole text through the parser, tracking only where keys
 * are, so that a syntax error is reported as such (and near which key)
 * even when a value before it would also be refused: the streaming pass 2
 * would otherwise see "10 max_depth" as a bad number before libyaml
 * notices the bad indentation after it. */
static int check_syntax(pb__loader_t *L) {
  enum { MAXD = 64 };
  struct {
    int mapping, expect_key;
    char key[PB_CONFIG_KEY_MAX];
  } st[MAXD];
  int depth = 0, rc = 0;
  for (;;) {
    yaml_event_t ev;
    if ((rc = next_event(L, &ev))) return rc;
    yaml_event_type_t t = ev.type;
    if (t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT) {
      if (depth > 0 && depth <= MAXD && st[depth - 1].mapping) {
        if (st[depth - 1].expect_key && t == YAML_SCALAR_EVENT) {
          snprintf(st[depth - 1].key, PB_CONFIG_KEY_MAX, "%.*s",
                   PB_CONFIG_KEY_MAX - 1, (const char *)ev.data.scalar.value);
          /* The dotted path of this key, for the message. */
          size_t n = 0;
          L->last[0] = '\0';
          for (int i = 0; i < depth && i < MAXD; i++) {
            if (!st[i].mapping) continue;
            int w = snprintf(L->last + n, sizeof L->last - n, "%s%s",
                             n ? "." : "", st[i].key);
            if (w < 0 || (size_t)w >= sizeof L->last - n) break;
            n += (size_t)w;
          }
        }
        st[depth - 1].expect_key = !st[depth - 1].expect_key;
      }
    } else if (t == YAML_MAPPING_START_EVENT ||
               t == YAML_SEQUENCE_START_EVENT) {
      if (depth < MAXD) {
        st[depth].mapping = t == YAML_MAPPING_START_EVENT;
        st[depth].expect_key = 1;
        st[depth].key[0] = '\0';
      }
      depth++;
    } else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) {
      depth--;
      if (depth > 0 && depth <= MAXD && st[depth - 1].mapping)
        st[depth - 1].expect_key = !st[depth - 1].expect_key;
    }
    yaml_event_delete(&ev);
    if (t == YAML_STREAM_END_EVENT) return 0;
  }
}

/* Runs one pass (check_syntax or load_stream) over text with a fresh
 * parser. */
static int run_pass(pb__loader_t *L, const char *text, size_t len,
                    int (*pass)(pb__loader_t *)) {
  memset(&L->parser, 0, sizeof L->parser);
  if (!yaml_parser_initialize(&L->parser))
    return pb_err_set(L->err, PB_ENOMEM,
                      "%s: cannot initialise the YAML parser", L->origin);
  yaml_parser_set_input_string(&L->parser, (const unsigned char *)text, len);
  int rc = pass(L);
  yaml_parser_delete(&L->parser);
  return rc;
}

static int load(pb_config_t *c, const char *text, size_t len,
                const char *origin, pb_err_t *err) {
  pb__loader_t *L = calloc(1, sizeof *L + PB__SEEN_MAX * sizeof L->seen[0]);
  if (L == NULL) return pb_err_set(err, PB_ENOMEM, "%s: out of memory", origin);
  /* Work on a copy so that a failed load leaves *c untouched. */
  pb_config_t tmp;
  memcpy(&tmp, c, sizeof tmp);
  L->origin = origin;
  L->text = text;
  L->c = &tmp;
  L->err = err;
  int rc = run_pass(L, text, len, check_syntax);
  L->last[0] = '\0';
  if (rc == 0) rc = run_pass(L, text, len, load_stream);
  if (rc == 0) memcpy(c, &tmp, sizeof tmp);
  free(L);
  return rc;
}

/* Config files are small; anything bigger is a mistake (a wrong path). */
#define PB__CONFIG_FILE_MAX (4u << 20)

int pb_config_load_file(pb_config_t *c, const char *path, pb_err_t *err) {
  if (c == NULL || path == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_load_file: NULL argument");
  char *text = NULL;
  size_t len = 0;
  int rc = pb_read_file(path, PB__CONFIG_FILE_MAX, &text, &len, err);
  if (rc == PB_ERANGE)
    rc = pb_err_set(err, PB_ECONFIG,
                    "%s: larger than %u bytes: not a config file", path,
                    PB__CONFIG_FILE_MAX);
  if (rc == 0) rc = load(c, text, len, path, err);
  free(text);
  return rc;
}

int pb_config_load_string(pb_config_t *c, const char *yaml, pb_err_t *err) {
  if (c == NULL || yaml == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_load_string: NULL argument");
  return load(c, yaml, strlen(yaml), "<string>", err);
}
