/* gtp.h - a client for engines that speak the Go Text Protocol over a pipe,
 * and the notation of moves over GTP in each game.
 *
 * Used by the gtp:COMMAND agent (agent.h) to play against external
 * engines such as Debian's gtp-rhino (Othello; packages grhino and
 * grhino-data) or `probs gtp` (any game; gtp_engine.h). A handful of
 * commands per move; nothing here is on a hot path.
 *
 * The engine is started without a shell: COMMAND is split on blanks into a
 * program and its arguments; a program without a '/' is looked up in PATH
 * and then in /usr/games (where Debian puts game engines). Its stdin and
 * stdout are pipes to us, its stderr goes to /dev/null.
 *
 * Every command waits at most timeout_ms for the complete answer (GTP: a
 * line starting with '=' or '?', ending with an empty line). The engine
 * is untrusted: an engine that exits, closes its pipe, answers with
 * anything but '=' or '?', answers too much (over PB_GTP_REPLY_MAX bytes)
 * or too late is a PB_EPROTO error naming the engine and the command, never
 * a hang or a signal (SIGPIPE is held back while we write). After such an
 * error the client is dead: every later command fails at once.
 *
 * A pb_gtp_t is used by one thread at a time. */
#ifndef PB_GTP_H
#define PB_GTP_H

#include <stddef.h>

#include "err.h"
#include "game.h"

#define PB_GTP_REPLY_MAX 8192 /* longest accepted answer, bytes */

typedef struct pb_gtp pb_gtp_t;

/* Starts the engine. Returns NULL and fills err: PB_ENOTFOUND when the
 * program is not found (the message names it, and for gtp-rhino the
 * Debian packages that provide it), PB_EINVAL for an empty command,
 * PB_EIO when it cannot be started. */
pb_gtp_t *pb_gtp_new(const char *command, int timeout_ms, pb_err_t *err);

/* Sends one command line (no newline) and reads the answer. On '=' copies
 * the answer's text (without "= " and trailing blanks, lines joined by
 * '\n') into reply (NUL-terminated, truncated to n; reply may be NULL) and
 * returns 0. On '?' returns PB_EPROTO with the engine's message in err.
 * Engine failures as above: PB_EPROTO. */
int pb_gtp_cmd(pb_gtp_t *g, const char *cmd, char *reply, size_t n,
               pb_err_t *err);

/* The command the client was made with (for messages). */
const char *pb_gtp_command(const pb_gtp_t *g);

/* Sends "quit", closes the pipes, waits up to a second for the engine and
 * kills it if it is still running; accepts NULL and nulls *g. */
void pb_gtp_destroy(pb_gtp_t **g);

/* ---- The notation (both sides: the gtp: agent and gtp_engine.h) --------
 * A move is the game's action name (game.h action_name), read in either
 * case:
 *   othello    a square, column letter a-h and row 1-8 ("d3"), or "pass"
 *   connect4   a column number 1-7
 *   tictactoe  a cell number 1-9, in reading order
 *   toguz      one of the mover's hole numbers 1-9
 * Black is the side that moves first ('X' in render), white the second. */

/* The one size `boardsize` accepts in g: 8 (othello), 7 (connect4: the
 * columns of its 7 x 6 board), 3 (tictactoe), 9 (toguz: holes a side). */
int pb_gtp_board_size(const pb_game_t *g);

/* The action of g that `text` names (either case, nothing around it), in
 * 0..num_actions-1 (legal or not), or PB_EINVAL. */
int pb_gtp_parse_move(const pb_game_t *g, const char *text);

#endif
