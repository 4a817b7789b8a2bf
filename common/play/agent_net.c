/* agent_net.c - the network agents of agent.h: a trained checkpoint
 * playing greedily on Q (checkpoint:PATH, run:DIR@ITER), on V one ply deep
 * (value:PATH), in beam search (beam:PATH), in PUCT MCTS (mcts:PATH, with
 * an AlphaZero network or a PROBS V and Q), in alpha-beta over V and Q
 * (abnet:PATH) or in BPIP search over V (bpip:PATH); and what reads them:
 * pb_agent_networks, pb_agent_search_of, pb_agent_evaluations,
 * pb_agent_argmax_legal.
 *
 * Workload: one batch-1 forward pass per move in matches, batches of
 * NET_CHUNK positions through pb_agent_act_many. A network agent's input
 * and output buffers are its own, made with it; libtorch allocates inside
 * the forward pass, which we cannot avoid. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abnet.h"
#include "agent.h"
#include "agent_impl.h"
#include "agent_net_impl.h"
#include "beam_search.h"
#include "bpip.h"
#include "ckpt.h"
#include "mcts.h"
#include "model.h"
#include "neteval.h"
#include "nn.h"
#include "precision.h"
#include "pveval.h"
#include "rundir.h"
#include "bounds.h"
#include "util.h"

enum { NET_CHUNK = 256 }; /* positions per batched call */

typedef struct {
  const pb_game_t *g;
  int mode;          /* NET_* */
  int E, M;          /* beam search settings (NET_BEAM) */
  pb_model_t *model; /* owns the networks */
  float *in, *out;   /* planes and outputs of up to NET_CHUNK * A rows */
  pb_state_t *kids;  /* NET_V1: children of a chunk */
  pb_beam_t *beam;   /* NET_BEAM: searches of a chunk */
  pb_neteval_t *ne;  /* NET_BEAM, NET_AB, NET_MCTS of a probs checkpoint:
                        batched, cached V and Q */
  int N;             /* NET_MCTS: simulations per move */
  double c_puct;     /* NET_MCTS: the c_puct it searches with */
  pb_mcts_t *mcts;   /* NET_MCTS: searches of a chunk */
  pb_pveval_t *pve;  /* NET_MCTS: the policy+value network (alphazero) */
  pb_mcts_vq_t vq;   /* NET_MCTS: V and Q as its evaluator (probs) */
  pb_abnet_t *ab;    /* NET_AB: the searcher */
  pb_bpip_t *bp;     /* NET_BPIP: the searcher */
  /* Where V and Q come from: a PROBS checkpoint's V (one column) and Q;
   * an AlphaZero checkpoint's policy+value network for both (Q: the
   * policy logits, columns 0..A-1; V: column A). */
  pb_nn_t *vnet, *qnet;
  int vstride, vcol, qstride;
  uint64_t evals; /* positions through a network (Q, V1 modes) */
  int bound_ms;   /* pb_agent_set_time_bound: each act's time; 0: none */
  const atomic_int *stop; /* pb_agent_set_stop; NULL: none */
  pb_agent_info_t *info;  /* pb_agent_info: the last call's, per position */
  int info_n, info_cap;
  pb_agent_info_t *info_at; /* the current chunk's first */
  pb_agent_progress_fn progress; /* pb_agent_set_progress; NULL: none */
  void *pctx;
  double every, next; /* its period (s), and when it is next due */
  int at;             /* the position searched (its index in the call) */
  /* The thread that last set libtorch's thread count for this agent: with
   * OpenMP the setting belongs to a thread, and agents are often made in
   * one thread and used in another (pb_match_play). */
  pthread_t owner;
  int owner_set;
} net_agent_t;

static void net_destroy(void *impl) {
  net_agent_t *na = impl;
  if (na == NULL) return;
  pb_beam_destroy(&na->beam);
  pb_neteval_destroy(&na->ne);
  pb_mcts_destroy(&na->mcts);
  pb_pveval_destroy(&na->pve);
  pb_abnet_destroy(&na->ab);
  pb_bpip_destroy(&na->bp);
  pb_model_destroy(&na->model);
  free(na->in);
  free(na->out);
  free(na->kids);
  free(na->info);
  free(na);
}

