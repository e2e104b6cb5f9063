/*
 * auth: bearer tokens for the HTTP API and the TCP/UDP line transports
 * (docs/configuration.md, "auth").
 *
 * Two scopes: a read token may read (GET routes, /metrics, the resume
 * gate); an ingest token may also write (POST /v1/ingest, the TCP and UDP
 * line transports, DELETE).  An ingest token may be limited to runs whose
 * names match a glob, so a job's token cannot write into another team's
 * runs.  Tokens come from files (one per line: TOKEN [RUN-GLOB]; "#"
 * comments), a relative name found in $CREDENTIALS_DIRECTORY first
 * (systemd LoadCredential=).  Without any token file, auth is off and only
 * loopback binds are allowed (config.c).  The Unix socket is guarded by its
 * file mode and group, not by tokens.
 */
#ifndef GW_AUTH_H
#define GW_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum gw_scope {
	GW_SCOPE_READ,     /* the default of a route */
	GW_SCOPE_INGEST,
	GW_SCOPE_OPEN,     /* no token needed (GET /healthz) */
};

#define GW_AUTH_TOKEN_MIN 16   /* bytes; shorter tokens are refused at load */
#define GW_AUTH_TOKEN_MAX 256

struct gw_token;
struct gw_auth;

/* Load the tokens the "auth" object names (NULL or empty: auth off; *out is
 * then NULL and every check passes).  Returns 0 or a negative errno with a
 * message (file, line) in err. */
int gw_auth_load(const json_t *cfg, struct gw_auth **out, char *err, size_t errlen);
void gw_auth_free(struct gw_auth *a);

/* Check "config.auth" without reading the files (for --check-config and
 * the loopback rule): -EINVAL with a message for unknown keys or types. */
int gw_auth_check_config(const json_t *cfg, char *err, size_t errlen);

/* The token `tok` (len bytes) if it grants `need`, else NULL; *why says
 * whether it was unknown (401) or lacks the scope (403).  Constant time in
 * the token's bytes.  With auth off, returns a static token that allows
 * everything. */
const struct gw_token *gw_auth_check(const struct gw_auth *a, const char *tok, size_t len,
                                     enum gw_scope need, int *status);

/* May this token write into run `run`? */
bool gw_auth_allows_run(const struct gw_token *t, const char *run);
/* The glob of runs the token is limited to (borrowed), or NULL when it may
 * write every run (also with auth off). */
const char *gw_auth_runs_glob(const struct gw_token *t);

bool gw_auth_enabled(const struct gw_auth *a);

/* The token of an NDJSON auth line {"auth": "TOKEN"} (a TCP connection's
 * first line, a datagram's first line) if it grants ingest, else NULL with
 * a message in why. */
const struct gw_token *gw_auth_line(const struct gw_auth *a, const char *line, size_t len,
                                    char *why, size_t whylen);

#endif
