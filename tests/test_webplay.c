/* test_webplay.c - common/web/webplay: the newest checkpoint answers a move list
 * (Tic-Tac-Toe, untrained networks saved by pb_learn_save), bad move lists
 * are refused with a message, the cached agent follows new versions and
 * survives a corrupt newest file, or stays on a pinned version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "json.h"
#include "learn.h"
#include "rundir.h"
#include "util.h"
#include "webplay.h"
#include "rundir_fixtures.h"

typedef struct {
  char dir[64];
  pb_config_t cfg;
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  if (f == NULL || rundir_fixture_open(f->dir, sizeof f->dir, "webplay",
                                       "tictactoe-smoke.yaml", 1, &f->cfg) != 0)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  int rc = rundir_fixture_remove(f->dir);
  free(f);
  return rc;
}

/* Saves untrained networks of cfg's game as checkpoint `version`. */
static void save_ckpt(const fx_t *f, const char *game, unsigned version) {
  pb_config_t c = f->cfg;
  pb_err_t err;
  if (pb_config_set(&c, "game", game, &err) != 0) fail_msg("%s", err.msg);
  char path[4200];
  snprintf(path, sizeof path, "%s/checkpoints", f->dir);
  assert_int_equal(pb_mkdir_p(path, &err), 0);
  pb_rundir_ckpt_path(f->dir, version, path, sizeof path);
  pb_learn_t *l = pb_learn_new(&c, &err);
  if (l == NULL) fail_msg("%s", err.msg);
  assert_int_equal(pb_learn_save(l, path, NULL, 0, &err), 0);
  pb_learn_destroy(&l);
}

/* Plays and returns the JSON (checked valid); fails the test on error. */
static char *play_ok(pb_webplay_t *w, const char *moves, int reply) {
  pb_err_t err;
  pb_err_clear(&err);
  char *j = NULL;
  int rc = pb_webplay_move(w, moves, reply, &j, &err);
  if (rc != 0) fail_msg("moves \"%s\": %d %s", moves, rc, err.msg);
  assert_non_null(j);
  assert_int_equal(pb_json_validate(j), 0);
  return j;
}

static int play_err(pb_webplay_t *w, const char *moves, int reply,
                    pb_err_t *err) {
  char *j = (char *)1;
  pb_err_clear(err);
  int rc = pb_webplay_move(w, moves, reply, &j, err);
  assert_null(j);
  assert_true(rc < 0);
  assert_true(err->msg[0] != '\0');
  return rc;
}

static void test_no_checkpoint(void **state) {
  fx_t *f = *state;
  pb_err_t err;
  pb_webplay_t *w = pb_webplay_new(pb_game_by_name("tictactoe"), f->dir, 1, &err);
  assert_non_null(w);
  assert_int_equal(pb_webplay_version(w), -1);
  /* Without a reply nothing needs the model. */
  char *j = play_ok(w, "5", 0);
  assert_non_null(strstr(j, "\"version\":null"));
  assert_non_null(strstr(j, "\"reply\":null"));
  assert_non_null(strstr(j, "\"moves\":\"5\""));
  assert_non_null(strstr(j, "\"board\":\". . .\\n. X .\\n. . .\\n\""));
  assert_non_null(strstr(j, "\"to_move\":\"O\""));
  assert_non_null(strstr(j, "\"legal\":[\"1\",\"2\",\"3\",\"4\",\"6\",\"7\","
                            "\"8\",\"9\"]"));
  free(j);
  assert_int_equal(play_err(w, "5", 1, &err), PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "no checkpoint"));
  pb_webplay_destroy(&w);
  assert_null(w);
  pb_webplay_destroy(&w);
  pb_webplay_destroy(NULL);
  assert_null(pb_webplay_new(NULL, f->dir, 1, &err));
  assert_int_equal(err.code, PB_EINVAL);
}

static void test_reply_and_errors(void **state) {
  fx_t *f = *state;
  save_ckpt(f, "tictactoe", 0);
  pb_err_t err;
  pb_webplay_t *w = pb_webplay_new(pb_game_by_name("tictactoe"), f->dir, 1, &err);
  assert_non_null(w);
  char *j = play_ok(w, "5", 1);
  assert_non_null(strstr(j, "\"version\":0"));
  assert_non_null(strstr(j, "\"ply\":2"));
  assert_non_null(strstr(j, "\"to_move\":\"X\""));
  assert_non_null(strstr(j, "\"over\":false"));
  /* The reply is a cell other than 5, appended to the list. */
  const char *r = strstr(j, "\"reply\":\"");
  assert_non_null(r);
  char cell = r[9];
  assert_true(cell >= '1' && cell <= '9' && cell != '5');
  char want[32];
  snprintf(want, sizeof want, "\"moves\":\"5%c\"", cell);
  assert_non_null(strstr(j, want));
  free(j);
  assert_int_equal(pb_webplay_version(w), 0);
  /* The model may move first. */
  j = play_ok(w, "", 1);
  assert_non_null(strstr(j, "\"ply\":1"));
  free(j);
  /* Refusals, each with a message. */
  assert_int_equal(play_err(w, "55", 1, &err), PB_EILLEGAL);
  assert_int_equal(play_err(w, "5x", 1, &err), PB_EINVAL);
  assert_int_equal(play_err(w, "0", 1, &err), PB_EINVAL);
  assert_int_equal(play_err(w, "5\n", 1, &err), PB_EINVAL);
  assert_int_equal(play_err(w, "142536", 1, &err), PB_EILLEGAL); /* X won */
  char *lng = malloc(PB_WEBPLAY_MOVES_MAX + 2);
  memset(lng, '1', PB_WEBPLAY_MOVES_MAX + 1);
  lng[PB_WEBPLAY_MOVES_MAX + 1] = '\0';
  assert_int_equal(play_err(w, lng, 1, &err), PB_ERANGE);
  free(lng);
  assert_int_equal(pb_webplay_move(w, NULL, 1, &j, &err), PB_EINVAL);
  /* A finished game: no reply, the result. */
  j = play_ok(w, "14253", 1);
  assert_non_null(strstr(j, "\"over\":true"));
  assert_non_null(strstr(j, "\"winner\":\"X\""));
  assert_non_null(strstr(j, "\"result\":\"X wins\""));
  assert_non_null(strstr(j, "\"reply\":null"));
  assert_non_null(strstr(j, "\"legal\":[]"));
  free(j);
  j = play_ok(w, "123546879", 1);
  assert_non_null(strstr(j, "\"result\":\"draw\""));
  assert_non_null(strstr(j, "\"winner\":null"));
  free(j);
  /* The model's move can end the game: one cell left (8), a draw. */
  j = play_ok(w, "12354769", 1);
  assert_non_null(strstr(j, "\"over\":true"));
  assert_non_null(strstr(j, "\"ply\":9"));
  assert_non_null(strstr(j, "\"reply\":\"8\""));
  assert_non_null(strstr(j, "\"result\":\"draw\""));
  free(j);
  pb_webplay_destroy(&w);
}

