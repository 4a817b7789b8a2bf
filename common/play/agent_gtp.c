/* agent_gtp.c - the gtp:COMMAND agent of agent.h: an external engine
 * over the Go Text Protocol (gtp.h), in any game: Othello engines such as
 * gtp-rhino, or `probs gtp` (gtp_engine.h) in every game. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent.h"
#include "agent_impl.h"
#include "gtp.h"

/* An external engine over the Go Text Protocol (gtp.h; moves in the
 * notation of gtp.h). The agent is only shown positions, so it keeps the
 * position the engine has (`cur`) and brings the engine to each new one:
 * by the one move that leads there from cur (the usual case in a game:
 * the opponent's reply), or else from a cleared board by a sequence of
 * moves it finds, within a budget (in Othello discs are never removed, so
 * only squares occupied in the target need trying; in the other games
 * every move is tried, which reaches the few plies of random openings). */
enum { GTP_TIMEOUT_MS = 60000, GTP_FIND_BUDGET = 2000000 };

typedef struct {
  const pb_game_t *g;
  pb_gtp_t *gtp;
  pb_state_t cur; /* the engine's position, when synced */
  int synced;
  int timed; /* 1 the engine knows time_settings, 0 not, -1 not asked */
} gtp_agent_t;

static void gtp_agent_destroy(void *impl) {
  gtp_agent_t *ga = impl;
  if (ga == NULL) return;
  pb_gtp_destroy(&ga->gtp);
  free(ga);
}

static const char *gtp_color(const pb_game_t *g, const pb_state_t *s) {
  return (g->ply(s) & 1) == 0 ? "black" : "white";
}

/* Sends "play COLOR MOVE" for action a in cur, and steps cur. Passes are
 * not sent: Othello engines (gtp-rhino, probs gtp) pass for a side without
 * a move by themselves, and gtp-rhino refuses "play COLOR pass". */
static int gtp_play(gtp_agent_t *ga, int a, pb_err_t *err) {
  char name[8], cmd[64];
  ga->g->action_name(a, name, sizeof name);
  if (strcmp(name, "pass") != 0) {
    snprintf(cmd, sizeof cmd, "play %s %s", gtp_color(ga->g, &ga->cur),
             name);
    int rc = pb_gtp_cmd(ga->gtp, cmd, NULL, 0, err);
    if (rc < 0) {
      ga->synced = 0;
      return rc;
    }
  }
  int done = 0;
  ga->g->step(&ga->cur, a, &done);
  return 0;
}

/* Depth-first search for `plies` moves from *s to target; path gets them. */
static int gtp_find(const pb_game_t *g, const pb_state_t *s,
                    const pb_state_t *target, int plies, uint8_t *path,
                    long *budget) {
  if (plies == 0) return memcmp(s, target, sizeof *s) == 0;
  if (--*budget < 0) return 0;
  int othello = g->id == PB_GAME_OTHELLO;
  uint64_t occ = target->w[0] | target->w[1], have = s->w[0] | s->w[1];
  if (othello &&
      __builtin_popcountll(occ) - __builtin_popcountll(have) > plies)
    return 0;
  uint8_t acts[PB_MAX_ACTIONS];
  int n = g->legal(s, acts);
  for (int i = 0; i < n; i++) {
    if (othello && acts[i] < 64 && !((occ >> acts[i]) & 1)) continue;
    pb_state_t c = *s;
    int done = 0;
    g->step(&c, acts[i], &done);
    if (done && plies > 1) continue;
    path[0] = acts[i];
    if (gtp_find(g, &c, target, plies - 1, path + 1, budget)) return 1;
  }
  return 0;
}

/* Brings the engine to position s. */
static int gtp_sync(gtp_agent_t *ga, const pb_state_t *s, pb_err_t *err) {
  const pb_game_t *g = ga->g;
  if (ga->synced) {
    if (memcmp(&ga->cur, s, sizeof *s) == 0) return 0;
    uint8_t acts[PB_MAX_ACTIONS];
    int n = g->legal(&ga->cur, acts);
    for (int i = 0; i < n; i++) {
      pb_state_t c = ga->cur;
      int done = 0;
      g->step(&c, acts[i], &done);
      if (memcmp(&c, s, sizeof c) == 0) return gtp_play(ga, acts[i], err);
    }
  }
  pb_state_t start;
  g->reset(&start);
  int plies = g->ply(s);
  uint8_t path[256];
  long budget = GTP_FIND_BUDGET;
  if (plies > (int)sizeof path ||
      !gtp_find(g, &start, s, plies, path, &budget))
    return pb_err_set(err, PB_EUNSUPP,
                      "agent: gtp cannot find the moves that lead to this "
                      "position (ply %d) to show them to the engine",
                      plies);
  int rc = pb_gtp_cmd(ga->gtp, "clear_board", NULL, 0, err);
  if (rc < 0) return rc;
  ga->cur = start;
  ga->synced = 1;
  for (int i = 0; i < plies; i++)
    if ((rc = gtp_play(ga, path[i], err)) < 0) return rc;
  return 0;
}

