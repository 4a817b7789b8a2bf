/* test_ckpt.c - checkpoint files: round trip, refusal of every kind of
 * damage, atomic replacement, finding the newest intact one, and a network's
 * training state surviving a trip through a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "err.h"
#include "nn.h"
#include "rng.h"

/* A fresh temporary directory per test, removed (with its files) after. */
static int setup_dir(void **state) {
  char *dir = malloc(64);
  strcpy(dir, "/tmp/pb_test_ckpt_XXXXXX");
  if (mkdtemp(dir) == NULL) {
    free(dir);
    return -1;
  }
  *state = dir;
  return 0;
}

static int teardown_dir(void **state) {
  char *dir = *state;
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
        continue;
      char p[600];
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
  free(dir);
  return 0;
}

static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(fwrite(p, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static int count_entries(const char *dir, const char *needle) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) n += strstr(de->d_name, needle) != NULL;
  closedir(d);
  return n;
}

/* A checkpoint with a few sections of different shapes. */
static pb_ckpt_t *sample(void) {
  pb_err_t err;
  pb_ckpt_t *ck = pb_ckpt_new(&err);
  assert_non_null(ck);
  uint8_t big[3000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 7 + 1);
  const char meta[] = "iteration: 12\n";
  assert_int_equal(pb_ckpt_add(ck, "v.state", big, sizeof big, &err), 0);
  assert_int_equal(pb_ckpt_add(ck, "empty", NULL, 0, &err), 0);
  assert_int_equal(pb_ckpt_add(ck, "config.yaml", meta, strlen(meta), &err), 0);
  uint8_t zeros[5] = {0};
  assert_int_equal(pb_ckpt_add(ck, "extra", zeros, sizeof zeros, &err), 0);
  return ck;
}

