/*
 * convert: read logs through the readers layer and write every point and
 * event as one line of gradwatch's wire format (docs/wire-format.md) on
 * stdout, so that `gradwatch send`, `gradwatch replay` and any tool that
 * reads our NDJSON can take logs in any format gradwatch reads.
 *
 * A point is written as run, step, ts (when known), the role values under
 * their canonical names (loss, grad_norm, lr, throughput), then its extra
 * metrics under their own names; an event as run, step, "event" and its
 * attributes.  Numbers are written as Python's json module would (shortest
 * round trip; NaN, Infinity, -Infinity bare), through gw_wire_fmt_double,
 * so converting and reading back gives the same doubles.  Points that a
 * checkpoint copy repeats from one converted before are left out
 * (input.h, gw_input_seen).
 */
#include "convert.h"

#include "input.h"
#include "reader.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct out {
	FILE *f;
	char *buf;
	size_t len, cap;
	int err;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 4096;
		while (cap < o->len + n)
			cap *= 2;
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->err = -ENOMEM;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A JSON string: quotes, backslash and control characters escaped; other
 * bytes (UTF-8 included) as they are. */
static void put_str(struct out *o, const char *s, size_t n)
{
	put(o, "\"", 1);
	size_t i = 0, run = 0;
	for (; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		put(o, s + run, i - run);
		char esc[8];
		if (ch == '"' || ch == '\\')
			snprintf(esc, sizeof(esc), "\\%c", ch);
		else
			snprintf(esc, sizeof(esc), "\\u%04x", ch);
		puts_(o, esc);
		run = i + 1;
	}
	put(o, s + run, i - run);
	put(o, "\"", 1);
}

static void put_num(struct out *o, double v)
{
	char b[32];
	int n = gw_wire_fmt_double(b, v);
	put(o, b, (size_t)n);
}

static int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct out *o = data;
	char b[32];
	o->len = 0;
	puts_(o, "{\"run\":");
	put_str(o, rec->run, rec->run_len);
	snprintf(b, sizeof(b), ",\"step\":%lld", (long long)rec->step);
	puts_(o, b);
	if (rec->ts == rec->ts) {
		puts_(o, ",\"ts\":");
		put_num(o, rec->ts);
	}
	if (rec->event) {
		puts_(o, ",\"event\":");
		put_str(o, rec->event, strlen(rec->event));
		if (rec->attrs && json_object_size(rec->attrs)) {
			char *a = json_dumps(rec->attrs, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(17));
			if (!a)
				return -ENOMEM;
			/* splice the attributes' members after ours */
			put(o, ",", 1);
			put(o, a + 1, strlen(a) - 2);
			free(a);
		}
	} else {
		for (int r = 0; r < GW_NROLES; r++) {
			if (!gw_rec_has(rec, (enum gw_role)r))
				continue;
			put(o, ",", 1);
			put_str(o, gw_role_name((enum gw_role)r), strlen(gw_role_name((enum gw_role)r)));
			put(o, ":", 1);
			put_num(o, rec->v[r]);
		}
		for (size_t i = 0; i < rec->n_extra; i++) {
			put(o, ",", 1);
			put_str(o, rec->extra[i].name, strlen(rec->extra[i].name));
			put(o, ":", 1);
			put_num(o, rec->extra[i].value);
		}
	}
	puts_(o, "}\n");
	if (o->err)
		return o->err;
	if (fwrite(o->buf, 1, o->len, o->f) != o->len)
		return -EIO;
	return 0;
}

int gw_convert_main(struct gw_cfg *cfg, int argc, char **argv)
{
	const char *run = NULL, *format = NULL;
	static const struct option lo[] = {
		{"input-format", required_argument, NULL, 'i'},
		{"run", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "i:r:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'i':
			format = optarg;
			break;
		case 'r':
			run = optarg;
			break;
		case 'h':
			printf("usage: gradwatch convert [--input-format NAME] [--run NAME] FILE...\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "gradwatch convert: no file given (use - for standard input)\n");
		return 2;
	}
	if (format && !gw_reader_format_find(format)) {
		fprintf(stderr, "gradwatch convert: unknown input format \"%s\" (gradwatch formats lists them)\n",
		        format);
		return 2;
	}
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
		int rc = gw_input_read(&in);
		if (rc == -EIO || rc == -ENOMEM) {
			fprintf(stderr, "gradwatch convert: cannot write the output: %s\n", strerror(-rc));
			status = 2;
			break;
		}
		if (rc < 0)
			status = 2;
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "gradwatch convert: cannot write the output: %s\n", strerror(errno));
		status = 2;
	}
	free(o.buf);
	gw_input_seen_free(seen);
	return status;
}

int gw_formats_main(void)
{
	for (size_t i = 0; gw_reader_formats[i]; i++) {
		const struct gw_reader_format *f = gw_reader_formats[i];
		printf("%-18s %-7s %s\n", f->name, f->flags & GW_RDF_STREAM ? "stream" : "whole",
		       f->describe);
	}
	return 0;
}
