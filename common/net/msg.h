/* msg.h - the wire messages (proto/probs.proto) as plain C structs, and
 * their strict codec.
 *
 * Every message is one envelope: a header (protocol version, run id, game
 * id, sender id) and one body. Only common/net/msg*.c see the protoc-c generated
 * code; everyone else fills and reads a pb_msg_t.
 *
 * Ownership. A pb_msg_t that the caller fills for pb_msg_encode only
 * borrows: its pointers (states, episodes, qvalues, item ids, weights) stay
 * the caller's and encode never frees them. A pb_msg_t filled by
 * pb_msg_decode owns what its pointers point to until pb_msg_free.
 *
 * Positions are pb_state_t on both sides; on the wire they travel in the
 * game's packed form (state_bytes each), concatenated into one bytes field
 * per episode or work item. Decoding unpacks and validates every one of
 * them with the game's `unpack`, so what comes out is safe to step.
 *
 * Decoding is strict, since the bytes come from the network: a peer can
 * make decode fail but never crash it, read out of bounds or allocate much
 * more than it sent. Errors (and the peer's sender id, when the header is
 * readable) go into the caller's pb_err_t, for the caller to log with the
 * peer's address before dropping the message:
 *   PB_EPROTO     not a valid message: protobuf unpack failed, a required
 *                 part is missing, a size is inconsistent with the game or
 *                 over a cap, an enum or string is out of range, a position
 *                 is impossible, an episode is not one game (see
 *                 pb_msg_episode_t), a Q target is not finite.
 *   PB_EMISMATCH  a valid message not meant for us: other protocol version,
 *                 run id or game (the message names the field and both
 *                 values). The learner may answer with a Reject.
 *   PB_ENOMEM     out of memory.
 *
 * Tuned for: a few thousand messages per second per process, payloads of
 * tens to hundreds of positions; weights buffers of a few MB travel
 * without extra copies on decode.
 */
#ifndef PB_MSG_H
#define PB_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "bounds.h"
#include "err.h"
#include "game.h"

/* 2: HelloReply carries the run's config as YAML instead of its settings
 * one field each. 3: SearchWork carries the positions and the versions
 * only (the search's settings are the run's config). A peer of another
 * version is refused (PB_EMISMATCH naming both versions). */
#define PB_PROTOCOL_VERSION 3

/* Limits, enforced by encode (PB_EINVAL) and decode (PB_EPROTO). Strings
 * are counted in bytes without the terminating NUL. */
#define PB_MSG_ID_MAX 64                /* run_id, sender_id */
#define PB_MSG_HOST_MAX 255             /* Hello.hostname */
#define PB_MSG_TEXT_MAX 511             /* free text: fits a pb_err_t message */
#define PB_MSG_MAX_BYTES (512u << 20)   /* one encoded message */
#define PB_MSG_MAX_WEIGHTS (256u << 20) /* each weights buffer */
/* The bounds a config shares with the wire are bounds.h's. */
#define PB_MSG_MAX_STATES PB_ITEM_MAX_STATES     /* search item / result */
#define PB_MSG_MAX_EPISODES PB_ITEM_MAX_EPISODES /* self-play item / result */
#define PB_MSG_MAX_ITEM_IDS 4096 /* item ids in one heartbeat */
#define PB_MSG_MAX_THREADS PB_NN_MAX_THREADS /* Hello.threads: model.threads */
#define PB_MSG_MAX_CAPACITY (1u << 20) /* WorkRequest.capacity */
#define PB_MSG_MAX_LEASE_MS PB_LEASE_MAX_MS
#define PB_MSG_MAX_RETRY_MS PB_HEARTBEAT_MAX_MS /* net.heartbeat_ms */

