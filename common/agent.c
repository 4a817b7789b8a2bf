/* agent.c - agents from spec strings: random, lookahead:K, alphabeta:D,
 * and trained networks (checkpoint:PATH, run:DIR@ITER).
 *
 * Workload: baseline opponents in matches and evaluation, thousands of moves
 * per second per thread. All searches recurse on stack copies of the
 * position; nothing is allocated once an agent exists (a network agent's
 * input and output buffers are its own; libtorch allocates inside the
 * forward pass, which we cannot avoid). */
#include "agent.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beam_search.h"
#include "ckpt.h"
#include "inproc.h"
#include "learn.h"
#include "neteval.h"
#include "nn.h"
#include "rng.h"

struct pb_agent {
  const pb_game_t *g;
  const pb_agent_vtable_t *vt;
  void *impl;
  char *name;
};

static pb_agent_t *random_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err);
static pb_agent_t *lookahead_new(const pb_game_t *g, const char *arg,
                                 uint64_t seed, pb_err_t *err);
static pb_agent_t *alphabeta_new(const pb_game_t *g, const char *arg,
                                 uint64_t seed, pb_err_t *err);
static pb_agent_t *checkpoint_new(const pb_game_t *g, const char *arg,
                                  uint64_t seed, pb_err_t *err);
static pb_agent_t *run_new(const pb_game_t *g, const char *arg, uint64_t seed,
                           pb_err_t *err);
static pb_agent_t *value_new(const pb_game_t *g, const char *arg, uint64_t seed,
                             pb_err_t *err);
static pb_agent_t *beam_new(const pb_game_t *g, const char *arg, uint64_t seed,
                            pb_err_t *err);

/* The kinds. `usage` is how the kind is listed in messages. */
typedef struct {
  const char *kind;
  const char *usage;
  pb_agent_factory_fn create;
} pb_agent_kind_t;

static const pb_agent_kind_t kinds[] = {
    {"random", "random", random_new},
    {"lookahead", "lookahead:K (K = 1..4)", lookahead_new},
    {"alphabeta", "alphabeta:D (D = 1..12)", alphabeta_new},
    {"checkpoint", "checkpoint:PATH", checkpoint_new},
    {"run", "run:DIR@ITER (or run:DIR: its newest)", run_new},
    {"value", "value:PATH", value_new},
    {"beam", "beam:PATH[,E=N][,M=N]", beam_new},
};
#define PB__NKINDS (sizeof kinds / sizeof kinds[0])

/* Streams of an agent's rng: the spec's seed gives stream 0. */
#define PB__AGENT_STREAM 0x6167656e74ULL /* "agent" */

/* ---------------------------------------------------------------- core */

int pb_agent_kinds(char *buf, size_t n) {
  if (buf == NULL || n == 0) return 0;
  size_t k = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < PB__NKINDS && k < n; i++) {
    int w = snprintf(buf + k, n - k, "%s%s", i ? ", " : "", kinds[i].usage);
    if (w < 0) break;
    k += (size_t)w;
  }
  return (int)(k < n ? k : n - 1);
}

pb_agent_t *pb_agent_new(const pb_game_t *g, const char *spec, uint64_t seed,
                         pb_err_t *err) {
  if (g == NULL || spec == NULL) {
    pb_err_set(err, PB_EINVAL, "agent: NULL game or spec");
    return NULL;
  }
  const char *colon = strchr(spec, ':');
  size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
  for (size_t i = 0; i < PB__NKINDS; i++)
    if (strlen(kinds[i].kind) == klen && !strncmp(kinds[i].kind, spec, klen))
      return kinds[i].create(g, colon ? colon + 1 : NULL, seed, err);
  char list[256];
  pb_agent_kinds(list, sizeof list);
  pb_err_set(err, PB_EINVAL, "agent: unknown spec \"%s\" (valid: %s)", spec,
             list);
  return NULL;
}

