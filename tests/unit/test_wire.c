/*
 * Unit tests of the NDJSON wire parser, the alias table and the writer
 * (lib/wire.c, alias.c, wire_write.c): records, events, aliases, Python's
 * NaN/Infinity tokens, the precise error (reason, column, field) for each
 * kind of bad line, and the writer (gw_wire_append_rec) giving back what
 * the parser read.
 */
#include "gwcheck.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "util.h"
#include "wire.h"

static struct gw_alias *al;
static struct gw_wire *w;

static void setup(void)
{
	al = gw_alias_new();
	w = gw_wire_new(al);
}

static void teardown(void)
{
	gw_wire_free(w);
	gw_alias_free(al);
}

static int parse(const char *line, struct gw_rec *r, struct gw_wire_err *e)
{
	return gw_wire_parse(w, line, strlen(line), NULL, r, e);
}

START_TEST(record_basic)
{
	struct gw_rec r;
	struct gw_wire_err e;
	ck_assert_int_eq(parse("{\"run\":\"run-1\",\"step\":1234,\"ts\":1754012345.678,\"loss\":1.8731,"
	                       "\"grad_norm\":0.61234,\"lr\":0.002,\"throughput\":1093.4,\"epoch\":0.5}",
	                       &r, &e), 0);
	ck_assert_str_eq(r.run, "run-1");
	ck_assert_int_eq(r.step, 1234);
	ck_assert_double_eq(r.ts, 1754012345.678);
	ck_assert(gw_rec_has(&r, GW_ROLE_LOSS) && gw_rec_has(&r, GW_ROLE_GRAD_NORM));
	ck_assert_double_eq(r.v[GW_ROLE_LOSS], 1.8731);
	ck_assert_double_eq(r.v[GW_ROLE_GRAD_NORM], 0.61234);
	ck_assert_double_eq(r.v[GW_ROLE_LR], 0.002);
	ck_assert_double_eq(r.v[GW_ROLE_THROUGHPUT], 1093.4);
	ck_assert_ptr_null(r.event);
	ck_assert_uint_eq(r.n_extra, 1);
	ck_assert_str_eq(r.extra[0].name, "epoch");
	ck_assert_double_eq(r.extra[0].value, 0.5);
}
END_TEST

START_TEST(numbers_exact)
{
	/* the fast path and strtod must agree with the correctly rounded value */
	static const char *const nums[] = {
		"0", "-0.0", "1e-05", "2.5e-308", "1.7976931348623157e308", "0.1",
		"123456789012345678901234567890", "3.141592653589793238462643383279",
		"1E+2", "9007199254740993", "4.9e-324", "0.000001234567890123456789",
	};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		char line[256];
		snprintf(line, sizeof(line), "{\"run\":\"r\",\"step\":1,\"loss\":%s}", nums[i]);
		struct gw_rec r;
		ck_assert_int_eq(parse(line, &r, NULL), 0);
		ck_assert_msg(r.v[GW_ROLE_LOSS] == strtod(nums[i], NULL), "%s", nums[i]);
	}
}
END_TEST

START_TEST(python_nonfinite)
{
	struct gw_rec r;
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":2,\"loss\":NaN,\"grad_norm\":Infinity,"
	                       "\"lr\":-Infinity}", &r, NULL), 0);
	ck_assert(isnan(r.v[GW_ROLE_LOSS]));
	ck_assert(isinf(r.v[GW_ROLE_GRAD_NORM]) && r.v[GW_ROLE_GRAD_NORM] > 0);
	ck_assert(isinf(r.v[GW_ROLE_LR]) && r.v[GW_ROLE_LR] < 0);
	struct gw_wire_err e;
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":2,\"loss\":nan}", &r, &e), -EINVAL);
	ck_assert_int_eq(e.reason, GW_REJ_SYNTAX);
	ck_assert_str_eq(e.field, "loss");
}
END_TEST

