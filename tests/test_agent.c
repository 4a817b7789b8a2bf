/* test_agent.c - agent specs, the core (pb_agent_wrap, pb_agent_act), and
 * the baselines' tactics on positions with known answers: random,
 * lookahead, greedy, alphabeta (Connect Four, Tic-Tac-Toe, Othello), uct
 * (every game) and the gtp agent. Network agents: test_agent_net.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "agent_fixtures.h"
#include "game.h"
#include "match.h"
#include "rng.h"

/* How often each action is chosen over `n` seeds. */
static void histogram(const pb_game_t *g, const char *spec, const char *moves,
                      int n, int *count) {
  pb_state_t s = pos(g, moves);
  memset(count, 0, sizeof(int) * PB_MAX_ACTIONS);
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(g, spec, 0, &err);
  assert_non_null(a);
  for (int i = 0; i < n; i++) {
    pb_agent_reseed(a, (uint64_t)i);
    int act = pb_agent_act(a, &s, &err);
    assert_true(act >= 0 && act < g->num_actions);
    count[act]++;
  }
  pb_agent_destroy(&a);
  assert_null(a);
}

static void test_specs(void **state) {
  (void)state;
  pb_err_t err;
  const char *good[] = {"random", "lookahead:1", "lookahead:4", "alphabeta:1",
                        "alphabeta:12"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pb_agent_t *a = pb_agent_new(C4, good[i], 1, &err);
    assert_non_null(a);
    assert_string_equal(pb_agent_name(a), good[i]);
    assert_ptr_equal(pb_agent_game(a), C4);
    pb_agent_destroy(&a);
  }
  const char *bad[] = {"",
                       "rand",
                       "random:1",
                       "lookahead",
                       "lookahead:",
                       "lookahead:0",
                       "lookahead:5",
                       "lookahead:3x",
                       "lookahead:-1",
                       "alphabeta:13",
                       "alphabeta:x",
                       "Random",
                       "lookahead:99999999999999999999",
                       "checkpoint",
                       "checkpoint:",
                       "run",
                       "run:",
                       "run:@3",
                       "run:/tmp@",
                       "run:/tmp@x",
                       "run:/tmp@-1",
                       "run:/tmp@3x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    pb_agent_t *a = pb_agent_new(C4, bad[i], 1, &err);
    if (a != NULL) fail_msg("spec \"%s\" was accepted", bad[i]);
    assert_int_equal(err.code, PB_EINVAL);
    assert_true(err.msg[0] != '\0');
  }
  /* Unknown kinds list the valid ones. */
  assert_null(pb_agent_new(C4, "minimax:3", 1, &err));
  assert_non_null(strstr(err.msg, "lookahead:K"));
  assert_non_null(strstr(err.msg, "alphabeta:D"));
  assert_non_null(strstr(err.msg, "random"));
  assert_null(pb_agent_new(NULL, "random", 1, &err));
  assert_null(pb_agent_new(C4, NULL, 1, &err));
  char kinds[256];
  assert_true(pb_agent_kinds(kinds, sizeof kinds) > 10);
  assert_non_null(strstr(kinds, "random"));
  char tiny[8];
  assert_int_equal(pb_agent_kinds(tiny, sizeof tiny), 7);
  pb_agent_destroy(NULL);
  pb_agent_t *none = NULL;
  pb_agent_destroy(&none);
}

static void test_act_errors(void **state) {
  (void)state;
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(C4, "random", 1, &err);
  assert_non_null(a);
  pb_state_t s = pos(C4, "1212121"); /* X has won */
  assert_int_equal(pb_agent_act(a, &s, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "terminal"));
  assert_int_equal(pb_agent_act(a, NULL, &err), PB_EINVAL);
  assert_int_equal(pb_agent_act(NULL, &s, &err), PB_EINVAL);
  pb_agent_destroy(&a);
}

