/* test_config.c - YAML loading, overrides, checks and round trips of
 * common/run/config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algos.h"
#include "config.h"
#include "err.h"
#include "game.h"

#include "config_fixtures.h"


static void test_defaults(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  assert_string_equal(c.game, "connect4");
  assert_int_equal(c.seed, 1);
  assert_string_equal(c.run.name, "c4");
  assert_string_equal(c.run.dir, "runs/c4");
  assert_int_equal(c.train.iterations, 100);
  assert_int_equal(c.train.episodes_per_iter, 1000);
  assert_int_equal(c.train.max_turns, 100);
  assert_int_equal(c.train.replay_capacity, 100000);
  assert_true(c.train.eps == 0.25);
  assert_true(c.train.alpha == 0.5);
  assert_int_equal(c.train.batch_size, 128);
  assert_true(c.train.v_lr == 0.003 && c.train.q_lr == 0.003);
  assert_true(c.train.weight_decay == 0.0001);
  assert_int_equal(c.train.selfplay_parallel, 256);
  assert_false(c.train.pipeline);
  assert_int_equal(c.train.max_staleness, 1);
  assert_int_equal(c.search.expansions, 30);
  assert_int_equal(c.search.max_depth, 3);
  assert_int_equal(c.search.parallel, 256);
  assert_int_equal(c.search.cache_entries, 1 << 18);
  assert_string_equal(c.model.device, "auto");
  assert_string_equal(c.model.learner_device, "auto");
  assert_string_equal(c.model.actor_device, "auto");
  assert_string_equal(c.model.searcher_device, "auto");
  assert_true(c.net.spot_check == 0.01);
  assert_true(c.net.spot_check_tolerance == 0.02);
  assert_true(c.net.spot_check_max_disagree == 0.01);
  assert_int_equal(c.model.threads, 1);
  assert_int_equal(c.model.learner_threads, 0);
  assert_int_equal(c.model.v.conv_layers, 2);
  assert_int_equal(c.model.v.conv_channels, 16);
  assert_int_equal(c.model.v.dense_layers, 1);
  assert_int_equal(c.model.v.dense_units, 12);
  assert_memory_equal(&c.model.v, &c.model.q, sizeof c.model.v);
  assert_string_equal(c.net.work_endpoint, "tcp://127.0.0.1:5555");
  assert_string_equal(c.net.pub_endpoint, "tcp://127.0.0.1:5556");
  assert_int_equal(c.net.http_port, 8080);
  assert_int_equal(c.net.lease_ms, 30000);
  assert_int_equal(c.net.heartbeat_ms, 1000);
  assert_int_equal(c.net.hwm, 1000);
  assert_int_equal(c.net.item_episodes, 16);
  assert_int_equal(c.net.item_states, 256);
  assert_int_equal(c.net.max_workers, 1024);
  assert_true(c.eval.enabled);
  assert_int_equal(c.eval.games_per_opponent, 100);
  assert_int_equal(c.eval.opening_random_moves, 2);
  assert_string_equal(c.eval.opponents,
                      "random,lookahead:1,lookahead:2,lookahead:3");
  assert_int_equal(c.eval.threads, 0);
  assert_int_equal(c.eval.every, 1);
  assert_string_equal(c.log.level, "info");
  /* Every default literal parses and is in range: check re-validates all. */
  pb_err_t err;
  pb_err_clear(&err);
  int rc = pb_config_check(&c, &err);
  if (rc) print_error("%s\n", err.msg);
  assert_int_equal(rc, 0);
}

static void load_shipped(const char *name, pb_config_t *c) {
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_defaults(c);
  int rc = pb_config_load_file(c, name, &err);
  if (rc) print_error("%s: %s\n", name, err.msg);
  assert_int_equal(rc, 0);
  rc = pb_config_check(c, &err);
  if (rc) print_error("%s: %s\n", name, err.msg);
  assert_int_equal(rc, 0);
}

