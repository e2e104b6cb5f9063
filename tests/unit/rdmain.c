/*
 * The readers' tests' main() and alias table (rdmain.h).
 */
#include "gwcheck.h"
#include "rdmain.h"

#include "alias.h"

struct gw_alias *aliases;

int rd_main(Suite *s)
{
	aliases = gw_alias_new();
	int rc = gw_check_run(s);
	gw_alias_free(aliases);
	return rc;
}
