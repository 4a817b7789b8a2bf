/* gtp_engine.h - a Go Text Protocol (version 2) engine for any game: the
 * position, the commands, and an agent (agent.h) that answers genmove.
 * `probs gtp` (cli/cmd_gtp.c, docs/gtp.md) runs one over stdin/stdout, so
 * that GUIs, match managers and the gtp:COMMAND agent can play a network.
 *
 * Commands: protocol_version, name, version, known_command, list_commands,
 * quit, boardsize, clear_board, komi, play, genmove, undo, final_score,
 * showboard, time_settings, time_left. Moves and colors are in gtp.h's
 * notation (Othello "d3" and "pass", Connect Four columns 1-7, Tic-Tac-Toe
 * cells 1-9, Toguz Kumalak holes 1-9; black moves first). In detail:
 *   boardsize N   only the game's size (gtp.h pb_gtp_board_size: 8, 7, 3,
 *                 9) is accepted, and clears the board; any other N is
 *                 "? unacceptable size".
 *   komi X        accepted (a number) and ignored.
 *   play C M      C must be the side to move; M legal there ("? illegal
 *                 move" otherwise). Othello: when the side to move has no
 *                 move but to pass, play and genmove for the other color
 *                 imply that pass (engines and clients such as gtp-rhino
 *                 and the gtp: agent never send it); "play C pass" is
 *                 accepted when pass is C's only move, and once the game
 *                 is over as a no-op.
 *   genmove C     the agent's move for C, played and named. C must be the
 *                 side to move (after an implied Othello pass). Over:
 *                 Othello answers "pass" (nothing is played); the other
 *                 games fail with "game is over".
 *   undo          takes back the last play or genmove (with the pass it
 *                 implied), "? cannot undo" when there is none.
 *   final_score   "B+N", "W+N" or "0" once the game is over: N is the
 *                 disc (Othello) or kazna (Toguz Kumalak) difference, 1 in
 *                 the games without material; "? cannot score" before.
 *   showboard     the board as render draws it ('X' black, 'O' white),
 *                 then "black to move", "white to move" or the result.
 *   time_settings MAIN BYO STONES, time_left COLOR TIME STONES
 *                 the time control (gtp_clock.h): from them each genmove
 *                 has a time budget, which the engine's timed agent
 *                 (pb_gtp_engine_set_timed) sizes its search to; the
 *                 engine also charges each color with the time its
 *                 genmoves take, for controllers that send no time_left.
 *                 boardsize and clear_board start the clocks again.
 * Any other command is "? unknown command". Lines are read as GTP says:
 * control characters other than tab and newline dropped, '#' starts a
 * comment (a line that is only a comment, or empty, gets no response, as
 * long as it is), a numeric id echoed in the response ("=7 d3"). Nothing
 * in the input is trusted; every failure, the agent's own included, is a
 * one-line "? message" response and the engine goes on.
 *
 * A pb_gtp_engine_t is used by one thread at a time. */
#ifndef PB_GTP_ENGINE_H
#define PB_GTP_ENGINE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent.h"
#include "err.h"
#include "game.h"
#include "gtp_timed.h"

/* Longest command line read, newline included; a longer one is answered
 * "? command too long" (and the rest of it dropped). */
#define PB_GTP_ENGINE_LINE_MAX 4096
/* A reply buffer this large holds every response. */
#define PB_GTP_ENGINE_REPLY_MAX 2048

typedef struct pb_gtp_engine pb_gtp_engine_t;

/* An engine for game g (static) with `agent` (borrowed: it must outlive
 * the engine and be of game g) at the initial position. `version` (copied;
 * NULL: the agent's name) is what the version command answers; name
 * answers "probs". NULL + err: PB_EINVAL (NULL game or agent, an agent of
 * another game), PB_ENOMEM. */
pb_gtp_engine_t *pb_gtp_engine_new(const pb_game_t *g, pb_agent_t *agent,
                                   const char *version, pb_err_t *err);

/* Makes `t` (borrowed: it must outlive the engine; NULL: none) play
 * genmove in place of the agent, with each move's time budget (its
 * agent should be the engine's). Returns 0, or PB_EINVAL (a NULL engine,
 * a timed agent of another game). */
int pb_gtp_engine_set_timed(pb_gtp_engine_t *e, pb_gtp_timed_t *t,
                            pb_err_t *err);

/* The time budget in ms of color's (0 black, 1 white) move in the current
 * position (gtp_clock.h pb_gtp_clock_budget_ms), -1 under no time limit
 * or for a NULL engine. */
int64_t pb_gtp_engine_budget_ms(const pb_gtp_engine_t *e, int color);

/* Frees the engine (not its agent); accepts NULL and sets *e to NULL. */
void pb_gtp_engine_destroy(pb_gtp_engine_t **e);

/* Executes one line of input (with or without its newline) and writes
 * the whole response into reply (NUL-terminated, truncated to n; n of
 * PB_GTP_ENGINE_REPLY_MAX always suffices): "=[id] text\n\n" or
 * "?[id] message\n\n", or "" for an empty or comment line (no response).
 * Returns 1 after quit, else 0. */
int pb_gtp_engine_exec(pb_gtp_engine_t *e, const char *line, char *reply,
                       size_t n);

/* Reads commands from `in` line by line and writes each response to `out`,
 * flushed, until quit, the end of input, or *stop (may be NULL) is set:
 * it is checked before each line, and a read that a signal interrupts
 * (EINTR, as pb_entry_signals arranges) ends the loop when it is set.
 * Returns 0 then, or PB_EIO when `out` cannot be written (the controller
 * is gone) or `in` fails otherwise. */
int pb_gtp_engine_run(pb_gtp_engine_t *e, FILE *in, FILE *out,
                      const volatile sig_atomic_t *stop, pb_err_t *err);

/* The engine's position (valid until its next command). */
const pb_state_t *pb_gtp_engine_position(const pb_gtp_engine_t *e);

#endif
