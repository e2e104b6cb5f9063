/*
 * sink: where alerts go, and how each kind of receiver wants them.
 *
 * A sink is one entry of the configuration's "sinks" array (docs/alerts.md):
 * a type (slack, webhook, alertmanager), a URL and maybe a signing secret
 * (each taken from the file, an environment variable or a file, systemd
 * credentials style), filters (lowest severity, detector globs, run globs)
 * and delivery knobs (timeouts, group wait, repeat interval, rate limit,
 * retry back-off).  gw_sink_parse() validates the whole array up front so a
 * typo stops the daemon at start-up with a message naming the key.
 *
 * Each type is one `const struct gw_sink_type` (a small vtable, one file
 * per type) whose format() turns one message about one alert into the
 * request body that receiver documents.  Formatters are pure: no I/O, no
 * clock, everything comes in struct gw_sink_msg, so unit tests can pin
 * their output.
 */
#ifndef GW_SINK_H
#define GW_SINK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_SINK_NAME_MAX 64

/* What a formatter is asked to say. */
struct gw_sink_msg {
	const json_t *alert;       /* the alert snapshot (docs/alerts.md, "alert object") */
	const char *event;         /* "open", "update", "resolve" or "repeat" */
	int64_t version;           /* the alert's version this message is about */
	const char *delivery_id;   /* alert id + "-v" + version (+ "-r" + n for repeats) */
	double now;                /* wall clock of this attempt */
	/* alertmanager: the snapshot that was firing before when its labels
	 * differ (the severity rose), so it is ended in the same request; NULL
	 * otherwise */
	const json_t *previous;
	double resend_s;           /* alertmanager: resend interval, for endsAt */
	const char *api_base;      /* where gradwatchd's pages are: public_url, else
	                              "http://host:port" of its listener; or NULL */
};

struct gw_sink_cfg;

struct gw_sink_type {
	const char *name;
	/* Path appended to the configured URL, or NULL. */
	const char *path_suffix;
	/* Build the request body (heap, NUL-terminated; caller frees).
	 * Returns 0 or -ENOMEM. */
	int (*format)(const struct gw_sink_cfg *s, const struct gw_sink_msg *m, char **body,
	              size_t *len);
	/* Defaults for this type, applied before the configuration's keys. */
	uint64_t default_group_wait_ms, default_repeat_ms;
	unsigned default_rate_count;
	uint64_t default_rate_per_ms;
	bool may_sign;             /* accepts a secret */
};

extern const struct gw_sink_type gw_sink_slack;
extern const struct gw_sink_type gw_sink_webhook;
extern const struct gw_sink_type gw_sink_alertmanager;

struct gw_sink_cfg {
	char name[GW_SINK_NAME_MAX];
	const struct gw_sink_type *type;
	char *url;                 /* full request URL; may hold a token: never log it */
	char url_log[256];         /* the same through gw_log_redact_url() */
	char *secret;              /* HMAC key, NULL if none */
	size_t secret_len;

	int min_severity;          /* enum gw_severity */
	char **detectors;          /* globs; none = every detector */
	size_t n_detectors;
	char **runs;               /* globs; none = every run */
	size_t n_runs;

	unsigned connect_timeout_ms, timeout_ms;
	uint64_t group_wait_ms;    /* hold a new event this long; later events of the
	                            * same alert in that window replace it */
	uint64_t repeat_ms;        /* re-send an open alert this often (0: never);
	                            * Alertmanager's resend interval */
	unsigned rate_count;       /* at most rate_count requests per rate_per_ms */
	uint64_t rate_per_ms;      /* 0: no rate limit */
	unsigned max_in_flight;
	uint64_t retry_initial_ms, retry_max_ms;
	uint64_t give_up_ms;       /* stop retrying an event this old (0: never) */
	bool tls_verify;
	char *ca_file;
};

/* Parse and validate the "sinks" array.  Secrets are read now (files,
 * environment).  On success *out is an array of *n sinks (free with
 * gw_sink_free_all).  On error returns a negative errno and a message in
 * err that names the sink and key. */
int gw_sink_parse(const json_t *sinks, struct gw_sink_cfg **out, size_t *n, char *err,
                  size_t errlen);
void gw_sink_free_all(struct gw_sink_cfg *s, size_t n);

/* Does the alert (its run, detector, severity) pass the sink's filters? */
bool gw_sink_matches(const struct gw_sink_cfg *s, const char *run, const char *detector,
                     int severity);


/* HMAC-SHA256 of body under key, as 64 lowercase hex digits + NUL in
 * hex[65] (OpenSSL's libcrypto).  Returns 0 or -EIO. */
int gw_sink_hmac_sha256_hex(const void *key, size_t key_len, const void *body, size_t len,
                            char hex[65]);

/* Formatters' common end: dump root (reference taken; NULL allowed) as
 * compact JSON into *body / *len.  Returns 0 or -ENOMEM. */
int gw__sink_dump(json_t *root, size_t flags, char **body, size_t *len);

/* Links into gradwatchd's pages for an alert snapshot: its page
 * ({api_base}/alerts/{id}, which opens the run at the alert's step) and
 * its run's page ({api_base}/runs/{run}), path parts percent-encoded.
 * Returns 0, or -ENOENT when there is no api_base (out is ""). */
int gw__sink_alert_url(const struct gw_sink_msg *m, const json_t *alert, char *out, size_t cap);
int gw__sink_run_url(const struct gw_sink_msg *m, const json_t *alert, char *out, size_t cap);

/* This machine's host name (cached; "" if unknown), for the message. */
const char *gw__sink_host(void);

/* Format a wall-clock time as RFC 3339 UTC with milliseconds into buf[32]. */
void gw_sink_rfc3339(double t, char buf[32]);

#endif
