/* engine_query.c - one query line of the analysis engine read into a
 * waiting query, or refused naming the field at fault (docs/analysis.md
 * lists the fields). Reads: the id first (so that every later error
 * carries it), then that no field is unknown, the position, what to
 * report, and the agent with its budget and seed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "bounds.h"
#include "bpip.h"
#include "engine_impl.h"
#include "nply.h"

static const char *const known_fields[] = {
    "id",          "moves",        "position",      "report",
    "agent",       "budget",       "seed",          "maxVisits",
    "analyzeTurns", "priority",    "includePolicy", "includeOwnership",
    "boardXSize",  "boardYSize",   "reportDuringSearchEvery"};
#define KNOWN_FIELDS                                                    \
  "id, moves, position, report, agent, budget, seed, maxVisits, "       \
  "analyzeTurns, priority, includePolicy, includeOwnership, boardXSize, " \
  "boardYSize, reportDuringSearchEvery; an action: id, action, "       \
  "terminateId, turnNumbers"

/* KataGo's fields that do not apply here, and why (named apart from the
 * unknown ones, so that a KataGo client learns what to leave out). */
static const struct {
  const char *name, *why;
} unsupported_fields[] = {
    {"initialStones",
     "these games start from their start position: give the moves that "
     "reached the position"},
    {"initialPlayer", "the side to move follows from the moves"},
    {"rules", "each game has one set of rules"},
    {"komi", "the games here have no komi"},
    {"priorities", "give one priority for all the turns"},
    {"includeMovesOwnership", "no ownership: the games here have no territory"},
    {"includePVVisits", "the principal variations carry no visits"},
    {"avoidMoves", "not supported"},
    {"allowMoves", "not supported"},
    {"overrideSettings", "give the agent's settings in agent"},
    {"rootPolicyTemperature", "give the agent's settings in agent"},
    {"rootFpuReductionMax", "give the agent's settings in agent"}};

/* The report names, as PB__ENGINE_* bits. */
static const struct {
  const char *name;
  unsigned bit;
} report_names[] = {{"v", PB__ENGINE_V},
                    {"q", PB__ENGINE_Q},
                    {"policy", PB__ENGINE_POLICY},
                    {"v1", PB__ENGINE_V1},
                    {"move", PB__ENGINE_MOVE}};

/* What "budget" sets for each agent kind: an option (key=N) or, with no
 * key, the spec's argument (kind:N); and its range. */
static const struct {
  const char *kind, *key;
  long lo, hi;
} budgets[] = {{"beam", "E", 1, PB_BEAM_MAX_EXPANSIONS},
               {"mcts", "N", 1, PB_MCTS_MAX_SIMULATIONS},
               {"abnet", "nodes", 1, PB_SEARCH_MAX_NODES},
               {"bpip", "N", 1, PB_BPIP_MAX_EVALS},
               {"td", "depth", 1, PB_NPLY_MAX_DEPTH},
               {"uct", NULL, 1, 100000},
               {"alphabeta", NULL, 1, 12},
               {"lookahead", NULL, 1, 4}};

void pb__engine_query_free(pb__engine_query_t *q) {
  free(q->id);
  free(q->spec);
  free(q->full);
  q->id = q->spec = q->full = NULL;
}

/* A string value with no NUL inside, or NULL. */
static const char *plain_str(const pb_jval_t *v) {
  size_t n = 0;
  const char *s = v ? pb_jval_str(v, &n) : NULL;
  return s != NULL && strlen(s) == n ? s : NULL;
}

/* Out of memory: the engine stops. */
static int nomem(pb_engine_t *e, pb_err_t *err) {
  e->fatal = PB_ENOMEM;
  return pb_err_set(err, PB_ENOMEM, "analysis engine: out of memory");
}

