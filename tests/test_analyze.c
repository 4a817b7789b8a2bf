/* test_analyze.c - `probs analyze` run as a user runs it, checked against
 * the networks themselves, against `probs search` (beam) and against the
 * abnet: and mcts: agents (alpha-beta's and MCTS's moves), for a PROBS and
 * an AlphaZero checkpoint; and the shared module common/play/analysis.h it is
 * built on. */
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

#include "t3_fixtures.h"

#define BIN PB_BIN_DIR

static int setup(void **state) {
  (void)state;
  return t3_setup("analyze");
}

static int teardown(void **state) {
  (void)state;
  return t3_teardown();
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
    /* -E/-M add the beam to alpha-beta, whose move is a fresh abnet:
     * agent's. */
    snprintf(spec, sizeof spec, "abnet:%s", g_ckpt);
    pb_agent_t *ab = pb_agent_new(g, spec, 1, &err);
    if (ab == NULL) fail_msg("%s", err.msg);
    snprintf(buf, sizeof buf, "best by abnet (nodes=1000): %d\n",
             pb_agent_act(ab, &s, &err) + 1);
    if (strstr(out, buf) == NULL) fail_msg("no \"%s\" in:\n%s", buf, out);
    pb_agent_destroy(&ab);
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
      {{"analyze", "--model", g_ckpt, "--search", "mcts", NULL},
       2,
       "bad --search 'mcts'"},
      {{"analyze", "--model", g_ckpt, "--nodes", "0", NULL},
       2,
       "bad --nodes '0'"},
      {{"analyze", "--model", g_ckpt, "--search", "beam", "--nodes", "9", NULL},
       2,
       "--search beam has no alpha-beta"},
      {{"analyze", "--model", g_ckpt, "--search", "abnet", "-E", "9", NULL},
       2,
       "--search abnet has none"},
      {{"analyze", "--model", g_ckpt, "--simulations", "9", NULL},
       2,
       "--simulations is for alphazero checkpoints"},
      {{"analyze", "--model", g_azckpt, "-E", "9", NULL},
       2,
       "-E is for probs checkpoints"},
      {{"analyze", "--model", g_azckpt, "--search", "abnet", NULL},
       2,
       "--search is for probs checkpoints"},
      {{"analyze", "--model", g_azckpt, "--simulations", "0", NULL},
       2,
       "bad --simulations '0'"},
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

/* The default search of a PROBS checkpoint is alpha-beta (abnet) at the
 * abnet: agent's 1000 evaluations, without the beam; --search beam gives
 * the beam alone, --nodes sets the budget. */
static void test_default_search(void **state) {
  (void)state;
  char *out = NULL;
  const char *args[] = {"analyze", "--model", g_ckpt, "--position", "5", NULL};
  assert_int_equal(run_probs(&out, args), 0);
  if (strstr(out, "abnet (nodes=1000): value ") == NULL ||
      strstr(out, "best by abnet (nodes=1000): ") == NULL ||
      strstr(out, "beam") != NULL)
    fail_msg("the default search is not abnet alone:\n%s", out);
  free(out);
  const char *bargs[] = {"analyze", "--model",  g_ckpt, "--position",
                         "5",       "--search", "beam", NULL};
  assert_int_equal(run_probs(&out, bargs), 0);
  if (strstr(out, "best by beam search (E=30, M=3): ") == NULL ||
      strstr(out, "abnet") != NULL)
    fail_msg("--search beam:\n%s", out);
  free(out);
  const char *nargs[] = {"analyze", "--model", g_ckpt, "--position",
                         "5",       "--nodes", "20",   NULL};
  assert_int_equal(run_probs(&out, nargs), 0);
  double evals = value_after(out, "abnet (nodes=20)", "depth ");
  const char *e = strstr(out, " evaluations, line: ");
  assert_false(isnan(evals));
  assert_non_null(e);
  while (e > out && e[-1] != ' ') e--;
  long ev = strtol(e, NULL, 10);
  if (ev < 1 || ev > 20) fail_msg("%ld evaluations at nodes=20:\n%s", ev, out);
  free(out);
}

/* The text after "\"key\":" from p on, or NULL. */
static const char *json_at(const char *p, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *q = strstr(p, k);
  return q ? q + strlen(k) : NULL;
}

/* --json: one valid object with the moves and the choices; alpha-beta's
 * principal variation is a line of legal moves from the position that
 * starts with its move. */
static void test_json(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_tictactoe;
  char *out = NULL;
  const char *args[] = {"analyze", "--model", g_ckpt, "--position",
                        "5",       "--json",  NULL};
  assert_int_equal(run_probs(&out, args), 0);
  size_t n = strlen(out);
  while (n > 0 && out[n - 1] == '\n') out[--n] = '\0';
  assert_int_equal(pb_json_validate(out), 0);
  assert_non_null(strstr(out, "\"to_move\":\"O\""));
  assert_non_null(strstr(out, "\"algorithm\":\"probs\""));
  assert_non_null(strstr(out, "\"search\":\"abnet\""));
  assert_non_null(strstr(out, "\"move\":\"9\""));
  assert_null(strstr(out, "\"move\":\"5\""));
  assert_null(strstr(out, "\"best_beam\":"));
  assert_non_null(strstr(out, "\"abnet\":{\"nodes\":1000,"));
  const char *pv = json_at(out, "pv");
  const char *best = json_at(out, "best_abnet");
  assert_non_null(pv);
  assert_non_null(best);
  /* "pv":["3","1",...] -> "5" + "31..." replays as a position */
  char line[64] = "5";
  size_t k = 1;
  for (const char *c = pv + 1; *c != ']' && k + 1 < sizeof line; c++)
    if (*c >= '1' && *c <= '9') line[k++] = *c;
  line[k] = '\0';
  assert_true(k >= 2);
  assert_int_equal(line[1], best[1]);
  pb_state_t s;
  pb_err_t err;
  if (g->parse(&s, line, &err) != 0)
    fail_msg("pv %s is not a line of legal moves: %s", line, err.msg);
  free(out);
  const char *bargs[] = {"analyze", "--model", g_ckpt, "--search",
                         "both",    "--json",  NULL};
  assert_int_equal(run_probs(&out, bargs), 0);
  n = strlen(out);
  while (n > 0 && out[n - 1] == '\n') out[--n] = '\0';
  assert_int_equal(pb_json_validate(out), 0);
  assert_non_null(strstr(out, "\"search\":\"both\""));
  assert_non_null(strstr(out, "\"best_beam\":"));
  assert_non_null(strstr(out, "\"best_abnet\":"));
  free(out);
}

/* The softmax over the legal moves of the policy logits of s, and the
 * value, from the AlphaZero network itself. */
static void az_truth(pb_model_t *m, const pb_state_t *s, float *p, float *v) {
  const pb_game_t *g = pb_model_game(m);
  float in[2 * 9 * 4], out[10];
  pb_err_t err;
  g->encode(s, in);
  assert_int_equal(pb_nn_forward(pb_model_q(m), in, 1, out, &err), 0);
  uint8_t legal[PB_MAX_ACTIONS];
  int nl = g->legal(s, legal);
  double mx = -INFINITY, sum = 0;
  for (int i = 0; i < nl; i++)
    if (out[legal[i]] > mx) mx = out[legal[i]];
  for (int i = 0; i < nl; i++) sum += exp(out[legal[i]] - mx);
  for (int a = 0; a < 9; a++) p[a] = 0;
  for (int i = 0; i < nl; i++)
    p[legal[i]] = (float)(exp(out[legal[i]] - mx) / sum);
  *v = out[9];
}

/* An AlphaZero checkpoint, --json: for every legal move the policy's
 * probability (the network's softmax; they sum to 1), the value head's
 * value in [-1, 1], and visit counts that sum to the simulations, with
 * the most visited move what mcts:CKPT,N=... plays. */
static void test_alphazero_json(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_tictactoe;
  pb_err_t err;
  pb_model_t *m = pb_model_open(g_azckpt, "cpu", NULL, &err);
  if (m == NULL) fail_msg("%s", err.msg);
  static const char *const positions[] = {"", "5", "1592"};
  for (size_t pi = 0; pi < 3; pi++) {
    char *out = NULL;
    const char *args[] = {"analyze",    "--model",     g_azckpt,
                          "--position", positions[pi], "--simulations",
                          "37",         "--json",      NULL};
    assert_int_equal(run_probs(&out, args), 0);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '\n') out[--n] = '\0';
    assert_int_equal(pb_json_validate(out), 0);
    assert_non_null(strstr(out, "\"algorithm\":\"alphazero\""));
    assert_non_null(strstr(out, "\"simulations\":37,"));
    pb_state_t s;
    assert_int_equal(g->parse(&s, positions[pi], &err), 0);
    float tp[9], tv;
    az_truth(m, &s, tp, &tv);
    double v = strtod(json_at(out, "v"), NULL);
    assert_true(v >= -1 && v <= 1);
    assert_true(fabs(v - tv) < 1e-5);
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s, legal), moves = 0, sum_visits = 0, most = -1;
    int most_visits = -1;
    double sum_p = 0;
    for (const char *c = json_at(out, "moves");
         (c = strstr(c, "\"move\":\""));) {
      int a = c[8] - '1';
      c += 9;
      double p = strtod(json_at(c, "p"), NULL);
      int visits = (int)strtol(json_at(c, "visits"), NULL, 10);
      assert_true(a >= 0 && a < 9 && tp[a] > 0);
      assert_true(p >= 0 && p <= 1 && fabs(p - tp[a]) < 1e-5);
      sum_p += p;
      sum_visits += visits;
      if (visits > most_visits) {
        most_visits = visits;
        most = a;
      }
      moves++;
    }
    assert_int_equal(moves, nl);
    if (fabs(sum_p - 1.0) > 1e-5) fail_msg("probabilities sum to %.7f", sum_p);
    assert_int_equal(sum_visits, 37);
    char spec[200];
    snprintf(spec, sizeof spec, "mcts:%s,N=37", g_azckpt);
    pb_agent_t *agent = pb_agent_new(g, spec, 1, &err);
    if (agent == NULL) fail_msg("%s", err.msg);
    assert_int_equal(pb_agent_act(agent, &s, &err), most);
    char want[32];
    snprintf(want, sizeof want, "\"best_mcts\":\"%d\"", most + 1);
    if (strstr(out, want) == NULL) fail_msg("no %s in %s", want, out);
    pb_agent_destroy(&agent);
    free(out);
  }
  pb_model_destroy(&m);
}

