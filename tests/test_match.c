/* test_match.c - matches: bookkeeping, colours, determinism across thread
 * counts, and that the baselines are ordered as they should be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtp_clock.h"
#include "match.h"

static pb_match_result_t play(const pb_game_t *g, const char *a, const char *b,
                              int games, uint64_t seed, int threads,
                              int opening) {
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = a;
  o.b_spec = b;
  o.games = games;
  o.seed = seed;
  o.threads = threads;
  o.opening_random_moves = opening;
  pb_match_result_t r;
  pb_err_t err;
  int rc = pb_match_play(g, &o, &r, &err);
  if (rc != 0) fail_msg("match %s vs %s: %s", a, b, err.msg);
  return r;
}

static void check_sums(const pb_match_result_t *r, int games) {
  assert_int_equal(r->games, games);
  assert_int_equal(r->wins + r->draws + r->losses, games);
  assert_int_equal(r->first_wins + r->first_draws + r->first_losses,
                   (games + 1) / 2);
  assert_int_equal(r->second_wins + r->second_draws + r->second_losses,
                   games / 2);
  assert_int_equal(r->first_wins + r->second_wins, r->wins);
  assert_int_equal(r->first_draws + r->second_draws, r->draws);
  assert_int_equal(r->first_losses + r->second_losses, r->losses);
}

static void test_deterministic_across_threads(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_match_result_t r1 = play(g, "lookahead:2", "random", 61, 7, 1, 2);
  check_sums(&r1, 61);
  for (int t = 2; t <= 5; t++) {
    pb_match_result_t rt = play(g, "lookahead:2", "random", 61, 7, t, 2);
    assert_memory_equal(&r1, &rt, sizeof r1);
  }
  pb_match_result_t r0 = play(g, "lookahead:2", "random", 61, 7, 0, 2);
  assert_memory_equal(&r1, &r0, sizeof r1);
  /* Another seed gives other games. */
  pb_match_result_t other = play(g, "lookahead:2", "random", 61, 8, 2, 2);
  assert_true(memcmp(&r1, &other, sizeof r1) != 0);
}

static void test_single_game(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_tictactoe;
  pb_err_t err;
  pb_agent_t *ab = pb_agent_new(g, "alphabeta:9", 1, &err);
  pb_agent_t *rnd = pb_agent_new(g, "random", 2, &err);
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  int outcome = 5, plies = 0, capped = 5, losses = 0;
  for (int i = 0; i < 20; i++) {
    assert_int_equal(
        pb_match_game(g, ab, rnd, &rng, 0, 0, &outcome, &plies, &capped, &err),
        0);
    assert_true(plies >= 5 && plies <= 9);
    assert_int_equal(capped, 0);
    losses += outcome < 0;
  }
  assert_int_equal(losses, 0);
  /* A turn cap stops the game as a draw. */
  assert_int_equal(
      pb_match_game(g, ab, rnd, &rng, 0, 3, &outcome, &plies, &capped, &err),
      0);
  assert_int_equal(outcome, 0);
  assert_int_equal(plies, 3);
  assert_int_equal(capped, 1);
  /* A fully random opening: the agents never move. */
  assert_int_equal(
      pb_match_game(g, ab, rnd, &rng, 9, 0, &outcome, &plies, NULL, &err), 0);
  assert_int_equal(
      pb_match_game(g, ab, rnd, NULL, 2, 0, &outcome, &plies, NULL, &err),
      PB_EINVAL);
  assert_int_equal(
      pb_match_game(g, NULL, rnd, &rng, 0, 0, NULL, NULL, NULL, &err),
      PB_EINVAL);
  pb_agent_destroy(&ab);
  pb_agent_destroy(&rnd);
}

static void test_bad_options(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_match_opts_t o;
  pb_match_result_t r;
  pb_err_t err;
  pb_match_opts_default(&o);
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL); /* no specs */
  o.a_spec = "random";
  o.b_spec = "lookahead:9";
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "lookahead"));
  o.b_spec = "random";
  o.games = 0;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  o.games = 4;
  o.threads = -1;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  o.threads = 1;
  o.opening_random_moves = -2;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  o.opening_random_moves = 0;
  o.max_turns = -1;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  assert_int_equal(pb_match_play(NULL, &o, &r, &err), PB_EINVAL);
  o.max_turns = 0;
  assert_int_equal(pb_match_play(g, &o, NULL, &err), PB_EINVAL);
  /* More threads than games is fine. */
  o.threads = 16;
  o.games = 3;
  assert_int_equal(pb_match_play(g, &o, &r, &err), 0);
  check_sums(&r, 3);
}

