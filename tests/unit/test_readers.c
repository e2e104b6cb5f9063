/*
 * Unit tests of the readers layer (readers/): the framework (compression,
 * sniffing, line splitting, the consumed offset, "nothing readable"), runs
 * split on restarts and carried into a new reader, the run-name rule and
 * the aliases.  Every input is fed twice, in one piece and byte by byte,
 * and must give the same points (rdtest.c).  Each text format's hazards:
 * test_rd_formats.c.
 */
#include "gwcheck.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "rdtest.h"
#include "reader.h"
#include "wire.h"

/* ---- framework ------------------------------------------------------------ */

START_TEST(ndjson_plain)
{
	struct res r;
	read_str("{\"run\":\"a\",\"step\":1,\"loss\":2.5,\"grad_norm\":NaN,\"x\":3}\n"
	         "\n"
	         "{\"step\":2,\"loss\":2.25}\n"
	         "{\"run\":\"a\",\"step\":3,\"loss\":\"bad\"}\n"
	         "{\"run\":\"a\",\"step\":4,\"event\":\"checkpoint_saved\"}\n",
	         NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.format, "ndjson");
	ck_assert_str_eq(r.g.text, "1 a 1 loss=2.5 grad_norm=NaN | x=3\n"
	                           "3 r 2 loss=2.25\n"
	                           "5 a 4 event=checkpoint_saved\n");
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 4);
	ck_assert_str_eq(r.g.errmsg[0], "bad_value: field \"loss\" at column 28: expected a number "
	                                "(or NaN/Infinity), got a string");
	ck_assert_int_eq(r.lines, 5);
	free(r.g.text);
}
END_TEST

START_TEST(ndjson_cut_last_line)
{
	struct res r;
	read_str("{\"run\":\"a\",\"step\":1,\"loss\":1}\n{\"run\":\"a\",\"step\":2,\"lo", NULL, &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(r.g.points, 1);
	ck_assert_int_eq(r.g.errors, 1);
	ck_assert_int_eq(r.g.errline[0], 2);
	ck_assert_msg(strstr(r.g.errmsg[0], "(last line, no newline) malformed_json"), "%s", r.g.errmsg[0]);
	free(r.g.text);
}
END_TEST

START_TEST(nothing_readable)
{
	struct res r;
	read_str("hello world\nthis is not a training log\n", NULL, &r);
	ck_assert_int_eq(r.rc, -EPROTO);
	ck_assert_msg(strstr(r.err, "nothing readable") && strstr(r.err, "tried: ndjson"), "%s", r.err);
	free(r.g.text);

	read_str("", NULL, &r);
	ck_assert_int_eq(r.rc, -EPROTO);
	ck_assert_msg(strstr(r.err, "empty"), "%s", r.err);
	free(r.g.text);

	/* recognised, but every line is rejected: still nothing readable */
	read_str("{\"run\":\"a\",\"step\":\"x\"}\n{\"run\":\"a\",\"step\":-1}\n", NULL, &r);
	ck_assert_int_eq(r.rc, -EPROTO);
	ck_assert_int_eq(r.g.errors, 2);
	ck_assert_msg(strstr(r.err, "nothing readable: read as ndjson"), "%s", r.err);
	free(r.g.text);
}
END_TEST

START_TEST(unknown_format)
{
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = "nope"};
	struct gw_reader_sink s = {.on_rec = on_rec};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &s, &r, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "unknown input format \"nope\"") && strstr(err, "ndjson"), "%s", err);
	ck_assert_ptr_eq(gw_reader_format_find("nope"), NULL);
	ck_assert_ptr_ne(gw_reader_format_find("ndjson"), NULL);
}
END_TEST

