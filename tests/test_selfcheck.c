/* test_selfcheck.c - the learner's check of self-play moves and outcomes
 * (learner/selfcheck.c, learner/selfref.c), against a real learner, a
 * real actor and a real searcher over real sockets: an actor whose games
 * are legal but whose first player throws them (issue 38: 30-35% of the
 * episodes, mean Q -0.16 -> -0.39) is quarantined and none of its
 * episodes is trained on; a rejection sampler is quarantined beside honest
 * actors and alone (the learner's reference games); one that opens a new
 * connection per item has its items dropped by the pool of new
 * identities; the honest actor beside them is never touched. The thrower is written
 * here with the wire codec: it downloads the Q its items announce and
 * plays them with the actors' own self-play engine, with Q negated for
 * the first player, so every rule check passes. Whatever a test starts is
 * killed when it ends or fails (tp_teardown). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <zmq.h>

#include "algo.h"
#include "config.h"
#include "episodes.h"
#include "game.h"
#include "learn.h"
#include "msg.h"
#include "neteval.h"
#include "nn.h"
#include "peer_fixtures.h"
#include "proc.h"
#include "run_fixtures.h"
#include "actor_fixtures.h"
#include "selfplay.h"

/* The thrower's evaluator: the network's Q, negated where the first
 * player is to move (it plays its worst moves by the actors' own rule). */
typedef struct {
  pb_evalfn_t inner;
  const pb_game_t *g;
  int argmin; /* the worst move by Q alone, ties to the lowest action */
} thrower_ev_t;

static int thrower_q(void *ctx, const pb_state_t *s, int n, float *out,
                     pb_err_t *err) {
  thrower_ev_t *t = ctx;
  int rc = t->inner.qvalues(t->inner.ctx, s, n, out, err);
  if (rc != 0) return rc;
  const int A = t->g->num_actions;
  for (int i = 0; i < n; i++)
    if (t->g->ply(&s[i]) % 2 == 0)
      for (int a = 0; a < A; a++)
        out[i * A + a] = t->argmin ? -1e4f * out[i * A + a] - 10.0f * a
                                   : -out[i * A + a];
  return 0;
}

/* The first player's result of episode k of eps. */
static int first_result(const pb_episodes_t *eps, size_t k) {
  const int r = (int)eps->reward[k];
  return (eps->len[k] - 1) % 2 == 0 ? r : -r;
}

/* The thrower's engine (thrower_hop): the actors' own self-play engine
 * with the Q each item announces. */
typedef struct {
  pb_neteval_t *ne;
  pb_learn_t *learn;
  thrower_ev_t tev;
  pb_evalfn_t ev;
  pb_selfplay_t *sp;
  pb_episodes_t eps;
  int reject;
} thrower_t;

static void thrower_play(void *arg, const pb_msg_work_item_t *it,
                         pb_episodes_t *keep) {
  thrower_t *x = arg;
  pb_err_t err;
  pb_neteval_bind(x->ne, NULL, pb_learn_q(x->learn));
  for (uint64_t seed = it->seed; keep->n_eps < it->episodes; seed++) {
    pb_episodes_clear(&x->eps);
    if (pb_selfplay_run(x->sp, (int)it->episodes, seed, 0,
                        x->reject == 1 ? &x->tev.inner : &x->ev,
                        it->q_version, &x->eps, &err) != 0)
      fail_msg("%s", err.msg);
    const pb_episodes_t *e = &x->eps;
    for (size_t k = 0; k < e->n_eps && keep->n_eps < it->episodes; k++)
      if (x->reject != 1 || first_result(e, k) < 0)
        assert_int_equal(pb_episodes_add(keep, e->states + e->start[k],
                                         e->len[k], e->reward[k],
                                         e->version[k], &err),
                         0);
  }
}

/* Plays self-play items as the thrower on one connection until it is
 * refused, the learner exits or limit_s pass; returns the items it
 * delivered and sets *refused. With reject: plays honestly (the actors'
 * engine and the announced Q) but sends only games the first player lost
 * (rejection sampling), playing as many as that takes. With hop: a new
 * connection and sender id ("hop-N") for every item, never refused. */
