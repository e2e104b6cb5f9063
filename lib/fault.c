/*
 * fault: the test hooks (see fault.h).  Everything that reads the
 * environment or kills is inside #if GW_FAULT_HOOKS: GW_FAULT_HOOKS comes
 * from gw_config.h (the build's -Dfault_hooks), unless the compiler was
 * given it (tests/unit/test_fault.c builds this file both ways).  It logs
 * nothing (the callers say which hook acts): clock.c reads the clock-step
 * hook, and the logger reads that clock, so fault.c sits below log.c.
 */
#include "fault.h"

#ifndef GW_FAULT_HOOKS
#include "gw_config.h"
#endif

#if GW_FAULT_HOOKS
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool gw_fault_hooks(void)
{
	return true;
}

const char *gw_fault_describe(void)
{
	return "test hooks: compiled in (-Dfault_hooks=true): GRADWATCH_FAULT_CRASH_COMMIT, "
	       "GRADWATCH_FAULT_CRASH_SHIP, GRADWATCH_FAULT_HOLD_READS and "
	       "GRADWATCH_FAULT_CLOCK_STEP act; a test build, not for production";
}

uint64_t gw_fault_crash_commit(void)
{
	const char *v = getenv("GRADWATCH_FAULT_CRASH_COMMIT");
	if (!v || !*v)
		return 0;
	return strtoull(v, NULL, 10);
}

uint64_t gw_fault_crash_ship(void)
{
	const char *v = getenv("GRADWATCH_FAULT_CRASH_SHIP");
	if (!v || !*v)
		return 0;
	return strtoull(v, NULL, 10);
}

void gw_fault_crash(void)
{
	kill(getpid(), SIGKILL);
}

double gw_fault_clock_step(void)
{
	const char *v = getenv("GRADWATCH_FAULT_CLOCK_STEP");
	FILE *f = v && *v ? fopen(v, "r") : NULL;
	double s = 0;
	if (f) {
		if (fscanf(f, "%lf", &s) != 1)
			s = 0;
		fclose(f);
	}
	return s;
}

const char *gw_fault_hold_reads(void)
{
	const char *v = getenv("GRADWATCH_FAULT_HOLD_READS");
	return v && *v ? v : NULL;
}

void gw_fault_hold_read(const char *path, const char *query, size_t qlen)
{
	static atomic_uint held;
	char want[128], mark[4200];
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(want, 1, sizeof(want) - 1, f);
	fclose(f);
	while (n && (want[n - 1] == '\n' || want[n - 1] == '\r'))
		n--;
	want[n] = '\0';
	if (n && !memmem(query, qlen, want, n))
		return;
	unsigned k = ++held;
	snprintf(mark, sizeof(mark), "%s.held.%u", path, k);
	if ((f = fopen(mark, "w")))
		fclose(f);
	snprintf(mark, sizeof(mark), "%s.go.%u", path, k);
	for (int i = 0; i < 6000 && access(mark, F_OK) != 0; i++)
		usleep(10000);
}

#else

bool gw_fault_hooks(void)
{
	return false;
}

const char *gw_fault_describe(void)
{
	return NULL;
}

uint64_t gw_fault_crash_commit(void)
{
	return 0;
}

uint64_t gw_fault_crash_ship(void)
{
	return 0;
}

void gw_fault_crash(void)
{
}

double gw_fault_clock_step(void)
{
	return 0;
}

const char *gw_fault_hold_reads(void)
{
	return NULL;
}

void gw_fault_hold_read(const char *path, const char *query, size_t qlen)
{
	(void)path;
	(void)query;
	(void)qlen;
}

#endif
