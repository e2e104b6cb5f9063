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
#define GW_RD_HELD 256        /* overflow events held before the first point */

/* An event of rd_events.c that waits for a point to know its step. */
struct gw_rd_held {
	uint64_t line;            /* 0: none */
	double ts;
	int64_t label;
	int64_t step;             /* -1: from the next point (+ offset) */
	int offset;
	double attempted, scale;  /* overflow: the loss scale before and after */
	bool min_scale;
};

/* rd_events.c's state: where the points are, and what waits for them. */
struct gw_rd_events {
	int64_t point;            /* the last point's step, -1: none (or a resume since) */
	unsigned overflows;       /* overflow events since that point */
	bool at_min;              /* an overflow at the scaler's floor since that point */
	int64_t named;            /* the step an overflow line named since that point, -1 */
	char last_text[128];      /* the last overflow line (its first bytes) ... */
	size_t last_len;
	double last_ts;           /* ... and its time */
	int64_t last_saved;       /* the last checkpoint_saved's step, -1: none */
	int64_t stopped;          /* the step of the last point a stopped line made, -1 */
	struct gw_rd_held resume; /* a resume waiting for the next point */
	struct gw_rd_held pending;   /* an overflow waiting for the lines about it */
	struct gw_rd_held held[GW_RD_HELD];   /* overflows before the first point */
	size_t nheld;
};

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
	double line_ts;                /* the time its prefix names (rd_line.c), NaN: none */
	double wrapped_ts;             /* a prefix alone on the line before (its message
	                                  wrapped onto the next line), NaN: none */
	struct gw_rd_events ev;        /* overflow and checkpoint lines (rd_events.c) */
	/* told about every point of the default run before it is handed over
	 * (gw__rd_emit); rd_events.c sets it (gw__rd_events_init) */
	int (*before_point)(struct gw_reader *r, int64_t step);
	int64_t label;                 /* the label whose points move the run splitting */

	/* the default run and its from-scratch restarts */
	char cur_run[GW_WIRE_RUN_MAX + 16];
	unsigned run_no;
	bool run_any;
	int64_t run_first, run_last;

	uint64_t records;              /* byte formats: records completed */
	uint64_t handed;               /* records and events given to the sink */
	uint64_t point_line;           /* the line of the last point given (gw__rd_emit) */
	bool fed;                      /* gw_reader_feed was given bytes */
	uint64_t errors;
};

/* cur_run for run_no: NAME, or NAME#k (rd_point.c). */
void gw__rd_name_run(struct gw_reader *r);

/* An event of the default run at `step`, from `line`, with its own ts and
 * rank label (rd_point.c; gw__rd_event is this with the line's). */
int gw__rd_event_at(struct gw_reader *r, const char *name, int64_t step, json_t *attrs,
                    uint64_t line, double ts, int64_t label);

/* rd_events.c: its state made and its point hook set (before_point: a
 * point of the default run at `step`, before it is handed over); a stdout
 * line, before its format reads it (returns 1 when it was an overflow or
 * checkpoint line, 0 if not, or a sink's negative errno); the end of the
 * input. */
void gw__rd_events_init(struct gw_reader *r);
int gw__rd_common_line(struct gw_reader *r, const char *s, size_t n, uint64_t line);
int gw__rd_events_finish(struct gw_reader *r);

#endif
