/* test_nn_io.c - the libtorch shim's buffers: weights and training-state
 * round trips, corruption and spec mismatches refused, format 2 buffers of
 * networks with residual blocks or norms, and the policy + value head in
 * the spec. */
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

static void test_weights_roundtrip(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *a = make(&s, 1e-3f, 1), *b = make(&s, 1e-3f, 2);
  enum { B = 16 };
  float x[B * 84], ya[B * 7], yb[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 4, 0);
  fill_uniform(&r, x, B * 84, 0, 1);

  uint8_t *buf;
  size_t len;
  assert_int_equal(pb_nn_weights_save(a, 12345, &buf, &len, &err), 0);
  assert_int_equal(len, 64 + 4 * (size_t)pb_nn_param_count(a) + 4);
  assert_memory_equal(buf, "PBNN", 4);

  pb_nn_spec_t got;
  uint64_t ver = 0;
  assert_int_equal(pb_nn_weights_peek(buf, len, &got, &ver, &err), 0);
  assert_memory_equal(&got, &s, sizeof s);
  assert_int_equal(ver, 12345);

  assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_not_equal(ya, yb, sizeof ya);
  ver = 0;
  assert_int_equal(pb_nn_weights_load(b, buf, len, &ver, &err), 0);
  assert_int_equal(ver, 12345);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  free(buf);

  /* copy_weights does the same without bytes */
  pb_nn_t *c = make(&s, 1e-3f, 3);
  assert_int_equal(pb_nn_copy_weights(c, a, &err), 0);
  assert_int_equal(pb_nn_forward(c, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  pb_nn_spec_t other = c4_small(1, PB_NN_HEAD_TANH);
  pb_nn_t *d = make(&other, 1e-3f, 3);
  pb_err_clear(&err);
  assert_int_equal(pb_nn_copy_weights(d, a, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "outputs"));
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
  pb_nn_destroy(&d);
}

/* Train, save state, restore into another network: both continue the same,
 * bit for bit (weights, moments and step count travel). */
static void test_state_roundtrip(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(2, 6, 7, 7, PB_NN_HEAD_LINEAR, 2, 8, 1, 16);
  pb_nn_opt_t o = {3e-3f, 1e-4f, 0.0f};
  pb_nn_t *a = pb_nn_new(&s, &o, "cpu", 7, &err);
  pb_nn_t *b = pb_nn_new(&s, &o, "cpu", 8, &err);
  assert_non_null(a);
  assert_non_null(b);
  enum { B = 32 };
  float x[B * 84], t[B * 7], m[B * 7], loss;
  pb_rng_t r;
  pb_rng_seed(&r, 5, 0);
  for (int step = 0; step < 5; step++) {
    fill_uniform(&r, x, B * 84, 0, 1);
    fill_uniform(&r, t, B * 7, -1, 1);
    for (int i = 0; i < B * 7; i++) m[i] = pb_rng_uniform(&r) < 0.7;
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, &loss, &err), 0);
  }
  uint8_t *st;
  size_t len;
  assert_int_equal(pb_nn_state_save(a, &st, &len, &err), 0);
  assert_int_equal(len, 64 + 12 * (size_t)pb_nn_param_count(a) + 4);
  pb_nn_spec_t got;
  assert_int_equal(pb_nn_state_peek(st, len, &got, &err), 0);
  assert_memory_equal(&got, &s, sizeof s);
  /* a state buffer is not a weights buffer, and vice versa */
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(b, st, len, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "training-state"));

  assert_int_equal(pb_nn_state_load(b, st, len, &err), 0);
  assert_int_equal(pb_nn_train_steps(b), 5);
  assert_true(same_weights(a, b));
  free(st);

  for (int step = 0; step < 4; step++) {
    fill_uniform(&r, x, B * 84, 0, 1);
    fill_uniform(&r, t, B * 7, -1, 1);
    float la, lb;
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t, m, B, &lb, &err), 0);
    assert_true(la == lb);
  }
  assert_true(same_weights(a, b));
  uint8_t *sa, *sb;
  size_t na, nb;
  assert_int_equal(pb_nn_state_save(a, &sa, &na, &err), 0);
  assert_int_equal(pb_nn_state_save(b, &sb, &nb, &err), 0);
  assert_int_equal(na, nb);
  assert_memory_equal(sa, sb, na);

  /* negative control: weights alone (fresh moments) diverge */
  uint8_t *w;
  size_t wl;
  pb_nn_t *c = pb_nn_new(&s, &o, "cpu", 9, &err);
  assert_int_equal(pb_nn_weights_save(a, 0, &w, &wl, &err), 0);
  assert_int_equal(pb_nn_weights_load(c, w, wl, NULL, &err), 0);
  assert_int_equal(pb_nn_train_step(a, x, t, m, B, &loss, &err), 0);
  assert_int_equal(pb_nn_train_step(c, x, t, m, B, &loss, &err), 0);
  assert_false(same_weights(a, c));
  free(w);
  free(sa);
  free(sb);
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&c);
}