pb_agent_t *pb_agent_wrap(const pb_game_t *g, const pb_agent_vtable_t *vt,
                          void *impl, const char *name, pb_err_t *err) {
  if (g == NULL || vt == NULL || vt->act == NULL || name == NULL) {
    if (vt != NULL && vt->destroy != NULL) vt->destroy(impl);
    pb_err_set(err, PB_EINVAL, "agent: NULL game, vtable, act or name");
    return NULL;
  }
  pb_agent_t *a = calloc(1, sizeof *a);
  char *nm = strdup(name);
  if (a == NULL || nm == NULL) {
    free(a);
    free(nm);
    if (vt->destroy != NULL) vt->destroy(impl);
    pb_err_set(err, PB_ENOMEM, "agent: out of memory for \"%s\"", name);
    return NULL;
  }
  a->g = g;
  a->vt = vt;
  a->impl = impl;
  a->name = nm;
  return a;
}

int pb_agent_act(pb_agent_t *a, const pb_state_t *s, pb_err_t *err) {
  if (a == NULL || s == NULL)
    return pb_err_set(err, PB_EINVAL, "agent: NULL agent or state");
  uint8_t legal[PB_MAX_ACTIONS];
  int n = a->g->legal(s, legal);
  if (n <= 0)
    return pb_err_set(err, PB_EINVAL, "agent %s: the position is terminal",
                      a->name);
  int act = a->vt->act(a->impl, s, legal, n, err);
  if (act < 0) return act;
  for (int i = 0; i < n; i++)
    if (legal[i] == act) return act;
  return pb_err_set(err, PB_EILLEGAL, "agent %s chose illegal action %d",
                    a->name, act);
}

int pb_agent_act_many(pb_agent_t *a, const pb_state_t *s, int n,
                      uint64_t seed, int *out, pb_err_t *err) {
  if (a == NULL || (n > 0 && (s == NULL || out == NULL)))
    return pb_err_set(err, PB_EINVAL, "agent: NULL agent, states or out");
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    if (a->g->legal(&s[i], legal) == 0)
      return pb_err_set(err, PB_EINVAL,
                        "agent %s: position %d is terminal", a->name, i);
  }
  if (a->vt->act_batch == NULL) {
    for (int i = 0; i < n; i++) {
      pb_agent_reseed(a, pb_mix64(seed + (uint64_t)i));
      int act = pb_agent_act(a, &s[i], err);
      if (act < 0) return act;
      out[i] = act;
    }
    return 0;
  }
  if (n == 0) return 0;
  int rc = a->vt->act_batch(a->impl, s, n, out, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = a->g->legal(&s[i], legal), ok = 0;
    for (int k = 0; k < nl && !ok; k++) ok = legal[k] == out[i];
    if (!ok)
      return pb_err_set(err, PB_EILLEGAL, "agent %s chose illegal action %d",
                        a->name, out[i]);
  }
  return 0;
}

int pb_agent_batched(const pb_agent_t *a) {
  return a != NULL && a->vt->act_batch != NULL;
}

void pb_agent_reseed(pb_agent_t *a, uint64_t seed) {
  if (a != NULL && a->vt->reseed != NULL) a->vt->reseed(a->impl, seed);
}

const char *pb_agent_name(const pb_agent_t *a) {
  return a != NULL ? a->name : "(null)";
}

const pb_game_t *pb_agent_game(const pb_agent_t *a) {
  return a != NULL ? a->g : NULL;
}

void pb_agent_destroy(pb_agent_t **a) {
  if (a == NULL || *a == NULL) return;
  if ((*a)->vt->destroy != NULL) (*a)->vt->destroy((*a)->impl);
  free((*a)->name);
  free(*a);
  *a = NULL;
}

