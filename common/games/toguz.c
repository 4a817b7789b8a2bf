/* toguz.c - Toguz Kumalak (Togyz kumalak), the Kazakh mancala game.
 *
 * Rules (Wikipedia, "Togyz kumalak", the reference the paper cites):
 * - Two rows of 9 holes (otau), 9 stones (kumalak) in each at the start,
 *   and a store (kazna) per player; 162 stones in all. South ('X') moves
 *   first.
 * - A move takes all the stones of one of the mover's non-empty holes and
 *   sows them one by one counter-clockwise (the mover's holes 1..9, then
 *   the opponent's 1..9, then the mover's again), the first stone back
 *   into the emptied hole; a hole with a single stone passes it on to the
 *   next hole instead.
 * - If the last stone lands in an opponent's hole and makes its count
 *   even, the mover captures the hole's stones into the kazna.
 * - If it makes the count exactly 3, the hole becomes the mover's tuzdyk
 *   (its stones go to the kazna), unless the mover already has one (one
 *   per player, for the whole game), the hole is the opponent's 9th, or it
 *   has the same number as the opponent's tuzdyk (hole k of the mover's
 *   side). A stone sown into a tuzdyk, by either player, goes to the kazna
 *   of its owner.
 * - The game ends when a kazna holds 82 stones or more (that player wins),
 *   or when the side to move has no stone to move: the stones left on the
 *   other side go to that side's kazna, and then 82+ wins and 81-81 is a
 *   draw. (With 162 stones a draw is only 81-81.)
 * Games can go on forever in principle; matches and self-play stop them
 * at max_turns (1000 plies), which nothing reaches in practice.
 *
 * Position, from the side to move, as bytes of pb_state_t (b = w as
 * uint8_t[32]; little-endian in the packed form):
 *   b[0..8]   the mover's holes 1..9       b[9..17]  the opponent's 1..9
 *   b[18]     the mover's kazna            b[19]     the opponent's kazna
 *   b[20]     the mover's tuzdyk: 0 none, or k = the opponent's hole k
 *   b[21]     the opponent's tuzdyk: 0, or k = the mover's hole k
 *   b[22..23] ply (moves played), b[24..31] zero
 * Sowing walks the 18 holes in index order, 17 wrapping to 0. South moves
 * when the ply is even. Actions 0..8 take hole 1..9 of the mover.
 *
 * Network input: 17 planes of 2 x 9 (rows: the mover's holes 1..9, then
 * the opponent's 9..1, so that the board is drawn as it stands and the
 * holes facing each other share a column), per hole: planes 0-11 count >=
 * 1..12 (exact for the small counts where captures and tuzdyks happen),
 * 12 count / 20 (larger piles), 13 count odd (the next stone makes it
 * even), 14 the hole is a tuzdyk (on the opponent's row: the mover's), and
 * constant planes 15 the mover's kazna / 82, 16 the opponent's / 82.
 * 306 inputs for the paper's 1530 (18 x 84 one-hot counts + 2 x 9): the
 * same information, in a shape convolutions can use. */
#include <string.h>

#include "game.h"
#include "invariant.h"
#include "rng.h"

enum {
  TK_HOLES = 9,
  TK_ALL = 18,
  TK_STONES = 162,
  TK_WIN = 82,
  TK_KAZ = 18,   /* b[TK_KAZ + 0] mover, + 1 opponent */
  TK_TUZ = 20,   /* b[TK_TUZ + 0] mover, + 1 opponent */
  TK_PLY = 22,
  TK_MAX_PLY = 1000,
  TK_PLANES = 17,
};

static uint8_t *tk_b(pb_state_t *s) {
  return (uint8_t *)s->w;
}

static const uint8_t *tk_cb(const pb_state_t *s) {
  return (const uint8_t *)s->w;
}

static int tk_get_ply(const uint8_t *b) {
  return b[TK_PLY] | (b[TK_PLY + 1] << 8);
}

static void tk_reset(pb_state_t *s) {
  memset(s, 0, sizeof *s);
  memset(tk_b(s), 9, TK_ALL);
}

static int tk_side_stones(const uint8_t *b, int side) {
  int n = 0;
  for (int i = 0; i < TK_HOLES; i++) n += b[side * TK_HOLES + i];
  return n;
}

