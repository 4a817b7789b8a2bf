/* ckpt_dir.c - the checkpoints of a directory (see ckpt.h): listing the
 * files "<prefix>-<number>.pbck" (pb_ckpt_numbers, pb_ckpt_newest), finding
 * the newest intact one (pb_ckpt_scan, pb_ckpt_find_latest), removing the
 * temporaries of unfinished writes (pb_ckpt_clean_tmp) and pruning old
 * versions (pb_ckpt_keeps, pb_ckpt_prune). The file format is ckpt.c's.
 *
 * Workload: one directory listing per call, after each checkpoint write
 * (pruning) or when a process looks for a checkpoint (resume, agents, the
 * evaluator); only pb_ckpt_scan (newest first, up to the first intact one)
 * and pb_ckpt_prune (the newest) read checkpoint files. */
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- scan */

typedef struct pb__cand {
  uint64_t number;
  char *name;
} pb__cand_t;

static int pb__cand_cmp(const void *a, const void *b) {
  const pb__cand_t *x = a, *y = b;
  if (x->number != y->number) return x->number < y->number ? 1 : -1;
  return strcmp(y->name, x->name); /* deterministic among equal numbers */
}

/* If name is "<prefix>-<digits>.pbck", sets *number and returns 1. */
static int pb__match(const char *name, const char *prefix, uint64_t *number) {
  size_t pl = strlen(prefix), nl = strlen(name), sl = strlen(PB_CKPT_SUFFIX);
  if (nl < pl + 1 + 1 + sl || strncmp(name, prefix, pl) != 0 ||
      name[pl] != '-' || strcmp(name + nl - sl, PB_CKPT_SUFFIX) != 0)
    return 0;
  const char *d = name + pl + 1, *e = name + nl - sl;
  if (e - d > 19) return 0; /* would overflow 64 bits */
  uint64_t v = 0;
  for (; d < e; d++) {
    if (*d < '0' || *d > '9') return 0;
    v = v * 10 + (uint64_t)(*d - '0');
  }
  *number = v;
  return 1;
}

/* Lists the files "<prefix>-<digits>.pbck" of dir into a malloc'd array
 * (caller frees each name and the array). PB_ENOTFOUND if dir does not
 * exist, PB_EIO if it cannot be listed, PB_ENOMEM. */
static int pb__list(const char *dir, const char *prefix, pb__cand_t **out,
                    size_t *count, pb_err_t *err) {
  *out = NULL;
  *count = 0;
  DIR *d = opendir(dir);
  if (d == NULL) {
    if (errno == ENOENT)
      return pb_err_set(err, PB_ENOTFOUND, "%s: no such directory", dir);
    return pb_err_set(err, PB_EIO, "%s: cannot list: %s", dir, strerror(errno));
  }
  pb__cand_t *c = NULL;
  size_t nc = 0, cap = 0;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    uint64_t num;
    if (!pb__match(de->d_name, prefix, &num)) continue;
    if (nc == cap) {
      size_t ncap = cap ? 2 * cap : 16;
      pb__cand_t *g = realloc(c, ncap * sizeof *g);
      if (g == NULL) {
        rc = pb_err_set(err, PB_ENOMEM, "ckpt: out of memory");
        break;
      }
      c = g;
      cap = ncap;
    }
    if ((c[nc].name = strdup(de->d_name)) == NULL) {
      rc = pb_err_set(err, PB_ENOMEM, "ckpt: out of memory");
      break;
    }
    c[nc++].number = num;
  }
  closedir(d);
  if (rc != 0) {
    for (size_t i = 0; i < nc; i++) free(c[i].name);
    free(c);
    return rc;
  }
  *out = c;
  *count = nc;
  return 0;
}

