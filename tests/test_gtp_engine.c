/* test_gtp_engine.c - the GTP engine (common/play/gtp_engine.h) in each game: a
 * scripted exchange that checks every command's response, the Othello
 * pass, finished games and their scores, the time control (time_settings,
 * time_left, each genmove's budget, a timed agent), the line protocol
 * (ids, comments that get no response, long lines, quit, end of input, a
 * stop flag, a controller that is gone) and an agent that fails. The
 * agents need no checkpoint; `probs gtp` with networks, against gtp-rhino
 * and the gtp: agent, is tests/test_cli_gtp.sh; the agents sized to a
 * budget are tests/test_gtp_timed.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "game.h"
#include "gtp.h"
#include "gtp_clock.h"
#include "gtp_engine.h"
#include "gtp_timed.h"
#include "rng.h"

static const pb_game_t *const GAMES[] = {&pb_game_connect4,
                                          &pb_game_tictactoe,
                                          &pb_game_othello, &pb_game_toguz};
#define N_GAMES (sizeof GAMES / sizeof GAMES[0])

/* One engine and its agent. */
typedef struct {
  pb_agent_t *agent;
  pb_gtp_engine_t *e;
  char reply[PB_GTP_ENGINE_REPLY_MAX];
} eng_t;

static void eng_open(eng_t *x, const pb_game_t *g, const char *spec) {
  pb_err_t err;
  x->agent = pb_agent_new(g, spec, 1, &err);
  if (x->agent == NULL) fail_msg("agent %s: %s", spec, err.msg);
  x->e = pb_gtp_engine_new(g, x->agent, NULL, &err);
  if (x->e == NULL) fail_msg("engine: %s", err.msg);
}

static void eng_close(eng_t *x) {
  pb_gtp_engine_destroy(&x->e);
  assert_null(x->e);
  pb_agent_destroy(&x->agent);
}

/* Sends line; returns the whole response. */
static const char *say(eng_t *x, const char *line) {
  pb_gtp_engine_exec(x->e, line, x->reply, sizeof x->reply);
  return x->reply;
}

/* The response must be success with `text` ("" for none). */
static void ok(eng_t *x, const char *line, const char *text) {
  char want[PB_GTP_ENGINE_REPLY_MAX];
  snprintf(want, sizeof want, "=%s%s\n\n", *text ? " " : "", text);
  const char *got = say(x, line);
  if (strcmp(got, want) != 0)
    fail_msg("\"%s\": got \"%s\", want \"%s\"", line, got, want);
}

/* The response must be failure with `msg`. */
static void no(eng_t *x, const char *line, const char *msg) {
  char want[PB_GTP_ENGINE_REPLY_MAX];
  snprintf(want, sizeof want, "? %s\n\n", msg);
  const char *got = say(x, line);
  if (strcmp(got, want) != 0)
    fail_msg("\"%s\": got \"%s\", want \"%s\"", line, got, want);
}

/* A successful response's text (after "= ", without the final "\n\n"). */
static const char *text_of(eng_t *x, const char *line) {
  static char t[PB_GTP_ENGINE_REPLY_MAX];
  const char *got = say(x, line);
  if (got[0] != '=') fail_msg("\"%s\": failed: %s", line, got);
  size_t len = strlen(got);
  assert_true(len >= 3 && !strcmp(got + len - 2, "\n\n"));
  size_t start = got[1] == ' ' ? 2 : 1;
  snprintf(t, sizeof t, "%.*s", (int)(len - 2 - start), got + start);
  return t;
}

static pb_state_t position(eng_t *x) {
  return *pb_gtp_engine_position(x->e);
}

static int same(const pb_state_t *a, const pb_state_t *b) {
  return memcmp(a, b, sizeof *a) == 0;
}

static const char *mover(const pb_game_t *g, const pb_state_t *s) {
  return (g->ply(s) & 1) == 0 ? "b" : "w";
}