/* The result for a player whose kazna ends with `mine` stones. */
static float tk_result(int mine) {
  return mine >= TK_WIN ? 1.0f : mine == TK_STONES / 2 ? 0.0f : -1.0f;
}

static int tk_terminal(const pb_state_t *s, float *reward) {
  const uint8_t *b = tk_cb(s);
  int mine = b[TK_KAZ], theirs = b[TK_KAZ + 1];
  if (mine >= TK_WIN || theirs >= TK_WIN) {
    *reward = mine >= TK_WIN ? 1.0f : -1.0f;
    return 1;
  }
  if (tk_side_stones(b, 0) == 0) {
    /* The opponent's stones go to the opponent's kazna: mine is final. */
    *reward = tk_result(mine);
    return 1;
  }
  *reward = 0.0f;
  return 0;
}

/* One pass: the holes with stones are the moves, unless a kazna holds 82
 * (then the game is over; no stones on the mover's side is too). */
static int tk_legal(const pb_state_t *s, uint8_t *actions) {
  const uint8_t *b = tk_cb(s);
  if (b[TK_KAZ] >= TK_WIN || b[TK_KAZ + 1] >= TK_WIN) return 0;
  int n = 0;
  for (int i = 0; i < TK_HOLES; i++) {
    actions[n] = (uint8_t)i;
    n += b[i] > 0;
  }
  return n;
}

static float tk_step(pb_state_t *s, int action, int *done) {
  uint8_t *b = tk_b(s);
  /* Holes that are tuzdyks: the mover's own is on the opponent's side
   * (index 8 + k), the opponent's on the mover's side (index k - 1). */
  int my_tuz = b[TK_TUZ] ? TK_HOLES + b[TK_TUZ] - 1 : -1;
  int op_tuz = b[TK_TUZ + 1] ? b[TK_TUZ + 1] - 1 : -1;
  /* A legal action: one of the mover's holes, not empty. */
  pb_assert(action >= 0 && action < TK_HOLES && b[action] > 0);
  int n = b[action];
  b[action] = 0;
  /* The first stone goes back into the emptied hole, except when it is
   * the only one. Then one stone per hole onwards. */
  int pos = n == 1 ? (action + 1) % TK_ALL : action;
  for (int k = 0; k < n; k++) {
    if (k > 0) pos = pos + 1 == TK_ALL ? 0 : pos + 1;
    if (pos == my_tuz)
      b[TK_KAZ]++;
    else if (pos == op_tuz)
      b[TK_KAZ + 1]++;
    else
      b[pos]++;
  }
  if (pos >= TK_HOLES && pos != my_tuz) {
    int c = b[pos];
    if ((c & 1) == 0) {
      b[TK_KAZ] = (uint8_t)(b[TK_KAZ] + c);
      b[pos] = 0;
    } else if (c == 3 && b[TK_TUZ] == 0 && pos != TK_ALL - 1 &&
               b[TK_TUZ + 1] != pos - TK_HOLES + 1) {
      b[TK_TUZ] = (uint8_t)(pos - TK_HOLES + 1);
      b[TK_KAZ] = (uint8_t)(b[TK_KAZ] + 3);
      b[pos] = 0;
    }
  }
  int ply = tk_get_ply(b) + 1;
  b[TK_PLY] = (uint8_t)ply;
  b[TK_PLY + 1] = (uint8_t)(ply >> 8);
  float reward = 0.0f;
  *done = 0;
  int mine = b[TK_KAZ], theirs = b[TK_KAZ + 1];
  if (mine >= TK_WIN || theirs >= TK_WIN) {
    *done = 1;
    reward = mine >= TK_WIN ? 1.0f : -1.0f;
  } else if (tk_side_stones(b, 1) == 0) {
    /* The opponent cannot move: the mover's stones go to the mover. */
    for (int i = 0; i < TK_HOLES; i++) {
      b[TK_KAZ] = (uint8_t)(b[TK_KAZ] + b[i]);
      b[i] = 0;
    }
    *done = 1;
    reward = tk_result(b[TK_KAZ]);
  }
  /* Hand the move over: swap the sides. */
  uint8_t t[TK_HOLES];
  memcpy(t, b, TK_HOLES);
  memmove(b, b + TK_HOLES, TK_HOLES);
  memcpy(b + TK_HOLES, t, TK_HOLES);
  uint8_t k = b[TK_KAZ];
  b[TK_KAZ] = b[TK_KAZ + 1];
  b[TK_KAZ + 1] = k;
  k = b[TK_TUZ];
  b[TK_TUZ] = b[TK_TUZ + 1];
  b[TK_TUZ + 1] = k;
  return reward;
}

