/* probs play - a person plays against an agent in the terminal: the board
 * after every move, moves in the game's notation, undo, the agent's
 * evaluation on request. Reads standard input line by line; end of input
 * ends the game (exit 0). With --replay FILE[:N] it steps through game N
 * of a file of game records (common/play/record.h) instead, with the
 * network's view of each position. */
#include <ctype.h>
#include <math.h>
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
#include "record.h"

static void play_usage(FILE *f) {
  char kinds[PB_AGENT_KINDS_MAX];
  pb_agent_kinds(kinds, sizeof kinds);
  fprintf(f,
          "usage: probs play [--game NAME] [--model CKPT] [--agent SPEC]\n"
          "                  [--first human|agent] [--seed S]\n"
          "                  [--position MOVES]\n"
          "       probs play --replay FILE[:N] [--model CKPT] [--agent SPEC]\n"
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
          "  --replay FILE[:N] step through game N (default 1) of a file of\n"
          "                    game records (probs match --record, the run's\n"
          "                    games/): each position with the network's view\n"
          "                    (--model, default the game's shipped one; as\n"
          "                    eval shows it) and the move played. Enter: the\n"
          "                    next position; back; a ply number; quit. End\n"
          "                    of input shows the rest of the game\n"
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
  if (pb_model_kind(l) == PB_NETS_PV && sr->kind == PB_AGENT_SEARCH_MCTS) {
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
    snprintf(spec, n, "%s:%s", pb_algos_of(&mc)->agent, model);
  else
    pb_agent_spec_with_model(agent, model, spec, n);
  return 0;
}

/* ---- --replay ----------------------------------------------------------- */

/* Game *n of the record file named by spec ("FILE[:N]") into *r, its
 * moves copied into moves (PB_RECORD_MOVES_MAX entries). Returns 0, or
 * the exit status after the message. */
static int replay_load(const char *spec, pb_record_t *r, uint8_t *moves,
                       int32_t *ms, float *evals, char *path, size_t cap,
                       long *n) {
  pb_err_t err;
  pb_err_clear(&err);
  if (pb_record_spec(spec, path, cap, n, &err) != 0) {
    fprintf(stderr, "probs play: --replay %s\n", err.msg);
    return 2;
  }
  pb_record_reader_t *rd = pb_record_reader_open(path, &err);
  if (rd == NULL) {
    fprintf(stderr, "probs play: --replay: %s\n", err.msg);
    return 2;
  }
  long k = 0;
  int rc;
  while ((rc = pb_record_reader_next(rd, r, &err)) == 1)
    if (++k == *n) break;
  if (rc == 1) {
    memcpy(moves, r->moves, (size_t)r->n_moves);
    r->moves = moves;
    if (r->ms != NULL) {
      memcpy(ms, r->ms, (size_t)r->n_moves * sizeof *ms);
      r->ms = ms;
    }
    if (r->evals != NULL) {
      memcpy(evals, r->evals, (size_t)r->n_moves * sizeof *evals);
      r->evals = evals;
    }
  }
  pb_record_reader_destroy(&rd);
  if (rc < 0) {
    fprintf(stderr, "probs play: --replay: %s\n", err.msg);
    return rc == PB_EIO || rc == PB_ENOMEM ? 1 : 2;
  }
  if (rc == 0) {
    fprintf(stderr, "probs play: --replay: %s holds %ld game%s: there is no "
            "game %ld\n", path, k, k == 1 ? "" : "s", *n);
    return 2;
  }
  return 0;
}

/* The agent whose view the replay of a game of g shows: --agent over
 * --model or g's shipped model. *out NULL (after saying so) when there is
 * no network. Returns 0, or the exit status after the message. */
static int replay_agent(const pb_game_t *g, const char *agent,
                        const char *model, unsigned long long seed,
                        pb_agent_t **out) {
  *out = NULL;
  char shipped[4096], spec[4400];
  pb_err_t err;
  pb_err_clear(&err);
  if (model == NULL && agent == NULL) {
    if (pb_cli_shipped_model(g->name, shipped, sizeof shipped, &err) != 0) {
      printf("no network's view to show: %s\n", err.msg);
      return 0;
    }
    model = shipped;
  }
  /* With a model the game is the model's, compared below. */
  const pb_game_t *mg = NULL;
  int rc = pick_agent(model != NULL ? NULL : g->name, agent, model, &mg, spec,
                      sizeof spec);
  if (rc != 0) return rc;
  if (mg != g) {
    fprintf(stderr, "probs play: --replay: the game is %s, but --model %s "
            "plays %s\n", g->name, model, mg->name);
    return 2;
  }
  if ((*out = pb_agent_new(g, spec, seed, &err)) == NULL) {
    fprintf(stderr, "probs play: %s\n", err.msg);
    return err.code == PB_EINVAL || err.code == PB_EMISMATCH ? 2 : 1;
  }
  return 0;
}

/* Position k of the game (hist[0..n]): the board, whose move it is, the
 * agent's view and the move played; the result at the end. 0, or the
 * agent's error. */
static int replay_show(const pb_record_t *r, const pb_state_t *hist, int k,
                       pb_agent_t *agent, pb_analysis_t **an, pb_err_t *err) {
  const pb_game_t *g = r->g;
  char board[1400], name[16];
  pb_analysis_board_after(g, k > 0 ? &hist[k - 1] : NULL, &hist[k], board,
                          sizeof board);
  printf("\n-- ply %d of %d --\n%s", k, r->n_moves, board);
  if (k == r->n_moves) {
    char res[64];
    if (pb_analysis_result(g, &hist[k], res, sizeof res))
      printf("game over: %s (%s)\n", res,
             r->result > 0 ? "1-0" : r->result < 0 ? "0-1" : "1/2-1/2");
    else if (r->capped)
      printf("unfinished: stopped at the turn cap, counted as a draw\n");
    else if (r->interrupted)
      printf("unfinished: interrupted, no result\n");
    else
      printf("unfinished: %s (%s)\n",
             r->time_loss     ? "lost on time by the side to move"
             : r->resigned    ? "a side resigned"
                              : "adjudicated",
             r->result > 0 ? "1-0" : r->result < 0 ? "0-1" : "1/2-1/2");
    return 0;
  }
  char side = pb_analysis_side(g, &hist[k]);
  printf("to move: %c (%s)\n", side, side == 'X' ? r->first : r->second);
  if (agent != NULL) {
    pb_agent_search_t sr;
    pb_model_t *l = pb_agent_search_of(agent, &sr);
    if (l == NULL) {
      int a = pb_agent_act(agent, &hist[k], err);
      if (a < 0) return a;
      g->action_name(a, name, sizeof name);
      printf("%s would play: %s\n", pb_agent_name(agent), name);
    } else {
      if (*an == NULL) {
        pb_analysis_opts_t o;
        search_opts(l, &sr, &o);
        *an = pb_analysis_new(l, &o, err);
      }
      pb_analysis_eval_t ev;
      if (*an == NULL || pb_analysis_eval(*an, &hist[k], &ev, err) < 0)
        return err->code < 0 ? err->code : PB_ENN;
      print_view(g, agent, &hist[k], &sr, &ev);
    }
  }
  g->action_name(r->moves[k], name, sizeof name);
  printf("played: %s%s", name,
         k < r->opening_plies ? " (an opening ply, not the player's choice)"
                              : "");
  if (r->ms != NULL && r->ms[k] >= 0)
    printf(", in %.3f s", r->ms[k] / 1000.0);
  if (r->evals != NULL && !isnan(r->evals[k]))
    printf(", the player's evaluation %+.4f", (double)r->evals[k]);
  printf("\n");
  return 0;
}

/* One command at the replay's prompt: sets *k (the position shown next)
 * and returns 1 to show it, 0 to ask again, -1 to stop. At the end of
 * input the rest of the game is shown without asking (*ask = 0). */
static int replay_command(int n, int *k, int *ask) {
  char line[64];
  printf("ply %d of %d: enter for the next, back, a ply 0-%d, quit: ", *k, n,
         n);
  fflush(stdout);
  if (read_line(line, sizeof line) < 0) {
    printf("\n");
    *ask = 0;
    return *k < n ? (++*k, 1) : -1;
  }
  if (!strcmp(line, "") || !strcmp(line, "next") || !strcmp(line, "n"))
    return *k < n ? (++*k, 1) : -1;
  if (!strcmp(line, "back") || !strcmp(line, "b")) {
    if (*k == 0) {
      printf("this is the start\n");
      return 0;
    }
    --*k;
    return 1;
  }
  if (!strcmp(line, "quit") || !strcmp(line, "q") || !strcmp(line, "exit"))
    return -1;
  long v;
  if (pb_cli_long(line, 0, n, &v) == 0) {
    *k = (int)v;
    return 1;
  }
  printf("'%s': type enter, back, a ply number 0-%d, or quit\n", line, n);
  return 0;
}

/* probs play --replay SPEC: 0 after the game or quit, else the exit
 * status after the message. */
static int replay(const char *spec, const char *game, const char *agent_s,
                  const char *model, const char *seed_s) {
  unsigned long long seed;
  if (pb_cli_seed(seed_s, &seed) != 0) {
    fprintf(stderr, "probs play: bad --seed '%s' (expected 0..2^64-1)\n",
            seed_s);
    return 2;
  }
  pb_record_t *r = malloc(sizeof *r);
  uint8_t *moves = malloc(PB_RECORD_MOVES_MAX);
  int32_t *ms = malloc(PB_RECORD_MOVES_MAX * sizeof *ms);
  float *evals = malloc(PB_RECORD_MOVES_MAX * sizeof *evals);
  pb_state_t *hist = NULL;
  pb_agent_t *agent = NULL;
  pb_analysis_t *an = NULL;
  char path[4096];
  long n = 1;
  int rc = r != NULL && moves != NULL && ms != NULL && evals != NULL ? 0 : 1;
  if (rc != 0) fprintf(stderr, "probs play: out of memory\n");
  if (rc == 0)
    rc = replay_load(spec, r, moves, ms, evals, path, sizeof path, &n);
  if (rc == 0 && game != NULL && pb_game_by_name(game) != r->g) {
    fprintf(stderr, "probs play: --replay: game %ld of %s is %s, not --game "
            "%s\n", n, path, r->g->name, game);
    rc = 2;
  }
  if (rc == 0 &&
      (hist = malloc(((size_t)r->n_moves + 1) * sizeof *hist)) == NULL) {
    fprintf(stderr, "probs play: out of memory\n");
    rc = 1;
  }
  if (rc == 0) {
    printf("replay: game %ld of %s: %s, X = %s, O = %s, %s in %d plies%s\n",
           n, path, r->g->name, r->first, r->second,
           r->result > 0 ? "1-0" : r->result < 0 ? "0-1" : "1/2-1/2",
           r->n_moves, r->capped ? " (capped)" : "");
    if (r->event[0] || r->date[0] || r->first_version[0] ||
        r->time_control[0])
      printf("event: %s, date: %s, X: %s, O: %s, time control: %s, "
             "termination: %s\n",
             r->event[0] ? r->event : "-", r->date[0] ? r->date : "-",
             r->first_version[0] ? r->first_version : "-",
             r->second_version[0] ? r->second_version : "-",
             r->time_control[0] ? r->time_control : "-",
             pb_record_termination(r));
    rc = replay_agent(r->g, agent_s, model, seed, &agent);
  }
  if (rc == 0) {
    r->g->reset(&hist[0]);
    for (int i = 0; i < r->n_moves; i++) {
      int done = 0;
      hist[i + 1] = hist[i];
      r->g->step(&hist[i + 1], r->moves[i], &done); /* checked on reading */
    }
    signal(SIGHUP, SIG_IGN);
    int k = 0, ask = 1, c = 1;
    pb_err_t err;
    pb_err_clear(&err);
    while (c >= 0) {
      if (c == 1 && replay_show(r, hist, k, agent, &an, &err) < 0) {
        fprintf(stderr, "probs play: %s\n", err.msg);
        rc = 1;
        break;
      }
      if (ask)
        c = replay_command(r->n_moves, &k, &ask);
      else
        c = k < r->n_moves ? (++k, 1) : -1;
    }
  }
  fflush(stdout);
  pb_analysis_destroy(&an);
  pb_agent_destroy(&agent);
  free(hist);
  free(moves);
  free(ms);
  free(evals);
  free(r);
  return rc;
}

/* probs play's options after parsing. */
enum { O_GAME, O_AGENT, O_MODEL, O_FIRST, O_SEED, O_POS, O_REPLAY, O_N };

/* probs play --replay: the options that go with it, then the replay. */
static int replay_opts(const pb_opts_t *cl, const char *const *val) {
  if (val[O_POS][0] != '\0' || strcmp(val[O_FIRST], "human") != 0)
    return pb_opts_fail(cl, "--replay takes neither --position nor --first");
  return replay(val[O_REPLAY], val[O_GAME], val[O_AGENT], val[O_MODEL],
                val[O_SEED]);
}

int pb_cmd_play(int argc, char **argv) {
  const char *val[O_N] = {NULL, NULL, NULL, "human", "1", "", NULL};
  const pb_opts_row_t rows[] = {PB_OPTS_VALUE("game", 0, &val[O_GAME]),
                                PB_OPTS_VALUE("agent", 0, &val[O_AGENT]),
                                PB_OPTS_VALUE("model", 0, &val[O_MODEL]),
                                PB_OPTS_VALUE("first", 0, &val[O_FIRST]),
                                PB_OPTS_VALUE("seed", 0, &val[O_SEED]),
                                PB_OPTS_VALUE("position", 0, &val[O_POS]),
                                PB_OPTS_VALUE("replay", 0, &val[O_REPLAY])};
  const pb_opts_t cl = {.prog = "probs play",
                        .usage = play_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  if (val[O_REPLAY] != NULL) return replay_opts(&cl, val);

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
