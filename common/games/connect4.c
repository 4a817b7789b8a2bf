/* connect4.c - Connect Four (6 rows x 7 columns) on bitboards.
 *
 * Tuned for random playouts and shallow searches: a position is two 64-bit
 * words and every operation is a handful of shifts and masks.
 *
 * Layout: 7 bits per column, bit (col * 7 + row), row 0 at the bottom; bit 6
 * of each column is a sentinel row that is always empty, so that shifting a
 * line of stones never wraps from one column into the next.
 *   w[0] = stones of the side to move
 *   w[1] = all stones (mask)
 *   w[2] = w[3] = 0
 * The first player ('X') moves when the number of stones is even. Playing a
 * column sets the lowest empty bit of that column: mask + bottom(col) carries
 * up to it.
 *
 * Actions 0..6 are columns 1..7 (left to right). */
#include <string.h>

#include "bytes.h"
#include "game.h"
#include "invariant.h"
#include "rng.h"

enum { C4_W = 7, C4_H = 6, C4_H1 = 7, C4_CELLS = 42 };

#define C4_BOTTOM 0x0040810204081ULL     /* bit 0 of every column */
#define C4_BOARD (C4_BOTTOM * 0x3FULL)   /* the 42 playable cells */
#define C4_COL(c) (0x3FULL << (7 * (c))) /* playable cells of column c */
#define C4_TOP(c) (1ULL << (7 * (c) + C4_H - 1)) /* top cell of column c */

/* Does p contain four in a row? One shift pair per direction:
 * 1 = vertical, 7 = horizontal, 6 and 8 = the two diagonals. */
static inline int c4_four(uint64_t p) {
  uint64_t m;
  m = p & (p >> 7);
  if (m & (m >> 14)) return 1;
  m = p & (p >> 6);
  if (m & (m >> 12)) return 1;
  m = p & (p >> 8);
  if (m & (m >> 16)) return 1;
  m = p & (p >> 1);
  if (m & (m >> 2)) return 1;
  return 0;
}

static void c4_reset(pb_state_t *s) {
  memset(s, 0, sizeof *s);
}

static int c4_legal(const pb_state_t *s, uint8_t *actions) {
  uint64_t mask = s->w[1];
  if (c4_four(s->w[0] ^ mask)) return 0; /* the previous mover has won */
  int n = 0;
  for (int c = 0; c < C4_W; c++)
    if (!(mask & C4_TOP(c))) actions[n++] = (uint8_t)c;
  return n;
}

static float c4_step(pb_state_t *s, int action, int *done) {
  uint64_t mask = s->w[1];
  /* A legal action: a column that is not full. */
  pb_assert(action >= 0 && action < C4_W && !(mask & C4_TOP(action)));
  uint64_t nmask = mask | (mask + (1ULL << (7 * action)));
  uint64_t mover = s->w[0] | (nmask ^ mask);
  s->w[0] = mover ^ nmask; /* the opponent's stones: they move next */
  s->w[1] = nmask;
  if (c4_four(mover)) {
    *done = 1;
    return 1.0f;
  }
  *done = nmask == C4_BOARD;
  return 0.0f;
}

static int c4_terminal(const pb_state_t *s, float *reward) {
  if (c4_four(s->w[0] ^ s->w[1])) {
    *reward = -1.0f;
    return 1;
  }
  if (s->w[1] == C4_BOARD) {
    *reward = 0.0f;
    return 1;
  }
  *reward = 0.0f;
  return 0;
}

/* Plane p, row r (0 = bottom), column c at out[p * 42 + r * 7 + c]. */
static void c4_encode(const pb_state_t *s, float *out) {
  uint64_t me = s->w[0], opp = s->w[0] ^ s->w[1];
  for (int r = 0; r < C4_H; r++)
    for (int c = 0; c < C4_W; c++) {
      uint64_t bit = 1ULL << (7 * c + r);
      out[r * C4_W + c] = (me & bit) ? 1.0f : 0.0f;
      out[C4_CELLS + r * C4_W + c] = (opp & bit) ? 1.0f : 0.0f;
    }
}

static void c4_pack(const pb_state_t *s, uint8_t *out) {
  pb_le_put64(out, s->w[0]);
  pb_le_put64(out + 8, s->w[1]);
}

/* Could `p` (the previous mover's stones) have just completed its first
 * four? The last stone played is on top of its column, and taking it back
 * must leave no four (otherwise the game had already ended). */
static int c4_win_was_last_move(uint64_t p, uint64_t mask) {
  for (int c = 0; c < C4_W; c++) {
    uint64_t col = mask & C4_COL(c);
    if (!col) continue;
    uint64_t top = col & ~(col >> 1); /* the highest stone of the column */
    if ((p & top) && !c4_four(p & ~top)) return 1;
  }
  return 0;
}