/* The administrative commands, the same in every game. */
static void test_common_commands(void **state) {
  (void)state;
  static const char *const all[] = {
      "protocol_version", "name", "version", "known_command",
      "list_commands", "quit", "boardsize", "clear_board", "komi", "play",
      "genmove", "undo", "final_score", "showboard", "time_settings",
      "time_left"};
  for (size_t gi = 0; gi < N_GAMES; gi++) {
    const pb_game_t *g = GAMES[gi];
    eng_t x;
    eng_open(&x, g, "random");
    ok(&x, "protocol_version", "2");
    ok(&x, "name", "probs");
    ok(&x, "version", "random");
    /* list_commands: one per line, each known. */
    char list[PB_GTP_ENGINE_REPLY_MAX];
    snprintf(list, sizeof list, "%s", text_of(&x, "list_commands"));
    size_t count = 0;
    for (char *save = NULL, *c = strtok_r(list, "\n", &save); c != NULL;
         c = strtok_r(NULL, "\n", &save), count++) {
      assert_string_equal(c, all[count]);
      char line[64];
      snprintf(line, sizeof line, "known_command %s", c);
      ok(&x, line, "true");
    }
    assert_int_equal(count, sizeof all / sizeof all[0]);
    ok(&x, "known_command set_free_handicap", "false");
    no(&x, "known_command", "syntax error");
    /* boardsize: the game's own size only; it clears the board. */
    char line[64], size[16];
    snprintf(size, sizeof size, "%d", pb_gtp_board_size(g));
    text_of(&x, "genmove b");
    pb_state_t start;
    g->reset(&start);
    assert_false(same(&start, pb_gtp_engine_position(x.e)));
    snprintf(line, sizeof line, "boardsize %s", size);
    ok(&x, line, "");
    assert_true(same(&start, pb_gtp_engine_position(x.e)));
    no(&x, "undo", "cannot undo");
    no(&x, "boardsize 19", "unacceptable size");
    snprintf(line, sizeof line, "boardsize %d", pb_gtp_board_size(g) + 1);
    no(&x, line, "unacceptable size");
    no(&x, "boardsize eight", "syntax error");
    no(&x, "boardsize", "syntax error");
    ok(&x, "komi 6.5", "");
    ok(&x, "komi 0", "");
    no(&x, "komi much", "syntax error");
    /* clear_board */
    text_of(&x, "genmove black");
    ok(&x, "clear_board", "");
    assert_true(same(&start, pb_gtp_engine_position(x.e)));
    no(&x, "final_score", "cannot score");
    /* The protocol: ids, unknown commands, comments, blanks, control
     * characters, case. */
    assert_string_equal(say(&x, "17 protocol_version"), "=17 2\n\n");
    assert_string_equal(say(&x, "3 frobnicate"), "?3 unknown command\n\n");
    assert_string_equal(say(&x, "4 undo"), "?4 cannot undo\n\n");
    assert_string_equal(say(&x, "5 quit"), "=5\n\n");
    no(&x, "frobnicate now", "unknown command");
    no(&x, "PROTOCOL_VERSION", "unknown command");
    assert_string_equal(say(&x, ""), "");
    assert_string_equal(say(&x, "   \t "), "");
    assert_string_equal(say(&x, "# a comment"), "");
    assert_string_equal(say(&x, "#"), "");
    assert_string_equal(say(&x, "  # genmove b"), "");
    assert_string_equal(say(&x, "#genmove b\n"), "");
    assert_string_equal(say(&x, "\r\n"), "");
    ok(&x, "\tname  # and a comment", "probs");
    ok(&x, "na\x01me\r", "probs");
    no(&x, "-1 name", "unknown command");
    no(&x, "12x name", "syntax error");
    no(&x, "99999999999999999999999 name", "syntax error");
    assert_string_equal(say(&x, "8"), "?8 no command\n\n");
    no(&x, "play b 1 2 3 4 5 6 7 8 9", "syntax error");
    /* quit answers and says so. */
    assert_int_equal(pb_gtp_engine_exec(x.e, "quit", x.reply, sizeof x.reply),
                     1);
    assert_string_equal(x.reply, "=\n\n");
    assert_int_equal(pb_gtp_engine_exec(x.e, "name", x.reply, sizeof x.reply),
                     0);
    eng_close(&x);
  }
}

/* Per game: the notation, play and its refusals, genmove, undo,
 * showboard. moves[] are legal from the start, then a move in the right
 * notation that is illegal after them, and names that are not moves. */
typedef struct {
  const pb_game_t *g;
  const char *moves[4];
  const char *illegal;    /* after moves */
  const char *not_moves[3];
} notation_case_t;

