/* test_analysis_engine.c - the batch analysis engine (common/play/engine.h,
 * docs/analysis.md) driven by scripts of good and bad queries: every query
 * gets one line, a bad one an error naming its field while the engine
 * goes on; the values are the networks' (checked against
 * common/play/analysis.h, one position at a time) and the moves the
 * agents' own; a batch makes one network call per kind of value whatever
 * its size; hostile lines never crash it; and `probs analysis` run as a
 * user runs it, with a script on stdin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "agent.h"
#include "analysis.h"
#include "config.h"
#include "engine.h"
#include "json.h"
#include "jsonread.h"
#include "learn.h"
#include "model.h"
#include "proc.h"
#include "rng.h"

#include "engine_fixtures.h"
#include "t3_fixtures.h"

#define BIN PB_BIN_DIR

static int setup(void **state) {
  (void)state;
  return t3_setup("engine");
}

static int teardown(void **state) {
  (void)state;
  return t3_teardown();
}

/* The value of move `name` in the answer's "moves" under `key`. */
static double move_value(const pb_jval_t *a, const char *name,
                         const char *key) {
  const pb_jval_t *mv = pb_jval_get(a, "moves");
  assert_non_null(mv);
  for (size_t i = 0; i < pb_jval_count(mv); i++) {
    const pb_jval_t *m = pb_jval_at(mv, i);
    if (strcmp(str_of(m, "move"), name) == 0) {
      const pb_jval_t *v = pb_jval_get(m, key);
      return v ? pb_jval_num(v) : NAN;
    }
  }
  return NAN;
}

/* The answer to `id` holds the values pb_analysis gives for position pos
 * (to 1e-5: a batch may sum in another order than a single position). */
static void assert_values(fix_t *f, const char *id, const char *pos) {
  const pb_game_t *g = pb_model_game(f->m);
  pb_state_t s;
  pb_err_t err;
  assert_int_equal(g->parse(&s, pos, &err), 0);
  pb_analysis_opts_t o;
  pb_analysis_defaults(&o);
  o.abnet = 0;
  o.simulations = 1;
  pb_analysis_t *an = pb_analysis_new(f->m, &o, &err);
  if (an == NULL) fail_msg("%s", err.msg);
  pb_analysis_eval_t ev;
  assert_int_equal(pb_analysis_eval(an, &s, &ev, &err), 0);
  pb_analysis_destroy(&an);
  const pb_jval_t *a = answer(f, id);
  if (pb_jval_get(a, "error")) fail_msg("%s: %s", id, str_of(a, "error"));
  int64_t ply = -1;
  assert_int_equal(pb_jval_int(pb_jval_get(a, "ply"), 0, 9, &ply), 0);
  assert_int_equal(ply, g->ply(&s));
  char side[2] = {pb_analysis_side(g, &s), '\0'};
  assert_string_equal(str_of(a, "to_move"), side);
  assert_float_equal(pb_jval_num(pb_jval_get(a, "v")), ev.v, 1e-5);
  assert_int_equal(pb_jval_count(pb_jval_get(a, "moves")), ev.n_legal);
  for (int i = 0; i < ev.n_legal; i++) {
    int act = ev.legal[i];
    char name[16];
    g->action_name(act, name, sizeof name);
    if (ev.alphazero)
      assert_float_equal(move_value(a, name, "policy"), ev.p[act], 1e-5);
    else
      assert_float_equal(move_value(a, name, "q"), ev.q[act], 1e-5);
    assert_float_equal(move_value(a, name, "v1"), ev.v1[act], 1e-5);
  }
}

/* ---- the tests ----------------------------------------------------------- */

/* A script of good and bad queries: one line each, errors name their
 * field (and carry the id when there is one), the good ones the
 * networks' values, and the engine goes on after each bad one. */
