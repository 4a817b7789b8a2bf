/* agent.c - the core of agents: wrapping an implementation into an agent
 * (pb_agent_wrap), playing (pb_agent_act, pb_agent_act_many), the
 * accessors, and the small helpers the built-in kinds share (agent_impl.h).
 * Making one from a spec (pb_agent_new) is agent_kinds.c's, the table of
 * kinds above all of them. The kinds live in their own files:
 *   agent_baselines.c  random, lookahead:K, greedy
 *   agent_alphabeta.c  alphabeta:D and its heuristics
 *   agent_uct.c        uct:N, plain UCT with random playouts
 *   agent_gtp.c        gtp:COMMAND, an external engine
 *   agent_net.c        trained networks: checkpoint:, run:, value:, beam:,
 *                      mcts:, and pb_agent_networks, pb_agent_evaluations,
 *                      pb_agent_argmax_legal
 *
 * Workload: baseline opponents in matches and evaluation, thousands of moves
 * per second per thread. All searches recurse on stack copies of the
 * position; nothing is allocated once an agent exists (a network agent's
 * input and output buffers are its own; libtorch allocates inside the
 * forward pass, which we cannot avoid). */
#include "agent.h"

#ifndef PB_VERSION /* CMakeLists.txt defines it: project(VERSION) */
#define PB_VERSION "unknown"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "rng.h"

/* Streams of an agent's rng: the spec's seed gives stream 0. */
#define PB__AGENT_STREAM 0x6167656e74ULL /* "agent" */

/* ---------------------------------------------------------------- core */

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
  snprintf(a->version, sizeof a->version, "probs %s", PB_VERSION);
  return a;
}

void pb__agent_set_version(pb_agent_t *a, const char *version) {
  if (a != NULL && version != NULL)
    snprintf(a->version, sizeof a->version, "%s", version);
}

const char *pb_agent_version(const pb_agent_t *a) {
  return a != NULL ? a->version : "";
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

int pb_agent_clock(pb_agent_t *a, const pb_agent_clock_t *c, pb_err_t *err) {
  if (a == NULL || c == NULL)
    return pb_err_set(err, PB_EINVAL, "agent: NULL agent or clock");
  if (a->clock == NULL)
    return pb_err_set(err, PB_EUNSUPP, "agent %s keeps no clock", a->name);
  return a->clock(a->impl, c, err);
}

void pb__agent_set_clock(pb_agent_t *a, pb__agent_clock_fn fn) {
  if (a != NULL) a->clock = fn;
}

int pb_agent_info(const pb_agent_t *a, int i, pb_agent_info_t *out) {
  memset(out, 0, sizeof *out);
  if (a == NULL || a->vt->info == NULL) return 0;
  return a->vt->info(a->impl, i, out);
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

/* ------------------------------------------------- shared by the kinds */

/* Parses arg as a decimal integer in [lo, hi]; fills err naming the spec. */
int pb__agent_parse_int_arg(const char *kind, const char *arg, int lo, int hi,
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
void pb__agent_spec_name(char *buf, size_t n, const char *kind, int arg) {
  snprintf(buf, n, "%s:%d", kind, arg);
}

void pb__agent_base_reseed(void *impl, uint64_t seed) {
  pb_rng_seed(&((pb__agent_base_t *)impl)->rng, seed, PB__AGENT_STREAM);
}

void pb__agent_base_destroy(void *impl) {
  free(impl);
}

void pb__agent_ties_add(pb__agent_ties_t *t, int value, int action) {
  if (value > t->best) {
    t->best = value;
    t->n = 0;
  }
  if (value == t->best) t->move[t->n++] = (uint8_t)action;
}

int pb__agent_ties_pick(const pb__agent_ties_t *t, pb_rng_t *rng) {
  return t->move[pb_rng_below(rng, (uint32_t)t->n)];
}

void pb_agent_spec_with_model(const char *spec, const char *model, char *buf,
                              size_t n) {
  static const char *const kinds[] = {"checkpoint", "value", "beam",
                                      "mcts",       "abnet", "bpip"};
  for (size_t k = 0; model != NULL && k < sizeof kinds / sizeof kinds[0];
       k++) {
    size_t kl = strlen(kinds[k]);
    if (strncmp(spec, kinds[k], kl) == 0 &&
        (spec[kl] == '\0' || spec[kl] == ',')) {
      snprintf(buf, n, "%s:%s%s", kinds[k], model, spec + kl);
      return;
    }
  }
  snprintf(buf, n, "%s", spec);
}

