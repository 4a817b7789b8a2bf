/* agent.h - players for any game: baselines and trained networks.
 *
 * An agent is made from a spec string, "kind" or "kind:arg":
 *   random        a uniformly random legal move;
 *   lookahead:K   K = 1..4: a depth-K negamax over the outcomes win (+1),
 *                 loss (-1), draw and unknown (0), then a uniformly random
 *                 choice among the moves of best value. lookahead:1 wins at
 *                 once when it can, else plays at random; lookahead:2 also
 *                 avoids moves after which the opponent wins at once;
 *                 lookahead:3 also plays a move that forces a win within 3
 *                 plies, and so on. The paper's n-step lookahead agents
 *                 (anchored at Elo 1000 random, 1183, 1501, 1603) are taken
 *                 to be lookahead:1..3: measured in Connect Four (400
 *                 games each, seed 1) the gaps are +189 (lookahead:1 over
 *                 random), +402 (2 over 1) and +140 (3 over 2), against the
 *                 paper's +183, +318 and +102.
 *   greedy        the move after which its material (game.h: Othello's
 *                 discs, Toguz Kumalak's kazna: the largest capture) leads
 *                 by the most, a move that wins at once first
 *                 and one that loses at once last; a uniformly random
 *                 choice among equals. Games with material only.
 *   alphabeta:D   D = 1..12: alpha-beta negamax to depth D with a
 *                 heuristic at the horizon, quicker wins preferred and a
 *                 uniformly random choice among equally good moves.
 *                 Connect Four and Tic-Tac-Toe: windows (counts of lines
 *                 still open for one side, weighted by how full they are),
 *                 center-first move order (Tic-Tac-Toe at D >= 9 plays
 *                 perfectly). Othello: the weighted piece counter of the
 *                 TD-learning study in ../shared/papers/004 (Fig. 3),
 *                 corners first. Toguz Kumalak: the kazna difference.
 *   uct:N[,c=X][,discount=0|1]  plain UCT (common/search/uct.h): N = 1..100000
 *                 simulations per move, each adding one node to a fresh
 *                 tree, the UCB1 tree policy with constant c (default
 *                 sqrt(2), results in {-1, 0, +1}), uniformly random
 *                 playouts to the end of the game (Toguz Kumalak: a draw at
 *                 max_turns, as in matches); plays the most visited move.
 *                 discount=1: the discounting heuristic (terminal payoffs
 *                 divided by their plies from the root; default 0). Every
 *                 game. Options are comma-separated, so in comma-separated
 *                 lists (eval.opponents, elo-calibrate --players) only the
 *                 bare uct:N fits.
 *   checkpoint:PATH  a trained network from a probs checkpoint file: greedy,
 *                 the legal move of highest Q (no noise, no search); ties
 *                 go to the lowest action, so it ignores its seed. The
 *                 checkpoint is read once, when the agent is made, onto the
 *                 CPU; each move is one batch-1 forward pass with one
 *                 libtorch thread (set on the thread that plays). The
 *                 checkpoint's game must be the agent's (PB_EMISMATCH
 *                 otherwise); an unreadable or corrupt file fails with
 *                 pb_ckpt_read's code (PB_EIO, PB_ECORRUPT) naming it.
 *   run:DIR@ITER  the same for DIR/checkpoints/ckpt-ITER (zero-padded to 6
 *                 digits: the networks after ITER iterations, 0 = the
 *                 untrained start); run:DIR takes the newest intact one.
 *   value:PATH    the checkpoint's V one ply deep: every legal move is
 *                 played and valued -V(child) (a move that ends the game:
 *                 its result); the best is played, ties to the lowest.
 *   beam:PATH[,E=N][,M=N]  the checkpoint's V and Q in the paper's beam
 *                 search (Algorithm 1, beam_search.h) with E expansions
 *                 (1..100000, default 30) and depth limit M (1..99,
 *                 default 3); plays the legal move of highest search
 *                 value, ties to the lowest. Network calls are batched
 *                 and cached within a move (and across the positions of
 *                 pb_agent_act_many).
 *   mcts:PATH[,N=n][,T=x][,c=x]  PUCT MCTS (mcts.h) with n simulations
 *                 (1..100000, default 100), c_puct c (0.001..100; default
 *                 the run's mcts.c_puct), the run's mcts.discount and no
 *                 noise; plays the most visited move, ties to the lowest.
 *                 An AlphaZero checkpoint (algorithm: alphazero) gives
 *                 its policy and value head; a PROBS checkpoint its V at
 *                 the leaves and priors softmax(Q / T) over the legal
 *                 moves (T 0.001..1000, default 1; a leaf costs a V and a
 *                 Q evaluation, both batched and cached as beam's).
 *                 Searches of the positions of pb_agent_act_many run
 *                 together.
 *   abnet:PATH[,nodes=N][,time=MS][,depth=D][,qplies=K][,batch=0|1]  a
 *                 PROBS checkpoint's V and Q in alpha-beta (abnet.h:
 *                 negamax with PVS, V at the horizon, Q to order moves, a
 *                 transposition table, iterative deepening): at most N
 *                 network evaluations per move (1..100000000, default
 *                 1000; with time= alone, no limit) and at most MS
 *                 milliseconds (default none), iterations up to depth D
 *                 (1..64, default 64); Q orders the nodes fewer than K
 *                 plies below the root (1..64, default 2); batch=1 (the
 *                 default) values the children of a node next to the
 *                 horizon in one V call. Plays the move of the deepest
 *                 completed iteration (none: the move of highest Q).
 *                 Deterministic without time=. One position at a time.
 *   bpip:PATH[,N=n][,sigma=x][,gulp=x]  a PROBS checkpoint's V in BPIP
 *                 search (bpip.h: Baum and Smith's best play for imperfect
 *                 players, ../shared/papers/002 section 2): every leaf a
 *                 distribution around V with spread sigma (0.01..4,
 *                 default 1: V's error on solved positions), the leaf of
 *                 greatest QSS relevance expanded next (gulp 0..0.5: that
 *                 share of the relevant leaves per round instead, default
 *                 0: one), at most n network evaluations per move
 *                 (1..100000, default 1000); plays the root move of
 *                 highest mean. An unknown setting is refused.
 *                 Deterministic. One position at a time.
 *   td:PATH[,depth=D]  an algorithm td checkpoint's linear evaluation in
 *                 a D-ply negamax (common/search/nply.h; 1..16, default the
 *                 td.ply it was trained at): the lowest action of
 *                 greatest value, deterministic, no network call.
 *                 Another algorithm's checkpoint: PB_EMISMATCH.
 *   gtp:COMMAND   an external engine that speaks the Go Text Protocol,
 *                 started as a child process (gtp.h, moves in its
 *                 notation): Othello engines such as gtp-rhino, or
 *                 `probs gtp --model CKPT` (gtp_engine.h) in any game. An
 *                 engine of another game refuses its boardsize (PB_EPROTO).
 *                 An engine that answers genmove with "resign"
 *                 resigns: PB_AGENT_RESIGN (below).
 *   AlphaZero checkpoints also play as checkpoint:/run: (the legal move of
 *   highest policy logit) and value: (the value head one ply deep); beam:,
 *   abnet: and bpip: refuse them (no V and Q), and so does mcts: with T=,
 *   with PB_EMISMATCH.
 *   td checkpoints (algorithm td) train V alone, their Q slot stays the
 *   untrained start: checkpoint:/run: play their V one ply deep (what
 *   value: plays), beam: refuses them (PB_EMISMATCH); td:, value:, abnet:
 *   (Q orders its moves) and bpip: play them.
 * Network agents (checkpoint, run, value, beam, mcts, abnet without
 * time=, bpip) are deterministic.
 * Every kind is deterministic for a given seed. Choosing a move allocates
 * nothing in our code (libtorch allocates inside a network's forward).
 *
 * Adding a kind: write a factory (pb_agent_factory_fn) that builds the
 * private state and returns pb_agent_wrap(...), declare it in agent_impl.h,
 * and add one line to the kinds table at the top of agent_kinds.c. The
 * kinds live in agent_baselines.c, agent_alphabeta.c, agent_uct.c,
 * agent_gtp.c, agent_net.c and agent_td.c.
 *
 * A pb_agent_t is used by one thread at a time. */
