/* agent_net_spec.c - the network agents' specs of agent.h:
 * checkpoint:PATH, run:DIR@ITER, value:, beam:, mcts:, abnet:, bpip:, each
 * a checkpoint path with ",KEY=x" settings at its end, parsed into
 * net_settings_t and opened by pb__agent_net_open (agent_net.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "agent_impl.h"
#include "agent_net_impl.h"
#include "bounds.h"
#include "ckpt.h"
#include "rundir.h"
#include "util.h"

/* The agent's name: "kind:arg", truncated for messages only if absurdly
 * long (the path itself is used untruncated). */
static void net_name(char *buf, size_t n, const char *kind, const char *arg) {
  snprintf(buf, n, "%s:%s", kind, arg);
}

/* One setting ",KEY=x" of a network agent's spec: a number in lo..hi
 * into *ival (an integer) or *dval (a real number; ival NULL), which holds
 * its default; or, with `choices` ("a|b|c"), the index of x among them
 * into *ival. */
typedef struct {
  const char *key;
  double lo, hi;
  int *ival;
  double *dval;
  const char *choices;
} net_opt_t;

/* The setting every network agent takes: precision=fp32|bf16|auto. */
#define NET_PREC_OPT(ns) {"precision", 0, 2, &(ns).prec, NULL, "fp32|bf16|auto"}

/* The index of val among "a|b|c", or -1. */
static int net_choice(const char *choices, const char *val) {
  size_t vl = strlen(val);
  int i = 0;
  for (const char *p = choices;; i++) {
    size_t l = strcspn(p, "|");
    if (l == vl && strncmp(p, val, l) == 0) return i;
    if (p[l] == '\0') return -1;
    p += l + 1;
  }
}

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
    for (; k < nopts; k++) {
      size_t kl = strlen(opts[k].key);
      if (!seen[k] && strncmp(opt, opts[k].key, kl) == 0 && opt[kl] == '=')
        break;
    }
    if (k == nopts) break;
    seen[k] = 1;
    const char *val = opt + strlen(opts[k].key) + 1;
    if (opts[k].choices != NULL) {
      int c = net_choice(opts[k].choices, val);
      if (c < 0)
        return pb_err_set(err, PB_EINVAL,
                          "agent %s: bad %s=\"%s\" (expected %s)", name,
                          opts[k].key, val, opts[k].choices);
      *opts[k].ival = c;
      *comma = '\0';
      continue;
    }
    char *end = NULL;
    errno = 0;
    double v = opts[k].ival != NULL ? (double)strtol(val, &end, 10)
                                    : strtod(val, &end);
    if (errno != 0 || end == val || *end != '\0' || !(v >= opts[k].lo) ||
        !(v <= opts[k].hi)) {
      if (opts[k].ival != NULL)
        return pb_err_set(err, PB_EINVAL,
                          "agent %s: bad %s=\"%s\" (expected an integer in "
                          "%.0f..%.0f)",
                          name, opts[k].key, val, opts[k].lo, opts[k].hi);
      return pb_err_set(err, PB_EINVAL,
                        "agent %s: bad %s=\"%s\" (expected a number in "
                        "%g..%g)",
                        name, opts[k].key, val, opts[k].lo, opts[k].hi);
    }
    if (opts[k].ival != NULL)
      *opts[k].ival = (int)v;
    else
      *opts[k].dval = v;
    *comma = '\0';
  }
  if (path[0] == '\0')
    return pb_err_set(err, PB_EINVAL, "agent %s: no checkpoint path before "
                      "the settings", name);
  /* ",KEY=..." left on a path that is no file: a setting this kind lacks
   * (or one given twice), not part of the path. */
  const char *opt = strrchr(path, ',');
  if (opt != NULL && access(path, F_OK) != 0) {
    size_t kl =
        strspn(opt + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_");
    if (kl > 0 && opt[1 + kl] == '=') {
      char keys[160] = "";
      for (int k = 0; k < nopts; k++) {
        size_t n = strlen(keys);
        snprintf(keys + n, sizeof keys - n, "%s%s=", k ? ", " : "",
                 opts[k].key);
      }
      return pb_err_set(err, PB_EINVAL,
                        "agent %s: unknown or repeated setting \"%s\" (it "
                        "takes %s, each once)",
                        name, opt + 1, keys);
    }
  }
  return 0;
}

pb_agent_t *pb__agent_checkpoint_new(const pb_game_t *g, const char *arg,
                                     uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: checkpoint needs a file, checkpoint:PATH (e.g. "
               "checkpoint:runs/x/checkpoints/ckpt-000010.pbck)");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "checkpoint", arg);
  net_settings_t ns = {.prec = -1};
  net_opt_t opts[1] = {NET_PREC_OPT(ns)};
  if (net_path_opts(arg, name, path, sizeof path, opts, 1, err) != 0)
    return NULL;
  return pb__agent_net_open(g, path, name, NET_Q, &ns, err);
}

