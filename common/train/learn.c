/* learn.c - the learner's training: creating the networks and their
 * scratch, V on episode outcomes (mixed with search values), Q on the
 * search's targets (or the AlphaZero policy + value network), the replay
 * window of earlier iterations, mirroring and the learning-rate schedule.
 * learn_state.c holds the checkpoints of the run state and the reports. */
#include "learn.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "learn_impl.h"
#include "linear.h"
#include "tdnet.h"
#include "model.h"
#include "invariant.h"

/* Minibatches go to the network up to PB__CHUNK_STEPS at a time (one
 * pb_nn_train_batches call: one upload, no read-back between steps, which
 * is what a CUDA device needs; on the CPU the same bits as one call per
 * step), and at most PB__CHUNK_ROWS rows unless one minibatch is larger. */
enum { PB__CHUNK_STEPS = 16, PB__CHUNK_ROWS = 16384 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

pb_learn_t *pb_learn_new(const pb_config_t *cfg, pb_err_t *err) {
  const pb_game_t *g = pb_game_by_name(cfg->game);
  if (g == NULL) {
    pb_err_set(err, PB_ECONFIG, "game: unknown game '%s' (known: %s)",
               cfg->game, pb_game_names());
    return NULL;
  }
  pb_learn_t *l = calloc(1, sizeof *l);
  if (l == NULL) {
    pb_err_set(err, PB_ENOMEM, "learn: out of memory");
    return NULL;
  }
  l->cfg = *cfg;
  l->g = g;
  if (pb_replay_init(&l->replay, g->num_actions, err) != 0) goto fail;
  pb_model_opt(cfg, 0, &l->vopt);
  pb_model_opt(cfg, 1, &l->qopt);
  uint64_t seed = (uint64_t)cfg->seed;
  const char *key;
  const char *dev = pb_config_device(cfg, PB_DEVICE_LEARNER, &key);
  char what[PB_CONFIG_NAME_MAX + 80];
  snprintf(what, sizeof what, "%s '%s' (the learner)", key, dev);
  l->nets = pb_algos_of(cfg)->nets;
  l->az = l->nets == PB_NETS_PV;
  if (pb_model_nets(cfg, g, dev, what, &l->v, &l->q, err) != 0) goto fail;
  int prec;
  if (pb_model_precision(cfg, PB_DEVICE_LEARNER, pb_nn_device(l->q), &prec,
                         l->precision_why, sizeof l->precision_why, err) != 0 ||
      (l->v != NULL && pb_nn_set_precision(l->v, prec, err) != 0) ||
      pb_nn_set_precision(l->q, prec, err) != 0)
    goto fail;
  /* train.cuda_batch_scale: on a CUDA learner, larger minibatches at
   * scaled rates (pb_model_batch_scale), in the learner's copy l->cfg */
  if (pb_model_batch_scale(&l->cfg, pb_nn_device(l->q), l->batch_why,
                           sizeof l->batch_why) > 1) {
    pb_model_opt(&l->cfg, 0, &l->vopt);
    pb_model_opt(&l->cfg, 1, &l->qopt);
    if ((l->v != NULL && pb_nn_set_opt(l->v, &l->vopt, err) != 0) ||
        pb_nn_set_opt(l->q, &l->qopt, err) != 0)
      goto fail;
  }
  /* model.learner_threads: each minibatch in shards on that many threads */
  const int lt = pb_model_learner_threads(cfg, pb_nn_device(l->q));
  if ((l->v != NULL && pb_nn_set_train_threads(l->v, lt, err) != 0) ||
      pb_nn_set_train_threads(l->q, lt, err) != 0)
    goto fail;
  if (l->nets == PB_NETS_LINEAR) {
    /* a linear evaluation (td): V, all weights zero at the
     * start (common/train/td.h). */
    pb_linear_t lin;
    if (pb_linear_init(&lin, g, err) != 0 || pb_tdnet_set(l->v, &lin, err) != 0)
      goto fail;
  }
  pb_rng_seed(&l->rng, seed, 0x7EA1);
  pb_rng_seed(&l->vrng, seed, 0x7EA2);
  int B = l->cfg.train.batch_size;
  int K = PB__CHUNK_ROWS / B;
  K = K < 1 ? 1 : K > PB__CHUNK_STEPS ? PB__CHUNK_STEPS : K;
  size_t in_size = (size_t)g->planes * g->height * g->width;
  size_t rows = (size_t)K * B;
  for (int k = 0; k < 2; k++) {
    trainer_t *t = &l->tr[k];
    size_t cols = (size_t)g->num_actions + 1; /* the PV net's rows */
    t->in = malloc(rows * in_size * sizeof *t->in);
    t->tgt = malloc(rows * cols * sizeof *t->tgt);
    t->mask = malloc(rows * cols * sizeof *t->mask);
    t->lrs = malloc((size_t)K * sizeof *t->lrs);
    t->loss = malloc((size_t)K * sizeof *t->loss);
    t->gnorm = malloc((size_t)K * sizeof *t->gnorm);
    t->parts = malloc((size_t)K * 2 * sizeof *t->parts);
    if (!t->in || !t->tgt || !t->mask || !t->lrs || !t->loss || !t->gnorm ||
        !t->parts) {
      pb_err_set(err, PB_ENOMEM, "learn: out of memory");
      goto fail;
    }
  }
  l->batch_cap = B;
  l->chunk_steps = K;
  return l;
fail:
  pb_learn_destroy(&l);
  return NULL;
}

void pb_learn_destroy(pb_learn_t **pl) {
  if (pl == NULL || *pl == NULL) return;
  pb_learn_t *l = *pl;
  pb_nn_destroy(&l->v);
  pb_nn_destroy(&l->q);
  for (int k = 0; k < 2; k++) {
    free(l->tr[k].in);
    free(l->tr[k].tgt);
    free(l->tr[k].mask);
    free(l->tr[k].lrs);
    free(l->tr[k].loss);
    free(l->tr[k].gnorm);
    free(l->tr[k].parts);
    free(l->tr[k].order);
  }
  free(l->uniq);
  free(l->uniq_of);
  free(l->uniq_count);
  free(l->table);
  free(l->vt);
  pb_replay_free(&l->replay);
  free(l->org_ep);
  free(l->org_uniq);
  free(l);
  *pl = NULL;
}

const pb_game_t *pb_learn_game(const pb_learn_t *l) { return l->g; }
pb_nn_t *pb_learn_v(pb_learn_t *l) { return l->v; }
pb_nn_t *pb_learn_q(pb_learn_t *l) { return l->q; }
uint64_t pb_learn_version(const pb_learn_t *l) { return l->version; }
int pb_learn_nets(const pb_learn_t *l) { return l->nets; }

const char *pb_learn_precision(const pb_learn_t *l) {
  return l->precision_why;
}

const char *pb_learn_batch(const pb_learn_t *l) { return l->batch_why; }

size_t pb_learn_cap_replay(const pb_learn_t *l, pb_episodes_t *eps) {
  return pb_episodes_keep_newest(eps, (size_t)l->cfg.train.replay_capacity);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 1024;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * elem);
  if (q == NULL) return -1;
  *p = q;
  *cap = n;
  return 0;
}