static void test_script(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, g_ckpt, 64);
  static const char *const script[] = {
      "{\"id\":\"start\"}",
      "{\"id\":\"m\",\"moves\":[\"5\",\"1\"]}",
      "{\"id\":\"p\",\"position\":\"159\"}",
      "not json",
      "[\"id\",\"x\"]",
      "{\"moves\":[\"5\"]}",
      "{\"id\":[1],\"moves\":[\"5\"]}",
      "{\"id\":\"dup\",\"id\":\"dup\"}",
      "{\"id\":\"unknown\",\"movs\":[\"5\"]}",
      "{\"id\":\"notmove\",\"moves\":[\"5\",\"x\"]}",
      "{\"id\":\"taken\",\"moves\":[\"5\",\"5\"]}",
      "{\"id\":\"movenum\",\"moves\":[5]}",
      "{\"id\":\"movesobj\",\"moves\":{\"a\":1}}",
      "{\"id\":\"both\",\"moves\":[\"5\"],\"position\":\"5\"}",
      "{\"id\":\"badpos\",\"position\":\"55\"}",
      "{\"id\":\"posnul\",\"position\":\"5\\u00001\"}",
      "{\"id\":\"after\",\"position\":\"1425367\"}",
      "{\"id\":\"over\",\"position\":\"14253\"}",
      "{\"id\":\"rep\",\"position\":\"5\",\"report\":[\"v\",\"x\"]}",
      "{\"id\":\"repstr\",\"report\":\"v\"}",
      "{\"id\":\"policy\",\"report\":[\"policy\"]}",
      "{\"id\":\"agentnomove\",\"report\":[\"v\"],\"agent\":\"random\"}",
      "{\"id\":\"seednomove\",\"report\":[\"v\"],\"seed\":3}",
      "{\"id\":\"agentnum\",\"agent\":7}",
      "{\"id\":\"agentbad\",\"agent\":\"nosuch\"}",
      "{\"id\":\"agentgtp\",\"agent\":\"gtp:/bin/sh\"}",
      "{\"id\":\"agentfile\",\"agent\":\"checkpoint:/nonexistent.pbck\"}",
      "{\"id\":\"budgetkind\",\"agent\":\"random\",\"budget\":3}",
      "{\"id\":\"budgetrange\",\"agent\":\"lookahead\",\"budget\":9}",
      "{\"id\":\"budgetfrac\",\"agent\":\"beam\",\"budget\":2.5}",
      "{\"id\":\"budgettwice\",\"agent\":\"beam,E=3\",\"budget\":4}",
      "{\"id\":\"seedneg\",\"agent\":\"random\",\"seed\":-1}",
      "{\"id\":\"v only\",\"position\":\"5\",\"report\":[\"v\"]}",
      "{\"id\":7,\"position\":\"51\",\"report\":[]}",
      "{\"id\":\"last\",\"moves\":[\"1\",\"2\",\"3\",\"4\"]}",
      "   ",
  };
  int nq = (int)(sizeof script / sizeof script[0]);
  for (int i = 0; i < nq; i++) query(&f, script[i]);
  /* Errors were answered at once; the good ones wait for the flush. */
  assert_int_equal(pb_engine_waiting(f.e), 7);
  flush(&f);
  assert_int_equal(f.n, nq - 1); /* the blank line is not a query */

  assert_values(&f, "start", "");
  assert_values(&f, "m", "51");
  assert_values(&f, "p", "159");
  assert_values(&f, "last", "1234");
  const pb_jval_t *a = answer(&f, "v only");
  assert_non_null(pb_jval_get(a, "v"));
  assert_null(pb_jval_get(a, "moves"));
  assert_null(pb_jval_get(a, "move"));
  a = answer(&f, "over");
  assert_string_equal(str_of(a, "result"), "X wins");
  assert_null(pb_jval_get(a, "v"));
  /* A numeric id comes back as a number; report [] gives ply and side
   * (and KataGo's fields after them). */
  const char *want7 = "{\"id\":7,\"ply\":2,\"to_move\":\"X\",\"turnNumber\":2,";
  int found = 0;
  for (int i = 0; i < f.n; i++)
    if (strncmp(f.line[i], want7, strlen(want7)) == 0)
      found++;
  assert_int_equal(found, 1);

  /* The errors with no id. */
  int no_id = 0;
  for (int i = 0; i < f.n; i++)
    if (strncmp(f.line[i], "{\"id\":null,", 11) == 0) no_id++;
  assert_int_equal(no_id, 5);
  assert_error(&f, "notmove", "moves", "moves[1]: 'x' is not a move");
  assert_error(&f, "taken", "moves", "moves[1]: move '5' is not legal");
  assert_error(&f, "movenum", "moves", "moves[0] is a number");
  assert_error(&f, "movesobj", "moves", "moves is an object");
  assert_error(&f, "unknown", "movs", "unknown field \"movs\"");
  assert_error(&f, "both", "position", "not both");
  assert_error(&f, "badpos", "position", "bad position: tictactoe");
  assert_error(&f, "posnul", "position", "holding NUL");
  assert_error(&f, "after", "position", "bad position");
  assert_error(&f, "rep", "report", "report[1] is not one of");
  assert_error(&f, "repstr", "report", "report is a string");
  assert_error(&f, "policy", "report", "no policy");
  assert_error(&f, "agentnomove", "agent", "report has no \"move\"");
  assert_error(&f, "seednomove", "seed", "report has no \"move\"");
  assert_error(&f, "agentnum", "agent", "agent is a number");
  assert_error(&f, "agentbad", "agent", "agent: ");
  assert_error(&f, "agentgtp", "agent", "gtp engines");
  assert_error(&f, "agentfile", "agent", "nonexistent.pbck");
  assert_error(&f, "budgetkind", "budget", "takes no budget");
  assert_error(&f, "budgetrange", "budget", "out of range for lookahead");
  assert_error(&f, "budgetfrac", "budget", "budget must be an integer");
  assert_error(&f, "budgettwice", "budget", "sets E already");
  assert_error(&f, "seedneg", "seed", "seed must be");
  pb_engine_stats_t st;
  pb_engine_stats(f.e, &st);
  assert_int_equal(st.queries, (unsigned long long)nq - 1);
  assert_int_equal(st.errors, (unsigned long long)nq - 1 - 7);
  assert_int_equal(st.batches, 1);
  fix_close(&f);
}

