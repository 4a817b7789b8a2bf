/* config.c - schema-driven YAML configuration (see config.h).
 *
 * Everything about a key lives in one row of the schema (config_schema.c);
 * the loader (config_yaml.c), pb_config_set, pb_config_check,
 * pb_config_to_yaml and the --help listing only walk that table. This file
 * holds the public entry points other than loading: defaults, set/get,
 * overrides, the checks, the output and the conversions. */
#include "config_impl.h"
#include "algos.h"
#include "bounds.h"
#include "lines.h"
#include "util.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pb_config_defaults(pb_config_t *c) {
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < pb__nrows; i++) {
    /* Defaults are literals in the table; test_config checks they parse. */
    (void)pb__row_set(c, &pb__schema[i], pb__schema[i].def, 0, "", NULL);
  }
}

int pb_config_set(pb_config_t *c, const char *key, const char *value,
                  pb_err_t *err) {
  if (c == NULL || key == NULL || value == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_set: NULL argument");
  const pb__row_t *r = pb__row_find(key);
  if (r == NULL) {
    if (pb__is_section(key))
      return pb_err_set(err, PB_ECONFIG,
                        "'%s' is a section, not a key (e.g. '%s.<key>')", key,
                        key);
    return pb__unknown_key(err, "", key);
  }
  return pb__row_set(c, r, value, 0, "", err);
}

int pb_config_apply_override(pb_config_t *c, const char *kv, pb_err_t *err) {
  if (c == NULL || kv == NULL)
    return pb_err_set(err, PB_EINVAL,
                      "pb_config_apply_override: NULL argument");
  const char *eq = strchr(kv, '=');
  if (eq == NULL)
    return pb_err_set(err, PB_ECONFIG,
                      "override '%.*s' is not of the form key=value", PB__SHOW,
                      kv);
  size_t klen = (size_t)(eq - kv);
  if (klen == 0)
    return pb_err_set(err, PB_ECONFIG, "override '%.*s' has an empty key",
                      PB__SHOW, kv);
  char key[PB_CONFIG_KEY_MAX];
  if (klen >= sizeof key) return pb__unknown_key(err, "", kv);
  memcpy(key, kv, klen);
  key[klen] = '\0';
  return pb_config_set(c, key, eq + 1, err);
}

int pb_config_get(const pb_config_t *c, const char *key, char *buf, size_t n,
                  pb_err_t *err) {
  if (c == NULL || key == NULL || buf == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_get: NULL argument");
  const pb__row_t *r = pb__row_find(key);
  if (r == NULL) return pb__unknown_key(err, "", key);
  if (pb__row_format(c, r, buf, n))
    return pb_err_set(err, PB_ERANGE, "%s: buffer of %zu bytes is too small",
                      key, n);
  return 0;
}

/* ---- checks ---------------------------------------------------------- */

/* Re-validates one field as stored (it may have been set directly). */
static int row_check(const pb_config_t *c, const pb__row_t *r, pb_err_t *err) {
  const char *field = (const char *)c + r->off;
  char buf[PB_CONFIG_PATH_MAX + 8];
  if (r->type == PB__CT_STR || r->type == PB__CT_NAME ||
      r->type == PB__CT_ENUM) {
    if (memchr(field, '\0', r->size) == NULL)
      return pb_err_set(err, PB_ECONFIG, "%s: value is not NUL-terminated",
                        r->path);
  }
  if (r->type == PB__CT_BOOL) {
    unsigned char b;
    memcpy(&b, field, 1);
    if (b > 1)
      return pb_err_set(err, PB_ECONFIG, "%s: bool holds %u", r->path, b);
    return 0;
  }
  if (pb__row_format(c, r, buf, sizeof buf))
    return pb_err_set(err, PB_ECONFIG, "%s: value cannot be formatted",
                      r->path);
  pb_config_t scratch;
  memset(&scratch, 0, sizeof scratch);
  return pb__row_set(&scratch, r, buf, 0, "", err);
}

static int endpoint_ok(const char *e) {
  static const char *transports[] = {"tcp://", "ipc://", "inproc://"};
  for (size_t i = 0; i < 3; i++) {
    size_t n = strlen(transports[i]);
    if (!strncmp(e, transports[i], n) && e[n] != '\0' && strchr(e, ' ') == NULL)
      return 1;
  }
  return 0;
}

/* tcp://HOST:* (or :0): the kernel picks the port, so two such endpoints
 * of the same host are not the same. */
static int any_port(const char *e) {
  size_t n = strlen(e);
  return !strncmp(e, "tcp://", 6) && n > 2 && e[n - 2] == ':' &&
         (e[n - 1] == '*' || e[n - 1] == '0');
}

/* "random,lookahead:1": non-empty items, each a name with an optional
 * ":parameter". What the names mean is the evaluator's business. */
static int opponent_ok(const char *p, size_t len) {
  int ok = len > 0 && isalpha((unsigned char)p[0]);
  int colons = 0;
  for (size_t i = 0; ok && i < len; i++) {
    unsigned char ch = (unsigned char)p[i];
    if (ch == ':') {
      colons++;
      ok = colons == 1 && i + 1 < len;
    } else {
      ok = isalnum(ch) || ch == '_' || ch == '-' || ch == '.' || ch == '/';
    }
  }
  return ok;
}

/* eval.opponents: each item of the form name or name:parameter, shorter
 * than PB_CONFIG_OPPONENT_MAX, at most PB_CONFIG_MAX_OPPONENTS, none
 * twice. */
static int check_opponents(const char *s, pb_err_t *err) {
  char opp[PB_CONFIG_MAX_OPPONENTS][PB_CONFIG_OPPONENT_MAX];
  int n = 0;
  for (const char *p = s;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len >= PB_CONFIG_OPPONENT_MAX)
      return pb_err_set(err, PB_ECONFIG,
                        "eval.opponents: empty item or item longer than %d "
                        "characters in '%.*s'",
                        PB_CONFIG_OPPONENT_MAX - 1, PB__SHOW, s);
    if (!opponent_ok(p, len))
      return pb_err_set(err, PB_ECONFIG,
                        "eval.opponents: item '%.*s' in '%.*s' is not of the "
                        "form name or name:parameter",
                        (int)len, p, PB__SHOW, s);
    if (n == PB_CONFIG_MAX_OPPONENTS)
      return pb_err_set(err, PB_ECONFIG,
                        "eval.opponents: more than %d opponents in '%.*s'",
                        PB_CONFIG_MAX_OPPONENTS, PB__SHOW, s);
    memcpy(opp[n], p, len);
    opp[n][len] = '\0';
    for (int j = 0; j < n; j++)
      if (!strcmp(opp[j], opp[n]))
        return pb_err_set(err, PB_ECONFIG,
                          "eval.opponents: '%s' is listed twice", opp[n]);
    n++;
    if (comma == NULL) return 0;
    p = comma + 1;
  }
}

/* eval.anchors: "SPEC=R,SPEC=none,...", each SPEC one of eval.opponents. */
static int check_anchors(const pb_config_t *c, pb_err_t *err) {
  char opp[PB_CONFIG_MAX_OPPONENTS][PB_CONFIG_OPPONENT_MAX];
  int n = pb_config_opponents(c, opp);
  char item[PB_CONFIG_OPPONENT_MAX + 32];
  for (const char *a = c->eval.anchors; *a != '\0';) {
    const char *comma = strchr(a, ',');
    size_t len = comma ? (size_t)(comma - a) : strlen(a);
    if (len == 0 || len >= sizeof item)
      return pb_err_set(err, PB_ECONFIG,
                        "eval.anchors: empty or too long item in '%.*s'",
                        PB__SHOW, c->eval.anchors);
    memcpy(item, a, len);
    item[len] = '\0';
    pb_err_t e;
    pb_err_clear(&e);
    size_t slen;
    double r;
    if (pb_config_anchor(item, &slen, &r, &e) != 0)
      return pb_err_set(err, PB_ECONFIG, "eval.anchors: %s", e.msg);
    int found = 0;
    for (int j = 0; j < n && !found; j++)
      found = strlen(opp[j]) == slen && !strncmp(opp[j], item, slen);
    if (!found)
      return pb_err_set(err, PB_ECONFIG,
                        "eval.anchors: anchor '%s': '%.*s' is not one of the "
                        "opponents (eval.opponents)",
                        item, (int)slen, item);
    a = comma ? comma + 1 : a + len;
  }
  return 0;
}

int pb_config_opponents(const pb_config_t *c,
                        char (*out)[PB_CONFIG_OPPONENT_MAX]) {
  int n = 0;
  for (const char *p = c->eval.opponents; n < PB_CONFIG_MAX_OPPONENTS;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len >= PB_CONFIG_OPPONENT_MAX) len = PB_CONFIG_OPPONENT_MAX - 1;
    memcpy(out[n], p, len);
    out[n++][len] = '\0';
    if (comma == NULL) break;
    p = comma + 1;
  }
  return n;
}