static void check_sample(const pb_ckpt_t *ck) {
  const void *d;
  size_t n;
  assert_int_equal(pb_ckpt_count(ck), 4);
  assert_string_equal(pb_ckpt_name(ck, 0), "v.state");
  assert_string_equal(pb_ckpt_name(ck, 3), "extra");
  assert_null(pb_ckpt_name(ck, 4));
  assert_int_equal(pb_ckpt_get(ck, "v.state", &d, &n), 0);
  assert_int_equal(n, 3000);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(((const uint8_t *)d)[i], (uint8_t)(i * 7 + 1));
  assert_int_equal(pb_ckpt_get(ck, "empty", &d, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(pb_ckpt_get(ck, "config.yaml", &d, &n), 0);
  assert_int_equal(n, 14);
  assert_memory_equal(d, "iteration: 12\n", 14);
  assert_int_equal(pb_ckpt_get(ck, "extra", &d, &n), 0);
  assert_int_equal(n, 5);
  assert_int_equal(pb_ckpt_get(ck, "q.state", &d, &n), PB_ENOTFOUND);
}

/* ------------------------------------------------------------------ */

static void test_crc32(void **state) {
  (void)state;
  /* the standard check value of CRC-32/ISO-HDLC (zlib) */
  assert_int_equal(pb_crc32(0, "123456789", 9), 0xCBF43926u);
  assert_int_equal(pb_crc32(0, "", 0), 0);
  uint32_t c = pb_crc32(0, "1234", 4);
  assert_int_equal(pb_crc32(c, "56789", 5), 0xCBF43926u);
}

static void test_roundtrip(void **state) {
  const char *dir = *state;
  pb_err_t err;
  char path[512];
  snprintf(path, sizeof path, "%s/ckpt-000012.pbck", dir);
  pb_ckpt_t *ck = sample();
  check_sample(ck);
  assert_int_equal(pb_ckpt_write(ck, path, &err), 0);
  assert_int_equal(count_entries(dir, ".tmp."), 0);

  /* the file is exactly the in-memory encoding */
  uint8_t *enc;
  size_t len;
  assert_int_equal(pb_ckpt_encode(ck, &enc, &len, &err), 0);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal((size_t)st.st_size, len);
  pb_ckpt_destroy(&ck);
  assert_null(ck);
  pb_ckpt_destroy(&ck);
  pb_ckpt_destroy(NULL);

  pb_ckpt_t *back = pb_ckpt_read(path, &err);
  if (back == NULL) fail_msg("read: %s", err.msg);
  check_sample(back);
  pb_ckpt_destroy(&back);
  back = pb_ckpt_decode(enc, len, "mem", &err);
  assert_non_null(back);
  check_sample(back);
  pb_ckpt_destroy(&back);
  free(enc);

  /* an empty checkpoint is legal */
  pb_ckpt_t *empty = pb_ckpt_new(&err);
  assert_int_equal(pb_ckpt_write(empty, path, &err), 0);
  pb_ckpt_destroy(&empty);
  empty = pb_ckpt_read(path, &err);
  assert_non_null(empty);
  assert_int_equal(pb_ckpt_count(empty), 0);
  pb_ckpt_destroy(&empty);
}

static void test_bad_names(void **state) {
  (void)state;
  pb_err_t err;
  pb_ckpt_t *ck = pb_ckpt_new(&err);
  char longname[300];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  const char *bad[] = {"", "with space", "tab\there", longname, "\x7f"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_err_clear(&err);
    assert_int_equal(pb_ckpt_add(ck, bad[i], "x", 1, &err), PB_EINVAL);
    assert_non_null(strstr(err.msg, "name"));
  }
  longname[PB_CKPT_NAME_MAX] = '\0';
  assert_int_equal(pb_ckpt_add(ck, longname, "x", 1, &err), 0);
  assert_int_equal(pb_ckpt_add(ck, "a", "x", 1, &err), 0);
  pb_err_clear(&err);
  assert_int_equal(pb_ckpt_add(ck, "a", "y", 1, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "already"));
  assert_int_equal(pb_ckpt_add(ck, "b", NULL, 3, &err), PB_EINVAL);
  assert_int_equal(pb_ckpt_add(NULL, "b", "x", 1, &err), PB_EINVAL);
  assert_int_equal(pb_ckpt_count(ck), 2);
  pb_ckpt_destroy(&ck);
}

/* Every flipped byte, every truncation, trailing junk: PB_ECORRUPT with a
 * message naming the file; never a partial result. */
static void test_corrupt(void **state) {
  const char *dir = *state;
  pb_err_t err;
  char path[512];
  snprintf(path, sizeof path, "%s/ckpt-000001.pbck", dir);
  pb_ckpt_t *ck = sample();
  uint8_t *enc;
  size_t len;
  assert_int_equal(pb_ckpt_encode(ck, &enc, &len, &err), 0);
  pb_ckpt_destroy(&ck);

  for (size_t i = 0; i < len; i++) {
    enc[i] ^= 0x20;
    pb_err_clear(&err);
    pb_ckpt_t *r = pb_ckpt_decode(enc, len, "buf", &err);
    if (r != NULL || err.code != PB_ECORRUPT)
      fail_msg("byte %zu: code %d (%s)", i, err.code, err.msg);
    enc[i] ^= 0x20;
  }
  for (size_t cut = 0; cut < len; cut++) {
    pb_err_clear(&err);
    assert_null(pb_ckpt_decode(enc, cut, "buf", &err));
    assert_int_equal(err.code, PB_ECORRUPT);
    assert_non_null(strstr(err.msg, "truncated"));
  }

  /* the same through files, on a sample of positions */
  size_t cuts[] = {0, 1, 23, 27, 28, 100, len / 2, len - 5, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    write_bytes(path, enc, cuts[i]);
    pb_err_clear(&err);
    assert_null(pb_ckpt_read(path, &err));
    assert_int_equal(err.code, PB_ECORRUPT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "truncated"));
  }
  size_t flips[] = {0, 9, 17, 30, 500, len - 1};
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    enc[flips[i]] ^= 1;
    write_bytes(path, enc, len);
    enc[flips[i]] ^= 1;
    pb_err_clear(&err);
    assert_null(pb_ckpt_read(path, &err));
    assert_int_equal(err.code, PB_ECORRUPT);
    assert_non_null(strstr(err.msg, path));
  }
  /* data appended after a good file */
  uint8_t *longer = malloc(len + 3);
  memcpy(longer, enc, len);
  memset(longer + len, 0, 3);
  write_bytes(path, longer, len + 3);
  pb_err_clear(&err);
  assert_null(pb_ckpt_read(path, &err));
  assert_int_equal(err.code, PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "wrong length"));
  free(longer);

  /* a well-formed file of another format version: unsupported */
  enc[4] = 9;
  uint32_t crc = pb_crc32(0, enc, len - 4);
  for (int k = 0; k < 4; k++) enc[len - 4 + k] = (uint8_t)(crc >> (8 * k));
  pb_err_clear(&err);
  assert_null(pb_ckpt_decode(enc, len, "buf", &err));
  assert_int_equal(err.code, PB_EUNSUPP);
  assert_non_null(strstr(err.msg, "version 9"));
  free(enc);

  /* a section table that lies, under a valid checksum */
  uint8_t bad[24 + 4 + 1 + 8 + 4] = {'P', 'B', 'C', 'K', 1, 0, 0, 0, 1};
  bad[16] = sizeof bad;
  bad[24] = 1;   /* name length 1 */
  bad[28] = 'x'; /* name */
  bad[29] = 200; /* data length 200: past the end */
  crc = pb_crc32(0, bad, sizeof bad - 4);
  for (int k = 0; k < 4; k++)
    bad[sizeof bad - 4 + k] = (uint8_t)(crc >> (8 * k));
  pb_err_clear(&err);
  assert_null(pb_ckpt_decode(bad, sizeof bad, "lie", &err));
  assert_int_equal(err.code, PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "past the end"));

  /* missing file, directory instead of file */
  pb_err_clear(&err);
  snprintf(path, sizeof path, "%s/nope.pbck", dir);
  assert_null(pb_ckpt_read(path, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, path));
  assert_null(pb_ckpt_read(dir, &err));
  assert_int_equal(err.code, PB_EIO);
}

