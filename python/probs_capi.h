/* probs_capi.h - the C API of libprobs.so, what the Python package
 * (python/probs, docs/python.md) calls through ctypes.
 *
 * A thin layer over the modules: games (common/games/game.h), models
 * (common/nn/model.h with the evaluators of neteval.h and pveval.h),
 * agents (common/play/agent.h), matches (common/play/match.h, with
 * common/rating's Elo and SPRT) and the analysis engine
 * (common/play/engine.h). It adds no logic of its own: each function
 * checks its arguments, calls the module and passes its answer on in plain
 * C types, so that ctypes needs no struct but these two:
 *   - a position is pb_state_t, PB_STATE_WORDS (4) uint64 words, copied by
 *     value (the caller owns the memory);
 *   - an error is pb_err_t: an int code (0 or a negative PB_E*) and a
 *     message of PB_ERR_MSG_MAX (512) bytes. Every function that can fail
 *     takes one (NULL accepted) and returns its code, or NULL for the
 *     constructors.
 * Handles (model, agent, engine) are opaque pointers, freed by their
 * _close function, which accepts NULL (by value, not the house's
 * pb_x_destroy(&p): the caller across an FFI holds a handle as a plain
 * integer and forgets it itself). Games are static tables, never freed.
 * pb_capi_sizes lets the caller check the layout it assumes.
 *
 * Threads: a handle is used by one thread at a time (the modules' rule);
 * different handles may be used by different threads. */
#ifndef PB_CAPI_H
#define PB_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "game.h"

/* The ABI the caller assumes: sizeof(pb_state_t), sizeof(pb_err_t),
 * PB_MAX_ACTIONS and PB_ERR_MSG_MAX, in that order into out[4]. Returns
 * the API's version (1). */
int pb_capi_sizes(int out[4]);

/* The library's version string ("0.39.0"). */
const char *pb_capi_version(void);

/* pb_err_name and pb_strerror of a code. */
const char *pb_capi_err_name(int code);
const char *pb_capi_strerror(int code);

/* ---- games ------------------------------------------------------------- */

/* The game named `name`, or NULL with err naming the known games. */
const pb_game_t *pb_capi_game(const char *name, pb_err_t *err);
/* The known games' names, comma-separated. */
const char *pb_capi_game_names(void);
const char *pb_capi_game_name(const pb_game_t *g);
/* out[7]: id, num_actions, planes, height, width, max_turns, state_bytes. */
void pb_capi_game_info(const pb_game_t *g, int out[7]);

void pb_capi_reset(const pb_game_t *g, pb_state_t *s);
/* The legal actions, increasing, into out[PB_MAX_ACTIONS]; returns how many
 * (0: the game is over). */
int pb_capi_legal(const pb_game_t *g, const pb_state_t *s, uint8_t *out);
/* pb_game_step_checked: plays a legal action in *s (unchanged on error),
 * the mover's reward into *reward, whether the game ended into *done. */
int pb_capi_play(const pb_game_t *g, pb_state_t *s, int action, float *reward,
                 int *done, pb_err_t *err);
/* 1 if the game is over in s (*reward: the result for the side to move),
 * else 0. */
int pb_capi_terminal(const pb_game_t *g, const pb_state_t *s, float *reward);
/* The network input planes of s, planes*height*width floats, into out. */
void pb_capi_encode(const pb_game_t *g, const pb_state_t *s, float *out);
/* The position after the moves `moves` in the game's notation from the
 * start ("4453"; g->parse), into *s (unchanged on error). */
int pb_capi_parse(const pb_game_t *g, pb_state_t *s, const char *moves,
                  pb_err_t *err);
/* One move as a user types it ("4", "f5", "pass") for the side to move in
 * s: its action into *action (pb_analysis_parse_move). */
int pb_capi_parse_move(const pb_game_t *g, const pb_state_t *s,
                       const char *text, int *action, pb_err_t *err);
/* The name of an action ("4" for Connect Four's action 3) into buf; returns
 * its length, or PB_EINVAL for an action out of range. */
int pb_capi_action_name(const pb_game_t *g, int action, char *buf, size_t n);
/* The board with its coordinates (pb_analysis_board) into buf (1024 bytes
 * hold any); returns the length. */
int pb_capi_render(const pb_game_t *g, const pb_state_t *s, char *buf,
                   size_t n);
