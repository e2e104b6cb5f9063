/*
 * Unit tests of the growable buffer (lib/buf.c): appends keep the text
 * NUL-terminated across growth, gw_grow's capacities and its refusal of a
 * size that overflows, and the sticky error after a failed append until
 * the buffer is reset.
 */
#include "gwcheck.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

START_TEST(append_and_grow)
{
	struct gw_buf b = {0};
	ck_assert_int_eq(gw_buf_str(&b, "grad"), 0);
	ck_assert_int_eq(gw_buf_add(&b, " norm!", 5), 0);
	ck_assert_str_eq(b.p, "grad norm");
	ck_assert_uint_eq(b.len, 9);
	ck_assert_int_eq(gw_buf_add(&b, NULL, 0), 0);   /* nothing to add is fine */
	/* 10,000 appends: still one string, capacity a power of two */
	for (int i = 0; i < 10000; i++)
		ck_assert_int_eq(gw_buf_add(&b, "x", 1), 0);
	ck_assert_uint_eq(b.len, 10009);
	ck_assert_uint_eq(strlen(b.p), 10009);
	ck_assert_uint_eq(b.cap & (b.cap - 1), 0);
	ck_assert_int_eq(b.p[9], 'x');
	/* reserve, write in place, account */
	ck_assert_int_eq(gw_buf_reserve(&b, 3), 0);
	memcpy(b.p + b.len, "end", 3);
	b.len += 3;
	b.p[b.len] = '\0';
	ck_assert_str_eq(b.p + 10009, "end");
	gw_buf_free(&b);
	ck_assert_ptr_null(b.p);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(grow_arrays)
{
	double *x = NULL;
	size_t cap = 0;
	ck_assert_int_eq(gw_grow((void **)&x, &cap, 1, sizeof(*x)), 0);
	ck_assert_uint_eq(cap, 16);
	ck_assert_int_eq(gw_grow((void **)&x, &cap, 16, sizeof(*x)), 0);
	ck_assert_uint_eq(cap, 16);              /* enough room: nothing moves */
	ck_assert_int_eq(gw_grow((void **)&x, &cap, 17, sizeof(*x)), 0);
	ck_assert_uint_eq(cap, 32);
	x[31] = 1.0;
	/* a size that overflows is refused, and the array is kept */
	ck_assert_int_eq(gw_grow((void **)&x, &cap, SIZE_MAX / 4, sizeof(*x)), -ENOMEM);
	ck_assert_uint_eq(cap, 32);
	ck_assert(x[31] == 1.0);
	free(x);
}
END_TEST

START_TEST(sticky_error)
{
	struct gw_buf b = {0};
	ck_assert_int_eq(gw_buf_str(&b, "ok"), 0);
	ck_assert_int_eq(gw_buf_reserve(&b, SIZE_MAX - 1), -ENOMEM);
	ck_assert_str_eq(b.p, "ok");             /* left as it was */
	ck_assert_int_eq(gw_buf_str(&b, "more"), -ENOMEM);
	ck_assert_str_eq(b.p, "ok");
	gw_buf_free(&b);
	ck_assert_int_eq(b.err, 0);
	ck_assert_int_eq(gw_buf_str(&b, "again"), 0);
	ck_assert_str_eq(b.p, "again");
	/* reset: empty, the error cleared, the memory kept for the next use */
	ck_assert_int_eq(gw_buf_reserve(&b, SIZE_MAX - 1), -ENOMEM);
	char *mem = b.p;
	gw_buf_reset(&b);
	ck_assert_int_eq(b.err, 0);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.p, "");
	ck_assert_ptr_eq(b.p, mem);
	ck_assert_int_eq(gw_buf_str(&b, "next"), 0);
	ck_assert_str_eq(b.p, "next");
	gw_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buf");
	tcase_add_test(tc, append_and_grow);
	tcase_add_test(tc, grow_arrays);
	tcase_add_test(tc, sticky_error);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
