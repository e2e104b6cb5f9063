/*
 * What a format module (readers/rd_*.c) uses to build the points it reads
 * and hand them over; shared-internal (gw__rd_ prefix), not for callers of
 * reader.h.
 *
 * A point is built between gw__rd_begin and gw__rd_emit: every named number
 * goes through gw__rd_metric, which maps the name to a role through the
 * alias table (the alias added first wins when a point has several names
 * of one role; the others stay extra metrics) and keeps every other number
 * as an extra metric (names are copied); the aliases of the fp16 fields
 * (loss_scale, skipped, nan_iterations) fill the point's f[].  gw__rd_emit
 * hands the point to the sink only when it carries at least one role or
 * fp16 field, and applies the run splitting described in reader.h to
 * points of the default run.
 */
#ifndef GW_READER_IMPL_H
#define GW_READER_IMPL_H

#include "reader.h"
#include "buf.h"

#define GW_RD_MAX_EXTRA 64   /* extra metrics kept per point; more are dropped */

/* Start a point of run `run` (run_len bytes; NULL: the reader's default run)
 * at `step`; forgets what the previous point had. */
void gw__rd_begin(struct gw_reader *r, const char *run, size_t run_len, int64_t step);

/* The point's wall-clock time, Unix seconds (NaN: none, the default). */
void gw__rd_ts(struct gw_reader *r, double ts);

/* Add a named number to the point (may be NaN or +-Inf).  Returns 0, or
 * -ENOSPC when the point already has GW_RD_MAX_EXTRA extras (dropped). */
int gw__rd_metric(struct gw_reader *r, const char *name, size_t len, double v);

/* Hand the point over, from source line `line`.  Returns 0 (also when it
 * was skipped for carrying no role and no fp16 field) or the sink's
 * negative errno. */
int gw__rd_emit(struct gw_reader *r, uint64_t line);

/* An event (a checkpoint saved, a resume) of run `run` (NULL: default) at
 * `step`, with attributes `attrs` (borrowed; may be NULL), as the wire
 * format's event lines (docs/wire-format.md). */
int gw__rd_event(struct gw_reader *r, const char *run, const char *name, int64_t step,
                 json_t *attrs, uint64_t line);

/* An NDJSON line the wire parser rejected, with the parser's reason, field
 * and column. */
void gw__rd_wire_error(struct gw_reader *r, uint64_t line, const struct gw_wire_err *e);

/* Report input that could not be read at `line` (0 if unknown); the
 * message names the field ("bad_value: field \"loss\": ...").  It is not
 * an error of the reader: reading goes on. */
