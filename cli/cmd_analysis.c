/* probs analysis - the batch analysis engine (common/play/engine.h,
 * docs/analysis.md) on stdin and stdout: JSON queries in, one a line,
 * JSON answers out, one a line. stdout carries answers only; messages go
 * to stderr.
 *
 * Queries are read as they come; whenever no more input is waiting (or a
 * batch is full) the waiting ones are answered together, so a script
 * piped in is answered in batches of --batch and a person typing gets
 * each answer at once. A reader thread reads stdin into a buffer that
 * the engine's thread takes lines from, so that a terminate action
 * (pb_engine_notice) and a signal (pb_engine_stop) stop a search while
 * the engine's thread is in it. Exits 0 at the end of input (after
 * answering everything), 1 when stdin or stdout fails, 2 for a bad
 * command line or model, 128 + N after signal N, within a second (the
 * queries read so far answered noResults; a search that does not stop
 * is left behind: the process exits a second after the signal). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cmds.h"
#include "engine.h"
#include "entry.h"
#include "game.h"
#include "model.h"
#include "models.h"
#include "opts.h"

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void analysis_usage(FILE *f) {
  fprintf(
      f,
      "usage: probs analysis [--model CKPT | --game NAME] [--batch N]\n"
      "                      [--time-limit MS]\n"
      "  A batch analysis engine: reads JSON queries on stdin, one a\n"
      "  line, and writes one JSON answer a line on stdout, many queries\n"
      "  answered together with their network calls batched\n"
      "  (docs/analysis.md). A query:\n"
      "    {\"id\":\"a\",\"moves\":[\"4\",\"4\"],\"report\":[\"v\",\"q\","
      "\"v1\",\"move\"],\n"
      "     \"agent\":\"beam,E=100\",\"budget\":200,\"seed\":1}\n"
      "  or in KataGo's fields:\n"
      "    {\"id\":\"g\",\"moves\":[[\"X\",\"4\"],[\"O\",\"4\"]],"
      "\"analyzeTurns\":[0,2],\"maxVisits\":400}\n"
      "  and KataGo's actions: {\"id\":\"t\",\"action\":\"terminate\","
      "\"terminateId\":\"g\"},\n"
      "  query_version, clear_cache. A bad query gets\n"
      "  {\"id\":...,\"error\":...,\"field\":...} and the engine goes on.\n"
      "  SIGINT or SIGTERM ends it within a second, a search under way\n"
      "  included.\n"
      "  --model CKPT  a probs checkpoint or model file: the game, and\n"
      "                the networks (default: the shipped model of\n"
      "                --game, data/models/GAME.pbck)\n"
      "  --game NAME   without --model: whose shipped model (default\n"
      "                connect4)\n"
      "  --batch N     queries answered together at most, 1..%d\n"
      "                (default %d)\n"
      "  --time-limit MS  the longest an agent's search for \"move\" runs\n"
      "                (0..%d; 0: no limit; default %d): abnet answers\n"
      "                with what it searched by then, a beam, mcts or\n"
      "                bpip search still running gets an error, and the\n"
      "                engine goes on to the next query\n",
      PB_ENGINE_MAX_BATCH, PB_ENGINE_DEFAULT_BATCH, PB_ENGINE_MAX_TIME_MS,
      PB_ENGINE_DEFAULT_TIME_MS);
}

/* emit: one answer a line on stdout (flushed when input pauses, and a
 * partial answer during a search at once). */
static int emit_line(void *ctx, const char *line, size_t len) {
  FILE *out = ctx;
  if (fwrite(line, 1, len, out) != len || fputc('\n', out) == EOF)
    return PB_EIO;
  if (strstr(line, "\"isDuringSearch\":true") != NULL && fflush(out) != 0)
    return PB_EIO;
  return 0;
}

/* The input: a buffer of what read(2) gave, lines cut from it. */
typedef struct {
  char *buf;
  size_t len, cap;
  int skipping; /* inside a line too long, refused already */
  int eof;
} input_t;

