/* test_replay_trust.c - what a worker caught lying only later taught
 * leaves the replay window (issue 46; learner/replaydrop.c), against a
 * real learner and real workers over loopback. With
 * train.replay_iterations = 3 an iteration's positions train again in the
 * next two; a worker's items of the open phase were already thrown out
 * and redone when it was caught (test_poison.c, test_selfcheck.c), but
 * not those of an earlier iteration in the window:
 *
 *   - a searcher alone in iteration 1 that lies under what the checks see
 *     (+0.001 on every target, a tenth of the lean test's smallest
 *     effect), then +1 on every target in iteration 2: quarantined by the
 *     spot check in iteration 2;
 *   - an actor alone in iteration 1 that plays honestly, then plays the
 *     worst moves by Q in iteration 2: quarantined by the self-play check
 *     in iteration 2;
 *   - with CURVE, the first liar with its own key and a new connection
 *     for every item: what its earlier connections delivered goes with
 *     the one caught (a worker is its key);
 *   - the lie spread thin over a new identity per item, under every check
 *     in iteration 1, plain in iteration 2: the pooled lean test fires and
 *     the identities whose positions lean its way lose theirs (only those,
 *     the rest kept bit for bit).
 *
 * In the first three, the moment the liar is refused (the learner waiting
 * for an honest worker), /status counts every position of iteration 1 as
 * left the window (`spot_check` / `selfplay_check`: `replay_dropped`);
 * the checkpoint of iteration 1 holds them all, tagged with the liar, the
 * checkpoint of iteration 2 none of them (iteration 1 held, empty); and
 * with an honest worker the run finishes. The hostile workers are written
 * here with the wire codec; whatever a test starts is killed when it ends
 * or fails (tp_teardown). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <zmq.h>

#include "config.h"
#include "curve.h"
#include "episodes.h"
#include "game.h"
#include "http_fixtures.h"
#include "learn.h"
#include "msg.h"
#include "neteval.h"
#include "nn.h"
#include "peer_fixtures.h"
#include "proc.h"
#include "replay.h"
#include "run_fixtures.h"
#include "actor_fixtures.h"
#include "rundir.h"
#include "selfplay.h"
#include "spotcheck.h"

/* The run's config with r's --set values, and a learner of it. */
static pb_learn_t *learn_of(const run_t *r, pb_config_t *cfg) {
  pb_err_t err;
  int n = 0;
  while (r->extra[n]) n++;
  if (pb_config_setup(cfg, CONFIG, r->extra, n, NULL, &err) != 0)
    fail_msg("%s", err.msg);
  pb_learn_t *l = pb_learn_new(cfg, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  return l;
}

/* ---- the late liars: searchers --------------------------------------- */

/* How a liar lies (the amount added to every target of an item):
 *   LATE    one connection; +0.001 under Q version 0 (iteration 1: a
 *           tenth of the lean test's smallest effect, which no check
 *           acts on), +1 later (every checked position disagrees);
 *   SPREAD  a new connection, source address and sender id for every
 *           item; under Q version 0 +0.003 on every fourth item (the
 *           third, seventh, ...: over the smallest effect one position
 *           counts with, but under it on average), else honest; later
 *           +0.019 on every item (issue 46's lie spread thin). */
enum { LATE = 1, SPREAD = 2 };

static float lie_of(int mode, uint64_t q_version, int hop) {
  if (mode == LATE) return q_version == 0 ? 0.001f : 1.0f;
  if (q_version == 0) return hop % 4 == 2 ? 0.003f : 0.0f;
  return 0.019f;
}

/* States lied on under Q version 0, as a list. */
typedef struct {
  pb_state_t *s;
  size_t n, cap;
} states_t;

static void states_add(states_t *l, const pb_state_t *s, size_t n) {
  if (l == NULL) return;
  if (l->n + n > l->cap) {
    l->cap = 2 * (l->n + n);
    l->s = realloc(l->s, l->cap * sizeof *l->s);
    assert_non_null(l->s);
  }
  memcpy(l->s + l->n, s, n * sizeof *s);
  l->n += n;
}

static int states_has(const states_t *l, const pb_state_t *s) {
  for (size_t i = 0; i < l->n; i++)
    if (!memcmp(&l->s[i], s, sizeof *s)) return 1;
  return 0;
}

/* Searches as an honest searcher does (the learner's networks, fetched
 * over the wire, searched with the spot check's searcher: a searcher's
 * targets bit for bit), then adds lie_of(mode, ...) to every target,
 * until it is refused (LATE), the log says `until` after an item under Q
 * version 1 or later (SPREAD), the learner exits or limit_s pass. With
 * `key` (its CURVE keys; server_pub the learner's) it connects with it,
 * and LATE with hop opens a new connection (and sender id) for every
 * item. Returns the items it answered; the states of those it lied on
 * under Q version 0 go into lied (may be NULL), their count into
 * *lied_items. */
static int liar(const run_t *r, pid_t learner, int *lst, void *ctx, int mode,
                int hop, const pb_curve_keys_t *key, const char *server_pub,
                const char *until, double limit_s, int *refused,
                states_t *lied, int *lied_items) {
  pb_config_t cfg;
  pb_learn_t *learn = learn_of(r, &cfg);
  const pb_game_t *g = pb_game_by_id(PB_GAME_CONNECT4);
  const int A = g->num_actions;
  pb_err_t err;
  pb_spot_t *spot = pb_spot_new(
      g, cfg.search.expansions, cfg.search.max_depth, cfg.search.parallel,
      pb_learn_eval_batch(cfg.search.parallel, cfg.search.expansions,
                          g->num_actions, cfg.train.selfplay_parallel),
      (uint32_t)cfg.search.cache_entries, &err);
  if (spot == NULL) fail_msg("%s", err.msg);
  char log[512], sender[32] = "late-liar", from[400];
  path_of(r, "learner.log", log, sizeof log);
  void *d = NULL;
  uint64_t v_have = 0, q_have = 0, last_q = 0; /* version + 1 */
  int answered = 0, hops = 0;
  *refused = 0;
  if (lied_items) *lied_items = 0;
  const double t0 = tp_now();
  while (tp_now() - t0 < limit_s && running(learner, lst) &&
         !(mode == LATE && *refused) &&
         !(until && last_q >= 2 && tp_count(log, until) > 0)) {
    if (mode == SPREAD) hop = 1;
    if (d == NULL || (hop && answered + *refused >= hops)) {
      if (d != NULL) zmq_close(d);
      if (hop) {
        hops++;
        snprintf(sender, sizeof sender, "%s-%d",
                 mode == SPREAD ? "spread" : "late-liar", hops);
      }
      if (mode == SPREAD)
        snprintf(from, sizeof from, "tcp://127.0.%d.%d:0;%s", 1 + hops / 250,
                 2 + hops % 250, r->ep + strlen("tcp://"));
      d = tp_peer(ctx, mode == SPREAD ? from : r->ep, key, server_pub, 2000);
    }
    pb_msg_t m;
    pb_msg_init(&m, PB_MSG_WORK_REQUEST, RUN, PB_GAME_CONNECT4, sender);
    m.work_request.role = PB_ROLE_SEARCHER;
    tp_peer_send(d, &m);
    int t = tp_peer_recv(d, 2000, &m);
    if (t == PB_MSG_WORK_ITEM && m.work_item.kind == PB_WORK_SEARCH) {
      const pb_msg_work_item_t *it = &m.work_item;
      int ok = 1;
      if (v_have != it->v_version + 1) {
        ok = run_fetch_weights(d, sender, PB_WHICH_V, it->v_version,
                               pb_learn_v(learn)) == 0;
        if (ok) v_have = it->v_version + 1;
      }
      if (ok && q_have != it->q_version + 1) {
        ok = run_fetch_weights(d, sender, PB_WHICH_Q, it->q_version,
                               pb_learn_q(learn)) == 0;
        if (ok) q_have = it->q_version + 1;
      }
      if (ok) {
        float *q = calloc((size_t)it->n_states * A, sizeof *q);
        assert_non_null(q);
        if (pb_spot_search(spot, pb_learn_v(learn), pb_learn_q(learn),
                           it->states, (int)it->n_states, q, &err) != 0)
          fail_msg("%s", err.msg);
        const float lie = lie_of(mode, it->q_version, hops);
        for (uint32_t i = 0; i < it->n_states; i++) {
          uint8_t acts[PB_MAX_ACTIONS];
          const int na = g->legal(&it->states[i], acts);
          for (int k = 0; k < na; k++) {
            float *v = &q[i * A + acts[k]];
            *v = *v + lie > 1.0f ? 1.0f : *v + lie;
          }
        }
        if (it->q_version == 0 && lie > 0) {
          states_add(lied, it->states, it->n_states);
          if (lied_items) ++*lied_items;
        }
        pb_msg_t res;
        pb_msg_init(&res, PB_MSG_SEARCH_RESULT, RUN, PB_GAME_CONNECT4, sender);
        res.search_result.item_id = it->item_id;
        res.search_result.n_states = it->n_states;
        res.search_result.n_actions = (uint32_t)A;
        res.search_result.qvalues = q;
        tp_peer_send(d, &res);
        free(q);
        answered++;
        last_q = it->q_version + 1;
      }
    } else if (t == PB_MSG_REJECT && m.reject.code == PB_EDENIED) {
      ++*refused;
    } else {
      tp_sleep(0.05);
    }
    if (t >= 0) pb_msg_free(&m);
  }
  if (d != NULL) zmq_close(d);
  pb_spot_destroy(&spot);
  pb_learn_destroy(&learn);
  return answered;
}

/* ---- the late thrower: an actor --------------------------------------- */

/* The thrower's evaluator: the network's Q turned upside down (it plays
 * its worst move by Q, ties to the lowest action, as test_selfcheck.c's
 * argmin thrower, for both players). */
typedef struct {
  pb_evalfn_t inner;
  const pb_game_t *g;
} thrower_ev_t;

static int thrower_q(void *ctx, const pb_state_t *s, int n, float *out,
                     pb_err_t *err) {
  thrower_ev_t *t = ctx;
  int rc = t->inner.qvalues(t->inner.ctx, s, n, out, err);
  if (rc != 0) return rc;
  const int A = t->g->num_actions;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < A; a++)
      out[i * A + a] = -1e4f * out[i * A + a] - 10.0f * a;
  return 0;
}

