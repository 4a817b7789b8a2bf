/* probs_capi.c - the C API of libprobs.so (probs_capi.h): argument checks
 * and calls into the modules, nothing more. */
#include "probs_capi.h"

#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "analysis.h"
#include "config.h"
#include "elo.h"
#include "engine.h"
#include "gtp_timed.h"
#include "match.h"
#include "model.h"
#include "neteval.h"
#include "pveval.h"
#include "sprt.h"

#ifndef PB_VERSION
#define PB_VERSION "unknown"
#endif

/* pb_capi_model_search's pv: the header promises room for 64 moves. */
_Static_assert(PB_ABNET_MAX_DEPTH <= 64, "a principal variation of 64 moves");

/* Rows of one network call at most (the evaluators chunk bigger asks). */
#define CAPI_MAX_BATCH 1024
/* V and Q cache entries of a model's evaluator. */
#define CAPI_CACHE (1u << 16)

int pb_capi_sizes(int out[4]) {
  if (out != NULL) {
    out[0] = (int)sizeof(pb_state_t);
    out[1] = (int)sizeof(pb_err_t);
    out[2] = PB_MAX_ACTIONS;
    out[3] = PB_ERR_MSG_MAX;
  }
  return 1;
}

const char *pb_capi_version(void) {
  return PB_VERSION;
}
const char *pb_capi_err_name(int code) {
  return pb_err_name(code);
}
const char *pb_capi_strerror(int code) {
  return pb_strerror(code);
}

/* ---- games ------------------------------------------------------------- */

const pb_game_t *pb_capi_game(const char *name, pb_err_t *err) {
  const pb_game_t *g = name != NULL ? pb_game_by_name(name) : NULL;
  if (g == NULL)
    pb_err_set(err, PB_EINVAL, "unknown game '%s' (known: %s)",
               name != NULL ? name : "(null)", pb_game_names());
  return g;
}

const char *pb_capi_game_names(void) {
  return pb_game_names();
}
const char *pb_capi_game_name(const pb_game_t *g) {
  return g->name;
}

void pb_capi_game_info(const pb_game_t *g, int out[7]) {
  out[0] = g->id;
  out[1] = g->num_actions;
  out[2] = g->planes;
  out[3] = g->height;
  out[4] = g->width;
  out[5] = g->max_turns;
  out[6] = g->state_bytes;
}

void pb_capi_reset(const pb_game_t *g, pb_state_t *s) {
  g->reset(s);
}

int pb_capi_legal(const pb_game_t *g, const pb_state_t *s, uint8_t *out) {
  return g->legal(s, out);
}

int pb_capi_play(const pb_game_t *g, pb_state_t *s, int action, float *reward,
                 int *done, pb_err_t *err) {
  return pb_game_step_checked(g, s, action, reward, done, err);
}

int pb_capi_terminal(const pb_game_t *g, const pb_state_t *s, float *reward) {
  float r = 0;
  int t = g->terminal(s, &r);
  if (reward != NULL) *reward = r;
  return t;
}

void pb_capi_encode(const pb_game_t *g, const pb_state_t *s, float *out) {
  g->encode(s, out);
}

int pb_capi_parse(const pb_game_t *g, pb_state_t *s, const char *moves,
                  pb_err_t *err) {
  if (moves == NULL) return pb_err_set(err, PB_EINVAL, "moves: NULL");
  return g->parse(s, moves, err);
}

int pb_capi_parse_move(const pb_game_t *g, const pb_state_t *s,
                       const char *text, int *action, pb_err_t *err) {
  if (text == NULL) return pb_err_set(err, PB_EINVAL, "move: NULL");
  return pb_analysis_parse_move(g, s, text, action, err);
}

int pb_capi_action_name(const pb_game_t *g, int action, char *buf, size_t n) {
  if (action < 0 || action >= g->num_actions || n == 0) return PB_EINVAL;
  return g->action_name(action, buf, n);
}

