/* match.h - play two agents against each other, many games in parallel.
 *
 * Game i of a match (i = 0, 1, ...) has A moving first when i is even and B
 * first when i is odd. Everything random in game i - A's and B's streams
 * and the random opening - is seeded from (seed, i) alone, so a match gives
 * the same results whatever the number of threads and their schedule.
 *
 * Openings (optional): game i starts from opening (i / 2) mod n, so each
 * opening is played twice in a row, A with the first player's side in
 * the even game and with the second player's side in the odd one; with
 * more games than 2 n the list starts over. Random opening plies, if
 * any, follow the opening's moves.
 *
 * A match may stop early: a callback sees the totals of games 0..k-1 for
 * k = 1, 2, ... in that order (whatever the order the games finish in)
 * and may end the match there, with exactly those k games counted. A
 * stopping rule that looks only at those totals (such as an SPRT) thus
 * stops at the same game with the same results whatever the threads.
 *
 * Pairs: games 2i and 2i+1 are a pair (the same opening, colours
 * swapped); the result counts the pentanomial distribution of the pairs'
 * scores besides the games' W/D/L.
 *
 * Repeats: a game repeats an earlier one when it starts from the same
 * opening with A on the same side and its plies (the random ones
 * included) are the same; deterministic agents replay the same few games
 * over and over. The result counts the repeats and the results of the
 * distinct games and pairs alone, in game order (so, like the rest, they
 * do not depend on the threads).
 *
 * Resignation: an agent whose act returns PB_AGENT_RESIGN (agent.h)
 * loses the game there, unfinished; the match goes on.
 *
 * Interruption: when *o->cancel becomes nonzero (a signal handler may set
 * it), no game starts and the games under way stop at their next ply,
 * uncounted; the match ends with the games finished so far, each shown to
 * on_game in order, and res->interrupted set. */
#ifndef PB_MATCH_H
#define PB_MATCH_H

#include <stdatomic.h>
#include <stdint.h>

#include "agent.h"
#include "err.h"
#include "game.h"
#include "rng.h"

struct pb_match_result;

/* One game of a match, as the on_game hook sees it. */
typedef struct pb_match_game {
  int index;    /* game i of the match, from 0 */
  int a_first;  /* A moved first (i even) */
  int outcome;  /* for A: +1, 0 or -1 (a capped game is 0) */
  int capped;   /* stopped unfinished by the turn cap */
  int opening;  /* the index of its opening in o->openings, -1: none */
  int random_plies;        /* random plies played after the start */
  const pb_state_t *start; /* where it started; NULL: the initial position */
  int n_moves;
  const uint8_t *moves;    /* the plies played from start (the random ones
                              included), passes as actions */
  int flagged;             /* 0; 1 A lost on time, 2 B did */
  int adjudicated;         /* the solver scored it (unfinished) */
  const int32_t *ms;       /* per ply of moves: the milliseconds the mover
                              took (wall clock), -1 for a random ply */
  const float *evals;      /* per ply of moves: the mover's value of the
                              position before its move, in [-1, 1] from
                              its side (pb_agent_info's valued), NaN where
                              it gave none (a random ply, most baselines,
                              gtp: engines) */
  int resigned;            /* the side to move after the moves resigned
                              (PB_AGENT_RESIGN): outcome is its loss */
  int interrupted;         /* o->show_interrupted: a game under way when
                              o->cancel stopped the match, unfinished and
                              not counted (outcome 0) */
  double started;          /* when the game started: UNIX time */
} pb_match_game_t;

