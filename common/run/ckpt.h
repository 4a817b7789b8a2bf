/* ckpt.h - checkpoint files: a few named byte sections, checksummed, written
 * atomically.
 *
 * A checkpoint is what --resume needs: the learner puts in sections such as
 * "v.state", "q.state" (pb_nn_state_save output), "learn.meta" and
 * "config.yaml"; this module does not look inside them. Files are small
 * (kilobytes to a few hundred megabytes) and written once per iteration, so
 * the design favours safety over speed: the whole file is read and verified
 * before anything is returned, and a file is only ever replaced by rename.
 *
 * File layout (little-endian), format version 1:
 *   0   magic "PBCK"
 *   4   u32 format version
 *   8   u32 section count
 *  12   u32 reserved (0)
 *  16   u64 total file length in bytes, trailer included
 *  24   per section: u32 name length (1..255), name bytes (no NUL),
 *       u64 data length, data bytes
 * end   u32 CRC-32 (zlib's) of every byte before it
 *
 * Usage:
 *   pb_ckpt_t *ck = pb_ckpt_new(err);
 *   pb_ckpt_add(ck, "v.state", buf, len, err);   ... more sections
 *   pb_ckpt_write(ck, "run/checkpoints/ckpt-000012.pbck", err);
 *   pb_ckpt_destroy(&ck);
 * and later
 *   ck = pb_ckpt_read(path, err);
 *   pb_ckpt_get(ck, "v.state", &data, &len);
 */
#ifndef PB_CKPT_H
#define PB_CKPT_H

#include <stddef.h>
#include <time.h>
#include <stdint.h>

#include "err.h"

#define PB_CKPT_NAME_MAX 255 /* longest section name, in bytes */
#define PB_CKPT_SUFFIX ".pbck"

typedef struct pb_ckpt pb_ckpt_t;

/* An empty checkpoint. Returns NULL (PB_ENOMEM in err) on failure. */
pb_ckpt_t *pb_ckpt_new(pb_err_t *err);

/* Frees ck and every section; accepts NULL and sets *ck to NULL. */
void pb_ckpt_destroy(pb_ckpt_t **ck);

/* Adds a section, copying `len` bytes from data (data may be NULL when len
 * is 0). name is 1..PB_CKPT_NAME_MAX printable ASCII characters and must
 * not already be in ck. Returns 0, PB_EINVAL naming the bad name, or
 * PB_ENOMEM. */
int pb_ckpt_add(pb_ckpt_t *ck, const char *name, const void *data, size_t len,
                pb_err_t *err);

/* Finds a section. On success sets *data (borrowed: valid until ck is
 * destroyed) and *len and returns 0; returns PB_ENOTFOUND if ck has no
 * section of that name. */
int pb_ckpt_get(const pb_ckpt_t *ck, const char *name, const void **data,
                size_t *len);

/* Number of sections, and the name of section i (0 <= i < count) in the
 * order they were added; the name is borrowed from ck. */
int pb_ckpt_count(const pb_ckpt_t *ck);
const char *pb_ckpt_name(const pb_ckpt_t *ck, int i);

/* Writes ck to `path` atomically: to "<path>.tmp.<pid>", fflush, fsync,
 * rename over path, fsync the directory. After a crash the path holds
 * either the old file or the new one, never a mixture (a stale .tmp file may
 * be left behind; it is never read). One process must not write the same
 * path from two threads at once. Returns 0 or PB_EIO naming the file and
 * the system error; on error the target is untouched and the temporary
 * file removed. */
int pb_ckpt_write(const pb_ckpt_t *ck, const char *path, pb_err_t *err);

/* Reads and verifies a whole checkpoint file (magic, length, checksum,
 * section table) before returning anything. Returns a new pb_ckpt_t owned
 * by the caller, or NULL with err set: PB_EIO (cannot open or read),
 * PB_ECORRUPT (truncated, torn or corrupt; the message names the file and
 * the problem), PB_EUNSUPP (an intact file of another format version). */
pb_ckpt_t *pb_ckpt_read(const char *path, pb_err_t *err);

/* The file format in memory: pb_ckpt_encode returns a malloc'd buffer
 * (caller frees) holding exactly what pb_ckpt_write would write;
 * pb_ckpt_decode verifies and parses such a buffer (not kept) as
 * pb_ckpt_read does, naming it `what` in messages. */
int pb_ckpt_encode(const pb_ckpt_t *ck, uint8_t **out, size_t *len,
                   pb_err_t *err);
pb_ckpt_t *pb_ckpt_decode(const void *buf, size_t len, const char *what,
                          pb_err_t *err);

/* Receives one human-readable line per skipped checkpoint file. */
typedef void pb_ckpt_note_fn(void *ctx, const char *msg);

