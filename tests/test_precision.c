/* test_precision.c - model.precision (common/nn/precision.h) and the
 * bf16 arithmetic of the libtorch shim (pb_nn_set_precision):
 * - the choice: auto is bf16 exactly where the device is native, an
 *   explicit bf16 elsewhere is refused naming the key, and the CPU's
 *   answer agrees with the kernel's /proc/cpuinfo flags;
 * - a bf16 network computes what the fp32 one does within a stated
 *   tolerance, and the shipped Connect Four network (data/models/) picks
 *   the same moves on the shipped test set but for a stated share;
 * - weights, state buffers and checkpoints stay fp32 (the same bytes
 *   whatever the precision), the inference copy follows every change of
 *   the weights, training steps in bf16 keep fp32 master weights and are
 *   deterministic, and fp32 after bf16 is bit for bit fp32 again.
 * bf16 on a CPU without it is emulated by libtorch, so every check of
 * the arithmetic runs on any CPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "game.h"
#include "learn.h"
#include "model.h"
#include "nn_fixtures.h"
#include "precision.h"
#include "testset.h"

/* The tolerances this file asserts (docs/nn.md, "Precision"). */
#define TOL_RANDOM 0.02 /* |bf16 - fp32| of a random network's outputs */
#define TOL_V 0.03      /* shipped connect4 network: V */
#define TOL_Q 0.03      /* ... and Q */
#define MOVE_SHARE                                      \
  0.01 /* share of test-set positions whose greedy move \
          may differ (near-ties of Q) */

static void test_names_and_choice(void **state) {
  (void)state;
  assert_int_equal(pb_precision_parse("fp32"), PB_PREC_FP32);
  assert_int_equal(pb_precision_parse("bf16"), PB_PREC_BF16);
  assert_int_equal(pb_precision_parse("auto"), PB_PREC_AUTO);
  assert_int_equal(pb_precision_parse("fp16"), -1);
  assert_int_equal(pb_precision_parse(NULL), -1);
  for (int p = PB_PREC_FP32; p <= PB_PREC_AUTO; p++)
    assert_int_equal(pb_precision_parse(pb_precision_name(p)), p);

  int prec = -1;
  char why[256];
  pb_err_t err;
  /* auto: bf16 where native, fp32 elsewhere, each saying why */
  assert_int_equal(pb_precision_choose("auto", "model.precision", 1,
                                       "this CPU has AVX-512 BF16", &prec, why,
                                       sizeof why, &err),
                   0);
  assert_int_equal(prec, PB_PREC_BF16);
  assert_string_equal(
      why, "bf16 (model.precision 'auto': this CPU has AVX-512 BF16)");
  assert_int_equal(
      pb_precision_choose("auto", "model.actor_precision", 0,
                          "this CPU has neither", &prec, why, sizeof why, &err),
      0);
  assert_int_equal(prec, PB_PREC_FP32);
  assert_non_null(strstr(why,
                         "fp32 (model.actor_precision 'auto': this CPU "
                         "has neither"));
  /* fp32 is fp32 anywhere; bf16 where native */
  assert_int_equal(
      pb_precision_choose("fp32", NULL, 1, NULL, &prec, why, sizeof why, &err),
      0);
  assert_int_equal(prec, PB_PREC_FP32);
  assert_int_equal(
      pb_precision_choose("bf16", NULL, 1, "x", &prec, why, sizeof why, &err),
      0);
  assert_int_equal(prec, PB_PREC_BF16);
  /* an explicit bf16 where it is not native: refused, naming the key */
  prec = -1;
  assert_int_equal(pb_precision_choose("bf16", "model.searcher_precision", 0,
                                       "this CPU has neither AMX-BF16 nor "
                                       "AVX-512 BF16",
                                       &prec, why, sizeof why, &err),
                   PB_ECONFIG);
  assert_int_equal(prec, -1);
  assert_non_null(strstr(err.msg, "model.searcher_precision"));
  assert_non_null(strstr(err.msg, "neither AMX-BF16"));
  assert_int_equal(pb_precision_choose("half", "model.precision", 1, "x", &prec,
                                       why, sizeof why, &err),
                   PB_ECONFIG);
  assert_non_null(strstr(err.msg, "'half'"));
}

/* auto on the CPU picks bf16 exactly where it is native; on a device
 * that asks for CUDA without one (this CPU-only build or node) it falls
 * back to the CPU's answer, as pb_nn_new falls back to the CPU. (On CUDA it
 * picks fp32: that needs a GPU, docs/performance.md.) */
