/* http.h - a minimal HTTP/1.1 server on a caller's libuv loop.
 *
 * Tuned for the learner's `GET /metrics` (Prometheus text) and
 * `GET /status` (JSON): a few requests a second from a scraper or a human,
 * never a hot path. Each connection carries exactly one request: the server
 * reads the request head, calls the handler once, writes the whole response
 * with `Connection: close`, shuts the socket down and closes it. No request
 * bodies, no keep-alive, no chunked encoding.
 *
 * Everything that arrives on the socket is untrusted. The server answers
 *   400  a malformed request line or header line, a NUL byte, an HTTP
 *        version other than 1.0/1.1, a target that does not start with '/';
 *   405  any method other than GET and HEAD (with `Allow: GET, HEAD`);
 *   408  a client that has not sent a whole request head within the timeout
 *        (slow or idle clients, "slowloris"); the connection is then closed;
 *   431  a request head larger than PB_HTTP_HEAD_MAX bytes;
 * Deadlines (pb_http_set_deadlines): a client that takes none of its
 * response for `write_ms` (it does not read) loses its connection, reset
 * so that the kernel drops what it still holds for it; one that has the
 * whole response and has not closed after `write_ms` is closed; and no
 * connection lives longer than `conn_ms` from accept, whatever it does.
 * At the connection limit a new client takes the slot of the oldest
 * connection that has its whole response already (the server only waits
 * for it to close), else of the oldest that has not yet sent a whole
 * request head (idle, slow or non-reading peers cannot lock others out);
 * only when every slot is busy answering is
 * the new one accepted and closed at once, so a flood of clients costs a
 * bounded amount of memory. Only well-formed GET
 * and HEAD requests reach the handler, which decides everything else
 * (usually 200 or 404).
 *
 * Threading: every function here, and the handler, runs on the loop's
 * thread; the server is not thread-safe.
 */
#ifndef PB_HTTP_H
#define PB_HTTP_H

#include <stddef.h>

#include <uv.h>

#include "err.h"

#define PB_HTTP_HEAD_MAX 8192   /* request line + headers, bytes */
#define PB_HTTP_MAX_CONNS 64    /* default concurrent connections */
#define PB_HTTP_TIMEOUT_MS 5000 /* default time to send a request head */
#define PB_HTTP_WRITE_MS 5000   /* default: a response makes progress */
#define PB_HTTP_CONN_MS 30000   /* default: the longest a connection lives */

typedef struct pb_http pb_http_t;

/* What the handler fills in. The server initialises it to
 * {404, NULL, NULL, 0} before calling the handler.
 *
 * status:       100..599; anything else is answered as 500.
 * content_type: borrowed; read once right after the handler returns (a
 *               string literal is usual). NULL means
 *               "text/plain; charset=utf-8". A value containing CR or LF
 *               is refused (500) so a handler cannot inject headers.
 * body:         malloc'd by the handler (malloc, strdup, pb_json_take...);
 *               ownership passes to the server, which frees it with free()
 *               once the response is written or the connection dies, also
 *               when the status is refused. NULL means a short default body
 *               naming the status ("Not Found\n").
 * body_len:     bytes of body (the body need not be NUL-terminated). */
typedef struct pb_http_response {
  int status;
  const char *content_type;
  char *body;
  size_t body_len;
} pb_http_response_t;

/* Called once per well-formed GET or HEAD request. `method` is "GET" or
 * "HEAD" (for HEAD the server sends only the head, with the Content-Length
 * the body would have had); `path` is the request target up to, not
 * including, any '?' or '#' (never percent-decoded); the query is
 * pb_http_query(server). Both strings are valid only during the call. */
typedef void pb_http_handler_fn(void *ctx, const char *method, const char *path,
                                pb_http_response_t *res);

/* Binds host:port (an IPv4 or IPv6 literal, e.g. "127.0.0.1", "0.0.0.0",
 * "::1"; port 0 picks a free port, see pb_http_port) on `loop` and starts
 * listening. `fn` (required) is called with `ctx` for every request.
 * Returns the server, or NULL and fills err: PB_EINVAL for a bad host,
 * port or NULL argument, PB_EIO if the address cannot be bound (in use,
 * not permitted), naming host, port and the system's reason. The loop
 * must outlive the server; close it with pb_http_close. */
