/* test_learn.c - the learner's training (common/train/learn): the paper's
 * defaults, gradient clipping from the config, V targets mixed with search
 * values (and the two training threads' determinism), mirror augmentation,
 * the learning-rate schedule, and the AlphaZero learner. The checkpoints of
 * the run state are tested in test_learn_state.c; the helpers they share
 * are in learn_fixtures.h.
 *
 * Networks are tiny (one 4-channel convolution, 8 dense units: the smoke
 * config) and episodes are random Connect Four games, made here, so every
 * test runs in a second or two under AddressSanitizer. Q targets are made
 * up from a hash of the position, so that two learners given the same data
 * get the same targets. */
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
#include "config.h"
#include "episodes.h"
#include "game.h"
#include "learn.h"
#include "learn_fixtures.h"
#include "model.h"
#include "nn.h"
#include "proc.h"
#include "rng.h"

/* ---------------------------------------------------------------- helpers */

/* Q targets whose best legal value is exactly `best` in every position
 * (the first legal action; the other legal ones lower), with a higher
 * value on the illegal actions, which must be ignored. Caller frees. */
static float *q_best_is(pb_learn_t *l, size_t n, float best, int *n_illegal) {
  const int A = G->num_actions;
  const pb_state_t *u = pb_learn_distinct_states(l);
  float *q = malloc((n ? n : 1) * A * sizeof *q);
  assert_non_null(q);
  *n_illegal = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t acts[PB_MAX_ACTIONS];
    int na = G->legal(&u[i], acts);
    assert_true(na > 0);
    for (int a = 0; a < A; a++) q[i * A + a] = 0.9f; /* illegal */
    for (int k = 0; k < na; k++) q[i * A + acts[k]] = k == 0 ? best : -0.3f;
    *n_illegal += na < A;
  }
  return q;
}

/* V's outputs on the stored positions of eps (malloc'd). */
static float *v_of(pb_learn_t *l, const pb_episodes_t *eps) {
  const size_t n = eps->n_states, in = (size_t)G->planes * G->height * G->width;
  float *x = malloc(n * in * sizeof *x), *y = malloc(n * sizeof *y);
  for (size_t i = 0; i < n; i++) G->encode(&eps->states[i], &x[i * in]);
  pb_err_t err;
  assert_int_equal(pb_nn_forward(pb_learn_v(l), x, (int)n, y, &err), 0);
  free(x);
  return y;
}

/* ------------------------------------------------------ the paper's way */

static void test_paper_defaults(void **state) {
  (void)state;
  pb_learn_t *l = learner(NULL);
  pb_config_t c;
  config(&c, NULL);
  assert_int_equal(c.train.replay_iterations, 1);
  assert_true(c.train.v_search_mix == 0.0);
  assert_int_equal(pb_learn_v_first(l), 1);
  assert_int_equal(pb_learn_version(l), 0);
  assert_int_equal(pb_learn_replay_positions(l), 0);

  pb_err_t err;
  for (int k = 0; k < 3; k++) {
    pb_episodes_t e;
    pb_episodes_init(&e);
    size_t n = random_episodes(10 + k, 3, 0, &e);
    iter_t it;
    iterate(l, &e, k, &it);
    assert_int_equal(pb_learn_version(l), (uint64_t)k + 1);
    assert_int_equal(pb_learn_replay_positions(l), 0);
    /* one epoch over the current positions, nothing else */
    assert_int_equal(it.v.samples, n);
    assert_int_equal(it.q.samples, n);
    assert_int_equal(it.v.steps, (n + 31) / 32);
    assert_int_equal(it.q.steps, (n + 31) / 32);
    /* the configured rates, untouched by any schedule */
    assert_true(it.v.lr == (double)(float)c.train.v_lr);
    assert_true(it.q.lr == (double)(float)c.train.q_lr);
    assert_true(it.v.grad_norm_mean > 0 && it.q.grad_norm_max > 0);
    assert_true(it.q.grad_norm_max >= it.q.grad_norm_mean);
    assert_true(isfinite(it.v.loss_mean) && isfinite(it.q.loss_mean));
    pb_episodes_free(&e);
  }
  /* In the paper's order train_after_search trains Q only: vst untouched */
  pb_episodes_t e;
  pb_episodes_init(&e);
  random_episodes(20, 2, 0, &e);
  size_t n;
  assert_int_equal(pb_learn_distinct(l, &e, &n, &err), 0);
  float *qt = made_up_q(l, n, 1);
  pb_learn_stats_t vst, qst;
  memset(&vst, 0, sizeof vst);
  vst.steps = 12345;
  int64_t vsteps = pb_nn_train_steps(pb_learn_v(l));
  assert_int_equal(pb_learn_train_after_search(l, &e, qt, &vst, &qst, &err), 0);
  assert_int_equal(vst.steps, 12345);
  assert_int_equal(pb_nn_train_steps(pb_learn_v(l)), vsteps);
  assert_true(qst.steps > 0);
  free(qt);
  pb_episodes_free(&e);
  pb_learn_destroy(&l);
  assert_null(l);
}

