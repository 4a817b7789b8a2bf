/* models.h - the trained networks shipped with probs (data/models/, model
 * files, common/nn/model.h): where they are, and which one a command uses
 * when it is given no --model.
 *
 * The files are looked for, in order, in
 *   $PROBS_MODELS                          (a directory, when set)
 *   <this program's dir>/../../data/models (a build tree: build/bin/probs)
 *   <this program's dir>/../share/probs/models (an install, the image)
 * and are named "<game>.pbck" (the PROBS network of that game) or
 * "<game>-alphazero.pbck". Each game's default is the strongest of its
 * networks as measured in data/models/README.md (with its algorithm's best
 * search: abnet for PROBS, mcts for AlphaZero); pb_cli_default_model_name
 * names it. data/models/README.md says how each was made. */
#ifndef PB_CLI_MODELS_H
#define PB_CLI_MODELS_H

#include <stddef.h>

#include "err.h"

/* The file name, without ".pbck", of game's default shipped network
 * ("connect4-alphazero", "othello-alphazero", "toguz"), or `game` itself
 * for any other name (a file name already, or a game with no table row:
 * its PROBS network). */
const char *pb_cli_default_model_name(const char *game);

/* The path of a shipped model file into path[0..n): for a game's name,
 * its default network (pb_cli_default_model_name); for any other name,
 * "<name>.pbck" ("connect4-alphazero"). Returns 0; PB_ENOTFOUND with a
 * message naming the file, the places looked at and --model; PB_ERANGE
 * if path is too small. */
int pb_cli_shipped_model(const char *name, char *path, size_t n, pb_err_t *err);

#endif
