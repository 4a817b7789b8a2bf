/* probs analyze - what a checkpoint's networks say about one position. A
 * PROBS checkpoint: V, the Q of every legal move, V one ply deep, and
 * alpha-beta over V and Q (the abnet: agent's search, by default) and/or
 * beam search, with the move each would play. An AlphaZero checkpoint:
 * the policy's probability of every legal move, the value head (at the
 * position and one ply deep) and PUCT MCTS's visit counts. A td
 * checkpoint (its Q slot untrained): the linear evaluation V, V one ply
 * deep and the td: agent's n-ply search. With --record FILE[:N], every
 * position of a recorded game in turn, with the move played there. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "args.h"
#include "cmds.h"
#include "game.h"
#include "json.h"
#include "linear.h"
#include "model.h"
#include "nply.h"
#include "tdnet.h"
#include "opts.h"
#include "record.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: probs analyze --model CHECKPOINT [--position MOVES] "
          "[--search S]\n"
          "                     [--nodes N] [-E N] [-M N] [--simulations N] "
          "[--json]\n"
          "  Prints the board, the side to move and what the checkpoint "
          "says.\n"
          "  A probs checkpoint: V of the position and, for every legal move,\n"
          "  Q and V one ply deep (-V of the position after it, or its\n"
          "  result), then the search: alpha-beta over V and Q (the abnet:\n"
          "  agent's search) with its value, depth and principal variation,\n"
          "  and/or beam search (each move's value), with the move each\n"
          "  would play. An alphazero checkpoint: the value head's value,\n"
          "  and for every legal move the policy's probability, the value\n"
          "  one ply deep and its visits in PUCT MCTS, with the move MCTS\n"
          "  picks (what mcts:CHECKPOINT,N=... plays). A td checkpoint\n"
          "  (trained V alone): V and for every legal move V one ply deep,\n"
          "  then its n-ply search at the depth it trained at, the move\n"
          "  td:CHECKPOINT plays. The game is the checkpoint's.\n"
          "  --position MOVES  moves from the start in the game's notation\n"
          "                    (connect4 \"4453\", tictactoe \"159\", othello\n"
          "                    \"f5d6\", toguz \"7315\"; default: the start)\n"
          "  --search S        probs: abnet (default), beam, or both\n"
          "  --nodes N         abnet: network evaluations, 1..100000000\n"
          "                    (default 1000, as the abnet: agent)\n"
          "  -E N, -M N        beam search: expansions 1.." PB_BOUND_STR(
              PB_BEAM_MAX_EXPANSIONS) " (default\n"
          "                    30), depth limit 1.." PB_BOUND_STR(
              PB_BEAM_MAX_DEPTH) " (default 3), as in\n"
          "                    `probs search` and the beam:PATH agent; either\n"
          "                    alone adds the beam (--search both)\n"
          "  --simulations N   alphazero: MCTS simulations 1.." PB_BOUND_STR(
              PB_MCTS_MAX_SIMULATIONS) "\n"
          "                    (default 200)\n"
          "  --record FILE[:N] every position of game N (default 1) of a\n"
          "                    file of game records (probs match --record,\n"
          "                    --record-ggf, a run's games/), in turn, each\n"
          "                    with the move played (and its time where the\n"
          "                    record has it); with --json a line a ply\n"
          "  --json            one JSON object instead of text\n");
}

static void move_name(const pb_game_t *g, int a, char *buf, size_t n) {
  if (a < 0 || g->action_name(a, buf, n) < 0) snprintf(buf, n, "-");
}

/* The columns of the "moves" array, in this order after "move". */
enum { COL_Q = 1, COL_P = 2, COL_V1 = 4, COL_BEAM = 8, COL_VISITS = 16 };