static void test_atomic_replace(void **state) {
  const char *dir = *state;
  pb_err_t err;
  char path[512];
  snprintf(path, sizeof path, "%s/ckpt-000003.pbck", dir);
  pb_ckpt_t *a = pb_ckpt_new(&err), *b = pb_ckpt_new(&err);
  assert_int_equal(pb_ckpt_add(a, "x", "old", 3, &err), 0);
  assert_int_equal(pb_ckpt_add(b, "x", "newer", 5, &err), 0);
  assert_int_equal(pb_ckpt_write(a, path, &err), 0);
  assert_int_equal(pb_ckpt_write(b, path, &err), 0);
  pb_ckpt_t *r = pb_ckpt_read(path, &err);
  const void *d;
  size_t n;
  assert_int_equal(pb_ckpt_get(r, "x", &d, &n), 0);
  assert_int_equal(n, 5);
  assert_memory_equal(d, "newer", 5);
  pb_ckpt_destroy(&r);
  assert_int_equal(count_entries(dir, ".tmp."), 0);

  /* a write that cannot happen leaves the old file as it was */
  char bad[600];
  snprintf(bad, sizeof bad, "%s/no-such-dir/ckpt-000004.pbck", dir);
  pb_err_clear(&err);
  assert_int_equal(pb_ckpt_write(a, bad, &err), PB_EIO);
  assert_non_null(strstr(err.msg, "no-such-dir"));
  /* rename over a directory fails: the temporary file must go away */
  char sub[600];
  snprintf(sub, sizeof sub, "%s/ckpt-000005.pbck", dir);
  assert_int_equal(mkdir(sub, 0755), 0);
  pb_err_clear(&err);
  assert_int_equal(pb_ckpt_write(a, sub, &err), PB_EIO);
  assert_int_equal(count_entries(dir, ".tmp."), 0);
  assert_int_equal(rmdir(sub), 0);
  r = pb_ckpt_read(path, &err);
  assert_non_null(r);
  pb_ckpt_destroy(&r);
  pb_ckpt_destroy(&a);
  pb_ckpt_destroy(&b);
}

typedef struct notes {
  int n;
  char last[PB_ERR_MSG_MAX + 64];
} notes_t;

static void note(void *ctx, const char *msg) {
  notes_t *nt = ctx;
  nt->n++;
  snprintf(nt->last, sizeof nt->last, "%s", msg);
}

