/* test_workq.c - leases, expiry, duplicates, holders, shares and ids of
 * common/net/workq. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "workq.h"

static void test_in_order_and_done(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(16, 7, &err);
  assert_non_null(q);
  assert_int_equal(pb_workq_reset(q, 5, &err), 0);
  uint64_t ids[5];
  for (size_t k = 0; k < 5; k++) {
    size_t i;
    assert_int_equal(pb_workq_lease(q, 0.0, 10.0, 1, 0, &i, &ids[k]), 0);
    assert_int_equal(i, k);
  }
  size_t i;
  uint64_t id;
  assert_int_equal(pb_workq_lease(q, 0.0, 10.0, 1, 0, &i, &id), PB_EAGAIN);
  for (int k = 4; k >= 0; k--) {
    assert_false(pb_workq_finished(q));
    assert_int_equal(pb_workq_complete(q, ids[k], 1, -1.0, &i), PB_WORKQ_ACCEPTED);
    assert_int_equal(i, (size_t)k);
  }
  assert_true(pb_workq_finished(q));
  assert_int_equal(pb_workq_complete(q, ids[2], 1, -1.0, &i), PB_WORKQ_DUPLICATE);
  pb_workq_counts_t c;
  pb_workq_counts(q, &c);
  assert_int_equal(c.duplicates, 1);
  assert_int_equal(c.done, 5);
  /* A new phase: old ids are unknown. */
  assert_int_equal(pb_workq_reset(q, 3, &err), 0);
  assert_int_equal(pb_workq_complete(q, ids[0], 1, -1.0, &i), PB_WORKQ_UNKNOWN);
  assert_int_equal(pb_workq_reset(q, 17, &err), PB_ERANGE);
  pb_workq_destroy(&q);
  assert_null(q);
}

static int expired_seen;
static void on_expire(void *ctx, size_t index, uint32_t worker) {
  (void)ctx;
  assert_int_equal(worker, 9);
  expired_seen += (int)index + 1;
}

static void test_lease_expiry_and_renew(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(8, 1, &err);
  pb_workq_reset(q, 3, &err);
  size_t i0, i1, i;
  uint64_t id0, id1, id;
  pb_workq_lease(q, 0.0, 1.0, 9, 0, &i0, &id0);
  pb_workq_lease(q, 0.0, 1.0, 9, 0, &i1, &id1);
  /* Only the holder's heartbeat renews. */
  assert_int_equal(pb_workq_renew(q, id1, 4, 0.9, 1.0), PB_ENOTFOUND);
  assert_int_equal(pb_workq_renew(q, id1, 9, 0.9, 1.0), 0); /* until 1.9 */
  expired_seen = 0;
  assert_int_equal(pb_workq_expire(q, 1.5, on_expire, NULL), 1);
  assert_int_equal(expired_seen, 1); /* item 0 */
  assert_int_equal(pb_workq_renew(q, id0, 9, 1.5, 1.0), PB_ENOTFOUND);
  /* Item 0 is handed out again before item 2. */
  assert_int_equal(pb_workq_lease(q, 1.5, 1.0, 3, 0, &i, &id), 0);
  assert_int_equal(i, 0);
  /* The slow worker's late result is refused: worker 3 holds the lease
   * now ... */
  assert_int_equal(pb_workq_complete(q, id0, 9, -1.0, &i), PB_WORKQ_NOT_HOLDER);
  /* ... and its result is the one taken; a second is a duplicate. */
  assert_int_equal(pb_workq_complete(q, id, 3, -1.0, &i), PB_WORKQ_ACCEPTED);
  assert_int_equal(pb_workq_complete(q, id, 3, -1.0, &i), PB_WORKQ_DUPLICATE);
  /* Requeue after a bad result. */
  assert_int_equal(pb_workq_complete(q, id1, 9, -1.0, &i), PB_WORKQ_ACCEPTED);
  pb_workq_requeue(q, 1, 2.0);
  pb_workq_counts_t c;
  pb_workq_counts(q, &c);
  assert_int_equal(c.pending, 2);
  assert_int_equal(c.done, 1);
  assert_int_equal(c.not_holder, 1);
  assert_int_equal(pb_workq_lease(q, 2.0, 1.0, 3, 0, &i, &id), 0);
  assert_int_equal(i, 1);
  /* A worker that leaves gives its items back at once. */
  assert_int_equal(pb_workq_release(q, 3), 1);
  assert_int_equal(pb_workq_release(q, 3), 0);
  pb_workq_counts(q, &c);
  assert_int_equal(c.pending, 2);
  pb_workq_destroy(&q);
}

