/* bench_td_league.c - the leagues of seed 004 (Runarsson & Jonsson 2007)
 * over algorithm td checkpoints: groups of players (one group per
 * training ply, one player per seed) play a round robin at a fixed play
 * depth D, every player against every player of the other groups once
 * with each colour (the paper's protocol: the players are deterministic),
 * and each player plays the paper's fixed weighted piece counter
 * (alphabeta:D, which breaks ties at random) N games, half with each
 * colour. Prints markdown tables of wins (a draw counts half), one per
 * depth: the rows' wins against the columns, and against the heuristic.
 *
 *   bench_td_league [--game G] [--depths 1,2,3] [--baseline-games N]
 *                   [--seed S] [--weights] NAME=CKPT,CKPT,... NAME=CKPT,...
 *
 * Depth 0 is each player at the ply it was trained at (the paper's Table
 * I). --weights (Othello) first prints each group's mean learned WPC, scaled
 * to a mean corner weight of 1.
 *
 * Counts, not times: the tables depend only on the checkpoints and the
 * seed. docs/baselines.md ("TD(0) n-ply learning") has the commands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "bench_util.h"
#include "game.h"
#include "linear.h"
#include "match.h"
#include "model.h"
#include "rng.h"
#include "tdnet.h"

#define MAX_GROUPS 8
#define MAX_PLAYERS 16

typedef struct {
  char name[32];
  int n;
  char path[MAX_PLAYERS][1024];
  pb_agent_t *agent[MAX_PLAYERS];
} group_t;

static int parse_group(const char *arg, group_t *gr) {
  const char *eq = strchr(arg, '=');
  if (eq == NULL || eq == arg || (size_t)(eq - arg) >= sizeof gr->name)
    return -1;
  memcpy(gr->name, arg, (size_t)(eq - arg));
  gr->name[eq - arg] = '\0';
  for (const char *p = eq + 1; *p && gr->n < MAX_PLAYERS;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0 || len >= sizeof gr->path[0]) return -1;
    memcpy(gr->path[gr->n], p, len);
    gr->path[gr->n++][len] = '\0';
    p += len + (c != NULL);
  }
  return gr->n > 0 ? 0 : -1;
}

/* One game; the first player's score (1, 0.5, 0). */
static double play(const pb_game_t *g, pb_agent_t *first, pb_agent_t *second,
                   pb_rng_t *rng) {
  pb_err_t err;
  int outcome = 0;
  if (pb_match_game(g, first, second, rng, 0, 0, &outcome, NULL, NULL, &err) !=
      0) {
    fprintf(stderr, "bench_td_league: %s\n", err.msg);
    exit(1);
  }
  return outcome > 0 ? 1.0 : outcome == 0 ? 0.5 : 0.0;
}

static void league(const pb_game_t *g, group_t *gr, int ng, int depth,
                   int base_games, uint64_t seed) {
  pb_err_t err;
  for (int a = 0; a < ng; a++)
    for (int i = 0; i < gr[a].n; i++) {
      char spec[1100];
      if (depth > 0)
        snprintf(spec, sizeof spec, "td:%s,depth=%d", gr[a].path[i], depth);
      else /* each at the ply it was trained at */
        snprintf(spec, sizeof spec, "td:%s", gr[a].path[i]);
      if ((gr[a].agent[i] = pb_agent_new(g, spec, 1, &err)) == NULL) {
        fprintf(stderr, "bench_td_league: %s\n", err.msg);
        exit(1);
      }
    }
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, (uint64_t)depth);
  double w[MAX_GROUPS][MAX_GROUPS] = {{0}};
  for (int a = 0; a < ng; a++)
    for (int b = a + 1; b < ng; b++)
      for (int i = 0; i < gr[a].n; i++)
        for (int j = 0; j < gr[b].n; j++) {
          double s1 = play(g, gr[a].agent[i], gr[b].agent[j], &rng);
          double s2 = 1.0 - play(g, gr[b].agent[j], gr[a].agent[i], &rng);
          w[a][b] += s1 + s2;
          w[b][a] += 2.0 - s1 - s2;
        }
  char at[32] = "its trained ply";
  if (depth > 0) snprintf(at, sizeof at, "depth %d", depth);
  printf(
      "\nplay at %s: wins of the row's players against the column's "
      "(each pair once with each colour)\n\n| trained at |",
      at);
  for (int b = 0; b < ng; b++) printf(" %s |", gr[b].name);
  printf(" sum | of |\n|---|");
  for (int b = 0; b <= ng + 1; b++) printf("---|");
  printf("\n");
  for (int a = 0; a < ng; a++) {
    double sum = 0;
    int games = 0;
    printf("| %s |", gr[a].name);
    for (int b = 0; b < ng; b++) {
      if (a == b) {
        printf(" - |");
        continue;
      }
      printf(" %g |", w[a][b]);
      sum += w[a][b];
      games += 2 * gr[a].n * gr[b].n;
    }
    printf(" %g | %d |\n", sum, games);
  }
  if (base_games > 0 && depth > 0) {
    char spec[32];
    snprintf(spec, sizeof spec, "alphabeta:%d", depth);
    pb_agent_t *h = pb_agent_new(g, spec, 1, &err);
    if (h == NULL) {
      fprintf(stderr, "bench_td_league: %s\n", err.msg);
      exit(1);
    }
    printf(
        "\nplay depth %d: wins against the fixed WPC (%s), %d games per "
        "player\n\n",
        depth, spec, base_games);
    for (int a = 0; a < ng; a++) {
      double s = 0;
      for (int i = 0; i < gr[a].n; i++)
        for (int k = 0; k < base_games; k++) {
          pb_agent_reseed(h, pb_match_seed(seed, k, 1) ^ (uint64_t)i);
          s += k % 2 == 0 ? play(g, gr[a].agent[i], h, &rng)
                          : 1.0 - play(g, h, gr[a].agent[i], &rng);
        }
      printf("| %s | %g of %d |\n", gr[a].name, s, gr[a].n * base_games);
    }
    pb_agent_destroy(&h);
  }
  fflush(stdout);
  for (int a = 0; a < ng; a++)
    for (int i = 0; i < gr[a].n; i++) pb_agent_destroy(&gr[a].agent[i]);
}

