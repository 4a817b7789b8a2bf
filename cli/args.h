/* args.h - the "--name value" / "--name=value" options of the probs
 * subcommands that take no flags, parsed one way for all of them. */
#ifndef PB_CLI_ARGS_H
#define PB_CLI_ARGS_H

#include <stdio.h>

/* The exit statuses of every probs command (README, "Exit status"):
 * 0 done; 1 failed while working (I/O, out of memory, a network or an
 * engine that failed); 2 bad input: usage, config, or a file or spec named
 * on the command line that cannot be used (missing, corrupt, of another
 * game); 78 the learner cannot start (probs train); 128 + N stopped by
 * signal N (130 for Ctrl-C, 143 for SIGTERM). */
enum {
  PB_EXIT_OK = 0,
  PB_EXIT_FAILED = 1,
  PB_EXIT_USAGE = 2,
  PB_EXIT_SIGNAL_BASE = 128
};

/* Reads argv[1..argc) as options named names[0..n): each takes a value,
 * given as the next argument or after '='. val[k] receives the value of
 * names[k] (the caller fills in defaults first). "--help"/"-h" prints the
 * usage to stdout. Returns 0 when parsed, 1 after --help (exit 0), 2 on an
 * unknown option or a missing value, after a message naming it on stderr
 * ("probs CMD: ...") and the usage. */
int pb_cli_options(int argc, char **argv, const char *cmd,
                   const char *const *names, int n, const char **val,
                   void (*usage)(FILE *f));

/* Strict decimal integer in [lo, hi] (no sign games, no trailing text):
 * 0 and *out set, or -1. */
int pb_cli_long(const char *s, long lo, long hi, long *out);

/* A seed: strict decimal in 0..2^64-1: 0 and *out set, or -1. */
int pb_cli_seed(const char *s, unsigned long long *out);

#endif
