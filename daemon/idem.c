/*
 * idem: idempotency keys (see idem.h).  Entries are kept in creation order
 * (a list, oldest first) for expiry, and indexed by key in the lib's string
 * table through a slot array (the table maps a key to a slot; a slot holds
 * the entry, whose key bytes the table borrows).
 */
#include "idem.h"

#include "buf.h"
#include "hash.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const migrations[] = {
	"CREATE TABLE idempotency(key TEXT PRIMARY KEY, created REAL NOT NULL,"
	"  status INTEGER NOT NULL, answer TEXT NOT NULL);"
	"CREATE INDEX idempotency_by_age ON idempotency(created);",
	/* the request's fingerprint (hex, see idem.h); NULL for keys stored
	 * before it was kept: those are not compared */
	"ALTER TABLE idempotency ADD COLUMN fingerprint TEXT;",
};

enum { ST_PUT, ST_PURGE };

static const char *const statements[] = {
	[ST_PUT] = "INSERT OR REPLACE INTO idempotency(key, created, status, answer, fingerprint) "
	           "VALUES(?1, ?2, ?3, ?4, ?5)",
	[ST_PURGE] = "DELETE FROM idempotency WHERE created < ?1",
};

const struct gw_store_schema gw_idem_schema = {
	.name = "idempotency",
	.migrations = migrations,
	.n_migrations = GW_ARRAY_SIZE(migrations),
	.statements = statements,
	.n_statements = GW_ARRAY_SIZE(statements),
};

#define PURGE_EVERY_S 600.0

static void unlink_entry(struct gw_idem *t, struct gw_idem_entry *e)
{
	gw_strtab_del(&t->tab, e->key, e->klen, NULL);
	t->slots[e->slot] = NULL;
	t->free_slots[t->n_free++] = e->slot;
	if (e->older)
		e->older->newer = e->newer;
	else
		t->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		t->newest = e->older;
	t->count--;
}

static void forget(struct gw_idem *t, struct gw_idem_entry *e)
{
	unlink_entry(t, e);
	if (e->users) {
		e->gone = true;
		return;
	}
	free(e->answer);
	free(e);
}

/* Forget what is past the window, and the oldest beyond the key limit; only
 * settled entries go (DONE, or QUEUED and committed since), the others are
 * still in use. */
static void expire(struct gw_idem *t, double now, uint64_t committed)
{
	struct gw_idem_entry *e;
	while ((e = t->oldest) && (e->created < now - t->window_s || t->count > t->max_keys)) {
		if (e->state == GW_IDEM_QUEUED && e->seq <= committed)
			e->state = GW_IDEM_DONE;
		if (e->state != GW_IDEM_DONE)
			break;
		forget(t, e);
	}
}

static struct gw_idem_entry *add(struct gw_idem *t, const char *key, size_t len, double created)
{
	if (len > GW_IDEM_KEY_MAX)
		return NULL;
	struct gw_idem_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	uint32_t slot;
	if (t->n_free) {
		slot = t->free_slots[t->n_free - 1];
	} else {
		/* a new slot; the free list gets room for it as well, so that
		 * giving it back (unlink_entry) never needs memory */
		if (t->n_slots >= UINT32_MAX ||
		    gw_grow((void **)&t->slots, &t->cap_slots, t->n_slots + 1, sizeof(*t->slots)) < 0 ||
		    gw_grow((void **)&t->free_slots, &t->cap_free, t->n_slots + 1,
		            sizeof(*t->free_slots)) < 0) {
			free(e);
			return NULL;
		}
		slot = (uint32_t)t->n_slots;
	}
	memcpy(e->key, key, len);
	e->klen = len;
	e->created = created;
	e->slot = slot;
	if (gw_strtab_put(&t->tab, e->key, len, e->slot) < 0) {
		free(e);
		return NULL;
	}
	if (t->n_free)
		t->n_free--;
	else
		t->n_slots++;
	t->slots[e->slot] = e;
	e->older = t->newest;
	if (t->newest)
		t->newest->newer = e;
	else
		t->oldest = e;
	t->newest = e;
	t->count++;
	return e;
}

struct load_ctx {
	struct gw_idem *t;
	size_t loaded;
};

