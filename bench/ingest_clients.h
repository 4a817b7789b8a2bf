/* ingest_clients.h - the actors that bench_ingest floods the learner
 * with: a pool of random Connect Four games, and client threads that
 * answer each self-play work item at once with episodes from the pool
 * (bench_ingest.c describes the workload). Header-only, like
 * bench_util.h: only bench_ingest.c includes it, once. */
#ifndef PB_BENCH_INGEST_CLIENTS_H
#define PB_BENCH_INGEST_CLIENTS_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "curve.h"
#include "game.h"
#include "msg.h"
#include "rng.h"

enum { POOL = 4096 }; /* games in the pool */

/* Wall-clock time, for the pacing here and the samples of bench_ingest.c. */
static double ingest_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void ingest_sleep(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- the pool of games ------------------------------------------------ */

typedef struct {
  pb_state_t *states; /* all positions, game after game */
  pb_msg_episode_t ep[POOL];
} pool_t;

static int pool_make(pool_t *p, uint64_t seed) {
  const pb_game_t *g = &pb_game_connect4;
  p->states = malloc((size_t)POOL * g->max_turns * sizeof *p->states);
  if (p->states == NULL) return -1;
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  size_t at = 0;
  for (int k = 0; k < POOL; k++) {
    pb_state_t s;
    g->reset(&s);
    uint32_t n = 0;
    int done = 0;
    float rew = 0;
    pb_state_t *st = &p->states[at];
    while (!done) {
      st[n++] = s;
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&s, acts);
      rew = g->step(&s, acts[pb_rng_below(&rng, (uint32_t)na)], &done);
    }
    p->ep[k] = (pb_msg_episode_t){st, n, (int)rew, 0, NULL};
    at += n;
  }
  return 0;
}

/* ---- the clients -------------------------------------------------------- */

typedef struct {
  _Atomic uint64_t results, positions, bytes_out, msgs_out, msgs_in;
  _Atomic uint64_t no_work, other, errors;
} counters_t;

/* What the main thread tells the clients: stop, and the offered load. */
typedef struct {
  atomic_int stop;
  atomic_int gen;        /* bumped whenever rate changes */
  _Atomic double rate;   /* positions/s per client; 0 = as fast as possible */
} control_t;

typedef struct {
  int id;
  void *zctx;
  const char *endpoint;
  const pool_t *pool;
  control_t *ctl;
  counters_t *cnt;
  const pb_curve_keys_t *keys; /* -K: the worker's CURVE keys, else NULL */
  const char *learner_key;     /* -K: the learner's public key */
  int joined;
  char why[256]; /* the first error, for the report */
} client_t;

/* Receives and decodes one message, waiting until the socket's receive
 * timeout. Returns 0, 1 on timeout, -1 on a decode error. */
static int ingest_recv(void *sock, const pb_msg_expect_t *ex, pb_msg_t *out,
                    pb_err_t *err) {
  zmq_msg_t z;
  zmq_msg_init(&z);
  if (zmq_msg_recv(&z, sock, 0) < 0) {
    zmq_msg_close(&z);
    return 1;
  }
  int rc = pb_msg_decode(zmq_msg_data(&z), zmq_msg_size(&z), ex, out, err);
  zmq_msg_close(&z);
  return rc == 0 ? 0 : -1;
}

/* One client's connection and what it keeps from message to message. */
typedef struct {
  void *s; /* the DEALER socket */
  pb_err_t err;
  pb_msg_buf_t buf;
  pb_msg_episode_t *eps; /* the episodes of the result being sent */
  uint32_t eps_cap;
  char sender[32], run_id[PB_MSG_ID_MAX + 1];
  int game_id;
  uint32_t next; /* where this client reads the pool */
} session_t;

/* Opens the client's DEALER socket to the learner (with CURVE under -K).
 * Returns 0, or -1 with c->why set. */
static int client_connect(client_t *c, session_t *ss) {
  void *s = zmq_socket(c->zctx, ZMQ_DEALER);
  ss->s = s;
  int linger = 0, tmo = 500;
  if (s == NULL || zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) ||
      zmq_setsockopt(s, ZMQ_RCVTIMEO, &tmo, sizeof tmo) ||
      (c->keys != NULL &&
       pb_curve_client(s, c->keys, c->learner_key, &ss->err) != 0) ||
      zmq_connect(s, c->endpoint)) {
    snprintf(c->why, sizeof c->why, "socket: %.200s",
             zmq_strerror(zmq_errno()));
    return -1;
  }
  return 0;
}

/* Hello until answered (or stopped): the run id and game of the headers.
 * Returns 0, or -1 with c->why set. */
static int client_join(client_t *c, session_t *ss) {
  while (!atomic_load(&c->ctl->stop) && !c->joined) {
    pb_msg_t m, r;
    pb_msg_init(&m, PB_MSG_HELLO, "", 0, ss->sender);
    m.hello =
        (pb_msg_hello_t){PB_ROLE_ACTOR, 1, (uint32_t)getpid(), "bench", ""};
    if (pb_msg_encode_buf(&m, &ss->buf, &ss->err) != 0 ||
        zmq_send(ss->s, ss->buf.data, ss->buf.len, 0) < 0) {
      snprintf(c->why, sizeof c->why, "hello: %.200s", ss->err.msg);
      return -1;
    }
    int rc = ingest_recv(ss->s, NULL, &r, &ss->err);
    if (rc == 0 && r.type == PB_MSG_HELLO_REPLY && r.hello_reply.accepted) {
      snprintf(ss->run_id, sizeof ss->run_id, "%s", r.header.run_id);
      ss->game_id = r.header.game_id;
      c->joined = 1;
    }
    pb_msg_free(&r);
  }
  return 0;
}