/* A result is taken only from the holder of the item's lease: not for an
 * item never handed out, not for another worker's item, not after the
 * lease expired (even when nobody took the item since). */
static void test_only_the_holder(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(8, 3, &err);
  pb_workq_reset(q, 3, &err);
  size_t i;
  uint64_t id0, id1;
  assert_int_equal(pb_workq_lease(q, 0.0, 1.0, 5, 0, &i, &id0), 0);
  /* Item 1 was never leased: its id is easy to guess, and refused. */
  assert_int_equal(pb_workq_complete(q, id0 + 1, 5, -1.0, &i), PB_WORKQ_NOT_HOLDER);
  assert_int_equal(pb_workq_complete(q, id0, 6, -1.0, &i), PB_WORKQ_NOT_HOLDER);
  assert_int_equal(pb_workq_expire(q, 2.0, NULL, NULL), 1);
  assert_int_equal(pb_workq_complete(q, id0, 5, -1.0, &i), PB_WORKQ_NOT_HOLDER);
  assert_false(pb_workq_finished(q));
  assert_int_equal(pb_workq_lease(q, 2.0, 1.0, 6, 0, &i, &id1), 0);
  assert_int_equal(id1, id0);
  assert_int_equal(pb_workq_complete(q, id0, 6, -1.0, &i), PB_WORKQ_ACCEPTED);
  pb_workq_counts_t c;
  pb_workq_counts(q, &c);
  assert_int_equal(c.not_holder, 3);
  pb_workq_destroy(&q);
}

/* An item that comes back (lease expired, result refused) goes to another
 * worker first: the worker it came from gets the next item instead, and
 * the same one only after the avoid time (it may be the only worker). */
static void test_expired_item_goes_elsewhere(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(8, 4, &err);
  pb_workq_set_avoid(q, 10.0);
  pb_workq_reset(q, 2, &err);
  size_t i;
  uint64_t id;
  assert_int_equal(pb_workq_lease(q, 0.0, 1.0, 1, 0, &i, &id), 0);
  assert_int_equal(i, 0);
  assert_int_equal(pb_workq_expire(q, 1.5, NULL, NULL), 1);
  /* The greedy holder asks again at once: item 1, not item 0. */
  assert_int_equal(pb_workq_lease(q, 1.5, 1.0, 1, 0, &i, &id), 0);
  assert_int_equal(i, 1);
  assert_int_equal(pb_workq_lease(q, 1.6, 1.0, 1, 0, &i, &id), PB_EAGAIN);
  /* Another worker takes item 0. */
  assert_int_equal(pb_workq_lease(q, 1.7, 1.0, 2, 0, &i, &id), 0);
  assert_int_equal(i, 0);
  /* A refused result: the same again. */
  assert_int_equal(pb_workq_complete(q, id, 2, -1.0, &i), PB_WORKQ_ACCEPTED);
  pb_workq_requeue(q, 0, 2.0);
  assert_int_equal(pb_workq_lease(q, 2.0, 1.0, 2, 0, &i, &id), PB_EAGAIN);
  /* Alone, it gets it back once the avoid time is over. */
  assert_int_equal(pb_workq_lease(q, 12.5, 1.0, 2, 0, &i, &id), 0);
  assert_int_equal(i, 0);
  /* Without an avoid time (the default), it goes back at once. */
  pb_workq_set_avoid(q, 0);
  assert_int_equal(pb_workq_expire(q, 20.0, NULL, NULL), 2);
  assert_int_equal(pb_workq_lease(q, 20.0, 1.0, 2, 0, &i, &id), 0);
  assert_int_equal(i, 0);
  pb_workq_destroy(&q);
}

