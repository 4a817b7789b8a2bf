/* analysis.h - one position as a person looks at it: the board drawn with
 * its coordinates, a move typed by a user, and what a checkpoint's networks
 * say about the position. Shared by `probs play` (its eval command) and
 * `probs analyze`.
 *
 * An analyser borrows a checkpoint's networks (pb_model_t). For a PROBS
 * checkpoint (V and Q) it owns a beam searcher, an alpha-beta searcher
 * (common/search/abnet.h) and their batched, cached evaluator (common/nn/neteval.h), set
 * up as `probs search` sets up its own (one search at a time, the same
 * batch and cache sizes), so the beam values it prints are those of
 * `probs search --model` at the same E and M, and alpha-beta's move is
 * what the abnet: agent of the same options plays. For an AlphaZero
 * checkpoint (one policy+value network) it owns a PUCT MCTS (common/search/
 * mcts.h) over that network, set up as the mcts: agent sets up its own
 * (no noise, the checkpoint's c_puct and discount), so the move it picks
 * is that agent's. Interactive use: evaluating a position makes a few
 * network calls and may allocate inside libtorch; nothing here is meant
 * for hot loops.
 *
 * A pb_analysis_t is used by one thread at a time. */
#ifndef PB_ANALYSIS_H
#define PB_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "abnet.h"
#include "err.h"
#include "game.h"
#include "model.h"

/* Draws s into buf (NUL-terminated, truncated to n; 1024 bytes hold any
 * board here) with the coordinates a user types: the game's own render,
 * which shows them for Connect Four (columns), Othello (a-h, 1-8) and Toguz
 * Kumalak (holes), and for Tic-Tac-Toe the cell numbers 1-9 beside the
 * board. Returns the length written. */
int pb_analysis_board(const pb_game_t *g, const pb_state_t *s, char *buf,
                      size_t n);

/* As pb_analysis_board, for a game in progress that reached s from prev
 * (NULL: none known): an Othello board also marks the last move's disc
 * ("[X]"), the legal moves of the side to move ("*"), and counts the discs
 * ("discs: X 3, O 1"); the other games are drawn as pb_analysis_board
 * draws them. Returns the length written. */
int pb_analysis_board_after(const pb_game_t *g, const pb_state_t *prev,
                            const pb_state_t *s, char *buf, size_t n);

/* The mark of the side to move in s, 'X' (the first player) or 'O', as
 * the boards draw them. */
char pb_analysis_side(const pb_game_t *g, const pb_state_t *s);

/* Reads one move typed by a user (surrounding blanks ignored, letters in
 * either case; Othello's pass also as "pa") for the side to move in s.
 * Moves are matched against the game's action_name, so they are written as
 * pb_game_t.parse reads them one at a time. Returns 0 and sets *action, or
 * fills err and returns PB_EINVAL (not the name of any move of this game)
 * or PB_EILLEGAL (a move of the game that is not legal here: a full
 * column, a taken cell, an empty hole, the game is over); both messages
 * name the text (lower-cased) and list the legal moves. */
int pb_analysis_parse_move(const pb_game_t *g, const pb_state_t *s,
                           const char *text, int *action, pb_err_t *err);

/* The result of the finished position s in words ("X wins", "O wins",
 * "draw") into buf; 0 if s is not terminal (buf then holds ""), else 1. */
int pb_analysis_result(const pb_game_t *g, const pb_state_t *s, char *buf,
                       size_t n);

typedef struct pb_analysis pb_analysis_t;

/* Writes the moves[0..n) in the game's notation, blank-separated, into buf
 * (NUL-terminated, truncated to size). Returns the length written. */
int pb_analysis_line(const pb_game_t *g, const uint8_t *moves, int n, char *buf,
                     size_t size);

/* What an analyser searches. A PROBS checkpoint (V and Q) can be searched
 * by beam search and by alpha-beta; an AlphaZero checkpoint (one
 * policy+value network) by PUCT MCTS. Settings of the other algorithm's
 * searches are ignored. */
