/* agent.c - agents from spec strings: random, lookahead:K, greedy,
 * alphabeta:D,
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
#include "gtp.h"
#include "model.h"
#include "mcts.h"
#include "neteval.h"
#include "nn.h"
#include "pveval.h"
#include "rng.h"
#include "rundir.h"

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
static pb_agent_t *greedy_new(const pb_game_t *g, const char *arg,
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
static pb_agent_t *mcts_new(const pb_game_t *g, const char *arg, uint64_t seed,
                            pb_err_t *err);
static pb_agent_t *gtp_new(const pb_game_t *g, const char *arg, uint64_t seed,
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
    {"greedy", "greedy", greedy_new},
    {"alphabeta", "alphabeta:D (D = 1..12)", alphabeta_new},
    {"checkpoint", "checkpoint:PATH", checkpoint_new},
    {"run", "run:DIR@ITER (or run:DIR: its newest)", run_new},
    {"value", "value:PATH", value_new},
    {"beam", "beam:PATH[,E=N][,M=N]", beam_new},
    {"mcts", "mcts:PATH[,N=n] (alphazero checkpoints)", mcts_new},
    {"gtp", "gtp:COMMAND (othello)", gtp_new},
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

/* The moves of highest value seen so far, from which the baselines play
 * one uniformly at random. */
typedef struct {
  uint8_t move[PB_MAX_ACTIONS];
  int n;
  int best; /* starts below every value the caller can give */
} ties_t;

static void ties_add(ties_t *t, int value, int action) {
  if (value > t->best) {
    t->best = value;
    t->n = 0;
  }
  if (value == t->best) t->move[t->n++] = (uint8_t)action;
}

static int ties_pick(const ties_t *t, pb_rng_t *rng) {
  return t->move[pb_rng_below(rng, (uint32_t)t->n)];
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
  ties_t t = {.n = 0, .best = -2};
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = b->g->step(&c, legal[i], &done);
    /* Window (best - 1, 2): a move as good as the best so far gets its
     * exact value, a worse one only needs to be shown worse. */
    int v = done ? (r > 0.0f) - (r < 0.0f)
            : b->depth > 1
                ? -la_negamax(b->g, &c, b->depth - 1, -2, -(t.best - 1))
                : 0;
    ties_add(&t, v, legal[i]);
  }
  return ties_pick(&t, &b->rng);
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

/* -------------------------------------------------------------- greedy */

/* Value of having played into c (done, reward r): a win or loss that the
 * move brings about first, then the mover's material. */
static int greedy_value(const pb_game_t *g, const pb_state_t *c, int done,
                        float r) {
  if (done && r != 0.0f) return r > 0.0f ? 1000000 : -1000000;
  return -g->material(c);
}

static int greedy_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                      int n, pb_err_t *err) {
  (void)err;
  base_t *b = impl;
  ties_t t = {.n = 0, .best = INT32_MIN};
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = b->g->step(&c, legal[i], &done);
    ties_add(&t, greedy_value(b->g, &c, done, r), legal[i]);
  }
  return ties_pick(&t, &b->rng);
}

static const pb_agent_vtable_t greedy_vt = {greedy_act, base_reseed,
                                            base_destroy, NULL};

static pb_agent_t *greedy_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err) {
  if (arg != NULL) {
    pb_err_set(err, PB_EINVAL,
               "agent: \"greedy\" takes no argument (got \"greedy:%s\")", arg);
    return NULL;
  }
  if (g->material == NULL) {
    pb_err_set(err, PB_EUNSUPP,
               "agent: greedy needs material to count, and %s has none "
               "(games with it: othello, toguz)",
               g->name);
    return NULL;
  }
  base_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  b->g = g;
  base_reseed(b, seed);
  return pb_agent_wrap(g, &greedy_vt, b, "greedy", err);
}

/* ----------------------------------------------------------- alphabeta */

enum { AB_MAX_WINDOWS = 80, AB_WIN = 1000000, AB_INF = 2000000 };

