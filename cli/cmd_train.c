/* probs train - trains with PROBS.
 *
 *   probs train CONFIG --inproc [--run-dir DIR] [--resume] [--set KEY=VALUE]...
 *
 * --inproc runs Algorithm 2 in this one process (common/inproc.c). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "config.h"
#include "inproc.h"
#include "log.h"
#include "util.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs train CONFIG [options]\n"
          "  --inproc           run everything in this process (no sockets)\n"
          "  --run-dir DIR      run directory (overrides run.dir)\n"
          "  --resume           continue from the newest intact checkpoint\n"
          "  --iterations N     stop once N iterations are done\n"
          "  --set KEY=VALUE    override any config key (repeatable)\n"
          "  --keys             list every config key with its default\n");
}

int pb_cmd_train(int argc, char **argv) {
  static const struct option opts[] = {
      {"inproc", no_argument, 0, 'i'},   {"run-dir", required_argument, 0, 'd'},
      {"resume", no_argument, 0, 'r'},   {"set", required_argument, 0, 's'},
      {"iterations", required_argument, 0, 'n'},
      {"keys", no_argument, 0, 'k'},     {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int inproc = 0, resume = 0, iterations = 0, c;
  const char *run_dir = NULL;
  const char *sets[256];
  int nsets = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'i': inproc = 1; break;
    case 'd': run_dir = optarg; break;
    case 'r': resume = 1; break;
    case 'n': iterations = atoi(optarg); break;
    case 's':
      if (nsets == 256) {
        fprintf(stderr, "probs train: too many --set\n");
        return 2;
      }
      sets[nsets++] = optarg;
      break;
    case 'k': pb_config_print_keys(stdout); return 0;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t cfg;
  pb_config_defaults(&cfg);
  if (pb_config_load_file(&cfg, argv[optind], &err) != 0) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return 2;
  }
  for (int i = 0; i < nsets; i++)
    if (pb_config_apply_override(&cfg, sets[i], &err) != 0) {
      fprintf(stderr, "probs train: --set %s: %s\n", sets[i], err.msg);
      return 2;
    }
  if (run_dir != NULL &&
      pb_config_set(&cfg, "run.dir", run_dir, &err) != 0) {
    fprintf(stderr, "probs train: --run-dir: %s\n", err.msg);
    return 2;
  }
  if (pb_config_check(&cfg, &err) != 0) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return 2;
  }
  if (!inproc) {
    fprintf(stderr,
            "probs train: the distributed mode is not available yet; "
            "use --inproc\n");
    return 2;
  }
  if (pb_mkdir_p(cfg.run.dir, &err) != 0) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return 1;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/learner.log", cfg.run.dir);
  pb_log_t *log = pb_log_new("learner", path, pb_log_level_parse(cfg.log.level),
                             &err);
  if (log == NULL) {
    fprintf(stderr, "probs train: %s\n", err.msg);
    return 1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  pb_inproc_opts_t o = {resume, &stop_flag, iterations};
  int rc = pb_inproc_run(&cfg, log, &o, &err);
  if (rc != 0) pb_log_error(log, "training failed: %s", err.msg);
  pb_log_destroy(&log);
  return rc == 0 ? 0 : 1;
}