/* A kind that always answers action 0, legal or not, and counts frees. */
static int freed;
static int zero_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                    int n, pb_err_t *err) {
  (void)impl, (void)s, (void)legal, (void)n, (void)err;
  return 0;
}
static void zero_destroy(void *impl) {
  freed++;
  free(impl);
}
static const pb_agent_vtable_t zero_vt = {zero_act, NULL, zero_destroy, NULL,
                                          NULL};

static void test_wrap(void **state) {
  (void)state;
  pb_err_t err;
  freed = 0;
  pb_agent_t *a = pb_agent_wrap(C4, &zero_vt, malloc(16), "zero", &err);
  assert_non_null(a);
  assert_string_equal(pb_agent_name(a), "zero");
  pb_state_t s = pos(C4, "");
  assert_int_equal(pb_agent_act(a, &s, &err), 0);
  pb_agent_reseed(a, 5); /* no reseed function: nothing happens */
  s = pos(C4, "111111"); /* column 1 is full: 0 is illegal */
  assert_int_equal(pb_agent_act(a, &s, &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "zero"));
  pb_agent_destroy(&a);
  assert_int_equal(freed, 1);
  /* A failed wrap still frees the private state. */
  assert_null(pb_agent_wrap(C4, &zero_vt, malloc(16), NULL, &err));
  assert_int_equal(freed, 2);
}

static void test_random_uniform_and_seeded(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  histogram(C4, "random", "111111", 6000, count);
  assert_int_equal(count[0], 0);
  for (int a = 1; a < 7; a++) assert_true(count[a] > 850 && count[a] < 1150);

  /* Same seed, same moves; reseeding equals a fresh agent. */
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(C4, "random", 42, &err);
  pb_agent_t *b = pb_agent_new(C4, "random", 7, &err);
  pb_state_t s = pos(C4, "");
  int first[20];
  for (int i = 0; i < 20; i++) first[i] = pb_agent_act(a, &s, &err);
  pb_agent_reseed(b, 42);
  int differ = 0;
  for (int i = 0; i < 20; i++) differ += first[i] != pb_agent_act(b, &s, &err);
  assert_int_equal(differ, 0);
  pb_agent_reseed(b, 43);
  for (int i = 0; i < 20; i++) differ += first[i] != pb_agent_act(b, &s, &err);
  assert_true(differ > 5);
  pb_agent_destroy(&a);
  pb_agent_destroy(&b);
}

static void test_lookahead_tactics(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  /* X can win in column 1 (three stacked). */
  for (int k = 1; k <= 4; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    histogram(C4, spec, "121212", 30, count);
    assert_int_equal(count[0], 30);
  }
  /* O threatens column 2 (three stacked); X has no win: lookahead:1 does
   * not care, lookahead:2..4 always block. */
  histogram(C4, "lookahead:1", "123252", 140, count);
  assert_true(count[1] < 40);
  for (int k = 2; k <= 4; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    histogram(C4, spec, "123252", 30, count);
    assert_int_equal(count[1], 30);
  }
  /* X on columns 2 and 3 of the bottom row, O stacked on 6: column 4 makes
   * an open three, a double threat that wins in three plies. Only
   * lookahead:3 and deeper see it; lookahead:2 plays anything. */
  histogram(C4, "lookahead:2", "2636", 140, count);
  assert_true(count[3] < 50);
  histogram(C4, "lookahead:3", "2636", 30, count);
  assert_int_equal(count[3], 30);
  histogram(C4, "lookahead:4", "2636", 30, count);
  assert_int_equal(count[3], 30);
  /* Ties are broken at random: from the empty board every move is "0". */
  histogram(C4, "lookahead:3", "", 700, count);
  for (int a = 0; a < 7; a++) assert_true(count[a] > 60);
}