/* "moves": an object per legal move with the columns cols of ev. */
static void json_moves(pb_json_t *j, const pb_game_t *g,
                       const pb_analysis_eval_t *ev, int cols) {
  char name[16];
  pb_json_key(j, "moves");
  pb_json_arr_begin(j);
  for (int i = 0; i < ev->n_legal; i++) {
    int a = ev->legal[i];
    move_name(g, a, name, sizeof name);
    pb_json_obj_begin(j);
    pb_json_kstr(j, "move", name);
    if (cols & COL_Q) pb_json_kfloat(j, "q", ev->q[a]);
    if (cols & COL_P) pb_json_kfloat(j, "p", ev->p[a]);
    if (cols & COL_V1) pb_json_kfloat(j, "v1", ev->v1[a]);
    if (cols & COL_BEAM) pb_json_kfloat(j, "beam", ev->beam[a]);
    if (cols & COL_VISITS) pb_json_kint(j, "visits", ev->visits[a]);
    pb_json_obj_end(j);
  }
  pb_json_arr_end(j);
}

/* key: the name of move a ("-": none). */
static void json_move(pb_json_t *j, const pb_game_t *g, const char *key,
                      int a) {
  char name[16];
  move_name(g, a, name, sizeof name);
  pb_json_kstr(j, key, name);
}

/* What was asked for. */
typedef struct {
  const char *model, *position;
  const char *record; /* --record FILE[:N], or NULL */
  const char *algorithm; /* the checkpoint's (its stored config's) */
  pb_analysis_opts_t o;
  int td_depth;       /* td: the n-ply search's depth (0: not td) */
  double td_value;    /* its value for the side to move */
  int td_best;        /* and its move */
} request_t;

static void json_probs(pb_json_t *j, const pb_game_t *g, const request_t *rq,
                       const pb_analysis_eval_t *ev) {
  char name[16];
  pb_json_kstr(j, "algorithm", rq->algorithm);
  pb_json_kstr(j, "search",
               ev->has_abnet && ev->has_beam ? "both"
               : ev->has_beam                ? "beam"
                                             : "abnet");
  pb_json_kfloat(j, "v", ev->v);
  json_moves(j, g, ev, COL_Q | COL_V1 | (ev->has_beam ? COL_BEAM : 0));
  json_move(j, g, "best_q", ev->best_q);
  json_move(j, g, "best_v1", ev->best_v1);
  if (ev->has_abnet) {
    const pb_abnet_result_t *r = &ev->ab;
    pb_json_key(j, "abnet");
    pb_json_obj_begin(j);
    pb_json_kuint(j, "nodes", rq->o.ab.nodes);
    pb_json_kfloat(j, "value", r->value);
    pb_json_kint(j, "depth", r->depth);
    pb_json_kbool(j, "solved", r->solved != 0);
    pb_json_kuint(j, "evaluations", r->v_evals + r->q_evals);
    pb_json_key(j, "pv");
    pb_json_arr_begin(j);
    for (int i = 0; i < r->pv_len; i++) {
      move_name(g, r->pv[i], name, sizeof name);
      pb_json_str(j, name);
    }
    pb_json_arr_end(j);
    pb_json_obj_end(j);
    json_move(j, g, "best_abnet", ev->best_abnet);
  }
  if (ev->has_beam) {
    pb_json_kint(j, "E", rq->o.E);
    pb_json_kint(j, "M", rq->o.M);
    json_move(j, g, "best_beam", ev->best_beam);
  }
}

static void json_az(pb_json_t *j, const pb_game_t *g, const request_t *rq,
                    const pb_analysis_eval_t *ev) {
  pb_json_kstr(j, "algorithm", rq->algorithm);
  pb_json_kfloat(j, "v", ev->v);
  pb_json_kint(j, "simulations", ev->simulations);
  pb_json_kfloat(j, "mcts_value", ev->mcts_value);
  json_moves(j, g, ev, COL_P | COL_V1 | COL_VISITS);
  json_move(j, g, "best_policy", ev->best_policy);
  json_move(j, g, "best_v1", ev->best_v1);
  json_move(j, g, "best_mcts", ev->best_mcts);
}

