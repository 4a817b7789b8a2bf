/* test_nn.c - the libtorch shim's networks: specs, creation, parameter
 * counts, deterministic initialisation, forward; residual blocks and layer
 * norms (against a plain reference forward pass in double), and the policy
 * + value head (forward against a linear network of the same weights);
 * threads. Training is tested in test_nn_train.c, buffers in test_nn_io.c,
 * the export for PyTorch in test_nn_torch.c; the helpers they share are in
 * nn_fixtures.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "err.h"
#include "nn.h"
#include "nn_fixtures.h"
#include "rng.h"

/* ------------------------------------------------------------------ */

static void test_spec_check(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t good = c4_small(7, PB_NN_HEAD_LINEAR);
  assert_int_equal(pb_nn_spec_check(&good, &err), 0);

  struct {
    pb_nn_spec_t s;
    const char *field;
  } bad[] = {
      {spec_of(0, 6, 7, 7, 2, 2, 16, 1, 12), "planes"},
      {spec_of(2, -1, 7, 7, 2, 2, 16, 1, 12), "height"},
      {spec_of(2, 6, 0, 7, 2, 2, 16, 1, 12), "width"},
      {spec_of(2, 6, 7, 0, 2, 2, 16, 1, 12), "outputs"},
      {spec_of(2, 6, 7, 7, 4, 2, 16, 1, 12), "head"},
      {spec_of(2, 6, 7, 7, 0, 2, 16, 1, 12), "head"},
      {spec_of(2, 6, 7, 7, 2, -1, 16, 1, 12), "conv_layers"},
      {spec_of(2, 6, 7, 7, 2, 2, 0, 1, 12), "conv_channels"},
      {spec_of(2, 6, 7, 7, 2, 2, 16, -3, 12), "dense_layers"},
      {spec_of(2, 6, 7, 7, 2, 2, 16, 1, 0), "dense_units"},
      {spec_of(2, 6, 7, 7, 2, 65, 16, 1, 12), "conv_layers"},
      /* in range field by field, but ~4e12 parameters in all */
      {spec_of(64, 64, 64, 1 << 20, 2, 0, 0, 1, 1 << 20), "parameters"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_int_equal(pb_nn_spec_check(&bad[i].s, &err), PB_EINVAL);
    if (strstr(err.msg, bad[i].field) == NULL)
      fail_msg("case %zu: message \"%s\" does not name %s", i, err.msg,
               bad[i].field);
    assert_int_equal(pb_nn_spec_param_count(&bad[i].s), -1);
    /* pb_nn_new refuses it the same way and returns NULL */
    pb_err_clear(&err);
    assert_null(pb_nn_new(&bad[i].s, NULL, "cpu", 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
  /* layers with no convolutions / no dense layers are fine */
  pb_nn_spec_t linear = spec_of(1, 1, 3, 2, PB_NN_HEAD_LINEAR, 0, 0, 0, 0);
  assert_int_equal(pb_nn_spec_check(&linear, &err), 0);
  assert_int_equal(pb_nn_spec_param_count(&linear), 3 * 2 + 2);
  assert_int_equal(pb_nn_spec_check(NULL, &err), PB_EINVAL);
}

static void test_new_bad_args(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(1, PB_NN_HEAD_TANH);

  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, NULL, "tpu", 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "tpu"));

  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, NULL, NULL, 1, &err));
  assert_int_equal(err.code, PB_EINVAL);

  pb_nn_opt_t bad_lr = {0.0f, 0.0f, 0.0f}, bad_wd = {1e-3f, -1.0f, 0.0f},
              nan_lr = {NAN, 0.0f, 0.0f};
  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, &bad_lr, "cpu", 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "lr"));
  pb_err_clear(&err);
  assert_null(pb_nn_new(&s, &bad_wd, "cpu", 1, &err));
  assert_non_null(strstr(err.msg, "weight_decay"));
  assert_null(pb_nn_new(&s, &nan_lr, "cpu", 1, NULL));

  /* "cuda" either works (a GPU build on a GPU) or says why not */
  pb_err_clear(&err);
  pb_nn_t *cuda = pb_nn_new(&s, NULL, "cuda", 1, &err);
  if (cuda == NULL) {
    assert_int_equal(err.code, PB_EUNSUPP);
    assert_non_null(strstr(err.msg, "CUDA"));
  } else {
    assert_string_equal(pb_nn_device(cuda), "cuda");
  }
  pb_nn_destroy(&cuda);

  pb_nn_t *nn = pb_nn_new(&s, NULL, "auto", 1, &err);
  assert_non_null(nn);
  assert_true(strcmp(pb_nn_device(nn), "cpu") == 0 ||
              strcmp(pb_nn_device(nn), "cuda") == 0);
  assert_int_equal(pb_nn_set_opt(nn, &bad_lr, &err), PB_EINVAL);
  pb_nn_opt_t ok = {3e-3f, 1e-4f, 0.0f};
  assert_int_equal(pb_nn_set_opt(nn, &ok, &err), 0);
  pb_nn_destroy(&nn);
  assert_null(nn);
  pb_nn_destroy(&nn); /* NULL is fine */
  pb_nn_destroy(NULL);
}