static void test_find_latest(void **state) {
  const char *dir = *state;
  pb_err_t err;
  char path[600], found[600];

  /* empty directory, missing directory */
  pb_err_clear(&err);
  assert_int_equal(pb_ckpt_find_latest(dir, found, sizeof found, &err),
                   PB_ENOTFOUND);
  snprintf(path, sizeof path, "%s/missing", dir);
  assert_int_equal(pb_ckpt_find_latest(path, found, sizeof found, &err),
                   PB_ENOTFOUND);

  pb_ckpt_t *ck = sample();
  const long good[] = {1, 2, 9};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/ckpt-%06ld.pbck", dir, good[i]);
    assert_int_equal(pb_ckpt_write(ck, path, &err), 0);
  }
  uint8_t *enc;
  size_t len;
  assert_int_equal(pb_ckpt_encode(ck, &enc, &len, &err), 0);
  pb_ckpt_destroy(&ck);
  /* newer but damaged: a torn 10, a corrupt 11 */
  snprintf(path, sizeof path, "%s/ckpt-000010.pbck", dir);
  write_bytes(path, enc, len / 2);
  enc[40] ^= 0xFF;
  snprintf(path, sizeof path, "%s/ckpt-000011.pbck", dir);
  write_bytes(path, enc, len);
  enc[40] ^= 0xFF;
  /* names that are not checkpoints, even if newer */
  const char *noise[] = {
      "ckpt-000099.pbck.tmp.123", "ckpt-.pbck",  "ckpt-12a.pbck",
      "other-000050.pbck",        "ckpt-000077", "notes.txt",
      "xckpt-000088.pbck"};
  for (size_t i = 0; i < sizeof noise / sizeof noise[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, noise[i]);
    write_bytes(path, enc, len);
  }

  assert_int_equal(pb_ckpt_find_latest(dir, found, sizeof found, &err), 0);
  snprintf(path, sizeof path, "%s/ckpt-000009.pbck", dir);
  assert_string_equal(found, path);

  notes_t nt = {0, ""};
  uint64_t num = 0;
  assert_int_equal(
      pb_ckpt_scan(dir, "ckpt", found, sizeof found, &num, note, &nt, &err), 0);
  assert_int_equal(num, 9);
  assert_int_equal(nt.n, 2); /* 11 and 10 were skipped, with reasons */
  assert_non_null(strstr(nt.last, "ckpt-000010.pbck"));
  assert_non_null(strstr(nt.last, "truncated"));

  /* another prefix */
  assert_int_equal(
      pb_ckpt_scan(dir, "other", found, sizeof found, &num, NULL, NULL, &err),
      0);
  assert_int_equal(num, 50);

  /* pb_ckpt_newest only lists: the largest number, damaged or not. */
  assert_int_equal(
      pb_ckpt_newest(dir, "ckpt", found, sizeof found, &num, &err), 0);
  assert_int_equal(num, 11);
  snprintf(path, sizeof path, "%s/ckpt-000011.pbck", dir);
  assert_string_equal(found, path);
  assert_int_equal(
      pb_ckpt_newest(dir, "other", found, sizeof found, &num, &err), 0);
  assert_int_equal(num, 50);
  assert_int_equal(
      pb_ckpt_newest(dir, "none", found, sizeof found, &num, &err),
      PB_ENOTFOUND);
  snprintf(path, sizeof path, "%s/missing", dir);
  assert_int_equal(
      pb_ckpt_newest(path, "ckpt", found, sizeof found, &num, &err),
      PB_ENOTFOUND);
  {
    char tiny8[8];
    assert_int_equal(
        pb_ckpt_newest(dir, "ckpt", tiny8, sizeof tiny8, NULL, &err),
        PB_ERANGE);
  }
  assert_int_equal(pb_ckpt_newest(NULL, "ckpt", found, sizeof found, &num, &err),
                   PB_EINVAL);

  /* pb_ckpt_numbers lists them all, increasing, the noise left out. */
  uint64_t *nums = NULL;
  size_t nn = 0;
  assert_int_equal(pb_ckpt_numbers(dir, "ckpt", &nums, &nn, &err), 0);
  assert_int_equal(nn, 5);
  const uint64_t want_nums[5] = {1, 2, 9, 10, 11};
  assert_memory_equal(nums, want_nums, sizeof want_nums);
  free(nums);
  assert_int_equal(pb_ckpt_numbers(dir, "none", &nums, &nn, &err), 0);
  assert_int_equal(nn, 0);
  assert_null(nums);
  snprintf(path, sizeof path, "%s/missing", dir);
  assert_int_equal(pb_ckpt_numbers(path, "ckpt", &nums, &nn, &err),
                   PB_ENOTFOUND);
  assert_int_equal(pb_ckpt_numbers(dir, NULL, &nums, &nn, &err), PB_EINVAL);

  /* too small an output buffer */
  char tiny[8];
  assert_int_equal(pb_ckpt_find_latest(dir, tiny, sizeof tiny, &err),
                   PB_ERANGE);

  /* when every candidate is damaged, that is an error, not "none" */
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/ckpt-%06ld.pbck", dir, good[i]);
    write_bytes(path, enc, 10);
  }
  pb_err_clear(&err);
  assert_int_equal(pb_ckpt_find_latest(dir, found, sizeof found, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "ckpt-000011.pbck"));
  free(enc);
}

