/* bench_msg.c - encode and decode rates of the two bulk messages.
 *
 *   SelfplayResult: 16 random Connect Four games (~21 positions each), as an
 *                   actor sends after a work item.
 *   SearchResult:   256 positions x 7 Q targets, as a searcher sends.
 *   SearchWork:     a WorkItem of 256 positions, as the learner sends.
 *
 * Decode includes everything a receiver pays for: protobuf-c unpack, every
 * position validated by the game, and (SelfplayResult) each episode checked
 * to be one game. Encode goes into a reused pb_msg_buf_t.
 *
 * Usage: bench_msg [seconds per measurement, default 1]
 * Prints one line per message and direction: messages/s, MB/s of wire
 * bytes, and positions/s. Inputs are fixed (seeded), so the byte counts are
 * stable from run to run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "game.h"
#include "msg.h"
#include "rng.h"

enum { EPISODES = 16, SEARCH_STATES = 256 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t play(pb_rng_t *r, pb_state_t *out, int *final_reward) {
  const pb_game_t *g = &pb_game_connect4;
  pb_state_t s;
  uint8_t acts[PB_MAX_ACTIONS];
  uint32_t n = 0;
  int done = 0;
  float rew = 0;
  g->reset(&s);
  while (!done) {
    out[n++] = s;
    int k = g->legal(&s, acts);
    rew = g->step(&s, acts[pb_rng_below(r, (uint32_t)k)], &done);
  }
  *final_reward = (int)rew;
  return n;
}

/* Encodes m over and over for `secs`, then decodes the result as often;
 * prints both rates. Returns nonzero on any codec error. */
static int measure(const char *name, const pb_msg_t *m, size_t positions,
                   double secs) {
  static const pb_msg_expect_t ex = {"bench", PB_GAME_CONNECT4};
  pb_msg_buf_t buf = {0};
  pb_err_t err;
  if (pb_msg_encode_buf(m, &buf, &err) != 0) {
    fprintf(stderr, "%s: %s\n", name, err.msg);
    return 1;
  }
  long n = 0;
  double t0 = now_s(), t;
  do {
    for (int i = 0; i < 64; i++, n++)
      if (pb_msg_encode_buf(m, &buf, &err) != 0) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        pb_msg_buf_free(&buf);
        return 1;
      }
    t = now_s() - t0;
  } while (t < secs);
  double mb = (double)buf.len * (double)n / t / 1e6;
  printf("%-16s encode %9.0f msg/s %8.1f MB/s %11.0f pos/s  (%zu bytes)\n",
         name, n / t, mb, (double)positions * n / t, buf.len);

  n = 0;
  t0 = now_s();
  do {
    for (int i = 0; i < 64; i++, n++) {
      pb_msg_t d;
      if (pb_msg_decode(buf.data, buf.len, &ex, &d, &err) != 0) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        pb_msg_buf_free(&buf);
        return 1;
      }
      pb_msg_free(&d);
    }
    t = now_s() - t0;
  } while (t < secs);
  mb = (double)buf.len * (double)n / t / 1e6;
  printf("%-16s decode %9.0f msg/s %8.1f MB/s %11.0f pos/s\n", name, n / t, mb,
         (double)positions * n / t);
  pb_msg_buf_free(&buf);
  return 0;
}

int main(int argc, char **argv) {
  double secs = 1.0;
  const char *arg[1] = {NULL};
  int npos = 0;
  bench_usage_text = "usage: bench_msg [seconds per measurement, (0, 600)]\n";
  const pb_opts_t o = {"bench_msg", bench_usage, NULL, 0, arg, 1, &npos};
  int rc = pb_opts_parse(&o, argc, argv);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_double(&o, "seconds", arg[0], 1e-9, 599.999, &secs);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_rng_t r;
  pb_rng_seed(&r, 2024, 0);

  static pb_state_t states[EPISODES][42];
  pb_msg_episode_t eps[EPISODES];
  size_t total = 0;
  for (int i = 0; i < EPISODES; i++) {
    eps[i].states = states[i];
    eps[i].n_states = play(&r, states[i], &eps[i].final_reward);
    eps[i].q_version = 1;
    eps[i].policy = NULL;
    total += eps[i].n_states;
  }
  pb_msg_t sp;
  pb_msg_init(&sp, PB_MSG_SELFPLAY_RESULT, "bench", PB_GAME_CONNECT4,
              "actor-0");
  sp.selfplay_result = (pb_msg_selfplay_result_t){1, eps, EPISODES};

  static pb_state_t pos[SEARCH_STATES];
  static float q[SEARCH_STATES * 7];
  for (int i = 0; i < SEARCH_STATES; i++) {
    pb_state_t ep[42];
    int fr;
    uint32_t n = play(&r, ep, &fr);
    pos[i] = ep[pb_rng_below(&r, n)];
  }
  for (int i = 0; i < SEARCH_STATES * 7; i++)
    q[i] = (float)(2 * pb_rng_uniform(&r) - 1);
  pb_msg_t sr;
  pb_msg_init(&sr, PB_MSG_SEARCH_RESULT, "bench", PB_GAME_CONNECT4,
              "searcher-0");
  sr.search_result = (pb_msg_search_result_t){2, SEARCH_STATES, 7, q};

  pb_msg_t wi;
  pb_msg_init(&wi, PB_MSG_WORK_ITEM, "bench", PB_GAME_CONNECT4, "learner");
  wi.work_item = (pb_msg_work_item_t){.item_id = 3,
                                      .lease_ms = 60000,
                                      .kind = PB_WORK_SEARCH,
                                      .states = pos,
                                      .n_states = SEARCH_STATES};

  printf(
      "bench_msg: %d episodes, %zu positions (%.1f per episode); "
      "%d search positions\n",
      EPISODES, total, (double)total / EPISODES, SEARCH_STATES);
  int bad = measure("SelfplayResult", &sp, total, secs);
  bad |= measure("SearchResult", &sr, SEARCH_STATES, secs);
  bad |= measure("WorkItem/search", &wi, SEARCH_STATES, secs);
  return bad;
}
