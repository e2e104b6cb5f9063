/*
 * tfrecord: the TFRecord framing of TensorBoard event files, read as the
 * bytes come (a file read to its end, or one that grows).
 *
 * A TFRecord file is a sequence of records, each
 *     u64 length                     little-endian
 *     u32 masked CRC-32C of those 8 bytes
 *     length bytes of data           (here: a serialized Event)
 *     u32 masked CRC-32C of the data
 * with no header and no sync marks (lib/crc32c.h has the CRC and the mask).
 *
 * The framer hands every complete record to a callback, in place when it
 * lies whole in the caller's buffer, else from its own buffer.  Records
 * whose data is longer than `max` are never held: their data streams
 * through the CRC and the callback learns only that one was skipped.  So
 * memory is bounded by `max` whatever the input says.
 *
 * A bad length CRC leaves nothing to find the next record by (the format
 * has no sync marks), so it ends the input: -EPROTO, with the record number
 * and byte offset in the message, and every later call fails the same way.
 * A bad data CRC spoils one record only: the callback gets it with status
 * GW_TFR_BAD_CRC and reading goes on.  Input that ends inside a record is
 * not an error while more may come (a growing file); gw__tfr_finish says
 * the input really ended there.
 *
 * Shared-internal (readers/ only).  Not thread-safe; one framer per input.
 */
#ifndef GW_TFRECORD_H
#define GW_TFRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_TFR_MAX_DEFAULT (64u * 1024 * 1024) /* longest record held */

enum gw__tfr_status {
	GW_TFR_OK,       /* data[0..len) verified */
	GW_TFR_BAD_CRC,  /* the data CRC does not match; data is NULL */
	GW_TFR_TOO_BIG,  /* longer than max, skipped (CRC verified); data is NULL */
};

struct gw__tfr_rec {
	const char *data;         /* borrowed until the callback returns */
	uint64_t len;             /* data bytes */
	uint64_t recno;           /* 1-based record number */
	uint64_t offset;          /* byte offset of its length field */
	uint64_t end;             /* byte offset just after it */
	enum gw__tfr_status status;
	uint32_t crc_stored, crc_computed; /* masked; differ for GW_TFR_BAD_CRC */
};

/* Called for every record; return 0 to go on, anything else to stop
 * (gw__tfr_feed returns it; the record counts as read). */
typedef int (*gw__tfr_fn)(void *data, const struct gw__tfr_rec *rec);

struct gw__tfr {
	unsigned char head[12];   /* length and its CRC, being assembled */
	size_t head_len;
	bool in_data;             /* past the head of the current record */
	bool skipping;            /* current record is over max: CRC only */
	bool dead;                /* a bad length CRC ended the input */
	uint64_t len;             /* data bytes of the current record */
	uint64_t got;             /* bytes of data + CRC seen so far */
	uint32_t crc;             /* running CRC while skipping */
	unsigned char tail[4];    /* data CRC, while skipping */
	char *buf;                /* data + CRC being assembled */
	size_t cap;
	size_t max;
	uint64_t recno;           /* records completed (numbering base included) */
	uint64_t offset;          /* byte offset of the current record */
	char err[192];
};

/* Start framing; records are numbered from first_recno + 1 and byte
 * offsets counted from base_offset (a reader resuming mid-file).  max: the
 * longest record data held (0: GW_TFR_MAX_DEFAULT). */
void gw__tfr_init(struct gw__tfr *t, size_t max, uint64_t first_recno, uint64_t base_offset);
void gw__tfr_free(struct gw__tfr *t);

/* Frame the next n bytes.  Returns 0, what a callback returned, -ENOMEM,
 * or -EPROTO (bad length CRC; message in t->err). */
int gw__tfr_feed(struct gw__tfr *t, const char *p, size_t n, gw__tfr_fn fn, void *data);

/* The input ended.  Returns 0 when it ended between records, -EPROTO if
 * the input was already dead, else -ENODATA (a cut record; message in
 * t->err naming the record, its offset and how much of it there is). */
int gw__tfr_finish(struct gw__tfr *t);

/* True when p[0..n) starts with a record head whose CRC holds (n >= 12). */
bool gw__tfr_head_ok(const void *p, size_t n);

#endif