/* The late thrower's engine: the actors' own self-play engine with the
 * Q each item announces, honest under Q version 0 (iteration 1), its
 * worst moves later. */
typedef struct {
  pb_neteval_t *ne;
  pb_learn_t *learn;
  thrower_ev_t tev;
  pb_evalfn_t thrown;
  pb_selfplay_t *sp;
} late_t;

static void late_play(void *arg, const pb_msg_work_item_t *it,
                      pb_episodes_t *out) {
  late_t *x = arg;
  pb_err_t err;
  pb_neteval_bind(x->ne, NULL, pb_learn_q(x->learn));
  if (pb_selfplay_run(x->sp, (int)it->episodes, it->seed, 0,
                      it->q_version == 0 ? &x->tev.inner : &x->thrown,
                      it->q_version, out, &err) != 0)
    fail_msg("%s", err.msg);
}

/* Plays self-play items on one connection as the late thrower (late_t),
 * until it is refused, the learner exits or limit_s pass. Returns the
 * items it delivered. */
static int late_thrower(const run_t *r, pid_t learner, int *lst, void *ctx,
                        double limit_s, int *refused) {
  pb_config_t cfg;
  late_t x;
  x.learn = learn_of(r, &cfg);
  pb_err_t err;
  const pb_game_t *g = pb_game_by_id(PB_GAME_CONNECT4);
  x.ne = pb_neteval_new(g, 256, 0, &err);
  assert_non_null(x.ne);
  pb_neteval_bind(x.ne, NULL, pb_learn_q(x.learn));
  x.tev = (thrower_ev_t){pb_neteval_fn(x.ne), g};
  x.thrown = (pb_evalfn_t){NULL, thrower_q, &x.tev};
  x.thrown.value = x.tev.inner.value;
  pb_selfplay_opts_t o;
  pb_selfplay_config_opts(&cfg, &o);
  x.sp = pb_selfplay_new(g, &o, &err);
  assert_non_null(x.sp);
  fake_actor_t f = {.r = r, .learner = learner, .lst = lst, .ctx = ctx,
                    .limit_s = limit_s, .sender = "late-thrower",
                    .q = pb_learn_q(x.learn), .play = late_play, .arg = &x};
  int delivered = fake_actor_run(&f, refused);
  pb_selfplay_destroy(&x.sp);
  pb_neteval_destroy(&x.ne);
  pb_learn_destroy(&x.learn);
  return delivered;
}

