/* err.h - error codes and messages shared by every probs module.
 *
 * Functions that can fail return 0 on success or a negative PB_E* code.
 * Where a caller wants to know why, it passes a pb_err_t that the callee
 * fills with the code and a human-readable message naming the problem; a
 * NULL pb_err_t is always accepted. */
#ifndef PB_ERR_H
#define PB_ERR_H

#include <stddef.h>

/* X-macro table: one line per code generates the enum and the names. */
#define PB_ERRNO_MAP(X)                                                  \
  X(INVAL, -1, "invalid argument")                                      \
  X(NOMEM, -2, "out of memory")                                         \
  X(IO, -3, "input/output error")                                       \
  X(CORRUPT, -4, "corrupt data")                                        \
  X(MISMATCH, -5, "mismatch (spec, game, run or version)")              \
  X(RANGE, -6, "value out of range")                                    \
  X(ILLEGAL, -7, "illegal move")                                        \
  X(NN, -8, "neural network backend error")                             \
  X(CONFIG, -9, "configuration error")                                  \
  X(PROTO, -10, "protocol error")                                       \
  X(AGAIN, -11, "try again")                                            \
  X(NOTFOUND, -12, "not found")                                         \
  X(INTR, -13, "interrupted")                                           \
  X(UNSUPP, -14, "not supported")                                       \
  X(DENIED, -15, "refused: this peer is not trusted")

enum {
#define PB__ERR_ENUM(name, val, str) PB_E##name = (val),
  PB_ERRNO_MAP(PB__ERR_ENUM)
#undef PB__ERR_ENUM
};

#define PB_ERR_MSG_MAX 512

typedef struct pb_err {
  int code;                  /* 0 or a PB_E* code */
  char msg[PB_ERR_MSG_MAX];  /* what went wrong, naming the culprit */
} pb_err_t;

/* Fills *err (if not NULL) with code and a printf-style message, and
 * returns code, so that `return pb_err_set(err, PB_EINVAL, "...")` works. */
int pb_err_set(pb_err_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Resets *err to "no error". Accepts NULL. */
void pb_err_clear(pb_err_t *err);

/* Static description of a code ("invalid argument"); never NULL. */
const char *pb_strerror(int code);

/* Symbolic name of a code ("PB_EINVAL"); never NULL. */
const char *pb_err_name(int code);

#endif