/* Many queries in one batch: one network call for V, one for Q, one for
 * the children, whatever their number; one position at a time makes
 * three per query. The values are the same. */
static void test_batched(void **state) {
  (void)state;
  static const char *const pos[] = {
      "",   "1",   "2",   "3",   "4",    "5",    "6",    "7",
      "8",  "9",   "12",  "13",  "15",   "19",   "51",   "53",
      "59", "123", "159", "357", "1234", "9876", "5137", "2468"};
  int n = (int)(sizeof pos / sizeof pos[0]);
  for (int pass = 0; pass < 2; pass++) {
    fix_t f;
    fix_open(&f, g_ckpt, pass == 0 ? 64 : 1);
    char line[128], id[16];
    for (int i = 0; i < n; i++) {
      snprintf(line, sizeof line, "{\"id\":\"q%d\",\"position\":\"%s\"}", i,
               pos[i]);
      query(&f, line);
    }
    flush(&f);
    assert_int_equal(f.n, n);
    pb_engine_stats_t st;
    pb_engine_stats(f.e, &st);
    if (pass == 0) {
      assert_int_equal(st.batches, 1);
      assert_true(st.net_calls <= 3);
    } else {
      assert_int_equal(st.batches, n);
      assert_true(st.net_calls >= (unsigned long long)n);
    }
    for (int i = 0; i < n; i++) {
      snprintf(id, sizeof id, "q%d", i);
      assert_values(&f, id, pos[i]);
    }
    fix_close(&f);
  }
}

/* A full batch is answered without a flush, the rest when flushed, in the
 * order the queries came. */
