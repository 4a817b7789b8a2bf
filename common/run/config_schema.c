/* config_schema.c - the schema of the configuration (see config.h): one
 * row per key (dotted path, type, range, default, doc), and the row
 * helpers the loader, pb_config_set, pb_config_check, pb_config_to_yaml and
 * the --help listing share (config_impl.h): finding a row, parsing a value
 * into its field, formatting it back, and the near key to suggest for a
 * typo. */
#include "config_impl.h"
#include "bounds.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(pb_config_t, field), sizeof(((pb_config_t *)0)->field)
#define ROW_INT(p, field, lo, hi, d, doc) \
  { p, PB__CT_INT, F(field), lo, hi, 0, 0, d, NULL, doc }
#define ROW_I64(p, field, lo, hi, d, doc) \
  { p, PB__CT_INT64, F(field), lo, hi, 0, 0, d, NULL, doc }
#define ROW_DBL(p, field, lo, hi, d, doc) \
  { p, PB__CT_DOUBLE, F(field), 0, 0, lo, hi, d, NULL, doc }
#define ROW_BOOL(p, field, d, doc) \
  { p, PB__CT_BOOL, F(field), 0, 1, 0, 0, d, NULL, doc }
#define ROW_STR(p, field, minlen, d, doc)                                      \
  {                                                                            \
    p, PB__CT_STR, F(field), minlen, sizeof(((pb_config_t *)0)->field) - 1, 0, \
        0, d, NULL, doc                                                        \
  }
#define ROW_NAME(p, field, d, doc)                                            \
  {                                                                           \
    p, PB__CT_NAME, F(field), 1, sizeof(((pb_config_t *)0)->field) - 1, 0, 0, \
        d, NULL, doc                                                          \
  }
#define ROW_ENUM(p, field, choices, d, doc) \
  { p, PB__CT_ENUM, F(field), 0, 0, 0, 0, d, choices, doc }
#define NET_ROWS(w, W)                                                         \
  ROW_INT("model." #w ".conv_layers", model.w.conv_layers, 0, 64, "2",         \
          W ": number of 3x3 convolutions"),                                   \
      ROW_INT("model." #w ".conv_channels", model.w.conv_channels, 1, 1024,    \
              "16", W ": channels of each convolution"),                       \
      ROW_INT("model." #w ".dense_layers", model.w.dense_layers, 0, 16, "1",   \
              W ": hidden dense layers before the head"),                      \
      ROW_INT("model." #w ".dense_units", model.w.dense_units, 1, 65536, "12", \
              W ": units of each hidden dense layer"),                         \
      ROW_INT("model." #w ".res_blocks", model.w.res_blocks, 0, 64, "0",       \
              W ": residual blocks (2 convolutions each) after the "           \
              "convolutions"),                                                 \
      ROW_ENUM("model." #w ".norm", model.w.norm, "none|layer", "none",        \
               W ": normalisation after each convolution: none or layer")

/* Rows sharing a section are kept together: to_yaml opens one mapping per
 * run of rows with the same prefix (a test reloads its output, so a split
 * section would show up there as a duplicate key). */