typedef struct pb_match_opts {
  const char *a_spec; /* agent A (pb_agent_new spec), e.g. "lookahead:3" */
  const char *b_spec; /* agent B */
  int games;          /* >= 1 */
  uint64_t seed;
  int threads;              /* 0: the number of online CPUs; capped at games */
  int opening_random_moves; /* the first k plies are uniformly random;
                               fewer than the turn cap (PB_EINVAL) */
  int max_turns;            /* 0: the game's max_turns (game.h: only Toguz
                               Kumalak's games can reach it); a game that
                               reaches the cap unfinished counts as a draw */
  const pb_state_t *openings; /* n_openings start positions (not finished),
                                 or NULL: the game's start */
  int n_openings;
  /* Called with the totals of games 0..k-1 (res->games = k) each time k
   * grows, in order, never by two threads at once; a nonzero return ends
   * the match after those k games. NULL: every game is played. */
  int (*on_games)(void *ctx, const struct pb_match_result *sofar);
  void *ctx;
  /* Called with each game the match counts, in order (game 0, 1, ...,
   * whatever order the threads finish them in), never by two threads at
   * once, before on_games sees the totals that include it; game_ctx is
   * its first argument. A negative return (with err filled) abandons the
   * match with that error. NULL: no moves are kept. */
  int (*on_game)(void *game_ctx, const pb_match_game_t *game, pb_err_t *err);
  void *game_ctx;
  /* Nonzero: stop now (see the top comment). NULL: never. */
  const atomic_int *cancel;
  /* Nonzero: when o->cancel stops the match, the games under way are
   * shown to on_game too (their plies so far, interrupted set, not
   * counted), in game order among the games finished after the last one
   * shown. */
  int show_interrupted;
  /* Time control (0: none): each side starts a game with tc_base_s
   * seconds and gains tc_inc_s after each move it makes (Fischer). Before
   * each move the mover hears its clock (pb_agent_clock: a gtp: engine
   * gets time_settings and time_left) and plays within the budget of
   * pb_match_tc_budget_ms (gtp_timed.h: abnet:, mcts:, beam: and bpip:
   * size their search to it; the other built-in kinds play as their spec
   * says). A side whose clock runs out during its move loses the game on
   * time (the move is not played). Random opening plies take no time.
   * Timing depends on the machine and its load, so results under a time
   * control depend on them too (and on the threads). */
  double tc_base_s, tc_inc_s;
  /* Adjudication (0: none): in a game with a solver (solver.h: Connect
   * Four, Tic-Tac-Toe), a game that reaches this ply (past its random
   * plies) ends there with the result the solver gives (weak: the result
   * alone), as if played out perfectly; it counts as adjudicated. */
  int adjudicate_ply;
  /* Adjudication by the game's score (0: none): in a game with material
   * (game.h: Othello's discs, Toguz Kumalak's kazna), once one side leads
   * by at least adjudicate_margin after each of adjudicate_plies plies in
   * a row (>= 1; plies the players chose, not random ones), it wins
   * there; the game counts as adjudicated. */
  int adjudicate_margin, adjudicate_plies;
} pb_match_opts_t;

/* The transposition table of each thread's solver: 2^20 entries, 8 MiB. */
#define PB_MATCH_ADJ_TT_LOG2 20

/* The bounds of a time control (seconds), and how a move's budget is
 * cut from the clock: PB_MATCH_TC_USE of the mover's share, the time left
 * over the moves it still has to make (pb_gtp_clock_moves_left) plus the
 * increment, at most PB_MATCH_TC_MAX_SHARE of the time left, less
 * PB_MATCH_TC_RESERVE_MS, at least 1 ms. */
#define PB_MATCH_TC_MAX_S 1e6
#define PB_MATCH_TC_USE 0.9
#define PB_MATCH_TC_MAX_SHARE 0.5
#define PB_MATCH_TC_RESERVE_MS 2

/* The budget of a move at ply `ply` of g, in ms, for a side with left_s
 * seconds on its clock and increment inc_s (above). */
int64_t pb_match_tc_budget_ms(const pb_game_t *g, int ply, double left_s,
                              double inc_s);

/* The pentanomial counts of game pairs, by A's points in the pair:
 * penta[0] two losses, [1] a loss and a draw, [2] a win and a loss or
 * two draws, [3] a win and a draw, [4] two wins. */
#define PB_MATCH_PENTA 5

/* Results from A's point of view. */
typedef struct pb_match_result {
  int games;
  int wins, draws, losses;
  int first_wins, first_draws, first_losses;    /* games where A moved first */
  int second_wins, second_draws, second_losses; /* games where B moved first */
  int capped; /* games stopped by max_turns (counted as draws) */
  long plies; /* plies played over all games */
  int penta[PB_MATCH_PENTA]; /* complete pairs (games 2i, 2i+1) */
  int pair_wl, pair_dd;      /* of penta[2]: a win and a loss, two draws */
  /* Repeats: games that repeat an earlier game, pairs both of whose
   * games repeat those of one earlier pair; the W/D/L of the distinct
   * games (the first of each), the pentanomial of the distinct pairs;
   * the index of the last game that was new (-1: none yet). */
  int repeats, pair_repeats;
  int distinct_wins, distinct_draws, distinct_losses;
  int distinct_penta[PB_MATCH_PENTA];
  int last_new;
  int interrupted; /* o->cancel stopped the match (see the top comment) */
  int a_time_losses, b_time_losses; /* games lost on time (tc_base_s) */
  int adjudicated; /* games the solver or the material scored */
  int a_resigned, b_resigned; /* games lost by resignation (a gtp: engine
                                 answering genmove with "resign") */
} pb_match_result_t;

