/* evaluator.c - the evaluator's loop: checkpoints in, ratings out.
 *
 * Workload: one rating (a few hundred games) per new checkpoint; between
 * ratings the process sleeps in zmq_poll, so it costs nothing while the
 * learner trains. */
#include "evaluator.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "curve.h"
#include "elotable.h"
#include "evalrun.h"
#include "model.h"
#include "msg.h"
#include "rundir.h"
#include "util.h"

void pb_evaluator_opts_default(pb_evaluator_opts_t *o) {
  memset(o, 0, sizeof *o);
  pb_config_defaults(&o->cfg);
  o->until = -1;
  o->png = 1;
  o->poll_ms = 1000;
}

static int stopping(const pb_evaluator_opts_t *o) {
  return o->stop != NULL && *o->stop;
}

/* The announce subscription. A listener thread owns the SUB socket and
 * polls it all the time, also while the main thread spends seconds on a
 * rating: after a reconnection (a restarted learner) libzmq sends the
 * subscription to the new publisher only when the socket's own thread
 * calls into it, and a learner that finishes announces STOPPING for about
 * a second and leaves. */
typedef struct {
  void *ctx, *sub;
  int game_id;
  pb_log_t *log;
  pthread_t th;
  int th_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned long announces; /* guarded by mu: Announces received so far */
  int stop_seen;           /* guarded by mu: one had phase STOPPING */
  int quit;                /* guarded by mu: the thread should return */
} sub_t;

/* Drains what is queued on the socket; returns how many Announces came
 * and sets *stop on one with phase STOPPING. Listener thread only. */
static unsigned long sub_drain(sub_t *s, int *stop) {
  unsigned long announced = 0;
  for (;;) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    int len = zmq_msg_recv(&m, s->sub, ZMQ_DONTWAIT);
    if (len < 0) {
      zmq_msg_close(&m);
      break;
    }
    pb_msg_t msg;
    pb_err_t e;
    pb_err_clear(&e);
    pb_msg_expect_t ex = {NULL, s->game_id};
    if (pb_msg_decode(zmq_msg_data(&m), zmq_msg_size(&m), &ex, &msg, &e) != 0) {
      pb_log_debug(s->log, "dropped a message on the announce socket: %s",
                   e.msg);
    } else if (msg.type == PB_MSG_ANNOUNCE) {
      announced++;
      pb_log_debug(s->log,
                   "announce: version %" PRIu64 ", iteration %u, phase %d",
                   msg.announce.version, msg.announce.iteration,
                   msg.announce.phase);
      if (msg.announce.phase == PB_PHASE_STOPPING) *stop = 1;
    }
    pb_msg_free(&msg);
    zmq_msg_close(&m);
  }
  return announced;
}

static void *sub_listen(void *arg) {
  sub_t *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int quit = s->quit;
    pthread_mutex_unlock(&s->mu);
    if (quit) break;
    zmq_pollitem_t it = {s->sub, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 100) <= 0) continue; /* timeout or EINTR */
    int stop = 0;
    unsigned long n = sub_drain(s, &stop);
    if (n == 0) continue;
    pthread_mutex_lock(&s->mu);
    s->announces += n;
    if (stop) s->stop_seen = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
  }
  return NULL;
}

static void sub_close(sub_t *s) {
  if (s->th_started) {
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    s->th_started = 0;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
  }
  if (s->sub != NULL) zmq_close(s->sub);
  if (s->ctx != NULL) zmq_ctx_term(s->ctx);
  s->sub = s->ctx = NULL;
}