static int read_id(pb_engine_t *e, const pb_jval_t *root, pb__engine_query_t *q,
                   const char **field, pb_err_t *err) {
  const pb_jval_t *id = pb_jval_get(root, "id");
  *field = "id";
  if (id == NULL)
    return pb_err_set(err, PB_EINVAL,
                      "the query has no id (a string or a number)");
  int k = pb_jval_kind(id);
  if (k != PB_JVAL_STRING && k != PB_JVAL_NUMBER)
    return pb_err_set(err, PB_EINVAL, "id is %s; expected a string or a number",
                      pb_jval_kind_name(k));
  size_t len = 0;
  const char *t = pb_jval_text(id, &len);
  q->id = malloc(len + 1);
  if (q->id == NULL) return nomem(e, err);
  memcpy(q->id, t, len);
  q->id[len] = '\0';
  return 0;
}

static int check_fields(const pb_jval_t *root, const char **field,
                        pb_err_t *err) {
  for (size_t i = 0; i < pb_jval_count(root); i++) {
    const char *key = pb_jval_key(root, i);
    size_t k = 0, nk = sizeof known_fields / sizeof known_fields[0];
    while (k < nk && strcmp(key, known_fields[k]) != 0) k++;
    if (k == nk) {
      *field = key;
      size_t nu = sizeof unsupported_fields / sizeof unsupported_fields[0];
      for (size_t u = 0; u < nu; u++)
        if (strcmp(key, unsupported_fields[u].name) == 0)
          return pb_err_set(err, PB_EUNSUPP, "%s: %s", key,
                            unsupported_fields[u].why);
      return pb_err_set(err, PB_EINVAL, "unknown field \"%.64s\" (known: %s)",
                        key, KNOWN_FIELDS);
    }
  }
  return 0;
}

/* Whether KataGo's player string p names the side to move in s: "B" or
 * "X" the first player, "W" or "O" the second (either case). */
static int player_ok(const pb_game_t *g, const pb_state_t *s, const char *p) {
  char side = pb_analysis_side(g, s);
  if (p == NULL || p[0] == '\0' || p[1] != '\0') return 0;
  char c = (char)(p[0] >= 'a' && p[0] <= 'z' ? p[0] - 32 : p[0]);
  return side == 'X' ? c == 'X' || c == 'B' : c == 'O' || c == 'W';
}

/* Room for the actions of a query's moves in e->acts. */
static int acts_room(pb_engine_t *e, size_t n) {
  if (n + 1 <= (size_t)e->acts_cap) return 0;
  int *a = realloc(e->acts, (n + 1) * sizeof *a);
  if (a == NULL) return PB_ENOMEM;
  e->acts = a;
  e->acts_cap = (int)n + 1;
  return 0;
}

/* "moves": an array of moves in the game's notation, from the start,
 * each a string or KataGo's [player, move] pair; their actions into
 * acts[0..*nacts). */
static int read_moves(pb_engine_t *e, const pb_jval_t *mv, pb_state_t *s,
                      int *nacts, pb_err_t *err) {
  const pb_game_t *g = e->g;
  if (pb_jval_kind(mv) != PB_JVAL_ARRAY)
    return pb_err_set(err, PB_EINVAL,
                      "moves is %s; expected an array of moves (\"4\", "
                      "\"f5\", \"pass\", or [\"X\", \"4\"] pairs)",
                      pb_jval_kind_name(pb_jval_kind(mv)));
  g->reset(s);
  size_t n = pb_jval_count(mv);
  if (acts_room(e, n) != 0) return nomem(e, err);
  for (size_t i = 0; i < n; i++) {
    const pb_jval_t *m = pb_jval_at(mv, i);
    if (pb_jval_kind(m) == PB_JVAL_ARRAY) {
      const char *p = plain_str(pb_jval_at(m, 0));
      if (pb_jval_count(m) != 2 || plain_str(pb_jval_at(m, 1)) == NULL)
        return pb_err_set(err, PB_EINVAL,
                          "moves[%zu] is not a [player, move] pair of "
                          "strings",
                          i);
      if (!player_ok(g, s, p))
        return pb_err_set(err, PB_EINVAL,
                          "moves[%zu]: player \"%.8s\" is not the side to "
                          "move (%c; KataGo's B and W are X and O)",
                          i, p ? p : "", pb_analysis_side(g, s));
      m = pb_jval_at(m, 1);
    }
    const char *name = plain_str(m);
    if (name == NULL)
      return pb_err_set(err, PB_EINVAL,
                        "moves[%zu] is %s; expected a move as a string", i,
                        pb_jval_kind(m) == PB_JVAL_STRING
                            ? "a string holding NUL"
                            : pb_jval_kind_name(pb_jval_kind(m)));
    int a = -1, done = 0;
    pb_err_t pe;
    pb_err_clear(&pe);
    int rc = pb_analysis_parse_move(g, s, name, &a, &pe);
    if (rc != 0) return pb_err_set(err, rc, "moves[%zu]: %s", i, pe.msg);
    g->step(s, a, &done);
    e->acts[i] = a;
  }
  *nacts = (int)n;
  return 0;
}

