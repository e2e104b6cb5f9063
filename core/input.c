/*
 * input: a file through a reader for the command-line tools (see input.h).
 *
 * Errors are printed as they come, up to the cap, so the first ones appear
 * at once; the rest are only counted.  Control characters from the input
 * are printed as \xNN.  The progress line is redrawn at most
 * four times a second with '\r', and erased before anything else is printed
 * and at the end, so it never mixes with error lines or output.
 */
#include "input.h"
#include "mlflow.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1u << 20)
#define PROGRESS_AFTER_MS 2000
#define PROGRESS_EVERY_MS 250

struct gw_input_seen {
	uint64_t *slot;  /* 0: empty */
	size_t cap, count;
};

struct gw_input_seen *gw_input_seen_new(void)
{
	return calloc(1, sizeof(struct gw_input_seen));
}

void gw_input_seen_free(struct gw_input_seen *s)
{
	if (s)
		free(s->slot);
	free(s);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t point_key(const struct gw_rec *rec)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < rec->run_len; i++)
		h = mix(h, (unsigned char)rec->run[i]);
	h = mix(h, (uint64_t)rec->step);
	h = mix(h, rec->present);
	for (int r = 0; r < GW_NROLES; r++) {
		if (!gw_rec_has(rec, (enum gw_role)r))
			continue;
		uint64_t bits;
		memcpy(&bits, &rec->v[r], sizeof(bits));
		h = mix(h, bits);
	}
	return h ? h : 1;
}

/* 1 if key was there, 0 if it was added, -ENOMEM. */
static int seen_add(struct gw_input_seen *s, uint64_t key)
{
	if ((s->count + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *n = calloc(cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slot[i])
				continue;
			size_t j = s->slot[i] & (cap - 1);
			while (n[j])
				j = (j + 1) & (cap - 1);
			n[j] = s->slot[i];
		}
		free(s->slot);
		s->slot = n;
		s->cap = cap;
	}
	size_t j = key & (s->cap - 1);
	while (s->slot[j]) {
		if (s->slot[j] == key)
			return 1;
		j = (j + 1) & (s->cap - 1);
	}
	s->slot[j] = key;
	s->count++;
	return 0;
}

struct ctx {
	struct gw_input *in;
	struct gw_reader *r;
	unsigned cap;
	uint64_t shown;
	bool tty, progress_on;
	uint64_t t0, last_draw;
	uint64_t size, done;   /* bytes of the file (0: unknown) and read so far */
};

static void erase_progress(struct ctx *c)
{
	if (c->progress_on) {
		fputs("\r\033[K", stderr);
		c->progress_on = false;
	}
}

static void draw_progress(struct ctx *c)
{
	uint64_t now = gw_mono_ms();
	if (now - c->t0 < PROGRESS_AFTER_MS || now - c->last_draw < PROGRESS_EVERY_MS)
		return;
	c->last_draw = now;
	char lines[32];
	gw_fmt_int(lines, sizeof(lines), (int64_t)c->in->lines);
	if (c->size)
		fprintf(stderr, "\r\033[Kgradwatch %s: %s: %d%% (%.1f of %.1f MB), %s lines", c->in->cmd,
		        c->in->path, (int)(100.0 * (double)c->done / (double)c->size),
		        (double)c->done / 1e6, (double)c->size / 1e6, lines);
	else
		fprintf(stderr, "\r\033[Kgradwatch %s: %s: %.1f MB, %s lines", c->in->cmd, c->in->path,
		        (double)c->done / 1e6, lines);
	c->progress_on = true;
}

static int on_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	struct ctx *c = data;
	const struct gw_reader_format *f = gw_reader_format(c->r);
	if (c->in->seen && !rec->event && f && !(f->flags & GW_RDF_STREAM)) {
		int rc = seen_add(c->in->seen, point_key(rec));
		if (rc < 0)
			return rc;
		if (rc) {
			c->in->duplicates++;
			return 0;
		}
	}
	c->in->handed++;
	return c->in->on_rec(c->in->data, rec, line);
}

/* Text from the input (a field name, a value) or a file name, with control
 * characters as \xNN, as the daemon's log writes them: no input can split
 * a line or send escape sequences to the terminal. */
static void put_escaped(const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch == 0x7f)
			fprintf(stderr, "\\x%02x", ch);
		else
			fputc(ch, stderr);
	}
}

static void on_error(void *data, uint64_t line, const struct gw_wire_err *e)
{
	const char *msg = e->msg;
	struct ctx *c = data;
	c->in->errors++;
	if (c->shown >= c->cap)
		return;
	c->shown++;
	erase_progress(c);
	put_escaped(c->in->path);
	if (line)
		fprintf(stderr, ":%" PRIu64, line);
	fputs(": ", stderr);
	put_escaped(msg);
	fputc('\n', stderr);
}