/* Parses arg as a decimal integer in [lo, hi]; fills err naming the spec. */
static int parse_int_arg(const char *kind, const char *arg, int lo, int hi,
                         int *out, pb_err_t *err) {
  if (arg == NULL || *arg == '\0')
    return pb_err_set(err, PB_EINVAL,
                      "agent: %s needs a number, %s:N with N "
                      "in %d..%d",
                      kind, kind, lo, hi);
  char *end = NULL;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno != 0 || end == arg || *end != '\0' || v < lo || v > hi)
    return pb_err_set(err, PB_EINVAL,
                      "agent: bad %s depth \"%s\" (expected "
                      "an integer in %d..%d)",
                      kind, arg, lo, hi);
  *out = (int)v;
  return 0;
}

/* Builds the spec string back for the agent's name ("lookahead:3"). */
static void spec_name(char *buf, size_t n, const char *kind, int arg) {
  snprintf(buf, n, "%s:%d", kind, arg);
}

/* Common state of the built-in kinds. */
typedef struct {
  const pb_game_t *g;
  pb_rng_t rng;
  int depth;
} base_t;

static void base_reseed(void *impl, uint64_t seed) {
  pb_rng_seed(&((base_t *)impl)->rng, seed, PB__AGENT_STREAM);
}

static void base_destroy(void *impl) {
  free(impl);
}

/* -------------------------------------------------------------- random */

static int random_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                      int n, pb_err_t *err) {
  (void)s;
  (void)err;
  base_t *b = impl;
  return legal[pb_rng_below(&b->rng, (uint32_t)n)];
}

static const pb_agent_vtable_t random_vt = {random_act, base_reseed,
                                            base_destroy, NULL};

static pb_agent_t *random_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err) {
  if (arg != NULL) {
    pb_err_set(err, PB_EINVAL,
               "agent: \"random\" takes no argument (got "
               "\"random:%s\")",
               arg);
    return NULL;
  }
  base_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  b->g = g;
  base_reseed(b, seed);
  return pb_agent_wrap(g, &random_vt, b, "random", err);
}

/* ----------------------------------------------------------- lookahead */

/* Negamax over outcomes (+1 win, 0 draw or unknown, -1 loss) of the
 * non-terminal position s, looking `depth` >= 1 plies ahead; fail-soft
 * alpha-beta, which returns the exact value whenever it lies in
 * (alpha, beta) and so changes no decision. */
static int la_negamax(const pb_game_t *g, const pb_state_t *s, int depth,
                      int alpha, int beta) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  int best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[i], &done);
    int v = done        ? (r > 0.0f) - (r < 0.0f)
            : depth > 1 ? -la_negamax(g, &c, depth - 1, -beta,
                                      -(alpha > best ? alpha : best))
                        : 0;
    if (v > best) {
      best = v;
      if (best >= beta || best == 1) break;
    }
  }
  return best;
}

static int lookahead_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                         int n, pb_err_t *err) {
  (void)err;
  base_t *b = impl;
  uint8_t cand[PB_MAX_ACTIONS];
  int ncand = 0, best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = b->g->step(&c, legal[i], &done);
    /* Window (best - 1, 2): a move as good as the best so far gets its
     * exact value, a worse one only needs to be shown worse. */
    int v = done ? (r > 0.0f) - (r < 0.0f)
            : b->depth > 1
                ? -la_negamax(b->g, &c, b->depth - 1, -2, -(best - 1))
                : 0;
    if (v > best) {
      best = v;
      ncand = 0;
    }
    if (v == best) cand[ncand++] = legal[i];
  }
  return cand[pb_rng_below(&b->rng, (uint32_t)ncand)];
}

static const pb_agent_vtable_t lookahead_vt = {lookahead_act, base_reseed,
                                               base_destroy, NULL};

static pb_agent_t *lookahead_new(const pb_game_t *g, const char *arg,
                                 uint64_t seed, pb_err_t *err) {
  int depth = 0;
  if (parse_int_arg("lookahead", arg, 1, 4, &depth, err) < 0) return NULL;
  base_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  b->g = g;
  b->depth = depth;
  base_reseed(b, seed);
  char name[32];
  spec_name(name, sizeof name, "lookahead", depth);
  return pb_agent_wrap(g, &lookahead_vt, b, name, err);
}

/* ----------------------------------------------------------- alphabeta */

