/* testset.h - solved test sets: positions with the exact outcome of every
 * move, and the share of optimal moves an agent finds on them.
 *
 * A test set is a text file, one position per line:
 *
 *     # probs testset game=connect4
 *     # any other comment line
 *     4453625 LDLWLLL
 *
 * The first line names the game. Each position line is the moves from the
 * start in the game's notation ("-" for the start itself), a space, and one
 * label per action of the game: W (playing it wins with perfect play), D
 * (draws), L (loses) or . (illegal there). The labels must agree with the
 * position's legal moves. A move is optimal when its label is the best
 * label of the line; the shipped sets hold only positions where that is
 * not every legal move ("the choice matters").
 *
 * The sets shipped in data/<game>-testset.txt are compiled into the
 * program (pb_testset_builtin); scripts/make-testsets.sh rebuilds them with
 * `probs testset`. */
#ifndef PB_TESTSET_H
#define PB_TESTSET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "game.h"

typedef struct pb_testset pb_testset_t;

/* Labels: the outcome of a move for the side that plays it. */
enum { PB_TS_LOSS = -1, PB_TS_DRAW = 0, PB_TS_WIN = 1, PB_TS_ILLEGAL = -2 };

/* Parses the text of a test set for game g (`name` is used in messages).
 * NULL with err filled: PB_ECORRUPT naming the line (a header that is not
 * "# probs testset game=NAME", bad moves, a label of the wrong length or
 * that disagrees with the legal moves, a finished position), PB_EMISMATCH
 * for a set of another game, PB_ENOMEM. A set with no position is
 * PB_ECORRUPT too. */
pb_testset_t *pb_testset_parse(const char *text, size_t len, const char *name,
                               const pb_game_t *g, pb_err_t *err);

/* Reads and parses the file at path (PB_EIO if it cannot be read; files
 * over 64 MiB are refused with PB_ERANGE). */
pb_testset_t *pb_testset_load(const char *path, const pb_game_t *g,
                              pb_err_t *err);

/* The set shipped for g (data/<game>-testset.txt, compiled in), or NULL
 * with PB_ENOTFOUND if there is none for g. */
pb_testset_t *pb_testset_builtin(const pb_game_t *g, pb_err_t *err);

/* path NULL or "" or "builtin": pb_testset_builtin; else pb_testset_load. */
pb_testset_t *pb_testset_open(const char *path, const pb_game_t *g,
                              pb_err_t *err);

/* Frees the set; accepts NULL and sets *t to NULL. */
void pb_testset_destroy(pb_testset_t **t);

const pb_game_t *pb_testset_game(const pb_testset_t *t);
size_t pb_testset_count(const pb_testset_t *t);
/* Where the set came from ("builtin:connect4" or the path). */
const char *pb_testset_name(const pb_testset_t *t);

/* Position i (< count) and its labels (num_actions entries, PB_TS_*). */
const pb_state_t *pb_testset_state(const pb_testset_t *t, size_t i);
const int8_t *pb_testset_labels(const pb_testset_t *t, size_t i);

/* 1 if playing `action` in position i keeps its best outcome, else 0
 * (an illegal or out-of-range action is not optimal). */
int pb_testset_optimal(const pb_testset_t *t, size_t i, int action);

/* The share of positions where actions[i] is optimal (0 for an empty
 * set). */
double pb_testset_score(const pb_testset_t *t, const int *actions);

/* Writes one position line ("MOVES LABELS\n") for the position reached by
 * `moves` (actions from the start, n of them) with labels[num_actions]. */
int pb_testset_write_line(FILE *f, const pb_game_t *g, const uint8_t *moves,
                          int n, const int8_t *labels, pb_err_t *err);

#endif