/* ------------------------------------------------------------ retention */

/* The rule alone: keep_last newest, multiples of keep_every, version 0,
 * the newest and above, protected versions; keep_last 0 keeps all. */
static void test_keeps_rule(void **state) {
  (void)state;
  pb_ckpt_keep_t k = {3, 5, UINT64_MAX};
  /* newest 12: keeps 10, 11, 12 (last 3), 5, 10 (every 5), 0 */
  int want[13] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1};
  for (uint64_t v = 0; v <= 12; v++)
    if (pb_ckpt_keeps(&k, 12, v) != want[v])
      fail_msg("newest 12, last 3, every 5: version %llu kept=%d",
               (unsigned long long)v, pb_ckpt_keeps(&k, 12, v));
  assert_true(pb_ckpt_keeps(&k, 12, 13));  /* above the newest: untouched */
  assert_true(pb_ckpt_keeps(&k, 12, 999));
  k.keep_every = 0; /* none kept forever */
  assert_false(pb_ckpt_keeps(&k, 12, 5));
  assert_false(pb_ckpt_keeps(&k, 12, 9));
  assert_true(pb_ckpt_keeps(&k, 12, 0));
  k.protect_from = 7; /* an evaluator has rated up to 6 */
  assert_false(pb_ckpt_keeps(&k, 12, 6));
  assert_true(pb_ckpt_keeps(&k, 12, 7));
  assert_true(pb_ckpt_keeps(&k, 12, 8));
  k.protect_from = 0; /* an evaluator that has rated nothing: keep all */
  for (uint64_t v = 0; v <= 12; v++) assert_true(pb_ckpt_keeps(&k, 12, v));
  k = (pb_ckpt_keep_t){1, 0, UINT64_MAX}; /* only the newest (and 0) */
  assert_true(pb_ckpt_keeps(&k, 12, 12));
  assert_false(pb_ckpt_keeps(&k, 12, 11));
  assert_true(pb_ckpt_keeps(&k, 12, 0));
  k.keep_last = 0; /* keep everything */
  assert_true(pb_ckpt_keeps(&k, 12, 11));
  assert_true(pb_ckpt_keeps(&k, 12, 1));
  k = (pb_ckpt_keep_t){100, 0, UINT64_MAX}; /* more than there are */
  assert_true(pb_ckpt_keeps(&k, 12, 1));
  assert_true(pb_ckpt_keeps(NULL, 12, 1));
}

/* Writes ckpt-<v>.pbck (intact) for v in [0, n) into dir. */
static void write_versions(const char *dir, int n) {
  pb_err_t err;
  pb_ckpt_t *ck = sample();
  for (int v = 0; v < n; v++) {
    char p[600];
    snprintf(p, sizeof p, "%s/ckpt-%06d.pbck", dir, v);
    assert_int_equal(pb_ckpt_write(ck, p, &err), 0);
  }
  pb_ckpt_destroy(&ck);
}

/* Which of ckpt-000000..ckpt-<n-1> exist, as a string of '1'/'0'. */
static void present(const char *dir, int n, char *out) {
  for (int v = 0; v < n; v++) {
    char p[600];
    snprintf(p, sizeof p, "%s/ckpt-%06d.pbck", dir, v);
    out[v] = access(p, F_OK) == 0 ? '1' : '0';
  }
  out[n] = '\0';
}

typedef struct {
  int n;
  char names[64][96];
} deleted_t;

static void note_deleted(void *ctx, const char *msg) {
  deleted_t *d = ctx;
  assert_non_null(strstr(msg, "deleted checkpoint "));
  const char *slash = strrchr(msg, '/');
  assert_non_null(slash);
  if (d->n < 64) snprintf(d->names[d->n++], sizeof d->names[0], "%s", slash + 1);
}

