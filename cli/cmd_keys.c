/* probs keys - makes the CURVE keys of a run.
 *
 *   probs keys DIR                      one worker key for every worker
 *   probs keys DIR --workers N          a key per worker: worker-1..N
 *   probs keys DIR --add-worker NAME    one more worker key, authorized
 *
 * Writes DIR/learner.key, learner.pub, the worker pairs and
 * authorized_keys (common/net/curve.h says what each is). Then set
 * net.curve_dir: DIR for every process of the run: the learner needs
 * learner.key and authorized_keys, a worker or the evaluator its pair
 * (net.curve_key: NAME, NAME.key) and learner.pub. */
#include <stdio.h>

#include "args.h"
#include "cmds.h"
#include "curve.h"
#include "opts.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs keys DIR [--workers N]\n"
          "       probs keys DIR --add-worker NAME\n"
          "Makes the CURVE keys of a run in DIR: learner.key (the learner's\n"
          "pair, secret), learner.pub, the worker pairs and authorized_keys\n"
          "(the worker keys the learner accepts). Without --workers, one\n"
          "pair, worker.key, that every worker shares; with --workers N, a\n"
          "pair per worker (worker-1.key .. worker-N.key), so that the\n"
          "learner can refuse one worker and keep the others. --add-worker\n"
          "NAME adds NAME.key to an existing DIR and authorizes it; a\n"
          "running learner accepts it at once. Then set net.curve_dir: DIR\n"
          "for the run, and on each worker net.curve_key: NAME (its pair,\n"
          "NAME.key; copy it and learner.pub to the worker's machine).\n");
}

int pb_cmd_keys(int argc, char **argv) {
  enum { O_WORKERS, O_ADD, O_N };
  const char *val[O_N] = {NULL, NULL}, *dir = NULL;
  int npos = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("workers", 0, &val[O_WORKERS]),
                                PB_OPTS_VALUE("add-worker", 0, &val[O_ADD])};
  const pb_opts_t cl = {"probs keys", usage, rows, PB_OPTS_N(rows),
                        &dir,         1,     &npos};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  if (npos != 1) return pb_opts_fail(&cl, "need DIR");
  long workers = 0;
  if (val[O_WORKERS] != NULL &&
      pb_cli_long(val[O_WORKERS], 1, PB_CURVE_MAX_WORKERS, &workers) != 0) {
    fprintf(stderr, "probs keys: --workers '%s': expected 1..%d\n",
            val[O_WORKERS], PB_CURVE_MAX_WORKERS);
    return 2;
  }
  if (val[O_WORKERS] != NULL && val[O_ADD] != NULL) {
    fprintf(stderr, "probs keys: --workers and --add-worker do not go "
                    "together\n");
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  if (val[O_ADD] != NULL) {
    if (pb_curve_add_worker(dir, val[O_ADD], &err) != 0) {
      fprintf(stderr, "probs keys: %s\n", err.msg);
      return err.code == PB_EINVAL || err.code == PB_ENOTFOUND ? 2 : 1;
    }
    printf("wrote %s/%s.{key,pub} and authorized it in %s/authorized_keys\n",
           dir, val[O_ADD], dir);
    printf("on the worker: %s/%s.key and %s/learner.pub, with "
           "net.curve_key: %s\n",
           dir, val[O_ADD], dir, val[O_ADD]);
    return 0;
  }
  if (pb_curve_make_dir(dir, (int)workers, &err) != 0) {
    fprintf(stderr, "probs keys: %s\n", err.msg);
    return err.code == PB_EINVAL ? 2 : 1;
  }
  if (workers > 0)
    printf("wrote %s/learner.{key,pub}, %s/worker-1..%ld.{key,pub} and "
           "%s/authorized_keys\n",
           dir, dir, workers, dir);
  else
    printf("wrote %s/{learner,worker}.{key,pub} and %s/authorized_keys\n",
           dir, dir);
  printf("set net.curve_dir: %s for the learner, the workers and the "
         "evaluator%s\n",
         dir, workers > 0 ? ", and net.curve_key: worker-I on worker I" : "");
  return 0;
}
