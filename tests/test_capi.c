/* test_capi.c - the C API of libprobs.so (python/probs_capi.h) linked as
 * the Python package loads it: each function gives the module's answer
 * (perft, the model's V and Q as common/play/analysis.h computes them, an
 * agent's move, a match's counts, the engine's answers), every error comes
 * back as a code with a message, and everything made is freed (LSan; the
 * Python test, tests/test_python.sh, runs with leak checks off). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "model.h"
#include "probs_capi.h"
#include "sprt.h"

#define C4 PB_SOURCE_DIR "/data/models/connect4.pbck"
#define C4AZ PB_SOURCE_DIR "/data/models/connect4-alphazero.pbck"

static void test_abi_and_games(void **state) {
  (void)state;
  int sz[4];
  assert_int_equal(pb_capi_sizes(sz), 1);
  assert_int_equal(sz[0], (int)sizeof(pb_state_t));
  assert_int_equal(sz[1], (int)sizeof(pb_err_t));
  assert_int_equal(sz[2], PB_MAX_ACTIONS);
  assert_int_equal(sz[3], PB_ERR_MSG_MAX);
  assert_string_equal(pb_capi_err_name(PB_EILLEGAL), "PB_EILLEGAL");

  pb_err_t err;
  pb_err_clear(&err);
  assert_null(pb_capi_game("chess", &err));
  assert_int_equal(err.code, PB_EINVAL);
  assert_non_null(strstr(err.msg, "connect4"));
  const pb_game_t *g = pb_capi_game("connect4", &err);
  assert_string_equal(pb_capi_game_name(g), "connect4");
  int info[7];
  pb_capi_game_info(g, info);
  assert_int_equal(info[1], 7);
  assert_int_equal(info[3] * info[4], 42);

  pb_state_t s;
  pb_capi_reset(g, &s);
  assert_int_equal(pb_capi_perft(g, &s, 4), 2401);
  uint8_t legal[PB_MAX_ACTIONS];
  assert_int_equal(pb_capi_legal(g, &s, legal), 7);
  float r = 9;
  int done = 9;
  assert_int_equal(pb_capi_play(g, &s, 3, &r, &done, &err), 0);
  assert_true(r == 0 && done == 0);
  assert_int_equal(pb_capi_ply(g, &s), 1);
  assert_int_equal(pb_capi_side(g, &s), 'O');
  /* a full column: PB_EILLEGAL with a message, the state unchanged */
  assert_int_equal(pb_capi_parse(g, &s, "444444", &err), 0);
  pb_state_t before = s;
  assert_int_equal(pb_capi_play(g, &s, 3, &r, &done, &err), PB_EILLEGAL);
  assert_true(err.msg[0] != '\0');
  assert_memory_equal(&s, &before, sizeof s);
  int a = -1;
  assert_int_equal(pb_capi_parse_move(g, &s, " 5 ", &a, &err), 0);
  assert_int_equal(a, 4);
  assert_int_equal(pb_capi_parse_move(g, &s, "4", &a, &err), PB_EILLEGAL);
  char buf[1024];
  assert_int_equal(pb_capi_action_name(g, 6, buf, sizeof buf), 1);
  assert_string_equal(buf, "7");
  assert_int_equal(pb_capi_action_name(g, 7, buf, sizeof buf), PB_EINVAL);
  assert_true(pb_capi_render(g, &s, buf, sizeof buf) > 42);
  uint8_t packed[64];
  pb_state_t back;
  pb_capi_pack(g, &s, packed);
  assert_int_equal(pb_capi_unpack(g, &back, packed, (size_t)info[6], &err), 0);
  assert_memory_equal(&back, &s, sizeof s);
  int rc = pb_capi_unpack(g, &back, packed, 1, &err);
  assert_true(rc < 0);
  assert_int_equal(rc, err.code);
  /* X wins: terminal, the side to move lost */
  assert_int_equal(pb_capi_parse(g, &s, "1717171", &err), 0);
  assert_int_equal(pb_capi_terminal(g, &s, &r), 1);
  assert_true(r == -1.0f);
  float planes[3 * 42];
  pb_capi_encode(g, &s, planes);
}