static void test_batch_full(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, g_ckpt, 4);
  char line[64];
  for (int i = 0; i < 10; i++) {
    snprintf(line, sizeof line, "{\"id\":\"%d\",\"position\":\"%d\"}", i,
             i % 9 + 1);
    query(&f, line);
    assert_int_equal(f.n, (i + 1) / 4 * 4);
  }
  assert_int_equal(pb_engine_waiting(f.e), 2);
  flush(&f);
  assert_int_equal(f.n, 10);
  for (int i = 0; i < 10; i++) {
    snprintf(line, sizeof line, "{\"id\":\"%d\",", i);
    assert_int_equal(strncmp(f.line[i], line, strlen(line)), 0);
  }
  pb_err_t err;
  assert_int_equal(pb_engine_refuse(f.e, "too long", &err), 0);
  assert_string_equal(f.line[10], "{\"id\":null,\"error\":\"too long\"}");
  fix_close(&f);
}

/* The move an agent of `spec` (the model's path filled in) plays in pos
 * with seed `seed`: what a fresh agent plays. */
static int agent_move(const char *ckpt, const char *spec, const char *pos,
                      uint64_t seed) {
  pb_err_t err;
  char full[512];
  pb_agent_spec_with_model(spec, ckpt, full, sizeof full);
  const pb_game_t *g = &pb_game_tictactoe;
  pb_agent_t *a = pb_agent_new(g, full, 0, &err);
  if (a == NULL) fail_msg("%s: %s", full, err.msg);
  pb_state_t s;
  assert_int_equal(g->parse(&s, pos, &err), 0);
  int mv = -1;
  assert_int_equal(pb_agent_act_many(a, &s, 1, seed, &mv, &err), 0);
  pb_agent_destroy(&a);
  return mv;
}

/* Moves: the default agent (abnet), specs with and without budgets, the
 * batched network kinds and the baselines with their seeds; more specs
 * in one batch than the engine keeps agents. Each move is the one a
 * fresh agent of the same spec plays. */
static void test_agents(void **state) {
  (void)state;
  static const struct {
    const char *agent; /* NULL: the default */
    int budget;        /* 0: none */
    const char *spec;  /* what the answer names */
  } agents[] = {{NULL, 0, "abnet"},
                {NULL, 40, "abnet,nodes=40"},
                {"checkpoint", 0, "checkpoint"},
                {"value", 0, "value"},
                {"beam", 20, "beam,E=20"},
                {"beam,M=2", 0, "beam,M=2"},
                {"mcts", 30, "mcts,N=30"},
                {"random", 0, "random"},
                {"lookahead", 2, "lookahead:2"},
                {"alphabeta:3", 0, "alphabeta:3"},
                {"uct", 50, "uct:50"}};
  static const char *const pos[] = {"", "5", "51", "1593"};
  const int na = (int)(sizeof agents / sizeof agents[0]), np = 4;
  assert_true(na > PB_ENGINE_AGENTS);
  fix_t f;
  fix_open(&f, g_ckpt, 64);
  char line[256], part[96];
  for (int k = 0; k < na; k++)
    for (int p = 0; p < np; p++) {
      snprintf(line, sizeof line,
               "{\"id\":\"a%d-%d\",\"position\":\"%s\",\"report\":[\"move\"]"
               ",\"seed\":%d",
               k, p, pos[p], 10 + p);
      if (agents[k].agent != NULL) {
        snprintf(part, sizeof part, ",\"agent\":\"%s\"", agents[k].agent);
        strcat(line, part);
      }
      if (agents[k].budget > 0) {
        snprintf(part, sizeof part, ",\"budget\":%d", agents[k].budget);
        strcat(line, part);
      }
      strcat(line, "}");
      query(&f, line);
    }
  flush(&f);
  assert_int_equal(f.n, na * np);
  char id[32], want[16];
  for (int k = 0; k < na; k++)
    for (int p = 0; p < np; p++) {
      snprintf(id, sizeof id, "a%d-%d", k, p);
      const pb_jval_t *a = answer(&f, id);
      if (pb_jval_get(a, "error")) fail_msg("%s: %s", id, str_of(a, "error"));
      assert_string_equal(str_of(a, "agent"), agents[k].spec);
      int mv = agent_move(g_ckpt, agents[k].spec, pos[p], 10 + (uint64_t)p);
      snprintf(want, sizeof want, "%d", mv + 1);
      a = answer(&f, id);
      assert_string_equal(str_of(a, "move"), want);
    }
  fix_close(&f);
}

