/* status.c - what the learner tells people: the summary of each
 * iteration (a log line and a metrics.jsonl line), the progress log every
 * 5 s of self-play or search, and the HTTP side: GET /status (JSON),
 * GET /metrics (Prometheus text), everything else to common/web/web.h. All of it
 * runs on the loop thread. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elotable.h"
#include "json.h"
#include "state.h"

/* ---- metrics.jsonl and the progress log ------------------------------- */

/* The largest z of the self-play check (selfcheck.c) among the actors
 * connected now whose moves were scored; 0 when none. */
static double play_z_max(const pb_learner_t *l) {
  double z = 0.0;
  int any = 0;
  for (int i = 0; i < l->net.max_peers; i++) {
    const peer_t *p = &l->net.peers[i];
    if (!p->used || p->play.moves == 0) continue;
    const double pz = pb_play_z(&p->play);
    if (!any || pz > z) z = pz;
    any = 1;
  }
  return z;
}

/* Backup copies over both queues (self-play and search), since start. */
static void backups(const pb_learner_t *l, uint64_t *copies, uint64_t *won,
                    uint64_t *dropped) {
  pb_workq_counts_t a, b;
  pb_workq_counts(l->it.wq, &a);
  pb_workq_counts(l->it.spq, &b);
  *copies = a.copies + b.copies;
  *won = a.copies_won + b.copies_won;
  *dropped = a.copies_dropped + b.copies_dropped;
}

void pb__write_iteration_metrics(pb_learner_t *l) {
  const uint64_t v = pb_learn_version(l->learn);
  double total = now(l) - l->it.t_iter;
  l->status.last_iter_s = total;
  l->status.last_v_loss = pb_iter_stats_v(l->it.iter)->loss_mean;
  l->status.last_q_loss = pb_iter_stats_q(l->it.iter)->loss_mean;
  const pb_iter_times_t t = {l->it.t_selfplay, l->it.t_search, l->it.job_ckpt_s, total};
  const pb_episodes_t *e = pb_iter_episodes(l->it.iter);
  char what[512];
  pb_iter_describe(l->it.iter, &t, what, sizeof what);
  pb_log_info(l->log,
              "iteration %" PRIu64
              " done: %zu episodes, %zu positions | selfplay %.2fs, %s, "
              "checkpoint %.2fs | total %.2fs | workers %d",
              v, e->n_eps, e->n_states, l->it.t_selfplay, what, l->it.job_ckpt_s,
              total, pb__workers_alive(l, 0));
  pb_json_t j;
  pb_json_init(&j);
  pb_iter_report(l->it.iter, "distributed", &t, &j);
  pb_json_kint(&j, "actors", pb__workers_alive(l, PB_ROLE_ACTOR));
  pb_json_kint(&j, "searchers", pb__workers_alive(l, PB_ROLE_SEARCHER));
  pb_json_kuint(&j, "leases_expired", l->lease.expired);
  pb_json_kuint(&j, "results_duplicate", l->intake.results_dup);
  {
    uint64_t copies, won, dropped;
    backups(l, &copies, &won, &dropped);
    pb_json_kuint(&j, "backups", copies);
    pb_json_kuint(&j, "backups_won", won);
    pb_json_kuint(&j, "backup_results_dropped", dropped);
  }
  pb_json_kuint(&j, "messages_dropped", l->intake.msgs_bad + l->intake.msgs_mismatch);
  pb_json_kbool(&j, "pipeline", pb__pipelined(l) != 0);
  pb_json_kuint(&j, "staleness_max", pb_iter_staleness(l->it.iter));
  pb_json_kuint(&j, "spot_checked", l->spot.checked);
  pb_json_kuint(&j, "selfplay_moves_scored", l->play.moves);
  pb_json_kdouble(&j, "selfplay_z_max", play_z_max(l));
  pb_json_kuint(&j, "spot_disagree", l->spot.disagree);
  pb_json_kuint(&j, "searchers_quarantined", l->quar.quarantined);
  pb_json_kuint(&j, "search_items_thrown", l->spot.items_thrown);
  pb_json_kuint(&j, "results_not_holder", l->intake.results_not_holder);
  pb_json_kuint(&j, "results_refused", l->intake.results_bad);
  pb_json_obj_end(&j);
  if (pb_json_cstr(&j)) pb_metrics_write(l->metrics, pb_json_cstr(&j));
  pb_json_free(&j);
}

