/*
 * Unit tests of the alerts module's pure parts: HMAC signing (GitHub's test
 * vector), durations, the "sinks" configuration (sources of secrets,
 * validation messages, filters) and the three formatters' payloads.  The
 * delivery machinery itself is tested against real receivers in
 * tests/integration/test_alert_*.py.
 */
#include "gwcheck.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sink.h"
#include "util.h"

static json_t *parse(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	ck_assert_msg(j != NULL, "bad JSON in test: %s", e.text);
	return j;
}

static int parse_sinks(const char *text, struct gw_sink_cfg **out, size_t *n, char *err,
                       size_t errlen)
{
	json_t *j = parse(text);
	err[0] = '\0';
	int rc = gw_sink_parse(j, out, n, err, errlen);
	json_decref(j);
	return rc;
}

START_TEST(hmac_github_vector)
{
	char hex[65];
	const char *key = "It's a Secret to Everybody", *body = "Hello, World!";
	ck_assert_int_eq(gw_sink_hmac_sha256_hex(key, strlen(key), body, strlen(body), hex), 0);
	ck_assert_str_eq(hex, "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17");
}
END_TEST

START_TEST(durations)
{
	static const struct {
		const char *json;
		int rc;
		uint64_t ms;
	} cases[] = {
		{"10", 0, 10000}, {"0.25", 0, 250}, {"\"250ms\"", 0, 250}, {"\"10s\"", 0, 10000},
		{"\"5m\"", 0, 300000}, {"\"4h\"", 0, 14400000}, {"\"1d\"", 0, 86400000},
		{"\"0\"", 0, 0}, {"\"10x\"", -22, 0}, {"-1", -22, 0}, {"\"\"", -22, 0},
		{"true", -22, 0},
		/* beyond 10^15 ms (about 31,700 years) the milliseconds no longer
		 * fit what llround returns: refused, never a wrapped value */
		{"\"1e12\"", 0, 1000000000000000ull}, {"\"2e11d\"", -22, 0}, {"\"1e12d\"", -22, 0},
		{"\"3e11h\"", -22, 0}, {"\"nan\"", -22, 0}, {"\"inf\"", -22, 0},
		/* only decimal numbers: no hexadecimal, no leading blanks */
		{"\"0x10\"", -22, 0}, {"\" 5\"", -22, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		uint64_t ms = 0;
		ck_assert_msg(gw_parse_duration(j, &ms) == cases[i].rc, "case %s", cases[i].json);
		if (cases[i].rc == 0)
			ck_assert_uint_eq(ms, cases[i].ms);
		json_decref(j);
	}
}
END_TEST

START_TEST(config_sources_and_defaults)
{
	char dir[] = "/tmp/gwtestXXXXXX", path[64], err[256];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/secret", dir);
	FILE *f = fopen(path, "w");
	fputs("file-secret\n", f);
	fclose(f);
	setenv("GW_TEST_SLACK_URL", "https://hooks.slack.com/services/T0/B0/XYZ", 1);
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	struct gw_sink_cfg *s;
	size_t n;
	int rc = parse_sinks("[{\"type\":\"slack\",\"url_env\":\"GW_TEST_SLACK_URL\"},"
	                     " {\"type\":\"webhook\",\"name\":\"ops\",\"url\":\"http://127.0.0.1:9/x\","
	                     "  \"secret_file\":\"secret\",\"min_severity\":\"critical\","
	                     "  \"runs\":\"prod-*\",\"detectors\":[\"nonfinite\",\"optim*\"],"
	                     "  \"group_wait\":\"2s\",\"rate_limit\":\"5/min\"},"
	                     " {\"type\":\"alertmanager\",\"url\":\"http://127.0.0.1:9093/\"}]",
	                     &s, &n, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(s[0].name, "slack-0");
	ck_assert_str_eq(s[0].url, "https://hooks.slack.com/services/T0/B0/XYZ");
	ck_assert_ptr_null(strstr(s[0].url_log, "XYZ"));
	ck_assert_uint_eq(s[0].rate_count, 20);
	ck_assert_uint_eq(s[0].rate_per_ms, 60000);
	ck_assert(s[0].tls_verify);
	ck_assert_str_eq(s[1].secret, "file-secret");
	ck_assert_uint_eq(s[1].secret_len, 11);
	ck_assert_uint_eq(s[1].group_wait_ms, 2000);
	ck_assert_uint_eq(s[1].rate_count, 5);
	ck_assert(gw_sink_matches(&s[1], "prod-7", "nonfinite", 2));
	ck_assert(gw_sink_matches(&s[1], "prod-7", "optimizer_reset", 2));
	ck_assert(!gw_sink_matches(&s[1], "prod-7", "nonfinite", 1));
	ck_assert(!gw_sink_matches(&s[1], "dev-7", "nonfinite", 2));
	ck_assert(!gw_sink_matches(&s[1], "prod-7", "stall", 2));
	ck_assert(gw_sink_matches(&s[0], "anything", "stall", 0));
	ck_assert_str_eq(s[2].url, "http://127.0.0.1:9093/api/v2/alerts");
	ck_assert_uint_eq(s[2].repeat_ms, 60000);
	gw_sink_free_all(s, n);
	unlink(path);
	rmdir(dir);
	unsetenv("CREDENTIALS_DIRECTORY");
}
END_TEST

/* A secret may sit anywhere in a webhook URL: only scheme and host are
 * shown, unless the sink declares its path public (the query still goes). */
START_TEST(urls_are_redacted)
{
	static const struct {
		const char *url;
		bool keep_path;
		const char *shown;
	} cases[] = {
		{"https://hooks.example.com/T0K3N", false, "https://hooks.example.com/REDACTED"},
		{"https://hooks.example.com/T0K3N/x", false, "https://hooks.example.com/REDACTED"},
		{"https://hooks.slack.com/services/T0/B0/XYZ", false, "https://hooks.slack.com/REDACTED"},
		{"http://h:9/hook?token=abc", false, "http://h:9/REDACTED"},
		{"http://h:9?token=abc", false, "http://h:9/REDACTED"},
		{"http://user:pw@h:9/", false, "http://h:9/REDACTED"},
		{"http://h:9", false, "http://h:9"},
		{"http://am:9093/api/v2/alerts", true, "http://am:9093/api/v2/alerts"},
		{"http://am:9093/api/v2/alerts?token=abc", true, "http://am:9093/api/v2/alerts/REDACTED"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[256];
		gw_log_redact_url(cases[i].url, cases[i].keep_path, out, sizeof(out));
		ck_assert_str_eq(out, cases[i].shown);
	}
	char err[256];
	struct gw_sink_cfg *s;
	size_t n;
	ck_assert_int_eq(parse_sinks("[{\"type\":\"webhook\",\"url\":\"https://h/T0K3N?k=v\"},"
	                             " {\"type\":\"alertmanager\",\"url\":\"http://am:9093\","
	                             "  \"url_path_public\":true}]", &s, &n, err, sizeof(err)), 0);
	ck_assert_str_eq(s[0].url_log, "https://h/REDACTED");
	ck_assert_str_eq(s[1].url_log, "http://am:9093/api/v2/alerts");
	gw_sink_free_all(s, n);
	ck_assert_int_lt(parse_sinks("[{\"type\":\"webhook\",\"url\":\"https://h/\","
	                             " \"url_path_public\":1}]", &s, &n, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "url_path_public"));
}
END_TEST

START_TEST(config_errors)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
		{"[{\"type\":\"pager\",\"url\":\"http://x\"}]", "\"type\" must be"},
		{"[{\"type\":\"slack\"}]", "one of \"url\", \"url_env\" or \"url_file\" is required"},
		{"[{\"type\":\"slack\",\"url\":\"http://x\",\"url_env\":\"X\"}]", "give only one of"},
		{"[{\"type\":\"slack\",\"url\":\"ftp://x\"}]", "must start with http"},
		{"[{\"type\":\"slack\",\"url\":\"http://x\",\"colour\":1}]", "unknown key \"colour\""},
		{"[{\"type\":\"slack\",\"url\":\"http://x\",\"secret\":\"k\"}]", "only webhook sinks"},
		{"[{\"type\":\"webhook\",\"url\":\"http://x\",\"min_severity\":\"high\"}]", "min_severity"},
		{"[{\"type\":\"webhook\",\"url\":\"http://x\",\"group_wait\":\"soon\"}]", "duration"},
		{"[{\"type\":\"webhook\",\"url\":\"http://x\",\"rate_limit\":\"lots\"}]", "rate_limit"},
		{"[{\"type\":\"webhook\",\"url_env\":\"GW_TEST_UNSET_VAR\"}]", "is not set"},
		{"[{\"type\":\"webhook\",\"url_file\":\"/nonexistent/gw\"}]", "cannot read"},
		{"[{\"type\":\"webhook\",\"name\":\"a\",\"url\":\"http://x\"},"
		 " {\"type\":\"slack\",\"name\":\"a\",\"url\":\"http://y\"}]", "already used"},
		{"[{\"type\":\"alertmanager\",\"url\":\"http://x\",\"repeat_interval\":0}]", "at least 1s"},
		{"[{\"type\":\"webhook\",\"urls\":[\"http://x\"]}]", "only alertmanager sinks take"},
		{"[{\"type\":\"alertmanager\",\"url\":\"http://x\",\"urls\":[\"http://y\"]}]", "not both"},
		{"[{\"type\":\"alertmanager\",\"urls\":[]}]", "array of 1 to 16"},
		{"[{\"type\":\"alertmanager\",\"urls\":[\"http://x\",7]}]", "\"urls\"[1] must be"},
		{"[{\"type\":\"alertmanager\",\"urls\":[\"http://x\",\"http://x\"]}]", "repeats"},
		{"[{\"type\":\"alertmanager\",\"urls\":[\"http://x\",\"ftp://y\"]}]", "must start with http"},
	};
	unsetenv("GW_TEST_UNSET_VAR");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gw_sink_cfg *s = NULL;
		size_t n = 0;
		char err[256];
		ck_assert_int_lt(parse_sinks(cases[i].json, &s, &n, err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, cases[i].msg), "case %zu: \"%s\" lacks \"%s\"", i, err,
		              cases[i].msg);
		ck_assert_ptr_null(s);
	}
}
END_TEST