/* An AlphaZero checkpoint: the value head and the policy (summing to 1
 * over the legal moves), "q" refused, MCTS the default agent. */
static void test_alphazero(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, g_azckpt, 64);
  query(&f, "{\"id\":\"s\"}");
  query(&f, "{\"id\":\"p\",\"position\":\"59\"}");
  query(&f, "{\"id\":\"q\",\"report\":[\"q\"]}");
  /* budget alone asks for the default agent's move beside the values */
  query(&f, "{\"id\":\"mv\",\"position\":\"5\",\"budget\":25}");
  flush(&f);
  assert_int_equal(f.n, 4);
  assert_values(&f, "s", "");
  assert_values(&f, "p", "59");
  const pb_jval_t *a = answer(&f, "p");
  const pb_jval_t *mv = pb_jval_get(a, "moves");
  double sum = 0;
  for (size_t i = 0; i < pb_jval_count(mv); i++)
    sum += pb_jval_num(pb_jval_get(pb_jval_at(mv, i), "policy"));
  assert_float_equal(sum, 1.0, 1e-5);
  assert_error(&f, "q", "report", "no Q");
  a = answer(&f, "mv");
  assert_string_equal(str_of(a, "agent"), "mcts,N=25");
  char want[16];
  snprintf(want, sizeof want, "%d",
           agent_move(g_azckpt, "mcts,N=25", "5", 0) + 1);
  a = answer(&f, "mv");
  assert_string_equal(str_of(a, "move"), want);
  assert_non_null(pb_jval_get(a, "v"));
  assert_int_equal(pb_jval_count(pb_jval_get(a, "moves")), 8);
  fix_close(&f);
}

/* Hostile lines: random bytes and mutated queries. Each but a blank one
 * gets exactly one answer, always valid JSON (collect checks), and the
 * engine still answers a good query after them. */
