/* engine.h - the batch analysis engine behind `probs analysis`: JSON
 * queries in, one line each, JSON answers out, one line each, many
 * queries answered together so that their network calls are batched
 * (KataGo's analysis engine is the model). docs/analysis.md is the
 * protocol: the fields of a query, of an answer and of an error.
 *
 * An engine borrows a checkpoint's networks (pb_model_t) and answers for
 * that checkpoint's game. pb_engine_query reads one query line: a bad one
 * (not JSON, a field unknown, missing, of the wrong type or out of range,
 * a move that is not legal, an agent spec that cannot be made) is answered
 * at once with an error object naming the field, and the engine goes on;
 * a good one waits. The waiting queries are answered together when
 * `batch` of them wait (pb_engine_query) or when the caller says that no
 * more are coming for now (pb_engine_flush), in the order they came. So
 * an error may overtake the answers of earlier queries: each answer
 * carries its query's id.
 *
 * Answering a batch, the engine makes
 *   - one network call for the V of every position that asks for it (an
 *     AlphaZero checkpoint: one call of its policy+value network for the
 *     value and the policy), one for every Q, and one for the children of
 *     every position that asks for values one ply deep (the evaluators
 *     split a call into chunks of at most PB_ENGINE_CHUNK positions; V
 *     and Q are cached, so a position asked for again costs nothing);
 *   - per agent spec in the batch, its moves: the network agents that
 *     answer many positions at once (checkpoint, value, beam, mcts:
 *     pb_agent_act_many, whose beam searches and MCTS run together, one
 *     network call per round for all of the spec's positions) get all of
 *     the spec's positions in one call; the others (abnet, bpip, the
 *     baselines) are asked one position at a time, each with its query's
 *     seed.
 * The agents of the last PB_ENGINE_AGENTS specs are kept, so a spec's
 * checkpoint is read once, not per query.
 *
 * KataGo's analysis protocol is spoken beside probs's own fields where it
 * applies (maxVisits, analyzeTurns, priority, includePolicy,
 * reportDuringSearchEvery; moveInfos, rootInfo, turnNumber,
 * isDuringSearch; the actions terminate, query_version and clear_cache):
 * docs/analysis.md. Within a batch the searches and the answers of the
 * highest priority come first. A query with reportDuringSearchEvery gets
 * partial answers (isDuringSearch true) through emit while its abnet or
 * mcts search runs, then its one final answer.
 *
 * Workload: an interactive or scripted stream of queries; the buffers of
 * a batch are allocated by pb_engine_new; libtorch, the agents and the
 * JSON reader allocate as they need. One thread at a time. */
#ifndef PB_ENGINE_H
#define PB_ENGINE_H

#include <stddef.h>

#include "err.h"
#include "model.h"

/* Queries answered together at most, and the default. */
#define PB_ENGINE_MAX_BATCH 1024
#define PB_ENGINE_DEFAULT_BATCH 64
/* Positions in one network call at most. */
#define PB_ENGINE_CHUNK 1024
/* Agent specs whose agents are kept at once. */
#define PB_ENGINE_AGENTS 8
/* The longest query line (bytes, without its newline) and the longest
 * agent spec a query may give. */
#define PB_ENGINE_MAX_LINE 65536
#define PB_ENGINE_MAX_SPEC 4096
/* The time bound of an agent's search (ms): the largest, and the default
 * of `probs analysis --time-limit` (pb_engine_new sets none). */
#define PB_ENGINE_MAX_TIME_MS 3600000
#define PB_ENGINE_DEFAULT_TIME_MS 10000

typedef struct pb_engine pb_engine_t;

/* Where the engine writes each answer: one JSON object of len bytes
 * without its newline (line[len] is '\0'). Returns 0, or a negative PB_E*
 * code that stops the engine (the caller's output is gone). */
typedef int (*pb_engine_emit_fn)(void *ctx, const char *line, size_t len);