static void test_play_genmove_undo(void **state) {
  (void)state;
  static const notation_case_t cases[] = {
      {&pb_game_connect4, {"4", "4", "3", "4"}, "8", {"0", "d", "pass"}},
      {&pb_game_tictactoe, {"5", "1", "9", "3"}, "5", {"0", "10", "a1"}},
      {&pb_game_othello, {"D3", "c3", "c4", "e3"}, "a1", {"i1", "a9", "d"}},
      {&pb_game_toguz, {"1", "9", "5", "2"}, "10", {"0", "a", "pass"}},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const notation_case_t *c = &cases[ci];
    const pb_game_t *g = c->g;
    eng_t x;
    eng_open(&x, g, "alphabeta:2");
    pb_state_t hist[8];
    g->reset(&hist[0]);
    char line[64];
    for (int i = 0; i < 4; i++) {
      const char *other = i % 2 == 0 ? "w" : "b";
      /* The wrong color is refused, and changes nothing. */
      snprintf(line, sizeof line, "play %s %s", other, c->moves[i]);
      no(&x, line, "illegal move");
      snprintf(line, sizeof line, "play %s %s", i % 2 == 0 ? "black" : "WHITE",
               c->moves[i]);
      ok(&x, line, "");
      int a = pb_gtp_parse_move(g, c->moves[i]), done = 0;
      assert_true(a >= 0);
      hist[i + 1] = hist[i];
      g->step(&hist[i + 1], a, &done);
      assert_true(same(&hist[i + 1], pb_gtp_engine_position(x.e)));
    }
    /* Refusals: an illegal move, names that are not moves, bad colors,
     * missing arguments. */
    snprintf(line, sizeof line, "play b %s", c->illegal);
    if (pb_gtp_parse_move(g, c->illegal) >= 0) no(&x, line, "illegal move");
    else no(&x, line, "syntax error");
    for (int k = 0; k < 3; k++) {
      snprintf(line, sizeof line, "play b %s", c->not_moves[k]);
      assert_true(pb_gtp_parse_move(g, c->not_moves[k]) < 0);
      no(&x, line, "syntax error");
    }
    no(&x, "play red 1", "syntax error");
    no(&x, "play b", "syntax error");
    no(&x, "play", "syntax error");
    no(&x, "genmove", "syntax error");
    no(&x, "genmove green", "syntax error");
    no(&x, "genmove w", "not white's turn: black to move");
    assert_true(same(&hist[4], pb_gtp_engine_position(x.e)));
    /* showboard: the board as render draws it, then who moves. */
    char board[512], want[700];
    g->render(&hist[4], board, sizeof board);
    snprintf(want, sizeof want, "\n%sblack to move", board);
    assert_string_equal(text_of(&x, "showboard"), want);
    assert_memory_equal(say(&x, "showboard"), "= \n", 3);
    /* genmove: a legal move, played, in the notation. */
    char mv[16];
    snprintf(mv, sizeof mv, "%s", text_of(&x, "genmove b"));
    int a = pb_gtp_parse_move(g, mv);
    assert_true(a >= 0);
    char name[16];
    g->action_name(a, name, sizeof name);
    assert_string_equal(mv, name);
    pb_state_t after = hist[4];
    assert_int_equal(pb_game_step_checked(g, &after, a, NULL, NULL, NULL), 0);
    assert_true(same(&after, pb_gtp_engine_position(x.e)));
    text_of(&x, "genmove white");
    /* undo: back through every move, then nothing more. */
    ok(&x, "undo", ""); /* white's genmove */
    ok(&x, "undo", ""); /* black's genmove */
    for (int i = 4; i > 0; i--) {
      assert_true(same(&hist[i], pb_gtp_engine_position(x.e)));
      ok(&x, "undo", "");
    }
    assert_true(same(&hist[0], pb_gtp_engine_position(x.e)));
    no(&x, "undo", "cannot undo");
    no(&x, "final_score", "cannot score");
    eng_close(&x);
  }
}

/* Agents that play the only good move. */
static void test_genmove_is_the_agents(void **state) {
  (void)state;
  eng_t x;
  eng_open(&x, &pb_game_tictactoe, "alphabeta:9");
  ok(&x, "play b 1", "");
  ok(&x, "play w 4", "");
  ok(&x, "play b 2", "");
  ok(&x, "genmove w", "3"); /* the only move that does not lose */
  eng_close(&x);
  eng_open(&x, &pb_game_connect4, "lookahead:1");
  static const char *const script[] = {"b 1", "w 2", "b 1", "w 2", "b 1",
                                       "w 2"};
  for (int i = 0; i < 6; i++) {
    char line[32];
    snprintf(line, sizeof line, "play %s", script[i]);
    ok(&x, line, "");
  }
  ok(&x, "genmove b", "1"); /* four in column 1 */
  eng_close(&x);
}

/* Plays the engine's agent against itself to the end; returns the
 * number of plies. */
static int self_play(eng_t *x, const pb_game_t *g) {
  int plies = 0;
  float r;
  for (; plies < g->max_turns; plies++) {
    pb_state_t s = position(x);
    if (g->terminal(&s, &r)) break;
    char line[32];
    snprintf(line, sizeof line, "genmove %s", mover(g, &s));
    text_of(x, line);
  }
  return plies;
}

