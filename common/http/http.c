/* http.c - one-request-per-connection HTTP/1.1 server on libuv.
 *
 * A connection goes through three states:
 *   HEAD     reading the request head into a fixed 8 KiB buffer; the timer
 *            runs from accept and is never pushed back by new bytes, so a
 *            client trickling one byte at a time is cut at the deadline;
 *   WRITING  the response (head + body) is queued with one uv_write;
 *   DRAIN    the write is done and our side is shut down (FIN sent); we
 *            read and discard until the client closes, so that closing
 *            with unread bytes in the kernel does not turn into an RST
 *            that could destroy the response before the client reads it.
 * Deadlines (one timer per connection, always armed for the nearest):
 *   - the whole connection: conn_ms from accept, whatever its state;
 *   - HEAD: timeout_ms from accept (then 408);
 *   - WRITING and DRAIN: every write_ms the bytes of the response not yet
 *     taken by the client (libuv's write queue + the kernel's send queue,
 *     SIOCOUTQ) must have gone down; if they did not, the client does not
 *     read: the connection is reset (SO_LINGER 0, so the kernel drops the
 *     unsent bytes at once). A client that has the whole response and
 *     still has not closed after write_ms is closed normally.
 * At the connection limit the oldest DRAIN connection (served already)
 * makes room first, then the oldest HEAD connection (no request yet).
 * Every path ends in conn_close, which closes the socket and the timer;
 * the connection is freed by the second close callback.
 *
 * The server counts its live libuv handles (listener, two per connection,
 * one per refused connection) so that pb_http_close can free everything
 * from the last close callback and the loop ends with nothing of ours. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/sockios.h> /* SIOCOUTQ */
#endif

enum { C_HEAD, C_WRITING, C_DRAIN };

#define OUT_HEAD_MAX 512 /* our response head: status line + headers */
#define CTYPE_MAX 200    /* longest content type a handler may set */

typedef struct conn conn_t;

struct conn {
  pb_http_t *h;
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_write_t wreq;
  uv_shutdown_t sreq;
  conn_t *prev, *next;
  int state;
  int closing;
  int open_handles; /* of tcp and timer, not yet through their close cb */
  int eof;          /* the client has shut its side down */
  uint64_t deadline; /* loop time (ms) at which the whole connection ends */
  size_t pending;    /* response bytes the client had not taken at the last
                        look (WRITING, DRAIN) */
  char *body;       /* owned (malloc'd), or NULL */
  size_t len;       /* bytes of the request head received */
  size_t out_len;
  char out[OUT_HEAD_MAX];
  char defbody[64];
  char buf[PB_HTTP_HEAD_MAX];
};

/* A connection accepted over the limit: accepted only to be closed. */
typedef struct {
  pb_http_t *h;
  uv_tcp_t tcp;
} refused_t;

struct pb_http {
  uv_loop_t *loop;
  uv_tcp_t listener;
  pb_http_handler_fn *fn;
  void *ctx;
  int port;
  int max_conns;
  int timeout_ms; /* to send a request head */
  int write_ms;   /* longest a response may go without progress */
  int conn_ms;    /* longest a connection lives */
  int n_conns;   /* connections open (not closing) */
  int n_handles; /* our handles not yet through their close callback */
  conn_t *conns;
  int closing;
  void (*done)(void *);
  void *done_arg;
  unsigned long requests, refused, evicted, cut;
  const char *query; /* of the request being handled, during the handler */
};

const char *pb_http_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

/* ---- teardown ------------------------------------------------------- */

/* Called whenever one of our handles finished closing: the server frees
 * itself once it is closing and nothing of it remains on the loop. */
static void handle_gone(pb_http_t *h) {
  h->n_handles--;
  if (h->closing && h->n_handles == 0) {
    void (*done)(void *) = h->done;
    void *arg = h->done_arg;
    free(h);
    if (done != NULL) done(arg);
  }
}

static void on_conn_handle_closed(uv_handle_t *handle) {
  conn_t *c = handle->data;
  pb_http_t *h = c->h;
  if (--c->open_handles == 0) {
    free(c->body);
    free(c);
  }
  handle_gone(h);
}

