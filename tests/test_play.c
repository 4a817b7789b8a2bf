/* test_play.c - `probs play` as a person uses it: the real binary under a
 * pseudo-terminal (forkpty), moves typed, the screen read back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <pty.h>
#include <termios.h>

#include "config.h"
#include "learn.h"
#include "proc.h"

#define BIN PB_BIN_DIR

/* A running `probs play` and everything it printed so far. */
typedef struct {
  pid_t pid;
  int fd;      /* the pty's master side */
  char *out;   /* the screen, NUL-terminated */
  size_t len, cap;
  size_t seen; /* output before this offset has been matched */
  int status;  /* wait status once exited, else -1 */
} term_t;

static void term_start(term_t *t, const char *const *args) {
  char *argv[32];
  int n = 0;
  argv[n++] = BIN "/probs";
  argv[n++] = "play";
  for (; *args != NULL && n < 31; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  struct termios tio;
  memset(&tio, 0, sizeof tio);
  /* Canonical input without echo, output unchanged ("\n" stays "\n"), so
   * the screen holds only what probs writes. */
  tio.c_iflag = ICRNL;
  tio.c_oflag = 0;
  tio.c_cflag = CS8 | CREAD;
  tio.c_lflag = ICANON | ISIG;
  tio.c_cc[VEOF] = 4;
  tio.c_cc[VINTR] = 3;
  tio.c_cc[VMIN] = 1;
  cfsetispeed(&tio, B38400);
  cfsetospeed(&tio, B38400);
  fflush(stdout);
  t->pid = forkpty(&t->fd, NULL, &tio, NULL);
  assert_true(t->pid >= 0);
  if (t->pid == 0) {
    execv(argv[0], argv);
    _exit(127);
  }
  t->cap = 1 << 20;
  t->out = malloc(t->cap);
  assert_non_null(t->out);
  t->out[0] = '\0';
  t->len = t->seen = 0;
  t->status = -1;
}

/* Reads what is there within timeout_s. Returns 0, or -1 once the child
 * closed the terminal. */
static int term_pump(term_t *t, double timeout_s) {
  struct pollfd p = {t->fd, POLLIN, 0};
  if (poll(&p, 1, (int)(timeout_s * 1000)) <= 0) return 0;
  if (t->len + 4096 + 1 > t->cap) {
    t->cap *= 2;
    t->out = realloc(t->out, t->cap);
    assert_non_null(t->out);
  }
  ssize_t r = read(t->fd, t->out + t->len, 4096);
  if (r <= 0) return -1; /* EIO: the slave side is closed */
  t->len += (size_t)r;
  t->out[t->len] = '\0';
  return 0;
}

/* Waits up to 60 s for any of the needles to appear after the last match;
 * returns the index of the first one found (the match is consumed), or
 * fails the test showing the screen. */
static int term_expect_any(term_t *t, const char *const *needles, int n) {
  double end = tp_now() + 60;
  for (;;) {
    const char *best = NULL;
    int which = -1;
    for (int i = 0; i < n; i++) {
      const char *h = strstr(t->out + t->seen, needles[i]);
      if (h != NULL && (best == NULL || h < best)) {
        best = h;
        which = i;
      }
    }
    if (which >= 0) {
      t->seen = (size_t)(best - t->out) + strlen(needles[which]);
      return which;
    }
    if (tp_now() > end || term_pump(t, 0.2) < 0) {
      /* One last look after the child closed the terminal. */
      for (int i = 0; i < n; i++) {
        const char *h = strstr(t->out + t->seen, needles[i]);
        if (h != NULL) {
          t->seen = (size_t)(h - t->out) + strlen(needles[i]);
          return i;
        }
      }
      fail_msg("no \"%s\" on the screen after offset %zu:\n%s", needles[0],
               t->seen, t->out + (t->seen > 3000 ? t->seen - 3000 : 0));
    }
  }
}

static void term_expect(term_t *t, const char *needle) {
  term_expect_any(t, &needle, 1);
}

static void term_send(term_t *t, const char *line) {
  size_t n = strlen(line);
  assert_int_equal(write(t->fd, line, n), (ssize_t)n);
}

/* Waits for the child to exit (reading the terminal meanwhile) and
 * returns its exit status; fails on a signal or a timeout. */
static int term_wait(term_t *t) {
  double end = tp_now() + 60;
  while (tp_now() < end) {
    int st;
    pid_t r = waitpid(t->pid, &st, WNOHANG);
    if (r == t->pid) {
      while (term_pump(t, 0.05) == 0 && t->len < t->cap - 4097) {
        struct pollfd p = {t->fd, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) break;
      }
      t->status = st;
      if (!WIFEXITED(st))
        fail_msg("probs play died (status %d):\n%s", st, t->out);
      return WEXITSTATUS(st);
    }
    term_pump(t, 0.05);
  }
  kill(t->pid, SIGKILL);
  waitpid(t->pid, NULL, 0);
  fail_msg("probs play did not exit:\n%s", t->out);
  return -1;
}

static void term_close(term_t *t) {
  if (t->status == -1 && t->pid > 0) {
    kill(t->pid, SIGKILL);
    waitpid(t->pid, NULL, 0);
  }
  if (t->fd >= 0) close(t->fd);
  free(t->out);
  memset(t, 0, sizeof *t);
}

/* Plays the human's side to the end: at every prompt the next of `moves`
 * in turn (cyclically), so illegal ones are re-asked and skipped. */
static void play_out(term_t *t, const char *moves) {
  static const char *const marks[] = {"or help: ", "game over: "};
  size_t m = strlen(moves);
  for (int i = 0; i < 2000; i++) {
    if (term_expect_any(t, marks, 2) == 1) return;
    char line[4] = {moves[i % m], '\n', '\0'};
    term_send(t, line);
  }
  fail_msg("no end of the game:\n%s", t->out);
}

/* A full game of Tic-Tac-Toe and one of Connect Four against random reach
 * a result and exit 0. */
static void test_full_games(void **state) {
  (void)state;
  term_t t;
  const char *t3[] = {"--game", "tictactoe", "--agent", "random", "--seed",
                      "3", NULL};
  term_start(&t, t3);
  term_expect(&t, "tictactoe against random; you are X");
  play_out(&t, "123456789");
  term_expect(&t, "\n");
  assert_int_equal(term_wait(&t), 0);
  assert_true(strstr(t.out, "wins") != NULL || strstr(t.out, "draw") != NULL);
  term_close(&t);

  const char *c4[] = {"--game", "connect4", "--agent", "random", NULL};
  term_start(&t, c4);
  play_out(&t, "1234567");
  term_expect(&t, "\n");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);
}