/* The queue of the phase the learner waits in. */
static pb_workq_t *phase_queue(const pb_learner_t *l) {
  return l->it.phase == PH_SELFPLAY ? l->it.spq : l->it.wq;
}

/* The same, as a metrics.jsonl line for the terminal of probs train
 * (cli/progress.h): items done, the phase's rate and its ETA. */
static void progress_event(pb_learner_t *l, double t,
                           const pb_workq_counts_t *c) {
  const int sp = l->it.phase == PH_SELFPLAY;
  const double secs = t - l->it.t_phase;
  /* episodes or states done: whole items, the last one may be smaller */
  const size_t per = sp ? (size_t)l->cfg.net.item_episodes
                        : (size_t)l->cfg.net.item_states;
  const size_t all = sp ? (size_t)l->cfg.train.episodes_per_iter
                        : pb_iter_search_positions(l->it.iter);
  size_t units = c->done * per;
  if (units > all) units = all;
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "event", "progress");
  pb_json_kuint(&j, "iteration", pb_learn_version(l->learn) + 1);
  pb_json_kstr(&j, "phase", sp ? "self-play" : "search");
  pb_json_kuint(&j, "done", c->done);
  pb_json_kuint(&j, "total", c->total);
  pb_json_kuint(&j, "units", units);
  pb_json_kstr(&j, "unit", sp ? "episodes" : "states");
  pb_json_kdouble(&j, "seconds", secs);
  if (c->done > 0 && c->done <= c->total)
    pb_json_kdouble(&j, "eta_s", secs * (double)(c->total - c->done) /
                                     (double)c->done);
  pb_json_obj_end(&j);
  if (pb_json_cstr(&j)) pb_metrics_write(l->metrics, pb_json_cstr(&j));
  pb_json_free(&j);
}

void pb__log_progress(pb_learner_t *l, double t) {
  if (t - l->status.last_progress >= 5.0 &&
      (l->it.phase == PH_SELFPLAY || l->it.phase == PH_SEARCH)) {
    l->status.last_progress = t;
    pb_workq_counts_t c;
    pb_workq_counts(phase_queue(l), &c);
    pb_log_info(l->log,
                "iteration %" PRIu64 " %s: %zu/%zu items done, %zu leased; "
                "%d actors, %d searchers",
                pb_learn_version(l->learn) + 1, pb__phase_name(l->it.phase),
                c.done, c.total, c.leased, pb__workers_alive(l, PB_ROLE_ACTOR),
                pb__workers_alive(l, PB_ROLE_SEARCHER));
    /* On the terminal only for a phase that lasts: not every 5-s tick. */
    if (t - l->it.t_phase >= 4.5) progress_event(l, t, &c);
  }
}

/* ---- HTTP: /status and /metrics --------------------------------------- */

