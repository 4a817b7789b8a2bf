/* test_azselfcheck.c - the learner's check of AlphaZero self-play
 * (learner/azcheck.c, common/train/azcheck.h) against a real learner and
 * a real actor over real sockets, on configs/tictactoe-alphazero.yaml
 * (issue 46: an actor sending thrown games, or forged one-hot policies,
 * was accepted; accuracy 0.833 -> 0.550 / 0.450). The cheats are written
 * here with the wire codec: each downloads the network its items announce
 * and searches every position with the run's own MCTS; the thrower plays
 * the move its honest row gives the least mass (with a CURVE key of its
 * own, which is banned with it), the forger plays honestly and sends each
 * row one-hot on the move played (keyless). Each is quarantined on
 * its first result, the honest actor beside it never, and the run trains
 * on exactly the episodes of the clean seeded run: the same targets_crc
 * every iteration. Whatever a test starts is killed when it ends or
 * fails (tp_teardown). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <zmq.h>

#include "azplay.h"
#include "config.h"
#include "curve.h"
#include "game.h"
#include "learn.h"
#include "mcts.h"
#include "msg.h"
#include "nn.h"
#include "peer_fixtures.h"
#include "proc.h"
#include "pveval.h"

#define CONFIG PB_SOURCE_DIR "/configs/tictactoe-alphazero.yaml"
#define RUN "ttt-az"
#define RUN_GAME PB_GAME_TICTACTOE
#include "run_fixtures.h"

#define T3 (pb_game_by_id(PB_GAME_TICTACTOE))
#define ITERS_MAX 30

/* Iterations of each run: 3, or PB_AZ_ITERS (1..30; for docs/results). */
static int iters(void) {
  const char *e = getenv("PB_AZ_ITERS");
  const int n = e ? atoi(e) : 3;
  return n >= 1 && n <= ITERS_MAX ? n : 3;
}

enum { THROW = 1, FORGE = 2 };

/* The extra settings of every run of this file. */
static void settings(run_t *r) {
  static char it[40];
  snprintf(it, sizeof it, "train.iterations=%d", iters());
  /* The checks at their defaults. */
  const char *const extra[] = {it, "eval.enabled=false", NULL};
  for (int i = 0; extra[i]; i++) r->extra[i] = extra[i];
}

/* The move of cheat `mode` at ply n after a search whose policy target
 * is tgt, and the row it sends (into row). */
static int cheat_move(const pb_state_t *s, uint32_t n, const float *tgt,
                      const pb_azplay_opts_t *o, pb_rng_t *rng, int mode,
                      float *row) {
  const int A = T3->num_actions;
  uint8_t acts[PB_MAX_ACTIONS];
  const int na = T3->legal(s, acts);
  int a = -1;
  if (mode == THROW) { /* the least visited, ties to the highest */
    for (int j = 0; j < na; j++)
      if (a < 0 || tgt[acts[j]] <= tgt[a]) a = acts[j];
  } else if ((int)n < o->temp_moves) { /* drawn from the visits */
    double u = pb_rng_uniform(rng), acc = 0;
    for (int j = 0; j < na && a < 0; j++)
      if ((acc += tgt[acts[j]]) > u) a = acts[j];
    if (a < 0) a = acts[na - 1];
  } else {
    for (int j = 0; j < na; j++)
      if (a < 0 || tgt[acts[j]] > tgt[a]) a = acts[j];
  }
  if (mode == FORGE) {
    memset(row, 0, (size_t)A * sizeof *row);
    row[a] = 1.0f;
  } else {
    memcpy(row, tgt, (size_t)A * sizeof *row);
  }
  return a;
}

/* E games of cheat `mode` at once (one batched network call per
 * simulation round, as the actors play), searcher m of E roots, noise
 * from rng: game k's positions into st + 9k, its rows into rows + 9kA,
 * its length and reward into mep[k]. */
static void cheat_games(pb_mcts_t *m, const pb_mcts_evalfn_t *ev,
                        const pb_azplay_opts_t *o, pb_rng_t *rng, int mode,
                        uint32_t E, pb_state_t *st, float *rows,
                        pb_msg_episode_t *mep) {
  const int A = T3->num_actions;
  pb_state_t cur[64], roots[64];
  pb_rng_t grng[64];
  pb_rng_t *rngs[64];
  float vis[64 * PB_MAX_ACTIONS], tgt[64 * PB_MAX_ACTIONS];
  int live[64], idx[64];
  assert_true(E <= 64);
  for (uint32_t k = 0; k < E; k++) {
    T3->reset(&cur[k]);
    live[k] = 1;
    mep[k].n_states = 0;
    mep[k].final_reward = 0;
    pb_rng_seed(&grng[k], pb_rng_next(rng), k);
  }
  pb_err_t err;
  for (;;) {
    int n = 0;
    for (uint32_t k = 0; k < E; k++)
      if (live[k]) {
        roots[n] = cur[k];
        rngs[n] = &grng[k];
        idx[n++] = (int)k;
      }
    if (n == 0) break;
    pb_mcts_io_t io = {NULL, NULL, vis, tgt, NULL, NULL};
    if (pb_mcts_search(m, roots, n, ev, rngs, &io, &err) != 0)
      fail_msg("%s", err.msg);
    for (int r = 0; r < n; r++) {
      const int k = idx[r];
      const uint32_t ply = mep[k].n_states;
      const int a = cheat_move(&cur[k], ply, tgt + (size_t)r * A, o,
                               &grng[k], mode,
                               rows + ((size_t)k * 9 + ply) * A);
      st[(size_t)k * 9 + ply] = cur[k];
      mep[k].n_states = ply + 1;
      int over = 0;
      const float rew = T3->step(&cur[k], a, &over);
      if (over) mep[k].final_reward = (int)lrintf(rew);
      if (over || ply + 1 >= (uint32_t)o->max_turns) live[k] = 0;
    }
  }
}

