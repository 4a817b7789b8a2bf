#include "learn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckpt.h"
#include "json.h"

struct pb_learn {
  pb_config_t cfg;
  const pb_game_t *g;
  pb_nn_t *v, *q;
  uint64_t version;
  pb_rng_t rng; /* minibatch order */
  /* scratch, grown as needed, reused across iterations */
  float *in, *tgt, *mask;
  int batch_cap;
  uint32_t *order;
  size_t order_cap;
  /* distinct positions of the current iteration */
  pb_state_t *uniq;
  uint32_t *uniq_of; /* stored position -> distinct index */
  uint32_t *table;   /* open addressing: distinct index + 1, 0 = empty */
  size_t uniq_cap, of_cap, table_cap, n_uniq;
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
  pb_nn_spec_t vs, qs;
  pb_nn_opt_t vo, qo;
  pb_config_nn_spec(cfg, g, 0, &vs);
  pb_config_nn_spec(cfg, g, 1, &qs);
  pb_config_nn_opt(cfg, 0, &vo);
  pb_config_nn_opt(cfg, 1, &qo);
  pb_nn_set_threads(cfg->model.threads);
  uint64_t seed = (uint64_t)cfg->seed;
  l->v = pb_nn_new(&vs, &vo, cfg->model.device, pb_mix64(seed ^ 0x5601), err);
  if (l->v == NULL) goto fail;
  l->q = pb_nn_new(&qs, &qo, cfg->model.device, pb_mix64(seed ^ 0x5602), err);
  if (l->q == NULL) goto fail;
  pb_rng_seed(&l->rng, seed, 0x7EA1);
  int B = cfg->train.batch_size;
  size_t in_size = (size_t)g->planes * g->height * g->width;
  l->in = malloc((size_t)B * in_size * sizeof *l->in);
  l->tgt = malloc((size_t)B * g->num_actions * sizeof *l->tgt);
  l->mask = malloc((size_t)B * g->num_actions * sizeof *l->mask);
  if (!l->in || !l->tgt || !l->mask) {
    pb_err_set(err, PB_ENOMEM, "learn: out of memory");
    goto fail;
  }
  l->batch_cap = B;
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
  free(l->in);
  free(l->tgt);
  free(l->mask);
  free(l->order);
  free(l->uniq);
  free(l->uniq_of);
  free(l->table);
  free(l);
  *pl = NULL;
}

const pb_game_t *pb_learn_game(const pb_learn_t *l) { return l->g; }
pb_nn_t *pb_learn_v(pb_learn_t *l) { return l->v; }
pb_nn_t *pb_learn_q(pb_learn_t *l) { return l->q; }
uint64_t pb_learn_version(const pb_learn_t *l) { return l->version; }
void pb_learn_next_version(pb_learn_t *l) { l->version++; }

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

/* A fresh random order of the n stored positions. */
static int shuffle(pb_learn_t *l, size_t n, pb_err_t *err) {
  if (grow((void **)&l->order, &l->order_cap, n, sizeof *l->order))
    return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
  for (size_t i = 0; i < n; i++) l->order[i] = (uint32_t)i;
  pb_rng_shuffle_u32(&l->rng, l->order, n);
  return 0;
}

static void stats_add(pb_learn_stats_t *st, float loss) {
  if (st->steps == 0) st->loss_first = loss;
  st->loss_last = loss;
  st->loss_mean += loss;
  st->steps++;
}

