/* learn_impl.h - private to common/train/learn*.c (not part of learn.h): the
 * learner's struct and what learn.c (training) and learn_state.c
 * (checkpoints, reports) share. */
#ifndef PB_LEARN_IMPL_H
#define PB_LEARN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "learn.h"
#include "replay.h"


/* One network's training scratch, grown as needed, reused across
 * iterations, and the random stream it draws from. */
typedef struct {
  float *in, *tgt, *mask; /* chunk_steps minibatches */
  float *lrs, *loss;      /* per step of a chunk */
  double *gnorm, *parts;
  uint32_t *order;
  size_t order_cap;
  pb_rng_t *rng;
} trainer_t;

struct pb_learn {
  pb_config_t cfg;
  const pb_game_t *g;
  pb_nn_t *v, *q;
  uint64_t version;
  pb_rng_t rng;  /* minibatch order and mirroring */
  pb_rng_t vrng; /* the same for V when it trains beside Q (after the
                    search), so that the two threads never share a stream */
  trainer_t tr[2]; /* scratch of V (0) and Q (1) */
  int batch_cap;
  int chunk_steps; /* minibatches per pb_nn_train_batches call */
  /* distinct positions of the current iteration */
  pb_state_t *uniq;
  uint32_t *uniq_of; /* stored position -> distinct index */
  uint32_t *uniq_count; /* distinct index -> its occurrences */
  uint32_t *table;   /* open addressing: distinct index + 1, 0 = empty */
  size_t uniq_cap, of_cap, count_cap, table_cap, n_uniq;
  /* V targets of the current positions */
  float *vt;
  size_t vt_cap;
  /* the replay window: data of up to train.replay_iterations - 1 earlier
   * iterations, oldest first */
  pb_replay_t replay;
  /* who delivered what the next pb_learn_end_iteration keeps (its
   * episodes', its distinct positions' tags; pb_learn_set_origin) */
  uint64_t *org_ep, *org_uniq;
  size_t n_org_ep, n_org_uniq, org_ep_cap, org_uniq_cap;
  pb_nn_opt_t vopt, qopt; /* the configured optimizer settings */
  int nets;               /* pb_nets_t: the family of the networks */
  int az;                 /* nets is PB_NETS_PV (v is NULL) */
  char precision_why[256]; /* the networks' precision, for the log */
  char batch_why[256];     /* train.cuda_batch_scale applied, for the log */
};

#endif
