/*
 * Unit tests of the binary and table readers: CRC-32C (published vectors
 * and a bit-at-a-time reference), TFRecord framing (a record TensorFlow
 * wrote, records split anywhere, bad CRCs, cut records, records over the
 * size limit).
 */
#include "gwcheck.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "tfrecord.h"
#include "util.h"

/* ---- CRC-32C ---------------------------------------------------------- */

/* Bit at a time, straight from the polynomial: the reference the table
 * must agree with. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? 0x82f63b78u : 0);
	}
	return ~c;
}

START_TEST(crc_vectors)
{
	unsigned char b[32];
	ck_assert_uint_eq(gw_crc32c(0, "", 0), 0);
	ck_assert_uint_eq(gw_crc32c(0, "123456789", 9), 0xe3069283u);
	/* RFC 3720 (iSCSI), appendix B.4 */
	memset(b, 0, sizeof(b));
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x8a9136aau);
	memset(b, 0xff, sizeof(b));
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)i;
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)(31 - i);
	ck_assert_uint_eq(gw_crc32c(0, b, 32), 0x113fdb5cu);
}
END_TEST

START_TEST(crc_table_and_chaining)
{
	unsigned char b[4096];
	srand(7);
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)rand();
	for (size_t n = 0; n <= 300; n++)
		ck_assert_uint_eq(gw_crc32c(0, b, n), crc_bitwise(b, n));
	uint32_t whole = gw_crc32c(0, b, sizeof(b));
	ck_assert_uint_eq(whole, crc_bitwise(b, sizeof(b)));
	for (size_t cut = 0; cut <= sizeof(b); cut += 97)
		ck_assert_uint_eq(gw_crc32c(gw_crc32c(0, b, cut), b + cut, sizeof(b) - cut), whole);
}
END_TEST

/* The first record of keras-yj-cbam-rms10-train.tfevents as TensorFlow
 * wrote it: length 24, its masked CRC, an Event {wall_time 1666350020.0,
 * file_version "brain.Event:2"}, the data's masked CRC. */
static const unsigned char tf_record[40] = {
	0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa3, 0x7f, 0x4b, 0x22,
	0x09, 0x00, 0x00, 0x00, 0xf1, 0x9e, 0xd4, 0xd8, 0x41, 0x1a, 0x0d, 'b',
	'r', 'a', 'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2',
	0x49, 0x72, 0xda, 0xac,
};

static uint32_t rd32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

START_TEST(crc_mask_matches_tensorflow)
{
	ck_assert_uint_eq(gw_crc32c_mask(gw_crc32c(0, tf_record, 8)), rd32(tf_record + 8));
	ck_assert_uint_eq(gw_crc32c_mask(gw_crc32c(0, tf_record + 12, 24)), rd32(tf_record + 36));
	ck_assert(gw__tfr_head_ok(tf_record, 12));
	ck_assert(!gw__tfr_head_ok(tf_record, 11));
}
END_TEST

/* ---- TFRecord framing --------------------------------------------------- */

/* Append one framed record of data[0..n) to out; returns the new length.
 * bad: 1 spoils the length CRC, 2 the data CRC. */
static size_t put_record(unsigned char *out, size_t at, const void *data, size_t n, int bad)
{
	unsigned char *h = out + at;
	for (int i = 0; i < 8; i++)
		h[i] = (unsigned char)((uint64_t)n >> (8 * i));
	uint32_t c = gw_crc32c_mask(gw_crc32c(0, h, 8)) ^ (bad == 1);
	for (int i = 0; i < 4; i++)
		h[8 + i] = (unsigned char)(c >> (8 * i));
	memcpy(h + 12, data, n);
	c = gw_crc32c_mask(gw_crc32c(0, data, n)) ^ (bad == 2);
	for (int i = 0; i < 4; i++)
		h[12 + n + i] = (unsigned char)(c >> (8 * i));
	return at + 16 + n;
}

struct frames {
	int n;
	char data[16][64];
	uint64_t len[16], recno[16], offset[16], end[16];
	int status[16];
	int stop_at;
};

static int on_frame(void *d, const struct gw__tfr_rec *rec)
{
	struct frames *f = d;
	if (f->n < 16) {
		memset(f->data[f->n], 0, sizeof(f->data[0]));
		if (rec->data)
			memcpy(f->data[f->n], rec->data, GW_MIN(rec->len, sizeof(f->data[0]) - 1));
		f->len[f->n] = rec->len;
		f->recno[f->n] = rec->recno;
		f->offset[f->n] = rec->offset;
		f->end[f->n] = rec->end;
		f->status[f->n] = rec->status;
	}
	f->n++;
	return f->stop_at && f->n == f->stop_at ? -EINTR : 0;
}