static void test_auto_bf16_cpu(void **state) {
  (void)state;
  char why[160], why2[160];
  int native = pb_precision_native("cpu", why, sizeof why);
  assert_int_equal(pb_precision_auto_bf16("cpu", why2, sizeof why2), native);
  assert_string_equal(why, why2);
  if (pb_nn_cuda_capability(NULL, NULL) != 0)
    assert_int_equal(pb_precision_auto_bf16("auto", NULL, 0), native);
  else
    assert_int_equal(pb_precision_auto_bf16("auto", why2, sizeof why2), 0);
}

/* The CPU's answer against the kernel's: native exactly when the flags
 * list avx512_bf16 (with avx512f) or amx_bf16. */
static void test_cpu_native_matches_cpuinfo(void **state) {
  (void)state;
  char why[160];
  int native = pb_precision_native("cpu", why, sizeof why);
  assert_true(strlen(why) > 10);
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) skip();
  char line[8192];
  int flags = 0, avx512f = 0, bf16 = 0, amx = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "flags", 5) != 0) continue;
    flags = 1;
    for (char *t = strtok(line, " \t\n"); t != NULL;
         t = strtok(NULL, " \t\n")) {
      avx512f |= !strcmp(t, "avx512f");
      bf16 |= !strcmp(t, "avx512_bf16");
      amx |= !strcmp(t, "amx_bf16");
    }
    break;
  }
  fclose(f);
  if (!flags) skip(); /* not x86 */
  print_message("cpu: %s (native %d)\n", why, native);
  assert_int_equal(native, amx || (avx512f && bf16));
  /* the choice of auto on this machine, as a role would log it */
  pb_config_t c;
  pb_config_defaults(&c);
  snprintf(c.model.precision, sizeof c.model.precision, "auto");
  int prec;
  char said[256];
  pb_err_t err;
  assert_int_equal(pb_model_precision(&c, PB_DEVICE_ACTOR, "cpu", &prec, said,
                                      sizeof said, &err),
                   0);
  assert_int_equal(prec, native ? PB_PREC_BF16 : PB_PREC_FP32);
  assert_non_null(strstr(said, "model.precision 'auto'"));
  /* a role's own key wins over model.precision */
  snprintf(c.model.actor_precision, sizeof c.model.actor_precision, "fp32");
  assert_int_equal(pb_model_precision(&c, PB_DEVICE_ACTOR, "cpu", &prec, said,
                                      sizeof said, &err),
                   0);
  assert_int_equal(prec, PB_PREC_FP32);
  assert_string_equal(said, "fp32 (model.actor_precision 'fp32')");
  /* explicit bf16 on this machine: accepted exactly where native */
  snprintf(c.model.precision, sizeof c.model.precision, "bf16");
  int rc = pb_model_precision(&c, PB_DEVICE_SEARCHER, "cpu", &prec, said,
                              sizeof said, &err);
  assert_int_equal(rc, native ? 0 : PB_ECONFIG);
  if (rc != 0) assert_non_null(strstr(err.msg, "model.precision"));
}

/* max |a - b| over n floats */
static double max_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (d > m) m = d;
  }
  return m;
}

/* A random network in both precisions: outputs within TOL_RANDOM, the
 * buffers saved the same bytes, fp32 again bit for bit fp32. */