/* A fresh random order of the n training samples. */
static int shuffle(trainer_t *t, size_t n, pb_err_t *err) {
  if (grow((void **)&t->order, &t->order_cap, n, sizeof *t->order))
    return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
  for (size_t i = 0; i < n; i++) t->order[i] = (uint32_t)i;
  pb_rng_shuffle_u32(t->rng, t->order, n);
  return 0;
}

static void stats_add(pb_learn_stats_t *st, float loss, double gn,
                      double lr) {
  if (st->steps == 0) st->loss_first = loss;
  st->loss_last = loss;
  st->loss_mean += loss;
  st->steps++;
  if (gn > st->grad_norm_max) st->grad_norm_max = gn;
  st->grad_norm_mean += gn;
  st->lr = lr;
}

static void stats_end(pb_learn_stats_t *st, double t0) {
  if (st->steps) {
    st->loss_mean /= (double)st->steps;
    st->grad_norm_mean /= (double)st->steps;
  }
  st->seconds = now_s() - t0;
}

/* Whether the learning rate follows a schedule (else it is the configured
 * one, never touched: the paper's constant rate, bit for bit). */
static int scheduled(const pb_learn_t *l) {
  return l->cfg.train.lr_warmup_steps > 0 || l->cfg.train.lr_decay_iterations > 0;
}

/* The scheduled learning rate of the network's Adam step number `step`
 * (0-based): a linear warm-up over the first lr_warmup_steps steps, and a
 * cosine decay over lr_decay_iterations iterations down to lr_min_factor. */
