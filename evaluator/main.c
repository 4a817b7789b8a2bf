/* probs-evaluator - rates a run's checkpoints against the baselines.
 *
 *   probs-evaluator [CONFIG] --run-dir DIR [--set KEY=VALUE]... [--all]
 *                   [--once] [--until V] [--anchor SPEC=RATING]...
 *                   [--no-png] [--nice N] [--no-stderr]
 *
 * Without CONFIG the run's own DIR/config.yaml is used. See
 * evaluator/evaluator.h and docs/evaluator.md. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "config.h"
#include "entry.h"
#include "evaluator.h"
#include "log.h"
#include "nn.h"
#include "rundir.h"
#include "util.h"

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs-evaluator [CONFIG] --run-dir DIR [options]\n"
          "Rates the checkpoints of a run against the baselines (Elo) and "
          "writes\nDIR/elo.csv, DIR/elo.svg, lines in DIR/learner.log and "
          "DIR/metrics.jsonl.\n"
          "  CONFIG               the run's config (default DIR/config.yaml)\n"
          "  --run-dir DIR        the run directory (overrides run.dir)\n"
          "  --all                rate every version elo.csv lacks, then exit\n"
          "  --versions V,V,...   rate these versions (if not rated yet), "
          "then exit\n"
          "  --once               rate the newest unrated version, then exit\n"
          "  --until V            follow until version V is rated\n"
          "  --set KEY=VALUE      override a config key, e.g. "
          "eval.games_per_opponent=200\n"
          "  --anchor SPEC=R      rate opponent SPEC at R Elo (or SPEC=none); "
          "repeatable\n"
          "                       defaults: random=1000 lookahead:1=1183 "
          "lookahead:2=1501\n"
          "                       lookahead:3=1603 (the paper's)\n"
          "  --no-png             do not try to write elo.png\n"
          "  --nice N             scheduling niceness while following "
          "(default 10; 0 = leave)\n"
          "  --no-stderr          log to DIR/learner.log only\n"
          "  --keys               list every config key with its default\n"
          "Without --all it follows the run: it rates new checkpoints as "
          "they appear\n(skipping to the newest when behind) and exits when "
          "the learner announces\nthat it stops, or on SIGINT/SIGTERM.\n");
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* The evaluator's own options (besides --set, --keys, --help). */
typedef struct {
  const char *run_dir;
  const char *config; /* the CONFIG argument, or NULL */
  int quiet;
  int64_t nice;
} args_t;

/* One --versions V,V,... appended to eo (empty items skipped). 0, or 2
 * after a message. */
static int parse_versions(const char *list, pb_evaluator_opts_t *eo) {
  for (const char *p = list; *p != '\0'; p += *p == ',') {
    size_t n = strcspn(p, ",");
    char tok[32];
    int64_t v = 0;
    snprintf(tok, sizeof tok, "%.*s", (int)n, p);
    if (n > 0 && (eo->n_versions == PB_EVALUATOR_MAX_VERSIONS ||
                  n >= sizeof tok || parse_i64(tok, 0, INT64_MAX, &v) != 0)) {
      fprintf(stderr,
              "probs-evaluator: bad --versions item '%.*s' (versions >= "
              "0, at most %d)\n",
              (int)n, p, PB_EVALUATOR_MAX_VERSIONS);
      return 2;
    }
    if (n > 0) eo->versions[eo->n_versions++] = (uint64_t)v;
    p += n;
  }
  return 0;
}

/* The values of the evaluator's own options into eo and a. 0, or 2
 * after a message. */
static int own_values(const char *const *versions, int nversions,
                      const char *until, const char *nice,
                      pb_evaluator_opts_t *eo, args_t *a) {
  for (int i = 0; i < nversions; i++)
    if (parse_versions(versions[i], eo) != 0) return 2;
  if (until != NULL && parse_i64(until, 0, INT64_MAX, &eo->until) != 0) {
    fprintf(stderr, "probs-evaluator: bad --until '%s' (a version >= 0)\n",
            until);
    return 2;
  }
  if (nice != NULL && parse_i64(nice, 0, 19, &a->nice) != 0) {
    fprintf(stderr, "probs-evaluator: bad --nice '%s' (0..19)\n", nice);
    return 2;
  }
  if ((eo->all || eo->n_versions > 0) &&
      (eo->once || eo->until >= 0 || (eo->all && eo->n_versions > 0))) {
    fprintf(stderr,
            "probs-evaluator: --all and --versions do not go with each "
            "other, --once or --until\n");
    return 2;
  }
  return 0;
}

/* The command line into *e, *eo and *a. -1 to go on, or the exit
 * status. */