/* An Alertmanager cluster: one sink per peer, named <name>.1, .2, ... */
START_TEST(alertmanager_peers)
{
	struct gw_sink_cfg *s = NULL;
	size_t n = 0;
	char err[256];
	ck_assert_int_eq(parse_sinks("[{\"type\":\"webhook\",\"url\":\"http://w\"},"
	                             " {\"type\":\"alertmanager\",\"name\":\"am\",\"repeat_interval\":\"5s\","
	                             "  \"urls\":[\"http://a:9093\",\"http://b:9093/\"]}]",
	                             &s, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(s[1].name, "am.1");
	ck_assert_str_eq(s[2].name, "am.2");
	ck_assert_str_eq(s[1].url, "http://a:9093/api/v2/alerts");
	ck_assert_str_eq(s[2].url, "http://b:9093/api/v2/alerts");
	ck_assert_uint_eq(s[2].repeat_ms, 5000);
	gw_sink_free_all(s, n);
}
END_TEST

static json_t *sample_alert(const char *kind)
{
	return json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:i, s:f},"
	                 " s:i, s:s, s:f, s:f}",
	                 "id", "gw-00112233445566aa", "kind", kind, "run", "prod<7>&co",
	                 "segment", 2, "step", 1234, "detector", "optimizer_reset",
	                 "severity", "critical",
	                 "summary", "loss rose 1.2 -> 2.3 while grad norm fell 0.6 -> 0.25 after resume",
	                 "cause", "the optimizer state was not restored (moments reset)",
	                 "action", "check that the checkpoint has optimizer.pt and it was loaded",
	                 "evidence", "metric", "loss`x", "steps", 20, "ratio", 1.9,
	                 "version", 1, "state", "open", "opened_at", 1700000000.25,
	                 "raised_at", 1700000000.25);
}

