/* models.h - the trained networks shipped with probs (data/models/, one
 * model file per game, common/nn/model.h): where they are, and which one a
 * command uses when it is given no --model.
 *
 * The files are looked for, in order, in
 *   $PROBS_MODELS                          (a directory, when set)
 *   <this program's dir>/../../data/models (a build tree: build/bin/probs)
 *   <this program's dir>/../share/probs/models (an install, the image)
 * and are named "<game>.pbck" (the PROBS network of that game) or
 * "<game>-alphazero.pbck". data/models/README.md says how each was made. */
#ifndef PB_CLI_MODELS_H
#define PB_CLI_MODELS_H

#include <stddef.h>

#include "err.h"

/* The path of the shipped model file "<name>.pbck" (name: a game's name,
 * or "<game>-alphazero") into path[0..n). Returns 0; PB_ENOTFOUND with a
 * message naming the places looked at and --model; PB_ERANGE if path is
 * too small. */
int pb_cli_shipped_model(const char *name, char *path, size_t n,
                         pb_err_t *err);

#endif