/* A bad line of an MLflow metric file, counted and printed as the
 * reader's complaints are (with that file's path). */
static void on_mlflow_error(void *data, const char *file, uint64_t line, const char *msg)
{
	struct ctx *c = data;
	c->in->errors++;
	if (c->shown >= c->cap)
		return;
	c->shown++;
	put_escaped(file);
	fprintf(stderr, ":%" PRIu64 ": ", line);
	put_escaped(msg);
	fputc('\n', stderr);
}

/* The file names a framework always writes, whatever the run, and the
 * names people give every job's log: such a file is named after its folder
 * instead (the run's output folder, above a Hugging Face checkpoint-N
 * folder), so that the trainer_state.json of two runs are two runs, the
 * checkpoint copies of one are one, and two jobs' train.log replayed or
 * reported together stay two runs.  The stems are matched after the
 * extensions gw_input_run_name takes off (train.log, training.log,
 * log.txt, stdout.log, nohup.out, metrics.csv ...), in any case. */
static bool generic_name(const char *name)
{
	static const char *const fixed[] = {
		"trainer_state",            /* Hugging Face Trainer */
		"metrics",                  /* Lightning CSVLogger metrics.csv */
		"logging",                  /* ms-swift logging.jsonl */
		"main",                     /* llm.c main.log */
		"log", "logs",              /* build-nanoGPT log.txt, a job's log.txt */
		"train", "training",        /* fairseq's train.log, Keras' training.log */
		"train_log", "training_log",
		"stdout", "stderr", "output", "console", "nohup",   /* a job's captured output */
		"run", "job",
		NULL,
	};
	for (size_t i = 0; fixed[i]; i++)
		if (!strcasecmp(name, fixed[i]))
			return true;
	return !strncmp(name, "events.out.tfevents.", 20);   /* TensorBoard */
}