int pb_capi_render(const pb_game_t *g, const pb_state_t *s, char *buf,
                   size_t n) {
  return pb_analysis_board(g, s, buf, n);
}

uint64_t pb_capi_hash(const pb_game_t *g, const pb_state_t *s) {
  return g->hash(s);
}

int pb_capi_ply(const pb_game_t *g, const pb_state_t *s) {
  return g->ply(s);
}

int pb_capi_side(const pb_game_t *g, const pb_state_t *s) {
  return pb_analysis_side(g, s);
}

void pb_capi_pack(const pb_game_t *g, const pb_state_t *s, uint8_t *out) {
  g->pack(s, out);
}

int pb_capi_unpack(const pb_game_t *g, pb_state_t *s, const uint8_t *in,
                   size_t len, pb_err_t *err) {
  return g->unpack(s, in, len, err);
}

uint64_t pb_capi_perft(const pb_game_t *g, const pb_state_t *s, int depth) {
  return pb_game_perft(g, s, depth);
}

uint64_t pb_capi_count_games(const pb_game_t *g, const pb_state_t *s,
                             int depth) {
  return pb_game_count_games(g, s, depth);
}

/* ---- models ------------------------------------------------------------ */

struct pb_capi_model {
  pb_model_t *model;
  pb_neteval_t *ne; /* V and Q (PROBS, td) */
  pb_pveval_t *pve; /* the policy+value network (AlphaZero) */
  char *path;
};

pb_capi_model_t *pb_capi_model_open(const char *path, const char *device,
                                    pb_err_t *err) {
  if (path == NULL) {
    pb_err_set(err, PB_EINVAL, "model: no path");
    return NULL;
  }
  pb_capi_model_t *m = calloc(1, sizeof *m);
  if (m == NULL) {
    pb_err_set(err, PB_ENOMEM, "model: out of memory");
    return NULL;
  }
  m->path = strdup(path);
  m->model = m->path != NULL ? pb_model_open(path, device, NULL, err) : NULL;
  if (m->model == NULL) {
    if (m->path == NULL) pb_err_set(err, PB_ENOMEM, "model: out of memory");
    pb_capi_model_close(m);
    return NULL;
  }
  const pb_game_t *g = pb_model_game(m->model);
  if (pb_model_kind(m->model) == PB_NETS_PV) {
    m->pve = pb_pveval_new(g, CAPI_MAX_BATCH, err);
    if (m->pve == NULL || pb_pveval_bind(m->pve, pb_model_q(m->model), err)) {
      pb_capi_model_close(m);
      return NULL;
    }
  } else {
    m->ne = pb_neteval_new(g, CAPI_MAX_BATCH, CAPI_CACHE, err);
    if (m->ne == NULL) {
      pb_capi_model_close(m);
      return NULL;
    }
    pb_neteval_bind(m->ne, pb_model_v(m->model), pb_model_q(m->model));
  }
  return m;
}

void pb_capi_model_close(pb_capi_model_t *m) {
  if (m == NULL) return;
  pb_neteval_destroy(&m->ne);
  pb_pveval_destroy(&m->pve);
  pb_model_destroy(&m->model);
  free(m->path);
  free(m);
}

const pb_game_t *pb_capi_model_game(const pb_capi_model_t *m) {
  return pb_model_game(m->model);
}

int pb_capi_model_alphazero(const pb_capi_model_t *m) {
  return pb_model_kind(m->model) == PB_NETS_PV;
}

uint64_t pb_capi_model_version(const pb_capi_model_t *m) {
  return pb_model_version(m->model);
}

const char *pb_capi_model_path(const pb_capi_model_t *m) {
  return m->path;
}

const char *pb_capi_model_algorithm(const pb_capi_model_t *m) {
  return pb_model_config(m->model)->algorithm;
}

const char *pb_capi_model_kind(const pb_capi_model_t *m) {
  return pb_nets_name(pb_model_kind(m->model));
}

