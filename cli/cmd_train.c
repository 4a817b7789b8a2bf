/* Placeholder until the train command lands (being written now). */
#include <stdio.h>
#include "cmds.h"
int pb_cmd_train(int argc, char **argv) {
  (void)argc; (void)argv;
  fprintf(stderr, "probs train: not built yet\n");
  return 1;
}