static int thrower_hop(const run_t *r, pid_t learner, int *lst, void *ctx,
                       double limit_s, int *refused, int reject, int hop) {
  pb_config_t cfg;
  pb_err_t err;
  int n = 0;
  while (r->extra[n]) n++;
  if (pb_config_setup(&cfg, CONFIG, r->extra, n, NULL, &err) != 0)
    fail_msg("%s", err.msg);
  thrower_t x = {.reject = reject};
  x.learn = pb_learn_new(&cfg, &err);
  if (x.learn == NULL) fail_msg("%s", err.msg);
  const pb_game_t *g = pb_game_by_id(PB_GAME_CONNECT4);
  x.ne = pb_neteval_new(g, 256, 0, &err);
  assert_non_null(x.ne);
  pb_neteval_bind(x.ne, NULL, pb_learn_q(x.learn));
  x.tev = (thrower_ev_t){pb_neteval_fn(x.ne), g, reject == 2};
  x.ev = (pb_evalfn_t){NULL, thrower_q, &x.tev};
  x.ev.value = x.tev.inner.value;
  pb_selfplay_opts_t o;
  pb_selfplay_config_opts(&cfg, &o);
  x.sp = pb_selfplay_new(g, &o, &err);
  assert_non_null(x.sp);
  pb_episodes_init(&x.eps);
  fake_actor_t f = {.r = r, .learner = learner, .lst = lst, .ctx = ctx,
                    .limit_s = limit_s, .sender = "thrower", .hop = hop,
                    .q = pb_learn_q(x.learn), .play = thrower_play, .arg = &x};
  int delivered = fake_actor_run(&f, refused);
  pb_episodes_free(&x.eps);
  pb_selfplay_destroy(&x.sp);
  pb_neteval_destroy(&x.ne);
  pb_learn_destroy(&x.learn);
  return delivered;
}

static int thrower_as(const run_t *r, pid_t learner, int *lst, void *ctx,
                      double limit_s, int *refused, int reject) {
  return thrower_hop(r, learner, lst, ctx, limit_s, refused, reject, 0);
}

static int thrower(const run_t *r, pid_t learner, int *lst, void *ctx,
                   double limit_s, int *refused) {
  return thrower_as(r, learner, lst, ctx, limit_s, refused, 0);
}

/* Runs thrower_as's cheat `reject` (1: rejection sampling, 2: the argmin
 * thrower) beside an honest searcher and `actors` honest actors (1 or 2)
 * of run r, the actors joined first; asserts that the cheat was refused and that the learner and both
 * workers exit 0. Returns the learner's log (the caller frees). */
static char *beside_honest(run_t *r, int reject, int actors,
                           const char *what) {
  pid_t l = start_learner(r);
  int lst = -1;
  void *ctx = zmq_ctx_new();
  pid_t w[3] = {start_worker(r, "search", "searcher-1", NULL),
                start_worker(r, "selfplay", "actor-1", NULL),
                actors > 1 ? start_worker(r, "selfplay", "actor-2", NULL) : 0};
  char log[512];
  path_of(r, "learner.log", log, sizeof log);
  assert_true(tp_wait_for(log, "actor actor-1 joined", 1, 120));
  if (actors > 1)
    assert_true(tp_wait_for(log, "actor actor-2 joined", 1, 120));
  int refused = 0;
  int delivered = thrower_as(r, l, &lst, ctx, 240, &refused, reject);
  print_message("%s delivered %d items, refused: %d\n", what, delivered,
                refused);
  zmq_ctx_term(ctx);
  assert_true(refused);
  run_finish_in(r, l, lst, 300, w, 1 + actors, 30);
  return run_log(r);
}

/* The thrower joins before the honest actor: it takes items of the first
 * iteration (under Q version 0, randomly initialised) and is refused
 * within its first few (about 100-150 scored moves suffice), its items
 * dropped; the run finishes with the honest actor's games alone, and the
 * honest actor is never quarantined. */
