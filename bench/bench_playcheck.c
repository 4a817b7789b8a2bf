/* bench_playcheck - how an honest actor's self-play looks to the learner's
 * check of self-play moves (common/train/playcheck.h, learner/selfcheck.c):
 * the false-positive rate of its test, measured with real networks.
 *
 *   bench_playcheck -c CKPT [-w WORKERS] [-e EPISODES] [-P PLAY,CHECK] [-p]
 *
 * Plays WORKERS (default 200) honest actors of EPISODES (default 100)
 * episodes each with the actors' own engine (pb_selfplay_run: games in
 * parallel batches, moves drawn by pb_selfplay_pick with the checkpoint's
 * eps, alpha and self-play temperature), then scores each episode as the
 * learner does (its own evaluator, an episode's positions in one call, so
 * in other batches than they were played in), in the check's precision.
 * Prints, over the workers: the mean and spread of z (a standard normal's
 * are 0 and 1), the largest z, how many reach 3 and the test's 6, and the
 * moves scored per second. -P gives the precisions of the play and of the
 * check (fp32 or bf16; default fp32,fp32). -p prints tab-separated rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "episodes.h"
#include "game.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "playcheck.h"
#include "precision.h"
#include "selfplay.h"

#include "bench_util.h"

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_playcheck: %s: %s\n", what, err->msg);
  exit(1);
}

int main(int argc, char **argv) {
  const char *ckpt = NULL, *ws = NULL, *es = NULL, *ps = NULL;
  int workers = 200, episodes = 100, prec[2] = {PB_NN_FP32, PB_NN_FP32};
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 'c', &ckpt), PB_OPTS_VALUE(NULL, 'w', &ws),
      PB_OPTS_VALUE(NULL, 'e', &es), PB_OPTS_VALUE(NULL, 'P', &ps),
      PB_OPTS_FLAG(NULL, 'p', &parseable)};
  bench_usage_text = "usage: bench_playcheck -c CKPT [-w WORKERS] "
                     "[-e EPISODES] [-P PLAY,CHECK] [-p]\n";
  const pb_opts_t cl = {"bench_playcheck", bench_usage, rows, PB_OPTS_N(rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&cl, argc, argv);
  if (rc == PB_OPTS_OK && ckpt == NULL)
    rc = pb_opts_fail(&cl, "-c CKPT is needed");
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&cl, "-w", ws, 1, 1000000, &workers);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&cl, "-e", es, 1, 1000000, &episodes);
  if (rc == PB_OPTS_OK && ps != NULL && bench_parse_prec_pair(ps, prec) != 0)
    rc = pb_opts_fail(&cl, "-P wants PLAY,CHECK (fp32 or bf16), not '%s'", ps);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_err_t err;
  pb_config_t cfg;
  pb_nn_set_threads(1);
  pb_model_t *play = pb_model_open(ckpt, "cpu", &cfg, &err);
  pb_model_t *check = play ? pb_model_open(ckpt, "cpu", NULL, &err) : NULL;
  if (check == NULL) die(ckpt, &err);
  const pb_game_t *g = pb_model_game(play);
  if (pb_model_v(play) == NULL) {
    fprintf(stderr, "bench_playcheck: %s: not a PROBS checkpoint\n", ckpt);
    return 2;
  }
  if (pb_nn_set_precision(pb_model_q(play), prec[0], &err) != 0 ||
      pb_nn_set_precision(pb_model_q(check), prec[1], &err) != 0)
    die("precision", &err);
  pb_selfplay_opts_t o;
  pb_selfplay_config_opts(&cfg, &o);
  pb_selfplay_t *sp = pb_selfplay_new(g, &o, &err);
  pb_neteval_t *ne_play = pb_neteval_new(g, 1024, 0, &err);
  pb_neteval_t *ne_check = ne_play ? pb_neteval_new(g, 256, 0, &err) : NULL;
  if (sp == NULL || ne_check == NULL) die("setup", &err);
  pb_neteval_bind(ne_play, NULL, pb_model_q(play));
  pb_neteval_bind(ne_check, NULL, pb_model_q(check));
  pb_evalfn_t fp = pb_neteval_fn(ne_play), fc = pb_neteval_fn(ne_check);
  const int A = g->num_actions;
  float *q = malloc((size_t)g->max_turns * A * sizeof *q);
  if (q == NULL) return 1;
  pb_episodes_t eps;
  pb_episodes_init(&eps);
  double sum = 0, sq = 0, worst = -1e9, t_check = 0;
  int over3 = 0, over6 = 0;
  uint64_t moves = 0;
  for (int w = 0; w < workers; w++) {
    pb_episodes_clear(&eps);
    if (pb_selfplay_run(sp, episodes, 1000 + (uint64_t)w, 0, &fp, 0, &eps,
                        &err) != 0)
      die("self-play", &err);
    pb_play_tally_t t = {0};
    double t0 = bench_clock();
    for (size_t k = 0; k < eps.n_eps; k++) {
      const pb_state_t *st = eps.states + eps.start[k];
      if (fc.qvalues(fc.ctx, st, (int)eps.len[k], q, &err) != 0 ||
          pb_play_score(g, st, eps.len[k], eps.reward[k], q, o.eps, o.temperature, &t,
                        &err) != 0)
        die("score", &err);
    }
    t_check += bench_clock() - t0;
    const double z = pb_play_z(&t);
    moves += t.moves;
    sum += z;
    sq += z * z;
    if (z > worst) worst = z;
    over3 += z >= 3.0;
    over6 += pb_play_impossible(&t);
  }
  const double mean = sum / workers;
  printf("# %s: %s, eps %.2f, T %.2f; %d workers x %d episodes, %.0f moves "
         "scored each on average; play %s, check %s\n",
         ckpt, g->name, o.eps, o.temperature, workers, episodes,
         (double)moves / workers, pb_precision_name(prec[0]),
         pb_precision_name(prec[1]));
  bench_row("z mean (0 for honest)", mean, "", 0, "");
  bench_row("z spread (1 for honest)", sqrt(sq / workers - mean * mean), "",
            0, "");
  bench_row("largest z", worst, "", 0, "");
  bench_row("workers with z >= 3", over3, "", 0, "");
  bench_row("workers quarantined (z >= 6)", over6, "", 0, "");
  bench_row("moves scored", (double)moves / (t_check > 0 ? t_check : 1e-9),
            "moves/s", 0, "");
  free(q);
  pb_episodes_free(&eps);
  pb_neteval_destroy(&ne_play);
  pb_neteval_destroy(&ne_check);
  pb_selfplay_destroy(&sp);
  pb_model_destroy(&check);
  pb_model_destroy(&play);
  return 0;
}