int pb_agent_argmax_legal(const float *v, const uint8_t *legal, int n) {
  int best = legal[0];
  float bv = isnan(v[best]) ? -INFINITY : v[best];
  for (int i = 1; i < n; i++)
    if (v[legal[i]] > bv) {
      bv = v[legal[i]];
      best = legal[i];
    }
  return best;
}

/* Position i of the chunk is valued v (clamped to [-1, 1]) for the side
 * to move: the value of the move chosen (pb_agent_info's valued). */
static void set_value(net_agent_t *na, int i, float v) {
  if (isnan(v)) return;
  na->info_at[i].valued = 1;
  na->info_at[i].value = v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
}

/* Greedy Q for n <= NET_CHUNK positions. */
static int net_q_chunk(net_agent_t *na, const pb_state_t *s, int n, int *out,
                       pb_err_t *err) {
  const pb_game_t *g = na->g;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  for (int i = 0; i < n; i++) g->encode(&s[i], &na->in[i * in_size]);
  int rc = pb_nn_forward(na->qnet, na->in, n, na->out, err);
  if (rc < 0) return rc;
  na->evals += (uint64_t)n;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    out[i] = pb_agent_argmax_legal(&na->out[(size_t)i * na->qstride], legal, nl);
    /* An AlphaZero network's Q slot holds policy logits: no value. */
    if (na->qstride == na->g->num_actions)
      set_value(na, i, na->out[(size_t)i * na->qstride + out[i]]);
  }
  return 0;
}

/* MCTS with the policy+value network for n <= NET_CHUNK positions: the
 * most visited move (ties: the lowest). */
static int net_mcts_chunk(net_agent_t *na, const pb_state_t *s, int n,
                          int *out, pb_err_t *err) {
  const pb_game_t *g = na->g;
  const int A = g->num_actions;
  pb_mcts_evalfn_t fn =
      na->pve != NULL ? pb_pveval_fn(na->pve) : pb_mcts_vq_fn(&na->vq);
  float rv[NET_CHUNK];
  na->at = (int)(na->info_at - na->info);
  int rc = pb_mcts_run(na->mcts, s, n, &fn, NULL, na->out, rv, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    out[i] = pb_agent_argmax_legal(&na->out[(size_t)i * A], legal, nl);
    pb_agent_info_t *in = &na->info_at[i];
    in->searched = 1;
    set_value(na, i, rv[i]);
    in->value = rv[i];
    in->pv[0] = (uint8_t)out[i];
    in->pv_len = 1;
    for (int k = 0; k < nl; k++) {
      in->move_visits[legal[k]] = na->out[(size_t)i * A + legal[k]];
      in->visits += (uint64_t)na->out[(size_t)i * A + legal[k]];
    }
  }
  return 0;
}

/* Whether a progress report is due now (and the next one scheduled). */
static int progress_due(net_agent_t *na) {
  double now = pb_now();
  if (now < na->next) return 0;
  na->next = now + na->every;
  return 1;
}

/* pb_mcts_set_progress's callback: each root's visits so far. */
static void mcts_progress(void *ctx, pb_mcts_t *m, int base, int n) {
  net_agent_t *na = ctx;
  if (!progress_due(na)) return;
  for (int k = 0; k < n; k++) {
    pb_agent_info_t p;
    memset(&p, 0, sizeof p);
    p.searched = 1;
    pb_mcts_partial(m, k, p.move_visits, &p.value);
    int best = -1;
    for (int a = 0; a < na->g->num_actions; a++) {
      p.visits += (uint64_t)p.move_visits[a];
      if (p.move_visits[a] > 0 &&
          (best < 0 || p.move_visits[a] > p.move_visits[best]))
        best = a;
    }
    if (best < 0) continue;
    p.pv[0] = (uint8_t)best;
    p.pv_len = 1;
    na->progress(na->pctx, na->at + base + k, &p);
  }
}

/* pb_abnet_set_progress's callback: the deepest iteration so far. */
static void ab_progress(void *ctx, const pb_abnet_result_t *r) {
  net_agent_t *na = ctx;
  if (!progress_due(na)) return;
  pb_agent_info_t p;
  memset(&p, 0, sizeof p);
  p.searched = 1;
  p.value = r->value;
  p.visits = r->nodes;
  p.depth = r->depth;
  p.pv_len = r->pv_len < PB_AGENT_MAX_PV ? r->pv_len : PB_AGENT_MAX_PV;
  memcpy(p.pv, r->pv, (size_t)p.pv_len);
  na->progress(na->pctx, na->at, &p);
}