static int c4_unpack(pb_state_t *s, const uint8_t *in, size_t len,
                     pb_err_t *err) {
  if (in == NULL || len != 16)
    return pb_err_set(err, PB_ECORRUPT,
                      "connect4: packed state is %zu bytes, expected 16",
                      in == NULL ? (size_t)0 : len);
  uint64_t me = pb_le_get64(in), mask = pb_le_get64(in + 8);
  if ((mask & ~C4_BOARD) || (me & ~C4_BOARD))
    return pb_err_set(err, PB_ECORRUPT,
                      "connect4: bits set outside the 6x7 board");
  if (me & ~mask)
    return pb_err_set(err, PB_ECORRUPT,
                      "connect4: side-to-move stones outside the stone mask");
  for (int c = 0; c < C4_W; c++) {
    uint64_t col = (mask >> (7 * c)) & 0x7F;
    if (col & (col + 1))
      return pb_err_set(err, PB_ECORRUPT,
                        "connect4: column %d has a gap under a stone", c + 1);
  }
  int n = __builtin_popcountll(mask), nme = __builtin_popcountll(me);
  /* X moves at even counts: X and O then have n/2 each; at odd counts O
   * moves with (n-1)/2 against X's (n+1)/2. Either way: floor(n/2). */
  if (nme != n / 2)
    return pb_err_set(err, PB_ECORRUPT,
                      "connect4: side to move has %d stones, expected %d of %d",
                      nme, n / 2, n);
  uint64_t opp = me ^ mask;
  int me4 = c4_four(me), opp4 = c4_four(opp);
  if (me4 && opp4)
    return pb_err_set(err, PB_ECORRUPT,
                      "connect4: both players have four in a row");
  if (me4)
    return pb_err_set(err, PB_ECORRUPT,
                      "connect4: the side to move already has four in a row");
  if (opp4 && !c4_win_was_last_move(opp, mask))
    return pb_err_set(err, PB_ECORRUPT,
                      "connect4: unreachable win (no last move completes it)");
  memset(s, 0, sizeof *s);
  s->w[0] = me;
  s->w[1] = mask;
  return 0;
}

static uint64_t c4_hash(const pb_state_t *s) {
  return pb_mix64(s->w[0] ^ pb_mix64(s->w[1]));
}

static int c4_ply(const pb_state_t *s) {
  return __builtin_popcountll(s->w[1]);
}

/* Six rows top first, then the column numbers:
 *   . . . X . . .
 *   1 2 3 4 5 6 7        (8 lines' worth: 7 * 14 + 1 = 99 bytes) */
static int c4_render(const pb_state_t *s, char *buf, size_t n) {
  if (buf == NULL || n == 0) return 0;
  char tmp[C4_H1 * 2 * C4_W + 1];
  size_t k = 0;
  int x_to_move = (c4_ply(s) & 1) == 0;
  uint64_t xs = x_to_move ? s->w[0] : s->w[0] ^ s->w[1];
  for (int r = C4_H - 1; r >= 0; r--)
    for (int c = 0; c < C4_W; c++) {
      uint64_t bit = 1ULL << (7 * c + r);
      tmp[k++] = !(s->w[1] & bit) ? '.' : (xs & bit) ? 'X' : 'O';
      tmp[k++] = c == C4_W - 1 ? '\n' : ' ';
    }
  for (int c = 0; c < C4_W; c++) {
    tmp[k++] = (char)('1' + c);
    tmp[k++] = c == C4_W - 1 ? '\n' : ' ';
  }
  return pb_game_text_out(buf, n, tmp, k);
}

static int c4_parse(pb_state_t *s, const char *moves, pb_err_t *err) {
  if (moves == NULL)
    return pb_err_set(err, PB_EINVAL, "connect4: NULL move string");
  pb_state_t t;
  c4_reset(&t);
  int done = 0;
  for (size_t i = 0; moves[i] != '\0'; i++) {
    char ch = moves[i];
    if (ch < '1' || ch > '7')
      return pb_err_set(err, PB_EINVAL,
                        "connect4: bad character '%c' at index %zu of \"%s\" "
                        "(columns are digits 1-7)",
                        (ch >= 32 && ch < 127) ? ch : '?', i, moves);
    if (done)
      return pb_err_set(err, PB_EILLEGAL,
                        "connect4: move '%c' at index %zu of \"%s\" comes "
                        "after the end of the game",
                        ch, i, moves);
    int col = ch - '1';
    if (t.w[1] & C4_TOP(col))
      return pb_err_set(err, PB_EILLEGAL,
                        "connect4: column %c is full at index %zu of \"%s\"",
                        ch, i, moves);
    c4_step(&t, col, &done);
  }
  *s = t;
  return 0;
}

static int c4_action_name(int action, char *buf, size_t n) {
  if (action < 0 || action >= C4_W || buf == NULL || n < 2) return PB_EINVAL;
  buf[0] = (char)('1' + action);
  buf[1] = '\0';
  return 1;
}

static uint64_t c4_mirror_bits(uint64_t b) {
  uint64_t r = 0;
  for (int c = 0; c < C4_W; c++)
    r |= ((b >> (7 * c)) & 0x7F) << (7 * (C4_W - 1 - c));
  return r;
}

static void c4_mirror(const pb_state_t *s, pb_state_t *out) {
  pb_state_t m;
  memset(&m, 0, sizeof m);
  m.w[0] = c4_mirror_bits(s->w[0]);
  m.w[1] = c4_mirror_bits(s->w[1]);
  *out = m;
}

static int c4_mirror_action(int action) {
  return C4_W - 1 - action;
}

const pb_game_t pb_game_connect4 = {
    .name = "connect4",
    .id = PB_GAME_CONNECT4,
    .num_actions = C4_W,
    .planes = 2,
    .height = C4_H,
    .width = C4_W,
    .state_bytes = 16,
    .max_turns = C4_CELLS,
    .reset = c4_reset,
    .legal = c4_legal,
    .step = c4_step,
    .terminal = c4_terminal,
    .encode = c4_encode,
    .pack = c4_pack,
    .unpack = c4_unpack,
    .hash = c4_hash,
    .ply = c4_ply,
    .render = c4_render,
    .parse = c4_parse,
    .action_name = c4_action_name,
    .mirror = c4_mirror,
    .mirror_action = c4_mirror_action,
};
