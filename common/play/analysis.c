/* analysis.c - boards with coordinates, typed moves, and a checkpoint's
 * view of one position: V, Q, V one ply deep, beam search and alpha-beta
 * for PROBS networks; the policy, the value head one ply deep and MCTS
 * for an AlphaZero network. */
#include "analysis.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abnet.h"
#include "agent.h"
#include "beam_search.h"
#include "mcts.h"
#include "model.h"
#include "neteval.h"
#include "pveval.h"
#include "bounds.h"

struct pb_analysis {
  const pb_game_t *g;
  pb_model_t *model;  /* borrowed */
  int az;             /* an AlphaZero checkpoint */
  pb_neteval_t *ne;   /* PROBS: V and Q, batched and cached */
  pb_beam_t *beam;    /* PROBS: NULL when E = 0 */
  pb_abnet_t *ab;     /* PROBS: NULL without alpha-beta */
  pb_pveval_t *pve;   /* AlphaZero: the policy+value network */
  pb_mcts_t *mcts;    /* AlphaZero: its search */
  int simulations;
  /* AlphaZero: the children's logits and values, one call */
  float kid_logits[PB_MAX_ACTIONS * PB_MAX_ACTIONS], kid_v[PB_MAX_ACTIONS];
};

int pb_analysis_board(const pb_game_t *g, const pb_state_t *s, char *buf,
                      size_t n) {
  if (buf == NULL || n == 0) return 0;
  char board[1024];
  int len = g->render(s, board, sizeof board);
  if (g->id != PB_GAME_TICTACTOE)
    return pb_game_text_out(buf, n, board, (size_t)len);
  /* Tic-Tac-Toe draws no coordinates: the cell numbers go beside it. */
  char tmp[1024];
  size_t k = 0;
  const char *line = board;
  for (int r = 0; r < 3 && *line != '\0'; r++) {
    const char *nl = strchr(line, '\n');
    size_t ll = nl ? (size_t)(nl - line) : strlen(line);
    k += (size_t)snprintf(tmp + k, sizeof tmp - k, "%.*s     %d %d %d\n",
                          (int)ll, line, 3 * r + 1, 3 * r + 2, 3 * r + 3);
    line = nl ? nl + 1 : line + ll;
  }
  return pb_game_text_out(buf, n, tmp, k);
}

/* The action that leads from prev to s, or -1. */
static int move_between(const pb_game_t *g, const pb_state_t *prev,
                        const pb_state_t *s) {
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(prev, acts);
  for (int i = 0; i < na; i++) {
    pb_state_t c = *prev;
    int done = 0;
    g->step(&c, acts[i], &done);
    if (memcmp(&c, s, sizeof c) == 0) return acts[i];
  }
  return -1;
}

