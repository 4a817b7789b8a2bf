/* nn.h - the small C API over libtorch that every process uses for V and Q.
 *
 * Plain C, opaque handles; three C++ files implement it: nn.cpp (the
 * networks and forward), nn_train.cpp (losses, Adam, training steps) and
 * nn_io.cpp (weights and state buffers, the torch export). Every entry
 * point catches all C++ exceptions and turns them into PB_ENN plus a message
 * in the caller's pb_err_t: nothing throws into C.
 *
 * A network is a stack of 3x3 same-padding convolutions followed by dense
 * layers, leaky ReLU (slope 0.01) after each hidden layer, as in the paper;
 * the head is tanh (V: one output), linear (Q: one output per action), or
 * policy+value (PV, AlphaZero style: one linear layer with A + 1 outputs,
 * the first A raw policy logits, the last through tanh as the value).
 * Optionally (for larger networks) the convolutions are followed by
 * residual blocks (two convolutions of the same width and a skip
 * connection: h = lrelu(h + n(conv(lrelu(n(conv(h))))))), and every
 * convolution by a normalisation n: layer norm over (channels, height,
 * width) with a per-channel scale and shift (GroupNorm with one group; no
 * running statistics, so training and inference compute the same
 * function).
 *
 * A pb_nn_t is used by one thread at a time. Forward runs without autograd.
 * Different pb_nn_t may be used by different threads concurrently.
 *
 * Parameters are initialised like PyTorch's Conv2d/Linear defaults
 * (U(-1/sqrt(fan_in), 1/sqrt(fan_in))) from a per-network stream, so the
 * same seed gives the same weights on any libtorch version and device.
 * Optimizer: Adam with torch.optim.Adam semantics (betas 0.9/0.999, eps
 * 1e-8, bias correction, weight decay added to the gradient), implemented
 * here so that its state serialises the same way on every libtorch.
 *
 * Formats of the weights and state buffers: docs/nn.md.
 */
#ifndef PB_NN_H
#define PB_NN_H

#include <stddef.h>
#include <stdint.h>

#include "bounds.h"
#include "err.h"

/* The head: one linear layer ("head.weight" [outputs, in], "head.bias"
 * [outputs]) after the trunk, then
 *   PB_NN_HEAD_TANH    tanh (V, outputs 1)
 *   PB_NN_HEAD_LINEAR  nothing (Q, outputs = number of actions)
 *   PB_NN_HEAD_PV      policy + value: outputs = A + 1 for A >= 2 actions;
 *                      a forward row is [logit_0 .. logit_{A-1}, value],
 *                      the logits raw (no softmax), value = tanh of the
 *                      last linear output. */
enum { PB_NN_HEAD_TANH = 1, PB_NN_HEAD_LINEAR = 2, PB_NN_HEAD_PV = 3 };

typedef struct pb_nn_spec {
  int planes, height, width; /* input shape (from the game) */
  int outputs;               /* 1 for V, num_actions for Q, A + 1 for PV */
  int head;                  /* PB_NN_HEAD_TANH, _LINEAR or _PV */
  int conv_layers;           /* number of 3x3 convolutions (>= 0) */
  int conv_channels;         /* channels of each convolution */
  int dense_layers;          /* hidden dense layers before the head (>= 0) */
  int dense_units;           /* width of each hidden dense layer */
  int res_blocks;            /* residual blocks after the convolutions
                                (>= 0; needs conv_layers >= 1) */
  int norm;                  /* PB_NN_NORM_NONE or PB_NN_NORM_LAYER */
} pb_nn_spec_t;

enum { PB_NN_NORM_NONE = 0, PB_NN_NORM_LAYER = 1 };

typedef struct pb_nn_opt {
  float lr;           /* Adam learning rate */
  float weight_decay; /* L2 added to the gradient, as torch.optim.Adam */
  float grad_clip;    /* > 0: the gradient (weight decay included) is
                         scaled down to this L2 norm before Adam sees it,
                         as torch.nn.utils.clip_grad_norm_; 0: off */
} pb_nn_opt_t;

typedef struct pb_nn pb_nn_t;

/* Checks a spec; returns 0 or PB_EINVAL naming the bad field (a PV head
 * needs outputs >= 3). Sizes are
 * bounded (e.g. at most 2^31 parameters) so that a spec read from a peer
 * cannot make pb_nn_new allocate without limit. */
int pb_nn_spec_check(const pb_nn_spec_t *spec, pb_err_t *err);

/* Number of trainable parameters a spec gives, or -1 if the spec is bad.
 * Creates nothing. */
long pb_nn_spec_param_count(const pb_nn_spec_t *spec);