static int sub_open(sub_t *s, const pb_config_t *cfg, int game_id,
                    pb_log_t *log, pb_err_t *err) {
  memset(s, 0, sizeof *s);
  s->game_id = game_id;
  s->log = log;
  int linger = 0, hwm = cfg->net.hwm;
  int64_t maxsz = 65536; /* an Announce is tiny: refuse anything big */
  if ((s->ctx = zmq_ctx_new()) == NULL ||
      (s->sub = zmq_socket(s->ctx, ZMQ_SUB)) == NULL ||
      zmq_setsockopt(s->sub, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
      zmq_setsockopt(s->sub, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
      zmq_setsockopt(s->sub, ZMQ_MAXMSGSIZE, &maxsz, sizeof maxsz) != 0 ||
      zmq_setsockopt(s->sub, ZMQ_SUBSCRIBE, "", 0) != 0) {
    int e = zmq_errno();
    sub_close(s);
    return pb_err_set(err, PB_EIO, "evaluator: cannot subscribe to %s: %s",
                      cfg->net.pub_endpoint, zmq_strerror(e));
  }
  void *const socks[1] = {s->sub};
  int rc = pb_curve_client_dir(cfg->net.curve_dir, cfg->net.curve_key, socks, 1,
                               err);
  if (rc != 0 || zmq_connect(s->sub, cfg->net.pub_endpoint) != 0) {
    int e = zmq_errno();
    sub_close(s);
    if (rc != 0) return rc;
    return pb_err_set(err, PB_EIO, "evaluator: cannot subscribe to %s: %s",
                      cfg->net.pub_endpoint, zmq_strerror(e));
  }
  if (pthread_mutex_init(&s->mu, NULL) != 0) {
    sub_close(s);
    return pb_err_set(err, PB_ENOMEM, "evaluator: cannot create a mutex");
  }
  if (pthread_cond_init(&s->cv, NULL) != 0) {
    pthread_mutex_destroy(&s->mu);
    sub_close(s);
    return pb_err_set(err, PB_ENOMEM, "evaluator: cannot create a condition");
  }
  if (pthread_create(&s->th, NULL, sub_listen, s) != 0) {
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    sub_close(s);
    return pb_err_set(err, PB_ENOMEM,
                      "evaluator: cannot start the announce listener");
  }
  s->th_started = 1;
  return 0;
}

/* Whether an Announce with phase STOPPING has come. */
static int sub_stop_seen(sub_t *s) {
  pthread_mutex_lock(&s->mu);
  int v = s->stop_seen;
  pthread_mutex_unlock(&s->mu);
  return v;
}

/* Waits up to ms, in slices of 100 ms so that a signal is seen soon,
 * until an Announce newer than *seen comes (then updates *seen). */
static void sub_wait(sub_t *s, int ms, unsigned long *seen,
                     const pb_evaluator_opts_t *o) {
  double end = pb_now() + ms / 1000.0;
  pthread_mutex_lock(&s->mu);
  while (s->announces == *seen && !stopping(o)) {
    double left = end - pb_now();
    if (left <= 0) break;
    if (left > 0.1) left = 0.1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(left * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
  }
  *seen = s->announces;
  pthread_mutex_unlock(&s->mu);
}

/* Whether the table holds a version >= v. */
static int reached(const pb_evalrun_t *r, int64_t v) {
  const pb_elotable_t *t = pb_evalrun_table(r);
  int n = pb_elotable_count(t);
  return v >= 0 && n > 0 &&
         pb_elotable_row(t, n - 1)->version >= (uint64_t)v;
}

/* Whether the newest checkpoint on disk is >= v. */
static int on_disk(const char *run_dir, int64_t v) {
  uint64_t *vs = NULL;
  size_t n = 0;
  if (v < 0 || pb_rundir_versions(run_dir, &vs, &n, NULL) != 0) return 0;
  int yes = n > 0 && vs[n - 1] >= (uint64_t)v;
  free(vs);
  return yes;
}

static int follow(const pb_evaluator_opts_t *o, pb_evalrun_t *r, int game_id,
                  pb_err_t *err) {
  sub_t s;
  int rc = sub_open(&s, &o->cfg, game_id, o->log, err);
  if (rc != 0) return rc;
  pb_log_info(o->log,
              "following %s (checkpoints polled every %d ms, announces on "
              "%s)",
              o->cfg.run.dir, o->poll_ms, o->cfg.net.pub_endpoint);
  unsigned long seen = 0;
  while (!stopping(o)) {
    /* The learner is done (or `until` is on disk): one final step. */
    int stop_seen = sub_stop_seen(&s);
    int final = stop_seen || (o->until >= 0 && on_disk(o->cfg.run.dir, o->until));
    uint64_t v = 0;
    rc = pb_evalrun_follow_step(r, final, &v, err);
    if (rc < 0) break;
    rc = 0;
    if (final) {
      pb_log_info(o->log, "%s: evaluator done",
                  stop_seen ? "the learner is stopping"
                            : "the last version asked for is rated");
      break;
    }
    if (o->once || reached(r, o->until)) break;
    if (stopping(o)) break;
    sub_wait(&s, o->poll_ms, &seen, o);
  }
  sub_close(&s);
  return rc == PB_EINTR ? 0 : rc;
}

int pb_evaluator_run(const pb_evaluator_opts_t *o, pb_err_t *err) {
  if (o == NULL || o->poll_ms < 1 || o->n_anchors < 0 ||
      o->n_anchors > PB_EVALUATOR_MAX_ANCHORS)
    return pb_err_set(err, PB_EINVAL, "evaluator: bad options");
  pb_evalrun_opts_t eo;
  int rc = pb_evalrun_opts_from_config(&eo, &o->cfg, err);
  if (rc != 0) return rc;
  for (int i = 0; i < o->n_anchors; i++)
    if ((rc = pb_evalrun_set_anchor(&eo, o->anchors[i], err)) != 0)
      return PB_ECONFIG;
  eo.stop = o->stop;
  char title[256];
  snprintf(title, sizeof title, "Elo of %s (%s)", o->cfg.run.name, o->cfg.game);
  pb_evalrun_dir_opts_t d = {o->cfg.eval.every, o->png, o->log, title};
  pb_evalrun_t *r = pb_evalrun_new(o->cfg.run.dir, &eo, &d, err);
  if (r == NULL) return err != NULL && err->code ? err->code : PB_EIO;
  const pb_elotable_t *t = pb_evalrun_table(r);
  char anchors[512];
  size_t k = 0;
  anchors[0] = '\0';
  for (int j = 0; j < eo.n_opponents && k < sizeof anchors; j++) {
    int w = isfinite(eo.anchor[j])
                ? snprintf(anchors + k, sizeof anchors - k, "%s%s=%.0f",
                           j ? ", " : "", eo.opponents[j], eo.anchor[j])
                : snprintf(anchors + k, sizeof anchors - k, "%s%s (no anchor)",
                           j ? ", " : "", eo.opponents[j]);
    if (w < 0) break;
    k += (size_t)w;
  }
  /* The networks of the checkpoints it rates compute in model.precision
   * on this machine (pb_model_open: a bf16 it lacks plays in fp32). */
  char prec[256];
  pb_err_t pe;
  if (pb_model_precision(&o->cfg, PB_DEVICE_OTHER, "cpu", NULL, prec,
                         sizeof prec, &pe) != 0)
    snprintf(prec, sizeof prec, "fp32 (%.240s)", pe.msg);
  pb_log_info(o->log,
              "evaluator: %s, %d games per opponent (%d random opening "
              "moves), every %d version(s); opponents %s; %d version(s) "
              "already in elo.csv; networks in %s",
              o->cfg.game, eo.games, eo.opening_random_moves, o->cfg.eval.every,
              anchors, pb_elotable_count(t), prec);
  if (o->n_versions > 0) {
    int rated = 0;
    for (int i = 0; i < o->n_versions && rc == 0 && !stopping(o); i++) {
      if (pb_elotable_find(t, o->versions[i]) != NULL) continue;
      pb_err_t e;
      pb_err_clear(&e);
      rc = pb_evalrun_rate(r, o->versions[i], &e);
      if (rc == 0) {
        rated++;
      } else if (rc == PB_EIO || rc == PB_ECORRUPT || rc == PB_ENOTFOUND) {
        pb_log_warn(o->log, "version %llu skipped: %s",
                    (unsigned long long)o->versions[i], e.msg);
        rc = 0;
      } else if (err != NULL) {
        *err = e;
      }
    }
    pb_log_info(o->log, "rated %d of the %d version(s) asked for", rated,
                o->n_versions);
    if (rc == PB_EINTR) rc = 0;
  } else if (o->all) {
    int rated = 0;
    rc = pb_evalrun_all(r, &rated, err);
    if (rc == 0 || rc == PB_EINTR)
      pb_log_info(o->log, "rated %d version(s)%s", rated,
                  rc == PB_EINTR ? " before being stopped" : "");
    if (rc == PB_EINTR) rc = 0;
  } else {
    rc = follow(o, r, eo.g->id, err);
  }
  pb_evalrun_destroy(&r);
  return rc;
}
