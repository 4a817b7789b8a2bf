/* lines.h - one line splitter: a text (a whole file read into memory, or
 * the bytes a stream has given so far) cut into lines.
 *
 *   pb_lines_t it;
 *   pb_lines_init(&it, text, len);
 *   const char *line;
 *   size_t n;
 *   while ((rc = pb_lines_next(&it, &line, &n)) == 1)
 *     ... line[0..n), the it.lineno-th line ...
 *
 * A line ends at '\n', and a '\r' just before it is dropped (a file
 * written with CRLF reads as one written with LF). A last line without its
 * '\n' is a line, except in a stream (it.partial = 1), where it is a line
 * still being written: it stays unread at it.pos, for the caller to keep
 * until more bytes come. An empty text has no lines, and "a\n" has one.
 * Bytes inside a line (NUL included) are the caller's to judge. */
#ifndef PB_LINES_H
#define PB_LINES_H

#include <stddef.h>

typedef struct {
  const char *text; /* the text being cut (borrowed) */
  char *wtext;      /* the same, when pb_lines_init_w made it writable */
  size_t len;       /* its bytes */
  size_t pos;       /* offset of the first byte not returned yet */
  size_t max;       /* longest line accepted, in bytes; 0: any length */
  int partial;      /* 1: the text is a stream's bytes so far */
  int lineno;       /* number of the last line returned, from 1 */
} pb_lines_t;

/* Starts cutting text[0..len) (text may be NULL when len is 0): no limit
 * on a line's length, not a stream. Set it->max and it->partial after. */
void pb_lines_init(pb_lines_t *it, const char *text, size_t len);

/* pb_lines_init for a text the caller may write to, for pb_lines_cut. */
void pb_lines_init_w(pb_lines_t *it, char *text, size_t len);

/* The next line: *line points into the text (not NUL-terminated) and *n
 * is its length without the '\n' and a '\r' before it. Returns 1 for a
 * line, 0 when no line is left (the end of the text, or in a stream the
 * unfinished last line at it->pos), or PB_ERANGE when the line is longer
 * than it->max: *line and *n then give it (in a stream, the part of an
 * unfinished line that has come), it->pos moves past it and it->lineno
 * counts it, so the caller may name it and go on. */
int pb_lines_next(pb_lines_t *it, const char **line, size_t *n);

/* pb_lines_next for a text given to pb_lines_init_w: the line also ends
 * in a NUL in place (over its '\r' or '\n'; a last line without '\n'
 * needs the text to have a writable byte at text[len], as the buffers
 * of pb_read_file do). */
int pb_lines_cut(pb_lines_t *it, char **line, size_t *n);

#endif
