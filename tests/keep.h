/* keep.h - what a cmocka test allocates, freed by its teardown even when an
 * assertion failed (cmocka leaves a failed test by longjmp, past the test's
 * own frees, and runs the teardown after it: without this LeakSanitizer
 * reports everything the failed test held as a second failure).
 *
 *   cmocka_unit_test_setup_teardown(test_x, keep_setup, keep_teardown)
 *   float *v = keep_alloc(state, n * sizeof *v);
 *   pb_nn_t *nn = keep(state, make(...), keep_nn);
 *
 * keep() takes any pointer with the function that frees it (called with the
 * pointer, NULL pointers are not kept); teardown frees in reverse order.
 * Include after cmocka.h. */
#ifndef PB_TEST_KEEP_H
#define PB_TEST_KEEP_H

#include <stdlib.h>

typedef void (*keep_free_fn)(void *p);

enum { KEEP_MAX = 64 };

typedef struct {
  void *p[KEEP_MAX];
  keep_free_fn fn[KEEP_MAX];
  int n;
} keep_t;

static inline int keep_setup(void **state) {
  keep_t *k = calloc(1, sizeof *k);
  if (k == NULL) return -1;
  *state = k;
  return 0;
}

static inline int keep_teardown(void **state) {
  keep_t *k = *state;
  if (k == NULL) return 0;
  while (k->n > 0) {
    k->n--;
    k->fn[k->n](k->p[k->n]);
  }
  free(k);
  *state = NULL;
  return 0;
}

/* p, now owned by the test's teardown (fn frees it). */
static inline void *keep(void **state, void *p, keep_free_fn fn) {
  keep_t *k = *state;
  if (p == NULL) return NULL;
  if (k->n == KEEP_MAX) fail_msg("keep.h: more than %d objects", KEEP_MAX);
  k->p[k->n] = p;
  k->fn[k->n] = fn;
  k->n++;
  return p;
}

/* malloc(n), freed by the teardown; fails the test when out of memory. */
static inline void *keep_alloc(void **state, size_t n) {
  void *p = malloc(n);
  if (p == NULL) fail_msg("keep.h: out of memory (%zu bytes)", n);
  return keep(state, p, free);
}

#endif
