/*
 * decompress: the first stage of a reader (reader.c).  The input's first
 * bytes say whether it is gzip (1f 8b), zstd (28 b5 2f fd) or plain; the
 * bytes are then decompressed as they come (zlib, libzstd streaming; gzip
 * members one after the other are one input) and handed to `out` in
 * chunks of at most 64 KiB, or handed over as they are when plain.
 * Shared-internal (gw__rd_dc_ prefix).
 */
#ifndef GW_RD_DECOMPRESS_H
#define GW_RD_DECOMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>
#include <zstd.h>

/* Decompressed bytes; return 0 to go on, anything else to stop (returned
 * by gw__rd_dc_feed / gw__rd_dc_finish). */
typedef int (*gw_rd_dc_out)(void *data, const char *p, size_t n);

enum gw_rd_dc_kind { GW_RD_DC_UNDECIDED, GW_RD_DC_PLAIN, GW_RD_DC_GZIP, GW_RD_DC_ZSTD };

struct gw_rd_dc {
	enum gw_rd_dc_kind kind;
	gw_rd_dc_out out;
	void *data;
	char *err;                /* where messages go (borrowed) */
	size_t errlen;
	unsigned char magic[4];
	size_t magic_len;
	z_stream zs;
	bool zs_live, z_ended;    /* inflate initialised; the last member ended */
	ZSTD_DStream *zd;
	size_t zd_hint;           /* last ZSTD_decompressStream result (0: frame done) */
	char *buf;
	uint64_t fed;             /* bytes fed (compressed) */
};

/* err[errlen] gets the message of a -EPROTO (borrowed). */
void gw__rd_dc_init(struct gw_rd_dc *d, gw_rd_dc_out out, void *data, char *err, size_t errlen);
void gw__rd_dc_free(struct gw_rd_dc *d);

/* Feed n input bytes.  Returns 0, out's value, -ENOMEM, or -EPROTO for
 * corrupt compressed data (message in err). */
int gw__rd_dc_feed(struct gw_rd_dc *d, const void *p, size_t n);

/* The input ended: hand over bytes still held back (a plain input shorter
 * than a magic).  Returns as gw__rd_dc_feed.  *cut gets "gzip" or "zstd"
 * when the input ended inside compressed data (see gw__rd_dc_cut_msg),
 * else NULL. */
int gw__rd_dc_finish(struct gw_rd_dc *d, const char **cut);

/* Write the "cut short" message for `what` into err; returns -EPROTO. */
int gw__rd_dc_cut_msg(struct gw_rd_dc *d, const char *what);

#endif
