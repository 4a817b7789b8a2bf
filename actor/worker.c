/* worker.c - the actor / beam-search worker: see worker.h for the contract
 * and docs/protocol.md for the conversation.
 *
 * Shape: pb_worker_run is the loop of worker.h (join, ask, weights, work,
 * result). Every "send a request and wait for its reply" goes through
 * request() -> wait_for(), the only place that polls the sockets; it also
 * handles announcements, idle heartbeats and resends. While an item is being
 * computed, the evaluator callbacks (ev_value / ev_qvalues) take over the
 * duties that cannot wait: heartbeats, the stop flag, a STOPPING
 * announcement.
 *
 * Internal outcomes travel as small positive codes next to 0 and the
 * negative PB_E* errors, so that "the learner changed runs" or "give this
 * item up" never look like failures of the process.
 *
 * Where each part lives (state.h holds what they share):
 *   worker.c   names and ids, construction (pb_worker_new, _destroy),
 *              1. join, 2. ask, and the loop (pb_worker_run, say_bye)
 *   sockets.c  the sockets: setup, sending (send_bytes, encode_send,
 *              heartbeats), receiving (recv_msg, announcements), wait_for,
 *              request, pause_for
 *   weights.c  3. weights: have, load_net, fetch (WeightsRequest),
 *              ensure_weights
 *   jobs.c     4. work: the evaluators that heartbeat (tick, ev_value,
 *              ev_qvalues, ev_pv), do_selfplay, do_azplay, do_search, and
 *              5. their results (send_episodes, SearchResult) */
#include "worker.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "learn.h"
#include "model.h"
#include "plan.h"
#include "util.h"
#include "state.h"

/* ---- names and ids ---------------------------------------------------- */

int pb_worker_role_parse(const char *s) {
  if (s != NULL && strcmp(s, "selfplay") == 0) return PB_ROLE_ACTOR;
  if (s != NULL && strcmp(s, "search") == 0) return PB_ROLE_SEARCHER;
  return PB_EINVAL;
}

const char *pb_worker_component(int role) {
  return role == PB_ROLE_ACTOR      ? "actor"
         : role == PB_ROLE_SEARCHER ? "searcher"
                                    : "worker";
}

static const char *role_word(int role) {
  return role == PB_ROLE_ACTOR ? "selfplay" : "search";
}

/* Printable ASCII without spaces, as header ids must be; anything else
 * becomes '_'. */
static void sanitize_id(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e) *s = '_';
}

static void hostname_of(char *buf, size_t n) {
  if (gethostname(buf, n) != 0) snprintf(buf, n, "unknown");
  buf[n - 1] = '\0';
  if (buf[0] == '\0') snprintf(buf, n, "unknown");
  sanitize_id(buf);
}

void pb_worker_default_id(int role, char *buf, size_t n) {
  char host[PB_MSG_HOST_MAX + 1];
  char id[3 * PB_MSG_ID_MAX];
  hostname_of(host, sizeof host);
  /* Keep the pid whole when a long hostname must be cut. */
  char pid[24];
  snprintf(pid, sizeof pid, "-%ld", (long)getpid());
  int room =
      PB_MSG_ID_MAX - (int)strlen(role_word(role)) - 1 - (int)strlen(pid);
  snprintf(id, sizeof id, "%s-%.*s%s", role_word(role), room, host, pid);
  snprintf(buf, n, "%s", id);
}

int pb_worker_id_check(const char *id, pb_err_t *err) {
  if (id == NULL || id[0] == '\0')
    return pb_err_set(err, PB_EINVAL, "the worker id is empty");
  size_t n = strlen(id);
  if (n > PB_MSG_ID_MAX)
    return pb_err_set(err, PB_EINVAL,
                      "the worker id is %zu bytes long, at most %d allowed", n,
                      PB_MSG_ID_MAX);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
      return pb_err_set(err, PB_EINVAL,
                        "the worker id has byte 0x%02x at %zu: only printable "
                        "ASCII without spaces is allowed",
                        (unsigned char)id[i], i);
  return 0;
}

