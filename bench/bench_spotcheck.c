/* bench_spotcheck - what the learner's spot check of search results costs,
 * and how often an honest searcher disagrees with it (common/train/spotcheck.h).
 *
 *   bench_spotcheck (-c CKPT | -f CONFIG) [-e EPISODES] [-s SHARE]
 *                   [-r ROUNDS] [-S KEY=VALUE]... [-P SEARCH,CHECK] [-p]
 *
 * Workload: the distinct positions of EPISODES (default 200) self-play
 * games played with the checkpoint's Q as an actor plays them (the run's
 * eps, alpha, temperature), searched with the checkpoint's own config:
 *
 *   searcher    the positions in work items of net.item_states, through
 *               one evaluator whose cache lives across items, with
 *               search.parallel searches at once, by the config's
 *               search.algorithm (beam or abnet): what a searcher sends;
 *   spot check  ROUNDS (default 20) independent draws of SHARE (default
 *               0.01) of each item's positions (pb_spot_sample), each
 *               draw searched again in one pb_spot_search call, as the
 *               learner's check job does with the items it has received.
 *
 * Figures: the searcher's states/s; the check's CPU time as a share of
 * the searcher's for the same items (the ratio); and, over every position
 * checked, how many differ from the searcher's targets by more than
 * 0 (bit-exact), 1e-4, 1e-3, 0.01, 0.05 and 0.1 on some legal action, and
 * the largest difference. Those are the honest disagreement rates that
 * net.spot_check_tolerance and net.spot_check_max_disagree are set from.
 *
 * -S overrides a key of the config (search.algorithm=abnet, say; up to 16).
 * -P gives the precision (fp32 or bf16, common/nn/nn.h) the searcher's and
 * the check's networks compute in (default fp32,fp32): what a learner's
 * check of searchers of another precision sees.
 * With -f the networks are those of the config, randomly initialised. Times are CPU time of this process; one libtorch
 * thread (model.threads of the config). -p prints tab-separated rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abtargets.h"
#include "beam_search.h"
#include "config.h"
#include "episodes.h"
#include "game.h"
#include "learn.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "precision.h"
#include "rng.h"
#include "selfplay.h"
#include "spotcheck.h"

#include "bench_util.h"

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_spotcheck: %s: %s\n", what, err->msg);
  exit(1);
}

static int cmp_state(const void *a, const void *b) {
  return memcmp(a, b, sizeof(pb_state_t));
}

/* The networks: the checkpoint's (-c CKPT, then *model is set), or those
 * of the config, randomly initialised (-f CONFIG, then *own_v and *own_q
 * are). Fills *cfg and returns the game; dies on an error. */
static const pb_game_t *open_nets(const char *ckpt, const char *cfg_path,
                                  pb_config_t *cfg, pb_model_t **model,
                                  pb_nn_t **own_v, pb_nn_t **own_q) {
  pb_err_t err;
  const pb_game_t *g;
  if (ckpt) {
    *model = pb_model_open(ckpt, "cpu", cfg, &err);
    if (*model == NULL) die(ckpt, &err);
    g = pb_model_game(*model);
  } else {
    pb_config_defaults(cfg);
    if (pb_config_load_file(cfg, cfg_path, &err) != 0 ||
        pb_config_check(cfg, &err) != 0)
      die(cfg_path, &err);
    g = pb_game_by_name(cfg->game);
    if (pb_model_nets(cfg, g, "cpu", "networks", own_v, own_q, &err) != 0)
      die("networks", &err);
  }
  return g;
}

/* The distinct positions of `episodes` self-play games played through fn
 * as an actor plays them, in a random order (rng, seeded here): the
 * learner hands positions out in the order it found them, and a random
 * order is closer to that than the sorted one. The caller frees the
 * array; NULL when out of memory. Dies on an error. */
