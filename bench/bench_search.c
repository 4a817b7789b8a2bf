/* bench_search - beam-search throughput (Algorithm 1) on Connect Four with
 * real, randomly initialised V and Q networks.
 *
 *   bench_search [-n POSITIONS] [-r REPS] [-s SECONDS] [-E E] [-M M]
 *                [-m free,small,large] [-t THREADS] [-b EVAL_BATCH] [-p] [-w]
 *
 * Workload: POSITIONS (default 256) distinct positions drawn from random
 * games (uniform random moves from the initial position), searched with
 * E = 30, M = 3 as a search work item is. Figures, per model size:
 *
 *   reference   pb_beam_search_ref: one position at a time, one network
 *               call per node, no cache (the baseline of every ratio);
 *   P256+cache  pb_beam_run advancing 256 searches together through
 *               common/nn/neteval.h with its default cache (what a searcher
 *               runs);
 *   P256 nocache  the same with cache_entries 0 (what the cache is worth);
 *   P256+cache, batch<=512  as P256+cache with network calls of at most
 *               512 rows instead of 4096 (what the largest batch costs);
 *   P1+cache    pb_beam_run with parallel 1 (what the batch is worth);
 *   P256+cache, bf16  P256+cache with both networks in bf16
 *               (pb_nn_set_precision; -P fp32 leaves it out), its ratio
 *               against P256+cache in fp32 measured in the same passes.
 *
 * The batched figures are the best of REPS passes over all positions, each
 * starting with an empty cache (a searcher clears it whenever weights
 * change, i.e. every iteration); the cached and uncached passes alternate
 * so that both meet the same background load. The slow ones (reference,
 * P1) search positions one at a time for about SECONDS and are scaled.
 * Networks run on one libtorch thread, as model.threads = 1 in the
 * configs.
 *
 * -b sets the largest network batch of the evaluator (default: what the
 * searcher uses, pb_learn_eval_batch: 4096 for these settings).
 *
 * -T THREADS adds the threaded searcher (search.threads,
 * common/search/batcher.h): the positions split over THREADS threads of tree
 * work, each advancing 256 searches, all feeding one evaluator, in both
 * modes of the batcher (lock step, a searcher's on the CPU; overlapping,
 * on CUDA); against the same on one thread, all in wall-clock time (CPU
 * time would count every thread), best of REPS each, taking turns.
 *
 * The free evaluator (-m free, on by default): V and Q are hashes of the
 * state, no network and no cache, so the figures are the tree work alone
 * (a network that cost nothing, as a GPU nearly is for a searcher's
 * thread): P256 on one thread, per second of wall-clock time and of the
 * thread's CPU time; THREADS threads (-T, default 2) through the batcher,
 * overlapping (the mode of a searcher on CUDA) and in lock step (on the
 * CPU); and THREADS threads of their own without a batcher (the free
 * evaluator is thread-safe: the bound of the batcher), all in wall-clock
 * time with their ratio to one thread measured in the same run, taking
 * turns. Each figure is one run of the batcher over passes of all
 * positions for about SECONDS/2, best of REPS. Detail lines give the
 * kernel's account of each thread's time (running, waiting for a CPU: the
 * machine's other load, blocked: waiting in the batcher).
 *
 * Rates are per second of CPU time of this process (-w: of wall-clock
 * time). On a shared machine wall time measures the other load as much as
 * this code; CPU time is what an otherwise idle core would deliver.
 *
 * Output: one row per figure (figure, value, unit, ratio, baseline), and
 * detail lines starting with '#'. -p prints the rows tab-separated for
 * bench/run. Build with -DCMAKE_BUILD_TYPE=Release for numbers worth
 * quoting. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batcher.h"
#include "beam_search.h"
#include "config.h"
#include "game.h"
#include "learn.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "rng.h"
#include "util.h"

#include "bench_util.h"

/* n distinct non-terminal positions from random games: a position is drawn
 * uniformly from each game, so mid-game positions dominate as in real
 * self-play data. */