static void test_prune_files(void **state) {
  const char *dir = *state;
  pb_err_t err;
  char got[32];
  write_versions(dir, 13); /* 0..12 */
  /* files pruning must never touch */
  const char *others[] = {"ckpt-000003.pbck.tmp.4242", "other-000001.pbck",
                          "ckpt-000004.pbck.bak", "ckpt-x.pbck", "notes.txt",
                          "ckpt-000002.pbckx"};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, others[i]);
    write_bytes(p, "x", 1);
  }

  /* keep_last 0: nothing goes, whatever else is set */
  pb_ckpt_keep_t k = {0, 0, UINT64_MAX};
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 12, &k, NULL, NULL, &err), 0);
  present(dir, 13, got);
  assert_string_equal(got, "1111111111111");

  /* protected from 8: 1..7 go except multiples of 5; 8..12 stay */
  k = (pb_ckpt_keep_t){2, 5, 8};
  deleted_t d = {0};
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 12, &k, note_deleted, &d, &err),
                   6);
  present(dir, 13, got);
  assert_string_equal(got, "1000010011111");
  assert_int_equal(d.n, 6);
  for (int i = 0; i < d.n; i++)
    assert_non_null(strstr("ckpt-000001.pbck ckpt-000002.pbck "
                           "ckpt-000003.pbck ckpt-000004.pbck "
                           "ckpt-000006.pbck ckpt-000007.pbck",
                           d.names[i]));

  /* the evaluator moves on: last 2, every 5, nothing protected */
  k.protect_from = UINT64_MAX;
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 12, &k, NULL, NULL, &err), 2);
  present(dir, 13, got);
  assert_string_equal(got, "1000010000111");
  /* idempotent */
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 12, &k, NULL, NULL, &err), 0);

  /* keep_last 1, no keep_every: the newest and version 0 */
  k = (pb_ckpt_keep_t){1, 0, UINT64_MAX};
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 12, &k, NULL, NULL, &err), 3);
  present(dir, 13, got);
  assert_string_equal(got, "1000000000001");
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
    assert_int_equal(count_entries(dir, others[i]), 1);

  /* an older "newest" never deletes what is above it */
  write_versions(dir, 13);
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 6, &k, NULL, NULL, &err), 5);
  present(dir, 13, got);
  assert_string_equal(got, "1000001111111");
}

/* Nothing is deleted unless the newest checkpoint is there and intact. */
static void test_prune_needs_intact_newest(void **state) {
  const char *dir = *state;
  pb_err_t err;
  char got[32], p[600];
  write_versions(dir, 6); /* 0..5 */
  pb_ckpt_keep_t k = {1, 0, UINT64_MAX};
  /* version 6 does not exist */
  pb_err_clear(&err);
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 6, &k, NULL, NULL, &err),
                   PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "version 6"));
  present(dir, 6, got);
  assert_string_equal(got, "111111");
  /* version 5 torn: refused, nothing deleted, the message names it */
  snprintf(p, sizeof p, "%s/ckpt-000005.pbck", dir);
  assert_int_equal(truncate(p, 40), 0);
  pb_err_clear(&err);
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 5, &k, NULL, NULL, &err),
                   PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "ckpt-000005.pbck"));
  present(dir, 6, got);
  assert_string_equal(got, "111111");
  /* with 4 as the newest it proceeds (5 is above it: untouched) */
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 4, &k, NULL, NULL, &err), 3);
  present(dir, 6, got);
  assert_string_equal(got, "100011");
  /* nothing to delete: no check needed, no error */
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 99, &(pb_ckpt_keep_t){1000, 0,
                                 UINT64_MAX}, NULL, NULL, &err), 0);
  /* bad arguments and a missing directory */
  assert_int_equal(pb_ckpt_prune(NULL, "ckpt", 4, &k, NULL, NULL, &err),
                   PB_EINVAL);
  assert_int_equal(pb_ckpt_prune(dir, "ckpt", 4, NULL, NULL, NULL, &err),
                   PB_EINVAL);
  snprintf(p, sizeof p, "%s/nope", dir);
  assert_int_equal(pb_ckpt_prune(p, "ckpt", 4, &k, NULL, NULL, &err),
                   PB_ENOTFOUND);
}

/* A network's training state through a checkpoint file: bit-identical
 * forward outputs and bit-identical training afterwards. */
/* Temporary files of writes that never finished are removed when older
 * than the given time; anything else, and newer ones, stay. */
static int count_notes;
static void count_note(void *ctx, const char *msg) {
  (void)ctx;
  assert_non_null(strstr(msg, ".tmp."));
  count_notes++;
}