static void test_param_counts(void **state) {
  (void)state;
  /* By hand, small: conv 2->16: 9*2*16+16 = 304; conv 16->16: 2320;
   * dense 16*42 -> 12: 672*12+12 = 8076; head 12 -> 7: 91 (V: 13). */
  pb_nn_spec_t sq = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_spec_t sv = c4_small(1, PB_NN_HEAD_TANH);
  assert_int_equal(pb_nn_spec_param_count(&sq), 304 + 2320 + 8076 + 91);
  assert_int_equal(pb_nn_spec_param_count(&sv), 304 + 2320 + 8076 + 13);
  /* large: 608 + 9248 + 9248 + (1344*64+64 = 86080) + 455 (V: 65) */
  pb_nn_spec_t lq = c4_large(7, PB_NN_HEAD_LINEAR);
  pb_nn_spec_t lv = c4_large(1, PB_NN_HEAD_TANH);
  assert_int_equal(pb_nn_spec_param_count(&lq), 608 + 9248 * 2 + 86080 + 455);
  assert_int_equal(pb_nn_spec_param_count(&lv), 608 + 9248 * 2 + 86080 + 65);
  /* the paper: ~10K and ~100K */
  assert_in_range(pb_nn_spec_param_count(&sq), 9000, 11500);
  assert_in_range(pb_nn_spec_param_count(&lq), 90000, 110000);

  pb_nn_t *nn = make(&lq, 1e-3f, 1);
  assert_int_equal(pb_nn_param_count(nn), pb_nn_spec_param_count(&lq));
  assert_memory_equal(pb_nn_spec(nn), &lq, sizeof lq);
  pb_nn_destroy(&nn);
}

static void test_init_deterministic(void **state) {
  (void)state;
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *a = make(&s, 1e-3f, 42), *b = make(&s, 1e-3f, 42),
          *c = make(&s, 1e-3f, 43);
  assert_true(same_weights(a, b));
  assert_false(same_weights(a, c));
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
}

static void test_forward(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(1, PB_NN_HEAD_TANH);
  pb_nn_t *nn = make(&s, 1e-3f, 5);
  enum { B = 9 };
  float in[B * 84], out[B], one[1];
  pb_rng_t r;
  pb_rng_seed(&r, 1, 0);
  fill_uniform(&r, in, sizeof in / sizeof in[0], -3.0f, 3.0f);

  /* batch 0 reads and writes nothing, even with NULL buffers */
  assert_int_equal(pb_nn_forward(nn, NULL, 0, NULL, &err), 0);
  assert_int_equal(pb_nn_forward(nn, in, -1, out, &err), PB_EINVAL);
  assert_int_equal(pb_nn_forward(nn, NULL, 3, out, &err), PB_EINVAL);

  assert_int_equal(pb_nn_forward(nn, in, B, out, &err), 0);
  int distinct = 0;
  for (int i = 0; i < B; i++) {
    assert_true(out[i] > -1.0f && out[i] < 1.0f);
    distinct += i > 0 && out[i] != out[0];
    assert_int_equal(pb_nn_forward(nn, in + i * 84, 1, one, &err), 0);
    assert_float_equal(one[0], out[i], 1e-5);
  }
  assert_true(distinct > 0);

  /* the forward pass does not touch its input and is repeatable */
  float in2[B * 84], out2[B];
  memcpy(in2, in, sizeof in);
  assert_int_equal(pb_nn_forward(nn, in, B, out2, &err), 0);
  assert_memory_equal(in, in2, sizeof in);
  assert_memory_equal(out, out2, sizeof out);
  pb_nn_destroy(&nn);
}