/* The horizon heuristic, by game. */
enum { AB_HEUR_WINDOWS = 0, AB_HEUR_WPC = 1, AB_HEUR_MATERIAL = 2 };

typedef struct {
  base_t base;
  int heur;                     /* AB_HEUR_* */
  int nwin;                     /* number of windows */
  int wlen;                     /* stones in a window (4 or 3) */
  int weight[5];                /* score of a window by its stone count */
  uint64_t win[AB_MAX_WINDOWS]; /* the windows, as bit masks */
  const int *wpc;               /* AB_HEUR_WPC: weight of each square */
  int norder;
  uint8_t order[PB_MAX_ACTIONS]; /* actions, most promising first */
} ab_t;

/* Othello's weighted piece counter: the heuristic player of Lucas and
 * Runarsson's TD-learning study (../shared/papers/004, Fig. 3), weights
 * times 100; corners 1.00, the squares next to them -0.25. Symmetric, so
 * the square order (a1 first, row by row) does not matter. */
static const int ab_othello_wpc[64] = {
    100, -25, 10, 5, 5, 10, -25, 100, /* row 1 */
    -25, -25, 1,  1, 1, 1,  -25, -25, /* row 2 */
    10,  1,   5,  2, 2, 5,  1,   10,  /* row 3 */
    5,   1,   2,  1, 1, 2,  1,   5,   /* row 4 */
    5,   1,   2,  1, 1, 2,  1,   5,   /* row 5 */
    10,  1,   5,  2, 2, 5,  1,   10,  /* row 6 */
    -25, -25, 1,  1, 1, 1,  -25, -25, /* row 7 */
    100, -25, 10, 5, 5, 10, -25, 100, /* row 8 */
};

/* Heuristic from the side to move. Windows (Connect Four, Tic-Tac-Toe):
 * windows that only one side occupies score for that side, more for
 * fuller ones. WPC (Othello: w[0] the mover's discs, w[1] the
 * opponent's): the sum of the weights of the mover's squares minus the
 * opponent's. Material (Toguz Kumalak): the kazna difference. */
