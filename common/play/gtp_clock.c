/* gtp_clock.c - a GTP engine's time control (gtp_clock.h). */
#include "gtp_clock.h"

#include <math.h>
#include <string.h>

#include "err.h"

static int bad_seconds(double x) {
  return !(x >= 0 && x <= PB_GTP_CLOCK_MAX_S); /* NaN too */
}

void pb_gtp_clock_init(pb_gtp_clock_t *c) {
  memset(c, 0, sizeof *c);
}

/* Canadian byo-yomi follows the main time. */
static int has_byo(const pb_gtp_clock_t *c) {
  return c->byo_s > 0 && c->byo_stones > 0;
}

/* Color's clock at the start of a game. */
static void start(pb_gtp_clock_t *c, int color) {
  if (c->main_s <= 0 && has_byo(c)) {
    c->left_s[color] = c->byo_s;
    c->stones_left[color] = c->byo_stones;
  } else {
    c->left_s[color] = c->main_s;
    c->stones_left[color] = 0;
  }
}

void pb_gtp_clock_restart(pb_gtp_clock_t *c) {
  if (!c->set) return; /* only time_left's figures: nothing to restart */
  start(c, 0);
  start(c, 1);
}

int pb_gtp_clock_settings(pb_gtp_clock_t *c, double main_s, double byo_s,
                          int byo_stones) {
  if (bad_seconds(main_s) || bad_seconds(byo_s) || byo_stones < 0)
    return PB_EINVAL;
  c->set = 1;
  c->main_s = main_s;
  c->byo_s = byo_s;
  c->byo_stones = byo_stones;
  /* GTP: byo-yomi time with no stones means no limit. */
  c->limited = !(byo_s > 0 && byo_stones == 0);
  pb_gtp_clock_restart(c);
  return 0;
}

int pb_gtp_clock_left(pb_gtp_clock_t *c, int color, double left_s, int stones) {
  if ((color != 0 && color != 1) || bad_seconds(left_s) || stones < 0)
    return PB_EINVAL;
  if (!c->set) c->limited = 1; /* a controller that only sends time_left */
  c->left_s[color] = left_s;
  c->stones_left[color] = stones;
  return 0;
}

void pb_gtp_clock_spend(pb_gtp_clock_t *c, int color, double spent_s) {
  if (!c->limited || (color != 0 && color != 1) || !(spent_s >= 0)) return;
  double left = c->left_s[color] - spent_s;
  if (c->stones_left[color] > 0) { /* in a byo-yomi period */
    if (--c->stones_left[color] == 0 || left < 0) {
      /* the period is played (or lost): the next one */
      c->stones_left[color] = c->byo_stones > 0 ? c->byo_stones : 0;
      left = c->byo_s;
    }
  } else if (left < 0 && has_byo(c)) { /* main time is over */
    c->stones_left[color] = c->byo_stones;
    left = c->byo_s + left;
  }
  c->left_s[color] = left > 0 ? left : 0;
}

int pb_gtp_clock_moves_left(const pb_game_t *g, int ply) {
  int plies = g->id == PB_GAME_OTHELLO     ? 60
              : g->id == PB_GAME_CONNECT4  ? 42
              : g->id == PB_GAME_TICTACTOE ? 9
              : g->id == PB_GAME_TOGUZ     ? 160
              : g->max_turns < 200         ? g->max_turns
                                           : 200;
  int left = (plies - ply + 1) / 2;
  return left > PB_GTP_CLOCK_MIN_MOVES ? left : PB_GTP_CLOCK_MIN_MOVES;
}

int64_t pb_gtp_clock_budget_ms(const pb_gtp_clock_t *c, const pb_game_t *g,
                               int color, int ply) {
  if (!c->limited || (color != 0 && color != 1)) return -1;
  double share;
  if (c->stones_left[color] > 0) {
    share = c->left_s[color] / c->stones_left[color];
  } else {
    share = c->left_s[color] / pb_gtp_clock_moves_left(g, ply);
    if (has_byo(c)) share += c->byo_s / c->byo_stones;
  }
  double ms =
      share * 1000.0 * PB_GTP_CLOCK_USE / 100.0 - PB_GTP_CLOCK_RESERVE_MS;
  return ms >= 1 ? (int64_t)floor(ms) : 1;
}
