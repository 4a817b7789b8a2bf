/* agent_uct.c - the uct:N[,c=X][,discount=0|1] agent of agent.h: plain UCT
 * (common/search/uct.h) with N simulations per move, UCB1's constant c (default
 * sqrt(2)) and optionally the discounting heuristic; uniformly random
 * playouts, so it plays every game.
 *
 * Workload: a baseline opponent in matches and evaluation. The tree is
 * allocated once, when the agent is made; choosing a move allocates
 * nothing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_impl.h"
#include "rng.h"
#include "uct.h"

/* The agent's simulations: enough for any baseline, and a bound on the
 * tree's memory (Othello at the top: about 10^5 nodes and 6.5 * 10^6
 * edges reserved, touched only as far as the search grows). */
#define UCT_AGENT_MAX_N 100000

typedef struct {
  pb__agent_base_t base;
  pb_uct_t *uct;
  float values[PB_MAX_ACTIONS]; /* the last search's root moves' means */
  float value;                  /* that of the move it played */
  int valued;                   /* a search ran */
} uct_agent_t;

static int uct_act(void *impl, const pb_state_t *s, const uint8_t *legal, int n,
                   pb_err_t *err) {
  (void)legal;
  (void)n;
  uct_agent_t *ua = impl;
  ua->valued = 0;
  int a = pb_uct_search(ua->uct, s, &ua->base.rng, NULL, ua->values, NULL,
                        err);
  if (a >= 0) {
    ua->value = ua->values[a];
    ua->valued = 1;
  }
  return a;
}

/* The mean result of the move played, from the mover's side (in
 * [-1, 1]: results are +-1 or 0, divided by plies with discount=1). */
static int uct_info(const void *impl, int i, pb_agent_info_t *out) {
  const uct_agent_t *ua = impl;
  if (i == 0 && ua->valued) {
    out->valued = 1;
    out->value = ua->value;
  }
  return 0;
}

static void uct_destroy(void *impl) {
  uct_agent_t *ua = impl;
  if (ua == NULL) return;
  pb_uct_destroy(&ua->uct);
  free(ua);
}

static const pb_agent_vtable_t uct_vt = {uct_act, pb__agent_base_reseed,
                                         uct_destroy, NULL, uct_info};

#define UCT_USAGE "uct:N[,c=X][,discount=0|1] (N = 1..100000, c > 0)"

/* Parses "N[,c=X][,discount=0|1]" into o; fills err naming the spec. */
static int parse_uct(const char *arg, pb_uct_opts_t *o, pb_err_t *err) {
  if (arg == NULL || *arg == '\0')
    return pb_err_set(err, PB_EINVAL,
                      "agent: uct needs a number of simulations: " UCT_USAGE);
  char *end = NULL;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno != 0 || end == arg || (*end != '\0' && *end != ',') || v < 1 ||
      v > UCT_AGENT_MAX_N)
    return pb_err_set(err, PB_EINVAL,
                      "agent: bad simulations in \"uct:%s\" (expected an "
                      "integer in 1..%d: " UCT_USAGE ")",
                      arg, UCT_AGENT_MAX_N);
  o->simulations = (int)v;
  int seen_c = 0, seen_d = 0;
  for (const char *p = end; *p == ',';) {
    const char *item = p + 1;
    const char *next = strchr(item, ',');
    size_t len = next ? (size_t)(next - item) : strlen(item);
    const char *eq = memchr(item, '=', len);
    size_t klen = eq ? (size_t)(eq - item) : len;
    char val[64];
    size_t vlen = eq ? len - klen - 1 : 0;
    if (eq == NULL || vlen == 0 || vlen >= sizeof val)
      return pb_err_set(err, PB_EINVAL,
                        "agent: bad option \"%.*s\" in \"uct:%s\" (expected "
                        "KEY=VALUE: " UCT_USAGE ")",
                        (int)len, item, arg);
    memcpy(val, eq + 1, vlen);
    val[vlen] = '\0';
    if (klen == 1 && item[0] == 'c') {
      errno = 0;
      double c = strtod(val, &end);
      if (seen_c++ || errno != 0 || end == val || *end != '\0' ||
          !isfinite(c) || !(c > 0))
        return pb_err_set(err, PB_EINVAL, "agent: bad c=%s in \"uct:%s\" (%s)",
                          val, arg,
                          seen_c > 1 ? "given twice"
                                     : "the exploration constant must be a "
                                       "finite number > 0");
      o->c = c;
    } else if (klen == 8 && !strncmp(item, "discount", 8)) {
      if (seen_d++ || (strcmp(val, "0") && strcmp(val, "1")))
        return pb_err_set(err, PB_EINVAL,
                          "agent: bad discount=%s in \"uct:%s\" (%s)", val, arg,
                          seen_d > 1 ? "given twice" : "0 or 1");
      o->discount = val[0] == '1';
    } else {
      return pb_err_set(err, PB_EINVAL,
                        "agent: unknown option \"%.*s\" in \"uct:%s\" (known: "
                        "c, discount: " UCT_USAGE ")",
                        (int)klen, item, arg);
    }
    p = item + len;
  }
  return 0;
}

pb_agent_t *pb__agent_uct_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err) {
  pb_uct_opts_t o = {0, PB_UCT_DEFAULT_C, 0, 0};
  if (parse_uct(arg, &o, err) < 0) return NULL;
  uct_agent_t *ua = calloc(1, sizeof *ua);
  if (ua == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  ua->base.g = g;
  pb__agent_base_reseed(&ua->base, seed);
  pb_err_t e;
  pb_err_clear(&e);
  ua->uct = pb_uct_new(g, &o, &e);
  if (ua->uct == NULL) {
    free(ua);
    pb_err_set(err, e.code, "agent uct:%s: %s", arg, e.msg);
    return NULL;
  }
  size_t nlen = strlen(arg) + 5;
  char *name = malloc(nlen);
  if (name == NULL) {
    uct_destroy(ua);
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  snprintf(name, nlen, "uct:%s", arg);
  pb_agent_t *a = pb_agent_wrap(g, &uct_vt, ua, name, err);
  free(name);
  return a;
}