static void test_model(void **state) {
  (void)state;
  pb_err_t err;
  pb_err_clear(&err);
  assert_null(pb_capi_model_open(PB_SOURCE_DIR "/no-such.pbck", "cpu", &err));
  assert_true(err.code < 0);
  assert_non_null(strstr(err.msg, "no-such.pbck"));

  pb_capi_model_t *m = pb_capi_model_open(C4, "cpu", &err);
  assert_non_null(m);
  const pb_game_t *g = pb_capi_model_game(m);
  assert_string_equal(pb_capi_game_name(g), "connect4");
  assert_int_equal(pb_capi_model_alphazero(m), 0);
  assert_string_equal(pb_capi_model_algorithm(m), "probs");
  assert_string_equal(pb_capi_model_kind(m), "vq");
  pb_state_t s[2];
  assert_int_equal(pb_capi_parse(g, &s[0], "4453", &err), 0);
  assert_int_equal(pb_capi_parse(g, &s[1], "44", &err), 0);
  float v[2], q[14], lg[14];
  assert_int_equal(pb_capi_model_value(m, s, 2, v, &err), 0);
  assert_int_equal(pb_capi_model_q(m, s, 2, q, &err), 0);
  assert_int_equal(pb_capi_model_logits(m, s, 2, lg, &err), 0);
  assert_memory_equal(q, lg, sizeof q);
  assert_int_equal(pb_capi_model_value(m, s, -1, v, &err), PB_EINVAL);

  /* the numbers of analysis.h (`probs analyze`) on the same model */
  pb_model_t *ref = pb_model_open(C4, "cpu", NULL, &err);
  assert_non_null(ref);
  pb_analysis_t *an = pb_analysis_new(ref, NULL, &err);
  assert_non_null(an);
  pb_analysis_eval_t ev;
  assert_int_equal(pb_analysis_eval(an, &s[0], &ev, &err), 0);
  assert_float_equal(v[0], ev.v, 1e-5);
  for (int i = 0; i < ev.n_legal; i++)
    assert_float_equal(q[ev.legal[i]], ev.q[ev.legal[i]], 1e-5);
  pb_analysis_destroy(&an);
  pb_model_destroy(&ref);

  /* alpha-beta as the analyser searches */
  int mv = -1, dp = 0, solved = 0, pvn = 0;
  float val = 9;
  uint64_t evals = 0;
  uint8_t pv[64];
  assert_int_equal(pb_capi_model_search(m, &s[0], 200, 0, &mv, &val, &dp,
                                        &solved, &evals, pv, &pvn, &err),
                   0);
  assert_true(mv >= 0 && mv < 7 && fabsf(val) <= 1 && dp >= 1);
  assert_true(evals > 0 && evals <= 200 + 7);
  assert_true(pvn >= 1 && pv[0] == mv);

  /* an agent over it, with a spec budget and a time budget */
  pb_capi_agent_t *ag = pb_capi_agent_new(g, "abnet,nodes=100", C4, 1, &err);
  assert_non_null(ag);
  assert_non_null(strstr(pb_capi_agent_name(ag), "connect4.pbck"));
  assert_int_equal(pb_capi_agent_scales(ag), 1);
  int a = pb_capi_agent_act(ag, &s[0], -1, &err);
  assert_true(a >= 0 && a < 7);
  assert_true(pb_capi_agent_evaluations(ag) > 0);
  a = pb_capi_agent_act(ag, &s[0], 30, &err);
  assert_true(a >= 0 && a < 7);
  assert_non_null(strstr(pb_capi_agent_last_spec(ag), "time="));
  int many[2];
  assert_int_equal(pb_capi_agent_act_many(ag, s, 2, 0, many, &err), 0);
  pb_capi_agent_close(ag);
  pb_capi_agent_close(NULL);
  assert_null(pb_capi_agent_new(g, "nonsense", NULL, 1, &err));
  assert_true(err.code < 0);
  pb_capi_model_close(m);
  pb_capi_model_close(NULL);

  m = pb_capi_model_open(C4AZ, "cpu", &err);
  assert_non_null(m);
  assert_int_equal(pb_capi_model_alphazero(m), 1);
  assert_string_equal(pb_capi_model_kind(m), "pv");
  assert_int_equal(pb_capi_model_value(m, s, 2, v, &err), 0);
  assert_true(fabsf(v[0]) <= 1 && fabsf(v[1]) <= 1);
  assert_int_equal(pb_capi_model_logits(m, s, 2, lg, &err), 0);
  assert_int_equal(pb_capi_model_q(m, s, 2, q, &err), PB_EUNSUPP);
  assert_int_equal(pb_capi_model_search(m, &s[0], 200, 0, &mv, &val, &dp,
                                        &solved, &evals, pv, &pvn, &err),
                   PB_EUNSUPP);
  assert_non_null(strstr(err.msg, "alphazero"));
  pb_capi_model_close(m);
}

