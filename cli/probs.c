/* probs - the command-line entry point: dispatches to cli/cmd_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} pb_cmd_t;

static const pb_cmd_t commands[] = {
    {"perft", pb_cmd_perft, "count game-tree leaves (rules check)"},
    {"match", pb_cmd_match, "play two agents against each other"},
    {"search", pb_cmd_search, "beam-search Q-values of a position"},
    {"play", pb_cmd_play, "play against an agent in the terminal"},
    {"gtp", pb_cmd_gtp, "a checkpoint as a GTP engine on stdin/stdout"},
    {"analyze", pb_cmd_analyze, "a checkpoint's V, Q and search of a position"},
    {"analysis", pb_cmd_analysis, "batch analysis engine: JSON queries on stdin"},
    {"train", pb_cmd_train, "train with PROBS (local processes or --inproc)"},
    {"elo-calibrate", pb_cmd_elo_calibrate, "Elo of the baselines (anchors)"},
    {"solve", pb_cmd_solve, "exact value of a position and its moves"},
    {"accuracy", pb_cmd_accuracy, "share of optimal moves on a solved test set"},
    {"testset", pb_cmd_testset, "make a solved test set"},
    {"keys", pb_cmd_keys, "make the CURVE keys of a run (net.curve_dir)"},
    {"export", pb_cmd_export, "a checkpoint's networks as a PyTorch file"},
    {"serve", pb_cmd_serve, "a run's dashboard and board, read-only"},
};

/* The version of probs: CMakeLists.txt's project(VERSION) (-DPB_VERSION). */
#ifndef PB_VERSION
#define PB_VERSION "0.39.0"
#endif

static void usage(FILE *f) {
  fprintf(f, "usage: probs <command> [options]\n"
             "       probs help [COMMAND] | probs --version\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "\n'probs <command> --help' (or 'probs help <command>') "
             "describes each command.\n");
}

/* The command named `name`, or NULL. */
static const pb_cmd_t *command(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(name, commands[i].name)) return &commands[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      (!strcmp(argv[1], "help") && argc == 2)) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    printf("probs %s\n", PB_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "help")) {
    /* probs help CMD: that command's --help. */
    const pb_cmd_t *c = command(argv[2]);
    if (c == NULL || argc > 3) {
      fprintf(stderr, "probs help: %s '%s'\n",
              c == NULL ? "unknown command" : "one command at a time, not",
              c == NULL ? argv[2] : argv[3]);
      usage(stderr);
      return 2;
    }
    char *args[3] = {argv[2], "--help", NULL};
    return c->run(2, args);
  }
  const pb_cmd_t *c = command(argv[1]);
  if (c != NULL) return c->run(argc - 1, argv + 1);
  fprintf(stderr, "probs: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