/* An AlphaZero checkpoint as text: the default 200 simulations, P, V1 and
 * visits per move; the PROBS-only options are refused. */
static void test_alphazero_text(void **state) {
  (void)state;
  char *out = NULL;
  const char *args[] = {"analyze",    "--model", g_azckpt,
                        "--position", "5",       NULL};
  assert_int_equal(run_probs(&out, args), 0);
  if (strstr(out, "alphazero), position") == NULL ||
      strstr(out, "value = ") == NULL || strstr(out, "move 1: P=") == NULL ||
      strstr(out, "move 5:") != NULL ||
      strstr(out, "best by policy: ") == NULL ||
      strstr(out, "MCTS (200 simulations): root value ") == NULL ||
      strstr(out, "best by MCTS (200 simulations): ") == NULL)
    fail_msg("alphazero analysis:\n%s", out);
  int visits = 0;
  for (const char *c = out; (c = strstr(c, "visits=")); c += 7)
    visits += (int)strtol(c + 7, NULL, 10);
  assert_int_equal(visits, 200);
  free(out);
}

/* The module itself: typed moves, results, boards, lines of moves. */
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

  uint8_t line[3] = {4, 0, 8};
  assert_int_equal(pb_analysis_line(t3, line, 3, buf, sizeof buf), 5);
  assert_string_equal(buf, "5 1 9");
}

