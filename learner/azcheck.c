/* azcheck.c - the learner's check of AlphaZero self-play (issue 46 item 5):
 * the moves of every episode against the actor's own policy rows, and a
 * share of the rows against the learner's own re-run of the search
 * (common/train/azcheck.h), tallied per connection, per CURVE key and,
 * without CURVE, per address, over the run. A tally impossible for an
 * honest actor (an impossible move; or 6 standard errors over 30 re-run
 * rows, 100 drawn moves, 100 rows of zeros) quarantines as impossible
 * moves do (quarantine.c, QUAR_PLAY): its result is refused, its items of
 * the open iteration are dropped and re-queued, it is refused from then on.
 *
 * On when the run's algorithm is AlphaZero and net.selfplay_check > 0.
 * The exact checks (no network) take every position of every result. The
 * re-run searches rows of a result twice with the run's mcts settings and
 * noise of the learner's own, with the learner's copy of the served
 * policy+value network in the actors' precision (only episodes of the
 * version served now): for a connection on probation (fewer than 60 rows
 * re-run, or rows leaning by 3 standard errors) as many rows as one call
 * takes (AZ_MAX), so that a forger's first result or two settle it (a
 * one-hot forger: z about 7 over 64 rows of Tic-Tac-Toe, 6.2 of Connect
 * Four);
 * past probation net.az_check of the rows (at least one), no more than
 * fit in AZ_SLICE at the cost measured so far. It runs on the loop thread
 * before the result is taken, so a forger's result is refused, not trained
 * on; and within a budget: a self-play phase spends at most 0.5 s plus a
 * fifth of its time so far on re-runs (past it, results are taken with
 * the exact checks alone, counted in /status as `skipped`), so a flood of
 * new connections costs the learner at most that. The loop waits for a
 * re-run: a result on probation takes 64 rows (Connect Four, 100
 * simulations: about 0.5 s on one core), one past it AZ_SLICE (0.05 s). A
 * job on the thread pool (as spot.c's) would not block the loop, but
 * then the self-play phase would have to wait for it: not done. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "azcheck.h"
#include "json.h"
#include "precision.h"
#include "pveval.h"
#include "state.h"

enum { AZ_MAX = 64 }; /* positions re-run per result at most */

#define AZ_BUDGET_BASE 0.5   /* s of re-runs a phase may always spend */
#define AZ_BUDGET_SHARE 0.2  /* and this share of its time */
#define AZ_SLICE 0.05        /* s a result of a trusted actor may take */

typedef struct {
  uint32_t serial;
  pb_az_tally_t t;
} conn_t;

typedef struct {
  uint8_t kind;
  char id[64];
  pb_az_tally_t t;
} who_t;

struct pb_azck {
  pb_azplay_opts_t o;
  pb_nn_t *nn;
  pb_pveval_t *pe;
  uint64_t version; /* in nn; UINT64_MAX: none yet */
  pb_azcheck_t *rerun;
  pb_rng_t rng;
  conn_t *conn;          /* [max_peers] */
  who_t who[IDENTS_MAX]; /* beside l->quar.idents, same index */
  pb_state_t st[AZ_MAX];
  float *rows; /* [AZ_MAX][A] */
  double x[AZ_MAX];
  double phase_t, spent; /* the budget's phase (l->it.t_phase), its re-runs */
  double total_s;        /* every re-run's time */
  double longest_s;      /* the longest re-run of one result */
  double cost;           /* s per position re-run (moving average) */
  uint64_t probation;    /* results re-run as a connection on probation */
  uint64_t episodes, rows_seen, reruns, skipped, impossible, quarantined;
};

int pb__azcheck_init(pb_learner_t *l, pb_err_t *err) {
  const pb_config_t *c = &l->cfg;
  if (!(c->net.selfplay_check > 0) ||
      pb_iter_algo(l->it.iter) != &pb_algo_alphazero)
    return 0;
  struct pb_azck *a = calloc(1, sizeof *a);
  if (a == NULL) return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
  l->azck = a;
  a->version = UINT64_MAX;
  pb_azplay_config_opts(c, &a->o);
  a->conn = calloc((size_t)l->net.max_peers, sizeof *a->conn);
  a->rows = malloc((size_t)AZ_MAX * l->g->num_actions * sizeof *a->rows);
  if (a->conn == NULL || a->rows == NULL)
    return pb_err_set(err, PB_ENOMEM, "learner: out of memory");
  /* Not the run's seed: workers know that one. */
  pb_rng_seed(&a->rng, pb_mix64((uint64_t)(pb_now() * 1e9) ^ 0xa2c4),
              (uint64_t)getpid());
  if (!(c->net.az_check > 0)) return 0;
  pb_err_t e2;
  a->rerun = pb_azcheck_new(l->g, &a->o, AZ_MAX, &e2);
  if (a->rerun == NULL) {
    /* A deterministic search (eps 0): the exact checks alone. */
    pb_log_warn(l->log, "self-play check: no re-run of AlphaZero's search "
                "(%s); the moves are checked against their rows only",
                e2.msg);
    return 0;
  }
  pb_nn_t *q = pb_learn_q(l->learn);
  a->nn = pb_nn_new(pb_nn_spec(q), NULL, pb_nn_device(q), 1, err);
  if (a->nn == NULL) return err->code;
  /* The actors' precision, as selfcheck.c's. */
  const int prec = pb__role_precision(l, PB_DEVICE_ACTOR);
  int rc = pb_nn_set_precision(a->nn, prec, err);
  if (rc != 0) return rc;
  a->pe = pb_pveval_new(l->g, 2 * AZ_MAX, err);
  return a->pe == NULL ? err->code : 0;
}

