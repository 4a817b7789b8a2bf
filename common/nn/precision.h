/* precision.h - which arithmetic a process's networks use
 * (model.precision and its per-role keys): the names, whether a device
 * computes bfloat16 natively, and the choice "auto" makes, with the reason
 * for the log.
 *
 *   fp32  float32 everywhere (common/nn/nn.h: PB_NN_FP32)
 *   bf16  the trunk in bfloat16, the head, the loss and the weights in
 *         float32 (PB_NN_BF16). Refused where the device has no native
 *         bfloat16: emulated, it is slower than fp32 and no more exact.
 *   auto  bf16 where the device computes it natively and bf16 was
 *         measured faster there, else fp32: bf16 on a CPU with native
 *         bf16; fp32 on CUDA, where these small networks ran slower in
 *         bf16 (H200, configs/connect4-strong.yaml: a training step of
 *         batch 128 took 2.2 ms in either precision, bound by kernel
 *         launches, and an iteration took 3.22 s in bf16 against 2.85 s
 *         in fp32 with 14 searchers; ../shared/gpu/README.md, summarized
 *         in docs/performance.md).
 *
 * Native bfloat16: a CPU with AMX-BF16 or AVX-512 BF16 that the OS lets
 * use its AVX-512 state (oneDNN then runs the convolutions with those
 * instructions; on x86-64 only); a CUDA device of compute capability 8.0
 * or more (Ampere, Hopper). */
#ifndef PB_PRECISION_H
#define PB_PRECISION_H

#include <stddef.h>

#include "err.h"
#include "nn.h"

enum { PB_PREC_FP32 = PB_NN_FP32, PB_PREC_BF16 = PB_NN_BF16, PB_PREC_AUTO = 2 };

/* "fp32", "bf16" or "auto" to PB_PREC_*; -1 for anything else. */
int pb_precision_parse(const char *name);

/* "fp32", "bf16" or "auto" for a PB_PREC_* value ("?" otherwise). */
const char *pb_precision_name(int prec);

/* 1 when `device` computes bfloat16 natively, else 0. device is "cpu",
 * "cuda" or "auto" (CUDA when there is a CUDA device, as pb_nn_new picks).
 * Writes what was found into why (n >= 96 is enough), e.g. "this CPU has
 * AVX-512 BF16", "this CPU has neither AMX-BF16 nor AVX-512 BF16", "CUDA
 * device of compute capability 9.0". */
int pb_precision_native(const char *device, char *why, size_t n);

/* Whether "auto" picks bf16 on `device` ("cpu", "cuda" or "auto", as for
 * pb_precision_native): 1 where bf16 is native and the device is not CUDA,
 * else 0. Writes the reason into why (n >= 160 is enough), e.g. "CUDA
 * device of compute capability 9.0, where bf16 was measured slower than
 * fp32 for these networks". Pass the answer as `native` to
 * pb_precision_choose for want "auto". */
int pb_precision_auto_bf16(const char *device, char *why, size_t n);

/* The precision of a network whose config key `key` says `want` ("fp32",
 * "bf16" or "auto"), on a device that is native (1) or not (0) as
 * pb_precision_native found, with its reason native_why. auto: bf16 when
 * native, else fp32. Sets *prec (PB_PREC_FP32 or PB_PREC_BF16) and writes
 * the sentence for the log into why (n >= 256 is enough), e.g. "bf16
 * (model.precision 'auto': this CPU has AVX-512 BF16)". Returns 0, or
 * PB_ECONFIG naming the key: an explicit bf16 on a device without native
 * bfloat16, or an unknown value. Does not probe anything itself. */
int pb_precision_choose(const char *want, const char *key, int native,
                        const char *native_why, int *prec, char *why, size_t n,
                        pb_err_t *err);

#endif