static void test_turn_cap(void **state) {
  (void)state;
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = "random";
  o.b_spec = "random";
  o.games = 20;
  o.threads = 2;
  o.max_turns = 4; /* nobody can win in 4 plies */
  pb_match_result_t r;
  pb_err_t err;
  assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), 0);
  assert_int_equal(r.draws, 20);
  assert_int_equal(r.capped, 20);
  assert_int_equal(r.plies, 80);
}

/* lookahead:1 clearly beats random, and alternation works (A wins with both
 * colours). */
static void test_lookahead_beats_random(void **state) {
  (void)state;
  pb_match_result_t r =
      play(&pb_game_tictactoe, "lookahead:1", "random", 300, 1, 2, 0);
  check_sums(&r, 300);
  double score = (r.wins + 0.5 * r.draws) / r.games;
  assert_true(score > 0.65);
  assert_true(r.first_wins > r.first_losses);
  assert_true(r.second_wins > r.second_losses);

  r = play(&pb_game_connect4, "lookahead:1", "random", 200, 1, 2, 0);
  check_sums(&r, 200);
  score = (r.wins + 0.5 * r.draws) / r.games;
  assert_true(score > 0.65);
  /* And the other way round the score mirrors. */
  pb_match_result_t m =
      play(&pb_game_connect4, "random", "lookahead:1", 200, 1, 2, 0);
  assert_true(m.wins < m.losses);
}

/* The ladder random < lookahead:1 < lookahead:2 < lookahead:3. */
static void test_lookahead_ladder(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  const char *ladder[] = {"random", "lookahead:1", "lookahead:2",
                          "lookahead:3"};
  for (int i = 1; i < 4; i++) {
    pb_match_result_t r = play(g, ladder[i], ladder[i - 1], 100, 3, 2, 0);
    if (r.wins <= r.losses + 10)
      fail_msg("%s vs %s: W=%d D=%d L=%d", ladder[i], ladder[i - 1], r.wins,
               r.draws, r.losses);
  }
}

/* ---- openings and early stopping (issue 39, item 3) ------------------- */

/* "121212": three in column 1 for the first player, three in column 2 for
 * the second, the first player to move: lookahead:1 wins at once. */
static void test_opening_both_colours(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_state_t *ops = NULL;
  int n = 0;
  pb_err_t err;
  const char *text = "# a comment\n\n  121212 \r\n";
  assert_int_equal(
      pb_match_openings_parse(g, text, strlen(text), "t.txt", &ops, &n, &err),
      0);
  assert_int_equal(n, 1);
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = "lookahead:1";
  o.b_spec = "lookahead:1";
  o.games = 6;
  o.threads = 2;
  o.openings = ops;
  o.n_openings = n;
  pb_match_result_t r;
  assert_int_equal(pb_match_play(g, &o, &r, &err), 0);
  check_sums(&r, 6);
  /* Each opening with both colours: A wins the games where it has the
   * first player's side and loses the others. */
  assert_int_equal(r.first_wins, 3);
  assert_int_equal(r.second_losses, 3);
  assert_int_equal(r.plies, 6 * 7); /* the opening's plies count */
  free(ops);

  /* Two openings: game i starts from opening (i / 2) mod 2; the second is
   * the start ("-"), so games 2, 3 (and 6, 7) are whole games. */
  text = "121212\n-\n";
  assert_int_equal(
      pb_match_openings_parse(g, text, strlen(text), "t.txt", &ops, &n, &err),
      0);
  assert_int_equal(n, 2);
  pb_state_t start;
  g->reset(&start);
  assert_memory_equal(&ops[1], &start, sizeof start);
  o.openings = ops;
  o.n_openings = n;
  o.games = 4;
  o.a_spec = "lookahead:1";
  o.b_spec = "random";
  pb_match_result_t r2;
  assert_int_equal(pb_match_play(g, &o, &r2, &err), 0);
  check_sums(&r2, 4);
  assert_true(r2.first_wins >= 1 && r2.second_losses + r2.second_draws +
                                            r2.second_wins == 2);
  /* Same totals whatever the threads. */
  o.threads = 1;
  pb_match_result_t r3;
  assert_int_equal(pb_match_play(g, &o, &r3, &err), 0);
  assert_memory_equal(&r2, &r3, sizeof r2);
  /* A finished opening passed straight in is refused. */
  pb_state_t fin;
  assert_int_equal(g->parse(&fin, "1212121", &err), 0);
  o.openings = &fin;
  o.n_openings = 1;
  assert_int_equal(pb_match_play(g, &o, &r3, &err), PB_EINVAL);
  free(ops);
}

