/*
 * Unit tests of the record path (core/ingest*.c) on real parts (corefix.h:
 * a loop, a store on a SQLite file with its writer thread, the outbox):
 * lines fed in pieces are parsed, counted by transport and reason, queued
 * and committed (the rows are in the file); a last line without its
 * newline is a line, or "truncated" on a stream; a line over the limit is
 * refused; a line the daemon has no memory for is counted as
 * out_of_memory, not malformed_json; the barrier waits for every write
 * queued, not only lines; back-pressure parks a source and resumes it once
 * the queue drained; a run is known, and forgotten.
 */
#include "gwcheck.h"
#include "corefix.h"

#include "runs.h"

#include <errno.h>
#include <jansson.h>

struct src_ctx {
	struct gw_ingest_src src;
	int rejects;
	enum gw_wire_reason last_reason;
	char last_msg[256];
};

static void on_reject(struct gw_ingest_src *s, uint64_t lineno, const struct gw_wire_err *e)
{
	struct src_ctx *c = s->data;
	c->rejects++;
	c->last_reason = e->reason;
	gw_strlcpy(c->last_msg, e->msg, sizeof(c->last_msg));
}

static void src_open(struct fix *f, struct src_ctx *c, enum gw_transport t)
{
	memset(c, 0, sizeof(*c));
	gw_ingest_src_init(&c->src, f->ingest, t, 0);
	c->src.on_reject = on_reject;
	c->src.data = c;
}

static void feed(struct src_ctx *c, const char *text)
{
	ck_assert_int_eq(gw_ingest_src_feed(&c->src, text, strlen(text)), 0);
}

struct count_ctx {
	const char *metric, *v0, *v1;
	uint64_t n;
	bool found;
};

static void count_sample(void *data, const struct gw_counter_sample *s)
{
	struct count_ctx *c = data;
	if (strcmp(s->metric, c->metric) || (c->v0 && (!s->value[0] || strcmp(s->value[0], c->v0))) ||
	    (c->v1 && (!s->value[1] || strcmp(s->value[1], c->v1))))
		return;
	c->n = s->n;
	c->found = true;
}

/* A counter as /metrics renders it. */
static uint64_t counter(struct fix *f, const char *metric, const char *v0, const char *v1)
{
	struct count_ctx c = {metric, v0, v1, 0, false};
	gw_ingest_counters_foreach(f->ingest, count_sample, &c);
	ck_assert_msg(c.found, "no sample %s{%s,%s}", metric, v0 ? v0 : "", v1 ? v1 : "");
	return c.n;
}

START_TEST(lines_are_counted_queued_and_committed)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	fix_start(&f);
	struct src_ctx c;
	src_open(&f, &c, GW_TR_TCP);
	/* in pieces that cut lines anywhere */
	const char *text = "{\"run\":\"a\",\"step\":1,\"loss\":2.5}\n{\"run\":\"a\",\"step\":2,\"lo"
	                   "ss\":2.4}\n{\"run\":\"a\", nope}\n{\"run\":\"a\",\"step\":3,\"loss\":2.3}\n";
	for (size_t i = 0, n = strlen(text); i < n; i += 7) {
		char piece[8] = {0};
		memcpy(piece, text + i, n - i < 7 ? n - i : 7);
		feed(&c, piece);
	}
	ck_assert_uint_eq(c.src.accepted, 3);
	ck_assert_uint_eq(c.src.rejected, 1);
	ck_assert_int_eq(c.last_reason, GW_REJ_SYNTAX);
	ck_assert_str_eq(c.src.last_run, "a");
	ck_assert_uint_gt(c.src.last_seq, 0);
	ck_assert_uint_eq(counter(&f, "gradwatch_lines_ingested_total", "tcp", NULL), 3);
	ck_assert_uint_eq(counter(&f, "gradwatch_lines_rejected_total", "tcp", "malformed_json"), 1);
	ck_assert_uint_eq(counter(&f, "gradwatch_lines_ingested_total", "udp", NULL), 0);
	fix_commit(&f, c.src.last_seq);
	ck_assert_int_eq(fix_scalar(&f, "SELECT count(*) FROM records"), 3);
	ck_assert_int_eq(fix_scalar(&f, "SELECT max(step) FROM records"), 3);
	gw_ingest_src_deinit(&c.src);
	fix_end(&f);
}
END_TEST

