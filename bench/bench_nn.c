/* bench_nn.c - throughput of the libtorch shim on the paper's Connect Four
 * network sizes (docs/nn.md): forward positions/s at batch 1, 64, 256 and
 * 1024, and training samples/s at batch 128 and 512 (Adam, masked MSE as
 * for Q), with 1 and 2 intra-op threads. Batch 128 is timed twice: one
 * pb_nn_train_step call per minibatch ("train b128"), and 16 minibatches per
 * pb_nn_train_batches call ("x16", as the learner trains), with their
 * ratio: the same arithmetic, so on the CPU the ratio shows only the
 * per-call overhead saved; on CUDA it also saves the read-backs and
 * transfers between steps. "x16 b512" trains 16 minibatches of 512 rows
 * per call, with its ratio to "x16": what a larger minibatch is worth in
 * samples/s on this device (train.batch_size; docs/performance.md).
 *
 *   bench_nn [-s seconds-per-cell] [-d cpu|cuda|auto] [-t 1,2] [-P fp32,bf16]
 * [-n]
 *
 * -t lists the intra-op thread counts to try (default 1,2); -P the
 * precisions (common/nn/nn.h: pb_nn_set_precision; default fp32,bf16),
 * each model and thread count measured in every one of them, one after
 * the other, with the ratio of each to the first in the last column
 * ("vs": forward at batch 256); -n leaves the
 * C allocator as it is instead of calling pb_nn_tune_malloc() first, to
 * show what that call is worth.
 *
 * A second table trains as the learner does (x16 b128, fp32, Adam with
 * clipping) on 1 and 2 training threads (pb_nn_set_train_threads:
 * model.learner_threads), with the ratio and the cores the process had
 * (CPU seconds per second: on a busy machine 2 threads get less than 2),
 * and counts the libtorch
 * operators of one such step (pb_nn_count_ops_start/stop; 425 for the
 * large model and 364 for the small one before issue 45's rework).
 *
 * Each cell runs for about the given time after a warm-up and prints the
 * rate; build with -DCMAKE_BUILD_TYPE=Release for numbers worth quoting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "err.h"
#include "nn.h"
#include "precision.h"
#include "rng.h"
#include "util.h"

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bench_model {
  const char *name;
  pb_nn_spec_t spec;
} bench_model_t;

enum {
  MAXB = 1024,
  TRAIN_B = 128,
  BIG_B = 512,
  CHUNK = 16,
  ROWS = CHUNK * BIG_B /* rows of the largest round */
};

/* Items per second of forward passes at `batch`, run for about `secs`. */
static double rate_forward(pb_nn_t *nn, const float *in, float *out, int batch,
                           double secs) {
  pb_err_t err;
  for (int i = 0; i < 3; i++)
    if (pb_nn_forward(nn, in, batch, out, &err) != 0) {
      fprintf(stderr, "bench_nn: forward: %s\n", err.msg);
      exit(1);
    }
  long n = 0;
  double t0 = pb_now(), t;
  do {
    for (int i = 0; i < 8; i++) pb_nn_forward(nn, in, batch, out, &err);
    n += 8;
    t = pb_now() - t0;
  } while (t < secs);
  return (double)n * batch / t;
}

/* One round of training: CHUNK minibatches of `batch` rows at in/tgt/mask,
 * as one pb_nn_train_step call per minibatch or (chunked) one
 * pb_nn_train_batches call for all of them. */
static int train_round(pb_nn_t *nn, const float *in, const float *tgt,
                       const float *mask, int batch, int chunked,
                       pb_err_t *err) {
  if (chunked)
    return pb_nn_train_batches(nn, in, tgt, mask, CHUNK * batch, batch, NULL,
                               NULL, NULL, NULL, err);
  for (int i = 0; i < CHUNK; i++) {
    size_t r = (size_t)i * batch;
    int rc = pb_nn_train_step(nn, in + r * 2 * 6 * 7, tgt + r * 7, mask + r * 7,
                              batch, NULL, err);
    if (rc != 0) return rc;
  }
  return 0;
}