static void conn_close(conn_t *c) {
  if (c->closing) return;
  c->closing = 1;
  pb_http_t *h = c->h;
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    h->conns = c->next;
  if (c->next != NULL) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  h->n_conns--;
  /* A pending write or shutdown gets its callback (UV_ECANCELED) before
   * the close callback, so c outlives it. */
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
  uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

static void on_timer(uv_timer_t *t);

/* Bytes of the response the client has not taken yet: those libuv still
 * holds and those in the kernel's send queue (sent but not acknowledged,
 * or not sent for want of window). */
static size_t unread_bytes(conn_t *c) {
  size_t n = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
#ifdef SIOCOUTQ
  uv_os_fd_t fd;
  int q = 0;
  if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
      ioctl(fd, SIOCOUTQ, &q) == 0 && q > 0)
    n += (size_t)q;
#endif
  return n;
}

/* Ends a connection at a deadline or to make room: one whose client has
 * not taken its whole response is reset, so that the kernel drops the
 * bytes it holds for it instead of trying to deliver them for minutes;
 * any other is closed normally. */
static void conn_cut(conn_t *c) {
  if (c->closing) return;
  c->h->cut++;
  uv_os_fd_t fd;
  if (c->state != C_HEAD && unread_bytes(c) > 0 &&
      uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0) {
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }
  conn_close(c);
}

/* Arms the timer for ms from now, or for the connection's own deadline
 * when that comes first. */
static void arm(conn_t *c, uint64_t ms) {
  uint64_t now = uv_now(c->h->loop);
  uint64_t left = c->deadline > now ? c->deadline - now : 0;
  uv_timer_stop(&c->timer);
  uv_timer_start(&c->timer, on_timer, ms < left ? ms : left, 0);
}

/* ---- responding ----------------------------------------------------- */

static void on_shutdown(uv_shutdown_t *req, int status) {
  conn_t *c = req->data;
  if (c->closing) return;
  /* Once the client has also finished there is nothing left to drain. */
  if (status < 0 || c->eof) conn_close(c);
}

static void on_write(uv_write_t *req, int status) {
  conn_t *c = req->data;
  free(c->body);
  c->body = NULL;
  if (c->closing) return;
  if (status < 0) {
    conn_close(c);
    return;
  }
  c->state = C_DRAIN;
  c->sreq.data = c;
  if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0)
    conn_close(c);
}

static int ctype_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > CTYPE_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x20 || ch == 0x7f) return 0;
  }
  return 1;
}

/* Queues the response. Takes ownership of `body` (malloc'd or NULL); a
 * NULL body becomes "<status> <reason>\n". With `head_only` (HEAD) only
 * the head goes out. Arms the timer for the write deadline. */
static void respond(conn_t *c, int status, const char *ctype, char *body,
                    size_t body_len, int head_only) {
  pb_http_t *h = c->h;
  if (status < 100 || status > 599 || (ctype != NULL && !ctype_ok(ctype))) {
    free(body);
    body = NULL;
    status = 500;
    ctype = NULL;
  }
  if (ctype == NULL) ctype = "text/plain; charset=utf-8";
  const char *out_body;
  if (body == NULL) {
    int n = snprintf(c->defbody, sizeof c->defbody, "%d %s\n", status,
                     pb_http_reason(status));
    body_len = (size_t)n;
    out_body = c->defbody;
  } else {
    out_body = body;
  }
  c->body = body;
  int n = snprintf(c->out, sizeof c->out,
                   "HTTP/1.1 %d %s\r\n"
                   "Content-Type: %s\r\n"
                   "Content-Length: %zu\r\n"
                   "Cache-Control: no-store\r\n"
                   "%s"
                   "Connection: close\r\n"
                   "\r\n",
                   status, pb_http_reason(status), ctype, body_len,
                   status == 405 ? "Allow: GET, HEAD\r\n" : "");
  /* ctype is at most CTYPE_MAX bytes, so the head always fits. */
  c->out_len = (size_t)n;
  c->state = C_WRITING;
  uv_buf_t bufs[2];
  bufs[0] = uv_buf_init(c->out, (unsigned)c->out_len);
  bufs[1] = uv_buf_init((char *)out_body, (unsigned)body_len);
  c->wreq.data = c;
  if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs,
               head_only || body_len == 0 ? 1 : 2, on_write) != 0) {
    /* on_write will not be called: the body is freed with the conn. */
    conn_close(c);
    return;
  }
  c->pending = unread_bytes(c);
  arm(c, (uint64_t)h->write_ms);
}

