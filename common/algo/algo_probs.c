/* algo_probs.c - PROBS (Pastukhov 2024, Algorithm 2) as an algorithm table
 * (algo.h): self-play draws moves from softmax(Q) with Dirichlet noise
 * (common/train/selfplay.h), V trains on the games' outcomes, searchers
 * find the Q-targets of the distinct positions with beam search
 * (Algorithm 1, common/search/beam_search.h) or alpha-beta over V
 * (search.algorithm abnet, common/search/abtargets.h), and Q trains on
 * them. Its section is `search`; its checkpoints hold V and Q, played at
 * their best by abnet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abtargets.h"
#include "beam_search.h"
#include "iteration_impl.h"
#include "json.h"
#include "selfplay.h"

/* ---- self-play ---------------------------------------------------------- */

/* One engine per thread of game work; members after the first play into
 * their own store, appended in member order. */
typedef struct {
  pb_selfplay_t *sp[PB_BATCHER_MAX_THREADS];
  pb_episodes_t part[PB_BATCHER_MAX_THREADS];
  pb_selfplay_opts_t o;
} player_t;

static void *player_new(const pb_algo_env_t *env, pb_err_t *err) {
  player_t *p = calloc(1, sizeof *p);
  if (p == NULL) {
    pb_err_set(err, PB_ENOMEM, "self-play: out of memory");
    return NULL;
  }
  /* The run's settings, as the learner builds them; the games at once are
   * this process's own. */
  pb_selfplay_config_opts(env->run, &p->o);
  p->o.parallel = env->parallel;
  for (int t = 0; t < PB_BATCHER_MAX_THREADS; t++)
    pb_episodes_init(&p->part[t]);
  /* One engine now, so that refused settings are known at once. */
  if ((p->sp[0] = pb_selfplay_new(env->g, &p->o, err)) == NULL) {
    free(p);
    return NULL;
  }
  return p;
}

static void player_destroy(void **pp) {
  player_t *p = *pp;
  if (p == NULL) return;
  for (int t = 0; t < PB_BATCHER_MAX_THREADS; t++) {
    pb_selfplay_destroy(&p->sp[t]);
    pb_episodes_free(&p->part[t]);
  }
  free(p);
  *pp = NULL;
}

typedef struct {
  player_t *p;
  const pb_algo_item_t *item;
  pb_episodes_t *out;
  int members;
} play_job_t;

/* Member m's share [lo, hi) of n things split over `members`. */
static void share_of(size_t n, int members, int m, size_t *lo, size_t *hi) {
  *lo = n * (size_t)m / (size_t)members;
  *hi = n * (size_t)(m + 1) / (size_t)members;
}

/* One thread's episodes, numbered from its first one, so that the item
 * plays the same episodes whatever the thread count. */
static int play_member(void *ctx, int m, const pb_evalfn_t *ev, pb_err_t *err) {
  play_job_t *j = ctx;
  size_t lo, hi;
  share_of((size_t)j->item->episodes, j->members, m, &lo, &hi);
  pb_episodes_t *out = m == 0 ? j->out : &j->p->part[m];
  if (m > 0) pb_episodes_clear(out);
  if (hi == lo) return 0;
  return pb_selfplay_run(j->p->sp[m], (int)(hi - lo), j->item->seed, lo, ev,
                         j->item->version, out, err);
}

static int play(void *player, const pb_algo_env_t *env,
                const pb_algo_item_t *item, pb_episodes_t *out, pb_err_t *err) {
  player_t *p = player;
  int members = env->threads < item->episodes ? env->threads : item->episodes;
  if (members < 1) members = 1;
  for (int t = 1; t < members; t++)
    if (p->sp[t] == NULL &&
        (p->sp[t] = pb_selfplay_new(env->g, &p->o, err)) == NULL)
      return err && err->code ? err->code : PB_ENOMEM;
  pb_evalfn_t fn = pb_algo_evalfn(env);
  play_job_t job = {p, item, out, members};
  int rc = members == 1 ? play_member(&job, 0, &fn, err)
                        : pb_batcher_run(env->batcher, members, &fn,
                                         play_member, &job, err);
  for (int t = 1; rc == 0 && t < members; t++)
    rc = pb_episodes_append(out, &p->part[t], err);
  return rc;
}

/* ---- search ---------------------------------------------------------------
 */

/* The beam of every thread, or abnet's target searcher, for the settings
 * of the items searched last. */
typedef struct {
  pb_beam_t *beam[PB_BATCHER_MAX_THREADS];
  int E, M;
  pb_abtargets_t *abt;
} searcher_t;

static void *searcher_new(const pb_algo_env_t *env, pb_err_t *err) {
  (void)env;
  searcher_t *s = calloc(1, sizeof *s);
  if (s == NULL) pb_err_set(err, PB_ENOMEM, "search: out of memory");
  return s;
}

static void searcher_destroy(void **ps) {
  searcher_t *s = *ps;
  if (s == NULL) return;
  for (int t = 0; t < PB_BATCHER_MAX_THREADS; t++) pb_beam_destroy(&s->beam[t]);
  pb_abtargets_destroy(&s->abt);
  free(s);
  *ps = NULL;
}

typedef struct {
  searcher_t *s;
  const pb_state_t *states;
  int n, A, members;
  float *out;
} search_job_t;

static int search_member(void *ctx, int m, const pb_evalfn_t *ev,
                         pb_err_t *err) {
  search_job_t *j = ctx;
  size_t lo, hi;
  share_of((size_t)j->n, j->members, m, &lo, &hi);
  if (hi == lo) return 0;
  return pb_beam_run(j->s->beam[m], j->states + lo, (int)(hi - lo), ev,
                     j->out + lo * (size_t)j->A, err);
}

