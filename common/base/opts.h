/* opts.h - the command line of every program and subcommand, read from a
 * table: one row per option, the program's variables as the destinations.
 *
 * A row names an option by its long name ("games" for --games) and/or a
 * one-letter alias (-E), and says what it takes:
 *   a value   stored as a pointer into argv in the caller's const char *
 *             (the last one given wins): "--name VALUE", "--name=VALUE",
 *             "-E VALUE", "-EVALUE"; the value may begin with '-';
 *   a flag    the caller's int set to 1: "--name" or "-E";
 *   a list    a value that may be repeated: each one appended, in order,
 *             to the caller's array of const char * (its count in an int),
 *             up to the row's maximum.
 * Every other argument is positional and goes, in order, to the caller's
 * array of them, up to its maximum; options and positionals may be mixed,
 * "-" alone is positional, and after "--" every argument is. "--help" and
 * "-h" are every program's. Long names match whole (no abbreviations);
 * one-letter aliases do not combine ("-ab" is not "-a -b").
 *
 *     const char *games = "100", *pos[1];
 *     int json = 0, npos = 0;
 *     const pb_opts_row_t rows[] = {PB_OPTS_VALUE("games", 'g', &games),
 *                                   PB_OPTS_FLAG("json", 0, &json)};
 *     const pb_opts_t o = {"probs match", usage, rows, PB_OPTS_N(rows),
 *                          pos, 1, &npos};
 *     int rc = pb_opts_parse(&o, argc, argv);
 *     if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
 *
 * Nothing is allocated and argv is not changed: the values stored point
 * into it and live as long as it does. A table the program got wrong (two
 * rows of one name, a row without a destination) is a bug and stops the
 * program (pb_assert); what the user typed never does. */
#ifndef PB_OPTS_H
#define PB_OPTS_H

#include <stdio.h>

typedef enum pb_opts_kind {
  PB_OPTS_KIND_VALUE, /* const char *: the last value given */
  PB_OPTS_KIND_FLAG,  /* int: 1 when given */
  PB_OPTS_KIND_LIST   /* const char *[max] and its count: every value */
} pb_opts_kind_t;

/* One option. Build rows with the macros below rather than by hand. */
typedef struct pb_opts_row {
  const char *name;    /* long name without "--", or NULL: the alias only */
  char alias;          /* one-letter alias (-E), or 0: the long name only */
  pb_opts_kind_t kind; /* which of the destinations below is set */
  const char **value;  /* VALUE: the caller's variable */
  int *flag;           /* FLAG: the caller's variable */
  const char **list;   /* LIST: the caller's array of `max` entries */
  int *count;          /* LIST: entries in it (start it at 0 or above) */
  int max;             /* LIST: its size */
} pb_opts_row_t;

/* The rows: long name n (a string literal, or NULL), alias a (a char, or
 * 0), and the destination: p a const char ** (VALUE) or an int * (FLAG);
 * arr a const char *[m] with its count *cnt (LIST). */
#define PB_OPTS_VALUE(n, a, p) \
  { .name = (n), .alias = (a), .kind = PB_OPTS_KIND_VALUE, .value = (p) }
#define PB_OPTS_FLAG(n, a, p) \
  { .name = (n), .alias = (a), .kind = PB_OPTS_KIND_FLAG, .flag = (p) }
#define PB_OPTS_LIST(n, a, arr, cnt, m)                                  \
  {                                                                      \
    .name = (n), .alias = (a), .kind = PB_OPTS_KIND_LIST, .list = (arr), \
    .count = (cnt), .max = (m)                                           \
  }

/* The number of rows of a table that is an array. */
#define PB_OPTS_N(rows) ((int)(sizeof(rows) / sizeof((rows)[0])))

/* A program's command line: borrowed for the length of pb_opts_parse. */
typedef struct pb_opts {
  const char *prog;       /* "probs match", "probs-learner": starts messages */
  void (*usage)(FILE *f); /* prints the program's usage text to f */
  const pb_opts_row_t *rows;
  int nrows;
  const char **pos; /* positional arguments, in order (NULL if max_pos 0) */
  int max_pos;      /* how many pos holds */
  int *npos;        /* how many were given (NULL if max_pos 0) */
} pb_opts_t;

/* What pb_opts_parse returns. */
enum {
  PB_OPTS_OK = 0,   /* parsed: the caller goes on */
  PB_OPTS_HELP = 1, /* --help: the usage is on stdout; the program exits 0 */
  PB_OPTS_USAGE = 2 /* refused: said on stderr; the program exits 2 (this
                       value, the usage status of every program) */
};

/* Reads argv[1..argc) (argv[0] is the program or subcommand) by o's
 * table, storing into the rows' destinations and o->pos as it goes; the
 * caller sets the defaults first. Returns
 *   PB_OPTS_OK     every argument read;
 *   PB_OPTS_HELP   at the first "--help" or "-h": o->usage(stdout);
 *   PB_OPTS_USAGE  at the first argument that cannot be read, after one
 *                  line naming it on stderr, then o->usage(stderr):
 *                    "PROG: unknown option '--x'"
 *                    "PROG: option '--x' needs a value"
 *                    "PROG: option '--x' takes no value"    (a flag)
 *                    "PROG: option '--x' given more than N times" (a list)
 *                    "PROG: unexpected argument 'y'"  (past o->max_pos).
 * After HELP or USAGE the destinations may hold part of the command line;
 * they are not for use. */
int pb_opts_parse(const pb_opts_t *o, int argc, char **argv);

/* The exit status of a program whose pb_opts_parse returned rc, when rc
 * is not PB_OPTS_OK: 0 for PB_OPTS_HELP, 2 for PB_OPTS_USAGE. */
int pb_opts_exit(int rc);

/* A command line that parsed but does not make sense (a positional
 * missing, options that do not go together): prints "PROG: " and the
 * printf-formatted message as one line on stderr, then o->usage(stderr).
 * Returns PB_OPTS_USAGE, which is the exit status as well. */
int pb_opts_fail(const pb_opts_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
