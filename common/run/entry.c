/* entry.c - the options, config and signals every main() shares. */
#include "entry.h"

#include <signal.h>
#include <string.h>

#ifndef PB_VERSION /* CMakeLists.txt defines it: project(VERSION) */
#define PB_VERSION "unknown"
#endif

void pb_entry_init(pb_entry_t *e, const char *prog, void (*usage)(FILE *f)) {
  memset(e, 0, sizeof *e);
  e->prog = prog;
  e->usage = usage;
}

int pb_entry_check(const pb_entry_t *e, int parsed) {
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  for (int i = 0; i < e->nsets; i++) {
    const char *arg = e->sets[i];
    if (strchr(arg, '=') == NULL || arg[0] == '=') {
      fprintf(stderr, "%s: --set '%s': expected KEY=VALUE\n", e->prog, arg);
      return 2;
    }
  }
  if (e->version) {
    printf("%s %s\n", e->prog, PB_VERSION);
    return 0;
  }
  if (e->keys) {
    pb_config_print_keys(stdout);
    return 0;
  }
  return PB_ENTRY_GO;
}

int pb_entry_config(const pb_entry_t *e, pb_config_t *cfg, const char *path,
                    const char *run_dir) {
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_config_setup(cfg, path, e->sets, e->nsets, run_dir, &err) != 0) {
    fprintf(stderr, "%s: %s\n", e->prog, err.msg);
    return 2;
  }
  return 0;
}

void pb_entry_signals(void (*handler)(int sig)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
