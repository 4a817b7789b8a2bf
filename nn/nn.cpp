/* nn.cpp - the C API of nn.h over libtorch; the only C++ file of probs.
 *
 * Workload: small convolutional V/Q networks (10K-1M parameters) evaluated
 * on batches of 1 to a few thousand positions, and trained with Adam on
 * minibatches of ~128. At these sizes per-call overhead matters as much as
 * arithmetic, so the design keeps the number of tensor ops small:
 *
 * - All trainable parameters live in ONE flat float tensor `theta`; each
 *   layer's weight and bias are views into it. Adam then runs as a handful
 *   of element-wise ops over flat tensors (theta, m, v) instead of a loop over
 *   parameters, and weights/state serialise as one contiguous block.
 * - Inference uses views of theta.detach() built once at creation; they
 *   share storage with theta, so in-place updates of theta are visible.
 * - Training builds grad-tracking views of theta per step and asks autograd
 *   for d loss / d theta directly (no .grad accumulation to zero).
 * - Adam is our own (torch.optim.Adam semantics), so its state is plain
 *   tensors that serialise identically under libtorch 1.13 and 2.x.
 * - Initialisation draws from our own splitmix64 stream seeded per network:
 *   torch::manual_seed is process-global (two networks created by two
 *   threads would race on it), and torch's uniform_ sampling has changed
 *   between releases. Our stream gives the same weights for the same seed on
 *   any libtorch version and any device (values are generated on the CPU).
 *
 * Only header-declared libtorch API that exists unchanged in 1.13 and 2.x is
 * used: ATen functional ops, torch::autograd::grad, NoGradGuard,
 * InferenceMode, torch::cuda::is_available, set_num_threads. Nothing of
 * libtorch's serialisation: our buffers and the torch.save-format export
 * are written here, byte by byte.
 *
 * This file deliberately does not call into the C modules of common/
 * (pb_err_set, rng, ckpt's CRC): probs_nn is linked after probs_core, so a
 * reference from here into probs_core would not resolve for programs that do
 * not themselves pull the same object in. The few helpers needed are local and
 * static.
 *
 * Every extern "C" entry point runs its body inside pb__guard(), which turns
 * any exception into PB_ENN (PB_ENOMEM for std::bad_alloc) plus a message. */

extern "C" {
#include "nn.h"
}

#include <torch/autograd.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <dlfcn.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

/* ---------------------------------------------------------------- errors */

static int pb__nn_err(pb_err_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int pb__nn_err(pb_err_t *err, int code, const char *fmt, ...) {
  if (err != nullptr) {
    va_list ap;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* Runs f() (which returns 0 or a PB_E* code) and converts any exception into
 * an error code plus message, prefixed with the entry point's name. */
template <class F>
static int pb__guard(pb_err_t *err, const char *where, F &&f) noexcept {
  try {
    return f();
  } catch (const c10::Error &e) {
    return pb__nn_err(err, PB_ENN, "%s: libtorch: %s", where,
                      e.what_without_backtrace());
  } catch (const std::bad_alloc &) {
    return pb__nn_err(err, PB_ENOMEM, "%s: out of memory", where);
  } catch (const std::exception &e) {
    return pb__nn_err(err, PB_ENN, "%s: %s", where, e.what());
  } catch (...) {
    return pb__nn_err(err, PB_ENN, "%s: unknown C++ exception", where);
  }
}

/* ------------------------------------------------------------ byte order */

static void pb__put_u32(uint8_t *p, uint32_t x) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(x >> (8 * i));
}
static void pb__put_u64(uint8_t *p, uint64_t x) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(x >> (8 * i));
}
static uint32_t pb__get_u32(const uint8_t *p) {
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) x |= (uint32_t)p[i] << (8 * i);
  return x;
}
static uint64_t pb__get_u64(const uint8_t *p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++) x |= (uint64_t)p[i] << (8 * i);
  return x;
}
static void pb__put_floats(uint8_t *p, const float *f, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    std::memcpy(&u, &f[i], 4);
    pb__put_u32(p + 4 * i, u);
  }
}
static void pb__get_floats(float *f, const uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = pb__get_u32(p + 4 * i);
    std::memcpy(&f[i], &u, 4);
  }
}

/* CRC-32 as zlib's crc32 (and Python's zlib.crc32, so that a buffer can
 * be checked from a script): zlib's own. */
static uint32_t pb__crc32(const uint8_t *p, size_t n) {
  return (uint32_t)crc32_z(0, p, n);
}

/* ------------------------------------------------------------ the model */

namespace {
struct pb__param {
  std::string name;           /* "conv0.weight", "head.bias", ... */
  std::vector<int64_t> shape; /* torch shape */
  int64_t offset, numel;      /* slice of theta */
  int64_t fan_in;             /* for the default init bound */
  int init;                   /* PB__INIT_* */
};
enum { PB__INIT_UNIFORM = 0, PB__INIT_ONE = 1, PB__INIT_ZERO = 2 };
}  // namespace

struct pb_nn {
  pb_nn_spec_t spec;
  pb_nn_opt_t opt;
  torch::Device device{torch::kCPU};
  std::vector<pb__param> params; /* fixed order: conv*, dense*, head */
  int64_t nparams = 0;
  torch::Tensor theta;              /* [nparams], requires grad */
  torch::Tensor m, v;               /* Adam moments, [nparams] */
  int64_t step = 0;                 /* Adam steps taken */
  double grad_norm = 0;             /* of the last step, before clipping */
  double loss_policy = 0;           /* the parts of the last step's loss */
  double loss_value = 0;            /* (pb_nn_last_loss_parts) */
  std::vector<torch::Tensor> infer; /* no-grad views of theta, per param */
};

static const int64_t PB__MAX_PARAMS = (int64_t)1 << 31;

/* The parameter list of a (checked) spec, in serialisation order:
 * conv<i> (and conv<i>.norm), res<b>.{conv1,norm1,conv2,norm2}, dense<i>,
 * head. A spec without residual blocks or norms has exactly the layout of
 * format 1. */
static std::vector<pb__param> pb__layout(const pb_nn_spec_t *s) {
  std::vector<pb__param> out;
  int64_t off = 0;
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 int64_t fan_in, int init) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    out.push_back(pb__param{name, std::move(shape), off, n, fan_in, init});
    off += n;
  };
  const int64_t C = s->conv_channels;
  auto conv = [&](const std::string &p, int64_t cin) {
    add(p + ".weight", {C, cin, 3, 3}, cin * 9, PB__INIT_UNIFORM);
    add(p + ".bias", {C}, cin * 9, PB__INIT_UNIFORM);
  };
  auto norm = [&](const std::string &p) {
    if (s->norm == PB_NN_NORM_NONE) return;
    add(p + ".weight", {C}, 1, PB__INIT_ONE);
    add(p + ".bias", {C}, 1, PB__INIT_ZERO);
  };
  int64_t c = s->planes;
  for (int i = 0; i < s->conv_layers; i++) {
    std::string p = "conv" + std::to_string(i);
    conv(p, c);
    norm(p + ".norm");
    c = C;
  }
  for (int b = 0; b < s->res_blocks; b++) {
    std::string p = "res" + std::to_string(b);
    conv(p + ".conv1", C);
    norm(p + ".norm1");
    conv(p + ".conv2", C);
    norm(p + ".norm2");
  }
  int64_t f = c * s->height * s->width;
  for (int i = 0; i < s->dense_layers; i++) {
    std::string p = "dense" + std::to_string(i);
    add(p + ".weight", {s->dense_units, f}, f, PB__INIT_UNIFORM);
    add(p + ".bias", {s->dense_units}, f, PB__INIT_UNIFORM);
    f = s->dense_units;
  }
  add("head.weight", {s->outputs, f}, f, PB__INIT_UNIFORM);
  add("head.bias", {s->outputs}, f, PB__INIT_UNIFORM);
  return out;
}

