/*
 * Decompression by magic bytes (see decompress.h).
 *
 * Until four bytes are seen (or the input ends), the first bytes are held
 * back in `magic`: they decide the kind, then go through it like the rest.
 * Corrupt data is -EPROTO at once, with zlib's or zstd's own reason; an
 * input that ends inside a gzip member or a zstd frame is reported by
 * gw__rd_dc_finish, after everything before the cut was handed over.
 */
#include "decompress.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_CHUNK 65536

static const unsigned char gz_magic[2] = {0x1f, 0x8b}, zst_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

void gw__rd_dc_init(struct gw_rd_dc *d, gw_rd_dc_out out, void *data, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->out = out;
	d->data = data;
	d->err = err;
	d->errlen = errlen;
}

void gw__rd_dc_free(struct gw_rd_dc *d)
{
	if (d->zs_live)
		inflateEnd(&d->zs);
	ZSTD_freeDStream(d->zd);
	free(d->buf);
	d->zs_live = false;
	d->zd = NULL;
	d->buf = NULL;
}

static int fail(struct gw_rd_dc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct gw_rd_dc *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, d->errlen, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

static int inflate_some(struct gw_rd_dc *d, const unsigned char *p, size_t n)
{
	d->zs.next_in = (unsigned char *)p;
	d->zs.avail_in = (uInt)n;
	do {
		if (d->z_ended) {
			if (!d->zs.avail_in)
				return 0;
			/* another gzip member follows (concatenated .gz files) */
			if (inflateReset(&d->zs) != Z_OK)
				return fail(d, "gzip: cannot start the next member");
			d->z_ended = false;
		}
		d->zs.next_out = (unsigned char *)d->buf;
		d->zs.avail_out = OUT_CHUNK;
		int zr = inflate(&d->zs, Z_NO_FLUSH);
		size_t got = OUT_CHUNK - d->zs.avail_out;
		if (got) {
			int rc = d->out(d->data, d->buf, got);
			if (rc)
				return rc;
		}
		if (zr == Z_STREAM_END) {
			d->z_ended = true;
			continue;
		}
		if (zr == Z_BUF_ERROR)
			return 0; /* needs more input */
		if (zr != Z_OK)
			return fail(d, "gzip: corrupt compressed data near compressed byte %llu: %s",
			            (unsigned long long)(d->fed - d->zs.avail_in),
			            d->zs.msg ? d->zs.msg : zError(zr));
	} while (d->zs.avail_in || d->zs.avail_out == 0);
	return 0;
}

/* zstd stops at the first corrupt block (or block header), and the output
 * of the blocks before it in the same call is not handed back.  So each
 * call gets at most the input zstd asked for (its hint: the rest of the
 * current block and the 3-byte header of the next; a byte between frames)
 * less those 3 bytes, which come in a call of their own: a call decodes at
 * most one block and never reads the next block's header with it, so
 * everything before a corrupt block reaches the reader however the input
 * was cut into pieces. */
#define ZST_BLOCK_HEADER 3
static int unzstd_some(struct gw_rd_dc *d, const void *p, size_t n)
{
	const char *s = p;
	while (n) {
		size_t want = d->zd_hint > ZST_BLOCK_HEADER ? d->zd_hint - ZST_BLOCK_HEADER
		              : d->zd_hint ? d->zd_hint : 1;
		size_t k = GW_MIN(n, want);
		ZSTD_inBuffer in = {s, k, 0};
		for (;;) {
			ZSTD_outBuffer o = {d->buf, OUT_CHUNK, 0};
			size_t was = in.pos;
			size_t zr = ZSTD_decompressStream(d->zd, &o, &in);
			if (ZSTD_isError(zr))
				return fail(d, "zstd: corrupt compressed data: %s", ZSTD_getErrorName(zr));
			d->zd_hint = zr;
			if (o.pos) {
				int rc = d->out(d->data, d->buf, o.pos);
				if (rc)
					return rc;
			}
			if (in.pos == in.size && o.pos < o.size)
				break;
			if (!o.pos && in.pos == was)   /* NEVER: zstd neither read nor wrote */
				return fail(d, "zstd: the decoder stopped making progress");
		}
		s += k;
		n -= k;
	}
	return 0;
}

static int start(struct gw_rd_dc *d)
{
	if (d->magic_len >= 2 && !memcmp(d->magic, gz_magic, 2)) {
		d->kind = GW_RD_DC_GZIP;
		if (inflateInit2(&d->zs, 15 + 16) != Z_OK)
			return -ENOMEM;
		d->zs_live = true;
	} else if (d->magic_len >= 4 && !memcmp(d->magic, zst_magic, 4)) {
		d->kind = GW_RD_DC_ZSTD;
		if (!(d->zd = ZSTD_createDStream()))
			return -ENOMEM;
		ZSTD_initDStream(d->zd);
	} else {
		d->kind = GW_RD_DC_PLAIN;
		return 0;
	}
	return (d->buf = malloc(OUT_CHUNK)) ? 0 : -ENOMEM;
}

static int pass(struct gw_rd_dc *d, const unsigned char *p, size_t n)
{
	switch (d->kind) {
	case GW_RD_DC_PLAIN:
		return n ? d->out(d->data, (const char *)p, n) : 0;
	case GW_RD_DC_GZIP:
		/* zlib counts input in uInt: a piece of 4 GiB or more goes in
		 * slices (one cast would have dropped all but n mod 2^32) */
		for (size_t k; n; p += k, n -= k) {
			k = GW_MIN(n, (size_t)UINT_MAX);
			int rc = inflate_some(d, p, k);
			if (rc)
				return rc;
		}
		return 0;
	case GW_RD_DC_ZSTD:
		return unzstd_some(d, p, n);
	default:
		return 0;
	}
}

/* Could the bytes seen so far still be a compression magic? */
static bool maybe_magic(const unsigned char *m, size_t n)
{
	return !memcmp(m, gz_magic, GW_MIN(n, 2u)) || !memcmp(m, zst_magic, GW_MIN(n, 4u));
}

/* Decide the kind from the held-back bytes and pass them on. */
static int decide(struct gw_rd_dc *d)
{
	int rc = start(d);
	return rc < 0 ? rc : pass(d, d->magic, d->magic_len);
}

int gw__rd_dc_feed(struct gw_rd_dc *d, const void *data, size_t n)
{
	const unsigned char *p = data;
	d->fed += n;
	if (d->kind == GW_RD_DC_UNDECIDED) {
		while (n && d->magic_len < 4) {
			d->magic[d->magic_len++] = *p++;
			n--;
			if (!maybe_magic(d->magic, d->magic_len))
				break;
		}
		if (d->magic_len < 4 && maybe_magic(d->magic, d->magic_len) &&
		    !(d->magic_len >= 2 && d->magic[0] == gz_magic[0]))
			return 0; /* wait for more bytes */
		int rc = decide(d);
		if (rc)
			return rc;
	}
	return pass(d, p, n);
}

int gw__rd_dc_finish(struct gw_rd_dc *d, const char **cut)
{
	*cut = NULL;
	if (d->kind == GW_RD_DC_UNDECIDED) {
		int rc = decide(d);
		if (rc)
			return rc;
	}
	if (d->kind == GW_RD_DC_GZIP && !d->z_ended)
		*cut = "gzip";
	if (d->kind == GW_RD_DC_ZSTD && d->zd_hint != 0)
		*cut = "zstd";
	return 0;
}

int gw__rd_dc_cut_msg(struct gw_rd_dc *d, const char *what)
{
	return fail(d, "%s: the compressed stream is cut short (the input ends inside "
	               "compressed data, after %llu bytes)", what, (unsigned long long)d->fed);
}