START_TEST(aliases)
{
	struct gw_rec r;
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":7,\"lm loss\":2.5,\"grad norm\":0.7,"
	                       "\"learning rate\":3e-4,\"tokens_per_s\":1000}", &r, NULL), 0);
	ck_assert_double_eq(r.v[GW_ROLE_LOSS], 2.5);
	ck_assert_double_eq(r.v[GW_ROLE_GRAD_NORM], 0.7);
	ck_assert_double_eq(r.v[GW_ROLE_LR], 3e-4);
	ck_assert_double_eq(r.v[GW_ROLE_THROUGHPUT], 1000);
	/* the canonical name wins over an alias in the same line, whatever the order */
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":7,\"train/loss\":9,\"loss\":2}", &r, NULL), 0);
	ck_assert_double_eq(r.v[GW_ROLE_LOSS], 2);
	/* configured alias */
	ck_assert_int_eq(gw_alias_add(al, GW_ROLE_LOSS, "my_loss"), 0);
	ck_assert_int_eq(gw_alias_add(al, GW_ROLE_LR, "my_loss"), -EEXIST);
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":8,\"my_loss\":4}", &r, NULL), 0);
	ck_assert_double_eq(r.v[GW_ROLE_LOSS], 4);
	/* ts aliases */
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":8,\"_timestamp\":1680047864.5}", &r, NULL), 0);
	ck_assert_double_eq(r.ts, 1680047864.5);
}
END_TEST

/* The fp16 fields: aliases, the canonical name first, booleans as counts,
 * other non-numbers no value and no error, written back under their
 * canonical names, and an event's attribute stays an attribute. */
START_TEST(fp16_fields)
{
	struct gw_rec r;
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":7,\"lm loss\":2.5,\"loss scale\":16384.0,"
	                       "\"number of skipped iterations\":1,\"number of nan iterations\":0}",
	                       &r, NULL), 0);
	ck_assert_uint_eq(r.present, 1u << GW_ROLE_LOSS);
	ck_assert_uint_eq(r.fields, 7u);
	ck_assert_double_eq(r.f[GW_FIELD_LOSS_SCALE], 16384);
	ck_assert_double_eq(r.f[GW_FIELD_SKIPPED], 1);
	ck_assert_double_eq(r.f[GW_FIELD_NAN_ITERATIONS], 0);
	ck_assert_uint_eq(r.n_extra, 0);
	/* the realworld normaliser's names; the canonical one wins */
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":8,\"skipped_iterations\":3,\"skipped\":2,"
	                       "\"loss_scale\":NaN}", &r, NULL), 0);
	ck_assert_uint_eq(r.present, 0);
	ck_assert_double_eq(r.f[GW_FIELD_SKIPPED], 2);
	ck_assert(isnan(r.f[GW_FIELD_LOSS_SCALE]));
	/* booleans count for the two counts; a string is no value, no error */
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":9,\"loss\":1,\"skipped\":true,"
	                       "\"nan_iterations\":false,\"loss_scale\":\"dynamic\"}", &r, NULL), 0);
	ck_assert_uint_eq(r.fields, 1u << GW_FIELD_SKIPPED | 1u << GW_FIELD_NAN_ITERATIONS);
	ck_assert_double_eq(r.f[GW_FIELD_SKIPPED], 1);
	ck_assert_double_eq(r.f[GW_FIELD_NAN_ITERATIONS], 0);
	ck_assert_int_eq(gw_role_parse("loss_scale"), GW_FIELD_ROLE(GW_FIELD_LOSS_SCALE));
	ck_assert_str_eq(gw_field_name(GW_FIELD_NAN_ITERATIONS), "nan_iterations");
	/* written back under the canonical names, and read back the same */
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":10,\"loss\":1.5,\"loss-scale\":65536,"
	                       "\"number_of_skipped_iterations\":4,\"x\":1}", &r, NULL), 0);
	struct gw_buf b = {0};
	ck_assert_int_eq(gw_wire_append_rec(&b, &r), 0);
	ck_assert_str_eq(b.p, "{\"run\":\"m\",\"step\":10,\"loss\":1.5,\"loss_scale\":65536,"
	                      "\"skipped\":4,\"x\":1}\n");
	gw_buf_free(&b);
	/* in an event, an attribute like any other */
	ck_assert_int_eq(parse("{\"run\":\"m\",\"step\":11,\"event\":\"overflow\",\"loss_scale\":512}",
	                       &r, NULL), 0);
	ck_assert_uint_eq(r.fields, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(r.attrs, "loss_scale")), 512);
}
END_TEST

