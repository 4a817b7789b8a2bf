/* evalrun_chart.c - the Elo chart of elo.csv (pb_evalrun_chart), the
 * charts of a run directory (elo-time.svg, elo.svg) and elo.png made from
 * elo.svg by an external converter (rsvg-convert or ImageMagick's
 * convert), when one is in PATH.
 *
 * Workload: the charts are drawn again after every rated checkpoint; a
 * table holds one row per rated version (hundreds at most). */
#include "evalrun_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elo.h"
#include "elotable.h"
#include "svgplot.h"
#include "util.h"

extern char **environ;

int pb_evalrun_chart(const pb_elotable_t *t,
                         const pb_evalrun_opts_t *o, const char *title,
                         int x_axis, char **out, size_t *len, pb_err_t *err) {
  if (t == NULL || o == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "elo chart: NULL argument");
  const int n = pb_elotable_count(t);
  pb_svgplot_point_t *pts = calloc((size_t)n + 1, sizeof *pts);
  if (pts == NULL) return pb_err_set(err, PB_ENOMEM, "elo chart: no memory");
  for (int i = 0; i < n; i++) {
    const pb_elotable_row_t *r = pb_elotable_row(t, i);
    pts[i].x = x_axis == PB_EVALRUN_X_MINUTES ? r->minutes
                                              : (double)r->iteration;
    pts[i].y = r->elo;
    pts[i].lo = r->lo;
    pts[i].hi = r->hi;
    pts[i].marked = (r->flags & (PB_ELO_ALL_WINS | PB_ELO_ALL_LOSSES)) != 0;
  }
  pb_svgplot_hline_t lines[PB_ELOTABLE_MAX_OPPONENTS];
  int nl = 0;
  for (int j = 0; j < o->n_opponents; j++) {
    if (!isfinite(o->anchor[j])) continue;
    lines[nl].y = o->anchor[j];
    snprintf(lines[nl].label, sizeof lines[nl].label, "%s (%.0f)",
             o->opponents[j], o->anchor[j]);
    nl++;
  }
  /* Each chart its own title: the x axis says which one it is. */
  char full[320];
  snprintf(full, sizeof full, "%s by %s", title != NULL ? title : "Elo",
           x_axis == PB_EVALRUN_X_MINUTES ? "wall time" : "version");
  pb_svgplot_t p = {0};
  p.title = full;
  p.xlabel = x_axis == PB_EVALRUN_X_MINUTES
                 ? "minutes since the run started (wall time)"
                 : "iteration";
  p.ylabel = "Elo";
  p.series = "Elo (max. likelihood)";
  p.band = "95% interval";
  p.pts = pts;
  p.n = n;
  p.lines = lines;
  p.nlines = nl;
  /* Accuracies on the right axis, for the agents that have any. */
  pb_svgplot_point_t *acc = calloc(3 * ((size_t)n + 1), sizeof *acc);
  if (acc == NULL) {
    free(pts);
    return pb_err_set(err, PB_ENOMEM, "elo chart: no memory");
  }
  const int az = o->nets == PB_NETS_PV;
  static const char *const pnames[3] = {"accuracy: greedy Q",
                                        "accuracy: V one ply",
                                        "accuracy: search"};
  static const char *const anames[3] = {"accuracy: greedy policy",
                                        "accuracy: value one ply",
                                        "accuracy: MCTS"};
  const char *const *names = az ? anames : pnames;
  char beam_name[96];
  if (az)
    snprintf(beam_name, sizeof beam_name, "accuracy: MCTS N=%d",
             o->mcts_simulations);
  else if (o->search_beam)
    snprintf(beam_name, sizeof beam_name, "accuracy: beam search E=%d M=%d",
             o->search_expansions, o->search_depth);
  else
    snprintf(beam_name, sizeof beam_name, "accuracy: abnet nodes=%d",
             o->search_nodes);
  pb_svgplot_series_t right[3];
  int nr = 0;
  for (int k = 0; k < 3; k++) {
    pb_svgplot_point_t *sp = acc + (size_t)k * ((size_t)n + 1);
    int any = 0;
    for (int i = 0; i < n; i++) {
      const pb_elotable_row_t *r = pb_elotable_row(t, i);
      double v = k == 0 ? r->acc_q : k == 1 ? r->acc_v : r->acc_beam;
      sp[i].x = pts[i].x;
      sp[i].y = v;
      sp[i].lo = sp[i].hi = NAN;
      any |= isfinite(v);
    }
    if (!any) continue;
    right[nr].name =
        k == 2 && (az || o->search_beam || o->search_nodes > 0) ? beam_name
                                                                : names[k];
    right[nr].pts = sp;
    right[nr].n = n;
    nr++;
  }
  if (nr > 0) {
    p.right = right;
    p.nright = nr;
    p.y2label = "share of optimal moves (solved test set)";
    p.y2min = 0.0;
    p.y2max = 1.0;
  }
  int rc = pb_svgplot_render(&p, out, len, err);
  free(acc);
  free(pts);
  return rc;
}