/* Creates a network with weights initialised from `seed` (same seed, same
 * weights; normalisation scales start at 1 and shifts at 0). opt may be
 * NULL (lr 1e-3, no weight decay, no clipping) for networks that
 * are never trained. device is "cpu", "cuda" or "auto" (cuda when
 * available). Returns NULL and fills err on failure: PB_EINVAL for a bad
 * spec, opt or device string, PB_EUNSUPP for "cuda" without CUDA, PB_ENN /
 * PB_ENOMEM when libtorch fails. */
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

/* Sets the number of intra-op threads libtorch uses (n < 1 means 1), and
 * OpenBLAS's own pool to the same number when OpenBLAS is loaded. The count
 * is process-wide, but with libtorch's OpenMP backend a thread that has
 * already run networks keeps the count it started with: call this from
 * main() before starting threads (or again from each network thread). On a
 * 2-core machine 1 thread per process is fastest (docs/nn.md). Inter-op
 * threads are not touched (probs does not use them). */
void pb_nn_set_threads(int n);

/* Counting the libtorch operators that run on the calling thread: every
 * call through libtorch's dispatcher (nested ones included: conv2d and the
 * convolution it calls are two), which is its host-side cost per call and,
 * on CUDA, about the number of kernels launched. For benches and tests
 * (bench_nn, tests/test_nn_ops.c: the operators of one training step);
 * nothing is counted, and nothing costs, outside start..stop.
 * pb_nn_count_ops_start starts counting on this thread from 0 (again from
 * 0 if it was counting); returns 0, or PB_ENN if libtorch refuses.
 * pb_nn_count_ops_stop stops it and returns the count, or -1 if this
 * thread was not counting. */
int pb_nn_count_ops_start(pb_err_t *err);
long pb_nn_count_ops_stop(void);

/* Tunes the C allocator for libtorch's allocation pattern (glibc: raises
 * the mmap and trim thresholds to 32 and 64 MiB), so that activation
 * buffers freed after one forward pass are reused by the next instead of
 * being returned to the kernel and faulted in again. Measured 2-4x more
 * positions/s at batch 1024 on CPU, and up to 3x at batch 256 depending on
 * what the process allocated before (docs/nn.md). Process-wide: call once
 * from main() of a process that runs networks, before starting threads.
 * Costs up to 64 MiB of freed heap kept instead of returned. Returns 0, or
 * PB_EUNSUPP on a C library where it does nothing. */
int pb_nn_tune_malloc(pb_err_t *err);

/* The arithmetic of forward passes and training steps (pb_nn_set_precision).
 *   PB_NN_FP32  everything in float32 (the default of a new network)
 *   PB_NN_BF16  mixed precision: the trunk (convolutions, residual blocks,
 *               their activations; on CUDA the hidden dense layers too) in
 *               bfloat16, the rest, the head and the loss in float32. On a
 *               CPU the dense layers stay float32 because Debian's oneDNN
 *               2.6 corrupts memory when bfloat16 matrix products are set
 *               up on several threads of a process (nn.cpp, pb__lp_n;
 *               docs/nn.md). The weights stay float32
 *               (theta is the master copy that Adam updates in float32;
 *               forward passes use a bfloat16 copy, remade after the
 *               weights change), so everything saved (weights and state
 *               buffers, checkpoints, the export) is float32 and the same
 *               format whatever the precision. Training differentiates
 *               through the cast: the gradient reaches theta in float32.
 *               No loss scaling: bfloat16 has float32's exponent range.
 * On a CPU, bfloat16 is fast where oneDNN finds AVX-512 BF16 or AMX
 * (common/nn/precision.h says which), and emulated (slower than float32)
 * elsewhere; on CUDA, native from compute capability 8.0 (Ampere). */
enum { PB_NN_FP32 = 0, PB_NN_BF16 = 1 };

/* bf16 pays from batches of some rows on: the casts and oneDNN's per-call
 * work cost more than it saves on a few rows (bench_nn on AVX-512 BF16,
 * one thread: at batch 1 bf16 runs at 0.62x fp32's rate on the paper's
 * larger Connect Four network and 0.37x on the smaller one; they broke
 * even at batch 4-8 and 32-48, measured while the dense layers were bf16
 * too; docs/performance.md). A network computes in its precision
 * whatever the batch, so that a position's value does not depend on the
 * batch it was in (the learner's spot check compares a searcher's values
 * with its own from other batches); a role whose batches are small is
 * better set to fp32 (model.actor_precision, say). */

/* Sets nn's precision (PB_NN_FP32 or PB_NN_BF16); it applies to every
 * later pb_nn_forward and training step. Returns 0, or PB_EINVAL for a
 * NULL network or another value. */
