#include "learn.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckpt.h"
#include "json.h"
#include "model.h"

/* One earlier iteration's training data. */
typedef struct {
  size_t n;
  pb_state_t *states;
  float *v; /* V targets */
  float *q; /* n * num_actions Q targets */
} past_t;

#define PB_LEARN_MAX_PAST 1000

/* Minibatches go to the network up to PB__CHUNK_STEPS at a time (one
 * pb_nn_train_batches call: one upload, no read-back between steps, which
 * is what a CUDA device needs; on the CPU the same bits as one call per
 * step), and at most PB__CHUNK_ROWS rows unless one minibatch is larger. */
enum { PB__CHUNK_STEPS = 16, PB__CHUNK_ROWS = 16384 };

/* One network's training scratch, grown as needed, reused across
 * iterations, and the random stream it draws from. */
typedef struct {
  float *in, *tgt, *mask; /* chunk_steps minibatches */
  float *lrs, *loss;      /* per step of a chunk */
  double *gnorm, *parts;
  uint32_t *order;
  size_t order_cap;
  pb_rng_t *rng;
} trainer_t;

static void past_free(past_t *p) {
  free(p->states);
  free(p->v);
  free(p->q);
  memset(p, 0, sizeof *p);
}

struct pb_learn {
  pb_config_t cfg;
  const pb_game_t *g;
  pb_nn_t *v, *q;
  uint64_t version;
  pb_rng_t rng;  /* minibatch order and mirroring */
  pb_rng_t vrng; /* the same for V when it trains beside Q (after the
                    search), so that the two threads never share a stream */
  trainer_t tr[2]; /* scratch of V (0) and Q (1) */
  int batch_cap;
  int chunk_steps; /* minibatches per pb_nn_train_batches call */
  /* distinct positions of the current iteration */
  pb_state_t *uniq;
  uint32_t *uniq_of; /* stored position -> distinct index */
  uint32_t *table;   /* open addressing: distinct index + 1, 0 = empty */
  size_t uniq_cap, of_cap, table_cap, n_uniq;
  /* V targets of the current positions */
  float *vt;
  size_t vt_cap;
  /* the replay window: data of up to train.replay_iterations - 1 earlier
   * iterations, oldest first */
  past_t past[PB_LEARN_MAX_PAST];
  int n_past;
  pb_nn_opt_t vopt, qopt; /* the configured optimizer settings */
  int az;                 /* algorithm: alphazero (v is NULL) */
};

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
  pb_model_opt(cfg, 0, &l->vopt);
  pb_model_opt(cfg, 1, &l->qopt);
  uint64_t seed = (uint64_t)cfg->seed;
  const char *key;
  const char *dev = pb_config_device(cfg, PB_DEVICE_LEARNER, &key);
  char what[PB_CONFIG_NAME_MAX + 80];
  snprintf(what, sizeof what, "%s '%s' (the learner)", key, dev);
  l->az = pb_config_alphazero(cfg);
  if (pb_model_nets(cfg, g, dev, what, &l->v, &l->q, err) != 0) goto fail;
  pb_rng_seed(&l->rng, seed, 0x7EA1);
  pb_rng_seed(&l->vrng, seed, 0x7EA2);
  int B = cfg->train.batch_size;
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
  free(l->table);
  free(l->vt);
  for (int i = 0; i < l->n_past; i++) past_free(&l->past[i]);
  free(l);
  *pl = NULL;
}

const pb_game_t *pb_learn_game(const pb_learn_t *l) { return l->g; }
pb_nn_t *pb_learn_v(pb_learn_t *l) { return l->v; }
pb_nn_t *pb_learn_q(pb_learn_t *l) { return l->q; }
uint64_t pb_learn_version(const pb_learn_t *l) { return l->version; }
int pb_learn_alphazero(const pb_learn_t *l) { return l->az; }

