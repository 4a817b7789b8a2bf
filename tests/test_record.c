/* test_record.c - game records (common/play/record.h): random games of
 * every game written and read back move for move, move strings against
 * the games' own parsers, lines a reader must refuse (each naming what is
 * wrong), files appended to and never truncated (a foreign file refused
 * and left as it was), self-play episodes as games, Othello as GGF, and
 * the match's hook that hands each game over in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "game.h"
#include "json.h"
#include "jsonread.h"
#include "match.h"
#include "record.h"
#include "rng.h"

static const pb_game_t *const GAMES[] = {&pb_game_connect4, &pb_game_tictactoe,
                                         &pb_game_othello, &pb_game_toguz};

/* A random game of g into moves: to its end, or cut after `cut` plies
 * (0: no cut). Returns the number of plies; *result for the first player,
 * *capped when cut unfinished. */
static int random_game(const pb_game_t *g, pb_rng_t *rng, int cut,
                       uint8_t *moves, int *result, int *capped) {
  pb_state_t s;
  g->reset(&s);
  int n = 0, done = 0;
  *result = 0;
  *capped = 0;
  while (!done) {
    if (cut > 0 && n == cut) {
      *capped = 1;
      break;
    }
    uint8_t acts[PB_MAX_ACTIONS];
    int na = g->legal(&s, acts);
    assert_true(na > 0);
    int a = acts[pb_rng_below(rng, (uint32_t)na)];
    float r = g->step(&s, a, &done);
    moves[n++] = (uint8_t)a;
    if (done) *result = (n % 2 == 1 ? 1 : -1) * ((r > 0) - (r < 0));
  }
  return n;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = calloc(1, 1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void spit(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* Every game: random games (Toguz Kumalak's cut at 300 plies, capped)
 * to a line and back, the same moves and members; the move string is
 * what the game's own parser reads to the same position. */
static void test_round_trip(void **state) {
  (void)state;
  uint8_t *moves = malloc(PB_RECORD_MOVES_MAX), *back = malloc(4096);
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  pb_json_t j;
  pb_json_init(&j);
  pb_rng_t rng;
  pb_rng_seed(&rng, 7, 0);
  int passes = 0;
  for (size_t gi = 0; gi < sizeof GAMES / sizeof GAMES[0]; gi++) {
    const pb_game_t *g = GAMES[gi];
    for (int it = 0; it < 40; it++) {
      pb_record_t r, r2;
      pb_record_init(&r, g);
      r.n_moves = random_game(g, &rng, g->id == PB_GAME_TOGUZ ? 300 : 0, moves,
                              &r.result, &r.capped);
      r.moves = moves;
      snprintf(r.first, sizeof r.first, "lookahead:%d \"q\"", it);
      snprintf(r.second, sizeof r.second, "random");
      snprintf(r.source, sizeof r.source, "match");
      r.round = it + 1;
      r.version = it % 2 ? it : -1;
      r.opening_plies = it % 3;
      pb_err_t err;
      pb_err_clear(&err);
      assert_int_equal(pb_record_json(&r, &j, &err), 0);
      const char *line = pb_json_cstr(&j);
      assert_int_equal(pb_json_validate(line), 0);
      assert_null(strchr(line, '\n'));
      assert_int_equal(
          pb_record_parse(jr, line, strlen(line), back, 4096, &r2, &err), 0);
      assert_ptr_equal(r2.g, g);
      assert_string_equal(r2.first, r.first);
      assert_string_equal(r2.second, "random");
      assert_string_equal(r2.source, "match");
      assert_int_equal(r2.result, r.result);
      assert_int_equal(r2.capped, r.capped);
      assert_int_equal(r2.round, it + 1);
      assert_int_equal(r2.version, it % 2 ? it : -1);
      assert_int_equal(r2.iteration, -1);
      assert_int_equal(r2.opening_plies, it % 3);
      assert_int_equal(r2.n_moves, r.n_moves);
      assert_memory_equal(r2.moves, moves, (size_t)r.n_moves);
      /* The moves as --position takes them. */
      char text[8192];
      pb_record_moves_text(g, moves, r.n_moves, text, sizeof text);
      pb_state_t a, b;
      assert_int_equal(g->parse(&a, text, &err), 0);
      g->reset(&b);
      for (int i = 0; i < r.n_moves; i++) {
        int done;
        g->step(&b, moves[i], &done);
        char nm[16];
        g->action_name(moves[i], nm, sizeof nm);
        passes += !strcmp(nm, "pass");
      }
      assert_memory_equal(&a, &b, sizeof a);
    }
  }
  assert_true(passes > 0); /* Othello's passes were left out and found */
  pb_json_free(&j);
  pb_jsonr_destroy(&jr);
  free(moves);
  free(back);
}

/* Othello: a game cut right after a pass keeps the pass (nothing after
 * it implies it), and reads back with the same number of plies. */
static void test_trailing_pass(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_othello;
  uint8_t moves[256], back[256];
  pb_rng_t rng;
  pb_rng_seed(&rng, 3, 0);
  int found = 0;
  for (int it = 0; it < 2000 && !found; it++) {
    int result, capped, n = random_game(g, &rng, 0, moves, &result, &capped);
    for (int i = 0; i < n - 1 && !found; i++) {
      char nm[16];
      g->action_name(moves[i], nm, sizeof nm);
      if (strcmp(nm, "pass") != 0) continue;
      found = 1;
      pb_record_t r, r2;
      pb_record_init(&r, g);
      snprintf(r.first, sizeof r.first, "a");
      snprintf(r.second, sizeof r.second, "b");
      r.moves = moves;
      r.n_moves = i + 1;
      r.capped = 1;
      pb_json_t j;
      pb_json_init(&j);
      pb_err_t err;
      assert_int_equal(pb_record_json(&r, &j, &err), 0);
      assert_non_null(strstr(pb_json_cstr(&j), "pass\""));
      pb_jsonr_t *jr = pb_jsonr_new(NULL);
      assert_int_equal(pb_record_parse(jr, pb_json_cstr(&j), pb_json_len(&j),
                                       back, 256, &r2, &err),
                       0);
      assert_int_equal(r2.n_moves, i + 1);
      assert_memory_equal(back, moves, (size_t)i + 1);
      pb_jsonr_destroy(&jr);
      pb_json_free(&j);
    }
  }
  assert_true(found);
}

static void test_moves_parse(void **state) {
  (void)state;
  uint8_t m[64];
  int n = -1;
  pb_err_t err;
  assert_int_equal(
      pb_record_moves_parse(&pb_game_connect4, "4453", m, 64, &n, &err), 0);
  assert_int_equal(n, 4);
  assert_int_equal(m[0], 3);
  assert_int_equal(m[3], 2);
  assert_int_equal(
      pb_record_moves_parse(&pb_game_othello, "F5 d6C3", m, 64, &n, &err), 0);
  assert_int_equal(n, 3);
  assert_int_equal(pb_record_moves_parse(&pb_game_othello, "", m, 64, &n, &err),
                   0);
  assert_int_equal(n, 0);
  /* A seventh stone in one column, and one after the end. */
  assert_int_equal(
      pb_record_moves_parse(&pb_game_connect4, "4444444", m, 64, &n, &err),
      PB_EINVAL);
  assert_non_null(strstr(err.msg, "index 6"));
  assert_int_equal(
      pb_record_moves_parse(&pb_game_connect4, "12121212", m, 64, &n, &err),
      PB_EINVAL);
  assert_non_null(strstr(err.msg, "after the end"));
  assert_int_equal(
      pb_record_moves_parse(&pb_game_othello, "f5pass", m, 64, &n, &err),
      PB_EINVAL);
  assert_int_equal(
      pb_record_moves_parse(&pb_game_connect4, "4453", m, 3, &n, &err),
      PB_ERANGE);
}

/* Lines a reader refuses, each with PB_ECORRUPT (or PB_ERANGE) and a
 * message naming what is wrong. */
static void test_bad_lines(void **state) {
  (void)state;
  static const struct {
    const char *line, *says;
  } bad[] = {
      {"hello", "not a record"},
      {"[1,2]", "not an object"},
      {"{\"first\":\"a\",\"second\":\"b\",\"result\":\"1-0\",\"moves\":\"\"}",
       "\"game\""},
      {"{\"game\":\"chess\",\"first\":\"a\",\"second\":\"b\",\"result\":\"1-"
       "0\","
       "\"moves\":\"\"}",
       "unknown game"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\"}",
       "\"moves\""},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"2-0\",\"moves\":\"1212121\"}",
       "result \"2-0\""},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"0-1\",\"moves\":\"1212121\"}",
       "end the game 1-0"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1/2-1/2\",\"moves\":\"4453\"}",
       "unfinished"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\",\"plies\":8}",
       "\"plies\""},
      {"{\"format\":2,\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\"}",
       "format 2"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"12121218\"}",
       "index 7"},
      {"{\"game\":\"connect4\",\"first\":\"\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\"}",
       "without a name"},
      {"{\"game\":\"connect4\",\"first\":7,\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\"}",
       "\"first\" is a number"},
      {"{\"game\":\"connect4\",\"game\":\"othello\",\"first\":\"a\","
       "\"second\":\"b\",\"result\":\"1-0\",\"moves\":\"1212121\"}",
       "twice"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\",\"capped\":1}",
       "\"capped\""},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\",\"round\":0}",
       "\"round\""},
      /* Lost on time: the side to move lost (X after 4 plies). */
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"4453\",\"termination\":\"time\"}",
       "lost on time by the first player, but the result is 1-0"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\",\"termination\":"
       "\"time\"}",
       "finish the game"},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"0-1\",\"moves\":\"4453\",\"termination\":\"flag\"}",
       "\"termination\": \"flag\""},
      {"{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
       "\"result\":\"1-0\",\"moves\":\"1212121\",\"termination\":"
       "\"adjudication\"}",
       "adjudicated, but the moves finish"},
  };
  uint8_t m[256];
  pb_jsonr_t *jr = pb_jsonr_new(NULL);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_record_t r;
    pb_err_t err;
    pb_err_clear(&err);
    int rc =
        pb_record_parse(jr, bad[i].line, strlen(bad[i].line), m, 256, &r, &err);
    if (rc != PB_ECORRUPT || strstr(err.msg, bad[i].says) == NULL)
      fail_msg("line %zu: rc %d, \"%s\" (wanted \"%s\")", i, rc, err.msg,
               bad[i].says);
  }
  /* The good one they were made from, with members unknown to us. */
  const char *good =
      "{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
      "\"result\":\"1-0\",\"moves\":\"1212121\",\"x\":[1]}";
  pb_record_t r;
  assert_int_equal(pb_record_parse(jr, good, strlen(good), m, 256, &r, NULL),
                   0);
  assert_int_equal(r.n_moves, 7);
  /* A loss on time reads back, and writes the same line. */
  const char *timed =
      "{\"format\":1,\"game\":\"connect4\",\"first\":\"a\",\"second\":"
      "\"b\",\"result\":\"0-1\",\"plies\":4,\"moves\":\"4453\","
      "\"capped\":false,\"termination\":\"time\"}";
  assert_int_equal(pb_record_parse(jr, timed, strlen(timed), m, 256, &r, NULL),
                   0);
  assert_int_equal(r.time_loss, 1);
  assert_int_equal(r.result, -1);
  pb_json_t j;
  pb_json_init(&j);
  assert_int_equal(pb_record_json(&r, &j, NULL), 0);
  assert_string_equal(pb_json_cstr(&j), timed);
  pb_json_free(&j);
  const char *adj =
      "{\"game\":\"connect4\",\"first\":\"a\",\"second\":\"b\","
      "\"result\":\"1-0\",\"moves\":\"4453\",\"termination\":"
      "\"adjudication\"}";
  assert_int_equal(pb_record_parse(jr, adj, strlen(adj), m, 256, &r, NULL), 0);
  assert_int_equal(r.adjudicated, 1);
  pb_jsonr_destroy(&jr);
}