#ifndef PB_AGENT_H
#define PB_AGENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "abnet.h"
#include "err.h"
#include "game.h"
#include "model.h"

typedef struct pb_agent pb_agent_t;
struct pb_agent_info; /* pb_agent_info_t, below */

/* What a kind implements. `impl` is the kind's private state. */
typedef struct pb_agent_vtable {
  /* Chooses a move in the non-terminal position s, whose n >= 1 legal
   * actions are legal[0..n) (increasing). Returns one of them, or a
   * negative PB_E* code after filling err. Must not allocate. */
  int (*act)(void *impl, const pb_state_t *s, const uint8_t *legal, int n,
             pb_err_t *err);
  /* Restarts the agent's random stream from `seed` (NULL: nothing random). */
  void (*reseed)(void *impl, uint64_t seed);
  /* Frees impl (NULL: nothing to free). */
  void (*destroy)(void *impl);
  /* Optional (NULL: act is called per position): chooses moves for n >= 1
   * non-terminal positions at once, out[i] for s[i], the same moves act
   * would choose. Kinds with a network batch their forward passes here.
   * May allocate. */
  int (*act_batch)(void *impl, const pb_state_t *s, int n, int *out,
                   pb_err_t *err);
  /* Optional (NULL: none): what the last act found (pb_agent_info), for
   * position i of the last call; returns out->searched. */
  int (*info)(const void *impl, int i, struct pb_agent_info *out);
} pb_agent_vtable_t;

