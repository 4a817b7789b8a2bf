/* probs play - a person plays against an agent in the terminal: the board
 * after every move, moves in the game's notation, undo, the agent's
 * evaluation on request. Reads standard input line by line; end of input
 * ends the game (exit 0). */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "analysis.h"
#include "args.h"
#include "cmds.h"
#include "game.h"
#include "model.h"
#include "models.h"

static void play_usage(FILE *f) {
  char kinds[256];
  pb_agent_kinds(kinds, sizeof kinds);
  fprintf(f,
          "usage: probs play [--game NAME] [--model CKPT] [--agent SPEC]\n"
          "                  [--first human|agent] [--seed S] [--position MOVES]\n"
          "  --game NAME       %s (default connect4, or the model's)\n"
          "  --model CKPT      the opponent's networks: a checkpoint or model\n"
          "                    file (default: the game's shipped model,\n"
          "                    data/models/GAME.pbck)\n"
          "  --agent SPEC      the opponent, as in `probs match`: %s\n"
          "                    (default abnet over the model, mcts over an\n"
          "                    alphazero one; random when there is none); a\n"
          "                    kind that takes a checkpoint may leave it out\n"
          "                    (abnet,nodes=3000) to use the model\n"
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

/* The eval command: the networks' view for a network agent, and the move
 * the agent would play here. Returns 0, or the agent's error code. */
static int show_eval(const pb_game_t *g, pb_agent_t *agent,
                     pb_analysis_t **an, const pb_state_t *s, pb_err_t *err) {
  int E = 0, M = 0;
  pb_model_t *l = pb_agent_networks(agent, &E, &M);
  char name[16];
  if (l != NULL && pb_model_alphazero(l)) {
    printf("%s: an alphazero checkpoint (no V and Q to show)\n",
           pb_agent_name(agent));
  } else if (l != NULL) {
    if (*an == NULL) *an = pb_analysis_new(l, E, M, err);
    pb_analysis_eval_t ev;
    if (*an == NULL || pb_analysis_eval(*an, s, &ev, err) < 0)
      return err->code < 0 ? err->code : PB_ENN;
    printf("%s: V = %+.4f for %c, the side to move\n", pb_agent_name(agent),
           ev.v, pb_analysis_side(g, s));
    for (int i = 0; i < ev.n_legal; i++) {
      int a = ev.legal[i];
      g->action_name(a, name, sizeof name);
      printf("  move %-4s Q=%+.4f V1=%+.4f", name, ev.q[a], ev.v1[a]);
      if (ev.has_beam) printf(" beam=%+.4f", ev.beam[a]);
      printf("\n");
    }
    g->action_name(ev.best_q, name, sizeof name);
    printf("best by Q: %s", name);
    g->action_name(ev.best_v1, name, sizeof name);
    printf(", by V one ply: %s", name);
    if (ev.has_beam) {
      g->action_name(ev.best_beam, name, sizeof name);
      printf(", by beam search (E=%d, M=%d): %s", E, M, name);
    }
    printf("\n");
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

/* The opponent's spec into spec[0..n): --agent completed with the model
 * (--model, else the game's shipped model when the agent needs one), or
 * the default agent of that model. Returns 0 or an exit status. */
static int opponent(const pb_game_t **g, const char *game, const char *agent,
                    const char *model, char *spec, size_t n) {
  char shipped[4096];
  pb_err_t err;
  pb_err_clear(&err);
  if (model == NULL) {
    char probe[4400];
    pb_agent_spec_with_model(agent ? agent : "abnet", "M", probe,
                             sizeof probe);
    int needs = agent == NULL || strcmp(probe, agent) != 0;
    if (needs && pb_cli_shipped_model((*g)->name, shipped, sizeof shipped,
                                      &err) == 0) {
      model = shipped;
    } else if (needs && agent != NULL) {
      fprintf(stderr, "probs play: --agent %s needs a model: %s\n", agent,
              err.msg);
      return PB_EXIT_USAGE;
    } else if (needs) {
      fprintf(stderr, "probs play: %s; the opponent plays at random\n",
              err.msg);
      agent = "random";
    }
  }
  if (model != NULL) {
    pb_model_t *m = pb_model_open(model, "cpu", NULL, &err);
    if (m == NULL) {
      fprintf(stderr, "probs play: --model: %s\n", err.msg);
      return PB_EXIT_USAGE;
    }
    const pb_game_t *mg = pb_model_game(m);
    int az = pb_model_alphazero(m);
    pb_model_destroy(&m);
    if (game != NULL && mg != *g) {
      fprintf(stderr, "probs play: --model %s is a %s model, not %s\n", model,
              mg->name, (*g)->name);
      return PB_EXIT_USAGE;
    }
    *g = mg;
    if (agent == NULL) agent = az ? "mcts" : "abnet";
  }
  pb_agent_spec_with_model(agent, model, spec, n);
  return 0;
}

int pb_cmd_play(int argc, char **argv) {
  enum { O_GAME, O_AGENT, O_FIRST, O_SEED, O_POS, O_MODEL, O_N };
  static const char *const names[O_N] = {"--game", "--agent",    "--first",
                                         "--seed", "--position", "--model"};
  const char *val[O_N] = {NULL, NULL, "human", "1", "", NULL};
  int parsed = pb_cli_options(argc, argv, "play", names, O_N, val, play_usage);
  if (parsed != 0) return parsed == 1 ? 0 : parsed;

  const char *game = val[O_GAME] ? val[O_GAME] : "connect4";
  const pb_game_t *g = pb_game_by_name(game);
  if (g == NULL) {
    fprintf(stderr, "probs play: unknown game '%s' (known: %s)\n", game,
            pb_game_names());
    return 2;
  }
  char spec[4400];
  int orc = opponent(&g, val[O_GAME], val[O_AGENT], val[O_MODEL], spec,
                     sizeof spec);
  if (orc != 0) return orc;
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
