/* config.c - schema-driven YAML configuration (see config.h).
 *
 * Everything about a key lives in one row of `schema` below; the loader,
 * pb_config_set, pb_config_check, pb_config_to_yaml and the --help listing
 * only walk that table. The YAML file is read with libyaml's event parser
 * (not its document API) because events carry the line and column we put
 * in error messages. */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

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

#define F(field) offsetof(pb_config_t, field), sizeof(((pb_config_t *)0)->field)
#define ROW_INT(p, field, lo, hi, d, doc) \
  { p, PB__CT_INT, F(field), lo, hi, 0, 0, d, NULL, doc }
#define ROW_I64(p, field, lo, hi, d, doc) \
  { p, PB__CT_INT64, F(field), lo, hi, 0, 0, d, NULL, doc }
#define ROW_DBL(p, field, lo, hi, d, doc) \
  { p, PB__CT_DOUBLE, F(field), 0, 0, lo, hi, d, NULL, doc }
#define ROW_BOOL(p, field, d, doc) \
  { p, PB__CT_BOOL, F(field), 0, 1, 0, 0, d, NULL, doc }
#define ROW_STR(p, field, minlen, d, doc)                                      \
  {                                                                            \
    p, PB__CT_STR, F(field), minlen, sizeof(((pb_config_t *)0)->field) - 1, 0, \
        0, d, NULL, doc                                                        \
  }
#define ROW_NAME(p, field, d, doc)                                            \
  {                                                                           \
    p, PB__CT_NAME, F(field), 1, sizeof(((pb_config_t *)0)->field) - 1, 0, 0, \
        d, NULL, doc                                                          \
  }
#define ROW_ENUM(p, field, choices, d, doc) \
  { p, PB__CT_ENUM, F(field), 0, 0, 0, 0, d, choices, doc }
#define NET_ROWS(w, W)                                                         \
  ROW_INT("model." #w ".conv_layers", model.w.conv_layers, 0, 64, "2",         \
          W ": number of 3x3 convolutions"),                                   \
      ROW_INT("model." #w ".conv_channels", model.w.conv_channels, 1, 1024,    \
              "16", W ": channels of each convolution"),                       \
      ROW_INT("model." #w ".dense_layers", model.w.dense_layers, 0, 16, "1",   \
              W ": hidden dense layers before the head"),                      \
      ROW_INT("model." #w ".dense_units", model.w.dense_units, 1, 65536, "12", \
              W ": units of each hidden dense layer"),                         \
      ROW_INT("model." #w ".res_blocks", model.w.res_blocks, 0, 64, "0",       \
              W ": residual blocks (2 convolutions each) after the "           \
              "convolutions"),                                                 \
      ROW_ENUM("model." #w ".norm", model.w.norm, "none|layer", "none",        \
               W ": normalisation after each convolution: none or layer")

/* Rows sharing a section are kept together: to_yaml opens one mapping per
 * run of rows with the same prefix (a test reloads its output, so a split
 * section would show up there as a duplicate key). */