static void json_td(pb_json_t *j, const pb_game_t *g, const request_t *rq,
                    const pb_analysis_eval_t *ev) {
  pb_json_kstr(j, "algorithm", rq->algorithm);
  pb_json_kfloat(j, "v", ev->v);
  json_moves(j, g, ev, COL_V1);
  json_move(j, g, "best_v1", ev->best_v1);
  pb_json_key(j, "td");
  pb_json_obj_begin(j);
  pb_json_kint(j, "depth", rq->td_depth);
  pb_json_kfloat(j, "value", rq->td_value);
  pb_json_obj_end(j);
  json_move(j, g, "best_td", rq->td_best);
}

/* The move played in a recorded game, after the analysis of its
 * position (--record). */
typedef struct {
  int action; /* -1: none (the end of the game) */
  int32_t ms; /* the mover's milliseconds, < 0 not known */
  int opening; /* an opening ply, not the player's choice */
} played_t;

static int print_json(const pb_game_t *g, const request_t *rq,
                      const pb_state_t *s, const pb_analysis_eval_t *ev,
                      const char *result, const played_t *pl) {
  pb_json_t j;
  pb_json_init(&j);
  char board[1024], side[2] = {pb_analysis_side(g, s), '\0'};
  g->render(s, board, sizeof board);
  pb_json_obj_begin(&j);
  pb_json_kstr(&j, "game", g->name);
  pb_json_kstr(&j, "model", rq->model);
  pb_json_kstr(&j, "position", rq->position);
  pb_json_kstr(&j, "board", board);
  pb_json_kstr(&j, "to_move", side);
  pb_json_kint(&j, "ply", g->ply(s));
  if (pl != NULL && pl->action >= 0) {
    char name[16];
    move_name(g, pl->action, name, sizeof name);
    pb_json_kstr(&j, "played", name);
    if (pl->ms >= 0) pb_json_kint(&j, "played_ms", pl->ms);
    if (pl->opening) pb_json_kbool(&j, "opening", true);
  }
  if (result != NULL)
    pb_json_kstr(&j, "result", result);
  else if (ev->alphazero)
    json_az(&j, g, rq, ev);
  else if (rq->td_depth > 0)
    json_td(&j, g, rq, ev);
  else
    json_probs(&j, g, rq, ev);
  pb_json_obj_end(&j);
  int rc = pb_json_error(&j);
  if (rc == 0) printf("%s\n", pb_json_cstr(&j));
  pb_json_free(&j);
  if (rc != 0) fprintf(stderr, "probs analyze: out of memory\n");
  return rc == 0 ? 0 : 1;
}

static void print_probs(const pb_game_t *g, const pb_state_t *s,
                        const request_t *rq, const pb_analysis_eval_t *ev) {
  char name[16];
  printf("V = %+.4f (for %c, the side to move)\n", ev->v,
         pb_analysis_side(g, s));
  for (int i = 0; i < ev->n_legal; i++) {
    int a = ev->legal[i];
    move_name(g, a, name, sizeof name);
    printf("move %s: Q=%+.4f V1=%+.4f", name, ev->q[a], ev->v1[a]);
    if (ev->has_beam) printf(" beam=%+.4f", ev->beam[a]);
    printf("\n");
  }
  move_name(g, ev->best_q, name, sizeof name);
  printf("best by Q: %s\n", name);
  move_name(g, ev->best_v1, name, sizeof name);
  printf("best by V one ply: %s\n", name);
  if (ev->has_abnet) {
    const pb_abnet_result_t *r = &ev->ab;
    char line[PB_ABNET_MAX_DEPTH * 8];
    pb_analysis_line(g, r->pv, r->pv_len, line, sizeof line);
    printf(
        "abnet (nodes=%llu): value %+.4f at depth %d%s, %llu "
        "evaluations, line: %s\n",
        (unsigned long long)rq->o.ab.nodes, r->value, r->depth,
        r->solved ? " (solved)" : "",
        (unsigned long long)(r->v_evals + r->q_evals), line);
    move_name(g, ev->best_abnet, name, sizeof name);
    printf("best by abnet (nodes=%llu): %s\n",
           (unsigned long long)rq->o.ab.nodes, name);
  }
  if (ev->has_beam) {
    move_name(g, ev->best_beam, name, sizeof name);
    printf("best by beam search (E=%d, M=%d): %s\n", rq->o.E, rq->o.M, name);
  }
}

