/* config.h - the run configuration: one transparent struct, one schema.
 *
 * A pb_config_t holds every setting of a run as plain values (fixed-size
 * strings, no pointers), so it can be copied by value, compared with memcmp
 * after pb_config_defaults, and embedded in checkpoints. Every key has one
 * row in the schema table (config_schema.c): dotted path, type, range,
 * default and a one-line doc; loading, overrides, printing and --help are
 * all driven by that table.
 *
 * Files are YAML (libyaml). Nested mappings map to dotted keys, so
 *
 *     search:
 *       expansions: 30
 *
 * and `search.expansions: 30` mean the same. Loading is strict: unknown
 * keys, duplicate keys, values of the wrong type or out of range, and YAML
 * syntax errors are refused with PB_ECONFIG and a message that names the
 * key, the value, the allowed range and the file:line:column.
 *
 * Usual sequence in a main():
 *
 *     pb_config_t cfg;
 *     pb_config_defaults(&cfg);
 *     pb_config_load_file(&cfg, path, &err);          // optional
 *     pb_config_apply_override(&cfg, "train.iterations=3", &err); // --set
 *     pb_config_check(&cfg, &err);                    // cross-field checks
 */
#ifndef PB_CONFIG_H
#define PB_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "game.h"

#define PB_CONFIG_NAME_MAX 64  /* short strings (names, enums), incl. NUL */
#define PB_CONFIG_PATH_MAX 256 /* paths, endpoints, lists, incl. NUL */
#define PB_CONFIG_KEY_MAX 64   /* longest dotted key, incl. NUL */
#define PB_CONFIG_MAX_OPPONENTS 16 /* items of eval.opponents */
#define PB_CONFIG_OPPONENT_MAX 64  /* one of them, incl. NUL */

/* Shape of one network (V or Q): 3x3 convolutions, then dense layers. */
typedef struct pb_config_net {
  int conv_layers;
  int conv_channels;
  int dense_layers;
  int dense_units;
  int res_blocks;                /* residual blocks after the convolutions */
  char norm[PB_CONFIG_NAME_MAX]; /* "none" or "layer" */
} pb_config_net_t;