/* Finished games: final_score, showboard, genmove and play after the end. */
static void test_finished_games(void **state) {
  (void)state;
  eng_t x;
  /* Connect Four: black wins in column 1. */
  eng_open(&x, &pb_game_connect4, "random");
  static const char *const c4[] = {"b 1", "w 2", "b 1", "w 2", "b 1", "w 2",
                                   "b 1"};
  for (int i = 0; i < 7; i++) {
    char line[32];
    snprintf(line, sizeof line, "play %s", c4[i]);
    ok(&x, line, "");
  }
  ok(&x, "final_score", "B+1");
  const char *b = text_of(&x, "showboard");
  assert_non_null(strstr(b, "\ngame over: black wins"));
  no(&x, "genmove w", "game is over");
  no(&x, "play w 3", "illegal move");
  no(&x, "play w pass", "syntax error");
  ok(&x, "undo", "");
  no(&x, "final_score", "cannot score");
  eng_close(&x);
  eng_open(&x, &pb_game_connect4, "random");
  static const char *const c4w[] = {"b 1", "w 2", "b 1", "w 2", "b 3", "w 2",
                                    "b 4", "w 2"};
  for (int i = 0; i < 8; i++) {
    char line[32];
    snprintf(line, sizeof line, "play %s", c4w[i]);
    ok(&x, line, "");
  }
  ok(&x, "final_score", "W+1");
  assert_non_null(strstr(text_of(&x, "showboard"), "game over: white wins"));
  eng_close(&x);
  /* Tic-Tac-Toe: a draw. */
  eng_open(&x, &pb_game_tictactoe, "random");
  static const char *const t3[] = {"b 1", "w 2", "b 3", "w 5", "b 4",
                                   "w 6", "b 8", "w 7", "b 9"};
  for (int i = 0; i < 9; i++) {
    char line[32];
    snprintf(line, sizeof line, "play %s", t3[i]);
    ok(&x, line, "");
  }
  ok(&x, "final_score", "0");
  assert_non_null(strstr(text_of(&x, "showboard"), "game over: draw"));
  no(&x, "genmove b", "game is over");
  eng_close(&x);
  /* Othello and Toguz Kumalak to the end: the margin is the material. */
  for (int gi = 0; gi < 2; gi++) {
    const pb_game_t *g = gi == 0 ? &pb_game_othello : &pb_game_toguz;
    eng_open(&x, g, "greedy");
    int plies = self_play(&x, g);
    assert_true(plies > 10 && plies < g->max_turns);
    pb_state_t s = position(&x);
    float r;
    assert_true(g->terminal(&s, &r));
    int black = (g->ply(&s) & 1) == 0 ? 1 : -1;
    int res = (r > 0 ? 1 : r < 0 ? -1 : 0) * black;
    int margin = g->material(&s) * black;
    char want[32];
    if (res == 0) snprintf(want, sizeof want, "0");
    else snprintf(want, sizeof want, "%c+%d", res > 0 ? 'B' : 'W', abs(margin));
    assert_true(res == 0 || res * margin > 0);
    ok(&x, "final_score", want);
    if (g->id == PB_GAME_OTHELLO) {
      /* After the end: genmove passes, a pass changes nothing. */
      ok(&x, "genmove b", "pass");
      ok(&x, "genmove w", "pass");
      ok(&x, "play b pass", "");
      no(&x, "play w a1", "illegal move");
      assert_true(same(&s, pb_gtp_engine_position(x.e)));
    } else {
      no(&x, "genmove b", "game is over");
    }
    eng_close(&x);
  }
}

/* An Othello position (from random play, seed 3) where the side to move
 * must pass and the game goes on; *names gets its moves without the
 * passes, as clients send them (space-separated). */
static pb_state_t find_forced_pass(char *names, size_t n) {
  const pb_game_t *g = &pb_game_othello;
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  for (int tries = 0; tries < 100000; tries++) {
    pb_state_t s;
    g->reset(&s);
    size_t k = 0;
    names[0] = '\0';
    for (;;) {
      uint8_t acts[PB_MAX_ACTIONS];
      int na = g->legal(&s, acts), done = 0;
      if (na == 0) break;
      char name[16];
      g->action_name(acts[0], name, sizeof name);
      if (na == 1 && !strcmp(name, "pass")) return s;
      int a = acts[pb_rng_below(&rng, (uint32_t)na)];
      g->action_name(a, name, sizeof name);
      k += (size_t)snprintf(names + k, n - k, "%s%s", k ? " " : "", name);
      assert_true(k < n);
      g->step(&s, a, &done);
    }
  }
  fail_msg("no forced pass found");
  return (pb_state_t){{0}};
}

/* Replays the moves of names with the right colors: passes are implied. */
static void replay(eng_t *x, const pb_game_t *g, const char *names) {
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", names);
  for (char *save = NULL, *m = strtok_r(copy, " ", &save); m != NULL;
       m = strtok_r(NULL, " ", &save)) {
    pb_state_t s = position(x);
    int a = pb_gtp_parse_move(g, m), color = g->ply(&s) & 1;
    /* The mover of m: the side to move, or the other after a pass. */
    if (!(pb_game_step_checked(g, &s, a, NULL, NULL, NULL) == 0))
      color ^= 1;
    char line[32];
    snprintf(line, sizeof line, "play %s %s", color ? "w" : "b", m);
    ok(x, line, "");
  }
}