/* Every single-byte corruption and every truncation is refused with a
 * message, and the network is left as it was. */
static void test_corrupt_refused(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = spec_of(2, 3, 3, 3, PB_NN_HEAD_LINEAR, 1, 2, 1, 4);
  pb_nn_t *src = make(&s, 1e-3f, 1), *dst = make(&s, 1e-3f, 2),
          *ref = make(&s, 1e-3f, 2);
  for (int kind = 0; kind < 2; kind++) {
    uint8_t *buf;
    size_t len;
    if (kind == 0)
      assert_int_equal(pb_nn_weights_save(src, 7, &buf, &len, &err), 0);
    else
      assert_int_equal(pb_nn_state_save(src, &buf, &len, &err), 0);
    for (size_t i = 0; i < len; i++) {
      buf[i] ^= 0x5A;
      pb_err_clear(&err);
      int rc = kind == 0 ? pb_nn_weights_load(dst, buf, len, NULL, &err)
                         : pb_nn_state_load(dst, buf, len, &err);
      if (rc != PB_ECORRUPT)
        fail_msg("kind %d byte %zu: rc %d (%s)", kind, i, rc, err.msg);
      assert_true(strstr(err.msg, "checksum") || strstr(err.msg, "magic") ||
                  strstr(err.msg, "truncated or corrupt"));
      buf[i] ^= 0x5A;
    }
    for (size_t cut = 0; cut < len; cut += (cut < 80 ? 1 : 37)) {
      pb_err_clear(&err);
      int rc = kind == 0 ? pb_nn_weights_load(dst, buf, cut, NULL, &err)
                         : pb_nn_state_load(dst, buf, cut, &err);
      if (rc != PB_ECORRUPT) fail_msg("cut at %zu: rc %d", cut, rc);
      assert_true(strstr(err.msg, "truncated") != NULL);
      if (kind == 0) {
        rc = pb_nn_weights_peek(buf, cut, NULL, NULL, &err);
        assert_int_equal(rc, PB_ECORRUPT);
      }
    }
    /* an intact buffer of another format version is unsupported, not
     * corrupt (the buffer CRC is zlib's, as pb_crc32) */
    uint8_t *v2 = malloc(len);
    memcpy(v2, buf, len);
    v2[4] = 3;
    uint32_t crc = pb_crc32(0, v2, len - 4);
    for (int k = 0; k < 4; k++) v2[len - 4 + k] = (uint8_t)(crc >> (8 * k));
    pb_err_clear(&err);
    int rc2 = kind == 0 ? pb_nn_weights_load(dst, v2, len, NULL, &err)
                        : pb_nn_state_load(dst, v2, len, &err);
    assert_int_equal(rc2, PB_EUNSUPP);
    assert_non_null(strstr(err.msg, "format version 3"));
    /* format 2 (residual blocks / norms) with a plain spec is corrupt */
    memcpy(v2, buf, len);
    v2[4] = 2;
    crc = pb_crc32(0, v2, len - 4);
    for (int k = 0; k < 4; k++) v2[len - 4 + k] = (uint8_t)(crc >> (8 * k));
    pb_err_clear(&err);
    rc2 = kind == 0 ? pb_nn_weights_load(dst, v2, len, NULL, &err)
                    : pb_nn_state_load(dst, v2, len, &err);
    assert_int_equal(rc2, PB_ECORRUPT);
    assert_non_null(strstr(err.msg, "extension"));
    free(v2);
    /* a longer buffer is refused too */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, buf, len);
    longer[len] = 0;
    int rc = kind == 0 ? pb_nn_weights_load(dst, longer, len + 1, NULL, &err)
                       : pb_nn_state_load(dst, longer, len + 1, &err);
    assert_int_equal(rc, PB_ECORRUPT);
    free(longer);
    /* nothing was half-loaded */
    assert_true(same_weights(dst, ref));
    assert_int_equal(pb_nn_train_steps(dst), 0);
    /* and the intact buffer still loads */
    rc = kind == 0 ? pb_nn_weights_load(dst, buf, len, NULL, &err)
                   : pb_nn_state_load(dst, buf, len, &err);
    assert_int_equal(rc, 0);
    assert_true(same_weights(dst, src));
    assert_int_equal(pb_nn_copy_weights(dst, ref, &err), 0);
    free(buf);
  }
  assert_int_equal(pb_nn_weights_load(dst, NULL, 0, NULL, &err), PB_EINVAL);
  pb_nn_destroy(&src);
  pb_nn_destroy(&dst);
  pb_nn_destroy(&ref);
}