/* train.grad_clip reaches the networks: the reported norms are those
 * before clipping, and the training goes elsewhere. */
static void test_grad_clip_config(void **state) {
  (void)state;
  static const char *const clip[] = {"train.grad_clip=0.001", NULL};
  pb_learn_t *a = learner(NULL), *b = learner(clip);
  pb_episodes_t e;
  pb_episodes_init(&e);
  random_episodes(3, 4, 0, &e);
  iter_t ia, ib;
  iterate(a, &e, 1, &ia);
  iterate(b, &e, 1, &ib);
  assert_true(ia.q.loss_first == ib.q.loss_first); /* same start */
  assert_true(ib.q.grad_norm_max > 0.01);
  assert_true(ib.v.grad_norm_mean > 0.001);
  assert_false(same_nets(a, b));
  pb_episodes_free(&e);
  pb_learn_destroy(&a);
  pb_learn_destroy(&b);
}

/* ------------------------------------- V targets mixed with search values */

/* Every outcome is 0 (drawn episodes) and every position's best legal Q
 * target is 0.5 (illegal actions 0.9): V learns (1 - m) * 0 + m * 0.5. */
static void test_v_search_mix_targets(void **state) {
  (void)state;
  const char *mixes[] = {"0", "0.5", "1"};
  const double want[] = {0.0, 0.25, 0.5};
  pb_episodes_t e;
  pb_episodes_init(&e);
  size_t npos = random_episodes(7, 4, 1, &e);
  for (int i = 0; i < 3; i++) {
    char mix[64];
    snprintf(mix, sizeof mix, "train.v_search_mix=%s", mixes[i]);
    const char *sets[] = {mix, "train.v_epochs=120", "train.v_lr=0.01", NULL};
    pb_learn_t *l = learner(sets);
    pb_err_t err;
    assert_int_equal(pb_learn_v_first(l), i == 0);
    pb_learn_stats_t vst, qst;
    memset(&vst, 0, sizeof vst);
    if (i == 0) /* the paper's order: V first, on outcomes */
      assert_int_equal(pb_learn_train_v(l, &e, NULL, &vst, &err), 0);
    size_t n;
    assert_int_equal(pb_learn_distinct(l, &e, &n, &err), 0);
    int n_illegal = 0;
    float *qt = q_best_is(l, n, 0.5f, &n_illegal);
    if (i == 0) {
      /* qtargets given, but with m = 0 the targets stay the outcomes */
      pb_learn_stats_t v2;
      assert_int_equal(pb_learn_train_v(l, &e, qt, &v2, &err), 0);
      assert_true(v2.loss_last < 0.01);
    }
    int rc = pb_learn_train_after_search(l, &e, qt, &vst, &qst, &err);
    if (rc != 0) fail_msg("%s", err.msg);
    /* both networks trained */
    assert_true(vst.steps > 0);
    assert_true(qst.steps > 0);
    assert_int_equal(vst.samples, 120 * npos);
    assert_int_equal(qst.samples, npos);
    float *v = v_of(l, &e);
    double mean = 0, maxdev = 0;
    for (size_t k = 0; k < npos; k++) {
      mean += v[k] / npos;
      double dv = fabs(v[k] - want[i]);
      if (dv > maxdev) maxdev = dv;
    }
    print_message("v_search_mix %s: V mean %.4f (want %.2f), max deviation "
                  "%.4f, last loss %.5f; %d positions with illegal actions\n",
                  mixes[i], mean, want[i], maxdev, vst.loss_last, n_illegal);
    assert_true(fabs(mean - want[i]) < 0.05);
    assert_true(maxdev < 0.2);
    assert_true(vst.loss_last < 0.01);
    free(v);
    free(qt);
    pb_learn_destroy(&l);
  }
  pb_episodes_free(&e);
}

