/*
 * client_http: the request, address, token and option value helpers of the
 * gradwatch subcommands that talk to gradwatchd (see client_http.h).
 * libcurl's easy interface: these commands do one request at a time and
 * have nothing else to do meanwhile.
 */
#include "client_http.h"

#include "cli.h"
#include "config.h"

#include "gw_config.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RETRY_AFTER_S 60

static size_t cb_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	return gw_buf_add(ud, ptr, size * nmemb) < 0 ? 0 : size * nmemb;
}

/* Append a header line to *h; false when out of memory (*h is kept whole:
 * curl_slist_append returns NULL and leaves the list as it was). */
static bool add_header(struct curl_slist **h, const char *line)
{
	struct curl_slist *t = curl_slist_append(*h, line);
	if (!t)
		return false;
	*h = t;
	return true;
}

void gw__client_default_url(const struct gw_cfg *cfg, char *out, size_t n)
{
	const char *env = getenv("GRADWATCH_URL");
	if (env && *env) {
		gw_strlcpy(out, env, n);
	} else if (strchr(cfg->http.host, ':')) {
		snprintf(out, n, "http://[%s]:%d", cfg->http.host, cfg->http.port);
	} else {
		snprintf(out, n, "http://%s:%d", cfg->http.host, cfg->http.port);
	}
	size_t len = strlen(out);
	while (len && out[len - 1] == '/')
		out[--len] = '\0';
}

int gw__client_check_url(const char *prog, char *base)
{
	if (strncmp(base, "http://", 7) && strncmp(base, "https://", 8))
		return gw_cli_usage_error(prog, "--url / $GRADWATCH_URL must start with http:// or https://:", base);
	size_t len = strlen(base);
	while (len && base[len - 1] == '/')
		base[--len] = '\0';
	const char *path = strchr(strstr(base, "://") + 3, '/');
	if (path && (!strncmp(path, "/v1/", 4) || !strcmp(path, "/v1") || !strcmp(path, "/healthz")))
		return gw_cli_usage_error(prog, "--url / $GRADWATCH_URL is the daemon's address "
		                          "(http://HOST:PORT), not one of its endpoints:", base);
	return 0;
}

void gw__http_request(const struct gw__http_opts *o, const char *url, const char *body,
                      size_t blen, const char *idem_key, struct gw__http_answer *a)
{
	a->status = -ENOMEM;
	a->retry_after_s = -1;
	gw_buf_reset(&a->body);
	a->err[0] = '\0';
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(a->err, sizeof(a->err), "out of memory");
		return;
	}
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &a->body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, GW_MIN(o->timeout_ms, 10000L));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "gradwatch/" GW_VERSION);
	struct curl_slist *hdr = NULL;
	char line[160];
	bool ok = true;
	if (o->token) {
		size_t n = strlen(o->token) + 32;
		char *auth = malloc(n);
		if (auth)
			snprintf(auth, n, "Authorization: Bearer %s", o->token);
		ok = auth && add_header(&hdr, auth);
		free(auth);
	}
	if (body) {
		ok = ok && add_header(&hdr, "Content-Type: application/x-ndjson") &&
		     add_header(&hdr, "Expect:");
		if (idem_key) {
			snprintf(line, sizeof(line), "Idempotency-Key: %s", idem_key);
			ok = ok && add_header(&hdr, line);
		}
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
	}
	if (o->method && !body && strcmp(o->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	} else if (o->method) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, o->method);
	}
	if (!ok) {
		/* without its token or its key the request would be another one
		 * (a 401, or a retry stored twice): none at all */
		snprintf(a->err, sizeof(a->err), "out of memory");
		curl_slist_free_all(hdr);
		curl_easy_cleanup(h);
		return;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	CURLcode rc = curl_easy_perform(h);
	if (rc == CURLE_OK) {
		curl_off_t ra = -1;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
		if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra >= 0)
			a->retry_after_s = ra > MAX_RETRY_AFTER_S ? MAX_RETRY_AFTER_S : (long)ra;
	} else {
		snprintf(a->err, sizeof(a->err), "%s: %s", url, cerr[0] ? cerr : curl_easy_strerror(rc));
		switch (rc) {
		case CURLE_OPERATION_TIMEDOUT:
			a->status = -ETIMEDOUT;
			snprintf(a->err, sizeof(a->err), "%s: no answer within %.3g s (--timeout)", url,
			         o->timeout_ms / 1000.0);
			break;
		case CURLE_COULDNT_CONNECT:
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_RESOLVE_PROXY:
			a->status = -ECONNREFUSED;
			break;
		case CURLE_WEIRD_SERVER_REPLY:
		case CURLE_UNSUPPORTED_PROTOCOL:
			if (rc == CURLE_WEIRD_SERVER_REPLY || strstr(a->err, "HTTP/0.9")) {
				/* something answered, not in HTTP: most likely the
				 * NDJSON port given for the HTTP one */
				size_t n = strlen(a->err);
				snprintf(a->err + n, sizeof(a->err) - n, " (the answer is not HTTP: is this "
				         "gradwatchd's NDJSON port, TCP %d? its HTTP API listens on %d by default)",
				         GW_DEFAULT_PORT, GW_DEFAULT_HTTP_PORT);
			}
			/* fall through */
		case CURLE_URL_MALFORMAT:
			a->status = -EINVAL;
			break;
		default:
			a->status = -EIO;
			break;
		}
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
}

const char *gw__http_error_text(json_t *j, const struct gw_buf *b)
{
	const char *e = json_string_value(json_object_get(j, "error"));
	return e ? e : b->len ? b->p : "(no body)";
}

int gw__http_json(const char *prog, const struct gw__http_opts *o, const char *url,
                  const char *body, const char *need, const char *down_hint, json_t **out)
{
	struct gw__http_answer a = {0};
	*out = NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	gw__http_request(o, url, body, body ? strlen(body) : 0, NULL, &a);
	curl_global_cleanup();
	if (a.status < 0) {
		fprintf(stderr, "%s: %s%s\n", prog, a.err, a.status == -ECONNREFUSED ? down_hint : "");
		gw_buf_free(&a.body);
		return 2;
	}
	json_t *j = json_loads(a.body.p ? a.body.p : "", 0, NULL);
	if (a.status != 200 || !j) {
		char hint[96] = "";
		if (a.status == 401 && o->token)
			snprintf(hint, sizeof(hint), " (the token in $GRADWATCH_TOKEN was refused)");
		else if ((a.status == 401 || a.status == 403) && !o->token)
			snprintf(hint, sizeof(hint), " (set $GRADWATCH_TOKEN%s)", need);
		fprintf(stderr, "%s: the daemon answered %ld: %s%s\n", prog, a.status,
		        gw__http_error_text(j, &a.body), hint);
		json_decref(j);
		gw_buf_free(&a.body);
		return 2;
	}
	gw_buf_free(&a.body);
	*out = j;
	return 0;
}

int gw__client_parse_seconds(const char *s, long *ms)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 86400)
		return -EINVAL;
	*ms = (long)(v * 1000.0 + 0.5);
	if (*ms < 1)
		*ms = 1;
	return 0;
}

int gw__client_parse_count(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

const char *gw__client_token(void)
{
	const char *t = getenv("GRADWATCH_TOKEN");
	return t && *t ? t : NULL;
}