/* Parameter count computed in 64 bits without building the layout, so that
 * an absurd spec is refused before anything is allocated. */
static int64_t pb__count(const pb_nn_spec_t *s) {
  int64_t n = 0, c = s->planes, C = s->conv_channels;
  int64_t nrm = s->norm != PB_NN_NORM_NONE ? 2 * C : 0;
  for (int i = 0; i < s->conv_layers; i++) {
    n += C * c * 9 + C + nrm;
    c = C;
  }
  n += (int64_t)s->res_blocks * 2 * (C * C * 9 + C + nrm);
  int64_t f = c * s->height * s->width;
  for (int i = 0; i < s->dense_layers; i++) {
    n += (int64_t)s->dense_units * f + s->dense_units;
    f = s->dense_units;
  }
  n += (int64_t)s->outputs * f + s->outputs;
  return n;
}

static int pb__spec_check(const pb_nn_spec_t *s, pb_err_t *err) {
  if (s == nullptr) return pb__nn_err(err, PB_EINVAL, "nn spec is NULL");
  struct {
    const char *name;
    int value, lo, hi;
  } f[] = {
      {"planes", s->planes, 1, 4096},
      {"height", s->height, 1, 4096},
      {"width", s->width, 1, 4096},
      {"outputs", s->outputs, 1, 1 << 20},
      {"conv_layers", s->conv_layers, 0, 64},
      {"conv_channels", s->conv_channels, s->conv_layers > 0 ? 1 : 0, 4096},
      {"dense_layers", s->dense_layers, 0, 64},
      {"dense_units", s->dense_units, s->dense_layers > 0 ? 1 : 0, 1 << 20},
      {"res_blocks", s->res_blocks, 0, s->conv_layers > 0 ? 64 : 0},
      {"norm", s->norm, PB_NN_NORM_NONE, PB_NN_NORM_LAYER},
  };
  for (const auto &x : f)
    if (x.value < x.lo || x.value > x.hi)
      return pb__nn_err(err, PB_EINVAL,
                        "nn spec: %s = %d is out of range [%d, %d]", x.name,
                        x.value, x.lo, x.hi);
  if (s->head != PB_NN_HEAD_TANH && s->head != PB_NN_HEAD_LINEAR &&
      s->head != PB_NN_HEAD_PV)
    return pb__nn_err(err, PB_EINVAL,
                      "nn spec: head = %d is none of PB_NN_HEAD_TANH (%d), "
                      "PB_NN_HEAD_LINEAR (%d), PB_NN_HEAD_PV (%d)",
                      s->head, PB_NN_HEAD_TANH, PB_NN_HEAD_LINEAR,
                      PB_NN_HEAD_PV);
  if (s->head == PB_NN_HEAD_PV && s->outputs < 3)
    return pb__nn_err(err, PB_EINVAL,
                      "nn spec: outputs = %d with head PB_NN_HEAD_PV: needs "
                      ">= 3 (at least 2 actions, then the value)",
                      s->outputs);
  int64_t cells = (int64_t)s->planes * s->height * s->width;
  if (cells > ((int64_t)1 << 24))
    return pb__nn_err(err, PB_EINVAL,
                      "nn spec: input %dx%dx%d has more than 2^24 values",
                      s->planes, s->height, s->width);
  int64_t n = pb__count(s);
  if (n > PB__MAX_PARAMS)
    return pb__nn_err(err, PB_EINVAL,
                      "nn spec: %lld parameters is more than the limit of 2^31",
                      (long long)n);
  return 0;
}

/* The spec fields in serialisation order, with names for messages. */
enum { PB__NSPEC = 11 };
static void pb__spec_fields(const pb_nn_spec_t *s, int v[PB__NSPEC]) {
  v[0] = s->planes;
  v[1] = s->height;
  v[2] = s->width;
  v[3] = s->outputs;
  v[4] = s->head;
  v[5] = s->conv_layers;
  v[6] = s->conv_channels;
  v[7] = s->dense_layers;
  v[8] = s->dense_units;
  v[9] = s->res_blocks;
  v[10] = s->norm;
}
static const char *const pb__spec_names[PB__NSPEC] = {
    "planes",       "height",      "width",      "outputs",
    "head",         "conv_layers", "conv_channels", "dense_layers",
    "dense_units",  "res_blocks",  "norm"};

/* 0 if equal, else PB_EMISMATCH naming the first differing field. */
static int pb__spec_equal(const pb_nn_spec_t *have, const pb_nn_spec_t *want,
                          const char *what, pb_err_t *err) {
  int a[PB__NSPEC], b[PB__NSPEC];
  pb__spec_fields(have, a);
  pb__spec_fields(want, b);
  for (int i = 0; i < PB__NSPEC; i++)
    if (a[i] != b[i])
      return pb__nn_err(err, PB_EMISMATCH,
                        "%s: spec mismatch: %s is %d there but %d in this "
                        "network",
                        what, pb__spec_names[i], a[i], b[i]);
  return 0;
}

/* Layer views of a flat tensor, in layout order. */
static std::vector<torch::Tensor> pb__views(const pb_nn *nn,
                                            const torch::Tensor &flat) {
  std::vector<torch::Tensor> w;
  w.reserve(nn->params.size());
  for (const auto &p : nn->params)
    w.push_back(flat.narrow(0, p.offset, p.numel).view(p.shape));
  return w;
}

/* The network function. `inplace` lets inference reuse activations. The
 * parameters come in layout order (pb__layout). */
static torch::Tensor pb__run(const pb_nn *nn, torch::Tensor h,
                             const std::vector<torch::Tensor> &w,
                             bool inplace) {
  const pb_nn_spec_t &s = nn->spec;
  const bool norm = s.norm != PB_NN_NORM_NONE;
  size_t k = 0;
  auto act = [&](torch::Tensor x) {
    return inplace ? torch::leaky_relu_(x, 0.01) : torch::leaky_relu(x, 0.01);
  };
  /* conv (+ norm): consumes its parameters */
  auto conv = [&](const torch::Tensor &x) {
    torch::Tensor y = torch::conv2d(x, w[k], w[k + 1], /*stride=*/1,
                                    /*padding=*/1);
    k += 2;
    if (norm) {
      y = torch::group_norm(y, 1, w[k], w[k + 1], 1e-5, false);
      k += 2;
    }
    return y;
  };
  for (int i = 0; i < s.conv_layers; i++) h = act(conv(h));
  for (int b = 0; b < s.res_blocks; b++) {
    torch::Tensor y = act(conv(h));
    y = conv(y);
    h = act(inplace ? y.add_(h) : y + h);
  }
  h = h.flatten(1);
  for (int i = 0; i < s.dense_layers; i++, k += 2)
    h = act(torch::linear(h, w[k], w[k + 1]));
  h = torch::linear(h, w[k], w[k + 1]);
  if (s.head == PB_NN_HEAD_TANH) h = inplace ? h.tanh_() : h.tanh();
  if (s.head == PB_NN_HEAD_PV) {
    /* policy logits raw, the last column (the value) through tanh */
    const int64_t A = s.outputs - 1;
    if (inplace)
      h.narrow(1, A, 1).tanh_();
    else
      h = torch::cat({h.narrow(1, 0, A), h.narrow(1, A, 1).tanh()}, 1);
  }
  return h;
}