static int check_states(const pb_capi_model_t *m, const pb_state_t *s, int n,
                        const float *out, pb_err_t *err) {
  if (m == NULL || (n > 0 && (s == NULL || out == NULL)))
    return pb_err_set(err, PB_EINVAL, "model: NULL argument");
  if (n < 0) return pb_err_set(err, PB_EINVAL, "model: %d positions", n);
  return 0;
}

/* The AlphaZero network's logits and values of s[0..n) into the
 * caller's buffers; the part the caller does not want (NULL) goes to a
 * scratch buffer. */
static int az_eval(pb_capi_model_t *m, const pb_state_t *s, int n,
                   float *logits, float *values, pb_err_t *err) {
  pb_mcts_evalfn_t fn = pb_pveval_fn(m->pve);
  int A = pb_model_game(m->model)->num_actions;
  float *scratch = NULL;
  if (logits == NULL) scratch = logits = malloc((size_t)n * A * sizeof *logits);
  if (values == NULL) scratch = values = malloc((size_t)n * sizeof *values);
  if (logits == NULL || values == NULL)
    return pb_err_set(err, PB_ENOMEM, "model: out of memory");
  int rc = fn.eval(fn.ctx, s, n, logits, values, err);
  free(scratch);
  return rc;
}

int pb_capi_model_value(pb_capi_model_t *m, const pb_state_t *s, int n,
                        float *out, pb_err_t *err) {
  int rc = check_states(m, s, n, out, err);
  if (rc < 0 || n == 0) return rc;
  if (m->pve != NULL) return az_eval(m, s, n, NULL, out, err);
  pb_evalfn_t fn = pb_neteval_fn(m->ne);
  return fn.value(fn.ctx, s, n, out, err);
}

int pb_capi_model_q(pb_capi_model_t *m, const pb_state_t *s, int n, float *out,
                    pb_err_t *err) {
  int rc = check_states(m, s, n, out, err);
  if (rc < 0) return rc;
  if (m->pve != NULL)
    return pb_err_set(err, PB_EUNSUPP,
                      "%s: an AlphaZero model has no Q (its policy: logits)",
                      m->path);
  if (n == 0) return 0;
  pb_evalfn_t fn = pb_neteval_fn(m->ne);
  return fn.qvalues(fn.ctx, s, n, out, err);
}

int pb_capi_model_logits(pb_capi_model_t *m, const pb_state_t *s, int n,
                         float *out, pb_err_t *err) {
  int rc = check_states(m, s, n, out, err);
  if (rc < 0 || n == 0) return rc;
  if (m->pve != NULL) return az_eval(m, s, n, out, NULL, err);
  return pb_capi_model_q(m, s, n, out, err);
}

int pb_capi_model_search(pb_capi_model_t *m, const pb_state_t *s,
                         uint64_t nodes, int time_ms, int *move, float *value,
                         int *depth, int *solved, uint64_t *evaluations,
                         uint8_t *pv, int *pv_len, pb_err_t *err) {
  if (m == NULL || s == NULL || move == NULL || value == NULL ||
      depth == NULL || solved == NULL || evaluations == NULL || pv == NULL ||
      pv_len == NULL)
    return pb_err_set(err, PB_EINVAL, "search: NULL argument");
  const pb_config_t *c = pb_model_config(m->model);
  if (pb_model_kind(m->model) != PB_NETS_VQ)
    return pb_err_set(err, PB_EUNSUPP,
                      "%s: alpha-beta searches a PROBS model's V and Q, "
                      "this is a %s model",
                      m->path, c->algorithm);
  pb_analysis_opts_t o;
  pb_analysis_defaults(&o);
  o.abnet = 1;
  if (nodes > 0 || time_ms > 0) o.ab.nodes = nodes;
  o.ab.time_ms = time_ms;
  pb_analysis_t *an = pb_analysis_new(m->model, &o, err);
  if (an == NULL) return err != NULL ? err->code : PB_EINVAL;
  pb_analysis_eval_t *ev = malloc(sizeof *ev);
  int rc = ev != NULL ? pb_analysis_eval(an, s, ev, err)
                      : pb_err_set(err, PB_ENOMEM, "search: out of memory");
  if (rc == 0) {
    const pb_abnet_result_t *r = &ev->ab;
    *move = r->move;
    *value = r->value;
    *depth = r->depth;
    *solved = r->solved;
    *evaluations = r->v_evals + r->q_evals;
    *pv_len = r->pv_len;
    memcpy(pv, r->pv, (size_t)r->pv_len);
  }
  free(ev);
  pb_analysis_destroy(&an);
  return rc;
}