/* Plays self-play items as cheat `mode` on one connection until it is
 * refused, the learner exits or limit_s pass; returns the items it
 * delivered and sets *refused. */
static int cheat(const run_t *r, pid_t learner, int *lst, void *ctx,
                 const pb_curve_keys_t *key, const char *server_pub,
                 double limit_s, int mode, int *refused) {
  pb_config_t cfg;
  pb_err_t err;
  int ne = 0;
  while (r->extra[ne]) ne++;
  if (pb_config_setup(&cfg, CONFIG, r->extra, ne, NULL, &err) != 0)
    fail_msg("%s", err.msg);
  pb_learn_t *learn = pb_learn_new(&cfg, &err);
  if (learn == NULL) fail_msg("%s", err.msg);
  pb_pveval_t *pe = pb_pveval_new(T3, 64, &err);
  assert_non_null(pe);
  pb_azplay_opts_t o;
  pb_azplay_config_opts(&cfg, &o);
  pb_mcts_opts_t mo = {o.simulations, o.c_puct, o.eps, o.alpha, 64,
                       o.discount};
  pb_mcts_t *m = pb_mcts_new_ex(T3, &mo, &o.root, &err);
  assert_non_null(m);
  const int A = T3->num_actions;
  void *d = tp_peer(ctx, r->ep, key, server_pub, 2000);
  uint64_t have = UINT64_MAX;
  int delivered = 0;
  *refused = 0;
  const double t0 = tp_now();
  const char *me = mode == THROW ? "thrower" : "forger";
  while (tp_now() - t0 < limit_s && running(learner, lst) && !*refused) {
    pb_msg_t msg;
    pb_msg_init(&msg, PB_MSG_WORK_REQUEST, RUN, RUN_GAME, me);
    msg.work_request.role = PB_ROLE_ACTOR;
    tp_peer_send(d, &msg);
    int t = tp_peer_recv(d, 2000, &msg);
    if (t == PB_MSG_WORK_ITEM && msg.work_item.kind == PB_WORK_SELFPLAY) {
      const pb_msg_work_item_t *it = &msg.work_item;
      if (have == it->q_version ||
          run_fetch_weights(d, me, PB_WHICH_Q, it->q_version,
                            pb_learn_q(learn)) == 0) {
        have = it->q_version;
        assert_int_equal(pb_pveval_bind(pe, pb_learn_q(learn), &err), 0);
        pb_mcts_evalfn_t ev = pb_pveval_fn(pe);
        const uint32_t E = (uint32_t)it->episodes;
        pb_msg_episode_t *mep = calloc(E, sizeof *mep);
        pb_state_t *st = calloc((size_t)E * 9, sizeof *st);
        float *rows = calloc((size_t)E * 9 * A, sizeof *rows);
        assert_true(mep && st && rows);
        pb_rng_t rng;
        pb_rng_seed(&rng, it->seed, 0xc4ea7);
        cheat_games(m, &ev, &o, &rng, mode, E, st, rows, mep);
        for (uint32_t k = 0; k < E; k++) {
          mep[k].states = st + (size_t)k * 9;
          mep[k].policy = rows + (size_t)k * 9 * A;
          mep[k].q_version = it->q_version;
        }
        pb_msg_t res;
        pb_msg_init(&res, PB_MSG_SELFPLAY_RESULT, RUN, RUN_GAME, me);
        res.selfplay_result.item_id = it->item_id;
        res.selfplay_result.episodes = mep;
        res.selfplay_result.n_episodes = E;
        tp_peer_send(d, &res);
        free(mep);
        free(st);
        free(rows);
        delivered++;
      }
    } else if (t == PB_MSG_REJECT && msg.reject.code == PB_EDENIED) {
      *refused = 1;
    } else {
      tp_sleep(0.05);
    }
    if (t >= 0) pb_msg_free(&msg);
  }
  zmq_close(d);
  pb_mcts_destroy(&m);
  pb_pveval_destroy(&pe);
  pb_learn_destroy(&learn);
  return delivered;
}

/* The targets_crc of each iteration of run r into crc[iters()], and
 * the last iteration's policy loss into *loss. */