typedef struct pb_config {
  char game[PB_CONFIG_NAME_MAX]; /* a name known to pb_game_by_name */
  int64_t seed; /* run seed; every RNG stream derives from it */
  /* "probs" (V and Q, beam-search targets: the paper) or "alphazero" (one
   * policy+value network, PUCT MCTS self-play: docs/comparison.md) */
  char algorithm[PB_CONFIG_NAME_MAX];

  struct {
    char name[PB_CONFIG_NAME_MAX]; /* run id (letters, digits, . _ -) */
    char dir[PB_CONFIG_PATH_MAX];  /* run directory */
    int keep_last;  /* checkpoints: the newest N versions; 0 = keep all */
    int keep_every; /* checkpoints: multiples of K kept forever; 0 = none */
    bool record_selfplay; /* the learner appends every self-play game to
                             RUN_DIR/games/selfplay.jsonl (docs/records.md) */
  } run;

  struct {
    double eps;            /* exploration coefficient (paper: epsilon) */
    double alpha;          /* Dirichlet noise parameter */
    double v_lr, q_lr;     /* Adam learning rates */
    double weight_decay;   /* Adam L2 */
    int iterations;        /* N_ITER */
    int episodes_per_iter; /* N_EPISODES */
    int max_turns;         /* N_TURNS */
    int replay_capacity;   /* C (states) */
    int batch_size;
    int cuda_batch_scale;  /* on a CUDA learner: minibatch x this (model.h,
                              pb_model_batch_scale) */
    int v_epochs, q_epochs;
    int selfplay_parallel; /* games played at once per thread */
    int selfplay_threads;  /* threads of game work per actor; 0 = auto */
    int max_staleness;     /* pipelined mode: versions an episode may lag */
    bool pipeline;         /* pipelined mode (off = paper-exact) */
    /* Beyond the paper (every default is the paper's behaviour): */
    double grad_clip;           /* gradient L2 norm cap; 0 = off */
    int lr_warmup_steps;        /* linear warm-up over this many Adam steps */
    int lr_decay_iterations;    /* cosine decay over this many; 0 = none */
    double lr_min_factor;       /* the decayed learning rate's floor */
    char augment[PB_CONFIG_NAME_MAX]; /* "none" or "mirror" */
    int replay_iterations;      /* train on the last k iterations' data */
    double v_search_mix;        /* V target: (1-m) outcome + m search value */
    double selfplay_temperature; /* softmax(Q / T) in self-play */
  } train;

  struct {
    char algorithm[PB_CONFIG_NAME_MAX]; /* the targets' search: "beam" (the
                                           paper) or "abnet" */
    int nodes;         /* abnet: network evaluations per legal move */
    int expansions;    /* E */
    int max_depth;     /* M (abnet: the horizon's plies below the position) */
    int parallel;      /* searches advanced together per thread */
    int threads;       /* threads of tree work per searcher; 0 = auto */
    int cache_entries; /* evaluation cache size; 0 disables it */
  } search;

  struct { /* algorithm: alphazero */
    int simulations; /* PUCT simulations per self-play move */
    double c_puct;   /* exploration constant */
    int temp_moves;  /* moves drawn in proportion to the visits; later
                        moves take the most visited action */
    bool discount;   /* the discounting heuristic: terminal values over
                        their depth in the search (common/search/mcts.h) */
    char root[PB_CONFIG_NAME_MAX]; /* "puct" or "gumbel" (common/search/mcts.h) */
    int gumbel_considered;         /* gumbel: m, actions sampled */
    double gumbel_c_visit;         /* gumbel: sigma's c_visit */
    double gumbel_c_scale;         /* gumbel: sigma's c_scale */
    double full_fraction;  /* playout cap: share of full searches; 1 = off */
    int small_simulations; /* playout cap: a fast search's simulations */
    bool forced_playouts;  /* KataGo's forced playouts, target pruning */
  } mcts;

  struct {                 /* algorithm: td (common/train/td.h) */
    int ply;               /* look-ahead of self-play moves and targets */
    double alpha;          /* TD(0) step size at the start */
    double alpha_decay;    /* alpha's factor every decay_every_games */
    double epsilon;        /* share of random self-play moves at the start */
    double epsilon_decay;  /* epsilon's factor every decay_every_games */
    int decay_every_games; /* games between two decays */
  } td;

  struct {
    char device[PB_CONFIG_NAME_MAX]; /* "cpu", "cuda" or "auto" */
    /* Per role (pb_config_device): "cpu", "cuda" or "auto". */
    char learner_device[PB_CONFIG_NAME_MAX];
    char actor_device[PB_CONFIG_NAME_MAX];
    char searcher_device[PB_CONFIG_NAME_MAX];
    /* "fp32", "bf16" or "auto" (common/nn/precision.h); per role
     * (pb_config_precision) also "default": model.precision. */
    char precision[PB_CONFIG_NAME_MAX];
    char learner_precision[PB_CONFIG_NAME_MAX];
    char actor_precision[PB_CONFIG_NAME_MAX];
    char searcher_precision[PB_CONFIG_NAME_MAX];
    int threads;                     /* libtorch intra-op threads */
    int learner_threads;             /* training threads; 0 = auto */
    pb_config_net_t v, q;
  } model;

  struct {
    char work_endpoint[PB_CONFIG_PATH_MAX]; /* ROUTER, learner binds */
    char pub_endpoint[PB_CONFIG_PATH_MAX];  /* PUB, learner binds */
    int http_port; /* /metrics and /status; 0 = off, -1 = kernel's pick */
    char http_bind[PB_CONFIG_NAME_MAX];     /* IPv4 address it listens on */
    char curve_dir[PB_CONFIG_PATH_MAX];     /* CURVE keys; "" = off */
    char curve_key[PB_CONFIG_NAME_MAX];     /* a worker's pair: NAME.key */
    int lease_ms;                           /* work-item lease */
    int lease_max_ms; /* longest a lease lasts, heartbeats or not */
    int no_workers_exit_s; /* learner: stop when a phase has had no usable
                            * worker this long; 0 = wait forever */
    int heartbeat_ms;
    int give_up_s; /* a worker's patience with a silent learner, 0 = none */
    int hwm;           /* ZeroMQ high-water mark (messages) */
    int item_episodes; /* episodes per self-play work item */
    int item_states;   /* states per search work item */
    int max_workers;
    double spot_check;           /* share of search results re-searched */
    double spot_check_tolerance; /* largest honest difference of a target */
    double spot_check_max_disagree; /* share of checked positions allowed */
    double selfplay_check; /* share of self-play episodes scored */
    int selfplay_reference; /* the learner's own episodes per Q version */
    double az_check; /* share of AlphaZero rows re-searched */
  } net;

  struct {
    char opponents[PB_CONFIG_PATH_MAX]; /* "random,lookahead:1,..." */
    char anchors[PB_CONFIG_PATH_MAX];   /* "SPEC=R,..."; "" = the defaults */
    int games_per_opponent;
    int opening_random_moves;
    int threads; /* 0 = all cores */
    int every;   /* evaluate every Nth version */
    bool enabled;
    bool accuracy;                      /* solver accuracy (solvable games) */
    char testset[PB_CONFIG_PATH_MAX];   /* "" = the shipped set */
    char search[PB_CONFIG_NAME_MAX];    /* the accuracy's search agent (probs
                                         * runs): "abnet" or "beam" */
    int search_nodes;                   /* the abnet agent's evaluations */
    int search_expansions, search_depth; /* the beam agent's E and M */
    int mcts_simulations; /* the MCTS agent's N (alphazero runs) */
  } eval;

  struct {
    char level[PB_CONFIG_NAME_MAX]; /* "debug", "info", "warn", "error" */
  } log;
} pb_config_t;