static const pb__row_t schema[] = {
    ROW_NAME("game", game, "connect4",
             "game to play (connect4, tictactoe, ...)"),
    ROW_I64("seed", seed, 0, INT64_MAX, "1",
            "run seed; every random stream derives from it"),
    ROW_ENUM("algorithm", algorithm, "probs|alphazero", "probs",
             "probs (V and Q trained on beam-search results: the paper) or "
             "alphazero (one policy+value network, PUCT MCTS self-play, no "
             "searchers: docs/comparison.md)"),

    ROW_NAME("run.name", run.name, "c4", "run id, carried in every message"),
    ROW_STR("run.dir", run.dir, 1, "runs/c4",
            "run directory: checkpoints, logs, metrics"),
    ROW_INT("run.keep_last", run.keep_last, 0, 1000000, "10",
            "checkpoints kept: the newest N versions (plus version 0, "
            "run.keep_every's and those the evaluator has not rated yet); "
            "0 = keep every checkpoint"),
    ROW_INT("run.keep_every", run.keep_every, 0, 1000000, "10",
            "checkpoints of versions that are multiples of K are kept "
            "forever (with run.keep_last > 0); 0 = none"),

    ROW_INT("train.iterations", train.iterations, 1, 1000000, "100",
            "N_ITER: training iterations"),
    ROW_INT("train.episodes_per_iter", train.episodes_per_iter, 1, 10000000,
            "1000", "N_EPISODES: self-play episodes per iteration"),
    ROW_INT("train.max_turns", train.max_turns, 1, 100000, "100",
            "N_TURNS: moves after which an episode stops (draw)"),
    ROW_INT("train.replay_capacity", train.replay_capacity, 1, 1000000000,
            "100000", "C: capacity of the experience replay (states)"),
    ROW_DBL("train.eps", train.eps, 0.0, 1.0, "0.25",
            "epsilon: weight of Dirichlet noise in the self-play policy"),
    ROW_DBL("train.alpha", train.alpha, 1e-6, 1000.0, "0.5",
            "alpha: Dirichlet noise parameter"),
    ROW_INT("train.batch_size", train.batch_size, 1, 1000000, "128",
            "minibatch size for V and Q"),
    ROW_DBL("train.v_lr", train.v_lr, 0.0, 10.0, "0.003",
            "Adam learning rate of V"),
    ROW_DBL("train.q_lr", train.q_lr, 0.0, 10.0, "0.003",
            "Adam learning rate of Q"),
    ROW_DBL("train.weight_decay", train.weight_decay, 0.0, 1.0, "0.0001",
            "Adam L2 weight decay"),
    ROW_INT("train.v_epochs", train.v_epochs, 1, 1000, "1",
            "passes over the iteration's states for V"),
    ROW_INT("train.q_epochs", train.q_epochs, 1, 1000, "1",
            "passes over the beam-search targets for Q"),
    ROW_INT("train.selfplay_parallel", train.selfplay_parallel, 1, 1000000,
            "256", "games played at once per thread of an actor"),
    ROW_INT("train.selfplay_threads", train.selfplay_threads, 0, 256, "0",
            "threads of game work per actor, feeding one network queue; 0 = "
            "1 on the CPU, the CPUs the process may use on CUDA"),
    ROW_BOOL("train.pipeline", train.pipeline, "false",
             "distributed runs: actors play the next iteration's games with "
             "the Q they have while V and Q train and the searchers search; "
             "false = one phase after the other (paper)"),
    ROW_INT("train.max_staleness", train.max_staleness, 0, 1000, "1",
            "pipelined mode: versions an episode's Q may lag the version "
            "trained from; 0 turns the overlap off"),
    ROW_DBL("train.grad_clip", train.grad_clip, 0.0, 1e9, "0",
            "cap on the gradient's L2 norm before Adam; 0 = off (paper)"),
    ROW_INT("train.lr_warmup_steps", train.lr_warmup_steps, 0, 100000000, "0",
            "learning rates rise linearly over this many Adam steps; 0 = off"),
    ROW_INT("train.lr_decay_iterations", train.lr_decay_iterations, 0,
            1000000, "0",
            "cosine decay of the learning rates over this many iterations, "
            "to lr * lr_min_factor; 0 = constant (paper)"),
    ROW_DBL("train.lr_min_factor", train.lr_min_factor, 0.0, 1.0, "0.1",
            "floor of the decayed learning rates, as a share of v_lr / q_lr"),
    ROW_ENUM("train.augment", train.augment, "none|mirror", "none",
             "training data augmentation: none (paper) or mirror (each sample "
             "mirrored left-right with probability 1/2)"),
    ROW_INT("train.replay_iterations", train.replay_iterations, 1, 1000, "1",
            "V and Q train on the data of the last k iterations; 1 = only "
            "the current one (paper)"),
    ROW_DBL("train.v_search_mix", train.v_search_mix, 0.0, 1.0, "0",
            "V target = (1 - m) * outcome + m * beam-search value; m > 0 "
            "trains V after the search (which then uses the previous V); 0 = "
            "outcome only, before the search (paper)"),
    ROW_DBL("train.selfplay_temperature", train.selfplay_temperature, 0.01,
            100.0, "1",
            "self-play policy softmax(Q / T) before the Dirichlet noise; 1 = "
            "paper"),

    ROW_INT("search.expansions", search.expansions, 1, 10000, "30",
            "E: nodes expanded per beam search"),
    ROW_INT("search.max_depth", search.max_depth, 1, 200, "3",
            "M: depth limit of beam search"),
    ROW_INT("search.parallel", search.parallel, 1, 1000000, "256",
            "searches advanced together per thread of a searcher"),
    ROW_INT("search.threads", search.threads, 0, 256, "0",
            "threads of tree work per searcher, feeding one network queue; 0 "
            "= 1 on the CPU, the CPUs the process may use on CUDA"),
    ROW_INT("search.cache_entries", search.cache_entries, 0, 1 << 30, "262144",
            "network evaluation cache entries; 0 disables the cache"),

    ROW_INT("mcts.simulations", mcts.simulations, 1, 100000, "100",
            "alphazero: PUCT simulations per self-play move"),
    ROW_DBL("mcts.c_puct", mcts.c_puct, 1e-3, 100.0, "1.5",
            "alphazero: exploration constant of PUCT"),
    ROW_INT("mcts.temp_moves", mcts.temp_moves, 0, 100000, "10",
            "alphazero: the first N moves of a self-play game are drawn in "
            "proportion to the visit counts, later ones take the most "
            "visited move (train.eps and train.alpha are the root noise)"),

    ROW_ENUM("model.device", model.device, "cpu|cuda|auto", "auto",
             "where networks run, for every role whose own key is auto: "
             "cpu, cuda, or auto (each role's own choice)"),
    ROW_ENUM("model.learner_device", model.learner_device, "cpu|cuda|auto",
             "auto",
             "the learner's device (also --inproc's); auto: model.device, "
             "or cuda when there is one"),
    ROW_ENUM("model.actor_device", model.actor_device, "cpu|cuda|auto",
             "auto",
             "self-play actors' device; auto: model.device, or cpu (many "
             "actors sharing a GPU were 5x slower than on the CPU)"),
    ROW_ENUM("model.searcher_device", model.searcher_device, "cpu|cuda|auto",
             "auto",
             "beam-search workers' device; auto: model.device, or cuda when "
             "there is one"),
    ROW_INT("model.threads", model.threads, 1, 1024, "1",
            "libtorch intra-op threads per process"),
    NET_ROWS(v, "V"),
    NET_ROWS(q, "Q"),

    ROW_STR("net.work_endpoint", net.work_endpoint, 1, "tcp://127.0.0.1:5555",
            "work socket (learner ROUTER binds, workers connect)"),
    ROW_STR("net.pub_endpoint", net.pub_endpoint, 1, "tcp://127.0.0.1:5556",
            "version announcements (learner PUB binds)"),
    ROW_INT("net.http_port", net.http_port, 0, 65535, "8080",
            "HTTP /metrics and /status; 0 = off"),
    ROW_STR("net.curve_dir", net.curve_dir, 0, "",
            "directory of the run's CURVE keys (probs keys DIR): encrypted "
            "links, and only workers listed in its authorized_keys may "
            "join; empty = off (loopback runs)"),
    ROW_STR("net.http_bind", net.http_bind, 1, "127.0.0.1",
            "IPv4 address the HTTP server listens on (0.0.0.0: every "
            "interface, as in a container)"),
    ROW_INT("net.lease_ms", net.lease_ms, 10, 86400000, "30000",
            "a work item not returned within this time is handed out again"),
    ROW_INT("net.lease_max_ms", net.lease_max_ms, 10, 86400000, "600000",
            "a work item is handed out again this long after it was leased, "
            "whatever the worker's heartbeats say"),
    ROW_INT("net.heartbeat_ms", net.heartbeat_ms, 1, 3600000, "1000",
            "worker heartbeat period"),
    ROW_INT("net.hwm", net.hwm, 1, 10000000, "1000",
            "ZeroMQ high-water mark (messages)"),
    ROW_INT("net.item_episodes", net.item_episodes, 1, 1000000, "16",
            "episodes per self-play work item"),
    ROW_INT("net.item_states", net.item_states, 1, 10000000, "256",
            "states per beam-search work item"),
    ROW_INT("net.max_workers", net.max_workers, 1, 1000000, "1024",
            "workers the learner tracks at once"),
    ROW_DBL("net.spot_check", net.spot_check, 0.0, 1.0, "0.01",
            "share of each search result's positions the learner searches "
            "again to check the searcher; 0 = off"),
    ROW_DBL("net.spot_check_tolerance", net.spot_check_tolerance, 0.0, 2.0,
            "0.02",
            "a checked position disagrees when a target differs from the "
            "learner's by more than this"),
    ROW_DBL("net.spot_check_max_disagree", net.spot_check_max_disagree, 0.0,
            1.0, "0.05",
            "a searcher is quarantined when more than this share of its "
            "checked positions in an iteration disagree (and at least 3)"),

    ROW_BOOL("eval.enabled", eval.enabled, "true", "run the evaluator"),
    ROW_INT("eval.games_per_opponent", eval.games_per_opponent, 1, 10000000,
            "100", "games per checkpoint and opponent (half with each colour)"),
    ROW_INT("eval.opening_random_moves", eval.opening_random_moves, 0, 1000,
            "2", "random moves that open each evaluation game"),
    ROW_STR("eval.opponents", eval.opponents, 1,
            "random,lookahead:1,lookahead:2,lookahead:3",
            "comma-separated baselines: name or name:parameter"),
    ROW_STR("eval.anchors", eval.anchors, 0, "",
            "fixed Elo of opponents, SPEC=R,...; empty = the defaults "
            "(random 1000, and in connect4 and tictactoe the paper's "
            "lookahead:1..3 at 1183, 1501, 1603)"),
    ROW_INT("eval.threads", eval.threads, 0, 1024, "0",
            "evaluator threads; 0 = all cores"),
    ROW_INT("eval.every", eval.every, 1, 1000000, "1",
            "evaluate every Nth version"),
    ROW_BOOL("eval.accuracy", eval.accuracy, "true",
             "also measure the share of optimal moves on a solved test set "
             "(games with a solver)"),
    ROW_STR("eval.testset", eval.testset, 0, "",
            "solved test set file; empty = the one shipped for the game"),
    ROW_INT("eval.search_expansions", eval.search_expansions, 1, 100000, "100",
            "E of the beam-search agent whose accuracy is measured"),
    ROW_INT("eval.search_depth", eval.search_depth, 1, 99, "10",
            "M of the beam-search agent whose accuracy is measured"),
    ROW_INT("eval.mcts_simulations", eval.mcts_simulations, 1, 100000, "100",
            "alphazero runs: simulations of the MCTS agent whose accuracy is "
            "measured (in place of the beam-search agent)"),

    ROW_ENUM("log.level", log.level, "debug|info|warn|error", "info",
             "least severe level logged: debug, info, warn or error"),
};
#define NROWS (sizeof schema / sizeof schema[0])

