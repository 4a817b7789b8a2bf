/* test_connect4.c - the Connect Four bitboards against a plain-array
 * reference, the wire form's validation, and the left-right mirror. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "game.h"
#include "rng.h"

static const pb_game_t *G = &pb_game_connect4;

/* ------------------------------------------------ plain-array reference */

typedef struct {
  int cell[6][7]; /* [row][col], row 0 at the bottom; 0 empty, 1 X, 2 O */
  int height[7];
  int ply;
  int winner; /* 0 none, 1 X, 2 O */
} ref_t;

static void ref_reset(ref_t *r) {
  memset(r, 0, sizeof *r);
}

static int ref_four_at(const ref_t *r, int row, int col) {
  static const int d[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};
  int who = r->cell[row][col];
  for (int k = 0; k < 4; k++) {
    int run = 1;
    for (int sgn = -1; sgn <= 1; sgn += 2)
      for (int i = 1; i < 4; i++) {
        int rr = row + sgn * i * d[k][0], cc = col + sgn * i * d[k][1];
        if (rr < 0 || rr >= 6 || cc < 0 || cc >= 7 || r->cell[rr][cc] != who)
          break;
        run++;
      }
    if (run >= 4) return 1;
  }
  return 0;
}

static int ref_legal(const ref_t *r, uint8_t *acts) {
  if (r->winner) return 0;
  int n = 0;
  for (int c = 0; c < 7; c++)
    if (r->height[c] < 6) acts[n++] = (uint8_t)c;
  return n;
}

/* Returns the mover's reward; sets *done. */
static int ref_step(ref_t *r, int col, int *done) {
  int who = 1 + (r->ply & 1), row = r->height[col]++;
  r->cell[row][col] = who;
  r->ply++;
  if (ref_four_at(r, row, col)) {
    r->winner = who;
    *done = 1;
    return 1;
  }
  *done = r->ply == 42;
  return 0;
}

/* ---------------------------------------------------------------- tests */

static void test_shape(void **state) {
  (void)state;
  assert_string_equal(G->name, "connect4");
  assert_int_equal(G->id, PB_GAME_CONNECT4);
  assert_int_equal(G->num_actions, 7);
  assert_int_equal(G->planes * G->height * G->width, 84);
  assert_int_equal(G->state_bytes, 16);
  assert_int_equal(G->max_turns, 42);
  pb_state_t s;
  memset(&s, 0xAB, sizeof s);
  G->reset(&s);
  pb_state_t zero;
  memset(&zero, 0, sizeof zero);
  assert_memory_equal(&s, &zero, sizeof s);
  uint8_t acts[PB_MAX_ACTIONS];
  assert_int_equal(G->legal(&s, acts), 7);
  for (int i = 0; i < 7; i++) assert_int_equal(acts[i], i);
}

/* Random games: every move, both engines agree on the legal moves, the
 * rewards, the end, the planes and the rendering; the wire form and the
 * hash survive a round trip. */
static void test_against_reference(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 2024, 0);
  int wins = 0, draws = 0;
  for (int game = 0; game < 3000; game++) {
    ref_t r;
    pb_state_t s;
    ref_reset(&r);
    G->reset(&s);
    for (;;) {
      uint8_t a1[PB_MAX_ACTIONS], a2[PB_MAX_ACTIONS];
      int n1 = G->legal(&s, a1), n2 = ref_legal(&r, a2);
      assert_int_equal(n1, n2);
      assert_memory_equal(a1, a2, (size_t)n1);
      assert_int_equal(G->ply(&s), r.ply);

      float term_r = 5.0f;
      int term = G->terminal(&s, &term_r);
      assert_int_equal(term, r.winner != 0 || r.ply == 42);
      if (term) assert_true(term_r == (r.winner ? -1.0f : 0.0f));

      float planes[84];
      G->encode(&s, planes);
      int me = 1 + (r.ply & 1);
      for (int row = 0; row < 6; row++)
        for (int c = 0; c < 7; c++) {
          int v = r.cell[row][c];
          assert_true(planes[row * 7 + c] == (v == me ? 1.0f : 0.0f));
          assert_true(planes[42 + row * 7 + c] == (v && v != me ? 1.0f : 0.0f));
        }

      char buf[128], want[128];
      G->render(&s, buf, sizeof buf);
      size_t k = 0;
      for (int row = 5; row >= 0; row--)
        for (int c = 0; c < 7; c++) {
          want[k++] = ".XO"[r.cell[row][c]];
          want[k++] = c == 6 ? '\n' : ' ';
        }
      strcpy(want + k, "1 2 3 4 5 6 7\n");
      assert_string_equal(buf, want);

      uint8_t wire[16];
      pb_state_t back;
      pb_err_t err;
      G->pack(&s, wire);
      assert_int_equal(G->unpack(&back, wire, sizeof wire, &err), 0);
      assert_memory_equal(&back, &s, sizeof s);
      assert_true(G->hash(&back) == G->hash(&s));

      if (n1 == 0) break;
      int a = a1[pb_rng_below(&rng, (uint32_t)n1)];
      int d1 = 0, d2 = 0;
      float rw = G->step(&s, a, &d1);
      int rr = ref_step(&r, a, &d2);
      assert_int_equal(d1, d2);
      assert_true(rw == (float)rr);
      assert_int_equal(s.w[2] | s.w[3], 0);
    }
    if (r.winner)
      wins++;
    else
      draws++;
  }
  /* Both ends of a game are exercised. */
  assert_true(wins > 2000);
  assert_true(draws > 0);
}