/* Training samples per second, rounds of train_round run for about secs. */
static double rate_train(pb_nn_t *nn, const float *in, const float *tgt,
                         const float *mask, int batch, int chunked,
                         double secs) {
  pb_err_t err;
  if (train_round(nn, in, tgt, mask, batch, chunked, &err) != 0) {
    fprintf(stderr, "bench_nn: train: %s\n", err.msg);
    exit(1);
  }
  long n = 0;
  double t0 = pb_now(), t;
  do {
    train_round(nn, in, tgt, mask, batch, chunked, &err);
    n += CHUNK;
    t = pb_now() - t0;
  } while (t < secs);
  return (double)n * batch / t;
}

int main(int argc, char **argv) {
  double secs = 1.0;
  const char *device = "cpu", *tlist = "1,2", *plist = "fp32,bf16";
  const char *ss = NULL;
  int no_tune = 0;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 's', &ss), PB_OPTS_VALUE(NULL, 'd', &device),
      PB_OPTS_VALUE(NULL, 't', &tlist), PB_OPTS_VALUE(NULL, 'P', &plist),
      PB_OPTS_FLAG(NULL, 'n', &no_tune)};
  bench_usage_text = "usage: bench_nn [-s seconds-per-cell] "
                     "[-d cpu|cuda|auto] [-t 1,2,...] [-P fp32,bf16] [-n]\n";
  const pb_opts_t o = {"bench_nn", bench_usage, rows, PB_OPTS_N(rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&o, "-s", ss, 1e-9, 599.999, &secs);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  int tune = !no_tune;
  int threads[8], nthreads = 0;
  for (const char *p = tlist; *p && nthreads < 8;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > 256) break;
    threads[nthreads++] = (int)v;
    p = *end == ',' ? end + 1 : end;
  }
  int precs[4], nprecs = 0;
  for (const char *p = plist; *p && nprecs < 4;) {
    size_t l = strcspn(p, ",");
    char name[8];
    snprintf(name, sizeof name, "%.*s", (int)(l < 7 ? l : 7), p);
    int v = pb_precision_parse(name);
    if (v != PB_PREC_FP32 && v != PB_PREC_BF16) {
      nprecs = 0;
      break;
    }
    precs[nprecs++] = v;
    p += l + (p[l] == ',');
  }
  if (nthreads == 0 || nprecs == 0)
    return pb_opts_exit(pb_opts_fail(&o, "bad -%c list '%s'",
                                     nthreads == 0 ? 't' : 'P',
                                     nthreads == 0 ? tlist : plist));
  pb_err_t terr;
  if (tune && pb_nn_tune_malloc(&terr) != 0) {
    fprintf(stderr, "bench_nn: %s\n", terr.msg);
    tune = 0;
  }
  const bench_model_t models[] = {
      {"small", {2, 6, 7, 7, PB_NN_HEAD_LINEAR, 2, 16, 1, 12, 0, 0}},
      {"large", {2, 6, 7, 7, PB_NN_HEAD_LINEAR, 3, 32, 1, 64, 0, 0}},
  };
  const int batches[] = {1, 64, 256, 1024};

  size_t nin = (size_t)(MAXB > ROWS ? MAXB : ROWS) * 2 * 6 * 7;
  float *in = malloc(nin * sizeof *in);
  float *out = malloc((size_t)MAXB * 7 * sizeof *out);
  float *tgt = malloc((size_t)ROWS * 7 * sizeof *tgt);
  float *mask = malloc((size_t)ROWS * 7 * sizeof *mask);
  if (!in || !out || !tgt || !mask) return 1;
  pb_rng_t r;
  pb_rng_seed(&r, 1, 0);
  /* Connect Four-like planes: each cell holds at most one stone. */
  for (size_t i = 0; i < nin / 2; i++) {
    uint32_t c = pb_rng_below(&r, 3);
    in[2 * i] = c == 1;
    in[2 * i + 1] = c == 2;
  }
  for (int i = 0; i < ROWS * 7; i++) {
    tgt[i] = (float)(2.0 * pb_rng_uniform(&r) - 1.0);
    mask[i] = pb_rng_below(&r, 5) != 0;
  }

  char why[160];
  int native = pb_precision_native(device, why, sizeof why);
  printf(
      "bench_nn: device %s, %.2f s per cell, malloc %s; rates in "
      "positions/s; bf16 %s (%s)\n",
      device, secs, tune ? "tuned" : "default", native ? "native" : "emulated",
      why);
  printf("%-6s %7s %3s %4s %10s %10s %10s %10s %12s %10s %6s %10s %6s %6s\n",
         "model", "params", "thr", "prec", "fwd b1", "fwd b64", "fwd b256",
         "fwd b1024", "train b128", "x16", "ratio", "x16 b512", "ratio", "vs");
  for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
    pb_err_t err;
    pb_nn_opt_t opt = {3e-3f, 0.0f, 0.0f};
    pb_nn_t *nn = pb_nn_new(&models[m].spec, &opt, device, 1, &err);
    if (nn == NULL) {
      fprintf(stderr, "bench_nn: %s\n", err.msg);
      return 1;
    }
    for (int t = 0; t < nthreads; t++) {
      pb_nn_set_threads(threads[t]);
      double first = 0;
      for (int p = 0; p < nprecs; p++) {
        if (pb_nn_set_precision(nn, precs[p], &err) != 0) {
          fprintf(stderr, "bench_nn: %s\n", err.msg);
          return 1;
        }
        printf("%-6s %7ld %3d %4s", models[m].name, pb_nn_param_count(nn),
               threads[t], pb_precision_name(precs[p]));
        double b256 = 0;
        for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
          double r = rate_forward(nn, in, out, batches[b], secs);
          if (batches[b] == 256) b256 = r;
          printf(" %10.0f", r);
          fflush(stdout);
        }
        if (p == 0) first = b256;
        double one = rate_train(nn, in, tgt, mask, TRAIN_B, 0, secs);
        printf(" %12.0f", one);
        fflush(stdout);
        double chunked = rate_train(nn, in, tgt, mask, TRAIN_B, 1, secs);
        printf(" %10.0f %6.2f", chunked, chunked / one);
        fflush(stdout);
        double big = rate_train(nn, in, tgt, mask, BIG_B, 1, secs);
        printf(" %10.0f %6.2f %6.2f\n", big, big / chunked, b256 / first);
        fflush(stdout);
      }
    }
    pb_nn_destroy(&nn);
  }
  /* The learner's training (16 minibatches of 128 per call, as it trains)
   * on 1 and 2 threads (pb_nn_set_train_threads: data-parallel shards,
   * model.learner_threads), fp32, with the ratio to 1 thread; and the
   * libtorch operators one such step dispatches (pb_nn_count_ops). */
  pb_nn_set_threads(1);
  printf("\n%-6s %10s %10s %10s %6s %9s %9s %10s\n", "model", "train thr",
         "1 thread", "2 threads", "ratio", "cpu 1", "cpu 2", "ops/step");
  for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
    pb_err_t err;
    pb_nn_opt_t opt = {3e-3f, 1e-4f, 5.0f};
    pb_nn_t *nn = pb_nn_new(&models[m].spec, &opt, device, 1, &err);
    if (nn == NULL) {
      fprintf(stderr, "bench_nn: %s\n", err.msg);
      return 1;
    }
    double rate[2], cpu[2];
    for (int th = 1; th <= 2; th++) {
      pb_nn_set_train_threads(nn, th, &err);
      double c0 = cpu_now(), t0 = pb_now();
      rate[th - 1] = rate_train(nn, in, tgt, mask, TRAIN_B, 1, secs);
      /* CPU seconds of the process per wall second (warm-up included) */
      cpu[th - 1] = (cpu_now() - c0) / (pb_now() - t0);
    }
    pb_nn_set_train_threads(nn, 1, &err);
    long ops = -1;
    if (pb_nn_count_ops_start(&err) == 0) {
      train_round(nn, in, tgt, mask, TRAIN_B, 1, &err);
      ops = pb_nn_count_ops_stop();
    }
    printf("%-6s %10s %10.0f %10.0f %6.2f %9.2f %9.2f %10.1f\n",
           models[m].name, "x16 b128", rate[0], rate[1], rate[1] / rate[0],
           cpu[0], cpu[1], (double)ops / CHUNK);
    fflush(stdout);
    pb_nn_destroy(&nn);
  }
  pb_nn_set_threads(1);
  free(in);
  free(out);
  free(tgt);
  free(mask);
  return 0;
}