/* A match's time control as an agent hears it before a move: every side
 * starts a game with base_s seconds and gains inc_s after each of its
 * moves (Fischer); it has left_s now, and plays `color` (0 the side that
 * moves first, 1 the other). new_game: the agent's first move of a game. */
typedef struct pb_agent_clock {
  double base_s, inc_s;
  double left_s;
  int color;
  int new_game;
} pb_agent_clock_t;

/* Tells the agent the clock before its move. The gtp: kind passes it to
 * its engine: on a new game "time_settings BASE INC 1" ("time_settings
 * BASE 0 0" without increment: Canadian byo-yomi of INC seconds a move
 * once main time is out, the nearest to an increment GTP has), and
 * before every move "time_left COLOR LEFT 0", LEFT counting the
 * increments gained, so that an engine that spreads its time left over
 * the moves to come (as gtp_clock.h does) spends what a Fischer clock
 * gives; an engine that does not know time_settings (known_command) is
 * told nothing. Returns 0, PB_EUNSUPP for a kind that keeps no clock
 * (the built-in kinds, whose budgets the caller sets: gtp_timed.h), or
 * the kind's error (an engine that failed). */
int pb_agent_clock(pb_agent_t *a, const pb_agent_clock_t *c, pb_err_t *err);

/* A factory for one kind: `arg` is the text after "kind:" (NULL when the
 * spec has no colon). Returns NULL and fills err on a bad arg. */
typedef pb_agent_t *(*pb_agent_factory_fn)(const pb_game_t *g, const char *arg,
                                           uint64_t seed, pb_err_t *err);

/* Makes an agent for game g from `spec` (see above), its random stream
 * seeded from `seed`. Returns NULL and fills err on an unknown kind or a bad
 * argument; the message lists the valid kinds. The caller owns the agent. */
pb_agent_t *pb_agent_new(const pb_game_t *g, const char *spec, uint64_t seed,
                         pb_err_t *err);

/* Builds an agent from a kind's vtable and private state (for factories).
 * Takes ownership of impl: on failure (NULL, PB_ENOMEM) impl has already
 * been destroyed with vt->destroy. `name` is copied; it is what
 * pb_agent_name returns (usually the spec). */
pb_agent_t *pb_agent_wrap(const pb_game_t *g, const pb_agent_vtable_t *vt,
                          void *impl, const char *name, pb_err_t *err);

/* Chooses a move for the side to move in s. Returns a legal action >= 0;
 * PB_EINVAL if s is terminal (no legal move) or an argument is NULL;
 * PB_EILLEGAL if the kind returned an action that is not legal (a bug in
 * the kind, reported rather than played); or the kind's own error. */
int pb_agent_act(pb_agent_t *a, const pb_state_t *s, pb_err_t *err);

/* The spec of agent `spec` over the checkpoint `model` (may be NULL: spec
 * unchanged): the network kinds given without a path take it, "value" ->
 * "value:MODEL", "beam,E=10" -> "beam:MODEL,E=10" (checkpoint, value,
 * beam, mcts, abnet, bpip); any other spec is copied. Into buf (n bytes,
 * truncated). For commands that take --model and --agent. */