/* ---- what the window held, and holds ---------------------------------- */

/* The replay window of checkpoint `version` of run r, into *w (a copy
 * held by the learner returned; the caller destroys it). */
static pb_learn_t *window_of(const run_t *r, uint64_t version,
                             const pb_replay_t **w) {
  pb_config_t cfg;
  pb_learn_t *l = learn_of(r, &cfg);
  char path[700];
  pb_rundir_ckpt_path(r->dir, version, path, sizeof path);
  pb_err_t err;
  if (pb_learn_load(l, path, NULL, NULL, &err) != 0) fail_msg("%s", err.msg);
  *w = pb_learn_replay(l);
  return l;
}

/* /status's object `section` ("spot_check", "selfplay_check"): its
 * replay_dropped (-1: no answer). */
static double status_dropped(const run_t *r, const char *section) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\":", section);
  char *s = http_get(r->http, "/status");
  const char *b = http_body_200(s);
  const double n =
      number_after(b ? strstr(b, key) : NULL, "\"replay_dropped\":");
  free(s);
  return n;
}

/* The learner l (status lst) and the workers a and s exit 0; returns the
 * learner's log (the caller frees), its "replay window:" line printed. */
static char *finish(const run_t *r, pid_t l, int lst, pid_t a, pid_t s) {
  run_finish_in(r, l, lst, 300, (pid_t[]){a, s}, 2, 30);
  char *text = run_log(r);
  const char *line = strstr(text, "replay window: ");
  assert_non_null(line);
  print_message("%.*s\n", (int)strcspn(line, "\n"), line);
  return text;
}