static void test_wins_each_direction(void **state) {
  (void)state;
  /* Each string ends with X completing four; the last move must say so. */
  const char *games[] = {
      "1212121",     /* vertical, column 1 */
      "1122334",     /* horizontal, bottom row */
      "12234334744", /* diagonal / */
      "76654554144", /* diagonal \ */
      "4455667",     /* horizontal to the right edge */
  };
  for (size_t i = 0; i < sizeof games / sizeof games[0]; i++) {
    pb_state_t s;
    pb_err_t err;
    size_t n = strlen(games[i]);
    char prefix[64];
    memcpy(prefix, games[i], n - 1);
    prefix[n - 1] = '\0';
    assert_int_equal(G->parse(&s, prefix, &err), 0);
    float r;
    assert_int_equal(G->terminal(&s, &r), 0);
    int done = 0;
    assert_true(G->step(&s, games[i][n - 1] - '1', &done) == 1.0f);
    assert_int_equal(done, 1);
    assert_int_equal(G->terminal(&s, &r), 1);
    assert_true(r == -1.0f);
    uint8_t acts[PB_MAX_ACTIONS];
    assert_int_equal(G->legal(&s, acts), 0);
  }
  /* Three in a row is not a win, and stones do not wrap between columns:
   * X at the top of column 1 and the bottom of column 2 etc. */
  pb_state_t s;
  pb_err_t err;
  assert_int_equal(G->parse(&s, "112233", &err), 0);
  float r;
  assert_int_equal(G->terminal(&s, &r), 0);
}

static void test_full_board_draw(void **state) {
  (void)state;
  /* The first drawn game of a fixed random sequence. */
  pb_state_t s;
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  for (int game = 0; game < 100000; game++) {
    G->reset(&s);
    int done = 0;
    float rw = 0;
    while (!done) {
      uint8_t acts[PB_MAX_ACTIONS];
      int n = G->legal(&s, acts);
      rw = G->step(&s, acts[pb_rng_below(&rng, (uint32_t)n)], &done);
    }
    if (rw == 0.0f) {
      assert_int_equal(G->ply(&s), 42);
      float r = 5;
      assert_int_equal(G->terminal(&s, &r), 1);
      assert_true(r == 0.0f);
      uint8_t acts[PB_MAX_ACTIONS];
      assert_int_equal(G->legal(&s, acts), 0);
      return;
    }
  }
  fail_msg("no drawn game found");
}

static void test_parse_errors(void **state) {
  (void)state;
  pb_state_t s, before;
  pb_err_t err;
  assert_int_equal(G->parse(&s, "", &err), 0);
  assert_int_equal(G->ply(&s), 0);
  assert_int_equal(G->parse(&s, "4453", &err), 0);
  assert_int_equal(G->ply(&s), 4);
  before = s;

  assert_int_equal(G->parse(&s, "4483", &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "index 2"));
  assert_memory_equal(&s, &before, sizeof s); /* unchanged on error */
  assert_int_equal(G->parse(&s, "40", &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "index 1"));
  assert_int_equal(G->parse(&s, "4 4", &err), PB_EINVAL);
  assert_int_equal(G->parse(&s, "4444444", &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "full"));
  assert_non_null(strstr(err.msg, "index 6"));
  assert_int_equal(G->parse(&s, "12121213", &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "index 7"));
  assert_non_null(strstr(err.msg, "end of the game"));
  assert_int_equal(G->parse(&s, NULL, &err), PB_EINVAL);

  char name[8];
  assert_int_equal(G->action_name(3, name, sizeof name), 1);
  assert_string_equal(name, "4");
  assert_true(G->action_name(7, name, sizeof name) < 0);
  assert_true(G->action_name(-1, name, sizeof name) < 0);
}

static void pack2(uint64_t me, uint64_t mask, uint8_t *out) {
  for (int i = 0; i < 8; i++) {
    out[i] = (uint8_t)(me >> (8 * i));
    out[8 + i] = (uint8_t)(mask >> (8 * i));
  }
}

