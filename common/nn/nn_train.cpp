/* nn_train.cpp - training a network of nn.h: the losses (plain, masked,
 * policy + value), our Adam with gradient clipping, and the train steps
 * (pb_nn_train_step, pb_nn_train_batches, pb_nn_set_opt). The design notes
 * are at the top of nn.cpp.
 *
 * Workload: Adam steps on minibatches of ~128 rows, up to a chunk of steps
 * per call with nothing read back from the device until the last. */

#include "nn_impl.hpp"

#include <torch/autograd.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

/* Targets or masks [batch][outputs] from caller memory, on nn's device. */
static torch::Tensor pb__rows(const pb_nn *nn, const float *p, int batch) {
  torch::Tensor x = torch::from_blob(
      const_cast<float *>(p), {batch, nn->spec.outputs}, torch::kFloat32);
  return nn->device.is_cpu() ? x : x.to(nn->device);
}

/* A 0-dim CPU tensor over *v, for an operator's scalar argument. A C++
 * Scalar costs libtorch 1.13 five more operators per call (it is wrapped
 * in a tensor and converted to the other operand's type: mul_(0.9) is
 * mul_, mul, to, _to_copy, empty_strided, copy_); from_blob dispatches
 * none. Binary operators take such a CPU scalar beside tensors of any
 * device, and convert it to the other operand's type as they would the
 * Scalar, so the result is the same; *v must outlive the call. */
static torch::Tensor pb__scalar(const float *v) {
  return torch::from_blob(const_cast<float *>(v), {}, torch::kFloat32);
}
static torch::Tensor pb__scalar(const double *v) {
  return torch::from_blob(const_cast<double *>(v), {}, torch::kFloat64);
}

/* What a step's loss needs besides its rows: 0 on the device (for
 * where()), and the counts that its means divide by, as floats. A mean is
 * written sum() / count: what mean() computes for a float tensor (a sum,
 * then a division by the count converted to float), in 4 operators instead
 * of 12, backward included. Lives in pb__train's frame until the step's
 * backward pass has run (pb__scalar). */
struct pb__step_k {
  torch::Tensor zero;
  float rows, all;   /* rows of the minibatch; rows x outputs */
  torch::Tensor den; /* masked: max(1, the minibatch's mask sum) (PV: of
                        its value column), which a shard's loss divides by */
};

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
                        const pb__step_k &c, torch::Tensor *policy,
                        torch::Tensor *value) {
  const torch::Tensor &zero = c.zero;
  const int64_t A = nn->spec.outputs - 1;
  torch::Tensor logits = y.narrow(1, 0, A), v = y.select(1, A);
  torch::Tensor pi = t.narrow(1, 0, A), z = t.select(1, A);
  if (!mk.defined()) {
    torch::Tensor lp = torch::log_softmax(logits, 1);
    *policy = -(pi * lp).sum(1).sum().div(pb__scalar(&c.rows));
    torch::Tensor d = v - z;
    *value = (d * d).sum().div(pb__scalar(&c.rows));
    return;
  }
  /* legal: a nonzero mask; in: legal, or any action of a row without a
   * legal one (the actions the softmax is over) */
  torch::Tensor legal = mk.narrow(1, 0, A).ne(zero);
  torch::Tensor in = legal.logical_or(legal.any(1, /*keepdim=*/true).logical_not());
  torch::Tensor pim = torch::where(legal, pi, zero);
  torch::Tensor lp = torch::log_softmax(
      logits.masked_fill(in.logical_not(),
                         -std::numeric_limits<float>::infinity()),
      1);
  torch::Tensor prod = torch::where(in, pim * lp, zero);
  *policy = -prod.sum(1).sum().div(pb__scalar(&c.rows));
  torch::Tensor w = mk.select(1, A);
  torch::Tensor d = torch::where(w.ne(zero), v - z, zero);
  *value = (d * d * w).sum() / c.den;
}

