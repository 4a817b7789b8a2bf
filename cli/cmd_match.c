/* Placeholder until the match command lands (being written now). */
#include <stdio.h>
#include "cmds.h"
int pb_cmd_match(int argc, char **argv) {
  (void)argc; (void)argv;
  fprintf(stderr, "probs match: not built yet\n");
  return 1;
}
