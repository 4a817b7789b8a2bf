/* gtp_engine.c - a Go Text Protocol engine for any game (gtp_engine.h). */
#include "gtp_engine.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gtp.h"
#include "gtp_clock.h"
#include "gtp_timed.h"

enum { ENGINE_MAX_ARGS = 8, BLACK = 0, WHITE = 1 };

struct pb_gtp_engine {
  const pb_game_t *g;
  pb_agent_t *agent;
  char *version;
  pb_state_t cur;
  pb_state_t *hist; /* the position before each play/genmove, for undo */
  int nhist, cap;
  pb_gtp_clock_t clock;  /* time_settings, time_left */
  pb_gtp_timed_t *timed; /* borrowed; NULL: agent plays every move */
};

/* A command: argv[0] is its name. Writes its answer (success) or message
 * (failure) into out; returns 0, 1 (quit) or -1 (failure). */
typedef int (*cmd_fn)(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                      size_t n);

typedef struct {
  const char *name;
  cmd_fn run;
} engine_cmd_t;

static int say(char *out, size_t n, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, n, fmt, ap);
  va_end(ap);
  return rc;
}

static int side_to_move(const pb_game_t *g, const pb_state_t *s) {
  return (g->ply(s) & 1) == 0 ? BLACK : WHITE;
}

static const char *color_name(int c) {
  return c == BLACK ? "black" : "white";
}

/* "b", "black", "w", "white" in either case -> BLACK/WHITE, else -1. */
static int parse_color(const char *s) {
  char low[8];
  size_t len = strlen(s);
  if (len >= sizeof low) return -1;
  for (size_t i = 0; i <= len; i++)
    low[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] - 'A' + 'a') : s[i];
  if (!strcmp(low, "b") || !strcmp(low, "black")) return BLACK;
  if (!strcmp(low, "w") || !strcmp(low, "white")) return WHITE;
  return -1;
}

/* The pass action of g when it is the only legal move in s, else -1. */
static int forced_pass(const pb_game_t *g, const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  char name[16];
  if (g->legal(s, acts) != 1) return -1;
  if (g->action_name(acts[0], name, sizeof name) <= 0) return -1;
  return strcmp(name, "pass") == 0 ? acts[0] : -1;
}

/* Brings *s to a position where `color` moves: as it is, or after the
 * pass the side to move is forced to (Othello). 0, or -1 when color
 * cannot move next. */
static int bring_to_move(const pb_game_t *g, pb_state_t *s, int color) {
  if (side_to_move(g, s) == color) return 0;
  int pass = forced_pass(g, s);
  if (pass < 0) return -1;
  int done = 0;
  g->step(s, pass, &done);
  return 0;
}

static int is_legal(const pb_game_t *g, const pb_state_t *s, int a) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  for (int i = 0; i < n; i++)
    if (acts[i] == a) return 1;
  return 0;
}

static int is_othello(const pb_game_t *g) {
  return g->id == PB_GAME_OTHELLO;
}