typedef struct pb_analysis_opts {
  int E, M;           /* PROBS: beam search with E expansions (1..100000)
                       * and depth limit M (1..99); E = 0: none */
  int abnet;          /* PROBS: 1 = alpha-beta over V and Q (abnet.h)
                       * with `ab`, as the abnet: agent searches; 0: none */
  pb_abnet_opts_t ab; /* its options, checked by pb_abnet_new */
  int simulations;    /* AlphaZero: PUCT MCTS simulations, 1..100000 */
  double c_puct;      /* its c_puct (0.001..100); 0: the checkpoint's
                       * mcts.c_puct */
} pb_analysis_opts_t;

/* The defaults: no beam search; alpha-beta at pb_abnet_defaults (1000
 * evaluations, the abnet: agent's default: the best play-time search
 * measured over PROBS networks, docs/strength.md); 200 MCTS simulations
 * at the checkpoint's c_puct. */
void pb_analysis_defaults(pb_analysis_opts_t *o);

/* What the networks say about one non-terminal position. Values are from
 * the side to move, in the networks' range [-1, 1]. Entries of illegal
 * actions are 0. A PROBS checkpoint fills v, q, v1 and the searches asked
 * for; an AlphaZero one (alphazero = 1) v, p, v1 and the MCTS fields. */
typedef struct pb_analysis_eval {
  int n_legal;                   /* legal actions, increasing */
  uint8_t legal[PB_MAX_ACTIONS];
  int alphazero;                 /* 1: an AlphaZero checkpoint */
  float v;                       /* V(s), or the value head's value */
  float q[PB_MAX_ACTIONS];       /* Q(s)[a] (PROBS) */
  float p[PB_MAX_ACTIONS];       /* the policy's probability of a: softmax
                                  * of the logits over the legal moves; they
                                  * sum to 1 (AlphaZero) */
  float v1[PB_MAX_ACTIONS];      /* one ply: -V(child) (or -value head), or
                                  * the mover's result when the move ends
                                  * the game */
  float beam[PB_MAX_ACTIONS];    /* beam-search values (has_beam) */
  int has_beam;                  /* 1 if the analyser beam-searches */
  int has_abnet;                 /* 1 if it searches with alpha-beta */
  pb_abnet_result_t ab;          /* that search: move, value, depth,
                                  * evaluations, principal variation */
  int visits[PB_MAX_ACTIONS];    /* AlphaZero: the root's visit counts in
                                  * MCTS; they sum to `simulations` */
  int simulations;               /* AlphaZero: the MCTS's simulations */
  float mcts_value;              /* AlphaZero: the root's mean value */
  int best_q, best_v1, best_beam; /* argmax over the legal actions, ties to
                                   * the lowest (NaN counts as -inf); -1 for
                                   * best_beam without a search, best_q for
                                   * AlphaZero */
  int best_abnet;                 /* the move alpha-beta plays; -1: none */
  int best_policy, best_mcts;     /* AlphaZero: the policy's argmax and the
                                   * most visited move, ties to the lowest
                                   * (what mcts:CKPT,N=simulations plays);
                                   * -1 for PROBS */
} pb_analysis_eval_t;

/* An analyser of l's game with l's networks (borrowed: l must outlive it)
 * and the searches of *o (NULL: pb_analysis_defaults). NULL with err
 * filled: PB_EINVAL for a bad setting (naming it), PB_EUNSUPP for a
 * search the checkpoint cannot do (E > 0 on an AlphaZero checkpoint),
 * PB_ENOMEM. */
pb_analysis_t *pb_analysis_new(pb_model_t *l, const pb_analysis_opts_t *o,
                               pb_err_t *err);

/* Frees the analyser (not the networks); accepts NULL, nulls *a. */
void pb_analysis_destroy(pb_analysis_t **a);

/* Evaluates the non-terminal position s into *out. Returns 0, PB_EINVAL
 * if s is terminal, or the networks' error (PB_ENN). Each search starts
 * afresh (no cached values from earlier positions), so its result is that
 * of a fresh agent of the same settings. */
int pb_analysis_eval(pb_analysis_t *a, const pb_state_t *s,
                     pb_analysis_eval_t *out, pb_err_t *err);

#endif
