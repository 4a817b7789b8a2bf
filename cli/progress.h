/* progress.h - the terminal's view of a run: one short line per event of
 * metrics.jsonl.
 *
 * `probs train` follows RUN_DIR/metrics.jsonl and prints, for every line
 * it understands, one line a person reads at a glance; everything else
 * stays in metrics.jsonl and the logs:
 *
 *   21:31:09 iteration 12/100 in 15.0s (self-play 0.4, V 5.2, search 9.3,
 *            Q 4.7) | loss V 0.2073, Q 0.03016 | 50164 positions/s, 1743
 *            states/s | elapsed 3m05s, ETA 22m10s
 *   21:31:20 eval v12: Elo 1895 [1848, 1946] | vs lookahead:3 (1603):
 *            W/D/L 169/6/25 | optimal moves: Q 0.756, V 0.768, beam 0.804
 *   21:31:27 iteration 13/100 search: 12/40 items (30%), 1650 states/s,
 *            ETA 21s
 *
 * (each on one line). The clock is the line's own "unix_time" (local
 * time), elapsed counts from pb_progress_init, the ETA is the mean of the
 * last 10 iterations' times per iteration still to do. The strongest
 * anchor is the opponent with the highest "anchor" rating. Fields a line
 * lacks are left out of it. */
#ifndef PB_PROGRESS_H
#define PB_PROGRESS_H

#include <stddef.h>

#define PB_PROGRESS_WINDOW 10 /* iterations the ETA averages */

typedef struct pb_progress {
  int iterations; /* train.iterations: "12/100" and the ETA; 0 = unknown */
  double start;   /* UNIX time elapsed counts from */
  double recent[PB_PROGRESS_WINDOW]; /* the last iteration times */
  int n_recent, next;
  int bad_lines; /* lines that were not one JSON object */
} pb_progress_t;

/* Starts the view of a run of `iterations` iterations at UNIX time now. */
void pb_progress_init(pb_progress_t *p, int iterations, double now);

/* Formats the metrics.jsonl line `json` (NUL-terminated) into out (cap
 * bytes, always NUL-terminated when cap > 0, truncated if too long).
 * Returns 1 when a line was made, 0 for a line of no interest to a person
 * (an unknown event), -1 for a line that is not a JSON object (counted in
 * bad_lines). */
int pb_progress_line(pb_progress_t *p, const char *json, char *out,
                     size_t cap);

/* A duration of s seconds as a person reads it, "45s", "3m05s" or
 * "2h07m", into buf (n >= 32 always holds it). */
void pb_progress_duration(char *buf, size_t n, double s);

#endif
