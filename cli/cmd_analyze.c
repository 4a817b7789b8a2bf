/* probs analyze - what a checkpoint's networks say about one position: V,
 * the Q of every legal move, V one ply deep, the beam-search values, and
 * the move each would play. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "args.h"
#include "cmds.h"
#include "game.h"
#include "json.h"
#include "model.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs analyze --model CHECKPOINT [--position MOVES] "
          "[-E N] [-M N] [--json]\n"
          "  Prints the board, the side to move, V of the position and, for\n"
          "  every legal move, Q, V one ply deep (-V of the position after\n"
          "  it, or its result) and the beam-search value, with the move\n"
          "  each of the three would play. The game is the checkpoint's.\n"
          "  --position MOVES  moves from the start in the game's notation\n"
          "                    (connect4 \"4453\", tictactoe \"159\", othello\n"
          "                    \"f5d6\", toguz \"7315\"; default: the start)\n"
          "  -E N, -M N        beam search: expansions 1..100000 (default\n"
          "                    30), depth limit 1..99 (default 3), as in\n"
          "                    `probs search` and the beam:PATH agent\n"
          "  --json            one JSON object instead of text\n");
}

static void move_name(const pb_game_t *g, int a, char *buf, size_t n) {
  if (a < 0 || g->action_name(a, buf, n) < 0) snprintf(buf, n, "-");
}

static int print_json(const pb_game_t *g, const char *model,
                      const char *position, const pb_state_t *s, int E, int M,
                      const pb_analysis_eval_t *ev, const char *result) {
  pb_json_t j;
  pb_json_init(&j);
  char board[1024], side[2] = {pb_analysis_side(g, s), '\0'}, name[16];
  g->render(s, board, sizeof board);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "game", g->name);
  pb_json_kstr(&j, "model", model);
  pb_json_kstr(&j, "position", position);
  pb_json_kstr(&j, "board", board);
  pb_json_kstr(&j, "to_move", side);
  pb_json_kint(&j, "ply", g->ply(s));
  if (result != NULL) {
    pb_json_kstr(&j, "result", result);
  } else {
    pb_json_kint(&j, "E", E);
    pb_json_kint(&j, "M", M);
    pb_json_kfloat(&j, "v", ev->v);
    pb_json_key(&j, "moves");
    pb_json_arr_begin(&j);
    for (int i = 0; i < ev->n_legal; i++) {
      int a = ev->legal[i];
      move_name(g, a, name, sizeof name);
      pb_json_obj_begin(&j);
      pb_json_kstr(&j, "move", name);
      pb_json_kfloat(&j, "q", ev->q[a]);
      pb_json_kfloat(&j, "v1", ev->v1[a]);
      pb_json_kfloat(&j, "beam", ev->beam[a]);
      pb_json_obj_end(&j);
    }
    pb_json_arr_end(&j);
    move_name(g, ev->best_q, name, sizeof name);
    pb_json_kstr(&j, "best_q", name);
    move_name(g, ev->best_v1, name, sizeof name);
    pb_json_kstr(&j, "best_v1", name);
    move_name(g, ev->best_beam, name, sizeof name);
    pb_json_kstr(&j, "best_beam", name);
  }
  pb_json_obj_end(&j);
  int rc = pb_json_error(&j);
  if (rc == 0) printf("%s\n", pb_json_cstr(&j));
  pb_json_free(&j);
  if (rc != 0) fprintf(stderr, "probs analyze: out of memory\n");
  return rc == 0 ? 0 : 1;
}

static void print_text(const pb_game_t *g, const pb_state_t *s, int E, int M,
                       const pb_analysis_eval_t *ev) {
  char name[16];
  printf("V = %+.4f (for %c, the side to move)\n", ev->v,
         pb_analysis_side(g, s));
  for (int i = 0; i < ev->n_legal; i++) {
    int a = ev->legal[i];
    move_name(g, a, name, sizeof name);
    printf("move %s: Q=%+.4f V1=%+.4f beam=%+.4f\n", name, ev->q[a],
           ev->v1[a], ev->beam[a]);
  }
  move_name(g, ev->best_q, name, sizeof name);
  printf("best by Q: %s\n", name);
  move_name(g, ev->best_v1, name, sizeof name);
  printf("best by V one ply: %s\n", name);
  move_name(g, ev->best_beam, name, sizeof name);
  printf("best by beam search (E=%d, M=%d): %s\n", E, M, name);
}

int pb_cmd_analyze(int argc, char **argv) {
  const char *position = "", *model = NULL, *es = "30", *ms = "3";
  bool json = false;
  static const struct option opts[] = {
      {"model", required_argument, 0, 'm'},
      {"position", required_argument, 0, 'p'},
      {"json", no_argument, 0, 'j'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":E:M:m:p:h", opts, NULL)) != -1) {
    switch (c) {
    case 'm': model = optarg; break;
    case 'p': position = optarg; break;
    case 'E': es = optarg; break;
    case 'M': ms = optarg; break;
    case 'j': json = true; break;
    case 'h': usage(stdout); return 0;
    case ':':
      fprintf(stderr, "probs analyze: option '%s' needs a value\n",
              argv[optind - 1]);
      usage(stderr);
      return 2;
    default:
      fprintf(stderr, "probs analyze: unknown option '%s'\n",
              argv[optind - 1]);
      usage(stderr);
      return 2;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "probs analyze: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }
  if (model == NULL) {
    fprintf(stderr, "probs analyze: --model CHECKPOINT is required\n");
    usage(stderr);
    return 2;
  }
  long E, M;
  if (pb_cli_long(es, 1, 100000, &E) < 0) {
    fprintf(stderr, "probs analyze: bad -E '%s' (expected 1..100000)\n", es);
    return 2;
  }
  if (pb_cli_long(ms, 1, 99, &M) < 0) {
    fprintf(stderr, "probs analyze: bad -M '%s' (expected 1..99)\n", ms);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_model_t *net = pb_model_open(model, "cpu", NULL, &err);
  if (net == NULL) {
    fprintf(stderr, "probs analyze: %s: %s\n", model, err.msg);
    return PB_EXIT_USAGE; /* the checkpoint named cannot be used */
  }
  const pb_game_t *g = pb_model_game(net);
  pb_state_t s;
  if (g->parse(&s, position, &err) != 0) {
    fprintf(stderr, "probs analyze: bad position for %s (the checkpoint's "
            "game): %s\n", g->name, err.msg);
    pb_model_destroy(&net);
    return 2;
  }
  char result[64];
  int over = pb_analysis_result(g, &s, result, sizeof result);
  pb_analysis_eval_t ev;
  memset(&ev, 0, sizeof ev);
  int rc = 0;
  if (!over) {
    pb_analysis_t *an = pb_analysis_new(net, (int)E, (int)M, &err);
    rc = an == NULL ? -1 : pb_analysis_eval(an, &s, &ev, &err);
    pb_analysis_destroy(&an);
    if (rc != 0) {
      fprintf(stderr, "probs analyze: %s\n", err.msg);
      pb_model_destroy(&net);
      return 1;
    }
  }
  if (json) {
    rc = print_json(g, model, position, &s, (int)E, (int)M, &ev,
                    over ? result : NULL);
  } else {
    char board[1024];
    pb_analysis_board(g, &s, board, sizeof board);
    printf("%s (checkpoint %s, version %llu), position \"%s\"\n", g->name,
           model, (unsigned long long)pb_model_version(net), position);
    printf("%s", board);
    printf("to move: %c (ply %d)\n", pb_analysis_side(g, &s), g->ply(&s));
    if (over)
      printf("game over: %s\n", result);
    else
      print_text(g, &s, (int)E, (int)M, &ev);
  }
  pb_model_destroy(&net);
  return rc;
}