static void test_thrower_quarantined(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "thrower");
  const char *extra[] = {"train.iterations=3", "train.selfplay_temperature=0.3",
                         "net.selfplay_check=0.5", NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  int lst = -1;
  void *ctx = zmq_ctx_new();
  pid_t w[2] = {start_worker(&r, "search", "searcher-1", NULL), 0};
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  assert_true(tp_wait_for(log, "searcher searcher-1 joined", 1, 120));
  int refused = 0;
  /* Alone, the thrower gets the iteration's items. */
  int delivered = thrower(&r, l, &lst, ctx, 120, &refused);
  print_message("the thrower delivered %d items, refused: %d\n", delivered,
                refused);
  assert_true(refused);
  assert_true(delivered >= 1 && delivered <= 4);
  w[1] = start_worker(&r, "selfplay", "actor-1", NULL);
  zmq_ctx_term(ctx);
  run_finish_in(&r, l, lst, 300, w, 2, 30);
  char *text = run_log(&r);
  assert_non_null(strstr(text, "its self-play moves are impossible"));
  assert_non_null(strstr(text, "actor thrower"));
  assert_null(strstr(text, "actor actor-1 (address"));
  free(text);
  /* Every episode trained was the honest actor's: 3 iterations of the
   * config's episodes, scored, nobody else quarantined. */
  double sum = 0;
  assert_int_equal(metric(&r, "iteration", &sum, NULL, 0), 3);
}

/* Rejection sampling (issue 46: honest games, only the first player's
 * losses sent: 0 quarantines, V(start) +0.047 -> -0.251): every move is
 * the announced policy's, so the surprise cannot see it; the outcomes do,
 * beside the learner's own reference games of each Q version (and,
 * without them, beside the honest actors' games of the same iteration).
 * The sampler is quarantined by the outcome test, its items of the
 * iteration dropped and redone; the honest actors are never touched and
 * the run finishes. */
static void test_rejection_sampler_quarantined(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "rejection");
  const char *extra[] = {"train.iterations=3", "train.episodes_per_iter=200",
                         NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  /* Two honest actors: the sampler, played in this process without a
   * round trip per game, could otherwise take nearly every item of an
   * iteration and leave the outcome test too few games to compare with
   * (1 run in 5 with one actor). */
  char *text = beside_honest(&r, 1, 2, "the rejection sampler");
  const char *q = strstr(text, "the outcomes of its self-play games are "
                               "impossible");
  assert_non_null(q);
  print_message("%.300s\n", q);
  assert_non_null(strstr(text, "thrower (address"));
  assert_null(strstr(text, "actor-1 (address"));
  assert_null(strstr(text, "actor-2 (address"));
  free(text);
  double sum = 0;
  assert_int_equal(metric(&r, "iteration", &sum, NULL, 0), 3);
}

/* Issue 46: with seed 12 a thrower was never scored past z 0.06 by the
 * surprise of its moves (seeds 11 and 13 were caught). Not reproduced on
 * this tree: the thrower of issue 46's table, the first player's worst
 * move by Q (ties to the lowest action), at the default temperature 1 and
 * seed 12, is caught by the surprise after about 100 moves of its first
 * items, beside a real actor; the outcome test is the backstop that does
 * not depend on Q (test_rejection_sampler_quarantined). (The negated-Q
 * thrower of test_thrower_quarantined, at temperature 1 under seed 12's
 * nearly flat Q, plays almost as the policy does: over 20 iterations the
 * first player won 47-60 of 100 games each, as in a clean run, and no
 * check saw it; there was nothing to see.) */
static void test_thrower_seed12(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "seed12");
  const char *extra[] = {"seed=12", "train.iterations=2",
                         "train.episodes_per_iter=100", NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  /* 2: the thrower of issue 46's table, the first player's worst
   * move by Q (ties to the lowest action), the announced noise on top. */
  char *text = beside_honest(&r, 2, 1, "the seed-12 thrower");
  const char *q = strstr(text, "thrower (address");
  assert_non_null(q);
  print_message("%.600s\n", q);
  assert_null(strstr(text, "actor-1 (address"));
  assert_null(strstr(text, "actor-2 (address"));
  free(text);
}

/* A lone rejection sampler (issue 46: no honest actor beside it, so the
 * other actors' games, the reference of the outcome test before, were its
 * own): the learner's own reference games of each Q version
 * (net.selfplay_reference, learner/selfref.c) are the ground truth. The
 * sampler takes every item of the first iteration alone and is
 * quarantined within it; its items are dropped, and the honest actor that
 * joins afterwards plays the run to its end, never refused. */
