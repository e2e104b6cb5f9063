/*
 * convert: read logs through the readers layer and write every point and
 * event as one line of gradwatch's wire format (docs/wire-format.md) on
 * stdout, so that `gradwatch send`, `gradwatch replay` and any tool that
 * reads our NDJSON can take logs in any format gradwatch reads.
 *
 * A point is written as run, step, ts (when known), the role values under
 * their canonical names (loss, grad_norm, lr, throughput), then its extra
 * metrics under their own names; an event as run, step, "event" and its
 * attributes (gw_wire_append_rec).  Numbers are written as Python's json
 * module would (shortest round trip; NaN, Infinity, -Infinity bare), so
 * converting and reading back gives the same doubles.  Points that a
 * checkpoint copy repeats from one converted before are left out
 * (input.h, gw_input_seen).
 *
 * When the input ends, so does every run written from it: a last line
 * {"run":R,"step":LAST,"event":"run_finished","reason":"end_of_log"} per
 * run says so (docs/wire-format.md "The end of a run").  A log converted
 * and sent is history, or a stream that ended: the daemon does not watch
 * its silence (no `stall` two minutes after `gradwatch convert LOG |
 * gradwatch send`), and it watches the run again if more of it comes.
 *
 * A log every rank printed to (rank labels, readers/reader.h) becomes the
 * timeline of one rank: the first labelled point's, as the daemon reads the
 * log; the other ranks' points are left out and counted on stderr.  A label
 * is not written as the "rank" field: that names a process's global rank,
 * whose rank 0 is the run's, and Megatron prints from its last rank.
 */
#include "convert.h"

#include "cli.h"

#include "input.h"
#include "reader.h"

#include "buf.h"
#include "strtab.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run written, to end it when the input ends. */
struct ended {
	char *name;
	size_t len;
	int64_t step;         /* the step of its last line written */
};

struct out {
	FILE *f;
	struct gw_buf buf;
	int64_t label;        /* this file's first labelled point's rank, -1: none */
	uint64_t apart;       /* points of other labels left out of this file */
	struct ended *runs;   /* every run written, in order ... */
	size_t nruns, capruns;
	struct gw_strtab index;   /* ... and by name */
};

/* Note that run rec->run has a line at rec->step. */
static int note_run(struct out *o, const struct gw_rec *rec)
{
	uint32_t k;
	if (gw_strtab_find(&o->index, rec->run, rec->run_len, &k) == 0) {
		o->runs[k].step = rec->step;
		return 0;
	}
	if (o->nruns >= UINT32_MAX || gw_grow((void **)&o->runs, &o->capruns, o->nruns + 1,
	                                      sizeof(*o->runs)) < 0)
		return -ENOMEM;
	struct ended *e = &o->runs[o->nruns];
	if (!(e->name = malloc(rec->run_len + 1)))
		return -ENOMEM;
	memcpy(e->name, rec->run, rec->run_len);
	e->name[rec->run_len] = '\0';
	e->len = rec->run_len;
	e->step = rec->step;
	if (gw_strtab_put(&o->index, e->name, e->len, (uint32_t)o->nruns) < 0) {
		free(e->name);
		return -ENOMEM;
	}
	o->nruns++;
	return 0;
}

/* The input ended: each run written ends with it, at its last step
 * (docs/wire-format.md "The end of a run": the log is history, its
 * silence no hang). */
static int end_runs(struct out *o)
{
	json_t *attrs = json_pack("{s:s}", "reason", "end_of_log");
	if (!attrs)
		return -ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < o->nruns && !rc; i++) {
		struct gw_rec ev = {.run = o->runs[i].name, .run_len = o->runs[i].len,
		                    .step = o->runs[i].step, .ts = NAN, .event = "run_finished",
		                    .attrs = attrs};
		gw_buf_reset(&o->buf);
		if (gw_wire_append_rec(&o->buf, &ev) < 0)
			rc = -ENOMEM;
		else if (fwrite(o->buf.p, 1, o->buf.len, o->f) != o->buf.len)
			rc = -EIO;
	}
	json_decref(attrs);
	return rc;
}