int pb_learn_train_v(pb_learn_t *l, const pb_episodes_t *eps,
                     pb_learn_stats_t *st, pb_err_t *err) {
  const pb_game_t *g = l->g;
  const size_t n = eps->n_states, B = (size_t)l->batch_cap;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  pb_learn_stats_t s = {0};
  double t0 = now_s();
  float *targets = malloc((n ? n : 1) * sizeof *targets);
  if (targets == NULL) return pb_err_set(err, PB_ENOMEM, "learn: out of memory");
  pb_episodes_targets(eps, targets);
  int rc = 0;
  for (int ep = 0; ep < l->cfg.train.v_epochs && rc == 0; ep++) {
    if ((rc = shuffle(l, n, err)) != 0) break;
    for (size_t b = 0; b < n && rc == 0; b += B) {
      size_t m = n - b < B ? n - b : B;
      for (size_t j = 0; j < m; j++) {
        uint32_t i = l->order[b + j];
        g->encode(&eps->states[i], &l->in[j * in_size]);
        l->tgt[j] = targets[i];
      }
      float loss = 0;
      rc = pb_nn_train_step(l->v, l->in, l->tgt, NULL, (int)m, &loss, err);
      if (rc == 0) stats_add(&s, loss);
      s.samples += m;
    }
  }
  free(targets);
  if (s.steps) s.loss_mean /= (double)s.steps;
  s.seconds = now_s() - t0;
  if (st) *st = s;
  return rc;
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

int pb_learn_train_q(pb_learn_t *l, const pb_episodes_t *eps,
                     const float *qtargets, pb_learn_stats_t *st,
                     pb_err_t *err) {
  const pb_game_t *g = l->g;
  const int A = g->num_actions;
  const size_t n = eps->n_states, B = (size_t)l->batch_cap;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  pb_learn_stats_t s = {0};
  double t0 = now_s();
  int rc = 0;
  for (int ep = 0; ep < l->cfg.train.q_epochs && rc == 0; ep++) {
    if ((rc = shuffle(l, n, err)) != 0) break;
    for (size_t b = 0; b < n && rc == 0; b += B) {
      size_t m = n - b < B ? n - b : B;
      for (size_t j = 0; j < m; j++) {
        uint32_t i = l->order[b + j];
        const pb_state_t *ps = &eps->states[i];
        g->encode(ps, &l->in[j * in_size]);
        memcpy(&l->tgt[j * A], &qtargets[(size_t)l->uniq_of[i] * A],
               (size_t)A * sizeof(float));
        float *mk = &l->mask[j * A];
        memset(mk, 0, (size_t)A * sizeof *mk);
        uint8_t acts[PB_MAX_ACTIONS];
        int na = g->legal(ps, acts);
        for (int k = 0; k < na; k++) mk[acts[k]] = 1.0f;
      }
      float loss = 0;
      rc = pb_nn_train_step(l->q, l->in, l->tgt, l->mask, (int)m, &loss, err);
      if (rc == 0) stats_add(&s, loss);
      s.samples += m;
    }
  }
  if (s.steps) s.loss_mean /= (double)s.steps;
  s.seconds = now_s() - t0;
  if (st) *st = s;
  return rc;
}

/* ---- checkpoints ---------------------------------------------------- */

#define META_MAGIC 0x314E5241454C4250ull /* "PBLEARN1" */

static void put64(uint8_t *p, uint64_t x) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(x >> (8 * i));
}
static uint64_t get64(const uint8_t *p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)p[i] << (8 * i);
  return x;
}

int pb_learn_save(const pb_learn_t *l, const char *path, const void *extra,
                  size_t extra_len, pb_err_t *err) {
  uint8_t meta[8 * 7];
  put64(meta, META_MAGIC);
  put64(meta + 8, (uint64_t)l->g->id);
  put64(meta + 16, l->version);
  for (int i = 0; i < 4; i++) put64(meta + 24 + 8 * i, l->rng.s[i]);
  uint8_t *vb = NULL, *qb = NULL;
  size_t vl = 0, ql = 0;
  char *yaml = NULL;
  pb_ckpt_t *ck = NULL;
  int rc = pb_nn_state_save(l->v, &vb, &vl, err);
  if (rc == 0) rc = pb_nn_state_save(l->q, &qb, &ql, err);
  if (rc == 0) rc = pb_config_to_yaml(&l->cfg, &yaml, err);
  if (rc == 0 && (ck = pb_ckpt_new(err)) == NULL) rc = err ? err->code : PB_ENOMEM;
  if (rc == 0) rc = pb_ckpt_add(ck, "learn.meta", meta, sizeof meta, err);
  if (rc == 0) rc = pb_ckpt_add(ck, "v.state", vb, vl, err);
  if (rc == 0) rc = pb_ckpt_add(ck, "q.state", qb, ql, err);
  if (rc == 0) rc = pb_ckpt_add(ck, "config.yaml", yaml, strlen(yaml), err);
  if (rc == 0 && extra != NULL)
    rc = pb_ckpt_add(ck, "extra", extra, extra_len, err);
  if (rc == 0) rc = pb_ckpt_write(ck, path, err);
  pb_ckpt_destroy(&ck);
  free(vb);
  free(qb);
  free(yaml);
  return rc;
}

static int same_spec(const pb_nn_t *nn, const uint8_t *buf, size_t len,
                     const char *what, const char *path, pb_err_t *err) {
  pb_nn_spec_t sp;
  int rc = pb_nn_state_peek(buf, len, &sp, err);
  if (rc != 0) return rc;
  if (memcmp(&sp, pb_nn_spec(nn), sizeof sp) != 0)
    return pb_err_set(err, PB_EMISMATCH,
                      "%s: the %s network has another shape than the config's "
                      "(conv %dx%d, dense %dx%d in the file)",
                      path, what, sp.conv_layers, sp.conv_channels,
                      sp.dense_layers, sp.dense_units);
  return 0;
}

