/*
 * client_send: `gradwatch send` (see client_send.h).
 *
 * send reads NDJSON, cuts it into batches of whole lines and POSTs each to
 * the daemon's /v1/ingest, which answers once the batch is committed; errors
 * come back with their line numbers, which we shift to the line numbers of
 * the input.  Every batch carries its own Idempotency-Key (random per
 * invocation, then the batch number), so a batch whose answer was lost
 * (timeout, reset connection, 503 while the daemon's queue is full) is sent
 * again with the same key and the daemon stores it once.  Retries are
 * bounded (--retries; 507 "disk full" at most twice): send never hangs and
 * never loops forever.  A request may take --timeout seconds.  A file of
 * which every line was rejected is sniffed by the readers: a log in another
 * format, or a compressed file, gets the advice to send it through convert.
 * Ctrl-C (SIGINT) says what was committed and from which line the input is
 * not known to be, then dies of the signal (status 130 in a shell).
 */
#include "client_send.h"

#include "buf.h"
#include "cli.h"
#include "client_http.h"
#include "lines.h"
#include "reader.h"
#include "util.h"
#include "wire.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_IDLE_MS 1000   /* a pending batch goes when the input pauses this long */
#define DEFAULT_RETRIES 3
#define FULL_RETRIES 2          /* 507: the disk stays full for a while */
#define MAX_BACKOFF_MS 8000

static const char send_usage[] =
	"usage: gradwatch send [--url URL] [--run NAME] [--batch N] [--timeout SECONDS]\n"
	"                      [--retries N] [FILE...]\n"
	"\n"
	"Send NDJSON (standard input by default, or '-') to a running gradwatchd over\n"
	"HTTP (POST /v1/ingest, one batch of whole lines per request); each batch\n"
	"returns once the daemon has committed it.  A log in another format:\n"
	"gradwatch convert FILE | gradwatch send.\n"
	"\n"
	"  --url URL          the daemon's HTTP API (default: $GRADWATCH_URL, else the\n"
	"                     configuration's \"http\" address, http://127.0.0.1:7471)\n"
	"  --run NAME         the run of lines that name none\n"
	"  --batch N          lines per request (default 10000; a batch also goes as soon\n"
	"                     as the input pauses for a second, for a job piped in)\n"
	"  --timeout SECONDS  how long one request may take (default 30)\n"
	"  --retries N        how often a batch is sent again, with the same\n"
	"                     Idempotency-Key, after no answer, a timeout or 5xx\n"
	"                     (default 3; disk full (507) at most twice)\n"
	"\n"
	"environment: GRADWATCH_URL, GRADWATCH_TOKEN (sent as a bearer token)\n"
	"exit status: 0 every line committed; 1 some lines rejected (each is\n"
	"printed as FILE:LINE: reason); 2 an error (nothing after the last batch\n"
	"reported as committed was stored)\n";

struct sender {
	const char *url;
	const struct gw__http_opts *http;
	unsigned retries;
	const char *key_prefix;
	uint64_t *batch_no;       /* across files: keys stay unique */
	struct gw_buf batch;
	size_t batch_lines, max_lines;
	uint64_t first_line;      /* input line number of the batch's first line */
	uint64_t accepted, rejected;
	const char *name;         /* input name for messages */
};

/* What Ctrl-C reports, kept current after every committed batch; lock-free
 * atomics, so the SIGINT handler may read them. */
static _Atomic uint64_t int_accepted, int_rejected, int_from;
static _Atomic(const char *) int_name;

static size_t put_str(char *buf, size_t n, size_t at, const char *str)
{
	while (*str && at + 1 < n)
		buf[at++] = *str++;
	return at;
}

static size_t put_u64(char *buf, size_t n, size_t at, uint64_t v)
{
	char d[24];
	size_t k = 0;
	do
		d[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < sizeof(d));
	while (k && at + 1 < n)
		buf[at++] = d[--k];
	return at;
}

