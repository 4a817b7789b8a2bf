/* test_export.c - `probs export` as a user runs it: the real binary on a
 * checkpoint of a short training run. The file is a zip (torch.save's
 * format) holding every parameter of V and Q under its name with our
 * values; when a Python with torch is found, the torch.nn.Module shown in
 * docs/nn.md (read from the page itself) loads it with
 * torch.load(weights_only=True) and reproduces our forward pass on real
 * positions; the same Module with head='pv' reproduces a policy + value
 * network (PB_NN_HEAD_PV) exported with pb_nn_export_torch. Without torch,
 * Python's zipfile and pickletools still check the archive and its
 * pickle. Bad input (missing or damaged checkpoint,
 * unwritable output, bad usage) exits non-zero naming the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "game.h"
#include "inproc.h"
#include "model.h"
#include "nn.h"
#include "proc.h"
#include "rng.h"
#include "rundir.h"

#define CONFIG PB_SOURCE_DIR "/configs/connect4-smoke.yaml"
#define PROBS PB_BIN_DIR "/probs"
#define DOC PB_SOURCE_DIR "/docs/nn.md"

/* Runs `probs export` with args (NULL-terminated, after "export"), output
 * into log. Returns the exit status, or -1. */
static int probs_export(const char *log, const char *const *args) {
  char *argv[16] = {(char *)PROBS, (char *)"export"};
  int n = 2;
  for (int i = 0; args[i] != NULL && n < 15; i++) argv[n++] = (char *)args[i];
  argv[n] = NULL;
  unlink(log);
  pid_t pid = tp_spawn(argv, log);
  assert_true(pid > 0);
  int st = tp_wait(pid, 120);
  return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A Python that imports torch, or NULL (always NULL with PB_NO_TORCH set,
 * to run the checks made without it). */
static const char *find_python_torch(void) {
  if (getenv("PB_NO_TORCH") != NULL) return NULL;
  const char *cands[] = {getenv("PB_PYTHON"), "python3", "/usr/bin/python3"};
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
    if (cands[i] == NULL || cands[i][0] == '\0') continue;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", cands[i]);
    if (system(cmd) == 0) return cands[i];
  }
  return NULL;
}