const pb__row_t pb__schema[] = {
    ROW_NAME("game", game, "connect4",
             "game to play (connect4, tictactoe, ...)"),
    ROW_I64("seed", seed, 0, INT64_MAX, "1",
            "run seed; every random stream derives from it"),
    ROW_ENUM("algorithm", algorithm, "probs|alphazero|td", "probs",
             "probs (V and Q trained on beam-search results: the paper), "
             "alphazero (one policy+value network, PUCT MCTS self-play, no "
             "searchers: docs/comparison.md) or td (TD(0) learning of a "
             "linear evaluation with n-ply self-play, seed 004; the td.* "
             "keys; model.v/model.q shapes unused: docs/baselines.md)"),

    ROW_NAME("run.name", run.name, "c4", "run id, carried in every message"),
    ROW_STR("run.dir", run.dir, 1, "runs/c4",
            "run directory: checkpoints, logs, metrics"),
    ROW_INT("run.keep_last", run.keep_last, 0, 1000000, "10",
            "checkpoints kept: the newest N versions (plus version 0, "
            "run.keep_every's and those the evaluator has not rated yet); "
            "0 = keep every checkpoint"),
    ROW_INT("run.keep_every", run.keep_every, 0, 1000000, "10",
            "checkpoints of versions that are multiples of K are kept "
            "forever (with run.keep_last > 0); 0 = none"),
    ROW_BOOL("run.record_selfplay", run.record_selfplay, "false",
             "the learner appends every self-play game to "
             "RUN_DIR/games/selfplay.jsonl, a JSON line each "
             "(docs/records.md)"),

    ROW_INT("train.iterations", train.iterations, 1, 1000000, "100",
            "N_ITER: training iterations"),
    ROW_INT("train.episodes_per_iter", train.episodes_per_iter, 1, 10000000,
            "1000", "N_EPISODES: self-play episodes per iteration"),
    ROW_INT("train.max_turns", train.max_turns, 1, PB_MAX_TURNS, "100",
            "N_TURNS: moves after which an episode stops (draw)"),
    ROW_INT("train.replay_capacity", train.replay_capacity, 1, 1000000000,
            "100000", "C: capacity of the experience replay (states)"),
    ROW_DBL("train.eps", train.eps, 0.0, 1.0, "0.25",
            "epsilon: weight of Dirichlet noise in the self-play policy"),
    ROW_DBL("train.alpha", train.alpha, 1e-6, 1000.0, "0.5",
            "alpha: Dirichlet noise parameter"),
    ROW_INT("train.batch_size", train.batch_size, 1, 1000000, "128",
            "minibatch size for V and Q"),
    ROW_INT("train.cuda_batch_scale", train.cuda_batch_scale, 1, 64, "1",
            "on a CUDA learner only: minibatches of batch_size x this, the "
            "learning rates x its square root and lr_warmup_steps / this "
            "(the same samples), as training there is bound by kernel "
            "launches; a CPU learner trains batch_size whatever this says; "
            "1 = off (paper)"),
    ROW_DBL("train.v_lr", train.v_lr, 0.0, 10.0, "0.003",
            "Adam learning rate of V"),
    ROW_DBL("train.q_lr", train.q_lr, 0.0, 10.0, "0.003",
            "Adam learning rate of Q"),
    ROW_DBL("train.weight_decay", train.weight_decay, 0.0, 1.0, "0.0001",
            "Adam L2 weight decay"),
    ROW_INT("train.v_epochs", train.v_epochs, 1, 1000, "1",
            "passes over the iteration's states for V"),
    ROW_INT("train.q_epochs", train.q_epochs, 1, 1000, "1",
            "passes over the beam-search targets for Q"),
    ROW_INT("train.selfplay_parallel", train.selfplay_parallel, 1,
            PB_SELFPLAY_MAX_PARALLEL,
            "256", "games played at once per thread of an actor"),
    ROW_INT("train.selfplay_threads", train.selfplay_threads, 0, PB_MAX_THREADS, "0",
            "threads of game work per actor, feeding one network queue; 0 = "
            "1 on the CPU, the CPUs the process may use on CUDA"),
    ROW_BOOL("train.pipeline", train.pipeline, "false",
             "distributed runs: actors play the next iteration's games with "
             "the Q they have while V and Q train and the searchers search; "
             "false = one phase after the other (paper)"),
    ROW_INT("train.max_staleness", train.max_staleness, 0, 1000, "1",
            "pipelined mode: versions an episode's Q may lag the version "
            "trained from; 0 turns the overlap off"),
    ROW_DBL("train.grad_clip", train.grad_clip, 0.0, 1e9, "0",
            "cap on the gradient's L2 norm before Adam; 0 = off (paper)"),
    ROW_INT("train.lr_warmup_steps", train.lr_warmup_steps, 0, 100000000, "0",
            "learning rates rise linearly over this many Adam steps; 0 = off"),
    ROW_INT("train.lr_decay_iterations", train.lr_decay_iterations, 0,
            1000000, "0",
            "cosine decay of the learning rates over this many iterations, "
            "to lr * lr_min_factor; 0 = constant (paper)"),
    ROW_DBL("train.lr_min_factor", train.lr_min_factor, 0.0, 1.0, "0.1",
            "floor of the decayed learning rates, as a share of v_lr / q_lr"),
    ROW_ENUM("train.augment", train.augment, "none|mirror", "none",
             "training data augmentation: none (paper) or mirror (each sample "
             "mirrored left-right with probability 1/2)"),
    ROW_INT("train.replay_iterations", train.replay_iterations, 1,
            PB_REPLAY_MAX_ITERATIONS, "1",
            "V and Q train on the data of the last k iterations; 1 = only "
            "the current one (paper)"),
    ROW_DBL("train.v_search_mix", train.v_search_mix, 0.0, 1.0, "0",
            "V target = (1 - m) * outcome + m * beam-search value; m > 0 "
            "trains V after the search (which then uses the previous V); 0 = "
            "outcome only, before the search (paper)"),
    ROW_DBL("train.selfplay_temperature", train.selfplay_temperature, 0.01,
            100.0, "1",
            "self-play policy softmax(Q / T) before the Dirichlet noise; 1 = "
            "paper"),

    ROW_INT("search.expansions", search.expansions, 1, PB_BEAM_MAX_EXPANSIONS, "30",
            "E: nodes expanded per beam search"),
    ROW_INT("search.max_depth", search.max_depth, 1, PB_BEAM_MAX_DEPTH, "3",
            "M: depth limit of beam search (abnet targets: 2..65)"),
    ROW_ENUM("search.algorithm", search.algorithm, "beam|abnet", "beam",
             "the search that makes Q's targets: beam (the paper's Algorithm "
             "1, E and M) or abnet (per legal move, alpha-beta over V to "
             "search.nodes evaluations and M plies below the position; "
             "common/search/abtargets.h)"),
    ROW_INT("search.nodes", search.nodes, 1, PB_SEARCH_MAX_NODES, "100",
            "abnet targets: network evaluations per legal move"),
    ROW_INT("search.parallel", search.parallel, 1, 1000000, "256",
            "searches advanced together per thread of a searcher (abnet "
            "targets: positions searched at once, each on a thread of its "
            "own, at most 64)"),
    ROW_INT("search.threads", search.threads, 0, PB_MAX_THREADS, "0",
            "threads of tree work per searcher, feeding one network queue; 0 "
            "= 1 (common/run/plan.h: many searchers of one thread beat few "
            "of many, also on CUDA)"),
    ROW_INT("search.cache_entries", search.cache_entries, 0, 1 << 30, "262144",
            "network evaluation cache entries; 0 disables the cache"),

    ROW_INT("mcts.simulations", mcts.simulations, 1, PB_MCTS_MAX_SIMULATIONS, "100",
            "alphazero: PUCT simulations per self-play move"),
    ROW_DBL("mcts.c_puct", mcts.c_puct, 1e-3, 100.0, "1.5",
            "alphazero: exploration constant of PUCT"),
    ROW_INT("mcts.temp_moves", mcts.temp_moves, 0, 100000, "10",
            "alphazero: the first N moves of a self-play game are drawn in "
            "proportion to the visit counts, later ones take the most "
            "visited move (train.eps and train.alpha are the root noise)"),
    ROW_BOOL("mcts.discount", mcts.discount, "false",
             "alphazero: the discounting heuristic in the search: a "
             "terminal position's value divided by its plies from the root "
             "(a quicker win counts more); network values unchanged"),
    ROW_ENUM("mcts.root", mcts.root, "puct|gumbel", "puct",
             "alphazero: the self-play search's root: puct (AlphaZero) or "
             "gumbel (Danihelka et al. 2022: sequential halving over the "
             "top mcts.gumbel_considered actions by Gumbel noise + logits, "
             "policy target softmax(logits + sigma(completed Q)), the move "
             "its pick; train.eps, train.alpha and mcts.temp_moves unused)"),
    ROW_INT("mcts.gumbel_considered", mcts.gumbel_considered, 1, 1000, "16",
            "alphazero, mcts.root gumbel: m, the actions sampled at the "
            "root"),
    ROW_DBL("mcts.gumbel_c_visit", mcts.gumbel_c_visit, 1e-6, 1e6, "50",
            "alphazero, mcts.root gumbel: sigma(q) = (c_visit + max N) * "
            "c_scale * q, q the completed Q rescaled to [0, 1]"),
    ROW_DBL("mcts.gumbel_c_scale", mcts.gumbel_c_scale, 1e-6, 1e6, "1",
            "alphazero, mcts.root gumbel: sigma's c_scale"),
    ROW_DBL("mcts.full_fraction", mcts.full_fraction, 0.0, 1.0, "1",
            "alphazero: playout cap randomization (KataGo): the share of "
            "moves searched with mcts.simulations (with root noise; their "
            "visits are policy targets); the others get "
            "mcts.small_simulations, no noise, and no policy target; 1 = "
            "off"),
    ROW_INT("mcts.small_simulations", mcts.small_simulations, 0,
            PB_MCTS_MAX_SIMULATIONS, "0",
            "alphazero, mcts.full_fraction < 1: simulations of the other "
            "moves, 1..mcts.simulations"),
    ROW_BOOL("mcts.forced_playouts", mcts.forced_playouts, "false",
             "alphazero, mcts.root puct: KataGo's forced playouts (each root "
             "child at least sqrt(2 * P * N) visits) and policy target "
             "pruning (those visits taken off the target, children left "
             "with 1 visit dropped)"),

    ROW_INT("td.ply", td.ply, 1, PB_NPLY_MAX_DEPTH, "1",
            "td: look-ahead of self-play moves (n-ply negamax over the "
            "evaluation); the TD target of a position is the (n-1)-ply "
            "value of the next one"),
    ROW_DBL("td.alpha", td.alpha, 1e-9, 10.0, "0.01",
            "td: TD(0) step size (plain gradient descent) at the start"),
    ROW_DBL("td.alpha_decay", td.alpha_decay, 0.0, 1.0, "0.95",
            "td: td.alpha is multiplied by this every td.decay_every_games "
            "games"),
    ROW_DBL("td.epsilon", td.epsilon, 0.0, 1.0, "0.1",
            "td: share of self-play moves drawn uniformly at random "
            "(epsilon-greedy) at the start"),
    ROW_DBL("td.epsilon_decay", td.epsilon_decay, 0.0, 1.0, "1",
            "td: td.epsilon is multiplied by this every td.decay_every_games "
            "games; 1 = fixed (the paper's first set; its second 0.9)"),
    ROW_INT("td.decay_every_games", td.decay_every_games, 1, 1000000000, "500",
            "td: self-play games between two decays"),

    ROW_ENUM("model.device", model.device, "cpu|cuda|auto", "auto",
             "where networks run, for every role whose own key is auto: "
             "cpu, cuda, or auto (each role's own choice)"),
    ROW_ENUM("model.learner_device", model.learner_device, "cpu|cuda|auto",
             "auto",
             "the learner's device (also --inproc's); auto: model.device, "
             "or cuda when there is one"),
    ROW_ENUM("model.actor_device", model.actor_device, "cpu|cuda|auto",
             "auto",
             "self-play actors' device; auto: model.device, or cpu (many "
             "actors sharing a GPU were 5x slower than on the CPU)"),
    ROW_ENUM("model.searcher_device", model.searcher_device, "cpu|cuda|auto",
             "auto",
             "beam-search workers' device; auto: model.device, or cuda when "
             "there is one"),
    ROW_ENUM("model.precision", model.precision, "fp32|bf16|auto", "fp32",
             "arithmetic of every network whose role's own key is default "
             "(and of the evaluator and agents): fp32; bf16 (trunk in "
             "bfloat16, head, loss and weights fp32; refused where the "
             "device has no native bf16); auto (bf16 on a CPU with native "
             "bf16: AMX or AVX-512 BF16; fp32 on CUDA, where bf16 was "
             "measured slower for these networks; else fp32)"),
    ROW_ENUM("model.learner_precision", model.learner_precision,
             "default|fp32|bf16|auto", "default",
             "the learner's precision (also --inproc's); default: "
             "model.precision"),
    ROW_ENUM("model.actor_precision", model.actor_precision,
             "default|fp32|bf16|auto", "default",
             "self-play actors' precision; default: model.precision"),
    ROW_ENUM("model.searcher_precision", model.searcher_precision,
             "default|fp32|bf16|auto", "default",
             "search workers' precision; default: model.precision"),
    ROW_INT("model.threads", model.threads, 1, PB_NN_MAX_THREADS, "1",
            "libtorch intra-op threads per process"),
    ROW_INT("model.learner_threads", model.learner_threads, 0,
            PB_NN_MAX_TRAIN_THREADS, "0",
            "threads the learner trains each network on (each minibatch "
            "split into that many shards at once; results differ in the "
            "last bits between counts); 0 = auto: on a CPU half the CPUs, "
            "at most 8; on CUDA 1"),
    NET_ROWS(v, "V"),
    NET_ROWS(q, "Q"),

    ROW_STR("net.work_endpoint", net.work_endpoint, 1, "tcp://127.0.0.1:5555",
            "work socket (learner ROUTER binds, workers connect); port '*': "
            "the learner binds one the kernel picks and writes it to "
            "RUN_DIR/endpoints"),
    ROW_STR("net.pub_endpoint", net.pub_endpoint, 1, "tcp://127.0.0.1:5556",
            "version announcements (learner PUB binds); port '*' as "
            "net.work_endpoint"),
    ROW_INT("net.http_port", net.http_port, -1, 65535, "8080",
            "HTTP /metrics and /status; 0 = off, -1 = a port the kernel "
            "picks (written to RUN_DIR/endpoints)"),
    ROW_STR("net.curve_dir", net.curve_dir, 0, "",
            "directory of the run's CURVE keys (probs keys DIR): encrypted "
            "links, and only workers listed in its authorized_keys may "
            "join; empty = off (loopback runs)"),
    ROW_NAME("net.curve_key", net.curve_key, "worker",
             "a worker's key pair in net.curve_dir: NAME.key (probs keys "
             "DIR --workers N makes worker-1.. worker-N; --add-worker NAME "
             "one more)"),
    ROW_STR("net.http_bind", net.http_bind, 1, "127.0.0.1",
            "IPv4 address the HTTP server listens on (0.0.0.0: every "
            "interface, as in a container)"),
    ROW_INT("net.lease_ms", net.lease_ms, 10, PB_LEASE_MAX_MS, "30000",
            "a work item not returned within this time is handed out again"),
    ROW_INT("net.lease_max_ms", net.lease_max_ms, 10, PB_LEASE_MAX_MS, "600000",
            "a work item is handed out again this long after it was leased, "
            "whatever the worker's heartbeats say"),
    ROW_INT("net.no_workers_exit_s", net.no_workers_exit_s, 0, 31536000,
            "900",
            "the learner stops with an error (exit status 78) when self-play "
            "or search has had no worker it accepts (all gone, or all "
            "refused as quarantined) for this long; 0 = wait forever"),
    ROW_INT("net.heartbeat_ms", net.heartbeat_ms, 1, PB_HEARTBEAT_MAX_MS, "1000",
            "worker heartbeat period"),
    ROW_INT("net.give_up_s", net.give_up_s, 0, 31536000, "0",
            "a worker that has heard nothing from its learner for this long "
            "while waiting on it exits (status 1) naming the endpoint; 0 = "
            "never (a service waits for its learner to come back)"),
    ROW_INT("net.hwm", net.hwm, 1, 10000000, "1000",
            "ZeroMQ high-water mark (messages)"),
    ROW_INT("net.item_episodes", net.item_episodes, 1, PB_ITEM_MAX_EPISODES, "16",
            "episodes per self-play work item"),
    ROW_INT("net.item_states", net.item_states, 1, PB_ITEM_MAX_STATES, "256",
            "states per beam-search work item"),
    ROW_INT("net.max_workers", net.max_workers, 1, 1000000, "1024",
            "workers the learner tracks at once"),
    ROW_DBL("net.spot_check", net.spot_check, 0.0, 1.0, "0.01",
            "share of the distinct positions the learner searches again "
            "to check the searchers: each at least this likely, more in "
            "proportion to how often it occurs (positions of 0.1% of the "
            "training or more: always); "
            "0 = off"),
    ROW_DBL("net.spot_check_tolerance", net.spot_check_tolerance, 0.0, 2.0,
            "0.02",
            "a checked position disagrees when a target differs from the "
            "learner's by more than this"),
    ROW_DBL("net.spot_check_max_disagree", net.spot_check_max_disagree, 0.0,
            1.0, "0.01",
            "a searcher (a connection, a CURVE key) is quarantined when more "
            "than this share of its checked positions disagree (and at "
            "least 3), counted over the run"),

    ROW_DBL("net.selfplay_check", net.selfplay_check, 0.0, 1.0, "0.25",
            "share of each self-play result's episodes the learner scores "
            "(at least one): how surprising the actor's moves are under the "
            "Q it announced; an actor whose moves are impossible for the "
            "policy (6 standard errors) is quarantined; 0 = off"),
    ROW_INT("net.selfplay_reference", net.selfplay_reference, 0, 100000,
            "32",
            "self-play episodes the learner plays itself with each Q version "
            "it serves (the run's own self-play engine, on its thread pool, "
            "seeds workers do not know): the reference of the outcome test, "
            "so that a lone actor or colluders with no honest actor beside "
            "them are judged too; the self-play phase waits for them; 0 = "
            "off (actors are compared with each other only)"),
    ROW_DBL("net.az_check", net.az_check, 0.0, 1.0, "0.05",
            "AlphaZero: share of the policy rows of each self-play result "
            "(at least one; all of a result, up to 64, while its "
            "connection has fewer than 60 checked) whose search the "
            "learner runs twice again, with noise of its own, to check "
            "the actor's rows (within a budget of 0.5 s plus a fifth of "
            "the phase's time); the moves are checked against their rows "
            "in every position whenever net.selfplay_check > 0; 0 = no "
            "re-run"),

    ROW_BOOL("eval.enabled", eval.enabled, "true", "run the evaluator"),
    ROW_INT("eval.games_per_opponent", eval.games_per_opponent, 1, 10000000,
            "100", "games per checkpoint and opponent (half with each colour)"),
    ROW_INT("eval.opening_random_moves", eval.opening_random_moves, 0, 1000,
            "2", "random moves that open each evaluation game"),
    ROW_STR("eval.opponents", eval.opponents, 1,
            "random,lookahead:1,lookahead:2,lookahead:3",
            "comma-separated baselines: name or name:parameter"),
    ROW_STR("eval.anchors", eval.anchors, 0, "",
            "fixed Elo of opponents, SPEC=R,...; empty = the defaults "
            "(random 1000, and in connect4 and tictactoe the paper's "
            "lookahead:1..3 at 1183, 1501, 1603)"),
    ROW_INT("eval.threads", eval.threads, 0, PB_MAX_THREADS, "0",
            "evaluator threads; 0 = all cores"),
    ROW_INT("eval.every", eval.every, 1, 1000000, "1",
            "evaluate every Nth version"),
    ROW_BOOL("eval.accuracy", eval.accuracy, "true",
             "also measure the share of optimal moves on a solved test set "
             "(games with a solver)"),
    ROW_STR("eval.testset", eval.testset, 0, "",
            "solved test set file; empty = the one shipped for the game"),
    ROW_ENUM("eval.search", eval.search, "abnet|beam", "abnet",
             "probs runs: the search agent whose accuracy is measured: "
             "abnet (alpha-beta over V and Q, eval.search_nodes) or beam "
             "(eval.search_expansions, eval.search_depth)"),
    ROW_INT("eval.search_nodes", eval.search_nodes, 1, PB_SEARCH_MAX_NODES, "500",
            "network evaluations per move of the abnet agent whose accuracy "
            "is measured (500: about the cost of beam E=100 M=10)"),
    ROW_INT("eval.search_expansions", eval.search_expansions, 1,
            PB_BEAM_MAX_EXPANSIONS, "100",
            "E of the beam-search agent whose accuracy is measured "
            "(eval.search: beam)"),
    ROW_INT("eval.search_depth", eval.search_depth, 1, PB_BEAM_MAX_DEPTH, "10",
            "M of the beam-search agent whose accuracy is measured "
            "(eval.search: beam)"),
    ROW_INT("eval.mcts_simulations", eval.mcts_simulations, 1,
            PB_MCTS_MAX_SIMULATIONS, "100",
            "alphazero runs: simulations of the MCTS agent whose accuracy is "
            "measured (in place of the beam-search agent)"),

    ROW_ENUM("log.level", log.level, "debug|info|warn|error", "info",
             "least severe level logged: debug, info, warn or error"),
};
const size_t pb__nrows = sizeof pb__schema / sizeof pb__schema[0];