static void test_openings_bad(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_state_t *ops = (pb_state_t *)1;
  int n = 7;
  pb_err_t err;
  struct {
    const char *text, *want;
  } bad[] = {
      {"4453\n4458\n", "t.txt:2"},         /* no column 8 */
      {"4453\n\n1111111\n", "t.txt:3"},    /* column 1 is full */
      {"1212121\n", "over"},                /* finished */
      {"# only a comment\n\n", "no openings"},
      {"", "no openings"},
      {"44\0" "53\n", "NUL"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t len = strlen(bad[i].text);
    if (i == 5) len = 6;
    int rc = pb_match_openings_parse(g, bad[i].text, len, "t.txt", &ops, &n,
                                     &err);
    if (rc != PB_ECORRUPT || strstr(err.msg, bad[i].want) == NULL)
      fail_msg("case %zu: rc %d, '%s'", i, rc, err.msg);
    assert_null(ops);
    assert_int_equal(n, 0);
  }
  /* Othello's notation, from a file. */
  char path[] = "/tmp/probs-test-openings-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char *text = "f5d6\nf5f6\nf5\n";
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  assert_int_equal(
      pb_match_openings_load(&pb_game_othello, path, &ops, &n, &err), 0);
  assert_int_equal(n, 3);
  assert_int_equal(pb_game_othello.ply(&ops[0]), 2);
  free(ops);
  /* Connect Four cannot read it: the line and the file are named. */
  assert_int_equal(pb_match_openings_load(g, path, &ops, &n, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, path));
  unlink(path);
  assert_int_equal(pb_match_openings_load(g, path, &ops, &n, &err), PB_EIO);
  assert_non_null(strstr(err.msg, "cannot open"));
}

/* pb_match_game_from: the first agent plays the first player's side, the
 * plies include the start's. */
static void test_game_from(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_err_t err;
  pb_agent_t *la = pb_agent_new(g, "lookahead:1", 1, &err);
  pb_agent_t *rnd = pb_agent_new(g, "random", 2, &err);
  pb_state_t s;
  assert_int_equal(g->parse(&s, "121212", &err), 0);
  int outcome = 0, plies = 0, capped = 0;
  assert_int_equal(pb_match_game_from(g, &s, la, rnd, NULL, 0, 0, &outcome,
                                      &plies, &capped, &err),
                   0);
  assert_int_equal(outcome, 1);
  assert_int_equal(plies, 7);
  /* A cap at the opening's length: nothing played, a draw. */
  assert_int_equal(pb_match_game_from(g, &s, la, rnd, NULL, 0, 6, &outcome,
                                      &plies, &capped, &err),
                   0);
  assert_int_equal(outcome, 0);
  assert_int_equal(capped, 1);
  assert_int_equal(g->parse(&s, "1212121", &err), 0);
  assert_int_equal(pb_match_game_from(g, &s, la, rnd, NULL, 0, 0, &outcome,
                                      &plies, &capped, &err),
                   PB_EINVAL);
  pb_agent_destroy(&la);
  pb_agent_destroy(&rnd);
}

typedef struct {
  int calls, last_games, stop_at_wins, bad_order;
} stop_ctx_t;

static int stop_on_wins(void *ctx, const pb_match_result_t *sofar) {
  stop_ctx_t *c = ctx;
  c->calls++;
  if (sofar->games != c->last_games + 1) c->bad_order = 1;
  c->last_games = sofar->games;
  return sofar->wins >= c->stop_at_wins;
}

/* A stopping rule sees every prefix of the match in order, and the match
 * ends at the same game with the same totals whatever the threads. */
static void test_early_stop(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_match_result_t ref;
  memset(&ref, 0, sizeof ref);
  for (int threads = 1; threads <= 4; threads++) {
    stop_ctx_t c = {.stop_at_wins = 7};
    pb_match_opts_t o;
    pb_match_opts_default(&o);
    o.a_spec = "lookahead:1";
    o.b_spec = "random";
    o.games = 200;
    o.seed = 5;
    o.threads = threads;
    o.on_games = stop_on_wins;
    o.ctx = &c;
    pb_match_result_t r;
    pb_err_t err;
    assert_int_equal(pb_match_play(g, &o, &r, &err), 0);
    assert_int_equal(c.bad_order, 0);
    assert_int_equal(c.calls, r.games);
    assert_int_equal(r.wins, 7);
    assert_true(r.games >= 7 && r.games < 200);
    check_sums(&r, r.games);
    if (threads == 1)
      ref = r;
    else
      assert_memory_equal(&ref, &r, sizeof r);
  }
  /* The first games of the whole match are those of the stopped one. */
  pb_match_result_t whole = play(g, "lookahead:1", "random", ref.games, 5, 3, 0);
  assert_memory_equal(&whole, &ref, sizeof ref);
}

/* The pentanomial counts agree with the games: each pair's two results
 * are in the W/D/L. */
static void check_penta(const pb_match_result_t *r) {
  int pairs = 0;
  for (int j = 0; j < PB_MATCH_PENTA; j++) pairs += r->penta[j];
  assert_int_equal(pairs, r->games / 2);
  assert_int_equal(r->pair_wl + r->pair_dd, r->penta[2]);
  if (r->games % 2 != 0) return;
  assert_int_equal(2 * r->penta[4] + r->penta[3] + r->pair_wl, r->wins);
  assert_int_equal(r->penta[1] + r->penta[3] + 2 * r->pair_dd, r->draws);
  assert_int_equal(2 * r->penta[0] + r->penta[1] + r->pair_wl, r->losses);
}

static void test_penta_counts(void **state) {
  (void)state;
  pb_match_result_t r = play(&pb_game_connect4, "lookahead:1", "random", 40,
                             3, 2, 0);
  check_penta(&r);
  assert_true(r.penta[4] > 0);
  r = play(&pb_game_tictactoe, "alphabeta:9", "alphabeta:2", 30, 3, 2, 0);
  check_penta(&r);
  r = play(&pb_game_connect4, "random", "random", 41, 4, 3, 0);
  check_penta(&r);
  int penta[PB_MATCH_PENTA] = {0}, wl = 0, dd = 0;
  pb_match_penta_add(penta, &wl, &dd, 1, -1);
  pb_match_penta_add(penta, &wl, &dd, 0, 0);
  pb_match_penta_add(penta, &wl, &dd, -1, 0);
  pb_match_penta_add(penta, &wl, &dd, 1, 1);
  assert_int_equal(penta[0], 0);
  assert_int_equal(penta[1], 1);
  assert_int_equal(penta[2], 2);
  assert_int_equal(penta[4], 1);
  assert_int_equal(wl, 1);
  assert_int_equal(dd, 1);
}

/* Deterministic agents replay two games (one with each colour) over and
 * over; the counts of distinct games say so, whatever the threads. */
static void test_repeats(void **state) {
  (void)state;
  const char *ck = "checkpoint:" PB_SOURCE_DIR "/data/models/connect4.pbck";
  pb_match_result_t r = play(&pb_game_connect4, ck, ck, 10, 1, 1, 0);
  assert_int_equal(r.repeats, 8);
  assert_int_equal(r.pair_repeats, 4);
  assert_int_equal(r.last_new, 1);
  assert_int_equal(r.distinct_wins + r.distinct_draws + r.distinct_losses, 2);
  int dp = 0;
  for (int j = 0; j < PB_MATCH_PENTA; j++) dp += r.distinct_penta[j];
  assert_int_equal(dp, 1);
  pb_match_result_t r3 = play(&pb_game_connect4, ck, ck, 10, 1, 3, 0);
  assert_memory_equal(&r, &r3, sizeof r);
  /* Random plies make every game new. */
  pb_match_result_t rr = play(&pb_game_connect4, ck, ck, 10, 1, 2, 8);
  assert_int_equal(rr.repeats, 0);
  assert_int_equal(rr.last_new, 9);
  assert_int_equal(rr.distinct_wins, rr.wins);
  assert_memory_equal(rr.distinct_penta, rr.penta, sizeof rr.penta);
}

/* Cancelling: the games finished count, each shown to on_game once, in
 * order; nothing is an error. */
typedef struct {
  atomic_int cancel;
  int after, shown, bad_order;
} cancel_ctx_t;

static int cancel_on_games(void *ctx, const pb_match_result_t *sofar) {
  cancel_ctx_t *c = ctx;
  if (sofar->games >= c->after) atomic_store(&c->cancel, 1);
  return 0;
}

static int cancel_on_game(void *ctx, const pb_match_game_t *gm, pb_err_t *e) {
  (void)e;
  cancel_ctx_t *c = ctx;
  if (gm->index < c->shown) c->bad_order++;
  c->shown = gm->index + 1;
  return 0;
}

static void test_cancel(void **state) {
  (void)state;
  for (int threads = 1; threads <= 3; threads++) {
    cancel_ctx_t c = {.after = 10};
    atomic_init(&c.cancel, 0);
    pb_match_opts_t o;
    pb_match_opts_default(&o);
    o.a_spec = "lookahead:1";
    o.b_spec = "random";
    o.games = 200;
    o.threads = threads;
    o.on_games = cancel_on_games;
    o.ctx = &c;
    o.on_game = cancel_on_game;
    o.game_ctx = &c;
    o.cancel = &c.cancel;
    pb_match_result_t r;
    pb_err_t err;
    assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), 0);
    assert_int_equal(r.interrupted, 1);
    assert_int_equal(c.bad_order, 0);
    if (threads == 1) assert_int_equal(r.games, 10);
    assert_true(r.games >= 10 && r.games < 200);
    assert_int_equal(r.wins + r.draws + r.losses, r.games);
  }
  /* Cancelled before the start: nothing played. */
  atomic_int now;
  atomic_init(&now, 1);
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = o.b_spec = "random";
  o.cancel = &now;
  pb_match_result_t r;
  pb_err_t err;
  assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), 0);
  assert_int_equal(r.games, 0);
  assert_int_equal(r.interrupted, 1);
}

