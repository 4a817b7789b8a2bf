/* cmd_match.c - `probs match`: two agents play a series of games; prints
 * the score and the Elo difference of A over B. With --sprt the match
 * stops as soon as the GSPRT decides (common/rating/sprt.h); with
 * --openings each opening of a file is played twice, once with each
 * colour; --record (and --record-ggf for Othello) appends every game to a
 * file of game records (common/play/record.h, docs/records.md). */
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "args.h"
#include "bounds.h"
#include "cmds.h"
#include "elo.h"
#include "game.h"
#include "match.h"
#include "matchstats.h"
#include "opts.h"
#include "progress.h"
#include "record.h"
#include "solver.h"
#include "sprt.h"
#include "util.h"

#define MATCH_GAMES_MAX 100000000L
#define MATCH_SPRT_GAMES 100000 /* --sprt's most games by default */
#define MATCH_ROUND_MIN 20      /* repeats in a row that stop --sprt */
#define MATCH_ADJ_C4_PLY 16     /* --adjudicate solver in connect4 */
#define MATCH_ADJ_PLIES 10      /* --adjudicate material's plies */

static void match_usage(FILE *f) {
  char kinds[PB_AGENT_KINDS_MAX];
  pb_agent_kinds(kinds, sizeof kinds);
  fprintf(
      f,
      "usage: probs match [--game NAME] --a SPEC --b SPEC [--games N]\n"
      "                   [--seed S] [--threads T] [--opening-random K]\n"
      "                   [--max-turns M] [--openings FILE]\n"
      "                   [--sprt ELO0,ELO1[,ALPHA,BETA]]\n"
      "                   [--record FILE] [--record-ggf FILE] [--event NAME]\n"
      "                   [--progress SECONDS|off] [--tc BASE+INC]\n"
      "                   [--adjudicate solver[:PLY]|material:M[,P]]\n"
      "  --game NAME          %s (default: the game of the\n"
      "                       agents' checkpoints, else connect4)\n"
      "  --a SPEC, --b SPEC   agents: %s\n"
      "  --games N            games to play, A first in even games "
      "(default 100;\n"
      "                       with --openings 2 per opening; with --sprt the "
      "most,\n"
      "                       default %d)\n"
      "  --seed S             the match's seed (default 1)\n"
      "  --threads T          0 = all CPUs (default 0); results do not "
      "depend on T\n"
      "  --opening-random K   first K plies uniformly random, after the "
      "opening\n"
      "                       if any (default 0)\n"
      "  --max-turns M        stop unfinished games at M plies as draws "
      "(default 0 = the game's longest, 1000 in toguz)\n"
      "  --openings FILE      start positions: one opening a line, the moves "
      "from\n"
      "                       the start in the game's notation as --position "
      "takes\n"
      "                       them (connect4 \"4453\", tictactoe \"159\", "
      "othello\n"
      "                       \"f5d6c3\", toguz \"7315\"; \"-\" is the start);"
      " blank lines\n"
      "                       and lines starting with # are skipped. Games "
      "2i and\n"
      "                       2i+1 play opening i (mod their number), A with "
      "the\n"
      "                       first player's side in the first, with the "
      "second's\n"
      "                       in the other\n"
      "  --sprt ELO0,ELO1[,ALPHA,BETA]  stop when the sequential test "
      "(GSPRT, as\n"
      "                       fastchess and cutechess) decides between H0: A "
      "is\n"
      "                       ELO0 Elo stronger than B, and H1: ELO1 "
      "stronger\n"
      "                       (ELO0 < ELO1), with error rates ALPHA and BETA\n"
      "                       (default 0.05 each); checked after every game,\n"
      "                       with --openings after every pair on the pairs'\n"
      "                       pentanomial counts; a game (pair) that repeats\n"
      "                       an earlier one move for move is not counted,\n"
      "                       and %d repeats in a row (or a whole round of\n"
      "                       the openings) stop the test undecided\n"
      "  --record FILE        append every game to FILE, a JSON line each:\n"
      "                       the players, the result and the moves in the\n"
      "                       game's notation (docs/records.md); a file that\n"
      "                       holds anything else is refused, never "
      "truncated\n"
      "                       with the date, the players' versions, the time\n"
      "                       control, how it ended, each move's time and\n"
      "                       the mover's evaluation where it has one;\n"
      "                       rounds go on from the file's last\n"
      "  --record-ggf FILE    othello: append every game to FILE in GGF, the\n"
      "                       format of Othello servers and tools (DT, TI,\n"
      "                       each move's evaluation and time); both read\n"
      "                       back with `probs play --replay FILE[:N]`\n"
      "  --event NAME         the records' event (default none)\n"
      "  --tc BASE+INC        time control (seconds; e.g. 10+0.1, 60): each "
      "side\n"
      "                       starts a game with BASE and gains INC after "
      "each\n"
      "                       move; a move's budget is cut from its clock "
      "(abnet:,\n"
      "                       mcts:, beam:, bpip: size their search to it; "
      "gtp:\n"
      "                       engines get time_settings and time_left); a "
      "side\n"
      "                       whose time runs out loses (\"time losses\")\n"
      "  --adjudicate solver[:PLY]  connect4, tictactoe: a game that "
      "reaches\n"
      "                       ply PLY (default connect4 %d, tictactoe 1) "
      "ends\n"
      "                       with the solver's result (\"adjudicated\")\n"
      "  --adjudicate material:MARGIN[,PLIES]  othello, toguz: a side that "
      "leads\n"
      "                       by MARGIN discs (kazna stones) after PLIES "
      "plies in\n"
      "                       a row (default %d) wins there "
      "(\"adjudicated\")\n"
      "  --progress SECONDS   a progress line on stderr at most every SECONDS\n"
      "                       (games, W/D/L, Elo, LLR; default 2, 0 after\n"
      "                       every game, off for none)\n"
      "Ctrl-C (SIGINT) or SIGTERM stops the match: the games finished so far\n"
      "are recorded and summed up (the games under way recorded with them,\n"
      "interrupted), and the exit status is 130 (143). A gtp: engine that\n"
      "resigns loses that game.\n"
      "Lines \"games:\" and \"pairs:\" give the Elo, normalized Elo, LOS and\n"
      "draw ratio of the games and of the pairs (games 2i, 2i+1: the same\n"
      "start, colours swapped; ptnml(0-2) counts the pairs by A's points).\n"
      "The last line reads: result: W=.. D=.. L=.. score=.. elo=+.. "
      "[lo, hi]\n"
      "With --sprt a line before it reads: sprt: H0 accepted|H1 accepted|"
      "undecided ...\n",
      pb_game_names(), kinds, MATCH_SPRT_GAMES, MATCH_ROUND_MIN,
      MATCH_ADJ_C4_PLY, MATCH_ADJ_PLIES);
}