START_TEST(frame_tensorflow_record_any_split)
{
	/* the real record, fed in every split of two and one byte at a time */
	for (size_t cut = 0; cut <= sizeof(tf_record); cut++) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 0, 0, 0);
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)tf_record, cut, on_frame, &f), 0);
		ck_assert_int_eq(f.n, cut == sizeof(tf_record));
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)tf_record + cut,
		                              sizeof(tf_record) - cut, on_frame, &f), 0);
		ck_assert_int_eq(f.n, 1);
		ck_assert_int_eq(f.status[0], GW_TFR_OK);
		ck_assert_uint_eq(f.len[0], 24);
		ck_assert_uint_eq(f.recno[0], 1);
		ck_assert_uint_eq(f.offset[0], 0);
		ck_assert_uint_eq(f.end[0], 40);
		ck_assert(memcmp(f.data[0] + 11, "brain.Event:2", 13) == 0);
		ck_assert_int_eq(gw__tfr_finish(&t), 0);
		gw__tfr_free(&t);
	}
	struct gw__tfr t;
	struct frames f = {0};
	gw__tfr_init(&t, 0, 0, 0);
	for (size_t i = 0; i < sizeof(tf_record); i++)
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)tf_record + i, 1, on_frame, &f), 0);
	ck_assert_int_eq(f.n, 1);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_numbers_offsets_and_base)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "alpha", 5, 0);
	n = put_record(buf, n, "", 0, 0);
	n = put_record(buf, n, "gamma!", 6, 0);
	struct gw__tfr t;
	struct frames f = {0};
	/* a reader resuming after 10 records and 1000 bytes */
	gw__tfr_init(&t, 0, 10, 1000);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), 0);
	ck_assert_int_eq(f.n, 3);
	ck_assert_str_eq(f.data[0], "alpha");
	ck_assert_str_eq(f.data[1], "");
	ck_assert_str_eq(f.data[2], "gamma!");
	ck_assert_uint_eq(f.recno[0], 11);
	ck_assert_uint_eq(f.recno[2], 13);
	ck_assert_uint_eq(f.offset[0], 1000);
	ck_assert_uint_eq(f.offset[1], 1021);
	ck_assert_uint_eq(f.offset[2], 1037);
	ck_assert_uint_eq(f.end[2], 1000 + n);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_bad_data_crc_skips_one_record)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "one", 3, 0);
	n = put_record(buf, n, "two", 3, 2);
	n = put_record(buf, n, "three", 5, 0);
	for (int split = 0; split < 2; split++) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 0, 0, 0);
		if (split)
			for (size_t i = 0; i < n; i++)
				ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf + i, 1, on_frame, &f), 0);
		else
			ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), 0);
		ck_assert_int_eq(f.n, 3);
		ck_assert_int_eq(f.status[0], GW_TFR_OK);
		ck_assert_int_eq(f.status[1], GW_TFR_BAD_CRC);
		ck_assert_str_eq(f.data[1], "");   /* no data handed over */
		ck_assert_uint_eq(f.recno[1], 2);
		ck_assert_uint_eq(f.offset[1], 19);
		ck_assert_int_eq(f.status[2], GW_TFR_OK);
		ck_assert_str_eq(f.data[2], "three");
		gw__tfr_free(&t);
	}
}
END_TEST

START_TEST(frame_bad_length_crc_ends_input)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "one", 3, 0);
	n = put_record(buf, n, "two", 3, 1);
	n = put_record(buf, n, "three", 5, 0);
	struct gw__tfr t;
	struct frames f = {0};
	gw__tfr_init(&t, 0, 0, 0);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), -EPROTO);
	ck_assert_int_eq(f.n, 1);
	ck_assert_msg(strstr(t.err, "record 2 at byte 19") && strstr(t.err, "CRC of its length"),
	              "%s", t.err);
	/* dead from now on */
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, 19, on_frame, &f), -EPROTO);
	ck_assert_int_eq(f.n, 1);
	ck_assert_int_eq(gw__tfr_finish(&t), -EPROTO);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_cut_record_waits_then_reports)
{
	unsigned char buf[256];
	size_t n1 = put_record(buf, 0, "one", 3, 0);
	size_t n = put_record(buf, n1, "second", 6, 0);
	/* every cut inside the second record: nothing is wrong while more may
	 * come; at the end it is a cut record with its number and offset */
	for (size_t cut = n1 + 1; cut < n; cut++) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 0, 0, 0);
		ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, cut, on_frame, &f), 0);
		ck_assert_int_eq(f.n, 1);
		ck_assert_int_eq(gw__tfr_finish(&t), -ENODATA);
		ck_assert_msg(strstr(t.err, "record 2 at byte 19 is cut"), "%s", t.err);
		if (cut < n1 + 12)
			ck_assert_msg(strstr(t.err, "12-byte head"), "%s", t.err);
		else if (cut < n1 + 18)
			ck_assert_msg(strstr(t.err, "of its 6 data bytes"), "%s", t.err);
		else
			ck_assert_msg(strstr(t.err, "inside the CRC"), "%s", t.err);
		gw__tfr_free(&t);
	}
}
END_TEST

