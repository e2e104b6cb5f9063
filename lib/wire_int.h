/*
 * What the parts of the wire parser share (wire.c: the object and the
 * record layer; wire_value.c: the JSON values, strings and numbers;
 * wire_err.c: the reasons' names and a failure's message): the parser's
 * state, the cursor over a line, and the few calls between them.
 * Internal to lib/ (gw__wire_ prefix); callers see wire.h.
 */
#ifndef GW_WIRE_INT_H
#define GW_WIRE_INT_H

#include "wire.h"

#include <stdbool.h>
#include <string.h>

/* How deep objects and arrays may nest in a line. */
#define GW_WIRE_MAX_DEPTH 32

enum vkind { V_NUM, V_STR, V_NULL, V_BOOL, V_NESTED };

struct entry {
	const char *key;
	size_t key_len;
	uint32_t key_hash;
	size_t key_col;       /* 1-based */
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
		char ch = c->s[c->i];
		if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
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