/* V one ply deep for n <= NET_CHUNK positions: one V call for every
 * child that does not end the game. */
static int net_v1_chunk(net_agent_t *na, const pb_state_t *s, int n, int *out,
                        pb_err_t *err) {
  const pb_game_t *g = na->g;
  const int A = g->num_actions;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  float val[NET_CHUNK * PB_MAX_ACTIONS];
  int idx[NET_CHUNK * PB_MAX_ACTIONS]; /* child slot -> row to evaluate */
  int nk = 0;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    for (int a = 0; a < A; a++) val[i * A + a] = -INFINITY;
    for (int k = 0; k < nl; k++) {
      pb_state_t c = s[i];
      int done = 0;
      float r = g->step(&c, legal[k], &done);
      int slot = i * A + legal[k];
      idx[slot] = -1;
      if (done) {
        val[slot] = r;
      } else {
        na->kids[nk] = c;
        idx[slot] = nk++;
      }
    }
  }
  for (int k = 0; k < nk; k++) g->encode(&na->kids[k], &na->in[k * in_size]);
  int rc = pb_nn_forward(na->vnet, na->in, nk, na->out, err);
  if (rc < 0) return rc;
  na->evals += (uint64_t)nk;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    for (int k = 0; k < nl; k++) {
      int slot = i * A + legal[k];
      if (idx[slot] >= 0)
        val[slot] = -na->out[(size_t)idx[slot] * na->vstride + na->vcol];
    }
    out[i] = pb_agent_argmax_legal(&val[i * A], legal, nl);
    set_value(na, i, val[i * A + out[i]]);
  }
  return 0;
}

/* Beam search for n <= NET_CHUNK positions. */
static int net_beam_chunk(net_agent_t *na, const pb_state_t *s, int n,
                          int *out, pb_err_t *err) {
  const pb_game_t *g = na->g;
  pb_evalfn_t fn = pb_neteval_fn(na->ne);
  int rc = pb_beam_run(na->beam, s, n, &fn, na->out, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    uint8_t legal[PB_MAX_ACTIONS];
    int nl = g->legal(&s[i], legal);
    out[i] = pb_agent_argmax_legal(&na->out[(size_t)i * g->num_actions], legal, nl);
    set_value(na, i, na->out[(size_t)i * g->num_actions + out[i]]);
  }
  return 0;
}

/* Alpha-beta over V and Q, one position at a time. */
static int net_ab_chunk(net_agent_t *na, const pb_state_t *s, int n, int *out,
                        pb_err_t *err) {
  pb_evalfn_t fn = pb_neteval_fn(na->ne);
  for (int i = 0; i < n; i++) {
    pb_abnet_result_t r;
    na->at = (int)(na->info_at - na->info) + i;
    int rc = pb_abnet_search(na->ab, &s[i], &fn, &r, err);
    if (rc < 0) return rc;
    out[i] = r.move;
    pb_agent_info_t *in = &na->info_at[i];
    in->searched = 1;
    set_value(na, i, r.value);
    in->value = r.value;
    in->visits = r.nodes;
    in->depth = r.depth;
    in->pv_len = r.pv_len < PB_AGENT_MAX_PV ? r.pv_len : PB_AGENT_MAX_PV;
    memcpy(in->pv, r.pv, (size_t)in->pv_len);
  }
  return 0;
}

/* BPIP over V, one position at a time. */
static int net_bpip_chunk(net_agent_t *na, const pb_state_t *s, int n, int *out,
                          pb_err_t *err) {
  pb_evalfn_t fn = pb_neteval_fn(na->ne);
  for (int i = 0; i < n; i++) {
    pb_bpip_result_t r;
    int rc = pb_bpip_search(na->bp, &s[i], &fn, &r, err);
    if (rc < 0) return rc;
    out[i] = r.move;
    set_value(na, i, r.value);
  }
  return 0;
}