/* Input [batch][planes][height][width] from caller memory, on nn's device.
 * from_blob wraps without copying; on CUDA the transfer is the one copy. */
static torch::Tensor pb__input(const pb_nn *nn, const float *in, int batch) {
  const pb_nn_spec_t &s = nn->spec;
  torch::Tensor x =
      torch::from_blob(const_cast<float *>(in),
                       {batch, s.planes, s.height, s.width}, torch::kFloat32);
  return nn->device.is_cpu() ? x : x.to(nn->device);
}

static torch::Tensor pb__rows(const pb_nn *nn, const float *p, int batch) {
  torch::Tensor x = torch::from_blob(
      const_cast<float *>(p), {batch, nn->spec.outputs}, torch::kFloat32);
  return nn->device.is_cpu() ? x : x.to(nn->device);
}

/* A contiguous CPU float tensor with the contents of t (no copy if t already
 * is one). */
static torch::Tensor pb__cpu(const torch::Tensor &t) {
  return t.detach().to(torch::kCPU).contiguous();
}

static int pb__opt_check(const pb_nn_opt_t *o, pb_err_t *err) {
  if (!(std::isfinite(o->lr) && o->lr > 0.0f))
    return pb__nn_err(err, PB_EINVAL, "nn opt: lr = %g must be > 0",
                      (double)o->lr);
  if (!(std::isfinite(o->weight_decay) && o->weight_decay >= 0.0f))
    return pb__nn_err(err, PB_EINVAL, "nn opt: weight_decay = %g must be >= 0",
                      (double)o->weight_decay);
  if (!(std::isfinite(o->grad_clip) && o->grad_clip >= 0.0f))
    return pb__nn_err(err, PB_EINVAL, "nn opt: grad_clip = %g must be >= 0",
                      (double)o->grad_clip);
  return 0;
}

/* splitmix64: a tiny, well-mixed stream for the initial weights. */
static uint64_t pb__splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* PyTorch's default Conv2d/Linear init (kaiming_uniform with a = sqrt(5)
 * for weights, which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the same
 * bound for biases), drawn from our own stream. Each parameter has its own
 * stream so that adding a layer does not shift the others' values. */
static void pb__init(const std::vector<pb__param> &params, uint64_t seed,
                     float *out) {
  for (size_t i = 0; i < params.size(); i++) {
    const pb__param &p = params[i];
    if (p.init != PB__INIT_UNIFORM) {
      float v = p.init == PB__INIT_ONE ? 1.0f : 0.0f;
      for (int64_t j = 0; j < p.numel; j++) out[p.offset + j] = v;
      continue;
    }
    uint64_t st = seed ^ (0xA0761D6478BD642Full * (uint64_t)(i + 1));
    pb__splitmix(&st);
    double bound = 1.0 / std::sqrt((double)p.fan_in);
    for (int64_t j = 0; j < p.numel; j++) {
      double u = (double)(pb__splitmix(&st) >> 40) * (1.0 / 16777216.0);
      out[p.offset + j] = (float)((2.0 * u - 1.0) * bound);
    }
  }
}

/* ----------------------------------------------------------- public API */

extern "C" int pb_nn_spec_check(const pb_nn_spec_t *spec, pb_err_t *err) {
  return pb__spec_check(spec, err);
}

extern "C" long pb_nn_spec_param_count(const pb_nn_spec_t *spec) {
  if (pb__spec_check(spec, nullptr) != 0) return -1;
  return (long)pb__count(spec);
}

extern "C" pb_nn_t *pb_nn_new(const pb_nn_spec_t *spec, const pb_nn_opt_t *opt,
                              const char *device, uint64_t seed,
                              pb_err_t *err) {
  pb_nn_t *result = nullptr;
  pb__guard(err, "pb_nn_new", [&]() -> int {
    int rc = pb__spec_check(spec, err);
    if (rc) return rc;
    pb_nn_opt_t o = {1e-3f, 0.0f, 0.0f};
    if (opt != nullptr) {
      if ((rc = pb__opt_check(opt, err))) return rc;
      o = *opt;
    }
    if (device == nullptr)
      return pb__nn_err(err, PB_EINVAL, "pb_nn_new: device is NULL");
    torch::Device dev(torch::kCPU);
    if (std::strcmp(device, "cpu") == 0) {
    } else if (std::strcmp(device, "cuda") == 0) {
      if (!torch::cuda::is_available())
        return pb__nn_err(
            err, PB_EUNSUPP,
            "pb_nn_new: device \"cuda\" requested but CUDA is not "
            "available (no GPU, or a CPU-only libtorch)");
      dev = torch::Device(torch::kCUDA);
    } else if (std::strcmp(device, "auto") == 0) {
      if (torch::cuda::is_available()) dev = torch::Device(torch::kCUDA);
    } else {
      return pb__nn_err(err, PB_EINVAL,
                        "pb_nn_new: unknown device \"%.64s\" (expected cpu, "
                        "cuda or auto)",
                        device);
    }

    std::unique_ptr<pb_nn> nn(new pb_nn());
    nn->spec = *spec;
    nn->opt = o;
    nn->device = dev;
    nn->params = pb__layout(spec);
    nn->nparams = pb__count(spec);

    std::vector<float> init((size_t)nn->nparams);
    pb__init(nn->params, seed, init.data());
    torch::Tensor cpu =
        torch::from_blob(init.data(), {nn->nparams}, torch::kFloat32);
    /* clone/to: theta must own its storage, init is freed on return. */
    nn->theta =
        (dev.is_cpu() ? cpu.clone() : cpu.to(dev)).set_requires_grad(true);
    auto fopt = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
    nn->m = torch::zeros({nn->nparams}, fopt);
    nn->v = torch::zeros({nn->nparams}, fopt);
    nn->infer = pb__views(nn.get(), nn->theta.detach());
    result = nn.release();
    return 0;
  });
  return result;
}

extern "C" void pb_nn_destroy(pb_nn_t **nn) {
  if (nn == nullptr || *nn == nullptr) return;
  pb__guard(nullptr, "pb_nn_destroy", [&]() -> int {
    delete *nn;
    return 0;
  });
  *nn = nullptr;
}

extern "C" const pb_nn_spec_t *pb_nn_spec(const pb_nn_t *nn) {
  return nn ? &nn->spec : nullptr;
}

