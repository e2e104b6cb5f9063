/*
 * slack: an incoming-webhook message (docs/alerts.md, "slack").
 *
 * The body is {"text": fallback, "blocks": [...]} in Block Kit: a header
 * (severity, detector, run), the summary with its numbers, a fields section
 * (run, step, detector, severity), a compact evidence section (one
 * "key: value" line per evidence field in a code block), the likely cause
 * and what to check, a "View run" button to the alert's page in gradwatchd
 * (when its address is known: public_url), and a context line with the
 * alert id, version and the host name.
 * Slack's limits are kept: header text 150 characters, section text 3000,
 * at most 10 fields; user text is escaped for mrkdwn (&, <, >) and cut on a
 * UTF-8 boundary.  `text` is the notification and screen-reader fallback.
 */
#include "sink.h"

#include "buf.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_MAX 150
#define SECTION_MAX 3000
#define EVIDENCE_LINES 12
#define EVIDENCE_LINE_MAX 160

/* Length of at most max bytes of s[0..len) that does not split a UTF-8
 * sequence. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
	return len <= max ? len : gw_utf8_cut(s, max);
}

/* Append s escaped for mrkdwn, stopping (with an ellipsis) before the
 * buffer passes limit bytes. */
static void sb_mrkdwn(struct gw_buf *b, const char *s, size_t limit)
{
	for (const char *p = s; *p; p++) {
		if (b->len + 8 >= limit) {
			gw_buf_str(b, "\xe2\x80\xa6"); /* … */
			return;
		}
		if (*p == '&')
			gw_buf_str(b, "&amp;");
		else if (*p == '<')
			gw_buf_str(b, "&lt;");
		else if (*p == '>')
			gw_buf_str(b, "&gt;");
		else if (((unsigned char)*p & 0xC0) == 0xC0) {
			/* a whole UTF-8 sequence at once */
			size_t n = 1;
			while (((unsigned char)p[n] & 0xC0) == 0x80)
				n++;
			gw_buf_add(b, p, n);
			p += n - 1;
		} else {
			gw_buf_add(b, p, 1);
		}
	}
}

static const char *str_of(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static json_t *mrkdwn(const char *text)
{
	return json_pack("{s:s, s:s}", "type", "mrkdwn", "text", text);
}

static const char *sev_icon(const char *sev)
{
	if (strcmp(sev, "critical") == 0)
		return "\xf0\x9f\x94\xb4"; /* red circle */
	if (strcmp(sev, "warning") == 0)
		return "\xf0\x9f\x9f\xa0"; /* orange circle */
	return "\xf0\x9f\x94\xb5";         /* blue circle */
}

/* One "key: value" line per evidence field, values as compact JSON. */
static void evidence_lines(struct gw_buf *b, const json_t *ev)
{
	const char *key;
	const json_t *v;
	int n = 0;
	json_object_foreach((json_t *)ev, key, v) {
		if (n++ == EVIDENCE_LINES) {
			gw_buf_str(b, "\xe2\x80\xa6\n");
			break;
		}
		char *val = json_is_string(v) ? strdup(json_string_value(v))
		                              : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT |
		                                                  JSON_REAL_PRECISION(6));
		if (!val) {
			b->err = -ENOMEM;
			return;
		}
		char line[EVIDENCE_LINE_MAX + 8];
		int len = snprintf(line, sizeof(line), "%s: %s", key, val);
		free(val);
		size_t cut = utf8_cut(line, len < 0 ? 0 : (size_t)len, EVIDENCE_LINE_MAX);
		line[cut] = '\0';
		/* inside a code block only '`' would end it; <, >, & still escape */
		for (char *p = line; *p; p++)
			if (*p == '`')
				*p = '\'';
		sb_mrkdwn(b, line, SECTION_MAX - 16);
		gw_buf_str(b, "\n");
	}
}

/* An acknowledgement or its withdrawal: a short message (incoming webhooks
 * cannot reply in the alert's thread, so the header names the alert and
 * the context line carries its id). */
