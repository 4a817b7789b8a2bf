/* algos.c - the algorithms' rows (algos.h): one const table, and the
 * config checks of their own. */
#include "algos.h"

#include <string.h>

static const char *const nets_names[] = {"unknown", "vq", "pv", "linear"};
static const char *const nets_words[] = {
    "unknown networks", "V and Q", "a policy+value network (in the Q slot)",
    "a linear evaluation (V; Q untrained)"};

const char *pb_nets_name(int nets) {
  return nets_names[nets >= PB_NETS_VQ && nets <= PB_NETS_LINEAR ? nets : 0];
}

int pb_nets_by_name(const char *name) {
  for (int k = PB_NETS_VQ; name != NULL && k <= PB_NETS_LINEAR; k++)
    if (!strcmp(nets_names[k], name)) return k;
  return 0;
}

const char *pb_nets_words(int nets) {
  return nets_words[nets >= PB_NETS_VQ && nets <= PB_NETS_LINEAR ? nets : 0];
}

/* ---- the rows' own checks ----------------------------------------------- */

/* td: a game with features, and none of the keys that only the other
 * algorithms use. The games are those common/search/linear.h gives features
 * (tests/test_td.c checks that the two lists agree). */
static int check_td(const pb_config_t *c, pb_err_t *err) {
  static const char *const games[] = {"othello", "connect4", "toguz"};
  int ok = 0;
  for (size_t i = 0; i < sizeof games / sizeof games[0]; i++)
    ok |= !strcmp(c->game, games[i]);
  if (!ok)
    return pb_err_set(err, PB_ECONFIG,
                      "algorithm td: game '%s' has no features for a linear "
                      "evaluation (games with features: othello, connect4, "
                      "toguz)",
                      c->game);
  if (c->train.pipeline)
    return pb_err_set(err, PB_ECONFIG,
                      "train.pipeline applies to algorithms probs and "
                      "alphazero: td plays each iteration's games with the "
                      "weights of the last one");
  if (c->train.replay_iterations > 1)
    return pb_err_set(err, PB_ECONFIG,
                      "train.replay_iterations applies to algorithm probs: "
                      "td learns from each iteration's games once, in order");
  if (c->eval.enabled)
    return pb_err_set(err, PB_ECONFIG,
                      "eval.enabled: the evaluator rates probs and alphazero "
                      "networks, not a td run's linear evaluation; set "
                      "eval.enabled: false (rate td players with probs match "
                      "td:CKPT or bench_td_league, docs/baselines.md)");
  return 0;
}

/* ---- the table -------------------------------------------------------- */

const pb_algo_data_t pb_algo_data_probs = {
    .name = "probs",
    .section = "search",
    .nets = PB_NETS_VQ,
    .agent = "abnet",
    .model = "V and Q",
    .searches = 1,
    .check = NULL,
};

const pb_algo_data_t pb_algo_data_alphazero = {
    .name = "alphazero",
    .section = "mcts",
    .nets = PB_NETS_PV,
    .agent = "mcts",
    .model = "a policy+value network (in the Q slot)",
    .searches = 0,
    .check = NULL,
};

const pb_algo_data_t pb_algo_data_td = {
    .name = "td",
    .section = "td",
    .nets = PB_NETS_LINEAR,
    .agent = "td",
    .model = "a linear evaluation (V; Q untrained)",
    .searches = 0,
    .check = check_td,
};

static const pb_algo_data_t *const rows[] = {
    &pb_algo_data_probs, &pb_algo_data_alphazero, &pb_algo_data_td};
#define NROWS (sizeof rows / sizeof rows[0])

const pb_algo_data_t *pb_algos_find_in(const pb_algo_data_t *const *table,
                                       size_t n, const char *name) {
  for (size_t i = 0; name != NULL && i < n; i++)
    if (!strcmp(table[i]->name, name)) return table[i];
  return NULL;
}

const pb_algo_data_t *pb_algos_find(const char *name) {
  return pb_algos_find_in(rows, NROWS, name);
}

const pb_algo_data_t *pb_algos_of(const pb_config_t *c) {
  return c != NULL ? pb_algos_find(c->algorithm) : NULL;
}

size_t pb_algos_count(void) {
  return NROWS;
}

const pb_algo_data_t *pb_algos_at(size_t i) {
  return i < NROWS ? rows[i] : NULL;
}