static json_t *format(const struct gw_sink_type *t, const struct gw_sink_msg *m)
{
	struct gw_sink_cfg cfg = {.type = t};
	char *body = NULL;
	size_t len = 0;
	ck_assert_int_eq(t->format(&cfg, m, &body, &len), 0);
	ck_assert_uint_eq(len, strlen(body));
	json_t *j = parse(body);
	free(body);
	return j;
}

START_TEST(slack_shape)
{
	json_t *a = sample_alert("open");
	struct gw_sink_msg m = {.alert = a, .event = "open", .version = 1,
	                        .delivery_id = "gw-00112233445566aa-v1", .now = 1700000001.0};
	json_t *j = format(&gw_sink_slack, &m);
	const char *text = json_string_value(json_object_get(j, "text"));
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "prod&lt;7&gt;&amp;co"));
	json_t *blocks = json_object_get(j, "blocks");
	ck_assert(json_is_array(blocks));
	ck_assert_uint_ge(json_array_size(blocks), 5);
	json_t *h = json_array_get(blocks, 0);
	ck_assert_str_eq(json_string_value(json_object_get(h, "type")), "header");
	json_t *ht = json_object_get(h, "text");
	ck_assert_str_eq(json_string_value(json_object_get(ht, "type")), "plain_text");
	ck_assert_uint_le(strlen(json_string_value(json_object_get(ht, "text"))), 150 * 4);
	/* the fields section: run, step, detector, severity */
	json_t *fields = json_object_get(json_array_get(blocks, 2), "fields");
	ck_assert_uint_eq(json_array_size(fields), 4);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(fields, 1), "text")), "1234"));
	/* evidence in a code block with no stray backtick */
	const char *ev = json_string_value(json_object_get(json_object_get(json_array_get(blocks, 3), "text"), "text"));
	ck_assert_ptr_nonnull(strstr(ev, "```\nmetric: loss'x\nsteps: 20\nratio: 1.9\n```"));
	const char *why = json_string_value(json_object_get(json_object_get(json_array_get(blocks, 4), "text"), "text"));
	ck_assert_ptr_nonnull(strstr(why, "*Likely cause*"));
	ck_assert_ptr_nonnull(strstr(why, "*What to check*"));
	/* no address to link to: no button */
	for (size_t k = 0; k < json_array_size(blocks); k++)
		ck_assert_str_ne(json_string_value(json_object_get(json_array_get(blocks, k), "type")), "actions");
	json_decref(j);
	/* with one: a "View run" button to the alert's page */
	m.api_base = "https://node17:7471";
	j = format(&gw_sink_slack, &m);
	blocks = json_object_get(j, "blocks");
	json_t *btn = NULL;
	for (size_t k = 0; k < json_array_size(blocks); k++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(blocks, k), "type")), "actions"))
			btn = json_array_get(json_object_get(json_array_get(blocks, k), "elements"), 0);
	ck_assert_ptr_nonnull(btn);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(btn, "text"), "text")), "View run");
	ck_assert_str_eq(json_string_value(json_object_get(btn, "url")), "https://node17:7471/alerts/gw-00112233445566aa");
	json_decref(j);
	m.api_base = NULL;
	/* a resolve says so */
	m.event = "resolve";
	j = format(&gw_sink_slack, &m);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "text")), "resolved"));
	json_decref(j);
	json_decref(a);
}
END_TEST