#undef F
#undef ROW_INT
#undef ROW_I64
#undef ROW_DBL
#undef ROW_BOOL
#undef ROW_STR
#undef ROW_NAME
#undef ROW_ENUM
#undef NET_ROWS

/* Longest value quoted back in a message; the rest is elided. */
#define PB__SHOW 80

static const pb__row_t *row_find(const char *key) {
  for (size_t i = 0; i < NROWS; i++)
    if (!strcmp(schema[i].path, key)) return &schema[i];
  return NULL;
}

/* Whether `prefix` names a section: some key starts with "prefix.". */
static int is_section(const char *prefix) {
  size_t n = strlen(prefix);
  for (size_t i = 0; i < NROWS; i++)
    if (!strncmp(schema[i].path, prefix, n) && schema[i].path[n] == '.')
      return 1;
  return 0;
}

static size_t edit_distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na >= PB_CONFIG_KEY_MAX || nb >= PB_CONFIG_KEY_MAX) return SIZE_MAX;
  size_t prev[PB_CONFIG_KEY_MAX], cur[PB_CONFIG_KEY_MAX];
  for (size_t j = 0; j <= nb; j++) prev[j] = j;
  for (size_t i = 1; i <= na; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      cur[j] = best;
    }
    memcpy(prev, cur, (nb + 1) * sizeof prev[0]);
  }
  return prev[nb];
}

