/*
 * Test helper for the storage suites: break a table of a closed database
 * on purpose, so a test can check that a read which meets the damage says
 * so instead of answering as if the rows were not there.
 */
#ifndef GW_TEST_SQLITE_H
#define GW_TEST_SQLITE_H

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>

/* Overwrite the root page of table `name` of the database at path (closed,
 * its WAL folded back): reading the table then fails (SQLITE_CORRUPT) at
 * its first row. */
static inline void gw_test_corrupt_table(const char *path, const char *name)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT rootpage, (SELECT page_size FROM pragma_page_size) "
	                                        "FROM sqlite_master WHERE name = ?1", -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	long root = (long)sqlite3_column_int64(st, 0), psize = (long)sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	FILE *f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, (root - 1) * psize, SEEK_SET), 0);
	for (long i = 0; i < psize; i++)
		ck_assert_int_ne(fputc(0x5a, f), EOF);
	ck_assert_int_eq(fclose(f), 0);
}

#endif