static void test_alphabeta_tactics(void **state) {
  (void)state;
  int count[PB_MAX_ACTIONS];
  for (int d = 1; d <= 6; d++) {
    char spec[32];
    snprintf(spec, sizeof spec, "alphabeta:%d", d);
    histogram(C4, spec, "121212", 10, count); /* win now */
    assert_int_equal(count[0], 10);
    if (d >= 2) {
      histogram(C4, spec, "123252", 10, count); /* block */
      assert_int_equal(count[1], 10);
    }
    if (d >= 3) {
      histogram(C4, spec, "2636", 10, count); /* double threat */
      assert_int_equal(count[3], 10);
    }
  }
  /* Center first from the empty board (the heuristic prefers it). */
  histogram(C4, "alphabeta:4", "", 10, count);
  assert_int_equal(count[3], 10);
  /* Tic-Tac-Toe: take the win rather than block, block when needed. */
  histogram(T3, "alphabeta:9", "1425", 10, count); /* X: 1,2; O: 4,5 */
  assert_int_equal(count[2], 10);
  histogram(T3, "alphabeta:9", "152", 10, count); /* O must block 3 */
  assert_int_equal(count[2], 10);
  pb_err_t err;
  assert_null(
      pb_agent_new(pb_game_by_id(PB_GAME_TICTACTOE), "alphabeta:0", 1, &err));
}

/* Full-depth alpha-beta plays Tic-Tac-Toe perfectly: it never loses, to
 * random play or to itself, from either side. */
static void test_alphabeta_tictactoe_perfect(void **state) {
  (void)state;
  pb_err_t err;
  pb_agent_t *ab = pb_agent_new(T3, "alphabeta:9", 3, &err);
  pb_agent_t *ab2 = pb_agent_new(T3, "alphabeta:9", 4, &err);
  pb_agent_t *rnd = pb_agent_new(T3, "random", 5, &err);
  assert_non_null(ab);
  assert_non_null(ab2);
  assert_non_null(rnd);
  int ab_wins = 0;
  for (int game = 0; game < 60; game++) {
    pb_agent_t *p[2];
    int ab_side = game % 2;
    p[ab_side] = ab;
    p[1 - ab_side] = game < 40 ? rnd : ab2;
    pb_state_t s;
    T3->reset(&s);
    int done = 0, ply = 0;
    float r = 0;
    while (!done) {
      int a = pb_agent_act(p[ply % 2], &s, &err);
      assert_true(a >= 0);
      r = T3->step(&s, a, &done);
      ply++;
    }
    int mover = (ply - 1) % 2;
    if (r > 0) {
      assert_int_equal(mover, ab_side); /* only alphabeta ever wins */
      ab_wins++;
    }
    if (game >= 40) assert_true(r == 0.0f); /* perfect vs perfect: draw */
  }
  assert_true(ab_wins > 25);
  pb_agent_destroy(&ab);
  pb_agent_destroy(&ab2);
  pb_agent_destroy(&rnd);
}

/* Plain depth-k negamax over outcomes, no pruning: the reference for
 * lookahead:k. */
static int plain_negamax(const pb_game_t *g, const pb_state_t *s, int k) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts), best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, acts[i], &done);
    int v = done ? (int)r : k > 1 ? -plain_negamax(g, &c, k - 1) : 0;
    if (v > best) best = v;
  }
  return best;
}

/* On random positions, lookahead:k only plays moves of best depth-k value
 * (as plain negamax finds them), and does vary among them. */
