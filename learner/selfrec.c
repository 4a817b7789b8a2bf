/* selfrec.c - run.record_selfplay: every self-play game the learner
 * takes, a JSON line each (common/play/record.h, docs/records.md), into
 * RUN_DIR/games/selfplay.jsonl.
 *
 * The file is opened once at start, like metrics.jsonl, and written
 * through a spool of its own (pb_metrics_set_async): the loop formats the
 * lines (the moves found from the rules, some microseconds a game) and
 * never waits for the disk. A spool that is full drops lines, counted
 * and logged, rather than block. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "state.h"

int pb__selfrec_open(pb_learner_t *l, pb_err_t *err) {
  if (!l->cfg.run.record_selfplay) return 0;
  char path[4200];
  snprintf(path, sizeof path, "%s/games", l->cfg.run.dir);
  if (pb_rundir_undo_mkdir(&l->undo, path, err) != 0) return err->code;
  snprintf(path, sizeof path, "%s/games/selfplay.jsonl", l->cfg.run.dir);
  pb_rundir_undo_note(&l->undo, path);
  if ((l->rec.out = pb_metrics_new(path, err)) == NULL ||
      pb_metrics_set_async(l->rec.out, PB_LEARNER_SPOOL_BYTES, err) != 0) {
    pb_metrics_destroy(&l->rec.out);
    return err->code ? err->code : PB_EIO;
  }
  if ((l->rec.moves = malloc((size_t)l->g->max_turns + 1)) == NULL) {
    pb_metrics_destroy(&l->rec.out);
    return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
  }
  pb_log_info(l->log, "recording self-play games in %s", path);
  return 0;
}

void pb__selfrec_close(pb_learner_t *l) {
  pb_metrics_destroy(&l->rec.out);
  free(l->rec.moves);
  l->rec.moves = NULL;
}

void pb__selfrec_item(pb_learner_t *l, uint64_t iteration,
                      const pb_msg_selfplay_result_t *r) {
  if (l->rec.out == NULL) return;
  pb_json_t j;
  pb_json_init(&j);
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    pb_record_t rec;
    pb_record_init(&rec, l->g);
    snprintf(rec.source, sizeof rec.source, "selfplay");
    rec.iteration = (int64_t)iteration;
    rec.version = (int64_t)ep->q_version;
    snprintf(rec.first, sizeof rec.first, "v%" PRIu64, ep->q_version);
    snprintf(rec.second, sizeof rec.second, "v%" PRIu64, ep->q_version);
    pb_err_t err;
    pb_err_clear(&err);
    /* The episode passed the rules' check before it came here. */
    int rc = pb_record_episode(
        l->g, ep->states, (int)ep->n_states, ep->final_reward, l->rec.moves,
        l->g->max_turns + 1, &rec.n_moves, &rec.result, &rec.capped, &err);
    rec.moves = l->rec.moves;
    if (rc == 0) rc = pb_record_json(&rec, &j, &err);
    if (rc != 0) {
      l->rec.failed++;
      if (pb__may_warn(l))
        pb_log_warn(l->log, "a self-play game was not recorded: %s", err.msg);
      continue;
    }
    if (pb_metrics_write(l->rec.out, pb_json_cstr(&j)) != 0) {
      l->rec.failed++;
      if (pb__may_warn(l))
        pb_log_warn(l->log,
                    "a self-play game was not recorded: the spool of "
                    "games/selfplay.jsonl is full (the disk is slow)");
    }
  }
  pb_json_free(&j);
}