/* SIGINT during send: one line of what is stored (async-signal-safe: no
 * stdio, no malloc), then the default action, so the shell sees 130. */
static void on_sigint(int sig)
{
	char m[768];
	size_t at = put_str(m, sizeof(m), 0, "\ngradwatch send: interrupted: ");
	at = put_u64(m, sizeof(m), at, atomic_load(&int_accepted));
	at = put_str(m, sizeof(m), at, " line(s) accepted and committed, ");
	at = put_u64(m, sizeof(m), at, atomic_load(&int_rejected));
	at = put_str(m, sizeof(m), at, " rejected");
	const char *name = atomic_load(&int_name);
	if (name) {
		at = put_str(m, sizeof(m), at, "; ");
		at = put_str(m, sizeof(m), at, name);
		at = put_str(m, sizeof(m), at, " from line ");
		at = put_u64(m, sizeof(m), at, atomic_load(&int_from));
		at = put_str(m, sizeof(m), at, " on is not known to be committed");
	}
	at = put_str(m, sizeof(m), at, "\n");
	ssize_t w = write(STDERR_FILENO, m, at);
	(void)w;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Whether (and after how long) to send the same batch again. */
static bool should_retry(const struct gw__http_answer *a, unsigned attempt, unsigned full,
                         unsigned max_retries, long *wait_ms)
{
	bool transient = a->status == -ETIMEDOUT || a->status == -ECONNREFUSED || a->status == -EIO ||
	                 a->status == 429 || a->status == 500 || a->status == 502 ||
	                 a->status == 503 || a->status == 504;
	if (a->status == 507)
		transient = full <= FULL_RETRIES;
	if (!transient || attempt > max_retries)
		return false;
	long backoff = 500L << (attempt - 1 < 5 ? attempt - 1 : 5);
	*wait_ms = a->retry_after_s >= 0 ? a->retry_after_s * 1000L : GW_MIN(backoff, MAX_BACKOFF_MS);
	return true;
}

/* POST the batch until the daemon answers it or the retries are used up;
 * 0 (the batch was answered: accepted/rejected counted, rejected lines
 * printed) or -EIO (an error was printed). */
static int flush_batch(struct sender *s)
{
	if (!s->batch_lines)
		return 0;
	char key[96];
	snprintf(key, sizeof(key), "%s-%" PRIu64, s->key_prefix, ++*s->batch_no);
	struct gw__http_answer a = {0};
	unsigned attempt = 0, full = 0;
	int rc = -EIO;
	json_t *j = NULL;
	for (;;) {
		attempt++;
		gw__http_request(s->http, s->url, s->batch.p, s->batch.len, key, &a);
		if (a.status == 507)
			full++;
		long wait_ms;
		if (!should_retry(&a, attempt, full, s->retries, &wait_ms))
			break;
		char what[64];
		snprintf(what, sizeof(what), "the daemon answered %ld", a.status);
		fprintf(stderr, "gradwatch send: %s; sending lines %" PRIu64 "-%" PRIu64 " of %s again "
		        "in %.1f s (same Idempotency-Key, retry %u of %u)\n", a.status < 0 ? a.err : what,
		        s->first_line, s->first_line + s->batch_lines - 1, s->name, wait_ms / 1000.0,
		        attempt, s->retries);
		sleep_ms(wait_ms);
	}
	if (a.status < 0) {
		fprintf(stderr, "gradwatch send: %s%s\n", a.err,
		        a.status == -ECONNREFUSED ? " (is gradwatchd running? --url / $GRADWATCH_URL)" : "");
		goto out;
	}
	j = json_loads(a.body.p ? a.body.p : "", 0, NULL);
	if (a.status == 401) {
		fprintf(stderr, "gradwatch send: the daemon %s (401: %s)\n",
		        s->http->token ? "refused the token in $GRADWATCH_TOKEN"
		                       : "wants a token: set $GRADWATCH_TOKEN to an ingest token",
		        gw__http_error_text(j, &a.body));
		goto out;
	}
	if (a.status == 403) {
		fprintf(stderr, "gradwatch send: the token in $GRADWATCH_TOKEN may only read; sending "
		        "needs an ingest token (403: %s)\n", gw__http_error_text(j, &a.body));
		goto out;
	}
	if (a.status == 507) {
		fprintf(stderr, "gradwatch send: the daemon's disk is full (507: %s); gave up after %u tries\n",
		        gw__http_error_text(j, &a.body), attempt);
		goto out;
	}
	if ((a.status != 200 && a.status != 422) || !json_is_integer(json_object_get(j, "accepted"))) {
		fprintf(stderr, "gradwatch send: the daemon answered %ld: %s\n", a.status,
		        gw__http_error_text(j, &a.body));
		goto out;
	}
	uint64_t acc = (uint64_t)json_integer_value(json_object_get(j, "accepted"));
	uint64_t rej = (uint64_t)json_integer_value(json_object_get(j, "rejected"));
	s->accepted += acc;
	s->rejected += rej;
	atomic_fetch_add(&int_accepted, acc);
	atomic_fetch_add(&int_rejected, rej);
	atomic_store(&int_from, s->first_line + s->batch_lines);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "errors"), i, e) {
		fprintf(stderr, "%s:%" PRIu64 ": %s\n", s->name,
		        s->first_line - 1 + (uint64_t)json_integer_value(json_object_get(e, "line")),
		        json_string_value(json_object_get(e, "message")));
	}
	if (json_is_true(json_object_get(j, "errors_truncated")))
		fprintf(stderr, "%s: (more rejected lines in this batch than listed)\n", s->name);
	rc = 0;