/* ---- agents ------------------------------------------------------------ */

struct pb_capi_agent {
  pb_gtp_timed_t *timed; /* the spec's agent, and its remakes for budgets */
};

pb_capi_agent_t *pb_capi_agent_new(const pb_game_t *g, const char *spec,
                                   const char *model, uint64_t seed,
                                   pb_err_t *err) {
  if (g == NULL || spec == NULL) {
    pb_err_set(err, PB_EINVAL, "agent: no %s", g == NULL ? "game" : "spec");
    return NULL;
  }
  size_t n = strlen(spec) + (model != NULL ? strlen(model) : 0) + 2;
  char *full = malloc(n);
  pb_capi_agent_t *a = calloc(1, sizeof *a);
  if (full == NULL || a == NULL) {
    free(full);
    free(a);
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  pb_agent_spec_with_model(spec, model, full, n);
  a->timed = pb_gtp_timed_new(g, full, seed, err);
  free(full);
  if (a->timed == NULL) {
    free(a);
    return NULL;
  }
  return a;
}

void pb_capi_agent_close(pb_capi_agent_t *a) {
  if (a == NULL) return;
  pb_gtp_timed_destroy(&a->timed);
  free(a);
}

int pb_capi_agent_act(pb_capi_agent_t *a, const pb_state_t *s,
                      int64_t budget_ms, pb_err_t *err) {
  if (a == NULL || s == NULL)
    return pb_err_set(err, PB_EINVAL, "agent: NULL argument");
  return pb_gtp_timed_act(a->timed, s, budget_ms < 0 ? -1 : budget_ms, err);
}

int pb_capi_agent_act_many(pb_capi_agent_t *a, const pb_state_t *s, int n,
                           uint64_t seed, int *out, pb_err_t *err) {
  if (a == NULL) return pb_err_set(err, PB_EINVAL, "agent: NULL");
  return pb_agent_act_many(pb_gtp_timed_agent(a->timed), s, n, seed, out, err);
}

void pb_capi_agent_reseed(pb_capi_agent_t *a, uint64_t seed) {
  pb_agent_reseed(pb_gtp_timed_agent(a->timed), seed);
}

uint64_t pb_capi_agent_evaluations(const pb_capi_agent_t *a) {
  return pb_agent_evaluations(pb_gtp_timed_agent(a->timed));
}

const char *pb_capi_agent_name(const pb_capi_agent_t *a) {
  return pb_agent_name(pb_gtp_timed_agent(a->timed));
}

int pb_capi_agent_scales(const pb_capi_agent_t *a) {
  return pb_gtp_timed_scales(a->timed);
}

const char *pb_capi_agent_last_spec(const pb_capi_agent_t *a) {
  return pb_gtp_timed_last_spec(a->timed);
}

int pb_capi_agent_kinds(char *buf, size_t n) {
  return pb_agent_kinds(buf, n);
}

/* ---- matches ----------------------------------------------------------- */

typedef struct {
  pb_sprt_t t;
  int decision;
  double llr;
  int8_t *outcomes; /* A's result of each game, or NULL */
  int cap;
} capi_match_t;

static int match_on_games(void *ctx, const pb_match_result_t *sofar) {
  capi_match_t *cm = ctx;
  cm->decision =
      pb_sprt_check(&cm->t, sofar->wins, sofar->draws, sofar->losses, &cm->llr);
  return cm->decision != PB_SPRT_CONTINUE;
}

static int match_on_game(void *ctx, const pb_match_game_t *gm, pb_err_t *err) {
  capi_match_t *cm = ctx;
  (void)err;
  if (gm->index < cm->cap) cm->outcomes[gm->index] = (int8_t)gm->outcome;
  return 0;
}

int pb_capi_match(const pb_game_t *g, const char *a_spec, const char *b_spec,
                  int games, uint64_t seed, int threads, int random_plies,
                  const char *openings, const double *sprt, int *out,
                  double *elo, double *llr, int8_t *outcomes, pb_err_t *err) {
  if (g == NULL || a_spec == NULL || b_spec == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "match: NULL argument");
  capi_match_t cm = {.outcomes = outcomes, .cap = outcomes ? games : 0};
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = a_spec;
  o.b_spec = b_spec;
  o.games = games;
  o.seed = seed;
  o.threads = threads;
  o.opening_random_moves = random_plies;
  if (outcomes != NULL) {
    o.on_game = match_on_game;
    o.game_ctx = &cm;
  }
  if (sprt != NULL) {
    int rc = pb_sprt_init(&cm.t, sprt[0], sprt[1], sprt[2], sprt[3], err);
    if (rc < 0) return rc;
    o.on_games = match_on_games;
    o.ctx = &cm;
  }
  pb_state_t *book = NULL;
  if (openings != NULL) {
    int rc = pb_match_openings_parse(g, openings, strlen(openings), "openings",
                                     &book, &o.n_openings, err);
    if (rc < 0) return rc;
    o.openings = book;
  }
  pb_match_result_t r;
  int rc = pb_match_play(g, &o, &r, err);
  free(book);
  if (rc < 0) return rc;
  const int v[PB_CAPI_M_FIELDS] = {
      r.games,        r.wins,          r.draws,        r.losses,
      r.first_wins,   r.first_draws,   r.first_losses, r.second_wins,
      r.second_draws, r.second_losses, r.capped,       (int)r.plies,
      cm.decision};
  memcpy(out, v, sizeof v);
  if (elo != NULL)
    pb_elo_diff(r.wins, r.draws, r.losses, elo, elo + 1, elo + 2);
  if (llr != NULL) *llr = cm.llr;
  return 0;
}

/* ---- the analysis engine ----------------------------------------------- */

struct pb_capi_engine {
  pb_engine_t *engine;
};

pb_capi_engine_t *pb_capi_engine_new(pb_capi_model_t *m, int batch,
                                     pb_capi_emit_fn emit, void *ctx,
                                     pb_err_t *err) {
  if (m == NULL || emit == NULL) {
    pb_err_set(err, PB_EINVAL, "engine: NULL argument");
    return NULL;
  }
  pb_capi_engine_t *e = calloc(1, sizeof *e);
  if (e == NULL) {
    pb_err_set(err, PB_ENOMEM, "engine: out of memory");
    return NULL;
  }
  e->engine = pb_engine_new(m->model, m->path, batch, emit, ctx, err);
  if (e->engine == NULL) {
    free(e);
    return NULL;
  }
  return e;
}

void pb_capi_engine_close(pb_capi_engine_t *e) {
  if (e == NULL) return;
  pb_engine_destroy(&e->engine);
  free(e);
}

int pb_capi_engine_query(pb_capi_engine_t *e, const char *line, size_t n,
                         pb_err_t *err) {
  if (e == NULL || line == NULL)
    return pb_err_set(err, PB_EINVAL, "engine: NULL argument");
  return pb_engine_query(e->engine, line, n, err);
}

int pb_capi_engine_flush(pb_capi_engine_t *e, pb_err_t *err) {
  if (e == NULL) return pb_err_set(err, PB_EINVAL, "engine: NULL argument");
  return pb_engine_flush(e->engine, err);
}

int pb_capi_engine_waiting(const pb_capi_engine_t *e) {
  return pb_engine_waiting(e->engine);
}