static void write_floats(const char *path, const float *x, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(x, sizeof *x, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* The docs' snippet, exec'd as written, against our outputs: for each
 * argument FILE:PREFIX:OUTPUTS:HEAD after the first three, the network
 * PREFIX of FILE as ProbsNet(..., head=HEAD) on x.bin gives PREFIX_out.bin. */
static const char *PY_TORCH =
    "import sys, torch\n"
    "doc, d, B = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "src = open(doc).read().split('```python\\n')[1].split('```')[0]\n"
    "exec(src)\n"
    "def arr(name, shape):\n"
    "    b = open(d + '/' + name, 'rb').read()\n"
    "    return torch.frombuffer(bytearray(b), dtype=torch.float32)"
    ".reshape(shape)\n"
    "x = arr('x.bin', (B, 2, 6, 7))\n"
    "for a in sys.argv[4:]:\n"
    "    f, p, o, head = a.split(':')\n"
    "    sd = torch.load(d + '/' + f, weights_only=True)\n"
    "    net = ProbsNet({k[len(p) + 1:]: t for k, t in sd.items() "
    "if k.startswith(p + '.')}, head=head)\n"
    "    with torch.no_grad():\n"
    "        y = net(x)\n"
    "    want = arr(p + '_out.bin', (B, int(o)))\n"
    "    assert y.shape == want.shape, (p, y.shape, want.shape)\n"
    "    err = (y - want).abs().max().item()\n"
    "    assert err < 1e-5, (p, 'differs by', err)\n"
    "    print('export check ok:', p, head, 'max diff', err)\n";

/* Without torch: the zip and its pickle are well formed. */
static const char *PY_ZIP =
    "import sys, zipfile, pickletools, io\n"
    "z = zipfile.ZipFile(sys.argv[1])\n"
    "assert z.testzip() is None\n"
    "names = z.namelist()\n"
    "pkl = [n for n in names if n.endswith('/data.pkl')]\n"
    "assert len(pkl) == 1, names\n"
    "pickletools.dis(z.read(pkl[0]), out=io.StringIO())\n"
    "print('zip check ok:', len(names), 'entries')\n";

/* Positions of B random Connect Four games (up to 20 plies each), encoded
 * for the side to move, into x [B][84]. */
static void random_positions(uint64_t seed, int B, float *x) {
  const pb_game_t *g = &pb_game_connect4;
  pb_rng_t rng;
  pb_rng_seed(&rng, seed, 0);
  for (int b = 0; b < B; b++) {
    pb_state_t s;
    g->reset(&s);
    int plies = (int)pb_rng_below(&rng, 20), done = 0;
    for (int k = 0; k < plies && !done; k++) {
      uint8_t acts[64];
      int n = g->legal(&s, acts);
      if (n == 0) break;
      g->step(&s, acts[pb_rng_below(&rng, (uint32_t)n)], &done);
    }
    g->encode(&s, x + b * 84);
  }
}

static void test_export_cli(void **state) {
  (void)state;
  char d[256], ckpt[600], out[600], log[600], p[700];
  tp_tmpdir(d, sizeof d, "export");
  assert_true(d[0] != '\0');
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_int_equal(pb_config_load_file(&c, CONFIG, &err), 0);
  assert_int_equal(pb_config_set(&c, "run.dir", d, &err), 0);
  /* more than one layer of each kind, so the Module's loops are tried */
  assert_int_equal(pb_config_set(&c, "model.v.conv_layers", "2", &err), 0);
  assert_int_equal(pb_config_set(&c, "model.v.dense_layers", "2", &err), 0);
  assert_int_equal(pb_config_set(&c, "model.q.conv_layers", "3", &err), 0);
  pb_inproc_opts_t o = {.iterations_override = 1};
  assert_int_equal(pb_inproc_run(&c, NULL, &o, &err), 0);
  pb_rundir_ckpt_path(d, 1, ckpt, sizeof ckpt);
  snprintf(out, sizeof out, "%s/export.pt", d);
  snprintf(log, sizeof log, "%s/export.log", d);

  /* the real command */
  const char *ok_args[] = {ckpt, out, NULL};
  assert_int_equal(probs_export(log, ok_args), 0);
  assert_int_equal(tp_count(log, "wrote "), 1);
  assert_int_equal(tp_count(log, "version 1"), 1);

  /* our side: V and Q of the checkpoint on positions of random games */
  pb_model_t *l = pb_model_open(ckpt, "cpu", NULL, &err);
  assert_non_null(l);
  enum { B = 24 };
  static float x[B * 84], vo[B], qo[B * 7];
  random_positions(11, B, x);
  assert_int_equal(pb_nn_forward(pb_model_v(l), x, B, vo, &err), 0);
  assert_int_equal(pb_nn_forward(pb_model_q(l), x, B, qo, &err), 0);

  /* the file: a zip with every parameter, our values in it */
  char *file = tp_slurp(out);
  assert_non_null(file);
  assert_memory_equal(file, "PK", 2);
  FILE *f = fopen(out, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  const char *names[] = {"v.conv0.weight", "v.conv1.bias",  "v.dense0.weight",
                         "v.dense1.bias",  "v.head.bias",   "q.conv2.weight",
                         "q.dense0.bias",  "q.head.weight", "q.head.bias"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (memmem(file, (size_t)size, names[i], strlen(names[i])) == NULL)
      fail_msg("\"%s\" is not in %s", names[i], out);
  uint8_t *w = NULL;
  size_t wl = 0;
  assert_int_equal(pb_nn_weights_save(pb_model_q(l), 0, &w, &wl, &err), 0);
  /* the weights buffer is a 64-byte header, then the floats in layer
   * order, ending with head.weight (7 x 8) and head.bias (7): each is one
   * record of the zip */
  size_t nq = (size_t)pb_nn_param_count(pb_model_q(l));
  assert_true(wl >= 64 + 4 * nq);
  assert_non_null(memmem(file, (size_t)size, w + 64 + 4 * (nq - 63), 4 * 56));
  assert_non_null(memmem(file, (size_t)size, w + 64 + 4 * (nq - 7), 4 * 7));
  free(w);
  free(file);

  /* --net q: Q alone */
  snprintf(p, sizeof p, "%s/q.pt", d);
  const char *q_args[] = {ckpt, p, "--net", "q", NULL};
  assert_int_equal(probs_export(log, q_args), 0);
  file = tp_slurp(p);
  assert_non_null(file);
  f = fopen(p, "rb");
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  fclose(f);
  assert_non_null(memmem(file, (size_t)size, "q.head.bias", 11));
  assert_null(memmem(file, (size_t)size, "v.head.bias", 11));
  free(file);

  const char *py = find_python_torch();
  char script[600], cmd[2400];
  if (py == NULL) {
    print_message("SKIP torch check: no python with torch (set PB_PYTHON)\n");
    snprintf(script, sizeof script, "%s/zip.py", d);
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_ZIP, f);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "python3 %s %s", script, out);
    assert_int_equal(system(cmd), 0);
  } else {
    snprintf(p, sizeof p, "%s/x.bin", d);
    write_floats(p, x, B * 84);
    snprintf(p, sizeof p, "%s/v_out.bin", d);
    write_floats(p, vo, B);
    snprintf(p, sizeof p, "%s/q_out.bin", d);
    write_floats(p, qo, B * 7);
    snprintf(script, sizeof script, "%s/check.py", d);
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_TORCH, f);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "%s %s %s %s %d export.pt:v:1:v export.pt:q:7:q",
             py, script, DOC, d, B);
    assert_int_equal(system(cmd), 0);
  }
  pb_model_destroy(&l);

  /* bad input (a checkpoint that cannot be used): exit 2, the message
   * names the file; a file that cannot be written: exit 1 */
  snprintf(p, sizeof p, "%s/missing.pbck", d);
  const char *missing[] = {p, out, NULL};
  assert_int_equal(probs_export(log, missing), 2); /* bad input */
  assert_true(tp_count(log, p) >= 1);

  snprintf(p, sizeof p, "%s/torn.pbck", d);
  snprintf(cmd, sizeof cmd, "head -c 300 %s > %s", ckpt, p);
  assert_int_equal(system(cmd), 0);
  const char *torn[] = {p, out, NULL};
  assert_int_equal(probs_export(log, torn), 2); /* bad input */
  assert_true(tp_count(log, p) >= 1);
  assert_true(tp_count(log, "truncated") >= 1);

  snprintf(p, sizeof p, "%s/config.yaml", d); /* not a checkpoint at all */
  const char *foreign[] = {p, out, NULL};
  assert_int_equal(probs_export(log, foreign), 2); /* bad input */
  assert_true(tp_count(log, p) >= 1);

  const char *unwritable[] = {ckpt, "/nonexistent-dir/x.pt", NULL};
  assert_int_equal(probs_export(log, unwritable), 1);
  assert_true(tp_count(log, "/nonexistent-dir/x.pt") >= 1);

  const char *usage1[] = {ckpt, NULL};
  assert_int_equal(probs_export(log, usage1), 2);
  const char *usage2[] = {ckpt, out, "--net", "x", NULL};
  assert_int_equal(probs_export(log, usage2), 2);
  const char *usage3[] = {ckpt, out, "--bogus", NULL};
  assert_int_equal(probs_export(log, usage3), 2);
  const char *help[] = {"--help", NULL};
  assert_int_equal(probs_export(log, help), 0);
  assert_true(tp_count(log, "usage: probs export") == 1);
  assert_true(tp_count(log, "weights_only=True") == 1);

  snprintf(cmd, sizeof cmd, "rm -rf %s", d);
  assert_int_equal(system(cmd), 0);
}

