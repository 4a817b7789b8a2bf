/* nn.cpp - the C API of nn.h over libtorch: the network (spec checks,
 * parameter layout and initialisation, creation, forward, threads, device).
 * nn_train.cpp holds the losses, Adam and the train steps, nn_io.cpp the
 * weights and state buffers and the export; nn_impl.hpp what they share.
 * These three are the only C++ files of probs.
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
 * are written by nn_io.cpp, byte by byte.
 *
 * The C++ files use the C modules below them only for errors (pb_err_set),
 * byte order (bytes.h) and the CRC-32 of checkpoints (pb_crc32); the
 * weights' random stream is their own splitmix64.
 *
 * Every extern "C" entry point runs its body inside pb__guard(), which turns
 * any exception into PB_ENN (PB_ENOMEM for std::bad_alloc) plus a message. */

#include "nn_impl.hpp"

#include <ATen/record_function.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

#include <dlfcn.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* ------------------------------------------------------------ the model */

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
int64_t pb__count(const pb_nn_spec_t *s) {
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

int pb__spec_check(const pb_nn_spec_t *s, pb_err_t *err) {
  if (s == nullptr) return pb_err_set(err, PB_EINVAL, "nn spec is NULL");
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
      return pb_err_set(err, PB_EINVAL,
                        "nn spec: %s = %d is out of range [%d, %d]", x.name,
                        x.value, x.lo, x.hi);
  if (s->head != PB_NN_HEAD_TANH && s->head != PB_NN_HEAD_LINEAR &&
      s->head != PB_NN_HEAD_PV)
    return pb_err_set(err, PB_EINVAL,
                      "nn spec: head = %d is none of PB_NN_HEAD_TANH (%d), "
                      "PB_NN_HEAD_LINEAR (%d), PB_NN_HEAD_PV (%d)",
                      s->head, PB_NN_HEAD_TANH, PB_NN_HEAD_LINEAR,
                      PB_NN_HEAD_PV);
  if (s->head == PB_NN_HEAD_PV && s->outputs < 3)
    return pb_err_set(err, PB_EINVAL,
                      "nn spec: outputs = %d with head PB_NN_HEAD_PV: needs "
                      ">= 3 (at least 2 actions, then the value)",
                      s->outputs);
  int64_t cells = (int64_t)s->planes * s->height * s->width;
  if (cells > ((int64_t)1 << 24))
    return pb_err_set(err, PB_EINVAL,
                      "nn spec: input %dx%dx%d has more than 2^24 values",
                      s->planes, s->height, s->width);
  int64_t n = pb__count(s);
  if (n > PB__MAX_PARAMS)
    return pb_err_set(err, PB_EINVAL,
                      "nn spec: %lld parameters is more than the limit of 2^31",
                      (long long)n);
  return 0;
}

/* The spec fields in serialisation order, with names for messages. */
void pb__spec_fields(const pb_nn_spec_t *s, int v[PB__NSPEC]) {
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
int pb__spec_equal(const pb_nn_spec_t *have, const pb_nn_spec_t *want,
                   const char *what, pb_err_t *err) {
  int a[PB__NSPEC], b[PB__NSPEC];
  pb__spec_fields(have, a);
  pb__spec_fields(want, b);
  for (int i = 0; i < PB__NSPEC; i++)
    if (a[i] != b[i])
      return pb_err_set(err, PB_EMISMATCH,
                        "%s: spec mismatch: %s is %d there but %d in this "
                        "network",
                        what, pb__spec_names[i], a[i], b[i]);
  return 0;
}

/* Layer views of a flat tensor, in layout order. */
std::vector<torch::Tensor> pb__views(const pb_nn *nn,
                                     const torch::Tensor &flat) {
  std::vector<torch::Tensor> w;
  w.reserve(nn->params.size());
  for (const auto &p : nn->params)
    w.push_back(flat.narrow(0, p.offset, p.numel).view(p.shape));
  return w;
}

/* The network function. `inplace` lets inference reuse activations. The
 * parameters come in layout order (pb__layout). */
torch::Tensor pb__run(const pb_nn *nn, torch::Tensor h,
                      const std::vector<torch::Tensor> &w, bool inplace) {
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
  /* In reduced precision the layers past the first pb__lp_n parameters
   * are fp32 (pb__lp_n): the activations follow their weights' type. The
   * head always is, so the outputs, and the loss after them, are fp32. */
  auto dense = [&](torch::Tensor x) {
    if (x.scalar_type() != w[k].scalar_type()) x = x.to(w[k].scalar_type());
    x = torch::linear(x, w[k], w[k + 1]);
    k += 2;
    return x;
  };
  for (int i = 0; i < s.dense_layers; i++) h = act(dense(h));
  h = dense(h);
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

/* How many of nn's parameters, from the first, reduced precision computes
 * in lp_type: the convolutions and norms of the trunk on a CPU, and the
 * hidden dense layers as well on CUDA; never the head.
 *
 * On a CPU the dense layers stay fp32 because oneDNN 2.6 (Debian's, which
 * its libtorch 1.13 calls for bf16 matrix products) corrupts its heap when
 * bf16 matmul primitives are created on more than one thread of a process,
 * one thread after the other: the learner's spot check, its V and Q
 * training and its self-play check are such threads, and it failed with
 * "out of memory" or SIGSEGV 2-6 times an hour. A stress program (bf16
 * forward passes of new batch sizes, turn by turn on 4 threads) threw
 * std::bad_alloc inside oneDNN's brgemm kernel creation within 25-125 s
 * with bf16 dense layers, and ran clean with them in fp32, as on one
 * thread, or with oneDNN's primitive cache off (docs/nn.md, "bf16 across
 * threads"). The dense layers are a tenth of the arithmetic of the
 * shipped networks; their matrix products go to the BLAS in fp32. */
size_t pb__lp_n(const pb_nn *nn) {
  if (nn->prec == PB_NN_FP32) return 0;
  const size_t tail =
      2 + (nn->device.is_cuda() ? 0 : 2 * (size_t)nn->spec.dense_layers);
  return nn->params.size() - tail;
}

torch::Tensor pb__input_mixed(const pb_nn *nn, torch::Tensor x) {
  return pb__lp_n(nn) > 0 ? x.to(nn->lp_type) : x;
}

/* The inference views in nn's precision, remaking the cast copy of theta
 * when theta has changed since it was made. */
static const std::vector<torch::Tensor> &pb__infer(pb_nn *nn) {
  const size_t n_lp = pb__lp_n(nn);
  if (n_lp == 0) return nn->infer;
  if (!nn->lp.defined() || nn->lp_gen != nn->theta_gen) {
    nn->lp = nn->theta.detach().to(nn->lp_type);
    nn->infer_lp = pb__views(nn, nn->lp);
    for (size_t i = n_lp; i < nn->infer_lp.size(); i++)
      nn->infer_lp[i] = nn->infer[i];
    nn->lp_gen = nn->theta_gen;
  }
  return nn->infer_lp;
}

/* Input [batch][planes][height][width] from caller memory, on nn's device.
 * from_blob wraps without copying; on CUDA the transfer is the one copy. */
torch::Tensor pb__input(const pb_nn *nn, const float *in, int batch) {
  const pb_nn_spec_t &s = nn->spec;
  torch::Tensor x =
      torch::from_blob(const_cast<float *>(in),
                       {batch, s.planes, s.height, s.width}, torch::kFloat32);
  return nn->device.is_cpu() ? x : x.to(nn->device);
}

/* A contiguous CPU float tensor with the contents of t (no copy if t already
 * is one). */
torch::Tensor pb__cpu(const torch::Tensor &t) {
  return t.detach().to(torch::kCPU).contiguous();
}

int pb__opt_check(const pb_nn_opt_t *o, pb_err_t *err) {
  if (!(std::isfinite(o->lr) && o->lr > 0.0f))
    return pb_err_set(err, PB_EINVAL, "nn opt: lr = %g must be > 0",
                      (double)o->lr);
  if (!(std::isfinite(o->weight_decay) && o->weight_decay >= 0.0f))
    return pb_err_set(err, PB_EINVAL, "nn opt: weight_decay = %g must be >= 0",
                      (double)o->weight_decay);
  if (!(std::isfinite(o->grad_clip) && o->grad_clip >= 0.0f))
    return pb_err_set(err, PB_EINVAL, "nn opt: grad_clip = %g must be >= 0",
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
      return pb_err_set(err, PB_EINVAL, "pb_nn_new: device is NULL");
    torch::Device dev(torch::kCPU);
    if (std::strcmp(device, "cpu") == 0) {
    } else if (std::strcmp(device, "cuda") == 0) {
      if (!torch::cuda::is_available())
        return pb_err_set(
            err, PB_EUNSUPP,
            "pb_nn_new: device \"cuda\" requested but CUDA is not "
            "available (no GPU, or a CPU-only libtorch)");
      dev = torch::Device(torch::kCUDA);
    } else if (std::strcmp(device, "auto") == 0) {
      if (torch::cuda::is_available()) dev = torch::Device(torch::kCUDA);
    } else {
      return pb_err_set(err, PB_EINVAL,
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

extern "C" int pb_nn_set_precision(pb_nn_t *nn, int precision,
                                   pb_err_t *err) {
  if (nn == nullptr || (precision != PB_NN_FP32 && precision != PB_NN_BF16))
    return pb_err_set(err, PB_EINVAL,
                      "pb_nn_set_precision: bad arguments (nn %p, precision "
                      "%d; expected PB_NN_FP32 or PB_NN_BF16)",
                      (void *)nn, precision);
  return pb__guard(err, "pb_nn_set_precision", [&]() -> int {
    nn->prec = precision;
    nn->lp_type = precision == PB_NN_BF16 ? torch::kBFloat16 : torch::kFloat32;
    nn->lp = torch::Tensor();
    nn->infer_lp.clear();
    return 0;
  });
}

extern "C" int pb_nn_precision(const pb_nn_t *nn) {
  return nn ? nn->prec : PB_NN_FP32;
}

extern "C" int pb_nn_cuda_capability(int *major, int *minor) {
  int rc = PB_EUNSUPP;
  pb__guard(nullptr, "pb_nn_cuda_capability", [&]() -> int {
    if (!torch::cuda::is_available()) return 0;
    /* The CUDA runtime that a CUDA libtorch loads answers this; probs
     * has no CUDA headers of its own, so it is looked up by name
     * (cudaDeviceGetAttribute, attributes 75 and 76: compute capability
     * major and minor, of the current device). */
    using attr_fn = int (*)(int *, int, int);
    auto fn = reinterpret_cast<attr_fn>(
        dlsym(RTLD_DEFAULT, "cudaDeviceGetAttribute"));
    int a = 0, b = 0;
    if (fn == nullptr || fn(&a, 75, 0) != 0 || fn(&b, 76, 0) != 0) a = b = 0;
    if (major) *major = a;
    if (minor) *minor = b;
    rc = 0;
    return 0;
  });
  return rc;
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

/* Operator counting (nn.h). A RecordFunction callback is a plain function
 * pointer with no user data, so the count and the callback's handle are
 * thread-locals: state of the thread that counts, between its start and
 * stop, and of no other. Only FUNCTION scopes are counted: the operators,
 * not the autograd nodes that run them. */
static thread_local int64_t pb__ops_n = 0;
static thread_local at::CallbackHandle pb__ops_h = at::INVALID_CALLBACK_HANDLE;

static std::unique_ptr<at::ObserverContext> pb__ops_cb(
    const at::RecordFunction &) {
  pb__ops_n++;
  return nullptr;
}

extern "C" int pb_nn_count_ops_start(pb_err_t *err) {
  return pb__guard(err, "pb_nn_count_ops_start", [&]() -> int {
    if (pb__ops_h == at::INVALID_CALLBACK_HANDLE)
      pb__ops_h = at::addThreadLocalCallback(
          at::RecordFunctionCallback(pb__ops_cb).scopes(
              {at::RecordScope::FUNCTION}));
    pb__ops_n = 0;
    return 0;
  });
}

extern "C" long pb_nn_count_ops_stop(void) {
  if (pb__ops_h == at::INVALID_CALLBACK_HANDLE) return -1;
  pb__guard(nullptr, "pb_nn_count_ops_stop", [&]() -> int {
    at::removeCallback(pb__ops_h);
    return 0;
  });
  pb__ops_h = at::INVALID_CALLBACK_HANDLE;
  return (long)pb__ops_n;
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
    return pb_err_set(err, PB_EUNSUPP, "pb_nn_tune_malloc: mallopt refused");
  return 0;
#else
  return pb_err_set(err, PB_EUNSUPP,
                    "pb_nn_tune_malloc: only implemented for glibc");
#endif
}

extern "C" int pb_nn_forward(pb_nn_t *nn, const float *in, int batch,
                             float *out, pb_err_t *err) {
  if (nn == nullptr || batch < 0 ||
      (batch > 0 && (in == nullptr || out == nullptr)))
    return pb_err_set(err, PB_EINVAL,
                      "pb_nn_forward: bad arguments (nn %p, batch %d, in %p, "
                      "out %p)",
                      (void *)nn, batch, (const void *)in, (void *)out);
  if (batch == 0) return 0;
  return pb__guard(err, "pb_nn_forward", [&]() -> int {
    c10::InferenceMode guard;
    torch::Tensor x = pb__input(nn, in, batch);
    x = pb__input_mixed(nn, x);
    torch::Tensor y = pb__run(nn, x, pb__infer(nn), true);
    y = pb__cpu(y);
    std::memcpy(out, y.data_ptr<float>(),
                sizeof(float) * (size_t)batch * (size_t)nn->spec.outputs);
    return 0;
  });
}