static long rss_kb(void) {
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The connections alive at each trust level (TRUST_*; quarantined ones
 * of any reason at TRUST_OUT). */
static void trust_levels(pb_learner_t *l, int lv[4]) {
  lv[0] = lv[1] = lv[2] = lv[3] = 0;
  for (int i = 0; i < l->net.max_peers; i++)
    if (l->net.peers[i].used) lv[pb__trust_level(l, &l->net.peers[i])]++;
}

/* How long the checkpoint write in progress has run (0: none runs). */
static double ckpt_writing(pb_learner_t *l) {
  const double since = atomic_load(&l->it.ckpt_since);
  return since > 0 ? pb_now() - since : 0;
}

/* The longest wait for the disk now in progress: a write(2) of the log's,
 * the metrics' or the self-play records' writer thread, or the
 * checkpoint write of the job on the pool (files written, fsync'd,
 * renamed: a frozen file system holds it). */
static double disk_stalled(pb_learner_t *l) {
  double d = pb_log_stalled(l->log), x = pb_metrics_stalled(l->metrics);
  if (x > d) d = x;
  if (l->rec.out != NULL && (x = pb_metrics_stalled(l->rec.out)) > d) d = x;
  if ((x = ckpt_writing(l)) > d) d = x;
  return d;
}

static char *status_json(pb_learner_t *l) {
  pb_workq_counts_t c;
  pb_workq_counts(phase_queue(l), &c);
  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "run", l->run_id);
  pb_json_kstr(&j, "run_id", l->start_id);
  pb_json_kstr(&j, "game", l->g->name);
  pb_json_kuint(&j, "version", pb_learn_version(l->learn));
  pb_json_kuint(&j, "iteration", pb_learn_version(l->learn) +
                                     (l->it.phase == PH_DONE ? 0 : 1));
  pb_json_kint(&j, "iterations", l->cfg.train.iterations);
  pb_json_kstr(&j, "phase", pb__phase_name(l->it.phase));
  pb_json_kbool(&j, "stopping", l->stopping != 0);
  pb_json_key(&j, "workers");
  pb_json_obj_begin(&j);
  pb_json_kint(&j, "actors", pb__workers_alive(l, PB_ROLE_ACTOR));
  pb_json_kint(&j, "searchers", pb__workers_alive(l, PB_ROLE_SEARCHER));
  pb_json_kint(&j, "refused", pb__workers_alive(l, 0) - pb__workers_usable(l, 0));
  pb_json_obj_end(&j);
  if (l->it.starved_since > 0) {
    /* No worker the phase needs: the run stops at no_workers_exit_s. */
    pb_json_key(&j, "waiting_for_workers");
    pb_json_obj_begin(&j);
    pb_json_kstr(&j, "role", l->it.phase == PH_SELFPLAY ? "actor" : "searcher");
    pb_json_kdouble(&j, "seconds", now(l) - l->it.starved_since);
    pb_json_kint(&j, "exit_after_s", l->cfg.net.no_workers_exit_s);
    pb_json_obj_end(&j);
  }
  pb_json_key(&j, "queue");
  pb_json_obj_begin(&j);
  pb_json_kuint(&j, "total", c.total);
  pb_json_kuint(&j, "pending", c.pending);
  pb_json_kuint(&j, "leased", c.leased);
  pb_json_kuint(&j, "done", c.done);
  pb_json_kdouble(&j, "phase_s", now(l) - l->it.t_phase); /* its age */
  pb_json_obj_end(&j);
  {
    /* The longest lease of the phase, and the backup copies of
     * stragglers' items (peers.c): leased, taken, dropped as late. */
    pb_workq_t *q = phase_queue(l);
    size_t idx = 0;
    uint32_t holder = 0;
    const double age = pb_workq_oldest(q, now(l), &idx, &holder);
    const peer_t *h = age > 0 ? pb__peer_by_serial(l, holder) : NULL;
    uint64_t copies, won, dropped;
    backups(l, &copies, &won, &dropped);
    pb_json_key(&j, "leases");
    pb_json_obj_begin(&j);
    pb_json_kdouble(&j, "longest_s", age);
    if (age > 0) {
      pb_json_kuint(&j, "longest_item", idx);
      pb_json_kstr(&j, "longest_holder",
                   h != NULL && h->sender[0] ? h->sender : "?");
    }
    pb_json_kdouble(&j, "backup_after_s",
                    pb_workq_backup_after(q, l->cfg.net.lease_ms / 1000.0));
    pb_json_kuint(&j, "backups", copies);
    pb_json_kuint(&j, "backups_won", won);
    pb_json_kuint(&j, "backup_results_dropped", dropped);
    pb_json_obj_end(&j);
  }
  pb_json_kuint(&j, "positions_ingested", l->intake.positions_in);
  pb_json_kuint(&j, "messages", l->intake.msgs_in);
  pb_json_kuint(&j, "messages_dropped", l->intake.msgs_bad + l->intake.msgs_mismatch);
  pb_json_kuint(&j, "leases_expired", l->lease.expired);
  pb_json_kuint(&j, "results_not_holder", l->intake.results_not_holder);
  pb_json_kuint(&j, "results_refused", l->intake.results_bad);
  pb_json_key(&j, "spot_check");
  pb_json_obj_begin(&j);
  pb_json_kdouble(&j, "share", l->cfg.net.spot_check);
  pb_json_kuint(&j, "checked", l->spot.checked);
  pb_json_kuint(&j, "disagree", l->spot.disagree);
  pb_json_kuint(&j, "quarantined", l->quar.quarantined);
  pb_json_kuint(&j, "items_thrown", l->spot.items_thrown);
  /* Probation and the pooled lean test (spot.c). */
  pb_json_kuint(&j, "probation_checked", l->spot.probation_checks);
  pb_json_kint(&j, "pool_leans", l->spot.pool_sign);
  pb_json_kuint(&j, "pool_fired", l->spot.pool_fired);
  pb_json_kuint(&j, "pool_items_thrown", l->spot.pool_thrown);
  /* Positions of earlier iterations that left the replay window
   * (replaydrop.c). */
  pb_json_kuint(&j, "replay_dropped", l->rdrop.dropped[0]);
  pb_json_obj_end(&j);
  /* The surprise of self-play moves (selfcheck.c). */
  pb_json_key(&j, "selfplay_check");
  pb_json_obj_begin(&j);
  pb_json_kdouble(&j, "share", l->play.q ? l->cfg.net.selfplay_check : 0.0);
  pb_json_kuint(&j, "episodes", l->play.episodes);
  pb_json_kuint(&j, "moves", l->play.moves);
  pb_json_kuint(&j, "quarantined", l->quar.play_quarantined);
  pb_json_kuint(&j, "items_dropped", l->own.selfplay_dropped);
  pb_json_kuint(&j, "replay_dropped", l->rdrop.dropped[1]);
  pb_json_kuint(&j, "outcome_quarantined", l->play.out_quarantined);
  /* The learner's reference games (selfref.c) and the pool of new
   * identities (selfcheck.c). */
  pb_json_kint(&j, "reference_per_version",
               l->ref.on ? l->cfg.net.selfplay_reference : 0);
  pb_json_kuint(&j, "reference_versions", l->ref.jobs);
  pb_json_kuint(&j, "reference_episodes", l->ref.episodes);
  pb_json_kdouble(&j, "reference_busy_s", l->ref.busy_s);
  pb_json_kdouble(&j, "reference_waited_s", l->ref.waited_s);
  pb_json_kuint(&j, "reference_late_episodes", l->play.pool.late);
  pb_json_kuint(&j, "pool_fired", l->play.pool.fired);
  pb_json_kuint(&j, "pool_items_dropped", l->play.pool.dropped);
  pb_json_kdouble(&j, "z_max", play_z_max(l));
  pb__azcheck_status(l, &j);
  pb_json_obj_end(&j);
  /* What the workers' leases earned them (trust.c): the connections at
   * each level now, and the refusals. */
  int lv[4];
  trust_levels(l, lv);
  pb_json_key(&j, "trust");
  pb_json_obj_begin(&j);
  pb_json_kint(&j, "one_item", lv[TRUST_ONE]);
  pb_json_kint(&j, "no_item", lv[TRUST_NONE]);
  pb_json_kuint(&j, "quarantined", l->quar.lease_quarantined);
  pb_json_kuint(&j, "connections_limited", l->lease.conns_limited);
  pb_json_kuint(&j, "peers_table_full", l->intake.peers_full);
  pb_json_obj_end(&j);
  /* The log's and metrics' writer threads: how long the one waiting
   * longest for the disk has waited (0: none), and what they dropped. */
  pb_json_key(&j, "disk");
  pb_json_obj_begin(&j);
  pb_json_kdouble(&j, "stalled_s", disk_stalled(l));
  pb_json_kdouble(&j, "checkpoint_write_s", ckpt_writing(l));
  pb_json_kuint(&j, "log_lines_dropped", pb_log_dropped(l->log));
  pb_json_kuint(&j, "metrics_lines_dropped", pb_metrics_dropped(l->metrics));
  pb_json_obj_end(&j);
  pb_json_kdouble(&j, "uptime_s", now(l) - l->t_start);
  pb_json_kint(&j, "rss_kb", rss_kb());
  pb_json_kint(&j, "protocol_version", PB_PROTOCOL_VERSION);
  /* Where the networks run: the learner's own, and what the workers'
   * config asks for ("auto": each decides, cuda when it has one). */
  pb_json_key(&j, "devices");
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "learner", pb_nn_device(pb_learn_q(l->learn)));
  pb_json_kstr(&j, "actor", pb_config_device(&l->cfg, PB_DEVICE_ACTOR, NULL));
  pb_json_kstr(&j, "searcher",
               pb_config_device(&l->cfg, PB_DEVICE_SEARCHER, NULL));
  pb_json_obj_end(&j);
  /* The precision of each role's networks: the learner's own choice, and
   * what the workers' config asks for ("auto": each decides on its
   * device). */
  pb_json_key(&j, "precision");
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "learner",
               pb_nn_precision(pb_learn_q(l->learn)) == PB_NN_BF16 ? "bf16"
                                                                   : "fp32");
  pb_json_kstr(&j, "actor",
               pb_config_precision(&l->cfg, PB_DEVICE_ACTOR, NULL));
  pb_json_kstr(&j, "searcher",
               pb_config_precision(&l->cfg, PB_DEVICE_SEARCHER, NULL));
  pb_json_obj_end(&j);
  /* elapsed, ETA, last iteration, and the evaluator: it talks to no
   * socket of the learner, so what is known of it comes from the run
   * directory (its lock and elo.csv), not from the workers above. */
  if (l->web) pb_web_status(l->web, &j);
  pb_json_obj_end(&j);
  return pb_json_take(&j);
}