/* "analyzeTurns": turns 0..nacts, each once, into *turns (malloc'd). */
static int read_turns(pb_engine_t *e, const pb_jval_t *root, int nacts,
                      int **turns, int *nturns, const char **field,
                      pb_err_t *err) {
  const pb_jval_t *t = pb_jval_get(root, "analyzeTurns");
  if (t == NULL) return 0;
  *field = "analyzeTurns";
  if (pb_jval_kind(t) != PB_JVAL_ARRAY || pb_jval_count(t) == 0)
    return pb_err_set(err, PB_EINVAL,
                      "analyzeTurns is %s; expected a non-empty array of "
                      "turn numbers (0: the start, %d: after every move)",
                      pb_jval_kind(t) == PB_JVAL_ARRAY
                          ? "empty"
                          : pb_jval_kind_name(pb_jval_kind(t)),
                      nacts);
  size_t n = pb_jval_count(t);
  *turns = malloc(n * sizeof **turns);
  if (*turns == NULL) return nomem(e, err);
  for (size_t i = 0; i < n; i++) {
    int64_t v = 0;
    if (pb_jval_int(pb_jval_at(t, i), 0, nacts, &v) != 0)
      return pb_err_set(err, PB_ERANGE,
                        "analyzeTurns[%zu] is not a turn 0..%d (the moves "
                        "given)",
                        i, nacts);
    for (size_t k = 0; k < i; k++)
      if ((*turns)[k] == (int)v)
        return pb_err_set(err, PB_EINVAL,
                          "analyzeTurns[%zu]: turn %d is given twice", i,
                          (int)v);
    (*turns)[i] = (int)v;
  }
  *nturns = (int)n;
  return 0;
}

static int read_position(pb_engine_t *e, const pb_jval_t *root,
                         pb__engine_query_t *q, int *nacts, const char **field,
                         pb_err_t *err) {
  const pb_jval_t *mv = pb_jval_get(root, "moves");
  const pb_jval_t *pos = pb_jval_get(root, "position");
  const pb_game_t *g = e->g;
  if (mv != NULL && pos != NULL) {
    *field = "position";
    return pb_err_set(err, PB_EINVAL, "give moves or position, not both");
  }
  if (mv != NULL) {
    *field = "moves";
    int rc = read_moves(e, mv, &q->s, nacts, err);
    if (rc != 0) return rc;
  } else if (pos != NULL) {
    *field = "position";
    const char *text = plain_str(pos);
    if (text == NULL)
      return pb_err_set(err, PB_EINVAL,
                        "position is %s; expected the moves as one string "
                        "(%s notation, e.g. connect4 \"4453\", othello "
                        "\"f5d6\")",
                        pb_jval_kind(pos) == PB_JVAL_STRING
                            ? "a string holding NUL"
                            : pb_jval_kind_name(pb_jval_kind(pos)),
                        g->name);
    pb_err_t pe;
    pb_err_clear(&pe);
    int rc = g->parse(&q->s, text, &pe);
    if (rc != 0) return pb_err_set(err, rc, "bad position: %s", pe.msg);
    *nacts = -1; /* no turns to analyse */
  } else {
    g->reset(&q->s);
  }
  uint8_t legal[PB_MAX_ACTIONS];
  q->over = g->legal(&q->s, legal) == 0;
  q->turn = g->ply(&q->s);
  return 0;
}

/* KataGo's settings: boardXSize and boardYSize (checked against the
 * game's board), priority, includePolicy, includeOwnership (false). */