extern "C" long pb_nn_param_count(const pb_nn_t *nn) {
  return nn ? (long)nn->nparams : -1;
}

extern "C" const char *pb_nn_device(const pb_nn_t *nn) {
  return nn == nullptr ? "none" : nn->device.is_cuda() ? "cuda" : "cpu";
}

extern "C" double pb_nn_last_grad_norm(const pb_nn_t *nn) {
  return nn ? nn->grad_norm : 0.0;
}

extern "C" int pb_nn_last_loss_parts(const pb_nn_t *nn, double *policy,
                                     double *value) {
  if (nn == nullptr) return PB_EINVAL;
  if (policy != nullptr) *policy = nn->loss_policy;
  if (value != nullptr) *value = nn->loss_value;
  return 0;
}

extern "C" int64_t pb_nn_train_steps(const pb_nn_t *nn) {
  return nn ? nn->step : -1;
}

extern "C" void pb_nn_set_threads(int n) {
  if (n < 1) n = 1;
  /* The inter-op pool is left alone: it only serves TorchScript fork/wait,
   * which probs does not use, and at::set_num_interop_threads throws once
   * any parallel work has started, so it could not be called twice. */
  pb__guard(nullptr, "pb_nn_set_threads", [&]() -> int {
    torch::set_num_threads(n);
    return 0;
  });
  /* Debian's libtorch calls the system BLAS (OpenBLAS through
   * update-alternatives) for Linear layers, and the pthread OpenBLAS keeps
   * its own pool sized to the machine, which torch::set_num_threads does not
   * touch: with one torch thread, OpenBLAS would still wake a second thread
   * per matrix product, and on 2 busy cores that costs up to 3x (docs/nn.md).
   * Looked up at run time so that builds against other BLAS (MKL in PyTorch
   * wheels, which set_num_threads does handle) need nothing. */
  using set_fn = void (*)(int);
  if (auto fn = reinterpret_cast<set_fn>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    fn(n);
}

extern "C" int pb_nn_tune_malloc(pb_err_t *err) {
#if defined(__GLIBC__)
  /* libtorch allocates every activation afresh per call. With glibc's
   * defaults, buffers above 128 KiB are mmap'd, or the freed heap top is
   * trimmed, so each forward pass faults its buffers back in page by page
   * (a third of the time at batch 1024 went to the kernel). Setting both
   * thresholds keeps freed buffers in the heap for reuse. 32 MiB is glibc's
   * maximum mmap threshold on 64-bit. */
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 ||
      mallopt(M_TRIM_THRESHOLD, 64 << 20) != 1)
    return pb__nn_err(err, PB_EUNSUPP, "pb_nn_tune_malloc: mallopt refused");
  return 0;
#else
  return pb__nn_err(err, PB_EUNSUPP,
                    "pb_nn_tune_malloc: only implemented for glibc");
#endif
}

extern "C" int pb_nn_forward(pb_nn_t *nn, const float *in, int batch,
                             float *out, pb_err_t *err) {
  if (nn == nullptr || batch < 0 ||
      (batch > 0 && (in == nullptr || out == nullptr)))
    return pb__nn_err(err, PB_EINVAL,
                      "pb_nn_forward: bad arguments (nn %p, batch %d, in %p, "
                      "out %p)",
                      (void *)nn, batch, (const void *)in, (void *)out);
  if (batch == 0) return 0;
  return pb__guard(err, "pb_nn_forward", [&]() -> int {
    c10::InferenceMode guard;
    torch::Tensor y = pb__run(nn, pb__input(nn, in, batch), nn->infer, true);
    y = pb__cpu(y);
    std::memcpy(out, y.data_ptr<float>(),
                sizeof(float) * (size_t)batch * (size_t)nn->spec.outputs);
    return 0;
  });
}

/* The loss of a PB_NN_HEAD_PV network (nn.h): y and t are [batch][A+1],
 * mk the same shape or undefined (every action legal, every value counts).
 *   policy = mean over rows of -sum_{a legal} pi_a log_softmax_legal(y)_a
 *   value  = sum_rows w (y_A - z)^2 / max(1, sum_rows w)
 * Nothing under a zero mask is read into either part or its gradient: pi and
 * z are replaced by 0 there with where() before any product (a NaN times 0
 * is NaN, and so would be its gradient), illegal logits are -inf before the
 * log-softmax, and the product pi * log p, which is 0 * -inf at an illegal
 * action, is dropped with where(). A row without a legal action takes its
 * softmax over all actions (pi is 0 there, so it adds 0) instead of over
 * none, which would be NaN. */
static void pb__pv_loss(const pb_nn *nn, const torch::Tensor &y,
                        const torch::Tensor &t, const torch::Tensor &mk,
                        torch::Tensor *policy, torch::Tensor *value) {
  const int64_t A = nn->spec.outputs - 1;
  torch::Tensor logits = y.narrow(1, 0, A), v = y.select(1, A);
  torch::Tensor pi = t.narrow(1, 0, A), z = t.select(1, A);
  if (!mk.defined()) {
    torch::Tensor lp = torch::log_softmax(logits, 1);
    *policy = -(pi * lp).sum(1).mean();
    torch::Tensor d = v - z;
    *value = (d * d).mean();
    return;
  }
  torch::Tensor legal = mk.narrow(1, 0, A) != 0;
  torch::Tensor none = legal.logical_not().all(1, /*keepdim=*/true);
  legal = legal.logical_or(none); /* rows without a legal action */
  torch::Tensor zero = torch::zeros_like(pi);
  torch::Tensor pim = torch::where(mk.narrow(1, 0, A) != 0, pi, zero);
  torch::Tensor lp = torch::log_softmax(
      logits.masked_fill(legal.logical_not(),
                         -std::numeric_limits<float>::infinity()),
      1);
  torch::Tensor prod = torch::where(legal, pim * lp, zero);
  *policy = -prod.sum(1).mean();
  torch::Tensor w = mk.select(1, A);
  torch::Tensor d = torch::where(w != 0, v - z, torch::zeros_like(v));
  *value = (d * d * w).sum() / w.sum().clamp_min(1.0);
}

/* The loss of one minibatch (nn.h, pb_nn_train_step): *l, and for a PV
 * network its two parts (undefined tensors for the other heads). */
static void pb__loss(const pb_nn *nn, const torch::Tensor &y,
                     const torch::Tensor &t, const torch::Tensor &mk,
                     torch::Tensor *l, torch::Tensor *lpol,
                     torch::Tensor *lval) {
  if (nn->spec.head == PB_NN_HEAD_PV) {
    pb__pv_loss(nn, y, t, mk, lpol, lval);
    *l = *lpol + *lval;
    return;
  }
  torch::Tensor d = y - t;
  if (mk.defined()) {
    /* where() rather than d * mask, so that a garbage (even NaN) target
     * under a zero mask cannot leak into the loss or the gradient. */
    d = torch::where(mk != 0, d, torch::zeros_like(d));
    *l = (d * d * mk).sum() / mk.sum().clamp_min(1.0);
  } else {
    *l = (d * d).mean();
  }
}