int pb_nn_set_precision(pb_nn_t *nn, int precision, pb_err_t *err);

/* nn's precision (PB_NN_FP32 for NULL). */
int pb_nn_precision(const pb_nn_t *nn);

/* The compute capability of CUDA device 0 into *major and *minor (either
 * may be NULL; both 0 when the CUDA runtime does not say). Returns 0, or
 * PB_EUNSUPP when there is no CUDA device (or a CPU-only libtorch). */
int pb_nn_cuda_capability(int *major, int *minor);

/* Number of Adam steps taken so far (restored by pb_nn_state_load). */
int64_t pb_nn_train_steps(const pb_nn_t *nn);

/* Forward pass on `batch` inputs laid out [batch][planes][height][width];
 * writes [batch][outputs] floats to out. batch may be 0 (nothing is read
 * or written). in is read in place (no copy on the CPU); both buffers stay
 * the caller's. PB_EINVAL for bad arguments, PB_ENN if libtorch fails. */
int pb_nn_forward(pb_nn_t *nn, const float *in, int batch, float *out,
                  pb_err_t *err);

/* One Adam step on the mean squared error between the network's outputs and
 * target ([batch][outputs]). If mask is not NULL ([batch][outputs], 0 or 1),
 * only entries with mask 1 contribute, and the loss is their mean
 * (sum(mask * (out - target)^2) / max(1, sum(mask))); targets under a zero
 * mask are never read into the loss, so they may hold anything. Writes the
 * loss before the step to *loss (may be NULL). batch 0 takes no step and
 * reports loss 0. A non-finite loss takes no step and returns PB_ERANGE.
 *
 * PB_NN_HEAD_PV (A actions, rows of A + 1): a target row is
 * [pi_0 .. pi_{A-1}, z] (pi a distribution over the legal actions, z in
 * [-1, 1]), a mask row [legal_0 .. legal_{A-1}, w] (0 or 1; w: whether the
 * row's value counts); mask NULL means every action legal and w = 1. The
 * loss is policy cross-entropy plus value MSE:
 *   policy = mean over the batch's rows of
 *            -sum_{a legal} pi_a * log_softmax over the legal logits_a
 *            (illegal logits take no part in the softmax; a row with no
 *            legal action adds 0 but still counts in the mean)
 *   value  = sum_rows w * (tanh out - z)^2 / max(1, sum_rows w)
 *   *loss  = policy + value
 * As for the other heads, targets under a zero mask (pi of an illegal
 * action, z of a row with w 0) are never read into the loss or gradient.
 * Weight decay, clipping, Adam and pb_nn_last_grad_norm are the same. */
int pb_nn_train_step(pb_nn_t *nn, const float *in, const float *target,
                     const float *mask, int batch, float *loss, pb_err_t *err);

/* k = ceil(total / batch) Adam steps in one call, for devices where one
 * step is bound by launches and host round trips (CUDA) rather than by
 * arithmetic: the `total` rows of in/target/mask (laid out as for
 * pb_nn_train_step) are copied to the device once and split into
 * consecutive minibatches of `batch` rows (the last one may be shorter),
 * and nothing is read back until the last step has been queued. Step j
 * uses learning rate lrs[j] (lrs NULL: the optimizer's lr for every step;
 * with lrs the optimizer's lr is lrs[k - 1] afterwards, as if
 * pb_nn_set_opt had been called before each step). Writes, when not NULL,
 * losses[j] (the loss before step j), grad_norms[j] (pb_nn_last_grad_norm
 * after step j) and parts[2j], parts[2j + 1] (pb_nn_last_loss_parts after
 * step j); each has k entries (2k for parts). On the CPU the result is the
 * same, bit for bit, as k calls of pb_nn_train_step (tests/test_nn_train.c).
 * total 0 takes no step. If any step's loss is not finite, returns
 * PB_ERANGE naming the step and leaves nn (weights, moments, step count,
 * last loss parts and gradient norm) as it was before the call. PB_EINVAL
 * for bad arguments (batch < 1, an lr that is not finite and > 0). */
int pb_nn_train_batches(pb_nn_t *nn, const float *in, const float *target,
                        const float *mask, int total, int batch,
                        const float *lrs, float *losses, double *grad_norms,
                        double *parts, pb_err_t *err);

