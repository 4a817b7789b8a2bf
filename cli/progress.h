/* progress.h - what a person sees of a long command: a meter (below) for
 * every command that can run past a few seconds (match, solve, accuracy,
 * elo-calibrate, train --inproc), and the terminal's view of a run: one
 * short line per event of metrics.jsonl.
 *
 * The meter: on a terminal (stderr a tty) a bar redrawn in place a few
 * times a second,
 *
 *   progress [#########...............] 38% 38/100 games, W=20 D=3 L=15,
 *            4.1 games/s, elapsed 9s, ETA 15s
 *
 * and otherwise (a pipe, a file, a CI log) a plain line every few
 * seconds, the same without the bar:
 *
 *   progress: 38/100 games, W=20 D=3 L=15, 4.1 games/s, elapsed 9s, ETA 15s
 *
 * (each on one line). The ETA is the time so far per unit done times the
 * units left; it is left out while nothing is done, when the total is not
 * known, and where the caller says it means nothing (a match an SPRT may
 * stop).
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
#include <stdio.h>

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

/* ---- the meter ---------------------------------------------------- */

#define PB_METER_EVERY_S 5.0 /* a plain line this often, off a terminal */
#define PB_METER_TTY_S 0.2   /* the bar's redraws, on a terminal */
#define PB_METER_BAR 24      /* the bar's width in characters */

typedef struct pb_meter {
  FILE *out;      /* where it prints (stderr); NULL: nothing */
  int tty;        /* out is a terminal: the bar, redrawn in place */
  char label[32]; /* "progress", "accuracy", "solve" */
  char unit[24];  /* "games", "positions", "items" */
  double total;   /* units to do; <= 0 not known (no bar, no ETA) */
  int eta;        /* 1: show the ETA (default), 0 not */
  double every;   /* seconds between plain lines; < 0 none at all */
  double start, last; /* when it started, when it last printed (pb_now) */
  int shown;      /* the bar is on the terminal's line: a newline ends it */
  int lines;      /* lines (or bars) printed */
  double last_done; /* the units of the last line */
} pb_meter_t;

/* Starts a meter of `total` units (<= 0 not known) at time now (pb_now)
 * printing to out: a bar when tty, else a line every `every` seconds (0:
 * at every update, < 0: never; the bar is then off too). */
void pb_meter_init(pb_meter_t *m, FILE *out, int tty, const char *label,
                   const char *unit, double total, double every, double now);

/* pb_meter_init on stderr, a bar when stderr is a terminal, a line every
 * PB_METER_EVERY_S seconds otherwise. */
void pb_meter_stderr(pb_meter_t *m, const char *label, const char *unit,
                     double total, double now);

/* The meter's text for `done` units at time now, with `extra` (NULL or
 * "": none) after the count, into buf (n bytes, always NUL-terminated,
 * truncated): a line, or with bar set the bar's form (without the
 * terminal's control characters). Returns the text's length. */
size_t pb_meter_format(const pb_meter_t *m, double done, double now,
                       const char *extra, int bar, char *buf, size_t n);

/* Prints the meter's state when it is due (off a terminal: `every`
 * seconds since the last line; on one: PB_METER_TTY_S since the last
 * redraw). Returns 1 if it printed. */
int pb_meter_update(pb_meter_t *m, double done, double now,
                    const char *extra);

/* The last state: on a terminal the bar redrawn and its line ended; off
 * one a last line when any was printed before or `always`. */
void pb_meter_end(pb_meter_t *m, double done, double now, const char *extra,
                  int always);

#endif
