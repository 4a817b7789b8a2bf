/* cmd_elo.c - `probs elo-calibrate`: measures the baseline agents against
 * each other (round robin) and fits their Elo ratings jointly by maximum
 * likelihood with the first player fixed at 1000, printed beside the
 * paper's anchors so that the anchors the evaluator uses can be checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "args.h"
#include "bounds.h"
#include "cmds.h"
#include "elo.h"
#include "elotable.h"
#include "opts.h"
#include "progress.h"
#include "game.h"
#include "match.h"
#include "rng.h"
#include "util.h"

#define PB__CAL_MAX 16

static void cal_usage(FILE *f) {
  fprintf(f,
          "usage: probs elo-calibrate [--game NAME] [--games N] [--seed S]\n"
          "                           [--threads T] [--opening-random K]\n"
          "                           [--players LIST]\n"
          "  --game NAME          %s (default connect4)\n"
          "  --games N            games per pair, half with each colour "
          "(default 400)\n"
          "  --seed S             seed (default 1)\n"
          "  --threads T          0 = all CPUs (default 0); results do not "
          "depend on T\n"
          "  --opening-random K   first K plies uniformly random (default 0)\n"
          "  --players LIST       comma-separated agent specs (default "
          "random,lookahead:1,\n"
          "                       lookahead:2,lookahead:3); the first is "
          "fixed at Elo 1000\n"
          "Plays every pair, fits all ratings jointly (maximum likelihood, "
          "draws as half\npoints) and prints them beside the paper's anchors "
          "(random 1000, lookahead:1\n1183, lookahead:2 1501, lookahead:3 "
          "1603).\n",
          pb_game_names());
}

/* Splits a comma-separated list into names[]; returns the count or -1. */
static int split_players(const char *list, char names[][PB_ELOTABLE_SPEC_MAX]) {
  int n = 0;
  const char *p = list;
  for (;;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0 || len >= PB_ELOTABLE_SPEC_MAX || n == PB__CAL_MAX) return -1;
    memcpy(names[n], p, len);
    names[n][len] = '\0';
    for (int j = 0; j < n; j++)
      if (!strcmp(names[j], names[n])) return -1;
    n++;
    if (c == NULL) return n;
    p = c + 1;
  }
}

/* The round robin's progress (progress.h): games of every pair, the
 * pair under way. */
typedef struct {
  pb_meter_t m;
  long base; /* games of the pairs played before this one */
  char pair[64];
} elo_meter_t;

static int elo_on_games(void *ctx, const pb_match_result_t *sofar) {
  elo_meter_t *em = ctx;
  pb_meter_update(&em->m, (double)(em->base + sofar->games), pb_now(),
                  em->pair);
  return 0;
}

/* Plays every pair of the np players pl[] (games each, on threads
 * threads, the first `open` plies random), prints a line per pair and
 * fills pairs[]. Returns 0, or 1 after saying why. */