void pb__azcheck_free(pb_learner_t *l) {
  struct pb_azck *a = l->azck;
  if (a == NULL) return;
  pb_azcheck_destroy(&a->rerun);
  pb_pveval_destroy(&a->pe);
  pb_nn_destroy(&a->nn);
  free(a->conn);
  free(a->rows);
  free(a);
  l->azck = NULL;
}

/* The tally of connection p (a new serial in its slot: a new tally). */
static pb_az_tally_t *conn_of(pb_learner_t *l, const peer_t *p) {
  conn_t *c = &l->azck->conn[p - l->net.peers];
  if (c->serial != p->serial) *c = (conn_t){.serial = p->serial};
  return &c->t;
}

/* The tallies of p's CURVE key and (without CURVE) its address, beside
 * their entries of l->quar.idents (an entry given to another: a new tally). */
static void idents(pb_learner_t *l, const peer_t *p, ident_t *id[2],
                   pb_az_tally_t *t[2]) {
  id[0] = p->key[0] ? pb__ident_find(l, IDENT_KEY, p->key, 1) : NULL;
  id[1] = p->addr[0] && l->net.zap == NULL
              ? pb__ident_find(l, IDENT_ADDR, p->addr, 1)
              : NULL;
  for (int i = 0; i < 2; i++) {
    t[i] = NULL;
    if (id[i] == NULL) continue;
    who_t *w = &l->azck->who[id[i] - l->quar.idents];
    if (w->kind != id[i]->kind || strcmp(w->id, id[i]->id)) {
      memset(w, 0, sizeof *w);
      w->kind = id[i]->kind;
      snprintf(w->id, sizeof w->id, "%s", id[i]->id);
    }
    t[i] = &w->t;
  }
}

/* The text of a verdict v on tally t. */
static void reason(const struct pb_azck *a, const char *whose, int v,
                   const pb_az_tally_t *t, const char *why, char *msg,
                   size_t cap) {
  switch (v) {
  case PB_AZ_BAD_MOVE:
    snprintf(msg, cap,
             "%s: an AlphaZero self-play move its own policy row rules out "
             "(%s)",
             whose, why[0] ? why : "an earlier result");
    break;
  case PB_AZ_BAD_ROWS:
    snprintf(msg, cap,
             "%s: its policy rows are not the search's: %.1f standard "
             "errors farther from the learner's re-run than the re-run from "
             "itself, over %" PRIu64 " positions",
             whose, pb_az_rows_z(t), t->positions);
    break;
  case PB_AZ_BAD_DRAWS:
    snprintf(msg, cap,
             "%s: its moves within temp_moves are not drawn from its own "
             "policy rows: %.1f standard errors more surprising over %" PRIu64
             " moves",
             whose, pb_az_moves_z(t), t->moves);
    break;
  default:
    snprintf(msg, cap,
             "%s: %" PRIu64 " of its %" PRIu64 " policy rows are fast "
             "searches' (zeros), %.1f standard errors more than "
             "mcts.full_fraction gives",
             whose, t->zero_rows, t->rows, pb_az_zeros_z(t, &a->o));
  }
}

/* Of an address's connections, none is taken by the ban itself: the
 * guilty ones were quarantined before it (tally()). */
static int none(const peer_t *p) {
  (void)p;
  return 0;
}