static void load_row(void *ctx, sqlite3_stmt *row)
{
	struct load_ctx *c = ctx;
	const char *key = (const char *)sqlite3_column_text(row, 0);
	const char *answer = (const char *)sqlite3_column_text(row, 3);
	struct gw_idem_entry *e = key && answer ? add(c->t, key, strlen(key), sqlite3_column_double(row, 1))
	                                        : NULL;
	if (!e)
		return;
	e->state = GW_IDEM_DONE;
	e->status = sqlite3_column_int(row, 2);
	e->answer = strdup(answer);
	if (!e->answer) {
		forget(c->t, e);   /* out of memory: this key is not kept */
		return;
	}
	const char *fp = (const char *)sqlite3_column_text(row, 4);
	char *end = NULL;
	if (fp && strlen(fp) == 16) {
		e->fp = strtoull(fp, &end, 16);
		e->has_fp = *end == '\0';
	}
	c->loaded++;
}

int gw_idem_init(struct gw_idem *t, const char *db_path, double window_s, size_t max_keys,
                 char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->window_s = window_s;
	t->max_keys = max_keys;
	double now = gw_wall_now();
	t->last_purge = now;
	struct load_ctx c = {.t = t};
	/* oldest first, so the list is in creation order; the newest max_keys */
	const struct gw_sv b[] = {gw_sv_real(now - window_s), gw_sv_int((int64_t)max_keys)};
	int rc = gw_store_read_each(db_path,
	                            "SELECT key, created, status, answer, fingerprint FROM (SELECT * FROM idempotency "
	                            "WHERE created >= ?1 ORDER BY created DESC LIMIT ?2) ORDER BY created",
	                            b, 2, load_row, &c, err, errlen);
	if (rc == 0 && c.loaded)
		gw_log_info("%zu idempotency key(s) of the last %.0f s reloaded", c.loaded, window_s);
	return rc;
}

void gw_idem_deinit(struct gw_idem *t)
{
	for (struct gw_idem_entry *e = t->oldest, *n; e; e = n) {
		n = e->newer;
		free(e->answer);
		free(e);
	}
	gw_strtab_free(&t->tab);
	free(t->slots);
	free(t->free_slots);
	memset(t, 0, sizeof(*t));
}

struct gw_idem_entry *gw_idem_get(struct gw_idem *t, const char *key, size_t len, double now,
                                  uint64_t committed)
{
	expire(t, now, committed);
	uint32_t slot;
	if (gw_strtab_find(&t->tab, key, len, &slot) < 0)
		return NULL;
	struct gw_idem_entry *e = t->slots[slot];
	if (e->state == GW_IDEM_QUEUED && e->seq <= committed)
		e->state = GW_IDEM_DONE;
	return e;
}

struct gw_idem_entry *gw_idem_begin(struct gw_idem *t, const char *key, size_t len, double now)
{
	struct gw_idem_entry *e = add(t, key, len, now);
	if (e)
		e->state = GW_IDEM_RUNNING;
	return e;
}

uint64_t gw_idem_fp_begin(const char *run)
{
	/* the run and a NUL (a run name has none) before the body */
	return gw_fnv1a64_add(GW_FNV64_INIT, run ? run : "", run ? strlen(run) + 1 : 1);
}

uint64_t gw_idem_queue(struct gw_idem *t, struct gw_store *st, struct gw_idem_entry *e,
                       int status, const char *answer, uint64_t fp)
{
	char *a = strdup(answer);
	if (!a)
		return 0;
	char fph[17];
	snprintf(fph, sizeof(fph), "%016llx", (unsigned long long)fp);
	const struct gw_sv v[] = {gw_sv_textn(e->key, e->klen), gw_sv_real(e->created),
	                          gw_sv_int(status), gw_sv_text(a), gw_sv_text(fph)};
	uint64_t seq = gw_store_put(st, &gw_idem_schema, ST_PUT, v, GW_ARRAY_SIZE(v));
	if (!seq) {
		free(a);
		return 0;
	}
	free(e->answer);
	e->answer = a;
	e->status = status;
	e->seq = seq;
	e->fp = fp;
	e->has_fp = true;
	e->state = GW_IDEM_QUEUED;
	/* now and then the table's rows past the window go too */
	if (e->created - t->last_purge > PURGE_EVERY_S) {
		t->last_purge = e->created;
		const struct gw_sv p[] = {gw_sv_real(e->created - t->window_s)};
		gw_store_put(st, &gw_idem_schema, ST_PURGE, p, 1);
	}
	return seq;
}

void gw_idem_done(struct gw_idem *t, struct gw_idem_entry *e)
{
	e->state = GW_IDEM_DONE;
}

void gw_idem_drop(struct gw_idem *t, struct gw_idem_entry *e)
{
	if (!e->gone)
		forget(t, e);
}

void gw_idem_hold(struct gw_idem_entry *e)
{
	e->users++;
}

void gw_idem_release(struct gw_idem *t, struct gw_idem_entry *e)
{
	if (--e->users == 0 && e->gone) {
		free(e->answer);
		free(e);
	}
}