/* max_held caps what one worker holds at once. */
static void test_share(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(8, 5, &err);
  pb_workq_reset(q, 6, &err);
  size_t i;
  uint64_t id[6];
  for (int k = 0; k < 3; k++)
    assert_int_equal(pb_workq_lease(q, 0.0, 1.0, 1, 3, &i, &id[k]), 0);
  assert_int_equal(pb_workq_held(q, 1), 3);
  assert_int_equal(pb_workq_lease(q, 0.0, 1.0, 1, 3, &i, &id[3]), PB_EAGAIN);
  assert_int_equal(pb_workq_lease(q, 0.0, 1.0, 2, 3, &i, &id[3]), 0);
  assert_int_equal(i, 3);
  assert_int_equal(pb_workq_complete(q, id[0], 1, -1.0, &i), PB_WORKQ_ACCEPTED);
  assert_int_equal(pb_workq_held(q, 1), 2);
  assert_int_equal(pb_workq_lease(q, 0.0, 1.0, 1, 3, &i, &id[4]), 0);
  assert_int_equal(i, 4);
  pb_workq_destroy(&q);
}

/* Heartbeats renew a lease only up to the cap from when it was handed
 * out; then the item expires and goes to the next worker. */
static void test_lease_cap(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(4, 1, &err);
  assert_non_null(q);
  pb_workq_set_max_lease(q, 3.0);
  assert_int_equal(pb_workq_reset(q, 1, &err), 0);
  size_t idx;
  uint64_t id;
  assert_int_equal(pb_workq_lease(q, 0.0, 1.0, 7, 0, &idx, &id), 0);
  /* A heartbeat every half second, for ten seconds. */
  size_t expired_at = 0;
  for (int k = 1; k <= 20 && expired_at == 0; k++) {
    double t = 0.5 * k;
    if (pb_workq_expire(q, t, NULL, NULL) > 0) expired_at = (size_t)k;
    else assert_int_equal(pb_workq_renew(q, id, 7, t, 1.0), 0);
  }
  /* Renewed to 3.0 at most: expired at the first check after it. */
  assert_int_equal(expired_at, 7);
  uint64_t id2;
  assert_int_equal(pb_workq_lease(q, 3.5, 1.0, 8, 0, &idx, &id2), 0);
  assert_int_equal(id2, id);
  /* A lease shorter than the cap is untouched by it; no cap: no limit. */
  pb_workq_set_max_lease(q, 0);
  for (int k = 1; k <= 40; k++) {
    double t = 3.5 + 0.5 * k;
    assert_int_equal(pb_workq_expire(q, t, NULL, NULL), 0);
    assert_int_equal(pb_workq_renew(q, id, 8, t, 1.0), 0);
  }
  pb_workq_destroy(&q);
}

static void test_ids_differ_between_queues(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *a = pb_workq_new(4, 1, &err), *b = pb_workq_new(4, 2, &err);
  pb_workq_reset(a, 1, &err);
  pb_workq_reset(b, 1, &err);
  size_t i;
  uint64_t ia, ib;
  pb_workq_lease(a, 0, 1, 0, 0, &i, &ia);
  pb_workq_lease(b, 0, 1, 0, 0, &i, &ib);
  assert_true(ia != ib);
  assert_int_equal(pb_workq_complete(b, ia, 0, -1.0, &i), PB_WORKQ_UNKNOWN);
  assert_int_equal(pb_workq_index(a, ia), 0);
  assert_int_equal(pb_workq_index(a, ia + 1), -1);
  pb_workq_destroy(&a);
  pb_workq_destroy(&b);
  assert_null(pb_workq_new(0, 0, &err));
}

/* An item that came back goes to a worker with a good record first: an
 * untrusted worker gets the items that never came back, and a returned
 * one only after the avoid time. */
static void test_returned_items_go_to_the_trusted(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(4, 1, &err);
  assert_non_null(q);
  pb_workq_set_avoid(q, 10.0);
  assert_int_equal(pb_workq_reset(q, 2, &err), 0);
  size_t i;
  uint64_t id0, id;
  assert_int_equal(pb_workq_lease_untrusted(q, 0.0, 1.0, 5, 0, &i, &id0), 0);
  assert_int_equal(i, 0);
  assert_int_equal(pb_workq_expire(q, 2.0, NULL, NULL), 1);
  /* Item 0 is back: another untrusted worker gets item 1, not item 0. */
  assert_int_equal(pb_workq_lease_untrusted(q, 2.0, 1.0, 6, 0, &i, &id), 0);
  assert_int_equal(i, 1);
  assert_int_equal(pb_workq_lease_untrusted(q, 2.1, 1.0, 7, 0, &i, &id),
                   PB_EAGAIN);
  /* A trusted one takes it. */
  assert_int_equal(pb_workq_lease(q, 2.2, 1.0, 8, 0, &i, &id), 0);
  assert_int_equal(i, 0);
  assert_int_equal(id, id0);
  /* Refused again: after the avoid time, anybody but its last holder. */
  pb_workq_requeue(q, 0, 3.0);
  assert_int_equal(pb_workq_lease_untrusted(q, 12.0, 1.0, 7, 0, &i, &id),
                   PB_EAGAIN);
  assert_int_equal(pb_workq_lease_untrusted(q, 13.5, 1.0, 7, 0, &i, &id), 0);
  assert_int_equal(i, 0);
  /* A new phase forgets what came back. */
  assert_int_equal(pb_workq_reset(q, 1, &err), 0);
  assert_int_equal(pb_workq_lease_untrusted(q, 14.0, 1.0, 5, 0, &i, &id), 0);
  pb_workq_destroy(&q);
}