static void random_positions(const pb_game_t *g, pb_state_t *pos, int n,
                             uint64_t seed) {
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  pb_state_t hist[128];
  int k = 0;
  while (k < n) {
    pb_state_t s;
    g->reset(&s);
    int len = 0, done = 0;
    while (!done && len < g->max_turns && len < 128) {
      hist[len++] = s;
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&s, acts);
      g->step(&s, acts[pb_rng_below(&rng, (uint32_t)na)], &done);
    }
    const pb_state_t *c = &hist[pb_rng_below(&rng, (uint32_t)len)];
    int dup = 0;
    for (int i = 0; i < k && !dup; i++) dup = !memcmp(&pos[i], c, sizeof *c);
    if (!dup) pos[k++] = *c;
  }
}

/* The network batch bound of the extra row that shows how the largest
 * batch matters (the searcher's default is 4096 rows). */
enum { SMALL_BATCH = 512 };

typedef struct {
  const pb_game_t *g;
  pb_nn_t *v, *q;
  const pb_state_t *pos;
  int n, E, M, reps;
  double secs;
  int eval_batch;
  uint32_t cache_entries;
  int search_threads; /* -T: the threaded searcher's threads; 0 = not run */
  int bf16;           /* -P: also P256+cache in bf16 */
  float *out;
} ctx_t;

static void die(const char *what, const pb_err_t *err) {
  fprintf(stderr, "bench_search: %s: %s\n", what, err->msg);
  exit(1);
}

/* One batched configuration: its evaluator and searcher, created once. */
typedef struct {
  pb_neteval_t *ne;
  pb_beam_t *b;
  double best; /* shortest time of one pass over all positions */
  double rows; /* network rows evaluated per state */
} batched_t;

static void batched_init(ctx_t *c, batched_t *bt, int parallel, uint32_t cache,
                         int eval_batch) {
  pb_err_t err;
  memset(bt, 0, sizeof *bt);
  bt->best = 1e300;
  if ((bt->ne = pb_neteval_new(c->g, eval_batch, cache, &err)) == NULL)
    die("neteval", &err);
  if ((bt->b = pb_beam_new(c->g, c->E, c->M, parallel, &err)) == NULL)
    die("beam", &err);
}

/* One pass of pb_beam_run over all positions with a cold cache (a searcher
 * clears it whenever the weights change, i.e. every iteration). */
static void batched_pass(ctx_t *c, batched_t *bt) {
  pb_err_t err;
  pb_neteval_stats_t s0, s1;
  pb_evalfn_t fn = pb_neteval_fn(bt->ne);
  pb_neteval_bind(bt->ne, c->v, c->q);
  pb_neteval_stats(bt->ne, &s0);
  double t0 = bench_clock();
  if (pb_beam_run(bt->b, c->pos, c->n, &fn, c->out, &err) != 0)
    die("pb_beam_run", &err);
  double dt = bench_clock() - t0;
  if (dt < bt->best) bt->best = dt;
  pb_neteval_stats(bt->ne, &s1);
  bt->rows =
      (double)(s1.v_computed - s0.v_computed + s1.q_computed - s0.q_computed) /
      c->n;
}

static void batched_free(batched_t *bt) {
  pb_beam_destroy(&bt->b);
  pb_neteval_destroy(&bt->ne);
}

/* States/s of searching positions one at a time (the reference, or
 * pb_beam_run with parallel 1) for about c->secs: at least 4 positions,
 * then as many as the time allows, cycling through them. The cache (if
 * any) stays warm within one pass over the positions. */
static double run_one_by_one(ctx_t *c, int ref, uint32_t cache, int *done_n) {
  pb_err_t err;
  pb_neteval_t *ne = pb_neteval_new(c->g, c->eval_batch, cache, &err);
  if (ne == NULL) die("neteval", &err);
  pb_beam_t *b = NULL;
  if (!ref && (b = pb_beam_new(c->g, c->E, c->M, 1, &err)) == NULL)
    die("beam", &err);
  pb_neteval_bind(ne, c->v, c->q);
  pb_evalfn_t fn = pb_neteval_fn(ne);
  const int A = c->g->num_actions;
  float *tmp = malloc((size_t)A * sizeof *tmp);
  if (tmp == NULL) exit(1);
  int k = 0;
  double t0 = bench_clock(), t = t0;
  while (k < 4 || (t - t0 < c->secs && k < 100000)) {
    /* Every pass over the positions starts with a cold cache, as a pass
     * over a work item with new weights would. */
    if (k > 0 && k % c->n == 0) pb_neteval_bind(ne, c->v, c->q);
    const pb_state_t *s = &c->pos[k % c->n];
    float *o = k < c->n ? &c->out[(size_t)k * A] : tmp;
    int rc = ref ? pb_beam_search_ref(c->g, s, c->E, c->M, &fn, o, &err)
                 : pb_beam_run(b, s, 1, &fn, o, &err);
    if (rc != 0) die(ref ? "pb_beam_search_ref" : "pb_beam_run", &err);
    k++;
    t = bench_clock();
  }
  free(tmp);
  pb_beam_destroy(&b);
  pb_neteval_destroy(&ne);
  *done_n = k;
  return k / (t - t0);
}