#define COL(c, bits) ((uint64_t)(bits) << (7 * (c)))

static void expect_reject(uint64_t me, uint64_t mask, const char *what) {
  uint8_t b[16];
  pb_state_t s;
  pb_err_t err;
  pb_err_clear(&err);
  pack2(me, mask, b);
  int rc = G->unpack(&s, b, sizeof b, &err);
  if (rc != PB_ECORRUPT) fail_msg("expected rejection (%s), got %d", what, rc);
  if (strstr(err.msg, what) == NULL)
    fail_msg("message \"%s\" does not mention \"%s\"", err.msg, what);
}

static void test_unpack_rejects(void **state) {
  (void)state;
  uint8_t b[17] = {0};
  pb_state_t s;
  pb_err_t err;
  assert_int_equal(G->unpack(&s, b, 16, &err), 0); /* the empty board */
  assert_int_equal(G->unpack(&s, b, 15, &err), PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "15 bytes"));
  assert_int_equal(G->unpack(&s, b, 17, &err), PB_ECORRUPT);
  assert_int_equal(G->unpack(&s, NULL, 16, &err), PB_ECORRUPT);

  /* The sentinel row, and bits past the seventh column. */
  expect_reject(0, COL(0, 0x7F), "outside");
  expect_reject(0, 1ULL << 50, "outside");
  expect_reject(1ULL << 63, 1ULL << 63, "outside");
  /* Mover stones where there is no stone. */
  expect_reject(COL(1, 1), COL(0, 1) | COL(2, 1), "mask");
  /* A stone floating above an empty cell. */
  expect_reject(0, COL(3, 0x2), "gap");
  expect_reject(COL(3, 0x1), COL(3, 0x5) | COL(2, 1), "gap");
  /* Stone counts: one stone on the board belongs to X, who has moved. */
  expect_reject(COL(0, 1), COL(0, 1), "stones");
  expect_reject(COL(0, 3) | COL(2, 1), COL(0, 3) | COL(1, 3) | COL(2, 1),
                "stones");
  /* Both have four; the mover has four; an opponent win that no single
   * last stone can have completed (two separate fours). */
  expect_reject(COL(0, 0xF), COL(0, 0xF) | COL(1, 0xF), "both");
  expect_reject(COL(0, 0xF), COL(0, 0xF) | COL(1, 0x7) | COL(2, 1),
                "side to move");
  uint64_t opp = COL(0, 0xF) | COL(1, 0xF);
  uint64_t me = COL(2, 0x7) | COL(3, 0x7) | COL(4, 0x3);
  expect_reject(me, me | opp, "unreachable");

  /* A legal finished game survives the round trip. */
  assert_int_equal(G->parse(&s, "1212121", &err), 0);
  pack2(s.w[0], s.w[1], b);
  pb_state_t t;
  assert_int_equal(G->unpack(&t, b, 16, &err), 0);
  assert_memory_equal(&s, &t, sizeof s);
  float r;
  assert_int_equal(G->terminal(&t, &r), 1);
  assert_true(r == -1.0f);
}

/* The wire form is little-endian and exactly the two words. */
static void test_pack_layout(void **state) {
  (void)state;
  pb_state_t s;
  pb_err_t err;
  assert_int_equal(G->parse(&s, "4", &err), 0);
  uint8_t b[16];
  G->pack(&s, b);
  /* X's stone at column 4, row 1 = bit 21; O to move has none. */
  static const uint8_t want[16] = {0, 0, 0,    0, 0, 0, 0, 0,
                                   0, 0, 0x20, 0, 0, 0, 0, 0};
  assert_memory_equal(b, want, 16);
}

static void test_hash_spreads(void **state) {
  (void)state;
  /* Distinct positions of a random walk get distinct hashes, and the two
   * words play different roles (swapping them changes the hash). */
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  enum { N = 4000 };
  static uint64_t h[N];
  static pb_state_t st[N];
  int n = 0;
  while (n < N) {
    pb_state_t s;
    G->reset(&s);
    int done = 0;
    while (!done && n < N) {
      uint8_t acts[PB_MAX_ACTIONS];
      int k = G->legal(&s, acts);
      G->step(&s, acts[pb_rng_below(&rng, (uint32_t)k)], &done);
      st[n] = s;
      h[n++] = G->hash(&s);
    }
  }
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++)
      if (h[i] == h[j]) assert_memory_equal(&st[i], &st[j], sizeof st[i]);
  pb_state_t a = {{1, 3, 0, 0}}, b = {{3, 1, 0, 0}};
  assert_true(G->hash(&a) != G->hash(&b));
}

