/* spool.h - bytes for a file, written by a thread of their own: whoever
 * logs never waits for the disk.
 *
 * A process whose loop must answer (the learner's: its workers, /status)
 * hands its log lines and metrics.jsonl lines to a spool instead of
 * writing them itself; the spool's thread writes them, in order, each
 * record in one write(2) to each of its descriptors. When the disk stalls
 * (a frozen or full file system, a pipe nobody reads) the thread waits in
 * write(2) and the records queue up in a fixed buffer; once it is full, new
 * records are dropped and counted, never the caller blocked. What is
 * queued is written at pb_spool_destroy, which waits for the disk a
 * bounded time.
 *
 * Thread-safe: any number of threads may put; one thread writes. No
 * allocation after pb_spool_new. */
#ifndef PB_SPOOL_H
#define PB_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct pb_spool pb_spool_t;

/* A spool holding up to `capacity` bytes of records (each takes its
 * length plus 12 bytes; 4096 <= capacity <= 1 GiB) and its writer thread.
 * NULL with err filled (PB_EINVAL, PB_ENOMEM, PB_EIO: no thread). */
pb_spool_t *pb_spool_new(size_t capacity, pb_err_t *err);

/* Queues n bytes (1 <= n, n + 12 <= capacity) for descriptor fd1 and,
 * when fd2 >= 0, fd2 too (fd1 may be -1 when only fd2 is wanted). All or
 * nothing: returns 0, or PB_EAGAIN when the spool is full (the record is
 * dropped and counted), PB_EINVAL for a bad record. Never waits for the
 * disk. */
int pb_spool_put(pb_spool_t *s, int fd1, int fd2, const void *buf, size_t n);

/* How long the writer has been in the write(2) it is in now, in seconds
 * (0 when it is not writing): the disk's stall, as this process sees it. */
double pb_spool_stalled(const pb_spool_t *s);

/* Records dropped because the spool was full, since it was made. */
uint64_t pb_spool_dropped(const pb_spool_t *s);

/* Bytes queued and not yet written. */
size_t pb_spool_pending(const pb_spool_t *s);

/* Waits until what was queued before the call is written, for at most
 * timeout_s seconds. 0, or PB_EAGAIN when the time ran out. */
int pb_spool_flush(pb_spool_t *s, double timeout_s);

/* Writes what is queued (waiting at most 5 s for the disk), stops the
 * thread and frees the spool; accepts NULL and sets *s to NULL. When the
 * disk is still stuck after that, the thread and its buffer are left to
 * the process's exit (it is ending). */
void pb_spool_destroy(pb_spool_t **s);

#endif
