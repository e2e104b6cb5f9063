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

/* Wall clock, Unix seconds with sub-second part: the system's at the first
 * call, advanced since by the monotonic (boot-time) clock, so that a step
 * of the system clock while the process runs moves no age, stall or
 * recorded time (clock.c). */
double gw_wall_now(void);

/* How far the system wall clock moved against gw_wall_now since this was
 * last non-zero: 0 when less than GW_CLOCK_JUMP_S (slewing, jitter), else
 * the step in seconds (positive: forward).  Call on a tick. */
#define GW_CLOCK_JUMP_S 2.0
double gw_clock_jump(void);

/* Monotonic clock in milliseconds. */
uint64_t gw_mono_ms(void);

/* *ts = now + ms on CLOCK_MONOTONIC: the deadline of a timed wait on a
 * condition variable made with pthread_condattr_setclock(CLOCK_MONOTONIC),
 * so a step of the wall clock neither stretches nor cuts the wait. */
struct timespec;
void gw_mono_deadline(struct timespec *ts, uint64_t ms);

#endif
