/*
 * Fuzz target: the line framing of every stream transport (lib/lines.c):
 * Unix and TCP connections, followed and replayed files, HTTP bodies.
 * The input is three bytes of parameters and the stream:
 *
 *   byte 0   the line limit: 1..64 (byte < 192) or 64..4,096 in steps of 64
 *   byte 1   the callback stops gw_lines_feed after every Nth line (0:
 *            never); the harness then feeds the rest (l->pend) again, as
 *            the transports do after a pause
 *   byte 2   seed of the chunk sizes the stream is cut into (1..64 bytes,
 *            or the whole rest), the way reads arrive from a socket
 *
 * What must hold, against a plain model (split the whole stream at '\n';
 * a piece longer than the limit is one GW_LINE_TOO_LONG with len = limit;
 * a last piece without '\n' is GW_LINE_TRUNCATED at gw_lines_finish unless
 * it is only spaces, tabs and CRs, or over-long, then reported as such):
 *
 *   - the same lines, bytes (NUL, CR and all), statuses and numbers
 *     (consecutive from 1; a blank last piece takes a number silently),
 *     however the stream is cut: in the fuzzer's chunks and, for inputs
 *     up to 512 bytes, in two pieces at every offset;
 *   - a stopped feed hands back exactly the unconsumed rest of its chunk;
 *   - nothing is held after gw_lines_finish (the next stream starts clean).
 *
 * Memory and undefined behaviour are the sanitizers'.  Seeds:
 * fuzz/corpus/lines/.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ALL_SPLITS_MAX 512

struct ev {
	const char *p;      /* the line in the model's input, NULL when too long */
	size_t len;
	uint64_t lineno;
	enum gw_line_status st;
};

struct model {
	struct ev *ev;
	size_t n;
};

static bool blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

static void model_build(struct model *m, const char *s, size_t n, size_t max)
{
	m->ev = malloc((n + 1) * sizeof(*m->ev));
	FUZZ_CHECK(m->ev);
	m->n = 0;
	uint64_t lineno = 0;
	size_t i = 0;
	while (i < n) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (s + i)) : n - i;
		lineno++;
		if (len > max)
			m->ev[m->n++] = (struct ev){NULL, max, lineno, GW_LINE_TOO_LONG};
		else if (nl)
			m->ev[m->n++] = (struct ev){s + i, len, lineno, GW_LINE_OK};
		else if (!blank(s + i, len))
			m->ev[m->n++] = (struct ev){s + i, len, lineno, GW_LINE_TRUNCATED};
		i += len + (nl != NULL);
	}
}

/* What the splitter reports, checked against the model as it comes. */
struct run {
	const struct model *m;
	size_t next;
	unsigned stop_every;
};

static int on_line(void *data, const char *line, size_t len, uint64_t lineno,
                   enum gw_line_status st)
{
	struct run *r = data;
	FUZZ_CHECK(r->next < r->m->n);
	const struct ev *e = &r->m->ev[r->next++];
	FUZZ_CHECK(st == e->st && lineno == e->lineno && len == e->len);
	if (st == GW_LINE_TOO_LONG)
		FUZZ_CHECK(line == NULL);
	else
		FUZZ_CHECK(line && memcmp(line, e->p, len) == 0);
	return r->stop_every && r->next % r->stop_every == 0 ? 7 : 0;
}

/* Feed one chunk, again after every stop, until it is consumed. */
static void feed(struct gw_lines *l, struct run *r, const char *p, size_t n)
{
	for (;;) {
		int rc = gw_lines_feed(l, p, n, on_line, r);
		if (rc == 0)
			return;
		FUZZ_CHECK(rc == 7);
		FUZZ_CHECK(l->pend_len <= n && (l->pend_len == 0 || l->pend == p + n - l->pend_len));
		p += n - l->pend_len;
		n = l->pend_len;
	}
}

static void finish(struct gw_lines *l, struct run *r)
{
	int rc = gw_lines_finish(l, on_line, r);
	FUZZ_CHECK(rc == 0 || rc == 7);
	FUZZ_CHECK(r->next == r->m->n);
	FUZZ_CHECK(l->len == 0 && !l->discarding);
}

/* Chunk sizes from a small generator seeded by the input. */
static size_t next_chunk(uint32_t *state, size_t left)
{
	*state = *state * 1103515245u + 12345u;
	unsigned k = (*state >> 16) % 72;
	size_t c = k < 64 ? k + 1 : left;
	return c < left ? c : left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	size_t max = data[0] < 192 ? (size_t)(1 + data[0] % 64) : (size_t)(data[0] - 191) * 64;
	unsigned stop_every = data[1] % 8;
	uint32_t seed = data[2];
	size_t n = size - 3;
	/* a copy of its own: a read past the stream is the sanitizers' to see */
	char *s = malloc(n ? n : 1);
	FUZZ_CHECK(s);
	memcpy(s, data + 3, n);
	struct model m;
	model_build(&m, s, n, max);

	/* in the fuzzer's chunks, one splitter over two streams: the second
	 * starts clean after the first's finish */
	struct gw_lines l;
	gw_lines_init(&l, max);
	for (int pass = 0; pass < 2; pass++) {
		struct run r = {&m, 0, stop_every};
		l.lineno = 0;
		for (size_t off = 0; off < n;) {
			size_t c = next_chunk(&seed, n - off);
			feed(&l, &r, s + off, c);
			off += c;
		}
		finish(&l, &r);
	}
	gw_lines_free(&l);

	/* in two pieces at every offset */
	if (n <= ALL_SPLITS_MAX) {
		for (size_t k = 0; k <= n; k++) {
			struct run r = {&m, 0, stop_every};
			gw_lines_init(&l, max);
			feed(&l, &r, s, k);
			feed(&l, &r, s + k, n - k);
			finish(&l, &r);
			gw_lines_free(&l);
		}
	}
	free(m.ev);
	free(s);
	return 0;
}