size_t pb_learn_cap_replay(const pb_learn_t *l, pb_episodes_t *eps) {
  size_t cap = (size_t)l->cfg.train.replay_capacity, drop = 0, kept = 0;
  if (eps->n_states <= cap) return 0;
  /* Keep the newest whole episodes that fit. */
  size_t k = eps->n_eps;
  while (k > 0 && kept + eps->len[k - 1] <= cap) kept += eps->len[--k];
  drop = k;
  if (drop == 0) return 0;
  size_t from = eps->start[drop];
  memmove(eps->states, eps->states + from, kept * sizeof *eps->states);
  if (eps->policy_width > 0) {
    const size_t w = (size_t)eps->policy_width;
    memmove(eps->policy, eps->policy + from * w,
            kept * w * sizeof *eps->policy);
  }
  for (size_t j = drop; j < eps->n_eps; j++) {
    size_t d = j - drop;
    eps->start[d] = eps->start[j] - (uint32_t)from;
    eps->len[d] = eps->len[j];
    eps->reward[d] = eps->reward[j];
    eps->version[d] = eps->version[j];
  }
  eps->n_eps -= drop;
  eps->n_states = kept;
  return drop;
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
  size_t n = n_cur;
  for (int i = 0; i < l->n_past; i++) n += l->past[i].n;
  return n;
}

/* Sample k (< n_samples): its position, V target and Q row. */
static void sample(const pb_learn_t *l, const pb_episodes_t *eps,
                   const float *qtargets, size_t k, const pb_state_t **s,
                   float *v, const float **q) {
  const size_t A = (size_t)l->g->num_actions;
  if (k < eps->n_states) {
    *s = &eps->states[k];
    if (v) *v = l->vt[k];
    if (q) *q = qtargets ? &qtargets[(size_t)l->uniq_of[k] * A] : NULL;
    return;
  }
  k -= eps->n_states;
  for (int i = 0; i < l->n_past; i++) {
    if (k < l->past[i].n) {
      *s = &l->past[i].states[k];
      if (v) *v = l->past[i].v[k];
      if (q) *q = &l->past[i].q[k * A];
      return;
    }
    k -= l->past[i].n;
  }
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
      grow((void **)&l->table, &l->table_cap, tsize, sizeof *l->table))
    return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
  memset(l->table, 0, tsize * sizeof *l->table);
  size_t nu = 0;
  if (l->az) { /* every position has its own visit counts: no merging */
    if (n > 0) memcpy(l->uniq, eps->states, n * sizeof *l->uniq);
    for (size_t i = 0; i < n; i++) l->uniq_of[i] = (uint32_t)i;
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
        l->table[h] = (uint32_t)++nu;
        l->uniq_of[i] = (uint32_t)(nu - 1);
        break;
      }
      if (!memcmp(&l->uniq[e - 1], s, sizeof *s)) {
        l->uniq_of[i] = e - 1;
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

/* Drops the oldest iterations of the window until at most `keep` are
 * left. */
static void trim_window(pb_learn_t *l, int keep) {
  if (keep < 0) keep = 0;
  while (l->n_past > keep) {
    past_free(&l->past[0]);
    memmove(&l->past[0], &l->past[1],
            (size_t)(l->n_past - 1) * sizeof l->past[0]);
    memset(&l->past[l->n_past - 1], 0, sizeof l->past[0]);
    l->n_past--;
  }
}

int pb_learn_end_iteration(pb_learn_t *l, const pb_episodes_t *eps,
                           const float *qtargets, pb_err_t *err) {
  const int keep = l->cfg.train.replay_iterations - 1;
  if (keep > 0 && eps->n_states > 0) {
    const size_t n = eps->n_states, A = (size_t)l->g->num_actions;
    int rc = current_v_targets(l, eps, qtargets, err);
    if (rc != 0) return rc;
    past_t p = {n, malloc(n * sizeof *p.states), malloc(n * sizeof *p.v),
                malloc(n * A * sizeof *p.q)};
    if (p.states == NULL || p.v == NULL || p.q == NULL) {
      past_free(&p);
      return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
    }
    memcpy(p.states, eps->states, n * sizeof *p.states);
    memcpy(p.v, l->vt, n * sizeof *p.v);
    for (size_t i = 0; i < n; i++)
      memcpy(&p.q[i * A], &qtargets[(size_t)l->uniq_of[i] * A],
             A * sizeof *p.q);
    trim_window(l, keep - 1);
    l->past[l->n_past++] = p;
  } else {
    trim_window(l, keep > 0 ? keep : 0);
  }
  l->version++;
  return 0;
}

size_t pb_learn_replay_positions(const pb_learn_t *l) {
  return n_samples(l, 0);
}

/* ---- checkpoints ---------------------------------------------------- */

static void put64(uint8_t *p, uint64_t x) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(x >> (8 * i));
}
static uint64_t get64(const uint8_t *p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)p[i] << (8 * i);
  return x;
}