/* Bad input is re-asked and the game goes on: a word, a number that is no
 * column, an empty line, a full column. */
static void test_bad_input(void **state) {
  (void)state;
  term_t t;
  const char *args[] = {"--game", "connect4", "--agent", "lookahead:2",
                        "--position", "111111", NULL};
  term_start(&t, args);
  term_expect(&t, "O . . . . . .\n");
  term_expect(&t, "1 2 3 4 5 6 7\n");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "zz\n");
  term_expect(&t, "'zz' is not a move of connect4");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "99\n");
  term_expect(&t, "'99' is not a move of connect4");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "\n");
  term_expect(&t, "please type a move");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "1\n");
  term_expect(&t, "move '1' is not legal here (legal: 2 3 4 5 6 7)");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "help\n");
  term_expect(&t, "undo");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "4\n");
  term_expect(&t, "you play 4");
  term_expect(&t, "agent (O) plays ");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "quit\n");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);
}

/* undo takes back the human's move and the agent's reply: the board is the
 * one before them. */
static void test_undo(void **state) {
  (void)state;
  term_t t;
  const char *args[] = {"--game", "tictactoe", "--agent", "random", NULL};
  static const char empty[] =
      ". . .     1 2 3\n. . .     4 5 6\n. . .     7 8 9\n";
  term_start(&t, args);
  term_expect(&t, empty);
  term_expect(&t, "or help: ");
  term_send(&t, "undo\n");
  term_expect(&t, "nothing to undo");
  term_expect(&t, "or help: ");
  term_send(&t, "5\n");
  term_expect(&t, ". X .     4 5 6\n");
  term_expect(&t, "agent (O) plays ");
  term_expect(&t, "or help: ");
  term_send(&t, "undo\n");
  term_expect(&t, "undone: back to move 1");
  term_expect(&t, empty);
  term_expect(&t, "to move: X (you)");
  term_expect(&t, "or help: ");
  term_send(&t, "1\n");
  term_expect(&t, "X . .     1 2 3\n. . .     4 5 6\n");
  term_expect(&t, "agent (O) plays ");
  term_expect(&t, "or help: ");
  /* Ctrl-D at the prompt: end of input, a clean exit. */
  term_send(&t, "\x04");
  term_expect(&t, "end of input");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);
}

