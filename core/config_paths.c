/*
 * The default directories of the database and the socket (config_paths.h):
 * systemd's $STATE_DIRECTORY / $RUNTIME_DIRECTORY when it set them;
 * otherwise the XDG base directories, $XDG_STATE_HOME/gradwatch (default
 * ~/.local/state/gradwatch) and $XDG_RUNTIME_DIR/gradwatch, falling back
 * to the state directory for the socket (not /tmp: a per-user directory
 * there could be taken over by another user first).  gw_cfg_defaults()
 * only computes them; gradwatchd creates them (mode 0700) when it starts.
 *
 * gw_cfg_paths_check is what --check-config and the start say about those
 * directories before anything is opened: the database's directory exists
 * (or is a default one the start creates, under a writable parent), is a
 * directory, is writable by this user, and its filesystem is writable with
 * at least GW_CFG_MIN_FREE bytes free (below the /healthz floor,
 * gw_cfg_paths_floor, a warning); the database file and its -wal and
 * -shm files, where they exist, are regular files this user can write
 * (a database of mode 444 opened fine and then failed every commit with
 * SQLITE_READONLY while /healthz said ok); the socket's directory exists.
 */
#include "config_paths.h"

#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

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

int gw_cfg_paths_default(char **state, char **runtime)
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

int gw_cfg_paths_make(const struct gw_cfg_paths *c, char *err, size_t errlen)
{
	char *state, *runtime;
	if (gw_cfg_paths_default(&state, &runtime) < 0)
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

char *gw_cfg_paths_join(const char *dir, const char *name)
{
	char *p = NULL;
	if (name[0] == '/' || !dir || !*dir || strcmp(dir, ".") == 0)
		return strdup(name);
	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* ---- checking the directories -------------------------------------------------------- */

/* dirname of path into out ("." for a bare name). */
static void dir_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		gw_strlcpy(out, ".", len);
	else if (slash == path)
		gw_strlcpy(out, "/", len);
	else
		gw_strlcpy(out, path, GW_MIN(len, (size_t)(slash - path) + 1));
}

/* Is dir one of the default directories the start creates? */
static bool created_at_start(const char *dir)
{
	char *state, *runtime;
	if (gw_cfg_paths_default(&state, &runtime) < 0)
		return false;
	bool yes = strcmp(dir, ".") && (!strcmp(dir, state) || !strcmp(dir, runtime));
	free(state);
	free(runtime);
	return yes;
}

/* A directory that must exist, or be created at start under a writable
 * parent; `what` names it in the message ("state_dir", ...). */
static int check_dir(const struct gw_cfg_paths *c, const char *what, const char *dir, bool need_write,
                     char *err, size_t errlen, char *warn, size_t warnlen)
{
	struct stat st;
	if (stat(dir, &st) < 0) {
		int e = errno;
		if (e == ENOENT && !created_at_start(dir))
			return gw_errf(err, errlen, -e, "%s %s does not exist: a directory given with "
			               "--state-dir, --db, --socket or the configuration must exist (create "
			               "it first)", what, dir);
		if (e != ENOENT && (e != ENOTDIR || !created_at_start(dir)))
			return gw_errf(err, errlen, -e, "%s %s: %s", what, dir, strerror(e));
		/* created at start: its nearest existing parent must allow it */
		char up[PATH_MAX];
		gw_strlcpy(up, dir, sizeof(up));
		for (;;) {
			char parent[PATH_MAX];
			dir_of(up, parent, sizeof(parent));
			if (stat(parent, &st) == 0) {
				if (!S_ISDIR(st.st_mode) || access(parent, W_OK | X_OK) < 0)
					return gw_errf(err, errlen, -EACCES, "%s %s cannot be created: %s is %s",
					               what, dir, parent, S_ISDIR(st.st_mode)
					               ? "not writable by this user" : "not a directory");
				return 0;
			}
			if ((errno != ENOENT && errno != ENOTDIR) || !strcmp(parent, up))
				return gw_errf(err, errlen, -errno, "%s %s cannot be created: %s: %s", what,
				               dir, parent, strerror(errno));
			gw_strlcpy(up, parent, sizeof(up));
		}
	}
	if (!S_ISDIR(st.st_mode))
		return gw_errf(err, errlen, -ENOTDIR, "%s %s: not a directory", what, dir);
	if (need_write && access(dir, W_OK | X_OK) < 0)
		return gw_errf(err, errlen, -errno, "%s %s: not writable by this user (uid %u): %s", what,
		               dir, (unsigned)geteuid(), strerror(errno));
	if (!need_write)
		return 0;
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0) {
		if (vfs.f_flag & ST_RDONLY)
			return gw_errf(err, errlen, -EROFS, "%s %s: on a read-only filesystem", what, dir);
		uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		if (avail < GW_CFG_MIN_FREE)
			return gw_errf(err, errlen, -ENOSPC, "%s %s: its filesystem has %" PRIu64 " KiB free, "
			               "less than the %d KiB the database needs to start", what, dir,
			               avail / 1024, GW_CFG_MIN_FREE / 1024);
		uint64_t size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
		if (warn && avail < gw_cfg_paths_floor(c->min_free_mb, size))
			snprintf(warn, warnlen, "%s %s: %" PRIu64 " MB free on its filesystem of %" PRIu64
			         " MB, below health.min_free_mb %u and 5%% of its size: /healthz says "
			         "degraded (disk_low)", what, dir, avail >> 20, size >> 20,
			         c->min_free_mb);
	}
	return 0;
}