static void reset_board(pb_gtp_engine_t *e) {
  e->g->reset(&e->cur);
  e->nhist = 0;
  pb_gtp_clock_restart(&e->clock);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A time in seconds as GTP gives it: digits, a fraction allowed, no sign,
 * at most PB_GTP_CLOCK_MAX_S. 0 or -1. */
static int parse_seconds(const char *s, double *out) {
  int digits = 0, dots = 0;
  for (const char *p = s; *p; p++) {
    if (*p >= '0' && *p <= '9')
      digits++;
    else if (*p == '.' && dots++ == 0)
      continue;
    else
      return -1;
  }
  if (digits == 0 || digits > 12) return -1;
  *out = strtod(s, NULL);
  return *out <= PB_GTP_CLOCK_MAX_S ? 0 : -1;
}

/* A count of stones: digits, at most 1000000. 0 or -1. */
static int parse_stones(const char *s, int *out) {
  double v;
  if (strchr(s, '.') != NULL || parse_seconds(s, &v) != 0) return -1;
  if (v > 1e6) return -1;
  *out = (int)v;
  return 0;
}

/* Makes `next` the position, remembering the current one for undo. */
static int advance(pb_gtp_engine_t *e, const pb_state_t *next, char *out,
                   size_t n) {
  if (e->nhist == e->cap) {
    int cap = e->cap > 0 ? 2 * e->cap : 64;
    pb_state_t *h = realloc(e->hist, (size_t)cap * sizeof *h);
    if (h == NULL) return say(out, n, -1, "out of memory");
    e->hist = h;
    e->cap = cap;
  }
  e->hist[e->nhist++] = e->cur;
  e->cur = *next;
  return 0;
}

/* ---- the commands ------------------------------------------------------ */

static int cmd_protocol_version(pb_gtp_engine_t *e, int argc, char **argv,
                                char *out, size_t n) {
  (void)e, (void)argc, (void)argv;
  return say(out, n, 0, "2");
}

static int cmd_name(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                    size_t n) {
  (void)e, (void)argc, (void)argv;
  return say(out, n, 0, "probs");
}

static int cmd_version(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                       size_t n) {
  (void)argc, (void)argv;
  return say(out, n, 0, "%.200s", e->version);
}

static int cmd_known_command(pb_gtp_engine_t *e, int argc, char **argv,
                             char *out, size_t n);
static int cmd_list_commands(pb_gtp_engine_t *e, int argc, char **argv,
                             char *out, size_t n);

static int cmd_quit(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                    size_t n) {
  (void)e, (void)argc, (void)argv;
  return say(out, n, 1, "%s", "");
}

static int cmd_boardsize(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                         size_t n) {
  if (argc != 2) return say(out, n, -1, "syntax error");
  char *end;
  errno = 0;
  long size = strtol(argv[1], &end, 10);
  if (end == argv[1] || *end != '\0' || errno != 0)
    return say(out, n, -1, "syntax error");
  if (size != pb_gtp_board_size(e->g))
    return say(out, n, -1, "unacceptable size");
  reset_board(e);
  return say(out, n, 0, "%s", "");
}

static int cmd_clear_board(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                           size_t n) {
  (void)argc, (void)argv;
  reset_board(e);
  return say(out, n, 0, "%s", "");
}

static int cmd_komi(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                    size_t n) {
  (void)e;
  if (argc != 2) return say(out, n, -1, "syntax error");
  char *end;
  strtod(argv[1], &end);
  if (end == argv[1] || *end != '\0') return say(out, n, -1, "syntax error");
  return say(out, n, 0, "%s", "");
}

static int cmd_play(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                    size_t n) {
  const pb_game_t *g = e->g;
  if (argc != 3) return say(out, n, -1, "syntax error");
  int color = parse_color(argv[1]);
  int a = pb_gtp_parse_move(g, argv[2]);
  if (color < 0 || a < 0) return say(out, n, -1, "syntax error");
  pb_state_t s = e->cur;
  float r;
  if (g->terminal(&s, &r)) {
    /* Othello: passes after the end, as engines send them, change
     * nothing. */
    char name[16];
    g->action_name(a, name, sizeof name);
    if (is_othello(g) && strcmp(name, "pass") == 0)
      return say(out, n, 0, "%s", "");
    return say(out, n, -1, "illegal move");
  }
  if (bring_to_move(g, &s, color) < 0 || !is_legal(g, &s, a))
    return say(out, n, -1, "illegal move");
  int done = 0;
  g->step(&s, a, &done);
  if (advance(e, &s, out, n) < 0) return -1;
  return say(out, n, 0, "%s", "");
}

static int cmd_genmove(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                       size_t n) {
  const pb_game_t *g = e->g;
  if (argc != 2) return say(out, n, -1, "syntax error");
  int color = parse_color(argv[1]);
  if (color < 0) return say(out, n, -1, "syntax error");
  pb_state_t s = e->cur;
  float r;
  if (g->terminal(&s, &r)) {
    if (is_othello(g)) return say(out, n, 0, "pass");
    return say(out, n, -1, "game is over");
  }
  if (bring_to_move(g, &s, color) < 0)
    return say(out, n, -1, "not %s's turn: %s to move", color_name(color),
               color_name(side_to_move(g, &s)));
  pb_err_t err;
  pb_err_clear(&err);
  int64_t budget = pb_gtp_clock_budget_ms(&e->clock, g, color, g->ply(&s));
  double t0 = now_s();
  int a = e->timed != NULL ? pb_gtp_timed_act(e->timed, &s, budget, &err)
                           : pb_agent_act(e->agent, &s, &err);
  pb_gtp_clock_spend(&e->clock, color, now_s() - t0);
  if (a < 0)
    return say(out, n, -1, "agent %.100s failed: %.300s",
               pb_agent_name(e->agent), err.msg);
  char name[16];
  if (g->action_name(a, name, sizeof name) <= 0)
    return say(out, n, -1, "agent played action %d, which has no name", a);
  int done = 0;
  g->step(&s, a, &done);
  if (advance(e, &s, out, n) < 0) return -1;
  return say(out, n, 0, "%s", name);
}

static int cmd_undo(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                    size_t n) {
  (void)argc, (void)argv;
  if (e->nhist == 0) return say(out, n, -1, "cannot undo");
  e->cur = e->hist[--e->nhist];
  return say(out, n, 0, "%s", "");
}

/* The result for black once s is over: +1, 0 or -1, and the margin. */
static void black_result(const pb_game_t *g, const pb_state_t *s, int *res,
                         int *margin) {
  float r = 0;
  g->terminal(s, &r); /* for the side to move */
  int sign = side_to_move(g, s) == BLACK ? 1 : -1;
  *res = (r > 0 ? 1 : r < 0 ? -1 : 0) * sign;
  int m = g->material != NULL ? g->material(s) * sign : 0;
  /* The material tells the margin when it agrees with the result. */
  *margin = (*res > 0 && m > 0) || (*res < 0 && m < 0) ? abs(m) : 1;
}

static int cmd_final_score(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                           size_t n) {
  (void)argc, (void)argv;
  float r;
  if (!e->g->terminal(&e->cur, &r)) return say(out, n, -1, "cannot score");
  int res, margin;
  black_result(e->g, &e->cur, &res, &margin);
  if (res == 0) return say(out, n, 0, "0");
  return say(out, n, 0, "%c+%d", res > 0 ? 'B' : 'W', margin);
}

static int cmd_showboard(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                         size_t n) {
  (void)argc, (void)argv;
  const pb_game_t *g = e->g;
  char board[512], status[64];
  int len = g->render(&e->cur, board, sizeof board);
  while (len > 0 && board[len - 1] == '\n') board[--len] = '\0';
  float r;
  if (g->terminal(&e->cur, &r)) {
    int res, margin;
    black_result(g, &e->cur, &res, &margin);
    snprintf(status, sizeof status, "game over: %s",
             res == 0  ? "draw"
             : res > 0 ? "black wins"
                       : "white wins");
  } else {
    snprintf(status, sizeof status, "%s to move",
             color_name(side_to_move(g, &e->cur)));
  }
  /* The board starts on the line after "= ". */
  return say(out, n, 0, "\n%s\n%s", board, status);
}

static int cmd_time_settings(pb_gtp_engine_t *e, int argc, char **argv,
                             char *out, size_t n) {
  double main_s, byo_s;
  int stones;
  if (argc != 4)
    return say(out, n, -1,
               "syntax error: time_settings MAIN_TIME BYO_YOMI_TIME "
               "BYO_YOMI_STONES (seconds, seconds, stones)");
  if (parse_seconds(argv[1], &main_s) != 0 ||
      parse_seconds(argv[2], &byo_s) != 0)
    return say(out, n, -1,
               "syntax error: time_settings: '%.40s' is not a time in "
               "seconds (a number >= 0)",
               parse_seconds(argv[1], &main_s) != 0 ? argv[1] : argv[2]);
  if (parse_stones(argv[3], &stones) != 0)
    return say(out, n, -1,
               "syntax error: time_settings: '%.40s' is not a number of "
               "stones (an integer >= 0)",
               argv[3]);
  pb_gtp_clock_settings(&e->clock, main_s, byo_s, stones);
  return say(out, n, 0, "%s", "");
}

static int cmd_time_left(pb_gtp_engine_t *e, int argc, char **argv, char *out,
                         size_t n) {
  double left_s;
  int stones;
  if (argc != 4)
    return say(out, n, -1,
               "syntax error: time_left COLOR TIME STONES (b or w, "
               "seconds, stones; 0 stones: main time)");
  int color = parse_color(argv[1]);
  if (color < 0)
    return say(out, n, -1, "syntax error: time_left: '%.40s' is no color",
               argv[1]);
  if (parse_seconds(argv[2], &left_s) != 0)
    return say(out, n, -1,
               "syntax error: time_left: '%.40s' is not a time in seconds "
               "(a number >= 0)",
               argv[2]);
  if (parse_stones(argv[3], &stones) != 0)
    return say(out, n, -1,
               "syntax error: time_left: '%.40s' is not a number of "
               "stones (an integer >= 0)",
               argv[3]);
  pb_gtp_clock_left(&e->clock, color, left_s, stones);
  return say(out, n, 0, "%s", "");
}

static const engine_cmd_t commands[] = {
    {"protocol_version", cmd_protocol_version},
    {"name", cmd_name},
    {"version", cmd_version},
    {"known_command", cmd_known_command},
    {"list_commands", cmd_list_commands},
    {"quit", cmd_quit},
    {"boardsize", cmd_boardsize},
    {"clear_board", cmd_clear_board},
    {"komi", cmd_komi},
    {"play", cmd_play},
    {"genmove", cmd_genmove},
    {"undo", cmd_undo},
    {"final_score", cmd_final_score},
    {"showboard", cmd_showboard},
    {"time_settings", cmd_time_settings},
    {"time_left", cmd_time_left},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static int cmd_known_command(pb_gtp_engine_t *e, int argc, char **argv,
                             char *out, size_t n) {
  (void)e;
  if (argc != 2) return say(out, n, -1, "syntax error");
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (!strcmp(commands[i].name, argv[1])) return say(out, n, 0, "true");
  return say(out, n, 0, "false");
}

static int cmd_list_commands(pb_gtp_engine_t *e, int argc, char **argv,
                             char *out, size_t n) {
  (void)e, (void)argc, (void)argv;
  size_t k = 0;
  out[0] = '\0';
  for (size_t i = 0; i < N_COMMANDS && k < n; i++) {
    int w = snprintf(out + k, n - k, "%s%s", i ? "\n" : "", commands[i].name);
    if (w < 0) break;
    k += (size_t)w;
  }
  return 0;
}

/* ---- lines in, responses out ------------------------------------------ */

pb_gtp_engine_t *pb_gtp_engine_new(const pb_game_t *g, pb_agent_t *agent,
                                   const char *version, pb_err_t *err) {
  if (g == NULL || agent == NULL) {
    pb_err_set(err, PB_EINVAL, "gtp engine: NULL game or agent");
    return NULL;
  }
  if (pb_agent_game(agent) != g) {
    pb_err_set(err, PB_EINVAL, "gtp engine: agent %s plays %s, not %s",
               pb_agent_name(agent), pb_agent_game(agent)->name, g->name);
    return NULL;
  }
  pb_gtp_engine_t *e = calloc(1, sizeof *e);
  if (e != NULL)
    e->version = strdup(version != NULL ? version : pb_agent_name(agent));
  if (e == NULL || e->version == NULL) {
    free(e);
    pb_err_set(err, PB_ENOMEM, "gtp engine: out of memory");
    return NULL;
  }
  e->g = g;
  e->agent = agent;
  pb_gtp_clock_init(&e->clock);
  reset_board(e);
  return e;
}

int pb_gtp_engine_set_timed(pb_gtp_engine_t *e, pb_gtp_timed_t *t,
                            pb_err_t *err) {
  if (e == NULL) return pb_err_set(err, PB_EINVAL, "gtp engine: NULL engine");
  if (t != NULL && pb_agent_game(pb_gtp_timed_agent(t)) != e->g)
    return pb_err_set(err, PB_EINVAL, "gtp engine: timed agent %s plays %s",
                      pb_agent_name(pb_gtp_timed_agent(t)),
                      pb_agent_game(pb_gtp_timed_agent(t))->name);
  e->timed = t;
  return 0;
}

int64_t pb_gtp_engine_budget_ms(const pb_gtp_engine_t *e, int color) {
  if (e == NULL) return -1;
  return pb_gtp_clock_budget_ms(&e->clock, e->g, color, e->g->ply(&e->cur));
}

void pb_gtp_engine_destroy(pb_gtp_engine_t **ep) {
  if (ep == NULL || *ep == NULL) return;
  free((*ep)->hist);
  free((*ep)->version);
  free(*ep);
  *ep = NULL;
}

const pb_state_t *pb_gtp_engine_position(const pb_gtp_engine_t *e) {
  return e != NULL ? &e->cur : NULL;
}

/* The response "=[id] text\n\n" or "?[id] text\n\n" into reply; a
 * response never holds an empty line before its end. */
static void respond(char *reply, size_t n, int ok, long id, const char *text) {
  char head[32];
  if (id >= 0)
    snprintf(head, sizeof head, "%c%ld", ok ? '=' : '?', id);
  else
    snprintf(head, sizeof head, "%c", ok ? '=' : '?');
  size_t k = (size_t)snprintf(reply, n, "%s%s%s", head, *text ? " " : "", text);
  if (k >= n) k = n - 1;
  /* Make room for the final "\n\n", dropping empty lines inside. */
  size_t w = 0;
  for (size_t i = 0; i < k; i++)
    if (!(reply[i] == '\n' && w > 0 && reply[w - 1] == '\n'))
      reply[w++] = reply[i];
  while (w > 0 && reply[w - 1] == '\n') w--;
  if (w + 3 > n) w = n >= 3 ? n - 3 : 0;
  if (n >= 3) memcpy(reply + w, "\n\n", 3);
}

int pb_gtp_engine_exec(pb_gtp_engine_t *e, const char *line, char *reply,
                       size_t n) {
  if (reply == NULL || n < 4) return 0;
  reply[0] = '\0';
  if (e == NULL || line == NULL) return 0;
  /* GTP's preprocessing: control characters but tab dropped, tabs made
   * spaces, a comment cut off. */
  char buf[PB_GTP_ENGINE_LINE_MAX];
  size_t k = 0;
  for (size_t i = 0; line[i] != '\0' && line[i] != '#' && line[i] != '\n' &&
                     k + 1 < sizeof buf;
       i++) {
    unsigned char c = (unsigned char)line[i];
    if (c == '\t')
      buf[k++] = ' ';
    else if (c >= 32 && c != 127)
      buf[k++] = (char)c;
  }
  buf[k] = '\0';
  char *argv[ENGINE_MAX_ARGS];
  int argc = 0, too_many = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, " ", &save); t != NULL;
       t = strtok_r(NULL, " ", &save)) {
    if (argc < ENGINE_MAX_ARGS)
      argv[argc++] = t;
    else
      too_many = 1;
  }
  if (argc == 0) return 0;
  long id = -1;
  if (argv[0][0] >= '0' && argv[0][0] <= '9') {
    char *end;
    errno = 0;
    id = strtol(argv[0], &end, 10);
    if (*end != '\0' || errno != 0) {
      respond(reply, n, 0, -1, "syntax error");
      return 0;
    }
    if (argc == 1) {
      respond(reply, n, 0, id, "no command");
      return 0;
    }
    for (int i = 1; i < argc; i++) argv[i - 1] = argv[i];
    argc--;
  }
  if (too_many) {
    respond(reply, n, 0, id, "syntax error");
    return 0;
  }
  char text[PB_GTP_ENGINE_REPLY_MAX];
  text[0] = '\0';
  for (size_t i = 0; i < N_COMMANDS; i++) {
    if (strcmp(commands[i].name, argv[0]) != 0) continue;
    int rc = commands[i].run(e, argc, argv, text, sizeof text);
    respond(reply, n, rc >= 0, id, text);
    return rc == 1;
  }
  respond(reply, n, 0, id, "unknown command");
  return 0;
}