static void test_othello_pass(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_othello;
  char names[1024];
  pb_state_t p = find_forced_pass(names, sizeof names);
  const char *must = (g->ply(&p) & 1) == 0 ? "b" : "w";
  const char *other = must[0] == 'b' ? "w" : "b";
  eng_t x;
  eng_open(&x, g, "greedy");
  replay(&x, g, names);
  pb_state_t at = position(&x);
  assert_true(same(&at, &p));
  char line[32], want[64];
  /* The side that must pass: genmove passes, "play pass" passes. */
  snprintf(line, sizeof line, "genmove %s", must);
  ok(&x, line, "pass");
  assert_int_equal(g->ply(pb_gtp_engine_position(x.e)), g->ply(&p) + 1);
  ok(&x, "undo", "");
  assert_true(same(&p, pb_gtp_engine_position(x.e)));
  snprintf(line, sizeof line, "play %s pass", must);
  ok(&x, line, "");
  ok(&x, "undo", "");
  /* The other side: its move implies the pass; one undo takes both. */
  snprintf(line, sizeof line, "genmove %s", other);
  const char *mv = text_of(&x, line);
  assert_true(pb_gtp_parse_move(g, mv) >= 0 && strcmp(mv, "pass") != 0);
  assert_int_equal(g->ply(pb_gtp_engine_position(x.e)), g->ply(&p) + 2);
  ok(&x, "undo", "");
  assert_true(same(&p, pb_gtp_engine_position(x.e)));
  snprintf(line, sizeof line, "play %s %s", other, "pass");
  no(&x, line, "illegal move"); /* after the implied pass it has moves */
  snprintf(line, sizeof line, "play %s %s", must, "a1");
  no(&x, line, "illegal move");
  assert_true(same(&p, pb_gtp_engine_position(x.e)));
  /* The side with moves may not pass; nor may anyone at the start. */
  ok(&x, "clear_board", "");
  no(&x, "play b pass", "illegal move");
  no(&x, "play w pass", "illegal move");
  no(&x, "play w d3", "illegal move");
  snprintf(want, sizeof want, "not white's turn: black to move");
  no(&x, "genmove w", want);
  eng_close(&x);
}

/* A C4 agent that always plays column 1, whether legal or not. */
static int col1_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                    int n, pb_err_t *err) {
  (void)impl, (void)s, (void)legal, (void)n, (void)err;
  return 0;
}

