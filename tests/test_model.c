/* test_model.c - a model (common/nn/model): the networks a config describes, its
 * sections of a checkpoint written and read back exactly, a checkpoint
 * opened on its own (pb_model_open) computing what the trainer's networks
 * compute, and checkpoints of another game, algorithm or shape refused
 * with nothing changed; a model file (weights only) opened as the
 * checkpoint it came from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algos.h"
#include "ckpt.h"
#include "config.h"
#include "game.h"
#include "learn.h"
#include "model.h"
#include "nn.h"
#include "proc.h"

/* A small connect4 config with sets applied. */
static void config(pb_config_t *c, const char *const *sets) {
  pb_err_t err;
  pb_config_defaults(c);
  if (pb_config_load_file(c, PB_SOURCE_DIR "/configs/connect4-smoke.yaml",
                          &err) != 0)
    fail_msg("%s", err.msg);
  for (int i = 0; sets != NULL && sets[i] != NULL; i++)
    if (pb_config_apply_override(c, sets[i], &err) != 0)
      fail_msg("%s: %s", sets[i], err.msg);
}

/* The forward outputs of nn on a few fixed inputs, into out[rows*outputs]. */
static void outputs_of(pb_nn_t *nn, const pb_game_t *g, float *out) {
  const int in_size = g->planes * g->height * g->width;
  float *x = calloc(3 * (size_t)in_size, sizeof *x);
  assert_non_null(x);
  for (int i = 0; i < 3 * in_size; i++) x[i] = (float)((i * 7) % 3) - 1.0f;
  pb_err_t err;
  assert_int_equal(pb_nn_forward(nn, x, 3, out, &err), 0);
  free(x);
}

static void test_spec(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  c.model.q.dense_units = 33;
  c.train.q_lr = 0.5;
  const pb_game_t *g = pb_game_by_name("connect4");
  assert_non_null(g);
  pb_nn_spec_t v, q;
  pb_model_spec(&c, g, 0, &v);
  pb_model_spec(&c, g, 1, &q);
  assert_int_equal(v.outputs, 1);
  assert_int_equal(v.head, PB_NN_HEAD_TANH);
  assert_int_equal(q.outputs, g->num_actions);
  assert_int_equal(q.head, PB_NN_HEAD_LINEAR);
  assert_int_equal(v.planes, g->planes);
  assert_int_equal(v.height, g->height);
  assert_int_equal(v.width, g->width);
  assert_int_equal(v.conv_channels, 16);
  assert_int_equal(q.dense_units, 33);
  pb_nn_opt_t o;
  pb_model_opt(&c, 1, &o);
  assert_true(o.lr == 0.5f);
  pb_model_opt(&c, 0, &o);
  assert_true(o.lr == 0.003f);
  assert_true(o.weight_decay == 0.0001f);
  /* alphazero: the Q slot is a policy+value network */
  pb_err_t err;
  assert_int_equal(pb_config_set(&c, "algorithm", "alphazero", &err), 0);
  const pb_game_t *o8 = pb_game_by_name("othello");
  pb_model_spec(&c, o8, 1, &q);
  assert_int_equal(q.head, PB_NN_HEAD_PV);
  assert_int_equal(q.outputs, o8->num_actions + 1);
}

/* train.cuda_batch_scale: a CUDA learner's minibatch, rates and warm-up
 * scaled (the rule is pure: the device is a name here); a CPU learner's
 * left alone, and a learner made on the CPU says so in its log line. */