int pb_analysis_board_after(const pb_game_t *g, const pb_state_t *prev,
                            const pb_state_t *s, char *buf, size_t n) {
  if (g->id != PB_GAME_OTHELLO) return pb_analysis_board(g, s, buf, n);
  if (buf == NULL || n == 0) return 0;
  /* The render: a header line, then 8 lines "R c c c c c c c c", the
   * square of column c at 2 + 2c. */
  char board[1024];
  int len = g->render(s, board, sizeof board);
  if (len < 0 || len >= (int)sizeof board) return pb_analysis_board(g, s, buf, n);
  char *line[9];
  int nl = 0;
  for (char *p = board; nl < 9 && *p != '\0';) {
    line[nl++] = p;
    char *e = strchr(p, '\n');
    if (e == NULL) break;
    *e = '\0';
    p = e + 1;
  }
  if (nl < 9) return pb_analysis_board(g, s, buf, n);
  int x = 0, o = 0;
  for (int r = 1; r < 9; r++)
    for (const char *c = line[r] + 2; *c != '\0'; c++) {
      x += *c == 'X';
      o += *c == 'O';
    }
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(s, acts);
  for (int i = 0; i < na; i++)
    if (acts[i] < 64 && (int)strlen(line[1 + acts[i] / 8]) > 2 + 2 * (acts[i] % 8))
      line[1 + acts[i] / 8][2 + 2 * (acts[i] % 8)] = '*';
  const int last = prev != NULL ? move_between(g, prev, s) : -1;
  char out[1400];
  size_t k = (size_t)snprintf(out, sizeof out, "%s\n", line[0]);
  for (int r = 1; r < 9; r++) {
    const char *L = line[r];
    const int lc = last >= 0 && last < 64 && last / 8 == r - 1 ? last % 8 : -1;
    for (int i = 0; L[i] != '\0' && k + 4 < sizeof out; i++) {
      /* "[X]" around the last move: its brackets take the blanks beside. */
      if (lc >= 0 && i == 1 + 2 * lc) out[k++] = '[';
      else if (lc >= 0 && i == 3 + 2 * lc) out[k++] = ']';
      else out[k++] = L[i];
    }
    if (lc == 7) out[k++] = ']';
    out[k++] = '\n';
  }
  k += (size_t)snprintf(out + k, sizeof out - k, "discs: X %d, O %d\n", x, o);
  return pb_game_text_out(buf, n, out, k < sizeof out ? k : sizeof out - 1);
}

char pb_analysis_side(const pb_game_t *g, const pb_state_t *s) {
  return (g->ply(s) & 1) == 0 ? 'X' : 'O';
}

/* The legal moves' names, blank-separated, into buf. */
static void legal_names(const pb_game_t *g, const pb_state_t *s, char *buf,
                        size_t n) {
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(s, acts);
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < na && k + 8 < n; i++) {
    char name[16];
    if (g->action_name(acts[i], name, sizeof name) < 0) continue;
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? " " : "", name);
  }
}

int pb_analysis_parse_move(const pb_game_t *g, const pb_state_t *s,
                           const char *text, int *action, pb_err_t *err) {
  if (g == NULL || s == NULL || text == NULL || action == NULL)
    return pb_err_set(err, PB_EINVAL, "parse move: NULL argument");
  while (isspace((unsigned char)*text)) text++;
  size_t len = strlen(text);
  while (len > 0 && isspace((unsigned char)text[len - 1])) len--;
  char word[32];
  if (len >= sizeof word) len = sizeof word - 1;
  for (size_t i = 0; i < len; i++)
    word[i] = (char)tolower((unsigned char)text[i]);
  word[len] = '\0';
  if (g->id == PB_GAME_OTHELLO && strcmp(word, "pa") == 0)
    strcpy(word, "pass");
  int found = -1;
  for (int a = 0; a < g->num_actions && len > 0; a++) {
    char name[16];
    if (g->action_name(a, name, sizeof name) < 0) continue;
    if (strcmp(name, word) == 0) {
      found = a;
      break;
    }
  }
  char legal[PB_MAX_ACTIONS * 6];
  legal_names(g, s, legal, sizeof legal);
  if (found < 0)
    return pb_err_set(err, PB_EINVAL,
                      "'%s' is not a move of %s (legal here: %s)", word,
                      g->name, legal[0] ? legal : "none, the game is over");
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(s, acts);
  for (int i = 0; i < na; i++)
    if (acts[i] == found) {
      *action = found;
      return 0;
    }
  return pb_err_set(err, PB_EILLEGAL, "move '%s' is not legal here (%s%s)",
                    word, na == 0 ? "the game is over" : "legal: ",
                    na == 0 ? "" : legal);
}

int pb_analysis_result(const pb_game_t *g, const pb_state_t *s, char *buf,
                       size_t n) {
  float r = 0;
  if (!g->terminal(s, &r)) {
    if (n > 0) buf[0] = '\0';
    return 0;
  }
  char mover = pb_analysis_side(g, s);
  char other = mover == 'X' ? 'O' : 'X';
  if (r > 0)
    snprintf(buf, n, "%c wins", mover);
  else if (r < 0)
    snprintf(buf, n, "%c wins", other);
  else
    snprintf(buf, n, "draw");
  return 1;
}