static void test_spec_mismatch(void **state) {
  (void)state;
  pb_err_t err;
  pb_nn_spec_t s = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_t *a = make(&s, 1e-3f, 1);
  uint8_t *w, *st;
  size_t wl, sl;
  assert_int_equal(pb_nn_weights_save(a, 3, &w, &wl, &err), 0);
  assert_int_equal(pb_nn_state_save(a, &st, &sl, &err), 0);

  const char *fields[] = {"conv_channels", "head", "dense_units",
                          "conv_layers"};
  pb_nn_spec_t others[4] = {s, s, s, s};
  others[0].conv_channels = 8;
  others[1].head = PB_NN_HEAD_TANH;
  others[2].dense_units = 13;
  others[3].conv_layers = 3;
  for (int i = 0; i < 4; i++) {
    pb_nn_t *b = make(&others[i], 1e-3f, 1), *ref = make(&others[i], 1e-3f, 1);
    pb_err_clear(&err);
    assert_int_equal(pb_nn_weights_load(b, w, wl, NULL, &err), PB_EMISMATCH);
    if (strstr(err.msg, fields[i]) == NULL)
      fail_msg("mismatch message \"%s\" does not name %s", err.msg, fields[i]);
    pb_err_clear(&err);
    assert_int_equal(pb_nn_state_load(b, st, sl, &err), PB_EMISMATCH);
    assert_non_null(strstr(err.msg, fields[i]));
    assert_true(same_weights(b, ref));
    pb_nn_destroy(&b);
    pb_nn_destroy(&ref);
  }
  free(w);
  free(st);
  pb_nn_destroy(&a);
}

/* ------------------------------------ residual blocks and norms (format 2) */

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Buffers of networks with residual blocks or norms: format 2, the
 * extension word at byte 44, round trips; refused by plain networks with
 * the field named. */