static void print_td(const pb_game_t *g, const pb_state_t *s,
                     const request_t *rq, const pb_analysis_eval_t *ev) {
  char name[16];
  printf("V = %+.4f (for %c, the side to move: the linear evaluation)\n",
         ev->v, pb_analysis_side(g, s));
  for (int i = 0; i < ev->n_legal; i++) {
    int a = ev->legal[i];
    move_name(g, a, name, sizeof name);
    printf("move %s: V1=%+.4f\n", name, ev->v1[a]);
  }
  move_name(g, ev->best_v1, name, sizeof name);
  printf("best by V one ply: %s\n", name);
  printf("td %d-ply search: value %+.4f\n", rq->td_depth, rq->td_value);
  move_name(g, rq->td_best, name, sizeof name);
  printf("best by td (depth %d): %s\n", rq->td_depth, name);
}

/* td: the linear evaluation of the checkpoint's V in the n-ply search of
 * the td: agent, at the depth it trained at. Returns 0 or 1 after the
 * message. */
static int td_search(pb_model_t *net, const pb_config_t *mc,
                     const pb_state_t *s, request_t *rq) {
  pb_linear_t lin;
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_linear_init(&lin, pb_model_game(net), &err) != 0 ||
      pb_tdnet_get(pb_model_v(net), &lin, &err) != 0) {
    fprintf(stderr, "probs analyze: %s: %s\n", rq->model, err.msg);
    return 1;
  }
  int d = mc->td.ply;
  rq->td_depth = d < 1 ? 1 : d > PB_NPLY_MAX_DEPTH ? PB_NPLY_MAX_DEPTH : d;
  rq->td_best = pb_nply_best(&lin, s, rq->td_depth, &rq->td_value, NULL);
  return 0;
}

static void print_az(const pb_game_t *g, const pb_state_t *s,
                     const pb_analysis_eval_t *ev) {
  char name[16];
  printf("value = %+.4f (for %c, the side to move: the value head)\n", ev->v,
         pb_analysis_side(g, s));
  for (int i = 0; i < ev->n_legal; i++) {
    int a = ev->legal[i];
    move_name(g, a, name, sizeof name);
    printf("move %s: P=%.4f V1=%+.4f visits=%d\n", name, ev->p[a], ev->v1[a],
           ev->visits[a]);
  }
  move_name(g, ev->best_policy, name, sizeof name);
  printf("best by policy: %s\n", name);
  move_name(g, ev->best_v1, name, sizeof name);
  printf("best by value one ply: %s\n", name);
  printf("MCTS (%d simulations): root value %+.4f\n", ev->simulations,
         ev->mcts_value);
  move_name(g, ev->best_mcts, name, sizeof name);
  printf("best by MCTS (%d simulations): %s\n", ev->simulations, name);
}

/* The option values as given (NULL: not given). */
typedef struct {
  const char *search, *nodes, *E, *M, *sims;
} given_t;

/* Checks the options against the checkpoint's algorithm into rq->o.
 * Returns 0, or 2 after printing the one-line error. */
