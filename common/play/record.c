/* record.c - game records: the JSON line of a game and its checks, move
 * strings, self-play episodes as games, GGF for Othello, and the files
 * (appended to, never truncated; read back line by line).
 *
 * Workload: a line per game, written as games finish (a match, a rating,
 * an iteration's self-play) and read back one game at a time; the rules
 * replay every record written or read, a few microseconds a game. */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *pb_record_termination(const pb_record_t *r) {
  return r->time_loss     ? "time"
         : r->adjudicated ? "adjudication"
         : r->resigned    ? "resignation"
         : r->interrupted ? "interrupted"
                          : "normal";
}

void pb_record_init(pb_record_t *r, const pb_game_t *g) {
  memset(r, 0, sizeof *r);
  r->g = g;
  r->version = -1;
  r->iteration = -1;
}

static const char *result_text(int result) {
  return result > 0 ? "1-0" : result < 0 ? "0-1" : "1/2-1/2";
}

/* Whether action a is g's pass. */
static int is_pass(const pb_game_t *g, int a) {
  char nm[16];
  return g->action_name(a, nm, sizeof nm) == 4 && !strcmp(nm, "pass");
}

/* Plays moves[0..n) from the initial position into *s: 0 and *finished,
 * *result (for the first player) set, or PB_EINVAL naming the first move
 * that is illegal or comes after the end. */
static int replay(const pb_game_t *g, const uint8_t *moves, int n,
                  pb_state_t *s, int *finished, int *result, pb_err_t *err) {
  g->reset(s);
  int done = 0, res = 0;
  for (int i = 0; i < n; i++) {
    char nm[16];
    if (g->action_name(moves[i], nm, sizeof nm) < 0)
      snprintf(nm, sizeof nm, "#%d", moves[i]);
    if (done)
      return pb_err_set(err, PB_EINVAL,
                        "move %d (%s) comes after the end of the game", i + 1,
                        nm);
    float rw = 0;
    pb_err_t e;
    pb_err_clear(&e);
    if (pb_game_step_checked(g, s, moves[i], &rw, &done, &e) != 0)
      return pb_err_set(err, PB_EINVAL, "move %d (%s) is illegal", i + 1, nm);
    if (done) {
      int m = (rw > 0) - (rw < 0);
      res = i % 2 == 0 ? m : -m;
    }
  }
  *finished = done;
  *result = res;
  return 0;
}

/* What a reader and a writer check: names, numbers, the moves and the
 * result against the rules. 0 or PB_EINVAL naming the fault. */