static pb_state_t *selfplay_positions(const pb_game_t *g,
                                      const pb_config_t *cfg,
                                      const pb_evalfn_t *fn, int episodes,
                                      pb_rng_t *rng, size_t *count) {
  pb_err_t err;
  pb_selfplay_opts_t so = {.parallel = cfg->train.selfplay_parallel,
                           .max_turns = cfg->train.max_turns,
                           .eps = cfg->train.eps,
                           .alpha = cfg->train.alpha,
                           .temperature = cfg->train.selfplay_temperature};
  pb_selfplay_t *sp = pb_selfplay_new(g, &so, &err);
  if (sp == NULL) die("selfplay", &err);
  pb_episodes_t eps;
  pb_episodes_init(&eps);
  if (pb_selfplay_run(sp, episodes, (uint64_t)cfg->seed + 77, 0, fn, 0, &eps,
                      &err) != 0)
    die("selfplay", &err);
  pb_state_t *pos = malloc(eps.n_states * sizeof *pos);
  if (pos != NULL) {
    memcpy(pos, eps.states, eps.n_states * sizeof *pos);
    qsort(pos, eps.n_states, sizeof *pos, cmp_state);
    size_t n = 0;
    for (size_t i = 0; i < eps.n_states; i++)
      if (n == 0 || memcmp(&pos[n - 1], &pos[i], sizeof *pos))
        pos[n++] = pos[i];
    pb_rng_seed(rng, 12345, 0);
    for (size_t i = n; i > 1; i--) {
      size_t j = pb_rng_below(rng, (uint32_t)i);
      pb_state_t t = pos[i - 1];
      pos[i - 1] = pos[j];
      pos[j] = t;
    }
    *count = n;
  }
  pb_selfplay_destroy(&sp);
  pb_episodes_free(&eps);
  return pos;
}

/* The searcher: the n positions in work items of `item` states through
 * fn, ne's function (ne bound to v and q again first, which clears its
 * caches), search.parallel searches at once; the targets into theirs
 * (n x A). Returns the CPU seconds; dies on an error. */
static double search_items(const pb_game_t *g, const pb_config_t *cfg,
                           pb_neteval_t *ne, const pb_evalfn_t *fn, pb_nn_t *v,
                           pb_nn_t *q, const pb_state_t *pos, size_t n,
                           size_t item, float *theirs) {
  pb_err_t err;
  const int A = g->num_actions;
  pb_beam_t *beam = NULL;
  pb_abtargets_t *abt = NULL;
  if (pb_config_abnet_targets(cfg))
    abt = pb_abtargets_new(g, cfg->search.max_depth,
                           (uint64_t)cfg->search.nodes, cfg->search.parallel,
                           &err);
  else
    beam = pb_beam_new(g, cfg->search.expansions, cfg->search.max_depth,
                       cfg->search.parallel, &err);
  if (beam == NULL && abt == NULL) die("search", &err);
  pb_neteval_bind(ne, v, q);
  double t0 = bench_clock();
  for (size_t f = 0; f < n; f += item) {
    int cnt = (int)(n - f < item ? n - f : item);
    float *out = theirs + f * A;
    if ((abt ? pb_abtargets_run(abt, pos + f, cnt, fn, out, &err)
             : pb_beam_run(beam, pos + f, cnt, fn, out, &err)) != 0)
      die("search", &err);
  }
  double t_search = bench_clock() - t0;
  pb_beam_destroy(&beam);
  pb_abtargets_destroy(&abt);
  return t_search;
}

static const double tol[] = {0.0, 1e-4, 1e-3, 0.01, 0.05, 0.1};
enum { NT = sizeof tol / sizeof tol[0] };

/* What the spot checks see, and the scratch arrays they use (n each, mine
 * n x A). */
typedef struct {
  pb_spot_tally_t t[NT]; /* one per tolerance tol[] */
  double t_check;        /* CPU seconds in pb_spot_search */
  pb_state_t *sample;
  uint32_t *sidx, *which;
  float *mine;
} checks_t;

/* The spot checks: `rounds` independent draws of `share` of each item's
 * positions, each draw searched again in one pb_spot_search call and
 * compared with theirs. Dies on an error. */
