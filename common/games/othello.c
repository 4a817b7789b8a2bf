/* othello.c - Othello (Reversi, 8x8, standard start) on bitboards.
 *
 * Squares are bits, bit = row * 8 + col, with a1 = bit 0, h1 = bit 7 and
 * a8 = bit 56; row 1 is drawn at the top, as in Othello notation. Black
 * ('X') moves first; the start has White on d4 and e5, Black on d5 and e4.
 *   w[0] = discs of the side to move
 *   w[1] = discs of the opponent
 *   w[2] = ply: moves played so far, passes included (0..120)
 *   w[3] = 0
 * Every ply, a pass too, hands the move to the other side, so Black moves
 * when the ply is even.
 *
 * Actions 0..63 put a disc on that square; action 64 is the pass. A side
 * must pass when it has no move and its opponent has one (pass is then its
 * only legal action); the game ends when neither side can move, and the
 * side with more discs wins (empty squares go to nobody; equal counts are a
 * draw). So two passes never follow each other, and a game has at most 60
 * disc moves and 60 passes.
 *
 * Network input, 4 planes of 8x8 seen from the side to move: 0 its discs,
 * 1 the opponent's, 2 its legal moves, 3 all ones (marks the board inside
 * the convolutions' zero padding, so edges and corners can be told apart). */
#include <string.h>

#include "bytes.h"
#include "game.h"
#include "invariant.h"
#include "rng.h"

enum { OT_N = 8, OT_CELLS = 64, OT_PASS = 64, OT_MAX_PLY = 120 };

#define OT_NOT_A 0xFEFEFEFEFEFEFEFEULL /* every column but a */
#define OT_NOT_H 0x7F7F7F7F7F7F7F7FULL /* every column but h */
#define OT_CENTER 0x0000001818000000ULL /* d4 e4 d5 e5: never empty */

/* One step in direction d (0..7: E, W, S, N, SE, SW, NE, NW; S is towards
 * row 8), dropping discs that fall off the board. */
static inline uint64_t ot_shift(uint64_t b, int d) {
  switch (d) {
  case 0: return (b << 1) & OT_NOT_A;
  case 1: return (b >> 1) & OT_NOT_H;
  case 2: return b << 8;
  case 3: return b >> 8;
  case 4: return (b << 9) & OT_NOT_A;
  case 5: return (b << 7) & OT_NOT_H;
  case 6: return (b >> 7) & OT_NOT_A;
  default: return (b >> 9) & OT_NOT_H;
  }
}

/* Squares where `me` may play: empty, and closing a line of opponent discs
 * in some direction. */
static uint64_t ot_moves(uint64_t me, uint64_t opp) {
  uint64_t empty = ~(me | opp), moves = 0;
  for (int d = 0; d < 8; d++) {
    uint64_t x = ot_shift(me, d) & opp;
    for (int i = 0; i < 5; i++) x |= ot_shift(x, d) & opp;
    moves |= ot_shift(x, d) & empty;
  }
  return moves;
}

/* Discs that a disc of `me` on `sq` turns over. */
static uint64_t ot_flips(uint64_t me, uint64_t opp, int sq) {
  uint64_t flips = 0, bit = 1ULL << sq;
  for (int d = 0; d < 8; d++) {
    uint64_t line = 0, x = ot_shift(bit, d);
    while (x & opp) {
      line |= x;
      x = ot_shift(x, d);
    }
    if (x & me) flips |= line;
  }
  return flips;
}

static float ot_sign(int a, int b) {
  return a > b ? 1.0f : a < b ? -1.0f : 0.0f;
}

static void ot_reset(pb_state_t *s) {
  memset(s, 0, sizeof *s);
  s->w[0] = (1ULL << 35) | (1ULL << 28); /* Black: d5 e4 */
  s->w[1] = (1ULL << 27) | (1ULL << 36); /* White: d4 e5 */
}

static int ot_legal(const pb_state_t *s, uint8_t *actions) {
  uint64_t m = ot_moves(s->w[0], s->w[1]);
  if (m == 0) {
    if (ot_moves(s->w[1], s->w[0]) == 0) return 0; /* the game is over */
    actions[0] = OT_PASS;
    return 1;
  }
  int n = 0;
  while (m) {
    actions[n++] = (uint8_t)__builtin_ctzll(m);
    m &= m - 1;
  }
  return n;
}

static float ot_step(pb_state_t *s, int action, int *done) {
  uint64_t me = s->w[0], opp = s->w[1];
  pb_assert(action >= 0 && action <= OT_PASS);
  if (action != OT_PASS) {
    uint64_t f = ot_flips(me, opp, action);
    /* A legal move is on an empty cell and flips at least one stone. */
    pb_assert(f != 0 && !(((me | opp) >> action) & 1));
    me |= f | (1ULL << action);
    opp &= ~f;
  }
  s->w[0] = opp;
  s->w[1] = me;
  s->w[2]++;
  if (action == OT_PASS || ot_moves(opp, me) != 0 || ot_moves(me, opp) != 0) {
    *done = 0;
    return 0.0f;
  }
  *done = 1;
  return ot_sign(__builtin_popcountll(me), __builtin_popcountll(opp));
}