/* The match's stopping rule and progress (pb_match_opts_t.on_games). */
typedef struct {
  int sprt;     /* --sprt given */
  int penta;    /* the test counts pairs (--openings) */
  int round;    /* games in a round of the openings, both colours */
  pb_sprt_t t;
  int decision; /* PB_SPRT_* */
  int stuck;    /* stopped: a whole round of repeated games */
  double llr;
  double every; /* --progress: seconds between lines, < 0 none */
  pb_meter_t meter; /* the progress shown (progress.h) */
  int total; /* the most games */
  int tc;    /* --tc given */
  int adj;   /* --adjudicate solver: its ply, 0 none */
  int adj_margin, adj_plies; /* --adjudicate material, 0 none */
} match_run_t;

/* The SPRT on the distinct games (pairs with --openings) of sofar. */
static void sprt_update(match_run_t *m, const pb_match_result_t *r) {
  if (m->penta) {
    if (r->games % 2 == 0)
      m->decision = pb_sprt_check_penta(&m->t, r->distinct_penta, &m->llr);
  } else {
    m->decision = pb_sprt_check(&m->t, r->distinct_wins, r->distinct_draws,
                                r->distinct_losses, &m->llr);
  }
}

/* The progress meter's state of the match (progress.h): a bar on a
 * terminal, a line every --progress seconds otherwise. */
static void progress_show(match_run_t *m, const pb_match_result_t *r,
                          double now, int end) {
  double elo = 0, lo = 0, hi = 0;
  pb_elo_diff(r->wins, r->draws, r->losses, &elo, &lo, &hi);
  char e[32], l[32], h[32], extra[256];
  int k = snprintf(extra, sizeof extra, "W=%d D=%d L=%d, elo %s [%s, %s]",
                   r->wins, r->draws, r->losses,
                   pb_elo_format(e, sizeof e, elo, 0, 1),
                   pb_elo_format(l, sizeof l, lo, 0, 1),
                   pb_elo_format(h, sizeof h, hi, 0, 1));
  if (m->sprt && k > 0 && (size_t)k < sizeof extra)
    k += snprintf(extra + k, sizeof extra - (size_t)k,
                  ", llr %.2f [%.2f, %.2f]", m->llr, m->t.lower, m->t.upper);
  if (r->repeats > 0 && k > 0 && (size_t)k < sizeof extra)
    snprintf(extra + k, sizeof extra - (size_t)k, ", %d repeats", r->repeats);
  if (end)
    pb_meter_end(&m->meter, r->games, now, extra, 0);
  else
    pb_meter_update(&m->meter, r->games, now, extra);
}

