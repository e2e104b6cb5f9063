/*
 * Choosing the kernel variant, once, at start-up.
 *
 * The variants this binary was built with are listed best first (AVX2+FMA,
 * SSE2, NEON, scalar).  gw_kern_available() keeps those the CPU can run:
 * on x86-64 __builtin_cpu_supports(), which also checks that the OS saves
 * the AVX registers (XGETBV); on AArch64 the kernel's HWCAP_ASIMD bit.
 * gw_kern_init() takes the first of them unless told otherwise, by its
 * argument or by $GRADWATCH_KERNELS.  Only this file knows which variants
 * exist; the kernels themselves never test the CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#endif

#include "kern_impl.h"

const struct gw_kern_ops *gw__kern = &gw_kern_scalar_ops;

/* Every name gw_kern_init() knows, built here or not. */
static const char *const known_names[] = { "avx2", "sse2", "neon", "scalar" };

static int cpu_has(const char *name)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	if (strcmp(name, "avx2") == 0)
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (strcmp(name, "sse2") == 0)
		return __builtin_cpu_supports("sse2");
#elif defined(__aarch64__)
	if (strcmp(name, "neon") == 0) {
#ifdef __linux__
		return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
		return 1; /* Advanced SIMD is part of every AArch64 A-profile core */
#endif
	}
#endif
	return strcmp(name, "scalar") == 0;
}

const struct gw_kern_ops *const *gw_kern_available(void)
{
	static const struct gw_kern_ops *avail[5];
	static int done;
	if (done)
		return avail;
	static const struct gw_kern_ops *const built[] = {
#ifdef GW_KERN_HAVE_AVX2
		&gw__kern_avx2_ops,
#endif
#ifdef GW_KERN_HAVE_SSE2
		&gw__kern_sse2_ops,
#endif
#ifdef GW_KERN_HAVE_NEON
		&gw__kern_neon_ops,
#endif
		&gw_kern_scalar_ops,
	};
	size_t k = 0;
	for (size_t i = 0; i < sizeof(built) / sizeof(built[0]); i++)
		if (cpu_has(built[i]->name))
			avail[k++] = built[i];
	avail[k] = NULL;
	done = 1;
	return avail;
}

int gw_kern_init(const char *force)
{
	const struct gw_kern_ops *const *avail = gw_kern_available();
	const char *name = force ? force : getenv("GRADWATCH_KERNELS");

	if (name == NULL || name[0] == '\0' || strcmp(name, "auto") == 0) {
		gw__kern = avail[0];
		return 0;
	}
	for (size_t i = 0; avail[i]; i++) {
		if (strcmp(avail[i]->name, name) == 0) {
			gw__kern = avail[i];
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(known_names) / sizeof(known_names[0]); i++)
		if (strcmp(known_names[i], name) == 0)
			return -ENOTSUP;
	return -EINVAL;
}

const char *gw_kern_name(void)
{
	return gw__kern->name;
}
