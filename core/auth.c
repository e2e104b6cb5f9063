/*
 * auth: bearer tokens (see auth.h).  A handful of tokens is expected, so a
 * check compares the presented token with every known one in constant time
 * (no early exit on the first differing byte or the first match).
 */
#include "auth.h"

#include "buf.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a token file holds at most this many bytes (4,096 tokens of 256) */
#define AUTH_FILE_MAX (1024 * 1024)

struct gw_token {
	char tok[GW_AUTH_TOKEN_MAX + 1];
	size_t len;
	enum gw_scope scope;    /* READ or INGEST */
	char *runs;             /* glob of runs an ingest token may write, NULL: all */
};

struct gw_auth {
	struct gw_token *t;
	size_t n, cap;
};

static const struct gw_token open_token = {.scope = GW_SCOPE_INGEST};

int gw_auth_check_config(const json_t *cfg, char *err, size_t errlen)
{
	if (!cfg)
		return 0;
	if (!json_is_object(cfg))
		return gw_errf(err, errlen, -EINVAL, "auth must be an object");
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)cfg, key, v) {
		if (strcmp(key, "ingest_tokens_file") && strcmp(key, "read_tokens_file"))
			return gw_errf(err, errlen, -EINVAL,
			               "auth: unknown key \"%s\" (ingest_tokens_file, read_tokens_file)", key);
		if (!json_is_string(v) || !json_string_length(v))
			return gw_errf(err, errlen, -EINVAL, "auth.%s must be a file name", key);
	}
	return 0;
}

static int load_file(struct gw_auth *a, const char *name, enum gw_scope scope, char *err,
                     size_t errlen)
{
	char *path, *text;
	size_t len;
	if (gw_credential_path(name, &path) < 0)
		return -ENOMEM;
	int rc = gw_read_file(path, AUTH_FILE_MAX, &text, &len);
	if (rc == -EINVAL) {
		gw_errf(err, errlen, rc, "auth: %s is not a regular file (a directory, a pipe or a "
		        "device): not a token file", path);
		free(path);
		return rc;
	}
	if (rc == -EFBIG) {
		gw_errf(err, errlen, rc, "auth: %s is longer than %d bytes: not a token file", path,
		        AUTH_FILE_MAX);
		free(path);
		return rc;
	}
	if (rc < 0) {
		gw_errf(err, errlen, rc, "auth: cannot read %s: %s", path, strerror(-rc));
		free(path);
		return rc;
	}
	unsigned lineno = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		char *tok = strtok(line, " \t\r");
		if (!tok || tok[0] == '#')
			continue;
		char *glob = strtok(NULL, " \t\r");
		char *extra = strtok(NULL, " \t\r");
		size_t tl = strlen(tok);
		if (extra || tl < GW_AUTH_TOKEN_MIN || tl > GW_AUTH_TOKEN_MAX ||
		    (glob && scope != GW_SCOPE_INGEST)) {
			rc = gw_errf(err, errlen, -EINVAL, "auth: %s:%u: %s", path, lineno,
			             extra ? "a line is TOKEN [RUN-GLOB]"
			             : glob && scope != GW_SCOPE_INGEST ? "read tokens take no run glob"
			             : "a token has 16 to 256 characters");
			break;
		}
		if (gw_grow((void **)&a->t, &a->cap, a->n + 1, sizeof(*a->t)) < 0) {
			rc = -ENOMEM;
			break;
		}
		struct gw_token *t = &a->t[a->n++];
		memset(t, 0, sizeof(*t));
		memcpy(t->tok, tok, tl);
		t->len = tl;
		t->scope = scope;
		t->runs = glob ? strdup(glob) : NULL;
	}
	free(text);
	free(path);
	return rc;
}

int gw_auth_load(const json_t *cfg, struct gw_auth **out, char *err, size_t errlen)
{
	*out = NULL;
	int rc = gw_auth_check_config(cfg, err, errlen);
	if (rc < 0 || !cfg || !json_object_size(cfg))
		return rc;
	struct gw_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	const char *f;
	if ((f = json_string_value(json_object_get(cfg, "ingest_tokens_file"))) &&
	    (rc = load_file(a, f, GW_SCOPE_INGEST, err, errlen)) < 0)
		goto fail;
	if ((f = json_string_value(json_object_get(cfg, "read_tokens_file"))) &&
	    (rc = load_file(a, f, GW_SCOPE_READ, err, errlen)) < 0)
		goto fail;
	if (!a->n) {
		rc = gw_errf(err, errlen, -EINVAL, "auth: the token files hold no token");
		goto fail;
	}
	*out = a;
	return 0;
fail:
	gw_auth_free(a);
	return rc;
}

void gw_auth_free(struct gw_auth *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->t[i].runs);
	free(a->t);
	free(a);
}

bool gw_auth_enabled(const struct gw_auth *a)
{
	return a && a->n;
}

/* 1 if the first len bytes of a and b are equal (and b is len long), in
 * time that depends on len only. */
static int same(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char diff = (unsigned char)(alen != blen);
	for (size_t i = 0; i < GW_AUTH_TOKEN_MAX; i++) {
		unsigned char x = i < alen ? (unsigned char)a[i] : 0;
		unsigned char y = i < blen ? (unsigned char)b[i] : 0;
		diff |= x ^ y;
	}
	return diff == 0;
}

const struct gw_token *gw_auth_check(const struct gw_auth *a, const char *tok, size_t len,
                                     enum gw_scope need, int *status)
{
	*status = 0;
	if (!gw_auth_enabled(a) || need == GW_SCOPE_OPEN)
		return &open_token;
	const struct gw_token *found = NULL;
	if (tok && len <= GW_AUTH_TOKEN_MAX)
		for (size_t i = 0; i < a->n; i++)
			if (same(tok, len, a->t[i].tok, a->t[i].len) && !found)
				found = &a->t[i];
	if (!found) {
		*status = 401;
		return NULL;
	}
	if (need == GW_SCOPE_INGEST && found->scope != GW_SCOPE_INGEST) {
		*status = 403;
		return NULL;
	}
	return found;
}

bool gw_auth_allows_run(const struct gw_token *t, const char *run)
{
	return !t || !t->runs || gw_glob_match(t->runs, run);
}

const char *gw_auth_runs_glob(const struct gw_token *t)
{
	return t ? t->runs : NULL;
}

const struct gw_token *gw_auth_line(const struct gw_auth *a, const char *line, size_t len,
                                    char *why, size_t whylen)
{
	json_error_t je;
	json_t *j = json_loadb(line, len, 0, &je);
	const char *tok = json_string_value(json_object_get(j, "auth"));
	int status = 401;
	const struct gw_token *t = NULL;
	if (!tok || json_object_size(j) != 1)
		gw_errf(why, whylen, -EACCES, "unauthorized: the first line must be {\"auth\": TOKEN}");
	else if (!(t = gw_auth_check(a, tok, strlen(tok), GW_SCOPE_INGEST, &status)))
		gw_errf(why, whylen, -EACCES, "%s", status == 403 ? "forbidden: a read token cannot write"
		                                                  : "unauthorized: unknown token");
	json_decref(j);
	return t;
}
