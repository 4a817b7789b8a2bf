/* bench_nn_threads - forward passes of one network taken in turns by
 * several threads, at batch sizes drawn at random: what a learner does,
 * whose spot check, V and Q training and self-play check run on different
 * threads (libuv's pool, a thread of their own, the loop), one after the
 * other on the same networks.
 *
 *   bench_nn_threads [-t THREADS] [-s SECONDS] [-b MAX_BATCH] [-P fp32|bf16]
 *                    [-p]
 *
 * THREADS (default 4) threads take turns, the next one drawn at random;
 * each turn is 10 pb_nn_forward calls at batches drawn from 1..MAX_BATCH
 * (default 3000, so that most calls set up new oneDNN primitives), on the
 * paper's larger Connect Four network (bench_nn's "large"), one libtorch
 * thread each, in the given precision (default bf16), for SECONDS (default
 * 60). Prints the forward passes done and their rate; a failed pass is
 * printed and ends the program with status 1. -p prints tab-separated
 * rows (figure, value, unit, ratio, baseline) for bench/run.
 *
 * It is a check as much as a rate: before bf16 dense layers were moved to
 * fp32 on the CPU (common/nn/nn.cpp, pb__lp_n), this program failed in bf16
 * within 25-125 s ("pb_nn_forward: out of memory" from std::bad_alloc in
 * oneDNN 2.6's brgemm kernel creation, or SIGSEGV), as the learner did in
 * its runs; with one thread (-t 1) it did not (docs/nn.md, "bf16 across
 * threads"). Not run by the tests for its length. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "nn.h"
#include "precision.h"
#include "rng.h"

#include "bench_util.h"

typedef struct shared {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int turn, stop, failed, nthreads, maxb;
  double end;
  long forwards, rows;
  pb_nn_t *nn;
  pb_rng_t rng; /* draws turns and batches, under mu */
  const float *in;
  pb_err_t err;
} shared_t;

typedef struct member {
  shared_t *s;
  int id;
  float *out;
} member_t;

static void *member_main(void *arg) {
  member_t *m = arg;
  shared_t *s = m->s;
  pb_nn_set_threads(1);
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->stop && s->turn != m->id) pthread_cond_wait(&s->cv, &s->mu);
    if (s->stop) break;
    int b[10];
    for (int k = 0; k < 10; k++)
      b[k] = 1 + (int)pb_rng_below(&s->rng, (uint32_t)s->maxb);
    pthread_mutex_unlock(&s->mu);
    pb_err_t err;
    int rc = 0, k = 0;
    long rows = 0;
    for (; k < 10 && rc == 0; k++) {
      rc = pb_nn_forward(s->nn, s->in, b[k], m->out, &err);
      rows += b[k];
    }
    pthread_mutex_lock(&s->mu);
    s->forwards += k;
    s->rows += rows;
    if (rc != 0) {
      s->failed = 1;
      s->err = err;
    }
    if (rc != 0 || bench_clock() >= s->end) s->stop = 1;
    s->turn = (int)pb_rng_below(&s->rng, (uint32_t)s->nthreads);
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = 4, maxb = 3000, prec = PB_NN_BF16;
  double secs = 60;
  use_wall = 1; /* the threads take turns: wall time is the run's */
  const char *ts = NULL, *ss = NULL, *bs = NULL, *ps = NULL;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 't', &ts), PB_OPTS_VALUE(NULL, 's', &ss),
      PB_OPTS_VALUE(NULL, 'b', &bs), PB_OPTS_VALUE(NULL, 'P', &ps),
      PB_OPTS_FLAG(NULL, 'p', &parseable)};
  bench_usage_text = "usage: bench_nn_threads [-t THREADS] [-s SECONDS] "
                     "[-b MAX_BATCH] [-P fp32|bf16] [-p]\n";
  const pb_opts_t o = {"bench_nn_threads", bench_usage, rows,
                       PB_OPTS_N(rows), NULL, 0, NULL};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-t", ts, 1, 64, &threads);
  if (rc == PB_OPTS_OK) rc = bench_opt_double(&o, "-s", ss, 1e-3, 1e6, &secs);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-b", bs, 1, 100000, &maxb);
  if (rc == PB_OPTS_OK && ps != NULL &&
      ((prec = pb_precision_parse(ps)) < 0 || prec > PB_NN_BF16))
    rc = pb_opts_fail(&o, "-P wants fp32 or bf16, not '%s'", ps);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  const pb_nn_spec_t spec = {2, 6, 7, 7, PB_NN_HEAD_LINEAR, 3, 32, 1, 64, 0, 0};
  pb_err_t err;
  pb_nn_tune_malloc(NULL);
  pb_nn_t *nn = pb_nn_new(&spec, NULL, "cpu", 1, &err);
  if (nn == NULL || pb_nn_set_precision(nn, prec, &err) != 0) {
    fprintf(stderr, "bench_nn_threads: %s\n", err.msg);
    return 1;
  }
  const size_t per = (size_t)spec.planes * spec.height * spec.width;
  float *in = malloc((size_t)maxb * per * sizeof *in);
  if (in == NULL) return 1;
  pb_rng_t r;
  pb_rng_seed(&r, 7, 0);
  for (size_t i = 0; i < (size_t)maxb * per; i++)
    in[i] = (float)pb_rng_below(&r, 2);

  shared_t s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.mu, NULL);
  pthread_cond_init(&s.cv, NULL);
  s.nthreads = threads;
  s.maxb = maxb;
  s.nn = nn;
  s.in = in;
  pb_rng_seed(&s.rng, 1, 0);
  member_t *m = calloc((size_t)threads, sizeof *m);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  if (m == NULL || tid == NULL) return 1;
  const double t0 = bench_clock();
  s.end = t0 + secs;
  for (int i = 0; i < threads; i++) {
    m[i].s = &s;
    m[i].id = i;
    m[i].out = malloc((size_t)maxb * spec.outputs * sizeof(float));
    if (m[i].out == NULL ||
        pthread_create(&tid[i], NULL, member_main, &m[i]) != 0) {
      fprintf(stderr, "bench_nn_threads: cannot start thread %d\n", i);
      return 1;
    }
  }
  for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
  const double t = bench_clock() - t0;
  const char *pn = pb_precision_name(prec);
  printf("# bench_nn_threads: %d threads in turns, batches 1..%d, %s, "
         "%.0f s\n",
         threads, maxb, pn, t);
  char fig[80], of[32];
  snprintf(fig, sizeof fig, "nn %s, %d threads in turns: forward passes", pn,
           threads);
  bench_row(fig, (double)s.forwards / t, "calls/s", 0, "");
  snprintf(fig, sizeof fig, "nn %s, %d threads in turns: positions", pn,
           threads);
  bench_row(fig, (double)s.rows / t, "positions/s", 0, "");
  snprintf(fig, sizeof fig, "nn %s, %d threads in turns: failed passes", pn,
           threads);
  snprintf(of, sizeof of, "of %ld", s.forwards);
  bench_row(fig, s.failed, "passes", 0, of);
  if (s.failed)
    printf("# FAILED after %ld passes: %s\n", s.forwards, s.err.msg);
  for (int i = 0; i < threads; i++) free(m[i].out);
  free(m);
  free(tid);
  free(in);
  pb_nn_destroy(&nn);
  return s.failed ? 1 : 0;
}