pb_http_t *pb_http_new(uv_loop_t *loop, const char *host, int port,
                       pb_http_handler_fn *fn, void *ctx, pb_err_t *err);

/* Changes the limits for connections accepted from now on: at most
 * `max_conns` (>= 1) open at once, each given `timeout_ms` (>= 1) to send
 * its request head. Returns 0 or PB_EINVAL.
 * Defaults: PB_HTTP_MAX_CONNS, PB_HTTP_TIMEOUT_MS. */
int pb_http_set_limits(pb_http_t *h, int max_conns, int timeout_ms);

/* Changes the deadlines of connections accepted from now on:
 * write_ms (>= 1): once the response is queued, the bytes the client has
 *   not taken yet (in the server and in the kernel's send queue) must go
 *   down at least once every write_ms, or the connection is reset; when
 *   the client has them all but has not closed within write_ms, it is
 *   closed;
 * conn_ms (>= 1): no connection lives longer than this from accept (a
 *   slow reader of a large response included).
 * Returns 0 or PB_EINVAL. Defaults: PB_HTTP_WRITE_MS, PB_HTTP_CONN_MS. */
int pb_http_set_deadlines(pb_http_t *h, int write_ms, int conn_ms);

/* The port actually bound (useful after binding port 0); -1 if h is NULL. */
int pb_http_port(const pb_http_t *h);

/* Connections open right now (for tests and /status). */
int pb_http_connections(const pb_http_t *h);

/* Requests handed to the handler so far, and requests refused by the
 * server itself (400, 405, 408, 431, connection limit). */
unsigned long pb_http_requests(const pb_http_t *h);
unsigned long pb_http_refused(const pb_http_t *h);

/* Connections ended by a deadline (write_ms, conn_ms) or closed to make
 * room for a new client after their response was sent. */
unsigned long pb_http_cut(const pb_http_t *h);

/* Stops listening and closes every connection (responses in flight are
 * abandoned) through uv_close. Once the loop has run every close callback
 * the server frees itself and then calls done(arg) if `done` is not NULL;
 * after that the server adds no handle to the loop, so uv_run returns once
 * the caller's own handles are closed and uv_loop_close returns 0. The
 * pointer h must not be used after this call. Accepts NULL (and then calls
 * nothing). */
void pb_http_close(pb_http_t *h, void (*done)(void *arg), void *arg);

/* The house destructor: pb_http_close(*h, NULL, NULL) and *h = NULL.
 * Memory is released only when the loop next runs the close callbacks.
 * Accepts NULL and a NULL *h. */
void pb_http_destroy(pb_http_t **h);

/* The query of the request being handled (the text after '?', up to any
 * '#', not decoded; "" when there is none). Valid only inside the handler,
 * during the call; "" outside it or for a NULL h. */
const char *pb_http_query(const pb_http_t *h);

/* Looks up parameter `name` in a query string "a=1&b=x%20y" (pairs split
 * at '&' or ';', '+' and %XX decoded in names and values; the first pair
 * of that name wins; "name" without '=' has the empty value). Copies the
 * decoded value into out (size bytes, NUL-terminated) and returns its
 * length (>= 0); PB_ENOTFOUND when there is no such parameter; PB_EINVAL
 * for a malformed escape (%G1, a '%' at the end) or an escaped NUL (%00)
 * in the value, or a NULL argument; PB_ERANGE when the decoded value needs
 * size bytes or more. On every error out is "" (when size > 0). Untrusted
 * input is fine: nothing is read past the query's NUL and nothing written
 * past out[size-1]. */
long pb_http_query_get(const char *query, const char *name, char *out,
                       size_t size);

/* Reason phrase of a status code ("OK", "Not Found"); "Unknown" for codes
 * it does not know. Never NULL. */
const char *pb_http_reason(int status);

/* The request-head parser the server uses, for tests and fuzzing:
 * buf[0..len) holds the bytes received so far and is modified in place.
 * Returns 0 while the head is incomplete (no blank line yet); the length
 * of the head (> 0) when it is complete and well-formed, with *method and
 * *target pointing into buf (the target without its query or fragment);
 * PB_EINVAL when it is malformed (a NUL byte, a stray CR, a bad request
 * line, version or header line). */
long pb_http_parse_head(char *buf, size_t len, const char **method,
                        char **target);

#endif