int pb_record_check(const pb_record_t *r, pb_err_t *err) {
  if (r == NULL || r->g == NULL)
    return pb_err_set(err, PB_EINVAL, "record: NULL record or game");
  if (r->first[0] == '\0' || r->second[0] == '\0')
    return pb_err_set(err, PB_EINVAL, "record: a player without a name");
  if (r->n_moves < 0 || r->n_moves > PB_RECORD_MOVES_MAX ||
      (r->n_moves > 0 && r->moves == NULL))
    return pb_err_set(err, PB_EINVAL, "record: %d moves (0 to %d)", r->n_moves,
                      PB_RECORD_MOVES_MAX);
  if (r->result < -1 || r->result > 1)
    return pb_err_set(err, PB_EINVAL, "record: result %d", r->result);
  if (r->opening_plies < 0 || r->opening_plies > r->n_moves)
    return pb_err_set(err, PB_EINVAL,
                      "record: opening_plies %d of a game of %d plies",
                      r->opening_plies, r->n_moves);
  pb_state_t s;
  int finished = 0, res = 0;
  int rc = replay(r->g, r->moves, r->n_moves, &s, &finished, &res, err);
  if (rc != 0) return rc;
  if (finished && r->capped)
    return pb_err_set(err, PB_EINVAL,
                      "record: capped, but the moves finish the game");
  if (r->adjudicated + r->time_loss + r->resigned + r->interrupted +
          r->capped >
      1)
    return pb_err_set(err, PB_EINVAL,
                      "record: more than one of capped, lost on time, "
                      "adjudicated, resigned and interrupted");
  if (r->adjudicated && finished)
    return pb_err_set(err, PB_EINVAL,
                      "record: adjudicated, but the moves finish the game");
  if ((r->resigned || r->interrupted) && finished)
    return pb_err_set(err, PB_EINVAL,
                      "record: %s, but the moves finish the game",
                      r->resigned ? "resigned" : "interrupted");
  if (r->resigned && r->result == 0)
    return pb_err_set(err, PB_EINVAL, "record: resigned, but a draw");
  if (r->interrupted && r->result != 0)
    return pb_err_set(err, PB_EINVAL,
                      "record: interrupted, but the result is %s",
                      result_text(r->result));
  if (r->time_loss && (finished || r->capped))
    return pb_err_set(err, PB_EINVAL,
                      "record: lost on time, but the moves finish the game "
                      "or it is capped");
  /* Lost on time: the side to move after the moves (the first player
   * after an even number of plies) lost. */
  const int time_result = r->n_moves % 2 == 0 ? -1 : 1;
  if (r->time_loss && r->result != time_result)
    return pb_err_set(err, PB_EINVAL,
                      "record: lost on time by the %s player, but the result "
                      "is %s",
                      time_result < 0 ? "first" : "second",
                      result_text(r->result));
  if (finished && res != r->result)
    return pb_err_set(err, PB_EINVAL,
                      "record: result %s, but the moves end the game %s",
                      result_text(r->result), result_text(res));
  if (!finished && !r->time_loss && !r->adjudicated && !r->resigned &&
      !r->interrupted && (!r->capped || r->result != 0))
    return pb_err_set(err, PB_EINVAL,
                      "record: the moves leave the game unfinished, which "
                      "only a turn cap (capped, a draw), a loss on time, "
                      "an adjudication, a resignation or an interruption "
                      "(termination) does");
  for (int i = 0; r->evals != NULL && i < r->n_moves; i++)
    if (!(isnan(r->evals[i]) || fabsf(r->evals[i]) <= 1.0f))
      return pb_err_set(err, PB_EINVAL,
                        "record: the evaluation of ply %d is %g, outside "
                        "[-1, 1]",
                        i + 1, (double)r->evals[i]);
  return 0;
}

void pb_record_date(double t, char *buf, size_t n) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (n == 0) return;
  if (gmtime_r(&tt, &tm) == NULL) {
    buf[0] = '\0';
    return;
  }
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

size_t pb_record_moves_text(const pb_game_t *g, const uint8_t *moves, int n,
                            char *buf, size_t cap) {
  size_t len = 0;
  if (cap > 0) buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    char nm[16];
    int k = g->action_name(moves[i], nm, sizeof nm);
    if (k <= 0 || (i + 1 < n && is_pass(g, moves[i]))) continue;
    if (len + (size_t)k < cap) {
      memcpy(buf + len, nm, (size_t)k);
      buf[len + (size_t)k] = '\0';
    } else if (cap > 0 && len < cap) {
      buf[len] = '\0'; /* truncated: keeps whole moves only */
      cap = len;
    }
    len += (size_t)k;
  }
  return len;
}

int pb_record_moves_parse(const pb_game_t *g, const char *text, uint8_t *moves,
                          int cap, int *n, pb_err_t *err) {
  if (n != NULL) *n = 0;
  if (g == NULL || text == NULL || moves == NULL || n == NULL)
    return pb_err_set(err, PB_EINVAL, "moves: NULL argument");
  pb_state_t s;
  g->reset(&s);
  int k = 0, done = 0;
  for (size_t i = 0;;) {
    while (text[i] == ' ' || text[i] == '\t') i++;
    if (text[i] == '\0') break;
    uint8_t acts[PB_MAX_ACTIONS];
    int na = done ? 0 : g->legal(&s, acts), a = -1;
    size_t used = 0;
    if (na == 1 && is_pass(g, acts[0])) {
      /* A forced pass, written or left out. */
      a = acts[0];
      used = !strncasecmp(text + i, "pass", 4) ? 4
             : !strncasecmp(text + i, "pa", 2) ? 2
                                               : 0;
    } else {
      for (int j = 0; j < na; j++) {
        char nm[16];
        int l = g->action_name(acts[j], nm, sizeof nm);
        if (l > 0 && (size_t)l > used &&
            !strncasecmp(text + i, nm, (size_t)l)) {
          a = acts[j];
          used = (size_t)l;
        }
      }
    }
    if (a < 0)
      return pb_err_set(err, PB_EINVAL,
                        "%s: the move at index %zu of \"%.60s\" %s", g->name, i,
                        text,
                        done ? "comes after the end of the game"
                             : "is not a legal move there");
    if (k == cap)
      return pb_err_set(err, PB_ERANGE, "%s: more than %d moves", g->name, cap);
    g->step(&s, a, &done);
    moves[k++] = (uint8_t)a;
    i += used;
  }
  *n = k;
  return 0;
}