static int play_pairs(const pb_game_t *g, char pl[][PB_ELOTABLE_SPEC_MAX],
                      int np, long games, long threads, long open,
                      unsigned long long seed, pb_elo_pair_t *pairs) {
  pb_err_t err;
  pb_err_clear(&err);
  int k = 0;
  printf("%-14s %-14s %8s %8s %8s %8s  %s\n", "A", "B", "A wins", "draws",
         "B wins", "A score", "Elo A-B [95%]");
  elo_meter_t em = {.base = 0};
  pb_meter_stderr(&em.m, "progress", "games",
                  (double)games * np * (np - 1) / 2, pb_now());
  for (int i = 0; i < np; i++)
    for (int j = i + 1; j < np; j++) {
      snprintf(em.pair, sizeof em.pair, "%.28s vs %.28s", pl[i], pl[j]);
      pb_match_opts_t o;
      pb_match_opts_default(&o);
      o.a_spec = pl[i];
      o.b_spec = pl[j];
      o.games = (int)games;
      o.threads = (int)threads;
      o.opening_random_moves = (int)open;
      o.seed = pb_mix64((uint64_t)seed ^ pb_mix64((uint64_t)(i * 64 + j)));
      o.on_games = elo_on_games;
      o.ctx = &em;
      pb_match_result_t r;
      int rc = pb_match_play(g, &o, &r, &err);
      em.base += games;
      /* On a terminal the bar, drawn whole, ends its line before the
       * pair's row. */
      if (em.m.tty && rc == 0)
        pb_meter_end(&em.m, (double)em.base, pb_now(), em.pair, 0);
      else if (em.m.shown)
        fputc('\n', stderr);
      em.m.shown = 0;
      if (rc != 0) {
        fprintf(stderr, "probs elo-calibrate: %s vs %s: %s\n", pl[i], pl[j],
                err.msg);
        return 1;
      }
      pairs[k++] = (pb_elo_pair_t){i, j, r.wins, r.draws, r.losses};
      double d = 0, lo = 0, hi = 0;
      pb_elo_diff(r.wins, r.draws, r.losses, &d, &lo, &hi);
      printf("%-14s %-14s %8d %8d %8d %8.3f  %+.0f [%+.0f, %+.0f]\n", pl[i],
             pl[j], r.wins, r.draws, r.losses,
             (r.wins + 0.5 * r.draws) / r.games, d, lo, hi);
      fflush(stdout);
    }
  return 0;
}

/* The table of the joint fit: each player's games, score, rating and
 * interval beside the paper's anchor and gap to the previous player. */
static void print_fit(char pl[][PB_ELOTABLE_SPEC_MAX], int np,
                      const pb_elo_fit_t *fits, double seconds) {
  printf(
      "\nGames took %.2f s. Joint maximum-likelihood fit, %s fixed at "
      "1000:\n\n",
      seconds, pl[0]);
  printf(
      "| player | games | score | Elo (ours) | 95%% interval | paper | "
      "ours - paper | gap to previous: ours / paper |\n");
  printf("|---|---:|---:|---:|---|---:|---:|---|\n");
  int adjusted = 0;
  for (int i = 0; i < np; i++) {
    double paper = NAN, prev_paper = NAN;
    pb_elo_default_anchor(pl[i], &paper);
    if (i > 0) pb_elo_default_anchor(pl[i - 1], &prev_paper);
    char interval[64], pap[32], diff[32], gap[64];
    if (i == 0)
      snprintf(interval, sizeof interval, "(fixed)");
    else
      snprintf(interval, sizeof interval, "[%.0f, %.0f]", fits[i].lo,
               fits[i].hi);
    snprintf(pap, sizeof pap, isfinite(paper) ? "%.0f" : "-", paper);
    snprintf(diff, sizeof diff, isfinite(paper) ? "%+.0f" : "-",
             fits[i].rating - paper);
    if (i == 0)
      snprintf(gap, sizeof gap, "-");
    else if (isfinite(paper) && isfinite(prev_paper))
      snprintf(gap, sizeof gap, "%+.0f / %+.0f",
               fits[i].rating - fits[i - 1].rating, paper - prev_paper);
    else
      snprintf(gap, sizeof gap, "%+.0f / -",
               fits[i].rating - fits[i - 1].rating);
    adjusted |= fits[i].flags & PB_ELO_ADJUSTED;
    printf("| %s%s | %d | %.1f | %.0f | %s | %s | %s | %s |\n", pl[i],
           fits[i].flags & PB_ELO_ADJUSTED ? " *" : "", fits[i].games,
           fits[i].score, fits[i].rating, interval, pap, diff, gap);
  }
  if (adjusted)
    printf(
        "\n* a one-sided pairing (all wins or all losses) was counted as "
        "if half a game had\n  gone the other way, so that the ratings "
        "stay finite.\n");
  printf(
      "\nIntervals: rating +- 1.96 standard errors from the inverse "
      "observed information,\nrelative to %s.\n",
      pl[0]);
}

