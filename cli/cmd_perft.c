/* Placeholder until the perft command lands (being written now). */
#include <stdio.h>
#include "cmds.h"
int pb_cmd_perft(int argc, char **argv) {
  (void)argc; (void)argv;
  fprintf(stderr, "probs perft: not built yet\n");
  return 1;
}