static void test_hostile(void **state) {
  (void)state;
  fix_t f;
  fix_open(&f, g_ckpt, 8);
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  static const char *const seeds[] = {
      "{\"id\":\"h\",\"moves\":[\"5\",\"1\"],\"report\":[\"v\",\"move\"],"
      "\"agent\":\"beam\",\"budget\":5,\"seed\":1}",
      "{\"id\":1,\"position\":\"159\",\"agent\":\"lookahead:1\"}"};
  char buf[256];
  int n = 0;
  for (int it = 0; it < 600; it++) {
    size_t len;
    if (it % 4 == 0) {
      len = pb_rng_below(&rng, 64);
      for (size_t i = 0; i < len; i++) buf[i] = (char)pb_rng_below(&rng, 256);
    } else {
      const char *s = seeds[it % 2];
      len = strlen(s);
      memcpy(buf, s, len);
      for (int e = 0; e < 1 + it % 3; e++)
        buf[pb_rng_below(&rng, (uint32_t)len)] =
            it % 3 ? "{}[]\",:0123456789-.eE\\u"[pb_rng_below(&rng, 24)]
                   : (char)pb_rng_below(&rng, 256);
    }
    pb_err_t err;
    assert_int_equal(pb_engine_query(f.e, buf, len, &err), 0);
    size_t k = 0;
    while (k < len && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\r')) k++;
    n += k < len; /* a blank line is no query */
  }
  flush(&f);
  assert_int_equal(f.n, n);
  query(&f, "{\"id\":\"fine\"}");
  flush(&f);
  assert_values(&f, "fine", "");
  fix_close(&f);
}

/* Writes text to path. */
static void write_file(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
}

/* Runs `probs analysis ARGS < input` (args: up to 4, NULL-terminated):
 * returns its exit status, stdout in *out and stderr in *errout. */
static int run_analysis(const char *input, const char *const *args, char **out,
                        char **errout) {
  char in[128], outf[128], errf[128];
  snprintf(in, sizeof in, "%s/in.jsonl", g_dir);
  snprintf(outf, sizeof outf, "%s/out.jsonl", g_dir);
  snprintf(errf, sizeof errf, "%s/err.log", g_dir);
  write_file(in, input);
  unlink(outf);
  unlink(errf);
  char *argv[16];
  int n = 0;
  argv[n++] = "/bin/sh";
  argv[n++] = "-c";
  argv[n++] = "in=$1; err=$2; shift 2; exec \"$@\" < \"$in\" 2> \"$err\"";
  argv[n++] = "sh";
  argv[n++] = in;
  argv[n++] = errf;
  argv[n++] = BIN "/probs";
  argv[n++] = "analysis";
  for (; *args != NULL && n < 15; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  pid_t pid = tp_spawn(argv, outf);
  assert_true(pid > 0);
  int st = tp_wait(pid, 300);
  assert_true(st >= 0 && WIFEXITED(st));
  *out = tp_slurp(outf);
  *errout = tp_slurp(errf);
  assert_non_null(*out);
  assert_non_null(*errout);
  return WEXITSTATUS(st);
}

/* Issue 46: a query of the largest budget cannot hold the engine. Under a
 * time bound of 300 ms, abnet with 10^8 evaluations (hours unbounded)
 * answers with the deepest iteration it completed, MCTS and BPIP of
 * 100000 are stopped with an error naming the bound, and the query
 * after them is answered as usual; through the command (--time-limit) as
 * well. Connect Four's shipped model: a search that does not end early. */
static void test_time_bound(void **state) {
  (void)state;
  const char *c4 = PB_SOURCE_DIR "/data/models/connect4.pbck";
  fix_t f;
  fix_open(&f, c4, 64);
  pb_err_t err;
  assert_int_equal(pb_engine_set_time_bound(f.e, -1), PB_EINVAL);
  assert_int_equal(pb_engine_set_time_bound(f.e, 300), 0);
  query(&f, "{\"id\":\"ab\",\"report\":[\"move\"],\"budget\":100000000}");
  flush(&f); /* one at a time: each bounded on its own */
  query(&f, "{\"id\":\"mc\",\"report\":[\"move\"],\"agent\":\"mcts\","
            "\"budget\":100000}");
  query(&f, "{\"id\":\"bp\",\"report\":[\"move\"],\"agent\":\"bpip\","
            "\"budget\":100000}");
  query(&f, "{\"id\":\"next\",\"position\":\"44\",\"report\":[\"v\",\"move\"]"
            ",\"agent\":\"checkpoint\"}");
  flush(&f);
  const pb_jval_t *a = answer(&f, "ab");
  if (pb_jval_get(a, "error")) fail_msg("ab: %s", str_of(a, "error"));
  assert_non_null(str_of(a, "move"));
  assert_string_equal(str_of(a, "agent"), "abnet,nodes=100000000");
  assert_error(&f, "mc", "agent", "time bound of 300 ms");
  assert_error(&f, "bp", "agent", "time bound of 300 ms");
  a = answer(&f, "next");
  if (pb_jval_get(a, "error")) fail_msg("next: %s", str_of(a, "error"));
  assert_non_null(str_of(a, "move"));
  assert_non_null(pb_jval_get(a, "v"));
  (void)err;
  fix_close(&f);

  const char *args[] = {"--model", c4, "--time-limit", "200", NULL};
  char *out, *errs;
  assert_int_equal(
      run_analysis("{\"id\":1,\"report\":[\"move\"],\"budget\":100000000}\n"
                   "{\"id\":2,\"report\":[\"move\"],\"agent\":\"mcts\","
                   "\"budget\":100000}\n"
                   "{\"id\":3,\"position\":\"4\"}\n",
                   args, &out, &errs),
      0);
  if (strstr(out, "{\"id\":1,\"ply\":0,\"to_move\":\"X\",\"move\":") == NULL ||
      strstr(out, "{\"id\":2,\"error\":\"the search passed its time bound of "
                  "200 ms") == NULL ||
      strstr(out, "{\"id\":3,\"ply\":1,") == NULL)
    fail_msg("%s", out);
  assert_non_null(strstr(errs, "time limit 200 ms"));
  free(out);
  free(errs);
}

/* The command: a script on stdin answered line by line on stdout (a line
 * too long refused with a null id, CRLF and an unended last line
 * accepted), exit 0; bad command lines and models exit 2 with one line. */
static void test_command(void **state) {
  (void)state;
  size_t big = PB_ENGINE_MAX_LINE + 100;
  char *script = malloc(big + 512);
  assert_non_null(script);
  strcpy(script,
         "{\"id\":\"a\",\"position\":\"5\"}\r\n"
         "{\"id\":\"b\",\"moves\":[\"5\",\"5\"]}\n"
         "{\"id\":\"c\",\"report\":[\"move\"],\"agent\":\"checkpoint\"}\n"
         "\n");
  size_t at = strlen(script);
  memset(script + at, 'x', big);
  strcpy(script + at + big, "\n{\"id\":\"d\",\"position\":\"19\"}");
  const char *args[] = {"--model", g_ckpt, "--batch", "2", NULL};
  char *out, *err;
  assert_int_equal(run_analysis(script, args, &out, &err), 0);
  free(script);
  int lines = 0;
  for (const char *p = out; *p; p++) lines += *p == '\n';
  if (lines != 5) fail_msg("%d lines:\n%s", lines, out);
  assert_non_null(
      strstr(out, "{\"id\":\"a\",\"ply\":1,\"to_move\":\"O\",\"v\":"));
  assert_non_null(strstr(out,
                         "{\"id\":\"b\",\"error\":\"moves[1]: move '5' "
                         "is not legal here"));
  assert_non_null(strstr(out, "\"field\":\"moves\"}\n"));
  assert_non_null(
      strstr(out, "{\"id\":\"c\",\"ply\":0,\"to_move\":\"X\",\"move\":"));
  assert_non_null(strstr(out, "{\"id\":null,\"error\":\"line too long"));
  assert_non_null(strstr(out, "{\"id\":\"d\",\"ply\":2,"));
  assert_non_null(strstr(err, "probs analysis: tictactoe"));
  free(out);
  free(err);

  char missing[160];
  snprintf(missing, sizeof missing, "%s/none.pbck", g_dir);
  const struct {
    const char *args[5];
    const char *msg;
  } bad[] = {{{"--model", missing, NULL}, "none.pbck"},
             {{"--model", g_ckpt, "--batch", "0", NULL}, "bad --batch '0'"},
             {{"--model", g_ckpt, "--game", "othello", NULL}, "not both"},
             {{"--game", "chess", NULL}, "unknown game 'chess'"},
             {{"--time-limit", "-5", NULL}, "bad --time-limit '-5'"},
             {{"--frobnicate", NULL}, "--frobnicate"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(run_analysis("{\"id\":1}\n", bad[i].args, &out, &err), 2);
    assert_string_equal(out, "");
    if (strstr(err, bad[i].msg) == NULL)
      fail_msg("\"%s\" not in: %s", bad[i].msg, err);
    free(out);
    free(err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_script),
      cmocka_unit_test(test_batched),
      cmocka_unit_test(test_batch_full),
      cmocka_unit_test(test_agents),
      cmocka_unit_test(test_alphazero),
      cmocka_unit_test(test_hostile),
      cmocka_unit_test_teardown(test_time_bound, tp_teardown),
      cmocka_unit_test_teardown(test_command, tp_teardown),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