enum { AB_MAX_WINDOWS = 80, AB_WIN = 1000000, AB_INF = 2000000 };

typedef struct {
  base_t base;
  int nwin;                     /* number of windows */
  int wlen;                     /* stones in a window (4 or 3) */
  int weight[5];                /* score of a window by its stone count */
  uint64_t win[AB_MAX_WINDOWS]; /* the windows, as bit masks */
  int norder;
  uint8_t order[PB_MAX_ACTIONS]; /* actions, center first */
} ab_t;

/* Heuristic from the side to move: windows that only one side occupies
 * score for that side, more for fuller ones. */
static int ab_eval(const ab_t *ab, const pb_state_t *s) {
  uint64_t me = s->w[0], opp = s->w[0] ^ s->w[1];
  int score = 0;
  for (int i = 0; i < ab->nwin; i++) {
    uint64_t m = ab->win[i];
    int a = __builtin_popcountll(me & m), o = __builtin_popcountll(opp & m);
    if (o == 0)
      score += ab->weight[a];
    else if (a == 0)
      score -= ab->weight[o];
  }
  return score;
}

/* Fail-soft alpha-beta from the non-terminal position s. */
static int ab_negamax(const ab_t *ab, const pb_state_t *s, int depth, int alpha,
                      int beta) {
  const pb_game_t *g = ab->base.g;
  if (depth == 0) return ab_eval(ab, s);
  uint8_t legal[PB_MAX_ACTIONS];
  int n = g->legal(s, legal);
  uint64_t ok = 0; /* the legal actions as a bit set (num_actions <= 64) */
  for (int i = 0; i < n; i++) ok |= 1ULL << legal[i];
  int best = -AB_INF;
  for (int i = 0; i < ab->norder; i++) {
    int a = ab->order[i];
    if (!(ok >> a & 1)) continue;
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, a, &done);
    /* A win sooner (more depth left) is worth more. */
    int v = done ? (r > 0.0f ? AB_WIN + depth : 0)
                 : -ab_negamax(ab, &c, depth - 1, -beta,
                               -(alpha > best ? alpha : best));
    if (v > best) {
      best = v;
      if (best >= beta) break;
    }
  }
  return best;
}

static int alphabeta_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                         int n, pb_err_t *err) {
  (void)err;
  ab_t *ab = impl;
  const pb_game_t *g = ab->base.g;
  int depth = ab->base.depth;
  uint64_t ok = 0;
  for (int i = 0; i < n; i++) ok |= 1ULL << legal[i];
  uint8_t cand[PB_MAX_ACTIONS];
  int ncand = 0, best = -AB_INF;
  for (int i = 0; i < ab->norder; i++) {
    int a = ab->order[i];
    if (!(ok >> a & 1)) continue;
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, a, &done);
    /* Window (best - 1, inf): exact values for moves that tie the best. */
    int v = done ? (r > 0.0f ? AB_WIN + depth : 0)
                 : -ab_negamax(ab, &c, depth - 1, -AB_INF, -(best - 1));
    if (v > best) {
      best = v;
      ncand = 0;
    }
    if (v == best) cand[ncand++] = (uint8_t)a;
  }
  return cand[pb_rng_below(&ab->base.rng, (uint32_t)ncand)];
}

static const pb_agent_vtable_t alphabeta_vt = {alphabeta_act, base_reseed,
                                               base_destroy, NULL};

/* Adds every window of `len` cells in a width x height grid; cell (c, r)
 * is bit c * stride + r (stride 7: Connect Four's columns) or, with stride
 * 0, bit r * width + c (reading order: Tic-Tac-Toe). */