/* With V trained after the search, V and Q train on two threads; the
 * result does not depend on their timing: the same iteration run from the
 * same checkpoint gives the same bits, and the same as the learner that
 * wrote the checkpoint. */
static void test_v_search_mix_deterministic(void **state) {
  (void)state;
  static const char *const sets[] = {"train.v_search_mix=1",
                                     "train.v_epochs=3", "train.q_epochs=2",
                                     NULL};
  char dir[256], ck[600];
  tp_tmpdir(dir, sizeof dir, "learn-mix");
  snprintf(ck, sizeof ck, "%s/ckpt.pbck", dir);
  pb_err_t err;
  pb_learn_t *l = learner(sets);
  assert_int_equal(pb_learn_v_first(l), 0);
  pb_episodes_t e1, e2;
  pb_episodes_init(&e1);
  pb_episodes_init(&e2);
  random_episodes(31, 4, 0, &e1);
  random_episodes(32, 4, 0, &e2);
  iter_t it;
  iterate(l, &e1, 1, &it);
  assert_true(it.v.steps > 0 && it.q.steps > 0);
  assert_int_equal(it.v.steps, 3 * ((it.positions + 31) / 32));
  assert_int_equal(it.q.steps, 2 * ((it.positions + 31) / 32));
  assert_int_equal(pb_learn_save(l, ck, NULL, 0, &err), 0);

  pb_learn_t *a = learner(sets), *b = learner(sets);
  assert_int_equal(pb_learn_load(a, ck, NULL, NULL, &err), 0);
  assert_int_equal(pb_learn_load(b, ck, NULL, NULL, &err), 0);
  iter_t il, ia, ib;
  iterate(l, &e2, 2, &il);
  iterate(a, &e2, 2, &ia);
  iterate(b, &e2, 2, &ib);
  assert_true(same_stats(&ia.v, &ib.v));
  assert_true(same_stats(&ia.q, &ib.q));
  assert_true(same_stats(&il.v, &ia.v));
  assert_true(same_stats(&il.q, &ia.q));
  assert_true(same_nets(a, b));
  assert_true(same_nets(l, a));
  /* negative control: other search values, other V */
  pb_learn_t *c = learner(sets);
  assert_int_equal(pb_learn_load(c, ck, NULL, NULL, &err), 0);
  iter_t ic;
  iterate(c, &e2, 3, &ic);
  assert_false(same_nets(a, c));
  assert_true(ic.v.loss_first != ia.v.loss_first);

  unlink(ck);
  assert_int_equal(rmdir(dir), 0);
  pb_episodes_free(&e1);
  pb_episodes_free(&e2);
  pb_learn_destroy(&l);
  pb_learn_destroy(&a);
  pb_learn_destroy(&b);
  pb_learn_destroy(&c);
}

/* --------------------------------------------------- mirror augmentation */