START_TEST(a_last_line_without_its_newline)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	fix_start(&f);
	struct src_ctx c;
	/* a whole object at the end: a line */
	src_open(&f, &c, GW_TR_UNIX);
	feed(&c, "{\"run\":\"b\",\"step\":1,\"loss\":1}");
	ck_assert_uint_eq(c.src.accepted, 0);
	ck_assert_int_eq(gw_ingest_src_finish(&c.src), 0);
	ck_assert_uint_eq(c.src.accepted, 1);
	gw_ingest_src_deinit(&c.src);
	/* cut inside an object: truncated on a stream ... */
	src_open(&f, &c, GW_TR_UNIX);
	feed(&c, "{\"run\":\"b\",\"step\":2,\"lo");
	gw_ingest_src_finish(&c.src);
	ck_assert_int_eq(c.rejects, 1);
	ck_assert_int_eq(c.last_reason, GW_REJ_TRUNCATED);
	ck_assert_uint_eq(counter(&f, "gradwatch_lines_rejected_total", "unix", "truncated"), 1);
	ck_assert_uint_eq(counter(&f, "gradwatch_lines_rejected_total", "unix", "malformed_json"), 0);
	gw_ingest_src_deinit(&c.src);
	/* ... and malformed where the end of the input ends a line (a body) */
	src_open(&f, &c, GW_TR_HTTP);
	c.src.eof_ends_line = true;
	feed(&c, "{\"run\":\"b\",\"step\":2,\"lo");
	gw_ingest_src_finish(&c.src);
	ck_assert_int_eq(c.last_reason, GW_REJ_SYNTAX);
	gw_ingest_src_deinit(&c.src);
	fix_end(&f);
}
END_TEST

START_TEST(a_line_over_the_limit)
{
	struct fix f;
	fix_cfg(&f);
	f.cfg.max_line = 64;
	fix_store(&f);
	fix_start(&f);
	struct src_ctx c;
	src_open(&f, &c, GW_TR_TCP);
	feed(&c, "{\"run\":\"c\",\"step\":1,\"loss\":1,\"extra_metric_with_a_long_name\":12345}\n"
	         "{\"run\":\"c\",\"step\":2,\"loss\":1}\n");
	ck_assert_uint_eq(c.src.accepted, 1);
	ck_assert_int_eq(c.last_reason, GW_REJ_TOO_LONG);
	ck_assert_ptr_nonnull(strstr(c.last_msg, "limits.max_line_bytes"));
	gw_ingest_src_deinit(&c.src);
	fix_end(&f);
}
END_TEST

/* jansson's allocator, failing while asked to. */
static bool fail_alloc;

static void *maybe_malloc(size_t n)
{
	return fail_alloc ? NULL : malloc(n);
}

START_TEST(out_of_memory_is_its_own_reason)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	fix_start(&f);
	struct src_ctx c;
	src_open(&f, &c, GW_TR_TCP);
	/* an event's attributes are JSON values: with no memory for them the
	 * line cannot be parsed, and nothing is wrong with the line */
	json_set_alloc_funcs(maybe_malloc, free);
	fail_alloc = true;
	feed(&c, "{\"run\":\"d\",\"step\":1,\"event\":\"checkpoint_saved\",\"optimizer\":\"AdamW\"}\n");
	fail_alloc = false;
	json_set_alloc_funcs(malloc, free);
	ck_assert_int_eq(c.rejects, 1);
	ck_assert_int_eq(c.last_reason, GW_REJ_NO_MEMORY);
	ck_assert_str_eq(gw_wire_reason_name(c.last_reason), "out_of_memory");
	ck_assert_uint_eq(counter(&f, "gradwatch_lines_rejected_total", "tcp", "out_of_memory"), 1);
	ck_assert_uint_eq(counter(&f, "gradwatch_lines_rejected_total", "tcp", "malformed_json"), 0);
	/* with memory again, the same line is taken */
	feed(&c, "{\"run\":\"d\",\"step\":1,\"event\":\"checkpoint_saved\",\"optimizer\":\"AdamW\"}\n");
	ck_assert_uint_eq(c.src.accepted, 1);
	gw_ingest_src_deinit(&c.src);
	fix_end(&f);
}
END_TEST