/* Looks in `dir` for files named "<prefix>-<digits>.pbck" (as
 * "ckpt-000012.pbck") and returns the one with the largest number that
 * reads intact: its path in path[0..size) and its number in *number (may be
 * NULL). Files that fail to read are skipped, each reported to note (may
 * be NULL). Returns 0; PB_ENOTFOUND if dir does not exist or holds no such
 * file; PB_ECORRUPT if there are such files but none is intact (the message
 * says why the newest failed); PB_ERANGE if path is too small; PB_EIO if
 * dir cannot be listed. */
int pb_ckpt_scan(const char *dir, const char *prefix, char *path, size_t size,
                 uint64_t *number, pb_ckpt_note_fn *note, void *note_ctx,
                 pb_err_t *err);

/* As pb_ckpt_scan, but only lists dir: the file of the largest number,
 * not opened (so cheap enough for an event loop; the caller reads and
 * verifies it). Returns 0, PB_ENOTFOUND (no dir or no such file),
 * PB_ERANGE (path too small), PB_EIO or PB_EINVAL. */
int pb_ckpt_newest(const char *dir, const char *prefix, char *path,
                   size_t size, uint64_t *number, pb_err_t *err);

/* The numbers of the files "<prefix>-<digits>.pbck" in dir, none opened,
 * in increasing order, into a malloc'd array (*numbers, the caller frees
 * it; NULL when *n is 0). Returns 0, PB_ENOTFOUND if dir does not exist,
 * PB_EIO if it cannot be listed, PB_ENOMEM or PB_EINVAL. */
int pb_ckpt_numbers(const char *dir, const char *prefix, uint64_t **numbers,
                    size_t *n, pb_err_t *err);

/* pb_ckpt_scan(dir, "ckpt", path, size, NULL, NULL, NULL, err): the newest
 * intact "ckpt-NNNNNN.pbck" in dir, for --resume. */
int pb_ckpt_find_latest(const char *dir, char *path, size_t size,
                        pb_err_t *err);

/* Removes the temporary files that pb_ckpt_write leaves when its process
 * dies mid-write ("<name>.pbck.tmp.<pid>") from dir, if they were last
 * modified before `before` (seconds since the epoch: a process passes its
 * start time, so that a live writer's file is never touched). Each removal
 * is reported to note (may be NULL). Returns the number removed (>= 0);
 * PB_EIO if dir cannot be listed (a missing dir holds none: 0). */
int pb_ckpt_clean_tmp(const char *dir, time_t before, pb_ckpt_note_fn *note,
                      void *note_ctx, pb_err_t *err);

/* Which checkpoints a run keeps (config keys run.keep_last and
 * run.keep_every; docs/nn.md). */
typedef struct pb_ckpt_keep {
  uint64_t keep_last;    /* versions newest-keep_last+1 .. newest are kept;
                            0: every checkpoint is kept (no pruning) */
  uint64_t keep_every;   /* multiples of it are kept forever; 0: none */
  uint64_t protect_from; /* versions >= this are kept because a reader (the
                            evaluator) may still need them; UINT64_MAX:
                            no such reader */
} pb_ckpt_keep_t;

/* The retention rule, in one place: whether version v stays when `newest`
 * is the newest checkpoint written. Kept: keep_last 0 (keep all), v 0 (the
 * untrained start, the baseline of ratings and of the evaluator's minutes
 * column), v >= newest (the newest, and anything numbered above it, is
 * never touched), v among the keep_last newest (v > newest - keep_last), v
 * a multiple of a nonzero keep_every, v >= protect_from. Returns 1 (kept)
 * or 0 (may be deleted). */
int pb_ckpt_keeps(const pb_ckpt_keep_t *keep, uint64_t newest, uint64_t v);

/* Deletes from `dir` the files "<prefix>-<digits>.pbck" whose version
 * pb_ckpt_keeps says may go, after checking that the checkpoint of version
 * `newest` is there and reads intact (pb_ckpt_read): if it is missing
 * (PB_ENOTFOUND) or damaged (its error, e.g. PB_ECORRUPT), nothing is
 * deleted, so a resume always finds an intact checkpoint. Other files
 * (temporary files of a write in progress, other prefixes, anything else)
 * are never touched. Each deletion is reported to note (may be NULL) with
 * the file's path. A file that vanished meanwhile is not an error.
 * Returns the number of files deleted (>= 0), or PB_EINVAL (NULL
 * argument), PB_ENOTFOUND / PB_ECORRUPT / PB_EIO (newest not intact, dir
 * cannot be listed, or a file cannot be deleted: the others are still
 * tried and the message names the first that failed), PB_ENOMEM. */
int pb_ckpt_prune(const char *dir, const char *prefix, uint64_t newest,
                  const pb_ckpt_keep_t *keep, pb_ckpt_note_fn *note,
                  void *note_ctx, pb_err_t *err);

/* CRC-32 as zlib's crc32() and Python's zlib.crc32: start with crc = 0 and
 * feed the data in any number of pieces. */
uint32_t pb_crc32(uint32_t crc, const void *data, size_t len);

#endif
