/* probs export - a checkpoint's networks as a file for PyTorch.
 *
 *   probs export CKPT OUT.pt [--net both|v|q]
 *   probs export CKPT OUT.pbck
 *
 * Reads the learner checkpoint CKPT (RUN_DIR/checkpoints/ckpt-NNNNNN.pbck)
 * and writes its V and/or Q weights with pb_nn_export_torch: one
 * torch.save-compatible file holding the state dict "v.<param>" /
 * "q.<param>" -> tensor, which torch.load(OUT, weights_only=True) reads.
 * docs/nn.md has the matching torch.nn.Module. With an OUT ending in
 * .pbck it writes a model file instead (common/nn/model.h): the checkpoint's
 * config and networks without the optimizer's moments or the trainer's
 * sections, which every command that takes --model reads (data/models/
 * holds such files). Exit status 0, 1 when the
 * checkpoint cannot be read or OUT cannot be written (the message names
 * the file), 2 for bad usage. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "algo.h"
#include "ckpt.h"
#include "cmds.h"
#include "config.h"
#include "model.h"
#include "nn.h"
#include "opts.h"

static void export_usage(FILE *f) {
  fprintf(f,
          "usage: probs export CKPT OUT.pt [--net both|v|q]\n"
          "       probs export CKPT OUT.pbck\n"
          "Writes the networks of the checkpoint CKPT (a learner checkpoint,\n"
          "RUN_DIR/checkpoints/ckpt-NNNNNN.pbck) to OUT.pt in torch.save's\n"
          "format: a dict \"v.<param>\" / \"q.<param>\" -> tensor (names and\n"
          "shapes of nn.Conv2d / nn.Linear), which Python reads with\n"
          "torch.load('OUT.pt', weights_only=True). docs/nn.md shows the\n"
          "matching torch.nn.Module.\n"
          "  --net both|v|q   which networks (default both; the keys keep\n"
          "                   their \"v.\" / \"q.\" prefix either way)\n"
          "A checkpoint of an alphazero run holds one policy+value network,\n"
          "written as \"pv.<param>\" (--net is then ignored); one of a td\n"
          "run its trained V alone (its Q is untrained; --net q is refused).\n"
          "With OUT.pbck it writes a model file: the checkpoint's config\n"
          "and network weights without the optimizer state (about a third\n"
          "of the size), which every --model and CKPT of an agent reads.\n");
}

/* probs export CKPT OUT.pbck: the model file of CKPT. */
static int export_model_file(const char *in, const char *out) {
  char rin[PATH_MAX], rout[PATH_MAX];
  if (realpath(in, rin) != NULL && realpath(out, rout) != NULL &&
      !strcmp(rin, rout)) {
    fprintf(stderr, "probs export: %s: OUT is CKPT itself; give another path\n",
            out);
    return PB_EXIT_USAGE;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t cfg;
  pb_model_t *l = pb_model_open(in, "cpu", &cfg, &err);
  if (l == NULL) {
    fprintf(stderr, "probs export: %s\n", err.msg);
    return PB_EXIT_USAGE; /* the checkpoint named cannot be used */
  }
  pb_ckpt_t *ck = pb_ckpt_new(&err);
  int rc = ck ? 0 : err.code;
  if (rc == 0)
    rc = pb_model_write_weights(ck, &cfg, pb_model_game(l),
                                pb_model_version(l), pb_model_v(l),
                                pb_model_q(l), &err);
  if (rc == 0) rc = pb_ckpt_write(ck, out, &err);
  pb_ckpt_destroy(&ck);
  if (rc != 0) {
    fprintf(stderr, "probs export: %s: %s\n", out, err.msg);
    pb_model_destroy(&l);
    return 1;
  }
  printf("wrote %s: the model file of %s (game %s, algorithm %s, version "
         "%llu)\n",
         out, in, cfg.game, cfg.algorithm,
         (unsigned long long)pb_model_version(l));
  pb_model_destroy(&l);
  return 0;
}

int pb_cmd_export(int argc, char **argv) {
  const char *pos[2] = {NULL, NULL}, *net = "both";
  int npos = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("net", 0, &net)};
  const pb_opts_t cl = {
      "probs export", export_usage, rows, PB_OPTS_N(rows), pos, 2, &npos};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  if (npos != 2) return pb_opts_fail(&cl, "need CKPT and OUT.pt");
  int want_v = !strcmp(net, "both") || !strcmp(net, "v");
  int want_q = !strcmp(net, "both") || !strcmp(net, "q");
  if (!want_v && !want_q) {
    fprintf(stderr, "probs export: --net '%s': expected both, v or q\n", net);
    return 2;
  }

  size_t ol = strlen(pos[1]);
  if (ol > 5 && !strcmp(pos[1] + ol - 5, PB_CKPT_SUFFIX))
    return export_model_file(pos[0], pos[1]);

  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t cfg;
  pb_model_t *l = pb_model_open(pos[0], "cpu", &cfg, &err);
  if (l == NULL) {
    fprintf(stderr, "probs export: %s\n", err.msg);
    return PB_EXIT_USAGE; /* the checkpoint named cannot be used */
  }
  if (pb_model_kind(l) == PB_NETS_LINEAR) {
    /* A linear evaluation (td) learns V alone: its Q slot is the untrained
     * start. */
    if (!want_v) {
      fprintf(stderr,
              "probs export: --net q: %s is a td checkpoint, whose Q is "
              "untrained (td learns V alone): export --net v\n",
              pos[0]);
      pb_model_destroy(&l);
      return PB_EXIT_USAGE;
    }
    want_q = 0;
  }
  pb_nn_t *nets[2];
  const char *prefix[2];
  int n = 0;
  if (pb_model_kind(l) == PB_NETS_PV) {
    /* One policy+value network: exported as "pv" whatever --net says. */
    want_v = want_q = 0;
    nets[n] = pb_model_q(l);
    prefix[n++] = "pv";
  }
  if (want_v) {
    nets[n] = pb_model_v(l);
    prefix[n++] = "v";
  }
  if (want_q) {
    nets[n] = pb_model_q(l);
    prefix[n++] = "q";
  }
  int rc = pb_nn_export_torch(nets, prefix, n, pos[1], &err);
  if (rc != 0) {
    fprintf(stderr, "probs export: %s: %s\n", pos[1], err.msg);
    pb_model_destroy(&l);
    return 1;
  }
  const pb_nn_spec_t *s = pb_nn_spec(nets[0]);
  printf("wrote %s: %s of %s (game %s, algorithm %s, version %llu, input "
         "[%d, %d, %d])\n",
         pos[1], n == 2 ? "v and q" : prefix[0], pos[0], cfg.game,
         cfg.algorithm, (unsigned long long)pb_model_version(l), s->planes,
         s->height,
         s->width);
  for (int i = 0; i < n; i++)
    printf("  %s: %ld parameters, %d outputs\n", prefix[i],
           pb_nn_param_count(nets[i]), pb_nn_spec(nets[i])->outputs);
  pb_model_destroy(&l);
  return 0;
}