uint64_t pb_capi_hash(const pb_game_t *g, const pb_state_t *s);
int pb_capi_ply(const pb_game_t *g, const pb_state_t *s);
/* The mark of the side to move: 'X' (the first player) or 'O'. */
int pb_capi_side(const pb_game_t *g, const pb_state_t *s);
/* The compact wire form (state_bytes bytes) and its strict inverse. */
void pb_capi_pack(const pb_game_t *g, const pb_state_t *s, uint8_t *out);
int pb_capi_unpack(const pb_game_t *g, pb_state_t *s, const uint8_t *in,
                   size_t len, pb_err_t *err);
/* pb_game_perft and pb_game_count_games. */
uint64_t pb_capi_perft(const pb_game_t *g, const pb_state_t *s, int depth);
uint64_t pb_capi_count_games(const pb_game_t *g, const pb_state_t *s,
                             int depth);

/* ---- models ------------------------------------------------------------ */

typedef struct pb_capi_model pb_capi_model_t;

/* Opens a checkpoint or model file (pb_model_open) on `device` (NULL: the
 * stored config's; "cpu", "cuda", "auto"). NULL with err filled. */
pb_capi_model_t *pb_capi_model_open(const char *path, const char *device,
                                    pb_err_t *err);
void pb_capi_model_close(pb_capi_model_t *m);
const pb_game_t *pb_capi_model_game(const pb_capi_model_t *m);
/* 1 for an AlphaZero model (one policy+value network, no V and Q). */
int pb_capi_model_alphazero(const pb_capi_model_t *m);
/* Iterations trained (the checkpoint's version). */
uint64_t pb_capi_model_version(const pb_capi_model_t *m);
/* The path it was opened from. */
const char *pb_capi_model_path(const pb_capi_model_t *m);
/* The stored config's algorithm ("probs", "alphazero", "td"). */
const char *pb_capi_model_algorithm(const pb_capi_model_t *m);
/* The family of its networks, as its file records it: "vq" (V and Q),
 * "pv" (one policy+value network) or "linear" (a linear evaluation V). */
const char *pb_capi_model_kind(const pb_capi_model_t *m);

/* V of the n positions s[0..n) into out[n], from the side to move, in
 * [-1, 1]: a PROBS or td model's V (batched and cached as the searches
 * ask for it, common/nn/neteval.h), an AlphaZero model's value head. */
int pb_capi_model_value(pb_capi_model_t *m, const pb_state_t *s, int n,
                        float *out, pb_err_t *err);
/* Q of the n positions into out[n * num_actions] (every action, legal or
 * not). An AlphaZero model has none: PB_EUNSUPP. */
int pb_capi_model_q(pb_capi_model_t *m, const pb_state_t *s, int n, float *out,
                    pb_err_t *err);
/* The logits the model's policy is the softmax of over the legal moves,
 * into out[n * num_actions]: an AlphaZero model's policy head, a PROBS
 * model's Q (what mcts: over it takes as priors at T = 1). */
int pb_capi_model_logits(pb_capi_model_t *m, const pb_state_t *s, int n,
                         float *out, pb_err_t *err);

/* The alpha-beta search of a PROBS model at s (not finished), as `probs
 * analyze` and the abnet: agent make it (common/play/analysis.h,
 * common/search/abnet.h): at most `nodes` network evaluations (0: the
 * default, 1000) and `time_ms` milliseconds (0: none). Sets *move, *value
 * (from the side to move), *depth (the deepest completed iteration),
 * *solved (1: value is the game's exact value), *evaluations, and the
 * principal variation pv[0..*pv_len) (room for 64). An AlphaZero or td
 * model: PB_EUNSUPP. */
int pb_capi_model_search(pb_capi_model_t *m, const pb_state_t *s,
                         uint64_t nodes, int time_ms, int *move, float *value,
                         int *depth, int *solved, uint64_t *evaluations,
                         uint8_t *pv, int *pv_len, pb_err_t *err);

/* ---- agents ------------------------------------------------------------ */

typedef struct pb_capi_agent pb_capi_agent_t;

/* An agent of game g from `spec` (agent.h: "lookahead:3",
 * "abnet:PATH,nodes=200"), its random stream seeded from seed. model (NULL:
 * none) is the checkpoint a network kind given without a path takes
 * ("abnet,nodes=200"; pb_agent_spec_with_model). Its moves may be given a
 * time budget: the search is sized to it as a GTP engine's is
 * (common/play/gtp_timed.h). NULL with err filled. */
pb_capi_agent_t *pb_capi_agent_new(const pb_game_t *g, const char *spec,
                                   const char *model, uint64_t seed,
                                   pb_err_t *err);
void pb_capi_agent_close(pb_capi_agent_t *a);
/* Its move in s (not finished) within about budget_ms milliseconds (< 0:
 * no time budget, the spec as given): a legal action >= 0, or a negative
 * code with err filled. */