out:
	json_decref(j);
	gw_buf_free(&a.body);
	gw_buf_reset(&s->batch);
	if (rc == 0) {
		s->first_line += s->batch_lines;
		s->batch_lines = 0;
	}
	return rc;
}

static int on_send_line(void *data, const char *line, size_t len, uint64_t lineno,
                        enum gw_line_status st)
{
	struct sender *s = data;
	(void)lineno;
	if (st == GW_LINE_TOO_LONG) {
		/* the daemon would refuse it; keep line numbers aligned */
		if (gw_buf_add(&s->batch, "\n", 1) < 0)
			return -ENOMEM;
	} else if (gw_buf_add(&s->batch, line, len) < 0 || gw_buf_add(&s->batch, "\n", 1) < 0) {
		return -ENOMEM;
	}
	s->batch_lines++;
	if (s->batch_lines >= s->max_lines || s->batch.len >= (8u << 20))
		return flush_batch(s);
	return 0;
}

/* Random hex for this invocation's Idempotency-Keys. */
static void make_key_prefix(char *out, size_t n)
{
	unsigned char r[12];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* no entropy source: time and pid still separate invocations */
		uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ gw_mono_ms();
		memcpy(r, &t, sizeof(t));
		memset(r + sizeof(t), 0, sizeof(r) - sizeof(t));
	}
	size_t o = 0;
	o += (size_t)snprintf(out, n, "gws-");
	for (size_t i = 0; i < sizeof(r) && o + 2 < n; i++)
		o += (size_t)snprintf(out + o, n - o, "%02x", r[i]);
}

