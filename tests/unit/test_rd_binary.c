/*
 * Unit tests of the binary and table readers: CRC-32C (published vectors
 * and a bit-at-a-time reference), TFRecord framing (a record TensorFlow
 * wrote, records split anywhere, bad CRCs, cut records, records over the
 * size limit), and the Lightning and W&B CSV layouts.  Every input is read
 * twice, in one feed and byte by byte, and must give the same points
 * (rdbin.c).  TensorBoard events: test_rd_tfevents.c.
 */
#include "gwcheck.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "rdbin.h"
#include "reader.h"
#include "tfrecord.h"
#include "util.h"
#include "wire.h"

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

/* ---- CSV ------------------------------------------------------------------- */

START_TEST(csv_lightning_sorted_crlf_sparse)
{
	/* Lightning's newer CSVLogger: sorted header, CRLF, train rows, a
	 * validation row, an epoch row; no newline at the end */
	const char *in =
		"epoch,step,train_loss_epoch,train_loss_step,train_ppl_step,val_loss\r\n"
		"0,49,,7.5,2000.5,\r\n"
		"0,99,,7.25,1500,\r\n"
		"0,99,,,,4.125\r\n"
		"0,99,7.375,,,\r\n"
		"1,149,,nan,1400,";
	struct got g;
	char fmt[32], err[512];
	ck_assert_int_eq(read_in(in, strlen(in), NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "lightning_csv");
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, err), 0);
	ck_assert_int_eq(g.errors, 0);
	ck_assert_str_eq(g.text,
	                 "2 r 49 loss=7.5 | epoch=0 train_ppl_step=2000.5\n"
	                 "3 r 99 loss=7.25 | epoch=0 train_ppl_step=1500\n"
	                 "6 r 149 loss=nan | epoch=1 train_ppl_step=1400\n");
}
END_TEST

START_TEST(csv_lightning_insertion_order)
{
	/* the older CSVLogger: columns in the order they were logged, step last */
	const char *in = "train_loss,train_acc,epoch,step\n"
	                 "2.5,0.375,0,49\n"
	                 "2.75,0.25,1,99\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_str_eq(g.text, "2 r 49 loss=2.5 | train_acc=0.375 epoch=0\n"
	                         "3 r 99 loss=2.75 | train_acc=0.25 epoch=1\n");
}
END_TEST

START_TEST(csv_lightning_errors)
{
	/* (the first row is sound: Lightning writes numbers only, and a text
	 * cell in the first row makes the table a plain csv, test_rd_paste) */
	const char *in = "epoch,step,train/loss,lr-AdamW\n"
	                 "0,19,1.75,0.001\n"
	                 "0,49,abc,0.001\n"      /* not a number */
	                 "0,,1.5,0.001\n"        /* no step */
	                 "0,4.5,1.5,0.001\n"     /* not a whole step */
	                 "0,99,1.5,0.001,7\n"    /* one cell too many */
	                 "0,149,1.25,0.001\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_str_eq(g.text, "2 r 19 loss=1.75 lr=0.001 | epoch=0\n7 r 149 loss=1.25 lr=0.001 | epoch=0\n");
	ck_assert_int_eq(g.errors, 4);
	ck_assert_uint_eq(g.errline[0], 3);
	ck_assert_str_eq(g.errmsg[0], "bad_value: column \"train/loss\": \"abc\" is not a number; skipped");
	ck_assert_uint_eq(g.errline[1], 4);
	ck_assert_str_eq(g.errmsg[1], "missing_step: column \"step\" is empty; skipped");
	ck_assert_msg(strstr(g.errmsg[2], "bad_step: column \"step\": \"4.5\""), "%s", g.errmsg[2]);
	ck_assert_str_eq(g.errmsg[3], "bad_row: 5 cells, but the header has 4 columns; skipped");
	/* forced on a table without a step column: not readable, said so */
	char err[512];
	const char *nostep = "epoch,loss\n0,1\n";
	ck_assert_int_eq(read_both(nostep, strlen(nostep), "lightning_csv", &g, err), -EPROTO);
	ck_assert_msg(strstr(err, "line 1: the header has no 'step' column"), "%s", err);
}
END_TEST

START_TEST(csv_wandb_quoted_several_runs)
{
	/* the raw W&B export: all quoted, __MIN/__MAX, runs with gaps */
	const char *in =
		"\"Step\",\"run-a - loss\",\"run-a - loss__MIN\",\"run-a - loss__MAX\","
		"\"my - run - train/loss\",\"my - run - train/loss__MIN\",\"my - run - train/loss__MAX\"\n"
		"\"10\",\"3.5\",\"3.5\",\"3.5\",\"76.75\",\"76.75\",\"76.75\"\n"
		"\"20\",\"\",\"\",\"\",\"37.25\",\"37.25\",\"37.25\"\n"
		"\"30\",\"3.25\",\"3\",\"3.5\",\"\",\"\",\"\"\n";
	struct got g;
	char fmt[32];
	ck_assert_int_eq(read_in(in, strlen(in), NULL, 0, 0, &g, fmt, NULL), 0);
	ck_assert_str_eq(fmt, "wandb_csv");
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_int_eq(g.errors, 0);
	/* run names keep their own " - " (the last one splits) */
	ck_assert_str_eq(g.text,
	                 "2 run-a 10 loss=3.5\n"
	                 "2 my - run 10 loss=76.75\n"
	                 "3 my - run 20 loss=37.25\n"
	                 "4 run-a 30 loss=3.25\n");
}
END_TEST