static int match_on_games(void *ctx, const pb_match_result_t *sofar) {
  match_run_t *m = ctx;
  if (m->sprt) {
    sprt_update(m, sofar);
    /* A whole round of games that all repeat earlier ones: the agents
     * replay the same games, and the test, which counts each distinct
     * game once, would learn nothing more. */
    if (m->decision == PB_SPRT_CONTINUE &&
        sofar->games - 1 - sofar->last_new >= m->round)
      m->stuck = 1;
  }
  progress_show(m, sofar, pb_now(), 0);
  return m->decision != PB_SPRT_CONTINUE || m->stuck;
}

/* The signal that stopped the match (SIGINT, SIGTERM), set by the
 * handler: the one piece of state a handler may share, one match a
 * process. */
static atomic_int match_signal;

static void on_stop_signal(int sig) { atomic_store(&match_signal, sig); }

/* The files --record and --record-ggf append to, and the game being
 * written (pb_match_opts_t.on_game). */
typedef struct {
  const pb_game_t *g;
  const char *a, *b;
  const char *event; /* --event, or NULL */
  char version[2][PB_RECORD_TEXT_MAX]; /* A's and B's pb_agent_version */
  char tc[32];       /* --tc as "BASE+INC", or "" */
  int64_t round0;    /* the --record file's last round before the match */
  char **lines; /* the openings' moves, or NULL */
  uint8_t *moves;
  int32_t *ms; /* each ply's milliseconds (cap entries) */
  float *evals; /* each ply's mover's value (cap entries) */
  int cap;
  pb_record_file_t *file[2]; /* PB_RECORD_JSONL, PB_RECORD_GGF */
  int written;
  int unfinished; /* games under way at Ctrl-C, written as interrupted */
} record_run_t;

/* One game of the match, from the initial position (its opening's moves,
 * then the plies played), into each file. */
static int record_game(void *ctx, const pb_match_game_t *gm, pb_err_t *err) {
  record_run_t *rr = ctx;
  int n0 = 0;
  if (gm->opening >= 0 &&
      pb_record_moves_parse(rr->g, rr->lines[gm->opening], rr->moves, rr->cap,
                            &n0, err) != 0)
    return err->code;
  if (n0 + gm->n_moves > rr->cap)
    return pb_err_set(err, PB_ERANGE, "record: a game of %d plies",
                      n0 + gm->n_moves);
  memcpy(rr->moves + n0, gm->moves, (size_t)gm->n_moves);
  pb_record_t r;
  pb_record_init(&r, rr->g);
  snprintf(r.source, sizeof r.source, "match");
  r.round = rr->round0 + gm->index + 1;
  snprintf(r.first, sizeof r.first, "%s", gm->a_first ? rr->a : rr->b);
  snprintf(r.second, sizeof r.second, "%s", gm->a_first ? rr->b : rr->a);
  snprintf(r.first_version, sizeof r.first_version, "%s",
           rr->version[gm->a_first ? 0 : 1]);
  snprintf(r.second_version, sizeof r.second_version, "%s",
           rr->version[gm->a_first ? 1 : 0]);
  if (rr->event != NULL) snprintf(r.event, sizeof r.event, "%s", rr->event);
  snprintf(r.time_control, sizeof r.time_control, "%s", rr->tc);
  if (gm->started > 0) pb_record_date(gm->started, r.date, sizeof r.date);
  /* Each ply's time: none for the opening's plies. */
  for (int i = 0; i < n0; i++) rr->ms[i] = -1;
  if (gm->ms != NULL)
    memcpy(rr->ms + n0, gm->ms, (size_t)gm->n_moves * sizeof *rr->ms);
  r.ms = gm->ms != NULL ? rr->ms : NULL;
  /* Each ply's evaluation, where the mover gave one; none at all when no
   * ply has one (agents that know none: baselines, gtp: engines). */
  int valued = 0;
  for (int i = 0; i < n0; i++) rr->evals[i] = NAN;
  for (int i = 0; gm->evals != NULL && i < gm->n_moves; i++)
    valued |= !isnan(rr->evals[n0 + i] = gm->evals[i]);
  r.evals = valued ? rr->evals : NULL;
  r.result = gm->a_first ? gm->outcome : -gm->outcome;
  r.resigned = gm->resigned;
  r.interrupted = gm->interrupted; /* "*": no result */
  r.capped = gm->capped;
  r.time_loss = gm->flagged != 0;
  r.adjudicated = gm->adjudicated;
  r.opening_plies = n0 + gm->random_plies;
  r.n_moves = n0 + gm->n_moves;
  r.moves = rr->moves;
  for (int k = 0; k < 2; k++)
    if (rr->file[k] != NULL) {
      int rc = pb_record_file_write(rr->file[k], &r, err);
      if (rc != 0) return rc;
    }
  if (gm->interrupted)
    rr->unfinished++;
  else
    rr->written++;
  return 0;
}

