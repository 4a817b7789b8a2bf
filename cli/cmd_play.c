/* probs play - a person plays against an agent in the terminal: the board
 * after every move, moves in the game's notation, undo, the agent's
 * evaluation on request. Reads standard input line by line; end of input
 * ends the game (exit 0). */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo.h"
#include "agent.h"
#include "analysis.h"
#include "args.h"
#include "cmds.h"
#include "game.h"
#include "model.h"
#include "models.h"
#include "opts.h"

static void play_usage(FILE *f) {
  char kinds[PB_AGENT_KINDS_MAX];
  pb_agent_kinds(kinds, sizeof kinds);
  fprintf(f,
          "usage: probs play [--game NAME] [--model CKPT] [--agent SPEC]\n"
          "                  [--first human|agent] [--seed S]\n"
          "                  [--position MOVES]\n"
          "  --game NAME       %s (default connect4, or the\n"
          "                    checkpoint's game)\n"
          "  --model CKPT      a checkpoint or model file: the game, and the\n"
          "                    opponent's network (default: the game's\n"
          "                    shipped model, data/models/GAME.pbck)\n"
          "  --agent SPEC      the opponent, as in `probs match`: %s.\n"
          "                    With --model: search (the default) is the\n"
          "                    best search over it, abnet:CKPT (alpha-beta,\n"
          "                    1000 evaluations a move) for a probs\n"
          "                    checkpoint, mcts:CKPT for an alphazero one;\n"
          "                    checkpoint, value, beam[,E=N][,M=N],\n"
          "                    mcts[,N=n] and abnet[,nodes=N] take CKPT.\n"
          "                    Random when there is no model at all\n"
          "  --first WHO       human (default) or agent: who moves first\n"
          "  --seed S          the agent's seed (default 1)\n"
          "  --position MOVES  start from these moves (game notation)\n"
          "At the prompt type a move (connect4: column 1-7; tictactoe: cell\n"
          "1-9; othello: a square like f5, or pass; toguz: hole 1-9), or\n"
          "undo, eval (or hint), board, help, quit. End of input quits.\n",
          pb_game_names(), kinds);
}

static void play_help(const pb_game_t *g) {
  static const char *const how[] = {
      [PB_GAME_CONNECT4] = "a column number 1-7",
      [PB_GAME_TICTACTOE] = "a cell number 1-9, in reading order",
      [PB_GAME_OTHELLO] = "a square, letter a-h and row 1-8 (f5), or pass",
      [PB_GAME_TOGUZ] = "one of your hole numbers 1-9"};
  printf("commands:\n"
         "  MOVE   play a move: %s\n"
         "  undo   take back your last move and the agent's reply\n"
         "  eval   what the agent thinks of this position (also: hint)\n"
         "  board  draw the board again\n"
         "  help   this text\n"
         "  quit   stop (also: end of input, Ctrl-D)\n",
         g->id > 0 && g->id < (int)(sizeof how / sizeof how[0]) && how[g->id]
             ? how[g->id]
             : "its name");
}

/* The board of s, reached from prev (NULL at the start: no last move). */
static void draw(const pb_game_t *g, const pb_state_t *prev,
                 const pb_state_t *s, int human) {
  char board[1400];
  pb_analysis_board_after(g, prev, s, board, sizeof board);
  printf("\n%s", board);
  char res[64];
  if (!pb_analysis_result(g, s, res, sizeof res))
    printf("to move: %c (%s)\n", pb_analysis_side(g, s),
           human ? "you" : "agent");
}

/* The analysis settings that mirror the agent's own search: its beam or
 * alpha-beta (PROBS), its MCTS (AlphaZero; 200 simulations for the
 * AlphaZero agents that do not search). */
static void search_opts(pb_model_t *l, const pb_agent_search_t *sr,
                        pb_analysis_opts_t *o) {
  pb_analysis_defaults(o);
  o->abnet = sr->kind == PB_AGENT_SEARCH_ABNET;
  if (o->abnet) o->ab = sr->ab;
  if (sr->kind == PB_AGENT_SEARCH_BEAM) {
    o->E = sr->E;
    o->M = sr->M;
  }
  if (pb_model_alphazero(l) && sr->kind == PB_AGENT_SEARCH_MCTS) {
    o->simulations = sr->N;
    o->c_puct = sr->c;
  }
}