int pb_gtp_engine_run(pb_gtp_engine_t *e, FILE *in, FILE *out,
                      const volatile sig_atomic_t *stop, pb_err_t *err) {
  if (e == NULL || in == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "gtp engine: NULL engine or stream");
  char line[PB_GTP_ENGINE_LINE_MAX + 1], reply[PB_GTP_ENGINE_REPLY_MAX];
  for (;;) {
    if (stop != NULL && *stop) return 0;
    errno = 0;
    if (fgets(line, sizeof line, in) == NULL) {
      if (stop != NULL && *stop) return 0;
      if (ferror(in)) {
        if (errno == EINTR) {
          clearerr(in);
          continue;
        }
        return pb_err_set(err, PB_EIO, "gtp engine: cannot read: %s",
                          strerror(errno));
      }
      return 0; /* the end of input */
    }
    size_t len = strlen(line);
    int quit;
    if (len == sizeof line - 1 && line[len - 1] != '\n') {
      int c;
      while ((c = fgetc(in)) != EOF && c != '\n') {
      }
      /* The command ends where a comment starts: one that does in this
       * part is run (a comment line gets no response); else too long. */
      if (strchr(line, '#') != NULL) {
        quit = pb_gtp_engine_exec(e, line, reply, sizeof reply);
      } else {
        snprintf(reply, sizeof reply, "? command too long\n\n");
        quit = 0;
      }
    } else {
      quit = pb_gtp_engine_exec(e, line, reply, sizeof reply);
    }
    if (reply[0] != '\0' && (fputs(reply, out) == EOF || fflush(out) != 0))
      return pb_err_set(err, PB_EIO, "gtp engine: cannot write: %s",
                        strerror(errno));
    if (quit) return 0;
  }
}