static int ot_terminal(const pb_state_t *s, float *reward) {
  uint64_t me = s->w[0], opp = s->w[1];
  if (ot_moves(me, opp) != 0 || ot_moves(opp, me) != 0) {
    *reward = 0.0f;
    return 0;
  }
  *reward = ot_sign(__builtin_popcountll(me), __builtin_popcountll(opp));
  return 1;
}

/* Plane p, row r (0 = row 1), column c at out[p * 64 + r * 8 + c]. */
static void ot_encode(const pb_state_t *s, float *out) {
  uint64_t me = s->w[0], opp = s->w[1], mv = ot_moves(me, opp);
  for (int i = 0; i < OT_CELLS; i++) {
    out[i] = (float)((me >> i) & 1);
    out[OT_CELLS + i] = (float)((opp >> i) & 1);
    out[2 * OT_CELLS + i] = (float)((mv >> i) & 1);
    out[3 * OT_CELLS + i] = 1.0f;
  }
}

/* 17 bytes: the mover's discs, the opponent's (little-endian), the ply. */
static void ot_pack(const pb_state_t *s, uint8_t *out) {
  pb_le_put64(out, s->w[0]);
  pb_le_put64(out + 8, s->w[1]);
  out[16] = (uint8_t)s->w[2];
}

static int ot_unpack(pb_state_t *s, const uint8_t *in, size_t len,
                     pb_err_t *err) {
  if (in == NULL || len != 17)
    return pb_err_set(err, PB_ECORRUPT,
                      "othello: packed state is %zu bytes, expected 17",
                      in == NULL ? (size_t)0 : len);
  uint64_t me = pb_le_get64(in), opp = pb_le_get64(in + 8);
  int ply = in[16];
  if (me & opp)
    return pb_err_set(err, PB_ECORRUPT,
                      "othello: a square holds discs of both sides");
  if (((me | opp) & OT_CENTER) != OT_CENTER)
    return pb_err_set(err, PB_ECORRUPT,
                      "othello: an empty centre square (d4 e4 d5 e5 are "
                      "never empty)");
  /* Each disc move adds one disc; a pass adds none and follows a disc
   * move, so passes <= disc moves <= ply. */
  int moves = __builtin_popcountll(me | opp) - 4;
  if (ply < moves || ply > 2 * moves)
    return pb_err_set(err, PB_ECORRUPT,
                      "othello: ply %d is impossible with %d discs "
                      "(expected %d..%d)",
                      ply, moves + 4, moves, 2 * moves);
  memset(s, 0, sizeof *s);
  s->w[0] = me;
  s->w[1] = opp;
  s->w[2] = (uint64_t)ply;
  return 0;
}

static uint64_t ot_hash(const pb_state_t *s) {
  return pb_mix64(s->w[0] ^ pb_mix64(s->w[1] ^ pb_mix64(s->w[2])));
}

static int ot_ply(const pb_state_t *s) {
  return (int)s->w[2];
}

/* Column letters, then eight rows, row 1 first (9 lines of 18 bytes):
 *     a b c d e f g h
 *   1 . . . . . . . .
 *   ...
 *   4 . . . O X . . .  */
static int ot_render(const pb_state_t *s, char *buf, size_t n) {
  if (buf == NULL || n == 0) return 0;
  char tmp[9 * 18 + 1];
  size_t k = 0;
  int black_to_move = (ot_ply(s) & 1) == 0;
  uint64_t xs = black_to_move ? s->w[0] : s->w[1];
  uint64_t all = s->w[0] | s->w[1];
  memcpy(tmp, "  a b c d e f g h\n", 18);
  k = 18;
  for (int r = 0; r < OT_N; r++) {
    tmp[k++] = (char)('1' + r);
    for (int c = 0; c < OT_N; c++) {
      uint64_t bit = 1ULL << (r * OT_N + c);
      tmp[k++] = ' ';
      tmp[k++] = !(all & bit) ? '.' : (xs & bit) ? 'X' : 'O';
    }
    tmp[k++] = '\n';
  }
  return pb_game_text_out(buf, n, tmp, k);
}

/* Move lists: squares as a letter a-h (either case) and a digit 1-8,
 * "f5d6c3"; a pass may be written "pass" or "pa", or left out (a side with
 * no move passes by itself before the next square). */