/* An engine over model m (borrowed: it must outlive the engine), whose
 * file is model_path (the network agents of the queries read it; copied),
 * answering up to `batch` queries together (1..PB_ENGINE_MAX_BATCH),
 * writing every answer through emit(ctx, ...). NULL with err filled:
 * PB_EINVAL (a bad batch, a NULL argument), PB_ENOMEM, or the
 * evaluators' error. */
pb_engine_t *pb_engine_new(pb_model_t *m, const char *model_path, int batch,
                           pb_engine_emit_fn emit, void *ctx, pb_err_t *err);

/* Bounds the time of the agents' searches (the moves that "move"
 * reports) to ms milliseconds (0: no bound, the default of pb_engine_new;
 * at most PB_ENGINE_MAX_TIME_MS), so that a query of a huge budget cannot
 * keep the engine from the next one: an abnet agent answers with the
 * deepest iteration it completed by then; a beam, mcts or bpip search
 * still running at the bound stops, and its queries get an error naming
 * the bound (field "agent"). The bound is per agent call: the positions
 * of one spec that a batched kind (beam, mcts) answers together share it;
 * the one-position kinds get it for each query. The other kinds are
 * bounded by their budgets' ranges (pb_agent_set_time_bound). Returns 0
 * or PB_EINVAL. */
int pb_engine_set_time_bound(pb_engine_t *e, int ms);

/* Stopping searches from another thread. These three may be called from
 * any thread while the engine's own thread answers (the rest of the
 * engine is one thread's); pb_engine_stop also from a signal handler.
 *
 * pb_engine_notice: the caller saw line[0..n) coming (it will give it to
 * pb_engine_query later, in its turn): if it is a terminate action, the
 * searches of the waiting queries it names stop now (those of the
 * network kinds, which check a flag: abnet, beam, mcts, bpip; the
 * others finish their search), and those queries are answered
 * {"id", "turnNumber", "isDuringSearch": false, "noResults": true}. A
 * search of the same agent call that it does not name is made again.
 * Any other line is ignored. At most 64 terminates wait to be applied;
 * more are applied when pb_engine_query reads them.
 *
 * pb_engine_stop: every search now and later stops at its next check,
 * and its query is answered noResults; the caller then stops feeding
 * queries. pb_engine_stopping: whether pb_engine_stop was called. */
void pb_engine_notice(pb_engine_t *e, const char *line, size_t n);
void pb_engine_stop(pb_engine_t *e);
int pb_engine_stopping(const pb_engine_t *e);

/* Frees the engine and its agents (not the model); waiting queries are
 * dropped unanswered (flush first). Accepts NULL, nulls *e. */
void pb_engine_destroy(pb_engine_t **e);

/* Reads one query, line[0..n) (without its newline; it need not be
 * NUL-terminated and may hold any bytes). A bad query is answered at once
 * with an error object; a good one waits, and a full batch is answered.
 * A line of blanks (spaces, tabs, CRs) or nothing is no query: nothing is
 * answered.
 * Returns 0 (the query was answered or waits), or a code that stops the
 * engine, err filled: PB_ENOMEM, or emit's error. A network or agent that
 * fails while answering a batch is reported in the answers of the queries
 * it concerns (an error object each), not here. */
int pb_engine_query(pb_engine_t *e, const char *line, size_t n, pb_err_t *err);

/* Answers a line the caller could not read as a query (too long) with an
 * error object whose id is null and whose "error" is message. Returns 0
 * or emit's error. */
int pb_engine_refuse(pb_engine_t *e, const char *message, pb_err_t *err);

/* Answers every waiting query. Returns 0 or a code that stops the
 * engine, as pb_engine_query. */
int pb_engine_flush(pb_engine_t *e, pb_err_t *err);

/* The queries waiting for an answer. */
int pb_engine_waiting(const pb_engine_t *e);

/* Counters since the engine was made: queries answered (errors
 * included), error objects written, batches answered, and the network
 * calls of the batches' values (V, Q, policy+value; not the agents'). */
typedef struct pb_engine_stats {
  unsigned long long queries, errors, batches, net_calls;
} pb_engine_stats_t;
void pb_engine_stats(const pb_engine_t *e, pb_engine_stats_t *st);

#endif
