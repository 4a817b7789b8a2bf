/* selfref.c - the learner's own reference games of self-play (issue 46):
 * the ground truth of the outcome test (selfcheck.c). Comparing an actor's
 * results with the other actors' needs honest actors beside it: a lone
 * actor, colluders with nobody else, or a fast cheat that takes most
 * items are compared with nobody, or with themselves. So for each Q
 * version served while self-play items are out, the learner plays
 * net.selfplay_reference episodes itself: the run's algorithm's own
 * player (common/algo/algo.h, the code an actor plays an item with: PROBS
 * self-play, AlphaZero's MCTS, td's n-ply games), with copies of the
 * served networks in the actors' precision, seeds of its own that workers
 * do not know, one job at a time on libuv's thread pool (the loop never
 * waits on it). When a job ends its results are the reference of that
 * version, and every identity with episodes of it is judged again
 * (pb__selfcheck_reference).
 *
 * The self-play phase ends only when no reference job runs
 * (l->ref.running, phases.c), so an actor faster than the learner's
 * games is still judged, and what the judgement drops is redone, before
 * the iteration trains. What that costs: the job's time beyond the
 * actors' (learner.log's "reference games" line, /status). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "precision.h"
#include "state.h"

int pb__selfref_init(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *c = &l->cfg;
  if (!(c->net.selfplay_check > 0) || c->net.selfplay_reference <= 0)
    return 0;
  pb_lref_t *r = &l->ref;
  r->on = 1;
  pb_episodes_init(&r->eps);
  const pb_algo_t *a = r->algo = pb_iter_algo(l->it.iter);
  /* The actors' precision, as the surprise's scoring network (selfcheck.c). */
  pb_nn_t *lq = pb_learn_q(l->learn), *lv = pb_learn_v(l->learn);
  const int prec = pb__role_precision(l, PB_DEVICE_ACTOR);
  if ((a->play_nets & PB_ALGO_NET_Q) && lq != NULL) {
    r->q = pb_nn_new(pb_nn_spec(lq), NULL, pb_nn_device(lq), 1, err);
    if (r->q == NULL || pb_nn_set_precision(r->q, prec, err) != 0)
      return err->code;
  }
  if ((a->play_nets & PB_ALGO_NET_V) && lv != NULL) {
    r->v = pb_nn_new(pb_nn_spec(lv), NULL, pb_nn_device(lv), 1, err);
    if (r->v == NULL || pb_nn_set_precision(r->v, prec, err) != 0)
      return err->code;
  }
  int par = c->train.selfplay_parallel;
  if (par > c->net.selfplay_reference) par = c->net.selfplay_reference;
  if (par < 1) par = 1;
  if ((r->ne = pb_neteval_new(l->g, par > 256 ? par : 256, 0, err)) == NULL)
    return err->code;
  r->env = (pb_algo_env_t){.g = l->g,
                           .run = &l->cfg,
                           .parallel = par,
                           .threads = 1,
                           .v = r->v,
                           .q = r->q,
                           .ne = r->ne};
  if ((r->player = a->player_new(&r->env, err)) == NULL)
    return err->code ? err->code : PB_ENOMEM;
  /* Not the run's seed: workers know that one. */
  pb_rng_seed(&r->rng, pb_mix64((uint64_t)(pb_now() * 1e9) ^ 0x7ef6a3e5),
              (uint64_t)getpid());
  return 0;
}

void pb__selfref_free(pb_learner_t *l) {
  pb_lref_t *r = &l->ref;
  if (r->player != NULL) r->algo->player_destroy(&r->player);
  pb_neteval_destroy(&r->ne);
  pb_nn_destroy(&r->q);
  pb_nn_destroy(&r->v);
  pb_episodes_free(&r->eps);
  memset(r, 0, sizeof *r);
}

/* On a pool thread: the item, with the job's own networks. */
static void work(uv_work_t *req) {
  pb_learner_t *l = req->data;
  pb_lref_t *r = &l->ref;
  pb_err_clear(&r->err);
  pb_nn_set_threads(l->cfg.model.threads);
  pb_episodes_clear(&r->eps);
  r->rc = r->algo->play(r->player, &r->env, &r->item, &r->eps, &r->err);
}

