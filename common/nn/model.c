/* model.c - the networks of a config, and their sections of a checkpoint
 * (see model.h for the layout). */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algos.h"
#include "bytes.h"
#include "precision.h"
#include "rng.h"

#define META_MAGIC 0x314E5241454C4250ull /* "PBLEARN1" */
#define META_LEN (8 * 7)
#define KIND_SECTION "model.kind"

/* ---- the networks of a config ------------------------------------------ */

void pb_model_spec(const pb_config_t *c, const pb_game_t *g, int q,
                   pb_nn_spec_t *spec) {
  const pb_config_net_t *n = q ? &c->model.q : &c->model.v;
  memset(spec, 0, sizeof *spec);
  spec->planes = g->planes;
  spec->height = g->height;
  spec->width = g->width;
  spec->outputs = q ? g->num_actions : 1;
  spec->head = q ? PB_NN_HEAD_LINEAR : PB_NN_HEAD_TANH;
  const pb_algo_data_t *a = pb_algos_of(c);
  const int nets = a != NULL ? a->nets : PB_NETS_VQ;
  if (q && nets == PB_NETS_PV) {
    spec->outputs = g->num_actions + 1;
    spec->head = PB_NN_HEAD_PV;
  }
  spec->conv_layers = n->conv_layers;
  spec->conv_channels = n->conv_channels;
  spec->dense_layers = n->dense_layers;
  spec->dense_units = n->dense_units;
  spec->res_blocks = n->res_blocks;
  spec->norm = !strcmp(n->norm, "layer") ? PB_NN_NORM_LAYER : PB_NN_NORM_NONE;
  if (nets == PB_NETS_LINEAR) {
    /* one linear layer over the planes (common/nn/tdnet.h); Q only fills
     * its slot and is never trained. */
    spec->conv_layers = spec->dense_layers = spec->res_blocks = 0;
    spec->conv_channels = spec->dense_units = 1;
    spec->norm = PB_NN_NORM_NONE;
  }
}

void pb_model_opt(const pb_config_t *c, int q, pb_nn_opt_t *opt) {
  memset(opt, 0, sizeof *opt);
  opt->lr = (float)(q ? c->train.q_lr : c->train.v_lr);
  opt->weight_decay = (float)c->train.weight_decay;
  opt->grad_clip = (float)c->train.grad_clip;
}

int pb_model_nets(const pb_config_t *cfg, const pb_game_t *g,
                  const char *device, const char *what, pb_nn_t **v,
                  pb_nn_t **q, pb_err_t *err) {
  *v = *q = NULL;
  pb_nn_spec_t vs, qs;
  pb_nn_opt_t vo, qo;
  pb_model_spec(cfg, g, 0, &vs);
  pb_model_spec(cfg, g, 1, &qs);
  pb_model_opt(cfg, 0, &vo);
  pb_model_opt(cfg, 1, &qo);
  pb_nn_set_threads(cfg->model.threads);
  const uint64_t seed = (uint64_t)cfg->seed;
  pb_err_t e;
  pb_err_clear(&e);
  /* A policy+value family: no V; the Q slot holds that network. */
  const pb_algo_data_t *a = pb_algos_of(cfg);
  const int az = a != NULL && a->nets == PB_NETS_PV;
  if (!az) *v = pb_nn_new(&vs, &vo, device, pb_mix64(seed ^ 0x5601), &e);
  if (az || *v != NULL)
    *q = pb_nn_new(&qs, &qo, device, pb_mix64(seed ^ 0x5602), &e);
  if (*q == NULL) {
    pb_nn_destroy(v);
    return pb_err_set(err, e.code, "%s: %s", what, e.msg);
  }
  return 0;
}

