/* test_algos.c - the algorithms as data (common/run/algos.h): the rows, the
 * schema's `algorithm` enum and the tables of functions of common/algo
 * agree; a config's row drives its checks; a table of a test's own (the
 * pb_algos_find_in hook) takes a fourth row that the built-in table does
 * not see; each row's agent plays a checkpoint of its algorithm, whose file
 * records the row's family. That no code outside the algorithm modules branches
 * on a name: tests/test_algo_names.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "agent.h"
#include "algo.h"
#include "algos.h"
#include "config.h"
#include "learn.h"
#include "model.h"
#include "proc.h"

/* The values of the schema's `algorithm` enum, as --help lists them, into
 * buf ("probs|alphazero|td"). */
static void schema_names(char *buf, size_t n) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  pb_config_print_keys(f);
  fclose(f);
  const char *line = strstr(text, "\n  algorithm ");
  assert_non_null(line);
  const char *next = strchr(line + 1, '\n'); /* the default and range line */
  assert_non_null(next);
  const char *end = strchr(next + 1, '\n');
  assert_non_null(end);
  /* the longest run of [a-z0-9_|] with a '|' on that line */
  buf[0] = '\0';
  for (const char *p = next + 1; p < end; p++) {
    size_t k = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_|");
    if (k > strlen(buf) && memchr(p, '|', k) != NULL && k < n)
      snprintf(buf, n, "%.*s", (int)k, p);
    if (k > 0) p += k - 1;
  }
  free(text);
}

/* Every row has its table of functions pointing to it, its name is a value
 * of the schema's enum and in the same order, its section has keys, and a
 * config naming it finds it. */
static void test_rows(void **state) {
  (void)state;
  char names[256], want[256] = "";
  schema_names(names, sizeof names);
  assert_true(pb_algos_count() >= 3);
  assert_null(pb_algos_at(pb_algos_count()));
  char *keys = NULL;
  size_t klen = 0;
  FILE *f = open_memstream(&keys, &klen);
  assert_non_null(f);
  pb_config_print_keys(f);
  fclose(f);
  for (size_t i = 0; i < pb_algos_count(); i++) {
    const pb_algo_data_t *a = pb_algos_at(i);
    assert_non_null(a);
    assert_ptr_equal(pb_algos_find(a->name), a);
    const pb_algo_t *fns = pb_algo_by_name(a->name);
    if (fns == NULL) fail_msg("row '%s' has no table in common/algo", a->name);
    assert_ptr_equal(fns->data, a);
    assert_string_equal(pb_nets_name(a->nets),
                        pb_nets_name(pb_nets_by_name(pb_nets_name(a->nets))));
    assert_int_not_equal(pb_nets_by_name(pb_nets_name(a->nets)), 0);
    assert_non_null(a->agent);
    assert_non_null(a->model);
    char sec[64];
    snprintf(sec, sizeof sec, "\n  %s.", a->section);
    if (strstr(keys, sec) == NULL)
      fail_msg("row '%s': no keys in its section '%s'", a->name, a->section);
    pb_config_t c;
    pb_err_t err;
    pb_config_defaults(&c);
    assert_int_equal(pb_config_set(&c, "algorithm", a->name, &err), 0);
    assert_ptr_equal(pb_algos_of(&c), a);
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
             i ? "|" : "", a->name);
  }
  free(keys);
  assert_string_equal(names, want); /* the schema's enum: the rows, in order */
  assert_null(pb_algos_find("nope"));
  assert_null(pb_algos_find(NULL));
  assert_int_equal(pb_nets_by_name("nope"), 0);
  assert_string_equal(pb_nets_name(0), "unknown");
}

/* pb_config_check follows the row: what an algorithm without a search
 * phase cannot use is refused by the row's `searches`, naming the
 * algorithm; the row's own check runs. */
