/* test_learn_state.c - the learner's run state in checkpoints
 * (common/train/learn_state.c): the replay window (sizes, checkpoints, exact
 * resume, damaged sections), a damaged run state refused without a
 * change, and the window's targets read back exactly.
 *
 * Networks, episodes and Q targets as in test_learn.c (learn_fixtures.h). */
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

static char *slurp_len(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* ---------------------------------------------------- the replay window */

/* Writes a copy of checkpoint `from` to `to` with section `name` replaced
 * by data (or dropped when data is NULL). */
static void copy_ckpt(const char *from, const char *to, const char *name,
                      const void *data, size_t len) {
  pb_err_t err;
  pb_ckpt_t *in = pb_ckpt_read(from, &err);
  if (in == NULL) fail_msg("%s", err.msg);
  pb_ckpt_t *out = pb_ckpt_new(&err);
  int found = 0;
  for (int i = 0; i < pb_ckpt_count(in); i++) {
    const char *nm = pb_ckpt_name(in, i);
    const void *d;
    size_t l;
    assert_int_equal(pb_ckpt_get(in, nm, &d, &l), 0);
    if (strcmp(nm, name) == 0) {
      found = 1;
      if (data == NULL) continue;
      d = data;
      l = len;
    }
    assert_int_equal(pb_ckpt_add(out, nm, d, l, &err), 0);
  }
  assert_true(found);
  assert_int_equal(pb_ckpt_write(out, to, &err), 0);
  pb_ckpt_destroy(&out);
  pb_ckpt_destroy(&in);
}

/* Everything a refused load must leave alone. */
typedef struct {
  uint64_t version;
  size_t replay;
  uint8_t *v, *q;
  size_t vl, ql;
} snap_t;

static void snap(pb_learn_t *l, snap_t *s) {
  s->version = pb_learn_version(l);
  s->replay = pb_learn_replay_positions(l);
  s->v = state_of(pb_learn_v(l), &s->vl);
  s->q = state_of(pb_learn_q(l), &s->ql);
}

static void assert_unchanged(pb_learn_t *l, const snap_t *s, const char *what) {
  snap_t now;
  snap(l, &now);
  if (now.version != s->version || now.replay != s->replay ||
      now.vl != s->vl || memcmp(now.v, s->v, s->vl) != 0 || now.ql != s->ql ||
      memcmp(now.q, s->q, s->ql) != 0)
    fail_msg("%s: the refused load changed the learner (version %llu -> "
             "%llu, replay %zu -> %zu, V %s, Q %s)",
             what, (unsigned long long)s->version,
             (unsigned long long)now.version, s->replay, now.replay,
             memcmp(now.v, s->v, s->vl) ? "changed" : "same",
             memcmp(now.q, s->q, s->ql) ? "changed" : "same");
  free(now.v);
  free(now.q);
}

static void snap_free(snap_t *s) {
  free(s->v);
  free(s->q);
}

/* train.replay_iterations = 3: the window holds the last two iterations'
 * positions, every training pass covers the current positions and the
 * window, and a checkpoint carries the window: a learner loaded from it
 * continues bit for bit like the one that wrote it. */
static void test_replay_window(void **state) {
  (void)state;
  static const char *const sets[] = {"train.replay_iterations=3", NULL};
  pb_learn_t *l = learner(sets);
  assert_int_equal(pb_learn_v_first(l), 1);
  char dir[256], ck[600], noreplay[600];
  tp_tmpdir(dir, sizeof dir, "learn-replay");
  assert_true(dir[0] != '\0');
  snprintf(ck, sizeof ck, "%s/ckpt-3.pbck", dir);
  snprintf(noreplay, sizeof noreplay, "%s/noreplay.pbck", dir);

  enum { ITERS = 4 };
  pb_episodes_t e[ITERS + 1];
  size_t n[ITERS + 1];
  for (int k = 1; k <= ITERS; k++) {
    pb_episodes_init(&e[k]);
    n[k] = random_episodes(100 + k, 2 + k, 0, &e[k]); /* sizes differ */
  }
  pb_err_t err;
  iter_t it;
  for (int k = 1; k < ITERS; k++) {
    iterate(l, &e[k], k, &it);
    /* trained on this iteration and the window before it */
    size_t window = (k >= 2 ? n[k - 1] : 0) + (k >= 3 ? n[k - 2] : 0);
    assert_int_equal(it.q.samples, n[k] + window);
    assert_int_equal(it.v.samples, n[k] + window);
    size_t want = n[k] + (k >= 2 ? n[k - 1] : 0);
    assert_int_equal(pb_learn_replay_positions(l), want);
  }
  assert_int_equal(pb_learn_version(l), 3);
  assert_int_equal(pb_learn_replay_positions(l), n[2] + n[3]);

  /* checkpoint at version 3, restored into a fresh learner */
  assert_int_equal(pb_learn_save(l, ck, "xyz", 3, &err), 0);
  pb_learn_t *r = learner(sets);
  void *extra = NULL;
  size_t extra_len = 0;
  assert_int_equal(pb_learn_load(r, ck, &extra, &extra_len, &err), 0);
  assert_int_equal(extra_len, 3);
  assert_memory_equal(extra, "xyz", 3);
  free(extra);
  assert_int_equal(pb_learn_version(r), 3);
  assert_int_equal(pb_learn_replay_positions(r), n[2] + n[3]);
  assert_true(same_nets(l, r));

  /* the same checkpoint without its window: loads, with an empty window */
  copy_ckpt(ck, noreplay, "learn.replay", NULL, 0);
  pb_learn_t *w = learner(sets);
  assert_int_equal(pb_learn_load(w, noreplay, NULL, NULL, &err), 0);
  assert_int_equal(pb_learn_version(w), 3);
  assert_int_equal(pb_learn_replay_positions(w), 0);

  /* iteration 4 on all three */
  iter_t il, ir, iw;
  iterate(l, &e[4], 4, &il);
  iterate(r, &e[4], 4, &ir);
  iterate(w, &e[4], 4, &iw);
  assert_int_equal(il.q.samples, n[4] + n[2] + n[3]);
  assert_int_equal(il.v.samples, n[4] + n[2] + n[3]);
  assert_true(same_stats(&il.v, &ir.v));
  assert_true(same_stats(&il.q, &ir.q));
  assert_true(same_nets(l, r));
  /* the window now: iterations 3 and 4 */
  assert_int_equal(pb_learn_replay_positions(l), n[3] + n[4]);
  assert_int_equal(pb_learn_replay_positions(r), n[3] + n[4]);
  /* and the whole state is the same: byte-identical checkpoints */
  char c1[600], c2[600];
  snprintf(c1, sizeof c1, "%s/l.pbck", dir);
  snprintf(c2, sizeof c2, "%s/r.pbck", dir);
  assert_int_equal(pb_learn_save(l, c1, NULL, 0, &err), 0);
  assert_int_equal(pb_learn_save(r, c2, NULL, 0, &err), 0);
  size_t l1, l2;
  char *b1 = slurp_len(c1, &l1), *b2 = slurp_len(c2, &l2);
  assert_int_equal(l1, l2);
  assert_memory_equal(b1, b2, l1);
  free(b1);
  free(b2);
  /* without the window, the same iteration trains on less and elsewhere */
  assert_int_equal(iw.q.samples, n[4]);
  assert_int_equal(pb_learn_replay_positions(w), n[4]);
  assert_false(same_nets(l, w));

  unlink(ck);
  unlink(noreplay);
  unlink(c1);
  unlink(c2);
  assert_int_equal(rmdir(dir), 0);
  for (int k = 1; k <= ITERS; k++) pb_episodes_free(&e[k]);
  pb_learn_destroy(&l);
  pb_learn_destroy(&r);
  pb_learn_destroy(&w);
}

/* Who delivered what an iteration keeps (pb_learn_set_origin): the tags
 * of its episodes and of its distinct positions' search targets go into
 * the window with each position, through a checkpoint, for that
 * iteration only; pb_learn_replay_drop takes out what one of them
 * delivered. */
static void test_replay_origin(void **state) {
  (void)state;
  static const char *const sets[] = {"train.replay_iterations=3", NULL};
  pb_learn_t *l = learner(sets);
  pb_episodes_t e;
  pb_episodes_init(&e);
  random_episodes(7, 4, 0, &e);
  pb_err_t err;
  size_t nd = 0;
  assert_int_equal(pb_learn_distinct(l, &e, &nd, &err), 0);
  uint64_t ep[4], *uq = malloc(nd * sizeof *uq);
  assert_non_null(uq);
  for (int k = 0; k < 4; k++)
    ep[k] = PB_REPLAY_TAG(PB_REPLAY_TAG_CONN, 0x100000000ull + 1 + (uint64_t)k);
  for (size_t d = 0; d < nd; d++)
    uq[d] = PB_REPLAY_TAG(PB_REPLAY_TAG_KEY, 1 + d % 3);
  assert_int_equal(pb_learn_set_origin(l, ep, 4, uq, nd, &err), 0);
  iter_t it;
  iterate(l, &e, 1, &it);
  const pb_replay_t *w = pb_learn_replay(l);
  assert_int_equal(w->n, 1);
  assert_int_equal(w->it[0].n, e.n_states);
  /* the same distinct positions as the iteration's */
  assert_int_equal(pb_learn_distinct(l, &e, &nd, &err), 0);
  const pb_state_t *u = pb_learn_distinct_states(l);
  for (size_t k = 0; k < e.n_eps; k++)
    for (uint32_t t = 0; t < e.len[k]; t++) {
      const size_t i = e.start[k] + t;
      const uint64_t *by = &w->it[0].by[i * PB_REPLAY_BY];
      assert_true(by[PB_REPLAY_BY_SELFPLAY] == ep[k]);
      size_t d = 0;
      while (memcmp(&u[d], &e.states[i], sizeof u[d])) d++;
      assert_true(by[PB_REPLAY_BY_SEARCH] == uq[d]);
    }
  /* the next iteration, no origin given: its tags are 0 */
  pb_episodes_t e2;
  pb_episodes_init(&e2);
  random_episodes(8, 2, 0, &e2);
  iterate(l, &e2, 2, &it);
  assert_int_equal(w->n, 2);
  for (size_t i = 0; i < w->it[1].n * PB_REPLAY_BY; i++)
    assert_true(w->it[1].by[i] == 0);
  /* through a checkpoint, bit for bit */
  char dir[256], ck[600];
  tp_tmpdir(dir, sizeof dir, "learn-origin");
  snprintf(ck, sizeof ck, "%s/o.pbck", dir);
  assert_int_equal(pb_learn_save(l, ck, NULL, 0, &err), 0);
  pb_learn_t *r = learner(sets);
  assert_int_equal(pb_learn_load(r, ck, NULL, NULL, &err), 0);
  const pb_replay_t *rw = pb_learn_replay(r);
  assert_int_equal(rw->n, 2);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(rw->it[i].n, w->it[i].n);
    assert_memory_equal(rw->it[i].by, w->it[i].by,
                        w->it[i].n * PB_REPLAY_BY * sizeof(uint64_t));
    assert_memory_equal(rw->it[i].q, w->it[i].q,
                        w->it[i].n * 7 * sizeof(float));
  }
  /* what episode 2's actor delivered leaves the window */
  const size_t before = pb_learn_replay_positions(r);
  assert_int_equal(pb_learn_replay_drop(r, &ep[2], 1), e.len[2]);
  assert_int_equal(pb_learn_replay_positions(r), before - e.len[2]);
  assert_int_equal(pb_learn_replay_drop(r, &ep[2], 1), 0);
  unlink(ck);
  assert_int_equal(rmdir(dir), 0);
  free(uq);
  pb_episodes_free(&e);
  pb_episodes_free(&e2);
  pb_learn_destroy(&l);
  pb_learn_destroy(&r);
}