/* One Adam step of nn with gradient g and learning rate lr, exactly as
 * torch.optim.Adam (amsgrad off, maximize off):
 *   g += wd * theta; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *   theta -= lr / (1-b1^t) * m / (sqrt(v) / sqrt(1-b2^t) + eps),
 * after gradient-norm clipping with torch.nn.utils.clip_grad_norm_'s
 * factor clip / (norm + 1e-6) when the norm exceeds clip. Nothing is read
 * back from the device: the norm (before clipping) is returned as a 0-dim
 * tensor, and the clipping factor is chosen on the device. It is computed
 * in double and rounded to float, as a double scalar would be, and an
 * unclipped gradient is multiplied by exactly 1, so the result is the same
 * bits as a host-side "if (norm > clip) g *= clip / (norm + 1e-6)". */
static torch::Tensor pb__adam(pb_nn *nn, torch::Tensor g, double lr) {
  torch::NoGradGuard no_grad;
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  torch::Tensor th = nn->theta.detach();
  if (nn->opt.weight_decay != 0.0f)
    g = g.add(th, (double)nn->opt.weight_decay);
  torch::Tensor norm = g.norm();
  if (nn->opt.grad_clip > 0.0f) {
    const double clip = (double)nn->opt.grad_clip;
    torch::Tensor nd = norm.to(torch::kFloat64);
    torch::Tensor f =
        torch::scalar_tensor(clip, nd.options()).div(nd + 1e-6);
    f = torch::where(nd > clip, f, torch::ones_like(f)).to(torch::kFloat32);
    g = g.mul(f);
  }
  nn->step++;
  nn->m.mul_(b1).add_(g, 1.0 - b1);
  nn->v.mul_(b2).addcmul_(g, g, 1.0 - b2);
  double bc1 = 1.0 - std::pow(b1, (double)nn->step);
  double bc2 = 1.0 - std::pow(b2, (double)nn->step);
  torch::Tensor denom = (nn->v.sqrt() / std::sqrt(bc2)).add_(eps);
  th.addcdiv_(nn->m, denom, -lr / bc1);
  return norm;
}

/* Minibatches of `batch` rows in `total` rows (the last may be short),
 * counted in 64 bits: total + batch can overflow an int. */
static int pb__nsteps(int total, int batch) {
  return (int)(((int64_t)total + batch - 1) / batch);
}

/* k Adam steps on consecutive minibatches of `batch` rows of the `total`
 * rows at in/target/mask (nn.h, pb_nn_train_batches). One step (k == 1)
 * checks its loss before stepping, as it has to read it anyway; several
 * steps read nothing back until the last one, and undo themselves (from a
 * copy of theta, m, v taken first) if any loss was not finite. */
static int pb__train(pb_nn_t *nn, const float *in, const float *target,
                     const float *mask, int total, int batch,
                     const float *lrs, float *losses, double *grad_norms,
                     double *parts, const char *where, pb_err_t *err) {
  const int k = pb__nsteps(total, batch);
  torch::Tensor x = pb__input(nn, in, total);
  torch::Tensor t = pb__rows(nn, target, total);
  torch::Tensor mk = mask ? pb__rows(nn, mask, total) : torch::Tensor();
  const auto fopt = torch::TensorOptions().dtype(torch::kFloat32).device(nn->device);
  /* per step: loss, policy part, value part, gradient norm */
  torch::Tensor rec = torch::zeros({k, 4}, fopt);
  torch::Tensor th0, m0, v0;
  const int64_t step0 = nn->step;
  if (k > 1) {
    torch::NoGradGuard no_grad;
    th0 = nn->theta.detach().clone();
    m0 = nn->m.clone();
    v0 = nn->v.clone();
  }
  for (int j = 0; j < k; j++) {
    const int64_t r0 = (int64_t)j * batch;
    const int64_t m = std::min<int64_t>(batch, total - r0);
    torch::Tensor y =
        pb__run(nn, x.narrow(0, r0, m), pb__views(nn, nn->theta), false);
    torch::Tensor l, lpol, lval;
    pb__loss(nn, y, t.narrow(0, r0, m),
             mk.defined() ? mk.narrow(0, r0, m) : torch::Tensor(), &l, &lpol,
             &lval);
    torch::Tensor g = torch::autograd::grad({l}, {nn->theta})[0];
    if (k == 1) {
      float lv = l.item<float>();
      if (!std::isfinite(lv))
        return pb__nn_err(err, PB_ERANGE,
                          "%s: loss is %g (non-finite input or target?); "
                          "step not taken",
                          where, (double)lv);
    }
    torch::NoGradGuard no_grad;
    torch::Tensor row = rec.select(0, j);
    row.select(0, 0).copy_(l.detach());
    if (lpol.defined()) {
      row.select(0, 1).copy_(lpol.detach());
      row.select(0, 2).copy_(lval.detach());
    } else {
      row.select(0, 2).copy_(l.detach());
    }
    double lr = lrs ? (double)lrs[j] : (double)nn->opt.lr;
    row.select(0, 3).copy_(pb__adam(nn, g, lr));
  }
  torch::Tensor h = pb__cpu(rec);
  const float *r = h.data_ptr<float>();
  for (int j = 0; j < k; j++) {
    if (std::isfinite(r[4 * j])) continue;
    torch::NoGradGuard no_grad;
    nn->theta.detach().copy_(th0);
    nn->m.copy_(m0);
    nn->v.copy_(v0);
    nn->step = step0;
    return pb__nn_err(err, PB_ERANGE,
                      "%s: the loss of step %d of %d is %g (non-finite input "
                      "or target?); none of the %d steps taken",
                      where, j + 1, k, (double)r[4 * j], k);
  }
  for (int j = 0; j < k; j++) {
    if (losses) losses[j] = r[4 * j];
    if (parts) {
      parts[2 * j] = r[4 * j + 1];
      parts[2 * j + 1] = r[4 * j + 2];
    }
    /* the norm as a double read of the float, as .item<double>() gives */
    if (grad_norms) grad_norms[j] = (double)r[4 * j + 3];
  }
  nn->loss_policy = (double)r[4 * (k - 1) + 1];
  nn->loss_value = (double)r[4 * (k - 1) + 2];
  nn->grad_norm = (double)r[4 * (k - 1) + 3];
  if (lrs) nn->opt.lr = lrs[k - 1];
  return 0;
}

extern "C" int pb_nn_train_step(pb_nn_t *nn, const float *in,
                                const float *target, const float *mask,
                                int batch, float *loss, pb_err_t *err) {
  if (nn == nullptr || batch < 0 ||
      (batch > 0 && (in == nullptr || target == nullptr)))
    return pb__nn_err(err, PB_EINVAL,
                      "pb_nn_train_step: bad arguments (nn %p, batch %d, in "
                      "%p, target %p)",
                      (void *)nn, batch, (const void *)in,
                      (const void *)target);
  if (batch == 0) {
    /* An empty batch has no gradient; a step would still move the weights
     * through Adam's momentum, so it is not taken. */
    if (loss != nullptr) *loss = 0.0f;
    return 0;
  }
  return pb__guard(err, "pb_nn_train_step", [&]() -> int {
    return pb__train(nn, in, target, mask, batch, batch, nullptr, loss,
                     nullptr, nullptr, "pb_nn_train_step", err);
  });
}

