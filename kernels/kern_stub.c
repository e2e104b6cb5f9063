/*
 * Temporary scalar-only stand-in for the kernel dispatch until the kernel
 * variants land (replaced by kern_dispatch.c).
 */
#include "kern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const struct gw_kern_ops gw_kern_scalar_ops = {.name = "scalar"};
const struct gw_kern_ops *gw__kern = &gw_kern_scalar_ops;

int gw_kern_init(const char *force)
{
	if (!force)
		force = getenv("GRADWATCH_KERNELS");
	if (force && strcmp(force, "scalar"))
		return -ENOTSUP;
	return 0;
}

const char *gw_kern_name(void)
{
	return gw__kern->name;
}
