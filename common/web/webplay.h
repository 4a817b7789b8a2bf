/* webplay.h - a human against the newest checkpoint of a run, one move per
 * request (the learner's `GET /api/move`, docs/deploy.md).
 *
 * The object keeps one agent, "checkpoint:PATH" (agent.h: greedy on Q, a
 * single batch-1 forward pass per move), built from the newest file
 * RUN_DIR/checkpoints/ckpt-NNNNNN.pbck. Every request lists that directory
 * (pb_ckpt_newest: no file is opened); only when a newer version appears is
 * it loaded, replacing the cached agent. A file that cannot be loaded
 * (corrupt, another game) is remembered and not retried, and the previous
 * agent keeps playing. So it never touches the learner's own networks,
 * which a training job may be using on another thread.
 *
 * pb_webplay_pin fixes the version instead (probs serve --checkpoint).
 *
 * A request is a move list from the initial position in the game's
 * notation (common/games/game.h `parse`: Connect Four "4453", Tic-Tac-Toe "159",
 * Othello "f5d6c3" or "pass", Toguz Kumalak hole digits) and whether the
 * model should answer. Everything in it is untrusted.
 *
 * Threading: one thread at a time (the learner's loop thread). The agent
 * sets libtorch's process-wide intra-op thread count to 1 when it first
 * plays on a thread; pb_webplay_move sets it back to `threads` afterwards
 * so that the learner's training keeps its configured count. */
#ifndef PB_WEBPLAY_H
#define PB_WEBPLAY_H

#include <stdint.h>

#include "err.h"
#include "game.h"

/* Longest move list accepted, in characters. */
#define PB_WEBPLAY_MOVES_MAX 4096

typedef struct pb_webplay pb_webplay_t;

/* A player for game g (borrowed, static) over RUN_DIR = run_dir (copied).
 * `threads` is the intra-op thread count to restore after each move (the
 * learner's model.threads; < 1 means 1). Loads nothing yet. NULL + err
 * (PB_EINVAL: NULL or a run dir longer than 4000 bytes; PB_ENOMEM). */
pb_webplay_t *pb_webplay_new(const pb_game_t *g, const char *run_dir,
                             int threads, pb_err_t *err);

/* Frees the agent and the object; accepts NULL and sets *w to NULL. */
void pb_webplay_destroy(pb_webplay_t **w);

/* Pins the player to checkpoint `version` of the run
 * (RUN_DIR/checkpoints/ckpt-NNNNNN.pbck, common/run/rundir.h), loading it now:
 * from then on it plays that version whatever newer ones appear (probs
 * serve --checkpoint). A negative version unpins: the newest plays again,
 * and 0 is returned without loading anything. Returns 0, PB_ENOTFOUND
 * (no such file, naming it), or the load's error (PB_ECORRUPT,
 * PB_EMISMATCH, PB_EIO...); on an error nothing changes. */
int pb_webplay_pin(pb_webplay_t *w, long long version, pb_err_t *err);

/* The pinned version, or -1 when the newest plays. */
long long pb_webplay_pinned(const pb_webplay_t *w);

/* Plays `moves` from the initial position; then, if `reply` is non-zero
 * and the game is not over, the newest checkpoint plays one move for the
 * side to move. Writes the answer, a malloc'd JSON object the caller
 * frees, to *json:
 *   {"game":"connect4","version":12,"moves":"4453","reply":"3",
 *    "board":"<render text>","ply":5,"to_move":"O","legal":["1",...],
 *    "over":false,"winner":null,"result":null}
 * version: the checkpoint that answered (null when none was asked);
 * moves: the whole list, the reply included (names as action_name writes
 * them, so "pass" in Othello), which the client sends back next time;
 * reply: the model's move, or null; to_move/winner: "X" (first player) or
 * "O"; result: "X wins", "O wins", "draw" once over (a game reaching the
 * game's max_turns is a draw), else null.
 * Returns 0; PB_ERANGE (more than PB_WEBPLAY_MOVES_MAX characters),
 * PB_EINVAL (a character that is not a move) or PB_EILLEGAL (an illegal
 * move, a move after the end) with a message for the client (HTTP 400);
 * PB_ENOTFOUND when a reply is wanted but the run has no checkpoint,
 * PB_ECORRUPT / PB_EMISMATCH / PB_EIO when none can be loaded (503);
 * PB_ENOMEM or an agent error (500). *json is NULL on error. */
int pb_webplay_move(pb_webplay_t *w, const char *moves, int reply,
                    char **json, pb_err_t *err);

/* The version of the cached agent, or -1 when none is loaded. */
long long pb_webplay_version(const pb_webplay_t *w);

#endif
