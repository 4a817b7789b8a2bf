/* learner.c - the learner's loop. See learner.h; the protocol is in
 * docs/protocol.md.
 *
 * State machine of one iteration (phase):
 *   SELFPLAY  items handed to actors; when all are in -> job
 *             PREPARE_SEARCH (job TRAIN when the algorithm does not search)
 *   PREPARE_SEARCH  thread pool: what trains before the search (PROBS:
 *             V), find the distinct positions -> SEARCH
 *   SEARCH    items handed to searchers; a share of each result's
 *             positions is searched again by the learner (the spot check,
 *             a second pool job running beside the search) and a searcher
 *             whose results disagree is quarantined, its items re-queued;
 *             when all are in and checked -> job TRAIN
 *   TRAIN     thread pool: the rest of the training (PROBS: Q),
 *             checkpoint -> next SELFPLAY or DONE
 * Self-play items live in their own queue (spq), search items in wq. With
 * train.pipeline (and train.max_staleness >= 1), the next iteration's
 * self-play items are handed out as soon as this iteration's episodes are
 * in: actors play with the Q version they have while V trains, the
 * searchers search and Q trains; an episode is taken when its Q version
 * lags the version being trained by at most train.max_staleness.
 * While a job runs, the learner object's networks belong to the job; the
 * loop thread touches only the weights buffers it serves, which the job
 * hands over in its completion callback.
 *
 * Where each part lives (state.h, private to learner/, holds the learner
 * object and the pb__ functions the files share; each file uses only the
 * ones listed before it there):
 *   learner.c  main() (main.c) -> pb_learner_new (lock_run_dir,
 *              pb__open_sockets, open_loop: every socket is bound before
 *              any file of the run but the lock is made; then
 *              open_run_dir, open_trainer (pb__iter_init), pb__spot_init,
 *              pb__selfcheck_init, pb__selfref_init, write_endpoints;
 *              a failure takes back what this start made),
 *              then pb_learner_run: starts the handles and the first phase
 *              (pb__iterations_begin), then uv_run, whose turns call
 *                pb__on_zpoll (peers.c) when the ROUTER is readable;
 *                on_tick (100 ms): pb__drain, expire leases (trust.c), the DONE
 *                  announcements, pb__log_progress, pb__selfref_kick,
 *                  pb__trust_long_lease,
 *                  pb__check_starved (phases.c), pb__zap_tick;
 *                on_signal: stop after the running job (pb__shutdown_loop);
 *                the jobs' and the HTTP server's callbacks;
 *              pb_learner_destroy.
 *   peers.c    what workers send: pb__on_zpoll / on_zidle -> pb__drain ->
 *              handle() (decode, pb__refused) -> on_hello, on_work_request,
 *              on_selfplay_result, on_search_result, on_weights_request,
 *              on_heartbeat, on_bye.
 *   intake.c   on_selfplay_result / on_search_result -> pb__intake_*: the
 *              lease, the checks (itemcheck.h, then selfcheck.c or
 *              spot.c), the iteration's store.
 *   spot.c     the spot check: pb__spot_sample, pb__spot_kick ->
 *              spot_work / spot_done -> quarantine; pb__refused.
 *   selfcheck.c  pb__intake_selfplay -> pb__selfcheck_item: the surprise
 *              of a result's moves, its outcomes beside the reference
 *              games, the pool of new identities -> quarantine of its
 *              actor, or its item dropped.
 *   selfref.c  on_tick, on_work_request -> pb__selfref_kick -> the
 *              reference games on the pool -> done ->
 *              pb__selfcheck_reference, pb__selfplay_done.
 *   azcheck.c  pb__intake_selfplay -> pb__azcheck_item: AlphaZero's moves
 *              against their rows, a share re-searched -> quarantine.
 *   trust.c    leases: on_tick's expiries -> pb__trust_expired (one
 *              item at a time, none, quarantine); on_work_request asks
 *              pb__trust_allows; pb__trust_admit limits new connections
 *              per address; the table of keys and addresses.
 *   phases.c   the phases and jobs: pb__start_selfplay, pb__selfplay_done
 *              -> job PREPARE_SEARCH -> start_search -> pb__search_maybe_done
 *              -> job TRAIN (checkpoint) -> next iteration or DONE;
 *              job_work on the pool, job_done back on the loop.
 *   replaydrop.c  the replay window's tags: pb__rdrop_selfplay
 *              (pb__selfplay_done), pb__rdrop_train (job TRAIN), and what
 *              a quarantine (pb__rdrop_peer, pb__rdrop_key) or the pooled
 *              lean test (pb__rdrop_lean) condemns leaves the window, at
 *              once or at the job's end (pb__rdrop_job_done).
 *   status.c   pb__on_http (/status, /metrics, else common/web/web.h),
 *              pb__log_progress, pb__write_iteration_metrics (the log's
 *              iteration summary and metrics.jsonl).
 *   sockets.c  pb__open_sockets (ROUTER, PUB, CURVE), the table of peers,
 *              every message the learner sends (replies, pb__reject,
 *              pb__announce on the PUB).
 *   state.c    pb__set_fatal, pb__shutdown_loop, phase names, who is
 *              alive. */