static void test_augment_deterministic(void **state) {
  (void)state;
  static const char *const mirror[] = {"train.augment=mirror", NULL};
  pb_learn_t *a = learner(mirror), *b = learner(mirror), *c = learner(NULL);
  for (int k = 0; k < 2; k++) {
    pb_episodes_t e;
    pb_episodes_init(&e);
    random_episodes(60 + k, 4, 0, &e);
    iter_t ia, ib, ic;
    iterate(a, &e, k, &ia);
    iterate(b, &e, k, &ib);
    iterate(c, &e, k, &ic);
    assert_true(same_stats(&ia.v, &ib.v));
    assert_true(same_stats(&ia.q, &ib.q));
    assert_true(isfinite(ia.q.loss_mean) && isfinite(ia.v.loss_mean));
    pb_episodes_free(&e);
  }
  assert_true(same_nets(a, b));
  assert_false(same_nets(a, c)); /* mirroring changed the training */
  pb_learn_destroy(&a);
  pb_learn_destroy(&b);
  pb_learn_destroy(&c);
}

/* Q trained on one lopsided position with augment = mirror also learns the
 * position's mirror image, with the targets mirrored: Q(mirror(s))[a] =
 * target[mirror_action(a)]. The illegal action's target is NaN, so a mask
 * that was not mirrored along would make the loss NaN. */
static void test_augment_mirrors_targets(void **state) {
  (void)state;
  pb_err_t err;
  pb_state_t s, m, hist[16];
  /* column 1 full (action 0 illegal), one stone in column 3 */
  assert_int_equal(G->parse(&s, "1111113", &err), 0);
  G->mirror(&s, &m);
  for (int i = 0; i < 16; i++) hist[i] = s;
  pb_episodes_t e;
  pb_episodes_init(&e);
  assert_int_equal(pb_episodes_add(&e, hist, 16, 0, 0, &err), 0);
  const float tgt[7] = {NAN, -1.0f, -0.5f, 0.0f, 0.25f, 0.5f, 1.0f};

  double err_s[2], err_m[2];
  for (int aug = 0; aug < 2; aug++) {
    const char *sets[] = {aug ? "train.augment=mirror" : "train.augment=none",
                          "train.q_epochs=300", "train.q_lr=0.01", NULL};
    pb_learn_t *l = learner(sets);
    size_t n;
    assert_int_equal(pb_learn_distinct(l, &e, &n, &err), 0);
    assert_int_equal(n, 1);
    float qt[7];
    memcpy(qt, tgt, sizeof qt);
    pb_learn_stats_t st;
    int rc = pb_learn_train_q(l, &e, qt, &st, &err);
    if (rc != 0) fail_msg("augment %d: %s", aug, err.msg);
    assert_int_equal(st.steps, 300);
    assert_true(isfinite(st.loss_last));
    float in[2][84], q[2][7];
    G->encode(&s, in[0]);
    G->encode(&m, in[1]);
    assert_int_equal(pb_nn_forward(pb_learn_q(l), &in[0][0], 2, &q[0][0], &err),
                     0);
    err_s[aug] = err_m[aug] = 0;
    for (int a = 1; a < 7; a++) { /* the legal actions of s */
      double d = fabs(q[0][a] - tgt[a]);
      if (d > err_s[aug]) err_s[aug] = d;
      int ma = G->mirror_action(a); /* legal in m */
      d = fabs(q[1][ma] - tgt[a]);
      if (d > err_m[aug]) err_m[aug] = d;
    }
    print_message("augment %s: max error on s %.3f, on mirror(s) %.3f\n",
                  aug ? "mirror" : "none", err_s[aug], err_m[aug]);
    pb_learn_destroy(&l);
  }
  assert_true(err_s[0] < 0.1);
  assert_true(err_s[1] < 0.1);
  assert_true(err_m[1] < 0.1);  /* learned the image too */
  assert_true(err_m[0] > 0.3);  /* which it does not without mirroring */
  pb_episodes_free(&e);
}

/* ------------------------------------------------------ learning rates */

/* train.lr_warmup_steps = 10: the rate rises linearly over the first ten
 * Adam steps of each network and then stays at the configured one. */
