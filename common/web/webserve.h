/* webserve.h - the dashboard of a run served from its directory alone,
 * with no learner (`probs serve RUN_DIR`, cli/cmd_serve.c): the page and
 * the routes of web.h over RUN_DIR, and a /status made from its files.
 *
 * Read-only: nothing served changes the run. The HTTP server (http.h)
 * answers any method but GET and HEAD with 405, and no route here or in
 * web.h writes a file of RUN_DIR (a move loads a checkpoint, read-only).
 * There are no training controls and no /metrics (that is the learner's).
 *
 * Files are re-read when they change (web.h: metrics.jsonl and elo.csv on
 * a stat; the board looks for a newer checkpoint on every move;
 * config.yaml is loaded again when it changes and still parses), so the
 * page of a run that is still training keeps up with it.
 *
 * Routes:
 *   GET /status    JSON made from RUN_DIR, pb_webserve_status;
 *   everything else of web.h (/, /play, /api/history, /api/move, /elo.svg,
 *   /elo-time.svg); any other path is 404.
 *
 * Threading: every function, and the server, on the loop's thread. */
#ifndef PB_WEBSERVE_H
#define PB_WEBSERVE_H

#include <uv.h>

#include "err.h"
#include "http.h"

typedef struct pb_webserve pb_webserve_t;

typedef struct pb_webserve_opts {
  const char *run_dir;  /* required: a run directory (has config.yaml) */
  const char *host;     /* address to listen on (http.h); NULL: 127.0.0.1 */
  int port;             /* 1..65535; 0 or -1: a free port the kernel picks */
  long long checkpoint; /* the version the board plays; < 0: the newest */
} pb_webserve_opts_t;

/* Opens RUN_DIR (checks it is a run directory and loads its config.yaml,
 * run.dir set to RUN_DIR wherever the run was trained), pins the board to
 * o->checkpoint when it is >= 0 (loading it now), and listens on
 * host:port on `loop`. NULL + err, with a message naming the directory,
 * file, address or port:
 *   PB_EINVAL    NULL arguments, a port outside -1..65535, a bad host;
 *   PB_ENOTFOUND RUN_DIR does not exist; the pinned checkpoint does not;
 *   PB_ECONFIG   RUN_DIR is not a directory, has no config.yaml, or one
 *                that does not load ("not a run directory");
 *   PB_EIO       the address cannot be bound (in use, not permitted);
 *   a checkpoint's load error (PB_ECORRUPT, PB_EMISMATCH...); PB_ENOMEM. */
pb_webserve_t *pb_webserve_new(uv_loop_t *loop, const pb_webserve_opts_t *o,
                               pb_err_t *err);

/* Stops listening (pb_http_close: connections are closed, their memory
 * freed once the loop has run) and frees the rest now. Accepts NULL and a
 * NULL *s; sets *s to NULL. */
void pb_webserve_destroy(pb_webserve_t **s);

/* The port listened on (after port 0), -1 for NULL. */
int pb_webserve_port(const pb_webserve_t *s);

/* The run's name and game (run.name and game of its config.yaml). */
const char *pb_webserve_run(const pb_webserve_t *s);
const char *pb_webserve_game(const pb_webserve_t *s);

/* The /status body, malloc'd JSON (caller frees), or NULL (no memory):
 *   {"serve":true,"run":NAME,"run_id":ID|null (RUN_DIR/run-id),
 *    "game":..,"version":V,"iteration":..,"iterations":N,"phase":P,
 *    "learner":{"running":bool,"pid":N|null},
 *    "checkpoints":{"count":..,"newest":N|null},
 *    + web.h's pb_web_status members (elapsed_s, eta_s, mean_iteration_s,
 *      last_iteration, progress, evaluator, play)}
 * version: the newest of the newest iteration record's and the newest
 * checkpoint's; iterations: train.iterations; phase: "done" once version
 * reaches it, else "running" while a learner holds RUN_DIR/learner.lock
 * (pb_rundir_lock_held) or the newest record is recent (a run of probs
 * train --inproc, which takes no lock: less than 3 mean iterations and a
 * minute old), else "stopped"; iteration: version, plus 1 while running
 * (the one in progress, as the learner counts). */
char *pb_webserve_status(pb_webserve_t *s);

/* The server's handler (http.h), for tests: routes one request. */
void pb_webserve_handle(pb_webserve_t *s, const char *method, const char *path,
                        const char *query, pb_http_response_t *res);

#endif