/* Refuses a line longer than PB_ENGINE_MAX_LINE. */
static int refuse_long(pb_engine_t *e, pb_err_t *err) {
  char msg[96];
  snprintf(msg, sizeof msg,
           "line too long: a query is at most %d bytes; the line was skipped",
           PB_ENGINE_MAX_LINE);
  return pb_engine_refuse(e, msg, err);
}

/* Answers the complete lines in in->buf, keeps the partial last one
 * (dropped, once refused, when it grows too long); after a signal, leaves
 * the rest unread. Returns 0 or the engine's stopping code. */
static int take_lines(pb_engine_t *e, input_t *in, pb_err_t *err) {
  size_t start = 0;
  int rc = 0;
  for (size_t i = 0; i < in->len && rc == 0 && !stop_flag; i++) {
    if (in->buf[i] != '\n') continue;
    size_t n = i - start;
    if (n > 0 && in->buf[start + n - 1] == '\r') n--;
    if (in->skipping)
      in->skipping = 0; /* the end of a line refused already */
    else if (n > PB_ENGINE_MAX_LINE)
      rc = refuse_long(e, err);
    else
      rc = pb_engine_query(e, in->buf + start, n, err);
    start = i + 1;
  }
  memmove(in->buf, in->buf + start, in->len - start);
  in->len -= start;
  if (rc == 0 && !stop_flag && in->len > PB_ENGINE_MAX_LINE) {
    if (!in->skipping) rc = refuse_long(e, err);
    in->skipping = 1;
    in->len = 0;
  }
  return rc;
}

/* The input as the reader thread hands it over: bytes read from stdin
 * that the engine's thread has not taken yet. */
#define FEED_MAX (16u << 20) /* the reader waits while this much waits */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char *buf;
  size_t len, cap;
  int eof;      /* stdin ended */
  int rerrno;   /* reading failed with this errno (0: not) */
  int done;     /* the engine's thread is finished */
  pb_engine_t *e;
} feed_t;

/* A deadline `ms` from now for pthread_cond_timedwait. */
static struct timespec after_ms(long ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += (ms % 1000) * 1000000L;
  t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
  t.tv_nsec %= 1000000000L;
  return t;
}

/* After a signal: the engine stops its searches; if its thread is not
 * done a second later (a search of a kind that does not stop: uct,
 * alphabeta, td, the baselines), the process ends without it. */
static void stop_within_a_second(feed_t *f) {
  pb_engine_stop(f->e);
  pthread_mutex_lock(&f->mu);
  pthread_cond_broadcast(&f->cv);
  struct timespec until = after_ms(1000);
  while (!f->done &&
         pthread_cond_timedwait(&f->cv, &f->mu, &until) != ETIMEDOUT) {
  }
  int done = f->done;
  pthread_mutex_unlock(&f->mu);
  if (!done) {
    static const char msg[] =
        "probs analysis: a search that does not stop was still running a "
        "second after the signal; exiting without it\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
    }
    _exit(PB_EXIT_SIGNAL_BASE + (stop_flag ? stop_flag : SIGTERM));
  }
}

/* The reader thread: stdin into f->buf; each terminate action shown to
 * the engine at once (pb_engine_notice), so that it stops the search it
 * names while the engine's thread is busy with it. */