int pb_record_episode(const pb_game_t *g, const pb_state_t *states, int n,
                      int final_reward, uint8_t *moves, int cap, int *n_moves,
                      int *result, int *capped, pb_err_t *err) {
  if (g == NULL || states == NULL || moves == NULL || n_moves == NULL ||
      result == NULL || capped == NULL || n < 1)
    return pb_err_set(err, PB_EINVAL, "record: NULL argument or no states");
  if (cap < n)
    return pb_err_set(err, PB_ERANGE, "record: an episode of %d moves", n);
  pb_state_t s0;
  g->reset(&s0);
  if (memcmp(&s0, &states[0], sizeof s0) != 0)
    return pb_err_set(err, PB_ECORRUPT,
                      "record: the episode does not start at the start");
  uint8_t acts[PB_MAX_ACTIONS];
  for (int i = 0; i <= n - 1; i++) {
    int na = g->legal(&states[i], acts), found = -1;
    for (int j = 0; j < na && found < 0; j++) {
      pb_state_t c = states[i];
      int done = 0;
      float rw = g->step(&c, acts[j], &done);
      if (i + 1 < n ? !done && !memcmp(&c, &states[i + 1], sizeof c)
                    : done && (int)lrintf(rw) == final_reward)
        found = acts[j];
    }
    if (found < 0 && i + 1 < n)
      return pb_err_set(err, PB_ECORRUPT,
                        "record: ply %d of the episode does not follow from "
                        "ply %d",
                        i + 1, i);
    if (found < 0) { /* cut at max_turns: the last move is unknown */
      if (final_reward != 0)
        return pb_err_set(err, PB_ECORRUPT,
                          "record: no last move ends the episode with %+d",
                          final_reward);
      *n_moves = n - 1;
      *result = 0;
      *capped = 1;
      return 0;
    }
    moves[i] = (uint8_t)found;
  }
  *n_moves = n;
  *result = (n - 1) % 2 == 0 ? final_reward : -final_reward;
  *capped = 0;
  return 0;
}

int pb_record_json(const pb_record_t *r, pb_json_t *j, pb_err_t *err) {
  if (j == NULL) return pb_err_set(err, PB_EINVAL, "record: NULL writer");
  int rc = pb_record_check(r, err);
  if (rc != 0) return rc;
  size_t cap = (size_t)r->n_moves * 5 + 1;
  char *mv = malloc(cap);
  if (mv == NULL) return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  pb_record_moves_text(r->g, r->moves, r->n_moves, mv, cap);
  pb_json_reset(j);
  pb_json_obj_begin(j);
  pb_json_kint(j, "format", PB_RECORD_FORMAT);
  pb_json_kstr(j, "game", r->g->name);
  if (r->source[0] != '\0') pb_json_kstr(j, "source", r->source);
  if (r->round > 0) pb_json_kint(j, "round", r->round);
  if (r->version >= 0) pb_json_kint(j, "version", r->version);
  if (r->iteration >= 0) pb_json_kint(j, "iteration", r->iteration);
  if (r->event[0] != '\0') pb_json_kstr(j, "event", r->event);
  if (r->date[0] != '\0') pb_json_kstr(j, "date", r->date);
  pb_json_kstr(j, "first", r->first);
  if (r->first_version[0] != '\0')
    pb_json_kstr(j, "first_version", r->first_version);
  pb_json_kstr(j, "second", r->second);
  if (r->second_version[0] != '\0')
    pb_json_kstr(j, "second_version", r->second_version);
  if (r->time_control[0] != '\0')
    pb_json_kstr(j, "time_control", r->time_control);
  pb_json_kstr(j, "result", r->interrupted ? "*" : result_text(r->result));
  pb_json_kint(j, "plies", r->n_moves);
  pb_json_kstr(j, "moves", mv);
  if (r->opening_plies > 0) pb_json_kint(j, "opening_plies", r->opening_plies);
  pb_json_kbool(j, "capped", r->capped != 0);
  pb_json_kstr(j, "termination", pb_record_termination(r));
  if (r->ms != NULL) {
    pb_json_key(j, "ms");
    pb_json_arr_begin(j);
    for (int i = 0; i < r->n_moves; i++)
      if (r->ms[i] < 0)
        pb_json_null(j);
      else
        pb_json_int(j, r->ms[i]);
    pb_json_arr_end(j);
  }
  if (r->evals != NULL) {
    pb_json_key(j, "evals");
    pb_json_arr_begin(j);
    for (int i = 0; i < r->n_moves; i++)
      if (isnan(r->evals[i]))
        pb_json_null(j);
      else
        pb_json_double(j, round(r->evals[i] * 1e4) / 1e4);
    pb_json_arr_end(j);
  }
  pb_json_obj_end(j);
  free(mv);
  if (pb_json_error(j) != 0)
    return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  return 0;
}

