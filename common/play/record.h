/* record.h - game records: one JSON line per game (docs/records.md), and
 * Othello's games also as GGF, the format of the Othello servers and
 * tools.
 *
 * A record line (the members in this order; unknown members are skipped
 * by readers, so the format can grow):
 *
 *   {"format":1,"game":"connect4","source":"match","round":3,
 *    "first":"lookahead:3","second":"random","result":"1-0","plies":13,
 *    "moves":"4453443555334","opening_plies":2,"capped":false}
 *
 * - game, first, second, result and moves are required; first is the
 *   player that moved first (X), second the other (O).
 * - result: "1-0" (the first player won), "0-1" (the second won) or
 *   "1/2-1/2", as in PGN. A game the moves finish must have the result the
 *   rules give; a game they leave unfinished was stopped at a turn cap
 *   ("capped":true) and counts as a draw, or lost on time by the side to
 *   move ("termination":"time").
 * - moves: the whole game from the initial position in the game's notation
 *   as `--position` takes it (Connect Four "4453", Tic-Tac-Toe "159",
 *   Othello "f5d6c3", Toguz Kumalak "7315"). Othello's passes are left
 *   out (a side with no move passes by itself), which makes the moves an
 *   Othello transcript.
 * - optional: format (1; a reader refuses a later one), source ("match",
 *   "eval", "selfplay"), round (the game's number in its set, from 1),
 *   version and iteration (checkpoint versions: the evaluator's rated
 *   version, self-play's Q version and iteration), plies (the number of
 *   moves, passes included: checked when given), opening_plies (the first
 *   k plies were not the players' choice: an opening or random plies),
 *   capped, termination ("time": the side to move after the moves lost
 *   on time, the game unfinished and won by the other side;
 *   "adjudication": the game unfinished, its result given by a solver).
 *
 * Files of records are appended to, never truncated: pb_record_file_open
 * refuses a file that holds something other than records. */
#ifndef PB_RECORD_H
#define PB_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "game.h"
#include "json.h"
#include "jsonread.h"

#define PB_RECORD_FORMAT 1
#define PB_RECORD_NAME_MAX 512     /* a player's name, with its NUL */
#define PB_RECORD_MOVES_MAX 100000 /* plies of one game (match --max-turns) */
#define PB_RECORD_LINE_MAX (4u << 20) /* bytes of one line read back */

/* One game. */
typedef struct pb_record {
  const pb_game_t *g;
  char source[16];                /* "" when not known */
  char first[PB_RECORD_NAME_MAX]; /* the player that moved first */
  char second[PB_RECORD_NAME_MAX];
  int result;        /* +1 the first player won, -1 the second, 0 a draw */
  int capped;        /* unfinished, stopped at a turn cap (result 0) */
  int time_loss;     /* unfinished: the side to move lost on time (result
                        the other's win); "termination":"time" */
  int adjudicated;   /* unfinished: scored by a solver or a rule, any
                        result; "termination":"adjudication" */
  int opening_plies; /* the first k plies were given, not chosen */
  int64_t round;     /* from 1; 0: not written */
  int64_t version;   /* -1: not written */
  int64_t iteration; /* -1: not written */
  int n_moves;
  const uint8_t *moves; /* the actions from the initial position, passes
                           included; borrowed (see pb_record_reader_next) */
} pb_record_t;

/* Sets *r to an empty record of game g: no names, a draw, round 0,
 * version and iteration -1, no moves. */
void pb_record_init(pb_record_t *r, const pb_game_t *g);

/* Writes the record's line (without a newline) into j, which is reset
 * first. Checks the record as a reader would: every move legal, the
 * result the rules give when the moves finish the game, and capped with a
 * draw when they do not. Returns 0, or PB_EINVAL (a NULL, an empty name, a
 * record that does not check, naming the fault), PB_ENOMEM. */
int pb_record_json(const pb_record_t *r, pb_json_t *j, pb_err_t *err);

/* Reads one record line (len bytes, no newline needed) with the JSON
 * reader jr into *r; r->moves then points into `moves` (cap entries), and
 * the names and the game are copied.
 * Returns 0, or PB_ECORRUPT with a message naming the member at fault
 * (not JSON, a required member missing or of the wrong kind, an unknown
 * game, moves that do not parse or are illegal, a result the moves
 * contradict, format later than this reader's), PB_ERANGE (more than cap
 * moves, a name too long), PB_ENOMEM. */
int pb_record_parse(pb_jsonr_t *jr, const char *line, size_t len,
                    uint8_t *moves, int cap, pb_record_t *r, pb_err_t *err);

/* The actions of a move string in g's notation from the initial
 * position, into moves[0..*n) (cap entries): each move is the legal
 * action whose name (g->action_name, either case) comes next, and a side
 * whose only legal action is "pass" passes whether the string says
 * "pass" (or "pa") or leaves it out. Returns 0, or PB_EINVAL naming the
 * index of a move that does not parse or is not legal there (a move after
 * the end of the game among them), PB_ERANGE past cap moves. */
