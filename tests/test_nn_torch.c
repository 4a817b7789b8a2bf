/* test_nn_torch.c - the export for Python (pb_nn_export_torch): plain,
 * residual/norm and policy + value networks.
 *
 * When a Python with torch is found (PB_PYTHON, python3, /usr/bin/python3),
 * the export tests also check our forward pass and our Adam against
 * PyTorch's own functional ops and torch.optim.Adam (for a PV network on
 * the cross-entropy + MSE loss written in torch). */
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

#include "ckpt.h"
#include "err.h"
#include "nn.h"
#include "nn_fixtures.h"
#include "rng.h"

/* ------------------------------------------------ export + PyTorch check */

static const char *find_python(void) {
  const char *cands[] = {getenv("PB_PYTHON"), "python3", "/usr/bin/python3"};
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
    if (cands[i] == NULL || cands[i][0] == '\0') continue;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", cands[i]);
    if (system(cmd) == 0) return cands[i];
  }
  return NULL;
}

static void write_floats(const char *dir, const char *name, const float *x,
                         size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(x, sizeof *x, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Reads our export with torch.load (weights_only=True, the default from
 * PyTorch 2.6), recomputes our forward pass with torch's functional ops,
 * and replays our training steps with torch.optim.Adam. */
static const char *PY_CHECK =
    "import sys, torch, torch.nn.functional as F\n"
    "d = sys.argv[1]\n"
    "B, LR, WD, STEPS = int(sys.argv[2]), float(sys.argv[3]), "
    "float(sys.argv[4]), int(sys.argv[5])\n"
    "def arr(name, shape):\n"
    "    b = open(d + '/' + name, 'rb').read()\n"
    "    return torch.frombuffer(bytearray(b), dtype=torch.float32)"
    ".reshape(shape)\n"
    "def run(w, p, x, tanh):\n"
    "    h, k = x, 0\n"
    "    while p + '.conv%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.conv2d(h, w[p + '.conv%d.weight' % k], "
    "w[p + '.conv%d.bias' % k], padding=1), 0.01); k += 1\n"
    "    h, k = h.flatten(1), 0\n"
    "    while p + '.dense%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.linear(h, w[p + '.dense%d.weight' % k], "
    "w[p + '.dense%d.bias' % k]), 0.01); k += 1\n"
    "    h = F.linear(h, w[p + '.head.weight'], w[p + '.head.bias'])\n"
    "    return torch.tanh(h) if tanh else h\n"
    "def load(path):\n"
    "    try:\n"
    "        return torch.load(path, weights_only=True)\n"
    "    except TypeError:  # a torch older than 1.13\n"
    "        return torch.load(path)\n"
    "w = load(d + '/before.pt')\n"
    "assert isinstance(w, dict), type(w)\n"
    "assert w['q.conv0.weight'].shape == (16, 2, 3, 3), "
    "w['q.conv0.weight'].shape\n"
    "assert w['v.head.weight'].shape == (1, 12)\n"
    "x = arr('x.bin', (B, 2, 6, 7))\n"
    "for p, o, tanh in (('q', 7, False), ('v', 1, True)):\n"
    "    err = (run(w, p, x, tanh) - arr(p + '_out.bin', (B, o)))"
    ".abs().max().item()\n"
    "    assert err < 1e-5, (p, 'forward differs by', err)\n"
    "names = [k for k in w if k.startswith('q.')]\n"
    "params = [w[k].clone().requires_grad_() for k in names]\n"
    "opt = torch.optim.Adam(params, lr=LR, weight_decay=WD)\n"
    "t, m = arr('t.bin', (B, 7)), arr('m.bin', (B, 7))\n"
    "for s in range(STEPS):\n"
    "    opt.zero_grad()\n"
    "    q = run(dict(zip(names, params)), 'q', x, False)\n"
    "    loss = (((q - t) ** 2) * m).sum() / m.sum().clamp(min=1)\n"
    "    loss.backward(); opt.step()\n"
    "a = load(d + '/after.pt')\n"
    "assert list(a) == names, (list(a), names)\n"
    "err = max((a[k] - p.detach()).abs().max().item() "
    "for k, p in zip(names, params))\n"
    "assert err < 2e-6, ('adam differs by', err)\n"
    "print('python check ok: forward and Adam agree with torch', "
    "torch.__version__, 'max diff', err)\n";

static void test_export_torch(void **state) {
  (void)state;
  pb_err_t err;
  char dir[] = "/tmp/pb_test_nn_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], after[512], script[512];
  snprintf(path, sizeof path, "%s/before.pt", dir);
  snprintf(after, sizeof after, "%s/after.pt", dir);
  snprintf(script, sizeof script, "%s/check.py", dir);

  pb_nn_spec_t sq = c4_small(7, PB_NN_HEAD_LINEAR);
  pb_nn_spec_t sv = c4_small(1, PB_NN_HEAD_TANH);
  const float LR = 0.01f, WD = 0.05f;
  pb_nn_opt_t o = {LR, WD, 0.0f};
  pb_nn_t *q = pb_nn_new(&sq, &o, "cpu", 21, &err);
  pb_nn_t *v = pb_nn_new(&sv, &o, "cpu", 22, &err);
  assert_non_null(q);
  assert_non_null(v);

  pb_nn_t *nets[2] = {q, v};
  const char *prefixes[2] = {"q", "v"};
  const char *dup[2] = {"q", "q"};
  const char *empty[2] = {"q", ""};
  pb_err_clear(&err);
  assert_int_equal(pb_nn_export_torch(nets, dup, 2, path, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "duplicate"));
  assert_int_equal(pb_nn_export_torch(nets, empty, 2, path, &err), PB_EINVAL);
  assert_int_equal(pb_nn_export_torch(nets, prefixes, 0, path, &err),
                   PB_EINVAL);
  pb_err_clear(&err);
  assert_int_equal(
      pb_nn_export_torch(nets, prefixes, 2, "/nonexistent-dir/x.pt", &err),
      PB_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent-dir/x.pt"));

  assert_int_equal(pb_nn_export_torch(nets, prefixes, 2, path, &err), 0);

  enum { B = 12, STEPS = 3 };
  float x[B * 84], yq[B * 7], yv[B], t[B * 7], m[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 6, 0);
  fill_uniform(&r, x, B * 84, -1, 1);
  fill_uniform(&r, t, B * 7, -1, 1);
  for (int i = 0; i < B * 7; i++) m[i] = (i % 4) != 3;
  assert_int_equal(pb_nn_forward(q, x, B, yq, &err), 0);
  assert_int_equal(pb_nn_forward(v, x, B, yv, &err), 0);
  for (int s = 0; s < STEPS; s++)
    assert_int_equal(pb_nn_train_step(q, x, t, m, B, NULL, &err), 0);
  pb_nn_t *qa[1] = {q};
  assert_int_equal(pb_nn_export_torch(qa, prefixes, 1, after, &err), 0);
  write_floats(dir, "x.bin", x, B * 84);
  write_floats(dir, "q_out.bin", yq, B * 7);
  write_floats(dir, "v_out.bin", yv, B);
  write_floats(dir, "t.bin", t, B * 7);
  write_floats(dir, "m.bin", m, B * 7);

  /* the file is a zip archive (torch.save's format) */
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char head[2];
  assert_int_equal(fread(head, 1, 2, f), 2);
  fclose(f);
  assert_memory_equal(head, "PK", 2);

  const char *py = find_python();
  if (py == NULL) {
    print_message("SKIP python check: no python with torch (set PB_PYTHON)\n");
  } else {
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_CHECK, f);
    assert_int_equal(fclose(f), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s %d %.9g %.9g %d", py, script, dir, B,
             (double)LR, (double)WD, STEPS);
    int rc = system(cmd);
    assert_int_equal(rc, 0);
  }
  const char *files[] = {"before.pt", "after.pt",  "check.py", "x.bin",
                         "q_out.bin", "v_out.bin", "t.bin",    "m.bin"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  assert_int_equal(rmdir(dir), 0);
  pb_nn_destroy(&q);
  pb_nn_destroy(&v);
}

/* Checks a torch.save file of res/norm networks against our forward pass
 * with torch's functional ops (group_norm, residual sums). */
static const char *PY_RES_CHECK =
    "import sys, torch, torch.nn.functional as F\n"
    "d, B = sys.argv[1], int(sys.argv[2])\n"
    "def arr(name, shape):\n"
    "    b = open(d + '/' + name, 'rb').read()\n"
    "    return torch.frombuffer(bytearray(b), dtype=torch.float32)"
    ".reshape(shape)\n"
    "try:\n"
    "    w = torch.load(d + '/res.pt', weights_only=True)\n"
    "except TypeError:\n"
    "    w = torch.load(d + '/res.pt')\n"
    "assert w['q.conv0.norm.weight'].shape == (8,)\n"
    "assert w['q.res1.conv2.weight'].shape == (8, 8, 3, 3)\n"
    "def conv(h, p):\n"
    "    h = F.conv2d(h, w[p + '.weight'], w[p + '.bias'], padding=1)\n"
    "    return h\n"
    "def norm(h, p):\n"
    "    return F.group_norm(h, 1, w[p + '.weight'], w[p + '.bias'], 1e-5)\n"
    "a = lambda h: F.leaky_relu(h, 0.01)\n"
    "h = a(norm(conv(arr('x.bin', (B, 2, 6, 7)), 'q.conv0'), 'q.conv0.norm'))\n"
    "for b in range(2):\n"
    "    p = 'q.res%d' % b\n"
    "    y = a(norm(conv(h, p + '.conv1'), p + '.norm1'))\n"
    "    h = a(norm(conv(y, p + '.conv2'), p + '.norm2') + h)\n"
    "h = a(F.linear(h.flatten(1), w['q.dense0.weight'], w['q.dense0.bias']))\n"
    "q = F.linear(h, w['q.head.weight'], w['q.head.bias'])\n"
    "err = (q - arr('q_out.bin', (B, 7))).abs().max().item()\n"
    "assert err < 1e-5, ('res/norm forward differs by', err)\n"
    "print('python check ok: res/norm forward agrees with torch, max diff',"
    " err)\n";

/* Exporting a network with residual blocks and norms: every parameter is
 * in the file under its name (the names are stored in the zip). */
static void test_export_res_norm(void **state) {
  (void)state;
  pb_err_t err;
  char dir[] = "/tmp/pb_test_nn_res_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], script[512];
  snprintf(path, sizeof path, "%s/res.pt", dir);
  snprintf(script, sizeof script, "%s/check.py", dir);
  pb_nn_spec_t s = res_spec(2, PB_NN_NORM_LAYER);
  pb_nn_t *q = make(&s, 1e-2f, 4);
  enum { B = 5 };
  float x[B * 84], t[B * 7], y[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 8, 0);
  fill_uniform(&r, x, B * 84, -1, 1);
  fill_uniform(&r, t, B * 7, -1, 1);
  /* a few steps so that norm scales and shifts are not 1 and 0 */
  for (int k = 0; k < 3; k++)
    assert_int_equal(pb_nn_train_step(q, x, t, NULL, B, NULL, &err), 0);
  assert_int_equal(pb_nn_forward(q, x, B, y, &err), 0);
  pb_nn_t *nets[1] = {q};
  const char *prefix[1] = {"q"};
  assert_int_equal(pb_nn_export_torch(nets, prefix, 1, path, &err), 0);

  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static uint8_t file[1 << 20];
  size_t n = fread(file, 1, sizeof file, f);
  fclose(f);
  assert_true(n > 4 * 8079 && n < sizeof file);
  assert_memory_equal(file, "PK", 2);
  const char *names[] = {
      "q.conv0.weight",      "q.conv0.bias",       "q.conv0.norm.weight",
      "q.conv0.norm.bias",   "q.res0.conv1.weight", "q.res0.conv1.bias",
      "q.res0.norm1.weight", "q.res0.norm1.bias",  "q.res0.conv2.weight",
      "q.res0.norm2.bias",   "q.res1.conv1.weight", "q.res1.norm2.weight",
      "q.dense0.weight",     "q.head.bias"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (memmem(file, n, names[i], strlen(names[i])) == NULL)
      fail_msg("\"%s\" is not in the export", names[i]);
  /* 4 + 4 * 2 + 2 = 14 tensors of conv0 + blocks, then dense and head */
  assert_null(memmem(file, n, "q.res2.", 7));
  assert_null(memmem(file, n, "q.conv1.", 8));
  /* the stored values: conv0.norm.weight, 8 floats, follow 152 others */
  float *p = params_of(q);
  assert_non_null(memmem(file, n, &p[152], 8 * sizeof(float)));
  assert_non_null(memmem(file, n, &p[160], 8 * sizeof(float)));
  free(p);

  const char *py = find_python();
  if (py == NULL) {
    print_message("SKIP python check: no python with torch (set PB_PYTHON)\n");
  } else {
    write_floats(dir, "x.bin", x, B * 84);
    write_floats(dir, "q_out.bin", y, B * 7);
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(PY_RES_CHECK, f);
    assert_int_equal(fclose(f), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s %d", py, script, dir, B);
    assert_int_equal(system(cmd), 0);
  }
  const char *files[] = {"res.pt", "check.py", "x.bin", "q_out.bin"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char fp[600];
    snprintf(fp, sizeof fp, "%s/%s", dir, files[i]);
    unlink(fp);
  }
  assert_int_equal(rmdir(dir), 0);
  pb_nn_destroy(&q);
}

/* PyTorch replays a PV network: its functional forward pass (logits raw,
 * tanh of the last column), and our Adam steps on the loss of nn.h written
 * with F.log_softmax (illegal logits -inf) and the masked MSE, weight
 * decay included. */
static const char *PY_PV_CHECK =
    "import sys, torch, torch.nn.functional as F\n"
    "d = sys.argv[1]\n"
    "B, A, LR, WD, STEPS = int(sys.argv[2]), int(sys.argv[3]), "
    "float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])\n"
    "def arr(name, shape):\n"
    "    b = open(d + '/' + name, 'rb').read()\n"
    "    return torch.frombuffer(bytearray(b), dtype=torch.float32)"
    ".reshape(shape)\n"
    "def run(w, x):\n"
    "    h, k = x, 0\n"
    "    while 'pv.conv%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.conv2d(h, w['pv.conv%d.weight' % k], "
    "w['pv.conv%d.bias' % k], padding=1), 0.01); k += 1\n"
    "    h, k = h.flatten(1), 0\n"
    "    while 'pv.dense%d.weight' % k in w:\n"
    "        h = F.leaky_relu(F.linear(h, w['pv.dense%d.weight' % k], "
    "w['pv.dense%d.bias' % k]), 0.01); k += 1\n"
    "    h = F.linear(h, w['pv.head.weight'], w['pv.head.bias'])\n"
    "    return torch.cat([h[:, :A], torch.tanh(h[:, A:])], 1)\n"
    "def load(path):\n"
    "    try:\n"
    "        return torch.load(path, weights_only=True)\n"
    "    except TypeError:  # a torch older than 1.13\n"
    "        return torch.load(path)\n"
    "w = load(d + '/before.pt')\n"
    "assert w['pv.head.weight'].shape[0] == A + 1\n"
    "x = arr('x.bin', (B, 2, 6, 7))\n"
    "err = (run(w, x) - arr('out.bin', (B, A + 1))).abs().max().item()\n"
    "assert err < 1e-5, ('forward differs by', err)\n"
    "t, m, L = arr('t.bin', (B, A + 1)), arr('m.bin', (B, A + 1)), "
    "arr('loss.bin', (STEPS,))\n"
    "legal, wv, zero = m[:, :A] != 0, m[:, A], torch.zeros(())\n"
    "pi = torch.where(legal, t[:, :A], zero)\n"
    "z = torch.where(wv != 0, t[:, A], zero)\n"
    "names = list(w)\n"
    "params = [w[k].clone().requires_grad_() for k in names]\n"
    "opt = torch.optim.Adam(params, lr=LR, weight_decay=WD)\n"
    "for s in range(STEPS):\n"
    "    opt.zero_grad()\n"
    "    y = run(dict(zip(names, params)), x)\n"
    "    lp = F.log_softmax(y[:, :A].masked_fill(~legal, float('-inf')), 1)\n"
    "    pol = -torch.where(legal, pi * lp, zero).sum(1).mean()\n"
    "    val = (wv * (y[:, A] - z) ** 2).sum() / wv.sum().clamp(min=1)\n"
    "    loss = pol + val\n"
    "    assert abs(loss.item() - L[s].item()) < 1e-5, (s, loss.item(), "
    "L[s].item())\n"
    "    loss.backward(); opt.step()\n"
    "a = load(d + '/after.pt')\n"
    "assert list(a) == names, (list(a), names)\n"
    "err = max((a[k] - p.detach()).abs().max().item() "
    "for k, p in zip(names, params))\n"
    "assert err < 2e-6, ('adam differs by', err)\n"
    "print('python pv check ok: forward, loss and Adam agree with torch', "
    "torch.__version__, 'max diff', err)\n";

static void test_pv_torch(void **state) {
  (void)state;
  pb_err_t err;
  const char *py = find_python();
  if (py == NULL) {
    print_message("SKIP python check: no python with torch (set PB_PYTHON)\n");
    return;
  }
  char dir[] = "/tmp/pb_test_nn_pv_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char before[512], after[512], script[512];
  snprintf(before, sizeof before, "%s/before.pt", dir);
  snprintf(after, sizeof after, "%s/after.pt", dir);
  snprintf(script, sizeof script, "%s/check.py", dir);
  enum { B = 10, A = 7, O = A + 1, STEPS = 4 };
  const float LR = 0.01f, WD = 0.05f;
  pb_nn_opt_t o = {LR, WD, 0.0f};
  pb_nn_spec_t s = pv_spec(A);
  s.dense_layers = 2;
  pb_nn_t *nn = pb_nn_new(&s, &o, "cpu", 61, &err);
  assert_non_null(nn);
  float x[B * 84], t[B * O], m[B * O], y[B * O], loss[STEPS];
  pb_rng_t r;
  pb_rng_seed(&r, 59, 0);
  fill_uniform(&r, x, B * 84, -1, 1);
  pv_targets(&r, B, A, -1, t, m); /* every row has a legal action */
  pb_nn_t *nets[1] = {nn};
  const char *prefix[1] = {"pv"};
  assert_int_equal(pb_nn_export_torch(nets, prefix, 1, before, &err), 0);
  assert_int_equal(pb_nn_forward(nn, x, B, y, &err), 0);
  for (int k = 0; k < STEPS; k++)
    assert_int_equal(pb_nn_train_step(nn, x, t, m, B, &loss[k], &err), 0);
  assert_int_equal(pb_nn_export_torch(nets, prefix, 1, after, &err), 0);
  write_floats(dir, "x.bin", x, B * 84);
  write_floats(dir, "out.bin", y, B * O);
  write_floats(dir, "t.bin", t, B * O);
  write_floats(dir, "m.bin", m, B * O);
  write_floats(dir, "loss.bin", loss, STEPS);
  FILE *f = fopen(script, "w");
  assert_non_null(f);
  fputs(PY_PV_CHECK, f);
  assert_int_equal(fclose(f), 0);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s %s %d %d %.9g %.9g %d", py, script, dir, B,
           A, (double)LR, (double)WD, STEPS);
  assert_int_equal(system(cmd), 0);
  const char *files[] = {"before.pt", "after.pt", "check.py", "x.bin",
                         "out.bin",   "t.bin",    "m.bin",    "loss.bin"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    unlink(p);
  }
  assert_int_equal(rmdir(dir), 0);
  pb_nn_destroy(&nn);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_export_torch),
      cmocka_unit_test(test_export_res_norm),
      cmocka_unit_test(test_pv_torch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