/* Sets every key of *c to its default (the paper's Connect Four settings,
 * section 6, where the paper gives one). Zeroes the whole struct first, so
 * two defaulted configs that receive the same values compare equal with
 * memcmp. */
void pb_config_defaults(pb_config_t *c);

/* Applies the YAML file at `path` on top of whatever *c holds (call
 * pb_config_defaults first). Keys absent from the file keep their value.
 * Returns 0, PB_EIO if the file cannot be read, or PB_ECONFIG for anything
 * wrong in it (syntax, unknown or duplicate key, bad value), with the
 * message naming the file:line:column, the key and the value. On error *c
 * is left unchanged. Does not run pb_config_check. */
int pb_config_load_file(pb_config_t *c, const char *path, pb_err_t *err);

/* Same as pb_config_load_file for a NUL-terminated YAML text (tests, and
 * configs stored inside checkpoints). Messages name "<string>:line:col". */
int pb_config_load_string(pb_config_t *c, const char *yaml, pb_err_t *err);

/* Sets one key from its text form, as typed on a command line
 * ("search.expansions", "10"). Validates like the loader (type, range,
 * choices); returns 0, or PB_ECONFIG naming the key and value (unknown key,
 * bad value), leaving *c unchanged. */
int pb_config_set(pb_config_t *c, const char *key, const char *value,
                  pb_err_t *err);

/* Parses "key=value" (the argument of --set) and calls pb_config_set.
 * PB_ECONFIG if there is no '=' or the key is empty. */
int pb_config_apply_override(pb_config_t *c, const char *key_eq_value,
                             pb_err_t *err);

/* Writes the value of `key` in its text form (the form pb_config_set
 * accepts) into buf. Returns 0, PB_ECONFIG for an unknown key, or PB_ERANGE
 * if buf is too small. */
int pb_config_get(const pb_config_t *c, const char *key, char *buf, size_t n,
                  pb_err_t *err);