uint64_t gw_cfg_paths_floor(unsigned min_free_mb, uint64_t fs_size)
{
	return GW_MIN((uint64_t)min_free_mb << 20, fs_size / 20);
}

/* The database file and its WAL and shared-memory files, where they
 * exist: regular files this user may write. */
static int check_db_files(const char *db, char *err, size_t errlen)
{
	static const char *const suffix[] = {"", "-wal", "-shm"};
	for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		char p[PATH_MAX];
		struct stat st;
		snprintf(p, sizeof(p), "%s%s", db, suffix[i]);
		if (stat(p, &st) < 0) {
			if (errno == ENOENT)
				continue;
			return gw_errf(err, errlen, -errno, "the database file %s: %s", p, strerror(errno));
		}
		if (S_ISDIR(st.st_mode))
			continue;   /* the store says so, with what to do (name a file in it) */
		if (!S_ISREG(st.st_mode))
			return gw_errf(err, errlen, -EINVAL, "the database file %s is not a regular file", p);
		if (access(p, R_OK | W_OK) < 0)
			return gw_errf(err, errlen, -errno, "the database file %s (mode %04o, owner uid %u) "
			               "is not writable by this user (uid %u): %s; every commit would fail "
			               "(give the daemon's user write access, or start it as the owner)", p,
			               (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			               (unsigned)geteuid(), strerror(errno));
	}
	return 0;
}

int gw_cfg_paths_check(const struct gw_cfg_paths *c, char *err, size_t errlen, char *warn,
                       size_t warnlen)
{
	if (warn && warnlen)
		warn[0] = '\0';
	char dir[PATH_MAX];
	dir_of(c->db_path, dir, sizeof(dir));
	/* the database's directory is state_dir unless "database" put it
	 * elsewhere: name it as the configuration does */
	bool is_state = c->state_dir && !strcmp(dir, c->state_dir);
	int rc = check_dir(c, is_state ? "state_dir: the database's directory"
	                                : "the database's directory", dir, true, err, errlen, warn,
	                   warnlen);
	if (rc == 0)
		rc = check_db_files(c->db_path, err, errlen);
	if (rc < 0 || !c->socket_path || !*c->socket_path)
		return rc;
	dir_of(c->socket_path, dir, sizeof(dir));
	return check_dir(c, "the socket's directory", dir, false, err, errlen, NULL, 0);
}
