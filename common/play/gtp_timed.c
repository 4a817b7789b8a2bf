/* gtp_timed.c - an agent spec sized to a time budget per move
 * (gtp_timed.h).
 *
 * Workload: one move at a time in a GTP engine; a remake (pb_agent_new,
 * which reads the checkpoint) only when a move's size differs from the
 * last one's after rounding. */
#include "gtp_timed.h"

#include "bounds.h"
#include "bpip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How each searching kind is sized: the setting, its range, and the
 * settings the kind takes (to find the setting among them). */
enum { SIZE_TIME, SIZE_COUNT };
typedef struct {
  const char *kind; /* the spec's "kind:" */
  const char *key;  /* the setting sized */
  int how;          /* SIZE_* */
  long lo, hi;
  const char *keys; /* every setting of the kind, "a|b|c" */
} timed_kind_t;

static const timed_kind_t KINDS[] = {
    {"abnet", "time", SIZE_TIME, 1, 3600000,
     "nodes|time|depth|qplies|batch|precision"},
    {"mcts", "N", SIZE_COUNT, 1, PB_MCTS_MAX_SIMULATIONS, "N|T|c|precision"},
    {"beam", "E", SIZE_COUNT, 1, PB_BEAM_MAX_EXPANSIONS, "E|M|precision"},
    {"bpip", "N", SIZE_COUNT, 1, PB_BPIP_MAX_EVALS, "N|sigma|gulp|precision"},
};

struct pb_gtp_timed {
  const pb_game_t *g;
  uint64_t seed;
  const timed_kind_t *kind; /* NULL: not sized */
  pb_agent_t *given;        /* the spec as given */
  char *spec;               /* that spec */
  char *base;               /* the spec without the sized setting */
  long cap;                 /* the spec's value of it, else kind->hi */
  pb_agent_t *sized;        /* the agent of size `size` (0: none yet) */
  long size;
  double rate;      /* SIZE_COUNT: size per ms of the moves so far (0:
                       not measured yet) */
  double remake_ms; /* what the last remake took */
  char *last;       /* the spec of the last move */
  pb_agent_t *mover; /* the agent of the last move: given or sized */
  size_t last_cap;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* 1 if s[0..len) is one of "a|b|c". */
static int in_list(const char *list, const char *s, size_t len) {
  for (const char *p = list;;) {
    size_t l = strcspn(p, "|");
    if (l == len && strncmp(p, s, len) == 0) return 1;
    if (p[l] == '\0') return 0;
    p += l + 1;
  }
}

/* Takes the setting ",key=V" out of the settings at the end of spec (each
 * a ",k=v" with k in keys, read from the end as agent specs are) into *val.
 * Returns 1 if it was there, else 0 (spec unchanged). */
static int strip_setting(char *spec, const char *keys, const char *key,
                         double *val) {
  int found = 0;
  size_t end = strlen(spec);
  for (;;) {
    char *comma = NULL;
    for (size_t i = end; i-- > 0;)
      if (spec[i] == ',') {
        comma = spec + i;
        break;
      }
    if (comma == NULL) break;
    const char *seg = comma + 1;
    const char *eq = memchr(seg, '=', (size_t)(spec + end - seg));
    if (eq == NULL || !in_list(keys, seg, (size_t)(eq - seg))) break;
    if (!found && (size_t)(eq - seg) == strlen(key) &&
        strncmp(seg, key, strlen(key)) == 0) {
      *val = strtod(eq + 1, NULL);
      found = 1;
      memmove(comma, spec + end, strlen(spec + end) + 1);
    }
    end = (size_t)(comma - spec);
  }
  return found;
}

/* x rounded down to 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of
 * ten, within lo..hi. */
static long nice_size(double x, long lo, long hi) {
  static const double steps[] = {8, 6, 5, 4, 3, 2.5, 2, 1.5, 1.2, 1};
  if (!(x >= (double)lo)) return lo;
  if (x >= (double)hi) return hi;
  double p = pow(10.0, floor(log10(x)));
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (steps[i] * p <= x * (1 + 1e-9)) {
      long v = (long)floor(steps[i] * p + 1e-9);
      return v < lo ? lo : v;
    }
  return lo;
}

static int set_last(pb_gtp_timed_t *t, const char *spec) {
  size_t need = strlen(spec) + 1;
  if (need > t->last_cap) {
    char *p = realloc(t->last, need);
    if (p == NULL) return PB_ENOMEM;
    t->last = p;
    t->last_cap = need;
  }
  memcpy(t->last, spec, need);
  return 0;
}

pb_gtp_timed_t *pb_gtp_timed_new(const pb_game_t *g, const char *spec,
                                 uint64_t seed, pb_err_t *err) {
  if (g == NULL || spec == NULL) {
    pb_err_set(err, PB_EINVAL, "timed agent: NULL game or spec");
    return NULL;
  }
  pb_agent_t *given = pb_agent_new(g, spec, seed, err);
  if (given == NULL) return NULL;
  pb_gtp_timed_t *t = calloc(1, sizeof *t);
  if (t == NULL || (t->base = strdup(spec)) == NULL ||
      (t->spec = strdup(spec)) == NULL || set_last(t, spec) != 0) {
    if (t != NULL) {
      free(t->base);
      free(t->spec);
    }
    free(t);
    pb_agent_destroy(&given);
    pb_err_set(err, PB_ENOMEM, "timed agent: out of memory");
    return NULL;
  }
  t->g = g;
  t->seed = seed;
  t->given = given;
  for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
    size_t kl = strlen(KINDS[i].kind);
    if (strncmp(spec, KINDS[i].kind, kl) == 0 && spec[kl] == ':')
      t->kind = &KINDS[i];
  }
  if (t->kind != NULL) {
    double v = 0;
    int had = strip_setting(t->base, t->kind->keys, t->kind->key, &v);
    t->cap = had && v >= (double)t->kind->lo && v <= (double)t->kind->hi
                 ? (long)v
                 : t->kind->hi;
  }
  return t;
}