static void test_agent_errors_and_new(void **state) {
  (void)state;
  static const pb_agent_vtable_t vt = {col1_act, NULL, free, NULL, NULL};
  pb_err_t err;
  pb_agent_t *a = pb_agent_wrap(&pb_game_connect4, &vt, malloc(1), "col1",
                                &err);
  assert_non_null(a);
  pb_gtp_engine_t *e = pb_gtp_engine_new(&pb_game_connect4, a, "v9", &err);
  assert_non_null(e);
  eng_t x = {a, e, {0}};
  ok(&x, "version", "v9");
  for (int i = 0; i < 6; i++) ok(&x, i % 2 ? "genmove w" : "genmove b", "1");
  /* Column 1 is full: the agent's move is illegal, the engine says so and
   * goes on. */
  pb_state_t before = position(&x);
  const char *r = say(&x, "genmove b");
  assert_memory_equal(r, "? agent col1 failed: ", 21);
  assert_non_null(strstr(r, "\n\n"));
  assert_true(same(&before, pb_gtp_engine_position(x.e)));
  ok(&x, "play b 2", "");
  pb_gtp_engine_destroy(&e);
  pb_gtp_engine_destroy(&e); /* NULL is fine */
  pb_gtp_engine_destroy(NULL);
  /* new: NULLs, an agent of another game. */
  assert_null(pb_gtp_engine_new(NULL, a, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_gtp_engine_new(&pb_game_connect4, NULL, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_null(pb_gtp_engine_new(&pb_game_othello, a, NULL, &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "connect4"));
  /* exec with odd arguments */
  char small[8];
  assert_int_equal(pb_gtp_engine_exec(NULL, "name", small, sizeof small), 0);
  assert_string_equal(small, "");
  pb_agent_destroy(&a);
}

/* The budget of a share of `s` seconds (gtp_clock.h). */
static int64_t of_share(double s) {
  double ms = s * 1000.0 * PB_GTP_CLOCK_USE / 100.0 - PB_GTP_CLOCK_RESERVE_MS;
  return ms >= 1 ? (int64_t)ms : 1;
}

/* time_settings and time_left: their refusals, and the budget each
 * genmove gets from them. */
static void test_time_control(void **state) {
  (void)state;
  eng_t x;
  eng_open(&x, &pb_game_othello, "greedy");
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 0), -1); /* no limit */
  assert_int_equal(pb_gtp_engine_budget_ms(NULL, 0), -1);
  ok(&x, "time_settings 300 0 0", "");
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 0), of_share(10.0));
  ok(&x, "time_left w 60 0", "");
  ok(&x, "time_left WHITE 60.5 0", "");
  ok(&x, "play b f5", "");
  /* white at ply 1: 30 moves left */
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 1), of_share(60.5 / 30));
  ok(&x, "time_left w 12 4", ""); /* byo-yomi: 12 s for 4 stones */
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 1), of_share(3.0));
  /* genmove charges its own time: the period has 3 stones left. */
  text_of(&x, "genmove w");
  assert_true(pb_gtp_engine_budget_ms(x.e, 1) >= of_share(11.0 / 3) &&
              pb_gtp_engine_budget_ms(x.e, 1) <= of_share(4.0));
  /* A new game starts the clocks again. */
  ok(&x, "clear_board", "");
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 1), of_share(10.0));
  ok(&x, "time_settings 0 10 0", ""); /* GTP's no time limit */
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 0), -1);
  ok(&x, "time_settings 0 30 10", ""); /* byo-yomi only */
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 0), of_share(3.0));
  /* Refusals: one line each, naming the problem; nothing changes. */
  static const char *const bad[][2] = {
      {"time_settings", "syntax error: time_settings MAIN_TIME "
                        "BYO_YOMI_TIME BYO_YOMI_STONES (seconds, seconds, "
                        "stones)"},
      {"time_settings 1 2", NULL},
      {"time_settings 1 2 3 4", NULL},
      {"time_settings -5 0 0", "syntax error: time_settings: '-5' is not a "
                               "time in seconds (a number >= 0)"},
      {"time_settings 5 x 0", "syntax error: time_settings: 'x' is not a "
                              "time in seconds (a number >= 0)"},
      {"time_settings inf 0 0", NULL},
      {"time_settings nan 0 0", NULL},
      {"time_settings 0x10 0 0", NULL},
      {"time_settings 1e3 0 0", NULL},
      {"time_settings 1..5 0 0", NULL},
      {"time_settings . 0 0", NULL},
      {"time_settings 99999999999999 0 0", NULL},
      {"time_settings 5 5 2.5", "syntax error: time_settings: '2.5' is not "
                                "a number of stones (an integer >= 0)"},
      {"time_settings 5 5 -1", NULL},
      {"time_left", "syntax error: time_left COLOR TIME STONES (b or w, "
                    "seconds, stones; 0 stones: main time)"},
      {"time_left b 5", NULL},
      {"time_left red 5 0", "syntax error: time_left: 'red' is no color"},
      {"time_left b -5 0", "syntax error: time_left: '-5' is not a time in "
                           "seconds (a number >= 0)"},
      {"time_left b 5 x", "syntax error: time_left: 'x' is not a number of "
                          "stones (an integer >= 0)"},
      {"time_left w 5 9999999", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *r = say(&x, bad[i][0]);
    if (r[0] != '?' || strchr(r, '\n') != r + strlen(r) - 2)
      fail_msg("\"%s\": got \"%s\"", bad[i][0], r);
    if (bad[i][1] != NULL) no(&x, bad[i][0], bad[i][1]);
  }
  assert_int_equal(pb_gtp_engine_budget_ms(x.e, 0), of_share(3.0));
  assert_string_equal(say(&x, "7 time_left b 1 1"), "=7\n\n");
  eng_close(&x);
}

/* A timed agent plays genmove in place of the agent. */
static void test_timed_agent(void **state) {
  (void)state;
  pb_err_t err;
  eng_t x;
  eng_open(&x, &pb_game_connect4, "random");
  pb_gtp_timed_t *t = pb_gtp_timed_new(&pb_game_connect4, "lookahead:2", 1,
                                       &err);
  assert_non_null(t);
  assert_false(pb_gtp_timed_scales(t));
  assert_int_equal(pb_gtp_engine_set_timed(x.e, t, &err), 0);
  ok(&x, "time_settings 10 0 0", "");
  /* lookahead:2 takes the win that random would not always see. */
  ok(&x, "play b 1", "");
  ok(&x, "play w 2", "");
  ok(&x, "play b 1", "");
  ok(&x, "play w 2", "");
  ok(&x, "play b 1", "");
  ok(&x, "play w 2", "");
  ok(&x, "genmove b", "1");
  assert_string_equal(pb_gtp_timed_last_spec(t), "lookahead:2");
  /* set_timed: NULL back to the agent, a NULL engine, another game. */
  assert_int_equal(pb_gtp_engine_set_timed(x.e, NULL, &err), 0);
  assert_int_equal(pb_gtp_engine_set_timed(NULL, t, &err), PB_EINVAL);
  pb_gtp_timed_t *o = pb_gtp_timed_new(&pb_game_othello, "greedy", 1, &err);
  assert_non_null(o);
  assert_int_equal(pb_gtp_engine_set_timed(x.e, o, &err), PB_EINVAL);
  assert_non_null(strstr(err.msg, "othello"));
  pb_gtp_timed_destroy(&o);
  pb_gtp_timed_destroy(&t);
  assert_null(t);
  eng_close(&x);
}

