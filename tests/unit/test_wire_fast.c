/*
 * The wire parser's fast paths held to the plain way (lib/wire_shape.c,
 * lib/wire_value.c): a long-lived parser, whose shape cache carries keys
 * from line to line, must read every line exactly as a fresh parser does
 * (shapes that repeat, change, shrink, grow, keys with escapes, keys that
 * are prefixes of others, duplicates after a cached prefix, literals as
 * the values of cached keys, an alias added between lines); and numbers read 8 digits at a time must be strtod's
 * bits for random decimals of every length.
 */
#include "gwcheck.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* Stack below the caller left all ones (-1 as an int): a variable the
 * parser reads before it sets it then reads as an error, not as the 0 a
 * fresh stack often happens to hold. */
static __attribute__((noinline)) void stack_garbage(void)
{
	volatile unsigned char junk[16384];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0xff;
}

/* Parse `line` with the long-lived w and with a fresh parser over the same
 * aliases; every part of the answer must be the same. */
static void same_as_fresh(struct gw_wire *w, struct gw_alias *al, const char *line)
{
	struct gw_wire *f = gw_wire_new(al);
	ck_assert_ptr_nonnull(f);
	struct gw_rec a, b;
	struct gw_wire_err ea, eb;
	stack_garbage();
	int ra = gw_wire_parse(w, line, strlen(line), NULL, &a, &ea);
	int rb = gw_wire_parse(f, line, strlen(line), NULL, &b, &eb);
	ck_assert_msg(ra == rb, "%s: rc %d, fresh %d", line, ra, rb);
	if (ra < 0) {
		ck_assert_int_eq(ea.reason, eb.reason);
		ck_assert_uint_eq(ea.column, eb.column);
		ck_assert_str_eq(ea.field, eb.field);
		ck_assert_str_eq(ea.msg, eb.msg);
	} else {
		ck_assert_str_eq(a.run, b.run);
		ck_assert_int_eq(a.step, b.step);
		ck_assert_uint_eq(a.present, b.present);
		ck_assert_uint_eq(a.fields, b.fields);
		for (int r = 0; r < GW_NROLES; r++)
			ck_assert_msg(memcmp(&a.v[r], &b.v[r], sizeof(double)) == 0, "%s: role %d", line, r);
		ck_assert_uint_eq(a.n_extra, b.n_extra);
		for (size_t k = 0; k < a.n_extra; k++) {
			ck_assert_str_eq(a.extra[k].name, b.extra[k].name);
			ck_assert(memcmp(&a.extra[k].value, &b.extra[k].value, sizeof(double)) == 0);
		}
		ck_assert_int_eq(a.event != NULL, b.event != NULL);
		if (a.event) {
			ck_assert_str_eq(a.event, b.event);
			ck_assert(json_equal(a.attrs, b.attrs));
		}
	}
	gw_wire_free(f);
}