/* A close key, or one with the same last segment, to suggest for a typo. */
static const char *suggest(const char *key) {
  const char *best = NULL;
  size_t bestd = 3;
  const char *dot = strrchr(key, '.');
  const char *last = dot ? dot + 1 : key;
  for (size_t i = 0; i < NROWS; i++) {
    size_t d = edit_distance(key, schema[i].path);
    if (d < bestd) bestd = d, best = schema[i].path;
  }
  if (best == NULL && *last != '\0') {
    for (size_t i = 0; i < NROWS; i++) {
      const char *rd = strrchr(schema[i].path, '.');
      if (!strcmp(rd ? rd + 1 : schema[i].path, last)) return schema[i].path;
    }
  }
  return best;
}

static int unknown_key(pb_err_t *err, const char *loc, const char *key) {
  const char *s = suggest(key);
  if (s != NULL)
    return pb_err_set(err, PB_ECONFIG,
                      "%sunknown key '%.*s' (did you mean '%s'?)", loc,
                      PB__SHOW, key, s);
  return pb_err_set(
      err, PB_ECONFIG,
      "%sunknown key '%.*s' ('probs train --help' lists the keys)", loc,
      PB__SHOW, key);
}

/* The allowed range or set of a row, for messages and --help. */
static void row_range(const pb__row_t *r, char *buf, size_t n) {
  switch (r->type) {
    case PB__CT_INT:
    case PB__CT_INT64:
      snprintf(buf, n, "%" PRId64 "..%" PRId64, r->imin, r->imax);
      break;
    case PB__CT_DOUBLE:
      snprintf(buf, n, "%g..%g", r->dmin, r->dmax);
      break;
    case PB__CT_BOOL:
      snprintf(buf, n, "true|false");
      break;
    case PB__CT_ENUM:
      snprintf(buf, n, "%s", r->choices);
      break;
    case PB__CT_STR:
      snprintf(buf, n, "%" PRId64 "..%" PRId64 " printable ASCII characters",
               r->imin, r->imax);
      break;
    case PB__CT_NAME:
      snprintf(buf, n,
               "%" PRId64 "..%" PRId64 " characters from A-Z a-z 0-9 . _ -",
               r->imin, r->imax);
      break;
  }
}

