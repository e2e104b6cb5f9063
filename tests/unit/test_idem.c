/*
 * Unit tests of the idempotency keys (daemon/idem.c) against a real store
 * on a SQLite file (corefix.h): a key goes running -> queued -> done as
 * its first request is ingested and committed; a repeat finds it; the
 * request's fingerprint tells another body or ?run= from the same one; a
 * committed key is there again after a restart (read back from the
 * database), a key past the window or beyond the key limit is not; a first
 * request cut off leaves no key; an entry a request holds outlives its
 * dropping until released (ASan: nothing leaks, nothing is used freed).
 */
#include "gwcheck.h"
#include "corefix.h"

#include "hash.h"

static void idem(struct fix *f, struct gw_idem *t, double window_s, size_t max_keys)
{
	char err[256];
	ck_assert_msg(gw_idem_init(t, f->db, window_s, max_keys, err, sizeof(err)) == 0, "%s", err);
}

static uint64_t fp(const char *run, const char *body)
{
	return gw_fnv1a64_add(gw_idem_fp_begin(run), body, strlen(body));
}

START_TEST(a_key_from_first_request_to_committed)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	struct gw_idem t;
	idem(&f, &t, 86400, 100);
	double now = gw_wall_now();
	ck_assert_ptr_null(gw_idem_get(&t, "k1", 2, now, 0));
	struct gw_idem_entry *e = gw_idem_begin(&t, "k1", 2, now);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->state, GW_IDEM_RUNNING);
	ck_assert_ptr_eq(gw_idem_get(&t, "k1", 2, now, 0), e);   /* a repeat meanwhile */
	uint64_t seq = gw_idem_queue(&t, f.store, e, 200, "{\"accepted\":3}", fp("r", "body"));
	ck_assert_uint_gt(seq, 0);
	ck_assert_int_eq(e->state, GW_IDEM_QUEUED);
	/* not committed yet: still queued; committed: done */
	ck_assert_int_eq(gw_idem_get(&t, "k1", 2, now, seq - 1)->state, GW_IDEM_QUEUED);
	fix_wait_seq(&f, seq);
	ck_assert_int_eq(gw_idem_get(&t, "k1", 2, now, gw_store_committed(f.store))->state,
	                 GW_IDEM_DONE);
	ck_assert_str_eq(e->answer, "{\"accepted\":3}");
	ck_assert_int_eq(e->status, 200);
	gw_idem_deinit(&t);
	ck_assert_int_eq(gw_store_close(f.store), 0);
	f.store = NULL;
	fix_end(&f);
}
END_TEST

START_TEST(the_fingerprint_tells_requests_apart)
{
	ck_assert_uint_eq(fp("r", "a\nb\n"), fp("r", "a\nb\n"));
	ck_assert_uint_ne(fp("r", "a\nb\n"), fp("r", "a\nc\n"));   /* another body */
	ck_assert_uint_ne(fp("r", "x"), fp("s", "x"));             /* another ?run= */
	ck_assert_uint_ne(fp(NULL, "x"), fp("r", "x"));            /* none, or one */
	/* the run's end is marked: "ab"+"c" is not "a"+"bc" */
	ck_assert_uint_ne(fp("ab", "c"), fp("a", "bc"));
}
END_TEST

START_TEST(a_committed_key_survives_a_restart)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	struct gw_idem t;
	idem(&f, &t, 86400, 100);
	double now = gw_wall_now();
	struct gw_idem_entry *e = gw_idem_begin(&t, "again", 5, now);
	uint64_t seq = gw_idem_queue(&t, f.store, e, 422, "{\"rejected\":1}", fp(NULL, "x"));
	/* and one made a day ago */
	e = gw_idem_begin(&t, "old", 3, now - 86400);
	uint64_t old = gw_idem_queue(&t, f.store, e, 200, "{}", 0);
	ck_assert_uint_gt(old, seq);
	seq = old;
	fix_wait_seq(&f, seq);
	gw_idem_deinit(&t);
	/* a new daemon with a window of an hour: the key is read back, done,
	 * with its answer and fingerprint; the day-old one is past the window */
	idem(&f, &t, 3600, 100);
	ck_assert_ptr_null(gw_idem_get(&t, "old", 3, now, 0));
	e = gw_idem_get(&t, "again", 5, now, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->state, GW_IDEM_DONE);
	ck_assert_int_eq(e->status, 422);
	ck_assert_str_eq(e->answer, "{\"rejected\":1}");
	ck_assert(e->has_fp);
	ck_assert_uint_eq(e->fp, fp(NULL, "x"));
	gw_idem_deinit(&t);
	ck_assert_int_eq(gw_store_close(f.store), 0);
	f.store = NULL;
	fix_end(&f);
}
END_TEST