void pb_agent_spec_with_model(const char *spec, const char *model, char *buf,
                              size_t n);

/* The game of the checkpoint that a network agent's spec names
 * (checkpoint:, run:, value:, beam:, mcts:, abnet:, bpip:, td:; settings
 * after the path are skipped), or NULL when the spec names none or it
 * cannot be read (pb_agent_new then says why). Reads the checkpoint. For
 * commands whose game defaults to that of the agents' checkpoints. */
const pb_game_t *pb_agent_spec_game(const char *spec);

/* Chooses a move in each of the n non-terminal positions s[0..n): out[i]
 * is what a fresh agent reseeded with pb_mix64(seed + i) would play in
 * s[i] (network agents ignore the seed). Kinds with act_batch answer in
 * batches. Returns 0, PB_EINVAL for a terminal position (naming its
 * index), PB_EILLEGAL for an illegal choice, or the kind's error. Leaves
 * the agent's random stream reseeded. */
int pb_agent_act_many(pb_agent_t *a, const pb_state_t *s, int n,
                      uint64_t seed, int *out, pb_err_t *err);

/* Network evaluations the agent has made since it was made: positions run
 * through one network (a beam:, abnet: or PROBS mcts: agent's V and Q
 * calls count separately, cache hits not at all; an AlphaZero mcts:
 * agent's policy+value calls once each);
 * 0 for agents without a network. Compares search budgets. */
uint64_t pb_agent_evaluations(const pb_agent_t *a);

/* Bounds the time of each later pb_agent_act / pb_agent_act_many call of
 * a network agent to ms milliseconds (0: no bound, the default): abnet:
 * stops there as at its time= and plays its deepest completed iteration;
 * beam:, mcts: and bpip: fail with PB_ERANGE ("the search passed its time
 * bound of MS ms") at their first network call past it; checkpoint:,
 * value: make one call a chunk of positions and are not stopped. Returns 0,
 * PB_EUNSUPP for the other kinds (their budgets bound them: uct:N, the
 * baselines, td:'s depth, gtp: engines), PB_EINVAL for ms < 0. */
int pb_agent_set_time_bound(pb_agent_t *a, int ms);

/* Later pb_agent_act / pb_agent_act_many calls of a network agent stop
 * while *stop is nonzero (NULL: never; borrowed: it must outlive the
 * agent's calls; another thread or a signal handler may set it): abnet
 * plays its deepest completed iteration (depth 0: the best Q), beam:,
 * mcts: and bpip: fail with PB_EINTR ("the search was stopped") at their
 * next network call. Returns 0, PB_EUNSUPP for the other kinds (as
 * pb_agent_set_time_bound), PB_EINVAL for a NULL agent. */
int pb_agent_set_stop(pb_agent_t *a, const atomic_int *stop);

/* What the search of a network agent found for position i of its last
 * pb_agent_act_many call (pb_agent_info). searched 0 (and the rest but
 * valued and value 0): no such search (a kind that does not search or
 * does not report one: beam, bpip, checkpoint, value, the baselines; i
 * out of range). valued: every network kind (and alphabeta: when its
 * search proved a win or a loss, and uct:) gives its value of the
 * position, what game records keep as the mover's evaluation. */
#define PB_AGENT_MAX_PV 64
typedef struct pb_agent_info {
  int valued;      /* 1: value is the agent's, in [-1, 1]: the value of
                      the move it chose for the side to move (checkpoint:
                      its Q, value: -V of the child, beam: the search's
                      value, bpip: its mean; mcts, abnet: as below;
                      alphabeta: +1 / -1 for a proven win / loss; uct:
                      the move's mean result) */
  int searched;    /* 1: the fields below are the search's */
  uint64_t visits; /* mcts: the root's visits (its simulations); abnet:
                      the positions it searched */
  float value;     /* the root's value for the side to move: mcts's mean
                      value, abnet's negamax value at `depth` */
  int depth;       /* abnet: the deepest completed iteration; mcts: 0 */
  int pv_len;      /* the principal variation: abnet's, from the move it
                      plays; mcts: the move only */
  uint8_t pv[PB_AGENT_MAX_PV];
  float move_visits[PB_MAX_ACTIONS]; /* mcts: each move's visits; 0 else */
} pb_agent_info_t;

