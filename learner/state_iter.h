/* state_iter.h - private to learner/: the iteration under way (pb_liter_t,
 * l->it): its self-play and search items, the phase, the job on the
 * thread pool, the weights it makes, its timings. Written by phases.c
 * (and learner.c, which makes and frees it); the other files read it, and
 * hand arriving results to it through pb__intake_* (intake.c). */
#ifndef PB_LEARNER_STATE_ITER_H
#define PB_LEARNER_STATE_ITER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "err.h"
#include "iteration.h"
#include "state_net.h"
#include "workq.h"

/* The phases of an iteration (learner.c's top comment). */
enum { PH_SELFPLAY = 1, PH_PREPARE_SEARCH, PH_SEARCH, PH_TRAIN, PH_DONE };

typedef struct {
  /* The iteration (common/algo/iteration.h): its self-play items and their
   * episodes, the positions to search and their targets, the training.
   * pb_iter_selfplay_iter is the iteration spq's items are for (0: none). */
  pb_iter_t *iter;
  pb_workq_t *wq;  /* search items */
  pb_workq_t *spq; /* self-play items */
  int phase;
  double done_at;
  size_t max_items;  /* the work queues' capacity */
  size_t n_bs_items; /* search items of the current iteration */
  wbuf_t vw_new, qw_new; /* made by a job, served on completion */

  /* the running job */
  uv_work_t job;
  int job_kind; /* PH_PREPARE_SEARCH or PH_TRAIN, 0 = none */
  int job_rc;
  pb_err_t job_err;
  double job_ckpt_s;
  /* pb_now() when the job's checkpoint write began, 0 when none runs: set
   * by the pool thread, read by the loop (/status's disk.stalled_s), so a
   * write that blocks (a frozen file system) shows while it blocks */
  _Atomic double ckpt_since;

  /* no worker the learner accepts for the phase, since (0: there is one) */
  double starved_since, starved_warned;

  /* timings of the current iteration */
  double t_iter, t_phase, t_selfplay, t_search, t_train_v, t_train_q;
} pb_liter_t;

/* What status.c last reported (l->status; written by status.c): the
 * progress line's time and the last iteration's figures. */
typedef struct {
  double last_progress;
  double last_v_loss, last_q_loss, last_iter_s;
} pb_lstatus_t;

#endif
