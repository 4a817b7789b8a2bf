/* state_intake.h - private to learner/: what arrives from workers, counted
 * (pb_lintake_t, l->intake: written by peers.c, which reads and decodes
 * every message, and intake.c, which takes results into the iteration),
 * and the self-play games written to run.record_selfplay's file
 * (pb_lrec_t, l->rec: selfrec.c). */
#ifndef PB_LEARNER_STATE_INTAKE_H
#define PB_LEARNER_STATE_INTAKE_H

#include <stdint.h>

#include "log.h"

typedef struct {
  uint64_t msgs_in, bytes_in, msgs_bad, msgs_mismatch;
  uint64_t positions_in, results_dup, results_bad;
  uint64_t results_not_holder; /* results from a peer without the lease */
  uint64_t peers_full; /* messages of new connections dropped: every entry
                          of the table holds leases */
} pb_lintake_t;

typedef struct {
  pb_metrics_t *out; /* games/selfplay.jsonl (NULL: off) */
  uint8_t *moves;
  uint64_t failed; /* games not recorded */
} pb_lrec_t;

#endif
