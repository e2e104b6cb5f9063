/*
 * fault: the test hooks that make the daemon misbehave on purpose, for the
 * tests that must force a crash or a race at one exact point
 * (tests/integration/test_crash.py, test_http_defer.py).
 *
 * They exist only in a build configured with -Dfault_hooks=true
 * (meson_options.txt; dev.sh's test builds set it), where fault.c is
 * compiled with GW_FAULT_HOOKS 1.  In any other build -- the one that is
 * installed -- every function here answers "off" whatever the environment
 * says, and the variables' names are not in the binary: no environment
 * variable can make an installed gradwatchd kill itself or stall a thread.
 *
 *   GRADWATCH_FAULT_CRASH_COMMIT=N   the store's writer kills the process
 *                                    with SIGKILL right before its Nth
 *                                    COMMIT (storage/store.c)
 *   GRADWATCH_FAULT_CRASH_SHIP=N     the fleet shipper kills the process
 *                                    with SIGKILL right after its Nth
 *                                    PostgreSQL commit, before it saves
 *                                    its cursors (fleet/ship.c)
 *   GRADWATCH_FAULT_HOLD_READS=PATH  every deferred HTTP read is held, once
 *                                    done, until the test lets it go
 *                                    (daemon/http.c; gw_fault_hold_read)
 *   GRADWATCH_FAULT_CLOCK_STEP=PATH  the seconds in PATH (while it exists)
 *                                    are added to the system's wall clock
 *                                    as gradwatchd reads it: a clock step
 *                                    without root (lib/clock.c)
 */
#ifndef GW_FAULT_H
#define GW_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether this build has the hooks; and the line gradwatchd --version
 * prints about them (NULL when it has none). */
bool gw_fault_hooks(void);
const char *gw_fault_describe(void);

/* GRADWATCH_FAULT_CRASH_COMMIT: the COMMIT (counted from 1) before which
 * the process dies, 0 for none (always 0 without hooks).  Says so in the
 * log when set.  Read it once, at start. */
uint64_t gw_fault_crash_commit(void);
/* GRADWATCH_FAULT_CRASH_SHIP: the shipper's PostgreSQL commit (counted
 * from 1) after which the process dies, 0 for none.  Read it once. */
uint64_t gw_fault_crash_ship(void);
/* Die as kill -9 would (SIGKILL to this process); returns without hooks. */
void gw_fault_crash(void);

/* GRADWATCH_FAULT_CLOCK_STEP: the seconds its file holds now (0 without
 * it, or without hooks).  Reads the file: call it on a tick, not per line. */
double gw_fault_clock_step(void);

/* GRADWATCH_FAULT_HOLD_READS: the path, or NULL (always NULL without
 * hooks).  Read it once, at start. */
const char *gw_fault_hold_reads(void);
/* Hold a read (thread pool) whose request's query string is query[0..qlen):
 * while `path` exists (and its content, if any, is part of the query
 * string), the Nth read held (counted from 1) creates PATH.held.N once done
 * and waits until PATH.go.N exists, at most 60 s.  Without hooks: nothing. */
void gw_fault_hold_read(const char *path, const char *query, size_t qlen);

#endif