/* ---- reading a line ---------------------------------------------------- */

/* Member `key` of o as a string into out (cap bytes): 0, 1 when absent and
 * not required, or PB_ECORRUPT / PB_ERANGE naming it. */
static int get_str(const pb_jval_t *o, const char *key, int required, char *out,
                   size_t cap, pb_err_t *err) {
  const pb_jval_t *v = pb_jval_get(o, key);
  if (v == NULL) {
    if (!required) return 1;
    return pb_err_set(err, PB_ECORRUPT, "no \"%s\"", key);
  }
  size_t len = 0;
  const char *s = pb_jval_str(v, &len);
  if (s == NULL)
    return pb_err_set(err, PB_ECORRUPT, "\"%s\" is %s, not a string", key,
                      pb_jval_kind_name(pb_jval_kind(v)));
  if (len >= cap || memchr(s, '\0', len) != NULL)
    return pb_err_set(err, PB_ERANGE,
                      "\"%s\" is longer than %zu bytes or holds a NUL", key,
                      cap - 1);
  memcpy(out, s, len + 1);
  return 0;
}

/* Member `key` of o as an integer in [lo, hi] into *out (unchanged when
 * absent): 0 or PB_ECORRUPT naming it. */
static int get_int(const pb_jval_t *o, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, pb_err_t *err) {
  const pb_jval_t *v = pb_jval_get(o, key);
  if (v == NULL) return 0;
  if (pb_jval_int(v, lo, hi, out) != 0)
    return pb_err_set(err, PB_ECORRUPT,
                      "\"%s\" is not an integer in %lld..%lld", key,
                      (long long)lo, (long long)hi);
  return 0;
}

/* The per-ply array `key` of o (n entries, numbers or null) into ms
 * (integers >= 0, null -1) or evals (in [-1, 1], null NaN); absent:
 * *set 0. 0, or PB_ECORRUPT naming it. */
static int get_plies(const pb_jval_t *o, const char *key, int n, int32_t *ms,
                     float *evals, int *set, pb_err_t *err) {
  *set = 0;
  const pb_jval_t *v = pb_jval_get(o, key);
  if (v == NULL || (ms == NULL && evals == NULL)) return 0;
  if (pb_jval_kind(v) != PB_JVAL_ARRAY || pb_jval_count(v) != (size_t)n)
    return pb_err_set(err, PB_ECORRUPT,
                      "\"%s\" is not an array of %d entries (one a ply)", key,
                      n);
  for (int i = 0; i < n; i++) {
    const pb_jval_t *x = pb_jval_at(v, (size_t)i);
    int null = pb_jval_kind(x) == PB_JVAL_NULL;
    if (ms != NULL) {
      int64_t t = -1;
      if (!null && pb_jval_int(x, 0, INT32_MAX, &t) != 0)
        return pb_err_set(err, PB_ECORRUPT,
                          "\"%s\"[%d] is not null or an integer in "
                          "0..%d",
                          key, i, INT32_MAX);
      ms[i] = (int32_t)t;
    } else {
      double d = null ? NAN : pb_jval_num(x);
      if (!null && (pb_jval_kind(x) != PB_JVAL_NUMBER || !(fabs(d) <= 1)))
        return pb_err_set(err, PB_ECORRUPT,
                          "\"%s\"[%d] is not null or a number in [-1, 1]",
                          key, i);
      evals[i] = (float)d;
    }
  }
  *set = 1;
  return 0;
}