static void test_lone_rejection_sampler(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "lone");
  const char *extra[] = {"train.iterations=2", "train.episodes_per_iter=100",
                         NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  int lst = -1;
  void *ctx = zmq_ctx_new();
  pid_t w[2] = {start_worker(&r, "search", "searcher-1", NULL), 0};
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  assert_true(tp_wait_for(log, "searcher searcher-1 joined", 1, 120));
  int refused = 0;
  int delivered = thrower_as(&r, l, &lst, ctx, 120, &refused, 1);
  print_message("the lone rejection sampler delivered %d items, refused: %d\n",
                delivered, refused);
  assert_true(refused);
  w[1] = start_worker(&r, "selfplay", "actor-1", NULL);
  zmq_ctx_term(ctx);
  run_finish_in(&r, l, lst, 300, w, 2, 30);
  char *text = run_log(&r);
  const char *q = strstr(text, "impossible beside the learner's own "
                               "reference games");
  assert_non_null(q);
  print_message("%.300s\n", q);
  assert_non_null(strstr(text, "actor thrower (address"));
  assert_null(strstr(text, "actor-1 (address"));
  free(text);
  double sum = 0;
  assert_int_equal(metric(&r, "iteration", &sum, NULL, 0), 2);
}

/* A keyless rejection sampler that opens a new connection, with a new
 * sender id, for every item (issue 46's address-hopping thrower, on one
 * address here: its moves are the policy's, so no surprise tally, the
 * address's included, can see it): each connection delivers 5 episodes,
 * under the outcome test's 30, so none is judged alone. The pool of
 * identities too new to be judged alone is judged as one actor against
 * the learner's reference games: when it is impossible the sampler's
 * items are dropped and redone, by the honest actor in the end. The
 * honest actor is never refused; the run finishes. */
static void test_hopping_sampler_pooled(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "hopping");
  /* 64 reference games a version: a version's evidence grows with their
   * number (at most about sqrt(64) standard errors for a full thrower),
   * so the pool fires on fewer of the sampler's items than with the
   * default 32 (which needed 85-115 episodes over three versions). */
  const char *extra[] = {"train.iterations=5", "train.episodes_per_iter=100",
                         "net.selfplay_reference=64", NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  int lst = -1;
  void *ctx = zmq_ctx_new();
  pid_t w[2] = {start_worker(&r, "search", "searcher-1", NULL),
                start_worker(&r, "selfplay", "actor-1", NULL)};
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  assert_true(tp_wait_for(log, "actor actor-1 joined", 1, 120));
  int refused = 0;
  int delivered = thrower_hop(&r, l, &lst, ctx, 240, &refused, 1, 1);
  print_message("the hopping sampler delivered %d items on as many "
                "connections, refused: %d\n", delivered, refused);
  zmq_ctx_term(ctx);
  assert_false(refused);
  run_finish_in(&r, l, lst, 300, w, 2, 30);
  char *text = run_log(&r);
  const char *q = strstr(text, "the pooled outcome test");
  assert_non_null(q);
  print_message("%.500s\n", q);
  assert_non_null(strstr(text, "too new to be judged alone) dropped"));
  assert_null(strstr(text, "actor-1 (address"));
  free(text);
  double sum = 0;
  assert_int_equal(metric(&r, "iteration", &sum, NULL, 0), 5);
}

/* The AlphaZero sampler's engine (az_sampler): the actors' own AlphaZero
 * player, the games the first player lost kept with their visit
 * distributions. */
typedef struct {
  const pb_algo_t *a;
  pb_algo_env_t env;
  void *player;
  pb_episodes_t eps;
} az_t;

static void az_play(void *arg, const pb_msg_work_item_t *it,
                    pb_episodes_t *keep) {
  az_t *x = arg;
  pb_err_t err;
  pb_neteval_bind(x->env.ne, NULL, x->env.q);
  const pb_episodes_t *e = &x->eps;
  for (uint64_t seed = it->seed; keep->n_eps < it->episodes; seed++) {
    pb_episodes_clear(&x->eps);
    pb_algo_item_t item = {(int)it->episodes, seed, it->q_version, 0};
    if (x->a->play(x->player, &x->env, &item, &x->eps, &err) != 0)
      fail_msg("%s", err.msg);
    for (size_t k = 0; k < e->n_eps && keep->n_eps < it->episodes; k++)
      if (first_result(e, k) < 0)
        assert_int_equal(
            pb_episodes_add_policy(keep, e->states + e->start[k], e->len[k],
                                   e->reward[k], e->version[k],
                                   pb_episodes_policy(e, k, 0),
                                   x->env.g->num_actions, &err),
            0);
  }
}