static void crcs(const run_t *r, double *crc, double *loss) {
  double sum = 0, l[ITERS_MAX];
  assert_int_equal(metric(r, "targets_crc", &sum, crc, ITERS_MAX), iters());
  assert_int_equal(metric(r, "policy_loss", &sum, l, ITERS_MAX), iters());
  *loss = l[iters() - 1];
}

/* Runs the config with one honest actor, and with cheat `mode` (0: none)
 * beside it; with `keys`, CURVE with a key per worker (the cheat's
 * worker-2, the actor's worker-1; *cheat_pub gets the cheat's). Returns
 * the learner's log (the caller frees), the iterations' targets_crc and
 * the last policy loss. */
static char *run_with(const char *tag, int mode, int keys, char *cheat_pub,
                      double *crc, double *loss) {
  run_t r;
  run_init(&r, tag);
  settings(&r);
  char dir[300], curve[320], path[512];
  pb_curve_keys_t server, mine;
  if (keys) {
    pb_err_t err;
    snprintf(dir, sizeof dir, "%s/keys", r.dir);
    assert_int_equal(pb_curve_make_dir(dir, 2, &err), 0);
    snprintf(curve, sizeof curve, "net.curve_dir=%s", dir);
    int n = 0;
    while (r.extra[n]) n++;
    r.extra[n] = curve;
    snprintf(path, sizeof path, "%s/learner.pub", dir);
    assert_int_equal(pb_curve_load(path, 0, &server, &err), 0);
    snprintf(path, sizeof path, "%s/worker-2.key", dir);
    assert_int_equal(pb_curve_load(path, 1, &mine, &err), 0);
    snprintf(cheat_pub, PB_CURVE_Z85 + 1, "%s", mine.pub);
  }
  pid_t l = start_learner(&r);
  int lst = -1;
  pid_t w = start_worker(&r, "selfplay", "actor-1", keys ? "worker-1" : NULL);
  char log[512];
  path_of(&r, "learner.log", log, sizeof log);
  assert_true(tp_wait_for(log, "actor actor-1 joined", 1, 120));
  if (mode) {
    void *ctx = zmq_ctx_new();
    int refused = 0;
    const int delivered =
        cheat(&r, l, &lst, ctx, keys ? &mine : NULL, keys ? server.pub : NULL,
              240, mode, &refused);
    print_message("%s delivered %d items, refused: %d\n",
                  mode == THROW ? "the thrower" : "the forger", delivered,
                  refused);
    zmq_ctx_term(ctx);
    assert_true(refused);
    assert_true(delivered >= 1 && delivered <= 2);
  }
  run_finish_in(&r, l, lst, 300, &w, 1, 30);
  crcs(&r, crc, loss);
  char *text = run_log(&r);
  /* No line quarantines the honest actor. */
  for (const char *x = strstr(text, "actor actor-1 ("); x != NULL;
       x = strstr(x + 1, "actor actor-1 (")) {
    const char *eol = strchr(x, '\n');
    const char *qu = strstr(x, ") quarantined");
    if (qu != NULL && (eol == NULL || qu < eol))
      fail_msg("the honest actor was quarantined: %.300s", x);
  }
  return text;
}

/* The line of text that holds needle (which must be there). */
static const char *line_with(const char *text, const char *needle) {
  const char *q = strstr(text, needle);
  assert_non_null(q);
  while (q > text && q[-1] != '\n') q--;
  return q;
}

/* The clean run, and each cheat beside the honest actor: the cheat is
 * quarantined on its first result, none of its episodes is trained, the
 * honest actor is untouched, every iteration's targets are the clean
 * run's. */
static void test_cheats_quarantined(void **state) {
  (void)state;
  double clean[ITERS_MAX], thrown[ITERS_MAX], forged[ITERS_MAX];
  double lc, lt, lf;
  char pub[PB_CURVE_Z85 + 1] = "", line[200];
  free(run_with("az-clean", 0, 0, NULL, clean, &lc));
  /* The thrower with its own CURVE key: its connection and its key go. */
  char *t = run_with("az-thrower", THROW, 1, pub, thrown, &lt);
  const char *q = line_with(t, "its own policy row rules out");
  assert_non_null(strstr(q, "actor thrower"));
  print_message("%.400s\n", q);
  snprintf(line, sizeof line, "CURVE key %s is quarantined", pub);
  assert_non_null(strstr(t, line));
  free(t);
  t = run_with("az-forger", FORGE, 0, NULL, forged, &lf);
  q = line_with(t, "its policy rows are not the search's");
  assert_non_null(strstr(q, "actor forger"));
  print_message("%.400s\n", q);
  free(t);
  print_message("last policy loss: clean %.6f, thrower beside %.6f, forger "
                "beside %.6f\n",
                lc, lt, lf);
  for (int i = 0; i < iters(); i++) {
    print_message("iteration %d targets_crc: clean %.0f, thrower beside "
                  "%.0f, forger beside %.0f\n",
                  i + 1, clean[i], thrown[i], forged[i]);
    assert_true(thrown[i] == clean[i]);
    assert_true(forged[i] == clean[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_cheats_quarantined, tp_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
