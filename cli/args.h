/* args.h - what the probs subcommands share besides their options (those
 * are read by common/base/opts.h): the exit statuses, and strict readers
 * of the numbers given as option values. */
#ifndef PB_CLI_ARGS_H
#define PB_CLI_ARGS_H


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

/* Strict decimal integer in [lo, hi] (no sign games, no trailing text):
 * 0 and *out set, or -1. */
int pb_cli_long(const char *s, long lo, long hi, long *out);

/* A seed: strict decimal in 0..2^64-1: 0 and *out set, or -1. */
int pb_cli_seed(const char *s, unsigned long long *out);

#endif