static void test_lr_warmup(void **state) {
  (void)state;
  static const char *const sets[] = {"train.lr_warmup_steps=10",
                                     "train.v_lr=0.002", "train.q_lr=0.004",
                                     NULL};
  pb_learn_t *l = learner(sets), *plain = learner(NULL);
  pb_episodes_t e;
  pb_episodes_init(&e);
  size_t n = random_episodes(70, 3, 0, &e);
  const size_t per = (n + 31) / 32;
  assert_true(per >= 2 && per < 5); /* the first call ends inside warm-up */
  pb_err_t err;
  size_t qn;
  assert_int_equal(pb_learn_distinct(l, &e, &qn, &err), 0);
  float *qt = made_up_q(l, qn, 5);
  int saw_below = 0, saw_full = 0;
  for (int call = 0; call < 5; call++) {
    pb_learn_stats_t vs, qs;
    assert_int_equal(pb_learn_train_v(l, &e, NULL, &vs, &err), 0);
    assert_int_equal(pb_learn_train_q(l, &e, qt, &qs, &err), 0);
    for (int k = 0; k < 2; k++) {
      const pb_learn_stats_t *st = k ? &qs : &vs;
      double base = k ? 0.004 : 0.002;
      int64_t steps = pb_nn_train_steps(k ? pb_learn_q(l) : pb_learn_v(l));
      assert_int_equal(steps, (int64_t)(per * (call + 1)));
      /* the last step of the call was step number `steps` (1-based) */
      double f = steps < 10 ? (double)steps / 10 : 1.0;
      float want = (float)((double)(float)base * f); /* as the shim's float */
      if (st->lr != (double)want)
        fail_msg("call %d net %d: lr %.9g after %lld steps, want %.9g", call,
                 k, st->lr, (long long)steps, (double)want);
      if (call == 0) assert_true(st->lr < base);
      saw_below += st->lr < (double)(float)base;
      saw_full += st->lr == (double)(float)base;
    }
  }
  assert_true(saw_below >= 2 && saw_full >= 2);
  /* without a schedule, the configured rate from the first step */
  pb_learn_stats_t vs;
  assert_int_equal(pb_learn_train_v(plain, &e, NULL, &vs, &err), 0);
  assert_true(vs.lr == (double)(float)0.003);
  free(qt);
  pb_episodes_free(&e);
  pb_learn_destroy(&l);
  pb_learn_destroy(&plain);
}

/* lr_decay_iterations = 2, lr_min_factor = 0.1: a cosine from the
 * configured rate at version 0 to a tenth of it at version 2, then flat. */
static void test_lr_decay(void **state) {
  (void)state;
  static const char *const sets[] = {"train.lr_decay_iterations=2",
                                     "train.lr_min_factor=0.1",
                                     "train.v_lr=0.002", "train.q_lr=0.004",
                                     NULL};
  pb_learn_t *l = learner(sets);
  const double f[] = {1.0, 0.55, 0.1, 0.1, 0.1};
  for (int ver = 0; ver < 5; ver++) {
    assert_int_equal(pb_learn_version(l), (uint64_t)ver);
    pb_episodes_t e;
    pb_episodes_init(&e);
    random_episodes(80 + ver, 2, 0, &e);
    iter_t it;
    iterate(l, &e, ver, &it);
    double wv = 0.002 * f[ver], wq = 0.004 * f[ver];
    if (fabs(it.v.lr - wv) > 1e-6 * wv || fabs(it.q.lr - wq) > 1e-6 * wq)
      fail_msg("version %d: lr V %.9g Q %.9g, want %.9g %.9g", ver, it.v.lr,
               it.q.lr, wv, wq);
    pb_episodes_free(&e);
  }
  pb_learn_destroy(&l);
}

/* ---------------------------------------------------------- alphazero */

/* The episodes of random games with made-up visit distributions over the
 * legal actions (from a hash of the position and salt). */