/* ---- the free evaluator (-m free) ---------------------------------------- */

/* V and Q from a hash of the state: a real evalfn at about no cost (one
 * multiplication a state and one an action), so that a searcher's tree
 * work is measured alone. The batcher calls it one batch at a time like a
 * network, so its cost bounds the threads' scaling (Amdahl): it must stay
 * far below the tree work's. Thread-safe (no state). */
static uint64_t free_hash(const pb_state_t *s) {
  uint64_t h = 0;
  for (int i = 0; i < PB_STATE_WORDS; i++) h ^= s->w[i] << (i * 13 % 64);
  return h * 0x9E3779B97F4A7C15ull;
}

static float free_unit(uint64_t h) {
  return (float)((double)(h >> 40) * (2.0 / 16777216.0) - 1.0);
}

static int free_value(void *ctx, const pb_state_t *s, int n, float *out,
                      pb_err_t *err) {
  (void)ctx;
  (void)err;
  for (int i = 0; i < n; i++) out[i] = free_unit(free_hash(&s[i]));
  return 0;
}

static int free_qvalues(void *ctx, const pb_state_t *s, int n, float *out,
                        pb_err_t *err) {
  const pb_game_t *g = ctx;
  (void)err;
  const int A = g->num_actions;
  for (int i = 0; i < n; i++) {
    uint64_t h = free_hash(&s[i]);
    for (int a = 0; a < A; a++)
      out[i * A + a] =
          free_unit((h ^ ((uint64_t)a << 32)) * 0xD6E8FEB86659FD93ull);
  }
  return 0;
}

/* ---- the threaded searcher (-T) ---------------------------------------- */

typedef struct {
  ctx_t *c;
  pb_beam_t *beam[PB_BATCHER_MAX_THREADS];
  int members;
  int passes; /* passes_member: passes over the positions */
  double sched[PB_BATCHER_MAX_THREADS][3]; /* running, waiting, blocked */
} tjob_t;

static int tmember(void *ctx, int m, const pb_evalfn_t *ev, pb_err_t *err) {
  tjob_t *j = ctx;
  int lo = j->c->n * m / j->members, hi = j->c->n * (m + 1) / j->members;
  if (hi == lo) return 0;
  return pb_beam_run(j->beam[m], j->c->pos + lo, hi - lo, ev,
                     j->c->out + (size_t)lo * j->c->g->num_actions, err);
}

/* Shortest wall time of one pass over all positions with `members`
 * threads (1: pb_beam_run on this thread alone), cold cache each pass. */
static double threaded_best(ctx_t *c, int members, pb_batcher_t *b,
                            pb_neteval_t *ne, tjob_t *j, double best) {
  pb_err_t err;
  struct timespec t0, t1;
  pb_neteval_bind(ne, c->v, c->q);
  pb_evalfn_t fn = pb_neteval_fn(ne);
  j->members = members;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = members == 1
               ? pb_beam_run(j->beam[0], c->pos, c->n, &fn, c->out, &err)
               : pb_batcher_run(b, members, &fn, tmember, j, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rc != 0) die("threaded search", &err);
  double dt =
      (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  return dt < best ? dt : best;
}

static double thread_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* This thread's time on a CPU and waiting for one (ns, from the kernel's
 * schedstat), and the wall clock; 0 when the kernel does not say. */
static void thread_sched(double *run, double *rq, double *wall) {
  unsigned long long a = 0, b = 0;
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (f != NULL) {
    if (fscanf(f, "%llu %llu", &a, &b) != 2) a = b = 0;
    fclose(f);
  }
  *run = (double)a * 1e-9;
  *rq = (double)b * 1e-9;
  *wall = pb_now();
}

/* A member's share of all j->passes passes; notes in j->sched[m] the
 * shares of its time running, waiting for a CPU and blocked. */
