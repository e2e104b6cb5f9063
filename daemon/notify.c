/*
 * sd_notify without libsystemd: one datagram to $NOTIFY_SOCKET (a path or
 * an abstract socket starting with '@'), as systemd's protocol describes.
 */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int gw_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	if (n >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	int rc = w < 0 ? -errno : 0;
	close(fd);
	return rc;
}

uint64_t gw_notify_watchdog_usec(void)
{
	const char *s = getenv("WATCHDOG_USEC");
	if (!s || !*s)
		return 0;
	const char *pid = getenv("WATCHDOG_PID");
	if (pid && *pid && strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	return strtoull(s, NULL, 10);
}