/* Random lines from GTP's words and junk: every response is one
 * well-formed "=..." or a one-line "? ..."; nothing crashes (ASan). */
static void test_random_lines(void **state) {
  (void)state;
  static const char *const words[] = {
      "genmove", "play", "time_settings", "time_left", "undo", "boardsize",
      "clear_board", "komi", "final_score", "showboard", "known_command",
      "b", "w", "black", "WHITE", "x", "pass", "d3", "c4", "a1", "h8", "4",
      "0", "1", "8", "7", "-1", "1.5", "99999999999999999999", "nan", "inf",
      "1e9", ".", "..", "3.", "#", "# c", "\t", "\x7f", "\xff", "=", "?",
      "12", "300", "0.001"};
  const size_t nw = sizeof words / sizeof words[0];
  pb_rng_t rng;
  pb_rng_seed(&rng, 7, 0);
  for (size_t gi = 0; gi < N_GAMES; gi++) {
    eng_t x;
    eng_open(&x, GAMES[gi], GAMES[gi]->material != NULL ? "greedy" : "random");
    for (int i = 0; i < 1500; i++) {
      char line[256];
      size_t k = 0;
      int n = (int)pb_rng_below(&rng, 6);
      for (int j = 0; j < n && k < 200; j++)
        k += (size_t)snprintf(line + k, sizeof line - k, "%s%s", j ? " " : "",
                              words[pb_rng_below(&rng, (uint32_t)nw)]);
      line[k] = '\0';
      const char *r = say(&x, line);
      if (r[0] == '\0') continue; /* empty or a comment */
      size_t len = strlen(r);
      const char *end = r + len - 2; /* the final "\n\n" */
      if ((r[0] != '=' && r[0] != '?') || len < 3 || strcmp(end, "\n\n") ||
          strstr(r, "\n\n") != end ||
          (r[0] == '?' && strchr(r, '\n') != end))
        fail_msg("%s: \"%s\": got \"%s\"", GAMES[gi]->name, line, r);
    }
    eng_close(&x);
  }
}

/* The line loop over streams. */
static void run_script(const char *input, char *out, size_t n,
                       const volatile sig_atomic_t *stop, int want_rc) {
  FILE *in = tmpfile(), *o = tmpfile();
  assert_non_null(in);
  assert_non_null(o);
  fputs(input, in);
  rewind(in);
  eng_t x;
  eng_open(&x, &pb_game_othello, "greedy");
  pb_err_t err;
  assert_int_equal(pb_gtp_engine_run(x.e, in, o, stop, &err), want_rc);
  rewind(o);
  size_t k = fread(out, 1, n - 1, o);
  out[k] = '\0';
  fclose(in);
  fclose(o);
  eng_close(&x);
}