/* ---- parsing -------------------------------------------------------- */

/* RFC 9110 token characters (methods, header names). */
static int is_tchar(unsigned char ch) {
  if (ch >= '0' && ch <= '9') return 1;
  if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') return 1;
  return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Offset just past the blank line ending the head in buf[0..len), or 0.
 * Bare LF line ends are accepted as RFC 9112 allows. */
static size_t head_end(const char *buf, size_t from, size_t len) {
  for (size_t i = from; i < len; i++) {
    if (buf[i] != '\n') continue;
    if (i >= 1 && buf[i - 1] == '\n') return i + 1;
    if (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n') return i + 1;
  }
  return 0;
}

/* Cuts the line starting at *pos (ending before `end`) in place: replaces
 * its "\r\n" or "\n" by NULs, returns its start and moves *pos past it.
 * Returns NULL if the line holds a stray CR. */
static char *next_line(char *buf, size_t *pos, size_t end) {
  char *line = buf + *pos;
  size_t i = *pos;
  while (i < end && buf[i] != '\n') i++;
  /* head_end guarantees a '\n' before end */
  buf[i] = '\0';
  if (i > *pos && buf[i - 1] == '\r') buf[i - 1] = '\0';
  *pos = i + 1;
  if (strchr(line, '\r') != NULL) return NULL;
  return line;
}

/* Parses the complete head buf[0..end) in place: 0 with *method and
 * *target pointing into buf (the target without query or fragment), or
 * PB_EINVAL for anything malformed. */
static int parse_head(char *buf, size_t end, const char **method_out,
                      char **target_out, const char **query_out) {
  if (memchr(buf, '\0', end) != NULL) return PB_EINVAL;
  size_t pos = 0;
  char *line = next_line(buf, &pos, end);
  if (line == NULL) return PB_EINVAL;
  /* request-line = method SP request-target SP HTTP-version */
  char *sp1 = strchr(line, ' ');
  if (sp1 == NULL) return PB_EINVAL;
  char *sp2 = strchr(sp1 + 1, ' ');
  if (sp2 == NULL || strchr(sp2 + 1, ' ') != NULL) return PB_EINVAL;
  *sp1 = '\0';
  *sp2 = '\0';
  char *method = line, *target = sp1 + 1, *version = sp2 + 1;
  size_t mlen = strlen(method);
  if (mlen == 0 || mlen > 32) return PB_EINVAL;
  for (size_t i = 0; i < mlen; i++)
    if (!is_tchar((unsigned char)method[i])) return PB_EINVAL;
  if (target[0] != '/') return PB_EINVAL;
  for (const char *p = target; *p; p++)
    if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
      return PB_EINVAL;
  if (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0)
    return PB_EINVAL;
  /* header-field = field-name ":" OWS field-value OWS; no line folding */
  for (;;) {
    char *hl = next_line(buf, &pos, end);
    if (hl == NULL) return PB_EINVAL;
    if (hl[0] == '\0') break; /* the blank line */
    char *colon = strchr(hl, ':');
    if (colon == NULL || colon == hl) return PB_EINVAL;
    for (char *p = hl; p < colon; p++)
      if (!is_tchar((unsigned char)*p)) return PB_EINVAL;
  }
  const char *query = "";
  target[strcspn(target, "#")] = '\0';
  char *q = strchr(target, '?');
  if (q != NULL) {
    *q = '\0';
    query = q + 1;
  }
  *method_out = method;
  *target_out = target;
  if (query_out != NULL) *query_out = query;
  return 0;
}

long pb_http_parse_head(char *buf, size_t len, const char **method,
                        char **target) {
  if (buf == NULL || method == NULL || target == NULL) return PB_EINVAL;
  size_t end = head_end(buf, 0, len);
  if (end == 0) return 0;
  int rc = parse_head(buf, end, method, target, NULL);
  return rc < 0 ? rc : (long)end;
}

/* Parses the complete head in c->buf[0..end) and answers it. */
static void handle_head(conn_t *c, size_t end) {
  pb_http_t *h = c->h;
  const char *method, *query;
  char *target;
  if (parse_head(c->buf, end, &method, &target, &query) != 0) {
    h->refused++;
    respond(c, 400, NULL, NULL, 0, 0);
    return;
  }
  int is_get = strcmp(method, "GET") == 0;
  int is_head = strcmp(method, "HEAD") == 0;
  if (!is_get && !is_head) {
    h->refused++;
    respond(c, 405, NULL, NULL, 0, 0);
    return;
  }
  pb_http_response_t res = {404, NULL, NULL, 0};
  h->requests++;
  h->query = query;
  h->fn(h->ctx, method, target, &res);
  h->query = NULL;
  if (res.body == NULL) res.body_len = 0;
  respond(c, res.status, res.content_type, res.body, res.body_len, is_head);
}

/* ---- libuv callbacks ------------------------------------------------ */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  conn_t *c = handle->data;
  if (c->state == C_HEAD) /* never full here: a full buffer ends HEAD */
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(sizeof c->buf - c->len));
  else /* discarded: anything after the head is not read */
    *buf = uv_buf_init(c->buf, (unsigned)sizeof c->buf);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  conn_t *c = stream->data;
  if (c->closing || nread == 0) return;
  if (nread < 0) {
    if (nread == UV_EOF && c->state == C_WRITING) {
      /* Half-closed after sending its request: still owed the answer. */
      c->eof = 1;
      uv_read_stop(stream);
      return;
    }
    conn_close(c);
    return;
  }
  if (c->state != C_HEAD) return;
  size_t old = c->len;
  c->len += (size_t)nread;
  size_t end = head_end(c->buf, old >= 2 ? old - 2 : 0, c->len);
  if (end != 0) {
    handle_head(c, end);
  } else if (c->len == sizeof c->buf) {
    c->h->refused++;
    respond(c, 431, NULL, NULL, 0, 0);
  }
}

