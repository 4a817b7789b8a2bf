/* bench_mcts - PUCT MCTS simulations per second (common/search/mcts.h) on Connect
 * Four with real, randomly initialised networks: many searches advanced
 * together (one batched network call per round) against one search at a
 * time (one network call per simulation).
 *
 *   bench_mcts [-n POSITIONS] [-S SIMULATIONS] [-P PARALLEL] [-p]
 *
 * Workload: POSITIONS (default 256) positions of random games, each
 * searched with SIMULATIONS (default 100) simulations, c_puct 1.25, no
 * noise. The networks: configs/connect4-fast.yaml's size (3 conv x 32, 1
 * dense x 64), the priors from the Q network's outputs as logits and the
 * value from V (an AlphaZero network has one trunk and two heads; the
 * cost per evaluation is of the same order). One libtorch thread; rates
 * are per second of CPU time of this process. Figures: simulations/s with
 * PARALLEL (default 256) searches together, and with 1 (the baseline of
 * the ratio), and network rows per simulation. -p prints tab-separated
 * rows for bench/run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "config.h"
#include "game.h"
#include "mcts.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "rng.h"

#include "bench_util.h"

typedef struct {
  pb_neteval_t *ne;
  int A;
  float *q;
} evctx_t;

static int eval(void *ctx, const pb_state_t *s, int n, float *policy,
                float *value, pb_err_t *err) {
  evctx_t *c = ctx;
  pb_evalfn_t f = pb_neteval_fn(c->ne);
  int rc = f.qvalues(f.ctx, s, n, policy, err);
  if (rc == 0) rc = f.value(f.ctx, s, n, value, err);
  return rc;
}

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_mcts: %s: %s\n", what, err->msg);
  exit(1);
}

int main(int argc, char **argv) {
  int n = 256, S = 100, P = 256;
  const char *ns = NULL, *ss = NULL, *ps = NULL;
  const pb_opts_row_t opt_rows[] = {
      PB_OPTS_VALUE(NULL, 'n', &ns), PB_OPTS_VALUE(NULL, 'S', &ss),
      PB_OPTS_VALUE(NULL, 'P', &ps), PB_OPTS_FLAG(NULL, 'p', &parseable)};
  bench_usage_text = "usage: bench_mcts [-n POSITIONS] [-S SIMULATIONS] "
                     "[-P PARALLEL] [-p]\n";
  const pb_opts_t o = {"bench_mcts", bench_usage, opt_rows, PB_OPTS_N(opt_rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-n", ns, 1, 4096, &n);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-S", ss, 1, 100000, &S);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-P", ps, 2, 4096, &P);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_nn_tune_malloc(NULL);
  pb_nn_set_threads(1);
  const pb_game_t *g = pb_game_by_id(PB_GAME_CONNECT4);
  pb_config_t cfg;
  pb_config_defaults(&cfg);
  cfg.model.v = cfg.model.q = (pb_config_net_t){3, 32, 1, 64, 0, "none"};
  pb_nn_spec_t vs, qs;
  pb_model_spec(&cfg, g, 0, &vs);
  pb_model_spec(&cfg, g, 1, &qs);
  pb_err_t err;
  pb_nn_t *v = pb_nn_new(&vs, NULL, "cpu", 11, &err);
  pb_nn_t *q = v ? pb_nn_new(&qs, NULL, "cpu", 12, &err) : NULL;
  if (q == NULL) die("networks", &err);
  pb_state_t *pos = malloc((size_t)n * sizeof *pos);
  float *visits = malloc((size_t)n * g->num_actions * sizeof *visits);
  if (!pos || !visits) return 1;
  pb_rng_t rng;
  pb_rng_seed(&rng, 2024, 0);
  for (int i = 0; i < n; i++) {
    g->reset(&pos[i]);
    int plies = (int)pb_rng_below(&rng, 20);
    for (int k = 0; k < plies; k++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&pos[i], acts), done = 0;
      pb_state_t t = pos[i];
      g->step(&t, acts[pb_rng_below(&rng, (uint32_t)na)], &done);
      if (done) break;
      pos[i] = t;
    }
  }
  double rate[2], rows[2];
  const int par[2] = {P, 1};
  for (int k = 0; k < 2; k++) {
    /* A cache as a searcher keeps; cleared before each run. */
    evctx_t c = {pb_neteval_new(g, 4096, 262144, &err), g->num_actions, NULL};
    if (c.ne == NULL) die("neteval", &err);
    pb_neteval_bind(c.ne, v, q);
    pb_mcts_opts_t o = {S, 1.25, 0.0, 0.0, par[k], 0};
    pb_mcts_t *m = pb_mcts_new(g, &o, &err);
    if (m == NULL) die("mcts", &err);
    pb_mcts_evalfn_t ev = {eval, &c};
    /* One at a time is slow: a quarter of the positions suffice. */
    int cnt = k == 0 ? n : (n / 4 > 0 ? n / 4 : 1);
    double t0 = bench_clock();
    if (pb_mcts_run(m, pos, cnt, &ev, NULL, visits, NULL, &err) != 0)
      die("mcts run", &err);
    double dt = bench_clock() - t0;
    rate[k] = (double)cnt * S / dt;
    pb_neteval_stats_t st;
    pb_neteval_stats(c.ne, &st);
    rows[k] = (double)(st.v_computed + st.q_computed) / ((double)cnt * S);
    pb_mcts_destroy(&m);
    pb_neteval_destroy(&c.ne);
  }
  printf("# bench_mcts: connect4, %d positions, %d simulations, c_puct 1.25, "
         "networks 3x32 conv + 64 dense, CPU time\n", n, S);
  char fig[96], base[64];
  snprintf(base, sizeof base, "P1 (one evaluation per simulation)");
  bench_row("mcts: P1, one evaluation per simulation", rate[1], "sims/s", 0, "");
  snprintf(fig, sizeof fig, "mcts: P%d, batched evaluation", P);
  bench_row(fig, rate[0], "sims/s", rate[0] / rate[1], base);
  printf("# network rows per simulation: %.2f batched, %.2f one at a time "
         "(V and Q rows, after the cache)\n", rows[0], rows[1]);
  pb_nn_destroy(&v);
  pb_nn_destroy(&q);
  free(pos);
  free(visits);
  return 0;
}
