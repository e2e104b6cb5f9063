/*
 * bench_readers: how fast each log format is read, beside the NDJSON path
 * reading the same points, in one run.
 *
 * For each of the largest real logs of ../shared/realworld (raw/ and
 * raw-more/), the file is read into memory, then:
 *   1. the file through a reader (format sniffed, as replay does): points
 *      per second and MB per second;
 *   2. the same points converted to NDJSON (gw_wire_append_rec, in memory)
 *      and read back through the ndjson reader: points per second;
 *   3. the ratio 1/2: how the format's reader compares with the fast path.
 * Then, on the NDJSON of the first file: the ndjson reader beside the loop
 * replay had before the readers (lib/lines.c + gw_wire_parse, nothing
 * else), i.e. what the framework costs on the fast path.
 * Each figure is the best of 5 passes of at least 0.2 s each, so a busy
 * machine moves both sides alike.  Reading only: no detectors.  Files
 * after REALWORLD_DIR (paths) are read the same way: meson passes the
 * formats no real log of ../shared has, written by make_shapes.py.
 *   bench_readers REALWORLD_DIR [FILE...]
 */
#include "lines.h"
#include "reader.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct count {
	uint64_t points;
	struct gw_buf *ndjson; /* if set, every point is appended here */
};

static int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct count *c = data;
	c->points++;
	if (c->ndjson && gw_wire_append_rec(c->ndjson, rec) < 0)
		return -ENOMEM;
	return 0;
}

static struct gw_alias *aliases;