START_TEST(event_attrs)
{
	struct gw_rec r;
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":500,\"ts\":1.5,\"event\":\"checkpoint_saved\","
	                       "\"optimizer\":\"AdamW\",\"optimizer_state_keys\":[\"exp_avg\",\"step\"],"
	                       "\"hparams\":{\"lr\":0.001,\"betas\":[0.9,0.95],\"eps\":1e-08},"
	                       "\"x\":NaN,\"n\":null}", &r, NULL), 0);
	ck_assert_str_eq(r.event, "checkpoint_saved");
	ck_assert_int_eq(r.step, 500);
	ck_assert_ptr_null(json_object_get(r.attrs, "run"));
	ck_assert_ptr_null(json_object_get(r.attrs, "ts"));
	ck_assert_str_eq(json_string_value(json_object_get(r.attrs, "optimizer")), "AdamW");
	json_t *hp = json_object_get(r.attrs, "hparams");
	ck_assert_double_eq(json_real_value(json_array_get(json_object_get(hp, "betas"), 1)), 0.95);
	ck_assert_str_eq(json_string_value(json_object_get(r.attrs, "x")), "NaN");
	ck_assert(json_is_null(json_object_get(r.attrs, "n")));
	ck_assert_int_eq(json_array_size(json_object_get(r.attrs, "optimizer_state_keys")), 2);
}
END_TEST

START_TEST(strings_utf8)
{
	struct gw_rec r;
	struct gw_wire_err e;
	ck_assert_int_eq(parse("{\"run\":\"caf\\u00e9-\xf0\x9f\x9a\x80-\\ud83d\\ude80\",\"step\":1}", &r, NULL), 0);
	ck_assert_str_eq(r.run, "caf\xc3\xa9-\xf0\x9f\x9a\x80-\xf0\x9f\x9a\x80");
	ck_assert_int_eq(parse("{\"run\":\"bad\xff\",\"step\":1}", &r, &e), -EINVAL);
	ck_assert_int_eq(e.reason, GW_REJ_UTF8);
	ck_assert_uint_eq(e.column, 12);
	ck_assert_int_eq(parse("{\"run\":\"\xc0\xaf\",\"step\":1}", &r, &e), -EINVAL); /* overlong */
	ck_assert_int_eq(e.reason, GW_REJ_UTF8);
	ck_assert_int_eq(parse("{\"run\":\"\\ud83d\",\"step\":1}", &r, &e), -EINVAL);
	ck_assert_int_eq(e.reason, GW_REJ_UTF8);
	ck_assert_int_eq(parse("{\"run\":\"a\\u0000b\",\"step\":1}", &r, &e), -EINVAL);
	ck_assert_int_eq(parse("{\"run\":\"a\tb\",\"step\":1}", &r, &e), -EINVAL);
	ck_assert_int_eq(e.reason, GW_REJ_SYNTAX);
}
END_TEST

struct bad_case {
	const char *line;
	enum gw_wire_reason reason;
	const char *field;
	size_t column;
};