#undef F
#undef ROW_INT
#undef ROW_I64
#undef ROW_DBL
#undef ROW_BOOL
#undef ROW_STR
#undef ROW_NAME
#undef ROW_ENUM
#undef NET_ROWS

const pb__row_t *pb__row_find(const char *key) {
  for (size_t i = 0; i < pb__nrows; i++)
    if (!strcmp(pb__schema[i].path, key)) return &pb__schema[i];
  return NULL;
}

/* Whether `prefix` names a section: some key starts with "prefix.". */
int pb__is_section(const char *prefix) {
  size_t n = strlen(prefix);
  for (size_t i = 0; i < pb__nrows; i++)
    if (!strncmp(pb__schema[i].path, prefix, n) && pb__schema[i].path[n] == '.')
      return 1;
  return 0;
}

static size_t edit_distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na >= PB_CONFIG_KEY_MAX || nb >= PB_CONFIG_KEY_MAX) return SIZE_MAX;
  size_t prev[PB_CONFIG_KEY_MAX], cur[PB_CONFIG_KEY_MAX];
  for (size_t j = 0; j <= nb; j++) prev[j] = j;
  for (size_t i = 1; i <= na; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      cur[j] = best;
    }
    memcpy(prev, cur, (nb + 1) * sizeof prev[0]);
  }
  return prev[nb];
}