static void test_res_norm_buffers(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 5 };
  float x[B * 84], ya[B * 7], yb[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 9, 0);
  fill_uniform(&r, x, B * 84, 0, 1);

  struct {
    pb_nn_spec_t s;
    uint32_t fmt, ext;
  } cases[] = {
      {res_spec(0, PB_NN_NORM_NONE), 1, 0},
      {res_spec(2, PB_NN_NORM_LAYER), 2, 2 | 1u << 16},
      {res_spec(3, PB_NN_NORM_NONE), 2, 3},
      {res_spec(0, PB_NN_NORM_LAYER), 2, 1u << 16},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const pb_nn_spec_t *s = &cases[i].s;
    pb_nn_opt_t o = {1e-2f, 0.0f, 0.0f};
    pb_nn_t *a = pb_nn_new(s, &o, "cpu", 40 + i, &err);
    assert_non_null(a);
    /* train a little so that the norms are not at their initial values */
    float t[B * 7];
    fill_uniform(&r, t, B * 7, -1, 1);
    for (int k = 0; k < 3; k++)
      assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);

    for (int kind = 0; kind < 2; kind++) {
      uint8_t *buf;
      size_t len;
      if (kind == 0)
        assert_int_equal(pb_nn_weights_save(a, 99, &buf, &len, &err), 0);
      else
        assert_int_equal(pb_nn_state_save(a, &buf, &len, &err), 0);
      assert_int_equal(len, 64 + (kind ? 12 : 4) *
                                     (size_t)pb_nn_param_count(a) + 4);
      assert_int_equal(le32(buf + 4), cases[i].fmt);
      assert_int_equal(le32(buf + 44), cases[i].ext);
      /* the nine base fields stay where they were */
      assert_int_equal((int)le32(buf + 8 + 4 * 5), s->conv_layers);
      assert_int_equal((int)le32(buf + 8 + 4 * 8), s->dense_units);
      pb_nn_spec_t got;
      memset(&got, 0xEE, sizeof got);
      if (kind == 0)
        assert_int_equal(pb_nn_weights_peek(buf, len, &got, NULL, &err), 0);
      else
        assert_int_equal(pb_nn_state_peek(buf, len, &got, &err), 0);
      assert_memory_equal(&got, s, sizeof got);

      /* into a fresh network (another seed): same outputs */
      pb_nn_t *b = pb_nn_new(s, &o, "cpu", 1000 + i, &err);
      assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
      assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
      assert_memory_not_equal(ya, yb, sizeof ya);
      if (kind == 0) {
        uint64_t ver = 0;
        assert_int_equal(pb_nn_weights_load(b, buf, len, &ver, &err), 0);
        assert_int_equal(ver, 99);
      } else {
        assert_int_equal(pb_nn_state_load(b, buf, len, &err), 0);
        assert_int_equal(pb_nn_train_steps(b), 3);
      }
      assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
      assert_memory_equal(ya, yb, sizeof ya);
      assert_true(same_weights(a, b));
      if (kind == 1) { /* the moments came along: the next steps agree */
        assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);
        assert_int_equal(pb_nn_train_step(b, x, t, NULL, B, NULL, &err), 0);
        assert_true(same_weights(a, b));
      }
      pb_nn_destroy(&b);

      /* a network that differs only in res_blocks / norm refuses it */
      if (cases[i].fmt == 2) {
        pb_nn_spec_t other = *s;
        const char *field;
        if (s->res_blocks) {
          other.res_blocks = 0;
          field = "res_blocks";
        } else {
          other.norm = PB_NN_NORM_NONE;
          field = "norm";
        }
        pb_nn_t *p = make(&other, 1e-3f, 5), *ref = make(&other, 1e-3f, 5);
        pb_err_clear(&err);
        int rc = kind == 0 ? pb_nn_weights_load(p, buf, len, NULL, &err)
                           : pb_nn_state_load(p, buf, len, &err);
        assert_int_equal(rc, PB_EMISMATCH);
        if (strstr(err.msg, field) == NULL)
          fail_msg("mismatch message \"%s\" does not name %s", err.msg, field);
        assert_true(same_weights(p, ref));
        assert_int_equal(pb_nn_train_steps(p), 0);
        /* and copy_weights says the same */
        pb_err_clear(&err);
        assert_int_equal(pb_nn_copy_weights(p, a, &err), PB_EMISMATCH);
        assert_non_null(strstr(err.msg, field));
        /* the other way round: a plain buffer into the res/norm network */
        uint8_t *pw;
        size_t pl;
        assert_int_equal(pb_nn_weights_save(p, 0, &pw, &pl, &err), 0);
        assert_int_equal(le32(pw + 4),
                         other.res_blocks || other.norm ? 2 : 1);
        pb_err_clear(&err);
        assert_int_equal(pb_nn_weights_load(a, pw, pl, NULL, &err),
                         PB_EMISMATCH);
        assert_non_null(strstr(err.msg, field));
        free(pw);
        pb_nn_destroy(&p);
        pb_nn_destroy(&ref);
      }
      free(buf);
    }
    pb_nn_destroy(&a);
  }

  /* format 1 with a non-zero extension word is corrupt, not a spec */
  pb_nn_spec_t s = res_spec(2, PB_NN_NORM_LAYER);
  pb_nn_t *a = make(&s, 1e-3f, 1);
  size_t len;
  uint8_t *buf = weights_of(a, &len);
  buf[4] = 1;
  uint32_t crc = pb_crc32(0, buf, len - 4);
  for (int k = 0; k < 4; k++) buf[len - 4 + k] = (uint8_t)(crc >> (8 * k));
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(a, buf, len, NULL, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "extension"));
  free(buf);
  pb_nn_destroy(&a);
}

