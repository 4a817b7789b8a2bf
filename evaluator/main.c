/* probs-evaluator - rates a run's checkpoints against the baselines.
 *
 *   probs-evaluator [CONFIG] --run-dir DIR [--set KEY=VALUE]... [--all]
 *                   [--once] [--until V] [--anchor SPEC=RATING]...
 *                   [--no-png] [--nice N] [--no-stderr]
 *
 * Without CONFIG the run's own DIR/config.yaml is used. See
 * evaluator/evaluator.h and docs/evaluator.md. */
#include <errno.h>
#include <getopt.h>
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
  int quiet;
  int64_t nice;
} args_t;

/* --versions V,V,...: into eo. 0, or 2 after a message. */
static int parse_versions(char *list, pb_evaluator_opts_t *eo) {
  char *tok, *save = NULL;
  for (tok = strtok_r(list, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    int64_t v;
    if (eo->n_versions == PB_EVALUATOR_MAX_VERSIONS ||
        parse_i64(tok, 0, INT64_MAX, &v) != 0) {
      fprintf(stderr,
              "probs-evaluator: bad --versions item '%s' (versions >= "
              "0, at most %d)\n",
              tok, PB_EVALUATOR_MAX_VERSIONS);
      return 2;
    }
    eo->versions[eo->n_versions++] = (uint64_t)v;
  }
  return 0;
}

/* One of the evaluator's own options. 0, or 2 after a message. */
static int own_option(int c, char *arg, pb_evaluator_opts_t *eo, args_t *a) {
  switch (c) {
    case 'd':
      a->run_dir = arg;
      return 0;
    case 'a':
      eo->all = 1;
      return 0;
    case 'V':
      return parse_versions(arg, eo);
    case 'o':
      eo->once = 1;
      return 0;
    case 'u':
      if (parse_i64(arg, 0, INT64_MAX, &eo->until) == 0) return 0;
      fprintf(stderr, "probs-evaluator: bad --until '%s' (a version >= 0)\n",
              arg);
      return 2;
    case 'A':
      if (eo->n_anchors == PB_EVALUATOR_MAX_ANCHORS) {
        fprintf(stderr, "probs-evaluator: more than %d --anchor\n",
                PB_EVALUATOR_MAX_ANCHORS);
        return 2;
      }
      eo->anchors[eo->n_anchors++] = arg;
      return 0;
    case 'P':
      eo->png = 0;
      return 0;
    case 'n':
      if (parse_i64(arg, 0, 19, &a->nice) == 0) return 0;
      fprintf(stderr, "probs-evaluator: bad --nice '%s' (0..19)\n", arg);
      return 2;
    case 'q':
      a->quiet = 1;
      return 0;
    default:
      usage(stderr);
      return 2;
  }
}

/* The command line into *e, *eo and *a, and the config into eo->cfg.
 * -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, pb_entry_t *e,
                      pb_evaluator_opts_t *eo, args_t *a) {
  static const struct option opts[] = {{"run-dir", required_argument, 0, 'd'},
                                       {"all", no_argument, 0, 'a'},
                                       {"versions", required_argument, 0, 'V'},
                                       {"once", no_argument, 0, 'o'},
                                       {"until", required_argument, 0, 'u'},
                                       {"anchor", required_argument, 0, 'A'},
                                       {"no-png", no_argument, 0, 'P'},
                                       {"nice", required_argument, 0, 'n'},
                                       {"no-stderr", no_argument, 0, 'q'},
                                       PB_ENTRY_OPTIONS,
                                       {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    int rc = pb_entry_option(e, c, optarg);
    if (rc == PB_ENTRY_NEXT) continue;
    if (rc >= 0) return rc;
    if ((rc = own_option(c, optarg, eo, a)) != 0) return rc;
  }
  if (argc - optind > 1 || (a->run_dir == NULL && optind == argc)) {
    usage(stderr);
    return 2;
  }
  if ((eo->all || eo->n_versions > 0) &&
      (eo->once || eo->until >= 0 || (eo->all && eo->n_versions > 0))) {
    fprintf(stderr,
            "probs-evaluator: --all and --versions do not go with each "
            "other, --once or --until\n");
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  char path[PB_RUNDIR_PATH_MAX];
  const char *cfg_path = optind < argc ? argv[optind] : NULL;
  if (cfg_path == NULL) {
    pb_rundir_path(a->run_dir, PB_RUNDIR_CONFIG, path, sizeof path);
    cfg_path = path;
  }
  if (pb_config_setup(&eo->cfg, cfg_path, e->sets, e->nsets, a->run_dir,
                      &err) != 0) {
    fprintf(stderr, "probs-evaluator: %s%s\n", err.msg,
            optind < argc ? "" : " (give the config as the first argument)");
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
  args_t a = {NULL, 0, 10};
  int rc = parse_args(argc, argv, &e, &eo, &a);
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