/* show_interrupted: the games under way when the match is cancelled are
 * shown too, in game order among the finished ones, unfinished and
 * uncounted; uct values its moves, random gives no evaluations (NaN). */
typedef struct {
  atomic_int cancel;
  const pb_game_t *g;
  int finished, interrupted, last, bad;
} under_way_t;

static int under_way_games(void *ctx, const pb_match_result_t *sofar) {
  under_way_t *u = ctx;
  if (sofar->games >= 6) atomic_store(&u->cancel, 1);
  return 0;
}

static int under_way_game(void *ctx, const pb_match_game_t *gm, pb_err_t *e) {
  (void)e;
  under_way_t *u = ctx;
  u->bad += gm->index <= u->last || gm->evals == NULL;
  u->last = gm->index;
  pb_state_t s;
  u->g->reset(&s);
  int done = 0;
  for (int i = 0; i < gm->n_moves; i++) {
    u->g->step(&s, gm->moves[i], &done);
    /* uct's plies: its mean result of the move; random's: none. */
    const int uct = (i % 2 == 0) == gm->a_first;
    u->bad += uct ? !(fabsf(gm->evals[i]) <= 1.0f) : !isnan(gm->evals[i]);
  }
  if (gm->interrupted) {
    u->interrupted++;
    u->bad += done || gm->outcome != 0;
  } else {
    u->finished++;
  }
  return 0;
}

