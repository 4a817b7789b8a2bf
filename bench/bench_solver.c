/* bench_solver - speed of the Connect Four solver and of the accuracy
 * measurement, each against a baseline measured in the same run.
 *
 *   bench_solver [-p] [-w] [-s SECONDS]
 *
 * Rows:
 *   - strong solves of late positions (plies 30-36 of seeded random games),
 *     against the plain negamax reference on the same positions;
 *   - weak and strong solves of middle-game positions (plies 16-20): the
 *     weak solve's speed-up;
 *   - the accuracy of a beam-search agent (E=30, M=3, the ~105K-parameter
 *     networks of configs/connect4-fast.yaml, untrained) on the shipped
 *     test set, answered in batches (pb_agent_act_many) against the same
 *     agent asked one position at a time.
 * -p prints tab-separated rows for bench/run; -w uses wall time instead
 * of this process's CPU time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "bench_util.h"
#include "config.h"
#include "connect4_solver.h"
#include "game.h"
#include "learn.h"
#include "nn.h"
#include "rng.h"
#include "testset.h"

/* n unfinished positions at plies lo..hi from seeded random games. */
static int positions(pb_state_t *out, int n, int lo, int hi, uint64_t seed) {
  const pb_game_t *g = &pb_game_connect4;
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  int k = 0;
  while (k < n) {
    int target = lo + (int)pb_rng_below(&rng, (uint32_t)(hi - lo + 1));
    pb_state_t s;
    g->reset(&s);
    int done = 0, ply = 0;
    while (!done && ply < target) {
      uint8_t a[PB_MAX_ACTIONS];
      int na = g->legal(&s, a);
      g->step(&s, a[pb_rng_below(&rng, (uint32_t)na)], &done);
      ply++;
    }
    float r;
    if (!done && !g->terminal(&s, &r)) out[k++] = s;
  }
  return k;
}

/* Solves every position once per round, each round with a fresh table
 * (made outside the timed part), until `seconds` of the clock have been
 * spent solving; returns positions per second and a checksum of the
 * scores. */
static double solve_rate(const pb_state_t *ps, int n, int mode, double seconds,
                         long *sum) {
  long total = 0, done = 0;
  double spent = 0;
  while (spent < seconds) {
    pb_c4solver_t *s = pb_c4solver_new(20, NULL);
    if (s == NULL) return 0;
    double t0 = bench_clock();
    for (int i = 0; i < n; i++) {
      total += mode == 0   ? pb_c4solver_solve_ref(ps[i].w[0], ps[i].w[1])
               : mode == 1 ? pb_c4solver_solve(s, ps[i].w[0], ps[i].w[1], 0)
                           : pb_c4solver_solve(s, ps[i].w[0], ps[i].w[1], 1);
      done++;
    }
    spent += bench_clock() - t0;
    pb_c4solver_destroy(&s);
  }
  *sum = total;
  return (double)done / spent;
}