static float lr_at(const pb_learn_t *l, const pb_nn_opt_t *base, int64_t step) {
  const int W = l->cfg.train.lr_warmup_steps, D = l->cfg.train.lr_decay_iterations;
  double f = 1.0;
  if (W > 0 && step < W) f *= (double)(step + 1) / W;
  if (D > 0) {
    double t = (double)l->version / D;
    if (t > 1.0) t = 1.0;
    double mn = l->cfg.train.lr_min_factor;
    f *= mn + (1.0 - mn) * 0.5 * (1.0 + cos(M_PI * t));
  }
  return (float)(base->lr * f);
}

/* Trains nn on the `rows` rows in t (minibatches of the configured size,
 * the last one may be shorter) in one pb_nn_train_batches call, with the
 * scheduled rate of each step, and adds each step to st (and its loss
 * parts to st's means when pv). */
static int train_chunk(pb_learn_t *l, trainer_t *t, pb_nn_t *nn,
                       const pb_nn_opt_t *base, const float *mask, size_t rows,
                       int pv, pb_learn_stats_t *st, pb_err_t *err) {
  const int B = l->batch_cap, k = (int)((rows + B - 1) / B);
  const int64_t s0 = pb_nn_train_steps(nn);
  if (scheduled(l))
    for (int j = 0; j < k; j++) t->lrs[j] = lr_at(l, base, s0 + j);
  int rc = pb_nn_train_batches(nn, t->in, t->tgt, mask, (int)rows, B,
                               scheduled(l) ? t->lrs : NULL, t->loss, t->gnorm,
                               t->parts, err);
  if (rc != 0) return rc;
  for (int j = 0; j < k; j++) {
    stats_add(st, t->loss[j], t->gnorm[j], scheduled(l) ? t->lrs[j] : base->lr);
    if (pv) {
      st->policy_loss_mean += t->parts[2 * j];
      st->value_loss_mean += t->parts[2 * j + 1];
    }
  }
  return 0;
}

/* Whether a sample is mirrored (train.augment = mirror, probability 1/2,
 * from the training stream). */
static int flip(const pb_learn_t *l, trainer_t *t) {
  return l->g->mirror != NULL && !strcmp(l->cfg.train.augment, "mirror") &&
         (pb_rng_next(t->rng) >> 63);
}

int pb_learn_v_first(const pb_learn_t *l) {
  return !(l->cfg.train.v_search_mix > 0.0);
}

/* The search value of a position: the best Q target over its legal
 * actions (what the beam search says the side to move gets). */
static float search_value(const pb_game_t *g, const pb_state_t *s,
                          const float *qrow) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  float best = -INFINITY;
  for (int k = 0; k < n; k++)
    if (qrow[acts[k]] > best) best = qrow[acts[k]];
  return n > 0 ? best : 0.0f;
}

/* V targets of the current positions into l->vt: the outcome, blended
 * with the search value when qtargets is given and v_search_mix > 0 (the
 * distinct positions of eps must be those of the last pb_learn_distinct). */
static int current_v_targets(pb_learn_t *l, const pb_episodes_t *eps,
                             const float *qtargets, pb_err_t *err) {
  const size_t n = eps->n_states;
  if (grow((void **)&l->vt, &l->vt_cap, n ? n : 1, sizeof *l->vt))
    return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
  pb_episodes_targets(eps, l->vt);
  const double m = l->cfg.train.v_search_mix;
  if (qtargets != NULL && m > 0.0 && !l->az) {
    const int A = l->g->num_actions;
    for (size_t i = 0; i < n; i++) {
      float sv = search_value(l->g, &eps->states[i],
                              &qtargets[(size_t)l->uniq_of[i] * A]);
      l->vt[i] = (float)((1.0 - m) * l->vt[i] + m * sv);
    }
  }
  return 0;
}

/* Total samples: the current positions and the replay window's. */
static size_t n_samples(const pb_learn_t *l, size_t n_cur) {
  return n_cur + pb_replay_positions(&l->replay);
}