#include "learner.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#include <zmq.h>

#include "ckpt.h"
#include "precision.h"
#include "state.h"
#include "rundir.h"

_Static_assert(PB_RUNDIR_RUN_ID_MAX <= PB_MSG_ID_MAX,
               "a run id travels in Hello and HelloReply");

/* ---- the loop's turn -------------------------------------------------- */

static void on_expire(void *ctx, size_t index, uint32_t worker) {
  pb__trust_expired(ctx, "search", index, worker);
}

static void on_expire_sp(void *ctx, size_t index, uint32_t worker) {
  pb__trust_expired(ctx, "selfplay", index, worker);
}

static void on_tick(uv_timer_t *h) {
  pb_learner_t *l = h->data;
  pb__drain(l);
  double t = now(l);
  if (l->it.phase == PH_SEARCH) pb_workq_expire(l->it.wq, t, on_expire, l);
  if (pb_iter_selfplay_iter(l->it.iter) != 0)
    pb_workq_expire(l->it.spq, t, on_expire_sp, l);
  if (l->it.phase == PH_DONE) {
    /* Repeat the stop announcement for a second (PUB drops to peers that
     * are reconnecting), then leave. */
    pb__announce(l);
    if (t - l->it.done_at > 1.0) pb__shutdown_loop(l);
    return;
  }
  pb__log_progress(l, t);
  pb__selfref_kick(l);
  pb__trust_long_lease(l, t);
  pb__check_starved(l, t);
  pb__zap_tick(l);
}

static void on_signal(uv_signal_t *h, int signum) {
  pb_learner_t *l = h->data;
  if (l->stopping) return;
  l->stopping = 1;
  pb_log_info(l->log, "%s: stopping (%s)", signum == SIGINT ? "SIGINT" : "SIGTERM",
              l->it.job_kind ? "finishing the running training step first"
                          : "the current phase is abandoned; --resume repeats it");
  if (l->it.job_kind == 0) pb__shutdown_loop(l);
}

/* ---- lifecycle -------------------------------------------------------- */

static void note_info(void *ctx, const char *msg) {
  pb_log_info((pb_log_t *)ctx, "%s", msg);
}

static void note_warn(void *ctx, const char *msg) {
  pb_log_warn((pb_log_t *)ctx, "%s", msg);
}

/* Size of run_dir/name, or -1 if it does not exist. */
static long long file_size(const char *run_dir, const char *name) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", run_dir, name);
  struct stat st;
  return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* A resume found no checkpoint. A run dir without history starts from
 * scratch; one with history (metrics.jsonl or elo.csv) lost its
 * checkpoints: an error, unless PB_LEARNER_RESTART says to start over, in
 * which case the history is moved aside (NAME.before-restart-UNIXTIME), not
 * deleted. */
static int start_over(const char *run_dir, int flags, pb_log_t *log,
                      pb_err_t *err) {
  static const char *const hist[] = {"metrics.jsonl", "elo.csv"};
  int has = 0;
  for (int i = 0; i < 2; i++) has |= file_size(run_dir, hist[i]) > 0;
  if (!has) {
    pb_log_info(log, "no checkpoint in %s/checkpoints yet: starting from "
                "scratch", run_dir);
    return 0;
  }
  if (!(flags & PB_LEARNER_RESTART))
    return pb_err_set(err, PB_ENOTFOUND,
                      "%s has the history of a run (metrics.jsonl, elo.csv) "
                      "but no readable checkpoint in checkpoints/: not "
                      "starting over on top of it (--restart starts over, "
                      "moving that history aside)",
                      run_dir);
  long now = (long)time(NULL);
  for (int i = 0; i < 2; i++) {
    if (file_size(run_dir, hist[i]) < 0) continue;
    char from[4200], to[4300];
    snprintf(from, sizeof from, "%s/%s", run_dir, hist[i]);
    snprintf(to, sizeof to, "%s.before-restart-%ld", from, now);
    if (rename(from, to) != 0)
      return pb_err_set(err, PB_EIO, "%s: cannot move aside: %s", from,
                        strerror(errno));
    pb_log_warn(log, "--restart: no readable checkpoint; %s moved to %s",
                from, to);
  }
  return 0;
}