START_TEST(slack_long_text_is_cut_on_utf8)
{
	char big[5000];
	size_t n = 0;
	while (n + 2 < sizeof(big)) {
		big[n++] = '\xc3';
		big[n++] = '\xa9'; /* é */
	}
	big[n] = '\0';
	json_t *a = sample_alert("open");
	json_object_set_new(a, "summary", json_string(big));
	json_object_set_new(a, "run", json_string(big + 3000));
	struct gw_sink_msg m = {.alert = a, .event = "open", .version = 1, .delivery_id = "x", .now = 1};
	json_t *j = format(&gw_sink_slack, &m); /* parse() fails on broken UTF-8 */
	json_t *blocks = json_object_get(j, "blocks");
	const char *hdr = json_string_value(json_object_get(json_object_get(json_array_get(blocks, 0), "text"), "text"));
	ck_assert_uint_le(strlen(hdr), 150 * 2);
	size_t i;
	json_t *b;
	json_array_foreach(blocks, i, b) {
		const char *t = json_string_value(json_object_get(json_object_get(b, "text"), "text"));
		if (t)
			ck_assert_uint_le(strlen(t), 3000);
	}
	json_decref(j);
	json_decref(a);
}
END_TEST

START_TEST(webhook_shape)
{
	json_t *a = sample_alert("update");
	struct gw_sink_msg m = {.alert = a, .event = "update", .version = 3,
	                        .delivery_id = "gw-00112233445566aa-v3", .now = 1700000005.5};
	json_t *j = format(&gw_sink_webhook, &m);
	ck_assert_str_eq(json_string_value(json_object_get(j, "schema")), "gradwatch.alert.v2");
	ck_assert_str_eq(json_string_value(json_object_get(j, "delivery_id")), "gw-00112233445566aa-v3");
	ck_assert_str_eq(json_string_value(json_object_get(j, "event")), "update");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "version")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "timestamp")), 1700000005);
	ck_assert_str_eq(json_string_value(json_object_get(j, "sent_at")), "2023-11-14T22:13:25.500Z");
	ck_assert(json_equal(json_object_get(j, "alert"), a));
	json_decref(j);
	json_decref(a);
}
END_TEST