START_TEST(the_barrier_waits_for_every_write_queued)
{
	struct fix f;
	fix_cfg(&f);
	f.cfg.commit_interval_ms = 60000;   /* nothing commits unless asked */
	fix_store(&f);
	fix_start(&f);
	struct src_ctx c;
	src_open(&f, &c, GW_TR_TCP);
	feed(&c, fix_lines("e", 1, 5));
	/* a write after the lines (an acknowledgement's, a deletion's) */
	uint64_t meta = gw_store_put_meta(f.store, "test:key", "v");
	ck_assert_uint_gt(meta, c.src.last_seq);
	struct fix_waiter fw = {.w = {.fn = fix_waited}, .store = f.store};
	gw_ingest_barrier(f.ingest, &fw.w);
	ck_assert_uint_eq(fw.w.seq, meta);
	fix_run_until(&f, &fw.done);
	ck_assert_uint_ge(fw.committed, meta);   /* it ran once that write was on disk */
	ck_assert_int_eq(fix_scalar(&f, "SELECT count(*) FROM meta WHERE key = 'test:key'"), 1);
	gw_ingest_src_deinit(&c.src);
	fix_end(&f);
}
END_TEST

struct parked {
	struct gw_paused p;
	bool resumed;
};

static void on_resume(struct gw_paused *p)
{
	((struct parked *)p)->resumed = true;
}

START_TEST(back_pressure_parks_and_resumes_a_source)
{
	struct fix f;
	fix_cfg(&f);
	f.cfg.max_pending_bytes = 16 * 1024;
	f.cfg.commit_interval_ms = 60000;
	fix_store(&f);
	fix_start(&f);
	struct src_ctx c;
	src_open(&f, &c, GW_TR_TCP);
	for (int from = 1; !gw_ingest_congested(f.ingest) && from < 20000; from += 50)
		feed(&c, fix_lines("g", from, from + 49));
	ck_assert(gw_ingest_congested(f.ingest));   /* over half the queue: streams wait */
	struct parked pk = {.p = {.resume = on_resume}};
	gw_ingest_pause(f.ingest, &pk.p);
	ck_assert(!pk.resumed);
	fix_commit(&f, c.src.last_seq);   /* the commit drains the queue */
	fix_run_until(&f, &pk.resumed);
	ck_assert(!gw_ingest_congested(f.ingest));
	gw_ingest_src_deinit(&c.src);
	fix_end(&f);
}
END_TEST

START_TEST(a_run_is_known_then_forgotten)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	fix_start(&f);
	struct src_ctx c;
	src_open(&f, &c, GW_TR_TCP);
	ck_assert(!gw_ingest_run_known(f.ingest, "h"));
	double before = gw_wall_now();
	feed(&c, fix_lines("h", 1, 3));
	ck_assert(gw_ingest_run_known(f.ingest, "h"));
	ck_assert(gw_ingest_run_last_seen(f.ingest, "h") >= before);
	struct gw_runs_stats rs;
	gw_ingest_runs_stats(f.ingest, &rs);
	ck_assert_uint_eq(rs.active, 1);
	gw_ingest_forget_run(f.ingest, "h");
	ck_assert(!gw_ingest_run_known(f.ingest, "h"));
	gw_ingest_runs_stats(f.ingest, &rs);
	ck_assert_uint_eq(rs.active, 0);
	gw_ingest_src_deinit(&c.src);
	fix_end(&f);
}
END_TEST

int main(void)
{
	gw_log_init(GW_LOG_ERR, false);
	Suite *s = suite_create("ingest");
	TCase *tc = tcase_create("ingest");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, lines_are_counted_queued_and_committed);
	tcase_add_test(tc, a_last_line_without_its_newline);
	tcase_add_test(tc, a_line_over_the_limit);
	tcase_add_test(tc, out_of_memory_is_its_own_reason);
	tcase_add_test(tc, the_barrier_waits_for_every_write_queued);
	tcase_add_test(tc, back_pressure_parks_and_resumes_a_source);
	tcase_add_test(tc, a_run_is_known_then_forgotten);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