static void put_u32(uint8_t *p, uint32_t x) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(x >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t x) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(x >> (8 * i));
}

/* A checkpoint whose learn.replay section is damaged (the file itself
 * intact: the damage is inside a section) is refused, and the learner it
 * was loaded into keeps its networks, version and window. */
static void test_replay_damaged(void **state) {
  (void)state;
  static const char *const sets[] = {"train.replay_iterations=3", NULL};
  char dir[256], ck[600], bad[600];
  tp_tmpdir(dir, sizeof dir, "learn-damaged");
  snprintf(ck, sizeof ck, "%s/good.pbck", dir);
  snprintf(bad, sizeof bad, "%s/bad.pbck", dir);
  pb_err_t err;

  pb_learn_t *src = learner(sets);
  pb_episodes_t e;
  pb_episodes_init(&e);
  iter_t it;
  random_episodes(1, 3, 0, &e);
  iterate(src, &e, 1, &it);
  pb_episodes_clear(&e);
  random_episodes(2, 3, 0, &e);
  iterate(src, &e, 2, &it);
  assert_int_equal(pb_learn_save(src, ck, NULL, 0, &err), 0);
  const size_t window = pb_learn_replay_positions(src);
  assert_true(window > 0);

  pb_ckpt_t *c = pb_ckpt_read(ck, &err);
  assert_non_null(c);
  const uint8_t *rb;
  size_t rl;
  assert_int_equal(pb_ckpt_get(c, "learn.replay", (const void **)&rb, &rl), 0);
  /* u64 magic, u32 actions, u32 iterations, per iteration u64 n, then n x
   * (32 + 4 + 4 * 7 + 2 * 8: the position, V, Q and its two tags) bytes */
  assert_int_equal(rl, 16 + 8 * 2 + window * (32 + 4 + 28 + 16));
  uint8_t *d = malloc(rl + 1);

  /* the target: a learner with its own, different state and window */
  pb_learn_t *dst = learner(sets);
  pb_episodes_clear(&e);
  random_episodes(50, 2, 0, &e);
  iterate(dst, &e, 9, &it);
  assert_true(pb_learn_replay_positions(dst) > 0);
  assert_true(pb_learn_replay_positions(dst) != window);
  snap_t before;
  snap(dst, &before);

  for (int k = 0; k < 7; k++) {
    memcpy(d, rb, rl);
    size_t len = rl;
    const char *what = "";
    switch (k) {
      case 0: len = rl - 1; what = "one byte short"; break;
      case 1: d[rl] = 0; len = rl + 1; what = "one byte long"; break;
      case 2: d[0] ^= 1; what = "bad magic"; break;
      case 3: put_u32(d + 8, 9); what = "9 actions"; break;
      case 4: put_u32(d + 12, 3); what = "3 iterations"; break;
      case 5: put_u32(d + 12, 100000); what = "100000 iterations"; break;
      case 6: put_u64(d + 16, (uint64_t)1 << 60); what = "huge count"; break;
    }
    copy_ckpt(ck, bad, "learn.replay", d, len);
    pb_err_clear(&err);
    int rc = pb_learn_load(dst, bad, NULL, NULL, &err);
    if (rc != PB_ECORRUPT) fail_msg("%s: rc %d (%s)", what, rc, err.msg);
    if (strstr(err.msg, "replay") == NULL)
      fail_msg("%s: message \"%s\" does not name the replay window", what,
               err.msg);
    assert_unchanged(dst, &before, what);
  }
  /* positive control: the intact section through the same copy loads */
  copy_ckpt(ck, bad, "learn.replay", rb, rl);
  assert_int_equal(pb_learn_load(dst, bad, NULL, NULL, &err), 0);
  assert_int_equal(pb_learn_replay_positions(dst), window);
  assert_int_equal(pb_learn_version(dst), 2);
  assert_true(same_nets(dst, src));

  snap_free(&before);
  free(d);
  pb_ckpt_destroy(&c);
  unlink(ck);
  unlink(bad);
  assert_int_equal(rmdir(dir), 0);
  pb_episodes_free(&e);
  pb_learn_destroy(&src);
  pb_learn_destroy(&dst);
}