void pb_analysis_defaults(pb_analysis_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->abnet = 1;
  pb_abnet_defaults(&o->ab);
  o->simulations = 200;
}

int pb_analysis_line(const pb_game_t *g, const uint8_t *moves, int n, char *buf,
                     size_t size) {
  if (buf == NULL || size == 0) return 0;
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && k + 1 < size; i++) {
    char name[16];
    if (g->action_name(moves[i], name, sizeof name) < 0)
      snprintf(name, sizeof name, "?");
    int w = snprintf(buf + k, size - k, "%s%s", i ? " " : "", name);
    if (w < 0) break;
    k += (size_t)w;
  }
  return (int)(k < size ? k : size - 1);
}

/* The code of the error in err (PB_ENOMEM if it holds none). */
static int code_of(const pb_err_t *err) {
  return err != NULL && err->code < 0 ? err->code : PB_ENOMEM;
}

/* The searches of a PROBS checkpoint: beam and alpha-beta over V and Q. */
static int new_probs(pb_analysis_t *a, const pb_analysis_opts_t *o,
                     pb_err_t *err) {
  if (o->E < 0 || (o->E > 0 && (o->E > PB_BEAM_MAX_EXPANSIONS || o->M < 1 ||
                                o->M > PB_BEAM_MAX_DEPTH)))
    return pb_err_set(err, PB_EINVAL,
                      "analysis: bad beam search settings E=%d M=%d (E "
                      "1..%d and M 1..%d, or E = 0 for none)",
                      o->E, o->M, PB_BEAM_MAX_EXPANSIONS, PB_BEAM_MAX_DEPTH);
  /* As `probs search` does: one search at a time, these buffer sizes. */
  a->ne = pb_neteval_new(a->g, 4096, 1u << 16, err);
  if (a->ne == NULL) return code_of(err);
  if (o->E > 0 && (a->beam = pb_beam_new(a->g, o->E, o->M, 1, err)) == NULL)
    return code_of(err);
  if (o->abnet && (a->ab = pb_abnet_new(a->g, &o->ab, err)) == NULL)
    return code_of(err);
  pb_neteval_bind(a->ne, pb_model_v(a->model), pb_model_q(a->model));
  return 0;
}

/* The search of an AlphaZero checkpoint: MCTS over its network, as the
 * mcts: agent sets it up. */
static int new_az(pb_analysis_t *a, const pb_analysis_opts_t *o,
                  pb_err_t *err) {
  if (o->E > 0)
    return pb_err_set(err, PB_EUNSUPP,
                      "analysis: the checkpoint is of an alphazero run (one "
                      "policy+value network): no V and Q for beam search; "
                      "it is analysed with MCTS");
  if (o->simulations < 1 || o->simulations > PB_MCTS_MAX_SIMULATIONS ||
      (o->c_puct != 0 && !(o->c_puct >= 0.001 && o->c_puct <= 100)))
    return pb_err_set(err, PB_EINVAL,
                      "analysis: bad MCTS settings simulations=%d c_puct=%g "
                      "(simulations 1..%d, c_puct 0.001..100)",
                      o->simulations, o->c_puct, PB_MCTS_MAX_SIMULATIONS);
  const pb_config_t *cfg = pb_model_config(a->model);
  /* As the mcts: agent: no noise, the checkpoint's discount. */
  pb_mcts_opts_t mo = {.simulations = o->simulations,
                       .c_puct = o->c_puct > 0 ? o->c_puct : cfg->mcts.c_puct,
                       .parallel = 1,
                       .discount = cfg->mcts.discount};
  a->simulations = o->simulations;
  a->mcts = pb_mcts_new(a->g, &mo, err);
  if (a->mcts == NULL) return code_of(err);
  a->pve = pb_pveval_new(a->g, PB_MAX_ACTIONS, err);
  if (a->pve == NULL) return code_of(err);
  return pb_pveval_bind(a->pve, pb_model_q(a->model), err);
}