static int parse_args(int argc, char **argv, pb_entry_t *e,
                      pb_evaluator_opts_t *eo, args_t *a) {
  const char *versions[PB_EVALUATOR_MAX_VERSIONS];
  const char *until = NULL, *nice = NULL;
  int nversions = 0, no_png = 0, npos = 0;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("run-dir", 0, &a->run_dir),
      PB_OPTS_FLAG("all", 0, &eo->all),
      PB_OPTS_LIST("versions", 0, versions, &nversions,
                   PB_EVALUATOR_MAX_VERSIONS),
      PB_OPTS_FLAG("once", 0, &eo->once),
      PB_OPTS_VALUE("until", 0, &until),
      PB_OPTS_LIST("anchor", 0, eo->anchors, &eo->n_anchors,
                   PB_EVALUATOR_MAX_ANCHORS),
      PB_OPTS_FLAG("no-png", 0, &no_png),
      PB_OPTS_VALUE("nice", 0, &nice),
      PB_OPTS_FLAG("no-stderr", 0, &a->quiet),
      PB_ENTRY_OPTS(e)};
  const pb_opts_t cl = {e->prog,    usage, rows, PB_OPTS_N(rows),
                        &a->config, 1,     &npos};
  int rc = pb_entry_check(e, pb_opts_parse(&cl, argc, argv));
  if (rc != PB_ENTRY_GO) return rc;
  if (a->run_dir == NULL && npos == 0)
    return pb_opts_fail(&cl, "give --run-dir DIR (or CONFIG)");
  if (no_png) eo->png = 0;
  return own_values(versions, nversions, until, nice, eo, a) != 0 ? 2 : -1;
}

/* The config into eo->cfg: CONFIG, or the run's own; the run directory
 * of --all and --versions checked. -1 to go on, or the exit status. */
static int load_config(const pb_entry_t *e, pb_evaluator_opts_t *eo,
                       const args_t *a) {
  pb_err_t err;
  pb_err_clear(&err);
  char path[PB_RUNDIR_PATH_MAX];
  const char *cfg_path = a->config;
  if (cfg_path == NULL) {
    pb_rundir_path(a->run_dir, PB_RUNDIR_CONFIG, path, sizeof path);
    cfg_path = path;
  }
  if (pb_config_setup(&eo->cfg, cfg_path, e->sets, e->nsets, a->run_dir,
                      &err) != 0) {
    fprintf(
        stderr, "probs-evaluator: %s%s\n", err.msg,
        a->config != NULL ? "" : " (give the config as the first argument)");
    return 2;
  }
  struct stat st;
  if ((eo->all || eo->n_versions > 0) &&
      (stat(eo->cfg.run.dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
    fprintf(stderr, "probs-evaluator: run directory '%s' does not exist\n",
            eo->cfg.run.dir);
    return 2;
  }
  return -1;
}

int main(int argc, char **argv) {
  if (pb_die_with_parent_or_say("probs-evaluator") != 0) return 1;
  pb_entry_t e;
  pb_entry_init(&e, "probs-evaluator", usage);
  pb_evaluator_opts_t eo;
  pb_evaluator_opts_default(&eo);
  args_t a = {NULL, NULL, 0, 10};
  int rc = parse_args(argc, argv, &e, &eo, &a);
  if (rc < 0) rc = load_config(&e, &eo, &a);
  if (rc >= 0) return rc;
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_mkdir_p(eo.cfg.run.dir, &err) != 0) {
    fprintf(stderr, "probs-evaluator: %s\n", err.msg);
    return 1;
  }
  char path[PB_RUNDIR_PATH_MAX];
  pb_rundir_path(eo.cfg.run.dir, PB_RUNDIR_LOG, path, sizeof path);
  pb_log_t *log =
      pb_log_new("evaluator", path, pb_log_level_parse(eo.cfg.log.level), &err);
  if (log == NULL) {
    fprintf(stderr, "probs-evaluator: %s\n", err.msg);
    return 1;
  }
  if (a.quiet) pb_log_set_stderr(log, 0);
  /* Following runs beside training: yield the CPU to the learner. Set
   * before any thread exists, so every thread inherits it. */
  if (!eo.all && eo.n_versions == 0 && a.nice > 0 &&
      setpriority(PRIO_PROCESS, 0, (int)a.nice) != 0)
    pb_log_warn(log, "could not lower the priority (nice %d)", (int)a.nice);
  pb_nn_tune_malloc(NULL);
  pb_nn_set_threads(1);
  pb_entry_signals(on_signal);
  eo.stop = &stop_flag;
  eo.log = log;
  rc = pb_evaluator_run(&eo, &err);
  if (rc != 0)
    pb_log_error(log, "evaluator failed: %s", err.msg);
  else if (stop_flag)
    pb_log_info(log, "evaluator stopped by a signal");
  pb_log_destroy(&log);
  return rc == 0 ? 0 : (rc == PB_ECONFIG || rc == PB_EINVAL) ? 2 : 1;
}
