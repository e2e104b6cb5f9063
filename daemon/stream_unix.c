/*
 * The Unix socket's file (stream_unix.h): the socket systemd passed, the
 * probe of a socket file left behind (never blocking), and the bind that
 * leaves the file to gw_server_stop, which removes only its own inode.
 */
#include "stream_unix.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The listening Unix stream socket systemd passed (socket activation:
 * LISTEN_PID is us, LISTEN_FDS >= 1, the first is fd 3), or -1. */
int gw__stream_activated_socket(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	if (!pid || !fds || strtol(pid, NULL, 10) != (long)getpid() || strtol(fds, NULL, 10) < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	int fd = 3, type = 0, listening = 0;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss), tl = sizeof(type), ll = sizeof(listening);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || ss.ss_family != AF_UNIX ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) < 0 || !listening) {
		gw_log_warn("systemd passed fd 3, but it is not a listening Unix stream socket; ignoring it");
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

/* A socket file left by a daemon that was killed is removed; one that a
 * live daemon listens on is not (-EADDRINUSE): a second instance must never
 * take the first one's socket away.  The probe does not block: a live
 * daemon whose backlog is full answers EAGAIN, which is "in use" too (a
 * blocking connect waited there for as long as the backlog stayed full). */
int gw__stream_remove_stale_socket(const char *path, char *err, size_t errlen)
{
	struct stat st;
	/* a missing directory was said at start-up (gw_cfg_check_dirs): libuv
	 * would call it "permission denied" */
	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return 0;   /* uv_pipe_bind reports it */
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return gw_errf(err, errlen, -errno, "unix socket %s: %s", path, strerror(errno));
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	close(fd);
	if (rc == 0 || e == EAGAIN)
		return gw_errf(err, errlen, -EADDRINUSE, "unix socket %s: another process is listening on "
		               "it (a second gradwatchd?); not taking it over", path);
	if (e == ECONNREFUSED) {
		gw_log_info("removing the stale socket %s (nobody listens on it)", path);
		unlink(path);
	}
	return 0;
}

/* A Unix socket bound at path: the fd, or a negative errno (as libuv's).
 * Bound here rather than with uv_pipe_bind, which unlinks the path when
 * the handle closes, whoever's file it is by then: gw_server_stop removes
 * the file only while it is the one bound here. */
int gw__stream_bind_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}