/* ---- construction ----------------------------------------------------- */

/* The device of this worker's role (pb_config_device), and the key that
 * chose it. */
static const char *role_device(const pb_worker_t *w, const char **key) {
  return pb_config_device(&w->cfg,
                          w->role == PB_ROLE_ACTOR ? PB_DEVICE_ACTOR
                                                   : PB_DEVICE_SEARCHER,
                          key);
}

/* Creates a throwaway network on the role's device, so that a device that
 * cannot work ("cuda" without CUDA) is reported at startup rather than at
 * the first weights, and so that the log names the device "auto" chose;
 * then the role's precision on that device (an explicit bf16 where it is
 * not native is refused here, at startup). */
static int probe_device(pb_worker_t *w, pb_err_t *err) {
  const pb_game_t *g = pb_game_by_name(w->cfg.game);
  pb_nn_spec_t spec;
  pb_model_spec(&w->cfg, g, 0, &spec);
  pb_err_t e;
  pb_err_clear(&e);
  const char *key, *dev = role_device(w, &key);
  pb_nn_t *nn = pb_nn_new(&spec, NULL, dev, 0, &e);
  if (nn == NULL)
    return pb_err_set(err, e.code, "%s '%s' (the %s): %s", key, dev,
                      pb_msg_role_name(w->role), e.msg);
  snprintf(w->device, sizeof w->device, "%s", pb_nn_device(nn));
  pb_nn_destroy(&nn);
  return pb_model_precision(&w->cfg,
                            w->role == PB_ROLE_ACTOR ? PB_DEVICE_ACTOR
                                                     : PB_DEVICE_SEARCHER,
                            w->device, &w->precision, w->precision_why,
                            sizeof w->precision_why, err);
}

pb_worker_t *pb_worker_new(const pb_config_t *cfg, int role, const char *id,
                           const char *run_id, pb_log_t *log, pb_err_t *err) {
  if (cfg == NULL) {
    pb_err_set(err, PB_EINVAL, "worker: config is NULL");
    return NULL;
  }
  if (role != PB_ROLE_ACTOR && role != PB_ROLE_SEARCHER) {
    pb_err_set(err, PB_EINVAL, "worker: role %d is neither actor nor searcher",
               role);
    return NULL;
  }
  if (id != NULL && pb_worker_id_check(id, err) != 0) return NULL;
  if (run_id != NULL && strlen(run_id) > PB_MSG_ID_MAX) {
    pb_err_set(err, PB_EINVAL, "worker: run id longer than %d bytes",
               PB_MSG_ID_MAX);
    return NULL;
  }
  if (pb_config_check(cfg, err) != 0) return NULL;
  pb_worker_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    pb_err_set(err, PB_ENOMEM, "worker: out of memory");
    return NULL;
  }
  w->cfg = *cfg;
  w->role = role;
  w->log = log;
  if (id != NULL)
    snprintf(w->id, sizeof w->id, "%s", id);
  else
    pb_worker_default_id(role, w->id, sizeof w->id);
  hostname_of(w->host, sizeof w->host);
  w->jitter = ((uint64_t)getpid() << 32) ^ (uint64_t)(pb_now() * 1e6);
  if (run_id != NULL)
    snprintf(w->want_start, sizeof w->want_start, "%s", run_id);
  pb_episodes_init(&w->eps);
  pb_nn_set_threads(cfg->model.threads);
  if (probe_device(w, err) != 0 || pb__worker_setup_sockets(w, err) != 0) {
    pb_worker_destroy(&w);
    return NULL;
  }
  /* Threads of game or tree work when the config says 0: the rule of
   * common/run/plan.h (one for a searcher; for an actor one on the CPU,
   * the CPUs the process may use on CUDA). */
  int want = role == PB_ROLE_ACTOR ? cfg->train.selfplay_threads
                                   : cfg->search.threads;
  if (want == 0) {
    cpu_set_t set;
    int cpus =
        sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    want = pb_plan_threads(role == PB_ROLE_SEARCHER,
                           strcmp(w->device, "cuda") == 0, cpus);
  }
  w->threads = want < 1 ? 1
               : want > PB_BATCHER_MAX_THREADS ? PB_BATCHER_MAX_THREADS
                                               : want;
  return w;
}