int pb_config_anchor(const char *item, size_t *spec_len, double *rating,
                     pb_err_t *err) {
  const char *eq = strrchr(item, '=');
  if (eq == NULL || eq == item || eq[1] == '\0')
    return pb_err_set(err, PB_EINVAL,
                      "anchor '%s': expected SPEC=RATING (e.g. "
                      "lookahead:2=1450, or SPEC=none)",
                      item);
  double r = NAN;
  if (strcmp(eq + 1, "none") != 0) {
    char *end = NULL;
    errno = 0;
    r = strtod(eq + 1, &end);
    if (errno != 0 || *end != '\0' || !isfinite(r) || fabs(r) > 1e6)
      return pb_err_set(err, PB_EINVAL,
                        "anchor '%s': rating '%s' is not a number within "
                        "+-1e6",
                        item, eq + 1);
  }
  *spec_len = (size_t)(eq - item);
  *rating = r;
  return 0;
}

int pb_config_check(const pb_config_t *c, pb_err_t *err) {
  if (c == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_check: NULL config");
  int rc;
  for (size_t i = 0; i < pb__nrows; i++)
    if ((rc = row_check(c, &pb__schema[i], err))) return rc;

  const pb_game_t *g = pb_game_by_name(c->game);
  if (g == NULL)
    return pb_err_set(err, PB_ECONFIG,
                      "game: '%s' is not a known game: allowed %s", c->game,
                      pb_game_names());
  if (!endpoint_ok(c->net.work_endpoint))
    return pb_err_set(err, PB_ECONFIG,
                      "net.work_endpoint: '%.*s' is not a ZeroMQ endpoint "
                      "(tcp://host:port, ipc://path or inproc://name)",
                      PB__SHOW, c->net.work_endpoint);
  if (!endpoint_ok(c->net.pub_endpoint))
    return pb_err_set(err, PB_ECONFIG,
                      "net.pub_endpoint: '%.*s' is not a ZeroMQ endpoint "
                      "(tcp://host:port, ipc://path or inproc://name)",
                      PB__SHOW, c->net.pub_endpoint);
  struct in_addr bind_addr;
  if (inet_pton(AF_INET, c->net.http_bind, &bind_addr) != 1)
    return pb_err_set(err, PB_ECONFIG,
                      "net.http_bind: '%.*s' is not an IPv4 address (e.g. "
                      "127.0.0.1, or 0.0.0.0 for every interface)",
                      PB__SHOW, c->net.http_bind);
  if (!strcmp(c->net.work_endpoint, c->net.pub_endpoint) &&
      !any_port(c->net.work_endpoint))
    return pb_err_set(err, PB_ECONFIG,
                      "net.work_endpoint and net.pub_endpoint are both '%.*s'",
                      PB__SHOW, c->net.work_endpoint);
  if (c->net.lease_max_ms < c->net.lease_ms)
    return pb_err_set(err, PB_ECONFIG,
                      "net.lease_max_ms (%d) must be at least net.lease_ms "
                      "(%d)",
                      c->net.lease_max_ms, c->net.lease_ms);
  if (c->net.heartbeat_ms >= c->net.lease_ms)
    return pb_err_set(
        err, PB_ECONFIG,
        "net.heartbeat_ms (%d) must be shorter than net.lease_ms (%d), or "
        "live workers lose their leases",
        c->net.heartbeat_ms, c->net.lease_ms);
  if (c->train.batch_size > c->train.replay_capacity)
    return pb_err_set(
        err, PB_ECONFIG,
        "train.batch_size (%d) is larger than train.replay_capacity (%d)",
        c->train.batch_size, c->train.replay_capacity);
  if (c->train.cuda_batch_scale > 1 &&
      (int64_t)c->train.batch_size * c->train.cuda_batch_scale >
          c->train.replay_capacity)
    return pb_err_set(err, PB_ECONFIG,
                      "train.batch_size x train.cuda_batch_scale (%d x %d, "
                      "the minibatch on a CUDA learner) is larger than "
                      "train.replay_capacity (%d)",
                      c->train.batch_size, c->train.cuda_batch_scale,
                      c->train.replay_capacity);
  if (c->eval.opening_random_moves >= g->max_turns)
    return pb_err_set(err, PB_ECONFIG,
                      "eval.opening_random_moves (%d) must be below the length "
                      "of the longest "
                      "%s game (%d moves)",
                      c->eval.opening_random_moves, g->name, g->max_turns);
  /* The algorithm's row (algos.h): what its fields rule out, then its own
   * check. The schema's enum admits only the rows' names. */
  const pb_algo_data_t *a = pb_algos_of(c);
  if (a == NULL)
    return pb_err_set(err, PB_ECONFIG,
                      "algorithm: '%.*s' has no row in common/run/algos.c",
                      PB__SHOW, c->algorithm);
  if (!a->searches && c->train.v_search_mix > 0)
    return pb_err_set(err, PB_ECONFIG,
                      "train.v_search_mix (%g) needs search values: it "
                      "applies to an algorithm with a search phase (probs), "
                      "not %s",
                      c->train.v_search_mix, a->name);
  if (!a->searches && pb_config_abnet_targets(c))
    return pb_err_set(err, PB_ECONFIG,
                      "search.algorithm abnet makes the search phase's "
                      "Q-targets: it applies to an algorithm with a search "
                      "phase (probs), not %s",
                      a->name);
  if (a->check != NULL && (rc = a->check(c, err)) != 0) return rc;
  if (pb_config_abnet_targets(c) &&
      (c->search.max_depth < 2 ||
       c->search.max_depth > PB_ABNET_MAX_HORIZON))
    return pb_err_set(err, PB_ECONFIG,
                      "search.max_depth (%d) must be in 2..%d with "
                      "search.algorithm abnet (the horizon's plies below the "
                      "position: 1 ply for the move, at least 1 searched)",
                      c->search.max_depth, PB_ABNET_MAX_HORIZON);
  if (c->mcts.full_fraction < 1.0 &&
      (c->mcts.small_simulations < 1 ||
       c->mcts.small_simulations > c->mcts.simulations))
    return pb_err_set(err, PB_ECONFIG,
                      "mcts.small_simulations (%d) must be in "
                      "1..mcts.simulations (%d) when mcts.full_fraction (%g) "
                      "is below 1 (playout cap randomization)",
                      c->mcts.small_simulations, c->mcts.simulations,
                      c->mcts.full_fraction);
  if (c->mcts.forced_playouts && !strcmp(c->mcts.root, "gumbel"))
    return pb_err_set(err, PB_ECONFIG,
                      "mcts.forced_playouts is a rule of the puct root; "
                      "mcts.root is gumbel");
  if (c->model.v.res_blocks > 0 && c->model.v.conv_layers == 0)
    return pb_err_set(err, PB_ECONFIG,
                      "model.v.res_blocks (%d) needs model.v.conv_layers >= 1",
                      c->model.v.res_blocks);
  if (c->model.q.res_blocks > 0 && c->model.q.conv_layers == 0)
    return pb_err_set(err, PB_ECONFIG,
                      "model.q.res_blocks (%d) needs model.q.conv_layers >= 1",
                      c->model.q.res_blocks);
  if ((rc = check_opponents(c->eval.opponents, err)) != 0) return rc;
  return check_anchors(c, err);
}

/* ---- output ---------------------------------------------------------- */

/* Number of leading dotted segments that paths a and b share, counting
 * only the first `limit` segments of each. */
static size_t shared_segments(const char *a, const char *b, size_t limit) {
  size_t n = 0;
  for (size_t i = 0;; i++) {
    int ea = a[i] == '.' || a[i] == '\0', eb = b[i] == '.' || b[i] == '\0';
    if (ea && eb) {
      if (++n == limit || a[i] == '\0' || b[i] == '\0') return n;
    } else if (ea || eb || a[i] != b[i]) {
      return n;
    }
  }
}

static size_t count_segments(const char *path) {
  size_t n = 1;
  for (const char *p = path; *p; p++) n += *p == '.';
  return n;
}

/* Pointer to segment `k` (0-based) of a dotted path and its length. */
static const char *segment(const char *path, size_t k, int *len) {
  const char *p = path;
  for (size_t i = 0; i < k; i++) p = strchr(p, '.') + 1;
  const char *dot = strchr(p, '.');
  *len = dot ? (int)(dot - p) : (int)strlen(p);
  return p;
}

int pb_config_to_yaml(const pb_config_t *c, char **out, pb_err_t *err) {
  if (c == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_to_yaml: NULL argument");
  *out = NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return pb_err_set(err, PB_ENOMEM, "pb_config_to_yaml: out of memory");
  fprintf(f, "# probs configuration: every key, as used.\n");
  const char *prev = NULL;
  for (size_t i = 0; i < pb__nrows; i++) {
    const pb__row_t *r = &pb__schema[i];
    size_t nsec = count_segments(r->path) - 1; /* sections above the key */
    size_t shared = 0;
    if (prev != NULL) {
      size_t pnsec = count_segments(prev) - 1;
      size_t lim = nsec < pnsec ? nsec : pnsec;
      shared = lim ? shared_segments(r->path, prev, lim) : 0;
    }
    if (shared == 0 && (nsec > 0 || (prev != NULL && count_segments(prev) > 1)))
      fputc('\n', f); /* a blank line between top-level sections */
    for (size_t k = shared; k < nsec; k++) {
      int slen;
      const char *s = segment(r->path, k, &slen);
      fprintf(f, "%*s%.*s:\n", (int)(2 * k), "", slen, s);
    }
    char val[PB_CONFIG_PATH_MAX + 8];
    if (pb__row_format(c, r, val, sizeof val)) {
      fclose(f);
      free(buf);
      return pb_err_set(err, PB_ECONFIG, "%s: value cannot be formatted",
                        r->path);
    }
    int llen;
    const char *leaf = segment(r->path, nsec, &llen);
    fprintf(f, "%*s%.*s: ", (int)(2 * nsec), "", llen, leaf);
    if (r->type == PB__CT_STR || r->type == PB__CT_NAME ||
        r->type == PB__CT_ENUM) {
      /* Printable ASCII only (enforced by row_set), so escaping '"' and '\\'
       * is all a double-quoted YAML scalar needs. */
      fputc('"', f);
      for (const char *p = val; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
      }
      fputc('"', f);
    } else {
      fputs(val, f);
    }
    fprintf(f, "  # %s\n", r->doc);
    prev = r->path;
  }
  if (fclose(f) != 0 || buf == NULL) {
    free(buf);
    return pb_err_set(err, PB_ENOMEM, "pb_config_to_yaml: out of memory");
  }
  *out = buf;
  return 0;
}

void pb_config_print_keys(FILE *f) {
  fprintf(f, "configuration keys (YAML file, or --set key=value):\n");
  for (size_t i = 0; i < pb__nrows; i++) {
    const pb__row_t *r = &pb__schema[i];
    char range[128];
    pb__row_range(r, range, sizeof range);
    fprintf(f, "  %-28s %s\n  %-28s   default %s; %s %s\n", r->path, r->doc, "",
            r->def, pb__type_name(r->type), range);
  }
}

/* ---- conversions ----------------------------------------------------- */

const char *pb_config_device(const pb_config_t *c, int role,
                             const char **key) {
  const char *own = role == PB_DEVICE_ACTOR      ? c->model.actor_device
                    : role == PB_DEVICE_SEARCHER ? c->model.searcher_device
                                                 : c->model.learner_device;
  if (key != NULL)
    *key = role == PB_DEVICE_ACTOR      ? "model.actor_device"
           : role == PB_DEVICE_SEARCHER ? "model.searcher_device"
                                        : "model.learner_device";
  if (strcmp(own, "auto") != 0) return own;
  if (key != NULL && strcmp(c->model.device, "auto") != 0) *key = "model.device";
  if (strcmp(c->model.device, "auto") != 0) return c->model.device;
  return role == PB_DEVICE_ACTOR ? "cpu" : "auto";
}

const char *pb_config_precision(const pb_config_t *c, int role,
                                const char **key) {
  const char *own = role == PB_DEVICE_ACTOR      ? c->model.actor_precision
                    : role == PB_DEVICE_SEARCHER ? c->model.searcher_precision
                    : role == PB_DEVICE_LEARNER  ? c->model.learner_precision
                                                 : "default";
  const char *k = role == PB_DEVICE_ACTOR      ? "model.actor_precision"
                  : role == PB_DEVICE_SEARCHER ? "model.searcher_precision"
                                               : "model.learner_precision";
  if (strcmp(own, "default") != 0) {
    if (key != NULL) *key = k;
    return own;
  }
  if (key != NULL) *key = "model.precision";
  return c->model.precision;
}

int pb_config_abnet_targets(const pb_config_t *c) {
  return !strcmp(c->search.algorithm, "abnet");
}

const char *pb_config_search_desc(const pb_config_t *c, char *buf, size_t n) {
  if (pb_config_abnet_targets(c))
    snprintf(buf, n, "abnet search (nodes=%d a move, M=%d)", c->search.nodes,
             c->search.max_depth);
  else
    snprintf(buf, n, "beam search (E=%d, M=%d)", c->search.expansions,
             c->search.max_depth);
  return buf;
}

/* 1 when the YAML file at path sets nothing: every line blank, a
 * comment, a document marker (---, ...) or an empty document ({}, ~,
 * null). A run from it would be every default, which nobody means. */
static int yaml_sets_nothing(const char *path) {
  char *text = NULL;
  size_t len = 0;
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_read_file(path, 4u << 20, &text, &len, &e) != 0)
    return 0; /* the loader has read it: not our concern */
  pb_lines_t it;
  pb_lines_init_w(&it, text, len);
  char *p = NULL;
  size_t n = 0;
  int nothing = 1;
  while (nothing && pb_lines_cut(&it, &p, &n) == 1) {
    while (n > 0 && isspace((unsigned char)*p)) p++, n--;
    while (n > 0 && isspace((unsigned char)p[n - 1])) n--;
    p[n] = '\0';
    nothing = n == 0 || p[0] == '#' || !strcmp(p, "---") ||
              !strcmp(p, "...") || !strcmp(p, "{}") || !strcmp(p, "~") ||
              !strcmp(p, "null");
  }
  free(text);
  return nothing;
}

int pb_config_setup(pb_config_t *c, const char *path, const char *const *sets,
                    int nsets, const char *run_dir, pb_err_t *err) {
  pb_err_t e;
  pb_err_clear(&e);
  pb_config_defaults(c);
  int rc = pb_config_load_file(c, path, &e);
  if (rc != 0) return pb_err_set(err, rc, "%s", e.msg);
  if (yaml_sets_nothing(path))
    return pb_err_set(err, PB_ECONFIG,
                      "%s: the file sets nothing (empty, or comments only); "
                      "a config names at least its game (configs/ has "
                      "examples, `probs train --keys` lists every key)",
                      path);
  for (int i = 0; i < nsets; i++)
    if ((rc = pb_config_apply_override(c, sets[i], &e)) != 0)
      return pb_err_set(err, rc, "--set %.200s: %s", sets[i], e.msg);
  if (run_dir != NULL && (rc = pb_config_set(c, "run.dir", run_dir, &e)) != 0)
    return pb_err_set(err, rc, "--run-dir: %s", e.msg);
  if ((rc = pb_config_check(c, &e)) != 0)
    return pb_err_set(err, rc, "%s", e.msg);
  return 0;
}
