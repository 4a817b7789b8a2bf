/* tictactoe.c - Tic-Tac-Toe on 9-bit boards.
 *
 * Small enough that tests can solve it exactly; it is the cheap game for
 * checking searches against minimax.
 *
 * Cells are numbered in reading order, cell = row * 3 + col, row 0 at the
 * top; action a puts a stone on cell a, and users type cell a as the digit
 * a + 1 (1 = top left, 9 = bottom right).
 *   w[0] = stones of the side to move (bit = cell)
 *   w[1] = all stones
 *   w[2] = w[3] = 0
 * The first player ('X') moves when the number of stones is even. */
#include <string.h>

#include "game.h"
#include "invariant.h"
#include "rng.h"

#define T3_FULL 0x1FFULL

/* Bit p of this table says whether the 9-bit board p holds three in a row
 * (rows 0x007 0x038 0x1C0, columns 0x049 0x092 0x124, diagonals 0x111
 * 0x054). Generated from those eight lines; test_tictactoe checks every
 * position of the game tree against a plain-array engine. */
static const uint64_t t3_win_table[8] = {
    0xff80808080808080ULL, 0xfff0aa80faf0aa80ULL, 0xffcc8080cccc8080ULL,
    0xfffcaa80fefcaa80ULL, 0xfffaf0f0aaaa8080ULL, 0xfffafaf0fafaaa80ULL,
    0xfffef0f0eeee8080ULL, 0xffffffffffffffffULL,
};

static inline int t3_three(uint64_t p) {
  return (int)(t3_win_table[(p >> 6) & 7] >> (p & 63) & 1);
}

static void t3_reset(pb_state_t *s) {
  memset(s, 0, sizeof *s);
}

static int t3_legal(const pb_state_t *s, uint8_t *actions) {
  uint64_t mask = s->w[1];
  if (t3_three(s->w[0] ^ mask)) return 0;
  int n = 0;
  for (int a = 0; a < 9; a++)
    if (!(mask & (1ULL << a))) actions[n++] = (uint8_t)a;
  return n;
}

static float t3_step(pb_state_t *s, int action, int *done) {
  /* A legal action: an empty cell. */
  pb_assert(action >= 0 && action < 9 && !((s->w[1] >> action) & 1));
  uint64_t nmask = s->w[1] | (1ULL << action);
  uint64_t mover = s->w[0] | (1ULL << action);
  s->w[0] = mover ^ nmask;
  s->w[1] = nmask;
  if (t3_three(mover)) {
    *done = 1;
    return 1.0f;
  }
  *done = nmask == T3_FULL;
  return 0.0f;
}

static int t3_terminal(const pb_state_t *s, float *reward) {
  *reward = 0.0f;
  if (t3_three(s->w[0] ^ s->w[1])) {
    *reward = -1.0f;
    return 1;
  }
  return s->w[1] == T3_FULL;
}

/* Plane p, row r (0 = top), column c at out[p * 9 + r * 3 + c]. */
static void t3_encode(const pb_state_t *s, float *out) {
  uint64_t me = s->w[0], opp = s->w[0] ^ s->w[1];
  for (int i = 0; i < 9; i++) {
    out[i] = (me >> i & 1) ? 1.0f : 0.0f;
    out[9 + i] = (opp >> i & 1) ? 1.0f : 0.0f;
  }
}

/* 4 bytes: w[0] then w[1], each as a little-endian 16-bit word. */
static void t3_pack(const pb_state_t *s, uint8_t *out) {
  out[0] = (uint8_t)s->w[0];
  out[1] = (uint8_t)(s->w[0] >> 8);
  out[2] = (uint8_t)s->w[1];
  out[3] = (uint8_t)(s->w[1] >> 8);
}

/* Could the previous mover's line have been completed by their last stone?
 * Some stone of theirs must be in every one of their lines (else the game
 * had ended a move earlier). */
static int t3_win_was_last_move(uint64_t p) {
  for (int a = 0; a < 9; a++)
    if ((p >> a & 1) && !t3_three(p & ~(1ULL << a))) return 1;
  return 0;
}