/* One input: 0, or -EIO after an error was printed. */
static int send_file(struct sender *s, const char *path, size_t max_line)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	if (fd < 0) {
		fprintf(stderr, "gradwatch send: %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	if (fd == STDIN_FILENO && isatty(fd))   /* `gradwatch send` typed alone: not a hang */
		fprintf(stderr, "gradwatch send: reading NDJSON from the terminal (Ctrl-D ends; "
		        "gradwatch send FILE sends a file)\n");
	struct gw_lines lines;
	gw_lines_init(&lines, max_line);
	char chunk[65536];
	ssize_t n;
	int rc = 0;
	for (;;) {
		/* a job piped in (`train.py | gradwatch send`) writes a line per
		 * step: what it wrote goes once the input pauses, not 10,000
		 * lines later */
		if (s->batch_lines) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			int pr = poll(&pfd, 1, FLUSH_IDLE_MS);
			if (pr == 0 && (rc = flush_batch(s)) != 0)
				break;
		}
		if ((n = read(fd, chunk, sizeof(chunk))) == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "gradwatch send: %s: %s\n", s->name, strerror(errno));
			rc = -EIO;
			break;
		}
		if ((rc = gw_lines_feed(&lines, chunk, (size_t)n, on_send_line, s)) != 0)
			break;
	}
	if (rc == 0)
		rc = gw_lines_finish(&lines, on_send_line, s);
	if (rc == 0)
		rc = flush_batch(s);
	if (rc == -ENOMEM)
		fprintf(stderr, "gradwatch send: out of memory\n");
	gw_lines_free(&lines);
	gw_buf_free(&s->batch);
	if (fd != STDIN_FILENO)
		close(fd);
	return rc < 0 ? -EIO : 0;
}

static int sniff_rec(void *data, const struct gw_rec *rec, uint64_t line)
{
	return 0;
}

static void sniff_err(void *data, uint64_t line, const struct gw_wire_err *e)
{
}

/* The log format of the file at path as replay would read it (gzip/zstd
 * too: *compressed is set), from its first MiB; NULL when none is
 * recognised.  For a file whose every line was rejected: a log in another
 * format, or compressed, is what convert is for. */
