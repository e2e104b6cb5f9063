/*
 * Unit tests of lib's one hash and one table (lib/hash.h, lib/strtab.c):
 * FNV-1a against the published test vectors, continuation over pieces, and
 * the string -> index table: lookups (also with the caller's hash),
 * duplicates, keys that differ only in length or contain NUL, growth from
 * caller storage to the heap, and 5,000 keys through several doublings,
 * each found with its value and its near misses not found.
 */
#include "gwcheck.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "strtab.h"

START_TEST(fnv_vectors)
{
	/* the FNV reference test vectors (draft-eastlake-fnv, test suite) */
	ck_assert_uint_eq(gw_fnv1a32("", 0), 0x811c9dc5u);
	ck_assert_uint_eq(gw_fnv1a32("a", 1), 0xe40c292cu);
	ck_assert_uint_eq(gw_fnv1a32("foobar", 6), 0xbf9cf968u);
	ck_assert_uint_eq(gw_fnv1a64_add(GW_FNV64_INIT, "", 0), 0xcbf29ce484222325ull);
	ck_assert_uint_eq(gw_fnv1a64_add(GW_FNV64_INIT, "a", 1), 0xaf63dc4c8601ec8cull);
	ck_assert_uint_eq(gw_fnv1a64_add(GW_FNV64_INIT, "foobar", 6), 0x85944171f73967e8ull);
	/* continuing over pieces is hashing the concatenation */
	ck_assert_uint_eq(gw_fnv1a32_add(gw_fnv1a32("foo", 3), "bar", 3), 0xbf9cf968u);
	ck_assert_uint_eq(gw_fnv1a64_add(gw_fnv1a64_add(GW_FNV64_INIT, "fo", 2), "obar", 4),
	                  0x85944171f73967e8ull);
}
END_TEST