static void test_shipped_configs(void **state) {
  (void)state;
  pb_config_t c, d;
  /* connect4.yaml spells out the paper's settings, which are the defaults. */
  load_shipped(CONFIGS "connect4.yaml", &c);
  pb_config_defaults(&d);
  assert_memory_equal(&c, &d, sizeof c);

  load_shipped(CONFIGS "connect4-smoke.yaml", &c);
  assert_string_equal(c.game, "connect4");
  assert_int_equal(c.train.iterations, 2);
  assert_int_equal(c.train.episodes_per_iter, 20);
  assert_int_equal(c.search.expansions, 10);
  assert_int_equal(c.search.max_depth, 2);
  assert_int_equal(c.net.http_port, 0);
  assert_true(c.model.v.conv_channels < d.model.v.conv_channels);
  assert_string_equal(c.model.device, "cpu");

  load_shipped(CONFIGS "tictactoe-smoke.yaml", &c);
  assert_string_equal(c.game, "tictactoe");
  assert_int_equal(c.train.iterations, 2);
  assert_int_equal(c.search.expansions, 10);
  assert_int_equal(c.net.http_port, 0);
  assert_non_null(pb_game_by_name(c.game));
}

static void test_nested_and_flat_keys(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  pb_err_t err;
  pb_err_clear(&err);
  const char *y =
      "# a comment\n"
      "search.expansions: 12\n"
      "model:\n"
      "  v: {conv_layers: 0, dense_units: 7}\n"
      "  q.dense_layers: 2\n"
      "train:\n"
      "  replay_capacity: 1e5\n"
      "  eps: 0.1\n"
      "  pipeline: yes\n"
      "run: {name: 'my-run_1.2', dir: \"/tmp/x y\"}\n";
  int rc = pb_config_load_string(&c, y, &err);
  if (rc) print_error("%s\n", err.msg);
  assert_int_equal(rc, 0);
  assert_int_equal(c.search.expansions, 12);
  assert_int_equal(c.model.v.conv_layers, 0);
  assert_int_equal(c.model.v.dense_units, 7);
  assert_int_equal(c.model.q.dense_layers, 2);
  assert_int_equal(c.train.replay_capacity, 100000);
  assert_true(c.train.eps == 0.1);
  assert_true(c.train.pipeline);
  assert_string_equal(c.run.name, "my-run_1.2");
  assert_string_equal(c.run.dir, "/tmp/x y");
  assert_int_equal(c.search.max_depth, 3); /* untouched keys keep values */

  /* Empty text and a comment-only document change nothing. */
  pb_config_t d;
  memcpy(&d, &c, sizeof d);
  assert_int_equal(pb_config_load_string(&c, "", &err), 0);
  assert_int_equal(pb_config_load_string(&c, "# nothing\n", &err), 0);
  assert_int_equal(pb_config_load_string(&c, "---\n...\n", &err), 0);
  assert_memory_equal(&c, &d, sizeof c);
}

static void test_unknown_key(void **state) {
  (void)state;
  expect_load_error("search:\n  expansion: 10\n", "search.expansion",
                    "<string>:2:3", "did you mean 'search.expansions'", NULL);
  expect_load_error("seed: 3\nbogus: 1\n", "bogus", "<string>:2:1", NULL);
  expect_load_error("bogus:\n  inner: 1\n", "bogus", NULL);
  expect_load_error("model:\n  v:\n    conv_layer: 3\n", "model.v.conv_layer",
                    "model.v.conv_layers", "<string>:3:5", NULL);
  expect_load_error("train:\n  iterations: 2\n  episodes: 3\n",
                    "train.episodes", NULL);
}

static void test_bad_number(void **state) {
  (void)state;
  expect_load_error("search:\n  expansions: abc\n", "search.expansions",
                    "'abc'", "not an integer", "1..100000", "<string>:2:15",
                    NULL);
  expect_load_error("train:\n  iterations: 2.5\n", "train.iterations", "2.5",
                    NULL);
  expect_load_error("train:\n  iterations: 12abc\n", "train.iterations",
                    "12abc", NULL);
  expect_load_error("train:\n  eps: lots\n", "train.eps", "lots",
                    "not a finite number", NULL);
  expect_load_error("train:\n  eps: .nan\n", "train.eps", NULL);
  expect_load_error("train:\n  v_lr: inf\n", "train.v_lr", NULL);
  expect_load_error("seed: 99999999999999999999999\n", "seed", "out of range",
                    NULL);
}