static bool hf_checkpoint_dir(const char *name, size_t n)
{
	if (n <= 11 || strncmp(name, "checkpoint-", 11))
		return false;
	for (size_t i = 11; i < n; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

/* The name of the folder that holds path (above checkpoint-N) into buf;
 * false when there is none to be had.  The folder is resolved, not the
 * file; an absolute path whose folder does not exist yet (followed before
 * the job made it) is taken as written, so it gets the name it will have. */
static bool folder_name(const char *path, char *buf, size_t len)
{
	char *copy = strdup(path);
	if (!copy)
		return false;
	char *slash = strrchr(copy, '/');
	const char *dir_part = slash ? (slash == copy ? "/" : copy) : ".";
	if (slash && slash != copy)
		*slash = '\0';
	char *full = realpath(dir_part, NULL);
	if (!full && dir_part[0] == '/')
		full = strdup(dir_part);   /* not there yet: the path as given */
	free(copy);
	if (!full)
		return false;
	bool ok = false;
	for (int up = 0; up < 2; up++) {
		char *dir = strrchr(full, '/');
		dir = dir ? dir + 1 : full;
		if (!*dir)
			break;                        /* the root */
		if (up == 0 && hf_checkpoint_dir(dir, strlen(dir)) && dir - 1 > full) {
			dir[-1] = '\0';               /* the output folder above it */
			continue;
		}
		gw_strlcpy(buf, dir, len);
		ok = true;
		break;
	}
	free(full);
	return ok;
}

void gw_input_run_name(const char *path, char *buf, size_t len)
{
	if (!strcmp(path, "-")) {
		gw_strlcpy(buf, "stdin", len);
		return;
	}
	/* a directory named "run/" (an MLflow run) is "run" */
	char trimmed[4096];
	size_t pl = gw_strlcpy(trimmed, path, sizeof(trimmed));
	while (pl > 1 && pl < sizeof(trimmed) && trimmed[pl - 1] == '/')
		trimmed[--pl] = '\0';
	path = trimmed;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	gw_strlcpy(buf, base, len);
	static const char *const ext[] = {
		".gz", ".zst", ".zstd", ".jsonl", ".ndjson", ".json", ".log", ".out", ".txt",
		".csv", ".trainer_state", ".logging", ".main", ".metrics", ".train", ".md", NULL,
	};
	for (bool again = true; again;) {
		again = false;
		size_t n = strlen(buf);
		for (size_t i = 0; ext[i]; i++) {
			size_t k = strlen(ext[i]);
			if (n > k && !strcmp(buf + n - k, ext[i])) {
				buf[n - k] = '\0';
				again = true;
				break;
			}
		}
	}
	if (!*buf)
		gw_strlcpy(buf, base, len);
	if (generic_name(buf))
		folder_name(path, buf, len);   /* else the file's name, as it is */
	/* the run-name rule: at most GW_WIRE_RUN_MAX bytes of UTF-8 without
	 * control characters; a file name that breaks it becomes ASCII */
	size_t n = strlen(buf);
	if (n > GW_WIRE_RUN_MAX)
		buf[n = GW_WIRE_RUN_MAX] = '\0';
	if (gw_wire_check_run(buf, n, NULL, 0) < 0)
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
				buf[i] = '_';
}

int gw_input_read(struct gw_input *in)
{
	struct ctx c = {.in = in, .cap = in->max_errors ? in->max_errors : 20};
	char run[GW_WIRE_RUN_MAX + 1], err[512];
	in->lines = in->handed = in->errors = in->duplicates = 0;
	in->format_used = NULL;
	if (!in->run)
		gw_input_run_name(in->path, run, sizeof(run));
	bool is_stdin = !strcmp(in->path, "-");
	int fd = is_stdin ? STDIN_FILENO : open(in->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		fprintf(stderr, "gradwatch %s: %s: %s\n", in->cmd, in->path, strerror(e));
		return -e;
	}
	struct stat sb;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
		c.size = (uint64_t)sb.st_size;
	c.tty = isatty(STDERR_FILENO);
	c.t0 = c.last_draw = gw_mono_ms();

	/* a directory: an MLflow run, read as the NDJSON it makes */
	struct gw_buf mem = {0};
	bool dir = !is_stdin && S_ISDIR(sb.st_mode);
	if (dir) {
		if (in->format && strcmp(in->format, "ndjson") != 0) {
			fprintf(stderr, "gradwatch %s: %s: a directory (an MLflow run) has no input format "
			        "to choose\n", in->cmd, in->path);
			close(fd);
			return -EPROTO;
		}
		int rc = gw_mlflow_ndjson(in->path, in->run, run, &mem, on_mlflow_error, &c, err,
		                          sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "gradwatch %s: %s\n", in->cmd, err);
			gw_buf_free(&mem);
			close(fd);
			return rc == -ENOENT ? -EPROTO : rc;
		}
		c.size = mem.len;
	}

	struct gw_reader_opts ro = {
		.aliases = in->aliases,
		.run = in->run ? in->run : run,
		.format = dir ? "ndjson" : in->format,
		.max_line = in->max_line,
	};
	struct gw_reader_sink sink = {.data = &c, .on_rec = on_rec, .on_error = on_error};
	struct gw_reader *r = NULL;
	int rc = gw_reader_new(&ro, &sink, &r, err, sizeof(err));
	c.r = r;
	if (rc < 0) {
		fprintf(stderr, "gradwatch %s: %s\n", in->cmd, err);
		goto out;
	}
	char *buf = malloc(CHUNK);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t at = 0;;) {
		ssize_t n;
		if (dir) {
			n = (ssize_t)GW_MIN((size_t)CHUNK, mem.len - at);
			if (n)
				memcpy(buf, mem.p + at, (size_t)n);
			at += (size_t)n;
		} else {
			n = read(fd, buf, CHUNK);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			erase_progress(&c);
			fprintf(stderr, "gradwatch %s: %s: %s\n", in->cmd, in->path, strerror(-rc));
			break;
		}
		rc = n ? gw_reader_feed(r, buf, (size_t)n) : gw_reader_finish(r);
		c.done += (uint64_t)n;
		in->lines = gw_reader_lines(r);
		if (rc || !n)
			break;
		if (c.tty)
			draw_progress(&c);
	}
	free(buf);
	erase_progress(&c);
	in->lines = gw_reader_lines(r);
	if (gw_reader_format(r))
		in->format_used = gw_reader_format(r)->name;
	if (c.shown < in->errors) {
		char more[32];
		fprintf(stderr, "%s: … and %s more error%s\n", in->path,
		        gw_fmt_int(more, sizeof(more), (int64_t)(in->errors - c.shown)),
		        in->errors - c.shown == 1 ? "" : "s");
	}
	if (rc == -EPROTO)
		fprintf(stderr, "gradwatch %s: %s: %s\n", in->cmd, in->path, gw_reader_error(r));
	else if (rc == -ENOMEM)
		fprintf(stderr, "gradwatch %s: %s: out of memory\n", in->cmd, in->path);
out:
	gw_buf_free(&mem);
	gw_reader_free(r);
	if (!is_stdin)
		close(fd);
	return rc;
}