/* Fills *out for position i of the agent's last call (zeroed when there
 * is none) and returns out->searched. For the kinds that are not network
 * agents, i is 0 and the last call pb_agent_act. */
int pb_agent_info(const pb_agent_t *a, int i, pb_agent_info_t *out);

/* What an agent's act returns when it resigns instead of moving (a gtp:
 * engine answering genmove with "resign"), err naming it: the game is
 * lost by the side to move (pb_match_play records it so). Not a PB_E*
 * code: pb_strerror does not know it. */
#define PB_AGENT_RESIGN (-1000)

/* Reports during a search: later calls of an abnet: or mcts: agent call
 * fn(ctx, i, partial) every `every` seconds (at most; the first `every`
 * seconds after the call starts), with what the search of position i of
 * the call found so far (abnet: its deepest completed iteration, mcts:
 * the root's visits, the most visited as pv[0]); fn must not use the
 * agent. fn NULL: none (the default). Returns 0, PB_EINVAL (fn with
 * every <= 0), PB_EUNSUPP for the other kinds. */
typedef void (*pb_agent_progress_fn)(void *ctx, int i,
                                     const pb_agent_info_t *partial);
int pb_agent_set_progress(pb_agent_t *a, pb_agent_progress_fn fn, void *ctx,
                          double every);

/* 1 if the agent's kind answers many positions in batches (act_batch),
 * else 0. */
int pb_agent_batched(const pb_agent_t *a);

/* Restarts the agent's random stream: after pb_agent_reseed(a, x) the agent
 * plays exactly as a fresh pb_agent_new(g, spec, x). */
void pb_agent_reseed(pb_agent_t *a, uint64_t seed);

/* The agent's name (its spec, e.g. "lookahead:3"); valid while a lives. */
const char *pb_agent_name(const pb_agent_t *a);

/* What plays, for records: "probs VERSION" for the built-in kinds, a
 * gtp: engine's answers to GTP's name and version ("Rhino 2.1"; "gtp
 * engine" when it answers neither); valid while a lives. */
const char *pb_agent_version(const pb_agent_t *a);

/* The game the agent plays. */
const pb_game_t *pb_agent_game(const pb_agent_t *a);

/* Writes the list of valid spec forms ("random, lookahead:K (K = 1..4),
 * ...") into buf (NUL-terminated, truncated to n); returns its length.
 * PB_AGENT_KINDS_MAX bytes hold the whole list. */
#define PB_AGENT_KINDS_MAX 1024
int pb_agent_kinds(char *buf, size_t n);

/* The networks of a network agent (checkpoint, run, value, beam, mcts, abnet,
 * bpip), borrowed: valid while a lives, used by the thread that uses a. *E and
 * *M (either may be NULL) receive a beam agent's search settings, 0 for the
 * other kinds. NULL (and *E = *M = 0) for agents without networks. */
pb_model_t *pb_agent_networks(const pb_agent_t *a, int *E, int *M);

/* The search a network agent makes (pb_agent_search_of). */
enum {
  PB_AGENT_SEARCH_NONE = 0, /* checkpoint, run, value: no search */
  PB_AGENT_SEARCH_BEAM = 1,
  PB_AGENT_SEARCH_ABNET = 2,
  PB_AGENT_SEARCH_MCTS = 3
};
typedef struct pb_agent_search {
  int kind;           /* PB_AGENT_SEARCH_* */
  int E, M;           /* beam: expansions and depth limit */
  pb_abnet_opts_t ab; /* abnet: its options, budgets as given */
  int N;              /* mcts: simulations */
  double c;           /* mcts: the c_puct it searches with */
  double T;           /* mcts over a PROBS checkpoint: the temperature of
                         softmax(Q / T) */
} pb_agent_search_t;

/* The networks of a network agent, as pb_agent_networks, and the search it
 * makes into *s (may be NULL; zeroed with kind NONE for the agents without
 * networks and those that do not search). */
pb_model_t *pb_agent_search_of(const pb_agent_t *a, pb_agent_search_t *s);

/* Frees the agent; accepts NULL and sets *a to NULL. */
void pb_agent_destroy(pb_agent_t **a);

/* The legal action (of legal[0..n)) of highest value in v, indexed by
 * action: ties go to the first in legal, NaN counts as -inf. What every
 * network agent plays. */
int pb_agent_argmax_legal(const float *v, const uint8_t *legal, int n);

#endif