static void test_clean_tmp(void **state) {
  const char *dir = *state;
  pb_err_t err;
  const char *names[] = {"ckpt-000003.pbck.tmp.4242", /* stale: removed */
                         "ckpt-000004.pbck.tmp.77",   /* fresh: kept */
                         "ckpt-000005.pbck",          /* not a tmp */
                         "ckpt-000006.pbck.tmp.x1",   /* not ours */
                         "notes.txt"};
  char path[600];
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
    /* All but the fresh one last modified an hour ago. */
    if (i != 1) {
      struct timespec t[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
      assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
    }
  }
  count_notes = 0;
  assert_int_equal(
      pb_ckpt_clean_tmp(dir, time(NULL) - 60, count_note, NULL, &err), 1);
  assert_int_equal(count_notes, 1);
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    assert_int_equal(access(path, F_OK) == 0, i != 0);
  }
  assert_int_equal(pb_ckpt_clean_tmp(dir, time(NULL) - 60, NULL, NULL, &err),
                   0);
  snprintf(path, sizeof path, "%s/missing", dir);
  assert_int_equal(pb_ckpt_clean_tmp(path, time(NULL), NULL, NULL, &err), 0);
  for (int i = 1; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
}

static void test_nn_state_file(void **state) {
  const char *dir = *state;
  pb_err_t err;
  pb_nn_spec_t s = {2, 6, 7, 7, PB_NN_HEAD_LINEAR, 2, 8, 1, 16, 0, 0};
  pb_nn_opt_t o = {3e-3f, 0.0f, 0.0f};
  pb_nn_t *a = pb_nn_new(&s, &o, "cpu", 1, &err);
  pb_nn_t *b = pb_nn_new(&s, &o, "cpu", 2, &err);
  assert_non_null(a);
  assert_non_null(b);
  enum { B = 16 };
  float x[B * 84], t[B * 7], ya[B * 7], yb[B * 7];
  pb_rng_t r;
  pb_rng_seed(&r, 1, 0);
  for (int step = 0; step < 3; step++) {
    for (int i = 0; i < B * 84; i++) x[i] = (float)pb_rng_uniform(&r);
    for (int i = 0; i < B * 7; i++) t[i] = (float)pb_rng_uniform(&r) - 0.5f;
    assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);
  }
  uint8_t *st;
  size_t len;
  assert_int_equal(pb_nn_state_save(a, &st, &len, &err), 0);
  pb_ckpt_t *ck = pb_ckpt_new(&err);
  assert_int_equal(pb_ckpt_add(ck, "q.state", st, len, &err), 0);
  free(st);
  char path[512];
  snprintf(path, sizeof path, "%s/ckpt-000003.pbck", dir);
  assert_int_equal(pb_ckpt_write(ck, path, &err), 0);
  pb_ckpt_destroy(&ck);

  ck = pb_ckpt_read(path, &err);
  assert_non_null(ck);
  const void *d;
  assert_int_equal(pb_ckpt_get(ck, "q.state", &d, &len), 0);
  assert_int_equal(pb_nn_state_load(b, d, len, &err), 0);
  pb_ckpt_destroy(&ck);
  assert_int_equal(pb_nn_train_steps(b), 3);

  assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  for (int step = 0; step < 3; step++) {
    assert_int_equal(pb_nn_train_step(a, x, t, NULL, B, NULL, &err), 0);
    assert_int_equal(pb_nn_train_step(b, x, t, NULL, B, NULL, &err), 0);
  }
  assert_int_equal(pb_nn_forward(a, x, B, ya, &err), 0);
  assert_int_equal(pb_nn_forward(b, x, B, yb, &err), 0);
  assert_memory_equal(ya, yb, sizeof ya);
  pb_nn_destroy(&a);
  pb_nn_destroy(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32),
      cmocka_unit_test_setup_teardown(test_roundtrip, setup_dir, teardown_dir),
      cmocka_unit_test(test_bad_names),
      cmocka_unit_test_setup_teardown(test_corrupt, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_atomic_replace, setup_dir,
                                      teardown_dir),
      cmocka_unit_test_setup_teardown(test_find_latest, setup_dir,
                                      teardown_dir),
      cmocka_unit_test_setup_teardown(test_clean_tmp, setup_dir, teardown_dir),
      cmocka_unit_test(test_keeps_rule),
      cmocka_unit_test_setup_teardown(test_prune_files, setup_dir,
                                      teardown_dir),
      cmocka_unit_test_setup_teardown(test_prune_needs_intact_newest,
                                      setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_nn_state_file, setup_dir,
                                      teardown_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