static void test_lookahead_matches_plain_negamax(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 17, 0);
  pb_err_t err;
  for (int k = 1; k <= 3; k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "lookahead:%d", k);
    pb_agent_t *a = pb_agent_new(C4, spec, 0, &err);
    assert_non_null(a);
    int varied = 0, tactical = 0;
    for (int t = 0; t < 150; t++) {
      pb_state_t s = random_position(C4, &rng, 30);
      uint8_t acts[PB_MAX_ACTIONS];
      int n = C4->legal(&s, acts), value[PB_MAX_ACTIONS], best = -2;
      for (int i = 0; i < n; i++) {
        pb_state_t c = s;
        int done = 0;
        float r = C4->step(&c, acts[i], &done);
        value[acts[i]] = done    ? (int)r
                         : k > 1 ? -plain_negamax(C4, &c, k - 1)
                                 : 0;
        if (value[acts[i]] > best) best = value[acts[i]];
      }
      int nbest = 0;
      for (int i = 0; i < n; i++) nbest += value[acts[i]] == best;
      tactical += nbest < n;
      uint32_t seen = 0;
      for (int seed = 0; seed < 12; seed++) {
        pb_agent_reseed(a, (uint64_t)seed);
        int m = pb_agent_act(a, &s, &err);
        assert_true(m >= 0);
        if (value[m] != best)
          fail_msg("%s chose %d of value %d, best %d", spec, m, value[m], best);
        seen |= 1u << m;
      }
      varied += nbest > 1 && __builtin_popcount(seen) > 1;
    }
    assert_true(varied > 50);
    assert_true(tactical > 5); /* the positions do test something */
    pb_agent_destroy(&a);
  }
}

/* Full-depth alphabeta only plays minimax-optimal moves. */
static void test_alphabeta_optimal_tictactoe(void **state) {
  (void)state;
  pb_rng_t rng;
  pb_rng_seed(&rng, 23, 0);
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(T3, "alphabeta:9", 0, &err);
  assert_non_null(a);
  for (int t = 0; t < 300; t++) {
    pb_state_t s = random_position(T3, &rng, 7);
    int best = t3_minimax(&s);
    pb_agent_reseed(a, (uint64_t)t);
    int m = pb_agent_act(a, &s, &err);
    assert_true(m >= 0);
    pb_state_t c = s;
    int done = 0;
    float r = T3->step(&c, m, &done);
    assert_int_equal(done ? (int)r : -t3_minimax(&c), best);
  }
  pb_agent_destroy(&a);
}

/* ------------------------------------------------------------- Othello */

static const pb_game_t *OT = &pb_game_othello;

/* Othello position from two disc sets, `me` to move at ply `ply`. */
static pb_state_t ot_pos(uint64_t me, uint64_t opp, int ply) {
  pb_state_t s;
  memset(&s, 0, sizeof s);
  s.w[0] = me;
  s.w[1] = opp;
  s.w[2] = (uint64_t)ply;
  return s;
}

#define OSQ(name) (1ULL << (((name)[1] - '1') * 8 + ((name)[0] - 'a')))

static void test_greedy_othello(void **state) {
  (void)state;
  /* Black to move: a4 turns over b4 c4 d4 (closed by e4); c5 and the
   * others turn one. Greedy takes a4, whatever its seed. */
  uint64_t black = OSQ("e4") | OSQ("d5") | OSQ("e5");
  uint64_t white = OSQ("b4") | OSQ("c4") | OSQ("d4");
  pb_state_t s = ot_pos(black, white, 4);
  pb_err_t err;
  pb_agent_t *g = pb_agent_new(OT, "greedy", 0, &err);
  assert_non_null(g);
  assert_string_equal(pb_agent_name(g), "greedy");
  for (int i = 0; i < 10; i++) {
    pb_agent_reseed(g, (uint64_t)i);
    assert_int_equal(pb_agent_act(g, &s, &err), 3 * 8 + 0); /* a4 */
  }
  pb_agent_destroy(&g);
  /* Greedy needs material; Connect Four has none. */
  assert_null(pb_agent_new(C4, "greedy", 0, &err));
  assert_int_equal(err.code, PB_EUNSUPP);
  assert_non_null(strstr(err.msg, "connect4"));
  assert_null(pb_agent_new(OT, "greedy:2", 0, &err));
  assert_int_equal(err.code, PB_EINVAL);
}