void pb_gtp_timed_destroy(pb_gtp_timed_t **tp) {
  if (tp == NULL || *tp == NULL) return;
  pb_gtp_timed_t *t = *tp;
  pb_agent_destroy(&t->given);
  pb_agent_destroy(&t->sized);
  free(t->base);
  free(t->spec);
  free(t->last);
  free(t);
  *tp = NULL;
}

pb_agent_t *pb_gtp_timed_agent(pb_gtp_timed_t *t) {
  return t != NULL ? t->given : NULL;
}

pb_agent_t *pb_gtp_timed_last_agent(pb_gtp_timed_t *t) {
  return t == NULL ? NULL : t->mover != NULL ? t->mover : t->given;
}

int pb_gtp_timed_scales(const pb_gtp_timed_t *t) {
  return t != NULL && t->kind != NULL;
}

const char *pb_gtp_timed_last_spec(const pb_gtp_timed_t *t) {
  return t != NULL ? t->last : NULL;
}

/* Makes t->sized the agent of `size` unless it is already. */
static int resize(pb_gtp_timed_t *t, long size, pb_err_t *err) {
  char spec[PB_GTP_TIMED_SPEC_MAX];
  int k = snprintf(spec, sizeof spec, "%s,%s=%ld", t->base, t->kind->key, size);
  if (k < 0 || (size_t)k >= sizeof spec)
    return pb_err_set(err, PB_EINVAL, "timed agent: spec too long");
  if (set_last(t, spec) != 0)
    return pb_err_set(err, PB_ENOMEM, "timed agent: out of memory");
  if (t->sized != NULL && t->size == size) return 0;
  if (t->mover == t->sized) t->mover = NULL;
  pb_agent_destroy(&t->sized);
  t->size = 0;
  double t0 = now_ms();
  pb_err_t e;
  pb_err_clear(&e);
  t->sized = pb_agent_new(t->g, spec, t->seed, &e);
  t->remake_ms = now_ms() - t0;
  if (t->sized == NULL)
    return pb_err_set(err, e.code < 0 ? e.code : PB_EINVAL, "%s", e.msg);
  t->size = size;
  return 0;
}

/* One move by the agent of `size`; *ms receives the time it took. */
static int act_sized(pb_gtp_timed_t *t, const pb_state_t *s, long size,
                     double *ms, pb_err_t *err) {
  int rc = resize(t, size, err);
  if (rc < 0) return rc;
  double t0 = now_ms();
  t->mover = t->sized;
  int a = pb_agent_act(t->sized, s, err);
  *ms = now_ms() - t0;
  if (a >= 0 && t->kind->how == SIZE_COUNT) {
    double r = (double)size / (*ms > 0.01 ? *ms : 0.01);
    t->rate = t->rate > 0 ? (t->rate + r) / 2 : r;
  }
  return a;
}

int pb_gtp_timed_act(pb_gtp_timed_t *t, const pb_state_t *s, int64_t budget_ms,
                     pb_err_t *err) {
  if (t == NULL || s == NULL)
    return pb_err_set(err, PB_EINVAL, "timed agent: NULL argument");
  if (budget_ms < 0 || t->kind == NULL) {
    if (set_last(t, t->spec) != 0)
      return pb_err_set(err, PB_ENOMEM, "timed agent: out of memory");
    t->mover = t->given;
    return pb_agent_act(t->given, s, err);
  }
  const timed_kind_t *k = t->kind;
  double start = now_ms(), ms = 0;
  if (k->how == SIZE_TIME) {
    double left = (double)budget_ms - t->remake_ms;
    return act_sized(t, s, nice_size(left, k->lo, t->cap), &ms, err);
  }
  if (t->rate <= 0) {
    /* No rate yet: a probe search measures it; its move stands when the
     * budget has no room for a second search. */
    long probe = PB_GTP_TIMED_PROBE < t->cap ? PB_GTP_TIMED_PROBE : t->cap;
    int a = act_sized(t, s, probe, &ms, err);
    double used = now_ms() - start;
    if (a < 0 || (double)budget_ms - used < 2 * used) return a;
    budget_ms -= (int64_t)used;
  }
  double want = t->rate * ((double)budget_ms - t->remake_ms);
  return act_sized(t, s, nice_size(want, k->lo, t->cap), &ms, err);
}
