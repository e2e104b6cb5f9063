/*
 * notify: sd_notify without libsystemd (notify.c): READY=1, RELOADING=1,
 * STOPPING=1 and the watchdog's WATCHDOG=1 to $NOTIFY_SOCKET.
 */
#ifndef GW_NOTIFY_H
#define GW_NOTIFY_H

#include <stdint.h>

/* Send "state" to $NOTIFY_SOCKET if set; no-op (0) else.  0 or a negative
 * errno. */
int gw_notify(const char *state);
/* Watchdog interval from $WATCHDOG_USEC (0 if not asked for). */
uint64_t gw_notify_watchdog_usec(void);

#endif
