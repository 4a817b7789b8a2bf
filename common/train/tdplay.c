/* tdplay.c - epsilon-greedy n-ply self-play (see tdplay.h).
 *
 * Workload: items of tens of games, one game at a time; the search
 * dominates. One state buffer per call, nothing allocated per move. */
#include "tdplay.h"

#include <stdlib.h>

#include "rng.h"

/* One game from the initial position into buf; returns 0 or tick's code,
 * and sets *len and *reward (the last mover's). */
static int play_one(const pb_linear_t *lin, const pb_tdplay_opts_t *o,
                    pb_rng_t *rng, pb_state_t *buf, uint32_t *len, int *reward,
                    pb_tdplay_stats_t *st, pb_err_t *err) {
  const pb_game_t *g = lin->g;
  pb_state_t s;
  g->reset(&s);
  uint8_t acts[PB_MAX_ACTIONS];
  uint32_t t = 0;
  *reward = 0;
  for (;;) {
    int n = g->legal(&s, acts);
    if (n == 0 || t >= (uint32_t)o->max_turns) break;
    if (o->tick != NULL) {
      int rc = o->tick(o->tick_ctx, err);
      if (rc != 0) return rc;
    }
    int a;
    if (pb_rng_uniform(rng) < o->epsilon) {
      a = acts[pb_rng_below(rng, (uint32_t)n)];
      st->random_moves++;
    } else {
      a = pb_nply_best(lin, &s, o->ply, NULL, &st->search);
    }
    buf[t++] = s;
    st->moves++;
    int done = 0;
    float r = g->step(&s, a, &done);
    if (done) {
      *reward = r > 0 ? 1 : r < 0 ? -1 : 0;
      break;
    }
  }
  *len = t;
  return 0;
}

int pb_tdplay_run(const pb_linear_t *lin, const pb_tdplay_opts_t *o, int n,
                  uint64_t seed, uint64_t first_index, uint64_t version,
                  pb_episodes_t *out, pb_tdplay_stats_t *st, pb_err_t *err) {
  if (lin == NULL || lin->g == NULL || o == NULL || out == NULL || n < 0 ||
      o->ply < 1 || o->ply > PB_NPLY_MAX_DEPTH || o->max_turns < 1 ||
      !(o->epsilon >= 0.0 && o->epsilon <= 1.0))
    return pb_err_set(err, PB_EINVAL,
                      "td self-play: bad options (ply 1..%d, max_turns >= "
                      "1, epsilon 0..1)",
                      PB_NPLY_MAX_DEPTH);
  pb_tdplay_stats_t local = {0};
  if (st == NULL) st = &local;
  pb_state_t *buf = malloc((size_t)o->max_turns * sizeof *buf);
  if (buf == NULL) return pb_err_set(err, PB_ENOMEM, "td self-play: no memory");
  const size_t n_eps0 = out->n_eps, n_states0 = out->n_states;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    pb_rng_t rng;
    pb_rng_seed(&rng, seed, first_index + (uint64_t)i);
    uint32_t len;
    int reward;
    rc = play_one(lin, o, &rng, buf, &len, &reward, st, err);
    if (rc == 0 && len > 0)
      rc = pb_episodes_add(out, buf, len, reward, version, err);
  }
  free(buf);
  if (rc != 0) {
    out->n_eps = n_eps0;
    out->n_states = n_states0;
  }
  return rc;
}