START_TEST(csv_wandb_unquoted_step_column_and_errors)
{
	/* unquoted (re-saved through pandas); a run with its own _step column;
	 * a bad cell spoils only its run's point */
	const char *in = "Step,a - loss,b - _step,b - train_loss\n"
	                 "10,3.5,100,1.5\n"
	                 "20,x,200,1.25\n"
	                 "30,3.25,,1\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), NULL, &g, NULL), 0);
	ck_assert_str_eq(g.text,
	                 "2 a 10 loss=3.5\n"
	                 "2 b 100 loss=1.5\n"
	                 "3 b 200 loss=1.25\n"
	                 "4 a 30 loss=3.25\n"
	                 "4 b 30 loss=1\n");
	ck_assert_int_eq(g.errors, 1);
	ck_assert_uint_eq(g.errline[0], 3);
	ck_assert_str_eq(g.errmsg[0], "bad_value: column \"a - loss\": \"x\" is not a number; skipped");
}
END_TEST

START_TEST(csv_quoted_newline_and_line_numbers)
{
	/* a header cell with a comma and a line break inside quotes: the
	 * header is one row over two lines; points keep the lines they start on */
	const char *in = "step,\"loss\",\"note, with\nnewline\"\n"
	                 "1,2.5,3\n"
	                 "\n"
	                 "2,2.25,4\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), "lightning_csv", &g, NULL), 0);
	ck_assert_str_eq(g.text, "3 r 1 loss=2.5 | note, with\nnewline=3\n"
	                         "5 r 2 loss=2.25 | note, with\nnewline=4\n");
}
END_TEST

START_TEST(csv_stray_quote_keeps_line_numbers)
{
	/* a quote inside an unquoted cell is kept as text (not a quoted field),
	 * and the rows after it keep their own line numbers */
	const char *in = "step,loss\n"
	                 "1,2\"5\n"
	                 "2,2.5\n";
	struct got g;
	ck_assert_int_eq(read_both(in, strlen(in), "lightning_csv", &g, NULL), 0);
	ck_assert_str_eq(g.text, "3 r 2 loss=2.5\n");
	ck_assert_int_eq(g.errors, 1);
	ck_assert_uint_eq(g.errline[0], 2);
	ck_assert_str_eq(g.errmsg[0], "bad_value: column \"loss\": \"2\"5\" is not a number; skipped");
}
END_TEST

START_TEST(csv_sniffing)
{
	struct got g;
	char fmt[32], err[512];
	/* NDJSON with a "step" key is not a table */
	const char *nd = "{\"run\":\"x\",\"step\":1,\"loss\":2}\n";
	ck_assert_int_eq(read_in(nd, strlen(nd), NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "ndjson");
	/* a header longer than the first sniff (256 bytes) */
	char in[2048];
	int n = snprintf(in, sizeof(in), "Step");
	for (int i = 0; i < 12; i++)
		n += snprintf(in + n, sizeof(in) - (size_t)n, ",\"a-long-run-name-number-%02d - loss\"", i);
	n += snprintf(in + n, sizeof(in) - (size_t)n, "\n5");
	for (int i = 0; i < 12; i++)
		n += snprintf(in + n, sizeof(in) - (size_t)n, ",%d", i);
	ck_assert_int_eq(read_in(in, (size_t)n, NULL, 0, 0, &g, fmt, err), 0);
	ck_assert_str_eq(fmt, "wandb_csv");
	ck_assert_int_eq(g.points, 12);
	/* prose that looks like a header for a line is not a table: the first
	 * row must have as many cells, with a number for the step */
	const char *prose = "Starting, model - gpt2, data - owt\nloading data, please wait, ok\n";
	ck_assert_int_eq(read_in(prose, strlen(prose), NULL, 0, 0, &g, fmt, err), -EPROTO);
	ck_assert_msg(strstr(err, "nothing readable"), "%s", err);
	const char *prose2 = "step,then,more\nnot,a,number\n";
	ck_assert_int_eq(read_in(prose2, strlen(prose2), NULL, 0, 0, &g, fmt, err), -EPROTO);
	/* a table with neither layout is not read as one */
	const char *other = "a,b,c\n1,2,3\n";
	ck_assert_int_eq(read_in(other, strlen(other), NULL, 0, 0, &g, fmt, err), -EPROTO);
	ck_assert_msg(strstr(err, "nothing readable"), "%s", err);
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
	tc = tcase_create("csv");
	tcase_add_test(tc, csv_lightning_sorted_crlf_sparse);
	tcase_add_test(tc, csv_lightning_insertion_order);
	tcase_add_test(tc, csv_lightning_errors);
	tcase_add_test(tc, csv_wandb_quoted_several_runs);
	tcase_add_test(tc, csv_wandb_unquoted_step_column_and_errors);
	tcase_add_test(tc, csv_quoted_newline_and_line_numbers);
	tcase_add_test(tc, csv_stray_quote_keeps_line_numbers);
	tcase_add_test(tc, csv_sniffing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rd_main(suite());
}