/* A policy + value network (PB_NN_HEAD_PV, Connect Four's 7 actions and
 * the value: 8 outputs), trained a few steps and exported with
 * pb_nn_export_torch: the docs' Module with head='pv' gives our forward
 * pass exactly (logits raw, tanh of the last column only). */
static void test_export_pv(void **state) {
  (void)state;
  char d[256], out[600], p[700], script[600], cmd[2400];
  tp_tmpdir(d, sizeof d, "export-pv");
  assert_true(d[0] != '\0');
  pb_err_t err;
  enum { B = 16, A = 7, O = A + 1 };
  pb_nn_spec_t s = {2, 6, 7, O, PB_NN_HEAD_PV, 2, 8, 2, 16, 0, PB_NN_NORM_NONE};
  pb_nn_opt_t opt = {1e-2f, 0.0f, 0.0f};
  pb_nn_t *nn = pb_nn_new(&s, &opt, "cpu", 13, &err);
  assert_non_null(nn);
  static float x[B * 84], t[B * O], y[B * O];
  random_positions(12, B, x);
  /* a few steps, so that the exported weights are not the initial ones:
   * uniform policy targets, values alternating +-1 */
  for (int i = 0; i < B * O; i++)
    t[i] = i % O < A ? 1.0f / A : (i / O % 2 ? 1.0f : -1.0f);
  for (int k = 0; k < 3; k++)
    assert_int_equal(pb_nn_train_step(nn, x, t, NULL, B, NULL, &err), 0);
  assert_int_equal(pb_nn_forward(nn, x, B, y, &err), 0);
  int logit_beyond = 0;
  for (int i = 0; i < B; i++) {
    assert_true(y[i * O + A] > -1.0f && y[i * O + A] < 1.0f);
    for (int a = 0; a < A; a++) logit_beyond += fabsf(y[i * O + a]) > 0.0f;
  }
  assert_true(logit_beyond > 0);

  snprintf(out, sizeof out, "%s/pv.pt", d);
  pb_nn_t *nets[1] = {nn};
  const char *prefix[1] = {"pv"};
  assert_int_equal(pb_nn_export_torch(nets, prefix, 1, out, &err), 0);
  char *file = tp_slurp(out);
  assert_non_null(file);
  assert_memory_equal(file, "PK", 2);
  free(file);

  const char *py = find_python_torch();
  if (py == NULL) {
    print_message("SKIP torch check: no python with torch (set PB_PYTHON)\n");
    snprintf(script, sizeof script, "%s/zip.py", d);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_ZIP, f);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "python3 %s %s", script, out);
    assert_int_equal(system(cmd), 0);
  } else {
    snprintf(p, sizeof p, "%s/x.bin", d);
    write_floats(p, x, B * 84);
    snprintf(p, sizeof p, "%s/pv_out.bin", d);
    write_floats(p, y, B * O);
    snprintf(script, sizeof script, "%s/check.py", d);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_TORCH, f);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "%s %s %s %s %d pv.pt:pv:%d:pv", py, script, DOC,
             d, B, O);
    assert_int_equal(system(cmd), 0);
    /* the Module really tells the heads apart: as 'q' the value column is
     * the raw linear output, not ours */
    snprintf(cmd, sizeof cmd, "%s %s %s %s %d pv.pt:pv:%d:q >/dev/null 2>&1",
             py, script, DOC, d, B, O);
    assert_int_not_equal(system(cmd), 0);
  }
  pb_nn_destroy(&nn);
  snprintf(cmd, sizeof cmd, "rm -rf %s", d);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  pb_nn_set_threads(1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_export_cli),
      cmocka_unit_test(test_export_pv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