/* A close key, or one with the same last segment, to suggest for a typo. */
static const char *suggest(const char *key) {
  const char *best = NULL;
  size_t bestd = 3;
  const char *dot = strrchr(key, '.');
  const char *last = dot ? dot + 1 : key;
  for (size_t i = 0; i < pb__nrows; i++) {
    size_t d = edit_distance(key, pb__schema[i].path);
    if (d < bestd) bestd = d, best = pb__schema[i].path;
  }
  if (best == NULL && *last != '\0') {
    for (size_t i = 0; i < pb__nrows; i++) {
      const char *rd = strrchr(pb__schema[i].path, '.');
      if (!strcmp(rd ? rd + 1 : pb__schema[i].path, last))
        return pb__schema[i].path;
    }
  }
  return best;
}

int pb__unknown_key(pb_err_t *err, const char *loc, const char *key) {
  const char *s = suggest(key);
  if (s != NULL)
    return pb_err_set(err, PB_ECONFIG,
                      "%sunknown key '%.*s' (did you mean '%s'?)", loc,
                      PB__SHOW, key, s);
  return pb_err_set(
      err, PB_ECONFIG,
      "%sunknown key '%.*s' ('probs train --help' lists the keys)", loc,
      PB__SHOW, key);
}

/* The allowed range or set of a row, for messages and --help. */
void pb__row_range(const pb__row_t *r, char *buf, size_t n) {
  switch (r->type) {
    case PB__CT_INT:
    case PB__CT_INT64:
      snprintf(buf, n, "%" PRId64 "..%" PRId64, r->imin, r->imax);
      break;
    case PB__CT_DOUBLE:
      snprintf(buf, n, "%g..%g", r->dmin, r->dmax);
      break;
    case PB__CT_BOOL:
      snprintf(buf, n, "true|false");
      break;
    case PB__CT_ENUM:
      snprintf(buf, n, "%s", r->choices);
      break;
    case PB__CT_STR:
      snprintf(buf, n, "%" PRId64 "..%" PRId64 " printable ASCII characters",
               r->imin, r->imax);
      break;
    case PB__CT_NAME:
      snprintf(buf, n,
               "%" PRId64 "..%" PRId64 " characters from A-Z a-z 0-9 . _ -",
               r->imin, r->imax);
      break;
  }
}