static void test_forward_agrees_buffers_fp32(void **state) {
  (void)state;
  const pb_nn_spec_t specs[3] = {
      c4_large(7, PB_NN_HEAD_LINEAR),
      c4_large(1, PB_NN_HEAD_TANH),
      {2, 6, 7, 8, PB_NN_HEAD_PV, 2, 16, 1, 32, 1, PB_NN_NORM_LAYER}};
  enum { B = 64 };
  pb_rng_t r;
  pb_rng_seed(&r, 5, 0);
  float *in = malloc(sizeof(float) * B * 84);
  for (int i = 0; i < B * 42; i++) {
    uint32_t c = pb_rng_below(&r, 3);
    in[2 * i] = c == 1;
    in[2 * i + 1] = c == 2;
  }
  pb_err_t err;
  for (int k = 0; k < 3; k++) {
    pb_nn_t *nn = make(&specs[k], 1e-3f, 40 + k);
    const int O = specs[k].outputs;
    float *a = malloc(sizeof(float) * B * O),
          *b = malloc(sizeof(float) * B * O),
          *c = malloc(sizeof(float) * B * O);
    size_t l32, l16, s32, s16;
    uint8_t *w32 = bytes_of(nn, 0, &l32), *st32 = bytes_of(nn, 1, &s32);
    assert_int_equal(pb_nn_forward(nn, in, B, a, &err), 0);
    assert_int_equal(pb_nn_set_precision(nn, PB_NN_BF16, &err), 0);
    assert_int_equal(pb_nn_precision(nn), PB_NN_BF16);
    assert_int_equal(pb_nn_forward(nn, in, B, b, &err), 0);
    double d = max_diff(a, b, (size_t)B * O);
    print_message("spec %d: max |bf16 - fp32| = %.5f\n", k, d);
    assert_true(d <= TOL_RANDOM);
    assert_true(d > 0); /* it did compute in bf16 */
    /* the same bytes saved whatever the precision */
    uint8_t *w16 = bytes_of(nn, 0, &l16), *st16 = bytes_of(nn, 1, &s16);
    assert_int_equal(l16, l32);
    assert_int_equal(s16, s32);
    assert_memory_equal(w16, w32, l32);
    assert_memory_equal(st16, st32, s32);
    /* back to fp32: bit for bit what it computed before */
    assert_int_equal(pb_nn_set_precision(nn, PB_NN_FP32, &err), 0);
    assert_int_equal(pb_nn_forward(nn, in, B, c, &err), 0);
    assert_memory_equal(a, c, sizeof(float) * B * O);
      /* bf16 whatever the batch: each row alone gives what it gave in the
     * batch of B (the spot check compares values of other batches) */
    assert_int_equal(pb_nn_set_precision(nn, PB_NN_BF16, &err), 0);
    double worst = 0;
    for (int r = 0; r < B; r += 7) {
      assert_int_equal(pb_nn_forward(nn, in + (size_t)r * 84, 1, c, &err), 0);
      double d1 = max_diff(c, b + (size_t)r * O, (size_t)O);
      if (d1 > worst) worst = d1;
    }
    print_message("spec %d: bf16 row alone vs in a batch of %d: %.2g\n", k, B,
                  worst);
    assert_true(worst <= 1e-5);
    free(w32), free(st32), free(w16), free(st16), free(a), free(b), free(c);
    pb_nn_destroy(&nn);
  }
  /* bad arguments */
  assert_int_equal(pb_nn_set_precision(NULL, PB_NN_BF16, &err), PB_EINVAL);
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *nn = make(&s, 1e-3f, 1);
  assert_int_equal(pb_nn_set_precision(nn, 7, &err), PB_EINVAL);
  assert_int_equal(pb_nn_precision(nn), PB_NN_FP32);
  pb_nn_destroy(&nn);
  free(in);
}

/* On a CPU the dense layers compute in fp32 whatever the precision
 * (common/nn/nn.cpp, pb__lp_n: oneDNN 2.6's bf16 matrix products corrupt
 * memory when set up on several threads; bench_nn_threads). A network
 * without convolutions is then fp32 throughout: its bf16 forward passes
 * and training steps are fp32's bit for bit (with bf16 dense layers they
 * differ in the third digit). */
static void test_dense_layers_fp32_on_cpu(void **state) {
  (void)state;
  const pb_nn_spec_t mlp = {2, 6, 7, 7, PB_NN_HEAD_LINEAR, 0, 0, 2, 48, 0, 0};
  enum { B = 40 };
  pb_rng_t r;
  pb_rng_seed(&r, 9, 0);
  float in[B * 84], tgt[B * 7], mask[B * 7];
  for (int i = 0; i < B * 84; i++) in[i] = (float)pb_rng_below(&r, 2);
  for (int i = 0; i < B * 7; i++) {
    tgt[i] = (float)pb_rng_below(&r, 201) / 100.0f - 1.0f;
    mask[i] = 1.0f;
  }
  pb_err_t err;
  pb_nn_t *a = make(&mlp, 1e-3f, 3), *b = make(&mlp, 1e-3f, 3);
  assert_int_equal(pb_nn_set_precision(b, PB_NN_BF16, &err), 0);
  float oa[B * 7], ob[B * 7], la, lb;
  for (int step = 0; step < 3; step++) {
    assert_int_equal(pb_nn_forward(a, in, B, oa, &err), 0);
    assert_int_equal(pb_nn_forward(b, in, B, ob, &err), 0);
    assert_memory_equal(oa, ob, sizeof oa);
    assert_int_equal(pb_nn_train_step(a, in, tgt, mask, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, in, tgt, mask, B, &lb, &err), 0);
    assert_true(la == lb);
  }
  assert_true(same_weights(a, b));
  assert_true(same_bytes(a, b, 1));
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
}

