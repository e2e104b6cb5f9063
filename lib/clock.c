/*
 * The clocks of clock.h.  gw_mono_ms is CLOCK_MONOTONIC.  gw_wall_now is
 * the daemon's own wall clock: CLOCK_REALTIME read once, at the first
 * call, then advanced by CLOCK_BOOTTIME (monotonic, and counting a
 * suspend), so a step of the system clock while gradwatchd runs (NTP
 * setting a wrong clock right, an operator's `date -s`) moves neither the
 * age of a run nor a stall nor the times it records; gw_clock_jump tells
 * the daemon's tick that the system clock and ours parted, to log it.  A
 * restart takes the system's time again.
 */
#include "clock.h"

#include "fault.h"

#include <math.h>
#include <pthread.h>
#include <time.h>

/* Seconds added to CLOCK_REALTIME readings by a test hook (fault.h). */
static double fault_step;

static double system_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + fault_step;
}

static double boot_s(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pthread_once_t anchor_once = PTHREAD_ONCE_INIT;
static double anchor;          /* system wall - boot clock, at the first reading */
static double last_skew;       /* system wall - ours, when gw_clock_jump last said so */

static void set_anchor(void)
{
	anchor = system_wall() - boot_s();
}

double gw_wall_now(void)
{
	pthread_once(&anchor_once, set_anchor);
	return anchor + boot_s();
}

double gw_clock_jump(void)
{
	fault_step = gw_fault_clock_step();
	double skew = system_wall() - gw_wall_now();
	double jump = skew - last_skew;
	if (fabs(jump) < GW_CLOCK_JUMP_S)
		return 0;
	last_skew = skew;
	return jump;
}

void gw_mono_deadline(struct timespec *ts, uint64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

uint64_t gw_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