/* ------------------------------------------------ policy + value head */

/* Buffers record the head in the spec (no format change: a plain PV
 * network is format 1): round trips of weights and state, and a PV buffer
 * is refused by a LINEAR network of the same other fields (and the other
 * way round) naming the head. */
static void test_pv_buffers(void **state) {
  (void)state;
  pb_err_t err;
  enum { B = 6, A = 7, O = A + 1, NIN = 84 };
  pb_nn_spec_t s = pv_spec(A), ls = s;
  ls.head = PB_NN_HEAD_LINEAR;
  pb_nn_opt_t o = {3e-3f, 1e-4f, 1.0f};
  pb_nn_t *a = pb_nn_new(&s, &o, "cpu", 3, &err),
          *b = pb_nn_new(&s, &o, "cpu", 4, &err);
  assert_non_null(a);
  assert_non_null(b);
  float x[B * NIN], t[B * O], m[B * O], ya[B * O], yb[B * O];
  pb_rng_t r;
  pb_rng_seed(&r, 53, 0);
  for (int step = 0; step < 4; step++) {
    fill_uniform(&r, x, B * NIN, -1, 1);
    pv_targets(&r, B, A, step, t, m);
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, NULL, &err), 0);
  }

  uint8_t *w, *st;
  size_t wl, sl;
  assert_int_equal(pb_nn_weights_save(a, 77, &w, &wl, &err), 0);
  assert_int_equal(pb_nn_state_save(a, &st, &sl, &err), 0);
  assert_int_equal(le32(w + 4), 1);  /* format 1 */
  assert_int_equal(le32(w + 24), 3); /* spec field "head" */
  assert_int_equal(le32(w + 20), O); /* "outputs" */
  pb_nn_spec_t got;
  uint64_t ver = 0;
  assert_int_equal(pb_nn_weights_peek(w, wl, &got, &ver, &err), 0);
  assert_memory_equal(&got, &s, sizeof s);
  assert_int_equal(ver, 77);
  assert_int_equal(pb_nn_state_peek(st, sl, &got, &err), 0);
  assert_int_equal(got.head, PB_NN_HEAD_PV);

  assert_int_equal(pb_nn_weights_load(b, w, wl, &ver, &err), 0);
  assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  assert_int_equal(pb_nn_state_load(b, st, sl, &err), 0);
  assert_int_equal(pb_nn_train_steps(b), 4);
  for (int step = 0; step < 3; step++) {
    fill_uniform(&r, x, B * NIN, -1, 1);
    pv_targets(&r, B, A, -1, t, m);
    float la, lb;
    assert_int_equal(pb_nn_train_step(a, x, t, m, B, &la, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t, m, B, &lb, &err), 0);
    assert_true(la == lb);
  }
  assert_true(same_weights(a, b));

  /* a LINEAR network of the same other fields refuses it, and vice versa */
  pb_nn_t *q = make(&ls, 1e-3f, 3), *qref = make(&ls, 1e-3f, 3);
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(q, w, wl, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head is 3 there but 2"));
  pb_err_clear(&err);
  assert_int_equal(pb_nn_state_load(q, st, sl, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head"));
  pb_err_clear(&err);
  assert_int_equal(pb_nn_copy_weights(q, a, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head"));
  assert_true(same_weights(q, qref));
  uint8_t *qw;
  size_t qwl;
  assert_int_equal(pb_nn_weights_save(q, 0, &qw, &qwl, &err), 0);
  assert_int_equal(qwl, wl);
  pb_err_clear(&err);
  assert_int_equal(pb_nn_weights_load(b, qw, qwl, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "head is 2 there but 3"));
  free(qw);
  free(w);
  free(st);
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
  pb_nn_destroy(&q);
  pb_nn_destroy(&qref);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_weights_roundtrip),
      cmocka_unit_test(test_state_roundtrip),
      cmocka_unit_test(test_corrupt_refused),
      cmocka_unit_test(test_spec_mismatch),
      cmocka_unit_test(test_res_norm_buffers),
      cmocka_unit_test(test_pv_buffers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
