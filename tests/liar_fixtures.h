/* liar_fixtures.h - a lying searcher for the process tests of the spot
 * check (test_poison.c, test_liars.c), written with the wire codec: it
 * searches as an honest searcher does (the learner's own networks, fetched
 * over the wire, searched with the spot check's searcher, which gives a
 * searcher's targets bit for bit), then lies:
 *   LIE_START  +1 on the first legal action of the start position only
 *              (about 0.3% of the positions, the one that weighs most);
 *   LIE_LEAN   +0.019 on every target (under the 0.02 tolerance of one
 *              position);
 *   LIE_SPIKE  +1 on every legal action of 2% of the positions, drawn from
 *              its own seed (each such position off by far more than the
 *              tolerance).
 * It may answer its first results honestly (trust built, then lost), and
 * hop: a new connection from a new source address (127.0.X.Y, as many
 * hosts) under a new sender id for every item. It counts what it did, by
 * the version of the item's networks (iteration k searches with version
 * k - 1), so that a test can tell how many lying items the learner
 * trained: those it delivered minus those it threw away
 * (search_items_thrown), over the iterations closed before the catch.
 * Include after run_fixtures.h. */
#ifndef PB_TEST_LIAR_FIXTURES_H
#define PB_TEST_LIAR_FIXTURES_H

#include "config.h"
#include "learn.h"
#include "spotcheck.h"

/* Asks for work as `role`; the reply's type (-1: none in 2 s), in *r. */
static inline int ask(void *sock, const char *sender, int role, pb_msg_t *r) {
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_WORK_REQUEST, RUN, PB_GAME_CONNECT4, sender);
  m.work_request.role = role;
  tp_peer_send(sock, &m);
  return tp_peer_recv(sock, 2000, r);
}

enum { LIE_NONE = 0, LIE_START = 1, LIE_LEAN = 2, LIE_SPIKE = 3 };

#define LIAR_VERSIONS 64
#define LIAR_SPIKE_SHARE 0.02

typedef struct {
  const run_t *r;
  void *ctx, *sock;
  pb_config_t cfg;
  pb_learn_t *learn;
  pb_spot_t *spot;
  uint64_t v_have, q_have; /* versions loaded, +1 (0: none) */
  char sender[32], from[32];
  int lie, hop, honest_first;
  uint64_t rng;
  /* What it did. */
  int answered, refused, hops;
  int lying_items, lies; /* items answered with a lie; positions lied on */
  int lying_at[LIAR_VERSIONS]; /* lying items answered, by version */
  int last_version;            /* of the last item answered (-1: none) */
  int caught_version;          /* of its last item before the first
                                  refusal (-1: never refused) */
  int lying_items_caught;      /* lying_items at the first refusal */
} liar_t;

/* A liar of kind `lie` at r's learner, from source address `from` (NULL:
 * 127.0.0.1), as `sender`; honest for its first honest_first results;
 * with hop, a new connection, address and sender id for every item. */
static inline void liar_open(liar_t *x, const run_t *r, void *ctx, int lie,
                             const char *from, const char *sender,
                             int honest_first, int hop) {
  pb_err_t err;
  memset(x, 0, sizeof *x);
  x->r = r;
  x->ctx = ctx;
  x->lie = lie;
  x->hop = hop;
  x->honest_first = honest_first;
  x->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)lie;
  x->last_version = x->caught_version = -1;
  snprintf(x->sender, sizeof x->sender, "%s", sender);
  snprintf(x->from, sizeof x->from, "%s", from ? from : "");
  int n = 0;
  while (r->extra[n]) n++;
  if (pb_config_setup(&x->cfg, CONFIG, r->extra, n, NULL, &err) != 0)
    fail_msg("%s", err.msg);
  x->learn = pb_learn_new(&x->cfg, &err);
  if (x->learn == NULL) fail_msg("%s", err.msg);
  const pb_game_t *g = pb_game_by_id(PB_GAME_CONNECT4);
  x->spot = pb_spot_new(
      g, x->cfg.search.expansions, x->cfg.search.max_depth,
      x->cfg.search.parallel,
      pb_learn_eval_batch(x->cfg.search.parallel, x->cfg.search.expansions,
                          g->num_actions, x->cfg.train.selfplay_parallel),
      (uint32_t)x->cfg.search.cache_entries, &err);
  if (x->spot == NULL) fail_msg("%s", err.msg);
  if (!hop) x->sock = run_peer_from(ctx, r->ep, from, 2000);
}