static void test_batch_scale(void **state) {
  (void)state;
  pb_config_t c;
  char why[256];
  pb_config_defaults(&c);
  c.train.batch_size = 128;
  c.train.v_lr = 0.003;
  c.train.q_lr = 0.004;
  c.train.lr_warmup_steps = 201;
  pb_config_t c0 = c;
  /* off: nothing changes, nothing to log */
  assert_int_equal(pb_model_batch_scale(&c, "cuda", why, sizeof why), 1);
  assert_memory_equal(&c, &c0, sizeof c);
  assert_string_equal(why, "");
  /* on the CPU: nothing changes, and the log says why */
  c.train.cuda_batch_scale = c0.train.cuda_batch_scale = 4;
  assert_int_equal(pb_model_batch_scale(&c, "cpu", why, sizeof why), 1);
  assert_memory_equal(&c, &c0, sizeof c);
  assert_non_null(strstr(why, "not applied on cpu"));
  /* on CUDA: x4 rows, x2 rates, the warm-up over the same samples */
  assert_int_equal(pb_model_batch_scale(&c, "cuda", why, sizeof why), 4);
  assert_int_equal(c.train.batch_size, 512);
  assert_true(c.train.v_lr == 0.006);
  assert_true(c.train.q_lr == 0.008);
  assert_int_equal(c.train.lr_warmup_steps, 51); /* 201 / 4 rounded up */
  assert_int_equal(c.train.lr_decay_iterations, c0.train.lr_decay_iterations);
  assert_non_null(strstr(why, "minibatches of 512"));
  c = c0;
  c.train.lr_warmup_steps = 0;
  assert_int_equal(pb_model_batch_scale(&c, "cuda", NULL, 0), 4);
  assert_int_equal(c.train.lr_warmup_steps, 0);
  /* a learner on the CPU: not applied, said in its log line */
  config(&c, (const char *const[]){"train.cuda_batch_scale=4",
                                   "train.replay_capacity=100000", NULL});
  pb_err_t err;
  pb_learn_t *l = pb_learn_new(&c, &err);
  assert_non_null(l);
  assert_string_equal(pb_nn_device(pb_learn_q(l)), "cpu");
  assert_non_null(strstr(pb_learn_batch(l), "not applied on cpu"));
  pb_learn_destroy(&l);
}

/* pb_model_write then pb_model_read into networks of another seed: the
 * same outputs, version and RNG state. */
static void test_write_read(void **state) {
  (void)state;
  pb_config_t c, c2;
  config(&c, NULL);
  static const char *const other[] = {"seed=99", NULL};
  config(&c2, other);
  const pb_game_t *g = &pb_game_connect4;
  pb_nn_t *v, *q, *v2, *q2;
  pb_err_t err;
  assert_int_equal(pb_model_nets(&c, g, "cpu", "test", &v, &q, &err), 0);
  assert_int_equal(pb_model_nets(&c2, g, "cpu", "test", &v2, &q2, &err), 0);
  float a[3 * 7], b[3 * 7];
  outputs_of(q, g, a);
  outputs_of(q2, g, b);
  assert_true(memcmp(a, b, sizeof a) != 0); /* other seed, other weights */
  pb_ckpt_t *ck = pb_ckpt_new(&err);
  const uint64_t rng[4] = {1, 2, 3, 4};
  assert_int_equal(pb_model_write(ck, &c, g, 42, rng, v, q, &err), 0);
  uint64_t version = 0, rng2[4] = {0};
  assert_int_equal(
      pb_model_read(ck, "mem", g, PB_NETS_VQ, v2, q2, &version, rng2, &err), 0);
  assert_int_equal(version, 42);
  assert_memory_equal(rng, rng2, sizeof rng);
  outputs_of(q2, g, b);
  assert_memory_equal(a, b, sizeof a);
  float va[3], vb[3];
  outputs_of(v, g, va);
  outputs_of(v2, g, vb);
  assert_memory_equal(va, vb, sizeof va);
  pb_ckpt_destroy(&ck);
  pb_nn_destroy(&v);
  pb_nn_destroy(&q);
  pb_nn_destroy(&v2);
  pb_nn_destroy(&q2);
}

/* A trainer's checkpoint opened on its own: its config, game, version and
 * networks, on the device asked for. */