static void ab_windows(ab_t *ab, int width, int height, int len, int stride) {
  static const int dirs[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};
  ab->nwin = 0;
  ab->wlen = len;
  for (int d = 0; d < 4; d++)
    for (int c0 = 0; c0 < width; c0++)
      for (int r0 = 0; r0 < height; r0++) {
        int c1 = c0 + dirs[d][0] * (len - 1), r1 = r0 + dirs[d][1] * (len - 1);
        if (c1 < 0 || c1 >= width || r1 < 0 || r1 >= height) continue;
        uint64_t m = 0;
        for (int k = 0; k < len; k++) {
          int c = c0 + dirs[d][0] * k, r = r0 + dirs[d][1] * k;
          m |= 1ULL << (stride ? c * stride + r : r * width + c);
        }
        if (ab->nwin < AB_MAX_WINDOWS) ab->win[ab->nwin++] = m;
      }
}

/* Orders actions by distance of their cell from the center of the board;
 * for column games (Connect Four) an action is a column. */
static void ab_order(ab_t *ab, int width, int height, int columns) {
  const pb_game_t *g = ab->base.g;
  ab->norder = g->num_actions;
  int key[PB_MAX_ACTIONS];
  for (int a = 0; a < g->num_actions; a++) {
    int c = columns ? a : a % width, r = columns ? 0 : a / width;
    int dc = 2 * c - (width - 1), dr = columns ? 0 : 2 * r - (height - 1);
    key[a] = dc * dc + dr * dr;
    ab->order[a] = (uint8_t)a;
  }
  for (int i = 1; i < ab->norder; i++) /* insertion sort, stable */
    for (int j = i; j > 0 && key[ab->order[j]] < key[ab->order[j - 1]]; j--) {
      uint8_t t = ab->order[j];
      ab->order[j] = ab->order[j - 1];
      ab->order[j - 1] = t;
    }
}

