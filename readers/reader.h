/*
 * readers: the training logs people already have, read as gradwatch
 * records.  One file per format behind one small interface; `gradwatch
 * replay`, `gradwatch convert` and `gradwatchd --follow` all read through it.
 *
 * A reader is push-based, so the same code serves a file read to its end
 * (replay) and a file that grows (follow): the caller feeds bytes as they
 * come (gw_reader_feed), then says the input ended (gw_reader_finish).  The
 * reader
 *   1. undoes gzip or zstd compression when the input starts with their
 *      magic bytes;
 *   2. picks the format from the content (gw_reader_opts.format forces one):
 *      every format's sniff() looks at the first bytes and the most
 *      confident wins; when none is confident, it keeps buffering (up to
 *      GW_READER_SNIFF_MAX bytes, or the end of the input) and asks again;
 *      nothing recognised is an error (-EPROTO) with a message that names
 *      the formats tried;
 *   3. hands every training point to sink->on_rec as a struct gw_rec (the
 *      same struct the NDJSON parser fills), with the number of the source
 *      line it came from (1-based, counting '\n' only; for binary formats
 *      the 1-based record number), so an alert points into the user's file.
 *
 * Field and tag names map to roles (loss, grad_norm, lr, throughput)
 * through the same alias table as the wire format; other numbers are kept
 * as extra metrics; the fp16 fields (loss_scale, skipped, nan_iterations:
 * wire.h) are found the same way.  A point is handed over only when it
 * carries at least one role or fp16 field: evaluation lines, summaries and configuration dumps are skipped
 * silently (they are not errors); a line that looks like a training point
 * but cannot be read is reported through sink->on_error with its line and
 * the field, and skipped.
 *
 * Run names: a format that names its runs (W&B panel exports, NDJSON's
 * "run") uses them; otherwise opts.run (the caller derives it, e.g. from the
 * file name) is used.  Several from-scratch runs in one file (a step that
 * goes back to the run's first step, as when a Megatron job is started
 * again, from a first step of at most 1,000) become runs "NAME", "NAME#2",
 * ...; an excerpt of a longer run that goes back to its own first step, or
 * a step that goes back to a later
 * point (a resume from a checkpoint) stays in the run, where the engine
 * sees the rewind and opens a segment.
 *
 * Threads: a reader is used from one thread.  Memory: bounded by the
 * longest line (opts.max_line), the sniffing buffer (GW_READER_SNIFF_MAX,
 * until the format is chosen) and, for trainer_state.json, the largest
 * log_history entry (the document itself is read as it comes).
 */
#ifndef GW_READER_H
#define GW_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define GW_READER_SNIFF_MAX (1024 * 1024)

struct gw_reader;

/* Where records and problems go.  Everything `rec` points to is borrowed
 * until the callback returns. */
struct gw_reader_sink {
	void *data;
	/* A training point or an event.  Return 0 to go on, or a negative
	 * errno to stop: gw_reader_feed/finish then return it. */
	int (*on_rec)(void *data, const struct gw_rec *rec, uint64_t line);
	/* Input that looked like a training point but could not be read:
	 * `line` (0 if unknown) and why: e->msg names the field; e->reason is
	 * the wire parser's own for NDJSON lines (malformed_json, bad_run...),
	 * bad_value or truncated for the other formats' complaints. */
	void (*on_error)(void *data, uint64_t line, const struct gw_wire_err *e);
};

struct gw_reader_opts {
	const struct gw_alias *aliases; /* borrowed; must outlive the reader */
	const char *run;                /* run of points whose source names none */
	const char *format;             /* a format name to force, or NULL: sniff */
	size_t max_line;                /* longest text line kept (0: 16 MiB) */
	bool follow;                    /* the input grows: only formats with
	                                   GW_RDF_STREAM are accepted */
	uint64_t first_line;            /* lines before the input's first byte (a
	                                   follower resuming mid-file); 0 */
};

/* Format flags. */
#define GW_RDF_STREAM 1u  /* can be read while it grows (appended, never rewritten) */
#define GW_RDF_LABELS 2u  /* a process's stdout: lines may carry rank labels (below),
                             a logger's prefix with the line's time, and the
                             overflow and checkpoint lines every framework
                             prints (readers/rd_events.c) */
#define GW_RDF_PREFIX 4u  /* the format reads the message: a logger's prefix
                             (a timestamp, a level, its name) is taken off
                             each line first (readers/rd_line.c) */

/* One format (readers/rd_*.c).  Format modules use the helpers of
 * reader_impl.h to build and emit records. */
