/* probs serve - the dashboard and the board over a run directory, without
 * its learner: a finished run, or one still training elsewhere.
 *
 *   probs serve RUN_DIR [--port P] [--bind ADDR] [--checkpoint N]
 *
 * Serves common/web/webserve.h on ADDR:P (127.0.0.1:8080 by default; --port 0
 * or -1: a free port the kernel picks), read-only: the page, /status made
 * from the run's files, /api/history, /api/move, the evaluator's charts.
 * Prints one line naming the address once it listens, then runs until
 * SIGINT or SIGTERM: exit status 128 + the signal (130, 143), as every
 * probs command stopped by a signal (README, "Exit status"). Exit status 2
 * for bad input: bad usage, RUN_DIR not a run directory, a checkpoint
 * that cannot be loaded, a --bind that is no address of this machine; 1
 * when the port is in use or the server fails (the message says which). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <uv.h>

#include "args.h"
#include "cmds.h"
#include "opts.h"
#include "webserve.h"

static void serve_usage(FILE *f) {
  fprintf(f,
          "usage: probs serve RUN_DIR [--port P] [--bind ADDR] "
          "[--checkpoint N]\n"
          "Serves the dashboard of the run in RUN_DIR (its charts, numbers "
          "and a\nboard that plays the newest checkpoint) without its "
          "learner, read-only:\nnothing served changes the run. Files are "
          "re-read as they change, so\nthe page of a run still training "
          "keeps up.\n"
          "  --port P         port to listen on (default 8080; 0 or -1: a "
          "free\n                   port, printed)\n"
          "  --bind ADDR      address to listen on (default 127.0.0.1; "
          "0.0.0.0 or ::\n                   opens it to the network: "
          "anyone who reaches it can\n                   read the run and "
          "play its model)\n"
          "  --checkpoint N   the board plays version N "
          "(RUN_DIR/checkpoints/\n                   ckpt-N.pbck) instead "
          "of the newest\n"
          "Ctrl-C stops it (exit status 130; SIGTERM: 143).\n");
}

/* Whether ADDR is an address of this machine: binding a socket to it
 * (port 0) works. 0, or 2 after the message; an address that does not
 * parse is left to the server, which says so. */
static int check_bind(const char *bind_addr) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t sl;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, bind_addr, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    sl = sizeof *v4;
  } else if (inet_pton(AF_INET6, bind_addr, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    sl = sizeof *v6;
  } else {
    return 0;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM, 0);
  if (fd < 0) return 0; /* the server will say what is wrong */
  int rc = bind(fd, (struct sockaddr *)&ss, sl) == 0 ? 0 : errno;
  close(fd);
  if (rc != EADDRNOTAVAIL) return 0;
  fprintf(stderr,
          "probs serve: --bind %s: not an address of this machine (%s); "
          "127.0.0.1 serves this machine alone, 0.0.0.0 every interface\n",
          bind_addr, strerror(rc));
  return PB_EXIT_USAGE;
}

typedef struct {
  pb_webserve_t *srv;
  uv_signal_t sig[2];
  int signo;
} serve_t;

static void on_signal(uv_signal_t *h, int signo) {
  serve_t *s = h->data;
  s->signo = signo;
  pb_webserve_destroy(&s->srv);
  for (int i = 0; i < 2; i++)
    if (!uv_is_closing((uv_handle_t *)&s->sig[i]))
      uv_close((uv_handle_t *)&s->sig[i], NULL);
}

int pb_cmd_serve(int argc, char **argv) {
  const char *dir = NULL, *port_s = "8080", *bind = "127.0.0.1", *ckpt_s = NULL;
  int npos = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("port", 0, &port_s),
                                PB_OPTS_VALUE("bind", 0, &bind),
                                PB_OPTS_VALUE("checkpoint", 0, &ckpt_s)};
  const pb_opts_t cl = {"probs serve", serve_usage, rows, PB_OPTS_N(rows),
                        &dir,          1,           &npos};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  if (npos == 0) return pb_opts_fail(&cl, "need RUN_DIR");
  long port = 0, ckpt = -1;
  if (pb_cli_long(port_s, -1, 65535, &port) != 0) {
    fprintf(stderr, "probs serve: --port '%s': expected -1..65535\n", port_s);
    return 2;
  }
  if (ckpt_s != NULL && pb_cli_long(ckpt_s, 0, 999999999, &ckpt) != 0) {
    fprintf(stderr,
            "probs serve: --checkpoint '%s': expected a version "
            "number\n",
            ckpt_s);
    return 2;
  }

  if (check_bind(bind) != 0) return PB_EXIT_USAGE;
  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0) {
    fprintf(stderr, "probs serve: cannot start the event loop\n");
    return 1;
  }
  serve_t s = {0};
  pb_err_t err;
  pb_err_clear(&err);
  pb_webserve_opts_t o = {dir, bind, (int)port, ckpt};
  s.srv = pb_webserve_new(&loop, &o, &err);
  if (s.srv == NULL) {
    const int in_use = strstr(err.msg, strerror(EADDRINUSE)) != NULL;
    fprintf(stderr, "probs serve: %s%s\n", err.msg,
            in_use ? " (another probs serve or a learner on that port? "
                     "--port 0 picks a free one)"
                   : "");
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    /* A port in use is a failure; a directory that is no run, bad input
     * (README, "Exit status"). */
    return err.code == PB_EIO || err.code == PB_ENOMEM ? PB_EXIT_FAILED
                                                      : PB_EXIT_USAGE;
  }
  static const int signos[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; i++) {
    uv_signal_init(&loop, &s.sig[i]);
    s.sig[i].data = &s;
    uv_signal_start(&s.sig[i], on_signal, signos[i]);
  }
  const int v6 = strchr(bind, ':') != NULL;
  printf(
      "probs serve: run %s (%s) from %s on http://%s%s%s:%d/ "
      "(read-only; Ctrl-C stops)\n",
      pb_webserve_run(s.srv), pb_webserve_game(s.srv), dir, v6 ? "[" : "", bind,
      v6 ? "]" : "", pb_webserve_port(s.srv));
  fflush(stdout);
  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop) != 0)
    fprintf(stderr, "probs serve: the event loop did not close cleanly\n");
  fprintf(stderr, "probs serve: stopped (%s)\n",
          s.signo == SIGTERM ? "SIGTERM" : "SIGINT");
  /* Stopped by a signal: 128 + its number (README, "Exit status"). */
  return PB_EXIT_SIGNAL_BASE + (s.signo > 0 ? s.signo : SIGINT);
}