const char *pb__type_name(pb__ctype_t t) {
  switch (t) {
    case PB__CT_INT:
    case PB__CT_INT64:
      return "integer";
    case PB__CT_DOUBLE:
      return "number";
    case PB__CT_BOOL:
      return "bool";
    case PB__CT_ENUM:
      return "choice";
    case PB__CT_STR:
    case PB__CT_NAME:
      return "string";
  }
  return "?";
}

/* Parses a whole string as an integer: decimal, or a float literal with an
 * integral value (so `replay_capacity: 1e5` works as in the paper).
 * Returns 0, -1 (not an integer) or -2 (does not fit int64). */
static int parse_int64(const char *s, int64_t *out) {
  if (*s == '\0' || isspace((unsigned char)*s)) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end == '\0') {
    if (errno == ERANGE) return -2;
    *out = v;
    return 0;
  }
  errno = 0;
  double d = strtod(s, &end);
  if (*end != '\0' || !isfinite(d) || d != floor(d)) return -1;
  if (fabs(d) > 9007199254740992.0) return -2; /* 2^53: exact as a double */
  *out = (int64_t)d;
  return 0;
}

static int parse_double(const char *s, double *out) {
  if (*s == '\0' || isspace((unsigned char)*s)) return -1;
  char *end;
  errno = 0;
  double d = strtod(s, &end);
  if (*end != '\0' || !isfinite(d)) return -1;
  *out = d;
  return 0;
}