static int read_settings(pb_engine_t *e, const pb_jval_t *root,
                         pb__engine_query_t *q, const char **field,
                         pb_err_t *err) {
  const pb_game_t *g = e->g;
  static const char *const sizes[2] = {"boardXSize", "boardYSize"};
  for (int k = 0; k < 2; k++) {
    const pb_jval_t *v = pb_jval_get(root, sizes[k]);
    int want = k == 0 ? g->width : g->height;
    int64_t got = 0;
    *field = sizes[k];
    if (v != NULL && pb_jval_int(v, want, want, &got) != 0)
      return pb_err_set(err, PB_EINVAL,
                        "%s must be %d: the %s board is %d by %d (width "
                        "by height)",
                        sizes[k], want, g->name, g->width, g->height);
  }
  const pb_jval_t *v = pb_jval_get(root, "priority");
  *field = "priority";
  int64_t p = 0;
  if (v != NULL && pb_jval_int(v, INT32_MIN, INT32_MAX, &p) != 0)
    return pb_err_set(err, PB_EINVAL,
                      "priority must be an integer (a 32-bit one)");
  q->priority = (int)p;
  *field = "includePolicy";
  v = pb_jval_get(root, "includePolicy");
  if (v != NULL && pb_jval_bool(v) < 0)
    return pb_err_set(err, PB_EINVAL, "includePolicy must be true or false");
  q->policy_arr = v != NULL && pb_jval_bool(v) == 1;
  if (q->policy_arr && !e->az)
    return pb_err_set(err, PB_EUNSUPP,
                      "includePolicy: the checkpoint is a probs one (V and "
                      "Q, no policy)");
  *field = "reportDuringSearchEvery";
  v = pb_jval_get(root, "reportDuringSearchEvery");
  if (v != NULL) {
    q->every = pb_jval_num(v);
    if (!(q->every >= 0.01 && q->every <= 3600))
      return pb_err_set(err, PB_EINVAL,
                        "reportDuringSearchEvery must be a number of "
                        "seconds, 0.01..3600");
  }
  *field = "includeOwnership";
  v = pb_jval_get(root, "includeOwnership");
  if (v != NULL && pb_jval_bool(v) != 0)
    return pb_err_set(err, PB_EUNSUPP,
                      "includeOwnership: no ownership, the games here have "
                      "no territory (false or leave it out)");
  return 0;
}

/* "report": which values; *given 1 when the query named them. */
static int read_report(pb_engine_t *e, const pb_jval_t *root, unsigned *report,
                       int *given, const char **field, pb_err_t *err) {
  const pb_jval_t *r = pb_jval_get(root, "report");
  *field = "report";
  *given = r != NULL;
  *report =
      PB__ENGINE_V | PB__ENGINE_V1 | (e->az ? PB__ENGINE_POLICY : PB__ENGINE_Q);
  if (r == NULL) return 0;
  if (pb_jval_kind(r) != PB_JVAL_ARRAY)
    return pb_err_set(err, PB_EINVAL,
                      "report is %s; expected an array of \"v\", \"q\", "
                      "\"policy\", \"v1\", \"move\"",
                      pb_jval_kind_name(pb_jval_kind(r)));
  *report = 0;
  size_t nn = sizeof report_names / sizeof report_names[0];
  for (size_t i = 0; i < pb_jval_count(r); i++) {
    const char *name = plain_str(pb_jval_at(r, i));
    size_t k = 0;
    while (name != NULL && k < nn && strcmp(name, report_names[k].name) != 0)
      k++;
    if (name == NULL || k == nn)
      return pb_err_set(err, PB_EINVAL,
                        "report[%zu] is not one of \"v\", \"q\", \"policy\", "
                        "\"v1\", \"move\"",
                        i);
    *report |= report_names[k].bit;
  }
  if (e->az && (*report & PB__ENGINE_Q))
    return pb_err_set(err, PB_EUNSUPP,
                      "report \"q\": the checkpoint is of an alphazero run "
                      "(one policy+value network, no Q); ask for \"policy\"");
  if (!e->az && (*report & PB__ENGINE_POLICY))
    return pb_err_set(err, PB_EUNSUPP,
                      "report \"policy\": the checkpoint is a probs one (V "
                      "and Q, no policy); ask for \"q\"");
  return 0;
}