static int net_act_batch(void *impl, const pb_state_t *s, int n, int *out,
                         pb_err_t *err) {
  net_agent_t *na = impl;
  if (!na->owner_set || !pthread_equal(na->owner, pthread_self())) {
    /* One intra-op thread: these forwards are small, and matches already
     * run one agent per core. */
    pb_nn_set_threads(1);
    na->owner = pthread_self();
    na->owner_set = 1;
  }
  double until = na->bound_ms > 0 ? pb_now() + na->bound_ms / 1000.0 : 0;
  if (na->ab != NULL) pb_abnet_set_deadline(na->ab, until);
  else if (na->ne != NULL) pb_neteval_set_deadline(na->ne, until);
  if (na->pve != NULL) pb_pveval_set_deadline(na->pve, until);
  if (na->ab != NULL) pb_abnet_set_stop(na->ab, na->stop);
  else if (na->ne != NULL) pb_neteval_set_stop(na->ne, na->stop);
  if (na->pve != NULL) pb_pveval_set_stop(na->pve, na->stop);
  na->next = pb_now() + na->every;
  if (na->ab != NULL)
    pb_abnet_set_progress(na->ab, na->progress ? ab_progress : NULL, na);
  if (na->mcts != NULL)
    pb_mcts_set_progress(na->mcts, na->progress ? mcts_progress : NULL, na);
  if (n > na->info_cap) {
    pb_agent_info_t *in = realloc(na->info, (size_t)n * sizeof *in);
    if (in == NULL) return pb_err_set(err, PB_ENOMEM, "agent: out of memory");
    na->info = in;
    na->info_cap = n;
  }
  memset(na->info, 0, (size_t)n * sizeof *na->info);
  na->info_n = n;
  for (int i = 0; i < n; i += NET_CHUNK) {
    int m = n - i < NET_CHUNK ? n - i : NET_CHUNK;
    na->info_at = na->info + i;
    int rc = na->mode == NET_Q      ? net_q_chunk(na, s + i, m, out + i, err)
             : na->mode == NET_V1   ? net_v1_chunk(na, s + i, m, out + i, err)
             : na->mode == NET_MCTS ? net_mcts_chunk(na, s + i, m, out + i, err)
             : na->mode == NET_AB   ? net_ab_chunk(na, s + i, m, out + i, err)
             : na->mode == NET_BPIP
                 ? net_bpip_chunk(na, s + i, m, out + i, err)
                 : net_beam_chunk(na, s + i, m, out + i, err);
    if (rc == PB_ERANGE && until > 0 && pb_now() > until)
      return pb_err_set(err, PB_ERANGE,
                        "the search passed its time bound of %d ms (a "
                        "smaller budget answers in time)",
                        na->bound_ms);
    if (rc == PB_EINTR)
      return pb_err_set(err, PB_EINTR, "the search was stopped");
    if (rc < 0) return rc;
  }
  return 0;
}


static int net_act(void *impl, const pb_state_t *s, const uint8_t *legal, int n,
                   pb_err_t *err) {
  (void)legal;
  (void)n;
  int a = 0;
  int rc = net_act_batch(impl, s, 1, &a, err);
  return rc < 0 ? rc : a;
}

static int net_info(const void *impl, int i, pb_agent_info_t *out) {
  const net_agent_t *na = impl;
  if (i < 0 || i >= na->info_n) return 0;
  *out = na->info[i];
  return out->searched;
}

/* Deterministic: reseeding changes nothing. */
static const pb_agent_vtable_t net_vt = {net_act, NULL, net_destroy,
                                         net_act_batch, net_info};

int pb_agent_set_time_bound(pb_agent_t *a, int ms) {
  if (a == NULL || ms < 0) return PB_EINVAL;
  if (a->vt != &net_vt) return PB_EUNSUPP;
  ((net_agent_t *)a->impl)->bound_ms = ms;
  return 0;
}

int pb_agent_set_stop(pb_agent_t *a, const atomic_int *stop) {
  if (a == NULL) return PB_EINVAL;
  if (a->vt != &net_vt) return PB_EUNSUPP;
  ((net_agent_t *)a->impl)->stop = stop;
  return 0;
}

int pb_agent_set_progress(pb_agent_t *a, pb_agent_progress_fn fn, void *ctx,
                          double every) {
  if (a == NULL || (fn != NULL && !(every > 0))) return PB_EINVAL;
  if (a->vt != &net_vt) return PB_EUNSUPP;
  net_agent_t *na = a->impl;
  if (na->ab == NULL && na->mcts == NULL) return PB_EUNSUPP;
  na->progress = fn;
  na->pctx = ctx;
  na->every = fn != NULL ? every : 0;
  return 0;
}