/* The checkpoints of iterations 1 and 2: iteration 1's positions all
 * delivered by one worker (by: PB_REPLAY_BY_SEARCH or _SELFPLAY), tagged
 * so in checkpoint 1 and gone from the window of checkpoint 2, which
 * keeps iteration 1 (empty) and iteration 2 (none of them the liar's);
 * and as many of them as /status's `section` replay_dropped said
 * (dropped). */
static void check_windows(const run_t *r, int by, const char *section,
                          double dropped) {
  const pb_replay_t *w1, *w2;
  pb_learn_t *l1 = window_of(r, 1, &w1), *l2 = window_of(r, 2, &w2);
  assert_int_equal(w1->n, 1);
  const size_t n1 = w1->it[0].n;
  assert_true(n1 > 0);
  const uint64_t liar = w1->it[0].by[by];
  assert_true(liar != 0);
  for (size_t k = 0; k < n1; k++)
    assert_true(w1->it[0].by[k * PB_REPLAY_BY + by] == liar);
  assert_int_equal(w2->n, 2);
  assert_int_equal(w2->it[0].n, 0); /* all of iteration 1 left */
  assert_true(w2->it[1].n > 0);
  for (size_t k = 0; k < w2->it[1].n * PB_REPLAY_BY; k++) {
    assert_true(w2->it[1].by[k] != liar);
    assert_true(w2->it[1].by[k] != 0); /* the honest workers' */
  }
  pb_learn_destroy(&l1);
  pb_learn_destroy(&l2);
  print_message("iteration 1: %zu positions; /status %s replay_dropped %.0f\n",
                n1, section, dropped);
  assert_true(dropped == (double)n1);
}

/* A searcher alone in iteration 1 whose lie the checks let pass, caught
 * in iteration 2 when it lies outright: every position of iteration 1
 * (their Q rows its targets) leaves the window. */
static void test_late_liar_leaves_window(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "rtliar");
  const char *extra[] = {"train.iterations=2", "train.replay_iterations=3",
                         "net.item_states=16", "net.http_port=-1", NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  pid_t a = start_worker(&r, "selfplay", "actor-1", NULL);
  void *ctx = zmq_ctx_new();
  int lst = -1, refused = 0;
  const int answered =
      liar(&r, l, &lst, ctx, LATE, 0, NULL, NULL, NULL, 240, &refused, NULL,
           NULL);
  zmq_ctx_term(ctx);
  print_message("the late liar answered %d items, refused: %d\n", answered,
                refused);
  assert_true(refused);
  /* Refused in iteration 2's search, nobody searching: the window is
   * without its positions already. */
  const double dropped = status_dropped(&r, "spot_check");
  pid_t s = start_worker(&r, "search", "searcher-1", NULL);
  char *text = finish(&r, l, lst, a, s);
  assert_non_null(strstr(text, "searcher late-liar"));
  free(text);
  check_windows(&r, PB_REPLAY_BY_SEARCH, "spot_check", dropped);
}