/* Sample k (< n_samples): its position, V target and Q row. */
static void sample(const pb_learn_t *l, const pb_episodes_t *eps,
                   const float *qtargets, size_t k, const pb_state_t **s,
                   float *v, const float **q) {
  const size_t A = (size_t)l->g->num_actions;
  if (k < eps->n_states) {
    *s = &eps->states[k];
    if (v) *v = l->vt[k];
    pb_assert(qtargets == NULL || l->uniq_of[k] < l->n_uniq);
    if (q) *q = qtargets ? &qtargets[(size_t)l->uniq_of[k] * A] : NULL;
    return;
  }
  pb_replay_sample(&l->replay, k - eps->n_states, s, v, q);
}

static int train_v(pb_learn_t *l, trainer_t *t, const pb_episodes_t *eps,
                   const float *qtargets, pb_learn_stats_t *st,
                   pb_err_t *err) {
  const pb_game_t *g = l->g;
  const size_t CB = (size_t)l->batch_cap * l->chunk_steps;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  pb_learn_stats_t s = {0};
  double t0 = now_s();
  int rc = current_v_targets(l, eps, qtargets, err);
  const size_t n = n_samples(l, eps->n_states);
  for (int ep = 0; ep < l->cfg.train.v_epochs && rc == 0; ep++) {
    if ((rc = shuffle(t, n, err)) != 0) break;
    for (size_t b = 0; b < n && rc == 0; b += CB) {
      size_t m = n - b < CB ? n - b : CB;
      for (size_t j = 0; j < m; j++) {
        const pb_state_t *ps = NULL;
        sample(l, eps, NULL, t->order[b + j], &ps, &t->tgt[j], NULL);
        pb_state_t mir;
        if (flip(l, t)) {
          g->mirror(ps, &mir);
          ps = &mir;
        }
        g->encode(ps, &t->in[j * in_size]);
      }
      rc = train_chunk(l, t, l->v, &l->vopt, NULL, m, 0, &s, err);
      s.samples += m;
    }
  }
  stats_end(&s, t0);
  if (st) *st = s;
  return rc;
}

int pb_learn_train_v(pb_learn_t *l, const pb_episodes_t *eps,
                     const float *qtargets, pb_learn_stats_t *st,
                     pb_err_t *err) {
  l->tr[0].rng = pb_learn_v_first(l) ? &l->rng : &l->vrng;
  return train_v(l, &l->tr[0], eps, qtargets, st, err);
}

int pb_learn_distinct(pb_learn_t *l, const pb_episodes_t *eps, size_t *n_out,
                      pb_err_t *err) {
  const size_t n = eps->n_states;
  size_t tsize = 1024;
  while (tsize < 2 * n) tsize *= 2;
  if (grow((void **)&l->uniq, &l->uniq_cap, n, sizeof *l->uniq) ||
      grow((void **)&l->uniq_of, &l->of_cap, n, sizeof *l->uniq_of) ||
      grow((void **)&l->uniq_count, &l->count_cap, n,
           sizeof *l->uniq_count) ||
      grow((void **)&l->table, &l->table_cap, tsize, sizeof *l->table))
    return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
  memset(l->table, 0, tsize * sizeof *l->table);
  size_t nu = 0;
  if (l->az) { /* every position has its own visit counts: no merging */
    if (n > 0) memcpy(l->uniq, eps->states, n * sizeof *l->uniq);
    for (size_t i = 0; i < n; i++) {
      l->uniq_of[i] = (uint32_t)i;
      l->uniq_count[i] = 1;
    }
    l->n_uniq = n;
    *n_out = n;
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    const pb_state_t *s = &eps->states[i];
    size_t h = (size_t)l->g->hash(s) & (tsize - 1);
    for (;;) {
      uint32_t e = l->table[h];
      if (e == 0) {
        l->uniq[nu] = *s;
        l->uniq_count[nu] = 1;
        l->table[h] = (uint32_t)++nu;
        l->uniq_of[i] = (uint32_t)(nu - 1);
        break;
      }
      if (!memcmp(&l->uniq[e - 1], s, sizeof *s)) {
        l->uniq_of[i] = e - 1;
        l->uniq_count[e - 1]++;
        break;
      }
      h = (h + 1) & (tsize - 1);
    }
  }
  l->n_uniq = nu;
  *n_out = nu;
  return 0;
}

const pb_state_t *pb_learn_distinct_states(const pb_learn_t *l) {
  return l->uniq;
}

const uint32_t *pb_learn_distinct_counts(const pb_learn_t *l) {
  return l->uniq_count;
}