/* Takes RUN_DIR/learner.lock: one learner per run dir. The first file of
 * the run a start makes (noted for pb_rundir_undo_run). 0, or a PB_E*
 * code with err filled. */
static int lock_run_dir(pb_learner_t *l, pb_err_t *err) {
  char path[PB_RUNDIR_PATH_MAX];
  if (pb_rundir_path(l->cfg.run.dir, PB_RUNDIR_LEARNER_LOCK, path,
                     sizeof path) == 0)
    pb_rundir_undo_note(&l->undo, path);
  if ((l->lock_fd = pb_rundir_lock_learner(l->cfg.run.dir, err)) < 0) {
    l->lock_fd = -1;
    return err && err->code ? err->code : PB_EIO;
  }
  return 0;
}

/* Opens RUN_DIR: makes checkpoints/, removes the leftovers of cut-short
 * checkpoint writes, and with RESUME or RESTART puts the newest intact
 * checkpoint's path in latest ("" when there is none; see start_over).
 * 0, or a PB_E* code with err filled. */
static int open_run_dir(pb_learner_t *l, int flags, char *latest, size_t cap,
                        pb_err_t *err) {
  const pb_config_t *cfg = &l->cfg;
  pb_log_t *log = l->log;
  char path[4200];
  snprintf(path, sizeof path, "%s/checkpoints", cfg->run.dir);
  if (pb_rundir_undo_mkdir(&l->undo, path, err) != 0) goto fail;
  /* Leftovers of a checkpoint write that a crash cut short. */
  if (pb_ckpt_clean_tmp(path, time(NULL), note_info, log, err) < 0)
    goto fail;
  if (flags & (PB_LEARNER_RESUME | PB_LEARNER_RESTART)) {
    int rc = pb_ckpt_scan(path, "ckpt", latest, cap, NULL, note_warn, log, err);
    if (rc == PB_ENOTFOUND) {
      latest[0] = '\0';
      if (start_over(cfg->run.dir, flags, log, err) != 0) goto fail;
    } else if (rc != 0) {
      goto fail;
    }
  }
  return 0;
fail:
  return err && err->code ? err->code : PB_EIO;
}

/* Opens metrics.jsonl and the trainer (loaded from latest unless it is
 * ""), writes version 0's checkpoint when starting from scratch,
 * config.yaml and run-id, and makes the weights buffers served first; each
 * file it creates is noted in l->undo. 0, or a PB_E* code with err filled. */
static int open_trainer(pb_learner_t *l, const char *latest, pb_err_t *err) {
  const pb_config_t *cfg = &l->cfg;
  pb_log_t *log = l->log;
  char path[4200];
  snprintf(path, sizeof path, "%s/metrics.jsonl", cfg->run.dir);
  pb_rundir_undo_note(&l->undo, path);
  if ((l->metrics = pb_metrics_new(path, err)) == NULL ||
      pb_metrics_set_async(l->metrics, PB_LEARNER_SPOOL_BYTES, err) != 0)
    goto fail;
  if (pb__selfrec_open(l, err) != 0) goto fail;
  if ((l->learn = pb_learn_new(cfg, err)) == NULL || pb__iter_init(l, err) != 0)
    goto fail;
  if (latest[0] != '\0') {
    if (pb_learn_load(l->learn, latest, NULL, NULL, err) != 0) goto fail;
    pb_log_info(log, "resumed from %s: version %" PRIu64, latest,
                pb_learn_version(l->learn));
  }
  if (pb_learn_version(l->learn) == 0) {
    pb_rundir_ckpt_path(cfg->run.dir, 0, path, sizeof path);
    pb_rundir_undo_note(&l->undo, path);
    if (pb_learn_save(l->learn, path, NULL, 0, err) != 0) goto fail;
  }
  if (pb_config_to_yaml(cfg, &l->config_yaml, err) != 0) goto fail;
  snprintf(path, sizeof path, "%s/config.yaml", cfg->run.dir);
  pb_rundir_undo_note(&l->undo, path);
  if (pb_write_file(path, l->config_yaml, strlen(l->config_yaml), err) != 0)
    goto fail;
  {
    char id[PB_RUNDIR_RUN_ID_MAX + 2];
    int n = snprintf(id, sizeof id, "%s\n", l->start_id);
    pb_rundir_path(cfg->run.dir, PB_RUNDIR_RUN_ID, path, sizeof path);
    pb_rundir_undo_note(&l->undo, path);
    if (pb_write_file(path, id, (size_t)n, err) != 0) goto fail;
  }
  if (pb__weights_serve_learned(l, err) != 0) goto fail;
  return 0;
fail:
  return err && err->code ? err->code : PB_EIO;
}