int pb_cmd_elo_calibrate(int argc, char **argv) {
  enum { O_GAME, O_GAMES, O_SEED, O_THREADS, O_OPEN, O_PLAYERS, O_N };
  const char *val[O_N] = {
      "connect4", "400", "1",
      "0",        "0",   "random,lookahead:1,lookahead:2,lookahead:3"};
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("game", 0, &val[O_GAME]),
      PB_OPTS_VALUE("games", 0, &val[O_GAMES]),
      PB_OPTS_VALUE("seed", 0, &val[O_SEED]),
      PB_OPTS_VALUE("threads", 0, &val[O_THREADS]),
      PB_OPTS_VALUE("opening-random", 0, &val[O_OPEN]),
      PB_OPTS_VALUE("players", 0, &val[O_PLAYERS])};
  const pb_opts_t cl = {.prog = "probs elo-calibrate",
                        .usage = cal_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  const pb_game_t *g = pb_game_by_name(val[O_GAME]);
  if (g == NULL) {
    fprintf(stderr, "probs elo-calibrate: unknown game '%s' (known: %s)\n",
            val[O_GAME], pb_game_names());
    return 2;
  }
  long games, threads, open;
  if (pb_cli_long(val[O_GAMES], 2, 10000000, &games) < 0 ||
      pb_cli_long(val[O_THREADS], 0, PB_MAX_THREADS, &threads) < 0 ||
      pb_cli_long(val[O_OPEN], 0, 1000, &open) < 0) {
    fprintf(stderr,
            "probs elo-calibrate: bad number in --games (2..1e7), "
            "--threads (0..%d) or --opening-random (0..1000)\n",
            PB_MAX_THREADS);
    return 2;
  }
  const char *ss = val[O_SEED];
  unsigned long long seed;
  if (pb_cli_seed(ss, &seed) != 0) {
    fprintf(stderr, "probs elo-calibrate: bad --seed '%s'\n", ss);
    return 2;
  }
  char pl[PB__CAL_MAX][PB_ELOTABLE_SPEC_MAX];
  int np = split_players(val[O_PLAYERS], pl);
  if (np < 2) {
    fprintf(stderr,
            "probs elo-calibrate: --players needs 2..%d distinct specs "
            "of at most %d characters, comma-separated\n",
            PB__CAL_MAX, PB_ELOTABLE_SPEC_MAX - 1);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  for (int i = 0; i < np; i++) {
    pb_agent_t *probe = pb_agent_new(g, pl[i], 0, &err);
    if (probe == NULL) {
      fprintf(stderr, "probs elo-calibrate: --players: %s\n", err.msg);
      return 2;
    }
    pb_agent_destroy(&probe);
  }

  printf("%s: round robin of", g->name);
  for (int i = 0; i < np; i++) printf("%s %s", i ? "," : "", pl[i]);
  printf("; %ld games per pair, seed %llu, opening-random %ld\n\n", games, seed,
         open);
  fflush(stdout);
  int npairs = np * (np - 1) / 2;
  pb_elo_pair_t *pairs = calloc((size_t)npairs, sizeof *pairs);
  if (pairs == NULL) {
    fprintf(stderr, "probs elo-calibrate: out of memory\n");
    return 1;
  }
  double t0 = pb_now();
  if (play_pairs(g, pl, np, games, threads, open, seed, pairs) != 0) {
    free(pairs);
    return 1;
  }
  double seconds = pb_now() - t0;
  pb_elo_fit_t fits[PB__CAL_MAX];
  int rc = pb_elo_fit_joint(np, pairs, npairs, 0, 1000.0, fits, &err);
  free(pairs);
  if (rc != 0) {
    fprintf(stderr, "probs elo-calibrate: %s\n", err.msg);
    return 1;
  }
  print_fit(pl, np, fits, seconds);
  return 0;
}