extern "C" int pb_nn_train_batches(pb_nn_t *nn, const float *in,
                                   const float *target, const float *mask,
                                   int total, int batch, const float *lrs,
                                   float *losses, double *grad_norms,
                                   double *parts, pb_err_t *err) {
  if (nn == nullptr || total < 0 || batch < 1 ||
      (total > 0 && (in == nullptr || target == nullptr)))
    return pb__nn_err(err, PB_EINVAL,
                      "pb_nn_train_batches: bad arguments (nn %p, total %d, "
                      "batch %d, in %p, target %p)",
                      (void *)nn, total, batch, (const void *)in,
                      (const void *)target);
  if (lrs != nullptr)
    for (int j = 0, k = pb__nsteps(total, batch); j < k; j++)
      if (!(std::isfinite(lrs[j]) && lrs[j] > 0.0f))
        return pb__nn_err(err, PB_EINVAL,
                          "pb_nn_train_batches: lr of step %d = %g must be "
                          "> 0",
                          j + 1, (double)lrs[j]);
  if (total == 0) return 0;
  return pb__guard(err, "pb_nn_train_batches", [&]() -> int {
    return pb__train(nn, in, target, mask, total, batch, lrs, losses,
                     grad_norms, parts, "pb_nn_train_batches", err);
  });
}

extern "C" int pb_nn_set_opt(pb_nn_t *nn, const pb_nn_opt_t *opt,
                             pb_err_t *err) {
  if (nn == nullptr || opt == nullptr)
    return pb__nn_err(err, PB_EINVAL, "pb_nn_set_opt: NULL argument");
  int rc = pb__opt_check(opt, err);
  if (rc) return rc;
  nn->opt = *opt;
  return 0;
}

/* ------------------------------------------------------ weights / state */

/* Buffer layout (all little-endian):
 *   0  magic "PBNN" (weights) or "PBNS" (training state)
 *   4  u32 format version: 1, or 2 for networks with residual blocks or
 *      norms (format 1 readers refuse those rather than misread them)
 *   8  9 x i32 spec: planes height width outputs head conv_layers
 *      conv_channels dense_layers dense_units
 *  44  u32 spec extension: res_blocks (bits 0-15), norm (bits 16-23);
 *      0 in format 1
 *  48  u64 tag: model version (weights) or Adam step count (state)
 *  56  u64 parameter count N
 *  64  f32 theta[N]; state only: f32 m[N], f32 v[N]
 *  end u32 CRC-32 of every byte before it */
enum { PB__HDR = 64, PB__FMT = 1, PB__FMT_EXT = 2 };
static const char PB__MAGIC_W[4] = {'P', 'B', 'N', 'N'};
static const char PB__MAGIC_S[4] = {'P', 'B', 'N', 'S'};

namespace {
struct pb__hdr {
  pb_nn_spec_t spec;
  uint64_t tag;
  int64_t count;
};
}  // namespace

static void pb__write_hdr(uint8_t *p, const char magic[4], const pb_nn *nn,
                          uint64_t tag) {
  std::memcpy(p, magic, 4);
  uint32_t ext = (uint32_t)nn->spec.res_blocks |
                 (uint32_t)nn->spec.norm << 16;
  pb__put_u32(p + 4, ext ? PB__FMT_EXT : PB__FMT);
  int f[PB__NSPEC];
  pb__spec_fields(&nn->spec, f);
  for (int i = 0; i < 9; i++) pb__put_u32(p + 8 + 4 * i, (uint32_t)f[i]);
  pb__put_u32(p + 44, ext);
  pb__put_u64(p + 48, tag);
  pb__put_u64(p + 56, (uint64_t)nn->nparams);
}

/* Validates a weights (state = false) or state buffer: length, magic,
 * declared size, (if check_crc) the checksum, format version, then that the
 * spec is valid and agrees with the parameter count. Fills *h. */
static int pb__parse(const uint8_t *buf, size_t len, bool state, bool check_crc,
                     pb__hdr *h, const char *where, pb_err_t *err) {
  const char *kind = state ? "training-state" : "weights";
  if (buf == nullptr)
    return pb__nn_err(err, PB_EINVAL, "%s: buffer is NULL", where);
  if (len < PB__HDR + 4)
    return pb__nn_err(err, PB_ECORRUPT,
                      "%s: %s buffer truncated: %zu bytes, shorter than the "
                      "%d-byte header and checksum",
                      where, kind, len, PB__HDR + 4);
  const char *want = state ? PB__MAGIC_S : PB__MAGIC_W;
  const char *other = state ? PB__MAGIC_W : PB__MAGIC_S;
  if (std::memcmp(buf, want, 4) != 0) {
    if (std::memcmp(buf, other, 4) == 0)
      return pb__nn_err(err, PB_EMISMATCH,
                        "%s: this is a %s buffer, not a %s buffer", where,
                        state ? "weights" : "training-state", kind);
    return pb__nn_err(err, PB_ECORRUPT, "%s: not a probs %s buffer (bad magic)",
                      where, kind);
  }
  uint64_t count = pb__get_u64(buf + 56);
  uint64_t per = state ? 3 : 1;
  if (count > (uint64_t)PB__MAX_PARAMS ||
      (uint64_t)len != PB__HDR + 4 * per * count + 4)
    return pb__nn_err(err, PB_ECORRUPT,
                      "%s: %s buffer is %zu bytes but its header declares "
                      "%llu parameters (truncated or corrupt)",
                      where, kind, len, (unsigned long long)count);
  if (check_crc) {
    uint32_t have = pb__get_u32(buf + len - 4);
    uint32_t crc = pb__crc32(buf, len - 4);
    if (have != crc)
      return pb__nn_err(err, PB_ECORRUPT,
                        "%s: %s buffer checksum mismatch (stored %08x, "
                        "computed %08x): corrupt",
                        where, kind, have, crc);
  }
  /* After the checksum, so that damage reads as corruption and only an
   * intact buffer of another format reads as unsupported. */
  uint32_t fmt = pb__get_u32(buf + 4), ext = pb__get_u32(buf + 44);
  if (fmt != PB__FMT && fmt != PB__FMT_EXT)
    return pb__nn_err(err, PB_EUNSUPP,
                      "%s: %s format version %u is not supported (this build "
                      "reads versions %d and %d)",
                      where, kind, fmt, PB__FMT, PB__FMT_EXT);
  if ((fmt == PB__FMT) != (ext == 0) || (ext >> 24) != 0)
    return pb__nn_err(err, PB_ECORRUPT,
                      "%s: %s buffer of format %u has spec extension %08x",
                      where, kind, fmt, ext);
  int f[9];
  for (int i = 0; i < 9; i++) f[i] = (int)(int32_t)pb__get_u32(buf + 8 + 4 * i);
  pb_nn_spec_t s;
  s.planes = f[0];
  s.height = f[1];
  s.width = f[2];
  s.outputs = f[3];
  s.head = f[4];
  s.conv_layers = f[5];
  s.conv_channels = f[6];
  s.dense_layers = f[7];
  s.dense_units = f[8];
  s.res_blocks = (int)(ext & 0xFFFF);
  s.norm = (int)(ext >> 16 & 0xFF);
  pb_err_t sub;
  if (pb__spec_check(&s, &sub) != 0)
    return pb__nn_err(err, PB_ECORRUPT, "%s: %s buffer holds a bad spec (%s)",
                      where, kind, sub.msg);
  if (pb__count(&s) != (int64_t)count)
    return pb__nn_err(err, PB_ECORRUPT,
                      "%s: %s buffer declares %llu parameters but its spec "
                      "has %lld",
                      where, kind, (unsigned long long)count,
                      (long long)pb__count(&s));
  h->spec = s;
  h->tag = pb__get_u64(buf + 48);
  h->count = (int64_t)count;
  return 0;
}