/* Closing the terminal (the window of the game goes away) ends the game
 * as the end of input does: exit 0. */
static void test_close_terminal(void **state) {
  (void)state;
  term_t t;
  const char *args[] = {"--game", "connect4", "--agent", "random", NULL};
  term_start(&t, args);
  term_expect(&t, "your move (X), or help: ");
  close(t.fd);
  t.fd = -1;
  int st = tp_wait(t.pid, 60);
  t.status = st;
  assert_true(st >= 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("probs play ended with status %d after the terminal closed", st);
  term_close(&t);
}

/* --first agent: the agent moves first (as X). eval on a baseline names
 * the move it would play. */
static void test_first_agent(void **state) {
  (void)state;
  term_t t;
  const char *args[] = {"--game",  "connect4", "--agent", "alphabeta:2",
                        "--first", "agent",    NULL};
  term_start(&t, args);
  term_expect(&t, "you are O");
  term_expect(&t, "to move: X (agent)");
  term_expect(&t, "agent (X) plays ");
  term_expect(&t, "your move (O), or help: ");
  term_send(&t, "hint\n");
  term_expect(&t, "alphabeta:2 has no evaluation to show");
  term_expect(&t, "alphabeta:2 would play: ");
  term_expect(&t, "or help: ");
  term_send(&t, "undo\n"); /* only the agent's move: nothing of ours */
  term_expect(&t, "nothing to undo");
  term_expect(&t, "or help: ");
  term_send(&t, "\x04");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);
}

