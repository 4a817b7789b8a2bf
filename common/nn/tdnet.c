/* tdnet.c - linear evaluation <-> pb_nn weights (see tdnet.h). The
 * weights buffer of a network without convolutions or hidden layers holds
 * head.weight [1][inputs] then head.bias [1] at offset 64. */
#include "tdnet.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "ckpt.h"

#define PARAMS_AT 64

int pb_tdnet_fits(const pb_nn_t *nn, const pb_linear_t *lin) {
  const pb_nn_spec_t *sp = pb_nn_spec(nn);
  const pb_game_t *g = lin->g;
  return g != NULL && sp->conv_layers == 0 && sp->dense_layers == 0 &&
         sp->res_blocks == 0 && sp->head == PB_NN_HEAD_TANH &&
         sp->outputs == 1 && sp->planes == g->planes &&
         sp->height == g->height && sp->width == g->width;
}

static float getf(const uint8_t *p) {
  uint32_t u = pb_le_get32(p);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void putf(uint8_t *p, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  pb_le_put32(p, u);
}

/* nn's weights buffer, checked to hold inputs + 1 parameters. */
static int weights_of(const pb_nn_t *nn, const pb_linear_t *lin, uint8_t **buf,
                      size_t *len, int *inputs, pb_err_t *err) {
  if (!pb_tdnet_fits(nn, lin))
    return pb_err_set(err, PB_EMISMATCH,
                      "the network is not a linear evaluation of %s (it has "
                      "hidden layers or another input shape)",
                      lin->g ? lin->g->name : "no game");
  const pb_game_t *g = lin->g;
  *inputs = g->planes * g->height * g->width;
  int rc = pb_nn_weights_save(nn, 0, buf, len, err);
  if (rc != 0) return rc;
  if (*len != PARAMS_AT + 4 * ((size_t)*inputs + 1) + 4 ||
      pb_le_get64(*buf + 56) != (uint64_t)*inputs + 1) {
    free(*buf);
    *buf = NULL;
    return pb_err_set(err, PB_EMISMATCH,
                      "the linear network's weights buffer has an "
                      "unexpected layout (%zu bytes)",
                      *len);
  }
  return 0;
}

int pb_tdnet_get(const pb_nn_t *nn, pb_linear_t *lin, pb_err_t *err) {
  uint8_t *buf;
  size_t len;
  int n;
  int rc = weights_of(nn, lin, &buf, &len, &n, err);
  if (rc != 0) return rc;
  float W[PB_LINEAR_MAX_INPUTS];
  for (int i = 0; i < n; i++) W[i] = getf(buf + PARAMS_AT + 4 * (size_t)i);
  pb_linear_from_planes(lin, W, getf(buf + PARAMS_AT + 4 * (size_t)n));
  free(buf);
  return 0;
}

int pb_tdnet_set(pb_nn_t *nn, const pb_linear_t *lin, pb_err_t *err) {
  uint8_t *buf;
  size_t len;
  int n;
  int rc = weights_of(nn, lin, &buf, &len, &n, err);
  if (rc != 0) return rc;
  float W[PB_LINEAR_MAX_INPUTS], b;
  pb_linear_to_planes(lin, W, &b);
  for (int i = 0; i < n; i++) putf(buf + PARAMS_AT + 4 * (size_t)i, W[i]);
  putf(buf + PARAMS_AT + 4 * (size_t)n, b);
  pb_le_put32(buf + len - 4, pb_crc32(0, buf, len - 4));
  rc = pb_nn_weights_load(nn, buf, len, NULL, err);
  free(buf);
  return rc;
}