/* Makes the loop and its handles (ZeroMQ poll, idle, tick, signals), and
 * unless net.http_port is 0 the HTTP server (-1: on a port the kernel
 * picks) and the web page. 0, or a PB_E* code with err filled. */
static int open_loop(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *cfg = &l->cfg;
  if (uv_loop_init(&l->loop) != 0) {
    pb_err_set(err, PB_EIO, "cannot create the event loop");
    goto fail;
  }
  l->loop_inited = 1;
  int fd;
  size_t fdl = sizeof fd;
  zmq_getsockopt(l->net.router, ZMQ_FD, &fd, &fdl);
  uv_poll_init(&l->loop, &l->zpoll, fd);
  uv_idle_init(&l->loop, &l->zidle);
  uv_timer_init(&l->loop, &l->tick);
  uv_signal_init(&l->loop, &l->sigint);
  uv_signal_init(&l->loop, &l->sigterm);
  l->zpoll.data = l->zidle.data = l->tick.data = l;
  l->sigint.data = l->sigterm.data = l;
  l->handles_open = 1;
  if (cfg->net.http_port != 0) {
    l->http = pb_http_new(&l->loop, cfg->net.http_bind,
                          cfg->net.http_port > 0 ? cfg->net.http_port : 0,
                          pb__on_http, l, err);
    if (l->http == NULL) goto fail;
    l->http_port = pb_http_port(l->http);
    if ((l->web = pb_web_new(cfg, err)) == NULL) goto fail;
  }
  return 0;
fail:
  return err && err->code ? err->code : PB_EIO;
}

/* Writes RUN_DIR/endpoints (atomically): what the learner bound, as the
 * --set values a worker or a test needs, a '*' port resolved. Removed by
 * pb_learner_destroy. 0, or a PB_E* code with err filled. */
static int write_endpoints(pb_learner_t *l, pb_err_t *err) {
  char path[PB_RUNDIR_PATH_MAX], text[2 * sizeof l->net.work_ep + 96];
  if (pb_rundir_path(l->cfg.run.dir, PB_RUNDIR_ENDPOINTS, path,
                     sizeof path) != 0)
    return pb_err_set(err, PB_EINVAL, "%.200s: run directory path too long",
                      l->cfg.run.dir);
  int n = snprintf(text, sizeof text,
                   "net.work_endpoint=%s\nnet.pub_endpoint=%s\n"
                   "net.http_port=%d\n",
                   l->net.work_ep, l->net.pub_ep, l->http_port);
  if (pb_write_file(path, text, (size_t)n, err) != 0)
    return err && err->code ? err->code : PB_EIO;
  l->endpoints_written = 1;
  return 0;
}