static int pb__cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int pb_ckpt_numbers(const char *dir, const char *prefix, uint64_t **numbers,
                    size_t *n, pb_err_t *err) {
  if (dir == NULL || prefix == NULL || numbers == NULL || n == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_numbers: NULL argument");
  *numbers = NULL;
  *n = 0;
  pb__cand_t *c = NULL;
  size_t nc = 0;
  int rc = pb__list(dir, prefix, &c, &nc, err);
  if (rc != 0) return rc;
  uint64_t *v = nc ? malloc(nc * sizeof *v) : NULL;
  if (nc > 0 && v == NULL) rc = pb_err_set(err, PB_ENOMEM, "ckpt: out of memory");
  for (size_t i = 0; i < nc; i++) {
    if (v != NULL) v[i] = c[i].number;
    free(c[i].name);
  }
  free(c);
  if (rc != 0) return rc;
  if (nc > 0) qsort(v, nc, sizeof *v, pb__cmp_u64);
  *numbers = v;
  *n = nc;
  return 0;
}

int pb_ckpt_newest(const char *dir, const char *prefix, char *path,
                   size_t size, uint64_t *number, pb_err_t *err) {
  if (dir == NULL || prefix == NULL || path == NULL || size == 0)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_newest: NULL argument");
  pb__cand_t *c = NULL;
  size_t nc = 0;
  int rc = pb__list(dir, prefix, &c, &nc, err);
  if (rc != 0) return rc;
  if (nc == 0)
    rc = pb_err_set(err, PB_ENOTFOUND, "%s: no %s-NNNNNN%s checkpoint", dir,
                    prefix, PB_CKPT_SUFFIX);
  if (rc == 0) {
    qsort(c, nc, sizeof *c, pb__cand_cmp); /* newest first */
    int n = snprintf(path, size, "%s/%s", dir, c[0].name);
    if (n < 0 || (size_t)n >= size)
      rc = pb_err_set(err, PB_ERANGE, "%s/%s: path longer than %zu bytes", dir,
                      c[0].name, size - 1);
    else if (number)
      *number = c[0].number;
  }
  for (size_t i = 0; i < nc; i++) free(c[i].name);
  free(c);
  return rc;
}

int pb_ckpt_scan(const char *dir, const char *prefix, char *path, size_t size,
                 uint64_t *number, pb_ckpt_note_fn *note, void *note_ctx,
                 pb_err_t *err) {
  if (dir == NULL || prefix == NULL || path == NULL || size == 0)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_scan: NULL argument");
  pb__cand_t *c = NULL;
  size_t nc = 0;
  int rc = pb__list(dir, prefix, &c, &nc, err);
  if (rc != 0) return rc;
  if (rc == 0 && nc == 0)
    rc = pb_err_set(err, PB_ENOTFOUND, "%s: no %s-NNNNNN%s checkpoint", dir,
                    prefix, PB_CKPT_SUFFIX);
  if (rc == 0) {
    qsort(c, nc, sizeof *c, pb__cand_cmp);
    pb_err_t first = {0, ""};
    rc = PB_ECORRUPT;
    for (size_t i = 0; i < nc; i++) {
      char full[4200];
      snprintf(full, sizeof full, "%s/%s", dir, c[i].name);
      pb_err_t e = {0, ""};
      pb_ckpt_t *ck = pb_ckpt_read(full, &e);
      if (ck == NULL) {
        if (first.code == 0) first = e;
        if (note != NULL) {
          char msg[PB_ERR_MSG_MAX + 32];
          snprintf(msg, sizeof msg, "skipping checkpoint: %s", e.msg);
          note(note_ctx, msg);
        }
        continue;
      }
      pb_ckpt_destroy(&ck);
      if (strlen(full) >= size) {
        rc = pb_err_set(err, PB_ERANGE, "%s: path longer than %zu bytes", full,
                        size - 1);
      } else {
        strcpy(path, full);
        if (number) *number = c[i].number;
        rc = 0;
      }
      break;
    }
    if (rc == PB_ECORRUPT)
      pb_err_set(err, PB_ECORRUPT,
                 "%s: none of %zu checkpoints is intact (newest: %s)", dir, nc,
                 first.msg);
  }
  for (size_t i = 0; i < nc; i++) free(c[i].name);
  free(c);
  return rc;
}

int pb_ckpt_clean_tmp(const char *dir, time_t before, pb_ckpt_note_fn *note,
                      void *note_ctx, pb_err_t *err) {
  if (dir == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_clean_tmp: NULL dir");
  DIR *d = opendir(dir);
  if (d == NULL) {
    if (errno == ENOENT) return 0;
    return pb_err_set(err, PB_EIO, "%s: cannot list: %s", dir, strerror(errno));
  }
  static const char tag[] = PB_CKPT_SUFFIX ".tmp.";
  int removed = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *t = strstr(de->d_name, tag);
    if (t == NULL || t[sizeof tag - 1] == '\0' ||
        strspn(t + sizeof tag - 1, "0123456789") != strlen(t + sizeof tag - 1))
      continue;
    char full[4200];
    if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, de->d_name) >=
        sizeof full)
      continue;
    struct stat st;
    if (lstat(full, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_mtime >= before)
      continue;
    if (unlink(full) == 0) {
      removed++;
      if (note != NULL) {
        char msg[4300];
        snprintf(msg, sizeof msg,
                 "removed %s, left by a checkpoint write that never finished",
                 full);
        note(note_ctx, msg);
      }
    }
  }
  closedir(d);
  return removed;
}

