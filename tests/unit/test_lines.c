/*
 * Unit tests of the line splitter (lib/lines.c): lines across chunk
 * boundaries, line numbers, the length limit, a partial last line.
 */
#include "gwcheck.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"

struct got {
	char text[16][64];
	uint64_t no[16];
	int st[16];
	int n;
	int stop_at;
};

static int collect(void *data, const char *line, size_t len, uint64_t lineno,
                   enum gw_line_status st)
{
	struct got *g = data;
	if (g->n < 16) {
		if (line)
			snprintf(g->text[g->n], sizeof(g->text[0]), "%.*s", (int)len, line);
		else
			g->text[g->n][0] = '\0';
		g->no[g->n] = lineno;
		g->st[g->n] = st;
	}
	g->n++;
	return g->stop_at && g->n == g->stop_at ? 7 : 0;
}

START_TEST(split_across_chunks)
{
	struct gw_lines l;
	struct got g = {0};
	gw_lines_init(&l, 100);
	const char *in = "ab\ncd\nef\n\ngh";
	/* one byte at a time is the hardest split */
	for (size_t i = 0; in[i]; i++)
		ck_assert_int_eq(gw_lines_feed(&l, in + i, 1, collect, &g), 0);
	ck_assert_int_eq(g.n, 4);
	ck_assert_str_eq(g.text[0], "ab");
	ck_assert_str_eq(g.text[2], "ef");
	ck_assert_str_eq(g.text[3], "");
	ck_assert_uint_eq(g.no[3], 4);
	gw_lines_finish(&l, collect, &g);
	ck_assert_int_eq(g.n, 5);
	ck_assert_str_eq(g.text[4], "gh");
	ck_assert_int_eq(g.st[4], GW_LINE_TRUNCATED);
	ck_assert_uint_eq(g.no[4], 5);
	gw_lines_free(&l);
}
END_TEST

START_TEST(too_long_is_skipped_once)
{
	struct gw_lines l;
	struct got g = {0};
	gw_lines_init(&l, 8);
	char big[40];
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(gw_lines_feed(&l, "ok\n", 3, collect, &g), 0);
	ck_assert_int_eq(gw_lines_feed(&l, big, 20, collect, &g), 0);
	ck_assert_int_eq(gw_lines_feed(&l, big, 20, collect, &g), 0);
	ck_assert_int_eq(gw_lines_feed(&l, "x\nnext\n", 7, collect, &g), 0);
	ck_assert_int_eq(g.n, 3);
	ck_assert_int_eq(g.st[1], GW_LINE_TOO_LONG);
	ck_assert_uint_eq(g.no[1], 2);
	ck_assert_str_eq(g.text[2], "next");
	ck_assert_uint_eq(g.no[2], 3);
	/* exactly at the limit is fine */
	ck_assert_int_eq(gw_lines_feed(&l, "12345678\n", 9, collect, &g), 0);
	ck_assert_str_eq(g.text[3], "12345678");
	gw_lines_free(&l);
}
END_TEST

START_TEST(stop_and_resume)
{
	struct gw_lines l;
	struct got g = {.stop_at = 2};
	gw_lines_init(&l, 100);
	const char *in = "a\nb\nc\n";
	ck_assert_int_eq(gw_lines_feed(&l, in, 6, collect, &g), 7);
	ck_assert_uint_eq(l.pend_len, 2);
	g.stop_at = 0;
	ck_assert_int_eq(gw_lines_feed(&l, l.pend, l.pend_len, collect, &g), 0);
	ck_assert_int_eq(g.n, 3);
	ck_assert_str_eq(g.text[2], "c");
	gw_lines_free(&l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lines");
	TCase *tc = tcase_create("lines");
	tcase_add_test(tc, split_across_chunks);
	tcase_add_test(tc, too_long_is_skipped_once);
	tcase_add_test(tc, stop_and_resume);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