/* The same for damage inside a network's state section: the file is
 * intact, q.state's own checksum is not. The load must be refused and
 * change nothing (pb_learn_load: "l is unchanged"). */
static void test_state_damaged(void **state) {
  (void)state;
  char dir[256], ck[600], bad[600];
  tp_tmpdir(dir, sizeof dir, "learn-qdamaged");
  snprintf(ck, sizeof ck, "%s/good.pbck", dir);
  snprintf(bad, sizeof bad, "%s/bad.pbck", dir);
  pb_err_t err;
  pb_learn_t *src = learner(NULL), *dst = learner(NULL);
  pb_episodes_t e;
  pb_episodes_init(&e);
  random_episodes(4, 3, 0, &e);
  iter_t it;
  iterate(src, &e, 1, &it);
  assert_int_equal(pb_learn_save(src, ck, NULL, 0, &err), 0);
  snap_t before;
  snap(dst, &before);
  assert_false(same_nets(src, dst));

  pb_ckpt_t *c = pb_ckpt_read(ck, &err);
  const char *names[] = {"q.state", "v.state"};
  for (int k = 0; k < 2; k++) {
    const uint8_t *sb;
    size_t sl;
    assert_int_equal(pb_ckpt_get(c, names[k], (const void **)&sb, &sl), 0);
    uint8_t *d = malloc(sl);
    memcpy(d, sb, sl);
    d[100] ^= 0x40; /* a weight: the buffer's checksum no longer matches */
    copy_ckpt(ck, bad, names[k], d, sl);
    free(d);
    pb_err_clear(&err);
    int rc = pb_learn_load(dst, bad, NULL, NULL, &err);
    if (rc != PB_ECORRUPT)
      fail_msg("damaged %s: rc %d (%s)", names[k], rc, err.msg);
    assert_unchanged(dst, &before, names[k]);
  }
  snap_free(&before);
  pb_ckpt_destroy(&c);
  unlink(ck);
  unlink(bad);
  assert_int_equal(rmdir(dir), 0);
  pb_episodes_free(&e);
  pb_learn_destroy(&src);
  pb_learn_destroy(&dst);
}