pb_learner_t *pb_learner_new(const pb_config_t *cfg, int flags,
                             const char *run_id, pb_log_t *log, pb_err_t *err) {
  pb_learner_t *l = calloc(1, sizeof *l);
  if (l == NULL) {
    pb_err_set(err, PB_ENOMEM, "learner: out of memory");
    return NULL;
  }
  l->cfg = *cfg;
  l->log = log;
  l->lock_fd = -1;
  l->t_start = pb_now();
  pb_rundir_undo_init(&l->undo);
  if (pb_config_check(cfg, err) != 0) goto fail;
  l->g = pb_game_by_name(cfg->game);
  snprintf(l->run_id, sizeof l->run_id, "%s", cfg->run.name);
  if (run_id != NULL) {
    if (pb_rundir_run_id_check(cfg->run.name, run_id, err) != 0) goto fail;
    snprintf(l->start_id, sizeof l->start_id, "%s", run_id);
  } else if (pb_rundir_new_run_id(cfg->run.name, l->start_id,
                                  sizeof l->start_id, err) != 0) {
    goto fail;
  }
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  snprintf(l->sender, sizeof l->sender, "learner-%.40s-%ld", host,
           (long)getpid());

  /* The sockets first: a port in use fails the start before it has made
   * any file of the run but the lock. */
  char latest[4200] = "";
  if (lock_run_dir(l, err) != 0 || pb__open_sockets(l, err) != 0 ||
      open_loop(l, err) != 0 ||
      open_run_dir(l, flags, latest, sizeof latest, err) != 0 ||
      open_trainer(l, latest, err) != 0 || pb__spot_init(l, err) != 0 ||
      pb__selfcheck_init(l, err) != 0 || pb__selfref_init(l, err) != 0 ||
      pb__azcheck_init(l, err) != 0 ||
      write_endpoints(l, err) != 0)
    goto fail;
  pb_rundir_undo_init(&l->undo); /* started: what it made stays */
  return l;
fail:
  /* Before the lock is let go (pb_learner_destroy closes it). */
  pb_rundir_undo_run(&l->undo, l->log);
  pb_learner_destroy(&l);
  return NULL;
}

int pb_learner_run(pb_learner_t *l, pb_err_t *err) {
  uv_poll_start(&l->zpoll, UV_READABLE, pb__on_zpoll);
  uv_timer_start(&l->tick, on_tick, 100, 100);
  uv_signal_start(&l->sigint, on_signal, SIGINT);
  uv_signal_start(&l->sigterm, on_signal, SIGTERM);
  const pb_algo_t *algo = pb_iter_algo(l->it.iter);
  pb_log_info(l->log,
              "learner %s: run '%s', game %s, algorithm %s, version %" PRIu64
              " of %d, work %s, announcements %s, http %d, %s of %ld + %ld "
              "params on %s, precision %s",
              l->sender, l->run_id, l->g->name, algo->data->name,
              pb_learn_version(l->learn), l->cfg.train.iterations,
              l->net.work_ep, l->net.pub_ep, l->http_port, algo->data->model,
              pb_learn_v(l->learn) ? pb_nn_param_count(pb_learn_v(l->learn))
                                   : 0L,
              pb_nn_param_count(pb_learn_q(l->learn)),
              pb_nn_device(pb_learn_q(l->learn)),
              pb_learn_precision(l->learn));
  if (pb_learn_batch(l->learn)[0] != '\0')
    pb_log_info(l->log, "%s", pb_learn_batch(l->learn));
  pb_log_info(l->log,
              "run id %s (%s/" PB_RUNDIR_RUN_ID
              "): a worker given another one is refused",
              l->start_id, l->cfg.run.dir);
  pb__iterations_begin(l);
  uv_run(&l->loop, UV_RUN_DEFAULT);
  if (l->fatal) {
    /* The loop was stopped with handles open: close them and let the
     * running job, if any, finish before freeing. */
    pb__shutdown_loop(l);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    if (err) *err = l->fatal_err;
    return l->fatal_err.code ? l->fatal_err.code : PB_EIO;
  }
  pb_log_info(l->log, "learner stopped at version %" PRIu64,
              pb_learn_version(l->learn));
  return 0;
}

void pb_learner_destroy(pb_learner_t **pl) {
  if (pl == NULL || *pl == NULL) return;
  pb_learner_t *l = *pl;
  if (l->handles_open) {
    pb__shutdown_loop(l);
    uv_run(&l->loop, UV_RUN_DEFAULT);
  }
  if (l->loop_inited) uv_loop_close(&l->loop);
  if (l->endpoints_written) {
    char path[PB_RUNDIR_PATH_MAX];
    if (pb_rundir_path(l->cfg.run.dir, PB_RUNDIR_ENDPOINTS, path,
                       sizeof path) == 0)
      unlink(path);
  }
  if (l->lock_fd >= 0) close(l->lock_fd);
  pb__close_sockets(l);
  free(l->config_yaml);
  pb__iter_free(l);
  pb_learn_destroy(&l->learn);
  pb__spot_free(l);
  pb__owners_free(l);
  pb__selfcheck_free(l);
  pb__rdrop_free(l);
  pb__selfref_free(l);
  pb__azcheck_free(l);
  pb_metrics_destroy(&l->metrics);
  pb__selfrec_close(l);
  pb_web_destroy(&l->web);
  free(l);
  *pl = NULL;
}