uint64_t pb_agent_evaluations(const pb_agent_t *a) {
  if (a == NULL || a->vt != &net_vt) return 0;
  const net_agent_t *na = a->impl;
  uint64_t n = na->evals;
  if (na->ne != NULL) {
    pb_neteval_stats_t st;
    pb_neteval_stats(na->ne, &st);
    n += st.v_computed + st.q_computed;
  }
  if (na->pve != NULL) n += pb_pveval_positions(na->pve);
  return n;
}

pb_model_t *pb_agent_search_of(const pb_agent_t *a, pb_agent_search_t *s) {
  const net_agent_t *na =
      a != NULL && a->vt == &net_vt ? (const net_agent_t *)a->impl : NULL;
  if (s == NULL) return na != NULL ? na->model : NULL;
  memset(s, 0, sizeof *s);
  if (na == NULL) return NULL;
  if (na->mode == NET_BEAM) {
    s->kind = PB_AGENT_SEARCH_BEAM;
    s->E = na->E;
    s->M = na->M;
  } else if (na->mode == NET_AB) {
    s->kind = PB_AGENT_SEARCH_ABNET;
    s->ab = *pb_abnet_options(na->ab);
  } else if (na->mode == NET_MCTS) {
    s->kind = PB_AGENT_SEARCH_MCTS;
    s->N = na->N;
    s->c = na->c_puct;
    s->T = na->pve == NULL ? na->vq.temperature : 0.0;
  }
  return na->model;
}

pb_model_t *pb_agent_networks(const pb_agent_t *a, int *E, int *M) {
  const net_agent_t *na =
      a != NULL && a->vt == &net_vt ? (const net_agent_t *)a->impl : NULL;
  if (E != NULL) *E = na != NULL && na->mode == NET_BEAM ? na->E : 0;
  if (M != NULL) *M = na != NULL && na->mode == NET_BEAM ? na->M : 0;
  return na != NULL ? na->model : NULL;
}