static int on_rec(void *data, const struct gw_rec *in_rec, uint64_t line)
{
	struct out *o = data;
	struct gw_rec rec = *in_rec;
	if (rec.has_rank && rec.rank_label) {
		if (!rec.event && o->label < 0)
			o->label = rec.rank;
		if (!rec.event && rec.rank != o->label) {
			o->apart++;
			return 0;
		}
		rec.has_rank = rec.rank_label = false;
	}
	gw_buf_reset(&o->buf);
	if (gw_wire_append_rec(&o->buf, &rec) < 0 || note_run(o, &rec) < 0)
		return -ENOMEM;
	if (fwrite(o->buf.p, 1, o->buf.len, o->f) != o->buf.len)
		return -EIO;
	return 0;
}

static const char convert_usage[] =
	"usage: gradwatch convert [--input-format NAME] [--run NAME] FILE...\n"
	"\n"
	"Read logs in any format gradwatch reads (gzip/zstd too; '-' = standard\n"
	"input) and write them as gradwatch NDJSON on standard output.\n"
	"\n"
	"  -i, --input-format NAME   the format of every FILE (default: sniffed;\n"
	"                            gradwatch formats lists them)\n"
	"  -r, --run NAME            the run of points whose log names none\n"
	"\n"
	"exit status: 0 every file read; 2 an error (a file with nothing readable too)\n";

int gw_convert_main(struct gw_cfg *cfg, int argc, char **argv)
{
	const char *run = NULL, *format = NULL;
	static const struct option lo[] = {
		{"input-format", required_argument, NULL, 'i'},
		{"run", required_argument, NULL, 'r'},
		GW_CLI_OPT_HELP,
	};
	static const char prog[] = "gradwatch convert";
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":i:r:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'i':
			if (!gw_reader_format_find(optarg))
				return gw_cli_bad_format(prog, optarg);
			format = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		case 'h':
			fputs(convert_usage, stdout);
			return 0;
		default:
			return gw_cli_bad_option(prog, ch, argv);
		}
	}
	if (optind >= argc)
		return gw_cli_usage_error(prog, "no file given (use - for standard input)", NULL);
	struct out o = {.f = stdout};
	int status = 0;
	struct gw_input_seen *seen = gw_input_seen_new();
	if (!seen) {
		fprintf(stderr, "gradwatch convert: out of memory\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		struct gw_input in = {
			.cmd = "convert",
			.path = argv[i],
			.run = run,
			.format = format,
			.aliases = cfg->aliases,
			.max_line = cfg->max_line > (16u << 20) ? cfg->max_line : (16u << 20),
			.on_rec = on_rec,
			.data = &o,
			.seen = seen,
		};
		o.label = -1;
		o.apart = 0;
		int rc = gw_input_read(&in);
		if (o.apart)
			fprintf(stderr, "gradwatch convert: %s: %llu point(s) of other ranks left out "
			        "(the log's lines carry rank labels; written: rank %lld's)\n", argv[i],
			        (unsigned long long)o.apart, (long long)o.label);
		if (rc == -EIO || rc == -ENOMEM) {
			fprintf(stderr, "gradwatch convert: cannot write the output: %s\n", strerror(-rc));
			status = 2;
			break;
		}
		if (rc < 0)
			status = 2;
	}
	int rc = end_runs(&o);
	if (rc < 0 && status == 0) {
		fprintf(stderr, "gradwatch convert: cannot write the output: %s\n", strerror(-rc));
		status = 2;
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "gradwatch convert: cannot write the output: %s\n", strerror(errno));
		status = 2;
	}
	gw_buf_free(&o.buf);
	for (size_t i = 0; i < o.nruns; i++)
		free(o.runs[i].name);
	free(o.runs);
	gw_strtab_free(&o.index);
	gw_input_seen_free(seen);
	return status;
}

int gw_formats_main(int argc, char **argv)
{
	int rc = gw_cli_plain("gradwatch formats",
	                      "usage: gradwatch formats\n\n"
	                      "List the log formats gradwatch reads: the name (for --input-format),\n"
	                      "\"stream\" (can be followed while it grows) or \"whole\" (read as a\n"
	                      "whole file), and what it is.\n", argc, argv);
	if (rc >= 0)
		return rc;
	for (size_t i = 0; gw_reader_formats[i]; i++) {
		const struct gw_reader_format *f = gw_reader_formats[i];
		printf("%-18s %-7s %s\n", f->name, f->flags & GW_RDF_STREAM ? "stream" : "whole",
		       f->describe);
	}
	return 0;
}