/* The members of a parsed line into *r (the moves into moves, the
 * per-ply members into ms and evals when not NULL). */
static int read_members(const pb_jval_t *o, uint8_t *moves, int32_t *ms,
                        float *evals, int cap, pb_record_t *r,
                        pb_err_t *err) {
  char game[32], result[16];
  int64_t format = PB_RECORD_FORMAT, plies = -1, opening = 0;
  int rc;
  if ((rc = get_int(o, "format", 1, INT64_MAX, &format, err)) != 0) return rc;
  if (format > PB_RECORD_FORMAT)
    return pb_err_set(err, PB_ECORRUPT,
                      "format %lld is later than this reader's (%d)",
                      (long long)format, PB_RECORD_FORMAT);
  if ((rc = get_str(o, "game", 1, game, sizeof game, err)) != 0) return rc;
  const pb_game_t *g = pb_game_by_name(game);
  if (g == NULL)
    return pb_err_set(err, PB_ECORRUPT, "unknown game \"%s\" (known: %s)", game,
                      pb_game_names());
  pb_record_init(r, g);
  if ((rc = get_str(o, "first", 1, r->first, sizeof r->first, err)) != 0 ||
      (rc = get_str(o, "second", 1, r->second, sizeof r->second, err)) != 0 ||
      (rc = get_str(o, "result", 1, result, sizeof result, err)) != 0)
    return rc;
  if (!strcmp(result, "1-0"))
    r->result = 1;
  else if (!strcmp(result, "0-1"))
    r->result = -1;
  else if (strcmp(result, "1/2-1/2") != 0 && strcmp(result, "*") != 0)
    return pb_err_set(err, PB_ECORRUPT,
                      "result \"%s\" (expected 1-0, 0-1, 1/2-1/2 or *)",
                      result);
  if (get_str(o, "event", 0, r->event, sizeof r->event, err) < 0 ||
      get_str(o, "date", 0, r->date, sizeof r->date, err) < 0 ||
      get_str(o, "first_version", 0, r->first_version,
              sizeof r->first_version, err) < 0 ||
      get_str(o, "second_version", 0, r->second_version,
              sizeof r->second_version, err) < 0 ||
      get_str(o, "time_control", 0, r->time_control, sizeof r->time_control,
              err) < 0)
    return err != NULL && err->code ? err->code : PB_ECORRUPT;
  if (get_str(o, "source", 0, r->source, sizeof r->source, err) < 0 ||
      get_int(o, "round", 1, INT64_MAX, &r->round, err) != 0 ||
      get_int(o, "version", 0, INT64_MAX, &r->version, err) != 0 ||
      get_int(o, "iteration", 0, INT64_MAX, &r->iteration, err) != 0 ||
      get_int(o, "plies", 0, PB_RECORD_MOVES_MAX, &plies, err) != 0 ||
      get_int(o, "opening_plies", 0, PB_RECORD_MOVES_MAX, &opening, err) != 0)
    return err != NULL && err->code ? err->code : PB_ECORRUPT;
  const pb_jval_t *cv = pb_jval_get(o, "capped");
  if (cv != NULL && (r->capped = pb_jval_bool(cv)) < 0)
    return pb_err_set(err, PB_ECORRUPT, "\"capped\" is not true or false");
  char term[32] = "";
  if (get_str(o, "termination", 0, term, sizeof term, err) < 0)
    return err != NULL && err->code ? err->code : PB_ECORRUPT;
  if (term[0] != '\0' && strcmp(term, "time") != 0 &&
      strcmp(term, "adjudication") != 0 && strcmp(term, "normal") != 0 &&
      strcmp(term, "resignation") != 0 && strcmp(term, "interrupted") != 0)
    return pb_err_set(err, PB_ECORRUPT,
                      "\"termination\": \"%s\" (expected normal, time, "
                      "adjudication, resignation or interrupted)",
                      term);
  r->time_loss = strcmp(term, "time") == 0;
  r->adjudicated = strcmp(term, "adjudication") == 0;
  r->resigned = strcmp(term, "resignation") == 0;
  r->interrupted = strcmp(term, "interrupted") == 0;
  if ((strcmp(result, "*") == 0) != r->interrupted)
    return pb_err_set(err, PB_ECORRUPT,
                      "result \"%s\" with termination \"%s\" (\"*\" is "
                      "the result of an interrupted game alone)",
                      result, term[0] ? term : "normal");
  const pb_jval_t *mv = pb_jval_get(o, "moves");
  const char *text = mv != NULL ? pb_jval_str(mv, NULL) : NULL;
  if (text == NULL) return pb_err_set(err, PB_ECORRUPT, "no \"moves\" string");
  pb_err_t e;
  pb_err_clear(&e);
  if ((rc = pb_record_moves_parse(g, text, moves, cap, &r->n_moves, &e)) != 0)
    return pb_err_set(err, rc == PB_ERANGE ? PB_ERANGE : PB_ECORRUPT,
                      "\"moves\": %s", e.msg);
  r->moves = moves;
  r->opening_plies = (int)opening;
  if (plies >= 0 && plies != r->n_moves)
    return pb_err_set(err, PB_ECORRUPT,
                      "\"plies\" is %lld, the moves are %d plies",
                      (long long)plies, r->n_moves);
  int set = 0;
  if ((rc = get_plies(o, "ms", r->n_moves, ms, NULL, &set, err)) != 0)
    return rc;
  if (set) r->ms = ms;
  if ((rc = get_plies(o, "evals", r->n_moves, NULL, evals, &set, err)) != 0)
    return rc;
  if (set) r->evals = evals;
  if (pb_record_check(r, &e) != 0)
    return pb_err_set(err, PB_ECORRUPT, "%s", e.msg);
  return 0;
}