static int passes_member(void *ctx, int m, const pb_evalfn_t *ev,
                         pb_err_t *err) {
  tjob_t *j = ctx;
  int rc = 0;
  double r0, q0, w0, r1, q1, w1;
  thread_sched(&r0, &q0, &w0);
  for (int k = 0; rc == 0 && k < j->passes; k++) rc = tmember(j, m, ev, err);
  thread_sched(&r1, &q1, &w1);
  double w = w1 - w0 > 0 ? w1 - w0 : 1e-9;
  j->sched[m][0] = (r1 - r0) / w;
  j->sched[m][1] = (q1 - q0) / w;
  j->sched[m][2] = 1 - j->sched[m][0] - j->sched[m][1];
  return rc;
}

/* Threads of their own, without the batcher (the free evaluator is
 * thread-safe): the bound of what the batcher can reach. */
typedef struct {
  tjob_t *j;
  int m, passes, rc;
} own_t;

static void *own_main(void *arg) {
  own_t *o = arg;
  pb_err_t err;
  pb_evalfn_t fn = {free_value, free_qvalues, (void *)o->j->c->g};
  o->j->passes = o->passes;
  o->rc = passes_member(o->j, o->m, &fn, &err);
  return NULL;
}

static double own_threads(ctx_t *c, int members, tjob_t *j, int passes) {
  pthread_t th[PB_BATCHER_MAX_THREADS];
  own_t o[PB_BATCHER_MAX_THREADS];
  j->members = members;
  double t0 = pb_now();
  for (int m = 0; m < members; m++) {
    o[m] = (own_t){j, m, passes, 0};
    if (pthread_create(&th[m], NULL, own_main, &o[m]) != 0) exit(1);
  }
  for (int m = 0; m < members; m++) pthread_join(th[m], NULL);
  double dt = pb_now() - t0;
  for (int m = 0; m < members; m++)
    if (o[m].rc != 0) exit(1);
  (void)c;
  return dt;
}

/* `passes` passes over all positions with `members` threads (1: on this
 * thread, without the batcher) over the free evaluator; returns the wall
 * time, the CPU time of this thread in *cpu and of the process (all its
 * threads) in *proc_cpu (when not NULL). */
static double free_passes(ctx_t *c, int members, pb_batcher_t *b, tjob_t *j,
                          int passes, double *cpu, double *proc_cpu) {
  pb_err_t err;
  pb_evalfn_t fn = {free_value, free_qvalues, (void *)c->g};
  j->members = members;
  struct timespec p0, p1;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p0);
  double c0 = thread_cpu_now(), t0 = pb_now();
  /* One run of the batcher for all passes, as a searcher's work item is
   * one run: threads started for a few milliseconds each would measure
   * how soon the kernel moves a new thread to an idle core. */
  j->passes = passes;
  int rc = 0;
  if (members > 1)
    rc = pb_batcher_run(b, members, &fn, passes_member, j, &err);
  for (int k = 0; members == 1 && rc == 0 && k < passes; k++)
    rc = pb_beam_run(j->beam[0], c->pos, c->n, &fn, c->out, &err);
  if (rc != 0) die("free search", &err);
  double dt = pb_now() - t0;
  *cpu = thread_cpu_now() - c0;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p1);
  if (proc_cpu != NULL)
    *proc_cpu = (double)(p1.tv_sec - p0.tv_sec) +
                1e-9 * (double)(p1.tv_nsec - p0.tv_nsec);
  return dt;
}

static void print_sched(const char *what, int T, double (*sh)[3]) {
  printf("# free: %d threads, %s: share of wall time running / waiting for "
         "a CPU / blocked:", T, what);
  for (int m = 0; m < T; m++)
    printf(" %.2f/%.2f/%.2f", sh[m][0], sh[m][1], sh[m][2]);
  printf("\n");
}

/* The tree work alone: one thread against T through the batcher in both
 * modes, and T threads of their own, over the free evaluator, in turns;
 * best of c->reps each. */
