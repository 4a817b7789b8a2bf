/* record.c - game records: the JSON line of a game and its checks, move
 * strings, self-play episodes as games. GGF is record_ggf.c; the files
 * and the reading of a line in either format, record_file.c.
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

int pb_record_json_parse(pb_jsonr_t *jr, const char *line, size_t len,
                         uint8_t *moves, int32_t *ms, float *evals, int cap,
                         pb_record_t *r, pb_err_t *err) {
  if (jr == NULL || line == NULL || moves == NULL || r == NULL)
    return pb_err_set(err, PB_EINVAL, "record: NULL argument");
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

