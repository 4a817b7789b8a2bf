/* probs-actor - a self-play actor or beam-search worker for a probs learner.
 *
 *   probs-actor CONFIG --role selfplay|search [--set KEY=VALUE]...
 *               [--id NAME] [--run-id ID] [--log FILE]
 *
 * main() reads the arguments and the config, installs the signal handlers,
 * and hands over to the worker (actor/worker.h): pb_worker_new,
 * pb_worker_run until a signal or the learner's STOPPING, pb_worker_destroy.
 * Exit status: 0 after a clean stop, 2 for a bad command line, 1 for a
 * config it cannot load or a failure while it runs, and
 * PB_SUPERVISE_EXIT_FATAL (78) when the worker cannot start (a device it
 * cannot use, an endpoint or key it cannot use: restarting it would only
 * repeat that, so `probs train` stops instead) and when the learner is of
 * another start than --run-id says. Usage: docs/worker.md. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "entry.h"
#include "log.h"
#include "msg.h"
#include "nn.h"
#include "rundir.h"
#include "supervise.h"
#include "worker.h"
#include "util.h"

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs-actor CONFIG --role selfplay|search [options]\n"
          "  --role ROLE        selfplay (actor) or search (beam-search "
          "worker)\n"
          "  --set KEY=VALUE    override a config key (repeatable)\n"
          "  --id NAME          sender id (default ROLE-HOSTNAME-PID)\n"
          "  --run-id ID        join only the learner of this run id (its\n"
          "                     RUN_DIR/run-id; default: any learner of "
          "run.name)\n"
          "  --log FILE         also append the log to FILE\n"
          "  --keys             list every config key with its default\n"
          "  --help             this text\n"
          "CONFIG is the learner's YAML config; the worker uses its net.*, "
          "model.device\n(or its role's model.actor_device / "
          "model.searcher_device), model.threads,\ntrain.selfplay_parallel and "
          "search.* settings. See docs/worker.md.\n");
}

int main(int argc, char **argv) {
  if (pb_die_with_parent_or_say("probs-actor") != 0) return 1;
  pb_entry_t e;
  pb_entry_init(&e, "probs-actor", usage);
  const char *role_arg = NULL, *id = NULL, *log_path = NULL, *run_id = NULL;
  const char *pos[1];
  int npos = 0;
  pb_err_t err;
  pb_err_clear(&err);
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("role", 0, &role_arg), PB_OPTS_VALUE("id", 0, &id),
      PB_OPTS_VALUE("run-id", 0, &run_id), PB_OPTS_VALUE("log", 0, &log_path),
      PB_ENTRY_OPTS(&e)};
  const pb_opts_t cl = {e.prog, usage, rows, PB_OPTS_N(rows), pos, 1, &npos};
  int rc = pb_entry_check(&e, pb_opts_parse(&cl, argc, argv));
  if (rc != PB_ENTRY_GO) return rc;
  if (npos != 1) return pb_opts_fail(&cl, "missing CONFIG");
  const char *cfg_path = pos[0];
  if (role_arg == NULL) {
    fprintf(stderr, "probs-actor: --role is required (selfplay or search)\n");
    return 2;
  }
  int role = pb_worker_role_parse(role_arg);
  if (role < 0) {
    fprintf(stderr, "probs-actor: --role '%s': expected selfplay or search\n",
            role_arg);
    return 2;
  }
  if (id != NULL && pb_worker_id_check(id, &err) != 0) {
    fprintf(stderr, "probs-actor: --id: %s\n", err.msg);
    return 2;
  }

  pb_config_t cfg;
  if (pb_config_setup(&cfg, cfg_path, e.sets, e.nsets, NULL, &err) != 0) {
    fprintf(stderr, "probs-actor: %s: %s\n", cfg_path, err.msg);
    return 1;
  }
  if (run_id != NULL && pb_rundir_run_id_check(cfg.run.name, run_id, &err)) {
    fprintf(stderr, "probs-actor: --run-id: %s\n", err.msg);
    return 2;
  }

  pb_log_t *log = pb_log_new(pb_worker_component(role), log_path,
                             pb_log_level_parse(cfg.log.level), &err);
  if (log == NULL) {
    fprintf(stderr, "probs-actor: %s\n", err.msg);
    return 1;
  }
  /* No SA_RESTART: a signal should cut a blocking poll short. */
  pb_entry_signals(on_signal);

  /* Process-wide libtorch settings, before any network exists: keeping
   * freed activation buffers makes large batches 2-4x faster. */
  pb_nn_tune_malloc(NULL);
  pb_nn_set_threads(cfg.model.threads);
  pb_worker_t *w = pb_worker_new(&cfg, role, id, run_id, log, &err);
  if (w == NULL) {
    pb_log_error(log, "cannot start: %s", err.msg);
    pb_log_destroy(&log);
    return PB_SUPERVISE_EXIT_FATAL;
  }
  rc = pb_worker_run(w, &stop_flag, &err);
  if (rc != 0) pb_log_error(log, "failed: %s", err.msg);
  int wrong_start = pb_worker_wrong_start(w);
  pb_worker_destroy(&w);
  pb_log_destroy(&log);
  /* Another start's learner, or a learner whose config this build cannot
   * read (another probs version): trying again would not help. */
  return rc == 0                            ? 0
         : wrong_start || rc == PB_ECONFIG ? PB_SUPERVISE_EXIT_FATAL
                                           : 1;
}
