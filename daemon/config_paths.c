/*
 * The default directories of the database and the socket (config.h):
 * systemd's $STATE_DIRECTORY / $RUNTIME_DIRECTORY when it set them;
 * otherwise the XDG base directories, $XDG_STATE_HOME/gradwatch (default
 * ~/.local/state/gradwatch) and $XDG_RUNTIME_DIR/gradwatch, falling back
 * to the state directory for the socket (not /tmp: a per-user directory
 * there could be taken over by another user first).  gw_cfg_defaults()
 * only computes them; gradwatchd creates them (mode 0700) when it starts.
 */
#include "config.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* systemd may pass several colon-separated directories; use the first. */
static char *first_dir(const char *env)
{
	const char *v = getenv(env);
	if (!v || !*v)
		return NULL;
	const char *colon = strchr(v, ':');
	return colon ? strndup(v, (size_t)(colon - v)) : strdup(v);
}

/* $XDG_<env>/gradwatch, else $HOME/<home_rel>/gradwatch (when home_rel);
 * XDG wants absolute paths, so a relative one is ignored.  NULL: none. */
static char *xdg_dir(const char *env, const char *home_rel)
{
	const char *v = getenv(env), *home = getenv("HOME");
	char *p = NULL;
	if (v && v[0] == '/') {
		if (asprintf(&p, "%s/gradwatch", v) < 0)
			return NULL;
	} else if (home_rel && home && home[0] == '/') {
		if (asprintf(&p, "%s/%s/gradwatch", strcmp(home, "/") ? home : "", home_rel) < 0)
			return NULL;
	}
	return p;
}

int gw_cfg_default_dirs(char **state, char **runtime)
{
	*state = first_dir("STATE_DIRECTORY");
	*runtime = first_dir("RUNTIME_DIRECTORY");
	if (!*state) {
		/* not under systemd: the user's XDG directories */
		*state = xdg_dir("XDG_STATE_HOME", ".local/state");
		if (!*runtime)
			*runtime = xdg_dir("XDG_RUNTIME_DIR", NULL);
	}
	if (!*state)
		*state = strdup(".");
	if (!*runtime && *state)
		*runtime = strdup(*state);  /* no runtime directory: beside the database */
	if (!*state || !*runtime) {
		free(*state);
		free(*runtime);
		*state = *runtime = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* mkdir -p with mode for the components it creates. */
static int mkdirs(const char *dir, mode_t mode)
{
	char p[PATH_MAX];
	if (gw_strlcpy(p, dir, sizeof(p)) >= sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = c;
		if (!c)
			return 0;
	}
}

int gw_cfg_make_dirs(const struct gw_cfg *c, char *err, size_t errlen)
{
	char *state, *runtime;
	if (gw_cfg_default_dirs(&state, &runtime) < 0)
		return gw_errf(err, errlen, -ENOMEM, "out of memory");
	const char *dirs[] = {state, runtime};
	const char *paths[] = {c->db_path, c->socket_path};
	int rc = 0;
	for (size_t i = 0; i < 2 && rc == 0; i++) {
		size_t n = strlen(dirs[i]);
		/* only the default directories, and only when used: a path
		 * given by hand names a directory that must exist */
		if (!paths[i] || strcmp(dirs[i], ".") == 0 || strncmp(paths[i], dirs[i], n) ||
		    paths[i][n] != '/')
			continue;
		rc = mkdirs(dirs[i], 0700);
		if (rc < 0)
			rc = gw_errf(err, errlen, rc, "cannot create the directory %s: %s", dirs[i],
			             strerror(-rc));
	}
	free(state);
	free(runtime);
	return rc;
}

char *gw__cfg_path_join(const char *dir, const char *name)
{
	char *p = NULL;
	if (name[0] == '/' || !dir || !*dir || strcmp(dir, ".") == 0)
		return strdup(name);
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}
