/* web.h - the run's web page: a live dashboard of the run and a board to
 * play against the newest model, served by the learner's HTTP server
 * (http.h), or without the learner by probs serve (webserve.h), with no
 * other runtime dependency. docs/deploy.md describes it.
 *
 * Routes (pb_web_handle):
 *   GET /, /index.html, /play  the page (common/web/index.html, compiled
 *                          into the binary at build time: no files, no
 *                          CDN). It polls /status and /api/history every
 *                          few seconds and draws its charts as inline SVG.
 *   GET /api/history       JSON: the iteration records of
 *                          RUN_DIR/metrics.jsonl (lines holding
 *                          "event":"iteration", passed on as written) and
 *                          the rows of RUN_DIR/elo.csv, with a summary:
 *     {"run":..,"game":..,"iterations":N (train.iterations),
 *      "records":[{...},..],"truncated":false,
 *      "elo":[{"iteration":..,"version":..,"elo":..,"elo_lo":..,
 *              "elo_hi":..,"acc_q":..,"acc_v":..,"acc_beam":..,
 *              "minutes":..},..],
 *      "summary":{"count":..,"version":..,"mean_iteration_s":..,
 *                 "elapsed_s":..,"eta_s":..},
 *      "last_elo":{...}|null}
 *                          last_elo: the evaluator's newest
 *                          "event":"elo" line of metrics.jsonl as written
 *                          (its "opponents" carry the "anchor" rating of
 *                          each, null for none: the baselines elo.svg
 *                          draws; "accuracy" names its search), null when
 *                          the tail read holds none.
 *   GET /api/move?moves=M&reply=1   webplay.h (400 with {"error":..} for
 *                          a bad move list, 503 when the run has no
 *                          checkpoint to play).
 *   GET /elo.svg, /elo-time.svg     the evaluator's charts of RUN_DIR as
 *                          they are on disk (image/svg+xml; 404 with
 *                          {"error":..} before the evaluator wrote them).
 *
 * Nothing here changes the run: every route reads files of RUN_DIR (a
 * move loads a checkpoint apart from the learner's networks), so the same
 * handlers serve a finished run (probs serve, webserve.h).
 *
 * Bounds: only the last PB_WEB_TAIL_BYTES of metrics.jsonl are read (the
 * first, partial line skipped; "truncated" says so) and at most
 * PB_WEB_MAX_RECORDS records kept (the newest); elo.csv is read only up to
 * PB_WEB_TAIL_BYTES. Both are re-read only when their size or modification
 * time changed, so polling costs a stat() per file. Lines that are not
 * valid JSON are skipped.
 *
 * Summary: count of records read; version, the newest record's; the mean
 * of their iteration_s; elapsed_s, the run's wall time (from the first
 * record's "unix_time" minus its iteration_s to now, or to the newest
 * record's unix_time for a run that has stopped (pb_web_set_live), when
 * records carry unix_time, else the sum of iteration_s); eta_s,
 * mean_iteration_s times the iterations left (null when unknown).
 *
 * Threading: one thread (the loop of the learner or of probs serve). */
#ifndef PB_WEB_H
#define PB_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "err.h"
#include "http.h"
#include "json.h"

#define PB_WEB_TAIL_BYTES (4u << 20) /* 4 MiB of metrics.jsonl at most */
#define PB_WEB_MAX_RECORDS 5000

typedef struct pb_web pb_web_t;

/* The page for the run of cfg (copied: run.dir, run.name, game,
 * train.iterations, model.threads, the evaluator's opponents). Reads
 * nothing yet. NULL + err (PB_EINVAL: NULL or an unknown game; PB_ENOMEM). */
pb_web_t *pb_web_new(const pb_config_t *cfg, pb_err_t *err);

/* Frees everything; accepts NULL and sets *w to NULL. */
void pb_web_destroy(pb_web_t **w);

/* Answers `path` (without the query) with `query` (pb_http_query; may be
 * NULL) if it is one of the routes above: fills res (status, content type,
 * a malloc'd body and its length) and returns 1. Returns 0 and leaves res
 * alone for any other path. */
int pb_web_handle(pb_web_t *w, const char *path, const char *query,
                  pb_http_response_t *res);

/* Adds the history's summary to an open JSON object (for /status):
 * "elapsed_s", "eta_s", "mean_iteration_s", "last_iteration" (the
 * newest record as written, or null) and "progress" (the learner's newest
 * "event":"progress" line written after that record, as written: the
 * iteration in progress, its "phase", items "done" of "total"; null when
 * there is none), re-reading metrics.jsonl if it changed; then what the
 * run directory says of the evaluator, which
 * talks to no socket of the learner:
 *   "evaluator":{"running":true|false|null (someone holds
 *                RUN_DIR/evaluator.lock, pb_rundir_lock_held; null: cannot
 *                tell),"rated":ROWS of elo.csv,"rated_version":N|null},
 * and the board's player:
 *   "play":{"version":N|null (the checkpoint that played the last reply),
 *           "pinned":false (pb_web_pin)}.
 * Returns 0, PB_ENOMEM, or the writer's sticky error. */
int pb_web_status(pb_web_t *w, pb_json_t *j);

/* The summary of metrics.jsonl (re-read if it changed): records read, the
 * newest record's version and unix_time (NAN when it has none), the mean
 * iteration_s (NAN without records). */
typedef struct pb_web_summary {
  size_t count;
  uint64_t version;
  double mean_iteration_s;
  double last_unix_time;
} pb_web_summary_t;
int pb_web_summary(pb_web_t *w, pb_web_summary_t *s);

/* Whether the run goes on (1, the default: the learner's own page). When
 * 0 (probs serve on a run that has stopped) elapsed_s ends at the newest
 * record instead of running on to now, and eta_s is null unless no
 * iteration is left. */
void pb_web_set_live(pb_web_t *w, int live);

/* The board plays checkpoint `version` of the run from now on, or the
 * newest again when version < 0: pb_webplay_pin. */
int pb_web_pin(pb_web_t *w, long long version, pb_err_t *err);

/* The /api/history body (malloc'd JSON, caller frees) into *out, for
 * tests and the route. Returns 0 or PB_ENOMEM. */
int pb_web_history(pb_web_t *w, char **out, size_t *len, pb_err_t *err);

#endif
