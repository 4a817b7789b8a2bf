/* game.h - the game interface: a table of functions per game.
 *
 * A position is a small transparent value (pb_state_t, 32 bytes) that is
 * copied and stepped in place; nothing here allocates. Games are exact:
 * each implementation is checked by perft counts in tests/.
 *
 * Conventions every game follows:
 * - Actions are integers in [0, num_actions). `legal` lists them in
 *   increasing order; a terminal position has none.
 * - `step` applies a legal action in place and returns the reward for the
 *   player who made the move (+1 win, 0 draw or not over, -1 loss); *done
 *   says whether the game ended with this move. Stepping an illegal action or
 *   stepping from a terminal position is undefined: use pb_game_step_checked
 *   for untrusted input.
 * - `encode` writes planes*height*width floats seen from the side to move
 *   (plane 0: the mover's stones, plane 1: the opponent's, then any extra
 *   planes the game defines).
 * - `pack`/`unpack` is the compact wire form (state_bytes bytes). `unpack`
 *   validates everything (a peer's bytes are untrusted) and fills err.
 * - Unused words of pb_state_t are zero, so two equal positions are equal
 *   byte for byte (memcmp) and hash equally.
 */
#ifndef PB_GAME_H
#define PB_GAME_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define PB_MAX_ACTIONS 72 /* enough for Othello (64 squares + pass) */
#define PB_STATE_WORDS 4

typedef struct pb_state {
  uint64_t w[PB_STATE_WORDS];
} pb_state_t;

enum {
  PB_GAME_CONNECT4 = 1,
  PB_GAME_TICTACTOE = 2,
  PB_GAME_OTHELLO = 3,
  PB_GAME_TOGUZ = 4,
};

typedef struct pb_game pb_game_t;

struct pb_game {
  const char *name;  /* "connect4", "tictactoe", ... */
  int id;            /* PB_GAME_* (travels in every message header) */
  int num_actions;   /* size of the Q head */
  int planes, height, width; /* network input shape */
  int state_bytes;   /* size of the packed form */
  int max_turns;     /* longest possible game (for buffers); Toguz
                      * Kumalak, which could go on forever, is stopped
                      * there (a draw) by matches and the evaluator */

  /* Sets *s to the initial position. */
  void (*reset)(pb_state_t *s);
  /* Writes the legal actions in increasing order; returns their count
   * (0 when the position is terminal). */
  int (*legal)(const pb_state_t *s, uint8_t *actions);
  /* Applies a legal action in place; returns the mover's reward, sets *done. */
  float (*step)(pb_state_t *s, int action, int *done);
  /* Returns 1 if the game is over in s and sets *reward to the result for
   * the player to move in s (a finished game is usually -1 or 0 for them). */
  int (*terminal)(const pb_state_t *s, float *reward);
  /* Network input planes from the side to move. */
  void (*encode)(const pb_state_t *s, float *out);
  /* Compact wire form: exactly state_bytes bytes. */
  void (*pack)(const pb_state_t *s, uint8_t *out);
  /* Strict inverse of pack: rejects wrong length and impossible positions. */
  int (*unpack)(pb_state_t *s, const uint8_t *in, size_t len, pb_err_t *err);
  /* 64-bit hash of the position (equal positions hash equally). */
  uint64_t (*hash)(const pb_state_t *s);
  /* Number of moves played so far. */
  int (*ply)(const pb_state_t *s);
  /* Human-readable board into buf (NUL-terminated, truncated to fit n);
   * returns the length written. 'X' is the first player, 'O' the second,
   * '.' an empty cell. 256 bytes hold any board of the games here. */
  int (*render)(const pb_state_t *s, char *buf, size_t n);
  /* Plays a move string from the initial position into *s
   * (Connect Four: column digits 1-7, "4453"; Tic-Tac-Toe: cell digits 1-9
   * in reading order; Othello: squares "f5d6c3", passes "pass" or left
   * out; Toguz Kumalak: the mover's hole numbers 1-9). Returns 0, or PB_EINVAL (a character that is not a
   * move) / PB_EILLEGAL (a full column, a taken cell, a move after the end
   * of the game) with a message naming the character index; *s is left
   * unchanged on error. */
  int (*parse)(pb_state_t *s, const char *moves, pb_err_t *err);
  /* Name of an action as users type it ("4" for Connect Four column 4,
   * i.e. action 3) into buf; returns its length or PB_EINVAL. */
  int (*action_name)(int action, char *buf, size_t n);
  /* The left-right mirror image of s into *out (a position of the same
   * value, since the rules are symmetric), and the image of an action:
   * playing mirror_action(a) in the image of s gives the image of playing
   * a in s. Both are involutions. NULL in games without the symmetry. */
  void (*mirror)(const pb_state_t *s, pb_state_t *out);
  int (*mirror_action)(int action);
  /* Material balance from the side to move: its count minus the
   * opponent's (Othello: discs; Toguz Kumalak: stones in the kazna). What
   * the greedy baseline maximises.
   * NULL in games without material (Connect Four, Tic-Tac-Toe). */
  int (*material)(const pb_state_t *s);
};

/* The game named `name` ("connect4"), or NULL. */
const pb_game_t *pb_game_by_name(const char *name);

/* The game with id `id`, or NULL. */
const pb_game_t *pb_game_by_id(int id);

/* Comma-separated list of known game names, for messages. */
const char *pb_game_names(void);

/* Checks that `action` is legal in *s, then steps. Returns 0 and sets
 * *reward and *done (either may be NULL), or PB_EILLEGAL with a message
 * naming the action (s is then unchanged). */
int pb_game_step_checked(const pb_game_t *g, pb_state_t *s, int action,
                         float *reward, int *done, pb_err_t *err);

/* Perft: the number of move sequences of exactly `depth` plies from s, as
 * in chess engines. A game that ends before `depth` plies (a win or a full
 * board) contributes nothing; a game that ends on the last ply counts.
 * depth <= 0 gives 1. Known answers from the empty board:
 *   Connect Four, depth 1..9: 7, 49, 343, 2401, 16807, 117649, 823536,
 *     5673234, 39394572 (depth 7 is 7^7 - 7: the 7 sequences that fill one
 *     column leave 6 moves; wins first happen at ply 7 and prune depth 8 on);
 *   Tic-Tac-Toe, depth 9: 127872 (the games that last all nine plies);
 *   Othello, depth 1..9: 4, 12, 56, 244, 1396, 8200, 55092, 390216,
 *     3005288, the standard counts (a pass is a ply of its own). From
 *     depth 10 on the convention shows: our depth 10 is 24571056, and the
 *     count published where a finished game stays a leaf at every greater
 *     depth, 24571284, adds the 228 games that end at ply 9. */
uint64_t pb_game_perft(const pb_game_t *g, const pb_state_t *s, int depth);

/* The number of distinct games from s that end (win, loss or draw) within
 * `depth` plies; 0 for depth <= 0. Tic-Tac-Toe from the empty board,
 * depth 9: 255168, the classic count of complete games. */
uint64_t pb_game_count_games(const pb_game_t *g, const pb_state_t *s,
                             int depth);

/* Helpers for the games' implementations. */

/* Copies text[0..len) into buf (n > 0 bytes), truncated to fit and
 * NUL-terminated; returns the length written (what render returns). */
int pb_game_text_out(char *buf, size_t n, const char *text, size_t len);

extern const pb_game_t pb_game_connect4;
extern const pb_game_t pb_game_tictactoe;
extern const pb_game_t pb_game_othello;
extern const pb_game_t pb_game_toguz;

#endif
