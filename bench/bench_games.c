/* bench_games - speed of the game engines and the baseline agents.
 *
 *   bench_games [SECONDS]     (time per row, default 1.0)
 *
 * Rows: perft (a deterministic node count, then its speed), random playouts
 * through the game vtable for each game, the Connect Four bitboards against
 * a plain-array engine running the same playouts in the same run, Othello
 * and Toguz Kumalak against the plain engines of their tests (perft and
 * playouts, same run, ratios), and the moves per second of the baseline
 * agents on a fixed set of Connect Four positions. Everything is seeded, so the counts are reproducible; only the
 * times vary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "bench_util.h"
#include "game.h"
#include "rng.h"
#include "../tests/plain_othello.h"
#include "../tests/plain_toguz.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Random playouts through the vtable; returns positions per second and
 * the number of positions in *count (a checksum of the run). */
static double playouts(const pb_game_t *g, double seconds, uint64_t *count) {
  pb_rng_t rng;
  pb_rng_seed(&rng, 1, 0);
  uint64_t n = 0;
  double t0 = now_s(), t = t0;
  while (t - t0 < seconds) {
    for (int rep = 0; rep < 1000; rep++) {
      pb_state_t s;
      g->reset(&s);
      int done = 0;
      while (!done) {
        uint8_t acts[PB_MAX_ACTIONS];
        int k = g->legal(&s, acts);
        g->step(&s, acts[pb_rng_below(&rng, (uint32_t)k)], &done);
        n++;
      }
    }
    t = now_s();
  }
  *count = n;
  return (double)n / (t - t0);
}

/* The plain-array engine: a board of cells, win found by scanning the four
 * directions around the stone just played (as tests/test_connect4.c). */
typedef struct {
  signed char cell[6][7];
  int height[7], ply, over;
} ref_t;

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

static double ref_playouts(double seconds, uint64_t *count) {
  pb_rng_t rng;
  pb_rng_seed(&rng, 1, 0);
  uint64_t n = 0;
  double t0 = now_s(), t = t0;
  while (t - t0 < seconds) {
    for (int rep = 0; rep < 1000; rep++) {
      ref_t r;
      memset(&r, 0, sizeof r);
      while (!r.over) {
        uint8_t acts[7];
        int k = 0;
        for (int c = 0; c < 7; c++)
          if (r.height[c] < 6) acts[k++] = (uint8_t)c;
        int col = acts[pb_rng_below(&rng, (uint32_t)k)];
        int row = r.height[col]++;
        r.cell[row][col] = (signed char)(1 + (r.ply & 1));
        r.ply++;
        r.over = ref_four_at(&r, row, col) || r.ply == 42;
        n++;
      }
    }
    t = now_s();
  }
  *count = n;
  return (double)n / (t - t0);
}

/* Moves per second of `spec` over a fixed set of positions. */
static double agent_speed(const pb_game_t *g, const char *spec, double seconds,
                          const pb_state_t *pos, int npos, long *moves) {
  pb_err_t err;
  pb_agent_t *a = pb_agent_new(g, spec, 1, &err);
  if (a == NULL) {
    fprintf(stderr, "bench_games: %s\n", err.msg);
    return 0;
  }
  long n = 0;
  double t0 = now_s(), t = t0;
  while (t - t0 < seconds) {
    for (int i = 0; i < npos; i++) {
      if (pb_agent_act(a, &pos[i], &err) < 0) {
        fprintf(stderr, "bench_games: %s\n", err.msg);
        pb_agent_destroy(&a);
        return 0;
      }
      n++;
      if ((n & 15) == 0 && (t = now_s()) - t0 >= seconds) break;
    }
    t = now_s();
  }
  pb_agent_destroy(&a);
  *moves = n;
  return (double)n / (t - t0);
}

/* Random playouts of the plain Othello engine (the same games as the
 * game's, move for move, for the same seed). */
static double pot_playouts(double seconds, uint64_t *count) {
  pb_rng_t rng;
  pb_rng_seed(&rng, 1, 0);
  uint64_t n = 0;
  double t0 = now_s(), t = t0;
  while (t - t0 < seconds) {
    for (int rep = 0; rep < 100; rep++) {
      pot_t r;
      pot_reset(&r);
      uint8_t acts[65];
      int k;
      while ((k = pot_legal(&r, acts)) > 0) {
        pot_play(&r, acts[pb_rng_below(&rng, (uint32_t)k)]);
        n++;
      }
    }
    t = now_s();
  }
  *count = n;
  return (double)n / (t - t0);
}

static double ptk_playouts(double seconds, uint64_t *count) {
  pb_rng_t rng;
  pb_rng_seed(&rng, 1, 0);
  uint64_t n = 0;
  double t0 = now_s(), t = t0;
  while (t - t0 < seconds) {
    for (int rep = 0; rep < 1000; rep++) {
      ptk_t r;
      ptk_reset(&r);
      uint8_t acts[9];
      int k, done = 0;
      while ((k = ptk_legal(&r, acts)) > 0 && r.over == 0) {
        ptk_play(&r, acts[pb_rng_below(&rng, (uint32_t)k)], &done);
        n++;
      }
    }
    t = now_s();
  }
  *count = n;
  return (double)n / (t - t0);
}

