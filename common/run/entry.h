/* entry.h - what every program's main() shares: the options --set
 * KEY=VALUE, --keys and --help, the config they make, and the signals
 * that stop the process.
 *
 * probs-learner, probs-actor, probs-evaluator and the `probs train` and
 * `probs testset` commands use it, so these options read and fail the same
 * way everywhere. A main() lists its own options with the shared ones and
 * lets pb_entry_option see every result of getopt_long first:
 *
 *     static const struct option opts[] = {
 *         {"role", required_argument, 0, 'r'}, PB_ENTRY_OPTIONS, {0}};
 *     pb_entry_t e;
 *     pb_entry_init(&e, "probs-actor", usage);
 *     while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
 *       int rc = pb_entry_option(&e, c, optarg);
 *       if (rc == PB_ENTRY_NEXT) continue;
 *       if (rc >= 0) return rc;              // --help, --keys, a bad option
 *       switch (c) { case 'r': ... }         // the program's own options
 *     }
 *     if (pb_entry_config(&e, &cfg, path, run_dir) != 0) return 2;
 */
#ifndef PB_ENTRY_H
#define PB_ENTRY_H

#include <signal.h>
#include <stdio.h>

#include "config.h"

#define PB_ENTRY_MAX_SETS 256

/* The getopt_long codes of the shared options (above any character). */
enum { PB_ENTRY_SET = 0x1000, PB_ENTRY_KEYS, PB_ENTRY_HELP };

/* Their rows of a `struct option` table (<getopt.h>). -h is --help too
 * when the program's short options include "h". */
#define PB_ENTRY_OPTIONS                         \
  {"set", required_argument, 0, PB_ENTRY_SET},   \
      {"keys", no_argument, 0, PB_ENTRY_KEYS}, { \
    "help", no_argument, 0, PB_ENTRY_HELP        \
  }

/* What pb_entry_option returns besides an exit status (>= 0). */
enum { PB_ENTRY_NOT_SHARED = -1, PB_ENTRY_NEXT = -2 };

typedef struct pb_entry {
  const char *prog;       /* "probs-actor", "probs train": starts messages */
  void (*usage)(FILE *f); /* the program's usage text */
  const char *sets[PB_ENTRY_MAX_SETS]; /* the --set arguments, in order */
  int nsets;
} pb_entry_t;

/* Starts *e for program `prog` (borrowed, for messages) with its usage
 * printer. */
void pb_entry_init(pb_entry_t *e, const char *prog, void (*usage)(FILE *f));

/* Looks at one result c of getopt_long (arg: its optarg):
 *   --set KEY=VALUE  kept in e->sets (the form is checked here, the key
 *                    and value by pb_entry_config): PB_ENTRY_NEXT, or 2
 *                    after "PROG: --set 'X': expected KEY=VALUE" or "PROG:
 *                    more than 256 --set options" on stderr;
 *   --keys           every config key with its default and range on
 *                    stdout (pb_config_print_keys): 0;
 *   --help or 'h'    the usage on stdout: 0;
 *   '?' or ':'       (getopt_long has already named the bad option) the
 *                    usage on stderr: 2.
 * Anything else is the program's own: PB_ENTRY_NOT_SHARED. A result >= 0
 * is the exit status main() should return at once. */
int pb_entry_option(pb_entry_t *e, int c, const char *arg);

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