int pb_record_parse(pb_jsonr_t *jr, const char *line, size_t len,
                    uint8_t *moves, int cap, pb_record_t *r, pb_err_t *err) {
  return pb_record_parse_full(jr, line, len, moves, NULL, NULL, cap, r, err);
}

int pb_record_parse_full(pb_jsonr_t *jr, const char *line, size_t len,
                         uint8_t *moves, int32_t *ms, float *evals, int cap,
                         pb_record_t *r, pb_err_t *err) {
  if (jr == NULL || line == NULL || moves == NULL || r == NULL)
    return pb_err_set(err, PB_EINVAL, "record: NULL argument");
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  if (len - i >= 2 && line[i] == '(' && line[i + 1] == ';')
    return pb_record_ggf_parse(line, len, moves, ms, cap, r, err);
  pb_err_t e;
  pb_err_clear(&e);
  const pb_jval_t *root = pb_jsonr_parse(jr, line, len, &e);
  if (root == NULL)
    return pb_err_set(err, e.code == PB_ENOMEM ? PB_ENOMEM : PB_ECORRUPT,
                      "not a record: %s", e.msg);
  if (pb_jval_kind(root) != PB_JVAL_OBJECT)
    return pb_err_set(err, PB_ECORRUPT, "not a record: %s, not an object",
                      pb_jval_kind_name(pb_jval_kind(root)));
  return read_members(root, moves, ms, evals, cap, r, err);
}

/* ---- files ------------------------------------------------------------- */

struct pb_record_file {
  int fd;
  int kind;
  int need_nl; /* the file's last line lacks its newline */
  int64_t last_round; /* pb_record_file_last_round */
  pb_json_t j;
  char path[4096];
};

/* Whether the text t[0..n) that starts a file not empty starts with a
 * record of `kind`: 0, or PB_ECORRUPT naming path. */
