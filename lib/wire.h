/*
 * wire: the NDJSON telemetry line format (docs/wire-format.md).
 *
 * One JSON object per line.  A metric record is
 *   {"run": "...", "step": N, "ts": secs?, <numeric fields>...}
 * and an event is the same with an "event": "<name>" field; an event's other
 * fields are its attributes.  Field names of metric records map to roles
 * (loss, grad_norm, lr, throughput) through an alias table (alias.h);
 * every other numeric field is kept as an extra metric.  An optional "rank" (an integer,
 * the global rank of the process that wrote the line) is kept apart: it is
 * neither a metric nor an attribute.
 *
 * The parser is a purpose-built, allocation-free-per-line JSON reader: it
 * accepts Python's bare NaN / Infinity / -Infinity tokens (which strict JSON
 * parsers such as jansson reject), validates UTF-8, and reports the first
 * error with its byte column and field name.  Event attributes are handed
 * over as a jansson object, in which non-finite numbers become the strings
 * "NaN", "Infinity" and "-Infinity".
 *
 * A parser is not thread-safe; use one per thread.  Everything a parsed
 * record points to lives in the parser and is valid until the next call.
 */
#ifndef GW_WIRE_H
#define GW_WIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alias.h"
#include "buf.h"

/* Why a line was rejected.  Names (gw_wire_reason_name) are the labels of the
 * reject counters and appear in error messages. */
enum gw_wire_reason {
	GW_REJ_SYNTAX,      /* malformed_json */
	GW_REJ_NOT_OBJECT,  /* not_object */
	GW_REJ_UTF8,        /* invalid_utf8 */
	GW_REJ_NO_RUN,      /* missing_run */
	GW_REJ_BAD_RUN,     /* bad_run */
	GW_REJ_NO_STEP,     /* missing_step */
	GW_REJ_BAD_STEP,    /* bad_step */
	GW_REJ_BAD_TS,      /* bad_ts */
	GW_REJ_BAD_VALUE,   /* bad_value */
	GW_REJ_DUP_KEY,     /* duplicate_field */
	GW_REJ_BAD_EVENT,   /* bad_event */
	GW_REJ_BAD_RANK,    /* bad_rank */
	GW_REJ_TOO_LONG,    /* line_too_long (set by the framing, not the parser) */
	GW_REJ_TRUNCATED,   /* truncated (a peer closed mid-line) */
	GW_REJ_UNAUTHORIZED, /* unauthorized (no or a wrong token; set by the daemon) */
	GW_REJ_NO_MEMORY,   /* out_of_memory (the daemon could not hold the line) */
	GW_REJ_SEG_FLOOD,   /* segment_flood (the run's segment cap; set by the daemon) */
	GW_REJ_NREASONS,
};

const char *gw_wire_reason_name(enum gw_wire_reason r);

#define GW_WIRE_RUN_MAX 256        /* bytes of a run name */
#define GW_WIRE_EVENT_MAX 64       /* bytes of an event name */
#define GW_WIRE_STEP_MAX 1000000000000000LL /* 1e15: larger is "absurd" */
#define GW_WIRE_RANK_MAX 1048575   /* largest "rank": 2^20 - 1 processes */

struct gw_wire_err {
	enum gw_wire_reason reason;
	size_t column;     /* 1-based byte offset in the line, 0 if not known */
	char field[64];    /* field concerned, "" if none */
	char msg[256];     /* human-readable, includes field and column */
};

struct gw_metric {
	const char *name;  /* NUL-terminated */
	double value;      /* may be NaN or +-Inf */
};

struct gw_rec {
	const char *run;   /* NUL-terminated */
	size_t run_len;
	int64_t step;
	double ts;         /* NaN when the line has none */
	unsigned present;  /* bit (1u << role) set when that role is present */
	double v[GW_NROLES];
	unsigned fields;   /* bit (1u << field) set when that field is present */
	double f[GW_NFIELDS]; /* the fp16 fields (enum gw_field; may be NaN) */
	const struct gw_metric *extra; /* other numeric fields, in line order */
	size_t n_extra;
	const char *event; /* event name, NULL for a metric record */
	json_t *attrs;     /* event attributes (borrowed), NULL for records */
	bool has_rank;     /* the line names the process that wrote it ... */
	uint32_t rank;     /* ... its global rank (0..GW_WIRE_RANK_MAX) ... */
	bool rank_label;   /* ... from a log's rank label (a reader), not a "rank"
	                      field: which lines are the run's differs
	                      (detectors/engine.h "Ranks") */
};

static inline int gw_rec_has(const struct gw_rec *r, enum gw_role role)
{
	return (r->present >> role) & 1u;
}

static inline int gw_rec_has_field(const struct gw_rec *r, enum gw_field f)
{
	return (r->fields >> f) & 1u;
}

/* Is s[0..n) a valid run name: 1 to GW_WIRE_RUN_MAX bytes of UTF-8 without
 * control characters (C0, DEL, C1)?  The same rule everywhere a run name
 * enters (lines, ?run=, paths, --run, follow, readers).  Returns 0, or
 * -EINVAL with the reason in why. */
int gw_wire_check_run(const char *s, size_t n, char *why, size_t whylen);

struct gw_wire;

/* A parser using alias table `aliases` (borrowed, must outlive it). */
struct gw_wire *gw_wire_new(const struct gw_alias *aliases);
void gw_wire_free(struct gw_wire *w);

/* Parse one line (without its newline; a trailing '\r' is ignored).
 * `default_run`, if not NULL, is used for lines without a "run" field.
 * Returns 0 and fills *rec, or a negative errno (-EINVAL for bad input, with
 * *err filled; -ENOMEM).  A blank line returns -ENODATA (skip it, not an
 * error). */
int gw_wire_parse(struct gw_wire *w, const char *line, size_t len,
                  const char *default_run, struct gw_rec *rec,
                  struct gw_wire_err *err);

/* Append v to a JSON text buffer the way Python's json module would write
 * it (shortest round-trip digits; NaN, Infinity, -Infinity bare).  buf must
 * hold 32 bytes; returns the length written. */
int gw_wire_fmt_double(char *buf, double v);

/* Append `rec` as one line of the wire format, '\n' included: run, step,
 * ts (when not NaN), rank (a "rank" field's; a log's rank label is not
 * one), then an event's "event" and attributes, or a record's
 * roles and fields under their canonical names and its extras under their
 * names;
 * numbers as gw_wire_fmt_double writes them, so gw_wire_parse gives the
 * same record back.  Returns 0 or -ENOMEM (buf keeps what it had, with its
 * err set until gw_buf_reset, lib/buf.h). */
int gw_wire_append_rec(struct gw_buf *buf, const struct gw_rec *rec);

#endif