/* Sets *o to the defaults: 100 games, seed 1, threads 0, no random opening,
 * no turn cap (specs NULL: the caller must set them). */
void pb_match_opts_default(pb_match_opts_t *o);

/* Plays the match described by o in game g and fills *res (res->games <
 * o->games when o->on_games or o->cancel ended it early). Returns 0, or PB_EINVAL (bad
 * options, agent specs or openings; nothing is played), PB_ENOMEM, PB_EIO
 * (a thread could not be started), or the first error an agent reported
 * (the match is then abandoned and *res is zeroed). */
int pb_match_play(const pb_game_t *g, const pb_match_opts_t *o,
                  pb_match_result_t *res, pb_err_t *err);

/* Plays one game of the match: `first` moves first. The agents are used as
 * they are (reseed them before, if wanted); `rng` draws the random opening
 * plies. Sets *outcome to +1 / 0 / -1 for the first player (0 too when
 * the cap stops the game: max_turns, or the game's own when it is 0) and
 * *plies to the number of plies played
 * (either may be NULL; *capped likewise says the cap stopped it). Returns 0
 * or the agent's error. */
int pb_match_game(const pb_game_t *g, pb_agent_t *first, pb_agent_t *second,
                  pb_rng_t *rng, int opening_random_moves, int max_turns,
                  int *outcome, int *plies, int *capped, pb_err_t *err);

/* The same from the position `start` (NULL: the game's start), which
 * must not be finished: `first` plays the side that moved first in the
 * game, whoever is to move in start; the random plies follow start;
 * *plies counts the game's plies including start's, and the cap applies
 * to that count. */
int pb_match_game_from(const pb_game_t *g, const pb_state_t *start,
                       pb_agent_t *first, pb_agent_t *second, pb_rng_t *rng,
                       int opening_random_moves, int max_turns, int *outcome,
                       int *plies, int *capped, pb_err_t *err);

/* pb_match_game_from that also keeps the plies it plays from start (the
 * random ones included) in moves[0..*n_moves): cap must be at least the
 * turn cap (max_turns, or the game's) less start's plies, else a longer
 * game fails with PB_ERANGE. moves NULL: none kept, as
 * pb_match_game_from. */
int pb_match_game_moves(const pb_game_t *g, const pb_state_t *start,
                        pb_agent_t *first, pb_agent_t *second, pb_rng_t *rng,
                        int opening_random_moves, int max_turns, int *outcome,
                        int *plies, int *capped, uint8_t *moves, int cap,
                        int *n_moves, pb_err_t *err);

/* Openings for a match: text with one opening per line, the moves from
 * the start in the game's notation (as g->parse reads them, e.g. "4453" in
 * Connect Four, "f5d6c3" in Othello; "-" is the start position itself);
 * blank lines and lines starting with '#' are skipped, spaces around a
 * line ignored. Fills *out (malloc'd, the caller frees) and *n. Returns 0,
 * or an error whose message names `name` and the line: PB_ECORRUPT for moves
 * that do not parse or are illegal, a finished position, or no opening
 * at all; PB_ERANGE past PB_MATCH_OPENINGS_MAX openings; PB_ENOMEM. */
#define PB_MATCH_OPENINGS_MAX 1000000
int pb_match_openings_parse(const pb_game_t *g, const char *text, size_t len,
                            const char *name, pb_state_t **out, int *n,
                            pb_err_t *err);

/* The same for the file at path (PB_EIO if it cannot be read; files over
 * 64 MiB are refused with PB_ERANGE). */
int pb_match_openings_load(const pb_game_t *g, const char *path,
                           pb_state_t **out, int *n, pb_err_t *err);

/* pb_match_openings_load that also gives each opening's line, the moves
 * as the file wrote them ("" for "-"), in (*lines)[k] (malloc'd, freed
 * with pb_match_openings_free_lines; lines may be NULL). */
int pb_match_openings_load_lines(const pb_game_t *g, const char *path,
                                 pb_state_t **out, char ***lines, int *n,
                                 pb_err_t *err);

/* Frees what pb_match_openings_load_lines gave; accepts NULL and sets
 * *lines to NULL. */
void pb_match_openings_free_lines(char ***lines, int n);

/* Adds the pair of games scoring a and b for A (each +1, 0 or -1) to
 * the pentanomial counts penta[PB_MATCH_PENTA] (and pair_wl, pair_dd
 * when not NULL). */
void pb_match_penta_add(int penta[PB_MATCH_PENTA], int *pair_wl,
                        int *pair_dd, int a, int b);

/* Seeds for game i: of agent A, of agent B, and of the opening's rng. */
uint64_t pb_match_seed(uint64_t seed, int game, int which);

#endif