static inline void liar_close(liar_t *x) {
  if (x->sock != NULL) zmq_close(x->sock);
  x->sock = NULL;
  pb_spot_destroy(&x->spot);
  pb_learn_destroy(&x->learn);
}

/* Loads network `which` (PB_WHICH_V or _Q) of `version` from the learner
 * unless it is loaded. 0, or -1 when the learner did not send it. */
static inline int liar_fetch(liar_t *x, int which, uint64_t version) {
  uint64_t *have = which == PB_WHICH_V ? &x->v_have : &x->q_have;
  if (*have == version + 1) return 0;
  pb_nn_t *nn =
      which == PB_WHICH_V ? pb_learn_v(x->learn) : pb_learn_q(x->learn);
  if (run_fetch_weights(x->sock, x->sender, which, version, nn) != 0)
    return -1;
  *have = version + 1;
  return 0;
}

/* A uniform draw in [0, 1) from the liar's own seed (xorshift64). */
static inline double liar_draw(liar_t *x) {
  x->rng ^= x->rng << 13;
  x->rng ^= x->rng >> 7;
  x->rng ^= x->rng << 17;
  return (double)(x->rng >> 11) / 9007199254740992.0;
}

/* Searches item it honestly into q, then lies on it as x lies; the
 * positions lied on. */
static inline int liar_targets(liar_t *x, const pb_msg_work_item_t *it,
                               float *q) {
  const pb_game_t *g = pb_game_by_id(PB_GAME_CONNECT4);
  const int A = g->num_actions;
  pb_err_t err;
  if (pb_spot_search(x->spot, pb_learn_v(x->learn), pb_learn_q(x->learn),
                     it->states, (int)it->n_states, q, &err) != 0)
    fail_msg("%s", err.msg);
  const int lie = x->answered < x->honest_first ? LIE_NONE : x->lie;
  pb_state_t start;
  g->reset(&start);
  int lies = 0;
  for (uint32_t i = 0; i < it->n_states; i++) {
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(&it->states[i], acts);
    if (lie == LIE_START && !memcmp(&it->states[i], &start, sizeof start)) {
      q[i * A + acts[0]] = 1.0f;
      lies++;
    }
    if (lie == LIE_LEAN)
      for (int k = 0; k < na; k++) {
        float *v = &q[i * A + acts[k]];
        *v = *v + 0.019f > 1.0f ? 1.0f : *v + 0.019f;
      }
    if (lie == LIE_SPIKE && liar_draw(x) < LIAR_SPIKE_SHARE) {
      for (int k = 0; k < na; k++) q[i * A + acts[k]] = 1.0f;
      lies++;
    }
  }
  return lie == LIE_LEAN ? (int)it->n_states : lies;
}

/* One request of the liar (on a new connection when it hops and its last
 * one was used): 1 when it answered an item, -1 when it was refused, 0
 * when nothing came. */
static inline int liar_step(liar_t *x) {
  if (x->hop && (x->sock == NULL || x->answered + x->refused >= x->hops)) {
    if (x->sock != NULL) zmq_close(x->sock);
    x->hops++;
    snprintf(x->from, sizeof x->from, "127.0.%d.%d", 1 + x->hops / 250,
             2 + x->hops % 250);
    snprintf(x->sender, sizeof x->sender, "lean-%d", x->hops);
    x->sock = run_peer_from(x->ctx, x->r->ep, x->from, 2000);
  }
  pb_msg_t m;
  int t = ask(x->sock, x->sender, PB_ROLE_SEARCHER, &m), did = 0;
  if (t == PB_MSG_WORK_ITEM && m.work_item.kind == PB_WORK_SEARCH) {
    const pb_msg_work_item_t *it = &m.work_item;
    const int A = pb_game_by_id(PB_GAME_CONNECT4)->num_actions;
    if (liar_fetch(x, PB_WHICH_V, it->v_version) == 0 &&
        liar_fetch(x, PB_WHICH_Q, it->q_version) == 0) {
      float *q = calloc((size_t)it->n_states * A, sizeof *q);
      assert_non_null(q);
      const int lies = liar_targets(x, it, q);
      pb_msg_t res;
      pb_msg_init(&res, PB_MSG_SEARCH_RESULT, RUN, PB_GAME_CONNECT4,
                  x->sender);
      res.search_result.item_id = it->item_id;
      res.search_result.n_states = it->n_states;
      res.search_result.n_actions = (uint32_t)A;
      res.search_result.qvalues = q;
      tp_peer_send(x->sock, &res);
      free(q);
      x->answered++;
      x->last_version = (int)it->q_version;
      if (lies > 0) {
        x->lies += lies;
        x->lying_items++;
        if (it->q_version < LIAR_VERSIONS) x->lying_at[it->q_version]++;
      }
      did = 1;
    }
  } else if (t == PB_MSG_REJECT && m.reject.code == PB_EDENIED) {
    if (x->refused++ == 0) {
      x->caught_version = x->last_version;
      x->lying_items_caught = x->lying_items;
    }
    did = -1;
  } else {
    tp_sleep(0.05);
  }
  if (t >= 0) pb_msg_free(&m);
  return did;
}