static void on_timer(uv_timer_t *t) {
  conn_t *c = t->data;
  if (c->closing) return;
  if (uv_now(c->h->loop) >= c->deadline) {
    conn_cut(c); /* the whole connection's deadline */
    return;
  }
  if (c->state == C_HEAD) {
    c->h->refused++;
    respond(c, 408, NULL, NULL, 0, 0);
    return;
  }
  /* The write deadline: has the client taken anything since last time? */
  size_t left = unread_bytes(c);
  if ((left > 0 && left < c->pending) || (left == 0 && c->state == C_WRITING)) {
    /* progress (or a write whose callback is still to come) */
    c->pending = left;
    arm(c, (uint64_t)c->h->write_ms);
  } else {
    conn_cut(c); /* reads nothing, or has it all and does not close */
  }
}

static void on_refused_closed(uv_handle_t *handle) {
  refused_t *r = handle->data;
  pb_http_t *h = r->h;
  free(r);
  handle_gone(h);
}

static void on_connection(uv_stream_t *server, int status) {
  pb_http_t *h = server->data;
  if (status < 0 || h->closing) return;
  if (h->n_conns >= h->max_conns) {
    /* Idle peers must not lock others out: make room by closing the
     * oldest connection that has its whole response already (DRAIN: we
     * only wait for it to close), else the oldest that has not yet sent a
     * whole request head (the list is newest first). A client that sends
     * its request at once and reads the answer is served in a few
     * milliseconds, so only idlers and clients that do not read lose
     * their slot. */
    conn_t *drain = NULL, *head = NULL;
    for (conn_t *c = h->conns; c != NULL; c = c->next) {
      if (c->closing) continue;
      if (c->state == C_DRAIN) drain = c;
      if (c->state == C_HEAD) head = c;
    }
    conn_t *victim = drain != NULL ? drain : head;
    if (victim != NULL) {
      h->evicted++;
      if (victim->state == C_DRAIN)
        conn_cut(victim);
      else
        conn_close(victim);
    }
  }
  if (h->n_conns >= h->max_conns) {
    refused_t *r = malloc(sizeof *r);
    if (r == NULL) return; /* libuv calls again while the queue is full */
    r->h = h;
    uv_tcp_init(h->loop, &r->tcp);
    r->tcp.data = r;
    h->n_handles++;
    h->refused++;
    uv_accept(server, (uv_stream_t *)&r->tcp);
    uv_close((uv_handle_t *)&r->tcp, on_refused_closed);
    return;
  }
  conn_t *c = calloc(1, sizeof *c);
  if (c == NULL) return;
  c->h = h;
  c->state = C_HEAD;
  uv_tcp_init(h->loop, &c->tcp);
  uv_timer_init(h->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->open_handles = 2;
  h->n_handles += 2;
  c->next = h->conns;
  if (h->conns != NULL) h->conns->prev = c;
  h->conns = c;
  h->n_conns++;
  c->deadline = uv_now(h->loop) + (uint64_t)h->conn_ms;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
    conn_close(c);
    return;
  }
  arm(c, (uint64_t)h->timeout_ms);
  uv_tcp_nodelay(&c->tcp, 1);
}