static void test_render_small_buffer(void **state) {
  (void)state;
  pb_state_t s;
  G->reset(&s);
  char buf[10];
  int n = G->render(&s, buf, sizeof buf);
  assert_int_equal(n, 9);
  assert_int_equal((int)strlen(buf), 9);
  assert_int_equal(G->render(&s, buf, 0), 0);
}

/* The left-right mirror: an involution on positions and on actions that
 * commutes with play. Random games are played twice, once as drawn and
 * once with every action mirrored; at every ply the second game's position
 * is the mirror of the first's, and both agree on everything the rules
 * say (legal moves through mirror_action, rewards, the end, the planes
 * with their columns reversed). */
static void test_mirror(void **state) {
  (void)state;
  assert_non_null(G->mirror);
  assert_non_null(G->mirror_action);
  for (int a = 0; a < 7; a++) {
    assert_int_equal(G->mirror_action(a), 6 - a);
    assert_int_equal(G->mirror_action(G->mirror_action(a)), a);
  }
  pb_state_t s, m, mm;
  G->reset(&s);
  memset(&m, 0xAB, sizeof m);
  G->mirror(&s, &m);
  assert_memory_equal(&m, &s, sizeof s);

  /* by hand: X in column 1 (bit 0) is X in column 7 (bit 42) */
  pb_err_t err;
  assert_int_equal(G->parse(&s, "1", &err), 0);
  G->mirror(&s, &m);
  assert_true(m.w[0] == 0 && m.w[1] == 1ULL << 42);
  assert_int_equal(G->parse(&mm, "7", &err), 0);
  assert_memory_equal(&m, &mm, sizeof m);
  /* a move string and its mirror ("4453" <-> "4435") */
  assert_int_equal(G->parse(&s, "44531122", &err), 0);
  assert_int_equal(G->parse(&mm, "44357766", &err), 0);
  G->mirror(&s, &m);
  assert_memory_equal(&m, &mm, sizeof m);
  assert_memory_not_equal(&m, &s, sizeof m);

  pb_rng_t rng;
  pb_rng_seed(&rng, 77, 0);
  int wins = 0, asymmetric = 0;
  for (int game = 0; game < 1000; game++) {
    pb_state_t a, b; /* b is played with the mirrored actions */
    G->reset(&a);
    G->reset(&b);
    for (;;) {
      G->mirror(&a, &m);
      assert_memory_equal(&m, &b, sizeof m);
      G->mirror(&m, &mm);
      assert_memory_equal(&mm, &a, sizeof mm);
      asymmetric += memcmp(&a, &b, sizeof a) != 0;
      assert_int_equal(G->ply(&b), G->ply(&a));

      uint8_t la[PB_MAX_ACTIONS], lb[PB_MAX_ACTIONS];
      int na = G->legal(&a, la), nb = G->legal(&b, lb);
      assert_int_equal(na, nb);
      /* la mapped and reversed is lb (both in increasing order) */
      for (int k = 0; k < na; k++)
        assert_int_equal(lb[k], G->mirror_action(la[na - 1 - k]));
      float ra = 5, rb = 6;
      assert_int_equal(G->terminal(&a, &ra), G->terminal(&b, &rb));
      if (na == 0) assert_true(ra == rb);

      float pa[84], pbm[84];
      G->encode(&a, pa);
      G->encode(&b, pbm);
      for (int p = 0; p < 2; p++)
        for (int r = 0; r < 6; r++)
          for (int c = 0; c < 7; c++)
            assert_true(pbm[p * 42 + r * 7 + c] == pa[p * 42 + r * 7 + 6 - c]);

      /* the image is a legal position: the wire form takes it */
      uint8_t wire[16];
      pb_state_t back;
      G->pack(&b, wire);
      assert_int_equal(G->unpack(&back, wire, sizeof wire, &err), 0);
      assert_memory_equal(&back, &b, sizeof b);

      if (na == 0) {
        wins += ra != 0;
        break;
      }
      int act = la[pb_rng_below(&rng, (uint32_t)na)];
      int da = 0, db = 0;
      float wa = G->step(&a, act, &da);
      float wb = G->step(&b, G->mirror_action(act), &db);
      assert_int_equal(da, db);
      assert_true(wa == wb);
      assert_int_equal(b.w[2] | b.w[3], 0);
    }
  }
  assert_true(wins > 500);
  assert_true(asymmetric > 10000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape),
      cmocka_unit_test(test_against_reference),
      cmocka_unit_test(test_wins_each_direction),
      cmocka_unit_test(test_full_board_draw),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_unpack_rejects),
      cmocka_unit_test(test_pack_layout),
      cmocka_unit_test(test_hash_spreads),
      cmocka_unit_test(test_render_small_buffer),
      cmocka_unit_test(test_mirror),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