/* ------------------------------------ residual blocks, norms, clipping */

static void test_res_norm_spec(void **state) {
  (void)state;
  pb_err_t err;
  /* By hand: conv0 2->8: 9*2*8+8 = 152, its norm 8+8 = 16; one residual
   * block: two convs 8->8 (9*8*8+8 = 584 each) and two norms (16 each) =
   * 1200; dense 8*42 = 336 -> 16: 336*16+16 = 5392; head 16*7+7 = 119. */
  pb_nn_spec_t full = res_spec(2, PB_NN_NORM_LAYER);
  assert_int_equal(pb_nn_spec_check(&full, &err), 0);
  assert_int_equal(pb_nn_spec_param_count(&full),
                   152 + 16 + 2 * 1200 + 5392 + 119);
  assert_int_equal(pb_nn_spec_param_count(&full), 8079);
  pb_nn_spec_t res_only = res_spec(2, PB_NN_NORM_NONE);
  assert_int_equal(pb_nn_spec_param_count(&res_only),
                   152 + 2 * 2 * 584 + 5392 + 119);
  pb_nn_spec_t norm_only = res_spec(0, PB_NN_NORM_LAYER);
  assert_int_equal(pb_nn_spec_param_count(&norm_only), 152 + 16 + 5392 + 119);
  pb_nn_spec_t plain = res_spec(0, PB_NN_NORM_NONE);
  assert_int_equal(pb_nn_spec_param_count(&plain), 152 + 5392 + 119);
  /* two convolutions with norms: each conv gets its own (conv1 8->8 too) */
  pb_nn_spec_t two = full;
  two.conv_layers = 2;
  assert_int_equal(pb_nn_spec_param_count(&two), 8079 + 584 + 16);

  const pb_nn_spec_t *specs[] = {&full, &res_only, &norm_only, &plain, &two};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    pb_nn_t *nn = make(specs[i], 1e-3f, 1);
    assert_int_equal(pb_nn_param_count(nn), pb_nn_spec_param_count(specs[i]));
    assert_memory_equal(pb_nn_spec(nn), specs[i], sizeof *specs[i]);
    size_t len;
    uint8_t *w = weights_of(nn, &len);
    assert_int_equal(len, 64 + 4 * (size_t)pb_nn_param_count(nn) + 4);
    free(w);
    pb_nn_destroy(&nn);
  }

  /* the new fields' checks */
  struct {
    pb_nn_spec_t s;
    const char *field;
  } bad[] = {
      {res_spec(1, PB_NN_NORM_NONE), "res_blocks"},
      {res_spec(-1, PB_NN_NORM_NONE), "res_blocks"},
      {res_spec(65, PB_NN_NORM_NONE), "res_blocks"},
      {res_spec(0, 2), "norm"},
      {res_spec(0, -1), "norm"},
  };
  bad[0].s.conv_layers = 0; /* residual blocks need a convolution */
  bad[0].s.conv_channels = 0;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_int_equal(pb_nn_spec_check(&bad[i].s, &err), PB_EINVAL);
    if (strstr(err.msg, bad[i].field) == NULL)
      fail_msg("case %zu: message \"%s\" does not name %s", i, err.msg,
               bad[i].field);
    assert_int_equal(pb_nn_spec_param_count(&bad[i].s), -1);
    pb_err_clear(&err);
    assert_null(pb_nn_new(&bad[i].s, NULL, "cpu", 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
  /* conv_layers 0 with channels set is still refused with residual blocks */
  pb_nn_spec_t nc = res_spec(1, PB_NN_NORM_LAYER);
  nc.conv_layers = 0;
  assert_int_equal(pb_nn_spec_check(&nc, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "res_blocks"));
  /* a norm without convolutions is allowed (it has nothing to normalise) */
  pb_nn_spec_t dense_norm = spec_of(2, 6, 7, 7, PB_NN_HEAD_LINEAR, 0, 0, 1, 16);
  dense_norm.norm = PB_NN_NORM_LAYER;
  assert_int_equal(pb_nn_spec_check(&dense_norm, &err), 0);
  dense_norm.norm = PB_NN_NORM_NONE;
  long plain_dense = pb_nn_spec_param_count(&dense_norm);
  dense_norm.norm = PB_NN_NORM_LAYER;
  assert_int_equal(pb_nn_spec_param_count(&dense_norm), plain_dense);
}

/* Overwrites every parameter of nn with vals (through a weights buffer
 * with a fresh checksum). */
static void set_params(pb_nn_t *nn, const float *vals) {
  size_t len;
  uint8_t *w = weights_of(nn, &len);
  size_t n = (size_t)pb_nn_param_count(nn);
  memcpy(w + 64, vals, 4 * n); /* little-endian host, as the buffer */
  uint32_t crc = pb_crc32(0, w, len - 4);
  for (int k = 0; k < 4; k++) w[len - 4 + k] = (uint8_t)(crc >> (8 * k));
  pb_err_t err;
  if (pb_nn_weights_load(nn, w, len, NULL, &err) != 0)
    fail_msg("set_params: %s", err.msg);
  free(w);
}

/* ---- a plain reference forward pass, in double, one position at a time */

static double ref_act(double x) { return x >= 0 ? x : 0.01 * x; }

/* 3x3 same convolution of x [cin][H][W] into y [cout][H][W]; consumes the
 * weight and bias from *p. */
static void ref_conv(const float **p, const double *x, int cin, int cout,
                     int H, int W, double *y) {
  const float *w = *p, *b = w + (size_t)cout * cin * 9;
  for (int co = 0; co < cout; co++)
    for (int i = 0; i < H; i++)
      for (int j = 0; j < W; j++) {
        double acc = b[co];
        for (int ci = 0; ci < cin; ci++)
          for (int di = 0; di < 3; di++)
            for (int dj = 0; dj < 3; dj++) {
              int r = i + di - 1, c = j + dj - 1;
              if (r < 0 || r >= H || c < 0 || c >= W) continue;
              acc += (double)w[((co * cin + ci) * 3 + di) * 3 + dj] *
                     x[(ci * H + r) * W + c];
            }
        y[(co * H + i) * W + j] = acc;
      }
  *p = b + cout;
}

/* Layer norm over the whole [C][H][W] (GroupNorm, one group, eps 1e-5),
 * then per-channel scale and shift from *p. */
static void ref_norm(const float **p, double *y, int C, int H, int W) {
  const float *g = *p, *b = g + C;
  size_t n = (size_t)C * H * W;
  double mean = 0, var = 0;
  for (size_t k = 0; k < n; k++) mean += y[k];
  mean /= (double)n;
  for (size_t k = 0; k < n; k++) var += (y[k] - mean) * (y[k] - mean);
  var /= (double)n;
  double inv = 1.0 / sqrt(var + 1e-5);
  for (int c = 0; c < C; c++)
    for (int k = 0; k < H * W; k++) {
      double *v = &y[(size_t)c * H * W + k];
      *v = (*v - mean) * inv * g[c] + b[c];
    }
  *p = b + C;
}

static void ref_forward(const pb_nn_spec_t *s, const float *params,
                        const float *in, double *out) {
  const int H = s->height, W = s->width, C = s->conv_channels;
  const int cells = H * W;
  int maxc = s->planes > C ? s->planes : C;
  size_t big = (size_t)maxc * cells;
  if ((size_t)s->dense_units > big) big = (size_t)s->dense_units;
  double *h = calloc(big, sizeof *h), *y = calloc(big, sizeof *y),
         *z = calloc(big, sizeof *z);
  const float *p = params;
  int c = s->planes;
  for (int k = 0; k < c * cells; k++) h[k] = in[k];
  for (int i = 0; i < s->conv_layers; i++) {
    ref_conv(&p, h, c, C, H, W, y);
    if (s->norm) ref_norm(&p, y, C, H, W);
    for (int k = 0; k < C * cells; k++) h[k] = ref_act(y[k]);
    c = C;
  }
  for (int b = 0; b < s->res_blocks; b++) {
    ref_conv(&p, h, C, C, H, W, y);
    if (s->norm) ref_norm(&p, y, C, H, W);
    for (int k = 0; k < C * cells; k++) y[k] = ref_act(y[k]);
    ref_conv(&p, y, C, C, H, W, z);
    if (s->norm) ref_norm(&p, z, C, H, W);
    for (int k = 0; k < C * cells; k++) h[k] = ref_act(z[k] + h[k]);
  }
  int f = c * cells;
  for (int i = 0; i < s->dense_layers; i++) {
    const float *w = p, *bias = p + (size_t)s->dense_units * f;
    for (int u = 0; u < s->dense_units; u++) {
      double acc = bias[u];
      for (int k = 0; k < f; k++) acc += (double)w[(size_t)u * f + k] * h[k];
      y[u] = ref_act(acc);
    }
    p = bias + s->dense_units;
    f = s->dense_units;
    for (int u = 0; u < f; u++) h[u] = y[u];
  }
  const float *w = p, *bias = p + (size_t)s->outputs * f;
  for (int o = 0; o < s->outputs; o++) {
    double acc = bias[o];
    for (int k = 0; k < f; k++) acc += (double)w[(size_t)o * f + k] * h[k];
    int squash = s->head == PB_NN_HEAD_TANH ||
                 (s->head == PB_NN_HEAD_PV && o == s->outputs - 1);
    out[o] = squash ? tanh(acc) : acc;
  }
  free(h);
  free(y);
  free(z);
}

/* Our forward pass with residual blocks and layer norms equals the plain
 * reference above (random parameters everywhere, norm scales and shifts
 * included); same seed, same outputs; a batch gives the rows' outputs one
 * at a time, and a row's output does not depend on the other rows (no batch
 * statistics). */
static void test_res_norm_forward(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 6, NIN = 84 };
  float x[B * NIN], y[B * 7], y2[B * 7], one[7];
  pb_rng_t r;
  pb_rng_seed(&r, 77, 0);
  fill_uniform(&r, x, B * NIN, -1.0f, 1.0f);

  const pb_nn_spec_t specs[] = {res_spec(2, PB_NN_NORM_LAYER),
                                res_spec(2, PB_NN_NORM_NONE),
                                res_spec(0, PB_NN_NORM_LAYER)};
  for (size_t si = 0; si < sizeof specs / sizeof specs[0]; si++) {
    const pb_nn_spec_t *s = &specs[si];
    pb_nn_t *a = make(s, 1e-3f, 31), *b = make(s, 1e-3f, 31),
            *c = make(s, 1e-3f, 32);
    assert_true(same_weights(a, b));
    assert_false(same_weights(a, c));
    /* fresh norms: scale 1, shift 0 */
    if (s->norm) {
      float *p = params_of(a);
      /* conv0.norm follows conv0's 144 weights and 8 biases */
      for (int k = 0; k < 8; k++) {
        assert_true(p[152 + k] == 1.0f);
        assert_true(p[160 + k] == 0.0f);
      }
      free(p);
    }
    assert_int_equal(pb_nn_forward(a, x, B, y, &err), 0);
    assert_int_equal(pb_nn_forward(b, x, B, y2, &err), 0);
    assert_memory_equal(y, y2, sizeof y);
    assert_int_equal(pb_nn_forward(c, x, B, y2, &err), 0);
    assert_memory_not_equal(y, y2, sizeof y);

    /* random parameters, norm scales around 1 and shifts around 0 */
    size_t n = (size_t)pb_nn_param_count(a);
    float *p = params_of(a);
    for (size_t k = 0; k < n; k++)
      p[k] = p[k] == 1.0f   ? 0.5f + (float)pb_rng_uniform(&r)
             : p[k] == 0.0f ? (float)pb_rng_uniform(&r) - 0.5f
                            : p[k] * 1.5f;
    set_params(a, p);
    assert_int_equal(pb_nn_forward(a, x, B, y, &err), 0);
    double want[7], maxdiff = 0;
    int spread = 0;
    for (int i = 0; i < B; i++) {
      ref_forward(s, p, &x[i * NIN], want);
      for (int o = 0; o < 7; o++) {
        double d = fabs(want[o] - y[i * 7 + o]);
        if (d > maxdiff) maxdiff = d;
        spread += fabs(want[o]) > 0.05;
      }
      /* one row at a time */
      assert_int_equal(pb_nn_forward(a, &x[i * NIN], 1, one, &err), 0);
      for (int o = 0; o < 7; o++)
        assert_float_equal(one[o], y[i * 7 + o], 1e-5);
    }
    print_message("res %d norm %d: max |ours - reference| = %.2g\n",
                  s->res_blocks, s->norm, maxdiff);
    assert_true(maxdiff < 1e-4);
    assert_true(spread > 0); /* not a trivially-zero comparison */

    /* row 0 does not see the others: rescale and shift rows 1.. */
    float xs[B * NIN];
    memcpy(xs, x, sizeof xs);
    for (int k = NIN; k < B * NIN; k++) xs[k] = xs[k] * 7.0f + 3.0f;
    assert_int_equal(pb_nn_forward(a, xs, B, y2, &err), 0);
    for (int o = 0; o < 7; o++) assert_float_equal(y2[o], y[o], 1e-5);
    assert_true(memcmp(&y2[7], &y[7], sizeof y - 7 * sizeof y[0]) != 0);

    /* a training step with norms moves the norm parameters too */
    float t[B * 7];
    fill_uniform(&r, t, B * 7, -1, 1);
    assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);
    float *after = params_of(a);
    if (s->norm) {
      int moved = 0;
      for (int k = 152; k < 168; k++) moved += after[k] != p[k];
      assert_int_equal(moved, 16);
    }
    free(after);
    free(p);
    pb_nn_destroy(&a);
    pb_nn_destroy(&b);
    pb_nn_destroy(&c);
  }
}