/* Serialises nn as weights or state into a malloc'd buffer. */
static int pb__save(const pb_nn *nn, bool state, uint64_t tag, uint8_t **out,
                    size_t *len, const char *where, pb_err_t *err) {
  if (nn == nullptr || out == nullptr || len == nullptr)
    return pb__nn_err(err, PB_EINVAL, "%s: NULL argument", where);
  *out = nullptr;
  *len = 0;
  return pb__guard(err, where, [&]() -> int {
    int64_t n = nn->nparams;
    size_t total = PB__HDR + 4 * (size_t)n * (state ? 3 : 1) + 4;
    std::vector<torch::Tensor> parts = {pb__cpu(nn->theta)};
    if (state) {
      parts.push_back(pb__cpu(nn->m));
      parts.push_back(pb__cpu(nn->v));
    }
    uint8_t *p = (uint8_t *)std::malloc(total);
    if (p == nullptr)
      return pb__nn_err(err, PB_ENOMEM, "%s: cannot allocate %zu bytes", where,
                        total);
    pb__write_hdr(p, state ? PB__MAGIC_S : PB__MAGIC_W, nn, tag);
    size_t off = PB__HDR;
    for (const auto &t : parts) {
      pb__put_floats(p + off, t.data_ptr<float>(), n);
      off += 4 * (size_t)n;
    }
    pb__put_u32(p + off, pb__crc32(p, off));
    *out = p;
    *len = total;
    return 0;
  });
}

extern "C" int pb_nn_weights_save(const pb_nn_t *nn, uint64_t version,
                                  uint8_t **out, size_t *len, pb_err_t *err) {
  return pb__save(nn, false, version, out, len, "pb_nn_weights_save", err);
}

extern "C" int pb_nn_state_save(const pb_nn_t *nn, uint8_t **out, size_t *len,
                                pb_err_t *err) {
  return pb__save(nn, true, nn ? (uint64_t)nn->step : 0, out, len,
                  "pb_nn_state_save", err);
}

extern "C" int pb_nn_weights_peek(const uint8_t *buf, size_t len,
                                  pb_nn_spec_t *spec, uint64_t *version,
                                  pb_err_t *err) {
  pb__hdr h;
  int rc = pb__parse(buf, len, false, false, &h, "pb_nn_weights_peek", err);
  if (rc) return rc;
  if (spec) *spec = h.spec;
  if (version) *version = h.tag;
  return 0;
}

extern "C" int pb_nn_state_peek(const uint8_t *buf, size_t len,
                                pb_nn_spec_t *spec, pb_err_t *err) {
  pb__hdr h;
  int rc = pb__parse(buf, len, true, false, &h, "pb_nn_state_peek", err);
  if (rc) return rc;
  if (spec) *spec = h.spec;
  return 0;
}

/* Decodes `k` float blocks of a checked buffer into nn (theta, m, v). All
 * checks have passed before this runs, so nn is only touched on success. */
static int pb__load(pb_nn *nn, const uint8_t *buf, size_t len, bool state,
                    uint64_t *tag, const char *where, pb_err_t *err) {
  if (nn == nullptr)
    return pb__nn_err(err, PB_EINVAL, "%s: network is NULL", where);
  pb__hdr h;
  int rc = pb__parse(buf, len, state, true, &h, where, err);
  if (rc) return rc;
  if ((rc = pb__spec_equal(&h.spec, &nn->spec, where, err))) return rc;
  return pb__guard(err, where, [&]() -> int {
    int64_t n = nn->nparams;
    int k = state ? 3 : 1;
    torch::Tensor host = torch::empty({k, n}, torch::kFloat32);
    pb__get_floats(host.data_ptr<float>(), buf + PB__HDR, k * n);
    torch::Tensor dev = nn->device.is_cpu() ? host : host.to(nn->device);
    torch::NoGradGuard no_grad;
    nn->theta.detach().copy_(dev[0]);
    if (state) {
      nn->m.copy_(dev[1]);
      nn->v.copy_(dev[2]);
      nn->step = (int64_t)h.tag;
    }
    if (tag) *tag = h.tag;
    return 0;
  });
}

extern "C" int pb_nn_weights_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                                  uint64_t *version, pb_err_t *err) {
  return pb__load(nn, buf, len, false, version, "pb_nn_weights_load", err);
}

extern "C" int pb_nn_state_load(pb_nn_t *nn, const uint8_t *buf, size_t len,
                                pb_err_t *err) {
  return pb__load(nn, buf, len, true, nullptr, "pb_nn_state_load", err);
}

extern "C" int pb_nn_copy_weights(pb_nn_t *dst, const pb_nn_t *src,
                                  pb_err_t *err) {
  if (dst == nullptr || src == nullptr)
    return pb__nn_err(err, PB_EINVAL, "pb_nn_copy_weights: NULL network");
  if (dst == src) return 0;
  int rc = pb__spec_equal(&src->spec, &dst->spec, "pb_nn_copy_weights", err);
  if (rc) return rc;
  return pb__guard(err, "pb_nn_copy_weights", [&]() -> int {
    torch::NoGradGuard no_grad;
    dst->theta.detach().copy_(src->theta.detach());
    return 0;
  });
}

/* ------------------------------------------------------------- export */

/* The export is written in torch.save's own file format, by hand, rather
 * than with torch::pickle_save: pickle_save tags its containers with
 * torch.jit._pickle.restore_type_tag, which torch.load refuses under
 * weights_only=True, the default from PyTorch 2.6 on. The format is a
 * zip archive (stored, not compressed) holding
 *   archive/data.pkl   pickle (protocol 2) of {name: tensor}, each tensor
 *                      torch._utils._rebuild_tensor_v2(storage, 0, size,
 *                      stride, False, OrderedDict()) with the storage a
 *                      persistent id ('storage', torch.FloatStorage, key,
 *                      'cpu', numel)
 *   archive/data/<key> the raw little-endian float32 values
 *   archive/version    "3\n"
 *   archive/byteorder  "little"
 * It only names globals that the weights_only unpickler allows, and does
 * not depend on the libtorch version at all. */

