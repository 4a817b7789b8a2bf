/* nn.h - the small C API over libtorch that every process uses for V and Q.
 *
 * Plain C, opaque handles; one C++ file (nn.cpp) implements it. Every entry
 * point catches all C++ exceptions and turns them into PB_ENN plus a message
 * in the caller's pb_err_t: nothing throws into C.
 *
 * A network is a stack of 3x3 same-padding convolutions followed by dense
 * layers, leaky ReLU (slope 0.01) after each hidden layer, as in the paper;
 * the head is tanh (V: one output) or linear (Q: one output per action).
 *
 * A pb_nn_t is used by one thread at a time. Forward runs without autograd.
 */
#ifndef PB_NN_H
#define PB_NN_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum { PB_NN_HEAD_TANH = 1, PB_NN_HEAD_LINEAR = 2 };

typedef struct pb_nn_spec {
  int planes, height, width; /* input shape (from the game) */
  int outputs;               /* 1 for V, num_actions for Q */
  int head;                  /* PB_NN_HEAD_TANH or PB_NN_HEAD_LINEAR */
  int conv_layers;           /* number of 3x3 convolutions (>= 0) */
  int conv_channels;         /* channels of each convolution */
  int dense_layers;          /* hidden dense layers before the head (>= 0) */
  int dense_units;           /* width of each hidden dense layer */
} pb_nn_spec_t;

typedef struct pb_nn_opt {
  float lr;           /* Adam learning rate */
  float weight_decay; /* L2 added to the gradient, as torch.optim.Adam */
} pb_nn_opt_t;

typedef struct pb_nn pb_nn_t;

/* Checks a spec; returns 0 or PB_EINVAL naming the bad field. */
int pb_nn_spec_check(const pb_nn_spec_t *spec, pb_err_t *err);

/* Creates a network with weights initialised from `seed` (same seed, same
 * weights). device is "cpu", "cuda" or "auto" (cuda when available).
 * Returns NULL and fills err on failure. */
pb_nn_t *pb_nn_new(const pb_nn_spec_t *spec, const pb_nn_opt_t *opt,
                   const char *device, uint64_t seed, pb_err_t *err);

/* Frees the network; accepts NULL and sets *nn to NULL. */
void pb_nn_destroy(pb_nn_t **nn);

/* The spec the network was created with. */
const pb_nn_spec_t *pb_nn_spec(const pb_nn_t *nn);

/* Number of trainable parameters. */
long pb_nn_param_count(const pb_nn_t *nn);

/* The device actually in use ("cpu" or "cuda"). */
const char *pb_nn_device(const pb_nn_t *nn);

/* Sets the number of intra-op threads libtorch uses in this process. */
void pb_nn_set_threads(int n);

/* Forward pass on `batch` inputs laid out [batch][planes][height][width];
 * writes [batch][outputs] floats to out. batch may be 0. */
int pb_nn_forward(pb_nn_t *nn, const float *in, int batch, float *out,
                  pb_err_t *err);

/* One Adam step on the mean squared error between the network's outputs and
 * target ([batch][outputs]). If mask is not NULL ([batch][outputs], 0 or 1),
 * only entries with mask 1 contribute, and the loss is their mean. Writes the
 * loss before the step to *loss (may be NULL). */
int pb_nn_train_step(pb_nn_t *nn, const float *in, const float *target,
                     const float *mask, int batch, float *loss, pb_err_t *err);

/* Changes the optimizer settings (keeps Adam's moments). */
int pb_nn_set_opt(pb_nn_t *nn, const pb_nn_opt_t *opt, pb_err_t *err);

/* Weights to a flat byte buffer (small header with the spec and `version`,
 * then float32 tensors). *out is malloc'd and owned by the caller (free()).
 * Independent of the libtorch version. */
int pb_nn_weights_save(const pb_nn_t *nn, uint64_t version, uint8_t **out,
                       size_t *len, pb_err_t *err);

/* Reads the spec and version from a weights buffer without loading it. */
int pb_nn_weights_peek(const uint8_t *buf, size_t len, pb_nn_spec_t *spec,
                       uint64_t *version, pb_err_t *err);

/* Loads weights saved by pb_nn_weights_save into nn. A buffer whose spec
 * differs from nn's, or that is truncated or corrupt, is refused with
 * PB_EMISMATCH / PB_ECORRUPT and nn is left unchanged. */
int pb_nn_weights_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                       uint64_t *version, pb_err_t *err);

/* Full training state (weights + optimizer moments + step count) to bytes,
 * for checkpoints. *out is malloc'd, caller frees. */
int pb_nn_state_save(const pb_nn_t *nn, uint8_t **out, size_t *len,
                     pb_err_t *err);

/* Inverse of pb_nn_state_save; nn is unchanged on error. */
int pb_nn_state_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                     pb_err_t *err);

/* Copies weights (not optimizer state) from src into dst (same spec). */
int pb_nn_copy_weights(pb_nn_t *dst, const pb_nn_t *src, pb_err_t *err);

/* Writes the weights of n networks as one file that Python reads with
 * torch.load(path): a dict "<prefix[i]>.<param name>" -> tensor. */
int pb_nn_export_torch(pb_nn_t *const *nets, const char *const *prefix, int n,
                       const char *path, pb_err_t *err);

#endif