START_TEST(bad_lines)
{
	static const struct bad_case cases[] = {
		{"{\"run\":\"r\",\"step\":1,\"loss\":1.5", GW_REJ_SYNTAX, "loss", 30},
		{"{\"run\":\"r\",\"step\":1,,}", GW_REJ_SYNTAX, "", 21},
		{"[1,2]", GW_REJ_NOT_OBJECT, "", 1},
		{"{\"step\":1,\"loss\":1}", GW_REJ_NO_RUN, "", 0},
		{"{\"run\":\"r\",\"loss\":1}", GW_REJ_NO_STEP, "", 0},
		{"{\"run\":\"r\",\"step\":-3}", GW_REJ_BAD_STEP, "step", 19},
		{"{\"run\":\"r\",\"step\":1.5}", GW_REJ_BAD_STEP, "step", 19},
		{"{\"run\":\"r\",\"step\":1e300}", GW_REJ_BAD_STEP, "step", 19},
		{"{\"run\":\"r\",\"step\":\"7\"}", GW_REJ_BAD_STEP, "step", 19},
		{"{\"run\":\"r\",\"step\":NaN}", GW_REJ_BAD_STEP, "step", 19},
		{"{\"run\":\"r\",\"step\":1,\"loss\":\"1.2\"}", GW_REJ_BAD_VALUE, "loss", 28},
		{"{\"run\":\"r\",\"step\":1,\"grad_norm\":true}", GW_REJ_BAD_VALUE, "grad_norm", 33},
		{"{\"run\":5,\"step\":1}", GW_REJ_BAD_RUN, "run", 8},
		{"{\"run\":\"\",\"step\":1}", GW_REJ_BAD_RUN, "run", 8},
		{"{\"run\":\"r\",\"step\":1,\"ts\":-5}", GW_REJ_BAD_TS, "ts", 26},
		{"{\"run\":\"r\",\"step\":1,\"loss\":1,\"loss\":2}", GW_REJ_DUP_KEY, "loss", 30},
		{"{\"run\":\"r\",\"step\":1,\"event\":\"\"}", GW_REJ_BAD_EVENT, "event", 29},
		{"{\"run\":\"r\",\"step\":1} trailing", GW_REJ_SYNTAX, "", 22},
		{"{\"run\":\"r\",\"step\":01}", GW_REJ_SYNTAX, "", 0},
		{"{\"run\":\"r\",\"step\":1,\"rank\":-1}", GW_REJ_BAD_RANK, "rank", 28},
		{"{\"run\":\"r\",\"step\":1,\"rank\":1.5}", GW_REJ_BAD_RANK, "rank", 28},
		{"{\"run\":\"r\",\"step\":1,\"rank\":\"3\"}", GW_REJ_BAD_RANK, "rank", 28},
		{"{\"run\":\"r\",\"step\":1,\"rank\":1048576}", GW_REJ_BAD_RANK, "rank", 28},
		{"{\"run\":\"r\",\"step\":1,\"rank\":NaN}", GW_REJ_BAD_RANK, "rank", 28},
		{"{\"run\":\"r\",\"step\":1,\"event\":\"x\",\"rank\":true}", GW_REJ_BAD_RANK, "rank", 40},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gw_rec r;
		struct gw_wire_err e;
		int rc = parse(cases[i].line, &r, &e);
		ck_assert_msg(rc == -EINVAL, "case %zu accepted: %s", i, cases[i].line);
		ck_assert_msg(e.reason == cases[i].reason, "case %zu: reason %s, want %s (%s)", i,
		              gw_wire_reason_name(e.reason), gw_wire_reason_name(cases[i].reason), e.msg);
		ck_assert_msg(strcmp(e.field, cases[i].field) == 0, "case %zu: field '%s' (%s)", i, e.field, e.msg);
		if (cases[i].column)
			ck_assert_msg(e.column == cases[i].column, "case %zu: column %zu, want %zu (%s)", i,
			              e.column, cases[i].column, e.msg);
		ck_assert(strstr(e.msg, gw_wire_reason_name(e.reason)) == e.msg);
	}
}
END_TEST

/* "rank" is the writing process's global rank: kept apart, neither an
 * extra metric nor an event attribute, and written back */
START_TEST(rank_field)
{
	struct gw_rec r;
	struct gw_wire_err e;
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":3,\"rank\":7,\"loss\":1.5}", &r, &e), 0);
	ck_assert(r.has_rank);
	ck_assert_uint_eq(r.rank, 7);
	ck_assert_uint_eq(r.n_extra, 0);
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":3,\"rank\":0,\"loss\":1.5}", &r, &e), 0);
	ck_assert(r.has_rank && r.rank == 0 && !r.rank_label);
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":3,\"rank\":null,\"loss\":1.5}", &r, &e), 0);
	ck_assert(!r.has_rank);
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":3,\"loss\":1.5}", &r, &e), 0);
	ck_assert(!r.has_rank);
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":3,\"rank\":1048575,\"event\":\"resumed\","
	                       "\"checkpoint_step\":2}", &r, &e), 0);
	ck_assert(r.has_rank && r.rank == 1048575);
	ck_assert_ptr_null(json_object_get(r.attrs, "rank"));
	ck_assert_uint_eq(json_object_size(r.attrs), 1);
	struct gw_buf b = {0};
	ck_assert_int_eq(gw_wire_append_rec(&b, &r), 0);
	ck_assert_str_eq(b.p, "{\"run\":\"r\",\"step\":3,\"rank\":1048575,\"event\":\"resumed\","
	                      "\"checkpoint_step\":2}\n");
	gw_buf_free(&b);
}
END_TEST

START_TEST(blank_and_default_run)
{
	struct gw_rec r;
	ck_assert_int_eq(gw_wire_parse(w, "  \r", 3, NULL, &r, NULL), -ENODATA);
	const char *l = "{\"step\":3,\"loss\":1}";
	ck_assert_int_eq(gw_wire_parse(w, l, strlen(l), "followed", &r, NULL), 0);
	ck_assert_str_eq(r.run, "followed");
	ck_assert_int_eq(r.step, 3);
}
END_TEST

