/* tdnet.h - a linear evaluation (common/search/linear.h) as a pb_nn network and
 * back: what algorithm td keeps in the V slot of its checkpoints, so that
 * checkpoints, model files, the weights message to actors and the
 * `value:` / `abnet:` agents work on it unchanged.
 *
 * The network is common/nn/model.h's V of a td run: no convolution, no hidden
 * layer, a tanh head of one output over the game's input planes. Its
 * head.weight row is pb_linear_to_planes' W and head.bias the bias; the
 * copies go through the weights buffer (docs/nn.md: header, then the
 * float32 parameters, then a CRC-32), so nothing here depends on
 * libtorch. */
#ifndef PB_TDNET_H
#define PB_TDNET_H

#include "err.h"
#include "linear.h"
#include "nn.h"

/* Whether nn has the shape of lin's network (1 if so, else 0). */
int pb_tdnet_fits(const pb_nn_t *nn, const pb_linear_t *lin);

/* Copies the weights of nn into lin (its game and kind stay). Returns 0,
 * PB_EMISMATCH when nn is not a linear tanh network over lin's game's
 * planes, or pb_nn_weights_save's error. */
int pb_tdnet_get(const pb_nn_t *nn, pb_linear_t *lin, pb_err_t *err);

/* Copies lin into nn's weights (the optimizer's moments are kept).
 * Returns 0, PB_EMISMATCH as pb_tdnet_get, or the error of
 * pb_nn_weights_save / pb_nn_weights_load. */
int pb_tdnet_set(pb_nn_t *nn, const pb_linear_t *lin, pb_err_t *err);

#endif