static char *gzip_of(const char *s, size_t n, size_t *out_len)
{
	z_stream z = {0};
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	size_t cap = deflateBound(&z, n) + 64;
	char *out = malloc(cap);
	z.next_in = (unsigned char *)s;
	z.avail_in = (uInt)n;
	z.next_out = (unsigned char *)out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static char *zstd_of(const char *s, size_t n, size_t *out_len)
{
	/* with a checksum, as the zstd command writes by default */
	size_t cap = ZSTD_compressBound(n);
	char *out = malloc(cap);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	*out_len = ZSTD_compress2(c, out, cap, s, n);
	ZSTD_freeCCtx(c);
	ck_assert(!ZSTD_isError(*out_len));
	return out;
}

static char *ndjson_lines(int n, size_t *len)
{
	char *s = malloc((size_t)n * 64 + 1);
	size_t o = 0;
	for (int i = 1; i <= n; i++)
		o += (size_t)sprintf(s + o, "{\"run\":\"z\",\"step\":%d,\"loss\":%d.5}\n", i, i % 7);
	*len = o;
	return s;
}

START_TEST(gzip_and_zstd)
{
	size_t n, gn, zn;
	char *plain = ndjson_lines(3000, &n);
	char *gz = gzip_of(plain, n, &gn);
	char *zs = zstd_of(plain, n, &zn);
	struct res a, b, c;
	read_with(plain, n, 0, NULL, &a);
	read_both(gz, gn, NULL, &b);
	read_both(zs, zn, NULL, &c);
	ck_assert_int_eq(a.rc, 0);
	ck_assert_int_eq(a.g.points, 3000);
	ck_assert_int_eq(b.rc, 0);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_str_eq(a.g.text, b.g.text);
	ck_assert_str_eq(a.g.text, c.g.text);
	ck_assert_int_eq(b.consumed, n); /* of the decompressed input */

	/* two gzip members one after the other are one input */
	char *two = malloc(gn * 2);
	memcpy(two, gz, gn);
	memcpy(two + gn, gz, gn);
	struct res d;
	read_with(two, gn * 2, 0, NULL, &d);
	ck_assert_int_eq(d.rc, 0);
	ck_assert_int_eq(d.g.points, 6000);
	free(two);
	free(d.g.text);

	/* cut short: the points before the cut, then -EPROTO naming it */
	struct res e;
	read_with(gz, gn / 2, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "gzip: the compressed stream is cut short"), "%s", e.err);
	ck_assert_int_gt(e.g.points, 100);
	free(e.g.text);
	read_with(zs, zn / 2, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "zstd: the compressed stream is cut short"), "%s", e.err);
	free(e.g.text);

	/* corrupt: a clear error */
	gz[gn / 2] ^= 0x5a;
	gz[gn / 2 + 1] ^= 0xa5;
	read_with(gz, gn, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "gzip: corrupt compressed data"), "%s", e.err);
	free(e.g.text);
	zs[zn / 2] ^= 0x5a;
	zs[zn / 2 + 1] ^= 0xa5;
	read_with(zs, zn, 0, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "zstd: corrupt compressed data"), "%s", e.err);
	free(e.g.text);

	/* a good frame, then a corrupt one: the good frame's lines are read
	 * whether the input comes in one piece or byte by byte (zstd dropped
	 * the output of the blocks before the error in the same call, so one
	 * piece read nothing; found by fuzz_csv) */
	size_t sn, s1n;
	char *small = ndjson_lines(100, &sn);
	char *s1 = zstd_of(small, sn, &s1n);
	char *bad = malloc(s1n + zn);
	memcpy(bad, s1, s1n);
	memcpy(bad + s1n, zs, zn);
	read_both(bad, s1n + zn, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "zstd: corrupt compressed data"), "%s", e.err);
	ck_assert_int_ge(e.g.points, 100);
	free(e.g.text);
	free(bad);
	free(s1);
	free(small);

	/* one frame: a raw block of 20 lines, then a block header of the
	 * reserved type: the lines are read in one piece too (zstd reads the
	 * next block's header in the call that decodes a block, and an error
	 * there dropped the block's output; found by fuzz_csv) */
	size_t rn;
	char *raw = ndjson_lines(20, &rn);
	ck_assert_uint_lt(rn, 4096);
	unsigned char fr[4 + 2 + 3 + 4096 + 3];
	size_t fl = 0;
	memcpy(fr, "\x28\xb5\x2f\xfd", 4);   /* magic */
	fl = 4;
	fr[fl++] = 0x00;                        /* no content size, a window byte follows */
	fr[fl++] = 0x10;                        /* window 4 KiB */
	uint32_t bh = (uint32_t)rn << 3;        /* raw block, not the last */
	fr[fl++] = (unsigned char)bh;
	fr[fl++] = (unsigned char)(bh >> 8);
	fr[fl++] = (unsigned char)(bh >> 16);
	memcpy(fr + fl, raw, rn);
	fl += rn;
	fr[fl++] = (1 << 3) | (3 << 1);         /* block type 3: reserved, corrupt */
	fr[fl++] = 0;
	fr[fl++] = 0;
	read_both(fr, fl, NULL, &e);
	ck_assert_int_eq(e.rc, -EPROTO);
	ck_assert_msg(strstr(e.err, "zstd: corrupt compressed data"), "%s", e.err);
	ck_assert_int_eq(e.g.points, 20);
	free(e.g.text);
	free(raw);

	free(a.g.text);
	free(b.g.text);
	free(c.g.text);
	free(plain);
	free(gz);
	free(zs);
}
END_TEST

