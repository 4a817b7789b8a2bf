/* probs-learner - the learner process.
 *
 *   probs-learner CONFIG [--run-dir DIR] [--resume] [--restart]
 *                 [--run-id ID] [--set KEY=VALUE]...
 *   probs-learner --resume RUN_DIR [--set KEY=VALUE]...
 *
 * main() reads the configuration, refuses a start without --resume or
 * --restart on a run dir that holds a run already (before it creates or
 * changes any file there), takes the run id of this start (--run-id, or a
 * new one: common/run/rundir.h), opens the log, and hands over to
 * pb_learner_run (learner/learner.c), the event loop. Exit status: 0 done,
 * 2 bad arguments or config, PB_SUPERVISE_EXIT_FATAL (78) when the learner
 * cannot start or had no worker it accepts for net.no_workers_exit_s
 * (probs train then stops instead of restarting it), 1 any other
 * failure. A start that fails leaves nothing of its own behind: the
 * learner takes back the files of the run it made, and when the run
 * directory did not exist before, main() removes learner.log and the
 * directories it made as well (the reason is on stderr). In a run
 * directory that was there, learner.log keeps the reason. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "entry.h"
#include "learner.h"
#include "log.h"
#include "nn.h"
#include "rundir.h"
#include "supervise.h"
#include "util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs-learner CONFIG [--run-dir DIR] [--resume] "
          "[--restart] [--run-id ID]\n"
          "                     [--set KEY=VALUE]...\n"
          "       probs-learner --resume RUN_DIR [--set KEY=VALUE]...\n"
          "  --resume continues from the newest intact checkpoint in the run\n"
          "  directory (starting fresh if the directory has none and no\n"
          "  history; history without a checkpoint is an error); with a\n"
          "  directory instead of CONFIG, the run's own config.yaml is used.\n"
          "  --restart as --resume, but history without a checkpoint is\n"
          "  moved aside (*.before-restart-TIME) and the run starts over.\n"
          "  Without either, a run directory that holds a run already is\n"
          "  refused (exit status 78), every file left as it was.\n"
          "  --run-id ID is this start's run id (RUN_NAME-SUFFIX; default:\n"
          "  a new one), written to RUN_DIR/run-id; workers given it\n"
          "  (probs-actor --run-id) join this learner only.\n"
          "  --set KEY=VALUE overrides a config key (repeatable); --keys lists\n"
          "  every key with its default.\n");
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv) {
  if (pb_die_with_parent_or_say("probs-learner") != 0) return 1;
  pb_entry_t e;
  pb_entry_init(&e, "probs-learner", usage);
  const char *run_dir = NULL, *run_id = NULL, *pos[1];
  int resume = 0, restart = 0, npos = 0;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("run-dir", 0, &run_dir), PB_OPTS_FLAG("resume", 0, &resume),
      PB_OPTS_FLAG("restart", 0, &restart), PB_OPTS_VALUE("run-id", 0, &run_id),
      PB_ENTRY_OPTS(&e)};
  const pb_opts_t cl = {e.prog, usage, rows, PB_OPTS_N(rows), pos, 1, &npos};
  int rc = pb_entry_check(&e, pb_opts_parse(&cl, argc, argv));
  if (rc != PB_ENTRY_GO) return rc;
  if (npos != 1) return pb_opts_fail(&cl, "missing CONFIG (or RUN_DIR)");
  resume =
      (resume ? PB_LEARNER_RESUME : 0) | (restart ? PB_LEARNER_RESTART : 0);
  const char *arg = pos[0];
  char cfg_path[4200];
  if (is_dir(arg)) {
    /* probs-learner --resume RUN_DIR */
    snprintf(cfg_path, sizeof cfg_path, "%s/" PB_RUNDIR_CONFIG, arg);
    if (run_dir == NULL) run_dir = arg;
  } else {
    snprintf(cfg_path, sizeof cfg_path, "%s", arg);
  }
  pb_config_t cfg;
  if (pb_entry_config(&e, &cfg, cfg_path, run_dir) != 0) return 2;
  pb_err_t err;
  pb_err_clear(&err);
  /* A plain start never writes over a run: nothing is touched before this. */
  if (resume == 0 && pb_rundir_check_new(cfg.run.dir, &err) != 0) {
    fprintf(stderr, "probs-learner: %s\n", err.msg);
    return PB_SUPERVISE_EXIT_FATAL;
  }
  char id[PB_RUNDIR_RUN_ID_MAX + 1];
  if (run_id != NULL) {
    if (pb_rundir_run_id_check(cfg.run.name, run_id, &err) != 0) {
      fprintf(stderr, "probs-learner: --run-id: %s\n", err.msg);
      return 2;
    }
    snprintf(id, sizeof id, "%s", run_id);
  } else if (pb_rundir_new_run_id(cfg.run.name, id, sizeof id, &err) != 0) {
    fprintf(stderr, "probs-learner: %s\n", err.msg);
    return 1;
  }
  /* The directories made here, and with them the log, go again if the
   * start fails. */
  pb_rundir_undo_t undo;
  pb_rundir_undo_init(&undo);
  if (pb_rundir_undo_mkdir(&undo, cfg.run.dir, &err) != 0) {
    fprintf(stderr, "probs-learner: %s\n", err.msg);
    pb_rundir_undo_run(&undo, NULL);
    return 1;
  }
  char log_path[4200];
  pb_rundir_path(cfg.run.dir, PB_RUNDIR_LOG, log_path, sizeof log_path);
  if (undo.n > 0) pb_rundir_undo_note(&undo, log_path);
  pb_log_t *log =
      pb_log_new("learner", log_path, pb_log_level_parse(cfg.log.level), &err);
  if (log == NULL) {
    fprintf(stderr, "probs-learner: %s\n", err.msg);
    pb_rundir_undo_run(&undo, NULL);
    return 1;
  }
  /* From here on no line waits for the disk: a thread writes them
   * (learner.h), so that a stalled disk never stops the loop. */
  if (pb_log_set_async(log, PB_LEARNER_SPOOL_BYTES, &err) != 0) {
    fprintf(stderr, "probs-learner: %s\n", err.msg);
    pb_log_destroy(&log);
    pb_rundir_undo_run(&undo, NULL);
    return 1;
  }
  /* Process-wide torch settings, before any thread exists. */
  pb_nn_tune_malloc(NULL);
  pb_nn_set_threads(cfg.model.threads);
  pb_learner_t *l = pb_learner_new(&cfg, resume, id, log, &err);
  if (l == NULL) {
    /* A start-up error (a config that does not fit the run dir, lost
     * checkpoints, a port in use): restarting would only repeat it. */
    pb_log_error(log, "learner cannot start: %s", err.msg);
    pb_log_destroy(&log);
    pb_rundir_undo_run(&undo, NULL);
    return PB_SUPERVISE_EXIT_FATAL;
  }
  rc = pb_learner_run(l, &err);
  if (rc != 0) pb_log_error(log, "learner failed: %s", err.msg);
  pb_learner_destroy(&l);
  pb_log_destroy(&log);
  if (rc == PB_EDENIED || rc == PB_EAGAIN) return PB_SUPERVISE_EXIT_FATAL;
  return rc == 0 ? 0 : 1;
}
