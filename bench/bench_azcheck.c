/* bench_azcheck - how honest AlphaZero self-play looks to the learner's
 * check of it (common/train/azcheck.h, learner/azcheck.c), and what the
 * check costs, with a real checkpoint.
 *
 *   bench_azcheck -c CKPT [-w WORKERS] [-e EPISODES] [-n POSITIONS] [-p]
 *
 * Plays WORKERS (default 50) honest actors of EPISODES (default 25: one
 * item) episodes each with azplay and the checkpoint's own settings, then
 * checks each as the learner does: the exact checks on every position, and
 * the re-run (two searches, noise of the checker's own) of up to POSITIONS
 * (default 64, the learner's most per result) rows, each compared as it
 * was sent and as a forger sends it (one-hot on the move played).
 * Prints, over the workers: impossible moves (0 for honest), the mean,
 * spread and largest z of the rows and of the moves (at most a standard
 * normal's for honest: z >= 6 quarantines), how many forgers' z reach 6,
 * and the re-run's cost (positions per second on one thread). -p prints
 * tab-separated rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azcheck.h"
#include "azplay.h"
#include "config.h"
#include "episodes.h"
#include "game.h"
#include "model.h"
#include "nn.h"
#include "pveval.h"

#include "bench_util.h"

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_azcheck: %s: %s\n", what, err->msg);
  exit(1);
}

typedef struct {
  double sum, sq, max;
  int n, over6;
} stat_t;

static void add(stat_t *s, double z) {
  s->sum += z;
  s->sq += z * z;
  if (s->n == 0 || z > s->max) s->max = z;
  s->over6 += z >= PB_AZ_Z;
  s->n++;
}

static void rows_of(const char *what, const stat_t *s) {
  char f[96];
  const double mean = s->n ? s->sum / s->n : 0.0;
  snprintf(f, sizeof f, "%s z mean", what);
  bench_row(f, mean, "", 0, "");
  snprintf(f, sizeof f, "%s z spread", what);
  bench_row(f, s->n ? sqrt(s->sq / s->n - mean * mean) : 0.0, "", 0, "");
  snprintf(f, sizeof f, "%s largest z", what);
  bench_row(f, s->max, "", 0, "");
  snprintf(f, sizeof f, "%s z >= 6", what);
  bench_row(f, s->over6, "", 0, "");
}

int main(int argc, char **argv) {
  const char *ckpt = NULL, *ws = NULL, *es = NULL, *ns = NULL;
  int workers = 50, episodes = 25, npos = 64;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 'c', &ckpt), PB_OPTS_VALUE(NULL, 'w', &ws),
      PB_OPTS_VALUE(NULL, 'e', &es), PB_OPTS_VALUE(NULL, 'n', &ns),
      PB_OPTS_FLAG(NULL, 'p', &parseable)};
  bench_usage_text = "usage: bench_azcheck -c CKPT [-w WORKERS] "
                     "[-e EPISODES] [-n POSITIONS] [-p]\n";
  const pb_opts_t cl = {"bench_azcheck", bench_usage, rows, PB_OPTS_N(rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&cl, argc, argv);
  if (rc == PB_OPTS_OK && ckpt == NULL)
    rc = pb_opts_fail(&cl, "-c CKPT is needed");
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&cl, "-w", ws, 1, 100000, &workers);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&cl, "-e", es, 1, 100000, &episodes);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&cl, "-n", ns, 1, 4096, &npos);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_err_t err;
  pb_config_t cfg;
  pb_nn_set_threads(1);
  pb_model_t *m = pb_model_open(ckpt, "cpu", &cfg, &err);
  if (m == NULL) die(ckpt, &err);
  const pb_game_t *g = pb_model_game(m);
  pb_azplay_opts_t o;
  pb_azplay_config_opts(&cfg, &o);
  o.parallel = episodes;
  const int B = 64;
  pb_azplay_t *az = pb_azplay_new(g, &o, &err);
  pb_azcheck_t *ck = az ? pb_azcheck_new(g, &o, B, &err) : NULL;
  pb_pveval_t *pe = ck ? pb_pveval_new(g, 2 * B > episodes ? 2 * B
                                                            : episodes,
                                       &err)
                       : NULL;
  if (pe == NULL || pb_pveval_bind(pe, pb_model_q(m), &err) != 0)
    die("setup", &err);
  pb_mcts_evalfn_t ev = pb_pveval_fn(pe);
  const int A = g->num_actions;
  pb_state_t st[64];
  float *claim = malloc((size_t)B * A * sizeof *claim);
  float *hot = malloc((size_t)B * A * sizeof *hot);
  double x[64], xh[64];
  if (claim == NULL || hot == NULL) return 1;
  pb_rng_t rng;
  pb_rng_seed(&rng, 2026, 46);
  pb_episodes_t eps;
  pb_episodes_init(&eps);
  stat_t zr = {0}, zm = {0}, zf = {0};
  uint64_t impossible = 0, reruns = 0, moves = 0;
  double t_rerun = 0;
  for (int w = 0; w < workers; w++) {
    pb_episodes_clear(&eps);
    if (pb_azplay_run(az, episodes, 5000 + (uint64_t)w, 0, &ev, 0, &eps,
                      &err) != 0)
      die("self-play", &err);
    pb_az_tally_t t = {0}, f = {0};
    for (size_t k = 0; k < eps.n_eps; k++)
      if (pb_az_check_episode(g, &o, eps.states + eps.start[k], eps.len[k],
                              eps.reward[k],
                              eps.policy + (size_t)eps.start[k] * A, &t, NULL,
                              0, &err) != 0)
        die("check", &err);
    /* The first npos rows that are not zeros, in batches of B. */
    int n = 0, done = 0;
    for (size_t k = 0; k < eps.n_eps && done < npos; k++)
      for (uint32_t i = 0; i < eps.len[k] && done < npos; i++) {
        const size_t at = eps.start[k] + i;
        const float *r = eps.policy + at * A;
        int zero = 1;
        for (int a = 0; a < A; a++) zero &= r[a] == 0.0f;
        if (zero) continue;
        st[n] = eps.states[at];
        memcpy(claim + (size_t)n * A, r, (size_t)A * sizeof *r);
        /* The forger's row: one-hot on the move played (the argmax at the
         * last ply, whose move the episode does not show). */
        int mv = -1;
        uint8_t acts[PB_MAX_ACTIONS];
        const int na = g->legal(&st[n], acts);
        for (int j = 0; j < na && mv < 0 && i + 1 < eps.len[k]; j++) {
          pb_state_t c = st[n];
          int over = 0;
          g->step(&c, acts[j], &over);
          if (!over && !memcmp(&c, &eps.states[at + 1], sizeof c))
            mv = acts[j];
        }
        if (mv < 0)
          for (int a = 0; a < A; a++)
            if (r[a] > 0 && (mv < 0 || r[a] > r[mv])) mv = a;
        memset(hot + (size_t)n * A, 0, (size_t)A * sizeof *hot);
        hot[(size_t)n * A + mv] = 1.0f;
        done++;
        if (++n == B || done == npos) {
          double t0 = bench_clock();
          pb_rng_t save = rng;
          if (pb_azcheck_run(ck, st, claim, n, &ev, &rng, x, &err) != 0)
            die("re-run", &err);
          t_rerun += bench_clock() - t0;
          /* The same searches for the forger's rows. */
          if (pb_azcheck_run(ck, st, hot, n, &ev, &save, xh, &err) != 0)
            die("re-run", &err);
          pb_az_add_rows(&t, x, n);
          pb_az_add_rows(&f, xh, n);
          reruns += (uint64_t)n;
          n = 0;
        }
      }
    impossible += t.impossible;
    moves += t.moves;
    add(&zr, pb_az_rows_z(&t));
    if (t.moves > 0) add(&zm, pb_az_moves_z(&t));
    add(&zf, pb_az_rows_z(&f));
  }
  printf("# %s: %s, %d simulations, c_puct %.2f, eps %.2f, alpha %.2f, "
         "temp_moves %d, root %s; %d workers x %d episodes; %.0f rows "
         "re-run and %.0f moves scored each on average\n",
         ckpt, g->name, o.simulations, o.c_puct, o.eps, o.alpha, o.temp_moves,
         cfg.mcts.root, workers, episodes, (double)reruns / workers,
         (double)moves / workers);
  bench_row("impossible moves (0 for honest)", (double)impossible, "", 0, "");
  rows_of("honest rows", &zr);
  rows_of("honest moves", &zm);
  rows_of("one-hot forger rows", &zf);
  bench_row("re-run", (double)reruns / (t_rerun > 0 ? t_rerun : 1e-9),
            "positions/s", 0, "");
  free(claim);
  free(hot);
  pb_episodes_free(&eps);
  pb_pveval_destroy(&pe);
  pb_azcheck_destroy(&ck);
  pb_azplay_destroy(&az);
  pb_model_destroy(&m);
  return 0;
}