static int parse_bool(const char *s, bool *out) {
  static const char *yes[] = {"true", "yes", "on"},
                    *no[] = {"false", "no", "off"};
  for (size_t i = 0; i < 3; i++) {
    if (!strcasecmp(s, yes[i])) return *out = true, 0;
    if (!strcasecmp(s, no[i])) return *out = false, 0;
  }
  return -1;
}

static int enum_has(const char *choices, const char *v) {
  size_t n = strlen(v);
  if (n == 0) return 0;
  for (const char *p = choices; *p;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && !strncmp(p, v, n)) return 1;
    if (bar == NULL) break;
    p = bar + 1;
  }
  return 0;
}

/* Checks a string value against its row; returns NULL or what is wrong. */
static const char *str_problem(const pb__row_t *r, const char *v) {
  size_t n = strlen(v);
  if (r->type == PB__CT_ENUM)
    return enum_has(r->choices, v) ? NULL : "is not one of";
  if ((int64_t)n < r->imin) return "is too short: allowed";
  if ((int64_t)n > r->imax) return "is too long: allowed";
  for (const char *p = v; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (r->type == PB__CT_NAME) {
      if (!isalnum(ch) && ch != '.' && ch != '_' && ch != '-')
        return "has a bad character: allowed";
    } else if (ch < 0x20 || ch > 0x7e) {
      return "has a non-printable or non-ASCII character: allowed";
    }
  }
  return NULL;
}