/* Training in bf16: fp32 master weights that move, an inference copy that
 * follows every change of the weights (steps, loads, copies), and
 * pb_nn_train_batches equal to k pb_nn_train_step calls bit for bit. */
static void test_train_bf16(void **state) {
  (void)state;
  pb_nn_spec_t s = c4_large(7, PB_NN_HEAD_LINEAR);
  enum { B = 32, K = 4 };
  pb_rng_t r;
  pb_rng_seed(&r, 9, 0);
  float *in = malloc(sizeof(float) * B * K * 84);
  float *tgt = malloc(sizeof(float) * B * K * 7);
  float *mask = malloc(sizeof(float) * B * K * 7);
  for (int i = 0; i < B * K * 42; i++) {
    uint32_t c = pb_rng_below(&r, 3);
    in[2 * i] = c == 1;
    in[2 * i + 1] = c == 2;
  }
  fill_uniform(&r, tgt, (size_t)B * K * 7, -1, 1);
  for (int i = 0; i < B * K * 7; i++) mask[i] = pb_rng_below(&r, 4) != 0;
  pb_err_t err;
  pb_nn_t *a = make(&s, 3e-3f, 3), *b = make(&s, 3e-3f, 3),
          *ref = make(&s, 3e-3f, 3);
  assert_int_equal(pb_nn_set_precision(a, PB_NN_BF16, &err), 0);
  assert_int_equal(pb_nn_set_precision(b, PB_NN_BF16, &err), 0);
  float before[B * 7], after[B * 7], fp[B * 7];
  assert_int_equal(pb_nn_forward(a, in, B, before, &err), 0);
  float loss[K];
  for (int k = 0; k < K; k++)
    assert_int_equal(
        pb_nn_train_step(a, in + (size_t)k * B * 84, tgt + (size_t)k * B * 7,
                         mask + (size_t)k * B * 7, B, &loss[k], &err),
        0);
  float loss2[K];
  assert_int_equal(pb_nn_train_batches(b, in, tgt, mask, B * K, B, NULL, loss2,
                                       NULL, NULL, &err),
                   0);
  size_t la, lb;
  uint8_t *sa = bytes_of(a, 1, &la), *sb = bytes_of(b, 1, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(sa, sb, la); /* deterministic, one call or k */
  assert_memory_equal(loss, loss2, sizeof loss);
  assert_true(loss[K - 1] < loss[0]); /* it learns */
  /* the inference copy followed the steps: the bf16 forward now agrees
   * with an fp32 network holding the new (fp32) weights */
  assert_int_equal(pb_nn_forward(a, in, B, after, &err), 0);
  assert_true(max_diff(before, after, B * 7) > 0.01);
  assert_int_equal(pb_nn_copy_weights(ref, a, &err), 0);
  assert_int_equal(pb_nn_forward(ref, in, B, fp, &err), 0);
  assert_true(max_diff(after, fp, B * 7) <= TOL_RANDOM);
  /* and a load: b takes ref's untrained weights back */
  pb_nn_t *fresh = make(&s, 3e-3f, 3);
  size_t lw;
  uint8_t *w = bytes_of(fresh, 0, &lw);
  assert_int_equal(pb_nn_weights_load(b, w, lw, NULL, &err), 0);
  float again[B * 7];
  assert_int_equal(pb_nn_forward(b, in, B, again, &err), 0);
  assert_memory_equal(again, before, sizeof again);
  free(sa), free(sb), free(w), free(in), free(tgt), free(mask);
  pb_nn_destroy(&a), pb_nn_destroy(&b), pb_nn_destroy(&ref),
      pb_nn_destroy(&fresh);
}

/* The shipped Connect Four network on the shipped test set: V and Q in
 * bf16 within TOL_V / TOL_Q of fp32, the greedy move the same but for
 * MOVE_SHARE of the positions. */
static void test_shipped_model_agrees(void **state) {
  (void)state;
  pb_err_t err;
  pb_model_t *m = pb_model_open(PB_SOURCE_DIR "/data/models/connect4.pbck",
                                "cpu", NULL, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_model_get_precision(m), PB_NN_FP32);
  const pb_game_t *g = pb_model_game(m);
  pb_testset_t *ts = pb_testset_builtin(g, &err);
  assert_non_null(ts);
  const size_t n = pb_testset_count(ts), A = (size_t)g->num_actions;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  float *in = malloc(n * in_size * sizeof *in);
  float *v[2], *q[2];
  for (int p = 0; p < 2; p++) {
    v[p] = malloc(n * sizeof(float));
    q[p] = malloc(n * A * sizeof(float));
  }
  for (size_t i = 0; i < n; i++)
    g->encode(pb_testset_state(ts, i), in + i * in_size);
  for (int p = 0; p < 2; p++) {
    assert_int_equal(
        pb_model_set_precision(m, p ? PB_NN_BF16 : PB_NN_FP32, &err), 0);
    assert_int_equal(pb_nn_forward(pb_model_v(m), in, (int)n, v[p], &err), 0);
    assert_int_equal(pb_nn_forward(pb_model_q(m), in, (int)n, q[p], &err), 0);
  }
  size_t differ = 0, opt[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(pb_testset_state(ts, i), legal);
    int best[2];
    for (int p = 0; p < 2; p++) {
      best[p] = legal[0];
      for (int j = 1; j < nl; j++)
        if (q[p][i * A + legal[j]] > q[p][i * A + best[p]]) best[p] = legal[j];
      opt[p] += (size_t)pb_testset_optimal(ts, i, best[p]);
    }
    differ += best[0] != best[1];
  }
  double dv = max_diff(v[0], v[1], n), dq = max_diff(q[0], q[1], n * A);
  print_message(
      "shipped connect4, %zu positions: max |dV| %.4f, max |dQ| "
      "%.4f, greedy moves differ in %zu (%.3f), optimal %zu fp32 "
      "/ %zu bf16\n",
      n, dv, dq, differ, (double)differ / (double)n, opt[0], opt[1]);
  assert_true(dv <= TOL_V);
  assert_true(dq <= TOL_Q);
  assert_true((double)differ <= MOVE_SHARE * (double)n);
  for (int p = 0; p < 2; p++) free(v[p]), free(q[p]);
  free(in);
  pb_testset_destroy(&ts);
  pb_model_destroy(&m);
}

/* A learner in bf16 (model.learner_precision) trains, and its checkpoint
 * opens as fp32 elsewhere (a stored bf16 plays in fp32 where the device
 * lacks it; here: the same bytes of weights whatever opened it). */
static void test_learner_bf16_checkpoint(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  if (pb_config_load_file(&c, PB_SOURCE_DIR "/configs/connect4-smoke.yaml",
                          &err) != 0)
    fail_msg("%s", err.msg);
  char why[160];
  int native = pb_precision_native("cpu", why, sizeof why);
  snprintf(c.model.learner_precision, sizeof c.model.learner_precision, "auto");
  pb_learn_t *l = pb_learn_new(&c, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  print_message("learner: %s\n", pb_learn_precision(l));
  assert_int_equal(pb_nn_precision(pb_learn_q(l)),
                   native ? PB_NN_BF16 : PB_NN_FP32);
  assert_non_null(strstr(pb_learn_precision(l), "model.learner_precision"));
  pb_learn_destroy(&l);
  /* explicit bf16: where it is not native the learner refuses to start */
  snprintf(c.model.learner_precision, sizeof c.model.learner_precision, "bf16");
  l = pb_learn_new(&c, &err);
  if (native) {
    assert_non_null(l);
    assert_int_equal(pb_nn_precision(pb_learn_v(l)), PB_NN_BF16);
  } else {
    assert_null(l);
    assert_non_null(strstr(err.msg, "model.learner_precision"));
  }
  pb_learn_destroy(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_and_choice),
      cmocka_unit_test(test_cpu_native_matches_cpuinfo),
      cmocka_unit_test(test_auto_bf16_cpu),
      cmocka_unit_test(test_forward_agrees_buffers_fp32),
      cmocka_unit_test(test_dense_layers_fp32_on_cpu),
      cmocka_unit_test(test_train_bf16),
      cmocka_unit_test(test_shipped_model_agrees),
      cmocka_unit_test(test_learner_bf16_checkpoint),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
