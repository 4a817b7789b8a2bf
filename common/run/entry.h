/* entry.h - what every program's main() shares: the options --set
 * KEY=VALUE, --keys, --version and --help, the config they make, and the signals
 * that stop the process.
 *
 * probs-learner, probs-actor, probs-evaluator and `probs train` use it, so
 * these options read and fail the same way everywhere. A main() puts the
 * shared options in its own table of options (common/base/opts.h) and lets
 * pb_entry_check see the result of parsing first:
 *
 *     pb_entry_t e;
 *     pb_entry_init(&e, "probs-actor", usage);
 *     const pb_opts_row_t rows[] = {PB_OPTS_VALUE("role", 0, &role),
 *                                   PB_ENTRY_OPTS(&e)};
 *     const pb_opts_t o = {e.prog, usage, rows, PB_OPTS_N(rows), pos, 1,
 *                          &npos};
 *     int rc = pb_entry_check(&e, pb_opts_parse(&o, argc, argv));
 *     if (rc != PB_ENTRY_GO) return rc;   // --help, --keys, a bad option
 *     ...                                 // the program's own options
 *     if (pb_entry_config(&e, &cfg, path, run_dir) != 0) return 2;
 */
#ifndef PB_ENTRY_H
#define PB_ENTRY_H

#include <signal.h>
#include <stdio.h>

#include "config.h"
#include "opts.h"

#define PB_ENTRY_MAX_SETS 256

typedef struct pb_entry {
  const char *prog;       /* "probs-actor", "probs train": starts messages */
  void (*usage)(FILE *f); /* the program's usage text */
  const char *sets[PB_ENTRY_MAX_SETS]; /* the --set arguments, in order */
  int nsets;
  int keys;    /* --keys was given */
  int version; /* --version was given */
} pb_entry_t;

/* The rows of the shared options in a table of pb_opts_row_t, filling
 * *e: --set KEY=VALUE (repeatable, at most PB_ENTRY_MAX_SETS times) and
 * --keys. --help/-h is every table's (pb_opts_parse). */
#define PB_ENTRY_OPTS(e)                                             \
  PB_OPTS_LIST("set", 0, (e)->sets, &(e)->nsets, PB_ENTRY_MAX_SETS), \
      PB_OPTS_FLAG("keys", 0, &(e)->keys),                           \
      PB_OPTS_FLAG("version", 0, &(e)->version)

/* What pb_entry_check returns when main() goes on (an exit status is
 * >= 0). */
enum { PB_ENTRY_GO = -1 };

/* Starts *e for program `prog` (borrowed, for messages) with its usage
 * printer: no --set, no --keys. */
void pb_entry_init(pb_entry_t *e, const char *prog, void (*usage)(FILE *f));

/* Looks at `parsed`, what pb_opts_parse returned for a table holding
 * PB_ENTRY_OPTS(e), and at the shared options it stored:
 *   PB_OPTS_HELP, PB_OPTS_USAGE  (already said) 0 or 2;
 *   a --set not of the form KEY=VALUE (the key and value are checked by
 *                pb_entry_config): 2 after "PROG: --set 'X': expected
 *                KEY=VALUE" on stderr;
 *   --keys       every config key with its default and range on stdout
 *                (pb_config_print_keys): 0;
 *   --version    "PROG VERSION" on stdout (PB_VERSION, the project's): 0;
 *   else         PB_ENTRY_GO: main() goes on with its own options.
 * A result >= 0 is the exit status main() should return at once. */
int pb_entry_check(const pb_entry_t *e, int parsed);

/* The config of the process (pb_config_setup): defaults, the YAML file at
 * `path`, every --set in order, run.dir = run_dir when not NULL, then the
 * whole-config check. Returns 0, or 2 after "PROG: why" on stderr. */
int pb_entry_config(const pb_entry_t *e, pb_config_t *cfg, const char *path,
                    const char *run_dir);

/* Defines, at file scope of a main.c, the process's stop flag and the
 * signal handler that raises it:
 *     PB_ENTRY_STOP_FLAG(stop_flag, on_signal)
 *     ... pb_entry_signals(on_signal); ... while (!stop_flag) ...
 * The flag holds the number of the signal that came (nonzero), so that
 * main can exit with 128 + it, as a shell reports a process a signal
 * ended. */
#define PB_ENTRY_STOP_FLAG(flag, handler) \
  static volatile sig_atomic_t flag;      \
  static void handler(int sig) {          \
    flag = sig > 0 ? sig : 1;             \
  }

/* Calls `handler` on SIGINT and SIGTERM, without SA_RESTART, so that a
 * blocking call returns early (EINTR) and the process can stop cleanly.
 * The handler belongs to main.c: it sets main's own flag. */
void pb_entry_signals(void (*handler)(int sig));

#endif
