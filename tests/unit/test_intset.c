/*
 * Unit tests of lib's integer-key table (lib/intset.c): lookups and puts
 * (0 and UINT64_MAX are keys like any other), a second put keeping the
 * first value and reporting it, set replacing it, caller storage used
 * until the table outgrows it, then the heap, clearing in O(1) (the old
 * keys gone, the storage kept, the generation wrapping around), keys that
 * share their low bits (the mixing spreads them), and a model check: 8,000
 * random keys a round through several doublings, three rounds with clears
 * between them, against a plain sorted array.
 */
#include "gwcheck.h"

#include "intset.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

START_TEST(find_put_set)
{
	struct gw_intset t = {0};
	uint32_t v = 99, old = 0;
	ck_assert_int_eq(gw_intset_find(&t, 0, &v), -ENOENT);   /* empty, no storage */
	ck_assert_int_eq(gw_intset_put(&t, 0, 7, NULL), 0);      /* 0 is a key */
	ck_assert_int_eq(gw_intset_put(&t, UINT64_MAX, 8, NULL), 0);
	ck_assert_int_eq(gw_intset_put(&t, 42, 9, NULL), 0);
	ck_assert_int_eq(gw_intset_find(&t, 0, &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(gw_intset_find(&t, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 8);
	ck_assert_int_eq(gw_intset_find(&t, 43, NULL), -ENOENT);
	ck_assert_uint_eq(t.count, 3);
	/* a second put keeps the first value and says which */
	ck_assert_int_eq(gw_intset_put(&t, 42, 1, &old), -EEXIST);
	ck_assert_uint_eq(old, 9);
	ck_assert_int_eq(gw_intset_find(&t, 42, &v), 0);
	ck_assert_uint_eq(v, 9);
	/* set replaces, and adds */
	ck_assert_int_eq(gw_intset_set(&t, 42, 1), 0);
	ck_assert_int_eq(gw_intset_find(&t, 42, &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(gw_intset_set(&t, 5, 2), 0);
	ck_assert_uint_eq(t.count, 4);
	gw_intset_free(&t);
	ck_assert_int_eq(gw_intset_find(&t, 42, NULL), -ENOENT);
	ck_assert_uint_eq(t.cap, 0);
}
END_TEST

START_TEST(caller_storage_then_heap)
{
	struct gw_intset_slot buf[8];
	struct gw_intset t;
	gw_intset_init(&t, buf, 8);
	for (uint64_t k = 0; k < 4; k++)   /* load 1/2: still the caller's */
		ck_assert_int_eq(gw_intset_put(&t, k << 32, (uint32_t)k, NULL), 0);
	ck_assert_ptr_eq(t.slot, buf);
	ck_assert(!t.heap);
	ck_assert_int_eq(gw_intset_put(&t, 99, 99, NULL), 0);   /* the fifth: the heap */
	ck_assert_ptr_ne(t.slot, buf);
	ck_assert(t.heap);
	for (uint64_t k = 0; k < 4; k++) {
		uint32_t v;
		ck_assert_int_eq(gw_intset_find(&t, k << 32, &v), 0);
		ck_assert_uint_eq(v, k);
	}
	gw_intset_free(&t);
}
END_TEST

START_TEST(clear_keeps_storage)
{
	struct gw_intset_slot buf[16];
	struct gw_intset t;
	gw_intset_init(&t, buf, 16);
	for (uint64_t k = 1; k <= 8; k++)
		ck_assert_int_eq(gw_intset_put(&t, k, 0, NULL), 0);
	gw_intset_clear(&t);
	ck_assert_uint_eq(t.count, 0);
	ck_assert_ptr_eq(t.slot, buf);
	for (uint64_t k = 1; k <= 8; k++)
		ck_assert_int_eq(gw_intset_find(&t, k, NULL), -ENOENT);
	/* the same keys again, and others: a clear makes room for a full load */
	for (uint64_t k = 5; k <= 12; k++)
		ck_assert_int_eq(gw_intset_put(&t, k, (uint32_t)k, NULL), 0);
	ck_assert_ptr_eq(t.slot, buf);
	ck_assert_int_eq(gw_intset_find(&t, 4, NULL), -ENOENT);
	ck_assert_int_eq(gw_intset_find(&t, 12, NULL), 0);
	/* the generation wraps: the slots are wiped, nothing old shows again */
	t.gen = UINT32_MAX;
	for (size_t i = 0; i < t.cap; i++)
		if (buf[i].gen)
			buf[i].gen = UINT32_MAX;
	ck_assert_int_eq(gw_intset_find(&t, 12, NULL), 0);
	gw_intset_clear(&t);
	ck_assert_uint_eq(t.gen, 1);
	for (uint64_t k = 5; k <= 12; k++)
		ck_assert_int_eq(gw_intset_find(&t, k, NULL), -ENOENT);
	ck_assert_int_eq(gw_intset_put(&t, 7, 3, NULL), 0);
	ck_assert_int_eq(gw_intset_find(&t, 8, NULL), -ENOENT);
	gw_intset_free(&t);
}
END_TEST

/* Keys that differ only above bit 40 (tile numbers, shifted ids) would all
 * start at one slot without the mixing: the probes stay short. */
START_TEST(shared_low_bits)
{
	struct gw_intset t = {0};
	for (uint64_t k = 0; k < 1000; k++)
		ck_assert_int_eq(gw_intset_put(&t, k << 40, (uint32_t)k, NULL), 0);
	size_t longest = 0;
	for (size_t i = 0, run = 0; i < t.cap; i++) {
		run = t.slot[i].gen == t.gen ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	ck_assert_msg(longest < 40, "a run of %zu taken slots", longest);
	for (uint64_t k = 0; k < 1000; k++) {
		uint32_t v;
		ck_assert_int_eq(gw_intset_find(&t, k << 40, &v), 0);
		ck_assert_uint_eq(v, k);
	}
	gw_intset_free(&t);
}
END_TEST

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Where k is, or would go, in the sorted keys[0..n). */
static size_t lower_bound(const uint64_t *keys, size_t n, uint64_t k)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (keys[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* 8,000 keys a round (a few repeated on purpose), three rounds with a
 * clear between them, against a sorted array of what should be in. */
START_TEST(model_check)
{
	enum { N = 8000 };
	uint64_t seed = 0x9e3779b97f4a7c15ull, *keys = calloc(N, sizeof(*keys));
	ck_assert_ptr_nonnull(keys);
	struct gw_intset t = {0};
	for (int round = 0; round < 3; round++) {
		size_t n = 0;
		for (int i = 0; i < N; i++) {
			uint64_t k = i % 7 == 3 && n ? keys[rnd(&seed) % n] : rnd(&seed) >> (i % 64);
			int rc = gw_intset_put(&t, k, (uint32_t)i, NULL);
			size_t at = lower_bound(keys, n, k);
			bool had = at < n && keys[at] == k;
			ck_assert_int_eq(rc, had ? -EEXIST : 0);
			if (!had) {
				memmove(keys + at + 1, keys + at, (n - at) * sizeof(*keys));
				keys[at] = k;
				n++;
			}
			if (i % 1000 == 0)
				ck_assert_uint_eq(t.count, n);
		}
		for (size_t i = 0; i < n; i++)
			ck_assert_int_eq(gw_intset_find(&t, keys[i], NULL), 0);
		for (int i = 0; i < 1000; i++) {
			uint64_t k = rnd(&seed) | 1ull << 63;
			size_t at = lower_bound(keys, n, k);
			bool had = at < n && keys[at] == k;
			ck_assert_int_eq(gw_intset_find(&t, k, NULL), had ? 0 : -ENOENT);
		}
		ck_assert(t.count * 2 <= t.cap);   /* the load bound */
		gw_intset_clear(&t);
		for (size_t i = 0; i < n; i++)
			ck_assert_int_eq(gw_intset_find(&t, keys[i], NULL), -ENOENT);
	}
	gw_intset_free(&t);
	free(keys);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("intset");
	TCase *tc = tcase_create("intset");
	tcase_set_timeout(tc, 120);   /* a deadline, not a speed (sanitizers, a busy machine) */
	tcase_add_test(tc, find_put_set);
	tcase_add_test(tc, caller_storage_then_heap);
	tcase_add_test(tc, clear_keeps_storage);
	tcase_add_test(tc, shared_low_bits);
	tcase_add_test(tc, model_check);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
