/* agent_baselines.c - the baseline agents of agent.h: random,
 * lookahead:K (a negamax over won, lost and unknown outcomes) and greedy
 * (the most material).
 *
 * Workload: baseline opponents in matches and evaluation, thousands of moves
 * per second per thread. The lookahead recurses on stack copies of the
 * position; nothing is allocated once an agent exists. */
#include <stdint.h>
#include <stdlib.h>

#include "agent.h"
#include "agent_impl.h"
#include "rng.h"

/* -------------------------------------------------------------- random */

static int random_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                      int n, pb_err_t *err) {
  (void)s;
  (void)err;
  pb__agent_base_t *b = impl;
  return legal[pb_rng_below(&b->rng, (uint32_t)n)];
}

static const pb_agent_vtable_t random_vt = {random_act, pb__agent_base_reseed,
                                            pb__agent_base_destroy, NULL, NULL};

/* A baseline of vtable vt, searching depth plies (0: none), named name,
 * seeded; NULL with err filled (PB_ENOMEM, or pb_agent_wrap's). */
static pb_agent_t *base_new(const pb_game_t *g, const pb_agent_vtable_t *vt,
                            int depth, uint64_t seed, const char *name,
                            pb_err_t *err) {
  pb__agent_base_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  b->g = g;
  b->depth = depth;
  pb__agent_base_reseed(b, seed);
  return pb_agent_wrap(g, vt, b, name, err);
}

pb_agent_t *pb__agent_random_new(const pb_game_t *g, const char *arg,
                                 uint64_t seed, pb_err_t *err) {
  if (arg != NULL) {
    pb_err_set(err, PB_EINVAL,
               "agent: \"random\" takes no argument (got "
               "\"random:%s\")",
               arg);
    return NULL;
  }
  return base_new(g, &random_vt, 0, seed, "random", err);
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
  pb__agent_base_t *b = impl;
  pb__agent_ties_t t = {.n = 0, .best = -2};
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
    pb__agent_ties_add(&t, v, legal[i]);
  }
  return pb__agent_ties_pick(&t, &b->rng);
}

static const pb_agent_vtable_t lookahead_vt = {
    lookahead_act, pb__agent_base_reseed, pb__agent_base_destroy, NULL, NULL};

pb_agent_t *pb__agent_lookahead_new(const pb_game_t *g, const char *arg,
                                    uint64_t seed, pb_err_t *err) {
  int depth = 0;
  if (pb__agent_parse_int_arg("lookahead", arg, 1, 4, &depth, err) < 0)
    return NULL;
  char name[32];
  pb__agent_spec_name(name, sizeof name, "lookahead", depth);
  return base_new(g, &lookahead_vt, depth, seed, name, err);
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
  pb__agent_base_t *b = impl;
  pb__agent_ties_t t = {.n = 0, .best = INT32_MIN};
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = b->g->step(&c, legal[i], &done);
    pb__agent_ties_add(&t, greedy_value(b->g, &c, done, r), legal[i]);
  }
  return pb__agent_ties_pick(&t, &b->rng);
}

static const pb_agent_vtable_t greedy_vt = {greedy_act, pb__agent_base_reseed,
                                            pb__agent_base_destroy, NULL, NULL};

pb_agent_t *pb__agent_greedy_new(const pb_game_t *g, const char *arg,
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
  return base_new(g, &greedy_vt, 0, seed, "greedy", err);
}