namespace {
struct pb__pickle {
  std::string s;
  void op(char c) {
    s.push_back(c);
  }
  void u32(uint32_t x) {
    for (int i = 0; i < 4; i++) s.push_back((char)(uint8_t)(x >> (8 * i)));
  }
  void str(const std::string &x) { /* BINUNICODE */
    op('X');
    u32((uint32_t)x.size());
    s += x;
  }
  void integer(int64_t x) { /* BININT: 32-bit signed */
    op('J');
    u32((uint32_t)(int32_t)x);
  }
  void global(const char *module, const char *name) {
    op('c');
    s += module;
    s += '\n';
    s += name;
    s += '\n';
  }
  void tuple(const std::vector<int64_t> &v) {
    op('(');
    for (int64_t x : v) integer(x);
    op('t');
  }
};

struct pb__zip {
  struct entry {
    std::string name;
    uint32_t crc, size, offset;
  };
  std::string out;
  std::vector<entry> entries;

  void u16(uint16_t x) {
    out.push_back((char)(x & 0xFF));
    out.push_back((char)(x >> 8));
  }
  void u32(uint32_t x) {
    for (int i = 0; i < 4; i++) out.push_back((char)(uint8_t)(x >> (8 * i)));
  }
  /* One stored member. Data starts on a 64-byte boundary (an extra field
   * pads the local header), as torch.save does, so that torch.load(mmap=True)
   * can map it. */
  void add(const std::string &name, const void *data, size_t n) {
    entry e{name, pb__crc32((const uint8_t *)data, n), (uint32_t)n,
            (uint32_t)out.size()};
    size_t before = out.size() + 30 + name.size() + 4;
    size_t pad = (64 - before % 64) % 64;
    u32(0x04034b50);
    u16(20);   /* version needed: 2.0 */
    u16(0);    /* flags */
    u16(0);    /* method: stored */
    u16(0);    /* time */
    u16(0x21); /* date: 1980-01-01 */
    u32(e.crc);
    u32(e.size);
    u32(e.size);
    u16((uint16_t)name.size());
    u16((uint16_t)(4 + pad));
    out += name;
    u16(0x4246); /* extra field id, as PyTorch's padding field */
    u16((uint16_t)pad);
    out.append(pad, 'Z');
    out.append((const char *)data, n);
    entries.push_back(e);
  }
  void finish() {
    uint32_t cd = (uint32_t)out.size();
    for (const entry &e : entries) {
      u32(0x02014b50);
      u16(20); /* made by */
      u16(20); /* needed */
      u16(0);
      u16(0);
      u16(0);
      u16(0x21);
      u32(e.crc);
      u32(e.size);
      u32(e.size);
      u16((uint16_t)e.name.size());
      u16(0); /* extra */
      u16(0); /* comment */
      u16(0); /* disk */
      u16(0); /* internal attributes */
      u32(0); /* external attributes */
      u32(e.offset);
      out += e.name;
    }
    uint32_t cd_size = (uint32_t)out.size() - cd;
    u32(0x06054b50);
    u16(0);
    u16(0);
    u16((uint16_t)entries.size());
    u16((uint16_t)entries.size());
    u32(cd_size);
    u32(cd);
    u16(0);
  }
};
}  // namespace

extern "C" int pb_nn_export_torch(pb_nn_t *const *nets,
                                  const char *const *prefix, int n,
                                  const char *path, pb_err_t *err) {
  if (nets == nullptr || prefix == nullptr || path == nullptr || n < 1)
    return pb__nn_err(err, PB_EINVAL,
                      "pb_nn_export_torch: need n >= 1 networks, prefixes "
                      "and a path");
  for (int i = 0; i < n; i++)
    if (nets[i] == nullptr || prefix[i] == nullptr || prefix[i][0] == '\0')
      return pb__nn_err(err, PB_EINVAL,
                        "pb_nn_export_torch: network or prefix %d is missing",
                        i);
  return pb__guard(err, "pb_nn_export_torch", [&]() -> int {
    std::vector<std::string> keys;
    std::vector<std::vector<uint8_t>> blobs;
    std::vector<const pb__param *> params;
    for (int i = 0; i < n; i++) {
      const pb_nn *nn = nets[i];
      torch::Tensor flat = pb__cpu(nn->theta);
      for (const pb__param &p : nn->params) {
        std::string key = std::string(prefix[i]) + "." + p.name;
        for (const std::string &k : keys)
          if (k == key)
            return pb__nn_err(err, PB_EINVAL,
                              "pb_nn_export_torch: duplicate key \"%s\" (two "
                              "networks with the same prefix?)",
                              key.c_str());
        std::vector<uint8_t> b((size_t)p.numel * 4);
        pb__put_floats(b.data(), flat.data_ptr<float>() + p.offset, p.numel);
        keys.push_back(key);
        blobs.push_back(std::move(b));
        params.push_back(&p);
      }
    }
    if (keys.size() > 60000)
      return pb__nn_err(err, PB_EINVAL, "pb_nn_export_torch: too many tensors");

    pb__pickle pk;
    pk.op('\x80');
    pk.op(2); /* PROTO 2 */
    pk.op('}');
    pk.op('(');
    for (size_t i = 0; i < keys.size(); i++) {
      const pb__param &p = *params[i];
      std::vector<int64_t> stride(p.shape.size());
      int64_t st = 1;
      for (size_t d = p.shape.size(); d-- > 0;) {
        stride[d] = st;
        st *= p.shape[d];
      }
      pk.str(keys[i]);
      pk.global("torch._utils", "_rebuild_tensor_v2");
      pk.op('(');
      pk.op('(');
      pk.str("storage");
      pk.global("torch", "FloatStorage");
      pk.str(std::to_string(i));
      pk.str("cpu");
      pk.integer(p.numel);
      pk.op('t');
      pk.op('Q'); /* BINPERSID */
      pk.integer(0);
      pk.tuple(p.shape);
      pk.tuple(stride);
      pk.op('\x89'); /* NEWFALSE: requires_grad */
      pk.global("collections", "OrderedDict");
      pk.op(')');
      pk.op('R');
      pk.op('t');
      pk.op('R');
    }
    pk.op('u'); /* SETITEMS */
    pk.op('.');

    pb__zip zip;
    zip.add("archive/data.pkl", pk.s.data(), pk.s.size());
    for (size_t i = 0; i < keys.size(); i++)
      zip.add("archive/data/" + std::to_string(i), blobs[i].data(),
              blobs[i].size());
    zip.add("archive/version", "3\n", 2);
    zip.add("archive/byteorder", "little", 6);
    zip.finish();
    if (zip.out.size() > 0xFFFFFFF0u)
      return pb__nn_err(err, PB_EINVAL,
                        "pb_nn_export_torch: %zu bytes is too large for a "
                        "zip without zip64",
                        zip.out.size());

    /* Written beside the target and renamed, so a reader never sees half a
     * file. */
    std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
    FILE *f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr)
      return pb__nn_err(err, PB_EIO, "pb_nn_export_torch: cannot create %s: %s",
                        tmp.c_str(), std::strerror(errno));
    bool ok =
        std::fwrite(zip.out.data(), 1, zip.out.size(), f) == zip.out.size();
    int e = errno;
    if (std::fclose(f) != 0 && ok) {
      ok = false;
      e = errno;
    }
    if (!ok || std::rename(tmp.c_str(), path) != 0) {
      if (ok) e = errno;
      std::remove(tmp.c_str());
      return pb__nn_err(err, PB_EIO, "pb_nn_export_torch: cannot write %s: %s",
                        path, std::strerror(e));
    }
    return 0;
  });
}
