/* probs keys - makes the CURVE keys of a run.
 *
 *   probs keys DIR
 *
 * Writes DIR/learner.key, learner.pub, worker.key, worker.pub and
 * authorized_keys (net/curve.h says what each is). Then set
 * net.curve_dir: DIR for every process of the run: the learner needs
 * learner.key and authorized_keys, the workers and the evaluator
 * worker.key and learner.pub. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "curve.h"

int pb_cmd_keys(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') {
    FILE *f = argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr;
    fprintf(f,
            "usage: probs keys DIR\n"
            "Makes the CURVE keys of a run in DIR: learner.key (the\n"
            "learner's pair, secret), learner.pub, worker.key (a worker\n"
            "pair), worker.pub and authorized_keys (the worker keys the\n"
            "learner accepts; add a line per further worker key). Then set\n"
            "net.curve_dir: DIR in the run's config.\n");
    return f == stdout ? 0 : 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_curve_make_dir(argv[1], &err) != 0) {
    fprintf(stderr, "probs keys: %s\n", err.msg);
    return err.code == PB_EINVAL ? 2 : 1;
  }
  printf("wrote %s/{learner,worker}.{key,pub} and %s/authorized_keys\n",
         argv[1], argv[1]);
  printf("set net.curve_dir: %s for the learner, the workers and the "
         "evaluator\n",
         argv[1]);
  return 0;
}