/* Trains the Q slot for train.q_epochs passes over every position of eps
 * and of the replay window. Q (pv 0): target the row of qtargets, masked
 * to the legal actions. The policy+value network (pv 1): the same row
 * (the visit distribution, 0 on illegal actions) and one more column, the
 * outcome, always counted; the loss's two parts are averaged into st. */
static int train_q_rows(pb_learn_t *l, const pb_episodes_t *eps,
                        const float *qtargets, int pv, pb_learn_stats_t *st,
                        pb_err_t *err) {
  const pb_game_t *g = l->g;
  const int A = g->num_actions, C = A + (pv ? 1 : 0);
  const size_t CB = (size_t)l->batch_cap * l->chunk_steps;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  trainer_t *t = &l->tr[1];
  t->rng = &l->rng;
  pb_learn_stats_t s = {0};
  double t0 = now_s();
  int rc = 0;
  const size_t n = n_samples(l, eps->n_states);
  for (int ep = 0; ep < l->cfg.train.q_epochs && rc == 0; ep++) {
    if ((rc = shuffle(t, n, err)) != 0) break;
    for (size_t b = 0; b < n && rc == 0; b += CB) {
      size_t m = n - b < CB ? n - b : CB;
      for (size_t j = 0; j < m; j++) {
        const pb_state_t *ps = NULL;
        const float *qrow = NULL;
        float z = 0;
        sample(l, eps, qtargets, t->order[b + j], &ps, pv ? &z : NULL, &qrow);
        float *tg = &t->tgt[j * C], *mk = &t->mask[j * C];
        memset(mk, 0, (size_t)A * sizeof *mk);
        uint8_t acts[PB_MAX_ACTIONS];
        int na = g->legal(ps, acts);
        if (flip(l, t)) {
          pb_state_t mir;
          g->mirror(ps, &mir);
          g->encode(&mir, &t->in[j * in_size]);
          for (int a = 0; a < A; a++) tg[g->mirror_action(a)] = qrow[a];
          for (int k = 0; k < na; k++) mk[g->mirror_action(acts[k])] = 1.0f;
        } else {
          g->encode(ps, &t->in[j * in_size]);
          memcpy(tg, qrow, (size_t)A * sizeof(float));
          for (int k = 0; k < na; k++) mk[acts[k]] = 1.0f;
        }
        if (pv) {
          tg[A] = z;
          mk[A] = 1.0f;
        }
      }
      rc = train_chunk(l, t, l->q, &l->qopt, t->mask, m, pv, &s, err);
      s.samples += m;
    }
  }
  if (s.steps) {
    s.policy_loss_mean /= (double)s.steps;
    s.value_loss_mean /= (double)s.steps;
  }
  stats_end(&s, t0);
  if (st) *st = s;
  return rc;
}

int pb_learn_train_q(pb_learn_t *l, const pb_episodes_t *eps,
                     const float *qtargets, pb_learn_stats_t *st,
                     pb_err_t *err) {
  return train_q_rows(l, eps, qtargets, 0, st, err);
}

int pb_learn_train_pv(pb_learn_t *l, const pb_episodes_t *eps,
                      pb_learn_stats_t *st, pb_err_t *err) {
  if (!l->az)
    return pb_err_set(err, PB_EINVAL, "learn: train_pv in a probs run");
  if (eps->n_states > 0 && eps->policy_width != l->g->num_actions)
    return pb_err_set(err, PB_EINVAL,
                      "learn: episodes without policy targets in an "
                      "alphazero run");
  size_t nd = 0;
  int rc = pb_learn_distinct(l, eps, &nd, err); /* identity: uniq_of[i] = i */
  if (rc == 0) rc = current_v_targets(l, eps, NULL, err);
  if (rc == 0) rc = train_q_rows(l, eps, eps->policy, 1, st, err);
  return rc;
}

/* V's half of pb_learn_train_after_search, on its own thread. */
typedef struct {
  pb_learn_t *l;
  const pb_episodes_t *eps;
  const float *qtargets;
  pb_learn_stats_t st;
  int rc;
  pb_err_t err;
} vjob_t;

static void *vjob_run(void *p) {
  vjob_t *j = p;
  pb_nn_set_threads(j->l->cfg.model.threads);
  j->l->tr[0].rng = &j->l->vrng;
  j->rc = train_v(j->l, &j->l->tr[0], j->eps, j->qtargets, &j->st, &j->err);
  return NULL;
}

