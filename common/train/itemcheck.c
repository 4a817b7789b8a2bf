/* itemcheck.c - the checks of a worker's result (itemcheck.h). */
#include "itemcheck.h"

#include "selfplay.h"

int pb_itemcheck_episode(const pb_game_t *g, const pb_itemcheck_rules_t *r,
                         const pb_state_t *states, uint32_t n,
                         int final_reward, uint64_t q_version, int has_policy,
                         pb_err_t *err) {
  if (q_version > r->version || r->version - q_version > r->staleness) {
    pb_err_set(err, PB_ECORRUPT,
               "played with Q version %llu, the item allows %llu..%llu",
               (unsigned long long)q_version,
               (unsigned long long)(r->version > r->staleness
                                        ? r->version - r->staleness
                                        : 0),
               (unsigned long long)r->version);
    return PB_ECORRUPT;
  }
  if ((has_policy != 0) != (r->policy != 0)) {
    pb_err_set(err, PB_ECORRUPT, "%s",
               r->policy ? "no visit counts, which this run trains on"
                         : "visit counts, which this run's algorithm does "
                           "not make");
    return PB_ECORRUPT;
  }
  return pb_selfplay_check(g, states, n, final_reward, r->max_turns, err);
}

int pb_itemcheck_targets(const pb_game_t *g, const pb_state_t *states,
                         size_t n, const float *q, pb_err_t *err) {
  const int A = g->num_actions;
  for (size_t i = 0; i < n; i++) {
    uint8_t acts[PB_MAX_ACTIONS], legal[PB_MAX_ACTIONS] = {0};
    const int na = g->legal(&states[i], acts);
    for (int k = 0; k < na; k++) legal[acts[k]] = 1;
    for (int a = 0; a < A; a++) {
      const float v = q[i * (size_t)A + (size_t)a];
      if (!(v >= -1.0f && v <= 1.0f)) {
        pb_err_set(err, PB_ECORRUPT,
                   "position %zu: a value outside [-1, 1] (action %d)", i, a);
        return PB_ECORRUPT;
      }
      if (!legal[a] && v != 0.0f) {
        pb_err_set(err, PB_ECORRUPT,
                   "position %zu: a value on illegal action %d", i, a);
        return PB_ECORRUPT;
      }
    }
  }
  return 0;
}