static void test_empty_phase(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(4, 1, &err);
  pb_workq_reset(q, 0, &err);
  assert_true(pb_workq_finished(q));
  size_t i;
  uint64_t id;
  assert_int_equal(pb_workq_lease(q, 0, 1, 0, 0, &i, &id), PB_EAGAIN);
  pb_workq_destroy(&q);
}

/* Issue 46: backup copies. With nothing pending, an idle worker gets a
 * copy of the item held longest, once it has been held min_age; the first
 * result of either holder is taken and the other's dropped and counted;
 * each holder renews its own lease; when one lease ends (expired,
 * released) the other goes on alone. */
static void test_backup_copies(void **state) {
  (void)state;
  pb_err_t err;
  pb_workq_t *q = pb_workq_new(8, 3, &err);
  assert_non_null(q);
  assert_int_equal(pb_workq_reset(q, 3, &err), 0);
  size_t i, j;
  uint64_t id0, id1, id2, id;
  uint32_t holder;
  double age;
  assert_int_equal(pb_workq_lease(q, 0.0, 10.0, 1, 0, &i, &id0), 0); /* hung */
  assert_int_equal(pb_workq_lease(q, 0.0, 10.0, 2, 0, &i, &id1), 0);
  assert_int_equal(pb_workq_lease(q, 0.5, 10.0, 3, 0, &i, &id2), 0);
  assert_true(pb_workq_mean_time(q) == 0);
  assert_int_equal(pb_workq_complete(q, id1, 2, 1.0, &i), PB_WORKQ_ACCEPTED);
  assert_true(pb_workq_mean_time(q) == 1.0);
  /* Worker 2 is idle: nothing pending, and no lease is old enough yet. */
  assert_int_equal(pb_workq_lease(q, 2.0, 10.0, 2, 0, &i, &id), PB_EAGAIN);
  assert_int_equal(pb_workq_lease_copy(q, 2.0, 10.0, 2, 3.0, &i, &id, &holder,
                                       &age),
                   PB_EAGAIN);
  assert_true(pb_workq_oldest(q, 2.0, &i, &holder) == 2.0);
  assert_int_equal(i, 0);
  assert_int_equal(holder, 1);
  /* At 4 s: the oldest item (0, held by 1 since 0 s) is copied to 2. */
  assert_int_equal(pb_workq_lease_copy(q, 4.0, 10.0, 2, 3.0, &i, &id, &holder,
                                       &age),
                   0);
  assert_int_equal(i, 0);
  assert_true(id == id0);
  assert_int_equal(holder, 1);
  assert_true(age == 4.0);
  assert_int_equal(pb_workq_held(q, 2), 1);
  assert_int_equal(pb_workq_held(q, 1), 1);
  /* Not twice, not to the holder itself: the next copy is item 2's. */
  assert_int_equal(pb_workq_lease_copy(q, 4.0, 10.0, 1, 3.0, &i, &id, &holder,
                                       &age),
                   0);
  assert_int_equal(i, 2);
  assert_int_equal(holder, 3);
  assert_int_equal(pb_workq_lease_copy(q, 4.0, 10.0, 4, 0.0, &i, &id, &holder,
                                       &age),
                   PB_EAGAIN);
  /* The copy's result counts; the hung holder's, later, is dropped. */
  assert_int_equal(pb_workq_complete(q, id0, 2, 5.0, &i), PB_WORKQ_ACCEPTED);
  assert_int_equal(i, 0);
  uint32_t other = 0;
  assert_int_equal(pb_workq_overtaken(q, 0, &other), 1); /* 1 was */
  assert_int_equal(other, 1);
  assert_int_equal(pb_workq_overtaken(q, 1, &other), 0); /* its own */
  assert_int_equal(pb_workq_complete(q, id0, 1, 6.0, &i), PB_WORKQ_DUPLICATE);
  assert_int_equal(pb_workq_complete(q, id0, 4, 6.0, &i), PB_WORKQ_DUPLICATE);
  pb_workq_counts_t c;
  pb_workq_counts(q, &c);
  assert_int_equal(c.copies, 2);
  assert_int_equal(c.copies_won, 1);
  assert_int_equal(c.copies_dropped, 1);
  assert_int_equal(c.duplicates, 1);
  assert_true(pb_workq_mean_time(q) == 1.0); /* (1 + 1) / 2: the copy's 1 s */
  /* Item 2, held by 3 (since 0.5 s) and by its copy's 1 (since 4 s): each
   * renews its own lease; 3's expires at 10.5 s and 1 goes on with it. */
  assert_int_equal(pb_workq_renew(q, id2, 1, 8.0, 10.0), 0);
  assert_int_equal(pb_workq_renew(q, id2, 4, 8.0, 10.0), PB_ENOTFOUND);
  assert_int_equal(pb_workq_expire(q, 11.0, NULL, NULL), 1);
  pb_workq_counts(q, &c);
  assert_int_equal(c.leased, 1);
  assert_int_equal(c.pending, 0);
  assert_int_equal(pb_workq_held(q, 3), 0);
  assert_int_equal(pb_workq_complete(q, id2, 3, 12.0, &i), PB_WORKQ_NOT_HOLDER);
  /* 1 leaves: nothing holds item 2 any more, it is pending again. */
  assert_int_equal(pb_workq_release(q, 1), 1);
  pb_workq_counts(q, &c);
  assert_int_equal(c.pending, 1);
  assert_int_equal(pb_workq_lease(q, 12.0, 10.0, 5, 0, &j, &id), 0);
  assert_int_equal(j, 2);
  /* A copy whose holder leaves, and one whose lease expires, end; the
   * item stays with its holder. */
  assert_int_equal(pb_workq_lease_copy(q, 20.0, 10.0, 6, 1.0, &i, &id, &holder,
                                       &age),
                   0);
  assert_int_equal(pb_workq_release(q, 6), 1);
  assert_int_equal(pb_workq_held(q, 5), 1);
  assert_int_equal(pb_workq_lease_copy(q, 20.0, 1.0, 7, 1.0, &i, &id, &holder,
                                       &age),
                   0);
  assert_int_equal(pb_workq_renew(q, id, 5, 20.5, 10.0), 0);
  assert_int_equal(pb_workq_expire(q, 21.5, NULL, NULL), 1); /* 7's copy */
  assert_int_equal(pb_workq_held(q, 7), 0);
  assert_int_equal(pb_workq_held(q, 5), 1);
  assert_int_equal(pb_workq_complete(q, id, 7, 22.0, &i), PB_WORKQ_NOT_HOLDER);
  assert_int_equal(pb_workq_complete(q, id, 5, 22.0, &i), PB_WORKQ_ACCEPTED);
  assert_int_equal(pb_workq_overtaken(q, i, &other), 0);
  assert_true(pb_workq_finished(q));
  /* A new phase forgets the copies. */
  assert_int_equal(pb_workq_reset(q, 1, &err), 0);
  assert_int_equal(pb_workq_lease(q, 30.0, 10.0, 1, 0, &i, &id), 0);
  assert_int_equal(pb_workq_held(q, 2), 0);
  assert_true(pb_workq_mean_time(q) == 0);
  pb_workq_destroy(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_in_order_and_done),
      cmocka_unit_test(test_lease_expiry_and_renew),
      cmocka_unit_test(test_only_the_holder),
      cmocka_unit_test(test_expired_item_goes_elsewhere),
      cmocka_unit_test(test_share),
      cmocka_unit_test(test_lease_cap),
      cmocka_unit_test(test_ids_differ_between_queues),
      cmocka_unit_test(test_returned_items_go_to_the_trusted),
      cmocka_unit_test(test_empty_phase),
      cmocka_unit_test(test_backup_copies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