/* With CURVE a worker is its key: the late liar with its own key and a
 * new connection for every item. Its connection of iteration 2 is
 * quarantined (and its key banned), and the positions its other, earlier
 * connections delivered in iteration 1 leave the window with it: every
 * one is tagged with the key. */
static void test_late_liar_with_key_leaves_window(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "rtkey");
  char keys[300], curve[320], path[512];
  snprintf(keys, sizeof keys, "%s/keys", r.dir);
  pb_err_t err;
  assert_int_equal(pb_curve_make_dir(keys, 2, &err), 0);
  snprintf(curve, sizeof curve, "net.curve_dir=%s", keys);
  const char *extra[] = {"train.iterations=2", "train.replay_iterations=3",
                         "net.item_states=16", "net.http_port=-1", curve,
                         NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  pid_t a = start_worker(&r, "selfplay", "actor-1", "worker-1");
  pb_curve_keys_t learner_keys, mine;
  snprintf(path, sizeof path, "%s/learner.pub", keys);
  assert_int_equal(pb_curve_load(path, 0, &learner_keys, &err), 0);
  snprintf(path, sizeof path, "%s/worker-2.key", keys);
  assert_int_equal(pb_curve_load(path, 1, &mine, &err), 0);
  void *ctx = zmq_ctx_new();
  int lst = -1, refused = 0;
  const int answered = liar(&r, l, &lst, ctx, LATE, 1, &mine, learner_keys.pub,
                            NULL, 240, &refused, NULL, NULL);
  zmq_ctx_term(ctx);
  print_message("the late liar with key %.8s... answered %d items on as "
                "many connections, refused: %d\n",
                mine.pub, answered, refused);
  assert_true(refused);
  const double dropped = status_dropped(&r, "spot_check");
  pid_t s = start_worker(&r, "search", "searcher-1", "worker-1");
  char *text = finish(&r, l, lst, a, s);
  free(text);
  /* Iteration 1's items, from many connections, are all the key's. */
  const pb_replay_t *w1;
  pb_learn_t *l1 = window_of(&r, 1, &w1);
  assert_true(w1->n == 1 && w1->it[0].n > 0);
  assert_int_equal(w1->it[0].by[PB_REPLAY_BY_SEARCH] >> 56, PB_REPLAY_TAG_KEY);
  pb_learn_destroy(&l1);
  assert_true(answered > 2); /* items on more than one connection */
  check_windows(&r, PB_REPLAY_BY_SEARCH, "spot_check", dropped);
}

/* The lie spread thin, under every check in iteration 1 (+0.003 on a
 * quarter of the items, each from a new identity), plain in iteration 2
 * (+0.019 on every item): the pooled lean test fires in iteration 2, and
 * the identities on probation whose recent checked positions lean its way
 * are condemned: their positions of iteration 1 leave the window (only
 * positions of items the liar lied on, whole identities, the rest kept
 * bit for bit). */