/* Plane p, row r, column c at out[p * 18 + r * 9 + c]; row 0 = the
 * mover's holes 1..9, row 1 = the opponent's 9..1. */
static void tk_encode(const pb_state_t *s, float *out) {
  const uint8_t *b = tk_cb(s);
  memset(out, 0, sizeof(float) * TK_PLANES * TK_ALL);
  for (int i = 0; i < TK_ALL; i++) {
    int cell = i < TK_HOLES ? i : TK_HOLES + (TK_ALL - 1 - i);
    int c = b[i];
    for (int k = 0; k < 12 && k < c; k++) out[k * TK_ALL + cell] = 1.0f;
    out[12 * TK_ALL + cell] = (float)c / 20.0f;
    out[13 * TK_ALL + cell] = (float)(c & 1);
  }
  if (b[TK_TUZ]) out[14 * TK_ALL + TK_HOLES + (TK_HOLES - b[TK_TUZ])] = 1.0f;
  if (b[TK_TUZ + 1]) out[14 * TK_ALL + b[TK_TUZ + 1] - 1] = 1.0f;
  for (int i = 0; i < TK_ALL; i++) {
    out[15 * TK_ALL + i] = (float)b[TK_KAZ] / 82.0f;
    out[16 * TK_ALL + i] = (float)b[TK_KAZ + 1] / 82.0f;
  }
}

/* 24 bytes: holes, kaznas, tuzdyks, ply (little-endian), as laid out. */
static void tk_pack(const pb_state_t *s, uint8_t *out) {
  memcpy(out, tk_cb(s), 24);
}

static int tk_unpack(pb_state_t *s, const uint8_t *in, size_t len,
                     pb_err_t *err) {
  if (in == NULL || len != 24)
    return pb_err_set(err, PB_ECORRUPT,
                      "toguz: packed state is %zu bytes, expected 24",
                      in == NULL ? (size_t)0 : len);
  int total = 0;
  for (int i = 0; i < 20; i++) total += in[i];
  if (total != TK_STONES)
    return pb_err_set(err, PB_ECORRUPT,
                      "toguz: %d stones on the board and in the kaznas, "
                      "expected 162",
                      total);
  for (int p = 0; p < 2; p++) {
    int t = in[TK_TUZ + p];
    if (t > TK_HOLES - 1)
      return pb_err_set(err, PB_ECORRUPT,
                        "toguz: tuzdyk at hole %d (0 = none, 1..8: never "
                        "the 9th)",
                        t);
    /* The mover's tuzdyk k is the opponent's hole k: index 8 + k. */
    if (t && in[p == 0 ? TK_HOLES + t - 1 : t - 1] != 0)
      return pb_err_set(err, PB_ECORRUPT,
                        "toguz: a tuzdyk (hole %d) holds stones", t);
  }
  if (in[TK_TUZ] && in[TK_TUZ] == in[TK_TUZ + 1])
    return pb_err_set(err, PB_ECORRUPT,
                      "toguz: both tuzdyks have number %d", in[TK_TUZ]);
  if (in[TK_KAZ] >= TK_WIN && in[TK_KAZ + 1] >= TK_WIN)
    return pb_err_set(err, PB_ECORRUPT, "toguz: both kaznas hold 82+");
  memset(s, 0, sizeof *s);
  memcpy(tk_b(s), in, 24);
  return 0;
}

static uint64_t tk_hash(const pb_state_t *s) {
  return pb_mix64(s->w[0] ^ pb_mix64(s->w[1] ^ pb_mix64(s->w[2])));
}

static int tk_ply(const pb_state_t *s) {
  return tk_get_ply(tk_cb(s));
}

static int tk_put_num(char *p, int v) {
  p[0] = ' ';
  p[1] = v >= 100 ? (char)('0' + v / 100) : ' ';
  p[2] = v >= 10 ? (char)('0' + v / 10 % 10) : ' ';
  p[3] = (char)('0' + v % 10);
  return 4;
}

/* North's holes 9..1, South's 1..9 (the board as it stands), kaznas at the
 * right, a tuzdyk drawn as '*':
 *   O    9   9   9   9   9   9   9   9   9  kazna   0
 *   X    9   9   9   9   9   9   9   9   9  kazna   0
 *        1   2   3   4   5   6   7   8   9 */