/* ---- public --------------------------------------------------------- */

static void on_listener_closed_early(uv_handle_t *handle) {
  free(handle->data);
}

pb_http_t *pb_http_new(uv_loop_t *loop, const char *host, int port,
                       pb_http_handler_fn *fn, void *ctx, pb_err_t *err) {
  if (loop == NULL || host == NULL || fn == NULL) {
    pb_err_set(err, PB_EINVAL, "http: loop, host and handler are required");
    return NULL;
  }
  if (port < 0 || port > 65535) {
    pb_err_set(err, PB_EINVAL, "http: port %d is not in 0..65535", port);
    return NULL;
  }
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t sl;
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) == 0) {
    sl = sizeof(struct sockaddr_in);
  } else if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss) == 0) {
    sl = sizeof(struct sockaddr_in6);
  } else {
    pb_err_set(err, PB_EINVAL, "http: host '%s' is not an IPv4 or IPv6 address",
               host);
    return NULL;
  }
  /* The socket is bound and listening before libuv sees it, so the usual
   * failures (address in use, no permission) leave no handle behind that
   * would need a loop turn to close. */
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    pb_err_set(err, PB_EIO, "http: socket: %s", strerror(errno));
    return NULL;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 128) != 0) {
    pb_err_set(err, PB_EIO, "http: cannot listen on %s port %d: %s", host, port,
               strerror(errno));
    close(fd);
    return NULL;
  }
  struct sockaddr_storage bound;
  socklen_t bl = sizeof bound;
  if (getsockname(fd, (struct sockaddr *)&bound, &bl) != 0) {
    pb_err_set(err, PB_EIO, "http: getsockname: %s", strerror(errno));
    close(fd);
    return NULL;
  }
  pb_http_t *h = calloc(1, sizeof *h);
  if (h == NULL) {
    close(fd);
    pb_err_set(err, PB_ENOMEM, "http: out of memory");
    return NULL;
  }
  h->loop = loop;
  h->fn = fn;
  h->ctx = ctx;
  h->max_conns = PB_HTTP_MAX_CONNS;
  h->timeout_ms = PB_HTTP_TIMEOUT_MS;
  h->write_ms = PB_HTTP_WRITE_MS;
  h->conn_ms = PB_HTTP_CONN_MS;
  h->port = ntohs(bound.ss_family == AF_INET
                      ? ((struct sockaddr_in *)&bound)->sin_port
                      : ((struct sockaddr_in6 *)&bound)->sin6_port);
  int rc = uv_tcp_init(loop, &h->listener);
  if (rc != 0) {
    close(fd);
    free(h);
    pb_err_set(err, PB_EIO, "http: uv_tcp_init: %s", uv_strerror(rc));
    return NULL;
  }
  h->listener.data = h;
  if ((rc = uv_tcp_open(&h->listener, fd)) != 0) close(fd);
  if (rc == 0) rc = uv_listen((uv_stream_t *)&h->listener, 128, on_connection);
  if (rc != 0) {
    /* Rare (resource exhaustion): the handle exists, so it must go through
     * uv_close; h is freed when the loop next runs. */
    pb_err_set(err, PB_EIO, "http: cannot listen on %s port %d: %s", host, port,
               uv_strerror(rc));
    uv_close((uv_handle_t *)&h->listener, on_listener_closed_early);
    return NULL;
  }
  h->n_handles = 1;
  return h;
}