/* A fresh Tic-Tac-Toe checkpoint (untrained networks) at path. */
/* An untrained checkpoint of configs/NAME.yaml at path. */
static void make_ckpt_of(const char *name, const char *path) {
  pb_config_t cfg;
  pb_err_t err;
  char file[256];
  snprintf(file, sizeof file, PB_SOURCE_DIR "/configs/%s.yaml", name);
  pb_config_defaults(&cfg);
  if (pb_config_load_file(&cfg, file, &err) != 0) fail_msg("%s", err.msg);
  pb_learn_t *l = pb_learn_new(&cfg, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  pb_learn_destroy(&l);
}

static void make_ckpt(const char *path) {
  make_ckpt_of("tictactoe-smoke", path);
}

/* --model: the checkpoint's game, and by default the best search over it:
 * abnet: for a PROBS checkpoint (hint shows its value and line), mcts: for
 * an AlphaZero one (hint shows the policy, the value and the visits);
 * network kinds take the model's path; mismatches are refused. */
static void test_model_default_search(void **state) {
  (void)state;
  char dir[] = "/tmp/pb_test_play_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], az[256], want[400];
  snprintf(path, sizeof path, "%s/t3.pbck", dir);
  snprintf(az, sizeof az, "%s/t3az.pbck", dir);
  make_ckpt(path);
  make_ckpt_of("tictactoe-alphazero", az);
  term_t t;
  const char *pa[] = {"--model", path, NULL};
  term_start(&t, pa);
  snprintf(want, sizeof want, "tictactoe against abnet:%s;", path);
  term_expect(&t, want);
  term_expect(&t, "or help: ");
  term_send(&t, "hint\n");
  term_expect(&t, "move 1    Q=");
  term_expect(&t, "best by Q: ");
  term_expect(&t, "abnet: value ");
  term_expect(&t, " evaluations, line: ");
  term_expect(&t, "would play: ");
  term_send(&t, "quit\n");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);

  const char *aa[] = {"--model", az, "--first", "agent", NULL};
  term_start(&t, aa);
  snprintf(want, sizeof want, "tictactoe against mcts:%s;", az);
  term_expect(&t, want);
  term_expect(&t, "agent (X) plays ");
  term_expect(&t, "or help: ");
  term_send(&t, "eval\n");
  term_expect(&t, "value = ");
  term_expect(&t, "for O, the side to move");
  term_expect(&t, " P=");
  term_expect(&t, " visits=");
  term_expect(&t, "best by policy: ");
  term_expect(&t, "by MCTS (100 simulations, root value ");
  term_expect(&t, "would play: ");
  term_send(&t, "quit\n");
  assert_int_equal(term_wait(&t), 0);
  /* The visits of the moves sum to the agent's 100 simulations. */
  int visits = 0;
  for (const char *c = t.out; (c = strstr(c, "visits=")); c += 7)
    visits += atoi(c + 7);
  assert_int_equal(visits, 100);
  term_close(&t);

  /* An AlphaZero agent without search: hint shows MCTS at 200. */
  const char *ac[] = {"--model", az, "--agent", "checkpoint", NULL};
  term_start(&t, ac);
  snprintf(want, sizeof want, "tictactoe against checkpoint:%s;", az);
  term_expect(&t, want);
  term_expect(&t, "or help: ");
  term_send(&t, "hint\n");
  term_expect(&t, "by MCTS (200 simulations, root value ");
  term_send(&t, "quit\n");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);

  const char *ab[] = {"--model", path, "--agent", "beam,E=20,M=3", NULL};
  term_start(&t, ab);
  snprintf(want, sizeof want, "tictactoe against beam:%s,E=20,M=3;", path);
  term_expect(&t, want);
  term_send(&t, "quit\n");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);

  const struct {
    const char *args[8];
    const char *msg;
  } bad[] = {
      {{"--model", path, "--game", "connect4", NULL},
       "--game connect4, but the checkpoint"},
      /* no --model and no shipped model of the game */
      {{"--game", "tictactoe", "--agent", "search", NULL},
       "--agent search needs a model: no shipped model tictactoe.pbck"},
      {{"--model", "/nonexistent/x.pbck", NULL}, "/nonexistent/x.pbck"},
      {{"--model", az, "--agent", "abnet", NULL}, "no V and Q"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    term_start(&t, bad[i].args);
    int rc = term_wait(&t);
    if (rc != 2 || strstr(t.out, bad[i].msg) == NULL)
      fail_msg("case %zu: exit %d (want 2), output:\n%s", i, rc, t.out);
    term_close(&t);
  }
  unlink(path);
  unlink(az);
  rmdir(dir);
}

/* eval against network agents: V, the Q of every legal move, and for a
 * beam agent the search values; the game then goes on to its end. */