/* One run-name rule: 1-256 bytes of UTF-8 without C0, DEL or C1 controls. */
START_TEST(run_names)
{
	static const char *const good[] = {"r", "a/b c", "quote\"", "\xc3\xbc", "\xe6\x97\xa5",
	                                   "\xc2\xa0nbsp", "\xf0\x9f\x98\x80"};
	static const char *const bad[] = {"", "a\nb", "\x1b[31m", "tab\t", "del\x7f", "\xc2\x85",
	                                  "\xff", "\xc3\x28", "\xed\xa0\x80", "\xc0\xaf"};
	char why[128];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(gw_wire_check_run(good[i], strlen(good[i]), why, sizeof(why)) == 0, "%s", why);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(gw_wire_check_run(bad[i], strlen(bad[i]), why, sizeof(why)), -EINVAL);
	char longname[258];
	memset(longname, 'x', sizeof(longname));
	ck_assert_int_eq(gw_wire_check_run(longname, 256, why, sizeof(why)), 0);
	ck_assert_int_eq(gw_wire_check_run(longname, 257, why, sizeof(why)), -EINVAL);
	/* the parser applies it to "run" and to the default run */
	struct gw_rec r;
	struct gw_wire_err e;
	const char *line = "{\"run\":\"a\\u001bb\",\"step\":1}";
	ck_assert_int_eq(parse(line, &r, &e), -EINVAL);
	ck_assert_int_eq(e.reason, GW_REJ_BAD_RUN);
	line = "{\"step\":1}";
	ck_assert_int_eq(gw_wire_parse(w, line, strlen(line), "bad\nname", &r, &e), -EINVAL);
	ck_assert_int_eq(e.reason, GW_REJ_BAD_RUN);
}
END_TEST

START_TEST(fmt_double_roundtrip)
{
	double vals[] = {0.1, 1e-5, 1821490745.003, 2.0, -0.0, 1e300, 5e-324, 0.30000000000000004};
	char buf[32];
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		gw_wire_fmt_double(buf, vals[i]);
		ck_assert_msg(strtod(buf, NULL) == vals[i], "%s", buf);
	}
	gw_wire_fmt_double(buf, NAN);
	ck_assert_str_eq(buf, "NaN");
	gw_wire_fmt_double(buf, -INFINITY);
	ck_assert_str_eq(buf, "-Infinity");
}
END_TEST

START_TEST(append_rec_roundtrip)
{
	/* a record and an event written back and read again are the same */
	const char *lines[] = {
		"{\"run\":\"r \\\"q\\\" \\\\ \u00e9\",\"step\":7,\"ts\":1754012345.678,"
		"\"train/loss\":2.5,\"lr\":NaN,\"grad norm\":-Infinity,\"x\\u0001\":0.1,\"y\":1e300}",
		"{\"run\":\"r\",\"step\":8,\"event\":\"resumed\",\"checkpoint_step\":5,\"h\":{\"lr\":0.002}}",
	};
	struct gw_buf b = {0};
	for (size_t i = 0; i < 2; i++) {
		struct gw_rec a, c;
		ck_assert_int_eq(gw_wire_parse(w, lines[i], strlen(lines[i]), NULL, &a, NULL), 0);
		gw_buf_reset(&b);
		ck_assert_int_eq(gw_wire_append_rec(&b, &a), 0);
		ck_assert_int_eq(b.p[b.len - 1], '\n');
		char *first = strndup(b.p, b.len);
		struct gw_wire *w2 = gw_wire_new(al);
		ck_assert_int_eq(gw_wire_parse(w2, b.p, b.len - 1, NULL, &c, NULL), 0);
		ck_assert_str_eq(c.run, a.run);
		ck_assert_int_eq(c.step, a.step);
		ck_assert(c.ts == a.ts || (isnan(c.ts) && isnan(a.ts)));
		ck_assert_int_eq(c.present, a.present);
		for (int r = 0; r < GW_NROLES; r++)
			if (gw_rec_has(&a, r))
				ck_assert(c.v[r] == a.v[r] || (isnan(c.v[r]) && isnan(a.v[r])));
		ck_assert_int_eq(c.n_extra, a.n_extra);
		for (size_t k = 0; k < a.n_extra; k++) {
			ck_assert_str_eq(c.extra[k].name, a.extra[k].name);
			ck_assert(c.extra[k].value == a.extra[k].value);
		}
		if (a.event) {
			ck_assert_str_eq(c.event, a.event);
			ck_assert(json_equal(c.attrs, a.attrs));
		}
		/* and writing it again gives the same text */
		gw_buf_reset(&b);
		ck_assert_int_eq(gw_wire_append_rec(&b, &c), 0);
		char *again = strndup(b.p, b.len);
		ck_assert_str_eq(again, first);
		free(again);
		free(first);
		gw_wire_free(w2);
	}
	char *last = strndup(b.p, b.len);
	ck_assert_str_eq(last, "{\"run\":\"r\",\"step\":8,\"event\":\"resumed\",\"checkpoint_step\":5,\"h\":{\"lr\":0.002}}\n");
	free(last);
	gw_buf_free(&b);
}
END_TEST

