/* state.c - what every file of the learner uses: the learner's fate (a
 * fatal error, the loop shut down), the names of its phases, and who is
 * alive. The learner object itself is in state.h. */
#include <string.h>
#include <signal.h>
#include <stdio.h>

#include "precision.h"
#include "state.h"

void pb__set_fatal(pb_learner_t *l, const pb_err_t *err) {
  if (!l->fatal) {
    l->fatal = 1;
    l->fatal_err = *err;
    pb_log_error(l->log, "fatal: %s", err->msg);
  }
  uv_stop(&l->loop);
}

static void close_cb(uv_handle_t *h) { (void)h; }

void pb__shutdown_loop(pb_learner_t *l) {
  if (!l->handles_open) return;
  l->handles_open = 0;
  uv_poll_stop(&l->zpoll);
  uv_close((uv_handle_t *)&l->zpoll, close_cb);
  uv_close((uv_handle_t *)&l->zidle, close_cb);
  uv_close((uv_handle_t *)&l->tick, close_cb);
  uv_close((uv_handle_t *)&l->sigint, close_cb);
  uv_close((uv_handle_t *)&l->sigterm, close_cb);
  pb_http_destroy(&l->http);
}

const char *pb__phase_name(int p) {
  switch (p) {
  case PH_SELFPLAY: return "selfplay";
  case PH_PREPARE_SEARCH: return "prepare_search";
  case PH_SEARCH: return "search";
  case PH_TRAIN: return "train";
  case PH_DONE: return "done";
  }
  return "?";
}

int pb__pipelined(const pb_learner_t *l) {
  return l->cfg.train.pipeline && l->cfg.train.max_staleness >= 1;
}

static int count_alive(pb_learner_t *l, int role, int usable) {
  double t = now(l), horizon = 3.0 * l->cfg.net.heartbeat_ms / 1000.0;
  if (horizon < 5.0) horizon = 5.0;
  int n = 0;
  for (int i = 0; i < l->net.max_peers; i++) {
    peer_t *p = &l->net.peers[i];
    if (p->used && !p->other_start && t - p->last_seen < horizon &&
        (role == 0 || p->role == role) && !(usable && p->quarantined))
      n++;
  }
  return n;
}

int pb__workers_alive(pb_learner_t *l, int role) {
  return count_alive(l, role, 0);
}

int pb__workers_usable(pb_learner_t *l, int role) {
  return count_alive(l, role, 1);
}

int pb__role_precision(const pb_learner_t *l, int role) {
  const char *want = pb_config_precision(&l->cfg, role, NULL);
  if (strcmp(want, "bf16") == 0) return PB_NN_BF16;
  if (strcmp(want, "auto") == 0 &&
      pb_precision_auto_bf16(pb_nn_device(pb_learn_q(l->learn)), NULL, 0))
    return PB_NN_BF16;
  return PB_NN_FP32;
}