/* Message types: which member of pb_msg_t's union is in use. */
enum {
  PB_MSG_NONE = 0,
  PB_MSG_HELLO,
  PB_MSG_HELLO_REPLY,
  PB_MSG_WORK_REQUEST,
  PB_MSG_WORK_ITEM,
  PB_MSG_NO_WORK,
  PB_MSG_SELFPLAY_RESULT,
  PB_MSG_SEARCH_RESULT,
  PB_MSG_HEARTBEAT,
  PB_MSG_WEIGHTS_REQUEST,
  PB_MSG_WEIGHTS,
  PB_MSG_ANNOUNCE,
  PB_MSG_REJECT,
  PB_MSG_BYE,
  PB_MSG_TYPE_COUNT
};

/* Hello.role and WorkRequest.role. */
enum { PB_ROLE_ACTOR = 1, PB_ROLE_SEARCHER = 2, PB_ROLE_EVALUATOR = 3 };

/* WorkItem.kind. */
enum { PB_WORK_SELFPLAY = 1, PB_WORK_SEARCH = 2 };

/* WeightsRequest.which: a bit set. */
enum { PB_WHICH_V = 1, PB_WHICH_Q = 2, PB_WHICH_BOTH = 3 };

/* Announce.phase: the steps of one iteration (common/algo/iteration.h),
 * named by what they do whatever the algorithm. */
enum {
  PB_PHASE_SELFPLAY = 1,       /* actors play the iteration's games */
  PB_PHASE_PREPARE_SEARCH = 2, /* the learner trains what the search needs
                                  and picks the positions to search */
  PB_PHASE_SEARCH = 3,         /* searchers compute training targets */
  PB_PHASE_TRAIN = 4,    /* the learner trains on the iteration's data and
                            saves a checkpoint */
  PB_PHASE_STOPPING = 5, /* the run ends: workers say Bye and exit */
};

typedef struct pb_msg_header {
  uint32_t protocol_version;         /* PB_PROTOCOL_VERSION */
  char run_id[PB_MSG_ID_MAX + 1];    /* "" only in a Hello */
  int game_id;                       /* PB_GAME_*; 0 only in a Hello */
  char sender_id[PB_MSG_ID_MAX + 1]; /* never "" */
} pb_msg_header_t;

/* A start id is the run id of one start of a learner ("NAME-XXXXXXXX",
 * common/run/rundir.h): header.run_id names the run (run.name), the start id which
 * of its starts. Printable ASCII, <= PB_MSG_ID_MAX bytes. */
typedef struct pb_msg_hello {
  int role;         /* PB_ROLE_* */
  uint32_t threads; /* 1..PB_MSG_MAX_THREADS */
  uint32_t pid;
  char hostname[PB_MSG_HOST_MAX + 1];
  /* the start the worker was given; "": any start of header.run_id */
  char start_id[PB_MSG_ID_MAX + 1];
} pb_msg_hello_t;

typedef struct pb_msg_hello_reply {
  int accepted; /* 0 or 1 */
  char message[PB_MSG_TEXT_MAX + 1];
  uint64_t version; /* model version currently published */
  char start_id[PB_MSG_ID_MAX + 1]; /* the learner's start ("" if unsaid) */
  /* The run's config as YAML (common/run/config.h: pb_config_to_yaml),
   * config_len bytes without a NUL among them and NUL-terminated; at most
   * PB_MSG_MAX_CONFIG. Required (non-empty) when accepted; the decoder
   * checks the text, the worker parses it (pb_config_load_string). */
  const char *config;
  size_t config_len;
} pb_msg_hello_reply_t;

#define PB_MSG_MAX_CONFIG (256u << 10)

typedef struct pb_msg_work_request {
  int role;          /* PB_ROLE_* */
  uint32_t capacity; /* units wanted at most; 0 = any */
} pb_msg_work_request_t;