/* ------------------------------------------------ policy + value head */

static void test_pv_spec(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = pv_spec(7);
  assert_int_equal(PB_NN_HEAD_PV, 3);
  assert_int_equal(pb_nn_spec_check(&s, &err), 0);
  /* the same parameters as a Q network with A + 1 outputs */
  pb_nn_spec_t lin = s;
  lin.head = PB_NN_HEAD_LINEAR;
  assert_int_equal(pb_nn_spec_param_count(&s), pb_nn_spec_param_count(&lin));
  pb_nn_spec_t two = pv_spec(2); /* 2 actions: the least */
  assert_int_equal(pb_nn_spec_check(&two, &err), 0);
  pb_nn_spec_t res = res_spec(2, PB_NN_NORM_LAYER);
  res.head = PB_NN_HEAD_PV;
  assert_int_equal(pb_nn_spec_check(&res, &err), 0);
  /* fewer than 2 actions, or an unknown head */
  for (int outputs = -1; outputs <= 2; outputs++) {
    pb_nn_spec_t b = s;
    b.outputs = outputs;
    pb_err_clear(&err);
    assert_int_equal(pb_nn_spec_check(&b, &err), PB_EINVAL);
    assert_non_null(strstr(err.msg, "outputs"));
    assert_int_equal(pb_nn_spec_param_count(&b), -1);
    pb_err_clear(&err);
    assert_null(pb_nn_new(&b, NULL, "cpu", 1, &err));
    assert_int_equal(err.code, PB_EINVAL);
  }
  /* outputs 1 and 2 are still fine for the other heads */
  pb_nn_spec_t q2 = s;
  q2.head = PB_NN_HEAD_LINEAR;
  q2.outputs = 2;
  assert_int_equal(pb_nn_spec_check(&q2, &err), 0);
  pb_nn_spec_t bad = s;
  bad.head = 4;
  pb_err_clear(&err);
  assert_int_equal(pb_nn_spec_check(&bad, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "head"));
  assert_non_null(strstr(err.msg, "PB_NN_HEAD_PV"));
}