START_TEST(consumed_offset)
{
	const char *s = "{\"run\":\"a\",\"step\":1,\"loss\":1}\n{\"run\":\"a\",\"step\":2,\"loss\":1}\n{\"run\":\"a\"";
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = "ndjson", .first_line = 100};
	struct got g = {0};
	struct gw_reader_sink sk = {.data = &g, .on_rec = on_rec, .on_error = on_error};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &sk, &r, err, sizeof(err)), 0);
	size_t first = strchr(s, '\n') - s + 1;
	/* fed up to the middle of line 2: only line 1 is consumed */
	ck_assert_int_eq(gw_reader_feed(r, s, first + 5), 0);
	ck_assert_int_eq(gw_reader_consumed(r), first);
	ck_assert_int_eq(gw_reader_feed(r, s + first + 5, strlen(s) - first - 5), 0);
	ck_assert_int_eq(gw_reader_consumed(r), strrchr(s, '\n') - s + 1);
	ck_assert_int_eq(g.points, 2);
	/* line numbers continue from first_line */
	ck_assert_msg(!strncmp(g.text, "101 a 1", 7), "%s", g.text);
	gw_reader_free(r);
	free(g.text);
}
END_TEST

START_TEST(runs_split_on_restarts_only)
{
	struct res r;
	/* 1..3, a resume at 2 (same run: the engine sees the rewind), then a
	 * job started from scratch at 1 (a new run), then again */
	read_str("s:1 trl:1 lr:1 norm:1\ns:2 trl:1 lr:1 norm:1\ns:3 trl:1 lr:1 norm:1\n"
	         "s:2 trl:1 lr:1 norm:1\ns:3 trl:1 lr:1 norm:1\n"
	         "s:1 trl:1 lr:1 norm:1\ns:2 trl:1 lr:1 norm:1\ns:0 trl:1 lr:1 norm:1\n",
	         "llmc", &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.g.text, "1 r 1 loss=1 grad_norm=1 lr=1\n2 r 2 loss=1 grad_norm=1 lr=1\n"
	                           "3 r 3 loss=1 grad_norm=1 lr=1\n4 r 2 loss=1 grad_norm=1 lr=1\n"
	                           "5 r 3 loss=1 grad_norm=1 lr=1\n6 r#2 1 loss=1 grad_norm=1 lr=1\n"
	                           "7 r#2 2 loss=1 grad_norm=1 lr=1\n8 r#3 0 loss=1 grad_norm=1 lr=1\n");
	free(r.g.text);
}
END_TEST

/* Read `in` with a reader that continues from *from (if not NULL); the
 * state after it in *to. */
static void read_runs(const char *in, const struct gw_reader_runs *from, struct gw_reader_runs *to,
                      struct got *g)
{
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = "llmc"};
	struct gw_reader_sink sk = {.data = g, .on_rec = on_rec, .on_error = on_error};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &sk, &r, err, sizeof(err)), 0);
	if (from)
		ck_assert_int_eq(gw_reader_set_runs(r, from), 0);
	ck_assert_int_eq(gw_reader_feed(r, in, strlen(in)), 0);
	ck_assert_int_eq(gw_reader_finish(r), 0);
	gw_reader_get_runs(r, to);
	/* too late once input was fed; no run 0 */
	ck_assert_int_eq(gw_reader_set_runs(r, to), -EINVAL);
	gw_reader_free(r);
}