static void test_show_interrupted(void **state) {
  (void)state;
  int seen = 0;
  for (int rep = 0; rep < 20 && seen == 0; rep++) {
    under_way_t u = {.g = &pb_game_connect4, .last = -1};
    atomic_init(&u.cancel, 0);
    pb_match_opts_t o;
    pb_match_opts_default(&o);
    o.a_spec = "uct:50";
    o.b_spec = "random";
    o.games = 100;
    o.seed = (uint64_t)rep + 1;
    o.threads = 3;
    o.on_games = under_way_games;
    o.ctx = &u;
    o.on_game = under_way_game;
    o.game_ctx = &u;
    o.cancel = &u.cancel;
    o.show_interrupted = 1;
    pb_match_result_t r;
    pb_err_t err;
    assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), 0);
    assert_int_equal(r.interrupted, 1);
    assert_int_equal(u.bad, 0);
    assert_int_equal(u.finished, r.games);
    assert_true(u.interrupted <= 2);
    seen += u.interrupted;
  }
  assert_true(seen > 0); /* the other threads were in a game (nearly always) */
}

/* A move's budget under a time control, worked out from match.h's rule:
 * 90% of (left / moves left + increment), at most half the time left,
 * less 2 ms, at least 1 ms. */
static void test_tc_budget(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  int m = pb_gtp_clock_moves_left(g, 0);
  assert_true(m >= PB_GTP_CLOCK_MIN_MOVES);
  assert_int_equal(pb_match_tc_budget_ms(g, 0, 10, 0.1),
                   (int64_t)(900.0 * (10.0 / m + 0.1)) - 2);
  assert_int_equal(pb_match_tc_budget_ms(g, 0, 10, 0),
                   (int64_t)(900.0 * 10.0 / m) - 2);
  /* An increment larger than the time left: half the time left. */
  assert_int_equal(pb_match_tc_budget_ms(g, 0, 0.01, 5), 3);
  assert_int_equal(pb_match_tc_budget_ms(g, 0, 0, 1), 1);
  assert_int_equal(pb_match_tc_budget_ms(g, 0, -1, 1), 1);
  /* Later plies: fewer moves to spread over, a larger share. */
  assert_true(pb_match_tc_budget_ms(g, 30, 10, 0) >
              pb_match_tc_budget_ms(g, 0, 10, 0));
  /* Bad time controls are refused. */
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = o.b_spec = "random";
  o.tc_base_s = -1;
  pb_match_result_t r;
  pb_err_t err;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  o.tc_base_s = 0;
  o.tc_inc_s = 1;
  assert_int_equal(pb_match_play(g, &o, &r, &err), PB_EINVAL);
  /* A generous clock: the games as without one, no losses on time. */
  o.tc_base_s = 100;
  o.tc_inc_s = 1;
  o.games = 6;
  o.threads = 2;
  assert_int_equal(pb_match_play(g, &o, &r, &err), 0);
  assert_int_equal(r.a_time_losses + r.b_time_losses, 0);
  pb_match_result_t plain = play(g, "random", "random", 6, 1, 2, 0);
  assert_int_equal(r.wins, plain.wins);
  assert_int_equal(r.plies, plain.plies);
}