int pb_learn_load(pb_learn_t *l, const char *path, void **extra,
                  size_t *extra_len, pb_err_t *err) {
  pb_ckpt_t *ck = pb_ckpt_read(path, err);
  if (ck == NULL) return err ? err->code : PB_ECORRUPT;
  const uint8_t *meta, *vb, *qb, *xb;
  size_t ml, vl, ql, xl;
  int rc = 0;
  if (pb_ckpt_get(ck, "learn.meta", (const void **)&meta, &ml) != 0 ||
      pb_ckpt_get(ck, "v.state", (const void **)&vb, &vl) != 0 ||
      pb_ckpt_get(ck, "q.state", (const void **)&qb, &ql) != 0) {
    rc = pb_err_set(err, PB_ECORRUPT, "%s: not a probs learner checkpoint",
                    path);
    goto done;
  }
  if (ml != 8 * 7 || get64(meta) != META_MAGIC) {
    rc = pb_err_set(err, PB_ECORRUPT, "%s: bad learner metadata", path);
    goto done;
  }
  if (get64(meta + 8) != (uint64_t)l->g->id) {
    const pb_game_t *og = pb_game_by_id((int)get64(meta + 8));
    rc = pb_err_set(err, PB_EMISMATCH, "%s: checkpoint is for game '%s', not '%s'",
                    path, og ? og->name : "unknown", l->g->name);
    goto done;
  }
  /* Check both before touching either, so a refusal changes nothing. */
  if ((rc = same_spec(l->v, vb, vl, "V", path, err)) != 0) goto done;
  if ((rc = same_spec(l->q, qb, ql, "Q", path, err)) != 0) goto done;
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
  if ((rc = pb_nn_state_load(l->v, vb, vl, err)) != 0 ||
      (rc = pb_nn_state_load(l->q, qb, ql, err)) != 0) {
    if (extra != NULL) {
      free(*extra);
      *extra = NULL;
    }
    goto done;
  }
  l->version = get64(meta + 16);
  for (int i = 0; i < 4; i++) l->rng.s[i] = get64(meta + 24 + 8 * i);
done:
  pb_ckpt_destroy(&ck);
  return rc;
}

pb_learn_t *pb_learn_open(const char *path, const char *device,
                          pb_config_t *cfg_out, pb_err_t *err) {
  pb_ckpt_t *ck = pb_ckpt_read(path, err);
  if (ck == NULL) return NULL;
  const char *yaml;
  size_t yl;
  pb_learn_t *l = NULL;
  if (pb_ckpt_get(ck, "config.yaml", (const void **)&yaml, &yl) != 0) {
    pb_err_set(err, PB_ECORRUPT, "%s: no config inside: not a probs learner "
               "checkpoint", path);
    pb_ckpt_destroy(&ck);
    return NULL;
  }
  char *text = malloc(yl + 1);
  pb_config_t cfg;
  pb_config_defaults(&cfg);
  int rc = text ? 0 : pb_err_set(err, PB_ENOMEM, "out of memory");
  if (rc == 0) {
    memcpy(text, yaml, yl);
    text[yl] = '\0';
    rc = pb_config_load_string(&cfg, text, err);
  }
  free(text);
  pb_ckpt_destroy(&ck);
  if (rc != 0) return NULL;
  if (device != NULL)
    snprintf(cfg.model.device, sizeof cfg.model.device, "%s", device);
  if ((l = pb_learn_new(&cfg, err)) == NULL) return NULL;
  if (pb_learn_load(l, path, NULL, NULL, err) != 0) {
    pb_learn_destroy(&l);
    return NULL;
  }
  if (cfg_out) *cfg_out = cfg;
  return l;
}

uint64_t pb_learn_item_seed(const pb_config_t *cfg, uint64_t version,
                            uint64_t first) {
  uint64_t it = pb_mix64((uint64_t)cfg->seed ^ pb_mix64(version + 0x5E1F));
  return pb_mix64(it ^ pb_mix64(first * 0x9E3779B97F4A7C15ull + 1));
}

int pb_learn_eval_batch(const pb_config_t *cfg, const pb_game_t *g) {
  long b = (long)cfg->search.parallel * cfg->search.expansions * g->num_actions;
  if (b < cfg->train.selfplay_parallel) b = cfg->train.selfplay_parallel;
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
  pb_json_kuint(j, "iteration", r->version);
  pb_json_kuint(j, "version", r->version);
  pb_json_kuint(j, "episodes", r->eps->n_eps);
  pb_json_kuint(j, "positions", npos);
  pb_json_kuint(j, "distinct_positions", r->n_distinct);
  pb_json_kuint(j, "targets_crc",
                pb_learn_targets_crc(l, r->eps, r->qtargets, r->n_distinct));
  pb_json_kdouble(j, "selfplay_s", r->selfplay_s);
  pb_json_kdouble(j, "train_v_s", r->v->seconds);
  pb_json_kdouble(j, "search_s", r->search_s);
  pb_json_kdouble(j, "train_q_s", r->q->seconds);
  pb_json_kdouble(j, "checkpoint_s", r->checkpoint_s);
  pb_json_kdouble(j, "iteration_s", r->iteration_s);
  pb_json_kdouble(j, "v_loss", r->v->loss_mean);
  pb_json_kdouble(j, "q_loss", r->q->loss_mean);
  pb_json_kdouble(j, "v_loss_last", r->v->loss_last);
  pb_json_kdouble(j, "q_loss_last", r->q->loss_last);
  pb_json_kdouble(j, "selfplay_positions_per_s",
                  npos / (r->selfplay_s > 0 ? r->selfplay_s : 1e-9));
  pb_json_kdouble(j, "search_states_per_s",
                  r->n_distinct / (r->search_s > 0 ? r->search_s : 1e-9));
}