static void test_match(void **state) {
  (void)state;
  pb_err_t err;
  pb_err_clear(&err);
  const pb_game_t *g = pb_capi_game("tictactoe", &err);
  int out[PB_CAPI_M_FIELDS];
  double elo[3], llr = 0;
  int8_t oc[6];
  assert_int_equal(
      pb_capi_match(g, "alphabeta:9", "random", 6, 1, 2, 0,
                    "5\n# a comment\n1\n", NULL, out, elo, &llr, oc, &err),
      0);
  assert_int_equal(out[PB_CAPI_M_GAMES], 6);
  assert_int_equal(out[PB_CAPI_M_LOSSES], 0);
  int wins = 0;
  for (int i = 0; i < 6; i++) wins += oc[i] == 1;
  assert_int_equal(wins, out[PB_CAPI_M_WINS]);
  assert_true(elo[1] <= elo[0] && elo[0] <= elo[2]);
  const double sprt[4] = {0, 300, 0.05, 0.05};
  assert_int_equal(pb_capi_match(g, "alphabeta:9", "random", 500, 1, 2, 0, NULL,
                                 sprt, out, elo, &llr, NULL, &err),
                   0);
  assert_int_equal(out[PB_CAPI_M_SPRT], PB_SPRT_H1);
  assert_true(out[PB_CAPI_M_GAMES] < 500);
  int rc = pb_capi_match(g, "random", "random", 2, 1, 1, 0, "55\n", NULL, out,
                         elo, &llr, NULL, &err);
  assert_true(rc < 0);
  assert_non_null(strstr(err.msg, "openings"));
  rc = pb_capi_match(g, "random", "nonsense", 2, 1, 1, 0, NULL, NULL, out, elo,
                     &llr, NULL, &err);
  assert_true(rc < 0);
  assert_non_null(strstr(err.msg, "nonsense"));
}

typedef struct {
  int n;
  char last[4096];
} answers_t;

static int collect(void *ctx, const char *line, size_t len) {
  answers_t *a = ctx;
  assert_int_equal(strlen(line), len);
  a->n++;
  snprintf(a->last, sizeof a->last, "%s", line);
  return 0;
}

static void test_engine(void **state) {
  (void)state;
  pb_err_t err;
  pb_err_clear(&err);
  pb_capi_model_t *m = pb_capi_model_open(C4, "cpu", &err);
  assert_non_null(m);
  answers_t ans = {0};
  assert_null(pb_capi_engine_new(m, 0, collect, &ans, &err));
  pb_capi_engine_t *e = pb_capi_engine_new(m, 8, collect, &ans, &err);
  assert_non_null(e);
  const char *q = "{\"id\":\"x\",\"position\":\"4453\"}";
  assert_int_equal(pb_capi_engine_query(e, q, strlen(q), &err), 0);
  assert_int_equal(pb_capi_engine_waiting(e), 1);
  assert_int_equal(pb_capi_engine_flush(e, &err), 0);
  assert_int_equal(ans.n, 1);
  assert_non_null(strstr(ans.last, "\"id\":\"x\""));
  assert_non_null(strstr(ans.last, "\"v\":"));
  q = "{\"id\":1,\"moves\":[\"9\"]}";
  assert_int_equal(pb_capi_engine_query(e, q, strlen(q), &err), 0);
  assert_int_equal(ans.n, 2);
  assert_non_null(strstr(ans.last, "\"error\""));
  pb_capi_engine_close(e);
  pb_capi_engine_close(NULL);
  pb_capi_model_close(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_abi_and_games),
      cmocka_unit_test(test_model),
      cmocka_unit_test(test_match),
      cmocka_unit_test(test_engine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