static void spot_rounds(const pb_game_t *g, const pb_config_t *cfg, int batch,
                        pb_nn_t *v, pb_nn_t *q, const pb_state_t *pos, size_t n,
                        size_t item, const float *theirs, int rounds,
                        double share, pb_rng_t *rng, checks_t *c) {
  pb_err_t err;
  const int A = g->num_actions;
  pb_spot_t *spot = pb_spot_new(
      g, cfg->search.expansions, cfg->search.max_depth, cfg->search.parallel,
      batch, (uint32_t)cfg->search.cache_entries, &err);
  if (spot == NULL) die("spot check", &err);
  if (pb_config_abnet_targets(cfg) &&
      pb_spot_set_abnet(spot, (uint64_t)cfg->search.nodes, &err) != 0)
    die("spot check", &err);
  memset(c->t, 0, sizeof c->t);
  c->t_check = 0;
  for (int r = 0; r < rounds; r++) {
    size_t k = 0;
    for (size_t f = 0; f < n; f += item) {
      size_t cnt = n - f < item ? n - f : item;
      /* Distinct positions, each as frequent: a uniform draw. */
      size_t m = pb_spot_sample(rng, cnt, NULL, cnt, cnt, share, c->sidx, cnt);
      for (size_t i = 0; i < m; i++) {
        c->which[k] = (uint32_t)(f + c->sidx[i]);
        c->sample[k++] = pos[f + c->sidx[i]];
      }
    }
    double t0 = bench_clock();
    if (pb_spot_search(spot, v, q, c->sample, (int)k, c->mine, &err) != 0)
      die("spot check", &err);
    c->t_check += bench_clock() - t0;
    for (size_t i = 0; i < k; i++) {
      const float *mine = c->mine + i * A;
      const float *th = theirs + (size_t)c->which[i] * A;
      float d = pb_spot_diff(g, &c->sample[i], mine, th);
      float b = pb_spot_bias(g, &c->sample[i], mine, th);
      for (int j = 0; j < NT; j++) pb_spot_count(&c->t[j], d, b, tol[j]);
    }
  }
  pb_spot_destroy(&spot);
}

/* The figures. */
static void print_rows(double n, double t_search, int rounds,
                       const checks_t *c) {
  const pb_spot_tally_t *t = c->t;
  const double t_check = c->t_check;
  bench_row("searcher", n / t_search, "states/s", 0, "");
  double per_round = t_check / rounds;
  bench_row("spot check CPU, share of search CPU", 100.0 * per_round / t_search, "%",
      0, "");
  bench_row("spot check per position vs searcher", t[0].checked / t_check, "states/s",
      (t[0].checked / t_check) / (n / t_search), "searcher");
  for (int j = 0; j < NT; j++) {
    char fig[64];
    snprintf(fig, sizeof fig, "honest disagreement, diff > %g", tol[j]);
    bench_row(fig, 100.0 * t[j].disagree / (t[j].checked ? t[j].checked : 1), "%", 0,
        "");
  }
  bench_row("largest difference", 1e6 * t[0].max_diff, "x 1e-6", 0, "");
  bench_row("mean bias (theirs - mine)", 1e6 * pb_spot_mean_bias(&t[0]),
            "x 1e-6", 0, "");
}