static const char *type_name(pb__ctype_t t) {
  switch (t) {
    case PB__CT_INT:
    case PB__CT_INT64:
      return "integer";
    case PB__CT_DOUBLE:
      return "number";
    case PB__CT_BOOL:
      return "bool";
    case PB__CT_ENUM:
      return "choice";
    case PB__CT_STR:
    case PB__CT_NAME:
      return "string";
  }
  return "?";
}

/* Parses a whole string as an integer: decimal, or a float literal with an
 * integral value (so `replay_capacity: 1e5` works as in the paper).
 * Returns 0, -1 (not an integer) or -2 (does not fit int64). */
static int parse_int64(const char *s, int64_t *out) {
  if (*s == '\0' || isspace((unsigned char)*s)) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end == '\0') {
    if (errno == ERANGE) return -2;
    *out = v;
    return 0;
  }
  errno = 0;
  double d = strtod(s, &end);
  if (*end != '\0' || !isfinite(d) || d != floor(d)) return -1;
  if (fabs(d) > 9007199254740992.0) return -2; /* 2^53: exact as a double */
  *out = (int64_t)d;
  return 0;
}

static int parse_double(const char *s, double *out) {
  if (*s == '\0' || isspace((unsigned char)*s)) return -1;
  char *end;
  errno = 0;
  double d = strtod(s, &end);
  if (*end != '\0' || !isfinite(d)) return -1;
  *out = d;
  return 0;
}

static int parse_bool(const char *s, bool *out) {
  static const char *yes[] = {"true", "yes", "on"},
                    *no[] = {"false", "no", "off"};
  for (size_t i = 0; i < 3; i++) {
    if (!strcasecmp(s, yes[i])) return *out = true, 0;
    if (!strcasecmp(s, no[i])) return *out = false, 0;
  }
  return -1;
}

static int enum_has(const char *choices, const char *v) {
  size_t n = strlen(v);
  if (n == 0) return 0;
  for (const char *p = choices; *p;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && !strncmp(p, v, n)) return 1;
    if (bar == NULL) break;
    p = bar + 1;
  }
  return 0;
}

/* Checks a string value against its row; returns NULL or what is wrong. */
static const char *str_problem(const pb__row_t *r, const char *v) {
  size_t n = strlen(v);
  if (r->type == PB__CT_ENUM)
    return enum_has(r->choices, v) ? NULL : "is not one of";
  if ((int64_t)n < r->imin) return "is too short: allowed";
  if ((int64_t)n > r->imax) return "is too long: allowed";
  for (const char *p = v; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (r->type == PB__CT_NAME) {
      if (!isalnum(ch) && ch != '.' && ch != '_' && ch != '-')
        return "has a bad character: allowed";
    } else if (ch < 0x20 || ch > 0x7e) {
      return "has a non-printable or non-ASCII character: allowed";
    }
  }
  return NULL;
}