static int ot_parse(pb_state_t *s, const char *moves, pb_err_t *err) {
  if (moves == NULL)
    return pb_err_set(err, PB_EINVAL, "othello: NULL move string");
  pb_state_t t;
  ot_reset(&t);
  size_t i = 0;
  while (moves[i] != '\0') {
    char ch = moves[i];
    uint8_t acts[PB_MAX_ACTIONS];
    int n = ot_legal(&t, acts), done = 0;
    if (ch == 'p' || ch == 'P') {
      size_t len = strncmp(moves + i + 1, "ass", 3) == 0 ? 4
                   : (moves[i + 1] == 'a' || moves[i + 1] == 'A') ? 2
                                                                  : 0;
      if (len == 0)
        return pb_err_set(err, PB_EINVAL,
                          "othello: bad pass at index %zu of \"%s\" (write "
                          "\"pass\" or \"pa\")",
                          i, moves);
      if (n != 1 || acts[0] != OT_PASS)
        return pb_err_set(err, PB_EILLEGAL,
                          "othello: pass at index %zu of \"%s\" is illegal "
                          "(%s)",
                          i, moves, n == 0 ? "the game is over"
                                           : "the side to move has a move");
      ot_step(&t, OT_PASS, &done);
      i += len;
      continue;
    }
    char lc = (char)(ch | 0x20), row = moves[i + 1];
    if (lc < 'a' || lc > 'h' || row < '1' || row > '8')
      return pb_err_set(err, PB_EINVAL,
                        "othello: bad move at index %zu of \"%s\" (squares "
                        "are a letter a-h and a digit 1-8, e.g. f5)",
                        i, moves);
    int sq = (row - '1') * OT_N + (lc - 'a');
    if (n == 1 && acts[0] == OT_PASS) { /* a forced pass left out */
      ot_step(&t, OT_PASS, &done);
      n = ot_legal(&t, acts);
    }
    if (n == 0)
      return pb_err_set(err, PB_EILLEGAL,
                        "othello: move %c%c at index %zu of \"%s\" comes "
                        "after the end of the game",
                        lc, row, i, moves);
    if (!((ot_moves(t.w[0], t.w[1]) >> sq) & 1))
      return pb_err_set(err, PB_EILLEGAL,
                        "othello: %c%c at index %zu of \"%s\" is illegal "
                        "(taken, or turns no disc over)",
                        lc, row, i, moves);
    ot_step(&t, sq, &done);
    i += 2;
  }
  *s = t;
  return 0;
}

static int ot_action_name(int action, char *buf, size_t n) {
  if (action < 0 || action > OT_PASS || buf == NULL) return PB_EINVAL;
  if (action == OT_PASS) {
    if (n < 5) return PB_EINVAL;
    memcpy(buf, "pass", 5);
    return 4;
  }
  if (n < 3) return PB_EINVAL;
  buf[0] = (char)('a' + action % OT_N);
  buf[1] = (char)('1' + action / OT_N);
  buf[2] = '\0';
  return 2;
}

/* Left-right mirror (column a <-> h): reverse the bits of every byte. */
static uint64_t ot_mirror_bits(uint64_t b) {
  b = ((b >> 1) & 0x5555555555555555ULL) | ((b & 0x5555555555555555ULL) << 1);
  b = ((b >> 2) & 0x3333333333333333ULL) | ((b & 0x3333333333333333ULL) << 2);
  b = ((b >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((b & 0x0F0F0F0F0F0F0F0FULL) << 4);
  return b;
}

static void ot_mirror(const pb_state_t *s, pb_state_t *out) {
  pb_state_t m = *s;
  m.w[0] = ot_mirror_bits(s->w[0]);
  m.w[1] = ot_mirror_bits(s->w[1]);
  *out = m;
}

static int ot_mirror_action(int action) {
  if (action == OT_PASS) return OT_PASS;
  return (action & ~7) | (7 - (action & 7));
}

static int ot_material(const pb_state_t *s) {
  return __builtin_popcountll(s->w[0]) - __builtin_popcountll(s->w[1]);
}

const pb_game_t pb_game_othello = {
    .name = "othello",
    .id = PB_GAME_OTHELLO,
    .num_actions = OT_CELLS + 1,
    .planes = 4,
    .height = OT_N,
    .width = OT_N,
    .state_bytes = 17,
    .max_turns = OT_MAX_PLY,
    .reset = ot_reset,
    .legal = ot_legal,
    .step = ot_step,
    .terminal = ot_terminal,
    .encode = ot_encode,
    .pack = ot_pack,
    .unpack = ot_unpack,
    .hash = ot_hash,
    .ply = ot_ply,
    .render = ot_render,
    .parse = ot_parse,
    .action_name = ot_action_name,
    .mirror = ot_mirror,
    .mirror_action = ot_mirror_action,
    .material = ot_material,
};
