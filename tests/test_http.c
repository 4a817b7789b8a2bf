/* test_http.c - common/http/http: a real server on 127.0.0.1, port 0, its loop
 * running in a thread, clients on plain blocking sockets. Every test ends
 * by closing the server and checking that the loop closes cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "err.h"
#include "http.h"
#include "json.h"

/* ---- the server under test ------------------------------------------ */

typedef struct {
  uv_loop_t loop;
  uv_async_t stop;
  pb_http_t *h;
  pthread_t thr;
  int port;
  pthread_mutex_t mu;
  char last_path[256];
  char last_method[16];
  char last_query[256];
  int done_calls;
  /* counters read on the loop thread just before closing */
  unsigned long requests, refused, cut;
  int conns_at_stop;
} srv_t;

static void handler(void *ctx, const char *method, const char *path,
                    pb_http_response_t *res) {
  srv_t *s = ctx;
  pthread_mutex_lock(&s->mu);
  snprintf(s->last_path, sizeof s->last_path, "%s", path);
  snprintf(s->last_method, sizeof s->last_method, "%s", method);
  snprintf(s->last_query, sizeof s->last_query, "%s", pb_http_query(s->h));
  pthread_mutex_unlock(&s->mu);
  if (strcmp(path, "/metrics") == 0) {
    res->status = 200;
    res->content_type = "text/plain; version=0.0.4";
    res->body = strdup("probs_up 1\n");
    res->body_len = strlen(res->body);
  } else if (strcmp(path, "/status") == 0) {
    pb_json_t j;
    pb_json_init(&j);
    pb_json_obj_begin(&j);
    pb_json_kbool(&j, "ok", true);
    pb_json_kint(&j, "iteration", 7);
    pb_json_obj_end(&j);
    res->status = 200;
    res->content_type = "application/json";
    res->body_len = pb_json_len(&j);
    res->body = pb_json_take(&j);
    pb_json_free(&j);
  } else if (strcmp(path, "/big") == 0) {
    size_t n = 1 << 20;
    res->body = malloc(n);
    if (res->body != NULL) {
      for (size_t i = 0; i < n; i++) res->body[i] = (char)('a' + i % 26);
      res->body_len = n;
      res->status = 200;
    } else {
      res->status = 500;
    }
  } else if (strcmp(path, "/inject") == 0) {
    res->status = 200;
    res->content_type = "text/plain\r\nX-Evil: 1";
    res->body = strdup("never sent\n");
    res->body_len = strlen(res->body);
  } else if (strcmp(path, "/weird") == 0) {
    res->status = 1000; /* not an HTTP status */
  }
  /* anything else: the default 404 */
}

static void on_done(void *arg) {
  srv_t *s = arg;
  s->done_calls++;
}

static void on_stop(uv_async_t *a) {
  srv_t *s = a->data;
  s->requests = pb_http_requests(s->h);
  s->refused = pb_http_refused(s->h);
  s->cut = pb_http_cut(s->h);
  s->conns_at_stop = pb_http_connections(s->h);
  pb_http_close(s->h, on_done, s);
  s->h = NULL;
  uv_close((uv_handle_t *)a, NULL);
}

static void *loop_main(void *arg) {
  srv_t *s = arg;
  uv_run(&s->loop, UV_RUN_DEFAULT);
  return NULL;
}

/* write_ms, conn_ms: pb_http_set_deadlines, 0 for the defaults. */
static srv_t *srv_start_dl(int max_conns, int timeout_ms, int write_ms,
                           int conn_ms) {
  srv_t *s = calloc(1, sizeof *s);
  assert_non_null(s);
  pthread_mutex_init(&s->mu, NULL);
  assert_int_equal(uv_loop_init(&s->loop), 0);
  pb_err_t err;
  pb_err_clear(&err);
  s->h = pb_http_new(&s->loop, "127.0.0.1", 0, handler, s, &err);
  assert_non_null(s->h);
  assert_int_equal(pb_http_set_limits(s->h, max_conns, timeout_ms), 0);
  if (write_ms > 0 || conn_ms > 0)
    assert_int_equal(pb_http_set_deadlines(s->h,
                                           write_ms > 0 ? write_ms
                                                        : PB_HTTP_WRITE_MS,
                                           conn_ms > 0 ? conn_ms
                                                       : PB_HTTP_CONN_MS),
                     0);
  s->port = pb_http_port(s->h);
  assert_true(s->port > 0 && s->port < 65536);
  assert_int_equal(uv_async_init(&s->loop, &s->stop, on_stop), 0);
  s->stop.data = s;
  assert_int_equal(pthread_create(&s->thr, NULL, loop_main, s), 0);
  return s;
}

