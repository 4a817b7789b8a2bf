/* entry.c - the options, config and signals every main() shares. */
#include "entry.h"

#include <signal.h>
#include <string.h>

void pb_entry_init(pb_entry_t *e, const char *prog, void (*usage)(FILE *f)) {
  memset(e, 0, sizeof *e);
  e->prog = prog;
  e->usage = usage;
}

int pb_entry_option(pb_entry_t *e, int c, const char *arg) {
  switch (c) {
    case PB_ENTRY_SET:
      if (strchr(arg, '=') == NULL || arg[0] == '=') {
        fprintf(stderr, "%s: --set '%s': expected KEY=VALUE\n", e->prog, arg);
        return 2;
      }
      if (e->nsets == PB_ENTRY_MAX_SETS) {
        fprintf(stderr, "%s: more than %d --set options\n", e->prog,
                PB_ENTRY_MAX_SETS);
        return 2;
      }
      e->sets[e->nsets++] = arg;
      return PB_ENTRY_NEXT;
    case PB_ENTRY_KEYS:
      pb_config_print_keys(stdout);
      return 0;
    case PB_ENTRY_HELP:
    case 'h':
      e->usage(stdout);
      return 0;
    case '?':
    case ':':
      e->usage(stderr);
      return 2;
    default:
      return PB_ENTRY_NOT_SHARED;
  }
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
