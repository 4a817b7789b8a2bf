/* iteration.c - one training iteration, written once for the learner and
 * --inproc (iteration.h); the algorithm's parts come from its table. */
#include "iteration_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "invariant.h"
#include "json.h"
#include "rundir.h"

pb_iter_t *pb_iter_new(const pb_config_t *cfg, pb_learn_t *learn,
                       pb_err_t *err) {
  pb_assert(cfg != NULL && learn != NULL);
  const pb_algo_t *a = pb_algo_of(cfg);
  pb_assert(a != NULL); /* the schema knows only these */
  pb_iter_t *it = calloc(1, sizeof *it);
  if (it == NULL) goto nomem;
  it->cfg = cfg;
  it->algo = a;
  it->learn = learn;
  it->g = pb_learn_game(learn);
  pb_episodes_init(&it->eps);
  it->max_items =
      (size_t)(cfg->train.episodes_per_iter + cfg->net.item_episodes - 1) /
      (size_t)cfg->net.item_episodes;
  it->store = calloc(it->max_items, sizeof *it->store);
  if (it->store == NULL) goto nomem;
  for (size_t i = 0; i < it->max_items; i++) pb_episodes_init(&it->store[i]);
  if (a->state_size > 0 && (it->priv = calloc(1, a->state_size)) == NULL)
    goto nomem;
  return it;
nomem:
  pb_iter_destroy(&it);
  pb_err_set(err, PB_ENOMEM, "iteration: out of memory");
  return NULL;
}

void pb_iter_destroy(pb_iter_t **pit) {
  if (pit == NULL || *pit == NULL) return;
  pb_iter_t *it = *pit;
  if (it->store != NULL)
    for (size_t i = 0; i < it->max_items; i++) pb_episodes_free(&it->store[i]);
  free(it->store);
  pb_episodes_free(&it->eps);
  free(it->qt);
  free(it->priv);
  free(it);
  *pit = NULL;
}

const pb_algo_t *pb_iter_algo(const pb_iter_t *it) {
  return it->algo;
}
pb_learn_t *pb_iter_learn(pb_iter_t *it) {
  return it->learn;
}

/* ---- 1. self-play ---------------------------------------------------- */

int pb_iter_open_selfplay(pb_iter_t *it, uint64_t iter, pb_err_t *err) {
  (void)err;
  pb_assert(iter >= 1);
  const pb_config_t *c = it->cfg;
  it->n_items =
      (size_t)(c->train.episodes_per_iter + c->net.item_episodes - 1) /
      (size_t)c->net.item_episodes;
  pb_assert(it->n_items <= it->max_items);
  for (size_t i = 0; i < it->n_items; i++) pb_episodes_clear(&it->store[i]);
  it->sp_iter = iter;
  return 0;
}

uint64_t pb_iter_selfplay_iter(const pb_iter_t *it) {
  return it->sp_iter;
}
size_t pb_iter_selfplay_items(const pb_iter_t *it) {
  return it->n_items;
}

void pb_iter_selfplay_item(const pb_iter_t *it, size_t i,
                           pb_algo_item_t *item) {
  pb_assert(it->sp_iter >= 1 && i < it->n_items);
  const pb_config_t *c = it->cfg;
  const int per = c->net.item_episodes, total = c->train.episodes_per_iter;
  const uint64_t first = (uint64_t)i * (uint64_t)per;
  const uint64_t version = it->sp_iter - 1;
  item->episodes =
      (int)((uint64_t)total - first < (uint64_t)per ? (uint64_t)total - first
                                                    : (uint64_t)per);
  item->seed = pb_learn_item_seed(c, version, first);
  item->version = version;
  item->td_epsilon =
      it->algo->item_epsilon ? it->algo->item_epsilon(c, version, first) : 0.0;
}

pb_episodes_t *pb_iter_item_store(pb_iter_t *it, size_t i) {
  pb_assert(i < it->n_items);
  return &it->store[i];
}

