/* webserve.c - see webserve.h. */
#include "webserve.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "config.h"
#include "json.h"
#include "rundir.h"
#include "web.h"

struct pb_webserve {
  char dir[PB_RUNDIR_DIR_MAX + 1];
  pb_config_t cfg;
  long long cfg_mtime_ns, cfg_size; /* config.yaml as last loaded */
  long long pinned;                 /* -1: the newest plays */
  pb_web_t *web;
  pb_http_t *http;
};

static long long mtime_ns(const struct stat *sb) {
  return (long long)sb->st_mtim.tv_sec * 1000000000LL + sb->st_mtim.tv_nsec;
}

/* RUN_DIR/config.yaml into *cfg (run.dir = dir), its stat into *sb. */
static int load_config(const char *dir, pb_config_t *cfg, struct stat *sb,
                       pb_err_t *err) {
  char path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(dir, PB_RUNDIR_CONFIG, path, sizeof path);
  if (stat(path, sb) != 0 || !S_ISREG(sb->st_mode))
    return pb_err_set(err, PB_ECONFIG,
                      "%s is not a run directory: it has no %s (a run "
                      "directory is what probs train writes, --run-dir)",
                      dir, PB_RUNDIR_CONFIG);
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_config_setup(cfg, path, NULL, 0, dir, &e) != 0)
    return pb_err_set(err, PB_ECONFIG, "%s is not a run directory: %s", dir,
                      e.msg);
  return 0;
}

static void on_http(void *ctx, const char *method, const char *path,
                    pb_http_response_t *res) {
  pb_webserve_t *s = ctx;
  pb_webserve_handle(s, method, path, pb_http_query(s->http), res);
}

pb_webserve_t *pb_webserve_new(uv_loop_t *loop, const pb_webserve_opts_t *o,
                               pb_err_t *err) {
  if (loop == NULL || o == NULL || o->run_dir == NULL) {
    pb_err_set(err, PB_EINVAL, "serve: NULL argument");
    return NULL;
  }
  if (o->port < -1 || o->port > 65535) {
    pb_err_set(err, PB_EINVAL, "serve: port %d outside -1..65535", o->port);
    return NULL;
  }
  if (strlen(o->run_dir) >= PB_RUNDIR_DIR_MAX) {
    pb_err_set(err, PB_EINVAL, "%.200s...: run directory path too long",
               o->run_dir);
    return NULL;
  }
  struct stat sb;
  if (stat(o->run_dir, &sb) != 0) {
    int e = errno;
    pb_err_set(err, e == ENOENT ? PB_ENOTFOUND : PB_EIO, "%s: %s", o->run_dir,
               e == ENOENT ? "no such directory" : strerror(e));
    return NULL;
  }
  if (!S_ISDIR(sb.st_mode)) {
    pb_err_set(err, PB_ECONFIG, "%s is not a run directory: not a directory",
               o->run_dir);
    return NULL;
  }
  pb_webserve_t *s = calloc(1, sizeof *s);
  if (s == NULL) {
    pb_err_set(err, PB_ENOMEM, "serve: out of memory");
    return NULL;
  }
  snprintf(s->dir, sizeof s->dir, "%s", o->run_dir);
  s->pinned = o->checkpoint < 0 ? -1 : o->checkpoint;
  if (load_config(s->dir, &s->cfg, &sb, err) != 0) {
    free(s);
    return NULL;
  }
  s->cfg_mtime_ns = mtime_ns(&sb);
  s->cfg_size = (long long)sb.st_size;
  s->web = pb_web_new(&s->cfg, err);
  if (s->web == NULL ||
      (s->pinned >= 0 && pb_web_pin(s->web, s->pinned, err) != 0)) {
    pb_web_destroy(&s->web);
    free(s);
    return NULL;
  }
  s->http = pb_http_new(loop, o->host ? o->host : "127.0.0.1",
                        o->port < 0 ? 0 : o->port, on_http, s, err);
  if (s->http == NULL) {
    pb_web_destroy(&s->web);
    free(s);
    return NULL;
  }
  return s;
}

void pb_webserve_destroy(pb_webserve_t **ps) {
  if (ps == NULL || *ps == NULL) return;
  pb_webserve_t *s = *ps;
  pb_http_destroy(&s->http); /* no handler runs after this */
  pb_web_destroy(&s->web);
  free(s);
  *ps = NULL;
}

int pb_webserve_port(const pb_webserve_t *s) {
  return s ? pb_http_port(s->http) : -1;
}

const char *pb_webserve_run(const pb_webserve_t *s) {
  return s ? s->cfg.run.name : NULL;
}

const char *pb_webserve_game(const pb_webserve_t *s) {
  return s ? s->cfg.game : NULL;
}

/* config.yaml again when it changed (a run resumed with other keys); one
 * that no longer loads, or names another game, is ignored. */
