/* make_seeds - writes the seed corpora of the fuzz targets that take
 * binary input: well-formed messages of every kind (fuzz/corpus/msg) and
 * a small checkpoint (fuzz/corpus/ckpt). Run by scripts/fuzz.sh --seeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "msg.h"

static void put(const char *dir, const char *name, const void *buf,
                size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(buf, 1, len, f) != len) {
    perror(path);
    exit(1);
  }
  fclose(f);
}

static void put_msg(const char *dir, const char *name, const pb_msg_t *m) {
  uint8_t *buf;
  size_t len;
  pb_err_t err;
  if (pb_msg_encode(m, &buf, &len, &err) != 0) {
    fprintf(stderr, "%s: %s\n", name, err.msg);
    exit(1);
  }
  put(dir, name, buf, len);
  free(buf);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_seeds MSG_DIR CKPT_DIR\n");
    return 2;
  }
  const char *md = argv[1];
  pb_msg_t m;
  pb_msg_init(&m, PB_MSG_HELLO, "", 0, "actor-1");
  m.hello.role = PB_ROLE_ACTOR;
  m.hello.threads = 2;
  m.hello.pid = 42;
  snprintf(m.hello.hostname, sizeof m.hello.hostname, "node");
  put_msg(md, "hello", &m);
  pb_msg_init(&m, PB_MSG_WORK_REQUEST, "c4-smoke", PB_GAME_CONNECT4, "a");
  m.work_request.role = PB_ROLE_SEARCHER;
  put_msg(md, "work_request", &m);
  pb_state_t s[3];
  const pb_game_t *g = &pb_game_connect4;
  g->reset(&s[0]);
  int done;
  s[1] = s[0];
  g->step(&s[1], 3, &done);
  s[2] = s[1];
  g->step(&s[2], 2, &done);
  pb_msg_init(&m, PB_MSG_WORK_ITEM, "c4-smoke", PB_GAME_CONNECT4, "learner");
  m.work_item.item_id = 7;
  m.work_item.lease_ms = 1000;
  m.work_item.kind = PB_WORK_SEARCH;
  m.work_item.states = s;
  m.work_item.n_states = 3;
  m.work_item.v_version = 2;
  m.work_item.q_version = 1;
  put_msg(md, "work_item", &m);
  pb_msg_episode_t ep = {s, 3, 1, 0, NULL};
  pb_msg_init(&m, PB_MSG_SELFPLAY_RESULT, "c4-smoke", PB_GAME_CONNECT4, "a");
  m.selfplay_result.item_id = 7;
  m.selfplay_result.episodes = &ep;
  m.selfplay_result.n_episodes = 1;
  put_msg(md, "selfplay_result", &m);
  /* the same episode with AlphaZero visit distributions */
  float pol[3 * 7] = {0, 0, 0, 1, 0, 0, 0,  0, 0, 0.5f, 0.5f, 0, 0, 0,
                      1.0f / 7, 1.0f / 7, 1.0f / 7, 1.0f / 7, 1.0f / 7,
                      1.0f / 7, 1.0f / 7};
  ep.policy = pol;
  put_msg(md, "selfplay_result_policy", &m);
  float q[2 * 7] = {0.5f, -0.25f, 0, 1, -1, 0.125f, 0,
                    0,    0,      0, 0, 0,  0,      0};
  pb_msg_init(&m, PB_MSG_SEARCH_RESULT, "c4-smoke", PB_GAME_CONNECT4, "s");
  m.search_result = (pb_msg_search_result_t){7, 2, 7, q};
  put_msg(md, "search_result", &m);
  uint64_t ids[2] = {7, 8};
  pb_msg_init(&m, PB_MSG_HEARTBEAT, "c4-smoke", PB_GAME_CONNECT4, "s");
  m.heartbeat.item_ids = ids;
  m.heartbeat.n_item_ids = 2;
  put_msg(md, "heartbeat", &m);
  pb_msg_init(&m, PB_MSG_BYE, "c4-smoke", PB_GAME_CONNECT4, "s");
  put_msg(md, "bye", &m);

  pb_err_t err;
  pb_ckpt_t *ck = pb_ckpt_new(&err);
  if (ck == NULL || pb_ckpt_add(ck, "meta", "{\"version\":3}", 13, &err) != 0 ||
      pb_ckpt_add(ck, "v.state", q, sizeof q, &err) != 0) {
    fprintf(stderr, "ckpt: %s\n", err.msg);
    return 1;
  }
  uint8_t *buf;
  size_t len;
  if (pb_ckpt_encode(ck, &buf, &len, &err) != 0) {
    fprintf(stderr, "ckpt: %s\n", err.msg);
    return 1;
  }
  put(argv[2], "small.pbck", buf, len);
  free(buf);
  pb_ckpt_destroy(&ck);
  return 0;
}