void gw__rd_error(struct gw_reader *r, uint64_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A progress bar redrawn repeats its last point: the step of the last
 * point read and the rank label of its line (-1: none).  Set it with
 * gw__rd_last_set; gw__rd_repeats says whether a point at `step` on the
 * line being read is that one again (the same step from the same label:
 * another rank's point at that step, its lines interleaved by a launcher,
 * is its own). */
struct gw_rd_last {
	int64_t step, label;
};
void gw__rd_last_set(const struct gw_reader *r, struct gw_rd_last *l, int64_t step);
bool gw__rd_repeats(const struct gw_reader *r, const struct gw_rd_last *l, int64_t step);

/* The line being read: its rank label and its time (a logger prefix's).
 * A format that holds what a line said until a later one (Megatron's
 * wrapped records) saves them with the line and restores them while it
 * builds the point, then restores the current line's. */
struct gw_rd_linectx {
	int64_t label;
	double ts;
};
void gw__rd_line_save(const struct gw_reader *r, struct gw_rd_linectx *c);
void gw__rd_line_restore(struct gw_reader *r, const struct gw_rd_linectx *c);

/* Whether the input grows while it is read (gw_reader_opts.follow). */
bool gw__rd_following(const struct gw_reader *r);

/* A record held until the next line says whether it goes on (a chat or an
 * issue box hard-wrapped it: Megatron's, torchtitan's): its text, the
 * lines joined to it with a space, and its first line's number, rank
 * label and time (rd_point.c).  Zeroed is empty; free with
 * gw__rd_hold_free.  Only when the input is read to its end: a followed
 * log is not wrapped, and its records are read as they come. */
struct gw_rd_hold {
	struct gw_buf text;
	bool held;
	unsigned more;                /* lines joined to it */
	uint64_t line;
	struct gw_rd_linectx ctx;
};
typedef int (*gw_rd_hold_fn)(struct gw_reader *r, const char *s, size_t n, uint64_t line);
/* Hold s[0..n), the line being read (the one held before must have been
 * flushed).  0 or -ENOMEM. */
int gw__rd_hold(struct gw_reader *r, struct gw_rd_hold *h, const char *s, size_t n,
                uint64_t line);
/* Join s[0..n) to the record held.  0 or -ENOMEM. */
int gw__rd_hold_join(struct gw_rd_hold *h, const char *s, size_t n);
/* The record held, if any, to fn as its first line (with that line's
 * label and time); returns fn's result (0 without one). */
int gw__rd_hold_flush(struct gw_reader *r, struct gw_rd_hold *h, gw_rd_hold_fn fn);
void gw__rd_hold_free(struct gw_rd_hold *h);

/* The alias table and the default run name. */
const struct gw_alias *gw__rd_aliases(const struct gw_reader *r);
const char *gw__rd_default_run(const struct gw_reader *r);

/* Byte formats: everything before offset `bytes` of the (decompressed)
 * input, counted from the first byte fed to this reader, is fully
 * processed.  Call it once after each complete record: each call counts one
 * record for gw_reader_lines().  Line formats get it from the line
 * splitter. */
void gw__rd_consumed(struct gw_reader *r, uint64_t bytes);

/* The input cannot be read (any further): keep the message for
 * gw_reader_error() and return -EPROTO, for the format to return from its
 * callback (a byte format's feed/finish, or a line format's header). */
int gw__rd_fail(struct gw_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Lines (records) before the input's first byte: gw_reader_opts.first_line,
 * for byte formats that number their records themselves. */
uint64_t gw__rd_first_line(const struct gw_reader *r);

/* Hand over a record the format built itself (the NDJSON parser fills a
 * struct gw_rec): as is, without the role filter or run splitting. */
int gw__rd_emit_rec(struct gw_reader *r, const struct gw_rec *rec, uint64_t line);

/* Text helpers for line formats. */

/* A number at s[0..n): [+-] digits [. digits] [e[+-]digits], or nan / inf /
 * infinity in any case; *v gets it.  Returns the bytes it used, 0 if s does
 * not start with a number. */
size_t gw__rd_num(const char *s, size_t n, double *v);

/* As gw__rd_num, also with thousands grouped by commas ("10,050",
 * "1,234,567.5": a comma followed by exactly three digits). */
size_t gw__rd_num_grouped(const char *s, size_t n, double *v);

/* s[0..n) without ANSI colour and cursor codes (ESC '[' ... final byte,
 * and a lone ESC), into out (at most cap - 1 bytes; the rest is cut);
 * returns the length. */
size_t gw__rd_plain(const char *s, size_t n, char *out, size_t cap);

/* Unsigned decimal digits at s[0..n) into *v; returns the bytes used, 0 if
 * none (or the value does not fit in int64_t). */
size_t gw__rd_int(const char *s, size_t n, int64_t *v);

/* A number read as a step: true, with *step set, when v is a whole number
 * >= 0 that int64_t holds (the range 0..GW_WIRE_STEP_MAX is gw__rd_begin's
 * to check); false for a fraction, a negative, NaN, inf or 1e300, whose cast
 * would be undefined. */
bool gw__rd_whole(double v, int64_t *step);

/* A name a loss may be in, when no alias names the loss ("loss_pr",
 * "loss_ce", "kl_loss"): it holds "loss" (any case) and is not an
 * evaluation's (val, valid, eval, test first), an epoch's aggregate
 * (Lightning's *_epoch) or the fp16 loss scale.  The csv and text formats
 * judge the one whose name says total ("total_loss"), else the first. */
bool gw__rd_loss_part(const char *name);

/* Is the word s[0..n) one that says evaluation (val, valid, validation,
 * eval, evaluation, test, ...), any case? */
bool gw__rd_eval_word(const char *s, size_t n);

/* The first occurrence of `needle` in s[0..n), or NULL. */
const char *gw__rd_find(const char *s, size_t n, const char *needle);

/* The rank label at the start of s[0..n) (reader.h "Rank labels"):
 * returns its length (label and the spaces after it) and *rank, or 0. */
size_t gw__rd_label(const char *s, size_t n, uint32_t *rank);

/* For sniffers: the next line of the head at *p (up to end) into *line,
 * *len (without its '\n' or a final '\r', a paste's quote markers and a
 * rank label; code fences are skipped), and *p past it.  False when none
 * is left; an incomplete last line counts only when `all`. */
bool gw__rd_sniff_line(const char **p, const char *end, bool all, const char **line, size_t *len);

/* The same without the logger's prefix (gw__rd_prefix): what a
 * GW_RDF_PREFIX format's line() gets. */
bool gw__rd_sniff_msg(const char **p, const char *end, bool all, const char **line, size_t *len);

/* A paste's Markdown quote markers ("> ", nested, after up to 3 spaces)
 * taken off s[0..*n) (*s and *n move past them); true when what is left is
 * a code fence (``` or ~~~, with a language or not), a line to skip. */
bool gw__rd_unquote(const char **s, size_t *n);

/* The logger's prefix at the start of s[0..n) (rd_line.c: timestamps,
 * levels, logger names, bracketed tags): its length (0: none) and *ts the
 * Unix time it names (NaN: none). */
size_t gw__rd_prefix(const char *s, size_t n, double *ts);

/* Whether s[0..n) holds the words of an overflow, checkpoint or stopped line
 * (rd_events.c; for a sniffer: such lines alone are a log to read). */
bool gw__rd_event_words(const char *s, size_t n);

/* A date and a time at the start of s[0..n) in one of the spellings of
 * gw__rd_prefix (2023-03-22 09:30:39,305, ...T...Z, +02:00, 03/22/2023
 * 09:30:39): its bytes (0: none) and *t, Unix seconds (UTC unless an
 * offset is written). */
size_t gw__rd_datetime(const char *s, size_t n, double *t);

/* The time of the last "[date time" in s[0..n) (a logger's line glued to
 * a progress bar), or NaN. */
double gw__rd_stamp_in(const char *s, size_t n);

/* For line formats whose lines hold several records between bare '\r's
 * (tqdm bars and other progress redraws): fn on each '\r'-separated
 * segment of s[0..n) in order, until it returns non-zero (returned). */
typedef int (*gw_rd_segment_fn)(struct gw_reader *r, void *state, const char *s, size_t n,
                                uint64_t lineno);
int gw__rd_cr_segments(struct gw_reader *r, void *state, const char *s, size_t n,
                       uint64_t lineno, gw_rd_segment_fn fn);

/* The members of one flat object, written as JSON ({"k": 1.5, ...}, with
 * Python's bare NaN/Infinity) or as a Python dict repr ({'k': '1.5', ...},
 * None/True/False): what the HF Trainer and ms-swift write.  Nested
 * values are skipped over (strings in them respected).  Keys and strings
 * are raw spans (escapes not decoded).  Allocation-free. */
enum gw_rd_kind { GW_RD_NUM, GW_RD_STR, GW_RD_OTHER };

struct gw_rd_kv {
	const char *key;
	size_t key_len;
	enum gw_rd_kind kind;
	double num;          /* GW_RD_NUM */
	const char *str;     /* GW_RD_STR: between the quotes */
	size_t str_len;
};

struct gw_rd_obj {
	const char *s;
	size_t n, i;
	bool first;
};

/* A member's value as a number: a number, or a string that is one
 * ("9.786", as fairseq and ms-swift quote them). */
bool gw__rd_kv_num(const struct gw_rd_kv *kv, double *v);

/* Start at s[0], which must be '{'. */
void gw__rd_obj_init(struct gw_rd_obj *o, const char *s, size_t n);

/* The next member into *kv: 1; the end of the object: 0 (o->i is then
 * just past its '}'); not an object of this kind: -1 (o->i is where it
 * stops being one, 0-based). */
int gw__rd_obj_next(struct gw_rd_obj *o, struct gw_rd_kv *kv);

#endif