typedef struct pb_msg_work_item {
  uint64_t item_id;
  uint32_t lease_ms; /* 1..PB_MSG_MAX_LEASE_MS */
  int kind;          /* PB_WORK_* */
  uint64_t q_version;
  /* PB_WORK_SELFPLAY */
  uint32_t episodes; /* 1..PB_MSG_MAX_EPISODES */
  uint64_t seed;
  double td_epsilon; /* td: share of random moves, [0, 1] (0 otherwise) */
  /* PB_WORK_SEARCH: the positions and the networks to search them with;
   * how (the search and its settings) is the run's config. */
  const pb_state_t *states; /* n_states positions */
  uint32_t n_states;        /* 1..PB_MSG_MAX_STATES */
  uint64_t v_version;
} pb_msg_work_item_t;

typedef struct pb_msg_no_work {
  uint32_t retry_ms; /* <= PB_MSG_MAX_RETRY_MS */
} pb_msg_no_work_t;

/* One self-play game. states are the positions s_0..s_{T-1} where a move
 * was chosen, so each is not terminal and s_{t+1} follows s_t by one legal
 * move. final_reward is the reward of the last move (played from
 * s_{T-1}) for its mover; 0 also covers a game cut off at max_turns.
 * Decode enforces all of this: a nonzero final_reward must be what some
 * legal move from s_{T-1} gives. s_0 need not be the initial position. */
typedef struct pb_msg_episode {
  const pb_state_t *states;
  uint32_t n_states; /* T: 1..game max_turns */
  int final_reward;  /* -1, 0 or +1 */
  uint64_t q_version;
  /* AlphaZero: [n_states][num_actions] visit distributions (finite, in
   * [0, 1], 0 on illegal actions, each row summing to 1 within 1e-3), or
   * NULL (PROBS). Decode enforces this. */
  const float *policy;
} pb_msg_episode_t;

typedef struct pb_msg_selfplay_result {
  uint64_t item_id;
  const pb_msg_episode_t *episodes;
  uint32_t n_episodes; /* 1..PB_MSG_MAX_EPISODES */
} pb_msg_selfplay_result_t;

typedef struct pb_msg_search_result {
  uint64_t item_id;
  uint32_t n_states;    /* 1..PB_MSG_MAX_STATES */
  uint32_t n_actions;   /* the game's num_actions */
  const float *qvalues; /* [n_states][n_actions], finite; illegal = 0 */
} pb_msg_search_result_t;

typedef struct pb_msg_heartbeat {
  const uint64_t *item_ids;
  uint32_t n_item_ids; /* <= PB_MSG_MAX_ITEM_IDS */
} pb_msg_heartbeat_t;

typedef struct pb_msg_weights_request {
  uint64_t version;
  int which; /* PB_WHICH_* */
} pb_msg_weights_request_t;

/* The buffers are pb_nn_weights_save output, opaque here; a buffer that was
 * not asked for is empty (NULL, 0). Each <= PB_MSG_MAX_WEIGHTS. */
typedef struct pb_msg_weights {
  uint64_t version;
  const uint8_t *v_weights;
  size_t v_len;
  const uint8_t *q_weights;
  size_t q_len;
} pb_msg_weights_t;

typedef struct pb_msg_announce {
  uint64_t version;
  uint32_t iteration;
  int phase; /* PB_PHASE_* */
} pb_msg_announce_t;

typedef struct pb_msg_reject {
  int code; /* a negative PB_E* code */
  char message[PB_MSG_TEXT_MAX + 1];
} pb_msg_reject_t;

typedef struct pb_msg_bye {
  char reason[PB_MSG_TEXT_MAX + 1];
} pb_msg_bye_t;

typedef struct pb_msg {
  int type; /* PB_MSG_* */
  pb_msg_header_t header;
  union {
    pb_msg_hello_t hello;
    pb_msg_hello_reply_t hello_reply;
    pb_msg_work_request_t work_request;
    pb_msg_work_item_t work_item;
    pb_msg_no_work_t no_work;
    pb_msg_selfplay_result_t selfplay_result;
    pb_msg_search_result_t search_result;
    pb_msg_heartbeat_t heartbeat;
    pb_msg_weights_request_t weights_request;
    pb_msg_weights_t weights;
    pb_msg_announce_t announce;
    pb_msg_reject_t reject;
    pb_msg_bye_t bye;
  };
  /* Private to common/net/msg*.c: what decode allocated (NULL when borrowed). */
  void *pb__mem;
  void *pb__unpacked;
} pb_msg_t;

