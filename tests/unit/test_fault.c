/*
 * Unit tests of the test hooks' switch (lib/fault.c): built three times
 * (tests/unit/meson.build).  FAULT_MODE 0 and 1 compile fault.c into the
 * test with GW_FAULT_HOOKS 0 and 1: without hooks, the variables set in
 * the environment change nothing (no kill: this process would die of it;
 * no hold; no name of them in the description), with hooks they act (a
 * child process dies of SIGKILL, a read is held and let go).  FAULT_MODE 2
 * links the library as the daemon does and checks that it has the hooks
 * exactly when the build was configured with -Dfault_hooks=true
 * (GW_EXPECT_HOOKS, from meson).
 */
#include "gwcheck.h"

#include "fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if FAULT_MODE < 2

static char dir[64], hold[96];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gw-test-fault-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(hold, sizeof(hold), "%s/hold", dir);
	FILE *f = fopen(hold, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	setenv("GRADWATCH_FAULT_CRASH_COMMIT", "1", 1);
	setenv("GRADWATCH_FAULT_HOLD_READS", hold, 1);
}

static bool exists(const char *suffix)
{
	char p[128];
	snprintf(p, sizeof(p), "%s%s", hold, suffix);
	return access(p, F_OK) == 0;
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

#endif

#if FAULT_MODE == 0

START_TEST(without_hooks_the_environment_does_nothing)
{
	setup();
	ck_assert(!gw_fault_hooks());
	ck_assert_ptr_null(gw_fault_describe());
	ck_assert_uint_eq(gw_fault_crash_commit(), 0);
	ck_assert_ptr_null(gw_fault_hold_reads());
	gw_fault_crash();   /* with hooks this process would be gone here */
	gw_fault_hold_read(hold, "", 0);
	ck_assert(!exists(".held.1"));
	teardown();
}
END_TEST

#elif FAULT_MODE == 1

START_TEST(with_hooks_the_environment_acts)
{
	setup();
	ck_assert(gw_fault_hooks());
	ck_assert_ptr_nonnull(strstr(gw_fault_describe(), "GRADWATCH_FAULT_CRASH_COMMIT"));
	ck_assert_uint_eq(gw_fault_crash_commit(), 1);
	ck_assert_str_eq(gw_fault_hold_reads(), hold);
	/* a read is held and marked, then let go (the go mark is there) */
	char go[128];
	snprintf(go, sizeof(go), "%s.go.1", hold);
	FILE *f = fopen(go, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	gw_fault_hold_read(hold, "a=1", 3);
	ck_assert(exists(".held.1"));
	/* the crash: a child dies of SIGKILL */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		gw_fault_crash();
		_exit(0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	teardown();
}
END_TEST

#else

START_TEST(the_library_has_hooks_as_configured)
{
	ck_assert_int_eq(gw_fault_hooks(), GW_EXPECT_HOOKS);
	ck_assert_int_eq(gw_fault_describe() != NULL, GW_EXPECT_HOOKS);
}
END_TEST

#endif

int main(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("fault");
	tcase_set_timeout(tc, 60);
#if FAULT_MODE == 0
	tcase_add_test(tc, without_hooks_the_environment_does_nothing);
#elif FAULT_MODE == 1
	tcase_add_test(tc, with_hooks_the_environment_acts);
#else
	tcase_add_test(tc, the_library_has_hooks_as_configured);
#endif
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