static int slack_ack_format(const struct gw_sink_msg *m, char **body, size_t *len)
{
	const json_t *a = m->alert;
	bool ack = strcmp(m->event, "ack") == 0;
	const char *run = str_of(a, "run"), *det = str_of(a, "detector");
	const char *by = str_of(a, ack ? "acked_by" : "unacked_by"), *note = str_of(a, "ack_note");
	char header[HEADER_MAX * 4 + 1];
	int hn = snprintf(header, sizeof(header), "%s %s: %s on %s",
	                  ack ? "\xf0\x9f\x91\x80" : "\xe2\x86\xa9\xef\xb8\x8f",
	                  ack ? "Acknowledged" : "Acknowledgement withdrawn", det, run);
	size_t hcut = utf8_cut(header, hn < 0 ? 0 : (size_t)hn, HEADER_MAX - 3);
	if (hcut < (size_t)hn)
		strcpy(header + hcut, "\xe2\x80\xa6");
	struct gw_buf t = {0}, sec = {0}, ctx = {0};
	gw_buf_str(&t, ack ? "acknowledged" : "acknowledgement withdrawn");
	if (*by) {
		gw_buf_str(&t, " by ");
		sb_mrkdwn(&t, by, 200);
	}
	gw_buf_str(&t, ": ");
	sb_mrkdwn(&t, det, 200);
	gw_buf_str(&t, " on run ");
	sb_mrkdwn(&t, run, 600);
	if (ack) {
		gw_buf_str(&sec, "*Acknowledged");
		if (*by) {
			gw_buf_str(&sec, " by ");
			sb_mrkdwn(&sec, by, 200);
		}
		gw_buf_str(&sec, "*; no more reminders unless it escalates");
		if (*note) {
			gw_buf_str(&sec, "\n*Note:* ");
			sb_mrkdwn(&sec, note, SECTION_MAX - 600);
		}
	} else {
		gw_buf_str(&sec, "*Acknowledgement withdrawn");
		if (*by) {
			gw_buf_str(&sec, " by ");
			sb_mrkdwn(&sec, by, 200);
		}
		gw_buf_str(&sec, "*; reminders start again");
	}
	gw_buf_str(&sec, "\n");
	sb_mrkdwn(&sec, str_of(a, "summary"), SECTION_MAX - 8);
	char c[512];
	const char *host = gw__sink_host();
	snprintf(c, sizeof(c), "gradwatch alert %s \xc2\xb7 version %lld \xc2\xb7 %s%s%s",
	         str_of(a, "id"), (long long)m->version, m->event, *host ? " \xc2\xb7 host " : "",
	         host);
	sb_mrkdwn(&ctx, c, SECTION_MAX);
	json_t *root = NULL;
	if (!t.err && !sec.err && !ctx.err)
		root = json_pack("{s:s, s:[{s:s, s:{s:s, s:s, s:b}}, {s:s, s:o}, {s:s, s:[o]}]}",
		                 "text", t.p, "blocks",
		                 "type", "header", "text", "type", "plain_text", "text", header,
		                 "emoji", 1,
		                 "type", "section", "text", mrkdwn(sec.p),
		                 "type", "context", "elements", mrkdwn(ctx.p));
	gw_buf_free(&t);
	gw_buf_free(&sec);
	gw_buf_free(&ctx);
	return gw__sink_dump(root, 0, body, len);
}