/* The loss of one minibatch (nn.h, pb_nn_train_step): *l, and for a PV
 * network its two parts (undefined tensors for the other heads). */
static void pb__loss(const pb_nn *nn, const torch::Tensor &y,
                     const torch::Tensor &t, const torch::Tensor &mk,
                     const pb__step_k &c, torch::Tensor *l,
                     torch::Tensor *lpol, torch::Tensor *lval) {
  if (nn->spec.head == PB_NN_HEAD_PV) {
    pb__pv_loss(nn, y, t, mk, c, lpol, lval);
    *l = *lpol + *lval;
    return;
  }
  torch::Tensor d = y - t;
  if (mk.defined()) {
    /* t is 0 under a zero mask (pb__train replaced what was there, which
     * may be garbage, even NaN, with where() before any product), and the
     * output's error there is multiplied by 0 */
    *l = (d * d * mk).sum() / c.den;
  } else {
    *l = (d * d).sum().div(pb__scalar(&c.all));
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
  torch::Tensor th = nn->flat;
  /* g is this step's own flat gradient (pb__flat_grad): updated in place */
  if (nn->opt.weight_decay != 0.0f) g.add_(th, (double)nn->opt.weight_decay);
  torch::Tensor norm = g.norm();
  if (nn->opt.grad_clip > 0.0f) {
    const double clip = (double)nn->opt.grad_clip, tiny = 1e-6;
    if (!nn->clip_nd.defined()) {
      nn->clip_nd = torch::empty({}, norm.options().dtype(torch::kFloat64));
      nn->clip_one = torch::ones({}, norm.options().dtype(torch::kFloat64));
      nn->clip_f = torch::empty({}, norm.options());
    }
    torch::Tensor nd = nn->clip_nd.copy_(norm);
    torch::Tensor f = pb__scalar(&clip).div(nd.add(pb__scalar(&tiny)));
    f = torch::where(nd.gt(pb__scalar(&clip)), f, nn->clip_one);
    g.mul_(nn->clip_f.copy_(f));
  }
  nn->step++;
  nn->theta_gen++;
  /* the constants as float, as torch rounds a double Scalar for a float
   * tensor */
  const float fb1 = (float)b1, fb2 = (float)b2, feps = (float)eps;
  nn->m.mul_(pb__scalar(&fb1)).add_(g, 1.0 - b1);
  nn->v.mul_(pb__scalar(&fb2)).addcmul_(g, g, 1.0 - b2);
  double bc1 = 1.0 - std::pow(b1, (double)nn->step);
  double bc2 = 1.0 - std::pow(b2, (double)nn->step);
  const float sbc2 = (float)std::sqrt(bc2);
  torch::Tensor denom =
      nn->v.sqrt().div_(pb__scalar(&sbc2)).add_(pb__scalar(&feps));
  th.addcdiv_(nn->m, denom, -lr / bc1);
  return norm;
}

/* The parameters a training step differentiates, in layout order:
 * autograd leaves that share their storage with theta (so that Adam's
 * in-place update of theta is what the next step sees), made once per
 * network in fp32. In reduced precision the first pb__lp_n of them are
 * leaves of a cast copy of theta instead, remade at every step (the copy
 * is of the weights Adam has just changed). Leaves rather than views of
 * theta: a view's backward pads its gradient to theta's whole length and
 * autograd sums those, several operators (and a pass over all of theta)
 * per parameter per step; the leaves' gradients are joined by one cat.
 * pb__train_init makes the fp32 leaves and the constants of nn_impl.hpp
 * at a network's first training call; pb__leaves gives a step's. */
static void pb__train_init(pb_nn *nn) {
  if (!nn->leaves.empty()) return;
  const auto fopt =
      torch::TensorOptions().dtype(torch::kFloat32).device(nn->device);
  nn->zero = torch::zeros({}, fopt);
  nn->one = torch::ones({}, fopt);
  nn->flat = nn->theta.detach();
  nn->leaves = pb__views(nn, nn->flat);
  for (torch::Tensor &p : nn->leaves) p = p.detach().requires_grad_(true);
}

static const std::vector<torch::Tensor> &pb__leaves(pb_nn *nn) {
  const size_t n_lp = pb__lp_n(nn);
  if (n_lp == 0) return nn->leaves;
  nn->leaves_lp = pb__views(nn, nn->flat.to(nn->lp_type));
  for (size_t i = 0; i < nn->leaves_lp.size(); i++)
    nn->leaves_lp[i] = i < n_lp ? nn->leaves_lp[i].detach().requires_grad_(true)
                                : nn->leaves[i];
  return nn->leaves_lp;
}

/* d l / d theta as one flat fp32 tensor in theta's layout: the gradients
 * of the leaves w, flattened and joined (bf16 ones promoted to fp32 by the
 * cat, exactly as the cast's backward would). */
static torch::Tensor pb__flat_grad(const pb_nn *nn, const torch::Tensor &l,
                                   const std::vector<torch::Tensor> &w) {
  /* seeded with nn->one: what autograd would make with ones_like */
  std::vector<torch::Tensor> gs = torch::autograd::grad({l}, w, {nn->one});
  for (size_t i = 0; i < gs.size(); i++)
    if (gs[i].dim() != 1) gs[i] = gs[i].view({nn->params[i].numel});
  return torch::cat(gs);
}

/* Rows r0 .. r0 + m of a contiguous tensor: narrow() as one operator
 * (narrow dispatches narrow, slice and as_strided). */
static torch::Tensor pb__slice(const torch::Tensor &x, int64_t r0, int64_t m) {
  std::vector<int64_t> size = x.sizes().vec();
  size[0] = m;
  return x.as_strided(size, x.strides(), x.storage_offset() + r0 * x.stride(0));
}

/* Minibatches of `batch` rows in `total` rows (the last may be short),
 * counted in 64 bits: total + batch can overflow an int. */
static int pb__nsteps(int total, int batch) {
  return (int)(((int64_t)total + batch - 1) / batch);
}

/* One shard of a step: the loss of its rows (divided by the whole
 * minibatch's counts, so that the shards' losses and gradients add up to
 * the minibatch's) and its flat gradient, for the leaves w. */
struct pb__shard {
  torch::Tensor l, lpol, lval, g;
  std::string error; /* what a worker thread caught */
};

static void pb__shard_run(const pb_nn *nn, const std::vector<torch::Tensor> &w,
                          const torch::Tensor &x, const torch::Tensor &t,
                          const torch::Tensor &mk, const pb__step_k &c,
                          pb__shard *out) {
  torch::Tensor y = pb__run(nn, x, w, false);
  pb__loss(nn, y, t, mk, c, &out->l, &out->lpol, &out->lval);
  out->g = pb__flat_grad(nn, out->l, w);
}

/* Leaves for shard s >= 1 of a data-parallel step (pb__leaves is shard
 * 0's): its own autograd leaves over the same storage, so that no two
 * threads share an autograd node; in reduced precision over the step's
 * cast copy `lp` (shard 0's leaves_lp are views of it). */
static std::vector<torch::Tensor> pb__shard_leaves(pb_nn *nn, size_t s) {
  while (nn->shard_leaves.size() < s) {
    std::vector<torch::Tensor> w = pb__views(nn, nn->flat);
    for (torch::Tensor &p : w) p = p.detach().requires_grad_(true);
    nn->shard_leaves.push_back(std::move(w));
  }
  std::vector<torch::Tensor> w = nn->shard_leaves[s - 1];
  const size_t n_lp = pb__lp_n(nn);
  for (size_t i = 0; i < n_lp; i++)
    w[i] = nn->leaves_lp[i].detach().requires_grad_(true);
  return w;
}

/* A data-parallel step (nn.h, pb_nn_set_train_threads): the m rows from
 * r0 split into n consecutive shards, shard 0 on this thread and the
 * others on threads of their own (each with one intra-op thread), their
 * losses and gradients added in shard order, so the result is the same
 * for the same n. */
static void pb__sharded(pb_nn *nn, int n, const torch::Tensor &x,
                        const torch::Tensor &t, const torch::Tensor &mk,
                        int64_t r0, int64_t m, const pb__step_k &c,
                        torch::Tensor *l, torch::Tensor *lpol,
                        torch::Tensor *lval, torch::Tensor *g) {
  std::vector<pb__shard> sh((size_t)n);
  std::vector<std::vector<torch::Tensor>> w((size_t)n);
  w[0] = pb__leaves(nn);
  for (int s = 1; s < n; s++) w[(size_t)s] = pb__shard_leaves(nn, (size_t)s);
  std::vector<int64_t> a((size_t)n + 1, r0);
  for (int s = 0; s < n; s++)
    a[(size_t)s + 1] = a[(size_t)s] + m / n + (s < m % n ? 1 : 0);
  auto run_shard = [&](int s) {
    const int64_t b = a[(size_t)s], e = a[(size_t)s + 1];
    pb__shard_run(nn, w[(size_t)s], pb__slice(x, b, e - b),
                  pb__slice(t, b, e - b),
                  mk.defined() ? pb__slice(mk, b, e - b) : torch::Tensor(), c,
                  &sh[(size_t)s]);
  };
  if (!nn->pool) nn->pool.reset(new pb__pool());
  nn->pool->start(n - 1, [&](int s) {
    try {
      /* a new thread would start with OpenMP's default (every CPU) */
      if (at::get_num_threads() != 1) at::set_num_threads(1);
      run_shard(s);
    } catch (const std::exception &e) {
      sh[(size_t)s].error = e.what();
    } catch (...) {
      sh[(size_t)s].error = "unknown C++ exception";
    }
  });
  std::string error;
  try {
    run_shard(0);
  } catch (const std::exception &e) {
    error = e.what();
  } catch (...) {
    error = "unknown C++ exception";
  }
  nn->pool->wait();
  for (int s = 1; s < n && error.empty(); s++) error = sh[(size_t)s].error;
  if (!error.empty()) throw std::runtime_error(error);
  torch::NoGradGuard no_grad;
  *l = sh[0].l.variable_data();
  *g = sh[0].g;
  if (sh[0].lpol.defined()) {
    *lpol = sh[0].lpol.variable_data();
    *lval = sh[0].lval.variable_data();
  }
  for (int s = 1; s < n; s++) {
    *l = *l + sh[(size_t)s].l.variable_data();
    g->add_(sh[(size_t)s].g);
    if (lpol->defined()) {
      *lpol = *lpol + sh[(size_t)s].lpol.variable_data();
      *lval = *lval + sh[(size_t)s].lval.variable_data();
    }
  }
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
  x = pb__input_mixed(nn, x); /* cast once */
  torch::Tensor t = pb__rows(nn, target, total);
  torch::Tensor mk = mask ? pb__rows(nn, mask, total) : torch::Tensor();
  /* per step: loss, policy part, value part, gradient norm, as [1]
   * tensors joined into one [4k] at the end (nothing read back before) */
  std::vector<torch::Tensor> rec;
  rec.reserve((size_t)4 * k);
  pb__train_init(nn);
  torch::Tensor zero1;
  /* the plain masked loss (pb__loss) reads no target under a zero mask */
  if (mk.defined() && nn->spec.head != PB_NN_HEAD_PV)
    t = torch::where(mk.ne(nn->zero), t, nn->zero);
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
    pb__step_k c = {nn->zero, (float)m, (float)(m * nn->spec.outputs),
                    torch::Tensor()};
    torch::Tensor mkj = mk.defined() ? pb__slice(mk, r0, m) : torch::Tensor();
    if (mkj.defined())
      c.den = (nn->spec.head == PB_NN_HEAD_PV
                   ? mkj.select(1, nn->spec.outputs - 1)
                   : mkj)
                  .sum()
                  .clamp_min(1.0);
    torch::Tensor l, lpol, lval, g;
    const int n = (int)std::min<int64_t>(nn->train_threads, m);
    if (n <= 1) {
      pb__shard sh;
      pb__shard_run(nn, pb__leaves(nn), pb__slice(x, r0, m),
                    pb__slice(t, r0, m), mkj, c, &sh);
      l = sh.l, lpol = sh.lpol, lval = sh.lval, g = sh.g;
    } else {
      pb__sharded(nn, n, x, t, mk, r0, m, c, &l, &lpol, &lval, &g);
    }
    if (k == 1) {
      float lv = l.item<float>();
      if (!std::isfinite(lv))
        return pb_err_set(err, PB_ERANGE,
                          "%s: loss is %g (non-finite input or target?); "
                          "step not taken",
                          where, (double)lv);
    }
    torch::NoGradGuard no_grad;
    /* variable_data: the value without its graph, as detach() but
     * without dispatching an operator */
    rec.push_back(l.variable_data().view({1}));
    if (lpol.defined()) {
      rec.push_back(lpol.variable_data().view({1}));
      rec.push_back(lval.variable_data().view({1}));
    } else {
      if (!zero1.defined()) zero1 = nn->zero.view({1});
      rec.push_back(zero1);
      rec.push_back(rec[rec.size() - 2]);
    }
    double lr = lrs ? (double)lrs[j] : (double)nn->opt.lr;
    rec.push_back(pb__adam(nn, g, lr).view({1}));
  }
  torch::Tensor h = pb__cpu(torch::cat(rec));
  const float *r = h.data_ptr<float>();
  for (int j = 0; j < k; j++) {
    if (std::isfinite(r[4 * j])) continue;
    torch::NoGradGuard no_grad;
    nn->theta.detach().copy_(th0);
    nn->m.copy_(m0);
    nn->v.copy_(v0);
    nn->step = step0;
    nn->theta_gen++;
    return pb_err_set(err, PB_ERANGE,
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
    return pb_err_set(err, PB_EINVAL,
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
    return pb_err_set(err, PB_EINVAL,
                      "pb_nn_train_batches: bad arguments (nn %p, total %d, "
                      "batch %d, in %p, target %p)",
                      (void *)nn, total, batch, (const void *)in,
                      (const void *)target);
  if (lrs != nullptr)
    for (int j = 0, k = pb__nsteps(total, batch); j < k; j++)
      if (!(std::isfinite(lrs[j]) && lrs[j] > 0.0f))
        return pb_err_set(err, PB_EINVAL,
                          "pb_nn_train_batches: lr of step %d = %g must be "
                          "> 0",
                          j + 1, (double)lrs[j]);
  if (total == 0) return 0;
  return pb__guard(err, "pb_nn_train_batches", [&]() -> int {
    return pb__train(nn, in, target, mask, total, batch, lrs, losses,
                     grad_norms, parts, "pb_nn_train_batches", err);
  });
}

extern "C" int pb_nn_set_train_threads(pb_nn_t *nn, int n, pb_err_t *err) {
  if (nn == nullptr || n < 1 || n > PB_NN_TRAIN_THREADS_MAX)
    return pb_err_set(err, PB_EINVAL,
                      "pb_nn_set_train_threads: bad arguments (nn %p, n %d; "
                      "expected 1 to %d)",
                      (void *)nn, n, PB_NN_TRAIN_THREADS_MAX);
  nn->train_threads = n;
  return 0;
}

extern "C" int pb_nn_train_threads(const pb_nn_t *nn) {
  return nn ? nn->train_threads : 1;
}

extern "C" int pb_nn_set_opt(pb_nn_t *nn, const pb_nn_opt_t *opt,
                             pb_err_t *err) {
  if (nn == nullptr || opt == nullptr)
    return pb_err_set(err, PB_EINVAL, "pb_nn_set_opt: NULL argument");
  int rc = pb__opt_check(opt, err);
  if (rc) return rc;
  nn->opt = *opt;
  return 0;
}