/* The replay window as a checkpoint section (little-endian):
 *   u64 magic "PBREPLAY", u32 num_actions, u32 iterations, then per
 *   iteration u64 n, n positions (4 u64 words each), n f32 V targets,
 *   n * num_actions f32 Q targets. */
#define REPLAY_MAGIC 0x59414C5045524250ull /* "PBREPLAY" */

static void put32(uint8_t *p, uint32_t x) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(x >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) x |= (uint32_t)p[i] << (8 * i);
  return x;
}
static void putf(uint8_t *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put32(p, u);
}
static float getf(const uint8_t *p) {
  uint32_t u = get32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint8_t *replay_encode(const pb_learn_t *l, size_t *len) {
  const size_t A = (size_t)l->g->num_actions;
  size_t n = 16;
  for (int i = 0; i < l->n_past; i++)
    n += 8 + l->past[i].n * (32 + 4 + 4 * A);
  uint8_t *b = malloc(n), *p = b;
  if (b == NULL) return NULL;
  put64(p, REPLAY_MAGIC);
  put32(p + 8, (uint32_t)A);
  put32(p + 12, (uint32_t)l->n_past);
  p += 16;
  for (int i = 0; i < l->n_past; i++) {
    const past_t *ps = &l->past[i];
    put64(p, ps->n);
    p += 8;
    for (size_t k = 0; k < ps->n; k++)
      for (int w = 0; w < 4; w++, p += 8) put64(p, ps->states[k].w[w]);
    for (size_t k = 0; k < ps->n; k++, p += 4) putf(p, ps->v[k]);
    for (size_t k = 0; k < ps->n * A; k++, p += 4) putf(p, ps->q[k]);
  }
  *len = n;
  return b;
}

/* Decodes a replay section into past[] (all or nothing). */
static int replay_decode(const pb_learn_t *l, const uint8_t *b, size_t len,
                         past_t *past, int *n_past, const char *path,
                         pb_err_t *err) {
  const size_t A = (size_t)l->g->num_actions;
  *n_past = 0;
  if (len < 16 || get64(b) != REPLAY_MAGIC || get32(b + 8) != A ||
      get32(b + 12) > PB_LEARN_MAX_PAST)
    return pb_err_set(err, PB_ECORRUPT, "%s: bad replay window section", path);
  const int np = (int)get32(b + 12);
  size_t off = 16;
  for (int i = 0; i < np; i++) {
    if (len - off < 8) goto bad;
    uint64_t n = get64(b + off);
    off += 8;
    if (n > (len - off) / (32 + 4 + 4 * A)) goto bad;
    past_t *ps = &past[i];
    ps->n = (size_t)n;
    ps->states = malloc((n ? n : 1) * sizeof *ps->states);
    ps->v = malloc((n ? n : 1) * sizeof *ps->v);
    ps->q = malloc((n ? n : 1) * A * sizeof *ps->q);
    *n_past = i + 1;
    if (!ps->states || !ps->v || !ps->q) {
      for (int j = 0; j < *n_past; j++) past_free(&past[j]);
      *n_past = 0;
      return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
    }
    for (size_t k = 0; k < n; k++) {
      memset(&ps->states[k], 0, sizeof ps->states[k]);
      for (int w = 0; w < 4; w++, off += 8) ps->states[k].w[w] = get64(b + off);
    }
    for (size_t k = 0; k < n; k++, off += 4) ps->v[k] = getf(b + off);
    for (size_t k = 0; k < n * A; k++, off += 4) ps->q[k] = getf(b + off);
  }
  if (off != len) goto bad;
  return 0;
bad:
  for (int j = 0; j < *n_past; j++) past_free(&past[j]);
  *n_past = 0;
  return pb_err_set(err, PB_ECORRUPT, "%s: replay window section truncated",
                    path);
}

int pb_learn_save(const pb_learn_t *l, const char *path, const void *extra,
                  size_t extra_len, pb_err_t *err) {
  pb_ckpt_t *ck = pb_ckpt_new(err);
  int rc = ck ? 0 : err ? err->code : PB_ENOMEM;
  if (rc == 0)
    rc = pb_model_write(ck, &l->cfg, l->g, l->version, l->rng.s, l->v, l->q,
                        err);
  uint8_t rng2[32];
  for (int i = 0; i < 4; i++) put64(rng2 + 8 * i, l->vrng.s[i]);
  if (rc == 0) rc = pb_ckpt_add(ck, "learn.rng2", rng2, sizeof rng2, err);
  if (rc == 0 && l->n_past > 0) {
    size_t rl = 0;
    uint8_t *rb = replay_encode(l, &rl);
    rc = rb ? pb_ckpt_add(ck, "learn.replay", rb, rl, err)
            : pb_err_set(err, PB_ENOMEM, "learn: out of memory");
    free(rb);
  }
  if (rc == 0 && extra != NULL)
    rc = pb_ckpt_add(ck, "extra", extra, extra_len, err);
  if (rc == 0) rc = pb_ckpt_write(ck, path, err);
  pb_ckpt_destroy(&ck);
  return rc;
}

int pb_learn_load(pb_learn_t *l, const char *path, void **extra,
                  size_t *extra_len, pb_err_t *err) {
  pb_ckpt_t *ck = pb_ckpt_read(path, err);
  if (ck == NULL) return err ? err->code : PB_ECORRUPT;
  const uint8_t *xb, *rb;
  size_t xl, rl;
  int np = 0;
  past_t *past = NULL;
  /* Everything is checked before anything changes, so a refusal changes
   * nothing. */
  int rc = pb_model_check(ck, path, l->g, l->v, l->q, err);
  if (rc != 0) goto done;
  if (pb_ckpt_get(ck, "learn.replay", (const void **)&rb, &rl) == 0) {
    past = calloc(PB_LEARN_MAX_PAST, sizeof *past);
    if (past == NULL) {
      rc = pb_err_set(err, PB_ENOMEM, "learn: out of memory");
      goto done;
    }
    if ((rc = replay_decode(l, rb, rl, past, &np, path, err)) != 0) goto done;
  }
  void *xcopy = NULL;
  if (extra != NULL) {
    *extra = NULL;
    if (extra_len) *extra_len = 0;
    if (pb_ckpt_get(ck, "extra", (const void **)&xb, &xl) == 0) {
      xcopy = malloc(xl ? xl : 1);
      if (xcopy == NULL) {
        rc = pb_err_set(err, PB_ENOMEM, "learn: out of memory");
        goto done;
      }
      memcpy(xcopy, xb, xl);
      *extra = xcopy;
      if (extra_len) *extra_len = xl;
    }
  }
  rc = pb_model_read(ck, path, l->g, l->v, l->q, &l->version, l->rng.s, err);
  if (rc != 0) {
    if (extra != NULL) {
      free(*extra);
      *extra = NULL;
    }
    goto done;
  }
  const uint8_t *r2;
  size_t r2l;
  if (pb_ckpt_get(ck, "learn.rng2", (const void **)&r2, &r2l) == 0 && r2l == 32)
    for (int i = 0; i < 4; i++) l->vrng.s[i] = get64(r2 + 8 * i);
  /* The window is the file's (none if it has none). */
  for (int i = 0; i < l->n_past; i++) past_free(&l->past[i]);
  for (int i = 0; i < np; i++) l->past[i] = past[i];
  l->n_past = np;
  np = 0;
  /* A run resumed with a smaller train.replay_iterations keeps only the
   * newest iterations the new window holds. */
  trim_window(l, l->cfg.train.replay_iterations - 1);
done:
  for (int i = 0; i < np; i++) past_free(&past[i]);
  free(past);
  pb_ckpt_destroy(&ck);
  return rc;
}

uint64_t pb_learn_item_seed(const pb_config_t *cfg, uint64_t version,
                            uint64_t first) {
  uint64_t it = pb_mix64((uint64_t)cfg->seed ^ pb_mix64(version + 0x5E1F));
  return pb_mix64(it ^ pb_mix64(first * 0x9E3779B97F4A7C15ull + 1));
}

int pb_learn_eval_batch(int search_parallel, int expansions, int num_actions,
                        int selfplay_parallel) {
  long b = (long)search_parallel * expansions * num_actions;
  if (b < selfplay_parallel) b = selfplay_parallel;
  /* Per position, CPU forwards stop getting cheaper past a few hundred
   * rows, and bigger calls fault in fresh activation memory each time:
   * measured 1.1-2x faster search with the large model at 512 than 4096. */
  if (b > 512) b = 512;
  return (int)b;
}

uint32_t pb_learn_targets_crc(const pb_learn_t *l, const pb_episodes_t *eps,
                              const float *qtargets, size_t n) {
  uint32_t crc = 0;
  crc = pb_crc32(crc, eps->states, eps->n_states * sizeof *eps->states);
  for (size_t k = 0; k < eps->n_eps; k++)
    for (uint32_t t = 0; t < eps->len[k]; t++) {
      float v = pb_episodes_target(eps, k, t);
      crc = pb_crc32(crc, &v, sizeof v);
    }
  crc = pb_crc32(crc, qtargets, n * (size_t)l->g->num_actions * sizeof(float));
  return crc;
}

void pb_learn_report_json(const pb_learn_t *l, const pb_learn_report_t *r,
                          pb_json_t *j) {
  const size_t npos = r->eps->n_states;
  pb_json_obj_begin(j);
  pb_json_kstr(j, "event", "iteration");
  pb_json_kstr(j, "mode", r->mode);
  pb_json_kstr(j, "algorithm", l->az ? "alphazero" : "probs");
  pb_json_kuint(j, "iteration", r->version);
  pb_json_kuint(j, "version", r->version);
  pb_json_kuint(j, "episodes", r->eps->n_eps);
  pb_json_kuint(j, "positions", npos);
  pb_json_kuint(j, "distinct_positions", r->n_distinct);
  pb_json_kuint(j, "targets_crc",
                pb_learn_targets_crc(l, r->eps, r->qtargets, r->n_distinct));
  pb_json_kdouble(j, "selfplay_s", r->selfplay_s);
  if (!l->az) pb_json_kdouble(j, "train_v_s", r->v->seconds);
  if (!l->az) pb_json_kdouble(j, "search_s", r->search_s);
  /* alphazero: the q_* fields are the policy+value network's */
  pb_json_kdouble(j, "train_q_s", r->q->seconds);
  pb_json_kdouble(j, "checkpoint_s", r->checkpoint_s);
  pb_json_kdouble(j, "iteration_s", r->iteration_s);
  if (!l->az) pb_json_kdouble(j, "v_loss", r->v->loss_mean);
  pb_json_kdouble(j, "q_loss", r->q->loss_mean);
  if (!l->az) pb_json_kdouble(j, "v_loss_last", r->v->loss_last);
  pb_json_kdouble(j, "q_loss_last", r->q->loss_last);
  if (!l->az) pb_json_kdouble(j, "v_lr", r->v->lr);
  pb_json_kdouble(j, "q_lr", r->q->lr);
  if (!l->az) pb_json_kdouble(j, "v_grad_norm_max", r->v->grad_norm_max);
  if (l->az) {
    pb_json_kdouble(j, "policy_loss", r->q->policy_loss_mean);
    pb_json_kdouble(j, "value_loss", r->q->value_loss_mean);
  }
  pb_json_kdouble(j, "q_grad_norm_max", r->q->grad_norm_max);
  pb_json_kuint(j, "replay_positions", pb_learn_replay_positions(l));
  pb_json_kdouble(j, "selfplay_positions_per_s",
                  npos / (r->selfplay_s > 0 ? r->selfplay_s : 1e-9));
  if (!l->az)
    pb_json_kdouble(j, "search_states_per_s",
                    r->n_distinct / (r->search_s > 0 ? r->search_s : 1e-9));
}