/* Found by fuzz/fuzz_wire.c: an error about a long non-ASCII field name, or
 * about a non-ASCII byte where a value belongs, had its message cut inside
 * a UTF-8 character, so jansson refused it and the client got no error. */
START_TEST(error_text_is_valid_utf8)
{
	char line[512], key[200] = "";
	for (int i = 0; i < 40; i++)
		strcat(key, "\xc3\xa9");     /* 80 bytes of e-acute */
	const char *fmt[] = {
		"{\"run\":\"r\",\"step\":1,\"%s\":1,\"%s\":2}",   /* duplicate_field */
		"{\"run\":\"r\",\"step\":1,\"%s\":\"x\",\"loss\":\xc3\xa9}",
		"{\"run\":\"r\",\"step\":1,\"%s\":[\"\\\xc3\xa9\"]}",
	};
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		snprintf(line, sizeof(line), fmt[i], key, key);
		struct gw_rec r;
		struct gw_wire_err e;
		ck_assert_int_eq(parse(line, &r, &e), -EINVAL);
		json_t *m = json_string(e.msg), *f = json_string(e.field);
		ck_assert_msg(m != NULL, "case %zu: message is not UTF-8: %s", i, e.msg);
		ck_assert_msg(f != NULL, "case %zu: field is not UTF-8: %s", i, e.field);
		json_decref(m);
		json_decref(f);
	}
	struct gw_rec r;
	struct gw_wire_err e;
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":\xc3\xa9}", &r, &e), -EINVAL);
	ck_assert_msg(strstr(e.msg, "byte 0xc3") != NULL, "%s", e.msg);
}
END_TEST

/* Found by fuzz/fuzz_wire.c: {"ts": null, "time": 7} in an event kept
 * "time" as an attribute, which the written-back line then read as its ts.
 * A null ts alias counts as absent, as a null role does. */
START_TEST(null_ts_counts_as_absent)
{
	struct gw_rec r;
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":1,\"ts\":null,\"time\":7,\"loss\":1}", &r, NULL), 0);
	ck_assert_double_eq(r.ts, 7);
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":1,\"event\":\"e\",\"ts\":null,\"time\":7,"
	                       "\"timestamp\":null,\"a\":null}", &r, NULL), 0);
	ck_assert_double_eq(r.ts, 7);
	ck_assert_ptr_null(json_object_get(r.attrs, "ts"));
	ck_assert_ptr_null(json_object_get(r.attrs, "time"));
	ck_assert_ptr_null(json_object_get(r.attrs, "timestamp"));
	ck_assert(json_is_null(json_object_get(r.attrs, "a")));
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":1,\"event\":\"e\",\"ts\":null}", &r, NULL), 0);
	ck_assert(isnan(r.ts));
}
END_TEST

/* Found by fuzz/fuzz_wire.c: an event with "loss": NaN kept the attribute
 * as the string "NaN", and the written-back line was then rejected
 * (bad_value), because role fields were checked as numbers even in an
 * event.  An event's fields are its attributes (docs/wire-format.md). */
