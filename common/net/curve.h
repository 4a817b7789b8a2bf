/* curve.h - ZeroMQ CURVE for a run's sockets: encrypted, authenticated
 * links between the learner and its workers (libzmq's own, with
 * libsodium).
 *
 * The keys of a run live in one directory (config net.curve_dir; `probs
 * keys DIR` makes it):
 *   learner.key      the learner's key pair (public and secret: mode 0600)
 *   learner.pub      its public key: the workers pin it
 *   worker.key       a worker key pair that every worker shares (`probs
 *                    keys DIR`), or
 *   NAME.key         one pair per worker (`probs keys DIR --workers N`
 *                    makes worker-1 .. worker-N; `probs keys DIR
 *                    --add-worker NAME` one more), so that the learner can
 *                    refuse one worker without refusing the others; a
 *                    worker uses the pair net.curve_key names
 *   NAME.pub         each pair's public key
 *   authorized_keys  the worker public keys the learner accepts, one per
 *                    line (Z85, 40 characters; a line that starts with '#' is a
 *                    comment: the key's name). The learner reads it again
 *                    when a key it does not know knocks and the file has
 *                    changed, so a worker added while the run goes is
 *                    accepted without a restart.
 * Key files are text: "public-key Z85" and, in .key files, "secret-key
 * Z85" lines. The learner's ROUTER and PUB sockets are CURVE servers whose
 * ZAP handler (a thread) accepts exactly the listed keys and reports every
 * refusal with the peer's address; workers and the evaluator are CURVE
 * clients that talk only to the pinned learner key. A peer without CURVE,
 * with an unlisted key, or facing another learner gets no message through.
 */
#ifndef PB_CURVE_H
#define PB_CURVE_H

#include "err.h"

#define PB_CURVE_Z85 40 /* Z85 text of a 32-byte key */
#define PB_CURVE_NAME_MAX 63 /* a worker key's name */
#define PB_CURVE_MAX_WORKERS 4096 /* keys one `probs keys --workers` makes */

typedef struct pb_curve_keys {
  char pub[PB_CURVE_Z85 + 1];
  char sec[PB_CURVE_Z85 + 1]; /* "" when only the public key was read */
} pb_curve_keys_t;

/* Makes DIR (if needed) and writes a new learner.key and learner.pub, and
 * with workers 0 one shared worker.key and worker.pub, else one pair per
 * worker, worker-1.key .. worker-N.key and their .pub, and an
 * authorized_keys listing the worker keys, each under a "# NAME" line.
 * Refuses (PB_EINVAL) to overwrite a learner key, or workers outside
 * 0..PB_CURVE_MAX_WORKERS. PB_EUNSUPP if libzmq has no CURVE; PB_EIO
 * naming the file on a write error. */
int pb_curve_make_dir(const char *dir, int workers, pb_err_t *err);

/* Adds a worker to the keys of DIR: writes NAME.key and NAME.pub and
 * appends the public key to authorized_keys (under a lock, so that
 * several processes may add workers at once; the file is replaced
 * atomically). A running learner accepts the key from the worker's first
 * connection. PB_EINVAL for a bad name (1..PB_CURVE_NAME_MAX of A-Z a-z
 * 0-9 . _ -, not "learner") or an existing NAME.key, PB_ENOTFOUND when
 * DIR has no learner.pub, PB_EIO. */
int pb_curve_add_worker(const char *dir, const char *name, pb_err_t *err);

/* Reads the key file `path`; with need_secret its secret key must be
 * there. PB_EIO (unreadable), PB_ECONFIG (not a key file: the message says
 * what is wrong). */
int pb_curve_load(const char *path, int need_secret, pb_curve_keys_t *k,
                  pb_err_t *err);

/* Makes `sock` a CURVE server with k (before bind). */
int pb_curve_server(void *sock, const pb_curve_keys_t *k, pb_err_t *err);

/* Makes `sock` a CURVE client with `mine` that talks only to the server
 * key server_pub (before connect). */
int pb_curve_client(void *sock, const pb_curve_keys_t *mine,
                    const char *server_pub, pb_err_t *err);

/* For a worker or the evaluator: if dir is not empty, loads
 * dir/KEY.key (key: the net.curve_key name; NULL or "" means "worker")
 * and dir/learner.pub and makes each socket of socks[0..n) a client of
 * that learner. 0 when dir is empty (CURVE off). */
int pb_curve_client_dir(const char *dir, const char *key, void *const *socks,
                        int n, pb_err_t *err);

/* The learner's ZAP handler: accepts the keys of an authorized_keys file. */
typedef struct pb_zap pb_zap_t;

/* Called from the handler's thread for each connection attempt. */
typedef void pb_zap_note_fn(void *ctx, int accepted, const char *address,
                            const char *key_z85);

/* Starts the handler on zctx (before any CURVE server socket of zctx
 * binds): loads the listed keys (PB_ECONFIG for a malformed line, naming
 * it; an empty list is an error too) and answers libzmq's ZAP requests
 * from a thread. NULL with err on failure. */
pb_zap_t *pb_zap_start(void *zctx, const char *authorized_path,
                       pb_zap_note_fn *note, void *ctx, pb_err_t *err);

/* Number of keys the handler accepts now (any thread). */
int pb_zap_count(pb_zap_t *z);

/* Stops the thread and frees; accepts NULL and nulls *z. Call before
 * terminating zctx. */
void pb_zap_stop(pb_zap_t **z);

#endif
