/* algos.h - what each training algorithm is, as data: the rows that the
 * config, the model, learning, playing, the evaluator and the cli read
 * instead of the algorithm's name.
 *
 * A row says what an algorithm's run is made of: its name (the config's
 * `algorithm`), the config section of its own settings, the family of its
 * networks (pb_nets_t: what its checkpoints and model files hold), the agent
 * that plays its checkpoints, whether an iteration has a search phase
 * (searcher workers), and its own cross-key config check. Its behaviour
 * (self-play, search, training) is the table of functions pb_algo_t in
 * common/algo/algo.h, which points to its row here.
 *
 * The rows are one const table in algos.c (no state): adding an algorithm
 * is its row there, its value in the schema's `algorithm` enum and a
 * section of keys (config_schema.c), and its module common/algo/algo_NAME.c
 * (tests/test_algos.c checks that the three agree). Code outside those
 * files branches on a row's fields, never on an algorithm's name
 * (tests/test_algo_names.sh). */
#ifndef PB_ALGOS_H
#define PB_ALGOS_H

#include <stddef.h>

#include "config.h"
#include "err.h"

/* The family of an algorithm's networks: which networks a checkpoint holds
 * in its V and Q slots. A model file records it (common/nn/model.h); the
 * model, the trainer and the agents build and play networks by it. */
typedef enum pb_nets {
  PB_NETS_VQ = 1,     /* V (a tanh value) and Q (one value per action) */
  PB_NETS_PV = 2,     /* no V; the Q slot holds a policy+value network
                         (PB_NN_HEAD_PV: num_actions + 1 outputs) */
  PB_NETS_LINEAR = 3, /* V one linear layer over the input planes (a
                         tanh evaluation, common/nn/tdnet.h); Q the same
                         shape, never trained, only filling its slot */
} pb_nets_t;

/* The family's name as model files and messages write it: "vq", "pv",
 * "linear"; "unknown" for another value. */
const char *pb_nets_name(int nets);
/* The family written `name` (pb_nets_name's words), or 0 for none. */
int pb_nets_by_name(const char *name);
/* The family in words for messages and logs ("V and Q", "a policy+value
 * network", "a linear evaluation"). */
const char *pb_nets_words(int nets);

typedef struct pb_algo_data {
  const char *name;    /* the config's `algorithm` */
  const char *section; /* the config section of its own settings */
  int nets;            /* pb_nets_t: what its checkpoints hold */
  const char *agent;   /* the agent kind that plays its checkpoints at their
                          best: "abnet", "mcts" or "td" (agent specs) */
  const char *model;   /* what its checkpoints hold, in words */
  int searches;        /* 1: an iteration has a search phase (searchers);
                          pb_config_check refuses the keys of that phase
                          (train.v_search_mix, search.algorithm abnet) to
                          an algorithm without one */
  /* Its own cross-key rules on a config whose keys passed their ranges
   * (pb_config_check calls it for the config's algorithm, after the rules
   * that follow from the fields above); NULL: none. Returns 0 or
   * PB_ECONFIG naming the key. */
  int (*check)(const pb_config_t *c, pb_err_t *err);
} pb_algo_data_t;

/* The built-in rows (algos.c), each named by its algorithm; the tables of
 * functions in common/algo point to them. */
extern const pb_algo_data_t pb_algo_data_probs, pb_algo_data_alphazero,
    pb_algo_data_td;

/* The row named `name` among rows[0..n), or NULL. The hook a test uses to
 * look up in a table of its own (pb_algos_find is this over the built-in
 * table). */
const pb_algo_data_t *pb_algos_find_in(const pb_algo_data_t *const *rows,
                                       size_t n, const char *name);

/* The built-in row named `name`, or NULL for an unknown name. */
const pb_algo_data_t *pb_algos_find(const char *name);

/* The row of c's `algorithm`. Never NULL for a config the schema has read or
 * checked (its enum admits only the rows' names); NULL for another name. */
const pb_algo_data_t *pb_algos_of(const pb_config_t *c);

/* The built-in rows: their count, and row i (NULL past the end). */
size_t pb_algos_count(void);
const pb_algo_data_t *pb_algos_at(size_t i);

#endif
