/*
 * clock: the two clocks every module reads.  The wall clock (Unix seconds,
 * sub-second part) dates what a person or the database sees; the
 * monotonic one (milliseconds) measures intervals and deadlines.  A file
 * of its own below log.c and util.c: the logger's budget window reads the
 * monotonic clock, and util.c's invariant check logs, so neither may sit
 * on the other.  No allocation, no I/O.
 */
#ifndef GW_CLOCK_H
#define GW_CLOCK_H

#include <stdint.h>

/* Wall clock, Unix seconds with sub-second part. */
double gw_wall_now(void);

/* Monotonic clock in milliseconds. */
uint64_t gw_mono_ms(void);

#endif