int pb_learn_train_after_search(pb_learn_t *l, const pb_episodes_t *eps,
                                const float *qtargets, pb_learn_stats_t *vst,
                                pb_learn_stats_t *qst, pb_err_t *err) {
  if (pb_learn_v_first(l)) return pb_learn_train_q(l, eps, qtargets, qst, err);
  vjob_t j;
  memset(&j, 0, sizeof j);
  j.l = l;
  j.eps = eps;
  j.qtargets = qtargets;
  pthread_t tid;
  int threaded = pthread_create(&tid, NULL, vjob_run, &j) == 0;
  if (!threaded) vjob_run(&j); /* no thread to be had: one after the other */
  int rc = pb_learn_train_q(l, eps, qtargets, qst, err);
  if (threaded) pthread_join(tid, NULL);
  if (rc == 0 && j.rc != 0) {
    rc = j.rc;
    if (err) *err = j.err;
  }
  if (vst) *vst = j.st;
  return rc;
}

int pb_learn_end_iteration(pb_learn_t *l, const pb_episodes_t *eps,
                           const float *qtargets, pb_err_t *err) {
  const int keep = l->cfg.train.replay_iterations - 1;
  if (keep > 0 && eps->n_states > 0) {
    const size_t n = eps->n_states, A = (size_t)l->g->num_actions;
    int rc = current_v_targets(l, eps, qtargets, err);
    if (rc != 0) return rc;
    pb_replay_iter_t *p = pb_replay_push(&l->replay, n, keep, err);
    if (p == NULL) return PB_ENOMEM;
    memcpy(p->states, eps->states, n * sizeof *p->states);
    memcpy(p->v, l->vt, n * sizeof *p->v);
    for (size_t i = 0; i < n; i++)
      memcpy(&p->q[i * A], &qtargets[(size_t)l->uniq_of[i] * A],
             A * sizeof *p->q);
    /* Who delivered each position (pb_learn_set_origin; else 0). */
    if (l->n_org_ep == eps->n_eps)
      for (size_t k = 0; k < eps->n_eps; k++)
        for (uint32_t t = 0; t < eps->len[k]; t++)
          p->by[((size_t)eps->start[k] + t) * PB_REPLAY_BY +
                PB_REPLAY_BY_SELFPLAY] = l->org_ep[k];
    if (l->n_org_uniq > 0 && l->n_org_uniq == l->n_uniq)
      for (size_t i = 0; i < n; i++)
        p->by[i * PB_REPLAY_BY + PB_REPLAY_BY_SEARCH] =
            l->org_uniq[l->uniq_of[i]];
  } else {
    pb_replay_trim(&l->replay, keep > 0 ? keep : 0);
  }
  l->n_org_ep = l->n_org_uniq = 0; /* for this iteration only */
  l->version++;
  return 0;
}

size_t pb_learn_replay_positions(const pb_learn_t *l) {
  return n_samples(l, 0);
}

/* *dst (capacity *cap) holds a copy of src[0..n); 0 or -1. */
static int copy_tags(uint64_t **dst, size_t *cap, const uint64_t *src,
                     size_t n) {
  if (n > *cap) {
    uint64_t *t = realloc(*dst, n * sizeof *t);
    if (t == NULL) return -1;
    *dst = t;
    *cap = n;
  }
  if (n > 0) memcpy(*dst, src, n * sizeof *src);
  return 0;
}

int pb_learn_set_origin(pb_learn_t *l, const uint64_t *ep, size_t n_eps,
                        const uint64_t *uniq, size_t n_uniq, pb_err_t *err) {
  l->n_org_ep = l->n_org_uniq = 0;
  if (uniq == NULL) n_uniq = 0;
  if (copy_tags(&l->org_ep, &l->org_ep_cap, ep, n_eps) != 0 ||
      copy_tags(&l->org_uniq, &l->org_uniq_cap, uniq, n_uniq) != 0)
    return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
  l->n_org_ep = n_eps;
  l->n_org_uniq = n_uniq;
  return 0;
}

size_t pb_learn_replay_drop(pb_learn_t *l, const uint64_t *tags, size_t n) {
  return pb_replay_drop(&l->replay, tags, n);
}

const pb_replay_t *pb_learn_replay(const pb_learn_t *l) {
  return &l->replay;
}