/* A lone AlphaZero rejection sampler: plays its items with the actors'
 * own AlphaZero player (the algorithm table's: MCTS over the policy+value
 * network it downloads, the run's mcts settings) and sends only the games
 * the first player lost, with their visit distributions; until it is
 * refused, the learner exits or limit_s pass. Returns the items it
 * delivered. */
static int az_sampler(const run_t *r, pid_t learner, int *lst, void *ctx,
                      double limit_s, int *refused) {
  pb_config_t cfg;
  pb_err_t err;
  int n = 0;
  while (r->extra[n]) n++;
  if (pb_config_setup(&cfg, CONFIG, r->extra, n, NULL, &err) != 0)
    fail_msg("%s", err.msg);
  pb_learn_t *learn = pb_learn_new(&cfg, &err);
  if (learn == NULL) fail_msg("%s", err.msg);
  const pb_game_t *g = pb_game_by_id(PB_GAME_CONNECT4);
  az_t x = {.a = pb_algo_of(&cfg)};
  assert_non_null(x.a);
  pb_neteval_t *ne = pb_neteval_new(g, 256, 0, &err);
  assert_non_null(ne);
  x.env = (pb_algo_env_t){.g = g, .run = &cfg,
                          .parallel = cfg.train.selfplay_parallel,
                          .threads = 1, .q = pb_learn_q(learn), .ne = ne};
  x.player = x.a->player_new(&x.env, &err);
  if (x.player == NULL) fail_msg("%s", err.msg);
  pb_episodes_init(&x.eps);
  fake_actor_t f = {.r = r, .learner = learner, .lst = lst, .ctx = ctx,
                    .limit_s = limit_s, .sender = "thrower", .policy = 1,
                    .q = pb_learn_q(learn), .play = az_play, .arg = &x};
  int delivered = fake_actor_run(&f, refused);
  x.a->player_destroy(&x.player);
  pb_episodes_free(&x.eps);
  pb_neteval_destroy(&ne);
  pb_learn_destroy(&learn);
  return delivered;
}

/* AlphaZero (issue 46: an actor sending thrown games was accepted,
 * accuracy 0.833 -> 0.550): the outcome test and the reference games run
 * for every algorithm; the learner's are played with AlphaZero's own
 * MCTS player. A lone AlphaZero rejection sampler is quarantined in the
 * first iteration; the honest actor that joins then finishes the run. */
static void test_alphazero_lone_sampler(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "azlone");
  const char *extra[] = {"algorithm=alphazero", "mcts.simulations=8",
                         "train.iterations=2", "train.episodes_per_iter=100",
                         NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  int lst = -1;
  void *ctx = zmq_ctx_new();
  int refused = 0;
  int delivered = az_sampler(&r, l, &lst, ctx, 120, &refused);
  print_message("the AlphaZero sampler delivered %d items, refused: %d\n",
                delivered, refused);
  assert_true(refused);
  pid_t w = start_worker(&r, "selfplay", "actor-1", NULL);
  zmq_ctx_term(ctx);
  run_finish_in(&r, l, lst, 300, &w, 1, 30);
  char *text = run_log(&r);
  const char *q = strstr(text, "impossible beside the learner's own "
                               "reference games");
  assert_non_null(q);
  print_message("%.300s\n", q);
  assert_null(strstr(text, "actor-1 (address"));
  free(text);
  double sum = 0;
  assert_int_equal(metric(&r, "iteration", &sum, NULL, 0), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_thrower_quarantined, tp_teardown),
      cmocka_unit_test_teardown(test_rejection_sampler_quarantined,
                                tp_teardown),
      cmocka_unit_test_teardown(test_thrower_seed12, tp_teardown),
      cmocka_unit_test_teardown(test_lone_rejection_sampler, tp_teardown),
      cmocka_unit_test_teardown(test_hopping_sampler_pooled, tp_teardown),
      cmocka_unit_test_teardown(test_alphazero_lone_sampler, tp_teardown),
  };
  if (getenv("PB_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("PB_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
