/* http_fixtures.h - a plain HTTP/1.1 GET against a process of the test on
 * loopback (the learner's /status and /metrics), and a number read out of
 * its JSON, for the process-level tests (test_distributed.c,
 * test_learner_disk.c, test_trust.c, test_backup.c) and the learner's
 * benchmark (bench/bench_ingest.c). */
#ifndef PB_TEST_HTTP_FIXTURES_H
#define PB_TEST_HTTP_FIXTURES_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* GET path from 127.0.0.1:port with a 10 s limit on each read and write;
 * the whole answer, headers and body (malloc'd, at most 64 KiB), or NULL
 * when nothing came. */
static inline char *http_get(int port, const char *path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return NULL;
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return NULL;
  }
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
  if (write(fd, req, (size_t)n) != n) {
    close(fd);
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  ssize_t r;
  while (buf && len + 1 < cap && (r = read(fd, buf + len, cap - 1 - len)) > 0)
    len += (size_t)r;
  close(fd);
  if (buf == NULL || len == 0) {
    free(buf);
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

/* The body of an answer of http_get whose status is 200, or NULL (no
 * answer, another status, no end of the headers). */
static inline const char *http_body_200(const char *answer) {
  if (answer == NULL || strncmp(answer, "HTTP/1.", 7) != 0 ||
      strncmp(answer + 8, " 200 ", 5) != 0)
    return NULL;
  const char *b = strstr(answer, "\r\n\r\n");
  return b != NULL ? b + 4 : NULL;
}

/* The number after "key": in s (NULL: none), or -1. */
static inline double number_after(const char *s, const char *key) {
  const char *p = s ? strstr(s, key) : NULL;
  return p ? atof(p + strlen(key)) : -1;
}

#endif
