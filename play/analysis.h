/* analysis.h - one position as a person looks at it: the board drawn with
 * its coordinates, a move typed by a user, and what a checkpoint's networks
 * say about the position. Shared by `probs play` (its eval command) and
 * `probs analyze`.
 *
 * An analyser borrows a checkpoint's V and Q networks (pb_model_t) and owns
 * a beam searcher and its batched, cached evaluator (nn/neteval.h), set
 * up exactly as `probs search` sets up its own (one search at a time, the
 * same batch and cache sizes), so the beam values it prints are those of
 * `probs search --model` at the same E and M. Interactive use: evaluating a
 * position makes a few batch-1 network calls and may allocate inside
 * libtorch; nothing here is meant for hot loops.
 *
 * A pb_analysis_t is used by one thread at a time. */
#ifndef PB_ANALYSIS_H
#define PB_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

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

/* What the networks say about one non-terminal position. Values are from
 * the side to move, in the networks' range [-1, 1]. Entries of illegal
 * actions are 0. */
typedef struct pb_analysis_eval {
  int n_legal;                   /* legal actions, increasing */
  uint8_t legal[PB_MAX_ACTIONS];
  float v;                       /* V(s) */
  float q[PB_MAX_ACTIONS];       /* Q(s)[a] */
  float v1[PB_MAX_ACTIONS];      /* one ply: -V(child), or the mover's
                                  * result when the move ends the game */
  float beam[PB_MAX_ACTIONS];    /* beam-search values (has_beam) */
  int has_beam;                  /* 1 if the analyser searches (E > 0) */
  int best_q, best_v1, best_beam; /* argmax over the legal actions, ties to
                                   * the lowest (NaN counts as -inf); -1 for
                                   * best_beam without a search */
} pb_analysis_eval_t;

/* An analyser of l's game with l's networks (borrowed: l must outlive it).
 * E = expansions, M = depth limit of the beam search (E = 0: no search;
 * else E >= 1 and M >= 1, PB_EINVAL otherwise). NULL with err filled. */
pb_analysis_t *pb_analysis_new(pb_model_t *l, int E, int M, pb_err_t *err);

/* Frees the analyser (not the networks); accepts NULL, nulls *a. */
void pb_analysis_destroy(pb_analysis_t **a);

/* Evaluates the non-terminal position s into *out. Returns 0, PB_EINVAL
 * if s is terminal, or the networks' error (PB_ENN). */
int pb_analysis_eval(pb_analysis_t *a, const pb_state_t *s,
                     pb_analysis_eval_t *out, pb_err_t *err);

#endif