static void bench_free(ctx_t *c, int T) {
  pb_err_t err;
  const int A = c->g->num_actions;
  const size_t nout = (size_t)c->n * A;
  tjob_t j = {.c = c};
  for (int m = 0; m < T; m++)
    if ((j.beam[m] = pb_beam_new(c->g, c->E, c->M, 256, &err)) == NULL)
      die("beam", &err);
  pb_batcher_t *b[2] = {pb_batcher_new(c->g, T, &err),
                        pb_batcher_new(c->g, T, &err)};
  float *ref = malloc(nout * sizeof *ref);
  c->out = malloc(nout * sizeof *c->out);
  if (!b[0] || !b[1] || ref == NULL || c->out == NULL)
    die("free setup", &err);
  pb_batcher_set_mode(b[0], PB_BATCHER_OVERLAP);
  pb_batcher_set_mode(b[1], PB_BATCHER_GATHER);
  /* Passes per figure: about secs/2 of one thread. */
  double cpu, one_pass = free_passes(c, 1, NULL, &j, 1, &cpu, NULL);
  memcpy(ref, c->out, nout * sizeof *ref);
  int passes = (int)(c->secs / 2 / (one_pass > 1e-6 ? one_pass : 1e-6));
  if (passes < 1) passes = 1;
  /* [0] overlapping, [1] lock step, [2] no batcher */
  double one = 1e300, one_cpu = 1e300, many[3] = {1e300, 1e300, 1e300};
  double busy[2] = {0, 0}, pcpu;
  static double sched[3][PB_BATCHER_MAX_THREADS][3];
  int same = 1;
  for (int r = 0; r < c->reps; r++) {
    double t = free_passes(c, 1, NULL, &j, passes, &cpu, NULL);
    if (t < one) one = t;
    if (cpu < one_cpu) one_cpu = cpu;
    for (int k = 0; k < 3; k++) {
      memset(c->out, 0, nout * sizeof *c->out);
      t = k < 2 ? free_passes(c, T, b[k], &j, passes, &cpu, &pcpu)
                : own_threads(c, T, &j, passes);
      same &= !memcmp(ref, c->out, nout * sizeof *ref);
      if (t < many[k]) {
        many[k] = t;
        if (k < 2) busy[k] = pcpu / t;
        memcpy(sched[k], j.sched, (size_t)T * sizeof j.sched[0]);
      }
    }
  }
  const double states = (double)c->n * passes;
  static const char *const how[3] = {"overlapping", "lock step",
                                     "no batcher"};
  char fig[96];
  bench_row("search free: P256, 1 thread (wall)", states / one, "states/s", 0,
            "");
  bench_row("search free: P256, 1 thread (thread CPU)", states / one_cpu,
            "states/s", one / one_cpu, "free 1 thread (wall)");
  for (int k = 0; k < 3; k++) {
    snprintf(fig, sizeof fig, "search free: %d threads, %s (wall)", T, how[k]);
    bench_row(fig, states / many[k], "states/s", one / many[k],
              "free 1 thread (wall)");
  }
  snprintf(fig, sizeof fig, "search free: %d threads, overlapping, per thread",
           T);
  bench_row(fig, states / many[0] / T, "states/s", one / many[0] / T,
            "free 1 thread (wall)");
  double load[3] = {0, 0, 0};
  FILE *f = fopen("/proc/loadavg", "r");
  if (f != NULL) {
    if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
      load[0] = -1;
    fclose(f);
  }
  printf("# free: %d passes of %d positions a figure; targets %s one "
         "thread's; load average %.2f %.2f %.2f on %ld CPUs\n",
         passes, c->n, same ? "identical to" : "DIFFER from", load[0],
         load[1], load[2], sysconf(_SC_NPROCESSORS_ONLN));
  for (int k = 0; k < 2; k++) {
    pb_batcher_stats_t st;
    pb_batcher_stats(b[k], &st);
    printf("# free: %d threads, %s: %.2f member calls per batch, at most "
           "%llu; %.2f CPUs busy\n",
           T, how[k],
           (double)st.requests / (double)(st.batches ? st.batches : 1),
           (unsigned long long)st.max_requests, busy[k]);
  }
  /* From the kernel: waiting for a CPU is the machine's other load,
   * blocked time the batcher's waiting. */
  for (int k = 0; k < 3; k++) print_sched(how[k], T, sched[k]);
  if (!same) {
    fprintf(stderr, "bench_search: free: threaded targets differ\n");
    exit(1);
  }
  for (int k = 0; k < 2; k++) pb_batcher_destroy(&b[k]);
  for (int m = 0; m < T; m++) pb_beam_destroy(&j.beam[m]);
  free(ref);
  free(c->out);
  c->out = NULL;
}