static void test_check_by_row(void **state) {
  (void)state;
  for (size_t i = 0; i < pb_algos_count(); i++) {
    const pb_algo_data_t *a = pb_algos_at(i);
    pb_config_t c;
    pb_err_t err;
    pb_config_defaults(&c);
    assert_int_equal(pb_config_set(&c, "algorithm", a->name, &err), 0);
    assert_int_equal(pb_config_set(&c, "game", "othello", &err), 0);
    assert_int_equal(pb_config_set(&c, "eval.enabled", "false", &err), 0);
    if (pb_config_check(&c, &err) != 0) fail_msg("%s: %s", a->name, err.msg);
    assert_int_equal(pb_config_set(&c, "search.algorithm", "abnet", &err), 0);
    int rc = pb_config_check(&c, &err);
    if (a->searches) {
      assert_int_equal(rc, 0);
    } else {
      assert_int_equal(rc, PB_ECONFIG);
      assert_non_null(strstr(err.msg, "search.algorithm abnet"));
      assert_non_null(strstr(err.msg, a->name));
    }
  }
}

/* A fourth algorithm's row, in a table of the test's own. */
static int fourth_check(const pb_config_t *c, pb_err_t *err) {
  if (c->train.pipeline)
    return pb_err_set(err, PB_ECONFIG, "fourth: no train.pipeline");
  return 0;
}

static const pb_algo_data_t fourth = {
    .name = "fourth",
    .section = "search",
    .nets = PB_NETS_VQ,
    .agent = "abnet",
    .model = "V and Q",
    .searches = 0,
    .check = fourth_check,
};

static void test_fourth_row(void **state) {
  (void)state;
  const pb_algo_data_t *const table[] = {&pb_algo_data_probs, &fourth};
  assert_ptr_equal(pb_algos_find_in(table, 2, "fourth"), &fourth);
  assert_ptr_equal(pb_algos_find_in(table, 2, "probs"), &pb_algo_data_probs);
  assert_null(pb_algos_find_in(table, 2, "td"));
  assert_null(pb_algos_find_in(table, 1, "fourth"));
  assert_null(pb_algos_find("fourth")); /* the built-in table is const */
  pb_config_t c;
  pb_err_t err;
  pb_config_defaults(&c);
  assert_int_equal(fourth.check(&c, &err), 0);
  assert_int_equal(pb_config_set(&c, "train.pipeline", "true", &err), 0);
  assert_int_equal(fourth.check(&c, &err), PB_ECONFIG);
  assert_string_equal(pb_nets_words(fourth.nets), "V and Q");
}

/* A checkpoint of each algorithm (untrained, connect4-smoke) records its
 * row's family, and the row's agent plays it. */
static void test_agent_plays(void **state) {
  (void)state;
  char dir[256], path[320], spec[400];
  tp_tmpdir(dir, sizeof dir, "algos");
  snprintf(path, sizeof path, "%s/a.pbck", dir);
  for (size_t i = 0; i < pb_algos_count(); i++) {
    const pb_algo_data_t *a = pb_algos_at(i);
    pb_config_t c;
    pb_err_t err;
    pb_config_defaults(&c);
    if (pb_config_load_file(&c, PB_SOURCE_DIR "/configs/connect4-smoke.yaml",
                            &err) != 0)
      fail_msg("%s", err.msg);
    assert_int_equal(pb_config_set(&c, "algorithm", a->name, &err), 0);
    assert_int_equal(pb_config_set(&c, "eval.enabled", "false", &err), 0);
    if (pb_config_check(&c, &err) != 0) fail_msg("%s: %s", a->name, err.msg);
    pb_learn_t *l = pb_learn_new(&c, &err);
    if (l == NULL) fail_msg("%s: %s", a->name, err.msg);
    assert_int_equal(pb_learn_nets(l), a->nets);
    assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
    pb_learn_destroy(&l);
    pb_model_t *m = pb_model_open(path, "cpu", NULL, &err);
    if (m == NULL) fail_msg("%s: %s", a->name, err.msg);
    assert_int_equal(pb_model_kind(m), a->nets);
    pb_model_destroy(&m);
    snprintf(spec, sizeof spec, "%s:%s", a->agent, path);
    pb_agent_t *ag = pb_agent_new(&pb_game_connect4, spec, 1, &err);
    if (ag == NULL) fail_msg("%s: %s", spec, err.msg);
    pb_state_t s;
    pb_game_connect4.reset(&s);
    int act = pb_agent_act(ag, &s, &err);
    if (act < 0) fail_msg("%s: %s", spec, err.msg);
    assert_true(act < pb_game_connect4.num_actions);
    pb_agent_destroy(&ag);
  }
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_check_by_row),
      cmocka_unit_test(test_fourth_row),
      cmocka_unit_test(test_agent_plays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
