/* model.h - a model: the networks a config describes, and the part of a
 * checkpoint that holds them.
 *
 * A checkpoint file (common/run/ckpt.h) written by the trainer (common/train/learn.h)
 * holds these sections, which this module alone reads and writes:
 *
 *   learn.meta    7 little-endian u64: magic "PBLEARN1", game id, version
 *                 (iterations trained), the trainer's RNG state (4 words)
 *   v.state       V with its Adam moments (pb_nn_state_save); absent in a
 *                 checkpoint of algorithm alphazero
 *   q.state       Q, or the policy+value network of an alphazero run
 *   config.yaml   the run's config as YAML (pb_config_to_yaml)
 *   model.kind    the family of the networks (pb_nets_t, common/run/algos.h)
 *                 as its name: "vq", "pv" or "linear". A file written
 *                 before this section existed has the family of the
 *                 algorithm its config.yaml names (pb_model_file_kind).
 *
 * A model file (probs export OUT.pbck, data/models/) is a checkpoint with
 * v.weights / q.weights (pb_nn_weights_save: the weights alone, a third of
 * the states' size) in place of v.state / q.state, and learn.meta's RNG
 * words zero. Everything that reads a model reads either; a learner
 * resuming from a model file starts with fresh Adam moments.
 *
 * The trainer adds its own sections beside them (its second RNG stream,
 * the replay window, the learner's blob). Everything that only plays,
 * analyses or exports a model opens it with pb_model_open, and so never
 * links the trainer.
 *
 * Which networks a config describes follows from its algorithm's family
 * (pb_algos_of(cfg)->nets, common/run/algos.h):
 *   PB_NETS_VQ      V and Q as model.v / model.q say;
 *   PB_NETS_PV      no V: the Q slot holds the policy+value network
 *                   (PB_NN_HEAD_PV) and pb_model_v is NULL;
 *   PB_NETS_LINEAR  both networks one linear layer over the input planes
 *                   whatever model.v / model.q say: V (tanh head) is the
 *                   learned evaluation (common/nn/tdnet.h), Q (linear head)
 *                   is never trained and only fills its slot, so that every
 *                   reader of a model reads one. */
#ifndef PB_MODEL_H
#define PB_MODEL_H

#include <stdint.h>

#include "algos.h"
#include "ckpt.h"
#include "config.h"
#include "err.h"
#include "game.h"
#include "nn.h"

/* ---- the networks of a config ------------------------------------------ */

/* Fills a network spec for V (q == 0) or Q (q != 0) from the model.v /
 * model.q keys, the family of c's algorithm and the input/output shape of
 * game g. In the PB_NETS_PV family the Q slot holds the policy+value
 * network: model.q's trunk with a PB_NN_HEAD_PV head of num_actions + 1
 * outputs (V is unused); PB_NETS_LINEAR: one linear layer each. */
void pb_model_spec(const pb_config_t *c, const pb_game_t *g, int q,
                   pb_nn_spec_t *spec);

/* Fills Adam settings for V (q == 0) or Q (q != 0). */
void pb_model_opt(const pb_config_t *c, int q, pb_nn_opt_t *opt);

/* Creates the networks cfg describes for game g on `device` ("cpu",
 * "cuda" or "auto"), with the Adam settings of pb_model_opt and weights
 * seeded from cfg->seed (the same seed gives the same untrained pair), and
 * sets libtorch's thread count to model.threads (pb_nn_set_threads).
 * *v is NULL in the PB_NETS_PV family. `what` names the device's source in
 * messages (e.g. "model.learner_device 'cuda' (the learner)"). Returns 0
 * (both set) or pb_nn_new's error with *v and *q NULL. */
int pb_model_nets(const pb_config_t *cfg, const pb_game_t *g,
                  const char *device, const char *what, pb_nn_t **v,
                  pb_nn_t **q, pb_err_t *err);

/* The threads the learner trains each network on
 * (pb_nn_set_train_threads) on `device` ("cpu" or "cuda", as
 * pb_nn_device says): model.learner_threads, or for 0 (auto) on a CPU
 * half the online CPUs, at least 1 and at most 8 (the learner's share
 * while the workers of the node wait for its networks), and 1 on CUDA
 * (shards there would only multiply the kernel launches of a step). */
int pb_model_learner_threads(const pb_config_t *cfg, const char *device);

/* The minibatch a learner on `device` ("cpu" or "cuda", as pb_nn_device
 * says) trains with: with train.cuda_batch_scale s > 1 on CUDA, cfg's
 * train.batch_size becomes batch_size x s, v_lr and q_lr x sqrt(s), and
 * lr_warmup_steps / s rounded up (the warm-up over the same samples); the
 * cosine decay counts iterations and is unchanged. On the CPU, or with s 1,
 * cfg is left alone (on the CPU a larger minibatch trains the networks no
 * faster per sample: docs/performance.md, "Larger minibatches"). Writes
 * the line for the log into why (n >= 256 is enough; "" when s is 1), e.g.
 * "train.cuda_batch_scale 4 on cuda: minibatches of 512, v_lr 0.006, q_lr
 * 0.006, lr_warmup_steps 50". Returns the scale applied (1: unchanged). */
int pb_model_batch_scale(pb_config_t *cfg, const char *device, char *why,
                         size_t n);