/* The spec `spec` with budget b into out (n bytes). */
static int with_budget(const char *spec, int64_t b, char *out, size_t n,
                       pb_err_t *err) {
  size_t kl = strcspn(spec, ":,");
  size_t nb = sizeof budgets / sizeof budgets[0], k = 0;
  while (k < nb && (strlen(budgets[k].kind) != kl ||
                    strncmp(spec, budgets[k].kind, kl) != 0))
    k++;
  if (k == nb)
    return pb_err_set(err, PB_EINVAL,
                      "agent \"%.*s\" takes no budget (budget sets beam's E, "
                      "mcts's N, abnet's nodes, bpip's N, td's depth, uct's "
                      "N, alphabeta's D, lookahead's K)",
                      (int)(kl > 64 ? 64 : kl), spec);
  if (b < budgets[k].lo || b > budgets[k].hi)
    return pb_err_set(
        err, PB_ERANGE, "budget %lld is out of range for %s (%ld..%ld)",
        (long long)b, budgets[k].kind, budgets[k].lo, budgets[k].hi);
  const char *key = budgets[k].key;
  if (key == NULL) {
    if (spec[kl] == ':')
      return pb_err_set(err, PB_EINVAL,
                        "the agent spec gives %s's budget already (%s:N)",
                        budgets[k].kind, budgets[k].kind);
    snprintf(out, n, "%.*s:%lld%s", (int)kl, spec, (long long)b, spec + kl);
    return 0;
  }
  char opt[16];
  snprintf(opt, sizeof opt, ",%s=", key);
  if (strstr(spec, opt) != NULL)
    return pb_err_set(err, PB_EINVAL, "the agent spec sets %s already (%s=)",
                      key, key);
  snprintf(out, n, "%s,%s=%lld", spec, key, (long long)b);
  return 0;
}

/* The agent's spec from "agent" (default: the best search of the
 * checkpoint's kind) and "budget" into spec (PB_ENGINE_MAX_SPEC + 32). */
static int read_spec(pb_engine_t *e, const pb_jval_t *av, const pb_jval_t *bv,
                     char *spec, const char **field, pb_err_t *err) {
  const char *s = e->az ? "mcts" : "abnet";
  *field = "agent";
  if (av != NULL && (s = plain_str(av)) == NULL)
    return pb_err_set(err, PB_EINVAL,
                      "agent is %s; expected an agent spec as `probs match` "
                      "reads it (\"beam,E=100\", \"abnet\", \"random\")",
                      pb_jval_kind(av) == PB_JVAL_STRING
                          ? "a string holding NUL"
                          : pb_jval_kind_name(pb_jval_kind(av)));
  if (s[0] == '\0' || strlen(s) > PB_ENGINE_MAX_SPEC)
    return pb_err_set(err, PB_EINVAL, "agent spec is empty or longer than %d",
                      PB_ENGINE_MAX_SPEC);
  if (strncmp(s, "gtp", 3) == 0 && (s[3] == ':' || s[3] == '\0'))
    return pb_err_set(err, PB_EINVAL,
                      "agent: gtp engines are not started from a query");
  if (bv == NULL) {
    snprintf(spec, PB_ENGINE_MAX_SPEC + 32, "%s", s);
    return 0;
  }
  *field = "budget";
  int64_t b = 0;
  int rc = pb_jval_int(bv, 1, PB_SEARCH_MAX_NODES, &b);
  if (rc != 0)
    return pb_err_set(err, rc,
                      "budget must be an integer 1..%d (the agent's "
                      "evaluations, simulations, expansions or depth)",
                      PB_SEARCH_MAX_NODES);
  return with_budget(s, b, spec, PB_ENGINE_MAX_SPEC + 32, err);
}

