/* invariant.h - pb_assert: invariants that only a bug in probs can break.
 *
 *   pb_assert(n >= 1 && slot->active);
 *
 * When the condition is false, prints "FILE:LINE: FUNCTION: invariant
 * failed: CONDITION" on stderr and aborts (SIGABRT; a core dump where
 * the system keeps them), in every build: NDEBUG does not remove it, so
 * a release build stops at the bug instead of running on with corrupt
 * state. The condition is evaluated exactly once.
 *
 * What it is not for: anything that comes from outside the process (a
 * peer's bytes, a file, a config value, a command-line argument, a
 * failed allocation or system call). Those are errors with a message and
 * a PB_E* code (err.h: PB_EINVAL and the others), and a process never
 * aborts on them. pb_assert states what the code around it relies on, as
 * libuv's assert, Redis's serverAssert and SQLite's assert do. */
#ifndef PB_INVARIANT_H
#define PB_INVARIANT_H

#define pb_assert(cond) \
  ((cond) ? (void)0 : pb__invariant_failed(#cond, __FILE__, __LINE__, __func__))

/* Prints the failure and aborts; never returns. */
_Noreturn void pb__invariant_failed(const char *cond, const char *file,
                                    int line, const char *func);

#endif