/* ------------------------------------- V targets mixed with search values */

/* The window keeps each position with the targets it was trained on; read
 * back from a checkpoint's learn.replay section they are exactly: the
 * position, V target (1 - m) * outcome + m * (best legal Q target), and
 * the Q row of its distinct position. */
static float get_f32(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)p[i] << (8 * i);
  return x;
}

static void test_window_targets_exact(void **state) {
  (void)state;
  const char *mixes[] = {"0", "0.5", "1"};
  const double m[] = {0.0, 0.5, 1.0};
  char dir[256], ck[600];
  tp_tmpdir(dir, sizeof dir, "learn-targets");
  snprintf(ck, sizeof ck, "%s/c.pbck", dir);
  pb_episodes_t e;
  pb_episodes_init(&e);
  const size_t n = random_episodes(90, 4, 0, &e);
  int decided = 0;
  for (size_t k = 0; k < e.n_eps; k++) decided += e.reward[k] != 0;
  assert_true(decided > 0); /* outcomes that are not all 0 */
  const int A = G->num_actions;
  for (int i = 0; i < 3; i++) {
    char mix[64];
    snprintf(mix, sizeof mix, "train.v_search_mix=%s", mixes[i]);
    const char *sets[] = {mix, "train.replay_iterations=2", NULL};
    pb_learn_t *l = learner(sets);
    pb_err_t err;
    iter_t it;
    iterate(l, &e, 77, &it);
    assert_int_equal(pb_learn_replay_positions(l), n);
    assert_int_equal(pb_learn_save(l, ck, NULL, 0, &err), 0);
    pb_ckpt_t *c = pb_ckpt_read(ck, &err);
    assert_non_null(c);
    const uint8_t *b;
    size_t len;
    assert_int_equal(pb_ckpt_get(c, "learn.replay", (const void **)&b, &len),
                     0);
    assert_int_equal(len, 16 + 8 + n * (32 + 4 + 4 * (size_t)A + 16));
    assert_memory_equal(b, "PBREPLV2", 8);
    assert_int_equal(get_u64(b + 16), n);
    const uint8_t *st = b + 24, *vt = st + 32 * n, *qt = vt + 4 * n;
    size_t pos = 0, blended = 0;
    for (size_t k = 0; k < e.n_eps; k++)
      for (uint32_t t = 0; t < e.len[k]; t++, pos++) {
        const pb_state_t *s = &e.states[e.start[k] + t];
        for (int w = 0; w < 4; w++)
          assert_true(get_u64(st + 32 * pos + 8 * w) == s->w[w]);
        float row[PB_MAX_ACTIONS];
        made_up_row(s, 77, row);
        for (int a = 0; a < A; a++)
          assert_true(get_f32(qt + 4 * (pos * A + a)) == row[a]);
        uint8_t acts[PB_MAX_ACTIONS];
        int na = G->legal(s, acts);
        float best = -INFINITY;
        for (int j = 0; j < na; j++)
          if (row[acts[j]] > best) best = row[acts[j]];
        float outcome = pb_episodes_target(&e, k, t);
        float want = (float)((1.0 - m[i]) * outcome + m[i] * best);
        float got = get_f32(vt + 4 * pos);
        if (got != want)
          fail_msg("mix %s position %zu: V target %.9g, want %.9g (outcome "
                   "%g, search %.9g)",
                   mixes[i], pos, (double)got, (double)want, (double)outcome,
                   (double)best);
        blended += got != outcome;
      }
    assert_int_equal(pos, n);
    if (i == 0) assert_int_equal(blended, 0);
    if (i > 0) assert_true(blended > n / 2);
    pb_ckpt_destroy(&c);
    pb_learn_destroy(&l);
  }
  unlink(ck);
  assert_int_equal(rmdir(dir), 0);
  pb_episodes_free(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replay_window),
      cmocka_unit_test(test_replay_damaged),
      cmocka_unit_test(test_replay_origin),
      cmocka_unit_test(test_state_damaged),
      cmocka_unit_test(test_window_targets_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