static void done(uv_work_t *req, int status) {
  pb_learner_t *l = req->data;
  pb_lref_t *r = &l->ref;
  r->running = 0;
  const double dt = pb_now() - r->t_start;
  r->busy_s += dt;
  refgames_t *g = &r->games[r->item.version % REF_KEEP];
  if (status != 0 || r->rc != 0) {
    if (status == 0 && r->rc != PB_EINTR) {
      pb__set_fatal(l, &r->err);
      return;
    }
    g->started = 0; /* played again, unless the loop is closing */
  } else {
    g->n = g->sum = g->sq = 0;
    for (size_t k = 0; k < r->eps.n_eps; k++) {
      const double x = (r->eps.len[k] - 1) % 2 == 0 ? r->eps.reward[k]
                                                     : -r->eps.reward[k];
      g->n++;
      g->sum += x;
      g->sq += x * x;
    }
    g->done = 1;
    r->jobs++;
    r->episodes += g->n;
    pb_log_info(l->log,
                "reference games: %" PRIu64 " episodes of Q version %" PRIu64
                " played by the learner in %.2f s, the first player's mean "
                "result %+.3f",
                g->n, g->version, dt, g->n ? g->sum / (double)g->n : 0.0);
  }
  if (l->fatal || l->stopping) return;
  if (g->done) pb__selfcheck_reference(l, g->version);
  if (r->wait_since > 0) {
    r->waited_s += pb_now() - r->wait_since;
    r->wait_since = 0;
  }
  pb__selfref_kick(l);
  if (!r->running && l->it.phase == PH_SELFPLAY &&
      pb_iter_selfplay_iter(l->it.iter) != 0 && pb_workq_finished(l->it.spq))
    pb__selfplay_done(l);
}

void pb__selfref_kick(pb_learner_t *l) {
  pb_lref_t *r = &l->ref;
  if (!r->on || l->stopping || l->fatal) return;
  if (r->running) {
    /* Self-play has every item and waits for these games (phases.c). */
    if (r->wait_since == 0 && l->it.phase == PH_SELFPLAY &&
        pb_workq_finished(l->it.spq))
      r->wait_since = pb_now();
    return;
  }
  /* Only while self-play items of the served version are out. */
  if (pb_iter_selfplay_iter(l->it.iter) == 0 ||
      pb_workq_finished(l->it.spq) || l->net.qw.buf == NULL)
    return;
  const uint64_t v = l->net.qw.version;
  refgames_t *g = &r->games[v % REF_KEEP];
  if (g->started && g->version == v) return;
  pb_err_t err;
  const wbuf_t *qw = &l->net.qw, *vw = &l->net.vw;
  if (r->v != NULL && (vw->buf == NULL || vw->version != v))
    return; /* V of this version is not served yet */
  if ((r->q != NULL &&
       pb_nn_weights_load(r->q, qw->buf, qw->len, NULL, &err) != 0) ||
      (r->v != NULL &&
       pb_nn_weights_load(r->v, vw->buf, vw->len, NULL, &err) != 0)) {
    pb__set_fatal(l, &err);
    return;
  }
  pb_neteval_bind(r->ne, r->v, r->q);
  /* The iteration's settings (td: the share of random moves of its middle
   * item; they decay in steps over the run's games). */
  pb_iter_selfplay_item(l->it.iter, pb_iter_selfplay_items(l->it.iter) / 2,
                        &r->item);
  r->item.episodes = l->cfg.net.selfplay_reference;
  r->item.seed = pb_rng_next(&r->rng);
  r->item.version = v;
  *g = (refgames_t){.version = v, .started = 1};
  r->job.data = l;
  r->t_start = pb_now();
  int rc = uv_queue_work(&l->loop, &r->job, work, done);
  if (rc != 0) {
    pb_err_set(&err, PB_EIO, "cannot start the reference games: %s",
               uv_strerror(rc));
    g->started = 0;
    pb__set_fatal(l, &err);
    return;
  }
  r->running = 1;
}