int pb_capi_agent_act(pb_capi_agent_t *a, const pb_state_t *s,
                      int64_t budget_ms, pb_err_t *err);
/* The spec's moves in the n positions s[0..n) into out[n]
 * (pb_agent_act_many: batched for the network kinds that can). */
int pb_capi_agent_act_many(pb_capi_agent_t *a, const pb_state_t *s, int n,
                           uint64_t seed, int *out, pb_err_t *err);
/* Restarts the spec's agent's random stream. */
void pb_capi_agent_reseed(pb_capi_agent_t *a, uint64_t seed);
/* Network evaluations the spec's agent made so far (pb_agent_evaluations;
 * the agents remade for time budgets are not counted). */
uint64_t pb_capi_agent_evaluations(const pb_capi_agent_t *a);
/* Its spec, the model's path filled in. */
const char *pb_capi_agent_name(const pb_capi_agent_t *a);
/* 1 if a time budget sizes its search (abnet, mcts, beam, bpip). */
int pb_capi_agent_scales(const pb_capi_agent_t *a);
/* The spec that chose the last move (with the time budget's size). */
const char *pb_capi_agent_last_spec(const pb_capi_agent_t *a);
/* The valid spec forms (pb_agent_kinds) into buf; returns the length. */
int pb_capi_agent_kinds(char *buf, size_t n);

/* ---- matches ----------------------------------------------------------- */

/* The fields of out[] that pb_capi_match fills. */
enum {
  PB_CAPI_M_GAMES = 0,
  PB_CAPI_M_WINS,
  PB_CAPI_M_DRAWS,
  PB_CAPI_M_LOSSES,
  PB_CAPI_M_FIRST_WINS,
  PB_CAPI_M_FIRST_DRAWS,
  PB_CAPI_M_FIRST_LOSSES,
  PB_CAPI_M_SECOND_WINS,
  PB_CAPI_M_SECOND_DRAWS,
  PB_CAPI_M_SECOND_LOSSES,
  PB_CAPI_M_CAPPED,
  PB_CAPI_M_PLIES,
  PB_CAPI_M_SPRT,
  PB_CAPI_M_FIELDS
};

/* Plays a match of A (a_spec) against B (b_spec) in game g
 * (pb_match_play): `games` games (the most, with an SPRT), A first in the
 * even ones, seeded from seed, on `threads` threads (0: every CPU), the
 * first `random_plies` plies uniformly random. openings (NULL: none) is
 * the text of an openings file (one line of moves each,
 * pb_match_openings_parse). sprt (NULL: none) is {elo0, elo1, alpha, beta}:
 * the match stops when the test decides (common/rating/sprt.h).
 * Fills out[PB_CAPI_M_FIELDS] (the counts for A; out[PB_CAPI_M_SPRT] the
 * decision, PB_SPRT_*), elo[3] the Elo of A over B with its 95% interval
 * (pb_elo_diff) and, when sprt is given, *llr; outcomes (NULL: not kept)
 * receives A's result of each game played, +1, 0 or -1, in order
 * (room for `games`). */
int pb_capi_match(const pb_game_t *g, const char *a_spec, const char *b_spec,
                  int games, uint64_t seed, int threads, int random_plies,
                  const char *openings, const double *sprt, int *out,
                  double *elo, double *llr, int8_t *outcomes, pb_err_t *err);

/* ---- the analysis engine ----------------------------------------------- */

typedef struct pb_capi_engine pb_capi_engine_t;

/* Where the engine writes each answer line (engine.h's
 * pb_engine_emit_fn): one JSON object, len bytes, NUL-terminated. */
typedef int (*pb_capi_emit_fn)(void *ctx, const char *line, size_t len);

/* An analysis engine (engine.h, docs/analysis.md) over model m (borrowed:
 * it must outlive the engine), answering up to `batch` queries together,
 * each answer through emit(ctx, ...). NULL with err filled. */
pb_capi_engine_t *pb_capi_engine_new(pb_capi_model_t *m, int batch,
                                     pb_capi_emit_fn emit, void *ctx,
                                     pb_err_t *err);
void pb_capi_engine_close(pb_capi_engine_t *e);
/* One query line (JSON, without its newline): a bad one is answered at
 * once, a good one waits until the batch is full or flush. */
int pb_capi_engine_query(pb_capi_engine_t *e, const char *line, size_t n,
                         pb_err_t *err);
/* Answers every waiting query. */
int pb_capi_engine_flush(pb_capi_engine_t *e, pb_err_t *err);
/* The queries waiting for an answer. */
int pb_capi_engine_waiting(const pb_capi_engine_t *e);

#endif