/* Othello: each group's mean weights, scaled so that the mean corner
 * weight is 1 (the paper's Fig. 3 has corners 1.00). */
static void print_weights(const pb_game_t *g, group_t *gr, int ng) {
  for (int a = 0; a < ng; a++) {
    double w[64] = {0};
    for (int i = 0; i < gr[a].n; i++) {
      pb_err_t err;
      pb_linear_t lin;
      pb_model_t *m = pb_model_open(gr[a].path[i], "cpu", NULL, &err);
      if (m == NULL || pb_linear_init(&lin, g, &err) != 0 ||
          pb_tdnet_get(pb_model_v(m), &lin, &err) != 0) {
        fprintf(stderr, "bench_td_league: %s\n", err.msg);
        exit(1);
      }
      pb_model_destroy(&m);
      for (int k = 0; k < 64; k++) w[k] += lin.w[k] / gr[a].n;
    }
    double c = (w[0] + w[7] + w[56] + w[63]) / 4;
    printf("\n%s: mean weights / mean corner weight (%.3f)\n\n", gr[a].name, c);
    for (int r = 0; r < 8; r++) {
      printf("|");
      for (int k = 0; k < 8; k++) printf(" %5.2f |", w[r * 8 + k] / c);
      printf("\n");
    }
  }
}

int main(int argc, char **argv) {
  const pb_game_t *g = &pb_game_othello;
  int depths[16], nd = 0, base_games = 0, seed = 1, weights = 0;
  static group_t gr[MAX_GROUPS];
  int ng = 0, npos = 0;
  const char *game = NULL, *dl = NULL, *bg = NULL, *ss = NULL;
  const char *groups[MAX_GROUPS];
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("game", 0, &game), PB_OPTS_VALUE("depths", 0, &dl),
      PB_OPTS_VALUE("baseline-games", 0, &bg), PB_OPTS_VALUE("seed", 0, &ss),
      PB_OPTS_FLAG("weights", 0, &weights)};
  bench_usage_text = "usage: bench_td_league [--game G] [--depths 1,2,3] "
                     "[--baseline-games N] [--seed S] [--weights] "
                     "NAME=CKPT,CKPT,... ...\n";
  const pb_opts_t o = {"bench_td_league", bench_usage, rows, PB_OPTS_N(rows),
                       groups, MAX_GROUPS, &npos};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK && game != NULL && (g = pb_game_by_name(game)) == NULL)
    rc = pb_opts_fail(&o, "unknown game '%s'", game);
  for (const char *p = dl; rc == PB_OPTS_OK && p != NULL && *p && nd < 16;) {
    char *end;
    long d = strtol(p, &end, 10);
    if (end == p || d < 0 || d > 16)
      rc = pb_opts_fail(&o, "--depths wants depths 0..16, not '%s'", dl);
    depths[nd++] = (int)d;
    p = *end == ',' ? end + 1 : end;
  }
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&o, "--baseline-games", bg, 0, 100000, &base_games);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "--seed", ss, 0, 1 << 30, &seed);
  if (rc == PB_OPTS_OK && npos < 1)
    rc = pb_opts_fail(&o, "a group NAME=CKPT,CKPT,... is needed");
  for (; rc == PB_OPTS_OK && ng < npos; ng++)
    if (parse_group(groups[ng], &gr[ng]) != 0)
      rc = pb_opts_fail(&o, "bad group '%s' (NAME=CKPT,CKPT,...)", groups[ng]);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  if (weights && g->id == PB_GAME_OTHELLO) print_weights(g, gr, ng);
  if (nd == 0) depths[nd++] = 2;
  for (int k = 0; k < nd; k++)
    league(g, gr, ng, depths[k], base_games, (uint64_t)seed);
  return 0;
}