static void *reader(void *arg) {
  feed_t *f = arg;
  char chunk[65536];
  char *line = malloc(PB_ENGINE_MAX_LINE + 1);
  size_t ll = 0;
  int skipping = 0;
  for (;;) {
    if (stop_flag) {
      stop_within_a_second(f);
      break;
    }
    pthread_mutex_lock(&f->mu);
    int done = f->done, full = f->len >= FEED_MAX;
    if (full && !done) {
      struct timespec until = after_ms(100);
      pthread_cond_timedwait(&f->cv, &f->mu, &until);
    }
    pthread_mutex_unlock(&f->mu);
    if (done) break;
    if (full) continue;
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    int pr = poll(&p, 1, 100);
    if (pr <= 0) continue; /* a timeout, or EINTR: look at the flag */
    ssize_t got = read(STDIN_FILENO, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    /* Terminates first: the engine's thread may be deep in a search. */
    for (ssize_t i = 0; line != NULL && i < got; i++) {
      if (chunk[i] != '\n') {
        if (ll < PB_ENGINE_MAX_LINE) line[ll++] = chunk[i];
        else skipping = 1;
        continue;
      }
      line[ll] = '\0';
      if (!skipping && strstr(line, "terminate") != NULL)
        pb_engine_notice(f->e, line, ll);
      ll = 0;
      skipping = 0;
    }
    pthread_mutex_lock(&f->mu);
    if (got <= 0) {
      if (got < 0) f->rerrno = errno;
      f->eof = 1;
    } else {
      if (f->len + (size_t)got > f->cap) {
        size_t cap = (f->len + (size_t)got) * 2;
        char *b = realloc(f->buf, cap);
        if (b == NULL) {
          f->rerrno = ENOMEM;
          f->eof = 1;
        } else {
          f->buf = b;
          f->cap = cap;
        }
      }
      if (!f->eof) {
        memcpy(f->buf + f->len, chunk, (size_t)got);
        f->len += (size_t)got;
      }
    }
    int end = f->eof;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    if (end) break;
  }
  free(line);
  return NULL;
}

/* Takes what the reader read into in (as much as fits). When nothing
 * waits, answers the waiting queries first, then waits. Returns 0, 1 at
 * the end of input, -1 when reading failed (errno set), 2 on a signal,
 * or a negative engine code (< -1) that stops the engine. */
static int take_input(feed_t *f, input_t *in, pb_err_t *err) {
  pthread_mutex_lock(&f->mu);
  while (f->len == 0 && !f->eof && !stop_flag) {
    pthread_mutex_unlock(&f->mu);
    int rc = pb_engine_flush(f->e, err);
    if (rc == 0 && fflush(stdout) != 0) rc = PB_EIO;
    if (rc != 0) return rc;
    pthread_mutex_lock(&f->mu);
    if (f->len == 0 && !f->eof) {
      struct timespec until = after_ms(100);
      pthread_cond_timedwait(&f->cv, &f->mu, &until);
    }
  }
  int rc = 0;
  if (stop_flag) {
    rc = 2;
  } else if (f->len > 0) {
    size_t n = in->cap - in->len < f->len ? in->cap - in->len : f->len;
    memcpy(in->buf + in->len, f->buf, n);
    memmove(f->buf, f->buf + n, f->len - n);
    f->len -= n;
    in->len += n;
    pthread_cond_broadcast(&f->cv);
  } else if (f->rerrno != 0) {
    errno = f->rerrno;
    rc = -1;
  } else {
    rc = 1;
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

/* Reads and answers until the end of input or a signal. Returns 0, or
 * the exit status of a failure (with its message printed). */
static int serve(pb_engine_t *e) {
  input_t in = {.cap = PB_ENGINE_MAX_LINE + 65536};
  in.buf = malloc(in.cap);
  feed_t f = {.e = e};
  pthread_mutex_init(&f.mu, NULL);
  pthread_cond_init(&f.cv, NULL);
  pb_err_t err;
  pb_err_clear(&err);
  pthread_t th;
  if (in.buf == NULL || pthread_create(&th, NULL, reader, &f) != 0) {
    fprintf(stderr, "probs analysis: out of memory\n");
    free(in.buf);
    return PB_EXIT_FAILED;
  }
  int rc = 0, status = 0;
  while (rc == 0) {
    int t = take_input(&f, &in, &err);
    if (t < -1) {
      rc = t;
      break;
    }
    if (t == -1) {
      fprintf(stderr, "probs analysis: cannot read stdin: %s\n",
              strerror(errno));
      status = PB_EXIT_FAILED;
      break;
    }
    if (t == 2) break;
    if (t == 1) {
      in.eof = 1;
      if (in.len > 0) in.buf[in.len++] = '\n'; /* the last line unended */
    }
    rc = take_lines(e, &in, &err);
    if (t == 1) break;
  }
  free(in.buf);
  if (rc == 0) rc = pb_engine_flush(e, &err);
  if (rc == 0 && fflush(stdout) != 0) rc = PB_EIO;
  pthread_mutex_lock(&f.mu);
  f.done = 1;
  pthread_cond_broadcast(&f.cv);
  pthread_mutex_unlock(&f.mu);
  pthread_join(th, NULL);
  free(f.buf);
  pthread_cond_destroy(&f.cv);
  pthread_mutex_destroy(&f.mu);
  if (rc != 0) {
    fprintf(stderr, "probs analysis: %s\n",
            rc == PB_EIO ? "cannot write stdout" : err.msg);
    return PB_EXIT_FAILED;
  }
  return status;
}

/* The model file from --model or --game into path. Returns -1 to go on
 * or the exit status. */
static int model_path(const char *model, const char *game, char *path,
                      size_t n) {
  if (model != NULL && game != NULL) {
    fprintf(stderr,
            "probs analysis: give --model or --game, not both (the "
            "model tells the game)\n");
    return PB_EXIT_USAGE;
  }
  if (model != NULL) {
    snprintf(path, n, "%s", model);
    return -1;
  }
  if (game == NULL) game = "connect4";
  if (pb_game_by_name(game) == NULL) {
    fprintf(stderr, "probs analysis: unknown game '%s' (known: %s)\n", game,
            pb_game_names());
    return PB_EXIT_USAGE;
  }
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_cli_shipped_model(game, path, n, &e) != 0) {
    fprintf(stderr, "probs analysis: %s\n", e.msg);
    return PB_EXIT_USAGE;
  }
  return -1;
}

int pb_cmd_analysis(int argc, char **argv) {
  const char *model = NULL, *game = NULL, *batch_s = NULL, *time_s = NULL;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("model", 'm', &model),
                                PB_OPTS_VALUE("game", 0, &game),
                                PB_OPTS_VALUE("batch", 0, &batch_s),
                                PB_OPTS_VALUE("time-limit", 0, &time_s)};
  const pb_opts_t cl = {.prog = "probs analysis",
                        .usage = analysis_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  long batch = PB_ENGINE_DEFAULT_BATCH;
  if (batch_s != NULL &&
      pb_cli_long(batch_s, 1, PB_ENGINE_MAX_BATCH, &batch) != 0) {
    fprintf(stderr, "probs analysis: bad --batch '%s' (expected 1..%d)\n",
            batch_s, PB_ENGINE_MAX_BATCH);
    return PB_EXIT_USAGE;
  }
  long time_ms = PB_ENGINE_DEFAULT_TIME_MS;
  if (time_s != NULL &&
      pb_cli_long(time_s, 0, PB_ENGINE_MAX_TIME_MS, &time_ms) != 0) {
    fprintf(stderr,
            "probs analysis: bad --time-limit '%s' (expected 0..%d ms)\n",
            time_s, PB_ENGINE_MAX_TIME_MS);
    return PB_EXIT_USAGE;
  }
  char path[4096];
  int st = model_path(model, game, path, sizeof path);
  if (st >= 0) return st;
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t mc;
  pb_model_t *m = pb_model_open(path, "cpu", &mc, &err);
  if (m == NULL) {
    fprintf(stderr, "probs analysis: %s: %s\n", path, err.msg);
    return PB_EXIT_USAGE; /* the checkpoint named cannot be used */
  }
  pb_engine_t *e = pb_engine_new(m, path, (int)batch, emit_line, stdout, &err);
  if (e == NULL) {
    fprintf(stderr, "probs analysis: %s\n", err.msg);
    pb_model_destroy(&m);
    return PB_EXIT_FAILED;
  }
  (void)pb_engine_set_time_bound(e, (int)time_ms); /* checked above */
  /* A reader that goes away is a write error, not a SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  pb_entry_signals(on_signal);
  fprintf(stderr,
          "probs analysis: %s (%s, version %llu, %s), batch %ld, time "
          "limit %ld ms; JSON queries on stdin, one a line\n",
          pb_model_game(m)->name, path, (unsigned long long)pb_model_version(m),
          mc.algorithm, batch, time_ms);
  int rc = serve(e);
  pb_engine_destroy(&e);
  pb_model_destroy(&m);
  if (rc == 0 && stop_flag) rc = PB_EXIT_SIGNAL_BASE + stop_flag;
  return rc;
}