pb_analysis_t *pb_analysis_new(pb_model_t *l, const pb_analysis_opts_t *o,
                               pb_err_t *err) {
  if (l == NULL) {
    pb_err_set(err, PB_EINVAL, "analysis: NULL networks");
    return NULL;
  }
  pb_analysis_opts_t def;
  if (o == NULL) {
    pb_analysis_defaults(&def);
    o = &def;
  }
  pb_analysis_t *a = calloc(1, sizeof *a);
  if (a == NULL) {
    pb_err_set(err, PB_ENOMEM, "analysis: out of memory");
    return NULL;
  }
  a->g = pb_model_game(l);
  a->model = l;
  a->az = pb_model_kind(l) == PB_NETS_PV;
  int rc = a->az ? new_az(a, o, err) : new_probs(a, o, err);
  if (rc != 0) pb_analysis_destroy(&a);
  return a;
}

void pb_analysis_destroy(pb_analysis_t **a) {
  if (a == NULL || *a == NULL) return;
  pb_beam_destroy(&(*a)->beam);
  pb_abnet_destroy(&(*a)->ab);
  pb_neteval_destroy(&(*a)->ne);
  pb_mcts_destroy(&(*a)->mcts);
  pb_pveval_destroy(&(*a)->pve);
  free(*a);
  *a = NULL;
}

/* The children of s in *out's legal moves that do not end the game into
 * kids (their actions into kid_action), the results of those that do into
 * out->v1. Returns how many kids. */
static int children(const pb_game_t *g, const pb_state_t *s,
                    pb_analysis_eval_t *out, pb_state_t *kids,
                    int *kid_action) {
  int nk = 0;
  for (int i = 0; i < out->n_legal; i++) {
    int act = out->legal[i];
    pb_state_t c = *s;
    int done = 0;
    float r = g->step(&c, act, &done);
    if (done) {
      out->v1[act] = r;
    } else {
      kids[nk] = c;
      kid_action[nk++] = act;
    }
  }
  return nk;
}

/* V, Q, V one ply deep and the searches of a PROBS checkpoint. */
static int eval_probs(pb_analysis_t *a, const pb_state_t *s,
                      pb_analysis_eval_t *out, pb_err_t *err) {
  const pb_game_t *g = a->g;
  pb_evalfn_t fn = pb_neteval_fn(a->ne);
  pb_nn_t *vn = pb_model_v(a->model), *qn = pb_model_q(a->model);
  int rc;
  /* Each search first, on an empty cache, so that it asks the networks
   * exactly what `probs search` or a fresh abnet: agent asks them (the
   * cache then serves the rest). */
  if (a->beam != NULL) {
    float b[PB_MAX_ACTIONS];
    pb_neteval_bind(a->ne, vn, qn);
    rc = pb_beam_run(a->beam, s, 1, &fn, b, err);
    if (rc < 0) return rc;
    for (int i = 0; i < out->n_legal; i++)
      out->beam[out->legal[i]] = b[out->legal[i]];
    out->has_beam = 1;
    out->best_beam = pb_agent_argmax_legal(out->beam, out->legal, out->n_legal);
  }
  if (a->ab != NULL) {
    pb_neteval_bind(a->ne, vn, qn);
    rc = pb_abnet_search(a->ab, s, &fn, &out->ab, err);
    if (rc < 0) return rc;
    out->has_abnet = 1;
    out->best_abnet = out->ab.move;
  }
  rc = fn.value(fn.ctx, s, 1, &out->v, err);
  if (rc < 0) return rc;
  float q[PB_MAX_ACTIONS];
  rc = fn.qvalues(fn.ctx, s, 1, q, err);
  if (rc < 0) return rc;
  for (int i = 0; i < out->n_legal; i++)
    out->q[out->legal[i]] = q[out->legal[i]];
  /* Children that do not end the game, valued in one call. */
  pb_state_t kids[PB_MAX_ACTIONS];
  int kid_action[PB_MAX_ACTIONS];
  int nk = children(g, s, out, kids, kid_action);
  float kv[PB_MAX_ACTIONS];
  if (nk > 0) {
    rc = fn.value(fn.ctx, kids, nk, kv, err);
    if (rc < 0) return rc;
  }
  for (int k = 0; k < nk; k++) out->v1[kid_action[k]] = -kv[k];
  out->best_q = pb_agent_argmax_legal(out->q, out->legal, out->n_legal);
  return 0;
}