static pb_agent_t *alphabeta_new(const pb_game_t *g, const char *arg,
                                 uint64_t seed, pb_err_t *err) {
  int depth = 0;
  if (parse_int_arg("alphabeta", arg, 1, 12, &depth, err) < 0) return NULL;
  if (g->id != PB_GAME_CONNECT4 && g->id != PB_GAME_TICTACTOE) {
    pb_err_set(err, PB_EUNSUPP,
               "agent: alphabeta has no heuristic for %s "
               "(only connect4 and tictactoe)",
               g->name);
    return NULL;
  }
  ab_t *ab = calloc(1, sizeof *ab);
  if (ab == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  ab->base.g = g;
  ab->base.depth = depth;
  base_reseed(&ab->base, seed);
  if (g->id == PB_GAME_CONNECT4) {
    ab_windows(ab, 7, 6, 4, 7);
    ab_order(ab, 7, 6, 1);
    static const int w4[5] = {0, 1, 5, 50, 0};
    memcpy(ab->weight, w4, sizeof w4);
  } else {
    ab_windows(ab, 3, 3, 3, 0);
    ab_order(ab, 3, 3, 0);
    static const int w3[5] = {0, 1, 8, 0, 0};
    memcpy(ab->weight, w3, sizeof w3);
  }
  char name[32];
  spec_name(name, sizeof name, "alphabeta", depth);
  return pb_agent_wrap(g, &alphabeta_vt, ab, name, err);
}

/* ------------------------------------------------------------- network */

/* A trained checkpoint playing greedily on Q (checkpoint:, run:), on V one
 * ply deep (value:), or through beam search with V and Q (beam:). */
enum { NET_Q = 0, NET_V1 = 1, NET_BEAM = 2 };
enum { NET_CHUNK = 256 }; /* positions per batched call */

typedef struct {
  const pb_game_t *g;
  int mode;          /* NET_* */
  int E, M;          /* beam search settings (NET_BEAM) */
  pb_learn_t *learn; /* owns the networks */
  float *in, *out;   /* planes and outputs of up to NET_CHUNK * A rows */
  pb_state_t *kids;  /* NET_V1: children of a chunk */
  pb_beam_t *beam;   /* NET_BEAM: searches of a chunk */
  pb_neteval_t *ne;  /* NET_BEAM: batched, cached V and Q */
  /* The thread that last set libtorch's thread count for this agent: with
   * OpenMP the setting belongs to a thread, and agents are often made in
   * one thread and used in another (pb_match_play). */
  pthread_t owner;
  int owner_set;
} net_agent_t;

static void net_destroy(void *impl) {
  net_agent_t *na = impl;
  if (na == NULL) return;
  pb_beam_destroy(&na->beam);
  pb_neteval_destroy(&na->ne);
  pb_learn_destroy(&na->learn);
  free(na->in);
  free(na->out);
  free(na->kids);
  free(na);
}

/* The legal action of highest value in row v (ties to the lowest action;
 * NaN counts as -inf). */
static int argmax_legal(const float *v, const uint8_t *legal, int n) {
  int best = legal[0];
  float bv = isnan(v[best]) ? -INFINITY : v[best];
  for (int i = 1; i < n; i++)
    if (v[legal[i]] > bv) {
      bv = v[legal[i]];
      best = legal[i];
    }
  return best;
}

/* Greedy Q for n <= NET_CHUNK positions. */
static int net_q_chunk(net_agent_t *na, const pb_state_t *s, int n, int *out,
                       pb_err_t *err) {
  const pb_game_t *g = na->g;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  for (int i = 0; i < n; i++) g->encode(&s[i], &na->in[i * in_size]);
  int rc = pb_nn_forward(pb_learn_q(na->learn), na->in, n, na->out, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    out[i] = argmax_legal(&na->out[(size_t)i * g->num_actions], legal, nl);
  }
  return 0;
}

/* V one ply deep for n <= NET_CHUNK positions: one V call for every
 * child that does not end the game. */
static int net_v1_chunk(net_agent_t *na, const pb_state_t *s, int n, int *out,
                        pb_err_t *err) {
  const pb_game_t *g = na->g;
  const int A = g->num_actions;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  float val[NET_CHUNK * PB_MAX_ACTIONS];
  int idx[NET_CHUNK * PB_MAX_ACTIONS]; /* child slot -> row to evaluate */
  int nk = 0;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    for (int a = 0; a < A; a++) val[i * A + a] = -INFINITY;
    for (int k = 0; k < nl; k++) {
      pb_state_t c = s[i];
      int done = 0;
      float r = g->step(&c, legal[k], &done);
      int slot = i * A + legal[k];
      idx[slot] = -1;
      if (done) {
        val[slot] = r;
      } else {
        na->kids[nk] = c;
        idx[slot] = nk++;
      }
    }
  }
  for (int k = 0; k < nk; k++) g->encode(&na->kids[k], &na->in[k * in_size]);
  int rc = pb_nn_forward(pb_learn_v(na->learn), na->in, nk, na->out, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    for (int k = 0; k < nl; k++) {
      int slot = i * A + legal[k];
      if (idx[slot] >= 0) val[slot] = -na->out[idx[slot]];
    }
    out[i] = argmax_legal(&val[i * A], legal, nl);
  }
  return 0;
}

/* Beam search for n <= NET_CHUNK positions. */
static int net_beam_chunk(net_agent_t *na, const pb_state_t *s, int n,
                          int *out, pb_err_t *err) {
  const pb_game_t *g = na->g;
  pb_evalfn_t fn = pb_neteval_fn(na->ne);
  int rc = pb_beam_run(na->beam, s, n, &fn, na->out, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    out[i] = argmax_legal(&na->out[(size_t)i * g->num_actions], legal, nl);
  }
  return 0;
}

static int net_act_batch(void *impl, const pb_state_t *s, int n, int *out,
                         pb_err_t *err) {
  net_agent_t *na = impl;
  if (!na->owner_set || !pthread_equal(na->owner, pthread_self())) {
    /* One intra-op thread: these forwards are small, and matches already
     * run one agent per core. */
    pb_nn_set_threads(1);
    na->owner = pthread_self();
    na->owner_set = 1;
  }
  for (int i = 0; i < n; i += NET_CHUNK) {
    int m = n - i < NET_CHUNK ? n - i : NET_CHUNK;
    int rc = na->mode == NET_Q    ? net_q_chunk(na, s + i, m, out + i, err)
             : na->mode == NET_V1 ? net_v1_chunk(na, s + i, m, out + i, err)
                                  : net_beam_chunk(na, s + i, m, out + i, err);
    if (rc < 0) return rc;
  }
  return 0;
}

