/* test_analyze.c - `probs analyze` run as a user runs it, checked against
 * the networks themselves and against `probs search`; and the shared
 * module play/analysis.h it is built on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "agent.h"
#include "analysis.h"
#include "config.h"
#include "json.h"
#include "learn.h"
#include "model.h"
#include "nn.h"
#include "proc.h"

#define BIN PB_BIN_DIR

static char g_dir[64];
static char g_ckpt[128];

static int setup(void **state) {
  (void)state;
  strcpy(g_dir, "/tmp/pb_test_analyze_XXXXXX");
  if (mkdtemp(g_dir) == NULL) return -1;
  snprintf(g_ckpt, sizeof g_ckpt, "%s/t3.pbck", g_dir);
  pb_config_t cfg;
  pb_err_t err;
  pb_config_defaults(&cfg);
  if (pb_config_load_file(&cfg, PB_SOURCE_DIR "/configs/tictactoe-smoke.yaml",
                          &err) != 0)
    return -1;
  pb_learn_t *l = pb_learn_new(&cfg, &err);
  if (l == NULL) return -1;
  int rc = pb_learn_save(l, g_ckpt, NULL, 0, &err);
  pb_learn_destroy(&l);
  return rc;
}

static int teardown(void **state) {
  (void)state;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Runs probs with args (NULL-terminated); returns its exit status and its
 * output (stdout and stderr, malloc'd) in *out. */