static int check_start(const char *path, int kind, const char *t, size_t n,
                       int whole, pb_err_t *err) {
  size_t i = 0;
  while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n'))
    i++;
  if (i == n && whole) return 0; /* blank: as good as empty */
  if (kind == PB_RECORD_GGF) {
    static const char head[] = "(;GM[Othello]";
    if (n - i >= sizeof head - 1 && !memcmp(t + i, head, sizeof head - 1))
      return 0;
    return pb_err_set(err, PB_ECORRUPT,
                      "%s is not a GGF file of Othello games (it does not "
                      "start with \"(;GM[Othello]\"); refusing to append to it",
                      path);
  }
  if (n - i >= 2 && t[i] == '(' && t[i + 1] == ';')
    return pb_err_set(err, PB_ECORRUPT,
                      "%s holds GGF games (--record-ggf's); refusing to "
                      "append JSON records to it",
                      path);
  const char *nl = memchr(t + i, '\n', n - i);
  if (nl == NULL && !whole)
    return pb_err_set(err, PB_ECORRUPT,
                      "%s: its first line is longer than %zu bytes: not a "
                      "record file; refusing to append to it",
                      path, n);
  size_t len = nl != NULL ? (size_t)(nl - (t + i)) : n - i;
  uint8_t *moves = malloc(PB_RECORD_MOVES_MAX);
  pb_record_t *r = malloc(sizeof *r);
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  pb_err_t e;
  pb_err_clear(&e);
  int rc =
      moves == NULL || r == NULL || jr == NULL
          ? pb_err_set(err, PB_ENOMEM, "record: out of memory")
          : pb_record_parse(jr, t + i, len, moves, PB_RECORD_MOVES_MAX, r, &e);
  if (rc != 0 && rc != PB_ENOMEM)
    rc = pb_err_set(err, PB_ECORRUPT,
                    "%s is not a file of game records (line 1: %s); "
                    "refusing to append to it",
                    path, e.msg);
  pb_jsonr_destroy(&jr);
  free(r);
  free(moves);
  return rc;
}

#define PB__RECORD_HEAD (1u << 20) /* bytes read to check a file's start */
#define PB__RECORD_TAIL (64u << 10) /* bytes read for the last round */

/* The round of the JSON file's last record (the last line that reads as
 * a record within the file's last PB__RECORD_TAIL bytes; a line cut
 * short by a crash is passed over): its "round", or when it has none (or
 * no line reads), the number of records in the file. */
static int64_t last_round(pb_record_file_t *f, off_t size) {
  size_t n = size < (off_t)PB__RECORD_TAIL ? (size_t)size : PB__RECORD_TAIL;
  char *t = malloc(n + 1);
  uint8_t *moves = malloc(PB_RECORD_MOVES_MAX);
  pb_record_t *r = malloc(sizeof *r);
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  int64_t round = -1;
  if (t != NULL && moves != NULL && r != NULL && jr != NULL &&
      pread(f->fd, t, n, size - (off_t)n) == (ssize_t)n) {
    size_t end = n;
    while (end > 0 && round < 0) {
      size_t b = end;
      while (b > 0 && t[b - 1] != '\n') b--;
      /* a whole line: it starts the file or follows a newline */
      if ((b > 0 || (off_t)n == size) && end > b) {
        pb_err_t e;
        pb_err_clear(&e);
        if (pb_record_parse(jr, t + b, end - b, moves, PB_RECORD_MOVES_MAX, r,
                            &e) == 0) {
          round = r->round > 0 ? r->round : -2; /* -2: count them */
          break;
        }
      }
      if (b == 0) break;
      end = b - 1;
    }
  }
  if (round < 0) { /* no round in the tail: count the records */
    round = 0;
    char buf[1 << 16];
    off_t off = 0;
    int blank = 1;
    ssize_t got;
    while ((got = pread(f->fd, buf, sizeof buf, off)) > 0) {
      for (ssize_t k = 0; k < got; k++) {
        if (buf[k] == '\n') {
          round += !blank;
          blank = 1;
        } else if (buf[k] != ' ' && buf[k] != '\t' && buf[k] != '\r') {
          blank = 0;
        }
      }
      off += got;
    }
    round += !blank;
  }
  pb_jsonr_destroy(&jr);
  free(r);
  free(moves);
  free(t);
  return round;
}

/* Checks the start of the open file f (size bytes) and whether its last
 * byte is a newline. */
