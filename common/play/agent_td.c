/* agent_td.c - the td:PATH[,depth=D] agent of agent.h: an n-ply search
 * (common/search/nply.h) over the linear evaluation of an algorithm td
 * checkpoint (its V, common/nn/tdnet.h), the player of seed 004's leagues. D is
 * the look-ahead in plies, 1..16; left out, the td.ply the checkpoint was
 * trained at. The move is the lowest action of greatest n-ply value:
 * deterministic, no network call (the search evaluates the weights in C).
 *
 * Workload: league and baseline matches, up to 5 ply on Othello. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_impl.h"
#include "linear.h"
#include "model.h"
#include "nply.h"
#include "tdnet.h"

typedef struct {
  pb_linear_t lin;
  int depth;
} td_agent_t;

static int td_act(void *impl, const pb_state_t *s, const uint8_t *legal, int n,
                  pb_err_t *err) {
  (void)legal;
  (void)n;
  td_agent_t *t = impl;
  int a = pb_nply_best(&t->lin, s, t->depth, NULL, NULL);
  if (a < 0) return pb_err_set(err, a, "agent td: the game is over");
  return a;
}

static void td_destroy(void *impl) {
  free(impl);
}

static const pb_agent_vtable_t td_vt = {td_act, NULL, td_destroy, NULL, NULL};

/* Splits "PATH[,depth=D]" into path and *depth (0 when left out). */
static int parse(const char *arg, char *path, size_t size, int *depth,
                 pb_err_t *err) {
  *depth = 0;
  const char *comma = strrchr(arg, ',');
  size_t plen = strlen(arg);
  if (comma != NULL && !strncmp(comma + 1, "depth=", 6)) {
    char *end;
    long d = strtol(comma + 7, &end, 10);
    if (*end != '\0' || comma[7] == '\0' || d < 1 || d > PB_NPLY_MAX_DEPTH)
      return pb_err_set(err, PB_EINVAL,
                        "agent td: bad depth=%s (an integer 1..%d)", comma + 7,
                        PB_NPLY_MAX_DEPTH);
    *depth = (int)d;
    plen = (size_t)(comma - arg);
  } else if (comma != NULL && strchr(comma + 1, '=') != NULL) {
    return pb_err_set(err, PB_EINVAL,
                      "agent td: unknown setting '%s' (td:PATH[,depth=D])",
                      comma + 1);
  }
  if (plen == 0 || plen >= size)
    return pb_err_set(err, PB_EINVAL,
                      "agent td needs a checkpoint file, td:PATH[,depth=D] "
                      "(e.g. td:runs/othello-td/checkpoints/ckpt-000100.pbck"
                      ",depth=2)");
  memcpy(path, arg, plen);
  path[plen] = '\0';
  return 0;
}

pb_agent_t *pb__agent_td_new(const pb_game_t *g, const char *arg, uint64_t seed,
                             pb_err_t *err) {
  (void)seed;
  char path[4096];
  int depth;
  if (parse(arg ? arg : "", path, sizeof path, &depth, err) != 0) return NULL;
  pb_config_t cfg;
  pb_model_t *m = pb_model_open(path, "cpu", &cfg, err);
  if (m == NULL) return NULL;
  td_agent_t *t = calloc(1, sizeof *t);
  int rc = t ? 0 : pb_err_set(err, PB_ENOMEM, "agent: out of memory");
  if (rc == 0 && pb_model_game(m) != g)
    rc =
        pb_err_set(err, PB_EMISMATCH, "agent td: %s is a %s checkpoint, not %s",
                   path, pb_model_game(m)->name, g->name);
  if (rc == 0 && pb_model_kind(m) != PB_NETS_LINEAR)
    rc = pb_err_set(err, PB_EMISMATCH,
                    "agent td: %s is a checkpoint of algorithm %s, not td: "
                    "it holds %s, not a linear evaluation (its networks: "
                    "value:, abnet:, ...)",
                    path, cfg.algorithm, pb_nets_words(pb_model_kind(m)));
  if (rc == 0) rc = pb_linear_init(&t->lin, g, err);
  if (rc == 0) rc = pb_tdnet_get(pb_model_v(m), &t->lin, err);
  pb_model_destroy(&m);
  if (rc != 0) {
    free(t);
    return NULL;
  }
  t->depth = depth > 0 ? depth : cfg.td.ply;
  char name[64];
  snprintf(name, sizeof name, "td:depth=%d", t->depth);
  return pb_agent_wrap(g, &td_vt, t, name, err);
}