START_TEST(runs_continue_in_a_new_reader)
{
	/* a follower's reader started again after the second run began (the
	 * daemon restarted) names the runs as one reader of the whole input:
	 * r, r#2, then r#3 -- not r again */
	struct got one = {0}, a = {0}, b = {0};
	struct gw_reader_runs st, st2, end;
	read_runs("s:1 trl:1 lr:1 norm:1\ns:2 trl:1 lr:1 norm:1\ns:1 trl:1 lr:1 norm:1\n"
	          "s:2 trl:1 lr:1 norm:1\ns:1 trl:1 lr:1 norm:1\ns:5 trl:1 lr:1 norm:1\n", NULL, &end,
	          &one);
	read_runs("s:1 trl:1 lr:1 norm:1\ns:2 trl:1 lr:1 norm:1\ns:1 trl:1 lr:1 norm:1\n", NULL, &st,
	          &a);
	ck_assert_uint_eq(st.no, 2);
	ck_assert(st.any);
	ck_assert_int_eq(st.first, 1);
	ck_assert_int_eq(st.last, 1);
	read_runs("s:2 trl:1 lr:1 norm:1\ns:1 trl:1 lr:1 norm:1\ns:5 trl:1 lr:1 norm:1\n", &st, &st2,
	          &b);
	ck_assert_str_eq(b.text, "1 r#2 2 loss=1 grad_norm=1 lr=1\n2 r#3 1 loss=1 grad_norm=1 lr=1\n"
	                         "3 r#3 5 loss=1 grad_norm=1 lr=1\n");
	ck_assert_uint_eq(st2.no, end.no);
	ck_assert_int_eq(st2.any, end.any);
	ck_assert_int_eq(st2.first, end.first);
	ck_assert_int_eq(st2.last, end.last);
	struct gw_reader_runs zero = {0};
	struct gw_reader_opts o = {.aliases = aliases, .run = "r", .format = "llmc"};
	struct gw_reader_sink sk = {.on_rec = on_rec};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &sk, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(gw_reader_set_runs(r, &zero), -EINVAL);
	gw_reader_free(r);
	free(one.text);
	free(a.text);
	free(b.text);
}
END_TEST

START_TEST(run_name_rule)
{
	struct gw_reader_opts o = {.aliases = aliases, .run = "bad\x01name"};
	struct gw_reader_sink sk = {.on_rec = on_rec};
	struct gw_reader *r;
	char err[256];
	ck_assert_int_eq(gw_reader_new(&o, &sk, &r, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "bad run name"), "%s", err);

	/* NAME#2 stays within 256 bytes, cut at a character */
	char name[257];
	memset(name, 'a', 255);
	memcpy(name + 253, "\xc3\xa9", 2); /* an e-acute across the cut */
	name[255] = '\0';
	struct got g = {0};
	struct gw_reader_sink sk2 = {.data = &g, .on_rec = on_rec, .on_error = on_error};
	o.run = name;
	o.format = "llmc";
	ck_assert_int_eq(gw_reader_new(&o, &sk2, &r, err, sizeof(err)), 0);
	const char *in = "s:1 trl:1 lr:1 norm:1\ns:2 trl:1 lr:1 norm:1\ns:1 trl:1 lr:1 norm:1\n";
	ck_assert_int_eq(gw_reader_feed(r, in, strlen(in)), 0);
	ck_assert_int_eq(gw_reader_finish(r), 0);
	gw_reader_free(r);
	ck_assert_int_eq(g.points, 3);
	const char *third = strstr(g.text, "\n3 ");
	ck_assert_ptr_ne(third, NULL);
	char want[300];
	snprintf(want, sizeof(want), "\n3 %.253s#2 1 ", name);
	ck_assert_msg(!strncmp(third, want, strlen(want)), "[%.300s] want [%.300s]", third + 1, want + 1);
	free(g.text);
}
END_TEST

START_TEST(aliases_and_extras)
{
	struct res r;
	/* several names of one role: the best alias is the role, the others
	 * extras; names the wire format reserves are not metrics */
	read_str("{\"train_loss\": 3, \"loss\": 2, \"lr\": 1, \"learning_rate\": 0.5, \"run\": 7, "
	         "\"loss\": 9, \"global_step/max_steps\": \"4/9\"}\n", "swift", &r);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.g.text, "1 r 4 loss=2 lr=1 | train_loss=3 learning_rate=0.5 max_steps=9\n");
	free(r.g.text);
}
END_TEST

/* fairseq, torchtitan, composer/OLMo, torchtune, csv: the hazards of each,
 * read in one piece and byte by byte (tests/integration/test_readers_more.py
 * checks whole logs through the binary). */

static Suite *suite(void)
{
	Suite *s = suite_create("readers");
	TCase *t = tcase_create("framework");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, ndjson_plain);
	tcase_add_test(t, ndjson_cut_last_line);
	tcase_add_test(t, nothing_readable);
	tcase_add_test(t, unknown_format);
	tcase_add_test(t, gzip_and_zstd);
	tcase_add_test(t, consumed_offset);
	suite_add_tcase(s, t);
	t = tcase_create("runs");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, runs_split_on_restarts_only);
	tcase_add_test(t, runs_continue_in_a_new_reader);
	tcase_add_test(t, aliases_and_extras);
	tcase_add_test(t, run_name_rule);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return rd_main(suite());
}