int main(int argc, char **argv) {
  double seconds = 1.0;
  const char *ss = NULL;
  const pb_opts_row_t rows[] = {PB_OPTS_FLAG(NULL, 'p', &parseable),
                                PB_OPTS_FLAG(NULL, 'w', &use_wall),
                                PB_OPTS_VALUE(NULL, 's', &ss)};
  bench_usage_text = "usage: bench_solver [-p] [-w] [-s SECONDS]\n";
  const pb_opts_t o = {"bench_solver", bench_usage, rows, PB_OPTS_N(rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&o, "-s", ss, 0.01, 3600, &seconds);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_nn_set_threads(1);
  pb_nn_tune_malloc(NULL);
  const char *clk = use_wall ? "wall" : "CPU";

  /* late positions: the solver against plain negamax */
  enum { NL = 64, NM = 16 };
  pb_state_t late[NL], mid[NM];
  positions(late, NL, 30, 36, 1);
  long s_ref = 0, s_sol = 0, s_weak = 0, s_strong = 0;
  double ref = solve_rate(late, NL, 0, seconds, &s_ref);
  double sol = solve_rate(late, NL, 1, seconds, &s_sol);
  if (!parseable)
    printf("# %s time; late positions: scores checksum %ld (reference %ld "
           "per round)\n",
           clk, s_sol, s_ref);
  bench_row("solver: late positions (plies 30-36), strong", sol, "positions/s",
      ref > 0 ? sol / ref : 0, "plain negamax, same positions");
  bench_row("solver: plain negamax reference", ref, "positions/s", 0, "");

  /* middle game: weak against strong */
  positions(mid, NM, 16, 20, 2);
  double strong = solve_rate(mid, NM, 1, seconds, &s_strong);
  double weak = solve_rate(mid, NM, 2, seconds, &s_weak);
  bench_row("solver: middle game (plies 16-20), weak", weak, "positions/s",
      strong > 0 ? weak / strong : 0, "strong solves, same positions");
  bench_row("solver: middle game (plies 16-20), strong", strong, "positions/s", 0,
      "");

  /* accuracy: a beam agent in batches against one position at a time */
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t cfg;
  pb_config_defaults(&cfg);
  cfg.model.v = cfg.model.q = (pb_config_net_t){3, 32, 1, 64, 0, "none"};
  snprintf(cfg.model.device, sizeof cfg.model.device, "cpu");
  char path[64];
  snprintf(path, sizeof path, "/tmp/bench_solver.%d.pbck", (int)getpid());
  pb_learn_t *l = pb_learn_new(&cfg, &err);
  pb_testset_t *ts = pb_testset_builtin(&pb_game_connect4, &err);
  if (l == NULL || ts == NULL || pb_learn_save(l, path, NULL, 0, &err) != 0) {
    fprintf(stderr, "bench_solver: %s\n", err.msg);
    return 1;
  }
  pb_learn_destroy(&l);
  char spec[128];
  snprintf(spec, sizeof spec, "beam:%s,E=30,M=3", path);
  /* Two agents: each has its own evaluation cache, so the second
   * measurement does not start from the first one's warm cache. */
  pb_agent_t *a = pb_agent_new(&pb_game_connect4, spec, 1, &err);
  pb_agent_t *a1 = a ? pb_agent_new(&pb_game_connect4, spec, 1, &err) : NULL;
  if (a == NULL || a1 == NULL) {
    fprintf(stderr, "bench_solver: %s\n", err.msg);
    pb_agent_destroy(&a);
    return 1;
  }
  int n = (int)pb_testset_count(ts);
  int *mv = malloc((size_t)n * sizeof *mv), *mv1 = malloc((size_t)n * sizeof *mv1);
  double t0 = bench_clock();
  pb_agent_act_many(a, pb_testset_state(ts, 0), n, 1, mv, &err);
  double batched = n / (bench_clock() - t0);
  int m = n / 4; /* one at a time is slow: a quarter of the set */
  t0 = bench_clock();
  for (int i = 0; i < m; i++)
    pb_agent_act_many(a1, pb_testset_state(ts, (size_t)i), 1, 1, &mv1[i], &err);
  double single = m / (bench_clock() - t0);
  int same = 1;
  for (int i = 0; i < m; i++) same &= mv[i] == mv1[i];
  if (!parseable)
    printf("# beam agent: the same moves batched and one by one: %s\n",
           same ? "yes" : "no (floating-point ties)");
  bench_row("accuracy: beam E=30 M=3 agent, batched", batched, "positions/s",
      single > 0 ? batched / single : 0, "one position per call");
  bench_row("accuracy: beam agent, one position per call", single, "positions/s", 0,
      "");
  pb_agent_destroy(&a);
  pb_agent_destroy(&a1);
  pb_testset_destroy(&ts);
  free(mv);
  free(mv1);
  unlink(path);
  return 0;
}
