#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int pb_err_set(pb_err_t *err, int code, const char *fmt, ...) {
  if (err != NULL) {
    va_list ap;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

void pb_err_clear(pb_err_t *err) {
  if (err != NULL) {
    err->code = 0;
    err->msg[0] = '\0';
  }
}

const char *pb_strerror(int code) {
  switch (code) {
  case 0: return "success";
#define PB__ERR_STR(name, val, str) case PB_E##name: return str;
    PB_ERRNO_MAP(PB__ERR_STR)
#undef PB__ERR_STR
  }
  return "unknown error";
}

const char *pb_err_name(int code) {
  switch (code) {
  case 0: return "PB_OK";
#define PB__ERR_NAME(name, val, str) case PB_E##name: return "PB_E" #name;
    PB_ERRNO_MAP(PB__ERR_NAME)
#undef PB__ERR_NAME
  }
  return "PB_EUNKNOWN";
}