START_TEST(keys_expire_by_age_and_by_count_once_settled)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	struct gw_idem t;
	idem(&f, &t, 100, 3);
	double now = gw_wall_now();
	char key[8];
	struct gw_idem_entry *e[5];
	uint64_t seq = 0;
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		e[i] = gw_idem_begin(&t, key, strlen(key), now + i);
		seq = gw_idem_queue(&t, f.store, e[i], 200, "{}", 0);
	}
	/* not committed: nothing may go, whatever the count */
	ck_assert_ptr_nonnull(gw_idem_get(&t, "k0", 2, now + 5, 0));
	ck_assert_uint_eq(t.count, 5);
	fix_wait_seq(&f, seq);
	uint64_t done = gw_store_committed(f.store);
	/* committed: the oldest beyond three go */
	ck_assert_ptr_null(gw_idem_get(&t, "k0", 2, now + 5, done));
	ck_assert_ptr_null(gw_idem_get(&t, "k1", 2, now + 5, done));
	ck_assert_ptr_nonnull(gw_idem_get(&t, "k2", 2, now + 5, done));
	ck_assert_uint_eq(t.count, 3);
	/* and by age: 100 s after k3 was made, k2 and k3 are past the window */
	ck_assert_ptr_null(gw_idem_get(&t, "k2", 2, now + 103.5, done));
	ck_assert_ptr_null(gw_idem_get(&t, "k3", 2, now + 103.5, done));
	ck_assert_ptr_nonnull(gw_idem_get(&t, "k4", 2, now + 103.5, done));
	/* their slots are used again */
	ck_assert_ptr_nonnull(gw_idem_begin(&t, "k5", 2, now + 104));
	ck_assert_uint_eq(t.count, 2);
	gw_idem_deinit(&t);
	ck_assert_int_eq(gw_store_close(f.store), 0);
	f.store = NULL;
	fix_end(&f);
}
END_TEST

START_TEST(a_dropped_key_held_by_a_request)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	struct gw_idem t;
	idem(&f, &t, 86400, 100);
	double now = gw_wall_now();
	/* a first request cut off before its body was read: no key stays */
	struct gw_idem_entry *e = gw_idem_begin(&t, "cut", 3, now);
	gw_idem_hold(e);
	gw_idem_drop(&t, e);
	ck_assert_ptr_null(gw_idem_get(&t, "cut", 3, now, 0));
	ck_assert(e->gone);
	ck_assert_str_eq(e->key, "cut");   /* still there for its holder */
	gw_idem_release(&t, e);            /* now freed */
	ck_assert_ptr_nonnull(gw_idem_begin(&t, "cut", 3, now));   /* a new first request */
	gw_idem_deinit(&t);
	ck_assert_int_eq(gw_store_close(f.store), 0);
	f.store = NULL;
	fix_end(&f);
}
END_TEST

int main(void)
{
	gw_log_init(GW_LOG_ERR, false);
	Suite *s = suite_create("idem");
	TCase *tc = tcase_create("idem");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_key_from_first_request_to_committed);
	tcase_add_test(tc, the_fingerprint_tells_requests_apart);
	tcase_add_test(tc, a_committed_key_survives_a_restart);
	tcase_add_test(tc, keys_expire_by_age_and_by_count_once_settled);
	tcase_add_test(tc, a_dropped_key_held_by_a_request);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