/* The algorithm's engines of this process, made again for the next item. */
static void drop_engines(pb_worker_t *w) {
  if (w->algo == NULL) return;
  if (w->player) w->algo->player_destroy(&w->player);
  if (w->searcher) w->algo->searcher_destroy(&w->searcher);
}

void pb_worker_destroy(pb_worker_t **wp) {
  if (wp == NULL || *wp == NULL) return;
  pb_worker_t *w = *wp;
  /* Only a Bye is worth waiting for; an unanswered Hello or WorkRequest
   * to a learner that is not there would only delay the exit. */
  int linger = w->said_bye ? PB_WORKER_LINGER_MS : 0;
  if (w->dealer) {
    zmq_setsockopt(w->dealer, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(w->dealer);
  }
  if (w->sub) zmq_close(w->sub);
  if (w->zctx) zmq_ctx_term(w->zctx);
  pb_neteval_destroy(&w->ne);
  drop_engines(w);
  pb_batcher_destroy(&w->batcher);
  free(w->run_yaml);
  pb_nn_destroy(&w->v.nn);
  pb_nn_destroy(&w->q.nn);
  pb_episodes_free(&w->eps);
  free(w->mep);
  free(w->qout);
  pb_msg_buf_free(&w->req);
  pb_msg_buf_free(&w->out);
  free(w);
  *wp = NULL;
}

const char *pb_worker_id(const pb_worker_t *w) {
  return w->id;
}

int pb_worker_wrong_start(const pb_worker_t *w) {
  return w->wrong_start;
}

void pb_worker_stats(const pb_worker_t *w, pb_worker_stats_t *st) {
  *st = w->st;
}

/* ---- backoff --------------------------------------------------------- */

/* One more failure in a row: waits 0.1 s, 0.2 s, 0.4 s ... up to 30 s,
 * each times a random factor in [0.5, 1.5) (so that many workers refused
 * together do not come back together), listening and heartbeating
 * meanwhile. Returns 0 or what the wait returned (a stop). */
static int back_off(pb_worker_t *w, const char *what, pb_err_t *err) {
  if (w->fails == 0) w->fails_since = pb_now();
  w->fails++;
  double d = PB_WORKER_BACKOFF_MIN_S;
  for (int i = 1; i < w->fails && d < PB_WORKER_BACKOFF_MAX_S; i++) d *= 2;
  if (d > PB_WORKER_BACKOFF_MAX_S) d = PB_WORKER_BACKOFF_MAX_S;
  uint64_t z = (w->jitter += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  d *= 0.5 + (double)(z >> 11) * (1.0 / 9007199254740992.0);
  pb_log_debug(w->log, "%s: failure %d in a row, waiting %.2f s", what,
               w->fails, d);
  return pb__worker_pause_for(w, d, err);
}

/* Something worked: the end of a streak of failures is said once. */
static void worked(pb_worker_t *w) {
  if (w->fails == 0) return;
  pb_log_info(w->log, "working again after %d failure(s) in a row over %.1f s",
              w->fails, pb_now() - w->fails_since);
  w->fails = 0;
}

/* ---- 1. join ---------------------------------------------------------- */

/* Reads the learner's config (an accepted HelloReply's) into *run, with
 * this build's schema: defaults, then the YAML, then the whole-config
 * check. A key this build does not know, or a value it refuses (a learner
 * of another probs version), fails with PB_ECONFIG naming it. */
static int read_run_config(const pb_msg_hello_reply_t *r, pb_config_t *run,
                           pb_err_t *err) {
  pb_err_t e;
  pb_err_clear(&e);
  pb_config_defaults(run);
  if (pb_config_load_string(run, r->config, &e) != 0 ||
      pb_config_check(run, &e) != 0)
    return pb_err_set(err, PB_ECONFIG,
                      "the learner's config: %s (a learner of another probs "
                      "version?)",
                      e.msg);
  return 0;
}

/* Takes the settings of an accepted HelloReply whose header is h. Engines
 * that depend on the game or on the learner's settings are rebuilt lazily;
 * networks of another run are forgotten (their versions mean nothing now),
 * but kept allocated for reuse when the spec is the same. */
static int adopt_run(pb_worker_t *w, const pb_msg_header_t *h,
                     const pb_msg_hello_reply_t *r, pb_err_t *err) {
  const pb_game_t *g = pb_game_by_id(h->game_id);
  if (g == NULL) /* decode guarantees a known game */
    return pb_err_set(err, PB_EPROTO, "HelloReply names game %d", h->game_id);
  pb_config_t run;
  int rc = read_run_config(r, &run, err);
  if (rc != 0) return rc;
  if (pb_game_by_name(run.game) != g)
    return pb_err_set(err, PB_EPROTO,
                      "the learner's config plays %s, its header %s", run.game,
                      g->name);
  char *yaml = strdup(r->config);
  if (yaml == NULL) return pb_err_set(err, PB_ENOMEM, "worker: out of memory");
  /* Another start of the same run may number other weights alike. */
  int same_run = w->g == g && strcmp(w->run_id, h->run_id) == 0 &&
                 strcmp(w->start_id, r->start_id) == 0;
  const int same_config = w->run_yaml != NULL && !strcmp(w->run_yaml, yaml);
  if (!same_run) {
    w->v.have = w->q.have = 0;
    pb_neteval_destroy(&w->ne); /* its batch bound follows the run's E */
  }
  if (w->g != g) {
    pb_batcher_destroy(&w->batcher);
    pb_nn_destroy(&w->v.nn);
    pb_nn_destroy(&w->q.nn);
  }
  if (w->g != g || !same_config) {
    /* The engines follow the game and the run's settings. */
    drop_engines(w);
    pb_neteval_destroy(&w->ne);
  }
  if (w->g != g || w->run_yaml == NULL ||
      pb_algos_of(&run) != pb_algos_of(&w->run)) {
    /* V and Q of another shape (a PROBS Q or a policy+value network). */
    w->v.have = w->q.have = 0;
    if (w->ne != NULL) pb_neteval_bind(w->ne, NULL, NULL);
    pb_nn_destroy(&w->v.nn);
    pb_nn_destroy(&w->q.nn);
  }
  if (strcmp(w->cfg.game, g->name) != 0)
    pb_log_warn(w->log,
                "the learner plays %s, our config says %s: following "
                "the learner",
                g->name, w->cfg.game);
  w->g = g;
  snprintf(w->run_id, sizeof w->run_id, "%s", h->run_id);
  snprintf(w->start_id, sizeof w->start_id, "%s", r->start_id);
  w->run = run;
  w->algo = pb_algo_of(&w->run);
  free(w->run_yaml);
  w->run_yaml = yaml;
  if (w->ne == NULL) {
    /* The batch bound is the learner's (same formula, its E), so that
     * network calls, and with them the floats, match an in-process run. */
    const pb_config_t *c = &w->cfg;
    w->ne = pb_neteval_new(g,
                           pb_learn_eval_batch(c->search.parallel,
                                               run.search.expansions,
                                               g->num_actions,
                                               c->train.selfplay_parallel),
                           (uint32_t)c->search.cache_entries, err);
    if (w->ne == NULL) return err && err->code ? err->code : PB_ENOMEM;
  }
  w->joined = 1;
  w->st.joins++;
  char desc[96];
  pb_log_info(w->log,
              "hello accepted: run '%s', run id %s, game %s, algorithm %s, "
              "model version %" PRIu64 ", %s, max_turns %d, eps %g, alpha "
              "%g%s%s",
              w->run_id, w->start_id[0] ? w->start_id : "(unsaid)", g->name,
              run.algorithm, r->version,
              pb_config_search_desc(&run, desc, sizeof desc),
              run.train.max_turns, run.train.eps, run.train.alpha,
              r->message[0] ? ": " : "", r->message);
  return 0;
}

static int join(pb_worker_t *w, pb_err_t *err) {
  w->joined = 0;
  for (;;) {
    pb_msg_t m, r;
    pb__worker_msg_init(w, &m, PB_MSG_HELLO);
    m.hello.role = w->role;
    m.hello.threads = (uint32_t)w->cfg.model.threads;
    m.hello.pid = (uint32_t)getpid();
    snprintf(m.hello.hostname, sizeof m.hello.hostname, "%s", w->host);
    snprintf(m.hello.start_id, sizeof m.hello.start_id, "%s", w->want_start);
    int rc = pb__worker_request(w, &m, BIT(PB_MSG_HELLO_REPLY), &r, err);
    if (rc != 0) return rc;
    if (w->want_start[0] != '\0' &&
        strcmp(r.hello_reply.start_id, w->want_start) != 0) {
      /* Two starts of one run: ours is not the one at this endpoint. */
      w->wrong_start = 1;
      rc = pb_err_set(
          err, PB_EMISMATCH,
          "the learner at %s is run id %s, but this worker was "
          "given run id %s: another start of run '%s'; not "
          "joining it",
          w->cfg.net.work_endpoint,
          r.hello_reply.start_id[0] ? r.hello_reply.start_id : "(unsaid)",
          w->want_start, r.header.run_id);
      pb_msg_free(&r);
      return rc;
    }
    if (r.hello_reply.accepted) {
      rc = adopt_run(w, &r.header, &r.hello_reply, err);
      pb_msg_free(&r);
      return rc;
    }
    pb__worker_warn(w,
                    "the learner (run '%s') refused us: %s; trying again "
                    "with a growing pause",
                    r.header.run_id, r.hello_reply.message);
    pb_msg_free(&r);
    if ((rc = back_off(w, "refused", err)) != 0) return rc;
  }
}

/* ---- 2. ask ----------------------------------------------------------- */

/* Gets the next work item into *item (the caller frees it). Returns 0,
 * W_REJOIN, W_STOP or an error. */
static int ask(pb_worker_t *w, pb_msg_t *item, pb_err_t *err) {
  const unsigned want =
      BIT(PB_MSG_WORK_ITEM) | BIT(PB_MSG_NO_WORK) | BIT(PB_MSG_REJECT);
  for (;;) {
    pb_msg_t m;
    pb__worker_msg_init(w, &m, PB_MSG_WORK_REQUEST);
    m.work_request.role = w->role;
    m.work_request.capacity = 0; /* items are sized by the learner */
    int rc = pb__worker_request(w, &m, want, item, err);
    if (rc != 0) return rc;
    if (item->type == PB_MSG_NO_WORK) {
      /* Floor the wait so that a learner saying 0 is not hammered. */
      uint32_t ms = item->no_work.retry_ms > 10 ? item->no_work.retry_ms : 10;
      pb_msg_free(item);
      pb_log_debug(w->log,
                   "no work: asking again in %u ms or at the next "
                   "announcement",
                   ms);
      /* A late WorkItem (the answer to a resent request) is as good. */
      rc = pb__worker_wait_for(w, BIT(PB_MSG_WORK_ITEM) | BIT(PB_MSG_REJECT),
                               pb_now() + ms / 1000.0, WAIT_WAKE, item, err);
      if (rc == W_TIMEOUT || rc == W_WAKE) continue;
      if (rc != 0) return rc;
    }
    if (item->type == PB_MSG_REJECT) {
      int code = item->reject.code;
      if (code == PB_EMISMATCH) {
        pb_log_info(w->log, "the learner rejects our run (%s): joining again",
                    item->reject.message);
        pb_msg_free(item);
        return W_REJOIN;
      }
      pb__worker_warn(w,
                      "the learner rejected a request: %s: %s; asking "
                      "again with a growing pause",
                      pb_err_name(code), item->reject.message);
      pb_msg_free(item);
      if ((rc = back_off(w, "rejected", err)) != 0) return rc;
      continue;
    }
    return 0; /* a WorkItem */
  }
}

/* ---- the loop --------------------------------------------------------- */

static void say_bye(pb_worker_t *w, const char *reason) {
  if (!w->joined) return; /* no run to say it to */
  pb_msg_t m;
  pb__worker_msg_init(w, &m, PB_MSG_BYE);
  snprintf(m.bye.reason, sizeof m.bye.reason, "%s", reason);
  /* A Bye must not wait on a full queue: the stop is already requested. */
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_msg_encode_buf(&m, &w->out, &e) == 0 &&
      zmq_send(w->dealer, w->out.data, w->out.len, ZMQ_DONTWAIT) >= 0)
    w->said_bye = 1;
}

int pb_worker_run(pb_worker_t *w, volatile sig_atomic_t *stop, pb_err_t *err) {
  const pb_config_t *c = &w->cfg;
  w->stop = stop;
  pb_log_info(w->log,
              "starting: role %s, id %s, work %s, announcements %s, "
              "device %s, precision %s, threads %d, libtorch threads %d, %s "
              "%d, heartbeat %d ms, lease %d ms",
              pb_worker_component(w->role), w->id, c->net.work_endpoint,
              c->net.pub_endpoint, w->device, w->precision_why, w->threads,
              c->model.threads,
              w->role == PB_ROLE_ACTOR ? "games at once per thread"
                                       : "searches at once per thread",
              w->role == PB_ROLE_ACTOR ? c->train.selfplay_parallel
                                       : c->search.parallel,
              c->net.heartbeat_ms, c->net.lease_ms);
  int rc;
  for (;;) {
    if (!w->joined && (rc = join(w, err)) != 0) break;
    pb_msg_t m;
    if ((rc = ask(w, &m, err)) == W_REJOIN) {
      w->joined = 0;
      if ((rc = back_off(w, "run rejected", err)) != 0) break;
      continue;
    }
    if (rc != 0) break;
    const pb_msg_work_item_t *it = &m.work_item;
    pb_log_debug(w->log, "item %" PRIu64 ": %s, lease %u ms", it->item_id,
                 it->kind == PB_WORK_SELFPLAY ? "selfplay" : "search",
                 it->lease_ms);
    /* heartbeats name it from now on, weights fetch too */
    pb__worker_begin_item(w, it);
    rc = it->kind == PB_WORK_SELFPLAY ? pb__worker_do_selfplay(w, it, err)
                                      : pb__worker_do_search(w, it, err);
    w->busy = 0;
    pb_msg_free(&m);
    if (rc == W_REJOIN || rc == W_DROP) {
      /* An item it could not do: again at once would likely fail again. */
      w->st.dropped++;
      if (rc == W_REJOIN) w->joined = 0;
      if ((rc = back_off(w, "item dropped", err)) != 0) break;
      continue;
    }
    if (rc != 0) break;
    worked(w);
  }
  w->busy = 0;
  const pb_worker_stats_t *s = &w->st;
  if (rc == W_STOP) {
    const char *why = w->stopping ? "the learner is stopping" : "signal";
    say_bye(w, why);
    pb_log_info(w->log,
                "shutting down (%s): %" PRIu64 " items done, %" PRIu64
                " dropped, %" PRIu64 " episodes, %" PRIu64
                " positions, %" PRIu64 " states, %" PRIu64 " resends, %" PRIu64
                " bad messages",
                why, s->items, s->dropped, s->episodes, s->positions, s->states,
                s->resends, s->bad_msgs);
    return 0;
  }
  char reason[PB_MSG_TEXT_MAX + 1];
  snprintf(reason, sizeof reason, "error: %.*s", PB_MSG_TEXT_MAX - 8,
           err && err->msg[0] ? err->msg : pb_strerror(rc));
  say_bye(w, reason);
  return rc < 0 ? rc : PB_EPROTO;
}