static void bench_threads(ctx_t *c, const char *name, int T) {
  pb_err_t err;
  tjob_t j = {.c = c};
  for (int m = 0; m < T; m++)
    if ((j.beam[m] = pb_beam_new(c->g, c->E, c->M, 256, &err)) == NULL)
      die("beam", &err);
  pb_neteval_t *ne =
      pb_neteval_new(c->g, c->eval_batch, c->cache_entries, &err);
  /* [0] lock step (what a searcher on the CPU uses), [1] overlapping (on
   * CUDA) */
  pb_batcher_t *b[2] = {pb_batcher_new(c->g, T, &err),
                        pb_batcher_new(c->g, T, &err)};
  if (ne == NULL || !b[0] || !b[1]) die("threaded setup", &err);
  pb_batcher_set_mode(b[0], PB_BATCHER_GATHER);
  pb_batcher_set_mode(b[1], PB_BATCHER_OVERLAP);
  static const char *const how[2] = {"lock step", "overlapping"};
  double one = 1e300, many[2] = {1e300, 1e300};
  for (int r = 0; r < c->reps; r++) {
    one = threaded_best(c, 1, NULL, ne, &j, one);
    for (int k = 0; k < 2; k++)
      many[k] = threaded_best(c, T, b[k], ne, &j, many[k]);
  }
  char fig[96], base[96];
  snprintf(base, sizeof base, "%s P256 + cache, 1 thread (wall)", name);
  snprintf(fig, sizeof fig, "search %s: P256 + cache, 1 thread (wall)", name);
  bench_row(fig, c->n / one, "states/s", 0, "");
  for (int k = 0; k < 2; k++) {
    snprintf(fig, sizeof fig, "search %s: %d threads, one network, %s (wall)",
             name, T, how[k]);
    bench_row(fig, c->n / many[k], "states/s", one / many[k], base);
    pb_batcher_stats_t st;
    pb_batcher_stats(b[k], &st);
    printf(
        "# %s: %d threads, %s: %.1f member calls per network call, at most "
        "%llu in one batch\n",
        name, T, how[k],
        (double)st.requests / (double)(st.v_calls + st.q_calls + 1e-9),
        (unsigned long long)st.max_requests);
    pb_batcher_destroy(&b[k]);
  }
  pb_neteval_destroy(&ne);
  for (int m = 0; m < T; m++) pb_beam_destroy(&j.beam[m]);
}

