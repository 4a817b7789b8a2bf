/* nn_train.cpp - training a network of nn.h: the losses (plain, masked,
 * policy + value), our Adam with gradient clipping, and the train steps
 * (pb_nn_train_step, pb_nn_train_batches, pb_nn_set_opt). The design notes
 * are at the top of nn.cpp.
 *
 * Workload: Adam steps on minibatches of ~128 rows, up to a chunk of steps
 * per call with nothing read back from the device until the last. */

#include "nn_impl.hpp"

#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>

/* Targets or masks [batch][outputs] from caller memory, on nn's device. */
static torch::Tensor pb__rows(const pb_nn *nn, const float *p, int batch) {
  torch::Tensor x = torch::from_blob(
      const_cast<float *>(p), {batch, nn->spec.outputs}, torch::kFloat32);
  return nn->device.is_cpu() ? x : x.to(nn->device);
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
  nn->theta_gen++;
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
  x = pb__input_mixed(nn, x); /* cast once */
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
        pb__run(nn, x.narrow(0, r0, m), pb__views_mixed(nn, nn->theta), false);
    torch::Tensor l, lpol, lval;
    pb__loss(nn, y, t.narrow(0, r0, m),
             mk.defined() ? mk.narrow(0, r0, m) : torch::Tensor(), &l, &lpol,
             &lval);
    torch::Tensor g = torch::autograd::grad({l}, {nn->theta})[0];
    if (k == 1) {
      float lv = l.item<float>();
      if (!std::isfinite(lv))
        return pb_err_set(err, PB_ERANGE,
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

extern "C" int pb_nn_set_opt(pb_nn_t *nn, const pb_nn_opt_t *opt,
                             pb_err_t *err) {
  if (nn == nullptr || opt == nullptr)
    return pb_err_set(err, PB_EINVAL, "pb_nn_set_opt: NULL argument");
  int rc = pb__opt_check(opt, err);
  if (rc) return rc;
  nn->opt = *opt;
  return 0;
}
