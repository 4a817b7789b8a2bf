/* webplay.c - see webplay.h. */
#include "webplay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "analysis.h"
#include "ckpt.h"
#include "json.h"
#include "nn.h"
#include "rundir.h"

#define PATH_MAX_ 4200

struct pb_webplay {
  const pb_game_t *g;
  char dir[PATH_MAX_]; /* RUN_DIR/checkpoints */
  char run_dir[PATH_MAX_];
  long long pinned;    /* the version to play, -1: the newest */
  int threads;
  pb_agent_t *agent;
  long long version;   /* of agent, -1 when none */
  long long bad;       /* newest version that failed to load, -1 none */
  pb_err_t bad_err;    /* why */
};

pb_webplay_t *pb_webplay_new(const pb_game_t *g, const char *run_dir,
                             int threads, pb_err_t *err) {
  if (g == NULL || run_dir == NULL || strlen(run_dir) > 4000) {
    pb_err_set(err, PB_EINVAL, "webplay: NULL game or run dir, or a run dir "
                               "longer than 4000 bytes");
    return NULL;
  }
  pb_webplay_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    pb_err_set(err, PB_ENOMEM, "webplay: out of memory");
    return NULL;
  }
  w->g = g;
  snprintf(w->dir, sizeof w->dir, "%s/checkpoints", run_dir);
  snprintf(w->run_dir, sizeof w->run_dir, "%s", run_dir);
  w->pinned = -1;
  w->threads = threads < 1 ? 1 : threads;
  w->version = w->bad = -1;
  return w;
}

void pb_webplay_destroy(pb_webplay_t **pw) {
  if (pw == NULL || *pw == NULL) return;
  pb_agent_destroy(&(*pw)->agent);
  free(*pw);
  *pw = NULL;
}

long long pb_webplay_version(const pb_webplay_t *w) {
  return w ? w->version : -1;
}

/* The agent of the checkpoint at `path` (version num), or NULL + err. */
static pb_agent_t *load(const pb_webplay_t *w, const char *path,
                        pb_err_t *err) {
  char spec[PATH_MAX_ + 80];
  snprintf(spec, sizeof spec, "checkpoint:%s", path);
  pb_agent_t *a = pb_agent_new(w->g, spec, 0, err);
  if (a == NULL && err != NULL && err->code == 0) err->code = PB_EIO;
  return a;
}

int pb_webplay_pin(pb_webplay_t *w, long long version, pb_err_t *err) {
  if (w == NULL) return pb_err_set(err, PB_EINVAL, "webplay: NULL argument");
  if (version < 0) {
    if (w->pinned >= 0) {
      pb_agent_destroy(&w->agent);
      w->version = w->bad = -1;
    }
    w->pinned = -1;
    return 0;
  }
  char path[PATH_MAX_ + 64];
  pb_rundir_ckpt_path(w->run_dir, (uint64_t)version, path, sizeof path);
  if (access(path, F_OK) != 0)
    return pb_err_set(err, PB_ENOTFOUND,
                      "no checkpoint of version %lld: %s does not exist "
                      "(pruned, or not trained yet)",
                      version, path);
  pb_err_t e;
  pb_err_clear(&e);
  pb_agent_t *a = load(w, path, &e);
  if (a == NULL) {
    if (err) *err = e;
    return e.code;
  }
  pb_agent_destroy(&w->agent);
  w->agent = a;
  w->version = version;
  w->bad = -1;
  w->pinned = version;
  return 0;
}

long long pb_webplay_pinned(const pb_webplay_t *w) {
  return w ? w->pinned : -1;
}

/* Makes sure the agent is the newest loadable checkpoint's (or the pinned
 * one, loaded by pb_webplay_pin). */
static int refresh(pb_webplay_t *w, pb_err_t *err) {
  if (w->pinned >= 0 && w->agent != NULL) return 0;
  char path[PATH_MAX_ + 64];
  uint64_t num = 0;
  int rc = pb_ckpt_newest(w->dir, "ckpt", path, sizeof path, &num, err);
  if (rc == PB_ENOTFOUND && w->agent == NULL)
    return pb_err_set(err, PB_ENOTFOUND,
                      "no checkpoint yet in %s: the model cannot play", w->dir);
  if (rc != 0) return w->agent != NULL ? 0 : rc;
  if ((long long)num == w->version) return 0;
  if ((long long)num == w->bad) {
    if (w->agent != NULL) return 0;
    if (err) *err = w->bad_err;
    return w->bad_err.code;
  }
  pb_err_t e;
  pb_err_clear(&e);
  pb_agent_t *a = load(w, path, &e);
  if (a == NULL) {
    /* Keep playing with the previous one; do not retry this file. */
    w->bad = (long long)num;
    w->bad_err = e;
    if (w->agent != NULL) return 0;
    if (err) *err = w->bad_err;
    return w->bad_err.code;
  }
  pb_agent_destroy(&w->agent);
  w->agent = a;
  w->version = (long long)num;
  return 0;
}