/* The liar asks and answers until limit_s pass, the learner l exits (its
 * status kept in *lst), it is refused (unless it hops: refusals do not
 * stop one that takes a new connection each time) or r's log says
 * `until` (NULL: never); returns the items it answered meanwhile. */
static inline int liar_run(liar_t *x, pid_t l, int *lst, double limit_s,
                           const char *until) {
  char log[512];
  path_of(x->r, "learner.log", log, sizeof log);
  const int before = x->answered;
  const double t0 = tp_now();
  while (tp_now() - t0 < limit_s && running(l, lst) &&
         !(x->refused && !x->hop) && !(until && tp_count(log, until) > 0))
    liar_step(x);
  return x->answered - before;
}

/* The lying items r's learner trained of liar x: those x delivered in the
 * iterations closed before it was caught, less those the learner threw
 * away (search_items_thrown, counted over the run: only lies disagree, and
 * every item of the iteration of the catch is thrown with the liar).
 * `iters`: the iterations of the run. */
static inline int liar_trained(const liar_t *x, const run_t *r, int iters) {
  double thrown[LIAR_VERSIONS];
  assert_true(iters <= LIAR_VERSIONS);
  assert_int_equal(run_values(r, "search_items_thrown", thrown, iters),
                   iters);
  const int end = x->caught_version >= 0 ? x->caught_version : iters;
  int trained = 0;
  for (int v = 0; v < end && v < iters; v++)
    trained += x->lying_at[v] - (int)(thrown[v] - (v ? thrown[v - 1] : 0));
  return trained;
}

/* ---- a run for liars ---------------------------------------------------- */

/* A run of test `tag` for liars: r, with its learner and a real actor
 * beside it (and a real searcher from the start, or once the liars are
 * done), the clean run ref of the same settings, a context for the liars'
 * sockets, and r's log. */
typedef struct {
  run_t r, ref;
  pid_t learner, actor, searcher; /* searcher: -1 until it starts */
  int lst;                        /* the learner's status, once it exits */
  void *ctx;
  char log[512];
} scene_t;

/* The searcher of scene s starts (once). */
static inline void scene_searcher(scene_t *s) {
  if (s->searcher < 0)
    s->searcher = start_worker(&s->r, "search", "searcher-1", NULL);
}

/* extra: the settings of r and ref; own: more of r's alone (NULL: none;
 * at most 15 in all); with searcher, the real searcher starts now. */
static inline void scene_begin(scene_t *s, const char *tag,
                               const char *const *extra,
                               const char *const *own, int searcher) {
  memset(s, 0, sizeof *s);
  const char *all[16];
  int n = 0;
  for (int i = 0; extra[i] != NULL && n < 15; i++) all[n++] = extra[i];
  const int shared = n;
  for (int i = 0; own != NULL && own[i] != NULL && n < 15; i++)
    all[n++] = own[i];
  all[n] = NULL;
  s->learner = run_begin(&s->r, &s->ref, tag, all);
  s->ref.extra[shared] = NULL; /* the clean run gets extra alone */
  s->lst = -1;
  s->searcher = -1;
  s->actor = start_worker(&s->r, "selfplay", "actor-1", NULL);
  if (searcher) scene_searcher(s);
  path_of(&s->r, "learner.log", s->log, sizeof s->log);
  s->ctx = zmq_ctx_new();
  assert_non_null(s->ctx);
}

/* The liars are done (their sockets closed): the context goes, the real
 * searcher comes if it has not yet, and the run finishes (the learner and
 * the real workers exit 0). */
static inline void scene_end(scene_t *s) {
  zmq_ctx_term(s->ctx);
  s->ctx = NULL;
  scene_searcher(s);
  run_finish(&s->r, s->learner, s->lst, 300, (pid_t[]){s->actor, s->searcher},
             2);
}

#endif
