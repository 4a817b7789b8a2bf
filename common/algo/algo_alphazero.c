/* algo_alphazero.c - AlphaZero as an algorithm table (algo.h): self-play
 * searches every move with PUCT MCTS over one policy+value network
 * (common/train/azplay.h: the games of an item search together; Gumbel
 * root, playout caps and forced playouts as mcts.* say), and the network
 * trains on the visit distributions and the outcomes; no search phase, no
 * searchers, no V. Its section is `mcts`; its checkpoints hold the
 * policy+value network in the Q slot, played at its best by MCTS. */
#include <stdio.h>
#include <stdlib.h>

#include "azplay.h"
#include "iteration_impl.h"
#include "json.h"
#include "pveval.h"

typedef struct {
  pb_azplay_t *az;
  pb_pveval_t *pve;
  const pb_algo_env_t *env; /* of the item being played, for the tick */
} player_t;

static void *player_new(const pb_algo_env_t *env, pb_err_t *err) {
  player_t *p = calloc(1, sizeof *p);
  if (p == NULL) {
    pb_err_set(err, PB_ENOMEM, "alphazero self-play: out of memory");
    return NULL;
  }
  /* The run's settings, as the learner builds them; the games at once are
   * this process's own. One thread: the games of an item search together,
   * one network call per round. */
  pb_azplay_opts_t o;
  pb_azplay_config_opts(env->run, &o);
  o.parallel = env->parallel;
  if ((p->az = pb_azplay_new(env->g, &o, err)) == NULL ||
      (p->pve = pb_pveval_new(env->g, env->parallel, err)) == NULL) {
    pb_azplay_destroy(&p->az);
    free(p);
    return NULL;
  }
  return p;
}

static void player_destroy(void **pp) {
  player_t *p = *pp;
  if (p == NULL) return;
  pb_azplay_destroy(&p->az);
  pb_pveval_destroy(&p->pve);
  free(p);
  *pp = NULL;
}

/* The policy+value network for MCTS, after the process's tick. */
static int ev_pv(void *ctx, const pb_state_t *s, int n, float *policy,
                 float *value, pb_err_t *err) {
  player_t *p = ctx;
  if (p->env->tick != NULL) {
    int rc = p->env->tick(p->env->tick_ctx, err);
    if (rc != 0) return rc;
  }
  pb_mcts_evalfn_t f = pb_pveval_fn(p->pve);
  return f.eval(f.ctx, s, n, policy, value, err);
}

static int play(void *player, const pb_algo_env_t *env,
                const pb_algo_item_t *item, pb_episodes_t *out, pb_err_t *err) {
  player_t *p = player;
  int rc = pb_pveval_bind(p->pve, env->q, err);
  if (rc != 0) return rc;
  p->env = env;
  pb_mcts_evalfn_t fn = {ev_pv, p};
  rc = pb_azplay_run(p->az, item->episodes, item->seed, 0, &fn, item->version,
                     out, err);
  p->env = NULL;
  return rc;
}

/* The network on the visit counts and outcomes of the iteration (and the
 * window's); every position is its own "distinct" one, whose target row is
 * its policy, kept so in the replay window. */
static int train_after(pb_iter_t *it, pb_err_t *err) {
  pb_learn_t *l = it->learn;
  int rc = pb_learn_train_pv(l, &it->eps, &it->qst, err);
  if (rc != 0) return rc;
  it->n_uniq = it->eps.n_states;
  it->targets = it->eps.policy;
  return pb_learn_end_iteration(l, &it->eps, it->eps.policy, err);
}

static void settings(const pb_config_t *cfg, char *buf, size_t n) {
  snprintf(buf, n, "MCTS of %d simulations per move (root %s)",
           cfg->mcts.simulations, cfg->mcts.root);
}

static void describe(const pb_iter_t *it, const pb_iter_times_t *t, char *buf,
                     size_t n) {
  (void)t;
  snprintf(buf, n,
           "policy+value loss %.4f -> %.4f (policy %.4f, value %.4f) %.2fs",
           it->qst.loss_first, it->qst.loss_last, it->qst.policy_loss_mean,
           it->qst.value_loss_mean, it->qst.seconds);
}

static void metrics(const pb_iter_t *it, const pb_iter_times_t *t,
                    pb_json_t *j) {
  (void)t;
  /* The q_* fields are the policy+value network's; its loss in parts. */
  pb_json_kdouble(j, "policy_loss", it->qst.policy_loss_mean);
  pb_json_kdouble(j, "value_loss", it->qst.value_loss_mean);
  pb_json_kint(j, "simulations", it->cfg->mcts.simulations);
}

const pb_algo_t pb_algo_alphazero = {
    .data = &pb_algo_data_alphazero,
    .play_nets = PB_ALGO_NET_Q,
    .state_size = 0,
    .player_new = player_new,
    .player_destroy = player_destroy,
    .play = play,
    .train_before_search = NULL,
    .train_after_search = train_after,
    .item_epsilon = NULL,
    .settings = settings,
    .describe = describe,
    .metrics = metrics,
};