int pb_iter_selfplay_done(pb_iter_t *it, pb_err_t *err) {
  pb_episodes_clear(&it->eps);
  for (size_t i = 0; i < it->n_items; i++) {
    int rc = pb_episodes_append(&it->eps, &it->store[i], err);
    if (rc != 0) return rc;
  }
  /* How far the episodes' networks lag the version that trains now. */
  const uint64_t now = pb_learn_version(it->learn);
  it->staleness = 0;
  for (size_t k = 0; k < it->eps.n_eps; k++)
    if (it->eps.version[k] <= now && now - it->eps.version[k] > it->staleness)
      it->staleness = now - it->eps.version[k];
  it->sp_iter = 0;
  it->dropped = pb_learn_cap_replay(it->learn, &it->eps);
  return 0;
}

const pb_episodes_t *pb_iter_episodes(const pb_iter_t *it) {
  return &it->eps;
}
size_t pb_iter_dropped(const pb_iter_t *it) {
  return it->dropped;
}
uint64_t pb_iter_staleness(const pb_iter_t *it) {
  return it->staleness;
}

void pb_iter_outcomes(const pb_iter_t *it, int *wins, int *draws) {
  const pb_episodes_t *e = &it->eps;
  *wins = *draws = 0;
  for (size_t k = 0; k < e->n_eps; k++) {
    /* who won: the last mover (odd length = first player moved last) */
    if (e->reward[k] == 0)
      (*draws)++;
    else if ((e->reward[k] > 0) == (e->len[k] % 2 == 1))
      (*wins)++;
  }
}

/* ---- 2.-4. training and search --------------------------------------- */

int pb__iter_set_search(pb_iter_t *it, const pb_state_t *states,
                        const uint32_t *counts, size_t n, pb_err_t *err) {
  const size_t need = n * (size_t)it->g->num_actions;
  if (need > it->qt_cap) {
    free(it->qt);
    it->qt = malloc(need * sizeof *it->qt);
    it->qt_cap = it->qt ? need : 0;
    if (it->qt == NULL)
      return pb_err_set(err, PB_ENOMEM, "iteration: out of memory");
  }
  it->uniq = states;
  it->uniq_count = counts;
  it->uniq_total = 0;
  for (size_t i = 0; i < n; i++) it->uniq_total += counts ? counts[i] : 1;
  it->n_uniq = n;
  it->targets = it->qt;
  return 0;
}

int pb_iter_train_before(pb_iter_t *it, pb_err_t *err) {
  memset(&it->vst, 0, sizeof it->vst);
  memset(&it->qst, 0, sizeof it->qst);
  it->uniq = NULL;
  it->uniq_count = NULL;
  it->uniq_total = 0;
  it->n_uniq = 0;
  it->targets = NULL;
  it->v_after = 0;
  return it->algo->train_before_search ? it->algo->train_before_search(it, err)
                                       : 0;
}

int pb_iter_searches(const pb_iter_t *it) {
  return it->algo->data->searches;
}
size_t pb_iter_search_positions(const pb_iter_t *it) {
  return it->n_uniq;
}
const pb_state_t *pb_iter_search_states(const pb_iter_t *it) {
  return it->uniq;
}
const uint32_t *pb_iter_search_counts(const pb_iter_t *it) {
  return it->uniq_count;
}
uint64_t pb_iter_search_occurrences(const pb_iter_t *it) {
  return it->uniq_total;
}
float *pb_iter_targets(pb_iter_t *it) {
  return it->qt;
}

size_t pb_iter_search_items(const pb_iter_t *it) {
  if (!it->algo->data->searches) return 0;
  const size_t per = (size_t)it->cfg->net.item_states;
  return (it->n_uniq + per - 1) / per;
}

