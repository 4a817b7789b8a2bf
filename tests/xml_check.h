/* xml_check.h - a minimal well-formedness check of the XML documents the
 * tests read (the evaluator's charts, svgplot's output). Header only. */
#ifndef PB_TEST_XML_CHECK_H
#define PB_TEST_XML_CHECK_H

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* A minimal well-formedness check of an XML document: a prolog, comments,
 * elements with quoted attributes, escaped text, tags that nest and
 * close, one root element named `root`. Returns NULL or what is wrong. */
static inline const char *xml_check(const char *s, const char *root) {
  static char why[160];
  const char *stack[256];
  size_t slen[256];
  int depth = 0, roots = 0;
  const char *p = s;
  if (!strncmp(p, "<?xml", 5)) {
    p = strstr(p, "?>");
    if (p == NULL) return "unterminated prolog";
    p += 2;
  }
  while (*p) {
    if (*p != '<') {
      if (*p == '>') return "raw '>' in text";
      if (*p == '&') {
        static const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;",
                                     "&apos;"};
        int ok = 0;
        for (int i = 0; i < 5; i++) ok |= !strncmp(p, ents[i], strlen(ents[i]));
        if (!ok) return "bad entity";
      }
      if (depth == 0 && !isspace((unsigned char)*p)) return "text outside root";
      p++;
      continue;
    }
    if (!strncmp(p, "<!--", 4)) {
      p = strstr(p, "-->");
      if (p == NULL) return "unterminated comment";
      p += 3;
      continue;
    }
    int closing = p[1] == '/';
    const char *name = p + 1 + closing;
    size_t n = 0;
    while (isalnum((unsigned char)name[n]) || name[n] == '-' ||
           name[n] == '_' || name[n] == ':')
      n++;
    if (n == 0 || !isalpha((unsigned char)name[0])) return "bad tag name";
    p = name + n;
    if (closing) {
      if (*p != '>') return "bad closing tag";
      if (depth == 0 || slen[depth - 1] != n ||
          strncmp(stack[depth - 1], name, n)) {
        snprintf(why, sizeof why, "closing </%.*s> does not match", (int)n,
                 name);
        return why;
      }
      depth--;
      p++;
      continue;
    }
    /* attributes */
    for (;;) {
      while (isspace((unsigned char)*p)) p++;
      if (*p == '>' || (*p == '/' && p[1] == '>')) break;
      size_t an = 0;
      while (isalnum((unsigned char)p[an]) || p[an] == '-' || p[an] == ':' ||
             p[an] == '_')
        an++;
      if (an == 0) return "bad attribute name";
      p += an;
      if (*p++ != '=') return "attribute without '='";
      if (*p != '"') return "unquoted attribute";
      const char *end = strchr(p + 1, '"');
      if (end == NULL) return "unterminated attribute";
      for (const char *q = p + 1; q < end; q++)
        if (*q == '<') return "'<' in an attribute";
      p = end + 1;
    }
    if (depth == 0) {
      roots++;
      if (strlen(root) != n || strncmp(name, root, n)) return "wrong root";
    }
    if (*p == '/') {
      p += 2;
      continue;
    }
    if (depth == 256) return "too deep";
    stack[depth] = name;
    slen[depth++] = n;
    p++;
  }
  if (depth != 0) return "unclosed element";
  if (roots != 1) return "not exactly one root";
  return NULL;
}

#endif
