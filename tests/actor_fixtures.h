/* actor_fixtures.h - a fake actor for the process tests of the self-play
 * checks (test_selfcheck.c, test_replay_trust.c), written with the wire
 * codec: it asks r's learner for self-play items, downloads the Q each
 * item announces, has a player callback make the episodes it sends (an
 * honest engine, a thrower, a rejection sampler), and sends them as an
 * actor's result; until it is refused, the learner exits or limit_s pass.
 * Include after run_fixtures.h. */
#ifndef PB_TEST_ACTOR_FIXTURES_H
#define PB_TEST_ACTOR_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>

#include "episodes.h"
#include "msg.h"
#include "nn.h"

/* The episodes the fake actor sends for item `it`, into out (cleared
 * first by the caller); the actor's Q network holds the item's Q version
 * by then. */
typedef void (*fake_play_t)(void *arg, const pb_msg_work_item_t *it,
                            pb_episodes_t *out);

typedef struct {
  const run_t *r;
  pid_t learner;
  int *lst;           /* the learner's status once it exited (running()) */
  void *ctx;          /* ZeroMQ context */
  double limit_s;
  const char *sender; /* its sender id */
  int hop;            /* a new connection and sender id ("hop-N") per item */
  int policy;         /* send the policy rows (AlphaZero) */
  pb_nn_t *q;         /* loaded with each item's Q version */
  fake_play_t play;
  void *arg;
} fake_actor_t;

/* Runs the fake actor f; returns the items it delivered and sets
 * *refused (1 when the learner refused it with PB_EDENIED). */
static inline int fake_actor_run(const fake_actor_t *f, int *refused) {
  pb_episodes_t eps;
  pb_episodes_init(&eps);
  void *d = tp_peer(f->ctx, f->r->ep, NULL, NULL, 2000);
  uint64_t have = UINT64_MAX;
  int delivered = 0;
  char who[32];
  snprintf(who, sizeof who, "%s", f->sender);
  *refused = 0;
  const double t0 = tp_now();
  while (tp_now() - t0 < f->limit_s && running(f->learner, f->lst) &&
         !*refused) {
    pb_msg_t m;
    pb_msg_init(&m, PB_MSG_WORK_REQUEST, RUN, PB_GAME_CONNECT4, who);
    m.work_request.role = PB_ROLE_ACTOR;
    tp_peer_send(d, &m);
    int t = tp_peer_recv(d, 2000, &m);
    if (t == PB_MSG_WORK_ITEM && m.work_item.kind == PB_WORK_SELFPLAY) {
      const pb_msg_work_item_t *it = &m.work_item;
      if (have == it->q_version ||
          run_fetch_weights(d, who, PB_WHICH_Q, it->q_version, f->q) == 0) {
        have = it->q_version;
        pb_episodes_clear(&eps);
        f->play(f->arg, it, &eps);
        pb_msg_episode_t *mep = calloc(eps.n_eps ? eps.n_eps : 1, sizeof *mep);
        assert_non_null(mep);
        for (size_t k = 0; k < eps.n_eps; k++) {
          mep[k].states = eps.states + eps.start[k];
          mep[k].n_states = eps.len[k];
          mep[k].final_reward = eps.reward[k];
          mep[k].q_version = eps.version[k];
          if (f->policy)
            mep[k].policy = pb_episodes_policy(&eps, k, 0);
        }
        pb_msg_t res;
        pb_msg_init(&res, PB_MSG_SELFPLAY_RESULT, RUN, PB_GAME_CONNECT4, who);
        res.selfplay_result.item_id = it->item_id;
        res.selfplay_result.episodes = mep;
        res.selfplay_result.n_episodes = (uint32_t)eps.n_eps;
        tp_peer_send(d, &res);
        free(mep);
        delivered++;
        if (f->hop) { /* the next item on a new connection */
          zmq_close(d); /* lingers until the result is out */
          d = tp_peer(f->ctx, f->r->ep, NULL, NULL, 2000);
          snprintf(who, sizeof who, "hop-%d", delivered);
        }
      }
    } else if (t == PB_MSG_REJECT && m.reject.code == PB_EDENIED) {
      *refused = 1;
    } else {
      tp_sleep(0.05);
    }
    if (t >= 0) pb_msg_free(&m);
  }
  zmq_close(d);
  pb_episodes_free(&eps);
  return delivered;
}

#endif