START_TEST(find_and_put)
{
	struct gw_strtab t = {0};
	uint32_t v = 99;
	ck_assert_int_eq(gw_strtab_find(&t, "x", 1, &v), -ENOENT);   /* empty, no storage */
	ck_assert_int_eq(gw_strtab_put(&t, "loss", 4, 7), 0);
	ck_assert_int_eq(gw_strtab_put(&t, "lossy", 5, 8), 0);
	ck_assert_int_eq(gw_strtab_put(&t, "", 0, 9), 0);             /* the empty key is a key */
	ck_assert_int_eq(gw_strtab_put(&t, "a\0b", 3, 10), 0);        /* NUL inside a key */
	ck_assert_int_eq(gw_strtab_find(&t, "loss", 4, &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(gw_strtab_find(&t, "lossy", 4, &v), 0);      /* only the first 4 bytes */
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(gw_strtab_find(&t, "lossy", 5, &v), 0);
	ck_assert_uint_eq(v, 8);
	ck_assert_int_eq(gw_strtab_find(&t, "los", 3, NULL), -ENOENT);
	ck_assert_int_eq(gw_strtab_find(&t, "", 0, &v), 0);
	ck_assert_uint_eq(v, 9);
	ck_assert_int_eq(gw_strtab_find(&t, "a\0b", 3, &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(gw_strtab_find(&t, "a\0c", 3, NULL), -ENOENT);
	/* with the hash given: the same answer, and the hash is what is used */
	ck_assert_int_eq(gw_strtab_find_hashed(&t, "lossy", 5, gw_fnv1a32("lossy", 5), &v), 0);
	ck_assert_uint_eq(v, 8);
	ck_assert_int_eq(gw_strtab_find_hashed(&t, "lossy", 5, gw_fnv1a32("loss", 4), NULL), -ENOENT);
	/* a second put of a key fails and keeps the first value */
	ck_assert_int_eq(gw_strtab_put(&t, "loss", 4, 1), -EEXIST);
	ck_assert_int_eq(gw_strtab_find(&t, "loss", 4, &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(gw_strtab_put(&t, NULL, 0, 1), -EINVAL);
	ck_assert_uint_eq(t.count, 4);
	gw_strtab_free(&t);
	ck_assert_uint_eq(t.count, 0);
	ck_assert_int_eq(gw_strtab_find(&t, "loss", 4, NULL), -ENOENT);
}
END_TEST

START_TEST(caller_storage_then_heap)
{
	/* 4 slots hold 2 keys at load 1/2; the third moves the table to the
	 * heap and leaves the caller's slots alone afterwards */
	struct gw_strtab_slot buf[4];
	struct gw_strtab t;
	gw_strtab_init(&t, buf, 4);
	ck_assert_int_eq(gw_strtab_put(&t, "a", 1, 0), 0);
	ck_assert_int_eq(gw_strtab_put(&t, "b", 1, 1), 0);
	ck_assert_ptr_eq(t.slot, buf);
	ck_assert(!t.heap);
	ck_assert_int_eq(gw_strtab_put(&t, "c", 1, 2), 0);
	ck_assert_ptr_ne(t.slot, buf);
	ck_assert(t.heap);
	uint32_t v;
	for (uint32_t i = 0; i < 3; i++) {
		char k = (char)('a' + i);
		ck_assert_int_eq(gw_strtab_find(&t, &k, 1, &v), 0);
		ck_assert_uint_eq(v, i);
	}
	gw_strtab_free(&t);   /* frees the heap slots, never buf */
}
END_TEST

/* Many keys, many of them colliding in the low bits: every key is found
 * with its value, every absent key is not, through several doublings. */
START_TEST(model_check)
{
	enum { N = 5000 };
	static char keys[N][16];
	struct gw_strtab t = {0};
	for (uint32_t i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "run-%u", i * 7919u);
		ck_assert_int_eq(gw_strtab_put(&t, keys[i], strlen(keys[i]), i), 0);
		ck_assert_uint_le(t.count * 2, t.cap);   /* load <= 1/2 */
	}
	ck_assert_uint_eq(t.count, N);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t v = UINT32_MAX;
		ck_assert_int_eq(gw_strtab_find(&t, keys[i], strlen(keys[i]), &v), 0);
		ck_assert_uint_eq(v, i);
		char absent[24];
		snprintf(absent, sizeof(absent), "run-%u", i * 7919u + 1);
		ck_assert_int_eq(gw_strtab_find(&t, absent, strlen(absent), NULL), -ENOENT);
	}
	gw_strtab_free(&t);
}
END_TEST

/* Puts and deletes in random order against a plain presence array: every
 * lookup agrees after every step (backward-shift deletion keeps every probe
 * run whole, on a small table so runs wrap around its end). */
START_TEST(delete_model_check)
{
	enum { N = 600, OPS = 40000 };
	static char keys[N][16];
	bool in[N] = {false};
	struct gw_strtab t = {0};
	unsigned x = 12345;
	for (uint32_t i = 0; i < N; i++)
		snprintf(keys[i], sizeof(keys[i]), "k%u", i * 31u);
	for (int op = 0; op < OPS; op++) {
		x = x * 1103515245u + 12345u;
		uint32_t k = (x >> 8) % N;
		uint32_t v = UINT32_MAX;
		if (in[k]) {
			ck_assert_int_eq(gw_strtab_del(&t, keys[k], strlen(keys[k]), &v), 0);
			ck_assert_uint_eq(v, k);
			in[k] = false;
		} else {
			ck_assert_int_eq(gw_strtab_put(&t, keys[k], strlen(keys[k]), k), 0);
			in[k] = true;
		}
		if (op % 97 == 0)
			for (uint32_t i = 0; i < N; i++)
				ck_assert_int_eq(gw_strtab_find(&t, keys[i], strlen(keys[i]), NULL),
				                 in[i] ? 0 : -ENOENT);
	}
	ck_assert_int_eq(gw_strtab_del(&t, "nope", 4, NULL), -ENOENT);
	ck_assert_int_eq(gw_strtab_set(&t, "nope", 4, 1), -ENOENT);
	gw_strtab_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strtab");
	TCase *tc = tcase_create("strtab");
	tcase_add_test(tc, fnv_vectors);
	tcase_add_test(tc, find_and_put);
	tcase_add_test(tc, caller_storage_then_heap);
	tcase_add_test(tc, model_check);
	tcase_add_test(tc, delete_model_check);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