/* Answers the self-play work item r (freed here) with a SelfplayResult of
 * as many episodes from the pool; in paced mode (rate > 0) moves *due on
 * by the positions sent. Returns 0, or -1 with c->why set when out of
 * memory. */
static int client_answer(client_t *c, session_t *ss, pb_msg_t *r, double rate,
                         double *due) {
  counters_t *k = c->cnt;
  uint32_t n = r->work_item.episodes;
  if (n > ss->eps_cap) {
    pb_msg_episode_t *e = realloc(ss->eps, n * sizeof *e);
    if (e == NULL) {
      pb_msg_free(r);
      snprintf(c->why, sizeof c->why, "out of memory");
      return -1;
    }
    ss->eps = e;
    ss->eps_cap = n;
  }
  uint64_t npos = 0;
  for (uint32_t i = 0; i < n; i++) {
    ss->eps[i] = c->pool->ep[ss->next++ % POOL];
    ss->eps[i].q_version = r->work_item.q_version;
    npos += ss->eps[i].n_states;
  }
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_SELFPLAY_RESULT, ss->run_id, ss->game_id, ss->sender);
  m.selfplay_result =
      (pb_msg_selfplay_result_t){r->work_item.item_id, ss->eps, n};
  pb_msg_free(r);
  if (pb_msg_encode_buf(&m, &ss->buf, &ss->err) != 0 ||
      zmq_send(ss->s, ss->buf.data, ss->buf.len, 0) < 0) {
    atomic_fetch_add(&k->errors, 1);
    if (c->why[0] == '\0')
      snprintf(c->why, sizeof c->why, "result: %.200s", ss->err.msg);
    return 0;
  }
  atomic_fetch_add(&k->msgs_out, 1);
  atomic_fetch_add(&k->bytes_out, ss->buf.len);
  atomic_fetch_add(&k->results, 1);
  atomic_fetch_add(&k->positions, npos);
  if (rate > 0) *due += (double)npos / rate;
  return 0;
}

static void *client_main(void *arg) {
  client_t *c = arg;
  counters_t *k = c->cnt;
  session_t ss = {0};
  snprintf(ss.sender, sizeof ss.sender, "bench-%d", c->id);
  if (client_connect(c, &ss) != 0 || client_join(c, &ss) != 0) goto out;
  const pb_msg_expect_t ex = {ss.run_id, ss.game_id};
  ss.next = (uint32_t)c->id * 97u;
  int need_request = 1, gen = -1;
  double due = 0; /* paced mode: when the next result may go */
  while (!atomic_load(&c->ctl->stop)) {
    int g = atomic_load(&c->ctl->gen);
    double rate = atomic_load(&c->ctl->rate);
    if (g != gen) {
      gen = g;
      due = ingest_now();
    }
    if (rate > 0 && due > ingest_now()) {
      ingest_sleep(due - ingest_now() < 0.05 ? due - ingest_now() : 0.05);
      continue;
    }
    pb_msg_t m, r;
    if (need_request) {
      pb_msg_init(&m, PB_MSG_WORK_REQUEST, ss.run_id, ss.game_id, ss.sender);
      m.work_request = (pb_msg_work_request_t){PB_ROLE_ACTOR, 0};
      if (pb_msg_encode_buf(&m, &ss.buf, &ss.err) != 0 ||
          zmq_send(ss.s, ss.buf.data, ss.buf.len, 0) < 0) {
        atomic_fetch_add(&k->errors, 1);
        continue;
      }
      atomic_fetch_add(&k->msgs_out, 1);
      atomic_fetch_add(&k->bytes_out, ss.buf.len);
      need_request = 0;
    }
    int rc = ingest_recv(ss.s, &ex, &r, &ss.err);
    if (rc == 1) { /* nothing within the timeout: ask again */
      need_request = 1;
      continue;
    }
    need_request = 1;
    if (rc < 0) {
      atomic_fetch_add(&k->errors, 1);
      if (c->why[0] == '\0')
        snprintf(c->why, sizeof c->why, "decode: %.200s", ss.err.msg);
      continue;
    }
    atomic_fetch_add(&k->msgs_in, 1);
    if (r.type == PB_MSG_NO_WORK) {
      atomic_fetch_add(&k->no_work, 1);
      pb_msg_free(&r);
      ingest_sleep(0.01);
      continue;
    }
    if (r.type != PB_MSG_WORK_ITEM || r.work_item.kind != PB_WORK_SELFPLAY) {
      atomic_fetch_add(&k->other, 1);
      pb_msg_free(&r);
      continue;
    }
    if (client_answer(c, &ss, &r, rate, &due) != 0) goto out;
  }
out:
  if (ss.s) zmq_close(ss.s);
  pb_msg_buf_free(&ss.buf);
  free(ss.eps);
  return NULL;
}

#endif