static int tk_render(const pb_state_t *s, char *buf, size_t n) {
  if (buf == NULL || n == 0) return 0;
  const uint8_t *b = tk_cb(s);
  int south = (tk_ply(s) & 1) == 0; /* South ('X') to move */
  const uint8_t *xs = south ? b : b + TK_HOLES;
  const uint8_t *os = south ? b + TK_HOLES : b;
  int xk = b[TK_KAZ + !south], ok = b[TK_KAZ + south];
  int xt = b[TK_TUZ + !south], ot = b[TK_TUZ + south]; /* X's tuzdyk: O's hole */
  char tmp[256];
  size_t k = 0;
  tmp[k++] = 'O';
  for (int h = TK_HOLES; h >= 1; h--) {
    k += (size_t)tk_put_num(tmp + k, os[h - 1]);
    if (xt == h) tmp[k - 1] = '*';
  }
  memcpy(tmp + k, "  kazna", 7);
  k += 7;
  k += (size_t)tk_put_num(tmp + k, ok);
  tmp[k++] = '\n';
  tmp[k++] = 'X';
  for (int h = 1; h <= TK_HOLES; h++) {
    k += (size_t)tk_put_num(tmp + k, xs[h - 1]);
    if (ot == h) tmp[k - 1] = '*';
  }
  memcpy(tmp + k, "  kazna", 7);
  k += 7;
  k += (size_t)tk_put_num(tmp + k, xk);
  tmp[k++] = '\n';
  tmp[k++] = ' ';
  for (int h = 1; h <= TK_HOLES; h++) k += (size_t)tk_put_num(tmp + k, h);
  tmp[k++] = '\n';
  return pb_game_text_out(buf, n, tmp, k);
}

/* Move lists: the mover's hole numbers, digits 1-9 ("7315"). */
static int tk_parse(pb_state_t *s, const char *moves, pb_err_t *err) {
  if (moves == NULL)
    return pb_err_set(err, PB_EINVAL, "toguz: NULL move string");
  pb_state_t t;
  tk_reset(&t);
  for (size_t i = 0; moves[i] != '\0'; i++) {
    char ch = moves[i];
    if (ch < '1' || ch > '9')
      return pb_err_set(err, PB_EINVAL,
                        "toguz: bad character '%c' at index %zu of \"%s\" "
                        "(holes are digits 1-9)",
                        (ch >= 32 && ch < 127) ? ch : '?', i, moves);
    float r;
    if (tk_terminal(&t, &r))
      return pb_err_set(err, PB_EILLEGAL,
                        "toguz: move '%c' at index %zu of \"%s\" comes after "
                        "the end of the game",
                        ch, i, moves);
    if (tk_b(&t)[ch - '1'] == 0)
      return pb_err_set(err, PB_EILLEGAL,
                        "toguz: hole %c is empty at index %zu of \"%s\"", ch,
                        i, moves);
    int done;
    tk_step(&t, ch - '1', &done);
  }
  *s = t;
  return 0;
}

static int tk_action_name(int action, char *buf, size_t n) {
  if (action < 0 || action >= TK_HOLES || buf == NULL || n < 2)
    return PB_EINVAL;
  buf[0] = (char)('1' + action);
  buf[1] = '\0';
  return 1;
}

static int tk_material(const pb_state_t *s) {
  const uint8_t *b = tk_cb(s);
  return (int)b[TK_KAZ] - (int)b[TK_KAZ + 1];
}

const pb_game_t pb_game_toguz = {
    .name = "toguz",
    .id = PB_GAME_TOGUZ,
    .num_actions = TK_HOLES,
    .planes = TK_PLANES,
    .height = 2,
    .width = TK_HOLES,
    .state_bytes = 24,
    .max_turns = TK_MAX_PLY,
    .reset = tk_reset,
    .legal = tk_legal,
    .step = tk_step,
    .terminal = tk_terminal,
    .encode = tk_encode,
    .pack = tk_pack,
    .unpack = tk_unpack,
    .hash = tk_hash,
    .ply = tk_ply,
    .render = tk_render,
    .parse = tk_parse,
    .action_name = tk_action_name,
    .mirror = NULL,
    .mirror_action = NULL,
    .material = tk_material,
};