START_TEST(alertmanager_shape)
{
	json_t *a = sample_alert("open");
	struct gw_sink_msg m = {.alert = a, .event = "open", .version = 1, .delivery_id = "x",
	                        .now = 1700000010.0, .resend_s = 60, .api_base = "http://127.0.0.1:7471"};
	json_t *j = format(&gw_sink_alertmanager, &m);
	ck_assert_uint_eq(json_array_size(j), 1);
	json_t *o = json_array_get(j, 0);
	json_t *l = json_object_get(o, "labels");
	ck_assert_str_eq(json_string_value(json_object_get(l, "alertname")), "GradwatchOptimizerReset");
	ck_assert_str_eq(json_string_value(json_object_get(l, "run")), "prod<7>&co");
	ck_assert_str_eq(json_string_value(json_object_get(l, "detector")), "optimizer_reset");
	ck_assert_str_eq(json_string_value(json_object_get(l, "severity")), "critical");
	ck_assert_str_eq(json_string_value(json_object_get(l, "alert_id")), "gw-00112233445566aa");
	json_t *an = json_object_get(o, "annotations");
	ck_assert_ptr_nonnull(json_object_get(an, "summary"));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(an, "description")), "Evidence: {"));
	ck_assert_ptr_nonnull(json_object_get(an, "cause"));
	ck_assert_str_eq(json_string_value(json_object_get(o, "startsAt")), "2023-11-14T22:13:20.250Z");
	ck_assert_str_eq(json_string_value(json_object_get(o, "endsAt")), "2023-11-14T22:17:30.000Z");
	/* the alert's page in gradwatchd, also as the runbook link */
	ck_assert_str_eq(json_string_value(json_object_get(o, "generatorURL")),
	                 "http://127.0.0.1:7471/alerts/gw-00112233445566aa");
	ck_assert_str_eq(json_string_value(json_object_get(an, "runbook_url")),
	                 "http://127.0.0.1:7471/alerts/gw-00112233445566aa");
	json_decref(j);
	/* resolve: endsAt is now; a previous label set is ended alongside */
	json_t *prev = sample_alert("open");
	json_object_set_new(prev, "severity", json_string("warning"));
	m.event = "resolve";
	m.previous = prev;
	j = format(&gw_sink_alertmanager, &m);
	ck_assert_uint_eq(json_array_size(j), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(j, 0), "labels"), "severity")), "warning");
	for (int k = 0; k < 2; k++)
		ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, (size_t)k), "endsAt")),
		                 "2023-11-14T22:13:30.000Z");
	json_decref(j);
	json_decref(prev);
	json_decref(a);
}
END_TEST