static int ab_eval(const ab_t *ab, const pb_state_t *s) {
  if (ab->heur == AB_HEUR_MATERIAL) return ab->base.g->material(s);
  if (ab->heur == AB_HEUR_WPC) {
    int score = 0;
    for (uint64_t m = s->w[0]; m; m &= m - 1)
      score += ab->wpc[__builtin_ctzll(m)];
    for (uint64_t m = s->w[1]; m; m &= m - 1)
      score -= ab->wpc[__builtin_ctzll(m)];
    return score;
  }
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

/* The value of a move that ended the game with the mover's reward r,
 * `depth` plies before the horizon: a win sooner (more depth left) is
 * worth more, a loss later less bad. */
static int ab_end_value(float r, int depth) {
  return r > 0.0f ? AB_WIN + depth : r < 0.0f ? -AB_WIN - depth : 0;
}

/* Marks the legal actions in ok[0..num_actions). */
static void ab_mark(const ab_t *ab, const uint8_t *legal, int n,
                    uint8_t *ok) {
  memset(ok, 0, (size_t)ab->base.g->num_actions);
  for (int i = 0; i < n; i++) ok[legal[i]] = 1;
}

/* Fail-soft alpha-beta from the non-terminal position s. */
static int ab_negamax(const ab_t *ab, const pb_state_t *s, int depth, int alpha,
                      int beta) {
  const pb_game_t *g = ab->base.g;
  if (depth == 0) return ab_eval(ab, s);
  uint8_t legal[PB_MAX_ACTIONS], ok[PB_MAX_ACTIONS];
  int n = g->legal(s, legal);
  ab_mark(ab, legal, n, ok);
  int best = -AB_INF;
  for (int i = 0; i < ab->norder; i++) {
    int a = ab->order[i];
    if (!ok[a]) continue;
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, a, &done);
    int v = done ? ab_end_value(r, depth)
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
  uint8_t ok[PB_MAX_ACTIONS];
  ab_mark(ab, legal, n, ok);
  ties_t t = {.n = 0, .best = -AB_INF};
  for (int i = 0; i < ab->norder; i++) {
    int a = ab->order[i];
    if (!ok[a]) continue;
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, a, &done);
    /* Window (best - 1, inf): exact values for moves that tie the best. */
    int v = done ? ab_end_value(r, depth)
                 : -ab_negamax(ab, &c, depth - 1, -AB_INF, -(t.best - 1));
    ties_add(&t, v, a);
  }
  return ties_pick(&t, &ab->base.rng);
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
  if (g->id != PB_GAME_CONNECT4 && g->id != PB_GAME_TICTACTOE &&
      g->id != PB_GAME_OTHELLO && g->id != PB_GAME_TOGUZ) {
    pb_err_set(err, PB_EUNSUPP,
               "agent: alphabeta has no heuristic for %s "
               "(only connect4, tictactoe, othello and toguz)",
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
  } else if (g->id == PB_GAME_TICTACTOE) {
    ab_windows(ab, 3, 3, 3, 0);
    ab_order(ab, 3, 3, 0);
    static const int w3[5] = {0, 1, 8, 0, 0};
    memcpy(ab->weight, w3, sizeof w3);
  } else if (g->id == PB_GAME_TOGUZ) {
    ab->heur = AB_HEUR_MATERIAL;
    ab->norder = g->num_actions;
    for (int a = 0; a < g->num_actions; a++) ab->order[a] = (uint8_t)a;
  } else {
    /* Othello: squares by falling weight (corners first), the pass last. */
    ab->heur = AB_HEUR_WPC;
    ab->wpc = ab_othello_wpc;
    ab->norder = g->num_actions;
    for (int a = 0; a < g->num_actions; a++) ab->order[a] = (uint8_t)a;
    for (int i = 1; i < 64; i++) /* insertion sort, stable */
      for (int j = i; j > 0 && ab_othello_wpc[ab->order[j]] >
                                   ab_othello_wpc[ab->order[j - 1]];
           j--) {
        uint8_t t = ab->order[j];
        ab->order[j] = ab->order[j - 1];
        ab->order[j - 1] = t;
      }
  }
  char name[32];
  spec_name(name, sizeof name, "alphabeta", depth);
  return pb_agent_wrap(g, &alphabeta_vt, ab, name, err);
}

/* ----------------------------------------------------------------- gtp */

/* An external engine over the Go Text Protocol (gtp.h), for Othello. The
 * agent is only shown positions, so it keeps the position the engine has
 * (`cur`) and brings the engine to each new one: by the one move that
 * leads there from cur (the usual case in a game: the opponent's reply),
 * or else from a cleared board by a sequence of moves it finds (discs are
 * never removed in Othello, so only squares occupied in the target need
 * trying). */
enum { GTP_TIMEOUT_MS = 60000, GTP_FIND_BUDGET = 2000000 };

typedef struct {
  const pb_game_t *g;
  pb_gtp_t *gtp;
  pb_state_t cur; /* the engine's position, when synced */
  int synced;
} gtp_agent_t;

static void gtp_agent_destroy(void *impl) {
  gtp_agent_t *ga = impl;
  if (ga == NULL) return;
  pb_gtp_destroy(&ga->gtp);
  free(ga);
}

static const char *gtp_color(const pb_game_t *g, const pb_state_t *s) {
  return (g->ply(s) & 1) == 0 ? "black" : "white";
}

/* Sends "play COLOR MOVE" for action a in cur, and steps cur. Passes are
 * not sent: Othello engines (gtp-rhino) pass for a side without a move by
 * themselves and refuse "play COLOR pass". */
static int gtp_play(gtp_agent_t *ga, int a, pb_err_t *err) {
  char name[8], cmd[64];
  ga->g->action_name(a, name, sizeof name);
  if (strcmp(name, "pass") != 0) {
    snprintf(cmd, sizeof cmd, "play %s %s", gtp_color(ga->g, &ga->cur),
             name);
    int rc = pb_gtp_cmd(ga->gtp, cmd, NULL, 0, err);
    if (rc < 0) {
      ga->synced = 0;
      return rc;
    }
  }
  int done = 0;
  ga->g->step(&ga->cur, a, &done);
  return 0;
}

/* Depth-first search for `plies` moves from *s to target; path gets them. */
static int gtp_find(const pb_game_t *g, const pb_state_t *s,
                    const pb_state_t *target, int plies, uint8_t *path,
                    long *budget) {
  if (plies == 0) return memcmp(s, target, sizeof *s) == 0;
  if (--*budget < 0) return 0;
  uint64_t occ = target->w[0] | target->w[1], have = s->w[0] | s->w[1];
  if (__builtin_popcountll(occ) - __builtin_popcountll(have) > plies) return 0;
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  for (int i = 0; i < n; i++) {
    if (acts[i] < 64 && !((occ >> acts[i]) & 1)) continue;
    pb_state_t c = *s;
    int done = 0;
    g->step(&c, acts[i], &done);
    if (done && plies > 1) continue;
    path[0] = acts[i];
    if (gtp_find(g, &c, target, plies - 1, path + 1, budget)) return 1;
  }
  return 0;
}

/* Brings the engine to position s. */
static int gtp_sync(gtp_agent_t *ga, const pb_state_t *s, pb_err_t *err) {
  const pb_game_t *g = ga->g;
  if (ga->synced) {
    if (memcmp(&ga->cur, s, sizeof *s) == 0) return 0;
    uint8_t acts[PB_MAX_ACTIONS];
    int n = g->legal(&ga->cur, acts);
    for (int i = 0; i < n; i++) {
      pb_state_t c = ga->cur;
      int done = 0;
      g->step(&c, acts[i], &done);
      if (memcmp(&c, s, sizeof c) == 0) return gtp_play(ga, acts[i], err);
    }
  }
  pb_state_t start;
  g->reset(&start);
  int plies = g->ply(s);
  uint8_t path[256];
  long budget = GTP_FIND_BUDGET;
  if (plies > (int)sizeof path ||
      !gtp_find(g, &start, s, plies, path, &budget))
    return pb_err_set(err, PB_EUNSUPP,
                      "agent: gtp cannot find the moves that lead to this "
                      "position (ply %d) to show them to the engine",
                      plies);
  int rc = pb_gtp_cmd(ga->gtp, "clear_board", NULL, 0, err);
  if (rc < 0) return rc;
  ga->cur = start;
  ga->synced = 1;
  for (int i = 0; i < plies; i++)
    if ((rc = gtp_play(ga, path[i], err)) < 0) return rc;
  return 0;
}

static int gtp_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                   int n, pb_err_t *err) {
  gtp_agent_t *ga = impl;
  const pb_game_t *g = ga->g;
  int rc = gtp_sync(ga, s, err);
  if (rc < 0) return rc;
  if (n == 1) /* a forced move (often the pass): nothing to ask */
    return (rc = gtp_play(ga, legal[0], err)) < 0 ? rc : legal[0];
  char cmd[32], reply[64];
  snprintf(cmd, sizeof cmd, "genmove %s", gtp_color(g, s));
  if ((rc = pb_gtp_cmd(ga->gtp, cmd, reply, sizeof reply, err)) < 0) {
    ga->synced = 0;
    return rc;
  }
  /* A square ("D6", "d6") or "pass"; anything else, or a move that is not
   * legal here, is the engine's fault. */
  for (char *p = reply; *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  int a = -1;
  for (int i = 0; i < n && a < 0; i++) {
    char name[8];
    g->action_name(legal[i], name, sizeof name);
    if (strcmp(name, reply) == 0) a = legal[i];
  }
  if (a < 0) {
    ga->synced = 0;
    return pb_err_set(err, PB_EPROTO,
                      "agent: gtp engine '%s' answered \"%s\" to \"%s\", "
                      "which is not a legal move here",
                      pb_gtp_command(ga->gtp), reply, cmd);
  }
  int done = 0;
  g->step(&ga->cur, a, &done);
  return a;
}

static const pb_agent_vtable_t gtp_vt = {gtp_act, NULL, gtp_agent_destroy,
                                         NULL};

static pb_agent_t *gtp_new(const pb_game_t *g, const char *arg, uint64_t seed,
                           pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: gtp needs the engine's command, gtp:COMMAND "
               "(e.g. gtp:gtp-rhino)");
    return NULL;
  }
  if (g->id != PB_GAME_OTHELLO) {
    pb_err_set(err, PB_EUNSUPP, "agent: gtp plays othello only, not %s",
               g->name);
    return NULL;
  }
  gtp_agent_t *ga = calloc(1, sizeof *ga);
  if (ga == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  ga->g = g;
  ga->gtp = pb_gtp_new(arg, GTP_TIMEOUT_MS, err);
  if (ga->gtp == NULL ||
      pb_gtp_cmd(ga->gtp, "boardsize 8", NULL, 0, err) < 0 ||
      pb_gtp_cmd(ga->gtp, "clear_board", NULL, 0, err) < 0) {
    gtp_agent_destroy(ga);
    return NULL;
  }
  g->reset(&ga->cur);
  ga->synced = 1;
  char name[256];
  snprintf(name, sizeof name, "gtp:%s", arg);
  return pb_agent_wrap(g, &gtp_vt, ga, name, err);
}