/* Adds d to p, its key and its address; 1 when p is quarantined now. */
static int tally(pb_learner_t *l, peer_t *p, const pb_az_tally_t *d,
                 const char *why) {
  struct pb_azck *a = l->azck;
  pb_az_tally_t *mine = conn_of(l, p), *t[2];
  ident_t *id[2];
  idents(l, p, id, t);
  pb_az_add(mine, d);
  for (int i = 0; i < 2; i++)
    if (t[i] != NULL) pb_az_add(t[i], d);
  char msg[PB_MSG_TEXT_MAX], r[PB_MSG_TEXT_MAX - 40];
  int v = pb_az_verdict(mine, &a->o);
  if (v != PB_AZ_OK) {
    reason(a, "its connection", v, mine, why, r, sizeof r);
    snprintf(msg, sizeof msg, "quarantined (%s)", r);
    /* Its work leaves its address's tally, which goes on judging the
     * connections left (an honest actor on the liar's host is not judged
     * by the liar's work); its key's keeps it: a worker is its key, and
     * a liar hopping connections is banned by it (below). */
    if (t[1] != NULL && !id[1]->banned) pb_az_sub(t[1], mine);
    t[1] = NULL;
    a->quarantined++;
    pb__quarantine(l, p, QUAR_PLAY, msg);
  }
  for (int i = 0; i < 2; i++) {
    if (t[i] == NULL || pb__ident_banned(l, id[i])) continue;
    v = pb_az_verdict(t[i], &a->o);
    if (v == PB_AZ_OK) continue;
    reason(a, i == 0 ? "its CURVE key" : "its address", v, t[i], why, r,
           sizeof r);
    a->quarantined++;
    if (i == 0) {
      pb__ban(l, id[i], QUAR_PLAY, r, NULL);
      continue;
    }
    /* An address: its connections whose own tallies lean (half the
     * threshold) or hold an impossible move go; the others keep working,
     * new ones are refused while the ban lasts. */
    snprintf(msg, sizeof msg, "quarantined (its address: %s)", r);
    for (int k = 0; k < l->net.max_peers; k++) {
      peer_t *q = &l->net.peers[k];
      if (!q->used || q->quarantined || strcmp(q->addr, id[i]->id)) continue;
      const pb_az_tally_t *c = conn_of(l, q);
      if (c->impossible > 0 || pb_az_rows_z(c) >= PB_AZ_Z / 2 ||
          pb_az_moves_z(c) >= PB_AZ_Z / 2)
        pb__quarantine(l, q, QUAR_PLAY, msg);
    }
    pb__ban(l, id[i], QUAR_PLAY, r, none);
  }
  return p->quarantined != 0;
}

/* The re-running network holds the served weights. 0, or the load's
 * error. */
static int load(pb_learner_t *l, pb_err_t *err) {
  struct pb_azck *a = l->azck;
  if (a->version == l->net.qw.version || l->net.qw.buf == NULL) return 0;
  int rc = pb_nn_weights_load(a->nn, l->net.qw.buf, l->net.qw.len, NULL, err);
  if (rc != 0) return rc;
  a->version = l->net.qw.version;
  return pb_pveval_bind(a->pe, a->nn, err);
}

/* Whether the phase's budget allows a re-run now. */
static int budget(pb_learner_t *l) {
  struct pb_azck *a = l->azck;
  if (a->phase_t != l->it.t_phase) {
    a->phase_t = l->it.t_phase;
    a->spent = 0.0;
  }
  return a->spent <=
         AZ_BUDGET_BASE + AZ_BUDGET_SHARE * (now(l) - l->it.t_phase);
}

/* Re-runs a share of r's rows (the served version's, not all zero) into
 * d. 0, or a fatal error. */
/* Whether row is all zeros (a fast search's). */
static int zero_row(const float *row, int A) {
  for (int b = 0; b < A; b++)
    if (row[b] != 0.0f) return 0;
  return 1;
}

/* How many of the m rows of a result to re-run for a connection whose
 * tally is mine: on probation (fewer than 2 x PB_AZ_MIN_ROWS re-run, or a
 * z of its rows of 3 or more: an honest actor's is 1% of the time), as
 * many as a call takes, so that one or two results settle a forger; else each
 * with probability net.az_check (at least one) and no more than fit in
 * AZ_SLICE s at the cost measured so far. At most AZ_MAX. */
static int how_many(pb_learner_t *l, const pb_az_tally_t *mine, uint32_t m) {
  struct pb_azck *a = l->azck;
  if (m == 0) return 0;
  if (mine->positions < 2 * PB_AZ_MIN_ROWS ||
      pb_az_rows_z(mine) >= PB_AZ_Z / 2) {
    a->probation++;
    return m < AZ_MAX ? (int)m : AZ_MAX;
  }
  uint32_t k = 0;
  for (uint32_t i = 0; i < m; i++)
    k += pb_rng_uniform(&a->rng) < l->cfg.net.az_check;
  if (k < 1) k = 1;
  if (a->cost > 0.0 && k > AZ_SLICE / a->cost)
    k = AZ_SLICE / a->cost >= 1.0 ? (uint32_t)(AZ_SLICE / a->cost) : 1;
  return k < AZ_MAX ? (int)k : AZ_MAX;
}

/* Re-runs rows of r (of the served version, not all zero; how many:
 * how_many) into d. 0, or a fatal error. */