int pb_record_moves_parse(const pb_game_t *g, const char *text, uint8_t *moves,
                          int cap, int *n, pb_err_t *err);

/* The move string of moves[0..n) (passes left out, but for a pass that
 * is the last move, which nothing after it implies) into buf (size cap,
 * NUL-terminated, truncated to fit); returns the length it needs, as
 * snprintf does. 5 bytes a move is always enough. */
size_t pb_record_moves_text(const pb_game_t *g, const uint8_t *moves, int n,
                            char *buf, size_t cap);

/* The moves of a self-play episode: states[0..n) are the positions
 * before each move (states[0] the initial position, as
 * pb_selfplay_check accepts them) and final_reward the last mover's
 * reward. The moves between the states are found from the rules; the last
 * move, which an episode does not carry, is the first legal move (in the
 * game's order) that ends the game with final_reward, or none when no
 * move does (an episode cut at the run's max_turns: *capped is then 1).
 * Fills moves[0..*n_moves) (cap entries, >= n) and *result (+1 / 0 / -1
 * for the first player). Returns 0, or PB_ECORRUPT for states that do not
 * follow each other, PB_ERANGE when cap < n. */
int pb_record_episode(const pb_game_t *g, const pb_state_t *states, int n,
                      int final_reward, uint8_t *moves, int cap, int *n_moves,
                      int *result, int *capped, pb_err_t *err);

/* An Othello record as a GGF game (one line, "(;GM[Othello]...;)"): the
 * players (PB black = first, PW white = second), the result as black's
 * disc difference (RE[+4.000]; RE[?] for an unfinished game), the start
 * board and the moves (passes as PA), without a newline, into *out
 * (malloc'd, the caller frees; its length in *len). Returns 0, PB_EUNSUPP
 * for another game, or pb_record_json's errors. */
int pb_record_ggf(const pb_record_t *r, char **out, size_t *len, pb_err_t *err);

/* ---- files ------------------------------------------------------------- */

enum { PB_RECORD_JSONL = 0, PB_RECORD_GGF = 1 };

typedef struct pb_record_file pb_record_file_t;

/* Opens `path` for appending records of kind PB_RECORD_JSONL or
 * PB_RECORD_GGF, creating it if needed; never truncates, and never
 * follows a symbolic link (one at path is refused, PB_EIO). A file that is
 * not empty must start with a record (a JSON line that pb_record_parse
 * reads, or "(;GM[Othello]"); otherwise it is refused with PB_ECORRUPT
 * naming it, and left as it is. A last line without its newline (a write
 * cut short) gets one before the first record. NULL with err filled
 * (PB_EIO naming the path and the reason, PB_ECORRUPT, PB_ENOMEM). */
pb_record_file_t *pb_record_file_open(const char *path, int kind,
                                      pb_err_t *err);

/* Appends r as one line, in one write(2) (so concurrent readers never see
 * half a line). Returns 0, or pb_record_json's / pb_record_ggf's errors,
 * PB_EIO. */
int pb_record_file_write(pb_record_file_t *f, const pb_record_t *r,
                         pb_err_t *err);

/* Closes the file and frees; accepts NULL and sets *f to NULL. */
void pb_record_file_close(pb_record_file_t **f);

/* ---- reading a file ---------------------------------------------------- */

typedef struct pb_record_reader pb_record_reader_t;

/* Opens the record file at path for reading: a regular file only (a
 * directory, a FIFO, a device such as /dev/zero, a socket are refused at
 * once, without a read, and opening a FIFO does not wait for a writer).
 * NULL with err filled (PB_EIO naming the path and the reason,
 * PB_ENOMEM). */
pb_record_reader_t *pb_record_reader_open(const char *path, pb_err_t *err);

/* Reads the next record into *r (blank lines are skipped); r's moves are
 * the reader's and valid until the next call. Returns 1 for a record, 0 at
 * the end of the file, or an error whose message starts "PATH:LINE: ":
 * pb_record_parse's, PB_ERANGE for a line longer than PB_RECORD_LINE_MAX
 * (refused once that many bytes are read: memory stays bounded whatever
 * the line's length), PB_EIO. */
int pb_record_reader_next(pb_record_reader_t *rd, pb_record_t *r,
                          pb_err_t *err);

/* The number of the line the last record came from (from 1). */
long pb_record_reader_line(const pb_record_reader_t *rd);

/* Frees the reader; accepts NULL and sets *rd to NULL. */
void pb_record_reader_destroy(pb_record_reader_t **rd);

/* Splits "FILE:N" into path (size cap) and *n, game N of the file (from
 * 1): N is the digits after the last colon; without them (no colon, or
 * something else after it) the whole spec is the path and *n is 1.
 * Returns 0, or PB_EINVAL naming the problem (N 0 or past 10^9, an empty
 * path, a path too long). */
int pb_record_spec(const char *spec, char *path, size_t cap, long *n,
                   pb_err_t *err);

#endif