/* Opens the files of --record and --record-ggf (NULL: not given) for g
 * into rr. 0, or 2 after the message. */
static int open_records(const pb_game_t *g, const char *jsonl,
                        const char *ggf, record_run_t *rr) {
  if (ggf != NULL && g->id != PB_GAME_OTHELLO) {
    fprintf(stderr,
            "probs match: --record-ggf: GGF is for othello games, and this "
            "match plays %s (--record writes any game)\n",
            g->name);
    return 2;
  }
  const char *path[2] = {jsonl, ggf};
  static const char *const opt[2] = {"record", "record-ggf"};
  for (int k = 0; k < 2; k++) {
    if (path[k] == NULL) continue;
    pb_err_t err;
    pb_err_clear(&err);
    rr->file[k] = pb_record_file_open(path[k], k, &err);
    if (rr->file[k] == NULL) {
      fprintf(stderr, "probs match: --%s: %s\n", opt[k], err.msg);
      return 2;
    }
  }
  /* Rounds go on from those of the file appended to. */
  rr->round0 = pb_record_file_last_round(rr->file[0]);
  return 0;
}

static void close_records(record_run_t *rr, int n_openings) {
  pb_record_file_close(&rr->file[0]);
  pb_record_file_close(&rr->file[1]);
  pb_match_openings_free_lines(&rr->lines, n_openings);
  free(rr->moves);
  rr->moves = NULL;
  free(rr->ms);
  rr->ms = NULL;
  free(rr->evals);
  rr->evals = NULL;
}

/* The match's game: --game, else that of A's or B's checkpoint (they must
 * agree), else connect4. NULL after the message. */
static const pb_game_t *match_game(const char *name, const char *a,
                                   const char *b) {
  if (name != NULL) {
    const pb_game_t *g = pb_game_by_name(name);
    if (g == NULL)
      fprintf(stderr, "probs match: unknown game '%s' (known: %s)\n", name,
              pb_game_names());
    return g;
  }
  const pb_game_t *ga = pb_agent_spec_game(a), *gb = pb_agent_spec_game(b);
  if (ga != NULL && gb != NULL && ga != gb) {
    fprintf(stderr,
            "probs match: --a's checkpoint plays %s, --b's %s: they cannot "
            "play each other\n",
            ga->name, gb->name);
    return NULL;
  }
  return ga != NULL ? ga : gb != NULL ? gb : &pb_game_connect4;
}

/* A number option: 0, or 2 after a message naming it. */
static int number(const char *opt, const char *s, long lo, long hi, long *out) {
  if (pb_cli_long(s, lo, hi, out) == 0) return 0;
  fprintf(stderr, "probs match: bad --%s '%s' (expected %ld..%ld)\n", opt, s,
          lo, hi);
  return 2;
}

/* "elo +12 [-5, +29], nelo +20 [-7, +47], los 92.1%, draw ratio 57.7%" */
static void print_stats(const pb_matchstats_t *st) {
  char e[32], l[32], h[32], ne[32], nl[32], nh[32];
  printf("elo %s [%s, %s], nelo %s [%s, %s], los %.1f%%, draw ratio %.1f%%\n",
         pb_elo_format(e, sizeof e, st->elo, 0, 1),
         pb_elo_format(l, sizeof l, st->lo, 0, 1),
         pb_elo_format(h, sizeof h, st->hi, 0, 1),
         pb_elo_format(ne, sizeof ne, st->nelo, 0, 1),
         pb_elo_format(nl, sizeof nl, st->nelo_lo, 0, 1),
         pb_elo_format(nh, sizeof nh, st->nelo_hi, 0, 1), 100.0 * st->los,
         100.0 * st->draws);
}

