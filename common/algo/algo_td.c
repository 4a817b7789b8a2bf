/* algo_td.c - TD(0) learning of a linear evaluation (Lucas and Runarsson's
 * Othello WPC, common/train/td.h) as an algorithm table (algo.h): actors
 * play epsilon-greedy n-ply games with V (one linear layer,
 * common/nn/tdnet.h) of the item's version, each item with the
 * exploration rate of its first game; the learner runs TD(0) over the
 * iteration's games in order, into V. No search phase, no searchers, no
 * trained Q (its slot is filled so that every reader reads a td model).
 * Its section is `td`; its checkpoints are played by the td agent. */
#include <stdio.h>
#include <stdlib.h>

#include "iteration_impl.h"
#include "json.h"
#include "td.h"
#include "tdnet.h"
#include "tdplay.h"
#include "util.h"

/* ---- self-play ---------------------------------------------------------- */

/* The evaluation of the version last played with. */
typedef struct {
  pb_linear_t lin;
  const pb_nn_t *from;
  uint64_t version;
  int have;
} player_t;

static void *player_new(const pb_algo_env_t *env, pb_err_t *err) {
  (void)env;
  player_t *p = calloc(1, sizeof *p);
  if (p == NULL) pb_err_set(err, PB_ENOMEM, "td self-play: out of memory");
  return p;
}

static void player_destroy(void **pp) {
  free(*pp);
  *pp = NULL;
}

static int play(void *player, const pb_algo_env_t *env,
                const pb_algo_item_t *item, pb_episodes_t *out, pb_err_t *err) {
  player_t *p = player;
  if (!p->have || p->from != env->v || p->version != item->version) {
    p->have = 0;
    int rc = pb_linear_init(&p->lin, env->g, err);
    if (rc == 0) rc = pb_tdnet_get(env->v, &p->lin, err);
    if (rc != 0) return rc;
    p->from = env->v;
    p->version = item->version;
    p->have = 1;
  }
  const pb_config_t *c = env->run;
  pb_tdplay_opts_t o = {c->td.ply, c->train.max_turns, item->td_epsilon,
                        env->tick, env->tick_ctx};
  return pb_tdplay_run(&p->lin, &o, item->episodes, item->seed, 0,
                       item->version, out, NULL, err);
}

/* ---- training ----------------------------------------------------------- */

/* What the last iteration's TD(0) did, for the log and the metrics. */
typedef struct {
  pb_td_stats_t st;
  uint32_t wcrc;
  double epsilon;
} state_t;

/* The iteration's games are games version * episodes_per_iter onwards. */
static uint64_t first_game(const pb_config_t *c, uint64_t version) {
  return version * (uint64_t)c->train.episodes_per_iter;
}

static double item_epsilon(const pb_config_t *c, uint64_t version,
                           uint64_t first) {
  pb_td_opts_t o;
  pb_td_opts_from_config(c, &o);
  return pb_td_epsilon(&o, first_game(c, version) + first);
}

/* TD(0) over the iteration's games in order, from V's weights, into V. */
static int train_after(pb_iter_t *it, pb_err_t *err) {
  state_t *s = it->priv;
  pb_learn_t *l = it->learn;
  pb_nn_t *v = pb_learn_v(l);
  double t0 = pb_now();
  pb_linear_t lin;
  pb_td_opts_t o;
  pb_td_opts_from_config(it->cfg, &o);
  int rc = pb_linear_init(&lin, it->g, err);
  if (rc == 0) rc = pb_tdnet_get(v, &lin, err);
  if (rc != 0) return rc;
  const uint64_t game0 = first_game(it->cfg, pb_learn_version(l));
  s->epsilon = pb_td_epsilon(&o, game0);
  pb_td_learn(&lin, &o, &it->eps, game0, &s->st);
  s->wcrc = pb_td_weights_crc(&lin);
  if ((rc = pb_tdnet_set(v, &lin, err)) != 0 ||
      (rc = pb_learn_end_iteration(l, &it->eps, NULL, err)) != 0)
    return rc;
  it->v_after = 1;
  it->qst.seconds = pb_now() - t0;
  return 0;
}

static void settings(const pb_config_t *cfg, char *buf, size_t n) {
  snprintf(buf, n, "%d-ply self-play and targets, epsilon %g, alpha %g",
           cfg->td.ply, cfg->td.epsilon, cfg->td.alpha);
}

static void describe(const pb_iter_t *it, const pb_iter_times_t *t, char *buf,
                     size_t n) {
  (void)t;
  const state_t *s = it->priv;
  snprintf(buf, n,
           "TD(0) %zu updates alpha %.4g epsilon %.3g mean |delta| %.4f %.2fs",
           s->st.updates, s->st.alpha_first, s->epsilon, s->st.abs_delta_mean,
           it->qst.seconds);
}

static void metrics(const pb_iter_t *it, const pb_iter_times_t *t,
                    pb_json_t *j) {
  (void)t;
  const state_t *s = it->priv;
  pb_json_kint(j, "ply", it->cfg->td.ply);
  pb_json_kdouble(j, "epsilon", s->epsilon);
  pb_json_kdouble(j, "alpha", s->st.alpha_first);
  pb_json_kdouble(j, "td_abs_delta", s->st.abs_delta_mean);
  pb_json_kuint(j, "target_evals", s->st.search.evals);
  pb_json_kuint(j, "weights_crc", s->wcrc);
  pb_json_kdouble(j, "train_v_s", it->qst.seconds);
}

const pb_algo_t pb_algo_td = {
    .data = &pb_algo_data_td,
    .play_nets = PB_ALGO_NET_V,
    .state_size = sizeof(state_t),
    .player_new = player_new,
    .player_destroy = player_destroy,
    .play = play,
    .train_before_search = NULL,
    .train_after_search = train_after,
    .item_epsilon = item_epsilon,
    .settings = settings,
    .describe = describe,
    .metrics = metrics,
};