static int net_act(void *impl, const pb_state_t *s, const uint8_t *legal, int n,
                   pb_err_t *err) {
  (void)legal;
  (void)n;
  int a = 0;
  int rc = net_act_batch(impl, s, 1, &a, err);
  return rc < 0 ? rc : a;
}

/* Deterministic: reseeding changes nothing. */
static const pb_agent_vtable_t net_vt = {net_act, NULL, net_destroy,
                                         net_act_batch};

/* Opens the checkpoint at `path` as an agent named `name` playing in
 * `mode` (E, M: beam settings). */
static pb_agent_t *net_open(const pb_game_t *g, const char *path,
                            const char *name, int mode, int E, int M,
                            pb_err_t *err) {
  pb_err_t e;
  pb_err_clear(&e);
  pb_learn_t *l = pb_learn_open(path, "cpu", NULL, &e);
  if (l == NULL) {
    pb_err_set(err, e.code < 0 ? e.code : PB_EIO, "agent %s: %s", name, e.msg);
    return NULL;
  }
  const pb_game_t *cg = pb_learn_game(l);
  if (cg != g) {
    pb_err_set(err, PB_EMISMATCH,
               "agent %s: the checkpoint plays %s, but this match is %s", name,
               cg->name, g->name);
    pb_learn_destroy(&l);
    return NULL;
  }
  net_agent_t *na = calloc(1, sizeof *na);
  if (na == NULL) {
    pb_learn_destroy(&l);
    pb_err_set(err, PB_ENOMEM, "agent %s: out of memory", name);
    return NULL;
  }
  na->g = g;
  na->mode = mode;
  na->E = E;
  na->M = M;
  na->learn = l;
  const size_t A = (size_t)g->num_actions;
  const size_t rows = NET_CHUNK * (mode == NET_V1 ? A : 1);
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  na->in = malloc(rows * in_size * sizeof *na->in);
  na->out = malloc(NET_CHUNK * A * sizeof *na->out);
  if (mode == NET_V1) na->kids = malloc(rows * sizeof *na->kids);
  int ok = na->in != NULL && na->out != NULL &&
           (mode != NET_V1 || na->kids != NULL);
  if (ok && mode == NET_BEAM) {
    /* Trees for up to NET_CHUNK searches at once (pb_beam_new lowers the
     * count if they would not fit its memory bound). */
    na->beam = pb_beam_new(g, E, M, NET_CHUNK, &e);
    na->ne = na->beam ? pb_neteval_new(g, 512, 1u << 18, &e) : NULL;
    if (na->ne == NULL) {
      net_destroy(na);
      pb_err_set(err, e.code < 0 ? e.code : PB_ENOMEM, "agent %s: %s", name,
                 e.msg);
      return NULL;
    }
    pb_neteval_bind(na->ne, pb_learn_v(l), pb_learn_q(l));
  }
  if (!ok) {
    net_destroy(na);
    pb_err_set(err, PB_ENOMEM, "agent %s: out of memory", name);
    return NULL;
  }
  return pb_agent_wrap(g, &net_vt, na, name, err);
}

/* The agent's name: "kind:arg", truncated for messages only if absurdly
 * long (the path itself is used untruncated). */
static void net_name(char *buf, size_t n, const char *kind, const char *arg) {
  snprintf(buf, n, "%s:%s", kind, arg);
}

static pb_agent_t *checkpoint_new(const pb_game_t *g, const char *arg,
                                  uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: checkpoint needs a file, checkpoint:PATH (e.g. "
               "checkpoint:runs/x/checkpoints/ckpt-000010.pbck)");
    return NULL;
  }
  char name[4200];
  net_name(name, sizeof name, "checkpoint", arg);
  return net_open(g, arg, name, NET_Q, 0, 0, err);
}