static size_t az_episodes(uint64_t seed, int n, uint64_t salt,
                          pb_episodes_t *out) {
  pb_episodes_t e;
  pb_episodes_init(&e);
  size_t total = random_episodes(seed, n, 0, &e);
  const int A = G->num_actions;
  float *pol = calloc(total * A, sizeof *pol);
  assert_non_null(pol);
  for (size_t i = 0; i < total; i++) {
    uint8_t acts[PB_MAX_ACTIONS];
    int na = G->legal(&e.states[i], acts);
    float row[PB_MAX_ACTIONS], sum = 0;
    made_up_row(&e.states[i], salt, row);
    for (int k = 0; k < na; k++) sum += pol[i * A + acts[k]] = row[acts[k]] + 1.5f;
    for (int k = 0; k < na; k++) pol[i * A + acts[k]] /= sum;
  }
  pb_err_t err;
  for (size_t k = 0; k < e.n_eps; k++)
    assert_int_equal(pb_episodes_add_policy(out, &e.states[e.start[k]],
                                            e.len[k], e.reward[k], 0,
                                            &pol[(size_t)e.start[k] * A], A,
                                            &err),
                     0);
  free(pol);
  pb_episodes_free(&e);
  return total;
}

/* One policy+value network in the Q slot, no V; it trains on visits and
 * outcomes, its loss is the sum of the two parts and falls; the replay
 * window keeps the policies; a checkpoint round trips exactly and is
 * refused by a probs learner (and a probs checkpoint by an alphazero
 * one), naming the algorithms. */
static void test_alphazero_learner(void **state) {
  (void)state;
  static const char *const sets[] = {"algorithm=alphazero",
                                     "train.replay_iterations=2", NULL};
  pb_learn_t *l = learner(sets);
  assert_int_equal(pb_learn_nets(l), PB_NETS_PV);
  assert_null(pb_learn_v(l));
  const pb_nn_spec_t *sp = pb_nn_spec(pb_learn_q(l));
  assert_int_equal(sp->head, PB_NN_HEAD_PV);
  assert_int_equal(sp->outputs, G->num_actions + 1);
  pb_err_t err;
  /* PROBS episodes are refused */
  pb_episodes_t plain;
  pb_episodes_init(&plain);
  random_episodes(5, 2, 0, &plain);
  pb_learn_stats_t st;
  assert_int_equal(pb_learn_train_pv(l, &plain, &st, &err), PB_EINVAL);
  pb_episodes_free(&plain);

  pb_episodes_t e;
  pb_episodes_init(&e);
  size_t n = az_episodes(7, 6, 1, &e);
  double first = 0, last = 0;
  for (int rep = 0; rep < 30; rep++) {
    assert_int_equal(pb_learn_train_pv(l, &e, &st, &err), 0);
    assert_int_equal(st.samples, n);
    assert_true(fabs(st.policy_loss_mean + st.value_loss_mean -
                     st.loss_mean) < 1e-3 * (1 + st.loss_mean));
    if (rep == 0) first = st.loss_mean;
    last = st.loss_mean;
  }
  assert_true(last < first * 0.8);
  /* every position its own "distinct" one */
  size_t nd = 0;
  assert_int_equal(pb_learn_distinct(l, &e, &nd, &err), 0);
  assert_int_equal(nd, n);
  assert_int_equal(pb_learn_end_iteration(l, &e, e.policy, &err), 0);
  assert_int_equal(pb_learn_replay_positions(l), n);
  /* the window's positions train with their policies: a second iteration
   * sees both */
  pb_episodes_t e2;
  pb_episodes_init(&e2);
  size_t n2 = az_episodes(8, 3, 2, &e2);
  assert_int_equal(pb_learn_train_pv(l, &e2, &st, &err), 0);
  assert_int_equal(st.samples, n + n2);

  char dir[256], ck[600];
  tp_tmpdir(dir, sizeof dir, "learn-az");
  assert_true(dir[0] != '\0');
  snprintf(ck, sizeof ck, "%s/az.pbck", dir);
  assert_int_equal(pb_learn_save(l, ck, NULL, 0, &err), 0);
  pb_learn_t *b = learner(sets);
  assert_int_equal(pb_learn_load(b, ck, NULL, NULL, &err), 0);
  assert_int_equal(pb_learn_version(b), 1);
  assert_int_equal(pb_learn_replay_positions(b), n);
  float in[3 * 42 * 2 * 8], oa[64], ob[64];
  for (int i = 0; i < 3; i++) G->encode(&e.states[i], &in[i * G->planes * 42]);
  assert_int_equal(pb_nn_forward(pb_learn_q(l), in, 3, oa, &err), 0);
  assert_int_equal(pb_nn_forward(pb_learn_q(b), in, 3, ob, &err), 0);
  assert_memory_equal(oa, ob, 3 * (G->num_actions + 1) * sizeof(float));
  /* the same training afterwards: identical */
  pb_learn_stats_t sa, sb;
  assert_int_equal(pb_learn_train_pv(l, &e2, &sa, &err), 0);
  assert_int_equal(pb_learn_train_pv(b, &e2, &sb, &err), 0);
  assert_true(sa.loss_mean == sb.loss_mean);
  /* another algorithm's learner refuses it, and the other way round */
  pb_learn_t *p = learner(NULL);
  assert_int_equal(pb_learn_load(p, ck, NULL, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "algorithm alphazero"));
  char pk[600];
  snprintf(pk, sizeof pk, "%s/probs.pbck", dir);
  assert_int_equal(pb_learn_save(p, pk, NULL, 0, &err), 0);
  assert_int_equal(pb_learn_load(b, pk, NULL, NULL, &err), PB_EMISMATCH);
  assert_non_null(strstr(err.msg, "algorithm probs"));
  assert_int_equal(pb_learn_version(b), 1); /* unchanged */
  /* pb_model_open builds what the file holds */
  pb_config_t oc;
  pb_model_t *o = pb_model_open(ck, "cpu", &oc, &err);
  assert_non_null(o);
  assert_int_equal(pb_model_kind(o), PB_NETS_PV);
  assert_string_equal(oc.algorithm, "alphazero");
  pb_model_destroy(&o);
  unlink(ck);
  unlink(pk);
  rmdir(dir);
  pb_learn_destroy(&p);
  pb_learn_destroy(&b);
  pb_learn_destroy(&l);
  pb_episodes_free(&e);
  pb_episodes_free(&e2);
}