static void test_run_loop(void **state) {
  (void)state;
  static char out[16384], in[16384];
  /* Ids, comments, an over-long line, quit (nothing after it is read). */
  char *p = in;
  p += sprintf(p, "1 protocol_version\n\n# comment\n2 play b f5\n");
  p += sprintf(p, "3 genmove w\n");
  memset(p, 'x', 5000);
  p += 5000;
  p += sprintf(p, "\n4 showboard\n5 quit\n6 name\n");
  run_script(in, out, sizeof out, NULL, 0);
  const char *want_head = "=1 2\n\n=2\n\n=3 ";
  assert_memory_equal(out, want_head, strlen(want_head));
  assert_non_null(strstr(out, "\n\n? command too long\n\n=4 \n  a b c d e f"));
  assert_non_null(strstr(out, "black to move\n\n=5\n\n"));
  assert_null(strstr(out, "=6"));
  /* The end of input without quit; a last line without its newline. */
  run_script("name\nversion", out, sizeof out, NULL, 0);
  assert_string_equal(out, "= probs\n\n= greedy\n\n");
  run_script("", out, sizeof out, NULL, 0);
  assert_string_equal(out, "");
  /* Comment lines get no response, however long; a command before a
   * long comment is run. */
  p = in;
  p += sprintf(p, "# short\n#");
  memset(p, 'c', 5000);
  p += 5000;
  p += sprintf(p, "\n  name  #");
  memset(p, 'c', 5000);
  p += 5000;
  p += sprintf(p, "\n#\n   #   \nversion\n");
  run_script(in, out, sizeof out, NULL, 0);
  assert_string_equal(out, "= probs\n\n= greedy\n\n");
  /* CRLF line ends. */
  run_script("name\r\nprotocol_version\r\n", out, sizeof out, NULL, 0);
  assert_string_equal(out, "= probs\n\n= 2\n\n");
  /* A stop flag that is set: nothing is read. */
  volatile sig_atomic_t stop = 1;
  run_script("name\n", out, sizeof out, &stop, 0);
  assert_string_equal(out, "");
  /* A controller that is gone: the write fails, PB_EIO. */
  FILE *in2 = tmpfile(), *full = fopen("/dev/full", "w");
  assert_non_null(in2);
  if (full != NULL) {
    fputs("name\n", in2);
    rewind(in2);
    eng_t x;
    eng_open(&x, &pb_game_othello, "greedy");
    pb_err_t err;
    assert_int_equal(pb_gtp_engine_run(x.e, in2, full, NULL, &err), PB_EIO);
    assert_non_null(strstr(err.msg, "cannot write"));
    eng_close(&x);
    fclose(full);
  }
  fclose(in2);
  pb_err_t err;
  assert_int_equal(pb_gtp_engine_run(NULL, stdin, stdout, NULL, &err),
                   PB_EINVAL);
}

/* The notation helpers of gtp.h. */
static void test_notation(void **state) {
  (void)state;
  assert_int_equal(pb_gtp_board_size(&pb_game_othello), 8);
  assert_int_equal(pb_gtp_board_size(&pb_game_connect4), 7);
  assert_int_equal(pb_gtp_board_size(&pb_game_tictactoe), 3);
  assert_int_equal(pb_gtp_board_size(&pb_game_toguz), 9);
  assert_int_equal(pb_gtp_board_size(NULL), 0);
  const pb_game_t *ot = &pb_game_othello;
  assert_int_equal(pb_gtp_parse_move(ot, "a1"), 0);
  assert_int_equal(pb_gtp_parse_move(ot, "H8"), 63);
  assert_int_equal(pb_gtp_parse_move(ot, "d3"), 2 * 8 + 3);
  assert_int_equal(pb_gtp_parse_move(ot, "PASS"), 64);
  assert_int_equal(pb_gtp_parse_move(ot, " d3"), PB_EINVAL);
  assert_int_equal(pb_gtp_parse_move(ot, "d3 "), PB_EINVAL);
  assert_int_equal(pb_gtp_parse_move(ot, ""), PB_EINVAL);
  assert_int_equal(pb_gtp_parse_move(ot, "a-very-long-name-indeed"),
                   PB_EINVAL);
  assert_int_equal(pb_gtp_parse_move(ot, NULL), PB_EINVAL);
  assert_int_equal(pb_gtp_parse_move(NULL, "a1"), PB_EINVAL);
  assert_int_equal(pb_gtp_parse_move(&pb_game_connect4, "1"), 0);
  assert_int_equal(pb_gtp_parse_move(&pb_game_connect4, "7"), 6);
  assert_int_equal(pb_gtp_parse_move(&pb_game_connect4, "8"), PB_EINVAL);
  assert_int_equal(pb_gtp_parse_move(&pb_game_tictactoe, "9"), 8);
  assert_int_equal(pb_gtp_parse_move(&pb_game_toguz, "9"), 8);
  assert_int_equal(pb_gtp_parse_move(&pb_game_toguz, "pass"), PB_EINVAL);
  /* Every action's name reads back as it. */
  for (size_t gi = 0; gi < N_GAMES; gi++)
    for (int a = 0; a < GAMES[gi]->num_actions; a++) {
      char name[16];
      assert_true(GAMES[gi]->action_name(a, name, sizeof name) > 0);
      assert_int_equal(pb_gtp_parse_move(GAMES[gi], name), a);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_notation),
      cmocka_unit_test(test_common_commands),
      cmocka_unit_test(test_play_genmove_undo),
      cmocka_unit_test(test_genmove_is_the_agents),
      cmocka_unit_test(test_finished_games),
      cmocka_unit_test(test_othello_pass),
      cmocka_unit_test(test_agent_errors_and_new),
      cmocka_unit_test(test_time_control),
      cmocka_unit_test(test_timed_agent),
      cmocka_unit_test(test_random_lines),
      cmocka_unit_test(test_run_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