static int settle(const given_t *gv, int az, int td, request_t *rq) {
  pb_analysis_defaults(&rq->o);
  long v = 0;
  if (td) {
    const char *opt = gv->search  ? "--search"
                      : gv->nodes ? "--nodes"
                      : gv->E     ? "-E"
                      : gv->M     ? "-M"
                      : gv->sims  ? "--simulations"
                                  : NULL;
    if (opt != NULL) {
      fprintf(stderr,
              "probs analyze: %s is for probs and alphazero checkpoints; "
              "%s is a td checkpoint (V alone), analysed with its n-ply "
              "search\n",
              opt, rq->model);
      return 2;
    }
    rq->o.abnet = 0; /* Q orders alpha-beta: untrained in td */
    return 0;
  }
  if (az) {
    const char *probs_only = gv->search  ? "--search"
                             : gv->nodes ? "--nodes"
                             : gv->E     ? "-E"
                             : gv->M     ? "-M"
                                         : NULL;
    if (probs_only != NULL) {
      fprintf(stderr,
              "probs analyze: %s is for probs checkpoints; %s is an "
              "alphazero checkpoint (no V and Q), analysed with MCTS "
              "(--simulations N)\n",
              probs_only, rq->model);
      return 2;
    }
    if (gv->sims && pb_cli_long(gv->sims, 1, PB_MCTS_MAX_SIMULATIONS, &v) < 0) {
      fprintf(stderr,
              "probs analyze: bad --simulations '%s' (expected 1..%d)\n",
              gv->sims, PB_MCTS_MAX_SIMULATIONS);
      return 2;
    }
    if (gv->sims) rq->o.simulations = (int)v;
    return 0;
  }
  if (gv->sims) {
    fprintf(stderr,
            "probs analyze: --simulations is for alphazero "
            "checkpoints (MCTS); %s is a probs checkpoint: --nodes N sets "
            "the alpha-beta budget, -E/-M the beam's\n",
            rq->model);
    return 2;
  }
  const char *search = gv->search       ? gv->search
                       : gv->E || gv->M ? "both"
                                        : "abnet";
  if (strcmp(search, "abnet") && strcmp(search, "beam") &&
      strcmp(search, "both")) {
    fprintf(stderr,
            "probs analyze: bad --search '%s' (expected abnet, beam "
            "or both)\n",
            search);
    return 2;
  }
  rq->o.abnet = strcmp(search, "beam") != 0;
  int beam = strcmp(search, "abnet") != 0;
  if (!rq->o.abnet && gv->nodes) {
    fprintf(stderr,
            "probs analyze: --nodes is alpha-beta's budget; "
            "--search beam has no alpha-beta\n");
    return 2;
  }
  if (!beam && (gv->E || gv->M)) {
    fprintf(stderr,
            "probs analyze: -E/-M set the beam search; --search "
            "abnet has none (use --search both)\n");
    return 2;
  }
  if (gv->nodes && pb_cli_long(gv->nodes, 1, 100000000, &v) < 0) {
    fprintf(stderr,
            "probs analyze: bad --nodes '%s' (expected "
            "1..100000000)\n",
            gv->nodes);
    return 2;
  }
  if (gv->nodes) rq->o.ab.nodes = (uint64_t)v;
  long E = 30, M = 3;
  if (gv->E && pb_cli_long(gv->E, 1, PB_BEAM_MAX_EXPANSIONS, &E) < 0) {
    fprintf(stderr, "probs analyze: bad -E '%s' (expected 1..%d)\n", gv->E,
            PB_BEAM_MAX_EXPANSIONS);
    return 2;
  }
  if (gv->M && pb_cli_long(gv->M, 1, PB_BEAM_MAX_DEPTH, &M) < 0) {
    fprintf(stderr, "probs analyze: bad -M '%s' (expected 1..%d)\n", gv->M,
            PB_BEAM_MAX_DEPTH);
    return 2;
  }
  rq->o.E = beam ? (int)E : 0;
  rq->o.M = beam ? (int)M : 0;
  return 0;
}

/* Parses argv into *gv and rq's model and position. Returns -1 to go on,
 * else the exit status (0 for --help). */