int pb_http_set_limits(pb_http_t *h, int max_conns, int timeout_ms) {
  if (h == NULL || max_conns < 1 || timeout_ms < 1) return PB_EINVAL;
  h->max_conns = max_conns;
  h->timeout_ms = timeout_ms;
  return 0;
}

int pb_http_set_deadlines(pb_http_t *h, int write_ms, int conn_ms) {
  if (h == NULL || write_ms < 1 || conn_ms < 1) return PB_EINVAL;
  h->write_ms = write_ms;
  h->conn_ms = conn_ms;
  return 0;
}

int pb_http_port(const pb_http_t *h) {
  return h ? h->port : -1;
}

int pb_http_connections(const pb_http_t *h) {
  return h ? h->n_conns : 0;
}

unsigned long pb_http_requests(const pb_http_t *h) {
  return h ? h->requests : 0;
}

unsigned long pb_http_refused(const pb_http_t *h) {
  return h ? h->refused : 0;
}

unsigned long pb_http_cut(const pb_http_t *h) {
  return h ? h->cut : 0;
}

static void on_listener_closed(uv_handle_t *handle) {
  handle_gone(handle->data);
}

void pb_http_close(pb_http_t *h, void (*done)(void *arg), void *arg) {
  if (h == NULL || h->closing) return;
  h->closing = 1;
  h->done = done;
  h->done_arg = arg;
  uv_close((uv_handle_t *)&h->listener, on_listener_closed);
  while (h->conns != NULL) conn_close(h->conns);
}

void pb_http_destroy(pb_http_t **h) {
  if (h == NULL) return;
  pb_http_close(*h, NULL, NULL);
  *h = NULL;
}

const char *pb_http_query(const pb_http_t *h) {
  return h != NULL && h->query != NULL ? h->query : "";
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes s[0..n) ('+' is a space, %XX a byte) into out (size bytes),
 * NUL-terminated. Returns the decoded length, PB_EINVAL for a bad escape
 * or an escaped NUL, PB_ERANGE if it does not fit. */
static long decode_part(const char *s, size_t n, char *out, size_t size) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      if (i + 2 >= n) return PB_EINVAL;
      int a = hexval((unsigned char)s[i + 1]);
      int b = a < 0 ? -1 : hexval((unsigned char)s[i + 2]);
      if (a < 0 || b < 0) return PB_EINVAL;
      c = a * 16 + b;
      if (c == 0) return PB_EINVAL;
      i += 2;
    }
    if (k + 1 >= size) return PB_ERANGE;
    out[k++] = (char)c;
  }
  out[k] = '\0';
  return (long)k;
}

long pb_http_query_get(const char *query, const char *name, char *out,
                       size_t size) {
  if (query == NULL || name == NULL || out == NULL || size == 0)
    return PB_EINVAL;
  out[0] = '\0';
  char key[64];
  const char *p = query;
  while (*p != '\0') {
    size_t plen = strcspn(p, "&;");
    size_t klen = strcspn(p, "=&;");
    if (klen > plen) klen = plen;
    long kl = decode_part(p, klen, key, sizeof key);
    if (kl >= 0 && strcmp(key, name) == 0) {
      if (klen == plen) return 0; /* "name" alone: an empty value */
      long r = decode_part(p + klen + 1, plen - klen - 1, out, size);
      if (r < 0) out[0] = '\0';
      return r;
    }
    p += plen;
    if (*p != '\0') p++;
  }
  return PB_ENOTFOUND;
}
