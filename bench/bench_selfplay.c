/* bench_selfplay - self-play throughput (positions/s) on Connect Four with
 * a real, randomly initialised Q network, through common/train/selfplay.h and
 * common/nn/neteval.h as an actor runs them.
 *
 *   bench_selfplay [-e EPISODES] [-r REPS] [-m small,large] [-t THREADS]
 *                  [-i ITEM] [-P fp32[,bf16]] [-p] [-w]
 *
 * One pass plays EPISODES (default 512) episodes with eps 0.25, alpha 0.5
 * and a cold evaluation cache (an actor clears it when a new Q arrives,
 * i.e. every iteration). Figures, per model size:
 *
 *   P1          pb_selfplay_run with parallel 1: one game at a time, one
 *               network call per move (the baseline of every ratio);
 *   P256+cache  all episodes in one call with parallel 256, default cache;
 *   P256 nocache  the same with cache_entries 0;
 *   items of I  parallel 256, but called once per I episodes (-i I,
 *               default 16), as the actor and `probs train --inproc` do
 *               with net.item_episodes = I: at most I games share a batch;
 *   ..., bf16   P256 + cache and items of I with Q in bf16
 *               (pb_nn_set_precision; -P fp32 leaves them out), each with
 *               its ratio against the same in fp32, measured in turns.
 *
 * All configurations play the same episodes (same seeds; episode i uses
 * its own RNG stream whatever `parallel` is). Each figure is the best of
 * REPS passes (P1: one pass). Rates are per second of CPU time of this
 * process, as in bench_search (-w: wall-clock time); the networks run on
 * one libtorch thread. Rows: figure, value, unit, ratio, baseline; detail
 * lines start with '#'; -p prints rows tab-separated for bench/run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "episodes.h"
#include "game.h"
#include "learn.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "selfplay.h"

#include "bench_util.h"

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_selfplay: %s: %s\n", what, err->msg);
  exit(1);
}

typedef struct {
  const pb_game_t *g;
  pb_nn_t *q;
  int episodes, eval_batch, max_turns;
  uint32_t cache_entries;
  double eps, alpha;
  pb_episodes_t out;
  int bf16; /* -P: also in bf16 */
  int item; /* -i: episodes per item */
} ctx_t;

/* Positions per second of one configuration, best of reps passes. Each
 * pass plays c->episodes episodes in calls of `per_call` episodes.
 * *positions gets the number of positions of one pass. */
static double measure(ctx_t *c, int parallel, uint32_t cache, int per_call,
                      int reps, size_t *positions) {
  pb_err_t err;
  pb_selfplay_opts_t o = {parallel, c->max_turns, c->eps, c->alpha, 1.0};
  pb_selfplay_t *sp = pb_selfplay_new(c->g, &o, &err);
  if (sp == NULL) die("selfplay", &err);
  pb_neteval_t *ne = pb_neteval_new(c->g, c->eval_batch, cache, &err);
  if (ne == NULL) die("neteval", &err);
  pb_evalfn_t fn = pb_neteval_fn(ne);
  double best = 1e300;
  for (int r = 0; r < reps; r++) {
    pb_neteval_bind(ne, NULL, c->q);
    pb_episodes_clear(&c->out);
    double t0 = bench_clock();
    for (int first = 0; first < c->episodes; first += per_call) {
      int cnt = c->episodes - first < per_call ? c->episodes - first : per_call;
      if (pb_selfplay_run(sp, cnt, 77, (uint64_t)first, &fn, 0, &c->out,
                          &err) != 0)
        die("pb_selfplay_run", &err);
    }
    double dt = bench_clock() - t0;
    if (dt < best) best = dt;
  }
  *positions = c->out.n_states;
  pb_neteval_destroy(&ne);
  pb_selfplay_destroy(&sp);
  return (double)c->out.n_states / best;
}

