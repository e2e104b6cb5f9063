/*
 * Unit tests of the fleet configuration (fleet/fleet_cfg.c): the DSN from
 * exactly one of its three sources, the keys checked with messages that
 * name them, and a DSN in the logs with no password, user or query left.
 */
#include "gwcheck.h"

#include "fleet.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *text, struct gw_fleet_cfg *c, char *err, size_t errlen)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);
	ck_assert_msg(j != NULL, "bad JSON in test: %s", e.text);
	err[0] = '\0';
	int rc = gw_fleet_cfg_parse(j, c, err, errlen);
	json_decref(j);
	return rc;
}

START_TEST(sources_and_defaults)
{
	struct gw_fleet_cfg c;
	char err[256];
	ck_assert_int_eq(gw_fleet_cfg_parse(NULL, &c, err, sizeof(err)), 0);
	ck_assert_ptr_null(c.dsn);
	ck_assert_int_eq(parse("{\"postgresql\": \"postgresql://gw:pw@db:5432/fleet?sslmode=require\","
	                       " \"node\": \"gpu-07\", \"interval\": \"250ms\", \"batch_rows\": 500}",
	                       &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.dsn, "postgresql://gw:pw@db:5432/fleet?sslmode=require");
	ck_assert_str_eq(c.node, "gpu-07");
	ck_assert_uint_eq(c.interval_ms, 250);
	ck_assert_uint_eq(c.batch_rows, 500);
	ck_assert_ptr_null(strstr(c.dsn_log, "pw"));
	ck_assert_ptr_null(strstr(c.dsn_log, "gw:"));
	ck_assert_ptr_null(strstr(c.dsn_log, "sslmode"));
	ck_assert_ptr_nonnull(strstr(c.dsn_log, "db:5432/fleet"));
	gw_fleet_cfg_free(&c);

	setenv("GW_TEST_FLEET_DSN", "host=db port=5433 dbname=fleet user=gw password='p w'", 1);
	ck_assert_int_eq(parse("{\"postgresql_env\": \"GW_TEST_FLEET_DSN\"}", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.dsn_log, "host=db port=5433 dbname=fleet user=REDACTED password=REDACTED");
	ck_assert_uint_eq(c.interval_ms, 1000);
	ck_assert(c.node[0] != '\0');   /* the host name */
	gw_fleet_cfg_free(&c);
	unsetenv("GW_TEST_FLEET_DSN");
}
END_TEST

START_TEST(errors_name_the_key)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
		{"[]", "fleet must be an object"},
		{"{}", "one of \"postgresql\", \"postgresql_env\" or \"postgresql_file\" is required"},
		{"{\"postgresql\": \"x\", \"postgresql_env\": \"Y\"}", "give only one of"},
		{"{\"postgresql\": \"x\", \"nodes\": 1}", "unknown key \"nodes\""},
		{"{\"postgresql\": \"x\", \"node\": \"a b\"}", "\"node\" must be"},
		{"{\"postgresql\": \"x\", \"interval\": \"1ms\"}", "\"interval\" must be"},
		{"{\"postgresql\": \"x\", \"batch_rows\": 0}", "\"batch_rows\" must be"},
		{"{\"postgresql_file\": \"/nonexistent/gw-dsn\"}", "cannot read"},
		{"{\"postgresql_env\": \"GW_TEST_UNSET_VAR\"}", "is not set"},
	};
	unsetenv("GW_TEST_UNSET_VAR");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gw_fleet_cfg c;
		char err[256];
		ck_assert_int_lt(parse(cases[i].json, &c, err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, cases[i].msg), "case %zu: \"%s\" lacks \"%s\"", i, err,
		              cases[i].msg);
		ck_assert_ptr_null(c.dsn);
	}
}
END_TEST

int main(void)
{
	gw_log_init(GW_LOG_ERR, false);
	Suite *s = suite_create("fleet");
	TCase *tc = tcase_create("fleet");
	tcase_add_test(tc, sources_and_defaults);
	tcase_add_test(tc, errors_name_the_key);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
