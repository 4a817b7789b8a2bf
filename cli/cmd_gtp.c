/* probs gtp - a checkpoint's agent as a Go Text Protocol engine on stdin
 * and stdout (common/play/gtp_engine.h, docs/gtp.md), for GUIs, match managers
 * and the gtp:COMMAND agent. stdout carries GTP only; messages go to
 * stderr. Exits 0 on quit, at the end of input and on SIGINT/SIGTERM
 * (after the command in progress). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "args.h"
#include "cmds.h"
#include "entry.h"
#include "game.h"
#include "gtp_engine.h"
#include "model.h"
#include "models.h"
#include "opts.h"

PB_ENTRY_STOP_FLAG(stop_flag, on_signal)

static void gtp_usage(FILE *f) {
  fprintf(f,
          "usage: probs gtp [--model CKPT | --game NAME] [--agent SPEC] "
          "[--seed S]\n"
          "  Speaks the Go Text Protocol (version 2) on stdin and stdout:\n"
          "  the checkpoint's game, moves by the agent (docs/gtp.md).\n"
          "  --model CKPT  a probs checkpoint or model file: the game, and\n"
          "                the network of the agent (default: the shipped\n"
          "                model of --game, data/models/GAME.pbck)\n"
          "  --game NAME   without --model: whose shipped model (default\n"
          "                othello)\n"
          "  --agent SPEC  the agent, any spec of `probs match`; checkpoint,\n"
          "                value, beam[,E=N][,M=N], mcts[,N=n], abnet and\n"
          "                bpip may leave out the path (default checkpoint =\n"
          "                checkpoint:CKPT, the legal move of highest Q or\n"
          "                policy logit)\n"
          "  --seed S      the agent's seed (default 1)\n"
          "Moves: othello d3 or pass, connect4 column 1-7, tictactoe cell\n"
          "1-9, toguz hole 1-9; black moves first. Example:\n"
          "  probs match --game othello --b gtp:gtp-rhino --games 10 \\\n"
          "    --a 'gtp:build/bin/probs gtp --model CKPT'\n");
}

int pb_cmd_gtp(int argc, char **argv) {
  enum { O_MODEL, O_AGENT, O_SEED, O_GAME, O_N };
  const char *val[O_N] = {NULL, "checkpoint", "1", NULL};
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
      fprintf(stderr, "probs gtp: %s\n", e.msg);
      return PB_EXIT_USAGE;
    }
    val[O_MODEL] = shipped;
  }
  unsigned long long seed;
  if (pb_cli_seed(val[O_SEED], &seed) != 0) {
    fprintf(stderr, "probs gtp: bad --seed '%s' (expected 0..2^64-1)\n",
            val[O_SEED]);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  /* The checkpoint tells the game. */
  pb_model_t *m = pb_model_open(val[O_MODEL], "cpu", NULL, &err);
  if (m == NULL) {
    fprintf(stderr, "probs gtp: --model: %s\n", err.msg);
    return 2;
  }
  const pb_game_t *g = pb_model_game(m);
  pb_model_destroy(&m);
  char spec[4400];
  pb_agent_spec_with_model(val[O_AGENT], val[O_MODEL], spec, sizeof spec);
  pb_agent_t *agent = pb_agent_new(g, spec, (uint64_t)seed, &err);
  if (agent == NULL) {
    fprintf(stderr, "probs gtp: --agent: %s\n", err.msg);
    return err.code == PB_EINVAL || err.code == PB_EMISMATCH ? 2 : 1;
  }
  pb_gtp_engine_t *e = pb_gtp_engine_new(g, agent, NULL, &err);
  if (e == NULL) {
    fprintf(stderr, "probs gtp: %s\n", err.msg);
    pb_agent_destroy(&agent);
    return 1;
  }
  /* A controller that goes away is a write error, not a SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  pb_entry_signals(on_signal);
  fprintf(stderr, "probs gtp: %s, agent %s; GTP on stdin/stdout\n", g->name,
          pb_agent_name(agent));
  int rc = pb_gtp_engine_run(e, stdin, stdout, &stop_flag, &err);
  if (rc < 0) fprintf(stderr, "probs gtp: %s\n", err.msg);
  pb_gtp_engine_destroy(&e);
  pb_agent_destroy(&agent);
  return rc < 0 ? 1 : 0;
}
