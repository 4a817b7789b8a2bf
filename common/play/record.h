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
 *   capped, termination ("normal": the moves or a turn cap ended it;
 *   "time": the side to move after the moves lost on time, the game
 *   unfinished and won by the other side; "adjudication": the game
 *   unfinished, its result given by a solver or a rule; "resignation":
 *   unfinished, a side resigned, any decisive result; "interrupted":
 *   unfinished, stopped by a signal, result "*"), date (when the game
 *   started, UTC, ISO 8601 "2026-11-28T20:50:01Z"), event, first_version
 *   and second_version (what played: "probs 0.1.0", an engine's GTP name
 *   and version), time_control ("10+0.1": base and increment in seconds),
 *   ms (per ply, the milliseconds the mover spent, null where not known:
 *   opening plies), evals (per ply, the mover's value estimate in [-1, 1]
 *   before its move, null where not known).
 *
 * Files of records are appended to, never truncated: pb_record_file_open
 * refuses a file that holds something other than records. */
#ifndef PB_RECORD_H
#define PB_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "bounds.h"
#include "err.h"
#include "game.h"
#include "json.h"
#include "jsonread.h"

#define PB_RECORD_FORMAT 1
#define PB_RECORD_NAME_MAX 512     /* a player's name, with its NUL */
#define PB_RECORD_MOVES_MAX PB_MAX_TURNS /* plies of one game (bounds.h) */
#define PB_RECORD_LINE_MAX (4u << 20) /* bytes of one line read back */
#define PB_RECORD_TEXT_MAX 256     /* event, versions, with the NUL */

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
  int resigned;      /* unfinished: a side resigned (a decisive result);
                        "termination":"resignation" */
  int interrupted;   /* unfinished: stopped by a signal, no result (result
                        0, written "*"); "termination":"interrupted" */
  int opening_plies; /* the first k plies were given, not chosen */
  int64_t round;     /* from 1; 0: not written */
  int64_t version;   /* -1: not written */
  int64_t iteration; /* -1: not written */
  int n_moves;
  const uint8_t *moves; /* the actions from the initial position, passes
                           included; borrowed (see pb_record_reader_next) */
  /* Headers ("" when not written). */
  char date[32];  /* when the game started: UTC, "2026-11-28T20:50:01Z" */
  char event[PB_RECORD_TEXT_MAX];
  char first_version[PB_RECORD_TEXT_MAX]; /* "probs 0.1.0", "Rhino 1.2" */
  char second_version[PB_RECORD_TEXT_MAX];
  char time_control[32]; /* "BASE+INC" in seconds, "10+0.1" */
  /* Per ply (n_moves entries each), borrowed like moves; NULL: none. */
  const int32_t *ms;  /* milliseconds the mover spent; < 0 not known */
  const float *evals; /* the mover's value estimate before the move, in
                         [-1, 1] from its side; NaN not known */
} pb_record_t;

/* Sets *r to an empty record of game g: no names, a draw, round 0,
 * version and iteration -1, no moves. */
void pb_record_init(pb_record_t *r, const pb_game_t *g);

/* Checks the record as pb_record_json does (below): 0, or PB_EINVAL
 * naming the fault. */
int pb_record_check(const pb_record_t *r, pb_err_t *err);

/* The record's "termination": "normal", "time", "adjudication",
 * "resignation" or "interrupted". */
const char *pb_record_termination(const pb_record_t *r);

/* The UTC date of UNIX time t as a record's "date" into buf (n >= 21):
 * "2026-11-28T20:50:01Z". */
void pb_record_date(double t, char *buf, size_t n);

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

/* pb_record_parse that also reads the per-ply "ms" and "evals" into ms
 * and evals (cap entries each; either NULL: that member is skipped), and
 * reads a GGF game (a line starting "(;", pb_record_ggf_parse) as well. */
int pb_record_parse_full(pb_jsonr_t *jr, const char *line, size_t len,
                         uint8_t *moves, int32_t *ms, float *evals, int cap,
                         pb_record_t *r, pb_err_t *err);

/* pb_record_parse_full of a JSON line only (record.c); the GGF reader is
 * pb_record_ggf_parse (record_ggf.c), and pb_record_parse_full picks
 * between them by the line's start (record_file.c). */
int pb_record_json_parse(pb_jsonr_t *jr, const char *line, size_t len,
                         uint8_t *moves, int32_t *ms, float *evals, int cap,
                         pb_record_t *r, pb_err_t *err);

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

/* An Othello record as a GGF game (one line, "(;GM[Othello]...;)";
 * record_ggf.c): the place PC[probs], the date DT (GGS's
 * "2026.11.28_20:50:01.GMT"), the players (PB black = first, PW white =
 * second), the time control TI ("00:10/00:00.1/": base/increment/
 * extension), the result as black's disc difference (RE[+4.000]; ":t"
 * lost on time, ":r" resigned, ":s" adjudicated, RE[?] unfinished), the
 * start board and the moves (passes as PA; "B[f5/0.1234/0.012]" with the
 * mover's evaluation in [-1, 1] and the seconds spent where known, either
 * left empty: "B[f5//0.012]"), without a newline, into *out (malloc'd,
 * the caller frees; its length in *len). Returns 0, PB_EUNSUPP for
 * another game, or pb_record_json's errors. */
int pb_record_ggf(const pb_record_t *r, char **out, size_t *len, pb_err_t *err);

/* Reads one GGF game (text[0..len): "(;GM[Othello]...;)", spaces around
 * it allowed) into *r, as pb_record_parse_full reads a JSON line: the
 * players, DT, TI, RE and the moves (with their times into ms, if not
 * NULL). An Othello game from the standard start only (GM[Othello],
 * TY[8], BO the start board). RE: a finished game's result must be the
 * one the moves give (the disc count is not checked); unfinished:
 * ":t" on time, ":r" resigned, ":s" or a bare score adjudicated, "?"
 * capped (a draw). Returns 0, or PB_ECORRUPT naming what is malformed (an
 * unclosed property or game, another game or board, a move that is not a
 * square or is illegal, a colour out of turn, a result the moves
 * contradict), PB_ERANGE past cap moves. */
int pb_record_ggf_parse(const char *text, size_t len, uint8_t *moves,
                        int32_t *ms, int cap, pb_record_t *r, pb_err_t *err);

/* pb_record_ggf_parse that also reads each move's evaluation, "sq/EVAL/
 * time", into evals (cap entries; NULL: skipped): a number in [-1, 1] as
 * pb_record_ggf writes it; NaN where there is none, or a number out of
 * [-1, 1] (another tool's scale, such as GGS's disc counts) or text. */
int pb_record_ggf_parse_full(const char *text, size_t len, uint8_t *moves,
                             int32_t *ms, float *evals, int cap,
                             pb_record_t *r, pb_err_t *err);

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

/* The round of the last record the file held when it was opened (its
 * "round", else the number of records before it and it; 0 for a file
 * that was empty or a GGF file): a writer that appends numbers its
 * games after it. */
int64_t pb_record_file_last_round(const pb_record_file_t *f);

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

/* Reads the next record into *r (blank lines are skipped; a line that
 * starts "(;" is a GGF game, so files of --record-ggf read too); r's
 * moves, ms and evals are the reader's and valid until the next call. Returns 1 for a record, 0 at
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