static void test_out_of_range(void **state) {
  (void)state;
  expect_load_error("search:\n  expansions: 0\n", "search.expansions",
                    "out of range", "1..100000", NULL);
  expect_load_error("search:\n  expansions: 100001\n", "search.expansions",
                    "100001", NULL);
  expect_load_error("search:\n  max_depth: 201\n", "search.max_depth", "1..200",
                    NULL);
  expect_load_error("train:\n  eps: 1.5\n", "train.eps", "1.5", "0..1", NULL);
  expect_load_error("net:\n  http_port: 70000\n", "net.http_port",
                    "-1..65535", NULL);
  expect_load_error("net:\n  give_up_s: -1\n", "net.give_up_s", NULL);
  expect_load_error("seed: -1\n", "seed", "-1", NULL);
  expect_load_error("train:\n  iterations: 3000000000\n", "train.iterations",
                    NULL);
}

static void test_wrong_type(void **state) {
  (void)state;
  expect_load_error("search:\n  expansions: [1, 2]\n", "search.expansions",
                    "list", NULL);
  expect_load_error("search:\n  expansions: {a: 1}\n", "search.expansions",
                    "mapping", NULL);
  expect_load_error("search:\n  expansions: \"10\"\n", "search.expansions",
                    "quoted", NULL);
  expect_load_error("train:\n  pipeline: 3\n", "train.pipeline", "true|false",
                    NULL);
  expect_load_error("search: 5\n", "search", "section", NULL);
  expect_load_error("search:\n  expansions:\n", "search.expansions",
                    "missing value", NULL);
  expect_load_error("run:\n  name: bad name\n", "run.name", "bad name", NULL);
  expect_load_error("run:\n  dir: ''\n", "run.dir", "too short", NULL);
  expect_load_error("seed: &x 5\ntrain:\n  iterations: *x\n",
                    "train.iterations", "alias", NULL);
  expect_load_error("- seed\n- 3\n", "top level", NULL);
  expect_load_error("seed: 2\n---\nseed: 3\n", "one YAML document", NULL);
  expect_load_error("? [a, b]\n: 1\n", "keys", NULL);
}

static void test_bad_enum(void **state) {
  (void)state;
  expect_load_error("model:\n  device: tpu\n", "model.device", "tpu",
                    "cpu|cuda|auto", NULL);
  expect_load_error("log:\n  level: verbose\n", "log.level", "verbose",
                    "debug|info|warn|error", NULL);
  expect_load_error("model:\n  device: CPU\n", "model.device", NULL);
}

static void test_duplicate_key(void **state) {
  (void)state;
  expect_load_error("search:\n  expansions: 10\n  expansions: 20\n",
                    "duplicate", "search.expansions", "<string>:3:3", NULL);
  expect_load_error("search.expansions: 1\nsearch:\n  expansions: 2\n",
                    "duplicate", "search.expansions", NULL);
  expect_load_error("search:\n  expansions: 1\nsearch:\n  max_depth: 2\n",
                    "duplicate", "'search'", NULL);
  expect_load_error("seed: 1\nseed: 1\n", "duplicate", "seed", NULL);
}

static void test_syntax_error(void **state) {
  (void)state;
  expect_load_error("search:\n  expansions: 10\n   max_depth: 3\n",
                    "YAML syntax error", "<string>:3:", "search.expansions",
                    NULL);
  expect_load_error("search:\n  expansions: 10\n  max_depth: \"3\n",
                    "YAML syntax error", "search.max_depth", NULL);
  expect_load_error("train: {iterations: 3\n", "YAML syntax error",
                    "train.iterations", NULL);
  expect_load_error("seed: 1\nrun:\n  name: \xff\xfe\n", "<string>:3:9",
                    "UTF-8",
                    NULL); /* libyaml decodes ahead, so no key is known yet */
}