static int t3_unpack(pb_state_t *s, const uint8_t *in, size_t len,
                     pb_err_t *err) {
  if (in == NULL || len != 4)
    return pb_err_set(err, PB_ECORRUPT,
                      "tictactoe: packed state is %zu bytes, expected 4",
                      in == NULL ? (size_t)0 : len);
  uint64_t me = (uint64_t)in[0] | (uint64_t)in[1] << 8;
  uint64_t mask = (uint64_t)in[2] | (uint64_t)in[3] << 8;
  if ((me | mask) & ~T3_FULL)
    return pb_err_set(err, PB_ECORRUPT,
                      "tictactoe: bits set outside the 3x3 board");
  if (me & ~mask)
    return pb_err_set(err, PB_ECORRUPT,
                      "tictactoe: side-to-move stones outside the stone mask");
  int n = __builtin_popcountll(mask), nme = __builtin_popcountll(me);
  if (nme != n / 2)
    return pb_err_set(
        err, PB_ECORRUPT,
        "tictactoe: side to move has %d stones, expected %d of %d", nme, n / 2,
        n);
  uint64_t opp = me ^ mask;
  int me3 = t3_three(me), opp3 = t3_three(opp);
  if (me3 && opp3)
    return pb_err_set(err, PB_ECORRUPT,
                      "tictactoe: both players have three in a row");
  if (me3)
    return pb_err_set(err, PB_ECORRUPT,
                      "tictactoe: the side to move already has three in a row");
  if (opp3 && !t3_win_was_last_move(opp))
    return pb_err_set(err, PB_ECORRUPT,
                      "tictactoe: unreachable win (no last move completes it)");
  memset(s, 0, sizeof *s);
  s->w[0] = me;
  s->w[1] = mask;
  return 0;
}

static uint64_t t3_hash(const pb_state_t *s) {
  return pb_mix64(s->w[0] ^ pb_mix64(s->w[1]));
}

static int t3_ply(const pb_state_t *s) {
  return __builtin_popcountll(s->w[1]);
}

/* Three rows "X . O", top first (18 bytes and the NUL). */
static int t3_render(const pb_state_t *s, char *buf, size_t n) {
  if (buf == NULL || n == 0) return 0;
  char tmp[19];
  size_t k = 0;
  uint64_t xs = (t3_ply(s) & 1) == 0 ? s->w[0] : s->w[0] ^ s->w[1];
  for (int i = 0; i < 9; i++) {
    tmp[k++] = !(s->w[1] >> i & 1) ? '.' : (xs >> i & 1) ? 'X' : 'O';
    tmp[k++] = i % 3 == 2 ? '\n' : ' ';
  }
  return pb_game_text_out(buf, n, tmp, k);
}

static int t3_parse(pb_state_t *s, const char *moves, pb_err_t *err) {
  if (moves == NULL)
    return pb_err_set(err, PB_EINVAL, "tictactoe: NULL move string");
  pb_state_t t;
  t3_reset(&t);
  int done = 0;
  for (size_t i = 0; moves[i] != '\0'; i++) {
    char ch = moves[i];
    if (ch < '1' || ch > '9')
      return pb_err_set(err, PB_EINVAL,
                        "tictactoe: bad character '%c' at index %zu of \"%s\" "
                        "(cells are digits 1-9)",
                        (ch >= 32 && ch < 127) ? ch : '?', i, moves);
    if (done)
      return pb_err_set(err, PB_EILLEGAL,
                        "tictactoe: move '%c' at index %zu of \"%s\" comes "
                        "after the end of the game",
                        ch, i, moves);
    int a = ch - '1';
    if (t.w[1] >> a & 1)
      return pb_err_set(err, PB_EILLEGAL,
                        "tictactoe: cell %c is taken at index %zu of \"%s\"",
                        ch, i, moves);
    t3_step(&t, a, &done);
  }
  *s = t;
  return 0;
}

static int t3_action_name(int action, char *buf, size_t n) {
  if (action < 0 || action >= 9 || buf == NULL || n < 2) return PB_EINVAL;
  buf[0] = (char)('1' + action);
  buf[1] = '\0';
  return 1;
}

/* Cell r * 3 + c <-> r * 3 + (2 - c). */
static uint64_t t3_mirror_bits(uint64_t b) {
  uint64_t r = 0;
  for (int cell = 0; cell < 9; cell++)
    if (b >> cell & 1) r |= 1ULL << (cell - cell % 3 + 2 - cell % 3);
  return r;
}

static void t3_mirror(const pb_state_t *s, pb_state_t *out) {
  pb_state_t m;
  memset(&m, 0, sizeof m);
  m.w[0] = t3_mirror_bits(s->w[0]);
  m.w[1] = t3_mirror_bits(s->w[1]);
  *out = m;
}

static int t3_mirror_action(int action) {
  return action - action % 3 + 2 - action % 3;
}

const pb_game_t pb_game_tictactoe = {
    .name = "tictactoe",
    .id = PB_GAME_TICTACTOE,
    .num_actions = 9,
    .planes = 2,
    .height = 3,
    .width = 3,
    .state_bytes = 4,
    .max_turns = 9,
    .reset = t3_reset,
    .legal = t3_legal,
    .step = t3_step,
    .terminal = t3_terminal,
    .encode = t3_encode,
    .pack = t3_pack,
    .unpack = t3_unpack,
    .hash = t3_hash,
    .ply = t3_ply,
    .render = t3_render,
    .parse = t3_parse,
    .action_name = t3_action_name,
    .mirror = t3_mirror,
    .mirror_action = t3_mirror_action,
};