int pb_model_learner_threads(const pb_config_t *cfg, const char *device) {
  if (cfg->model.learner_threads > 0) return cfg->model.learner_threads;
  if (strcmp(device, "cpu") != 0) return 1;
  long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
  return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

int pb_model_batch_scale(pb_config_t *cfg, const char *device, char *why,
                         size_t n) {
  const int s = cfg->train.cuda_batch_scale;
  if (why != NULL && n > 0) why[0] = '\0';
  if (s <= 1) return 1;
  if (strcmp(device, "cuda") != 0) {
    if (why != NULL && n > 0)
      snprintf(why, n,
               "train.cuda_batch_scale %d not applied on %s: minibatches of "
               "%d (a larger one trains no faster per sample there)",
               s, device, cfg->train.batch_size);
    return 1;
  }
  const double r = sqrt((double)s);
  cfg->train.batch_size *= s;
  cfg->train.v_lr *= r;
  cfg->train.q_lr *= r;
  cfg->train.lr_warmup_steps = (cfg->train.lr_warmup_steps + s - 1) / s;
  if (why != NULL && n > 0)
    snprintf(why, n,
             "train.cuda_batch_scale %d on %s: minibatches of %d, v_lr %g, "
             "q_lr %g, lr_warmup_steps %d (the same samples in fewer kernel "
             "launches)",
             s, device, cfg->train.batch_size, cfg->train.v_lr,
             cfg->train.q_lr, cfg->train.lr_warmup_steps);
  return s;
}

int pb_model_precision(const pb_config_t *cfg, int role, const char *device,
                       int *prec, char *why, size_t n, pb_err_t *err) {
  const char *key;
  const char *want = pb_config_precision(cfg, role, &key);
  char native_why[160];
  int native = 0;
  /* fp32 needs no probe; the others ask the device (auto: also whether
   * bf16 is the faster there). */
  if (strcmp(want, "auto") == 0)
    native = pb_precision_auto_bf16(device, native_why, sizeof native_why);
  else if (strcmp(want, "fp32") != 0)
    native = pb_precision_native(device, native_why, sizeof native_why);
  else
    snprintf(native_why, sizeof native_why, "-");
  return pb_precision_choose(want, key, native, native_why, prec, why, n, err);
}

/* ---- the sections of a checkpoint ---------------------------------------- */

/* The sections of pb_model_write (states: weights and Adam moments) and
 * of pb_model_write_weights (weights only). */
static int write_sections(pb_ckpt_t *ck, const pb_config_t *cfg,
                          const pb_game_t *g, uint64_t version,
                          const uint64_t rng[4], const pb_nn_t *v,
                          const pb_nn_t *q, int weights_only, pb_err_t *err) {
  uint8_t meta[META_LEN];
  pb_le_put64(meta, META_MAGIC);
  pb_le_put64(meta + 8, (uint64_t)g->id);
  pb_le_put64(meta + 16, version);
  for (int i = 0; i < 4; i++) pb_le_put64(meta + 24 + 8 * i, rng[i]);
  uint8_t *vb = NULL, *qb = NULL;
  size_t vl = 0, ql = 0;
  char *yaml = NULL;
  int rc = 0;
  if (weights_only) {
    if (v) rc = pb_nn_weights_save(v, version, &vb, &vl, err);
    if (rc == 0) rc = pb_nn_weights_save(q, version, &qb, &ql, err);
  } else {
    if (v) rc = pb_nn_state_save(v, &vb, &vl, err);
    if (rc == 0) rc = pb_nn_state_save(q, &qb, &ql, err);
  }
  const char *vname = weights_only ? "v.weights" : "v.state";
  const char *qname = weights_only ? "q.weights" : "q.state";
  if (rc == 0) rc = pb_config_to_yaml(cfg, &yaml, err);
  if (rc == 0) rc = pb_ckpt_add(ck, "learn.meta", meta, sizeof meta, err);
  if (rc == 0 && v) rc = pb_ckpt_add(ck, vname, vb, vl, err);
  if (rc == 0) rc = pb_ckpt_add(ck, qname, qb, ql, err);
  if (rc == 0) rc = pb_ckpt_add(ck, "config.yaml", yaml, strlen(yaml), err);
  const pb_algo_data_t *a = pb_algos_of(cfg);
  const char *kind = pb_nets_name(a != NULL ? a->nets : 0);
  if (rc == 0) rc = pb_ckpt_add(ck, KIND_SECTION, kind, strlen(kind), err);
  free(vb);
  free(qb);
  free(yaml);
  return rc;
}

int pb_model_write(pb_ckpt_t *ck, const pb_config_t *cfg, const pb_game_t *g,
                   uint64_t version, const uint64_t rng[4], const pb_nn_t *v,
                   const pb_nn_t *q, pb_err_t *err) {
  return write_sections(ck, cfg, g, version, rng, v, q, 0, err);
}

int pb_model_write_weights(pb_ckpt_t *ck, const pb_config_t *cfg,
                           const pb_game_t *g, uint64_t version,
                           const pb_nn_t *v, const pb_nn_t *q, pb_err_t *err) {
  static const uint64_t no_rng[4] = {0, 0, 0, 0};
  return write_sections(ck, cfg, g, version, no_rng, v, q, 1, err);
}

/* A network's section in ck: "<net>.state" (*weights 0) or, in a model
 * file, "<net>.weights" (*weights 1). PB_ENOTFOUND when neither. */
static int net_section(const pb_ckpt_t *ck, const char *net,
                       const uint8_t **buf, size_t *len, int *weights) {
  char name[16];
  snprintf(name, sizeof name, "%s.state", net);
  *weights = 0;
  if (pb_ckpt_get(ck, name, (const void **)buf, len) == 0) return 0;
  snprintf(name, sizeof name, "%s.weights", net);
  *weights = 1;
  return pb_ckpt_get(ck, name, (const void **)buf, len);
}

/* The config stored in ck (read from path) into *cfg. */
static int stored_config(const pb_ckpt_t *ck, const char *path,
                         pb_config_t *cfg, pb_err_t *err) {
  const char *yaml;
  size_t yl;
  if (pb_ckpt_get(ck, "config.yaml", (const void **)&yaml, &yl) != 0)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: no config inside: not a probs learner checkpoint",
                      path);
  char *text = malloc(yl + 1);
  if (text == NULL) return pb_err_set(err, PB_ENOMEM, "out of memory");
  memcpy(text, yaml, yl);
  text[yl] = '\0';
  pb_config_defaults(cfg);
  int rc = pb_config_load_string(cfg, text, err);
  free(text);
  return rc;
}