static void test_load_file_errors(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_config_load_file(&c, "/nonexistent/probs.yaml", &err),
                   PB_EIO);
  assert_msg_has(err.msg, "/nonexistent/probs.yaml");

  char path[] = "/tmp/pb_test_config_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fputs("game: connect4\n\nsearch:\n  max_depht: 3\n", f);
  fclose(f);
  assert_int_equal(pb_config_load_file(&c, path, &err), PB_ECONFIG);
  char where[64];
  snprintf(where, sizeof where, "%s:4:3", path);
  assert_msg_has(err.msg, where);
  assert_msg_has(err.msg, "search.max_depht");
  assert_msg_has(err.msg, "search.max_depth");
  unlink(path);
}

static void test_override(void **state) {
  (void)state;
  pb_config_t c;
  pb_config_defaults(&c);
  pb_err_t err;
  pb_err_clear(&err);
  assert_int_equal(pb_config_apply_override(&c, "train.iterations=3", &err), 0);
  assert_int_equal(c.train.iterations, 3);
  assert_int_equal(pb_config_apply_override(&c, "model.device=cuda", &err), 0);
  assert_string_equal(c.model.device, "cuda");
  assert_int_equal(pb_config_apply_override(&c, "train.pipeline=true", &err),
                   0);
  assert_true(c.train.pipeline);
  assert_int_equal(
      pb_config_apply_override(&c, "eval.opponents=random,lookahead:2", &err),
      0);
  assert_string_equal(c.eval.opponents, "random,lookahead:2");
  assert_int_equal(pb_config_apply_override(&c, "run.dir=/tmp/a=b", &err), 0);
  assert_string_equal(c.run.dir, "/tmp/a=b"); /* split at the first '=' */
  assert_int_equal(pb_config_set(&c, "train.eps", "0.125", &err), 0);
  assert_true(c.train.eps == 0.125);
  assert_int_equal(pb_config_set(&c, "seed", "9223372036854775807", &err), 0);
  assert_true(c.seed == INT64_MAX);

  char buf[PB_CONFIG_PATH_MAX];
  assert_int_equal(pb_config_get(&c, "train.iterations", buf, sizeof buf, &err),
                   0);
  assert_string_equal(buf, "3");
  assert_int_equal(pb_config_get(&c, "train.eps", buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "0.125");
  assert_int_equal(pb_config_get(&c, "train.pipeline", buf, sizeof buf, &err),
                   0);
  assert_string_equal(buf, "true");
  assert_int_equal(pb_config_get(&c, "nope", buf, sizeof buf, &err),
                   PB_ECONFIG);
  assert_int_equal(pb_config_get(&c, "run.dir", buf, 4, &err), PB_ERANGE);

  expect_set_error("train.iterations=abc", "train.iterations", "abc");
  expect_set_error("train.iterations=0", "train.iterations", "out of range");
  expect_set_error("train.iterations= 3", "train.iterations", NULL);
  expect_set_error("train.iterations=", "train.iterations", NULL);
  expect_set_error("train.iterations", "key=value", NULL);
  expect_set_error("=3", "empty key", NULL);
  expect_set_error("nosuch.key=1", "nosuch.key", NULL);
  expect_set_error("search.expansion=1", "search.expansion",
                   "search.expansions");
  expect_set_error("train=1", "train", "section");
  expect_set_error("model.device=gpu", "model.device", "cpu|cuda|auto");
  expect_set_error("train.pipeline=maybe", "train.pipeline", NULL);
  expect_set_error("run.name=a/b", "run.name", NULL);
  expect_set_error("run.dir=tab\there", "run.dir", NULL);
  char longv[400];
  memset(longv, 'x', sizeof longv);
  memcpy(longv, "run.dir=", 8);
  longv[sizeof longv - 1] = '\0';
  expect_set_error(longv, "run.dir", "too long");
  char longk[200];
  memset(longk, 'k', sizeof longk);
  longk[150] = '=';
  longk[151] = '1';
  longk[152] = '\0';
  expect_set_error(longk, "unknown key", NULL);
}

static void test_check(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_err_clear(&err);

  pb_config_defaults(&c);
  assert_int_equal(pb_config_load_string(&c, "game: chess\n", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "game");
  assert_msg_has(err.msg, "chess");
  assert_msg_has(err.msg, "connect4");

  pb_config_defaults(&c);
  assert_int_equal(pb_config_apply_override(&c, "net.heartbeat_ms=30000", &err),
                   0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "net.heartbeat_ms");
  assert_msg_has(err.msg, "net.lease_ms");

  pb_config_defaults(&c);
  assert_int_equal(
      pb_config_apply_override(&c, "net.work_endpoint=localhost:5555", &err),
      0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "net.work_endpoint");

  pb_config_defaults(&c);
  assert_int_equal(pb_config_apply_override(
                       &c, "net.pub_endpoint=tcp://127.0.0.1:5555", &err),
                   0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "net.pub_endpoint");
  /* Two '*' ports (the kernel picks each) are not the same endpoint. */
  assert_int_equal(pb_config_apply_override(
                       &c, "net.pub_endpoint=tcp://127.0.0.1:*", &err), 0);
  assert_int_equal(pb_config_apply_override(
                       &c, "net.work_endpoint=tcp://127.0.0.1:*", &err), 0);
  assert_int_equal(pb_config_apply_override(&c, "net.http_port=-1", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), 0);

  pb_config_defaults(&c);
  assert_int_equal(pb_config_apply_override(&c, "train.pipeline=on", &err), 0);
  assert_int_equal(pb_config_apply_override(&c, "train.max_staleness=0", &err),
                   0);
  assert_int_equal(pb_config_check(&c, &err), 0); /* pipelined, no overlap */

  pb_config_defaults(&c);
  assert_int_equal(pb_config_apply_override(&c, "train.batch_size=500", &err),
                   0);
  assert_int_equal(
      pb_config_apply_override(&c, "train.replay_capacity=100", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "train.batch_size");

  /* the minibatch a CUDA learner would train must fit too */
  pb_config_defaults(&c);
  assert_int_equal(
      pb_config_apply_override(&c, "train.replay_capacity=400", &err), 0);
  assert_int_equal(
      pb_config_apply_override(&c, "train.cuda_batch_scale=4", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "train.cuda_batch_scale");
  assert_int_equal(
      pb_config_apply_override(&c, "train.cuda_batch_scale=3", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), 0);
  assert_int_equal(
      pb_config_apply_override(&c, "train.cuda_batch_scale=0", &err),
      PB_ECONFIG);

  pb_config_defaults(&c);
  assert_int_equal(
      pb_config_apply_override(&c, "eval.opponents=random,,lookahead:1", &err),
      0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "eval.opponents");
  assert_int_equal(
      pb_config_apply_override(&c, "eval.opponents=lookahead:", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);

  pb_config_defaults(&c);
  assert_int_equal(pb_config_apply_override(&c, "game=tictactoe", &err), 0);
  assert_int_equal(
      pb_config_apply_override(&c, "eval.opening_random_moves=9", &err), 0);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "eval.opening_random_moves");

  /* The struct is transparent: check catches fields set directly. */
  pb_config_defaults(&c);
  c.search.expansions = 0;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "search.expansions");
  pb_config_defaults(&c);
  snprintf(c.model.device, sizeof c.model.device, "tpu");
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "model.device");
  pb_config_defaults(&c);
  c.train.alpha = NAN;
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "train.alpha");
  pb_config_defaults(&c);
  memset(c.run.name, 'a', sizeof c.run.name);
  assert_int_equal(pb_config_check(&c, &err), PB_ECONFIG);
  assert_msg_has(err.msg, "run.name");
}

static void round_trip(const pb_config_t *c) {
  pb_err_t err;
  pb_err_clear(&err);
  char *y = NULL;
  assert_int_equal(pb_config_to_yaml(c, &y, &err), 0);
  assert_non_null(y);
  pb_config_t back;
  pb_config_defaults(&back);
  int rc = pb_config_load_string(&back, y, &err);
  if (rc) print_error("%s\n---\n%s\n", err.msg, y);
  assert_int_equal(rc, 0);
  assert_memory_equal(&back, c, sizeof back);
  /* Loading into a config that differs everywhere gives the same result:
   * the text names every key. */
  pb_config_t other;
  pb_config_defaults(&other);
  other.search.expansions = 7;
  other.train.eps = 0.75;
  snprintf(other.run.dir, sizeof other.run.dir, "elsewhere");
  other.eval.enabled = !c->eval.enabled;
  assert_int_equal(pb_config_load_string(&other, y, &err), 0);
  assert_memory_equal(&other, c, sizeof other);
  free(y);
}

static void test_to_yaml_round_trip(void **state) {
  (void)state;
  pb_config_t c;
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_defaults(&c);
  round_trip(&c);

  const char *sets[] = {
      "game=tictactoe",
      "seed=9223372036854775807",
      "run.name=r-1.x_y",
      "run.dir=/tmp/with \"quotes\" and \\back\\slash: #x",
      "train.eps=0.1",
      "train.alpha=0.30000000000000004",
      "train.v_lr=1e-7",
      "train.q_lr=0.00123456789012345678",
      "train.weight_decay=0",
      "train.pipeline=true",
      "search.cache_entries=0",
      "model.device=cpu",
      "model.q.conv_layers=0",
      "net.http_port=0",
      "eval.enabled=false",
      "eval.opponents=random,lookahead:1",
      "log.level=debug",
      "net.work_endpoint=ipc:///tmp/probs work.ipc",
  };
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    int rc = pb_config_apply_override(&c, sets[i], &err);
    if (rc) print_error("%s: %s\n", sets[i], err.msg);
    assert_int_equal(rc, 0);
  }
  round_trip(&c);

  const char *shipped[] = {CONFIGS "connect4.yaml",
                           CONFIGS "connect4-smoke.yaml",
                           CONFIGS "tictactoe-smoke.yaml",
                           CONFIGS "connect4-quick.yaml",
                           CONFIGS "connect4-fast.yaml",
                           CONFIGS "connect4-strong.yaml",
                           CONFIGS "connect4-large.yaml",
                           CONFIGS "othello-smoke.yaml",
                           CONFIGS "othello-small.yaml",
                           CONFIGS "othello-paper.yaml",
                           CONFIGS "toguz-smoke.yaml",
                           CONFIGS "toguz-small.yaml",
                           CONFIGS "toguz-paper.yaml"};
  for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
    load_shipped(shipped[i], &c);
    round_trip(&c);
  }

  /* The text is readable YAML: nested sections and doc comments. */
  char *y = NULL;
  pb_config_defaults(&c);
  assert_int_equal(pb_config_to_yaml(&c, &y, &err), 0);
  assert_msg_has(y, "\nsearch:\n  expansions: 30  # E:");
  assert_msg_has(y, "\nmodel:\n  device: \"auto\"");
  assert_msg_has(y, "  v:\n    conv_layers: 2");
  assert_msg_has(y, "  q:\n    conv_layers: 2");
  free(y);
}

/* Checkpoint retention: run.keep_last / run.keep_every, defaults, ranges,
 * 0 allowed for both (keep all / none every K), and documented. */
int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_shipped_configs),
      cmocka_unit_test(test_nested_and_flat_keys),
      cmocka_unit_test(test_unknown_key),
      cmocka_unit_test(test_bad_number),
      cmocka_unit_test(test_out_of_range),
      cmocka_unit_test(test_wrong_type),
      cmocka_unit_test(test_bad_enum),
      cmocka_unit_test(test_duplicate_key),
      cmocka_unit_test(test_syntax_error),
      cmocka_unit_test(test_load_file_errors),
      cmocka_unit_test(test_override),
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_to_yaml_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
