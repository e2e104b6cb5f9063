/*
 * Unit tests of acknowledging an alert (alerts/outbox_events.c
 * gw_outbox_ack, which daemon/ack.c asks) against a real store on a SQLite
 * file and the outbox's table (corefix.h): an open alert is acknowledged
 * (its row and its event committed, the answer the alert as it now is);
 * again is "already so" and writes nothing; a decision behind the row its
 * request read (another request acknowledged in between) is the table's,
 * and so is the answer, with the commit to wait for; withdrawing and an
 * escalation clear it; a resolved alert cannot be acknowledged; after a
 * restart the table knows which open alerts are acknowledged, and a stall
 * the daemon before left open is resolved (its watcher is gone).
 */
#include "gwcheck.h"
#include "corefix.h"

#include "alert_row.h"

#include <errno.h>
#include <math.h>

static void start_outbox(struct fix *f)
{
	char err[256];
	const struct gw_outbox_opts oo = {.loop = &f->loop, .store = f->store, .db_path = f->db};
	ck_assert_msg(gw_outbox_start(&oo, &f->outbox, err, sizeof(err)) == 0, "%s", err);
}

/* An event of alert id (nonfinite, run r) as the engine reports it. */
static struct gw_alert alert(const char *id, enum gw_alert_kind kind, enum gw_severity sev)
{
	struct gw_alert a = {.kind = kind, .run = "r", .seg = 1, .step = 10, .line = 10,
	                     .detector = "nonfinite", .severity = sev, .summary = "NaN",
	                     .cause = "c", .action = "a", .ts = 1000.0, .wall = gw_wall_now()};
	gw_strlcpy(a.id, id, sizeof(a.id));
	return a;
}

/* The alert's row as a request reads it: committed, decoded. */
static json_t *row(struct fix *f, const char *id)
{
	fix_wait_seq(f, gw_store_queued(f->store));
	json_t *r = NULL;
	char err[256];
	ck_assert_msg(gw_store_read_alert(f->db, id, &r, err, sizeof(err)) == 0, "%s", err);
	json_t *a = gw_alert_row_json(r);
	json_decref(r);
	ck_assert_ptr_nonnull(a);
	return a;
}

static const char *str(const json_t *a, const char *k)
{
	return json_string_value(json_object_get(a, k));
}

static json_int_t num(const json_t *a, const char *k)
{
	return json_integer_value(json_object_get(a, k));
}

START_TEST(acknowledge_then_again_then_withdraw)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	start_outbox(&f);
	struct gw_alert a = alert("gw-0000000000000001", GW_ALERT_OPEN, GW_SEV_WARNING);
	gw_store_hold(f.store);   /* as the record path holds it */
	gw_store_put_segment(f.store, "r", 1, "first", 1, -1, 1, 1000.0, gw_wall_now());
	gw_outbox_alert(f.outbox, &a);
	gw_store_release(f.store);
	json_t *read = row(&f, a.id);
	ck_assert_int_eq(num(read, "version"), 1);
	json_t *ans = NULL;
	uint64_t seq = 0;
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, true, 2000.0, "alice", "on it", read, &ans,
	                               &seq), 0);
	ck_assert_str_eq(str(ans, "kind"), "ack");
	ck_assert_str_eq(str(ans, "acked_by"), "alice");
	ck_assert_str_eq(str(ans, "ack_note"), "on it");
	ck_assert_int_eq(num(ans, "version"), 2);
	ck_assert_uint_gt(seq, 0);
	json_decref(ans);
	fix_wait_seq(&f, seq);
	ck_assert_int_eq(fix_scalar(&f, "SELECT count(*) FROM alerts WHERE acked_by = 'alice' "
	                                "AND version = 2"), 1);
	/* again, with the row read before the first (behind it): already so,
	 * and the answer is the table's: acknowledged by alice */
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, true, 2001.0, "bob", NULL, read, &ans, &seq),
	                 -EALREADY);
	ck_assert_str_eq(str(ans, "acked_by"), "alice");
	ck_assert_int_eq(num(ans, "version"), 2);
	ck_assert_uint_gt(seq, 0);   /* the change that made it so */
	json_decref(ans);
	ck_assert_int_eq(fix_scalar(&f, "SELECT version FROM alerts"), 2);   /* nothing written */
	/* withdrawn, by bob, from the same stale row */
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, false, 2002.0, "bob", NULL, read, &ans,
	                               &seq), 0);
	ck_assert_ptr_null(json_object_get(ans, "acked_at"));
	ck_assert_str_eq(str(ans, "unacked_by"), "bob");
	ck_assert_str_eq(str(ans, "kind"), "unack");
	ck_assert_int_eq(num(ans, "version"), 3);
	json_decref(ans);
	fix_wait_seq(&f, seq);
	ck_assert_int_eq(fix_scalar(&f, "SELECT acked_at IS NULL FROM alerts"), 1);
	json_decref(read);
	fix_end(&f);
}
END_TEST