static int parse(int argc, char **argv, given_t *gv, request_t *rq,
                 bool *json) {
  int json_flag = 0;
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("model", 'm', &rq->model),
                                PB_OPTS_VALUE("position", 'p', &rq->position),
                                PB_OPTS_VALUE("record", 0, &rq->record),
                                PB_OPTS_VALUE("search", 0, &gv->search),
                                PB_OPTS_VALUE("nodes", 0, &gv->nodes),
                                PB_OPTS_VALUE("simulations", 0, &gv->sims),
                                PB_OPTS_VALUE(NULL, 'E', &gv->E),
                                PB_OPTS_VALUE(NULL, 'M', &gv->M),
                                PB_OPTS_FLAG("json", 0, &json_flag)};
  const pb_opts_t cl = {.prog = "probs analyze",
                        .usage = usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  *json = json_flag != 0;
  if (rq->model == NULL)
    return pb_opts_fail(&cl, "--model CHECKPOINT is required");
  if (rq->record != NULL && rq->position[0] != '\0')
    return pb_opts_fail(&cl, "--record and --position: give one");
  return -1;
}

/* The analysis of position s (rq's) as text or JSON, and the move
 * played there when pl is not NULL. Returns 0, or the exit status after
 * the message. */
static int analyze_one(pb_model_t *net, const pb_config_t *mc, request_t *rq,
                       const pb_state_t *s, bool json, const played_t *pl) {
  const pb_game_t *g = pb_model_game(net);
  const int td = pb_model_kind(net) == PB_NETS_LINEAR; /* n-ply over V */
  pb_err_t err;
  pb_err_clear(&err);
  char result[64];
  int over = pb_analysis_result(g, s, result, sizeof result);
  pb_analysis_eval_t ev;
  memset(&ev, 0, sizeof ev);
  int rc = 0;
  if (!over) {
    pb_analysis_t *an = pb_analysis_new(net, &rq->o, &err);
    rc = an == NULL ? -1 : pb_analysis_eval(an, s, &ev, &err);
    pb_analysis_destroy(&an);
    if (rc == 0 && td && td_search(net, mc, s, rq) != 0)
      return PB_EXIT_FAILED;
    if (rc != 0) {
      fprintf(stderr, "probs analyze: %s\n", err.msg);
      return PB_EXIT_FAILED;
    }
  }
  if (json) return print_json(g, rq, s, &ev, over ? result : NULL, pl);
  char board[1024];
  pb_analysis_board(g, s, board, sizeof board);
  printf("%s (checkpoint %s, version %llu, %s), position \"%s\"\n", g->name,
         rq->model, (unsigned long long)pb_model_version(net), mc->algorithm,
         rq->position);
  printf("%s", board);
  printf("to move: %c (ply %d)\n", pb_analysis_side(g, s), g->ply(s));
  if (over)
    printf("game over: %s\n", result);
  else if (ev.alphazero)
    print_az(g, s, &ev);
  else if (td)
    print_td(g, s, rq, &ev);
  else
    print_probs(g, s, rq, &ev);
  if (pl != NULL && pl->action >= 0) {
    char name[16];
    move_name(g, pl->action, name, sizeof name);
    printf("played: %s%s", name,
           pl->opening ? " (an opening ply, not the player's choice)" : "");
    if (pl->ms >= 0) printf(", in %.3f s", pl->ms / 1000.0);
    printf("\n");
  }
  return rc;
}

/* --record FILE[:N]: every position of the game in turn. Returns the exit
 * status. */
