/* engine_impl.h - what engine.c (batches, agents, answers) and
 * engine_query.c (reading one query) share. Private to them. */
#ifndef PB_ENGINE_IMPL_H
#define PB_ENGINE_IMPL_H

#include <stdint.h>

#include "agent.h"
#include "engine.h"
#include "game.h"
#include "json.h"
#include "jsonread.h"
#include "neteval.h"
#include "pveval.h"

/* The values a query asks for ("report"). */
enum {
  PB__ENGINE_V = 1,      /* "v": V, or the value head */
  PB__ENGINE_Q = 2,      /* "q": Q of every legal move (PROBS) */
  PB__ENGINE_POLICY = 4, /* "policy": the policy's probabilities (AZ) */
  PB__ENGINE_V1 = 8,     /* "v1": values one ply deep */
  PB__ENGINE_MOVE = 16   /* "move": the agent's move */
};

/* One good query, waiting for its answer. */
typedef struct pb__engine_query {
  char *id;        /* the id's JSON text as given (malloc'd) */
  pb_state_t s;    /* the position */
  int over;        /* 1: the game is over in s (no values) */
  unsigned report; /* PB__ENGINE_* */
  int agent;       /* its agent's slot in e->agents, -1: none */
  char *spec;      /* the agent spec as the query gave it, with its budget
                      (malloc'd; NULL: none) */
  char *full;      /* spec with the engine's model where it names none
                      (malloc'd; NULL: none): engine.c makes its agent */
  uint64_t seed;   /* the agent's seed */
} pb__engine_query_t;

/* A kept agent. */
typedef struct pb__engine_agent {
  char *spec; /* the full spec it was made from (NULL: slot free) */
  pb_agent_t *a;
  uint64_t used; /* when a query last asked for it */
  int waiting;   /* waiting queries that use it */
} pb__engine_agent_t;

struct pb_engine {
  pb_model_t *m;
  const pb_game_t *g;
  int az; /* an AlphaZero checkpoint */
  char *model_path;
  int batch;
  int bound_ms;          /* each agent call's time bound; 0: none */
  pb_engine_emit_fn emit;
  void *ctx;
  pb_jsonr_t *jr;
  pb_json_t out;         /* the answer being written */
  pb_neteval_t *ne;      /* PROBS: V and Q, batched and cached */
  pb_pveval_t *pve;      /* AlphaZero: policy and value */
  pb__engine_query_t *q; /* the waiting queries */
  int nq;
  pb__engine_agent_t agents[PB_ENGINE_AGENTS];
  uint64_t tick;
  /* The buffers of a batch (batch rows; kids: batch * num_actions). */
  pb_state_t *pos, *kids;
  int *pos_of, *kid_of, *kid_act, *moves;
  float *v, *qv, *policy, *v1, *kid_v, *chunk_logits;
  pb_err_t *fail;          /* per query: why answering failed (code 0:
                              it did not) */
  const char **fail_field; /* and the field at fault, or NULL */
  int fatal;               /* a code that stops the engine (0: none) */
  pb_engine_stats_t st;
};

/* Reads query line[0..n) into *q (zeroed first; its id and specs
 * malloc'd, to be freed by pb__engine_query_free even on error; its agent
 * is not made yet, q->agent is -1). Returns
 * 0, or a PB_E* code with err filled and *field set to the field at fault
 * (NULL: the query as a whole). The error is the query's fault unless
 * e->fatal is set (out of memory, or emit failed while answering the
 * waiting queries to free an agent's slot): that stops the engine. */
int pb__engine_parse(pb_engine_t *e, const char *line, size_t n,
                     pb__engine_query_t *q, const char **field, pb_err_t *err);

/* Frees a query's strings. */
void pb__engine_query_free(pb__engine_query_t *q);

#endif
