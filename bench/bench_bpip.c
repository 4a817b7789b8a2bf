/* bench_bpip - the shape of BPIP's searches (common/search/bpip.h) on the solved
 * test set, against the budget: how the bpip: agent spends it.
 *
 *   bench_bpip CKPT [-N 10,30,100,300,1000] [-s SIGMA] [-g GULP] [-n POSITIONS]
 *
 * For each budget N the checkpoint's V searches every position of the
 * game's shipped solved test set (common/solver/testset.h) one at a time, as the
 * bpip: agent does (common/nn/neteval.h with its cache, one libtorch thread), and
 * one row says: the share of optimal moves; positions given to V (and Q)
 * per search, and those that reached the network (cache misses, what
 * `probs accuracy` reports); expansions and rounds (passes down the tree)
 * per search; the deepest node's plies; how the searches stopped (settled:
 * no relevance left; budget; a win at once; Q: the root's children did not
 * fit); and the positions where a root move was proven lost by a reply
 * that wins at once (found by an expansion that costs no evaluation), with
 * how many of them were answered optimally. Counts only, no times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "bench_util.h"
#include "bpip.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "testset.h"

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_bpip: %s: %s\n", what, err->msg);
  exit(1);
}

/* Parses "a,b,c" into out (at most max); returns the count. */
static int parse_list(const char *s, int *out, int max) {
  int n = 0;
  while (*s && n < max) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > PB_BPIP_MAX_EVALS) {
      fprintf(stderr, "bench_bpip: bad list \"%s\"\n", s);
      exit(2);
    }
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* Root moves of the last search proven lost by a reply that wins at once. */
static int trapped(pb_bpip_t *bp) {
  if (pb_bpip_tree(bp) == 0) return 0;
  pb_bpip_node_t root, k;
  pb_bpip_node(bp, 0, &root);
  int n = 0;
  for (int c = 0; c < root.kids; c++) {
    pb_bpip_node(bp, root.first + c, &k);
    n += k.exact && k.kids == 0 && k.pmf[PB_BPIP_GRID - 1] > 0.5;
  }
  return n;
}

int main(int argc, char **argv) {
  int Ns[16], nN = parse_list("10,30,100,300,1000", Ns, 16), limit = 0;
  pb_bpip_opts_t o;
  pb_bpip_defaults(&o);
  const char *list = NULL, *sigma = NULL, *gulp = NULL, *npos_s = NULL;
  const char *pos[1] = {NULL};
  int npos = 0;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 'N', &list), PB_OPTS_VALUE(NULL, 's', &sigma),
      PB_OPTS_VALUE(NULL, 'g', &gulp), PB_OPTS_VALUE(NULL, 'n', &npos_s)};
  bench_usage_text = "usage: bench_bpip CKPT [-N list] [-s SIGMA] [-g GULP] "
                     "[-n POSITIONS]\n";
  const pb_opts_t opts = {"bench_bpip", bench_usage, rows, PB_OPTS_N(rows),
                          pos, 1, &npos};
  int rc = pb_opts_parse(&opts, argc, argv);
  if (rc == PB_OPTS_OK && npos != 1)
    rc = pb_opts_fail(&opts, "a checkpoint (CKPT) is needed");
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&opts, "-s", sigma, 1e-9, 1e9, &o.sigma);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&opts, "-g", gulp, 0, 1e9, &o.gulp);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&opts, "-n", npos_s, 0, 1 << 30, &limit);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  if (list != NULL) nN = parse_list(list, Ns, 16);
  const char *ckpt = pos[0];
  pb_err_t err;
  pb_config_t cfg;
  pb_model_t *m = pb_model_open(ckpt, "cpu", &cfg, &err);
  if (m == NULL) die(ckpt, &err);
  if (pb_model_kind(m) == PB_NETS_PV) {
    fprintf(stderr, "bench_bpip: %s is an alphazero checkpoint (no V)\n",
            ckpt);
    return 2;
  }
  pb_nn_set_threads(1);
  const pb_game_t *g = pb_model_game(m);
  pb_testset_t *ts = pb_testset_builtin(g, &err);
  if (ts == NULL) die("test set", &err);
  int n = (int)pb_testset_count(ts);
  if (limit > 0 && limit < n) n = limit;
  printf("# %s, %s, %d positions of %s, sigma %g, gulp %g\n", ckpt, g->name,
         n, pb_testset_name(ts), o.sigma, o.gulp);
  printf(
      "# %5s %8s %7s %7s %7s %7s %5s  stops settled/budget/win/Q  "
      "trapped (optimal)\n",
      "N", "accuracy", "asked", "evals", "expand", "rounds", "depth");
  for (int k = 0; k < nN; k++) {
    o.evals = (uint64_t)Ns[k];
    pb_bpip_t *bp = pb_bpip_new(g, &o, &err);
    pb_neteval_t *ne = bp ? pb_neteval_new(g, 512, 1u << 18, &err) : NULL;
    if (ne == NULL) die("bpip", &err);
    pb_neteval_bind(ne, pb_model_v(m), pb_model_q(m));
    pb_evalfn_t fn = pb_neteval_fn(ne);
    uint64_t asked = 0, exp = 0, rounds = 0, depth = 0, stops[5] = {0};
    int good = 0, trap = 0, trap_ok = 0;
    for (int i = 0; i < n; i++) {
      pb_bpip_result_t r;
      if (pb_bpip_search(bp, pb_testset_state(ts, (size_t)i), &fn, &r, &err))
        die("search", &err);
      const int ok = pb_testset_optimal(ts, (size_t)i, r.move) == 1;
      good += ok;
      asked += r.v_evals + r.q_evals;
      exp += r.expansions;
      rounds += r.rounds;
      depth += (uint64_t)r.depth;
      stops[r.stop]++;
      if (trapped(bp) > 0) {
        trap++;
        trap_ok += ok;
      }
    }
    pb_neteval_stats_t st;
    pb_neteval_stats(ne, &st);
    printf("  %5d %8.3f %7.1f %7.1f %7.1f %7.1f %5.2f  %d/%d/%d/%d  %d (%d)\n",
           Ns[k], (double)good / n, (double)asked / n,
           (double)(st.v_computed + st.q_computed) / n, (double)exp / n,
           (double)rounds / n, (double)depth / n, (int)stops[0], (int)stops[1],
           (int)stops[3], (int)stops[4], trap, trap_ok);
    fflush(stdout);
    pb_neteval_destroy(&ne);
    pb_bpip_destroy(&bp);
  }
  pb_testset_destroy(&ts);
  pb_model_destroy(&m);
  return 0;
}