static void print_result(const pb_match_result_t *r, double dt,
                         const match_run_t *m, int n_openings) {
  double elo = 0, lo = 0, hi = 0;
  pb_elo_diff(r->wins, r->draws, r->losses, &elo, &lo, &hi);
  double score = (r->wins + 0.5 * r->draws) / r->games;
  printf("A moving first : W=%d D=%d L=%d\n", r->first_wins, r->first_draws,
         r->first_losses);
  printf("A moving second: W=%d D=%d L=%d\n", r->second_wins, r->second_draws,
         r->second_losses);
  printf("%.1f plies/game, %d capped by --max-turns, %.2f s\n",
         (double)r->plies / r->games, r->capped, dt);
  if (m->tc)
    printf("time losses: A %d, B %d (games lost on time)\n",
           r->a_time_losses, r->b_time_losses);
  if (r->a_resigned + r->b_resigned > 0)
    printf("resignations: A %d, B %d (games lost by resignation)\n",
           r->a_resigned, r->b_resigned);
  if (m->adj)
    printf("adjudicated: %d games (the solver's result, from ply %d)\n",
           r->adjudicated, m->adj);
  if (m->adj_margin)
    printf("adjudicated: %d games (a lead of %d held for %d plies)\n",
           r->adjudicated, m->adj_margin, m->adj_plies);
  pb_matchstats_t st;
  if (pb_matchstats_wdl(r->wins, r->draws, r->losses, &st) == 0) {
    printf("games: ");
    print_stats(&st);
  }
  if (pb_matchstats_penta(r->penta, &st) == 0) {
    printf("pairs: %d, ptnml(0-2) [%d, %d, %d, %d, %d] (WL %d, DD %d): ",
           st.n, r->penta[0], r->penta[1], r->penta[2], r->penta[3],
           r->penta[4], r->pair_wl, r->pair_dd);
    print_stats(&st);
  }
  if (r->repeats > 0)
    printf(
        "repeats: %d of %d games repeat an earlier game move for move (%d "
        "distinct), %d of %d pairs; deterministic agents replay the same "
        "games: vary them with --opening-random K or more --openings\n",
        r->repeats, r->games, r->games - r->repeats, r->pair_repeats,
        r->games / 2);
  if (m->sprt) {
    printf(
        "sprt: %s after %d games: llr %.3f, bounds [%.3f, %.3f] (elo0 %g, "
        "elo1 %g, alpha %g, beta %g; %s on %d distinct %s)\n",
        pb_sprt_verdict(m->decision), r->games, m->llr, m->t.lower,
        m->t.upper, m->t.elo0, m->t.elo1, m->t.alpha, m->t.beta,
        m->penta ? "pentanomial" : "trinomial",
        m->penta ? r->games / 2 - r->pair_repeats : r->games - r->repeats,
        m->penta ? "pairs" : "games");
    if (m->stuck) {
      if (n_openings > 0)
        printf(
            "sprt: stopped: the last %d games all repeat earlier games (%d "
            "openings, each with both colours); the test counts each "
            "distinct %s once and can learn nothing more\n",
            m->round, n_openings, m->penta ? "pair" : "game");
      else
        printf(
            "sprt: stopped: the last %d games all repeat earlier games; "
            "the test counts each distinct game once and can learn nothing "
            "more\n",
            m->round);
    }
  }
  char e[32], l[32], h[32];
  printf("result: W=%d D=%d L=%d score=%.3f elo=%s [%s, %s]\n", r->wins,
         r->draws, r->losses, score, pb_elo_format(e, sizeof e, elo, 0, 1),
         pb_elo_format(l, sizeof l, lo, 0, 1),
         pb_elo_format(h, sizeof h, hi, 0, 1));
}

/* The options after parsing. */
enum {
  O_GAME,
  O_A,
  O_B,
  O_GAMES,
  O_SEED,
  O_THREADS,
  O_OPEN,
  O_MAXT,
  O_OPENINGS,
  O_SPRT,
  O_RECORD,
  O_RECORD_GGF,
  O_PROGRESS,
  O_TC,
  O_ADJ,
  O_EVENT,
  O_N
};

/* --progress: "off" (-1) or seconds >= 0. 0, or 2 after the message. */
static int progress_every(const char *s, double *out) {
  if (strcmp(s, "off") == 0) {
    *out = -1;
    return 0;
  }
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v >= 0 && v <= 86400)) {
    fprintf(stderr,
            "probs match: bad --progress '%s' (expected seconds 0..86400, "
            "or off)\n",
            s);
    return 2;
  }
  *out = v;
  return 0;
}

/* --tc BASE[+INC]: seconds, BASE > 0, INC >= 0. 0, or 2 after the
 * message. */
static int time_control(const char *s, double *base, double *inc) {
  char *end = NULL;
  *base = strtod(s, &end);
  *inc = 0;
  int ok = end != s && *base > 0 && *base <= PB_MATCH_TC_MAX_S;
  if (ok && *end == '+') {
    const char *p = end + 1;
    *inc = strtod(p, &end);
    ok = end != p && *inc >= 0 && *inc <= PB_MATCH_TC_MAX_S;
  }
  if (ok && *end == '\0' && isdigit((unsigned char)s[0])) return 0;
  fprintf(stderr,
          "probs match: bad --tc '%s' (expected BASE+INC in seconds, e.g. "
          "10+0.1 or 60: BASE in (0, %g], INC in [0, %g])\n",
          s, PB_MATCH_TC_MAX_S, PB_MATCH_TC_MAX_S);
  return 2;
}