static int bench_model(ctx_t *c, const char *name) {
  const int A = c->g->num_actions;
  size_t nout = (size_t)c->n * A;
  float *ref_out = malloc(nout * sizeof *ref_out);
  c->out = malloc(nout * sizeof *c->out);
  if (!ref_out || !c->out) {
    free(ref_out);
    free(c->out);
    return 1;
  }
  char fig[96], base[96];

  int nref = 0;
  double ref = run_one_by_one(c, 1, 0, &nref);
  memcpy(ref_out, c->out, nout * sizeof *ref_out);
  snprintf(base, sizeof base, "%s reference", name);
  snprintf(fig, sizeof fig, "search %s: reference (1 call/node)", name);
  bench_row(fig, ref, "states/s", 0, "");

  /* The three P256 configurations take turns, so that all meet the same
   * background load; each keeps its best pass. */
  batched_t bc, bn, bs, bb;
  batched_init(c, &bc, 256, c->cache_entries, c->eval_batch);
  batched_init(c, &bn, 256, 0, c->eval_batch);
  batched_init(c, &bs, 256, c->cache_entries, SMALL_BATCH);
  batched_init(c, &bb, 256, c->cache_entries, c->eval_batch);
  float *bf_out = malloc(nout * sizeof *bf_out);
  if (bf_out == NULL) exit(1);
  for (int r = 0; r < c->reps; r++) {
    batched_pass(c, &bn);
    batched_pass(c, &bs);
    if (c->bf16) {
      pb_nn_set_precision(c->v, PB_NN_BF16, NULL);
      pb_nn_set_precision(c->q, PB_NN_BF16, NULL);
      batched_pass(c, &bb);
      memcpy(bf_out, c->out, nout * sizeof *bf_out);
      pb_nn_set_precision(c->v, PB_NN_FP32, NULL);
      pb_nn_set_precision(c->q, PB_NN_FP32, NULL);
    }
    batched_pass(c, &bc);
  }
  double p256 = c->n / bc.best, p256n = c->n / bn.best;
  double p256s = c->n / bs.best, p256b = c->n / bb.best;
  double rows_c = bc.rows, rows_n = bn.rows;
  batched_free(&bc);
  batched_free(&bn);
  batched_free(&bs);
  batched_free(&bb);
  /* Agreement with the reference on the positions it searched (c->out
   * holds the last cached pass). Batch size changes the last bits of
   * libtorch's sums, so near-ties in priority may order differently:
   * small differences are possible, large ones are not. */
  int ncmp = nref < c->n ? nref : c->n;
  double maxdiff = 0;
  int differ = 0;
  for (int i = 0; i < ncmp; i++) {
    int d = 0;
    for (int a = 0; a < A; a++) {
      double x =
          fabs((double)c->out[(size_t)i * A + a] - ref_out[(size_t)i * A + a]);
      if (x > maxdiff) maxdiff = x;
      if (x > 1e-4) d = 1;
    }
    differ += d;
  }
  snprintf(fig, sizeof fig, "search %s: P256 + cache", name);
  bench_row(fig, p256, "states/s", p256 / ref, base);
  snprintf(fig, sizeof fig, "search %s: P256, no cache", name);
  bench_row(fig, p256n, "states/s", p256n / ref, base);
  snprintf(fig, sizeof fig, "search %s: P256 + cache, batch<=%d", name,
           SMALL_BATCH);
  bench_row(fig, p256s, "states/s", p256s / ref, base);
  if (c->bf16) {
    double bd = 0;
    for (size_t i = 0; i < nout; i++) {
      double x = fabs((double)bf_out[i] - (double)c->out[i]);
      if (x > bd) bd = x;
    }
    snprintf(fig, sizeof fig, "search %s: P256 + cache, bf16", name);
    snprintf(base, sizeof base, "%s P256 + cache (fp32)", name);
    bench_row(fig, p256b, "states/s", p256b / p256, base);
    printf("# %s: bf16 targets vs fp32: max |diff| %.3g over %d positions\n",
           name, bd, c->n);
  }
  free(bf_out);
  snprintf(base, sizeof base, "%s reference", name);
  int n1 = 0;
  double p1 = run_one_by_one(c, 0, c->cache_entries, &n1);
  snprintf(fig, sizeof fig, "search %s: P1 + cache", name);
  bench_row(fig, p1, "states/s", p1 / ref, base);
  snprintf(fig, sizeof fig, "search %s: cache effect (P256)", name);
  snprintf(base, sizeof base, "%s P256 no cache", name);
  bench_row(fig, p256 / p256n, "x", p256 / p256n, base);
  snprintf(fig, sizeof fig, "search %s: batch effect (cache)", name);
  snprintf(base, sizeof base, "%s P1 + cache", name);
  bench_row(fig, p256 / p1, "x", p256 / p1, base);
  printf(
      "# %s: network rows per state: %.1f with cache, %.1f without; "
      "reference timed on %d positions, P1 on %d\n",
      name, rows_c, rows_n, nref, n1);
  printf(
      "# %s: P256 vs reference on %d positions: %d differ by > 1e-4 "
      "(max |diff| %.3g; near-ties in Q may order differently)\n",
      name, ncmp, differ, maxdiff);
  if (c->search_threads > 1) bench_threads(c, name, c->search_threads);
  free(ref_out);
  free(c->out);
  c->out = NULL;
  return 0;
}

