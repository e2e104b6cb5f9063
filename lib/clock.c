/*
 * The clocks of clock.h: clock_gettime(CLOCK_REALTIME) and
 * clock_gettime(CLOCK_MONOTONIC).
 */
#include "clock.h"

#include <time.h>

double gw_wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t gw_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