/* The one place that infers the family of a file written before model.kind
 * existed: from the algorithm its stored config names (model.h). */
int pb_model_file_kind(const pb_ckpt_t *ck, const char *path, int *nets,
                       pb_err_t *err) {
  const char *kind;
  size_t kl;
  if (pb_ckpt_get(ck, KIND_SECTION, (const void **)&kind, &kl) == 0) {
    char name[16];
    snprintf(name, sizeof name, "%.*s", kl < sizeof name ? (int)kl : 0, kind);
    if (strlen(name) != kl || (*nets = pb_nets_by_name(name)) == 0)
      return pb_err_set(err, PB_ECORRUPT,
                        "%s: unknown model.kind '%.*s' (known: vq, pv, "
                        "linear)",
                        path, kl < 16 ? (int)kl : 16, kind);
    return 0;
  }
  pb_config_t cfg;
  int rc = stored_config(ck, path, &cfg, err);
  if (rc != 0) return rc;
  const pb_algo_data_t *a = pb_algos_of(&cfg);
  if (a == NULL)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: no model.kind, and its config's algorithm '%s' "
                      "is unknown",
                      path, cfg.algorithm);
  *nets = a->nets;
  return 0;
}

static int same_spec(const pb_nn_t *nn, const uint8_t *buf, size_t len,
                     int weights, const char *what, const char *path,
                     pb_err_t *err) {
  pb_nn_spec_t sp;
  int rc = weights ? pb_nn_weights_peek(buf, len, &sp, NULL, err)
                   : pb_nn_state_peek(buf, len, &sp, err);
  if (rc != 0) return rc;
  if (memcmp(&sp, pb_nn_spec(nn), sizeof sp) != 0)
    return pb_err_set(err, PB_EMISMATCH,
                      "%s: the %s network has another shape than the config's "
                      "(conv %dx%d, dense %dx%d in the file)",
                      path, what, sp.conv_layers, sp.conv_channels,
                      sp.dense_layers, sp.dense_units);
  return 0;
}