/* One row pair: the game's perft and the plain engine's, same depth. */
static void perft_rows(const char *name, uint64_t fast, double fast_s,
                       uint64_t plain, double plain_s) {
  char label[64];
  snprintf(label, sizeof label, "perft %s (leaves)", name);
  printf("%-36s %14llu %16.0f\n", label, (unsigned long long)fast,
         (double)fast / fast_s);
  snprintf(label, sizeof label, "perft %s, plain", name);
  printf("%-36s %14llu %16.0f\n", label, (unsigned long long)plain,
         (double)plain / plain_s);
  snprintf(label, sizeof label, "  game / plain (ratio)%s",
           fast == plain ? "" : " COUNTS DIFFER");
  printf("%-36s %14s %16.2f\n", label, "", (plain_s / plain) / (fast_s / fast));
}

int main(int argc, char **argv) {
  double sec = 1.0;
  const char *arg[1] = {NULL};
  int npos = 0;
  bench_usage_text = "usage: bench_games [SECONDS per row, (0, 600]]\n";
  const pb_opts_t o = {"bench_games", bench_usage, NULL, 0, arg, 1, &npos};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&o, "SECONDS", arg[0], 1e-9, 600, &sec);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  const pb_game_t *c4 = &pb_game_connect4, *t3 = &pb_game_tictactoe;
  printf("%-36s %14s %16s\n", "benchmark", "count", "per second");

  pb_state_t s;
  c4->reset(&s);
  double t0 = now_s();
  uint64_t nodes = pb_game_perft(c4, &s, 9);
  double dt = now_s() - t0;
  printf("%-36s %14llu %16.0f\n", "perft connect4 depth 9 (leaves)",
         (unsigned long long)nodes, (double)nodes / dt);

  uint64_t n1, n2, n3;
  double p_c4 = playouts(c4, sec, &n1);
  printf("%-36s %14llu %16.0f\n", "random playout connect4 (positions)",
         (unsigned long long)n1, p_c4);
  double p_t3 = playouts(t3, sec, &n2);
  printf("%-36s %14llu %16.0f\n", "random playout tictactoe (positions)",
         (unsigned long long)n2, p_t3);
  double p_ref = ref_playouts(sec, &n3);
  printf("%-36s %14llu %16.0f\n", "random playout connect4, plain array",
         (unsigned long long)n3, p_ref);
  printf("%-36s %14s %16.2f\n", "bitboard / plain array (ratio)", "",
         p_c4 / p_ref);

  /* Othello and Toguz Kumalak against their plain engines. */
  const pb_game_t *ot = &pb_game_othello, *tk = &pb_game_toguz;
  ot->reset(&s);
  t0 = now_s();
  uint64_t fast = pb_game_perft(ot, &s, 8);
  double fast_s = now_s() - t0;
  pot_t por;
  pot_reset(&por);
  t0 = now_s();
  uint64_t plain = pot_perft(&por, 8);
  perft_rows("othello depth 8", fast, fast_s, plain, now_s() - t0);
  tk->reset(&s);
  t0 = now_s();
  fast = pb_game_perft(tk, &s, 6);
  fast_s = now_s() - t0;
  ptk_t ptr;
  ptk_reset(&ptr);
  t0 = now_s();
  plain = ptk_perft(&ptr, 6);
  perft_rows("toguz depth 6", fast, fast_s, plain, now_s() - t0);
  uint64_t m1, m2;
  double p_ot = playouts(ot, sec, &m1), p_pot = pot_playouts(sec, &m2);
  printf("%-36s %14llu %16.0f\n", "random playout othello (positions)",
         (unsigned long long)m1, p_ot);
  printf("%-36s %14llu %16.0f\n", "random playout othello, plain",
         (unsigned long long)m2, p_pot);
  printf("%-36s %14s %16.2f\n", "  game / plain (ratio)", "", p_ot / p_pot);
  double p_tk = playouts(tk, sec, &m1), p_ptk = ptk_playouts(sec, &m2);
  printf("%-36s %14llu %16.0f\n", "random playout toguz (positions)",
         (unsigned long long)m1, p_tk);
  printf("%-36s %14llu %16.0f\n", "random playout toguz, plain",
         (unsigned long long)m2, p_ptk);
  printf("%-36s %14s %16.2f\n", "  game / plain (ratio)", "", p_tk / p_ptk);

  /* 200 positions from random games, 0..20 plies in, none terminal. */
  enum { NPOS = 200 };
  static pb_state_t pos[NPOS];
  pb_rng_t rng;
  pb_rng_seed(&rng, 2, 0);
  for (int i = 0; i < NPOS;) {
    c4->reset(&s);
    int plies = (int)pb_rng_below(&rng, 21), done = 0;
    for (int p = 0; p < plies && !done; p++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int k = c4->legal(&s, acts);
      c4->step(&s, acts[pb_rng_below(&rng, (uint32_t)k)], &done);
    }
    if (!done) pos[i++] = s;
  }
  const char *specs[] = {"random",      "lookahead:1", "lookahead:2",
                         "lookahead:3", "lookahead:4", "alphabeta:2",
                         "alphabeta:4", "alphabeta:6", "alphabeta:8"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    long moves = 0;
    double mps = agent_speed(c4, specs[i], sec, pos, NPOS, &moves);
    char label[64];
    snprintf(label, sizeof label, "connect4 %s (moves)", specs[i]);
    printf("%-36s %14ld %16.0f\n", label, moves, mps);
  }
  long moves = 0;
  t3->reset(&s);
  double mps = agent_speed(t3, "alphabeta:9", sec, &s, 1, &moves);
  printf("%-36s %14ld %16.0f\n", "tictactoe alphabeta:9, empty board", moves,
         mps);
  return 0;
}