/* The first executable called `name` in PATH into buf; 0 if found. */
static int find_in_path(const char *name, char *buf, size_t n) {
  const char *path = getenv("PATH");
  if (path == NULL) return -1;
  while (*path) {
    const char *c = strchr(path, ':');
    size_t len = c ? (size_t)(c - path) : strlen(path);
    if (len > 0 && len + strlen(name) + 2 <= n) {
      int w = snprintf(buf, n, "%.*s/%s", (int)len, path, name);
      if (w > 0 && (size_t)w < n && access(buf, X_OK) == 0) return 0;
    }
    if (c == NULL) break;
    path = c + 1;
  }
  return -1;
}

/* Runs argv with output discarded; kills it after timeout_s. Returns its
 * exit status, or -1. */
static int run_quiet(char *const *argv, double timeout_s) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  double t0 = pb_now();
  for (;;) {
    int st = 0;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (w < 0 && errno != EINTR) return -1;
    if (pb_now() - t0 > timeout_s) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* elo.png from elo.svg, if a converter exists; failures only logged. */
static void write_png(pb_evalrun_t *r, const char *svg) {
  if (r->png_tried && !r->png_ok) return;
  r->png_tried = 1;
  char exe[PB__PATH], png[PB__PATH], tmp[PB__PATH + 40], src[PB__PATH + 8];
  snprintf(png, sizeof png, "%s/elo.png", r->dir);
  int rsvg = find_in_path("rsvg-convert", exe, sizeof exe) == 0;
  if (!rsvg && find_in_path("convert", exe, sizeof exe) != 0) {
    pb_log_debug(r->d.log, "no rsvg-convert or convert in PATH: no elo.png");
    return;
  }
  int st;
  if (rsvg) {
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", png, (long)getpid());
    char *argv[] = {exe, "-o", tmp, (char *)svg, NULL};
    st = run_quiet(argv, 30.0);
  } else {
    /* ImageMagick picks the format from a prefix, not the temp name. */
    snprintf(tmp, sizeof tmp, "png:%s.tmp.%ld", png, (long)getpid());
    snprintf(src, sizeof src, "svg:%s", svg);
    char *argv[] = {exe, src, tmp, NULL};
    st = run_quiet(argv, 30.0);
  }
  const char *tmpfile = rsvg ? tmp : tmp + 4;
  if (st == 0 && rename(tmpfile, png) == 0) {
    r->png_ok = 1;
    return;
  }
  unlink(tmpfile);
  pb_log_info(r->d.log,
              "no elo.png: %s could not convert elo.svg (no more "
              "attempts in this process)",
              exe);
}

int pb__evalrun_write_charts(pb_evalrun_t *r, pb_err_t *err) {
  static const char *const chart[2] = {"elo-time.svg", "elo.svg"};
  static const int axis[2] = {PB_EVALRUN_X_MINUTES, PB_EVALRUN_X_ITERATION};
  char path[PB__PATH];
  int rc = 0;
  for (int k = 0; k < 2 && rc == 0; k++) {
    char *svg = NULL;
    size_t len = 0;
    rc = pb_evalrun_chart(r->table, &r->o, r->title, axis[k], &svg, &len, err);
    snprintf(path, sizeof path, "%s/%s", r->dir, chart[k]);
    if (rc == 0) rc = pb_write_file(path, svg, len, err);
    free(svg);
  }
  if (rc == 0 && r->d.png) write_png(r, path);
  return rc;
}