struct gw_reader_format {
	const char *name;        /* for --input-format: "ndjson", "megatron", ... */
	const char *describe;    /* one line for `gradwatch formats` */
	unsigned flags;          /* GW_RDF_* */
	/* How sure the format is (0 = not this format, 100 = certain) that
	 * the input starting with head[0..n) is its own; `all` is true when
	 * head is the whole input.  Must not depend on the file name.  It is
	 * asked at n = 256, 512, ... GW_READER_SNIFF_MAX and at the end of a
	 * shorter input; 50 or more decides at once (the best wins, the
	 * earlier in gw_reader_formats on a tie), below that the best score
	 * above 0 is taken only at GW_READER_SNIFF_MAX or at the end.  An
	 * incomplete last line of head should not count. */
	int (*sniff)(const char *head, size_t n, bool all);
	size_t state_size;       /* bytes of per-reader state (zeroed) */
	int (*init)(struct gw_reader *r, void *state);
	/* Line formats set `line`: called once per text line (without its
	 * '\n' or a final '\r'; bare '\r' inside the line are kept) with the
	 * line's number.  Byte formats set `feed` instead and get the
	 * (decompressed) input as it comes. */
	int (*line)(struct gw_reader *r, void *state, const char *s, size_t n, uint64_t lineno);
	int (*feed)(struct gw_reader *r, void *state, const char *p, size_t n);
	/* End of input (flush what is pending); may be NULL. */
	int (*finish)(struct gw_reader *r, void *state);
	void (*deinit)(void *state);
};

/* Every format, best first when two are equally sure; NULL-terminated. */
extern const struct gw_reader_format *const gw_reader_formats[];

/* The format called `name`, or NULL. */
const struct gw_reader_format *gw_reader_format_find(const char *name);

/* Create a reader; opts and sink are copied (the strings they point to are
 * borrowed).  Returns 0, -ENOENT for an unknown opts.format, -EINVAL for
 * an opts.run that breaks the run-name rule (gw_wire_check_run) or a
 * format that cannot be followed (message in err), -ENOMEM.  Run names a
 * format reads from its input follow the same rule (a point with a bad
 * one is reported as bad_run and skipped). */
int gw_reader_new(const struct gw_reader_opts *opts, const struct gw_reader_sink *sink,
                  struct gw_reader **out, char *err, size_t errlen);
void gw_reader_free(struct gw_reader *r);

/* Feed the next n bytes of the input.  Returns 0, a sink's negative errno,
 * -ENOMEM, or -EPROTO when the input is not (or no longer) readable
 * (message in gw_reader_error()). */
int gw_reader_feed(struct gw_reader *r, const void *p, size_t n);

/* The input ended: flush a partial last line and pending state.  Returns
 * as gw_reader_feed; -EPROTO also when nothing was recognised at all. */
int gw_reader_finish(struct gw_reader *r);

/* The format in use, or NULL while it is not decided yet. */
const struct gw_reader_format *gw_reader_format(const struct gw_reader *r);

/* Whether the input is gzip or zstd (decided by its first bytes; false
 * until they are seen). */
bool gw_reader_compressed(const struct gw_reader *r);

/* Why the last call returned -EPROTO ("" if it did not). */
const char *gw_reader_error(const struct gw_reader *r);

/* Bytes of the input that are fully processed: everything before this
 * offset has been handed over and nothing after it has (the end of the last
 * complete line or record; of the decompressed input when compressed),
 * counted from the first byte fed to this reader.  A follower stores its
 * starting offset plus this as its position. */
uint64_t gw_reader_consumed(const struct gw_reader *r);

/* Source lines (or binary records) seen so far. */
uint64_t gw_reader_lines(const struct gw_reader *r);

/* Rank labels: when every process of a distributed job prints to one log,
 * launchers label its lines: torchrun's "[rank3]:" or, with --tee, the role
 * and local rank "[default3]:"; srun --label (Megatron's jobs) a
 * right-aligned " 3: ".  Formats flagged GW_RDF_LABELS (and every sniffer,
 * through gw__rd_sniff_line) see the line without its label; the points
 * and events of a labelled line carry the rank (gw_rec.rank_label), and
 * the engine takes the first labelled point's rank as the run's
 * (detectors/engine.h "Ranks").  Only that label's points move the run
 * splitting below: the other ranks' repeats of step 1 are no new run.
 *
 * Where a reader stands in the from-scratch runs of its default run (NAME,
 * NAME#2, ...: see "Run names" above).  A follower stores it with its
 * position and gives it to the reader it starts again mid-file (the daemon
 * restarted) or on a truncated or replaced file, so the runs are named as
 * one reader of the whole stream names them: without it, the third run of
 * a file read by a second reader would be NAME again, and its points a
 * rewind of the first run. */
struct gw_reader_runs {
	unsigned no;              /* 1: NAME, 2: NAME#2, ... */
	bool any;                 /* a point of run `no` was read */
	int64_t first, last;      /* the first and the last step of its points */
	int64_t label;            /* the rank label whose points count, -1: none yet */
};

void gw_reader_get_runs(const struct gw_reader *r, struct gw_reader_runs *out);

/* Continue from st, before anything was fed.  Returns 0, or -EINVAL if
 * st->no is 0 or input was already fed. */
int gw_reader_set_runs(struct gw_reader *r, const struct gw_reader_runs *st);

#endif