int pb_model_check(const pb_ckpt_t *ck, const char *path, const pb_game_t *g,
                   int nets, const pb_nn_t *v, const pb_nn_t *q,
                   pb_err_t *err) {
  const uint8_t *meta, *vb = NULL, *qb;
  size_t ml, vl = 0, ql;
  int vw = 0, qw;
  if (pb_ckpt_get(ck, "learn.meta", (const void **)&meta, &ml) != 0 ||
      net_section(ck, "q", &qb, &ql, &qw) != 0)
    return pb_err_set(err, PB_ECORRUPT, "%s: not a probs learner checkpoint",
                      path);
  if (ml != META_LEN || pb_le_get64(meta) != META_MAGIC)
    return pb_err_set(err, PB_ECORRUPT, "%s: bad learner metadata", path);
  int fnets, rc = pb_model_file_kind(ck, path, &fnets, err);
  if (rc != 0) return rc;
  if (fnets != nets) {
    pb_config_t fc; /* the file's algorithm, to name it */
    if (stored_config(ck, path, &fc, NULL) != 0)
      snprintf(fc.algorithm, sizeof fc.algorithm, "?");
    return pb_err_set(err, PB_EMISMATCH,
                      "%s: a checkpoint of algorithm %s (%s, model.kind %s), "
                      "but this run's networks are %s (%s)",
                      path, fc.algorithm, pb_nets_words(fnets),
                      pb_nets_name(fnets), pb_nets_words(nets),
                      pb_nets_name(nets));
  }
  int has_v = net_section(ck, "v", &vb, &vl, &vw) == 0;
  if (has_v != (v != NULL))
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: model.kind %s, but the file %s a V network", path,
                      pb_nets_name(fnets), has_v ? "holds" : "lacks");
  if (pb_le_get64(meta + 8) != (uint64_t)g->id) {
    const pb_game_t *og = pb_game_by_id((int)pb_le_get64(meta + 8));
    return pb_err_set(err, PB_EMISMATCH,
                      "%s: checkpoint is for game '%s', not '%s'", path,
                      og ? og->name : "unknown", g->name);
  }
  if (v && (rc = same_spec(v, vb, vl, vw, "V", path, err)) != 0) return rc;
  return same_spec(q, qb, ql, qw, "Q", path, err);
}

/* Loads one network's section (a state or, in a model file, weights). */
static int load_net(pb_nn_t *nn, const uint8_t *buf, size_t len, int weights,
                    pb_err_t *err) {
  return weights ? pb_nn_weights_load(nn, buf, len, NULL, err)
                 : pb_nn_state_load(nn, buf, len, err);
}

int pb_model_read(const pb_ckpt_t *ck, const char *path, const pb_game_t *g,
                  int nets, pb_nn_t *v, pb_nn_t *q, uint64_t *version,
                  uint64_t rng[4], pb_err_t *err) {
  int rc = pb_model_check(ck, path, g, nets, v, q, err);
  if (rc != 0) return rc;
  const uint8_t *meta, *vb = NULL, *qb;
  size_t ml, vl = 0, ql;
  int vw = 0, qw;
  pb_ckpt_get(ck, "learn.meta", (const void **)&meta, &ml);
  net_section(ck, "q", &qb, &ql, &qw);
  if (v != NULL) net_section(ck, "v", &vb, &vl, &vw);
  /* V is loaded first; if Q's buffer then fails its checks, V gets its
   * old state back, so a refusal changes nothing. */
  uint8_t *vold = NULL;
  size_t voldl = 0;
  if (v == NULL)
    rc = load_net(q, qb, ql, qw, err);
  else if ((rc = pb_nn_state_save(v, &vold, &voldl, err)) == 0 &&
           (rc = load_net(v, vb, vl, vw, err)) == 0 &&
           (rc = load_net(q, qb, ql, qw, err)) != 0)
    pb_nn_state_load(v, vold, voldl, NULL);
  free(vold);
  if (rc != 0) return rc;
  if (version != NULL) *version = pb_le_get64(meta + 16);
  for (int i = 0; rng != NULL && i < 4; i++) rng[i] = pb_le_get64(meta + 24 + 8 * i);
  return 0;
}

