/* precision.c - model.precision: names, native bfloat16, the choice of
 * "auto" (precision.h). */
#include "precision.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

int pb_precision_parse(const char *name) {
  if (name == NULL) return -1;
  if (!strcmp(name, "fp32")) return PB_PREC_FP32;
  if (!strcmp(name, "bf16")) return PB_PREC_BF16;
  if (!strcmp(name, "auto")) return PB_PREC_AUTO;
  return -1;
}

const char *pb_precision_name(int prec) {
  return prec == PB_PREC_FP32   ? "fp32"
         : prec == PB_PREC_BF16 ? "bf16"
         : prec == PB_PREC_AUTO ? "auto"
                                : "?";
}

/* The CPU's bfloat16: 1 with AMX-BF16 or AVX-512 BF16 usable. */
static int cpu_bf16(char *why, size_t n) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid(1, &a, &b, &c, &d)) {
    snprintf(why, n, "this CPU reports no extended features (cpuid leaf 7)");
    return 0;
  }
  const int osxsave = (c >> 27) & 1;
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = ((unsigned long long)hi << 32) | lo;
  }
  unsigned a7, b7, c7, d7, a71 = 0, b71, c71, d71;
  __cpuid_count(7, 0, a7, b7, c7, d7);
  if (a7 >= 1) __cpuid_count(7, 1, a71, b71, c71, d71);
  const int avx512f = (b7 >> 16) & 1;
  const int avx512_bf16 = (a71 >> 5) & 1;
  const int amx_bf16 = (d7 >> 22) & 1;
  /* The OS saves the AVX-512 state (opmask, ZMM) and, for AMX, the tiles. */
  const int zmm_ok = (xcr0 & 0xe6) == 0xe6;
  const int amx_ok = (xcr0 & 0x60000) == 0x60000;
  if (amx_bf16 && zmm_ok && amx_ok) {
    snprintf(why, n, "this CPU has AMX-BF16");
    return 1;
  }
  if (avx512f && avx512_bf16 && zmm_ok) {
    snprintf(why, n, "this CPU has AVX-512 BF16");
    return 1;
  }
  if ((amx_bf16 || avx512_bf16) && !zmm_ok) {
    snprintf(why, n,
             "this CPU has bf16 instructions but the OS does not "
             "enable their AVX-512 state");
    return 0;
  }
  snprintf(why, n, "this CPU has neither AMX-BF16 nor AVX-512 BF16");
  return 0;
#else
  snprintf(why, n, "bf16 is detected on x86-64 CPUs only");
  return 0;
#endif
}

int pb_precision_native(const char *device, char *why, size_t n) {
  char tmp[160];
  if (why == NULL || n == 0) {
    why = tmp;
    n = sizeof tmp;
  }
  int major = 0, minor = 0;
  const int want_cuda = device != NULL && strcmp(device, "cpu") != 0;
  if (want_cuda && pb_nn_cuda_capability(&major, &minor) == 0) {
    if (major == 0) {
      snprintf(why, n,
               "a CUDA device whose compute capability the CUDA "
               "runtime did not give");
      return 0;
    }
    snprintf(why, n, "CUDA device of compute capability %d.%d%s", major, minor,
             major >= 8 ? "" : " (bf16 needs 8.0)");
    return major >= 8;
  }
  if (device != NULL && strcmp(device, "cuda") == 0) {
    snprintf(why, n, "no CUDA device");
    return 0;
  }
  return cpu_bf16(why, n);
}

int pb_precision_auto_bf16(const char *device, char *why, size_t n) {
  char tmp[160];
  if (why == NULL || n == 0) {
    why = tmp;
    n = sizeof tmp;
  }
  int major = 0, minor = 0;
  if (device != NULL && strcmp(device, "cpu") != 0 &&
      pb_nn_cuda_capability(&major, &minor) == 0) {
    snprintf(why, n,
             "CUDA device of compute capability %d.%d, where bf16 was "
             "measured slower than fp32 for these networks",
             major, minor);
    return 0;
  }
  return pb_precision_native(device, why, n);
}

int pb_precision_choose(const char *want, const char *key, int native,
                        const char *native_why, int *prec, char *why, size_t n,
                        pb_err_t *err) {
  const int p = pb_precision_parse(want);
  if (key == NULL) key = "model.precision";
  if (native_why == NULL) native_why = native ? "native bf16" : "no bf16";
  if (p < 0)
    return pb_err_set(err, PB_ECONFIG, "%s: '%s' is none of fp32, bf16, auto",
                      key, want ? want : "(null)");
  if (p == PB_PREC_BF16 && !native)
    return pb_err_set(err, PB_ECONFIG,
                      "%s: 'bf16' but %s, so bf16 would only be emulated "
                      "(slower than fp32): use fp32, or auto (bf16 where "
                      "native)",
                      key, native_why);
  const int out =
      p == PB_PREC_AUTO ? (native ? PB_PREC_BF16 : PB_PREC_FP32) : p;
  if (prec != NULL) *prec = out;
  if (why != NULL && n > 0)
    snprintf(why, n, "%s (%s '%s'%s%s)", pb_precision_name(out), key, want,
             p == PB_PREC_FP32 ? "" : ": ",
             p == PB_PREC_FP32 ? "" : native_why);
  return 0;
}
