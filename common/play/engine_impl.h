/* engine_impl.h - what engine.c (batches, agents, answers) and
 * engine_query.c (reading one query) share. Private to them. */
#ifndef PB_ENGINE_IMPL_H
#define PB_ENGINE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
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
  int turn;        /* its turnNumber: the moves played to reach it */
  int priority;    /* higher: searched and answered first in its batch */
  int policy_arr;  /* includePolicy: the whole policy, KataGo's shape */
  double every;    /* reportDuringSearchEvery (s); 0: no partial answers */
  int terminated;  /* a terminate action named it: answered noResults */
  int stopped;     /* its search was stopped (terminate or stop) */
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
  int stoppable; /* its searches stop at e->intr (pb_agent_set_stop) */
} pb__engine_agent_t;

/* Terminate actions seen by pb_engine_notice, not yet applied. */
#define PB__ENGINE_NOTICES 64
typedef struct pb__engine_notice {
  char *id;       /* terminateId's JSON text (malloc'd) */
  int *turns;     /* turnNumbers (malloc'd; NULL: every turn) */
  int nturns;
} pb__engine_notice_t;

/* What a query line asked for, besides a query of positions. */
enum { PB__ENGINE_ACT_NONE = 0, PB__ENGINE_ACT_TERMINATE,
       PB__ENGINE_ACT_VERSION, PB__ENGINE_ACT_CLEAR };

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
  pb_agent_info_t *info;   /* per query: its agent's search */
  int *order;              /* scratch: queries by priority */
  const int *prog_of;      /* the agent call under way: its positions'
                              queries (for partial answers) */
  /* Stopping searches from other threads (pb_engine_notice, _stop). */
  atomic_int intr;         /* 0; 1: a terminate was noticed; 2: stop */
  pthread_mutex_t lock;    /* guards notices and njr */
  pb_jsonr_t *njr;         /* pb_engine_notice's reader */
  pb__engine_notice_t notices[PB__ENGINE_NOTICES];
  int nnotices;
  /* The expansion of analyzeTurns: the moves of the query being read. */
  int *acts;
  int acts_cap;
};

/* Reads the action of a query line that has "action" (root: the line's
 * object, id: its id's text) and answers it. Returns 0 or a code that
 * stops the engine. engine_actions.c. */
int pb__engine_action(pb_engine_t *e, const pb_jval_t *root, const char *line,
                      size_t n, pb_err_t *err);

/* Marks the waiting queries that a terminate of id (JSON text; turns
 * [0..nturns), NULL: all) names as terminated; returns how many. */
int pb__engine_mark_terminated(pb_engine_t *e, const char *id,
                               const int *turns, int nturns);

/* Applies the noticed terminates to the waiting queries and lowers intr
 * from 1 to 0. engine_actions.c. */
void pb__engine_take_notices(pb_engine_t *e);

/* Writes the object built in e->out; an error object. engine.c. */
int pb__engine_send(pb_engine_t *e, pb_err_t *err);
int pb__engine_send_error(pb_engine_t *e, const char *id, const char *field,
                          const char *msg, pb_err_t *err);

/* The answer of waiting query i into e->out; during: a partial one
 * (isDuringSearch true). engine_answer.c. */
void pb__engine_answer(pb_engine_t *e, int i, int during);

/* Reads query line[0..n) into *q (its analyzeTurns, if any, into *turns,
 * malloc'd, *nturns of them, and the moves into e->acts) (zeroed first; its id and specs
 * malloc'd, to be freed by pb__engine_query_free even on error; its agent
 * is not made yet, q->agent is -1). Returns
 * 0, or a PB_E* code with err filled and *field set to the field at fault
 * (NULL: the query as a whole). The error is the query's fault unless
 * e->fatal is set (out of memory, or emit failed while answering the
 * waiting queries to free an agent's slot): that stops the engine. */
int pb__engine_parse(pb_engine_t *e, const char *line, size_t n,
                     pb__engine_query_t *q, int **turns, int *nturns,
                     const char **field, pb_err_t *err);

/* Frees a query's strings. */
void pb__engine_query_free(pb__engine_query_t *q);

#endif