/* Trains nn on n threads (1 to PB_NN_TRAIN_THREADS_MAX; 1, the default, is
 * the calling thread alone): each minibatch of a training step is split
 * into n consecutive shards of rows (fewer when it has fewer rows), whose
 * forward and backward passes run at once, shard 0 on the calling thread
 * and the others on threads of their own with one intra-op thread each;
 * their losses and gradients are added in shard order before the Adam
 * step, which runs on the calling thread. Data parallelism rather than
 * libtorch's intra-op threads: those spin-wait for each other on every
 * operator, which on a small network costs more than it saves and
 * collapses when another process wants the cores (docs/nn.md). The result
 * is deterministic for a given n, and with n 1 exactly that of one
 * thread; with n > 1 its float sums are in another order, so it differs
 * in the last bits. PB_EINVAL for a bad n. */
#define PB_NN_TRAIN_THREADS_MAX PB_NN_MAX_TRAIN_THREADS /* bounds.h */
int pb_nn_set_train_threads(pb_nn_t *nn, int n, pb_err_t *err);

/* nn's training threads (1 for NULL). */
int pb_nn_train_threads(const pb_nn_t *nn);

/* The L2 norm of the gradient of the last training step, before any
 * clipping (0 before the first step). */
double pb_nn_last_grad_norm(const pb_nn_t *nn);

/* The two parts of the loss of the last step taken (the *loss that
 * pb_nn_train_step reported is their sum): for a PB_NN_HEAD_PV network the
 * policy cross-entropy and the value MSE; for the other heads policy 0 and
 * value = the whole loss. Both 0 before the first step; a step refused
 * (batch 0, PB_ERANGE) leaves them as they were. Either pointer may be
 * NULL. Returns 0, or PB_EINVAL for a NULL network. */
int pb_nn_last_loss_parts(const pb_nn_t *nn, double *policy, double *value);

/* Changes the optimizer settings (keeps Adam's moments). */
int pb_nn_set_opt(pb_nn_t *nn, const pb_nn_opt_t *opt, pb_err_t *err);

/* Weights to a flat byte buffer (small header with the spec and `version`,
 * then float32 tensors). *out is malloc'd and owned by the caller (free()).
 * Independent of the libtorch version. */
int pb_nn_weights_save(const pb_nn_t *nn, uint64_t version, uint8_t **out,
                       size_t *len, pb_err_t *err);

/* Reads the spec and version from a weights buffer without loading it.
 * Checks the header (magic, format, length, spec) but not the checksum;
 * pb_nn_weights_load checks everything. */
int pb_nn_weights_peek(const uint8_t *buf, size_t len, pb_nn_spec_t *spec,
                       uint64_t *version, pb_err_t *err);

/* Loads weights saved by pb_nn_weights_save into nn and sets *version (may
 * be NULL). A buffer whose spec differs from nn's is refused with
 * PB_EMISMATCH naming the field; a truncated or corrupt one (length, magic,
 * checksum) with PB_ECORRUPT; an unknown format version with PB_EUNSUPP; a
 * state buffer with PB_EMISMATCH. nn is left unchanged on any error. */
int pb_nn_weights_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                       uint64_t *version, pb_err_t *err);

/* Full training state (weights + optimizer moments + step count) to bytes,
 * for checkpoints. *out is malloc'd, caller frees. */
int pb_nn_state_save(const pb_nn_t *nn, uint8_t **out, size_t *len,
                     pb_err_t *err);

/* Inverse of pb_nn_state_save: restores weights, Adam moments and step
 * count (the optimizer settings stay those of nn). Errors as
 * pb_nn_weights_load; nn is unchanged on error. */
int pb_nn_state_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                     pb_err_t *err);

/* Reads the spec from a state buffer without loading it (header checks
 * only, as pb_nn_weights_peek). The step count is known after loading
 * (pb_nn_train_steps). */
int pb_nn_state_peek(const uint8_t *buf, size_t len, pb_nn_spec_t *spec,
                     pb_err_t *err);

/* Copies weights (not optimizer state) from src into dst (same spec, any
 * devices). PB_EMISMATCH naming the field if the specs differ. */
int pb_nn_copy_weights(pb_nn_t *dst, const pb_nn_t *src, pb_err_t *err);

/* Writes the weights of n networks as one file that Python reads with
 * torch.load(path): a dict "<prefix[i]>.<param name>" -> tensor, parameter
 * names "conv<k>.weight", "conv<k>.bias", "dense<k>.weight", "dense<k>.bias",
 * "head.weight", "head.bias" with nn.Conv2d / nn.Linear shapes. A PV
 * network's head is the same one nn.Linear with A + 1 outputs; the reader
 * applies tanh to its last column only (docs/nn.md has the Module). The
 * file is written to "<path>.tmp.<pid>" and renamed. PB_EINVAL for a
 * missing or duplicate prefix, PB_EIO if the file cannot be written. */
int pb_nn_export_torch(pb_nn_t *const *nets, const char *const *prefix, int n,
                       const char *path, pb_err_t *err);

#endif
