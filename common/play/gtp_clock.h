/* gtp_clock.h - the time control of a GTP engine (gtp_engine.h): what
 * `time_settings` and `time_left` say, the engine's own account of the
 * time it spends, and the time budget of its next move.
 *
 * GTP's time system (GTP 2, section 4.2) is Canadian byo-yomi:
 *   time_settings MAIN BYO STONES   MAIN seconds of main time, then BYO
 *                   seconds for every STONES moves. BYO = 0: absolute
 *                   time (MAIN for the game); BYO > 0 and STONES = 0: no
 *                   time limit (the state before any time_settings).
 *   time_left COLOR TIME STONES     COLOR has TIME seconds left: of main
 *                   time (STONES = 0), or for the STONES moves left in
 *                   the current byo-yomi period.
 * Seconds may have a fraction ("12.5"); no number may be negative.
 *
 * The budget of a move (pb_gtp_clock_budget_ms):
 *   in byo-yomi      TIME / STONES;
 *   in main time     TIME / MOVES_LEFT, plus BYO / STONES when byo-yomi
 *                    follows, MOVES_LEFT the mover's expected moves still
 *                    to play: half the plies an average game of the game
 *                    has left (Othello 60 plies, Connect Four 42,
 *                    Tic-Tac-Toe 9, Toguz Kumalak 160), at least
 *                    PB_GTP_CLOCK_MIN_MOVES;
 * of which PB_GTP_CLOCK_USE percent, less PB_GTP_CLOCK_RESERVE_MS for the
 * way to and from the controller, and at least 1 ms.
 *
 * A pb_gtp_clock_t is a plain struct, used by one thread. */
#ifndef PB_GTP_CLOCK_H
#define PB_GTP_CLOCK_H

#include <stdint.h>

#include "game.h"

/* The moves a budget in main time spreads the time left over, at least. */
#define PB_GTP_CLOCK_MIN_MOVES 8
#define PB_GTP_CLOCK_USE 90        /* percent of a move's share searched */
#define PB_GTP_CLOCK_RESERVE_MS 30 /* kept back on every move */
#define PB_GTP_CLOCK_MAX_S 1e7     /* the largest time accepted (s) */

typedef struct pb_gtp_clock {
  int limited;   /* 0: no time limit */
  int set;       /* time_settings was given */
  double main_s; /* the settings */
  double byo_s;
  int byo_stones;
  double left_s[2];   /* black, white: time left (main or period) */
  int stones_left[2]; /* 0: in main time; else moves left in the period */
} pb_gtp_clock_t;

/* No time limit: what an engine starts with. */
void pb_gtp_clock_init(pb_gtp_clock_t *c);

/* time_settings: main_s, byo_s seconds and byo_stones moves; both colors'
 * clocks start again from the settings. Returns 0, or PB_EINVAL (nothing
 * changed) for a negative, NaN or too large (PB_GTP_CLOCK_MAX_S) value. */
int pb_gtp_clock_settings(pb_gtp_clock_t *c, double main_s, double byo_s,
                          int byo_stones);

/* A new game: both colors' clocks start again from the settings. */
void pb_gtp_clock_restart(pb_gtp_clock_t *c);

/* time_left: color (0 black, 1 white) has left_s seconds for stones moves
 * (0: main time). Returns 0, or PB_EINVAL (nothing changed) for a bad
 * color or a negative, NaN or too large value. Before any time_settings
 * it makes the time it gives a limit (absolute time, no byo-yomi known);
 * after time_settings that said "no time limit" it changes no budget. */
int pb_gtp_clock_left(pb_gtp_clock_t *c, int color, double left_s, int stones);

/* Charges color (0, 1) with a move that took spent_s seconds: its time
 * left shrinks (main time into byo-yomi when it runs out; a period that
 * ends starts the next), as a controller's clock would, for controllers
 * that do not send time_left. Nothing under no time limit. */
void pb_gtp_clock_spend(pb_gtp_clock_t *c, int color, double spent_s);

/* The moves still to play for the mover at ply `ply` of game g, as the
 * budget counts them (above). */
int pb_gtp_clock_moves_left(const pb_game_t *g, int ply);

/* The time budget in milliseconds of color's move at ply `ply` of g (see
 * the top): >= 1; -1 under no time limit. */
int64_t pb_gtp_clock_budget_ms(const pb_gtp_clock_t *c, const pb_game_t *g,
                               int color, int ply);

#endif