static char *metrics_text(pb_learner_t *l) {
  pb_workq_counts_t c;
  pb_workq_counts(phase_queue(l), &c);
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (f == NULL) return NULL;
#define G(name, help, fmt, val)                                             \
  fprintf(f, "# HELP probs_" name " " help "\n# TYPE probs_" name           \
             " gauge\nprobs_" name " " fmt "\n", val)
#define C(name, help, val)                                                  \
  fprintf(f, "# HELP probs_" name " " help "\n# TYPE probs_" name           \
             " counter\nprobs_" name " %" PRIu64 "\n", (uint64_t)(val))
  G("version", "Model version (finished iterations).", "%" PRIu64,
    pb_learn_version(l->learn));
  G("phase", "Phase: 1 selfplay, 2 prepare_search, 3 search, 4 train, 5 done.",
    "%d", l->it.phase);
  fprintf(f, "# HELP probs_workers Workers seen recently, by role.\n"
             "# TYPE probs_workers gauge\n"
             "probs_workers{role=\"actor\"} %d\n"
             "probs_workers{role=\"searcher\"} %d\n",
          pb__workers_alive(l, PB_ROLE_ACTOR),
          pb__workers_alive(l, PB_ROLE_SEARCHER));
  fprintf(f, "# HELP probs_queue_items Work items of the current phase.\n"
             "# TYPE probs_queue_items gauge\n"
             "probs_queue_items{state=\"pending\"} %zu\n"
             "probs_queue_items{state=\"leased\"} %zu\n"
             "probs_queue_items{state=\"done\"} %zu\n",
          c.pending, c.leased, c.done);
  C("messages_received_total", "Messages received.", l->intake.msgs_in);
  C("bytes_received_total", "Bytes received.", l->intake.bytes_in);
  C("messages_dropped_total", "Messages refused by decoding.",
    l->intake.msgs_bad + l->intake.msgs_mismatch);
  C("positions_ingested_total", "Positions received in results.",
    l->intake.positions_in);
  C("leases_expired_total", "Work leases that expired.", l->lease.expired);
  C("lease_quarantined_total",
    "Connections quarantined because their leases kept expiring.",
    l->quar.lease_quarantined);
  C("connections_limited_total",
    "New connections dropped: too many a second from one address.",
    l->lease.conns_limited);
  G("disk_stalled_seconds",
    "How long the log or metrics writer has waited for the disk (0: not).",
    "%.3f", disk_stalled(l));
  C("log_lines_dropped_total", "Log and metrics lines dropped: the disk did "
    "not keep up.", pb_log_dropped(l->log) + pb_metrics_dropped(l->metrics));
  C("results_duplicate_total", "Duplicate or stale results dropped.",
    l->intake.results_dup);
  {
    uint64_t copies, won, dropped;
    backups(l, &copies, &won, &dropped);
    C("backup_copies_total",
      "Backup copies of items held long, leased to idle workers.", copies);
    C("backup_copies_won_total", "Items whose backup copy's result counted.",
      won);
    C("backup_results_dropped_total",
      "Results of the second holder of an item, dropped as late.", dropped);
  }
  C("spot_checked_total", "Search results the learner searched again.",
    l->spot.checked);
  C("spot_disagree_total", "Of which outside net.spot_check_tolerance.",
    l->spot.disagree);
  C("searchers_quarantined_total", "Searchers quarantined by the spot check.",
    l->quar.quarantined);
  C("selfplay_moves_scored_total",
    "Self-play moves the learner scored under the Q they were played with.",
    l->play.moves);
  C("actors_quarantined_total",
    "Actors quarantined: their self-play moves were impossible.",
    l->quar.play_quarantined);
  C("replay_dropped_total",
    "Positions of earlier iterations that left the replay window: their "
    "worker was caught lying later (spot check and self-play check).",
    l->rdrop.dropped[0] + l->rdrop.dropped[1]);
  G("v_loss", "Mean V loss of the last iteration.", "%.6g", l->status.last_v_loss);
  G("q_loss", "Mean Q loss of the last iteration.", "%.6g", l->status.last_q_loss);
  G("iteration_seconds", "Wall time of the last iteration.", "%.3f",
    l->status.last_iter_s);
  G("rss_bytes", "Resident memory.", "%ld", rss_kb() * 1024);
  /* The evaluator's newest rating, read from its elo.csv in the run dir. */
  pb_elotable_row_t er;
  if (pb_elotable_latest(l->cfg.run.dir, &l->cfg, &er, NULL) == 0) {
    G("eval_version", "Newest version the evaluator rated.", "%" PRIu64,
      er.version);
    if (isfinite(er.elo))
      G("eval_elo", "Elo of the newest rated version.", "%.1f", er.elo);
    const double acc[3] = {er.acc_q, er.acc_v, er.acc_beam};
    static const char *const agent[3] = {"greedy_q", "v_one_ply", "beam"};
    int any = 0;
    for (int k = 0; k < 3; k++) {
      if (!isfinite(acc[k])) continue;
      if (!any++)
        fprintf(f, "# HELP probs_eval_accuracy Share of optimal moves of the "
                   "newest rated version on the solved test set.\n"
                   "# TYPE probs_eval_accuracy gauge\n");
      fprintf(f, "probs_eval_accuracy{agent=\"%s\"} %.4f\n", agent[k], acc[k]);
    }
  }
#undef G
#undef C
  fclose(f);
  return buf;
}

void pb__on_http(void *ctx, const char *method, const char *path,
                 pb_http_response_t *res) {
  pb_learner_t *l = ctx;
  (void)method;
  if (!strcmp(path, "/status")) {
    res->status = 200;
    res->content_type = "application/json";
    res->body = status_json(l);
  } else if (!strcmp(path, "/metrics")) {
    res->status = 200;
    res->content_type = "text/plain; version=0.0.4";
    res->body = metrics_text(l);
  } else if (pb_web_handle(l->web, path, pb_http_query(l->http), res)) {
    return; /* the page, /api/history, /api/move (common/web/web.h) */
  } else {
    res->status = 404;
    res->content_type = "text/plain";
    res->body = strdup("not found: try /, /status or /metrics\n");
  }
  if (res->body) res->body_len = strlen(res->body);
}

