/*
 * What the reader fuzz targets share: read one input through the public
 * reader API (readers/reader.h) with the format forced, once in a single
 * feed and once in chunks of pseudo-random sizes drawn from the input
 * itself (so a crash replays exactly), and trap when the two readings
 * differ (points, their steps and lines, errors, the result).  Memory and
 * undefined-behaviour errors are the sanitizers' to catch.
 */
#ifndef GW_FUZZ_READER_H
#define GW_FUZZ_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "wire.h"

/* The alias table every target reads with, made once by libFuzzer's
 * initialisation hook (defined here: a target includes this header once). */
static struct gw_alias *aliases;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	aliases = gw_alias_new();
	return aliases ? 0 : -1;
}

struct fuzz_tally {
	uint64_t points, errors, hash;
	int rc;
};

static int fuzz_on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct fuzz_tally *t = data;
	t->points++;
	t->hash = t->hash * 1000003u ^ (uint64_t)rec->step ^ line << 40 ^ (uint64_t)rec->present << 56 ^
	          (uint64_t)rec->fields << 60 ^ (rec->event ? strlen(rec->event) : 0) << 20;
	for (size_t i = 0; i < rec->run_len; i++)
		t->hash = t->hash * 31u + (unsigned char)rec->run[i];
	return 0;
}

static void fuzz_on_error(void *data, uint64_t line, const struct gw_wire_err *e)
{
	const char *msg = e->msg;
	struct fuzz_tally *t = data;
	t->errors++;
	t->hash ^= line * 0x9e3779b97f4a7c15ull + strlen(msg);
}

/* Read p[0..n) as `format`: in one feed when seed is 0, else in chunks of
 * 1..64 bytes from a xorshift generator seeded with `seed`. */
static struct fuzz_tally fuzz_read(const char *format, bool follow, const uint8_t *p, size_t n,
                                   uint64_t seed)
{
	struct fuzz_tally t = {0};
	struct gw_reader_opts o = {.aliases = aliases, .run = "fuzz", .format = format,
	                           .follow = follow};
	struct gw_reader_sink sink = {.data = &t, .on_rec = fuzz_on_rec, .on_error = fuzz_on_error};
	struct gw_reader *r;
	char err[256];
	if (gw_reader_new(&o, &sink, &r, err, sizeof(err)) != 0)
		abort();
	size_t i = 0;
	while (i < n && t.rc == 0) {
		size_t k = n - i;
		if (seed) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			k = 1 + (size_t)(seed % 64);
			if (k > n - i)
				k = n - i;
		}
		t.rc = gw_reader_feed(r, p + i, k);
		i += k;
	}
	if (t.rc == 0)
		t.rc = gw_reader_finish(r);
	(void)gw_reader_error(r);
	(void)gw_reader_consumed(r);
	gw_reader_free(r);
	return t;
}

/* Both readings of p[0..n); trap if they differ. */
static void fuzz_both(const char *format, bool follow, const uint8_t *p, size_t n)
{
	uint64_t seed = 0x243f6a8885a308d3ull;
	for (size_t i = 0; i < n && i < 16; i++)
		seed = seed * 131 + p[i];
	struct fuzz_tally a = fuzz_read(format, follow, p, n, 0);
	struct fuzz_tally b = fuzz_read(format, follow, p, n, seed | 1);
	if (a.points != b.points || a.errors != b.errors || a.hash != b.hash || a.rc != b.rc)
		__builtin_trap();
}

#endif