START_TEST(event_role_fields_are_attributes)
{
	struct gw_rec r;
	struct gw_wire_err e;
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":1,\"event\":\"eval\",\"loss\":\"n/a\",\"lr\":NaN}",
	                       &r, &e), 0);
	ck_assert_str_eq(json_string_value(json_object_get(r.attrs, "loss")), "n/a");
	ck_assert_str_eq(json_string_value(json_object_get(r.attrs, "lr")), "NaN");
	ck_assert_int_eq(r.present, 0);
	struct gw_buf b = {0};
	ck_assert_int_eq(gw_wire_append_rec(&b, &r), 0);
	struct gw_wire *w2 = gw_wire_new(al);
	struct gw_rec c;
	ck_assert_int_eq(gw_wire_parse(w2, b.p, b.len - 1, NULL, &c, &e), 0);
	ck_assert(json_equal(c.attrs, r.attrs));
	gw_wire_free(w2);
	gw_buf_free(&b);
	/* a record still rejects it, with the field and column */
	ck_assert_int_eq(parse("{\"run\":\"r\",\"step\":1,\"loss\":\"n/a\"}", &r, &e), -EINVAL);
	ck_assert_int_eq(e.reason, GW_REJ_BAD_VALUE);
	ck_assert_str_eq(e.field, "loss");
	ck_assert_uint_eq(e.column, 28);
}
END_TEST

/* docs/wire-format.md's alias table is the built-in table: each row's
 * names, in order, are that role's aliases best first, and no built-in
 * alias is missing from it (a name added to lib/alias.c and not to the
 * docs, or the other way round, fails here). */
START_TEST(aliases_documented)
{
	const char *root = getenv("GW_SOURCE_ROOT");
	ck_assert_msg(root != NULL, "GW_SOURCE_ROOT is not set (tests/unit/meson.build sets it)");
	char path[4096], *doc;
	snprintf(path, sizeof(path), "%s/docs/wire-format.md", root);
	ck_assert_int_eq(gw_read_file(path, 1 << 20, &doc, NULL), 0);
	const char *head = "| role | built-in aliases, best first |\n|---|---|\n";
	char *p = strstr(doc, head);
	ck_assert_msg(p != NULL, "%s: no alias table (%s)", path, head);
	p += strlen(head);
	size_t documented = 0;
	int rows = 0;
	while (*p == '|') {
		char *eol = strchr(p, '\n');
		ck_assert_ptr_nonnull(eol);
		*eol = '\0';
		/* "| `role` | `name`, `name`, ... |" */
		char *q = strchr(p + 1, '`'), *r = q ? strchr(q + 1, '`') : NULL;
		ck_assert_msg(q && r, "alias table row without a role: %s", p);
		*r = '\0';
		int role = gw_role_parse(q + 1);
		ck_assert_msg(role >= 0, "alias table: \"%s\" is not a role", q + 1);
		int prio = 0;
		for (q = strchr(r + 1, '`'); q; q = strchr(r + 1, '`'), prio++) {
			r = strchr(q + 1, '`');
			ck_assert_msg(r != NULL, "alias table: unclosed ` in the %s row", gw_role_name(role));
			*r = '\0';
			int got_prio = -1, got = gw_alias_lookup(al, q + 1, strlen(q + 1), &got_prio);
			ck_assert_msg(got == role && got_prio == prio,
			              "docs/wire-format.md lists \"%s\" as alias %d of %s; lib/alias.c has "
			              "it %s %s (priority %d)", q + 1, prio, gw_role_name(role),
			              got < 0 ? "not at all:" : "as", got < 0 ? "" : gw_role_name(got),
			              got_prio);
			documented++;
		}
		rows++;
		p = eol + 1;
	}
	ck_assert_int_eq(rows, GW_NALIAS_ROLES);
	ck_assert_msg(documented == gw_alias_count(al), "lib/alias.c has %zu built-in aliases, "
	              "docs/wire-format.md lists %zu", gw_alias_count(al), documented);
	free(doc);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("parse");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, record_basic);
	tcase_add_test(tc, numbers_exact);
	tcase_add_test(tc, python_nonfinite);
	tcase_add_test(tc, aliases);
	tcase_add_test(tc, fp16_fields);
	tcase_add_test(tc, aliases_documented);
	tcase_add_test(tc, event_attrs);
	tcase_add_test(tc, strings_utf8);
	tcase_add_test(tc, bad_lines);
	tcase_add_test(tc, rank_field);
	tcase_add_test(tc, blank_and_default_run);
	tcase_add_test(tc, run_names);
	tcase_add_test(tc, fmt_double_roundtrip);
	tcase_add_test(tc, append_rec_roundtrip);
	tcase_add_test(tc, error_text_is_valid_utf8);
	tcase_add_test(tc, null_ts_counts_as_absent);
	tcase_add_test(tc, event_role_fields_are_attributes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gw_check_run(suite());
}