/* ------------------------------------------------------------- network */

/* A trained checkpoint playing greedily on Q (checkpoint:, run:), on V one
 * ply deep (value:), or through beam search with V and Q (beam:). */
enum { NET_Q = 0, NET_V1 = 1, NET_BEAM = 2, NET_MCTS = 3 };
enum { NET_CHUNK = 256 }; /* positions per batched call */

typedef struct {
  const pb_game_t *g;
  int mode;          /* NET_* */
  int E, M;          /* beam search settings (NET_BEAM) */
  pb_model_t *model; /* owns the networks */
  float *in, *out;   /* planes and outputs of up to NET_CHUNK * A rows */
  pb_state_t *kids;  /* NET_V1: children of a chunk */
  pb_beam_t *beam;   /* NET_BEAM: searches of a chunk */
  pb_neteval_t *ne;  /* NET_BEAM: batched, cached V and Q */
  int N;             /* NET_MCTS: simulations per move */
  pb_mcts_t *mcts;   /* NET_MCTS: searches of a chunk */
  pb_pveval_t *pve;  /* NET_MCTS: the policy+value network */
  /* Where V and Q come from: a PROBS checkpoint's V (one column) and Q;
   * an AlphaZero checkpoint's policy+value network for both (Q: the
   * policy logits, columns 0..A-1; V: column A). */
  pb_nn_t *vnet, *qnet;
  int vstride, vcol, qstride;
  uint64_t evals; /* positions through a network (Q, V1 modes) */
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
  pb_mcts_destroy(&na->mcts);
  pb_pveval_destroy(&na->pve);
  pb_model_destroy(&na->model);
  free(na->in);
  free(na->out);
  free(na->kids);
  free(na);
}

