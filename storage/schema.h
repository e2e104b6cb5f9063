/*
 * schema: the store's own tables and the way every table in the database
 * is created and migrated forward (schema.c).  Shared-internal to
 * storage/: store.c calls it when it opens a database, before its writer
 * starts.
 */
#ifndef GW_STORE_SCHEMA_H
#define GW_STORE_SCHEMA_H

#include <math.h>
#include <sqlite3.h>
#include <stddef.h>

#include "store.h"

/* Bring the database to this gradwatch's schema: the store's own tables
 * (PRAGMA user_version), then each module's (meta "schema:<name>"), every
 * step in its own transaction.  A database written by a newer gradwatch is
 * refused (-EPROTO).  Blocks on the disk.  Returns 0 or a negative errno
 * with a message naming the file in err. */
int gw__store_migrate(sqlite3 *db, const char *path, const struct gw_store_schema *const *schemas,
                      size_t n_schemas, char *err, size_t errlen);

/* A read-only connection to a gradwatch database (read.c), with a busy
 * timeout: 0, or a negative errno with a message naming path in err for a
 * path that does not exist or is a directory, a file SQLite cannot open,
 * a database without gradwatch's tables or of a newer gradwatch. */
int gw__store_open_ro(const char *path, sqlite3 **db, int *version, char *err, size_t errlen);

/* The store's schema version (PRAGMA user_version) into *version: 0, or
 * -EPROTO when a newer gradwatch wrote the database ("this <who> knows up
 * to ..."), or the negative errno of a read that failed; the message in err
 * names path. */
int gw__store_version(sqlite3 *db, const char *path, const char *who, int *version, char *err,
                      size_t errlen);

/* Column k of a row as a double, NAN for NULL. */
static inline double gw__store_col_real(sqlite3_stmt *st, int k)
{
	return sqlite3_column_type(st, k) == SQLITE_NULL ? NAN : sqlite3_column_double(st, k);
}

/* Run sql (any number of statements): 0, or the negative errno of its
 * SQLite error with SQLite's message in err (err may be NULL). */
int gw__store_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);

/* A SQLite result code as a negative errno (0 for SQLITE_OK): -ENOSPC for
 * a full disk, -EBUSY, -EACCES, -EILSEQ for a corrupt file, else -EIO. */
int gw__store_errno(int rc);

#endif
