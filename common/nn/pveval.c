/* pveval.c - see pveval.h. */
#include "pveval.h"

#include <stdlib.h>
#include <string.h>

#include "invariant.h"
#include "util.h"

struct pb_pveval {
  const pb_game_t *g;
  int max_batch;
  pb_nn_t *nn;
  float *in, *out; /* [max_batch][planes*h*w], [max_batch][A + 1] */
  uint64_t positions, calls;
  double deadline; /* pb_now() after which calls fail; 0: none */
  const atomic_int *stop; /* calls fail while it is nonzero; NULL: none */
};

pb_pveval_t *pb_pveval_new(const pb_game_t *g, int max_batch, pb_err_t *err) {
  if (g == NULL || max_batch < 1 || max_batch > (1 << 20)) {
    pb_err_set(err, PB_EINVAL, "pveval: need a game and max_batch 1..2^20");
    return NULL;
  }
  pb_pveval_t *pe = calloc(1, sizeof *pe);
  size_t in_size = (size_t)g->planes * g->height * g->width;
  if (pe != NULL) {
    pe->g = g;
    pe->max_batch = max_batch;
    pe->in = malloc((size_t)max_batch * in_size * sizeof *pe->in);
    pe->out = malloc((size_t)max_batch * (g->num_actions + 1) * sizeof *pe->out);
  }
  if (pe == NULL || pe->in == NULL || pe->out == NULL) {
    pb_pveval_destroy(&pe);
    pb_err_set(err, PB_ENOMEM, "pveval: out of memory");
    return NULL;
  }
  return pe;
}

void pb_pveval_destroy(pb_pveval_t **ppe) {
  if (ppe == NULL || *ppe == NULL) return;
  free((*ppe)->in);
  free((*ppe)->out);
  free(*ppe);
  *ppe = NULL;
}

int pb_pveval_bind(pb_pveval_t *pe, pb_nn_t *nn, pb_err_t *err) {
  const pb_nn_spec_t *s = nn ? pb_nn_spec(nn) : NULL;
  const pb_game_t *g = pe->g;
  if (s == NULL || s->head != PB_NN_HEAD_PV ||
      s->outputs != g->num_actions + 1 || s->planes != g->planes ||
      s->height != g->height || s->width != g->width)
    return pb_err_set(err, PB_EMISMATCH,
                      "pveval: not a policy+value network for %s (head %d, "
                      "%d outputs; want head %d, %d outputs)",
                      g->name, s ? s->head : 0, s ? s->outputs : 0,
                      PB_NN_HEAD_PV, g->num_actions + 1);
  pe->nn = nn;
  return 0;
}

static int pv_eval(void *ctx, const pb_state_t *states, int n, float *policy,
                float *value, pb_err_t *err) {
  pb_pveval_t *pe = ctx;
  const pb_game_t *g = pe->g;
  const int A = g->num_actions;
  const size_t in_size = (size_t)g->planes * g->height * g->width;
  if (pe->nn == NULL)
    return pb_err_set(err, PB_EINVAL, "pveval: no network bound");
  if (pe->deadline > 0 && pb_now() > pe->deadline)
    return pb_err_set(err, PB_ERANGE, "pveval: past the search's deadline");
  if (pe->stop != NULL && atomic_load_explicit(pe->stop, memory_order_relaxed))
    return pb_err_set(err, PB_EINTR, "pveval: the search was stopped");
  for (int f = 0; f < n; f += pe->max_batch) {
    int m = n - f < pe->max_batch ? n - f : pe->max_batch;
    pb_assert(m >= 1 && m <= pe->max_batch); /* the rows of pe->in */
    for (int i = 0; i < m; i++) g->encode(&states[f + i], &pe->in[i * in_size]);
    int rc = pb_nn_forward(pe->nn, pe->in, m, pe->out, err);
    if (rc != 0) return rc;
    pe->calls++;
    pe->positions += (uint64_t)m;
    for (int i = 0; i < m; i++) {
      const float *row = &pe->out[(size_t)i * (A + 1)];
      memcpy(&policy[(size_t)(f + i) * A], row, (size_t)A * sizeof *row);
      value[f + i] = row[A];
    }
  }
  return 0;
}

void pb_pveval_set_stop(pb_pveval_t *pe, const atomic_int *stop) {
  pe->stop = stop;
}

void pb_pveval_set_deadline(pb_pveval_t *pe, double until) {
  pe->deadline = until > 0 ? until : 0;
}

pb_mcts_evalfn_t pb_pveval_fn(pb_pveval_t *pe) {
  pb_mcts_evalfn_t fn = {pv_eval, pe};
  return fn;
}

uint64_t pb_pveval_positions(const pb_pveval_t *pe) { return pe->positions; }
uint64_t pb_pveval_calls(const pb_pveval_t *pe) { return pe->calls; }
