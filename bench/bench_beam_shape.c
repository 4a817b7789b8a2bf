/* bench_beam_shape - the shape of beam search's trees (Algorithm 1) at play
 * time against its budget: why more expansions do not buy more accuracy.
 *
 *   bench_beam_shape CKPT [-E 10,30,100,300,1000] [-M 3,10] [-n POSITIONS]
 *
 * For every (E, M) the checkpoint's V and Q search every position of the
 * game's shipped solved test set (common/solver/testset.h) in batches, as the
 * beam: agent does (common/nn/neteval.h with its cache, one libtorch thread), and
 * one row says: the share of optimal moves; network evaluations (V plus Q
 * positions computed) and CPU milliseconds per position; how deep the tree
 * goes (plies below the root of the deepest expanded node, plus one: the
 * plies its deepest leaves are from the root); how many of the root's
 * moves are searched past 2 plies (an expanded node below the move's own
 * expansion) out of the legal moves; and the expansions by depth (root
 * 0, its children 1, ...). CPU time of this process, not wall time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "beam_search.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "testset.h"

#include "bench_util.h"

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_beam_shape: %s: %s\n", what, err->msg);
  exit(1);
}

/* Parses "a,b,c" into out (at most max); returns the count. */
static int parse_list(const char *s, int *out, int max) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 100000) {
      fprintf(stderr, "bench_beam_shape: bad list \"%s\"\n", s);
      exit(2);
    }
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

int main(int argc, char **argv) {
  const char *ckpt = NULL, *es = NULL, *ms = NULL, *npos_s = NULL;
  int Es[16], Ms[8], nE = 0, nM = 0, limit = 0, npos = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE(NULL, 'E', &es),
                                PB_OPTS_VALUE(NULL, 'M', &ms),
                                PB_OPTS_VALUE(NULL, 'n', &npos_s)};
  bench_usage_text = "usage: bench_beam_shape CKPT [-E list] [-M list] "
                     "[-n POSITIONS]\n";
  const pb_opts_t opts = {"bench_beam_shape", bench_usage, rows,
                          PB_OPTS_N(rows), &ckpt, 1, &npos};
  int rc = pb_opts_parse(&opts, argc, argv);
  if (rc == PB_OPTS_OK && npos != 1)
    rc = pb_opts_fail(&opts, "a checkpoint (CKPT) is needed");
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&opts, "-n", npos_s, 0, 1 << 30, &limit);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  nE = parse_list(es != NULL ? es : "10,30,100,300,1000", Es, 16);
  nM = parse_list(ms != NULL ? ms : "3,10", Ms, 8);
  pb_err_t err;
  pb_config_t cfg;
  pb_model_t *m = pb_model_open(ckpt, "cpu", &cfg, &err);
  if (m == NULL) die(ckpt, &err);
  if (pb_model_kind(m) == PB_NETS_PV) {
    fprintf(stderr, "bench_beam_shape: %s is an alphazero checkpoint\n", ckpt);
    return 1;
  }
  pb_nn_set_threads(1);
  const pb_game_t *g = pb_model_game(m);
  pb_testset_t *ts = pb_testset_builtin(g, &err);
  if (ts == NULL) die("test set", &err);
  int n = (int)pb_testset_count(ts);
  if (limit > 0 && limit < n) n = limit;
  const int A = g->num_actions;
  pb_state_t *pos = malloc((size_t)n * sizeof *pos);
  float *out = malloc((size_t)n * (size_t)A * sizeof *out);
  if (pos == NULL || out == NULL) return 1;
  for (int i = 0; i < n; i++) pos[i] = *pb_testset_state(ts, (size_t)i);
  printf("# %s, %s, %d positions of %s\n", ckpt, g->name, n,
         pb_testset_name(ts));
  printf("# %5s %3s %8s %10s %8s %7s %11s  expansions by depth 0,1,2,3,4,5,6,7+ "
         "(per position)\n",
         "E", "M", "accuracy", "evals/pos", "ms/pos", "plies", "deep/moves");
  for (int mi = 0; mi < nM; mi++)
    for (int ei = 0; ei < nE; ei++) {
      pb_beam_t *b = pb_beam_new(g, Es[ei], Ms[mi], 256, &err);
      pb_neteval_t *ne = b ? pb_neteval_new(g, 512, 1u << 18, &err) : NULL;
      if (ne == NULL) die("beam", &err);
      pb_neteval_bind(ne, pb_model_v(m), pb_model_q(m));
      pb_evalfn_t fn = pb_neteval_fn(ne);
      double t0 = bench_clock();
      if (pb_beam_run(b, pos, n, &fn, out, &err) != 0) die("beam", &err);
      double t = bench_clock() - t0;
      int good = 0;
      for (int i = 0; i < n; i++) {
        uint8_t legal[PB_MAX_ACTIONS];
        int nl = g->legal(&pos[i], legal);
        int a = pb_agent_argmax_legal(&out[(size_t)i * A], legal, nl);
        good += pb_testset_optimal(ts, (size_t)i, a) == 1;
      }
      pb_beam_stats_t st;
      pb_neteval_stats_t ns;
      pb_beam_stats(b, &st);
      pb_neteval_stats(ne, &ns);
      printf("  %5d %3d %8.3f %10.1f %8.2f %7.2f %5.2f/%5.2f ", Es[ei],
             Ms[mi], (double)good / n,
             (double)(ns.v_computed + ns.q_computed) / n, 1000.0 * t / n,
             (double)st.depth_max_sum / n + 1.0,
             (double)st.root_moves_deep / n, (double)st.root_moves / n);
      for (int d = 0; d < 8; d++)
        printf(" %.1f", (double)st.expanded_at[d] / n);
      printf("\n");
      fflush(stdout);
      pb_neteval_destroy(&ne);
      pb_beam_destroy(&b);
    }
  free(pos);
  free(out);
  pb_testset_destroy(&ts);
  pb_model_destroy(&m);
  return 0;
}