/* The networks' view of s (an analysis of *an). */
static void print_view(const pb_game_t *g, pb_agent_t *agent,
                       const pb_state_t *s, const pb_agent_search_t *sr,
                       const pb_analysis_eval_t *ev) {
  char name[16];
  const char *who = pb_agent_name(agent);
  if (ev->alphazero)
    printf("%s: value = %+.4f for %c, the side to move\n", who, ev->v,
           pb_analysis_side(g, s));
  else
    printf("%s: V = %+.4f for %c, the side to move\n", who, ev->v,
           pb_analysis_side(g, s));
  for (int i = 0; i < ev->n_legal; i++) {
    int a = ev->legal[i];
    g->action_name(a, name, sizeof name);
    if (ev->alphazero) {
      printf("  move %-4s P=%.4f V1=%+.4f visits=%d\n", name, ev->p[a],
             ev->v1[a], ev->visits[a]);
      continue;
    }
    printf("  move %-4s Q=%+.4f V1=%+.4f", name, ev->q[a], ev->v1[a]);
    if (ev->has_beam) printf(" beam=%+.4f", ev->beam[a]);
    printf("\n");
  }
  if (ev->alphazero) {
    g->action_name(ev->best_policy, name, sizeof name);
    printf("best by policy: %s", name);
    g->action_name(ev->best_v1, name, sizeof name);
    printf(", by value one ply: %s", name);
    g->action_name(ev->best_mcts, name, sizeof name);
    printf(", by MCTS (%d simulations, root value %+.4f): %s\n",
           ev->simulations, ev->mcts_value, name);
    return;
  }
  g->action_name(ev->best_q, name, sizeof name);
  printf("best by Q: %s", name);
  g->action_name(ev->best_v1, name, sizeof name);
  printf(", by V one ply: %s", name);
  if (ev->has_beam) {
    g->action_name(ev->best_beam, name, sizeof name);
    printf(", by beam search (E=%d, M=%d): %s", sr->E, sr->M, name);
  }
  printf("\n");
  if (ev->has_abnet) {
    char line[PB_ABNET_MAX_DEPTH * 8];
    pb_analysis_line(g, ev->ab.pv, ev->ab.pv_len, line, sizeof line);
    printf("abnet: value %+.4f at depth %d%s, %llu evaluations, line: %s\n",
           ev->ab.value, ev->ab.depth, ev->ab.solved ? " (solved)" : "",
           (unsigned long long)(ev->ab.v_evals + ev->ab.q_evals), line);
  }
}

/* The eval command: the networks' view for a network agent (with the
 * agent's own search), and the move the agent would play here. Returns 0,
 * or the agent's error code. */
static int show_eval(const pb_game_t *g, pb_agent_t *agent,
                     pb_analysis_t **an, const pb_state_t *s, pb_err_t *err) {
  pb_agent_search_t sr;
  pb_model_t *l = pb_agent_search_of(agent, &sr);
  char name[16];
  if (l != NULL) {
    if (*an == NULL) {
      pb_analysis_opts_t o;
      search_opts(l, &sr, &o);
      *an = pb_analysis_new(l, &o, err);
    }
    pb_analysis_eval_t ev;
    if (*an == NULL || pb_analysis_eval(*an, s, &ev, err) < 0)
      return err->code < 0 ? err->code : PB_ENN;
    print_view(g, agent, s, &sr, &ev);
  } else {
    printf("%s has no evaluation to show\n", pb_agent_name(agent));
  }
  int a = pb_agent_act(agent, s, err);
  if (a < 0) return a;
  g->action_name(a, name, sizeof name);
  printf("%s would play: %s\n", pb_agent_name(agent), name);
  return 0;
}

/* Reads one line into buf (the rest of a too long line is dropped).
 * Returns 0, or -1 at end of input. */
static int read_line(char *buf, size_t n) {
  if (fgets(buf, (int)n, stdin) == NULL) return -1;
  size_t len = strlen(buf);
  if (len > 0 && buf[len - 1] != '\n' && !feof(stdin)) {
    int ch;
    while ((ch = getchar()) != EOF && ch != '\n') {
    }
  }
  char *p = buf;
  while (isspace((unsigned char)*p)) p++;
  len = strlen(p);
  while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
  memmove(buf, p, len);
  buf[len] = '\0';
  for (size_t i = 0; i < len; i++)
    buf[i] = (char)tolower((unsigned char)buf[i]);
  return 0;
}

enum { TURN_MOVED, TURN_QUIT, TURN_UNDO, TURN_ERROR };

/* The human's turn in hist[k]: reads commands until a move (pushed as
 * hist[k + 1]), undo, quit or end of input. */