static srv_t *srv_start(int max_conns, int timeout_ms) {
  return srv_start_dl(max_conns, timeout_ms, 0, 0);
}

/* Closes the server from its loop thread, waits for the loop to end and
 * checks that nothing was left on it. */
static void srv_stop(srv_t *s) {
  uv_async_send(&s->stop);
  assert_int_equal(pthread_join(s->thr, NULL), 0);
  assert_int_equal(s->done_calls, 1);
  assert_int_equal(uv_loop_close(&s->loop), 0);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* ---- a plain-socket client ------------------------------------------- */

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static void send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    assert_true(w > 0);
    p += w;
    n -= (size_t)w;
  }
}

/* Reads until EOF (or error/timeout) into a malloc'd NUL-terminated
 * buffer. */
static char *read_all(int fd, size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  assert_non_null(buf);
  for (;;) {
    if (cap - n < 4096) {
      cap *= 2;
      buf = realloc(buf, cap);
      assert_non_null(buf);
    }
    ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
    if (r <= 0) break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

/* One request with raw bytes; returns the whole response (caller frees). */
static char *exchange(int port, const char *req, size_t req_len, size_t *len) {
  int fd = dial(port);
  send_all(fd, req, req_len);
  char *resp = read_all(fd, len);
  close(fd);
  return resp;
}

static int status_of(const char *resp) {
  int st = -1;
  if (sscanf(resp, "HTTP/1.1 %d ", &st) != 1) return -1;
  return st;
}

static const char *body_of(const char *resp) {
  const char *p = strstr(resp, "\r\n\r\n");
  return p ? p + 4 : NULL;
}

static long content_length(const char *resp) {
  const char *p = strstr(resp, "\r\nContent-Length: ");
  return p ? strtol(p + 18, NULL, 10) : -1;
}

static char *get(int port, const char *req, size_t *len) {
  return exchange(port, req, strlen(req), len);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- tests ----------------------------------------------------------- */

static void test_get_metrics(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  size_t n;
  char *r = get(s->port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &n);
  assert_int_equal(status_of(r), 200);
  assert_non_null(strstr(r, "\r\nContent-Type: text/plain; version=0.0.4\r\n"));
  assert_non_null(strstr(r, "\r\nConnection: close\r\n"));
  assert_int_equal(content_length(r), 11);
  assert_string_equal(body_of(r), "probs_up 1\n");
  free(r);
  /* HTTP/1.0 and bare-LF line ends are accepted too */
  r = get(s->port, "GET /metrics HTTP/1.0\n\n", &n);
  assert_int_equal(status_of(r), 200);
  assert_string_equal(body_of(r), "probs_up 1\n");
  free(r);
  srv_stop(s);
}

static void test_status_query_stripped(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  char *r = get(s->port, "GET /status?verbose=1&x=2 HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 200);
  assert_non_null(strstr(r, "\r\nContent-Type: application/json\r\n"));
  assert_int_equal(pb_json_validate(body_of(r)), 0);
  assert_non_null(strstr(body_of(r), "\"iteration\":7"));
  pthread_mutex_lock(&s->mu);
  assert_string_equal(s->last_path, "/status");
  assert_string_equal(s->last_method, "GET");
  assert_string_equal(s->last_query, "verbose=1&x=2"); /* pb_http_query */
  pthread_mutex_unlock(&s->mu);
  free(r);
  r = get(s->port, "GET /status HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 200);
  pthread_mutex_lock(&s->mu);
  assert_string_equal(s->last_query, "");
  pthread_mutex_unlock(&s->mu);
  free(r);
  srv_stop(s);
  assert_string_equal(pb_http_query(NULL), "");
}

/* Query parameters: decoding, the first of a name, bounds, bad escapes. */
static void test_query_get(void **state) {
  (void)state;
  char v[16];
  assert_int_equal(pb_http_query_get("a=1&moves=44%2053+2", "moves", v, sizeof v),
                   7);
  assert_string_equal(v, "44 53 2");
  assert_int_equal(pb_http_query_get("moves=4;x=1", "x", v, sizeof v), 1);
  assert_string_equal(v, "1");
  assert_int_equal(pb_http_query_get("m%6Fves=7&moves=1", "moves", v, sizeof v),
                   1); /* the name is decoded too; the first one wins */
  assert_string_equal(v, "7");
  assert_int_equal(pb_http_query_get("flag&b=", "flag", v, sizeof v), 0);
  assert_string_equal(v, "");
  assert_int_equal(pb_http_query_get("b=", "b", v, sizeof v), 0);
  assert_int_equal(pb_http_query_get("", "b", v, sizeof v), PB_ENOTFOUND);
  assert_int_equal(pb_http_query_get("bb=1&&=2", "b", v, sizeof v),
                   PB_ENOTFOUND);
  assert_string_equal(v, "");
  assert_int_equal(pb_http_query_get("b=%", "b", v, sizeof v), PB_EINVAL);
  assert_int_equal(pb_http_query_get("b=%4", "b", v, sizeof v), PB_EINVAL);
  assert_int_equal(pb_http_query_get("b=%zz", "b", v, sizeof v), PB_EINVAL);
  assert_int_equal(pb_http_query_get("b=a%00b", "b", v, sizeof v), PB_EINVAL);
  /* 15 characters fit in 16 bytes, 16 do not. */
  assert_int_equal(pb_http_query_get("b=123456789012345", "b", v, sizeof v), 15);
  assert_int_equal(pb_http_query_get("b=1234567890123456", "b", v, sizeof v),
                   PB_ERANGE);
  assert_string_equal(v, "");
  assert_int_equal(pb_http_query_get("b=%41%41%41%41%41%41%41%41%41%41%41%41"
                                     "%41%41%41%41", "b", v, sizeof v),
                   PB_ERANGE);
  /* A name longer than the decoder's key buffer is just not a match. */
  char longq[400];
  memset(longq, 'k', 300);
  strcpy(longq + 300, "=1&b=2");
  assert_int_equal(pb_http_query_get(longq, "b", v, sizeof v), 1);
  assert_int_equal(pb_http_query_get(NULL, "b", v, sizeof v), PB_EINVAL);
  assert_int_equal(pb_http_query_get("b=1", "b", v, 0), PB_EINVAL);
}

static void test_head(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  char *r = get(s->port, "HEAD /metrics HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 200);
  assert_int_equal(content_length(r), 11);
  assert_string_equal(body_of(r), ""); /* no body after the head */
  pthread_mutex_lock(&s->mu);
  assert_string_equal(s->last_method, "HEAD");
  pthread_mutex_unlock(&s->mu);
  free(r);
  srv_stop(s);
}

static void test_not_found(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  char *r = get(s->port, "GET /nope HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 404);
  assert_string_equal(body_of(r), "404 Not Found\n");
  assert_int_equal(content_length(r), 14);
  free(r);
  srv_stop(s);
}

static void test_method_not_allowed(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  const char *reqs[] = {
      "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
      "DELETE /status HTTP/1.1\r\n\r\n", "OPTIONS /metrics HTTP/1.1\r\n\r\n"};
  for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
    char *r = get(s->port, reqs[i], NULL);
    assert_int_equal(status_of(r), 405);
    assert_non_null(strstr(r, "\r\nAllow: GET, HEAD\r\n"));
    free(r);
  }
  srv_stop(s);
  /* the handler never saw them (checked through the counters) */
}

static void test_bad_request(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  static const struct {
    const char *req;
    size_t len; /* 0: strlen */
  } bad[] = {
      {"GARBAGE\r\n\r\n", 0},
      {"GET /x HTTP/9.9\r\n\r\n", 0},
      {"GET /x FTP/1.1\r\n\r\n", 0},
      {"GET x HTTP/1.1\r\n\r\n", 0},
      {"GET /a b HTTP/1.1\r\n\r\n", 0},
      {"GET  /a HTTP/1.1\r\n\r\n", 0},
      {" GET / HTTP/1.1\r\n\r\n", 0},
      {"G(T / HTTP/1.1\r\n\r\n", 0},
      {"GET /\x01 HTTP/1.1\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\n: empty name\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\n folded: x\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 0},
      {"GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26},
      {"\r\n\r\n", 0},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t len = bad[i].len ? bad[i].len : strlen(bad[i].req);
    char *r = exchange(s->port, bad[i].req, len, NULL);
    if (status_of(r) != 400) fail_msg("request %zu: got '%.40s'", i, r);
    assert_string_equal(body_of(r), "400 Bad Request\n");
    free(r);
  }
  srv_stop(s);
}

static void test_server_errors(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  /* a content type with CR/LF would inject a header: refused as 500 */
  char *r = get(s->port, "GET /inject HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 500);
  assert_null(strstr(r, "X-Evil"));
  free(r);
  r = get(s->port, "GET /weird HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 500);
  free(r);
  srv_stop(s);
}

static void test_head_too_large(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  size_t n = 20000;
  char *req = malloc(n + 64);
  assert_non_null(req);
  int k = snprintf(req, 64, "GET /metrics HTTP/1.1\r\nX-Long: ");
  memset(req + k, 'a', n);
  memcpy(req + k + n, "\r\n\r\n", 5);
  char *r = get(s->port, req, NULL);
  assert_int_equal(status_of(r), 431);
  free(r);
  /* just under the limit is fine */
  size_t fill = PB_HTTP_HEAD_MAX - (size_t)k - 4;
  memset(req + k, 'b', fill);
  memcpy(req + k + fill, "\r\n\r\n", 5);
  assert_int_equal(strlen(req), PB_HTTP_HEAD_MAX);
  r = get(s->port, req, NULL);
  assert_int_equal(status_of(r), 200);
  free(r);
  free(req);
  srv_stop(s);
}

static void test_big_body_and_half_close(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  size_t n;
  char *r = get(s->port, "GET /big HTTP/1.1\r\n\r\n", &n);
  assert_int_equal(status_of(r), 200);
  assert_int_equal(content_length(r), 1 << 20);
  const char *b = body_of(r);
  assert_int_equal(n - (size_t)(b - r), 1 << 20);
  for (size_t i = 0; i < (1u << 20); i += 4099)
    assert_int_equal(b[i], 'a' + i % 26);
  free(r);
  /* a client that shuts its side down after the request still gets the
   * answer */
  int fd = dial(s->port);
  const char *req = "GET /metrics HTTP/1.1\r\n\r\n";
  send_all(fd, req, strlen(req));
  shutdown(fd, SHUT_WR);
  r = read_all(fd, NULL);
  close(fd);
  assert_int_equal(status_of(r), 200);
  assert_string_equal(body_of(r), "probs_up 1\n");
  free(r);
  srv_stop(s);
}

static void test_slowloris_cut(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 300);
  /* trickles a never-ending head one byte every 20 ms */
  int fd = dial(s->port);
  const char *start = "GET /metrics HTTP/1.1\r\n";
  send_all(fd, start, strlen(start));
  double t0 = now_s();
  struct pollfd p = {fd, POLLIN, 0};
  while (now_s() - t0 < 4.0) {
    send_all(fd, "X", 1);
    if (poll(&p, 1, 20) > 0) break;
  }
  char *r = read_all(fd, NULL);
  double dt = now_s() - t0;
  close(fd);
  assert_int_equal(status_of(r), 408);
  assert_true(dt >= 0.25 && dt < 2.0);
  free(r);
  /* a client that connects and sends nothing is cut as well */
  fd = dial(s->port);
  t0 = now_s();
  r = read_all(fd, NULL);
  dt = now_s() - t0;
  close(fd);
  assert_int_equal(status_of(r), 408);
  assert_true(dt >= 0.25 && dt < 2.0);
  free(r);
  /* and the server still answers */
  r = get(s->port, "GET /metrics HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 200);
  free(r);
  srv_stop(s);
}

#define N_CLIENTS 16
#define N_REQS 20

static int client_port;

static void *client_main(void *arg) {
  long ok = 0;
  (void)arg;
  for (int i = 0; i < N_REQS; i++) {
    char *r = get(client_port,
                  i % 2 ? "GET /metrics HTTP/1.1\r\n\r\n"
                        : "GET /status HTTP/1.1\r\n\r\n",
                  NULL);
    if (status_of(r) == 200) ok++;
    free(r);
  }
  return (void *)ok;
}

static void test_many_clients(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  client_port = s->port;
  pthread_t t[N_CLIENTS];
  for (int i = 0; i < N_CLIENTS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, client_main, NULL), 0);
  long total = 0;
  for (int i = 0; i < N_CLIENTS; i++) {
    void *ret;
    pthread_join(t[i], &ret);
    total += (long)ret;
  }
  assert_int_equal(total, N_CLIENTS * N_REQS);
  srv_stop(s);
}

static void test_connection_limit(void **state) {
  (void)state;
  srv_t *s = srv_start(4, 5000);
  /* 100 idle peers (a slowloris with many sockets) against 4 slots: each
   * new one takes the slot of the oldest idler, and a real request made
   * after them is served at once. */
  enum { IDLE = 100 };
  int idle[IDLE];
  for (int i = 0; i < IDLE; i++) idle[i] = dial(s->port);
  double t0 = now_s();
  char *resp = get(s->port, "GET /metrics HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(resp), 200);
  free(resp);
  assert_true(now_s() - t0 < 2.0);
  /* The oldest idlers were closed by the server. */
  char buf[64];
  ssize_t r = recv(idle[0], buf, sizeof buf, 0);
  assert_true(r == 0 || (r < 0 && errno == ECONNRESET));
  for (int i = 0; i < IDLE; i++) close(idle[i]);
  srv_stop(s);
}

/* A client that never reads: a small receive buffer (set before connect,
 * so the window is small from the start), the request sent whole, and
 * nothing read from then on. */
static int dial_deaf(int port, const char *req) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  int rcv = 2048;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  send_all(fd, req, strlen(req));
  return fd;
}

/* Whether the server has ended the connection: a FIN (POLLRDHUP) or a
 * reset (POLLHUP/POLLERR), seen without reading anything. */
static int ended_by_server(int fd) {
  struct pollfd p = {fd, POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Waits up to timeout_s for every fd to be ended by the server; returns
 * how many were. */
static int wait_ended(const int *fds, int n, double timeout_s) {
  double end = now_s() + timeout_s;
  int done = 0;
  while (now_s() < end) {
    done = 0;
    for (int i = 0; i < n; i++) done += ended_by_server(fds[i]);
    if (done == n) break;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return done;
}

/* Clients that send a whole request and then neither read the answer nor
 * close, 40 of them against 8 slots with the default deadlines: each new
 * client takes the slot of the oldest one that has had its answer, and
 * every honest request among them is answered. (Before the deadlines they
 * kept their slots for seconds, and honest requests were refused.) */
static void test_unread_responses_lose_their_slots(void **state) {
  (void)state;
  srv_t *s = srv_start(8, 5000);
  enum { DEAF = 40 };
  int deaf[DEAF];
  int honest = 0, answered = 0;
  for (int i = 0; i < DEAF; i++) {
    deaf[i] = dial_deaf(s->port, "GET /status HTTP/1.1\r\n\r\n");
    if (i % 4 == 3) {
      char *r = get(s->port, "GET /metrics HTTP/1.1\r\n\r\n", NULL);
      honest++;
      answered += status_of(r) == 200;
      free(r);
    }
  }
  assert_int_equal(answered, honest);
  /* The oldest of them were closed to make room. */
  assert_true(wait_ended(deaf, 8, 10.0) == 8);
  for (int i = 0; i < DEAF; i++) close(deaf[i]);
  srv_stop(s);
}

/* The write deadline: clients that ask for 1 MiB and read none of it are
 * reset once their response has not moved for write_ms (200 ms here), and
 * honest requests are answered all along. */
static void test_write_deadline(void **state) {
  (void)state;
  srv_t *s = srv_start_dl(64, 5000, 200, 60000);
  enum { DEAF = 16 };
  int deaf[DEAF];
  for (int i = 0; i < DEAF; i++) {
    deaf[i] = dial_deaf(s->port, "GET /big HTTP/1.1\r\n\r\n");
    char *r = get(s->port, "GET /status HTTP/1.1\r\n\r\n", NULL);
    assert_int_equal(status_of(r), 200);
    free(r);
  }
  /* Bounded wait, far above the deadline: every one of them is cut. */
  assert_int_equal(wait_ended(deaf, DEAF, 20.0), DEAF);
  for (int i = 0; i < DEAF; i++) close(deaf[i]);
  char *r = get(s->port, "GET /big HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 200); /* a reader still gets it all */
  assert_int_equal(content_length(r), 1 << 20);
  free(r);
  uv_async_send(&s->stop);
  pthread_join(s->thr, NULL);
  assert_true(s->cut >= DEAF);
  assert_int_equal(s->conns_at_stop, 0);
  assert_int_equal(uv_loop_close(&s->loop), 0);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* The whole connection's deadline: with a request-head timeout of a
 * minute, a client that sends nothing is still closed at conn_ms (300 ms),
 * and the server answers as before. */
static void test_connection_deadline(void **state) {
  (void)state;
  srv_t *s = srv_start_dl(64, 60000, 60000, 300);
  int idle = dial(s->port);
  send_all(idle, "GET /metr", 9); /* half a head */
  assert_int_equal(wait_ended(&idle, 1, 20.0), 1);
  close(idle);
  char *r = get(s->port, "GET /metrics HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 200);
  free(r);
  srv_stop(s);
}

static void test_close_with_open_connections(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  int fds[3];
  for (int i = 0; i < 3; i++) fds[i] = dial(s->port);
  /* half a request on one of them */
  send_all(fds[0], "GET /met", 8);
  /* make sure the server has taken all three before closing */
  char *r = get(s->port, "GET /metrics HTTP/1.1\r\n\r\n", NULL);
  assert_int_equal(status_of(r), 200);
  free(r);
  srv_stop(s); /* checks uv_loop_close == 0 and the done callback */
  for (int i = 0; i < 3; i++) {
    char buf[16];
    ssize_t n = recv(fds[i], buf, sizeof buf, 0);
    assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
    close(fds[i]);
  }
}

static void test_counters(void **state) {
  (void)state;
  srv_t *s = srv_start(64, 5000);
  char *r = get(s->port, "GET /metrics HTTP/1.1\r\n\r\n", NULL);
  free(r);
  r = get(s->port, "PUT / HTTP/1.1\r\n\r\n", NULL);
  free(r);
  r = get(s->port, "nonsense\r\n\r\n", NULL);
  free(r);
  uv_async_send(&s->stop);
  pthread_join(s->thr, NULL);
  assert_int_equal(s->requests, 1);
  assert_int_equal(s->refused, 2);
  assert_int_equal(s->conns_at_stop, 0);
  assert_int_equal(uv_loop_close(&s->loop), 0);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static void test_new_errors(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  pb_err_t err;
  pb_err_clear(&err);
  assert_null(pb_http_new(&loop, "not-an-ip", 0, handler, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "not-an-ip"));
  assert_null(pb_http_new(&loop, "127.0.0.1", 70000, handler, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_http_new(&loop, "127.0.0.1", 0, NULL, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_http_new(NULL, "127.0.0.1", 0, handler, NULL, &err));
  /* a port already taken */
  pb_http_t *a = pb_http_new(&loop, "127.0.0.1", 0, handler, NULL, &err);
  assert_non_null(a);
  assert_int_equal(pb_http_set_limits(a, 0, 10), PB_EINVAL);
  assert_int_equal(pb_http_set_limits(a, 1, 0), PB_EINVAL);
  assert_int_equal(pb_http_set_deadlines(a, 0, 10), PB_EINVAL);
  assert_int_equal(pb_http_set_deadlines(a, 10, 0), PB_EINVAL);
  assert_int_equal(pb_http_set_deadlines(NULL, 10, 10), PB_EINVAL);
  assert_int_equal(pb_http_set_deadlines(a, 10, 10), 0);
  pb_err_clear(&err);
  assert_null(
      pb_http_new(&loop, "127.0.0.1", pb_http_port(a), handler, NULL, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "127.0.0.1"));
  /* IPv6 loopback, when the machine has it */
  pb_http_t *b = pb_http_new(&loop, "::1", 0, handler, NULL, &err);
  if (b != NULL) assert_true(pb_http_port(b) > 0);
  pb_http_destroy(&a);
  assert_null(a);
  pb_http_destroy(&b);
  pb_http_destroy(NULL);
  pb_http_close(NULL, NULL, NULL);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_string_equal(pb_http_reason(431), "Request Header Fields Too Large");
  assert_string_equal(pb_http_reason(299), "Unknown");
}

/* The head parser on its own (what fuzz/fuzz_http.c drives). */
static void test_parse_head(void **state) {
  (void)state;
  const char *method;
  char *target;
  char a[] = "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\nrest";
  long la = (long)strlen(a);
  long n = pb_http_parse_head(a, (size_t)la, &method, &target);
  assert_int_equal(n, la - 4);
  assert_string_equal(method, "GET");
  assert_string_equal(target, "/metrics");
  char b[] = "GET / HTTP/1.1\r\nHost: x\r\n";
  assert_int_equal(pb_http_parse_head(b, strlen(b), &method, &target), 0);
  char c[] = "GET / HTTP/2\n\n";
  assert_int_equal(pb_http_parse_head(c, strlen(c), &method, &target),
                   PB_EINVAL);
  char d[] = "GET / HTTP/1.0\nBad Header\n\n";
  assert_int_equal(pb_http_parse_head(d, strlen(d), &method, &target),
                   PB_EINVAL);
  char e[] = "GET\r / HTTP/1.0\n\n";
  assert_int_equal(pb_http_parse_head(e, strlen(e), &method, &target),
                   PB_EINVAL);
  char f[] = "HEAD /status HTTP/1.0\n\n";
  long lf = (long)strlen(f);
  assert_int_equal(pb_http_parse_head(f, (size_t)lf, &method, &target), lf);
  assert_string_equal(method, "HEAD");
  assert_int_equal(pb_http_parse_head(NULL, 0, &method, &target), PB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_head),
      cmocka_unit_test(test_get_metrics),
      cmocka_unit_test(test_status_query_stripped),
      cmocka_unit_test(test_query_get),
      cmocka_unit_test(test_head),
      cmocka_unit_test(test_not_found),
      cmocka_unit_test(test_method_not_allowed),
      cmocka_unit_test(test_bad_request),
      cmocka_unit_test(test_server_errors),
      cmocka_unit_test(test_head_too_large),
      cmocka_unit_test(test_big_body_and_half_close),
      cmocka_unit_test(test_slowloris_cut),
      cmocka_unit_test(test_many_clients),
      cmocka_unit_test(test_connection_limit),
      cmocka_unit_test(test_unread_responses_lose_their_slots),
      cmocka_unit_test(test_write_deadline),
      cmocka_unit_test(test_connection_deadline),
      cmocka_unit_test(test_close_with_open_connections),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_new_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
