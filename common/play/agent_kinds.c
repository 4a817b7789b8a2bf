/* agent_kinds.c - agents from spec strings: the table of the built-in
 * kinds, pb_agent_new (the spec's kind picks the constructor),
 * pb_agent_kinds (the list in messages) and pb_agent_spec_game (the game
 * of a spec's checkpoint). Above the kinds' files, which never call back
 * here. */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_impl.h"
#include "ckpt.h"
#include "model.h"
#include "rundir.h"

/* The kinds. `usage` is how the kind is listed in messages. */
typedef struct {
  const char *kind;
  const char *usage;
  pb_agent_factory_fn create;
} pb_agent_kind_t;

static const pb_agent_kind_t kinds[] = {
    {"random", "random", pb__agent_random_new},
    {"lookahead", "lookahead:K (K = 1..4)", pb__agent_lookahead_new},
    {"greedy", "greedy", pb__agent_greedy_new},
    {"alphabeta", "alphabeta:D (D = 1..12)", pb__agent_alphabeta_new},
    {"uct", "uct:N[,c=X][,discount=0|1]", pb__agent_uct_new},
    {"checkpoint", "checkpoint:PATH[,precision=P]", pb__agent_checkpoint_new},
    {"run", "run:DIR@ITER (or run:DIR: its newest)", pb__agent_run_new},
    {"value", "value:PATH[,precision=P]", pb__agent_value_new},
    {"beam", "beam:PATH[,E=N][,M=N][,precision=P]", pb__agent_beam_new},
    {"mcts", "mcts:PATH[,N=n][,T=x][,c=x][,precision=P]", pb__agent_mcts_new},
    {"abnet", "abnet:PATH[,nodes=N][,time=MS][,depth=D][,qplies=K][,batch=0|1]"
     "[,precision=P]",
     pb__agent_abnet_new},
    {"bpip", "bpip:PATH[,N=n][,sigma=x][,gulp=x][,precision=P]", pb__agent_bpip_new},
    {"td", "td:PATH[,depth=D]", pb__agent_td_new},
    {"gtp", "gtp:COMMAND", pb__agent_gtp_new},
};
#define PB__NKINDS (sizeof kinds / sizeof kinds[0])

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
  char list[PB_AGENT_KINDS_MAX];
  pb_agent_kinds(list, sizeof list);
  pb_err_set(err, PB_EINVAL, "agent: unknown spec \"%s\" (valid: %s)", spec,
             list);
  return NULL;
}


/* ---- the game of a spec's checkpoint ---------------------------------- */

/* The checkpoint file that network spec `spec` names into path, or -1
 * when it names none (not a network kind, no file there). The settings
 * at the end (",KEY=...") are taken off until what is left is a file. */
static int spec_checkpoint(const char *spec, char *path, size_t n) {
  static const char *const files[] = {"checkpoint", "value", "beam", "mcts",
                                      "abnet",      "bpip",  "td"};
  const char *colon = strchr(spec, ':');
  if (colon == NULL || colon[1] == '\0') return -1;
  size_t kl = (size_t)(colon - spec);
  const char *arg = colon + 1;
  if (kl == 3 && strncmp(spec, "run", 3) == 0) {
    char dir[4096];
    const char *at = strrchr(arg, '@');
    size_t dl = at != NULL ? (size_t)(at - arg) : strlen(arg);
    if (dl == 0 || dl >= sizeof dir) return -1;
    memcpy(dir, arg, dl);
    dir[dl] = '\0';
    if (at != NULL) {
      char *end = NULL;
      unsigned long long v = strtoull(at + 1, &end, 10);
      if (at[1] < '0' || at[1] > '9' || *end != '\0') return -1;
      pb_rundir_ckpt_path(dir, v, path, n);
    } else {
      char cdir[4200];
      snprintf(cdir, sizeof cdir, "%s/checkpoints", dir);
      if (pb_ckpt_find_latest(cdir, path, n, NULL) < 0) return -1;
    }
    return access(path, R_OK) == 0 ? 0 : -1;
  }
  int net = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    net |= strlen(files[i]) == kl && strncmp(files[i], spec, kl) == 0;
  if (!net || strlen(arg) >= n) return -1;
  strcpy(path, arg);
  for (;;) {
    if (access(path, R_OK) == 0) return 0;
    char *comma = strrchr(path, ',');
    if (comma == NULL) return -1;
    *comma = '\0';
  }
}

const pb_game_t *pb_agent_spec_game(const char *spec) {
  char path[4200];
  if (spec == NULL || spec_checkpoint(spec, path, sizeof path) != 0)
    return NULL;
  pb_config_t cfg;
  pb_model_t *m = pb_model_open(path, "cpu", &cfg, NULL);
  const pb_game_t *g = m != NULL ? pb_model_game(m) : NULL;
  pb_model_destroy(&m);
  return g;
}