static int analyze_record(pb_model_t *net, const pb_config_t *mc,
                          request_t *rq, bool json) {
  const pb_game_t *g = pb_model_game(net);
  char path[4096];
  long n = 1, k = 0;
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_record_spec(rq->record, path, sizeof path, &n, &err) != 0) {
    fprintf(stderr, "probs analyze: --record %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  pb_record_reader_t *rd = pb_record_reader_open(path, &err);
  if (rd == NULL) {
    fprintf(stderr, "probs analyze: --record: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  pb_record_t *r = malloc(sizeof *r);
  char *pos = malloc((size_t)PB_RECORD_MOVES_MAX * 5 + 1);
  int rc = 0;
  while (r != NULL && pos != NULL &&
         (rc = pb_record_reader_next(rd, r, &err)) == 1)
    if (++k == n) break;
  int status = PB_EXIT_OK;
  if (r == NULL || pos == NULL) {
    fprintf(stderr, "probs analyze: out of memory\n");
    status = PB_EXIT_FAILED;
  } else if (rc < 0) {
    fprintf(stderr, "probs analyze: --record: %s\n", err.msg);
    status = rc == PB_EIO || rc == PB_ENOMEM ? PB_EXIT_FAILED : PB_EXIT_USAGE;
  } else if (rc == 0) {
    fprintf(stderr, "probs analyze: --record: %s holds %ld game%s: there is "
            "no game %ld\n", path, k, k == 1 ? "" : "s", n);
    status = PB_EXIT_USAGE;
  } else if (r->g != g) {
    fprintf(stderr, "probs analyze: --record: game %ld of %s is %s, but the "
            "checkpoint %s plays %s\n", n, path, r->g->name, rq->model,
            g->name);
    status = PB_EXIT_USAGE;
  }
  if (status == PB_EXIT_OK && !json)
    printf("game %ld of %s: %s, X = %s, O = %s, %s in %d plies\n", n, path,
           g->name, r->first, r->second,
           r->interrupted ? "*" : r->result > 0 ? "1-0" : r->result < 0 ? "0-1"
                                                                  : "1/2-1/2",
           r->n_moves);
  pb_state_t s;
  g->reset(&s);
  for (int i = 0; status == PB_EXIT_OK && i <= r->n_moves; i++) {
    pb_record_moves_text(g, r->moves, i, pos, (size_t)PB_RECORD_MOVES_MAX * 5 + 1);
    rq->position = pos;
    played_t pl = {i < r->n_moves ? r->moves[i] : -1,
                   r->ms != NULL && i < r->n_moves ? r->ms[i] : -1,
                   i < r->opening_plies};
    if (!json) printf("\n-- ply %d of %d --\n", i, r->n_moves);
    status = analyze_one(net, mc, rq, &s, json, &pl);
    if (i < r->n_moves) {
      int done = 0;
      g->step(&s, r->moves[i], &done); /* checked on reading */
    }
  }
  fflush(stdout);
  pb_record_reader_destroy(&rd);
  free(pos);
  free(r);
  return status;
}

int pb_cmd_analyze(int argc, char **argv) {
  request_t rq = {NULL, "", NULL, "probs", {0}, 0, 0.0, -1};
  given_t gv = {NULL, NULL, NULL, NULL, NULL};
  bool json = false;
  int rc = parse(argc, argv, &gv, &rq, &json);
  if (rc >= 0) return rc;
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t mc;
  pb_model_t *net = pb_model_open(rq.model, "cpu", &mc, &err);
  if (net == NULL) {
    fprintf(stderr, "probs analyze: %s: %s\n", rq.model, err.msg);
    return PB_EXIT_USAGE; /* the checkpoint named cannot be used */
  }
  const pb_game_t *g = pb_model_game(net);
  rq.algorithm = mc.algorithm;
  pb_state_t s;
  const int td = pb_model_kind(net) == PB_NETS_LINEAR; /* n-ply over V */
  if (settle(&gv, pb_model_kind(net) == PB_NETS_PV, td, &rq) != 0) {
    pb_model_destroy(&net);
    return PB_EXIT_USAGE;
  }
  if (rq.record != NULL) {
    rc = analyze_record(net, &mc, &rq, json);
    pb_model_destroy(&net);
    return rc;
  }
  if (g->parse(&s, rq.position, &err) != 0) {
    fprintf(stderr, "probs analyze: bad position for %s (the checkpoint's "
            "game): %s\n", g->name, err.msg);
    pb_model_destroy(&net);
    return PB_EXIT_USAGE;
  }
  rc = analyze_one(net, &mc, &rq, &s, json, NULL);
  pb_model_destroy(&net);
  return rc;
}
