/*
 * What the parts of the wire parser share (wire.c: the object and the
 * record layer; wire_value.c: the JSON values, strings and numbers;
 * wire_err.c: the reasons' names and a failure's message; wire_shape.c:
 * the last line's keys, reused): the parser's state, the cursor over a
 * line, and the few calls between them.
 * Internal to lib/ (gw__wire_ prefix); callers see wire.h.
 */
#ifndef GW_WIRE_INT_H
#define GW_WIRE_INT_H

#include "wire.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* How deep objects and arrays may nest in a line. */
#define GW_WIRE_MAX_DEPTH 32

enum vkind { V_NUM, V_STR, V_NULL, V_BOOL, V_NESTED };

/* What a key names: one of the record's own fields, or anything else (a
 * role, an fp16 field, ts or an extra, through the alias table). */
enum kname { K_OTHER, K_RUN, K_STEP, K_EVENT, K_RANK };

struct entry {
	const char *key;
	size_t key_len;
	uint32_t key_hash;
	size_t key_col;       /* 1-based */
	size_t key_raw;       /* bytes between its quotes in the line */
	bool known;           /* name, role and prio below are set */
	enum kname name;
	int role, prio;       /* the alias table's answer (role -1: none) */
	enum vkind kind;
	double num;
	bool num_int;         /* integer literal without fraction or exponent */
	bool bval;
	const char *str;      /* decoded, NUL-terminated */
	size_t str_len;
	size_t raw_start, raw_end; /* span of the raw value text */
};

struct gw_wire {
	const struct gw_alias *aliases;
	char *scratch;
	size_t scratch_cap, scratch_len;
	struct entry *ent;
	size_t ent_cap, n_ent;
	struct gw_metric *metrics;
	size_t metrics_cap;
	json_t *attrs;
	/* the keys of the last line read whole, in order (wire_shape.c):
	 * lines of one stream repeat them, so a key that matches its place
	 * is neither decoded, hashed, checked for duplicates nor looked up */
	struct shape_key *shape;
	size_t shape_n, shape_cap;
	char *shape_text[2];  /* the keys' text; the other is the spare */
	size_t shape_text_cap[2];
	int shape_cur;
	size_t shape_aliases; /* the alias table's size when the shape was kept */
	bool shape_same;      /* every key so far matched its place */
	char last_run[GW_WIRE_RUN_MAX]; /* the last run name found valid */
	size_t last_run_len;
};

struct shape_key {
	size_t off, len;      /* in shape_text[shape_cur]; len SIZE_MAX: a key
	                         with escapes, which never matches */
	uint32_t hash;
	enum kname name;
	int role, prio;
};

struct cur {
	const char *s;
	size_t n, i;
	struct gw_wire *w;
	struct gw_wire_err *err;
	const char *field; /* key being read, for messages */
};

static inline void skip_ws(struct cur *c)
{
	while (c->i < c->n) {
		unsigned char ch = (unsigned char)c->s[c->i];
		/* one compare for the usual case: no white space at all */
		if (ch > ' ' || (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r'))
			break;
		c->i++;
	}
}

static inline bool match_word(struct cur *c, const char *word)
{
	size_t n = strlen(word);
	if (c->n - c->i < n || memcmp(c->s + c->i, word, n) != 0)
		return false;
	c->i += n;
	return true;
}

/* Start a line: forget the shape when the alias table has grown since it
 * was kept (a key's meaning may have changed).  wire_shape.c. */
void gw__wire_shape_begin(struct gw_wire *w);

/* Are a[0..n) and b[0..n) the same bytes?  Inline, 8 at a time: the keys
 * it compares are short, and a call to memcmp costs more than they do. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
	uint64_t x, y;
	uint32_t u, v;
	if (n >= 8) {
		for (size_t i = 0; i + 8 <= n; i += 8) {
			memcpy(&x, a + i, 8);
			memcpy(&y, b + i, 8);
			if (x != y)
				return false;
		}
		memcpy(&x, a + n - 8, 8);   /* the last 8, overlapping */
		memcpy(&y, b + n - 8, 8);
		return x == y;
	}
	if (n >= 4) {
		memcpy(&u, a, 4);
		memcpy(&v, b, 4);
		if (u != v)
			return false;
		memcpy(&u, a + n - 4, 4);
		memcpy(&v, b + n - 4, 4);
		return u == v;
	}
	for (; n; a++, b++, n--)
		if (*a != *b)
			return false;
	return true;
}

/* The key at c->i ('"') when it is the kept shape's key at its place
 * w->n_ent: e's key, hash and meaning from the shape, c->i past the
 * closing quote, true.  False (nothing moved) otherwise. */
static inline bool gw__wire_shape_key(struct cur *c, struct entry *e)
{
	struct gw_wire *w = c->w;
	if (!w->shape_same || w->n_ent >= w->shape_n)
		return false;
	const struct shape_key *k = &w->shape[w->n_ent];
	const char *text = w->shape_text[w->shape_cur] + k->off;
	size_t at = c->i + 1;
	if (k->len >= c->n - at || c->s[at + k->len] != '"' ||
	    !same_bytes(c->s + at, text, k->len)) {
		w->shape_same = false;
		return false;
	}
	e->key = text;
	e->key_len = e->key_raw = k->len;
	e->key_hash = k->hash;
	e->known = true;
	e->name = k->name;
	e->role = k->role;
	e->prio = k->prio;
	c->i = at + k->len + 1;
	return true;
}

/* After a line's object was read: give each entry its meaning, and keep
 * the line's keys as the shape when they differ from it (entries then
 * point at the new copy).  0 or -ENOMEM.  wire_shape.c. */
int gw__wire_shape_end(struct gw_wire *w);

/* Report the line's first error (reason, 1-based column, field) into
 * c->err; returns -EINVAL.  wire.c. */
int gw__wire_fail(struct cur *c, enum gw_wire_reason r, size_t col, const char *field,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A byte of the input for a message: 'x', or its value.  wire.c. */
const char *gw__wire_show_byte(char ch, char buf[16]);

/* A string at c->i ('"'), decoded into the scratch buffer when out is not
 * NULL; c->i past its closing quote.  wire_value.c. */
int gw__wire_string(struct cur *c, const char **out, size_t *out_len);

/* A number (JSON grammar, plus NaN, Infinity, -Infinity): *out, and
 * whether it was an integer literal.  wire_value.c. */
int gw__wire_number(struct cur *c, double *out, bool *is_int);

/* Any value at depth `depth`; as a jansson value when out is not NULL.
 * wire_value.c. */
int gw__wire_value(struct cur *c, int depth, json_t **out);

/* A number as jansson holds it in event attributes (non-finite ones as
 * the strings "NaN", "Infinity", "-Infinity").  wire_value.c. */
json_t *gw__wire_number_json(double v, bool is_int);

#endif