static void test_alphabeta_othello(void **state) {
  (void)state;
  pb_err_t err;
  /* A corner is worth 1.00 on the WPC: at depth 1 Black takes a1 (over
   * b2, closed by c3) rather than a move that turns more over. */
  uint64_t black = OSQ("c3") | OSQ("e4") | OSQ("d5") | OSQ("e5") | OSQ("h4");
  uint64_t white = OSQ("b2") | OSQ("d4") | OSQ("e6") | OSQ("f4") | OSQ("g4");
  pb_state_t s = ot_pos(black, white, 6);
  pb_agent_t *a = pb_agent_new(OT, "alphabeta:1", 0, &err);
  assert_non_null(a);
  assert_int_equal(pb_agent_act(a, &s, &err), 0); /* a1 */
  pb_agent_destroy(&a);
  /* It plays whole games, through passes, and beats random and greedy. */
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = "alphabeta:2";
  o.b_spec = "random";
  o.games = 20;
  o.threads = 1;
  pb_match_result_t r;
  assert_int_equal(pb_match_play(OT, &o, &r, &err), 0);
  assert_true(r.wins >= 15);
  o.b_spec = "greedy";
  assert_int_equal(pb_match_play(OT, &o, &r, &err), 0);
  assert_true(r.wins > r.losses);
}

/* uct:N[,c=X][,discount=0|1]: good specs keep their text as the name; bad
 * ones (unknown option, N out of range, c <= 0, ...) are refused with a
 * message naming the spec. */