/* A record of n plies of a connect4 game that X wins in 7. */
static void c4_record(pb_record_t *r, uint8_t *m, const char *first) {
  pb_record_init(r, &pb_game_connect4);
  int n;
  assert_int_equal(
      pb_record_moves_parse(&pb_game_connect4, "1212121", m, 16, &n, NULL), 0);
  r->moves = m;
  r->n_moves = n;
  r->result = 1;
  snprintf(r->first, sizeof r->first, "%s", first);
  snprintf(r->second, sizeof r->second, "b");
}

static void test_append_never_truncates(void **state) {
  (void)state;
  char path[] = "/tmp/pb_test_record_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  uint8_t m[16];
  pb_record_t r;
  pb_err_t err;
  for (int k = 0; k < 3; k++) { /* three opens, a line each */
    pb_record_file_t *f = pb_record_file_open(path, PB_RECORD_JSONL, &err);
    assert_non_null(f);
    char who[8];
    snprintf(who, sizeof who, "p%d", k);
    c4_record(&r, m, who);
    assert_int_equal(pb_record_file_write(f, &r, &err), 0);
    pb_record_file_close(&f);
    assert_null(f);
  }
  char *text = slurp(path);
  const char *p1 = strstr(text, "\"p0\""), *p2 = strstr(text, "\"p1\""),
             *p3 = strstr(text, "\"p2\"");
  assert_true(p1 != NULL && p2 > p1 && p3 > p2);
  free(text);
  /* Read back: three games, then the end. */
  pb_record_reader_t *rd = pb_record_reader_open(path, &err);
  assert_non_null(rd);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(pb_record_reader_next(rd, &r, &err), 1);
    assert_int_equal(pb_record_reader_line(rd), k + 1);
  }
  assert_int_equal(pb_record_reader_next(rd, &r, &err), 0);
  pb_record_reader_destroy(&rd);

  /* A foreign file is refused and stays as it was. */
  spit(path, "my notes\nline two\n");
  assert_null(pb_record_file_open(path, PB_RECORD_JSONL, &err));
  assert_int_equal(err.code, PB_ECORRUPT);
  assert_non_null(strstr(err.msg, "refusing to append"));
  text = slurp(path);
  assert_string_equal(text, "my notes\nline two\n");
  free(text);
  assert_null(pb_record_file_open(path, PB_RECORD_GGF, &err));
  assert_int_equal(err.code, PB_ECORRUPT);

  /* A last line cut short keeps its bytes; the new line starts afresh. */
  c4_record(&r, m, "a");
  pb_json_t j;
  pb_json_init(&j);
  assert_int_equal(pb_record_json(&r, &j, &err), 0);
  char torn[2048];
  snprintf(torn, sizeof torn, "%s\n{\"game\":\"conn", pb_json_cstr(&j));
  spit(path, torn);
  pb_record_file_t *f = pb_record_file_open(path, PB_RECORD_JSONL, &err);
  assert_non_null(f);
  assert_int_equal(pb_record_file_write(f, &r, &err), 0);
  pb_record_file_close(&f);
  text = slurp(path);
  char want[4096];
  snprintf(want, sizeof want, "%s\n%s\n", torn, pb_json_cstr(&j));
  assert_string_equal(text, want);
  free(text);
  /* The reader names the torn line. */
  rd = pb_record_reader_open(path, &err);
  assert_int_equal(pb_record_reader_next(rd, &r, &err), 1);
  assert_int_equal(pb_record_reader_next(rd, &r, &err), PB_ECORRUPT);
  char at[4200];
  snprintf(at, sizeof at, "%s:2: ", path);
  assert_non_null(strstr(err.msg, at));
  pb_record_reader_destroy(&rd);
  pb_json_free(&j);

  /* Blank lines are skipped; an empty file is as good as a new one. */
  spit(path, "\n\n");
  f = pb_record_file_open(path, PB_RECORD_JSONL, &err);
  assert_non_null(f);
  pb_record_file_close(&f);
  unlink(path);
  /* A directory, and a file that cannot be read. */
  assert_null(pb_record_file_open("/tmp", PB_RECORD_JSONL, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_null(pb_record_reader_open("/nonexistent/x.jsonl", &err));
  assert_int_equal(err.code, PB_EIO);
}

/* Issue 46: what is not a regular file is refused before any read (a FIFO
 * without a writer does not block the open, /dev/zero is not read), a line
 * longer than PB_RECORD_LINE_MAX is refused once that many bytes are read
 * (a 64 MiB line: memory grows by far less than the line), and a record
 * file at a symbolic link is refused, the link's target left as it was. */
static void test_bounded_inputs(void **state) {
  (void)state;
  pb_err_t err;
  pb_err_clear(&err);
  assert_null(pb_record_reader_open("/dev/zero", &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "a character device, not a regular file"));
  char dir[] = "/tmp/pb_test_record_dir_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char fifo[4200], big[4200], link[4200], target[4200];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  snprintf(big, sizeof big, "%s/big.jsonl", dir);
  snprintf(link, sizeof link, "%s/link.jsonl", dir);
  snprintf(target, sizeof target, "%s/target.jsonl", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_null(pb_record_reader_open(fifo, &err));
  assert_non_null(strstr(err.msg, "a FIFO, not a regular file"));
  assert_null(pb_record_reader_open(dir, &err));
  assert_non_null(strstr(err.msg, "a directory"));

  /* A good record, then a line of 64 MiB (a sparse file: NUL bytes). */
  uint8_t m[16];
  pb_record_t r;
  c4_record(&r, m, "a");
  pb_json_t j;
  pb_json_init(&j);
  assert_int_equal(pb_record_json(&r, &j, &err), 0);
  FILE *f = fopen(big, "wb");
  assert_non_null(f);
  fprintf(f, "%s\n", pb_json_cstr(&j));
  long first = ftell(f);
  fclose(f);
  assert_int_equal(truncate(big, first + (64L << 20)), 0);
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  pb_record_reader_t *rd = pb_record_reader_open(big, &err);
  assert_non_null(rd);
  assert_int_equal(pb_record_reader_next(rd, &r, &err), 1);
  assert_int_equal(pb_record_reader_next(rd, &r, &err), PB_ERANGE);
  assert_non_null(strstr(err.msg, ":2: a line longer than"));
  pb_record_reader_destroy(&rd);
  getrusage(RUSAGE_SELF, &ru1);
  /* ru_maxrss in KiB: the reader held at most the limit (4 MiB) + 2. */
  assert_true(ru1.ru_maxrss - ru0.ru_maxrss < 32L * 1024);
  /* A line of exactly the limit is read (and is not a record). */
  f = fopen(big, "wb");
  assert_non_null(f);
  for (unsigned i = 0; i < PB_RECORD_LINE_MAX; i++) fputc('x', f);
  fputc('\n', f);
  fclose(f);
  rd = pb_record_reader_open(big, &err);
  assert_non_null(rd);
  assert_int_equal(pb_record_reader_next(rd, &r, &err), PB_ECORRUPT);
  pb_record_reader_destroy(&rd);

  /* --record onto a symbolic link: refused, the target untouched. */
  spit(target, "");
  assert_int_equal(symlink(target, link), 0);
  assert_null(pb_record_file_open(link, PB_RECORD_JSONL, &err));
  assert_int_equal(err.code, PB_EIO);
  assert_non_null(strstr(err.msg, "a symbolic link"));
  assert_null(pb_record_file_open(link, PB_RECORD_GGF, &err));
  struct stat st;
  assert_int_equal(stat(target, &st), 0);
  assert_int_equal(st.st_size, 0);
  /* A dangling link is not created through either. */
  unlink(target);
  assert_null(pb_record_file_open(link, PB_RECORD_JSONL, &err));
  assert_non_null(strstr(err.msg, "a symbolic link"));
  assert_int_not_equal(access(target, F_OK), 0);
  pb_json_free(&j);
  unlink(link);
  unlink(big);
  unlink(fifo);
  rmdir(dir);
}

/* Self-play episodes (the positions before each move) as games. */
static void test_episode(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_rng_t rng;
  pb_rng_seed(&rng, 11, 0);
  uint8_t moves[64], got[64];
  pb_state_t st[64];
  for (int it = 0; it < 50; it++) {
    int result, capped,
        n = random_game(g, &rng, it % 5 == 0 ? 9 : 0, moves, &result, &capped);
    int ns = n; /* the positions before each move */
    g->reset(&st[0]);
    for (int i = 0; i + 1 < ns; i++) {
      int done;
      st[i + 1] = st[i];
      g->step(&st[i + 1], moves[i], &done);
    }
    /* The last mover's reward, as the episode carries it. */
    int fr = capped ? 0 : ((ns - 1) % 2 == 0 ? result : -result);
    int nm = 0, res = 9, cap = 9;
    pb_err_t err;
    pb_err_clear(&err);
    assert_int_equal(
        pb_record_episode(g, st, ns, fr, got, 64, &nm, &res, &cap, &err), 0);
    assert_int_equal(res, result);
    assert_int_equal(cap, capped);
    /* A cut episode's last move is unknown; a finished one's is a move
     * that ends it so, maybe another than the one played. */
    assert_int_equal(nm, capped ? n - 1 : n);
    if (nm > 1) assert_memory_equal(got, moves, (size_t)(capped ? nm : nm - 1));
    pb_record_t r;
    pb_record_init(&r, g);
    snprintf(r.first, sizeof r.first, "v1");
    snprintf(r.second, sizeof r.second, "v1");
    r.moves = got;
    r.n_moves = nm;
    r.result = res;
    r.capped = cap;
    pb_json_t j;
    pb_json_init(&j);
    assert_int_equal(pb_record_json(&r, &j, &err), 0); /* checks out */
    pb_json_free(&j);
  }
  /* States that do not follow each other. */
  g->reset(&st[0]);
  st[1] = st[0];
  st[2] = st[0];
  int nm, res, cap;
  pb_err_t err;
  int done;
  g->step(&st[1], 3, &done);
  assert_int_equal(
      pb_record_episode(g, st, 3, 0, got, 64, &nm, &res, &cap, &err),
      PB_ECORRUPT);
}

static void test_ggf(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_othello;
  /* The standard start: black (the first player) has d3, c4, f5, e6. */
  pb_state_t s;
  g->reset(&s);
  uint8_t acts[PB_MAX_ACTIONS];
  int na = g->legal(&s, acts);
  char names[64] = "";
  for (int i = 0; i < na; i++) {
    char nm[16];
    g->action_name(acts[i], nm, sizeof nm);
    strcat(names, nm);
    strcat(names, " ");
  }
  assert_string_equal(names, "d3 c4 f5 e6 ");
  uint8_t moves[256];
  pb_rng_t rng;
  pb_rng_seed(&rng, 5, 0);
  pb_record_t r;
  pb_record_init(&r, g);
  r.n_moves = random_game(g, &rng, 0, moves, &r.result, &r.capped);
  r.moves = moves;
  snprintf(r.first, sizeof r.first, "abnet:[x]");
  snprintf(r.second, sizeof r.second, "random");
  char *t = NULL;
  size_t len = 0;
  pb_err_t err;
  assert_int_equal(pb_record_ggf(&r, &t, &len, &err), 0);
  assert_int_equal(strlen(t), len);
  assert_true(
      strncmp(t, "(;GM[Othello]PC[probs]PB[abnet:_x_]PW[random]RE[", 48) == 0);
  assert_non_null(strstr(t,
                         "BO[8 -------- -------- -------- ---O*--- "
                         "---*O--- -------- -------- -------- *]B["));
  assert_string_equal(t + len - 2, ";)");
  const char *re = strstr(t, "RE[");
  int diff = atoi(re + 3);
  assert_true(r.result > 0 ? diff > 0 : r.result < 0 ? diff < 0 : diff == 0);
  /* One B[..] or W[..] a ply, alternating, passes as PA. */
  int plies = 0;
  for (const char *p = strstr(t, "*]") + 2; *p == 'B' || *p == 'W';
       p = strchr(p, ']') + 1)
    assert_int_equal(*p, plies++ % 2 == 0 ? 'B' : 'W');
  assert_int_equal(plies, r.n_moves);
  free(t);
  pb_record_t c;
  uint8_t m[16];
  c4_record(&c, m, "a");
  assert_int_equal(pb_record_ggf(&c, &t, &len, &err), PB_EUNSUPP);
  assert_null(t);
}

static void test_spec(void **state) {
  (void)state;
  char path[64];
  long n;
  pb_err_t err;
  assert_int_equal(pb_record_spec("g.jsonl", path, sizeof path, &n, &err), 0);
  assert_string_equal(path, "g.jsonl");
  assert_int_equal(n, 1);
  assert_int_equal(pb_record_spec("a/g.jsonl:12", path, sizeof path, &n, &err),
                   0);
  assert_string_equal(path, "a/g.jsonl");
  assert_int_equal(n, 12);
  assert_int_equal(pb_record_spec("c:d.jsonl", path, sizeof path, &n, &err), 0);
  assert_string_equal(path, "c:d.jsonl");
  assert_int_equal(pb_record_spec("g.jsonl:0", path, sizeof path, &n, &err),
                   PB_EINVAL);
  assert_int_equal(pb_record_spec(":3", path, sizeof path, &n, &err),
                   PB_EINVAL);
  assert_int_equal(
      pb_record_spec("g.jsonl:99999999999", path, sizeof path, &n, &err),
      PB_EINVAL);
}

/* The match's hook: every game, in order, whatever the threads; its
 * moves from its start replay to its outcome. */
typedef struct {
  int seen;
  int in_order;
  const pb_game_t *g;
  const pb_state_t *openings;
} hook_t;

static int on_game(void *ctx, const pb_match_game_t *gm, pb_err_t *err) {
  hook_t *h = ctx;
  (void)err;
  h->in_order &= gm->index == h->seen++;
  pb_state_t s = gm->start != NULL ? *gm->start : (pb_state_t){{0}};
  if (gm->start == NULL) h->g->reset(&s);
  if (gm->opening >= 0 && gm->start != &h->openings[gm->opening]) return -1;
  int done = 0, ply0 = h->g->ply(&s), res = 0;
  for (int i = 0; i < gm->n_moves; i++) {
    float r = h->g->step(&s, gm->moves[i], &done);
    if (done) res = ((ply0 + i) % 2 == 0 ? 1 : -1) * ((r > 0) - (r < 0));
  }
  int for_a = gm->a_first ? res : -res;
  if (!done || for_a != gm->outcome) return pb_err_set(err, PB_EINVAL, "bad");
  return 0;
}

static int stop_at_5(void *ctx, const pb_match_result_t *sofar) {
  (void)ctx;
  return sofar->games == 5;
}

static void test_match_hook(void **state) {
  (void)state;
  const pb_game_t *g = &pb_game_connect4;
  pb_state_t open[2];
  assert_int_equal(g->parse(&open[0], "44", NULL), 0);
  assert_int_equal(g->parse(&open[1], "1", NULL), 0);
  for (int t = 1; t <= 3; t += 2) {
    hook_t h = {.in_order = 1, .g = g, .openings = open};
    pb_match_opts_t o;
    pb_match_opts_default(&o);
    o.a_spec = "lookahead:1";
    o.b_spec = "random";
    o.games = 12;
    o.threads = t;
    o.opening_random_moves = 1;
    o.openings = open;
    o.n_openings = 2;
    o.on_game = on_game;
    o.game_ctx = &h;
    o.on_games = t == 3 ? stop_at_5 : NULL;
    pb_match_result_t r;
    pb_err_t err;
    assert_int_equal(pb_match_play(g, &o, &r, &err), 0);
    assert_int_equal(h.seen, r.games);
    assert_int_equal(r.games, t == 3 ? 5 : 12);
    assert_true(h.in_order);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_trailing_pass),
      cmocka_unit_test(test_moves_parse),
      cmocka_unit_test(test_bad_lines),
      cmocka_unit_test(test_append_never_truncates),
      cmocka_unit_test(test_bounded_inputs),
      cmocka_unit_test(test_episode),
      cmocka_unit_test(test_ggf),
      cmocka_unit_test(test_spec),
      cmocka_unit_test(test_match_hook),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