/* "agent", "budget", "seed": the agent of a query that reports a move. */
static int read_agent(pb_engine_t *e, const pb_jval_t *root,
                      pb__engine_query_t *q, int report_given,
                      const char **field, pb_err_t *err) {
  const pb_jval_t *av = pb_jval_get(root, "agent");
  const pb_jval_t *bv = pb_jval_get(root, "budget");
  const pb_jval_t *mv = pb_jval_get(root, "maxVisits");
  const pb_jval_t *sv = pb_jval_get(root, "seed");
  if (bv != NULL && mv != NULL) {
    *field = "maxVisits";
    return pb_err_set(err, PB_EINVAL,
                      "give budget or maxVisits (the same), not both");
  }
  const char *bname = bv != NULL ? "budget" : "maxVisits";
  if (bv == NULL) bv = mv;
  if ((av != NULL || bv != NULL || sv != NULL) && !report_given)
    q->report |= PB__ENGINE_MOVE;
  if (!(q->report & PB__ENGINE_MOVE)) {
    const char *f = av ? "agent" : bv ? bname : sv ? "seed" : NULL;
    if (f == NULL) return 0;
    *field = f;
    return pb_err_set(err, PB_EINVAL,
                      "%s is for the agent's move, but report has no "
                      "\"move\"",
                      f);
  }
  if (sv != NULL) {
    int64_t seed = 0;
    *field = "seed";
    if (pb_jval_int(sv, 0, INT64_MAX, &seed) != 0)
      return pb_err_set(err, PB_EINVAL,
                        "seed must be an integer 0..9223372036854775807");
    q->seed = (uint64_t)seed;
  }
  char spec[PB_ENGINE_MAX_SPEC + 32];
  int rc = read_spec(e, av, bv, spec, field, err);
  if (rc != 0) {
    if (*field != NULL && strcmp(*field, "budget") == 0) *field = bname;
    return rc;
  }
  *field = "agent";
  size_t full_len = strlen(spec) + strlen(e->model_path) + 16;
  q->full = malloc(full_len);
  q->spec = strdup(spec);
  if (q->full == NULL || q->spec == NULL) return nomem(e, err);
  pb_agent_spec_with_model(spec, e->model_path, q->full, full_len);
  return 0;
}

int pb__engine_parse(pb_engine_t *e, const char *line, size_t n,
                     pb__engine_query_t *q, int **turns, int *nturns,
                     const char **field, pb_err_t *err) {
  memset(q, 0, sizeof *q);
  q->agent = -1;
  *field = NULL;
  *turns = NULL;
  *nturns = 0;
  pb_err_t je;
  pb_err_clear(&je);
  const pb_jval_t *root = pb_jsonr_parse(e->jr, line, n, &je);
  if (root == NULL && je.code == PB_ENOMEM) return nomem(e, err);
  if (root == NULL)
    return pb_err_set(err, PB_ECORRUPT, "the query is not one JSON value: %s",
                      je.msg);
  if (pb_jval_kind(root) != PB_JVAL_OBJECT)
    return pb_err_set(err, PB_EINVAL, "the query is %s; expected an object",
                      pb_jval_kind_name(pb_jval_kind(root)));
  int report_given = 0, rc, nacts = 0;
  if ((rc = read_id(e, root, q, field, err)) != 0) return rc;
  if (pb_jval_get(root, "action") != NULL) {
    rc = pb__engine_action(e, root, line, n, err);
    return rc != 0 ? rc : 1;
  }
  if ((rc = check_fields(root, field, err)) != 0) return rc;
  if ((rc = read_position(e, root, q, &nacts, field, err)) != 0 ||
      (rc = read_settings(e, root, q, field, err)) != 0 ||
      (rc = read_report(e, root, &q->report, &report_given, field, err)) != 0)
    return rc;
  if (nacts < 0 && pb_jval_get(root, "analyzeTurns") != NULL) {
    *field = "analyzeTurns";
    return pb_err_set(err, PB_EINVAL,
                      "analyzeTurns needs moves (a position string has no "
                      "turns)");
  }
  if (q->policy_arr) q->report |= PB__ENGINE_POLICY;
  if ((rc = read_turns(e, root, nacts, turns, nturns, field, err)) != 0)
    return rc;
  return read_agent(e, root, q, report_given, field, err);
}
