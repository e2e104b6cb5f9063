/*
 * idem: idempotency keys of POST /v1/ingest (docs/api.md, "Retries").
 *
 * A client that did not hear the answer to a batch sends it again with the
 * same Idempotency-Key; the daemon must not store it twice.  A batch with a
 * key is taken whole: its body is buffered, then ingested under one store
 * hold together with a row (key, created, status, answer) of its own table,
 * so the lines and the key commit in one transaction or not at all.  A
 * repeat of a committed key gets the first answer again (with
 * `Idempotent-Replayed: true`); a repeat while the first is being
 * committed waits for that commit; a repeat while the first's body is still
 * arriving gets 409 with Retry-After (two bodies for one key at once: the
 * client is confused or retried too early); a first request cut off before
 * its body was read leaves no key behind (nothing of it was ingested).
 * A key names one request: a repeat whose fingerprint (the ?run= and the
 * body, 64-bit FNV-1a: it catches a client that reuses a key by mistake,
 * not one that crafts a collision against its own key) differs from the
 * first's is refused with 422 and stores nothing.
 *
 * Keys live for limits.idempotency_window_s (24 h), at most
 * limits.idempotency_max_keys of them (the oldest go first); they are
 * reloaded from the database at start, so a retry after a daemon restart
 * is still recognised.  Loop thread only.
 */
#ifndef GW_IDEM_H
#define GW_IDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "strtab.h"

#define GW_IDEM_KEY_MAX 128

extern const struct gw_store_schema gw_idem_schema;

enum gw_idem_state {
	GW_IDEM_RUNNING,   /* the first request's body is being read */
	GW_IDEM_QUEUED,    /* ingested, its answer known, waiting for the commit of `seq` */
	GW_IDEM_DONE,      /* committed: the answer is final */
};

struct gw_idem_entry {
	char key[GW_IDEM_KEY_MAX + 1];
	size_t klen;
	double created;
	enum gw_idem_state state;
	uint64_t seq;              /* QUEUED: the store sequence of its key row */
	int status;                /* QUEUED, DONE: the HTTP status and JSON body */
	char *answer;
	uint64_t fp;               /* QUEUED, DONE: the first request's fingerprint */
	bool has_fp;               /* false for a key stored before fingerprints were */
	struct gw_idem_entry *older, *newer;   /* by creation */
	uint32_t slot;
	unsigned users;            /* requests holding a pointer to it */
	bool gone;                 /* dropped or expired while held: freed on release */
};

struct gw_idem {
	struct gw_strtab tab;      /* key -> slot */
	struct gw_idem_entry **slots;   /* slots[0..n_slots): an entry, or NULL (free) */
	size_t n_slots, cap_slots;
	uint32_t *free_slots;           /* the free ones, a stack (room for n_slots) */
	size_t n_free, cap_free;
	struct gw_idem_entry *oldest, *newest;
	size_t count;
	double window_s;
	size_t max_keys;
	double last_purge;
};

/* Load the keys of the last window_s seconds from the database (a blocking
 * read: before the loop runs).  Returns 0 or a negative errno with a message
 * in err. */
int gw_idem_init(struct gw_idem *t, const char *db_path, double window_s, size_t max_keys,
                 char *err, size_t errlen);
void gw_idem_deinit(struct gw_idem *t);

/* The entry of key, or NULL (forgets expired entries first).  `committed`
 * is the store's committed sequence: QUEUED entries it covers are DONE. */
struct gw_idem_entry *gw_idem_get(struct gw_idem *t, const char *key, size_t len, double now,
                                  uint64_t committed);

/* A new RUNNING entry for key (not present); NULL when out of memory. */
struct gw_idem_entry *gw_idem_begin(struct gw_idem *t, const char *key, size_t len, double now);

/* A request's fingerprint: start with its ?run= value (NULL for none),
 * then continue it over the body with gw_fnv1a64_add (lib/hash.h). */
uint64_t gw_idem_fp_begin(const char *run);

/* The first request's answer is known: queue the key row (with the
 * request's fingerprint fp) on the store (the caller holds the store since
 * the batch's first line, so they commit together) and make the entry
 * QUEUED.  Returns the row's sequence, 0 when out of memory. */
uint64_t gw_idem_queue(struct gw_idem *t, struct gw_store *st, struct gw_idem_entry *e,
                       int status, const char *answer, uint64_t fp);

/* The key row is committed: DONE. */
void gw_idem_done(struct gw_idem *t, struct gw_idem_entry *e);

/* The first request ended before its answer was known (cut off): forget the
 * key, nothing of the batch was ingested. */
void gw_idem_drop(struct gw_idem *t, struct gw_idem_entry *e);

/* Requests hold entries while they use them: a held entry is never freed
 * (dropping it only unlinks it from the table). */
void gw_idem_hold(struct gw_idem_entry *e);
void gw_idem_release(struct gw_idem *t, struct gw_idem_entry *e);

#endif
