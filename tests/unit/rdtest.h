/*
 * The harness of the readers' unit tests (test_readers.c, test_rd_formats.c,
 * test_rd_paste.c, test_rd_events.c, test_rd_tables.c):
 * a sink that writes every point and event as one line of text ("line run
 * step [rankN] ts=.. role=value ... field=value ... | extra=value ...") and
 * reads an input twice, in one piece and byte by byte, asserting both give
 * the same.
 */
#ifndef GW_RDTEST_H
#define GW_RDTEST_H

#include <stddef.h>
#include <stdint.h>

#include "rdmain.h"
#include "reader.h"
#include "wire.h"

#define GW_MIN_(a, b) ((a) < (b) ? (a) : (b))

struct got {
	char *text;         /* "line run step role=value ... | extra=value ...\n" per point */
	size_t len, cap;
	int points, events, errors;
	char errmsg[8][256];
	uint64_t errline[8];
};

struct res {
	struct got g;
	int rc;
	char err[512];
	char format[32];
	uint64_t consumed, lines;
};


void app(struct got *g, const char *s);
int on_rec(void *data, const struct gw_rec *rec, uint64_t line);
void on_error(void *data, uint64_t line, const struct gw_wire_err *e);

/* Read `in` with the given chunk size (0: one piece), as run "r". */
void read_with(const void *in, size_t n, size_t chunk, const char *format, struct res *out);
/* In one piece and byte by byte; both must agree.  *one is the one-piece
 * result (the caller frees one->g.text). */
void read_both(const void *in, size_t n, const char *format, struct res *one);
void read_str(const char *s, const char *format, struct res *one);

/* Cases of one input each, read with read_str (sniffed): each must be
 * read as `format`, give exactly `want` and no error. */
struct form {
	const char *what, *in, *format, *want;
};
void forms(const struct form *c, size_t n);

#endif