static int rerun(pb_learner_t *l, const pb_msg_selfplay_result_t *r,
                 const pb_az_tally_t *mine, pb_az_tally_t *d, pb_err_t *err) {
  struct pb_azck *a = l->azck;
  if (a->rerun == NULL) return 0;
  if (!budget(l)) {
    a->skipped++;
    return 0;
  }
  int rc = load(l, err);
  if (rc != 0) return rc;
  const int A = l->g->num_actions;
  uint32_t m = 0;
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    if (ep->q_version != a->version || ep->policy == NULL) continue;
    for (uint32_t i = 0; i < ep->n_states; i++)
      m += !zero_row(ep->policy + (size_t)i * A, A);
  }
  const int want = how_many(l, mine, m);
  if (want == 0) return 0;
  /* want of the m rows, uniformly (reservoir sampling). */
  int n = 0;
  uint32_t c = 0;
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    if (ep->q_version != a->version || ep->policy == NULL) continue;
    for (uint32_t i = 0; i < ep->n_states; i++) {
      const float *row = ep->policy + (size_t)i * A;
      if (zero_row(row, A)) continue;
      int slot = n < want ? n++ : (int)pb_rng_below(&a->rng, c + 1);
      c++;
      if (slot >= want) continue;
      a->st[slot] = ep->states[i];
      memcpy(a->rows + (size_t)slot * A, row, (size_t)A * sizeof *row);
    }
  }
  const double t0 = now(l);
  pb_mcts_evalfn_t ev = pb_pveval_fn(a->pe);
  rc = pb_azcheck_run(a->rerun, a->st, a->rows, n, &ev, &a->rng, a->x, err);
  const double dt = now(l) - t0;
  a->spent += dt;
  a->total_s += dt;
  if (dt > a->longest_s) a->longest_s = dt;
  const double per = dt / n;
  a->cost = a->cost > 0.0 ? 0.8 * a->cost + 0.2 * per : per;
  if (rc != 0) return rc;
  pb_az_add_rows(d, a->x, n);
  a->reruns += (uint64_t)n;
  return 0;
}

int pb__azcheck_item(pb_learner_t *l, peer_t *p,
                     const pb_msg_selfplay_result_t *r) {
  struct pb_azck *a = l->azck;
  if (a == NULL || r->n_episodes == 0) return 0;
  pb_az_tally_t d = {0};
  char why[PB_MSG_TEXT_MAX / 2] = "";
  pb_err_t err;
  for (uint32_t k = 0; k < r->n_episodes; k++) {
    const pb_msg_episode_t *ep = &r->episodes[k];
    if (ep->policy == NULL) continue;
    if (pb_az_check_episode(l->g, &a->o, ep->states, ep->n_states,
                            ep->final_reward, ep->policy, &d,
                            d.impossible ? NULL : why, sizeof why,
                            &err) != 0)
      continue; /* the rules check refused it */
  }
  a->episodes += d.episodes;
  a->rows_seen += d.rows;
  a->impossible += d.impossible;
  if (d.impossible == 0 && rerun(l, r, conn_of(l, p), &d, &err) != 0) {
    pb__set_fatal(l, &err);
    return 0;
  }
  return tally(l, p, &d, why);
}

void pb__azcheck_status(pb_learner_t *l, pb_json_t *j) {
  const struct pb_azck *a = l->azck;
  pb_json_key(j, "alphazero");
  pb_json_obj_begin(j);
  pb_json_kdouble(j, "share", a && a->rerun ? l->cfg.net.az_check : 0.0);
  pb_json_kuint(j, "episodes", a ? a->episodes : 0);
  pb_json_kuint(j, "rows", a ? a->rows_seen : 0);
  pb_json_kuint(j, "rerun", a ? a->reruns : 0);
  pb_json_kuint(j, "skipped", a ? a->skipped : 0);
  pb_json_kdouble(j, "rerun_s", a ? a->total_s : 0.0);
  pb_json_kdouble(j, "rerun_longest_s", a ? a->longest_s : 0.0);
  pb_json_kuint(j, "probation", a ? a->probation : 0);
  pb_json_kuint(j, "impossible_moves", a ? a->impossible : 0);
  pb_json_kuint(j, "quarantined", a ? a->quarantined : 0);
  double zr = 0.0, zm = 0.0;
  for (int i = 0; a && i < l->net.max_peers; i++) {
    const peer_t *p = &l->net.peers[i];
    if (!p->used || p->quarantined || a->conn[i].serial != p->serial)
      continue;
    const double r = pb_az_rows_z(&a->conn[i].t),
                 m = pb_az_moves_z(&a->conn[i].t);
    if (r > zr) zr = r;
    if (m > zm) zm = m;
  }
  pb_json_kdouble(j, "rows_z_max", zr);
  pb_json_kdouble(j, "moves_z_max", zm);
  pb_json_obj_end(j);
}