/* The precision of a role's networks (PB_DEVICE_LEARNER, _ACTOR,
 * _SEARCHER, or _OTHER: the evaluator and agents) running on `device`
 * ("cpu" or "cuda", as pb_nn_device says): the role's key
 * (pb_config_precision), "auto" resolved on that device
 * (common/nn/precision.h). Sets *prec (PB_NN_FP32 or PB_NN_BF16; may be
 * NULL) and writes the sentence for the log into why (n >= 256; may be
 * NULL), e.g. "bf16 (model.precision 'auto': this CPU has AVX-512 BF16)".
 * Returns 0, or PB_ECONFIG naming the key: an explicit bf16 where the
 * device has no native bfloat16. */
int pb_model_precision(const pb_config_t *cfg, int role, const char *device,
                       int *prec, char *why, size_t n, pb_err_t *err);

/* ---- the sections of a checkpoint ---------------------------------------- */

/* Adds learn.meta, v.state (when v is not NULL), q.state, config.yaml and
 * model.kind (the family of cfg's algorithm) to ck for the networks v and q
 * of game g at `version`, with the trainer's RNG state rng[4] and the
 * config cfg. Returns 0, PB_ENOMEM or
 * the error of pb_nn_state_save / pb_config_to_yaml / pb_ckpt_add. */
int pb_model_write(pb_ckpt_t *ck, const pb_config_t *cfg, const pb_game_t *g,
                   uint64_t version, const uint64_t rng[4], const pb_nn_t *v,
                   const pb_nn_t *q, pb_err_t *err);

/* As pb_model_write, but a model file: learn.meta (RNG words zero),
 * v.weights (when v is not NULL), q.weights, config.yaml and model.kind.
 * Errors as
 * pb_model_write (pb_nn_weights_save's instead of pb_nn_state_save's). */
int pb_model_write_weights(pb_ckpt_t *ck, const pb_config_t *cfg,
                           const pb_game_t *g, uint64_t version,
                           const pb_nn_t *v, const pb_nn_t *q, pb_err_t *err);

/* The family of the networks in ck (read from `path`, for messages) into
 * *nets: its model.kind section or, in a file written before there was one,
 * the family of the algorithm its config.yaml names (the one place that
 * infers it). Returns 0 or PB_ECORRUPT (an unknown model.kind, no config
 * inside). */
int pb_model_file_kind(const pb_ckpt_t *ck, const char *path, int *nets,
                       pb_err_t *err);

/* Checks that ck (read from `path`, for messages) holds a model of game g
 * and family `nets` (pb_nets_t) whose networks have the shapes of v and q
 * (v NULL in the PB_NETS_PV family), without loading anything. Returns 0,
 * PB_ECORRUPT (not a probs learner checkpoint, bad metadata, a model.kind
 * its sections contradict), or PB_EMISMATCH (another family of networks,
 * game or network shape), the message naming the file. */
int pb_model_check(const pb_ckpt_t *ck, const char *path, const pb_game_t *g,
                   int nets, const pb_nn_t *v, const pb_nn_t *q,
                   pb_err_t *err);

/* pb_model_check, then loads the networks' states (weights, Adam moments,
 * step counts; a model file's weights alone) into v and q and sets
 * *version and rng[4] (either may be NULL) from learn.meta. All or
 * nothing: on an error v and q keep their states. */
int pb_model_read(const pb_ckpt_t *ck, const char *path, const pb_game_t *g,
                  int nets, pb_nn_t *v, pb_nn_t *q, uint64_t *version,
                  uint64_t rng[4], pb_err_t *err);

/* ---- a model opened from a checkpoint ---------------------------------- */

typedef struct pb_model pb_model_t;

/* Opens the checkpoint at `path` on its own: reads the config stored
 * inside it (into *cfg, when not NULL) and its family (pb_model_file_kind;
 * PB_ECORRUPT when that is not the family of the stored algorithm), creates
 * its networks on `device`
 * (NULL: the stored config's model.learner_device / model.device) and
 * loads their states. The networks compute in the stored config's
 * model.precision resolved on this machine (PB_DEVICE_OTHER), where a
 * stored 'bf16' that this device lacks natively plays in fp32 (the key
 * was the training machine's choice): pb_model_set_precision changes
 * it. NULL with err filled: the error of pb_ckpt_read
 * (PB_EIO, PB_ECORRUPT), PB_ECORRUPT when there is no config inside or
 * the sections do not agree, PB_ECONFIG for a stored config this build
 * refuses, or pb_nn_new's error. */
pb_model_t *pb_model_open(const char *path, const char *device,
                          pb_config_t *cfg, pb_err_t *err);

/* Sets the precision of the model's networks (PB_NN_FP32 or PB_NN_BF16,
 * pb_nn_set_precision). Returns 0 or PB_EINVAL. */
int pb_model_set_precision(pb_model_t *m, int precision, pb_err_t *err);

/* The precision of the model's networks (PB_NN_FP32 or PB_NN_BF16). */
int pb_model_get_precision(const pb_model_t *m);

/* Frees the model and its networks; accepts NULL and sets *m to NULL. */
void pb_model_destroy(pb_model_t **m);

const pb_game_t *pb_model_game(const pb_model_t *m);
const pb_config_t *pb_model_config(const pb_model_t *m);
/* The networks, owned by the model: V (NULL in the PB_NETS_PV family) and
 * Q (the policy+value network in that family). */
pb_nn_t *pb_model_v(pb_model_t *m);
pb_nn_t *pb_model_q(pb_model_t *m);
/* The family of the model's networks (pb_nets_t: PB_NETS_VQ, PB_NETS_PV,
 * PB_NETS_LINEAR), as its file records it. */
int pb_model_kind(const pb_model_t *m);
/* Iterations trained (the checkpoint's version). */
uint64_t pb_model_version(const pb_model_t *m);

#endif