/* The text a YAML author would see for a value: quoted when it was. */
static int bad_value(pb_err_t *err, const char *loc, const pb__row_t *r,
                     const char *v, const char *what) {
  char range[128];
  row_range(r, range, sizeof range);
  size_t n = strlen(v);
  return pb_err_set(err, PB_ECONFIG, "%s%s: value '%.*s%s' %s %s", loc, r->path,
                    PB__SHOW, v, n > PB__SHOW ? "..." : "", what, range);
}

/* Parses `v` for row r and stores it in *c. `quoted` says the YAML scalar
 * was quoted, which makes it a string: refused for numbers and bools. */
static int row_set(pb_config_t *c, const pb__row_t *r, const char *v,
                   int quoted, const char *loc, pb_err_t *err) {
  char *field = (char *)c + r->off;
  if (quoted && r->type != PB__CT_STR && r->type != PB__CT_NAME &&
      r->type != PB__CT_ENUM)
    return bad_value(err, loc, r, v,
                     "is quoted (a string); write it without quotes: allowed");
  switch (r->type) {
    case PB__CT_INT:
    case PB__CT_INT64: {
      int64_t x;
      int rc = parse_int64(v, &x);
      if (rc == -1)
        return bad_value(err, loc, r, v, "is not an integer: allowed");
      if (rc == -2 || x < r->imin || x > r->imax)
        return bad_value(err, loc, r, v, "is out of range: allowed");
      if (r->type == PB__CT_INT) {
        int xi = (int)x;
        memcpy(field, &xi, sizeof xi);
      } else {
        memcpy(field, &x, sizeof x);
      }
      return 0;
    }
    case PB__CT_DOUBLE: {
      double x;
      if (parse_double(v, &x))
        return bad_value(err, loc, r, v, "is not a finite number: allowed");
      if (x < r->dmin || x > r->dmax)
        return bad_value(err, loc, r, v, "is out of range: allowed");
      memcpy(field, &x, sizeof x);
      return 0;
    }
    case PB__CT_BOOL: {
      bool x;
      if (parse_bool(v, &x))
        return bad_value(err, loc, r, v, "is not a bool: allowed");
      memcpy(field, &x, sizeof x);
      return 0;
    }
    case PB__CT_STR:
    case PB__CT_NAME:
    case PB__CT_ENUM: {
      const char *why = str_problem(r, v);
      if (why != NULL) return bad_value(err, loc, r, v, why);
      /* strncpy zero-fills the tail, which keeps memcmp meaningful. */
      strncpy(field, v, r->size);
      return 0;
    }
  }
  return pb_err_set(err, PB_EINVAL, "%s: bad schema row", r->path);
}

/* Formats the value of row r in the text form row_set accepts. */
static int row_format(const pb_config_t *c, const pb__row_t *r, char *buf,
                      size_t n) {
  const char *field = (const char *)c + r->off;
  int len = 0;
  switch (r->type) {
    case PB__CT_INT: {
      int x;
      memcpy(&x, field, sizeof x);
      len = snprintf(buf, n, "%d", x);
      break;
    }
    case PB__CT_INT64: {
      int64_t x;
      memcpy(&x, field, sizeof x);
      len = snprintf(buf, n, "%" PRId64, x);
      break;
    }
    case PB__CT_DOUBLE: {
      double x;
      memcpy(&x, field, sizeof x);
      /* The shortest form that reads back as the same double. */
      for (int prec = 15; prec <= 17; prec++) {
        len = snprintf(buf, n, "%.*g", prec, x);
        if (len < 0 || (size_t)len >= n || strtod(buf, NULL) == x) break;
      }
      break;
    }
    case PB__CT_BOOL: {
      bool x;
      memcpy(&x, field, sizeof x);
      len = snprintf(buf, n, "%s", x ? "true" : "false");
      break;
    }
    case PB__CT_STR:
    case PB__CT_NAME:
    case PB__CT_ENUM:
      len = snprintf(buf, n, "%.*s", (int)r->size, field);
      break;
  }
  return (len < 0 || (size_t)len >= n) ? -1 : 0;
}

