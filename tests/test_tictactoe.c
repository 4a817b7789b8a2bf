/* test_tictactoe.c - Tic-Tac-Toe checked exhaustively: every reachable
 * position against a plain-array reference, the wire form against the exact
 * set of reachable positions, the minimax value of the game, and the
 * left-right mirror over the whole game tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "game.h"

static const pb_game_t *G = &pb_game_tictactoe;

/* ------------------------------------------------ plain-array reference */

typedef struct {
  int cell[9]; /* reading order; 0 empty, 1 X, 2 O */
  int ply;
  int winner;
} ref_t;

static int ref_line(const ref_t *r, int who) {
  static const int L[8][3] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6},
                              {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}};
  for (int i = 0; i < 8; i++)
    if (r->cell[L[i][0]] == who && r->cell[L[i][1]] == who &&
        r->cell[L[i][2]] == who)
      return 1;
  return 0;
}

/* Every reachable position, [all stones * 512 + mover's stones] -> 1,
 * found by the reference alone (in setup). */
static uint8_t *reachable;

static void ref_walk(const ref_t *r) {
  int me = 1 + (r->ply & 1);
  uint32_t mine = 0, all = 0;
  for (int i = 0; i < 9; i++) {
    if (r->cell[i]) all |= 1u << i;
    if (r->cell[i] == me) mine |= 1u << i;
  }
  reachable[all * 512 + mine] = 1;
  if (r->winner || r->ply == 9) return;
  for (int i = 0; i < 9; i++)
    if (!r->cell[i]) {
      ref_t c = *r;
      c.cell[i] = me;
      c.ply++;
      if (ref_line(&c, me)) c.winner = me;
      ref_walk(&c);
    }
}

static uint64_t nodes;

/* Walks the whole game tree in both engines at once. */
static void walk(const pb_state_t *s, const ref_t *r) {
  nodes++;
  assert_true(reachable[s->w[1] * 512 + s->w[0]]);

  uint8_t acts[PB_MAX_ACTIONS];
  int n = G->legal(s, acts), k = 0;
  uint8_t want[9];
  if (!r->winner)
    for (int i = 0; i < 9; i++)
      if (!r->cell[i]) want[k++] = (uint8_t)i;
  assert_int_equal(n, k);
  assert_memory_equal(acts, want, (size_t)k);
  assert_int_equal(G->ply(s), r->ply);
  float tr = 5;
  assert_int_equal(G->terminal(s, &tr), r->winner || r->ply == 9);
  if (r->winner) assert_true(tr == -1.0f);

  float planes[18];
  G->encode(s, planes);
  int me = 1 + (r->ply & 1);
  char buf[32], exp[32];
  G->render(s, buf, sizeof buf);
  for (int i = 0; i < 9; i++) {
    assert_true(planes[i] == (r->cell[i] == me ? 1.0f : 0.0f));
    assert_true(planes[9 + i] ==
                (r->cell[i] && r->cell[i] != me ? 1.0f : 0.0f));
    exp[2 * i] = ".XO"[r->cell[i]];
    exp[2 * i + 1] = i % 3 == 2 ? '\n' : ' ';
  }
  exp[18] = '\0';
  assert_string_equal(buf, exp);

  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    ref_t rc = *r;
    int done = 0;
    float rw = G->step(&c, acts[i], &done);
    rc.cell[acts[i]] = me;
    rc.ply++;
    if (ref_line(&rc, me)) rc.winner = me;
    assert_int_equal(done, rc.winner || rc.ply == 9);
    assert_true(rw == (rc.winner ? 1.0f : 0.0f));
    walk(&c, &rc);
  }
}

static int setup(void **state) {
  (void)state;
  reachable = calloc(512 * 512, 1);
  if (reachable == NULL) return -1;
  ref_t r;
  memset(&r, 0, sizeof r);
  ref_walk(&r);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free(reachable);
  reachable = NULL;
  return 0;
}

/* ---------------------------------------------------------------- tests */

static void test_tree_agrees_with_reference(void **state) {
  (void)state;
  pb_state_t s;
  ref_t r;
  G->reset(&s);
  memset(&r, 0, sizeof r);
  nodes = 0;
  walk(&s, &r);
  /* The known sizes of the game tree and of the set of positions. */
  assert_int_equal(nodes, 549946);
  int distinct = 0;
  for (int i = 0; i < 512 * 512; i++) distinct += reachable[i];
  assert_int_equal(distinct, 5478);
}

