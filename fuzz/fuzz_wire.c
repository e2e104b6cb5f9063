/*
 * Fuzz target: the NDJSON wire parser (lib/wire.c).  Each input is parsed
 * line by line (split at '\n', as the transports do) and whole as one
 * line, each time without a default run and with one.  What must hold
 * (a broken invariant traps, so libFuzzer keeps the input):
 *
 *   - gw_wire_parse returns 0, -EINVAL, -ENODATA or -ENOMEM;
 *   - a rejected line's reason is a known one, its message and field are
 *     NUL-terminated and valid UTF-8 (they go into JSON answers, and
 *     jansson refuses anything else: the error would be dropped);
 *   - a record's run passes gw_wire_check_run, its step is in
 *     0..GW_WIRE_STEP_MAX, its ts is NaN or finite and >= 0;
 *   - round trip: gw_wire_append_rec writes the record as one line, which
 *     parses (with no default run) into the same record: run, step, ts,
 *     rank, roles, extras in order, event name and attributes.
 *
 * Memory and undefined behaviour are the sanitizers' to catch.  Seeds:
 * fuzz/corpus/wire/.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"

#include "wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gw_alias *aliases;
static struct gw_wire *first, *again;   /* two parsers: a record lives in its parser */
static struct gw_buf out;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	aliases = gw_alias_new();
	/* one configured alias too, as a config file would add */
	if (!aliases || gw_alias_add(aliases, GW_ROLE_LOSS, "my loss") < 0)
		return -1;
	first = gw_wire_new(aliases);
	again = gw_wire_new(aliases);
	return first && again ? 0 : -1;
}

/* A C string that jansson takes as a JSON string (valid UTF-8). */
static bool json_ok(const char *s, size_t cap)
{
	FUZZ_CHECK(memchr(s, '\0', cap) != NULL);
	json_t *j = json_string(s);
	json_decref(j);
	return j != NULL;
}

static bool same_double(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return a == b && signbit(a) == signbit(b);
}

static void check_same(const struct gw_rec *a, const struct gw_rec *b)
{
	FUZZ_CHECK(a->run_len == b->run_len && memcmp(a->run, b->run, a->run_len) == 0);
	FUZZ_CHECK(a->step == b->step);
	FUZZ_CHECK(same_double(a->ts, b->ts));
	FUZZ_CHECK(a->has_rank == b->has_rank && (!a->has_rank || a->rank == b->rank));
	FUZZ_CHECK((a->event == NULL) == (b->event == NULL));
	if (a->event) {
		FUZZ_CHECK(strcmp(a->event, b->event) == 0);
		FUZZ_CHECK((a->attrs && json_object_size(a->attrs)) == (b->attrs && json_object_size(b->attrs)));
		if (a->attrs && json_object_size(a->attrs))
			FUZZ_CHECK(json_equal(a->attrs, b->attrs));
		return;
	}
	FUZZ_CHECK(a->present == b->present);
	for (int r = 0; r < GW_NROLES; r++)
		if (gw_rec_has(a, (enum gw_role)r))
			FUZZ_CHECK(same_double(a->v[r], b->v[r]));
	FUZZ_CHECK(a->fields == b->fields);
	for (int f = 0; f < GW_NFIELDS; f++)
		if (gw_rec_has_field(a, (enum gw_field)f))
			FUZZ_CHECK(same_double(a->f[f], b->f[f]));
	FUZZ_CHECK(a->n_extra == b->n_extra);
	for (size_t i = 0; i < a->n_extra; i++) {
		FUZZ_CHECK(strcmp(a->extra[i].name, b->extra[i].name) == 0);
		FUZZ_CHECK(same_double(a->extra[i].value, b->extra[i].value));
	}
}

static void one_line(const char *p, size_t n, const char *default_run)
{
	struct gw_rec rec;
	struct gw_wire_err err;
	memset(&err, 0x55, sizeof(err));   /* the parser must write what it reports */
	int rc = gw_wire_parse(first, p, n, default_run, &rec, &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENODATA || rc == -ENOMEM);
	if (rc == -EINVAL) {
		FUZZ_CHECK((unsigned)err.reason < GW_REJ_NREASONS);
		FUZZ_CHECK(gw_wire_reason_name(err.reason) != NULL);
		FUZZ_CHECK(json_ok(err.msg, sizeof(err.msg)));
		FUZZ_CHECK(json_ok(err.field, sizeof(err.field)));
		FUZZ_CHECK(err.column <= n + 1);
		return;
	}
	if (rc != 0)
		return;
	FUZZ_CHECK(gw_wire_check_run(rec.run, rec.run_len, NULL, 0) == 0);
	FUZZ_CHECK(!rec.has_rank || rec.rank <= GW_WIRE_RANK_MAX);
	FUZZ_CHECK(strlen(rec.run) == rec.run_len);
	FUZZ_CHECK(rec.step >= 0 && rec.step <= GW_WIRE_STEP_MAX);
	FUZZ_CHECK(isnan(rec.ts) || (isfinite(rec.ts) && rec.ts >= 0));
	FUZZ_CHECK(rec.event == NULL || (rec.present == 0 && rec.fields == 0 && rec.n_extra == 0 &&
	                                  rec.attrs));

	gw_buf_reset(&out);
	if (gw_wire_append_rec(&out, &rec) < 0)
		return;
	FUZZ_CHECK(out.len > 0 && out.p[out.len - 1] == '\n');
	FUZZ_CHECK(memchr(out.p, '\n', out.len) == out.p + out.len - 1);
	struct gw_rec back;
	rc = gw_wire_parse(again, out.p, out.len - 1, NULL, &back, &err);
	if (rc == -ENOMEM)
		return;
	FUZZ_CHECK(rc == 0);
	check_same(&rec, &back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	for (int pass = 0; pass < 2; pass++) {
		const char *def = pass ? "fuzz-default" : NULL;
		for (size_t i = 0; i < size;) {
			const char *nl = memchr(s + i, '\n', size - i);
			size_t n = nl ? (size_t)(nl - (s + i)) : size - i;
			one_line(s + i, n, def);
			i += n + 1;
		}
		one_line(s, size, def);
	}
	return 0;
}