/* A PV row is [linear, tanh(linear)]: the same seed gives a PV and a
 * LINEAR network of the same fields the same weights (same layout), the
 * logits equal the linear network's outputs bit for bit, and the value is
 * tanh of its last output; both agree with the reference in double, with
 * residual blocks and norms too, and a batch gives the rows one at a time. */
static void test_pv_forward(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 7, A = 7, O = A + 1, NIN = 84 };
  float x[B * NIN], y[B * O], yl[B * O], one[O];
  pb_rng_t r;
  pb_rng_seed(&r, 41, 0);
  fill_uniform(&r, x, B * NIN, -1.0f, 1.0f);
  pb_nn_spec_t specs[2] = {pv_spec(A), res_spec(2, PB_NN_NORM_LAYER)};
  specs[1].head = PB_NN_HEAD_PV;
  specs[1].outputs = O;
  for (int si = 0; si < 2; si++) {
    const pb_nn_spec_t *s = &specs[si];
    pb_nn_spec_t ls = *s;
    ls.head = PB_NN_HEAD_LINEAR;
    pb_nn_t *pv = make(s, 1e-3f, 31), *li = make(&ls, 1e-3f, 31);
    size_t n = (size_t)pb_nn_param_count(pv);
    assert_int_equal(n, (size_t)pb_nn_param_count(li));
    float *pp = params_of(pv), *lp = params_of(li);
    assert_memory_equal(pp, lp, 4 * n);
    free(lp);

    assert_int_equal(pb_nn_forward(pv, x, B, y, &err), 0);
    assert_int_equal(pb_nn_forward(li, x, B, yl, &err), 0);
    int distinct = 0;
    double maxdiff = 0;
    for (int i = 0; i < B; i++) {
      assert_memory_equal(&y[i * O], &yl[i * O], A * sizeof(float));
      float v = y[i * O + A];
      assert_true(v > -1.0f && v < 1.0f);
      assert_true(fabs(v - tanh((double)yl[i * O + A])) < 1e-6);
      assert_true(v != yl[i * O + A]);
      distinct += i > 0 && v != y[A];
      double want[O];
      ref_forward(s, pp, &x[i * NIN], want);
      for (int o = 0; o < O; o++)
        maxdiff = fmax(maxdiff, fabs(want[o] - y[i * O + o]));
      assert_int_equal(pb_nn_forward(pv, &x[i * NIN], 1, one, &err), 0);
      for (int o = 0; o < O; o++)
        assert_float_equal(one[o], y[i * O + o], 1e-5);
    }
    print_message("pv (res %d): max |ours - reference| = %.2g\n", s->res_blocks,
                  maxdiff);
    assert_true(maxdiff < 1e-4);
    assert_true(distinct > 0);
    free(pp);
    pb_nn_destroy(&pv);
    pb_nn_destroy(&li);
  }
}

static void test_threads(void **state) {
  (void)state;
  pb_err_t err;
  /* 0 with glibc; ASan's allocator ignores mallopt, hence PB_EUNSUPP */
  int rc = pb_nn_tune_malloc(&err);
  assert_true(rc == 0 || rc == PB_EUNSUPP);
  pb_nn_set_threads(2);
  pb_nn_set_threads(0);
  pb_nn_set_threads(1);
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *nn = make(&s, 1e-3f, 1);
  float x[84] = {0}, y[7];
  assert_int_equal(pb_nn_forward(nn, x, 1, y, NULL), 0);
  pb_nn_destroy(&nn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec_check),
      cmocka_unit_test(test_new_bad_args),
      cmocka_unit_test(test_param_counts),
      cmocka_unit_test(test_init_deterministic),
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_res_norm_spec),
      cmocka_unit_test(test_res_norm_forward),
      cmocka_unit_test(test_pv_spec),
      cmocka_unit_test(test_pv_forward),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