static void test_unpack_accepts_exactly_reachable(void **state) {
  (void)state;
  uint64_t accepted = 0;
  for (uint32_t mask = 0; mask < 512; mask++)
    for (uint32_t me = 0; me < 512; me++) {
      uint8_t b[4] = {(uint8_t)me, (uint8_t)(me >> 8), (uint8_t)mask,
                      (uint8_t)(mask >> 8)};
      pb_state_t s;
      pb_err_t err;
      pb_err_clear(&err);
      int rc = G->unpack(&s, b, 4, &err);
      int want = reachable[mask * 512 + me];
      if ((rc == 0) != want)
        fail_msg("me=%03x mask=%03x: unpack %d (%s), reachable %d", me, mask,
                 rc, err.msg, want);
      if (rc == 0) {
        accepted++;
        uint8_t back[4];
        G->pack(&s, back);
        assert_memory_equal(back, b, 4);
        assert_int_equal(s.w[2] | s.w[3], 0);
      } else {
        assert_int_equal(rc, PB_ECORRUPT);
        assert_true(err.msg[0] != '\0');
      }
    }
  assert_int_equal(accepted, 5478);

  uint8_t b[5] = {0, 0, 0, 0, 0};
  pb_state_t s;
  pb_err_t err;
  assert_int_equal(G->unpack(&s, b, 3, &err), PB_ECORRUPT);
  assert_int_equal(G->unpack(&s, b, 5, &err), PB_ECORRUPT);
  b[3] = 0x02; /* bit 9 of the mask */
  assert_int_equal(G->unpack(&s, b, 4, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "outside"));
}

/* Exact minimax, from the side to move: +1 win, 0 draw, -1 loss. */
static int minimax(const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = G->legal(s, acts), best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = G->step(&c, acts[i], &done);
    int v = done ? (int)r : -minimax(&c);
    if (v > best) best = v;
  }
  return best;
}

static void test_minimax_values(void **state) {
  (void)state;
  pb_state_t s;
  pb_err_t err;
  G->reset(&s);
  assert_int_equal(minimax(&s), 0); /* a draw with best play */
  /* X in a corner, O on an edge next to it: X wins. */
  assert_int_equal(G->parse(&s, "12", &err), 0);
  assert_int_equal(minimax(&s), 1);
  /* X center, O corner: still a draw. */
  assert_int_equal(G->parse(&s, "51", &err), 0);
  assert_int_equal(minimax(&s), 0);
}

static void test_parse_and_names(void **state) {
  (void)state;
  pb_state_t s, before;
  pb_err_t err;
  assert_int_equal(G->parse(&s, "159", &err), 0);
  assert_int_equal(G->ply(&s), 3);
  char buf[64];
  G->render(&s, buf, sizeof buf);
  assert_string_equal(buf, "X . .\n. O .\n. . X\n");
  before = s;
  assert_int_equal(G->parse(&s, "150", &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "index 2"));
  assert_memory_equal(&s, &before, sizeof s);
  assert_int_equal(G->parse(&s, "155", &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "index 2"));
  assert_int_equal(G->parse(&s, "1425367", &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "end of the game"));
  assert_int_equal(G->parse(&s, "142536", &err), PB_EILLEGAL);
  assert_int_equal(G->parse(&s, "14253", &err), 0);
  float r;
  assert_int_equal(G->terminal(&s, &r), 1);
  assert_true(r == -1.0f);
  assert_int_equal(G->action_name(8, buf, sizeof buf), 1);
  assert_string_equal(buf, "9");
  assert_true(G->action_name(9, buf, sizeof buf) < 0);
}

static void test_hash_distinct(void **state) {
  (void)state;
  /* All 5478 reachable positions hash to distinct values. */
  uint64_t *h = malloc(5478 * sizeof *h);
  assert_non_null(h);
  int n = 0;
  for (uint32_t mask = 0; mask < 512; mask++)
    for (uint32_t me = 0; me < 512; me++)
      if (reachable[mask * 512 + me]) {
        pb_state_t s = {{me, mask, 0, 0}};
        h[n++] = G->hash(&s);
      }
  assert_int_equal(n, 5478);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) assert_true(h[i] != h[j]);
  free(h);
}

/* Walks the whole game tree with a twin played with mirrored actions: at
 * every node the twin is the mirror of the position, and the two agree on
 * legal moves (through mirror_action), rewards, the end and the planes
 * (columns reversed). */
static uint64_t mirror_nodes, mirror_fixed;