/* The policy, the value head (at s and one ply deep) and MCTS of an
 * AlphaZero checkpoint. */
static int eval_az(pb_analysis_t *a, const pb_state_t *s,
                   pb_analysis_eval_t *out, pb_err_t *err) {
  const pb_game_t *g = a->g;
  pb_mcts_evalfn_t fn = pb_pveval_fn(a->pve);
  out->alphazero = 1;
  out->best_q = -1;
  float logits[PB_MAX_ACTIONS];
  int rc = fn.eval(fn.ctx, s, 1, logits, &out->v, err);
  if (rc < 0) return rc;
  /* softmax over the legal moves, as MCTS makes its priors */
  double mx = -INFINITY, sum = 0;
  for (int i = 0; i < out->n_legal; i++)
    if (logits[out->legal[i]] > mx) mx = logits[out->legal[i]];
  for (int i = 0; i < out->n_legal; i++) sum += exp(logits[out->legal[i]] - mx);
  for (int i = 0; i < out->n_legal; i++) {
    int act = out->legal[i];
    out->p[act] = (float)(exp(logits[act] - mx) / sum);
  }
  out->best_policy = pb_agent_argmax_legal(logits, out->legal, out->n_legal);
  pb_state_t kids[PB_MAX_ACTIONS];
  int kid_action[PB_MAX_ACTIONS];
  int nk = children(g, s, out, kids, kid_action);
  if (nk > 0) {
    rc = fn.eval(fn.ctx, kids, nk, a->kid_logits, a->kid_v, err);
    if (rc < 0) return rc;
  }
  for (int k = 0; k < nk; k++) out->v1[kid_action[k]] = -a->kid_v[k];
  float visits[PB_MAX_ACTIONS];
  rc = pb_mcts_run(a->mcts, s, 1, &fn, NULL, visits, &out->mcts_value, err);
  if (rc < 0) return rc;
  for (int i = 0; i < out->n_legal; i++) {
    int act = out->legal[i];
    out->visits[act] = (int)lrintf(visits[act]);
  }
  out->simulations = a->simulations;
  out->best_mcts = pb_agent_argmax_legal(visits, out->legal, out->n_legal);
  return 0;
}

int pb_analysis_eval(pb_analysis_t *a, const pb_state_t *s,
                     pb_analysis_eval_t *out, pb_err_t *err) {
  if (a == NULL || s == NULL || out == NULL)
    return pb_err_set(err, PB_EINVAL, "analysis: NULL argument");
  memset(out, 0, sizeof *out);
  out->best_beam = out->best_abnet = out->best_policy = out->best_mcts = -1;
  out->n_legal = a->g->legal(s, out->legal);
  if (out->n_legal == 0)
    return pb_err_set(err, PB_EINVAL, "analysis: the game is over");
  int rc = a->az ? eval_az(a, s, out, err) : eval_probs(a, s, out, err);
  if (rc < 0) return rc;
  out->best_v1 = pb_agent_argmax_legal(out->v1, out->legal, out->n_legal);
  return 0;
}