static void test_spread_lie_leaves_window(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "rtspread");
  const char *extra[] = {"train.iterations=2", "train.replay_iterations=3",
                         "train.episodes_per_iter=40", "net.item_states=16",
                         "net.http_port=-1", NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  pid_t a = start_worker(&r, "selfplay", "actor-1", NULL);
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  void *ctx = zmq_ctx_new();
  int lst = -1, refused = 0, lied_items = 0;
  states_t lied = {0};
  const int answered =
      liar(&r, l, &lst, ctx, SPREAD, 1, NULL, NULL, "the pooled lean test",
           240, &refused, &lied, &lied_items);
  zmq_ctx_term(ctx);
  print_message("the spread liar answered %d items on as many identities, "
                "lied on %d of them in iteration 1\n",
                answered, lied_items);
  assert_true(lied_items >= 1);
  assert_true(tp_count(log, "the pooled lean test") >= 1);
  const double dropped = status_dropped(&r, "spot_check");
  pid_t s = start_worker(&r, "search", "searcher-1", NULL);
  char *text = finish(&r, l, lst, a, s);
  /* The pool fired in iteration 2, not before. */
  const char *fired = strstr(text, "the pooled lean test");
  const char *it2 = strstr(text, "iteration 2: beam search");
  assert_true(fired != NULL && it2 != NULL && fired > it2);
  free(text);
  /* Iteration 1 in the windows of checkpoints 1 and 2. */
  const pb_replay_t *w1, *w2;
  pb_learn_t *l1 = window_of(&r, 1, &w1), *l2 = window_of(&r, 2, &w2);
  assert_int_equal(w1->n, 1);
  assert_int_equal(w2->n, 2);
  const pb_replay_iter_t *a1 = &w1->it[0], *a2 = &w2->it[0];
  const int S = PB_REPLAY_BY_SEARCH, B = PB_REPLAY_BY, A = 7;
  /* What is left is iteration 1's in order, less whole identities. */
  size_t j = 0, gone = 0, gone_ids = 0;
  uint64_t ids[256];
  for (size_t k = 0; k < a1->n; k++) {
    const uint64_t t = a1->by[k * B + S];
    assert_true(t != 0);
    if (j < a2->n && a2->by[j * B + S] == t) {
      assert_memory_equal(&a2->states[j], &a1->states[k], sizeof(pb_state_t));
      assert_memory_equal(&a2->v[j], &a1->v[k], sizeof(float));
      assert_memory_equal(&a2->q[j * A], &a1->q[k * A], A * sizeof(float));
      assert_memory_equal(&a2->by[j * B], &a1->by[k * B], B * sizeof(uint64_t));
      j++;
      continue;
    }
    /* gone: a position of an item lied on; none of its identity left */
    assert_true(states_has(&lied, &a1->states[k]));
    for (size_t i = 0; i < a2->n; i++) assert_true(a2->by[i * B + S] != t);
    gone++;
    size_t i = 0;
    while (i < gone_ids && ids[i] != t) i++;
    if (i == gone_ids && gone_ids < 256) ids[gone_ids++] = t;
  }
  assert_int_equal(j, a2->n);
  print_message("iteration 1: %zu positions, %zu of them (of %zu identities, "
                "%d lied) left the window; /status spot_check "
                "replay_dropped %.0f\n",
                a1->n, gone, gone_ids, lied_items, dropped);
  assert_true(gone > 0);
  assert_true(gone_ids <= (size_t)lied_items);
  assert_true(dropped == (double)gone);
  pb_learn_destroy(&l1);
  pb_learn_destroy(&l2);
  free(lied.s);
}

/* An actor alone in iteration 1, honest, that throws its games in
 * iteration 2: quarantined by the self-play check, and every position of
 * iteration 1 (its episodes) leaves the window. */
static void test_late_thrower_leaves_window(void **state) {
  (void)state;
  run_t r;
  run_init(&r, "rtthrow");
  const char *extra[] = {"train.iterations=2",
                         "train.episodes_per_iter=40",
                         "train.replay_iterations=3",
                         "train.selfplay_temperature=0.1",
                         "train.eps=0.05",
                         "net.selfplay_check=0.5",
                         "net.http_port=-1",
                         NULL};
  for (int i = 0; extra[i]; i++) r.extra[i] = extra[i];
  pid_t l = start_learner(&r);
  pid_t s = start_worker(&r, "search", "searcher-1", NULL);
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  assert_true(tp_wait_for(log, "searcher searcher-1 joined", 1, 120));
  void *ctx = zmq_ctx_new();
  int lst = -1, refused = 0;
  const int delivered = late_thrower(&r, l, &lst, ctx, 240, &refused);
  zmq_ctx_term(ctx);
  print_message("the late thrower delivered %d items, refused: %d\n",
                delivered, refused);
  assert_true(refused);
  const double dropped = status_dropped(&r, "selfplay_check");
  pid_t a = start_worker(&r, "selfplay", "actor-1", NULL);
  char *text = finish(&r, l, lst, a, s);
  assert_non_null(strstr(text, "actor late-thrower"));
  free(text);
  check_windows(&r, PB_REPLAY_BY_SELFPLAY, "selfplay_check", dropped);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_late_liar_leaves_window, tp_teardown),
      cmocka_unit_test_teardown(test_late_thrower_leaves_window, tp_teardown),
      cmocka_unit_test_teardown(test_spread_lie_leaves_window, tp_teardown),
      cmocka_unit_test_teardown(test_late_liar_with_key_leaves_window,
                                tp_teardown),
  };
  /* PB_TEST_FILTER=NAME runs the tests whose names match (cmocka's
   * pattern), as when one is debugged. */
  if (getenv("PB_TEST_FILTER") != NULL)
    cmocka_set_test_filter(getenv("PB_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