static int check_file(pb_record_file_t *f, off_t size, pb_err_t *err) {
  size_t n = size < (off_t)PB__RECORD_HEAD ? (size_t)size : PB__RECORD_HEAD;
  char *t = malloc(n + 1);
  if (t == NULL) return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  ssize_t got = pread(f->fd, t, n, 0);
  int rc = 0;
  if (got != (ssize_t)n)
    rc = pb_err_set(err, PB_EIO, "%s: cannot read: %s", f->path,
                    got < 0 ? strerror(errno) : "short read");
  else
    rc = check_start(f->path, f->kind, t, n, (off_t)n == size, err);
  char last = '\n';
  if (rc == 0 && pread(f->fd, &last, 1, size - 1) != 1)
    rc = pb_err_set(err, PB_EIO, "%s: cannot read: %s", f->path,
                    strerror(errno));
  f->need_nl = last != '\n';
  free(t);
  if (rc == 0 && f->kind == PB_RECORD_JSONL) f->last_round = last_round(f, size);
  return rc;
}

pb_record_file_t *pb_record_file_open(const char *path, int kind,
                                      pb_err_t *err) {
  if (path == NULL || path[0] == '\0' ||
      (kind != PB_RECORD_JSONL && kind != PB_RECORD_GGF)) {
    pb_err_set(err, PB_EINVAL, "record: no path, or a bad kind %d", kind);
    return NULL;
  }
  pb_record_file_t *f = calloc(1, sizeof *f);
  if (f == NULL) {
    pb_err_set(err, PB_ENOMEM, "record: out of memory");
    return NULL;
  }
  snprintf(f->path, sizeof f->path, "%s", path);
  f->kind = kind;
  pb_json_init(&f->j);
  /* O_APPEND, never O_TRUNC: what the file holds stays. O_NOFOLLOW: a
   * symbolic link is refused, never followed (a link planted where a
   * record goes would otherwise append to whatever it names). */
  f->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
               0644);
  if (f->fd < 0 && (errno == EACCES || errno == EISDIR))
    f->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW); /* a pipe */
  struct stat st;
  if (f->fd < 0 && errno == ELOOP) {
    pb_err_set(err, PB_EIO,
               "%s: a symbolic link; records are not written through links "
               "(give the file's own path)",
               path);
    goto fail;
  }
  if (f->fd < 0 || fstat(f->fd, &st) != 0) {
    pb_err_set(err, PB_EIO, "%s: cannot open for appending: %s", path,
               strerror(errno));
    goto fail;
  }
  if (S_ISDIR(st.st_mode)) {
    pb_err_set(err, PB_EIO, "%s: cannot open for appending: a directory", path);
    goto fail;
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0 &&
      check_file(f, st.st_size, err) != 0)
    goto fail;
  return f;
fail:
  pb_record_file_close(&f);
  return NULL;
}

int pb_record_file_write(pb_record_file_t *f, const pb_record_t *r,
                         pb_err_t *err) {
  if (f == NULL) return pb_err_set(err, PB_EINVAL, "record: NULL file");
  char *ggf = NULL;
  size_t len = 0;
  int rc;
  if (f->kind == PB_RECORD_GGF) {
    rc = pb_record_ggf(r, &ggf, &len, err);
  } else {
    rc = pb_record_json(r, &f->j, err);
    len = pb_json_len(&f->j);
  }
  if (rc != 0) return rc;
  const char *body = ggf != NULL ? ggf : pb_json_cstr(&f->j);
  char *line = malloc(len + 2);
  if (line == NULL) {
    free(ggf);
    return pb_err_set(err, PB_ENOMEM, "record: out of memory");
  }
  size_t k = 0;
  if (f->need_nl) line[k++] = '\n';
  memcpy(line + k, body, len);
  k += len;
  line[k++] = '\n';
  free(ggf);
  size_t off = 0;
  while (off < k) {
    ssize_t w = write(f->fd, line + off, k - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      rc = pb_err_set(err, PB_EIO, "%s: cannot write: %s", f->path,
                      w < 0 ? strerror(errno) : "nothing written");
      break;
    }
    off += (size_t)w;
  }
  free(line);
  if (rc == 0) f->need_nl = 0;
  return rc;
}

int64_t pb_record_file_last_round(const pb_record_file_t *f) {
  return f != NULL ? f->last_round : 0;
}

void pb_record_file_close(pb_record_file_t **pf) {
  if (pf == NULL || *pf == NULL) return;
  if ((*pf)->fd >= 0) close((*pf)->fd);
  pb_json_free(&(*pf)->j);
  free(*pf);
  *pf = NULL;
}