static void bench_model(ctx_t *c, const char *name, int reps) {
  char fig[96], base[64];
  size_t n1, n256, n256n, n16;
  snprintf(base, sizeof base, "%s P1", name);
  double p1 = measure(c, 1, c->cache_entries, c->episodes, 1, &n1);
  snprintf(fig, sizeof fig, "selfplay %s: P1 + cache", name);
  bench_row(fig, p1, "positions/s", 0, "");
  /* Alternate the fast configurations so that they meet the same load. */
  double p256 = 0, p256n = 0, p16 = 0, b256 = 0, b16 = 0;
  size_t nb;
  for (int r = 0; r < reps; r++) {
    double x = measure(c, 256, c->cache_entries, c->episodes, 1, &n256);
    double y = measure(c, 256, 0, c->episodes, 1, &n256n);
    double z = measure(c, 256, c->cache_entries, c->item, 1, &n16);
    if (x > p256) p256 = x;
    if (y > p256n) p256n = y;
    if (z > p16) p16 = z;
    if (!c->bf16) continue;
    pb_nn_set_precision(c->q, PB_NN_BF16, NULL);
    x = measure(c, 256, c->cache_entries, c->episodes, 1, &nb);
    z = measure(c, 256, c->cache_entries, c->item, 1, &nb);
    pb_nn_set_precision(c->q, PB_NN_FP32, NULL);
    if (x > b256) b256 = x;
    if (z > b16) b16 = z;
  }
  snprintf(fig, sizeof fig, "selfplay %s: P256 + cache", name);
  bench_row(fig, p256, "positions/s", p256 / p1, base);
  snprintf(fig, sizeof fig, "selfplay %s: P256, no cache", name);
  bench_row(fig, p256n, "positions/s", p256n / p1, base);
  snprintf(fig, sizeof fig, "selfplay %s: items of %d episodes", name, c->item);
  bench_row(fig, p16, "positions/s", p16 / p1, base);
  if (c->bf16) {
    snprintf(fig, sizeof fig, "selfplay %s: P256 + cache, bf16", name);
    snprintf(base, sizeof base, "%s P256 + cache (fp32)", name);
    bench_row(fig, b256, "positions/s", b256 / p256, base);
    snprintf(fig, sizeof fig, "selfplay %s: items of %d, bf16", name, c->item);
    snprintf(base, sizeof base, "%s items of %d (fp32)", name, c->item);
    bench_row(fig, b16, "positions/s", b16 / p16, base);
  }
  printf(
      "# %s: %d episodes per pass, positions per pass: P1 %zu, P256 %zu, "
      "P256 no cache %zu, items of %d %zu (equal: same games)\n",
      name, c->episodes, n1, n256, n256n, c->item, n16);
}

int main(int argc, char **argv) {
  int episodes = 512, reps = 5, threads = 1, bf16 = 1;
  const char *models = "small,large";
  int item = 16;
  const char *es = NULL, *rs = NULL, *ts = NULL, *is = NULL, *ps = NULL;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 'e', &es), PB_OPTS_VALUE(NULL, 'r', &rs),
      PB_OPTS_VALUE(NULL, 'm', &models), PB_OPTS_VALUE(NULL, 't', &ts),
      PB_OPTS_VALUE(NULL, 'i', &is), PB_OPTS_VALUE(NULL, 'P', &ps),
      PB_OPTS_FLAG(NULL, 'p', &parseable), PB_OPTS_FLAG(NULL, 'w', &use_wall)};
  bench_usage_text =
      "usage: bench_selfplay [-e episodes 1..100000] [-r reps 1..100] "
      "[-m small,large] [-t threads] [-i item-episodes] [-P fp32[,bf16]] "
      "[-p] [-w]\n";
  const pb_opts_t o = {"bench_selfplay", bench_usage, rows, PB_OPTS_N(rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&o, "-e", es, 1, 100000, &episodes);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-r", rs, 1, 100, &reps);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-t", ts, 1, 64, &threads);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-i", is, 1, 100000, &item);
  if (rc == PB_OPTS_OK && ps != NULL && bench_parse_prec(ps, &bf16) != 0)
    rc = pb_opts_fail(&o, "-P wants fp32 or fp32,bf16, not '%s'", ps);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_nn_tune_malloc(NULL);
  pb_nn_set_threads(threads);
  const pb_game_t *g = &pb_game_connect4;
  static const struct {
    const char *name;
    int conv, ch, dense, units;
  } sizes[] = {{"small", 2, 16, 1, 12}, {"large", 3, 32, 1, 64}};
  printf(
      "# bench_selfplay: connect4, %d episodes per pass, best of %d, %d "
      "libtorch thread(s), %s time\n",
      episodes, reps, threads, use_wall ? "wall-clock" : "CPU");
  for (size_t m = 0; m < sizeof sizes / sizeof sizes[0]; m++) {
    if (strstr(models, sizes[m].name) == NULL) continue;
    pb_config_t cfg;
    pb_err_t err;
    pb_config_defaults(&cfg);
    cfg.model.q = (pb_config_net_t){sizes[m].conv,  sizes[m].ch, sizes[m].dense,
                                    sizes[m].units, 0,           "none"};
    pb_nn_spec_t qs;
    pb_model_spec(&cfg, g, 1, &qs);
    ctx_t c = {.g = g,
               .episodes = episodes,
               .eval_batch = pb_learn_eval_batch(
                   cfg.search.parallel, cfg.search.expansions, g->num_actions,
                   cfg.train.selfplay_parallel),
               .max_turns = cfg.train.max_turns,
               .cache_entries = (uint32_t)cfg.search.cache_entries,
               .eps = cfg.train.eps,
               .alpha = cfg.train.alpha,
               .bf16 = bf16,
               .item = item};
    pb_episodes_init(&c.out);
    if ((c.q = pb_nn_new(&qs, NULL, "cpu", 12, &err)) == NULL)
      die("Q network", &err);
    printf("# %s: Q %ld params, cache %u entries, eps %g, alpha %g\n",
           sizes[m].name, pb_nn_param_count(c.q), c.cache_entries, c.eps,
           c.alpha);
    bench_model(&c, sizes[m].name, reps);
    pb_nn_destroy(&c.q);
    pb_episodes_free(&c.out);
  }
  return 0;
}