int pb_webplay_move(pb_webplay_t *w, const char *moves, int reply,
                    char **json, pb_err_t *err) {
  if (json != NULL) *json = NULL;
  if (w == NULL || moves == NULL || json == NULL)
    return pb_err_set(err, PB_EINVAL, "webplay: NULL argument");
  size_t mlen = strnlen(moves, PB_WEBPLAY_MOVES_MAX + 1);
  if (mlen > PB_WEBPLAY_MOVES_MAX)
    return pb_err_set(err, PB_ERANGE,
                      "move list longer than %d characters",
                      PB_WEBPLAY_MOVES_MAX);
  const pb_game_t *g = w->g;
  pb_state_t s;
  int rc = g->parse(&s, moves, err);
  if (rc != 0) return rc;
  if (g->ply(&s) > g->max_turns)
    return pb_err_set(err, PB_EILLEGAL, "more than %d moves", g->max_turns);
  uint8_t legal[PB_MAX_ACTIONS];
  int nl = g->legal(&s, legal);
  int over = nl == 0 || g->ply(&s) >= g->max_turns;
  char reply_name[16] = "";
  int asked = reply && !over;
  if (asked) {
    if ((rc = refresh(w, err)) != 0) return rc;
    int a = pb_agent_act(w->agent, &s, err);
    /* The agent set libtorch's (process-wide) thread count to 1. */
    pb_nn_set_threads(w->threads);
    if (a < 0) return a;
    if (g->action_name(a, reply_name, sizeof reply_name) < 0)
      return pb_err_set(err, PB_EINVAL, "webplay: action %d has no name", a);
    if ((rc = pb_game_step_checked(g, &s, a, NULL, NULL, err)) != 0) return rc;
    nl = g->legal(&s, legal);
    over = nl == 0 || g->ply(&s) >= g->max_turns;
  }
  int ply = g->ply(&s);
  char board[256];
  g->render(&s, board, sizeof board);

  pb_json_t j;
  pb_json_init(&j);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "game", g->name);
  pb_json_key(&j, "version");
  if (asked)
    pb_json_int(&j, w->version);
  else
    pb_json_null(&j);
  pb_json_key(&j, "moves");
  {
    /* The list as given, then the reply. */
    char *all = malloc(mlen + sizeof reply_name);
    if (all == NULL) {
      pb_json_free(&j);
      return pb_err_set(err, PB_ENOMEM, "webplay: out of memory");
    }
    memcpy(all, moves, mlen);
    strcpy(all + mlen, reply_name);
    pb_json_str(&j, all);
    free(all);
  }
  pb_json_key(&j, "reply");
  pb_json_str(&j, asked ? reply_name : NULL);
  pb_json_kstr(&j, "board", board);
  pb_json_kint(&j, "ply", ply);
  const char to_move[2] = {pb_analysis_side(g, &s), '\0'};
  pb_json_kstr(&j, "to_move", to_move);
  pb_json_key(&j, "legal");
  pb_json_arr_begin(&j);
  for (int i = 0; i < nl && !over; i++) {
    char nm[16];
    if (g->action_name(legal[i], nm, sizeof nm) >= 0) pb_json_str(&j, nm);
  }
  pb_json_arr_end(&j);
  pb_json_kbool(&j, "over", over);
  const char *winner = NULL, *result = NULL;
  char res[16] = "";
  if (over) {
    /* A game cut at the turn limit is a draw. */
    if (!pb_analysis_result(g, &s, res, sizeof res))
      snprintf(res, sizeof res, "draw");
    result = res;
    if (strstr(res, "wins") != NULL) winner = res[0] == 'X' ? "X" : "O";
  }
  pb_json_key(&j, "winner");
  pb_json_str(&j, winner);
  pb_json_key(&j, "result");
  pb_json_str(&j, result);
  pb_json_obj_end(&j);
  if (pb_json_error(&j) != 0) {
    pb_json_free(&j);
    return pb_err_set(err, PB_ENOMEM, "webplay: out of memory");
  }
  *json = pb_json_take(&j);
  return 0;
}