static int human_turn(const pb_game_t *g, pb_agent_t *agent, pb_analysis_t **an,
                      pb_state_t *hist, int k, int *rc) {
  const pb_state_t *s = &hist[k];
  char line[256];
  uint8_t acts[PB_MAX_ACTIONS];
  char only[16];
  if (g->legal(s, acts) == 1 && g->action_name(acts[0], only, sizeof only) > 0 &&
      !strcmp(only, "pass"))
    printf("you have no move: type pass\n");
  for (;;) {
    printf("your move (%c), or help: ", pb_analysis_side(g, s));
    fflush(stdout);
    if (read_line(line, sizeof line) < 0) {
      printf("\nend of input: bye\n");
      return TURN_QUIT;
    }
    pb_err_t err;
    pb_err_clear(&err);
    if (line[0] == '\0') {
      printf("please type a move, or help\n");
    } else if (!strcmp(line, "quit") || !strcmp(line, "exit") ||
               !strcmp(line, "q")) {
      printf("bye\n");
      return TURN_QUIT;
    } else if (!strcmp(line, "help") || !strcmp(line, "?")) {
      play_help(g);
    } else if (!strcmp(line, "board")) {
      draw(g, k > 0 ? &hist[k - 1] : NULL, s, 1);
    } else if (!strcmp(line, "undo")) {
      if (k >= 2) return TURN_UNDO;
      printf("nothing to undo\n");
    } else if (!strcmp(line, "eval") || !strcmp(line, "hint")) {
      int e = show_eval(g, agent, an, s, &err);
      if (e < 0) {
        fprintf(stderr, "probs play: %s\n", err.msg);
        *rc = 1;
        return TURN_ERROR;
      }
    } else {
      int a;
      if (pb_analysis_parse_move(g, s, line, &a, &err) < 0) {
        printf("%s; try again\n", err.msg);
        continue;
      }
      hist[k + 1] = *s;
      int done = 0;
      g->step(&hist[k + 1], a, &done);
      char name[16];
      g->action_name(a, name, sizeof name);
      printf("you play %s\n", name);
      return TURN_MOVED;
    }
  }
}

/* The game and the agent's spec from the options: with --model, the
 * checkpoint's game and by default its search (abnet:CKPT for a PROBS
 * checkpoint, mcts:CKPT for an AlphaZero one); network kinds may leave out
 * the path. Returns 0, or the exit status after printing the error. */