static void test_uct_specs(void **state) {
  (void)state;
  pb_err_t err;
  const char *good[] = {"uct:1",
                        "uct:100000",
                        "uct:50,c=0.5",
                        "uct:50,discount=1",
                        "uct:50,c=2,discount=0",
                        "uct:50,discount=1,c=1e-3"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    pb_agent_t *a = pb_agent_new(T3, good[i], 1, &err);
    if (a == NULL) fail_msg("%s: %s", good[i], err.msg);
    assert_string_equal(pb_agent_name(a), good[i]);
    pb_agent_destroy(&a);
  }
  const struct {
    const char *spec, *says;
  } bad[] = {{"uct", "uct:N"},
             {"uct:", "uct:N"},
             {"uct:0", "uct:0"},
             {"uct:100001", "uct:100001"},
             {"uct:-5", "uct:-5"},
             {"uct:x", "uct:x"},
             {"uct:10x", "uct:10x"},
             {"uct:10,", "uct:10,"},
             {"uct:10,c", "uct:10,c"},
             {"uct:10,c=", "uct:10,c="},
             {"uct:10,c=0", "uct:10,c=0"},
             {"uct:10,c=-1", "uct:10,c=-1"},
             {"uct:10,c=x", "uct:10,c=x"},
             {"uct:10,c=nan", "uct:10,c=nan"},
             {"uct:10,c=inf", "uct:10,c=inf"},
             {"uct:10,c=1,c=2", "twice"},
             {"uct:10,discount=2", "uct:10,discount=2"},
             {"uct:10,discount=yes", "uct:10,discount=yes"},
             {"uct:10,depth=3", "unknown option \"depth\""},
             {"uct:10,,c=1", "uct:10,,c=1"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    pb_agent_t *a = pb_agent_new(T3, bad[i].spec, 1, &err);
    if (a != NULL) fail_msg("spec \"%s\" was accepted", bad[i].spec);
    assert_int_equal(err.code, PB_EINVAL);
    if (strstr(err.msg, bad[i].says) == NULL)
      fail_msg("%s: \"%s\" does not say \"%s\"", bad[i].spec, err.msg,
               bad[i].says);
  }
  char kinds[512];
  pb_agent_kinds(kinds, sizeof kinds);
  assert_non_null(strstr(kinds, "uct:N"));
}

/* uct: wins at once and blocks in Tic-Tac-Toe as the exact minimax says;
 * its moves are a function of the seed (reseeding equals a fresh agent);
 * it plays legal moves to the end of games of every game, Toguz Kumalak's
 * cut at max_turns included. */
static void test_uct_agent(void **state) {
  (void)state;
  pb_err_t err;
  const struct {
    const char *moves;
    int best;
  } cases[] = {{"7185", 8}, {"9385", 6}, {"152", 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pb_state_t s = pos(T3, cases[i].moves);
    pb_state_t c = s;
    int done = 0;
    float r = T3->step(&c, cases[i].best, &done);
    int v = done ? (int)r : -t3_minimax(&c);
    assert_int_equal(v, t3_minimax(&s)); /* the move keeps the exact value */
    int count[PB_MAX_ACTIONS];
    histogram(T3, "uct:1000", cases[i].moves, 4, count);
    assert_int_equal(count[cases[i].best], 4);
  }
  pb_agent_t *a = pb_agent_new(C4, "uct:200", 9, &err);
  pb_agent_t *b = pb_agent_new(C4, "uct:200", 1, &err);
  assert_non_null(a);
  assert_non_null(b);
  pb_state_t s = pos(C4, "4444");
  int first[6];
  for (int i = 0; i < 6; i++) first[i] = pb_agent_act(a, &s, &err);
  pb_agent_reseed(b, 9);
  for (int i = 0; i < 6; i++)
    assert_int_equal(pb_agent_act(b, &s, &err), first[i]);
  pb_agent_destroy(&a);
  pb_agent_destroy(&b);

  const pb_game_t *games[] = {C4, T3, &pb_game_othello, &pb_game_toguz};
  for (size_t gi = 0; gi < 4; gi++) {
    pb_match_opts_t o;
    pb_match_opts_default(&o);
    o.a_spec = gi & 1 ? "uct:16,discount=1" : "uct:16";
    o.b_spec = "random";
    o.games = 2;
    o.threads = 1;
    o.seed = 5;
    o.max_turns = gi == 3 ? 60 : 0; /* a Toguz game is cut at 60 plies */
    pb_match_result_t res;
    if (pb_match_play(games[gi], &o, &res, &err) != 0)
      fail_msg("%s: %s", games[gi]->name, err.msg);
    assert_int_equal(res.games, 2);
    assert_true(res.plies > 8);
  }
}

static void test_gtp_agent(void **state) {
  (void)state;
  pb_err_t err;
  /* The real engine: legal games to the end, through random openings
   * (positions the agent must reconstruct) and passes. */
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = "gtp:gtp-rhino";
  o.b_spec = "random";
  o.games = 6;
  o.threads = 2;
  o.opening_random_moves = 5;
  pb_match_result_t r;
  if (pb_match_play(OT, &o, &r, &err) != 0)
    fail_msg("%s (scripts/setup.sh installs grhino)", err.msg);
  assert_int_equal(r.games, 6);
  assert_true(r.wins >= 5);
  /* Positions out of order: each is reconstructed from the start. */
  pb_agent_t *a = pb_agent_new(OT, "gtp:gtp-rhino", 0, &err);
  assert_non_null(a);
  assert_string_equal(pb_agent_name(a), "gtp:gtp-rhino");
  const char *lines[] = {"f5d6c3d3c4", "f5", "f5d6c3d3c4f4f6f3e6e7"};
  for (int i = 0; i < 3; i++) {
    pb_state_t s = pos(OT, lines[i]);
    uint8_t legal[PB_MAX_ACTIONS];
    int n = OT->legal(&s, legal), act = pb_agent_act(a, &s, &err);
    assert_true(act >= 0);
    int ok = 0;
    for (int k = 0; k < n; k++) ok |= legal[k] == act;
    assert_true(ok);
  }
  pb_agent_destroy(&a);

  /* An Othello engine in another game (it refuses the board size), no
   * command, a missing engine. */
  assert_null(pb_agent_new(C4, "gtp:gtp-rhino", 0, &err));
  assert_int_equal(err.code, PB_EPROTO);
  assert_non_null(strstr(err.msg, "unacceptable size"));
  assert_null(pb_agent_new(OT, "gtp", 0, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_agent_new(OT, "gtp:/nonexistent/gtp-rhino", 0, &err));
  assert_int_equal(err.code, PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "apt-get install grhino grhino-data"));

  /* An engine that answers an illegal move, and one that dies at its
   * first genmove: clear errors from the agent and from a match. */
  char dir[] = "/tmp/probs-test-agent-gtp-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char bad[300], dies[300], spec[320];
  snprintf(bad, sizeof bad, "%s/bad", dir);
  snprintf(dies, sizeof dies, "%s/dies", dir);
  FILE *f = fopen(bad, "w");
  fprintf(f, "#!/bin/sh\nwhile read c r; do case $c in genmove) printf "
             "'= a1\\n\\n';; *) printf '=\\n\\n';; esac; done\n");
  fclose(f);
  f = fopen(dies, "w");
  fprintf(f, "#!/bin/sh\nwhile read c r; do case $c in genmove) exit 1;; *) "
             "printf '=\\n\\n';; esac; done\n");
  fclose(f);
  chmod(bad, 0755);
  chmod(dies, 0755);
  pb_state_t start;
  OT->reset(&start);
  snprintf(spec, sizeof spec, "gtp:%s", bad);
  a = pb_agent_new(OT, spec, 0, &err);
  assert_non_null(a);
  assert_int_equal(pb_agent_act(a, &start, &err), PB_EPROTO);
  assert_non_null(strstr(err.msg, "\"a1\""));
  assert_non_null(strstr(err.msg, "not a legal move"));
  pb_agent_destroy(&a);
  snprintf(spec, sizeof spec, "gtp:%s", dies);
  o.a_spec = spec;
  o.games = 2;
  o.opening_random_moves = 0;
  assert_int_equal(pb_match_play(OT, &o, &r, &err), PB_EPROTO);
  assert_non_null(strstr(err.msg, "exited"));
  remove(bad);
  remove(dies);
  rmdir(dir);
}

/* --model and --agent: the network kinds given without a path take the
 * model's; others, and every spec without a model, are copied. */
static void test_spec_with_model(void **state) {
  (void)state;
  char buf[256];
  pb_agent_spec_with_model("beam,E=10,M=3", "m.pbck", buf, sizeof buf);
  assert_string_equal(buf, "beam:m.pbck,E=10,M=3");
  pb_agent_spec_with_model("value", "m.pbck", buf, sizeof buf);
  assert_string_equal(buf, "value:m.pbck");
  pb_agent_spec_with_model("mcts,N=50", "m.pbck", buf, sizeof buf);
  assert_string_equal(buf, "mcts:m.pbck,N=50");
  pb_agent_spec_with_model("checkpoint", "m.pbck", buf, sizeof buf);
  assert_string_equal(buf, "checkpoint:m.pbck");
  pb_agent_spec_with_model("beamish", "m.pbck", buf, sizeof buf);
  assert_string_equal(buf, "beamish");
  pb_agent_spec_with_model("alphabeta:4", "m.pbck", buf, sizeof buf);
  assert_string_equal(buf, "alphabeta:4");
  pb_agent_spec_with_model("value", NULL, buf, sizeof buf);
  assert_string_equal(buf, "value");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_specs),
      cmocka_unit_test(test_act_errors),
      cmocka_unit_test(test_wrap),
      cmocka_unit_test(test_random_uniform_and_seeded),
      cmocka_unit_test(test_lookahead_tactics),
      cmocka_unit_test(test_alphabeta_tactics),
      cmocka_unit_test(test_alphabeta_tictactoe_perfect),
      cmocka_unit_test(test_lookahead_matches_plain_negamax),
      cmocka_unit_test(test_alphabeta_optimal_tictactoe),
      cmocka_unit_test(test_greedy_othello),
      cmocka_unit_test(test_alphabeta_othello),
      cmocka_unit_test(test_uct_specs),
      cmocka_unit_test(test_spec_with_model),
      cmocka_unit_test(test_uct_agent),
      cmocka_unit_test(test_gtp_agent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