/* Adjudication by the solver: Tic-Tac-Toe after one ply is a draw
 * whatever the first move, so every game is adjudicated a draw; a game
 * without a solver is refused. */
static void test_adjudicate(void **state) {
  (void)state;
  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = "alphabeta:9";
  o.b_spec = "random";
  o.games = 8;
  o.threads = 2;
  o.adjudicate_ply = 1;
  pb_match_result_t r;
  pb_err_t err;
  assert_int_equal(pb_match_play(&pb_game_tictactoe, &o, &r, &err), 0);
  assert_int_equal(r.adjudicated, 8);
  assert_int_equal(r.draws, 8);
  assert_int_equal(r.plies, 8);
  /* From ply 20 of Connect Four: games that end before are not. */
  o.a_spec = "lookahead:1";
  o.adjudicate_ply = 20;
  o.games = 20;
  assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), 0);
  assert_true(r.adjudicated < 20);
  pb_match_result_t plain =
      play(&pb_game_connect4, "lookahead:1", "random", 20, 1, 2, 0);
  assert_true(plain.plies >= r.plies);
  assert_int_equal(pb_match_play(&pb_game_othello, &o, &r, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "othello has none"));
  /* By material: Toguz Kumalak, greedy far ahead of random; every game
   * ends early, the same whatever the threads. */
  pb_match_opts_default(&o);
  o.a_spec = "greedy";
  o.b_spec = "random";
  o.games = 6;
  o.threads = 1;
  o.adjudicate_margin = 30;
  o.adjudicate_plies = 10;
  assert_int_equal(pb_match_play(&pb_game_toguz, &o, &r, &err), 0);
  assert_true(r.adjudicated > 0);
  pb_match_result_t r3;
  o.threads = 3;
  assert_int_equal(pb_match_play(&pb_game_toguz, &o, &r3, &err), 0);
  assert_memory_equal(&r, &r3, sizeof r);
  plain = play(&pb_game_toguz, "greedy", "random", 6, 1, 2, 0);
  assert_true(r.plies < plain.plies);
  /* No material in Connect Four; no plies. */
  assert_int_equal(pb_match_play(&pb_game_connect4, &o, &r, &err), PB_EINVAL);
  o.adjudicate_plies = 0;
  assert_int_equal(pb_match_play(&pb_game_toguz, &o, &r, &err), PB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deterministic_across_threads),
      cmocka_unit_test(test_single_game),
      cmocka_unit_test(test_bad_options),
      cmocka_unit_test(test_turn_cap),
      cmocka_unit_test(test_lookahead_beats_random),
      cmocka_unit_test(test_lookahead_ladder),
      cmocka_unit_test(test_opening_both_colours),
      cmocka_unit_test(test_openings_bad),
      cmocka_unit_test(test_game_from),
      cmocka_unit_test(test_early_stop),
      cmocka_unit_test(test_penta_counts),
      cmocka_unit_test(test_repeats),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_show_interrupted),
      cmocka_unit_test(test_tc_budget),
      cmocka_unit_test(test_adjudicate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