static int pick_agent(const char *game, const char *agent, const char *model,
                      const pb_game_t **g, char *spec, size_t n) {
  /* No --model: the game's shipped one, when the agent takes a model. */
  char shipped[4096];
  char probe[4400];
  pb_err_t serr;
  pb_err_clear(&serr);
  if (agent != NULL) pb_agent_spec_with_model(agent, "M", probe, sizeof probe);
  int takes = agent == NULL || !strcmp(agent, "search") || strcmp(probe, agent);
  const pb_game_t *sg = pb_game_by_name(game != NULL ? game : "connect4");
  if (model == NULL && takes && sg != NULL &&
      pb_cli_shipped_model(sg->name, shipped, sizeof shipped, &serr) == 0)
    model = shipped;
  else if (model == NULL && takes && sg != NULL && agent == NULL)
    fprintf(stderr, "probs play: %s; the opponent plays at random\n",
            serr.msg);
  if (model == NULL) {
    *g = pb_game_by_name(game != NULL ? game : "connect4");
    if (*g == NULL) {
      fprintf(stderr, "probs play: unknown game '%s' (known: %s)\n", game,
              pb_game_names());
      return 2;
    }
    if (agent != NULL && takes) {
      fprintf(stderr, "probs play: --agent %s needs a model: %s\n", agent,
              serr.msg);
      return 2;
    }
    snprintf(spec, n, "%s", agent != NULL ? agent : "random");
    return 0;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_config_t mc;
  pb_model_t *m = pb_model_open(model, "cpu", &mc, &err);
  if (m == NULL) {
    fprintf(stderr, "probs play: --model: %s\n", err.msg);
    return 2;
  }
  *g = pb_model_game(m);
  pb_model_destroy(&m);
  if (game != NULL && pb_game_by_name(game) != *g) {
    fprintf(stderr, "probs play: --game %s, but the checkpoint %s plays %s\n",
            game, model, (*g)->name);
    return 2;
  }
  if (agent == NULL || !strcmp(agent, "search"))
    /* The agent that plays the checkpoint's algorithm at its best. */
    snprintf(spec, n, "%s:%s", pb_algo_of(&mc)->agent, model);
  else
    pb_agent_spec_with_model(agent, model, spec, n);
  return 0;
}

int pb_cmd_play(int argc, char **argv) {
  enum { O_GAME, O_AGENT, O_MODEL, O_FIRST, O_SEED, O_POS, O_N };
  const char *val[O_N] = {NULL, NULL, NULL, "human", "1", ""};
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("game", 0, &val[O_GAME]),
                                PB_OPTS_VALUE("agent", 0, &val[O_AGENT]),
                                PB_OPTS_VALUE("model", 0, &val[O_MODEL]),
                                PB_OPTS_VALUE("first", 0, &val[O_FIRST]),
                                PB_OPTS_VALUE("seed", 0, &val[O_SEED]),
                                PB_OPTS_VALUE("position", 0, &val[O_POS])};
  const pb_opts_t cl = {.prog = "probs play",
                        .usage = play_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);

  const pb_game_t *g = NULL;
  char spec[4400];
  int picked = pick_agent(val[O_GAME], val[O_AGENT], val[O_MODEL], &g, spec,
                          sizeof spec);
  if (picked != 0) return picked;
  int human_first;
  if (!strcmp(val[O_FIRST], "human")) {
    human_first = 1;
  } else if (!strcmp(val[O_FIRST], "agent")) {
    human_first = 0;
  } else {
    fprintf(stderr, "probs play: bad --first '%s' (expected human or agent)\n",
            val[O_FIRST]);
    return 2;
  }
  const char *ss = val[O_SEED];
  unsigned long long seed;
  if (pb_cli_seed(ss, &seed) != 0) {
    fprintf(stderr, "probs play: bad --seed '%s' (expected 0..2^64-1)\n", ss);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  pb_state_t start;
  if (g->parse(&start, val[O_POS], &err) != 0) {
    fprintf(stderr, "probs play: bad --position: %s\n", err.msg);
    return 2;
  }
  pb_agent_t *agent = pb_agent_new(g, spec, seed, &err);
  if (agent == NULL) {
    fprintf(stderr, "probs play: %s\n", err.msg);
    return err.code == PB_EINVAL || err.code == PB_EMISMATCH ? 2 : 1;
  }
  /* Every ply of the game from the start position on: undo pops two. */
  const int cap = g->max_turns + 2;
  pb_state_t *hist = malloc((size_t)cap * sizeof *hist);
  if (hist == NULL) {
    fprintf(stderr, "probs play: out of memory\n");
    pb_agent_destroy(&agent);
    return 1;
  }
  hist[0] = start;
  /* A closed terminal then reads as the end of input (a clean exit 0)
   * instead of killing the game. */
  signal(SIGHUP, SIG_IGN);
  const int human_parity = human_first ? 0 : 1;
  pb_analysis_t *an = NULL;
  printf("probs play: %s against %s; you are %c. Type help for the "
         "commands.\n",
         g->name, pb_agent_name(agent),
         human_first ? pb_analysis_side(g, &start)
                     : (pb_analysis_side(g, &start) == 'X' ? 'O' : 'X'));
  int k = 0, rc = 0;
  for (;;) {
    const pb_state_t *s = &hist[k];
    int human = k % 2 == human_parity;
    draw(g, k > 0 ? &hist[k - 1] : NULL, s, human);
    char res[64];
    if (pb_analysis_result(g, s, res, sizeof res)) {
      float r = 0;
      g->terminal(s, &r);
      /* r is the result of the side to move in s. */
      const char *who = r == 0 ? "" : (r > 0) == human ? " (you win)"
                                                       : " (the agent wins)";
      printf("game over: %s%s\n", res, who);
      break;
    }
    if (g->ply(s) >= g->max_turns || k + 1 >= cap) {
      printf("game over: draw (the game reached %d plies)\n", g->max_turns);
      break;
    }
    if (!human) {
      int a = pb_agent_act(agent, s, &err);
      if (a < 0) {
        fprintf(stderr, "probs play: %s\n", err.msg);
        rc = 1;
        break;
      }
      hist[k + 1] = *s;
      int done = 0;
      g->step(&hist[k + 1], a, &done);
      char name[16];
      g->action_name(a, name, sizeof name);
      printf("agent (%c) plays %s\n", pb_analysis_side(g, s), name);
      k++;
      continue;
    }
    int t = human_turn(g, agent, &an, hist, k, &rc);
    if (t == TURN_MOVED) {
      k++;
    } else if (t == TURN_UNDO) {
      k -= 2;
      printf("undone: back to move %d\n", g->ply(&hist[k]) + 1);
    } else {
      break;
    }
  }
  fflush(stdout);
  pb_analysis_destroy(&an);
  free(hist);
  pb_agent_destroy(&agent);
  return rc;
}