static int gtp_act(void *impl, const pb_state_t *s, const uint8_t *legal,
                   int n, pb_err_t *err) {
  gtp_agent_t *ga = impl;
  const pb_game_t *g = ga->g;
  int rc = gtp_sync(ga, s, err);
  if (rc < 0) return rc;
  if (n == 1) /* a forced move (often the pass): nothing to ask */
    return (rc = gtp_play(ga, legal[0], err)) < 0 ? rc : legal[0];
  char cmd[32], reply[64];
  snprintf(cmd, sizeof cmd, "genmove %s", gtp_color(g, s));
  if ((rc = pb_gtp_cmd(ga->gtp, cmd, reply, sizeof reply, err)) < 0) {
    ga->synced = 0;
    return rc;
  }
  /* GTP's resignation: the game is lost, the engine's board left as it
   * is (the next game syncs it afresh). */
  if (strcasecmp(reply, "resign") == 0) {
    ga->synced = 0;
    pb_err_set(err, PB_AGENT_RESIGN, "agent: gtp engine '%s' resigned",
               pb_gtp_command(ga->gtp));
    return PB_AGENT_RESIGN;
  }
  /* A move in gtp.h's notation ("D6", "d6", "pass", "4"); anything else,
   * or a move that is not legal here, is the engine's fault. */
  int a = pb_gtp_parse_move(g, reply), ok = 0;
  for (int i = 0; i < n && a >= 0; i++) ok |= legal[i] == a;
  if (!ok) {
    ga->synced = 0;
    return pb_err_set(err, PB_EPROTO,
                      "agent: gtp engine '%s' answered \"%s\" to \"%s\", "
                      "which is not a legal move here",
                      pb_gtp_command(ga->gtp), reply, cmd);
  }
  int done = 0;
  g->step(&ga->cur, a, &done);
  return a;
}

/* The match's clock, for engines that know time_settings (agent.h). */
static int gtp_clock(void *impl, const pb_agent_clock_t *c, pb_err_t *err) {
  gtp_agent_t *ga = impl;
  char cmd[128], reply[64];
  int rc;
  if (ga->timed < 0) {
    rc = pb_gtp_cmd(ga->gtp, "known_command time_settings", reply,
                    sizeof reply, err);
    if (rc < 0) return rc;
    ga->timed = strcmp(reply, "true") == 0;
  }
  if (!ga->timed) return 0;
  if (c->new_game) {
    if (c->inc_s > 0)
      snprintf(cmd, sizeof cmd, "time_settings %.3f %.3f 1", c->base_s,
               c->inc_s);
    else
      snprintf(cmd, sizeof cmd, "time_settings %.3f 0 0", c->base_s);
    if ((rc = pb_gtp_cmd(ga->gtp, cmd, NULL, 0, err)) < 0) return rc;
  }
  double left = c->left_s > 0 ? c->left_s : 0;
  snprintf(cmd, sizeof cmd, "time_left %s %.3f 0",
           c->color == 0 ? "black" : "white", left);
  return pb_gtp_cmd(ga->gtp, cmd, NULL, 0, err);
}

static const pb_agent_vtable_t gtp_vt = {gtp_act, NULL, gtp_agent_destroy,
                                         NULL, NULL};

pb_agent_t *pb__agent_gtp_new(const pb_game_t *g, const char *arg,
                              uint64_t seed, pb_err_t *err) {
  (void)seed;
  if (arg == NULL || *arg == '\0') {
    pb_err_set(err, PB_EINVAL,
               "agent: gtp needs the engine's command, gtp:COMMAND "
               "(e.g. gtp:gtp-rhino)");
    return NULL;
  }
  gtp_agent_t *ga = calloc(1, sizeof *ga);
  if (ga == NULL) {
    pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    return NULL;
  }
  ga->g = g;
  /* An engine of another game refuses the size: "unacceptable size". */
  char size[32];
  snprintf(size, sizeof size, "boardsize %d", pb_gtp_board_size(g));
  ga->gtp = pb_gtp_new(arg, GTP_TIMEOUT_MS, err);
  if (ga->gtp == NULL || pb_gtp_cmd(ga->gtp, size, NULL, 0, err) < 0 ||
      pb_gtp_cmd(ga->gtp, "clear_board", NULL, 0, err) < 0) {
    gtp_agent_destroy(ga);
    return NULL;
  }
  g->reset(&ga->cur);
  ga->synced = 1;
  ga->timed = -1;
  char name[256];
  snprintf(name, sizeof name, "gtp:%s", arg);
  /* What the engine says it is, for records: "name version". */
  char ename[64] = "", ever[64] = "", version[128];
  pb_err_t e;
  pb_err_clear(&e);
  if (pb_gtp_cmd(ga->gtp, "name", ename, sizeof ename, &e) < 0) ename[0] = 0;
  pb_err_clear(&e);
  if (pb_gtp_cmd(ga->gtp, "version", ever, sizeof ever, &e) < 0) ever[0] = 0;
  snprintf(version, sizeof version, "%s%s%s",
           ename[0] ? ename : "gtp engine", ever[0] ? " " : "", ever);
  pb_agent_t *a = pb_agent_wrap(g, &gtp_vt, ga, name, err);
  pb__agent_set_clock(a, gtp_clock);
  pb__agent_set_version(a, version);
  return a;
}
