/* probs gtp - a checkpoint's agent as a Go Text Protocol engine on stdin
 * and stdout (common/play/gtp_engine.h, docs/gtp.md), for GUIs, match managers
 * and the gtp:COMMAND agent. The agent is by default the checkpoint's best
 * search (its algorithm's agent: abnet, mcts or td), sized to the time
 * budget of each move when the controller sends time_settings or
 * time_left (common/play/gtp_timed.h). stdout carries GTP only; messages
 * go to stderr. Exits 0 on quit, at the end of input and on SIGINT/SIGTERM
 * (after the command in progress). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "algo.h"
#include "args.h"
#include "cmds.h"
#include "entry.h"
#include "game.h"
#include "gtp_engine.h"
#include "gtp_timed.h"
#include "model.h"
#include "models.h"
#include "opts.h"

#ifndef PB_VERSION /* CMakeLists.txt defines it: project(VERSION) */
#define PB_VERSION "unknown"
#endif

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void gtp_usage(FILE *f) {
  fprintf(f,
          "usage: probs gtp [--model CKPT | --game NAME] [--agent SPEC] "
          "[--seed S]\n"
          "  Speaks the Go Text Protocol (version 2) on stdin and stdout:\n"
          "  the checkpoint's game, moves by the agent (docs/gtp.md).\n"
          "  --model CKPT  a probs checkpoint or model file: the game, and\n"
          "                the network of the agent (default: the shipped\n"
          "                model of --game, data/models/GAME.pbck; none\n"
          "                for an agent without a network, such as\n"
          "                alphabeta:4 or lookahead:2)\n"
          "  --game NAME   without --model: whose shipped model (default\n"
          "                othello)\n"
          "  --agent SPEC  the agent, any spec of `probs match`; checkpoint,\n"
          "                value, beam[,E=N][,M=N], mcts[,N=n], abnet and\n"
          "                bpip may leave out the path (default search =\n"
          "                the checkpoint's best search: abnet:CKPT for\n"
          "                PROBS, mcts:CKPT for AlphaZero, td:CKPT for td)\n"
          "  --seed S      the agent's seed (default 1)\n"
          "time_settings and time_left give each move a time budget that\n"
          "abnet, mcts, beam and bpip size their search to.\n"
          "Moves: othello d3 or pass, connect4 column 1-7, tictactoe cell\n"
          "1-9, toguz hole 1-9; black moves first. Example:\n"
          "  probs match --game othello --b gtp:gtp-rhino --games 10 \\\n"
          "    --a 'gtp:build/bin/probs gtp --model CKPT'\n");
}