static void test_open(void **state) {
  (void)state;
  char dir[256], path[320];
  tp_tmpdir(dir, sizeof dir, "model");
  snprintf(path, sizeof path, "%s/ckpt.pbck", dir);
  pb_config_t c;
  config(&c, NULL);
  pb_err_t err;
  pb_learn_t *l = pb_learn_new(&c, &err);
  assert_non_null(l);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  pb_config_t got;
  pb_model_t *m = pb_model_open(path, "cpu", &got, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  assert_ptr_equal(pb_model_game(m), &pb_game_connect4);
  assert_int_equal(pb_model_version(m), 0);
  assert_int_equal(pb_model_kind(m), PB_NETS_VQ);
  assert_string_equal(got.model.device, "cpu");
  assert_string_equal(pb_model_config(m)->run.name, c.run.name);
  float a[3 * 7], b[3 * 7];
  outputs_of(pb_learn_q(l), &pb_game_connect4, a);
  outputs_of(pb_model_q(m), &pb_game_connect4, b);
  assert_memory_equal(a, b, sizeof a);
  pb_model_destroy(&m);
  assert_null(m);
  pb_model_destroy(NULL);
  /* alphazero: no V */
  static const char *const az[] = {"algorithm=alphazero", NULL};
  pb_config_t ca;
  config(&ca, az);
  pb_learn_t *la = pb_learn_new(&ca, &err);
  assert_non_null(la);
  assert_int_equal(pb_learn_save(la, path, NULL, 0, &err), 0);
  m = pb_model_open(path, NULL, NULL, &err);
  assert_non_null(m);
  assert_int_equal(pb_model_kind(m), PB_NETS_PV);
  assert_null(pb_model_v(m));
  assert_int_equal(pb_nn_spec(pb_model_q(m))->head, PB_NN_HEAD_PV);
  pb_model_destroy(&m);
  pb_learn_destroy(&la);
  pb_learn_destroy(&l);
  unlink(path);
  rmdir(dir);
}

/* Checkpoints of another game, algorithm or shape, and files that are not
 * checkpoints, are refused with a message naming the file; a refused read
 * leaves the networks as they were. */
static void test_refuses(void **state) {
  (void)state;
  pb_config_t c;
  config(&c, NULL);
  const pb_game_t *g = &pb_game_connect4;
  pb_err_t err;
  pb_nn_t *v, *q;
  assert_int_equal(pb_model_nets(&c, g, "cpu", "test", &v, &q, &err), 0);
  pb_ckpt_t *ck = pb_ckpt_new(&err);
  const uint64_t rng[4] = {0};
  assert_int_equal(pb_model_write(ck, &c, g, 3, rng, v, q, &err), 0);
  /* another game */
  pb_config_t ct;
  static const char *const ttt[] = {"game=tictactoe", NULL};
  config(&ct, ttt);
  pb_nn_t *tv, *tq;
  assert_int_equal(
      pb_model_nets(&ct, &pb_game_tictactoe, "cpu", "test", &tv, &tq, &err), 0);
  assert_int_equal(pb_model_check(ck, "f.pbck", &pb_game_tictactoe,
                                  PB_NETS_VQ, tv, tq, &err),
                   PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "f.pbck"));
  assert_non_null(strstr(err.msg, "connect4"));
  /* another shape */
  static const char *const wide[] = {"model.q.dense_units=9", NULL};
  pb_config_t cw;
  config(&cw, wide);
  pb_nn_t *wv, *wq;
  assert_int_equal(pb_model_nets(&cw, g, "cpu", "test", &wv, &wq, &err), 0);
  float before[3 * 7], after[3 * 7], vb[3], va[3];
  outputs_of(wq, g, before);
  outputs_of(wv, g, vb);
  assert_int_equal(
      pb_model_read(ck, "f.pbck", g, PB_NETS_VQ, wv, wq, NULL, NULL, &err),
                   PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "shape"));
  outputs_of(wq, g, after);
  outputs_of(wv, g, va);
  assert_memory_equal(before, after, sizeof before);
  assert_memory_equal(vb, va, sizeof vb);
  /* another algorithm: a probs checkpoint for alphazero networks */
  assert_int_equal(pb_model_check(ck, "f.pbck", g, PB_NETS_PV, NULL, q, &err),
                   PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "algorithm probs"));
  /* not a learner checkpoint */
  pb_ckpt_t *other = pb_ckpt_new(&err);
  assert_int_equal(pb_ckpt_add(other, "x", "y", 1, &err), 0);
  assert_int_equal(pb_model_check(other, "o.pbck", g, PB_NETS_VQ, v, q, &err),
                   PB_ECORRUPT);
  /* files */
  char dir[256], path[320];
  tp_tmpdir(dir, sizeof dir, "model-bad");
  snprintf(path, sizeof path, "%s/other.pbck", dir);
  assert_int_equal(pb_ckpt_write(other, path, &err), 0);
  pb_err_clear(&err);
  assert_null(pb_model_open(path, "cpu", NULL, &err));
  assert_int_equal(err.code, PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "no config inside"));
  unlink(path);
  pb_err_clear(&err);
  assert_null(pb_model_open(path, "cpu", NULL, &err));
  assert_true(err.code != 0);
  rmdir(dir);
  pb_ckpt_destroy(&other);
  pb_ckpt_destroy(&ck);
  pb_nn_t *all[] = {v, q, tv, tq, wv, wq};
  for (int i = 0; i < 6; i++) pb_nn_destroy(&all[i]);
}

/* A model file (pb_model_write_weights): weights only, opened by pb_model_open computing what the checkpoint's
 * networks compute, for both algorithms; a shape mismatch still refused. */
