/* agent_net_impl.h - private to agent_net.c and agent_net_spec.c: the
 * network agents' kinds and settings, and the one function that opens a
 * checkpoint as an agent. agent_net_spec.c parses "kind:PATH,KEY=x" specs
 * into these settings; agent_net.c plays. */
#ifndef PB_AGENT_NET_IMPL_H
#define PB_AGENT_NET_IMPL_H

#include "abnet.h"
#include "agent.h"
#include "bpip.h"

/* A trained checkpoint playing greedily on Q (checkpoint:, run:), on V one
 * ply deep (value:), through beam search with V and Q (beam:), PUCT MCTS
 * (mcts:), alpha-beta over V and Q (abnet:) or BPIP over V (bpip:). */
enum {
  NET_Q = 0,
  NET_V1 = 1,
  NET_BEAM = 2,
  NET_MCTS = 3,
  NET_AB = 4,
  NET_BPIP = 5
};

/* The settings of the searching kinds. */
typedef struct {
  int E, M;           /* beam: */
  int N;              /* mcts: simulations */
  double T, c;        /* mcts: prior temperature (probs; 0: unset = 1) and
                         c_puct (0: the run's) */
  pb_abnet_opts_t ab; /* abnet: */
  pb_bpip_opts_t bp;  /* bpip: */
  int prec;           /* precision=: PB_PREC_* (common/nn/precision.h),
                         -1: the checkpoint's model.precision */
} net_settings_t;

/* Opens the checkpoint at `path` as an agent named `name` playing in
 * `mode` (NET_*) with settings ns (NULL for the kinds without). Returns
 * NULL with *err naming the file or the setting that is wrong. */
pb_agent_t *pb__agent_net_open(const pb_game_t *g, const char *path,
                               const char *name, int mode,
                               const net_settings_t *ns, pb_err_t *err);

#endif