static pb_agent_t *run_new(const pb_game_t *g, const char *arg, uint64_t seed,
                           pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: run needs a run directory, run:DIR@ITER or run:DIR "
               "(its newest checkpoint)");
    return NULL;
  }
  const char *at = strrchr(arg, '@');
  size_t dlen = at ? (size_t)(at - arg) : strlen(arg);
  char name[4200], dir[4096], path[4200];
  net_name(name, sizeof name, "run", arg);
  if (dlen == 0 || dlen >= sizeof dir) {
    pb_err_set(err, PB_EINVAL,
               "agent %s: bad run directory (empty or longer "
               "than %zu bytes)",
               name, sizeof dir - 1);
    return NULL;
  }
  memcpy(dir, arg, dlen);
  dir[dlen] = '\0';
  if (at != NULL) {
    const char *it = at + 1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(it, &end, 10);
    if (*it < '0' || *it > '9' || errno != 0 || *end != '\0' ||
        v > 999999999999ULL) {
      pb_err_set(err, PB_EINVAL,
                 "agent %s: bad iteration \"%s\" (expected run:DIR@ITER, "
                 "ITER a number of finished iterations, 0 = untrained)",
                 name, it);
      return NULL;
    }
    pb_inproc_ckpt_path(dir, v, path, sizeof path);
  } else {
    char cdir[4200];
    snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
    pb_err_t e;
    pb_err_clear(&e);
    int rc = pb_ckpt_find_latest(cdir, path, sizeof path, &e);
    if (rc < 0) {
      pb_err_set(err, rc, "agent %s: %s", name, e.msg);
      return NULL;
    }
  }
  return net_open(g, path, name, NET_Q, 0, 0, err);
}

static pb_agent_t *value_new(const pb_game_t *g, const char *arg, uint64_t seed,
                             pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: value needs a checkpoint file, value:PATH");
    return NULL;
  }
  char name[4200];
  net_name(name, sizeof name, "value", arg);
  return net_open(g, arg, name, NET_V1, 0, 0, err);
}

/* beam:PATH[,E=N][,M=N]: the settings are taken from the end, so a path
 * may itself hold commas. */
static pb_agent_t *beam_new(const pb_game_t *g, const char *arg, uint64_t seed,
                            pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: beam needs a checkpoint file, beam:PATH[,E=N][,M=N] "
               "(e.g. beam:runs/x/checkpoints/ckpt-000100.pbck,E=200,M=8)");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "beam", arg);
  if (strlen(arg) >= sizeof path) {
    pb_err_set(err, PB_EINVAL, "agent %s: path too long", name);
    return NULL;
  }
  strcpy(path, arg);
  int E = 30, M = 3, seenE = 0, seenM = 0;
  for (;;) {
    char *comma = strrchr(path, ',');
    if (comma == NULL) break;
    char *opt = comma + 1;
    int *dst = NULL, lo = 1, hi = 0;
    if (opt[0] == 'E' && opt[1] == '=' && !seenE) {
      dst = &E;
      hi = 100000;
      seenE = 1;
    } else if (opt[0] == 'M' && opt[1] == '=' && !seenM) {
      dst = &M;
      hi = 99;
      seenM = 1;
    } else {
      break;
    }
    char *end = NULL;
    errno = 0;
    long v = strtol(opt + 2, &end, 10);
    if (errno != 0 || end == opt + 2 || *end != '\0' || v < lo || v > hi) {
      pb_err_set(err, PB_EINVAL,
                 "agent %s: bad %c=\"%s\" (expected an integer in %d..%d)",
                 name, opt[0], opt + 2, lo, hi);
      return NULL;
    }
    *dst = (int)v;
    *comma = '\0';
  }
  if (path[0] == '\0') {
    pb_err_set(err, PB_EINVAL, "agent %s: no checkpoint path before the "
               "settings", name);
    return NULL;
  }
  return net_open(g, path, name, NET_BEAM, E, M, err);
}