static void test_model_file(void **state) {
  (void)state;
  char dir[256], full[320], slim[320];
  tp_tmpdir(dir, sizeof dir, "model-file");
  snprintf(full, sizeof full, "%s/ckpt.pbck", dir);
  snprintf(slim, sizeof slim, "%s/model.pbck", dir);
  static const char *const az[] = {"algorithm=alphazero", NULL};
  for (int alg = 0; alg < 2; alg++) {
    pb_config_t c;
    config(&c, alg ? az : NULL);
    pb_err_t err;
    pb_learn_t *l = pb_learn_new(&c, &err);
    assert_non_null(l);
    assert_int_equal(pb_learn_save(l, full, NULL, 0, &err), 0);
    pb_config_t got;
    pb_model_t *m = pb_model_open(full, "cpu", &got, &err);
    if (m == NULL) fail_msg("%s", err.msg);
    pb_ckpt_t *ck = pb_ckpt_new(&err);
    assert_int_equal(pb_model_write_weights(ck, &got, pb_model_game(m), 7,
                                            pb_model_v(m), pb_model_q(m), &err),
                     0);
    const void *d;
    size_t n;
    assert_int_equal(pb_ckpt_get(ck, "q.weights", &d, &n), 0);
    assert_int_equal(pb_ckpt_get(ck, "q.state", &d, &n), PB_ENOTFOUND);
    assert_int_equal(pb_ckpt_get(ck, "v.weights", &d, &n) == 0, !alg);
    assert_int_equal(pb_ckpt_write(ck, slim, &err), 0);
    pb_ckpt_destroy(&ck);
    pb_model_t *s = pb_model_open(slim, "cpu", NULL, &err);
    if (s == NULL) fail_msg("%s", err.msg);
    assert_int_equal(pb_model_version(s), 7);
    assert_int_equal(pb_model_kind(s), alg ? PB_NETS_PV : PB_NETS_VQ);
    const int A = alg ? 8 : 7; /* PV: 7 policy logits and the value */
    float a[3 * 8], b[3 * 8];
    outputs_of(pb_model_q(m), &pb_game_connect4, a);
    outputs_of(pb_model_q(s), &pb_game_connect4, b);
    assert_memory_equal(a, b, 3 * (size_t)A * sizeof(float));
    if (!alg) {
      outputs_of(pb_model_v(m), &pb_game_connect4, a);
      outputs_of(pb_model_v(s), &pb_game_connect4, b);
      assert_memory_equal(a, b, 3 * sizeof(float));
    }
    /* another shape is still refused, naming the file */
    if (!alg) {
      static const char *const wide[] = {"model.q.dense_units=9", NULL};
      pb_config_t cw;
      config(&cw, wide);
      pb_nn_t *wv, *wq;
      assert_int_equal(pb_model_nets(&cw, &pb_game_connect4, "cpu", "test",
                                     &wv, &wq, &err),
                       0);
      pb_ckpt_t *rk = pb_ckpt_read(slim, &err);
      assert_non_null(rk);
      assert_int_equal(pb_model_read(rk, slim, &pb_game_connect4, PB_NETS_VQ,
                                     wv, wq, NULL, NULL, &err),
                       PB_EMISMATCH);
      assert_non_null(strstr(err.msg, "model.pbck"));
      pb_ckpt_destroy(&rk);
      pb_nn_destroy(&wv);
      pb_nn_destroy(&wq);
    }
    pb_model_destroy(&s);
    pb_model_destroy(&m);
    pb_learn_destroy(&l);
  }
  unlink(full);
  unlink(slim);
  rmdir(dir);
}

/* A copy of ck without its section `drop`: a file as an older build wrote
 * it. */
static pb_ckpt_t *without(const pb_ckpt_t *ck, const char *drop) {
  pb_err_t err;
  pb_ckpt_t *out = pb_ckpt_new(&err);
  assert_non_null(out);
  for (int i = 0; i < pb_ckpt_count(ck); i++) {
    const char *name = pb_ckpt_name(ck, i);
    const void *d;
    size_t n;
    if (!strcmp(name, drop)) continue;
    assert_int_equal(pb_ckpt_get(ck, name, &d, &n), 0);
    assert_int_equal(pb_ckpt_add(out, name, d, n, &err), 0);
  }
  return out;
}