/* Serves GTP with the agent `spec` of game g. The exit status. */
static int serve(const pb_game_t *g, const char *spec, const char *seed_arg) {
  unsigned long long seed;
  if (pb_cli_seed(seed_arg, &seed) != 0) {
    fprintf(stderr, "probs gtp: bad --seed '%s' (expected 0..2^64-1)\n",
            seed_arg);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_gtp_timed_t *timed = pb_gtp_timed_new(g, spec, (uint64_t)seed, &err);
  if (timed == NULL) {
    fprintf(stderr, "probs gtp: --agent: %s\n", err.msg);
    return err.code == PB_EINVAL || err.code == PB_EMISMATCH ? 2 : 1;
  }
  pb_agent_t *agent = pb_gtp_timed_agent(timed);
  /* version answers probs's version; the agent is on stderr. */
  pb_gtp_engine_t *e = pb_gtp_engine_new(g, agent, PB_VERSION, &err);
  if (e == NULL || pb_gtp_engine_set_timed(e, timed, &err) != 0) {
    fprintf(stderr, "probs gtp: %s\n", err.msg);
    pb_gtp_engine_destroy(&e);
    pb_gtp_timed_destroy(&timed);
    return 1;
  }
  /* A controller that goes away is a write error, not a SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  pb_entry_signals(on_signal);
  fprintf(stderr, "probs gtp: %s, agent %s%s; GTP on stdin/stdout\n",
          g->name, spec,
          pb_gtp_timed_scales(timed) ? " (sized to time_settings/time_left)"
                                     : "");
  int rc = pb_gtp_engine_run(e, stdin, stdout, &stop_flag, &err);
  if (rc < 0) fprintf(stderr, "probs gtp: %s\n", err.msg);
  pb_gtp_engine_destroy(&e);
  pb_gtp_timed_destroy(&timed);
  return rc < 0 ? 1 : 0;
}

/* probs gtp without a model: an agent of game `game` (NULL: the game of
 * the agent's checkpoint, else othello) that needs no network from us. */
static int gtp_serve(const char *game, const char *agent, const char *seed) {
  const pb_game_t *g = NULL;
  if (game != NULL && (g = pb_game_by_name(game)) == NULL) {
    fprintf(stderr, "probs gtp: unknown game '%s' (known: %s)\n", game,
            pb_game_names());
    return PB_EXIT_USAGE;
  }
  if (g == NULL) g = pb_agent_spec_game(agent);
  if (g == NULL) g = &pb_game_othello;
  return serve(g, agent, seed);
}

int pb_cmd_gtp(int argc, char **argv) {
  enum { O_MODEL, O_AGENT, O_SEED, O_GAME, O_N };
  const char *val[O_N] = {NULL, "search", "1", NULL};
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("model", 0, &val[O_MODEL]),
                                PB_OPTS_VALUE("agent", 0, &val[O_AGENT]),
                                PB_OPTS_VALUE("seed", 0, &val[O_SEED]),
                                PB_OPTS_VALUE("game", 0, &val[O_GAME])};
  const pb_opts_t cl = {.prog = "probs gtp",
                        .usage = gtp_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  char shipped[4096];
  if (val[O_MODEL] != NULL && val[O_GAME] != NULL) {
    fprintf(stderr, "probs gtp: give --model or --game, not both (the "
                    "model tells the game)\n");
    return PB_EXIT_USAGE;
  }
  /* An agent that needs no network (alphabeta:4, lookahead:2, a network
   * kind with its own path) needs no model: --game, else its checkpoint's
   * game, else othello. */
  char probe[4400];
  pb_agent_spec_with_model(val[O_AGENT], "M", probe, sizeof probe);
  const int needs_model =
      !strcmp(val[O_AGENT], "search") || strcmp(probe, val[O_AGENT]) != 0;
  if (val[O_MODEL] == NULL && !needs_model)
    return gtp_serve(val[O_GAME], val[O_AGENT], val[O_SEED]);
  if (val[O_MODEL] == NULL) {
    const char *game = val[O_GAME] ? val[O_GAME] : "othello";
    pb_err_t e;
    pb_err_clear(&e);
    if (pb_game_by_name(game) == NULL) {
      fprintf(stderr, "probs gtp: unknown game '%s' (known: %s)\n", game,
              pb_game_names());
      return PB_EXIT_USAGE;
    }
    if (pb_cli_shipped_model(game, shipped, sizeof shipped, &e) != 0) {
      fprintf(stderr,
              "probs gtp: %s; or an --agent without a network (alphabeta:4, "
              "lookahead:2, uct:1000) needs no model\n",
              e.msg);
      return PB_EXIT_USAGE;
    }
    val[O_MODEL] = shipped;
  }
  pb_err_t err;
  pb_err_clear(&err);
  /* The checkpoint tells the game, and its algorithm the best search. */
  pb_config_t mc;
  pb_model_t *m = pb_model_open(val[O_MODEL], "cpu", &mc, &err);
  if (m == NULL) {
    fprintf(stderr, "probs gtp: --model: %s\n", err.msg);
    return 2;
  }
  const pb_game_t *g = pb_model_game(m);
  pb_model_destroy(&m);
  char spec[4400];
  if (!strcmp(val[O_AGENT], "search"))
    snprintf(spec, sizeof spec, "%s:%s", pb_algos_of(&mc)->agent,
             val[O_MODEL]);
  else
    pb_agent_spec_with_model(val[O_AGENT], val[O_MODEL], spec, sizeof spec);
  return serve(g, spec, val[O_SEED]);
}
