/*
 * A stand-in for the few parts of Check's API that the kernel tests use, so
 * that the same test source also runs where Check is not installed: the
 * AArch64 cross build under qemu-user (.ci/kernels-aarch64.sh), whose CI
 * machine has Check only for its own architecture.  Tests run in-process
 * one after another; a failed assertion ends its test through longjmp.  The
 * summary line has Check's shape ("100%: Checks: 9, Failures: 0, Errors: 0").
 * Everything here is static: include it from one test file only.
 */
#ifndef GW_MINICHECK_H
#define GW_MINICHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define CK_NORMAL 0

#define START_TEST(name) static void name(int _i __attribute__((unused)))
#define END_TEST

#define ck_assert_msg(expr, ...) \
	((expr) ? (void)0 : mc_fail(__FILE__, __LINE__, __VA_ARGS__))
#define ck_assert(expr) ck_assert_msg(expr, "assertion '%s' failed", #expr)
#define ck_assert_int_eq(a, b)                                             \
	do {                                                                   \
		long long mc_a_ = (a), mc_b_ = (b);                                \
		ck_assert_msg(mc_a_ == mc_b_, "assertion '%s == %s' failed: %lld != %lld", \
		              #a, #b, mc_a_, mc_b_);                               \
	} while (0)

#define MC_MAX 64

typedef struct mc_tcase {
	const char *name;
	void (*fn[MC_MAX])(int);
	const char *fn_name[MC_MAX];
	int n;
} TCase;

typedef struct mc_suite {
	const char *name;
	TCase *tc[MC_MAX];
	int n;
} Suite;

typedef struct mc_runner {
	Suite *s;
	int failed;
} SRunner;

static jmp_buf mc_jmp;
static const char *mc_cur_tc, *mc_cur_fn;

static void mc_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));

static void mc_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	printf("%s:%d:F:%s:%s:0: ", file, line, mc_cur_tc, mc_cur_fn);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	longjmp(mc_jmp, 1);
}

static Suite *suite_create(const char *name)
{
	Suite *s = calloc(1, sizeof(*s));
	s->name = name;
	return s;
}

static TCase *tcase_create(const char *name)
{
	TCase *tc = calloc(1, sizeof(*tc));
	tc->name = name;
	return tc;
}

static void suite_add_tcase(Suite *s, TCase *tc)
{
	if (s->n < MC_MAX)
		s->tc[s->n++] = tc;
}

static void mc_add(TCase *tc, void (*fn)(int), const char *name)
{
	if (tc->n < MC_MAX) {
		tc->fn[tc->n] = fn;
		tc->fn_name[tc->n++] = name;
	}
}
#define tcase_add_test(tc, fn) mc_add(tc, fn, #fn)
#define tcase_set_timeout(tc, t) ((void)(tc), (void)(t))

static SRunner *srunner_create(Suite *s)
{
	SRunner *sr = calloc(1, sizeof(*sr));
	sr->s = s;
	return sr;
}

/* 0 if fn passed; setjmp alone in its own frame, so nothing of the
 * caller's can be clobbered by the longjmp. */
static int mc_run_one(void (*fn)(int))
{
	if (setjmp(mc_jmp) != 0)
		return 1;
	fn(0);
	return 0;
}

static void srunner_run_all(SRunner *sr, int mode)
{
	int total = 0;
	(void)mode;
	printf("Running suite(s): %s\n", sr->s->name);
	for (int i = 0; i < sr->s->n; i++) {
		TCase *tc = sr->s->tc[i];
		for (int j = 0; j < tc->n; j++) {
			mc_cur_tc = tc->name;
			mc_cur_fn = tc->fn_name[j];
			total++;
			sr->failed += mc_run_one(tc->fn[j]);
		}
	}
	printf("%d%%: Checks: %d, Failures: %d, Errors: 0\n",
	       total ? 100 * (total - sr->failed) / total : 100, total, sr->failed);
}

static int srunner_ntests_failed(SRunner *sr)
{
	return sr->failed;
}

static void srunner_free(SRunner *sr)
{
	for (int i = 0; i < sr->s->n; i++)
		free(sr->s->tc[i]);
	free(sr->s);
	free(sr);
}

#endif
