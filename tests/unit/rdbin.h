/*
 * The harness of the binary and table readers' unit tests
 * (test_rd_binary.c, test_rd_tfevents.c): TFRecord framing written by
 * hand, and a reader with a sink that prints every point as one line of
 * text ("line run step [ts] role=v ... | extra=v ...") read in one feed and
 * byte by byte.
 */
#ifndef GW_RDBIN_H
#define GW_RDBIN_H

#include <stddef.h>
#include <stdint.h>

#include "rdmain.h"
#include "reader.h"
#include "wire.h"

struct got {
	char text[16384];     /* "line run step [ts] role=v ... | extra=v ...\n" per point */
	size_t len;
	int points, errors;
	char errmsg[8][320];
	uint64_t errline[8];
};


/* Append one framed record of data[0..n) to out; returns the new length.
 * bad: 1 spoils the length CRC, 2 the data CRC. */
size_t put_record(unsigned char *out, size_t at, const void *data, size_t n, int bad);

void app(struct got *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int on_rec(void *data, const struct gw_rec *rec, uint64_t line);
void on_error(void *data, uint64_t line, const struct gw_wire_err *e);

/* Read in[0..n) with `format` (NULL: sniffed), in one feed (step 0) or in
 * pieces of `step` bytes; returns what gw_reader_finish (or a failing feed)
 * returned, the format used in *fmt and the error text in err. */
int read_in(const void *in, size_t n, const char *format, size_t step, uint64_t first_line,
            struct got *g, char *fmt, char *err);
/* Read twice (one feed, byte by byte): the same result both ways. */
int read_both(const void *in, size_t n, const char *format, struct got *g, char *err);

#endif
