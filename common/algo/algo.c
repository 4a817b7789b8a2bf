/* algo.c - the algorithms' tables by name, and the evaluator they share
 * (algo.h). */
#include "algo.h"

#include <string.h>

static const pb_algo_t *const all[] = {&pb_algo_probs, &pb_algo_alphazero,
                                       &pb_algo_td};

const pb_algo_t *pb_algo_by_name(const char *name) {
  if (name == NULL) return NULL;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(all[i]->data->name, name)) return all[i];
  return NULL;
}

const pb_algo_t *pb_algo_of(const pb_config_t *cfg) {
  return pb_algo_by_name(cfg->algorithm);
}

static int ticked(const pb_algo_env_t *env, pb_err_t *err) {
  return env->tick != NULL ? env->tick(env->tick_ctx, err) : 0;
}

static int ev_value(void *ctx, const pb_state_t *s, int n, float *out,
                    pb_err_t *err) {
  const pb_algo_env_t *env = ctx;
  int rc = ticked(env, err);
  if (rc != 0) return rc;
  pb_evalfn_t f = pb_neteval_fn(env->ne);
  return f.value(f.ctx, s, n, out, err);
}

static int ev_qvalues(void *ctx, const pb_state_t *s, int n, float *out,
                      pb_err_t *err) {
  const pb_algo_env_t *env = ctx;
  int rc = ticked(env, err);
  if (rc != 0) return rc;
  pb_evalfn_t f = pb_neteval_fn(env->ne);
  return f.qvalues(f.ctx, s, n, out, err);
}

pb_evalfn_t pb_algo_evalfn(const pb_algo_env_t *env) {
  return (pb_evalfn_t){ev_value, ev_qvalues, (void *)env};
}