/* pb__agent_net_open: agent_net_impl.h. */
pb_agent_t *pb__agent_net_open(const pb_game_t *g, const char *path,
                               const char *name, int mode,
                               const net_settings_t *ns, pb_err_t *err) {
  net_settings_t none;
  memset(&none, 0, sizeof none);
  if (ns == NULL) ns = &none;
  pb_err_t e;
  pb_err_clear(&e);
  pb_config_t ccfg;
  pb_model_t *l = pb_model_open(path, "cpu", &ccfg, &e);
  if (l == NULL) {
    pb_err_set(err, e.code < 0 ? e.code : PB_EIO, "agent %s: %s", name, e.msg);
    return NULL;
  }
  const pb_game_t *cg = pb_model_game(l);
  if (cg != g) {
    pb_err_set(err, PB_EMISMATCH,
               "agent %s: the checkpoint plays %s, but this match is %s", name,
               cg->name, g->name);
    pb_model_destroy(&l);
    return NULL;
  }
  if (ns->prec >= 0) {
    /* precision=: resolved on this machine, refused where bf16 is not
     * native (common/nn/precision.h). */
    char why[160], said[256];
    int native = pb_precision_native("cpu", why, sizeof why), prec;
    if (pb_precision_choose(pb_precision_name(ns->prec), "precision", native,
                            why, &prec, said, sizeof said, &e) != 0 ||
        pb_model_set_precision(l, prec, &e) != 0) {
      pb_err_set(err, e.code, "agent %s: %s", name, e.msg);
      pb_model_destroy(&l);
      return NULL;
    }
  }
  const int az = pb_model_kind(l) == PB_NETS_PV;
  if (az &&
      (mode == NET_BEAM || mode == NET_AB || mode == NET_BPIP || ns->T > 0)) {
    if (mode == NET_MCTS)
      pb_err_set(err, PB_EMISMATCH,
                 "agent %s: T= tempers a probs checkpoint's Q; this "
                 "alphazero checkpoint has a policy: leave T out", name);
    else
      pb_err_set(err, PB_EMISMATCH,
                 "agent %s: an alphazero checkpoint has no V and Q for %s "
                 "search: play it with mcts:PATH[,N=...]",
                 name,
                 mode == NET_BEAM ? "beam"
                 : mode == NET_AB ? "alpha-beta"
                                  : "BPIP");
    pb_model_destroy(&l);
    return NULL;
  }
  /* A linear evaluation (td) trains V alone, its Q slot the untrained start:
   * checkpoint: and run: play V one ply deep (value:); beam is refused. */
  const int linear = pb_model_kind(l) == PB_NETS_LINEAR;
  if (linear && mode == NET_Q) mode = NET_V1;
  if (linear && mode == NET_BEAM) {
    pb_err_set(err, PB_EMISMATCH,
               "agent %s: a td checkpoint has no trained Q (td learns V "
               "alone) for beam search: play it with td:PATH (its n-ply "
               "search), value:PATH or abnet:PATH",
               name);
    pb_model_destroy(&l);
    return NULL;
  }
  net_agent_t *na = calloc(1, sizeof *na);
  if (na == NULL) {
    pb_model_destroy(&l);
    pb_err_set(err, PB_ENOMEM, "agent %s: out of memory", name);
    return NULL;
  }
  na->g = g;
  na->mode = mode;
  na->E = ns->E;
  na->M = ns->M;
  na->N = ns->N;
  na->model = l;
  const size_t A = (size_t)g->num_actions;
  na->qnet = pb_model_q(l);
  na->qstride = (int)A + (az ? 1 : 0);
  na->vnet = az ? pb_model_q(l) : pb_model_v(l);
  na->vstride = az ? (int)A + 1 : 1;
  na->vcol = az ? (int)A : 0;
  const size_t rows = NET_CHUNK * (mode == NET_V1 ? A : 1);
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  na->in = malloc(rows * in_size * sizeof *na->in);
  na->out = malloc(rows * (A + 1) * sizeof *na->out);
  if (mode == NET_V1) na->kids = malloc(rows * sizeof *na->kids);
  int ok = na->in != NULL && na->out != NULL &&
           (mode != NET_V1 || na->kids != NULL);
  if (ok && (mode == NET_BEAM || mode == NET_AB || mode == NET_BPIP ||
             (mode == NET_MCTS && !az))) {
    /* Trees for up to NET_CHUNK searches at once (pb_beam_new lowers the
     * count if they would not fit its memory bound). */
    int made = 1;
    if (mode == NET_BEAM)
      made = (na->beam = pb_beam_new(g, ns->E, ns->M, NET_CHUNK, &e)) != NULL;
    if (mode == NET_AB) made = (na->ab = pb_abnet_new(g, &ns->ab, &e)) != NULL;
    if (mode == NET_BPIP) made = (na->bp = pb_bpip_new(g, &ns->bp, &e)) != NULL;
    na->ne = made ? pb_neteval_new(g, 512, 1u << 18, &e) : NULL;
    if (na->ne == NULL) {
      net_destroy(na);
      pb_err_set(err, e.code < 0 ? e.code : PB_ENOMEM, "agent %s: %s", name,
                 e.msg);
      return NULL;
    }
    pb_neteval_bind(na->ne, pb_model_v(l), pb_model_q(l));
  }
  if (ok && mode == NET_MCTS) {
    /* The run's c_puct (or c=) and discount; no noise at play time. A
     * probs checkpoint: priors softmax(Q / T), V at the leaves. */
    pb_mcts_opts_t mo = {ns->N, ns->c > 0 ? ns->c : ccfg.mcts.c_puct, 0.0,
                         0.0, NET_CHUNK, ccfg.mcts.discount};
    na->c_puct = mo.c_puct;
    na->mcts = pb_mcts_new(g, &mo, &e);
    if (!az) {
      na->vq.g = g;
      na->vq.ev = pb_neteval_fn(na->ne);
      na->vq.temperature = ns->T > 0 ? ns->T : 1.0;
    } else {
      na->pve = na->mcts ? pb_pveval_new(g, NET_CHUNK, &e) : NULL;
    }
    if (na->mcts == NULL ||
        (az && (na->pve == NULL ||
                pb_pveval_bind(na->pve, pb_model_q(l), &e) != 0))) {
      net_destroy(na);
      pb_err_set(err, e.code < 0 ? e.code : PB_ENOMEM, "agent %s: %s", name,
                 e.msg);
      return NULL;
    }
  }
  if (!ok) {
    net_destroy(na);
    pb_err_set(err, PB_ENOMEM, "agent %s: out of memory", name);
    return NULL;
  }
  return pb_agent_wrap(g, &net_vt, na, name, err);
}