/* --adjudicate material:MARGIN[,PLIES] for game g into o. 0, or 2 after
 * the message. */
static int adjudication_material(const char *s, const pb_game_t *g,
                                 pb_match_opts_t *o) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s + 9);
  char *comma = strchr(buf, ',');
  if (comma != NULL) *comma = '\0';
  long margin = 0, plies = MATCH_ADJ_PLIES;
  if (pb_cli_long(buf, 1, 100000, &margin) != 0 ||
      (comma != NULL && pb_cli_long(comma + 1, 1, 100000, &plies) != 0)) {
    fprintf(stderr,
            "probs match: bad --adjudicate '%s' (expected "
            "material:MARGIN[,PLIES], both >= 1)\n",
            s);
    return 2;
  }
  if (g->material == NULL) {
    fprintf(stderr,
            "probs match: --adjudicate material: %s has no material "
            "(othello and toguz have)\n",
            g->name);
    return 2;
  }
  o->adjudicate_margin = (int)margin;
  o->adjudicate_plies = (int)plies;
  return 0;
}

/* --adjudicate solver[:PLY] for game g. 0, or 2 after the message. */
static int adjudication(const char *s, const pb_game_t *g, int *ply) {
  long p = g->id == PB_GAME_CONNECT4 ? MATCH_ADJ_C4_PLY : 1;
  if (strncmp(s, "solver", 6) != 0 ||
      (s[6] != '\0' &&
       (s[6] != ':' || pb_cli_long(s + 7, 1, 100000, &p) != 0))) {
    fprintf(stderr,
            "probs match: bad --adjudicate '%s' (expected solver, "
            "solver:PLY (PLY >= 1) or material:MARGIN[,PLIES])\n",
            s);
    return 2;
  }
  if (!pb_solver_supports(g)) {
    fprintf(stderr,
            "probs match: --adjudicate solver: %s has no solver (connect4 "
            "and tictactoe have)\n",
            g->name);
    return 2;
  }
  *ply = (int)p;
  return 0;
}

/* Reads the numbers, the seed and the test into o and m. Returns 0 or 2
 * after the message. */
static int settle(const char *const *val, const pb_game_t *g,
                  pb_match_opts_t *o, match_run_t *m,
                  unsigned long long *seed) {
  long games = 100, threads, open, maxt;
  if (val[O_GAMES] != NULL &&
      number("games", val[O_GAMES], 1, MATCH_GAMES_MAX, &games) != 0)
    return 2;
  if (number("threads", val[O_THREADS], 0, PB_MAX_THREADS, &threads) != 0 ||
      number("opening-random", val[O_OPEN], 0, 1000, &open) != 0 ||
      number("max-turns", val[O_MAXT], 0, PB_MAX_TURNS, &maxt) != 0)
    return 2;
  if (pb_cli_seed(val[O_SEED], seed) != 0) {
    fprintf(stderr, "probs match: bad --seed '%s' (expected 0..2^64-1)\n",
            val[O_SEED]);
    return 2;
  }
  /* Random plies past the game's length would leave the agents nothing
   * to play: every game random (issue 48). */
  const long longest = maxt > 0 ? maxt : g->max_turns;
  if (open >= longest) {
    fprintf(stderr,
            "probs match: --opening-random %ld: %s games last at most %ld "
            "plies%s, so the agents would play none (expected 0..%ld)\n",
            open, g->name, longest, maxt > 0 ? " (--max-turns)" : "",
            longest - 1);
    return 2;
  }
  pb_err_t err;
  pb_err_clear(&err);
  if (progress_every(val[O_PROGRESS], &m->every) != 0) return 2;
  if (val[O_ADJ] != NULL && !strncmp(val[O_ADJ], "material:", 9)) {
    if (adjudication_material(val[O_ADJ], g, o) != 0) return 2;
  } else if (val[O_ADJ] != NULL &&
             adjudication(val[O_ADJ], g, &o->adjudicate_ply) != 0) {
    return 2;
  }
  if (val[O_TC] != NULL &&
      time_control(val[O_TC], &o->tc_base_s, &o->tc_inc_s) != 0)
    return 2;
  if (val[O_SPRT] != NULL && pb_sprt_parse(&m->t, val[O_SPRT], &err) != 0) {
    fprintf(stderr, "probs match: --%s\n", err.msg);
    return 2;
  }
  if (val[O_GAMES] == NULL && val[O_SPRT] != NULL)
    games = MATCH_SPRT_GAMES;
  else if (val[O_GAMES] == NULL && o->n_openings > 0)
    games = 2L * o->n_openings < MATCH_GAMES_MAX ? 2L * o->n_openings
                                                 : MATCH_GAMES_MAX;
  o->games = (int)games;
  o->threads = (int)threads;
  o->opening_random_moves = (int)open;
  o->max_turns = (int)maxt;
  o->seed = (uint64_t)*seed;
  m->sprt = val[O_SPRT] != NULL;
  m->penta = m->sprt && o->n_openings > 0;
  /* Repeats for a whole round of the openings (at least 20 games, since
   * agents that draw their moves at random may repeat a game now and
   * then) stop the test. */
  m->round = 2 * o->n_openings > MATCH_ROUND_MIN ? 2 * o->n_openings
                                                 : MATCH_ROUND_MIN;
  m->total = o->games;
  m->tc = o->tc_base_s > 0;
  m->adj = o->adjudicate_ply;
  m->adj_margin = o->adjudicate_margin;
  m->adj_plies = o->adjudicate_plies;
  o->on_games = match_on_games;
  o->ctx = m;
  return 0;
}

