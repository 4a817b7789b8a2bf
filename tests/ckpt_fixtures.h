/* ckpt_fixtures.h - what test_agent_search.c and test_agent_bpip.c
 * share: untrained checkpoints of every game (pb_learn_new, saved) as a
 * cmocka group fixture, a legality check, and batched moves checked
 * against single ones. Include after cmocka.h and
 * agent_fixtures.h. */
#ifndef PB_TEST_CKPT_FIXTURES_H
#define PB_TEST_CKPT_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent.h"
#include "config.h"
#include "game.h"
#include "learn.h"
#include "rng.h"

/* Untrained checkpoints: the four games (probs) and Tic-Tac-Toe
 * (alphazero), in a temporary directory. */
typedef struct {
  char dir[64];
  char path[5][256];
} ckpts_t;

static const char *const cfgs[5] = {"tictactoe-smoke", "connect4-smoke",
                                    "othello-smoke", "toguz-smoke",
                                    "tictactoe-alphazero"};

/* Makes them in a new directory /tmp/pb_test_<tag>_XXXXXX. */
static int ckpts_setup(void **state, const char *tag) {
  ckpts_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/pb_test_%s_XXXXXX", tag);
  if (mkdtemp(f->dir) == NULL) return -1;
  for (int i = 0; i < 5; i++) {
    char file[256];
    snprintf(file, sizeof file, PB_SOURCE_DIR "/configs/%s.yaml", cfgs[i]);
    snprintf(f->path[i], sizeof f->path[i], "%s/%s.pbck", f->dir, cfgs[i]);
    pb_config_t cfg;
    pb_err_t err;
    pb_config_defaults(&cfg);
    if (pb_config_load_file(&cfg, file, &err) != 0) {
      fprintf(stderr, "%s: %s\n", file, err.msg);
      return -1;
    }
    pb_learn_t *l = pb_learn_new(&cfg, &err);
    if (l == NULL || pb_learn_save(l, f->path[i], NULL, 0, &err) != 0) {
      fprintf(stderr, "%s: %s\n", file, err.msg);
      return -1;
    }
    pb_learn_destroy(&l);
  }
  *state = f;
  return 0;
}

static int ckpts_teardown(void **state) {
  ckpts_t *f = *state;
  for (int i = 0; i < 5; i++) remove(f->path[i]);
  rmdir(f->dir);
  free(f);
  return 0;
}

static int is_legal(const pb_game_t *g, const pb_state_t *s, int a) {
  uint8_t legal[PB_MAX_ACTIONS];
  int n = g->legal(s, legal);
  for (int k = 0; k < n; k++)
    if (legal[k] == a) return 1;
  return 0;
}

/* Positions from random play (12 plies at most, seeded by seed) answered
 * as one batch: legal moves, each what a single call chooses. */
static void batched_equals_single(pb_agent_t *a, const pb_game_t *g,
                                  uint64_t seed) {
  enum { N = 12 };
  pb_state_t pos[N];
  int out[N];
  pb_rng_t rng;
  pb_err_t err;
  pb_rng_seed(&rng, seed, 0);
  for (int i = 0; i < N; i++) pos[i] = random_position(g, &rng, 12);
  assert_int_equal(pb_agent_act_many(a, pos, N, 0, out, &err), 0);
  for (int i = 0; i < N; i++) {
    assert_true(is_legal(g, &pos[i], out[i]));
    assert_int_equal(pb_agent_act(a, &pos[i], &err), out[i]);
  }
}

#endif