void pb_config_defaults(pb_config_t *c) {
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < NROWS; i++) {
    /* Defaults are literals in the table; test_config checks they parse. */
    (void)row_set(c, &schema[i], schema[i].def, 0, "", NULL);
  }
}

int pb_config_set(pb_config_t *c, const char *key, const char *value,
                  pb_err_t *err) {
  if (c == NULL || key == NULL || value == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_set: NULL argument");
  const pb__row_t *r = row_find(key);
  if (r == NULL) {
    if (is_section(key))
      return pb_err_set(err, PB_ECONFIG,
                        "'%s' is a section, not a key (e.g. '%s.<key>')", key,
                        key);
    return unknown_key(err, "", key);
  }
  return row_set(c, r, value, 0, "", err);
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
  if (klen >= sizeof key) return unknown_key(err, "", kv);
  memcpy(key, kv, klen);
  key[klen] = '\0';
  return pb_config_set(c, key, eq + 1, err);
}

int pb_config_get(const pb_config_t *c, const char *key, char *buf, size_t n,
                  pb_err_t *err) {
  if (c == NULL || key == NULL || buf == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_get: NULL argument");
  const pb__row_t *r = row_find(key);
  if (r == NULL) return unknown_key(err, "", key);
  if (row_format(c, r, buf, n))
    return pb_err_set(err, PB_ERANGE, "%s: buffer of %zu bytes is too small",
                      key, n);
  return 0;
}

/* ---- loading --------------------------------------------------------- */

typedef struct {
  yaml_parser_t parser;
  const char *origin; /* file name or "<string>" */
  const char *text;   /* the YAML text, to place reader errors */
  pb_config_t *c;     /* the copy being filled */
  pb_err_t *err;
  /* Every dotted path (sections and keys) met so far, to refuse
   * duplicates. Only known paths get in, so the bound is the schema. */
  char seen[NROWS * 2][PB_CONFIG_KEY_MAX];
  size_t nseen;
  char last[PB_CONFIG_KEY_MAX]; /* last key read, to place syntax errors */
} pb__loader_t;

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
  if (L->nseen < sizeof L->seen / sizeof L->seen[0]) {
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
    const pb__row_t *r = too_long ? NULL : row_find(path);
    int section = !too_long && r == NULL && is_section(path);
    if (r == NULL && !section) return unknown_key(L->err, loc, path);
    if ((rc = mark_seen(L, path, kmark))) return rc;
    snprintf(L->last, sizeof L->last, "%.*s", PB_CONFIG_KEY_MAX - 1, path);

    yaml_event_t vev;
    if ((rc = next_event(L, &vev))) return rc;
    loc_of(L, vev.start_mark, loc, sizeof loc);
    if (vev.type == YAML_SCALAR_EVENT && r != NULL) {
      if (is_null_scalar(&vev))
        rc = pb_err_set(L->err, PB_ECONFIG, "%s%s: missing value (expected %s)",
                        loc, path, type_name(r->type));
      else
        rc = row_set(L->c, r, (const char *)vev.data.scalar.value,
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
                        type_name(r->type), event_what(vev.type));
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
  pb__loader_t *L = calloc(1, sizeof *L);
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
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return pb_err_set(err, PB_EIO, "%s: cannot open: %s", path,
                      strerror(errno));
  char *text = malloc(PB__CONFIG_FILE_MAX + 1);
  if (text == NULL) {
    fclose(f);
    return pb_err_set(err, PB_ENOMEM, "%s: out of memory", path);
  }
  size_t len = fread(text, 1, PB__CONFIG_FILE_MAX + 1, f);
  int rc = 0;
  if (ferror(f))
    rc = pb_err_set(err, PB_EIO, "%s: read error: %s", path, strerror(errno));
  else if (len > PB__CONFIG_FILE_MAX)
    rc = pb_err_set(err, PB_ECONFIG,
                    "%s: larger than %u bytes: not a config file", path,
                    PB__CONFIG_FILE_MAX);
  fclose(f);
  if (rc == 0) {
    text[len] = '\0';
    rc = load(c, text, len, path, err);
  }
  free(text);
  return rc;
}

int pb_config_load_string(pb_config_t *c, const char *yaml, pb_err_t *err) {
  if (c == NULL || yaml == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_load_string: NULL argument");
  return load(c, yaml, strlen(yaml), "<string>", err);
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
  if (row_format(c, r, buf, sizeof buf))
    return pb_err_set(err, PB_ECONFIG, "%s: value cannot be formatted",
                      r->path);
  pb_config_t scratch;
  memset(&scratch, 0, sizeof scratch);
  return row_set(&scratch, r, buf, 0, "", err);
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

/* "random,lookahead:1": non-empty items, each a name with an optional
 * ":parameter". What the names mean is the evaluator's business. */
static int opponents_ok(const char *s, char *bad, size_t n) {
  const char *p = s;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
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
    if (!ok) {
      snprintf(bad, n, "%.*s", (int)(len < 64 ? len : 64), p);
      return 0;
    }
    if (comma == NULL) return 1;
    p = comma + 1;
  }
}

int pb_config_check(const pb_config_t *c, pb_err_t *err) {
  if (c == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_config_check: NULL config");
  int rc;
  for (size_t i = 0; i < NROWS; i++)
    if ((rc = row_check(c, &schema[i], err))) return rc;

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
  if (!strcmp(c->net.work_endpoint, c->net.pub_endpoint))
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
  if (c->eval.opening_random_moves >= g->max_turns)
    return pb_err_set(err, PB_ECONFIG,
                      "eval.opening_random_moves (%d) must be below the length "
                      "of the longest "
                      "%s game (%d moves)",
                      c->eval.opening_random_moves, g->name, g->max_turns);
  if (!strcmp(c->algorithm, "alphazero") && c->train.v_search_mix > 0)
    return pb_err_set(err, PB_ECONFIG,
                      "train.v_search_mix (%g) needs beam-search values: it "
                      "applies to algorithm probs, not alphazero",
                      c->train.v_search_mix);
  if (c->model.v.res_blocks > 0 && c->model.v.conv_layers == 0)
    return pb_err_set(err, PB_ECONFIG,
                      "model.v.res_blocks (%d) needs model.v.conv_layers >= 1",
                      c->model.v.res_blocks);
  if (c->model.q.res_blocks > 0 && c->model.q.conv_layers == 0)
    return pb_err_set(err, PB_ECONFIG,
                      "model.q.res_blocks (%d) needs model.q.conv_layers >= 1",
                      c->model.q.res_blocks);
  char bad[72];
  if (!opponents_ok(c->eval.opponents, bad, sizeof bad))
    return pb_err_set(
        err, PB_ECONFIG,
        "eval.opponents: item '%s' in '%.*s' is not of the form name or "
        "name:parameter",
        bad, PB__SHOW, c->eval.opponents);
  return 0;
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
  for (size_t i = 0; i < NROWS; i++) {
    const pb__row_t *r = &schema[i];
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
    if (row_format(c, r, val, sizeof val)) {
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
  for (size_t i = 0; i < NROWS; i++) {
    const pb__row_t *r = &schema[i];
    char range[128];
    row_range(r, range, sizeof range);
    fprintf(f, "  %-28s %s\n  %-28s   default %s; %s %s\n", r->path, r->doc, "",
            r->def, type_name(r->type), range);
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

int pb_config_alphazero(const pb_config_t *c) {
  return !strcmp(c->algorithm, "alphazero");
}

int pb_config_setup(pb_config_t *c, const char *path, const char *const *sets,
                    int nsets, const char *run_dir, pb_err_t *err) {
  pb_err_t e;
  pb_err_clear(&e);
  pb_config_defaults(c);
  int rc = pb_config_load_file(c, path, &e);
  if (rc != 0) return pb_err_set(err, rc, "%s", e.msg);
  for (int i = 0; i < nsets; i++)
    if ((rc = pb_config_apply_override(c, sets[i], &e)) != 0)
      return pb_err_set(err, rc, "--set %.200s: %s", sets[i], e.msg);
  if (run_dir != NULL && (rc = pb_config_set(c, "run.dir", run_dir, &e)) != 0)
    return pb_err_set(err, rc, "--run-dir: %s", e.msg);
  if ((rc = pb_config_check(c, &e)) != 0)
    return pb_err_set(err, rc, "%s", e.msg);
  return 0;
}
