/* nn_impl.hpp - private to common/nn/ (not part of the C API of nn.h): the
 * network struct and the helpers shared by nn.cpp (the network: spec
 * checks, layout, forward), nn_train.cpp (losses, Adam, train steps) and
 * nn_io.cpp (weights and state buffers, export). The design notes are at
 * the top of nn.cpp. */
#ifndef PB_NN_IMPL_HPP
#define PB_NN_IMPL_HPP

extern "C" {
#include "nn.h"
}

#include <torch/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <string>
#include <vector>

/* ---------------------------------------------------------------- errors */

/* Runs f() (which returns 0 or a PB_E* code) and converts any exception into
 * an error code plus message, prefixed with the entry point's name. */
template <class F>
inline int pb__guard(pb_err_t *err, const char *where, F &&f) noexcept {
  try {
    return f();
  } catch (const c10::Error &e) {
    return pb_err_set(err, PB_ENN, "%s: libtorch: %s", where,
                      e.what_without_backtrace());
  } catch (const std::bad_alloc &) {
    return pb_err_set(err, PB_ENOMEM, "%s: out of memory", where);
  } catch (const std::exception &e) {
    return pb_err_set(err, PB_ENN, "%s: %s", where, e.what());
  } catch (...) {
    return pb_err_set(err, PB_ENN, "%s: unknown C++ exception", where);
  }
}

/* ------------------------------------------------------------ the model */

struct pb__param {
  std::string name;           /* "conv0.weight", "head.bias", ... */
  std::vector<int64_t> shape; /* torch shape */
  int64_t offset, numel;      /* slice of theta */
  int64_t fan_in;             /* for the default init bound */
  int init;                   /* PB__INIT_* */
};
enum { PB__INIT_UNIFORM = 0, PB__INIT_ONE = 1, PB__INIT_ZERO = 2 };

/* The worker threads of a network's data-parallel training steps
 * (nn_train.cpp, pb__sharded): started at the first such step, kept
 * between steps (a thread made per step costs more than a shard of a
 * small network's step), joined when the network is freed. start(n, f)
 * calls f(1) .. f(n) on workers 1..n at once and returns at once; wait()
 * returns when they are done. f must not throw. */
struct pb__pool {
  std::mutex mu;
  std::condition_variable go, done;
  uint64_t gen = 0;
  int pending = 0, active = 0;
  bool stop = false;
  std::function<void(int)> job;
  std::vector<std::thread> th;
  void start(int n, std::function<void(int)> f) {
    while ((int)th.size() < n) {
      const int id = (int)th.size() + 1;
      th.emplace_back([this, id]() { loop(id); });
    }
    std::lock_guard<std::mutex> g(mu);
    job = std::move(f);
    active = n;
    pending = n;
    gen++;
    go.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> g(mu);
    done.wait(g, [this]() { return pending == 0; });
  }
  void loop(int id) {
    uint64_t seen = 0;
    std::function<void(int)> f;
    for (;;) {
      {
        std::unique_lock<std::mutex> g(mu);
        go.wait(g, [&]() { return stop || (gen != seen && id <= active); });
        if (stop) return;
        seen = gen;
        f = job;
      }
      f(id);
      std::lock_guard<std::mutex> g(mu);
      if (--pending == 0) done.notify_all();
    }
  }
  ~pb__pool() {
    {
      std::lock_guard<std::mutex> g(mu);
      stop = true;
    }
    go.notify_all();
    for (std::thread &t : th) t.join();
  }
};

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
  /* Reduced precision (pb_nn_set_precision): the layers of the first
   * pb__lp_n(nn) parameters run in `lp_type`, the rest, the head and
   * everything after it in fp32. theta stays the fp32 master copy; `lp` is
   * theta cast for inference, remade when theta_gen (bumped by every write
   * to theta) has moved past lp_gen. */
  int prec = PB_NN_FP32;
  torch::ScalarType lp_type = torch::kFloat32;
  uint64_t theta_gen = 0, lp_gen = 0;
  torch::Tensor lp;                    /* [nparams] in lp_type */
  std::vector<torch::Tensor> infer_lp; /* pb__lp_n views of lp, then theta */
  /* What training steps differentiate (nn_train.cpp, pb__leaves): leaves
   * sharing theta's storage, one per parameter, made at the first step;
   * in reduced precision, leaves_lp: those of the step's cast copy, then
   * the fp32 ones. */
  std::vector<torch::Tensor> leaves, leaves_lp;
  torch::Tensor flat;      /* theta.detach(), made with the leaves */
  int train_threads = 1;   /* pb_nn_set_train_threads */
  std::vector<std::vector<torch::Tensor>> shard_leaves; /* shards 1.. */
  std::unique_ptr<pb__pool> pool; /* their threads (pb__pool) */
  torch::Tensor zero, one; /* 0-dim fp32 on the device, made with them */
  torch::Tensor clip_nd, clip_one, clip_f; /* the clipping factor's scratch
                                    (0-dim: fp64, fp64 1, fp32), made at
                                    the first clipped step */
};

static const int64_t PB__MAX_PARAMS = (int64_t)1 << 31;

/* The spec fields in serialisation order (pb__spec_fields). */
enum { PB__NSPEC = 11 };

/* Defined in nn.cpp: the spec (pb__count: its parameter count in 64 bits;
 * pb__spec_check: valid, or PB_EINVAL with a message; pb__spec_fields: its
 * fields in serialisation order; pb__spec_equal: 0, or PB_EMISMATCH naming
 * the first differing field), the network function (pb__views: layer views
 * of a flat tensor; pb__run: the forward pass; pb__input: caller input on
 * nn's device; pb__input_mixed: an input in the type of nn's first
 * layer; pb__lp_n: how many parameters, from the first, compute in the
 * reduced type;
 * pb__cpu: a contiguous CPU tensor of the same values) and
 * pb__opt_check (the optimizer settings). */
int64_t pb__count(const pb_nn_spec_t *s);
int pb__spec_check(const pb_nn_spec_t *s, pb_err_t *err);
void pb__spec_fields(const pb_nn_spec_t *s, int v[PB__NSPEC]);
int pb__spec_equal(const pb_nn_spec_t *have, const pb_nn_spec_t *want,
                   const char *what, pb_err_t *err);
std::vector<torch::Tensor> pb__views(const pb_nn *nn,
                                     const torch::Tensor &flat);
torch::Tensor pb__run(const pb_nn *nn, torch::Tensor h,
                      const std::vector<torch::Tensor> &w, bool inplace);
torch::Tensor pb__input(const pb_nn *nn, const float *in, int batch);
torch::Tensor pb__input_mixed(const pb_nn *nn, torch::Tensor x);
size_t pb__lp_n(const pb_nn *nn);
torch::Tensor pb__cpu(const torch::Tensor &t);
int pb__opt_check(const pb_nn_opt_t *o, pb_err_t *err);

#endif
