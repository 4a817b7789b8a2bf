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
    {"train", pb_cmd_train, "train with PROBS (local processes or --inproc)"},
    {"elo-calibrate", pb_cmd_elo_calibrate, "Elo of the baselines (anchors)"},
    {"solve", pb_cmd_solve, "exact value of a position and its moves"},
    {"accuracy", pb_cmd_accuracy, "share of optimal moves on a solved test set"},
    {"testset", pb_cmd_testset, "make a solved test set"},
    {"keys", pb_cmd_keys, "make the CURVE keys of a run (net.curve_dir)"},
    {"export", pb_cmd_export, "a checkpoint's networks as a PyTorch file"},
    {"serve", pb_cmd_serve, "a run's dashboard and board, read-only"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: probs <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "\n'probs <command> --help' describes each command.\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name))
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "probs: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