pb_agent_t *pb__agent_run_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err) {
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
  /* ",KEY=..." on a directory that does not exist: a setting, which run:
   * has none of, not part of the path. */
  const char *opt = strrchr(dir, ',');
  if (opt != NULL && access(dir, F_OK) != 0) {
    size_t kl = strspn(opt + 1, "abcdefghijklmnopqrstuvwxyz"
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
    if (kl > 0 && opt[1 + kl] == '=') {
      pb_err_set(err, PB_EINVAL,
                 "agent %s: unknown setting \"%s\" (run:DIR@ITER takes "
                 "none)",
                 name, opt + 1);
      return NULL;
    }
  }
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
  return pb__agent_net_open(g, path, name, NET_Q, NULL, err);
}

pb_agent_t *pb__agent_value_new(const pb_game_t *g, const char *arg,
                                uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: value needs a checkpoint file, value:PATH");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "value", arg);
  net_settings_t ns = {.prec = -1};
  net_opt_t opts[1] = {NET_PREC_OPT(ns)};
  if (net_path_opts(arg, name, path, sizeof path, opts, 1, err) != 0)
    return NULL;
  return pb__agent_net_open(g, path, name, NET_V1, &ns, err);
}

/* beam:PATH[,E=N][,M=N] */
pb_agent_t *pb__agent_beam_new(const pb_game_t *g, const char *arg,
                               uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: beam needs a checkpoint file, beam:PATH[,E=N][,M=N] "
               "(e.g. beam:runs/x/checkpoints/ckpt-000100.pbck,E=200,M=8)");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "beam", arg);
  net_settings_t ns = {.E = 30, .M = 3, .prec = -1};
  net_opt_t opts[3] = {{"E", 1, PB_BEAM_MAX_EXPANSIONS, &ns.E, NULL, NULL},
                       {"M", 1, PB_BEAM_MAX_DEPTH, &ns.M, NULL, NULL},
                       NET_PREC_OPT(ns)};
  if (net_path_opts(arg, name, path, sizeof path, opts, 3, err) != 0)
    return NULL;
  return pb__agent_net_open(g, path, name, NET_BEAM, &ns, err);
}

/* mcts:PATH[,N=n][,T=x][,c=x]: n simulations per move with an AlphaZero
 * checkpoint's policy+value network, or a probs checkpoint's V and Q
 * (priors softmax(Q / T)). */
pb_agent_t *pb__agent_mcts_new(const pb_game_t *g, const char *arg,
                               uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: mcts needs a checkpoint file, "
               "mcts:PATH[,N=n][,T=x][,c=x] (e.g. "
               "mcts:runs/az/checkpoints/ckpt-000100.pbck,N=200)");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "mcts", arg);
  net_settings_t ns = {.N = 100, .prec = -1};
  net_opt_t opts[4] = {{"N", 1, PB_MCTS_MAX_SIMULATIONS, &ns.N, NULL, NULL},
                       {"T", 0.001, 1000, NULL, &ns.T, NULL},
                       {"c", 0.001, 100, NULL, &ns.c, NULL},
                       NET_PREC_OPT(ns)};
  if (net_path_opts(arg, name, path, sizeof path, opts, 4, err) != 0)
    return NULL;
  return pb__agent_net_open(g, path, name, NET_MCTS, &ns, err);
}

/* abnet:PATH[,nodes=N][,time=MS][,depth=D][,qplies=K][,batch=0|1] */
pb_agent_t *pb__agent_abnet_new(const pb_game_t *g, const char *arg,
                                uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: abnet needs a checkpoint file, abnet:PATH[,nodes=N]"
               "[,time=MS][,depth=D][,qplies=K][,batch=0|1] (e.g. "
               "abnet:runs/x/checkpoints/ckpt-000100.pbck,nodes=1000)");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "abnet", arg);
  net_settings_t ns;
  memset(&ns, 0, sizeof ns);
  pb_abnet_defaults(&ns.ab);
  int nodes = -1, batch = ns.ab.batch;
  ns.prec = -1;
  net_opt_t opts[6] = {
      {"nodes", 1, PB_SEARCH_MAX_NODES, &nodes, NULL, NULL},
      {"time", 1, 3600000, &ns.ab.time_ms, NULL, NULL},
      {"depth", 1, PB_ABNET_MAX_DEPTH, &ns.ab.max_depth, NULL, NULL},
      {"qplies", 1, PB_ABNET_MAX_DEPTH, &ns.ab.q_plies, NULL, NULL},
      {"batch", 0, 1, &batch, NULL, NULL},
      NET_PREC_OPT(ns)};
  if (net_path_opts(arg, name, path, sizeof path, opts, 6, err) != 0)
    return NULL;
  /* A time budget alone: no limit on the evaluations. */
  ns.ab.nodes = nodes > 0 ? (uint64_t)nodes : ns.ab.time_ms > 0 ? 0 : 1000;
  ns.ab.batch = batch;
  return pb__agent_net_open(g, path, name, NET_AB, &ns, err);
}

/* bpip:PATH[,N=n][,sigma=x][,gulp=x] */
pb_agent_t *pb__agent_bpip_new(const pb_game_t *g, const char *arg,
                               uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: bpip needs a checkpoint file, bpip:PATH[,N=n]"
               "[,sigma=x][,gulp=x] (e.g. "
               "bpip:runs/x/checkpoints/ckpt-000100.pbck,N=1000)");
    return NULL;
  }
  char path[4096], name[4200];
  net_name(name, sizeof name, "bpip", arg);
  net_settings_t ns;
  memset(&ns, 0, sizeof ns);
  pb_bpip_defaults(&ns.bp);
  int N = (int)ns.bp.evals;
  ns.prec = -1;
  net_opt_t opts[4] = {
      {"N", 1, PB_BPIP_MAX_EVALS, &N, NULL, NULL},
      {"sigma", PB_BPIP_SIGMA_MIN, PB_BPIP_SIGMA_MAX, NULL, &ns.bp.sigma,
       NULL},
      {"gulp", 0, PB_BPIP_GULP_MAX, NULL, &ns.bp.gulp, NULL},
      NET_PREC_OPT(ns)};
  if (net_path_opts(arg, name, path, sizeof path, opts, 4, err) != 0)
    return NULL;
  ns.bp.evals = (uint64_t)N;
  return pb__agent_net_open(g, path, name, NET_BPIP, &ns, err);
}