static int run_probs(char **out, const char *const *args) {
  char *argv[32];
  int n = 0;
  argv[n++] = BIN "/probs";
  for (; *args != NULL && n < 31; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  char log[128];
  snprintf(log, sizeof log, "%s/out.log", g_dir);
  unlink(log);
  pid_t pid = tp_spawn(argv, log);
  assert_true(pid > 0);
  int st = tp_wait(pid, 120);
  assert_true(st >= 0 && WIFEXITED(st));
  *out = tp_slurp(log);
  assert_non_null(*out);
  return WEXITSTATUS(st);
}

/* The value printed after "key" on the line starting with `line`, or NAN. */
static double value_after(const char *out, const char *line, const char *key) {
  const char *p = strstr(out, line);
  if (p == NULL) return NAN;
  const char *eol = strchr(p, '\n');
  const char *k = strstr(p, key);
  if (k == NULL || (eol != NULL && k > eol)) return NAN;
  return strtod(k + strlen(key), NULL);
}

/* The printed V and Q are the networks' (to the 4 decimals printed), the
 * side to move is right, the beam values are exactly `probs search`'s at
 * the same E and M, and the best moves are the argmaxes of the columns
 * (the Q one is what the checkpoint: agent plays). */
static void test_values(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_tictactoe;
  pb_err_t err;
  pb_model_t *l = pb_model_open(g_ckpt, "cpu", NULL, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  char spec[200];
  snprintf(spec, sizeof spec, "checkpoint:%s", g_ckpt);
  pb_agent_t *agent = pb_agent_new(g, spec, 1, &err);
  if (agent == NULL) fail_msg("%s", err.msg);
  static const char *const positions[] = {"", "5", "15", "1592"};
  for (size_t pi = 0; pi < 4; pi++) {
    const char *pos = positions[pi];
    char *out = NULL, *sout = NULL;
    const char *args[] = {"analyze", "--model", g_ckpt, "--position", pos,
                          "-E",      "40",      "-M",   "4",          NULL};
    assert_int_equal(run_probs(&out, args), 0);
    const char *sargs[] = {"search", "--model", g_ckpt, "--position", pos,
                           "-E",     "40",      "-M",   "4",          NULL};
    assert_int_equal(run_probs(&sout, sargs), 0);

    pb_state_t s;
    assert_int_equal(g->parse(&s, pos, &err), 0);
    char want[64];
    snprintf(want, sizeof want, "to move: %c (ply %d)\n",
             strlen(pos) % 2 ? 'O' : 'X', (int)strlen(pos));
    if (strstr(out, want) == NULL) fail_msg("no \"%s\" in:\n%s", want, out);

    float in[2 * 9 * 4], q[9], v;
    assert_true((size_t)g->planes * g->height * g->width <= sizeof in / 4);
    g->encode(&s, in);
    assert_int_equal(pb_nn_forward(pb_model_q(l), in, 1, q, &err), 0);
    assert_int_equal(pb_nn_forward(pb_model_v(l), in, 1, &v, &err), 0);
    char buf[64];
    snprintf(buf, sizeof buf, "V = %+.4f (for %c", v,
             strlen(pos) % 2 ? 'O' : 'X');
    if (strstr(out, buf) == NULL) fail_msg("no \"%s\" in:\n%s", buf, out);

    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s, legal);
    int best_q = legal[0], best_b = legal[0];
    double beam[9];
    for (int i = 0; i < nl; i++) {
      int a = legal[i];
      char line[32], sline[32];
      snprintf(line, sizeof line, "move %d: Q=", a + 1);
      snprintf(buf, sizeof buf, "move %d: Q=%+.4f ", a + 1, q[a]);
      if (strstr(out, buf) == NULL) fail_msg("no \"%s\" in:\n%s", buf, out);
      /* Beam: the same text as probs search prints. */
      snprintf(sline, sizeof sline, "move %d: ", a + 1);
      double sb = value_after(sout, sline, ": ");
      double ab = value_after(out, line, "beam=");
      assert_false(isnan(sb));
      assert_false(isnan(ab));
      char x[32], y[32];
      snprintf(x, sizeof x, "%+.4f", sb);
      snprintf(y, sizeof y, "%+.4f", ab);
      assert_string_equal(x, y);
      beam[a] = ab;
      if (q[a] > q[best_q]) best_q = a;
      if (beam[a] > beam[best_b]) best_b = a;
    }
    snprintf(buf, sizeof buf, "best by Q: %d\n", best_q + 1);
    if (strstr(out, buf) == NULL) fail_msg("no \"%s\" in:\n%s", buf, out);
    assert_int_equal(pb_agent_act(agent, &s, &err), best_q);
    snprintf(buf, sizeof buf, "best by beam search (E=40, M=4): %d\n",
             best_b + 1);
    if (strstr(out, buf) == NULL) fail_msg("no \"%s\" in:\n%s", buf, out);
    assert_non_null(strstr(out, "best by V one ply: "));
    free(out);
    free(sout);
  }
  pb_agent_destroy(&agent);
  pb_model_destroy(&l);
}

/* Bad input: exit 2 naming the move or value, 1 for a model that cannot be
 * read (naming the file); a finished game is shown with its result. */
static void test_errors(void **state) {
  (void)state;
  char missing[160];
  snprintf(missing, sizeof missing, "%s/none.pbck", g_dir);
  static const char *corrupt_name = "corrupt.pbck";
  char corrupt[160];
  snprintf(corrupt, sizeof corrupt, "%s/%s", g_dir, corrupt_name);
  FILE *f = fopen(corrupt, "wb");
  assert_non_null(f);
  fputs("PBCK not really a checkpoint", f);
  fclose(f);
  const struct {
    const char *args[10];
    int rc;
    const char *msg;
  } cases[] = {
      {{"analyze", "--model", g_ckpt, "--position", "155", NULL},
       2,
       "cell 5 is taken at index 2"},
      {{"analyze", "--model", g_ckpt, "--position", "f5d6", NULL},
       2,
       "bad character 'f'"},
      {{"analyze", "--model", g_ckpt, "--position", "1425367", NULL},
       2,
       "move '6' at index 5"},
      {{"analyze", "--model", g_ckpt, "-E", "0", NULL}, 2, "bad -E '0'"},
      {{"analyze", "--model", g_ckpt, "-M", "x", NULL}, 2, "bad -M 'x'"},
      {{"analyze", "--position", "1", NULL}, 2, "--model CHECKPOINT is required"},
      {{"analyze", "--model", g_ckpt, "--bogus", NULL}, 2, "unknown option '--bogus'"},
      {{"analyze", "--model", missing, NULL}, 2, missing},
      {{"analyze", "--model", corrupt, NULL}, 2, corrupt_name},
      {{"analyze", "--model", g_ckpt, "--position", "14253", NULL},
       0,
       "game over: X wins"},
      {{"analyze", "--help", NULL}, 0, "usage: probs analyze"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out = NULL;
    int rc = run_probs(&out, cases[i].args);
    if (rc != cases[i].rc || strstr(out, cases[i].msg) == NULL)
      fail_msg("case %zu: exit %d (want %d, \"%s\"), output:\n%s", i, rc,
               cases[i].rc, cases[i].msg, out);
    free(out);
  }
}

/* --json: one valid object with the moves and the choices. */
static void test_json(void **state) {
  (void)state;
  char *out = NULL;
  const char *args[] = {"analyze", "--model", g_ckpt, "--position",
                        "5",       "--json",  NULL};
  assert_int_equal(run_probs(&out, args), 0);
  size_t n = strlen(out);
  while (n > 0 && out[n - 1] == '\n') out[--n] = '\0';
  assert_int_equal(pb_json_validate(out), 0);
  assert_non_null(strstr(out, "\"to_move\":\"O\""));
  assert_non_null(strstr(out, "\"move\":\"9\""));
  assert_null(strstr(out, "\"move\":\"5\""));
  assert_non_null(strstr(out, "\"best_beam\":"));
  free(out);
}

/* The module itself: typed moves, results, boards, and the evaluation of
 * a terminal position refused. */
static void test_module(void **state) {
  (void)state;
  pb_err_t err;
  pb_state_t s;
  const pb_game_t *c4 = &pb_game_connect4, *ot = &pb_game_othello;
  assert_int_equal(c4->parse(&s, "111111", &err), 0);
  int a = -1;
  assert_int_equal(pb_analysis_parse_move(c4, &s, " 4 ", &a, &err), 0);
  assert_int_equal(a, 3);
  assert_int_equal(pb_analysis_parse_move(c4, &s, "1", &a, &err), PB_EILLEGAL);
  assert_non_null(strstr(err.msg, "move '1' is not legal here"));
  assert_int_equal(pb_analysis_parse_move(c4, &s, "8", &a, &err), PB_EINVAL);
  assert_int_equal(pb_analysis_parse_move(c4, &s, "", &a, &err), PB_EINVAL);
  assert_int_equal(pb_analysis_side(c4, &s), 'X');
  assert_int_equal(ot->parse(&s, "d3c3b3b2f5a3a1c1", &err), 0);
  assert_int_equal(pb_analysis_parse_move(ot, &s, "Pa", &a, &err), 0);
  assert_int_equal(a, 64);
  ot->reset(&s);
  assert_int_equal(pb_analysis_parse_move(ot, &s, "F5", &a, &err), 0);
  assert_int_equal(a, 4 * 8 + 5);
  assert_int_equal(pb_analysis_parse_move(ot, &s, "pass", &a, &err),
                   PB_EILLEGAL);

  const pb_game_t *t3 = &pb_game_tictactoe;
  char buf[1024];
  assert_int_equal(t3->parse(&s, "14253", &err), 0);
  assert_int_equal(pb_analysis_result(t3, &s, buf, sizeof buf), 1);
  assert_string_equal(buf, "X wins");
  assert_int_equal(t3->parse(&s, "5", &err), 0);
  assert_int_equal(pb_analysis_result(t3, &s, buf, sizeof buf), 0);
  pb_analysis_board(t3, &s, buf, sizeof buf);
  assert_string_equal(buf, ". . .     1 2 3\n. X .     4 5 6\n. . .     7 8 9\n");
  /* Othello during a game: the last move in brackets, the legal moves of
   * the side to move, the discs counted; other games as before. */
  pb_state_t before;
  assert_int_equal(ot->parse(&before, "", &err), 0);
  assert_int_equal(ot->parse(&s, "d3", &err), 0);
  pb_analysis_board_after(ot, &before, &s, buf, sizeof buf);
  assert_string_equal(buf,
                      "  a b c d e f g h\n"
                      "1 . . . . . . . .\n"
                      "2 . . . . . . . .\n"
                      "3 . . *[X]* . . .\n"
                      "4 . . . X X . . .\n"
                      "5 . . * X O . . .\n"
                      "6 . . . . . . . .\n"
                      "7 . . . . . . . .\n"
                      "8 . . . . . . . .\n"
                      "discs: X 4, O 1\n");
  pb_analysis_board_after(ot, NULL, &before, buf, sizeof buf);
  assert_non_null(strstr(buf, "4 . . * O X . . .\n"));
  assert_non_null(strstr(buf, "discs: X 2, O 2\n"));
  assert_null(strchr(buf, '['));
  char plain[1024];
  assert_int_equal(t3->parse(&s, "5", &err), 0);
  pb_analysis_board(t3, &s, plain, sizeof plain);
  pb_analysis_board_after(t3, NULL, &s, buf, sizeof buf);
  assert_string_equal(buf, plain);

  pb_model_t *l = pb_model_open(g_ckpt, "cpu", NULL, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  assert_null(pb_analysis_new(l, 5, 0, &err));
  pb_analysis_t *an = pb_analysis_new(l, 0, 0, &err);
  assert_non_null(an);
  pb_analysis_eval_t ev;
  assert_int_equal(pb_analysis_eval(an, &s, &ev, &err), 0);
  assert_int_equal(ev.n_legal, 8);
  assert_int_equal(ev.has_beam, 0);
  assert_int_equal(ev.best_beam, -1);
  assert_int_equal(t3->parse(&s, "14253", &err), 0);
  assert_int_equal(pb_analysis_eval(an, &s, &ev, &err), PB_EINVAL);
  pb_analysis_destroy(&an);
  pb_analysis_destroy(&an);
  assert_null(an);
  pb_model_destroy(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_module),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