static void test_versions(void **state) {
  fx_t *f = *state;
  pb_err_t err;
  /* Only a checkpoint of another game: refused, naming both. */
  save_ckpt(f, "connect4", 3);
  pb_webplay_t *w = pb_webplay_new(pb_game_by_name("tictactoe"), f->dir, 1, &err);
  assert_non_null(w);
  assert_int_equal(play_err(w, "5", 1, &err), PB_EMISMATCH);
  /* Asked again: the same answer, without reloading. */
  assert_int_equal(play_err(w, "5", 1, &err), PB_EMISMATCH);
  /* A newer one of the right game is taken. */
  save_ckpt(f, "tictactoe", 4);
  char *j = play_ok(w, "5", 1);
  assert_non_null(strstr(j, "\"version\":4"));
  free(j);
  assert_int_equal(pb_webplay_version(w), 4);
  /* A corrupt newest file: the cached agent keeps playing. */
  char path[4200];
  pb_rundir_ckpt_path(f->dir, 5, path, sizeof path);
  assert_int_equal(pb_write_file(path, "garbage", 7, &err), 0);
  j = play_ok(w, "5", 1);
  assert_non_null(strstr(j, "\"version\":4"));
  free(j);
  save_ckpt(f, "tictactoe", 6);
  j = play_ok(w, "5", 1);
  assert_non_null(strstr(j, "\"version\":6"));
  free(j);
  pb_webplay_destroy(&w);
  /* A fresh player whose only candidate is corrupt. */
  pb_rundir_ckpt_path(f->dir, 7, path, sizeof path);
  assert_int_equal(pb_write_file(path, "garbage", 7, &err), 0);
  w = pb_webplay_new(pb_game_by_name("tictactoe"), f->dir, 1, &err);
  int rc = play_err(w, "5", 1, &err);
  assert_true(rc == PB_ECORRUPT || rc == PB_EIO);
  pb_webplay_destroy(&w);
}

/* Pinned to a version (probs serve --checkpoint): it plays that one
 * whatever newer ones appear; a missing, corrupt or foreign one is
 * refused and changes nothing; unpinned, the newest plays again. */
static void test_pin(void **state) {
  fx_t *f = *state;
  pb_err_t err;
  save_ckpt(f, "tictactoe", 2);
  save_ckpt(f, "tictactoe", 3);
  save_ckpt(f, "connect4", 4);
  pb_webplay_t *w =
      pb_webplay_new(pb_game_by_name("tictactoe"), f->dir, 1, &err);
  assert_non_null(w);
  assert_int_equal(pb_webplay_pinned(w), -1);
  assert_int_equal(pb_webplay_pin(w, 9, &err), PB_ENOTFOUND);
  assert_non_null(strstr(err.msg, "ckpt-000009.pbck"));
  assert_int_equal(pb_webplay_pin(w, 4, &err), PB_EMISMATCH);
  char path[4200];
  pb_rundir_ckpt_path(f->dir, 5, path, sizeof path);
  assert_int_equal(pb_write_file(path, "garbage", 7, &err), 0);
  int rc = pb_webplay_pin(w, 5, &err);
  assert_true(rc == PB_ECORRUPT || rc == PB_EIO);
  assert_int_equal(pb_webplay_pinned(w), -1);
  assert_int_equal(pb_webplay_version(w), -1);
  assert_int_equal(pb_webplay_pin(w, 2, &err), 0);
  assert_int_equal(pb_webplay_pinned(w), 2);
  assert_int_equal(pb_webplay_version(w), 2);
  save_ckpt(f, "tictactoe", 6);
  char *j = play_ok(w, "5", 1);
  assert_non_null(strstr(j, "\"version\":2"));
  free(j);
  /* Another pin replaces it; a refused one keeps it. */
  assert_int_equal(pb_webplay_pin(w, 3, &err), 0);
  assert_int_equal(pb_webplay_pin(w, 9, &err), PB_ENOTFOUND);
  j = play_ok(w, "5", 1);
  assert_non_null(strstr(j, "\"version\":3"));
  free(j);
  assert_int_equal(pb_webplay_pin(w, -1, &err), 0);
  assert_int_equal(pb_webplay_pinned(w), -1);
  j = play_ok(w, "5", 1);
  assert_non_null(strstr(j, "\"version\":6"));
  free(j);
  assert_int_equal(pb_webplay_pin(NULL, 1, &err), PB_EINVAL);
  pb_webplay_destroy(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_no_checkpoint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reply_and_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_versions, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pin, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