static void test_eval_network(void **state) {
  (void)state;
  char dir[] = "/tmp/pb_test_play_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], spec[300];
  snprintf(path, sizeof path, "%s/t3.pbck", dir);
  make_ckpt(path);
  term_t t;
  snprintf(spec, sizeof spec, "checkpoint:%s", path);
  const char *args[] = {"--game", "tictactoe", "--agent", spec, NULL};
  term_start(&t, args);
  term_expect(&t, "or help: ");
  term_send(&t, "eval\n");
  term_expect(&t, "V = ");
  term_expect(&t, "for X, the side to move");
  term_expect(&t, "move 1    Q=");
  term_expect(&t, "move 9    Q=");
  term_expect(&t, "best by Q: ");
  term_expect(&t, "would play: ");
  play_out(&t, "123456789");
  term_expect(&t, "\n");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);

  snprintf(spec, sizeof spec, "beam:%s,E=50,M=4", path);
  term_start(&t, args);
  term_expect(&t, "or help: ");
  term_send(&t, "5\n");
  term_expect(&t, "agent (O) plays ");
  term_expect(&t, "or help: ");
  term_send(&t, "hint\n");
  term_expect(&t, "beam=");
  term_expect(&t, "by beam search (E=50, M=4): ");
  term_expect(&t, "or help: ");
  term_send(&t, "quit\n");
  term_expect(&t, "bye");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);

  /* A corrupt checkpoint: exit 1, the file named. */
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, 40, SEEK_SET);
  fputs("garbage garbage garbage", f);
  fclose(f);
  snprintf(spec, sizeof spec, "checkpoint:%s", path);
  term_start(&t, args);
  assert_int_equal(term_wait(&t), 1);
  assert_non_null(strstr(t.out, path));
  term_close(&t);
  unlink(path);
  rmdir(dir);
}

/* Othello: a position where the side to move must pass (found by search:
 * X has no move after these 8 plies); a square is refused, pass is
 * played. Toguz Kumalak: hole numbers. */
static void test_othello_pass_toguz(void **state) {
  (void)state;
  term_t t;
  const char *ot[] = {"--game", "othello", "--agent", "random", "--position",
                      "d3c3b3b2f5a3a1c1", NULL};
  term_start(&t, ot);
  term_expect(&t, "  a b c d e f g h\n");
  term_expect(&t, "you have no move: type pass");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "f6\n");
  term_expect(&t, "move 'f6' is not legal here (legal: pass)");
  term_expect(&t, "or help: ");
  term_send(&t, "k9\n");
  term_expect(&t, "'k9' is not a move of othello");
  term_expect(&t, "or help: ");
  term_send(&t, "PASS\n");
  term_expect(&t, "you play pass");
  term_expect(&t, "agent (O) plays ");
  term_expect(&t, "or help: ");
  term_send(&t, "\x04");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);

  const char *tk[] = {"--game", "toguz", "--agent", "random", NULL};
  term_start(&t, tk);
  term_expect(&t, "kazna");
  term_expect(&t, "your move (X), or help: ");
  term_send(&t, "0\n");
  term_expect(&t, "'0' is not a move of toguz");
  term_expect(&t, "or help: ");
  term_send(&t, "7\n");
  term_expect(&t, "you play 7");
  term_expect(&t, "agent (O) plays ");
  term_expect(&t, "or help: ");
  term_send(&t, "quit\n");
  assert_int_equal(term_wait(&t), 0);
  term_close(&t);
}

/* Usage errors: exit 2 naming the bad value. */
static void test_usage(void **state) {
  (void)state;
  static const struct {
    const char *args[8];
    int rc;
    const char *msg;
  } cases[] = {
      {{"--first", "nobody", NULL}, 2, "bad --first 'nobody'"},
      {{"--game", "chess", NULL}, 2, "unknown game 'chess'"},
      {{"--agent", "wizard", NULL}, 2, "wizard"},
      {{"--seed", "x1", NULL}, 2, "bad --seed 'x1'"},
      {{"--position", "448", "--game", "tictactoe", NULL}, 2, "cell 4 is taken"},
      {{"--agent", "checkpoint:/nonexistent/x.pbck", NULL}, 1,
       "/nonexistent/x.pbck"},
      {{"--help", NULL}, 0, "usage: probs play"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    term_t t;
    term_start(&t, cases[i].args);
    int rc = term_wait(&t);
    if (rc != cases[i].rc || strstr(t.out, cases[i].msg) == NULL)
      fail_msg("case %zu: exit %d (want %d), output:\n%s", i, rc, cases[i].rc,
               t.out);
    term_close(&t);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_games),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_undo),
      cmocka_unit_test(test_first_agent),
      cmocka_unit_test(test_close_terminal),
      cmocka_unit_test(test_eval_network),
      cmocka_unit_test(test_model_default_search),
      cmocka_unit_test(test_othello_pass_toguz),
      cmocka_unit_test(test_usage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