int pb_agent_argmax_legal(const float *v, const uint8_t *legal, int n) {
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
  int rc = pb_nn_forward(na->qnet, na->in, n, na->out, err);
  if (rc < 0) return rc;
  na->evals += (uint64_t)n;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    out[i] = pb_agent_argmax_legal(&na->out[(size_t)i * na->qstride], legal, nl);
  }
  return 0;
}

/* MCTS with the policy+value network for n <= NET_CHUNK positions: the
 * most visited move (ties: the lowest). */
static int net_mcts_chunk(net_agent_t *na, const pb_state_t *s, int n,
                          int *out, pb_err_t *err) {
  const pb_game_t *g = na->g;
  const int A = g->num_actions;
  pb_mcts_evalfn_t fn = pb_pveval_fn(na->pve);
  int rc = pb_mcts_run(na->mcts, s, n, &fn, NULL, na->out, NULL, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    out[i] = pb_agent_argmax_legal(&na->out[(size_t)i * A], legal, nl);
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
  int rc = pb_nn_forward(na->vnet, na->in, nk, na->out, err);
  if (rc < 0) return rc;
  na->evals += (uint64_t)nk;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    for (int k = 0; k < nl; k++) {
      int slot = i * A + legal[k];
      if (idx[slot] >= 0)
        val[slot] = -na->out[(size_t)idx[slot] * na->vstride + na->vcol];
    }
    out[i] = pb_agent_argmax_legal(&val[i * A], legal, nl);
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
    out[i] = pb_agent_argmax_legal(&na->out[(size_t)i * g->num_actions], legal, nl);
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
             : na->mode == NET_MCTS
                 ? net_mcts_chunk(na, s + i, m, out + i, err)
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

uint64_t pb_agent_evaluations(const pb_agent_t *a) {
  if (a == NULL || a->vt != &net_vt) return 0;
  const net_agent_t *na = a->impl;
  uint64_t n = na->evals;
  if (na->ne != NULL) {
    pb_neteval_stats_t st;
    pb_neteval_stats(na->ne, &st);
    n += st.v_computed + st.q_computed;
  }
  if (na->pve != NULL) n += pb_pveval_positions(na->pve);
  return n;
}

pb_model_t *pb_agent_networks(const pb_agent_t *a, int *E, int *M) {
  const net_agent_t *na =
      a != NULL && a->vt == &net_vt ? (const net_agent_t *)a->impl : NULL;
  if (E != NULL) *E = na != NULL && na->mode == NET_BEAM ? na->E : 0;
  if (M != NULL) *M = na != NULL && na->mode == NET_BEAM ? na->M : 0;
  return na != NULL ? na->model : NULL;
}

/* Opens the checkpoint at `path` as an agent named `name` playing in
 * `mode` (E, M: beam settings; N: MCTS simulations). */
static pb_agent_t *net_open(const pb_game_t *g, const char *path,
                            const char *name, int mode, int E, int M, int N,
                            pb_err_t *err) {
  pb_err_t e;
  pb_err_clear(&e);
  pb_config_t ccfg;
  pb_model_t *l = pb_model_open(path, "cpu", &ccfg, &e);
  if (l == NULL) {
    pb_err_set(err, e.code < 0 ? e.code : PB_EIO, "agent %s: %s", name, e.msg);
    return NULL;
  }
  const pb_game_t *cg = pb_model_game(l);
  if (cg != g) {
    pb_err_set(err, PB_EMISMATCH,
               "agent %s: the checkpoint plays %s, but this match is %s", name,
               cg->name, g->name);
    pb_model_destroy(&l);
    return NULL;
  }
  const int az = pb_model_alphazero(l);
  if (az ? mode == NET_BEAM : mode == NET_MCTS) {
    pb_err_set(err, PB_EMISMATCH,
               "agent %s: %s", name,
               az ? "an alphazero checkpoint has no V and Q for beam search: "
                    "play it with mcts:PATH[,N=...]"
                  : "mcts plays alphazero checkpoints (a policy+value "
                    "network); this one is probs: play it with beam:PATH");
    pb_model_destroy(&l);
    return NULL;
  }
  net_agent_t *na = calloc(1, sizeof *na);
  if (na == NULL) {
    pb_model_destroy(&l);
    pb_err_set(err, PB_ENOMEM, "agent %s: out of memory", name);
    return NULL;
  }
  na->g = g;
  na->mode = mode;
  na->E = E;
  na->M = M;
  na->N = N;
  na->model = l;
  const size_t A = (size_t)g->num_actions;
  na->qnet = pb_model_q(l);
  na->qstride = (int)A + (az ? 1 : 0);
  na->vnet = az ? pb_model_q(l) : pb_model_v(l);
  na->vstride = az ? (int)A + 1 : 1;
  na->vcol = az ? (int)A : 0;
  const size_t rows = NET_CHUNK * (mode == NET_V1 ? A : 1);
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  na->in = malloc(rows * in_size * sizeof *na->in);
  na->out = malloc(rows * (A + 1) * sizeof *na->out);
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
    pb_neteval_bind(na->ne, pb_model_v(l), pb_model_q(l));
  }
  if (ok && mode == NET_MCTS) {
    /* The run's c_puct; no noise at play time. */
    pb_mcts_opts_t mo = {N, ccfg.mcts.c_puct, 0.0, 0.0, NET_CHUNK};
    na->mcts = pb_mcts_new(g, &mo, &e);
    na->pve = na->mcts ? pb_pveval_new(g, NET_CHUNK, &e) : NULL;
    if (na->pve == NULL || pb_pveval_bind(na->pve, pb_model_q(l), &e) != 0) {
      net_destroy(na);
      pb_err_set(err, e.code < 0 ? e.code : PB_ENOMEM, "agent %s: %s", name,
                 e.msg);
      return NULL;
    }
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
  return net_open(g, arg, name, NET_Q, 0, 0, 0, err);
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
    pb_rundir_ckpt_path(dir, v, path, sizeof path);
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
  return net_open(g, path, name, NET_Q, 0, 0, 0, err);
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
  return net_open(g, arg, name, NET_V1, 0, 0, 0, err);
}

/* One setting ",K=n" of a beam: or mcts: spec: letter K, an integer in
 * lo..hi into *val (which holds its default). */
typedef struct {
  char key;
  int lo, hi;
  int *val;
} net_opt_t;

/* Splits arg into the checkpoint path (into path[0..size)) and the
 * settings at its end, each at most once; they are taken from the end, so
 * a path may itself hold commas. Returns 0 or PB_EINVAL naming the agent
 * (path too long, a bad value, no path before the settings). */
static int net_path_opts(const char *arg, const char *name, char *path,
                         size_t size, net_opt_t *opts, int nopts,
                         pb_err_t *err) {
  if (strlen(arg) >= size)
    return pb_err_set(err, PB_EINVAL, "agent %s: path too long", name);
  strcpy(path, arg);
  int seen[8] = {0};
  for (;;) {
    char *comma = strrchr(path, ',');
    if (comma == NULL) break;
    char *opt = comma + 1;
    int k = 0;
    while (k < nopts && !(opt[0] == opts[k].key && opt[1] == '=' && !seen[k]))
      k++;
    if (k == nopts) break;
    seen[k] = 1;
    char *end = NULL;
    errno = 0;
    long v = strtol(opt + 2, &end, 10);
    if (errno != 0 || end == opt + 2 || *end != '\0' || v < opts[k].lo ||
        v > opts[k].hi)
      return pb_err_set(err, PB_EINVAL,
                        "agent %s: bad %c=\"%s\" (expected an integer in "
                        "%d..%d)",
                        name, opt[0], opt + 2, opts[k].lo, opts[k].hi);
    *opts[k].val = (int)v;
    *comma = '\0';
  }
  if (path[0] == '\0')
    return pb_err_set(err, PB_EINVAL, "agent %s: no checkpoint path before "
                      "the settings", name);
  return 0;
}

/* beam:PATH[,E=N][,M=N] */
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
  int E = 30, M = 3;
  net_opt_t opts[2] = {{'E', 1, 100000, &E}, {'M', 1, 99, &M}};
  if (net_path_opts(arg, name, path, sizeof path, opts, 2, err) != 0)
    return NULL;
  return net_open(g, path, name, NET_BEAM, E, M, 0, err);
}

/* mcts:PATH[,N=n]: an AlphaZero checkpoint searching n simulations per
 * move. */
static pb_agent_t *mcts_new(const pb_game_t *g, const char *arg, uint64_t seed,
                            pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: mcts needs a checkpoint file, mcts:PATH[,N=n] (e.g. "
               "mcts:runs/az/checkpoints/ckpt-000100.pbck,N=200)");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "mcts", arg);
  int N = 100;
  net_opt_t opt = {'N', 1, 100000, &N};
  if (net_path_opts(arg, name, path, sizeof path, &opt, 1, err) != 0)
    return NULL;
  return net_open(g, path, name, NET_MCTS, 0, 0, N, err);
}