void pb_iter_search_item(const pb_iter_t *it, size_t k, size_t *first,
                         size_t *n) {
  const size_t per = (size_t)it->cfg->net.item_states;
  pb_assert(k < pb_iter_search_items(it));
  *first = k * per;
  *n = it->n_uniq - *first < per ? it->n_uniq - *first : per;
}

int pb_iter_train_after(pb_iter_t *it, pb_err_t *err) {
  return it->algo->train_after_search(it, err);
}

int pb_iter_v_after(const pb_iter_t *it) {
  return it->v_after;
}
const pb_learn_stats_t *pb_iter_stats_v(const pb_iter_t *it) {
  return &it->vst;
}
const pb_learn_stats_t *pb_iter_stats_q(const pb_iter_t *it) {
  return &it->qst;
}

/* ---- 5. checkpoint ---------------------------------------------------- */

int pb_iter_save(pb_iter_t *it, pb_log_t *log, pb_err_t *err) {
  const uint64_t v = pb_learn_version(it->learn);
  char path[4200];
  pb_rundir_ckpt_path(it->cfg->run.dir, (unsigned long long)v, path,
                      sizeof path);
  int rc = pb_learn_save(it->learn, path, NULL, 0, err);
  if (rc != 0) return rc;
  /* Retention (run.keep_last / run.keep_every): housekeeping, so a
   * failure is only logged. */
  pb_err_t pe;
  pb_err_clear(&pe);
  if (pb_rundir_prune(it->cfg, v, log, &pe) < 0)
    pb_log_warn(log, "checkpoint retention: %s", pe.msg);
  return 0;
}

/* ---- reports ---------------------------------------------------------- */

void pb_iter_report(const pb_iter_t *it, const char *mode,
                    const pb_iter_times_t *t, pb_json_t *j) {
  const uint64_t v = pb_learn_version(it->learn);
  const size_t npos = it->eps.n_states;
  int wins, draws;
  pb_iter_outcomes(it, &wins, &draws);
  pb_json_obj_begin(j);
  pb_json_kstr(j, "event", "iteration");
  pb_json_kstr(j, "mode", mode);
  pb_json_kstr(j, "algorithm", it->algo->data->name);
  pb_json_kuint(j, "iteration", v);
  pb_json_kuint(j, "version", v);
  pb_json_kuint(j, "episodes", it->eps.n_eps);
  pb_json_kuint(j, "positions", npos);
  pb_json_kuint(j, "distinct_positions", it->n_uniq);
  pb_json_kuint(
      j, "targets_crc",
      pb_learn_targets_crc(it->learn, &it->eps, it->targets, it->n_uniq));
  pb_json_kint(j, "first_player_wins", wins);
  pb_json_kint(j, "draws", draws);
  pb_json_kdouble(j, "selfplay_s", t->selfplay_s);
  pb_json_kdouble(j, "train_q_s", it->qst.seconds);
  pb_json_kdouble(j, "checkpoint_s", t->checkpoint_s);
  pb_json_kdouble(j, "iteration_s", t->iteration_s);
  pb_json_kdouble(j, "q_loss", it->qst.loss_mean);
  pb_json_kdouble(j, "q_loss_last", it->qst.loss_last);
  pb_json_kdouble(j, "q_lr", it->qst.lr);
  pb_json_kdouble(j, "q_grad_norm_max", it->qst.grad_norm_max);
  pb_json_kuint(j, "replay_positions", pb_learn_replay_positions(it->learn));
  pb_json_kdouble(j, "selfplay_positions_per_s",
                  npos / (t->selfplay_s > 0 ? t->selfplay_s : 1e-9));
  if (it->algo->metrics) it->algo->metrics(it, t, j);
}

void pb_iter_describe(const pb_iter_t *it, const pb_iter_times_t *t, char *buf,
                      size_t n) {
  if (n > 0) buf[0] = '\0';
  if (it->algo->describe) it->algo->describe(it, t, buf, n);
}