START_TEST(an_escalation_clears_it_and_a_resolve_ends_it)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	start_outbox(&f);
	struct gw_alert a = alert("gw-0000000000000002", GW_ALERT_OPEN, GW_SEV_WARNING);
	gw_outbox_alert(f.outbox, &a);
	json_t *read = row(&f, a.id);
	json_t *ans;
	uint64_t seq;
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, true, 2000.0, "alice", NULL, read, &ans,
	                               &seq), 0);
	json_decref(ans);
	/* escalated: acknowledged no more (the incident pages again) */
	struct gw_alert up = alert(a.id, GW_ALERT_UPDATE, GW_SEV_CRITICAL);
	gw_outbox_alert(f.outbox, &up);
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, false, 2001.0, NULL, NULL, read, &ans,
	                               &seq), -EALREADY);
	ck_assert_str_eq(str(ans, "kind"), "update");
	ck_assert_ptr_null(json_object_get(ans, "acked_at"));
	ck_assert_int_eq(num(ans, "version"), 3);
	json_decref(ans);
	/* resolved: nothing to acknowledge */
	struct gw_alert end = alert(a.id, GW_ALERT_RESOLVE, GW_SEV_CRITICAL);
	gw_outbox_alert(f.outbox, &end);
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, true, 2002.0, "alice", NULL, read, &ans,
	                               &seq), -ENOENT);
	ck_assert_ptr_null(ans);
	ck_assert_int_eq(gw_outbox_ack(f.outbox, "gw-ffffffffffffffff", true, 2002.0, NULL, NULL,
	                               read, &ans, &seq), -ENOENT);
	fix_wait_seq(&f, gw_store_queued(f.store));
	ck_assert_int_eq(fix_scalar(&f, "SELECT version FROM alerts"), 4);
	json_decref(read);
	fix_end(&f);
}
END_TEST

START_TEST(after_a_restart_the_table_knows_the_acknowledgement)
{
	struct fix f;
	fix_cfg(&f);
	fix_store(&f);
	start_outbox(&f);
	struct gw_alert a = alert("gw-0000000000000003", GW_ALERT_OPEN, GW_SEV_WARNING);
	gw_outbox_alert(f.outbox, &a);
	struct gw_alert stall = alert("gw-0000000000000004", GW_ALERT_OPEN, GW_SEV_WARNING);
	stall.detector = "stall";
	gw_outbox_alert(f.outbox, &stall);
	json_t *read = row(&f, a.id);
	json_t *ans;
	uint64_t seq;
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, true, 2000.0, "carol", NULL, read, &ans,
	                               &seq), 0);
	json_decref(ans);
	json_decref(read);
	fix_wait_seq(&f, seq);
	/* a new outbox on the same database (the daemon restarted) */
	gw_outbox_stop(f.outbox);
	uv_run(&f.loop, UV_RUN_DEFAULT);
	gw_outbox_free(f.outbox);
	start_outbox(&f);
	size_t open, acked;
	gw_outbox_open_alerts(f.outbox, &open, &acked);
	ck_assert_uint_eq(open, 1);   /* the stall was resolved */
	ck_assert_uint_eq(acked, 1);
	fix_wait_seq(&f, gw_store_queued(f.store));
	ck_assert_int_eq(fix_scalar(&f, "SELECT count(*) FROM alerts WHERE detector = 'stall' "
	                                "AND state = 'resolved' AND resolution LIKE "
	                                "'gradwatchd restarted%'"), 1);
	read = row(&f, a.id);
	ck_assert_int_eq(gw_outbox_ack(f.outbox, a.id, true, 2001.0, "dave", NULL, read, &ans,
	                               &seq), -EALREADY);
	ck_assert_str_eq(str(ans, "acked_by"), "carol");   /* the row as stored */
	ck_assert_uint_eq(seq, 0);                          /* nothing to wait for */
	json_decref(ans);
	json_decref(read);
	fix_end(&f);
}
END_TEST

int main(void)
{
	gw_log_init(GW_LOG_ERR, false);
	Suite *s = suite_create("ack");
	TCase *tc = tcase_create("ack");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, acknowledge_then_again_then_withdraw);
	tcase_add_test(tc, an_escalation_clears_it_and_a_resolve_ends_it);
	tcase_add_test(tc, after_a_restart_the_table_knows_the_acknowledgement);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