static int search(void *searcher, const pb_algo_env_t *env,
                  const pb_state_t *states, int n, float *out, pb_err_t *err) {
  searcher_t *s = searcher;
  const pb_config_t *c = env->run;
  pb_evalfn_t fn = pb_algo_evalfn(env);
  if (pb_config_abnet_targets(c)) {
    const int M = c->search.max_depth;
    const uint64_t nodes = (uint64_t)c->search.nodes;
    if (s->abt != NULL && (pb_abtargets_max_depth(s->abt) != M ||
                           pb_abtargets_nodes(s->abt) != nodes))
      pb_abtargets_destroy(&s->abt);
    if (s->abt == NULL && (s->abt = pb_abtargets_new(
                               env->g, M, nodes, env->parallel, err)) == NULL)
      return err && err->code ? err->code : PB_ENOMEM;
    return pb_abtargets_run(s->abt, states, n, &fn, out, err);
  }
  const int E = c->search.expansions, M = c->search.max_depth;
  int members = env->threads < n ? env->threads : n;
  if (members < 1) members = 1;
  if (s->E != E || s->M != M)
    for (int t = 0; t < PB_BATCHER_MAX_THREADS; t++)
      pb_beam_destroy(&s->beam[t]);
  for (int t = 0; t < members; t++) {
    if (s->beam[t] != NULL) continue;
    if ((s->beam[t] = pb_beam_new(env->g, E, M, env->parallel, err)) == NULL)
      return err && err->code ? err->code : PB_ENOMEM;
    s->E = E;
    s->M = M;
  }
  search_job_t job = {s, states, n, env->g->num_actions, members, out};
  return members == 1 ? search_member(&job, 0, &fn, err)
                      : pb_batcher_run(env->batcher, members, &fn,
                                       search_member, &job, err);
}

/* ---- training --------------------------------------------------------- */

/* V_k on the outcomes (the paper; with train.v_search_mix > 0 V trains
 * after the search instead, on targets that need its values), then the
 * distinct positions of the iteration, to search with (V_k, Q_{k-1}). */
static int train_before(pb_iter_t *it, pb_err_t *err) {
  pb_learn_t *l = it->learn;
  int rc = 0;
  if (pb_learn_v_first(l))
    rc = pb_learn_train_v(l, &it->eps, NULL, &it->vst, err);
  size_t n = 0;
  if (rc == 0) rc = pb_learn_distinct(l, &it->eps, &n, err);
  if (rc == 0)
    rc = pb__iter_set_search(it, pb_learn_distinct_states(l),
                             pb_learn_distinct_counts(l), n, err);
  return rc;
}

/* Q_k on the search's targets (and V_k when it trains after the search),
 * then the end of the iteration: the window keeps the targets. */
static int train_after(pb_iter_t *it, pb_err_t *err) {
  pb_learn_t *l = it->learn;
  int rc =
      pb_learn_train_after_search(l, &it->eps, it->qt, &it->vst, &it->qst, err);
  return rc != 0 ? rc : pb_learn_end_iteration(l, &it->eps, it->qt, err);
}

static void settings(const pb_config_t *cfg, char *buf, size_t n) {
  pb_config_search_desc(cfg, buf, n);
}

static void describe(const pb_iter_t *it, const pb_iter_times_t *t, char *buf,
                     size_t n) {
  snprintf(buf, n,
           "train V %.2fs (loss %.4f -> %.4f), search %zu states %.2fs (%.0f "
           "states/s), train Q %.2fs (loss %.4f -> %.4f)",
           it->vst.seconds, it->vst.loss_first, it->vst.loss_last, it->n_uniq,
           t->search_s, it->n_uniq / (t->search_s > 0 ? t->search_s : 1e-9),
           it->qst.seconds, it->qst.loss_first, it->qst.loss_last);
}

static void metrics(const pb_iter_t *it, const pb_iter_times_t *t,
                    pb_json_t *j) {
  /* The mean Q-target (over nonzero ones: illegal actions are 0), what a
   * poisoner of the search would move. */
  double sum = 0;
  size_t cnt = 0;
  const size_t n = it->n_uniq * (size_t)it->g->num_actions;
  for (size_t i = 0; it->qt != NULL && i < n; i++)
    if (it->qt[i] != 0.0f) {
      sum += it->qt[i];
      cnt++;
    }
  pb_json_kdouble(j, "q_target_mean", cnt ? sum / (double)cnt : 0.0);
  pb_json_kdouble(j, "train_v_s", it->vst.seconds);
  pb_json_kdouble(j, "search_s", t->search_s);
  pb_json_kdouble(j, "v_loss", it->vst.loss_mean);
  pb_json_kdouble(j, "v_loss_last", it->vst.loss_last);
  pb_json_kdouble(j, "v_lr", it->vst.lr);
  pb_json_kdouble(j, "v_grad_norm_max", it->vst.grad_norm_max);
  pb_json_kdouble(j, "search_states_per_s",
                  it->n_uniq / (t->search_s > 0 ? t->search_s : 1e-9));
}

const pb_algo_t pb_algo_probs = {
    .data = &pb_algo_data_probs,
    .play_nets = PB_ALGO_NET_Q,
    .q_play = 1,
    .state_size = 0,
    .player_new = player_new,
    .player_destroy = player_destroy,
    .play = play,
    .searcher_new = searcher_new,
    .searcher_destroy = searcher_destroy,
    .search = search,
    .train_before_search = train_before,
    .train_after_search = train_after,
    .item_epsilon = NULL,
    .settings = settings,
    .describe = describe,
    .metrics = metrics,
};
