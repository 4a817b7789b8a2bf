/* web.h - the learner's web page: a live dashboard of the run and a board to
 * play against the newest model, served by the learner's HTTP server
 * (http.h) with no other runtime dependency. docs/deploy.md describes it.
 *
 * Routes (pb_web_handle):
 *   GET /, /index.html, /play  the page (learner/web/index.html, compiled
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
 *                 "elapsed_s":..,"eta_s":..}}
 *   GET /api/move?moves=M&reply=1   webplay.h (400 with {"error":..} for
 *                          a bad move list, 503 when the run has no
 *                          checkpoint to play).
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
 * record's "unix_time" minus its iteration_s to now when records carry
 * unix_time, else the sum of iteration_s); eta_s, mean_iteration_s times
 * the iterations left (null when unknown).
 *
 * Threading: one thread (the learner's loop). */
#ifndef PB_WEB_H
#define PB_WEB_H

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
 * "elapsed_s", "eta_s", "mean_iteration_s" and "last_iteration" (the
 * newest record as written, or null), re-reading metrics.jsonl if it
 * changed. Returns 0, PB_ENOMEM, or the writer's sticky error. */
int pb_web_status(pb_web_t *w, pb_json_t *j);

/* The /api/history body (malloc'd JSON, caller frees) into *out, for
 * tests and the route. Returns 0 or PB_ENOMEM. */
int pb_web_history(pb_web_t *w, char **out, size_t *len, pb_err_t *err);

#endif
