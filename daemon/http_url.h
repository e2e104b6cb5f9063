/*
 * http_url: the parts of a request URL the HTTP API reads: percent-decoding
 * (of a path's {run} part and of query values) and query parameters.  Pure
 * functions over the bytes given, below the transport (http.c) and the
 * routes that read a query (api.c, retention.c, web.c).
 */
#ifndef GW_HTTP_URL_H
#define GW_HTTP_URL_H

#include <stdbool.h>
#include <stddef.h>

/* Percent-decode s[0..n) into out (size cap, NUL-terminated).  '+' is a
 * space when plus_is_space (a query string, form encoding) and itself
 * otherwise (a path: /runs/a+b is the run "a+b").  Returns the decoded
 * length, or -1 on a bad or truncated escape, an encoded NUL, or output
 * that does not fit. */
int gw_http_pct_decode(const char *s, size_t n, char *out, size_t cap, bool plus_is_space);

/* Decoded value of query parameter `name` into out: 1 present, 0 absent,
 * -1 bad escape or too long. */
int gw_http_query_param(const char *query, size_t qlen, const char *name, char *out,
                        size_t cap);

/* An integer query parameter from min to max: 1 set (*out), 0 absent, -1
 * bad (the message, naming it, in err). */
int gw_http_int_param(const char *qs, size_t qlen, const char *name, long long min,
                      long long max, long long *out, char *err, size_t errlen);

#endif