/* The analyser: settings checked against the checkpoint's algorithm; a
 * PROBS checkpoint without searches; an AlphaZero one with MCTS (visits
 * summing to the simulations, probabilities to 1); a terminal position
 * refused. */
static void test_module_networks(void **state) {
  (void)state;
  pb_err_t err;
  pb_state_t s;
  const pb_game_t *t3 = &pb_game_tictactoe;
  assert_int_equal(t3->parse(&s, "5", &err), 0);
  pb_model_t *l = pb_model_open(g_ckpt, "cpu", NULL, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  pb_analysis_opts_t o;
  pb_analysis_defaults(&o);
  assert_int_equal(o.abnet, 1);
  assert_int_equal(o.E, 0);
  assert_true(o.ab.nodes == 1000);
  o.E = 5;
  o.M = 0;
  assert_null(pb_analysis_new(l, &o, &err));
  assert_int_equal(err.code, PB_EINVAL);
  o.E = 0;
  o.ab.nodes = 0; /* no budget at all */
  assert_null(pb_analysis_new(l, &o, &err));
  o.abnet = 0;
  pb_analysis_t *an = pb_analysis_new(l, &o, &err);
  assert_non_null(an);
  pb_analysis_eval_t ev;
  assert_int_equal(pb_analysis_eval(an, &s, &ev, &err), 0);
  assert_int_equal(ev.n_legal, 8);
  assert_int_equal(ev.has_beam, 0);
  assert_int_equal(ev.best_beam, -1);
  assert_int_equal(ev.has_abnet, 0);
  assert_int_equal(ev.best_abnet, -1);
  assert_int_equal(ev.alphazero, 0);
  assert_int_equal(t3->parse(&s, "14253", &err), 0);
  assert_int_equal(pb_analysis_eval(an, &s, &ev, &err), PB_EINVAL);
  pb_analysis_destroy(&an);
  pb_analysis_destroy(&an);
  assert_null(an);
  pb_model_destroy(&l);

  /* AlphaZero: no beam; MCTS's visits sum to the simulations, the
   * probabilities to 1. */
  l = pb_model_open(g_azckpt, "cpu", NULL, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  pb_analysis_defaults(&o);
  o.E = 5;
  o.M = 3;
  assert_null(pb_analysis_new(l, &o, &err));
  assert_int_equal(err.code, PB_EUNSUPP);
  o.E = 0;
  o.simulations = 0;
  assert_null(pb_analysis_new(l, &o, &err));
  assert_int_equal(err.code, PB_EINVAL);
  o.simulations = 64;
  an = pb_analysis_new(l, &o, &err);
  assert_non_null(an);
  assert_int_equal(t3->parse(&s, "15", &err), 0);
  assert_int_equal(pb_analysis_eval(an, &s, &ev, &err), 0);
  assert_int_equal(ev.alphazero, 1);
  assert_int_equal(ev.simulations, 64);
  int visits = 0;
  double p = 0;
  for (int i = 0; i < ev.n_legal; i++) {
    visits += ev.visits[ev.legal[i]];
    p += ev.p[ev.legal[i]];
  }
  assert_int_equal(visits, 64);
  assert_true(fabs(p - 1.0) < 1e-5);
  assert_true(ev.v >= -1 && ev.v <= 1);
  assert_true(ev.mcts_value >= -1 && ev.mcts_value <= 1);
  assert_true(ev.p[0] == 0 && ev.visits[4] == 0); /* taken cells */
  assert_true(ev.best_mcts >= 0 && ev.best_policy >= 0 && ev.best_q == -1);
  pb_analysis_destroy(&an);
  pb_model_destroy(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_default_search),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_alphazero_json),
      cmocka_unit_test(test_alphazero_text),
      cmocka_unit_test(test_module),
      cmocka_unit_test(test_module_networks),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