/* The replay cap keeps the policies of the episodes it keeps. */
static void test_alphazero_cap_replay(void **state) {
  (void)state;
  static const char *const sets[] = {"algorithm=alphazero",
                                     "train.replay_capacity=40", NULL};
  pb_learn_t *l = learner(sets);
  pb_episodes_t e;
  pb_episodes_init(&e);
  az_episodes(9, 6, 3, &e);
  pb_episodes_t keep;
  pb_episodes_init(&keep);
  pb_err_t err;
  assert_int_equal(pb_episodes_append(&keep, &e, &err), 0);
  size_t dropped = pb_learn_cap_replay(l, &keep);
  assert_true(dropped > 0);
  assert_true(keep.n_states <= 40);
  const int A = G->num_actions;
  for (size_t k = 0; k < keep.n_eps; k++) {
    size_t src = e.n_eps - keep.n_eps + k;
    assert_memory_equal(pb_episodes_policy(&keep, k, 0),
                        pb_episodes_policy(&e, src, 0),
                        keep.len[k] * A * sizeof(float));
  }
  pb_episodes_free(&keep);
  pb_episodes_free(&e);
  pb_learn_destroy(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paper_defaults),
      cmocka_unit_test(test_grad_clip_config),
      cmocka_unit_test(test_v_search_mix_targets),
      cmocka_unit_test(test_v_search_mix_deterministic),
      cmocka_unit_test(test_augment_deterministic),
      cmocka_unit_test(test_augment_mirrors_targets),
      cmocka_unit_test(test_lr_warmup),
      cmocka_unit_test(test_lr_decay),
      cmocka_unit_test(test_alphazero_learner),
      cmocka_unit_test(test_alphazero_cap_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
