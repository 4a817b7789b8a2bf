/* Placeholder until the search command lands (being written now). */
#include <stdio.h>
#include "cmds.h"
int pb_cmd_search(int argc, char **argv) {
  (void)argc; (void)argv;
  fprintf(stderr, "probs search: not built yet\n");
  return 1;
}
