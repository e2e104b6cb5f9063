/*
 * What the parts of the readers framework share (reader.c: the stages,
 * sniffing, the registry; rd_point.c: the point builder, run naming and
 * what the formats call): the reader itself.  Internal to readers/; the
 * formats see reader_impl.h, callers reader.h.
 */
#ifndef GW_READER_INT_H
#define GW_READER_INT_H

#include "reader_impl.h"

#include "decompress.h"
#include "lines.h"

#define NAMES_MAX 8192        /* bytes of metric names per point */

struct gw_reader {
	struct gw_reader_opts o;
	struct gw_reader_sink sink;
	char err[512];
	int failed;                    /* sticky -EPROTO once the input is unreadable */
	bool finished;

	/* stage 1: decompression */
	struct gw_rd_dc dc;

	/* stage 2: sniffing */
	const struct gw_reader_format *fmt;
	void *state;
	bool state_live;
	char *head;
	size_t head_len, head_cap, next_sniff;

	/* stage 3 */
	struct gw_lines lines;
	uint64_t in_bytes;             /* decompressed bytes given to stage 3 */
	uint64_t consumed;
	const char *chunk;             /* the chunk gw_lines_feed is working on */
	uint64_t chunk_base;           /* its offset in the decompressed input */
	size_t chunk_held;             /* bytes of a partial line held before it */
	bool truncated;                /* the line being handed over had no '\n' */

	/* the point being built */
	struct gw_rec rec;
	int prio[GW_NALIAS_ROLES];     /* the roles' and the fp16 fields' (ts: ts_prio) */
	const char *role_name[GW_NALIAS_ROLES];
	int ts_prio;
	struct gw_metric extra[GW_RD_MAX_EXTRA];
	char names[NAMES_MAX];
	size_t names_len;
	char run[GW_WIRE_RUN_MAX + 1];
	bool run_set;
	int64_t line_label;            /* the rank label of the line being read, -1: none */
	int64_t label;                 /* the label whose points move the run splitting */

	/* the default run and its from-scratch restarts */
	char cur_run[GW_WIRE_RUN_MAX + 16];
	unsigned run_no;
	bool run_any;
	int64_t run_first, run_last;

	uint64_t records;              /* byte formats: records completed */
	uint64_t handed;               /* records and events given to the sink */
	bool fed;                      /* gw_reader_feed was given bytes */
	uint64_t errors;
};

/* cur_run for run_no: NAME, or NAME#k (rd_point.c). */
void gw__rd_name_run(struct gw_reader *r);

#endif
