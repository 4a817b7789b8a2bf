/* agent_fixtures.h - what the agent and search tests (test_agent.c,
 * test_agent_net.c, test_mcts.c, test_uct.c) share: the games, positions from move strings or random play, and the
 * exact Tic-Tac-Toe minimax. Include after cmocka.h. */
#ifndef PB_TEST_AGENT_FIXTURES_H
#define PB_TEST_AGENT_FIXTURES_H

#include <stdint.h>

#include "game.h"
#include "rng.h"

#define C4 (&pb_game_connect4)
#define T3 (&pb_game_tictactoe)

static inline pb_state_t pos(const pb_game_t *g, const char *moves) {
  pb_state_t s;
  pb_err_t err;
  if (g->parse(&s, moves, &err) != 0) fail_msg("parse %s: %s", moves, err.msg);
  return s;
}

/* A position after up to max_plies random moves from the start, not
 * terminal. */
static inline pb_state_t random_position(const pb_game_t *g, pb_rng_t *rng,
                                         int max_plies) {
  for (;;) {
    pb_state_t s;
    g->reset(&s);
    int plies = (int)pb_rng_below(rng, (uint32_t)max_plies + 1), done = 0;
    for (int p = 0; p < plies && !done; p++) {
      uint8_t acts[PB_MAX_ACTIONS];
      int n = g->legal(&s, acts);
      g->step(&s, acts[pb_rng_below(rng, (uint32_t)n)], &done);
    }
    if (!done) return s;
  }
}

/* Exact minimax value of a Tic-Tac-Toe position (side to move). */
static inline int t3_minimax(const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int n = T3->legal(s, acts), best = -2;
  for (int i = 0; i < n; i++) {
    pb_state_t c = *s;
    int done = 0;
    float r = T3->step(&c, acts[i], &done);
    int v = done ? (int)r : -t3_minimax(&c);
    if (v > best) best = v;
  }
  return best;
}

/* Each move out[i] keeps the minimax value of the Tic-Tac-Toe position
 * s[i]: an optimal move (of n positions). */
static inline void t3_assert_optimal(const pb_state_t *s, const int *out,
                                     int n) {
  for (int i = 0; i < n; i++) {
    pb_state_t c = s[i];
    int done = 0;
    float r = T3->step(&c, out[i], &done);
    assert_int_equal(done ? (int)r : -t3_minimax(&c), t3_minimax(&s[i]));
  }
}

#endif