int pb_cmd_match(int argc, char **argv) {
  const char *val[O_N] = {[O_SEED] = "1",    [O_THREADS] = "0",
                          [O_OPEN] = "0",    [O_MAXT] = "0",
                          [O_PROGRESS] = "2"};
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE("game", 0, &val[O_GAME]),
      PB_OPTS_VALUE("a", 0, &val[O_A]),
      PB_OPTS_VALUE("b", 0, &val[O_B]),
      PB_OPTS_VALUE("games", 0, &val[O_GAMES]),
      PB_OPTS_VALUE("seed", 0, &val[O_SEED]),
      PB_OPTS_VALUE("threads", 0, &val[O_THREADS]),
      PB_OPTS_VALUE("opening-random", 0, &val[O_OPEN]),
      PB_OPTS_VALUE("max-turns", 0, &val[O_MAXT]),
      PB_OPTS_VALUE("openings", 0, &val[O_OPENINGS]),
      PB_OPTS_VALUE("sprt", 0, &val[O_SPRT]),
      PB_OPTS_VALUE("record", 0, &val[O_RECORD]),
      PB_OPTS_VALUE("record-ggf", 0, &val[O_RECORD_GGF]),
      PB_OPTS_VALUE("progress", 0, &val[O_PROGRESS]),
      PB_OPTS_VALUE("tc", 0, &val[O_TC]),
      PB_OPTS_VALUE("adjudicate", 0, &val[O_ADJ]),
      PB_OPTS_VALUE("event", 0, &val[O_EVENT])};
  const pb_opts_t cl = {.prog = "probs match",
                        .usage = match_usage,
                        .rows = rows,
                        .nrows = PB_OPTS_N(rows)};
  int parsed = pb_opts_parse(&cl, argc, argv);
  if (parsed != PB_OPTS_OK) return pb_opts_exit(parsed);
  if (val[O_A] == NULL || val[O_B] == NULL)
    return pb_opts_fail(&cl, "--a and --b are required");
  const pb_game_t *g = match_game(val[O_GAME], val[O_A], val[O_B]);
  if (g == NULL) return PB_EXIT_USAGE;

  pb_match_opts_t o;
  pb_match_opts_default(&o);
  o.a_spec = val[O_A];
  o.b_spec = val[O_B];
  pb_err_t err;
  pb_err_clear(&err);
  pb_state_t *openings = NULL;
  record_run_t rr = {
      .g = g, .a = val[O_A], .b = val[O_B], .event = val[O_EVENT]};
  if (val[O_OPENINGS] != NULL &&
      pb_match_openings_load_lines(g, val[O_OPENINGS], &openings, &rr.lines,
                                   &o.n_openings, &err) != 0) {
    fprintf(stderr, "probs match: --openings: %s\n", err.msg);
    return PB_EXIT_USAGE; /* a file named on the command line */
  }
  o.openings = openings;
  match_run_t m;
  memset(&m, 0, sizeof m);
  unsigned long long seed = 0;
  int rc = settle(val, g, &o, &m, &seed);
  /* A bad spec is a usage error, not a failed match. */
  for (int k = O_A; rc == 0 && k <= O_B; k++) {
    pb_agent_t *probe = pb_agent_new(g, val[k], 0, &err);
    if (probe == NULL) {
      fprintf(stderr, "probs match: --%s: %s\n", k == O_A ? "a" : "b", err.msg);
      rc = PB_EXIT_USAGE;
    } else { /* what plays, for the records */
      snprintf(rr.version[k - O_A], sizeof rr.version[0], "%s",
               pb_agent_version(probe));
    }
    pb_agent_destroy(&probe);
  }
  if (rc == 0 && (val[O_RECORD] != NULL || val[O_RECORD_GGF] != NULL)) {
    rc = open_records(g, val[O_RECORD], val[O_RECORD_GGF], &rr);
    /* A game is its opening's plies and the match's, up to the cap. */
    rr.cap = PB_RECORD_MOVES_MAX;
    if (o.tc_base_s > 0)
      snprintf(rr.tc, sizeof rr.tc, "%g+%g", o.tc_base_s, o.tc_inc_s);
    if (rc == 0 &&
        ((rr.moves = malloc((size_t)rr.cap)) == NULL ||
         (rr.ms = malloc((size_t)rr.cap * sizeof *rr.ms)) == NULL ||
         (rr.evals = malloc((size_t)rr.cap * sizeof *rr.evals)) == NULL)) {
      fprintf(stderr, "probs match: out of memory\n");
      rc = PB_EXIT_FAILED;
    }
    o.on_game = record_game;
    o.game_ctx = &rr;
    o.show_interrupted = 1; /* Ctrl-C: the game under way, as "*" */
  }
  if (rc != 0) {
    free(openings);
    close_records(&rr, o.n_openings);
    return rc;
  }
  printf("%s: A = %s, B = %s, %d games%s, seed %llu, opening-random %d",
         g->name, o.a_spec, o.b_spec, o.games, val[O_SPRT] ? " at most" : "",
         seed, o.opening_random_moves);
  if (o.n_openings > 0)
    printf(", %d openings from %s (each with both colours)", o.n_openings,
           val[O_OPENINGS]);
  if (o.tc_base_s > 0)
    printf(", tc %g+%g s", o.tc_base_s, o.tc_inc_s);
  if (o.adjudicate_ply > 0)
    printf(", adjudicated by the solver from ply %d", o.adjudicate_ply);
  if (o.adjudicate_margin > 0)
    printf(", adjudicated when a side leads by %d for %d plies",
           o.adjudicate_margin, o.adjudicate_plies);
  if (val[O_SPRT] != NULL)
    printf(", sprt elo0 %g elo1 %g alpha %g beta %g (%s)", m.t.elo0,
           m.t.elo1, m.t.alpha, m.t.beta,
           m.penta ? "pentanomial, on pairs" : "trinomial, on games");
  printf("\n");
  fflush(stdout);
  /* Ctrl-C or SIGTERM: the games finished so far, then 128 + the signal;
   * a second one kills (SA_RESETHAND). */
  struct sigaction sa, old[2];
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  atomic_store(&match_signal, 0);
  sigaction(SIGINT, &sa, &old[0]);
  sigaction(SIGTERM, &sa, &old[1]);
  o.cancel = &match_signal;
  pb_match_result_t r;
  memset(&r, 0, sizeof r);
  double t0 = pb_now();
  /* The SPRT may stop the match long before its most games: no ETA. */
  pb_meter_init(&m.meter, stderr, isatty(fileno(stderr)), "progress",
                "games", o.games, m.every, t0);
  m.meter.eta = !m.sprt;
  rc = pb_match_play(g, &o, &r, &err);
  if (m.meter.tty) progress_show(&m, &r, pb_now(), 1); /* ends the bar */
  double dt = pb_now() - t0;
  sigaction(SIGINT, &old[0], NULL);
  sigaction(SIGTERM, &old[1], NULL);
  const int sig = atomic_load(&match_signal);
  free(openings);
  const int written = rr.written, unfinished = rr.unfinished;
  close_records(&rr, o.n_openings);
  if (rc < 0) {
    fprintf(stderr, "probs match: %s (%s)\n", err.msg, pb_err_name(rc));
    return PB_EXIT_FAILED;
  }
  /* "%.0d" prints nothing for 0: "recorded N games[ and K interrupted] to" */
  if (val[O_RECORD] != NULL || val[O_RECORD_GGF] != NULL)
    printf("recorded %d games%s%.0d%s to %s%s%s\n", written,
           unfinished > 0 ? " and " : "", unfinished,
           unfinished > 0 ? " interrupted" : "",
           val[O_RECORD] != NULL ? val[O_RECORD] : "",
           val[O_RECORD] != NULL && val[O_RECORD_GGF] != NULL ? " and " : "",
           val[O_RECORD_GGF] != NULL ? val[O_RECORD_GGF] : "");
  if (r.interrupted)
    fprintf(stderr,
            "probs match: %s: stopped after %d of %d games; the summary of "
            "those follows\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", r.games, o.games);
  if (r.games == 0) {
    printf("result: no games finished\n");
    return sig != 0 ? PB_EXIT_SIGNAL_BASE + sig : PB_EXIT_FAILED;
  }
  /* The test's last word on the games counted. */
  if (m.sprt) sprt_update(&m, &r);
  print_result(&r, dt, &m, o.n_openings);
  return sig != 0 ? PB_EXIT_SIGNAL_BASE + sig : PB_EXIT_OK;
}
