/* agent_impl.h - private to the files of the agent module: the agent
 * object, the factories of the kinds (listed in the kinds table of
 * agent.c) and the helpers the built-in kinds share. Not part of the
 * public API (agent.h); nothing outside common/play/agent*.c includes it.
 *
 *   agent.c            the kinds table, pb_agent_new/wrap/act/act_many and
 *                      the accessors; the shared helpers below
 *   agent_baselines.c  random, lookahead:K, greedy
 *   agent_alphabeta.c  alphabeta:D
 *   agent_uct.c        uct:N[,c=X][,discount=0|1]
 *   agent_gtp.c        gtp:COMMAND
 *   agent_net.c        checkpoint:, run:, value:, beam:, mcts:, abnet:,
 *                      bpip:
 *   agent_td.c         td:PATH[,depth=D] */
#ifndef PB_AGENT_IMPL_H
#define PB_AGENT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "err.h"
#include "game.h"
#include "rng.h"

/* A kind's clock (pb_agent_clock), called with its impl. */
typedef int (*pb__agent_clock_fn)(void *impl, const pb_agent_clock_t *c,
                                  pb_err_t *err);

struct pb_agent {
  const pb_game_t *g;
  const pb_agent_vtable_t *vt;
  void *impl;
  char *name;
  pb__agent_clock_fn clock; /* NULL: the kind keeps no clock */
  char version[128];        /* pb_agent_version */
};

/* Sets what pb_agent_version says of agent a (a NULL a is ignored). */
void pb__agent_set_version(pb_agent_t *a, const char *version);

/* Gives agent a (just wrapped) the kind's clock; a NULL a is ignored. */
void pb__agent_set_clock(pb_agent_t *a, pb__agent_clock_fn fn);

/* The factories of the kinds (pb_agent_factory_fn), one per file:
 * agent_baselines.c */
pb_agent_t *pb__agent_random_new(const pb_game_t *g, const char *arg,
                                 uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_lookahead_new(const pb_game_t *g, const char *arg,
                                    uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_greedy_new(const pb_game_t *g, const char *arg,
                                 uint64_t seed, pb_err_t *err);
/* agent_alphabeta.c */
pb_agent_t *pb__agent_alphabeta_new(const pb_game_t *g, const char *arg,
                                    uint64_t seed, pb_err_t *err);
/* agent_uct.c */
pb_agent_t *pb__agent_uct_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err);
/* agent_net.c */
pb_agent_t *pb__agent_checkpoint_new(const pb_game_t *g, const char *arg,
                                     uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_run_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_value_new(const pb_game_t *g, const char *arg,
                                uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_beam_new(const pb_game_t *g, const char *arg,
                               uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_mcts_new(const pb_game_t *g, const char *arg,
                               uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_abnet_new(const pb_game_t *g, const char *arg,
                                uint64_t seed, pb_err_t *err);
pb_agent_t *pb__agent_bpip_new(const pb_game_t *g, const char *arg,
                               uint64_t seed, pb_err_t *err);
/* agent_td.c */
pb_agent_t *pb__agent_td_new(const pb_game_t *g, const char *arg, uint64_t seed,
                             pb_err_t *err);
/* agent_gtp.c */
pb_agent_t *pb__agent_gtp_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err);

/* ---- shared by the built-in kinds (defined in agent.c) ---------------- */

/* Parses arg as a decimal integer in [lo, hi]; fills err naming the spec. */
int pb__agent_parse_int_arg(const char *kind, const char *arg, int lo, int hi,
                            int *out, pb_err_t *err);

/* Builds the spec string back for the agent's name ("lookahead:3"). */
void pb__agent_spec_name(char *buf, size_t n, const char *kind, int arg);

/* Common state of the built-in kinds. */
typedef struct {
  const pb_game_t *g;
  pb_rng_t rng;
  int depth;
} pb__agent_base_t;

/* The reseed and destroy of a vtable whose impl starts with (or is) a
 * pb__agent_base_t allocated alone: the agent's rng restarts at `seed`;
 * free(impl). */
void pb__agent_base_reseed(void *impl, uint64_t seed);
void pb__agent_base_destroy(void *impl);

/* The moves of highest value seen so far, from which the baselines play
 * one uniformly at random. */
typedef struct {
  uint8_t move[PB_MAX_ACTIONS];
  int n;
  int best; /* starts below every value the caller can give */
} pb__agent_ties_t;

/* Adds `action` of `value`: it joins the ties if as good as the best,
 * replaces them if better. */
void pb__agent_ties_add(pb__agent_ties_t *t, int value, int action);

/* One of the best moves, uniformly at random from rng. */
int pb__agent_ties_pick(const pb__agent_ties_t *t, pb_rng_t *rng);

#endif