START_TEST(frame_oversized_record_is_skipped_unheld)
{
	static unsigned char buf[3 * 4096];
	char big[4000];
	memset(big, 'x', sizeof(big));
	size_t n = put_record(buf, 0, "small", 5, 0);
	n = put_record(buf, n, big, sizeof(big), 0);
	n = put_record(buf, n, big, sizeof(big), 2);
	n = put_record(buf, n, "after", 5, 0);
	for (size_t step = 1; step <= 4096; step *= 8) {
		struct gw__tfr t;
		struct frames f = {0};
		gw__tfr_init(&t, 100, 0, 0);
		for (size_t i = 0; i < n; i += step)
			ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf + i, GW_MIN(step, n - i),
			                              on_frame, &f), 0);
		ck_assert_int_eq(f.n, 4);
		ck_assert_int_eq(f.status[1], GW_TFR_TOO_BIG);
		ck_assert_uint_eq(f.len[1], sizeof(big));
		ck_assert_int_eq(f.status[2], GW_TFR_BAD_CRC);
		ck_assert_str_eq(f.data[3], "after");
		ck_assert_uint_le(t.cap, 100 + 4);   /* the big ones were never held */
		gw__tfr_free(&t);
	}
}
END_TEST

START_TEST(frame_huge_length_holds_nothing)
{
	/* a head claiming 2^62 bytes with a valid CRC: no allocation, and the
	 * input ending is a cut record */
	unsigned char h[12] = {0, 0, 0, 0, 0, 0, 0, 0x40};
	uint32_t c = gw_crc32c_mask(gw_crc32c(0, h, 8));
	for (int i = 0; i < 4; i++)
		h[8 + i] = (unsigned char)(c >> (8 * i));
	struct gw__tfr t;
	struct frames f = {0};
	gw__tfr_init(&t, 0, 0, 0);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)h, 12, on_frame, &f), 0);
	char junk[1000] = {0};
	ck_assert_int_eq(gw__tfr_feed(&t, junk, sizeof(junk), on_frame, &f), 0);
	ck_assert_int_eq(f.n, 0);
	ck_assert_ptr_null(t.buf);
	ck_assert_int_eq(gw__tfr_finish(&t), -ENODATA);
	gw__tfr_free(&t);
}
END_TEST

START_TEST(frame_callback_stop)
{
	unsigned char buf[256];
	size_t n = put_record(buf, 0, "a", 1, 0);
	n = put_record(buf, n, "b", 1, 0);
	struct gw__tfr t;
	struct frames f = {.stop_at = 1};
	gw__tfr_init(&t, 0, 0, 0);
	ck_assert_int_eq(gw__tfr_feed(&t, (const char *)buf, n, on_frame, &f), -EINTR);
	ck_assert_int_eq(f.n, 1);
	gw__tfr_free(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rd_binary");
	TCase *tc = tcase_create("crc32c");
	tcase_add_test(tc, crc_vectors);
	tcase_add_test(tc, crc_table_and_chaining);
	tcase_add_test(tc, crc_mask_matches_tensorflow);
	suite_add_tcase(s, tc);
	tc = tcase_create("tfrecord");
	tcase_add_test(tc, frame_tensorflow_record_any_split);
	tcase_add_test(tc, frame_numbers_offsets_and_base);
	tcase_add_test(tc, frame_bad_data_crc_skips_one_record);
	tcase_add_test(tc, frame_bad_length_crc_ends_input);
	tcase_add_test(tc, frame_cut_record_waits_then_reports);
	tcase_add_test(tc, frame_oversized_record_is_skipped_unheld);
	tcase_add_test(tc, frame_huge_length_holds_nothing);
	tcase_add_test(tc, frame_callback_stop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gw_check_run(suite());
}