static void mirror_walk(const pb_state_t *s, const pb_state_t *t) {
  mirror_nodes++;
  pb_state_t m, mm;
  G->mirror(s, &m);
  assert_memory_equal(&m, t, sizeof m);
  G->mirror(&m, &mm);
  assert_memory_equal(&mm, s, sizeof mm);
  mirror_fixed += memcmp(s, t, sizeof *s) == 0;
  /* the image of a reachable position is reachable */
  assert_true(reachable[t->w[1] * 512 + t->w[0]]);

  uint8_t as[PB_MAX_ACTIONS], at[PB_MAX_ACTIONS];
  int ns = G->legal(s, as), nt = G->legal(t, at);
  assert_int_equal(ns, nt);
  int seen[9] = {0};
  for (int k = 0; k < nt; k++) seen[at[k]] = 1;
  for (int k = 0; k < ns; k++) assert_true(seen[G->mirror_action(as[k])]);
  float rs = 5, rt = 6;
  assert_int_equal(G->terminal(s, &rs), G->terminal(t, &rt));
  assert_true(rs == rt);
  float ps[18], pt[18];
  G->encode(s, ps);
  G->encode(t, pt);
  for (int p = 0; p < 2; p++)
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 3; c++)
        assert_true(pt[p * 9 + r * 3 + c] == ps[p * 9 + r * 3 + 2 - c]);

  for (int k = 0; k < ns; k++) {
    pb_state_t cs = *s, ct = *t;
    int ds = 0, dt = 0;
    float ws = G->step(&cs, as[k], &ds);
    float wt = G->step(&ct, G->mirror_action(as[k]), &dt);
    assert_int_equal(ds, dt);
    assert_true(ws == wt);
    mirror_walk(&cs, &ct);
  }
}

static void test_mirror(void **state) {
  (void)state;
  assert_non_null(G->mirror);
  assert_non_null(G->mirror_action);
  /* cells 0 1 2 / 3 4 5 / 6 7 8: columns swap, the middle one stays */
  static const int want[9] = {2, 1, 0, 5, 4, 3, 8, 7, 6};
  for (int a = 0; a < 9; a++) {
    assert_int_equal(G->mirror_action(a), want[a]);
    assert_int_equal(G->mirror_action(G->mirror_action(a)), a);
  }
  pb_state_t s, m, t;
  pb_err_t err;
  G->reset(&s);
  memset(&m, 0xAB, sizeof m);
  G->mirror(&s, &m);
  assert_memory_equal(&m, &s, sizeof s);
  /* "159" (X top left, O centre, X bottom right) <-> "357" */
  assert_int_equal(G->parse(&s, "159", &err), 0);
  assert_int_equal(G->parse(&t, "357", &err), 0);
  G->mirror(&s, &m);
  assert_memory_equal(&m, &t, sizeof m);
  char buf[32];
  G->render(&m, buf, sizeof buf);
  assert_string_equal(buf, ". . X\n. O .\nX . .\n");
  /* the mirror keeps the value */
  assert_int_equal(G->parse(&s, "12", &err), 0); /* X 1, O 2 */
  G->mirror(&s, &m);
  assert_int_equal(minimax(&m), minimax(&s));

  G->reset(&s);
  mirror_nodes = mirror_fixed = 0;
  mirror_walk(&s, &s);
  assert_int_equal(mirror_nodes, 549946);
  /* Some nodes are their own mirror (the start, "5", ...), most are not. */
  assert_true(mirror_fixed > 1 && mirror_fixed < mirror_nodes / 4);
  print_message("%llu of %llu tree nodes are their own mirror\n",
                (unsigned long long)mirror_fixed,
                (unsigned long long)mirror_nodes);
}

/* Every reachable position and its mirror have the same minimax value. */
static void test_mirror_keeps_values(void **state) {
  (void)state;
  int n = 0;
  for (uint32_t mask = 0; mask < 512; mask++)
    for (uint32_t me = 0; me < 512; me++)
      if (reachable[mask * 512 + me]) {
        pb_state_t s = {{me, mask, 0, 0}}, m;
        G->mirror(&s, &m);
        assert_int_equal(m.w[2] | m.w[3], 0);
        assert_int_equal(minimax(&m), minimax(&s));
        n++;
      }
  assert_int_equal(n, 5478);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tree_agrees_with_reference),
      cmocka_unit_test(test_unpack_accepts_exactly_reachable),
      cmocka_unit_test(test_minimax_values),
      cmocka_unit_test(test_parse_and_names),
      cmocka_unit_test(test_hash_distinct),
      cmocka_unit_test(test_mirror),
      cmocka_unit_test(test_mirror_keeps_values),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
