/* algo.h - a training algorithm is a table of functions, as a game is
 * (common/games/game.h): PROBS (algo_probs.c), AlphaZero
 * (algo_alphazero.c), TD(0) learning of a linear evaluation (algo_td.c).
 *
 * The table holds what differs between them: what an actor does with a
 * self-play item, what a searcher does with a search item (PROBS alone
 * has searchers), how the learner trains in an iteration and what ends
 * it, what its checkpoints hold and which agent plays them, and which
 * config section is its own. Everything around it is written once: the
 * iteration (iteration.h: the learner's and --inproc's sequence of
 * phases), the worker's loop (actor/), the learner's event loop
 * (learner/), the in-process trainer (inproc.h).
 *
 * What an algorithm is, as data (name, config section, the family of its
 * networks, its agent, whether it searches, its config check), is its row
 * in common/run/algos.c, which the floors below read; the table here holds
 * its behaviour and points to that row.
 *
 * Adding an algorithm: one new algo_NAME.c filling a pb_algo_t, its line
 * in algo.c's list, its row in common/run/algos.c, its config keys in
 * common/run/config_schema.c (a section of its own), and its engines below
 * (common/train/, common/search/) when it needs new ones.
 * docs/ARCHITECTURE.md ("Recipes") walks through it. */
#ifndef PB_ALGO_H
#define PB_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "algos.h"
#include "batcher.h"
#include "config.h"
#include "episodes.h"
#include "err.h"
#include "evalfn.h"
#include "game.h"
#include "learn.h"
#include "neteval.h"
#include "nn.h"

struct pb_json;
struct pb_iter;
struct pb_iter_times;

/* One self-play item: `episodes` games numbered 0.. with streams (seed,
 * i), playing with the networks of `version`; td_epsilon is td's share of
 * random moves (0 for the others). The learner hands it out; --inproc
 * plays the same items. */
typedef struct pb_algo_item {
  int episodes;
  uint64_t seed;
  uint64_t version;
  double td_epsilon;
} pb_algo_item_t;

/* What a process offers the algorithm to play or search with. The
 * networks are those of the item's versions (which ones: pb_algo_t's
 * play_nets); ne is a batched, cached evaluator the caller keeps from item
 * to item (the algorithm binds it to the networks it uses); tick, when
 * not NULL, runs between two network batches (a worker's heartbeat and
 * stop flag: a nonzero return abandons the item with that code). parallel
 * is this process's games (searches) at once; threads > 1 splits an item
 * over batcher's threads of game or tree work, feeding one network. */
typedef struct pb_algo_env {
  const pb_game_t *g;
  const pb_config_t *run; /* the run's config (the learner's) */
  int parallel;
  int threads;
  pb_batcher_t *batcher; /* needed with threads > 1 */
  pb_nn_t *v, *q;
  pb_neteval_t *ne;
  int (*tick)(void *ctx, pb_err_t *err);
  void *tick_ctx;
} pb_algo_env_t;

/* Which networks a self-play item plays with (play_nets). */
enum { PB_ALGO_NET_V = 1, PB_ALGO_NET_Q = 2 };

typedef struct pb_algo {
  /* What the algorithm is, as data (common/run/algos.h): its name, config
   * section, the family of its networks (PB_NETS_PV: its episodes carry a
   * visit distribution per position, the policy targets, and its Q slot
   * holds the policy+value network), its agent, whether it searches. */
  const pb_algo_data_t *data;
  int play_nets;       /* PB_ALGO_NET_*: the networks of a self-play item */
  int q_play;          /* 1: its actors draw each move from softmax(Q / T)
                          with Dirichlet noise (pb_selfplay_pick), so the
                          learner can score their moves (playcheck.h) */
  size_t state_size;   /* bytes of its own an iteration keeps (zeroed at
                          pb_iter_new; iteration_impl.h: priv) */

  /* ---- self-play (actors, --inproc) ---- */
  /* An engine that plays this algorithm's items, reused from item to
   * item; NULL with err filled when the run's settings are refused. */
  void *(*player_new)(const pb_algo_env_t *env, pb_err_t *err);
  void (*player_destroy)(void **player);
  /* Plays the item into out (appended, episodes in number order). 0, or
   * the code of the engine, the network or env->tick. */
  int (*play)(void *player, const pb_algo_env_t *env,
              const pb_algo_item_t *item, pb_episodes_t *out, pb_err_t *err);

  /* ---- search (searchers, --inproc; searches == 1 only) ---- */
  /* Targets of n positions into out ([n][num_actions]) with V and Q of
   * env, as the run's search settings say (E, M, search.algorithm,
   * search.nodes of env->run: a searcher's is the learner's config from
   * its HelloReply; a search item carries only positions and versions). */
  void *(*searcher_new)(const pb_algo_env_t *env, pb_err_t *err);
  void (*searcher_destroy)(void **searcher);
  int (*search)(void *searcher, const pb_algo_env_t *env,
                const pb_state_t *states, int n, float *out, pb_err_t *err);

  /* ---- training (the learner, --inproc) ---- */
  /* Before the search: what trains on the episodes alone, and the
   * positions to search (pb_iter_set_search). NULL: nothing. Runs off the
   * learner's loop. */
  int (*train_before_search)(struct pb_iter *it, pb_err_t *err);
  /* After the search (or after self-play, without one): the rest of the
   * iteration's training, then pb_learn_end_iteration. Runs off the loop. */
  int (*train_after_search)(struct pb_iter *it, pb_err_t *err);
  /* The share of random moves of the item whose first episode is `first`
   * in the iteration that plays with version `version` (td); NULL: 0. */
  double (*item_epsilon)(const pb_config_t *cfg, uint64_t version,
                         uint64_t first);
  /* Its own settings in words, for the start of a run's log ("beam
   * search (E=10, M=3)", "100 simulations per move", "2-ply"). */
  void (*settings)(const pb_config_t *cfg, char *buf, size_t n);
  /* Its part of the iteration's log line (its training: losses, times,
   * the search's rate), and its fields of the metrics.jsonl object
   * (iteration.h: pb_iter_report). */
  void (*describe)(const struct pb_iter *it, const struct pb_iter_times *t,
                   char *buf, size_t n);
  void (*metrics)(const struct pb_iter *it, const struct pb_iter_times *t,
                  struct pb_json *j);
} pb_algo_t;

/* env's evaluator as search and self-play call it: env->tick (when set)
 * before every batch, then env->ne. env must outlive the calls. */
pb_evalfn_t pb_algo_evalfn(const pb_algo_env_t *env);

/* The algorithms, and the one a config names (its `algorithm` key, which
 * the schema has checked; NULL for an unknown name). */
extern const pb_algo_t pb_algo_probs, pb_algo_alphazero, pb_algo_td;
const pb_algo_t *pb_algo_by_name(const char *name);
const pb_algo_t *pb_algo_of(const pb_config_t *cfg);

#endif
