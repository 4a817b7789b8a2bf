/* probs search - beam-search Q-values of one position (Algorithm 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "algo.h"
#include "beam_search.h"
#include "bounds.h"
#include "cmds.h"
#include "game.h"
#include "model.h"
#include "neteval.h"
#include "opts.h"

static int zero_fn(void *ctx, const pb_state_t *s, int n, float *out,
                   pb_err_t *err) {
  (void)s;
  (void)err;
  const int *k = ctx;
  memset(out, 0, (size_t)n * (size_t)*k * sizeof *out);
  return 0;
}

static int zero_v(void *ctx, const pb_state_t *s, int n, float *out,
                  pb_err_t *err) {
  (void)ctx;
  (void)s;
  (void)err;
  memset(out, 0, (size_t)n * sizeof *out);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs search [--game GAME] [--position MOVES] [-E N] "
          "[-M N]\n"
          "                    [--model CHECKPOINT]\n"
          "  Prints the beam-search Q-value of each legal move. Without a\n"
          "  model the networks are uniform (V = 0, Q = 0). Defaults:\n"
          "  connect4 (or the checkpoint's game), the start position,\n"
          "  -E 30 -M 3. A --game other than the checkpoint's is refused.\n");
}

/* -E and -M (NULL: the default) into *E and *M: 0, or -1 after the
 * message. */
static int beam_settings(const char *E_s, const char *M_s, long *E,
                         long *M) {
  if (E_s != NULL && pb_cli_long(E_s, 1, PB_BEAM_MAX_EXPANSIONS, E) < 0) {
    fprintf(stderr, "probs search: bad -E '%s' (expected 1..%d)\n", E_s,
            PB_BEAM_MAX_EXPANSIONS);
    return -1;
  }
  if (M_s != NULL && pb_cli_long(M_s, 1, PB_BEAM_MAX_DEPTH, M) < 0) {
    fprintf(stderr, "probs search: bad -M '%s' (expected 1..%d)\n", M_s,
            PB_BEAM_MAX_DEPTH);
    return -1;
  }
  return 0;
}

int pb_cmd_search(int argc, char **argv) {
  const char *game = "connect4", *position = "", *model = NULL;
  const char *E_s = NULL, *M_s = NULL, *game_arg = NULL;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("game", 'g', &game_arg),
                                PB_OPTS_VALUE("position", 'p', &position),
                                PB_OPTS_VALUE("model", 'm', &model),
                                PB_OPTS_VALUE(NULL, 'E', &E_s),
                                PB_OPTS_VALUE(NULL, 'M', &M_s)};
  const pb_opts_t cl = {.prog = "probs search",
                        .usage = usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  long E = 30, M = 3;
  if (beam_settings(E_s, M_s, &E, &M) != 0) return PB_EXIT_USAGE;
  int game_given = game_arg != NULL;
  if (game_given) game = game_arg;
  pb_err_t err;
  pb_err_clear(&err);
  pb_model_t *net = NULL;
  const pb_game_t *g = pb_game_by_name(game);
  pb_config_t cfg;
  if (g == NULL) {
    fprintf(stderr, "probs search: unknown game '%s' (known: %s)\n", game,
            pb_game_names());
    return PB_EXIT_USAGE;
  }
  if (model != NULL) {
    net = pb_model_open(model, "cpu", &cfg, &err);
    if (net == NULL) {
      fprintf(stderr, "probs search: %s\n", err.msg);
      return PB_EXIT_USAGE; /* the checkpoint named cannot be used */
    }
    /* The game is the checkpoint's; a --game that says otherwise is an
     * error, not overruled in silence. */
    if (game_given && g != pb_model_game(net)) {
      fprintf(stderr,
              "probs search: --game %s, but the checkpoint %s plays %s\n",
              game, model, pb_model_game(net)->name);
      pb_model_destroy(&net);
      return PB_EXIT_USAGE;
    }
    g = pb_model_game(net);
  }
  pb_state_t s;
  if (g->parse(&s, position, &err) != 0) {
    fprintf(stderr, "probs search: %s\n", err.msg);
    pb_model_destroy(&net);
    return 2;
  }
  if (net != NULL && pb_model_kind(net) != PB_NETS_VQ) {
    const pb_algo_data_t *a = pb_algos_of(&cfg);
    fprintf(stderr,
            "probs search: the checkpoint is of an %s run (%s, no V and Q "
            "for beam search); try probs match with %s:CKPT\n",
            cfg.algorithm, a->model, a->agent);
    pb_model_destroy(&net);
    return 2;
  }
  float r;
  if (g->terminal(&s, &r)) {
    fprintf(stderr, "probs search: the game is over in this position\n");
    pb_model_destroy(&net);
    return 2;
  }
  pb_beam_t *b = pb_beam_new(g, (int)E, (int)M, 1, &err);
  if (b == NULL) {
    fprintf(stderr, "probs search: %s\n", err.msg);
    pb_model_destroy(&net);
    return 2;
  }
  pb_neteval_t *ne = NULL;
  int A = g->num_actions;
  pb_evalfn_t fn = {zero_v, zero_fn, &A};
  if (net != NULL) {
    ne = pb_neteval_new(g, 4096, 1 << 16, &err);
    if (ne == NULL) {
      fprintf(stderr, "probs search: %s\n", err.msg);
      pb_beam_destroy(&b);
      pb_model_destroy(&net);
      return 1;
    }
    pb_neteval_bind(ne, pb_model_v(net), pb_model_q(net));
    fn = pb_neteval_fn(ne);
  }
  float out[PB_MAX_ACTIONS];
  int rc = pb_beam_run(b, &s, 1, &fn, out, &err);
  if (rc == 0) {
    char board[1024];
    g->render(&s, board, sizeof board);
    printf("%s\n", board);
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(&s, acts);
    pb_beam_stats_t st;
    pb_beam_stats(b, &st);
    printf("E=%ld M=%ld: %llu nodes expanded, %llu created%s\n", E, M,
           (unsigned long long)st.expanded, (unsigned long long)st.nodes,
           model ? "" : " (uniform networks)");
    for (int j = 0; j < na; j++) {
      char name[16];
      g->action_name(acts[j], name, sizeof name);
      printf("move %s: %+.4f\n", name, out[acts[j]] + 0.0); /* no -0 */
    }
  } else {
    fprintf(stderr, "probs search: %s\n", err.msg);
  }
  pb_neteval_destroy(&ne);
  pb_beam_destroy(&b);
  pb_model_destroy(&net);
  return rc == 0 ? 0 : 1;
}