static const char *file_format(const char *path, const struct gw_alias *aliases,
                               bool *compressed)
{
	const struct gw_reader_opts ro = {.aliases = aliases, .run = "sniff"};
	const struct gw_reader_sink sink = {.on_rec = sniff_rec, .on_error = sniff_err};
	struct gw_reader *r = NULL;
	char err[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || gw_reader_new(&ro, &sink, &r, err, sizeof(err)) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char chunk[65536];
	ssize_t n;
	size_t total = 0;
	int rc = 0;
	while (!gw_reader_format(r) && rc == 0 && total < ((size_t)1 << 20) &&
	       (n = read(fd, chunk, sizeof(chunk))) > 0) {
		total += (size_t)n;
		rc = gw_reader_feed(r, chunk, (size_t)n);
	}
	if (!gw_reader_format(r) && rc == 0)
		gw_reader_finish(r);
	const struct gw_reader_format *f = gw_reader_format(r);
	const char *name = f ? f->name : NULL;   /* static strings */
	*compressed = gw_reader_compressed(r);
	gw_reader_free(r);
	close(fd);
	return name;
}

int gw_client_send(struct gw_cfg *cfg, int argc, char **argv)
{
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"run", required_argument, NULL, 'r'},
		{"batch", required_argument, NULL, 'b'},
		{"timeout", required_argument, NULL, 't'},
		{"retries", required_argument, NULL, 'R'},
		GW_CLI_OPT_HELP,
	};
	char base[256], url[1024];
	gw__client_default_url(cfg, base, sizeof(base));
	const char *run = NULL;
	unsigned long max_lines = 10000, retries = DEFAULT_RETRIES;
	struct gw__http_opts http = {.token = gw__client_token(), .timeout_ms = GW__CLIENT_TIMEOUT_MS};
	int ch;
	gw_cli_getopt_start();
	while ((ch = getopt_long(argc, argv, ":u:r:b:t:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'u': gw_strlcpy(base, optarg, sizeof(base)); break;
		case 'r': run = optarg; break;
		case 'b':
			if (gw__client_parse_count(optarg, 1000000, &max_lines) < 0 || !max_lines)
				return gw_cli_usage_error("gradwatch send", "--batch wants a number of lines from 1 to 1000000, not", optarg);
			break;
		case 't':
			if (gw__client_parse_seconds(optarg, &http.timeout_ms) < 0)
				return gw_cli_usage_error("gradwatch send", "--timeout wants seconds (more than 0, at most 86400), not", optarg);
			break;
		case 'R':
			if (gw__client_parse_count(optarg, 100, &retries) < 0)
				return gw_cli_usage_error("gradwatch send", "--retries wants a number from 0 to 100, not", optarg);
			break;
		case 'h': fputs(send_usage, stdout); return 0;
		default: return gw_cli_bad_option("gradwatch send", ch, argv);
		}
	}
	if (gw__client_check_url("gradwatch send", base))
		return GW_EXIT_USAGE;
	if (run) {
		char *enc = curl_easy_escape(NULL, run, 0);
		snprintf(url, sizeof(url), "%s/v1/ingest?run=%s", base, enc ? enc : "");
		curl_free(enc);
	} else {
		snprintf(url, sizeof(url), "%s/v1/ingest", base);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct sigaction sa = {.sa_handler = on_sigint}, old;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_IGN)   /* not a background job */
		sigaction(SIGINT, &sa, NULL);
	char key_prefix[64];
	make_key_prefix(key_prefix, sizeof(key_prefix));
	uint64_t batch_no = 0;
	int nfiles = argc - optind;
	char *stdin_name[] = {"-"};
	char **files = nfiles ? argv + optind : stdin_name;
	if (!nfiles)
		nfiles = 1;
	int rc = 0;
	uint64_t acc = 0, rej = 0;
	const char *failed = NULL;
	uint64_t failed_from = 0;
	for (int f = 0; f < nfiles && rc == 0; f++) {
		struct sender s = {.url = url, .http = &http, .retries = (unsigned)retries,
		                   .key_prefix = key_prefix, .batch_no = &batch_no,
		                   .max_lines = max_lines, .first_line = 1,
		                   .name = strcmp(files[f], "-") ? files[f] : "<stdin>"};
		atomic_store(&int_from, 1);
		atomic_store(&int_name, s.name);
		if (send_file(&s, files[f], cfg->max_line) < 0) {
			rc = 2;
			failed = s.name;
			failed_from = s.first_line;
		}
		const char *fmt = NULL;
		bool packed = false;
		if (!rc && !s.accepted && s.rejected && strcmp(files[f], "-") &&
		    (fmt = file_format(files[f], cfg->aliases, &packed)) && (packed || strcmp(fmt, "ndjson")))
			fprintf(stderr, "gradwatch send: %s is a%s %s%s log, not gradwatch NDJSON: "
			        "gradwatch convert %s | gradwatch send\n", files[f],
			        !packed && strchr("aeiou", fmt[0]) ? "n" : "", packed ? "compressed " : "",
			        fmt, files[f]);
		if (!rc && s.first_line == 1)   /* no line at all: "0 accepted" alone reads as a lost send */
			fprintf(stderr, "gradwatch send: %s is empty: nothing to send\n", s.name);
		acc += s.accepted;
		rej += s.rejected;
	}
	curl_global_cleanup();
	if (rc) {
		/* no "0 accepted" after an error: only what is known to be stored,
		 * and where to resume */
		if (acc || rej)
			fprintf(stderr, "gradwatch send: before the error %" PRIu64 " line(s) were accepted and "
			        "committed, %" PRIu64 " rejected\n", acc, rej);
		if (failed && failed_from > 1 && strcmp(failed, "<stdin>"))
			fprintf(stderr, "gradwatch send: %s from line %" PRIu64 " on is not known to be "
			        "committed; to resume: tail -n +%" PRIu64 " %s | gradwatch send\n", failed,
			        failed_from, failed_from, failed);
		else if (failed && failed_from > 1)
			fprintf(stderr, "gradwatch send: %s from line %" PRIu64 " on is not known to be committed\n",
			        failed, failed_from);
		return rc;
	}
	fprintf(stderr, "gradwatch send: %" PRIu64 " line(s) accepted and committed, %" PRIu64 " rejected\n",
	        acc, rej);
	return rej ? 1 : 0;
}
