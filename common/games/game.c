/* game.c - the registry of games and the helpers every game shares.
 *
 * The registry is a static const table: adding a game means adding its
 * pb_game_t to `games` below (and its id to game.h). */
#include "game.h"

#include <string.h>

#include "invariant.h"

static const pb_game_t *const games[] = {
    &pb_game_connect4,
    &pb_game_tictactoe,
    &pb_game_othello,
    &pb_game_toguz,
};
#define PB__NGAMES (sizeof games / sizeof games[0])

const pb_game_t *pb_game_by_name(const char *name) {
  if (name == NULL) return NULL;
  for (size_t i = 0; i < PB__NGAMES; i++)
    if (!strcmp(games[i]->name, name)) return games[i];
  return NULL;
}

const pb_game_t *pb_game_by_id(int id) {
  for (size_t i = 0; i < PB__NGAMES; i++)
    if (games[i]->id == id) return games[i];
  return NULL;
}

const char *pb_game_names(void) {
  /* Kept by hand beside the table; test_game checks they agree. */
  return "connect4, tictactoe, othello, toguz";
}

int pb_game_step_checked(const pb_game_t *g, pb_state_t *s, int action,
                         float *reward, int *done, pb_err_t *err) {
  if (g == NULL || s == NULL)
    return pb_err_set(err, PB_EINVAL, "step: NULL game or state");
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  pb_assert(n >= 0 && n <= g->num_actions && g->num_actions <= PB_MAX_ACTIONS);
  if (n == 0)
    return pb_err_set(err, PB_EILLEGAL,
                      "%s: no move is legal: the game is over", g->name);
  int ok = 0;
  for (int i = 0; i < n && !ok; i++) ok = acts[i] == action;
  if (!ok) {
    char name[16] = "?";
    if (action >= 0 && action < g->num_actions)
      g->action_name(action, name, sizeof name);
    return pb_err_set(err, PB_EILLEGAL, "%s: illegal action %d (move '%s')",
                      g->name, action, name);
  }
  int d = 0;
  float r = g->step(s, action, &d);
  if (reward != NULL) *reward = r;
  if (done != NULL) *done = d;
  return 0;
}

static uint64_t perft_rec(const pb_game_t *g, const pb_state_t *s, int depth) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  /* Bulk counting: at the last ply each legal move is one path. */
  if (depth == 1) return (uint64_t)n;
  uint64_t paths = 0;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    g->step(&c, acts[i], &done);
    if (!done) paths += perft_rec(g, &c, depth - 1);
  }
  return paths;
}

uint64_t pb_game_perft(const pb_game_t *g, const pb_state_t *s, int depth) {
  pb_assert(g != NULL && s != NULL);
  if (depth <= 0) return 1;
  return perft_rec(g, s, depth);
}

static uint64_t games_rec(const pb_game_t *g, const pb_state_t *s, int depth) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  uint64_t games = 0;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    g->step(&c, acts[i], &done);
    if (done)
      games++;
    else if (depth > 1)
      games += games_rec(g, &c, depth - 1);
  }
  return games;
}

uint64_t pb_game_count_games(const pb_game_t *g, const pb_state_t *s,
                             int depth) {
  if (depth <= 0) return 0;
  return games_rec(g, s, depth);
}

int pb_game_text_out(char *buf, size_t n, const char *text, size_t len) {
  if (len >= n) len = n - 1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  return (int)len;
}