int main(int argc, char **argv) {
  int n = 256, reps = 3, E = 30, M = 3, threads = 1, eval_batch = 0;
  int search_threads = 0, bf16 = 1;
  double secs = 2.0;
  const char *models = "free,small,large";
  const char *ns = NULL, *rs = NULL, *ss = NULL, *es = NULL, *ms = NULL;
  const char *ts = NULL, *bs = NULL, *sts = NULL, *ps = NULL;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 'n', &ns),  PB_OPTS_VALUE(NULL, 'r', &rs),
      PB_OPTS_VALUE(NULL, 's', &ss),  PB_OPTS_VALUE(NULL, 'E', &es),
      PB_OPTS_VALUE(NULL, 'M', &ms),  PB_OPTS_VALUE(NULL, 'm', &models),
      PB_OPTS_VALUE(NULL, 't', &ts),  PB_OPTS_VALUE(NULL, 'b', &bs),
      PB_OPTS_VALUE(NULL, 'T', &sts), PB_OPTS_VALUE(NULL, 'P', &ps),
      PB_OPTS_FLAG(NULL, 'p', &parseable), PB_OPTS_FLAG(NULL, 'w', &use_wall)};
  bench_usage_text =
      "usage: bench_search [-n positions 1..4096] [-r reps 1..100] "
      "[-s seconds (0,600]] [-E E] [-M M] [-m free,small,large] "
      "[-t threads] [-b eval-batch] [-T search-threads] [-P fp32[,bf16]] "
      "[-p] [-w]\n";
  const pb_opts_t o = {"bench_search", bench_usage, rows, PB_OPTS_N(rows),
                       NULL, 0, NULL};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-n", ns, 1, 4096, &n);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-r", rs, 1, 100, &reps);
  if (rc == PB_OPTS_OK) rc = bench_opt_double(&o, "-s", ss, 1e-3, 600, &secs);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-E", es, 1, 10000, &E);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-M", ms, 1, 200, &M);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&o, "-t", ts, 1, 64, &threads);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&o, "-b", bs, 1, 1 << 16, &eval_batch);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&o, "-T", sts, 2, PB_BATCHER_MAX_THREADS,
                       &search_threads);
  if (rc == PB_OPTS_OK && ps != NULL && bench_parse_prec(ps, &bf16) != 0)
    rc = pb_opts_fail(&o, "-P wants fp32 or fp32,bf16, not '%s'", ps);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_nn_tune_malloc(NULL);
  pb_nn_set_threads(threads);

  const pb_game_t *g = &pb_game_connect4;
  pb_state_t *pos = malloc((size_t)n * sizeof *pos);
  if (pos == NULL) return 1;
  random_positions(g, pos, n, 2024);

  static const struct {
    const char *name;
    int conv, ch, dense, units;
  } sizes[] = {{"small", 2, 16, 1, 12}, {"large", 3, 32, 1, 64}};
  printf(
      "# bench_search: connect4, %d positions, E=%d M=%d, %d libtorch "
      "thread(s), best of %d, slow rows ~%.1fs, %s time\n",
      n, E, M, threads, reps, secs, use_wall ? "wall-clock" : "CPU");
  if (strstr(models, "free") != NULL) {
    ctx_t c = {.g = g, .pos = pos, .n = n, .E = E, .M = M, .reps = reps,
               .secs = secs};
    bench_free(&c, search_threads ? search_threads : 2);
  }
  for (size_t m = 0; m < sizeof sizes / sizeof sizes[0]; m++) {
    if (strstr(models, sizes[m].name) == NULL) continue;
    pb_config_t cfg;
    pb_err_t err;
    pb_config_defaults(&cfg);
    cfg.search.expansions = E;
    cfg.search.max_depth = M;
    cfg.model.v = cfg.model.q = (pb_config_net_t){
        sizes[m].conv, sizes[m].ch, sizes[m].dense, sizes[m].units, 0, "none"};
    pb_nn_spec_t vs, qs;
    pb_model_spec(&cfg, g, 0, &vs);
    pb_model_spec(&cfg, g, 1, &qs);
    ctx_t c = {
        .g = g,
        .pos = pos,
        .n = n,
        .E = E,
        .M = M,
        .reps = reps,
        .secs = secs,
        .eval_batch = eval_batch
                          ? eval_batch
                          : pb_learn_eval_batch(
                                cfg.search.parallel, cfg.search.expansions,
                                g->num_actions, cfg.train.selfplay_parallel),
        .cache_entries = (uint32_t)cfg.search.cache_entries,
        .search_threads = search_threads,
        .bf16 = bf16};
    c.v = pb_nn_new(&vs, NULL, "cpu", 11, &err);
    if (c.v == NULL) die("V network", &err);
    c.q = pb_nn_new(&qs, NULL, "cpu", 12, &err);
    if (c.q == NULL) die("Q network", &err);
    printf(
        "# %s: V %ld params, Q %ld params, cache %u entries, eval batch "
        "%d\n",
        sizes[m].name, pb_nn_param_count(c.v), pb_nn_param_count(c.q),
        c.cache_entries, c.eval_batch);
    int rc = bench_model(&c, sizes[m].name);
    pb_nn_destroy(&c.v);
    pb_nn_destroy(&c.q);
    if (rc) return 1;
  }
  free(pos);
  return 0;
}