static int slack_format(const struct gw_sink_cfg *s, const struct gw_sink_msg *m, char **body,
                        size_t *len)
{
	if (strcmp(m->event, "ack") == 0 || strcmp(m->event, "unack") == 0)
		return slack_ack_format(m, body, len);
	const json_t *a = m->alert;
	const char *run = str_of(a, "run"), *det = str_of(a, "detector");
	const char *sev = str_of(a, "severity"), *summary = str_of(a, "summary");
	bool resolve = strcmp(m->event, "resolve") == 0;
	const char *verb = resolve ? "Resolved"
	                   : strcmp(m->event, "update") == 0 ? "Escalated"
	                   : strcmp(m->event, "repeat") == 0 ? "Still open"
	                                                     : "Alert";
	json_int_t step = json_integer_value(json_object_get(a, "step"));
	json_int_t seg = json_integer_value(json_object_get(a, "segment"));
	char step_s[32], seg_s[32];
	snprintf(step_s, sizeof(step_s), "%lld", (long long)step);
	snprintf(seg_s, sizeof(seg_s), "%lld", (long long)seg);

	/* header: plain text, 150 characters at most */
	char header[HEADER_MAX * 4 + 1];
	int hn = snprintf(header, sizeof(header), "%s %s: %s %s on %s",
	                  resolve ? "\xe2\x9c\x85" : sev_icon(sev), verb, sev, det, run);
	size_t hcut = utf8_cut(header, hn < 0 ? 0 : (size_t)hn, HEADER_MAX - 3);
	if (hcut < (size_t)hn)
		strcpy(header + hcut, "\xe2\x80\xa6");

	struct gw_buf t = {0}, sum = {0}, ev = {0}, why = {0}, ctx = {0};
	/* fallback text (notifications): not mrkdwn-rendered by blocks, but
	 * Slack still parses it, so escape it the same way */
	gw_buf_str(&t, "[");
	gw_buf_str(&t, sev);
	gw_buf_str(&t, resolve ? "] resolved: " : "] ");
	sb_mrkdwn(&t, det, 200);
	gw_buf_str(&t, " on run ");
	sb_mrkdwn(&t, run, 600);
	gw_buf_str(&t, ", step ");
	gw_buf_str(&t, step_s);
	gw_buf_str(&t, ": ");
	sb_mrkdwn(&t, summary, SECTION_MAX);

	gw_buf_str(&sum, "*");
	if (resolve)
		gw_buf_str(&sum, "Resolved. ");
	sb_mrkdwn(&sum, *summary ? summary : "(no summary)", SECTION_MAX - 2);
	gw_buf_str(&sum, "*");

	const json_t *evidence = json_object_get(a, "evidence");
	if (json_object_size(evidence)) {
		gw_buf_str(&ev, "*Evidence*\n```\n");
		evidence_lines(&ev, evidence);
		gw_buf_str(&ev, "```");
	}
	const char *cause = str_of(a, "cause"), *action = str_of(a, "action");
	if (*cause) {
		gw_buf_str(&why, "*Likely cause*\n");
		sb_mrkdwn(&why, cause, SECTION_MAX / 2);
	}
	if (*action) {
		gw_buf_str(&why, *cause ? "\n*What to check*\n" : "*What to check*\n");
		sb_mrkdwn(&why, action, SECTION_MAX - 8);
	}
	char c[512];
	const char *host = gw__sink_host();
	snprintf(c, sizeof(c), "gradwatch alert %s \xc2\xb7 version %lld \xc2\xb7 %s \xc2\xb7 segment %s%s%s",
	         str_of(a, "id"), (long long)m->version, m->event, seg_s, *host ? " \xc2\xb7 host " : "",
	         host);
	char url[1200];
	bool has_url = gw__sink_alert_url(m, a, url, sizeof(url)) == 0 && strlen(url) <= 3000;
	sb_mrkdwn(&ctx, c, SECTION_MAX);

	json_t *fields = json_array();
	const char *const names[4][2] = {
		{"Run", run}, {"Step", step_s}, {"Detector", det}, {"Severity", sev},
	};
	for (int k = 0; k < 4 && fields; k++) {
		struct gw_buf f = {0};
		gw_buf_str(&f, "*");
		gw_buf_str(&f, names[k][0]);
		gw_buf_str(&f, "*\n");
		sb_mrkdwn(&f, names[k][1], 1900);
		if (!f.err)
			json_array_append_new(fields, mrkdwn(f.p));
		gw_buf_free(&f);
	}
	json_t *blocks = json_array();
	json_array_append_new(blocks, json_pack("{s:s, s:{s:s, s:s, s:b}}", "type", "header", "text",
	                                        "type", "plain_text", "text", header, "emoji", 1));
	if (!sum.err)
		json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "section", "text",
		                                        mrkdwn(sum.p)));
	json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "section", "fields", fields));
	if (ev.len && !ev.err)
		json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "section", "text",
		                                        mrkdwn(ev.p)));
	if (why.len && !why.err)
		json_array_append_new(blocks, json_pack("{s:s, s:o}", "type", "section", "text",
		                                        mrkdwn(why.p)));
	if (has_url)   /* the run's charts at this alert, in gradwatchd */
		json_array_append_new(blocks, json_pack("{s:s, s:[{s:s, s:{s:s, s:s}, s:s, s:s}]}",
		                                        "type", "actions", "elements", "type", "button",
		                                        "text", "type", "plain_text", "text", "View run",
		                                        "url", url, "action_id", "gradwatch_view_run"));
	if (!ctx.err)
		json_array_append_new(blocks, json_pack("{s:s, s:[o]}", "type", "context", "elements",
		                                        mrkdwn(ctx.p)));
	json_t *root = t.err ? NULL : json_pack("{s:s, s:o}", "text", t.p, "blocks", blocks);
	if (!root)
		json_decref(blocks);
	bool oom = t.err || sum.err || ev.err || why.err || ctx.err;
	gw_buf_free(&t);
	gw_buf_free(&sum);
	gw_buf_free(&ev);
	gw_buf_free(&why);
	gw_buf_free(&ctx);
	(void)s;
	if (oom) {
		json_decref(root);
		root = NULL;
	}
	return gw__sink_dump(root, JSON_REAL_PRECISION(10), body, len);
}

const struct gw_sink_type gw_sink_slack = {
	.name = "slack",
	.format = slack_format,
	.default_group_wait_ms = 0,
	.default_repeat_ms = 4 * 3600 * 1000ull,
	.default_rate_count = 20,
	.default_rate_per_ms = 60000,
};