/* An acknowledgement: Slack a short message with who and why (escaped),
 * no fields or evidence; Alertmanager the same alert, still firing, with
 * an "acknowledged" annotation (and none once withdrawn). */
START_TEST(ack_shapes)
{
	json_t *a = sample_alert("ack");
	json_object_set_new(a, "acked_at", json_real(1700000020.5));
	json_object_set_new(a, "acked_by", json_string("ann <oncall>"));
	json_object_set_new(a, "ack_note", json_string("intended & known"));
	struct gw_sink_msg m = {.alert = a, .event = "ack", .version = 3, .delivery_id = "x",
	                        .now = 1700000030.0, .resend_s = 60, .api_base = "http://127.0.0.1:7471"};
	json_t *j = format(&gw_sink_slack, &m);
	json_t *blocks = json_object_get(j, "blocks");
	ck_assert_uint_eq(json_array_size(blocks), 3);
	const char *head = json_string_value(json_object_get(json_object_get(json_array_get(blocks, 0), "text"), "text"));
	ck_assert_ptr_nonnull(strstr(head, "Acknowledged: optimizer_reset on prod<7>&co"));
	const char *sec = json_string_value(json_object_get(json_object_get(json_array_get(blocks, 1), "text"), "text"));
	ck_assert_ptr_nonnull(strstr(sec, "*Acknowledged by ann &lt;oncall&gt;*"));
	ck_assert_ptr_nonnull(strstr(sec, "intended &amp; known"));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "text")), "acknowledged by ann"));
	json_decref(j);

	j = format(&gw_sink_alertmanager, &m);
	json_t *o = json_array_get(j, 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "annotations"), "acknowledged")),
	                 "acknowledged by ann <oncall> at 2023-11-14T22:13:40.500Z: intended & known");
	ck_assert_str_eq(json_string_value(json_object_get(o, "endsAt")), "2023-11-14T22:17:50.000Z");
	json_decref(j);

	json_object_del(a, "acked_at");
	m.event = "unack";
	j = format(&gw_sink_alertmanager, &m);
	ck_assert_ptr_null(json_object_get(json_object_get(json_array_get(j, 0), "annotations"), "acknowledged"));
	json_decref(j);
	j = format(&gw_sink_slack, &m);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "blocks"), 0), "text"), "text")),
	                             "Acknowledgement withdrawn"));
	json_decref(j);
	json_decref(a);
}
END_TEST

START_TEST(rfc3339)
{
	char b[32];
	gw_sink_rfc3339(0.0, b);
	ck_assert_str_eq(b, "1970-01-01T00:00:00.000Z");
	gw_sink_rfc3339(1700000000.999, b);
	ck_assert_str_eq(b, "2023-11-14T22:13:20.999Z");
	gw_sink_rfc3339(NAN, b);
	ck_assert_str_eq(b, "1970-01-01T00:00:00.000Z");
}
END_TEST

static Suite *alerts_suite(void)
{
	Suite *s = suite_create("alerts");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, hmac_github_vector);
	tcase_add_test(tc, durations);
	tcase_add_test(tc, config_sources_and_defaults);
	tcase_add_test(tc, urls_are_redacted);
	tcase_add_test(tc, config_errors);
	tcase_add_test(tc, alertmanager_peers);
	tcase_add_test(tc, slack_shape);
	tcase_add_test(tc, slack_long_text_is_cut_on_utf8);
	tcase_add_test(tc, webhook_shape);
	tcase_add_test(tc, alertmanager_shape);
	tcase_add_test(tc, ack_shapes);
	tcase_add_test(tc, rfc3339);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(alerts_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
