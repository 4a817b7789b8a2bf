/* learn_state.c - the learner's run state on disk and in reports: the
 * checkpoint (common/nn/model.h's networks plus the second RNG stream, the replay
 * window (common/train/replay.h) and the caller's extra section),
 * the seeds of work items, the evaluation batch size and the CRC of an
 * iteration's targets. */
#include "bytes.h"
#include "learn.h"

#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "learn_impl.h"
#include "model.h"

/* ---- checkpoints ---------------------------------------------------- */

int pb_learn_save(const pb_learn_t *l, const char *path, const void *extra,
                  size_t extra_len, pb_err_t *err) {
  pb_ckpt_t *ck = pb_ckpt_new(err);
  int rc = ck ? 0 : err ? err->code : PB_ENOMEM;
  if (rc == 0)
    rc = pb_model_write(ck, &l->cfg, l->g, l->version, l->rng.s, l->v, l->q,
                        err);
  uint8_t rng2[32];
  for (int i = 0; i < 4; i++) pb_le_put64(rng2 + 8 * i, l->vrng.s[i]);
  if (rc == 0) rc = pb_ckpt_add(ck, "learn.rng2", rng2, sizeof rng2, err);
  if (rc == 0 && l->replay.n > 0) {
    size_t rl = 0;
    uint8_t *rb = NULL;
    rc = pb_replay_encode(&l->replay, &rb, &rl, err);
    if (rc == 0) rc = pb_ckpt_add(ck, "learn.replay", rb, rl, err);
    free(rb);
  }
  if (rc == 0 && extra != NULL)
    rc = pb_ckpt_add(ck, "extra", extra, extra_len, err);
  if (rc == 0) rc = pb_ckpt_write(ck, path, err);
  pb_ckpt_destroy(&ck);
  return rc;
}

int pb_learn_load(pb_learn_t *l, const char *path, void **extra,
                  size_t *extra_len, pb_err_t *err) {
  pb_ckpt_t *ck = pb_ckpt_read(path, err);
  if (ck == NULL) return err ? err->code : PB_ECORRUPT;
  const uint8_t *xb, *rb;
  size_t xl, rl;
  pb_replay_t window = {0};
  /* Everything is checked before anything changes, so a refusal changes
   * nothing. */
  int rc = pb_model_check(ck, path, l->g, l->nets, l->v, l->q, err);
  if (rc == 0) rc = pb_replay_init(&window, l->g->num_actions, err);
  if (rc != 0) goto done;
  if (pb_ckpt_get(ck, "learn.replay", (const void **)&rb, &rl) == 0 &&
      (rc = pb_replay_decode(&window, rb, rl, path, err)) != 0)
    goto done;
  void *xcopy = NULL;
  if (extra != NULL) {
    *extra = NULL;
    if (extra_len) *extra_len = 0;
    if (pb_ckpt_get(ck, "extra", (const void **)&xb, &xl) == 0) {
      xcopy = malloc(xl ? xl : 1);
      if (xcopy == NULL) {
        rc = pb_err_set(err, PB_ENOMEM, "learn: out of memory");
        goto done;
      }
      memcpy(xcopy, xb, xl);
      *extra = xcopy;
      if (extra_len) *extra_len = xl;
    }
  }
  rc = pb_model_read(ck, path, l->g, l->nets, l->v, l->q, &l->version,
                     l->rng.s, err);
  if (rc != 0) {
    if (extra != NULL) {
      free(*extra);
      *extra = NULL;
    }
    goto done;
  }
  const uint8_t *r2;
  size_t r2l;
  if (pb_ckpt_get(ck, "learn.rng2", (const void **)&r2, &r2l) == 0 && r2l == 32)
    for (int i = 0; i < 4; i++) l->vrng.s[i] = pb_le_get64(r2 + 8 * i);
  /* The window is the file's (none if it has none). */
  pb_replay_move(&l->replay, &window);
  /* A run resumed with a smaller train.replay_iterations keeps only the
   * newest iterations the new window holds. */
  pb_replay_trim(&l->replay, l->cfg.train.replay_iterations - 1);
done:
  pb_replay_free(&window);
  pb_ckpt_destroy(&ck);
  return rc;
}

uint64_t pb_learn_item_seed(const pb_config_t *cfg, uint64_t version,
                            uint64_t first) {
  uint64_t it = pb_mix64((uint64_t)cfg->seed ^ pb_mix64(version + 0x5E1F));
  return pb_mix64(it ^ pb_mix64(first * 0x9E3779B97F4A7C15ull + 1));
}

int pb_learn_eval_batch(int search_parallel, int expansions, int num_actions,
                        int selfplay_parallel) {
  long b = (long)search_parallel * expansions * num_actions;
  if (b < selfplay_parallel) b = selfplay_parallel;
  /* Per position, CPU forwards stop getting cheaper past a few hundred
   * rows, and bigger calls fault in fresh activation memory each time:
   * measured 1.1-2x faster search with the large model at 512 than 4096. */
  if (b > 512) b = 512;
  return (int)b;
}

uint32_t pb_learn_targets_crc(const pb_learn_t *l, const pb_episodes_t *eps,
                              const float *qtargets, size_t n) {
  uint32_t crc = 0;
  crc = pb_crc32(crc, eps->states, eps->n_states * sizeof *eps->states);
  for (size_t k = 0; k < eps->n_eps; k++)
    for (uint32_t t = 0; t < eps->len[k]; t++) {
      float v = pb_episodes_target(eps, k, t);
      crc = pb_crc32(crc, &v, sizeof v);
    }
  /* (zlib's crc32 of a NULL buffer is its initial value, 0: td runs have
   * no Q targets) */
  if (n > 0 && qtargets != NULL)
    crc =
        pb_crc32(crc, qtargets, n * (size_t)l->g->num_actions * sizeof(float));
  return crc;
}
