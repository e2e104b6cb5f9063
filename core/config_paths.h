/*
 * config_paths: the directories of the database and the socket, below the
 * configuration (config.c computes its defaults with them and wraps the
 * checks for a whole struct gw_cfg: gw_cfg_make_dirs, gw_cfg_check_dirs,
 * gw_cfg_disk_floor).  Paths in, heap strings or a verdict out; only stat,
 * access, statvfs and mkdir touch the filesystem.
 */
#ifndef GW_CONFIG_PATHS_H
#define GW_CONFIG_PATHS_H

#include <stddef.h>
#include <stdint.h>

/* Where the daemon keeps its files, as the configuration says. */
struct gw_cfg_paths {
	const char *state_dir;      /* may be NULL */
	const char *db_path;
	const char *socket_path;    /* NULL or "": no socket */
	unsigned min_free_mb;       /* health.min_free_mb (the warning's floor) */
};

/* The default state and runtime directories (heap strings): systemd's
 * $STATE_DIRECTORY/$RUNTIME_DIRECTORY; else $XDG_STATE_HOME/gradwatch
 * (or $HOME/.local/state/gradwatch, or "." without HOME) and
 * $XDG_RUNTIME_DIR/gradwatch (or the state directory).  0 or -ENOMEM. */
int gw_cfg_paths_default(char **state, char **runtime);

/* name under dir ("" or "." : name itself; an absolute name as it is),
 * newly allocated, or NULL. */
char *gw_cfg_paths_join(const char *dir, const char *name);

/* Create the default directories that the database and socket lie in (with
 * parents, mode 0700) when missing; a directory given by hand is not
 * created.  0, or a negative errno with the reason in err. */
int gw_cfg_paths_make(const struct gw_cfg_paths *p, char *err, size_t errlen);

/* The directories the daemon needs, before it opens anything: the
 * database's directory exists -- or is a default one the start creates
 * under a writable parent --, is a directory, is writable by this user, on
 * a writable filesystem with at least GW_CFG_MIN_FREE bytes free; the
 * socket's directory exists.  Returns 0, or a negative errno with a
 * message naming the directory and what is wrong (err).  warn (may be
 * NULL) gets a warning, or "": less free space than gw_cfg_paths_floor.
 * Nothing is created. */
#define GW_CFG_MIN_FREE (1024 * 1024)
int gw_cfg_paths_check(const struct gw_cfg_paths *p, char *err, size_t errlen, char *warn,
                       size_t warnlen);

/* The free space below which /healthz says degraded (disk_low): the
 * smaller of min_free_mb and 5 % of the filesystem's size. */
uint64_t gw_cfg_paths_floor(unsigned min_free_mb, uint64_t fs_size);

#endif