/* Each algorithm's checkpoint records the family of its networks
 * (model.kind), which reads back through a file; a file written before the
 * section existed gets its family from its stored config; an unknown kind,
 * or one its config contradicts, is refused. */
static void test_kind(void **state) {
  (void)state;
  char dir[256], path[320];
  tp_tmpdir(dir, sizeof dir, "model-kind");
  snprintf(path, sizeof path, "%s/k.pbck", dir);
  const pb_game_t *g = &pb_game_connect4;
  for (size_t i = 0; i < pb_algos_count(); i++) {
    const pb_algo_data_t *a = pb_algos_at(i);
    char set[64];
    snprintf(set, sizeof set, "algorithm=%s", a->name);
    const char *const sets[] = {set, NULL};
    pb_config_t c;
    config(&c, sets);
    pb_err_t err;
    pb_nn_t *v, *q;
    assert_int_equal(pb_model_nets(&c, g, "cpu", "test", &v, &q, &err), 0);
    assert_int_equal(v == NULL, a->nets == PB_NETS_PV);
    pb_ckpt_t *ck = pb_ckpt_new(&err);
    const uint64_t rng[4] = {0};
    assert_int_equal(pb_model_write(ck, &c, g, 2, rng, v, q, &err), 0);
    const void *d;
    size_t n;
    assert_int_equal(pb_ckpt_get(ck, "model.kind", &d, &n), 0);
    assert_int_equal(n, strlen(pb_nets_name(a->nets)));
    assert_memory_equal(d, pb_nets_name(a->nets), n);
    int nets = 0;
    assert_int_equal(pb_model_file_kind(ck, "mem", &nets, &err), 0);
    assert_int_equal(nets, a->nets);
    /* through a file, and opened on its own */
    assert_int_equal(pb_ckpt_write(ck, path, &err), 0);
    pb_model_t *m = pb_model_open(path, "cpu", NULL, &err);
    if (m == NULL) fail_msg("%s: %s", a->name, err.msg);
    assert_int_equal(pb_model_kind(m), a->nets);
    pb_model_destroy(&m);
    /* an older file: no model.kind; its config says */
    pb_ckpt_t *old = without(ck, "model.kind");
    assert_int_equal(pb_ckpt_get(old, "model.kind", &d, &n), PB_ENOTFOUND);
    nets = 0;
    assert_int_equal(pb_model_file_kind(old, "old", &nets, &err), 0);
    assert_int_equal(nets, a->nets);
    assert_int_equal(pb_model_read(old, "old", g, a->nets, v, q, NULL, NULL,
                                   &err),
                     0);
    assert_int_equal(pb_ckpt_write(old, path, &err), 0);
    m = pb_model_open(path, "cpu", NULL, &err);
    if (m == NULL) fail_msg("%s (old): %s", a->name, err.msg);
    assert_int_equal(pb_model_kind(m), a->nets);
    pb_model_destroy(&m);
    /* an unknown kind; a kind its config contradicts */
    pb_ckpt_t *bad = without(ck, "model.kind");
    assert_int_equal(pb_ckpt_add(bad, "model.kind", "xy", 2, &err), 0);
    assert_int_equal(pb_model_file_kind(bad, "bad", &nets, &err), PB_ECORRUPT);
    assert_non_null(strstr(err.msg, "model.kind 'xy'"));
    pb_ckpt_destroy(&bad);
    bad = without(ck, "model.kind");
    const char *other = pb_nets_name(a->nets == PB_NETS_VQ ? PB_NETS_LINEAR
                                                           : PB_NETS_VQ);
    assert_int_equal(pb_ckpt_add(bad, "model.kind", other, strlen(other), &err),
                     0);
    assert_int_equal(pb_ckpt_write(bad, path, &err), 0);
    assert_null(pb_model_open(path, "cpu", NULL, &err));
    assert_int_equal(err.code, PB_ECORRUPT);
    assert_non_null(strstr(err.msg, "model.kind"));
    pb_ckpt_destroy(&bad);
    pb_ckpt_destroy(&old);
    pb_ckpt_destroy(&ck);
    pb_nn_destroy(&v);
    pb_nn_destroy(&q);
  }
  unlink(path);
  rmdir(dir);
}

int main(void) {
  pb_nn_set_threads(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec),
      cmocka_unit_test(test_batch_scale),
      cmocka_unit_test(test_write_read),
      cmocka_unit_test(test_open),
      cmocka_unit_test(test_refuses),
      cmocka_unit_test(test_model_file),
      cmocka_unit_test(test_kind),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
