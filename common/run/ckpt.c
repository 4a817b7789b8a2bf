/* ckpt.c - checkpoint files (see ckpt.h for the format and contracts).
 *
 * Workload: a handful of sections, a few MB in all, written once per
 * iteration and read on --resume or by the evaluator. Reads load the whole
 * file and verify it before parsing; writes stream the sections through the
 * CRC into a temporary file that is then renamed into place. The functions
 * on a directory of checkpoints (scan, prune) are in ckpt_dir.c. */
#include "ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "bytes.h"
#include "util.h"

enum { PB__CK_HDR = 24, PB__CK_FMT = 1 };
static const char PB__CK_MAGIC[4] = {'P', 'B', 'C', 'K'};

typedef struct pb__section {
  char *name;
  uint8_t *data;
  size_t len;
} pb__section_t;

struct pb_ckpt {
  pb__section_t *sec;
  int count, cap;
};

/* ------------------------------------------------------------- helpers */

uint32_t pb_crc32(uint32_t crc, const void *data, size_t len) {
  return (uint32_t)crc32_z(crc, data, len); /* zlib's */
}

static int pb__name_ok(const char *name, size_t n) {
  if (n < 1 || n > PB_CKPT_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (name[i] < 0x21 || name[i] > 0x7E) return 0;
  return 1;
}

static const pb__section_t *pb__find(const pb_ckpt_t *ck, const char *name,
                                     size_t n) {
  for (int i = 0; i < ck->count; i++)
    if (strlen(ck->sec[i].name) == n && memcmp(ck->sec[i].name, name, n) == 0)
      return &ck->sec[i];
  return NULL;
}

/* Adds a section whose name is n bytes at name (not NUL-terminated). */
static int pb__add(pb_ckpt_t *ck, const char *name, size_t n, const void *data,
                   size_t len, pb_err_t *err) {
  if (ck->count == ck->cap) {
    int cap = ck->cap ? 2 * ck->cap : 8;
    pb__section_t *s = realloc(ck->sec, (size_t)cap * sizeof *s);
    if (s == NULL) return pb_err_set(err, PB_ENOMEM, "ckpt: out of memory");
    ck->sec = s;
    ck->cap = cap;
  }
  char *nm = malloc(n + 1);
  uint8_t *d = malloc(len ? len : 1);
  if (nm == NULL || d == NULL) {
    free(nm);
    free(d);
    return pb_err_set(err, PB_ENOMEM,
                      "ckpt: out of memory for section \"%.*s\" (%zu bytes)",
                      (int)n, name, len);
  }
  memcpy(nm, name, n);
  nm[n] = '\0';
  if (len) memcpy(d, data, len);
  ck->sec[ck->count++] = (pb__section_t){nm, d, len};
  return 0;
}

/* Size of the encoded file. */
static size_t pb__encoded_len(const pb_ckpt_t *ck) {
  size_t n = PB__CK_HDR + 4;
  for (int i = 0; i < ck->count; i++)
    n += 4 + strlen(ck->sec[i].name) + 8 + ck->sec[i].len;
  return n;
}

static void pb__header(const pb_ckpt_t *ck, uint8_t h[PB__CK_HDR]) {
  memcpy(h, PB__CK_MAGIC, 4);
  pb_le_put32(h + 4, PB__CK_FMT);
  pb_le_put32(h + 8, (uint32_t)ck->count);
  pb_le_put32(h + 12, 0);
  pb_le_put64(h + 16, (uint64_t)pb__encoded_len(ck));
}

/* ---------------------------------------------------------- public API */

pb_ckpt_t *pb_ckpt_new(pb_err_t *err) {
  pb_ckpt_t *ck = calloc(1, sizeof *ck);
  if (ck == NULL) pb_err_set(err, PB_ENOMEM, "ckpt: out of memory");
  return ck;
}

void pb_ckpt_destroy(pb_ckpt_t **ck) {
  if (ck == NULL || *ck == NULL) return;
  for (int i = 0; i < (*ck)->count; i++) {
    free((*ck)->sec[i].name);
    free((*ck)->sec[i].data);
  }
  free((*ck)->sec);
  free(*ck);
  *ck = NULL;
}

int pb_ckpt_add(pb_ckpt_t *ck, const char *name, const void *data, size_t len,
                pb_err_t *err) {
  if (ck == NULL || name == NULL || (data == NULL && len > 0))
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_add: NULL argument");
  size_t n = strlen(name);
  if (!pb__name_ok(name, n))
    return pb_err_set(err, PB_EINVAL,
                      "pb_ckpt_add: bad section name \"%.64s\" (1..%d "
                      "printable characters, no spaces)",
                      name, PB_CKPT_NAME_MAX);
  if (pb__find(ck, name, n) != NULL)
    return pb_err_set(err, PB_EINVAL,
                      "pb_ckpt_add: section \"%s\" is already there", name);
  if (ck->count >= 65536)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_add: too many sections");
  return pb__add(ck, name, n, data, len, err);
}

int pb_ckpt_get(const pb_ckpt_t *ck, const char *name, const void **data,
                size_t *len) {
  if (ck == NULL || name == NULL) return PB_EINVAL;
  const pb__section_t *s = pb__find(ck, name, strlen(name));
  if (s == NULL) return PB_ENOTFOUND;
  if (data) *data = s->data;
  if (len) *len = s->len;
  return 0;
}

int pb_ckpt_count(const pb_ckpt_t *ck) {
  return ck ? ck->count : 0;
}

const char *pb_ckpt_name(const pb_ckpt_t *ck, int i) {
  return (ck && i >= 0 && i < ck->count) ? ck->sec[i].name : NULL;
}

int pb_ckpt_encode(const pb_ckpt_t *ck, uint8_t **out, size_t *len,
                   pb_err_t *err) {
  if (ck == NULL || out == NULL || len == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_encode: NULL argument");
  size_t total = pb__encoded_len(ck);
  uint8_t *p = malloc(total);
  if (p == NULL)
    return pb_err_set(err, PB_ENOMEM, "ckpt: cannot allocate %zu bytes", total);
  pb__header(ck, p);
  size_t off = PB__CK_HDR;
  for (int i = 0; i < ck->count; i++) {
    size_t n = strlen(ck->sec[i].name);
    pb_le_put32(p + off, (uint32_t)n);
    memcpy(p + off + 4, ck->sec[i].name, n);
    off += 4 + n;
    pb_le_put64(p + off, (uint64_t)ck->sec[i].len);
    if (ck->sec[i].len) memcpy(p + off + 8, ck->sec[i].data, ck->sec[i].len);
    off += 8 + ck->sec[i].len;
  }
  pb_le_put32(p + off, pb_crc32(0, p, off));
  *out = p;
  *len = total;
  return 0;
}

pb_ckpt_t *pb_ckpt_decode(const void *buf, size_t len, const char *what,
                          pb_err_t *err) {
  const uint8_t *p = buf;
  if (what == NULL) what = "checkpoint";
  if (p == NULL && len > 0) {
    pb_err_set(err, PB_EINVAL, "%s: NULL buffer", what);
    return NULL;
  }
  if (len < PB__CK_HDR + 4) {
    pb_err_set(err, PB_ECORRUPT,
               "%s: truncated: %zu bytes, shorter than the %d-byte header "
               "and checksum (torn write?)",
               what, len, PB__CK_HDR + 4);
    return NULL;
  }
  if (memcmp(p, PB__CK_MAGIC, 4) != 0) {
    pb_err_set(err, PB_ECORRUPT, "%s: not a probs checkpoint (bad magic)",
               what);
    return NULL;
  }
  uint64_t declared = pb_le_get64(p + 16);
  if (declared != (uint64_t)len) {
    pb_err_set(err, PB_ECORRUPT, "%s: %s: %zu bytes, but the header says %llu",
               what, declared > (uint64_t)len ? "truncated" : "wrong length",
               len, (unsigned long long)declared);
    return NULL;
  }
  uint32_t stored = pb_le_get32(p + len - 4), crc = pb_crc32(0, p, len - 4);
  if (stored != crc) {
    pb_err_set(err, PB_ECORRUPT,
               "%s: checksum mismatch (stored %08x, computed %08x): corrupt",
               what, stored, crc);
    return NULL;
  }
  /* Only an intact file reaches here, so an unknown version is a real
   * format difference, not damage. */
  uint32_t fmt = pb_le_get32(p + 4);
  if (fmt != PB__CK_FMT) {
    pb_err_set(err, PB_EUNSUPP,
               "%s: checkpoint format version %u is not supported (this "
               "build reads version %d)",
               what, fmt, PB__CK_FMT);
    return NULL;
  }
  uint32_t count = pb_le_get32(p + 8);
  pb_ckpt_t *ck = pb_ckpt_new(err);
  if (ck == NULL) return NULL;
  size_t off = PB__CK_HDR, end = len - 4;
  for (uint32_t i = 0; i < count; i++) {
    if (end - off < 4) goto bad_table;
    uint32_t n = pb_le_get32(p + off);
    off += 4;
    if (n > end - off) goto bad_table;
    const char *name = (const char *)p + off;
    if (!pb__name_ok(name, n)) {
      pb_err_set(err, PB_ECORRUPT, "%s: section %u has a bad name", what, i);
      goto fail;
    }
    if (pb__find(ck, name, n) != NULL) {
      pb_err_set(err, PB_ECORRUPT, "%s: section \"%.*s\" appears twice", what,
                 (int)n, name);
      goto fail;
    }
    off += n;
    if (end - off < 8) goto bad_table;
    uint64_t dl = pb_le_get64(p + off);
    off += 8;
    if (dl > (uint64_t)(end - off)) goto bad_table;
    if (pb__add(ck, name, n, p + off, (size_t)dl, err) != 0) goto fail;
    off += (size_t)dl;
    continue;
  bad_table:
    pb_err_set(err, PB_ECORRUPT,
               "%s: section %u of %u runs past the end of the file", what, i,
               count);
    goto fail;
  }
  if (off != end) {
    pb_err_set(err, PB_ECORRUPT,
               "%s: %zu stray bytes after the last of %u sections", what,
               end - off, count);
    goto fail;
  }
  return ck;
fail:
  pb_ckpt_destroy(&ck);
  return NULL;
}

pb_ckpt_t *pb_ckpt_read(const char *path, pb_err_t *err) {
  if (path == NULL) {
    pb_err_set(err, PB_EINVAL, "pb_ckpt_read: path is NULL");
    return NULL;
  }
  char *buf = NULL;
  size_t got = 0;
  if (pb_read_file(path, SIZE_MAX / 2, &buf, &got, err) != 0) return NULL;
  pb_ckpt_t *ck = pb_ckpt_decode(buf, got, path, err);
  free(buf);
  return ck;
}

/* Writes all of buf to f, folding it into *crc. */
static int pb__fwrite(FILE *f, const void *buf, size_t n, uint32_t *crc) {
  *crc = pb_crc32(*crc, buf, n);
  return n == 0 || fwrite(buf, 1, n, f) == n;
}

/* fsyncs the directory holding path, so that the rename itself is durable. */
static int pb__sync_dir(const char *path, pb_err_t *err) {
  const char *slash = strrchr(path, '/');
  char dir[4096];
  if (slash == NULL) {
    strcpy(dir, ".");
  } else if (slash == path) {
    strcpy(dir, "/");
  } else {
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir)
      return pb_err_set(err, PB_EIO, "%s: directory name too long", path);
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return pb_err_set(err, PB_EIO, "%s: cannot open directory to sync: %s", dir,
                      strerror(errno));
  int rc = 0;
  /* Some filesystems cannot sync a directory (EINVAL); the data is safe. */
  if (fsync(fd) != 0 && errno != EINVAL)
    rc = pb_err_set(err, PB_EIO, "%s: fsync of directory failed: %s", dir,
                    strerror(errno));
  close(fd);
  return rc;
}

int pb_ckpt_write(const pb_ckpt_t *ck, const char *path, pb_err_t *err) {
  if (ck == NULL || path == NULL)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_write: NULL argument");
  char tmp[4200];
  int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tmp)
    return pb_err_set(err, PB_EINVAL, "pb_ckpt_write: path too long: %.200s",
                      path);
  FILE *f = fopen(tmp, "wb");
  if (f == NULL)
    return pb_err_set(err, PB_EIO, "%s: cannot create: %s", tmp,
                      strerror(errno));

  uint32_t crc = 0;
  uint8_t h[PB__CK_HDR], b[8];
  pb__header(ck, h);
  int ok = pb__fwrite(f, h, sizeof h, &crc);
  for (int i = 0; ok && i < ck->count; i++) {
    size_t nl = strlen(ck->sec[i].name);
    pb_le_put32(b, (uint32_t)nl);
    ok = pb__fwrite(f, b, 4, &crc) && pb__fwrite(f, ck->sec[i].name, nl, &crc);
    pb_le_put64(b, (uint64_t)ck->sec[i].len);
    ok = ok && pb__fwrite(f, b, 8, &crc) &&
         pb__fwrite(f, ck->sec[i].data, ck->sec[i].len, &crc);
  }
  pb_le_put32(b, crc);
  ok = ok && fwrite(b, 1, 4, f) == 4;
  ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
  int e = errno;
  if (fclose(f) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  if (!ok) {
    unlink(tmp);
    return pb_err_set(err, PB_EIO, "%s: write failed: %s", tmp, strerror(e));
  }
  if (rename(tmp, path) != 0) {
    e = errno;
    unlink(tmp);
    return pb_err_set(err, PB_EIO, "%s: cannot rename %s over it: %s", path,
                      tmp, strerror(e));
  }
  return pb__sync_dir(path, err);
}