/* The text a YAML author would see for a value: quoted when it was. */
static int bad_value(pb_err_t *err, const char *loc, const pb__row_t *r,
                     const char *v, const char *what) {
  char range[128];
  pb__row_range(r, range, sizeof range);
  size_t n = strlen(v);
  return pb_err_set(err, PB_ECONFIG, "%s%s: value '%.*s%s' %s %s", loc, r->path,
                    PB__SHOW, v, n > PB__SHOW ? "..." : "", what, range);
}

/* Parses `v` for row r and stores it in *c. `quoted` says the YAML scalar
 * was quoted, which makes it a string: refused for numbers and bools. */
int pb__row_set(pb_config_t *c, const pb__row_t *r, const char *v, int quoted,
                const char *loc, pb_err_t *err) {
  char *field = (char *)c + r->off;
  if (quoted && r->type != PB__CT_STR && r->type != PB__CT_NAME &&
      r->type != PB__CT_ENUM)
    return bad_value(err, loc, r, v,
                     "is quoted (a string); write it without quotes: allowed");
  switch (r->type) {
    case PB__CT_INT:
    case PB__CT_INT64: {
      int64_t x;
      int rc = parse_int64(v, &x);
      if (rc == -1)
        return bad_value(err, loc, r, v, "is not an integer: allowed");
      if (rc == -2 || x < r->imin || x > r->imax)
        return bad_value(err, loc, r, v, "is out of range: allowed");
      if (r->type == PB__CT_INT) {
        int xi = (int)x;
        memcpy(field, &xi, sizeof xi);
      } else {
        memcpy(field, &x, sizeof x);
      }
      return 0;
    }
    case PB__CT_DOUBLE: {
      double x;
      if (parse_double(v, &x))
        return bad_value(err, loc, r, v, "is not a finite number: allowed");
      if (x < r->dmin || x > r->dmax)
        return bad_value(err, loc, r, v, "is out of range: allowed");
      memcpy(field, &x, sizeof x);
      return 0;
    }
    case PB__CT_BOOL: {
      bool x;
      if (parse_bool(v, &x))
        return bad_value(err, loc, r, v, "is not a bool: allowed");
      memcpy(field, &x, sizeof x);
      return 0;
    }
    case PB__CT_STR:
    case PB__CT_NAME:
    case PB__CT_ENUM: {
      const char *why = str_problem(r, v);
      if (why != NULL) return bad_value(err, loc, r, v, why);
      /* strncpy zero-fills the tail, which keeps memcmp meaningful. */
      strncpy(field, v, r->size);
      return 0;
    }
  }
  return pb_err_set(err, PB_EINVAL, "%s: bad schema row", r->path);
}