/* One pass over buf; returns the points read, or exits on an error. */
static uint64_t read_once(const char *buf, size_t len, const char *format, struct gw_buf *out,
                          const char **fmt_used)
{
	struct count c = {.ndjson = out};
	struct gw_reader_opts o = {.aliases = aliases, .run = "bench", .format = format};
	struct gw_reader_sink s = {.data = &c, .on_rec = on_rec};
	struct gw_reader *r;
	char err[256];
	if (gw_reader_new(&o, &s, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_readers: %s\n", err);
		exit(2);
	}
	/* 1 MiB chunks, as replay reads */
	int rc = 0;
	for (size_t off = 0; off < len && !rc; off += 1u << 20)
		rc = gw_reader_feed(r, buf + off, GW_MIN(len - off, (size_t)1 << 20));
	if (!rc)
		rc = gw_reader_finish(r);
	if (rc) {
		fprintf(stderr, "bench_readers: %s\n", gw_reader_error(r));
		exit(2);
	}
	if (fmt_used)
		*fmt_used = gw_reader_format(r)->name;
	gw_reader_free(r);
	return c.points;
}

/* Best points per second over 5 passes of >= 0.2 s. */
static double rate(const char *buf, size_t len, const char *format, uint64_t *points)
{
	double best = 0;
	for (int pass = 0; pass < 5; pass++) {
		uint64_t n = 0;
		int reps = 0;
		double t0 = now(), t;
		do {
			n += read_once(buf, len, format, NULL, NULL);
			reps++;
			t = now() - t0;
		} while (t < 0.2);
		*points = n / (uint64_t)reps;
		if ((double)n / t > best)
			best = (double)n / t;
	}
	return best;
}

struct direct {
	struct gw_wire *w;
	uint64_t points;
};

static int direct_line(void *data, const char *line, size_t len, uint64_t lineno,
                       enum gw_line_status st)
{
	struct direct *d = data;
	struct gw_rec rec;
	if (gw_wire_parse(d->w, line, len, "bench", &rec, NULL) == 0)
		d->points++;
	return 0;
}

/* The pre-readers replay loop: lines and the wire parser only. */
static double direct_rate(const char *buf, size_t len)
{
	double best = 0;
	for (int pass = 0; pass < 5; pass++) {
		struct direct d = {.w = gw_wire_new(aliases)};
		double t0 = now(), t;
		do {
			struct gw_lines l;
			gw_lines_init(&l, 16u << 20);
			for (size_t off = 0; off < len; off += 1u << 20)
				gw_lines_feed(&l, buf + off, GW_MIN(len - off, (size_t)1 << 20), direct_line, &d);
			gw_lines_finish(&l, direct_line, &d);
			gw_lines_free(&l);
			t = now() - t0;
		} while (t < 0.2);
		if ((double)d.points / t > best)
			best = (double)d.points / t;
		gw_wire_free(d.w);
	}
	return best;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_readers REALWORLD_DIR\n");
		return 2;
	}
	static const char *const files[] = {
		"raw/llmc-gpt2-124m-hector-full.log",
		"raw/llmc-gpt2-124m-siddanth.main.log",
		"raw/hf-star-40k.trainer_state.json",
		"raw/bs-gpt2-meg-n8-tp4-pp8.out",
		"raw-more/megatron-ds-qwen-4runs-restart.log",
		"raw-more/buildnanogpt-124m-nowarmup.out",
		"raw-more/buildnanogpt-124m-2.5ep-killed.log.txt",
		"raw-more/swift-stdout-gemma4-ds-zero3.log",
		"raw/swift-deepclima-qwen3-8b-lora.logging.jsonl",
		"raw/keras-yj-cbam-rms10-train.tfevents",
		"raw-more/tb-tf2-objdet-resumed.v2.tfevents",
		"raw-more/tb-lightning-lstm-textgen.tfevents",
		"raw-more/tb-swift-gemma4-fsdp2-gradnorm.tfevents",
		"raw/lightning-slm-wikitext-v0.metrics.csv",
		"raw-more/wandb-export-sd15-dtu400-train-loss.csv",
		"raw/wandb-export-zip2zip-phi35-training-loss.csv",
		NULL,
	};
	aliases = gw_alias_new();
	struct gw_buf first_nd = {0};
	printf("%-46s %-16s %6s %8s %12s %8s %12s %7s\n", "file", "format", "MB", "points",
	       "points/s", "MB/s", "ndjson pt/s", "ratio");
	size_t nfixed = 0;
	while (files[nfixed])
		nfixed++;
	for (size_t i = 0; i < nfixed + (size_t)(argc - 2); i++) {
		char path[4096];
		const char *label = i < nfixed ? files[i] : argv[2 + i - nfixed];
		if (i < nfixed) {
			snprintf(path, sizeof(path), "%s/%s", argv[1], files[i]);
		} else {
			snprintf(path, sizeof(path), "%s", label);
			const char *slash = strrchr(label, '/');
			label = slash ? slash + 1 : label;
		}
		char *buf;
		size_t len;
		int rc = gw_read_file(path, SIZE_MAX, &buf, &len);
		if (rc < 0) {
			fprintf(stderr, "bench_readers: %s: %s\n", path, strerror(-rc));
			return 2;
		}
		const char *fmt;
		struct gw_buf nd = {0};
		read_once(buf, len, NULL, &nd, &fmt);
		uint64_t pts, nd_pts;
		double r_fmt = rate(buf, len, NULL, &pts);
		double r_nd = rate(nd.p, nd.len, "ndjson", &nd_pts);
		if (pts != nd_pts) {
			fprintf(stderr, "bench_readers: %s: %llu points, %llu as NDJSON\n", path,
			        (unsigned long long)pts, (unsigned long long)nd_pts);
			return 2;
		}
		printf("%-46s %-16s %6.2f %8llu %12.0f %8.1f %12.0f %7.2f\n", label, fmt,
		       (double)len / 1e6, (unsigned long long)pts, r_fmt, r_fmt / (double)pts * (double)len / 1e6,
		       r_nd, r_fmt / r_nd);
		fflush(stdout);
		if (i == 0) {
			first_nd = nd;
			nd.p = NULL;
		}
		free(nd.p);
		free(buf);
	}
	uint64_t pts;
	double via = rate(first_nd.p, first_nd.len, "ndjson", &pts);
	double direct = direct_rate(first_nd.p, first_nd.len);
	printf("\nndjson of %s (%.2f MB): reader %.0f points/s, lines + wire parser alone %.0f "
	       "points/s, ratio %.2f\n", files[0], (double)first_nd.len / 1e6, via, direct, via / direct);
	free(first_nd.p);
	gw_alias_free(aliases);
	return 0;
}