/* What a decoder accepts. run_id NULL or "" accepts any run, game_id 0 any
 * known game (a worker before its Hello is answered). A NULL expect
 * accepts any run and game. */
typedef struct pb_msg_expect {
  const char *run_id;
  int game_id;
} pb_msg_expect_t;

/* A reusable output buffer for pb_msg_encode_buf, so that a hot path does
 * not allocate per message once the buffer has grown. Zero-initialise it
 * ({0}); data[0..len) holds the last message encoded into it; release it
 * with pb_msg_buf_free. Not shared between threads. */
typedef struct pb_msg_buf {
  uint8_t *data;
  size_t len, cap;
  void *scratch; /* private: packed states and protobuf-c structs */
  size_t scratch_cap;
} pb_msg_buf_t;

/* Zeroes *m and fills its header: the current protocol version, run_id and
 * sender_id (copied, truncated to PB_MSG_ID_MAX; NULL = ""), game_id, and
 * type. Bodies are then filled by the caller. */
void pb_msg_init(pb_msg_t *m, int type, const char *run_id, int game_id,
                 const char *sender_id);

/* Encodes *m into a malloc'd buffer: *out (the caller free()s it) and
 * *len. The header is written as given (protocol_version included). States
 * are packed with the game named by header.game_id. Checks strings, enums,
 * counts and sizes against the limits above and returns PB_EINVAL naming
 * the field if one is off (*out is then NULL); PB_ENOMEM. Does not check
 * that positions are legal or episodes consistent: decode does. */
int pb_msg_encode(const pb_msg_t *m, uint8_t **out, size_t *len, pb_err_t *err);

/* As pb_msg_encode, into buf->data[0..buf->len), growing buf as needed.
 * On error buf->len is 0 and buf stays valid. */
int pb_msg_encode_buf(const pb_msg_t *m, pb_msg_buf_t *buf, pb_err_t *err);

/* Frees what buf holds and zeroes it; accepts NULL and a zeroed buf. */
void pb_msg_buf_free(pb_msg_buf_t *buf);

/* Decodes and validates len bytes from the network into *out (see the top
 * comment for the checks and codes). On success *out owns its arrays until
 * pb_msg_free(out); buf is not referenced afterwards. On failure *out is
 * zeroed except out->header, which holds the sender's header when it could
 * be read (for logging), and nothing needs freeing (pb_msg_free is still
 * safe). A Hello may carry an empty run_id and game_id 0; any other message
 * must name a run and a known game. */
int pb_msg_decode(const uint8_t *buf, size_t len, const pb_msg_expect_t *expect,
                  pb_msg_t *out, pb_err_t *err);

/* Releases what pb_msg_decode allocated and zeroes *m. Accepts NULL, a
 * zeroed message, a message filled by the caller (frees nothing of it) and
 * a message already freed. */
void pb_msg_free(pb_msg_t *m);

/* Name of a message type ("SelfplayResult"); "Unknown" for others. */
const char *pb_msg_type_name(int type);

/* Name of a role ("actor", "searcher", "evaluator"); "unknown" otherwise. */
const char *pb_msg_role_name(int role);

/* The largest message a worker of a run can send in good faith: a
 * self-play result of item_episodes episodes of at most max_turns moves,
 * or a search result of item_states positions, with a factor 2 and 64 KiB
 * of headroom. The learner refuses anything larger at the socket
 * (ZMQ_MAXMSGSIZE: the peer is disconnected before a byte is buffered). */
size_t pb_msg_max_worker_bytes(const pb_game_t *g, int item_episodes,
                               int max_turns, int item_states);

#endif