/* Formats the value of row r in the text form row_set accepts. */
int pb__row_format(const pb_config_t *c, const pb__row_t *r, char *buf,
                   size_t n) {
  const char *field = (const char *)c + r->off;
  int len = 0;
  switch (r->type) {
    case PB__CT_INT: {
      int x;
      memcpy(&x, field, sizeof x);
      len = snprintf(buf, n, "%d", x);
      break;
    }
    case PB__CT_INT64: {
      int64_t x;
      memcpy(&x, field, sizeof x);
      len = snprintf(buf, n, "%" PRId64, x);
      break;
    }
    case PB__CT_DOUBLE: {
      double x;
      memcpy(&x, field, sizeof x);
      /* The shortest form that reads back as the same double. */
      for (int prec = 15; prec <= 17; prec++) {
        len = snprintf(buf, n, "%.*g", prec, x);
        if (len < 0 || (size_t)len >= n || strtod(buf, NULL) == x) break;
      }
      break;
    }
    case PB__CT_BOOL: {
      bool x;
      memcpy(&x, field, sizeof x);
      len = snprintf(buf, n, "%s", x ? "true" : "false");
      break;
    }
    case PB__CT_STR:
    case PB__CT_NAME:
    case PB__CT_ENUM:
      len = snprintf(buf, n, "%.*s", (int)r->size, field);
      break;
  }
  return (len < 0 || (size_t)len >= n) ? -1 : 0;
}