static void reload_config(pb_webserve_t *s) {
  char path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(s->dir, PB_RUNDIR_CONFIG, path, sizeof path);
  struct stat sb;
  if (stat(path, &sb) != 0 || (mtime_ns(&sb) == s->cfg_mtime_ns &&
                               (long long)sb.st_size == s->cfg_size))
    return;
  s->cfg_mtime_ns = mtime_ns(&sb);
  s->cfg_size = (long long)sb.st_size;
  pb_config_t c;
  if (load_config(s->dir, &c, &sb, NULL) != 0 ||
      strcmp(c.game, s->cfg.game) != 0)
    return;
  pb_web_t *w = pb_web_new(&c, NULL);
  if (w == NULL || (s->pinned >= 0 && pb_web_pin(w, s->pinned, NULL) != 0)) {
    pb_web_destroy(&w);
    return;
  }
  pb_web_destroy(&s->web);
  s->web = w;
  s->cfg = c;
}

static double wall_now(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* RUN_DIR/run-id's first line into buf ("" when there is none). */
static void read_run_id(const char *dir, char *buf, size_t n) {
  char path[PB_RUNDIR_PATH_MAX];
  buf[0] = '\0';
  pb_rundir_path(dir, PB_RUNDIR_RUN_ID, path, sizeof path);
  FILE *f = fopen(path, "r");
  if (f == NULL) return;
  if (fgets(buf, (int)n, f) == NULL) buf[0] = '\0';
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
}

char *pb_webserve_status(pb_webserve_t *s) {
  if (s == NULL) return NULL;
  reload_config(s);
  pb_web_summary_t sum;
  if (pb_web_summary(s->web, &sum) != 0) return NULL;
  uint64_t *vers = NULL;
  size_t nv = 0;
  if (pb_rundir_versions(s->dir, &vers, &nv, NULL) != 0) nv = 0;
  long long newest = nv > 0 ? (long long)vers[nv - 1] : -1;
  free(vers);
  uint64_t version = sum.version;
  if (newest >= 0 && (uint64_t)newest > version) version = (uint64_t)newest;
  long pid = 0;
  /* Looked up, never probed: a learner starting now must get its lock. */
  int learner =
      pb_rundir_lock_held(s->dir, PB_RUNDIR_LEARNER_LOCK, 0, &pid, NULL) == 1;
  const char *phase;
  if (version >= (uint64_t)s->cfg.train.iterations) {
    phase = "done";
  } else {
    /* No lock (--inproc takes none): a record written lately still says
     * the run goes on. */
    double mean = isfinite(sum.mean_iteration_s) ? sum.mean_iteration_s : 0;
    int recent = isfinite(sum.last_unix_time) &&
                 wall_now() - sum.last_unix_time < 3 * mean + 60;
    phase = learner || recent ? "running" : "stopped";
  }
  int running = !strcmp(phase, "running");
  pb_web_set_live(s->web, running);
  char run_id[PB_RUNDIR_RUN_ID_MAX + 2];
  read_run_id(s->dir, run_id, sizeof run_id);

  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kbool(&j, "serve", true);
  pb_json_kstr(&j, "run", s->cfg.run.name);
  pb_json_key(&j, "run_id");
  pb_json_str(&j, run_id[0] ? run_id : NULL);
  pb_json_kstr(&j, "game", s->cfg.game);
  pb_json_kuint(&j, "version", version);
  pb_json_kuint(&j, "iteration", version + (running ? 1 : 0));
  pb_json_kint(&j, "iterations", s->cfg.train.iterations);
  pb_json_kstr(&j, "phase", phase);
  pb_json_key(&j, "learner");
  pb_json_obj_begin(&j);
  pb_json_kbool(&j, "running", learner);
  pb_json_key(&j, "pid");
  if (learner && pid > 0)
    pb_json_int(&j, pid);
  else
    pb_json_null(&j);
  pb_json_obj_end(&j);
  pb_json_key(&j, "checkpoints");
  pb_json_obj_begin(&j);
  pb_json_kuint(&j, "count", nv);
  pb_json_key(&j, "newest");
  if (newest >= 0)
    pb_json_int(&j, newest);
  else
    pb_json_null(&j);
  pb_json_obj_end(&j);
  pb_web_status(s->web, &j);
  pb_json_obj_end(&j);
  return pb_json_take(&j);
}

void pb_webserve_handle(pb_webserve_t *s, const char *method, const char *path,
                        const char *query, pb_http_response_t *res) {
  (void)method; /* GET or HEAD: the server refuses every other (405) */
  if (s == NULL || path == NULL || res == NULL) return;
  if (!strcmp(path, "/status")) {
    res->body = pb_webserve_status(s);
    res->status = res->body ? 200 : 500;
    res->content_type = "application/json";
  } else if (pb_web_handle(s->web, path, query, res)) {
    return; /* the page, /api/history, /api/move, the charts (web.h) */
  } else {
    res->status = 404;
    res->content_type = "text/plain";
    res->body = strdup(
        "not found: try /, /status or /api/history (probs "
        "serve is read-only)\n");
  }
  if (res->body) res->body_len = strlen(res->body);
}