int main(int argc, char **argv) {
  const char *ckpt = NULL, *cfg_path = NULL;
  int episodes = 200, rounds = 20;
  double share = 0.01;
  const char *sets[16];
  int nsets = 0;
  int prec[2] = {PB_NN_FP32, PB_NN_FP32};
  const char *ps = NULL, *es = NULL, *ss = NULL, *rs = NULL;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 'c', &ckpt), PB_OPTS_VALUE(NULL, 'f', &cfg_path),
      PB_OPTS_VALUE(NULL, 'e', &es),   PB_OPTS_VALUE(NULL, 's', &ss),
      PB_OPTS_VALUE(NULL, 'r', &rs),   PB_OPTS_LIST(NULL, 'S', sets, &nsets, 16),
      PB_OPTS_VALUE(NULL, 'P', &ps),   PB_OPTS_FLAG(NULL, 'p', &parseable)};
  bench_usage_text = "usage: bench_spotcheck (-c CKPT | -f CONFIG) "
                     "[-e EPISODES] [-s SHARE] [-r ROUNDS] [-S KEY=VALUE]... "
                     "[-P SEARCH,CHECK] [-p]\n";
  const pb_opts_t o = {"bench_spotcheck", bench_usage, rows, PB_OPTS_N(rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK && (ckpt == NULL) == (cfg_path == NULL))
    rc = pb_opts_fail(&o, "one of -c CKPT and -f CONFIG is needed");
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&o, "-e", es, 1, 1000000, &episodes);
  if (rc == PB_OPTS_OK) rc = bench_opt_double(&o, "-s", ss, 1e-6, 1.0, &share);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-r", rs, 1, 100000, &rounds);
  if (rc == PB_OPTS_OK && ps != NULL && bench_parse_prec_pair(ps, prec) != 0)
    rc = pb_opts_fail(&o, "-P wants SEARCH,CHECK (fp32 or bf16), not '%s'",
                      ps);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);

  pb_err_t err;
  pb_config_t cfg;
  pb_model_t *model = NULL;
  pb_nn_t *own_v = NULL, *own_q = NULL;
  const pb_game_t *g = open_nets(ckpt, cfg_path, &cfg, &model, &own_v, &own_q);
  for (int i = 0; i < nsets; i++)
    if (pb_config_apply_override(&cfg, sets[i], &err) != 0)
      die("-S", &err);
  if (pb_config_check(&cfg, &err) != 0) die("config", &err);
  pb_nn_set_threads(cfg.model.threads);
  const int A = g->num_actions;
  pb_nn_t *v = model ? pb_model_v(model) : own_v;
  pb_nn_t *q = model ? pb_model_q(model) : own_q;
  const int batch = pb_learn_eval_batch(cfg.search.parallel, cfg.search.expansions, g->num_actions, cfg.train.selfplay_parallel);

  /* Self-play positions, as an actor makes them. */
  pb_neteval_t *ne = pb_neteval_new(g, batch, (uint32_t)cfg.search.cache_entries,
                                    &err);
  if (ne == NULL) die("neteval", &err);
  pb_neteval_bind(ne, v, q);
  pb_evalfn_t fn = pb_neteval_fn(ne);
  pb_rng_t rng;
  size_t n = 0;
  pb_state_t *pos = selfplay_positions(g, &cfg, &fn, episodes, &rng, &n);
  if (pos == NULL) return 1;

  /* The searcher. */
  float *theirs = malloc(n * (size_t)A * sizeof *theirs);
  checks_t c;
  c.mine = malloc(n * (size_t)A * sizeof *c.mine);
  c.sample = malloc(n * sizeof *c.sample);
  c.sidx = malloc(n * sizeof *c.sidx);
  c.which = malloc(n * sizeof *c.which);
  if (!theirs || !c.mine || !c.sample || !c.sidx || !c.which) return 1;
  const size_t item = (size_t)cfg.net.item_states;
  if (v) pb_nn_set_precision(v, prec[0], NULL);
  pb_nn_set_precision(q, prec[0], NULL);
  double t_search = search_items(g, &cfg, ne, &fn, v, q, pos, n, item, theirs);

  /* The spot checks. */
  if (v) pb_nn_set_precision(v, prec[1], NULL);
  pb_nn_set_precision(q, prec[1], NULL);
  spot_rounds(g, &cfg, batch, v, q, pos, n, item, theirs, rounds, share, &rng,
              &c);

  char desc[96];
  printf("# %s: %s, %s, parallel=%d item_states=%zu; %zu distinct "
         "positions from %d games; %d rounds of share %g: %llu checked; "
         "searcher %s, check %s\n",
         ckpt ? ckpt : cfg_path, g->name,
         pb_config_search_desc(&cfg, desc, sizeof desc), cfg.search.parallel,
         item, n, episodes, rounds, share, (unsigned long long)c.t[0].checked,
         pb_precision_name(prec[0]), pb_precision_name(prec[1]));
  print_rows((double)n, t_search, rounds, &c);

  pb_neteval_destroy(&ne);
  pb_model_destroy(&model);
  pb_nn_destroy(&own_v);
  pb_nn_destroy(&own_q);
  free(pos);
  free(theirs);
  free(c.mine);
  free(c.sample);
  free(c.sidx);
  free(c.which);
  return 0;
}