int pb_ckpt_find_latest(const char *dir, char *path, size_t size,
                        pb_err_t *err) {
  return pb_ckpt_scan(dir, "ckpt", path, size, NULL, NULL, NULL, err);
}

/* --------------------------------------------------------------- prune */

int pb_ckpt_keeps(const pb_ckpt_keep_t *k, uint64_t newest, uint64_t v) {
  if (k == NULL || k->keep_last == 0 || v == 0 || v >= newest) return 1;
  if (newest - v < k->keep_last) return 1; /* among the keep_last newest */
  if (k->keep_every > 0 && v % k->keep_every == 0) return 1;
  return v >= k->protect_from;
}

int pb_ckpt_prune(const char *dir, const char *prefix, uint64_t newest,
                  const pb_ckpt_keep_t *keep, pb_ckpt_note_fn *note,
                  void *note_ctx, pb_err_t *err) {
  if (dir == NULL || prefix == NULL || keep == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_prune: NULL argument");
  if (keep->keep_last == 0) return 0;
  pb__cand_t *c = NULL;
  size_t nc = 0;
  int rc = pb__list(dir, prefix, &c, &nc, err);
  if (rc != 0) return rc;
  size_t doomed = 0;
  const char *newest_name = NULL;
  for (size_t i = 0; i < nc; i++) {
    if (!pb_ckpt_keeps(keep, newest, c[i].number)) doomed++;
    if (c[i].number == newest && newest_name == NULL) newest_name = c[i].name;
  }
  char full[4200];
  int removed = 0;
  if (doomed > 0 && newest_name == NULL)
    rc = pb_err_set(err, PB_ENOTFOUND,
                    "%s: no checkpoint of version %llu: deleting nothing", dir,
                    (unsigned long long)newest);
  if (doomed > 0 && rc == 0) {
    /* Only delete while an intact newest checkpoint stays behind. */
    snprintf(full, sizeof full, "%s/%s", dir, newest_name);
    pb_err_t e = {0, ""};
    pb_ckpt_t *ck = pb_ckpt_read(full, &e);
    if (ck == NULL)
      rc = pb_err_set(err, e.code, "%s; deleting no older checkpoint", e.msg);
    pb_ckpt_destroy(&ck);
  }
  const int go = rc == 0 && doomed > 0;
  for (size_t i = 0; i < nc && go; i++) {
    if (pb_ckpt_keeps(keep, newest, c[i].number)) continue;
    if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, c[i].name) >=
        sizeof full)
      continue;
    if (unlink(full) == 0) {
      removed++;
      if (note != NULL) {
        char msg[4300];
        snprintf(msg, sizeof msg, "deleted checkpoint %s", full);
        note(note_ctx, msg);
      }
    } else if (errno != ENOENT && rc == 0) {
      rc = pb_err_set(err, PB_EIO, "%s: cannot delete: %s", full,
                      strerror(errno));
    }
  }
  for (size_t i = 0; i < nc; i++) free(c[i].name);
  free(c);
  return rc < 0 ? rc : removed;
}