/* ---- a model opened from a checkpoint ---------------------------------- */

struct pb_model {
  pb_config_t cfg;
  const pb_game_t *g;
  pb_nn_t *v, *q;
  int nets; /* pb_nets_t */
  uint64_t version;
};

pb_model_t *pb_model_open(const char *path, const char *device,
                          pb_config_t *cfg_out, pb_err_t *err) {
  pb_ckpt_t *ck = pb_ckpt_read(path, err);
  if (ck == NULL) return NULL;
  pb_model_t *m = calloc(1, sizeof *m);
  int rc = m ? 0 : pb_err_set(err, PB_ENOMEM, "model: out of memory");
  if (rc == 0) rc = stored_config(ck, path, &m->cfg, err);
  if (rc == 0) rc = pb_model_file_kind(ck, path, &m->nets, err);
  const pb_algo_data_t *a = rc == 0 ? pb_algos_of(&m->cfg) : NULL;
  if (rc == 0 && (a == NULL || a->nets != m->nets))
    rc = pb_err_set(err, PB_ECORRUPT,
                    "%s: model.kind %s, but its config's algorithm '%s' "
                    "trains other networks",
                    path, pb_nets_name(m->nets), m->cfg.algorithm);
  if (rc == 0 && (m->g = pb_game_by_name(m->cfg.game)) == NULL)
    rc = pb_err_set(err, PB_ECONFIG, "game: unknown game '%s' (known: %s)",
                    m->cfg.game, pb_game_names());
  if (rc == 0) {
    if (device != NULL) {
      snprintf(m->cfg.model.device, sizeof m->cfg.model.device, "%s", device);
      snprintf(m->cfg.model.learner_device, sizeof m->cfg.model.learner_device,
               "%s", device);
    }
    const char *key;
    const char *dev = pb_config_device(&m->cfg, PB_DEVICE_LEARNER, &key);
    char what[PB_CONFIG_NAME_MAX + 80];
    snprintf(what, sizeof what, "%s '%s' (the learner)", key, dev);
    rc = pb_model_nets(&m->cfg, m->g, dev, what, &m->v, &m->q, err);
  }
  if (rc == 0)
    rc = pb_model_read(ck, path, m->g, m->nets, m->v, m->q, &m->version, NULL,
                       err);
  if (rc == 0) {
    /* A stored bf16 this device lacks plays in fp32 (model.h). */
    int prec = PB_NN_FP32;
    if (pb_model_precision(&m->cfg, PB_DEVICE_OTHER, pb_nn_device(m->q),
                           &prec, NULL, 0, NULL) != 0)
      prec = PB_NN_FP32;
    rc = pb_model_set_precision(m, prec, err);
  }
  pb_ckpt_destroy(&ck);
  if (rc != 0) {
    pb_model_destroy(&m);
    return NULL;
  }
  if (cfg_out != NULL) *cfg_out = m->cfg;
  return m;
}

int pb_model_set_precision(pb_model_t *m, int precision, pb_err_t *err) {
  if (m == NULL) return pb_err_set(err, PB_EINVAL, "model: NULL model");
  int rc = m->v != NULL ? pb_nn_set_precision(m->v, precision, err) : 0;
  return rc != 0 ? rc : pb_nn_set_precision(m->q, precision, err);
}

int pb_model_get_precision(const pb_model_t *m) {
  return m != NULL ? pb_nn_precision(m->q) : PB_NN_FP32;
}

void pb_model_destroy(pb_model_t **pm) {
  if (pm == NULL || *pm == NULL) return;
  pb_nn_destroy(&(*pm)->v);
  pb_nn_destroy(&(*pm)->q);
  free(*pm);
  *pm = NULL;
}

const pb_game_t *pb_model_game(const pb_model_t *m) { return m->g; }
const pb_config_t *pb_model_config(const pb_model_t *m) { return &m->cfg; }
pb_nn_t *pb_model_v(pb_model_t *m) { return m->v; }
pb_nn_t *pb_model_q(pb_model_t *m) { return m->q; }
int pb_model_kind(const pb_model_t *m) { return m->nets; }
uint64_t pb_model_version(const pb_model_t *m) { return m->version; }