START_TEST(shape_cache_reads_as_fresh)
{
	static const char *const lines[] = {
		"{\"run\":\"a\",\"step\":1,\"loss\":1.5,\"lr\":0.1,\"epoch\":0.5}",
		"{\"run\":\"a\",\"step\":2,\"loss\":1.4,\"lr\":0.1,\"epoch\":0.6}",
		/* the same keys in another order */
		"{\"step\":3,\"run\":\"a\",\"lr\":0.1,\"loss\":1.3,\"epoch\":0.7}",
		/* fewer, then more keys */
		"{\"step\":4,\"run\":\"a\"}",
		"{\"step\":5,\"run\":\"a\",\"lr\":0.1,\"loss\":1.3,\"epoch\":0.7,\"tokens\":9}",
		/* a key that is a prefix of the cached one, and one that extends it */
		"{\"step\":6,\"run\":\"a\",\"l\":0.1}",
		"{\"step\":7,\"run\":\"a\",\"lr2\":0.1}",
		"{\"step\":8,\"run\":\"a\",\"lr\":0.1}",
		/* the same name written with an escape, cached, then plain again */
		"{\"step\":9,\"run\":\"a\",\"l\\u0072\":0.2}",
		"{\"step\":10,\"run\":\"a\",\"l\\u0072\":0.2}",
		"{\"step\":11,\"run\":\"a\",\"lr\":0.3}",
		/* a duplicate after a cached prefix; an escaped duplicate */
		"{\"step\":12,\"run\":\"a\",\"lr\":0.3,\"lr\":0.4}",
		"{\"step\":13,\"run\":\"a\",\"lr\":0.3,\"l\\u0072\":0.4}",
		/* events, a line cut inside a cached key, white space */
		"{\"step\":14,\"run\":\"a\",\"event\":\"ckpt\",\"lr\":0.3,\"path\":\"/x\"}",
		"{\"step\":15,\"run\":\"a\",\"event\":\"ckpt\",\"lr\":0.3,\"path\":\"/y\"}",
		"{\"step\":16,\"run\":\"a\",\"ev",
		"{ \"step\" : 17 , \"run\" : \"a\" , \"event\" : \"ckpt\" }",
		/* runs: a bad one after good ones, an empty one first thing */
		"{\"step\":18,\"run\":\"a\\u0001\"}",
		"{\"step\":18,\"run\":\"\"}",
		"{\"step\":18,\"run\":\"b\"}",
		"{\"step\":18,\"run\":\"a\",\"my_loss\":2.5}",
		"{\"step\":19,\"run\":\"a\",\"my_loss\":2.5}",
		/* literals as values of cached keys (the keys set no rc then) */
		"{\"run\":\"a\",\"skip\":true,\"step\":20,\"f\":null,\"ok\":false}",
		"{\"run\":\"a\",\"skip\":true,\"step\":21,\"f\":null,\"ok\":false}",
		"{\"skip\":false,\"run\":\"a\",\"step\":22}",
		"{\"skip\":null,\"run\":\"a\",\"step\":23}",
	};
	struct gw_alias *al = gw_alias_new();
	struct gw_wire *w = gw_wire_new(al);
	same_as_fresh(w, al, "{\"step\":1,\"run\":\"\"}");
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
			same_as_fresh(w, al, lines[i]);
	/* an alias added between lines: the cached meaning must not outlive it */
	same_as_fresh(w, al, "{\"step\":20,\"run\":\"a\",\"my_loss\":2.5}");
	ck_assert_int_eq(gw_alias_add(al, GW_ROLE_LOSS, "my_loss"), 0);
	struct gw_rec r;
	const char *l = "{\"step\":21,\"run\":\"a\",\"my_loss\":2.5}";
	ck_assert_int_eq(gw_wire_parse(w, l, strlen(l), NULL, &r, NULL), 0);
	ck_assert(gw_rec_has(&r, GW_ROLE_LOSS));
	ck_assert_uint_eq(r.n_extra, 0);
	same_as_fresh(w, al, l);
	gw_wire_free(w);
	gw_alias_free(al);
}
END_TEST

/* A random decimal: sign, 0 to 24 integer digits, a fraction of 1 to 30
 * digits (some with leading zeros), an exponent. */
static void random_decimal(char *out, unsigned *seed)
{
	int p = 0;
	if (rand_r(seed) % 2)
		out[p++] = '-';
	int il = rand_r(seed) % 25;
	if (il == 0)
		out[p++] = '0';
	else
		for (int k = 0; k < il; k++)
			out[p++] = (char)((k == 0 ? '1' + rand_r(seed) % 9 : '0' + rand_r(seed) % 10));
	if (rand_r(seed) % 3) {
		out[p++] = '.';
		int fl = 1 + rand_r(seed) % 30, z = rand_r(seed) % 4 ? 0 : rand_r(seed) % 10;
		for (int k = 0; k < fl; k++)
			out[p++] = (char)(k < z ? '0' : '0' + rand_r(seed) % 10);
	}
	if (rand_r(seed) % 4 == 0) {
		out[p++] = rand_r(seed) % 2 ? 'e' : 'E';
		if (rand_r(seed) % 2)
			out[p++] = rand_r(seed) % 2 ? '-' : '+';
		p += sprintf(out + p, "%d", rand_r(seed) % 330);
	}
	out[p] = '\0';
}

START_TEST(numbers_are_strtods)
{
	struct gw_alias *al = gw_alias_new();
	struct gw_wire *w = gw_wire_new(al);
	unsigned seed = 21;
	for (int it = 0; it < 300000; it++) {
		char num[96], line[160];
		random_decimal(num, &seed);
		/* at the end of the line and with more text after it */
		int n = snprintf(line, sizeof(line), it % 2 ? "{\"run\":\"r\",\"step\":1,\"loss\":%s}"
		                 : "{\"run\":\"r\",\"loss\":%s,\"step\":1,\"lr\":1}", num);
		struct gw_rec r;
		ck_assert_msg(gw_wire_parse(w, line, (size_t)n, NULL, &r, NULL) == 0, "%s", num);
		double want = strtod(num, NULL);
		ck_assert_msg(memcmp(&r.v[GW_ROLE_LOSS], &want, sizeof(double)) == 0,
		              "%s: %.17g, strtod %.17g", num, r.v[GW_ROLE_LOSS], want);
	}
	gw_wire_free(w);
	gw_alias_free(al);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wire_fast");
	TCase *tc = tcase_create("fast");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, shape_cache_reads_as_fresh);
	tcase_add_test(tc, numbers_are_strtods);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gw_check_run(suite());
}