/* Checks the whole config: every value within its range again (the struct
 * is transparent, so fields may have been set directly), the game is known
 * to pb_game_by_name, endpoints have a transport, the heartbeat is shorter
 * than the lease, and so on. Returns 0 or PB_ECONFIG naming the keys. */
int pb_config_check(const pb_config_t *c, pb_err_t *err);

/* Writes every key as YAML (nested mappings, one doc comment per key) into
 * a malloc'd NUL-terminated string that the caller frees. Loading the text
 * into a defaulted config reproduces *c exactly (doubles are written in
 * their shortest round-trip form). Returns 0 or PB_ENOMEM. */
int pb_config_to_yaml(const pb_config_t *c, char **out, pb_err_t *err);

/* The usual start of a process: defaults, the YAML file at `path`, each
 * "KEY=VALUE" of sets[0..nsets) in order, then run.dir = run_dir when it is
 * not NULL, then pb_config_check. Returns 0 or the first error, with the
 * message prefixed by what failed ("--set KEY=VALUE: ...", "--run-dir: ...").
 * A file that sets nothing (empty, comments only) is PB_ECONFIG naming it. */
int pb_config_setup(pb_config_t *c, const char *path, const char *const *sets,
                    int nsets, const char *run_dir, pb_err_t *err);

/* Lists every key with its type, default, allowed range and doc (--help). */
void pb_config_print_keys(FILE *f);

/* 1 when the targets' search is abnet (search.algorithm), else 0 (beam). */
int pb_config_abnet_targets(const pb_config_t *c);

/* The targets' search in words for logs: "beam search (E=10, M=3)" or
 * "abnet search (nodes=100 a move, M=3)", into buf (n >= 64 is enough);
 * returns buf. */
const char *pb_config_search_desc(const pb_config_t *c, char *buf, size_t n);

/* The opponents of eval.opponents, in order, into out[0..n); returns n.
 * The list is the one pb_config_check vetted (1..PB_CONFIG_MAX_OPPONENTS
 * items, each shorter than PB_CONFIG_OPPONENT_MAX, none twice). */
int pb_config_opponents(const pb_config_t *c,
                        char (*out)[PB_CONFIG_OPPONENT_MAX]);

/* Parses one anchor, an item of eval.anchors or the evaluator's --anchor:
 * "SPEC=RATING" (a number within +-1e6) or "SPEC=none". Sets *spec_len
 * (the length of SPEC) and *rating (NAN for none). Returns 0, or
 * PB_EINVAL with a message naming the item. */
int pb_config_anchor(const char *item, size_t *spec_len, double *rating,
                     pb_err_t *err);

/* The roles of pb_config_device and pb_config_precision (PB_DEVICE_OTHER:
 * the evaluator and the agents, which follow model.precision). */
enum { PB_DEVICE_OTHER = 0, PB_DEVICE_LEARNER, PB_DEVICE_ACTOR,
       PB_DEVICE_SEARCHER };

/* The device a role's networks are created on: the role's own key
 * (model.learner_device, model.actor_device, model.searcher_device) when it
 * is not "auto"; else model.device when that is not "auto"; else the
 * role's own choice: "cpu" for actors (self-play's small batches from
 * many processes are faster on the CPU: docs/performance.md), "auto" for
 * the learner and searchers (common/nn/nn.h: pb_nn_new then takes CUDA when
 * there is one). Returns "cpu", "cuda" or "auto"; *key (when not NULL) names the key
 * the answer came from, for messages. */
const char *pb_config_device(const pb_config_t *c, int role,
                             const char **key);

/* The precision a role's networks use: the role's own key
 * (model.learner_precision, model.actor_precision,
 * model.searcher_precision) when it is not "default", else
 * model.precision (also for PB_DEVICE_OTHER). Returns "fp32", "bf16" or
 * "auto" (common/nn/precision.h decides what auto is on a device); *key
 * (when not NULL) names the key the answer came from. */
const char *pb_config_precision(const pb_config_t *c, int role,
                                const char **key);

#endif
